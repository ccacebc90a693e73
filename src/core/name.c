/*
 * name.c: IDs, message names, bucket names and times.
 *
 * An ID is "TTTTTTTTTTTTTTTT.PID.RRRRRRRRRRRR": the enqueue time in ns as 16
 * hex digits (strictly increasing within a process), the sender's pid and
 * 48 random bits, so IDs are unique across processes and hosts and sort
 * bytewise in enqueue order.  A message's name is its ID and, after commas,
 * what its state needs:
 *
 *	new/.../ID,ATTEMPTS[,SENT,TTL][,pN][,gGROUP][,kHASH][,dN]
 *		claims so far
 *	cur/SECS/ID,DEADLINE[,hHOLDER],ATTEMPT[,SENT,TTL][,pN][,gGROUP]
 *	    [,kHASH][,dN]
 *		DEADLINE is epoch seconds with ms
 *	dead/ID,DIED,ATTEMPTS[,TTL][,pN][,gGROUP][,kHASH][,dN]
 *		DIED is epoch seconds
 *
 * SENT (ms since the epoch: the send, or the last redrive) and TTL (the
 * message's own time to live in ms) are what its expiry needs; they are
 * written only when TTL is set or SENT is not the ID's own time, so that
 * a message sent without --ttl is named as before they existed.  The
 * tagged fields, in that order and each only when set, are what it was
 * sent with: its priority (1 to 9; none is 0), its group, and the hash of
 * its dedup key (32 lowercase hex digits); then the count of its past
 * deaths that its history, deaths/ID, records (1 to 999999; none is 0:
 * history.c).
 *
 * Parsing is strict, and a name that parses formats back to itself: a
 * long form that says what the short one would is refused too.  Anything
 * else is a foreign name and is left alone.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mq.h"

#define ID_TIME_DIGITS	16
#define ID_RAND_DIGITS	12
#define ID_PID_MAX	10
#define SENT_DIGITS	15	/* as a deadline's 12 digits and 3 of ms */
#define TTL_DIGITS	13	/* MQ_SECS_MAX seconds, in ms */
#define DEATHS_DIGITS	6

uint64_t
mq_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
mq_id_new(char *id)
{
	static uint64_t last, rnd;
	static unsigned pid;
	struct timespec ts;
	uint64_t ns;

	/* Time orders IDs; pid and randomness, fixed per process, part hosts. */
	if (pid == 0) {
		pid = (unsigned)getpid() % 1000000000u;
		arc4random_buf(&rnd, sizeof(rnd));
		rnd &= (uint64_t)0xffffffffffff;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	/* IDs of one process must sort in the order it made them. */
	if (ns <= last)
		ns = last + 1;
	last = ns;
	snprintf(id, MQ_ID_LEN + 1, "%016" PRIx64 ".%u.%012" PRIx64, ns, pid,
	    rnd);
}

/* The enqueue time of a valid ID, in ms: its first 16 hex digits are ns. */
uint64_t
mq_id_ms(const char *id)
{
	uint64_t ns = 0;
	int i;

	for (i = 0; i < 16; i++)
		ns = ns * 16 + (id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
	return ns / 1000000;
}

static int
all(const char *s, size_t n, int (*cls)(int))
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!cls((unsigned char)s[i]))
			return 0;
	return 1;
}

static int
lowerhex(int c)
{
	return isdigit(c) || (c >= 'a' && c <= 'f');
}

static int
digit(int c)
{
	return c >= '0' && c <= '9';
}

/* Checks the ID at the start of s, ending at end; returns its length. */
static size_t
id_span(const char *s, const char *end)
{
	const char *dot1, *dot2;
	size_t pidlen;

	if (end - s < ID_TIME_DIGITS + 3 + ID_RAND_DIGITS ||
	    end - s > MQ_ID_LEN)
		return 0;
	dot1 = s + ID_TIME_DIGITS;
	if (*dot1 != '.' || !all(s, ID_TIME_DIGITS, lowerhex))
		return 0;
	dot2 = end - ID_RAND_DIGITS - 1;
	if (*dot2 != '.' || !all(dot2 + 1, ID_RAND_DIGITS, lowerhex))
		return 0;
	pidlen = dot2 - dot1 - 1;
	if (pidlen < 1 || pidlen > ID_PID_MAX || !all(dot1 + 1, pidlen, digit))
		return 0;
	return end - s;
}

