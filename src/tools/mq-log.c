/*
 * mq-log: the spool's log (log.c; the format: mq-spool(5)), a record a
 * line: each state change a tool made, each job a worker ran; those of
 * some messages (ID operands, or prefixes of 8 or more), of some kinds
 * (--kind), of the last while (--since); as text or JSON lines; with -f,
 * and then what comes, as it comes.  It only reads.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define USAGE	"usage: mq-log [-fv] [--json] [--since secs] [--kind kind,...] " \
    "[-d dir] [id ...]\n" \
    "       mq-log [-v] [-d dir] -o id [-a attempt]\n"

static const char help[] =
    "The spool's log: what the tools did (send, claim, ack, release,\n"
    "orphan, expire, dead, redrive, remove, purge, conf) and the jobs\n"
    "workers ran (job), oldest first; of these IDs only (or prefixes\n"
    "of 8 or more).\n"
    "  -f             then follow: print records as they come\n"
    "  -v             say on stderr which spool and files were read\n"
    "  --json         one JSON object a line\n"
    "  --since secs   only the records of the last secs\n"
    "  --kind k,...   only records of these kinds\n"
    "  -o id          the output its job wrote (kept: keep-output in\n"
    "                 mq-conf), of its latest attempt or -a attempt\n"
    MQ_HELP_SECS
    "Exit 1: no record matched (without -f).  See mq-log(1).\n"
    "The spool: -d dir, else $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "else ~/.local/state/mq.\n";

enum { OPT_JSON = 256, OPT_SINCE, OPT_KIND };

static const char *const kinds[] = { "send", "claim", "ack", "release",
    "orphan", "expire", "dead", "redrive", "remove", "purge", "conf",
    "job" };
#define NKINDS	(sizeof(kinds) / sizeof(kinds[0]))

/* Fields whose values are numbers in JSON. */
static const char *const numeric[] = { "pid", "uid", "attempt", "attempts",
    "exit", "signal", "delay_ms", "job_pid", "prio", "runtime" };

static int jflag, vflag;
static uint64_t since_ms;	/* 0: all */
static int kind_on[NKINDS];
static int any_kind;
static char **ids;
static size_t nids;
static uint64_t shown;

/* A file of the log, read a line at a time; a partial last line waits. */
struct reader {
	int	 fd;
	char	*buf;
	size_t	 len, cap;
};

static void
kinds_parse(const char *arg)
{
	char *copy = xstrdup(arg), *k, *save = NULL;
	size_t i;

	for (k = strtok_r(copy, ",", &save); k != NULL;
	    k = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NKINDS; i++)
			if (strcmp(k, kinds[i]) == 0)
				break;
		if (i == NKINDS)
			errx(MQ_EX_USAGE, "--kind %s: not a kind (send, claim, "
			    "ack, release, orphan, expire, dead, redrive, remove, "
			    "purge, conf, job)", k);
		kind_on[i] = any_kind = 1;
	}
	free(copy);
	if (!any_kind)
		errx(MQ_EX_USAGE, "--kind: no kind given");
}

/* The value of an escaped field, unescaped in place: its new length. */
static size_t
unescape(char *s, size_t len)
{
	size_t i, n = 0;
	unsigned v;

	for (i = 0; i < len; i++) {
		if (s[i] != '\\' || i + 1 == len) {
			s[n++] = s[i];
			continue;
		}
		switch (s[++i]) {
		case 't':
			s[n++] = '\t';
			break;
		case 'n':
			s[n++] = '\n';
			break;
		case 'x':
			if (i + 2 < len && sscanf(s + i + 1, "%2x", &v) == 1) {
				s[n++] = (char)v;
				i += 2;
				break;
			}
			/* FALLTHROUGH */
		default:
			s[n++] = s[i];
		}
	}
	return n;
}

static int
is_numeric(const char *key, size_t klen, const char *v, size_t vlen)
{
	size_t i, dots = 0;

	for (i = 0; i < sizeof(numeric) / sizeof(numeric[0]); i++)
		if (strlen(numeric[i]) == klen &&
		    memcmp(numeric[i], key, klen) == 0)
			break;
	if (i == sizeof(numeric) / sizeof(numeric[0]) || vlen == 0 ||
	    vlen > 20 || v[0] == '.' || v[vlen - 1] == '.')
		return 0;
	for (i = 0; i < vlen; i++)
		if (v[i] == '.' ? ++dots > 1 : v[i] < '0' || v[i] > '9')
			return 0;
	return 1;
}

static int
wanted_id(const char *id, size_t len)
{
	size_t i, n;

	if (nids == 0)
		return 1;
	for (i = 0; i < nids; i++) {
		n = strlen(ids[i]);
		if (n <= len && memcmp(ids[i], id, n) == 0)
			return 1;
	}
	return 0;
}

/* One record, line (len bytes, no newline), printed if it is wanted. */
static void
record(char *line, size_t len)
{
	char *f[3], *p, *end = line + len, *tab, *eq;
	size_t flen[3], i, vlen;
	uint64_t ms;
	int k;

