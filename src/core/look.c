/*
 * look.c: looking at every message without claiming it, for mq-ls, and
 * the one walk of every state there is: find.c's search of one ID
 * (mq-show, mq-rm) and its walk for mq-rm --all are this one.  Read-only,
 * as stat.c is: it takes no lock, renames, links, unlinks or makes
 * nothing, and opens nothing for writing (what find.c's callers do with
 * what they are handed is theirs); a message that moves while the walk
 * is under way may be seen twice or not at all (find.c says where the
 * order of the passes still finds it).
 *
 * Messages are handed out by state, in the order a claim takes them:
 *
 *	expired		cur/S/, the leases run out (claimed before anything)
 *	ready		new/[pN/]T/M/L/ due, priority 9 down to 0, leaf by
 *			leaf in key order, by ID within a leaf (claim.c)
 *	delayed		the leaves of new/ not due yet, in the same order
 *	blocked		groups/G/T/M/L/, group by group in name order, each
 *			in its parked (ID) order (group.c)
 *	inflight	cur/S/, the leases running
 *	dead		dead/, then the waiting messages past their time to
 *			live (mq_name_expiry): never handed out, they are
 *			buried by the next claim or sweep that meets them;
 *			and a group's head a crash left half way through its
 *			burial (groups/G/leaving.*.dead)
 *
 * Ready before delayed takes two descents of new/: the first ends each
 * priority's tree at its first leaf not due (MQ_TREE_LATER), the second
 * passes the due ones; only the levels above the leaves are listed twice.
 * The names of a leaf are gathered and sorted (a leaf holds about
 * MQ_LEAF_MAX per sender), only those of the ID looked for when there is
 * one; those of a cur/ bucket and of dead/ are handed out as read, never
 * gathered.  The buckets of cur/ and the groups (the groups through
 * group.c's walk of what they hold, their trees walked here) are taken in
 * order a chunk at a time (mq_dir_ordered), so that memory stays flat
 * whatever the depth.  A message past its time to live is met where it
 * waits: its area is walked again for the dead only when one was met
 * there (or when the states asked for did not take the walk through it).
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

static const char *const state_names[MQ_LOOK_NSTATES] = {
	"expired", "ready", "delayed", "blocked", "inflight", "orphaned",
	"dead"
};

/* Where past-ttl messages were met, to be handed out with the dead. */
#define AREA_NEW	1u
#define AREA_GROUPS	2u
#define AREA_CUR	4u

#define BIT(s)		(1u << (s))

/* The walk under way. */
struct look {
	struct mq_spool	*sp;
	const struct mq_looker *lk;
	enum mq_look_state pass;	/* the state handed out now */
	int		 all;		/* new/: every leaf (the dead's pass) */
	unsigned	 seen;		/* AREA_*: a dead one met there */
	int		 stopped;	/* fn asked to stop */
	int		 failed;	/* fn failed: errno is its */
	const char	*group;		/* the group whose tree is walked */
	int		 leaving_only;	/* of a group, its leaving.* only */
	size_t		 idlen;		/* of lk->id */
	int		 type;		/* of the entries handed out (DT_*) */
	char		 dir[MQ_NAME_MAX * 2];
	enum mq_look_in	 in;		/* where dir is */
	struct mq_judge	 judge;		/* of the holders met in cur/ */
};

const char *
mq_look_state_name(enum mq_look_state s)
{
	return (unsigned)s < MQ_LOOK_NSTATES ? state_names[s] : "?";
}

/* The state named s, or -1. */
int
mq_look_state_parse(const char *s)
{
	int i;

	for (i = 0; i < MQ_LOOK_NSTATES; i++)
		if (strcmp(s, state_names[i]) == 0)
			return i;
	return -1;
}

/*
 * A directory that cannot be read (errno e): told, and passed (0); one
 * removed since it was met was empty.  Memory run out is no property of
 * the directory: it ends the walk as fn's failure does (-1, errno e),
 * rather than pass what could not be held.
 */
static int
unread(struct look *l, const char *where, int e)
{
	if (e == ENOMEM) {
		l->failed = 1;
		errno = e;
		return -1;
	}
	if (e != ENOENT)
		l->lk->fail(l->lk->arg, where, e);
	return 0;
}

