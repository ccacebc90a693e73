/*
 * depth.c: how many messages wait in new/ (ready and delayed), for a
 * spool's max-depth, and making room by dead-lettering the oldest.
 * Messages parked behind the head of an ordered group (groups/, group.c)
 * are counted too, by listing their leaves (mq_group_count).
 *
 *	count	new/[pN/]T/M/L/		tmp/ID,depth -> tmp/.depth	(mq_depth)
 *		new/[pN/]T/M/L/ID,A[,S,T]	-> dead/ID,DIED,A[,T]
 *					(the expired ones it meets)
 *	drop	new/[pN/]T/M/L/ID,A[,S,T]	-> dead/ID,DIED,A[,T]	("maxlen")
 *
 * Both go over every priority's tree, from priority 0 up: a drop takes
 * the least urgent first, the oldest first within a priority.
 *
 * A message past its time to live (the reaper's: reap.c) is not waiting: it is
 * dead, not yet buried.  A count does not count it, and buries those it
 * meets in the leaves it lists, with the reason "ttl", as a claim
 * does: so the room it did not count is real, a sender waiting for room
 * (mq-send -w) gets it without a consumer, and the cache stays true.
 *
 * A count answers "are there fewer than limit?", so it stops at the leaf
 * that reaches limit: its cost is bounded by max-depth, never by the queue.
 * Listing a leaf costs about a thousand entries, and a full spool has
 * max-depth / 1024 leaves or more, of which a send changes one or two: so
 * the count of each leaf is kept in the spool's depth cache, tmp/.depth,
 * and a count only stats each leaf (no follow) and lists those whose
 * inode or modification time is not the one the cache has for it.  Every
 * change of a leaf's entries (a rename in or out, an unlink) sets its
 * mtime, so a leaf whose mtime is unchanged holds what it held when it
 * was listed; unless it changed again within the same tick of the file
 * system's clock as that listing (see stamp()).
 *
 * The listing counts regular files (by their directory entry's type) whose
 * names parse as messages', as mq-stat does; a stat per message would cost
 * more than the listing.  A count is a snapshot: senders and receivers move
 * messages meanwhile, which is why mq-send counts again after each chunk
 * (mq-send(1) gives the bound that follows).
 *
 * An unchanged leaf's messages can still expire, so each entry also keeps
 * when the first of them can: the earliest SENT among them (the spool's
 * ttl counts from it) and the earliest own expiry (SENT + own ttl) among
 * those with an own ttl; neither depends on the spool's ttl, which can
 * change.  An entry is trusted only while now is before both (the first
 * with the spool's ttl added; without a ttl it does not matter).
 *
 * The cache is text: a header "mq-depth 3 N", then N lines "PRIO KEY INO
 * MTIME_S MTIME_NS SENT OWN COUNT", by priority (the leaf's tree) and
 * key, ascending; SENT and OWN in ms since the epoch, 0 for none (an
 * empty leaf, no own ttl).  Leaves of two priorities can have one key.  It is a
 * cache, not a record: written without a sync, it is used only when it
 * parses whole, and an entry only for a leaf whose inode and mtime are
 * still those it names and whose messages cannot have expired since;
 * anything else (missing, short, corrupt, another version, not a regular
 * file) counts as empty and is written anew.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define CACHE_MAGIC	"mq-depth 3 "
/*
 * The most leaves cached, some 64 million messages: the oldest are kept,
 * where counts start; leaves beyond are listed by every count.
 */
#define CACHE_MAX	65536
/*
 * A priority (1), a key (11), 6 numbers of up to 20 digits, 7 spaces and
 * a newline.
 */
#define CACHE_LINE_MAX	140

struct leafcount {
	uint64_t prio;
	uint64_t key;
	uint64_t ino;
	uint64_t sec;
	uint64_t nsec;
	uint64_t sent;	/* the earliest SENT of its messages; NEVER: none */
	uint64_t own;	/* the earliest own expiry of its messages; NEVER */
	uint64_t n;
};

#define NEVER	UINT64_MAX

