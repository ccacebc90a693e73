/*
 * log.c: the spool's log, a record for each state change a tool makes
 * and each job a worker runs (mq-log(1); the format: mq-spool(5)).
 *
 * The file "log" in the spool root, a line a record:
 *
 *	TIME TAB KIND TAB ID TAB tool=PROG TAB pid=N TAB uid=N [TAB KEY=VALUE]...
 *
 * TIME is UTC, ISO 8601 to the millisecond; ID is "-" where no message is
 * concerned; a VALUE has its backslashes, tabs, newlines and other control
 * bytes escaped (\\, \t, \n, \xHH), so that a record is one line.
 *
 * Records are kept in the process, a buffer per spool, and appended with
 * one write(2) to a file opened O_APPEND: concurrent writers share the
 * file with no lock, each write landing whole after the others (one
 * write of a buffer, one inode lock).  They are written when the buffer
 * fills, before a process waits (mq_log_flush) and at exit: what a
 * process killed before then made is not in the log (its counters have
 * it: count.c).  The log is not synced: after a power
 * cut it may end early, never in the middle of a record that was written
 * whole.
 *
 * Bounded with no lock either: the writer whose append takes log past
 * half the spool's log-size renames it to log.1 (over the older one),
 * once, under a non-blocking flock(2) of the file and only while "log"
 * is still that file; a writer that opened the old one meanwhile appends
 * to log.1, which is read too.  mq-sweep removes log.1 once older than
 * log-age (mq_log_trim).
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define SLOTS		4	/* spools with records pending (mq-send's fan-out) */
#define BUF_SIZE	32768
#define VALUE_MAX	512	/* bytes of a value kept (a reason, a line) */
/* The longest record: the fixed fields and a few escaped values. */
#define RECORD_MAX	(512 + 4 * (VALUE_MAX * 4 + 64))

const char *const mq_cause_word[MQ_CAUSES] = {
	[MQ_CAUSE_ATTEMPTS] = "attempts",
	[MQ_CAUSE_REJECTED] = "rejected",
	[MQ_CAUSE_TTL] = "ttl",
	[MQ_CAUSE_MAXLEN] = "maxlen",
};

/*
 * A spool's pending records.  fd is its root, a descriptor of the log's
 * own (a duplicate of sp->fd), so that the records of a spool closed
 * before they are written still go to that spool; the spool is told by
 * its root's device and inode.
 */
struct pending {
	int	 used;
	int	 fd;
	dev_t	 dev;
	ino_t	 ino;
	mode_t	 fmode;
	uint64_t bound;
	size_t	 len;
	char	 buf[BUF_SIZE];
};

static struct pending slots[SLOTS];
static struct pending *open_rec;	/* the record being written */
static int registered;
static char prefix[96];		/* "\ttool=PROG\tpid=N\tuid=N" */
static size_t prefix_len;

static void
rotate(struct pending *p, int fd, off_t end)
{
	struct stat mine, named;

	if ((uint64_t)end <= p->bound / 2 || flock(fd, LOCK_EX | LOCK_NB) == -1)
		return;
	/* Another writer may have rotated it first: then "log" is not ours. */
	if (fstat(fd, &mine) == 0 && fstatat(p->fd, MQ_LOG, &named,
	    AT_SYMLINK_NOFOLLOW) == 0 && mine.st_dev == named.st_dev &&
	    mine.st_ino == named.st_ino)
		(void)renameat(p->fd, MQ_LOG, p->fd, MQ_LOG_OLD);
	flock(fd, LOCK_UN);
}

/* Best effort: the log must never be a reason for a transition to fail. */
static void
flush(struct pending *p)
{
	size_t off = 0;
	ssize_t w;
	off_t end;
	int fd, saved = errno;

	if (p->len == 0)
		return;
	fd = openat(p->fd, MQ_LOG, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, p->fmode);
	if (fd != -1) {
		while (off < p->len && ((w = write(fd, p->buf + off,
		    p->len - off)) > 0 || (w == -1 && errno == EINTR)))
			if (w > 0)
				off += (size_t)w;
		if ((end = lseek(fd, 0, SEEK_CUR)) != -1)
			rotate(p, fd, end);
		close(fd);
	}
	p->len = 0;
	errno = saved;
}

void
mq_log_flush(void)
{
	size_t i;

	for (i = 0; i < SLOTS; i++)
		if (slots[i].len > 0)
			flush(&slots[i]);
}

static void
at_exit(void)
{
	mq_log_flush();
}

