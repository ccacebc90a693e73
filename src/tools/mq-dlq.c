/*
 * mq-dlq: list, show, redrive and purge dead letters.  Listings are one
 * line per dead letter whatever the reason or body hold: control bytes and
 * bytes that are not UTF-8 are escaped, so nothing reaches a terminal raw;
 * so is a body shown on a terminal, unless --raw.  Every command first
 * buries what waits past its time to live (mq_expire), as a claim would:
 * what mq-ls and mq-stat call dead is a dead letter here too.
 */
#include <sys/stat.h>

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

#define PREVIEW	32
/*
 * A full file system at the time of death is the usual cause; a reason
 * removed by hand, or by a redrive under way, looks the same.
 */
#define NO_REASON	"(no reason recorded)"

#define USAGE \
	"usage: mq-dlq [-v] [-d dir] [ls [--json]]\n" \
	"       mq-dlq [-v] [-d dir] show [-0] [--raw] id ...\n" \
	"       mq-dlq [-v] [-d dir] redrive [-0] [--to dir] " \
	    "[--all | id ...]\n" \
	"       mq-dlq [-v] [-d dir] purge [-0] [--all | id ...]\n"

/* What --help prints after the usage. */
static const char help[] =
    "ls: id, attempts, died, reason, size, start of body "
    "(tab-separated)\n"
    "show: the body (escaped on a terminal, unless --raw);\n"
    "redrive: back to new/ (--to: another spool);\n"
    "purge: delete.  An ID may be a unique prefix of 8 or more\n"
    "characters; -: IDs on stdin, one a line (-0: NUL-terminated).\n"
    "See mq-dlq(1).\n"
    "The spool: -d dir, else $MQ_DIR, else $XDG_STATE_HOME/mq,\n"
    "else ~/.local/state/mq.\n";

static int vflag, rawflag, zflag;

/* --to's, as its letter went (-t is now --to). */
#define OPT_TO	256

/*
 * Buries what waits past its time to live, so that every command sees
 * what mq-ls and mq-stat call dead.  One that cannot be buried is warned
 * about (exit 4), and the command goes on with what is in dead/; but an
 * operator who may only look (ls, show) is not failed for what only a
 * writer can do: told, exit 0.
 */
static int
expire(struct mq_spool *sp, int looking)
{
	(void)mq_settings_xread(sp);
	if (mq_expire(sp, NULL) == -1) {
		if (looking && (errno == EACCES || errno == EPERM ||
		    errno == EROFS)) {
			warn("%s: what expired is not buried (mq-ls -s dead "
			    "lists it)", sp->path);
			return MQ_EX_OK;
		}
		warn("%s: burying what expired", sp->path);
		return MQ_EX_SYS;
	}
	return MQ_EX_OK;
}

