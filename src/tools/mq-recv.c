/*
 * mq-recv: claim visible messages and print their receipts.  A receipt is
 * printed as soon as its claim is made; a claim whose receipt could not be
 * printed is not lost: its lease runs out and it is handed out again.
 * Given a command, it is a worker instead: it runs the command for each
 * message and settles the message by its exit status (work.c).  main
 * parses (parse) and picks the mode: receive() or work().
 */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

static int zflag;

#define USAGE \
	"usage: mq-recv [-0v] [-d dir] [-n n] [-t secs] [-m max] " \
	"[-w [secs]]\n" \
	"       mq-recv [-v] [-d dir] [-n n] [-t secs] [-m max] [-w [secs]]\n" \
	"               [-P n] [--tag] [--timeout secs] [--backoff secs]\n" \
	"               [--backoff-max secs] [--drain] [--progress]\n" \
	"               [--once] -- command [arg ...]\n"

enum { OPT_TAG = 256, OPT_TIMEOUT, OPT_BACKOFF, OPT_BACKOFF_MAX, OPT_DRAIN,
    OPT_PROGRESS, OPT_ONCE };

/* What --help prints after the usage. */
static const char help[] =
    "Claim visible messages, oldest first; print one receipt each,\n"
    "or run command for each (body on stdin) and ack it on exit 0.\n"
    "  -n n     claim up to n messages (default 1; with a command, "
    "no limit)\n"
    "  -t secs  lease length, at least 0.001 (default: the spool's\n"
    "           lease, 30 unless set with mq-conf)\n"
    "  -m max   dead-letter a message after max attempts (default:\n"
    "           the spool's max-attempts, 5 unless set)\n"
    "  -w secs  wait up to secs (-w alone: forever) for a message,\n"
    "           and for the spool to be made\n"
    "  -0       end receipts with NUL, for xargs -0\n"
    "  -v       say each claim (worker: each job) on stderr\n"
    "  -d dir   spool (default $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "           else ~/.local/state/mq)\n"
    "  -P n     run up to n jobs at once (default 1)\n"
    "  --tag    prefix each line a job prints with its message ID\n"
    "  --timeout secs      kill a job that runs longer\n"
    "  --backoff secs      first retry delay (default 1), doubled "
    "per attempt\n"
    "  --backoff-max secs  longest retry delay (default 300)\n"
    "  --drain  run until nothing is left but dead letters, waiting\n"
    "           for retries and others' leases (not with -w)\n"
    "  --progress  on a terminal, a line of jobs done, failed, running,\n"
    "           waiting, their rate and an ETA, kept up to date\n"
    "  --once   keep a ledger of finished messages: a job that exits 0\n"
    "           is acked by a rename into it, one found there acked unrun\n"
    "Exit 0: claimed (all jobs succeeded); 1: nothing visible; "
    "5: a job failed\n"
    "(--drain: 0 when none of its messages died, else 5).\n"
    "A job exiting 65 is dead-lettered at once.\n"
    MQ_HELP_SECS
    "See mq-recv(1).\n";

/*
 * -w on a spool that is not there yet (a worker started before its first
 * producer): look for it every SPOOL_POLL_MS until it is made or the wait
 * is over.  A root without its state directories is being made by mq-send,
 * or is no spool at all: it gets SPOOL_MAKING_MS to become one.  Whatever
 * is still wrong then is reported as without -w.
 */
#define SPOOL_POLL_MS	200
#define SPOOL_MAKING_MS	1000

static void
spool_open(struct mq_spool *sp, const char *dir, int wflag, uint64_t until)
{
	const char *path;
	uint64_t now, making = 0;
	int said = 0, e, r;

	if (!wflag || (dir != NULL && *dir == '\0') ||
	    (path = mq_spool_dir(dir)) == NULL) {
		mq_spool_xopen(sp, dir, 0);
		return;
	}
	while ((r = mq_spool_open(sp, path, 0)) == -1) {
		if ((e = errno) != ENOENT && e != ENOTDIR)
			break;
		now = mq_now_ms();
		if (e == ENOTDIR && making == 0)
			making = now;
		if (now >= until || (making != 0 &&
		    now - making >= SPOOL_MAKING_MS))
			break;
		/* Else a mistyped spool is waited for in silence. */
		if (!said++)
			warnx("%s: waiting for the spool to be made", path);
		poll(NULL, 0, until - now < SPOOL_POLL_MS ? (int)(until - now) :
		    SPOOL_POLL_MS);
	}
	if (r == -1)
		mq_spool_xopen(sp, dir, 0);
}

/* A wait ends in error; ENOENT: the spool went away under the waiter. */
static void __dead
wait_failed(const struct mq_spool *sp)
{
	if (errno == ENOENT)
		errx(MQ_EX_SYS, "%s: spool removed", sp->path);
	err(MQ_EX_SYS, "%s/%s", sp->path, MQ_DIR_NEW);
}

/*
 * A receipt on stdout; with -v (arg) the claim on stderr too: the ID,
 * its attempt and when its lease runs out, which the receipt holds in a
 * form for programs.
 */
