# mq-test: long (tests/run starts it first)
# mq-relay and a three-node RabbitMQ cluster (formed once, in setup_file):
# kill -9 of the node the relay talks to, during a push and during a
# pull, loses no message.  The figures (messages, kills, lost,
# duplicates, seconds from the kill to the next message moved) are
# printed as tap comments and kept in $RELAY_FIGURES (default: a file of
# the run's temporary directory).
load helper
load relay

N=3000

setup_file() {
	relay_cluster
}

teardown_file() {
	relay_teardown
}

setup() {
	A="$BATS_TEST_TMPDIR/a"
	B="$BATS_TEST_TMPDIR/b"
	Q="cluster$BATS_TEST_NUMBER"
	: >"$BATS_TEST_TMPDIR/sent"
	figures=${RELAY_FIGURES:-$BATS_RUN_TMPDIR/relay-figures}
}

teardown() {
	local p
	for p in ${relays:-}; do
		kill -9 "$p" 2>/dev/null || true
	done
}

# The relay in the background with every node's URI, the first one
# first; its PID in $relay, its stderr (-v) in $BATS_TEST_TMPDIR/DIRECTION.err.
relay_bg() {
	local dir=$1 spool=$2
	shift 2
	# shellcheck disable=SC2086 # one URI a word
	mq-relay "$dir" -v -d "$spool" -q "$Q" "$@" $RELAY_URIS 2>"$BATS_TEST_TMPDIR/$dir.err" 3>&- &
	relay=$!
	relays="${relays:-} $relay"
}

# The node (1, 2 or 3) that the relay of DIRECTION is connected to now:
# the last "connected to" of its -v output.
connected_node() {
	local port i v
	port=$(sed -n 's/.*connected to [^:]*:\([0-9]*\).*/\1/p' "$BATS_TEST_TMPDIR/$1.err" | tail -n 1)
	for i in 1 2 3; do
		v="RELAY_PORT$i"
		[ "${!v}" = "$port" ] && echo "$i" && return 0
	done
	return 1
}

# Kills node $1 (kill -9 of its beam); sets $killed_at.
kill_node() {
	local v="RELAY_DIR$1"
	killed_at=$(date +%s.%N)
	rabbit kill "${!v}"
}

# Starts node $1 again; it rejoins the other two.
restart_node() {
	local i d p peers=
	for i in 1 2 3; do
		[ "$i" -eq "$1" ] || peers="$peers $BATS_FILE_TMPDIR/node$i"
	done
	d="RELAY_DIR$1" p="RELAY_PORT$1"
	# shellcheck disable=SC2086 # one DIR a word
	rabbit start "${!d}" "$(cat "${!d}/nodename")" "${!p}" $peers
	relay_running 3 "${!d}" 120
}

since_kill() {
	awk -v a="$killed_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
}

# The time from the kill to the relay's next message moved through
# another connection, at most 120 s ("none" if none): its -v output
# (DIRECTION.err) past line $2 (where it was at the kill) says "connected
# to" then the first batch that moved something (push: confirmed N > 0;
# pull: added N > 0).
next_move() {
	if relay_until 120 moved_since "$1" "$2"; then
		since_kill
	else
		echo none
	fi
}

moved_since() {
	awk -v from="$2" 'NR > from && /connected to/ { c = 1 }
	    c && /(confirmed|added) [1-9]/ { m = 1 } END { exit !m }' "$BATS_TEST_TMPDIR/$1.err"
}

# Lines of the relay's -v output so far.
said() {
	wc -l <"$BATS_TEST_TMPDIR/$1.err" | tr -d ' '
}

fewer_than() {
	[ "$(messages "$1")" -lt "$2" ]
}

more_than() {
	[ "$(messages "$1")" -gt "$2" ]
}

all_pulled() {
	[ "$(contents "$B" | cut -d ' ' -f 1 | sort -u | wc -l)" -ge "$1" ]
}

# stop_relay: SIGTERM, and the relay exits 0 (within 30 s).
stop_relay() {
	local st=0
	stop_bounded "$relay" 30
	relays=
	assert_equal "$st" 0
}

