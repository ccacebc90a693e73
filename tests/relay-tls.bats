# mq-relay over TLS (amqps://) to a private RabbitMQ node whose certificate
# is signed by a CA of the test's own (relay_certs).
load helper
load relay

setup_file() {
	relay_certs "$BATS_FILE_TMPDIR/certs" || return 1
	RELAY_TLS="$BATS_FILE_TMPDIR/certs" relay_node
}

teardown_file() {
	relay_teardown
}

setup() {
	A="$BATS_TEST_TMPDIR/a"
	B="$BATS_TEST_TMPDIR/b"
	Q="tls$BATS_TEST_NUMBER"
	TLS="amqps://guest:guest@localhost:$((RELAY_PORT1 + 1))"
	CA="$BATS_FILE_TMPDIR/certs/ca.pem"
	: >"$BATS_TEST_TMPDIR/sent"
	unset MQ_RELAY_URI MQ_RELAY_CACERT MQ_RELAY_CERT MQ_RELAY_KEY
}

@test "mq-relay over amqps:// with MQ_RELAY_CACERT: push then pull, every message arrives" {
	relay_send 50 "$A"
	MQ_RELAY_CACERT=$CA run -0 --separate-stderr timeout -k 5 60 mq-relay push -1 -v -d "$A" -q "$Q" "$TLS"
	[[ $stderr == *"connected to localhost:$((RELAY_PORT1 + 1))"* ]] || fail "$stderr"
	[[ $stderr != *guest@* && $stderr != *:guest* ]] || fail "a password: $stderr"
	assert_equal "$(messages "$A")" 0
	assert_equal "$(queue_count "$RELAY_DIR1" "$Q")" 50
	MQ_RELAY_CACERT=$CA run -0 timeout -k 5 60 mq-relay pull -1 -d "$B" -q "$Q" "$TLS"
	relay_compare "$B" "over TLS"
	assert_equal "$lost" 0
	assert_equal "$dups" 0
	assert_equal "$wrong" 0
}

@test "mq-relay over amqps:// given another CA: -1 exits 4 naming localhost:PORT, claims nothing, moves nothing" {
	relay_send 5 "$A"
	before=$(find "$A/new" -type f | sort)
	# A CA of the test's own that did not sign the server's certificate.
	export MQ_RELAY_CACERT="$BATS_FILE_TMPDIR/certs/otherca.pem"
	run -4 --separate-stderr timeout -k 5 60 mq-relay push -1 -d "$A" -q "$Q" "$TLS"
	[[ $stderr == *"localhost:$((RELAY_PORT1 + 1)): SSL peer cert verification failed"* ]] || fail "$stderr"
	[[ $stderr != *guest@* && $stderr != *:guest* ]] || fail "a password: $stderr"
	assert_equal "$output" ""
	# Nothing claimed: the same files, attempts unchanged, cur/ empty.
	assert_equal "$(find "$A/new" -type f | sort)" "$before"
	assert_equal "$(find "$A/cur" -type f | wc -l | tr -d ' ')" 0
	run -4 --separate-stderr timeout -k 5 60 mq-relay pull -1 -d "$B" -q "$Q" "$TLS"
	[[ $stderr == *"localhost:$((RELAY_PORT1 + 1)): SSL peer cert verification failed"* ]] || fail "$stderr"
	assert_equal "$(messages "$B")" 0
	# Without MQ_RELAY_CACERT (the system's CAs): refused too.
	unset MQ_RELAY_CACERT
	run -4 --separate-stderr timeout -k 5 60 mq-relay push -1 -d "$A" -q "$Q" "$TLS"
	[[ $stderr == *"localhost:$((RELAY_PORT1 + 1)): "* ]] || fail "$stderr"
	assert_equal "$(find "$A/new" -type f | sort)" "$before"
	# The plain port of the same node works: the failure was the
	# certificate's.
	run -0 timeout -k 5 60 mq-relay push -1 -d "$A" -q "$Q" "$RELAY_URI"
	assert_equal "$(queue_count "$RELAY_DIR1" "$Q")" 5
}

@test "mq-relay over amqps:// to an address the certificate does not name: -1 exits 4, the hostname does not match" {
	relay_send 5 "$A"
	before=$(find "$A/new" -type f | sort)
	# The right CA, but the certificate names localhost, not 127.0.0.1.
	MQ_RELAY_CACERT=$CA run -4 --separate-stderr timeout -k 5 60 mq-relay push -1 -d "$A" -q "$Q" \
	    "amqps://guest:guest@127.0.0.1:$((RELAY_PORT1 + 1))"
	[[ $stderr == *"127.0.0.1:$((RELAY_PORT1 + 1)): SSL hostname verification failed"* ]] || fail "$stderr"
	assert_equal "$output" ""
	assert_equal "$(find "$A/new" -type f | sort)" "$before"
	assert_equal "$(find "$A/cur" -type f | wc -l | tr -d ' ')" 0
}

@test "tests/rabbit start: a node that cannot start (its port taken) fails, prints its own log, leaves nothing running" {
	local d="$BATS_TEST_TMPDIR/other"
	run -1 --separate-stderr rabbit start "$d" "rx_$$" "$RELAY_PORT1"
	[[ $stderr == *"did not start; its logs:"* ]] || fail "$stderr"
	[[ $stderr == *"$d/"*".log"* ]] || fail "$stderr"
	assert_equal "$output" ""
	run -1 rabbit pid "$d"
	run -1 running "rx_$$@localhost"
	epmd=$(sed -n 's/^EPMD_PORT=//p' "$d/shared")
	assert_equal "$(listening "$epmd")" ""
	# The node that holds the port runs on.
	run -0 rabbit pid "$RELAY_DIR1"
}

# running NAME@HOST: a process runs as node NAME (RabbitMQ reads the name
# from its environment: it is in no command line).
running() {
	grep -lzx "RABBITMQ_NODENAME=$1" /proc/[0-9]*/environ 2>/dev/null | grep -q .
}

@test "tests/rabbit stop: nothing of the node is left running, its epmd neither" {
	local name epmd
	name="$(cat "$RELAY_DIR1/nodename")@localhost"
	epmd=$(sed -n 's/.*ERL_EPMD_PORT=\([0-9]*\).*/\1/p' "$RELAY_DIR1/env")
	run -0 rabbit pid "$RELAY_DIR1"
	running "$name"
	assert_equal "$(listening "$epmd")" "$epmd"
	run -0 rabbit stop "$RELAY_DIR1"
	run -1 rabbit pid "$RELAY_DIR1"
	run -1 pgrep -f -- "-home $RELAY_DIR1( |$)"
	run -1 running "$name"
	assert_equal "$(listening "$epmd" "$RELAY_PORT1" $((RELAY_PORT1 + 1)))" ""
}
