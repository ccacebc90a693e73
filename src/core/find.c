/*
 * find.c: a message by its ID, in whatever state it is (mq-show, mq-rm),
 * or by a prefix of its ID that no other message's starts with, and its
 * removal.  The search is mq_look's walk (look.c) for that one ID,
 * read-only, in claim order: expired leases (cur/), then new/ (ready,
 * delayed: every priority's tree), the messages parked in groups/G/
 * (blocked), the running leases (cur/ again), then dead/ and the
 * messages past their time to live where they wait.  A message claimed
 * while it is searched for (new/ -> cur/, or an expired lease taken
 * again: a later bucket) is met in the in-flight pass, which comes after
 * new/ and the expired pass; one buried meanwhile (cur/ or new/ -> dead/)
 * in the dead pass, which comes last, when it is buried before dead/ is
 * read.  What moves back, behind the search's back, can be missed by
 * one search: a release (cur/ -> new/), a promote (parked -> new/), a
 * redrive (dead/ -> new/), a burial while dead/ is read: a search that
 * finds nothing is made once more before it says so.  What is found
 * keeps its directory open (a dup of the walk's), so that what is done
 * with it names no path.  Its state is the one mq-ls gives it (the
 * spool's ttl read from its settings): a waiting message past its time
 * to live is dead; where it is (new/, a group's tree, cur/, dead/)
 * decides its removal.
 *
 * Every removal goes through mq_remove, as where it is asks:
 *
 *	new/, cur/	unlinked (in flight: only with force); the head of an
 *			ordered group leaves it as an ack's does
 *			(mq_group_leave: the next is promoted)
 *	groups/G/T/M/L/	unlinked under the group's lock (mq_group_unpark)
 *	dead/		purged with its reason (mq_dead_purge)
 *
 * An unlink that meets ENOENT means the message moved (claimed, released,
 * promoted): it is looked for again and what is found then decides (a
 * claim made first leaves it in flight: refused without force).  A
 * message with a dedup key starts its window as after an ack: its link
 * count drops (key.c).
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

/* A walk of mq_look's, each message it hands out given to fn as found. */
struct finding {
	mq_found_fn	 fn;
	void		*arg;
	int		 error;	/* the first directory that could not be read */
};

static int
found(void *arg, const struct mq_look *m)
{
	struct finding *fg = arg;
	struct mq_found f;
	int r, saved;

	if (strlcpy(f.name, m->name, sizeof(f.name)) >= sizeof(f.name))
		return 0;
	f.n = m->n;
	f.state = m->state;
	f.in = m->in;
	if ((f.dirfd = fcntl(m->dirfd, F_DUPFD_CLOEXEC, 0)) == -1)
		return -1;
	r = fg->fn(fg->arg, &f);
	saved = errno;
	mq_found_close(&f);
	errno = saved;
	return r;
}

static void
unreadable(void *arg, const char *where, int e)
{
	struct finding *fg = arg;

	(void)where;
	if (fg->error == 0)
		fg->error = e;
}

/*
 * mq_look with fn for the messages of id (NULL: all; prefix: of the IDs
 * starting with it) in the states of mask.  Returns 1 when fn stopped the
 * walk, 0 at its end, -1 on error (fn's, or a directory that could not be
 * read: the walk went on past it, and what it found was handed out).
 */
static int
find_look(struct mq_spool *sp, const char *id, int prefix, uint64_t now,
    unsigned mask, mq_found_fn fn, void *arg)
{
	struct finding fg = { fn, arg, 0 };
	struct mq_looker lk;
	int r;

	memset(&lk, 0, sizeof(lk));
	/*
	 * The spool's ttl tells the dead from the waiting, as mq-ls does;
	 * settings that cannot be read tell none, the defaults' (what is
	 * found and how it is removed does not depend on it, only the state
	 * it is given).
	 */
	lk.states = mask;
	lk.now = now;
	lk.ttl_ms = mq_settings(sp)->ttl_ms;
	lk.id = id;
	lk.prefix = prefix;
	lk.fn = found;
	lk.fail = unreadable;
	lk.arg = &fg;
	if ((r = mq_look(sp, &lk)) == 0 && fg.error != 0) {
		errno = fg.error;
		return -1;
	}
	return r;
}

/*
 * Hands each message in the states of mask (1 << MQ_LOOK_*) to fn, which
 * owns the record only while it runs (mq_remove may be called on it) and
 * returns 1 to stop, 0 to go on, -1 on error.  The parked messages
 * (blocked) come first, in a walk of their own, then the others in
 * mq_look's order: a head removed promotes nothing that is then left
 * behind.  Returns 1 when fn stopped the walk, 0 at its end, -1 on error.
 */
int
mq_find_each(struct mq_spool *sp, uint64_t now, unsigned mask,
    mq_found_fn fn, void *arg)
{
	unsigned blocked = 1u << MQ_LOOK_BLOCKED;
	int r = 0;

	if (mask & blocked)
		r = find_look(sp, NULL, 0, now, blocked, fn, arg);
	if (r == 0 && mask & ~blocked)
		r = find_look(sp, NULL, 0, now, mask & ~blocked, fn, arg);
	return r;
}

static int
keep(void *arg, struct mq_found *f)
{
	struct mq_found *out = arg;

	*out = *f;
	f->dirfd = -1;
	return 1;
}

