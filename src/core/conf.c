/*
 * conf.c: a spool's settings, the file conf in its root.
 *
 * Every tool reads it on each call, so it is one small file read with one
 * read(2), not something to scan.  It holds "key=value" lines for the keys
 * set to something else than their default, values exactly as they were
 * given, so that they print back as they were set.  It is replaced whole,
 * by one rename(2) of a synced file from tmp/ (tmp/ID,conf) followed by a
 * sync of the root: a reader sees the old settings or the new, never a
 * mix, and mq-conf says nothing was set before it is durable.  Writers
 * take an flock(2) on the spool root so that two of them setting
 * different keys do not lose one of the two.
 *
 * Keys this version does not know are kept and ignored, so that a spool
 * set up by a newer mq still works with this one; a known key with a
 * value that does not parse is an error, never a silent default.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

static const struct {
	const char *name;
	const char *def;
} keys[MQ_CONF_NKEYS] = {
	[MQ_CONF_MAX_ATTEMPTS] = { "max-attempts", "5" },
	[MQ_CONF_LEASE] = { "lease", "30" },
	[MQ_CONF_MAX_DEPTH] = { "max-depth", "0" },
	[MQ_CONF_OVERFLOW] = { "overflow", "reject" },
	[MQ_CONF_TTL] = { "ttl", "0" },
	[MQ_CONF_PAUSED] = { "paused", "no" },
	[MQ_CONF_DEDUP_WINDOW] = { "dedup-window", "0" },
	[MQ_CONF_LOG_SIZE] = { "log-size", "16M" },
	[MQ_CONF_LOG_AGE] = { "log-age", "7d" },
	[MQ_CONF_KEEP_OUTPUT] = { "keep-output", "0" },
	[MQ_CONF_ONCE_WINDOW] = { "once-window", "0" },
};

#define MAX_DEPTH_MAX	1000000000LL

const char *
mq_conf_name(int key)
{
	return keys[key].name;
}

int
mq_conf_key(const char *name, size_t len)
{
	int k;

	for (k = 0; k < MQ_CONF_NKEYS; k++)
		if (strlen(keys[k].name) == len &&
		    memcmp(keys[k].name, name, len) == 0)
			return k;
	return -1;
}

void
mq_conf_init(struct mq_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->max_attempts = MQ_DEFAULT_MAX;
	c->lease_ms = MQ_DEFAULT_LEASE_MS;
	c->log_size = MQ_LOG_SIZE;
	c->log_age_ms = MQ_LOG_AGE_MS;
}

/*
 * A size in bytes, with K, M or G for KiB, MiB or GiB: 0, or -1 with *why
 * set.
 */
static int
bytes(const char *s, uint64_t *n, const char **why)
{
	size_t digits = strspn(s, "0123456789");
	const char *units = "KMG", *u = units;
	uint64_t v = 0, mult = 1;
	size_t i;

	if (digits == 0 || (s[digits] != '\0' && (s[digits + 1] != '\0' ||
	    (u = strchr(units, s[digits])) == NULL))) {
		*why = "not a size (4096, 512K, 16M, 1G)";
		return -1;
	}
	if (s[digits] != '\0')
		for (i = 0; i <= (size_t)(u - units); i++)
			mult *= 1024;
	for (i = 0; i < digits; i++) {
		if (v > (MQ_LOG_SIZE_MAX - (uint64_t)(s[i] - '0')) / 10) {
			*why = "too large (the most is 1G)";
			return -1;
		}
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > MQ_LOG_SIZE_MAX / mult) {
		*why = "too large (the most is 1G)";
		return -1;
	}
	*n = v * mult;
	return 0;
}

/* A boolean's value: 1 (yes, true, on, 1), 0 (no, false, off, 0), or -1. */
static int
boolean(const char *s)
{
	static const char *const words[][2] = {
		{ "no", "yes" }, { "false", "true" }, { "off", "on" },
		{ "0", "1" }
	};
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(s, words[i][0]) == 0 || strcmp(s, words[i][1]) == 0)
			return strcmp(s, words[i][1]) == 0;
	return -1;
}

/*
 * What mq-conf writes for paused=value at now: a duration (not 1 or 0,
 * which are booleans) becomes the time the pause ends, rounded up to the
 * second, into buf; any other value is itself.  A file that held the
 * duration would restart it at every read.
 */
const char *
mq_conf_pause_until(const char *value, uint64_t now, char *buf, size_t size)
{
	const char *why;
	uint64_t ms;

	if (boolean(value) != -1 || mq_secs_parse(value, &ms, &why) == -1)
		return value;
	/* Paused for no time: not paused, not for up to a second. */
	if (ms == 0)
		return "no";
	mq_time_iso(buf, size, now + ms + 999);
	return buf;
}

