/*
 * mq-ls: list the messages of a spool, every state, in the order they
 * would be claimed, without claiming any (look.c): one line each, made
 * from its file's name alone, or with -l from its file too (size, start
 * of the body), escaped so that nothing reaches a terminal raw.
 */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define PREVIEW	32

#define USAGE \
	"usage: mq-ls [-lv] [-d dir] [-s state]... [--json] [dir]\n"

enum { OPT_JSON = 256 };

struct lister {
	int		 json;
	int		 lflag;
	int		 status;
	uint64_t	 listed[MQ_LOOK_NSTATES];	/* for -v */
	struct mq_keys	 keys;
	uint64_t	 isosec;	/* the second iso holds */
	char		 iso[32];
	struct mq_holder_info hinfo;
};

/* What --help prints after the usage. */
static const char help[] =
    "List the messages without claiming any, in claim order: id,\n"
    "state, attempts, time, priority (tab-separated).\n"
    "  -d dir     the spool, also as the operand dir (default $MQ_DIR,\n"
    "             else $XDG_STATE_HOME/mq, else ~/.local/state/mq)\n"
    "  -l         also the size, the start of the body and, of a\n"
    "             lease, its holder (user@host:pid)\n"
    "  -s state   only these (repeatable): expired ready delayed\n"
    "             blocked inflight orphaned dead\n"
    "  --json     one JSON object per message and line\n"
    "  -v         say on stderr the spool, where it was found (-d,\n"
    "             $MQ_DIR...) and how many were listed in each state\n"
    "See mq-ls(1).\n";

/* The time as ISO 8601, made once per second met in a row. */
static const char *
iso(struct lister *ls, uint64_t ms)
{
	if (ls->iso[0] == '\0' || ms / 1000 != ls->isosec) {
		ls->isosec = ms / 1000;
		mq_time_iso(ls->iso, sizeof(ls->iso), ms);
	}
	return ls->iso;
}

/* A lease's holder, described (what holders/ knows of it); else NULL. */
static const struct mq_holder_info *
holder(struct lister *ls, const struct mq_look *m)
{
	if (m->in != MQ_IN_CUR || m->n.holder.kind == 0)
		return NULL;
	mq_holder_describe(ls->keys.sp, &m->n.holder, &ls->hinfo);
	return &ls->hinfo;
}

static void
text(struct lister *ls, const struct mq_look *m, const char *body,
    size_t blen, off_t size)
{
	const struct mq_holder_info *h;

	printf("%s\t%s\t%u\t%s\t%u", m->n.id, mq_look_state_name(m->state),
	    m->n.attempts, iso(ls, m->ms), m->n.prio);
	if (ls->lflag) {
		printf("\t%jd\t", (intmax_t)size);
		mq_escape(stdout, body, blen);
		putchar('\t');
		if ((h = holder(ls, m)) != NULL)
			mq_holder_print(stdout, &m->n.holder, h);
		else
			putchar('-');
	}
	putchar('\n');
}

/*
 * The JSON object of m (mq_message_json, the shape mq-dlq ls --json has
 * too).  A dead letter's reason is reason/ID's; one past its time to
 * live, not buried yet, is as its burial will make it: died at its
 * expiry, "ttl".
 */
static void
json(struct lister *ls, const struct mq_look *m, const char *body,
    size_t blen, off_t size)
{
	struct mq_spool *sp = ls->keys.sp;
	struct mq_message msg;
	char key[MQ_KEY_MAX + 1], *reason = NULL;
	size_t rlen = 0;
	int k, got = 1;

	memset(&msg, 0, sizeof(msg));
	msg.n = &m->n;
	msg.state = mq_look_state_name(m->state);
	msg.time_ms = msg.died_ms = m->ms;
	if ((k = mq_key_get(&ls->keys, &m->n, key)) == 1)
		msg.key = key;
	else if (k == -1) {
		warn("%s/%s", MQ_DIR_KEYS, m->n.keyhash);
		ls->status = MQ_EX_SYS;
	}
	if (m->state == MQ_LOOK_DEAD) {
		msg.dead = 1;
		if (m->in != MQ_IN_DEAD && m->in != MQ_IN_LEAVING) {
			msg.reason = MQ_REASON_TTL;
			msg.rlen = strlen(MQ_REASON_TTL);
		} else if ((got = mq_dead_reason(sp, m->n.id, &reason,
		    &rlen)) == -1) {
			warn("%s/%s", MQ_DIR_REASON, m->n.id);
			ls->status = MQ_EX_SYS;
		} else if (got == 0) {
			msg.reason = reason;
			msg.rlen = rlen;
		}
	}
	if (ls->lflag) {
		msg.body = body;
		msg.blen = blen;
		msg.size = size;
	}
	msg.holder = holder(ls, m);
	if (mq_message_json(stdout, sp, &msg) == -1) {
		warn("%s/%s", MQ_DIR_DEATHS, m->n.id);
		ls->status = MQ_EX_SYS;
	}
	free(reason);
}

