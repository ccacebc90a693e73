/*
 * amqp-put: a test's publisher (tests/relay-pull.bats), as another host's
 * mq-relay push would publish, or any other publisher: one message (or
 * -c N numbered ones) on the default exchange to QUEUE, persistent, with
 * publisher confirms; the body is standard input.
 *
 *	amqp-put [-u URI] [-q QUEUE] [-i ID] [-p PRIO] [-g GROUP] [-k KEY]
 *	    [-a ATTEMPTS] [-s SENT_MS] [-t TTL_MS] [-K KIND] [-c N]
 *	amqp-put -R [-u URI] [-q QUEUE]
 *	amqp-put -C [-u URI] [-q QUEUE]
 *
 * -K: the AMQP integer kind of the numeric headers (i8 u8 i16 u16 i32 u32
 * i64 u64; default: i32 for priority and attempts, i64 for sent and ttl,
 * as push sends them).  -R: takes one delivery without acking it and
 * drops the connection, so that the broker redelivers it (redelivered).
 * -C: prints the queue's ready messages (a passive queue.declare).
 * The queue is declared (quorum) when missing.  Exit 0: confirmed.
 */
#include <sys/time.h>

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static amqp_connection_state_t conn;

static void
check(amqp_rpc_reply_t r, const char *what)
{
	if (r.reply_type != AMQP_RESPONSE_NORMAL)
		errx(4, "%s failed (%d)", what, (int)r.reply_type);
}

static void
number(amqp_table_entry_t *e, const char *name, const char *kind,
    const char *def, const char *value)
{
	long long v = strtoll(value, NULL, 10);

	e->key = amqp_cstring_bytes(name);
	if (kind == NULL)
		kind = def;
	if (strcmp(kind, "i8") == 0)
		e->value.kind = AMQP_FIELD_KIND_I8, e->value.value.i8 = v;
	else if (strcmp(kind, "u8") == 0)
		e->value.kind = AMQP_FIELD_KIND_U8, e->value.value.u8 = v;
	else if (strcmp(kind, "i16") == 0)
		e->value.kind = AMQP_FIELD_KIND_I16, e->value.value.i16 = v;
	else if (strcmp(kind, "u16") == 0)
		e->value.kind = AMQP_FIELD_KIND_U16, e->value.value.u16 = v;
	else if (strcmp(kind, "i32") == 0)
		e->value.kind = AMQP_FIELD_KIND_I32, e->value.value.i32 = v;
	else if (strcmp(kind, "u32") == 0)
		e->value.kind = AMQP_FIELD_KIND_U32, e->value.value.u32 = v;
	else if (strcmp(kind, "i64") == 0)
		e->value.kind = AMQP_FIELD_KIND_I64, e->value.value.i64 = v;
	else if (strcmp(kind, "u64") == 0)
		e->value.kind = AMQP_FIELD_KIND_U64, e->value.value.u64 = v;
	else
		errx(2, "-K %s: no such kind", kind);
}

static void
string(amqp_table_entry_t *e, const char *name, const char *value)
{
	e->key = amqp_cstring_bytes(name);
	e->value.kind = AMQP_FIELD_KIND_UTF8;
	e->value.value.bytes = amqp_cstring_bytes(value);
}

/* The channel to use: 1, or 2 when the queue had to be declared. */
static amqp_channel_t
declare(const char *queue)
{
	amqp_table_entry_t e;
	amqp_table_t t = { 1, &e };

	if (amqp_queue_declare(conn, 1, amqp_cstring_bytes(queue), 1, 0, 0, 0,
	    amqp_empty_table) != NULL)
		return 1;
	amqp_channel_open(conn, 2);
	check(amqp_get_rpc_reply(conn), "channel.open");
	string(&e, "x-queue-type", "quorum");
	amqp_queue_declare(conn, 2, amqp_cstring_bytes(queue), 0, 1, 0, 0, t);
	check(amqp_get_rpc_reply(conn), "queue.declare");
	return 2;
}

static int
confirmed(amqp_channel_t ch)
{
	amqp_frame_t f;
	struct timeval tv = { 20, 0 };

	for (;;) {
		if (amqp_simple_wait_frame_noblock(conn, &f, &tv) !=
		    AMQP_STATUS_OK)
			return 0;
		if (f.channel != ch || f.frame_type != AMQP_FRAME_METHOD)
			continue;
		if (f.payload.method.id == AMQP_BASIC_ACK_METHOD)
			return 1;
		if (f.payload.method.id == AMQP_BASIC_NACK_METHOD ||
		    f.payload.method.id == AMQP_BASIC_RETURN_METHOD ||
		    f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD)
			return 0;
	}
}

