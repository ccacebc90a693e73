load helper

@test "name parser unit tests (tests/name-test.c) all pass" {
	run ${MQ_VALGRIND:+valgrind -q --error-exitcode=99 --leak-check=full} \
	    "$BATS_TEST_DIRNAME/name-test"
	assert_success
	refute_output --partial "not ok"
	assert_line --regexp '^1\.\.[0-9]+$'
}
