/*
 * enqueue.c: what a spool asks of each message that enters it, once it is
 * written into tmp/ (send.c) and its data synced: its dedup key looked up
 * and held under the lock of keys/, room found under max-depth (admission:
 * credit, counts, waiting) or made (overflow=drop-oldest), the message
 * landed (land.c: tree or group), and the directories it went into
 * synced.  mq-send (one spool or several: fan.c), mq-relay pull and a
 * redrive (its admission, landing and sync: mq-dlq) go this one way;
 * what they add is their own: fan.c what is about several spools and
 * what is said of it; pull.c the broker's side.
 *
 *	tmp/ID	(written, synced: mq_tmp_sync)
 *	  -k	keys/HASH, keys/ID under keys/'s lock	(mq_enq_key_*)
 *	  room	credit, else new/ counted, expired buried	(mq_enq_next,
 *		mq_enq_admit, mq_enq_await), or oldest dropped
 *		(mq_enq_make_room)
 *	  land	-> new/T/M/L/ID,0...  or parked in its group	(mq_enq_land)
 *		(a redrive: dead/NAME -> the same		(mq_enq_redrive))
 *	  sync	new/'s directories, groups/ after a parking's failed sync
 *		(mq_enq_flush)
 *
 * With max-depth set, messages are admitted on credit: a count of new/
 * (bounded by max-depth; messages past their time to live are not counted
 * but buried) grants an eighth of the room it found, at least one, and is
 * taken again once that is used up.  So a sender alone never passes
 * max-depth, and each concurrent sender can overshoot by at most one
 * credit (mq-send(1) gives the bound).  Without max-depth nothing is
 * counted.
 */
#include <sys/stat.h>

#include <errno.h>
#include <string.h>

#include "mq.h"

/* A count grants room / CREDIT_DIV messages (at least one). */
#define CREDIT_DIV	8
/*
 * A sender waiting for room counts again at least this often, for room
 * made without a ring (a worker started before max-depth was set).
 */
#define ROOM_POLL_MS	1000

/*
 * Ready to take messages into sp, by its settings as last read (read by
 * the caller, again as it sees fit: mq_settings_read).  sp need not be
 * open yet, but must be before the first message; then init again.
 */
void
mq_enq_init(struct mq_enqueue *eq, struct mq_spool *sp, int sync)
{
	eq->sp = sp;
	eq->sync = sync;
	eq->parked_unsynced = 0;
	eq->credit = eq->until = 0;
	eq->watching = 0;
	mq_placer_init(&eq->pl, sp, sync);
	mq_keys_init(&eq->keys, sp);
}

void
mq_enq_close(struct mq_enqueue *eq)
{
	mq_placer_close(&eq->pl);
	mq_keys_close(&eq->keys);
	if (eq->watching)
		mq_wait_close(&eq->w);
	eq->watching = 0;
}

/*
 * Takes the lock of keys/ (made if missing), to look a key up and hold it
 * under: 0, or -1 (errno).
 */
int
mq_enq_key_lock(struct mq_enqueue *eq)
{
	if (mq_keys_open(&eq->keys, 1) == -1 || mq_keys_lock(&eq->keys) == -1)
		return -1;
	return 0;
}

/*
 * Under that lock, looks key up: MQ_KEY_FREE, or MQ_KEY_HELD (its
 * holder's ID in holder), the lock still held until mq_enq_key_done or
 * mq_enq_key_unlock.  Otherwise the lock is let go: -1 (errno), or
 * MQ_KEY_OTHER or MQ_KEY_BAD.
 */
int
mq_enq_key_look(struct mq_enqueue *eq, const char *key, size_t len,
    char *holder)
{
	int r;

	r = mq_key_look(&eq->keys, key, len,
	    mq_settings(eq->sp)->dedup_window_ms, holder);
	if (r != MQ_KEY_FREE && r != MQ_KEY_HELD)
		mq_enq_key_unlock(eq);
	return r;
}

/*
 * The key free (mq_enq_key_look), makes id its holder, durably with
 * sync: then the message is landed under the same lock.  -1 (errno): the
 * lock is let go.
 */
int
mq_enq_key_hold(struct mq_enqueue *eq, const char *key, size_t len,
    const char *id)
{
	if (mq_key_hold(&eq->keys, key, len, id, eq->sync) == 0)
		return 0;
	mq_enq_key_unlock(eq);
	return -1;
}

/*
 * After the landing of id, the key's holder (landed) or its failure: lets
 * the lock go, the hold taken back first if it did not land.  errno kept.
 */
