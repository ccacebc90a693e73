/*
 * cli.c: what every program shares and the core does not do: it speaks
 * to a person and may exit.  The options every tool takes alike (-h, -V,
 * a bad one: mq_common_opt), seconds and numbers of options, memory or a
 * clear death (the x-allocators), the spool of -d opened or a clear
 * death, the settings' errors said, stdout checked at the end; the IDs an
 * operator names, read and looked for (a prefix for the one it begins);
 * and what a listing writes: text escaped for a terminal, JSON strings,
 * a message's deaths as JSON; ages and rates for people (mq-stat,
 * mq-top), a change of the settings logged (mq-conf, mq-top); a lease's
 * holder for people and as JSON.  Linked into every program
 * (src/tools, src/relay), never into libmq.a.
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define READ_CHUNK	65536

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

/*
 * Allocation for the tools, which have nothing to do without the memory
 * but exit (signify's x-helpers); the core returns ENOMEM instead.
 */
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
 * An option spelled as before a rename, whose letter now means one thing
 * in every tool: refused, naming the new spelling, rather than read with
 * its old meaning or a new one the caller did not intend.
 */
void __dead
mq_renamed(const char *old, const char *now)
{
	errx(MQ_EX_USAGE, "%s is now %s", old, now);
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

/* An age for people: 45s, 3m12s, 2h05m, 3d04h; "-" for UINT64_MAX. */
const char *
mq_human_age(char *buf, size_t size, uint64_t then, uint64_t now)
{
	uint64_t s;

	if (then == UINT64_MAX)
		return "-";
	s = then >= now ? 0 : (now - then) / 1000;
	if (s < 60)
		snprintf(buf, size, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, size, "%" PRIu64 "m%02" PRIu64 "s", s / 60,
		    s % 60);
	else if (s < 86400)
		snprintf(buf, size, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
		    s % 3600 / 60);
	else
		snprintf(buf, size, "%" PRIu64 "d%02" PRIu64 "h", s / 86400,
		    s % 86400 / 3600);
	return buf;
}

/* A counter's value (count.c), or with MQ_COUNTED_DEAD every death's sum. */
uint64_t
mq_counted(const uint64_t *v, int count)
{
	uint64_t sum = 0;
	int c;

	if (count != MQ_COUNTED_DEAD)
		return v[count];
	for (c = 0; c < MQ_CAUSES; c++)
		sum += v[mq_count_dead(c)];
	return sum;
}

/*
 * Per second, of a counter between two readings of the counters (then at
 * then_ms, now at now_ms); -1 when there is no reading before.  A counter
 * that went back (a spool made anew) is 0.
 */
double
mq_rate(const uint64_t *now, uint64_t now_ms, const uint64_t *then,
    uint64_t then_ms, int count)
{
	uint64_t a = mq_counted(now, count), b = mq_counted(then, count);

	if (then_ms == 0 || now_ms <= then_ms)
		return -1;
	return a < b ? 0.0 : (double)(a - b) * 1000 / (now_ms - then_ms);
}

/*
 * A change of the settings in the spool's log (mq-log): what was set,
 * what it was (was, each key's value before), and by whom (a name, as an
 * operator reads it; the uid where there is none).
 */
void
mq_conf_logged(struct mq_spool *sp, const struct mq_conf *c,
    char was[][sizeof(c->value[0])])
{
	struct passwd *pw = getpwuid(getuid());
	char set[MQ_CONF_NKEYS * 80], old[MQ_CONF_NKEYS * 80], uid[24];
	size_t sn = 0, on = 0;
	int k;

	set[0] = old[0] = '\0';
	for (k = 0; k < MQ_CONF_NKEYS; k++) {
		if (strcmp(was[k], mq_conf_value(c, k)) == 0)
			continue;
		sn += snprintf(set + sn, sizeof(set) - sn, "%s%s=%s",
		    sn > 0 ? " " : "", mq_conf_name(k), mq_conf_value(c, k));
		on += snprintf(old + on, sizeof(old) - on, "%s%s=%s",
		    on > 0 ? " " : "", mq_conf_name(k), was[k]);
	}
	if (sn == 0)
		return;
	snprintf(uid, sizeof(uid), "%ld", (long)getuid());
	mq_log_begin(sp, "conf", NULL);
	mq_log_str("user", pw != NULL ? pw->pw_name : uid,
	    strlen(pw != NULL ? pw->pw_name : uid));
	mq_log_str("set", set, strlen(set));
	mq_log_str("was", old, strlen(old));
	mq_log_end();
}

/* Says on stderr why mq_conf_read failed: where the file is wrong. */
void
mq_conf_warn(const struct mq_spool *sp, int line, const char *why)
{
	if (why != NULL && line > 0)
		warnx("%s/%s: line %d: %s", sp->path, MQ_CONF, line, why);
	else if (why != NULL)
		warnx("%s/%s: %s", sp->path, MQ_CONF, why);
	else
		warn("%s/%s", sp->path, MQ_CONF);
}

/* For the tools: reads the settings or dies saying where they are wrong. */
void
mq_conf_xread(struct mq_spool *sp, struct mq_conf *c)
{
	const char *why;
	int line;

	if (mq_conf_read(sp, c, &line, &why) == 0)
		return;
	mq_conf_warn(sp, line, why);
	exit(MQ_EX_SYS);
}

/*
 * For the tools: reads the spool's settings into the handle (sp->conf,
 * what the core follows) or dies saying where they are wrong.
 */
const struct mq_conf *
mq_settings_xread(struct mq_spool *sp)
{
	if (mq_settings_reread(sp) == -1)
		exit(MQ_EX_SYS);
	return &sp->conf;
}

/*
 * For a tool that runs on: reads the spool's settings again when they
 * changed (mq_settings_read), its failure said on stderr (once: see
 * mq_settings_read), the settings before kept.
 */
int
mq_settings_reread(struct mq_spool *sp)
{
	const char *why;
	int line;

	if (mq_settings_read(sp, &line, &why) == 0)
		return 0;
	mq_conf_warn(sp, line, why);
	return -1;
}

/*
 * For the tools: opens the spool chosen by -d (dir may be NULL) or dies
 * with the contract's status and a message that names it.
 */
void
mq_spool_xopen(struct mq_spool *sp, const char *dir, int create)
{
	const char *path;

	if (dir != NULL && *dir == '\0')
		errx(MQ_EX_USAGE, "-d: empty spool name");
	if ((path = mq_spool_dir(dir)) == NULL)
		err(MQ_EX_SYS, "no spool: set MQ_DIR or HOME");
	if (mq_spool_open(sp, path, create) == 0)
		return;
	if (errno == ENOTDIR)
		errx(MQ_EX_SYS, "%s: not a spool", path);
	if (errno == ENOENT && mq_spool_whence(dir) != NULL)
		errx(MQ_EX_SYS, "%s: no such spool (%s)", path,
		    mq_spool_whence(dir));
	err(MQ_EX_SYS, "%s", path);
}

/* Whether an ID read is blank: a line of nothing, or of blanks only. */
static int
blank(const char *s)
{
	return s[strspn(s, " \t")] == '\0';
}

static void
ids_add(char ***v, size_t *cap, size_t *n, const char *id)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*v = xreallocarray(*v, *cap, sizeof(**v));
	}
	(*v)[(*n)++] = xstrdup(id);
}

