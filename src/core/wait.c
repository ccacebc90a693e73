/*
 * wait.c: sleeping until new/ may have something, without busy polling.
 *
 * Whoever puts messages into new/ rings the doorbell: it touches new/'s
 * times (futimens), because messages land in sub-directories that a
 * non-recursive watch would not see.  On Linux a receiver waits for that
 * with inotify (IN_ATTRIB on new/ itself); elsewhere it polls new/'s mtime
 * every POLL_MS (also on Linux with MQ_WAIT=poll, for file systems whose
 * changes inotify does not see).  Either way the caller also passes the
 * time at which a delayed message or a lease becomes due, so those are
 * never missed.
 *
 * A spool removed under a waiter must end the wait, or a receiver without
 * a time limit would sleep forever: a directory removed while it is held
 * open sends no inotify event of its own, so the spool root is watched for
 * the removal of new/, and a new/ with no link left (st_nlink 0) is
 * reported as ENOENT.
 */
#include <sys/stat.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef __linux__
#include <sys/inotify.h>
#endif

#include "compat.h"
#include "mq.h"

#define POLL_MS	200

int
mq_ring(struct mq_spool *sp)
{
	/* Not being allowed to ring only delays waiters to their next poll. */
	if (futimens(sp->new, NULL) == -1 && errno != EPERM &&
	    errno != EACCES && errno != EROFS)
		return -1;
	return 0;
}

#ifdef __linux__
static int
add_watch(int fd, int dirfd, uint32_t mask)
{
	char path[64];

	/* inotify wants a path; this one names our fd, not user input. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd);
	return inotify_add_watch(fd, path, mask | IN_ONLYDIR);
}

/*
 * An inotify descriptor watching dirfd for mask, or -1: also with
 * MQ_WAIT=poll, for file systems whose changes made elsewhere inotify
 * does not see (NFS); the caller then looks again now and then.
 */
static int
watch_open(int dirfd, uint32_t mask)
{
	const char *mode = getenv("MQ_WAIT");
	int fd;

	if (mode != NULL && strcmp(mode, "poll") == 0)
		return -1;
	if ((fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
		return -1;
	if (add_watch(fd, dirfd, mask) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
watch(int rootfd, int dirfd)
{
	int fd;

	if ((fd = watch_open(dirfd, IN_ATTRIB | IN_MOVED_TO | IN_CREATE)) == -1)
		return -1;
	/* Without it only the removal of the spool goes unnoticed. */
	(void)add_watch(fd, rootfd, IN_DELETE | IN_DELETE_SELF);
	return fd;
}

/*
 * What follows the log (mq-log -f): a descriptor readable when a file of
 * the spool root is written, made or renamed into it (an append to log,
 * its rotation), or -1: then the follower looks again every second, as
 * tail -f does where it has no events.
 */
int
mq_log_watch(struct mq_spool *sp)
{
	return watch_open(sp->fd, IN_MODIFY | IN_CREATE | IN_MOVED_TO |
	    IN_DELETE_SELF);
}

/* Reads what woke the follower, so that the next poll waits again. */
void
mq_log_watched(int fd)
{
	char buf[4096];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}
#else
static int
watch(int rootfd, int dirfd)
{
	(void)rootfd;
	(void)dirfd;
	return -1;
}

int
mq_log_watch(struct mq_spool *sp)
{
	(void)sp;
	return -1;
}

void
mq_log_watched(int fd)
{
	(void)fd;
}
#endif

int
mq_wait_open(struct mq_waiter *w, struct mq_spool *sp)
{
	struct stat st;
	int saved;

	w->dirfd = sp->new;
	w->fd = watch(sp->fd, sp->new);
	/* After the watch: a removal before it sent no event to see. */
	if (fstat(sp->new, &st) == -1)
		goto fail;
	if (st.st_nlink == 0) {
		errno = ENOENT;
		goto fail;
	}
	w->seen = st.st_mtim;
	return 0;
fail:
	saved = errno;
	mq_wait_close(w);
	errno = saved;
	return -1;
}

static void
drain(int fd)
{
	char buf[4096];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

/*
 * For a caller that polls more than the doorbell: the fd to poll (-1 when
 * polling new/'s mtime), and *timeout_ms (-1: no limit) shortened to the
 * next look at the mtime.
 */
int
mq_wait_fd(struct mq_waiter *w, int64_t *timeout_ms)
{
	if (w->fd == -1 && (*timeout_ms < 0 || *timeout_ms > POLL_MS))
		*timeout_ms = POLL_MS;
	return w->fd;
}

/*
 * After that poll (readable: the fd polled readable): 1 if the bell rang
 * since the last look, else 0; -1 on error, with ENOENT when the spool
 * was removed.
 */
int
mq_wait_rung(struct mq_waiter *w, int readable)
{
	struct stat st;

	if (w->fd != -1) {
		if (!readable)
			return 0;
		drain(w->fd);
	}
	if (fstat(w->dirfd, &st) == -1)
		return -1;
	if (st.st_nlink == 0) {
		errno = ENOENT;
		return -1;
	}
	if (w->fd != -1)
		return 1;
	if (st.st_mtim.tv_sec == w->seen.tv_sec &&
	    st.st_mtim.tv_nsec == w->seen.tv_nsec)
		return 0;
	w->seen = st.st_mtim;
	return 1;
}

/*
 * Waits for a ring or for timeout_ms (-1: no limit).  Returns 1 after a
 * ring, 0 after the timeout, -1 on error.
 */
int
mq_wait(struct mq_waiter *w, int64_t timeout_ms)
{
	struct pollfd pfd;
	int64_t step;
	int r;

	for (;;) {
		if (w->fd == -1 && (r = mq_wait_rung(w, 0)) != 0)
			return r;
		if (w->fd == -1 && timeout_ms == 0)
			return 0;
		step = timeout_ms;
		pfd.fd = mq_wait_fd(w, &step);
		pfd.events = POLLIN;
		r = poll(&pfd, pfd.fd != -1, step > INT32_MAX ? INT32_MAX :
		    (int)step);
		if (r == -1)
			return errno == EINTR ? 0 : -1;
		if (w->fd != -1)
			return mq_wait_rung(w, r > 0);
		if (timeout_ms > 0)
			timeout_ms -= step;
	}
}

void
mq_wait_close(struct mq_waiter *w)
{
	if (w->fd != -1)
		close(w->fd);
	w->fd = -1;
}
