/*
 * group.c: ordered groups (mq-send -g).  A group hands out one message at
 * a time, in ID (send) order.  Its state is groups/G/:
 *
 *	turn		a hard link to the group's head: the one message of
 *			the group that is in new/ or cur/ (ready, delayed or
 *			in flight); no turn, no head
 *	T/M/L/ID,A...	the parked messages, waiting behind the head, in a
 *			tree of new/'s shape whose leaves are keyed by the
 *			time of each ID exactly, so that the tree's order is
 *			ID order whoever sent them
 *	leaving.NAME.ack, leaving.NAME.dead
 *			a head half way through its leave (NAME: its name
 *			in new/)
 *
 *	send	tmp/ID (or dead/..., a redrive)
 *		 with a turn	-> groups/G/T/M/L/ID,0		(park)
 *		 without	-> new/T/M/L/ID,0, then => turn	(a link)
 *		 without, but parked ones: park, then promote
 *	claim	of one that does not hold the turn (another does)
 *				cur/S/ID,D,A	-> groups/G/T/M/L/ID,A-1 (park)
 *	leave	of the head (ack, bury), three steps:
 *		cur/S/ID,D,A	-> groups/G/leaving.ID,A...(.ack|.dead)
 *		groups/G/T/M/L/ID',A'	=> turn.ID' (a link), then
 *					-> new/T/M/L/ID',A', then turn.ID'
 *					-> turn (promote; no parked one:
 *					turn unlinked)
 *		leaving...ack	-> (unlinked), or once/ENTRY (--once);
 *		leaving...dead	-> dead/...
 *		(once the turn has passed on, the leave is done for its
 *		caller: a last step that fails is mq_group_sweep's)
 *
 * Every change to a group is made under an flock(2) on groups/G.  The
 * orders above are what keeps a group whole when a process is killed at
 * any point: a message is always somewhere (new/, cur/, the tree, or
 * leaving.*), and the turn is made after its message moved, so that a
 * crash leaves a head without a turn (the claim that meets it gives it
 * the turn, or parks it if another has it) rather than a turn without a
 * head.  A promote's link aside (turn.ID) is made before its move: a crash
 * after the move leaves it, and mq_group_sweep, finding its message out
 * of the tree, finishes the promote with it rather than promote the next
 * one out of order.  The turn is checked after the claim's rename, not
 * before, so that two claimers cannot both hand out messages of one
 * group: at most one of them holds the link.  That check takes no lock, so
 * a leaving head is first moved out of every claimer's reach (a reclaim
 * of its expired lease, an extend, a claim that buries it could otherwise
 * take it while it still holds the turn, and hand it out beside the one
 * just promoted): its leave is two changes of the message, where any
 * other is one rename or unlink.  Killed between them, mq_group_sweep
 * finishes it: still holding the turn (not promoted), an ack's goes back
 * into new/ as the head (the ack was never confirmed: at least once), a
 * burial's promotes and is buried; promoted, it is unlinked or
 * buried.  (The links aside are seen to first: one that finishes its
 * promote makes the leave a promoted one.)  A turn whose message is gone
 * without a leave (nlink 1) is mended by mq_group_sweep (not while a
 * dedup key's keys/ID link holds it).
 *
 * A claim of a message without a group costs nothing here; one of a
 * grouped message costs an openat(2) of groups/G (never following a
 * symbolic link), two fstatat(2) and a close(2) when it holds the turn.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define TURN	"turn"

static int
same(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev;
}

/*
 * Opens dirfd/name, with create making it first (*made is then set if it
 * was made here).  With no room to make it, or when it was removed again
 * at once, mq_spool_subdir retries, and lets a consumer take a spare.
 */
static int
subdir(struct mq_spool *sp, int dirfd, const char *name, int create,
    int spares, int *made)
{
	int m, fd;

	if (!create)
		return mq_opendirat(dirfd, name);
	/*
	 * One made is synced into dirfd, as mq_spool_subdir does, for a
	 * consumer (spares), who moves a durable message into it; a send
	 * syncs what it made (*made) after its rename.
	 */
	if (mq_mkdirat(dirfd, name, sp->dmode, &m) == 0 &&
	    (!m || !spares || mq_fsync_dir(dirfd) == 0) &&
	    (fd = mq_opendirat(dirfd, name)) != -1) {
		*made |= m;
		return fd;
	}
	return mq_spool_subdir(sp, dirfd, name, spares ? MQ_SUBDIR_SPARES :
	    MQ_SUBDIR_UNSYNCED);
}

/*
 * groups/, opened once per spool (sp->groups), made first with create
 * (*made is then set).  Everything below it is reached through it and
 * fds opened with O_NOFOLLOW: a symbolic link planted at groups/ or at
 * groups/G is never followed.
 */
static int
groups_fd(struct mq_spool *sp, int create, int spares, int *made)
{
	if (sp->groups == -1)
		sp->groups = subdir(sp, sp->fd, MQ_DIR_GROUPS, create, spares,
		    made);
	return sp->groups;
}

/*
 * Opens group's directory (making it, and groups/, with create) and locks
 * it.  A sweep may remove the directory between our open and our lock:
 * the one locked must still be groups/G, or we start again.  Returns the
 * locked fd (closing it unlocks), or -1 (ENOENT without create: no such
 * group).  *made (if not NULL) is set when a directory was made, so that
 * a send syncs what holds it.
 */
