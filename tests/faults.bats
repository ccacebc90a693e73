load helper

# Calls made to fail or stall by tests/fault.so (built by make check; see
# tests/fault.c for the MQ_FAULT syntax).

setup() {
	so="$BATS_TEST_DIRNAME/fault.so"
	[ -f "$so" ] || fail "tests/fault.so is not built (make tests/fault.so)"
	mq-send -l </dev/null
}

# Claims (so prunes the emptied directories of new/) again and again
# until stop_pruner, as busy receivers do; with an argument, runs that
# command instead.
start_pruner() {
	local _
	timeout 60 sh -c 'while [ ! -e "$1/stop" ]; do
		$2 >/dev/null 2>&1; touch "$1/pruned"; done' \
	    sh "$BATS_TEST_TMPDIR" "${1:-mq-recv}" 3>&- &
	pruner=$!
	for _ in $(seq 100); do
		[ -e "$BATS_TEST_TMPDIR/pruned" ] && return
		sleep 0.05
	done
	fail "the pruner did not start"
}

stop_pruner() {
	touch "$BATS_TEST_TMPDIR/stop"
	wait "$pruner"
}

# The first two directories made in new/ are stalled, long enough for a
# receiver to remove the first as empty before the second is made in it.
STALL='mkdirat:delay=300ms:times=2:at=/spool/new/'

@test "faults: a sender racing receivers' pruning of new/ still sends (exit 0)" {
	start_pruner
	run --separate-stderr faulty "$STALL" mq-send -D 60 <<<"raced"
	stop_pruner
	assert_success
	[ -z "$stderr" ]
	[[ $output =~ ^[0-9a-f]{16}\.[0-9]+\.[0-9a-f]{12}$ ]]
	assert_equal "$(count new)" 1
	assert_equal "$(count tmp)" 0
}

@test "faults: mq-ack -r racing receivers' pruning releases (not 'lease lost')" {
	mq-send <<<"released" >/dev/null
	r=$(mq-recv)
	start_pruner
	run --separate-stderr faulty "$STALL" mq-ack -r 60 "$r"
	stop_pruner
	assert_success
	[ -z "$stderr" ]
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 1
}

@test "faults: mq-dlq redrive racing receivers' pruning redrives (not 'no such dead letter')" {
	id=$(mq-send <<<"redriven")
	r=$(mq-recv)
	mq-ack -x "test" "$r"
	start_pruner
	run --separate-stderr faulty "$STALL" mq-dlq redrive "$id"
	stop_pruner
	assert_success
	assert_equal "$stderr" "mq-dlq: redriven 1"
	assert_equal "$(count dead)" 0
	# The pruner may have claimed it since.
	assert_equal "$(($(count new) + $(count cur)))" 1
}

@test "faults: a worker's backoff release racing the pruning of new/ releases the message" {
	mq-send <<<"failing job" >/dev/null
	# Removes every empty directory of new/ (receivers leave young leaves
	# alone; this does not), claiming nothing, a pass every 20 ms: with no
	# rest between passes it can win every retry of the release's, and a
	# receiver's pass takes that long anyway.
	printf '#!/bin/sh\nfind "%s/new" -mindepth 1 -type d -empty -delete\nsleep 0.02\n' \
	    "$MQ_DIR" >"$BATS_TEST_TMPDIR/prune"
	chmod +x "$BATS_TEST_TMPDIR/prune"
	start_pruner "$BATS_TEST_TMPDIR/prune"
	run --separate-stderr faulty "$STALL" mq-recv -n 1 --backoff 60 -- false
	stop_pruner
	assert_failure 5
	[[ $stderr != *"No such file"* ]]
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 1
}

@test "faults: a failed wake-up of receivers (futimens) does not fail the send" {
	run --separate-stderr faulty 'futimens:errno=EIO' mq-send <<<"woken"
	assert_success
	[[ $output =~ ^[0-9a-f]{16}\.[0-9]+\.[0-9a-f]{12}$ ]]
	r=$(mq-recv)
	assert_equal "$(cat "$r")" woken
}

