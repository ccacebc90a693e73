/*
 * mq-stat: how many messages each spool holds in each state, how old the
 * oldest ready message and the oldest dead letter are, and (-b) how many
 * bytes they take, with the settings that differ from the defaults (mq-conf):
 * as a table, as JSON lines, or in the Prometheus text format for
 * node_exporter's textfile collector.  It only reads (stat.c, conf.c).
 */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

enum format { TABLE, JSON, PROMETHEUS };

#define USAGE "usage: mq-stat [-bv] [-i secs] [--json | --prometheus] " \
    "[-d dir ...] [dir ...]\n"

enum { OPT_JSON = 256, OPT_PROMETHEUS };

struct result {
	const char	*path;
	struct mq_stats	 st;
	struct mq_conf	 conf;
	uint64_t	 counts[MQ_COUNTS];
	/* -i: what the counters said the round before, and when (0: none). */
	uint64_t	 before[MQ_COUNTS];
	uint64_t	 before_ms;
	uint64_t	 now_ms;
};

/* The counters' names (count.c's order): JSON's, and Prometheus' _total. */
static const struct {
	const char *name;
	const char *help;
} counters[MQ_COUNT_DEAD_ATTEMPTS] = {
	[MQ_COUNT_SENT] = { "sent", "Messages that entered the spool "
	    "(mq-send, mq-relay pull, a redrive from another spool)." },
	[MQ_COUNT_CLAIMED] = { "claimed", "Deliveries: claims of a "
	    "message, each attempt counted." },
	[MQ_COUNT_ACKED] = { "acked", "Messages acked: done, gone." },
	[MQ_COUNT_RELEASED] = { "released", "Messages released back to "
	    "wait again (mq-ack -r, a failed job)." },
	[MQ_COUNT_REDRIVEN] = { "redriven", "Dead letters redriven "
	    "(mq-dlq redrive)." },
	[MQ_COUNT_REMOVED] = { "removed", "Messages removed unprocessed "
	    "(mq-rm) and dead letters purged (mq-dlq purge)." },
};

/* What --help prints after the usage. */
static const char help[] =
    "Count the messages of each spool by state; ages, and the settings\n"
    "that differ from the defaults (mq-conf).\n"
    "  -b            also the bytes of the messages (stats every file)\n"
    "  -i secs       again every secs until interrupted, the table with\n"
    "                the rates of the counters over the last secs\n"
    "  -d dir        a spool (more than one -d, or dir operands, for\n"
    "                more spools; default $MQ_DIR, else\n"
    "                $XDG_STATE_HOME/mq, else ~/.local/state/mq)\n"
    "  -v            say on stderr each spool counted, where it was\n"
    "                found (-d, $MQ_DIR...) and its total\n"
    "  --json        one JSON object per spool and line\n"
    "  --prometheus  the Prometheus text format, for node_exporter\n"
    "See mq-stat(1).\n";

/* Seconds, to the ms, from a time to now; 0 for a time in the future. */
static double
age(uint64_t then, uint64_t now)
{
	return then >= now ? 0 : (now - then) / 1000.0;
}

/*
 * The settings that differ from the defaults as one word, key=value
 * joined by commas (no value has a space or a comma), or "-".  paused
 * comes first, so that a paused spool shows at a glance.
 */
static const char *
settings_word(char *buf, size_t size, const struct mq_conf *c)
{
	size_t len = 0;
	int k, i;

	buf[0] = '\0';
	for (i = -1; i < MQ_CONF_NKEYS; i++) {
		k = i == -1 ? MQ_CONF_PAUSED : i;
		if (i == MQ_CONF_PAUSED || !mq_conf_isset(c, k))
			continue;
		len += snprintf(buf + len, size - len, "%s%s=%s",
		    len > 0 ? "," : "", mq_conf_name(k), mq_conf_value(c, k));
	}
	return len > 0 ? buf : "-";
}

