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
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

struct counter {
	struct mq_stats	*st;
	uint64_t	 now;
	uint64_t	 ttl;		/* the spool's */
	int		 parked;	/* this leaf is of a group's tree */
	uint64_t	 key;		/* its key: when it is due */
	int		 bytes;		/* stat each file for st->bytes */
};

static void
add_bytes(struct counter *c, int dirfd, const char *name)
{
	struct stat sb;

	if (c->bytes &&
	    fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		c->st->bytes += sb.st_size;
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
	uint64_t ms, t;

	if (mq_name_parse(name, MQ_NEW, &nm) == -1)
		return 0;
	add_bytes(c, dirfd, name);
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

	(void)prio;
	if (digits != MQ_KEY_DIGITS)
		return MQ_TREE_INTO;
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
 * Counts every state of the spool as of now (ms); ttl_ms is the spool's
 * time to live (0: none), past which a waiting message counts as dead;
 * st->bytes is counted only with bytes set.
 */
int
mq_stat(struct mq_spool *sp, uint64_t now, uint64_t ttl_ms, int bytes,
    struct mq_stats *st)
{
	struct counter c;
	struct mq_tree t = { .fn = count_step, .arg = &c };

	memset(st, 0, sizeof(*st));
	st->oldest_ready_ms = st->oldest_dead_ms = UINT64_MAX;
	memset(&c, 0, sizeof(c));
	c.st = st;
	c.now = now;
	c.ttl = ttl_ms;
	c.bytes = bytes;
	if (mq_spool_need(sp, 0) == -1 ||
	    mq_tree_walk(&t, sp->new) == -1 ||
	    mq_dir_each(sp->cur, DT_DIR, count_bucket, &c) == -1 ||
	    mq_dir_each(sp->dead, DT_REG, count_dead, &c) == -1 ||
	    count_groups(sp, &c) == -1)
		return -1;
	return 0;
}
