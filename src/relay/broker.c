/*
 * broker.c: mq-relay's connection to a RabbitMQ cluster: the URIs (their
 * passwords kept out of every message and, for those given in argv, out
 * of ps), connecting over TCP or TLS, login, channels, the queue's
 * declaration (passive, else durable and quorum), reconnection with
 * backoff and full jitter, the frames push reads for its confirms, and
 * the watchdog that push and pull put over the sends that rabbitmq-c
 * makes without a time limit.
 * Only mq-relay is linked with this file (and rabbitmq-c).
 */
#include <sys/socket.h>
#include <sys/time.h>

#include <netdb.h>

#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"
#include "broker.h"

#define CONNECT_SECS	5	/* for a node's TCP (and TLS) connection */
#define FRAME_MAX	131072
#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	10000
#define SLICE_MS	250	/* every wait checks *stop this often */
#define RPC_SECS	5	/* for every RPC (and the login): a broker that
				   stops answering is a lost connection */
#define OUT_KEEP	4194304	/* a framing buffer bigger is freed after use */
#define CHANNEL_LAST	2047	/* RabbitMQ's default channel_max */
#define TICK_MS		250	/* the watchdog's tick */
#define STUCK_TICKS	3	/* stopping, or cut: stuck this long, shut */
#define DEFAULT_CACERT	"/etc/ssl/certs/ca-certificates.crt"

#define URI_FORM	"amqp[s]://[user[:password]@]host[:port][/vhost]"

/*
 * The watchdog (mq_broker_guard), one for the process: its handler sees
 * only these and the guarded broker's sig_atomic_t fields (moved, cut,
 * *stop), wd_b set before wd_fd arms it.
 */
static volatile sig_atomic_t wd_fd = -1;	/* the socket; -1: not armed */
static volatile sig_atomic_t wd_ticks, wd_limit, wd_fired;
static volatile sig_atomic_t wd_seen;	/* b->moved at the last tick */
static volatile sig_atomic_t wd_stopping;	/* MQ_GUARD_STOP */
static volatile sig_atomic_t wd_soft;	/* MQ_GUARD_CUT: 1, then 2 once cut */
static struct mq_broker *volatile wd_b;

/*
 * Overwrites with 'x' what of s (an argv string) may hold a password:
 * after "scheme://", everything up to the last '@'; without an '@',
 * everything after the first ':' (a password typed without its host).
 */
static void
scrub(char *s)
{
	char *p, *at;

	p = (p = strstr(s, "://")) != NULL ? p + 3 : s;
	if ((at = strrchr(p, '@')) == NULL) {
		if ((p = strchr(p, ':')) == NULL)
			return;
		at = p + strlen(p);
		p++;
	}
	for (; p < at; p++)
		*p = 'x';
}

static int
add(struct mq_broker *b, char *s, int i, int inargv)
{
	struct mq_node *nd;

	if (b->n == MQ_BROKER_URIS_MAX) {
		if (inargv)
			scrub(s);
		warnx("too many URIs (at most %d)", MQ_BROKER_URIS_MAX);
		return -1;
	}
	nd = &b->node[b->n];
	nd->uri = xstrdup(s);
	amqp_default_connection_info(&nd->info);
	if (amqp_parse_url(nd->uri, &nd->info) != AMQP_STATUS_OK ||
	    nd->info.host[0] == '\0') {
		/* Never echoed: where its password ends is not known. */
		if (inargv)
			scrub(s);
		free(nd->uri);
		nd->uri = NULL;
		warnx("URI %d: not an AMQP URI (" URI_FORM ")", i + 1);
		return -1;
	}
	if (inargv)
		scrub(s);
	snprintf(nd->where, sizeof(nd->where),
	    strchr(nd->info.host, ':') != NULL ? "[%s]:%d" : "%s:%d",
	    nd->info.host, nd->info.port);
	b->n++;
	return 0;
}

