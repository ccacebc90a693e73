load helper

# The seed scenario of a bounded queue: max-depth 5, one slow consumer, a
# fast producer of 50 that waits for room (mq-send -w).

@test "bounded queue: a producer of 50 waits for a slow consumer; depth never above 5; all 50 done, in order" {
	mq-conf max-depth=5
	done_file=$BATS_TEST_TMPDIR/done
	seq 1 50 | sed 's/^/job-/' | timeout 120 mq-send -l -w 100 >"$BATS_TEST_TMPDIR/ids" &
	producer=$!
	# The depth, sampled while the producer runs.
	: >"$BATS_TEST_TMPDIR/depths"
	(
		while kill -0 "$producer" 2>/dev/null; do
			find "$MQ_DIR/new" -type f | wc -l >>"$BATS_TEST_TMPDIR/depths"
			sleep 0.01
		done
	) &
	sampler=$!
	# One slow consumer: each job takes 50 ms.
	timeout 120 mq-recv -w 3 -- sh -c 'cat >>"$1"; echo >>"$1"; sleep 0.05' _ "$done_file"
	wait "$producer"
	wait "$sampler"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/ids")" 50
	# Sampled at least a few times, never above max-depth.
	[ "$(wc -l <"$BATS_TEST_TMPDIR/depths")" -ge 10 ]
	max=$(sort -n "$BATS_TEST_TMPDIR/depths" | tail -n 1)
	[ "$max" -le 5 ] && [ "$max" -ge 1 ] || { echo "max depth seen: $max"; false; }
	# Nothing lost, nothing twice, in the order sent.
	assert_equal "$(cat "$done_file")" "$(seq 1 50 | sed 's/^/job-/')"
	assert_equal "$(find "$MQ_DIR/new" "$MQ_DIR/cur" "$MQ_DIR/dead" -type f | wc -l)" 0
}

@test "bounded queue: without -w the producer sends what fits, prints those IDs, and exits 6" {
	mq-conf max-depth=5
	run -6 --separate-stderr mq-send -l < <(seq 1 50)
	assert_equal "${#lines[@]}" 5
	assert_equal "$stderr" "mq-send: $MQ_DIR: full (max-depth 5)"
	# Exactly those five are queued, in order.
	for i in 1 2 3 4 5; do
		r=$(mq-recv)
		assert_equal "$(cat "$r")" "$i"
		mq-ack "$r"
	done
	run -1 mq-recv
}
