# mq-test: long (tests/run starts it first)
load helper
load relay

# mq-relay push against one private node (tests/relay.bash); tests/amqp-get
# reads a message back (or declares a queue of its own).

setup_file() {
	relay_certs "$BATS_FILE_TMPDIR/certs"
	RELAY_TLS="$BATS_FILE_TMPDIR/certs" relay_node
}

teardown_file() {
	relay_teardown
}

# Whatever a test left: the relays it started in the background (their
# PIDs in $relays), a node it stopped (kill -STOP, its PID in $frozen), a
# disk alarm it raised ($alarm set), a max_message_size it lowered
# ($maxsize set), the peers that are no broker (mute_peer).
teardown() {
	local p
	[ -z "${frozen:-}" ] || kill -CONT "$frozen" 2>/dev/null || true
	[ -z "${alarm:-}" ] || disk_alarm off || true
	[ -z "${maxsize:-}" ] || max_message_size 134217728 || true
	for p in ${relays:-}; do
		kill -9 "$p" 2>/dev/null || true
	done
	mute_stop
}

# amqp_get PORT QUEUE [classic|reject]: tests/amqp-get, bounded.
amqp_get() {
	timeout -k 5 30 "$BATS_TEST_DIRNAME/amqp-get" "$@"
}

# relay ARGS: mq-relay, bounded.
relay() {
	timeout -k 5 60 mq-relay "$@"
}

