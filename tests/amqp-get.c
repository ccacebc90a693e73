/*
 * amqp-get PORT QUEUE: takes one message from QUEUE on 127.0.0.1:PORT
 * (guest, basic.get with no_ack) and prints its message-id, delivery
 * mode, each header as "NAME=VALUE" and, last, its body.  Exit 1: the
 * queue is empty; 2: an error.
 * amqp-get PORT QUEUE classic|reject: declares QUEUE a durable classic
 * queue instead; reject: one that nacks every publish (x-max-length 0,
 * x-overflow reject-publish); rejectN: one that nacks a publish while it
 * holds N messages (x-max-length N).  For tests/relay.bats.  Every call
 * to the broker gives up after 10 s (exit 2).
 */
#include <sys/time.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <amqp.h>
#include <amqp_tcp_socket.h>

int
main(int argc, char *argv[])
{
	amqp_connection_state_t c = amqp_new_connection();
	amqp_socket_t *s = amqp_tcp_socket_new(c);
	amqp_rpc_reply_t r;
	amqp_message_t m;
	amqp_field_value_t *v;
	amqp_table_entry_t e[2];
	amqp_table_t args = { 0, e };
	struct timeval tv = { 10, 0 };
	int i;

	/* No call waits for ever on a broker that stopped answering. */
	if (argc < 3 || argc > 4 || amqp_set_rpc_timeout(c, &tv) != 0 ||
	    amqp_set_handshake_timeout(c, &tv) != 0 ||
	    amqp_socket_open_noblock(s, "127.0.0.1", atoi(argv[1]), &tv) != 0 ||
	    amqp_login(c, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest",
	    "guest").reply_type != AMQP_RESPONSE_NORMAL ||
	    amqp_channel_open(c, 1) == NULL)
		return 2;
	if (argc == 4) {
		if (strncmp(argv[3], "reject", 6) == 0) {
			e[0].key = amqp_cstring_bytes("x-max-length");
			e[0].value.kind = AMQP_FIELD_KIND_I32;
			e[0].value.value.i32 = atoi(argv[3] + 6);
			e[1].key = amqp_cstring_bytes("x-overflow");
			e[1].value.kind = AMQP_FIELD_KIND_UTF8;
			e[1].value.value.bytes =
			    amqp_cstring_bytes("reject-publish");
			args.num_entries = 2;
		}
		amqp_queue_declare(c, 1, amqp_cstring_bytes(argv[2]), 0, 1, 0,
		    0, args);
		i = amqp_get_rpc_reply(c).reply_type == AMQP_RESPONSE_NORMAL;
		amqp_connection_close(c, AMQP_REPLY_SUCCESS);
		amqp_destroy_connection(c);
		return i ? 0 : 2;
	}
	r = amqp_basic_get(c, 1, amqp_cstring_bytes(argv[2]), 1);
	if (r.reply_type != AMQP_RESPONSE_NORMAL)
		return 2;
	if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) {
		amqp_destroy_connection(c);
		return 1;
	}
	if (amqp_read_message(c, 1, &m, 0).reply_type != AMQP_RESPONSE_NORMAL)
		return 2;
	if (m.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
		printf("message-id=%.*s\n", (int)m.properties.message_id.len,
		    (char *)m.properties.message_id.bytes);
	if (m.properties._flags & AMQP_BASIC_DELIVERY_MODE_FLAG)
		printf("delivery-mode=%u\n", m.properties.delivery_mode);
	for (i = 0; (m.properties._flags & AMQP_BASIC_HEADERS_FLAG) &&
	    i < m.properties.headers.num_entries; i++) {
		v = &m.properties.headers.entries[i].value;
		printf("%.*s=", (int)m.properties.headers.entries[i].key.len,
		    (char *)m.properties.headers.entries[i].key.bytes);
		if (v->kind == AMQP_FIELD_KIND_I32)
			printf("i32:%" PRId32 "\n", v->value.i32);
		else if (v->kind == AMQP_FIELD_KIND_I64)
			printf("i64:%" PRId64 "\n", v->value.i64);
		else if (v->kind == AMQP_FIELD_KIND_UTF8 ||
		    v->kind == AMQP_FIELD_KIND_BYTES)
			printf("str:%.*s\n", (int)v->value.bytes.len,
			    (char *)v->value.bytes.bytes);
		else
			printf("kind:%c\n", v->kind);
	}
	printf("body=%.*s\n", (int)m.body.len, (char *)m.body.bytes);
	amqp_destroy_message(&m);
	amqp_connection_close(c, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(c);
	return 0;
}