/* Room for every key, "=" and its longest value (31), and a comma. */
#define SETTINGS_MAX	(MQ_CONF_NKEYS * (16 + 32 + 1))

/* Whether the sizes were counted (-b): else no bytes are printed. */
static int with_bytes;
static int with_rates;

/* The rates -i shows: a counter's, or the sum of the deaths'. */
static const struct {
	const char	*head;
	int		 count;	/* or MQ_COUNTED_DEAD */
} rates[] = {
	{ "SENT/S", MQ_COUNT_SENT }, { "CLAIMED/S", MQ_COUNT_CLAIMED },
	{ "ACKED/S", MQ_COUNT_ACKED }, { "RELEASED/S", MQ_COUNT_RELEASED },
	{ "DEAD/S", MQ_COUNTED_DEAD },
};
#define NRATES	(sizeof(rates) / sizeof(rates[0]))

/* Per second since the round before; "-" in the first. */
static void
rate(const struct result *r, int count, int width)
{
	double v = mq_rate(r->counts, r->now_ms, r->before, r->before_ms,
	    count);

	if (v < 0)
		printf(" %*s", width, "-");
	else
		printf(" %*.1f", width, v);
}

static void
table(const struct result *r, size_t n, uint64_t now)
{
	char a[32], b[32], set[SETTINGS_MAX];
	size_t i, k;
	int w = strlen("SETTINGS"), len;

	for (i = 0; i < n; i++)
		if ((len = strlen(settings_word(set, sizeof(set),
		    &r[i].conf))) > w)
			w = len;
	printf("%7s %7s %7s %8s %7s %7s %13s %12s", "READY", "DELAYED",
	    "BLOCKED", "INFLIGHT", "EXPIRED", "DEAD", "OLDEST-READY",
	    "OLDEST-DEAD");
	if (with_bytes)
		printf(" %12s", "BYTES");
	for (i = 0; with_rates && i < NRATES; i++)
		printf(" %*s", (int)strlen(rates[i].head), rates[i].head);
	printf("  %-*s  %s\n", w, "SETTINGS", "SPOOL");
	for (i = 0; i < n; i++) {
		printf("%7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %8" PRIu64
		    " %7" PRIu64 " %7" PRIu64 " %13s %12s",
		    r[i].st.ready, r[i].st.delayed, r[i].st.blocked,
		    r[i].st.in_flight, r[i].st.expired, r[i].st.dead,
		    mq_human_age(a, sizeof(a), r[i].st.oldest_ready_ms, now),
		    mq_human_age(b, sizeof(b), r[i].st.oldest_dead_ms, now));
		if (with_bytes)
			printf(" %12" PRIu64, r[i].st.bytes);
		for (k = 0; with_rates && k < NRATES; k++)
			rate(&r[i], rates[k].count, (int)strlen(rates[k].head));
		printf("  %-*s  ", w,
		    settings_word(set, sizeof(set), &r[i].conf));
		mq_escape(stdout, r[i].path, strlen(r[i].path));
		putchar('\n');
	}
}

static void
json_age(const char *key, uint64_t then, uint64_t now)
{
	if (then == UINT64_MAX)
		printf(",\"%s\":null", key);
	else
		printf(",\"%s\":%.3f", key, age(then, now));
}

/* Keys and values as mq-conf prints them; only those not the default. */
static void
json_settings(const struct mq_conf *c)
{
	const char *v;
	int k, first = 1;

	fputs(",\"settings\":{", stdout);
	for (k = 0; k < MQ_CONF_NKEYS; k++) {
		if (!mq_conf_isset(c, k))
			continue;
		if (!first)
			putchar(',');
		first = 0;
		mq_json_string(stdout, mq_conf_name(k),
		    strlen(mq_conf_name(k)));
		putchar(':');
		v = mq_conf_value(c, k);
		mq_json_string(stdout, v, strlen(v));
	}
	putchar('}');
}