/*
 * Whether name is that of the ID looked for (every one when none), or of
 * an ID that starts with the prefix looked for: an ID is up to MQ_ID_LEN
 * long (its pid has as many digits as it has).
 */
static int
wanted(const struct look *l, const char *name)
{
	const char *id = l->lk->id;

	return id == NULL || (strncmp(name, id, l->idlen) == 0 &&
	    (l->lk->prefix || name[l->idlen] == ','));
}

/*
 * Hands one message to fn: returns 0 to go on, 1 when fn stopped the
 * walk, -1 when it failed.
 */
static int
hand(struct look *l, enum mq_look_state state, int dirfd, const char *name,
    const struct mq_name *nm, uint64_t ms)
{
	struct mq_look m;
	int r;

	m.state = state;
	m.dirfd = dirfd;
	m.dir = l->dir;
	m.in = l->in;
	m.name = name;
	m.n = *nm;
	m.ms = ms;
	if ((r = l->lk->fn(l->lk->arg, &m)) == -1)
		l->failed = 1;
	else if (r != 0)
		l->stopped = 1;
	return r == 0 ? 0 : r == -1 ? -1 : 1;
}

/*
 * The one classification of states, for this walk and for mq_stat's
 * counts.  A waiting message (of new/ in a leaf keyed key, or parked in a
 * group's tree): dead past its time to live (*ms: its expiry), blocked
 * when parked (*ms: sent), else ready once its leaf is due, or delayed
 * (*ms: the leaf's key).  ttl: the spool's.
 */
enum mq_look_state
mq_state_waiting(const struct mq_name *nm, int parked, uint64_t key,
    uint64_t now, uint64_t ttl, uint64_t *ms)
{
	uint64_t t = mq_name_expiry(nm, ttl);

	if (now >= t) {
		*ms = t;
		return MQ_LOOK_DEAD;
	}
	if (parked) {
		*ms = nm->sent != 0 ? nm->sent : mq_id_ms(nm->id);
		return MQ_LOOK_BLOCKED;
	}
	*ms = key;
	return key <= now ? MQ_LOOK_READY : MQ_LOOK_DELAYED;
}

/*
 * A lease of cur/: in flight until its deadline (*ms), then expired (to
 * be claimed again), or dead past its time to live (*ms: its expiry).
 */
enum mq_look_state
mq_state_leased(const struct mq_name *nm, uint64_t now, uint64_t ttl,
    uint64_t *ms)
{
	uint64_t t;

	*ms = nm->ms;
	if (nm->ms > now)
		return MQ_LOOK_INFLIGHT;
	if (now >= (t = mq_name_expiry(nm, ttl))) {
		*ms = t;
		return MQ_LOOK_DEAD;
	}
	return MQ_LOOK_EXPIRED;
}

/* A waiting message of this walk (in a leaf keyed key): its state. */
static enum mq_look_state
waiting_state(struct look *l, const struct mq_name *nm, uint64_t key,
    uint64_t *ms)
{
	enum mq_look_state s = mq_state_waiting(nm, l->group != NULL, key,
	    l->lk->now, l->lk->ttl_ms, ms);

	if (s == MQ_LOOK_DEAD)
		l->seen |= l->group != NULL ? AREA_GROUPS : AREA_NEW;
	return s;
}

/* Sets l->dir to the leaf keyed key of priority prio's tree. */
static void
leaf_path(struct look *l, uint64_t key, unsigned prio)
{
	char t[16], m[16], k[16], p[16] = "";

	mq_leaf_key_format(t, sizeof(t), key, MQ_TOP_DIGITS);
	mq_leaf_key_format(m, sizeof(m), key, MQ_MID_DIGITS);
	mq_leaf_key_format(k, sizeof(k), key, MQ_KEY_DIGITS);
	if (prio > 0)
		snprintf(p, sizeof(p), "p%u/", prio);
	l->in = l->group != NULL ? MQ_IN_PARKED : MQ_IN_NEW;
	if (l->group != NULL)
		snprintf(l->dir, sizeof(l->dir), "%s/%s/%s/%s/%s",
		    MQ_DIR_GROUPS, l->group, t, m, k);
	else
		snprintf(l->dir, sizeof(l->dir), "%s/%s%s/%s/%s", MQ_DIR_NEW,
		    p, t, m, k);
}

