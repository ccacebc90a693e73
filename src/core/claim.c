/*
 * claim.c: claiming (mq_claim), and finding expired leases.
 *
 *	claim	new/[pN/]T/M/L/ID,A	-> cur/S/ID,DEADLINE,A+1
 *	 or an expired lease:
 *		cur/S/ID,DEADLINE,A	-> cur/S'/ID,DEADLINE',A+1
 *
 * each by mq_lease (receipt.c); a message that has had its attempts is
 * buried instead, and so is one whose time to live has passed (the
 * reaper's choice, reap.c: the expired burials of one claim share their
 * reason file), as the claim meets it: a run of expired
 * messages is passed over once, by the claim that buries it.  A claim
 * takes the oldest ID of the oldest due leaf of the highest priority's
 * tree that has one due (new/p9 ... new/p1, then new/ itself), so
 * claiming lists new/ once, then one directory per level and one leaf in
 * the tree it claims from, and descends once more into each tree above
 * it, each time as far as its first leaf not yet due; cur/S holds the
 * leases that end within second S, so expired leases are found by
 * looking at the first buckets only.  They are claimed first, whatever
 * their priority: they were handed out already.
 * A message of an ordered group is handed out only while it holds its
 * group's turn; else it is parked (group.c):
 *
 *		cur/S/ID,DEADLINE,A+1	-> groups/G/T/M/L/ID,A
 *
 * Because a rename either happens whole or not at all, two workers racing
 * for a message cannot both win: the loser gets ENOENT.
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

/*
 * A change of new/'s mtime within this long before it was looked at may
 * be followed by another in the same tick of the file system's clock,
 * which leaves it as it was (up to 2 s, on FAT): such a stamp proves
 * nothing.
 */
#define RING_TICK_MS	2000

/*
 * What a claim run shares: the lease to give, the cur/ bucket it goes to,
 * and where to report receipts.
 */
struct run {
	struct mq_spool	*sp;
	struct mq_claimer *cl;
	uint64_t	 now, deadline;
	int		 want, got;
	int		 moved;		/* out of new/ or cur/ another way */
	int		 promoted;	/* a group's head buried: its next is due */
	struct mq_bucket *bucket;	/* cl's when lazy, else own */
	struct mq_bucket own;
	mq_claim_fn	 fn;
	void		*arg;
	uint64_t	 wake;
	uint64_t	 above;	/* the first key not due in the trees passed */
	struct mq_reaper reaper;	/* its now is now's */
	int		 expired;	/* claiming a lease run out (the log says) */
};

/*
 * Claims from/name for this run, or buries it if it has had its attempts.
 * Returns 1 when claimed, 0 when someone else got there first, -1 on error.
 */
static int
claim_one(struct run *c, int from, const char *name,
    const struct mq_name *old)
{
	struct mq_name nm = *old;
	char newname[MQ_NAME_MAX], receipt[MQ_RECEIPT_MAX];

	/*
	 * conf changed since the caller read it (mq-conf paused=yes, say):
	 * no lease more, nor a burial by the old rules; the caller reads it
	 * again (cl->changed) and claims again.  Asked before each, so that
	 * nothing is claimed by the old settings once mq-conf has returned.
	 */
	if (c->cl->changed)
		return 0;
	if (mq_settings_changed(c->sp)) {
		c->cl->changed = 1;
		c->want = c->got;
		return 0;
	}
	/* Expired or spent: buried (reap.c); a head's next is due. */
	switch (mq_reap(&c->reaper, from, name, old)) {
	case -1:
		return errno == ENOENT ? 0 : -1;
	case MQ_FATE_LIVE:
		break;
	default:
		c->moved = 1;
		c->promoted |= old->group[0] != '\0';
		return 0;
	}
	/* Known before the first claim, and only once there is one. */
	if (mq_spool_real(c->sp) == -1)
		return -1;
	nm.ms = c->deadline;
	nm.attempts = old->attempts + (c->cl->uncounted ? 0 : 1);
	mq_holder_self(&nm.holder, c->now);
	if (mq_lease(c->sp, from, name, &nm, c->bucket, newname,
	    sizeof(newname)) == -1)
		return errno == ENOENT ? 0 : -1;
	/*
	 * A message of a group is handed out only if it holds the group's
	 * turn, checked after the rename so that no two claimers can both
	 * hand out messages of one group; one that does not is parked
	 * behind the head (group.c).
	 */
	if (nm.group[0] != '\0') {
		switch (mq_group_claimed(c->sp, c->bucket->fd, newname, &nm,
		    old->attempts)) {
		case -1:
			return errno == ENOENT ? 0 : -1;
		case 0:
			c->moved = 1;
			return 0;
		}
	}
	if (mq_receipt_format(receipt, sizeof(receipt), c->sp,
	    c->bucket->name, newname) == -1)
		return -1;
	c->got++;
	mq_count(c->sp, MQ_COUNT_CLAIMED, 1);
	mq_log_begin(c->sp, "claim", nm.id);
	mq_log_num("attempt", nm.attempts);
	/* Its lease before this one ran out: a worker died, or was slow. */
	if (c->expired)
		mq_log_str("expired", "yes", 3);
	mq_log_end();
	if (c->fn(c->arg, receipt, nm.id) == -1)
		return -1;
	return 1;
}

