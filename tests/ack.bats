load helper

@test "mq-ack: done deletes the message" {
	echo job | mq-send >/dev/null
	r=$(mq-recv)
	run --separate-stderr mq-ack "$r"
	assert_success
	[ -z "$output" ] && [ -z "$stderr" ]
	assert_not_exist "$r"
	assert_equal "$(count cur)" 0
	run -1 mq-recv
}

@test "mq-ack: a stale receipt exits 3 with 'lease lost' and does not touch the redelivered message" {
	echo hi | mq-send >/dev/null
	r=$(mq-recv -t 0.2); sleep 0.4
	r2=$(mq-recv -t 60)
	run -3 --separate-stderr mq-ack "$r"
	assert_output ""
	[[ $stderr == "mq-ack: cur/"*": already acked, or lease lost" ]]
	assert_file_exist "$r2"
	mq-ack "$r2"
}

@test "mq-ack: an acked receipt used again is a lost lease (3)" {
	echo hi | mq-send >/dev/null
	r=$(mq-recv)
	mq-ack "$r"
	run -3 --separate-stderr mq-ack "$r"
	assert_equal "$stderr" "mq-ack: cur/${r#*/cur/}: already acked, or lease lost"
}

# The lease lost between the look at the receipt and its settling (the
# message claimed again, swept or settled by another meanwhile): the
# unlink or rename that settles it finds the message gone.
@test "mq-ack: a lease lost at the ack's unlink is a lost lease (3), not an ack" {
	echo hi | mq-send >/dev/null
	r=$(mq-recv)
	run -3 --separate-stderr faulty 'unlinkat:errno=ENOENT:at=/cur/' mq-ack "$r"
	assert_output ""
	assert_equal "$stderr" "mq-ack: cur/${r#*/cur/}: already acked, or lease lost"
	assert_file_exist "$r"
}

@test "mq-ack -x: a lease lost at the burial's rename is a lost lease (3), nothing buried" {
	echo hi | mq-send >/dev/null
	r=$(mq-recv)
	run -3 --separate-stderr faulty 'renameat:errno=ENOENT:at=/cur/' mq-ack -x poison "$r"
	assert_equal "$stderr" "mq-ack: cur/${r#*/cur/}: already acked, or lease lost"
	assert_file_exist "$r"
	assert_equal "$(count dead)" 0
}

# A rename into new/ that fails with ENOENT while the message is still
# there is a leaf removed under it (retried): only the message gone for
# real reaches the lease lost, here acked by another meanwhile.
@test "mq-ack -r: a lease lost at the release's rename (acked meanwhile) is a lost lease (3)" {
	echo hi | mq-send >/dev/null
	r=$(mq-recv)
	race_at mq-ack mq_place_back "-r $r" "mq-ack $r"
	[[ $output == *"Breakpoint 1"* ]] || fail "mq_place_back was not reached: $output"
	[[ $output == *"already acked, or lease lost"* ]] || fail "no lease lost said: $output"
	[[ $output == *"exited with code 03"* ]] || fail "mq-ack -r did not exit 3: $output"
	assert_equal "$(count new)$(count cur)" 00
}

# A dead letter's reason is durable before the message moves into dead/.
@test "mq-ack -x: a reason that cannot be synced buries nothing (4): the lease stands, no reason is left" {
	echo hi | mq-send >/dev/null
	r=$(mq-recv)
	run -4 --separate-stderr faulty 'fsync:errno=EIO:at=,reason' mq-ack -x poison "$r"
	assert_equal "$stderr" "mq-ack: cur/${r#*/cur/}: Input/output error"
	assert_file_exist "$r"
	assert_equal "$(count dead)" 0
	assert_equal "$(find "$MQ_DIR" -name '*,reason' -o -path '*/reason/*' | wc -l)" 0
	mq-ack -x poison "$r"
	assert_equal "$(mq-dlq ls | cut -f 4)" poison
}

@test "mq-ack: an ID given for a receipt is refused (2) with what a receipt is" {
	id=$(echo hi | mq-send)
	r=$(mq-recv)
	run -2 --separate-stderr mq-ack "$id"
	assert_equal "$stderr" "mq-ack: $id: not a receipt (a receipt is the path mq-recv printed)"
	assert_file_exist "$r"
}