int
mq_broker_init(struct mq_broker *b, int argc, char **argv, const char *queue,
    int heartbeat, int verbose, volatile sig_atomic_t *stop)
{
	static char dflt[] = MQ_BROKER_DEFAULT_URI;
	const char *cert = getenv("MQ_RELAY_CERT"), *key = getenv("MQ_RELAY_KEY");
	char *env, *s, *last;
	int i, bad = 0;

	memset(b, 0, sizeof(*b));
	b->queue = queue;
	b->heartbeat = heartbeat;
	b->verbose = verbose;
	b->stop = stop;
	b->next_ch = 1;
	b->backoff_ms = BACKOFF_MIN_MS;
	b->max_size = MQ_BROKER_MAX_SIZE;
	/* Every argv password is overwritten, whatever the others are. */
	for (i = 0; i < argc; i++)
		if (add(b, argv[i], i, 1) == -1)
			bad = 1;
	if (bad)
		return -1;
	if (argc == 0 && (env = getenv("MQ_RELAY_URI")) != NULL) {
		env = xstrdup(env);
		for (s = strtok_r(env, " \t\n", &last), i = 0; s != NULL;
		    s = strtok_r(NULL, " \t\n", &last), i++)
			if (add(b, s, i, 0) == -1) {
				free(env);
				return -1;
			}
		free(env);
	}
	if (b->n == 0 && add(b, dflt, 0, 0) == -1)
		return -1;
	if ((cert == NULL || *cert == '\0') != (key == NULL || *key == '\0')) {
		warnx("MQ_RELAY_CERT and MQ_RELAY_KEY go together");
		return -1;
	}
	return 0;
}

const char *
mq_broker_where(const struct mq_broker *b)
{
	return b->node[b->cur].where;
}

const char *
mq_broker_error(amqp_rpc_reply_t r)
{
	static char buf[512];
	const amqp_connection_close_t *cc;
	const amqp_channel_close_t *ch;

	switch (r.reply_type) {
	case AMQP_RESPONSE_NORMAL:
		return "no error";
	case AMQP_RESPONSE_NONE:
		return "no reply";
	case AMQP_RESPONSE_LIBRARY_EXCEPTION:
		if (r.library_error == AMQP_STATUS_TIMEOUT)
			return "no answer within 5 s";
		return amqp_error_string2(r.library_error);
	case AMQP_RESPONSE_SERVER_EXCEPTION:
		switch (r.reply.id) {
		case AMQP_CONNECTION_CLOSE_METHOD:
			cc = r.reply.decoded;
			snprintf(buf, sizeof(buf), "%.*s",
			    (int)cc->reply_text.len,
			    (const char *)cc->reply_text.bytes);
			return buf;
		case AMQP_CHANNEL_CLOSE_METHOD:
			ch = r.reply.decoded;
			snprintf(buf, sizeof(buf), "%.*s",
			    (int)ch->reply_text.len,
			    (const char *)ch->reply_text.bytes);
			return buf;
		}
		snprintf(buf, sizeof(buf), "server error (method 0x%08x)",
		    (unsigned)r.reply.id);
		return buf;
	}
	return "unknown error";
}

/* The channel.close reply code of a server exception, else 0. */
static int
channel_code(amqp_rpc_reply_t r)
{
	if (r.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
	    r.reply.id != AMQP_CHANNEL_CLOSE_METHOD)
		return 0;
	return ((const amqp_channel_close_t *)r.reply.decoded)->reply_code;
}

void
mq_broker_channel_closed(struct mq_broker *b)
{
	amqp_channel_close_ok_t ok;

	if (b->conn != NULL && b->ch != 0)
		amqp_send_method(b->conn, b->ch, AMQP_CHANNEL_CLOSE_OK_METHOD,
		    &ok);
	b->ch = 0;
	b->confirming = 0;
}

/* Opens the next channel number; 0, or -1 with *why. */
static int
open_channel(struct mq_broker *b, const char **why)
{
	amqp_rpc_reply_t r;
	int last = amqp_get_channel_max(b->conn);

	if (last <= 0 || last > CHANNEL_LAST)
		last = CHANNEL_LAST;
	if (b->next_ch == 0 || b->next_ch > last) {
		*why = "out of channel numbers";
		return -1;
	}
	amqp_channel_open(b->conn, b->next_ch);
	r = amqp_get_rpc_reply(b->conn);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		*why = mq_broker_error(r);
		return -1;
	}
	b->ch = b->next_ch++;
	b->confirming = 0;
	return 0;
}