struct counting {
	struct mq_spool	*sp;
	uint64_t	 limit;
	uint64_t	 n;
	struct mq_reaper reaper;	/* expiry, the spool's ttl, now */
	char		(*dead)[MQ_NAME_MAX];	/* a leaf's expired, to bury */
	size_t		 ndead, deadcap;
	struct leafcount *old;	/* the cache as read, by key */
	size_t		 nold, next;
	struct leafcount *v;	/* the cache to write, by key */
	size_t		 nv, cap;
	uint64_t	 lastprio;	/* the leaf the count stopped at */
	uint64_t	 last;
	int		 stopped;
	int		 stamped;	/* stamp() was called */
	struct mq_tmpfile tf;	/* the cache to be, from stamp(); fd -1: none */
	struct timespec	 t0;	/* its mtime: the clock before any listing */
};

/* Parses a decimal or (hex) 11-digit key up to c; NULL if not one. */
static const char *
number(const char *p, int c, int hex, uint64_t *v)
{
	const char *start = p;
	unsigned d;

	*v = 0;
	for (; *p != c; p++) {
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (hex && *p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else
			return NULL;
		if (hex ? p - start >= MQ_KEY_DIGITS :
		    *v > (UINT64_MAX - d) / 10)
			return NULL;
		*v = *v * (hex ? 16 : 10) + d;
	}
	if (p == start || (hex && p - start != MQ_KEY_DIGITS))
		return NULL;
	return p + 1;
}

/* Whether leaf (pa, ka) comes before leaf (pb, kb): a count's order. */
static int
precedes(uint64_t pa, uint64_t ka, uint64_t pb, uint64_t kb)
{
	return pa < pb || (pa == pb && ka < kb);
}

/*
 * Parses the cache text buf (NUL-terminated, len bytes) into c->old; a
 * cache that is not whole and well-formed is left empty.  -1 (ENOMEM)
 * when memory ran out.
 */
static int
cache_parse(struct counting *c, const char *buf, size_t len)
{
	struct leafcount *v, *e;
	const char *p = buf;
	uint64_t n, i;

	if (strlen(buf) != len || strncmp(p, CACHE_MAGIC,
	    strlen(CACHE_MAGIC)) != 0 ||
	    (p = number(p + strlen(CACHE_MAGIC), '\n', 0, &n)) == NULL ||
	    n > CACHE_MAX)
		return 0;
	if ((v = reallocarray(NULL, n > 0 ? n : 1, sizeof(*v))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		e = &v[i];
		if ((p = number(p, ' ', 0, &e->prio)) == NULL ||
		    e->prio > MQ_PRIORITY_MAX ||
		    (p = number(p, ' ', 1, &e->key)) == NULL ||
		    (p = number(p, ' ', 0, &e->ino)) == NULL ||
		    (p = number(p, ' ', 0, &e->sec)) == NULL ||
		    (p = number(p, ' ', 0, &e->nsec)) == NULL ||
		    (p = number(p, ' ', 0, &e->sent)) == NULL ||
		    (p = number(p, ' ', 0, &e->own)) == NULL ||
		    (p = number(p, '\n', 0, &e->n)) == NULL ||
		    e->nsec >= 1000000000 || (i > 0 &&
		    !precedes(v[i - 1].prio, v[i - 1].key, e->prio, e->key)))
			break;
		if (e->sent == 0)
			e->sent = NEVER;
		if (e->own == 0)
			e->own = NEVER;
	}
	if (i < n || p != buf + len) {
		free(v);
		return 0;
	}
	c->old = v;
	c->nold = n;
	return 0;
}

/*
 * Reads tmp/.depth, if it is a regular file of a sane size; one that
 * cannot be read is none.  -1 (ENOMEM) when memory ran out.
 */
static int
cache_read(struct counting *c)
{
	struct stat st;
	char *buf;
	ssize_t r;
	int fd, rc = 0;

	if ((fd = openat(c->sp->tmp, MQ_DEPTH_CACHE, O_RDONLY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC)) == -1)
		return 0;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > (off_t)CACHE_MAX * CACHE_LINE_MAX) {
		close(fd);
		return 0;
	}
	if ((buf = malloc(st.st_size + 1)) == NULL) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	/* Replaced, never changed in place: one read has it all. */
	r = read(fd, buf, st.st_size + 1);
	close(fd);
	if (r == st.st_size) {
		buf[r] = '\0';
		rc = cache_parse(c, buf, r);
	}
	free(buf);
	return rc;
}

static int
cache_add(struct counting *c, const struct leafcount *e)
{
	struct leafcount *v;

	if ((v = mq_grow(c->v, &c->cap, c->nv, SIZE_MAX, sizeof(*v))) == NULL)
		return -1;
	c->v = v;
	c->v[c->nv++] = *e;
	return 0;
}

static int
cache_same(const struct leafcount *a, const struct leafcount *b)
{
	return a->prio == b->prio && a->key == b->key && a->ino == b->ino &&
	    a->sec == b->sec &&
	    a->nsec == b->nsec && a->sent == b->sent && a->own == b->own &&
	    a->n == b->n;
}

/*
 * Whether none of the messages of a leaf cached as e can have expired by
 * now, with the spool's ttl as it is now.  Two comparisons: without a ttl
 * anywhere, a trusted leaf still costs one stat and nothing more.
 */
static int
alive(const struct counting *c, const struct leafcount *e)
{
	uint64_t ttl = c->reaper.ttl;

	if (c->reaper.now >= e->own)
		return 0;
	return ttl == 0 || e->sent == NEVER || (e->sent < NEVER - ttl &&
	    c->reaper.now < e->sent + ttl);
}

/*
 * Takes the time before a listing, from the file system's own clock, by
 * creating the file the cache will be written to, tmp/ID,depth: its mtime
 * is t0.
 *
 * Why: a leaf's mtime has the granularity of that clock's tick (a few ms,
 * a second, two on some file systems), so a leaf changed in the same tick
 * as it was listed, after the listing, keeps the mtime the listing saw,
 * and its count would be trusted though it is wrong ("racily clean", as
 * git's index has it).  Any change after t0 gets an mtime of t0 or later;
 * so a count is kept only for a leaf whose mtime, taken before its
 * listing, is strictly older than t0 taken before that listing too: a
 * later change must then give the leaf another mtime.  One not older is
 * listed again by every count until it is.  Taking t0 from the file
 * system, not from clock_gettime, keeps this true where the file system
 * is served by another host.  Without the file (no room, no permission)
 * nothing listed is kept.
 */
static void
stamp(struct counting *c)
{
	struct stat st;
	char id[MQ_ID_LEN + 1], name[MQ_NAME_MAX];

	c->stamped = 1;
	mq_id_new(id);
	snprintf(name, sizeof(name), "%s%s", id, MQ_DEPTH_TMP);
	if (mq_tmp_create(&c->tf, c->sp, name) == -1)
		return;
	if (fstat(c->tf.fd, &st) == -1) {
		mq_tmp_abort(&c->tf);
		return;
	}
	c->t0 = st.st_mtim;
}

/* Whether a leaf last changed at mtime m can be trusted to have no other
 * change since a listing started after t0 (see stamp()). */
static int
older(const struct counting *c, const struct timespec *m)
{
	return c->tf.fd != -1 && m->tv_sec >= 0 && (m->tv_sec <
	    c->t0.tv_sec || (m->tv_sec == c->t0.tv_sec &&
	    m->tv_nsec < c->t0.tv_nsec));
}

/* Keeps the name of an expired message, to be buried after the listing. */
static int
dead_add(struct counting *c, const char *name)
{
	char (*v)[MQ_NAME_MAX];

	if (strlen(name) >= MQ_NAME_MAX)
		return 0;
	if ((v = mq_grow(c->dead, &c->deadcap, c->ndead, SIZE_MAX,
	    sizeof(*v))) == NULL)
		return -1;
	c->dead = v;
	memcpy(c->dead[c->ndead++], name, strlen(name) + 1);
	return 0;
}

/*
 * Buries the expired messages that the listing of the leaf fd met, with
 * the reason "ttl"; one that someone else took first (ENOENT: a
 * claim, a sweep, another count) is gone all the same.  After the
 * listing, so that the listing does not see its own directory change.
 */
static int
dead_bury(struct counting *c, int fd)
{
	struct mq_name nm;
	size_t i;

	for (i = 0; i < c->ndead; i++) {
		if (mq_name_parse(c->dead[i], MQ_NEW, &nm) == -1)
			continue;
		if (mq_reap(&c->reaper, fd, c->dead[i], &nm) == -1 &&
		    errno != ENOENT)
			return -1;
	}
	return 0;
}

/*
 * Lists parent/name, a leaf, into e: its inode, mtime, the messages that
 * have not expired, and when the first of those can; buries those that
 * have.  Its stat is taken from the directory opened, before it is read.
 * A name is parsed, not looked at: no system call per message.  Returns
 * 0, 1 if it is gone (it was empty), or -1 on error.
 */
static int
leaf_list(struct counting *c, int parent, const char *name,
    struct leafcount *e, struct timespec *mtime)
{
	struct stat st;
	struct dirent *de;
	struct mq_name nm;
	DIR *d;
	int fd, saved;

	if ((fd = mq_opendirat(parent, name)) == -1)
		return errno == ENOENT ? 1 : -1;
	if (fstat(fd, &st) == -1 || (d = fdopendir(fd)) == NULL) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	e->ino = st.st_ino;
	*mtime = st.st_mtim;
	e->n = 0;
	e->sent = e->own = NEVER;
	c->ndead = 0;
	saved = 0;
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' ||
		    (de->d_type != DT_REG && de->d_type != DT_UNKNOWN) ||
		    mq_name_parse(de->d_name, MQ_NEW, &nm) == -1)
			continue;
		if (mq_fate(&c->reaper, &nm) == MQ_FATE_EXPIRED) {
			if (dead_add(c, de->d_name) == -1) {
				saved = errno;
				break;
			}
			continue;
		}
		e->n++;
		if (nm.sent < e->sent)
			e->sent = nm.sent;
		if (nm.ttl != 0 && nm.sent + nm.ttl < e->own)
			e->own = nm.sent + nm.ttl;
	}
	/* Removed while being read: it was empty. */
	if (saved == 0)
		saved = de == NULL && errno != ENOENT ? errno : 0;
	if (saved == 0 && dead_bury(c, dirfd(d)) == -1)
		saved = errno;
	closedir(d);
	errno = saved;
	return saved != 0 ? -1 : 0;
}