@test "mq-ack: without -d or MQ_DIR, each receipt names its own spool" {
	a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
	echo one | mq-send -d "$a" >/dev/null
	printf '%s\n' two three | mq-send -l -d "$b" >/dev/null
	ra=$(mq-recv -d "$a") rb=$(mq-recv -d "$b")
	r3=$(mq-recv -d "$b" -t 60)
	unset MQ_DIR
	export HOME=$BATS_TEST_TMPDIR/home
	run --separate-stderr mq-ack "$ra" "$rb"
	assert_success
	[ -z "$stderr" ]
	assert_not_exist "$ra" "$rb"
	run -3 mq-ack "$ra"
	# -e works there too, and a shortened lease is handed out when it ends.
	r4=$(mq-ack -e 0.2 "$r3")
	[[ $r4 == "$(cd "$b" && pwd -P)/cur/"* ]]
	sleep 0.4
	[[ $(mq-recv -d "$b") == *,2 ]]
	assert_not_exist "$HOME"
	# A path shaped like a receipt of no spool is not one.
	run -2 mq-ack "$BATS_TEST_TMPDIR/none/cur/1/x"
	# -d and MQ_DIR still choose, and a receipt of another spool is refused.
	echo four | mq-send -d "$a" >/dev/null
	r5=$(mq-recv -d "$a")
	run -2 mq-ack -d "$b" "$r5"
	MQ_DIR=$b run -2 mq-ack "$r5"
	assert_file_exist "$r5"
}

@test "mq-ack: an expired receipt nobody reclaimed may still be acked" {
	echo hi | mq-send >/dev/null
	r=$(mq-recv -t 0.1); sleep 0.3
	run mq-ack "$r"
	assert_success
	run -1 mq-recv
}

@test "mq-ack -r: release makes the message visible again, attempt kept" {
	echo retry | mq-send >/dev/null
	r=$(mq-recv)
	mq-ack -r "$r"
	r2=$(mq-recv)
	assert_equal "$(cat "$r2")" retry
	[[ $r2 == *,2 ]]
}

@test "mq-ack -r SECS: released message is invisible for SECS (next word or attached)" {
	echo later | mq-send >/dev/null
	r=$(mq-recv)
	mq-ack -r 600 "$r"
	run -1 mq-recv
	run -1 ahead 300 mq-recv
	r=$(ahead 601 mq-recv)
	assert_equal "$(cat "$r")" later
	ahead 601 mq-ack -r600 "$r"
	run -1 ahead 900 mq-recv
	run -0 ahead 1202 mq-recv
}

@test "mq-ack -x: dead-letters now with the reason" {
	id=$(echo bad | mq-send)
	r=$(mq-recv)
	mq-ack -x "bad input" "$r"
	assert_equal "$(count dead)" 1
	run -1 mq-recv
	run mq-dlq ls
	[[ ${lines[0]} == "$id	1	"*"	bad input	4	bad\\n" ]]
}

@test "mq-ack -e: extends the lease, prints the new receipt, the old one is stale" {
	echo long | mq-send >/dev/null
	# A lease long enough to outlast the next tool's start under valgrind.
	r=$(mq-recv -t 5)
	run mq-ack -e 60 "$r"
	assert_success
	r2=$output
	[ "$r2" != "$r" ]
	assert_file_exist "$r2"
	assert_not_exist "$r"
	sleep 0.7
	run -1 mq-recv
	run -3 mq-ack "$r"
	mq-ack "$r2"
}

@test "mq-ack: receipts come from standard input, one a line" {
	seq 1 5 | mq-send -l >/dev/null
	mq-recv -n 5 | mq-ack
	assert_equal "$(count cur)" 0
	run -1 mq-recv
}

@test "mq-ack -0: receipts on standard input are NUL-separated" {
	seq 1 5 | mq-send -l >/dev/null
	mq-recv -n 5 -0 | mq-ack -0
	assert_equal "$(count cur)" 0
}

@test "mq-ack: no receipts at all exits 1" {
	mq-send -l </dev/null >/dev/null
	run -1 mq-ack </dev/null
}