/*
 * Makes sure the queue is there: a passive declare, and when the broker
 * says 404 (closing the channel), a durable quorum queue on a new one.
 */
static int
declare(struct mq_broker *b, const char **why)
{
	amqp_table_entry_t e;
	amqp_table_t args;
	amqp_rpc_reply_t r;
	amqp_bytes_t q = amqp_cstring_bytes(b->queue);

	amqp_queue_declare(b->conn, b->ch, q, 1, 0, 0, 0, amqp_empty_table);
	r = amqp_get_rpc_reply(b->conn);
	if (r.reply_type == AMQP_RESPONSE_NORMAL)
		return 0;
	if (channel_code(r) != AMQP_NOT_FOUND) {
		*why = mq_broker_error(r);
		return -1;
	}
	mq_broker_channel_closed(b);
	if (open_channel(b, why) == -1)
		return -1;
	e.key = amqp_cstring_bytes("x-queue-type");
	e.value.kind = AMQP_FIELD_KIND_UTF8;
	e.value.value.bytes = amqp_cstring_bytes("quorum");
	args.num_entries = 1;
	args.entries = &e;
	amqp_queue_declare(b->conn, b->ch, q, 0, 1, 0, 0, args);
	r = amqp_get_rpc_reply(b->conn);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		*why = mq_broker_error(r);
		return -1;
	}
	return 0;
}

/* A TLS socket, verifying the peer and its name. */
static amqp_socket_t *
tls_socket(amqp_connection_state_t conn, const char **why)
{
	amqp_socket_t *s;
	const char *ca = getenv("MQ_RELAY_CACERT");
	const char *cert = getenv("MQ_RELAY_CERT"), *key = getenv("MQ_RELAY_KEY");

	if ((s = amqp_ssl_socket_new(conn)) == NULL) {
		*why = "cannot make a TLS socket";
		return NULL;
	}
	amqp_ssl_socket_set_verify_peer(s, 1);
	amqp_ssl_socket_set_verify_hostname(s, 1);
	if ((ca == NULL || *ca == '\0') && access(DEFAULT_CACERT, R_OK) == 0)
		ca = DEFAULT_CACERT;
	if (ca != NULL && *ca != '\0' &&
	    amqp_ssl_socket_set_cacert(s, ca) != AMQP_STATUS_OK) {
		*why = "cannot read the CA certificates (MQ_RELAY_CACERT)";
		return NULL;
	}
	if (cert != NULL && *cert != '\0' &&
	    amqp_ssl_socket_set_key(s, cert, key) != AMQP_STATUS_OK) {
		*why = "cannot read MQ_RELAY_CERT or MQ_RELAY_KEY";
		return NULL;
	}
	return s;
}

/*
 * Why a TCP connection to host:port fails: rabbitmq-c says only "a socket
 * error", its nonblocking connect's cause left in a socket it closed; a
 * second, blocking connect (refused or unreachable: at once) tells it.
 */
static const char *
socket_error(const char *host, int port)
{
	static char buf[128];
	struct addrinfo hints, *res, *ai;
	char serv[16];
	int fd, e = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	snprintf(serv, sizeof(serv), "%d", port);
	if (getaddrinfo(host, serv, &hints, &res) != 0)
		return "cannot resolve the host";
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if ((fd = socket(ai->ai_family, ai->ai_socktype,
		    ai->ai_protocol)) == -1) {
			e = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			close(fd);
			e = 0;
			break;
		}
		e = errno;
		close(fd);
	}
	freeaddrinfo(res);
	if (e == 0)
		return amqp_error_string2(AMQP_STATUS_SOCKET_ERROR);
	snprintf(buf, sizeof(buf), "%s", strerror(e));
	buf[0] = (char)tolower((unsigned char)buf[0]);
	return buf;
}

