/*
 * amqp-confirm: the baseline of mq-relay push's bench row: rabbitmq-c used
 * directly.  Publishes N persistent messages of S bytes to QUEUE on the
 * default exchange, with publisher confirms, in batches of B: publish B,
 * then read frames until each of the B is settled (basic.ack, one or
 * "multiple"; a basic.nack or a basic.return is a failure).  QUEUE is
 * declared as a quorum queue when it does not exist (a passive declare
 * first, as mq-relay does).  Prints the rate, messages per second, from
 * before the connection to the last confirm.
 *
 * Usage: amqp-confirm [-n N] [-s S] [-b B] [-q QUEUE] [URI]
 * (defaults: 10000, 100, 100, "bench", amqp://guest:guest@localhost:5672/).
 * Exit 0 when every message was confirmed, 1 when some failed, 2 usage,
 * 4 connection or broker error.
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *where = "amqp-confirm";

static void
die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "amqp-confirm: %s: ", where);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static void
usage(void)
{
	fprintf(stderr, "usage: amqp-confirm [-n N] [-s SIZE] [-b BATCH] "
	    "[-q QUEUE] [URI]\n");
	exit(2);
}

static unsigned long
number(const char *opt, const char *s, unsigned long min, unsigned long max)
{
	char *end;
	unsigned long v;

	v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "amqp-confirm: %s: not a number from %lu to "
		    "%lu: %s\n", opt, min, max, s);
		exit(2);
	}
	return v;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The reason of a failed RPC, in words. */
static const char *
reason(amqp_rpc_reply_t r)
{
	static char buf[256];

	switch (r.reply_type) {
	case AMQP_RESPONSE_NORMAL:
		return "ok";
	case AMQP_RESPONSE_NONE:
		return "no reply";
	case AMQP_RESPONSE_LIBRARY_EXCEPTION:
		return amqp_error_string2(r.library_error);
	case AMQP_RESPONSE_SERVER_EXCEPTION:
		if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
			amqp_channel_close_t *c = r.reply.decoded;
			snprintf(buf, sizeof buf, "channel closed: %u %.*s",
			    c->reply_code, (int)c->reply_text.len,
			    (char *)c->reply_text.bytes);
			return buf;
		}
		if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
			amqp_connection_close_t *c = r.reply.decoded;
			snprintf(buf, sizeof buf, "connection closed: %u %.*s",
			    c->reply_code, (int)c->reply_text.len,
			    (char *)c->reply_text.bytes);
			return buf;
		}
		snprintf(buf, sizeof buf, "server method 0x%08x",
		    (unsigned)r.reply.id);
		return buf;
	}
	return "?";
}

static void
check(amqp_connection_state_t conn, const char *what)
{
	amqp_rpc_reply_t r = amqp_get_rpc_reply(conn);

	if (r.reply_type != AMQP_RESPONSE_NORMAL)
		die(4, "%s: %s", what, reason(r));
}

/* Declares QUEUE on channel *ch: passive first; a 404 closes the channel,
 * and the queue is declared durable, quorum, on the next channel.  The
 * same steps as mq-relay's (src/relay/broker.c), not its code: that declare
 * works on a struct mq_broker that only mq_broker_connect makes (its
 * channel numbers, its drop of the connection and its messages), and
 * broker.o would link libmq and libbsd, and the sanitizers of a make
 * SANITIZE=1 tree, into a baseline that is rabbitmq-c alone. */