	for (i = 0, p = line; i < 3; i++) {
		if ((tab = memchr(p, '\t', end - p)) == NULL && i < 2)
			return;
		f[i] = p;
		flen[i] = (tab != NULL ? tab : end) - p;
		p = tab != NULL ? tab + 1 : end;
	}
	/* Not a record (a torn one, after a crash): passed over. */
	if (mq_time_parse(f[0], flen[0], &ms) == -1)
		return;
	if (since_ms != 0 && ms < since_ms)
		return;
	if (any_kind) {
		for (k = 0; k < (int)NKINDS; k++)
			if (strlen(kinds[k]) == flen[1] &&
			    memcmp(kinds[k], f[1], flen[1]) == 0)
				break;
		if (k == (int)NKINDS || !kind_on[k])
			return;
	}
	if (!wanted_id(f[2], flen[2]))
		return;
	shown++;
	if (jflag) {
		fputs("{\"time\":", stdout);
		mq_json_string(stdout, f[0], flen[0]);
		fputs(",\"kind\":", stdout);
		mq_json_string(stdout, f[1], flen[1]);
		fputs(",\"id\":", stdout);
		if (flen[2] == 1 && f[2][0] == '-')
			fputs("null", stdout);
		else
			mq_json_string(stdout, f[2], flen[2]);
	} else {
		mq_escape(stdout, f[0], flen[0]);
		printf("  %-7.*s  ", (int)flen[1], f[1]);
		mq_escape(stdout, f[2], flen[2]);
	}
	/* The fields: key=value, tab-separated, values escaped (log.c). */
	while (p < end) {
		tab = memchr(p, '\t', end - p);
		if (tab == NULL)
			tab = end;
		if ((eq = memchr(p, '=', tab - p)) != NULL) {
			vlen = unescape(eq + 1, tab - eq - 1);
			if (jflag) {
				putchar(',');
				mq_json_string(stdout, p, eq - p);
				putchar(':');
				if (is_numeric(p, eq - p, eq + 1, vlen))
					fwrite(eq + 1, 1, vlen, stdout);
				else
					mq_json_string(stdout, eq + 1, vlen);
			} else {
				putchar(' ');
				mq_escape(stdout, p, eq - p + 1);
				mq_escape(stdout, eq + 1, vlen);
			}
		}
		p = tab < end ? tab + 1 : end;
	}
	fputs(jflag ? "}\n" : "\n", stdout);
}

/* The whole lines read so far; at the end (last), a partial one too. */
static int
drain(struct reader *r, const char *name)
{
	char *nl, *p;
	ssize_t n;

	for (;;) {
		if (r->cap - r->len < 65536) {
			r->cap = r->cap ? r->cap * 2 : 262144;
			r->buf = xreallocarray(r->buf, r->cap, 1);
		}
		n = read(r->fd, r->buf + r->len, r->cap - r->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			warn("%s", name);
			return -1;
		}
		if (n == 0)
			return 0;
		r->len += (size_t)n;
		for (p = r->buf; (nl = memchr(p, '\n', r->buf + r->len - p)) !=
		    NULL; p = nl + 1)
			record(p, nl - p);
		r->len -= p - r->buf;
		memmove(r->buf, p, r->len);
		/* A line longer than any record is no record: dropped. */
		if (r->len > 1 << 20)
			r->len = 0;
	}
}

static void
reader_close(struct reader *r)
{
	if (r->fd != -1)
		close(r->fd);
	r->fd = -1;
	r->len = 0;
}

/*
 * -o: the kept output of id's job (attempt: 0, the latest kept), its
 * older part first; on a terminal escaped but for newlines and tabs, as
 * mq-show writes a body.
 */
static int
output(struct mq_spool *sp, const char *id, unsigned attempt)
{
	char full[MQ_ID_LEN + 1];
	unsigned got;
	int fds[2], i, tty = isatty(STDOUT_FILENO);

	if (mq_output_find(sp, id, attempt, fds, full, &got) == -1) {
		if (errno == EEXIST)
			errx(MQ_EX_USAGE, "%s: ambiguous: several messages' "
			    "output begins so", id);
		if (errno != ENOENT)
			err(MQ_EX_SYS, "%s/%s", sp->path, MQ_DIR_OUTPUT);
		if (attempt != 0)
			warnx("%s: no output kept of attempt %u", id, attempt);
		else
			warnx("%s: no output kept (see keep-output in "
			    "mq-conf(1))", id);
		return MQ_EX_NONE;
	}
	if (vflag)
		warnx("%s: attempt %u", full, got);
	for (i = 0; i < 2; i++) {
		if (fds[i] == -1)
			continue;
		if (tty ? mq_copy_escaped(fds[i], stdout) == -1 :
		    fflush(stdout) == EOF || mq_copy_fd(fds[i],
		    STDOUT_FILENO) == -1)
			err(MQ_EX_SYS, "%s", full);
		close(fds[i]);
	}
	return MQ_EX_OK;
}