/*
 * The counting step of the descent, every priority's tree from 0 up, in
 * key order: each leaf's count, from the cache while its inode and mtime
 * are unchanged and none of its messages can have expired since, else
 * from a listing, until the limit.  A leaf removed as empty before or
 * while it is looked at held nothing.
 */
static int
count_step(void *arg, int dirfd, const char *name, int digits, uint64_t key,
    unsigned prio)
{
	struct counting *c = arg;
	struct leafcount e, *o;
	struct stat st;
	struct timespec m;
	int r;

	if (digits != MQ_KEY_DIGITS)
		return MQ_TREE_INTO;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? MQ_TREE_NEXT : -1;
	if (!S_ISDIR(st.st_mode))
		return MQ_TREE_NEXT;
	/* Cached leaves before this one are gone. */
	while (c->next < c->nold && precedes(c->old[c->next].prio,
	    c->old[c->next].key, prio, key))
		c->next++;
	o = c->next < c->nold && c->old[c->next].prio == prio &&
	    c->old[c->next].key == key ? &c->old[c->next] : NULL;
	if (o != NULL && st.st_mtim.tv_sec >= 0 && o->ino == st.st_ino &&
	    o->sec == (uint64_t)st.st_mtim.tv_sec &&
	    o->nsec == (uint64_t)st.st_mtim.tv_nsec && alive(c, o)) {
		e = *o;
		if (cache_add(c, &e) == -1)
			return -1;
	} else {
		if (!c->stamped)
			stamp(c);
		e.prio = prio;
		e.key = key;
		if ((r = leaf_list(c, dirfd, name, &e, &m)) == -1)
			return -1;
		if (r == 1)
			return MQ_TREE_NEXT;
		/* One that lost messages to burials has another mtime now. */
		if (older(c, &m) && c->ndead == 0) {
			e.sec = m.tv_sec;
			e.nsec = m.tv_nsec;
			if (cache_add(c, &e) == -1)
				return -1;
		}
	}
	c->n += e.n;
	if (c->n >= c->limit) {
		c->stopped = 1;
		c->lastprio = prio;
		c->last = key;
		return MQ_TREE_STOP;
	}
	return MQ_TREE_NEXT;
}