/* The counters object (mq-spool(5): "counters"). */
static void
json_counters(const uint64_t *v)
{
	int c;

	fputs(",\"counters\":{", stdout);
	for (c = 0; c < MQ_COUNT_DEAD_ATTEMPTS; c++)
		printf("\"%s\":%" PRIu64 ",", counters[c].name, v[c]);
	fputs("\"dead\":{", stdout);
	for (c = 0; c < MQ_CAUSES; c++)
		printf("%s\"%s\":%" PRIu64, c > 0 ? "," : "", mq_cause_word[c],
		    v[mq_count_dead(c)]);
	fputs("}}", stdout);
}

static void
json(const struct result *r, size_t n, uint64_t now)
{
	size_t i;

	for (i = 0; i < n; i++) {
		fputs("{\"spool\":", stdout);
		mq_json_string(stdout, r[i].path, strlen(r[i].path));
		printf(",\"ready\":%" PRIu64 ",\"delayed\":%" PRIu64
		    ",\"blocked\":%" PRIu64 ",\"inflight\":%" PRIu64
		    ",\"expired\":%" PRIu64 ",\"dead\":%" PRIu64,
		    r[i].st.ready, r[i].st.delayed, r[i].st.blocked,
		    r[i].st.in_flight, r[i].st.expired, r[i].st.dead);
		json_age("oldest_ready_age_seconds", r[i].st.oldest_ready_ms,
		    now);
		json_age("oldest_dead_age_seconds", r[i].st.oldest_dead_ms,
		    now);
		if (with_bytes)
			printf(",\"bytes\":%" PRIu64, r[i].st.bytes);
		json_settings(&r[i].conf);
		json_counters(r[i].counts);
		puts("}");
	}
}

/* A label value: backslash, double quote and newline escaped. */
static void
label(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			printf("\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", stdout);
		else
			putchar(*s);
	}
	putchar('"');
}

static double
oldest_ready(const struct result *r, uint64_t now)
{
	return r->st.oldest_ready_ms == UINT64_MAX ? 0 :
	    age(r->st.oldest_ready_ms, now);
}

static double
oldest_dead(const struct result *r, uint64_t now)
{
	return r->st.oldest_dead_ms == UINT64_MAX ? 0 :
	    age(r->st.oldest_dead_ms, now);
}

static double
bytes(const struct result *r, uint64_t now)
{
	(void)now;
	return r->st.bytes;
}

static double
paused(const struct result *r, uint64_t now)
{
	(void)now;
	return r->conf.paused;
}

static double
max_depth(const struct result *r, uint64_t now)
{
	(void)now;
	return r->conf.max_depth;
}

/* One gauge with a sample per spool, with that many decimals. */
static void
gauge(const struct result *r, size_t n, uint64_t now, const char *name,
    const char *text, double (*value)(const struct result *, uint64_t),
    int decimals)
{
	size_t i;

	printf("# HELP %s %s\n# TYPE %s gauge\n", name, text, name);
	for (i = 0; i < n; i++) {
		printf("%s{spool=", name);
		label(r[i].path);
		printf("} %.*f\n", decimals, value(&r[i], now));
	}
}