static int
u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Hands each expired lease to fn, oldest bucket first, until fn has taken
 * `limit` (fn returns 1 for taken).  Sets *wake to the earliest lease still
 * running.  Past buckets left empty are removed.
 */
int
mq_expired_scan(struct mq_spool *sp, uint64_t now, int limit,
    mq_expired_fn fn, void *arg, uint64_t *wake)
{
	struct mq_names buckets, names;
	struct mq_name nm;
	uint64_t *secs;
	size_t i, j, nb;
	int fd, r, taken = 0, done;
	char name[MQ_BUCKET_MAX];

	if (mq_names_read(sp->cur, DT_DIR, mq_is_cur_bucket, &buckets) == -1)
		return -1;
	if ((secs = reallocarray(NULL, buckets.n + 1, sizeof(*secs))) ==
	    NULL) {
		mq_names_free(&buckets);
		return -1;
	}
	nb = buckets.n;
	for (i = 0; i < nb; i++)
		mq_cur_bucket_parse(buckets.v[i], &secs[i]);
	mq_names_free(&buckets);
	qsort(secs, nb, sizeof(*secs), u64cmp);
	for (j = 0; j < nb && taken < limit; j++) {
		/* Leases in bucket S end after (S-1) seconds. */
		if ((secs[j] - 1) * 1000 >= now) {
			if ((secs[j] - 1) * 1000 + 1 < *wake)
				*wake = (secs[j] - 1) * 1000 + 1;
			break;
		}
		mq_cur_bucket_format(name, sizeof(name), secs[j]);
		if ((fd = mq_opendirat(sp->cur, name)) == -1)
			continue;
		if (mq_names_read(fd, DT_REG, NULL, &names) == -1) {
			close(fd);
			free(secs);
			return -1;
		}
		done = 1;
		for (i = 0; i < names.n; i++) {
			if (mq_name_parse(names.v[i], MQ_CUR, &nm) == -1)
				continue;
			if (nm.ms > now) {
				if (nm.ms < *wake)
					*wake = nm.ms;
				continue;
			}
			if (taken >= limit) {
				done = 0;
				break;
			}
			if ((r = fn(arg, fd, names.v[i], &nm)) == -1) {
				mq_names_free(&names);
				close(fd);
				free(secs);
				return -1;
			}
			taken += r;
		}
		mq_names_free(&names);
		close(fd);
		if (done && secs[j] * 1000 <= now)
			unlinkat(sp->cur, name, AT_REMOVEDIR);
	}
	free(secs);
	return taken;
}

static int
claim_expired(void *arg, int fd, const char *name, const struct mq_name *nm)
{
	struct run *c = arg;
	int r;

	c->expired = 1;
	r = claim_one(c, fd, name, nm);
	c->expired = 0;
	return r;
}

static int
is_new(const char *s)
{
	struct mq_name nm;

	return mq_name_parse(s, MQ_NEW, &nm) == 0;
}

/* A claimer that keeps leaves is worker mode's; mq-recv's keeps none. */
void
mq_claimer_init(struct mq_claimer *cl, int keep)
{
	memset(cl, 0, sizeof(*cl));
	cl->keep = keep;
	cl->leaf = -1;
	cl->bucket.fd = -1;
}

/* Closes what cl keeps; also in a claim, which then opens it again. */
void
mq_claimer_close(struct mq_claimer *cl)
{
	struct mq_names kept;

	mq_closefd(&cl->bucket.fd);
	if (cl->leaf == -1)
		return;
	close(cl->leaf);
	cl->leaf = -1;
	kept.v = cl->names;
	kept.n = cl->n;
	mq_names_free(&kept);
	cl->names = NULL;
}

static void
stamp_set(struct mq_claimer *cl, const struct timespec *m, uint64_t now)
{
	cl->stamp = *m;
	cl->racy = m->tv_sec < 0 || (uint64_t)m->tv_sec * 1000 +
	    m->tv_nsec / 1000000 + RING_TICK_MS > now;
}

