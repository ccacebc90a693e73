load helper

@test "mq-sweep: expired leases go back to new/" {
	seq 1 3 | mq-send -l >/dev/null
	mq-recv -n 3 -t 0.1 >/dev/null
	sleep 0.3
	run --separate-stderr mq-sweep
	assert_success
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 3
	run mq-recv
	[[ $output == *,2 ]]
}

@test "mq-sweep: a lease still running is left alone" {
	echo x | mq-send >/dev/null
	r=$(mq-recv -t 60)
	mq-sweep
	assert_file_exist "$r"
}

@test "mq-sweep -m: an expired lease at MAX attempts goes to dead/" {
	id=$(echo x | mq-send)
	mq-recv -t 0.1 >/dev/null; sleep 0.2
	mq-recv -t 0.1 >/dev/null; sleep 0.2
	mq-sweep -m 2
	assert_equal "$(count dead)" 1
	assert_equal "$(count new)" 0
	run mq-dlq ls
	[[ $output == "$id	2	"*"	max attempts	"* ]]
}

@test "mq-sweep -m: an expired lease at MAX attempts is buried with the last reason its releases gave" {
	id=$(echo x | mq-send)
	r=$(mq-recv)
	mq-ack -r --reason "exit 3: connection refused" "$r"
	mq-recv -t 60 >/dev/null
	run -0 --separate-stderr ahead 61 mq-sweep -m 2 -v
	[[ $stderr == *"$id: dead: max attempts"* ]]
	run -0 mq-dlq ls
	[[ $output == "$id	2	"*"	max attempts; last: exit 3: connection refused	"* ]]
	run -0 mq-dlq ls --json
	[[ $output == *"\"reason\":\"max attempts; last: exit 3: connection refused\""* ]]
}

@test "mq-sweep -v: says what it moved" {
	id=$(echo x | mq-send)
	mq-recv -t 0.1 >/dev/null; sleep 0.2
	run --separate-stderr mq-sweep -v
	[[ $stderr == "mq-sweep: $id: lease expired"* ]]
}

@test "mq-sweep: tmp/ fragments older than 36 hours are removed, younger ones kept" {
	mq-send </dev/null >/dev/null
	old="$MQ_DIR/tmp/0000000000000001.1.000000000001"
	young="$MQ_DIR/tmp/0000000000000002.1.000000000002"
	touch -d '-37 hours' "$old"
	touch -d '-35 hours' "$young"
	mq-sweep
	assert_not_exist "$old"
	assert_file_exist "$young"
}

@test "mq-sweep: foreign files are never deleted" {
	mq-send </dev/null >/dev/null
	mkdir "$MQ_DIR/last"
	for f in tmp/.x tmp/junk~ tmp/notes new/readme cur/x dead/y reason/z last/z; do
		touch -d '-40 hours' "$MQ_DIR/$f"
	done
	mq-sweep
	for f in tmp/.x tmp/junk~ tmp/notes new/readme cur/x dead/y reason/z last/z; do
		assert_file_exist "$MQ_DIR/$f"
	done
}

@test "mq-sweep -i: sweeps again every SECS until killed" {
	echo x | mq-send >/dev/null
	mq-sweep -i 0.2 &
	pid=$!
	mq-recv -t 0.1 >/dev/null
	sleep 0.8
	kill "$pid"
	wait "$pid" || true
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 1
}

@test "mq-sweep: a missing spool is an error (4); bad numbers are usage errors (2)" {
	run -4 mq-sweep
	assert_not_exist "$MQ_DIR"
	mq-send </dev/null >/dev/null
	run -2 mq-sweep -m 0
	run -2 mq-sweep -i 0
	run -2 mq-sweep -i x
	run -2 mq-sweep -i
	run -2 mq-sweep extra
}