/*
 * A leaf's names are sorted LEAF_KEEP at a time.  A sender fills a leaf
 * with up to MQ_LEAF_MAX messages, but one batch sent with one visibility
 * time (mq-send -D of many lines) goes into one leaf however many it has:
 * a leaf with more is read again for each next LEAF_KEEP names in order,
 * the first LEAF_KEEP after the last one handed out, kept in a heap (the
 * greatest on top) while the leaf is read (a name that is not a
 * message's takes a place, and is passed over when handed out).  Memory
 * stays that of LEAF_KEEP names whatever the leaf holds; a leaf of n is read
 * n / LEAF_KEEP times, rounded up.
 */
#define LEAF_KEEP	24576

struct gather {
	const struct look *l;
	struct mq_names names;	/* a heap once full */
	const char *after;	/* only the names after this; NULL: all */
	int	 more;		/* names were left out: read again */
	int	 heap;		/* names is one */
};

static void
sift_down(char **v, size_t n, size_t i)
{
	size_t c;
	char *t;

	for (; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && strcmp(v[c + 1], v[c]) > 0)
			c++;
		if (strcmp(v[c], v[i]) <= 0)
			break;
		t = v[i];
		v[i] = v[c];
		v[c] = t;
	}
}

static int
gather_one(void *arg, int dirfd, const char *name)
{
	struct gather *g = arg;
	struct mq_names *nl = &g->names;
	char *s;
	size_t i;

	(void)dirfd;
	/* A search by ID gathers nothing but its match. */
	if (!wanted(g->l, name) ||
	    (g->after != NULL && strcmp(name, g->after) <= 0))
		return 0;
	if (nl->n < LEAF_KEEP)
		return mq_names_add_max(nl, name, LEAF_KEEP);
	g->more = 1;
	/* A heap from when it first fills up. */
	if (!g->heap) {
		for (i = LEAF_KEEP / 2; i-- > 0;)
			sift_down(nl->v, LEAF_KEEP, i);
		g->heap = 1;
	}
	if (strcmp(name, nl->v[0]) >= 0)
		return 0;
	if ((s = strdup(name)) == NULL)
		return -1;
	free(nl->v[0]);
	nl->v[0] = s;
	sift_down(nl->v, LEAF_KEEP, 0);
	return 0;
}

/*
 * Reads the next names of the leaf for g, sorted: 0, 1 when it cannot be
 * read (told, unless it is gone), -1 when the walk is to end (unread()).
 */
static int
gather(struct look *l, int fd, struct gather *g)
{
	int saved;

	g->names.v = NULL;
	g->names.n = g->names.cap = 0;
	g->more = g->heap = 0;
	if (mq_dir_each(fd, l->type, gather_one, g) == 0) {
		mq_names_sort(&g->names);
		return 0;
	}
	saved = errno;
	mq_names_free(&g->names);
	return unread(l, l->dir, saved) == -1 ? -1 : 1;
}

/*
 * Hands out the names gathered, sorted, from a leaf keyed key, those in
 * the state of this pass: 0, 1 stopped, -1 failed.
 */
static int
hand_sorted(struct look *l, int fd, struct mq_names *names, uint64_t key)
{
	struct mq_name nm;
	enum mq_look_state s;
	uint64_t ms;
	size_t i;
	int r = 0;

	for (i = 0; i < names->n && r == 0; i++) {
		if (mq_name_parse(names->v[i], MQ_NEW, &nm) == -1)
			continue;
		if ((s = waiting_state(l, &nm, key, &ms)) == l->pass)
			r = hand(l, s, fd, names->v[i], &nm, ms);
	}
	return r;
}

/*
 * Lists the leaf dirfd/name (keyed key), in name (ID) order, and hands
 * out those of its messages in the state of this pass.  Returns as a
 * tree step.
 */