/*
 * Writes the cache learnt by a count, if it differs from the one read:
 * into the file stamp() made, renamed over tmp/.depth.  A count that
 * stopped at the limit keeps the entries of the leaves it did not reach.
 * Nothing here fails the count, not even memory run out: a cache not
 * written is a cache missed.
 */
static void
cache_write(struct counting *c)
{
	char line[CACHE_LINE_MAX + 1];
	char *buf;
	size_t i, len, size;
	int n;

	if (c->stopped) {
		for (i = c->next; i < c->nold; i++)
			if (precedes(c->lastprio, c->last, c->old[i].prio,
			    c->old[i].key) && cache_add(c, &c->old[i]) == -1)
				return;
	}
	if (c->nv > CACHE_MAX)
		c->nv = CACHE_MAX;
	if (c->nv == c->nold) {
		for (i = 0; i < c->nv && cache_same(&c->v[i], &c->old[i]); i++)
			continue;
		if (i == c->nv)
			return;
	}
	if (!c->stamped)
		stamp(c);
	if (c->tf.fd == -1)
		return;
	size = CACHE_LINE_MAX * (c->nv + 1);
	if ((buf = malloc(size)) == NULL)
		return;
	len = snprintf(buf, size, "%s%zu\n", CACHE_MAGIC, c->nv);
	for (i = 0; i < c->nv; i++) {
		n = snprintf(line, sizeof(line), "%" PRIu64 " %0*" PRIx64
		    " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %"
		    PRIu64 " %" PRIu64 "\n", c->v[i].prio, MQ_KEY_DIGITS,
		    c->v[i].key, c->v[i].ino,
		    c->v[i].sec, c->v[i].nsec,
		    c->v[i].sent == NEVER ? 0 : c->v[i].sent,
		    c->v[i].own == NEVER ? 0 : c->v[i].own, c->v[i].n);
		memcpy(buf + len, line, n);
		len += n;
	}
	if (mq_tmp_write(&c->tf, buf, len) == -1 ||
	    mq_tmp_close(&c->tf, MQ_TMP_SYNC_NONE) == -1 ||
	    mq_tmp_commit(&c->tf, c->sp->tmp, MQ_DEPTH_CACHE) == -1)
		mq_tmp_abort(&c->tf);
	free(buf);
}

