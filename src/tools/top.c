/*
 * top.c: mq-top's live view of one spool or several: a frame every
 * interval of what each holds (stat.c, its leaves kept between frames so
 * that a deep spool is not listed whole each time), the rates of its
 * counters (count.c) between two frames, its depth over the last frames
 * as a sparkline, the dead letters by cause, and the messages in flight
 * (look.c); on a terminal, redrawn in place and driven by keys, or (-b)
 * as plain text, one frame after another.  It reads the spools and
 * writes nothing into them but what p asks for: paused=yes|no, written
 * as mq-conf writes it (conf.c) and logged alike.
 *
 * The terminal is driven by plain escape sequences (the alternate
 * screen, cursor addressing, erase, SGR colours), which every terminal
 * emulator in use knows, rather than by a library: mq loads no shared
 * library but libc.  Whatever way mq-top ends (q, a signal that stops
 * it, an error that exits), the terminal is given back as it found it:
 * its mode (termios), the cursor shown, the alternate screen left.  A
 * signal's handler restores it and raises the signal again, so that the
 * parent sees mq-top killed by it.
 *
 * How long a message has run, and who runs it, are in its lease's name
 * (its holder: holder.c).  A lease of an older release, without one:
 * the first frame that sees it takes the change time of its file, which
 * its claim set (a renewal of the lease too: for one already in flight
 * when mq-top started, the time since its last renewal), and later
 * frames keep the time first seen for that ID and attempt.
 */
/* wcwidth(3) is of the X/Open System Interfaces. */
#define _XOPEN_SOURCE 700

#include <sys/ioctl.h>
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define SPARK_MAX	512	/* depth samples kept a spool */
#define LINE_BYTES	4096	/* a line's bytes, escapes included */
#define FILTER_MAX	MQ_ID_LEN
#define BLOCK_LINES	6	/* a spool's block: title and five lines */
#define NOTE_MAX	256

/* The in-flight list's orders, as s cycles through them. */
enum sort { BY_LEFT, BY_RUNNING, BY_ATTEMPT, BY_ID, NSORTS };
static const char *const sort_name[NSORTS] = {
	"lease left", "running for", "attempt", "ID"
};

/* A message in flight, as look.c gave it (its pointers cleared). */
struct flight {
	struct mq_look	 m;
	uint64_t	 since;		/* running since (see the head) */
	char		 holder[96];	/* user@host:pid, escaped; "-": none */
};

struct spool {
	const char	*path;
	struct mq_stat_cache cache;
	int		 ok;		/* this frame's counts are there */
	char		 why[NOTE_MAX];	/* else why not */
	struct mq_stats	 st;
	struct mq_conf	 conf;
	uint64_t	 counts[MQ_COUNTS], before[MQ_COUNTS];
	uint64_t	 now_ms, before_ms;
	uint64_t	 spark[SPARK_MAX];	/* depth, a ring */
	size_t		 nspark, sparkend;
	struct flight	*fl;		/* by ID and attempt */
	size_t		 nfl, capfl;
};

struct top {
	const struct mq_top_opt *opt;
	struct spool	*s;
	size_t		 n;
	size_t		 sel;		/* the selected spool */
	enum sort	 sort;
	char		 filter[FILTER_MAX + 1];
	int		 filtering;	/* / typed: the filter being typed */
	int		 asking;	/* p typed: y/n asked */
	int		 help;
	char		 note[NOTE_MAX];	/* said on the bottom line */
	int		 color, utf8;
	int		 status;	/* the worst of the frames */
};

/* A line of the screen, cut to its width in columns. */
struct line {
	char	 buf[LINE_BYTES];
	size_t	 len;
	int	 cols, width;
	int	 color;		/* escapes may be written */
};

struct screen {
	struct line	*l;
	size_t		 n, cap;
	int		 width;
	int		 rows;		/* 0: no bound (-b) */
	int		 color;
	int		 utf8;
};

/* Lines of the frame being made; a frame that runs out of memory dies. */
static struct line *
newline(struct screen *sc)
{
	struct line *l;

	if (sc->n == sc->cap) {
		sc->cap = sc->cap == 0 ? 64 : sc->cap * 2;
		sc->l = xreallocarray(sc->l, sc->cap, sizeof(*sc->l));
	}
	l = &sc->l[sc->n++];
	l->len = 0;
	l->cols = 0;
	l->width = sc->width;
	l->color = sc->color;
	l->buf[0] = '\0';
	return l;
}

static void
lbytes(struct line *l, const char *s, size_t n)
{
	if (l->len + n < sizeof(l->buf)) {
		memcpy(l->buf + l->len, s, n);
		l->len += n;
		l->buf[l->len] = '\0';
	}
}

/*
 * Text into the line, up to its width: each character as wide as the
 * locale says, and what cannot be shown (a control character, a byte
 * that is no character here) as '?', one column: a spool's name goes
 * to the terminal as text, never as escapes.
 */
