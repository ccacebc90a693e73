load helper

# A worker that runs each message once (-m 1) with a job that writes on
# both outputs and fails, so that each message is one attempt, dead.
fail_once() {
	mq-recv -m 1 -w 0 -- sh -c "$1" >"$BATS_TEST_TMPDIR/passed" 2>&1 || true
}

@test "keep-output: a job's stdout and stderr are kept per ID and attempt, and still passed on" {
	mq-conf keep-output=1h 2>/dev/null
	id=$(echo x | mq-send)
	mq-recv -m 2 -w 0.5 --backoff 0.001 -- sh -c \
	    'echo "out $MQ_ATTEMPT"; echo "err $MQ_ATTEMPT" >&2; exit 1' \
	    >"$BATS_TEST_TMPDIR/passed" 2>&1 || true
	# Passed on as ever.
	run grep -c '^out [12]$' "$BATS_TEST_TMPDIR/passed"
	assert_output 2
	run -0 mq-log -o "$id"
	assert_output "out 2
err 2"
	run -0 mq-log -o "$id" -a 1
	assert_output "out 1
err 1"
	# A prefix of 8 or more names it, as elsewhere.
	run -0 mq-log -o "${id:0:20}" -a 1
	assert_output "out 1
err 1"
	assert_file_exist "$MQ_DIR/output/$id,1"
	assert_file_exist "$MQ_DIR/output/$id,2"
}

@test "keep-output: off by default, nothing kept; mq-log -o says so, exit 1" {
	id=$(echo x | mq-send)
	fail_once 'echo hello; exit 1'
	assert_file_not_exist "$MQ_DIR/output"
	run -1 --separate-stderr mq-log -o "$id"
	assert_output ""
	[[ $stderr == "mq-log: $id: no output kept"* ]] || fail "$stderr"
	run -1 --separate-stderr mq-log -o "$id" -a 7
	[[ $stderr == "mq-log: $id: no output kept of attempt 7" ]] || fail "$stderr"
}

@test "keep-output: a dead letter's reason still has the last stderr line" {
	mq-conf keep-output=1h 2>/dev/null
	id=$(echo x | mq-send)
	fail_once 'echo first >&2; echo "the last word" >&2; exit 1'
	run -0 mq-dlq ls
	assert_output --partial "the last word"
	run -0 mq-log -o "$id"
	assert_output "first
the last word"
}

@test "keep-output: more than 1 MiB keeps the last MiB at least, two at most, in order" {
	mq-conf keep-output=1h 2>/dev/null
	id=$(echo x | mq-send)
	# 30000 numbered lines of 100 bytes: about 3 MB.
	fail_once 'awk "BEGIN { for (i = 1; i <= 30000; i++) printf \"%099d\\n\", i }"; exit 1'
	mq-log -o "$id" >"$BATS_TEST_TMPDIR/kept"
	size=$(wc -c <"$BATS_TEST_TMPDIR/kept")
	[ "$size" -ge 1048576 ] && [ "$size" -le 2097152 ] || fail "kept $size bytes"
	# The end, whole and in order: the last line is the last written,
	# and each line is one more than the one before.
	assert_equal "$(tail -n 1 "$BATS_TEST_TMPDIR/kept")" "$(printf '%099d' 30000)"
	awk 'NR > 1 && $0 + 0 != prev + 1 { bad++ } { prev = $0 + 0 } END { exit bad }' \
	    "$BATS_TEST_TMPDIR/kept" || fail "kept output out of order"
}

@test "keep-output: on a terminal mq-log -o escapes control characters; into a pipe it is byte for byte" {
	mq-conf keep-output=1h 2>/dev/null
	id=$(echo x | mq-send)
	fail_once 'printf "\033[31mred\n"; exit 1'
	run -0 mq-log -o "$id"
	assert_output $'\033[31mred'
	command -v script >/dev/null || fail "script (bsdutils) is needed"
	run -0 script -qec "mq-log -o $id" /dev/null
	assert_output --partial '\x1b[31mred'
}

@test "mq-sweep removes kept output older than keep-output, and all of it once keep-output is 0" {
	mq-conf keep-output=1h 2>/dev/null
	a=$(echo a | mq-send)
	fail_once 'echo out; exit 1'
	b=$(echo b | mq-send)
	fail_once 'echo out; exit 1'
	touch -d '2 hours ago' "$MQ_DIR/output/$a,1"
	run -0 --separate-stderr mq-sweep -v
	[[ $stderr == *"$a,1: kept output removed"* ]] || fail "$stderr"
	assert_file_not_exist "$MQ_DIR/output/$a,1"
	assert_file_exist "$MQ_DIR/output/$b,1"
	mq-conf keep-output=0
	mq-sweep
	assert_file_not_exist "$MQ_DIR/output/$b,1"
}

@test "mq-log -o: usage errors exit 2: a bad ID, -a without -o, -o with records' options, an ambiguous prefix" {
	run -2 mq-log -o xyz
	run -2 mq-log -a 1
	run -2 mq-log -o 18ec96c3495e4b28 --json
	run -2 mq-log -o 18ec96c3495e4b28 -f
	run -2 mq-log -o 18ec96c3495e4b28 -a 0
	mq-conf keep-output=1h 2>/dev/null
	mkdir -p "$MQ_DIR/output"
	: >"$MQ_DIR/output/18ec96c3495e4b28.1.000000000001,1"
	: >"$MQ_DIR/output/18ec96c3495e4b28.1.000000000002,1"
	run -2 --separate-stderr mq-log -o 18ec96c3495e4b28
	assert_equal "$stderr" "mq-log: 18ec96c3495e4b28: ambiguous: several messages' output begins so"
}