/* log.1, whole: a log that came and went while -f was not looking. */
static void
between(struct mq_spool *sp)
{
	struct reader o = { -1, NULL, 0, 0 };

	if ((o.fd = mq_log_open(sp, 1)) == -1)
		return;
	(void)drain(&o, MQ_LOG_OLD);
	reader_close(&o);
	free(o.buf);
}

/* -f: what comes, as it comes; ends only with a signal or an error. */
static void
follow(struct mq_spool *sp, struct reader *r)
{
	struct pollfd pfd;
	int w = mq_log_watch(sp);

	pfd.fd = w;
	pfd.events = POLLIN;
	/*
	 * Read before the first wait: what was appended (or the log made)
	 * after the first reading and before the watch sent no event.
	 */
	for (;;) {
		if (r->fd != -1 && drain(r, MQ_LOG) == -1)
			exit(MQ_EX_SYS);
		/* Rotated: the rest of the old one, then the new one. */
		if (r->fd == -1 || !mq_log_is(sp, r->fd, 0)) {
			if (r->fd != -1 && drain(r, MQ_LOG_OLD) == -1)
				exit(MQ_EX_SYS);
			/* Rotated twice: the one between is log.1 now. */
			if (r->fd != -1 && !mq_log_is(sp, r->fd, 1))
				between(sp);
			reader_close(r);
			if ((r->fd = mq_log_open(sp, 0)) == -1 &&
			    errno != ENOENT)
				err(MQ_EX_SYS, "%s/%s", sp->path, MQ_LOG);
			if (r->fd != -1 && drain(r, MQ_LOG) == -1)
				exit(MQ_EX_SYS);
		}
		if (fflush(stdout) == EOF)
			err(MQ_EX_SYS, "stdout");
		if (poll(&pfd, w != -1, w != -1 ? -1 : 1000) == -1 &&
		    errno != EINTR)
			err(MQ_EX_SYS, "poll");
		if (w != -1)
			mq_log_watched(w);
	}
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "json", no_argument, NULL, OPT_JSON },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "kind", required_argument, NULL, OPT_KIND },
		{ NULL, 0, NULL, 0 }
	};
	struct mq_spool sp;
	struct reader r = { -1, NULL, 0, 0 };
	const char *dir = NULL, *oid = NULL;
	uint64_t since = 0, now;
	int ch, fflag = 0, old, i, attempt = 0, other = 0, fds[2];

	while ((ch = getopt_long(argc, argv, MQ_OPTS("fvd:o:a:hV"), longopts,
	    NULL)) != -1) {
		other |= ch == 'f' || ch >= 256;
		switch (ch) {
		case 'o':
			oid = optarg;
			break;
		case 'a':
			attempt = xnumber("-a", optarg, 1, MQ_ATTEMPTS_MAX);
			break;
		case 'f':
			fflag = 1;
			break;
		case 'v':
			vflag = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case OPT_JSON:
			jflag = 1;
			break;
		case OPT_SINCE:
			since = xsecs("--since", optarg, 0);
			now = mq_now_ms();
			since_ms = since < now ? now - since : 1;
			break;
		case OPT_KIND:
			kinds_parse(optarg);
			break;
		default:
			mq_common_opt(ch, USAGE, help);
		}
	}
	argc -= optind;
	argv += optind;
	if (oid != NULL || attempt != 0) {
		if (oid == NULL || other || argc > 0)
			mq_usage(USAGE);
		if (!mq_id_prefix_valid(oid))
			errx(MQ_EX_USAGE, "%s: not a message ID", oid);
		mq_spool_xopen(&sp, dir, 0);
		i = output(&sp, oid, (unsigned)attempt);
		mq_spool_close(&sp);
		mq_stdout_close();
		return i;
	}
	/* IDs of messages long gone are looked for in the log, not the spool. */
	nids = (size_t)argc;
	ids = argv;
	for (i = 0; i < argc; i++)
		if (!mq_id_prefix_valid(argv[i]))
			errx(MQ_EX_USAGE, "%s: not a message ID", argv[i]);
	mq_spool_xopen(&sp, dir, 0);
	if (mq_log_open_both(&sp, fds) == -1)
		err(MQ_EX_SYS, "%s/%s", sp.path, MQ_LOG);
	for (old = 1; old >= 0; old--) {
		if ((r.fd = fds[!old]) == -1)
			continue;
		if (vflag)
			warnx("%s/%s", sp.path, old ? MQ_LOG_OLD : MQ_LOG);
		if (drain(&r, old ? MQ_LOG_OLD : MQ_LOG) == -1)
			exit(MQ_EX_SYS);
		if (old)
			reader_close(&r);
	}
	if (fflag)
		follow(&sp, &r);
	reader_close(&r);
	free(r.buf);
	mq_spool_close(&sp);
	mq_stdout_close();
	return shown > 0 ? MQ_EX_OK : MQ_EX_NONE;
}
