/*
 * compat.h: the one place for per-system differences.  Everything else is
 * written against POSIX plus the OpenBSD extensions that libbsd's overlay
 * supplies on glibc (strtonum, arc4random_buf, strlcpy, getprogname).
 */
#ifndef MQ_COMPAT_H
#define MQ_COMPAT_H

#include <fcntl.h>
#include <getopt.h>

#ifndef O_DIRECTORY
#define O_DIRECTORY	0
#endif
#ifndef O_CLOEXEC
#define O_CLOEXEC	0
#endif

/*
 * Options end at the first operand everywhere (POSIX); GNU getopt has to be
 * told with a leading '+', which BSD getopt would read as an option.
 * Parsing a second argument vector needs optind = 0 on glibc, 1 elsewhere.
 */
#ifdef __GLIBC__
#define MQ_OPTS(s)	"+" s
#define MQ_OPTRESET()	(optind = 0)
#else
#define MQ_OPTS(s)	s
#define MQ_OPTRESET()	(optreset = 1, optind = 1)
#endif

/*
 * Linux can make a whole batch of files durable with one syncfs(2), which
 * reports write-back errors since 5.8; elsewhere each file is fsynced.
 */
#ifdef __linux__
#define MQ_HAVE_SYNCFS	1
#else
#define MQ_HAVE_SYNCFS	0
#endif
int	mq_syncfs(int);

/*
 * A rename that never replaces its target: renameat2(RENAME_NOREPLACE) on
 * Linux.  Elsewhere, or on a file system without it, a plain renameat,
 * which may replace an empty directory; whoever held that one open gets
 * ENOENT when renaming into it, and makes or opens it again.
 */
int	mq_rename_noreplace(int, const char *, int, const char *);

/* A pipe closed on exec: pipe2(2) on Linux, pipe and fcntl elsewhere. */
int	mq_pipe_cloexec(int [2]);

/*
 * Holds back a TCP socket's partial segments (on) until let go (off), so
 * that a batch of small writes leaves in full segments; where the system
 * has no such option, nothing.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
static inline int
mq_tcp_hold(int fd, int on)
{
#if defined(TCP_CORK)
	return setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
#elif defined(TCP_NOPUSH)
	return setsockopt(fd, IPPROTO_TCP, TCP_NOPUSH, &on, sizeof(on));
#else
	(void)fd;
	(void)on;
	return 0;
#endif
}

/*
 * A job started by a worker dies with it on Linux, so that a killed worker
 * leaves no job running on a message whose lease will run out; elsewhere
 * such a job runs to its end (at-least-once covers it).
 */
#ifdef __linux__
#include <sys/prctl.h>
#include <signal.h>
static inline int
mq_die_with_parent(void)
{
	return prctl(PR_SET_PDEATHSIG, SIGKILL);
}
#else
static inline int
mq_die_with_parent(void)
{
	return 0;
}
#endif

/*
 * Whether a process still lives, and which one a pid names (holder.c):
 * Linux tells a process' start (clock ticks after boot) and whether it is
 * a zombie (/proc/PID/stat), the boot (its boot_id) and the pid and time
 * namespaces a pid and a start mean something in, and when a start was;
 * elsewhere -1 with ENOSYS, and no holder is ever judged gone there (its
 * lease runs to its end).
 */
int	mq_proc_start(long, unsigned long long *, int *);
int	mq_proc_space(char *, size_t, unsigned long long [2]);
int	mq_proc_started_ms(unsigned long long, unsigned long long *);

/*
 * The bodies of the functions above, compiled once, in util.c, which
 * defines MQ_COMPAT_BODIES and _GNU_SOURCE before any header (syncfs,
 * renameat2 and pipe2 are GNU extensions on glibc).
 */
#ifdef MQ_COMPAT_BODIES
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Makes every file of dirfd's file system durable. */
int
mq_syncfs(int dirfd)
{
#if MQ_HAVE_SYNCFS
	return syncfs(dirfd);
#else
	return fsync(dirfd);
#endif
}

