/*
 * sweep.c: housekeeping, for mq-sweep.  Receivers reclaim expired leases
 * themselves, so nothing waits for it; it keeps the spool tidy:
 *
 *	expired	cur/S/ID,DEADLINE,A	-> new/T/M/L/ID,A	(mq_place_back)
 *		or, at max attempts	-> dead/ID,DIED,A	(mq_reap)
 *		or, past its ttl	-> dead/ID,EXPIRY,A	(mq_reap)
 *	ttl	new/[pN/]T/M/L/ID,A,SENT,TTL (or ID,A, the spool's ttl),
 *		groups/G/T/M/L/ID,..., or an expired lease of cur/,
 *		past its time to live	-> dead/ID,EXPIRY,A	(mq_expire)
 *	prune	empty past directories of new/ (and new/pN) removed
 *		(mq_prune)
 *	tmp/	fragments of crashed senders, reasons whose dead letter is
 *		gone, and last release reasons (last/ID) whose message is
 *		gone (acked, removed) or dead, removed after
 *		MQ_TMP_STALE_SECS				(mq_tmp_clean)
 *	keys/	records of keys whose window is over, of crashed senders,
 *		broken or orphaned, forgotten (key.c)	(mq_keys_sweep)
 *
 * mq_reclaim makes expired messages visible to tools that only look at
 * new/; a claim takes expired leases itself (claim.c).  mq_expire buries
 * what has outlived its time to live without waiting for a claim to meet
 * it; it reads every leaf of new/ and of the groups, due or not (names
 * only: no stat).  Either leaves each message's fate to the reaper
 * (reap.c), which dates such a death at the message's expiry.
 * mq_tidy prunes and makes the spares again (mq_spool_spares, spool.c).
 *
 * A last reason is looked for only once it is old: what is held is those
 * (never every ID of the spool), one walk of every state marks those of
 * live messages, a second walk looks again for the others, and each is
 * removed only if it is still the file listed: a release that moves its
 * message behind a walk's back writes a new last/ID first, which is
 * never the one removed.  A live one is touched, to be looked for again
 * only after another MQ_TMP_STALE_SECS.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

struct reclaimer {
	struct mq_spool	*sp;
	struct mq_placer pl;
	struct mq_reaper reaper;	/* each message's fate (reap.c) */
	int		 failed;	/* mq_expire: the errno of a failure */
	void		(*report)(const char *, const char *);
};

/*
 * What the reaper did with fd/name (named nm), told: 1 when buried, 0
 * when it lives on or went meanwhile (*gone), -1 on error.
 */
static int
reap_one(struct reclaimer *rc, int fd, const char *name,
    const struct mq_name *nm, int *gone)
{
	int r;

	*gone = 0;
	if ((r = mq_reap(&rc->reaper, fd, name, nm)) == -1) {
		*gone = errno == ENOENT;
		return *gone ? 0 : -1;
	}
	if (r != MQ_FATE_LIVE && rc->report != NULL)
		rc->report(nm->id, r == MQ_FATE_EXPIRED ?
		    "dead: " MQ_REASON_TTL :
		    "dead: " MQ_REASON_MAX_ATTEMPTS);
	return r != MQ_FATE_LIVE;
}

static int
reclaim_one(void *arg, int fd, const char *name, const struct mq_name *nm)
{
	struct reclaimer *rc = arg;
	int r, gone;

	if ((r = reap_one(rc, fd, name, nm, &gone)) != 0 || gone)
		return r;
	if (mq_place_back(&rc->pl, fd, name, nm, rc->reaper.now) == -1)
		return errno == ENOENT ? 0 : -1;
	/* Not counted: its next claim is, as a delivery. */
	mq_log_begin(rc->sp, "expire", nm->id);
	mq_log_num("attempt", nm->attempts);
	mq_log_end();
	if (rc->report != NULL)
		rc->report(nm->id, "lease expired: back to new");
	return 1;
}

/* max: as mq_reaper_init's (MQ_REAP_EXPIRY: expiry only). */
static void
reclaimer_init(struct reclaimer *rc, struct mq_spool *sp, unsigned max,
    void (*report)(const char *, const char *))
{
	memset(rc, 0, sizeof(*rc));
	rc->sp = sp;
	rc->report = report;
	mq_reaper_init(&rc->reaper, sp, max);
}

/*
 * Moves every expired lease back to new/, or to dead/ at max attempts
 * (max, mq-sweep -m; 0: the spool's) or past its time to live (its own, or
 * the spool's ttl).
 */
