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
 */
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
#include "broker.h"

#define SLICE_MS	250	/* every wait checks the stop flag this often */
#define CLAIM_MS	1000	/* idle, a claim at least this often */
#define CONFIRM_MAX_MS	30000	/* the confirm timeout: min(lease/2, this) */
#define GIVE_UP_MS	60000	/* -1: without a connection this long, exit */
#define BODY_MIN	65536	/* the body buffer, at least */

/* LOCAL: not published for a local reason (its body unread): released only. */
enum { UNSENT, UNSETTLED, CONFIRMED, FAILED, GONE, LOCAL };

struct msg {
	char	 receipt[MQ_RECEIPT_MAX];
	char	 id[MQ_ID_LEN + 1];
	char	 bname[MQ_BUCKET_MAX];	/* cur/S of its lease */
	const char *name;	/* its name in cur/S, inside receipt */
	struct mq_name n;	/* as its receipt was opened */
	uint64_t tag;		/* its delivery tag on the channel */
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
	struct mq_conf	 conf;
	struct mq_claimer cl;
	struct mq_receipt rc;
	struct mq_placer pl;
	struct mq_keys	 keys;
	struct batch	 q[2];	/* outstanding, oldest first: q[0], q[1] */
	unsigned	 nq;	/* how many */
	struct batch	*cur;	/* the one being claimed into */
	unsigned	 batch;
	uint64_t	 next_tag;
	char		*body;
	size_t		 cap;
	unsigned long long pushed;
	uint64_t	 failing;	/* since when batches fail; 0: they don't */
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
	m->bname[0] = '\0';
	p->cur->n++;
	return 0;
}

/*
 * Opens m's receipt in p->rc: 0, or -1 (said; the lease is gone).  The
 * first open checks the lease and remembers what it parsed; again
 * (settling it), the bucket kept open is enough when it is m's
 * (mq_receipt_again).
 */
