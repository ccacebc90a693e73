/*
 * util.c: small helpers of the core: directory fsync, streaming copy,
 * directory listing, the '\n'/'\0' record reader.  Like the rest of the
 * core they never exit, not even when memory runs out: that is ENOMEM,
 * for the tool to report (tests/core.bats).
 */
/*
 * compat.h's Linux bodies (syncfs, renameat2, pipe2) are compiled here, once,
 * and need glibc's GNU declarations; other systems ignore this macro.
 */
#define _GNU_SOURCE
#define MQ_COMPAT_BODIES
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define READ_CHUNK	65536
#define RECORD_MAX	8192

/*
 * How bad each exit status is when one call handles many items.  A bad
 * receipt (a bug in the caller) must not hide behind a lost lease (a normal
 * race), so usage ranks above lease lost; a system error ranks highest.
 */
static int
rank(int status)
{
	switch (status) {
	case MQ_EX_OK:
		return 0;
	case MQ_EX_NONE:
		return 1;
	case MQ_EX_LOST:
		return 2;
	case MQ_EX_USAGE:
		return 3;
	default:
		return 4;
	}
}

int
mq_worse(int a, int b)
{
	return rank(b) > rank(a) ? b : a;
}

/* Whether dirfd/name is there, whatever it is. */
int
mq_exists(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void
mq_closefd(int *fd)
{
	if (*fd != -1)
		close(*fd);
	*fd = -1;
}

int
mq_fsync_dir(int dirfd)
{
	/* Some file systems refuse fsync on a directory; they need none. */
	if (fsync(dirfd) == -1 && errno != EINVAL && errno != EROFS)
		return -1;
	return 0;
}

int
mq_copy_fd(int from, int to)
{
	char buf[READ_CHUNK];
	ssize_t n, w;
	size_t off;

	for (;;) {
		n = read(from, buf, sizeof(buf));
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			return 0;
		for (off = 0; off < (size_t)n; off += w) {
			w = write(to, buf + off, n - off);
			if (w == -1) {
				if (errno == EINTR) {
					w = 0;
					continue;
				}
				return -1;
			}
		}
	}
}

/*
 * mkdirat that tolerates an existing directory; *made says if it was new.
 * A shared spool's modes are set whatever the umask of its user.
 */
int
mq_mkdirat(int dirfd, const char *name, mode_t mode, int *made)
{
	if (made != NULL)
		*made = 0;
	if (mkdirat(dirfd, name, mode) == 0) {
		if (made != NULL)
			*made = 1;
		if ((mode & 077) != 0 && fchmodat(dirfd, name, mode, 0) == -1)
			return -1;
		return 0;
	}
	return errno == EEXIST ? 0 : -1;
}

/* Creates a new file for writing, never following a link. */
int
mq_create(int dirfd, const char *name, mode_t mode)
{
	int fd, saved;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode);
	if (fd != -1 && (mode & 077) != 0 && fchmod(fd, mode) == -1) {
		saved = errno;
		close(fd);
		unlinkat(dirfd, name, 0);
		errno = saved;
		return -1;
	}
	return fd;
}

