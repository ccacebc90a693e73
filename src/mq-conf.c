/*
 * mq-conf: show or change a spool's settings (conf.c).  Every KEY=VALUE of
 * a call is checked before anything is touched, so a bad one changes
 * nothing, and they are written in one rename: all of them or none.
 */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "mq.h"

#define USAGE \
	"usage: mq-conf [-v] [-d dir] [key ...]\n" \
	"       mq-conf [-v] [-d dir] key=[value] ...\n"

/* What --help prints after the usage. */
static const char help[] =
    "Show the spool's settings (key=value a line), the value of each\n"
    "key, or set each key=value, all or none (key= for the default).\n"
    "  max-attempts n     dead-letter after n attempts (default 5)\n"
    "  lease secs         lease of a claim (default 30)\n"
    "  max-depth n        most messages waiting; 0: no limit\n"
    "  overflow how       when full: reject (default) or drop-oldest\n"
    "  ttl secs           a waiting message expires; 0: never\n"
    "  paused yes|no      claim nothing while yes (default no)\n"
    "  dedup-window secs  remember a dedup key after its message\n"
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
	    "overflow, ttl, paused, dedup-window)", (int)len, name);
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

static void
set(const char *dir, int argc, char *argv[], int verbose)
{
	struct mq_spool sp;
	struct mq_conf c, check;
	const char *why, *eq;
	char was[MQ_CONF_NKEYS][sizeof(c.value[0])];
	int changed, i, k;

	/* Checked on a blank copy first: nothing is made for a bad call. */
	mq_conf_init(&check);
	for (i = 0; i < argc; i++) {
		if ((eq = strchr(argv[i], '=')) == NULL)
			errx(MQ_EX_USAGE, "%s: a setting is key=value; "
			    "showing and setting do not mix", argv[i]);
		k = key_of(argv[i], eq - argv[i]);
		if (mq_conf_set(&check, k, eq + 1, &why) == -1)
			errx(MQ_EX_USAGE, "%s: %s; nothing changed", argv[i],
			    why);
	}
	mq_spool_xopen(&sp, dir, 1);
	if (mq_conf_lock(&sp) == -1)
		err(MQ_EX_SYS, "%s: lock", sp.path);
	mq_conf_xread(&sp, &c);
	for (k = 0; k < MQ_CONF_NKEYS; k++)
		strlcpy(was[k], mq_conf_value(&c, k), sizeof(was[k]));
	for (i = 0; i < argc; i++) {
		eq = strchr(argv[i], '=');
		k = key_of(argv[i], eq - argv[i]);
		(void)mq_conf_set(&c, k, eq + 1, &why);
	}
	if (mq_conf_write(&sp, &c, &changed) == -1 && changed)
		err(MQ_EX_SYS, "%s/%s: changed, but not made durable",
		    sp.path, MQ_CONF);
	else if (!changed)
		err(MQ_EX_SYS, "%s/%s: nothing changed", sp.path, MQ_CONF);
	mq_conf_unlock(&sp);
	for (k = 0; verbose && k < MQ_CONF_NKEYS; k++)
		if (strcmp(was[k], mq_conf_value(&c, k)) != 0)
			warnx("%s: %s=%s (was %s)", sp.path, mq_conf_name(k),
			    mq_conf_value(&c, k), was[k]);
	mq_spool_close(&sp);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *dir = NULL;
	int ch, i, nset = 0, verbose = 0;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("vd:hV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
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
	if (nset == 0)
		show(dir, argc, argv);
	else
		set(dir, argc, argv, verbose);
	return MQ_EX_OK;
}
