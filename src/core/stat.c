/*
 * stat.c: counting a spool's messages by state, for mq-stat.  It only
 * reads directories and stats files: it takes no lock, moves nothing and
 * so never holds up a worker.  A message that moves while it is counted
 * may be counted in both states or in neither; every count is a snapshot
 * of one directory at a time.
 *
 * Every leaf of new/ and bucket of cur/ is read once and names are not
 * kept (memory does not grow with depth).  Names alone tell the states
 * and ages, each message's state given by look.c's one classification
 * (mq_state_waiting, mq_state_leased), as mq-ls lists it; a file is
 * stat'ed only when its size is asked for (mq-stat -b), which on a deep
 * spool costs more than the rest of the count.  A waiting message past
 * its time to live (its name and the spool's ttl tell) is counted as
 * dead, as the next claim or sweep will bury it: it is never ready.  The
 * messages parked behind the head of an ordered group (groups/G/,
 * group.c) are counted as blocked, a head that a crash left half way
 * through its burial as dead.
 *
 * A watcher that counts again and again (mq-top) keeps what each leaf of
 * new/ and dead/ held in memory (struct mq_stat_cache), keyed by the
 * directory's inode, mtime and ctime, and lists only the leaves changed
 * since: a spool of a million messages is some thousand leaves, of which
 * a busy sender and its consumers change a few.  Every rename in or out
 * and every unlink sets a directory's mtime; a change made within the
 * same tick of the file system's clock as the listing would keep the
 * mtime seen, so a listing is kept only for a directory whose mtime was
 * STABLE_MS older than the clock before it was listed (a file system
 * served by another host included, its clock that far from ours at
 * most), and listed again by every count until then.  A leaf's count
 * holds what makes its state as of any now: its due time (its key), the
 * earliest of its messages' sends (the age of the oldest ready one and
 * the spool's ttl) and the earliest of their own expiries; it is used
 * only while none of them can have expired.  Nothing is written into the
 * spool: the cache is the caller's.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define STABLE_MS	2000
#define KEPT_MAX	(1 << 22)	/* leaves: some 4 billion messages */
#define NEVER		UINT64_MAX

struct counter {
	struct mq_stats	*st;
	uint64_t	 now;
	uint64_t	 ttl;		/* the spool's */
	int		 parked;	/* this leaf is of a group's tree */
	uint64_t	 key;		/* its key: when it is due */
	int		 bytes;		/* stat each file for st->bytes */
	struct mq_stat_cache *cache;	/* or NULL */
	uint64_t	 t0;		/* the clock before the count */
	struct mq_stat_leaf *leaf;	/* what the leaf listed holds */
};

/* Adds a message's size to st->bytes, when asked: how much. */
static uint64_t
add_bytes(struct counter *c, int dirfd, const char *name)
{
	struct stat sb;

	if (!c->bytes ||
	    fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == -1)
		return 0;
	c->st->bytes += sb.st_size;
	return sb.st_size;
}

/* A message of the leaf being listed, in its count for the cache. */
static void
summed(struct counter *c, const struct mq_name *nm, uint64_t size)
{
	struct mq_stat_leaf *l = c->leaf;
	uint64_t base = nm->sent != 0 ? nm->sent : mq_id_ms(nm->id);

	l->n++;
	l->bytes += size;
	if (base < l->base)
		l->base = base;
	if (nm->ttl != 0 && base < NEVER - nm->ttl && base + nm->ttl < l->own)
		l->own = base + nm->ttl;
}

/* Dead as of t (its expiry, or now): past its time to live, or buried. */
static void
count_dead_at(struct counter *c, uint64_t t)
{
	c->st->dead++;
	if (t < c->st->oldest_dead_ms)
		c->st->oldest_dead_ms = t;
}

/* A waiting message, in the state look.c gives it (mq_state_waiting). */
static int
count_new(void *arg, int dirfd, const char *name)
{
	struct counter *c = arg;
	struct mq_name nm;
	uint64_t ms, t, size;

	if (mq_name_parse(name, MQ_NEW, &nm) == -1)
		return 0;
	size = add_bytes(c, dirfd, name);
	if (c->leaf != NULL)
		summed(c, &nm, size);
	switch (mq_state_waiting(&nm, c->parked, c->key, c->now, c->ttl,
	    &ms)) {
	case MQ_LOOK_DEAD:
		count_dead_at(c, ms);
		break;
	case MQ_LOOK_BLOCKED:
		c->st->blocked++;
		break;
	case MQ_LOOK_DELAYED:
		c->st->delayed++;
		break;
	default:
		c->st->ready++;
		/*
		 * Ready since it last became so: its send or redrive (sent,
		 * else the ID's time), or its leaf's key when that is later,
		 * a release or the end of a delay.  A leaf filled for a
		 * while may have a key a little earlier than the message.
		 */
		t = nm.sent != 0 ? nm.sent : mq_id_ms(nm.id);
		if (c->key > t)
			t = c->key;
		if (t < c->st->oldest_ready_ms)
			c->st->oldest_ready_ms = t;
	}
	return 0;
}