@test "faults: a failed directory sync after the rename prints the ID that landed, exits 4" {
	run --separate-stderr faulty 'fsync:errno=EIO:at=/spool/new' mq-send <<<"landed"
	assert_failure 4
	[[ $output =~ ^[0-9a-f]{16}\.[0-9]+\.[0-9a-f]{12}$ ]]
	[[ $stderr == "mq-send: "*"Input/output error"* ]]
	assert_equal "$(count new)" 1
	assert_equal "$(count tmp)" 0
	r=$(mq-recv)
	assert_equal "$(basename "$r" | cut -d, -f1)" "$output"
}

@test "faults: mq-send -l failing part way through its renames prints what landed, takes back the rest" {
	printf '%s\n' 1 2 3 4 5 >"$BATS_TEST_TMPDIR/in"
	run --separate-stderr faulty 'renameat:errno=ENOSPC:nth=3' \
	    mq-send -l "$BATS_TEST_TMPDIR/in"
	assert_failure 4
	[[ $stderr == "mq-send: "*"No space left on device"* ]]
	assert_equal "${#lines[@]}" 2
	assert_equal "$(count new)" 2
	assert_equal "$(count tmp)" 0
	# The IDs printed are those of the messages queued.
	assert_equal "$(find "$MQ_DIR/new" -type f -exec basename {} \; |
	    cut -d, -f1 | sort | tr '\n' ' ')" "${lines[0]} ${lines[1]} "
	assert_equal "$(drain)" "$(printf '1\n2')"
}

@test "faults: a write error on the spool names the spool's file, not the input" {
	run --separate-stderr faulty 'write:errno=ENOSPC:at=/spool/tmp/' mq-send <<<"full"
	assert_failure 4
	assert_output ""
	[[ $stderr =~ ^mq-send:\ .*/spool/tmp/[0-9a-f]{16}\.[0-9]+\.[0-9a-f]{12}:\ No\ space\ left\ on\ device$ ]]
	assert_equal "$(count tmp)" 0
	assert_equal "$(count new)" 0
}

@test "faults: mq-send -l: a write error on the spool names the spool's file" {
	run --separate-stderr faulty 'write:errno=ENOSPC:at=/spool/tmp/:nth=2' \
	    mq-send -l < <(printf 'a\nb\nc\n')
	assert_failure 4
	[[ $stderr =~ ^mq-send:\ .*/spool/tmp/[0-9a-f]{16}\.[0-9]+\.[0-9a-f]{12}:\ No\ space\ left\ on\ device$ ]]
	assert_equal "$(count tmp)" 0
	assert_equal "$(count new)" "${#lines[@]}"
}

@test "faults: mq-send -l leaves no tmp/ file when creating one fails" {
	printf '%s\n' 1 2 3 4 5 >"$BATS_TEST_TMPDIR/in"
	run --separate-stderr faulty 'openat:errno=EMFILE:nth=3:at=/spool/tmp/' \
	    mq-send -l "$BATS_TEST_TMPDIR/in"
	assert_failure 4
	[[ $stderr =~ ^mq-send:\ .*/spool/tmp/[0-9a-f]{16}\.[0-9]+\.[0-9a-f]{12}:\ Too\ many\ open\ files$ ]]
	assert_equal "$(count tmp)" 0
	assert_equal "$(count new)" "${#lines[@]}"
}

@test "faults: a failing syncfs of a batch queues nothing, prints nothing, leaves no tmp/ file" {
	printf '%s\n' a b >"$BATS_TEST_TMPDIR/in"
	run --separate-stderr faulty 'syncfs:errno=EIO' mq-send -l "$BATS_TEST_TMPDIR/in"
	assert_failure 4
	assert_output ""
	assert_equal "$(count new)" 0
	assert_equal "$(count tmp)" 0
}