static int
leaf(struct look *l, int dirfd, const char *name, uint64_t key,
    unsigned prio)
{
	struct gather g;
	char last[MQ_NAME_MAX];
	int fd, r = 0, saved;

	leaf_path(l, key, prio);
	if ((fd = mq_opendirat(dirfd, name)) == -1)
		return unread(l, l->dir, errno) == -1 ? -1 : MQ_TREE_NEXT;
	memset(&g, 0, sizeof(g));
	g.l = l;
	do {
		if ((r = gather(l, fd, &g)) != 0) {
			r = r == 1 ? 0 : -1;
			break;
		}
		r = hand_sorted(l, fd, &g.names, key);
		if (g.names.n > 0)
			strlcpy(last, g.names.v[g.names.n - 1], sizeof(last));
		g.after = last;
		saved = errno;
		mq_names_free(&g.names);
		errno = saved;
	} while (r == 0 && g.more);
	saved = errno;
	close(fd);
	errno = saved;
	return r == 0 ? MQ_TREE_NEXT : r == 1 ? MQ_TREE_STOP : -1;
}

/*
 * The step of the descents of new/ and of a group's tree: the ready pass
 * ends a tree at its first directory not due; the delayed pass passes
 * what is wholly due; the dead's and the blocked's take every leaf.
 */
static int
step(void *arg, int dirfd, const char *name, int digits, uint64_t key,
    unsigned prio)
{
	struct look *l = arg;
	uint64_t last = key + ((uint64_t)1 << 4 * (MQ_KEY_DIGITS - digits)) -
	    1;

	if (!l->all && l->pass == MQ_LOOK_READY && key > l->lk->now)
		return MQ_TREE_LATER;
	if (!l->all && l->pass == MQ_LOOK_DELAYED && last <= l->lk->now)
		return MQ_TREE_NEXT;
	if (digits != MQ_KEY_DIGITS)
		return MQ_TREE_INTO;
	return leaf(l, dirfd, name, key, prio);
}

/* Walks a tree (new/ or a group's) for this pass: 0, 1 stopped, -1. */
static int
walk(struct look *l, int root, const char *where)
{
	struct mq_tree t = { .fn = step, .arg = l, .sorted = 1 };

	if (mq_tree_walk(&t, root) != -1)
		return l->stopped;
	if (l->failed)
		return -1;
	/* A level above the leaves that cannot be read ends this tree. */
	return unread(l, where, errno);
}

static int
new_pass(struct look *l, enum mq_look_state pass, int all)
{
	l->pass = pass;
	l->all = all;
	l->group = NULL;
	return walk(l, l->sp->new, MQ_DIR_NEW);
}

static int
bucket_cmp(const void *a, const void *b)
{
	uint64_t x, y;

	mq_cur_bucket_parse(*(char *const *)a, &x);
	mq_cur_bucket_parse(*(char *const *)b, &y);
	return x < y ? -1 : x > y;
}

/*
 * Calls fn for each name (in order) of the sub-directories of dirfd that
 * keep keeps, a chunk at a time (mq_dir_ordered); fn answers as hand()
 * does.  Returns 0, 1 stopped, or -1 when fn failed; a listing that fails
 * is told as where (unread()).
 */
static int
in_order(struct look *l, int dirfd, const char *where,
    int (*keep)(const char *), int (*cmp)(const void *, const void *),
    int (*fn)(void *, int, const char *))
{
	int r, unlisted;

	r = mq_dir_ordered(dirfd, keep, cmp, fn, l, &unlisted);
	if (r == -1 && unlisted)
		return unread(l, where, errno);
	return r;
}

/* A message of cur/: lease running, run out, or past its time to live. */
static int
cur_one(void *arg, int dirfd, const char *name)
{
	struct look *l = arg;
	struct mq_name nm;
	enum mq_look_state s;
	uint64_t ms;

	if (!wanted(l, name) || mq_name_parse(name, MQ_CUR, &nm) == -1)
		return 0;
	if ((s = mq_state_leased(&nm, l->lk->now, l->lk->ttl_ms, &ms)) ==
	    MQ_LOOK_DEAD)
		l->seen |= AREA_CUR;
	if (s != l->pass)
		return 0;
	/* The in-flight pass hands out the orphaned too, as they come. */
	if (s == MQ_LOOK_INFLIGHT && mq_holder_gone(&l->judge, l->sp,
	    &nm.holder))
		s = MQ_LOOK_ORPHANED;
	if (!(l->lk->states & BIT(s)))
		return 0;
	return hand(l, s, dirfd, name, &nm, ms);
}

/*
 * The directory parent/name (l->dir), its messages handed to fn as read:
 * 0, 1 stopped, -1 failed.  One that cannot be read is told and passed.
 */
