/*
 * mq-conf: show or change a spool's settings (conf.c).  Every KEY=VALUE of
 * a call is checked before anything is touched, so a bad one changes
 * nothing, and they are written in one rename: all of them or none.
 */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define USAGE \
	"usage: mq-conf [-v] [-d dir] [key ...]\n" \
	"       mq-conf [-fv] [-d dir] key=[value] ...\n"

/* What --help prints after the usage. */
static const char help[] =
    "Show the spool's settings (key=value a line), the value of each\n"
    "key, or set each key=value, all or none (key= for the default).\n"
    "  max-attempts n     dead-letter after n attempts (default 5)\n"
    "  lease secs         lease of a claim (default 30)\n"
    "  max-depth n        most messages waiting; 0: no limit\n"
    "  overflow how       when full: reject (default) or drop-oldest\n"
    "  ttl secs           a waiting message expires; 0: never\n"
    "  paused yes|no|secs claim nothing while yes, or for secs\n"
    "                     (default no)\n"
    "  dedup-window secs  remember a dedup key after its message\n"
    "  log-size size      of the log (mq-log), 512K, 16M (default);\n"
    "                     0: no log\n"
    "  log-age secs       mq-sweep drops older records (default 7d)\n"
    "  keep-output secs   keep each job's output that long (mq-log -o);\n"
    "                     0: not kept (default)\n"
    "  once-window secs   mq-recv --once remembers a finished\n"
    "                     message that long (default 0: the ttl,\n"
    "                     else 7d, at least lease x max-attempts)\n"
    "  -f       set a ttl that expires waiting messages without asking\n"
    "  -v       say what changed, on standard error\n"
    "  -d dir   spool (default $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "           else ~/.local/state/mq; made if missing when setting)\n"
    "See mq-conf(1).\n";

static int
key_of(const char *name, size_t len)
{
	int k;

	if ((k = mq_conf_key(name, len)) != -1)
		return k;
	warnx("%.*s: unknown key (one of max-attempts, lease, max-depth, "
	    "overflow, ttl, paused, dedup-window, log-size, log-age, "
	    "keep-output, once-window)",
	    (int)len, name);
	exit(MQ_EX_USAGE);
}

static void
show(const char *dir, int argc, char *argv[])
{
	struct mq_spool sp;
	struct mq_conf c;
	int i, k;

	for (i = 0; i < argc; i++)
		(void)key_of(argv[i], strlen(argv[i]));
	mq_spool_xopen(&sp, dir, 0);
	mq_conf_xread(&sp, &c);
	if (argc == 0)
		for (k = 0; k < MQ_CONF_NKEYS; k++)
			printf("%s=%s\n", mq_conf_name(k), mq_conf_value(&c, k));
	for (i = 0; i < argc; i++)
		puts(mq_conf_value(&c, key_of(argv[i], strlen(argv[i]))));
	mq_spool_close(&sp);
	mq_stdout_close();
}

/*
 * The waiting messages that a ttl of ttl_ms would expire now and the
 * spool's ttl does not: they are buried at the next claim or sweep.
 */
static uint64_t
expiring(struct mq_spool *sp, uint64_t ttl_ms)
{
	struct mq_stats before, after;
	struct mq_conf c;
	uint64_t now = mq_now_ms();

	mq_conf_xread(sp, &c);
	if (ttl_ms == 0 || (c.ttl_ms != 0 && ttl_ms >= c.ttl_ms))
		return 0;
	if (mq_stat(sp, now, c.ttl_ms, 0, &before) == -1 ||
	    mq_stat(sp, now, ttl_ms, 0, &after) == -1)
		err(MQ_EX_SYS, "%s", sp->path);
	return after.dead > before.dead ? after.dead - before.dead : 0;
}

/*
 * A ttl that would bury a backlog at once is set only when asked for:
 * with -f (which still says how many), or by a yes on a terminal.  Else
 * exit 2, nothing changed.
 */
static void
confirm(struct mq_spool *sp, const char *setting, uint64_t ttl_ms,
    int force)
{
	char answer[16];
	uint64_t n;

	if ((n = expiring(sp, ttl_ms)) == 0)
		return;
	if (force) {
		warnx("%s: %s expires %" PRIu64 " waiting message%s now",
		    sp->path, setting, n, n == 1 ? "" : "s");
		return;
	}
	if (isatty(STDIN_FILENO) && isatty(STDERR_FILENO)) {
		fprintf(stderr, "%s: %s: %s expires %" PRIu64 " waiting "
		    "message%s now (dead letters, reason ttl); set it? "
		    "[y/N] ", getprogname(), sp->path, setting, n,
		    n == 1 ? "" : "s");
		if (fgets(answer, sizeof(answer), stdin) != NULL &&
		    (answer[0] == 'y' || answer[0] == 'Y'))
			return;
		errx(MQ_EX_USAGE, "%s: nothing changed", sp->path);
	}
	errx(MQ_EX_USAGE, "%s: %s would expire %" PRIu64 " waiting message%s "
	    "at once; nothing changed (-f to set it)", sp->path, setting, n,
	    n == 1 ? "" : "s");
}