# stat_of FIELD: that count of mq-stat --json for $MQ_DIR.
stat_of() {
	mq-stat --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

# has_count QUEUE N: within 30 s the broker counts N messages in QUEUE
# (its counts lag a few seconds behind).
has_count() {
	local n
	for _ in $(seq 60); do
		n=$(queue_count "$RELAY_DIR1" "$1")
		[ "$n" = "$2" ] && return 0
		sleep 0.5
	done
	echo "queue $1: ${n:-none}, not $2" >&2
	return 1
}

# until_in FILE TEXT: within 30 s FILE holds TEXT.
until_in() {
	local _
	for _ in $(seq 300); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "$1: no \"$2\" in: $(cat "$1")" >&2
	return 1
}

# stop_relay PID: SIGTERM and its exit status in $st (at most 30 s,
# else the test fails).
stop_relay() {
	stop_bounded "$1" 30
}

# relay_bg ARGS...: mq-relay ARGS in the background (not holding bats'
# fd 3), its stderr in $BATS_TEST_TMPDIR/err, its PID in $pid and added
# to $relays (teardown kills what is left).
relay_bg() {
	mq-relay "$@" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	relays="${relays:-} $pid"
}

# An empty spool at $MQ_DIR (push opens one; it makes none).
make_spool() {
	mq-send </dev/null >/dev/null
	mq-ack "$(mq-recv)"
}

# disk_alarm on|off: raises the node's disk alarm (a free-disk limit no
# disk meets: the broker blocks its publishers) or clears it (the
# default limit), and waits (10 s at most) until the node says so.
disk_alarm() {
	local limit=50000000 want='\[\]' _
	[ "$1" = off ] || { limit=100000000000000; want=disk; }
	rabbit ctl "$RELAY_DIR1" -q set_disk_free_limit "$limit" || return 1
	for _ in $(seq 20); do
		rabbit ctl "$RELAY_DIR1" -q eval 'rabbit_alarm:get_alarms().' |
		    grep -q "$want" && return 0
		sleep 0.5
	done
	echo "disk alarm not $1" >&2
	return 1
}

# max_message_size N: the node's limit on a message's size, for the
# channels opened from now on.
max_message_size() {
	rabbit ctl "$RELAY_DIR1" -q eval "application:set_env(rabbit, max_message_size, $1)." >/dev/null
}

# count_at_least QUEUE N: the broker counts at least N messages in QUEUE.
count_at_least() {
	local n
	n=$(queue_count "$RELAY_DIR1" "$1")
	[ -n "$n" ] && [ "$n" -ge "$2" ]
}

# inflight_is N, in_spool_is N: $MQ_DIR holds N claimed messages, N
# messages waiting or claimed.
inflight_is() {
	[ "$(stat_of inflight)" -eq "$1" ]
}
in_spool_is() {
	[ "$(messages "$MQ_DIR")" -eq "$1" ]
}

# big_lines N SIZE: N lines of SIZE - 1 bytes each, on stdout.
big_lines() {
	local line
	line=$(head -c "$(($2 - 1))" /dev/zero | tr '\0' x)
	for _ in $(seq "$1"); do
		printf '%s\n' "$line"
	done
}

# A port with nothing listening: one the helper found free, a listener's
# next but one is as good as any.
dead_port() {
	sh "$BATS_TEST_DIRNAME/rabbit" ports 1
}

@test "relay push: moves N messages to the queue (the spool's name) and acks them locally" {
	export MQ_DIR="$BATS_TEST_TMPDIR/moved"
	seq 1 50 | mq-send -l >/dev/null
	run relay push -1 "$RELAY_URI"
	assert_success
	assert_equal "$(stat_of ready)" 0
	assert_equal "$(stat_of inflight)" 0
	assert_equal "$(stat_of dead)" 0
	has_count moved 50
}

@test "relay push: declares a missing queue quorum, uses an existing classic one as it is" {
	echo one | mq-send >/dev/null
	run relay push -1 -q fresh "$RELAY_URI"
	assert_success
	run rabbit ctl "$RELAY_DIR1" -q list_queues --no-table-headers name type
	assert_line --regexp '^fresh[[:space:]]+quorum$'
	run amqp_get "$RELAY_PORT1" old classic
	assert_success
	echo two | mq-send >/dev/null
	run relay push -1 -q old "$RELAY_URI"
	assert_success
	run rabbit ctl "$RELAY_DIR1" -q list_queues --no-table-headers name type
	assert_line --regexp '^old[[:space:]]+classic$'
	has_count old 1
}

@test "relay push: message-id, delivery mode and the x-mq-* headers travel" {
	id=$(echo body1 | mq-send -p 3 -g grp.1 -k "the key" --ttl 3600)
	run relay push -1 -q hdr "$RELAY_URI"
	assert_success
	run amqp_get "$RELAY_PORT1" hdr
	assert_success
	assert_line "message-id=$id"
	assert_line "delivery-mode=2"
	assert_line "x-mq-priority=i32:3"
	assert_line "x-mq-group=str:grp.1"
	assert_line "x-mq-key=str:the key"
	assert_line "x-mq-attempts=i32:0"
	assert_line "x-mq-ttl=i64:3600000"
	assert_line --regexp '^x-mq-sent=i64:[0-9]{13}$'
	assert_line "body=body1"
	# A plain message has none of those that do not apply.
	id=$(echo body2 | mq-send)
	run relay push -1 -q hdr "$RELAY_URI"
	assert_success
	run amqp_get "$RELAY_PORT1" hdr
	assert_success
	assert_line "message-id=$id"
	refute_line --partial x-mq-priority
	refute_line --partial x-mq-group
	refute_line --partial x-mq-key
	refute_line --partial x-mq-ttl
	assert_line "x-mq-attempts=i32:0"
}

@test "relay push: a body of several frames (300 KB; frames of 128 KiB) arrives whole, in a batch" {
	awk 'BEGIN { for (i = 0; i < 30000; i++) printf "%09d\n", i }' \
	    >"$BATS_TEST_TMPDIR/big"
	echo small1 | mq-send >/dev/null
	id=$(mq-send <"$BATS_TEST_TMPDIR/big")
	echo small2 | mq-send >/dev/null
	run relay push -1 -q big "$RELAY_URI"
	assert_success
	run relay pull -1 -d "$BATS_TEST_TMPDIR/back" -q big "$RELAY_URI"
	assert_success
	r=$(MQ_DIR="$BATS_TEST_TMPDIR/back" mq-recv -n 3 | grep "/$id,")
	cmp "$BATS_TEST_TMPDIR/big" "$r"
	assert_equal "$(MQ_DIR="$BATS_TEST_TMPDIR/back" stat_of inflight)" 3
}

@test "relay push: a body read short before its end (pread of 4096 bytes at most, as FUSE or NFS may give) arrives whole" {
	awk 'BEGIN { for (i = 0; i < 30000; i++) printf "%09d\n", i }' \
	    >"$BATS_TEST_TMPDIR/big"
	id=$(mq-send <"$BATS_TEST_TMPDIR/big")
	run faulty "pread:short=4096:at=/$id," \
	    mq-relay push -1 -q shortread "$RELAY_URI"
	assert_success
	run relay pull -1 -d "$BATS_TEST_TMPDIR/back" -q shortread "$RELAY_URI"
	assert_success
	r=$(MQ_DIR="$BATS_TEST_TMPDIR/back" mq-recv)
	cmp "$BATS_TEST_TMPDIR/big" "$r"
}

@test "relay push: a claimed message's body that does not open (ENOENT) has its lease checked, found held: pushed at once, no error" {
	seq 1 2 | mq-send -l >/dev/null
	id=$(echo three | mq-send)
	run faulty "openat:errno=ENOENT:nth=1:at=/$id," \
	    mq-relay push -1 -v -q bodyopen "$RELAY_URI"
	assert_success
	assert_output --partial "pushed 3 (confirmed 3, released 0)"
	refute_output --partial "No such file"
	has_count bodyopen 3
	assert_equal "$(stat_of ready)" 0
	assert_equal "$(stat_of inflight)" 0
}

@test "relay push: a lease lost between the claim and the body's open is said once (lease lost), not published, the rest pushed" {
	seq 1 2 | mq-send -l >/dev/null
	id=$(echo three | mq-send)
	# The body's open held back 3 s, while the claimed file goes.
	fault_env "openat:delay=3s:nth=1:at=/$id," \
	    relay_bg push -1 -v -q leaselost "$RELAY_URI"
	relay_until 10 inflight_is 3
	find "$MQ_DIR/cur" -name "$id,*" -delete
	wait "$pid" || fail "push -1 exited $?: $(cat "$BATS_TEST_TMPDIR/err")"
	run cat "$BATS_TEST_TMPDIR/err"
	assert_output --partial "$id"
	assert_output --partial ": lease lost"
	refute_output --partial "No such file"
	assert_equal "$(grep -c "lease lost" "$BATS_TEST_TMPDIR/err")" 1
	has_count leaselost 2
	assert_equal "$(stat_of inflight)" 0
}

@test "relay push: a batch's publishes are written by push itself over TCP (heartbeats on): a failed write is a lost connection, the batch released, pushed after reconnecting" {
	seq 1 5 | mq-send -l >/dev/null
	# rabbitmq-c sends with send(2): only push's own write(2) of the
	# batch's frames to the socket fails.
	run faulty "write:errno=EIO:nth=1:at=socket:" \
	    mq-relay push -1 -v -q wfail "$RELAY_URI"
	assert_success
	assert_output --partial "127.0.0.1:$RELAY_PORT1: connection lost: input/output error"
	assert_equal "$(grep -c "connected to" <<<"$output")" 2
	has_count wfail 5
	assert_equal "$(stat_of ready)" 0
	assert_equal "$(stat_of inflight)" 0
	assert_equal "$(stat_of dead)" 0
}

@test "relay push: a batch's write stuck past the confirm timeout (the broker frozen) is cut: the connection lost, the batch released, pushed after reconnecting" {
	make_spool
	mq-conf lease=10 >/dev/null
	big_lines 64 262144 >"$BATS_TEST_TMPDIR/lines"
	relay_bg push -v -q stuck "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "connected to"
	frozen=$(rabbit pid "$RELAY_DIR1")
	kill -STOP "$frozen"
	mq-send -l <"$BATS_TEST_TMPDIR/lines" >/dev/null
	# lease 10 s: the confirm timeout is 5 s.
	until_in "$BATS_TEST_TMPDIR/err" "connection lost: a publish made no progress in 5000 ms"
	kill -CONT "$frozen"
	frozen=
	relay_until 30 in_spool_is 0
	stop_relay "$pid"
	assert_equal "$st" 0
	assert_equal "$(grep -c "connected to" "$BATS_TEST_TMPDIR/err")" 2
	# What the broker read before the cut may be there twice.
	relay_until 30 count_at_least stuck 64
	assert_equal "$(stat_of inflight)" 0
	assert_equal "$(stat_of dead)" 0
	rabbit ctl "$RELAY_DIR1" -q delete_queue stuck >/dev/null
}

@test "relay push: SIGTERM while a slow link takes a batch's write (64 KiB every 100 ms): the write goes on while it moves, the batch pushed, not cut" {
	make_spool
	big_lines 1 2097152 >"$BATS_TEST_TMPDIR/line"
	fault_env "write:short=65536:delay=100ms:at=socket:" \
	    relay_bg push -v -q slowlink "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "connected to"
	mq-send <"$BATS_TEST_TMPDIR/line" >/dev/null
	relay_until 10 inflight_is 1
	# 2 MiB at 64 KiB a write: 3 s of writes, SIGTERM in their midst.
	sleep 1
	stop_relay "$pid"
	assert_equal "$st" 0
	run cat "$BATS_TEST_TMPDIR/err"
	refute_output --partial "connection lost"
	assert_output --partial "pushed 1 (confirmed 1, released 0)"
	assert_equal "$(stat_of ready)" 0
	assert_equal "$(stat_of inflight)" 0
	has_count slowlink 1
}

@test "relay push: keeps attempts (released once: 1, fresh: 0) and never buries for them" {
	mq-conf max-attempts=1 >/dev/null
	a=$(echo again | mq-send)
	r=$(mq-recv)
	mq-ack -r 0 "$r"
	run mq-ls
	assert_output --regexp "^$a	ready	1	"
	run relay push -1 -q att "$RELAY_URI"
	assert_success
	assert_equal "$(stat_of dead)" 0
	assert_equal "$(stat_of ready)" 0
	run amqp_get "$RELAY_PORT1" att
	assert_success
	assert_line "message-id=$a"
	assert_line "x-mq-attempts=i32:1"
	b=$(echo fresh | mq-send)
	run relay push -1 -q att "$RELAY_URI"
	assert_success
	run amqp_get "$RELAY_PORT1" att
	assert_line "message-id=$b"
	assert_line "x-mq-attempts=i32:0"
}

@test "relay push: a nacked message is released locally: not lost, not dead, attempts kept" {
	run amqp_get "$RELAY_PORT1" full reject
	assert_success
	id=$(echo nacked | mq-send)
	relay_bg push -v -q full "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "released 1"
	stop_relay "$pid"
	assert_equal "$st" 0
	run mq-ls
	assert_output --regexp "^$id	ready	0	"
	assert_equal "$(stat_of dead)" 0
}

@test "relay push -n 2: two batches out, nacks among them: every message on the broker or back in the spool, none acked unconfirmed" {
	# A queue that holds 5 and nacks the publishes past them, drained
	# slowly: of 12 messages pushed in batches of 2, with a batch always
	# published before the older one's confirms are in, many are nacked
	# and released, and pushed again once there is room.
	run amqp_get "$RELAY_PORT1" cap5 reject5
	assert_success
	for i in $(seq 12); do echo "m$i" | mq-send; done >"$BATS_TEST_TMPDIR/ids"
	relay_bg push -v -n 2 -q cap5 "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "released [1-9]"
	: >"$BATS_TEST_TMPDIR/got"
	for _ in $(seq 200); do
		[ "$(wc -l <"$BATS_TEST_TMPDIR/got")" -lt 12 ] || break
		amqp_get "$RELAY_PORT1" cap5 |
		    sed -n 's/^message-id=//p' >>"$BATS_TEST_TMPDIR/got" || true
		sleep 0.3
	done
	stop_relay "$pid"
	assert_equal "$st" 0
	# What the queue still holds, then what the spool still holds.
	for _ in $(seq 12); do
		out=$(amqp_get "$RELAY_PORT1" cap5) || break
		printf '%s\n' "$out" | sed -n 's/^message-id=//p' \
		    >>"$BATS_TEST_TMPDIR/got"
	done
	mq-ls | cut -f1 >"$BATS_TEST_TMPDIR/left"
	# Each message once, on the broker or in the spool: none lost, none
	# acked locally without its confirm, none on the broker twice.
	run sort "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/left"
	assert_output "$(sort "$BATS_TEST_TMPDIR/ids")"
	assert_equal "$(stat_of dead)" 0
	assert_equal "$(stat_of inflight)" 0
}

@test "relay push -n 200: a body that cannot be read (EIO) in the older of two batches releases that message alone; the newer batch is neither released nor pushed twice" {
	local left
	export MQ_DIR="$BATS_TEST_TMPDIR/readfail"
	seq 1 400 | mq-send -l >/dev/null
	# The first body read fails: batch 1, the older once batch 2 is
	# published, has a local failure while most of batch 2 is unconfirmed.
	run --separate-stderr faulty "pread:errno=EIO:nth=1:at=$MQ_DIR/cur/" \
	    mq-relay push -1 -n 200 -q readfail "$RELAY_URI"
	[[ $stderr == *"Input/output error"* ]] || fail "stderr: $stderr"
	# Each message once: the unread one back in the spool (or pushed
	# after its release), the other 399 or 400 on the broker, no more.
	left=$(mq-ls | wc -l)
	[ "$left" -le 1 ] || fail "$left left in the spool"
	has_count readfail $((400 - left))
	assert_equal "$(stat_of inflight)" 0
	assert_equal "$(stat_of dead)" 0
}

@test "relay push: an unroutable message (queue deleted behind its back) is released, then pushed" {
	make_spool
	relay_bg push -v -q gone "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "connected to"
	run rabbit ctl "$RELAY_DIR1" -q delete_queue gone
	assert_success
	id=$(echo unroutable | mq-send)
	until_in "$BATS_TEST_TMPDIR/err" "released 1"
	# Then declared again and pushed: nothing lost, nothing dead.
	until_in "$BATS_TEST_TMPDIR/err" "confirmed 1"
	stop_relay "$pid"
	assert_equal "$st" 0
	assert_equal "$(stat_of dead)" 0
	assert_equal "$(stat_of ready)" 0
	run amqp_get "$RELAY_PORT1" gone
	assert_success
	assert_line "message-id=$id"
	assert_line "x-mq-attempts=i32:0"
}

@test "relay push -1: exits 1 with nothing to push, 0 with something" {
	mq-send </dev/null >/dev/null
	mq-recv >/dev/null
	run relay push -1 -q once "$RELAY_URI"
	assert_failure 1
	assert_output ""
	mq-send </dev/null >/dev/null
	# The options may come before the direction too.
	run relay -1 push -q once "$RELAY_URI"
	assert_success
}

@test "relay push -1: no broker exits 4 naming host:port, having claimed nothing" {
	port=$(dead_port)
	id=$(echo kept | mq-send)
	run relay push -1 -q none "amqp://guest:guest@127.0.0.1:$port"
	assert_failure 4
	assert_output --partial "127.0.0.1:$port"
	run mq-ls
	assert_output --regexp "^$id	ready	0	"
	assert_equal "$(stat_of inflight)" 0
}

@test "relay push -1: a refused login exits 4 naming host:port, the password nowhere" {
	echo kept | mq-send >/dev/null
	for v in "" -v; do
		run relay push -1 $v -q login "amqp://guest:Wr0ngPassw0rd@127.0.0.1:$RELAY_PORT1"
		assert_failure 4
		assert_output --partial "127.0.0.1:$RELAY_PORT1"
		refute_output --partial Wr0ngPassw0rd
		MQ_RELAY_URI="amqp://guest:Wr0ngPassw0rd@127.0.0.1:$RELAY_PORT1" \
		    run relay push -1 $v -q login
		assert_failure 4
		refute_output --partial Wr0ngPassw0rd
	done
	assert_equal "$(stat_of ready)" 1
}

@test "relay push without -1 or -v: a node it cannot reach or log in to is named once, the password nowhere" {
	make_spool
	port=$(dead_port)
	# Several rounds in 3 s: the first named, the rest of the outage not;
	# then SIGTERM, in a backoff or a connection's step, ends it.
	run -124 --separate-stderr timeout -k 5 3 mq-relay push -q quiet "amqp://guest:guest@127.0.0.1:$port"
	[[ $stderr == *"127.0.0.1:$port: "* ]] || fail "stderr: $stderr"
	assert_equal "$(grep -c "127.0.0.1:$port" <<<"$stderr")" 1
	# -v: every round.
	run -124 --separate-stderr timeout -k 5 3 mq-relay push -v -q quiet "amqp://guest:guest@127.0.0.1:$port"
	[ "$(grep -c "127.0.0.1:$port" <<<"$stderr")" -gt 1 ] || fail "stderr: $stderr"
	run -124 --separate-stderr timeout -k 5 3 mq-relay push -q quiet "amqp://guest:Wr0ngPassw0rd@127.0.0.1:$RELAY_PORT1"
	[[ $stderr == *"127.0.0.1:$RELAY_PORT1: "* ]] || fail "stderr: $stderr"
	[[ $stderr == *[Ll]ogin*refused* ]] || fail "stderr: $stderr"
	[[ $stderr != *Wr0ngPassw0rd* ]] || fail "a password: $stderr"
}

# The steps of a connection go on through a signal up to their time
# limits (rabbitmq-c restarts an interrupted wait): a SIGTERM during one
# must end the relay there, not after the step has timed out, which it
# would say ("127.0.0.1:PORT: no answer within 5 s").
@test "relay push: SIGTERM while a node accepts and never answers (the SYN, the protocol header, the login) ends it there: exit 0, the step not waited out" {
	make_spool
	for mode in syn header login; do
		mute_peer $mode
		relay_bg push -q mute "amqp://guest:guest@127.0.0.1:$mute_port"
		case $mode in
		syn) relay_until 30 syn_sent "$mute_port" ;;
		header) until_in "$BATS_TEST_TMPDIR/mute.log" header ;;
		login) until_in "$BATS_TEST_TMPDIR/mute.log" start-ok ;;
		esac
		stop_bounded "$pid" 20
		assert_equal "$st" 0
		run cat "$BATS_TEST_TMPDIR/err"
		refute_output --partial "127.0.0.1:$mute_port"
		mute_stop
	done
}