@test "mq-relay push with three URIs: kill -9 of its node in mid-push, nothing lost" {
	local node left reconnect at
	# The queue is declared well before any kill (a quorum queue's first
	# second is no time for a kill).
	relay_send 1 "$A"
	# shellcheck disable=SC2086
	run -0 timeout -k 5 60 mq-relay push -1 -d "$A" -q "$Q" $RELAY_URIS
	sleep 2
	relay_send "$N" "$A"
	# Small batches: the kill comes after some confirms, before the last.
	relay_bg push "$A" -n 10
	relay_until 120 fewer_than "$A" "$N"
	# The relay held still (kill -STOP) with a batch in flight, its node
	# killed, the relay let go on.
	freeze_claiming "$relay" "$A" 60
	node=$(connected_node push) || fail "the relay said no connection: $(cat "$BATS_TEST_TMPDIR/push.err")"
	at=$(said push)
	kill_node "$node"
	kill -CONT "$relay"
	left=$(messages "$A")
	echo "# node $node killed with $claimed messages claimed" >&3
	[ "$left" -gt 0 ] || fail "the push had ended before the kill"
	[ "$claimed" -gt 0 ] || fail "nothing in flight at the kill"
	reconnect=$(next_move push "$at")
	relay_until 180 fewer_than "$A" 1 || fail "$(messages "$A") messages still in A: $(tail -n 5 "$BATS_TEST_TMPDIR/push.err")"
	stop_relay
	restart_node "$node"
	# Pulled from a node that was never killed.
	run -0 timeout -k 5 300 mq-relay pull -1 -n 65535 -d "$B" -q "$Q" \
	    "amqp://guest:guest@127.0.0.1:$(v=RELAY_PORT$((node % 3 + 1)); echo "${!v}")"
	relay_compare "$B" "cluster push, node $node killed"
	echo "push: messages $((N + 1)), kills 1 (node $node, $left not yet confirmed, $claimed in flight), lost $lost, duplicates $dups, seconds from the kill to the next confirmed message $reconnect" |
	    tee -a "$figures" | sed 's/^/# /' >&3
	assert_equal "$lost" 0
	assert_equal "$wrong" 0
}

@test "mq-relay pull with three URIs: kill -9 of its node in mid-pull, nothing lost" {
	local node got reconnect d at
	relay_send "$N" "$A"
	# shellcheck disable=SC2086
	run -0 timeout -k 5 300 mq-relay push -1 -d "$A" -q "$Q" $RELAY_URIS
	sleep 2
	# Each file it opens slowed down (3 ms an openat) so that the pull is still
	# under way, however loaded the machine, when it is held still (kill
	# -STOP) and its node killed; then it is let go on.
	fault_env 'openat:delay=3ms' relay_bg pull "$B" -n 65535
	relay_until 120 more_than "$B" 0
	kill -STOP "$relay"
	node=$(connected_node pull) || fail "the relay said no connection: $(cat "$BATS_TEST_TMPDIR/pull.err")"
	at=$(said pull)
	kill_node "$node"
	got=$(messages "$B")
	kill -CONT "$relay"
	[ "$got" -lt "$N" ] || fail "the pull had ended before the kill"
	reconnect=$(next_move pull "$at")
	relay_until 180 all_pulled "$N" || fail "$(messages "$B") messages in B: $(tail -n 5 "$BATS_TEST_TMPDIR/pull.err")"
	stop_relay
	relay_compare "$B" "cluster pull, node $node killed"
	echo "pull: messages $N, kills 1 (node $node, $got written before), lost $lost, duplicates $dups, seconds from the kill to the next written message $reconnect" |
	    tee -a "$figures" | sed 's/^/# /' >&3
	restart_node "$node"
	assert_equal "$lost" 0
	assert_equal "$wrong" 0
	d="RELAY_DIR$((node % 3 + 1))"
	assert_equal "$(queue_count "${!d}" "$Q")" 0
}