static int
one(void *arg, const struct mq_look *m)
{
	struct lister *ls = arg;
	char body[PREVIEW];
	size_t blen = 0;
	off_t size = 0;

	/* Gone since its directory was read: it is not there to list. */
	if (ls->lflag && mq_look_peek(m, body, sizeof(body), &blen,
	    &size) == -1) {
		if (errno != ENOENT) {
			warn("%s/%s", m->dir, m->name);
			ls->status = MQ_EX_SYS;
		}
		return 0;
	}
	if (ls->json)
		json(ls, m, body, blen, size);
	else
		text(ls, m, body, blen, size);
	ls->listed[m->state]++;
	return 0;
}

/*
 * -v: the spool listed, where its name came from and what was listed,
 * on stderr, so that the listing is as without -v.
 */
static void
said(const struct lister *ls, const char *path, const char *whence)
{
	uint64_t total = 0;
	const char *sep = ": ";
	int s;

	for (s = 0; s < MQ_LOOK_NSTATES; s++)
		total += ls->listed[s];
	fprintf(stderr, "%s: ", getprogname());
	mq_escape(stderr, path, strlen(path));
	fprintf(stderr, " (from %s): %" PRIu64 " listed", whence, total);
	for (s = 0; s < MQ_LOOK_NSTATES; s++)
		if (ls->listed[s] > 0) {
			fprintf(stderr, "%s%" PRIu64 " %s", sep, ls->listed[s],
			    mq_look_state_name(s));
			sep = ", ";
		}
	fputc('\n', stderr);
}

static void
failed(void *arg, const char *where, int e)
{
	struct lister *ls = arg;

	errno = e;
	warn("%s", where);
	ls->status = MQ_EX_SYS;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 }
	};
	struct mq_spool sp;
	struct lister ls;
	struct mq_looker lk;
	const char *dir = NULL, *whence;
	int ch, s, vflag = 0;

	memset(&ls, 0, sizeof(ls));
	memset(&lk, 0, sizeof(lk));
	while ((ch = getopt_long(argc, argv, MQ_OPTS("vd:ls:hV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'v':
			vflag = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'l':
			ls.lflag = 1;
			break;
		case 's':
			if ((s = mq_look_state_parse(optarg)) == -1)
				errx(MQ_EX_USAGE, "-s %s: no such state (expired,"
				    " ready, delayed, blocked, inflight, orphaned, dead)",
				    optarg);
			lk.states |= 1u << s;
			break;
		case OPT_JSON:
			ls.json = 1;
			break;
		default:
			mq_common_opt(ch, USAGE, help);
		}
	}
	/* The spool as an operand, as ls takes a path: the same as -d. */
	if (optind < argc && (dir != NULL || argc - optind > 1)) {
		warnx("%s: one spool: -d or an operand", argv[argc - 1]);
		mq_usage(USAGE);
	}
	if (optind < argc)
		dir = argv[optind];
	whence = optind < argc ? "an operand" : mq_spool_origin(dir);
	mq_spool_xopen(&sp, dir, 0);
	/* The ttl tells the waiting messages past it (dead) from the others. */
	(void)mq_settings_xread(&sp);
	mq_keys_init(&ls.keys, &sp);
	if (lk.states == 0)
		lk.states = MQ_LOOK_ALL;
	lk.now = mq_now_ms();
	lk.ttl_ms = sp.conf.ttl_ms;
	lk.fn = one;
	lk.fail = failed;
	lk.arg = &ls;
	if (mq_look(&sp, &lk) == -1)
		err(MQ_EX_SYS, "%s", sp.path);
	if (vflag)
		said(&ls, sp.path, whence);
	mq_keys_close(&ls.keys);
	mq_spool_close(&sp);
	mq_stdout_close();
	return ls.status;
}
