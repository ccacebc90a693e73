/*
 * fault.so: makes chosen system calls of the mq tools fail or stall, so
 * that tests can reach the error paths a full disk, a failing device or a
 * racing process would.  (libfiu's wrappers miss the *at calls.)
 *
 *	LD_PRELOAD=tests/fault.so MQ_FAULT='SPEC [SPEC ...]' mq-send ...
 *
 * A SPEC is CALL[:OPTION]..., CALL one of openat renameat unlinkat mkdirat
 * syncfs fsync futimens write inotify_init1 pread malloc (malloc, calloc
 * and realloc alike, glibc only: errno=ENOMEM makes them return NULL);
 * the options:
 *
 *	errno=NAME	the call fails with NAME (EIO, ENOSPC, ENOENT, EMFILE,
 *			EACCES, EPERM, EROFS, EDQUOT, EXDEV, or a number)
 *	delay=N[ms|s]	sleep that long, then make (or fail) the call
 *	at=STRING	only calls whose path contains STRING: the path of the
 *			fd, or for an *at call its directory's path, '/' and
 *			the name (renameat: the source); read from /proc
 *	after=N		leave the first N matching calls alone
 *	nth=N		act on the Nth matching call only (after=N-1 times=1)
 *	times=N		act on N matching calls at most
 *	short=N		(pread, write) the call made, for N bytes at most: a
 *			short read before the end, as FUSE or NFS may give;
 *			a write taken in part, as by a slow link
 *	log=FILE	append a line to FILE for each matching call: its
 *			name, a space and its path as at= sees it; the call
 *			is made as asked (left alone, without errno=, delay=
 *			or short=), and what happened to it is not logged.
 *			So a test can tell which directories were synced
 *			without strace; the specs of one FILE share it, in
 *			the order of the calls
 *
 * e.g. MQ_FAULT='fsync:errno=EIO:at=/new/' fails every fsync of a
 * directory under new/, 'mkdirat:delay=300ms:times=2' stalls the first
 * two mkdirat calls, and 'fsync:log=/tmp/l' lists in /tmp/l what each
 * fsync synced.  Only programs named mq-* are affected, so a shell,
 * timeout or valgrind between a test and the tool is not.  The tools are
 * single-threaded, so the counters need no lock.
 *
 * Under AddressSanitizer (make SANITIZE=1) the runtime insists on being
 * loaded first; tests add verify_asan_link_order=0 to ASAN_OPTIONS.  Paths
 * come from Linux's /proc: elsewhere an at= filter matches nothing.
 */
#define _GNU_SOURCE
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum call {
	OPENAT, RENAMEAT, UNLINKAT, MKDIRAT, SYNCFS, FSYNC, FUTIMENS, WRITE,
	INOTIFY_INIT1, PREAD, MALLOC, NCALLS
};

static const char *const callnames[NCALLS] = {
	"openat", "renameat", "unlinkat", "mkdirat", "syncfs", "fsync",
	"futimens", "write", "inotify_init1", "pread", "malloc"
};

static const struct {
	const char *name;
	int	 no;
} errnos[] = {
	{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "ENOENT", ENOENT },
	{ "EMFILE", EMFILE }, { "EACCES", EACCES }, { "EPERM", EPERM },
	{ "EROFS", EROFS }, { "EDQUOT", EDQUOT }, { "EXDEV", EXDEV },
	{ "EINTR", EINTR }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM }
};

#define NSPECS	8

static struct spec {
	enum call call;
	int	 err;		/* 0: succeed (after any delay) */
	long	 delay_ms;
	char	 at[256];
	long	 after, times;	/* times < 0: no limit */
	long	 shortn;	/* > 0: a read of that many bytes at most */
	char	 log[256];	/* a file each matching call is noted in */
	long	 seen, done;
} specs[NSPECS];
static int nspecs = -1;
static long shortn;	/* the call being made: short=N of its spec, or 0 */