/* Reads up to PREVIEW bytes of a body and its size, never blocking. */
static int
peek(struct mq_spool *sp, const struct mq_dead *d, char *buf, size_t *len,
    off_t *size)
{
	struct stat st;
	ssize_t n;
	int fd;

	if ((fd = mq_dead_open(sp, d)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	n = read(fd, buf, PREVIEW);
	close(fd);
	if (n == -1)
		return -1;
	*len = n;
	*size = st.st_size;
	return 0;
}

static int
cmd_ls(struct mq_spool *sp, int json)
{
	struct mq_dead *d;
	struct mq_keys keys;
	struct mq_message msg;
	char iso[32], body[PREVIEW], *reason, key[MQ_KEY_MAX + 1];
	size_t n, i, blen, rlen;
	off_t size;
	int got, k, status;

	status = expire(sp, 1);
	mq_keys_init(&keys, sp);
	if (mq_dead_list(sp, &d, &n) == -1)
		err(MQ_EX_SYS, "%s/%s", sp->path, MQ_DIR_DEAD);
	for (i = 0; i < n; i++) {
		if (peek(sp, &d[i], body, &blen, &size) == -1) {
			if (errno != ENOENT) {
				warn("%s/%s", MQ_DIR_DEAD, d[i].name);
				status = MQ_EX_SYS;
			}
			continue;
		}
		if ((got = mq_dead_reason(sp, d[i].n.id, &reason, &rlen)) ==
		    -1) {
			warn("%s/%s", MQ_DIR_REASON, d[i].n.id);
			status = MQ_EX_SYS;
		}
		mq_time_iso(iso, sizeof(iso), d[i].n.ms);
		if (json) {
			memset(&msg, 0, sizeof(msg));
			msg.n = &d[i].n;
			msg.state = mq_look_state_name(MQ_LOOK_DEAD);
			msg.time_ms = msg.died_ms = d[i].n.ms;
			if ((k = mq_key_get(&keys, &d[i].n, key)) == 1)
				msg.key = key;
			else if (k == -1) {
				warn("%s/%s", MQ_DIR_KEYS, d[i].n.keyhash);
				status = MQ_EX_SYS;
			}
			msg.dead = 1;
			msg.reason = got == 0 ? reason : NULL;
			msg.rlen = rlen;
			msg.body = body;
			msg.blen = blen;
			msg.size = size;
			if (mq_message_json(stdout, sp, &msg) == -1) {
				warn("%s/%s", MQ_DIR_DEATHS, d[i].n.id);
				status = MQ_EX_SYS;
			}
		} else {
			printf("%s\t%u\t%s\t", d[i].n.id, d[i].n.attempts,
			    iso);
			if (got == 1)
				fputs(NO_REASON, stdout);
			else
				mq_escape(stdout, reason, rlen);
			printf("\t%jd\t", (intmax_t)size);
			mq_escape(stdout, body, blen);
			putchar('\n');
		}
		free(reason);
	}
	mq_keys_close(&keys);
	free(d);
	return status;
}

/* One dead letter's body (show): its status. */
static int
show(struct mq_spool *sp, const char *id)
{
	struct mq_dead d;
	struct stat st;
	int fd, status = MQ_EX_OK;

	if (mq_dead_find(sp, id, &d) == -1) {
		if (errno != ENOENT) {
			warn("%s/%s", sp->path, MQ_DIR_DEAD);
			return MQ_EX_SYS;
		}
		warnx("%s: no such dead letter", id);
		return MQ_EX_NONE;
	}
	if ((fd = mq_dead_open(sp, &d)) == -1 || fstat(fd, &st) == -1) {
		warn("%s/%s", MQ_DIR_DEAD, d.name);
		status = MQ_EX_SYS;
	} else if (!S_ISREG(st.st_mode)) {
		warnx("%s/%s: not a regular file", MQ_DIR_DEAD, d.name);
		status = MQ_EX_SYS;
	/* Byte for byte, but nothing of it takes over a terminal (mq-show). */
	} else if (!rawflag && isatty(STDOUT_FILENO)) {
		if (mq_copy_escaped(fd, stdout) == -1)
			err(MQ_EX_SYS, "%s/%s", MQ_DIR_DEAD, d.name);
	} else if (fflush(stdout) == EOF ||
	    mq_copy_fd(fd, STDOUT_FILENO) == -1)
		err(MQ_EX_SYS, "%s/%s", MQ_DIR_DEAD, d.name);
	if (fd != -1)
		close(fd);
	return status;
}

static int
idcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Redrives or purges the named dead letters (whole IDs, each once), or
 * all of them, in ID order so that a redrive keeps the original order.
 */
static int
cmd_move(struct mq_spool *sp, int redrive, const char *to, int all,
    char **ids, size_t nids)
{
	struct mq_spool target, *tsp = sp;
	struct mq_placer pl;
	struct mq_dead *d, one;
	struct stat *why;
	char *moved;
	size_t n, i, j, k;
	int history = 0, status = MQ_EX_OK;

	if (to != NULL) {
		mq_spool_xopen(&target, to, 1);
		tsp = &target;
	}
	mq_placer_init(&pl, tsp, 1);
	if (all) {
		if (mq_dead_list(sp, &d, &n) == -1)
			err(MQ_EX_SYS, "%s/%s", sp->path, MQ_DIR_DEAD);
	} else {
		qsort(ids, nids, sizeof(*ids), idcmp);
		d = xreallocarray(NULL, nids ? nids : 1, sizeof(*d));
		for (n = 0, k = 0; k < nids; k++) {
			/* One named twice (an ID and a prefix of it) is one. */
			if (k > 0 && strcmp(ids[k], ids[k - 1]) == 0)
				continue;
			if (mq_dead_find(sp, ids[k], &one) == 0)
				d[n++] = one;
			else if (errno == ENOENT) {
				warnx("%s: no such dead letter", ids[k]);
				status = mq_worse(status, MQ_EX_NONE);
			} else
				err(MQ_EX_SYS, "%s/%s", sp->path, MQ_DIR_DEAD);
		}
	}
	why = xreallocarray(NULL, n ? n : 1, sizeof(*why));
	moved = xmalloc(n ? n : 1);
	memset(moved, 0, n ? n : 1);
	for (i = 0; i < n; i++) {
		if ((redrive ? mq_dead_redrive(sp, &d[i], &pl, &history,
		    &why[i]) :
		    mq_dead_purge(sp, &d[i])) == -1) {
			if (errno == ENOENT && !history) {
				warnx("%s: no such dead letter", d[i].n.id);
				status = mq_worse(status, MQ_EX_NONE);
				continue;
			}
			if (history)
				warn("%s/%s/%s", tsp->path, MQ_DIR_DEATHS,
				    d[i].n.id);
			else
				warn("%s/%s", MQ_DIR_DEAD, d[i].name);
			status = mq_worse(status, MQ_EX_SYS);
			break;
		}
		moved[i] = 1;
		if (vflag)
			warnx("%s: %s", d[i].n.id, redrive ? "redriven" :
			    "purged");
	}
	if (mq_placer_flush(&pl) == -1) {
		warn("%s", tsp->path);
		status = mq_worse(status, MQ_EX_SYS);
	} else if (redrive) {
		/* Durable where they went: what they leave here can go. */
		for (j = 0; j < n; j++)
			if (moved[j])
				mq_dead_redriven(sp, &d[j], tsp, &why[j]);
	}
	/* Purged durably: their reasons and histories can go. */
	if (!redrive && mq_dead_sync(sp) == 0)
		for (j = 0; j < n; j++)
			if (moved[j])
				mq_dead_purged(sp, &d[j]);
	mq_placer_close(&pl);
	if (tsp != sp)
		mq_spool_close(tsp);
	free(why);
	free(moved);
	free(d);
	return status;
}

/*
 * show, redrive and purge: what expired buried first (it is dead to them
 * too), then the dead letters named (a prefix for the one it begins, "-"
 * for those on stdin), or with --all every one.  Every ID is checked,
 * and every prefix looked for, before anything is done.
 */
static int
cmd_named(const char *dir, const char *cmd, const char *to, int all,
    int argc, char *argv[])
{
	struct mq_spool sp;
	char **ids = NULL;
	size_t n = 0, i;
	int status;

	if (argc > 0)
		ids = mq_ids_xread(argc, argv, zflag, &n);
	mq_spool_xopen(&sp, dir, 0);
	status = expire(&sp, cmd[0] == 's');
	status = mq_worse(status, mq_ids_xresolve(&sp, ids, &n, mq_dead_match,
	    "dead letter"));
	if (cmd[0] == 's')
		for (i = 0; i < n; i++)
			status = mq_worse(status, show(&sp, ids[i]));
	else if (all || n > 0)
		status = mq_worse(status, cmd_move(&sp, cmd[0] == 'r', to, all,
		    ids, n));
	mq_ids_free(ids, n);
	mq_spool_close(&sp);
	return status;
}

/* The options of a command given to another: exit 2. */
static void
goes_with(const char *cmd, int json, const char *to, int all)
{
	int named = strcmp(cmd, "show") == 0 || strcmp(cmd, "redrive") == 0 ||
	    strcmp(cmd, "purge") == 0;

	if (strcmp(cmd, "ls") != 0 && json)
		errx(MQ_EX_USAGE, "--json goes with ls");
	if (strcmp(cmd, "redrive") != 0 && to != NULL)
		errx(MQ_EX_USAGE, "--to goes with redrive");
	if (strcmp(cmd, "redrive") != 0 && strcmp(cmd, "purge") != 0 && all)
		errx(MQ_EX_USAGE, "--all goes with redrive and purge");
	if (strcmp(cmd, "show") != 0 && rawflag)
		errx(MQ_EX_USAGE, "--raw goes with show");
	if (!named && zflag)
		errx(MQ_EX_USAGE, "-0 goes with show, redrive and purge");
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },
		{ "raw", no_argument, NULL, 'r' },
		{ "to", required_argument, NULL, OPT_TO },
		{ NULL, 0, NULL, 0 }
	};
	struct mq_spool sp;
	const char *dir = NULL, *to = NULL, *cmd = "ls";
	int ch, json = 0, all = 0, status;

	while ((ch = getopt_long(argc, argv, MQ_OPTS("vd:hV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
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
	if (argc > 0) {
		cmd = argv[0];
		/* Options of a subcommand follow it. */
		MQ_OPTRESET();
		while ((ch = getopt_long(argc, argv, MQ_OPTS("0vd:t"),
		    longopts, NULL)) != -1) {
			switch (ch) {
			case '0':
				zflag = 1;
				break;
			case 'v':
				vflag = 1;
				break;
			case 'd':
				dir = optarg;
				break;
			case 't':
				mq_renamed("-t", "--to");
			case OPT_TO:
				to = optarg;
				break;
			case 'j':
				json = 1;
				break;
			case 'a':
				all = 1;
				break;
			case 'r':
				rawflag = 1;
				break;
			case 'h':
				mq_common_opt(ch, USAGE, help);
			default:	/* -V too: it goes before a command */
				mq_usage(USAGE);
			}
		}
		argc -= optind;
		argv += optind;
	}
	signal(SIGXFSZ, SIG_IGN);
	goes_with(cmd, json, to, all);
	if (strcmp(cmd, "ls") == 0) {
		if (argc > 0)
			mq_usage(USAGE);
		mq_spool_xopen(&sp, dir, 0);
		status = cmd_ls(&sp, json);
		mq_spool_close(&sp);
	} else if (strcmp(cmd, "show") == 0) {
		if (argc == 0)
			mq_usage(USAGE);
		status = cmd_named(dir, cmd, NULL, 0, argc, argv);
	} else if (strcmp(cmd, "redrive") == 0 || strcmp(cmd, "purge") == 0) {
		if (!all && argc == 0)
			errx(MQ_EX_USAGE, "%s: name IDs or --all", cmd);
		if (all && argc > 0)
			errx(MQ_EX_USAGE, "--all and IDs exclude each other");
		status = cmd_named(dir, cmd, to, all, argc, argv);
	} else {
		warnx("%s: unknown command", cmd);
		mq_usage(USAGE);
	}
	mq_stdout_close();
	return status;
}
