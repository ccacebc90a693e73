load helper

@test "man pages: mandoc -Tlint reports nothing" {
	run mandoc -Tlint -Wwarning "$BATS_TEST_DIRNAME"/../share/man/man*/*
	assert_success
	assert_output ""
}

@test "man pages: one per tool, plus mq-spool(5) and mq(7)" {
	for t in mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat; do
		assert_file_exist "$BATS_TEST_DIRNAME/../share/man/man1/$t.1"
	done
	assert_file_exist "$BATS_TEST_DIRNAME/../share/man/man5/mq-spool.5"
	assert_file_exist "$BATS_TEST_DIRNAME/../share/man/man7/mq.7"
}

@test "man pages: each has ENVIRONMENT, FILES, EXIT STATUS and EXAMPLES" {
	for page in "$BATS_TEST_DIRNAME"/../share/man/man*/*; do
		for sh in ENVIRONMENT FILES "EXIT STATUS" EXAMPLES; do
			grep -qx ".Sh $sh" "$page" || { echo "${page##*/}: no $sh"; false; }
		done
	done
}