/* Connects to node i, logs in, opens a channel, declares: 0 or -1. */
static int
connect_node(struct mq_broker *b, int i, const char **why)
{
	struct amqp_connection_info *in = &b->node[i].info;
	amqp_socket_t *s;
	amqp_rpc_reply_t r;
	amqp_table_entry_t cap, caps;
	amqp_table_t props;
	struct timeval tv = { CONNECT_SECS, 0 }, rpc = { RPC_SECS, 0 };
	int st, fd, one = 1;

	if ((b->conn = amqp_new_connection()) == NULL) {
		*why = "out of memory";
		return -1;
	}
	/* No call waits for the broker for ever: a timeout drops it. */
	if (amqp_set_handshake_timeout(b->conn, &tv) != AMQP_STATUS_OK ||
	    amqp_set_rpc_timeout(b->conn, &rpc) != AMQP_STATUS_OK) {
		*why = "cannot set the time limits";
		goto fail;
	}
	b->next_ch = 1;
	b->ch = 0;
	b->confirming = 0;
	b->blocked = 0;
	s = in->ssl ? tls_socket(b->conn, why) : amqp_tcp_socket_new(b->conn);
	if (s == NULL) {
		if (!in->ssl)
			*why = "cannot make a socket";
		goto fail;
	}
	if ((st = amqp_socket_open_noblock(s, in->host, in->port, &tv)) !=
	    AMQP_STATUS_OK) {
		*why = st == AMQP_STATUS_SOCKET_ERROR ?
		    socket_error(in->host, in->port) : amqp_error_string2(st);
		goto fail;
	}
	if ((fd = amqp_get_sockfd(b->conn)) != -1)
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	/*
	 * A publisher asks to be told when the broker blocks it (a memory
	 * or disk alarm) rather than have its sends hang unexplained.
	 */
	cap.key = amqp_cstring_bytes("connection.blocked");
	cap.value.kind = AMQP_FIELD_KIND_BOOLEAN;
	cap.value.value.boolean = 1;
	caps.key = amqp_cstring_bytes("capabilities");
	caps.value.kind = AMQP_FIELD_KIND_TABLE;
	caps.value.value.table.num_entries = 1;
	caps.value.value.table.entries = &cap;
	props.num_entries = b->notify_blocked ? 1 : 0;
	props.entries = &caps;
	r = amqp_login_with_properties(b->conn, in->vhost, 0, FRAME_MAX,
	    b->heartbeat, &props, AMQP_SASL_METHOD_PLAIN, in->user,
	    in->password);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		/* A broker that closes the socket at login refused it. */
		*why = r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
		    r.library_error == AMQP_STATUS_CONNECTION_CLOSED ?
		    "connection closed at login (login refused?)" :
		    mq_broker_error(r);
		goto fail;
	}
	if (open_channel(b, why) == -1 || declare(b, why) == -1)
		goto fail;
	return 0;
fail:
	amqp_destroy_connection(b->conn);
	b->conn = NULL;
	b->ch = 0;
	return -1;
}

/* Sleeps ms in slices, checking *stop; -1 when stopped. */
int
mq_broker_pause(struct mq_broker *b, uint64_t ms)
{
	uint64_t end = mq_now_ms() + ms, now;

	while (!*b->stop && (now = mq_now_ms()) < end)
		poll(NULL, 0, end - now < SLICE_MS ? (int)(end - now) :
		    SLICE_MS);
	return *b->stop ? -1 : 0;
}

