load helper

# The pipelines of the interface contract, word for word, with `work`
# standing for the user's job.

setup() {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cat >"$BATS_TEST_TMPDIR/bin/work" <<-'SH'
	#!/bin/sh
	# One write per job, so parallel jobs never interleave their lines.
	line=$(cat)
	printf '%s\n' "$line" >>"$DONE"
	SH
	chmod +x "$BATS_TEST_TMPDIR/bin/work"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH"
	export DONE="$BATS_TEST_TMPDIR/done"
}

@test "pipeline: seq 1 1000 | mq-send -l makes 1000 messages" {
	seq 1 1000 | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/ids")" 1000
	assert_equal "$(count new)" 1000
}

@test "pipeline: one job, acked after the work" {
	echo job1 | mq-send >/dev/null
	r=$(mq-recv) && work < "$r" && mq-ack "$r"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/done")" job1
	assert_equal "$(count cur)" 0
}

@test "pipeline: a worker loop with release on failure" {
	seq 1 5 | mq-send -l >/dev/null
	flaky() {
		# Job 3 fails once, then succeeds.
		read -r n
		if [ "$n" = 3 ] && [ ! -e "$BATS_TEST_TMPDIR/failed" ]; then
			touch "$BATS_TEST_TMPDIR/failed"; return 1
		fi
		echo "$n" >>"$BATS_TEST_TMPDIR/done"
	}
	while r=$(mq-recv -w 1); do flaky < "$r" && mq-ack "$r" || mq-ack -r 0 "$r"; done
	assert_equal "$(sort -n "$BATS_TEST_TMPDIR/done" | tr '\n' ' ')" "1 2 3 4 5 "
	assert_equal "$(count new)$(count cur)$(count dead)" 000
}

@test "pipeline: mq-recv -n 64 -0 | xargs -0 -P 8 workers" {
	seq 1 200 | mq-send -l >/dev/null
	for _ in 1 2 3 4; do
		mq-recv -n 64 -0 | xargs -0 -P 8 -n 1 sh -c 'work < "$1" && mq-ack "$1"' _
	done
	assert_equal "$(grep -c . "$BATS_TEST_TMPDIR/done")" 200
	assert_equal "$(sort -n "$BATS_TEST_TMPDIR/done" | grep . | uniq | wc -l)" 200
	assert_equal "$(count cur)" 0
}

@test "pipeline: mq-dlq ls; mq-dlq redrive --all" {
	echo dead1 | mq-send >/dev/null
	r=$(mq-recv); mq-ack -x broken "$r"
	run mq-dlq ls
	assert_output --partial broken
	mq-dlq ls; mq-dlq redrive --all
	r=$(mq-recv)
	assert_equal "$(cat "$r")" dead1
}

@test "pipeline: 4 concurrent workers over 600 messages process each exactly once" {
	seq 1 600 | mq-send -l -S >/dev/null
	for w in 1 2 3 4; do
		(
			while r=$(mq-recv -n 16 -t 120); do
				for x in $r; do
					{ cat "$x"; echo; } >>"$BATS_TEST_TMPDIR/w$w"
					mq-ack "$x" || echo "LOST $x" >>"$BATS_TEST_TMPDIR/lost"
				done
			done
		) &
	done
	wait
	cat "$BATS_TEST_TMPDIR"/w? >"$BATS_TEST_TMPDIR/all"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/all")" 600
	assert_equal "$(sort -n "$BATS_TEST_TMPDIR/all" | uniq | wc -l)" 600
	assert_equal "$(sort -n "$BATS_TEST_TMPDIR/all" | uniq -d | wc -l)" 0
	assert_not_exist "$BATS_TEST_TMPDIR/lost"
	assert_equal "$(count new)$(count cur)$(count dead)" 000
	# Every worker took part.
	for w in 1 2 3 4; do [ -s "$BATS_TEST_TMPDIR/w$w" ]; done
}

@test "pipeline: 8 racing mq-recv -n 64 claim every message exactly once" {
	seq 1 512 | mq-send -l -S >/dev/null
	for w in 1 2 3 4 5 6 7 8; do
		mq-recv -n 64 -t 120 >"$BATS_TEST_TMPDIR/r$w" &
	done
	wait
	cat "$BATS_TEST_TMPDIR"/r? | sort >"$BATS_TEST_TMPDIR/all"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/all")" 512
	assert_equal "$(uniq -d "$BATS_TEST_TMPDIR/all" | wc -l)" 0
	assert_equal "$(xargs -d '\n' awk 1 <"$BATS_TEST_TMPDIR/all" | sort -n | uniq | wc -l)" 512
}
