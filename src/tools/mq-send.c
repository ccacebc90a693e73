/*
 * mq-send: add messages to a spool, or to several at once (-d A -d B).
 * This reads the input and cuts it into messages; fan.c sends them:
 * written to tmp/ in batches, made durable, renamed into new/ of each
 * spool, the directories synced, and only then are the IDs printed.
 * Nothing partial is ever visible: a failure leaves at most tmp/ files,
 * which are removed (or, after a crash, swept by mq-sweep).  -p, -g and -k
 * are checked here and name every message fan.c places.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define USAGE	"usage: mq-send [-0lSv] [-d dir]... [-D secs | -g group] " \
	"[-k key] [-p prio]\n               [-w [secs]] [--ttl secs] " \
	"[file ...]\n"

/* The long option without a short one. */
#define OPT_TTL	256

static struct mq_fan fan;

/* What --help prints after the usage. */
static const char help[] =
    "Add each file (or standard input) as a message; print its ID.\n"
    "  -0       every NUL-terminated record is a message\n"
    "  -l       every line is a message\n"
    "  -D secs  not visible before secs from now\n"
    "  -k key   dedup key: while a message sent with it is in the\n"
    "           spool (and dedup-window after), add nothing and print\n"
    "           that message's ID; one message (no -l, -0, 2 files)\n"
    "  -g group one at a time and in send order with the others of\n"
    "           group (1-64 of A-Z a-z 0-9 . _ -, no leading dot);\n"
    "           not with -D\n"
    "  -p prio  priority, 0 (the default) to 9: higher ones are\n"
    "           claimed first\n"
    "  --ttl secs  dead (reason ttl) if not claimed within secs\n"
    "           of the send (the spool's ttl applies if lower)\n"
    "  -S       skip fsync (faster, not crash-safe)\n"
    "  -w secs  when the spool is at its max-depth (mq-conf), wait\n"
    "           up to secs (-w alone: forever) for room\n"
    "  -d dir   spool (default $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "           else ~/.local/state/mq; made if missing); several -d:\n"
    "           each message to every spool, under one ID\n"
    "Exit 6: a spool is full (max-depth); the IDs printed were "
    "sent.\n"
    MQ_HELP_SECS
    "See mq-send(1).\n";

/* The input failed: takes back every message not yet visible, and dies. */
static void __dead
fail(const char *name)
{
	mq_fan_abort(&fan);
	err(MQ_EX_SYS, "%s", name);
}

/* -k: one message, a key mq-send takes. */
static void
keycheck(int delim, int nfiles)
{
	if (fan.key == NULL)
		return;
	if (delim != -1 || nfiles > 1)
		errx(MQ_EX_USAGE, "-k sends one message: not with %s",
		    delim != -1 ? "-l or -0" : "several files");
	fan.keylen = strlen(fan.key);
	if (!mq_key_valid(fan.key, fan.keylen))
		errx(MQ_EX_USAGE, "-k: a key is 1 to %d bytes, no newline",
		    MQ_KEY_MAX);
	mq_key_hash(fan.key, fan.keylen, fan.name.keyhash);
}

static void
group(const char *g)
{
	if (!mq_group_valid(g))
		errx(MQ_EX_USAGE, "-g %s: invalid group (1-%d of A-Z a-z 0-9 "
		    ". _ -, not starting with a dot)", g, MQ_GROUP_MAX);
	strlcpy(fan.name.group, g, sizeof(fan.name.group));
}

/*
 * Order within a group is send order: a delay would break it, or hold the
 * whole group back (SQS FIFO has no per-message delay either).
 */
static void
exclusive(uint64_t delay)
{
	if (delay != UINT64_MAX && fan.name.group[0] != '\0')
		errx(MQ_EX_USAGE, "-g and -D exclude each other");
}

/* The whole of fd is one message.  -1: no spool takes any more. */
static int
send_whole(int fd, const char *name)
{
	char buf[65536];
	ssize_t n;

	if (mq_fan_begin(&fan) == -1)
		return -1;
	for (;;) {
		if ((n = read(fd, buf, sizeof(buf))) == -1) {
			if (errno == EINTR)
				continue;
			fail(name);
		}
		if (n == 0)
			break;
		if (mq_fan_write(&fan, buf, n) == -1)
			return -1;
	}
	return mq_fan_end(&fan);
}

