/*
 * mq-sweep: housekeeping.  Expired leases go back to new/ (or to dead/ at
 * max attempts), waiting messages past their time to live go to dead/,
 * tmp/ fragments of crashed senders and reasons of purged dead letters go
 * after 36 hours, empty buckets are removed, spare directories used up on
 * a full file system are made again, dedup keys whose window is over (and
 * records that crashed senders left) are forgotten, and entries of the
 * ledger of finished messages (mq-recv --once) past once-window go.
 * Receivers do the lease part themselves; sweeping only keeps the spool
 * tidy.
 */
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

static int vflag;

#define USAGE	"usage: mq-sweep [-v] [-d dir] [-m max] [-i secs]\n"

/* What --help prints after the usage. */
static const char help[] =
    "Move expired leases back to new/ (dead/ at max attempts),\n"
    "bury messages past their time to live (reason ttl),\n"
    "remove tmp/ fragments older than 36 hours, forget dedup keys\n"
    "whose dedup-window is over, mend ordered groups and remove\n"
    "those left empty, drop --once ledger entries past once-window.\n"
    "  -m max     attempts before a message is dead (default: the\n"
    "             spool's max-attempts, 5 unless set with mq-conf)\n"
    "  -i secs    sweep again every secs until killed\n"
    "  -v         say what was moved or removed\n"
    "  -d dir     spool (default $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "             else ~/.local/state/mq)\n"
    MQ_HELP_SECS
    "See mq-sweep(1).\n";

static void
report(const char *what, const char *how)
{
	if (vflag)
		warnx("%s: %s", what, how);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct mq_spool sp;
	const char *dir = NULL;
	uint64_t every = 0;
	int ch, max = 0, status;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("vd:m:i:whV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'v':
			vflag = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'm':
			max = xnumber("-m", optarg, 1, MQ_ATTEMPTS_MAX);
			break;
		case 'i':
			every = xsecs("-i", optarg, 1);
			break;
		case 'w':
			/* -w waits for something in every other tool. */
			mq_renamed("-w", "-i secs (sweep again every secs)");
		default:
			mq_common_opt(ch, USAGE, help);
		}
	}
	if (optind < argc) {
		warnx("%s: unexpected operand", argv[optind]);
		mq_usage(USAGE);
	}

	mq_spool_xopen(&sp, dir, 0);
	for (;;) {
		status = MQ_EX_OK;
		/* Read each round: a sweeping service follows mq-conf. */
		(void)mq_settings_xread(&sp);
		if (mq_reclaim(&sp, (unsigned)max, report) == -1) {
			warn("%s/%s", sp.path, MQ_DIR_CUR);
			status = MQ_EX_SYS;
		}
		if (mq_expire(&sp, report) == -1) {
			warn("%s/%s", sp.path, MQ_DIR_NEW);
			status = MQ_EX_SYS;
		}
		if (mq_tmp_clean(&sp, MQ_TMP_STALE_SECS, report) == -1) {
			warn("%s/%s", sp.path, MQ_DIR_TMP);
			status = MQ_EX_SYS;
		}
		if (mq_keys_sweep(&sp, report) == -1) {
			warn("%s/%s", sp.path, MQ_DIR_KEYS);
			status = MQ_EX_SYS;
		}
		if (mq_group_sweep(&sp, report) == -1) {
			warn("%s/%s", sp.path, MQ_DIR_GROUPS);
			status = MQ_EX_SYS;
		}
		if (mq_tidy(&sp) == -1) {
			warn("%s/%s", sp.path, MQ_DIR_NEW);
			status = MQ_EX_SYS;
		}
		if (mq_log_trim(&sp, sp.conf.log_age_ms) == -1) {
			warn("%s/%s", sp.path, MQ_LOG);
			status = MQ_EX_SYS;
		}
		if (mq_output_sweep(&sp, sp.conf.keep_output_ms, report) == -1) {
			warn("%s/%s", sp.path, MQ_DIR_OUTPUT);
			status = MQ_EX_SYS;
		}
		if (mq_once_trim(&sp, mq_now_ms(), mq_once_window(&sp.conf),
		    report) == -1) {
			warn("%s/%s", sp.path, MQ_DIR_ONCE);
			status = MQ_EX_SYS;
		}
		if (every == 0)
			break;
		/* What this round did is in the log while it sleeps. */
		mq_log_flush();
		poll(NULL, 0, every > 86400000 ? 86400000 : (int)every);
	}
	mq_spool_close(&sp);
	return status;
}