/* The IDs of standard input, added to *v (mq_ids_xread). */
static int
ids_stdin(char ***v, size_t *cap, size_t *n, int zflag)
{
	struct mq_reader rd;
	char *rec;
	int r, bad = 0;

	if (mq_reader_init(&rd, STDIN_FILENO) == -1)
		err(MQ_EX_SYS, "stdin");
	while ((r = mq_reader_record(&rd, zflag ? '\0' : '\n', &rec)) != 0) {
		if (r == 1 && !blank(rec))
			ids_add(v, cap, n, rec);
		else if (r == -1 && errno == E2BIG) {
			warnx("stdin: a line too long: not a message ID");
			bad = 1;
		} else if (r == -1)
			err(MQ_EX_SYS, "stdin");
	}
	mq_reader_free(&rd);
	return bad;
}

/*
 * The IDs an operator names (mq-rm, mq-show, mq-dlq show, redrive and
 * purge): the operands, "-" standing for those of standard input, one a
 * line (with zflag, NUL-terminated), blank ones skipped.  Each is an ID
 * or a prefix of one (mq_id_prefix_valid): those that are not are named
 * (escaped: they may come from anywhere) and the program exits 2 before
 * it does anything; with no ID at all read from standard input, there is
 * nothing to do: exit 1.  Returns copies (mq_ids_free), *n of them.
 */