static int
flat(struct look *l, int parent, const char *name,
    int (*fn)(void *, int, const char *))
{
	int fd, r, saved;

	if ((fd = mq_opendirat(parent, name)) == -1)
		return unread(l, l->dir, errno);
	r = mq_dir_each(fd, l->type, fn, l);
	saved = errno;
	close(fd);
	errno = saved;
	if (l->failed)
		return -1;
	if (l->stopped)
		return 1;
	return r == -1 ? unread(l, l->dir, saved) : 0;
}

/* A bucket of cur/, if this pass can find anything in it. */
static int
bucket(void *arg, int curfd, const char *name)
{
	struct look *l = arg;
	uint64_t secs, now = l->lk->now;

	mq_cur_bucket_parse(name, &secs);
	/* Bucket S holds the leases that end after S-1 s, up to S s. */
	if (l->pass == MQ_LOOK_INFLIGHT ? secs * 1000 <= now :
	    (secs - 1) * 1000 >= now)
		return 0;
	snprintf(l->dir, sizeof(l->dir), "%s/%s", MQ_DIR_CUR, name);
	l->in = MQ_IN_CUR;
	return flat(l, curfd, name, cur_one);
}

static int
cur_pass(struct look *l, enum mq_look_state pass)
{
	l->pass = pass;
	l->group = NULL;
	return in_order(l, l->sp->cur, MQ_DIR_CUR, mq_is_cur_bucket, bucket_cmp,
	    bucket);
}

/*
 * The heads a crash left half way through their burial (group.c's
 * leaving.NAME.dead): dead, their reason linked, their callers told so;
 * the next mq_expire or mq-sweep moves them into dead/.  An ack's half
 * way (leaving.NAME.ack) is not listed: acked, or (its ack never
 * confirmed) made the head again by mq-sweep.
 */
static int
leaving(struct look *l, int fd)
{
	struct mq_names names;
	struct mq_name nm;
	size_t i;
	int dead, r = 0;

	if (mq_names_read(fd, l->type, NULL, &names) == -1)
		return unread(l, l->dir, errno);
	mq_names_sort(&names);
	l->in = MQ_IN_LEAVING;
	for (i = 0; i < names.n && r == 0; i++)
		if (mq_group_leaving_parse(names.v[i], &nm, &dead) == 0 &&
		    dead && (l->lk->id == NULL || (l->lk->prefix ?
		    strncmp(nm.id, l->lk->id, l->idlen) :
		    strcmp(nm.id, l->lk->id)) == 0)) {
			/* Its time of death is the one its burial will give. */
			nm.ms = l->lk->now;
			r = hand(l, MQ_LOOK_DEAD, fd, names.v[i], &nm, nm.ms);
		}
	mq_names_free(&names);
	return r;
}

/* A group's directory (fd), from group.c's walk: its tree in order. */
static int
group(void *arg, int fd, const char *name)
{
	struct look *l = arg;
	char where[sizeof(MQ_DIR_GROUPS) + MQ_GROUP_MAX + 1];
	int r = 0;

	snprintf(where, sizeof(where), "%s/%s", MQ_DIR_GROUPS, name);
	l->group = name;
	if (l->pass == MQ_LOOK_DEAD) {
		snprintf(l->dir, sizeof(l->dir), "%s", where);
		r = leaving(l, fd);
	}
	if (r == 0 && !l->leaving_only)
		r = walk(l, fd, where);
	l->group = NULL;
	return r;
}

static int
group_unread(void *arg, const char *where, int e)
{
	return unread(arg, where, e);
}

/*
 * groups/ (made by the first ordered send: none, no group), through
 * group.c's one walk of what groups hold, in name order, each group's
 * tree walked here as new/'s is.
 */
static int
groups_pass(struct look *l, enum mq_look_state pass)
{
	struct mq_parked_walk w = { .tree = group, .unread = group_unread,
	    .arg = l, .sorted = 1 };

	l->pass = pass;
	l->all = 1;
	if (mq_group_parked(l->sp, &w) == -1)
		return -1;
	return w.stopped;
}

static int
dead_one(void *arg, int dirfd, const char *name)
{
	struct look *l = arg;
	struct mq_name nm;

	if (!wanted(l, name) || mq_name_parse(name, MQ_DEAD, &nm) == -1)
		return 0;
	return hand(l, MQ_LOOK_DEAD, dirfd, name, &nm, nm.ms);
}