static struct pending *
slot(struct mq_spool *sp)
{
	struct pending *p, *free = NULL;
	size_t i;

	for (i = 0; i < SLOTS; i++) {
		p = &slots[i];
		if (p->used && p->dev == sp->dev && p->ino == sp->ino)
			return p;
		if ((!p->used || p->len == 0) && free == NULL)
			free = p;
	}
	if (free == NULL) {
		free = &slots[0];
		flush(free);
	}
	if (free->used)
		close(free->fd);
	free->used = 0;
	if ((free->fd = fcntl(sp->fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return NULL;
	free->used = 1;
	free->dev = sp->dev;
	free->ino = sp->ino;
	free->fmode = sp->fmode;
	return free;
}

static void
put(struct pending *p, const char *s, size_t n)
{
	if (n > sizeof(p->buf) - p->len)
		n = sizeof(p->buf) - p->len;
	memcpy(p->buf + p->len, s, n);
	p->len += n;
}

/*
 * TIME, to the millisecond, at q (MQ_LOG_TIME_LEN bytes); the date and
 * second formatted once a second.
 */
static char *
put_time(char *q, uint64_t ms)
{
	static time_t last = -1;
	static char day[32] = "1970-01-01T00:00:00";
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (t != last && gmtime_r(&t, &tm) != NULL) {
		strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
		last = t;
	}
	memcpy(q, day, 19);
	q[19] = '.';
	q[20] = (char)('0' + ms % 1000 / 100);
	q[21] = (char)('0' + ms % 100 / 10);
	q[22] = (char)('0' + ms % 10);
	q[23] = 'Z';
	return q + 24;
}

/*
 * Starts a record of kind, for the message id (NULL: none) of sp; its
 * fields follow (mq_log_str, mq_log_num), mq_log_end ends it.
 */
void
mq_log_begin(struct mq_spool *sp, const char *kind, const char *id)
{
	const struct mq_conf *c;
	struct pending *p;
	size_t klen, ilen;
	char *q;

	if (!registered) {
		registered = 1;
		atexit(at_exit);
	}
	/* Once: no program of mq forks and goes on with the spool. */
	if (prefix_len == 0)
		prefix_len = (size_t)snprintf(prefix, sizeof(prefix),
		    "\ttool=%.32s\tpid=%ld\tuid=%ld", getprogname(),
		    (long)getpid(), (long)getuid());
	open_rec = NULL;
	/*
	 * log-size=0: no log.  The settings are read if the tool has not
	 * read them yet (mq-ack, mq-rm): else it would log all the same.
	 */
	c = mq_settings(sp);
	if (c->log_size == 0)
		return;
	if ((p = slot(sp)) == NULL)
		return;
	p->bound = c->log_size;
	if (sizeof(p->buf) - p->len < RECORD_MAX)
		flush(p);
	open_rec = p;
	/*
	 * Written in place, with no bound checked but this one: a record
	 * begins with RECORD_MAX bytes free, more than these fields take.
	 */
	klen = strnlen(kind, 16);
	ilen = id != NULL ? strnlen(id, MQ_NAME_MAX) : 1;
	q = put_time(p->buf + p->len, mq_now_ms());
	*q++ = '\t';
	memcpy(q, kind, klen);
	q += klen;
	*q++ = '\t';
	memcpy(q, id != NULL ? id : "-", ilen);
	q += ilen;
	memcpy(q, prefix, prefix_len);
	p->len = (size_t)(q + prefix_len - p->buf);
}

/* TAB key = */
static void
put_key(struct pending *p, const char *key)
{
	put(p, "\t", 1);
	put(p, key, strlen(key));
	put(p, "=", 1);
}

void
mq_log_str(const char *key, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	struct pending *p = open_rec;
	char esc[4];
	size_t i, from;
	unsigned char c;

	if (p == NULL)
		return;
	put_key(p, key);
	if (len > VALUE_MAX)
		len = VALUE_MAX;
	/* Runs of plain bytes at once, each other byte as its escape. */
	for (i = from = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x20 && c != 0x7f && c != '\\')
			continue;
		put(p, s + from, i - from);
		from = i + 1;
		esc[0] = '\\';
		if (c == '\\' || c == '\t' || c == '\n') {
			esc[1] = c == '\\' ? '\\' : c == '\t' ? 't' : 'n';
			put(p, esc, 2);
		} else {
			esc[1] = 'x';
			esc[2] = hex[c >> 4];
			esc[3] = hex[c & 15];
			put(p, esc, 4);
		}
	}
	put(p, s + from, len - from);
}

/*
 * TAB key = the number.  In decimal by hand, as the time's milliseconds
 * are: a record is made for each message sent, claimed and acked, and
 * snprintf(3) would be most of what one costs.
 */
void
mq_log_num(const char *key, uint64_t v)
{
	struct pending *p = open_rec;
	size_t klen;
	char d[20], *q;
	size_t n = 0;

	if (p == NULL)
		return;
	klen = strlen(key);
	do
		d[sizeof(d) - ++n] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (klen + n + 2 > sizeof(p->buf) - p->len)
		return;
	q = p->buf + p->len;
	*q++ = '\t';
	memcpy(q, key, klen);
	q += klen;
	*q++ = '=';
	memcpy(q, d + sizeof(d) - n, n);
	p->len = (size_t)(q + n - p->buf);
}

void
mq_log_end(void)
{
	struct pending *p = open_rec;

	if (p == NULL)
		return;
	if (p->len == sizeof(p->buf))
		p->len--;	/* cannot happen: RECORD_MAX is kept free */
	put(p, "\n", 1);
	open_rec = NULL;
}

/*
 * mq-sweep's part: log.1 goes once its last record is older than age
 * (ms; its mtime says when that was written), and log becomes log.1 once
 * its first record is (its birth is not known everywhere: the time of
 * its first line is).  0, or -1 with errno.
 */
int
mq_log_trim(struct mq_spool *sp, uint64_t age_ms)
{
	struct stat st;
	uint64_t now = mq_now_ms(), first;
	char head[32];
	ssize_t n;
	int fd;

	if (age_ms == 0)
		return 0;
	if (fstatat(sp->fd, MQ_LOG_OLD, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (uint64_t)st.st_mtime * 1000 + age_ms < now &&
	    unlinkat(sp->fd, MQ_LOG_OLD, 0) == -1 && errno != ENOENT)
		return -1;
	fd = openat(sp->fd, MQ_LOG, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	n = pread(fd, head, sizeof(head) - 1, 0);
	close(fd);
	if (n <= 0)
		return 0;
	if (n >= 24 && mq_time_parse(head, 24, &first) == 0 && first + age_ms < now &&
	    fstatat(sp->fd, MQ_LOG_OLD, &st, AT_SYMLINK_NOFOLLOW) == -1 &&
	    errno == ENOENT && renameat(sp->fd, MQ_LOG, sp->fd, MQ_LOG_OLD) ==
	    -1 && errno != ENOENT)
		return -1;
	return 0;
}

/*
 * Whether fd is the file named log (old: log.1); not after a rotation
 * renamed it (or removed it).
 */
int
mq_log_is(struct mq_spool *sp, int fd, int old)
{
	struct stat a, b;

	if (fstat(fd, &a) == -1 || fstatat(sp->fd, old ? MQ_LOG_OLD : MQ_LOG,
	    &b, AT_SYMLINK_NOFOLLOW) == -1)
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * Opens log.1 and log for reading (fds[0], fds[1]; -1 for one there is
 * not), as they were at one moment: opened again if a rotation came
 * between the two opens, which would leave the log it renamed unread.
 * 0, or -1 with errno.
 */
int
mq_log_open_both(struct mq_spool *sp, int fds[2])
{
	struct stat st;
	int i, saved;

	for (i = 0; i < MQ_RETRIES; i++) {
		fds[0] = mq_log_open(sp, 1);
		if (fds[0] == -1 && errno != ENOENT)
			return -1;
		fds[1] = mq_log_open(sp, 0);
		if (fds[1] == -1 && errno != ENOENT) {
			saved = errno;
			mq_closefd(&fds[0]);
			errno = saved;
			return -1;
		}
		if (fds[0] != -1 ? mq_log_is(sp, fds[0], 1) :
		    fstatat(sp->fd, MQ_LOG_OLD, &st, AT_SYMLINK_NOFOLLOW) == -1)
			return 0;
		mq_closefd(&fds[0]);
		mq_closefd(&fds[1]);
	}
	errno = EAGAIN;
	return -1;
}

/*
 * Opens log.1 (old) or log for reading: the fd, or -1 with errno (ENOENT:
 * there is none).
 */
int
mq_log_open(struct mq_spool *sp, int old)
{
	return openat(sp->fd, old ? MQ_LOG_OLD : MQ_LOG, O_RDONLY |
	    O_NOFOLLOW | O_CLOEXEC);
}