char **
mq_ids_xread(int argc, char *argv[], int zflag, size_t *n)
{
	char **v = NULL;
	size_t cap = 0, i;
	int k, bad = 0, read = 0;

	*n = 0;
	for (k = 0; k < argc; k++) {
		if (strcmp(argv[k], "-") != 0)
			ids_add(&v, &cap, n, argv[k]);
		else if (!read++)
			bad |= ids_stdin(&v, &cap, n, zflag);
	}
	for (i = 0; i < *n; i++) {
		if (mq_id_prefix_valid(v[i]))
			continue;
		fprintf(stderr, "%s: ", getprogname());
		mq_escape(stderr, v[i], strlen(v[i]));
		fputs(": not a message ID\n", stderr);
		bad = 1;
	}
	if (bad)
		exit(MQ_EX_USAGE);
	if (argc > 0 && *n == 0)
		exit(MQ_EX_NONE);
	return v;
}

struct id_at {
	char	*id;
	size_t	 at;
};

static int
id_at_cmp(const void *a, const void *b)
{
	const struct id_at *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	return c != 0 ? c : (x->at > y->at) - (x->at < y->at);
}

/*
 * The IDs named more than once (an ID and its prefix, a list read twice)
 * kept once, at their first place: removed twice, the second would be
 * "no such message" (mq-rm; mq-dlq keeps its own list).  n log n, for
 * IDs read by the thousand.
 */
void
mq_ids_unique(char **v, size_t *n)
{
	struct id_at *s;
	size_t i, left = 0;

	if (*n < 2)
		return;
	s = xreallocarray(NULL, *n, sizeof(*s));
	for (i = 0; i < *n; i++) {
		s[i].id = v[i];
		s[i].at = i;
	}
	qsort(s, *n, sizeof(*s), id_at_cmp);
	/* Marked first, freed after: a repeat is compared with the next. */
	for (i = 1; i < *n; i++)
		if (strcmp(s[i].id, s[i - 1].id) == 0)
			v[s[i].at] = NULL;
	for (i = 0; i < *n; i++)
		if (v[s[i].at] == NULL)
			free(s[i].id);
	free(s);
	for (i = 0; i < *n; i++)
		if (v[i] != NULL)
			v[left++] = v[i];
	*n = left;
}

/*
 * Each of the *n IDs of v as match (mq_find_match, mq_dead_match) finds
 * it in the spool: a prefix becomes the one ID that starts with it; one
 * that names no what ("message", "dead letter"), or that could not be
 * looked for, is told and left out.  An ambiguous prefix is told with
 * the IDs that start with it, each of them; then the program exits 2,
 * having done nothing.  Returns the worst status told; *n is what is
 * left of v.
 */
