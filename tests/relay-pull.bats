# mq-test: long (tests/run starts it first)
load helper
load relay

# mq-relay pull: broker -> local spool.  One private RabbitMQ node for the
# file (tests/relay.bash); each test has its own queue, named after its
# spool.  Messages are put on the broker by tests/amqp-put (as another
# host's push would, or any other publisher).

setup_file() {
	relay_node
	[ -x "$BATS_TEST_DIRNAME/amqp-put" ] ||
	    { echo "tests/amqp-put is not built (make amqp-put)" >&2; return 1; }
}

teardown_file() {
	relay_teardown
}

setup() {
	export Q="pull$BATS_TEST_NUMBER"
	export MQ_DIR="$BATS_TEST_TMPDIR/$Q"
	PUT="$BATS_TEST_DIRNAME/amqp-put"
	URI=$RELAY_URI
}

# Whatever a test left running in the background (pull_bg: $pulls;
# mute_peer).
teardown() {
	local p
	for p in ${pulls:-}; do
		kill -9 "$p" 2>/dev/null || true
	done
	mute_stop
}

# put [amqp-put options]: one message (body on stdin) on this test's queue.
put() {
	timeout -k 5 30 "$PUT" -u "$URI" -q "$Q" "$@"
}

# The messages ready on the broker's queue.
ready() {
	timeout -k 5 30 "$PUT" -u "$URI" -q "$Q" -C
}

# pull [options]: mq-relay pull -1 of this test's spool, bounded.
pull() {
	timeout -k 5 60 mq-relay pull -1 "$@" "$URI"
}

# pull_bg [options]: mq-relay pull of this test's spool in the
# background (not holding bats' fd 3), its stderr in
# $BATS_TEST_TMPDIR/err, its PID in $pid and added to $pulls (teardown
# kills what is left).
pull_bg() {
	mq-relay pull "$@" "$URI" >/dev/null 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	pulls="${pulls:-} $pid"
}