/*
 * mq_group_parked's: one more message waiting behind the head of its
 * group, unless it is past its time to live (dead, not waiting: the
 * reaper's fate, not buried here: that is mq_expire's, under the group's
 * lock).
 */
static int
count_parked(void *arg, int dirfd, const char *name, const struct mq_name *nm,
    uint64_t key)
{
	struct counting *c = arg;

	(void)dirfd;
	(void)name;
	(void)key;
	if (mq_fate(&c->reaper, nm) == MQ_FATE_LIVE)
		c->n++;
	return c->n >= c->limit;
}

/*
 * Sets *n to the number of messages waiting in new/, or to limit when
 * there are that many or more: those not expired now, given the spool's
 * ttl (the reaper's).  The expired messages of the leaves it lists are
 * buried, with the reason "ttl"; if any were, the doorbell is rung.
 * With parked_too (overflow=reject), the messages parked behind the heads
 * of groups are counted too.  Returns 0, or -1 on error.
 */
int
mq_depth(struct mq_spool *sp, uint64_t limit, int parked_too, uint64_t *n)
{
	struct counting c;
	struct mq_tree t = { .fn = count_step, .sorted = 1, .lowfirst = 1 };
	int r, saved;

	*n = 0;
	if (limit == 0)
		return 0;
	memset(&c, 0, sizeof(c));
	c.sp = sp;
	c.limit = limit;
	mq_reaper_init(&c.reaper, sp, MQ_REAP_EXPIRY);
	c.tf.sp = sp;
	c.tf.fd = -1;
	/* Without tmp/ there is no cache, and the count lists every leaf. */
	if (sp->tmp == -1)
		c.stamped = 1;
	t.arg = &c;
	if ((r = sp->tmp != -1 ? cache_read(&c) : 0) != -1 &&
	    (r = mq_tree_walk(&t, sp->new)) != -1)
		cache_write(&c);
	saved = errno;
	mq_tmp_abort(&c.tf);
	mq_reaper_end(&c.reaper);
	/* Room was made: senders waiting for it count again. */
	if (c.reaper.buried > 0)
		(void)mq_ring(sp);
	free(c.old);
	free(c.v);
	free(c.dead);
	errno = saved;
	if (r == -1)
		return -1;
	/*
	 * A bounded queue stays bounded: what is parked behind the head of
	 * a group waits too (listed in full, without the cache).  Not with
	 * overflow=drop-oldest (!parked_too): the drop takes from new/ only
	 * (a parked message may not overtake its head), so counting what it
	 * cannot drop would have it drop heads and the newest instead.
	 */
	if (parked_too && c.n < limit) {
		struct mq_parked_walk w = { .fn = count_parked, .arg = &c,
		    .as_read = 1 };

		if (mq_group_parked(sp, &w) == -1)
			return -1;
	}
	*n = c.n < limit ? c.n : limit;
	return 0;
}