@test "relay push: MQ_RELAY_URI of two nodes, the first dead: pushes through the second" {
	port=$(dead_port)
	seq 1 5 | mq-send -l >/dev/null
	MQ_RELAY_URI="amqp://guest:guest@127.0.0.1:$port $RELAY_URI" \
	    run relay push -1 -v -q second
	assert_success
	assert_output --partial "connected to 127.0.0.1:$RELAY_PORT1"
	assert_equal "$(stat_of ready)" 0
	has_count second 5
}

@test "relay push: the password given in argv is not in /proc/PID/cmdline while it runs" {
	rabbit ctl "$RELAY_DIR1" -q add_user relayer S3cretPassw0rd >/dev/null 2>&1 || true
	rabbit ctl "$RELAY_DIR1" -q set_permissions relayer '.*' '.*' '.*'
	make_spool
	relay_bg push -v -q argv "amqp://relayer:S3cretPassw0rd@127.0.0.1:$RELAY_PORT1"
	until_in "$BATS_TEST_TMPDIR/err" "connected to"
	run tr '\0' ' ' <"/proc/$pid/cmdline"
	stop_relay "$pid"
	assert_equal "$st" 0
	# Blanked from "amqp://" to the last '@'.
	assert_output --regexp "amqp://x+@127\.0\.0\.1:$RELAY_PORT1 "
	refute_output --partial S3cretPassw0rd
	run grep -c S3cretPassw0rd "$BATS_TEST_TMPDIR/err"
	assert_output 0
}

