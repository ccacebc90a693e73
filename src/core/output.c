/*
 * output.c: the kept output of a worker's jobs (the setting keep-output;
 * mq-log -o), output/ID,ATTEMPT in the spool: what the job wrote on its
 * standard output and error, line by line as the worker passed it on,
 * both in one file.  Bounded with no copy: past MQ_OUTPUT_MAX bytes the
 * file becomes output/ID,ATTEMPT.1 (over the one before) and a new one
 * begins, so that at least the last MQ_OUTPUT_MAX bytes, and at most
 * twice that, are kept.  Not synced: it is for reading, not for a
 * guarantee.  mq-sweep removes the files older than keep-output.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

static int
output_dir(struct mq_spool *sp, int create)
{
	int made;

	if (create && mq_mkdirat(sp->fd, MQ_DIR_OUTPUT, sp->dmode, &made) == -1)
		return -1;
	return mq_opendirat(sp->fd, MQ_DIR_OUTPUT);
}

/* Begins the kept output of the job of id's attempt: 0, or -1 (errno). */
int
mq_output_open(struct mq_output *o, struct mq_spool *sp, const char *id,
    unsigned attempt)
{
	char old[MQ_NAME_MAX + 2];

	o->fd = -1;
	o->size = 0;
	snprintf(o->name, sizeof(o->name), "%s,%u", id, attempt);
	if ((o->dir = output_dir(sp, 1)) == -1)
		return -1;
	/* An attempt run again (a worker that died) begins anew. */
	snprintf(old, sizeof(old), "%s.1", o->name);
	unlinkat(o->dir, old, 0);
	o->fd = openat(o->dir, o->name, O_WRONLY | O_CREAT | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC, sp->fmode);
	if (o->fd == -1) {
		mq_closefd(&o->dir);
		return -1;
	}
	return 0;
}

/* Best effort: a job's output is passed on whatever becomes of this. */
void
mq_output_write(struct mq_output *o, const char *buf, size_t len)
{
	char old[MQ_NAME_MAX + 2];
	ssize_t w;

	if (o->fd == -1)
		return;
	if (o->size + len > MQ_OUTPUT_MAX && o->size > 0) {
		snprintf(old, sizeof(old), "%s.1", o->name);
		close(o->fd);
		o->fd = -1;
		if (renameat(o->dir, o->name, o->dir, old) == -1)
			return;
		o->fd = openat(o->dir, o->name, O_WRONLY | O_CREAT | O_TRUNC |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
		o->size = 0;
		if (o->fd == -1)
			return;
	}
	while (len > 0) {
		if ((w = write(o->fd, buf, len)) == -1) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += w;
		len -= (size_t)w;
		o->size += (uint64_t)w;
	}
}

void
mq_output_close(struct mq_output *o)
{
	mq_closefd(&o->fd);
	mq_closefd(&o->dir);
}

/*
 * A kept output's name, "ID,A" or "ID,A.1": its ID into id and its
 * attempt (0: not such a name).
 */
static unsigned
parse(const char *name, char id[MQ_ID_LEN + 1])
{
	const char *comma = strrchr(name, ',');
	char *end;
	unsigned long a;

	if (comma == NULL || (size_t)(comma - name) > MQ_ID_LEN ||
	    comma[1] < '1' || comma[1] > '9')
		return 0;
	memcpy(id, name, comma - name);
	id[comma - name] = '\0';
	a = strtoul(comma + 1, &end, 10);
	if ((*end != '\0' && strcmp(end, ".1") != 0) || a > MQ_ATTEMPTS_MAX ||
	    !mq_id_valid(id))
		return 0;
	return (unsigned)a;
}

struct look {
	const char	*prefix;
	unsigned	 want, best;
	char		 id[MQ_ID_LEN + 1];	/* the one met; "": none */
	int		 ambiguous;
};

static int
look(void *arg, int dirfd, const char *name)
{
	struct look *l = arg;
	char id[MQ_ID_LEN + 1];
	unsigned a;

	(void)dirfd;
	if ((a = parse(name, id)) == 0 ||
	    strncmp(id, l->prefix, strlen(l->prefix)) != 0)
		return 0;
	if (l->id[0] != '\0' && strcmp(l->id, id) != 0) {
		l->ambiguous = 1;
		return 0;
	}
	strlcpy(l->id, id, sizeof(l->id));
	if (l->want == 0 ? a > l->best : a == l->want)
		l->best = a;
	return 0;
}

/*
 * The kept output of the job of the message whose ID is or begins with
 * prefix: attempt's (0: the latest kept), its two parts opened (the
 * older, .1, or -1; the newer), its ID in id, its attempt in *got.  0, or
 * -1 with errno: ENOENT, none kept; EEXIST, several IDs begin so.
 */
int
mq_output_find(struct mq_spool *sp, const char *prefix, unsigned attempt,
    int fds[2], char id[MQ_ID_LEN + 1], unsigned *got)
{
	struct look l;
	char name[MQ_NAME_MAX + 2];
	int dir, saved;

	memset(&l, 0, sizeof(l));
	l.prefix = prefix;
	l.want = attempt;
	fds[0] = fds[1] = -1;
	if ((dir = output_dir(sp, 0)) == -1)
		return -1;
	if (mq_dir_each(dir, DT_REG, look, &l) == -1) {
		saved = errno;
		close(dir);
		errno = saved;
		return -1;
	}
	if (l.ambiguous || l.best == 0) {
		close(dir);
		errno = l.ambiguous ? EEXIST : ENOENT;
		return -1;
	}
	strlcpy(id, l.id, MQ_ID_LEN + 1);
	*got = l.best;
	snprintf(name, sizeof(name), "%s,%u.1", l.id, l.best);
	fds[0] = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	snprintf(name, sizeof(name), "%s,%u", l.id, l.best);
	fds[1] = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	saved = errno;
	close(dir);
	if (fds[1] == -1 && fds[0] == -1) {
		errno = saved;
		return -1;
	}
	return 0;
}

/*
 * mq-sweep's part: kept output last written more than age ms ago goes
 * (all of it with age 0: none is to be kept).  0, or -1 with errno.
 */
int
mq_output_sweep(struct mq_spool *sp, uint64_t age_ms,
    void (*report)(const char *, const char *))
{
	struct mq_trim t = { 0, 0, NULL, NULL, NULL, "kept output removed",
	    report };
	uint64_t now = mq_now_ms();
	int dir, r, saved;

	if ((dir = output_dir(sp, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	t.before = age_ms == 0 ? UINT64_MAX : now > age_ms ? now - age_ms : 0;
	r = mq_dir_trim(dir, &t);
	saved = errno;
	close(dir);
	errno = saved;
	return r;
}
