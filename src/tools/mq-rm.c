/*
 * mq-rm: removes messages by ID or a unique prefix of one (a cancelled
 * job), or every waiting one (--all).  A message in flight is its lease
 * holder's: it is removed only with -f.  Dead letters are removed by ID,
 * never by --all (mq-dlq purge is for those).  A message claimed while it
 * is being removed is either claimed (mq-rm then finds it in flight) or
 * removed (the claim does not get it), never both: every removal is one
 * unlink(2), and one that finds the message gone looks for it again
 * (find.c).
 */
#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define USAGE \
	"usage: mq-rm [-0fv] [-d dir] id ...\n" \
	"       mq-rm [-fv] [-d dir] --all\n"

/* What --help prints after the usage. */
static const char help[] =
    "Removes waiting (ready, delayed, blocked, a lease expired or\n"
    "orphaned) and\n"
    "dead messages by ID (or a unique prefix of 8 or more characters;\n"
    "-: IDs on stdin, one a line, -0: NUL-terminated); --all: every\n"
    "waiting one.  In flight: exit 3 unless -f.  -v: each removed on\n"
    "stderr.  See mq-rm(1).\n"
    "The spool: -d dir, else $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "else ~/.local/state/mq.\n";

static int fflag, vflag, zflag;

/* What mq_remove said of f (id): reported, as an exit status. */
static int
report(const char *id, const struct mq_found *f, int st)
{
	char iso[32];

	switch (st) {
	case MQ_EX_OK:
		if (vflag)
			warnx("removed %s (%s)", id, mq_look_state_name(f->state));
		break;
	case MQ_EX_NONE:
		warnx("%s: no such message", id);
		break;
	case MQ_EX_LOST:
		mq_time_iso(iso, sizeof(iso), f->n.ms);
		warnx("%s: in flight, lease until %s; -f removes it", id, iso);
		break;
	default:
		warn("%s", id);
	}
	return st;
}

static int
rm_one(struct mq_spool *sp, const char *id)
{
	struct mq_found f;
	int st;

	if (mq_find(sp, id, mq_now_ms(), &f) == -1)
		return report(id, &f, errno == ENOENT ? MQ_EX_NONE : MQ_EX_SYS);
	st = report(id, &f, mq_remove(sp, &f, fflag ? MQ_RM_FORCE : 0));
	mq_found_close(&f);
	return st;
}

/*
 * --all: one that has left the waiting states meanwhile (claimed, gone,
 * buried) is no longer for it: passed over in silence.
 */
struct all {
	struct mq_spool	*sp;
	int		 status;
};

static int
rm_each(void *arg, struct mq_found *f)
{
	struct all *a = arg;
	char id[MQ_ID_LEN + 1];
	int st;

	strlcpy(id, f->n.id, sizeof(id));
	st = mq_remove(a->sp, f, MQ_RM_WAITING | (fflag ? MQ_RM_FORCE : 0));
	if (st == MQ_EX_OK || st == MQ_EX_SYS)
		a->status = mq_worse(a->status, report(id, f, st));
	return 0;
}

static int
rm_all(struct mq_spool *sp)
{
	struct all a = { sp, MQ_EX_OK };
	unsigned mask = 1u << MQ_LOOK_EXPIRED | 1u << MQ_LOOK_READY |
	    1u << MQ_LOOK_DELAYED | 1u << MQ_LOOK_BLOCKED |
	    1u << MQ_LOOK_ORPHANED;

	if (fflag)
		mask |= 1u << MQ_LOOK_INFLIGHT;
	if (mq_find_each(sp, mq_now_ms(), mask, rm_each, &a) == -1) {
		warn("%s", sp->path);
		a.status = mq_worse(a.status, MQ_EX_SYS);
	}
	return a.status;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "all", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 }
	};
	struct mq_spool sp;
	const char *dir = NULL;
	char **ids;
	size_t i, n;
	int ch, all = 0, status = MQ_EX_OK;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("0fvd:hV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case '0':
			zflag = 1;
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
		case 'a':
			all = 1;
			break;
		default:
			mq_common_opt(ch, USAGE, help);
		}
	}
	argc -= optind;
	argv += optind;
	if (all && argc > 0)
		errx(MQ_EX_USAGE, "--all and IDs exclude each other");
	if (!all && argc == 0)
		errx(MQ_EX_USAGE, "name IDs or --all");
	/* Nothing is removed when one of them is no ID, or ambiguous. */
	ids = mq_ids_xread(argc, argv, zflag, &n);
	signal(SIGXFSZ, SIG_IGN);
	mq_spool_xopen(&sp, dir, 0);
	status = mq_ids_xresolve(&sp, ids, &n, mq_find_match, "message");
	mq_ids_unique(ids, &n);
	if (all)
		status = rm_all(&sp);
	for (i = 0; i < n; i++)
		status = mq_worse(status, rm_one(&sp, ids[i]));
	mq_ids_free(ids, n);
	mq_spool_close(&sp);
	mq_stdout_close();
	return status;
}