int
mq_opendirat(int dirfd, const char *name)
{
	return openat(dirfd, name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/*
 * The array v (of *cap elements of size, n of them used) with room for
 * one more: as it is, or grown by doubling (from 64) to max elements at
 * the most.  NULL when it cannot be (ENOMEM, ENOBUFS at max): v is then
 * as it was.
 */
void *
mq_grow(void *v, size_t *cap, size_t n, size_t max, size_t size)
{
	size_t c;

	if (n < *cap)
		return v;
	if (*cap >= max) {
		errno = ENOBUFS;
		return NULL;
	}
	c = *cap ? *cap * 2 : 64;
	if (c > max)
		c = max;
	if ((v = reallocarray(v, c, size)) != NULL)
		*cap = c;
	return v;
}

/* Adds a copy of name; -1 (ENOMEM) leaves nl as it was. */
int
mq_names_add(struct mq_names *nl, const char *name)
{
	return mq_names_add_max(nl, name, SIZE_MAX / sizeof(*nl->v));
}

/*
 * The same, the list grown (by doubling) to max names at the most, a
 * bound the caller keeps: ENOBUFS past it.
 */
int
mq_names_add_max(struct mq_names *nl, const char *name, size_t max)
{
	char **v, *s;

	if ((v = mq_grow(nl->v, &nl->cap, nl->n, max, sizeof(*v))) == NULL)
		return -1;
	nl->v = v;
	if ((s = strdup(name)) == NULL)
		return -1;
	nl->v[nl->n++] = s;
	return 0;
}

/*
 * Calls fn for each name in a directory of the given type (DT_DIR, DT_REG;
 * DT_UNKNOWN for any), skipping dot-files and never following a symbolic
 * link, until fn returns non-zero (which is returned; -1 with errno set).
 * The directory fd stays open and usable by the caller.
 */
int
mq_dir_each(int dirfd, int type, int (*fn)(void *, int, const char *),
    void *arg)
{
	DIR *d;
	struct dirent *de;
	struct stat st;
	int fd, saved, t, r = 0;

	if ((fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	errno = 0;
	while (r == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		t = de->d_type;
		if (type != DT_UNKNOWN && t == DT_UNKNOWN) {
			if (fstatat(dirfd, de->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) == -1)
				goto next;
			t = S_ISDIR(st.st_mode) ? DT_DIR :
			    S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
		}
		if (type == DT_UNKNOWN || t == type)
			r = fn(arg, dirfd, de->d_name);
next:
		if (r == 0)
			errno = 0;
	}
	saved = errno;
	closedir(d);
	if (r == 0 && saved != 0) {
		errno = saved;
		return -1;
	}
	errno = saved;
	return r;
}

struct trimming {
	const struct mq_trim	*t;
	int			 failed;
};

static int
trim_one(void *arg, int dirfd, const char *name)
{
	struct trimming *tr = arg;
	const struct mq_trim *t = tr->t;
	char shown[MQ_NAME_MAX * 2];
	struct stat st;
	uint64_t age, changed;

	/* What is not of the directory's kind is someone else's: left. */
	if ((t->valid != NULL && !t->valid(name)) ||
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return 0;
	age = (uint64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec /
	    1000000;
	changed = (uint64_t)st.st_ctim.tv_sec * 1000 + st.st_ctim.tv_nsec /
	    1000000;
	if (t->by_ctime && changed > age)
		age = changed;
	if (age >= t->before || (t->held != NULL && t->held(name, &st)))
		return 0;
	if (unlinkat(dirfd, name, 0) == -1) {
		/* Gone meanwhile (another sweep): not this one's to say. */
		if (errno != ENOENT && tr->failed == 0)
			tr->failed = errno;
		return 0;
	}
	if (t->report == NULL)
		return 0;
	if (t->prefix != NULL) {
		snprintf(shown, sizeof(shown), "%s/%s", t->prefix, name);
		t->report(shown, t->why);
	} else
		t->report(name, t->why);
	return 0;
}

/*
 * mq-sweep's removal of what has aged out of a directory: each regular
 * file valid() takes (every one with NULL) last changed before t->before
 * (ms): by its mtime, or with by_ctime the later of its ctime and mtime;
 * none that held() says is held yet.
 * Each removed is reported as PREFIX/NAME, or NAME.  0, or -1 with the
 * errno of the first removal that failed (the others are still made).
 */
int
mq_dir_trim(int dirfd, const struct mq_trim *t)
{
	struct trimming tr = { t, 0 };

	if (mq_dir_each(dirfd, DT_REG, trim_one, &tr) == -1)
		return -1;
	if (tr.failed != 0) {
		errno = tr.failed;
		return -1;
	}
	return 0;
}

struct collect {
	struct mq_names	*nl;
	int		(*keep)(const char *);
};

static int
collect_one(void *arg, int dirfd, const char *name)
{
	struct collect *c = arg;

	(void)dirfd;
	if (c->keep == NULL || c->keep(name))
		return mq_names_add(c->nl, name);
	return 0;
}

/*
 * Collects the names in a directory that the filter accepts and that are
 * of the given type, as mq_dir_each does.
 */
int
mq_names_read(int dirfd, int type, int (*keep)(const char *),
    struct mq_names *nl)
{
	struct collect c = { nl, keep };
	int saved;

	nl->v = NULL;
	nl->n = nl->cap = 0;
	if (mq_dir_each(dirfd, type, collect_one, &c) == -1) {
		saved = errno;
		mq_names_free(nl);
		errno = saved;
		return -1;
	}
	return 0;
}

static int
names_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void
mq_names_sort(struct mq_names *nl)
{
	if (nl->n > 1)
		qsort(nl->v, nl->n, sizeof(*nl->v), names_cmp);
}

/* qsort's comparison of two names by strcmp. */
int
mq_names_cmp(const void *a, const void *b)
{
	return names_cmp(a, b);
}

/*
 * The names of a directory of sub-directories in order, ORDERED_CHUNK at a
 * time: those kept by keep and after `after` (NULL: from the first) by
 * cmp.  o->more tells that there are more after the last.
 */
#define ORDERED_CHUNK	1024

struct ordered {
	int	(*keep)(const char *);
	int	(*cmp)(const void *, const void *);
	const char *after;
	struct mq_names v;
	int	 more;
};

static void
ordered_cut(struct ordered *o)
{
	if (o->v.n > 1)
		qsort(o->v.v, o->v.n, sizeof(*o->v.v), o->cmp);
	while (o->v.n > ORDERED_CHUNK) {
		free(o->v.v[--o->v.n]);
		o->more = 1;
	}
}

static int
ordered_one(void *arg, int dirfd, const char *name)
{
	struct ordered *o = arg;

	(void)dirfd;
	if (!o->keep(name) ||
	    (o->after != NULL && o->cmp(&name, &o->after) <= 0))
		return 0;
	if (mq_names_add(&o->v, name) == -1)
		return -1;
	if (o->v.n == 2 * ORDERED_CHUNK)
		ordered_cut(o);
	return 0;
}

static int
ordered_read(int dirfd, struct ordered *o)
{
	int saved;

	o->v.v = NULL;
	o->v.n = o->v.cap = 0;
	o->more = 0;
	if (mq_dir_each(dirfd, DT_DIR, ordered_one, o) == -1) {
		saved = errno;
		mq_names_free(&o->v);
		errno = saved;
		return -1;
	}
	ordered_cut(o);
	return 0;
}

/*
 * As mq_dir_each for sub-directories, in cmp's order of their names, those
 * keep keeps, a chunk at a time so that memory stays flat whatever their
 * number.  Returns what fn returned that was not 0, or 0; -1 (errno) too
 * when a listing failed, with *unlisted set (fn failed otherwise).
 */
int
mq_dir_ordered(int dirfd, int (*keep)(const char *),
    int (*cmp)(const void *, const void *),
    int (*fn)(void *, int, const char *), void *arg, int *unlisted)
{
	struct ordered o = { keep, cmp, NULL, { NULL, 0, 0 }, 0 };
	char last[MQ_NAME_MAX];
	size_t i;
	int r = 0, saved;

	*unlisted = 0;
	do {
		if (ordered_read(dirfd, &o) == -1) {
			*unlisted = 1;
			return -1;
		}
		for (i = 0; i < o.v.n && r == 0; i++)
			r = fn(arg, dirfd, o.v.v[i]);
		if (o.v.n > 0)
			strlcpy(last, o.v.v[o.v.n - 1], sizeof(last));
		o.after = last;
		saved = errno;
		mq_names_free(&o.v);
		errno = saved;
	} while (r == 0 && o.more);
	return r;
}

void
mq_names_free(struct mq_names *nl)
{
	size_t i;

	for (i = 0; i < nl->n; i++)
		free(nl->v[i]);
	free(nl->v);
	nl->v = NULL;
	nl->n = nl->cap = 0;
}

/* A reader of fd; -1 (ENOMEM) when there is no memory for its buffer. */
int
mq_reader_init(struct mq_reader *r, int fd)
{
	r->fd = fd;
	r->len = r->off = 0;
	r->eof = 0;
	if ((r->buf = malloc(READ_CHUNK)) == NULL)
		return -1;
	return 0;
}

void
mq_reader_free(struct mq_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* True when the next read would not block: data is buffered or ready. */
int
mq_reader_pending(struct mq_reader *r)
{
	struct pollfd pfd;

	if (r->off < r->len || r->eof)
		return 1;
	pfd.fd = r->fd;
	pfd.events = POLLIN;
	return poll(&pfd, 1, 0) > 0;
}

static int
fill(struct mq_reader *r)
{
	ssize_t n;

	if (r->off < r->len || r->eof)
		return 0;
	do
		n = read(r->fd, r->buf, READ_CHUNK);
	while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;
	r->off = 0;
	r->len = n;
	if (n == 0)
		r->eof = 1;
	return 0;
}

/*
 * Streams one delimited record in pieces so that no record is held whole:
 * sets *p and *len to the next piece and *end when the delimiter closed
 * the record.  Returns 1 for a piece, 0 at end of input, -1 on error.
 */
int
mq_reader_chunk(struct mq_reader *r, int delim, const char **p, size_t *len,
    int *end)
{
	char *start, *hit;

	if (fill(r) == -1)
		return -1;
	if (r->eof)
		return 0;
	start = r->buf + r->off;
	hit = memchr(start, delim, r->len - r->off);
	*p = start;
	if (hit != NULL) {
		*len = hit - start;
		*end = 1;
		r->off += *len + 1;
	} else {
		*len = r->len - r->off;
		*end = 0;
		r->off = r->len;
	}
	return 1;
}

/*
 * A whole short record (a receipt or an ID).  Returns 1 with *out set,
 * 0 at end of input, -1 on error (E2BIG for an overlong record).
 */
int
mq_reader_record(struct mq_reader *r, int delim, char **out)
{
	static char rec[RECORD_MAX + 1];
	const char *p;
	size_t len, have = 0;
	int end = 0, rc, big = 0;

	while (!end) {
		if ((rc = mq_reader_chunk(r, delim, &p, &len, &end)) == -1)
			return -1;
		if (rc == 0) {
			if (have == 0 && !big)
				return 0;
			break;
		}
		if (have + len > RECORD_MAX)
			big = 1;
		else {
			memcpy(rec + have, p, len);
			have += len;
		}
	}
	if (big) {
		errno = E2BIG;
		return -1;
	}
	rec[have] = '\0';
	*out = rec;
	return 1;
}
