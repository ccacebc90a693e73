load helper

@test "tests/run: a file that hangs is ended after MQ_TEST_FILE_SECS, counts as failed, names what it still ran, and the run goes on" {
	mkdir -p "$BATS_TEST_TMPDIR/t"
	printf '@test "passes" { true; }\n@test "hangs" { sleep 1000 & wait; }\n' \
	    >"$BATS_TEST_TMPDIR/t/a-hang.bats"
	printf '@test "after" { true; }\n' >"$BATS_TEST_TMPDIR/t/b-after.bats"
	# A clean environment: what this bats run exports (and its PATH) would
	# mislead the inner one.
	# 40 s: the listing of what it still runs begins 10 s before the bound
	# (a quarter of it), time enough on a loaded machine, where 5 s of 20
	# once were not.
	run -1 timeout 150 env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" \
	    MQ_TEST_FILE_SECS=40 sh "$BATS_TEST_DIRNAME/run" \
	    "$BATS_TEST_TMPDIR/t/a-hang.bats" "$BATS_TEST_TMPDIR/t/b-after.bats"
	assert_line "ok 1 passes"
	assert_line --partial "a-hang.bats: ran out of time after 40 s; it still ran:"
	# Noted before the bound: the test's own process and what it waits for.
	assert_line --regexp '^#   [0-9]+ [0-9]+ bash .*bats-exec-test .*a-hang\.bats'
	assert_line --regexp '^#   [0-9]+ [0-9]+ sleep 1000 $'
	assert_line "ok 1 after"
	assert_equal "${lines[-1]}" "2 passed, 1 failed"
}

@test "tests/run: a failing test fails the run" {
	mkdir -p "$BATS_TEST_TMPDIR/t"
	printf '@test "fails" { false; }\n' >"$BATS_TEST_TMPDIR/t/fail.bats"
	run -1 timeout 120 env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" \
	    sh "$BATS_TEST_DIRNAME/run" "$BATS_TEST_TMPDIR/t/fail.bats"
	assert_equal "${lines[-1]}" "0 passed, 1 failed"
}

@test "tests/run: files run side by side, MQ_TEST_JOBS at a time, each file's lines together" {
	local t=$BATS_TEST_TMPDIR/t
	mkdir -p "$t"
	# a waits (bounded) for a mark that only b makes: it passes only if
	# both run at once.
	printf '@test "waits for b" { for i in $(seq 100); do [ -e %s/mark ] && return 0; sleep 0.1; done; false; }\n@test "a2" { true; }\n' \
	    "$t" >"$t/a.bats"
	printf '@test "marks" { touch %s/mark; }\n' "$t" >"$t/b.bats"
	run -0 timeout 120 env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" \
	    MQ_TEST_JOBS=2 sh "$BATS_TEST_DIRNAME/run" "$t/a.bats" "$t/b.bats"
	assert_equal "${lines[-1]}" "3 passed, 0 failed"
	# a's plan, its two results and its time, with nothing of b between.
	[[ $output == *$'1..2\nok 1 waits for b\nok 2 a2\n# '"$t/a.bats"* ]] || fail "$output"
	rm "$t/mark"
	run -1 timeout 120 env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" \
	    MQ_TEST_JOBS=1 sh "$BATS_TEST_DIRNAME/run" "$t/a.bats" "$t/b.bats"
	assert_line "not ok 1 waits for b"
}

@test "tests/run: a file marked '# mq-test: long' starts before the others" {
	local t=$BATS_TEST_TMPDIR/t
	mkdir -p "$t"
	printf '@test "short" { true; }\n' >"$t/a.bats"
	printf '# mq-test: long\n@test "long" { true; }\n' >"$t/b.bats"
	run -0 timeout 120 env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" \
	    MQ_TEST_JOBS=1 sh "$BATS_TEST_DIRNAME/run" "$t/a.bats" "$t/b.bats"
	assert_equal "${lines[1]}" "ok 1 long"
	assert_equal "${lines[4]}" "ok 1 short"
}

@test "tests/run: MQ_TEST_JOBS or MQ_TEST_FILE_SECS that is not a number is refused" {
	run -2 env MQ_TEST_JOBS=x sh "$BATS_TEST_DIRNAME/run" /dev/null
	assert_output --partial "MQ_TEST_JOBS=x"
	run -2 env MQ_TEST_FILE_SECS=20m sh "$BATS_TEST_DIRNAME/run" /dev/null
	assert_output --partial "MQ_TEST_FILE_SECS=20m"
}
