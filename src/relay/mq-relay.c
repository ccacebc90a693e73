/*
 * mq-relay: moves messages between the local spool and a RabbitMQ queue
 * (quorum, replicated): push claims local messages and publishes them,
 * acking each locally once the broker confirmed it (push.c); pull
 * consumes and writes each durably into the spool before acking it to
 * the broker (pull.c).  The connection, its URIs and their passwords are
 * broker.c's.  main parses and calls one direction.
 */
#include <err.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"
#include "broker.h"

#define USAGE \
	"usage: mq-relay push [-1v] [-d dir] [-n batch] [-q queue] " \
	"[--max-bytes bytes]\n" \
	"                     [uri ...]\n" \
	"       mq-relay pull [-1v] [-d dir] [-n max] [-q queue] [uri ...]\n"

#define PUSH_BATCH	100	/* -n: messages published per confirm round */
#define PULL_MAX	1000	/* -n: messages kept waiting in the spool */
#define RELAY_HEARTBEAT_S 30	/* seconds between heartbeats, both ways */

static const char help[] =
    "Move messages between the local spool and a RabbitMQ queue.\n"
    "  push     publish local messages, ack each once confirmed\n"
    "  pull     write messages into the spool, ack each once written\n"
    "  -1       stop when there is nothing left to move\n"
    "  -d dir   spool (default $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "           else ~/.local/state/mq)\n"
    "  -n n     push: messages per batch, 1 to 1024 (default 100);\n"
    "           pull: most messages waiting, 1 to 65535 (default 1000)\n"
    "  -q queue the broker's queue (default: the spool's base name)\n"
    "  --max-bytes bytes\n"
    "           push: the broker's largest message (default 128 MiB);\n"
    "           a bigger one is dead-lettered\n"
    "  -v       say each connection and batch on stderr\n"
    "  uri      amqp[s]://user:password@host:port/vhost, nodes of one\n"
    "           cluster (default $MQ_RELAY_URI, else amqp://localhost)\n"
    "Exit 0: moved something (or stopped by a signal); 1: -1 and nothing\n"
    "to move; 4: no broker answered.  See mq-relay(1).\n";

static volatile sig_atomic_t stop;
static struct mq_broker broker;

/*
 * A stop while connecting ends the relay here: it holds nothing then
 * (mq_broker_connect), and the steps of a connection go on through a
 * signal up to their time limits (5 s each: rabbitmq-c restarts an
 * interrupted wait) or longer (a name's resolution).
 */
static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
	if (broker.connecting)
		_exit(MQ_EX_OK);
}

enum { OPT_MAX_BYTES = 256 };

/* What the command line asks for. */
struct relay_opts {
	const char	*dir, *queue, *n, *size, *way;
	int		 once, verbose;
};

/* Parses options from optind on, up to the first operand. */
static void
options(int argc, char *argv[], struct relay_opts *o)
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("1vd:n:q:shV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case '1':
			o->once = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'n':
			o->n = optarg;
			break;
		case 'q':
			o->queue = optarg;
			break;
		case OPT_MAX_BYTES:
			o->size = optarg;
			break;
		case 's':
			/* -s is a state in mq-ls. */
			mq_renamed("-s", "--max-bytes");
		default:
			mq_common_opt(ch, USAGE, help);
		}
	}
}

int
main(int argc, char *argv[])
{
	struct relay_opts o;
	struct mq_broker *b = &broker;
	struct sigaction sa;
	sigset_t set;
	int pull, n, status;

	memset(&o, 0, sizeof(o));
	/* The direction, then options; or options, the direction, options. */
	options(argc, argv, &o);
	if (optind < argc) {
		o.way = argv[optind++];
		options(argc, argv, &o);
	}
	if (o.way == NULL) {
		warnx("push or pull?");
		mq_usage(USAGE);
	}
	if (strcmp(o.way, "push") != 0 && strcmp(o.way, "pull") != 0) {
		warnx("%s: unknown direction (push or pull)", o.way);
		mq_usage(USAGE);
	}
	pull = strcmp(o.way, "pull") == 0;
	n = o.n == NULL ? (pull ? PULL_MAX : PUSH_BATCH) :
	    xnumber("-n", o.n, 1, pull ? 65535 : 1024);
	if (o.queue != NULL && (*o.queue == '\0' || strlen(o.queue) > 255))
		errx(MQ_EX_USAGE, "-q: a queue name is 1 to 255 bytes");
	/* A heartbeat each way, so that a half-open connection is noticed. */
	if (mq_broker_init(b, argc - optind, argv + optind, o.queue,
	    RELAY_HEARTBEAT_S, o.verbose, &stop) == -1)
		mq_usage(USAGE);
	if (o.size != NULL && pull)
		errx(MQ_EX_USAGE, "--max-bytes: push only");
	if (o.size != NULL)
		b->max_size = (uint64_t)xnumber("--max-bytes", o.size, 1,
		    MQ_BROKER_SIZE_LIMIT);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* Blocked by whoever started it (exec keeps the mask): deaf to a stop. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	/* A socket that went away is an error of its call, not a death. */
	signal(SIGPIPE, SIG_IGN);
	status = pull ? mq_pull(b, o.dir, (unsigned)n, o.once) :
	    mq_push(b, o.dir, (unsigned)n, o.once);
	mq_broker_close(b);
	return status;
}
