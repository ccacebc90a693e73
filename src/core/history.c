/*
 * history.c: a message's past deaths, deaths/ID in the spool root.
 *
 * The file holds the deaths before the message's current life, oldest
 * first, each a record:
 *
 *	TIME_MS ATTEMPTS LEN\n		decimal; LEN is "-" for no reason
 *	LEN bytes of the reason\n
 *
 * and the name's ,dN (struct mq_name's deaths) says how many of them
 * count: a reader takes the first N and ignores what follows.  A dead
 * letter's own death is not in the file: it is its name (DIED, ATTEMPTS)
 * and reason/ID, as it always was, so that a burial writes nothing more
 * than it did and stays one rename.
 *
 *	redrive	deaths/ID (N records)	=> deaths/ID (N + 1)	mq_history_carry
 *		dead/ID,...,dN		-> new/.../ID,0,...,dN+1 (dead.c)
 *	ack, purge	deaths/ID	-> (unlinked)	mq_history_forget
 *
 * Why this order is safe: a redrive writes the new file whole in the
 * target's tmp/, syncs it and renames it over deaths/ID (and syncs
 * deaths/) before the body moves.  Killed before that rename, the old
 * file is untouched.  Killed after it but before the body moved, the file
 * holds N + 1 records while the name still says dN and the message is
 * still dead: a reader takes the first N, which are the old ones copied
 * byte for byte, then the current death from the name and reason/ID,
 * which is what record N + 1 says: the same history.  A redrive run again
 * copies those first N and writes record N + 1 anew: N + 1, never N + 2.
 * Once the body moved (dN+1) the file it needs is in place.  So a history
 * is always the previous one or the new one, never torn.
 *
 * Every redrive and purge of a spool's dead letters holds an flock(2) on
 * its dead/ for the whole of one message, and a redrive first checks,
 * under it, that dead/NAME is still there (dead.c): two redrives of one
 * dead letter, or a redrive and a purge, never interleave, so none writes
 * a history from a name that is gone.  Burials, claims and acks do not
 * take it: they write no history.
 *
 * A message that leaves the spool with deaths (ack, purge) takes its
 * history along, body first: a crash in between leaves a history that no
 * name counts (an orphan; harmless, see mq-spool(5)): a message of that ID
 * that comes back with deaths has its deaths/ID written whole by its
 * redrive before any name counts its records, and a name counts only the
 * first N.
 * A message with no deaths costs nothing here: no file, no system call.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define HEADER_MAX	64	/* "TIME_MS ATTEMPTS LEN\n" and room */

/* Opens deaths/ (made if create); -1 with ENOENT when there is none. */
static int
deaths_dir(struct mq_spool *sp, int create)
{
	if (create)
		return mq_spool_topdir(sp, MQ_DIR_DEATHS);
	return mq_opendirat(sp->fd, MQ_DIR_DEATHS);
}

/*
 * Opens the history of the message named nm: its first nm->deaths records
 * are read by mq_history_next.  A missing file is a history of none.
 */