# The bodies of the messages waiting, each into $1/ID.
bodies() {
	local r id
	mkdir -p "$1"
	while r=$(mq-recv); do
		id=${r##*/}
		cp "$r" "$1/${id%%,*}"
		mq-ack "$r"
	done
}

# The message files of the spool: new/, parked groups, cur/, dead/.
files() {
	local -a dirs=("$MQ_DIR/new" "$MQ_DIR/cur" "$MQ_DIR/dead")
	[ ! -d "$MQ_DIR/groups" ] || dirs+=("$MQ_DIR/groups")
	find "${dirs[@]}" -type f ! -name turn 2>/dev/null
}

# What is in tmp/ but the spool's own (dot files: spares, depth cache).
tmp_debris() {
	find "$MQ_DIR/tmp" -mindepth 1 -maxdepth 1 ! -name '.*' ! -name ',*'
}

ID_RE='^[0-9a-f]{16}\.[0-9]+\.[0-9a-f]{12}$'


# The time part of the fixed IDs below: now, as an ID's (ns, 16 hex
# digits), so that a message's time to live, which counts from its ID's
# time when no x-mq-sent says otherwise, has not run out.
NOW_HEX=$(printf '%016x' "$(date +%s%N)")

@test "pull: N messages, each in the spool once, bodies intact (NUL bytes too), the queue empty; -1 exits 0, then 1" {
	put -c 10 </dev/null
	printf 'bin\0ary\0\377\n\0' >"$BATS_TEST_TMPDIR/binary"
	put <"$BATS_TEST_TMPDIR/binary"
	run pull
	assert_success
	bodies "$BATS_TEST_TMPDIR/got"
	run ls "$BATS_TEST_TMPDIR/got"
	assert_equal "${#lines[@]}" 11
	# Each body once: 1..10 and the binary one, byte for byte.
	run sh -c 'cd "$1" && for f in *; do [ "$(wc -c <"$f")" -lt 3 ] && cat "$f" && echo; done | sort -n' _ "$BATS_TEST_TMPDIR/got"
	assert_output "$(seq 1 10)"
	run sh -c 'for f in "$1"/*; do cmp -s "$f" "$2" && echo same; done' _ "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/binary"
	assert_output same
	# Ready and unacked: nothing.
	assert_equal "$(queue_count "$RELAY_DIR1" "$Q")" 0
	run pull
	assert_equal "$status" 1
	assert_equal "$(files | wc -l)" 0
}

@test "pull: the ID is the message-id; none or an invalid one gets a fresh valid ID" {
	local id=$NOW_HEX.4242.0123456789ab
	echo given | put -i "$id"
	echo none | put
	echo bad | put -i not-an-id
	echo dots | put -i ../../etc/passwd
	run pull
	assert_success
	run mq-show "$id"
	assert_success
	assert_output given
	run mq-ls
	assert_equal "${#lines[@]}" 4
	local line n=0
	for line in "${lines[@]}"; do
		[[ ${line%%$'\t'*} =~ $ID_RE ]] || fail "not an ID: $line"
		n=$((n + 1))
	done
	assert_equal "$n" 4
	assert_equal "$(tmp_debris | wc -l)" 0
}

@test "pull: priority, attempts and ttl restored from the headers, of any integer kind" {
	local a=$NOW_HEX.1.00000000000a b=$NOW_HEX.1.00000000000b
	local c=$NOW_HEX.1.00000000000c
	echo a | put -i "$a" -p 7 -a 3 -t 3600000
	echo b | put -i "$b" -p 2 -a 1 -K u8
	local now
	now=$(date +%s%3N)
	echo c | put -i "$c" -p 12 -s "$now" -t 7200000 -K u64
	run pull
	assert_success
	run mq-ls --json
	assert_line --partial "\"id\":\"$a\",\"state\":\"ready\",\"attempts\":3,"
	assert_line --regexp "\"id\":\"$a\".*\"priority\":7"
	assert_line --regexp "\"id\":\"$b\",\"state\":\"ready\",\"attempts\":1,.*\"priority\":2"
	# A priority out of range is left out (0), with a warning.
	assert_line --regexp "\"id\":\"$c\",\"state\":\"ready\",\"attempts\":0,.*\"priority\":0"
	# The ttl in the name: ID,ATTEMPTS,SENT,TTL.
	run files
	assert_line --regexp "/$a,3,[0-9]+,3600000,p7\$"
	assert_line --regexp "/$c,0,$now,7200000\$"
	assert_line --regexp "/$b,1,p2\$"
}

@test "pull: a warning names a header left out" {
	echo c | put -p 12
	run --separate-stderr pull
	assert_success
	assert_equal "$stderr" "mq-relay: $(mq-ls | cut -f1): x-mq-priority: not usable, left out"
}

@test "pull: the group restored, its order kept" {
	local i
	for i in 1 2 3 4; do
		echo "$i" | put -g g1
	done
	echo other | put
	run pull
	assert_success
	run mq-ls -s blocked
	assert_equal "${#lines[@]}" 3
	run drain
	assert_output "$(printf '1\n\nother\n\n2\n\n3\n\n4\n')"
}

@test "pull: a key held in the spool is not added twice (mq-send -k), another ID or not" {
	local a=$NOW_HEX.1.0000000000a1 b=$NOW_HEX.1.0000000000b2
	echo first | put -i "$a" -k order-42
	echo second | put -i "$b" -k order-42
	echo other | put -k order-43
	run --separate-stderr pull -v
	assert_success
	[[ $stderr == *"pulled 3 (added 2, already here 1)"* ]] || fail "stderr: $stderr"
	run mq-ls
	assert_equal "${#lines[@]}" 2
	run mq-show "$a"
	assert_output first
	run mq-show "$b"
	assert_failure 1
	# The key is held as mq-send -k holds it: a send with it adds nothing.
	run mq-send -k order-42 <<<"third"
	assert_success
	assert_output "$a"
	assert_equal "$(tmp_debris | wc -l)" 0
}

@test "pull: a redelivery of a message already in the spool is not added twice" {
	local id=$NOW_HEX.1.0000000000cc
	echo once | put -i "$id"
	run pull
	assert_success
	# The same message again, taken by a consumer that drops the
	# connection without acking: the broker redelivers it, flagged.
	echo once | put -i "$id"
	run timeout -k 5 30 "$PUT" -u "$URI" -q "$Q" -R
	assert_success
	assert_output "$id"
	run --separate-stderr pull -v
	assert_equal "$status" 1
	[[ $stderr == *"pulled 1 (added 0, already here 1)"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 1
	assert_equal "$(ready)" 0
}

@test "pull: the same message-id published again, not flagged redelivered, is added once: waiting, and in flight" {
	local id=$NOW_HEX.1.0000000000dd r
	# Twice in one batch: one added.
	echo one | put -i "$id"
	echo one | put -i "$id"
	run --separate-stderr pull -v
	assert_success
	[[ $stderr == *"already here 1)"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 1
	# Again (a push that died between the confirm and its local ack
	# publishes it anew), while the first waits in new/.
	echo one | put -i "$id"
	run --separate-stderr pull -v
	assert_equal "$status" 1
	[[ $stderr == *"pulled 1 (added 0, already here 1)"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 1
	# And again while the first is in flight (claimed by a worker).
	r=$(mq-recv)
	[[ $r == */cur/* ]] || fail "receipt: $r"
	echo one | put -i "$id"
	run --separate-stderr pull -v
	assert_equal "$status" 1
	[[ $stderr == *"pulled 1 (added 0, already here 1)"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 1
	run mq-recv
	assert_failure
	assert_equal "$(ready)" 0
}

@test "pull: -1 -n 5 with 12 on the broker: exits 0 when the spool is full, 5 in the spool, 7 on the broker" {
	put -c 12 </dev/null
	run --separate-stderr pull -n 5
	assert_success
	assert_equal "$(find "$MQ_DIR/new" -type f | wc -l)" 5
	assert_equal "$(tmp_debris | wc -l)" 0
	assert_equal "$(ready)" 7
	# Full from the start: nothing added, exit 1, the 7 left there.
	run --separate-stderr pull -n 5
	assert_equal "$status" 1
	assert_equal "$(find "$MQ_DIR/new" -type f | wc -l)" 5
	assert_equal "$(ready)" 7
}

@test "pull: -1 -n 5 with 12 of one group on the broker: the parked count, 5 in the spool, 7 on the broker" {
	local i
	for i in $(seq 1 12); do
		echo "$i" | put -g g1
	done
	run --separate-stderr pull -n 5
	assert_success
	assert_equal "$(files | wc -l)" 5
	run mq-ls -s blocked
	assert_equal "${#lines[@]}" 4
	assert_equal "$(tmp_debris | wc -l)" 0
	assert_equal "$(ready)" 7
}

@test "pull: -n 5 keeps at most 5 waiting, the rest on the broker; a worker draining lets all 20 arrive" {
	local i n max=0 st
	put -c 20 </dev/null
	local pid
	pull_bg -n 5
	# Until 5 are waiting (bounded), then a while longer: never more.
	for ((i = 0; i < 100; i++)); do
		n=$(find "$MQ_DIR/new" -type f 2>/dev/null | wc -l)
		[ "$n" -le "$max" ] || max=$n
		[ "$n" -lt 5 ] || break
		sleep 0.1
	done
	for ((i = 0; i < 15; i++)); do
		n=$(find "$MQ_DIR/new" -type f | wc -l)
		[ "$n" -le "$max" ] || max=$n
		sleep 0.1
	done
	assert_equal "$max" 5
	# 5 here, 5 more held unacked at most: 10 at least still ready there.
	n=$(ready)
	[ "$n" -ge 10 ] || fail "only $n left on the broker"
	# A slow worker: each message sampled before it is taken.
	local got=0
	for ((i = 0; i < 600 && got < 20; i++)); do
		n=$(find "$MQ_DIR/new" -type f | wc -l)
		[ "$n" -le "$max" ] || max=$n
		if r=$(mq-recv); then
			mq-ack "$r"
			got=$((got + 1))
		else
			sleep 0.1
		fi
	done
	kill -TERM "$pid"
	st=0
	timeout 20 tail --pid="$pid" -f /dev/null || kill -9 "$pid"
	wait "$pid" || st=$?
	assert_equal "$got" 20
	assert_equal "$max" 5
	assert_equal "$st" 0
	assert_equal "$(ready)" 0
}

@test "pull: creates a missing spool; QUEUE defaults to the spool's base name" {
	export MQ_DIR="$BATS_TEST_TMPDIR/not/yet/$Q"
	echo arrived | put
	run pull
	assert_success
	run drain
	assert_output "arrived"
	# -d, and a relative path: the base name of its real path.
	echo again | put
	cd "$BATS_TEST_TMPDIR/not/yet/$Q"
	run timeout -k 5 60 mq-relay pull -1 -d . "$URI"
	assert_success
	run drain
	assert_output "again"
}

@test "pull: SIGTERM exits 0, nothing lost (spool + queue = all)" {
	local i n st=0
	put -c 300 </dev/null
	mq-relay pull -n 1000 "$URI" >/dev/null 2>&1 3>&- &
	local pid=$!
	pulls=$pid
	for ((i = 0; i < 200; i++)); do
		n=$(find "$MQ_DIR/new" -type f 2>/dev/null | wc -l)
		[ "$n" -eq 0 ] || break
		sleep 0.05
	done
	kill -TERM "$pid"
	timeout 20 tail --pid="$pid" -f /dev/null || kill -9 "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 0
	n=$(files | wc -l)
	assert_equal "$((n + $(ready)))" 300
	# Each once: the bodies here and what pull -1 fetches now.
	run pull
	bodies "$BATS_TEST_TMPDIR/got"
	run sh -c 'for f in "$1"/*; do cat "$f"; echo; done | sort -n | uniq | wc -l' _ "$BATS_TEST_TMPDIR/got"
	assert_output 300
	assert_equal "$(find "$BATS_TEST_TMPDIR/got" -type f | wc -l)" 300
}

@test "pull: SIGTERM in the login of a node that never answers ends it there: exit 0, the login not waited out" {
	mute_peer login
	URI="amqp://guest:guest@127.0.0.1:$mute_port" pull_bg
	relay_until 30 grep -q start-ok "$BATS_TEST_TMPDIR/mute.log"
	stop_bounded "$pid" 20
	assert_equal "$st" 0
	run cat "$BATS_TEST_TMPDIR/err"
	refute_output --partial "127.0.0.1:$mute_port"
}

@test "pull: a write into tmp/ that fails: named, nothing in new/ or tmp/, the messages stay on the broker" {
	put -c 3 </dev/null
	run --separate-stderr faulty "write:errno=ENOSPC:at=$MQ_DIR/tmp/" \
	    mq-relay pull -1 "$URI"
	assert_equal "$status" 4
	[[ $stderr == *"$MQ_DIR/tmp: No space left on device"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 0
	assert_equal "$(tmp_debris | wc -l)" 0
	assert_equal "$(ready)" 3
	run pull
	assert_success
	assert_equal "$(files | wc -l)" 3
}

@test "pull: a batch's syncfs that fails: exit 4, nothing left in tmp/, the messages stay on the broker" {
	put -c 3 </dev/null
	run --separate-stderr faulty "syncfs:errno=EIO" mq-relay pull -1 "$URI"
	assert_equal "$status" 4
	[[ $stderr == *"Input/output error"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 0
	assert_equal "$(tmp_debris | wc -l)" 0
	assert_equal "$(ready)" 3
}

@test "pull: a rename into new/ that fails mid-batch: what was placed is acked, the rest returned, none twice" {
	put -c 3 </dev/null
	run --separate-stderr faulty "renameat:errno=EIO:nth=2:at=$MQ_DIR/tmp/1" \
	    mq-relay pull -1 "$URI"
	assert_equal "$status" 4
	[[ $stderr == *"Input/output error"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 1
	assert_equal "$(tmp_debris | wc -l)" 0
	assert_equal "$(ready)" 2
	run pull
	assert_success
	bodies "$BATS_TEST_TMPDIR/got"
	run sh -c 'for f in "$1"/*; do cat "$f"; echo; done | sort -n' _ "$BATS_TEST_TMPDIR/got"
	assert_output "$(seq 1 3)"
}

@test "pull: SIGTERM in the middle of a batch: the batch is finished and acked, then exit 0" {
	command -v gdb >/dev/null || fail "gdb is not installed"
	put -c 5 </dev/null
	# Stopped in the batch's sync, SIGTERM delivered, then let go; the
	# program itself, not a valgrind wrapper.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    run timeout -k 5 60 gdb -q -batch -ex 'set breakpoint pending on' \
	    -ex 'break mq_tmp_sync' -ex "run pull -n 1000 $URI" \
	    -ex delete -ex 'signal SIGTERM' --args "$(bin_of mq-relay)" </dev/null
	assert_output --partial "Breakpoint 1,"
	assert_output --partial "exited normally"
	local n
	n=$(files | wc -l)
	[ "$n" -ge 1 ] || fail "the batch in hand was not finished"
	assert_equal "$((n + $(ready)))" 5
	assert_equal "$(tmp_debris | wc -l)" 0
}

# wait_files N: until the spool holds N messages (at most 30 s).
wait_files() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$(files | wc -l)" -lt "$1" ] || return 0
		sleep 0.1
	done
	fail "$(files | wc -l) messages in the spool, not $1"
}

@test "pull: a connection closed by the broker: named, reconnected, it carries on" {
	local st=0
	put -c 3 </dev/null
	local pid
	pull_bg
	wait_files 3
	rabbit ctl "$RELAY_DIR1" -q close_all_connections "test"
	put -c 4 </dev/null
	wait_files 7
	kill -TERM "$pid"
	timeout 20 tail --pid="$pid" -f /dev/null || kill -9 "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 0
	run cat "$BATS_TEST_TMPDIR/err"
	assert_output --partial "connection lost"
	assert_equal "$(files | wc -l)" 7
	assert_equal "$(ready)" 0
}

@test "pull: a fragment in tmp/ under the ID (a pull that died before placing it) is replaced" {
	local id=$NOW_HEX.1.0000000000dd
	run pull	# the spool made, nothing to pull
	assert_equal "$status" 1
	printf 'half a bo' >"$MQ_DIR/tmp/$id"
	echo "the whole body" | put -i "$id"
	run pull
	assert_success
	run mq-show "$id"
	assert_output "the whole body"
	assert_equal "$(files | wc -l)" 1
	assert_equal "$(tmp_debris | wc -l)" 0
}

# The deliveries of this test's queue that are not acked yet (as the node
# counts them; none when there is no such queue).
unacked() {
	rabbit ctl "$RELAY_DIR1" -q eval "case rabbit_amqqueue:lookup(rabbit_misc:r(<<\"/\">>, queue, <<\"$Q\">>)) of
	    {ok, Q} -> [{_, N}] = rabbit_amqqueue:info(Q, [messages_unacknowledged]), N; _ -> none end." 2>/dev/null | grep -x '[0-9]*'
}

# held_back N: N ready on the broker, none unacked (held by no consumer).
held_back() {
	[ "$(ready)" = "$1" ] && [ "$(unacked)" = 0 ]
}

@test "pull: while the spool is full it holds nothing (the rest ready on the broker, none unacked); room made, all arrive, none twice" {
	local got=0 i r st
	put -c 10 </dev/null
	local pid
	pull_bg -n 3
	wait_files 3
	relay_until 20 held_back 7 || fail "ready $(ready), unacked $(unacked)"
	assert_equal "$(files | wc -l)" 3
	# Workers make room: pull consumes again, up to 3 waiting each time.
	for ((i = 0; i < 300 && got < 10; i++)); do
		if r=$(mq-recv); then
			{ cat "$r"; echo; } >>"$BATS_TEST_TMPDIR/bodies"
			mq-ack "$r"
			got=$((got + 1))
		else
			sleep 0.1
		fi
	done
	stop_bounded "$pid"
	assert_equal "$st" 0
	assert_equal "$got" 10
	run sort -n -u "$BATS_TEST_TMPDIR/bodies"
	assert_output "$(seq 1 10)"
	assert_equal "$(files | wc -l)" 0
	assert_equal "$(ready)" 0
}

@test "pull: max-depth set while pull runs: it stops there, the rest on the broker; lifted, the rest arrive" {
	local st
	put -c 2 </dev/null
	local pid
	pull_bg -n 100
	wait_files 2
	mq-conf max-depth=4
	put -c 6 </dev/null
	wait_files 4
	relay_until 20 held_back 4 || fail "ready $(ready), unacked $(unacked)"
	assert_equal "$(files | wc -l)" 4
	mq-conf max-depth=
	wait_files 8
	stop_bounded "$pid"
	assert_equal "$st" 0
	assert_equal "$(files | wc -l)" 8
	assert_equal "$(ready)" 0
}

@test "pull: a directory of the spool the ID walk cannot read: named once, not every pause; -1 exits 4; the messages stay on the broker" {
	local r st
	run pull	# the spool made, nothing to pull
	assert_equal "$status" 1
	echo inflight | mq-send >/dev/null
	r=$(mq-recv)	# a directory in cur/
	[[ $r == */cur/* ]] || fail "receipt: $r"
	put -c 3 </dev/null
	# As root a mode 000 directory is read all the same: the fault library.
	local spec="openat:errno=EACCES:at=$MQ_DIR/cur/"
	run --separate-stderr faulty "$spec" mq-relay pull -1 "$URI"
	assert_equal "$status" 4
	[[ $stderr == *"Permission denied"* ]] || fail "stderr: $stderr"
	assert_equal "$(ready)" 3
	# Without -1: it keeps trying, with pauses, and says it once.
	local pid
	fault_env "$spec" pull_bg
	sleep 3.5	# three tries at least, at 1 s pauses
	kill -0 "$pid" || fail "pull ended: $(cat "$BATS_TEST_TMPDIR/err")"
	stop_bounded "$pid"
	assert_equal "$st" 0
	run grep -c "Permission denied" "$BATS_TEST_TMPDIR/err"
	assert_output 1
	assert_equal "$(files | wc -l)" 1
	assert_equal "$(ready)" 3
}

@test "pull: new/'s directory sync that fails once is tried again, the batch acked; failing again, what was placed is not acked nor returned (-1: exit 4), and a pull then adds none twice" {
	run pull	# the spool made, nothing to pull
	assert_equal "$status" 1
	put -c 3 </dev/null
	run --separate-stderr faulty "fsync:errno=EIO:at=$MQ_DIR/new:nth=1" \
	    mq-relay pull -1 "$URI"
	assert_success
	assert_equal "$(files | wc -l)" 3
	assert_equal "$(ready)" 0
	# Failing on: exit 4, placed, back on the broker as the channel
	# closed; then found here by their IDs, not added again.
	echo d | put -i "$NOW_HEX.1.0000000000e1"
	echo e | put -i "$NOW_HEX.1.0000000000e2"
	run --separate-stderr faulty "fsync:errno=EIO:at=$MQ_DIR/new" \
	    mq-relay pull -1 "$URI"
	assert_equal "$status" 4
	[[ $stderr == *"$MQ_DIR/new: Input/output error"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 5
	assert_equal "$(tmp_debris | wc -l)" 0
	assert_equal "$(ready)" 2
	run --separate-stderr pull -v
	assert_equal "$status" 1
	[[ $stderr == *"pulled 2 (added 0, already here 2)"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 5
	assert_equal "$(ready)" 0
}

@test "pull: without -1, what was placed and not synced is held unacked (not returned for another host to take) and acked once a later sync succeeds" {
	local st
	local i
	run pull	# the spool made, nothing to pull
	assert_equal "$status" 1
	for i in 1 2 3; do
		echo "$i" | put -i "$NOW_HEX.1.0000000000f$i"
	done
	# The batch's sync and its second try fail, and the first try after
	# the pause; the next succeeds.
	local pid
	fault_env "fsync:errno=EIO:at=$MQ_DIR/new:times=3" pull_bg -v
	relay_until 20 grep -q "synced at last" "$BATS_TEST_TMPDIR/err" ||
	    fail "$(cat "$BATS_TEST_TMPDIR/err")"
	stop_bounded "$pid"
	assert_equal "$st" 0
	run cat "$BATS_TEST_TMPDIR/err"
	# Named once; never returned, so never redelivered and found here.
	assert_equal "$(grep -c "Input/output error" "$BATS_TEST_TMPDIR/err")" 1
	refute_output --partial "already here 3"
	assert_equal "$(files | wc -l)" 3
	assert_equal "$(ready)" 0
}

@test "pull: a parked message whose sync failed is not acked when new/'s next sync succeeds: held until groups/ is synced (syncfs)" {
	local pid
	run pull	# the spool made, nothing to pull
	assert_equal "$status" 1
	echo 1 | put -g g -i "$NOW_HEX.1.000000000a01"
	echo 2 | put -g g -i "$NOW_HEX.1.000000000a02"
	# The second is parked; its sync fails, and so does every syncfs of
	# groups/: what was placed stays held, the retries say so.
	fault_env "fsync:errno=EIO:at=$MQ_DIR/groups/g/ syncfs:errno=EIO:at=$MQ_DIR/groups" \
	    pull_bg -v
	relay_until 20 grep -q "synced at last\|not synced yet" "$BATS_TEST_TMPDIR/err" ||
	    fail "$(cat "$BATS_TEST_TMPDIR/err")"
	stop_bounded "$pid"
	assert_equal "$st" 0
	run cat "$BATS_TEST_TMPDIR/err"
	refute_output --partial "synced at last"
	# Never acked: back on the broker as the channel closed.
	assert_equal "$(ready)" 2
	assert_equal "$(files | wc -l)" 2
	# Found here by a pull whose sync succeeds: acked, not added twice.
	run --separate-stderr pull -v
	assert_equal "$status" 1
	[[ $stderr == *"pulled 2 (added 0, already here 2)"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 2
	assert_equal "$(ready)" 0
}

@test "pull: a message already here is acked only once the spool is synced: that failing, it is held (-1: exit 4), back on the broker; acked by a pull whose sync succeeds" {
	local id=$NOW_HEX.1.000000000b01
	run pull	# the spool made, nothing to pull
	assert_equal "$status" 1
	echo b | put -i "$id"
	# Placed, new/'s sync failing: held, back on the broker as -1 ends.
	run --separate-stderr faulty "fsync:errno=EIO:at=$MQ_DIR/new" \
	    mq-relay pull -1 "$URI"
	assert_equal "$status" 4
	assert_equal "$(files | wc -l)" 1
	assert_equal "$(ready)" 1
	# Found here, maybe in the page cache alone: the spool's syncfs fails,
	# so it is not acked.
	run --separate-stderr faulty "syncfs:errno=EIO:at=$MQ_DIR" \
	    mq-relay pull -1 -v "$URI"
	assert_equal "$status" 4
	[[ $stderr == *"$MQ_DIR: Input/output error"* ]] || fail "stderr: $stderr"
	[[ $stderr == *"already here 0, held unsynced"* ]] || fail "stderr: $stderr"
	assert_equal "$(ready)" 1
	assert_equal "$(files | wc -l)" 1
	run --separate-stderr pull -v
	assert_equal "$status" 1
	[[ $stderr == *"pulled 1 (added 0, already here 1)"* ]] || fail "stderr: $stderr"
	assert_equal "$(files | wc -l)" 1
	assert_equal "$(ready)" 0
}

@test "pull: a failure mid-batch: one already here after it is acked, not returned for another host to add; only the failed one goes back" {
	local a=$NOW_HEX.1.000000000c01 b=$NOW_HEX.1.000000000c02 c=$NOW_HEX.1.000000000c03
	echo c | put -i "$c"
	run pull
	assert_success
	echo a | put -i "$a"
	echo b | put -i "$b"
	echo c | put -i "$c"
	# [placed, failed, already here]
	run --separate-stderr faulty "renameat:errno=EIO:at=$MQ_DIR/tmp/$b" \
	    mq-relay pull -1 -v "$URI"
	assert_equal "$status" 4
	[[ $stderr == *"pulled 3 (added 1, already here 1)"* ]] || fail "stderr: $stderr"
	assert_equal "$(ready)" 1
	assert_equal "$(files | wc -l)" 2
	run pull
	assert_success
	assert_equal "$(files | wc -l)" 3
	assert_equal "$(ready)" 0
}