/* Counts in the sub-directory name of dirfd; one removed meanwhile is empty. */
static int
count_in(int dirfd, const char *name, int type,
    int (*fn)(void *, int, const char *), void *arg)
{
	int fd, r;

	if ((fd = mq_opendirat(dirfd, name)) == -1)
		return errno == ENOENT ? 0 : -1;
	r = mq_dir_each(fd, type, fn, arg);
	close(fd);
	return r == -1 && errno == ENOENT ? 0 : r;
}

static int
leaf_cmp(const void *a, const void *b)
{
	const struct mq_stat_leaf *x = a, *y = b;

	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* The count kept of a directory as it is now (sb), or NULL. */
static const struct mq_stat_leaf *
kept(const struct counter *c, unsigned prio, uint64_t key,
    const struct stat *sb)
{
	const struct mq_stat_leaf *e;
	struct mq_stat_leaf k;

	if (c->cache->n == 0)
		return NULL;
	k.prio = prio;
	k.key = key;
	e = bsearch(&k, c->cache->v, c->cache->n, sizeof(k), leaf_cmp);
	if (e == NULL || e->ino != sb->st_ino ||
	    e->mtime.tv_sec != sb->st_mtim.tv_sec ||
	    e->mtime.tv_nsec != sb->st_mtim.tv_nsec ||
	    e->ctime.tv_sec != sb->st_ctim.tv_sec ||
	    e->ctime.tv_nsec != sb->st_ctim.tv_nsec ||
	    (c->bytes && !e->with_bytes))
		return NULL;
	return e;
}

/* Whether none of the leaf's messages can have expired by now. */
static int
alive(const struct counter *c, const struct mq_stat_leaf *l)
{
	if (c->now >= l->own)
		return 0;
	return c->ttl == 0 || l->base == NEVER || (l->base < NEVER - c->ttl &&
	    c->now < l->base + c->ttl);
}

/*
 * Whether a listing of a directory whose mtime is sb's can be kept: its
 * mtime is far enough before the listing (see the head of this file).
 */
static int
stable(const struct counter *c, const struct stat *sb)
{
	uint64_t ms = (uint64_t)sb->st_mtim.tv_sec * 1000 +
	    sb->st_mtim.tv_nsec / 1000000;

	return sb->st_mtim.tv_sec >= 0 && c->t0 > STABLE_MS &&
	    ms < c->t0 - STABLE_MS;
}

/* Keeps a directory's count for the next count; none when out of memory. */
static void
keep(struct counter *c, const struct mq_stat_leaf *l)
{
	struct mq_stat_cache *k = c->cache;
	struct mq_stat_leaf *v;

	if (k->nnext == k->capnext) {
		if ((v = mq_grow(k->next, &k->capnext, k->nnext, KEPT_MAX,
		    sizeof(*v))) == NULL)
			return;
		k->next = v;
	}
	k->next[k->nnext++] = *l;
}

/*
 * A leaf counted as kept: its messages, none past its time to live, all
 * in the state look.c gives a message of it (the earliest sent stands for
 * them), the oldest ready since its send or the leaf's key.
 */
static void
count_kept(struct counter *c, const struct mq_stat_leaf *e)
{
	struct mq_name nm;
	uint64_t ms, t;

	if (c->bytes)
		c->st->bytes += e->bytes;
	if (e->n == 0)
		return;
	memset(&nm, 0, sizeof(nm));
	nm.sent = e->base;
	switch (mq_state_waiting(&nm, 0, e->key, c->now, 0, &ms)) {
	case MQ_LOOK_DELAYED:
		c->st->delayed += e->n;
		break;
	default:
		c->st->ready += e->n;
		t = e->base > e->key ? e->base : e->key;
		if (t < c->st->oldest_ready_ms)
			c->st->oldest_ready_ms = t;
	}
}

/* A leaf of new/ with a cache: counted as kept, or listed (and kept). */
static int
count_leaf(struct counter *c, int dirfd, const char *name, uint64_t key,
    unsigned prio)
{
	const struct mq_stat_leaf *e;
	struct mq_stat_leaf l;
	struct counter sub = *c;
	struct stat sb;
	int fd, r, saved;

	if ((fd = mq_opendirat(dirfd, name)) == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &sb) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	if ((e = kept(c, prio, key, &sb)) != NULL && alive(c, e)) {
		close(fd);
		count_kept(c, e);
		keep(c, e);
		return 0;
	}
	memset(&l, 0, sizeof(l));
	l.prio = prio;
	l.key = key;
	l.ino = sb.st_ino;
	l.mtime = sb.st_mtim;
	l.ctime = sb.st_ctim;
	l.base = l.own = NEVER;
	l.with_bytes = c->bytes;
	sub.parked = 0;
	sub.key = key;
	sub.leaf = &l;
	r = mq_dir_each(fd, DT_REG, count_new, &sub);
	saved = errno;
	close(fd);
	if (r == -1) {
		errno = saved;
		return saved == ENOENT ? 0 : -1;
	}
	if (stable(c, &sb) && alive(c, &l))
		keep(c, &l);
	return 0;
}

/*
 * stat's step of the descent of new/, every priority's tree alike: a leaf
 * is ready once its key is due.
 */
static int
count_step(void *arg, int dirfd, const char *name, int digits, uint64_t key,
    unsigned prio)
{
	struct counter *c = arg;
	struct counter sub = *c;

	if (digits != MQ_KEY_DIGITS)
		return MQ_TREE_INTO;
	if (c->cache != NULL)
		return count_leaf(c, dirfd, name, key, prio) == -1 ? -1 :
		    MQ_TREE_NEXT;
	sub.parked = 0;
	sub.key = key;
	return count_in(dirfd, name, DT_REG, count_new, &sub) == -1 ? -1 :
	    MQ_TREE_NEXT;
}

/* A group's parked messages are blocked: waiting, not claimable yet. */
static int
count_parked(void *arg, int leaf, const char *name, const struct mq_name *nm,
    uint64_t key)
{
	struct counter *c = arg;
	int r;

	(void)nm;
	c->parked = 1;
	c->key = key;
	r = count_new(c, leaf, name);
	c->parked = 0;
	return r;
}

/*
 * A head a crash left half way through its burial (leaving.NAME.dead,
 * group.c) is dead, as mq-ls lists it; its time of death is the one the
 * burial's end will give it: now.
 */
static int
count_leaving(void *arg, int gfd, const char *name, const struct mq_name *nm)
{
	struct counter *c = arg;

	(void)nm;
	count_dead_at(c, c->now);
	add_bytes(c, gfd, name);
	return 0;
}

/* What the groups hold: one walk of them all (mq_group_parked). */
static int
count_groups(struct mq_spool *sp, struct counter *c)
{
	struct mq_parked_walk w = { .fn = count_parked,
	    .leaving = count_leaving, .arg = c, .as_read = 1 };

	return mq_group_parked(sp, &w);
}

/* A lease, in the state look.c gives it (mq_state_leased). */
static int
count_cur(void *arg, int dirfd, const char *name)
{
	struct counter *c = arg;
	struct mq_name nm;
	uint64_t ms;

	if (mq_name_parse(name, MQ_CUR, &nm) == -1)
		return 0;
	add_bytes(c, dirfd, name);
	switch (mq_state_leased(&nm, c->now, c->ttl, &ms)) {
	case MQ_LOOK_INFLIGHT:
		c->st->in_flight++;
		break;
	case MQ_LOOK_DEAD:
		count_dead_at(c, ms);
		break;
	default:
		c->st->expired++;
	}
	return 0;
}

static int
count_bucket(void *arg, int dirfd, const char *name)
{
	uint64_t secs;

	if (mq_cur_bucket_parse(name, &secs) == -1)
		return 0;
	return count_in(dirfd, name, DT_REG, count_cur, arg);
}

static int
count_dead(void *arg, int dirfd, const char *name)
{
	struct counter *c = arg;
	struct mq_name nm;

	if (mq_name_parse(name, MQ_DEAD, &nm) == -1)
		return 0;
	count_dead_at(c, nm.ms);
	add_bytes(c, dirfd, name);
	return 0;
}

/*
 * dead/, into st: listed, or with a cache counted as kept when unchanged
 * (its letters never change state; their count is dead/'s key's).
 */
static int
count_dead_dir(struct mq_spool *sp, struct counter *c)
{
	struct mq_stat_cache *k = c->cache;
	struct mq_stat_leaf *e = k != NULL ? &k->dead : NULL;
	struct mq_stats d;
	struct counter dc = *c;
	struct stat sb;

	memset(&d, 0, sizeof(d));
	d.oldest_ready_ms = d.oldest_dead_ms = NEVER;
	dc.st = &d;
	if (k != NULL && fstat(sp->dead, &sb) == -1)
		return -1;
	if (k != NULL && k->have_dead && e->ino == sb.st_ino &&
	    e->mtime.tv_sec == sb.st_mtim.tv_sec &&
	    e->mtime.tv_nsec == sb.st_mtim.tv_nsec &&
	    e->ctime.tv_sec == sb.st_ctim.tv_sec &&
	    e->ctime.tv_nsec == sb.st_ctim.tv_nsec &&
	    (!c->bytes || e->with_bytes)) {
		d.dead = e->n;
		d.oldest_dead_ms = e->base;
		d.bytes = e->bytes;
	} else {
		if (mq_dir_each(sp->dead, DT_REG, count_dead, &dc) == -1)
			return -1;
		if (k != NULL) {
			k->have_dead = stable(c, &sb);
			e->ino = sb.st_ino;
			e->mtime = sb.st_mtim;
			e->ctime = sb.st_ctim;
			e->n = d.dead;
			e->base = d.oldest_dead_ms;
			e->bytes = d.bytes;
			e->with_bytes = c->bytes;
		}
	}
	c->st->dead += d.dead;
	if (d.oldest_dead_ms < c->st->oldest_dead_ms)
		c->st->oldest_dead_ms = d.oldest_dead_ms;
	if (c->bytes)
		c->st->bytes += d.bytes;
	return 0;
}

/*
 * Counts every state of the spool as of now (ms); ttl_ms is the spool's
 * time to live (0: none), past which a waiting message counts as dead;
 * st->bytes is counted only with bytes set.  With a cache (else NULL),
 * the leaves of new/ and dead/ unchanged since the last count with it are
 * not listed again (see above); one cache is for one spool.
 */
int
mq_stat_kept(struct mq_spool *sp, struct mq_stat_cache *cache, uint64_t now,
    uint64_t ttl_ms, int bytes, struct mq_stats *st)
{
	struct counter c;
	struct mq_tree t = { .fn = count_step, .arg = &c };
	int r;

	memset(st, 0, sizeof(*st));
	st->oldest_ready_ms = st->oldest_dead_ms = UINT64_MAX;
	memset(&c, 0, sizeof(c));
	c.st = st;
	c.now = now;
	c.ttl = ttl_ms;
	c.bytes = bytes;
	c.cache = cache;
	c.t0 = mq_now_ms();
	if (cache != NULL) {
		if (cache->dev != sp->dev || cache->ino != sp->ino) {
			mq_stat_cache_free(cache);
			cache->dev = sp->dev;
			cache->ino = sp->ino;
		}
		cache->nnext = 0;
	}
	r = mq_spool_need(sp, 0) == -1 ||
	    mq_tree_walk(&t, sp->new) == -1 ||
	    mq_dir_each(sp->cur, DT_DIR, count_bucket, &c) == -1 ||
	    count_dead_dir(sp, &c) == -1 ||
	    count_groups(sp, &c) == -1 ? -1 : 0;
	if (cache != NULL && r == 0) {
		/* The next count looks leaves up by priority and key. */
		if (cache->nnext > 0)
			qsort(cache->next, cache->nnext, sizeof(*cache->next),
			    leaf_cmp);
		free(cache->v);
		cache->v = cache->next;
		cache->n = cache->nnext;
		cache->next = NULL;
		cache->nnext = cache->capnext = 0;
	}
	return r;
}

int
mq_stat(struct mq_spool *sp, uint64_t now, uint64_t ttl_ms, int bytes,
    struct mq_stats *st)
{
	return mq_stat_kept(sp, NULL, now, ttl_ms, bytes, st);
}

/* Forgets what a cache kept (it may be used again, for any spool). */
void
mq_stat_cache_free(struct mq_stat_cache *cache)
{
	free(cache->v);
	free(cache->next);
	memset(cache, 0, sizeof(*cache));
}
