/*
 * mq-recv: claim visible messages and print their receipts.  A receipt is
 * printed as soon as its claim is made; a claim whose receipt could not be
 * printed is not lost: its lease runs out and it is handed out again.
 */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "mq.h"

static int zflag;

static void __dead
usage(void)
{
	fprintf(stderr, "usage: mq-recv [-0v] [-d dir] [-n n] [-t secs] "
	    "[-m max] [-w [secs]]\n");
	exit(MQ_EX_USAGE);
}

static void
help(void)
{
	printf("usage: mq-recv [-0v] [-d dir] [-n n] [-t secs] [-m max] "
	    "[-w [secs]]\n"
	    "Claim visible messages, oldest first; print one receipt each.\n"
	    "  -n n     claim up to n messages (default 1)\n"
	    "  -t secs  lease length (default 30)\n"
	    "  -m max   dead-letter a message that had max attempts "
	    "(default 5)\n"
	    "  -w secs  wait up to secs (no secs: forever) for a message\n"
	    "  -0       end receipts with NUL, for xargs -0\n"
	    "  -d dir   spool (default $MQ_DIR, else "
	    "$XDG_STATE_HOME/mq)\n"
	    "Exit 0: claimed; 1: nothing visible.  See mq-recv(1).\n");
}

static int
print_receipt(void *arg, const char *receipt, const char *id)
{
	(void)arg;
	(void)id;
	fputs(receipt, stdout);
	putchar(zflag ? '\0' : '\n');
	return ferror(stdout) ? -1 : 0;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct mq_spool sp;
	struct mq_waiter w;
	const char *dir = NULL, *wsecs = NULL;
	uint64_t lease = MQ_DEFAULT_LEASE_MS, wait_ms = 0, wake, now, until;
	int64_t timeout;
	int ch, n = 1, max = MQ_DEFAULT_MAX, wflag = 0, got;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("0vd:n:t:m:w::hV"),
	    longopts, NULL)) != -1) {
		switch (ch) {
		case '0':
			zflag = 1;
			break;
		case 'v':
			break;
		case 'd':
			dir = optarg;
			break;
		case 'n':
			n = xnumber('n', optarg, 1, 1000000);
			break;
		case 't':
			lease = xsecs('t', optarg, 1);
			break;
		case 'm':
			max = xnumber('m', optarg, 1, MQ_ATTEMPTS_MAX);
			break;
		case 'w':
			wflag = 1;
			wsecs = mq_optional_secs(optarg, argc, argv);
			if (wsecs != NULL)
				wait_ms = xsecs('w', wsecs, 0);
			break;
		case 'h':
			help();
			return MQ_EX_OK;
		case 'V':
			mq_version();
			return MQ_EX_OK;
		default:
			usage();
		}
	}
	if (optind < argc)
		usage();

	mq_spool_xopen(&sp, dir, 0);
	/* Watch before the first look, so that no ring falls in between. */
	if (wflag && mq_wait_open(&w, &sp) == -1)
		err(MQ_EX_SYS, "%s/%s", sp.path, MQ_DIR_NEW);
	until = wsecs != NULL ? mq_now_ms() + wait_ms : UINT64_MAX;
	for (;;) {
		got = mq_claim(&sp, n, lease, max, print_receipt, NULL, &wake);
		if (got == -1)
			err(MQ_EX_SYS, "%s", ferror(stdout) ? "stdout" :
			    sp.path);
		if (got > 0 || !wflag)
			break;
		now = mq_now_ms();
		if (now >= until)
			break;
		if (wake > until)
			wake = until;
		timeout = wake == UINT64_MAX ? -1 : wake > now ?
		    (int64_t)(wake - now) : 0;
		if (mq_wait(&w, timeout) == -1)
			err(MQ_EX_SYS, "%s/%s", sp.path, MQ_DIR_NEW);
	}
	if (wflag)
		mq_wait_close(&w);
	mq_spool_close(&sp);
	mq_stdout_close();
	return got > 0 ? MQ_EX_OK : MQ_EX_NONE;
}
