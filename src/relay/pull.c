/*
 * pull.c: mq-relay pull, broker -> local spool; the spool's side of each
 * message (keys, room, landing, sync) is the enqueue's (enqueue.c).
 * Consumes the queue with manual acks and a prefetch of MAX (PREFETCH_MAX
 * at most); each delivery is written
 * into tmp/ under its message-id as the mq ID (a fresh ID when it has none
 * usable), the batch synced, then placed in new/ with what the x-mq-* headers
 * say (priority, group, key, attempts, sent, ttl), the directories synced, and
 * only then is the batch acked to the broker (one basic.ack, multiple).
 *
 * A delivery whose ID is already in the spool (waiting, parked or in
 * flight: one walk of the spool per batch, dead/ left out) is not added
 * twice, redelivered or not: a push that died between the broker's
 * confirm and its local ack publishes the message again, unflagged.  A
 * keyed message whose key is held is not added (mq-send -k).  A batch is
 * what comes while deliveries keep coming (GATHER_MS of silence ends it),
 * up to the room and MQ_BATCH_MAX, so that one sync and one walk cover
 * many.  Flow control: at most MAX messages wait in new/ (fewer when the
 * spool's max-depth is lower); the spool is counted once per batch, and
 * its conf read again when it changed.  While there is no room pull holds
 * nothing: what is in hand goes back (basic.nack, requeue), the consumer
 * is cancelled (basic.cancel), the socket still serviced (heartbeats), and
 * the spool counted again every second until there is room; then it
 * consumes again.  With -1 a full spool ends the run, what is in hand
 * returned to the broker.  A local failure returns what was not placed to
 * the broker (basic.nack, requeue) for another host to take, is named once
 * (until a batch succeeds), and pauses pull, consumer cancelled, 1 s
 * doubling up to 10 s while it keeps failing; with -1 it ends the run.
 * After a failure in a batch each delivery is settled on its own: those
 * already here acked, only those not placed returned.
 *
 * A delivery already here is acked only after a syncfs of the spool (the
 * copy found may be in the page cache alone: placed by a pull whose sync
 * failed, redelivered since); one for the batch.  A message placed
 * (renamed into new/, or parked in its group) whose directories then fail
 * to sync (new/'s twice), or one already here whose syncfs fails, is
 * neither acked (it may not survive a crash here) nor nacked (another
 * host would take it too): it stays unacked, held by this consumer.
 * With -1 the run ends (exit 4) and the broker, as the connection closes,
 * redelivers it: a pull of this spool finds the copy placed and does not
 * add it twice.  Without -1 pull consumes no more
 * and tries the sync again after each pause (a parked message's, or one
 * already here, by a syncfs: a parking's failed sync is remembered by
 * the enqueue until then); once it succeeds, those deliveries are acked
 * and pull goes on.
 */
#include <sys/time.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"
#include "broker.h"

#define SLICE_MS	250	/* every wait, for the signal flag */
#define IDLE_MS		1000	/* -1: no delivery that long -> count */
#define FAIL_PAUSE_MS	1000	/* after a local failure, doubling... */
#define FAIL_PAUSE_MAX_MS 10000	/* ...up to this while it keeps failing */
#define ROOM_MS		1000	/* no room: counted again this often */
#define GIVE_UP_MS	60000	/* -1: no connection that long -> exit 4 */
#define GATHER_MS	5	/* a batch ends after this long without one */
/*
 * Two batches: one written while the next comes.  A larger prefetch buys
 * nothing, and a quorum queue with as many messages ready gathers all of
 * them before it sends the first (20,000 with a prefetch of 65535: a
 * second and more, so that -1 took the queue for empty).
 */
#define PREFETCH_MAX	(2 * MQ_BATCH_MAX)
#define SEND_MS		30000	/* an ack, nack or close-ok stuck this long */

/* The states a delivery's ID is looked for in (not dead/: it can be huge). */
#define HERE_STATES	(1u << MQ_LOOK_EXPIRED | 1u << MQ_LOOK_READY | \
	1u << MQ_LOOK_DELAYED | 1u << MQ_LOOK_BLOCKED | 1u << MQ_LOOK_INFLIGHT | \
	1u << MQ_LOOK_ORPHANED)

/* The largest sent time a name holds: 15 digits. */
#define SENT_MAX	999999999999999ULL

enum fate {
	F_NONE,		/* not yet handled */
	F_WRITTEN,	/* in tmp/, to be placed */
	F_HERE,		/* already here: acked, not added */
	F_PLACED,	/* in new/ */
	F_FAILED,	/* not placed: removed from tmp/, to be nacked */
	F_HELD,		/* in new/, its directories not synced: left unacked */
	F_HELD_HERE	/* already here, the spool not synced: left unacked */
};

struct held {
	amqp_envelope_t	 env;
	struct mq_name	 n;
	char		 key[MQ_KEY_MAX + 1];
	size_t		 keylen;	/* with a valid key only */
	int		 keyed;
	enum fate	 fate;
};

/* A batch's ID, sorted, for the walk that looks for them in the spool. */
struct ref {
	const char	*id;
	size_t		 i;		/* its first delivery in the batch */
	int		 hit;		/* met in the spool */
};