/*
 * dead/ as read, then the messages past their time to live where they
 * wait: in each area the earlier passes did not walk whole, or where
 * they met one.
 */
static int
dead_pass(struct look *l)
{
	unsigned states = l->lk->states;
	int r;

	l->pass = MQ_LOOK_DEAD;
	l->group = NULL;
	snprintf(l->dir, sizeof(l->dir), "%s", MQ_DIR_DEAD);
	l->in = MQ_IN_DEAD;
	if ((r = flat(l, l->sp->fd, MQ_DIR_DEAD, dead_one)) != 0 ||
	    l->lk->buried_only)
		return r;
	if ((l->seen & AREA_NEW || (states & BIT(MQ_LOOK_READY)) == 0 ||
	    (states & BIT(MQ_LOOK_DELAYED)) == 0) &&
	    (r = new_pass(l, MQ_LOOK_DEAD, 1)) != 0)
		return r;
	l->leaving_only = !(l->seen & AREA_GROUPS ||
	    (states & BIT(MQ_LOOK_BLOCKED)) == 0);
	r = groups_pass(l, MQ_LOOK_DEAD);
	l->leaving_only = 0;
	if (r != 0)
		return r;
	if (l->seen & AREA_CUR || (states & BIT(MQ_LOOK_EXPIRED)) == 0)
		return cur_pass(l, MQ_LOOK_DEAD);
	return 0;
}

/*
 * Walks the spool, handing each message in a state of lk->states (of ID
 * lk->id only, unless NULL; with lk->prefix, of the IDs that start with
 * it) to lk->fn, in the order above, as of
 * lk->now; lk->ttl_ms is the spool's time to live.  A directory that
 * cannot be read is told to lk->fail (where, from the spool root, and
 * errno) and passed: the walk goes on.  Returns 0 when it walked to the
 * end, 1 when fn stopped it (fn returned 1), -1 when fn failed (-1, with
 * errno set) or memory ran out (ENOMEM).
 */
int
mq_look(struct mq_spool *sp, const struct mq_looker *lk)
{
	struct look l;
	unsigned s = lk->states;
	int r = 0;

	memset(&l, 0, sizeof(l));
	l.sp = sp;
	l.lk = lk;
	/*
	 * A listing hands out regular files only; a search by ID whatever
	 * has the name, for its caller to refuse what is no message's.
	 */
	l.type = DT_REG;
	if (lk->id != NULL) {
		l.idlen = strlen(lk->id);
		l.type = DT_UNKNOWN;
	}
	if (s & BIT(MQ_LOOK_EXPIRED))
		r = cur_pass(&l, MQ_LOOK_EXPIRED);
	if (r == 0 && s & BIT(MQ_LOOK_READY))
		r = new_pass(&l, MQ_LOOK_READY, 0);
	if (r == 0 && s & BIT(MQ_LOOK_DELAYED))
		r = new_pass(&l, MQ_LOOK_DELAYED, 0);
	if (r == 0 && s & BIT(MQ_LOOK_BLOCKED))
		r = groups_pass(&l, MQ_LOOK_BLOCKED);
	if (r == 0 && s & (BIT(MQ_LOOK_INFLIGHT) | BIT(MQ_LOOK_ORPHANED)))
		r = cur_pass(&l, MQ_LOOK_INFLIGHT);
	if (r == 0 && s & BIT(MQ_LOOK_DEAD))
		r = dead_pass(&l);
	return r;
}

/*
 * Up to size bytes of the start of a message's body, and its size, read
 * through the directory the walk has open: never blocking, never
 * following a link.  -1 with ENOENT when it went meanwhile.
 */
int
mq_look_peek(const struct mq_look *m, char *buf, size_t size, size_t *len,
    off_t *fsize)
{
	struct stat st;
	ssize_t n;
	int fd, saved;

	if ((fd = openat(m->dirfd, m->name, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) == -1)
		return -1;
	if (fstat(fd, &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	while ((n = read(fd, buf, size)) == -1 && errno == EINTR)
		continue;
	if (n == -1)
		goto fail;
	close(fd);
	*len = n;
	*fsize = st.st_size;
	return 0;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}
