/*
 * mq-dlq: list, show, redrive and purge dead letters.  Listings are one
 * line per dead letter whatever the reason or body hold: control bytes and
 * bytes that are not UTF-8 are escaped, so nothing reaches a terminal raw;
 * so is a body shown on a terminal, unless --raw.  Every command first
 * buries what waits past its time to live (mq_expire), as a claim would:
 * what mq-ls and mq-stat call dead is a dead letter here too.
 *
 * ls, redrive and purge choose by reason (a regular expression) and time
 * of death.  A redrive enters the target spool as a send does (enqueue.c:
 * admitted under max-depth, waited for with -w, room made with
 * overflow=drop-oldest), paced with --rate, and made durable before what
 * it leaves behind goes: at the end, before a wait, at least once a second
 * when paced, and when SIGINT or SIGTERM stops it.
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define PREVIEW	32
/*
 * A full file system at the time of death is the usual cause; a reason
 * removed by hand, or by a redrive under way, looks the same.
 */
#define NO_REASON	"(no reason recorded)"

#define FILTERS	"[--reason regex] [--older-than secs] [--newer-than secs]"
#define USAGE \
	"usage: mq-dlq [-v] [-d dir] [ls [--json]\n" \
	"              " FILTERS "]\n" \
	"       mq-dlq [-v] [-d dir] show [-0] [--raw] id ...\n" \
	"       mq-dlq [-v] [-d dir] redrive [-0] [--to dir] [--rate n] " \
	    "[-w [secs]]\n" \
	"              " FILTERS "\n" \
	"              [--all | id ...]\n" \
	"       mq-dlq [-v] [-d dir] purge [-0]\n" \
	"              " FILTERS "\n" \
	"              [--all | id ...]\n"

/* What --help prints after the usage. */
static const char help[] =
    "ls: id, attempts, died, reason, size, start of body "
    "(tab-separated;\n"
    "on a terminal with a header, and died as an age: 45s, 12m, 3h, "
    "2d ago)\n"
    "show: the body (escaped on a terminal, unless --raw);\n"
    "redrive: back to new/ (--to: another spool), at most n a second "
    "(--rate),\n"
    "waiting for room under max-depth (-w, up to secs);\n"
    "purge: delete.  An ID may be a unique prefix of 8 or more\n"
    "characters; -: IDs on stdin, one a line (-0: NUL-terminated).\n"
    "--reason: those whose reason matches regex (extended);\n"
    "--older-than, --newer-than: dead for more, for less than secs;\n"
    "with no ID, every dead letter they match.  Redrive and purge say\n"
    "how many on stderr.\n"
    MQ_HELP_SECS
    "See mq-dlq(1).\n"
    "The spool: -d dir, else $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "else ~/.local/state/mq.\n";

static int vflag, rawflag, zflag, wflag;
static uint64_t wait_ms = UINT64_MAX;	/* -w: that long; for ever */
static double rate;			/* --rate: a second; 0: no pace */
static volatile sig_atomic_t stopping;	/* SIGINT, SIGTERM */

/*
 * --reason, --older-than, --newer-than: which dead letters ls lists and
 * redrive and purge take, all of them (AND).
 */
static struct {
	const char	*pattern;	/* --reason, or NULL */
	regex_t		 re;
	int		 older, newer;
	uint64_t	 older_ms, newer_ms;
} filter;

enum {
	OPT_TO = 256,	/* --to's, as its letter went (-t is now --to) */
	OPT_REASON,
	OPT_OLDER,
	OPT_NEWER,
	OPT_RATE
};

static int
filtering(void)
{
	return filter.pattern != NULL || filter.older || filter.newer;
}

static void
filter_reason(const char *pattern)
{
	char why[256];
	int e;

	if (filter.pattern != NULL)
		regfree(&filter.re);
	if ((e = regcomp(&filter.re, pattern, REG_EXTENDED | REG_NOSUB)) !=
	    0) {
		regerror(e, &filter.re, why, sizeof(why));
		fprintf(stderr, "%s: --reason ", getprogname());
		mq_escape(stderr, pattern, strlen(pattern));
		fprintf(stderr, ": %s\n", why);
		exit(MQ_EX_USAGE);
	}
	filter.pattern = pattern;
}

