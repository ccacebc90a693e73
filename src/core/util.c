/*
 * util.c: small helpers shared by the core and the tools: directory fsync,
 * streaming copy, directory listing, the '\n'/'\0' record reader, escaping
 * for listings, and the x-wrappers that die on exhausted memory.
 */
/*
 * compat.h's Linux bodies (syncfs, renameat2, pipe2) are compiled here, once,
 * and need glibc's GNU declarations; other systems ignore this macro.
 */
#define _GNU_SOURCE
#define MQ_COMPAT_BODIES
#include <sys/stat.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <poll.h>
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

static void
names_add(struct mq_names *nl, const char *name)
{
	if (nl->n == nl->cap) {
		nl->cap = nl->cap ? nl->cap * 2 : 64;
		nl->v = xreallocarray(nl->v, nl->cap, sizeof(*nl->v));
	}
	nl->v[nl->n++] = xstrdup(name);
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
		names_add(c->nl, name);
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

	nl->v = NULL;
	nl->n = nl->cap = 0;
	if (mq_dir_each(dirfd, type, collect_one, &c) == -1) {
		mq_names_free(nl);
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

void
mq_reader_init(struct mq_reader *r, int fd)
{
	r->fd = fd;
	r->buf = xmalloc(READ_CHUNK);
	r->len = r->off = 0;
	r->eof = 0;
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

/* Length of a valid UTF-8 sequence at p, or 0 if it is not one. */
static size_t
utf8_len(const unsigned char *p, size_t left, unsigned long *cp)
{
	size_t n, i;
	unsigned long c;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		c = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		c = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		c = p[0] & 0x07;
	} else
		return 0;
	if (n > left)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 ||
	    c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* Whether p is the start of a UTF-8 sequence cut short by its end. */
static int
utf8_cut(const unsigned char *p, size_t left)
{
	size_t n, i;

	n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 && p[0] <= 0xef ?
	    3 : p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : 0;
	if (n <= left)
		return 0;
	for (i = 1; i < left; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return 1;
}

/*
 * Safe on a terminal: controls (C0, DEL, C1), the backslash and bytes that
 * are not UTF-8 are written as escapes; lines keeps newlines and tabs as
 * they are (a body shown whole), else one item stays one line.  Returns
 * how many bytes at the end were left unwritten: with more, the start of
 * a UTF-8 sequence that may end in the next part of a stream.
 */
static size_t
escape(FILE *fp, const char *s, size_t len, int lines, int more)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned long cp;
	size_t i, n;

	for (i = 0; i < len; i += n) {
		n = utf8_len(p + i, len - i, &cp);
		if (n == 0 && more && utf8_cut(p + i, len - i))
			return len - i;
		if (n == 0 || cp < 0x20 || (cp >= 0x7f && cp < 0xa0) ||
		    cp == '\\') {
			n = 1;
			if (lines && (p[i] == '\n' || p[i] == '\t')) {
				putc(p[i], fp);
				continue;
			}
			switch (p[i]) {
			case '\n':
				fputs("\\n", fp);
				break;
			case '\t':
				fputs("\\t", fp);
				break;
			case '\r':
				fputs("\\r", fp);
				break;
			case '\\':
				fputs("\\\\", fp);
				break;
			default:
				fprintf(fp, "\\x%02x", p[i]);
			}
		} else
			fwrite(p + i, 1, n, fp);
	}
	return 0;
}

/* One line per item, safe on a terminal (see escape). */
void
mq_escape(FILE *fp, const char *s, size_t len)
{
	(void)escape(fp, s, len, 0, 0);
}

/*
 * The file from, read to its end, written to fp escaped but for its
 * newlines and tabs: a body shown on a terminal, which no escape sequence
 * of it can take over.  Memory does not grow with the file.
 */
int
mq_copy_escaped(int from, FILE *fp)
{
	char buf[READ_CHUNK + 4];
	size_t have = 0, left;
	ssize_t n;

	for (;;) {
		n = read(from, buf + have, READ_CHUNK);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		have += n;
		left = escape(fp, buf, have, 1, n > 0);
		if (n == 0)
			return ferror(fp) ? -1 : 0;
		memmove(buf, buf + have - left, left);
		have = left;
	}
}

/* A JSON string; a byte that is not UTF-8 becomes U+FFFD. */
void
mq_json_string(FILE *fp, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned long cp;
	size_t i, n;

	putc('"', fp);
	for (i = 0; i < len; i += n) {
		n = utf8_len(p + i, len - i, &cp);
		if (n == 0) {
			n = 1;
			fputs("\\ufffd", fp);
		} else if (cp == '"' || cp == '\\') {
			putc('\\', fp);
			putc((int)cp, fp);
		} else if (cp == '\n')
			fputs("\\n", fp);
		else if (cp == '\t')
			fputs("\\t", fp);
		else if (cp == '\r')
			fputs("\\r", fp);
		else if (cp < 0x20 || cp == 0x7f)
			fprintf(fp, "\\u%04lx", cp);
		else
			fwrite(p + i, 1, n, fp);
	}
	putc('"', fp);
}

/*
 * An optional option-argument in seconds: attached (-w5), else the next
 * word when it begins with a digit (-w 5), which getopt is then told to
 * skip.  Such a word is never an operand (a receipt is absolute, a command
 * follows --), so a mistyped number (-w 5s) is reported as one by xsecs
 * instead of as a stray operand.
 */
const char *
mq_optional_secs(const char *attached, int argc, char *argv[])
{
	const char *next;

	if (attached != NULL)
		return attached;
	if (optind >= argc)
		return NULL;
	next = argv[optind];
	if (*next < '0' || *next > '9')
		return NULL;
	optind++;
	return next;
}

/*
 * Seconds for option -flag, in ms; a bad value is a usage error.  With
 * positive, zero is refused too.
 */
uint64_t
xsecs(const char *opt, const char *arg, int positive)
{
	const char *errstr;
	uint64_t ms;

	if (mq_secs_parse(arg, &ms, &errstr) == -1)
		errx(MQ_EX_USAGE, "%s %s: %s", opt, arg, errstr);
	if (positive && ms == 0)
		errx(MQ_EX_USAGE, "%s %s: too small (the least is 0.001)", opt,
		    arg);
	return ms;
}

int
xnumber(const char *opt, const char *arg, long long min, long long max)
{
	const char *errstr;
	long long n;

	/* Digits only: strtonum would take a sign and leading blanks too. */
	if (*arg == '\0' || strspn(arg, "0123456789") != strlen(arg))
		errx(MQ_EX_USAGE, "%s %s: invalid", opt, arg);
	n = strtonum(arg, min, max, &errstr);
	if (errstr != NULL)
		errx(MQ_EX_USAGE, "%s %s: %s", opt, arg, errstr);
	return (int)n;
}

void
mq_version(void)
{
	printf("%s %s\n", getprogname(), MQ_VERSION);
}

/* The usage line(s) of a tool on stderr, for a call it cannot make sense of. */
void __dead
mq_usage(const char *usage)
{
	fputs(usage, stderr);
	exit(MQ_EX_USAGE);
}

/*
 * The options every tool takes alike, as the default: of its getopt
 * switch: -h (--help) prints the usage and the help on stdout, -V
 * (--version) the version, each exit 0; any other is a usage error.
 */
void __dead
mq_common_opt(int ch, const char *usage, const char *help)
{
	switch (ch) {
	case 'h':
		fputs(usage, stdout);
		fputs(help, stdout);
		exit(MQ_EX_OK);
	case 'V':
		mq_version();
		exit(MQ_EX_OK);
	default:
		mq_usage(usage);
	}
}

/* A failed write of an ID or receipt must not end in exit 0 (sbase). */
void
mq_stdout_close(void)
{
	if (fflush(stdout) == EOF || ferror(stdout))
		err(MQ_EX_SYS, "stdout");
}

void *
xmalloc(size_t n)
{
	void *p;

	if ((p = malloc(n)) == NULL)
		err(MQ_EX_SYS, NULL);
	return p;
}

void *
xreallocarray(void *p, size_t n, size_t size)
{
	if ((p = reallocarray(p, n, size)) == NULL)
		err(MQ_EX_SYS, NULL);
	return p;
}

char *
xstrdup(const char *s)
{
	char *p;

	if ((p = strdup(s)) == NULL)
		err(MQ_EX_SYS, NULL);
	return p;
}