/*
 * Where the message with this ID is as of now (ms), in *f: its directory
 * open (mq_found_close closes it), its name and state.  Returns 0, or -1
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
		if ((r = find_look(sp, id, 0, now, MQ_LOOK_ALL, keep, f)) ==
		    -1)
			return -1;
	if (r == 0) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

static int
met(void *arg, struct mq_found *f)
{
	mq_matches_add(arg, f->n.id);
	return 0;
}

/*
 * The message that s names, as an operator gives an ID: a whole ID as it
 * is, with no search (mq_find's then finds it, or not); a prefix the one
 * ID of a message in any state that starts with it, found by the walk
 * mq_find makes for an ID, made once more when it met none.  Returns
 * MQ_EX_OK with the ID in m->id[0]; MQ_EX_NONE when no message's ID
 * starts with s; MQ_EX_USAGE when s is no ID (m->n is 0, errno EINVAL)
 * or when several start with it (m holds them); MQ_EX_SYS (errno).
 */
int
mq_find_match(struct mq_spool *sp, const char *s, struct mq_matches *m)
{
	int i, r;

	if ((r = mq_matches_init(m, s)) != 1)
		return r == 0 ? MQ_EX_OK : MQ_EX_USAGE;
	for (i = 0; i < 2 && m->n == 0; i++)
		if (find_look(sp, s, 1, mq_now_ms(), MQ_LOOK_ALL, met, m) ==
		    -1)
			return MQ_EX_SYS;
	return mq_matches_status(m);
}

/*
 * The message opened for reading, never following a link nor blocking,
 * nor opening what is not a regular file (ELOOP): opening a FIFO would
 * wake a writer blocked on it, a device could be a terminal.  What is
 * planted between the look and the open is caught by the caller's fstat.
 */
int
mq_found_open(const struct mq_found *f)
{
	struct stat st;

	if (fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return -1;
	if (!S_ISREG(st.st_mode)) {
		errno = ELOOP;
		return -1;
	}
	return openat(f->dirfd, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_NOCTTY | O_CLOEXEC);
}

void
mq_found_close(struct mq_found *f)
{
	mq_closefd(&f->dirfd);
}

static int
remove_once(struct mq_spool *sp, struct mq_found *f)
{
	struct mq_dead d;

	switch (f->in) {
	case MQ_IN_PARKED:
		if (mq_group_unpark(sp, f->dirfd, f->name, f->n.group) == -1)
			return -1;
		/* Its death history goes too, after it (history.c). */
		if (f->n.deaths != 0)
			(void)mq_history_forget(sp, &f->n);
		return 0;
	case MQ_IN_LEAVING:
		/* Its burial finished first; then it is looked for again. */
		if (mq_group_mend(sp, f->n.group) == -1)
			return -1;
		errno = ENOENT;
		return -1;
	case MQ_IN_DEAD:
		strlcpy(d.name, f->name, sizeof(d.name));
		d.n = f->n;
		if (mq_dead_purge(sp, &d) == -1)
			return -1;
		/* Its reason and history go once the purge is durable. */
		if (mq_dead_sync(sp) == 0)
			mq_dead_purged(sp, &d);
		return 0;
	default:
		/* new/ or cur/: as an ack (leave.c). */
		return mq_leave(sp, f->dirfd, f->name, &f->n);
	}
}

/*
 * Removes the message f found, following it if it moves meanwhile (f then
 * says where it was last).  flags: MQ_RM_FORCE removes one in flight (its
 * holder's ack will find its lease lost), MQ_RM_WAITING removes it only
 * as it waits where it was met (mq-rm --all): dead, or moved meanwhile
 * (claimed, promoted, released), it is left alone as gone, for a search
 * per message lost to a worker would make emptying a busy spool cost its
 * depth times over.  Returns MQ_EX_OK, MQ_EX_NONE (gone, or dead or moved
 * with MQ_RM_WAITING), MQ_EX_LOST (in flight, not removed: f->n.ms is its
 * lease's end) or MQ_EX_SYS (errno set).
 */
int
mq_remove(struct mq_spool *sp, struct mq_found *f, int flags)
{
	char id[MQ_ID_LEN + 1];
	int i;

	for (i = 0; i < MQ_RETRIES; i++) {
		if (f->state == MQ_LOOK_INFLIGHT && !(flags & MQ_RM_FORCE))
			return MQ_EX_LOST;
		if (f->state == MQ_LOOK_DEAD && (flags & MQ_RM_WAITING))
			return MQ_EX_NONE;
		if (remove_once(sp, f) == 0) {
			/* A dead letter's is counted as its purge (leave.c). */
			if (f->in != MQ_IN_DEAD) {
				mq_count(sp, MQ_COUNT_REMOVED, 1);
				mq_log_begin(sp, "remove", f->n.id);
				mq_log_str("state", mq_look_state_name(f->state),
				    strlen(mq_look_state_name(f->state)));
				mq_log_end();
			}
			return MQ_EX_OK;
		}
		if (errno != ENOENT)
			return MQ_EX_SYS;
		if (flags & MQ_RM_WAITING)
			return MQ_EX_NONE;
		/* It moved: where to? */
		strlcpy(id, f->n.id, sizeof(id));
		mq_found_close(f);
		if (mq_find(sp, id, mq_now_ms(), f) == -1)
			return errno == ENOENT ? MQ_EX_NONE : MQ_EX_SYS;
	}
	errno = EAGAIN;
	return MQ_EX_SYS;
}
