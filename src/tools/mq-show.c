/*
 * mq-show: the bodies of messages, by ID (or a unique prefix of one), in
 * whatever state they are, byte for byte on stdout, one after the other.
 * It only reads: no lock, no rename, no attempt counted.  A body is
 * streamed through a fixed buffer, so memory does not grow with its
 * size.
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define USAGE	"usage: mq-show [-0v] [--raw] [-d dir] id ...\n"

/* What --help prints after the usage. */
static const char help[] =
    "The body of the message with this ID, in any state (ready,\n"
    "delayed, blocked, inflight, orphaned, expired, dead), as it was\n"
    "sent; of several, each in turn.  An ID may be a unique prefix of\n"
    "8 or more characters; -: IDs on stdin, one a line (-0: NUL-\n"
    "terminated).\n"
    "On a terminal, control characters are escaped; --raw writes them\n"
    "raw.  -v: its state (a lease's holder too) on stderr.  Exit 1:\n"
    "no such message.  See mq-show(1).\n"
    "The spool: -d dir, else $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "else ~/.local/state/mq.\n";

/* --raw's, as its letter went (-r is now --raw). */
#define OPT_RAW	256

/*
 * Opens the message: its descriptor, or -1 with what is to be said told
 * and its status in *status.  One that moves between its search and its
 * open (claimed, released, acked) is searched for again, a bounded
 * number of times.
 */
static int
open_message(struct mq_spool *sp, const char *id, struct mq_found *f,
    int *status)
{
	int i, fd, saved;

	*status = MQ_EX_SYS;
	for (i = 0; ; i++) {
		if (mq_find(sp, id, mq_now_ms(), f) == -1) {
			if (errno != ENOENT) {
				warn("%s", sp->path);
				return -1;
			}
			warnx("%s: no such message", id);
			*status = MQ_EX_NONE;
			return -1;
		}
		if ((fd = mq_found_open(f)) != -1)
			return fd;
		saved = errno;
		mq_found_close(f);
		if (saved != ENOENT || i == MQ_RETRIES)
			break;
	}
	if (saved == ELOOP)
		warnx("%s: not a regular file", id);
	else {
		errno = saved;
		warn("%s", id);
	}
	return -1;
}

static int rawflag, vflag, zflag;

/*
 * -v: its state on stderr; a lease's holder too, and since when it holds
 * it: "ID: inflight, held by USER@HOST:PID (TOOL: COMMAND) since TIME".
 */
static void
said(struct mq_spool *sp, const char *id, const struct mq_found *f)
{
	struct mq_holder_info info;
	const struct mq_holder *h = &f->n.holder;
	char iso[32];

	fprintf(stderr, "%s: ", getprogname());
	mq_escape(stderr, id, strlen(id));
	fprintf(stderr, ": %s", mq_look_state_name(f->state));
	if (f->in == MQ_IN_CUR && h->kind != 0) {
		mq_holder_describe(sp, h, &info);
		fputs(", held by ", stderr);
		mq_holder_print(stderr, h, &info);
		if (info.tool[0] != '\0') {
			fputs(" (", stderr);
			mq_escape(stderr, info.tool, strlen(info.tool));
			fputs(": ", stderr);
			mq_escape(stderr, info.command, strlen(info.command));
			putc(')', stderr);
		}
		mq_time_iso(iso, sizeof(iso), h->since * 1000);
		fprintf(stderr, " since %s", iso);
	}
	putc('\n', stderr);
}

/*
 * Writes one body: its status.  What fails to be written to stdout ends
 * the program, as no later body could be told apart from it.
 */
static int
show(struct mq_spool *sp, const char *id)
{
	struct mq_found f;
	struct stat st;
	int fd, status;

	if ((fd = open_message(sp, id, &f, &status)) == -1)
		return status;
	status = MQ_EX_OK;
	if (fstat(fd, &st) == -1) {
		warn("%s", id);
		status = MQ_EX_SYS;
	} else if (!S_ISREG(st.st_mode)) {
		warnx("%s: not a regular file", id);
		status = MQ_EX_SYS;
	} else {
		if (vflag)
			said(sp, id, &f);
		/* Byte for byte, but nothing of it takes over a terminal. */
		if (!rawflag && isatty(STDOUT_FILENO)) {
			if (mq_copy_escaped(fd, stdout) == -1)
				err(MQ_EX_SYS, "%s", id);
		} else if (fflush(stdout) == EOF ||
		    mq_copy_fd(fd, STDOUT_FILENO) == -1)
			err(MQ_EX_SYS, "%s", id);
	}
	close(fd);
	mq_found_close(&f);
	return status;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "raw", no_argument, NULL, OPT_RAW },
		{ NULL, 0, NULL, 0 }
	};
	struct mq_spool sp;
	const char *dir = NULL;
	char **ids;
	size_t i, n;
	int ch, status;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("0rvd:hV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case '0':
			zflag = 1;
			break;
		case OPT_RAW:
			rawflag = 1;
			break;
		case 'r':
			mq_renamed("-r", "--raw");
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
	if (argc == 0)
		mq_usage(USAGE);
	/* Nothing is shown when one of them is no ID, or ambiguous. */
	ids = mq_ids_xread(argc, argv, zflag, &n);
	signal(SIGXFSZ, SIG_IGN);
	mq_spool_xopen(&sp, dir, 0);
	status = mq_ids_xresolve(&sp, ids, &n, mq_find_match, "message");
	for (i = 0; i < n; i++)
		status = mq_worse(status, show(&sp, ids[i]));
	mq_ids_free(ids, n);
	mq_spool_close(&sp);
	mq_stdout_close();
	return status;
}