int
mq_ids_xresolve(struct mq_spool *sp, char **v, size_t *n, mq_match_fn match,
    const char *what)
{
	struct mq_matches m;
	size_t i, j, left = 0;
	int status = MQ_EX_OK, ambiguous = 0;

	for (i = 0; i < *n; i++) {
		switch (match(sp, v[i], &m)) {
		case MQ_EX_OK:
			if (strcmp(v[i], m.id[0]) != 0) {
				free(v[i]);
				v[i] = xstrdup(m.id[0]);
			}
			v[left++] = v[i];
			continue;
		case MQ_EX_NONE:
			warnx("%s: no such %s", v[i], what);
			status = mq_worse(status, MQ_EX_NONE);
			break;
		case MQ_EX_USAGE:
			warnx("%s: ambiguous, %zu %ss match:", v[i], m.n, what);
			for (j = 0; j < m.kept; j++)
				warnx("  %s", m.id[j]);
			if (m.n > m.kept)
				warnx("  and %zu more", m.n - m.kept);
			ambiguous = 1;
			break;
		default:
			warn("%s", sp->path);
			status = mq_worse(status, MQ_EX_SYS);
		}
		free(v[i]);
	}
	*n = left;
	if (ambiguous)
		exit(MQ_EX_USAGE);
	return status;
}

void
mq_ids_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void
death_json(FILE *fp, int first, uint64_t ms, unsigned attempts,
    const char *reason, size_t len)
{
	char iso[32];

	mq_time_iso(iso, sizeof(iso), ms);
	fprintf(fp, "%s{\"time\":\"%s\",\"reason\":", first ? "" : ",", iso);
	if (reason == NULL)
		fputs("null", fp);
	else
		mq_json_string(fp, reason, len);
	fprintf(fp, ",\"attempts\":%u}", attempts);
}

/*
 * Prints "deaths":[...] for the message named nm: its history, oldest
 * first, then, when current (a dead letter), its own death: its DIED and
 * attempts and reason (rlen bytes, or NULL: none recorded).  What it could
 * read is printed, the list closed, whatever happens; -1 with errno
 * (EBADMSG: a malformed record ended the history) tells the caller to
 * warn.
 */
int
mq_history_json(FILE *fp, struct mq_spool *sp, const struct mq_name *nm,
    const char *reason, size_t rlen, int current)
{
	struct mq_history h;
	struct mq_death one;
	int r = 0, first = 1, saved = 0;

	fputs("\"deaths\":[", fp);
	if (mq_history_open(&h, sp, nm) == -1) {
		saved = errno;
		r = -1;
	} else {
		while ((r = mq_history_next(&h, &one)) == 1) {
			death_json(fp, first, one.ms, one.attempts,
			    one.reason, one.len);
			first = 0;
		}
		saved = errno;
		mq_history_close(&h);
	}
	if (current)
		death_json(fp, first, nm->ms, nm->attempts, reason, rlen);
	putc(']', fp);
	if (r == -1) {
		errno = saved;
		return -1;
	}
	return 0;
}

/*
 * One message as one JSON object, the one shape of every listing (mq-ls
 * --json, mq-dlq ls --json): id, state, attempts, time, priority, then
 * key and group when it has them; a dead one's died and reason; its
 * deaths when it has died (a dead one's own death last); size and body
 * when it has them.  Returns 0, or -1 when its history could not be read
 * whole (errno: the caller warns; what was read is printed).
 */
