/*
 * once.c: the ledger of finished messages (mq-recv --once), once/ in the
 * spool root, made on first use.  An entry is named by the message's
 * identity:
 *
 *	once/kHASH	a keyed message (mq-send -k): its key's hash, the
 *			,kHASH of its name, so that every message sent with
 *			that key is the same work
 *	once/iID	any other: its ID
 *
 * and is the finished message itself: a worker whose job exited 0 moves
 * the message there from cur/ with one rename(2) (leave.c's
 * mq_leave_done), which is its ack and its record at once, and makes the
 * renames of the next few ms durable with one fsync(2) of once/
 * (mq_once_sync; work.c says when).  On a file system with a journal no
 * state, before a crash or after it, has one without the other: the
 * rename is there, or the message is still in cur/ under its lease (one
 * without may keep both names, found in the ledger when delivered again,
 * or neither, the inode in lost+found: not run again).  A claim that
 * finds its message's entry (mq_once_done) acks it without running its
 * job.  So a job runs twice only when its worker dies (or the power goes)
 * after the job's effect and before that fsync returned; once it has,
 * never.
 *
 *	done	rename(cur/S/NAME, once/ENTRY): a lease lost meanwhile
 *		(ENOENT: the message was claimed again, or swept) moves
 *		nothing, so of two holders finishing together one moves it;
 *		the other, whose job succeeded too, records an empty entry
 *		of the same name (mq_once_record), which the rename replaces
 *		or which stands for it.  A group's head is recorded so
 *		first, as its leave may end in an unlink (leave.c)
 *	sync	fsync(once/)
 *	trim	entries whose ctime (the rename's time; or mtime, the later)
 *		is older than once-window go (mq-sweep)
 *
 * The entries are kept for once-window (mq_once_window): past it, a
 * message delivered again (a key sent again) runs its job again.  Its
 * default covers the time a message can still be delivered: its ttl,
 * else 7 days, and never less than its lease times its attempts.  The
 * bodies stay with them: once/ holds a window of finished messages.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

/* 'k' HASH or 'i' ID, and a NUL. */
#define ENTRY_NAME_MAX	MQ_ONCE_NAME_MAX

/* The entry's name for nm, into buf. */
static void
entry_name(char *buf, size_t size, const struct mq_name *nm)
{
	if (nm->keyhash[0] != '\0')
		snprintf(buf, size, "k%s", nm->keyhash);
	else
		snprintf(buf, size, "i%s", nm->id);
}

/* 1 when name is an entry's, as entry_name makes them. */
static int
entry_valid(const char *name)
{
	size_t i;

	if (name[0] == 'k') {
		/* A key's hash, as in names: lower-case hex (key.c). */
		for (i = 1; i <= MQ_KEYHASH_LEN; i++)
			if (!((name[i] >= '0' && name[i] <= '9') ||
			    (name[i] >= 'a' && name[i] <= 'f')))
				return 0;
		return name[i] == '\0';
	}
	if (name[0] == 'i')
		return mq_id_valid(name + 1);
	return 0;
}

/*
 * Stats once/name into *st: 1, or 0 when there is no such entry (nor
 * once/), or -1 with errno.  Through once/'s own descriptor, opened once
 * a process: a link put in its place is none.
 */