@test "mq-sweep: empty directories of new/ whose time has passed are removed" {
	mq-send -D 3600 <<<"later" >/dev/null
	mkdir -p "$MQ_DIR/new/00001/00001000/00001000000"
	mq-sweep
	assert_not_exist "$MQ_DIR/new/00001"
	assert_equal "$(count new)" 1
}

@test "mq-sweep: an old reason whose dead letter is gone is removed; a dead letter's reason is kept" {
	id=$(echo x | mq-send)
	r=$(mq-recv)
	mq-ack -x kept "$r"
	orphan="$MQ_DIR/reason/0000000000000001.1.000000000001"
	echo lost >"$orphan"
	touch -d '-37 hours' "$orphan" "$MQ_DIR/reason/$id"
	run --separate-stderr mq-sweep -v
	assert_success
	[[ $stderr == *"0000000000000001.1.000000000001: orphan reason removed"* ]]
	assert_not_exist "$orphan"
	assert_file_exist "$MQ_DIR/reason/$id"
	run mq-dlq ls
	assert_output --partial kept
}

@test "mq-sweep: an old reason of a released message is kept, waiting or in flight; one whose message was acked is removed" {
	printf 'a\nb\nc\n' | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	for _ in 1 2 3; do
		r=$(mq-recv)
		mq-ack -r 3600 --reason "why $(cat "$r")" "$r"
	done
	{ read -r a; read -r b; read -r c; } <"$BATS_TEST_TMPDIR/ids"
	r=$(ahead 3601 mq-recv -t 600)		# a: in flight again
	ahead 3601 mq-ack "$(ahead 3601 mq-recv)"	# b: acked
	touch -d '-37 hours' "$MQ_DIR/last"/*
	run -0 --separate-stderr ahead 3602 mq-sweep -v
	[[ $stderr == *"$b: orphan last reason removed"* ]]
	[[ $stderr != *"$a: orphan"* ]]
	[[ $stderr != *"$c: orphan"* ]]
	assert_not_exist "$MQ_DIR/last/$b"
	assert_not_exist "$MQ_DIR/reason"/*
	assert_equal "$(cat "$MQ_DIR/last/$a")" "why a"
	assert_equal "$(cat "$MQ_DIR/last/$c")" "why c"
	# The live ones' are not looked for again at the next sweep.
	assert_equal "$(find "$MQ_DIR/last" -type f -mmin +60 | wc -l)" 0
	ahead 3602 mq-ack -r --reason "why a, again" "$r"
	assert_equal "$(cat "$MQ_DIR/last/$a")" "why a, again"
}

@test "mq-sweep -i: its seconds are a duration; -w, which waits in the other tools, is refused naming -i" {
	echo x | mq-send >/dev/null
	mq-recv -t 0.1 >/dev/null
	sleep 0.3
	# Still running after its first sweep: a service, not a usage error.
	run -124 timeout 3 mq-sweep -i 1m
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 1
	run -124 timeout 0.5 mq-sweep -i0.1
	run -2 --separate-stderr mq-sweep -i x
	assert_equal "$stderr" "mq-sweep: -i x: not a duration (90, 1.5, 250ms, 90s, 1.5m, 2h, 1d)"
	for w in -w "-w 60" -w60; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr mq-sweep $w
		assert_equal "$stderr" "mq-sweep: -w is now -i secs (sweep again every secs)"
	done
}

@test "mq-sweep: a message released with a fresh reason while the sweep walks the spool keeps it" {
	id=$(echo job | mq-send)
	r=$(mq-recv)
	mq-ack -r --reason old "$r"
	r=$(mq-recv -t 600)
	# Its reason old enough for a sweep to look for its message.
	find "$MQ_DIR" -mindepth 2 -maxdepth 2 \( -path "$MQ_DIR/last/$id" -o \
	    -path "$MQ_DIR/reason/$id" \) -exec touch -d '-37 hours' {} +
	# Stopped in its walk past new/, before the messages in flight, while
	# the holder releases it (cur/ -> new/) with a fresh reason; then let
	# go at each later stop there (each walk stops there more than once).
	race_at mq-sweep groups_pass "-v" "mq-ack -r --reason fresh $r" 12
	[[ $output == *"Breakpoint 1"* ]] || fail "groups_pass was not reached: $output"
	[[ $output == *"exited normally"* ]] || fail "mq-sweep failed: $output"
	[[ $output != *"$id: orphan"* ]] || fail "$output"
	run -1 --separate-stderr mq-recv -m 2
	run -0 mq-dlq ls
	[[ $output == "$id	2	"*"	max attempts; last: fresh	"* ]] || fail "$output"
}

@test "mq-sweep: an old last reason beside a dead letter, or of a message removed, is removed" {
	printf 'a\nb\n' | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	{ read -r a; read -r b; } <"$BATS_TEST_TMPDIR/ids"
	mkdir -p "$MQ_DIR/last"
	for id in "$a" "$b"; do echo "old $id" >"$MQ_DIR/last/$id"; done
	mq-ack -x gone "$(mq-recv)"			# a: a dead letter
	mq-rm "$b"					# b: in no state
	for id in "$a" "$b"; do echo "old $id" >"$MQ_DIR/last/$id"; done
	touch -d '-37 hours' "$MQ_DIR/last"/*
	run -0 --separate-stderr mq-sweep -v
	[[ $stderr == *"$a: orphan last reason removed"* ]] || fail "$stderr"
	[[ $stderr == *"$b: orphan last reason removed"* ]] || fail "$stderr"
	assert_not_exist "$MQ_DIR/last/$a"
	assert_not_exist "$MQ_DIR/last/$b"
	run -0 mq-dlq ls
	[[ $output == "$a	1	"*"	gone	"* ]] || fail "$output"
}

@test "mq-sweep: a last reason replaced by a fresh one between the sweep's walk and its removal is kept" {
	id=$(echo job | mq-send)
	mq-ack -x gone "$(mq-recv)"
	mkdir -p "$MQ_DIR/last"
	echo stale >"$MQ_DIR/last/$id"
	touch -d '-37 hours' "$MQ_DIR/last/$id"
	# Stopped as it is about to remove the stale one beside the dead
	# letter, while the message is redriven, claimed and released with
	# a fresh reason.
	race_at mq-sweep mq_reason_remove_same "-v" \
	    "mq-dlq redrive $id >/dev/null && mq-ack -r --reason fresh \$(mq-recv)"
	[[ $output == *"Breakpoint 1"* ]] || fail "mq_reason_remove_same was not reached: $output"
	[[ $output == *"exited normally"* ]] || fail "mq-sweep failed: $output"
	[[ $output != *"$id: orphan"* ]] || fail "$output"
	assert_equal "$(cat "$MQ_DIR/last/$id")" fresh
	assert_equal "$(count tmp)" 0
}

@test "mq-sweep: expired messages buried in a run share one sync of reason/ per 64, each synced before its rename" {
	command -v strace >/dev/null || skip "strace is not installed"
	seq 1 100 | mq-send -l --ttl 1 >/dev/null
	root=$(cd "$MQ_DIR" && pwd -P)
	ASAN_OPTIONS=detect_leaks=0 run ahead 10 strace -f -y -e trace=fsync,renameat,renameat2 \
	    -o "$BATS_TEST_TMPDIR/trace" mq-sweep
	assert_success
	assert_equal "$(count dead)" 100
	assert_equal "$(mq-dlq ls --json | grep -c '"reason":"ttl"')" 100
	# Two syncs of reason/ for 100 (64, then 36), each before its renames.
	run -0 grep -E "fsync\([0-9]+<$root/reason>\)|<$root/dead>" "$BATS_TEST_TMPDIR/trace"
	assert_equal "$(grep -c fsync <<<"$output")" 2
	assert_line --index 0 --regexp 'fsync'
	assert_line --index 65 --regexp 'fsync'
}
