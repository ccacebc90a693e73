/*
 * place.c: the new/ trees.  new/T/M/L is the leaf for visibility key L (ms
 * since the epoch, hex; T and M are its prefixes) of priority 0, and
 * new/pN/T/M/L that of priority N (1 to 9): one tree of the same shape
 * per priority that has messages, so a spool without priorities is laid
 * out as before they were.  It owns the rename into a leaf, which send,
 * release, redrive and reclaim all end with:
 *
 *	send	tmp/ID			-> new/[pN/]T/M/L/ID,0	(mq_tmp_land)
 *	release	cur/S/ID,DEADLINE,A	-> new/[pN/]T/M/L/ID,A	(mq_place_back)
 *	redrive	dead/ID,DIED,A		-> new/[pN/]T/M/L/ID,0	(mq_place)
 *
 * (each name with its ",SENT,TTL" when it has them: a release keeps them,
 * a redrive makes SENT now; and with its ",pN", which every state keeps
 * and which names its tree; see name.c), and the one descent of every
 * tree's three levels that claiming, pruning and counting share
 * (mq_tree_walk).
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
	pl->pdir = pl->top = pl->mid = pl->leaf = -1;
}

/*
 * A placer for what goes back into new/ (a release, a reclaim, a
 * promote): a consumer's step, which must drain a full file system, so
 * it may take spare directories (MQ_SPARES).  Not synced.
 */
void
mq_placer_release_init(struct mq_placer *pl, struct mq_spool *sp)
{
	mq_placer_init(pl, sp, 0);
	pl->spares = 1;
}

/* "pN", the directory of priority N's tree in new/ (N > 0). */
static void
prio_name(char *buf, size_t size, unsigned prio)
{
	snprintf(buf, size, "p%u", prio);
}

/* The priority whose tree a directory of new/ holds, or -1. */
int
mq_prio_dir(const char *s)
{
	if (s[0] == 'p' && s[1] >= '1' && s[1] <= '0' + MQ_PRIORITY_MAX &&
	    s[2] == '\0')
		return s[1] - '0';
	return -1;
}

/*
 * Opens the leaf for key in the tree of priority prio, making what is
 * missing of its path.  A receiver may remove a level as empty (new/pN
 * too) between our making it and making the next one inside (which then
 * fails with ENOENT): start again from the root (new/, or a group's
 * tree, which has no priorities: see group.c).
 */