static int
send_records(int fd, int delim, const char *name)
{
	struct mq_reader r;
	const char *p;
	size_t len;
	int rc, endrec, ok = 0;

	if (mq_reader_init(&r, fd) == -1)
		fail(name);
	for (;;) {
		/* A slow producer gets each message sent as it comes. */
		if (!mq_reader_pending(&r) && (ok = mq_fan_flush(&fan)) == -1)
			break;
		if ((rc = mq_reader_chunk(&r, delim, &p, &len, &endrec)) == -1)
			fail(name);
		if (rc == 0)
			break;
		if ((!fan.writing && (ok = mq_fan_begin(&fan)) == -1) ||
		    (ok = mq_fan_write(&fan, p, len)) == -1 ||
		    (endrec && (ok = mq_fan_end(&fan)) == -1))
			break;
	}
	if (ok == 0 && fan.writing)
		ok = mq_fan_end(&fan);
	mq_reader_free(&r);
	return ok;
}

/* Parses the options into fan, *delim and *delay; returns optind. */
static int
options(int argc, char *argv[], int *delim, uint64_t *delay)
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "ttl", required_argument, NULL, OPT_TTL },
		{ NULL, 0, NULL, 0 }
	};
	const char *arg;
	int ch;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("0lSvd:D:g:k:p:w::hV"),
	    longopts, NULL)) != -1) {
		switch (ch) {
		case '0':
		case 'l':
			if (*delim != -1 && *delim != (ch == '0' ? '\0' : '\n'))
				errx(MQ_EX_USAGE, "-l and -0 exclude each "
				    "other");
			*delim = ch == '0' ? '\0' : '\n';
			break;
		case 'S':
			fan.sync = 0;
			break;
		case 'v':
			fan.vflag = 1;
			break;
		case 'd':
			mq_fan_dir(&fan, optarg);
			break;
		case 'D':
			*delay = xsecs("-D", optarg, 0);
			break;
		case 'g':
			group(optarg);
			break;
		case 'k':
			fan.key = optarg;
			break;
		case 'p':
			fan.name.prio = xnumber("-p", optarg, 0,
			    MQ_PRIORITY_MAX);
			break;
		case OPT_TTL:
			fan.name.ttl = xsecs("--ttl", optarg, 1);
			break;
		case 'w':
			fan.wflag = 1;
			arg = mq_optional_secs(optarg, argc, argv);
			fan.wait_ms = arg != NULL ? xsecs("-w", arg, 0) :
			    UINT64_MAX;
			break;
		default:
			mq_common_opt(ch, USAGE, help);
		}
	}
	return optind;
}

int
main(int argc, char *argv[])
{
	const char *name;
	uint64_t delay = UINT64_MAX;	/* no -D */
	int i, fd, delim = -1, rc;

	mq_fan_init(&fan);
	i = options(argc, argv, &delim, &delay);
	argc -= i;
	argv += i;
	keycheck(delim, argc);
	exclusive(delay);

	/* Past a file size limit, fail with EFBIG rather than die silently. */
	signal(SIGXFSZ, SIG_IGN);
	if (mq_fan_open(&fan) == -1)
		return mq_fan_close(&fan);
	if (delay > 0 && delay != UINT64_MAX)
		fan.due = mq_now_ms() + delay;

	for (i = 0; i < (argc ? argc : 1); i++) {
		name = argc ? argv[i] : "-";
		if (strcmp(name, "-") == 0) {
			fd = STDIN_FILENO;
			name = "stdin";
		} else if ((fd = open(name, O_RDONLY | O_CLOEXEC)) == -1) {
			warnx("%s: %s%s", name, strerror(errno), errno == ENOENT ?
			    " (operands are files; to send text, use: "
			    "echo TEXT | mq-send)" : "");
			fan.status = mq_worse(fan.status, MQ_EX_SYS);
			continue;
		}
		fan.input = name;
		rc = delim == -1 ? send_whole(fd, name) :
		    send_records(fd, delim, name);
		if (fd != STDIN_FILENO)
			close(fd);
		if (rc == -1)
			break;
	}
	return mq_fan_close(&fan);
}