/* Whether a death at ms is as old, now, as --older-than, --newer-than ask. */
static int
when_matches(uint64_t ms, uint64_t now)
{
	uint64_t age = now > ms ? now - ms : 0;

	if (filter.older && age <= filter.older_ms)
		return 0;
	if (filter.newer && age >= filter.newer_ms)
		return 0;
	return 1;
}

/*
 * Whether a reason (len bytes; none recorded: none) matches --reason.  A
 * NUL in it ends it, as it ends the text of a listing's shell pipeline.
 */
static int
reason_matches(const char *reason, size_t len)
{
	char *s;
	int r;

	if (filter.pattern == NULL)
		return 1;
	s = xmalloc(len + 1);
	if (len > 0)
		memcpy(s, reason, len);
	s[len] = '\0';
	r = regexec(&filter.re, s, 0, NULL, 0) == 0;
	free(s);
	return r;
}

/* How long ago a death at ms was, now: 45s, 12m, 3h, 2d ago (rounded down). */
static void
age(char *buf, size_t size, uint64_t ms, uint64_t now)
{
	uint64_t s = now > ms ? (now - ms) / 1000 : 0;

	if (s < 60)
		snprintf(buf, size, "%" PRIu64 "s ago", s);
	else if (s < 3600)
		snprintf(buf, size, "%" PRIu64 "m ago", s / 60);
	else if (s < 86400)
		snprintf(buf, size, "%" PRIu64 "h ago", s / 3600);
	else
		snprintf(buf, size, "%" PRIu64 "d ago", s / 86400);
}

/*
 * Buries what waits past its time to live, so that every command sees
 * what mq-ls and mq-stat call dead.  One that cannot be buried is warned
 * about (exit 4), and the command goes on with what is in dead/; but an
 * operator who may only look (ls, show) is not failed for what only a
 * writer can do: told, exit 0.
 */
static int
expire(struct mq_spool *sp, int looking)
{
	(void)mq_settings_xread(sp);
	if (mq_expire(sp, NULL) == -1) {
		if (looking && (errno == EACCES || errno == EPERM ||
		    errno == EROFS)) {
			warn("%s: what is past its ttl is not buried (mq-ls "
			    "-s dead lists it)", sp->path);
			return MQ_EX_OK;
		}
		warn("%s: burying what expired", sp->path);
		return MQ_EX_SYS;
	}
	return MQ_EX_OK;
}