static int
group_lock(struct mq_spool *sp, const char *group, int create, int spares,
    int *made)
{
	struct stat a, b;
	int groups, fd, i, saved, m = 0;

	for (i = 0; i < MQ_RETRIES; i++) {
		if ((groups = groups_fd(sp, create, spares, &m)) == -1)
			return -1;
		if ((fd = subdir(sp, groups, group, create, spares, &m)) == -1)
			return -1;
		while (flock(fd, LOCK_EX) == -1) {
			if (errno != EINTR) {
				saved = errno;
				close(fd);
				errno = saved;
				return -1;
			}
		}
		if (fstat(fd, &a) == 0 && fstatat(groups, group, &b,
		    AT_SYMLINK_NOFOLLOW) == 0 && same(&a, &b)) {
			if (made != NULL)
				*made = m;
			return fd;
		}
		/* Removed as empty by a sweep meanwhile. */
		close(fd);
		if (!create) {
			errno = ENOENT;
			return -1;
		}
	}
	errno = EAGAIN;
	return -1;
}

static int
sync_fd(int fd)
{
	return fd == -1 ? 0 : mq_fsync_dir(fd);
}

/*
 * Renames from/fromname (a message named as nm) into the group's tree
 * (gfd), in the leaf keyed by its ID's time: a placer of its own each
 * time, so that no leaf is shared between IDs of different times and the
 * tree's order stays ID order.  spares: a consumer's park (a claim's),
 * which may take spare directories, as promote does: it must drain a full
 * file system.  With sync, what holds it is made durable; a sync that
 * fails once the rename is made does not undo it (the message is parked:
 * queued): *syncerr gets its errno, and 0 is returned.
 */
static int
park(struct mq_spool *sp, int gfd, int from, const char *fromname,
    const struct mq_name *nm, int spares, int sync, int *syncerr)
{
	struct mq_placer pl;
	char name[MQ_NAME_MAX];
	int r, saved;

	if (mq_name_format(name, sizeof(name), MQ_NEW, nm) == -1)
		return -1;
	mq_placer_init(&pl, sp, 0);
	pl.root = gfd;
	pl.spares = spares;
	/* A send's: synced below, after the rename (a claim's: before). */
	pl.fresh = !spares;
	r = mq_place(&pl, from, fromname, name, 0, mq_id_ms(nm->id));
	if (r == 0 && sync && (sync_fd(pl.leaf) == -1 ||
	    sync_fd(pl.mid) == -1 || sync_fd(pl.top) == -1 ||
	    mq_fsync_dir(gfd) == -1))
		*syncerr = errno;
	saved = errno;
	mq_placer_close(&pl);
	errno = saved;
	return r;
}

/*
 * The first parked message of the group: one descent of its tree, sorted.
 * The promotion is recorded before anything moves: a link to the first ID
 * of the first leaf is made aside (turn.ID, the same inode); then it goes
 * into new/ (visible now); then the link is renamed over turn (atomic: the
 * turn is never missing meanwhile).  Killed before its move, the link's
 * message is still in the tree: mq_group_sweep removes the link, and the
 * old head's leave promotes again.  Killed after it, the new head is in
 * new/ without the turn, which the old one still has, but its link says
 * so: mq_group_sweep renames it over turn, and so finishes this promote
 * before the old head's leave could promote the next one, out of order
 * (a claim of the new head before that parks it again, in the tree).
 * Empty levels passed are removed (every change to the tree is made under
 * the group's lock, so none is being filled).
 */
struct promotion {
	struct mq_spool	*sp;
	int		 gfd;
	int		 done;
};

static int
promote_leaf(struct promotion *p, int leaf)
{
	struct mq_placer pl;
	struct mq_names names;
	struct mq_name nm;
	char newname[MQ_NAME_MAX], aside[sizeof(TURN) + MQ_ID_LEN + 2];
	size_t i;
	int r = 0, saved, linked;

	if (mq_names_read(leaf, DT_REG, NULL, &names) == -1)
		return errno == ENOENT ? 0 : -1;
	mq_names_sort(&names);
	/* As a release: it is a consumer's step, which must drain. */
	mq_placer_release_init(&pl, p->sp);
	for (i = 0; i < names.n && !p->done; i++) {
		if (mq_name_parse(names.v[i], MQ_NEW, &nm) == -1 ||
		    mq_name_format(newname, sizeof(newname), MQ_NEW,
		    &nm) == -1)
			continue;
		snprintf(aside, sizeof(aside), "%s.%s", TURN, nm.id);
		unlinkat(p->gfd, aside, 0);
		linked = linkat(leaf, names.v[i], p->gfd, aside, 0) == 0;
		if (!linked && errno == ENOENT)
			continue;
		if (mq_place(&pl, leaf, names.v[i], newname, nm.prio,
		    mq_now_ms()) == -1) {
			saved = errno;
			unlinkat(p->gfd, aside, 0);
			errno = saved;
			if (errno == ENOENT)
				continue;
			r = -1;
			break;
		}
		p->done = 1;
		if (linked && renameat(p->gfd, aside, p->gfd, TURN) == 0)
			continue;
		/*
		 * No turn could be made for it: the old one goes all the
		 * same, and the new head, in new/ without a turn, gets it
		 * when it is claimed (or that claim fails, and says why).
		 */
		saved = errno;
		unlinkat(p->gfd, aside, 0);
		if (unlinkat(p->gfd, TURN, 0) == -1 && errno != ENOENT) {
			r = -1;
			break;
		}
		errno = saved;
	}
	saved = errno;
	/* It is visible: waiting receivers are woken. */
	(void)mq_placer_flush(&pl);
	mq_placer_close(&pl);
	mq_names_free(&names);
	errno = saved;
	return r;
}