int
mq_id_valid(const char *s)
{
	return id_span(s, s + strlen(s)) != 0;
}

/*
 * Whether s is an ID or begins one, MQ_ID_PREFIX_MIN characters or more
 * of it: the time's hex digits, its '.', the pid's digits, their '.' and
 * the random hex digits, as far as s goes.
 */
int
mq_id_prefix_valid(const char *s)
{
	size_t len = strlen(s), i = 0, pidlen = 0;

	if (len < MQ_ID_PREFIX_MIN || len > MQ_ID_LEN)
		return 0;
	if (mq_id_valid(s))
		return 1;
	for (; i < len && i < ID_TIME_DIGITS; i++)
		if (!lowerhex((unsigned char)s[i]))
			return 0;
	if (i == len)
		return 1;
	if (s[i++] != '.')
		return 0;
	for (; i < len && digit((unsigned char)s[i]); i++)
		pidlen++;
	if (pidlen > ID_PID_MAX)
		return 0;
	if (i == len)
		return 1;
	if (pidlen == 0 || s[i++] != '.' || len - i > ID_RAND_DIGITS)
		return 0;
	return all(s + i, len - i, lowerhex);
}

/*
 * Starts m for s, an ID as an operator gives it: 0 when it is a whole ID,
 * then m holds it and nothing is searched (a whole ID begins no other);
 * 1 when it is a prefix, for a search to add what it meets; -1 (EINVAL)
 * when it is neither.
 */
int
mq_matches_init(struct mq_matches *m, const char *s)
{
	memset(m, 0, sizeof(*m));
	if (mq_id_valid(s)) {
		mq_matches_add(m, s);
		return 0;
	}
	if (mq_id_prefix_valid(s))
		return 1;
	errno = EINVAL;
	return -1;
}

/*
 * An ID a search met: kept if it is among the first MQ_MATCHES_KEPT in
 * ID order, counted once.  Memory stays flat however many match, so one
 * met twice (it moved during the search) after it lost its place to
 * lower ones counts twice: only the count past the kept ones can be more
 * than there are, never whether there is more than one.
 */
void
mq_matches_add(struct mq_matches *m, const char *id)
{
	size_t i;
	int c = 1;

	for (i = 0; i < m->kept && (c = strcmp(id, m->id[i])) > 0; i++)
		continue;
	if (i < m->kept && c == 0)
		return;
	m->n++;
	if (i == MQ_MATCHES_KEPT)
		return;
	if (m->kept < MQ_MATCHES_KEPT)
		m->kept++;
	memmove(m->id[i + 1], m->id[i], (m->kept - 1 - i) * sizeof(m->id[0]));
	strlcpy(m->id[i], id, sizeof(m->id[i]));
}

/*
 * What the IDs m holds say: MQ_EX_OK when there is one (m->id[0]),
 * MQ_EX_NONE when none, MQ_EX_USAGE when the prefix is ambiguous.
 */
int
mq_matches_status(const struct mq_matches *m)
{
	return m->n == 0 ? MQ_EX_NONE : m->n == 1 ? MQ_EX_OK : MQ_EX_USAGE;
}

/* A decimal number of at most maxlen digits, no sign, no leading zero. */
static const char *
number(const char *s, size_t maxlen, uint64_t max, uint64_t *v)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; digit((unsigned char)s[i]); i++) {
		if (i == maxlen)
			return NULL;
		n = n * 10 + (s[i] - '0');
	}
	if (i == 0 || (i > 1 && s[0] == '0') || n > max)
		return NULL;
	*v = n;
	return s + i;
}

/* A group: 1 to MQ_GROUP_MAX of [A-Za-z0-9._-], not starting with '.'. */
static size_t
group_span(const char *s)
{
	size_t i;

	for (i = 0; isalnum((unsigned char)s[i]) || s[i] == '.' ||
	    s[i] == '_' || s[i] == '-'; i++)
		if (i == MQ_GROUP_MAX)
			return 0;
	return s[0] == '.' ? 0 : i;
}