/* Reads up to PREVIEW bytes of a body and its size, never blocking. */
static int
peek(struct mq_spool *sp, const struct mq_dead *d, char *buf, size_t *len,
    off_t *size)
{
	struct stat st;
	ssize_t n;
	int fd;

	if ((fd = mq_dead_open(sp, d)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	n = read(fd, buf, PREVIEW);
	close(fd);
	if (n == -1)
		return -1;
	*len = n;
	*size = st.st_size;
	return 0;
}

/*
 * The dead letters, those the filters choose: a line each (on a terminal,
 * under a header, died as an age), or a JSON object each.
 */
static int
cmd_ls(struct mq_spool *sp, int json)
{
	struct mq_dead *d;
	struct mq_keys keys;
	struct mq_message msg;
	char when[32], body[PREVIEW], *reason, key[MQ_KEY_MAX + 1];
	size_t n, i, blen, rlen, listed = 0;
	uint64_t now;
	off_t size;
	int got, k, status, headed = 0, tty = !json && isatty(STDOUT_FILENO);

	status = expire(sp, 1);
	mq_keys_init(&keys, sp);
	if (mq_dead_list(sp, &d, &n) == -1)
		err(MQ_EX_SYS, "%s/%s", sp->path, MQ_DIR_DEAD);
	now = mq_now_ms();
	for (i = 0; i < n; i++) {
		if (!when_matches(d[i].n.ms, now))
			continue;
		if (peek(sp, &d[i], body, &blen, &size) == -1) {
			if (errno != ENOENT) {
				warn("%s/%s", MQ_DIR_DEAD, d[i].name);
				status = MQ_EX_SYS;
			}
			continue;
		}
		if ((got = mq_dead_reason(sp, d[i].n.id, &reason, &rlen)) ==
		    -1) {
			warn("%s/%s", MQ_DIR_REASON, d[i].n.id);
			status = MQ_EX_SYS;
		}
		/* One whose reason cannot be read is not said to match. */
		if (filter.pattern != NULL && (got == -1 ||
		    !reason_matches(reason, rlen))) {
			free(reason);
			continue;
		}
		if (tty)
			age(when, sizeof(when), d[i].n.ms, now);
		else
			mq_time_iso(when, sizeof(when), d[i].n.ms);
		listed++;
		if (json) {
			memset(&msg, 0, sizeof(msg));
			msg.n = &d[i].n;
			msg.state = mq_look_state_name(MQ_LOOK_DEAD);
			msg.time_ms = msg.died_ms = d[i].n.ms;
			if ((k = mq_key_get(&keys, &d[i].n, key)) == 1)
				msg.key = key;
			else if (k == -1) {
				warn("%s/%s", MQ_DIR_KEYS, d[i].n.keyhash);
				status = MQ_EX_SYS;
			}
			msg.dead = 1;
			msg.reason = got == 0 ? reason : NULL;
			msg.rlen = rlen;
			msg.body = body;
			msg.blen = blen;
			msg.size = size;
			if (mq_message_json(stdout, sp, &msg) == -1) {
				warn("%s/%s", MQ_DIR_DEATHS, d[i].n.id);
				status = MQ_EX_SYS;
			}
		} else {
			if (tty && !headed++)
				puts("ID\tATTEMPTS\tDIED\tREASON\tSIZE\tBODY");
			printf("%s\t%u\t%s\t", d[i].n.id, d[i].n.attempts,
			    when);
			if (got == 1)
				fputs(NO_REASON, stdout);
			else
				mq_escape(stdout, reason, rlen);
			printf("\t%jd\t", (intmax_t)size);
			mq_escape(stdout, body, blen);
			putchar('\n');
		}
		free(reason);
	}
	mq_keys_close(&keys);
	free(d);
	/* -v: how many, on stderr, so that a filter matching none is said. */
	if (vflag) {
		fprintf(stderr, "%s: ", getprogname());
		mq_escape(stderr, sp->path, strlen(sp->path));
		fprintf(stderr, ": %zu dead letter%s listed\n", listed,
		    listed == 1 ? "" : "s");
	}
	return status;
}

/* One dead letter's body (show): its status. */
static int
show(struct mq_spool *sp, const char *id)
{
	struct mq_dead d;
	struct stat st;
	char when[32];
	int fd, status = MQ_EX_OK;

	if (mq_dead_find(sp, id, &d) == -1) {
		if (errno != ENOENT) {
			warn("%s/%s", sp->path, MQ_DIR_DEAD);
			return MQ_EX_SYS;
		}
		warnx("%s: no such dead letter", id);
		return MQ_EX_NONE;
	}
	if ((fd = mq_dead_open(sp, &d)) == -1 || fstat(fd, &st) == -1) {
		warn("%s/%s", MQ_DIR_DEAD, d.name);
		status = MQ_EX_SYS;
	} else if (!S_ISREG(st.st_mode)) {
		warnx("%s/%s: not a regular file", MQ_DIR_DEAD, d.name);
		status = MQ_EX_SYS;
	/* Byte for byte, but nothing of it takes over a terminal (mq-show). */
	} else if (!rawflag && isatty(STDOUT_FILENO)) {
		if (mq_copy_escaped(fd, stdout) == -1)
			err(MQ_EX_SYS, "%s/%s", MQ_DIR_DEAD, d.name);
	} else if (fflush(stdout) == EOF ||
	    mq_copy_fd(fd, STDOUT_FILENO) == -1)
		err(MQ_EX_SYS, "%s/%s", MQ_DIR_DEAD, d.name);
	if (fd != -1)
		close(fd);
	if (vflag && status == MQ_EX_OK) {
		mq_time_iso(when, sizeof(when), d.n.ms);
		warnx("%s: dead letter, %u attempt%s, died %s", d.n.id,
		    d.n.attempts, d.n.attempts == 1 ? "" : "s", when);
	}
	return status;
}

static int
idcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * A redrive or a purge under way: the dead letters chosen, in ID order so
 * that a redrive keeps the original order, each moved (1), then settled
 * (2): durable where it went, or purged durably, and what it left behind
 * removed.  Only what is settled is counted as done.
 */
struct run {
	struct mq_spool	*sp, *tsp;	/* tsp: where a redrive goes */
	struct mq_enqueue eq;		/* a redrive's way into tsp */
	int		 redrive;
	struct mq_dead	*d;
	size_t		 n;
	struct stat	*why;		/* each one's reason, as seen */
	char		*state;		/* 0, moved 1, settled 2 */
	size_t		 moved, done;
	uint64_t	 settled_ms;	/* monotonic */
	double		 due_ms;	/* --rate: the next not sooner */
	int		 status;
};

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
stop(int sig)
{
	(void)sig;
	stopping = 1;
}

/*
 * Makes what was moved durable, then removes what it left behind (its
 * reason, its history if it went to another spool), and counts it done:
 * a redrive said done is in the target's new/ after a power cut, and a
 * dead letter that comes back comes back with its reason.
 */
static int
settle(struct run *r)
{
	size_t j;

	r->settled_ms = mono_ms();
	if (r->moved == r->done)
		return 0;
	if (r->redrive && mq_enq_flush(&r->eq, 1) == -1) {
		warn("%s", r->tsp->path);
		r->status = mq_worse(r->status, MQ_EX_SYS);
		return -1;
	}
	if (!r->redrive && mq_dead_sync(r->sp) == -1) {
		warn("%s/%s", r->sp->path, MQ_DIR_DEAD);
		r->status = mq_worse(r->status, MQ_EX_SYS);
		return -1;
	}
	for (j = 0; j < r->n; j++) {
		if (r->state[j] != 1)
			continue;
		if (r->redrive)
			mq_dead_redriven(r->sp, &r->d[j], r->tsp, &r->why[j]);
		else
			mq_dead_purged(r->sp, &r->d[j]);
		r->state[j] = 2;
		r->done++;
	}
	return 0;
}

/*
 * --rate: one goes no sooner than 1 / rate seconds after the one before
 * (or, after a wait for room, than the end of the wait: no burst to catch
 * up).  Sleeps a tenth of a second at a time, to stop soon when told,
 * settling what was moved at least once a second meanwhile.  -1: a
 * settling failed.
 */
static int
pace(struct run *r)
{
	struct timespec ts;
	uint64_t now, left;

	while (!stopping && (now = mono_ms()) < r->due_ms) {
		if (now - r->settled_ms >= 1000 && settle(r) == -1)
			return -1;
		left = (uint64_t)r->due_ms - now + 1;
		if (left > 100)
			left = 100;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left * 1000000;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* --rate: the next one's time, once one has gone. */
static void
paced(struct run *r)
{
	double now = (double)mono_ms();

	r->due_ms = (r->due_ms > now ? r->due_ms : now) + 1000.0 / rate;
}

static void
dropped(void *arg, const char *id)
{
	(void)arg;
	if (vflag)
		warnx("%s: dead: %s", id, MQ_REASON_MAXLEN);
}

/* No room in the target, and no more waiting: the redrive stops there. */
static int
full(struct run *r)
{
	warnx("%s: full (max-depth %s)", r->tsp->path,
	    mq_conf_value(&r->tsp->conf, MQ_CONF_MAX_DEPTH));
	r->status = mq_worse(r->status, MQ_EX_FULL);
	return -1;
}

/*
 * Room for one more in the target, as mq-send finds it (enqueue.c): made
 * with overflow=drop-oldest; with overflow=reject counted once the credit
 * is used up, and waited for with -w (what was moved settled first), else
 * none is the end of the redrive.  0, or -1: stop.
 */
static int
room(struct run *r)
{
	int got;

	if (mq_enq_make_room(&r->eq, 1, dropped, NULL) == -1) {
		warn("%s/%s", r->tsp->path, MQ_DIR_NEW);
		r->status = mq_worse(r->status, MQ_EX_SYS);
		return -1;
	}
	if (mq_enq_next(&r->eq, 0) != MQ_ENQ_COUNT)
		return 0;
	while ((got = mq_enq_admit(&r->eq)) == 0) {
		if (!wflag)
			return full(r);
		if (settle(r) == -1)
			return -1;
		if (mq_enq_await(&r->eq, wait_ms) == -1) {
			if (errno == ETIMEDOUT)
				return full(r);
			if (errno == ENOENT)
				warnx("%s: spool removed", r->tsp->path);
			else
				warn("%s/%s", r->tsp->path, MQ_DIR_NEW);
			r->status = mq_worse(r->status, MQ_EX_SYS);
			return -1;
		}
		if (stopping)
			return -1;
		if (mq_settings_reread(r->tsp) == -1) {
			r->status = mq_worse(r->status, MQ_EX_SYS);
			return -1;
		}
	}
	if (got == -1) {
		warn("%s/%s", r->tsp->path, MQ_DIR_NEW);
		r->status = mq_worse(r->status, MQ_EX_SYS);
		return -1;
	}
	return 0;
}

/* Moves the i-th: 0, or -1 to stop. */
static int
move(struct run *r, size_t i)
{
	struct mq_dead *d = &r->d[i];
	int history = 0;

	if ((r->redrive ? mq_enq_redrive(&r->eq, r->sp, d, &history,
	    &r->why[i]) : mq_dead_purge(r->sp, d)) == -1) {
		if (errno == ENOENT && !history) {
			warnx("%s: no such dead letter", d->n.id);
			r->status = mq_worse(r->status, MQ_EX_NONE);
			return 0;
		}
		if (history)
			warn("%s/%s/%s", r->tsp->path, MQ_DIR_DEATHS, d->n.id);
		else
			warn("%s/%s", MQ_DIR_DEAD, d->name);
		r->status = mq_worse(r->status, MQ_EX_SYS);
		return -1;
	}
	r->state[i] = 1;
	r->moved++;
	if (vflag)
		warnx("%s: %s", d->n.id, r->redrive ? "redriven" : "purged");
	return 0;
}

/*
 * Whether the filters choose d.  A reason that cannot be read matches no
 * --reason (said, exit 4).
 */
static int
chosen(struct run *r, const struct mq_dead *d, uint64_t now)
{
	char *reason;
	size_t len;
	int got, yes;

	if (!when_matches(d->n.ms, now))
		return 0;
	if (filter.pattern == NULL)
		return 1;
	if ((got = mq_dead_reason(r->sp, d->n.id, &reason, &len)) == -1) {
		warn("%s/%s", MQ_DIR_REASON, d->n.id);
		r->status = mq_worse(r->status, MQ_EX_SYS);
		free(reason);
		return 0;
	}
	yes = reason_matches(reason, len);
	free(reason);
	return yes;
}

/*
 * The dead letters to move: the named ones (whole IDs, each once), or
 * every one (all); of those, the ones the filters choose.
 */
static void
choose(struct run *r, int all, char **ids, size_t nids)
{
	struct mq_dead one;
	uint64_t now;
	size_t i, k, n;

	if (all) {
		if (mq_dead_list(r->sp, &r->d, &r->n) == -1)
			err(MQ_EX_SYS, "%s/%s", r->sp->path, MQ_DIR_DEAD);
	} else {
		qsort(ids, nids, sizeof(*ids), idcmp);
		r->d = xreallocarray(NULL, nids ? nids : 1, sizeof(*r->d));
		for (r->n = 0, k = 0; k < nids; k++) {
			/* One named twice (an ID and a prefix of it) is one. */
			if (k > 0 && strcmp(ids[k], ids[k - 1]) == 0)
				continue;
			if (mq_dead_find(r->sp, ids[k], &one) == 0)
				r->d[r->n++] = one;
			else if (errno == ENOENT) {
				warnx("%s: no such dead letter", ids[k]);
				r->status = mq_worse(r->status, MQ_EX_NONE);
			} else
				err(MQ_EX_SYS, "%s/%s", r->sp->path,
				    MQ_DIR_DEAD);
		}
	}
	if (!filtering())
		return;
	now = mq_now_ms();
	for (i = n = 0; i < r->n; i++)
		if (chosen(r, &r->d[i], now))
			r->d[n++] = r->d[i];
	/* A filter that chooses none leaves nothing to do (mq-recv: 1). */
	if ((r->n = n) == 0)
		r->status = mq_worse(r->status, MQ_EX_NONE);
}

/*
 * Redrives or purges the dead letters chosen, and says how many on
 * stderr.  SIGINT and SIGTERM stop it after the one under way, what was
 * moved settled.
 */
static int
cmd_move(struct mq_spool *sp, int redrive, const char *to, int all,
    char **ids, size_t nids)
{
	struct mq_spool target;
	struct sigaction sa;
	struct run r;
	size_t i;

	memset(&r, 0, sizeof(r));
	r.sp = r.tsp = sp;
	r.redrive = redrive;
	choose(&r, all, ids, nids);
	/* Nothing to move: not even a spool made for it. */
	if (r.n > 0 && to != NULL) {
		mq_spool_xopen(&target, to, 1);
		(void)mq_settings_xread(&target);
		r.tsp = &target;
	}
	mq_enq_init(&r.eq, r.tsp, 1);
	r.why = xreallocarray(NULL, r.n ? r.n : 1, sizeof(*r.why));
	r.state = xmalloc(r.n ? r.n : 1);
	memset(r.state, 0, r.n ? r.n : 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = stop;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r.settled_ms = mono_ms();
	for (i = 0; i < r.n && !stopping; i++) {
		if (rate > 0 && (pace(&r) == -1 || stopping ||
		    (mono_ms() - r.settled_ms >= 1000 && settle(&r) == -1)))
			break;
		if (redrive && room(&r) == -1)
			break;
		if (move(&r, i) == -1)
			break;
		if (rate > 0)
			paced(&r);
	}
	(void)settle(&r);
	warnx("%s %zu", redrive ? "redriven" : "purged", r.done);
	mq_enq_close(&r.eq);
	if (r.tsp != sp)
		mq_spool_close(r.tsp);
	free(r.why);
	free(r.state);
	free(r.d);
	return r.status;
}

/*
 * show, redrive and purge: what expired buried first (it is dead to them
 * too), then the dead letters named (a prefix for the one it begins, "-"
 * for those on stdin), or with --all or a filter and no ID every one, of
 * them those the filters choose.  Every ID is checked, and every prefix
 * looked for, before anything is done.
 */
static int
cmd_named(const char *dir, const char *cmd, const char *to, int all,
    int argc, char *argv[])
{
	struct mq_spool sp;
	char **ids = NULL;
	size_t n = 0, i;
	int status;

	if (argc > 0)
		ids = mq_ids_xread(argc, argv, zflag, &n);
	mq_spool_xopen(&sp, dir, 0);
	status = expire(&sp, cmd[0] == 's');
	status = mq_worse(status, mq_ids_xresolve(&sp, ids, &n, mq_dead_match,
	    "dead letter"));
	if (cmd[0] == 's')
		for (i = 0; i < n; i++)
			status = mq_worse(status, show(&sp, ids[i]));
	else
		status = mq_worse(status, cmd_move(&sp, cmd[0] == 'r', to,
		    all || (filtering() && argc == 0), ids, n));
	mq_ids_free(ids, n);
	mq_spool_close(&sp);
	return status;
}

/* The options of a command given to another: exit 2. */
static void
goes_with(const char *cmd, int json, const char *to, int all)
{
	int ls = strcmp(cmd, "ls") == 0, redrive = strcmp(cmd, "redrive") == 0,
	    purge = strcmp(cmd, "purge") == 0, show = strcmp(cmd, "show") == 0;

	if (!ls && json)
		errx(MQ_EX_USAGE, "--json goes with ls");
	if (!redrive && to != NULL)
		errx(MQ_EX_USAGE, "--to goes with redrive");
	if (!redrive && rate > 0)
		errx(MQ_EX_USAGE, "--rate goes with redrive");
	if (!redrive && wflag)
		errx(MQ_EX_USAGE, "-w goes with redrive");
	if (!redrive && !purge && all)
		errx(MQ_EX_USAGE, "--all goes with redrive and purge");
	if (!ls && !redrive && !purge && filtering())
		errx(MQ_EX_USAGE, "--reason, --older-than and --newer-than go "
		    "with ls, redrive and purge");
	if (!show && rawflag)
		errx(MQ_EX_USAGE, "--raw goes with show");
	if (!show && !redrive && !purge && zflag)
		errx(MQ_EX_USAGE, "-0 goes with show, redrive and purge");
}

/* --rate n: a number of messages a second, more than 0, decimals allowed. */
static double
xrate(const char *arg)
{
	char *end;
	double n;

	if (*arg == '\0' || strspn(arg, "0123456789.") != strlen(arg))
		errx(MQ_EX_USAGE, "--rate %s: not a number of messages a second",
		    arg);
	errno = 0;
	n = strtod(arg, &end);
	if (*end != '\0' || errno != 0)
		errx(MQ_EX_USAGE, "--rate %s: not a number of messages a second",
		    arg);
	if (n < 0.001 || n > 1000000)
		errx(MQ_EX_USAGE, "--rate %s: out of range (0.001 to 1000000)",
		    arg);
	return n;
}

static const struct option longopts[] = {
	MQ_LONGOPTS,
	{ "json", no_argument, NULL, 'j' },
	{ "all", no_argument, NULL, 'a' },
	{ "raw", no_argument, NULL, 'r' },
	{ "to", required_argument, NULL, OPT_TO },
	{ "reason", required_argument, NULL, OPT_REASON },
	{ "older-than", required_argument, NULL, OPT_OLDER },
	{ "newer-than", required_argument, NULL, OPT_NEWER },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ NULL, 0, NULL, 0 }
};

/* The options of a command, which follow it: how many words they took. */
static int
command_options(int argc, char *argv[], const char **dir, const char **to,
    int *json, int *all)
{
	const char *arg;
	char *command = argv[0];
	int ch;

	/* getopt names argv[0] in its errors: the program, not "show". */
	argv[0] = (char *)getprogname();
	MQ_OPTRESET();
	while ((ch = getopt_long(argc, argv, MQ_OPTS("0vd:tw::"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case '0':
			zflag = 1;
			break;
		case 'v':
			vflag = 1;
			break;
		case 'd':
			*dir = optarg;
			break;
		case 't':
			mq_renamed("-t", "--to");
		case OPT_TO:
			*to = optarg;
			break;
		case 'j':
			*json = 1;
			break;
		case 'a':
			*all = 1;
			break;
		case 'r':
			rawflag = 1;
			break;
		case 'w':
			wflag = 1;
			arg = mq_optional_secs(optarg, argc, argv);
			wait_ms = arg != NULL ? xsecs("-w", arg, 0) :
			    UINT64_MAX;
			break;
		case OPT_REASON:
			filter_reason(optarg);
			break;
		case OPT_OLDER:
			filter.older = 1;
			filter.older_ms = xsecs("--older-than", optarg, 0);
			break;
		case OPT_NEWER:
			filter.newer = 1;
			filter.newer_ms = xsecs("--newer-than", optarg, 0);
			break;
		case OPT_RATE:
			rate = xrate(optarg);
			break;
		case 'h':
			mq_common_opt(ch, USAGE, help);
		default:	/* -V too: it goes before a command */
			mq_usage(USAGE);
		}
	}
	argv[0] = command;
	return optind;
}

int
main(int argc, char *argv[])
{
	struct mq_spool sp;
	const char *dir = NULL, *to = NULL, *cmd = "ls";
	int ch, json = 0, all = 0, status;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("vd:hV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'v':
			vflag = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		default:
			mq_common_opt(ch, USAGE, help);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc > 0) {
		cmd = argv[0];
		ch = command_options(argc, argv, &dir, &to, &json, &all);
		argc -= ch;
		argv += ch;
	}
	signal(SIGXFSZ, SIG_IGN);
	goes_with(cmd, json, to, all);
	if (strcmp(cmd, "ls") == 0) {
		if (argc > 0)
			mq_usage(USAGE);
		mq_spool_xopen(&sp, dir, 0);
		status = cmd_ls(&sp, json);
		mq_spool_close(&sp);
	} else if (strcmp(cmd, "show") == 0) {
		if (argc == 0)
			mq_usage(USAGE);
		status = cmd_named(dir, cmd, NULL, 0, argc, argv);
	} else if (strcmp(cmd, "redrive") == 0 || strcmp(cmd, "purge") == 0) {
		if (!all && !filtering() && argc == 0)
			errx(MQ_EX_USAGE, "%s: name IDs, --all or a filter",
			    cmd);
		if (all && argc > 0)
			errx(MQ_EX_USAGE, "--all and IDs exclude each other");
		status = cmd_named(dir, cmd, to, all, argc, argv);
	} else {
		warnx("%s: unknown command", cmd);
		mq_usage(USAGE);
	}
	if (filter.pattern != NULL)
		regfree(&filter.re);
	mq_stdout_close();
	return status;
}