static int
promote_into(void *arg, int fd, uint64_t key, unsigned prio)
{
	struct promotion *p = arg;

	(void)key;
	(void)prio;
	if (promote_leaf(p, fd) == -1)
		return -1;
	return p->done ? MQ_TREE_STOP : MQ_TREE_USED;
}

/* Returns 1 when one was promoted, 0 when none is parked, -1 on error. */
static int
promote(struct mq_spool *sp, int gfd)
{
	struct promotion p = { sp, gfd, 0 };
	struct mq_tree t = { .leaf = promote_into, .sorted = 1, .remove = 1,
	    .now = UINT64_MAX };

	t.arg = &p;
	if (mq_tree_walk(&t, gfd) == -1)
		return -1;
	return p.done;
}

/* Whether the group's tree has a level: parked messages, or was to. */
static int
has_tree(int gfd)
{
	struct mq_names levels;
	int r;

	if (mq_names_read(gfd, DT_DIR, NULL, &levels) == -1)
		return -1;
	r = levels.n > 0;
	mq_names_free(&levels);
	return r;
}

/*
 * Sends from/fromname (a message named as nm, which has a group) into
 * pl's spool, visible at due: parked behind the group's head if it has
 * one, else into new/ as its head.  A group with no head but parked
 * messages (a promote that could not link the turn, a turn removed by
 * mq-sweep) is not jumped: the message is parked and the first parked
 * one (in ID order) promoted.  With pl->sync, the parking is made durable
 * here (a sync that fails after the rename is pl->err: it has landed, and
 * pl's next flush fails); a head's place in new/ is the caller's to
 * flush, as any send's.
 */
int
mq_group_place(struct mq_placer *pl, int from, const char *fromname,
    const struct mq_name *nm, uint64_t due)
{
	struct mq_spool *sp = pl->sp;
	struct stat st;
	char name[MQ_NAME_MAX];
	int gfd, r, saved, made, head, tree, syncerr = 0;

	if ((gfd = group_lock(sp, nm->group, 1, 0, &made)) == -1)
		return -1;
	head = tree = 0;
	if (fstatat(gfd, TURN, &st, AT_SYMLINK_NOFOLLOW) == 0)
		head = 1;
	else
		tree = errno == ENOENT ? has_tree(gfd) : -1;
	if (tree == -1) {
		r = -1;
	} else if (head || tree) {
		r = park(sp, gfd, from, fromname, nm, 0, pl->sync, &syncerr);
		/* What holds a directory made now is synced too. */
		if (r == 0 && pl->sync && made && syncerr == 0 &&
		    (mq_fsync_dir(sp->groups) == -1 ||
		    mq_fsync_dir(sp->fd) == -1))
			syncerr = errno;
		if (r == 0 && syncerr != 0)
			pl->err = syncerr;
		/* Queued, whatever follows: a sweep promotes if this fails. */
		if (r == 0 && tree)
			(void)promote(sp, gfd);
	} else if ((r = mq_name_format(name, sizeof(name), MQ_NEW,
	    nm)) == 0 && (r = mq_place(pl, from, fromname, name, nm->prio,
	    due)) == 0) {
		/*
		 * It is queued now, whatever follows: a turn that cannot be
		 * linked is made by the claim that meets it (and fails
		 * there, where it can be seen, if it cannot be made at all).
		 */
		if (linkat(pl->leaf, name, gfd, TURN, 0) == -1) {
			/*
			 * Nothing to do (see above); an if, as a cast to void
			 * does not silence _FORTIFY_SOURCE's warn_unused_result.
			 */
		}
		if (pl->sync)
			(void)mq_fsync_dir(gfd);
	}
	saved = errno;
	close(gfd);
	errno = saved;
	return r;
}

/*
 * Makes what is parked durable after a parking's own sync failed (pl->err,
 * told once): a syncfs(2) of the file system that holds groups/ (an fsync
 * of groups/ alone where there is none).  0, or -1 (errno).
 */
int
mq_group_sync(struct mq_spool *sp)
{
	return mq_syncfs(sp->groups != -1 ? sp->groups : sp->fd);
}

/*
 * After the claim's rename of a message of a group into cur/ (bucket/
 * name, claimed as nm from a name with attempts): whether it holds its
 * group's turn.  Returns 1 when it does (it is handed out; a group with
 * no turn gives it the turn), 0 when another message has it (this one is
 * parked, as it was before the claim: with its attempts), -1 on error.
 */
