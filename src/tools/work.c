/*
 * work.c: worker mode of mq-recv.  Each claimed message is handed to a job
 * (the command, with the body on its standard input: job.c); while it runs
 * its lease is extended every third of the lease, and when it ends its exit
 * status decides: 0 acks, MQ_JOB_DEAD dead-letters at once, anything else
 * releases the message with exponential backoff until its last attempt,
 * which dead-letters it.
 *
 * One process and one poll(2) loop: the doorbell of new/, a self-pipe for
 * signals, and each job's stderr (and stdout with --tag), which job.c
 * passes on a line at a time.  The loop owns the leases: job.c starts,
 * signals and reaps processes and knows nothing of a message but the
 * body and the environment it is handed.  A claim is made only for
 * a free slot, so a worker holds at most `slots` leases and a worker that
 * dies strands no more than that: their leases run out and the messages
 * are handed out again.
 *
 * Invariant: a job's message is acked, released or buried only through the
 * receipt of its current lease; once a heartbeat finds the lease gone, the
 * message belongs to someone else and is left alone.
 *
 * --once keeps the spool's ledger of finished messages (once.c): a claim
 * whose message is in it is acked without a job; the message of a job
 * that exits 0 is renamed into it, its ack and its record at once, and
 * the renames made within ONCE_SYNC_MS share one sync of once/
 * (sync_once).  A
 * rename that fails releases the message; it, or a sync that fails, stops
 * the worker claiming.
 *
 * It ends, with no job running, when nothing is visible, with -w once
 * idle long enough, and with --drain once the spool holds nothing but
 * dead letters (drained): a retry it scheduled, another's lease or a
 * delay is still work to wait for, which a count of the spool tells and
 * the doorbell does not.
 *
 * Pausing (mq-conf paused=yes) stops the claiming and nothing else: jobs
 * run on and are settled.  A claim stops before its next lease when conf
 * changed since it was read (claim.c: one fstatat a lease), and the
 * worker reads it then, so that a pause holds once mq-conf has returned.
 * mq-conf also rings the doorbell after its write, which stays in the
 * poll set even while every slot is busy: a resume, or a pause said while
 * nothing is claimed, is read when it rings; as a busy spool rings often
 * (sends, and claims under max-depth), those reads are spaced by
 * CONF_GAP_MS at least, which bounds their cost.
 *
 * --progress keeps one line at the foot of a terminal's stderr, drawn in
 * place ("\r", the line, "\033[K"); anything else written there, the
 * worker's own lines or a job's, erases it first (bar_erase), and the loop
 * draws it again before its next wait.
 */
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "job.h"
#include "tools.h"

#define KILL_GRACE_MS	5000	/* from SIGTERM to SIGKILL */
#define NEVER		UINT64_MAX
#define CONF_GAP_MS	100	/* the least time between two conf reads */
/*
 * --once: how long the renames into the ledger wait for one sync, so that
 * jobs ending a few ms apart share it (one journal commit on ext4 each);
 * the window in which a finished job can run again after a power cut is
 * that much longer.
 */
#define ONCE_SYNC_MS	10
#define DRAIN_GAP_MS	1000	/* --drain: the least time between counts */
#define BAR_GAP_MS	500	/* --progress: drawn again at least this often */
#define COUNT_GAP_MS	1000	/* --progress: the least time between counts */
#define BAR_MAX		160	/* the longest line it draws */

/*
 * The progress line, one per process as stderr is; a static, as what
 * writes to stderr (warn, job.c) must erase it and knows no worker.
 */
static struct bar {
	int	 on;		/* --progress, and stderr is a terminal */
	int	 out_tty;	/* stdout is one too: jobs' stdout passed on */
	int	 shown;		/* on the screen now */
	int	 dirty;		/* a job was settled since it was drawn */
	uint64_t due;		/* draw it again then */
	uint64_t count_due;	/* count the spool again then */
	int	 counted;	/* waiting is known */
	uint64_t waiting;	/* ready, delayed and blocked */
} bar;

/*
 * Erases the line before something else is written to fd: stderr, or
 * stdout when it is the same terminal's too.
 */
static void
bar_erase(int fd)
{
	static const char erase[] = "\r\033[K";

	if (!bar.shown || (fd != STDERR_FILENO && !bar.out_tty))
		return;
	bar.shown = 0;
	if (write(STDERR_FILENO, erase, sizeof(erase) - 1) == -1) {
		/* An if, as in on_signal: a line left is no error. */
	}
}

/*
 * Every line the worker writes to stderr erases the progress line first;
 * these are err(3)'s own, the line being the only thing added.
 */
#define warn(...)	(bar_erase(STDERR_FILENO), warn(__VA_ARGS__))
#define warnx(...)	(bar_erase(STDERR_FILENO), warnx(__VA_ARGS__))
#define err(...)	(bar_erase(STDERR_FILENO), err(__VA_ARGS__))
#define errx(...)	(bar_erase(STDERR_FILENO), errx(__VA_ARGS__))

struct job {
	struct mq_job	 p;	/* its process; p.pid 0: a free slot */
	char	 id[MQ_ID_LEN + 1];
	char	 receipt[PATH_MAX];
	unsigned attempt;
	unsigned prio;
	unsigned deaths;	/* its past deaths (MQ_DEATHS) */
	char	 group[MQ_GROUP_MAX + 1];	/* "": none */
	char	 key[MQ_KEY_MAX + 1];	/* its dedup key (MQ_KEY), or "" */
	uint64_t beat;		/* next lease extension */
	uint64_t deadline;	/* --timeout: SIGTERM then */
	uint64_t kill_at;	/* SIGKILL then, once SIGTERM was sent */
	int	 timed_out;
	int	 stopped;	/* killed by a second stop signal */
	int	 lost;
	struct mq_name n;	/* its message's name, as claimed */
	uint64_t started;	/* ms, for the log's job record; 0: not run */
	pid_t	 pid;
	struct mq_output out;	/* its kept output (keep-output), or fd -1 */
};

/*
 * What a job is told of its message, in its environment; the worker's own
 * values of these names are not passed on (mq_command_init).
 */
enum { E_ID, E_RECEIPT, E_ATTEMPT, E_PRIORITY, E_DEATHS, E_GROUP, E_KEY,
    E_DIR, E_NVARS };
static const char *const varnames[E_NVARS] = { "MQ_ID", "MQ_RECEIPT",
    "MQ_ATTEMPT", "MQ_PRIORITY", "MQ_DEATHS", "MQ_GROUP", "MQ_KEY", "MQ_DIR" };

struct env {
	char	 id[sizeof("MQ_ID=") + MQ_ID_LEN];
	char	 receipt[sizeof("MQ_RECEIPT=") + PATH_MAX];
	char	 attempt[sizeof("MQ_ATTEMPT=") + 10];
	char	 prio[sizeof("MQ_PRIORITY=") + 10];
	char	 deaths[sizeof("MQ_DEATHS=") + 10];
	char	 group[sizeof("MQ_GROUP=") + MQ_GROUP_MAX];
	char	 key[sizeof("MQ_KEY=") + MQ_KEY_MAX];
	char	*dir;		/* MQ_DIR=, the spool's real path */
	char	*vars[E_NVARS + 1];
};

/* How a job ended: the log's job records name it (outcome=WORD). */
enum outcome {
	JOB_ACKED, JOB_RELEASED, JOB_DEAD, JOB_LOST, JOB_SKIPPED, JOB_ERROR,
	JOB_OUTCOMES
};
static const char *const outcome_word[JOB_OUTCOMES] = {
	"acked", "released", "dead", "lost", "skipped", "error"
};