static int
entry_stat(struct mq_spool *sp, const char *name, struct stat *st)
{
	if (sp->once == -1 && (sp->once = mq_opendirat(sp->fd,
	    MQ_DIR_ONCE)) == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstatat(sp->once, name, st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	return errno == ENOENT ? 0 : -1;
}

/*
 * 1 when nm's message was recorded as finished, 0 when not, -1 with errno
 * (a ledger that cannot be read).  One fstatat (once/ opened first, once
 * a process): no ledger is no entry.
 */
int
mq_once_done(struct mq_spool *sp, const struct mq_name *nm)
{
	char name[ENTRY_NAME_MAX];
	struct stat st;

	entry_name(name, sizeof(name), nm);
	return entry_stat(sp, name, &st);
}

/*
 * 1 when once/kHASH is the file *st describes: a keyed message finished
 * with --once, which key.c counts as acknowledged (its window from the
 * rename's time, the inode's ctime), and *st is then the entry's: the
 * rename may have come since *st was taken, its ctime the claim's or an
 * extension's, which would start the window early.  0 when not, -1 with
 * errno.
 */
int
mq_once_keeps(struct mq_spool *sp, const char *hash, struct stat *st)
{
	char name[ENTRY_NAME_MAX];
	struct stat e;
	int r;

	snprintf(name, sizeof(name), "k%s", hash);
	if ((r = entry_stat(sp, name, &e)) != 1)
		return r;
	if (e.st_dev != st->st_dev || e.st_ino != st->st_ino)
		return 0;
	*st = e;
	return 1;
}

/*
 * Opens once/ (making it on first use): its fd, or -1 with errno; and nm's
 * entry's name into buf (MQ_ONCE_NAME_MAX).
 */
int
mq_once_entry(struct mq_spool *sp, const struct mq_name *nm, char *buf,
    size_t size)
{
	if (sp->once == -1 &&
	    (sp->once = mq_spool_topdir(sp, MQ_DIR_ONCE)) == -1)
		return -1;
	entry_name(buf, size, nm);
	return sp->once;
}

/*
 * Records nm's message as finished with an empty entry (a holder whose
 * lease was lost: the message is another's now); durable once
 * mq_once_sync has returned 0.  Recording it again is no error.  0, or -1
 * with errno.
 */
int
mq_once_record(struct mq_spool *sp, const struct mq_name *nm)
{
	char name[ENTRY_NAME_MAX];
	int fd;

	if (mq_once_entry(sp, nm, name, sizeof(name)) == -1)
		return -1;
	/*
	 * Read-only, no O_TRUNC: an entry there already is a message, whose
	 * body is kept and which may be another user's.  O_NONBLOCK: a FIFO
	 * put there is an error, not a hang.
	 */
	if ((fd = openat(sp->once, name, O_CREAT | O_RDONLY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC, sp->fmode)) == -1)
		return -1;
	/* Nothing was written: close can report no lost data. */
	close(fd);
	sp->once_dirty = 1;
	return 0;
}

/*
 * Makes the entries made since the last sync durable: one fsync of once/
 * for all of them.  0, or -1 with errno (they may not be).
 */
int
mq_once_sync(struct mq_spool *sp)
{
	if (!sp->once_dirty)
		return 0;
	if (mq_fsync_dir(sp->once) == -1)
		return -1;
	sp->once_dirty = 0;
	return 0;
}

/*
 * How long entries are kept: once-window, or (0) the spool's ttl, else 7
 * days, and no less than a message can live in flight, lease times
 * max-attempts.
 */
uint64_t
mq_once_window(const struct mq_conf *c)
{
	uint64_t w, least;

	if (c->once_window_ms != 0)
		return c->once_window_ms;
	w = c->ttl_ms != 0 ? c->ttl_ms : MQ_ONCE_WINDOW_MS;
	least = c->lease_ms * c->max_attempts;
	return w > least ? w : least;
}

/*
 * A keyed entry whose key is still held (keys/ID, its other link): its
 * unlink would change the key's ctime, from which dedup-window counts,
 * and hold the key anew (a send past the window would get the old ID,
 * its work then known nowhere).  It goes once the key is forgotten.
 */
static int
key_held(const char *name, const struct stat *st)
{
	return name[0] == 'k' && st->st_nlink > 1;
}

/*
 * mq-sweep's part: the entries recorded more than window_ms before now
 * go.  Not synced: an entry that comes back after a crash goes at the
 * next sweep.  0, or -1 with errno.
 */
int
mq_once_trim(struct mq_spool *sp, uint64_t now, uint64_t window_ms,
    void (*report)(const char *, const char *))
{
	/*
	 * A rename sets the ctime on Linux and the BSDs (POSIX lets it
	 * not): where it does not, an entry's age counts from its body's
	 * last write, its sending.
	 */
	struct mq_trim t = { 0, 1, entry_valid, key_held, MQ_DIR_ONCE,
	    "past once-window: removed", report };
	int dir, r, saved;

	if ((dir = mq_opendirat(sp->fd, MQ_DIR_ONCE)) == -1)
		return errno == ENOENT ? 0 : -1;
	t.before = now > window_ms ? now - window_ms : 0;
	r = mq_dir_trim(dir, &t);
	saved = errno;
	close(dir);
	errno = saved;
	return r;
}