static int
whole(const char *s, long long max, long long *n, const char **why)
{
	if (*s == '\0' || strspn(s, "0123456789") != strlen(s)) {
		*why = "not a whole number";
		return -1;
	}
	*n = strtonum(s, 0, max, why);
	return *why == NULL ? 0 : -1;
}

/*
 * Sets key to value, as given ("" for the default), after checking it.
 * On a bad value returns -1 with *why saying what is wrong, c unchanged.
 */
int
mq_conf_set(struct mq_conf *c, int key, const char *value, const char **why)
{
	const char *v = *value == '\0' ? keys[key].def : value;
	long long n = 0;
	uint64_t ms = 0;
	int isdef = 0;

	*why = NULL;
	if (strlen(value) >= sizeof(c->value[key])) {
		*why = "too long";
		return -1;
	}
	switch (key) {
	case MQ_CONF_MAX_ATTEMPTS:
		if (whole(v, MQ_ATTEMPTS_MAX, &n, why) == -1)
			return -1;
		if (n == 0) {
			*why = "too small (the least is 1)";
			return -1;
		}
		c->max_attempts = n;
		isdef = n == MQ_DEFAULT_MAX;
		break;
	case MQ_CONF_MAX_DEPTH:
		if (whole(v, MAX_DEPTH_MAX, &n, why) == -1)
			return -1;
		c->max_depth = n;
		isdef = n == 0;
		break;
	case MQ_CONF_LOG_SIZE:
		if (bytes(v, &ms, why) == -1)
			return -1;
		c->log_size = ms;
		isdef = ms == MQ_LOG_SIZE;
		break;
	case MQ_CONF_LOG_AGE:
	case MQ_CONF_KEEP_OUTPUT:
	case MQ_CONF_ONCE_WINDOW:
		if (mq_secs_parse(v, &ms, why) == -1)
			return -1;
		*(key == MQ_CONF_LOG_AGE ? &c->log_age_ms :
		    key == MQ_CONF_KEEP_OUTPUT ? &c->keep_output_ms :
		    &c->once_window_ms) = ms;
		isdef = ms == (key == MQ_CONF_LOG_AGE ? MQ_LOG_AGE_MS : 0);
		break;
	case MQ_CONF_LEASE:
	case MQ_CONF_TTL:
	case MQ_CONF_DEDUP_WINDOW:
		if (mq_secs_parse(v, &ms, why) == -1)
			return -1;
		if (key == MQ_CONF_LEASE && ms == 0) {
			*why = "too small (the least is 0.001)";
			return -1;
		}
		if (key == MQ_CONF_LEASE)
			c->lease_ms = ms;
		else if (key == MQ_CONF_TTL)
			c->ttl_ms = ms;
		else
			c->dedup_window_ms = ms;
		isdef = ms == (key == MQ_CONF_LEASE ? MQ_DEFAULT_LEASE_MS : 0);
		break;
	case MQ_CONF_OVERFLOW:
		if (strcmp(v, "reject") != 0 && strcmp(v, "drop-oldest") != 0) {
			*why = "not reject or drop-oldest";
			return -1;
		}
		c->drop_oldest = strcmp(v, "drop-oldest") == 0;
		isdef = !c->drop_oldest;
		break;
	case MQ_CONF_PAUSED:
		if ((n = boolean(v)) != -1) {
			c->paused = n;
			c->paused_until_ms = 0;
		} else if (mq_time_parse(v, strlen(v), &ms) == 0) {
			/* Over, it is as if never set: resumed by itself. */
			c->paused_until_ms = ms;
			c->paused = mq_now_ms() < ms;
		} else {
			/* A duration mq-conf did not turn into a time. */
			if (mq_secs_parse(v, &ms, why) == -1 &&
			    strcmp(*why, MQ_SECS_TOO_LARGE) == 0)
				return -1;
			*why = "not yes/no, true/false, on/off, 1/0, a "
			    "duration or a time (2026-12-05T08:00:00Z)";
			return -1;
		}
		isdef = !c->paused;
		break;
	}
	/* Set to its default (30.0 for 30 too), a key is as if never set. */
	if (isdef)
		value = "";
	strlcpy(c->value[key], value, sizeof(c->value[key]));
	return 0;
}

/* The value as it was set, or the default. */
const char *
mq_conf_value(const struct mq_conf *c, int key)
{
	return c->value[key][0] != '\0' ? c->value[key] : keys[key].def;
}

/* 1 when key was set to something else than its default. */
int
mq_conf_isset(const struct mq_conf *c, int key)
{
	return c->value[key][0] != '\0';
}