void
mq_enq_key_done(struct mq_enqueue *eq, const char *hash, const char *id,
    int landed)
{
	int saved = errno;

	if (!landed)
		mq_key_drop(&eq->keys, hash, id);
	mq_enq_key_unlock(eq);
	errno = saved;
}

void
mq_enq_key_unlock(struct mq_enqueue *eq)
{
	int saved = errno;

	mq_keys_unlock(&eq->keys);
	errno = saved;
}

/*
 * Sets *n to the messages waiting in new/, or limit when there are that
 * many or more, burying those past the spool's ttl as it meets them
 * (mq_depth).  Parked messages of groups count with overflow=reject, or
 * whatever the overflow with all.  0, or -1 (errno).
 */
int
mq_enq_count(struct mq_enqueue *eq, uint64_t limit, int all, uint64_t *n)
{
	return mq_depth(eq->sp, limit, all || !mq_settings(eq->sp)->drop_oldest,
	    n);
}

/* What a count that found room grants: an eighth of it, at least one. */
static uint64_t
grant(uint64_t room)
{
	return room / CREDIT_DIV > 0 ? room / CREDIT_DIV : 1;
}

/*
 * Before a message is begun, with n in the batch not yet landed: whether
 * it may be (MQ_ENQ_GO), or the batch is to be landed first: at the end of
 * the credit with overflow=reject, to count again (MQ_ENQ_COUNT: then
 * mq_enq_admit); with drop-oldest, which makes its room as the batch lands
 * (mq_enq_make_room), once the batch is as large as a credit would be
 * (MQ_ENQ_PUBLISH).
 */
enum mq_enq_next
mq_enq_next(struct mq_enqueue *eq, uint64_t n)
{
	const struct mq_conf *c = mq_settings(eq->sp);

	if (c->max_depth == 0 || n < eq->credit)
		return MQ_ENQ_GO;
	if (c->drop_oldest)
		return n >= grant(c->max_depth) ? MQ_ENQ_PUBLISH : MQ_ENQ_GO;
	return MQ_ENQ_COUNT;
}

/*
 * Counts new/ for room under max-depth with overflow=reject: 1 (room; a
 * credit granted of it), 0 (none: mq_enq_await, or give up), or -1
 * (errno).  Without max-depth, or with drop-oldest, there is room (the
 * settings may have changed while waiting).
 */
int
mq_enq_admit(struct mq_enqueue *eq)
{
	const struct mq_conf *c = mq_settings(eq->sp);
	uint64_t n;

	eq->credit = 0;
	if (c->max_depth > 0 && !c->drop_oldest) {
		if (mq_enq_count(eq, c->max_depth, 0, &n) == -1)
			return -1;
		if (n >= c->max_depth)
			return 0;
		eq->credit = grant(c->max_depth - n);
	}
	eq->until = 0;
	return 1;
}

/*
 * No room: waits for the spool's doorbell (rung by claims while max-depth
 * is set, by mq-conf, and by counts that buried expired messages) or
 * ROOM_POLL_MS, then returns 0 for the caller to read the settings again
 * (raising or lifting max-depth lets a waiting sender go on) and count
 * again (mq_enq_admit: it buries what expired meanwhile, so expiry makes
 * room with no consumer).  The first call only opens the doorbell, before
 * the count that follows, so that no claim goes unseen.  -1: ETIMEDOUT
 * once wait_ms (UINT64_MAX: forever) have passed since the first call of
 * this wait, ENOENT when the spool was removed, or another errno.
 */
int
mq_enq_await(struct mq_enqueue *eq, uint64_t wait_ms)
{
	uint64_t now = mq_now_ms(), left;

	if (eq->until == 0)
		eq->until = wait_ms == UINT64_MAX ? UINT64_MAX : now + wait_ms;
	if (now >= eq->until) {
		errno = ETIMEDOUT;
		return -1;
	}
	if (!eq->watching) {
		if (mq_wait_open(&eq->w, eq->sp) == -1)
			return -1;
		eq->watching = 1;
		return 0;
	}
	left = eq->until - now;
	/* What was done so far is in the log before the wait (log.c). */
	mq_log_flush();
	if (mq_wait(&eq->w, left < ROOM_POLL_MS ? (int64_t)left :
	    ROOM_POLL_MS) == -1)
		return -1;
	return 0;
}

