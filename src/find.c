/*
 * find.c: a message by its ID, in whatever state it is (mq-show, mq-rm),
 * and its removal.  The search reads directories only: new/ (every
 * priority's tree), the trees of messages parked in groups/G/, the
 * buckets of cur/, then dead/, in this order, so that a message claimed
 * while it is searched for (new/ -> cur/) is met in cur/ once new/ is
 * behind.  A message released meanwhile (cur/ -> new/) can be missed by
 * one search: a search that finds nothing is made once more before it
 * says so.  What is found keeps its directory open, so that what is done
 * with it names no path.
 *
 * Every removal goes through mq_remove, as its state asks:
 *
 *	new/ (ready, delayed, past its ttl), cur/ (a lease run out, or any
 *	with force)	unlinked; the head of an ordered group leaves it as
 *			an ack's does (mq_group_leave: the next is promoted)
 *	groups/G/T/M/L/	unlinked under the group's lock (mq_group_unpark)
 *	dead/		purged with its reason (mq_dead_purge)
 *
 * An unlink that meets ENOENT means the message moved (claimed, released,
 * promoted): it is looked for again and what is found then decides (a
 * claim made first leaves it in flight: refused without force).  A
 * message with a dedup key starts its window as after an ack: its link
 * count drops (key.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

static const char *const where_names[] = {
	"ready", "delayed", "blocked", "inflight", "expired", "dead"
};

const char *
mq_where_name(enum mq_where w)
{
	return where_names[w];
}

/* A search: for one ID (or all, id NULL) in the states of mask. */
struct finder {
	const char	*id;
	size_t		 idlen;
	uint64_t	 now;
	unsigned	 mask;
	enum mq_state	 st;	/* of the directory being read */
	enum mq_where	 where;	/* new/'s leaf: ready or delayed */
	const char	*group;	/* the group whose tree is read */
	mq_found_fn	 fn;
	void		*arg;
};

static int
match(void *arg, int dirfd, const char *name)
{
	struct finder *s = arg;
	struct mq_found f;
	int r, saved;

	if (s->id != NULL && (strncmp(name, s->id, s->idlen) != 0 ||
	    (name[s->idlen] != ',' && name[s->idlen] != '\0')))
		return 0;
	if (strlcpy(f.name, name, sizeof(f.name)) >= sizeof(f.name) ||
	    mq_name_parse(name, s->st, &f.n) == -1)
		return 0;
	f.where = s->where;
	if (s->st == MQ_CUR)
		f.where = f.n.ms > s->now ? MQ_AT_INFLIGHT : MQ_AT_EXPIRED;
	if (s->group != NULL)
		strlcpy(f.n.group, s->group, sizeof(f.n.group));
	if ((s->mask & MQ_AT(f.where)) == 0)
		return 0;
	if ((f.dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) == -1)
		return -1;
	r = s->fn(s->arg, &f);
	saved = errno;
	mq_found_close(&f);
	errno = saved;
	return r;
}

/*
 * Matches the entries of the directory dirfd/name: 0 when it was read (or
 * is gone: removed as empty meanwhile), 1 when fn said stop, -1 on error.
 */
static int
read_in(struct finder *s, int dirfd, const char *name)
{
	int fd, r, saved;

	if ((fd = mq_opendirat(dirfd, name)) == -1)
		return errno == ENOENT ? 0 : -1;
	r = mq_dir_each(fd, DT_UNKNOWN, match, s);
	saved = errno;
	close(fd);
	errno = saved;
	return r == -1 && errno == ENOENT ? 0 : r;
}

/* A leaf of new/ (or of a group's tree, s->group set). */
static int
leaf_step(void *arg, int dirfd, const char *name, int digits, uint64_t key,
    unsigned prio)
{
	struct finder *s = arg;
	int r;

	(void)prio;
	if (digits != MQ_KEY_DIGITS)
		return MQ_TREE_INTO;
	if (s->group == NULL)
		s->where = key <= s->now ? MQ_AT_READY : MQ_AT_DELAYED;
	if ((r = read_in(s, dirfd, name)) == -1)
		return -1;
	return r == 1 ? MQ_TREE_STOP : MQ_TREE_NEXT;
}

