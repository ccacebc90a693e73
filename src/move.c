/*
 * move.c: every state change of a message, each one rename(2) or unlink(2)
 * through directory fds:
 *
 *	send	tmp/ID			-> new/T/M/L/ID,0
 *	claim	new/T/M/L/ID,A		-> cur/S/ID,DEADLINE,A+1
 *	reclaim	cur/S/ID,DEADLINE,A	-> cur/S'/ID,DEADLINE',A+1 (expired)
 *	extend	cur/S/ID,DEADLINE,A	-> cur/S'/ID,DEADLINE',A
 *	release	cur/S/ID,DEADLINE,A	-> new/T/M/L/ID,A
 *	bury	new/... or cur/...	-> dead/ID,DIED,A (reason in reason/ID)
 *	redrive	dead/ID,DIED,A		-> new/T/M/L/ID,0
 *	ack	cur/S/ID,DEADLINE,A	-> (unlinked)
 *	purge	dead/ID,DIED,A		-> (unlinked)
 *
 * new/T/M/L is the leaf for visibility key L (ms since the epoch, hex; T and
 * M are its prefixes).  A claim takes the oldest ID of the oldest due leaf,
 * so claiming never lists more than one leaf and one directory per level.
 * cur/S holds the leases that end within second S, so expired leases are
 * found by looking at the first buckets only.
 *
 * Because a rename either happens whole or not at all, two workers racing
 * for a message cannot both win: the loser gets ENOENT.  Empty directories
 * are removed as they are passed; whoever finds its target directory gone
 * (ENOENT while the source still exists) makes it again and retries, from
 * new/ down, as any level of the path may have gone with it.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"

#define RETRIES	8

static int
exists(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int
full(int e)
{
	return e == ENOSPC || e == EDQUOT;
}

/*
 * Opens (making it if need be) the directory name inside dirfd.  With no
 * room to make it, a consumer (spares set) renames a spare directory into
 * place, so that a full file system can still be drained.
 */
static int
subdir(struct mq_spool *sp, int dirfd, const char *name, int spares)
{
	int fd, i;

	for (i = 0; i < RETRIES; i++) {
		if (mq_mkdirat(dirfd, name, sp->dmode, NULL) == -1 &&
		    (!spares || !full(errno) ||
		    mq_spare_take(sp, dirfd, name) == -1))
			return -1;
		if ((fd = mq_opendirat(dirfd, name)) != -1 || errno != ENOENT)
			return fd;
	}
	return -1;
}

static void
closefd(int *fd)
{
	if (*fd != -1)
		close(*fd);
	*fd = -1;
}

void
mq_placer_init(struct mq_placer *pl, struct mq_spool *sp, int sync)
{
	memset(pl, 0, sizeof(*pl));
	pl->sp = sp;
	pl->sync = sync;
	pl->top = pl->mid = pl->leaf = -1;
}

/*
 * Opens the leaf for key, making what is missing of its path.  A receiver
 * may remove a level as empty between our making it and making the next
 * one inside (which then fails with ENOENT): start again from new/.
 */
static int
leaf_open(struct mq_placer *pl, uint64_t key)
{
	char top[16], mid[16], leaf[16];
	int i, saved;

	if (mq_key_format(top, sizeof(top), key, MQ_TOP_DIGITS) == -1 ||
	    mq_key_format(mid, sizeof(mid), key, MQ_MID_DIGITS) == -1 ||
	    mq_key_format(leaf, sizeof(leaf), key, MQ_KEY_DIGITS) == -1)
		return -1;
	for (i = 0; i < RETRIES; i++) {
		mq_placer_close(pl);
		if ((pl->top = subdir(pl->sp, pl->sp->new, top,
		    pl->spares)) != -1 &&
		    (pl->mid = subdir(pl->sp, pl->top, mid, pl->spares)) != -1 &&
		    (pl->leaf = subdir(pl->sp, pl->mid, leaf, pl->spares)) != -1) {
			pl->key = key;
			pl->count = 0;
			return 0;
		}
		if (errno != ENOENT)
			break;
	}
	saved = errno;
	mq_placer_close(pl);
	errno = saved;
	return -1;
}

