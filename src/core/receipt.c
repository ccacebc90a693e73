/*
 * receipt.c: leases and their receipts.  A lease is a file in cur/S/ (S:
 * the second its deadline falls in); its receipt is the absolute path of
 * that file, in one format (mq_receipt_format), checked by one parser
 * (mq_receipt_open; mq_receipt_spool, the spool it names).  What a
 * receipt's holder does with its lease, each returning an mq_exit status
 * (MQ_EX_LOST: the lease is gone):
 *
 *	extend	cur/S/ID,DEADLINE,A	-> cur/S'/ID,DEADLINE',A
 *			(mq_receipt_extend, by mq_lease)
 *	release	cur/S/ID,DEADLINE,A	-> new/T/M/L/ID,A
 *			(mq_receipt_release, by mq_place_back; its reason,
 *			if it gives one, first: mq_reason_keep)
 *	unclaim	cur/S/ID,DEADLINE,A	-> new/T/M/L/ID,A-1
 *			(mq_receipt_unclaim: the claim's attempt given back)
 *	bury	cur/S/ID,DEADLINE,A	-> dead/ID,DIED,A
 *			(mq_receipt_bury, by mq_bury)
 *	ack	cur/S/ID,DEADLINE,A	-> (unlinked), and deaths/ID if any
 *			(mq_receipt_ack, by mq_leave; the head of a group
 *			hands its turn on as it goes: so does a burial,
 *			dead.c)
 *
 * A receipt only selects names: the file is reached through the spool's
 * own fds.  A bucket of cur/ left empty by a batch of receipts is removed
 * once the batch has moved on from it, or when the receipt is closed.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"


/*
 * Moves from/name into cur/ with the lease nm says (its deadline and
 * attempts), as out.  b is the bucket the last lease went to: one kept
 * open serves a batch whose deadlines share a second.
 */
int
mq_lease(struct mq_spool *sp, int from, const char *name,
    const struct mq_name *nm, struct mq_bucket *b, char *out, size_t osize)
{
	uint64_t secs = mq_cur_bucket(nm->ms);
	int i;

	if (mq_name_format(out, osize, MQ_CUR, nm) == -1)
		return -1;
	/* The bucket's name is made only when it changes. */
	if (b->fd == -1 || b->secs != secs) {
		mq_closefd(&b->fd);
		if (mq_cur_bucket_format(b->name, sizeof(b->name), secs) == -1 ||
		    (b->fd = mq_spool_subdir(sp, sp->cur, b->name, 1)) == -1)
			return -1;
		b->secs = secs;
	}
	for (i = 0; i < MQ_RETRIES; i++) {
		if (renameat(from, name, b->fd, out) == 0)
			return 0;
		if (errno != ENOENT || !mq_exists(from, name))
			return -1;
		mq_closefd(&b->fd);
		if ((b->fd = mq_spool_subdir(sp, sp->cur, b->name, 1)) == -1)
			return -1;
	}
	return -1;
}

/*
 * The receipt of the lease bucket/name: the one format that
 * mq_receipt_open reads.  The spool's real path must be known.
 */