static int
open_receipt(struct push *p, struct msg *m)
{
	const char *why;
	int st;

	if (m->bname[0] != '\0' &&
	    mq_receipt_again(&p->rc, m->bname, m->name, &m->n) == 0)
		return 0;
	if ((st = mq_receipt_open(&p->sp, m->receipt, &p->rc, &why)) ==
	    MQ_EX_OK) {
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
 * The claimed message's body into p->body; its length, or -1.  A leased
 * message's file does not change and is a regular file: a read shorter
 * than asked is its end, so one pread into a buffer big enough is all
 * of it (no fstat, no read to see EOF); a bigger one doubles the buffer.
 */
static ssize_t
read_body(struct push *p)
{
	size_t len = 0;
	ssize_t r;
	int fd;

	if ((fd = mq_receipt_body(&p->rc)) == -1)
		return -1;
	for (;;) {
		if (len == p->cap) {
			p->cap = p->cap < BODY_MIN ? BODY_MIN : p->cap * 2;
			p->body = xreallocarray(p->body, p->cap, 1);
		}
		if ((r = pread(fd, p->body + len, p->cap - len, (off_t)len)) ==
		    -1) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		len += (size_t)r;
		if (len < p->cap)
			break;
	}
	close(fd);
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
	char key[MQ_KEY_MAX + 1];
	uint64_t sent = nm->sent != 0 ? nm->sent : mq_id_ms(nm->id);
	amqp_bytes_t b;
	int k = 0, r;

	if (nm->prio > 0)
		header_int(&h[k++], "x-mq-priority", nm->prio, 0);
	if (nm->group[0] != '\0')
		header_str(&h[k++], "x-mq-group", nm->group);
	if (nm->keyhash[0] != '\0') {
		if (mq_key_get(&p->keys, nm, key) == 1)
			header_str(&h[k++], "x-mq-key", key);
		else
			warnx("%s: its key cannot be read: sent without it",
			    mq_receipt_shown(&p->sp, m->receipt));
	}
	header_int(&h[k++], "x-mq-attempts", nm->attempts, 0);
	header_int(&h[k++], "x-mq-sent", (int64_t)sent, 1);
	if (nm->ttl != 0)
		header_int(&h[k++], "x-mq-ttl", (int64_t)nm->ttl, 1);
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
	r = amqp_basic_publish(p->b->conn, p->b->ch, amqp_empty_bytes,
	    amqp_cstring_bytes(p->b->queue), 1, 0, &props, b);
	if (r != AMQP_STATUS_OK) {
		mq_broker_drop(p->b, amqp_error_string2(r));
		return -1;
	}
	m->tag = p->next_tag++;
	m->state = UNSETTLED;
	bt->unsettled++;
	return 0;
}

/*
 * Settles the unsettled of every outstanding batch up to tag (multiple)
 * or at tag: ok or not.  Tags grow with the batches: the older first.
 */
static void
settle(struct push *p, uint64_t tag, int multiple, int ok)
{
	unsigned i, j;

	for (j = 0; j < p->nq; j++) {
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

	r = amqp_read_message(p->b->conn, p->b->ch, &msg, 0);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		mq_broker_drop(p->b, mq_broker_error(r));
		return -1;
	}
	if (msg.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
		for (j = 0; j < p->nq; j++)
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
 * Reads the broker's frames until the publishes of the first upto
 * outstanding batches are settled, or the channel or connection is gone,
 * or a batch's confirm timeout (from its last publish) is past; what is
 * unsettled when the channel goes has failed.  Returns 1 when something
 * failed on the broker's side, else 0.
 */
static int
confirms(struct push *p, unsigned upto)
{
	struct mq_broker *b = p->b;
	uint64_t timeout;
	amqp_frame_t f;
	const char *why;
	char buf[64];
	unsigned j;
	int r, failed = 0;

	timeout = p->conf.lease_ms / 2 < CONFIRM_MAX_MS ?
	    p->conf.lease_ms / 2 : CONFIRM_MAX_MS;
	if (timeout < SLICE_MS)		/* a lease of a few ms */
		timeout = SLICE_MS;
	for (;;) {
		for (j = 0; j < upto && p->q[j].unsettled == 0; j++)
			;
		if (j == upto)
			break;
		if (b->conn == NULL || b->ch == 0) {
			failed = 1;
			break;
		}
		if (mq_now_ms() - p->q[j].last >= timeout) {
			snprintf(buf, sizeof(buf), "no confirm in %llu ms",
			    (unsigned long long)timeout);
			mq_broker_drop(b, buf);
			failed = 1;
			break;
		}
		if ((r = mq_broker_frame(b, &f, SLICE_MS, &why)) == 0)
			continue;
		if (r == -1) {
			mq_broker_drop(b, why);
			failed = 1;
			break;
		}
		if (f.frame_type != AMQP_FRAME_METHOD || f.channel != b->ch)
			continue;
		switch (f.payload.method.id) {
		case AMQP_BASIC_ACK_METHOD: {
			amqp_basic_ack_t *a = f.payload.method.decoded;

			settle(p, a->delivery_tag, a->multiple, 1);
			break;
		}
		case AMQP_BASIC_NACK_METHOD: {
			amqp_basic_nack_t *a = f.payload.method.decoded;

			settle(p, a->delivery_tag, a->multiple, 0);
			failed = 1;
			break;
		}
		case AMQP_BASIC_RETURN_METHOD:
			failed = 1;
			if (returned(p) == -1)
				goto out;
			break;
		case AMQP_CHANNEL_CLOSE_METHOD: {
			amqp_channel_close_t *c = f.payload.method.decoded;

			warnx("%s: channel closed: %.*s", mq_broker_where(b),
			    (int)c->reply_text.len,
			    (const char *)c->reply_text.bytes);
			mq_broker_channel_closed(b);
			failed = 1;
			goto out;
		}
		}
	}
out:
	/* The channel gone, nothing unsettled on it will be confirmed. */
	if (b->conn == NULL || b->ch == 0)
		settle(p, UINT64_MAX, 1, 0);
	if (b->conn != NULL)
		amqp_maybe_release_buffers(b->conn);
	return failed;
}

/* Reads and publishes the batch just claimed (p->cur). */
static void
publish_batch(struct push *p, struct batch *bt)
{
	unsigned i;
	ssize_t len;

	bt->unsettled = 0;
	mq_broker_hold(p->b, 1);	/* the batch in full segments */
	for (i = 0; i < bt->n; i++) {
		struct msg *m = &bt->m[i];

		if (p->b->conn == NULL || p->b->ch == 0) {
			m->state = FAILED;
			continue;
		}
		if (open_receipt(p, m) == -1) {
			m->state = GONE;
			continue;
		}
		if ((len = read_body(p)) == -1) {
			warn("%s", mq_receipt_shown(&p->sp, m->receipt));
			m->state = LOCAL;
			continue;
		}
		if (publish(p, bt, m, p->body, (size_t)len) == -1)
			m->state = FAILED;
	}
	mq_broker_hold(p->b, 0);
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
	unsigned i, confirmed = 0, released = 0;
	int failed = 0, st;

	for (i = 0; i < bt->n; i++) {
		struct msg *m = &bt->m[i];

		if (m->state == UNSETTLED) {	/* never: settled before */
			m->state = FAILED;
			bt->unsettled--;
		}
		if (m->state == GONE || open_receipt(p, m) == -1) {
			if (m->state == CONFIRMED)
				confirmed++;
			continue;
		}
		if (m->state == CONFIRMED) {
			confirmed++;
			if ((st = mq_receipt_ack(&p->rc)) == MQ_EX_LOST)
				warnx("%s: lease lost",
				    mq_receipt_shown(&p->sp, m->receipt));
			else if (st != MQ_EX_OK) {
				warn("%s", mq_receipt_shown(&p->sp,
				    m->receipt));
				p->status = MQ_EX_SYS;
			}
			continue;
		}
		/* Only the broker's failures fail the batch (and the next). */
		if (m->state != LOCAL)
			failed = 1;
		if ((st = mq_receipt_release(&p->rc, &p->pl, mq_now_ms())) ==
		    MQ_EX_OK)
			released++;
		else if (st == MQ_EX_LOST)
			warnx("%s: lease lost", mq_receipt_shown(&p->sp,
			    m->receipt));
		else {
			warn("%s", mq_receipt_shown(&p->sp, m->receipt));
			p->status = MQ_EX_SYS;
		}
	}
	if (released > 0 && mq_placer_flush(&p->pl) == -1) {
		warn("%s/%s", p->sp.path, MQ_DIR_NEW);
		p->status = MQ_EX_SYS;
	}
	if (p->b->verbose)
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
		r = mq_wait(w, until - now < SLICE_MS ? (int64_t)(until - now) :
		    SLICE_MS);
		if (r == -1)
			err(MQ_EX_SYS, "%s/%s", p->sp.path, MQ_DIR_NEW);
		if (r == 1) {
			mq_conf_xread(&p->sp, &p->conf);
			break;
		}
	}
}

int
mq_push(struct mq_broker *b, const char *dir, unsigned batch, int once)
{
	struct push p;
	struct mq_waiter w;
	uint64_t wake;
	int got, live;

	memset(&p, 0, sizeof(p));
	p.b = b;
	p.batch = batch;
	mq_spool_xopen(&p.sp, dir, 0);
	mq_conf_xread(&p.sp, &p.conf);
	mq_broker_default_queue(b, &p.sp);
	mq_claimer_init(&p.cl, 1);
	p.cl.uncounted = 1;
	p.cl.ttl_ms = p.conf.ttl_ms;
	p.cl.ring = p.conf.max_depth > 0;
	mq_receipt_init(&p.rc);
	mq_placer_init(&p.pl, &p.sp, 0);
	p.pl.spares = 1;
	mq_keys_init(&p.keys, &p.sp);
	/* Connected before the first claim: no broker, nothing claimed. */
	if (mq_broker_connect(b, once, 0) == -1) {
		mq_spool_close(&p.sp);
		return *b->stop ? MQ_EX_OK : MQ_EX_SYS;
	}
	p.q[0].m = xreallocarray(NULL, batch, sizeof(*p.q[0].m));
	p.q[1].m = xreallocarray(NULL, batch, sizeof(*p.q[1].m));
	if (mq_wait_open(&w, &p.sp) == -1)
		err(MQ_EX_SYS, "%s/%s", p.sp.path, MQ_DIR_NEW);
	while (!*b->stop) {
		live = b->conn != NULL && b->ch != 0 && b->confirming;
		if (p.nq > 0 && !live) {
			/* The channel went with batches out: settled first. */
			settle_batches(&p, 1);
			continue;
		}
		if (b->conn == NULL && mq_broker_connect(b, 0,
		    once ? GIVE_UP_MS : 0) == -1) {
			if (!*b->stop) {
				warnx("no node answered for %d s",
				    GIVE_UP_MS / 1000);
				p.status = MQ_EX_SYS;
			}
			break;
		}
		if (b->ch == 0 && mq_broker_new_channel(b) == -1)
			continue;
		if (!b->confirming) {
			if (mq_broker_confirms(b) == -1)
				continue;
			p.next_tag = 1;
		}
		p.cl.ttl_ms = p.conf.ttl_ms;
		wake = UINT64_MAX;
		p.cur = &p.q[p.nq];
		p.cur->n = 0;
		got = p.conf.paused ? 0 : mq_claim(&p.sp, &p.cl, (int)batch,
		    p.conf.lease_ms, UINT_MAX, collect, &p, &wake);
		if (got == -1) {
			warn("%s", p.sp.path);
			p.status = MQ_EX_SYS;
		}
		if (p.cur->n > 0) {
			publish_batch(&p, p.cur);
			p.nq++;
		}
		if (once && (got == -1 || p.status == MQ_EX_SYS))
			break;
		/* Two out: the older awaited; one, and nothing more: it. */
		if (p.nq == 2)
			settle_batches(&p, 0);
		else if (p.nq == 1 && got == 0) {
			settle_batches(&p, 1);
			got = 1;	/* a claim again before -1 ends */
		}
		if (p.status == MQ_EX_SYS && once)
			break;
		if (got == -1 || p.status == MQ_EX_SYS) {
			/*
			 * Without -1, a local error (named) is not the end,
			 * as in pull: what is out settled, a pause, on.
			 */
			if (p.nq > 0)
				settle_batches(&p, 1);
			p.status = MQ_EX_OK;
			(void)mq_broker_pause(b, 1000);
			continue;
		}
		if (once && p.failing != 0 &&
		    mq_now_ms() - p.failing >= GIVE_UP_MS) {
			warnx("%s: nothing confirmed for %d s",
			    mq_broker_where(b), GIVE_UP_MS / 1000);
			p.status = MQ_EX_SYS;
			break;
		}
		if (got > 0)
			continue;
		if (once)
			break;
		idle(&p, &w, wake);
	}
	/* Stopping or failing: everything outstanding is settled first. */
	if (p.nq > 0)
		settle_batches(&p, 1);
	mq_receipt_close(&p.rc);
	mq_wait_close(&w);
	mq_keys_close(&p.keys);
	mq_placer_close(&p.pl);
	mq_claimer_close(&p.cl);
	free(p.q[0].m);
	free(p.q[1].m);
	free(p.body);
	mq_spool_close(&p.sp);
	if (p.status != MQ_EX_OK)
		return p.status;
	return p.pushed > 0 || !once || *b->stop ? MQ_EX_OK : MQ_EX_NONE;
}