static void
die(const char *what, const char *spec)
{
	fprintf(stderr, "fault.so: %s: %s\n", what, spec);
	_exit(99);
}

static void
parse_one(char *s)
{
	struct spec *sp;
	char *opt, *val, *save;
	size_t i;
	int c;

	if (nspecs == NSPECS)
		die("too many specs", s);
	sp = &specs[nspecs];
	memset(sp, 0, sizeof(*sp));
	sp->times = -1;
	opt = strtok_r(s, ":", &save);
	for (c = 0; c < NCALLS && strcmp(opt, callnames[c]) != 0; c++)
		;
	if (c == NCALLS)
		die("unknown call", opt);
	sp->call = c;
	while ((opt = strtok_r(NULL, ":", &save)) != NULL) {
		if ((val = strchr(opt, '=')) == NULL)
			die("option without a value", opt);
		*val++ = '\0';
		if (strcmp(opt, "errno") == 0) {
			for (i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
				if (strcmp(val, errnos[i].name) == 0)
					sp->err = errnos[i].no;
			if (sp->err == 0 && (sp->err = atoi(val)) <= 0)
				die("unknown errno", val);
		} else if (strcmp(opt, "delay") == 0) {
			sp->delay_ms = strtol(val, &val, 10);
			if (strcmp(val, "s") == 0)
				sp->delay_ms *= 1000;
			else if (*val != '\0' && strcmp(val, "ms") != 0)
				die("bad delay", val);
		} else if (strcmp(opt, "at") == 0)
			snprintf(sp->at, sizeof(sp->at), "%s", val);
		else if (strcmp(opt, "after") == 0)
			sp->after = atol(val);
		else if (strcmp(opt, "short") == 0) {
			if ((sp->shortn = atol(val)) <= 0)
				die("bad short", val);
		} else if (strcmp(opt, "log") == 0) {
			if (val[0] == '\0' || strlen(val) >= sizeof(sp->log))
				die("bad log", val);
			snprintf(sp->log, sizeof(sp->log), "%s", val);
		} else if (strcmp(opt, "times") == 0)
			sp->times = atol(val);
		else if (strcmp(opt, "nth") == 0) {
			sp->after = atol(val) - 1;
			sp->times = 1;
		} else
			die("unknown option", opt);
	}
	if (sp->err == 0 && sp->delay_ms == 0 && sp->shortn == 0 &&
	    sp->log[0] == '\0')
		die("neither errno, delay, short nor log", callnames[c]);
	nspecs++;
}

static void
parse(void)
{
	static char buf[4096];
	const char *env = getenv("MQ_FAULT"), *prog;
	char *s, *save;

	nspecs = 0;
#ifdef __GLIBC__
	prog = program_invocation_short_name;
#else
	prog = getprogname();
#endif
	if (env == NULL || strncmp(prog, "mq-", 3) != 0)
		return;
	snprintf(buf, sizeof(buf), "%s", env);
	for (s = strtok_r(buf, " \t\n;", &save); s != NULL;
	    s = strtok_r(NULL, " \t\n;", &save))
		parse_one(s);
}

/* The path an fd (and name, for the *at calls) stands for. */
static void
path_of(int fd, const char *name, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	buf[0] = '\0';
	if (name != NULL && name[0] == '/') {
		snprintf(buf, size, "%s", name);
		return;
	}
	if (fd == AT_FDCWD) {
		if (getcwd(buf, size) == NULL)
			buf[0] = '\0';
	} else {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		if ((n = readlink(link, buf, size - 1)) == -1)
			n = 0;
		buf[n] = '\0';
	}
	if (name != NULL) {
		n = strlen(buf);
		snprintf(buf + n, size - n, "/%s", name);
	}
}

/*
 * Notes call c on path in file: one write(2) of the whole line, appended
 * (O_APPEND), so that lines of several specs or processes never mix.
 * The raw system calls: this shim's own wrappers are not to see them.
 */
static void
note(const char *file, enum call c, const char *path)
{
	char line[8192 + 32];
	int fd, n, saved = errno;

	n = snprintf(line, sizeof(line), "%s %s\n", callnames[c], path);
	if (n < 0 || (size_t)n >= sizeof(line))
		die("path too long to log", path);
	fd = (int)syscall(SYS_openat, AT_FDCWD, file,
	    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd == -1)
		die("cannot open the log", file);
	if (syscall(SYS_write, fd, line, (size_t)n) != n)
		die("cannot write the log", file);
	syscall(SYS_close, fd);
	errno = saved;
}

/*
 * Decides the fate of a call: stalls it if asked, then returns -1 with
 * errno set if it is to fail, 0 if it is to be made.
 */
static int
fault(enum call c, int fd, const char *name)
{
	char path[8192];
	struct timespec ts;
	struct spec *sp;
	int i, saved = errno, known = 0;

	if (nspecs == -1)
		parse();
	shortn = 0;
	for (i = 0; i < nspecs; i++) {
		sp = &specs[i];
		if (sp->call != c)
			continue;
		if ((sp->at[0] != '\0' || sp->log[0] != '\0') && !known) {
			path_of(fd, name, path, sizeof(path));
			known = 1;
		}
		if (sp->at[0] != '\0' && strstr(path, sp->at) == NULL)
			continue;
		if (sp->seen++ < sp->after ||
		    (sp->times >= 0 && sp->done >= sp->times))
			continue;
		sp->done++;
		if (sp->log[0] != '\0')
			note(sp->log, c, path);
		if (sp->shortn > 0)
			shortn = sp->shortn;
		if (sp->delay_ms > 0) {
			ts.tv_sec = sp->delay_ms / 1000;
			ts.tv_nsec = sp->delay_ms % 1000 * 1000000;
			while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
				;
		}
		if (sp->err != 0) {
			errno = sp->err;
			return -1;
		}
	}
	errno = saved;
	return 0;
}

static void *
real(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (f == NULL)
		die("no such symbol", name);
	return f;
}

/* The next definition of fn: libc's, or a sanitizer's interceptor. */
#define REAL(fn) \
	static __typeof__(fn) *real_; \
	if (real_ == NULL) \
		real_ = (__typeof__(fn) *)real(#fn)

typedef int openat_fn(int, const char *, int, ...);

static int
do_openat(openat_fn **fp, const char *sym, int dirfd, const char *name,
    int flags, mode_t mode)
{
	if (*fp == NULL)
		*fp = (openat_fn *)real(sym);
	if (fault(OPENAT, dirfd, name) == -1)
		return -1;
	return (*fp)(dirfd, name, flags, mode);
}

static mode_t
mode_arg(int flags, va_list ap)
{
	if ((flags & O_CREAT) != 0)
		return va_arg(ap, int);
#ifdef O_TMPFILE
	if ((flags & O_TMPFILE) == O_TMPFILE)
		return va_arg(ap, int);
#endif
	return 0;
}

int
openat(int dirfd, const char *name, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	static openat_fn *fp;

	return do_openat(&fp, "openat", dirfd, name, flags, mode);
}

int
openat64(int dirfd, const char *name, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	static openat_fn *fp;

	return do_openat(&fp, "openat64", dirfd, name, flags, mode);
}

/* What _FORTIFY_SOURCE makes of an openat without a mode. */
int
__openat_2(int dirfd, const char *name, int flags)
{
	static openat_fn *fp;

	return do_openat(&fp, "__openat_2", dirfd, name, flags, 0);
}

int
__openat64_2(int dirfd, const char *name, int flags)
{
	static openat_fn *fp;

	return do_openat(&fp, "__openat64_2", dirfd, name, flags, 0);
}

int
renameat(int from, const char *fromname, int to, const char *toname)
{
	REAL(renameat);
	if (fault(RENAMEAT, from, fromname) == -1)
		return -1;
	return real_(from, fromname, to, toname);
}

int
unlinkat(int dirfd, const char *name, int flags)
{
	REAL(unlinkat);
	if (fault(UNLINKAT, dirfd, name) == -1)
		return -1;
	return real_(dirfd, name, flags);
}

int
mkdirat(int dirfd, const char *name, mode_t mode)
{
	REAL(mkdirat);
	if (fault(MKDIRAT, dirfd, name) == -1)
		return -1;
	return real_(dirfd, name, mode);
}

int
syncfs(int fd)
{
	REAL(syncfs);
	if (fault(SYNCFS, fd, NULL) == -1)
		return -1;
	return real_(fd);
}

int
fsync(int fd)
{
	REAL(fsync);
	if (fault(FSYNC, fd, NULL) == -1)
		return -1;
	return real_(fd);
}

int
futimens(int fd, const struct timespec times[2])
{
	REAL(futimens);
	if (fault(FUTIMENS, fd, NULL) == -1)
		return -1;
	return real_(fd, times);
}

ssize_t
write(int fd, const void *buf, size_t len)
{
	REAL(write);
	if (fault(WRITE, fd, NULL) == -1)
		return -1;
	if (shortn > 0 && len > (size_t)shortn)
		len = (size_t)shortn;
	return real_(fd, buf, len);
}

ssize_t
pread(int fd, void *buf, size_t len, off_t off)
{
	REAL(pread);
	if (fault(PREAD, fd, NULL) == -1)
		return -1;
	if (shortn > 0 && len > (size_t)shortn)
		len = (size_t)shortn;
	return real_(fd, buf, len, off);
}

ssize_t
pread64(int fd, void *buf, size_t len, off64_t off)
{
	REAL(pread64);
	if (fault(PREAD, fd, NULL) == -1)
		return -1;
	if (shortn > 0 && len > (size_t)shortn)
		len = (size_t)shortn;
	return real_(fd, buf, len, off);
}

int
inotify_init1(int flags)
{
	REAL(inotify_init1);
	if (fault(INOTIFY_INIT1, -1, NULL) == -1)
		return -1;
	return real_(flags);
}

#ifdef __GLIBC__
/*
 * The next allocator: glibc's, or a sanitizer's, so that what is handed
 * out is freed by the free the program calls.  dlsym may allocate while it
 * looks: those allocations, and only those, are glibc's own (__libc_*),
 * which glibc exports for this.  Tests skip the malloc faults where they
 * would miss: AddressSanitizer's strdup allocates by itself, and valgrind's
 * allocator takes the place of this one.
 */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static int resolving;

/*
 * The specs are read once libc is set up (a sanitizer's runtime allocates
 * before it, when there is no environment yet to read them from): the
 * allocations made before are made as asked.
 */
__attribute__((constructor)) static void
init(void)
{
	if (nspecs == -1)
		parse();
}

static void *
next(const char *name)
{
	void *f;

	resolving = 1;
	f = real(name);
	resolving = 0;
	return f;
}

/*
 * REAL for an allocator: glibc's own (libc_call) serves while dlsym looks
 * the next one up, and an allocation fails as the specs say.
 */
#define REAL_ALLOC(fn, libc_call) \
	static __typeof__(fn) *real_; \
	if (real_ == NULL) { \
		if (resolving) \
			return libc_call; \
		real_ = (__typeof__(fn) *)next(#fn); \
	} \
	if (nspecs != -1 && fault(MALLOC, -1, NULL) == -1) \
		return NULL

void *
malloc(size_t n)
{
	REAL_ALLOC(malloc, __libc_malloc(n));
	return real_(n);
}

void *
calloc(size_t n, size_t size)
{
	REAL_ALLOC(calloc, __libc_calloc(n, size));
	return real_(n, size);
}

void *
realloc(void *p, size_t n)
{
	REAL_ALLOC(realloc, __libc_realloc(p, n));
	return real_(p, n);
}
#endif