static int
leaf_open(struct mq_placer *pl, unsigned prio, uint64_t key)
{
	char top[16], mid[16], leaf[16], pdir[16];
	int i, saved, how;

	if (prio > MQ_PRIORITY_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (mq_leaf_key_format(top, sizeof(top), key, MQ_TOP_DIGITS) == -1 ||
	    mq_leaf_key_format(mid, sizeof(mid), key, MQ_MID_DIGITS) == -1 ||
	    mq_leaf_key_format(leaf, sizeof(leaf), key, MQ_KEY_DIGITS) == -1)
		return -1;
	prio_name(pdir, sizeof(pdir), prio);
	how = (pl->spares ? MQ_SUBDIR_SPARES : 0) |
	    (pl->fresh ? MQ_SUBDIR_UNSYNCED : 0);
	for (i = 0; i < MQ_RETRIES; i++) {
		mq_placer_close(pl);
		if ((prio == 0 || (pl->pdir = mq_spool_subdir(pl->sp,
		    pl->root, pdir, how)) != -1) &&
		    (pl->top = mq_spool_subdir(pl->sp, prio == 0 ?
		    pl->root : pl->pdir, top, how)) != -1 &&
		    (pl->mid = mq_spool_subdir(pl->sp, pl->top, mid,
		    how)) != -1 &&
		    (pl->leaf = mq_spool_subdir(pl->sp, pl->mid, leaf,
		    how)) != -1) {
			pl->key = key;
			pl->prio = prio;
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
static int
placer_sync(struct mq_placer *pl)
{
	if (pl->dirty) {
		if (pl->sync && (sync_level(pl->leaf) == -1 ||
		    sync_level(pl->mid) == -1 || sync_level(pl->top) == -1 ||
		    sync_level(pl->pdir) == -1 || mq_fsync_dir(pl->root) == -1))
			return -1;
		pl->dirty = 0;
		(void)mq_ring(pl->sp);
	}
	return 0;
}

/*
 * placer_sync, and pl->err, a sync that failed since (a parked message of
 * a group, placed elsewhere: group.c), fails the flush as its own sync
 * would: told here, once, and only here (not by mq_place's change of
 * leaf, which would fail another message with an error not its own).
 */
int
mq_placer_flush(struct mq_placer *pl)
{
	int err = pl->err;

	pl->err = 0;
	if (placer_sync(pl) == -1)
		return -1;
	if (err != 0) {
		errno = err;
		return -1;
	}
	return 0;
}

void
mq_placer_close(struct mq_placer *pl)
{
	mq_closefd(&pl->leaf);
	mq_closefd(&pl->mid);
	mq_closefd(&pl->top);
	mq_closefd(&pl->pdir);
}

/*
 * Renames from/fromname into the leaf for visibility time due in the tree
 * of priority prio, as name.  A sender keeps filling one leaf while it is
 * young and not full and its messages have that leaf's priority, so a
 * batch shares its directory syncs and no leaf grows without bound.
 * ENOENT means from/fromname is gone, and only that: a leaf (or a level
 * above it) removed as empty by a receiver is made again, from the top.
 */
int
mq_place(struct mq_placer *pl, int from, const char *fromname,
    const char *name, unsigned prio, uint64_t due)
{
	uint64_t key = pl->key;
	int i;

	/* A group's tree is in ID order alone (group.c). */
	if (pl->root != pl->sp->new)
		prio = 0;
	if (pl->leaf == -1 || prio != pl->prio || due < pl->key ||
	    due - pl->key >= MQ_LEAF_SPAN_MS || pl->count >= MQ_LEAF_MAX) {
		if (placer_sync(pl) == -1)
			return -1;
		mq_placer_close(pl);
		key = due;
	}
	for (i = 0; i < MQ_RETRIES; i++) {
		if (pl->leaf == -1 && leaf_open(pl, prio, key) == -1)
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
 * its attempts and priority kept: what a release and an expired lease
 * both come to.
 */
int
mq_place_back(struct mq_placer *pl, int from, const char *name,
    const struct mq_name *nm, uint64_t due)
{
	char newname[MQ_NAME_MAX];

	if (mq_name_format(newname, sizeof(newname), MQ_NEW, nm) == -1)
		return -1;
	return mq_place(pl, from, name, newname, nm->prio, due);
}

static int
is_top(const char *s)
{
	uint64_t k;

	return mq_leaf_key_parse(s, MQ_TOP_DIGITS, &k) == 0;
}

static int
is_mid(const char *s)
{
	uint64_t k;

	return mq_leaf_key_parse(s, MQ_MID_DIGITS, &k) == 0;
}

static int
is_leaf(const char *s)
{
	uint64_t k;

	return mq_leaf_key_parse(s, MQ_KEY_DIGITS, &k) == 0;
}

/* What new/ itself holds: priority 0's top level, and the pN trees. */
static int
is_new_entry(const char *s)
{
	return is_top(s) || mq_prio_dir(s) != -1;
}

/* A walk under way: the tree it is in, and what that tree kept. */
struct walk {
	const struct mq_tree *t;
	unsigned prio;
	int	 left;	/* directories of the tree's top level not removed */
};

/* What level() and visit() answer. */
#define PASSED	1	/* every directory passed: go on */
#define STOPPED	0	/* the walk is to end */
#define LATER	2	/* this tree is to end, the walk goes on */

static int	level(struct walk *, int, int);

/*
 * Whether a level that failed (errno) is passed: in a tolerant walk, but
 * not when memory ran out, which is no property of the level and would
 * pass what was never looked at.
 */
static int
passable(const struct walk *w)
{
	return w->t->tolerant && errno != ENOMEM;
}

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
 * The leaf dirfd/name, gone into: opened and handed to t->leaf, whose
 * answer is returned.  One removed meanwhile was empty: MQ_TREE_NEXT.
 */
static int
into_leaf(struct walk *w, int dirfd, const char *name, uint64_t key)
{
	int fd, r, saved;

	if (w->t->leaf == NULL) {
		errno = EINVAL;
		return -1;
	}
	if ((fd = mq_opendirat(dirfd, name)) == -1)
		return errno == ENOENT || passable(w) ? MQ_TREE_NEXT : -1;
	r = w->t->leaf(w->t->arg, fd, key, w->prio);
	saved = errno;
	close(fd);
	errno = saved;
	return r;
}

/*
 * Hands dirfd/name (a directory of the level of digits, with its key) to
 * the walker's function (none: every level is gone into) and does what
 * it answers.  Returns PASSED to go on, STOPPED, LATER, or -1 on error.
 */
static int
visit(struct walk *w, int dirfd, const char *name, int digits, uint64_t key)
{
	const struct mq_tree *t = w->t;
	int fd, r, saved;

	r = t->fn != NULL ? t->fn(t->arg, dirfd, name, digits, key, w->prio) :
	    MQ_TREE_INTO;
	if (r == MQ_TREE_INTO && digits == MQ_KEY_DIGITS)
		r = into_leaf(w, dirfd, name, key);
	switch (r) {
	case MQ_TREE_NEXT:
		goto left;
	case MQ_TREE_STOP:
		return STOPPED;
	case MQ_TREE_LATER:
		return LATER;
	case MQ_TREE_USED:
		break;
	case MQ_TREE_INTO:
		/* One removed meanwhile was empty. */
		if ((fd = mq_opendirat(dirfd, name)) == -1) {
			if (errno == ENOENT)
				return PASSED;
			if (!passable(w))
				return -1;
			break;
		}
		r = level(w, fd, digits == MQ_TOP_DIGITS ? MQ_MID_DIGITS :
		    MQ_KEY_DIGITS);
		saved = errno;
		close(fd);
		errno = saved;
		if (r == -1 && !passable(w))
			return -1;
		if (r == STOPPED || r == LATER)
			return r;
		break;
	default:
		return -1;
	}
	if (t->remove && settled(key, digits, t->now) &&
	    unlinkat(dirfd, name, AT_REMOVEDIR) == 0)
		return PASSED;
left:
	if (digits == MQ_TOP_DIGITS)
		w->left++;
	return PASSED;
}

struct streamed {
	struct walk *w;
	int	 digits;
	int	 r;		/* what the last visit answered */
	int	 failed;	/* the error is t->fn's, not the listing's */
	int	 ended;		/* new/ as read: priority 0's tree was ended */
};

static int	tree(struct walk *, int, unsigned, struct mq_names *);

static int
visit_streamed(void *arg, int dirfd, const char *name)
{
	struct streamed *s = arg;
	uint64_t key;
	unsigned saved;
	int prio;

	/* new/ as read: each pN is walked as it is met. */
	if (s->digits == 0) {
		if ((prio = mq_prio_dir(name)) == -1) {
			if (s->ended ||
			    mq_leaf_key_parse(name, MQ_TOP_DIGITS, &key) == -1)
				return 0;
			s->r = visit(s->w, dirfd, name, MQ_TOP_DIGITS, key);
			/* Its other top levels are passed, not the pN. */
			if (s->r == LATER) {
				s->ended = 1;
				s->r = PASSED;
			}
		} else {
			saved = s->w->prio;
			s->r = tree(s->w, dirfd, prio, NULL);
			s->w->prio = saved;
			if (s->r == LATER)
				s->r = PASSED;
		}
	} else {
		if (mq_leaf_key_parse(name, s->digits, &key) == -1)
			return 0;
		s->r = visit(s->w, dirfd, name, s->digits, key);
	}
	if (s->r == -1)
		s->failed = 1;
	return s->r == PASSED ? 0 : s->r == -1 ? -1 : 1;
}

/*
 * Walks the sorted names of the level of digits in dirfd.  Returns as
 * level() does.
 */
static int
each(struct walk *w, int dirfd, struct mq_names *names, int digits)
{
	uint64_t key;
	size_t i;
	int r = PASSED;

	for (i = 0; i < names->n && r == PASSED; i++) {
		mq_leaf_key_parse(names->v[i], digits, &key);
		r = visit(w, dirfd, names->v[i], digits, key);
	}
	return r;
}

/*
 * Walks the level of digits that dirfd holds (0: new/ itself, as read,
 * every tree in it).  Returns PASSED when every directory of it was
 * passed, STOPPED when the walk was stopped, LATER when its tree was
 * ended, -1 on error.
 */
static int
level(struct walk *w, int dirfd, int digits)
{
	struct streamed s = { w, digits, PASSED, 0, 0 };
	struct mq_names names;
	int r;

	/*
	 * Listing a directory removed since it was opened fails with ENOENT:
	 * it was empty, so it is passed.  An error of t->fn is passed up,
	 * whatever its errno.
	 */
	if (!w->t->sorted) {
		r = mq_dir_each(dirfd, DT_DIR, visit_streamed, &s);
		if (r == -1)
			return !s.failed && errno == ENOENT ? PASSED : -1;
		return r == 0 ? PASSED : s.r;
	}
	if (mq_names_read(dirfd, DT_DIR, digits == MQ_TOP_DIGITS ? is_top :
	    digits == MQ_MID_DIGITS ? is_mid : is_leaf, &names) == -1)
		return errno == ENOENT ? PASSED : -1;
	mq_names_sort(&names);
	r = each(w, dirfd, &names, digits);
	mq_names_free(&names);
	return r;
}

/*
 * Walks the tree of priority prio: for 0, the top level in new/ itself,
 * whose names (sorted) the listing of new/ has given when tops is not
 * NULL; else new/pN, removed once it is passed and nothing is left in it
 * (when t->remove: a sender that loses it so makes it again).  Returns as
 * level() does.
 */
static int
tree(struct walk *w, int newfd, unsigned prio, struct mq_names *tops)
{
	char name[16];
	int fd, r, saved;

	w->prio = prio;
	w->left = 0;
	if (prio == 0)
		return tops != NULL ? each(w, newfd, tops, MQ_TOP_DIGITS) :
		    level(w, newfd, MQ_TOP_DIGITS);
	prio_name(name, sizeof(name), prio);
	if ((fd = mq_opendirat(newfd, name)) == -1) {
		if (errno == ENOENT)
			return PASSED;
		return passable(w) ? PASSED : -1;
	}
	r = level(w, fd, MQ_TOP_DIGITS);
	saved = errno;
	close(fd);
	if (r == PASSED && w->t->remove && w->left == 0)
		unlinkat(newfd, name, AT_REMOVEDIR);
	errno = saved;
	return r == -1 && passable(w) ? PASSED : r;
}

/*
 * The one descent of new/: hands every directory of every level of every
 * priority's tree to t->fn, with the tree's priority.  When t->sorted,
 * the trees are walked by priority (highest first, or lowest with
 * t->lowfirst) and each in key order (the names of a level are then
 * listed first): new/ is listed once, and its pN names come with its
 * priority 0 top level.  Else everything is walked as read (nothing kept,
 * so memory does not grow with the tree).  t->fn can end the walk
 * (MQ_TREE_STOP) or the tree it is in (MQ_TREE_LATER).  A level t->fn
 * sends the walk into and that is passed to its end, and a leaf it calls
 * used, is removed (if empty) when t->remove is set.  Returns 1 when
 * every tree was passed or ended, 0 when t->fn stopped the walk, -1 on
 * error.
 */
int
mq_tree_walk(const struct mq_tree *t, int newfd)
{
	struct walk w = { t, 0, 0 };
	struct mq_names names, tops;
	int have[MQ_PRIORITY_MAX + 1];
	int i, p, r = PASSED;
	size_t j;

	if (!t->sorted) {
		r = level(&w, newfd, 0);
		return r == -1 ? -1 : r != STOPPED;
	}
	/* A new/ removed since it was opened was empty: passed. */
	if (mq_names_read(newfd, DT_DIR, is_new_entry, &names) == -1)
		return errno == ENOENT ? 1 : -1;
	mq_names_sort(&names);
	/* "pN" sorts after every hex key: the top level comes first. */
	memset(have, 0, sizeof(have));
	for (j = 0; j < names.n && mq_prio_dir(names.v[j]) == -1; j++)
		continue;
	tops.v = names.v;
	tops.n = tops.cap = j;
	for (; j < names.n; j++)
		have[mq_prio_dir(names.v[j])] = 1;
	have[0] = 1;
	for (i = 0; i <= MQ_PRIORITY_MAX && r != STOPPED && r != -1; i++) {
		p = t->lowfirst ? i : i == MQ_PRIORITY_MAX ? 0 :
		    MQ_PRIORITY_MAX - i;
		if (have[p])
			r = tree(&w, newfd, p, &tops);
	}
	mq_names_free(&names);
	return r == -1 ? -1 : r != STOPPED;
}