static void
lput(struct line *l, const char *s, size_t n)
{
	mbstate_t ps;
	wchar_t wc;
	size_t k;
	int w;

	memset(&ps, 0, sizeof(ps));
	while (n > 0 && l->cols < l->width) {
		if ((unsigned char)*s < 0x80) {
			w = 1;
			k = 1;
			if (*s < 0x20 || *s == 0x7f) {
				lbytes(l, "?", 1);
				goto next;
			}
		} else if ((k = mbrtowc(&wc, s, n, &ps)) == (size_t)-1 ||
		    k == (size_t)-2 || k == 0 || (w = wcwidth(wc)) < 0) {
			memset(&ps, 0, sizeof(ps));
			k = 1;
			w = 1;
			lbytes(l, "?", 1);
			goto next;
		}
		if (l->cols + w > l->width)
			break;
		lbytes(l, s, k);
next:
		l->cols += w;
		s += k;
		n -= k;
	}
}

static void
lstr(struct line *l, const char *s)
{
	lput(l, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3)))
lprintf(struct line *l, const char *fmt, ...)
{
	char buf[LINE_BYTES];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		lput(l, buf, (size_t)n < sizeof(buf) ? (size_t)n :
		    sizeof(buf) - 1);
}

/* An SGR sequence (takes no column), only when colours are on. */
static void
lsgr(struct line *l, const char *sgr)
{
	char buf[16];

	if (!l->color)
		return;
	snprintf(buf, sizeof(buf), "\033[%sm", sgr);
	lbytes(l, buf, strlen(buf));
}

/* Spaces up to column col. */
static void
lpad(struct line *l, int col)
{
	while (l->cols < col && l->cols < l->width)
		lput(l, " ", 1);
}

/* The depth that max-depth bounds: every message waiting. */
static uint64_t
depth(const struct spool *s)
{
	return s->st.ready + s->st.delayed + s->st.blocked;
}

static int
flight_cmp_id(const void *a, const void *b)
{
	const struct flight *x = a, *y = b;
	int c;

	if ((c = strcmp(x->m.n.id, y->m.n.id)) != 0)
		return c;
	return x->m.n.attempts < y->m.n.attempts ? -1 :
	    x->m.n.attempts > y->m.n.attempts;
}

/* The in-flight messages being gathered, and those of the frame before. */
struct gathering {
	struct spool	*s;
	struct mq_spool	*sp;
	struct flight	*prev;
	size_t		 nprev;
	uint64_t	 now;
	int		 failed;	/* a directory of cur/ not read */
	int		 err;
};

/* A lease's holder as the HOLDER column shows it. */
static void
holder_text(struct mq_spool *sp, const struct mq_look *m, char *buf,
    size_t size)
{
	struct mq_holder_info info;
	FILE *f;

	strlcpy(buf, "-", size);
	if (m->n.holder.kind == 0 || (f = fmemopen(buf, size, "w")) == NULL)
		return;
	mq_holder_describe(sp, &m->n.holder, &info);
	mq_holder_print(f, &m->n.holder, &info);
	fclose(f);
}