static void
set(const char *dir, int argc, char *argv[], int verbose, int force)
{
	struct mq_spool sp;
	struct mq_conf c, check;
	const char *why, *eq, *path, *ttl = NULL, **value;
	char was[MQ_CONF_NKEYS][sizeof(c.value[0])];
	char until[sizeof(c.value[0])];
	uint64_t now = mq_now_ms();
	int changed, i, k;

	/* Checked on a blank copy first: nothing is made for a bad call. */
	mq_conf_init(&check);
	value = xreallocarray(NULL, argc, sizeof(*value));
	for (i = 0; i < argc; i++) {
		if ((eq = strchr(argv[i], '=')) == NULL)
			errx(MQ_EX_USAGE, "%s: a setting is key=value; "
			    "showing and setting do not mix", argv[i]);
		k = key_of(argv[i], eq - argv[i]);
		value[i] = eq + 1;
		/* paused=1h: paused until an hour from now. */
		if (k == MQ_CONF_PAUSED)
			value[i] = xstrdup(mq_conf_pause_until(eq + 1, now,
			    until, sizeof(until)));
		if (mq_conf_set(&check, k, value[i], &why) == -1)
			errx(MQ_EX_USAGE, "%s: %s; nothing changed", argv[i],
			    why);
		if (k == MQ_CONF_TTL)
			ttl = argv[i];
	}
	/*
	 * A spool is made for its settings, as mq-send would make it; said,
	 * so that a mistyped -d at a terminal is seen.
	 */
	if (dir != NULL && *dir == '\0')
		errx(MQ_EX_USAGE, "-d: empty spool name");
	if ((path = mq_spool_dir(dir)) == NULL)
		err(MQ_EX_SYS, "no spool: set MQ_DIR or HOME");
	if (mq_spool_open(&sp, path, 0) == -1) {
		if (errno != ENOENT)
			mq_spool_xopen(&sp, dir, 0);
		mq_spool_xopen(&sp, dir, 1);
		warnx("%s: new spool", sp.path);
	} else {
		if (ttl != NULL)
			confirm(&sp, ttl, check.ttl_ms, force);
		mq_spool_close(&sp);
		mq_spool_xopen(&sp, dir, 1);
	}
	if (mq_conf_lock(&sp) == -1)
		err(MQ_EX_SYS, "%s: lock", sp.path);
	mq_conf_xread(&sp, &c);
	for (k = 0; k < MQ_CONF_NKEYS; k++)
		strlcpy(was[k], mq_conf_value(&c, k), sizeof(was[k]));
	for (i = 0; i < argc; i++) {
		eq = strchr(argv[i], '=');
		k = key_of(argv[i], eq - argv[i]);
		(void)mq_conf_set(&c, k, value[i], &why);
	}
	if (mq_conf_write(&sp, &c, &changed) == -1 && changed)
		err(MQ_EX_SYS, "%s/%s: changed, but not made durable",
		    sp.path, MQ_CONF);
	else if (!changed)
		err(MQ_EX_SYS, "%s/%s: nothing changed", sp.path, MQ_CONF);
	mq_conf_unlock(&sp);
	mq_conf_logged(&sp, &c, was);
	for (k = 0; verbose && k < MQ_CONF_NKEYS; k++)
		if (strcmp(was[k], mq_conf_value(&c, k)) != 0)
			warnx("%s: %s=%s (was %s)", sp.path, mq_conf_name(k),
			    mq_conf_value(&c, k), was[k]);
	mq_spool_close(&sp);
	for (i = 0; i < argc; i++)
		if (value[i] != strchr(argv[i], '=') + 1)
			free((void *)value[i]);
	free(value);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *dir = NULL;
	int ch, i, nset = 0, force = 0, verbose = 0;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("fvd:hV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'f':
			force = 1;
			break;
		case 'v':
			verbose = 1;
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
	for (i = 0; i < argc; i++)
		nset += strchr(argv[i], '=') != NULL;
	if (nset == 0 && force)
		errx(MQ_EX_USAGE, "-f goes with a setting");
	if (nset == 0)
		show(dir, argc, argv);
	else
		set(dir, argc, argv, verbose, force);
	return MQ_EX_OK;
}