int
mq_group_claimed(struct mq_spool *sp, int bucket, const char *name,
    const struct mq_name *nm, unsigned attempts)
{
	struct mq_name parked = *nm;
	struct stat me, turn;
	int groups, gfd, r, saved, unused = 0;

	if (fstatat(bucket, name, &me, AT_SYMLINK_NOFOLLOW) == -1)
		return -1;
	/* The common case: no lock; groups/G opened without following. */
	if ((groups = groups_fd(sp, 0, 0, NULL)) != -1 &&
	    (gfd = mq_opendirat(groups, nm->group)) != -1) {
		r = fstatat(gfd, TURN, &turn, AT_SYMLINK_NOFOLLOW) == 0 &&
		    same(&me, &turn);
		close(gfd);
		if (r)
			return 1;
	}
	if ((gfd = group_lock(sp, nm->group, 1, 1, NULL)) == -1)
		return -1;
	if (fstatat(gfd, TURN, &turn, AT_SYMLINK_NOFOLLOW) == 0) {
		if (same(&me, &turn))
			r = 1;
		else {
			parked.attempts = attempts;
			r = park(sp, gfd, bucket, name, &parked, 1, 0, &unused);
		}
	} else if (errno == ENOENT)
		r = linkat(bucket, name, gfd, TURN, 0) == 0 ? 1 : -1;
	else
		r = -1;
	saved = errno;
	close(gfd);
	errno = saved;
	return r;
}

#define LEAVING		"leaving."
#define LEAVING_ACK	".ack"
#define LEAVING_DEAD	".dead"

static int
is_leaving(const char *s)
{
	return strncmp(s, LEAVING, sizeof(LEAVING) - 1) == 0;
}