@test "mq-recv -w: a spool removed before the watch on it is in place still ends the wait (4)" {
	for mode in plain worker; do
		mq-send -l </dev/null
		set -- mq-recv -w
		[ "$mode" = plain ] || set -- mq-recv -w -- true
		# The removal falls between opening new/ and watching it.
		LD_PRELOAD="$so" MQ_FAULT='inotify_init1:delay=1s' \
		    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		    "$@" 2>"$BATS_TEST_TMPDIR/err" &
		remove_spool_under $!
		assert_equal "$st" 4
		assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" "mq-recv: $MQ_DIR: spool removed"
	done
}

@test "faults: mq-ack -e that shortens a lease exits 0 when the bell for waiters cannot be rung" {
	echo x | mq-send >/dev/null
	r=$(mq-recv -t 60)
	run -0 --separate-stderr faulty 'futimens:errno=EIO' mq-ack -e 1 "$r"
	[ -z "$stderr" ]
	assert_file_exist "$output"
	assert_file_not_exist "$r"
}

@test "faults: an error in the middle of a claim is an error (4), not an empty queue" {
	echo x | mq-send >/dev/null
	# The spool moves away while mq-recv lists cur/: the receipt's path
	# can no longer be found when the message is claimed.
	faulty 'openat:delay=1s:at=/cur/.:times=1' mq-recv \
	    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	sleep 0.5
	mv "$MQ_DIR" "$MQ_DIR.moved"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 4
	[[ $(cat "$BATS_TEST_TMPDIR/err") == *"No such file or directory"* ]]
}

@test "faults: a waiting receiver woken by each directory a sender makes does not remove them under it" {
	mq-recv -w 20 >"$BATS_TEST_TMPDIR/out" &
	pid=$!
	new="$(cd "$MQ_DIR" && pwd -P)/new"
	for _ in $(seq 1 200); do holds_new "$pid" "$new" && break; sleep 0.05; done
	# Each level the sender makes wakes the receiver, which looks before
	# the next level is made.
	run -0 --separate-stderr faulty 'mkdirat:delay=100ms:at=/new/' mq-send <<<x
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(cat "$(cat "$BATS_TEST_TMPDIR/out")")" x
}

# Memory run out inside the core (fault.so's malloc, glibc only) is ENOMEM
# there: the program that ran out says so and exits as for any system
# error, its spool as it was.  After 200 allocations (a program makes a
# handful before it calls the core), what fails is mq-ls's listing of a
# leaf of 2000 names; mq-dlq's of dead/ grows by doubling, so its memory
# runs out there or in the reasons it reads next, each one named.
@test "faults: memory run out in the core is mq-ls's and mq-dlq ls's error (4), not a crash" {
	if grep -q __asan_init "$(bin_of mq-ls)"; then
		skip "AddressSanitizer's strdup allocates past fault.so's malloc"
	fi
	[ -z "${MQ_VALGRIND:-}" ] || skip "valgrind's allocator takes fault.so's place"
	seq 1 2000 | mq-send -l >/dev/null
	run --separate-stderr faulty 'malloc:errno=ENOMEM:after=200' mq-ls
	assert_failure 4
	assert_output ""
	assert_equal "$stderr" "mq-ls: $MQ_DIR: Cannot allocate memory"
	assert_equal "$(count new)" 2000
	# The same messages as dead letters.
	mq-conf -f ttl=1 >/dev/null
	sleep 1.1
	mq-sweep
	assert_equal "$(count dead)" 2000
	run --separate-stderr faulty 'malloc:errno=ENOMEM:after=200' mq-dlq ls
	assert_failure 4
	[ -n "$stderr" ]
	while IFS= read -r line; do
		[[ $line =~ ^mq-dlq:\ ("$MQ_DIR/dead"|reason/[0-9a-f]{16}\.[0-9]+\.[0-9a-f]{12}):\ Cannot\ allocate\ memory$ ]] ||
		    fail "not an ENOMEM of the core's: $line"
	done <<<"$stderr"
	assert_equal "$(count dead)" 2000
}