int
mq_group_valid(const char *s)
{
	size_t n = group_span(s);

	return n > 0 && s[n] == '\0';
}

/* Lower-case hex, 1 to digits of them, no leading zero but for 0. */
static const char *
hexnum(const char *s, size_t digits, uint64_t *v)
{
	size_t i;

	*v = 0;
	for (i = 0; i < digits && lowerhex((unsigned char)s[i]); i++)
		*v = *v << 4 | (uint64_t)(digit((unsigned char)s[i]) ?
		    s[i] - '0' : s[i] - 'a' + 10);
	if (i == 0 || (s[0] == '0' && i > 1))
		return NULL;
	return s + i;
}

/*
 * The holder of a lease, ",hKSPACE.PID.START.UID.SINCE" after the
 * deadline: 8 hex digits of space, at most 7, 10, 8 and 9 for the rest, so
 * that a name with everything still fits NAME_MAX (a holder with a value
 * larger than that is not written: holder_fits).
 */
#define HOLDER_PID_DIGITS	7
#define HOLDER_START_DIGITS	10
#define HOLDER_UID_DIGITS	8
#define HOLDER_SINCE_DIGITS	9

static const char *
holder_parse(const char *p, struct mq_holder *h)
{
	uint64_t v;

	if (p[0] != MQ_HOLDER_BOUND && p[0] != MQ_HOLDER_RECEIPT)
		return NULL;
	h->kind = p[0];
	/* space: always 8 digits. */
	if (!all(p + 1, 8, lowerhex) || p[9] != '.')
		return NULL;
	h->space = strtoul(p + 1, NULL, 16);
	p += 10;
	if ((p = hexnum(p, HOLDER_PID_DIGITS, &v)) == NULL || *p++ != '.')
		return NULL;
	h->pid = v;
	if ((p = hexnum(p, HOLDER_START_DIGITS, &h->start)) == NULL ||
	    *p++ != '.')
		return NULL;
	if ((p = hexnum(p, HOLDER_UID_DIGITS, &v)) == NULL || *p++ != '.')
		return NULL;
	h->uid = v;
	return hexnum(p, HOLDER_SINCE_DIGITS, &h->since);
}

/* Whether h can be written in a name: kind set, every value in bounds. */
static int
holder_fits(const struct mq_holder *h)
{
	return (h->kind == MQ_HOLDER_BOUND || h->kind == MQ_HOLDER_RECEIPT) &&
	    h->pid < (1ULL << 4 * HOLDER_PID_DIGITS) &&
	    h->start < (1ULL << 4 * HOLDER_START_DIGITS) &&
	    h->since < (1ULL << 4 * HOLDER_SINCE_DIGITS);
}

/*
 * The tagged fields after the numbers: ",pN", ",gGROUP", ",kHASH", ",dN",
 * in that order, each at most once.  Returns the end, or NULL.
 */
static const char *
tagged(const char *p, struct mq_name *n)
{
	uint64_t v;
	size_t len;

	n->prio = 0;
	n->deaths = 0;
	n->group[0] = n->keyhash[0] = '\0';
	if (p[0] == ',' && p[1] == 'p') {
		if (p[2] < '1' || p[2] > '0' + MQ_PRIORITY_MAX)
			return NULL;
		n->prio = p[2] - '0';
		p += 3;
	}
	if (p[0] == ',' && p[1] == 'g') {
		if ((len = group_span(p + 2)) == 0)
			return NULL;
		memcpy(n->group, p + 2, len);
		n->group[len] = '\0';
		p += 2 + len;
	}
	if (p[0] == ',' && p[1] == 'k') {
		if (!all(p + 2, MQ_KEYHASH_LEN, lowerhex))
			return NULL;
		memcpy(n->keyhash, p + 2, MQ_KEYHASH_LEN);
		n->keyhash[MQ_KEYHASH_LEN] = '\0';
		p += 2 + MQ_KEYHASH_LEN;
	}
	if (p[0] == ',' && p[1] == 'd') {
		if ((p = number(p + 2, DEATHS_DIGITS, MQ_DEATHS_MAX, &v)) ==
		    NULL || v == 0)
			return NULL;
		n->deaths = v;
	}
	return p;
}

