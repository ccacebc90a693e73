/*
 * enqueue.c: what a spool asks of each message that enters it, once it is
 * written into tmp/ (send.c) and its data synced: its dedup key looked up
 * and held under the lock of keys/, room made or found under max-depth,
 * the message landed (land.c: tree or group), and the directories it
 * went into synced.  mq-send (one spool or several: fan.c), mq-relay pull
 * and a redrive (its landing and sync) go this one way; what they add is
 * their own: fan.c what is about several spools, credit and waiting for
 * room; pull.c the broker's side.
 *
 *	tmp/ID	(written, synced: mq_tmp_sync)
 *	  -k	keys/HASH, keys/ID under keys/'s lock	(mq_enq_key_*)
 *	  room	new/ counted, expired buried, oldest dropped	(mq_enq_count,
 *		mq_enq_make_room)
 *	  land	-> new/T/M/L/ID,0...  or parked in its group	(mq_enq_land)
 *	  sync	new/'s directories, groups/ after a parking's failed sync
 *		(mq_enq_flush)
 */
#include <errno.h>

#include "mq.h"

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
	mq_placer_init(&eq->pl, sp, sync);
	mq_keys_init(&eq->keys, sp);
}

void
mq_enq_close(struct mq_enqueue *eq)
{
	mq_placer_close(&eq->pl);
	mq_keys_close(&eq->keys);
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

/*
 * overflow=drop-oldest, before n messages are landed: dead-letters as
 * many of the oldest waiting ones as they need room for under max-depth,
 * once the count has buried the expired ones (as "expired": they make
 * room without a drop); fn is told each ID dropped.  The count goes as far
 * as max-depth plus n, so that what concurrent senders put beyond
 * max-depth is taken off too.  *left is the room left after the n.  0, or
 * -1 (errno).
 */
int
mq_enq_make_room(struct mq_enqueue *eq, uint64_t n, mq_drop_fn fn, void *arg,
    uint64_t *left)
{
	uint64_t max = mq_settings(eq->sp)->max_depth, have;

	if (mq_enq_count(eq, max + n, 0, &have) == -1)
		return -1;
	if (have + n > max && mq_depth_drop(eq->sp, have + n - max, fn,
	    arg) == -1)
		return -1;
	*left = have + n >= max ? 0 : max - have - n;
	return 0;
}

/*
 * Lands tmp/ID, a message written and synced, named as nm says, visible
 * at due (land.c).  Its place in new/ is durable after mq_enq_flush.
 */
int
mq_enq_land(struct mq_enqueue *eq, const struct mq_name *nm, uint64_t due)
{
	return mq_tmp_land(&eq->pl, nm, due);
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
	return 0;
}
