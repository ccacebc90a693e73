/*
 * dead.c: dead letters.  dead/ID,DIED,ATTEMPTS holds the body; reason/ID
 * holds the reason, byte for byte, unless a full file system left no room
 * for it.
 *
 *	bury	new/... or cur/...	-> dead/ID,DIED,A	mq_bury
 *		tmp/ID,reason		-> reason/ID		mq_tmp_commit
 *	redrive	dead/ID,DIED,A		-> new/T/M/L/ID,0	mq_dead_redrive
 *	purge	dead/ID,DIED,A		-> (unlinked)		mq_dead_purge
 *
 * (a redrive's rename is mq_place's, place.c).
 *
 * A redrive into a spool on another file system copies the body to that
 * spool's tmp/ and syncs it before the original goes (send.c writes it);
 * the reason is removed after the body moved, by redrive and purge alike.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define REASON_MAX	(1024 * 1024)

static int
is_dead(const char *s)
{
	struct mq_name nm;

	return mq_name_parse(s, MQ_DEAD, &nm) == 0;
}

/*
 * Writes a reason as reason/ID, through tmp/ so that it is whole or absent.
 * The errno of a failure is kept.
 */
static int
reason_put(struct mq_spool *sp, const char *id, const char *reason,
    size_t len)
{
	struct mq_tmpfile tf;
	char tmpname[MQ_NAME_MAX];

	snprintf(tmpname, sizeof(tmpname), "%s,reason", id);
	/* A crashed bury may have left its tmp file. */
	mq_tmp_remove(sp, tmpname);
	if (mq_tmp_create(&tf, sp, tmpname) == -1)
		return -1;
	if (mq_tmp_write(&tf, reason, len) == -1 ||
	    mq_tmp_close(&tf, MQ_TMP_SYNC_NONE) == -1 ||
	    mq_tmp_commit(&tf, sp->reason, id) == -1) {
		mq_tmp_abort(&tf);
		return -1;
	}
	return 0;
}

/*
 * The reason goes in first, so that a dead letter has one whenever there
 * is room for it; if the message is gone by the time of the rename, the
 * reason is taken back.  With no room for a reason the message is buried
 * without one: the body must get out of the way of a full file system, and
 * a missing reason says why it is missing (see mq-dlq(1)).
 */
int
mq_bury(struct mq_spool *sp, int from, const char *name,
    const struct mq_name *nm, const char *reason, size_t len)
{
	struct mq_name dead = *nm;
	char deadname[MQ_NAME_MAX];
	int saved, with;

	dead.ms = mq_now_ms();
	if (mq_spool_need(sp, 0) == -1 ||
	    mq_name_format(deadname, sizeof(deadname), MQ_DEAD, &dead) == -1)
		return -1;
	with = reason_put(sp, nm->id, reason, len) == 0;
	if (!with) {
		if (!mq_spool_full(errno))
			return -1;
		/* A reason of an earlier death must not stand for this one. */
		if (unlinkat(sp->reason, nm->id, 0) == -1 && errno != ENOENT)
			return -1;
	}
	if (renameat(from, name, sp->dead, deadname) == -1) {
		saved = errno;
		if (with)
			unlinkat(sp->reason, nm->id, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

/* Every dead letter, in ID (enqueue) order. */
int
mq_dead_list(struct mq_spool *sp, struct mq_dead **out, size_t *count)
{
	struct mq_names names;
	struct mq_dead *d;
	size_t i;

	if (mq_spool_need(sp, 0) == -1 ||
	    mq_names_read(sp->dead, DT_REG, is_dead, &names) == -1)
		return -1;
	mq_names_sort(&names);
	d = xreallocarray(NULL, names.n + 1, sizeof(*d));
	for (i = 0; i < names.n; i++) {
		strlcpy(d[i].name, names.v[i], sizeof(d[i].name));
		mq_name_parse(names.v[i], MQ_DEAD, &d[i].n);
	}
	*count = names.n;
	*out = d;
	mq_names_free(&names);
	return 0;
}

/* Finds the dead letter with this ID; ENOENT when there is none. */
int
mq_dead_find(struct mq_spool *sp, const char *id, struct mq_dead *out)
{
	struct mq_dead *d;
	size_t n, i;
	int found = 0;

	if (!mq_id_valid(id)) {
		errno = ENOENT;
		return -1;
	}
	if (mq_dead_list(sp, &d, &n) == -1)
		return -1;
	for (i = 0; i < n && !found; i++) {
		if (strcmp(d[i].n.id, id) == 0) {
			*out = d[i];
			found = 1;
		}
	}
	free(d);
	if (!found) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/*
 * The stored reason; the caller frees *buf.  Returns 1 (and no bytes) when
 * there is none: a message buried on a full file system has none.
 */
int
mq_dead_reason(struct mq_spool *sp, const char *id, char **buf, size_t *len)
{
	ssize_t n;
	int fd;

	*buf = xmalloc(REASON_MAX);
	*len = 0;
	if (mq_spool_need(sp, 0) == -1)
		return -1;
	fd = openat(sp->reason, id, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 1 : -1;
	while (*len < REASON_MAX) {
		n = read(fd, *buf + *len, REASON_MAX - *len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*len += n;
	}
	close(fd);
	return 0;
}

/* Opens a dead letter's body to be read. */
int
mq_dead_open(struct mq_spool *sp, const struct mq_dead *d)
{
	if (mq_spool_need(sp, 0) == -1)
		return -1;
	return openat(sp->dead, d->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
}

/* Copies a dead letter into another spool's tmp/, synced. */
static int
copy_out(struct mq_spool *sp, const struct mq_dead *d, struct mq_spool *to)
{
	struct mq_tmpfile tf;
	int in, saved;

	if ((in = mq_dead_open(sp, d)) == -1)
		return -1;
	if (mq_tmp_create(&tf, to, d->n.id) == -1) {
		saved = errno;
		close(in);
		errno = saved;
		return -1;
	}
	if (mq_copy_fd(in, tf.fd) == -1) {
		saved = errno;
		close(in);
		errno = saved;
		mq_tmp_abort(&tf);
		return -1;
	}
	close(in);
	if (mq_tmp_close(&tf, MQ_TMP_SYNC_NOW) == -1) {
		mq_tmp_abort(&tf);
		return -1;
	}
	return 0;
}

/* Back to new/ of the placer's spool, attempts reset. */
int
mq_dead_redrive(struct mq_spool *sp, const struct mq_dead *d,
    struct mq_placer *pl)
{
	struct mq_name nm = d->n;
	char newname[MQ_NAME_MAX];

	nm.attempts = 0;
	if (mq_spool_need(sp, 0) == -1 ||
	    mq_name_format(newname, sizeof(newname), MQ_NEW, &nm) == -1)
		return -1;
	if (mq_place(pl, sp->dead, d->name, newname, mq_now_ms()) == -1) {
		if (errno != EXDEV)
			return -1;
		if (copy_out(sp, d, pl->sp) == -1)
			return -1;
		if (mq_tmp_place(pl, nm.id, mq_now_ms()) == -1 ||
		    mq_placer_flush(pl) == -1)
			return -1;
		if (unlinkat(sp->dead, d->name, 0) == -1 && errno != ENOENT)
			return -1;
	}
	unlinkat(sp->reason, d->n.id, 0);
	return 0;
}

int
mq_dead_purge(struct mq_spool *sp, const struct mq_dead *d)
{
	if (mq_spool_need(sp, 0) == -1 || unlinkat(sp->dead, d->name, 0) == -1)
		return -1;
	unlinkat(sp->reason, d->n.id, 0);
	return 0;
}
