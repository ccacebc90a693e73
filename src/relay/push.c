/*
 * push.c: local spool -> broker (mq-relay push).  Claims a batch like a
 * worker, but its claims are no attempts (struct mq_claimer's
 * uncounted) and it never buries for attempts; publishes each message
 * persistent, mandatory, with message-id = the mq ID and its name's
 * fields as x-mq-* headers; waits for the publisher confirms; then acks
 * locally what was confirmed and releases the rest (nacked, returned as
 * unroutable, or unsettled when the channel or connection went).
 *
 * Two batches at most are outstanding on the channel: batch k+1 is
 * claimed and published before the confirms of batch k are awaited, so
 * the local work of one overlaps the broker's of the other.  Nothing is
 * acked locally before its confirm; on any failure everything
 * outstanding is settled (what is unsettled when the channel goes has
 * failed) before a new channel.
 *
 * Over TCP a batch's publishes are framed here (mq_broker_publish) and
 * written at once (mq_broker_flush, every MiB or so and at the batch's
 * end); over TLS rabbitmq-c sends each, corked.  A claimed message's
 * receipt is taken on the claim's word (no look at its file): a lease
 * lost since shows at its body's open, and is checked then.
 *
 * Nothing waits for the broker without a bound: rabbitmq-c's sends and a
 * batch's write have no time limit of their own, so the watchdog
 * (mq_broker_guard) shuts the socket down under a send or write that
 * makes no progress (no byte written, no frame read: b->moved) for the
 * confirm timeout, or for 750 ms when push is stopping; a batch's write
 * is cut first, the broker's frames read, and blocked since, it waits
 * BLOCKED_MS.  The broker's connection.blocked (read before each write
 * too) stops publishing until connection.unblocked; a 30 s heartbeat is
 * serviced while idle, and sent every 15 s while a batch's bodies are
 * read (the batch's writes leave rabbitmq-c's own heartbeats as often as
 * without them).
 * A batch's leases run from its claim: those awaiting confirms are
 * extended before they run out, and a message whose lease is nearly out
 * is released rather than published.  A message bigger than the broker
 * takes (-s, or the limit its 406 names) is dead-lettered.
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"
#include "broker.h"

#define SLICE_MS	250	/* every wait checks the stop flag this often */
#define CLAIM_MS	1000	/* idle, a claim at least this often */
#define CONFIRM_MIN_MS	5000	/* the confirm timeout: lease/2, at least */
#define CONFIRM_MAX_MS	30000	/* ... and at most */
#define BLOCKED_MS	60000	/* blocked by the broker this long: lost */
#define GIVE_UP_MS	60000	/* -1: without a connection this long, exit */
#define BODY_MIN	65536	/* the body buffer, at least */
#define MIB_MS		1000	/* a publish is given this much more per MiB */
#define FRAMED_MAX	1048576	/* framed publishes written at this size */
#define TOO_BIG		"too big for the broker"

/*
 * LOCAL: not published for a local reason (its body unread, its lease
 * too short, push stopping): released at once (RELEASED), before the
 * next claim.  BURIED: too big, dead.
 */
enum { UNSENT, UNSETTLED, CONFIRMED, FAILED, GONE, LOCAL, BURIED, RELEASED };

struct msg {
	char	 receipt[MQ_RECEIPT_MAX];
	char	 id[MQ_ID_LEN + 1];
	char	 bname[MQ_BUCKET_MAX];	/* cur/S of its lease */
	const char *name;	/* its name in cur/S, inside receipt */
	struct mq_name n;	/* as its receipt was opened */
	uint64_t tag;		/* its delivery tag on the channel */
	uint64_t deadline;	/* its lease's end (ms), at least */
	int	 state;
	int	 returned;	/* basic.return: no queue took it */
};

/* A batch claimed: published, its confirms awaited, then settled. */
struct batch {
	struct msg *m;
	unsigned n;
	unsigned unsettled;
	uint64_t last;		/* its last publish (ms): the confirm timeout's start */
};

struct push {
	struct mq_broker *b;
	struct mq_spool	 sp;
	struct mq_claimer cl;
	struct mq_receipt rc;
	struct mq_placer pl;
	struct mq_keys	 keys;
	struct batch	 q[2];	/* outstanding, oldest first: q[0], q[1] */
	unsigned	 nq;	/* how many */
	int		 publishing;	/* q[nq] too: its publishes are out */
	struct batch	*cur;	/* the one being claimed into */
	unsigned	 batch;
	uint64_t	 next_tag;
	char		*body;
	size_t		 cap;
	unsigned long long pushed;
	uint64_t	 failing;	/* since when batches fail; 0: they don't */
	uint64_t	 claimed;	/* when the batch being claimed was */
	uint64_t	 progress;	/* the last publish or confirm (ms) */
	uint64_t	 kept;		/* the last look at the leases (ms) */
	uint64_t	 wrote;		/* the last write to the broker (ms) */
	unsigned long long buried;
	int		 status;
};