static void
prometheus(const struct result *r, size_t n, uint64_t now)
{
	/* mq-ls's words for the states (look.c). */
	static const char *states[] = { "ready", "delayed", "blocked",
	    "inflight", "expired", "dead" };
	uint64_t v[6];
	size_t i, s;
	int c;

	puts("# HELP mq_messages Messages in the spool, by state.");
	puts("# TYPE mq_messages gauge");
	for (i = 0; i < n; i++) {
		v[0] = r[i].st.ready;
		v[1] = r[i].st.delayed;
		v[2] = r[i].st.blocked;
		v[3] = r[i].st.in_flight;
		v[4] = r[i].st.expired;
		v[5] = r[i].st.dead;
		for (s = 0; s < 6; s++) {
			fputs("mq_messages{spool=", stdout);
			label(r[i].path);
			printf(",state=\"%s\"} %" PRIu64 "\n", states[s], v[s]);
		}
	}
	gauge(r, n, now, "mq_oldest_ready_age_seconds", "How long the "
	    "oldest ready message has been ready (0 when none).", oldest_ready, 3);
	gauge(r, n, now, "mq_oldest_dead_age_seconds", "Time since the "
	    "oldest dead letter died (0 when none).", oldest_dead, 3);
	if (with_bytes)
		gauge(r, n, now, "mq_bytes", "Bytes of the messages in the "
		    "spool, all states.", bytes, 0);
	for (c = 0; c < MQ_COUNT_DEAD_ATTEMPTS; c++) {
		printf("# HELP mq_%s_total %s\n# TYPE mq_%s_total counter\n",
		    counters[c].name, counters[c].help, counters[c].name);
		for (i = 0; i < n; i++) {
			printf("mq_%s_total{spool=", counters[c].name);
			label(r[i].path);
			printf("} %" PRIu64 "\n", r[i].counts[c]);
		}
	}
	puts("# HELP mq_dead_total Messages dead-lettered, by cause.");
	puts("# TYPE mq_dead_total counter");
	for (i = 0; i < n; i++)
		for (c = 0; c < MQ_CAUSES; c++) {
			fputs("mq_dead_total{spool=", stdout);
			label(r[i].path);
			printf(",cause=\"%s\"} %" PRIu64 "\n", mq_cause_word[c],
			    r[i].counts[mq_count_dead(c)]);
		}
	gauge(r, n, now, "mq_paused", "1 when the spool is paused (mq-conf "
	    "paused=yes), else 0.", paused, 0);
	gauge(r, n, now, "mq_max_depth", "The most messages waiting that "
	    "mq-send adds to (mq-conf max-depth; 0: no limit).", max_depth, 0);
}

/*
 * -v: which spool was counted, where its name came from (at 3 a.m., the
 * default spool of the wrong user looks like an empty queue), and its
 * total, on stderr, so that the table, JSON or Prometheus text is as
 * without -v.
 */
static void
said(const char *dir, const char *whence, const struct mq_stats *st)
{
	uint64_t total = st->ready + st->delayed + st->blocked +
	    st->in_flight + st->expired + st->dead;

	fprintf(stderr, "%s: ", getprogname());
	mq_escape(stderr, dir, strlen(dir));
	fprintf(stderr, " (from %s): %" PRIu64 " message%s\n", whence,
	    total, total == 1 ? "" : "s");
}

/* The spool's settings; -1 when they do not parse, said on stderr. */
static int
settings(struct mq_spool *sp, struct mq_conf *c)
{
	if (mq_settings_reread(sp) == -1)
		return -1;
	*c = sp->conf;
	return 0;
}

/*
 * One round: each spool counted into res (its counters' last values kept
 * for -i's rates), those counted copied to out, in order: how many.  A
 * spool that cannot be counted is said, and makes *status 4.
 */
