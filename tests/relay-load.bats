# mq-test: long (tests/run starts it first)
# mq-relay under load, on one private RabbitMQ node: every message
# arrives, even when the relay is killed (kill -9) in the middle.
load helper
load relay

setup_file() {
	relay_node
}

teardown_file() {
	relay_teardown
}

setup() {
	A="$BATS_TEST_TMPDIR/a"
	B="$BATS_TEST_TMPDIR/b"
	Q="load$BATS_TEST_NUMBER"
	: >"$BATS_TEST_TMPDIR/sent"
}

teardown() {
	local p
	for p in ${relays:-}; do
		kill -9 "$p" 2>/dev/null || true
	done
}

# The relay's claims must lapse soon after a kill -9 (5 s, instead of 30).
short_lease() {
	mq-conf -d "$1" lease=5
}

push() {
	timeout -k 5 300 mq-relay push "$@" -d "$A" -q "$Q" "$RELAY_URI"
}

pull() {
	timeout -k 5 300 mq-relay pull "$@" -d "$B" -q "$Q" "$RELAY_URI"
}

# The relay in the background, its PID (the relay's own: it is what the
# test kills) added to $relays; teardown kills what is left.
relay_bg() {
	mq-relay "$1" -d "$2" -q "$Q" "${@:3}" "$RELAY_URI" 2>>"$BATS_TEST_TMPDIR/$1.err" 3>&- &
	relays="${relays:-} $!"
}

# Pushes again until A is empty (claims of a killed relay lapse first).
push_rest() {
	local end=$((SECONDS + 60)) st
	while [ "$(messages "$A")" -gt 0 ] && [ $SECONDS -lt $end ]; do
		st=0
		push -1 || st=$?
		[ $st -le 1 ] || return $st
		[ "$(messages "$A")" -eq 0 ] || sleep 1
	done
	[ "$(messages "$A")" -eq 0 ]
}

fewer_than() {
	[ "$(messages "$1")" -lt "$2" ]
}

more_than() {
	[ "$(messages "$1")" -gt "$2" ]
}

@test "mq-relay: push of 10,000 messages, then pull of them into another spool: every ID arrives once, with its body" {
	relay_send 10000 "$A"
	run -0 push -1
	assert_equal "$(messages "$A")" 0
	assert_equal "$(queue_count "$RELAY_DIR1" "$Q")" 10000
	run -0 pull -1 -n 65535
	relay_compare "$B" "push then pull"
	assert_equal "$lost" 0
	assert_equal "$wrong" 0
	assert_equal "$dups" 0
	assert_equal "$(queue_count "$RELAY_DIR1" "$Q")" 0
	# Nothing more to move: -1 says so.
	run -1 pull -1 -n 65535
}

@test "mq-relay push: kill -9 in mid-push, restarted with -1: nothing lost" {
	relay_send 5000 "$A"
	short_lease "$A"
	# Small batches: the kill comes after some confirms, before the last.
	relay_bg push "$A" -n 5
	relay_until 120 fewer_than "$A" 5000
	# Killed with a batch in flight (claimed, not yet confirmed).
	freeze_claiming "${relays# }" "$A" 60
	kill -9 "${relays# }"
	wait "${relays# }" || true
	relays=
	left=$(messages "$A")
	echo "# killed with $left of 5000 not yet confirmed, $claimed of them claimed" >&3
	[ "$left" -gt 0 ] || fail "the push had ended before the kill"
	[ "$claimed" -gt 0 ] || fail "nothing in flight at the kill"
	push_rest
	run -0 pull -1 -n 65535
	relay_compare "$B" "push killed once"
	assert_equal "$lost" 0
	assert_equal "$wrong" 0
}

@test "mq-relay pull: kill -9 in mid-pull, restarted with -1: nothing lost, nothing added twice" {
	relay_send 5000 "$A"
	run -0 push -1
	relay_bg pull "$B" -n 65535
	relay_until 120 more_than "$B" 0
	kill -9 "${relays# }"
	wait "${relays# }" || true
	relays=
	got=$(messages "$B")
	echo "# killed with $got of 5000 written" >&3
	[ "$got" -lt 5000 ] || fail "the pull had ended before the kill"
	run -0 pull -1 -n 65535
	relay_compare "$B" "pull killed once"
	assert_equal "$lost" 0
	assert_equal "$wrong" 0
	# What was written but not acked comes again, flagged redelivered,
	# and is found in the spool.
	assert_equal "$dups" 0
	assert_equal "$(queue_count "$RELAY_DIR1" "$Q")" 0
}

@test "mq-relay: end to end, mq-send on A, push, broker, pull, mq-recv -- CMD on B: every message processed" {
	local done="$BATS_TEST_TMPDIR/done" end st
	relay_send 500 "$A"
	relay_bg push "$A"
	relay_bg pull "$B"
	# Sent while the relays run: push wakes up for them.
	sleep 1
	relay_send 500 "$A"
	: >"$done"
	end=$((SECONDS + 180))
	while [ "$(sort -u "$done" | wc -l)" -lt 1000 ] && [ $SECONDS -lt $end ]; do
		st=0
		timeout -k 5 60 mq-recv -w 1 -d "$B" -- sh -c 'echo "$MQ_ID" >>"$1"' _ "$done" || st=$?
		[ $st -le 1 ] || fail "mq-recv exited $st"
	done
	cut -d ' ' -f 1 "$BATS_TEST_TMPDIR/sent" | LC_ALL=C sort >"$BATS_TEST_TMPDIR/want"
	LC_ALL=C sort -u "$done" >"$BATS_TEST_TMPDIR/processed"
	echo "# end to end: messages 1000, processed $(wc -l <"$done" | tr -d ' ') times, $(wc -l <"$BATS_TEST_TMPDIR/processed" | tr -d ' ') of them" >&3
	run diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/processed"
	assert_success
	# SIGTERM: both finish what they hold and exit 0 (within 30 s each).
	for p in $relays; do
		stop_bounded "$p" 30
		assert_equal "$st" 0
	done
	relays=
	assert_equal "$(messages "$A")" 0
	assert_equal "$(messages "$B")" 0
}

@test "mq-relay: a message pushed then pulled keeps its attempts (0 stays 0; released once by a worker, 1)" {
	export MQ_DIR=$A
	id0=$(echo zero | mq-send)
	id1=$(echo one | mq-send)
	r=$(mq-recv)
	[[ $r == */$id0,* ]] || fail "claimed $r, not $id0"
	mq-ack -r 0 "$r"
	run -0 push -1
	run -0 pull -1
	run -0 find "$B/new" -type f -name "$id0,*"
	[[ $output == */$id0,1 || $output == */$id0,1,* ]] || fail "$output"
	run -0 find "$B/new" -type f -name "$id1,*"
	[[ $output == */$id1,0 || $output == */$id1,0,* ]] || fail "$output"
}