int
mq_reclaim(struct mq_spool *sp, unsigned max,
    void (*report)(const char *, const char *))
{
	struct reclaimer rc;
	uint64_t wake = UINT64_MAX;
	int r, saved, orphans;

	reclaimer_init(&rc, sp, max, report);
	mq_placer_release_init(&rc.pl, sp);
	/* The leases of holders gone end now, and are reclaimed with these. */
	orphans = mq_orphans(sp, rc.reaper.now, 1, 1);
	saved = errno;
	r = mq_expired_scan(sp, rc.reaper.now, INT32_MAX, reclaim_one, &rc,
	    &wake);
	if (orphans == -1 && r != -1) {
		r = -1;
		errno = saved;
	}
	if (mq_placer_flush(&rc.pl) == -1)
		r = -1;
	saved = errno;
	mq_placer_close(&rc.pl);
	mq_reaper_end(&rc.reaper);
	errno = saved;
	return r;
}

/*
 * What mq_expire passes over (errno e) is kept for the end (0); but
 * memory run out is no property of one leaf or message, and ends it at
 * once (-1, errno e).
 */
static int
passed(struct reclaimer *rc, int e)
{
	rc->failed = e;
	errno = e;
	return e == ENOMEM ? -1 : 0;
}

/*
 * mq_expire's step: every level of every priority's tree, every leaf read
 * whole, due or not.  A
 * leaf that fails is passed (its error kept for the end): one unreadable
 * leaf must not keep the others from being swept.
 */
static int
expire_step(void *arg, int dirfd, const char *name, int digits, uint64_t key,
    unsigned prio)
{
	struct reclaimer *rc = arg;
	struct mq_names names;
	struct mq_name nm;
	size_t i;
	int fd, gone, r = MQ_TREE_NEXT;

	(void)key;
	(void)prio;
	if (digits != MQ_KEY_DIGITS)
		return MQ_TREE_INTO;
	if ((fd = mq_opendirat(dirfd, name)) == -1) {
		if (errno != ENOENT && passed(rc, errno) == -1)
			return -1;
		return MQ_TREE_NEXT;
	}
	/* Listed first: what is renamed away must not upset the listing. */
	if (mq_names_read(fd, DT_REG, NULL, &names) == -1) {
		if (errno != ENOENT && passed(rc, errno) == -1)
			r = -1;
		close(fd);
		errno = rc->failed;
		return r;
	}
	for (i = 0; i < names.n && r != -1; i++)
		if (mq_name_parse(names.v[i], MQ_NEW, &nm) == 0 &&
		    reap_one(rc, fd, names.v[i], &nm, &gone) == -1 &&
		    passed(rc, errno) == -1)
			r = -1;
	mq_names_free(&names);
	close(fd);
	errno = rc->failed;
	return r;
}

/*
 * A group's burials left half way by a crash are finished before its
 * parked messages are looked at: what its callers were told is dead is
 * then in dead/, where mq-dlq looks.
 */
static int
expire_unfinished(void *arg, const char *group)
{
	struct reclaimer *rc = arg;

	if (mq_group_bury_unfinished(rc->sp, group, rc->report) == -1 &&
	    passed(rc, errno) == -1)
		return -1;
	return 0;
}

/* A parked message, as new/'s (expire_step): one that fails is passed. */
static int
expire_parked(void *arg, int leaf, const char *name, const struct mq_name *nm,
    uint64_t key)
{
	struct reclaimer *rc = arg;
	int gone;

	(void)key;
	if (reap_one(rc, leaf, name, nm, &gone) == -1 &&
	    passed(rc, errno) == -1)
		return -1;
	return 0;
}

/* A lease run out past its time to live; the others stay (mq_reclaim's). */
static int
expire_lease(void *arg, int fd, const char *name, const struct mq_name *nm)
{
	int gone;

	return reap_one(arg, fd, name, nm, &gone);
}

/*
 * Buries every message that is waiting past its time to live (its own,
 * or the spool's ttl): what mq-ls and mq-stat count as dead.
 * The parked messages of ordered groups go first (each under its group's
 * lock, group.c), so that a head buried next hands its turn to one that
 * is alive; then new/, delayed ones too; then the leases run out in cur/
 * (those running are their holders').  It reads every leaf, one at a
 * time.  What cannot be read or moved is passed over, and the last such
 * error returned at the end; memory run out ends it there (ENOMEM).
 */