int
mq_broker_connect(struct mq_broker *b, int once, uint64_t give_up_ms)
{
	uint64_t start = mq_now_ms();
	const char *why;
	int k, i;

	mq_broker_drop(b, NULL);
	/* Set before stop is looked at: a stop from now on is seen. */
	b->connecting = 1;
	for (;;) {
		for (k = 0; k < b->n; k++) {
			if (*b->stop)
				goto fail;
			i = (b->cur + k) % b->n;
			if (connect_node(b, i, &why) == 0) {
				b->connecting = 0;
				b->cur = i;
				b->outage = 0;
				if (b->verbose)
					warnx("connected to %s, queue %s",
					    b->node[i].where, b->queue);
				return 0;
			}
			/*
			 * -1: every failure; else those of the first round
			 * of an outage (then silence until connected), -v:
			 * every round's.
			 */
			if (once)
				warnx("%s: %s", b->node[i].where, why);
			else if (b->verbose || !b->outage)
				warnx("%s: %s; trying the next node",
				    b->node[i].where, why);
		}
		b->outage = 1;
		if (once)
			goto fail;
		if (give_up_ms != 0 && mq_now_ms() - start >= give_up_ms)
			goto fail;
		if (mq_broker_pause(b, arc4random_uniform(
		    (uint32_t)b->backoff_ms + 1)) == -1)
			goto fail;
		b->backoff_ms *= 2;
		if (b->backoff_ms > BACKOFF_MAX_MS)
			b->backoff_ms = BACKOFF_MAX_MS;
	}
fail:
	b->connecting = 0;
	return -1;
}

int
mq_broker_new_channel(struct mq_broker *b)
{
	amqp_rpc_reply_t r;
	const char *why;

	if (b->conn == NULL)
		return -1;
	if (b->ch != 0) {
		r = amqp_channel_close(b->conn, b->ch, AMQP_REPLY_SUCCESS);
		b->ch = 0;
		b->confirming = 0;
		if (r.reply_type != AMQP_RESPONSE_NORMAL) {
			mq_broker_drop(b, mq_broker_error(r));
			return -1;
		}
	}
	if (open_channel(b, &why) == -1) {
		mq_broker_drop(b, why);
		return -1;
	}
	return 0;
}

int
mq_broker_declare(struct mq_broker *b)
{
	const char *why;

	if (b->conn == NULL)
		return -1;
	if ((b->ch == 0 && open_channel(b, &why) == -1) ||
	    declare(b, &why) == -1) {
		mq_broker_drop(b, why);
		return -1;
	}
	return 0;
}

void
mq_broker_drop(struct mq_broker *b, const char *why)
{
	wd_fd = -1;	/* its number may be another socket's next */
	if (b->conn == NULL)
		return;
	if (why != NULL && (b->verbose || !b->outage))
		warnx("%s: connection lost: %s; trying the next node",
		    mq_broker_where(b), why);
	/* The next connection tries the other nodes first. */
	if (why != NULL) {
		b->outage = 1;
		b->cur = (b->cur + 1) % b->n;
	}
	amqp_destroy_connection(b->conn);
	b->conn = NULL;
	b->ch = 0;
	b->confirming = 0;
	b->blocked = 0;
	b->outlen = b->outoff = 0;
	b->holding = MQ_HOLD_NONE;
}

void
mq_broker_close(struct mq_broker *b)
{
	int i;

	/* Each RPC bounded (RPC_SECS): a broker gone silent ends it. */
	if (b->conn != NULL) {
		if (b->ch == 0 || amqp_channel_close(b->conn, b->ch,
		    AMQP_REPLY_SUCCESS).reply_type == AMQP_RESPONSE_NORMAL)
			amqp_connection_close(b->conn, AMQP_REPLY_SUCCESS);
		amqp_destroy_connection(b->conn);
		b->conn = NULL;
		b->ch = 0;
	}
	for (i = 0; i < b->n; i++) {
		free(b->node[i].uri);
		b->node[i].uri = NULL;
	}
	free(b->out);
	b->out = NULL;
	b->outlen = b->outoff = b->outcap = 0;
	b->holding = MQ_HOLD_NONE;
}

int
mq_broker_count(struct mq_broker *b, uint32_t *count)
{
	amqp_queue_declare_ok_t *ok;
	amqp_rpc_reply_t r;

	if (mq_broker_new_channel(b) == -1)
		return -1;
	ok = amqp_queue_declare(b->conn, b->ch, amqp_cstring_bytes(b->queue),
	    1, 0, 0, 0, amqp_empty_table);
	r = amqp_get_rpc_reply(b->conn);
	if (r.reply_type != AMQP_RESPONSE_NORMAL || ok == NULL) {
		if (channel_code(r) != 0) {
			warnx("%s: queue %s: %s", mq_broker_where(b),
			    b->queue, mq_broker_error(r));
			mq_broker_channel_closed(b);
		} else
			mq_broker_drop(b, mq_broker_error(r));
		return -1;
	}
	*count = ok->message_count;
	return 0;
}

