/*
 * mq-top: a live view of one spool or several (top.c): counts by state,
 * depth against max-depth, rates in, out and to dead, depth over the
 * last minutes, dead letters by cause and the messages in flight, on a
 * terminal redrawn every interval, or (-b) frames as text.
 */
#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define USAGE "usage: mq-top [-bv] [-i secs] [-n frames] [-d dir ...] " \
    "[dir ...]\n"

/* What --help prints after the usage. */
static const char help[] =
    "A live view of spools: counts by state, depth, rates in, out and to\n"
    "dead, depth over the last minutes, dead letters by cause, the\n"
    "messages in flight.  Keys: q quit, p pause or resume, s sort,\n"
    "/ filter, Tab select a spool, ? help.\n"
    "  -b         frames as plain text on stdout, no keys\n"
    "  -i secs    a frame every secs (default 2)\n"
    "  -n frames  exit 0 after that many frames\n"
    "  -d dir     a spool (more than one -d, or dir operands, for more\n"
    "             spools; default $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "             else ~/.local/state/mq)\n"
    "  -v         say on stderr each spool watched and where it was\n"
    "             found (-d, $MQ_DIR...), before the first frame\n"
    MQ_HELP_SECS
    "See mq-top(1).\n";

/* A spool that cannot be watched is said before the screen is taken. */
static void
check(const char *dir, const char *whence, int defaulted, int vflag)
{
	struct mq_spool sp;

	if (mq_spool_open(&sp, dir, 0) == 0) {
		mq_spool_close(&sp);
		if (vflag) {
			fprintf(stderr, "%s: ", getprogname());
			mq_escape(stderr, dir, strlen(dir));
			fprintf(stderr, " (from %s)\n", whence);
		}
		return;
	}
	if (errno == ENOTDIR)
		errx(MQ_EX_SYS, "%s: not a spool", dir);
	if (errno == ENOENT && defaulted)
		errx(MQ_EX_SYS, "%s: no such spool (%s)", dir,
		    mq_spool_whence(NULL));
	err(MQ_EX_SYS, "%s", dir);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct mq_top_opt opt = { .interval_ms = 2000 };
	const char *path, **whence;
	size_t i;
	int ch, defaulted = 0, status, vflag = 0;

	opt.dirs = xreallocarray(NULL, argc + 1, sizeof(*opt.dirs));
	whence = xreallocarray(NULL, argc + 1, sizeof(*whence));
	while ((ch = getopt_long(argc, argv, MQ_OPTS("bd:i:n:vhV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'b':
			opt.batch = 1;
			break;
		case 'd':
			if (*optarg == '\0')
				errx(MQ_EX_USAGE, "-d: empty spool name");
			whence[opt.ndirs] = "-d";
			opt.dirs[opt.ndirs++] = optarg;
			break;
		case 'i':
			opt.interval_ms = xsecs("-i", optarg, 1);
			break;
		case 'n':
			opt.frames = xnumber("-n", optarg, 1, INT_MAX);
			break;
		case 'v':
			vflag = 1;
			break;
		default:
			free(opt.dirs);
			free(whence);
			mq_common_opt(ch, USAGE, help);
		}
	}
	/* Spools as operands, as mq-stat takes them: the same as -d. */
	for (; optind < argc; optind++) {
		if (*argv[optind] == '\0')
			errx(MQ_EX_USAGE, "empty spool name");
		whence[opt.ndirs] = "an operand";
		opt.dirs[opt.ndirs++] = argv[optind];
	}
	if (!opt.batch && !isatty(STDOUT_FILENO))
		errx(MQ_EX_USAGE, "stdout is not a terminal (-b for frames "
		    "as text)");
	if (opt.ndirs == 0) {
		if ((path = mq_spool_dir(NULL)) == NULL)
			err(MQ_EX_SYS, "no spool: set MQ_DIR or HOME");
		whence[opt.ndirs] = mq_spool_origin(NULL);
		opt.dirs[opt.ndirs++] = path;
		defaulted = mq_spool_whence(NULL) != NULL;
	}
	for (i = 0; i < opt.ndirs; i++)
		check(opt.dirs[i], whence[i], defaulted, vflag);
	status = mq_top(&opt);
	free(opt.dirs);
	free(whence);
	if (opt.batch)
		mq_stdout_close();
	return status;
}
