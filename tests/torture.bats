load helper

@test "torture: 20 s of kill -9 at random instants loses nothing (tests/torture 20)" {
	run sh "$BATS_TEST_DIRNAME/torture" 20
	assert_success
	assert_line --regexp '^sent=[1-9][0-9]* processed=[0-9]+ lost=0 dup=[0-9]+ kills=[1-9][0-9]* left=0 dead=0$'
}