/*
 * Parses the text of a conf file.  Lines of unknown keys are kept in
 * c->other, to be written back; blank lines and lines starting with # are
 * comments.  On a bad line returns -1 with errno EINVAL, *line its number
 * and *why the cause.
 */
static int
parse(struct mq_conf *c, char *text, int *line, const char **why)
{
	char *p, *nl, *eq;
	size_t olen = 0;
	int k;

	*line = 0;
	for (p = text; *p != '\0'; p = nl) {
		++*line;
		if ((nl = strchr(p, '\n')) != NULL)
			*nl++ = '\0';
		else
			nl = p + strlen(p);
		if (*p == '\0' || *p == '#')
			continue;
		if ((eq = strchr(p, '=')) == NULL) {
			*why = "not key=value";
			goto bad;
		}
		/* "max-depth = 5" would be an unknown key, silently ignored. */
		if (strcspn(p, " \t") < (size_t)(eq - p)) {
			*why = "a blank in the key (key=value, no blanks)";
			goto bad;
		}
		if ((k = mq_conf_key(p, eq - p)) == -1) {
			if (olen + strlen(p) + 2 > sizeof(c->other)) {
				*why = "too many unknown keys";
				goto bad;
			}
			olen += snprintf(c->other + olen, sizeof(c->other) -
			    olen, "%s\n", p);
			continue;
		}
		if (mq_conf_set(c, k, eq + 1, why) == -1)
			goto bad;
	}
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

/*
 * Reads the settings of sp into c (the defaults where there is no conf).
 * On a conf that does not parse returns -1 with errno EINVAL, *line and
 * *why saying where and what.
 */
int
mq_conf_read(struct mq_spool *sp, struct mq_conf *c, int *line,
    const char **why)
{
	char buf[MQ_CONF_MAX + 1];
	ssize_t n;
	size_t len = 0;
	int fd, saved;

	mq_conf_init(c);
	*line = 0;
	*why = NULL;
	if ((fd = openat(sp->fd, MQ_CONF, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC | O_NONBLOCK)) == -1)
		return errno == ENOENT ? 0 : -1;
	while (len < sizeof(buf) - 1 &&
	    (n = read(fd, buf + len, sizeof(buf) - 1 - len)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			saved = errno;
			close(fd);
			errno = saved;
			return -1;
		}
		len += n;
	}
	close(fd);
	if (len == sizeof(buf) - 1 || memchr(buf, '\0', len) != NULL) {
		*why = len == sizeof(buf) - 1 ? "too large" : "not text";
		errno = EINVAL;
		return -1;
	}
	buf[len] = '\0';
	return parse(c, buf, line, why);
}

/*
 * For a program that runs for long (mq-relay): reads the settings of sp
 * into c again when conf changed since *st said (or never was read), else
 * leaves c as it is.  The stamp is taken before the read, so that a
 * change made while it is read is read next time.  0 (read or unchanged),
 * or -1 with c kept and the cause in errno, *line and *why as
 * mq_conf_read gives them (*why NULL: errno's); a conf that does not
 * parse fails once, not at every call, the settings before it kept until
 * it changes again (the first read must work).
 */
/* conf's stamp now (one fstatat): 0, or -1 with errno. */
static int
stamp_take(struct mq_spool *sp, struct mq_conf_stamp *now)
{
	struct stat sb;

	memset(now, 0, sizeof(*now));
	now->seen = 1;
	if (fstatat(sp->fd, MQ_CONF, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
		now->dev = sb.st_dev;
		now->ino = sb.st_ino;
		now->size = sb.st_size;
		now->mtime = sb.st_mtim;
		now->ctime = sb.st_ctim;
	} else if (errno != ENOENT)
		return -1;
	return 0;
}

static int
stamp_same(const struct mq_conf_stamp *a, const struct mq_conf_stamp *b)
{
	return a->seen && b->seen && a->dev == b->dev && a->ino == b->ino &&
	    a->size == b->size &&
	    a->mtime.tv_sec == b->mtime.tv_sec &&
	    a->mtime.tv_nsec == b->mtime.tv_nsec &&
	    a->ctime.tv_sec == b->ctime.tv_sec &&
	    a->ctime.tv_nsec == b->ctime.tv_nsec;
}

static int
conf_refresh(struct mq_spool *sp, struct mq_conf *c,
    struct mq_conf_stamp *st, int *line, const char **why)
{
	struct mq_conf got;
	struct mq_conf_stamp now;

	*line = 0;
	*why = NULL;
	if (stamp_take(sp, &now) == -1)
		return -1;
	if (stamp_same(&now, st)) {
		/* A pause for a time ends by itself, conf unchanged. */
		if (c->paused && c->paused_until_ms != 0 &&
		    mq_now_ms() >= c->paused_until_ms) {
			c->paused = 0;
			c->value[MQ_CONF_PAUSED][0] = '\0';
		}
		return 0;
	}
	if (mq_conf_read(sp, &got, line, why) == -1) {
		/* Failed once: not again until it changes. */
		if (st->seen)
			*st = now;
		return -1;
	}
	*c = got;
	*st = now;
	return 0;
}

/*
 * Reads the spool's settings into sp->conf, what the core's rules follow
 * (the reaper, the enqueue), when they changed since they were last read
 * (conf_refresh).  On failure (*line, *why: as mq_conf_read) sp->conf
 * keeps what it had: the settings read before, or the defaults.
 */
int
mq_settings_read(struct mq_spool *sp, int *line, const char **why)
{
	if (!sp->conf_ready) {
		mq_conf_init(&sp->conf);
		sp->conf_ready = 1;
	}
	return conf_refresh(sp, &sp->conf, &sp->conf_stamp, line, why);
}

/*
 * 1 when conf changed since the settings were last read into sp->conf (a
 * pause set, say), 0 when not: one fstatat, no read.  A claim asks before
 * each lease it makes (claim.c), so that what mq-conf set holds from the
 * moment it returned.  Settings never read are read first, by the caller.
 * A stat that fails is no change: the read that follows would fail too.
 */
int
mq_settings_changed(struct mq_spool *sp)
{
	struct mq_conf_stamp now;

	if (!sp->conf_stamp.seen)
		return 0;
	return stamp_take(sp, &now) == 0 && !stamp_same(&now, &sp->conf_stamp);
}

/*
 * The spool's settings: as the caller last read them (mq_settings_read),
 * or, if it never did, read now, the defaults if they cannot be (a tool
 * that must tell a bad conf reads it first).
 */
const struct mq_conf *
mq_settings(struct mq_spool *sp)
{
	const char *why;
	int line;

	if (!sp->conf_ready)
		(void)mq_settings_read(sp, &line, &why);
	return &sp->conf;
}

/* The text of c, as mq_conf_read reads it. */
static int
format(const struct mq_conf *c, char *buf, size_t size)
{
	size_t len = 0;
	int k, n;

	for (k = 0; k < MQ_CONF_NKEYS; k++) {
		if (!mq_conf_isset(c, k))
			continue;
		n = snprintf(buf + len, size - len, "%s=%s\n", keys[k].name,
		    c->value[k]);
		if (n < 0 || (size_t)n >= size - len)
			goto big;
		len += n;
	}
	if (strlcpy(buf + len, c->other, size - len) >= size - len)
		goto big;
	return len + strlen(c->other);
big:
	errno = EFBIG;
	return -1;
}

/*
 * Takes the lock that mq_conf_write's callers hold from their read of the
 * settings to their write, and reads them.  mq_conf_unlock lets it go.
 */
int
mq_conf_lock(struct mq_spool *sp)
{
	while (flock(sp->fd, LOCK_EX) == -1)
		if (errno != EINTR)
			return -1;
	return 0;
}

void
mq_conf_unlock(struct mq_spool *sp)
{
	flock(sp->fd, LOCK_UN);
}

/*
 * Replaces the settings of sp by c, durably, then rings the doorbell so
 * that waiters (a paused worker, a sender waiting for room) look again.
 * The caller holds mq_conf_lock.  *changed says, also on failure, whether
 * the new settings are in place (only their sync failed).
 */
int
mq_conf_write(struct mq_spool *sp, const struct mq_conf *c, int *changed)
{
	struct mq_tmpfile tf;
	char text[MQ_CONF_MAX], id[MQ_ID_LEN + 1], name[MQ_NAME_MAX];
	int len;

	*changed = 0;
	if ((len = format(c, text, sizeof(text))) == -1)
		return -1;
	if (mq_spool_need(sp, 0) == -1)
		return -1;
	mq_id_new(id);
	snprintf(name, sizeof(name), "%s%s", id, MQ_CONF_TMP);
	if (mq_tmp_create(&tf, sp, name) == -1)
		return -1;
	if (mq_tmp_write(&tf, text, len) == -1 ||
	    mq_tmp_close(&tf, MQ_TMP_SYNC_NOW) == -1 ||
	    mq_tmp_commit(&tf, sp->fd, MQ_CONF) == -1) {
		mq_tmp_abort(&tf);
		return -1;
	}
	*changed = 1;
	(void)mq_ring(sp);
	if (mq_fsync_dir(sp->fd) == -1)
		return -1;
	return 0;
}