@test "relay push without -1: a claim that fails is named, then after a pause it goes on: all pushed" {
	seq 1 3 | mq-send -l >/dev/null
	fault_env "renameat:errno=EIO:nth=1:at=$MQ_DIR/new/" \
	    relay_bg push -v -q claimfail "$RELAY_URI"
	has_count claimfail 3
	stop_relay "$pid"
	assert_equal "$st" 0
	grep -q "Input/output error" "$BATS_TEST_TMPDIR/err" ||
	    fail "stderr: $(cat "$BATS_TEST_TMPDIR/err")"
	assert_equal "$(stat_of inflight)" 0
	assert_equal "$(stat_of ready)" 0
	assert_equal "$(stat_of dead)" 0
}

@test "relay push without -1: a conf broken while it runs is named once, the settings before it kept: it goes on pushing" {
	make_spool
	relay_bg push -v -q badconf "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "connected to"
	echo one | mq-send >/dev/null
	# Visible in 3 s, once conf is broken (no tool sends with it so).
	echo two | mq-send -D 3 >/dev/null
	echo "no such setting" >>"$MQ_DIR/conf"
	touch "$MQ_DIR/new"	# the doorbell: conf read again
	until_in "$BATS_TEST_TMPDIR/err" "/conf"
	has_count badconf 2
	kill -0 "$pid"
	stop_relay "$pid"
	assert_equal "$st" 0
	assert_equal "$(grep -c "/conf" "$BATS_TEST_TMPDIR/err")" 1
	printf 'lease=30\n' >"$MQ_DIR/conf"
	assert_equal "$(stat_of ready)" 0
}

