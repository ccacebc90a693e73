# mq-test: long (under valgrind; tests/run starts it first)
load helper

@test "mq-recv: an empty queue exits 1 silently" {
	mq-send -l </dev/null >/dev/null
	run -1 --separate-stderr mq-recv
	assert_output ""
	[ -z "$stderr" ]
}

@test "mq-recv: a missing spool is an error (4) and is not created" {
	run -4 --separate-stderr mq-recv
	[[ $stderr == "mq-recv: "*"spool"* ]]
	assert_not_exist "$MQ_DIR"
}

@test "mq-recv: a directory that is not a spool is an error (4)" {
	mkdir -p "$MQ_DIR"
	run -4 --separate-stderr mq-recv
	[[ $stderr == *"not a spool"* ]]
}

@test "mq-recv: receipts are absolute paths of claimed files in cur/" {
	echo hi | mq-send >/dev/null
	run mq-recv
	assert_success
	[[ $output == "$(cd "$MQ_DIR" && pwd -P)/cur/"* ]]
	assert_file_exist "$output"
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 1
}

@test "mq-recv: messages come out oldest first (FIFO)" {
	seq 1 40 | mq-send -l >/dev/null
	for _ in 1 2 3; do seq 41 50 | mq-send -l >/dev/null; done
	run drain
	assert_equal "$(printf '%s\n' "${lines[@]}" | head -n 40 | tr '\n' ' ')" "$(seq 1 40 | tr '\n' ' ')"
}

@test "mq-recv -n: claims up to N, one receipt per line, oldest first" {
	seq 1 5 | mq-send -l >/dev/null
	run mq-recv -n 3
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_equal "$(cat "${lines[0]}" "${lines[1]}" "${lines[2]}")" 123
	run mq-recv -n 10
	assert_equal "${#lines[@]}" 2
	run -1 mq-recv -n 10
}

@test "mq-recv -0: receipts end with NUL" {
	seq 1 3 | mq-send -l >/dev/null
	mq-recv -n 3 -0 >"$BATS_TEST_TMPDIR/out"
	assert_equal "$(tr -cd '\0' <"$BATS_TEST_TMPDIR/out" | wc -c)" 3
	assert_equal "$(tr -cd '\n' <"$BATS_TEST_TMPDIR/out" | wc -c)" 0
}

@test "mq-recv: a claimed message is not handed out again while its lease runs" {
	echo once | mq-send >/dev/null
	mq-recv -t 30 >/dev/null
	run -1 mq-recv
}

@test "mq-recv -t: an expired lease is handed out again with a higher attempt" {
	echo again | mq-send >/dev/null
	r1=$(mq-recv -t 0.3)
	[[ $r1 == *,1 ]]
	sleep 0.5
	r2=$(mq-recv)
	[[ $r2 == *,2 ]]
	assert_equal "$(cat "$r2")" again
	assert_not_exist "$r1"
}