static size_t
count_round(struct result *res, struct result *out, const char **dirs,
    const char **whence, size_t ndirs, uint64_t now, int vflag,
    int defaulted, int *status)
{
	struct mq_spool sp;
	size_t i, n;
	int r;

	for (i = n = 0; i < ndirs; i++) {
		r = 0;
		memcpy(res[i].before, res[i].counts,
		    sizeof(res[i].before));
		res[i].before_ms = res[i].now_ms;
		res[i].now_ms = 0;
		/* The ttl tells the expired waiting messages from the ready. */
		if (mq_spool_open(&sp, dirs[i], 0) == -1 ||
		    (r = settings(&sp, &res[i].conf)) == -1 ||
		    mq_stat(&sp, now, res[i].conf.ttl_ms, with_bytes,
		    &res[i].st) == -1 || mq_counts_read(&sp,
		    res[i].counts) == -1) {
			if (r != -1 && errno == ENOTDIR)
				warnx("%s: not a spool", dirs[i]);
			else if (r != -1 && errno == ENOENT && defaulted)
				warnx("%s: no such spool (%s)", dirs[i],
				    mq_spool_whence(NULL));
			else if (r != -1)
				warn("%s", dirs[i]);
			*status = MQ_EX_SYS;
			mq_spool_close(&sp);
			continue;
		}
		mq_spool_close(&sp);
		res[i].now_ms = mq_now_ms();
		if (vflag)
			said(dirs[i], whence[i], &res[i].st);
		res[i].path = dirs[i];
		out[n++] = res[i];
	}
	return n;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		MQ_LONGOPTS,
		{ "json", no_argument, NULL, OPT_JSON },
		{ "prometheus", no_argument, NULL, OPT_PROMETHEUS },
		{ NULL, 0, NULL, 0 }
	};
	struct result *res, *out;
	const char **dirs, **whence, *path;
	enum format fmt = TABLE;
	uint64_t now, every = 0;
	size_t ndirs = 0, n;
	int ch, vflag = 0, defaulted = 0, status;

	dirs = xreallocarray(NULL, argc + 1, sizeof(*dirs));
	whence = xreallocarray(NULL, argc + 1, sizeof(*whence));
	while ((ch = getopt_long(argc, argv, MQ_OPTS("bvd:i:hV"), longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'b':
			with_bytes = 1;
			break;
		case 'i':
			every = xsecs("-i", optarg, 1);
			break;
		case 'v':
			vflag = 1;
			break;
		case 'd':
			if (*optarg == '\0')
				errx(MQ_EX_USAGE, "-d: empty spool name");
			whence[ndirs] = "-d";
			dirs[ndirs++] = optarg;
			break;
		case OPT_JSON:
		case OPT_PROMETHEUS:
			if (fmt != TABLE && fmt != (ch == OPT_JSON ? JSON :
			    PROMETHEUS))
				errx(MQ_EX_USAGE, "--json and --prometheus "
				    "exclude each other");
			fmt = ch == OPT_JSON ? JSON : PROMETHEUS;
			break;
		default:
			free(dirs);
			free(whence);
			mq_common_opt(ch, USAGE, help);
		}
	}
	/* Spools as operands, as df and du take paths: the same as -d. */
	for (; optind < argc; optind++) {
		if (*argv[optind] == '\0')
			errx(MQ_EX_USAGE, "empty spool name");
		whence[ndirs] = "an operand";
		dirs[ndirs++] = argv[optind];
	}
	if (ndirs == 0) {
		if ((path = mq_spool_dir(NULL)) == NULL)
			err(MQ_EX_SYS, "no spool: set MQ_DIR or HOME");
		whence[ndirs] = mq_spool_origin(NULL);
		dirs[ndirs++] = path;
		defaulted = mq_spool_whence(NULL) != NULL;
	}

	res = xreallocarray(NULL, ndirs, sizeof(*res));
	out = xreallocarray(NULL, ndirs, sizeof(*out));
	memset(res, 0, ndirs * sizeof(*res));
	with_rates = every != 0 && fmt == TABLE;
	for (;;) {
		status = MQ_EX_OK;
		now = mq_now_ms();
		n = count_round(res, out, dirs, whence, ndirs, now, vflag,
		    defaulted, &status);
		if (fmt == JSON)
			json(out, n, now);
		else if (fmt == PROMETHEUS)
			prometheus(out, n, now);
		else if (n > 0)
			table(out, n, now);
		if (every == 0)
			break;
		/* Like vmstat: a table each round, seen as it is printed. */
		if (fflush(stdout) == EOF)
			err(MQ_EX_SYS, "stdout");
		poll(NULL, 0, every > 86400000 ? 86400000 : (int)every);
	}
	free(out);
	free(res);
	free(dirs);
	free(whence);
	mq_stdout_close();
	return status;
}