struct puller {
	struct mq_broker *b;
	struct mq_spool	 sp;
	struct mq_enqueue eq;		/* keys, room, landing, sync */
	unsigned	 max;
	int		 once;
	struct held	*hand;		/* deliveries received, not yet settled */
	size_t		 nhand, cap;
	int		 consuming;	/* qos and consume done on b->ch */
	int		 resting;	/* consumer cancelled: full, or a pause */
	amqp_bytes_t	 ctag;		/* the consumer's tag */
	int		 connected_once;
	uint64_t	 added;		/* in all */
	char		 ids[MQ_BATCH_MAX][MQ_ID_LEN + 1];
	struct ref	 refs[MQ_BATCH_MAX];
	size_t		 nrefs, nhits;
	int		 walk_error;	/* a directory the walk could not read */
	/* Placed, their directories not synced: neither acked nor nacked. */
	size_t		 npending, pending_added;
	uint64_t	 pending_tag;	/* the last of them */
	/*
	 * What must be synced before a pending one is acked, besides what
	 * the enqueue's flush remembers (groups/, after a parking's sync
	 * failed): the spool, a copy found here maybe only in the page cache,
	 * by syncfs(2).
	 */
	int		 here_unsynced;
	uint64_t	 pause_ms;	/* the next pause after a local failure */
	const char	*named_what;	/* the local failure named, until... */
	int		 named_errno;	/* ...a batch succeeds */
};

/*
 * rabbitmq-c's socket is non-blocking, and a method it sends (basic.ack,
 * basic.nack, channel.close-ok) waits for room in the socket with no time
 * limit: a broker that stops reading would hold pull for ever (a send
 * timeout, SO_SNDTIMEO, does nothing on such a socket).  So the watchdog
 * (mq_broker_guard) shuts the socket down when one is stuck SEND_MS (no
 * progress is counted under such a send): the send fails, and the
 * connection is lost as any other.  Stopping changes nothing.
 */
static int
ack(struct mq_broker *b, uint64_t tag, int multiple)
{
	int st;

	mq_broker_guard(b, SEND_MS, 0);
	st = amqp_basic_ack(b->conn, b->ch, tag, multiple);
	(void)mq_broker_unguard(b);
	return st;
}

/* A nack, with requeue. */
static int
nack(struct mq_broker *b, uint64_t tag, int multiple)
{
	int st;

	mq_broker_guard(b, SEND_MS, 0);
	st = amqp_basic_nack(b->conn, b->ch, tag, multiple, 1);
	(void)mq_broker_unguard(b);
	return st;
}

static int
stopped(const struct puller *p)
{
	return p->b->stop != NULL && *p->b->stop;
}

/* Forgets every delivery in hand (settled, or its channel is gone). */
static void
forget_hand(struct puller *p)
{
	size_t i;

	for (i = 0; i < p->nhand; i++)
		amqp_destroy_envelope(&p->hand[i].env);
	p->nhand = 0;
}

/* The channel is gone: the broker has every unacked delivery back. */
static void
gone(struct puller *p)
{
	forget_hand(p);
	p->consuming = 0;
	p->resting = 0;
	p->npending = 0;
}

static void
lost(struct puller *p, const char *why)
{
	gone(p);
	mq_broker_drop(p->b, why);
}

/* basic.qos and basic.consume on the broker's channel. */
static int
consume(struct puller *p)
{
	struct mq_broker *b = p->b;
	amqp_basic_consume_ok_t *ok;
	amqp_rpc_reply_t r;

	if (amqp_basic_qos(b->conn, b->ch, 0, (uint16_t)(p->max < PREFETCH_MAX ?
	    p->max : PREFETCH_MAX), 0) == NULL) {
		r = amqp_get_rpc_reply(b->conn);
		lost(p, mq_broker_error(r));
		return -1;
	}
	if ((ok = amqp_basic_consume(b->conn, b->ch,
	    amqp_cstring_bytes(b->queue), amqp_empty_bytes, 0, 0, 0,
	    amqp_empty_table)) == NULL) {
		r = amqp_get_rpc_reply(b->conn);
		lost(p, mq_broker_error(r));
		return -1;
	}
	amqp_bytes_free(p->ctag);
	p->ctag = amqp_bytes_malloc_dup(ok->consumer_tag);
	if (p->ctag.bytes == NULL)
		err(MQ_EX_SYS, NULL);
	p->consuming = 1;
	p->resting = 0;
	return 0;
}

/*
 * Connected and consuming, or -1: the first connection with -1 failed on
 * every node, or, with -1, no connection for GIVE_UP_MS, or stopped.
 */
static int
connected(struct puller *p)
{
	struct mq_broker *b = p->b;

	while (b->conn == NULL || b->ch == 0 ||
	    (!p->consuming && !p->resting)) {
		if (stopped(p))
			return -1;
		if (b->conn == NULL || b->ch == 0)
			gone(p);
		if (b->conn == NULL) {
			if (mq_broker_connect(b, p->once && !p->connected_once,
			    p->once ? GIVE_UP_MS : 0) == -1)
				return -1;
			p->connected_once = 1;
		} else if (b->ch == 0 && mq_broker_new_channel(b) == -1)
			continue;
		if (consume(p) == -1)	/* no busy loop of reconnections */
			(void)mq_broker_pause(b, SLICE_MS);
	}
	return 0;
}

