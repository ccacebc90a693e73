load helper

@test "make demo's script: 11 jobs done, the poison one dead after 3 attempts, spool empty" {
	run sh "$BATS_TEST_DIRNAME/../share/examples/demo.sh"
	assert_success
	assert_output --partial "12 jobs sent, 11 done, 1 dead-lettered after 3 attempts"
	assert_output --partial "new/ 0, cur/ 0, dead/ 0"
	assert_output --partial "'flaky: upload, fails once' attempt 2 done"
	assert_output --regexp $'\t3\t[0-9T:-]+Z\tmax attempts\t35\tpoison'
}