struct worker {
	const struct mq_work *opt;
	struct mq_spool	*sp;
	struct mq_receipt rc;
	struct mq_claimer cl;
	struct mq_placer pl;
	struct mq_keys	 keys;		/* opened for the first keyed message */
	struct job	*jobs;
	int		 running;
	long long	 claimed;
	int		 stop;		/* stop signals received */
	int		 killsig;	/* the second one's number, or 0 */
	int		 halt;		/* claim no more: the command failed */
	int		 failed;	/* a job did not succeed */
	int		 status;	/* worst system status */
	int		 paused;	/* the spool's settings, as last read */
	unsigned	 max;		/* opt->max, else max-attempts */
	uint64_t	 lease_ms;	/* opt->lease_ms, else lease */
	uint64_t	 conf_at;	/* when it was read */
	uint64_t	 conf_due;	/* read it again then; NEVER: no need */
	uint64_t	 now;
	struct mq_command cmd;
	struct env	 env;		/* the job being started's */
	struct mq_waiter w;		/* the spool's doorbell */
	struct pollfd	*pfd;		/* 2 + 2 a slot */
	uint64_t	 wake;		/* the next delay due; NEVER: none */
	uint64_t	 idle_since;
	int		 look;		/* claim at the next turn */
	int		 empty;		/* the last claim found too few */
	int		 claimed_any;
	uint64_t	 drain_due;	/* --drain: count the spool again then */
	/* The jobs' outcomes, for the summary at exit. */
	long long	 n[JOB_OUTCOMES];	/* jobs by outcome */
	long long	 n_jobs;
	int		 recorded;	/* --once: entries not synced yet */
	uint64_t	 sync_due;	/* then: when they are synced */
	uint64_t	 began;
};

static int sigpipe[2] = { -1, -1 };

static void
on_signal(int sig)
{
	unsigned char c = sig;
	int saved = errno;

	/*
	 * An if, not a cast to void, which does not silence the
	 * warn_unused_result of glibc's _FORTIFY_SOURCE.
	 */
	if (write(sigpipe[1], &c, 1) == -1) {
		/* A pipe too full for the byte has a wake-up in it already. */
	}
	errno = saved;
}

/*
 * The signals whose disposition the worker changes, every one of which a
 * job has back at its default (mq_command_signals): the first CAUGHT are
 * caught, a byte each down the self-pipe; SIGHUP is ignored, as a hang-up
 * of the terminal or a reload must not stop the worker, and SIGPIPE, as a
 * closed stdout is reported by write, not by dying.
 */
static const int changed[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGPIPE };
#define CAUGHT		3
#define NCHANGED	(sizeof(changed) / sizeof(changed[0]))

static void
signals_setup(struct worker *wk)
{
	struct sigaction sa;
	sigset_t set;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&set);
	for (i = 0; i < CAUGHT; i++) {
		sigaction(changed[i], &sa, NULL);
		sigaddset(&set, changed[i]);
	}
	for (; i < NCHANGED; i++)
		signal(changed[i], SIG_IGN);
	mq_command_signals(&wk->cmd, changed, NCHANGED, &set);
}

/* The environment's values for j (mq_job_start). */
static char *const *
job_env(struct worker *wk, const struct job *j)
{
	struct env *v = &wk->env;
	char **e = v->vars;

	snprintf(v->id, sizeof(v->id), "MQ_ID=%s", j->id);
	snprintf(v->receipt, sizeof(v->receipt), "MQ_RECEIPT=%s", j->receipt);
	snprintf(v->attempt, sizeof(v->attempt), "MQ_ATTEMPT=%u", j->attempt);
	snprintf(v->prio, sizeof(v->prio), "MQ_PRIORITY=%u", j->prio);
	snprintf(v->deaths, sizeof(v->deaths), "MQ_DEATHS=%u", j->deaths);
	*e++ = v->id;
	*e++ = v->receipt;
	*e++ = v->attempt;
	*e++ = v->prio;
	*e++ = v->deaths;
	if (j->group[0] != '\0') {
		snprintf(v->group, sizeof(v->group), "MQ_GROUP=%s", j->group);
		*e++ = v->group;
	}
	if (j->key[0] != '\0') {
		snprintf(v->key, sizeof(v->key), "MQ_KEY=%s", j->key);
		*e++ = v->key;
	}
	*e++ = v->dir;
	*e = NULL;
	return v->vars;
}

static struct job *
free_slot(struct worker *wk)
{
	int i;

	for (i = 0; i < wk->opt->slots; i++)
		if (wk->jobs[i].p.pid == 0)
			return &wk->jobs[i];
	return NULL;
}

enum op { OP_ACK, OP_DONE, OP_RELEASE, OP_UNCLAIM, OP_BURY, OP_EXTEND };

/* What settle is to do, with what. */
struct how {
	enum op	 op;
	uint64_t when;		/* release: due; extend: the new deadline */
	const char *reason;	/* bury; release, unclaim: or NULL */
	char	*out;		/* extend: the new receipt */
	size_t	 size;
	enum mq_cause cause;	/* bury */
};

static int
apply(struct worker *wk, const struct how *h)
{
	size_t len;
	int st;

	switch (h->op) {
	case OP_ACK:
		return mq_receipt_ack(&wk->rc);
	case OP_DONE:
		return mq_receipt_done(&wk->rc);
	case OP_RELEASE:
	case OP_UNCLAIM:
		len = h->reason != NULL ? strlen(h->reason) : 0;
		st = h->op == OP_RELEASE ? mq_receipt_release(&wk->rc, &wk->pl,
		    h->when, h->reason, len) : mq_receipt_unclaim(&wk->rc,
		    &wk->pl, h->reason, len);
		if (st == MQ_EX_OK && mq_placer_flush(&wk->pl) == -1)
			st = MQ_EX_SYS;
		return st;
	case OP_BURY:
		return mq_receipt_bury(&wk->rc, h->reason, strlen(h->reason),
		    h->cause);
	default:
		return mq_receipt_extend(&wk->rc, h->when, h->out, h->size);
	}
}

/*
 * Does h with j's lease; returns the mq_exit status (errno set with
 * MQ_EX_SYS, *why with MQ_EX_USAGE).  The lease is not looked at first
 * (mq_receipt_claimed): the worker made it, and a lease lost since shows
 * as ENOENT from the rename or unlink of its own name, which then moves
 * nothing (another's lease of the message has another name: its deadline
 * and attempt).  Only then is it looked at (mq_receipt_open), as the
 * bucket kept open may be one removed since and made anew by a claim: if
 * the lease is there after all, h is done again.
 */
static int
settle(struct worker *wk, struct job *j, const struct how *h,
    const char **why)
{
	int st;

	*why = "";
	if ((st = mq_receipt_claimed(wk->sp, j->receipt, &wk->rc, why)) !=
	    MQ_EX_OK || (st = apply(wk, h)) != MQ_EX_LOST)
		return st;
	if ((st = mq_receipt_open(wk->sp, j->receipt, &wk->rc, why)) !=
	    MQ_EX_OK)
		return st;
	return apply(wk, h);
}