/* Returns 1 when fn said stop, 0 when the walk is done, -1 on error. */
static int
walk_new(struct mq_spool *sp, struct finder *s)
{
	struct mq_tree t = { leaf_step, NULL, 0, 0, 0, 0, 0 };
	int r;

	t.arg = s;
	s->st = MQ_NEW;
	s->group = NULL;
	if ((r = mq_tree_walk(&t, sp->new)) == -1)
		return -1;
	return !r;
}

static int
walk_group(void *arg, int groups, const char *name)
{
	struct finder *s = arg;
	struct mq_tree t = { leaf_step, NULL, 0, 0, 1, 0, 0 };
	int fd, r, saved;

	if (!mq_group_valid(name) || (fd = mq_opendirat(groups, name)) == -1)
		return 0;
	t.arg = s;
	s->group = name;
	r = mq_tree_walk(&t, fd);
	saved = errno;
	close(fd);
	s->group = NULL;
	errno = saved;
	return r == -1 ? -1 : !r;
}

static int
walk_parked(struct mq_spool *sp, struct finder *s)
{
	int fd, r, saved;

	if ((s->mask & MQ_AT(MQ_AT_BLOCKED)) == 0)
		return 0;
	if ((fd = mq_opendirat(sp->fd, MQ_DIR_GROUPS)) == -1)
		return errno == ENOENT ? 0 : -1;
	s->st = MQ_NEW;
	s->where = MQ_AT_BLOCKED;
	r = mq_dir_each(fd, DT_DIR, walk_group, s);
	saved = errno;
	close(fd);
	errno = saved;
	return r == -1 && errno == ENOENT ? 0 : r;
}

static int
walk_bucket(void *arg, int cur, const char *name)
{
	uint64_t secs;

	if (mq_cur_bucket_parse(name, &secs) == -1)
		return 0;
	return read_in(arg, cur, name);
}

static int
walk_cur(struct mq_spool *sp, struct finder *s)
{
	if ((s->mask & (MQ_AT(MQ_AT_INFLIGHT) | MQ_AT(MQ_AT_EXPIRED))) == 0)
		return 0;
	s->st = MQ_CUR;
	s->group = NULL;
	return mq_dir_each(sp->cur, DT_DIR, walk_bucket, s);
}

static int
walk_dead(struct mq_spool *sp, struct finder *s)
{
	if ((s->mask & MQ_AT(MQ_AT_DEAD)) == 0)
		return 0;
	if (mq_spool_need(sp, 0) == -1)
		return -1;
	s->st = MQ_DEAD;
	s->where = MQ_AT_DEAD;
	s->group = NULL;
	return mq_dir_each(sp->dead, DT_UNKNOWN, match, s);
}

/*
 * Hands each message in the states of mask to fn, which owns the record
 * only while it runs (mq_remove may be called on it) and returns 1 to
 * stop, 0 to go on, -1 on error.  The parked messages come first, then
 * new/, cur/ and dead/: a head removed promotes nothing already passed.
 * Returns 1 when fn stopped the walk, 0 at its end, -1 on error.
 */
int
mq_find_each(struct mq_spool *sp, uint64_t now, unsigned mask,
    mq_found_fn fn, void *arg)
{
	struct finder s = { NULL, 0, now, mask, MQ_NEW, MQ_AT_READY, NULL, fn,
	    arg };
	int r;

	if ((r = walk_parked(sp, &s)) != 0 || (r = walk_new(sp, &s)) != 0 ||
	    (r = walk_cur(sp, &s)) != 0)
		return r;
	return walk_dead(sp, &s);
}

static int
keep(void *arg, struct mq_found *f)
{
	struct mq_found *out = arg;

	*out = *f;
	f->dirfd = -1;
	return 1;
}

