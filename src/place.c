/*
 * place.c: the new/ tree.  new/T/M/L is the leaf for visibility key L (ms
 * since the epoch, hex; T and M are its prefixes).  It owns the rename
 * into a leaf, which send, release, redrive and reclaim all end with:
 *
 *	send	tmp/ID			-> new/T/M/L/ID,0	(mq_tmp_place)
 *	release	cur/S/ID,DEADLINE,A	-> new/T/M/L/ID,A	(mq_place_back)
 *	redrive	dead/ID,DIED,A		-> new/T/M/L/ID,0	(mq_place)
 *
 * (each name with its ",SENT,TTL" when it has them: a release keeps them,
 * a redrive makes SENT now; see name.c)
 *
 * and the one descent of the tree's three levels that claiming, pruning
 * and counting share (mq_tree_walk).
 *
 * Empty directories are removed as they are passed; whoever finds its
 * target directory gone (ENOENT while the source still exists) makes it
 * again and retries, from new/ down, as any level of the path may have
 * gone with it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

void
mq_placer_init(struct mq_placer *pl, struct mq_spool *sp, int sync)
{
	memset(pl, 0, sizeof(*pl));
	pl->sp = sp;
	pl->sync = sync;
	pl->root = sp->new;
	pl->top = pl->mid = pl->leaf = -1;
}

/*
 * Opens the leaf for key, making what is missing of its path.  A receiver
 * may remove a level as empty between our making it and making the next
 * one inside (which then fails with ENOENT): start again from the root
 * (new/, or a group's tree: see group.c).
 */
static int
leaf_open(struct mq_placer *pl, uint64_t key)
{
	char top[16], mid[16], leaf[16];
	int i, saved;

	if (mq_key_format(top, sizeof(top), key, MQ_TOP_DIGITS) == -1 ||
	    mq_key_format(mid, sizeof(mid), key, MQ_MID_DIGITS) == -1 ||
	    mq_key_format(leaf, sizeof(leaf), key, MQ_KEY_DIGITS) == -1)
		return -1;
	for (i = 0; i < MQ_RETRIES; i++) {
		mq_placer_close(pl);
		if ((pl->top = mq_spool_subdir(pl->sp, pl->root, top,
		    pl->spares)) != -1 &&
		    (pl->mid = mq_spool_subdir(pl->sp, pl->top, mid,
		    pl->spares)) != -1 &&
		    (pl->leaf = mq_spool_subdir(pl->sp, pl->mid, leaf,
		    pl->spares)) != -1) {
			pl->key = key;
			pl->count = 0;
			return 0;
		}
		if (errno != ENOENT)
			break;
	}
	saved = errno;
	mq_placer_close(pl);
	errno = saved;
	return -1;
}

/* A level whose making failed is not open, and has nothing to sync. */
static int
sync_level(int fd)
{
	return fd == -1 ? 0 : mq_fsync_dir(fd);
}

/*
 * Makes what was placed durable (when syncing) and rings the doorbell for
 * waiting receivers.  Every level is synced: another sender may have made
 * a directory and not synced its parent yet.  A bell that cannot be rung
 * fails nothing: the messages are in place, and failing would have a
 * producer send them twice; a receiver finds them when next it looks.
 */
int
mq_placer_flush(struct mq_placer *pl)
{
	if (!pl->dirty)
		return 0;
	if (pl->sync && (sync_level(pl->leaf) == -1 ||
	    sync_level(pl->mid) == -1 || sync_level(pl->top) == -1 ||
	    mq_fsync_dir(pl->root) == -1))
		return -1;
	pl->dirty = 0;
	(void)mq_ring(pl->sp);
	return 0;
}

void
mq_placer_close(struct mq_placer *pl)
{
	mq_closefd(&pl->leaf);
	mq_closefd(&pl->mid);
	mq_closefd(&pl->top);
}

/*
 * Renames from/fromname into the leaf for visibility time due, as name.
 * A sender keeps filling one leaf while it is young and not full, so a
 * batch shares its directory syncs and no leaf grows without bound.
 * ENOENT means from/fromname is gone, and only that: a leaf (or a level
 * above it) removed as empty by a receiver is made again, from the top.
 */
int
mq_place(struct mq_placer *pl, int from, const char *fromname,
    const char *name, uint64_t due)
{
	uint64_t key = pl->key;
	int i;

	if (pl->leaf == -1 || due < pl->key ||
	    due - pl->key >= MQ_LEAF_SPAN_MS || pl->count >= MQ_LEAF_MAX) {
		if (mq_placer_flush(pl) == -1)
			return -1;
		mq_placer_close(pl);
		key = due;
	}
	for (i = 0; i < MQ_RETRIES; i++) {
		if (pl->leaf == -1 && leaf_open(pl, key) == -1)
			break;
		if (renameat(from, fromname, pl->leaf, name) == 0) {
			pl->count++;
			pl->dirty = 1;
			return 0;
		}
		if (errno != ENOENT)
			return -1;
		if (!mq_exists(from, fromname)) {
			errno = ENOENT;
			return -1;
		}
		/* A receiver removed the leaf as empty: make it again. */
		mq_placer_close(pl);
	}
	/* Still there, so not gone: the tree kept being removed under us. */
	if (errno == ENOENT) {
		if (!mq_exists(from, fromname)) {
			errno = ENOENT;
			return -1;
		}
		errno = EAGAIN;
	}
	return -1;
}