int
mq_expire(struct mq_spool *sp, void (*report)(const char *, const char *))
{
	struct reclaimer rc;
	struct mq_tree t = { .fn = expire_step, .arg = &rc, .tolerant = 1 };
	struct mq_parked_walk w = { .fn = expire_parked,
	    .group = expire_unfinished, .arg = &rc };
	uint64_t wake = UINT64_MAX;

	reclaimer_init(&rc, sp, MQ_REAP_EXPIRY, report);
	if (mq_group_parked(sp, &w) == -1)
		rc.failed = errno;
	if (rc.failed != ENOMEM && mq_tree_walk(&t, sp->new) == -1)
		rc.failed = errno;
	if (rc.failed != ENOMEM && mq_expired_scan(sp, rc.reaper.now,
	    INT32_MAX, expire_lease, &rc, &wake) == -1)
		rc.failed = errno;
	mq_reaper_end(&rc.reaper);
	if (rc.failed != 0) {
		errno = rc.failed;
		return -1;
	}
	return 0;
}

/* Every directory keyed before the cutoff is entered, then removed. */
static int
prune_step(void *arg, int dirfd, const char *name, int digits, uint64_t key,
    unsigned prio)
{
	const uint64_t *before = arg;

	(void)dirfd;
	(void)name;
	(void)prio;
	if (key >= *before)
		return MQ_TREE_NEXT;
	return digits == MQ_KEY_DIGITS ? MQ_TREE_USED : MQ_TREE_INTO;
}

/*
 * Removes empty directories of new/ whose time has passed, in every
 * priority's tree, and the new/pN left empty.  A sender that loses its
 * leaf this way makes it again (see mq_place).  A level that
 * cannot be read stops nothing: it is passed over (and removed if empty).
 * Only memory run out fails it (-1, ENOMEM).
 */
int
mq_prune(struct mq_spool *sp)
{
	uint64_t now = mq_now_ms(), before = now - MQ_LEAF_SPAN_MS;
	struct mq_tree t = { .fn = prune_step, .arg = &before, .sorted = 1,
	    .remove = 1, .tolerant = 1, .now = now };

	if (mq_tree_walk(&t, sp->new) == -1 && errno == ENOMEM)
		return -1;
	return 0;
}

/*
 * What a sweep leaves tidy besides messages: the empty past of new/, and
 * the spares of tmp/ that consumers took.  -1 (ENOMEM) as mq_prune.
 */
int
mq_tidy(struct mq_spool *sp)
{
	int r;

	r = mq_prune(sp);
	mq_spool_spares(sp);
	return r;
}

