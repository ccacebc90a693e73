/*
 * mq-show: the body of a message, by its ID, in whatever state it is,
 * byte for byte on stdout.  It only reads: no lock, no rename, no
 * attempt counted.  The body is streamed through a fixed buffer, so
 * memory does not grow with its size.
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define USAGE	"usage: mq-show [-rv] [--raw] [-d dir] id\n"

/* What --help prints after the usage. */
static const char help[] =
    "The body of the message with this ID, in any state (ready,\n"
    "delayed, blocked, inflight, expired, dead), as it was sent.\n"
    "On a terminal, control characters are escaped; --raw (or -r)\n"
    "writes them raw.\n"
    "-v: its state on stderr.  Exit 1: no such message.  See "
    "mq-show(1).\n"
    "The spool: -d dir, else $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "else ~/.local/state/mq.\n";

/*
 * Opens the message; one that moves between its search and its open
 * (claimed, released, acked) is searched for again, a bounded number of
 * times.
 */
static int
open_message(struct mq_spool *sp, const char *id, struct mq_found *f)
{
	int i, fd;

	for (i = 0; ; i++) {
		if (mq_find(sp, id, mq_now_ms(), f) == -1) {
			if (errno != ENOENT)
				err(MQ_EX_SYS, "%s", sp->path);
			warnx("%s: no such message", id);
			exit(MQ_EX_NONE);
		}
		if ((fd = mq_found_open(f)) != -1)
			return fd;
		if (errno == ELOOP)
			errx(MQ_EX_SYS, "%s: not a regular file", id);
		if (errno != ENOENT || i == MQ_RETRIES)
			err(MQ_EX_SYS, "%s", id);
		mq_found_close(f);
	}
}

static int rflag, vflag;

static int
show(struct mq_spool *sp, const char *id)
{
	struct mq_found f;
	struct stat st;
	int fd;

	fd = open_message(sp, id, &f);
	if (fstat(fd, &st) == -1)
		err(MQ_EX_SYS, "%s", id);
	if (!S_ISREG(st.st_mode))
		errx(MQ_EX_SYS, "%s: not a regular file", id);
	if (vflag)
		warnx("%s: %s", id, mq_look_state_name(f.state));
	/* Byte for byte, but nothing of it takes over a terminal. */
	if (!rflag && isatty(STDOUT_FILENO)) {
		if (mq_copy_escaped(fd, stdout) == -1)
			err(MQ_EX_SYS, "%s", id);
	} else if (fflush(stdout) == EOF ||
	    mq_copy_fd(fd, STDOUT_FILENO) == -1)
		err(MQ_EX_SYS, "%s", id);
	close(fd);
	mq_found_close(&f);
	return MQ_EX_OK;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "raw", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	struct mq_spool sp;
	const char *dir = NULL;
	int ch, status;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("rvd:hV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'r':
			rflag = 1;
			break;
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
	if (argc != 1)
		mq_usage(USAGE);
	if (!mq_id_valid(argv[0]))
		errx(MQ_EX_USAGE, "%s: not a message ID", argv[0]);
	signal(SIGXFSZ, SIG_IGN);
	mq_spool_xopen(&sp, dir, 0);
	status = show(&sp, argv[0]);
	mq_spool_close(&sp);
	mq_stdout_close();
	return status;
}