static void
declare(amqp_connection_state_t conn, amqp_channel_t *ch, const char *queue)
{
	amqp_table_entry_t qt;
	amqp_table_t args;
	amqp_rpc_reply_t r;
	amqp_channel_close_t *c;
	amqp_channel_close_ok_t ok = { 0 };

	amqp_queue_declare(conn, *ch, amqp_cstring_bytes(queue), 1, 0, 0, 0,
	    amqp_empty_table);
	r = amqp_get_rpc_reply(conn);
	if (r.reply_type == AMQP_RESPONSE_NORMAL)
		return;
	if (r.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
	    r.reply.id != AMQP_CHANNEL_CLOSE_METHOD)
		die(4, "queue.declare %s: %s", queue, reason(r));
	c = r.reply.decoded;
	if (c->reply_code != AMQP_NOT_FOUND)
		die(4, "queue.declare %s: %s", queue, reason(r));
	if (amqp_send_method(conn, *ch, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) !=
	    AMQP_STATUS_OK)
		die(4, "channel.close-ok: failed");
	(*ch)++;
	amqp_channel_open(conn, *ch);
	check(conn, "channel.open");
	qt.key = amqp_cstring_bytes("x-queue-type");
	qt.value.kind = AMQP_FIELD_KIND_UTF8;
	qt.value.value.bytes = amqp_cstring_bytes("quorum");
	args.num_entries = 1;
	args.entries = &qt;
	amqp_queue_declare(conn, *ch, amqp_cstring_bytes(queue), 0, 1, 0, 0,
	    args);
	check(conn, "queue.declare");
}

/* Reads and drops the content (header and body frames) of a
 * basic.return. */
static void
skip_content(amqp_connection_state_t conn, amqp_channel_t ch)
{
	amqp_frame_t f;
	uint64_t size, got = 0;

	if (amqp_simple_wait_frame(conn, &f) != AMQP_STATUS_OK ||
	    f.frame_type != AMQP_FRAME_HEADER || f.channel != ch)
		die(4, "basic.return: no content header");
	size = f.payload.properties.body_size;
	while (got < size) {
		if (amqp_simple_wait_frame(conn, &f) != AMQP_STATUS_OK ||
		    f.frame_type != AMQP_FRAME_BODY || f.channel != ch)
			die(4, "basic.return: short content");
		got += f.payload.body_fragment.len;
	}
}

/* Marks [from, to] settled in the batch that starts at tag first;
 * returns how many were newly settled. */
static size_t
settle(unsigned char *done, uint64_t first, uint64_t last, uint64_t from,
    uint64_t to, unsigned char how, size_t *failed)
{
	size_t n = 0;
	uint64_t t;

	if (from < first)
		from = first;
	if (to > last)
		to = last;
	for (t = from; t <= to; t++) {
		if (done[t - first] == 0) {
			done[t - first] = how;
			n++;
			if (how == 2)
				(*failed)++;
		}
	}
	return n;
}