void
mq_broker_moved(struct mq_broker *b)
{
	b->backoff_ms = BACKOFF_MIN_MS;
}

int
mq_broker_confirms(struct mq_broker *b)
{
	amqp_rpc_reply_t r;

	if (b->confirming)
		return 0;
	amqp_confirm_select(b->conn, b->ch);
	r = amqp_get_rpc_reply(b->conn);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		if (channel_code(r) != 0)
			mq_broker_channel_closed(b);
		else
			mq_broker_drop(b, mq_broker_error(r));
		return -1;
	}
	b->confirming = 1;
	return 0;
}

static unsigned char *
put16(unsigned char *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
	return p + 2;
}

static unsigned char *
put32(unsigned char *p, uint32_t v)
{
	return put16(put16(p, v >> 16), v & 0xffff);
}

static unsigned char *
put64(unsigned char *p, uint64_t v)
{
	return put32(put32(p, v >> 32), v & 0xffffffff);
}

/* Room for a frame of up to len bytes of payload at the buffer's end. */
static unsigned char *
room(struct mq_broker *b, size_t len)
{
	size_t need = b->outlen + len + 8;

	if (need > b->outcap) {
		b->outcap = b->outcap == 0 ? 65536 : b->outcap;
		while (b->outcap < need)
			b->outcap *= 2;
		b->out = xreallocarray(b->out, b->outcap, 1);
	}
	return b->out + b->outlen;
}

/*
 * Ends the frame of type begun at the buffer's end, its payload len
 * bytes (written after its 7-byte header): header, payload, frame-end.
 */
static void
frame(struct mq_broker *b, int type, size_t len)
{
	unsigned char *f = b->out + b->outlen;

	f[0] = type;
	put32(put16(f + 1, b->ch), len);
	f[7 + len] = AMQP_FRAME_END;
	b->outlen += 7 + len + 1;
}

/*
 * The frames of one basic.publish, as rabbitmq-c's amqp_basic_publish
 * sends them (method, content header, body in frames of at most
 * frame_max), into b->out: an AMQP_STATUS_*.
 */
static int
frame_publish(struct mq_broker *b, amqp_bytes_t exchange, amqp_bytes_t key,
    int mandatory, const amqp_basic_properties_t *props, amqp_bytes_t body)
{
	size_t max = (size_t)amqp_get_frame_max(b->conn) - 8, off, n;
	amqp_basic_publish_t m;
	amqp_bytes_t enc;
	unsigned char *p;
	int r;

	memset(&m, 0, sizeof(m));
	m.exchange = exchange;
	m.routing_key = key;
	m.mandatory = mandatory != 0;
	p = room(b, max);
	enc.bytes = put32(p + 7, AMQP_BASIC_PUBLISH_METHOD);
	enc.len = max - 4;
	if ((r = amqp_encode_method(AMQP_BASIC_PUBLISH_METHOD, &m, enc)) < 0)
		return r;
	frame(b, AMQP_FRAME_METHOD, (size_t)r + 4);
	p = room(b, max);
	enc.bytes = put64(put16(put16(p + 7, AMQP_BASIC_CLASS), 0), body.len);
	enc.len = max - 12;
	if ((r = amqp_encode_properties(AMQP_BASIC_CLASS, (void *)props,
	    enc)) < 0)
		return r;
	frame(b, AMQP_FRAME_HEADER, (size_t)r + 12);
	for (off = 0; off < body.len; off += n) {
		n = body.len - off < max ? body.len - off : max;
		p = room(b, n);
		memcpy(p + 7, (const char *)body.bytes + off, n);
		frame(b, AMQP_FRAME_BODY, n);
	}
	return AMQP_STATUS_OK;
}