static int
print_receipt(void *arg, const char *receipt, const char *id)
{
	const char *base;
	struct mq_name n;
	char when[32];

	fputs(receipt, stdout);
	putchar(zflag ? '\0' : '\n');
	if (arg != NULL) {
		base = strrchr(receipt, '/');
		base = base != NULL ? base + 1 : receipt;
		if (mq_name_parse(base, MQ_CUR, &n) == 0) {
			mq_time_iso(when, sizeof(when), n.ms);
			warnx("%s: claimed, attempt %u, lease until %s", id,
			    n.attempts, when);
		} else
			warnx("%s: claimed", id);
	}
	return ferror(stdout) ? -1 : 0;
}

/* What the command line asks for, in both modes. */
struct recv_opts {
	const char	*dir;
	const char	*wsecs;	/* -w's seconds; NULL: -w alone, or none */
	uint64_t	 lease;
	uint64_t	 wait_ms;
	int		 n;
	int		 nflag;
	int		 max;
	int		 wflag;
	const char	*worker_only;	/* an option only a worker takes */
	struct mq_work	 wo;
};

/*
 * After the options: the index of the command, argc if none.  A command
 * needs "--" before it (not an option's argument, lastarg), so that a
 * stray word (a typo in a number for -w, bare: wbare) is a usage error
 * and is never run.
 */
static int
command_at(int argc, char *argv[], const char *lastarg, int wbare)
{
	int dashdash;

	dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0 &&
	    argv[optind - 1] != lastarg;
	if (optind < argc && !dashdash) {
		if (wbare)
			errx(MQ_EX_USAGE, "-w %s: invalid (seconds, or none "
			    "to wait forever)", argv[optind]);
		warnx("%s: unexpected operand (a command to run follows --)",
		    argv[optind]);
		mq_usage(USAGE);
	}
	return optind;
}

/* Parses the options; returns the index of the command, argc if none. */
static int
parse(int argc, char *argv[], struct recv_opts *o)
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "tag", no_argument, NULL, OPT_TAG },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "backoff", required_argument, NULL, OPT_BACKOFF },
		{ "backoff-max", required_argument, NULL, OPT_BACKOFF_MAX },
		{ "drain", no_argument, NULL, OPT_DRAIN },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ NULL, 0, NULL, 0 }
	};
	struct mq_work *wo = &o->wo;
	char *lastarg = NULL;
	int ch, wbare = 0;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("0vd:n:t:m:w::P:hV"),
	    longopts, NULL)) != -1) {
		lastarg = optarg;
		wbare = 0;
		switch (ch) {
		case '0':
			zflag = 1;
			break;
		case 'v':
			wo->verbose = 1;
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'n':
			o->n = xnumber("-n", optarg, 1, 1000000);
			o->nflag = 1;
			break;
		case 'P':
			wo->slots = xnumber("-P", optarg, 1, 1024);
			o->worker_only = "-P";
			break;
		case OPT_TAG:
			wo->tag = 1;
			o->worker_only = "--tag";
			break;
		case OPT_TIMEOUT:
			wo->timeout_ms = xsecs("--timeout", optarg, 1);
			o->worker_only = "--timeout";
			break;
		case OPT_BACKOFF:
			wo->backoff_ms = xsecs("--backoff", optarg, 0);
			o->worker_only = "--backoff";
			break;
		case OPT_BACKOFF_MAX:
			wo->backoff_max_ms = xsecs("--backoff-max", optarg, 0);
			o->worker_only = "--backoff-max";
			break;
		case OPT_DRAIN:
			wo->drain = 1;
			o->worker_only = "--drain";
			break;
		case OPT_PROGRESS:
			wo->progress = 1;
			o->worker_only = "--progress";
			break;
		case OPT_ONCE:
			wo->once = 1;
			o->worker_only = "--once";
			break;
		case 't':
			o->lease = xsecs("-t", optarg, 1);
			break;
		case 'm':
			o->max = xnumber("-m", optarg, 1, MQ_ATTEMPTS_MAX);
			break;
		case 'w':
			o->wflag = 1;
			o->wsecs = mq_optional_secs(optarg, argc, argv);
			if (o->wsecs != NULL)
				o->wait_ms = xsecs("-w", o->wsecs, 0);
			else
				wbare = 1;
			break;
		default:
			mq_common_opt(ch, USAGE, help);
		}
	}
	if (wo->drain && o->wflag)
		errx(MQ_EX_USAGE, "--drain and -w: one ends once the spool is "
		    "drained, the other waits for more");
	return command_at(argc, argv, lastarg, wbare);
}

/*
 * Reads the spool's settings, which give what the command line left out
 * (mq-conf(1)): a receiver started with -m and one without agree on the
 * spool's.  Read again after each ring of a wait, so a change applies to
 * the claims that follow it.  *lease: the lease to give.
 */
static const struct mq_conf *
settings(const struct recv_opts *o, struct mq_spool *sp,
    struct mq_claimer *cl, uint64_t *lease)
{
	const struct mq_conf *c = mq_settings_xread(sp);