int
mq_receipt_format(char *buf, size_t size, const struct mq_spool *sp,
    const char *bucket, const char *name)
{
	size_t lr = strlen(sp->real), lc = strlen(MQ_DIR_CUR),
	    lb = strlen(bucket), ln = strlen(name);
	char *p = buf;

	/* Not snprintf: a claim formats one a message. */
	if (lr + lc + lb + ln + 3 >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(p, sp->real, lr);
	p += lr;
	*p++ = '/';
	memcpy(p, MQ_DIR_CUR, lc);
	p += lc;
	*p++ = '/';
	memcpy(p, bucket, lb);
	p += lb;
	*p++ = '/';
	memcpy(p, name, ln);
	p[ln] = '\0';
	return 0;
}

/*
 * Parses receipt as a claimed message of this spool into rc (its name
 * and fields), and says whether rc's bucket kept open is the one it names
 * (0) or is to be opened (1); else MQ_EX_USAGE or MQ_EX_SYS, negated.
 */
static int
parse(struct mq_spool *sp, const char *receipt, struct mq_receipt *rc,
    char *bname, const char **why)
{
	const char *rest, *slash, *name;
	struct mq_name nm;
	uint64_t secs;
	size_t len;

	*why = "not a receipt of this spool";
	if (mq_spool_real(sp) == -1)
		return -MQ_EX_SYS;
	len = strlen(sp->real);
	if (strncmp(receipt, sp->real, len) != 0 || receipt[len] != '/')
		return -MQ_EX_USAGE;
	rest = receipt + len + 1;
	if (strncmp(rest, MQ_DIR_CUR "/", strlen(MQ_DIR_CUR) + 1) != 0)
		return -MQ_EX_USAGE;
	rest += strlen(MQ_DIR_CUR) + 1;
	if ((slash = strchr(rest, '/')) == NULL ||
	    (size_t)(slash - rest) >= MQ_BUCKET_MAX)
		return -MQ_EX_USAGE;
	memcpy(bname, rest, slash - rest);
	bname[slash - rest] = '\0';
	name = slash + 1;
	if (mq_cur_bucket_parse(bname, &secs) == -1 ||
	    mq_name_parse(name, MQ_CUR, &nm) == -1 ||
	    mq_cur_bucket(nm.ms) != secs)
		return -MQ_EX_USAGE;
	rc->sp = sp;
	rc->name = name;
	rc->n = nm;
	*why = "lease lost";
	/* A batch of receipts shares a bucket: keep it open between them. */
	return rc->bucket == -1 || strcmp(rc->bname, bname) != 0;
}

/* Opens bname as rc's bucket: MQ_EX_OK, MQ_EX_LOST or MQ_EX_SYS. */
static int
bucket(struct mq_receipt *rc, const char *bname)
{
	mq_closefd(&rc->bucket);
	rc->bname[0] = '\0';
	if ((rc->bucket = mq_opendirat(rc->sp->cur, bname)) == -1)
		return errno == ENOENT ? MQ_EX_LOST : MQ_EX_SYS;
	strlcpy(rc->bname, bname, sizeof(rc->bname));
	return MQ_EX_OK;
}

/*
 * Checks that receipt is a claimed message of this spool and opens its
 * bucket.  Returns MQ_EX_OK, MQ_EX_USAGE (not a receipt; *why says why),
 * MQ_EX_LOST (the lease is gone) or MQ_EX_SYS (errno set).
 * rc keeps its bucket open for the next receipt (see mq_receipt_close).
 */
int
mq_receipt_open(struct mq_spool *sp, const char *receipt,
    struct mq_receipt *rc, const char **why)
{
	char bname[sizeof(rc->bname)];
	struct stat st;
	int fresh, r;

	if ((fresh = parse(sp, receipt, rc, bname, why)) < 0)
		return -fresh;
	for (;;) {
		if (fresh && (r = bucket(rc, bname)) != MQ_EX_OK)
			return r;
		if (fstatat(rc->bucket, rc->name, &st, AT_SYMLINK_NOFOLLOW) ==
		    0)
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

/*
 * As mq_receipt_open, for a receipt of the caller's own claim just made
 * (mq_claim handed it over) or of its own lease since (worker mode): its
 * lease is not looked at, as the claim moved a regular file there; a
 * lease lost since shows as ENOENT from what is done with it next
 * (mq_receipt_body, the ack, the release), as does the bucket kept open
 * when it was removed and made anew meanwhile: mq_receipt_open then
 * tells which.  One system call less a message.
 */
int
mq_receipt_claimed(struct mq_spool *sp, const char *receipt,
    struct mq_receipt *rc, const char **why)
{
	char bname[sizeof(rc->bname)];
	int fresh;

	if ((fresh = parse(sp, receipt, rc, bname, why)) < 0)
		return -fresh;
	return fresh ? bucket(rc, bname) : MQ_EX_OK;
}

/*
 * A receipt opened before in rc, again: bname its bucket, name and nm as
 * mq_receipt_open found them.  0 when rc's bucket kept open is bname, as
 * settling it needs no other look (a lease lost shows as ENOENT from the
 * unlink or rename, and a bucket holding a lease is never removed); -1
 * when it is not (mq_receipt_open then).
 */
int
mq_receipt_again(struct mq_receipt *rc, const char *bname, const char *name,
    const struct mq_name *nm)
{
	if (rc->bucket == -1 || strcmp(rc->bname, bname) != 0)
		return -1;
	rc->name = name;
	rc->n = *nm;
	return 0;
}

/*
 * The spool a receipt names: its path up to /cur/S/NAME, in dir.  Returns
 * -1 when it does not have a receipt's form at all.
 */
int
mq_receipt_spool(const char *receipt, char *dir, size_t size)
{
	const char *p, *slash[3];
	int n = 0;

	if (receipt[0] != '/')
		return -1;
	for (p = receipt + strlen(receipt); p > receipt && n < 3; p--)
		if (p[-1] == '/')
			slash[n++] = p - 1;
	if (n < 3 || slash[0][1] == '\0' || slash[0] == slash[1] + 1 ||
	    (size_t)(slash[1] - slash[2]) != strlen(MQ_DIR_CUR) + 1 ||
	    strncmp(slash[2] + 1, MQ_DIR_CUR, strlen(MQ_DIR_CUR)) != 0 ||
	    slash[2] == receipt || (size_t)(slash[2] - receipt) >= size)
		return -1;
	memcpy(dir, receipt, slash[2] - receipt);
	dir[slash[2] - receipt] = '\0';
	return 0;
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

/*
 * What becomes of a settled lease's status: ENOENT from its rename or
 * unlink is the lease lost (acked, released or claimed again meanwhile).
 */
static int
settled(int r)
{
	if (r == 0)
		return MQ_EX_OK;
	return errno == ENOENT ? MQ_EX_LOST : MQ_EX_SYS;
}

/*
 * A batch leaves no empty bucket behind once it has moved on from it: the
 * bucket of the last lease settled is removed (if empty) when one in
 * another bucket is settled, by mq_receipt_prune, or on close.
 */
static void
moved_on(struct mq_receipt *rc)
{
	if (strcmp(rc->pruned, rc->bname) == 0)
		return;
	if (rc->pruned[0] != '\0')
		unlinkat(rc->sp->cur, rc->pruned, AT_REMOVEDIR);
	strlcpy(rc->pruned, rc->bname, sizeof(rc->pruned));
}

static int
ack(struct mq_receipt *rc, int done)
{
	int st;

	if ((st = settled(done ? mq_leave_done(rc->sp, rc->bucket, rc->name,
	    &rc->n) : mq_leave(rc->sp, rc->bucket, rc->name, &rc->n))) ==
	    MQ_EX_OK) {
		moved_on(rc);
		mq_count(rc->sp, MQ_COUNT_ACKED, 1);
		mq_log_begin(rc->sp, "ack", rc->n.id);
		mq_log_num("attempt", rc->n.attempts);
		mq_log_end();
	}
	return st;
}

/* Done: the message leaves the spool (leave.c). */
int
mq_receipt_ack(struct mq_receipt *rc)
{
	return ack(rc, 0);
}

/*
 * Done with --once: the message leaves the spool into the ledger, its own
 * record (once.c); durable once mq_once_sync has returned 0.
 */
int
mq_receipt_done(struct mq_receipt *rc)
{
	return ack(rc, 1);
}

/*
 * A reason given goes in first (last/ID: mq_reason_keep), to be named by
 * the message's death for attempts; without one, the last reason given
 * stays.  A release that finds its lease lost takes back the reason it
 * wrote (the message may be a dead letter by now).  With no room for it,
 * the message is released all the same, as it is buried (dead.c), and
 * rc->unkept says so; once the release is done (the lease was this
 * one's), an earlier reason must not stand for this one.
 */
static int
release(struct mq_receipt *rc, struct mq_placer *pl, uint64_t due,
    const struct mq_name *nm, const char *reason, size_t len)
{
	struct mq_kept k;
	int st, kept = 0;

	rc->unkept = 0;
	if (reason != NULL) {
		if (mq_reason_keep(rc->sp, nm->id, reason, len, &k) == 0)
			kept = 1;
		else if (mq_spool_full(errno))
			rc->unkept = errno;
		else
			return MQ_EX_SYS;
	}
	st = settled(mq_place_back(pl, rc->bucket, rc->name, nm, due));
	if (st == MQ_EX_OK) {
		moved_on(rc);
		if (rc->unkept != 0)
			mq_reason_drop(rc->sp, nm->id);
		mq_count(rc->sp, MQ_COUNT_RELEASED, 1);
		mq_log_begin(rc->sp, "release", nm->id);
		mq_log_num("attempt", rc->n.attempts);
		if (due > mq_now_ms())
			mq_log_num("delay_ms", due - mq_now_ms());
		if (reason != NULL)
			mq_log_str("reason", reason, len);
		mq_log_end();
	} else if (st == MQ_EX_LOST && kept)
		mq_reason_unkeep(rc->sp, nm->id, &k);
	return st;
}

/* Back to new/, visible at due, with its attempts (and reason, or NULL). */
int
mq_receipt_release(struct mq_receipt *rc, struct mq_placer *pl, uint64_t due,
    const char *reason, size_t len)
{
	return release(rc, pl, due, &rc->n, reason, len);
}

/*
 * Back to new/, visible now, as it was before its claim: the attempt the
 * claim counted is taken back in the same rename.  For a claim that was
 * no fault of the message's (worker mode: a command that cannot run).
 */
int
mq_receipt_unclaim(struct mq_receipt *rc, struct mq_placer *pl,
    const char *reason, size_t len)
{
	struct mq_name nm = rc->n;

	if (nm.attempts > 0)
		nm.attempts--;
	return release(rc, pl, mq_now_ms(), &nm, reason, len);
}

/*
 * Dead-lettered with reason (len bytes), for cause: rejected (mq-ack -x, a
 * job's exit 65), attempts (a worker's last failed one).
 */
int
mq_receipt_bury(struct mq_receipt *rc, const char *reason, size_t len,
    enum mq_cause cause)
{
	int st;

	if ((st = settled(mq_bury(rc->sp, rc->bucket, rc->name, &rc->n,
	    reason, len, cause))) == MQ_EX_OK)
		moved_on(rc);
	return st;
}

/*
 * The lease moved to a new deadline; out gets the new receipt.  rc still
 * describes the lease as it was.
 */
int
mq_receipt_extend(struct mq_receipt *rc, uint64_t deadline, char *out,
    size_t size)
{
	struct mq_name ext = rc->n;
	struct mq_bucket b = { -1, "", 0 };
	char newname[MQ_NAME_MAX];
	int r;

	ext.ms = deadline;
	r = mq_lease(rc->sp, rc->bucket, rc->name, &ext, &b, newname,
	    sizeof(newname));
	mq_closefd(&b.fd);
	if (r == -1)
		return settled(r);
	return settled(mq_receipt_format(out, size, rc->sp, b.name, newname));
}

/*
 * Removes the bucket of the last lease settled now, if it is empty.  The
 * bucket kept open is closed if that was it: a claim may make it anew,
 * and a lease selected in it without a look (mq_receipt_claimed) must not
 * be looked for in the one removed.
 */
void
mq_receipt_prune(struct mq_receipt *rc)
{
	if (rc->pruned[0] != '\0' &&
	    unlinkat(rc->sp->cur, rc->pruned, AT_REMOVEDIR) == 0 &&
	    strcmp(rc->pruned, rc->bname) == 0) {
		mq_closefd(&rc->bucket);
		rc->bname[0] = '\0';
	}
	rc->pruned[0] = '\0';
}

/* The claimed message's body, opened to read; -1 with errno. */
int
mq_receipt_body(const struct mq_receipt *rc)
{
	return openat(rc->bucket, rc->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}

void
mq_receipt_init(struct mq_receipt *rc)
{
	memset(rc, 0, sizeof(*rc));
	rc->bucket = -1;
}

/* Closes the bucket kept open, and removes the last one settled if empty. */
void
mq_receipt_close(struct mq_receipt *rc)
{
	mq_closefd(&rc->bucket);
	mq_receipt_prune(rc);
}
