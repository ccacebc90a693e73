load helper

@test "tests/run: a file that hangs is ended after MQ_TEST_FILE_SECS, counts as failed, and the run goes on" {
	mkdir -p "$BATS_TEST_TMPDIR/t"
	printf '@test "passes" { true; }\n@test "hangs" { sleep 1000 & wait; }\n' \
	    >"$BATS_TEST_TMPDIR/t/a-hang.bats"
	printf '@test "after" { true; }\n' >"$BATS_TEST_TMPDIR/t/b-after.bats"
	# A clean environment: what this bats run exports (and its PATH) would
	# mislead the inner one.
	run -1 timeout 120 env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" \
	    MQ_TEST_FILE_SECS=3 sh "$BATS_TEST_DIRNAME/run" \
	    "$BATS_TEST_TMPDIR/t/a-hang.bats" "$BATS_TEST_TMPDIR/t/b-after.bats"
	assert_line "ok 1 passes"
	assert_line --partial "a-hang.bats: ran out of time after 3 s"
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