/* A level whose making failed is not open, and has nothing to sync. */
static int
sync_level(int fd)
{
	return fd == -1 ? 0 : mq_fsync_dir(fd);
}

/*
 * Makes what was placed durable (when syncing) and rings the doorbell for
 * waiting receivers.  Every level is synced: another sender may have made
 * a directory and not synced its parent yet.  A bell that cannot be rung
 * fails nothing: the messages are in place, and failing would have a
 * producer send them twice; a receiver finds them when next it looks.
 */
int
mq_placer_flush(struct mq_placer *pl)
{
	if (!pl->dirty)
		return 0;
	if (pl->sync && (sync_level(pl->leaf) == -1 ||
	    sync_level(pl->mid) == -1 || sync_level(pl->top) == -1 ||
	    mq_fsync_dir(pl->sp->new) == -1))
		return -1;
	pl->dirty = 0;
	(void)mq_ring(pl->sp);
	return 0;
}

void
mq_placer_close(struct mq_placer *pl)
{
	closefd(&pl->leaf);
	closefd(&pl->mid);
	closefd(&pl->top);
}

/*
 * Renames from/fromname into the leaf for visibility time due, as name.
 * A sender keeps filling one leaf while it is young and not full, so a
 * batch shares its directory syncs and no leaf grows without bound.
 * ENOENT means from/fromname is gone, and only that: a leaf (or a level
 * above it) removed as empty by a receiver is made again, from the top.
 */
int
mq_place(struct mq_placer *pl, int from, const char *fromname,
    const char *name, uint64_t due)
{
	uint64_t key = pl->key;
	int i;

	if (pl->leaf == -1 || due < pl->key ||
	    due - pl->key >= MQ_LEAF_SPAN_MS || pl->count >= MQ_LEAF_MAX) {
		if (mq_placer_flush(pl) == -1)
			return -1;
		mq_placer_close(pl);
		key = due;
	}
	for (i = 0; i < RETRIES; i++) {
		if (pl->leaf == -1 && leaf_open(pl, key) == -1)
			break;
		if (renameat(from, fromname, pl->leaf, name) == 0) {
			pl->count++;
			pl->dirty = 1;
			return 0;
		}
		if (errno != ENOENT)
			return -1;
		if (!exists(from, fromname)) {
			errno = ENOENT;
			return -1;
		}
		/* A receiver removed the leaf as empty: make it again. */
		mq_placer_close(pl);
	}
	/* Still there, so not gone: the tree kept being removed under us. */
	if (errno == ENOENT) {
		if (!exists(from, fromname)) {
			errno = ENOENT;
			return -1;
		}
		errno = EAGAIN;
	}
	return -1;
}

/*
 * What a claim run shares: the lease to give, the cur/ bucket it goes to,
 * and where to report receipts.
 */
struct claimer {
	struct mq_spool	*sp;
	uint64_t	 now, deadline;
	unsigned	 max;
	int		 want, got;
	int		 bucket;
	char		 bucketname[24];
	mq_claim_fn	 fn;
	void		*arg;
	uint64_t	 wake;
};