@test "relay push: paused until a time, it pushes nothing before it and then by itself, nothing rung" {
	echo one | mq-send >/dev/null
	mq-conf paused=yes
	relay_bg push -v -q pausedtill "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "connected to"
	sleep 1
	assert_equal "$(stat_of ready)" 1
	# Read at mq-conf's ring; its end rings nothing.
	mq-conf paused=2s
	has_count pausedtill 1
	stop_relay "$pid"
	assert_equal "$st" 0
	assert_equal "$(stat_of ready)" 0
}

@test "relay push: SIGTERM mid-run exits 0, nothing left claimed, nothing lost" {
	seq 1 3000 | mq-send -l >/dev/null
	relay_bg push -v -n 10 -q term "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "confirmed 10"
	stop_relay "$pid"
	assert_equal "$st" 0
	assert_equal "$(stat_of inflight)" 0
	assert_equal "$(stat_of dead)" 0
	ready=$(stat_of ready)
	has_count term $((3000 - ready))
}

@test "relay push: amqps:// verifies the broker's certificate (MQ_RELAY_CACERT)" {
	seq 1 3 | mq-send -l >/dev/null
	tls="amqps://guest:guest@localhost:$((RELAY_PORT1 + 1))"
	# Signed by a CA it was not given: refused, named, nothing claimed.
	MQ_RELAY_CACERT="$BATS_FILE_TMPDIR/certs/otherca.pem" run relay push -1 -q tls "$tls"
	assert_failure 4
	assert_output --partial "localhost:$((RELAY_PORT1 + 1)): SSL peer cert verification failed"
	assert_equal "$(stat_of ready)" 3
	MQ_RELAY_CACERT="$BATS_FILE_TMPDIR/certs/cacert.pem" \
	    run relay push -1 -v -q tls "$tls"
	assert_success
	assert_output --partial "connected to localhost:$((RELAY_PORT1 + 1))"
	assert_equal "$(stat_of ready)" 0
	has_count tls 3
}

