/*
 * mq-ack: finish with claimed messages: done (delete), release (back to
 * new/, now or later), dead-letter, or extend the lease.  Each receipt is
 * checked to be a claimed message of this spool before anything is done;
 * the others in the same call are still handled, and the worst status wins.
 * The spool is the one chosen by -d or $MQ_DIR; without either, a receipt
 * names its own (its path up to cur/), and a batch of receipts may come
 * from several spools, each opened when its first receipt comes.
 */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

enum mode { DONE, RELEASE, BURY, EXTEND };
enum { OPT_REASON = 256 };

struct acker {
	struct mq_spool	 sp;
	struct mq_receipt rc;
	struct mq_placer pl;
	int		 open;	/* sp, rc and pl are in use */
	int		 fixed;	/* -d or $MQ_DIR: one spool for every receipt */
	int		 ring;	/* a lease was made shorter: wake waiters */
	int		 status;	/* of closing spools done with */
	char		 dir[PATH_MAX];	/* the spool of the receipts at hand */
	enum mode	 mode;
	uint64_t	 ms;	/* release delay or extension */
	uint64_t	 now;
	const char	*reason;	/* -x */
	const char	*because;	/* -r --reason, or NULL */
	int		 zflag;
	int		 vflag;
};

#define USAGE \
	"usage: mq-ack [-0v] [-d dir] [-r [secs] [--reason text] | " \
	"-x reason | -e secs]\n" \
	"              [receipt ...]\n"

/* What --help prints after the usage. */
static const char help[] =
    "Finish claimed messages (receipts from arguments or stdin).\n"
    "  (none)     done: delete the message\n"
    "  -r [secs]  release: visible again now or after secs\n"
    "  --reason text\n"
    "             with -r: why (a death for attempts names the last)\n"
    "  -x reason  dead-letter now with reason\n"
    "  -e secs    extend the lease to now + secs; print the new "
    "receipt\n"
    "  -0         receipts on stdin are NUL-terminated\n"
    "  -d dir     spool (default $MQ_DIR, else the receipt's own)\n"
    "A receipt is the path that mq-recv printed.\n"
    "Exit 3: already acked, or lease lost.\n"
    MQ_HELP_SECS
    "See mq-ack(1).\n";

/* Done with a spool: what was left of its batch, then close it. */
static void
spool_done(struct acker *a)
{
	if (!a->open)
		return;
	mq_receipt_close(&a->rc);
	if (mq_placer_flush(&a->pl) == -1) {
		warn("%s", a->sp.path);
		a->status = MQ_EX_SYS;
	}
	/* As for a send: a bell not rung fails nothing that was done. */
	if (a->ring)
		(void)mq_ring(&a->sp);
	a->ring = 0;
	mq_placer_close(&a->pl);
	mq_spool_close(&a->sp);
	a->open = 0;
}

/* A spool just opened, ready for receipts; releases may take spares. */
static void
spool_ready(struct acker *a)
{
	mq_placer_release_init(&a->pl, &a->sp);
	mq_receipt_init(&a->rc);
	a->open = 1;
}

static int
spool_open(struct acker *a, const char *path)
{
	if (mq_spool_open(&a->sp, path, 0) == -1)
		return -1;
	spool_ready(a);
	return 0;
}

/* Opens dir, the spool of receipt, when the receipts choose it. */
static int
spool_for(struct acker *a, const char *receipt, const char *dir)
{
	if (a->fixed)
		return MQ_EX_OK;
	if (a->open && strcmp(dir, a->dir) == 0)
		return MQ_EX_OK;
	spool_done(a);
	strlcpy(a->dir, dir, sizeof(a->dir));
	if (spool_open(a, a->dir) == 0)
		return MQ_EX_OK;
	if (errno == ENOENT || errno == ENOTDIR) {
		warnx("%s: not a receipt (no spool at %s)", receipt, a->dir);
		return MQ_EX_USAGE;
	}
	warn("%s", a->dir);
	return MQ_EX_SYS;
}

/* What -v says was done with a receipt, by mode. */
static const char *const done[] = {
	[DONE] = "acked",
	[RELEASE] = "released",
	[BURY] = "dead-lettered",
	[EXTEND] = "extended",
};