int
mq_broker_publish(struct mq_broker *b, amqp_bytes_t exchange,
    amqp_bytes_t key, int mandatory, const amqp_basic_properties_t *props,
    amqp_bytes_t body)
{
	size_t mark = b->outlen;
	int r;

	if (b->holding != MQ_HOLD_FRAME)
		return amqp_basic_publish(b->conn, b->ch, exchange, key,
		    mandatory, 0, props, body);
	/* One that cannot be framed leaves nothing of it behind. */
	if ((r = frame_publish(b, exchange, key, mandatory, props, body)) !=
	    AMQP_STATUS_OK)
		b->outlen = mark;
	return r;
}

/*
 * Writes what the batch framed, at once.  Like rabbitmq-c's own sends it
 * waits without a limit of its own for a socket that takes nothing: the
 * caller bounds it (push's watchdog shuts the socket down, which ends
 * the write).  A signal (the watchdog's tick, SIGTERM) only interrupts a
 * wait.  Heartbeats: rabbitmq-c does not see these writes (its next
 * heartbeat is due from its own last send, conn->next_send_heartbeat), so
 * it sends its heartbeats as often as without them, never later; while
 * the write lasts the broker reads our frames, which count as traffic.
 * SIGPIPE is ignored by mq-relay: a closed peer is EPIPE here.
 */
int
mq_broker_flush(struct mq_broker *b, const char **why)
{
	static char buf[128];
	struct pollfd pfd;
	ssize_t w;
	int fd;

	if (b->outlen == 0)
		return 0;
	if (b->conn == NULL || (fd = amqp_get_sockfd(b->conn)) == -1) {
		b->outlen = b->outoff = 0;
		*why = "no socket";
		return -1;
	}
	while (b->outoff < b->outlen) {
		if (b->cut) {
			*why = "cut";
			return -2;
		}
		if ((w = write(fd, b->out + b->outoff, b->outlen -
		    b->outoff)) >= 0) {
			if (w > 0)
				b->moved++;
			b->outoff += (size_t)w;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			goto fail;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, -1) == -1 && errno != EINTR)
			goto fail;
	}
	b->outlen = b->outoff = 0;
	if (b->outcap > OUT_KEEP) {
		free(b->out);
		b->out = NULL;
		b->outcap = 0;
	}
	return 0;
fail:
	/* Never written again in part: the connection is to be dropped. */
	b->outlen = b->outoff = 0;
	snprintf(buf, sizeof(buf), "%s", strerror(errno));
	buf[0] = (char)tolower((unsigned char)buf[0]);
	*why = buf;
	return -1;
}

void
mq_broker_hold(struct mq_broker *b, int on)
{
	int fd, held = b->holding;

	b->holding = MQ_HOLD_NONE;
	if (b->conn == NULL || (fd = amqp_get_sockfd(b->conn)) == -1) {
		b->outlen = b->outoff = 0;
		return;
	}
	if (on) {
		/* TLS: its bytes are rabbitmq-c's to write; corked. */
		if (b->node[b->cur].info.ssl) {
			(void)mq_tcp_hold(fd, 1);
			b->holding = MQ_HOLD_CORK;
		} else
			b->holding = MQ_HOLD_FRAME;
		b->outlen = b->outoff = 0;
		return;
	}
	if (held == MQ_HOLD_CORK)
		(void)mq_tcp_hold(fd, 0);
	/* Publishes framed and never written: the connection is unusable. */
	if (b->outlen > 0)
		mq_broker_drop(b, "publishes framed but not written");
	b->outlen = b->outoff = 0;
}