/* A header's value as an integer, of any AMQP integer kind; -1: not one. */
static int
header_int(const amqp_field_value_t *v, int64_t *out)
{
	switch (v->kind) {
	case AMQP_FIELD_KIND_I8:
		*out = v->value.i8;
		return 0;
	case AMQP_FIELD_KIND_U8:
		*out = v->value.u8;
		return 0;
	case AMQP_FIELD_KIND_I16:
		*out = v->value.i16;
		return 0;
	case AMQP_FIELD_KIND_U16:
		*out = v->value.u16;
		return 0;
	case AMQP_FIELD_KIND_I32:
		*out = v->value.i32;
		return 0;
	case AMQP_FIELD_KIND_U32:
		*out = v->value.u32;
		return 0;
	case AMQP_FIELD_KIND_I64:
		*out = v->value.i64;
		return 0;
	case AMQP_FIELD_KIND_U64:
		if (v->value.u64 > INT64_MAX)
			return -1;
		*out = (int64_t)v->value.u64;
		return 0;
	default:
		return -1;
	}
}

static int
header_str(const amqp_field_value_t *v, amqp_bytes_t *out)
{
	if (v->kind != AMQP_FIELD_KIND_UTF8 && v->kind != AMQP_FIELD_KIND_BYTES)
		return -1;
	*out = v->value.bytes;
	return 0;
}

static int
named(const amqp_table_entry_t *e, const char *name)
{
	size_t len = strlen(name);

	return e->key.len == len && memcmp(e->key.bytes, name, len) == 0;
}

static void
bad_header(const struct held *h, const char *name)
{
	warnx("%s: %s: not usable, left out", h->n.id, name);
}

/*
 * The name the delivery is added under: its ID (message-id or a new
 * one) and what its headers say; a header out of range is left out, with
 * a warning.
 */
static void
name_of(struct held *h)
{
	amqp_basic_properties_t *pr = &h->env.message.properties;
	amqp_table_entry_t *e;
	amqp_bytes_t s;
	int64_t v;
	int i;

	memset(&h->n, 0, sizeof(h->n));
	h->keyed = 0;
	h->keylen = 0;
	if ((pr->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) &&
	    pr->message_id.len <= MQ_ID_LEN &&
	    memchr(pr->message_id.bytes, '\0', pr->message_id.len) == NULL) {
		memcpy(h->n.id, pr->message_id.bytes, pr->message_id.len);
		h->n.id[pr->message_id.len] = '\0';
	}
	if (!mq_id_valid(h->n.id))
		mq_id_new(h->n.id);
	if (!(pr->_flags & AMQP_BASIC_HEADERS_FLAG))
		return;
	for (i = 0; i < pr->headers.num_entries; i++) {
		e = &pr->headers.entries[i];
		if (named(e, MQ_HEADER_PRIORITY)) {
			if (header_int(&e->value, &v) == -1 || v < 0 ||
			    v > MQ_PRIORITY_MAX)
				bad_header(h, MQ_HEADER_PRIORITY);
			else
				h->n.prio = (unsigned)v;
		} else if (named(e, MQ_HEADER_ATTEMPTS)) {
			if (header_int(&e->value, &v) == -1 || v < 0 ||
			    v > MQ_ATTEMPTS_MAX)
				bad_header(h, MQ_HEADER_ATTEMPTS);
			else
				h->n.attempts = (unsigned)v;
		} else if (named(e, MQ_HEADER_SENT)) {
			if (header_int(&e->value, &v) == -1 || v < 0 ||
			    (uint64_t)v > SENT_MAX)
				bad_header(h, MQ_HEADER_SENT);
			else
				h->n.sent = (uint64_t)v;
		} else if (named(e, MQ_HEADER_TTL)) {
			if (header_int(&e->value, &v) == -1 || v < 0 ||
			    v > MQ_SECS_MAX * 1000)
				bad_header(h, MQ_HEADER_TTL);
			else
				h->n.ttl = (uint64_t)v;
		} else if (named(e, MQ_HEADER_GROUP)) {
			if (header_str(&e->value, &s) == -1 ||
			    s.len > MQ_GROUP_MAX ||
			    memchr(s.bytes, '\0', s.len) != NULL) {
				bad_header(h, MQ_HEADER_GROUP);
				continue;
			}
			memcpy(h->n.group, s.bytes, s.len);
			h->n.group[s.len] = '\0';
			if (!mq_group_valid(h->n.group)) {
				h->n.group[0] = '\0';
				bad_header(h, MQ_HEADER_GROUP);
			}
		} else if (named(e, MQ_HEADER_KEY)) {
			if (header_str(&e->value, &s) == -1 ||
			    s.len > MQ_KEY_MAX ||
			    !mq_key_valid(s.bytes, s.len)) {
				bad_header(h, MQ_HEADER_KEY);
				continue;
			}
			memcpy(h->key, s.bytes, s.len);
			h->key[s.len] = '\0';
			h->keylen = s.len;
			h->keyed = 1;
			mq_key_hash(h->key, h->keylen, h->n.keyhash);
		}
	}
}

/*
 * Reads what the broker sent, for up to ms: a delivery is put in hand.
 * Returns 1 (a delivery), 0 (none: a timeout, or another frame), -1 (the
 * connection or channel was lost: dropped, the hand forgotten).
 */