@test "mq-ack: more than one of -r, -x, -e is a usage error that changes nothing" {
	echo x | mq-send >/dev/null
	r=$(mq-recv)
	run -2 mq-ack -r -x why "$r"
	run -2 mq-ack -x why -e 5 "$r"
	run -2 mq-ack -e 5 -r 1 "$r"
	assert_file_exist "$r"
}

@test "mq-ack: bad numbers are usage errors" {
	echo x | mq-send >/dev/null
	r=$(mq-recv)
	run -2 mq-ack -e 0 "$r"
	run -2 mq-ack -e -1 "$r"
	run -2 mq-ack -e x "$r"
	run -2 mq-ack -r9999999999 "$r"
	assert_file_exist "$r"
}

@test "mq-ack: a file outside the spool is refused (2) and left untouched" {
	mq-send </dev/null >/dev/null
	echo precious >"$BATS_TEST_TMPDIR/other"
	run -2 --separate-stderr mq-ack "$BATS_TEST_TMPDIR/other"
	[[ $stderr == *"not a receipt"* ]]
	assert_equal "$(cat "$BATS_TEST_TMPDIR/other")" precious
}

@test "mq-ack: '..' escaping the spool is refused and the target untouched" {
	echo x | mq-send >/dev/null
	r=$(mq-recv)
	real=$(cd "$MQ_DIR" && pwd -P)
	mkdir -p "$BATS_TEST_TMPDIR/1795975896"
	name=${r##*/}
	echo precious >"$BATS_TEST_TMPDIR/1795975896/$name"
	for p in "$real/cur/../../1795975896/$name" "$real/cur/${r#*/cur/}/.." \
	    "$real/../spool/cur/${r#*/cur/}"; do
		run -2 mq-ack "$p"
	done
	assert_equal "$(cat "$BATS_TEST_TMPDIR/1795975896/$name")" precious
	assert_file_exist "$r"
}

@test "mq-ack: a symlink planted in cur/ is refused and its target untouched" {
	echo x | mq-send >/dev/null
	r=$(mq-recv)
	echo precious >"$BATS_TEST_TMPDIR/target"
	bucket=${r%/*}
	fake="$bucket/0000000000000001.1.000000000001,$(basename "$r" | cut -d, -f2),1"
	ln -s "$BATS_TEST_TMPDIR/target" "$fake"
	run -2 --separate-stderr mq-ack "$fake"
	[[ $stderr == *"not a regular file"* ]]
	assert_file_exist "$BATS_TEST_TMPDIR/target"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/target")" precious
	run -2 mq-ack -x why "$fake"
	assert_equal "$(count dead)" 0
}

@test "mq-ack: a dead letter's path is refused" {
	echo x | mq-send >/dev/null
	r=$(mq-recv)
	mq-ack -x why "$r"
	d=$(find "$MQ_DIR/dead" -type f)
	run -2 mq-ack "$d"
	assert_file_exist "$d"
}

@test "mq-ack: a receipt of another spool is refused" {
	echo x | mq-send -d "$BATS_TEST_TMPDIR/other" >/dev/null
	r=$(mq-recv -d "$BATS_TEST_TMPDIR/other")
	mq-send </dev/null >/dev/null
	run -2 mq-ack "$r"
	assert_file_exist "$r"
	run mq-ack -d "$BATS_TEST_TMPDIR/other" "$r"
	assert_success
}

@test "mq-ack: a directory given as receipt is refused" {
	mq-send </dev/null >/dev/null
	r=$(mq-recv)
	run -2 mq-ack "${r%/*}"
	run -2 mq-ack "$(dirname "${r%/*}")"
	assert_file_exist "$r"
}

@test "mq-ack: other receipts are still handled and the worst status wins" {
	seq 1 3 | mq-send -l >/dev/null
	mapfile -t rs < <(mq-recv -n 3)
	mq-ack "${rs[0]}"
	run -3 mq-ack "${rs[0]}" "${rs[1]}"
	assert_not_exist "${rs[1]}"
	run -2 mq-ack "${rs[0]}" /etc/passwd "${rs[2]}"
	assert_not_exist "${rs[2]}"
}

@test "mq-ack: a missing spool is an error (4)" {
	run -4 mq-ack /nonexistent/cur/1/x
	assert_not_exist "$MQ_DIR"
}

@test "mq-ack -v: says on stderr what it did with each receipt; stdout unchanged" {
	printf 'a\nb\nc\nd\n' | mq-send -l >/dev/null
	r1=$(mq-recv); r2=$(mq-recv); r3=$(mq-recv); r4=$(mq-recv)
	run --separate-stderr mq-ack -v "$r1"
	assert_success
	assert_output ""
	assert_equal "$stderr" "mq-ack: cur/${r1#*/cur/}: acked"
	run --separate-stderr mq-ack -v -r 60 "$r2"
	assert_equal "$stderr" "mq-ack: cur/${r2#*/cur/}: released"
	run --separate-stderr mq-ack -v -x bad "$r3"
	assert_equal "$stderr" "mq-ack: cur/${r3#*/cur/}: dead-lettered"
	run --separate-stderr mq-ack -v -e 60 "$r4"
	assert_success
	assert_equal "$stderr" "mq-ack: cur/${r4#*/cur/}: extended"
	[[ $output == "$MQ_DIR"*/cur/* ]]
	# A lost lease is reported as without -v, and nothing more.
	run -3 --separate-stderr mq-ack -v "$r1"
	assert_equal "$stderr" "mq-ack: cur/${r1#*/cur/}: already acked, or lease lost"
}

# Claims id's message and releases it with reason $1 (the rest: mq-ack's
# options), as a failed job would.
fail_with() {
	local why=$1 r
	shift
	r=$(mq-recv)
	mq-ack -r "$@" --reason "$why" "$r"
}

@test "mq-ack -r --reason: released to its last attempt, the claim that meets it buries it as 'max attempts; last: REASON'" {
	id=$(echo job | mq-send)
	for i in 1 2 3 4 5; do
		fail_with "exit $i: try $i"
	done
	run -1 --separate-stderr mq-recv
	run -0 mq-dlq ls
	[[ $output == "$id	5	"*"	max attempts; last: exit 5: try 5	4	job\\n" ]]
	run -0 mq-dlq ls --json
	[[ $output == *"\"reason\":\"max attempts; last: exit 5: try 5\""* ]]
}

@test "mq-ack -r SECS --reason: the optional seconds are still read, attached or the next word" {
	echo job | mq-send >/dev/null
	fail_with because 600
	run -1 mq-recv
	run -0 ahead 601 mq-recv
	ahead 601 mq-ack -r5 --reason again "$output"
	run -1 ahead 602 mq-recv
	run -0 ahead 607 mq-recv
}

@test "mq-ack --reason: without -r, or with -x or -e, a usage error (2) that changes nothing" {
	echo job | mq-send >/dev/null
	r=$(mq-recv -t 60)
	for opts in "" "-x dead" "-e 30"; do
		# shellcheck disable=SC2086 # the options are words
		run -2 --separate-stderr mq-ack $opts --reason why "$r"
		[[ $stderr == "mq-ack: --reason goes with -r"* ]]
		assert_file_exist "$r"
	done
	assert_equal "$(count dead)" 0
	assert_not_exist "$MQ_DIR/reason"/*
	assert_not_exist "$MQ_DIR/last"/*
	mq-ack "$r"
}

@test "mq-ack -r --reason: a reason with newlines and control characters is kept exactly (--json) and escaped in the text listing" {
	echo job | mq-send >/dev/null
	why=$(printf 'line1\nline2\x1b]0;pwned\x07 \\ "q"\tend')
	fail_with "$why"
	run -1 --separate-stderr mq-recv -m 1
	run -0 mq-dlq ls
	assert_equal "${#lines[@]}" 1
	[[ $output != *$'\x1b'* ]]
	assert_equal "$(cut -f 4 <<<"$output")" 'max attempts; last: line1\nline2\x1b]0;pwned\x07 \\ "q"\tend'
	run -0 mq-dlq ls --json
	reason=$(python3 -c 'import json, sys; sys.stdout.write(json.loads(sys.argv[1])["reason"])' "$output")
	assert_equal "$reason" "max attempts; last: $why"
}

@test "mq-ack -r without --reason keeps the last reason given; --reason '' drops it" {
	id=$(echo job | mq-send)
	fail_with "exit 3: db down"
	r=$(mq-recv)
	mq-ack -r "$r"
	run -1 --separate-stderr mq-recv -m 2
	run -0 mq-dlq ls
	[[ $output == "$id	2	"*"	max attempts; last: exit 3: db down	"* ]]
	mq-dlq redrive --all >/dev/null
	fail_with "exit 3: db down"
	fail_with ""
	run -1 --separate-stderr mq-recv -m 2
	run -0 mq-dlq ls
	[[ $output == "$id	2	"*"	max attempts	"* ]]
}

@test "mq-ack -r --reason on a receipt made stale by mq-ack -x meanwhile: lease lost (3), the dead letter keeps its own reason" {
	id=$(echo m | mq-send)
	r=$(mq-recv)
	# Stopped past its look at the lease, before it keeps its reason,
	# while another process dead-letters the message.
	race_at mq-ack mq_reason_keep "-r --reason 'exit 1' $r" \
	    "mq-ack -x 'poison: bad input' $r"
	[[ $output == *"Breakpoint 1"* ]] || fail "mq_reason_keep was not reached: $output"
	[[ $output == *"exited with code 03"* ]] || fail "mq-ack did not exit 3: $output"
	run -0 mq-dlq ls
	[[ $output == "$id	1	"*"	poison: bad input	"* ]] || fail "$output"
	# The late reason is taken back: none is left beside the dead letter.
	assert_not_exist "$MQ_DIR/last/$id"
}

@test "mq-ack -r --reason with no room for the reason: released all the same, with a warning (exit 0); the earlier reason does not stand for it" {
	id=$(echo job | mq-send)
	fail_with "first"
	r=$(mq-recv)
	run -0 --separate-stderr faulty 'write:errno=ENOSPC:at=/tmp/' \
	    mq-ack -r --reason second "$r"
	assert_equal "$stderr" "mq-ack: cur/${r#*/cur/}: reason not kept: No space left on device"
	assert_not_exist "$r"
	assert_equal "$(count new)" 1
	run -1 --separate-stderr mq-recv -m 2
	run -0 mq-dlq ls
	[[ $output == "$id	2	"*"	max attempts	"* ]] || fail "$output"
}

@test "mq-ack -r --reason on a stale receipt with no room for the reason: lease lost (3), the dead letter's reason is not removed" {
	id=$(echo m | mq-send)
	r=$(mq-recv)
	fault_env 'write:errno=ENOSPC:at=/tmp/' race_at mq-ack mq_reason_keep \
	    "-r --reason 'exit 1' $r" \
	    "env -u LD_PRELOAD mq-ack -x 'poison: bad input' $r"
	[[ $output == *"Breakpoint 1"* ]] || fail "mq_reason_keep was not reached: $output"
	[[ $output == *"exited with code 03"* ]] || fail "mq-ack did not exit 3: $output"
	run -0 mq-dlq ls
	[[ $output == "$id	1	"*"	poison: bad input	"* ]] || fail "$output"
}

@test "a burial for attempts that loses its rename (the holder released meanwhile) leaves the message's last release reason as it was" {
	id=$(echo job | mq-send)
	fail_with "db down"
	r=$(mq-recv -t 0.1)
	sleep 0.3
	# mq-sweep buries the expired lease at its last attempt; stopped
	# just before the burial's rename, while the holder releases it.
	race_at mq-sweep mq_group_leave "-m 2" "mq-ack -r $r"
	[[ $output == *"Breakpoint 1"* ]] || fail "mq_group_leave was not reached: $output"
	[[ $output == *"exited normally"* ]] || fail "mq-sweep failed: $output"
	assert_equal "$(count dead)" 0
	assert_equal "$(count new)" 1
	# Its death, later, names that reason, not the lost burial's.
	run -1 --separate-stderr mq-recv -m 2
	run -0 mq-dlq ls
	[[ $output == "$id	2	"*"	max attempts; last: db down	"* ]] || fail "$output"
}