static int
collect(void *arg, const char *receipt, const char *id)
{
	struct push *p = arg;
	struct msg *m = &p->cur->m[p->cur->n];

	if (strlcpy(m->receipt, receipt, sizeof(m->receipt)) >=
	    sizeof(m->receipt)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strlcpy(m->id, id, sizeof(m->id));
	m->state = UNSENT;
	m->returned = 0;
	m->deadline = p->claimed + p->sp.conf.lease_ms;
	m->bname[0] = '\0';
	p->cur->n++;
	return 0;
}

/*
 * Arms the watchdog (mq_broker_guard) for a call on the broker's socket:
 * limit ms without progress at most, and a call stuck while push is
 * stopping cut at once.
 */
static void
guard(struct push *p, uint64_t limit)
{
	mq_broker_guard(p->b, limit, MQ_GUARD_STOP);
}

/* The confirm timeout: without progress this long, the connection is lost. */
static uint64_t
confirm_timeout(const struct push *p)
{
	uint64_t t = p->sp.conf.lease_ms / 2;

	return t < CONFIRM_MIN_MS ? CONFIRM_MIN_MS :
	    t > CONFIRM_MAX_MS ? CONFIRM_MAX_MS : t;
}

/*
 * The lease's safety margin: one with less left is extended (published)
 * or released (not yet published).
 */
static uint64_t
margin(const struct push *p)
{
	uint64_t m = p->sp.conf.lease_ms / 4;

	return m > 10000 ? 10000 : m;
}

/* The connection dropped: said (why), or silently when stopping. */
static void
drop(struct push *p, const char *why)
{
	mq_broker_drop(p->b, *p->b->stop ? NULL : why);
}

/*
 * Opens m's receipt in p->rc: 0, or -1 (said; the lease is gone).  The
 * first open (mine) takes the claim's word for the lease, as nothing but
 * a claim puts a name there (mq_receipt_claimed: no look at the file; a
 * lease lost since shows at its body's open); checked (mq_receipt_open)
 * when that open fails; again (settling it), the bucket kept open is
 * enough when it is m's (mq_receipt_again).
 */
static int
open_receipt(struct push *p, struct msg *m, int mine)
{
	const char *why;
	int st;

	if (!mine && m->bname[0] != '\0' &&
	    mq_receipt_again(&p->rc, m->bname, m->name, &m->n) == 0)
		return 0;
	if ((st = (mine ? mq_receipt_claimed : mq_receipt_open)(&p->sp,
	    m->receipt, &p->rc, &why)) == MQ_EX_OK) {
		strlcpy(m->bname, p->rc.bname, sizeof(m->bname));
		m->name = p->rc.name;
		m->n = p->rc.n;
		return 0;
	}
	if (st == MQ_EX_SYS) {
		warn("%s", mq_receipt_shown(&p->sp, m->receipt));
		p->status = MQ_EX_SYS;
	} else
		warnx("%s: %s", mq_receipt_shown(&p->sp, m->receipt), why);
	return -1;
}

/*
 * The claimed message m's body into p->body: its length, or -1 (errno), or -2
 * when it is bigger than the broker takes (its size in *size), or -3 (said)
 * when its lease is gone, or -4 (said) when it read short.  Its receipt was
 * opened on the claim's word (open_receipt, mine): a body that does not open,
 * or is no regular file, has its receipt checked then (mq_receipt_open), which
 * tells a lease lost or a bucket made anew.  A leased message's file does not
 * change: read until its st_size is in, as a read may return fewer bytes than
 * asked before the end (FUSE, NFS); one that ends before that (-4, said) leaves
 * it unpublished.  The buffer is st_size + 1 at least, never more than the
 * biggest body (at least BODY_MIN).
 */
static ssize_t
read_body(struct push *p, struct msg *m, uint64_t *size)
{
	struct stat st;
	size_t len = 0, want;
	ssize_t r;
	int fd, checked = 0;

	for (;;) {
		if ((fd = mq_receipt_body(&p->rc)) != -1) {
			if (fstat(fd, &st) == -1) {
				close(fd);
				return -1;
			}
			if (S_ISREG(st.st_mode))
				break;
			close(fd);
			errno = EINVAL;
		}
		if (checked)
			return -1;
		/* Its bucket made anew, the lease lost, or not a file. */
		m->bname[0] = '\0';
		if (open_receipt(p, m, 0) == -1)
			return -3;
		checked = 1;
	}
	if ((*size = (uint64_t)st.st_size) > p->b->max_size) {
		close(fd);
		return -2;
	}
	want = (size_t)st.st_size;
	if (p->cap < want + 1 || p->cap < BODY_MIN) {
		p->cap = want + 1 < BODY_MIN ? BODY_MIN : want + 1;
		free(p->body);
		p->body = xreallocarray(NULL, p->cap, 1);
	}
	while (len < want) {
		if ((r = pread(fd, p->body + len, want - len, (off_t)len)) ==
		    -1) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (len != want) {
		warnx("%s: read %zu bytes of %zu: not published",
		    mq_receipt_shown(&p->sp, m->receipt), len, want);
		return -4;
	}
	return (ssize_t)len;
}

static void
header_int(amqp_table_entry_t *e, const char *key, int64_t v, int wide)
{
	e->key = amqp_cstring_bytes(key);
	if (wide) {
		e->value.kind = AMQP_FIELD_KIND_I64;
		e->value.value.i64 = v;
	} else {
		e->value.kind = AMQP_FIELD_KIND_I32;
		e->value.value.i32 = (int32_t)v;
	}
}

static void
header_str(amqp_table_entry_t *e, const char *key, const char *v)
{
	e->key = amqp_cstring_bytes(key);
	e->value.kind = AMQP_FIELD_KIND_UTF8;
	e->value.value.bytes = amqp_cstring_bytes(v);
}

/* Publishes m of bt (its receipt open in p->rc): 0, or -1 with the socket. */
static int
publish(struct push *p, struct batch *bt, struct msg *m, const void *body,
    size_t len)
{
	const struct mq_name *nm = &p->rc.n;
	amqp_basic_properties_t props;
	amqp_table_entry_t h[6];
	char key[MQ_KEY_MAX + 1], buf[64];
	uint64_t sent = nm->sent != 0 ? nm->sent : mq_id_ms(nm->id);
	amqp_bytes_t b;
	int k = 0, r;

	if (nm->prio > 0)
		header_int(&h[k++], MQ_HEADER_PRIORITY, nm->prio, 0);
	if (nm->group[0] != '\0')
		header_str(&h[k++], MQ_HEADER_GROUP, nm->group);
	if (nm->keyhash[0] != '\0') {
		if (mq_key_get(&p->keys, nm, key) == 1)
			header_str(&h[k++], MQ_HEADER_KEY, key);
		else
			warnx("%s: its key cannot be read: sent without it",
			    mq_receipt_shown(&p->sp, m->receipt));
	}
	header_int(&h[k++], MQ_HEADER_ATTEMPTS, nm->attempts, 0);
	header_int(&h[k++], MQ_HEADER_SENT, (int64_t)sent, 1);
	if (nm->ttl != 0)
		header_int(&h[k++], MQ_HEADER_TTL, (int64_t)nm->ttl, 1);
	memset(&props, 0, sizeof(props));
	props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG |
	    AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG |
	    AMQP_BASIC_HEADERS_FLAG;
	props.delivery_mode = AMQP_DELIVERY_PERSISTENT;
	props.message_id = amqp_cstring_bytes(nm->id);
	props.timestamp = sent / 1000;
	props.headers.num_entries = k;
	props.headers.entries = h;
	b.bytes = (void *)body;
	b.len = len;
	if (p->b->holding == MQ_HOLD_FRAME) {
		/* Framed into the batch: written, guarded, by flush(). */
		r = mq_broker_publish(p->b, amqp_empty_bytes,
		    amqp_cstring_bytes(p->b->queue), 1, &props, b);
		if (r != AMQP_STATUS_OK) {
			drop(p, amqp_error_string2(r));
			return -1;
		}
	} else {
		/* A send that makes no progress (blocked, half-open): cut. */
		guard(p, p->b->blocked ? BLOCKED_MS :
		    confirm_timeout(p) + len / 1048576 * MIB_MS);
		r = mq_broker_publish(p->b, amqp_empty_bytes,
		    amqp_cstring_bytes(p->b->queue), 1, &props, b);
		if (mq_broker_unguard(p->b)) {
			snprintf(buf, sizeof(buf), "a publish made no progress "
			    "in %llu ms", (unsigned long long)confirm_timeout(p));
			drop(p, buf);
			return -1;
		}
		if (r != AMQP_STATUS_OK) {
			drop(p, amqp_error_string2(r));
			return -1;
		}
		p->progress = p->wrote = mq_now_ms();
	}
	m->tag = p->next_tag++;
	m->state = UNSETTLED;
	bt->unsettled++;
	return 0;
}

static void drain(struct push *);

/*
 * Writes the publishes framed so far (TCP: mq_broker_flush) under the
 * watchdog, the broker's frames read first (drain: a connection.blocked
 * seen, confirms taken): making no progress for the confirm timeout
 * (blocked by the broker: BLOCKED_MS), or stopping and stuck, the write
 * is cut; the frames read again then, and blocked since, it goes on
 * with BLOCKED_MS; else the connection is dropped.  0, or -1 (the
 * connection dropped, said): what was framed stays unsettled and fails
 * with the connection (released).
 */
static int
flush(struct push *p)
{
	struct mq_broker *b = p->b;
	uint64_t limit;
	const char *why;
	char buf[80];
	int r, fired, blocked;

	if (b->outlen == 0)
		return 0;
	drain(p);
	if (b->conn != NULL && b->ch == 0) {
		/* Closed: its publishes fail with it (none written in part). */
		if (b->outoff == 0)
			b->outlen = 0;
		else
			drop(p, "the channel closed under a batch");
		return -1;
	}
	if (b->conn == NULL)
		return -1;
	for (;;) {
		blocked = b->blocked;
		limit = blocked ? BLOCKED_MS : confirm_timeout(p);
		mq_broker_guard(b, limit, MQ_GUARD_STOP | MQ_GUARD_CUT);
		r = mq_broker_flush(b, &why);
		fired = mq_broker_unguard(b);
		if (r == -2 && !fired && !*b->stop && !blocked) {
			drain(p);
			if (b->conn == NULL)
				return -1;
			if (b->ch != 0 && b->blocked)
				continue;	/* blocked: BLOCKED_MS */
		}
		break;
	}
	if (fired || r == -2) {
		snprintf(buf, sizeof(buf), blocked ? "blocked by the broker "
		    "for %llu ms" : "a publish made no progress in %llu ms",
		    (unsigned long long)limit);
		drop(p, buf);
		return -1;
	}
	if (r == -1) {
		drop(p, why);
		return -1;
	}
	p->progress = p->wrote = mq_now_ms();
	return 0;
}

/*
 * Settles the unsettled of every outstanding batch (and the one being
 * published) up to tag (multiple) or at tag: ok or not.  Tags grow with
 * the batches: the older first.
 */
static void
settle(struct push *p, uint64_t tag, int multiple, int ok)
{
	unsigned i, j;

	for (j = 0; j < p->nq + (p->publishing ? 1 : 0); j++) {
		struct batch *bt = &p->q[j];

		for (i = 0; i < bt->n && bt->unsettled > 0; i++) {
			struct msg *m = &bt->m[i];

			if (m->state != UNSETTLED)
				continue;
			if (m->tag > tag)
				return;
			if (!multiple && m->tag != tag)
				continue;
			m->state = ok && !m->returned ? CONFIRMED : FAILED;
			bt->unsettled--;
		}
	}
}

/* basic.return: its content follows; the message it names failed. */
static int
returned(struct push *p)
{
	amqp_message_t msg;
	amqp_rpc_reply_t r;
	unsigned i, j;

	guard(p, confirm_timeout(p));
	r = amqp_read_message(p->b->conn, p->b->ch, &msg, 0);
	if (mq_broker_unguard(p->b)) {
		drop(p, "a returned message did not come");
		if (r.reply_type == AMQP_RESPONSE_NORMAL)
			amqp_destroy_message(&msg);
		return -1;
	}
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		drop(p, mq_broker_error(r));
		return -1;
	}
	if (msg.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
		for (j = 0; j < p->nq + (p->publishing ? 1 : 0); j++)
			for (i = 0; i < p->q[j].n; i++) {
				struct msg *m = &p->q[j].m[i];

				if (m->state == UNSETTLED &&
				    strlen(m->id) ==
				    msg.properties.message_id.len &&
				    memcmp(m->id, msg.properties.message_id.bytes,
				    msg.properties.message_id.len) == 0)
					m->returned = 1;
			}
	amqp_destroy_message(&msg);
	return 0;
}

/*
 * Extends the leases of the first n batches' messages that await their
 * confirm or their local ack when less than the margin is left: a lease
 * must not run out (and the message be claimed again, and pushed twice)
 * while the broker has it.  A look every margin/4 at most (the callers
 * look more often than that).  Uses p->rc.
 */
static void
keep_leases(struct push *p, unsigned n)
{
	char out[MQ_RECEIPT_MAX];
	uint64_t now = mq_now_ms();
	unsigned i, j;
	int st;

	if (now - p->kept < margin(p) / 4)
		return;
	p->kept = now;

	for (j = 0; j < n; j++)
		for (i = 0; i < p->q[j].n; i++) {
			struct msg *m = &p->q[j].m[i];

			if ((m->state != UNSETTLED && m->state != CONFIRMED) ||
			    m->deadline >= now + margin(p))
				continue;
			if (open_receipt(p, m, 0) == -1) {
				m->deadline = UINT64_MAX;	/* said once */
				continue;
			}
			st = mq_receipt_extend(&p->rc, now + p->sp.conf.lease_ms,
			    out, sizeof(out));
			if (st == MQ_EX_OK) {
				strlcpy(m->receipt, out, sizeof(m->receipt));
				m->bname[0] = '\0';	/* opened in full next */
				m->deadline = now + p->sp.conf.lease_ms;
				continue;
			}
			if (st == MQ_EX_LOST)
				warnx("%s: lease lost", mq_receipt_shown(&p->sp,
				    m->receipt));
			else
				warn("%s", mq_receipt_shown(&p->sp, m->receipt));
			m->deadline = UINT64_MAX;
		}
}

/*
 * Waits up to ms for the broker's next frame, the watchdog armed (its
 * heartbeat may be sent): 1 and the frame, 0 on a timeout, -1 when the
 * connection was lost (dropped, said).
 */
static int
frame(struct push *p, amqp_frame_t *f, int ms)
{
	const char *why;
	int r;

	guard(p, (uint64_t)ms + confirm_timeout(p));
	r = mq_broker_frame(p->b, f, ms, &why);
	if (mq_broker_unguard(p->b))
		why = "a heartbeat could not be sent";
	else if (r != -1)
		return r;
	drop(p, why);
	return -1;
}

/*
 * A channel closed with 406 "message size S is larger than [configured]
 * max size M": the broker takes at most M bytes, whatever -s said; what
 * is bigger is dead-lettered from now on (it is released now, and buried
 * when claimed again).
 */
static void
learn_max_size(struct push *p, amqp_bytes_t text)
{
	char buf[256];
	const char *s;
	unsigned long long max;

	snprintf(buf, sizeof(buf), "%.*s", (int)text.len,
	    (const char *)text.bytes);
	if (strstr(buf, "message size") == NULL ||
	    (s = strstr(buf, "max size ")) == NULL ||
	    sscanf(s, "max size %llu", &max) != 1 || max == 0 ||
	    max >= p->b->max_size)
		return;
	p->b->max_size = max;
	warnx("%s: the broker takes at most %llu bytes a message: a bigger "
	    "one is dead-lettered", mq_broker_where(p->b), max);
}

/*
 * Answers the broker's channel.close (mq_broker_channel_closed) under the
 * watchdog: its close-ok send may block.
 */
static void
channel_closed(struct push *p)
{
	guard(p, confirm_timeout(p));
	mq_broker_channel_closed(p->b);
	if (mq_broker_unguard(p->b))
		drop(p, "a channel's close-ok could not be sent");
}

/*
 * One frame from the broker on the publishing side: a confirm settles, a
 * return fails its message, a channel.close ends the channel (what is
 * unsettled on it has failed).  0; 1 when something failed on the
 * broker's side; -1 when the channel or connection went.
 */
static int
handle(struct push *p, amqp_frame_t *f)
{
	struct mq_broker *b = p->b;

	if (f->frame_type != AMQP_FRAME_METHOD || f->channel != b->ch ||
	    b->ch == 0)
		return 0;
	switch (f->payload.method.id) {
	case AMQP_BASIC_ACK_METHOD: {
		amqp_basic_ack_t *a = f->payload.method.decoded;

		settle(p, a->delivery_tag, a->multiple, 1);
		p->progress = mq_now_ms();
		return 0;
	}
	case AMQP_BASIC_NACK_METHOD: {
		amqp_basic_nack_t *a = f->payload.method.decoded;

		settle(p, a->delivery_tag, a->multiple, 0);
		p->progress = mq_now_ms();
		return 1;
	}
	case AMQP_BASIC_RETURN_METHOD:
		return returned(p) == -1 ? -1 : 1;
	case AMQP_CHANNEL_CLOSE_METHOD: {
		amqp_channel_close_t *c = f->payload.method.decoded;

		warnx("%s: channel closed: %.*s", mq_broker_where(b),
		    (int)c->reply_text.len, (const char *)c->reply_text.bytes);
		if (c->reply_code == AMQP_PRECONDITION_FAILED)
			learn_max_size(p, c->reply_text);
		channel_closed(p);
		return -1;
	}
	}
	return 0;
}

/*
 * The frames the broker has sent, read without waiting (a publish's
 * write goes first): a connection.blocked seen, confirms settled.
 */
static void
drain(struct push *p)
{
	amqp_frame_t f;

	while (p->b->conn != NULL && p->b->ch != 0 && frame(p, &f, 0) == 1)
		if (handle(p, &f) == -1)
			break;
}

/*
 * Reads the broker's frames until the publishes of the first upto
 * outstanding batches are settled, or the channel or connection is gone,
 * or the confirm timeout passes without progress (no publish, no confirm;
 * blocked by the broker: BLOCKED_MS); what is unsettled when the channel
 * goes has failed.  The leases of what is awaited are kept.  Stopping
 * while the broker blocks: given up at once.  Returns 1 when something
 * failed on the broker's side, else 0.
 */
static int
confirms(struct push *p, unsigned upto)
{
	struct mq_broker *b = p->b;
	uint64_t limit, since, now;
	amqp_frame_t f;
	char buf[80];
	unsigned j;
	int r, failed = 0, slice;

	slice = margin(p) / 2 < SLICE_MS ? (int)(margin(p) / 2) : SLICE_MS;
	if (slice < 10)
		slice = 10;
	for (;;) {
		for (j = 0; j < upto && p->q[j].unsettled == 0; j++)
			;
		if (j == upto)
			break;
		if (b->conn == NULL || b->ch == 0) {
			failed = 1;
			break;
		}
		keep_leases(p, p->nq);
		if (*b->stop && b->blocked) {
			drop(p, NULL);
			failed = 1;
			break;
		}
		now = mq_now_ms();
		since = p->q[j].last > p->progress ? p->q[j].last : p->progress;
		limit = b->blocked ? BLOCKED_MS : confirm_timeout(p);
		if (now - since >= limit) {
			snprintf(buf, sizeof(buf), b->blocked ?
			    "blocked by the broker for %llu ms" :
			    "no confirm in %llu ms", (unsigned long long)limit);
			drop(p, buf);
			failed = 1;
			break;
		}
		if ((r = frame(p, &f, slice)) == 0)
			continue;
		if (r == -1) {
			failed = 1;
			break;
		}
		if ((r = handle(p, &f)) == -1) {
			failed = 1;
			break;
		}
		if (r == 1)
			failed = 1;
	}
	/* The channel gone, nothing unsettled on it will be confirmed. */
	if (b->conn == NULL || b->ch == 0)
		settle(p, UINT64_MAX, 1, 0);
	if (b->conn != NULL)
		amqp_maybe_release_buffers(b->conn);
	return failed;
}

/*
 * What became of m, settled locally (acked, released, buried) while its
 * receipt is open: 0 when st is MQ_EX_OK; else -1, said (its lease lost,
 * or a system error: p->status).
 */
static int
settled(struct push *p, struct msg *m, int st)
{
	if (st == MQ_EX_OK)
		return 0;
	if (st == MQ_EX_LOST)
		warnx("%s: lease lost", mq_receipt_shown(&p->sp, m->receipt));
	else {
		warn("%s", mq_receipt_shown(&p->sp, m->receipt));
		p->status = MQ_EX_SYS;
	}
	return -1;
}

/* Releases m (its receipt open) through p->pl: 0, or -1 (said). */
static int
release_msg(struct push *p, struct msg *m)
{
	return settled(p, m, mq_receipt_release(&p->rc, &p->pl,
	    mq_now_ms(), NULL, 0));
}

/* n released: the placer flushed (new/ synced, its waiters woken). */
static void
placed(struct push *p, unsigned n)
{
	if (n > 0 && mq_placer_flush(&p->pl) == -1) {
		warn("%s/%s", p->sp.path, MQ_DIR_NEW);
		p->status = MQ_EX_SYS;
	}
}

/*
 * m is bigger than the broker takes (-s): it would close the channel on
 * every try, for ever.  Dead-lettered, with the reason.
 */
static void
too_big(struct push *p, struct msg *m, uint64_t size)
{
	char why[128];
	int n;

	n = snprintf(why, sizeof(why), TOO_BIG " (%llu bytes, at most %llu)",
	    (unsigned long long)size, (unsigned long long)p->b->max_size);
	warnx("%s: %s: dead-lettered", mq_receipt_shown(&p->sp, m->receipt),
	    why);
	if (settled(p, m, mq_receipt_bury(&p->rc, why, (size_t)n,
	    MQ_CAUSE_REJECTED)) == 0) {
		m->state = BURIED;
		p->buried++;
	} else
		m->state = GONE;
}

/* Releases bt's messages not published for a local reason, at once. */
static void
release_local(struct push *p, struct batch *bt)
{
	unsigned i, n = 0;

	for (i = 0; i < bt->n; i++) {
		struct msg *m = &bt->m[i];

		if (m->state != LOCAL)
			continue;
		m->state = GONE;
		if (open_receipt(p, m, 0) == -1)
			continue;
		if (release_msg(p, m) == 0) {
			m->state = RELEASED;
			n++;
		}
	}
	placed(p, n);
}

/*
 * Half the heartbeat since the last write, inside a batch (its bodies
 * read slowly): what is framed is written, or else a heartbeat frame
 * sent under the watchdog, so that the broker does not take the
 * connection for dead.
 */
static void
heartbeat(struct push *p)
{
	amqp_frame_t f;

	if (p->b->outlen > 0) {
		(void)flush(p);
		return;
	}
	memset(&f, 0, sizeof(f));
	f.frame_type = AMQP_FRAME_HEARTBEAT;
	f.channel = 0;
	guard(p, confirm_timeout(p));
	if (amqp_send_frame(p->b->conn, &f) != AMQP_STATUS_OK) {
		(void)mq_broker_unguard(p->b);
		drop(p, "a heartbeat could not be sent");
		return;
	}
	if (mq_broker_unguard(p->b)) {
		drop(p, "a heartbeat could not be sent");
		return;
	}
	p->wrote = mq_now_ms();
}

/*
 * Reads and publishes the batch just claimed (p->cur): not a message
 * whose lease is nearly over (released instead), nor one too big (buried),
 * nor any once stopping (released); the older batch's leases kept.
 */
static void
publish_batch(struct push *p, struct batch *bt)
{
	uint64_t size;
	unsigned i;
	ssize_t len;

	bt->unsettled = 0;
	p->publishing = 1;
	p->wrote = mq_now_ms();
	mq_broker_hold(p->b, 1);	/* framed, written at once (TCP) */
	for (i = 0; i < bt->n; i++) {
		struct msg *m = &bt->m[i];

		if (p->b->conn != NULL && p->b->heartbeat > 0 &&
		    mq_now_ms() - p->wrote >= (uint64_t)p->b->heartbeat * 500)
			heartbeat(p);

		if (p->b->conn == NULL || p->b->ch == 0) {
			m->state = FAILED;
			continue;
		}
		keep_leases(p, p->nq + 1);	/* this batch's too */
		if (*p->b->stop || m->deadline < mq_now_ms() + margin(p)) {
			m->state = LOCAL;
			continue;
		}
		if (open_receipt(p, m, 1) == -1) {
			m->state = GONE;
			continue;
		}
		if ((len = read_body(p, m, &size)) == -3) {
			m->state = GONE;
			continue;
		}
		if (len == -2) {
			too_big(p, m, size);
			continue;
		}
		if (len == -1 || len == -4) {
			if (len == -1)
				warn("%s", mq_receipt_shown(&p->sp,
				    m->receipt));
			m->state = LOCAL;
			continue;
		}
		if (publish(p, bt, m, p->body, (size_t)len) == -1)
			m->state = FAILED;
		else if (p->b->outlen >= FRAMED_MAX)
			(void)flush(p);	/* a big batch in parts */
	}
	if (p->b->conn != NULL)
		(void)flush(p);
	mq_broker_hold(p->b, 0);
	p->publishing = 0;
	release_local(p, bt);
	bt->last = mq_now_ms();
}

/*
 * Settles the oldest outstanding batch locally (its confirms all in):
 * acks the confirmed, releases the rest.  Returns 1 when the broker failed
 * some (a local failure releases only its message).
 */
static int
finish_batch(struct push *p)
{
	struct batch *bt = &p->q[0], spare;
	unsigned i, confirmed = 0, released = 0, buried = 0;
	int failed = 0;

	for (i = 0; i < bt->n; i++) {
		struct msg *m = &bt->m[i];

		if (m->state == UNSETTLED) {	/* never: settled before */
			m->state = FAILED;
			bt->unsettled--;
		}
		if (m->state == BURIED) {
			buried++;
			continue;
		}
		if (m->state == RELEASED) {
			released++;
			continue;
		}
		if (m->state == GONE || open_receipt(p, m, 0) == -1) {
			if (m->state == CONFIRMED)
				confirmed++;
			continue;
		}
		if (m->state == CONFIRMED) {
			confirmed++;
			(void)settled(p, m, mq_receipt_ack(&p->rc));
			continue;
		}
		/* Only the broker's failures fail the batch (and the next). */
		if (m->state != LOCAL)
			failed = 1;
		if (release_msg(p, m) == 0)
			released++;
	}
	placed(p, released);
	if (p->b->verbose && buried > 0)
		warnx("pushed %u (confirmed %u, released %u, buried %u)",
		    bt->n, confirmed, released, buried);
	else if (p->b->verbose)
		warnx("pushed %u (confirmed %u, released %u)", bt->n,
		    confirmed, released);
	p->pushed += confirmed;
	if (confirmed > 0)
		mq_broker_moved(p->b);
	if (confirmed > 0)
		p->failing = 0;
	else if (failed && p->failing == 0)
		p->failing = mq_now_ms();
	/* The newer is now the older; the batch's array is for the next. */
	spare = p->q[0];
	spare.n = 0;
	spare.unsettled = 0;
	p->q[0] = p->q[1];
	p->q[1] = spare;
	p->nq--;
	if (p->nq == 0)
		mq_receipt_close(&p->rc);
	return failed;
}

/*
 * Waits for the oldest batch (every one when all), settles it locally;
 * on a failure, every batch outstanding, then a new channel.
 */
static void
settle_batches(struct push *p, int all)
{
	int failed;

	failed = confirms(p, all ? p->nq : 1);
	if (failed && p->nq > 1)
		(void)confirms(p, p->nq);
	failed |= finish_batch(p);
	if (failed || all)
		while (p->nq > 0)
			failed |= finish_batch(p);
	if (!failed)
		return;
	/*
	 * Nacks or returns: the channel may be bad, as 3.10 showed, or the
	 * queue gone (a return: declared again); a pause before the next
	 * try, as the messages released are visible at once.
	 */
	if (p->b->conn != NULL && mq_broker_new_channel(p->b) == 0)
		(void)mq_broker_declare(p->b);
	(void)mq_broker_pause(p->b, SLICE_MS);
}

/*
 * Services the connection while nothing is outstanding (its heartbeats;
 * connection.blocked; a channel closed by the broker): waits up to ms
 * for a frame.  -1: the connection was lost.
 */
static int
service(struct push *p, int ms)
{
	amqp_frame_t f;
	int r;

	if (p->b->conn == NULL)
		return -1;
	while ((r = frame(p, &f, ms)) == 1) {
		if (f.frame_type == AMQP_FRAME_METHOD &&
		    f.channel == p->b->ch && f.channel != 0 &&
		    f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD)
			channel_closed(p);
		ms = 0;
	}
	return r == -1 ? -1 : 0;
}

/*
 * Blocked by the broker (a resource alarm) with nothing outstanding:
 * nothing is claimed nor published until it unblocks; waited for in
 * slices that watch the stop flag, BLOCKED_MS at most (then the
 * connection is taken as lost).
 */
static void
wait_unblocked(struct push *p)
{
	uint64_t start = mq_now_ms();
	char buf[80];

	while (p->b->conn != NULL && p->b->blocked && !*p->b->stop) {
		if (mq_now_ms() - start >= BLOCKED_MS) {
			snprintf(buf, sizeof(buf), "blocked by the broker for "
			    "%d ms", BLOCKED_MS);
			drop(p, buf);
			return;
		}
		if (service(p, SLICE_MS) == -1)
			return;
	}
}

/*
 * Idle: waits for the spool's doorbell up to CLAIM_MS (or wake), in
 * slices that watch the stop flag.
 */
static void
idle(struct push *p, struct mq_waiter *w, uint64_t wake)
{
	uint64_t now = mq_now_ms(), until = now + CLAIM_MS;
	int r;

	if (wake < until)
		until = wake;
	while (!*p->b->stop && (now = mq_now_ms()) < until) {
		if (service(p, 0) == -1)
			return;
		mq_log_flush();
		r = mq_wait(w, until - now < SLICE_MS ? (int64_t)(until - now) :
		    SLICE_MS);
		if (r == -1)
			err(MQ_EX_SYS, "%s/%s", p->sp.path, MQ_DIR_NEW);
		if (r == 1) {
			/* A conf that does not parse: said once, kept as was. */
			(void)mq_settings_reread(&p->sp);
			break;
		}
	}
}

/*
 * A connection, a channel and confirms, not blocked: 1 when a batch may
 * be published; 0 to look again (what was out settled, a channel or
 * confirms that failed, a block waited out); -1 to end (no node answered
 * for GIVE_UP_MS, with -1, or stopping).
 */
static int
channel_ready(struct push *p, int once)
{
	struct mq_broker *b = p->b;
	int live = b->conn != NULL && b->ch != 0 && b->confirming;

	if (p->nq > 0 && !live) {
		/* The channel went with batches out: settled first. */
		settle_batches(p, 1);
		return 0;
	}
	if (b->conn == NULL && mq_broker_connect(b, 0,
	    once ? GIVE_UP_MS : 0) == -1) {
		if (!*b->stop) {
			warnx("no node answered for %d s", GIVE_UP_MS / 1000);
			p->status = MQ_EX_SYS;
		}
		return -1;
	}
	if (b->ch == 0 && mq_broker_new_channel(b) == -1)
		return 0;
	if (!b->confirming) {
		if (mq_broker_confirms(b) == -1)
			return 0;
		p->next_tag = 1;
	}
	if (b->blocked) {
		/* Nothing published while blocked: what is out first. */
		if (p->nq > 0)
			settle_batches(p, 1);
		else
			wait_unblocked(p);
		return 0;
	}
	return 1;
}

/*
 * Claims a batch and publishes it; settles the older of two out, or the
 * one out when nothing more came.  0 to go on at once, 1 to idle until
 * *wake (nothing claimable), -1 to end (with -1: an error, nothing
 * confirmed for GIVE_UP_MS, or nothing left).
 */
static int
push_step(struct push *p, int once, uint64_t *wake)
{
	int got;

	*wake = UINT64_MAX;
	p->cur = &p->q[p->nq];
	p->cur->n = 0;
	/* What is out keeps its lease: not claimed again below. */
	keep_leases(p, p->nq);
	p->claimed = mq_now_ms();
	/*
	 * paused=TIME ends by itself, conf unchanged, which no ring says:
	 * looked at again (one fstatat) while paused, which ends it then.
	 */
	if (p->sp.conf.paused)
		(void)mq_settings_reread(&p->sp);
	do {
		p->cl.changed = 0;
		/* Claims make room that senders under max-depth wait for. */
		p->cl.ring = p->sp.conf.max_depth > 0;
		got = p->sp.conf.paused ? 0 : mq_claim(&p->sp, &p->cl,
		    (int)p->batch, p->sp.conf.lease_ms, collect, p, wake);
		/*
		 * conf changed under the claim (a pause, say): read again
		 * (one that does not parse is said once, kept as was), and
		 * claimed by it.
		 */
		if (p->cl.changed)
			(void)mq_settings_reread(&p->sp);
	} while (got == 0 && p->cl.changed);
	/* Paused until a time: the idle ends then. */
	if (p->sp.conf.paused && p->sp.conf.paused_until_ms != 0 &&
	    p->sp.conf.paused_until_ms < *wake)
		*wake = p->sp.conf.paused_until_ms;
	if (got == -1) {
		warn("%s", p->sp.path);
		p->status = MQ_EX_SYS;
	}
	if (p->cur->n > 0) {
		publish_batch(p, p->cur);
		p->nq++;
	}
	if (once && (got == -1 || p->status == MQ_EX_SYS))
		return -1;
	/* Two out: the older awaited; one, and nothing more: it. */
	if (p->nq == 2)
		settle_batches(p, 0);
	else if (p->nq == 1 && got == 0) {
		settle_batches(p, 1);
		got = 1;	/* a claim again before -1 ends */
	}
	if (p->status == MQ_EX_SYS && once)
		return -1;
	if (got == -1 || p->status == MQ_EX_SYS) {
		/*
		 * Without -1, a local error (named) is not the end, as in
		 * pull: what is out settled, a pause, on.
		 */
		if (p->nq > 0)
			settle_batches(p, 1);
		p->status = MQ_EX_OK;
		(void)mq_broker_pause(p->b, 1000);
		return 0;
	}
	if (once && p->failing != 0 && mq_now_ms() - p->failing >= GIVE_UP_MS) {
		warnx("%s: nothing confirmed for %d s", mq_broker_where(p->b),
		    GIVE_UP_MS / 1000);
		p->status = MQ_EX_SYS;
		return -1;
	}
	if (got > 0)
		return 0;
	return once ? -1 : 1;
}

int
mq_push(struct mq_broker *b, const char *dir, unsigned batch, int once)
{
	struct push p;
	struct mq_waiter w;
	uint64_t wake;
	int r, waiting = 0;

	memset(&p, 0, sizeof(p));
	p.b = b;
	p.batch = batch;
	mq_spool_xopen(&p.sp, dir, 0);
	if (mq_settings_reread(&p.sp) == -1)
		exit(MQ_EX_SYS);	/* said */
	mq_broker_default_queue(b, &p.sp);
	mq_claimer_init(&p.cl, 1);
	/* What it claims it holds while it lives (holder.c). */
	mq_holder_bind(getprogname(), "push");
	p.cl.uncounted = 1;
	p.cl.max = MQ_REAP_EXPIRY;	/* no attempts: only expiry buries */
	mq_receipt_init(&p.rc);
	mq_placer_release_init(&p.pl, &p.sp);
	mq_keys_init(&p.keys, &p.sp);
	b->notify_blocked = 1;
	/* Connected before the first claim: no broker, nothing claimed. */
	if (mq_broker_connect(b, once, 0) == -1) {
		p.status = *b->stop ? MQ_EX_OK : MQ_EX_SYS;
		goto done;
	}
	p.q[0].m = xreallocarray(NULL, batch, sizeof(*p.q[0].m));
	p.q[1].m = xreallocarray(NULL, batch, sizeof(*p.q[1].m));
	if (mq_wait_open(&w, &p.sp) == -1)
		err(MQ_EX_SYS, "%s/%s", p.sp.path, MQ_DIR_NEW);
	waiting = 1;
	while (!*b->stop) {
		if ((r = channel_ready(&p, once)) == -1)
			break;
		if (r == 0)
			continue;
		if ((r = push_step(&p, once, &wake)) == -1)
			break;
		if (r == 1)
			idle(&p, &w, wake);
	}
	/* Stopping or failing: everything outstanding is settled first. */
	if (p.nq > 0)
		settle_batches(&p, 1);
done:
	mq_receipt_close(&p.rc);
	if (waiting)
		mq_wait_close(&w);
	mq_keys_close(&p.keys);
	mq_placer_close(&p.pl);
	mq_claimer_close(&p.cl);
	free(p.q[0].m);
	free(p.q[1].m);
	free(p.body);
	mq_holder_leave(&p.sp);
	mq_spool_close(&p.sp);
	/* Stopping, a close the broker does not answer is cut (guard). */
	if (b->conn != NULL) {
		guard(&p, confirm_timeout(&p));
		mq_broker_close(b);
	}
	(void)mq_broker_unguard(b);
	if (p.status != MQ_EX_OK || !waiting)
		return p.status;
	return p.pushed > 0 || !once || *b->stop ? MQ_EX_OK : MQ_EX_NONE;
}