int
mq_broker_frame(struct mq_broker *b, amqp_frame_t *f, int ms,
    const char **why)
{
	static char buf[300];
	const amqp_connection_close_t *cc;
	amqp_connection_close_ok_t ok;
	struct timeval tv;
	int st;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	mq_log_flush();
	st = amqp_simple_wait_frame_noblock(b->conn, f, &tv);
	if (st == AMQP_STATUS_TIMEOUT)
		return 0;
	if (st != AMQP_STATUS_OK) {
		*why = amqp_error_string2(st);
		return -1;
	}
	b->moved++;
	if (f->frame_type == AMQP_FRAME_METHOD && f->channel == 0 &&
	    f->payload.method.id == AMQP_CONNECTION_BLOCKED_METHOD) {
		if (!b->blocked)
			warnx("%s: blocked by the broker (a resource alarm): "
			    "publishing waits", mq_broker_where(b));
		b->blocked = 1;
	}
	if (f->frame_type == AMQP_FRAME_METHOD && f->channel == 0 &&
	    f->payload.method.id == AMQP_CONNECTION_UNBLOCKED_METHOD) {
		if (b->blocked && b->verbose)
			warnx("%s: unblocked", mq_broker_where(b));
		b->blocked = 0;
	}
	if (f->frame_type == AMQP_FRAME_METHOD &&
	    f->payload.method.id == AMQP_CONNECTION_CLOSE_METHOD) {
		cc = f->payload.method.decoded;
		snprintf(buf, sizeof(buf), "%.*s", (int)cc->reply_text.len,
		    (const char *)cc->reply_text.bytes);
		amqp_send_method(b->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD,
		    &ok);
		*why = buf;
		return -1;
	}
	return 1;
}

/* QUEUE by default: the base name of the spool's real path. */
void
mq_broker_default_queue(struct mq_broker *b, struct mq_spool *sp)
{
	const char *q;

	if (b->queue != NULL)
		return;
	if (mq_spool_real(sp) == -1)
		err(MQ_EX_SYS, "%s", sp->path);
	q = strrchr(sp->real, '/');
	q = q != NULL && q[1] != '\0' ? q + 1 : sp->real;
	if (strlen(q) > 255)
		errx(MQ_EX_USAGE, "%s: a queue name is at most 255 bytes: "
		    "use -q", q);
	b->queue = q;
}

/*
 * Counts the ticks without progress (b->moved unchanged): the limit, or
 * STUCK_TICKS when stopping (MQ_GUARD_STOP), is time without progress.
 * A flush (MQ_GUARD_CUT) is cut first (b->cut: it returns, what is left
 * kept, for the caller to read the broker's frames); still there
 * STUCK_TICKS later, its socket is shut down as any other call's.
 */
static void
on_tick(int sig)
{
	struct mq_broker *b = wd_b;
	int fd = wd_fd, saved = errno;

	(void)sig;
	if (fd == -1)
		return;
	if (b->moved != wd_seen) {
		wd_seen = b->moved;
		wd_ticks = 0;
		return;
	}
	wd_ticks++;
	if (wd_soft == 2) {
		if (wd_ticks < STUCK_TICKS)
			return;
	} else if (wd_ticks < wd_limit &&
	    !(wd_stopping && *b->stop && wd_ticks >= STUCK_TICKS))
		return;
	if (wd_soft == 1) {
		b->cut = 1;
		wd_soft = 2;
		wd_ticks = 0;
	} else {
		wd_fired = 1;
		wd_fd = -1;
		shutdown(fd, SHUT_RDWR);
	}
	errno = saved;
}

void
mq_broker_guard(struct mq_broker *b, uint64_t ms, int how)
{
	static int installed;
	struct sigaction sa;
	struct itimerval it;

	if (!installed) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_tick;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGALRM, &sa, NULL);
		installed = 1;
	}
	wd_fired = 0;
	wd_ticks = 0;
	wd_stopping = (how & MQ_GUARD_STOP) != 0;
	wd_soft = (how & MQ_GUARD_CUT) != 0;
	b->cut = 0;
	wd_b = b;
	wd_seen = b->moved;
	wd_limit = (sig_atomic_t)(ms / TICK_MS + 1);
	wd_fd = amqp_get_sockfd(b->conn);
	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = it.it_interval.tv_usec = TICK_MS * 1000;
	setitimer(ITIMER_REAL, &it, NULL);
}

int
mq_broker_unguard(struct mq_broker *b)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	wd_fd = -1;
	wd_soft = 0;
	b->cut = 0;
	return wd_fired;
}