static int
is_ours(const char *s)
{
	const char *comma = strchr(s, ',');
	char id[MQ_ID_LEN + 1];
	size_t len = comma ? (size_t)(comma - s) : strlen(s);

	if (len > MQ_ID_LEN || (comma != NULL &&
	    strcmp(comma, ",reason") != 0 && strcmp(comma, MQ_CONF_TMP) != 0 &&
	    strcmp(comma, MQ_DEPTH_TMP) != 0 &&
	    strcmp(comma, MQ_HOLDER_TMP) != 0))
		return 0;
	memcpy(id, s, len);
	id[len] = '\0';
	return mq_id_valid(id);
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Dead letters are listed in ID order, so an ID can be looked up. */
static int
dead_cmp(const void *id, const void *d)
{
	return strcmp(id, ((const struct mq_dead *)d)->n.id);
}

/*
 * A reason older than the cutoff: its ID and the file as it was listed,
 * which it must still be when it is removed (mq_reason_remove_same).
 */
struct stale {
	char	 id[MQ_ID_LEN + 1];
	struct stat st;
	int	 met;		/* its message was met alive */
};

/* What a clean of reason/ or last/ carries: its candidates. */
struct cleaner {
	struct mq_spool	*sp;
	time_t		 cutoff;
	struct mq_dead	*dead;		/* reason/: every dead letter */
	size_t		 ndead;
	struct stale	*v;		/* last/: the candidates, in ID order */
	size_t		 n, cap;
	int		 failed;	/* a directory could not be read */
	void		(*report)(const char *, const char *);
};

/*
 * A reason of reason/ whose dead letter is gone (purged, redriven, or
 * removed by hand), if old: removed, unless another is there by then.
 */
static int
reason_one(void *arg, int dirfd, const char *id)
{
	struct cleaner *c = arg;
	struct stat st;

	if (!mq_id_valid(id) ||
	    fstatat(dirfd, id, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    st.st_mtime > c->cutoff ||
	    (c->ndead > 0 && bsearch(id, c->dead, c->ndead, sizeof(*c->dead),
	    dead_cmp) != NULL))
		return 0;
	if (mq_reason_remove_same(c->sp, dirfd, id, &st) == 0 &&
	    c->report != NULL)
		c->report(id, "orphan reason removed");
	return 0;
}

/* A last release reason older than the cutoff: a candidate. */
static int
last_one(void *arg, int dirfd, const char *id)
{
	struct cleaner *c = arg;
	struct stale *v;
	struct stat st;

	if (!mq_id_valid(id) ||
	    fstatat(dirfd, id, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    st.st_mtime > c->cutoff)
		return 0;
	if ((v = mq_grow(c->v, &c->cap, c->n, SIZE_MAX, sizeof(*v))) == NULL)
		return -1;
	c->v = v;
	strlcpy(c->v[c->n].id, id, sizeof(c->v[c->n].id));
	c->v[c->n].st = st;
	c->v[c->n].met = 0;
	c->n++;
	return 0;
}

static int
stale_cmp(const void *a, const void *b)
{
	return strcmp(((const struct stale *)a)->id,
	    ((const struct stale *)b)->id);
}

static int
stale_key(const void *id, const void *s)
{
	return strcmp(id, ((const struct stale *)s)->id);
}

/*
 * The walk's callback: the candidate of a message met alive is marked.
 * A dead letter is not alive: a last/ID beside one (a release that came
 * too late) is of no use, and its redrive would remove it.
 */
static int
stale_met(void *arg, const struct mq_look *m)
{
	struct cleaner *c = arg;
	struct stale *s;

	if (m->in == MQ_IN_DEAD || m->in == MQ_IN_LEAVING)
		return 0;
	if ((s = bsearch(m->n.id, c->v, c->n, sizeof(*c->v),
	    stale_key)) != NULL)
		s->met = 1;
	return 0;
}

static void
stale_fail(void *arg, const char *where, int e)
{
	struct cleaner *c = arg;

	(void)where;
	c->failed = e;
}

/*
 * One walk of every state (look.c), for the candidates: those whose
 * message it meets are marked.  With a part of the spool unread, -1.
 */
static int
stale_walk(struct cleaner *c)
{
	struct mq_looker lk;

	memset(&lk, 0, sizeof(lk));
	lk.states = MQ_LOOK_ALL;
	lk.now = mq_now_ms();
	lk.fn = stale_met;
	lk.fail = stale_fail;
	lk.arg = c;
	c->failed = 0;
	if (mq_look(c->sp, &lk) == -1)
		return -1;
	if (c->failed != 0) {
		errno = c->failed;
		return -1;
	}
	return 0;
}

/*
 * Removes the last release reasons (last/ID) older than the cutoff whose
 * message is in no state (acked, removed) or a dead letter.  A live one
 * keeps its own for its death to name (mq_bury_spent), and its file is
 * touched: it is no candidate again before another cutoff has passed, so
 * that a message alive for long costs a walk of the spool once in that
 * time, not at every sweep.  What is held is the candidates (sorted, for
 * the walk to look its messages up), never the spool's IDs.  A message
 * the walk missed as it moved back behind it (a release, cur/ -> new/)
 * is met by a second walk of those left, as mq_find searches twice; and
 * each is removed only if it is still the file listed (a release writes
 * a new one: mq_reason_remove_same), so that no fresh reason is lost.
 * With a part of the spool unread, nothing is removed.
 */
static int
last_clean(struct cleaner *c)
{
	size_t i, j, pass;
	int last;

	if ((last = mq_last_dir(c->sp, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	if (mq_dir_each(last, DT_REG, last_one, c) == -1)
		return -1;
	/* (qsort and bsearch take no NULL, even for none.) */
	if (c->n > 0)
		qsort(c->v, c->n, sizeof(*c->v), stale_cmp);
	for (pass = 0; pass < 2 && c->n > 0; pass++) {
		if (stale_walk(c) == -1)
			return -1;
		/* The live ones are done with: only the others are left. */
		for (i = j = 0; i < c->n; i++) {
			if (!c->v[i].met)
				c->v[j++] = c->v[i];
			else
				(void)utimensat(last, c->v[i].id, NULL,
				    AT_SYMLINK_NOFOLLOW);
		}
		c->n = j;
	}
	for (i = 0; i < c->n; i++)
		if (mq_reason_remove_same(c->sp, last, c->v[i].id,
		    &c->v[i].st) == 0 && c->report != NULL)
			c->report(c->v[i].id, "orphan last reason removed");
	return 0;
}

/*
 * Removes tmp/ fragments of crashed senders, the reasons of dead letters
 * that are gone, and the last release reasons of messages in no state,
 * once they are older than age seconds.
 */
int
mq_tmp_clean(struct mq_spool *sp, uint64_t age,
    void (*report)(const char *, const char *))
{
	struct mq_names names;
	struct cleaner c;
	struct stat st;
	time_t cutoff = mq_now_ms() / 1000 - age;
	size_t i;
	int r;

	if (mq_spool_need(sp, 0) == -1 ||
	    mq_names_read(sp->tmp, DT_REG, is_ours, &names) == -1)
		return -1;
	for (i = 0; i < names.n; i++) {
		if (fstatat(sp->tmp, names.v[i], &st, AT_SYMLINK_NOFOLLOW) ==
		    -1 || st.st_mtime > cutoff)
			continue;
		if (unlinkat(sp->tmp, names.v[i], 0) == 0 && report != NULL)
			report(names.v[i], "stale tmp file removed");
	}
	mq_names_free(&names);
	memset(&c, 0, sizeof(c));
	c.sp = sp;
	c.cutoff = cutoff;
	c.report = report;
	/*
	 * reason/ is dead letters' only: one listing of dead/ serves every
	 * reason, and dead/ is listed before reason/ is read, so that a
	 * reason whose burial is under way is either met with its dead
	 * letter or replaced by then.
	 */
	if (mq_dead_list(sp, &c.dead, &c.ndead) == -1)
		return -1;
	r = mq_dir_each(sp->reason, DT_REG, reason_one, &c);
	free(c.dead);
	if (r == -1)
		return -1;
	r = last_clean(&c);
	free(c.v);
	return r;
}

static int
is_key_record(const char *s)
{
	return mq_key_is_hash(s) || mq_id_valid(s);
}

/*
 * Forgets, under the lock of keys/, what holds no key any more: a record
 * whose holder was acked or purged the spool's dedup-window ago or more,
 * one whose keys/ID is missing, one of a sender that died before its
 * rename (its message is taken out of tmp/ too), and a keys/ID that no
 * record names (a sender or a sweep died between its two steps).  What is not a
 * record is left alone.
 */
int
mq_keys_sweep(struct mq_spool *sp, void (*report)(const char *, const char *))
{
	static const char *why[] = {
		[MQ_KEY_PAST] = "key forgotten: its window is over",
		[MQ_KEY_BROKEN] = "key forgotten: its record was broken",
		[MQ_KEY_STRANDED] = "key forgotten: its send did not finish"
	};
	struct mq_keys ks;
	struct mq_names names, held;
	char id[MQ_ID_LEN + 1], key[MQ_KEY_MAX + 1];
	uint64_t now = mq_now_ms(), window = mq_settings(sp)->dedup_window_ms;
	size_t i, len;
	int st, failed = 0;

	mq_keys_init(&ks, sp);
	if (mq_keys_open(&ks, 0) == -1)
		return errno == ENOENT ? 0 : -1;
	if (mq_keys_lock(&ks) == -1 ||
	    mq_names_read(ks.fd, DT_UNKNOWN, is_key_record, &names) == -1) {
		mq_keys_close(&ks);
		return -1;
	}
	memset(&held, 0, sizeof(held));
	for (i = 0; i < names.n; i++) {
		if (!mq_key_is_hash(names.v[i]) ||
		    mq_key_read(&ks, names.v[i], id, key, &len) == -1)
			continue;
		if ((st = mq_key_state(&ks, names.v[i], id, window, now)) ==
		    -1) {
			failed = errno;
			continue;
		}
		/*
		 * Every ID held must be known before the orphans go below:
		 * one missed would have its keys/ID removed.
		 */
		if (st == MQ_KEY_LIVE || st == MQ_KEY_RECENT) {
			if (mq_names_add(&held, id) == -1) {
				mq_names_free(&names);
				mq_names_free(&held);
				mq_keys_close(&ks);
				errno = ENOMEM;
				return -1;
			}
			continue;
		}
		if (mq_key_forget(&ks, names.v[i], id, st) == -1)
			failed = errno;
		else if (report != NULL)
			report(id, why[st]);
	}
	mq_names_sort(&held);
	for (i = 0; i < names.n; i++) {
		if (!mq_id_valid(names.v[i]) || (held.n > 0 &&
		    bsearch(&names.v[i], held.v, held.n, sizeof(*held.v),
		    name_cmp) != NULL))
			continue;
		if (unlinkat(ks.fd, names.v[i], 0) == 0) {
			if (report != NULL)
				report(names.v[i], "orphan key record removed");
		} else if (errno != ENOENT)
			failed = errno;
	}
	mq_names_free(&names);
	mq_names_free(&held);
	mq_keys_close(&ks);
	if (failed != 0) {
		errno = failed;
		return -1;
	}
	return 0;
}