struct dropping {
	struct mq_spool	*sp;
	uint64_t	 want, gone;
	struct mq_reaper reaper;	/* expiry only */
	mq_drop_fn	 fn;
	void		*arg;
};

static int
is_new(const char *s)
{
	struct mq_name nm;

	return mq_name_parse(s, MQ_NEW, &nm) == 0;
}

/*
 * Buries the oldest messages of one leaf; 1 once enough are gone.  One
 * that another process took first (a claim) is gone all the same: the
 * room it left is what was wanted, and no second message dies for it.
 * One that has expired (since the count, or in a leaf it did not list)
 * was not waiting: it is buried as "ttl" and makes no room.
 */
static int
drop_leaf(struct dropping *d, int leaf)
{
	struct mq_names names;
	struct mq_name nm;
	size_t i;
	int r = 0;

	if (mq_names_read(leaf, DT_REG, is_new, &names) == -1)
		return errno == ENOENT ? 0 : -1;
	mq_names_sort(&names);
	for (i = 0; i < names.n && d->gone < d->want; i++) {
		mq_name_parse(names.v[i], MQ_NEW, &nm);
		/* Expired (buried so, or gone meanwhile): no room made. */
		if ((r = mq_reap(&d->reaper, leaf, names.v[i], &nm)) != 0) {
			if (r == -1 && errno != ENOENT)
				break;
			r = 0;
			continue;
		}
		if (mq_bury(d->sp, leaf, names.v[i], &nm, MQ_REASON_MAXLEN,
		    strlen(MQ_REASON_MAXLEN), MQ_CAUSE_MAXLEN) == -1) {
			if (errno != ENOENT) {
				r = -1;
				break;
			}
		} else if (d->fn != NULL)
			d->fn(d->arg, nm.id);
		d->gone++;
	}
	mq_names_free(&names);
	return r == -1 ? -1 : d->gone >= d->want;
}

static int
drop_into(void *arg, int fd, uint64_t key, unsigned prio)
{
	int r;

	(void)key;
	(void)prio;
	if ((r = drop_leaf(arg, fd)) == -1)
		return -1;
	return r == 1 ? MQ_TREE_STOP : MQ_TREE_NEXT;
}

/*
 * Makes room for n messages (overflow=drop-oldest): dead-letters the
 * least urgent oldest waiting ones (the trees from priority 0 up, leaves
 * in key order, IDs in order), with the reason MQ_REASON_MAXLEN, calling fn
 * with the ID of each.  Those expired now (the spool's ttl) that it meets
 * are buried as "ttl" and not counted.  Stops once n
 * are gone or new/ is empty.  Returns 0, or -1 on error.
 */
int
mq_depth_drop(struct mq_spool *sp, uint64_t n, mq_drop_fn fn, void *arg)
{
	struct dropping d;
	struct mq_tree t = { .leaf = drop_into, .sorted = 1, .lowfirst = 1 };
	int r;

	if (n == 0)
		return 0;
	memset(&d, 0, sizeof(d));
	d.sp = sp;
	d.want = n;
	d.fn = fn;
	d.arg = arg;
	mq_reaper_init(&d.reaper, sp, MQ_REAP_EXPIRY);
	t.arg = &d;
	r = mq_tree_walk(&t, sp->new);
	mq_reaper_end(&d.reaper);
	return r == -1 ? -1 : 0;
}