/* One search, in the order of the top comment. */
static int
search(struct mq_spool *sp, const char *id, uint64_t now, struct mq_found *f)
{
	struct finder s = { id, strlen(id), now, MQ_AT_ALL, MQ_NEW, MQ_AT_READY, NULL,
	    keep, f };
	int r;

	if ((r = walk_new(sp, &s)) == 0 && (r = walk_parked(sp, &s)) == 0 &&
	    (r = walk_cur(sp, &s)) == 0)
		r = walk_dead(sp, &s);
	return r;
}

/*
 * Where the message with this ID is as of now (ms), in *f: its directory
 * open (mq_found_close closes it), its name and where.  Returns 0, or -1
 * with ENOENT when there is no such message (EINVAL: no valid ID).
 */
int
mq_find(struct mq_spool *sp, const char *id, uint64_t now, struct mq_found *f)
{
	int i, r = 0;

	f->dirfd = -1;
	if (!mq_id_valid(id)) {
		errno = EINVAL;
		return -1;
	}
	/* Twice: a release moves a message behind a search's back. */
	for (i = 0; i < 2 && r == 0; i++)
		if ((r = search(sp, id, now, f)) == -1)
			return -1;
	if (r == 0) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* The message opened for reading, never following a link nor blocking. */
int
mq_found_open(const struct mq_found *f)
{
	return openat(f->dirfd, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
}

void
mq_found_close(struct mq_found *f)
{
	mq_closefd(&f->dirfd);
}

/* new/ or cur/: unlinked as an ack does, a group's head leaving it. */
static int
unlink_message(struct mq_spool *sp, struct mq_found *f)
{
	int lock, r, saved;

	switch (mq_group_leave(sp, f->dirfd, f->name, &f->n, NULL, &lock)) {
	case -1:
		return -1;
	case 1:
		return 0;
	}
	r = unlinkat(f->dirfd, f->name, 0);
	saved = errno;
	mq_group_unlock(&lock);
	errno = saved;
	return r;
}

static int
remove_once(struct mq_spool *sp, struct mq_found *f)
{
	struct mq_dead d;

	switch (f->where) {
	case MQ_AT_BLOCKED:
		return mq_group_unpark(sp, f->dirfd, f->name, f->n.group);
	case MQ_AT_DEAD:
		strlcpy(d.name, f->name, sizeof(d.name));
		d.n = f->n;
		return mq_dead_purge(sp, &d);
	default:
		return unlink_message(sp, f);
	}
}

/*
 * Removes the message f found, following it if it moves meanwhile (f then
 * says where it was last).  flags: MQ_RM_FORCE removes one in flight (its
 * holder's ack will find its lease lost), MQ_RM_WAITING leaves what is
 * met dead alone (as gone).  Returns MQ_EX_OK, MQ_EX_NONE (gone, or dead
 * with MQ_RM_WAITING), MQ_EX_LOST (in flight, not removed: f->n.ms is its
 * lease's end) or MQ_EX_SYS (errno set).
 */
int
mq_remove(struct mq_spool *sp, struct mq_found *f, int flags)
{
	char id[MQ_ID_LEN + 1];
	int i;

	for (i = 0; i < MQ_RETRIES; i++) {
		if (f->where == MQ_AT_INFLIGHT && !(flags & MQ_RM_FORCE))
			return MQ_EX_LOST;
		if (f->where == MQ_AT_DEAD && (flags & MQ_RM_WAITING))
			return MQ_EX_NONE;
		if (remove_once(sp, f) == 0)
			return MQ_EX_OK;
		if (errno != ENOENT)
			return MQ_EX_SYS;
		/* It moved: where to? */
		strlcpy(id, f->n.id, sizeof(id));
		mq_found_close(f);
		if (mq_find(sp, id, mq_now_ms(), f) == -1)
			return errno == ENOENT ? MQ_EX_NONE : MQ_EX_SYS;
	}
	errno = EAGAIN;
	return MQ_EX_SYS;
}