int
mq_name_parse(const char *s, enum mq_state st, struct mq_name *n)
{
	const char *comma, *p;
	uint64_t v, ms = 0, sent = 0, ttl = 0;
	struct mq_holder holder = { 0 };
	size_t idlen;

	if ((comma = strchr(s, ',')) == NULL || id_span(s, comma) == 0)
		return -1;
	idlen = comma - s;
	p = comma + 1;
	if (st != MQ_NEW) {
		if ((p = number(p, 12, UINT64_MAX / 1000 - 1000, &v)) == NULL)
			return -1;
		ms = v * 1000;
		if (st == MQ_CUR) {
			if (p[0] != '.' || !all(p + 1, 3, digit))
				return -1;
			ms += (p[1] - '0') * 100 + (p[2] - '0') * 10 +
			    (p[3] - '0');
			p += 4;
			/* Before the attempt, which stays the last field. */
			if (p[0] == ',' && p[1] == 'h' &&
			    (p = holder_parse(p + 2, &holder)) == NULL)
				return -1;
		}
		if (*p++ != ',')
			return -1;
	}
	if ((p = number(p, 7, MQ_ATTEMPTS_MAX, &v)) == NULL)
		return -1;
	memcpy(n->id, s, idlen);
	n->id[idlen] = '\0';
	if (*p == ',' && digit((unsigned char)p[1]) && st != MQ_DEAD) {
		if ((p = number(p + 1, SENT_DIGITS, UINT64_MAX, &sent)) ==
		    NULL || sent == 0 || *p != ',')
			return -1;
		if ((p = number(p + 1, TTL_DIGITS, MQ_SECS_MAX * 1000,
		    &ttl)) == NULL ||
		    (ttl == 0 && sent == mq_id_ms(n->id)))
			return -1;
	} else if (*p == ',' && digit((unsigned char)p[1])) {
		if ((p = number(p + 1, TTL_DIGITS, MQ_SECS_MAX * 1000,
		    &ttl)) == NULL || ttl == 0)
			return -1;
	}
	if ((p = tagged(p, n)) == NULL || *p != '\0')
		return -1;
	n->ms = ms;
	n->holder = holder;
	n->attempts = v;
	n->sent = sent != 0 ? sent : mq_id_ms(n->id);
	n->ttl = ttl;
	return 0;
}