static int
handle(struct acker *a, const char *receipt)
{
	struct mq_receipt *rc = &a->rc;
	const char *why;
	char out[MQ_RECEIPT_MAX], dir[PATH_MAX];
	int st;

	/* Whatever the spool, a path of another form was never a receipt. */
	if (mq_receipt_spool(receipt, dir, sizeof(dir)) == -1) {
		warnx("%s: not a receipt (a receipt is the path mq-recv "
		    "printed)", receipt);
		return MQ_EX_USAGE;
	}
	if ((st = spool_for(a, receipt, dir)) != MQ_EX_OK)
		return st;
	st = mq_receipt_open(&a->sp, receipt, rc, &why);
	if (st == MQ_EX_OK) {
		switch (a->mode) {
		case DONE:
			st = mq_receipt_ack(rc);
			break;
		case RELEASE:
			st = mq_receipt_release(rc, &a->pl, a->now + a->ms,
			    a->because, a->because != NULL ?
			    strlen(a->because) : 0);
			/* Released all the same: a full file system. */
			if (st == MQ_EX_OK && rc->unkept != 0)
				warnx("%s: reason not kept: %s",
				    mq_receipt_shown(&a->sp, receipt),
				    strerror(rc->unkept));
			break;
		case BURY:
			st = mq_receipt_bury(rc, a->reason, strlen(a->reason),
			    MQ_CAUSE_REJECTED);
			break;
		case EXTEND:
			st = mq_receipt_extend(rc, a->now + a->ms, out,
			    sizeof(out));
			if (st != MQ_EX_OK)
				break;
			/*
			 * A waiting receiver sleeps until the deadline it
			 * last saw; one made earlier must wake it.
			 */
			if (a->now + a->ms < rc->n.ms)
				a->ring = 1;
			fputs(out, stdout);
			putchar(a->zflag ? '\0' : '\n');
			break;
		}
	}
	if (st == MQ_EX_OK && a->vflag)
		warnx("%s: %s", mq_receipt_shown(&a->sp, receipt),
		    done[a->mode]);
	else if (st == MQ_EX_LOST)
		warnx("%s: already acked, or lease lost",
		    mq_receipt_shown(&a->sp, receipt));
	else if (st == MQ_EX_SYS)
		warn("%s", mq_receipt_shown(&a->sp, receipt));
	else if (st != MQ_EX_OK)
		warnx("%s: %s", mq_receipt_shown(&a->sp, receipt), why);
	return st;
}

static void
choose(struct acker *a, enum mode m, int *set)
{
	if (*set && a->mode != m)
		errx(MQ_EX_USAGE, "-r, -x and -e exclude each other");
	a->mode = m;
	*set = 1;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "reason", required_argument, NULL, OPT_REASON },
		{ NULL, 0, NULL, 0 }
	};
	struct acker a;
	struct mq_reader rd;
	const char *dir = NULL, *secs, *env;
	char *rec;
	int ch, i, r, set = 0, seen = 0, status = MQ_EX_OK;

	memset(&a, 0, sizeof(a));
	mq_receipt_init(&a.rc);
	while ((ch = getopt_long(argc, argv, MQ_OPTS("0vd:r::x:e:hV"),
	    longopts, NULL)) != -1) {
		switch (ch) {
		case '0':
			a.zflag = 1;
			break;
		case 'v':
			a.vflag = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'r':
			choose(&a, RELEASE, &set);
			secs = mq_optional_secs(optarg, argc, argv);
			if (secs != NULL)
				a.ms = xsecs("-r", secs, 0);
			break;
		case 'x':
			choose(&a, BURY, &set);
			a.reason = optarg;
			break;
		case 'e':
			choose(&a, EXTEND, &set);
			a.ms = xsecs("-e", optarg, 1);
			break;
		case OPT_REASON:
			a.because = optarg;
			break;
		default:
			mq_common_opt(ch, USAGE, help);
		}
	}
	argc -= optind;
	argv += optind;
	/* A dead letter's reason is -x's own. */
	if (a.because != NULL && a.mode != RELEASE)
		errx(MQ_EX_USAGE, "--reason goes with -r (-x takes the reason "
		    "of a dead letter)");

	/* An explicit choice of spool wins over what the receipts say. */
	if (dir == NULL && (env = getenv("MQ_DIR")) != NULL && *env != '\0')
		dir = env;
	if (dir != NULL) {
		mq_spool_xopen(&a.sp, dir, 0);
		spool_ready(&a);
		a.fixed = 1;
	}
	a.now = mq_now_ms();
	if (argc > 0) {
		for (i = 0; i < argc; i++)
			status = mq_worse(status, handle(&a, argv[i]));
		seen = argc;
	} else if (mq_reader_init(&rd, STDIN_FILENO) == -1) {
		warn("stdin");
		status = MQ_EX_SYS;
	} else {
		while ((r = mq_reader_record(&rd, a.zflag ? '\0' : '\n',
		    &rec)) != 0) {
			if (r == -1) {
				warn("stdin");
				status = mq_worse(status, errno == E2BIG ?
				    MQ_EX_USAGE : MQ_EX_SYS);
				if (errno != E2BIG)
					break;
				continue;
			}
			if (*rec == '\0')
				continue;
			status = mq_worse(status, handle(&a, rec));
			seen++;
		}
		mq_reader_free(&rd);
	}
	spool_done(&a);
	status = mq_worse(status, a.status);
	mq_stdout_close();
	if (seen == 0 && status == MQ_EX_OK)
		status = MQ_EX_NONE;
	return status;
}
