/*
 * count.c: the spool's counters, cumulative since it was made: what was
 * sent, claimed, acked, released, redriven, removed, and buried by cause.
 *
 * They are the file "counters" in the spool root, MQ_COUNTS_SIZE bytes,
 * 64-bit unsigned numbers in the host's byte order, counter i at byte
 * 8 * i (enum mq_count), shared by every process through mmap(2) and
 * added to with atomic adds: no lock, and no system call per count, for
 * concurrent senders and claimers to wait on or pay for.  The transition
 * is made first and counted after, by the process that made it: a process
 * killed in between misses its count, never counts what did not happen.
 *
 * A count is in the page cache once added, whatever becomes of the
 * process; a power cut may lose what was not written back, and so
 * mq_counts_read syncs the file before it reads: no number it has shown
 * can be taken back by a power cut, and the counters never go backwards.
 * A durable send syncs them with its messages (mq_counts_sync), so that
 * after a power cut they miss at most the claims, acks and burials whose
 * own renames were not yet durable either.
 *
 * A process that may not write the file (a reader's mq-stat, a spool on a
 * read-only mount) counts nothing and fails nothing: counting is never a
 * reason for a transition to fail.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "mq.h"

/* The mapping of a spool whose counters could not be opened. */
static uint64_t unmapped[MQ_COUNTS];

static void
map(struct mq_spool *sp)
{
	struct stat st;
	void *p;
	int fd;

	sp->counts = unmapped;
	fd = openat(sp->fd, MQ_COUNTERS, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, sp->fmode);
	if (fd == -1)
		return;
	/*
	 * Made the size it is before it is mapped: a mapping past the end
	 * of the file would fault.  Growing it again is harmless, and no
	 * process ever makes it smaller.
	 */
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (st.st_size < MQ_COUNTS_SIZE && ftruncate(fd, MQ_COUNTS_SIZE) ==
	    -1)) {
		close(fd);
		return;
	}
	/*
	 * Made now (by this process or one just before): its name synced
	 * into the root, once, so that a power cut cannot take the file
	 * away, counters and all, after mq-stat has shown them.
	 */
	if (st.st_size < MQ_COUNTS_SIZE)
		(void)mq_fsync_dir(sp->fd);
	p = mmap(NULL, MQ_COUNTS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	    0);
	if (p != MAP_FAILED) {
		sp->counts = p;
		sp->counts_fd = fd;
	} else
		close(fd);
}

void
mq_count(struct mq_spool *sp, enum mq_count c, uint64_t n)
{
	if (sp->counts == NULL)
		map(sp);
	if (sp->counts == unmapped || n == 0)
		return;
	atomic_fetch_add_explicit((_Atomic uint64_t *)&sp->counts[c], n,
	    memory_order_relaxed);
}

/* The counter of a death for cause. */
enum mq_count
mq_count_dead(enum mq_cause cause)
{
	return MQ_COUNT_DEAD_ATTEMPTS + cause;
}

/* What was counted made durable with what it counted (a durable send). */
int
mq_counts_sync(struct mq_spool *sp)
{
	if (sp->counts == NULL || sp->counts == unmapped)
		return 0;
	return fdatasync(sp->counts_fd);
}

/*
 * The counters, synced first (see above); all zero where none was ever
 * counted.  0, or -1 with errno.
 */
int
mq_counts_read(struct mq_spool *sp, uint64_t out[MQ_COUNTS])
{
	uint64_t v[MQ_COUNTS];
	ssize_t r;
	int fd;

	memset(out, 0, sizeof(v));
	fd = openat(sp->fd, MQ_COUNTERS, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	/* A reader may not sync a file on every system: it reads all the same. */
	(void)fdatasync(fd);
	memset(v, 0, sizeof(v));
	r = pread(fd, v, sizeof(v), 0);
	close(fd);
	if (r == -1)
		return -1;
	memcpy(out, v, sizeof(v));
	return 0;
}

void
mq_counts_close(struct mq_spool *sp)
{
	if (sp->counts != NULL && sp->counts != unmapped) {
		munmap(sp->counts, MQ_COUNTS_SIZE);
		close(sp->counts_fd);
	}
	sp->counts = NULL;
}
