/*
 * mq-ack: finish with claimed messages: done (delete), release (back to
 * new/, now or later), dead-letter, or extend the lease.  Each receipt is
 * checked to be a claimed message of this spool before anything is done;
 * the others in the same call are still handled, and the worst status wins.
 */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

enum mode { DONE, RELEASE, BURY, EXTEND };

struct acker {
	struct mq_spool	 sp;
	struct mq_receipt rc;
	struct mq_placer pl;
	enum mode	 mode;
	uint64_t	 ms;	/* release delay or extension */
	uint64_t	 now;
	const char	*reason;
	char		 pruned[24];
	int		 zflag;
};

static void __dead
usage(void)
{
	fprintf(stderr, "usage: mq-ack [-0v] [-d dir] "
	    "[-r [secs] | -x reason | -e secs] [receipt ...]\n");
	exit(MQ_EX_USAGE);
}

static void
help(void)
{
	printf("usage: mq-ack [-0v] [-d dir] [-r [secs] | -x reason | "
	    "-e secs] [receipt ...]\n"
	    "Finish claimed messages (receipts from arguments or stdin).\n"
	    "  (none)     done: delete the message\n"
	    "  -r [secs]  release: visible again now or after secs\n"
	    "  -x reason  dead-letter now with reason\n"
	    "  -e secs    extend the lease to now + secs; print the new "
	    "receipt\n"
	    "  -0         receipts on stdin are NUL-terminated\n"
	    "Exit 3: lease lost.  See mq-ack(1).\n");
}

static int
handle(struct acker *a, const char *receipt)
{
	struct mq_receipt *rc = &a->rc;
	const char *why;
	char out[4096];
	int st, r = 0;

	st = mq_receipt_open(&a->sp, receipt, rc, &why);
	if (st == MQ_EX_SYS) {
		warn("%s", mq_receipt_shown(&a->sp, receipt));
		return st;
	}
	if (st != MQ_EX_OK) {
		warnx("%s: %s", mq_receipt_shown(&a->sp, receipt), why);
		return st;
	}
	switch (a->mode) {
	case DONE:
		r = mq_ack(rc->bucket, rc->name);
		break;
	case RELEASE:
		r = mq_release(&a->pl, rc->bucket, rc->name, &rc->n,
		    a->now + a->ms);
		break;
	case BURY:
		r = mq_bury(&a->sp, rc->bucket, rc->name, &rc->n, a->reason,
		    strlen(a->reason));
		break;
	case EXTEND:
		r = mq_extend(&a->sp, rc->bucket, rc->name, &rc->n,
		    a->now + a->ms, out, sizeof(out));
		if (r == 0) {
			fputs(out, stdout);
			putchar(a->zflag ? '\0' : '\n');
		}
		break;
	}
	if (r == -1) {
		if (errno == ENOENT) {
			warnx("%s: lease lost", mq_receipt_shown(&a->sp, receipt));
			return MQ_EX_LOST;
		}
		warn("%s", mq_receipt_shown(&a->sp, receipt));
		return MQ_EX_SYS;
	}
	/* Leave no empty bucket behind once a batch has moved on from it. */
	if (a->mode != EXTEND && strcmp(a->pruned, rc->bname) != 0) {
		if (a->pruned[0] != '\0')
			mq_cur_prune(&a->sp, a->pruned);
		strlcpy(a->pruned, rc->bname, sizeof(a->pruned));
	}
	return MQ_EX_OK;
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
		{ NULL, 0, NULL, 0 }
	};
	struct acker a;
	struct mq_reader rd;
	const char *dir = NULL, *secs;
	char *rec;
	int ch, i, r, set = 0, seen = 0, status = MQ_EX_OK;

	memset(&a, 0, sizeof(a));
	a.rc.bucket = -1;
	while ((ch = getopt_long(argc, argv, MQ_OPTS("0vd:r::x:e:hV"),
	    longopts, NULL)) != -1) {
		switch (ch) {
		case '0':
			a.zflag = 1;
			break;
		case 'v':
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
	argc -= optind;
	argv += optind;

	mq_spool_xopen(&a.sp, dir, 0);
	mq_placer_init(&a.pl, &a.sp, 0);
	a.now = mq_now_ms();
	if (argc > 0) {
		for (i = 0; i < argc; i++)
			status = mq_worse(status, handle(&a, argv[i]));
		seen = argc;
	} else {
		mq_reader_init(&rd, STDIN_FILENO);
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
	mq_receipt_close(&a.rc);
	if (a.pruned[0] != '\0')
		mq_cur_prune(&a.sp, a.pruned);
	if (mq_placer_flush(&a.pl) == -1) {
		warn("%s", a.sp.path);
		status = mq_worse(status, MQ_EX_SYS);
	}
	mq_placer_close(&a.pl);
	mq_spool_close(&a.sp);
	mq_stdout_close();
	if (seen == 0 && status == MQ_EX_OK)
		status = MQ_EX_NONE;
	return status;
}
