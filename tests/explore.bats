# mq-test: long (tests/run starts it first)
load helper

# Every crash state of one run of each command that changes a spool, as
# tests/crash/explore builds them from the command's system calls under
# its persistence model (data and names not synced may or may not have
# reached the disk, in any combination), each checked with
# tests/crash/check against what the setup and the command had promised.
# The explorer runs once, for every command, in setup_file; each test
# reads the lines of its commands:
#
#	explore: NAME: P points, S states, V violations
#
# and wants no violation, and at least a floor of states for each (a
# trace read wrong, or a set-up that does not reach the code it is for,
# would explore next to nothing: the explorer also stops with an error
# when the tree its reading of the trace gives is not the one the run
# left, or when the run did not make the operations it is there for).

explore_out="$BATS_FILE_TMPDIR/explore.out"

setup_file() {
	local why=
	if ! command -v strace >/dev/null; then
		why="strace is not installed"
	elif ! strace -f -o /dev/null true 2>/dev/null; then
		why="strace cannot trace here (ptrace refused)"
	elif ! command -v faketime >/dev/null; then
		why="faketime is not installed"
	fi
	if [ -n "$why" ]; then
		echo "$why" >"$BATS_FILE_TMPDIR/skip"
		return 0
	fi
	st=0
	timeout -k 10 1100 python3 "$BATS_TEST_DIRNAME/crash/explore" --report 4 \
	    >"$explore_out" 2>&1 || st=$?
	echo "$st" >"$BATS_FILE_TMPDIR/status"
}

# The violations the explorer printed for command $1, in full.
violations() {
	awk -v n="VIOLATION $1:" 'index($0, n) == 1 { on = 1; print; next }
	    on && /^  / { print; next } { on = 0 }' "$explore_out"
	grep -E "^explore: $1: violations by kind" "$explore_out" || true
}

# explored NAME FLOOR ...: each command NAME explored, at least FLOOR
# states, no violation.
explored() {
	local name floor line states viol
	[ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	while [ $# -gt 0 ]; do
		name=$1 floor=$2
		shift 2
		line=$(grep -E "^explore: $name: [0-9]+ points, [0-9]+ states, [0-9]+ violations$" "$explore_out") ||
		    fail "no result for $name: $(grep -E "^explore: ($name|total):" "$explore_out")"
		states=$(sed -E 's/.* ([0-9]+) states.*/\1/' <<<"$line")
		viol=$(sed -E 's/.* ([0-9]+) violations$/\1/' <<<"$line")
		[ "$states" -ge "$floor" ] ||
		    fail "$name: $states states explored, fewer than $floor: was the trace read?"
		[ "$viol" -eq 0 ] || fail "$line
$(violations "$name")"
	done
}

@test "explore: mq-send of one message: no crash state loses or tears a message once its ID is printed" {
	explored send 5
}

@test "explore: mq-send -l, -D and -p: each ID printed is durable, whole, once" {
	explored send-lines 40 send-delay 5 send-priority 7
}

@test "explore: mq-send -k: a free key taken, a held key refused, no key held twice" {
	explored send-key 7 send-key-held 3
}

@test "explore: mq-ack then mq-send -k of the key it held: the ack is durable before the key is taken" {
	explored send-key-acked 20
}

@test "explore: mq-send -g: a new group's head and a message parked behind a head" {
	explored send-group 12 send-group-parked 6
}

@test "explore: mq-send -d A -d B: the message printed is in both spools after any crash" {
	explored send-fanout 11
}

@test "explore: mq-recv -n 2: a claim into a new lease bucket leaves each message in one state" {
	explored recv 4
}

@test "explore: mq-ack: an acknowledgement cut anywhere loses no other message" {
	explored ack 3
}

@test "explore: mq-ack -r --reason: the released message is ready or in flight, never lost" {
	explored release 8
}

@test "explore: mq-ack -x: a burial leaves a dead letter with its reason, or the message in flight" {
	explored bury 8
}

@test "explore: mq-ack -e: an extended lease's message is in one bucket or the other, never lost" {
	explored extend 2
}

@test "explore: mq-ack of a group's head: the head gone or back, the next promoted or parked, never lost or stuck" {
	explored ack-group-head 20
}

@test "explore: mq-send into a full spool with overflow=drop-oldest: the oldest buried as maxlen, the new one kept" {
	explored send-drop-oldest 100
}

@test "explore: worker mode: a job that succeeds is acknowledged, nothing else lost" {
	explored worker-ok 3
}

@test "explore: worker mode: a job that fails is released, one that exits 65 buried, each once" {
	explored worker-fail 9 worker-dead 9
}

@test "explore: mq-sweep: an expired lease reclaimed, a message past its ttl buried, tmp debris removed" {
	explored sweep 100
}

@test "explore: a claim that buries a message for max attempts keeps it, with its reason" {
	explored bury-attempts 10
}

@test "explore: mq-dlq redrive --all: each message kept, with the deaths promised" {
	explored dlq-redrive 35
}

@test "explore: mq-dlq purge and mq-rm: nothing but the message removed can go" {
	explored dlq-purge 4 rm 2
}

@test "explore: mq-conf lease=45: the new setting once it exited 0, the others always" {
	explored conf 3
}

@test "explore: every command was set up, traced and read, and the explorer exits 0" {
	[ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	run grep -E '^explore: [^:]+: ERROR' "$explore_out"
	assert_failure
	run grep -E '^explore: total: [0-9]+ commands, [0-9]+ points, [0-9]+ states, 0 violations, 0 errors' "$explore_out"
	assert_success
	[ "$(cat "$BATS_FILE_TMPDIR/status")" = 0 ]
}

# The explorer must see a loss where there is one: a sender that writes
# and renames without fsync, then prints the ID.
@test "explore: a sender that never syncs is caught: its printed message lost or torn" {
	[ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	run -1 timeout -k 10 300 python3 "$BATS_TEST_DIRNAME/crash/explore" --report 1 unsafe-writer
	assert_output --regexp 'explore: unsafe-writer: [0-9]+ points, [0-9]+ states, [1-9][0-9]* violations'
	assert_output --regexp '  (lost|torn): S: [0-9a-f]{16}\.'
	assert_output --partial 'explore: total: 1 commands'
}

@test "explore: mq-send under eatmydata (fsync a no-op) is caught" {
	[ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	command -v eatmydata >/dev/null || skip "eatmydata is not installed"
	run -1 timeout -k 10 300 python3 "$BATS_TEST_DIRNAME/crash/explore" --report 1 unsafe-eatmydata
	assert_output --regexp 'explore: unsafe-eatmydata: [0-9]+ points, [0-9]+ states, [1-9][0-9]* violations'
	assert_output --regexp '  (lost|torn): S: [0-9a-f]{16}\.'
}