int
mq_name_format(char *buf, size_t size, enum mq_state st,
    const struct mq_name *n)
{
	uint64_t own = mq_id_ms(n->id), sent = n->sent != 0 ? n->sent : own;
	int len, more;

	switch (st) {
	case MQ_NEW:
		len = snprintf(buf, size, "%s,%u", n->id, n->attempts);
		break;
	case MQ_CUR:
		if (holder_fits(&n->holder))
			len = snprintf(buf, size, "%s,%" PRIu64 ".%03u,h%c%08"
			    PRIx32 ".%" PRIx32 ".%" PRIx64 ".%" PRIx32 ".%"
			    PRIx64 ",%u", n->id, n->ms / 1000,
			    (unsigned)(n->ms % 1000), n->holder.kind,
			    n->holder.space, n->holder.pid, n->holder.start,
			    n->holder.uid, n->holder.since, n->attempts);
		else
			len = snprintf(buf, size, "%s,%" PRIu64 ".%03u,%u",
			    n->id, n->ms / 1000, (unsigned)(n->ms % 1000),
			    n->attempts);
		break;
	default:
		len = snprintf(buf, size, "%s,%" PRIu64 ",%u", n->id,
		    n->ms / 1000, n->attempts);
		break;
	}
	if (len >= 0 && (size_t)len < size) {
		more = 0;
		if (st != MQ_DEAD && (n->ttl != 0 || sent != own))
			more = snprintf(buf + len, size - len, ",%" PRIu64
			    ",%" PRIu64, sent, n->ttl);
		else if (st == MQ_DEAD && n->ttl != 0)
			more = snprintf(buf + len, size - len, ",%" PRIu64,
			    n->ttl);
		len = more < 0 ? more : len + more;
	}
	if (len >= 0 && (size_t)len < size && n->prio != 0) {
		more = snprintf(buf + len, size - len, ",p%u", n->prio);
		len = more < 0 ? more : len + more;
	}
	if (len >= 0 && (size_t)len < size && n->group[0] != '\0') {
		more = snprintf(buf + len, size - len, ",g%s", n->group);
		len = more < 0 ? more : len + more;
	}
	if (len >= 0 && (size_t)len < size && n->keyhash[0] != '\0') {
		more = snprintf(buf + len, size - len, ",k%s", n->keyhash);
		len = more < 0 ? more : len + more;
	}
	if (len >= 0 && (size_t)len < size && n->deaths != 0) {
		if (n->deaths > MQ_DEATHS_MAX) {
			errno = ERANGE;
			return -1;
		}
		more = snprintf(buf + len, size - len, ",d%u", n->deaths);
		len = more < 0 ? more : len + more;
	}

	if (len < 0 || (size_t)len >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * When a waiting message named n expires, given the spool's ttl (0:
 * none): the lower of its own ttl and the spool's counts from its send
 * (or last redrive).  UINT64_MAX: never.
 */
uint64_t
mq_name_expiry(const struct mq_name *n, uint64_t spool_ttl)
{
	uint64_t ttl = n->ttl;

	if (spool_ttl != 0 && (ttl == 0 || spool_ttl < ttl))
		ttl = spool_ttl;
	if (ttl == 0)
		return UINT64_MAX;
	return (n->sent != 0 ? n->sent : mq_id_ms(n->id)) + ttl;
}

/* The first `digits` hex digits of a visibility key (ms since the epoch). */
int
mq_leaf_key_format(char *buf, size_t size, uint64_t key, int digits)
{
	char full[32];

	snprintf(full, sizeof(full), "%0*" PRIx64, MQ_KEY_DIGITS, key);
	if (strlen(full) != MQ_KEY_DIGITS || (size_t)digits >= size) {
		errno = ERANGE;
		return -1;
	}
	memcpy(buf, full, digits);
	buf[digits] = '\0';
	return 0;
}

int
mq_leaf_key_parse(const char *s, int digits, uint64_t *key)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < digits; i++) {
		if (!lowerhex((unsigned char)s[i]))
			return -1;
		v = v << 4 | (isdigit((unsigned char)s[i]) ? s[i] - '0' :
		    s[i] - 'a' + 10);
	}
	if (s[digits] != '\0')
		return -1;
	*key = v << 4 * (MQ_KEY_DIGITS - digits);
	return 0;
}

/* cur/ buckets are named by the whole second that ends their leases. */
uint64_t
mq_cur_bucket(uint64_t deadline_ms)
{
	return (deadline_ms + 999) / 1000;
}