/* Says why settling j's message failed (st from settle).  Returns st. */
static int
settled(struct worker *wk, struct job *j, int st, const char *why)
{
	const char *shown = mq_receipt_shown(wk->sp, j->receipt);

	if (st == MQ_EX_LOST)
		warnx("%s: lease lost", shown);
	else if (st == MQ_EX_USAGE)
		warnx("%s: %s", shown, why);
	else if (st != MQ_EX_OK) {
		warn("%s", shown);
		wk->status = MQ_EX_SYS;
	}
	return st;
}

/*
 * A release done whose reason found no room (a full file system) says so:
 * a death for attempts will not name it.
 */
static void
unkept(struct worker *wk, struct job *j, int st)
{
	if (st == MQ_EX_OK && wk->rc.unkept != 0)
		warnx("%s: reason not kept: %s",
		    mq_receipt_shown(wk->sp, j->receipt),
		    strerror(wk->rc.unkept));
}

/*
 * Visible again at due, attempt kept; what a failed job's message gets,
 * with its failure as the reason (NULL: the last one given stays), so
 * that a death for attempts elsewhere still says why.
 */
static int
release(struct worker *wk, struct job *j, uint64_t due, const char *reason)
{
	struct how h = { OP_RELEASE, due, reason, NULL, 0, 0 };
	const char *why;
	int st;

	st = settle(wk, j, &h, &why);
	unkept(wk, j, settled(wk, j, st, why));
	return st;
}

/*
 * Visible again now with the attempt it had before its claim: what a
 * message gets whose job could not be started, which is no fault of its.
 */
static void
unclaim(struct worker *wk, struct job *j, const char *reason)
{
	struct how h = { OP_UNCLAIM, 0, reason, NULL, 0, 0 };
	const char *why;
	int st;

	st = settle(wk, j, &h, &why);
	unkept(wk, j, settled(wk, j, st, why));
}

/* Leases are extended every third of their length. */
static uint64_t
beat_ms(const struct worker *wk)
{
	return wk->lease_ms >= 3 ? wk->lease_ms / 3 : 1;
}

/* A line of a job's output, kept (output.c). */
static void
kept(void *arg, const char *buf, size_t len)
{
	mq_output_write(arg, buf, len);
}

/*
 * With keep-output, the job's output is kept as it is passed on; a file
 * that cannot be made is said, and the job runs all the same.
 */
static void
kept_open(struct worker *wk, struct job *j, int body)
{
	if (body == -1 || wk->sp->conf.keep_output_ms == 0)
		return;
	if (mq_output_open(&j->out, wk->sp, j->id, j->attempt) == -1) {
		warn("%s/%s/%s,%u", wk->sp->path, MQ_DIR_OUTPUT, j->id,
		    j->attempt);
		return;
	}
	j->p.keep = kept;
	j->p.keep_arg = &j->out;
}

/*
 * The process groups of the jobs running (each its own), for the file
 * that names this worker as a holder: it is not judged gone while a job
 * of it runs on (holder.c).
 */
static void
holder_jobs(struct worker *wk)
{
	long pgids[64];
	size_t n = 0;
	int i;

	for (i = 0; i < wk->opt->slots && n < 64; i++)
		if (wk->jobs[i].p.pid > 0)
			pgids[n++] = wk->jobs[i].p.pid;
	(void)mq_holder_jobs(wk->sp, pgids, n);
}

static void once_due(struct worker *, uint64_t);
static void sync_once(struct worker *);
static void job_logged(struct worker *, const struct job *, int, int,
    enum outcome);

/*
 * --once, before j's job is started: 1 when its message is in the ledger,
 * then acked with no job (said with -v, logged as a job skipped); 0 when
 * its job is to run; -1 when the ledger cannot be read: then the message
 * goes back as it came and the worker claims no more, as a job run
 * without the look could run twice.
 */
static int
finished_before(struct worker *wk, struct job *j)
{
	struct how h = { OP_ACK, 0, NULL, NULL, 0, 0 };
	char reason[128];
	const char *why, *e;
	int r, st;

	if ((r = mq_once_done(wk->sp, &wk->rc.n)) == 0)
		return 0;
	if (r == -1) {
		e = strerror(errno);
		snprintf(reason, sizeof(reason), "not looked up (--once): %s",
		    e);
		warnx("%s: %s/%s: %s; not looked up (--once), released", j->id,
		    wk->sp->path, MQ_DIR_ONCE, e);
		wk->status = MQ_EX_SYS;
		wk->halt = 1;
		unclaim(wk, j, reason);
		return -1;
	}
	st = settle(wk, j, &h, &why);
	if (settled(wk, j, st, why) != MQ_EX_OK)
		wk->failed = 1;
	else if (wk->opt->verbose)
		warnx("%s: finished before (--once): acked, not run", j->id);
	job_logged(wk, j, 0, st, JOB_SKIPPED);
	return 1;
}