@test "relay push: its connection closed by the broker mid-push: reconnects, carries on, nothing lost" {
	: >"$BATS_TEST_TMPDIR/sent"
	relay_send 20000 "$MQ_DIR"
	relay_bg push -v -n 1 -q lost "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "confirmed 1"
	rabbit ctl "$RELAY_DIR1" -q close_all_connections "a test" >/dev/null
	until_in "$BATS_TEST_TMPDIR/err" "connection lost"
	for _ in $(seq 300); do
		[ "$(grep -c "connected to" "$BATS_TEST_TMPDIR/err")" -ge 2 ] &&
		    [ "$(sed -n '/connection lost/,$p' "$BATS_TEST_TMPDIR/err" |
		    grep -c 'confirmed 1,')" -ge 1 ] && break
		sleep 0.1
	done
	stop_relay "$pid"
	grep -v 'confirmed 1,' "$BATS_TEST_TMPDIR/err"
	assert_equal "$st" 0
	run grep -c "connected to 127.0.0.1:$RELAY_PORT1" "$BATS_TEST_TMPDIR/err"
	assert_output 2
	run sed -n '/connection lost/,$p' "$BATS_TEST_TMPDIR/err"
	assert_output --partial "confirmed 1,"
	assert_equal "$(stat_of inflight)" 0
	assert_equal "$(stat_of dead)" 0
	# Nothing lost: the rest pushed, everything pulled into another
	# spool holds every message sent, with its body (some maybe twice).
	run relay push -1 -q lost "$RELAY_URI"
	[ "$status" -le 1 ] || fail "push -1 exited $status: $output"
	assert_equal "$(stat_of ready)" 0
	run timeout -k 5 300 mq-relay pull -1 -n 65535 -d "$BATS_TEST_TMPDIR/b" -q lost "$RELAY_URI" 3>&-
	assert_success
	relay_compare "$BATS_TEST_TMPDIR/b" "connection closed mid-push"
	assert_equal "$lost" 0
	assert_equal "$wrong" 0
}