/* groups/G/leaving.NAME.ack or .dead: NAME is nm's in new/. */
static int
leaving_format(char *buf, size_t size, const struct mq_name *nm, int dead)
{
	char name[MQ_NAME_MAX];
	int n;

	if (mq_name_format(name, sizeof(name), MQ_NEW, nm) == -1)
		return -1;
	n = snprintf(buf, size, "%s%s%s", LEAVING, name,
	    dead ? LEAVING_DEAD : LEAVING_ACK);
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * A head half way through its leave, as the walks see it: nm is its name
 * in new/, *dead 1 for a burial's.  -1 when s is no such name.
 */
int
mq_group_leaving_parse(const char *s, struct mq_name *nm, int *dead)
{
	char name[MQ_NAME_MAX];
	size_t n;

	if (!is_leaving(s))
		return -1;
	s += sizeof(LEAVING) - 1;
	n = strlen(s);
	if (n > sizeof(LEAVING_ACK) - 1 &&
	    strcmp(s + n - (sizeof(LEAVING_ACK) - 1), LEAVING_ACK) == 0) {
		*dead = 0;
		n -= sizeof(LEAVING_ACK) - 1;
	} else if (n > sizeof(LEAVING_DEAD) - 1 &&
	    strcmp(s + n - (sizeof(LEAVING_DEAD) - 1), LEAVING_DEAD) == 0) {
		*dead = 1;
		n -= sizeof(LEAVING_DEAD) - 1;
	} else
		return -1;
	if (n >= sizeof(name))
		return -1;
	memcpy(name, s, n);
	name[n] = '\0';
	return mq_name_parse(name, MQ_NEW, nm);
}

/* The turn is handed on: to the first parked message, or to none. */
static int
hand_on(struct mq_spool *sp, int gfd)
{
	int r;

	if ((r = promote(sp, gfd)) == 0 && unlinkat(gfd, TURN, 0) == -1 &&
	    errno != ENOENT)
		r = -1;
	return r == -1 ? -1 : 0;
}

/*
 * A leaving head that keeps the turn goes back into new/ as itself,
 * visible now: an unfinished ack's, or a leave whose promote failed.
 */
static int
unleave(struct mq_spool *sp, int gfd, const char *leaving,
    const struct mq_name *nm)
{
	struct mq_placer pl;
	char name[MQ_NAME_MAX];
	int r, saved;

	if (mq_name_format(name, sizeof(name), MQ_NEW, nm) == -1)
		return -1;
	mq_placer_release_init(&pl, sp);
	r = mq_place(&pl, gfd, leaving, name, nm->prio, mq_now_ms());
	saved = errno;
	(void)mq_placer_flush(&pl);
	mq_placer_close(&pl);
	errno = saved;
	return r;
}

/*
 * A message of a group (from/name, named as nm) leaves new/ or cur/:
 * acked (deadname and donename NULL: unlinked), finished (renamed to
 * once/donename: the ledger's entry, once.c) or buried (renamed to
 * dead/deadname; its reason is linked already).  When it is the group's
 * head, the whole leave is made here, under the group's lock, in this
 * order:
 *
 *	from/name -> groups/G/leaving.NAME.ack (or .dead)
 *		out of every claimer's reach first: a reclaim of its
 *		expired lease, its holder's extend or a claim that buries
 *		it can no longer take it and find it holding the turn
 *		(ENOENT: one did first; the lease is lost, nothing moves)
 *	promote the next parked message (or unlink the turn: none)
 *	leaving.NAME.ack -> (unlinked) or once/donename,
 *	leaving.NAME.dead -> dead/deadname
 *
 * and 1 is returned.  A crash in between leaves leaving.* for
 * mq_group_sweep to finish (an ack's, finished or not, is unlinked there:
 * a finished one's empty entry, made before, stands for it: leave.c).  A
 * promote that fails puts the head back where it was (and -1 is
 * returned).  A message that does not hold the
 * turn (parked meanwhile, or that lost it) leaves the group alone: 0 is
 * returned, and *lock has the group's locked fd (or -1), which the caller
 * closes (mq_group_unlock) once it has unlinked or renamed the message
 * itself, so that no claim gives it the turn meanwhile.  Returns -1 on
 * error, with ENOENT when from/name is gone (the lease was lost).
 */
int
mq_group_leave(struct mq_spool *sp, int from, const char *name,
    const struct mq_name *nm, const char *deadname, const char *donename,
    int *lock)
{
	struct stat me, turn;
	char leaving[MQ_NAME_MAX + sizeof(LEAVING) + sizeof(LEAVING_DEAD)];
	int gfd, saved;

	*lock = -1;
	if (nm->group[0] == '\0')
		return 0;
	if ((gfd = group_lock(sp, nm->group, 0, 0, NULL)) == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstatat(from, name, &me, AT_SYMLINK_NOFOLLOW) == -1)
		goto fail;
	if (fstatat(gfd, TURN, &turn, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno != ENOENT)
			goto fail;
		*lock = gfd;
		return 0;
	}
	if (!same(&me, &turn)) {
		*lock = gfd;
		return 0;
	}
	if (leaving_format(leaving, sizeof(leaving), nm,
	    deadname != NULL) == -1 ||
	    renameat(from, name, gfd, leaving) == -1)
		goto fail;
	if (hand_on(sp, gfd) == -1) {
		/* Not a lost lease (ENOENT): the message is still here. */
		saved = errno == ENOENT ? EIO : errno;
		/*
		 * Still the head (the turn is its): it stays one, where it
		 * was or, that directory removed meanwhile (a bucket of cur/
		 * pruned, a leaf of new/ emptied), in new/, visible now, as
		 * mq_group_sweep would put it.
		 */
		if (fstatat(gfd, TURN, &turn, AT_SYMLINK_NOFOLLOW) == 0 &&
		    same(&me, &turn) && renameat(gfd, leaving, from,
		    name) == -1 && errno == ENOENT)
			(void)unleave(sp, gfd, leaving, nm);
		errno = saved;
		goto fail;
	}
	/*
	 * The turn has passed on: the leave is made, as far as its caller
	 * is concerned (a retry would find its lease lost).  A last step
	 * that fails leaves leaving.* for mq_group_sweep to finish.
	 */
	if (deadname != NULL)
		(void)renameat(gfd, leaving, sp->dead, deadname);
	else if ((donename != NULL ? renameat(gfd, leaving, sp->once,
	    donename) : unlinkat(gfd, leaving, 0)) == 0 && nm->deaths != 0)
		(void)mq_history_forget(sp, nm);	/* after it: history.c */
	close(gfd);
	return 1;
fail:
	saved = errno;
	close(gfd);
	errno = saved;
	return -1;
}

void
mq_group_unlock(int *lock)
{
	mq_closefd(lock);
}

/*
 * Removes the message parked as leaf/name in group's tree (mq-rm), under
 * the group's lock, so that no promote moves it meanwhile: ENOENT when it
 * is no longer there (promoted, or the group is gone).  The level left
 * empty is the next promote's or sweep's to remove.
 */
int
mq_group_unpark(struct mq_spool *sp, int leaf, const char *name,
    const char *group)
{
	int gfd, r, saved;

	if (!mq_group_valid(group)) {
		errno = EINVAL;
		return -1;
	}
	if ((gfd = group_lock(sp, group, 0, 0, NULL)) == -1)
		return -1;
	r = unlinkat(leaf, name, 0);
	saved = errno;
	close(gfd);
	errno = saved;
	return r;
}

/* A leaf of a group's tree, its messages on their way to w->fn. */
struct parked_leaf {
	struct mq_parked_walk *w;
	uint64_t	 key;
	int		 failed;	/* w->fn did (errno is its) */
};

static int
parked_one(void *arg, int fd, const char *name)
{
	struct parked_leaf *pl = arg;
	struct mq_name nm;
	int r;

	if (mq_name_parse(name, MQ_NEW, &nm) == -1)
		return 0;
	if ((r = pl->w->fn(pl->w->arg, fd, name, &nm, pl->key)) == -1)
		pl->failed = 1;
	return r;
}

/*
 * The messages of the leaf fd to w->fn: as read when w->as_read (fn
 * renames nothing away), else listed first (what fn renames away must
 * not upset the listing).  0, 1 stopped, -1 (pl->failed: fn's error).
 */
static int
parked_leaf_each(struct parked_leaf *pl, int fd)
{
	struct mq_names names;
	size_t i;
	int r = 0, saved;

	if (pl->w->as_read)
		return mq_dir_each(fd, DT_REG, parked_one, pl);
	if (mq_names_read(fd, DT_REG, NULL, &names) == -1)
		return -1;
	for (i = 0; i < names.n && r == 0; i++)
		r = parked_one(pl, fd, names.v[i]);
	saved = errno;
	mq_names_free(&names);
	errno = saved;
	return r;
}

/*
 * The leaf dirfd/name's messages handed to w->fn.  A leaf removed
 * meanwhile held nothing; one that cannot be read is passed, its errno
 * kept; memory run out ends the walk: it passes nothing it met.
 */
static int
parked_step(void *arg, int dirfd, const char *name, int digits, uint64_t key,
    unsigned prio)
{
	struct parked_leaf pl = { arg, key, 0 };
	int fd, r, saved;

	(void)prio;
	if (digits != MQ_KEY_DIGITS)
		return MQ_TREE_INTO;
	if ((fd = mq_opendirat(dirfd, name)) == -1)
		r = -1;
	else {
		r = parked_leaf_each(&pl, fd);
		saved = errno;
		close(fd);
		errno = saved;
	}
	if (r == -1 && (pl.failed || errno == ENOMEM))
		return -1;
	if (r == -1 && errno != ENOENT)
		pl.w->failed = errno;
	pl.w->stopped = r == 1;
	return r == 1 ? MQ_TREE_STOP : MQ_TREE_NEXT;
}

/* A head half way through its burial (leaving.NAME.dead), to w->leaving. */
static int
parked_leaving(void *arg, int gfd, const char *name)
{
	struct mq_parked_walk *w = arg;
	struct mq_name nm;
	int dead;

	if (mq_group_leaving_parse(name, &nm, &dead) == -1 || !dead)
		return 0;
	return w->leaving(w->arg, gfd, name, &nm);
}

/*
 * A group or leaf that cannot be read (errno e), named where (from the
 * spool's root): told to w->unread (its answer returned: 0 passed, -1 the
 * walk ends), or kept in w->failed and passed.  Gone: it held nothing.
 */
static int
parked_unread(struct mq_parked_walk *w, const char *where, int e)
{
	if (w->unread != NULL)
		return w->unread(w->arg, where, e);
	if (e != ENOENT)
		w->failed = e;
	return 0;
}

static int
parked_group(void *arg, int groups, const char *name)
{
	struct mq_parked_walk *w = arg;
	struct mq_tree t = { .fn = parked_step, .arg = w, .tolerant = 1 };
	char where[sizeof(MQ_DIR_GROUPS) + MQ_GROUP_MAX + 1];
	int fd, r = 0, saved;

	if (!mq_group_valid(name))
		return 0;
	if (w->group != NULL && (r = w->group(w->arg, name)) != 0)
		return r;
	if ((fd = mq_opendirat(groups, name)) == -1) {
		snprintf(where, sizeof(where), "%s/%s", MQ_DIR_GROUPS, name);
		return parked_unread(w, where, errno);
	}
	if (w->leaving != NULL &&
	    (r = mq_dir_each(fd, DT_REG, parked_leaving, w)) == -1 &&
	    errno == ENOENT)
		r = 0;
	if (r == 1)
		w->stopped = 1;
	else if (r == 0 && w->tree != NULL)
		w->stopped = (r = w->tree(w->arg, fd, name)) == 1;
	else if (r == 0)
		r = mq_tree_walk(&t, fd);
	saved = errno;
	close(fd);
	errno = saved;
	if (r == -1)
		return -1;
	return w->stopped;
}

/*
 * Hands every message parked behind the head of a group (not the heads,
 * which are in new/ or cur/) to w->fn, with its leaf (open for the call),
 * its name, its parsed name and the leaf's key, group by group, each
 * leaf listed before its messages are handed on; before a group,
 * w->group (if set) is told its name, and w->leaving (if set) each head a
 * crash left half way through its burial.  Each returns 0 to go on, 1 to
 * stop the walk, -1 on error (errno: the walk ends).  Names only: no
 * stat.  With w->tree, each group's directory is handed to it instead, to
 * walk its tree as it will (mq-ls: in order; see look.c).  With
 * w->sorted the groups come in name order, in bounded memory (and
 * w->unread hears of groups/ itself failing to be listed).  The one
 * walk of what groups hold: a group or leaf removed meanwhile held
 * nothing; one that cannot be read is told to w->unread, or passed, and
 * the walk, gone to its end, fails with its errno (kept in w->failed).
 * 0, or -1.
 */
int
mq_group_parked(struct mq_spool *sp, struct mq_parked_walk *w)
{
	int groups, r, unlisted;

	w->failed = 0;
	w->stopped = 0;
	unlisted = 1;
	if ((groups = groups_fd(sp, 0, 0, NULL)) == -1) {
		if (errno == ENOENT)
			return 0;
		r = -1;
	} else if (w->sorted)
		r = mq_dir_ordered(groups, mq_group_valid, mq_names_cmp,
		    parked_group, w, &unlisted);
	else {
		r = mq_dir_each(groups, DT_DIR, parked_group, w);
		unlisted = 0;	/* not told apart from a failure of fn */
	}
	/* groups/ itself not read: told with w->unread, else the walk fails. */
	if (r == -1 && unlisted && w->unread != NULL)
		return w->unread(w->arg, MQ_DIR_GROUPS, errno);
	if (r != -1 && w->failed != 0) {
		errno = w->failed;
		return -1;
	}
	return r == -1 ? -1 : 0;
}

/* mq_group_sweep's work on one group, under its lock. */
struct sweeping {
	struct mq_spool	*sp;
	void		(*report)(const char *, const char *);
};

static int
is_aside(const char *s)
{
	return strncmp(s, TURN ".", sizeof(TURN)) == 0;
}

/*
 * A leave killed half way (groups/G/leaving.*, mq_group_leave): one that
 * still holds the turn did not get to promote.  An ack's message is put
 * back into new/ as the head again (its ack was never confirmed to its
 * caller: at least once); a burial's promotes, then buries.  One whose
 * turn is gone already (promoted) is finished: unlinked, or buried.
 */
static int
finish_leave(struct sweeping *w, int gfd, const char *what,
    const char *leaving)
{
	struct mq_name nm;
	struct stat me, turn;
	char name[MQ_NAME_MAX];
	int dead, r;

	if (mq_group_leaving_parse(leaving, &nm, &dead) == -1)
		return 0;
	if (fstatat(gfd, leaving, &me, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstatat(gfd, TURN, &turn, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno != ENOENT)
			return -1;
	} else if (same(&me, &turn)) {
		if (!dead) {
			r = unleave(w->sp, gfd, leaving, &nm);
			if (r == 0 && w->report != NULL)
				w->report(what, "unfinished ack: head again");
			return r == -1 && errno != ENOENT ? -1 : 0;
		}
		if (hand_on(w->sp, gfd) == -1)
			return -1;
	}
	if (!dead) {
		if ((r = unlinkat(gfd, leaving, 0)) == 0 && nm.deaths != 0)
			(void)mq_history_forget(w->sp, &nm);
	} else {
		nm.ms = mq_now_ms();
		if (mq_spool_need(w->sp, 0) == -1 ||
		    mq_name_format(name, sizeof(name), MQ_DEAD, &nm) == -1)
			return -1;
		r = renameat(gfd, leaving, w->sp->dead, name);
	}
	if (r == -1)
		return errno == ENOENT ? 0 : -1;
	if (w->report != NULL)
		w->report(what, dead ? "unfinished burial: buried" :
		    "unfinished ack: acked");
	return 0;
}

/*
 * The leaves of gfd that keep (is_leaving: every one; is_leaving_dead:
 * burials only) accepts, finished (finish_leave); *failed is the errno of
 * the last that could not be (0: none).  -1 when gfd cannot be listed.
 */
static int
finish_leaves(struct sweeping *w, int gfd, const char *what,
    int (*keep)(const char *), int *failed)
{
	struct mq_names leaving;
	size_t i;

	*failed = 0;
	if (mq_names_read(gfd, DT_REG, keep, &leaving) == -1)
		return -1;
	/* Memory run out ends it: it is no property of one leave. */
	for (i = 0; i < leaving.n && *failed != ENOMEM; i++)
		if (finish_leave(w, gfd, what, leaving.v[i]) == -1)
			*failed = errno;
	mq_names_free(&leaving);
	return 0;
}

/* Looking for a file (st) among names in a directory, or in the tree. */
struct finding {
	const struct stat *st;
	const char	*id;	/* only names of this ID, or any */
	int		 found;
};

static int
find_one(void *arg, int dirfd, const char *name)
{
	struct finding *f = arg;
	struct stat st;
	size_t n;

	if (f->id != NULL && (strncmp(name, f->id, n = strlen(f->id)) != 0 ||
	    name[n] != ','))
		return 0;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    same(&st, f->st))
		f->found = 1;
	return f->found;
}

static int
find_into(void *arg, int fd, uint64_t key, unsigned prio)
{
	struct finding *f = arg;

	(void)key;
	(void)prio;
	/* A leaf removed since it was opened held nothing. */
	if (mq_dir_each(fd, DT_REG, find_one, f) == -1 && errno != ENOENT)
		return -1;
	return f->found ? MQ_TREE_STOP : MQ_TREE_NEXT;
}

/* Whether st is one of the group's parked messages (1), or not (0). */
static int
in_tree(int gfd, const struct stat *st)
{
	struct finding f = { st, NULL, 0 };
	struct mq_tree t = { .leaf = find_into };

	t.arg = &f;
	if (mq_tree_walk(&t, gfd) == -1)
		return -1;
	return f.found;
}

/*
 * A promote's link aside (groups/G/turn.ID, as st) left by a crash: its
 * promote is finished when its message left the tree for new/ or cur/
 * (renamed over turn: 1); otherwise (still in the tree: never moved;
 * gone; buried meanwhile, by a claim that met it without the turn) it
 * goes (0).  -1 on error.
 */
static int
finish_promote(struct mq_spool *sp, int gfd, const char *aside,
    const struct stat *st)
{
	struct finding f = { st, aside + sizeof(TURN), 0 };
	int r = 1;

	/* Its link count 1: its message is gone. */
	if (st->st_nlink > 1 && (r = in_tree(gfd, st)) == -1)
		return -1;
	if (r == 0) {
		if (mq_spool_need(sp, 0) == -1 ||
		    mq_dir_each(sp->dead, DT_REG, find_one, &f) == -1)
			return -1;
		if (!f.found)
			return renameat(gfd, aside, gfd, TURN) == 0 ? 1 : -1;
	}
	return unlinkat(gfd, aside, 0) == -1 && errno != ENOENT ? -1 : 0;
}

static int
sweep_group(void *arg, int groups, const char *group)
{
	struct sweeping *w = arg;
	struct mq_names aside;
	struct stat turn;
	size_t i;
	int gfd, r = 0, saved, unfinished = 0;
	char what[MQ_GROUP_MAX + 16];

	if (!mq_group_valid(group))
		return 0;
	if ((gfd = group_lock(w->sp, group, 0, 0, NULL)) == -1)
		return errno == ENOENT ? 0 : -1;
	snprintf(what, sizeof(what), "group %s", group);
	/*
	 * Links of promotes killed before their rename over turn: one whose
	 * message left the tree (moved into new/, or claimed since) finishes
	 * its promote, before a leave's could promote the next one; one whose
	 * message is still in the tree was never moved, and goes.  Memory
	 * run out stops the mending where it is: what is left unlooked at
	 * must not be promoted past.
	 */
	if (mq_names_read(gfd, DT_REG, is_aside, &aside) == 0) {
		for (i = 0; i < aside.n && r != -1; i++) {
			if (fstatat(gfd, aside.v[i], &turn,
			    AT_SYMLINK_NOFOLLOW) == -1)
				continue;
			if ((r = finish_promote(w->sp, gfd, aside.v[i],
			    &turn)) == 1 && w->report != NULL)
				w->report(what,
				    "unfinished promote: given the turn");
			r = r == -1 && errno == ENOMEM ? -1 : 0;
		}
		saved = errno;
		mq_names_free(&aside);
		errno = saved;
	} else if (errno == ENOMEM)
		r = -1;
	if (r == -1)
		goto out;
	/* Leaves killed half way: finished first, as they would have. */
	if (finish_leaves(w, gfd, what, is_leaving, &unfinished) == -1 &&
	    errno == ENOMEM)
		unfinished = ENOMEM;
	if (unfinished == ENOMEM) {
		errno = ENOMEM;
		r = -1;
		goto out;
	}
	/* A turn whose message was removed by hand: nobody holds it. */
	if (fstatat(gfd, TURN, &turn, AT_SYMLINK_NOFOLLOW) == 0 &&
	    turn.st_nlink == 1 && unlinkat(gfd, TURN, 0) == 0 &&
	    w->report != NULL)
		w->report(what, "turn of a message gone removed");
	if (fstatat(gfd, TURN, &turn, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno != ENOENT)
			r = -1;
		else if ((r = promote(w->sp, gfd)) == 1 && w->report != NULL)
			w->report(what, "next message given the turn");
		else if (r == 0 && unlinkat(groups, group,
		    AT_REMOVEDIR) == 0 && w->report != NULL)
			w->report(what, "empty: removed");
	}
	if (r != -1 && unfinished != 0) {
		errno = unfinished;
		r = -1;
	}
out:
	saved = errno;
	close(gfd);
	errno = saved;
	return r == -1 ? -1 : 0;
}

/*
 * Mends group (as mq_group_sweep does each): a search that met one of its
 * messages half way through a leave finishes it this way.  0, or -1.
 */
int
mq_group_mend(struct mq_spool *sp, const char *group)
{
	struct sweeping w = { sp, NULL };
	int groups;

	if ((groups = groups_fd(sp, 0, 0, NULL)) == -1)
		return errno == ENOENT ? 0 : -1;
	return sweep_group(&w, groups, group);
}

static int
is_leaving_dead(const char *s)
{
	size_t n = strlen(s);

	return is_leaving(s) && n > sizeof(LEAVING_DEAD) - 1 &&
	    strcmp(s + n - (sizeof(LEAVING_DEAD) - 1), LEAVING_DEAD) == 0;
}

/*
 * The burials of group that a crash left
 * half way (leaving.*.dead) are finished: the message into dead/, the
 * turn handed on.  A burial's caller was told it was made, and a dead
 * letter is looked for in dead/ (mq-dlq): mq_expire finishes them before
 * it buries what expired.  The acks' are mq_group_sweep's.  0, or -1.
 */
int
mq_group_bury_unfinished(struct mq_spool *sp, const char *group,
    void (*report)(const char *, const char *))
{
	struct sweeping w = { sp, report };
	char what[MQ_GROUP_MAX + 16];
	int gfd, r = 0, saved, failed;

	if ((gfd = group_lock(sp, group, 0, 0, NULL)) == -1)
		return errno == ENOENT ? 0 : -1;
	snprintf(what, sizeof(what), "group %s", group);
	if (finish_leaves(&w, gfd, what, is_leaving_dead, &failed) == -1) {
		if (errno != ENOENT)
			r = -1;
	} else if (failed != 0) {
		errno = failed;
		r = -1;
	}
	saved = errno;
	close(gfd);
	errno = saved;
	return r;
}

/*
 * mq-sweep: mends every group (leaves killed half way finished, a turn
 * without its message removed, a group with parked messages and no turn
 * given its next, debris of killed promotes removed) and removes those
 * left empty.  report is told.
 */
int
mq_group_sweep(struct mq_spool *sp, void (*report)(const char *,
    const char *))
{
	struct sweeping w = { sp, report };
	int groups;

	if ((groups = groups_fd(sp, 0, 0, NULL)) == -1)
		return errno == ENOENT ? 0 : -1;
	return mq_dir_each(groups, DT_DIR, sweep_group, &w);
}