/* Hands a claimed message to a free slot; called by mq_claim. */
static int
start(void *arg, const char *rcpt, const char *id)
{
	struct worker *wk = arg;
	struct job *j = free_slot(wk);
	char reason[PATH_MAX + 64];
	const char *why;
	int body, got, st, e;

	/* Starting many jobs takes a while: not past the ledger's sync. */
	if (wk->recorded > 0)
		once_due(wk, mq_now_ms());
	memset(j, 0, sizeof(*j));
	j->out.fd = j->out.dir = -1;
	if (bar.on) {
		j->p.before = bar_erase;
		j->p.pass_out = bar.out_tty;
	}
	strlcpy(j->id, id, sizeof(j->id));
	if (strlcpy(j->receipt, rcpt, sizeof(j->receipt)) >=
	    sizeof(j->receipt)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	wk->claimed++;
	/*
	 * The claim has just put a regular file there: its lease is not
	 * looked at, but for a body that cannot be opened (ENOENT: lost, or
	 * the bucket kept open was made anew since; see settle).
	 */
	if ((st = mq_receipt_claimed(wk->sp, j->receipt, &wk->rc, &why)) !=
	    MQ_EX_OK) {
		settled(wk, j, st, why);
		return 0;
	}
	j->attempt = wk->rc.n.attempts;
	if (wk->opt->once && (got = finished_before(wk, j)) != 0)
		return got == 1 ? 0 : -1;
	if ((body = mq_receipt_body(&wk->rc)) == -1 && errno == ENOENT) {
		if ((st = mq_receipt_open(wk->sp, j->receipt, &wk->rc,
		    &why)) != MQ_EX_OK) {
			settled(wk, j, st, why);
			return 0;
		}
		body = mq_receipt_body(&wk->rc);
	}
	j->attempt = wk->rc.n.attempts;
	j->n = wk->rc.n;
	j->prio = wk->rc.n.prio;
	j->deaths = wk->rc.n.deaths;
	memcpy(j->group, wk->rc.n.group, sizeof(j->group));
	if ((got = mq_key_get(&wk->keys, &wk->rc.n, j->key)) != 1) {
		/* The job runs without MQ_KEY. */
		if (got == -1)
			warn("%s/%s/%s", wk->sp->path, MQ_DIR_KEYS,
			    wk->rc.n.keyhash);
		j->key[0] = '\0';
	}
	kept_open(wk, j, body);
	if (body == -1 || mq_job_start(&wk->cmd, &j->p, body, job_env(wk, j),
	    wk->opt->tag ? j->id : NULL) == -1) {
		e = errno;
		mq_output_close(&j->out);
		warn("%s", body == -1 ?
		    mq_receipt_shown(wk->sp, j->receipt) : wk->opt->argv[0]);
		if (body != -1) {
			close(body);
			snprintf(reason, sizeof(reason), "cannot run %s: %s",
			    wk->opt->argv[0], strerror(e));
		}
		wk->status = MQ_EX_SYS;
		wk->halt = 1;
		/* Not the message's fault: it goes back as it came. */
		unclaim(wk, j, body != -1 ? reason : NULL);
		return -1;
	}
	close(body);
	wk->now = mq_now_ms();
	j->started = wk->now;
	j->pid = j->p.pid;
	holder_jobs(wk);
	j->beat = wk->now + beat_ms(wk);
	j->deadline = wk->opt->timeout_ms ? wk->now + wk->opt->timeout_ms :
	    NEVER;
	j->kill_at = NEVER;
	wk->running++;
	if (wk->opt->verbose)
		warnx("%s: attempt %u: started", j->id, j->attempt);
	return 0;
}

/* base * 2^(attempt-1), capped, then a random point in its upper half. */
static uint64_t
backoff(const struct mq_work *o, unsigned attempt)
{
	uint64_t d = o->backoff_ms;
	unsigned i;

	for (i = 1; i < attempt && d < o->backoff_max_ms; i++)
		d *= 2;
	if (d > o->backoff_max_ms)
		d = o->backoff_max_ms;
	if (d > UINT32_MAX)
		d = UINT32_MAX;
	return d - d / 2 + arc4random_uniform((uint32_t)(d / 2) + 1);
}

/* Milliseconds as seconds, with no more decimals than it needs. */
static const char *
secs(char *buf, size_t size, uint64_t ms)
{
	size_t n;

	snprintf(buf, size, "%" PRIu64 ".%03" PRIu64, ms / 1000, ms % 1000);
	n = strlen(buf);
	while (buf[n - 1] == '0')
		buf[--n] = '\0';
	if (buf[n - 1] == '.')
		buf[--n] = '\0';
	return buf;
}

/* How long j ran, as -v and the failure lines say it: "1.25". */
static const char *
ran(char *buf, size_t size, const struct worker *wk, const struct job *j)
{
	return secs(buf, size, wk->now - j->started);
}

/* Why a job failed, in words for the log and a dead letter's reason. */
static void
failure(const struct worker *wk, const struct job *j, int ws, char *buf,
    size_t size)
{
	char t[32];

	if (j->timed_out)
		snprintf(buf, size, "timed out after %s s",
		    secs(t, sizeof(t), wk->opt->timeout_ms));
	else if (WIFSIGNALED(ws))
		snprintf(buf, size, "killed by signal %d", WTERMSIG(ws));
	else
		snprintf(buf, size, "exit %d", WEXITSTATUS(ws));
}

/* Dead-letters j's message with reason; the log says why (shown). */
static int
bury(struct worker *wk, struct job *j, const char *reason, const char *shown,
    enum mq_cause cause)
{
	struct how h = { OP_BURY, 0, reason, NULL, 0, cause };
	const char *why;
	char t[32];
	int st;

	st = settle(wk, j, &h, &why);
	if (settled(wk, j, st, why) == MQ_EX_OK)
		warnx("%s: dead-lettered: %s (ran %s s)", j->id, shown,
		    ran(t, sizeof(t), wk, j));
	return st;
}

static int
ack(struct worker *wk, struct job *j)
{
	struct how h = { OP_ACK, 0, NULL, NULL, 0, 0 };
	const char *why;
	char t[32];
	int st;

	st = settle(wk, j, &h, &why);
	if (settled(wk, j, st, why) != MQ_EX_OK) {
		wk->failed = 1;
		return st;
	}
	if (wk->opt->verbose)
		warnx("%s: done in %s s", j->id, ran(t, sizeof(t), wk, j));
	return st;
}

/*
 * The job's record in the spool's log (mq-log): where and when it ran,
 * how it ended, what became of its message (outcome: acked, released,
 * dead; skipped, acked with no job run as the ledger had it (--once);
 * lost when its lease was, error when settling it failed), and its last
 * line on stderr.  A job skipped has no pid, start, runtime or exit.
 */
static void
job_logged(struct worker *wk, const struct job *j, int ws, int st,
    enum outcome oc)
{
	const char *outcome;
	static char host[256];
	char t[40];
	size_t n;

	if (host[0] == '\0' && gethostname(host, sizeof(host) - 1) == -1)
		strlcpy(host, "-", sizeof(host));
	if (st == MQ_EX_LOST)
		oc = JOB_LOST;
	else if (st != MQ_EX_OK)
		oc = JOB_ERROR;
	outcome = outcome_word[oc];
	wk->n_jobs++;
	wk->n[oc]++;
	bar.dirty = 1;
	mq_log_begin(wk->sp, "job", j->id);
	mq_log_num("attempt", j->attempt);
	mq_log_str("host", host, strlen(host));
	if (j->started == 0) {
		mq_log_str("outcome", outcome, strlen(outcome));
		mq_log_end();
		return;
	}
	mq_log_num("job_pid", (uint64_t)j->pid);
	mq_time_iso(t, sizeof(t), j->started);
	/* To the ms, as the log's own times are. */
	if ((n = strlen(t)) > 0 && t[n - 1] == 'Z')
		snprintf(t + n - 1, sizeof(t) - n + 1, ".%03uZ",
		    (unsigned)(j->started % 1000));
	mq_log_str("start", t, strlen(t));
	secs(t, sizeof(t), wk->now - j->started);
	mq_log_str("runtime", t, strlen(t));
	if (WIFSIGNALED(ws))
		mq_log_num("signal", (uint64_t)WTERMSIG(ws));
	else
		mq_log_num("exit", (uint64_t)WEXITSTATUS(ws));
	if (j->timed_out)
		mq_log_str("timed_out", "yes", 3);
	mq_log_str("outcome", outcome, strlen(outcome));
	if (j->p.last[0] != '\0')
		mq_log_str("stderr", j->p.last, strlen(j->p.last));
	mq_log_end();
}

/* --once: an entry made, to be synced with those of the next few ms. */
static void
recorded(struct worker *wk)
{
	if (wk->recorded++ == 0)
		wk->sync_due = wk->now + ONCE_SYNC_MS;
}

/*
 * --once: j's job succeeded; its message goes into the ledger, its ack and
 * its record in one rename (once.c), durable with the others made within
 * ONCE_SYNC_MS of the first (sync_once).  Its lease lost, the message is
 * another's, whose job may be running: an empty entry of its name says
 * the work is done.  A
 * message that cannot be moved there is released as it is, to be run
 * again, and the worker claims no more.
 */
static void
done(struct worker *wk, struct job *j, int ws)
{
	struct how h = { OP_DONE, 0, NULL, NULL, 0, 0 };
	char reason[128], t[32];
	const char *why;
	int st, e;

	if (!j->lost) {
		st = settle(wk, j, &h, &why);
		if (st == MQ_EX_OK) {
			recorded(wk);
			if (wk->opt->verbose)
				warnx("%s: done in %s s", j->id,
				    ran(t, sizeof(t), wk, j));
			job_logged(wk, j, ws, st, JOB_ACKED);
			return;
		}
		if (st != MQ_EX_LOST) {
			e = errno;
			warnx("%s: %s/%s: %s; not recorded (--once), released",
			    j->id, wk->sp->path, MQ_DIR_ONCE, strerror(e));
			wk->status = MQ_EX_SYS;
			wk->halt = 1;
			wk->failed = 1;
			snprintf(reason, sizeof(reason),
			    "not recorded (--once): %s", strerror(e));
			job_logged(wk, j, ws, release(wk, j, wk->now, reason),
			    JOB_RELEASED);
			return;
		}
		settled(wk, j, st, why);
	}
	wk->failed = 1;
	if (mq_once_record(wk->sp, &j->n) == 0)
		recorded(wk);
	else {
		warnx("%s: %s/%s: %s; not recorded (--once)", j->id,
		    wk->sp->path, MQ_DIR_ONCE, strerror(errno));
		wk->status = MQ_EX_SYS;
		wk->halt = 1;
	}
	job_logged(wk, j, ws, MQ_EX_LOST, JOB_LOST);
}

/* --once: the ledger synced if its first entry not synced is due by now. */
static void
once_due(struct worker *wk, uint64_t now)
{
	if (wk->recorded > 0 && wk->sync_due <= now)
		sync_once(wk);
}

/*
 * --once: one sync of the ledger for the entries made since the last,
 * when the first of them is ONCE_SYNC_MS old, and before the worker
 * exits.  One that fails cannot undo them: it is said, and the worker
 * claims no more.
 */
static void
sync_once(struct worker *wk)
{
	wk->sync_due = NEVER;
	if (mq_once_sync(wk->sp) == 0) {
		wk->recorded = 0;
		return;
	}
	warnx("%s/%s: %s; %d finished message%s may run again after a power "
	    "cut (--once)", wk->sp->path, MQ_DIR_ONCE, strerror(errno),
	    wk->recorded, wk->recorded == 1 ? "" : "s");
	wk->recorded = 0;
	wk->status = MQ_EX_SYS;
	wk->halt = 1;
	wk->failed = 1;
}

/* The job has ended with wait status ws: settle its message. */
static void
finish(struct worker *wk, struct job *j, int ws)
{
	char why[64], cause[sizeof(why) + 2 + MQ_JOB_LAST_MAX], t[32], r[32];
	char *reason, *shown;
	size_t len;
	uint64_t delay;
	int ok;

	mq_job_end(&j->p);
	mq_output_close(&j->out);
	wk->running--;
	wk->now = mq_now_ms();
	/* Even after a stop signal, a job that says it succeeded did. */
	ok = WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && !j->timed_out;
	/* Its lease lost, a job that succeeded is still done: recorded. */
	if (ok && wk->opt->once) {
		done(wk, j, ws);
		return;
	}
	if (j->lost) {
		wk->failed = 1;
		job_logged(wk, j, ws, MQ_EX_LOST, JOB_LOST);
		return;
	}
	if (ok) {
		job_logged(wk, j, ws, ack(wk, j), JOB_ACKED);
		return;
	}
	wk->failed = 1;
	failure(wk, j, ws, why, sizeof(why));
	/*
	 * The reason keeps the job's last line on stderr; the log does not
	 * repeat it, as it was passed on when the job wrote it.
	 */
	snprintf(cause, sizeof(cause), "%s%s%s", why,
	    j->p.last[0] != '\0' ? ": " : "", j->p.last);
	if (j->stopped) {
		warnx("%s: stopped (%s); released (ran %s s)", j->id, why,
		    ran(r, sizeof(r), wk, j));
		job_logged(wk, j, ws, release(wk, j, wk->now, NULL),
		    JOB_RELEASED);
	} else if (WIFEXITED(ws) && WEXITSTATUS(ws) == MQ_JOB_DEAD &&
	    !j->timed_out)
		job_logged(wk, j, ws, bury(wk, j, cause, why, MQ_CAUSE_REJECTED),
		    JOB_DEAD);
	else if (j->attempt >= wk->max) {
		/* The form of every death for attempts (dead.c). */
		reason = mq_reason_spent(cause, strlen(cause), &len);
		shown = mq_reason_spent(why, strlen(why), &len);
		/* Without them, the claim after its lease buries it. */
		if (reason == NULL || shown == NULL) {
			(void)settled(wk, j, MQ_EX_SYS, NULL);
			job_logged(wk, j, ws, MQ_EX_SYS, JOB_ERROR);
		} else
			job_logged(wk, j, ws, bury(wk, j, reason, shown,
			    MQ_CAUSE_ATTEMPTS), JOB_DEAD);
		free(reason);
		free(shown);
	} else {
		delay = backoff(wk->opt, j->attempt);
		warnx("%s: %s; attempt %u of %u, again in %s s (ran %s s)",
		    j->id, why, j->attempt, wk->max, secs(t, sizeof(t), delay),
		    ran(r, sizeof(r), wk, j));
		job_logged(wk, j, ws, release(wk, j, wk->now + delay, cause),
		    JOB_RELEASED);
	}
}

static void
reap(struct worker *wk)
{
	pid_t pid;
	int ws, i;

	/* Every child is a running job: none left, none to ask for. */
	while (wk->running > 0 && (pid = mq_job_reap(&ws)) > 0) {
		for (i = 0; i < wk->opt->slots; i++) {
			if (wk->jobs[i].p.pid == pid) {
				finish(wk, &wk->jobs[i], ws);
				break;
			}
		}
	}
}

/* Keeps the lease of a running job ahead of its deadline. */
static void
heartbeat(struct worker *wk, struct job *j)
{
	char out[PATH_MAX];
	struct how h = { OP_EXTEND, 0, NULL, out, sizeof(out), 0 };
	const char *why;
	int st;

	j->beat = wk->now + beat_ms(wk);
	if (j->lost)
		return;
	h.when = wk->now + wk->lease_ms;
	st = settle(wk, j, &h, &why);
	/* A heartbeat missed is tried again at the next. */
	if (st == MQ_EX_SYS) {
		warn("%s", mq_receipt_shown(wk->sp, j->receipt));
		return;
	}
	if (st != MQ_EX_OK) {
		settled(wk, j, st, why);
		j->lost = 1;
		return;
	}
	strlcpy(j->receipt, out, sizeof(j->receipt));
}

/* The timers of every job: heartbeats, --timeout, SIGKILL after grace. */
static uint64_t
timers(struct worker *wk)
{
	uint64_t next = NEVER;
	struct job *j;
	int i;

	once_due(wk, wk->now);
	if (wk->recorded > 0)
		next = wk->sync_due;
	for (i = 0; i < wk->opt->slots; i++) {
		j = &wk->jobs[i];
		if (j->p.pid == 0)
			continue;
		if (j->beat <= wk->now)
			heartbeat(wk, j);
		if (j->deadline <= wk->now) {
			j->timed_out = 1;
			j->deadline = NEVER;
			j->kill_at = wk->now + KILL_GRACE_MS;
			mq_job_signal(&j->p, SIGTERM);
		}
		if (j->kill_at <= wk->now) {
			j->kill_at = NEVER;
			mq_job_signal(&j->p, SIGKILL);
		}
		if (j->beat < next)
			next = j->beat;
		if (j->deadline < next)
			next = j->deadline;
		if (j->kill_at < next)
			next = j->kill_at;
	}
	return next;
}

static void
on_stop(struct worker *wk, int sig)
{
	struct job *j;
	int i;

	if (++wk->stop == 1) {
		if (wk->running > 0)
			warnx("stopping: waiting for %d running job%s "
			    "(again to kill %s)", wk->running,
			    wk->running == 1 ? "" : "s",
			    wk->running == 1 ? "it" : "them");
		return;
	}
	if (wk->killsig == 0)
		wk->killsig = sig;
	for (i = 0; i < wk->opt->slots; i++) {
		j = &wk->jobs[i];
		if (j->p.pid == 0 || j->stopped)
			continue;
		j->stopped = 1;
		j->kill_at = wk->now + KILL_GRACE_MS;
		mq_job_signal(&j->p, SIGTERM);
	}
}

static void
signals_read(struct worker *wk, int *child)
{
	unsigned char buf[64];
	ssize_t n, i;

	do {
		if ((n = read(sigpipe[0], buf, sizeof(buf))) <= 0)
			break;
		for (i = 0; i < n; i++) {
			if (buf[i] == SIGCHLD)
				*child = 1;
			else
				on_stop(wk, buf[i]);
		}
	} while (n == (ssize_t)sizeof(buf));	/* else it is empty now */
}

static int64_t
until(uint64_t when, uint64_t now)
{
	if (when == NEVER)
		return -1;
	if (when <= now)
		return 0;
	return when - now > INT32_MAX ? INT32_MAX : (int64_t)(when - now);
}

/*
 * Reads the settings again: paused, the ttl, max-depth, and max-attempts
 * and lease where the command line left them to the spool, so that a
 * long-running worker follows mq-conf as a new one would.  Settings that
 * no longer parse stop the worker as they would have stopped it from
 * starting: running jobs finish, exit 4.
 */
static void
reread(struct worker *wk)
{
	const struct mq_conf *c = &wk->sp->conf;

	wk->conf_at = wk->now;
	wk->conf_due = NEVER;
	if (mq_settings_reread(wk->sp) == -1) {
		wk->status = MQ_EX_SYS;
		wk->halt = 1;
		return;
	}
	/* Said without -v too: else a paused spool looks like an empty one. */
	if (c->paused != wk->paused)
		warnx("%s: %s", wk->sp->path, c->paused ? "paused" : "resumed");
	wk->paused = c->paused;
	/* paused=TIME resumes by itself then: read again at that time. */
	if (c->paused && c->paused_until_ms != 0)
		wk->conf_due = c->paused_until_ms;
	wk->max = wk->opt->max != 0 ? wk->opt->max : c->max_attempts;
	wk->lease_ms = wk->opt->lease_ms != 0 ? wk->opt->lease_ms :
	    c->lease_ms;
	wk->cl.max = wk->opt->max;
	/* Claims make room that senders waiting under max-depth wait for. */
	wk->cl.ring = c->max_depth > 0;
}

/*
 * The doorbell rang: read the settings now, or once CONF_GAP_MS is up.
 * Sooner than a read already due: paused=TIME has one due at its end,
 * and a resume said before it (mq-conf paused=no) must not wait for it.
 */
static void
rung(struct worker *wk)
{
	uint64_t at = wk->conf_at + CONF_GAP_MS;

	if (at < wk->now)
		at = wk->now;
	if (at < wk->conf_due)
		wk->conf_due = at;
}

/*
 * A worker holds its leases while it lives: once it is gone, the next
 * claim or sweep takes them back (holder.c).  Its command, for whoever
 * looks at them.
 */
static void
holder_bind(char *const *argv)
{
	char command[512];
	size_t len = 0;

	command[0] = '\0';
	for (; *argv != NULL && len < sizeof(command); argv++)
		len += snprintf(command + len, sizeof(command) - len, "%s%s",
		    len > 0 ? " " : "", *argv);
	mq_holder_bind(getprogname(), command);
}

/*
 * Everything a worker needs before its first claim.  A command that
 * cannot run is known before anything is claimed: each start of a worker
 * restarted on failure would otherwise spend an attempt of the messages
 * at the head of the queue.
 */
static void
worker_open(struct worker *wk, struct mq_spool *sp, const struct mq_work *opt)
{
	size_t len;

	memset(wk, 0, sizeof(*wk));
	wk->opt = opt;
	wk->sp = sp;
	wk->wake = wk->drain_due = wk->sync_due = NEVER;
	wk->look = 1;
	mq_receipt_init(&wk->rc);
	mq_placer_release_init(&wk->pl, sp);
	mq_keys_init(&wk->keys, sp);
	/* One claim per free slot: list each leaf once, not once a claim. */
	mq_claimer_init(&wk->cl, 1);
	wk->cl.lazy = 1;
	holder_bind(opt->argv);
	wk->jobs = xreallocarray(NULL, opt->slots, sizeof(*wk->jobs));
	memset(wk->jobs, 0, opt->slots * sizeof(*wk->jobs));
	wk->pfd = xreallocarray(NULL, 2 + 2 * (size_t)opt->slots,
	    sizeof(*wk->pfd));
	if (mq_spool_real(sp) == -1 || mq_pipe_cloexec(sigpipe) == -1)
		err(MQ_EX_SYS, "%s", sp->path);
	/* A new pipe's end has no other status flag to keep. */
	fcntl(sigpipe[0], F_SETFL, O_NONBLOCK);
	mq_command_init(&wk->cmd, opt->argv, varnames, E_NVARS);
	len = strlen("MQ_DIR=") + strlen(sp->real) + 1;
	wk->env.dir = xmalloc(len);
	snprintf(wk->env.dir, len, "MQ_DIR=%s", sp->real);
	if (mq_command_find(&wk->cmd) == -1) {
		if (errno == ENOENT && strchr(opt->argv[0], '/') == NULL)
			errx(MQ_EX_SYS, "%s: command not found", opt->argv[0]);
		err(MQ_EX_SYS, "%s", opt->argv[0]);
	}
	fcntl(sigpipe[1], F_SETFL, fcntl(sigpipe[1], F_GETFL) | O_NONBLOCK);
	signals_setup(wk);
	/* Watch before the first look, so that no ring falls in between. */
	if (mq_wait_open(&wk->w, sp) == -1) {
		if (errno == ENOENT)
			errx(MQ_EX_SYS, "%s: spool removed", sp->path);
		err(MQ_EX_SYS, "%s/%s", sp->path, MQ_DIR_NEW);
	}
	/* After the watch, so that a resume from now on rings it. */
	wk->now = mq_now_ms();
	reread(wk);
	if (wk->halt)
		exit(MQ_EX_SYS);
	wk->idle_since = wk->began = wk->now;
	/* A pipe or a file gets no progress line: scripts compare them. */
	bar.on = opt->progress && isatty(STDERR_FILENO);
	bar.out_tty = bar.on && isatty(STDOUT_FILENO);
}

/* The settings read again when due; paused, nothing is claimable. */
static void
settings_due(struct worker *wk)
{
	if (wk->conf_due <= wk->now && wk->halt)
		wk->conf_due = NEVER;	/* claims no more anyway */
	else if (wk->conf_due <= wk->now) {
		reread(wk);
		if (!wk->paused)
			wk->look = 1;
	}
	/* Paused: as an empty queue, no wake. */
	if (wk->paused) {
		wk->empty = 1;
		wk->wake = NEVER;
	}
}

/* 1 when a claim is to be made now: a free slot, within the limit. */
static int
claiming(const struct worker *wk)
{
	const struct mq_work *opt = wk->opt;

	return wk->look && !wk->paused && !wk->stop && !wk->halt &&
	    wk->running < opt->slots &&
	    (opt->limit == 0 || wk->claimed < opt->limit);
}

/* A claim for each free slot, within the limit; each job started. */
static void
claim_some(struct worker *wk)
{
	const struct mq_work *opt = wk->opt;
	int n, got;

	if (!claiming(wk))
		return;
	n = opt->slots - wk->running;
	if (opt->limit > 0 && opt->limit - wk->claimed < n)
		n = (int)(opt->limit - wk->claimed);
	got = mq_claim(wk->sp, &wk->cl, n, wk->lease_ms, start, wk,
	    &wk->wake);
	if (got == -1 && !wk->halt) {
		warn("%s", wk->sp->path);
		wk->status = MQ_EX_SYS;
		wk->halt = 1;
	}
	if (got > 0) {
		wk->claimed_any = 1;
		/* Its jobs change the spool: count it as soon as they end. */
		wk->drain_due = NEVER;
	}
	wk->empty = got < n;
	/* A claim whose job could not start leaves its slot free. */
	wk->look = !wk->empty && wk->running < opt->slots && !wk->halt;
	wk->now = mq_now_ms();
	/*
	 * Claims that ran no job (--once: acked as finished before) were
	 * work all the same: -w's idle time counts from them.
	 */
	if (got > 0)
		wk->idle_since = wk->now;
	/*
	 * conf changed under the claim (mq-conf paused=yes, say): read now,
	 * not at the doorbell's ring, and claimed again by it.
	 */
	if (wk->cl.changed && !wk->halt) {
		reread(wk);
		/*
		 * A claim stopped by the change found nothing about the
		 * queue: not empty, or a worker whose job just ended would
		 * take it for idle and exit with messages waiting.
		 */
		if (!wk->paused && !wk->halt) {
			wk->empty = 0;
			wk->look = wk->running < opt->slots;
		}
	}
}

/*
 * --drain, with no job running and nothing claimable: 1 when nothing is
 * left in the spool but dead letters, counted as mq-stat counts them.
 * Others' leases and the delays due later keep it waiting; the delays
 * wake it when due (the claim's wake), an ack elsewhere rings nothing, so
 * the spool is counted again after DRAIN_GAP_MS, or ten times as long as
 * the count took, which keeps a deep spool's counting to a tenth of the
 * time.
 */
static int
drained(struct worker *wk)
{
	struct mq_stats st;
	uint64_t took, gap;

	if (wk->drain_due != NEVER && wk->drain_due > wk->now)
		return 0;
	if (mq_stat(wk->sp, wk->now, wk->sp->conf.ttl_ms, 0, &st) == -1) {
		warn("%s", wk->sp->path);
		wk->status = MQ_EX_SYS;
		return 1;
	}
	if (st.ready + st.delayed + st.in_flight + st.expired +
	    st.blocked == 0)
		return 1;
	took = mq_now_ms() - wk->now;
	gap = took * 10 > DRAIN_GAP_MS ? took * 10 : DRAIN_GAP_MS;
	wk->drain_due = wk->now + gap;
	return 0;
}

/* With no job running: 1 when the worker is done. */
static int
worker_done(struct worker *wk)
{
	const struct mq_work *opt = wk->opt;

	if (wk->stop || wk->halt)
		return 1;
	if (opt->limit > 0 && wk->claimed >= opt->limit)
		return 1;
	if (opt->drain) {
		if (wk->empty && drained(wk))
			return 1;
	} else if (wk->empty && wk->now - wk->idle_since >= opt->idle_ms)
		return 1;
	/*
	 * The bucket of the last lease settled goes once idle: while busy,
	 * the next claims' leases mostly fall in it, and one settled in
	 * another removes it then.
	 */
	mq_receipt_prune(&wk->rc);
	return 0;
}

/* When to wake at the latest: a job's timer, a delay due, the settings. */
static uint64_t
next_wake(struct worker *wk)
{
	uint64_t next = timers(wk);

	/*
	 * Slots left free by claims that ran no job (--once: acked as
	 * finished before) are filled at once, not at the next wake.
	 */
	if (claiming(wk))
		return wk->now;
	if (wk->empty && wk->wake < next)
		next = wk->wake;
	if (wk->conf_due < next)
		next = wk->conf_due;
	if (wk->running == 0 && wk->empty && wk->drain_due < next)
		next = wk->drain_due;
	if (wk->running == 0 && wk->empty && wk->opt->idle_ms != NEVER &&
	    wk->idle_since + wk->opt->idle_ms < next)
		next = wk->idle_since + wk->opt->idle_ms;
	if (bar.on && bar.due < next)
		next = bar.due;
	return next;
}

/* The spool's doorbell, as poll found it. */
static void
doorbell(struct worker *wk, int wfd, int revents)
{
	int ring = mq_wait_rung(&wk->w, wfd != -1 && revents != 0);

	if (ring == 1) {
		wk->look = 1;
		rung(wk);
	} else if (ring == -1 && !wk->halt) {
		if (errno == ENOENT)
			warnx("%s: spool removed", wk->sp->path);
		else
			warn("%s/%s", wk->sp->path, MQ_DIR_NEW);
		wk->status = MQ_EX_SYS;
		wk->halt = 1;
	}
}

/*
 * One wait, up to timeout ms: for a signal, the doorbell (also with every
 * slot busy: a pause must be seen then too), and the jobs' output; then
 * what came is handled.
 */
static void
wait_once(struct worker *wk, int64_t timeout)
{
	const struct mq_work *opt = wk->opt;
	struct pollfd *pfd = wk->pfd;
	int i, n = 0, s, child = 0, wfd = -1, watching, before;

	pfd[n].fd = sigpipe[0];
	pfd[n++].events = POLLIN;
	if ((watching = !wk->stop && !wk->halt)) {
		wfd = mq_wait_fd(&wk->w, &timeout);
		pfd[n].fd = wfd;
		pfd[n++].events = POLLIN;
	}
	for (i = 0; i < opt->slots; i++) {
		pfd[n].fd = wk->jobs[i].p.pid ? wk->jobs[i].p.out.fd : -1;
		pfd[n++].events = POLLIN;
		pfd[n].fd = wk->jobs[i].p.pid ? wk->jobs[i].p.err.fd : -1;
		pfd[n++].events = POLLIN;
	}
	for (i = 0; i < n; i++)
		pfd[i].revents = 0;
	/* What was done so far is in the log before the wait (log.c). */
	mq_log_flush();
	if (poll(pfd, n, timeout > INT_MAX ? INT_MAX : (int)timeout) == -1 &&
	    errno != EINTR) {
		warn("poll");
		if (wk->recorded > 0)
			sync_once(wk);
		exit(MQ_EX_SYS);
	}
	wk->now = mq_now_ms();

	if (pfd[0].revents)
		signals_read(wk, &child);
	i = 1;
	if (watching)
		doorbell(wk, wfd, pfd[i++].revents);
	for (s = 0; s < opt->slots; s++, i += 2) {
		if (wk->jobs[s].p.pid == 0)
			continue;
		if (pfd[i].revents)
			mq_job_read(&wk->jobs[s].p, &wk->jobs[s].p.out);
		if (pfd[i + 1].revents)
			mq_job_read(&wk->jobs[s].p, &wk->jobs[s].p.err);
	}
	if (child) {
		before = wk->running;
		reap(wk);
		if (wk->running < before)
			wk->look = 1;
	}
	if (wk->empty && wk->wake != NEVER && wk->now >= wk->wake)
		wk->look = 1;
	/* What the count found may be claimable by now. */
	if (wk->drain_due != NEVER && wk->now >= wk->drain_due)
		wk->look = 1;
}

/*
 * --progress: the messages waiting in the spool (ready, delayed, blocked),
 * counted as mq-stat counts them, once a COUNT_GAP_MS at most, or ten
 * times as long as a count took, as drained() does.  A count that fails
 * leaves them out of the line; the jobs go on.
 */
static void
bar_count(struct worker *wk)
{
	struct mq_stats st;
	uint64_t took, gap;

	if (bar.count_due > wk->now)
		return;
	bar.counted = mq_stat(wk->sp, wk->now, wk->sp->conf.ttl_ms, 0,
	    &st) == 0;
	if (bar.counted)
		bar.waiting = st.ready + st.delayed + st.blocked;
	took = mq_now_ms() - wk->now;
	gap = took * 10 > COUNT_GAP_MS ? took * 10 : COUNT_GAP_MS;
	bar.count_due = wk->now + gap;
}

/* Seconds to come, as "47 s", "3:07" or "1:03:07". */
static const char *
eta(char *buf, size_t size, uint64_t s)
{
	if (s < 60)
		snprintf(buf, size, "%" PRIu64 " s", s);
	else if (s < 3600)
		snprintf(buf, size, "%" PRIu64 ":%02" PRIu64, s / 60, s % 60);
	else
		snprintf(buf, size, "%" PRIu64 ":%02" PRIu64 ":%02" PRIu64,
		    s / 3600, s / 60 % 60, s % 60);
	return buf;
}

/*
 * What became of the jobs so far, as the progress line and the summary
 * say it: lost and skipped (--once: acked with no job run, as finished
 * before) only when there are some.
 */
static void
counted(char *buf, size_t size, const struct worker *wk)
{
	char part[40];

	snprintf(buf, size, "%lld done, %lld retried, %lld dead",
	    wk->n[JOB_ACKED], wk->n[JOB_RELEASED], wk->n[JOB_DEAD]);
	if (wk->n[JOB_LOST] > 0) {
		snprintf(part, sizeof(part), ", %lld lost", wk->n[JOB_LOST]);
		strlcat(buf, part, size);
	}
	if (wk->n[JOB_SKIPPED] > 0) {
		snprintf(part, sizeof(part), ", %lld skipped",
		    wk->n[JOB_SKIPPED]);
		strlcat(buf, part, size);
	}
}

/*
 * --progress: the line drawn again when a job was settled, when it was
 * erased, and every BAR_GAP_MS for the rate and the count; cut to the
 * terminal's width, asked each time, so that a resized terminal gets
 * lines that fit from the next on.  The rate is of messages done over
 * the run, and the ETA is the waiting ones at that rate.
 */
static void
bar_draw(struct worker *wk)
{
	char line[BAR_MAX + 1], part[64], t[32], out[BAR_MAX + 8];
	struct winsize ws;
	uint64_t ms = wk->now - wk->began, tenths;
	double left;
	size_t cols;
	int i;

	if (!bar.on || (bar.shown && !bar.dirty && wk->now < bar.due))
		return;
	bar.due = wk->now + BAR_GAP_MS;
	/* Not over a job's line half passed on: once it is whole. */
	for (i = 0; i < wk->opt->slots; i++)
		if (wk->jobs[i].p.pid != 0 && (wk->jobs[i].p.out.midline ||
		    wk->jobs[i].p.err.midline))
			return;
	bar_count(wk);
	counted(line, sizeof(line), wk);
	snprintf(part, sizeof(part), ", %d running", wk->running);
	strlcat(line, part, sizeof(line));
	if (bar.counted) {
		snprintf(part, sizeof(part), ", %" PRIu64 " waiting",
		    bar.waiting);
		strlcat(line, part, sizeof(line));
	}
	if (ms > 0) {
		tenths = (uint64_t)wk->n[JOB_ACKED] * 10000 / ms;
		snprintf(part, sizeof(part), ", %" PRIu64 ".%" PRIu64 "/s",
		    tenths / 10, tenths % 10);
		strlcat(line, part, sizeof(line));
	}
	if (bar.counted && bar.waiting > 0 && wk->n[JOB_ACKED] > 0) {
		/* In whole seconds, rounded up: "0 s" would say it is over. */
		left = (double)bar.waiting * ms / wk->n[JOB_ACKED] / 1000;
		snprintf(part, sizeof(part), ", ETA %s", eta(t, sizeof(t),
		    (uint64_t)left + (left > (uint64_t)left)));
		strlcat(line, part, sizeof(line));
	}
	/* Short of the last column, where some terminals wrap at once. */
	cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ?
	    ws.ws_col - 1u : 79;
	if (strlen(line) > cols)
		line[cols] = '\0';
	snprintf(out, sizeof(out), "\r%s\033[K", line);
	bar.shown = 1;
	bar.dirty = 0;
	if (write(STDERR_FILENO, out, strlen(out)) == -1) {
		/* A line not drawn is drawn again later. */
	}
}

/*
 * What became of the jobs, said at exit with -v or to a terminal, where
 * someone reads it; never into a pipe or file unasked, which scripts
 * compare.  A worker that ran no job has nothing to sum up (exit 1 is
 * silent).  Jobs whose settling failed are in none of the counts: their
 * errors were said.
 */
static void
summary(struct worker *wk)
{
	char t[32], what[BAR_MAX + 1];

	if (wk->n_jobs == 0 || (!wk->opt->verbose && !isatty(STDERR_FILENO)))
		return;
	counted(what, sizeof(what), wk);
	wk->now = mq_now_ms();
	/* To the tenth of a second, enough for a run's length. */
	warnx("%s in %s s", what, secs(t, sizeof(t),
	    (wk->now - wk->began) / 100 * 100));
}

/* Closes what worker_open opened; the worker's exit status. */
static int
worker_close(struct worker *wk)
{
	if (wk->recorded > 0)
		sync_once(wk);
	bar_erase(STDERR_FILENO);
	summary(wk);
	mq_holder_leave(wk->sp);
	mq_wait_close(&wk->w);
	mq_receipt_close(&wk->rc);
	mq_claimer_close(&wk->cl);
	mq_placer_close(&wk->pl);
	mq_keys_close(&wk->keys);
	close(sigpipe[0]);
	close(sigpipe[1]);
	mq_command_free(&wk->cmd);
	free(wk->env.dir);
	free(wk->jobs);
	free(wk->pfd);
	/*
	 * Killed, as a shell would say it: whoever sent the second signal
	 * wanted it over, and a caller tells this run from one that ended
	 * by itself.
	 */
	if (wk->killsig != 0)
		return 128 + wk->killsig;
	if (wk->status != MQ_EX_OK)
		return wk->status;
	if (wk->stop)
		return MQ_EX_OK;
	/*
	 * Drained, what counts is how its messages ended: a job that failed
	 * and whose message then succeeded is no failure; one dead or lost
	 * (someone else's now, its end unknown) is.
	 */
	if (wk->opt->drain)
		return wk->n[JOB_DEAD] + wk->n[JOB_LOST] > 0 ? MQ_EX_FAILED :
		    MQ_EX_OK;
	if (!wk->claimed_any)
		return MQ_EX_NONE;
	return wk->failed ? MQ_EX_FAILED : MQ_EX_OK;
}

int
mq_work(struct mq_spool *sp, const struct mq_work *opt)
{
	struct worker wk;

	worker_open(&wk, sp, opt);
	for (;;) {
		wk.now = mq_now_ms();
		settings_due(&wk);
		once_due(&wk, wk.now);
		claim_some(&wk);
		if (wk.running == 0) {
			if (worker_done(&wk))
				break;
		} else
			wk.idle_since = wk.now;
		bar_draw(&wk);
		wait_once(&wk, until(next_wake(&wk), wk.now));
	}
	return worker_close(&wk);
}