int
mq_rename_noreplace(int from, const char *fromname, int to,
    const char *toname)
{
#if defined(__linux__) && defined(RENAME_NOREPLACE)
	if (renameat2(from, fromname, to, toname, RENAME_NOREPLACE) == 0)
		return 0;
	/* EINVAL: this file system cannot; ENOSYS: this kernel. */
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
#endif
	return renameat(from, fromname, to, toname);
}

int
mq_pipe_cloexec(int p[2])
{
#ifdef __linux__
	return pipe2(p, O_CLOEXEC);
#else
	if (pipe(p) == -1)
		return -1;
	fcntl(p[0], F_SETFD, FD_CLOEXEC);
	fcntl(p[1], F_SETFD, FD_CLOEXEC);
	return 0;
#endif
}
int
mq_proc_start(long pid, unsigned long long *start, int *zombie)
{
#ifdef __linux__
	char path[64], buf[1024], *p, *end;
	unsigned long long v;
	ssize_t n;
	int fd, i, saved;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	saved = errno;
	close(fd);
	errno = saved;
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command, field 2, may hold spaces and parentheses. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		goto bad;
	p += 2;
	*zombie = *p == 'Z' || *p == 'X';
	/* Field 22, starttime: 19 fields after the state. */
	for (i = 0; i < 19; i++)
		if ((p = strchr(p, ' ')) == NULL)
			goto bad;
		else
			p++;
	errno = 0;
	v = strtoull(p, &end, 10);
	if (errno != 0 || end == p)
		goto bad;
	*start = v;
	return 0;
bad:
	errno = EINVAL;
	return -1;
#else
	(void)pid;
	(void)start;
	(void)zombie;
	errno = ENOSYS;
	return -1;
#endif
}

int
mq_proc_space(char *boot, size_t size, unsigned long long ns[2])
{
#ifdef __linux__
	struct stat st;
	char self[32], link[32];
	ssize_t n;
	int fd, saved;

	/*
	 * A /proc mounted for another pid namespace would tell of other
	 * processes than kill(2) does: then no pid of it is judged.
	 */
	snprintf(self, sizeof(self), "%ld", (long)getpid());
	if ((n = readlink("/proc/self", link, sizeof(link) - 1)) <= 0)
		return -1;
	link[n] = '\0';
	if (strcmp(link, self) != 0) {
		errno = ESRCH;
		return -1;
	}
	if ((fd = open("/proc/sys/kernel/random/boot_id",
	    O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, boot, size - 1);
	saved = errno;
	close(fd);
	errno = saved;
	if (n <= 0)
		return -1;
	while (n > 0 && (boot[n - 1] == '\n' || boot[n - 1] == ' '))
		n--;
	boot[n] = '\0';
	if (stat("/proc/self/ns/pid", &st) == -1)
		return -1;
	ns[0] = st.st_ino;
	/* A time namespace shifts the start times /proc shows (5.6 on). */
	ns[1] = stat("/proc/self/ns/time", &st) == 0 ? st.st_ino : 0;
	return 0;
#else
	(void)boot;
	(void)size;
	(void)ns;
	errno = ENOSYS;
	return -1;
#endif
}

/*
 * When a process started, in ms after the epoch, from its start in clock
 * ticks after boot: the boot's time is now less the time since it.
 */
int
mq_proc_started_ms(unsigned long long ticks, unsigned long long *ms)
{
#ifdef __linux__
	struct timespec real, boot;
	long hz;

	if ((hz = sysconf(_SC_CLK_TCK)) <= 0 ||
	    clock_gettime(CLOCK_REALTIME, &real) == -1 ||
	    clock_gettime(CLOCK_BOOTTIME, &boot) == -1)
		return -1;
	*ms = (unsigned long long)real.tv_sec * 1000 + real.tv_nsec / 1000000 -
	    ((unsigned long long)boot.tv_sec * 1000 + boot.tv_nsec / 1000000) +
	    ticks * 1000 / hz;
	return 0;
#else
	(void)ticks;
	(void)ms;
	errno = ENOSYS;
	return -1;
#endif
}
#endif /* MQ_COMPAT_BODIES */

#ifndef __dead
#define __dead	__attribute__((__noreturn__))
#endif

#endif
