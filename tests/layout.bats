load helper

@test "layout: new/ is a tree of leaves of at most 1024 messages" {
	seq 1 3000 | mq-send -l -S >/dev/null
	[ "$(find "$MQ_DIR/new" -mindepth 4 -maxdepth 4 -type f | wc -l)" -eq 3000 ]
	find "$MQ_DIR/new" -mindepth 3 -maxdepth 3 -type d | while read -r leaf; do
		[[ ${leaf##*/} =~ ^[0-9a-f]{11}$ ]]
		[ "$(find "$leaf" -type f | wc -l)" -le 1024 ]
	done
	[ "$(find "$MQ_DIR/new" -mindepth 3 -maxdepth 3 -type d | wc -l)" -ge 3 ]
}

@test "layout: claiming one message reads one leaf, not all of new/" {
	command -v strace >/dev/null || skip "strace is not installed"
	seq 1 5000 | mq-send -l -S >/dev/null
	# LeakSanitizer cannot run under ptrace; the sanitizer build is traced
	# without it.
	ASAN_OPTIONS=detect_leaks=0 strace -o "$BATS_TEST_TMPDIR/trace" \
	    -e trace=openat mq-recv >/dev/null
	run grep -cE '"[0-9a-f]{11}"' "$BATS_TEST_TMPDIR/trace"
	assert_output 1
}

@test "layout: used-up leaves and buckets are removed, those of new/ once no sender can be filling them" {
	command -v faketime >/dev/null || skip "faketime is not installed"
	seq 1 3000 | mq-send -l -S >/dev/null
	while mq-recv -n 500 | mq-ack; do :; done
	assert_equal "$(find "$MQ_DIR/cur" -mindepth 1 | wc -l)" 0
	# The levels of new/ whose range has not ended a second ago stay (a
	# top level's is hours); the next sweep after that removes them.
	assert_equal "$(find "$MQ_DIR/new" -type f | wc -l)" 0
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    faketime -f '+5h' mq-sweep
	assert_equal "$(find "$MQ_DIR/new" -mindepth 1 | wc -l)" 0
}

@test "layout: a receiver recreates a leaf a sender finds removed" {
	# Send, drain (removing the leaf), send again at once: nothing lost.
	for i in 1 2 3 4 5; do
		echo "$i" | mq-send >/dev/null
		r=$(mq-recv) && mq-ack "$r"
	done
	seq 1 10 | mq-send -l >/dev/null
	assert_equal "$(count new)" 10
}

@test "layout: a claim is one rename and touches no body (only the counters and the log are written); an ack is one unlink" {
	command -v strace >/dev/null || skip "strace is not installed"
	printf '1\n2\n' | mq-send -l >/dev/null
	# The first claim on this host records its pid space (holders/, see
	# mq-spool(5)), once for the spool's life.
	mq-recv >/dev/null
	ASAN_OPTIONS=detect_leaks=0 strace -f -o "$BATS_TEST_TMPDIR/trace" \
	    -e trace=rename,renameat,renameat2,unlink,unlinkat,write,openat mq-recv >"$BATS_TEST_TMPDIR/r"
	assert_equal "$(grep -cE '^[0-9]+ +rename' "$BATS_TEST_TMPDIR/trace")" 1
	run grep -E '^[0-9]+ +(unlink|openat\(.*(O_WRONLY|O_RDWR))' "$BATS_TEST_TMPDIR/trace"
	assert_output --regexp 'openat\([0-9]+, "counters", O_RDWR'
	assert_output --regexp 'openat\([0-9]+, "log", O_WRONLY'
	assert_equal "${#lines[@]}" 2
	ASAN_OPTIONS=detect_leaks=0 strace -f -o "$BATS_TEST_TMPDIR/trace2" \
	    -e trace=rename,renameat,renameat2,unlink,unlinkat mq-ack <"$BATS_TEST_TMPDIR/r"
	assert_equal "$(grep -cE '^[0-9]+ +unlinkat\([0-9]+, "[0-9a-f]{16}\.' "$BATS_TEST_TMPDIR/trace2")" 1
	run grep -cE '^[0-9]+ +rename' "$BATS_TEST_TMPDIR/trace2"
	assert_output 0
}
