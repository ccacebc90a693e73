load helper

@test "make demo's script: the pipeline retries the flaky job; worker mode does 29 of 30, the poison one dead after 3 attempts; a bounded queue of 5 pushes back; spool empty" {
	run sh "$BATS_TEST_DIRNAME/../share/examples/demo.sh"
	assert_success
	assert_output --partial "'flaky: upload, fails once' attempt 2 done"
	assert_output --partial "pipeline: 6 jobs sent, 6 done"
	assert_output --partial "worker mode: 30 jobs sent, 29 done, 1 dead-lettered after 3 attempts"
	assert_output --partial "the worker exited 5"
	assert_output --partial "new/ 0, cur/ 0, dead/ 0"
	assert_output --partial "5 IDs printed, then: mq-send: "
	assert_output --regexp "full \(max-depth 5\) \(exit 6\)"
	assert_output --regexp "bounded queue: 50 jobs sent through a queue of 5, 50 done in order, at most [1-5] waiting;"
	assert_output --regexp $'\t3\t[0-9T:-]+Z\tmax attempts; last: exit 1: photo-5.jpg \\(corrupt\\): cannot decode \\(attempt 3\\)\t21\tphoto-5.jpg'
}