	cl->max = o->max;
	*lease = o->lease != 0 ? o->lease : c->lease_ms;
	cl->ring = c->max_depth > 0;
	return c;
}

/*
 * Receive mode: claims up to n messages, printing a receipt for each,
 * waiting until until for one with -w.  A paused spool hands out nothing;
 * under -w mq-conf's ring of the doorbell says when to read the settings
 * again, so a resume is seen as a new message is.
 */
static int
receive(struct recv_opts *o, uint64_t until)
{
	const struct mq_conf *conf;
	struct mq_spool sp;
	struct mq_waiter w;
	struct mq_claimer cl;
	uint64_t wake, now, lease;
	int64_t timeout;
	int got, total = 0, said = 0, r;

	spool_open(&sp, o->dir, o->wflag, until);
	/* One claim: no leaf to keep for a next one. */
	mq_claimer_init(&cl, 0);
	conf = settings(o, &sp, &cl, &lease);
	/* Watch before the first look, so that no ring falls in between. */
	if (o->wflag && mq_wait_open(&w, &sp) == -1)
		wait_failed(&sp);
	/* A resume between the read above and the watch rang unheard. */
	if (o->wflag && conf->paused)
		conf = settings(o, &sp, &cl, &lease);
	for (;;) {
		wake = UINT64_MAX;
		if (conf->paused) {
			/* Else a paused spool looks like an empty one. */
			if (!said++)
				warnx("%s: paused", sp.path);
			/* paused=TIME resumes by itself then, unrung. */
			if (conf->paused_until_ms != 0)
				wake = conf->paused_until_ms;
		} else {
			if ((got = mq_claim(&sp, &cl, o->n - total, lease,
			    print_receipt, o->wo.verbose ? &o->wo : NULL,
			    &wake)) == -1)
				err(MQ_EX_SYS, "%s", ferror(stdout) ?
				    "stdout" : sp.path);
			total += got;
			/*
			 * conf changed under the claim (mq-conf paused=yes,
			 * say): read again, and the rest of the n claimed by
			 * it; paused, a batch begun ends there, and one not
			 * begun is said paused.
			 */
			if (cl.changed) {
				conf = settings(o, &sp, &cl, &lease);
				if (total < o->n && (total == 0 ||
				    !conf->paused))
					continue;
				/* A batch cut short says why. */
				if (conf->paused && total < o->n && !said++)
					warnx("%s: paused", sp.path);
			}
		}
		if (total > 0 || !o->wflag)
			break;
		now = mq_now_ms();
		if (now >= until)
			break;
		if (wake > until)
			wake = until;
		timeout = wake == UINT64_MAX ? -1 : wake > now ?
		    (int64_t)(wake - now) : 0;
		/* What was done so far is in the log before the wait. */
		mq_log_flush();
		if ((r = mq_wait(&w, timeout)) == -1)
			wait_failed(&sp);
		if (r == 1 || (conf->paused && conf->paused_until_ms != 0 &&
		    mq_now_ms() >= conf->paused_until_ms)) {
			conf = settings(o, &sp, &cl, &lease);
			if (!conf->paused)
				said = 0;
		}
	}
	if (o->wflag)
		mq_wait_close(&w);
	mq_claimer_close(&cl);
	mq_spool_close(&sp);
	mq_stdout_close();
	return total > 0 ? MQ_EX_OK : MQ_EX_NONE;
}

/* Worker mode: runs argv for each message claimed (work.c). */
static int
work(struct recv_opts *o, char *argv[], uint64_t until)
{
	struct mq_spool sp;
	struct mq_work *wo = &o->wo;
	uint64_t now;
	int status;

	if (zflag)
		errx(MQ_EX_USAGE, "-0 prints receipts; a command "
		    "gets no receipts to print");
	spool_open(&sp, o->dir, o->wflag, until);
	/* 0: the spool's, which mq_work reads and follows. */
	wo->argv = argv;
	wo->limit = o->nflag ? o->n : 0;
	wo->lease_ms = o->lease;
	wo->max = o->max;
	now = mq_now_ms();
	/* --drain's end is the spool's, not a time idle. */
	wo->idle_ms = wo->drain ? UINT64_MAX : !o->wflag ? 0 :
	    o->wsecs == NULL ? UINT64_MAX : until > now ? until - now : 0;
	status = mq_work(&sp, wo);
	mq_spool_close(&sp);
	mq_stdout_close();
	return status;
}

int
main(int argc, char *argv[])
{
	struct recv_opts o;
	uint64_t until;
	int cmd;

	memset(&o, 0, sizeof(o));
	o.n = 1;
	o.wo.slots = 1;
	o.wo.backoff_ms = 1000;
	o.wo.backoff_max_ms = 300000;
	cmd = parse(argc, argv, &o);
	until = o.wsecs != NULL ? mq_now_ms() + o.wait_ms : UINT64_MAX;
	if (cmd < argc)
		return work(&o, argv + cmd, until);
	if (o.worker_only != NULL)
		errx(MQ_EX_USAGE, "%s needs a command to run", o.worker_only);
	return receive(&o, until);
}