@test "mq-recv: the ID stays the same across claims" {
	id=$(echo x | mq-send)
	r1=$(mq-recv -t 0.2); sleep 0.4; r2=$(mq-recv)
	[[ ${r1##*/} == "$id,"* ]]
	[[ ${r2##*/} == "$id,"* ]]
}

@test "mq-recv -m: a message that already had MAX attempts goes to dead/ with 'max attempts'" {
	id=$(echo poison | mq-send)
	for _ in 1 2; do mq-recv -t 0.1 -m 2 >/dev/null; sleep 0.2; done
	run -1 --separate-stderr mq-recv -m 2
	[ -z "$stderr" ]
	assert_equal "$(count dead)" 1
	run mq-dlq ls
	assert_output --partial "$id"
	assert_output --partial "max attempts"
	[[ ${lines[0]} == "$id	2	"* ]]
}

@test "mq-recv -w SECS: waits, then exits 1 when nothing came" {
	mq-send -l </dev/null >/dev/null
	SECONDS=0
	run -1 mq-recv -w 1
	[ "$SECONDS" -ge 1 ]
}

@test "mq-recv -w: a waiting receiver wakes on a new message" {
	mq-send -l </dev/null >/dev/null
	(sleep 0.5; echo wake | mq-send >/dev/null) &
	run mq-recv -w 20
	assert_success
	assert_equal "$(cat "$output")" wake
	wait
}

@test "mq-recv -w: the next word is its seconds when it is a number" {
	mq-send -l </dev/null >/dev/null
	run -1 mq-recv -w 0.2
	run -1 mq-recv -w0.2
	run -2 mq-recv -w 0.2 extra
}

@test "mq-recv -w: wakes when a delayed message becomes due" {
	mq-send -D 1 <<<"due" >/dev/null
	run mq-recv -w 10
	assert_success
	assert_equal "$(cat "$output")" due
}

@test "mq-recv -w: wakes when a lease expires" {
	echo lease | mq-send >/dev/null
	mq-recv -t 1 >/dev/null
	run mq-recv -w 10
	assert_success
	[[ $output == *,2 ]]
}

@test "mq-recv -w: a lease made shorter by mq-ack -e wakes the waiter" {
	echo short | mq-send >/dev/null
	r=$(mq-recv -t 60)
	start=$(date +%s%N)
	mq-recv -w 10 >"$BATS_TEST_TMPDIR/out" &
	pid=$!
	# Let it compute its wake-up from the 60 s lease first: it has opened
	# the spool, then looked, then sleeps.
	new="$(cd "$MQ_DIR" && pwd -P)/new"
	for _ in $(seq 1 200); do holds_new "$pid" "$new" && break; sleep 0.05; done
	sleep 0.5
	mq-ack -e 1 "$r" >/dev/null
	wait "$pid"
	elapsed=$((($(date +%s%N) - start) / 1000000))
	[[ $(cat "$BATS_TEST_TMPDIR/out") == *,2 ]]
	# Woken when the new lease ran out, not at the end of its wait (10 s).
	[ "$elapsed" -lt 6000 ]
}

@test "mq-recv -w: a spool that does not exist yet is waited for" {
	(sleep 0.5; echo first | mq-send >/dev/null) &
	run --separate-stderr timeout 20 mq-recv -w 10
	wait
	assert_success
	assert_equal "$(cat "$output")" first
}

@test "mq-recv -w SECS: a spool still missing after the wait is an error (4), not created" {
	run -4 --separate-stderr mq-recv -w 0.3
	assert_equal "${stderr_lines[0]}" "mq-recv: $MQ_DIR: waiting for the spool to be made"
	assert_equal "${stderr_lines[1]}" "mq-recv: $MQ_DIR: No such file or directory"
	assert_not_exist "$MQ_DIR"
}

@test "mq-recv -w: a spool removed while waiting ends the wait (4)" {
	for how in inotify poll; do
		mq-send -l </dev/null >/dev/null
		MQ_WAIT=$how mq-recv -w 2>"$BATS_TEST_TMPDIR/err" &
		remove_spool_under $!
		assert_equal "$st" 4
		assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" "mq-recv: $MQ_DIR: spool removed"
	done
}

@test "mq-recv: a bad -w, a stray operand and a too short lease say what is wrong" {
	mq-send -l </dev/null >/dev/null
	run -2 --separate-stderr mq-recv -w x
	assert_equal "$stderr" "mq-recv: -w x: invalid (seconds, or none to wait forever)"
	run -2 --separate-stderr mq-recv -w 5x
	assert_equal "$stderr" "mq-recv: -w 5x: not a duration (90, 1.5, 250ms, 90s, 1.5m, 2h, 1d)"
	run -2 --separate-stderr mq-recv stray
	assert_equal "${stderr_lines[0]}" "mq-recv: stray: unexpected operand (a command to run follows --)"
	run -2 --separate-stderr mq-recv -t 0
	assert_equal "$stderr" "mq-recv: -t 0: too small (the least is 0.001)"
	run -1 mq-recv -t 0.001
}

@test "mq-recv: bad numbers are usage errors (2)" {
	echo x | mq-send >/dev/null
	for a in "-n 0" "-n -1" "-n x" "-n 99999999999" "-t 0" "-t -1" "-t x" \
	    "-m 0" "-m -3" "-m 1e3" "-w x"; do
		# shellcheck disable=SC2086 # an option and its argument
		run -2 mq-recv $a
	done
	assert_equal "$(count new)" 1
}

@test "mq-recv: foreign names in new/ and cur/ are skipped and kept" {
	echo real | mq-send >/dev/null
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	touch "$leaf/.hidden" "$leaf/junk~" "$leaf/#x#" "$leaf/notanid,0" \
	    "$MQ_DIR/new/stray" "$MQ_DIR/cur/stray"
	mkdir "$MQ_DIR/cur/notabucket"
	r=$(mq-recv)
	assert_equal "$(cat "$r")" real
	run -1 mq-recv
	assert_file_exist "$leaf/.hidden" "$leaf/junk~" "$leaf/#x#" \
	    "$leaf/notanid,0" "$MQ_DIR/new/stray" "$MQ_DIR/cur/stray"
}

@test "mq-recv: a FIFO or symlink under a message's name is never handed out or followed" {
	echo real | mq-send >/dev/null
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	mkfifo "$leaf/0000000000000001.1.000000000001,0"
	echo secret >"$BATS_TEST_TMPDIR/secret"
	ln -s "$BATS_TEST_TMPDIR/secret" "$leaf/0000000000000002.1.000000000002,0"
	run timeout 5 mq-recv -n 5
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_equal "$(cat "$output")" real
	assert_equal "$(cat "$BATS_TEST_TMPDIR/secret")" secret
}

@test "mq-recv -w: the polling fallback (MQ_WAIT=poll) wakes on a new message too" {
	mq-send -l </dev/null >/dev/null
	(sleep 0.5; echo polled | mq-send >/dev/null) &
	MQ_WAIT=poll run mq-recv -w 20
	assert_success
	assert_equal "$(cat "$output")" polled
	wait
}

@test "mq-recv -w: waiting uses no CPU (event-driven, not a busy loop)" {
	mq-send -l </dev/null >/dev/null
	mq-recv -w 2 || true &
	pid=$!
	sleep 1.5
	ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	wait
	[ "$ticks" -le 5 ]
}

@test "mq-recv -w on a spool that does not exist says once, without -v, that it waits for it" {
	run -4 --separate-stderr timeout -k 5 20 mq-recv -w 0.5 -d "$BATS_TEST_TMPDIR/wrok"
	assert_equal "${stderr_lines[0]}" "mq-recv: $BATS_TEST_TMPDIR/wrok: waiting for the spool to be made"
	assert_equal "${#stderr_lines[@]}" 2
	assert_not_exist "$BATS_TEST_TMPDIR/wrok"
}