static int
receive(struct puller *p, uint64_t ms)
{
	struct mq_broker *b = p->b;
	struct timeval tv;
	amqp_rpc_reply_t r;
	amqp_frame_t frame;
	struct held *h;
	int st;

	if (p->nhand == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->hand = xreallocarray(p->hand, p->cap, sizeof(*p->hand));
	}
	h = &p->hand[p->nhand];
	memset(h, 0, sizeof(*h));
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (long)(ms % 1000) * 1000;
	amqp_maybe_release_buffers(b->conn);
	/* What was entered so far is in the log before the wait (log.c). */
	mq_log_flush();
	r = amqp_consume_message(b->conn, &h->env, &tv, 0);
	if (r.reply_type == AMQP_RESPONSE_NORMAL) {
		if (h->env.channel != b->ch) {
			/* Of a channel closed before: the broker took it back. */
			amqp_destroy_envelope(&h->env);
			return 0;
		}
		h->fate = F_NONE;
		p->nhand++;
		return 1;
	}
	if (r.reply_type != AMQP_RESPONSE_LIBRARY_EXCEPTION) {
		lost(p, mq_broker_error(r));
		return -1;
	}
	if (r.library_error == AMQP_STATUS_TIMEOUT)
		return 0;
	if (r.library_error != AMQP_STATUS_UNEXPECTED_STATE) {
		lost(p, mq_broker_error(r));
		return -1;
	}
	/* Not a delivery: a method frame waits (a close, a cancel, ...). */
	tv.tv_sec = 0;
	tv.tv_usec = 0;
	if ((st = amqp_simple_wait_frame_noblock(b->conn, &frame, &tv)) ==
	    AMQP_STATUS_TIMEOUT)
		return 0;
	if (st != AMQP_STATUS_OK) {
		lost(p, amqp_error_string2(st));
		return -1;
	}
	if (frame.frame_type != AMQP_FRAME_METHOD)
		return 0;
	switch (frame.payload.method.id) {
	case AMQP_CHANNEL_CLOSE_METHOD:
		if (frame.channel != b->ch) {
			/* One closed before (the count's): said closed. */
			amqp_channel_close_ok_t ok;

			mq_broker_guard(b, SEND_MS, 0);
			amqp_send_method(b->conn, frame.channel,
			    AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
			(void)mq_broker_unguard(b);
			return 0;
		}
		/* Its unacked deliveries go back: a new channel, consume. */
		r.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
		r.reply = frame.payload.method;
		warnx("%s: channel closed: %s", mq_broker_where(b),
		    mq_broker_error(r));
		gone(p);
		mq_broker_guard(b, SEND_MS, 0);
		mq_broker_channel_closed(b);
		(void)mq_broker_unguard(b);
		return -1;
	case AMQP_CONNECTION_CLOSE_METHOD:
		r.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
		r.reply = frame.payload.method;
		lost(p, mq_broker_error(r));
		return -1;
	case AMQP_BASIC_CANCEL_METHOD:
		lost(p, "consumer cancelled by the broker");
		return -1;
	default:
		return 0;
	}
}

/*
 * A local failure named, once: not again while the same one goes on (a
 * pull that cannot read its spool would say it every pause), until a
 * batch succeeds.
 */
static void
say_failure(struct puller *p, const char *what, int e)
{
	if (p->named_what != NULL && strcmp(p->named_what, what) == 0 &&
	    p->named_errno == e)
		return;
	if (what[0] == '\0')
		warnx("%s: %s", p->sp.path, strerror(e));
	else
		warnx("%s/%s: %s", p->sp.path, what, strerror(e));
	p->named_what = what;
	p->named_errno = e;
}

/*
 * The room left: under MAX, or the spool's max-depth when lower (pull
 * holds back, whatever the overflow setting: the broker keeps the rest),
 * less the messages waiting in new/ and parked in groups/ (a long group
 * counts in full); the settings read again first when they changed.  -1
 * on error (named).
 */
static int
count(struct puller *p, uint64_t *room)
{
	uint64_t n, bound = p->max;

	if (mq_settings_reread(&p->sp) == -1)
		return -1;
	if (p->sp.conf.max_depth > 0 && p->sp.conf.max_depth < bound)
		bound = p->sp.conf.max_depth;
	if (mq_enq_count(&p->eq, bound, 1, &n) == -1) {
		say_failure(p, MQ_DIR_NEW, errno);
		return -1;
	}
	*room = n < bound ? bound - n : 0;
	return 0;
}

static int
ref_order(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	int c;

	if ((c = strcmp(x->id, y->id)) != 0)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int
ref_find(const void *key, const void *r)
{
	return strcmp(key, ((const struct ref *)r)->id);
}

/* mq_look's: a message of the spool whose ID is one of the batch's. */
static int
met(void *arg, const struct mq_look *m)
{
	struct puller *p = arg;
	struct ref *r;

	r = bsearch(m->n.id, p->refs, p->nrefs, sizeof(*r), ref_find);
	if (r == NULL || r->hit)
		return 0;
	r->hit = 1;
	return ++p->nhits == p->nrefs;	/* all met: the walk stops */
}

static void
unreadable(void *arg, const char *where, int e)
{
	struct puller *p = arg;

	(void)where;
	if (p->walk_error == 0)
		p->walk_error = e;
}

/*
 * Marks "already here" the first n deliveries in hand (named) whose ID
 * an earlier one of the batch has, or that the spool holds, waiting,
 * parked or in flight: one walk of the spool for the whole batch, ended
 * when every ID is met.  -1 on error (a directory that could not be
 * read: errno).  One walk, not mq_find's two: a copy that moves back
 * behind it (released cur/ -> new/, promoted from its group) while it is
 * under way can be missed, and the delivery then added beside it.
 */
static int
look_here(struct puller *p, size_t n)
{
	struct mq_looker lk;
	size_t i, k;

	for (i = 0; i < n; i++) {
		p->refs[i].id = p->hand[i].n.id;
		p->refs[i].i = i;
		p->refs[i].hit = 0;
	}
	qsort(p->refs, n, sizeof(p->refs[0]), ref_order);
	/* The same ID twice in the batch: the first in arrival order goes. */
	for (i = k = 0; i < n; i++) {
		if (k > 0 && strcmp(p->refs[k - 1].id, p->refs[i].id) == 0) {
			p->hand[p->refs[i].i].fate = F_HERE;
			continue;
		}
		p->refs[k++] = p->refs[i];
	}
	p->nrefs = k;
	p->nhits = 0;
	p->walk_error = 0;
	if (k == 0)
		return 0;
	memset(&lk, 0, sizeof(lk));
	lk.states = HERE_STATES;
	lk.now = mq_now_ms();
	lk.ttl_ms = 0;	/* past the spool's ttl is still waiting here */
	lk.fn = met;
	lk.fail = unreadable;
	lk.arg = p;
	if (mq_look(&p->sp, &lk) == -1)
		return -1;
	if (p->walk_error != 0 && p->nhits < p->nrefs) {
		errno = p->walk_error;
		return -1;
	}
	for (i = 0; i < k; i++)
		if (p->refs[i].hit)
			p->hand[p->refs[i].i].fate = F_HERE;
	return 0;
}

/* tmp/ID written and closed (its data synced with the batch). */
static int
write_tmp(struct puller *p, struct held *h)
{
	struct mq_tmpfile tf;
	amqp_bytes_t *body = &h->env.message.body;

	if (mq_tmp_create(&tf, &p->sp, h->n.id) == -1) {
		if (errno != EEXIST)
			return -1;
		/* A fragment of a pull that died before placing it. */
		mq_tmp_remove(&p->sp, h->n.id);
		if (mq_tmp_create(&tf, &p->sp, h->n.id) == -1)
			return -1;
	}
	if (mq_tmp_write(&tf, body->bytes, body->len) == -1 ||
	    mq_tmp_close(&tf, MQ_TMP_SYNC_BATCH) == -1) {
		mq_tmp_abort(&tf);
		return -1;
	}
	return 0;
}

/*
 * Places a keyed message under the lock of keys/, as mq-send -k does:
 * held -> not added (1); free -> held by it and placed (0); -1 on error.
 */
static int
place_keyed(struct puller *p, struct held *h, uint64_t now)
{
	char holder[MQ_ID_LEN + 1];
	int r;

	if (mq_enq_key_lock(&p->eq) == -1)
		return -1;
	r = mq_enq_key_look(&p->eq, h->key, h->keylen, holder);
	if (r == MQ_KEY_HELD) {
		mq_enq_key_unlock(&p->eq);
		mq_tmp_remove(&p->sp, h->n.id);
		if (p->b->verbose)
			warnx("%s: held by key (%s)", h->n.id, holder);
		return 1;
	}
	if (r != MQ_KEY_FREE) {
		if (r != -1)
			errno = EINVAL;	/* a record not a key's, or a hash */
		return -1;
	}
	if (mq_enq_key_hold(&p->eq, h->key, h->keylen, h->n.id) == -1)
		return -1;
	r = mq_enq_land(&p->eq, &h->n, now);
	mq_enq_key_done(&p->eq, h->n.keyhash, h->n.id, r == 0);
	return r;
}

/*
 * Settles the first n deliveries in hand with the broker: acks the
 * leading run handled (placed or already here) in one ack, then each of
 * the rest on its own: acked when already here, nacked with requeue when
 * it failed.  With deliveries held (F_HELD, F_HELD_HERE: not synced) each
 * is settled on its own, the held ones not at all: they become the
 * pending ones (held_added of them placed by this batch).  -1: the
 * connection was lost.
 */
static int
settle(struct puller *p, size_t n, size_t held, size_t held_added)
{
	struct mq_broker *b = p->b;
	struct held *h;
	size_t ok = 0;
	int st = AMQP_STATUS_OK;

	if (held == 0) {
		while (ok < n && p->hand[ok].fate != F_FAILED)
			ok++;
		if (ok > 0 && ack(b, p->hand[ok - 1].env.delivery_tag, 1) !=
		    AMQP_STATUS_OK) {
			lost(p, "basic.ack failed");
			return -1;
		}
	}
	/*
	 * The rest each on its own: a nack with multiple would requeue those
	 * already here too, for another host to add.
	 */
	for (; ok < n && st == AMQP_STATUS_OK; ok++) {
		h = &p->hand[ok];
		if (h->fate == F_HELD || h->fate == F_HELD_HERE)
			p->pending_tag = h->env.delivery_tag;
		else if (h->fate == F_FAILED)
			st = nack(b, h->env.delivery_tag, 0);
		else
			st = ack(b, h->env.delivery_tag, 0);
	}
	if (st != AMQP_STATUS_OK) {
		lost(p, "basic.ack or basic.nack failed");
		return -1;
	}
	p->npending += held;
	p->pending_added += held_added;
	return 0;
}

/* Takes the first n deliveries out of the hand. */
static void
shift(struct puller *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		amqp_destroy_envelope(&p->hand[i].env);
	memmove(p->hand, p->hand + n, (p->nhand - n) * sizeof(*p->hand));
	p->nhand -= n;
}

/*
 * new/'s directories synced, a second time when the first failed: 0, or
 * -1 (errno).  A parked message's sync that failed fails every flush
 * until groups/ is synced (mq_enq_flush), so that nothing placed is acked
 * before; so do copies found here whose sync failed (here_unsynced).
 */
static int
sync_placed(struct puller *p)
{
	if (mq_enq_flush(&p->eq, 2) == -1)
		return -1;
	if (p->here_unsynced) {
		if (mq_spool_sync(&p->sp) == -1)
			return -1;
		p->here_unsynced = 0;
	}
	return 0;
}

/*
 * The pending deliveries (placed, not synced): their sync tried again;
 * done, they are acked (one ack, multiple: nothing else of the channel
 * is unacked then).  0 (or the connection lost: the broker has them
 * back), -1 while the sync still fails.
 */
static int
settle_pending(struct puller *p)
{
	struct mq_broker *b = p->b;

	if (sync_placed(p) == -1) {
		if (b->verbose)
			warnx("not synced yet: %zu held", p->npending);
		return -1;
	}
	if (ack(b, p->pending_tag, 1) !=
	    AMQP_STATUS_OK) {
		lost(p, "basic.ack failed");
		return 0;
	}
	if (b->verbose)
		warnx("synced at last: %zu acked", p->npending);
	p->added += p->pending_added;
	p->npending = p->pending_added = 0;
	p->named_what = NULL;
	p->named_errno = 0;
	mq_broker_moved(b);
	return 0;
}

/*
 * A batch of deliveries on its way into the spool: how many of each fate,
 * and the first failure (saved, an errno; what, the directory it names).
 */
struct batching {
	size_t		 n;
	size_t		 here, added, held, held_added;
	int		 saved;
	const char	*what;
};

/*
 * 1. Named; those already here (one walk) left out.  2. The others
 * written into tmp/, up to the first failure.  3. Their data made
 * durable (not durable: not kept).
 */
static void
batch_write(struct puller *p, struct batching *bt)
{
	struct held *h;
	const char *failed;
	size_t i, nw = 0, n = bt->n;

	for (i = 0; i < n; i++) {
		name_of(&p->hand[i]);
		p->hand[i].fate = F_NONE;
	}
	i = 0;
	if (look_here(p, n) == -1) {
		bt->saved = errno;
		bt->what = MQ_DIR_NEW;	/* or cur/, groups/: not read */
		for (; i < n; i++)	/* nothing written: all nacked */
			p->hand[i].fate = F_FAILED;
	}
	for (; i < n; i++) {
		h = &p->hand[i];
		if (h->fate == F_HERE)
			continue;
		if (write_tmp(p, h) == -1) {
			bt->saved = errno;
			break;
		}
		h->fate = F_WRITTEN;
		memcpy(p->ids[nw++], h->n.id, MQ_ID_LEN + 1);
	}
	for (; i < n; i++)
		p->hand[i].fate = F_FAILED;
	if (nw > 0 && mq_tmp_sync(&p->sp, p->ids, (int)nw, &failed) == -1) {
		bt->saved = errno;
		bt->what = MQ_DIR_TMP;
		for (i = 0; i < n; i++)
			if (p->hand[i].fate == F_WRITTEN) {
				mq_tmp_remove(&p->sp, p->hand[i].n.id);
				p->hand[i].fate = F_FAILED;
			}
	}
}

/* 4. Placed, in order, up to the first failure. */
static void
batch_place(struct puller *p, struct batching *bt)
{
	struct held *h;
	uint64_t now = mq_now_ms();
	size_t i;
	int r;

	for (i = 0; i < bt->n && bt->saved == 0; i++) {
		h = &p->hand[i];
		if (h->fate != F_WRITTEN)
			continue;
		if (h->keyed)
			r = place_keyed(p, h, now);
		else
			r = mq_enq_land(&p->eq, &h->n, now);
		if (r == -1) {
			bt->saved = errno;
			bt->what = h->keyed ? MQ_DIR_KEYS : MQ_DIR_NEW;
			break;
		}
		h->fate = r == 1 ? F_HERE : F_PLACED;
	}
}

/*
 * 5. new/'s directories synced, tried twice.  When that fails, what was
 * placed is held: not acked (it may not survive a crash) nor nacked
 * (another host would add it too); the broker redelivers it when the
 * channel closes, and the ID check finds it here.  Then what is left in
 * tmp/ goes, and the fates are counted.
 */
static void
batch_sync(struct puller *p, struct batching *bt)
{
	struct held *h;
	size_t i;

	if (sync_placed(p) == -1) {
		if (bt->saved == 0) {
			bt->saved = errno;
			bt->what = MQ_DIR_NEW;
		}
		for (i = 0; i < bt->n; i++)
			if (p->hand[i].fate == F_PLACED) {
				p->hand[i].fate = F_HELD;
				bt->held++;
			}
	}
	bt->held_added = bt->held;
	for (i = 0; i < bt->n; i++) {
		h = &p->hand[i];
		if (h->fate == F_WRITTEN) {
			mq_tmp_remove(&p->sp, h->n.id);
			h->fate = F_FAILED;
		}
		if (h->fate == F_PLACED)
			bt->added++;
		else if (h->fate == F_HERE)
			bt->here++;
	}
}

/*
 * 6. Those already here are acked only once the spool is durable: the
 * copy found may be in the page cache alone (placed by a pull whose sync
 * failed, its delivery redelivered).  One syncfs for the batch; when it
 * fails they are held as the unsynced placed ones.
 */
static void
batch_here(struct puller *p, struct batching *bt)
{
	size_t i;

	if (bt->here == 0 || mq_spool_sync(&p->sp) == 0)
		return;
	if (bt->saved == 0) {
		bt->saved = errno;
		bt->what = "";
	}
	p->here_unsynced = 1;
	for (i = 0; i < bt->n; i++)
		if (p->hand[i].fate == F_HERE) {
			p->hand[i].fate = F_HELD_HERE;
			bt->held++;
		}
	bt->here = 0;
}

/*
 * Writes the first n deliveries in hand into the spool, then settles them
 * with the broker.  Returns 0, or -1 after a local failure (named; what
 * was not placed was nacked, what was placed and not synced is pending)
 * or a lost connection.
 */
static int
batch(struct puller *p, size_t n)
{
	struct batching bt = { n, 0, 0, 0, 0, 0, MQ_DIR_TMP };
	int r;

	batch_write(p, &bt);
	batch_place(p, &bt);
	batch_sync(p, &bt);
	batch_here(p, &bt);
	if (bt.saved != 0)
		say_failure(p, bt.what, bt.saved);
	r = settle(p, n, bt.held, bt.held_added);
	if (r == 0) {
		shift(p, n);
		p->added += bt.added;
		if (bt.added > 0)
			mq_broker_moved(p->b);
		if (p->b->verbose)
			warnx("pulled %zu (added %zu, already here %zu%s)", n,
			    bt.added, bt.here,
			    bt.held > 0 ? ", held unsynced" : "");
		if (bt.saved == 0) {
			p->named_what = NULL;
			p->named_errno = 0;
			p->pause_ms = FAIL_PAUSE_MS;
		}
	}
	return bt.saved != 0 || r == -1 ? -1 : 0;
}

/*
 * Returns what is in hand to the broker (basic.nack, requeue): in one
 * nack, or one each while deliveries are pending (below them, not to be
 * returned).  -1: the connection was lost.
 */
static int
nack_hand(struct puller *p)
{
	struct mq_broker *b = p->b;
	size_t i;
	int st = AMQP_STATUS_OK;

	if (p->nhand == 0)
		return 0;
	if (p->npending == 0)
		st = nack(b, p->hand[p->nhand - 1].env.delivery_tag, 1);
	else
		for (i = 0; i < p->nhand && st == AMQP_STATUS_OK; i++)
			st = nack(b, p->hand[i].env.delivery_tag, 0);
	forget_hand(p);
	if (st != AMQP_STATUS_OK) {
		lost(p, "basic.nack failed");
		return -1;
	}
	return 0;
}

/*
 * Holds nothing more: the consumer cancelled (basic.cancel), what is in
 * hand and what came before the cancel was answered returned to the
 * broker.  0, or -1: the connection was lost.
 */
static int
rest(struct puller *p)
{
	struct mq_broker *b = p->b;

	if (p->consuming) {
		if (amqp_basic_cancel(b->conn, b->ch, p->ctag) == NULL) {
			lost(p, mq_broker_error(amqp_get_rpc_reply(b->conn)));
			return -1;
		}
		p->consuming = 0;
	}
	p->resting = 1;
	while (receive(p, 0) == 1)
		;
	if (b->conn == NULL || b->ch == 0)
		return -1;
	return nack_hand(p);
}

/*
 * Resting for ms: the socket serviced (heartbeats), a straggler returned
 * to the broker.  0 (or stopped), -1: the connection was lost.
 */
static int
idle(struct puller *p, uint64_t ms)
{
	uint64_t end = mq_now_ms() + ms, now;
	int r;

	while (!stopped(p) && (now = mq_now_ms()) < end) {
		r = receive(p, end - now < SLICE_MS ? end - now : SLICE_MS);
		if (r == -1 || (r == 1 && nack_hand(p) == -1))
			return -1;
	}
	return 0;
}

/*
 * After a local failure, without -1: holding nothing (the consumer
 * cancelled), a pause, 1 s doubling up to 10 s while failures go on;
 * with deliveries pending, their sync is tried again after each pause
 * until it succeeds (they are acked then), the socket serviced meanwhile.
 */
static void
pause_after_failure(struct puller *p)
{
	struct mq_broker *b = p->b;

	if (rest(p) == -1)
		return;
	for (;;) {
		if (p->npending > 0 ? idle(p, p->pause_ms) == -1 :
		    mq_broker_pause(b, p->pause_ms) == -1)
			return;
		if (p->pause_ms < FAIL_PAUSE_MAX_MS)
			p->pause_ms = 2 * p->pause_ms < FAIL_PAUSE_MAX_MS ?
			    2 * p->pause_ms : FAIL_PAUSE_MAX_MS;
		if (stopped(p) || p->npending == 0 || settle_pending(p) == 0)
			break;
	}
	if (!stopped(p))
		p->resting = 0;		/* consumed again */
}

/*
 * -1 and a full spool: what is in hand, unwritten, returned to the broker
 * (a nack with requeue; closing the channel returns it too, and the rest
 * of the prefetch).
 */
static void
give_back(struct puller *p)
{
	size_t n = p->nhand;

	(void)nack_hand(p);
	if (p->b->verbose)
		warnx("the spool is full: %zu returned", n);
}

/*
 * -1: is the queue empty?  A passive declare on a fresh channel (the
 * consuming one is closed: consumed again after).  1 yes, 0 no (or
 * lost: go on).
 */
static int
drained(struct puller *p)
{
	uint32_t count;
	int r;

	r = mq_broker_count(p->b, &count);
	gone(p);
	return r == 0 && count == 0;
}

/* What one step of the puller's loop ends in. */
enum { PULL_ON, PULL_FAILED, PULL_END, PULL_ERROR };

/* Full: counted again every second, holding nothing. */
static int
rest_step(struct puller *p)
{
	uint64_t room;

	if (idle(p, ROOM_MS) == -1 || stopped(p))
		return PULL_ON;
	if (count(p, &room) == -1)
		return PULL_FAILED;
	if (room > 0)
		p->resting = 0;	/* consumed again */
	return PULL_ON;
}

/*
 * One step: a batch received and written into the spool, or a wait for
 * deliveries, room or a connection.  PULL_FAILED: a local failure
 * (named); PULL_END: stopped, drained or full with -1; PULL_ERROR: no
 * broker to be had.
 */
static int
pull_step(struct puller *p, uint64_t *idle_since)
{
	struct mq_broker *b = p->b;
	uint64_t room, limit;
	int r;

	if (stopped(p))
		return PULL_END;
	if (connected(p) == -1)
		return stopped(p) ? PULL_END : PULL_ERROR;
	if (p->resting)
		return rest_step(p);
	/* The first may be waited for; the rest as far as buffered. */
	if (p->nhand == 0 && (r = receive(p, SLICE_MS)) != 1) {
		if (r == -1)
			return PULL_ON;
		if (p->once && !stopped(p) &&
		    mq_now_ms() - *idle_since >= IDLE_MS) {
			if (drained(p) == 1)
				return PULL_END;
			*idle_since = mq_now_ms();
		}
		return PULL_ON;
	}
	/* Counted once a batch, when one has begun. */
	if (count(p, &room) == -1)
		return PULL_FAILED;
	if (room == 0 && p->once) {
		/* -1: full ends the run; what is in hand goes back. */
		give_back(p);
		return PULL_END;
	}
	if (room == 0) {
		/* Full: nothing held until there is room. */
		if (rest(p) == 0 && b->verbose)
			warnx("the spool is full: consuming again when there "
			    "is room");
		return PULL_ON;
	}
	limit = room < MQ_BATCH_MAX ? room : MQ_BATCH_MAX;
	/* Then what keeps coming, until GATHER_MS without one. */
	while (p->nhand < limit && b->conn != NULL && !stopped(p) &&
	    receive(p, GATHER_MS) == 1)
		;
	if (b->conn == NULL || p->nhand == 0)
		return PULL_ON;
	*idle_since = mq_now_ms();
	return batch(p, p->nhand < limit ? p->nhand : limit) == -1 &&
	    b->conn != NULL ? PULL_FAILED : PULL_ON;
}

int
mq_pull(struct mq_broker *b, const char *dir, unsigned max, int once)
{
	struct puller p;
	uint64_t idle_since;
	int r, status = MQ_EX_OK;

	memset(&p, 0, sizeof(p));
	p.b = b;
	p.max = max;
	p.once = once;
	p.pause_ms = FAIL_PAUSE_MS;
	mq_spool_xopen(&p.sp, dir, 1);
	if (mq_settings_reread(&p.sp) == -1)
		exit(MQ_EX_SYS);
	mq_broker_default_queue(b, &p.sp);
	mq_enq_init(&p.eq, &p.sp, 1);
	p.eq.pl.fresh = 1;
	idle_since = mq_now_ms();
	for (;;) {
		r = pull_step(&p, &idle_since);
		if (r == PULL_END)
			break;
		if (r == PULL_ERROR || (r == PULL_FAILED && once)) {
			status = MQ_EX_SYS;
			break;
		}
		if (r == PULL_FAILED)
			pause_after_failure(&p);
	}
	forget_hand(&p);
	free(p.hand);
	amqp_bytes_free(p.ctag);
	if (b->conn != NULL) {
		/* Stopping, a close the broker does not answer is cut. */
		mq_broker_guard(b, SEND_MS, stopped(&p) ? MQ_GUARD_STOP : 0);
		mq_broker_close(b);
		(void)mq_broker_unguard(b);
	}
	mq_enq_close(&p.eq);
	mq_spool_close(&p.sp);
	if (status == MQ_EX_OK && !stopped(&p) && p.added == 0)
		status = MQ_EX_NONE;
	return status;
}