@test "relay push: SIGTERM ends it while its broker does not answer (the node stopped)" {
	make_spool
	relay_bg push -v -q frozen "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "connected to"
	frozen=$(rabbit pid "$RELAY_DIR1")
	kill -STOP "$frozen"
	# Its channel.close unanswered: given up after its time limit.
	stop_bounded "$pid" 20
	kill -CONT "$frozen"
	frozen=
	assert_equal "$st" 0
}

@test "relay push: SIGTERM ends it while the broker blocks publishers (disk alarm): every message back in the spool" {
	make_spool
	big_lines 20 262144 | mq-send -l >/dev/null
	alarm=1
	disk_alarm on
	relay_bg push -v -q alarm "$RELAY_URI"
	# Claimed, published into a socket the broker no longer reads.
	relay_until 10 inflight_is 20
	sleep 1
	stop_bounded "$pid" 20
	assert_equal "$st" 0
	assert_equal "$(stat_of inflight)" 0
	assert_equal "$(stat_of ready)" 20
	assert_equal "$(stat_of dead)" 0
	disk_alarm off
	alarm=
}

@test "relay push: blocked by the broker (connection.blocked): it says so, waits, and pushes once unblocked" {
	make_spool
	alarm=1
	disk_alarm on
	relay_bg push -v -q blocked "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "connected to"
	seq 1 5 | mq-send -l >/dev/null
	until_in "$BATS_TEST_TMPDIR/err" "blocked by the broker"
	disk_alarm off
	alarm=
	has_count blocked 5
	stop_relay "$pid"
	assert_equal "$st" 0
	assert_equal "$(stat_of ready)" 0
	assert_equal "$(stat_of inflight)" 0
}

@test "relay push: blocked by the broker under a batch's write (16 MiB, disk alarm): seen when the write stalls, waited for, not a lost connection" {
	make_spool
	mq-conf lease=10 >/dev/null
	big_lines 64 262144 >"$BATS_TEST_TMPDIR/lines"
	alarm=1
	disk_alarm on
	relay_bg push -v -q blockedwrite "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "connected to"
	mq-send -l <"$BATS_TEST_TMPDIR/lines" >/dev/null
	until_in "$BATS_TEST_TMPDIR/err" "blocked by the broker"
	# Past the confirm timeout (5 s) from the write's stall.
	sleep 5
	disk_alarm off
	alarm=
	relay_until 30 in_spool_is 0
	stop_relay "$pid"
	assert_equal "$st" 0
	run cat "$BATS_TEST_TMPDIR/err"
	refute_output --partial "connection lost"
	has_count blockedwrite 64
	assert_equal "$(stat_of inflight)" 0
	rabbit ctl "$RELAY_DIR1" -q delete_queue blockedwrite >/dev/null
}