int
main(int argc, char *argv[])
{
	struct amqp_connection_info ci;
	amqp_basic_properties_t pr;
	amqp_table_entry_t h[6];
	amqp_socket_t *s;
	amqp_envelope_t env;
	amqp_channel_t ch;
	struct timeval tv = { 20, 0 };
	char uri[1024] = "amqp://localhost", *body = NULL, num[32];
	const char *queue = "q", *id = NULL, *prio = NULL, *group = NULL,
	    *key = NULL, *attempts = NULL, *sent = NULL, *ttl = NULL,
	    *kind = NULL;
	size_t len = 0, cap = 0;
	ssize_t r;
	int c, nh = 0, count = 1, take = 0, ready = 0, i;

	while ((c = getopt(argc, argv, "a:Cc:g:i:k:K:p:q:Rs:t:u:")) != -1)
		switch (c) {
		case 'a': attempts = optarg; break;
		case 'C': ready = 1; break;
		case 'c': count = atoi(optarg); break;
		case 'g': group = optarg; break;
		case 'i': id = optarg; break;
		case 'k': key = optarg; break;
		case 'K': kind = optarg; break;
		case 'p': prio = optarg; break;
		case 'q': queue = optarg; break;
		case 'R': take = 1; break;
		case 's': sent = optarg; break;
		case 't': ttl = optarg; break;
		case 'u':
			if (strlen(optarg) >= sizeof(uri))
				errx(2, "-u: too long");
			strcpy(uri, optarg);
			break;
		default: return 2;
		}
	amqp_default_connection_info(&ci);
	if (amqp_parse_url(uri, &ci) != 0)
		errx(2, "bad URI");
	conn = amqp_new_connection();
	if ((s = amqp_tcp_socket_new(conn)) == NULL ||
	    amqp_socket_open(s, ci.host, ci.port) != 0)
		errx(4, "%s:%d: cannot connect", ci.host, ci.port);
	check(amqp_login(conn, ci.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
	    ci.user, ci.password), "login");
	amqp_channel_open(conn, 1);
	check(amqp_get_rpc_reply(conn), "channel.open");
	if (ready) {
		amqp_queue_declare_ok_t *ok = amqp_queue_declare(conn, 1,
		    amqp_cstring_bytes(queue), 1, 0, 0, 0, amqp_empty_table);

		if (ok == NULL)
			errx(4, "%s: no such queue", queue);
		printf("%u\n", (unsigned)ok->message_count);
		return 0;
	}
	ch = declare(queue);
	if (take) {
		amqp_basic_qos(conn, ch, 0, 1, 0);
		amqp_basic_consume(conn, ch, amqp_cstring_bytes(queue),
		    amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
		check(amqp_get_rpc_reply(conn), "basic.consume");
		check(amqp_consume_message(conn, &env, &tv, 0), "consume");
		printf("%.*s\n", (int)env.message.properties.message_id.len,
		    (char *)env.message.properties.message_id.bytes);
		amqp_destroy_envelope(&env);
		/* No ack, no close: the broker takes it back. */
		return 0;
	}
	for (;;) {
		if (len == cap && (body = realloc(body, cap = cap * 2 + 4096)) ==
		    NULL)
			err(4, NULL);
		if ((r = read(0, body + len, cap - len)) == -1)
			err(4, "stdin");
		if (r == 0)
			break;
		len += r;
	}
	memset(&pr, 0, sizeof(pr));
	pr._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
	pr.delivery_mode = 2;
	if (id != NULL) {
		pr._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
		pr.message_id = amqp_cstring_bytes(id);
	}
	if (prio != NULL)
		number(&h[nh++], "x-mq-priority", kind, "i32", prio);
	if (group != NULL)
		string(&h[nh++], "x-mq-group", group);
	if (key != NULL)
		string(&h[nh++], "x-mq-key", key);
	if (attempts != NULL)
		number(&h[nh++], "x-mq-attempts", kind, "i32", attempts);
	if (sent != NULL)
		number(&h[nh++], "x-mq-sent", kind, "i64", sent);
	if (ttl != NULL)
		number(&h[nh++], "x-mq-ttl", kind, "i64", ttl);
	if (nh > 0) {
		pr._flags |= AMQP_BASIC_HEADERS_FLAG;
		pr.headers.num_entries = nh;
		pr.headers.entries = h;
	}
	amqp_confirm_select(conn, ch);
	check(amqp_get_rpc_reply(conn), "confirm.select");
	for (i = 0; i < count; i++) {
		amqp_bytes_t b = { len, body };

		if (count > 1) {
			snprintf(num, sizeof(num), "%d", i + 1);
			b = amqp_cstring_bytes(num);
		}
		if (amqp_basic_publish(conn, ch, amqp_empty_bytes,
		    amqp_cstring_bytes(queue), 1, 0, &pr, b) != AMQP_STATUS_OK ||
		    !confirmed(ch))
			errx(4, "message %d not confirmed", i + 1);
	}
	amqp_channel_close(conn, ch, AMQP_REPLY_SUCCESS);
	amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(conn);
	free(body);
	return 0;
}
