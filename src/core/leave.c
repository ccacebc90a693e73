/*
 * leave.c: a message leaves the spool, one way for every leaver.  A live
 * one (an ack, mq-rm; a job finished with --once, renamed into the ledger
 * instead of unlinked: once.c): a group's head hands its turn on as it
 * goes (group.c's mq_group_leave, which takes its history along); any
 * other is unlinked under its group's lock, if it has one, so that no
 * claim gives it the turn meanwhile; then its death history goes, after
 * it (a crash between leaves an orphan history, harmless: history.c).  A dead letter
 * (mq-dlq purge, mq-rm): unlinked under the lock of dead/ that redrives
 * take too, its reason, last reason and history gone only once dead/ is
 * synced.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

/*
 * dirfd/name (named nm: in new/ or cur/) leaves the spool: unlinked, or
 * with done renamed to once/done.  0, or -1 with errno (ENOENT: it was
 * gone, or moved).
 */
static int
leave(struct mq_spool *sp, int dirfd, const char *name,
    const struct mq_name *nm, const char *done)
{
	int lock, r, saved;

	switch (mq_group_leave(sp, dirfd, name, nm, NULL, done, &lock)) {
	case -1:
		return -1;
	case 1:
		return 0;
	}
	r = done != NULL ? renameat(dirfd, name, sp->once, done) :
	    unlinkat(dirfd, name, 0);
	saved = errno;
	mq_group_unlock(&lock);
	if (r == 0 && nm->deaths != 0)
		(void)mq_history_forget(sp, nm);
	errno = saved;
	return r;
}

int
mq_leave(struct mq_spool *sp, int dirfd, const char *name,
    const struct mq_name *nm)
{
	return leave(sp, dirfd, name, nm, NULL);
}

/*
 * As mq_leave, for a message finished (mq-recv --once): it becomes its own
 * entry in the ledger (once.c), durable once mq_once_sync has returned 0.
 */
int
mq_leave_done(struct mq_spool *sp, int dirfd, const char *name,
    const struct mq_name *nm)
{
	char entry[MQ_ONCE_NAME_MAX];
	struct stat st;
	int tries;

	for (tries = 0; ; tries++) {
		/*
		 * A group's head may leave by half: its turn passed on, the
		 * last rename failed or cut by a crash, the rest is an
		 * unlink (mq_group_sweep).  An empty entry first stands for
		 * it until the rename replaces it.
		 */
		if (mq_once_entry(sp, nm, entry, sizeof(entry)) == -1 ||
		    (nm->group[0] != '\0' && mq_once_record(sp, nm) == -1))
			break;
		if (leave(sp, dirfd, name, nm, entry) == 0) {
			sp->once_dirty = 1;
			return 0;
		}
		/*
		 * ENOENT with the message still there: once/ was removed
		 * while open.  Made anew, once.
		 */
		if (errno != ENOENT || fstatat(dirfd, name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1 || tries > 0)
			break;
		close(sp->once);
		sp->once = -1;
	}
	/* ENOENT is a lease lost, which a ledger that failed is not. */
	if (errno == ENOENT && fstatat(dirfd, name, &st,
	    AT_SYMLINK_NOFOLLOW) == 0)
		errno = EIO;
	return -1;
}

/*
 * Under the same lock as a redrive.  Its reason, last reason and history
 * go by mq_dead_purged, once dead/ is synced (one sync for a run of
 * purges): removed before, a power cut could keep their removal and undo
 * the purge, and the dead letter come back without its reason.
 */
int
mq_dead_purge(struct mq_spool *sp, const struct mq_dead *d)
{
	int r;

	if (mq_spool_need(sp, 0) == -1 || mq_dead_lock(sp) == -1)
		return -1;
	r = unlinkat(sp->dead, d->name, 0);
	mq_dead_unlock(sp);
	if (r == 0) {
		mq_count(sp, MQ_COUNT_REMOVED, 1);
		mq_log_begin(sp, "purge", d->n.id);
		mq_log_num("attempts", d->n.attempts);
		mq_log_end();
	}
	return r;
}

/* Makes the purges made so far durable: one sync of dead/. */
int
mq_dead_sync(struct mq_spool *sp)
{
	if (mq_spool_need(sp, 0) == -1)
		return -1;
	return mq_fsync_dir(sp->dead);
}

/*
 * What a purge of d leaves, for after mq_dead_sync; its history is
 * forgotten under the lock, as every change to a history is.
 */
void
mq_dead_purged(struct mq_spool *sp, const struct mq_dead *d)
{
	unlinkat(sp->reason, d->n.id, 0);
	mq_reason_drop(sp, d->n.id);
	if (mq_dead_lock(sp) == -1)
		return;
	(void)mq_history_forget(sp, &d->n);
	mq_dead_unlock(sp);
}
