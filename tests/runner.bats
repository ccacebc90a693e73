load helper

@test "tests/run: a test that hangs fails after BATS_TEST_TIMEOUT and the run goes on to its count" {
	mkdir -p "$BATS_TEST_TMPDIR/t"
	printf '@test "hangs" { sleep 1000; }\n@test "passes" { true; }\n' \
	    >"$BATS_TEST_TMPDIR/t/hang.bats"
	# A clean environment: what this bats run exports (and its PATH) would
	# mislead the inner one.
	run -1 timeout 120 env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" BATS_TEST_TIMEOUT=2 \
	    sh "$BATS_TEST_DIRNAME/run" "$BATS_TEST_TMPDIR/t/hang.bats"
	assert_line --partial "not ok 1 hangs"
	assert_line "ok 2 passes"
	assert_equal "${lines[-1]}" "1 passed, 1 failed"
}


@test "tests/run: without a limit given, every test still has one" {
	mkdir -p "$BATS_TEST_TMPDIR/t"
	printf '@test "limited" { [ "${BATS_TEST_TIMEOUT:-0}" -gt 0 ]; }\n' \
	    >"$BATS_TEST_TMPDIR/t/limit.bats"
	run -0 timeout 120 env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" \
	    sh "$BATS_TEST_DIRNAME/run" "$BATS_TEST_TMPDIR/t/limit.bats"
	assert_line "ok 1 limited"
}
