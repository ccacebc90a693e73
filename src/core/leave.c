/*
 * leave.c: a live message leaves the spool, one way for every leaver (an
 * ack, mq-rm): a group's head hands its turn on as it goes (group.c's
 * mq_group_leave, which takes its history along); any other is unlinked
 * under its group's lock, if it has one, so that no claim gives it the
 * turn meanwhile; then its death history goes, after it (a crash between
 * leaves an orphan history, harmless: history.c).  A dead letter leaves
 * by its purge (dead.c), whose reason and history wait for a sync.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

/*
 * dirfd/name (named nm: in new/ or cur/) leaves the spool.  0, or -1 with
 * errno (ENOENT: it was gone, or moved).
 */
int
mq_leave(struct mq_spool *sp, int dirfd, const char *name,
    const struct mq_name *nm)
{
	int lock, r, saved;

	switch (mq_group_leave(sp, dirfd, name, nm, NULL, &lock)) {
	case -1:
		return -1;
	case 1:
		return 0;
	}
	r = unlinkat(dirfd, name, 0);
	saved = errno;
	mq_group_unlock(&lock);
	if (r == 0 && nm->deaths != 0)
		(void)mq_history_forget(sp, nm);
	errno = saved;
	return r;
}