/* Takes new/'s mtime, which every placement changes (mq_ring). */
static void
stamp(struct run *c)
{
	struct stat st;

	if (fstat(c->sp->new, &st) == -1)
		c->cl->racy = 1;
	else
		stamp_set(c->cl, &st.st_mtim, c->now);
}

static int
is_above(void *arg, int dirfd, const char *name)
{
	const unsigned *prio = arg;

	(void)dirfd;
	return mq_prio_dir(name) > (int)*prio;
}

/*
 * Whether the names kept from a leaf of priority P can still be claimed
 * in order: not while a message of a higher priority can be due.  When
 * they were kept, no tree above P had anything due; it still has not
 * before the first key not due seen in those trees, unless something was
 * placed since: every placement rings the doorbell, which sets new/'s
 * mtime.  If that changed, new/ is listed: with no tree above P, what
 * was placed comes after the kept names.  A spool without priorities
 * pays one fstat, and a listing of new/ when a send rang.
 */
static int
kept_usable(struct run *c)
{
	struct mq_claimer *cl = c->cl;
	struct stat st;

	if (cl->prio == MQ_PRIORITY_MAX)
		return 1;
	if (c->now >= cl->until || fstat(c->sp->new, &st) == -1)
		return 0;
	if (!cl->racy && st.st_mtim.tv_sec == cl->stamp.tv_sec &&
	    st.st_mtim.tv_nsec == cl->stamp.tv_nsec)
		return 1;
	if (mq_dir_each(c->sp->new, DT_DIR, is_above, &cl->prio) != 0)
		return 0;
	stamp_set(cl, &st.st_mtim, c->now);
	return 1;
}

/*
 * Claims from the names of a leaf listed by an earlier claim, in order;
 * a name another claimer took meanwhile costs one failed rename.  Returns
 * 1 when they are used up (the leaf is then listed again: what came in
 * since sorts after them), 0 when the run is complete, -1 on error.
 */
static int
claim_kept(struct run *c)
{
	struct mq_claimer *cl = c->cl;
	struct mq_name nm;
	const char *name;

	while (cl->next < cl->n && c->got < c->want) {
		name = cl->names[cl->next];
		mq_name_parse(name, MQ_NEW, &nm);
		if (claim_one(c, cl->leaf, name, &nm) == -1)
			return -1;
		/* Stopped by a change of conf: the next claim's first. */
		if (cl->changed)
			return 0;
		cl->next++;
	}
	if (cl->next < cl->n)
		return 0;
	mq_claimer_close(cl);
	return c->got < c->want;
}

/*
 * Claims from one due leaf, of priority prio, in ID order.  Returns 1 when
 * the leaf was used up, 0 when the run is complete, -1 on error.
 */
static int
claim_leaf(struct run *c, int leaf, unsigned prio)
{
	struct mq_claimer *cl = c->cl;
	struct mq_names names;
	struct mq_name nm;
	size_t i;

	/* A leaf removed since it was opened was empty: used up. */
	if (mq_names_read(leaf, DT_REG, is_new, &names) == -1)
		return errno == ENOENT ? 1 : -1;
	mq_names_sort(&names);
	for (i = 0; i < names.n && c->got < c->want; i++) {
		mq_name_parse(names.v[i], MQ_NEW, &nm);
		if (claim_one(c, leaf, names.v[i], &nm) == -1) {
			mq_names_free(&names);
			return -1;
		}
		/* Stopped by a change of conf: kept as the next claim's first. */
		if (cl->changed)
			break;
	}
	if (i < names.n && cl->keep &&
	    (cl->leaf = fcntl(leaf, F_DUPFD_CLOEXEC, 0)) != -1) {
		cl->names = names.v;
		cl->n = names.n;
		cl->next = i;
		cl->prio = prio;
		cl->until = c->above;
		return 0;
	}
	mq_names_free(&names);
	return c->got < c->want;
}

/*
 * The claim's step of the descent of new/: the trees from the highest
 * priority down, every level in key order; a directory not yet due (a
 * level's key is the first of its range) ends its tree (every later one
 * is later still) and the walk goes on with the next, and a leaf used up
 * is removed.  The wake-up that a level's key gives may come before its
 * first leaf is due: the claim then made looks further.
 */
static int
claim_step(void *arg, int dirfd, const char *name, int digits, uint64_t key,
    unsigned prio)
{
	struct run *c = arg;

	(void)dirfd;
	(void)name;
	(void)digits;
	(void)prio;
	if (key > c->now) {
		if (key < c->wake)
			c->wake = key;
		if (key < c->above)
			c->above = key;
		return MQ_TREE_LATER;
	}
	return MQ_TREE_INTO;
}