static int
bucket_name(char *buf, size_t size, uint64_t deadline)
{
	int n;

	n = snprintf(buf, size, "%" PRIu64, mq_cur_bucket(deadline));
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Moves from/name (of state st, parsed as nm) into cur/ with a lease. */
static int
lease(struct mq_spool *sp, int from, const char *name, struct mq_name *nm,
    int *bucket, char *bucketname, size_t bsize, char *out, size_t osize)
{
	char want[24];
	int i;

	if (bucket_name(want, sizeof(want), nm->ms) == -1 ||
	    mq_name_format(out, osize, MQ_CUR, nm) == -1)
		return -1;
	if (*bucket == -1 || strcmp(want, bucketname) != 0) {
		closefd(bucket);
		if ((*bucket = subdir(sp, sp->cur, want, 1)) == -1)
			return -1;
		strlcpy(bucketname, want, bsize);
	}
	for (i = 0; i < RETRIES; i++) {
		if (renameat(from, name, *bucket, out) == 0)
			return 0;
		if (errno != ENOENT || !exists(from, name))
			return -1;
		closefd(bucket);
		if ((*bucket = subdir(sp, sp->cur, want, 1)) == -1)
			return -1;
	}
	return -1;
}

/*
 * Claims from/name for this run, or buries it if it has had its attempts.
 * Returns 1 when claimed, 0 when someone else got there first, -1 on error.
 */
static int
claim_one(struct claimer *c, int from, const char *name,
    const struct mq_name *old)
{
	struct mq_name nm = *old;
	char newname[MQ_NAME_MAX], receipt[4096];
	int n;

	if (old->attempts >= c->max) {
		if (mq_bury(c->sp, from, name, old, MQ_REASON_MAX_ATTEMPTS,
		    strlen(MQ_REASON_MAX_ATTEMPTS)) == -1)
			return errno == ENOENT ? 0 : -1;
		return 0;
	}
	/* Known before the first claim, and only once there is one. */
	if (mq_spool_real(c->sp) == -1)
		return -1;
	nm.ms = c->deadline;
	nm.attempts = old->attempts + 1;
	if (lease(c->sp, from, name, &nm, &c->bucket, c->bucketname,
	    sizeof(c->bucketname), newname, sizeof(newname)) == -1)
		return errno == ENOENT ? 0 : -1;
	n = snprintf(receipt, sizeof(receipt), "%s/%s/%s/%s", c->sp->real,
	    MQ_DIR_CUR, c->bucketname, newname);
	if (n < 0 || (size_t)n >= sizeof(receipt)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	c->got++;
	if (c->fn(c->arg, receipt, nm.id) == -1)
		return -1;
	return 1;
}

static int
is_bucket(const char *s)
{
	uint64_t v;

	return mq_cur_bucket_parse(s, &v) == 0;
}

static int
u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

typedef int (*expired_fn)(void *, int, const char *, const struct mq_name *);

/*
 * Hands each expired lease to fn, oldest bucket first, until fn has taken
 * `limit` (fn returns 1 for taken).  Sets *wake to the earliest lease still
 * running.  Past buckets left empty are removed.
 */
static int
scan_expired(struct mq_spool *sp, uint64_t now, int limit, expired_fn fn,
    void *arg, uint64_t *wake)
{
	struct mq_names buckets, names;
	struct mq_name nm;
	uint64_t *secs;
	size_t i, j, nb;
	int fd, r, taken = 0, done;
	char name[24];

	if (mq_names_read(sp->cur, DT_DIR, is_bucket, &buckets) == -1)
		return -1;
	secs = xreallocarray(NULL, buckets.n + 1, sizeof(*secs));
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
		snprintf(name, sizeof(name), "%" PRIu64, secs[j]);
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
	return claim_one(arg, fd, name, nm);
}

static int
is_top(const char *s)
{
	uint64_t k;

	return mq_key_parse(s, MQ_TOP_DIGITS, &k) == 0;
}

static int
is_mid(const char *s)
{
	uint64_t k;

	return mq_key_parse(s, MQ_MID_DIGITS, &k) == 0;
}

static int
is_leaf(const char *s)
{
	uint64_t k;

	return mq_key_parse(s, MQ_KEY_DIGITS, &k) == 0;
}

static int
is_new(const char *s)
{
	struct mq_name nm;

	return mq_name_parse(s, MQ_NEW, &nm) == 0;
}

void
mq_leaf_forget(struct mq_spool *sp)
{
	struct mq_names kept;

	if (sp->leaf == -1)
		return;
	close(sp->leaf);
	sp->leaf = -1;
	kept.v = sp->leaf_names;
	kept.n = sp->leaf_n;
	mq_names_free(&kept);
	sp->leaf_names = NULL;
}

/*
 * Claims from the names of a leaf listed by an earlier claim, in order;
 * a name another claimer took meanwhile costs one failed rename.  Returns
 * 1 when they are used up (the leaf is then listed again: what came in
 * since sorts after them), 0 when the run is complete, -1 on error.
 */
static int
claim_kept(struct claimer *c)
{
	struct mq_spool *sp = c->sp;
	struct mq_name nm;
	const char *name;

	while (sp->leaf_next < sp->leaf_n && c->got < c->want) {
		name = sp->leaf_names[sp->leaf_next++];
		mq_name_parse(name, MQ_NEW, &nm);
		if (claim_one(c, sp->leaf, name, &nm) == -1)
			return -1;
	}
	if (sp->leaf_next < sp->leaf_n)
		return 0;
	mq_leaf_forget(sp);
	return c->got < c->want;
}

/*
 * Claims from one due leaf in ID order.  Returns 1 when the leaf was
 * used up, 0 when the run is complete, -1 on error.
 */
static int
claim_leaf(struct claimer *c, int leaf)
{
	struct mq_spool *sp = c->sp;
	struct mq_names names;
	struct mq_name nm;
	size_t i;

	if (mq_names_read(leaf, DT_REG, is_new, &names) == -1)
		return -1;
	mq_names_sort(&names);
	for (i = 0; i < names.n && c->got < c->want; i++) {
		mq_name_parse(names.v[i], MQ_NEW, &nm);
		if (claim_one(c, leaf, names.v[i], &nm) == -1) {
			mq_names_free(&names);
			return -1;
		}
	}
	if (i < names.n && sp->keep_leaf &&
	    (sp->leaf = fcntl(leaf, F_DUPFD_CLOEXEC, 0)) != -1) {
		sp->leaf_names = names.v;
		sp->leaf_n = names.n;
		sp->leaf_next = i;
		return 0;
	}
	mq_names_free(&names);
	return c->got < c->want;
}

/*
 * Walks one level of new/ in key order.  At the leaf level, a leaf not yet
 * due ends the walk (every later one is later still).  Returns 1 when the
 * level was used up (and removes it), 0 when the run is complete.
 */
static int
walk(struct claimer *c, int dirfd, int digits)
{
	struct mq_names names;
	uint64_t key;
	size_t i;
	int fd, r = 1;

	if (mq_names_read(dirfd, DT_DIR, digits == MQ_TOP_DIGITS ? is_top :
	    digits == MQ_MID_DIGITS ? is_mid : is_leaf, &names) == -1)
		return -1;
	mq_names_sort(&names);
	for (i = 0; i < names.n && r == 1; i++) {
		mq_key_parse(names.v[i], digits, &key);
		if (key > c->now && digits == MQ_KEY_DIGITS) {
			if (key < c->wake)
				c->wake = key;
			r = 0;
			break;
		}
		if ((fd = mq_opendirat(dirfd, names.v[i])) == -1) {
			if (errno == ENOENT)
				continue;
			r = -1;
			break;
		}
		if (digits == MQ_KEY_DIGITS)
			r = claim_leaf(c, fd);
		else
			r = walk(c, fd, digits == MQ_TOP_DIGITS ?
			    MQ_MID_DIGITS : MQ_KEY_DIGITS);
		close(fd);
		if (r == 1)
			unlinkat(dirfd, names.v[i], AT_REMOVEDIR);
	}
	mq_names_free(&names);
	return r;
}

/*
 * Claims up to want visible messages with a lease of lease_ms: expired
 * leases first (they have waited longest), then new/ oldest first.  fn is
 * called with each receipt as soon as its claim is made.  *wake is set to
 * when something next becomes visible (UINT64_MAX: nothing known).
 * With sp->keep_leaf, what is left of the leaf it listed is kept for the
 * next call, so that one claim at a time does not list and sort a whole
 * leaf each time; anything sent since sorts after those names, as new
 * leaves are keyed later than a due one.  Returns the number claimed or -1.
 */
int
mq_claim(struct mq_spool *sp, int want, uint64_t lease_ms, unsigned max,
    mq_claim_fn fn, void *arg, uint64_t *wake)
{
	struct claimer c;
	int r;

	memset(&c, 0, sizeof(c));
	c.sp = sp;
	c.now = mq_now_ms();
	c.deadline = c.now + lease_ms;
	c.max = max;
	c.want = want;
	c.bucket = -1;
	c.fn = fn;
	c.arg = arg;
	c.wake = UINT64_MAX;
	r = scan_expired(sp, c.now, want, claim_expired, &c, &c.wake);
	if (r != -1 && c.got < c.want && sp->leaf != -1)
		r = claim_kept(&c);
	if (r != -1 && c.got < c.want)
		r = walk(&c, sp->new, MQ_TOP_DIGITS);
	closefd(&c.bucket);
	*wake = c.wake;
	return r == -1 ? -1 : c.got;
}

/*
 * Checks that receipt is a claimed message of this spool and opens its
 * bucket.  Returns MQ_EX_OK, MQ_EX_USAGE (not a receipt; *why says why),
 * MQ_EX_LOST (the lease is gone) or MQ_EX_SYS (errno set).  The receipt
 * only selects names: the file is reached through the spool's own fds.
 * rc keeps its bucket open for the next receipt (see mq_receipt_close).
 */
int
mq_receipt_open(struct mq_spool *sp, const char *receipt,
    struct mq_receipt *rc, const char **why)
{
	char bname[sizeof(rc->bname)];
	const char *rest, *slash, *name;
	struct mq_name nm;
	struct stat st;
	uint64_t secs;
	size_t len;
	int fresh;

	*why = "not a receipt of this spool";
	if (mq_spool_real(sp) == -1)
		return MQ_EX_SYS;
	len = strlen(sp->real);
	if (strncmp(receipt, sp->real, len) != 0 || receipt[len] != '/')
		return MQ_EX_USAGE;
	rest = receipt + len + 1;
	if (strncmp(rest, MQ_DIR_CUR "/", strlen(MQ_DIR_CUR) + 1) != 0)
		return MQ_EX_USAGE;
	rest += strlen(MQ_DIR_CUR) + 1;
	if ((slash = strchr(rest, '/')) == NULL ||
	    (size_t)(slash - rest) >= sizeof(bname))
		return MQ_EX_USAGE;
	memcpy(bname, rest, slash - rest);
	bname[slash - rest] = '\0';
	name = slash + 1;
	if (mq_cur_bucket_parse(bname, &secs) == -1 ||
	    mq_name_parse(name, MQ_CUR, &nm) == -1 ||
	    mq_cur_bucket(nm.ms) != secs)
		return MQ_EX_USAGE;
	rc->name = name;
	rc->n = nm;
	*why = "lease lost";
	/* A batch of receipts shares a bucket: keep it open between them. */
	fresh = rc->bucket == -1 || strcmp(rc->bname, bname) != 0;
	for (;;) {
		if (fresh) {
			closefd(&rc->bucket);
			rc->bname[0] = '\0';
			if ((rc->bucket = mq_opendirat(sp->cur, bname)) == -1)
				return errno == ENOENT ? MQ_EX_LOST : MQ_EX_SYS;
			strlcpy(rc->bname, bname, sizeof(rc->bname));
		}
		if (fstatat(rc->bucket, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			break;
		if (errno != ENOENT)
			return MQ_EX_SYS;
		/* The bucket kept open may have been removed and made anew. */
		if (fresh)
			return MQ_EX_LOST;
		fresh = 1;
	}
	if (!S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		return MQ_EX_USAGE;
	}
	return MQ_EX_OK;
}

/* Names a receipt by its place in the spool when it has one. */
const char *
mq_receipt_shown(const struct mq_spool *sp, const char *receipt)
{
	size_t len;

	if (sp->real != NULL) {
		len = strlen(sp->real);
		if (strncmp(receipt, sp->real, len) == 0 &&
		    receipt[len] == '/')
			return receipt + len + 1;
	}
	return receipt;
}

void
mq_receipt_close(struct mq_receipt *rc)
{
	closefd(&rc->bucket);
}

/* Removes a cur/ bucket if it is empty; a claim racing it makes it anew. */
void
mq_cur_prune(struct mq_spool *sp, const char *bname)
{
	unlinkat(sp->cur, bname, AT_REMOVEDIR);
}

int
mq_ack(int bucket, const char *name)
{
	return unlinkat(bucket, name, 0);
}

int
mq_release(struct mq_placer *pl, int bucket, const char *name,
    const struct mq_name *nm, uint64_t due)
{
	char newname[MQ_NAME_MAX];

	if (mq_name_format(newname, sizeof(newname), MQ_NEW, nm) == -1)
		return -1;
	return mq_place(pl, bucket, name, newname, due);
}

/*
 * Writes a reason as reason/ID, through tmp/ so that it is whole or absent.
 * The errno of a failure is kept.
 */
static int
reason_put(struct mq_spool *sp, const char *id, const char *reason,
    size_t len)
{
	char tmpname[MQ_NAME_MAX];
	ssize_t w;
	size_t off;
	int fd, saved;

	snprintf(tmpname, sizeof(tmpname), "%s,reason", id);
	/* A crashed bury may have left its tmp file. */
	unlinkat(sp->tmp, tmpname, 0);
	if ((fd = mq_create(sp->tmp, tmpname, sp->fmode)) == -1)
		return -1;
	for (off = 0; off < len; off += w) {
		if ((w = write(fd, reason + off, len - off)) == -1) {
			if (errno == EINTR) {
				w = 0;
				continue;
			}
			goto fail;
		}
	}
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (renameat(sp->tmp, tmpname, sp->reason, id) == -1)
		goto fail;
	return 0;
fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	unlinkat(sp->tmp, tmpname, 0);
	errno = saved;
	return -1;
}

/*
 * The reason goes in first, so that a dead letter has one whenever there
 * is room for it; if the message is gone by the time of the rename, the
 * reason is taken back.  With no room for a reason the message is buried
 * without one: the body must get out of the way of a full file system, and
 * a missing reason says why it is missing (see mq-dlq(1)).
 */
int
mq_bury(struct mq_spool *sp, int from, const char *name,
    const struct mq_name *nm, const char *reason, size_t len)
{
	struct mq_name dead = *nm;
	char deadname[MQ_NAME_MAX];
	int saved, with;

	dead.ms = mq_now_ms();
	if (mq_spool_need(sp, 0) == -1 ||
	    mq_name_format(deadname, sizeof(deadname), MQ_DEAD, &dead) == -1)
		return -1;
	with = reason_put(sp, nm->id, reason, len) == 0;
	if (!with) {
		if (!full(errno))
			return -1;
		/* A reason of an earlier death must not stand for this one. */
		if (unlinkat(sp->reason, nm->id, 0) == -1 && errno != ENOENT)
			return -1;
	}
	if (renameat(from, name, sp->dead, deadname) == -1) {
		saved = errno;
		if (with)
			unlinkat(sp->reason, nm->id, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

/* Moves a lease to a new deadline; out gets the new receipt. */
int
mq_extend(struct mq_spool *sp, int bucket, const char *name,
    const struct mq_name *nm, uint64_t deadline, char *out, size_t size)
{
	struct mq_name ext = *nm;
	char bucketname[24], newname[MQ_NAME_MAX];
	int fd = -1, n;

	ext.ms = deadline;
	if (lease(sp, bucket, name, &ext, &fd, bucketname, sizeof(bucketname),
	    newname, sizeof(newname)) == -1) {
		closefd(&fd);
		return -1;
	}
	closefd(&fd);
	n = snprintf(out, size, "%s/%s/%s/%s", sp->real, MQ_DIR_CUR,
	    bucketname, newname);
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

struct reclaimer {
	struct mq_spool	*sp;
	struct mq_placer pl;
	unsigned	 max;
	uint64_t	 now;
	void		(*report)(const char *, const char *);
};

static int
reclaim_one(void *arg, int fd, const char *name, const struct mq_name *nm)
{
	struct reclaimer *rc = arg;

	if (nm->attempts >= rc->max) {
		if (mq_bury(rc->sp, fd, name, nm, MQ_REASON_MAX_ATTEMPTS,
		    strlen(MQ_REASON_MAX_ATTEMPTS)) == -1)
			return errno == ENOENT ? 0 : -1;
		if (rc->report != NULL)
			rc->report(nm->id, "dead: " MQ_REASON_MAX_ATTEMPTS);
		return 1;
	}
	if (mq_release(&rc->pl, fd, name, nm, rc->now) == -1)
		return errno == ENOENT ? 0 : -1;
	if (rc->report != NULL)
		rc->report(nm->id, "lease expired: back to new");
	return 1;
}

/* Moves every expired lease back to new/, or to dead/ at max attempts. */
int
mq_reclaim(struct mq_spool *sp, unsigned max,
    void (*report)(const char *, const char *))
{
	struct reclaimer rc;
	uint64_t wake = UINT64_MAX;
	int r, saved;

	rc.sp = sp;
	rc.max = max;
	rc.now = mq_now_ms();
	rc.report = report;
	mq_placer_init(&rc.pl, sp, 0);
	rc.pl.spares = 1;
	r = scan_expired(sp, rc.now, INT32_MAX, reclaim_one, &rc, &wake);
	if (mq_placer_flush(&rc.pl) == -1)
		r = -1;
	saved = errno;
	mq_placer_close(&rc.pl);
	errno = saved;
	return r;
}

/*
 * Removes empty directories of new/ whose time has passed.  A sender that
 * loses its leaf this way makes it again (see mq_place).
 */
static void
prune(int dirfd, int digits, uint64_t before)
{
	struct mq_names names;
	uint64_t key;
	size_t i;
	int fd;

	if (mq_names_read(dirfd, DT_DIR, digits == MQ_TOP_DIGITS ? is_top :
	    digits == MQ_MID_DIGITS ? is_mid : is_leaf, &names) == -1)
		return;
	for (i = 0; i < names.n; i++) {
		mq_key_parse(names.v[i], digits, &key);
		if (key >= before)
			continue;
		if (digits != MQ_KEY_DIGITS &&
		    (fd = mq_opendirat(dirfd, names.v[i])) != -1) {
			prune(fd, digits == MQ_TOP_DIGITS ? MQ_MID_DIGITS :
			    MQ_KEY_DIGITS, before);
			close(fd);
		}
		unlinkat(dirfd, names.v[i], AT_REMOVEDIR);
	}
	mq_names_free(&names);
}

void
mq_prune(struct mq_spool *sp)
{
	prune(sp->new, MQ_TOP_DIGITS, mq_now_ms() - MQ_LEAF_SPAN_MS);
}

static int
is_ours(const char *s)
{
	const char *comma = strchr(s, ',');
	char id[MQ_ID_LEN + 1];
	size_t len = comma ? (size_t)(comma - s) : strlen(s);

	if (len > MQ_ID_LEN || (comma != NULL && strcmp(comma, ",reason")))
		return 0;
	memcpy(id, s, len);
	id[len] = '\0';
	return mq_id_valid(id);
}

/* Dead letters are listed in ID order, so an ID can be looked up. */
static int
dead_cmp(const void *id, const void *d)
{
	return strcmp(id, ((const struct mq_dead *)d)->n.id);
}

/*
 * Removes tmp/ fragments of crashed senders and reasons whose dead letter
 * is gone, once they are older than age seconds.
 */
int
mq_tmp_clean(struct mq_spool *sp, uint64_t age,
    void (*report)(const char *, const char *))
{
	struct mq_names names;
	struct mq_dead *dead;
	struct stat st;
	size_t ndead;
	time_t cutoff = mq_now_ms() / 1000 - age;
	size_t i;

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
	/* One listing of dead/ serves every reason. */
	if (mq_dead_list(sp, &dead, &ndead) == -1)
		return -1;
	if (mq_names_read(sp->reason, DT_REG, mq_id_valid, &names) == -1) {
		free(dead);
		return -1;
	}
	for (i = 0; i < names.n; i++) {
		if (fstatat(sp->reason, names.v[i], &st, AT_SYMLINK_NOFOLLOW)
		    == -1 || st.st_mtime > cutoff)
			continue;
		if (bsearch(names.v[i], dead, ndead, sizeof(*dead), dead_cmp))
			continue;
		if (unlinkat(sp->reason, names.v[i], 0) == 0 && report != NULL)
			report(names.v[i], "orphan reason removed");
	}
	free(dead);
	mq_names_free(&names);
	return 0;
}
