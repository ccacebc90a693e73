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

#ifndef __dead
#define __dead	__attribute__((__noreturn__))
#endif

#endif