/* A leaf the claim went into: used up, or the claim is done. */
static int
claim_into(void *arg, int fd, uint64_t key, unsigned prio)
{
	int r;

	(void)key;
	if ((r = claim_leaf(arg, fd, prio)) == -1)
		return -1;
	return r == 1 ? MQ_TREE_USED : MQ_TREE_STOP;
}

/* Claims up to limit expired leases for the run c. */
static int
expired(struct run *c, int limit)
{
	uint64_t wake = UINT64_MAX;
	int r;

	r = mq_expired_scan(c->sp, c->now, limit, claim_expired, c, &wake);
	if (wake < c->wake)
		c->wake = wake;
	return r;
}

/*
 * Claims up to want visible messages with a lease of lease_ms: expired
 * leases first (they have waited longest), then new/ by priority, oldest
 * first within one; those past their time to live or at max attempts
 * (cl->max, 0: the spool's) are buried (reap.c).  fn is called with each
 * receipt as soon as its claim is made.  *wake is set to when something
 * next becomes visible (UINT64_MAX: nothing known).
 * With cl->keep, what is left of the leaf it listed is kept in cl for the
 * next call, so that one claim at a time does not list and sort a whole
 * leaf each time; anything sent since at its priority sorts after those
 * names, as new leaves are keyed later than a due one, and anything of a
 * higher priority is claimed first (kept_usable).  With cl->lazy, the
 * bucket of cur/ the last lease went to is kept open for the next call.
 * With cl->ring, a call that claimed or buried anything rings the
 * doorbell.  A change of the spool's settings since the caller read them
 * stops it before its next lease, with cl->changed set: the caller reads
 * them again (a pause, or a new lease or max-attempts) and claims again,
 * from the name it stopped at when it keeps names (oldest first still).
 * Returns the number claimed or -1.
 */
int
mq_claim(struct mq_spool *sp, struct mq_claimer *cl, int want,
    uint64_t lease_ms, mq_claim_fn fn, void *arg, uint64_t *wake)
{
	struct mq_tree t = { .fn = claim_step, .leaf = claim_into, .sorted = 1,
	    .remove = 1 };
	struct run c;
	int r;

	memset(&c, 0, sizeof(c));
	cl->changed = 0;
	c.sp = sp;
	c.cl = cl;
	c.now = mq_now_ms();
	c.deadline = c.now + lease_ms;
	c.want = want;
	/*
	 * A lazy claimer keeps its bucket of cur/ open too: a worker's
	 * leases mostly fall in the one of its last claim.  One removed
	 * since (empty, by a settlement or a sweep) costs a failed rename
	 * and is made again (mq_lease).
	 */
	c.own.fd = -1;
	c.bucket = cl->lazy ? &cl->bucket : &c.own;
	c.fn = fn;
	c.arg = arg;
	c.wake = UINT64_MAX;
	c.above = UINT64_MAX;
	mq_reaper_init(&c.reaper, sp, cl->max);
	c.reaper.now = c.now;
	t.arg = &c;
	t.now = c.now;
	/*
	 * The leases of holders gone end first (a failure to look costs
	 * only their wait for their deadline); then cur/ is listed, at every
	 * claim: a lease made or shortened by another process since the
	 * last claim is known only to a listing, and expired leases go
	 * first.
	 */
	mq_holder_enter(sp);
	(void)mq_orphans(sp, c.now, 0, 0);
	r = expired(&c, want);
	if (r != -1 && c.got < c.want && cl->leaf != -1) {
		if (kept_usable(&c))
			r = claim_kept(&c);
		else
			mq_claimer_close(cl);
	}
	if (r != -1 && c.got < c.want) {
		/* Before the walk: what is placed after it changes new/. */
		if (cl->keep)
			stamp(&c);
		r = mq_tree_walk(&t, sp->new);
	}
	/*
	 * Burying the head of a group made its next visible from now, in a
	 * leaf this walk may have passed: it is looked for again, so that a
	 * claim does not come back empty-handed while a message waits.
	 */
	while (r != -1 && c.got < c.want && c.promoted) {
		c.promoted = 0;
		c.now = t.now = c.reaper.now = mq_now_ms();
		r = mq_tree_walk(&t, sp->new);
	}
	mq_closefd(&c.own.fd);
	/* Room was made: senders waiting for it (max-depth) count again. */
	if (cl->ring && (c.got > 0 || c.moved))
		(void)mq_ring(sp);
	mq_reaper_end(&c.reaper);
	/* A holder alive now may be gone in a moment: looked at again. */
	if (sp->holders_live > 0 && c.wake != UINT64_MAX &&
	    c.wake > c.now + MQ_ORPHANS_EVERY_MS)
		c.wake = c.now + MQ_ORPHANS_EVERY_MS;
	*wake = c.wake;
	return r == -1 ? -1 : c.got;
}