int
main(int argc, char *argv[])
{
	unsigned long n = 10000, size = 100, batch = 100;
	const char *queue = "bench";
	char *url, *body;
	struct amqp_connection_info ci;
	amqp_connection_state_t conn;
	amqp_socket_t *sock;
	amqp_channel_t ch = 1;
	amqp_basic_properties_t props;
	amqp_rpc_reply_t r;
	unsigned char *done;
	uint64_t tag = 0;
	size_t sent = 0, failed = 0, returned = 0;
	char id[32], hostport[300];
	double t0, t1;
	int c;

	while ((c = getopt(argc, argv, "n:s:b:q:")) != -1) {
		switch (c) {
		case 'n':
			n = number("-n", optarg, 1, 100000000);
			break;
		case 's':
			size = number("-s", optarg, 0, 64 << 20);
			break;
		case 'b':
			batch = number("-b", optarg, 1, 65535);
			break;
		case 'q':
			queue = optarg;
			if (*queue == '\0' || strlen(queue) > 255)
				usage();
			break;
		default:
			usage();
		}
	}
	if (argc - optind > 1)
		usage();
	url = strdup(argc > optind ? argv[optind] : "amqp://localhost");
	if (url == NULL)
		die(4, "out of memory");
	amqp_default_connection_info(&ci);
	if (amqp_parse_url(url, &ci) != AMQP_STATUS_OK) {
		fprintf(stderr, "amqp-confirm: not an AMQP URI\n");
		exit(2);
	}
	if (ci.ssl) {
		fprintf(stderr, "amqp-confirm: amqps is not supported\n");
		exit(2);
	}
	snprintf(hostport, sizeof hostport, "%s:%d", ci.host, ci.port);
	where = hostport;
	body = malloc(size ? size : 1);
	done = calloc(batch, 1);
	if (body == NULL || done == NULL)
		die(4, "out of memory");
	memset(body, 'x', size);

	t0 = now();
	conn = amqp_new_connection();
	sock = amqp_tcp_socket_new(conn);
	if (sock == NULL)
		die(4, "socket: out of memory");
	c = amqp_socket_open(sock, ci.host, ci.port);
	if (c != AMQP_STATUS_OK)
		die(4, "%s", amqp_error_string2(c));
	r = amqp_login(conn, ci.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
	    ci.user, ci.password);
	if (r.reply_type != AMQP_RESPONSE_NORMAL)
		die(4, "login: %s", reason(r));
	amqp_channel_open(conn, ch);
	check(conn, "channel.open");
	declare(conn, &ch, queue);
	amqp_confirm_select(conn, ch);
	check(conn, "confirm.select");

	memset(&props, 0, sizeof props);
	props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG |
	    AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG;
	props.delivery_mode = 2;
	while (sent < n) {
		size_t k = n - sent < batch ? n - sent : batch, left = k, i;
		uint64_t first = tag + 1, last = tag + k;

		memset(done, 0, k);
		for (i = 0; i < k; i++) {
			/* An ID as long as an mq ID, unique in the run. */
			snprintf(id, sizeof id, "%013ju%07zu",
			    (uintmax_t)time(NULL) * 1000, sent + i);
			props.message_id = amqp_cstring_bytes(id);
			props.timestamp = (uint64_t)time(NULL);
			c = amqp_basic_publish(conn, ch, amqp_empty_bytes,
			    amqp_cstring_bytes(queue), 1, 0, &props,
			    (amqp_bytes_t){ size, body });
			if (c != AMQP_STATUS_OK)
				die(4, "basic.publish: %s",
				    amqp_error_string2(c));
		}
		tag = last;
		while (left > 0) {
			amqp_frame_t f;
			struct timeval tv = { 30, 0 };

			c = amqp_simple_wait_frame_noblock(conn, &f, &tv);
			if (c == AMQP_STATUS_TIMEOUT)
				die(4, "no confirm for 30 s (%zu of %zu "
				    "unsettled)", left, k);
			if (c != AMQP_STATUS_OK)
				die(4, "%s", amqp_error_string2(c));
			if (f.frame_type != AMQP_FRAME_METHOD)
				continue;
			switch (f.payload.method.id) {
			case AMQP_BASIC_ACK_METHOD: {
				amqp_basic_ack_t *a = f.payload.method.decoded;
				left -= settle(done, first, last,
				    a->multiple ? first : a->delivery_tag,
				    a->delivery_tag, 1, &failed);
				break;
			}
			case AMQP_BASIC_NACK_METHOD: {
				amqp_basic_nack_t *a = f.payload.method.decoded;
				left -= settle(done, first, last,
				    a->multiple ? first : a->delivery_tag,
				    a->delivery_tag, 2, &failed);
				break;
			}
			case AMQP_BASIC_RETURN_METHOD:
				/* Unroutable: the ack that follows does not
				 * make it delivered. */
				returned++;
				skip_content(conn, f.channel);
				break;
			case AMQP_CHANNEL_CLOSE_METHOD:
			case AMQP_CONNECTION_CLOSE_METHOD:
				die(4, "closed by the broker (%zu of %zu "
				    "unsettled)", left, k);
			default:
				break;
			}
		}
		sent += k;
	}
	t1 = now();
	amqp_channel_close(conn, ch, AMQP_REPLY_SUCCESS);
	amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(conn);
	failed += returned;
	if (failed > 0)
		fprintf(stderr, "amqp-confirm: %s: %zu of %lu not confirmed "
		    "(%zu nacked, %zu returned)\n", where, failed, n,
		    failed - returned, returned);
	printf("%.0f\n", (double)n / (t1 - t0));
	free(body);
	free(done);
	free(url);
	return failed > 0;
}