/*
 * overflow=drop-oldest, before n messages are landed that the credit does
 * not cover: dead-letters as many of the oldest waiting ones as they need
 * room for under max-depth, once the count has buried the expired ones (as
 * "ttl": they make room without a drop); fn is told each ID dropped.
 * The count goes as far as max-depth plus n, so that what concurrent
 * senders put beyond max-depth is taken off too; the credit is then the n
 * and a grant of the room left after them.  0, or -1 (errno).
 */
int
mq_enq_make_room(struct mq_enqueue *eq, uint64_t n, mq_drop_fn fn, void *arg)
{
	const struct mq_conf *c = mq_settings(eq->sp);
	uint64_t max = c->max_depth, have, left;

	if (max == 0 || !c->drop_oldest || n <= eq->credit)
		return 0;
	if (mq_enq_count(eq, max + n, 0, &have) == -1)
		return -1;
	if (have + n > max && mq_depth_drop(eq->sp, have + n - max, fn,
	    arg) == -1)
		return -1;
	left = have + n >= max ? 0 : max - have - n;
	eq->credit = n + (left > 0 ? grant(left) : 0);
	return 0;
}

/* A message entered (counted and logged: count.c, log.c); from: a redrive's. */
static void
sent(struct mq_spool *sp, const struct mq_name *nm, uint64_t due,
    struct mq_spool *from)
{
	uint64_t now = mq_now_ms();

	mq_count(sp, MQ_COUNT_SENT, 1);
	mq_log_begin(sp, "send", nm->id);
	if (nm->prio != 0)
		mq_log_num("prio", nm->prio);
	if (nm->group[0] != '\0')
		mq_log_str("group", nm->group, strlen(nm->group));
	if (due > now)
		mq_log_num("delay_ms", due - now);
	if (from != NULL)
		mq_log_str("from", from->real != NULL ? from->real : from->path,
		    strlen(from->real != NULL ? from->real : from->path));
	mq_log_end();
}

/*
 * Lands tmp/ID, a message written and synced, named as nm says, visible
 * at due (land.c), on a credit.  Its place in new/ is durable after
 * mq_enq_flush.
 */
int
mq_enq_land(struct mq_enqueue *eq, const struct mq_name *nm, uint64_t due)
{
	if (mq_tmp_land(&eq->pl, nm, due) == -1)
		return -1;
	if (eq->credit > 0)
		eq->credit--;
	sent(eq->sp, nm, due, NULL);
	return 0;
}

/*
 * Redrives the dead letter d of sp into eq's spool, on a credit, as a
 * send lands a message (dead.c: mq_dead_redrive, which says what history
 * and why are); its place is durable after mq_enq_flush, and what it
 * leaves in sp goes after that (mq_dead_redriven).
 */
int
mq_enq_redrive(struct mq_enqueue *eq, struct mq_spool *sp,
    const struct mq_dead *d, int *history, struct stat *why)
{
	if (mq_dead_redrive(sp, d, &eq->pl, history, why) == -1)
		return -1;
	if (eq->credit > 0)
		eq->credit--;
	mq_count(sp, MQ_COUNT_REDRIVEN, 1);
	mq_log_begin(sp, "redrive", d->n.id);
	mq_log_num("attempts", d->n.attempts);
	if (eq->sp->dev != sp->dev || eq->sp->ino != sp->ino) {
		mq_log_str("to", eq->sp->real != NULL ? eq->sp->real :
		    eq->sp->path, strlen(eq->sp->real != NULL ? eq->sp->real :
		    eq->sp->path));
		mq_log_end();
		sent(eq->sp, &d->n, 0, sp);
	} else
		mq_log_end();
	return 0;
}

/*
 * Syncs the directories the messages landed since went into, tries
 * times at most while it fails: 0, or -1 (errno).  A parked message whose
 * own sync failed (told once, by the placer's err) fails the flush at
 * once, and is remembered: until groups/ is synced (syncfs) every flush
 * fails, so that nothing parked is said to be durable before it is.
 */
int
mq_enq_flush(struct mq_enqueue *eq, int tries)
{
	int parked = eq->pl.err, r;

	if (parked != 0)
		eq->parked_unsynced = 1;
	while ((r = mq_placer_flush(&eq->pl)) == -1 && parked == 0 &&
	    eq->pl.dirty && --tries > 0)
		;
	if (r == -1)
		return -1;
	if (eq->parked_unsynced) {
		if (mq_group_sync(eq->sp) == -1)
			return -1;
		eq->parked_unsynced = 0;
	}
	/* Their count as durable as they are (count.c). */
	if (eq->sync && mq_counts_sync(eq->sp) == -1)
		return -1;
	return 0;
}