@test "relay push --max-bytes: a message bigger than the broker takes is dead-lettered (too big for the broker), the rest pushed" {
	seq 1 3 | mq-send -l >/dev/null
	big=$(big_lines 1 300000 | mq-send)
	seq 4 5 | mq-send -l >/dev/null
	run relay push -1 -v --max-bytes 100000 -q big "$RELAY_URI"
	assert_success
	assert_output --partial "too big for the broker (300000 bytes, at most 100000)"
	assert_output --partial "buried 1"
	has_count big 5
	assert_equal "$(stat_of ready)" 0
	assert_equal "$(stat_of inflight)" 0
	assert_equal "$(stat_of dead)" 1
	run mq-dlq ls
	assert_output --regexp "^$big	0	[^	]*	too big for the broker "
	# Only one too big: nothing moved, exit 1.
	big_lines 1 300000 | mq-send >/dev/null
	run relay push -1 --max-bytes 100000 -q big "$RELAY_URI"
	assert_failure 1
	assert_equal "$(stat_of dead)" 2
	has_count big 5
}

@test "relay push: a message over the broker's own max_message_size (its channel closed, 406): the limit learnt, the message dead-lettered, the rest pushed" {
	maxsize=1
	max_message_size 100000
	seq 1 3 | mq-send -l >/dev/null
	big=$(big_lines 1 300000 | mq-send)
	seq 4 5 | mq-send -l >/dev/null
	run relay push -1 -v -q learnt "$RELAY_URI"
	assert_success
	assert_output --partial "the broker takes at most 100000 bytes a message"
	# Those published before it on the closed channel may have been
	# enqueued unconfirmed, and pushed again: at least 5, not exactly.
	relay_until 30 count_at_least learnt 5
	assert_equal "$(stat_of ready)" 0
	assert_equal "$(stat_of inflight)" 0
	assert_equal "$(stat_of dead)" 1
	run mq-dlq ls
	assert_output --regexp "^$big	0	[^	]*	too big for the broker \(300000 bytes, at most 100000\)"
	max_message_size 134217728
	maxsize=
}

@test "relay push: a lease (1 s) shorter than the confirm path (the broker frozen 2.5 s): leases extended, each message on the broker once" {
	make_spool
	mq-conf lease=1 >/dev/null
	big_lines 200 262144 >"$BATS_TEST_TMPDIR/lines"
	relay_bg push -v -n 50 -q lease1 "$RELAY_URI"
	until_in "$BATS_TEST_TMPDIR/err" "connected to"
	frozen=$(rabbit pid "$RELAY_DIR1")
	kill -STOP "$frozen"
	mq-send -l <"$BATS_TEST_TMPDIR/lines" >/dev/null
	sleep 2.5
	kill -CONT "$frozen"
	frozen=
	relay_until 30 in_spool_is 0
	stop_relay "$pid"
	assert_equal "$st" 0
	has_count lease1 200
	rabbit ctl "$RELAY_DIR1" -q delete_queue lease1 >/dev/null
}

@test "relay: usage errors exit 2 (a bad URI without its password, direction, -n)" {
	# A URI that does not parse is never echoed: a password may be
	# anywhere in it.
	run relay push -1 "amqp://guest:Hidd3nPw@127.0.0.1:notaport"
	assert_failure 2
	assert_output --partial "URI 1: not an AMQP URI (amqp[s]://[user[:password]@]host[:port][/vhost])"
	refute_output --partial Hidd3nPw
	run relay push -1 "$RELAY_URI" "amqp://user:N0AtSecret"
	assert_failure 2
	assert_output --partial "URI 2: not an AMQP URI"
	refute_output --partial N0AtSecret
	MQ_RELAY_URI="amqp://user:Sp4ce d@host" run relay push -1
	assert_failure 2
	assert_output --partial "URI 1: not an AMQP URI"
	refute_output --partial Sp4ce
	run relay push -1 "no uri at all"
	assert_failure 2
	assert_output --partial "URI 1: not an AMQP URI"
	run relay sideways -1
	assert_failure 2
	assert_output --partial sideways
	run relay -1 sideways
	assert_failure 2
	assert_output --partial sideways
	run relay -1
	assert_failure 2
	run relay
	assert_failure 2
	run relay push -n 0
	assert_failure 2
	run relay push -n 1025
	assert_failure 2
	run relay pull -n 65536
	assert_failure 2
	run relay push -q ""
	assert_failure 2
	run relay push --max-bytes 0
	assert_failure 2
	run relay pull --max-bytes 1000
	assert_failure 2
	# -s is a state in mq-ls: the old spelling is refused, naming the new.
	run -2 --separate-stderr relay push -s 1000
	assert_equal "$stderr" "mq-relay: -s is now --max-bytes"
	run relay -h
	assert_success
	assert_output --partial "usage: mq-relay push"
}