int
mq_history_open(struct mq_history *h, struct mq_spool *sp,
    const struct mq_name *nm)
{
	struct stat st;
	int dfd, fd, saved;

	memset(h, 0, sizeof(*h));
	h->left = nm->deaths;
	if (h->left == 0)
		return 0;
	if ((dfd = deaths_dir(sp, 0)) == -1) {
		h->left = 0;
		return errno == ENOENT ? 0 : -1;
	}
	fd = openat(dfd, nm->id, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	saved = errno;
	close(dfd);
	if (fd == -1) {
		h->left = 0;
		errno = saved;
		return saved == ENOENT ? 0 : -1;
	}
	if (fstat(fd, &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EBADMSG;
		goto fail;
	}
	if ((h->fp = fdopen(fd, "r")) == NULL)
		goto fail;
	return 0;
fail:
	saved = errno;
	close(fd);
	h->left = 0;
	errno = saved;
	return -1;
}

/* A decimal number, no sign, no leading zero, at most max; NULL if not. */
static char *
decimal(char *s, uint64_t max, uint64_t *v)
{
	uint64_t n = 0;
	char *p;

	for (p = s; *p >= '0' && *p <= '9'; p++) {
		if (n > (max - (*p - '0')) / 10)
			return NULL;
		n = n * 10 + (*p - '0');
	}
	if (p == s || (p - s > 1 && *s == '0'))
		return NULL;
	*v = n;
	return p;
}

/* The end of the history: what it read, or a malformed record (EBADMSG). */
static int
stop(struct mq_history *h, int err)
{
	h->left = 0;
	if (err == 0)
		return 0;
	errno = err;
	return -1;
}

/*
 * The next death: 1 and *d (its reason is h's until the next call; NULL
 * for none), 0 at the end (the records the name counts, or fewer: the
 * end of the file), -1 with errno: EBADMSG for a malformed or torn record,
 * which ends the history.  One record is held at a time.
 */
int
mq_history_next(struct mq_history *h, struct mq_death *d)
{
	char line[HEADER_MAX], *p;
	uint64_t ms, att, len = 0;
	int none;

	if (h->left == 0 || h->fp == NULL)
		return stop(h, 0);
	if (fgets(line, sizeof(line), h->fp) == NULL)
		return stop(h, ferror(h->fp) ? errno : 0);
	if ((p = strchr(line, '\n')) == NULL)
		return stop(h, EBADMSG);
	*p = '\0';
	if ((p = decimal(line, UINT64_MAX, &ms)) == NULL || *p++ != ' ' ||
	    (p = decimal(p, MQ_ATTEMPTS_MAX, &att)) == NULL || *p++ != ' ')
		return stop(h, EBADMSG);
	none = strcmp(p, "-") == 0;
	if (!none && ((p = decimal(p, MQ_REASON_MAX, &len)) == NULL ||
	    *p != '\0'))
		return stop(h, EBADMSG);
	if (len + 1 > h->cap) {
		free(h->buf);
		h->cap = 0;
		if ((h->buf = malloc(len + 1)) == NULL)
			return stop(h, errno);
		h->cap = len + 1;
	}
	if (fread(h->buf, 1, len, h->fp) != len || getc(h->fp) != '\n')
		return stop(h, ferror(h->fp) ? errno : EBADMSG);
	h->buf[len] = '\0';
	d->ms = ms;
	d->attempts = att;
	d->reason = none ? NULL : h->buf;
	d->len = len;
	h->left--;
	return 1;
}

void
mq_history_close(struct mq_history *h)
{
	int saved = errno;

	if (h->fp != NULL)
		fclose(h->fp);
	free(h->buf);
	memset(h, 0, sizeof(*h));
	errno = saved;
}

static int
record_write(struct mq_tmpfile *tf, uint64_t ms, unsigned attempts,
    const char *reason, size_t len)
{
	char head[HEADER_MAX];
	int n;

	if (reason != NULL)
		n = snprintf(head, sizeof(head), "%" PRIu64 " %u %zu\n", ms,
		    attempts, len);
	else
		n = snprintf(head, sizeof(head), "%" PRIu64 " %u -\n", ms,
		    attempts);
	if (n < 0 || (size_t)n >= sizeof(head)) {
		errno = EOVERFLOW;
		return -1;
	}
	if (reason == NULL)
		len = 0;
	return mq_tmp_write(tf, head, n) == -1 ||
	    mq_tmp_write(tf, reason != NULL ? reason : "", len) == -1 ||
	    mq_tmp_write(tf, "\n", 1) == -1 ? -1 : 0;
}

/*
 * A redrive's history, before its body moves: to's deaths/ID (to may be
 * from) becomes the first d->deaths records of from's and the current
 * death (d's DIED and attempts, and reason: len bytes, or NULL for none),
 * written in to's tmp/, synced, renamed over deaths/ID, deaths/ synced.
 * *count is how many records it holds: the name's deaths once the body
 * moved (d->deaths + 1, or fewer when from's history had fewer).  A
 * redrive is never held back by what it cannot read: from's history is
 * carried as far as it reads (up to a malformed or torn record, a read
 * error; not at all when it cannot be opened: a symbolic link, a
 * directory, ...), and a reason that cannot be read comes as NULL (the
 * caller's, dead.c).  Writing to's history must succeed, or the redrive
 * fails: that is what keeps the history from being lost.
 */
int
mq_history_carry(struct mq_spool *from, struct mq_spool *to,
    const struct mq_name *d, const char *reason, size_t len,
    unsigned *count)
{
	struct mq_history h;
	struct mq_death one;
	struct mq_tmpfile tf;
	char tmpname[MQ_ID_LEN + 1];
	unsigned n = 0;
	int dfd, r, saved;

	if (d->deaths >= MQ_DEATHS_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
	if (mq_spool_need(to, 0) == -1)
		return -1;
	/*
	 * A name of its own in tmp/: what a redrive killed here leaves is
	 * a fragment that mq-sweep removes in time (mq_tmp_clean).
	 */
	mq_id_new(tmpname);
	/*
	 * Unreadable: a history of none (mq_history_open leaves it so); but
	 * memory run out is no property of the file, and fails the redrive
	 * rather than cut its history short.
	 */
	if (mq_history_open(&h, from, d) == -1 && errno == ENOMEM)
		return -1;
	if (mq_tmp_create(&tf, to, tmpname) == -1) {
		mq_history_close(&h);
		return -1;
	}
	while ((r = mq_history_next(&h, &one)) == 1) {
		if (record_write(&tf, one.ms, one.attempts, one.reason,
		    one.len) == -1)
			goto fail;
		n++;
	}
	/* A read error or a malformed record ends what it carries. */
	if (r == -1 && errno == ENOMEM)
		goto fail;
	mq_history_close(&h);
	if (record_write(&tf, d->ms, d->attempts, reason, len) == -1 ||
	    mq_tmp_close(&tf, MQ_TMP_SYNC_NOW) == -1 ||
	    (dfd = deaths_dir(to, 1)) == -1) {
		mq_tmp_abort(&tf);
		return -1;
	}
	if (mq_tmp_commit(&tf, dfd, d->id) == -1 || mq_fsync_dir(dfd) == -1) {
		saved = errno;
		mq_tmp_abort(&tf);
		close(dfd);
		errno = saved;
		return -1;
	}
	close(dfd);
	*count = n + 1;
	return 0;
fail:
	mq_history_close(&h);
	mq_tmp_abort(&tf);
	return -1;
}

/*
 * The history of a message that has left the spool (nm's, which had
 * deaths: the caller looks, so that one without costs nothing) goes too.
 */
int
mq_history_forget(struct mq_spool *sp, const struct mq_name *nm)
{
	int dfd, r, saved;

	if (nm->deaths == 0)
		return 0;
	if ((dfd = deaths_dir(sp, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	r = unlinkat(dfd, nm->id, 0);
	saved = errno;
	close(dfd);
	if (r == -1 && saved != ENOENT) {
		errno = saved;
		return -1;
	}
	return 0;
}