static int
gather(void *arg, const struct mq_look *m)
{
	struct gathering *g = arg;
	struct spool *s = g->s;
	struct flight f, *seen, *v;
	struct stat sb;

	memset(&f, 0, sizeof(f));
	f.m = *m;
	f.m.dirfd = -1;
	f.m.dir = NULL;
	f.m.name = NULL;
	holder_text(g->sp, m, f.holder, sizeof(f.holder));
	/* (bsearch and qsort take no NULL, even for none.) */
	seen = g->nprev == 0 ? NULL :
	    bsearch(&f, g->prev, g->nprev, sizeof(f), flight_cmp_id);
	if (m->n.holder.kind != 0)
		f.since = m->n.holder.since * 1000;
	else if (seen != NULL)
		f.since = seen->since;
	else if (fstatat(m->dirfd, m->name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		f.since = (uint64_t)sb.st_ctim.tv_sec * 1000 +
		    sb.st_ctim.tv_nsec / 1000000;
	else
		f.since = g->now;
	if (f.since > g->now)
		f.since = g->now;
	if (s->nfl == s->capfl) {
		if ((v = mq_grow(s->fl, &s->capfl, s->nfl, SIZE_MAX /
		    sizeof(*v), sizeof(*v))) == NULL)
			return -1;
		s->fl = v;
	}
	s->fl[s->nfl++] = f;
	return 0;
}

static void
gather_fail(void *arg, const char *where, int e)
{
	struct gathering *g = arg;

	(void)where;
	g->failed = 1;
	g->err = e;
}

/* The messages in flight now, each with the time it runs since. */
static int
flights(struct spool *s, struct mq_spool *sp, uint64_t now)
{
	struct gathering g;
	struct mq_looker lk;

	memset(&g, 0, sizeof(g));
	g.s = s;
	g.sp = sp;
	g.prev = s->fl;
	g.nprev = s->nfl;
	g.now = now;
	s->fl = NULL;
	s->nfl = s->capfl = 0;
	memset(&lk, 0, sizeof(lk));
	lk.states = 1u << MQ_LOOK_INFLIGHT | 1u << MQ_LOOK_ORPHANED;
	lk.now = now;
	lk.ttl_ms = s->conf.ttl_ms;
	lk.fn = gather;
	lk.fail = gather_fail;
	lk.arg = &g;
	if (mq_look(sp, &lk) == -1) {
		free(g.prev);
		return -1;
	}
	free(g.prev);
	if (s->nfl > 0)
		qsort(s->fl, s->nfl, sizeof(*s->fl), flight_cmp_id);
	if (g.failed) {
		errno = g.err;
		return -1;
	}
	return 0;
}

/* One spool's sample: counts, settings, counters, what is in flight. */
static void
sample(struct top *t, struct spool *s)
{
	struct mq_spool sp;
	const char *why = NULL, *step = "";
	uint64_t now = mq_now_ms();
	int line = 0, opened = 0;

	memcpy(s->before, s->counts, sizeof(s->before));
	s->before_ms = s->ok ? s->now_ms : 0;
	s->ok = 0;
	if (mq_spool_open(&sp, s->path, 0) == -1)
		goto fail;
	opened = 1;
	step = "conf";
	if (mq_settings_read(&sp, &line, &why) == -1)
		goto fail;
	s->conf = sp.conf;
	step = "";
	if (mq_stat_kept(&sp, &s->cache, now, s->conf.ttl_ms, 0, &s->st) ==
	    -1)
		goto fail;
	step = MQ_COUNTERS;
	if (mq_counts_read(&sp, s->counts) == -1)
		goto fail;
	step = MQ_DIR_CUR;
	if (flights(s, &sp, now) == -1)
		goto fail;
	mq_spool_close(&sp);
	s->ok = 1;
	s->now_ms = now;
	s->spark[s->sparkend] = depth(s);
	s->sparkend = (s->sparkend + 1) % SPARK_MAX;
	if (s->nspark < SPARK_MAX)
		s->nspark++;
	return;
fail:
	if (why != NULL && line > 0)
		snprintf(s->why, sizeof(s->why), "%s: line %d: %s", step, line,
		    why);
	else if (why != NULL)
		snprintf(s->why, sizeof(s->why), "%s: %s", step, why);
	else if (errno == ENOTDIR)
		snprintf(s->why, sizeof(s->why), "not a spool");
	else
		snprintf(s->why, sizeof(s->why), "%s%s%s", step,
		    *step != '\0' ? ": " : "", strerror(errno));
	if (opened)
		mq_spool_close(&sp);
	memset(s->counts, 0, sizeof(s->counts));
	t->status = MQ_EX_SYS;
}

/* A rate, or "-" before there are two frames. */
static void
lrate(struct line *l, const struct spool *s, const char *name, int count)
{
	double v = mq_rate(s->counts, s->now_ms, s->before, s->before_ms,
	    count);

	if (v < 0)
		lprintf(l, "%s -/s", name);
	else
		lprintf(l, "%s %.1f/s", name, v);
}

/*
 * The depth over the last frames, newest on the right, in as many
 * columns as are left: eighths of a cell on a UTF-8 terminal, else five
 * ASCII steps; scaled from the lowest shown to the highest, so that a
 * deep queue's ups and downs show (one that does not move, half way; an
 * empty one, at the bottom).
 */
static void
sparkline(struct screen *sc, struct line *l, const struct spool *s,
    uint64_t interval)
{
	static const char *const blocks[] = { "\u2581", "\u2582", "\u2583",
	    "\u2584", "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = "_.-=#";
	char age[32];
	uint64_t max = 0, min = UINT64_MAX, v;
	size_t k, i, room;
	int levels = sc->utf8 ? 8 : 5, lv;

	lstr(l, "  depth ");
	room = l->width - l->cols > 24 ? (size_t)(l->width - l->cols - 16) :
	    0;
	k = s->nspark < room ? s->nspark : room;
	for (i = 0; i < k; i++) {
		v = s->spark[(s->sparkend + SPARK_MAX - k + i) % SPARK_MAX];
		if (v > max)
			max = v;
		if (v < min)
			min = v;
	}
	for (i = 0; i < k; i++) {
		v = s->spark[(s->sparkend + SPARK_MAX - k + i) % SPARK_MAX];
		if (max == min)
			lv = max == 0 ? 0 : (levels - 1) / 2;
		else
			lv = (int)(((v - min) * (levels - 1) + (max - min) / 2) /
			    (max - min));
		if (sc->utf8)
			lstr(l, blocks[lv]);
		else
			lput(l, &ascii[lv], 1);
	}
	if (k > 1)
		lprintf(l, "  %" PRIu64 "-%" PRIu64 " over %s", min, max,
		    mq_human_age(age, sizeof(age), 0, (k - 1) * interval));
	else if (k == 1)
		lprintf(l, "  %" PRIu64, max);
}

/* The block of one spool: its name, then five lines of figures. */
static void
block(struct top *t, struct screen *sc, size_t i)
{
	const struct spool *s = &t->s[i];
	struct line *l;
	char a[32];
	uint64_t now = s->now_ms;
	int c;

	l = newline(sc);
	if (t->n > 1 && i == t->sel && !t->opt->batch) {
		lsgr(l, "7");
		lstr(l, "> ");
	} else if (t->n > 1 && !t->opt->batch)
		lstr(l, "  ");
	lsgr(l, "1");
	lstr(l, s->path);
	lsgr(l, "0");
	if (s->ok && s->conf.paused) {
		lstr(l, "  ");
		lsgr(l, "1;33");
		lstr(l, "PAUSED");
		lsgr(l, "0");
	}
	if (l->color && t->n > 1 && i == t->sel && !t->opt->batch) {
		lsgr(l, "7");
		lpad(l, l->width);
		lsgr(l, "0");
	}
	if (!s->ok) {
		l = newline(sc);
		lsgr(l, "31");
		lprintf(l, "  cannot be read: %s", s->why);
		lsgr(l, "0");
		return;
	}
	l = newline(sc);
	lprintf(l, "  ready %" PRIu64 "  delayed %" PRIu64 "  inflight %"
	    PRIu64 "  expired %" PRIu64 "  blocked %" PRIu64 "  dead %" PRIu64,
	    s->st.ready, s->st.delayed, s->st.in_flight, s->st.expired,
	    s->st.blocked, s->st.dead);
	l = newline(sc);
	if (s->conf.max_depth != 0)
		lprintf(l, "  depth %" PRIu64 "/%" PRIu64 " (%" PRIu64 "%%)",
		    depth(s), s->conf.max_depth,
		    depth(s) * 100 / s->conf.max_depth);
	else
		lprintf(l, "  depth %" PRIu64 " (no max-depth)", depth(s));
	lprintf(l, "  paused %s  oldest ready %s",
	    mq_conf_value(&s->conf, MQ_CONF_PAUSED),
	    mq_human_age(a, sizeof(a), s->st.oldest_ready_ms, now));
	l = newline(sc);
	lstr(l, "  ");
	lrate(l, s, "in", MQ_COUNT_SENT);
	lstr(l, "  ");
	lrate(l, s, "out", MQ_COUNT_ACKED);
	lstr(l, "  ");
	lrate(l, s, "to dead", MQ_COUNTED_DEAD);
	sparkline(sc, newline(sc), s, t->opt->interval_ms);
	l = newline(sc);
	if (s->st.dead > 0)
		lsgr(l, "31");
	lprintf(l, "  dead letters %" PRIu64, s->st.dead);
	lsgr(l, "0");
	lstr(l, "  died of");
	for (c = 0; c < MQ_CAUSES; c++)
		lprintf(l, " %s %" PRIu64, mq_cause_word[c],
		    s->counts[mq_count_dead(c)]);
}

/* The compact form of a spool when the blocks do not fit: one line. */
static void
spool_line(struct top *t, struct screen *sc, size_t i)
{
	const struct spool *s = &t->s[i];
	struct line *l = newline(sc);
	double in, out;

	if (i == t->sel)
		lsgr(l, "7");
	lstr(l, i == t->sel ? "> " : "  ");
	if (!s->ok) {
		lprintf(l, "%-20.20s cannot be read: %s", s->path, s->why);
	} else {
		in = mq_rate(s->counts, s->now_ms, s->before, s->before_ms,
		    MQ_COUNT_SENT);
		out = mq_rate(s->counts, s->now_ms, s->before, s->before_ms,
		    MQ_COUNT_ACKED);
		lprintf(l, "%-20.20s %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		    " %6" PRIu64 " %7.1f %7.1f %s", s->path, s->st.ready,
		    s->st.delayed, s->st.in_flight, s->st.dead, in < 0 ? 0 : in,
		    out < 0 ? 0 : out, s->conf.paused ? "PAUSED" : "");
	}
	if (i == t->sel) {
		lpad(l, l->width);
		lsgr(l, "0");
	}
}

/* The width of the ID column: the whole ID when the line has room. */
static int
id_width(int width)
{
	/* 26 for the other columns, 20 for a holder (user@host:pid). */
	int w = width - 46;

	return w > MQ_ID_LEN ? MQ_ID_LEN : w < 8 ? 8 : w;
}

static void
flight_head(struct line *l)
{
	int idw = id_width(l->width);

	lsgr(l, "1");
	lprintf(l, " %-*s %7s %7s %7s %s", idw, "ID", "ATTEMPT", "RUNNING",
	    "LEFT", "HOLDER");
	lsgr(l, "0");
}

/* One message in flight: the one place a column of a lease is added. */
static void
flight_row(struct line *l, const struct flight *f, unsigned max,
    uint64_t now)
{
	const struct mq_look *m = &f->m;
	char att[32], run[32], left[32];
	int idw = id_width(l->width);

	/* '!': orphaned, its holder gone (the next claim takes it). */
	snprintf(att, sizeof(att), "%u/%u", m->n.attempts, max);
	lprintf(l, "%c%-*.*s %7s %7s %7s %s",
	    m->state == MQ_LOOK_ORPHANED ? '!' : ' ', idw, idw, m->n.id, att,
	    mq_human_age(run, sizeof(run), f->since, now),
	    mq_human_age(left, sizeof(left), now, m->ms), f->holder);
}

static enum sort sort_by;

static int
flight_cmp(const void *a, const void *b)
{
	const struct flight *x = *(const struct flight *const *)a;
	const struct flight *y = *(const struct flight *const *)b;

	switch (sort_by) {
	case BY_LEFT:
		if (x->m.ms != y->m.ms)
			return x->m.ms < y->m.ms ? -1 : 1;
		break;
	case BY_RUNNING:
		if (x->since != y->since)
			return x->since < y->since ? -1 : 1;
		break;
	case BY_ATTEMPT:
		if (x->m.n.attempts != y->m.n.attempts)
			return x->m.n.attempts > y->m.n.attempts ? -1 : 1;
		break;
	default:
		break;
	}
	return flight_cmp_id(x, y);
}

/*
 * The in-flight list of a spool, as many rows as fit in rows (0: all),
 * sorted and filtered as asked.
 */
static void
flight_list(struct top *t, struct screen *sc, const struct spool *s,
    int rows)
{
	const struct flight **v;
	struct line *l;
	size_t i, n = 0, shown;

	if (!s->ok)
		return;
	v = xreallocarray(NULL, s->nfl + 1, sizeof(*v));
	for (i = 0; i < s->nfl; i++)
		if (t->filter[0] == '\0' || strstr(s->fl[i].m.n.id,
		    t->filter) != NULL)
			v[n++] = &s->fl[i];
	sort_by = t->sort;
	qsort(v, n, sizeof(*v), flight_cmp);
	l = newline(sc);
	lprintf(l, "in flight: %zu", s->nfl);
	if (t->filter[0] != '\0')
		lprintf(l, ", %zu with \"%s\" in the ID", n, t->filter);
	lprintf(l, ", by %s", sort_name[t->sort]);
	if (t->n > 1 && !t->opt->batch)
		lprintf(l, " (%s)", s->path);
	if (rows != 0 && rows < 3) {
		free(v);
		return;
	}
	flight_head(newline(sc));
	shown = n;
	if (rows != 0 && n > (size_t)rows - 2)
		shown = rows - 3;
	for (i = 0; i < shown; i++)
		flight_row(newline(sc), v[i], s->conf.max_attempts,
		    s->now_ms);
	if (shown < n)
		lprintf(newline(sc), " ... %zu more", n - shown);
	free(v);
}

static void
help_lines(struct screen *sc)
{
	static const char *const text[] = {
		"keys:",
		"  q          quit",
		"  p          pause or resume the selected spool (asks y/n)",
		"  s          sort the in-flight list: lease left, running for,",
		"             attempt, ID",
		"  /          show the in-flight messages whose ID contains a",
		"             text (Enter keeps it, Esc clears it)",
		"  Tab, arrows  select a spool (of several)",
		"  ?          this help; any key leaves it",
	};
	size_t i;

	for (i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		lstr(newline(sc), text[i]);
}

/* The frame's first line: when, how often, and how the list is shown. */
static void
title(struct top *t, struct screen *sc)
{
	struct line *l = newline(sc);
	char iso[32], every[32];
	uint64_t now = mq_now_ms(), ms = t->opt->interval_ms;

	mq_time_iso(iso, sizeof(iso), now);
	if (ms % 1000 == 0)
		snprintf(every, sizeof(every), "%" PRIu64 "s", ms / 1000);
	else
		snprintf(every, sizeof(every), "%" PRIu64 "ms", ms);
	lsgr(l, "1");
	lstr(l, "mq-top");
	lsgr(l, "0");
	lprintf(l, "  %s  every %s  %zu spool%s", iso, every, t->n,
	    t->n == 1 ? "" : "s");
}

/* The bottom line of the screen: a question, the filter typed, a note. */
static void
bottom(struct top *t, struct screen *sc)
{
	struct line *l = newline(sc);
	const struct spool *s = &t->s[t->sel];

	if (t->asking) {
		lsgr(l, "1");
		lprintf(l, "%s %s? y/n", s->conf.paused ? "resume" : "pause",
		    s->path);
		lsgr(l, "0");
	} else if (t->filtering)
		lprintf(l, "/%s", t->filter);
	else if (t->note[0] != '\0')
		lstr(l, t->note);
	else
		lstr(l, "q quit  p pause  s sort  / filter  ? help");
}

/*
 * The frame: on a screen of sc->rows (0: -b, no bound), the title, each
 * spool's block (or a line each when the blocks leave no room for three
 * rows in flight), the in-flight list of the selected one (of each, -b),
 * the bottom line.
 */
static void
frame(struct top *t, struct screen *sc)
{
	size_t i;
	int left, blocks;

	sc->n = 0;
	title(t, sc);
	if (sc->rows == 0) {
		for (i = 0; i < t->n; i++) {
			lstr(newline(sc), "");
			block(t, sc, i);
			lstr(newline(sc), "");
			flight_list(t, sc, &t->s[i], 0);
		}
		return;
	}
	blocks = 1 + (int)t->n * (BLOCK_LINES + 1) + 1 + 4 <= sc->rows;
	if (blocks)
		for (i = 0; i < t->n; i++) {
			lstr(newline(sc), "");
			block(t, sc, i);
		}
	else {
		lstr(newline(sc), "");
		lprintf(newline(sc), "  %-20s %8s %8s %8s %6s %7s %7s",
		    "SPOOL", "READY", "DELAYED", "INFLIGHT", "DEAD", "IN/S",
		    "OUT/S");
		for (i = 0; i < t->n; i++)
			spool_line(t, sc, i);
	}
	lstr(newline(sc), "");
	left = sc->rows - (int)sc->n - 1;
	if (t->help)
		help_lines(sc);
	else if (left > 0)
		flight_list(t, sc, &t->s[t->sel], left);
	/* Cut to the screen, the bottom line kept. */
	if ((int)sc->n > sc->rows - 1)
		sc->n = sc->rows - 1;
	while ((int)sc->n < sc->rows - 1)
		lstr(newline(sc), "");
	bottom(t, sc);
}

/*
 * p, answered y: paused=yes (or no, to resume) as mq-conf sets it, under
 * the settings' lock, in one rename, logged; what came of it in the note.
 */
static void
pause_toggle(struct top *t, struct spool *s)
{
	struct mq_spool sp;
	struct mq_conf c;
	char was[MQ_CONF_NKEYS][sizeof(c.value[0])];
	const char *why = NULL, *value = s->conf.paused ? "no" : "yes";
	int line = 0, changed = 0, k;

	if (mq_spool_open(&sp, s->path, 0) == -1) {
		snprintf(t->note, sizeof(t->note), "%s: %s", s->path,
		    strerror(errno));
		return;
	}
	if (mq_conf_lock(&sp) == -1) {
		snprintf(t->note, sizeof(t->note), "%s: lock: %s", s->path,
		    strerror(errno));
		mq_spool_close(&sp);
		return;
	}
	if (mq_conf_read(&sp, &c, &line, &why) == -1) {
		mq_conf_unlock(&sp);
		snprintf(t->note, sizeof(t->note), "%s/%s: %s; nothing changed",
		    s->path, MQ_CONF, why != NULL ? why : strerror(errno));
		mq_spool_close(&sp);
		return;
	}
	for (k = 0; k < MQ_CONF_NKEYS; k++)
		strlcpy(was[k], mq_conf_value(&c, k), sizeof(was[k]));
	(void)mq_conf_set(&c, MQ_CONF_PAUSED, value, &why);
	if (mq_conf_write(&sp, &c, &changed) == -1)
		snprintf(t->note, sizeof(t->note), "%s/%s: %s: %s", s->path,
		    MQ_CONF, changed ? "changed, but not made durable" :
		    "nothing changed", strerror(errno));
	else
		snprintf(t->note, sizeof(t->note), "%s: paused=%s", s->path,
		    value);
	mq_conf_unlock(&sp);
	if (changed) {
		mq_conf_logged(&sp, &c, was);
		/* Now: mq-top runs on, its records are not left for its exit. */
		mq_log_flush();
		s->conf.paused = c.paused;
		strlcpy(s->conf.value[MQ_CONF_PAUSED],
		    c.value[MQ_CONF_PAUSED], sizeof(c.value[0]));
	}
	mq_spool_close(&sp);
}

/* The keys typed: 1 to quit. */
static int
keys(struct top *t, const char *b, size_t n)
{
	size_t i, len;
	char c;

	for (i = 0; i < n; i++) {
		c = b[i];
		/* An arrow's or Shift-Tab's sequence, read whole or not at all. */
		if (c == '\033' && i + 2 < n && b[i + 1] == '[') {
			c = b[i + 2];
			i += 2;
			if (t->help || t->asking || t->filtering) {
				t->help = 0;
				continue;
			}
			if (c == 'A' || c == 'D' || c == 'Z')
				t->sel = (t->sel + t->n - 1) % t->n;
			else if (c == 'B' || c == 'C')
				t->sel = (t->sel + 1) % t->n;
			continue;
		}
		if (t->help) {
			t->help = 0;
			continue;
		}
		if (t->asking) {
			t->asking = 0;
			if (c == 'y' || c == 'Y')
				pause_toggle(t, &t->s[t->sel]);
			else
				snprintf(t->note, sizeof(t->note),
				    "%s: nothing changed", t->s[t->sel].path);
			continue;
		}
		len = strlen(t->filter);
		if (t->filtering) {
			if (c == '\033') {
				t->filter[0] = '\0';
				t->filtering = 0;
			} else if (c == '\r' || c == '\n')
				t->filtering = 0;
			else if ((c == 0x7f || c == '\b') && len > 0)
				t->filter[len - 1] = '\0';
			else if (c > ' ' && c < 0x7f && len < FILTER_MAX) {
				t->filter[len] = c;
				t->filter[len + 1] = '\0';
			}
			continue;
		}
		t->note[0] = '\0';
		switch (c) {
		case 'q':
			return 1;
		case 'p':
			if (t->s[t->sel].ok)
				t->asking = 1;
			else
				snprintf(t->note, sizeof(t->note),
				    "%s: cannot be read", t->s[t->sel].path);
			break;
		case 's':
			t->sort = (t->sort + 1) % NSORTS;
			break;
		case '/':
			t->filtering = 1;
			t->filter[0] = '\0';
			break;
		case '?':
			t->help = 1;
			break;
		case '\t':
			t->sel = (t->sel + 1) % t->n;
			break;
		case '\033':
			t->filter[0] = '\0';
			break;
		}
	}
	return 0;
}

/* The terminal as it was, and the keyboard (stdin, or /dev/tty). */
static int kbd = -1;
static struct termios tio_saved;
static volatile sig_atomic_t tty_on, resized;

#define ENTER_SEQ	"\033[?1049h\033[?25l\033[H\033[2J"
#define LEAVE_SEQ	"\033[m\033[?25h\033[?1049l"

/* Async-signal-safe: from a handler, atexit and the way out alike. */
static void
term_leave(void)
{
	if (!tty_on)
		return;
	tty_on = 0;
	if (write(STDOUT_FILENO, LEAVE_SEQ, sizeof(LEAVE_SEQ) - 1) == -1) {
		/* A terminal gone takes nothing back. */
	}
	if (kbd != -1)
		(void)tcsetattr(kbd, TCSAFLUSH, &tio_saved);
}

/*
 * Keys one at a time, not echoed; ISIG kept, so that ^C, ^\ and ^Z
 * signal as they do elsewhere, and the handlers give the terminal back.
 */
static void
term_enter(void)
{
	struct termios raw;

	if (kbd != -1) {
		raw = tio_saved;
		raw.c_lflag &= ~(ICANON | ECHO);
		raw.c_iflag &= ~(IXON | ICRNL);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		(void)tcsetattr(kbd, TCSAFLUSH, &raw);
	}
	tty_on = 1;
	resized = 1;
	if (write(STDOUT_FILENO, ENTER_SEQ, sizeof(ENTER_SEQ) - 1) == -1) {
		/* Said by the next frame's write. */
	}
}

static void
on_stop(int sig)
{
	term_leave();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ^Z: the terminal given back while stopped, taken again after. */
static void
on_tstp(int sig)
{
	sigset_t set;
	int saved = errno;

	term_leave();
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	/* Continued. */
	signal(sig, on_tstp);
	term_enter();
	errno = saved;
}

static void
on_winch(int sig)
{
	(void)sig;
	resized = 1;
}

static void
handle(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a resize wakes the wait for a key at once. */
	sigaction(sig, &sa, NULL);
}

/* The screen's size; 80x24 when the terminal does not say. */
static void
size_of(int fd, int *cols, int *rows)
{
	struct winsize ws;

	*cols = 80;
	*rows = 24;
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 &&
	    ws.ws_row > 0) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

static void
xwrite(const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(STDOUT_FILENO, buf, len)) == -1) {
			if (errno == EINTR)
				continue;
			err(MQ_EX_SYS, "stdout");
		}
		buf += n;
		len -= n;
	}
}

/* The frame drawn in place: each row addressed, erased, written. */
static void
draw(struct top *t, struct screen *sc)
{
	char *buf = NULL;
	size_t len = 0, i;
	FILE *m;

	size_of(STDOUT_FILENO, &sc->width, &sc->rows);
	sc->color = t->color;
	sc->utf8 = t->utf8;
	frame(t, sc);
	if ((m = open_memstream(&buf, &len)) == NULL)
		err(MQ_EX_SYS, "memory");
	for (i = 0; i < sc->n; i++) {
		fprintf(m, "\033[%zu;1H\033[2K%s", i + 1, sc->l[i].buf);
		if (t->color)
			fputs("\033[m", m);
	}
	if (fclose(m) == EOF)
		err(MQ_EX_SYS, "memory");
	xwrite(buf, len);
	free(buf);
}

static void
sample_all(struct top *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		sample(t, &t->s[i]);
}

/* -b: frames as text, a blank line between two, none of the keys. */
static void
batch(struct top *t)
{
	struct screen sc;
	const char *cols = getenv("COLUMNS");
	long long k;
	size_t i;
	int rows;

	memset(&sc, 0, sizeof(sc));
	sc.utf8 = t->utf8;
	sc.width = 80;
	if (isatty(STDOUT_FILENO))
		size_of(STDOUT_FILENO, &sc.width, &rows);
	else if (cols != NULL && strspn(cols, "0123456789") == strlen(cols) &&
	    strlen(cols) > 0 && strlen(cols) < 5 && atoi(cols) >= 20)
		sc.width = atoi(cols);
	for (k = 0; t->opt->frames == 0 || k < t->opt->frames; k++) {
		if (k > 0) {
			poll(NULL, 0, t->opt->interval_ms > 86400000 ?
			    86400000 : (int)t->opt->interval_ms);
			putchar('\n');
		}
		sample_all(t);
		frame(t, &sc);
		for (i = 0; i < sc.n; i++) {
			/* Lines as shown: no trailing blanks. */
			while (sc.l[i].len > 0 && sc.l[i].buf[sc.l[i].len - 1]
			    == ' ')
				sc.l[i].buf[--sc.l[i].len] = '\0';
			puts(sc.l[i].buf);
		}
		if (fflush(stdout) == EOF)
			err(MQ_EX_SYS, "stdout");
	}
	free(sc.l);
}

/* On a terminal: a frame each interval, redrawn on a key or a resize. */
static void
live(struct top *t)
{
	struct screen sc;
	struct pollfd pfd;
	char buf[64];
	uint64_t now, next;
	long long frames = 0;
	ssize_t n;
	int r;

	memset(&sc, 0, sizeof(sc));
	if (isatty(STDIN_FILENO))
		kbd = STDIN_FILENO;
	else
		kbd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (kbd != -1 && tcgetattr(kbd, &tio_saved) == -1) {
		if (kbd != STDIN_FILENO)
			close(kbd);
		kbd = -1;
	}
	handle(SIGINT, on_stop);
	handle(SIGTERM, on_stop);
	handle(SIGHUP, on_stop);
	handle(SIGQUIT, on_stop);
	handle(SIGTSTP, on_tstp);
	handle(SIGWINCH, on_winch);
	atexit(term_leave);
	term_enter();
	next = 0;
	for (;;) {
		now = mq_now_ms();
		if (now >= next) {
			if (t->opt->frames != 0 && frames >= t->opt->frames)
				break;
			sample_all(t);
			frames++;
			next = now + t->opt->interval_ms;
			draw(t, &sc);
			resized = 0;
			continue;
		}
		if (resized) {
			resized = 0;
			draw(t, &sc);
		}
		pfd.fd = kbd;
		pfd.events = POLLIN;
		r = poll(&pfd, kbd != -1, next - now > 86400000 ? 86400000 :
		    (int)(next - now));
		if (r == -1 && errno != EINTR)
			err(MQ_EX_SYS, "poll");
		if (r <= 0)
			continue;
		/* The terminal gone: nobody to show a frame to. */
		if ((n = read(kbd, buf, sizeof(buf))) <= 0)
			break;
		if (keys(t, buf, n))
			break;
		draw(t, &sc);
	}
	term_leave();
	free(sc.l);
}

int
mq_top(const struct mq_top_opt *opt)
{
	struct top t;
	const char *term = getenv("TERM"), *nocolor = getenv("NO_COLOR");
	size_t i;

	memset(&t, 0, sizeof(t));
	t.opt = opt;
	t.n = opt->ndirs;
	t.s = xreallocarray(NULL, t.n, sizeof(*t.s));
	memset(t.s, 0, t.n * sizeof(*t.s));
	for (i = 0; i < t.n; i++)
		t.s[i].path = opt->dirs[i];
	setlocale(LC_CTYPE, "");
	t.utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	t.color = !opt->batch && isatty(STDOUT_FILENO) && term != NULL &&
	    *term != '\0' && strcmp(term, "dumb") != 0 &&
	    (nocolor == NULL || *nocolor == '\0');
	if (opt->batch)
		batch(&t);
	else
		live(&t);
	for (i = 0; i < t.n; i++) {
		mq_stat_cache_free(&t.s[i].cache);
		free(t.s[i].fl);
	}
	free(t.s);
	return opt->batch ? t.status : MQ_EX_OK;
}