/*
 * Puts from/name (a message named as nm) back into new/, visible at due,
 * its attempts kept: what a release and an expired lease both come to.
 */
int
mq_place_back(struct mq_placer *pl, int from, const char *name,
    const struct mq_name *nm, uint64_t due)
{
	char newname[MQ_NAME_MAX];

	if (mq_name_format(newname, sizeof(newname), MQ_NEW, nm) == -1)
		return -1;
	return mq_place(pl, from, name, newname, due);
}

static int
is_top(const char *s)
{
	uint64_t k;

	return mq_key_parse(s, MQ_TOP_DIGITS, &k) == 0;
}

static int
is_mid(const char *s)
{
	uint64_t k;

	return mq_key_parse(s, MQ_MID_DIGITS, &k) == 0;
}

static int
is_leaf(const char *s)
{
	uint64_t k;

	return mq_key_parse(s, MQ_KEY_DIGITS, &k) == 0;
}

static int	level(const struct mq_tree *, int, int);

/*
 * Whether no sender can be filling the directory of the level of digits
 * keyed key any more: a sender fills a leaf for MQ_LEAF_SPAN_MS after its
 * key, so a directory is settled that long after the end of its range.
 * One removed before that would be made again by the sender at once, and
 * a sender whose every mkdir wakes a receiver that removes it again could
 * lose that race every time.
 */
static int
settled(uint64_t key, int digits, uint64_t now)
{
	uint64_t range = (uint64_t)1 << 4 * (MQ_KEY_DIGITS - digits);

	return key + range + MQ_LEAF_SPAN_MS <= now;
}

/*
 * Hands dirfd/name (a directory of the level of digits, with its key) to
 * the walker's function and does what it answers.  Returns 1 to go on, 0
 * when the walk is to stop, -1 on error.
 */
static int
visit(const struct mq_tree *t, int dirfd, const char *name, int digits,
    uint64_t key)
{
	int fd, r, saved;

	switch (t->fn(t->arg, dirfd, name, digits, key)) {
	case MQ_TREE_NEXT:
		return 1;
	case MQ_TREE_STOP:
		return 0;
	case MQ_TREE_USED:
		break;
	case MQ_TREE_INTO:
		/* One removed meanwhile was empty. */
		if ((fd = mq_opendirat(dirfd, name)) == -1) {
			if (errno == ENOENT)
				return 1;
			if (!t->tolerant)
				return -1;
			break;
		}
		r = level(t, fd, digits == MQ_TOP_DIGITS ? MQ_MID_DIGITS :
		    MQ_KEY_DIGITS);
		saved = errno;
		close(fd);
		errno = saved;
		if (r == -1 && !t->tolerant)
			return -1;
		if (r == 0)
			return 0;
		break;
	default:
		return -1;
	}
	if (t->remove && settled(key, digits, t->now))
		unlinkat(dirfd, name, AT_REMOVEDIR);
	return 1;
}

struct streamed {
	const struct mq_tree *t;
	int	 digits;
	int	 failed;	/* the error is t->fn's, not the listing's */
};

static int
visit_streamed(void *arg, int dirfd, const char *name)
{
	struct streamed *s = arg;
	uint64_t key;
	int r;

	if (mq_key_parse(name, s->digits, &key) == -1)
		return 0;
	r = visit(s->t, dirfd, name, s->digits, key);
	if (r == -1)
		s->failed = 1;
	return r == 1 ? 0 : r == 0 ? 1 : -1;
}

/*
 * Walks the level of digits that dirfd holds.  Returns 1 when every
 * directory of it was passed, 0 when the walk was stopped, -1 on error.
 */
static int
level(const struct mq_tree *t, int dirfd, int digits)
{
	struct streamed s = { t, digits, 0 };
	struct mq_names names;
	uint64_t key;
	size_t i;
	int r = 1;

	/*
	 * Listing a directory removed since it was opened fails with ENOENT:
	 * it was empty, so it is passed.  An error of t->fn is passed up,
	 * whatever its errno.
	 */
	if (!t->sorted) {
		r = mq_dir_each(dirfd, DT_DIR, visit_streamed, &s);
		if (r == -1)
			return !s.failed && errno == ENOENT ? 1 : -1;
		return r == 0;
	}
	if (mq_names_read(dirfd, DT_DIR, digits == MQ_TOP_DIGITS ? is_top :
	    digits == MQ_MID_DIGITS ? is_mid : is_leaf, &names) == -1)
		return errno == ENOENT ? 1 : -1;
	mq_names_sort(&names);
	for (i = 0; i < names.n && r == 1; i++) {
		mq_key_parse(names.v[i], digits, &key);
		r = visit(t, dirfd, names.v[i], digits, key);
	}
	mq_names_free(&names);
	return r;
}

/*
 * The one descent of new/: hands every directory of every level to t->fn,
 * in key order when t->sorted (the names of a level are then listed
 * first), else as read (nothing kept, so memory does not grow with the
 * tree).  A level t->fn sends the walk into and that is passed to its end,
 * and a leaf it calls used, is removed (if empty) when t->remove is set.
 * Returns 1 when the whole tree was passed, 0 when t->fn stopped the walk,
 * -1 on error.
 */
int
mq_tree_walk(const struct mq_tree *t, int newfd)
{
	return level(t, newfd, MQ_TOP_DIGITS);
}