/* The name of bucket secs; -1 if it does not fit in size. */
int
mq_cur_bucket_format(char *buf, size_t size, uint64_t secs)
{
	int n;

	n = snprintf(buf, size, "%" PRIu64, secs);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int
mq_cur_bucket_parse(const char *s, uint64_t *secs)
{
	const char *p;

	if ((p = number(s, 12, UINT64_MAX / 1000 - 1000, secs)) == NULL ||
	    *p != '\0')
		return -1;
	return 0;
}

/* Whether s names a bucket of cur/ (a filter for a directory's names). */
int
mq_is_cur_bucket(const char *s)
{
	uint64_t secs;

	return mq_cur_bucket_parse(s, &secs) == 0;
}

/* The units of a duration, and what each is in ms. */
static const struct {
	const char	*name;
	uint64_t	 ms;
} units[] = {
	{ "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60 * 1000 },
	{ "h", 60 * 60 * 1000 }, { "d", 24 * 60 * 60 * 1000 }
};

/*
 * A duration into ms: "N" or "N.F" seconds (up to ms), or such a number
 * with a unit: ms (whole), s, m, h, d ("250ms", "90s", "1.5h", "2d");
 * strtonum-style error text that names the forms taken.  The bound is on
 * the whole value, fraction included: a name's ttl and every deadline are
 * read back under the same MQ_SECS_MAX, and a value that passed here but
 * not there would name a file no tool knows.
 */
int
mq_secs_parse(const char *s, uint64_t *ms, const char **errstr)
{
	const char *dot, *unit;
	size_t wlen, flen, i, u;
	uint64_t whole = 0, f = 0, max = (uint64_t)MQ_SECS_MAX * 1000;

	*errstr = MQ_DURATION_INVALID;
	unit = s + strspn(s, "0123456789.");
	for (u = 0; u < sizeof(units) / sizeof(units[0]) &&
	    strcmp(unit, units[u].name) != 0; u++)
		;
	if (u == sizeof(units) / sizeof(units[0]))
		return -1;
	dot = memchr(s, '.', unit - s);
	wlen = (dot != NULL ? dot : unit) - s;
	if (wlen == 0)
		return -1;
	if (dot != NULL) {
		flen = unit - dot - 1;
		/* A fraction of a ms is none. */
		if (flen == 0 || flen > 3 || units[u].ms < 1000 ||
		    memchr(dot + 1, '.', flen) != NULL)
			return -1;
		for (i = 0; i < 3; i++)
			f = f * 10 + (i < flen ? (uint64_t)(dot[1 + i] - '0') :
			    0);
	}
	for (i = 0; i < wlen; i++) {
		whole = whole * 10 + (uint64_t)(s[i] - '0');
		if (whole > max / units[u].ms) {
			*errstr = MQ_SECS_TOO_LARGE;
			return -1;
		}
	}
	whole = whole * units[u].ms + f * (units[u].ms / 1000);
	if (whole > max) {
		*errstr = MQ_SECS_TOO_LARGE;
		return -1;
	}
	*ms = whole;
	*errstr = NULL;
	return 0;
}

void
mq_time_iso(char *buf, size_t size, uint64_t ms)
{
	struct tm tm;
	time_t t = ms / 1000;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, size, "@%lld", (long long)t);
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar. */
static long long
days_from_civil(long long y, unsigned m, unsigned d)
{
	long long era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

/*
 * A time as mq_time_iso writes it, YYYY-MM-DDTHH:MM:SSZ (UTC), or with
 * milliseconds, YYYY-MM-DDTHH:MM:SS.mmmZ (the log's: log.c), the len
 * bytes of s exactly, in ms since the epoch; -1 for anything else.
 */
int
mq_time_parse(const char *s, size_t len, uint64_t *ms)
{
	static const unsigned mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31,
	    30, 31, 30, 31 };
	static const char form[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	unsigned y, mo, d, h, mi, sec, milli = 0;
	size_t i, j;

	if (len != sizeof(form) - 1 && len != sizeof(form) - 5)
		return -1;
	/* Digits where form has d (sscanf alone would take "-0" or " 1"). */
	for (i = j = 0; i < len; i++, j++) {
		if (len == sizeof(form) - 5 && j == 19)
			j += 4;
		if (form[j] == 'd' ? s[i] < '0' || s[i] > '9' : s[i] != form[j])
			return -1;
	}
	for (i = 0, y = 0; i < 4; i++)
		y = y * 10 + (unsigned)(s[i] - '0');
#define TWO(k)	((unsigned)(s[k] - '0') * 10 + (unsigned)(s[k + 1] - '0'))
	mo = TWO(5);
	d = TWO(8);
	h = TWO(11);
	mi = TWO(14);
	sec = TWO(17);
#undef TWO
	if (len == sizeof(form) - 1)
		milli = (unsigned)(s[20] - '0') * 100 +
		    (unsigned)(s[21] - '0') * 10 + (unsigned)(s[22] - '0');
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && (y % 4 != 0 ||
	    (y % 100 == 0 && y % 400 != 0))) || h > 23 || mi > 59 || sec > 59)
		return -1;
	*ms = ((uint64_t)days_from_civil(y, mo, d) * 86400 + h * 3600 +
	    mi * 60 + sec) * 1000 + milli;
	return 0;
}
