load helper

ex=$(cd "$BATS_TEST_DIRNAME/../share/doc/mq/examples" && pwd)
units=$(cd "$BATS_TEST_DIRNAME/../share/systemd" && pwd)

@test "example cron-producer.sh: each file of the inbox is sent once and moved to queued/" {
	in=$BATS_TEST_TMPDIR/in
	mkdir -p "$in"
	touch "$in/a.jpg" "$in/b.jpg" "$in/.partial"
	sh "$ex/cron-producer.sh" "$in"
	assert_equal "$(count new)" 2
	assert_file_exist "$in/queued/a.jpg"
	assert_file_not_exist "$in/a.jpg"
	assert_file_exist "$in/.partial"
	# The next run finds nothing new.
	sh "$ex/cron-producer.sh" "$in"
	assert_equal "$(count new)" 2
	assert_equal "$(drain | sort | grep . | tr '\n' ' ')" "$in/a.jpg $in/b.jpg "
}

@test "example xargs-pool.sh: every job run, failures retried, exits when idle" {
	seq 1 20 | mq-send -l >/dev/null
	# Job 7 fails the first time it is run.
	cat >"$BATS_TEST_TMPDIR/job" <<JOB
#!/bin/sh
b=\$(cat)
if [ "\$b" = 7 ] && [ ! -e "$BATS_TEST_TMPDIR/failed-once" ]; then
	touch "$BATS_TEST_TMPDIR/failed-once"; exit 1
fi
echo "\$b" >>"$BATS_TEST_TMPDIR/done"
JOB
	chmod +x "$BATS_TEST_TMPDIR/job"
	# The failed one waits out its 30 s before a retry; the pool is idle
	# before that and stops.
	JOB="$BATS_TEST_TMPDIR/job" IDLE=0.5 sh "$ex/xargs-pool.sh"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/done")" 19
	assert_equal "$(count new)" 1
	assert_equal "$(count cur)" 0
}

@test "example worker service: mq-worker@.service's ExecStart with thumbnail-worker.conf works" {
	out=$BATS_TEST_TMPDIR/thumbs
	mkdir -p "$out"
	printf 'img\n' >"$BATS_TEST_TMPDIR/a.jpg"
	printf '%s\n' "$BATS_TEST_TMPDIR/a.jpg" "$BATS_TEST_TMPDIR/missing.jpg" | mq-send -l >/dev/null
	# The command line the unit runs, with the example's settings and
	# the example job from this tree.
	exec_start=$(sed -n 's/^ExecStart=@BINDIR@\///p' "$units/mq-worker@.service")
	# The environment file as systemd reads it: KEY=rest of the line.
	MQ_WORKER_OPTS=$(sed -n 's/^MQ_WORKER_OPTS=//p' "$ex/thumbnail-worker.conf")
	MQ_WORKER_COMMAND="sh $ex/thumbnail-job.sh $out"
	cmd=${exec_start//%f/$MQ_DIR}
	cmd=${cmd//\$MQ_WORKER_OPTS/$MQ_WORKER_OPTS}
	cmd=${cmd//\$MQ_WORKER_COMMAND/$MQ_WORKER_COMMAND}
	[[ $cmd == "mq-recv -d $MQ_DIR -w -P 4 -t 60 --timeout 600 --backoff 5 -- sh "* ]]
	# shellcheck disable=SC2086 # split into words as systemd does
	$cmd 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	while [ "$(count dead)" -eq 0 ] || [ "$(count cur)" -gt 0 ]; do sleep 0.1; done
	kill -TERM "$pid"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	# The result is keyed by the message ID; the bad input is dead at once.
	assert_equal "$(cat "$out"/*.thumb)" img
	run mq-dlq ls
	[[ $output == *$'\t1\t'*$'\texit 65: no such image: '"$BATS_TEST_TMPDIR/missing.jpg"$'\t'* ]]
	assert_equal "$(count new)" 0
}

@test "example thumbnail-job.sh: a redelivered message does its work once" {
	out=$BATS_TEST_TMPDIR/thumbs
	mkdir -p "$out"
	echo one >"$BATS_TEST_TMPDIR/a.jpg"
	MQ_ID=abc sh "$ex/thumbnail-job.sh" "$out" <<<"$BATS_TEST_TMPDIR/a.jpg"
	echo two >"$BATS_TEST_TMPDIR/a.jpg"
	MQ_ID=abc sh "$ex/thumbnail-job.sh" "$out" <<<"$BATS_TEST_TMPDIR/a.jpg"
	assert_equal "$(cat "$out/abc.thumb")" one
}

@test "example redrive-runbook.sh: the summary by reason, then only the matching ones redriven" {
	seq 1 5 | mq-send -l >/dev/null
	for _ in 1 2 3; do mq-ack -x "timed out after 600 s" "$(mq-recv)"; done
	for _ in 1 2; do mq-ack -x "exit 65: bad input" "$(mq-recv)"; done
	run sh "$ex/redrive-runbook.sh"
	assert_success
	assert_line --partial "5 dead letters; by reason:"
	assert_line --regexp '^ *3 timed out after 600 s$'
	assert_line --regexp '^ *2 exit 65: bad input$'
	assert_equal "$(count dead)" 5
	run sh "$ex/redrive-runbook.sh" 'timed out'
	assert_success
	assert_line "redriving 3 matching 'timed out':"
	assert_equal "$(count dead)" 2
	assert_equal "$(count new)" 3
	run mq-dlq ls
	[[ $output != *"timed out"* ]]
}

@test "example shared-spool.sh: members of the group share the spools made under the root" {
	[ "$(id -u)" -eq 0 ] || skip "making a shared root and switching users needs root"
	top=$(mktemp -d /tmp/mq-ex.XXXXXX)
	chmod 755 "$top"
	run sh "$ex/shared-spool.sh" 4242 "$top/mq"
	assert_success
	assert_equal "$(stat -c '%a %g' "$top/mq")" "2770 4242"
	as() { setpriv --reuid="$1" --regid="$1" --groups=4242 env PATH="$(public_bin):$PATH" sh -c 'umask 077; exec "$@"' sh "${@:2}"; }
	echo job | as 4001 mq-send -d "$top/mq/builds" >/dev/null
	r=$(as 4002 mq-recv -d "$top/mq/builds")
	assert_equal "$(as 4002 cat "$r")" job
	as 4002 mq-ack -d "$top/mq/builds" "$r"
	rm -rf "$top"
}