int
mq_message_json(FILE *fp, struct mq_spool *sp, const struct mq_message *m)
{
	struct mq_name nm = *m->n;
	char iso[32];
	int r = 0;

	mq_time_iso(iso, sizeof(iso), m->time_ms);
	fprintf(fp, "{\"id\":\"%s\",\"state\":\"%s\",\"attempts\":%u,"
	    "\"time\":\"%s\",\"priority\":%u", nm.id, m->state, nm.attempts,
	    iso, nm.prio);
	if (m->key != NULL) {
		fputs(",\"key\":", fp);
		mq_json_string(fp, m->key, strlen(m->key));
	}
	if (nm.group[0] != '\0')
		fprintf(fp, ",\"group\":\"%s\"", nm.group);
	if (m->dead) {
		mq_time_iso(iso, sizeof(iso), m->died_ms);
		fprintf(fp, ",\"died\":\"%s\",\"reason\":", iso);
		/* None recorded, or none that could be read: null. */
		if (m->reason == NULL)
			fputs("null", fp);
		else
			mq_json_string(fp, m->reason, m->rlen);
	}
	if (m->dead || nm.deaths != 0) {
		putc(',', fp);
		nm.ms = m->died_ms;
		r = mq_history_json(fp, sp, &nm, m->reason, m->rlen, m->dead);
	}
	if (m->body != NULL) {
		fprintf(fp, ",\"size\":%jd,\"body\":", (intmax_t)m->size);
		mq_json_string(fp, m->body, m->blen);
	}
	if (m->holder != NULL && nm.holder.kind != 0) {
		fputs(",\"holder\":", fp);
		mq_holder_json(fp, &nm.holder, m->holder);
	}
	fputs("}\n", fp);
	return r;
}

/* The name of the user uid, or NULL; the last one asked is kept. */
const char *
mq_user_name(uint32_t uid)
{
	static char name[64];
	static uint32_t known = UINT32_MAX;
	struct passwd *pw;

	if (uid != known) {
		known = uid;
		name[0] = '\0';
		if ((pw = getpwuid(uid)) != NULL)
			strlcpy(name, pw->pw_name, sizeof(name));
	}
	return name[0] != '\0' ? name : NULL;
}

/* A lease's holder for people: USER@HOST:PID, escaped ("?": unknown). */
void
mq_holder_print(FILE *fp, const struct mq_holder *h,
    const struct mq_holder_info *info)
{
	const char *user = mq_user_name(h->uid);

	if (h->kind == 0) {
		putc('-', fp);
		return;
	}
	if (user != NULL)
		mq_escape(fp, user, strlen(user));
	else
		fprintf(fp, "%" PRIu32, h->uid);
	putc('@', fp);
	if (info->host[0] != '\0')
		mq_escape(fp, info->host, strlen(info->host));
	else
		putc('?', fp);
	fprintf(fp, ":%" PRIu32, h->pid);
}

/*
 * A lease's holder as JSON: host (null: not known), pid, uid, user, since
 * (this attempt's claim), bound (it holds while it lives: a worker,
 * mq-relay push), started (the process'), tool and command (a bound one's).
 */
void
mq_holder_json(FILE *fp, const struct mq_holder *h,
    const struct mq_holder_info *info)
{
	const char *user = mq_user_name(h->uid);
	char iso[32];

	fputs("{\"host\":", fp);
	if (info->host[0] != '\0')
		mq_json_string(fp, info->host, strlen(info->host));
	else
		fputs("null", fp);
	fprintf(fp, ",\"pid\":%" PRIu32 ",\"uid\":%" PRIu32 ",\"user\":",
	    h->pid, h->uid);
	if (user != NULL)
		mq_json_string(fp, user, strlen(user));
	else
		fputs("null", fp);
	mq_time_iso(iso, sizeof(iso), h->since * 1000);
	fprintf(fp, ",\"since\":\"%s\",\"bound\":%s", iso,
	    h->kind == MQ_HOLDER_BOUND ? "true" : "false");
	if (info->started_ms != 0) {
		mq_time_iso(iso, sizeof(iso), info->started_ms);
		fprintf(fp, ",\"started\":\"%s\"", iso);
	}
	if (info->tool[0] != '\0') {
		fputs(",\"tool\":", fp);
		mq_json_string(fp, info->tool, strlen(info->tool));
	}
	if (info->command[0] != '\0') {
		fputs(",\"command\":", fp);
		mq_json_string(fp, info->command, strlen(info->command));
	}
	putc('}', fp);
}
