load helper

# Worker mode: mq-recv [options] -- command.  Jobs write what they saw
# into $W (outside the spool).

setup() {
	W=$BATS_TEST_TMPDIR/w
	mkdir -p "$W"
	export W
}

# A tmux server a test started and left, when it failed.
teardown() {
	[ ! -S "$BATS_TEST_TMPDIR/tmux" ] || tmux -S "$BATS_TEST_TMPDIR/tmux" kill-server 2>/dev/null || true
}

# The leaf key (visibility time, ms) of the one message in new/.
due_of_new() {
	local f
	f=$(find "$MQ_DIR/new" -type f)
	f=${f%/*}
	echo $((16#${f##*/}))
}

# Runs the job script with -P 2 -w, and once two jobs have started sends
# the worker SIGTERM, then the second signal $2 (default INT); the worker
# must then exit as a shell killed by it would: 128 + its number.
stop_twice() {
	local pid st=0 i=0 sig=${2:-INT}
	mq-recv -P 2 -w -- sh -c "$1" &
	pid=$!
	while [ "$(find "$W" -name 'started.*' | wc -l)" -lt 2 ] && [ $i -lt 400 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill -TERM "$pid"
	sleep 0.2
	kill -"$sig" "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" $((128 + $(kill -l "$sig")))
}


now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

@test "worker: runs the command once per message, body on stdin, MQ_* set; exit 0 acks" {
	printf 'one\ntwo\nthree\n' | mq-send -l >"$W/ids"
	run --separate-stderr mq-recv -- sh -c '
		{ printf "%s|%s|%s|%s|" "$(cat)" "$MQ_ID" "$MQ_ATTEMPT" "$MQ_DIR"
		  [ -f "$MQ_RECEIPT" ] && echo receipt-ok; } >>"$W/seen"'
	assert_success
	[ -z "$stderr" ]
	spool=$(cd "$MQ_DIR" && pwd -P)
	expected=$(paste -d'|' <(printf 'one\ntwo\nthree\n') "$W/ids" | sed "s#\$#|1|$spool|receipt-ok#")
	assert_equal "$(cat "$W/seen")" "$expected"
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	assert_equal "$(count dead)" 0
}

@test "worker: an empty queue runs nothing and exits 1" {
	mq-send -l </dev/null
	run -1 --separate-stderr mq-recv -- touch "$W/ran"
	assert_not_exist "$W/ran"
	[ -z "$stderr" ]
}

@test "worker: options of worker mode without a command, and -0 with one, are usage errors" {
	mq-send -l </dev/null
	for o in "-P 2" --tag "--timeout 1" "--backoff 1" "--backoff-max 1" --drain --progress; do
		# shellcheck disable=SC2086 # the option and its argument
		run -2 --separate-stderr mq-recv $o
		[[ $stderr == *"needs a command"* ]]
	done
	run -2 --separate-stderr mq-recv -0 -- true
	for bad in 0 -1 x 1025; do
		run -2 mq-recv -P "$bad" -- true
	done
	run -2 mq-recv --timeout 0 -- true
	run -2 mq-recv --backoff x -- true
}

@test "worker: a command without -- before it is a usage error and is not run" {
	echo x | mq-send >/dev/null
	run -2 --separate-stderr mq-recv touch "$W/ran"
	[[ ${stderr_lines[0]} == "mq-recv: touch: unexpected operand (a command to run follows --)" ]]
	[[ ${stderr_lines[1]} == "usage: mq-recv "* ]]
	run -2 mq-recv -w 5x touch "$W/ran"
	assert_not_exist "$W/ran"
	assert_equal "$(count new)" 1
}

@test "worker: exit 65 dead-letters at once with the status and the last line of stderr" {
	echo bad | mq-send >/dev/null
	run -5 --separate-stderr mq-recv -- sh -c 'echo first >&2; echo "cannot parse input" >&2; exit 65'
	[[ $stderr == *"mq-recv: "*": dead-lettered: exit 65 (ran "*" s)" ]]
	# The job's own line is shown once, as it wrote it, not again in the report.
	assert_equal "$(grep -c 'cannot parse input' <<<"$stderr")" 1
	assert_equal "$(count dead)" 1
	run mq-dlq ls --json
	[[ $output == *'"attempts":1'* ]]
	[[ $output == *'"reason":"exit 65: cannot parse input"'* ]]
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
}

@test "worker: another exit status releases the message for a retry later, attempt kept" {
	echo flaky | mq-send >/dev/null
	run -5 --separate-stderr mq-recv --backoff 60 -- sh -c 'echo "disk full" >&2; exit 3'
	[[ $stderr =~ ": exit 3; attempt 1 of 5, again in "[0-9.]+" s (ran "[0-9.]+" s)" ]]
	assert_equal "$(grep -c 'disk full' <<<"$stderr")" 1
	assert_equal "$(count new)" 1
	assert_equal "$(count cur)" 0
	find "$MQ_DIR/new" -type f -name '*,1' | grep -q .
	# Not visible before its backoff has passed.
	run -1 mq-recv
}

@test "worker: a job killed by a signal is released like a failure" {
	echo x | mq-send >/dev/null
	run -5 --separate-stderr mq-recv --backoff 60 -- sh -c 'kill -9 $$'
	[[ $stderr == *": killed by signal 9; attempt 1 of 5"* ]]
	assert_equal "$(count new)" 1
}

@test "worker: --timeout kills a job that runs too long (its whole process group) and counts a failure" {
	echo slow | mq-send >/dev/null
	run -5 --separate-stderr mq-recv --timeout 0.3 --backoff 60 -- sh -c '(sleep 1; touch "$W/child-finished") & wait'
	[[ $stderr == *": timed out after 0.3 s; attempt 1 of 5"* ]]
	assert_equal "$(count new)" 1
	# What the job started was killed with it.
	sleep 1.2
	assert_not_exist "$W/child-finished"
}

@test "worker: a failure at the last attempt dead-letters it as max attempts, with the cause as the last reason" {
	echo x | mq-send >/dev/null
	for _ in 1 2; do
		r=$(mq-recv)
		mq-ack -r "$r"
	done
	run -5 --separate-stderr mq-recv -m 3 -- sh -c 'echo "still broken" >&2; exit 1'
	[[ $stderr == *"dead-lettered: max attempts; last: exit 1 (ran "*" s)" ]]
	assert_equal "$(grep -c 'still broken' <<<"$stderr")" 1
	run mq-dlq ls
	[[ $output == *$'\t3\t'*$'\tmax attempts; last: exit 1: still broken\t'* ]]
	assert_equal "$(count new)" 0
}

@test "worker: backoff after attempt 1 is the base, with jitter in its upper half" {
	echo x | mq-send >/dev/null
	# Base 10 s: due between 5 and 10 s after the failure.
	t0=$(now_ms)
	run -5 mq-recv --backoff 10 -- false
	t1=$(now_ms)
	find "$MQ_DIR/new" -type f -name '*,1' | grep -q .
	due=$(due_of_new)
	[ "$due" -ge $((t0 + 5000)) ]
	[ "$due" -le $((t1 + 10000)) ]
}

@test "worker: backoff doubles with each attempt up to --backoff-max" {
	echo x | mq-send >/dev/null
	for _ in 1 2; do
		r=$(mq-recv)
		mq-ack -r "$r"
	done
	# Attempt 3, base 10 s: 40 s, capped to 15 s, so 7.5 to 15 s.
	t0=$(now_ms)
	run -5 mq-recv --backoff 10 --backoff-max 15 -- false
	t1=$(now_ms)
	find "$MQ_DIR/new" -type f -name '*,3' | grep -q .
	due=$(due_of_new)
	[ "$due" -ge $((t0 + 7500)) ]
	[ "$due" -le $((t1 + 15000)) ]
	# Attempt 2, base 3 s, no cap reached: 6 s, so 3 to 6 s.
	mq-send -l </dev/null
	rm -rf "$MQ_DIR"
	echo y | mq-send >/dev/null
	r=$(mq-recv)
	mq-ack -r "$r"
	t0=$(now_ms)
	run -5 mq-recv --backoff 3 -- false
	t1=$(now_ms)
	due=$(due_of_new)
	[ "$due" -ge $((t0 + 3000)) ]
	[ "$due" -le $((t1 + 6000)) ]
}

@test "worker -P 4: four jobs run at once, never more, and no claim waits without a slot" {
	seq 1 12 | mq-send -l >/dev/null
	run mq-recv -P 4 -- sh -c '
		mkdir "$W/run.$MQ_ID"
		ls -d "$W"/run.* | wc -l >>"$W/running"
		find "$MQ_DIR/cur" -type f | wc -l >>"$W/claimed"
		sleep 0.5
		rmdir "$W/run.$MQ_ID"'
	assert_success
	assert_equal "$(sort -n "$W/running" | tail -n 1)" 4
	# A lease is only taken for a free slot.
	[ "$(sort -n "$W/claimed" | tail -n 1)" -le 4 ]
	assert_equal "$(wc -l <"$W/running")" 12
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
}

@test "worker: a job longer than its lease keeps it (heartbeat) and is never run twice at once" {
	echo long | mq-send >/dev/null
	mq-recv -t 1 -- sh -c 'echo start >>"$W/log"; sleep 3; echo end >>"$W/log"' 2>"$W/err" &
	pid=$!
	while [ ! -s "$W/log" ]; do sleep 0.05; done
	# Another worker keeps trying to take the message meanwhile.
	for _ in $(seq 1 12); do
		mq-recv -t 5 -- sh -c 'echo stolen >>"$W/log"' || true
		sleep 0.2
	done
	st=0
	wait "$pid" || st=$?
	cat "$W/err"
	assert_equal "$st" 0
	assert_equal "$(cat "$W/log")" "start
end"
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
}

@test "worker: a heartbeat that finds the lease lost says so and does not ack" {
	echo x | mq-send >/dev/null
	# The message is taken from under the running job, as by a worker
	# that claimed it after this one stalled past its lease.
	# A heartbeat that renames it between the find and the mv makes the
	# mv miss: then it is looked for again.
	run -5 --separate-stderr mq-recv -t 0.3 -- sh -c '
		until [ -e "$W/taken" ]; do
			find "$MQ_DIR/cur" -name "$MQ_ID,*" \
			    -exec mv {} "$W/taken" \; 2>/dev/null
		done
		sleep 0.5'
	[[ $stderr == *"cur/"*": lease lost"* ]]
	assert_file_exist "$W/taken"
	assert_equal "$(count cur)" 0
}

@test "worker: an ack that finds the lease gone (the message claimed again meanwhile) says so and removes nothing" {
	echo x | mq-send >/dev/null
	# Another lease of the message, as by a worker that claimed it after
	# this one's ran out: same bucket, another attempt.
	run -5 --separate-stderr mq-recv -- sh -c '
		f=$(find "$MQ_DIR/cur" -name "$MQ_ID,*")
		mv "$f" "${f%,*},2"'
	[[ $stderr == *"cur/"*": lease lost"* ]]
	assert_equal "$(count cur)" 1
	find "$MQ_DIR/cur" -name '*,2' | grep -q .
}

@test "worker: a lease whose bucket was removed and made anew while its job ran is still extended and acked" {
	echo x | mq-send >/dev/null
	# The job moves its lease out, removes the bucket, makes it again and
	# moves the lease back, as an emptied bucket pruned and made anew by
	# another claim: what the worker kept open of it is gone.  The lease
	# is long enough for its first heartbeat to come after that.
	run -0 --separate-stderr mq-recv -t 6 -- sh -c '
		f=$(find "$MQ_DIR/cur" -name "$MQ_ID,*")
		d=${f%/*}
		mv "$f" "$W/lease" && rmdir "$d" && mkdir "$d" && mv "$W/lease" "$f"
		sleep 2.5'
	[[ $stderr != *"lease lost"* ]]
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 0
}

@test "worker: an expired lease is handed out again while the worker is busy with waiting messages" {
	echo expired | mq-send >/dev/null
	r=$(mq-recv -t 0.5)
	seq 1 20 | mq-send -l >/dev/null
	run -0 --separate-stderr mq-recv -- sh -c 'echo "$(cat) $MQ_ATTEMPT" >>"$W/ran"; sleep 0.1'
	assert_equal "$(wc -l <"$W/ran")" 21
	grep -qx 'expired 2' "$W/ran"
	# Not left until the waiting messages are done.
	[ "$(tail -n 1 "$W/ran")" != "expired 2" ]
	run -3 mq-ack "$r"
}

@test "worker: -n N claims N messages in all, then exits" {
	seq 1 10 | mq-send -l >/dev/null
	run mq-recv -n 3 -P 2 -- sh -c 'echo "$(cat)" >>"$W/done"'
	assert_success
	assert_equal "$(sort -n "$W/done" | tr '\n' ' ')" "1 2 3 "
	assert_equal "$(count new)" 7
}

@test "worker -w SECS: picks up messages sent while it waits, exits after SECS idle" {
	mq-send -l </dev/null
	mq-recv -w 1.5 -- sh -c 'echo "$(cat)" >>"$W/done"' &
	pid=$!
	sleep 0.3
	echo late | mq-send >/dev/null
	wait "$pid"
	assert_equal "$(cat "$W/done")" late
}

@test "worker --tag: each line of the job's stdout and stderr starts with the message ID" {
	printf 'a\nb\n' | mq-send -l >"$W/ids"
	mq-recv --tag -- sh -c 'echo "out $(cat)"; echo err >&2; printf partial' >"$W/out" 2>"$W/err"
	a=$(sed -n 1p "$W/ids") b=$(sed -n 2p "$W/ids")
	assert_equal "$(cat "$W/out")" "$a	out a
$a	partial
$b	out b
$b	partial"
	assert_equal "$(cat "$W/err")" "$a	err
$b	err"
}

@test "worker: without --tag the job's output passes through untouched" {
	printf 'a\n' | mq-send -l >/dev/null
	mq-recv -- sh -c 'printf "raw\001\tbytes"; printf "e1\ne2" >&2' >"$W/out" 2>"$W/err"
	assert_equal "$(od -c <"$W/out")" "$(printf 'raw\001\tbytes' | od -c)"
	assert_equal "$(cat "$W/err")" "e1
e2"
}

@test "worker: SIGTERM stops claiming, lets running jobs finish and ack, loses nothing" {
	seq 1 10 | mq-send -l >/dev/null
	mq-recv -P 2 -w -- sh -c 'touch "$W/started.$MQ_ID"; sleep 1; echo "$(cat)" >>"$W/done"' &
	pid=$!
	while [ "$(find "$W" -name 'started.*' | wc -l)" -lt 2 ]; do sleep 0.05; done
	kill -TERM "$pid"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(wc -l <"$W/done")" 2
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 8
	run drain
	assert_equal "$( (cat "$W/done"; printf '%s\n' "${lines[@]}") | grep . | sort -n | tr '\n' ' ')" "$(seq 1 10 | tr '\n' ' ')"
}

@test "worker: a second stop signal kills the running jobs and releases their messages" {
	seq 1 4 | mq-send -l >/dev/null
	stop_twice 'touch "$W/started.$MQ_ID"; sleep 30; touch "$W/finished"'
	assert_not_exist "$W/finished"
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 4
	# Released now, visible at once.
	run mq-recv -n 4
	assert_equal "${#lines[@]}" 4
}

# A job by its body: "ok" succeeds, "flaky" fails (released for a retry
# later), "bad" is dead-lettered at once.
outcomes_job='read -r b; case $b in ok) exit 0;; flaky) exit 3;; *) exit 65;; esac'

@test "worker -v: a summary at exit counts the jobs done, retried and dead" {
	printf 'ok\nflaky\nbad\nok\n' | mq-send -l >/dev/null
	run -5 --separate-stderr timeout -k 5 30 mq-recv -v --backoff 60 -- sh -c "$outcomes_job"
	[[ ${stderr_lines[-1]} =~ ^"mq-recv: 2 done, 1 retried, 1 dead in "[0-9.]+" s"$ ]] || fail "$stderr"
	assert_equal "$(grep -c ' done, ' <<<"$stderr")" 1
}

@test "worker: the summary is said on a terminal without -v, and not into a pipe" {
	command -v script >/dev/null || fail "script (bsdutils) is not installed"
	printf 'ok\nflaky\n' | mq-send -l >/dev/null
	out=$(timeout -k 5 30 script -qec "mq-recv --backoff 60 -- sh -c '$outcomes_job'" /dev/null </dev/null | tr -d '\r')
	[[ $out =~ "mq-recv: 1 done, 1 retried, 0 dead in "[0-9.]+" s" ]] || fail "$out"
	printf 'ok\nok\n' | mq-send -l >/dev/null
	run -0 --separate-stderr timeout -k 5 30 mq-recv -- sh -c "$outcomes_job"
	# Both run: only the flaky one, delayed, waits.
	assert_equal "$(count new)$(count cur)" 10
	assert_equal "$stderr" ""
}

# The screen of the tmux session of the test: its history too, blank
# lines left out.
screen() {
	tmux -S "$BATS_TEST_TMPDIR/tmux" capture-pane -p -S - -t progress | grep -v '^$' || true
}

@test "worker --progress: on a terminal, one line redrawn in place that the jobs' lines do not break, gone at exit" {
	command -v tmux >/dev/null || fail "tmux is not installed"
	seq 1 20 | mq-send -l >/dev/null
	tmux -S "$BATS_TEST_TMPDIR/tmux" new-session -d -s progress -x 100 -y 20 \
	    "env PATH='$PATH' MQ_DIR='$MQ_DIR' mq-recv --progress -- sh -c 'read -r b; sleep 0.2; echo \"job \$b out\"'; echo \"exit \$?\"; sleep 60"
	local i seen=
	# The progress line is the screen's last, its count of done growing.
	for ((i = 0; i < 300; i++)); do
		last=$(screen | tail -n 1)
		if [[ $last =~ ^([0-9]+)" done, 0 retried, 0 dead, 1 running, "[0-9]+" waiting, "[0-9]+\.[0-9]"/s" ]]; then
			[[ " $seen " == *" ${BASH_REMATCH[1]} "* ]] || seen+=" ${BASH_REMATCH[1]}"
		fi
		[ "$(wc -w <<<"$seen")" -ge 2 ] && break
		[[ $last == "exit "* ]] && break
		sleep 0.05
	done
	[ "$(wc -w <<<"$seen")" -ge 2 ] || fail "no progress line seen to update: $seen; screen: $(screen)"
	for ((i = 0; i < 300; i++)); do
		[[ $(screen | tail -n 1) == "exit "* ]] && break
		sleep 0.1
	done
	out=$(screen)
	tmux -S "$BATS_TEST_TMPDIR/tmux" kill-server
	[[ $(tail -n 1 <<<"$out") == "exit 0" ]] || fail "$out"
	[[ $(tail -n 2 <<<"$out" | head -n 1) =~ ^"mq-recv: 20 done, 0 retried, 0 dead in "[0-9.]+" s"$ ]] || fail "$out"
	# No progress line left, nor a piece of one.
	! grep -e running -e waiting -e /s <<<"$out" || fail "$out"
	# Each job's line whole, on a line of its own.
	assert_equal "$(grep -c . <<<"$out")" 22
	assert_equal "$(grep -vx -e 'job [0-9]* out' -e 'mq-recv: .*' -e 'exit 0' <<<"$out")" ""
	assert_equal "$(grep -x 'job [0-9]* out' <<<"$out" | sort -u | wc -l)" 20
}

@test "worker --progress: the line is cut to the terminal's width" {
	command -v tmux >/dev/null || fail "tmux is not installed"
	seq 1 10 | mq-send -l >/dev/null
	tmux -S "$BATS_TEST_TMPDIR/tmux" new-session -d -s progress -x 30 -y 20 \
	    "env PATH='$PATH' MQ_DIR='$MQ_DIR' mq-recv --progress -- sleep 0.2; echo \"exit \$?\"; sleep 60"
	local i last=
	for ((i = 0; i < 200; i++)); do
		last=$(screen | tail -n 1)
		[[ $last == *" done, "* ]] && break
		sleep 0.05
	done
	out=$(screen)
	tmux -S "$BATS_TEST_TMPDIR/tmux" kill-server
	[[ $last == *" done, "* ]] || fail "$out"
	# 29 columns: the last one is left, and nothing is wrapped onto a second line.
	[ "${#last}" -le 29 ] || fail "$last"
	assert_equal "$(grep -c . <<<"$out")" 1
}

@test "worker --progress: the bytes on a terminal are the line, a carriage return and erase to the end of the line, nothing else" {
	command -v script >/dev/null || fail "script (bsdutils) is not installed"
	seq 1 3 | mq-send -l >/dev/null
	timeout -k 5 30 script -qec "mq-recv --progress -- sh -c 'sleep 0.2'" /dev/null </dev/null >"$W/out"
	grep -q $'\r\033\\[K' "$W/out" || fail "$(od -c "$W/out")"
	grep -q $'\r[0-9]* done, [0-9]* retried, 0 dead, [01] running' "$W/out" || fail "$(od -c "$W/out")"
	# No other escape sequence, and plain ASCII.
	! sed $'s/\033\\[K//g' "$W/out" | grep -q $'\033' || fail "$(od -c "$W/out")"
	! LC_ALL=C grep -q '[^[:print:][:space:]]' < <(sed $'s/\033\\[K//g' "$W/out") || fail "$(od -c "$W/out")"
	# The summary comes last, on a line of its own, after the line erased.
	[[ $(tr -d '\n' <"$W/out") =~ $'\r\033[K'"mq-recv: 3 done, 0 retried, 0 dead in "[0-9.]+" s"$'\r'?$ ]] || fail "$(od -c "$W/out")"
}

@test "worker --progress: into a pipe it writes nothing more, and the jobs' output is untouched" {
	seq 1 3 | mq-send -l >/dev/null
	run -0 --separate-stderr timeout -k 5 30 mq-recv --progress -- sh -c 'read -r b; echo "job $b"'
	assert_equal "$stderr" ""
	assert_equal "$output" "$(printf 'job %s\n' 1 2 3)"
}

@test "worker: a second SIGTERM exits 143 (128 + 15), as a second SIGINT exits 130" {
	seq 1 2 | mq-send -l >/dev/null
	stop_twice 'touch "$W/started.$MQ_ID"; sleep 30' TERM
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 2
}

@test "worker: a job that exits 0 after the second stop signal is acked, not released" {
	seq 1 2 | mq-send -l >/dev/null
	stop_twice 'trap "exit 0" TERM; touch "$W/started.$MQ_ID"; sleep 30 & wait'
	assert_equal "$(count new)$(count cur)" 00
}

@test "worker -v: says on stderr when each job starts and is done, and how long it ran" {
	echo x | mq-send >"$W/id"
	run --separate-stderr mq-recv -v -- sh -c 'sleep 0.2'
	assert_success
	[[ $stderr == *"mq-recv: $(cat "$W/id"): attempt 1: started"* ]]
	# About the 0.2 s it slept: 0.1 or more.
	[[ $stderr =~ "mq-recv: $(cat "$W/id"): done in "(0\.[1-9][0-9]*|[1-9][0-9.]*)" s" ]]
	run --separate-stderr mq-recv -- true
	[ -z "$stderr" ]
}

@test "worker: SIGHUP is harmless" {
	echo x | mq-send >/dev/null
	mq-recv -- sh -c 'touch "$W/started"; sleep 0.5; echo ok >"$W/done"' &
	pid=$!
	while [ ! -e "$W/started" ]; do sleep 0.05; done
	kill -HUP "$pid"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(cat "$W/done")" ok
}

@test "worker: a command that cannot be run is a system error (4); the message goes back" {
	echo x | mq-send >/dev/null
	run -4 --separate-stderr mq-recv -- /nonexistent/cmd
	[[ $stderr == "mq-recv: /nonexistent/cmd: No such file or directory"* ]]
	assert_equal "$(count cur)" 0
	run mq-recv
	assert_success
}

@test "worker: a command not found is refused before any claim: exit 4, 'command not found', no attempt spent however often it starts" {
	seq 1 3 | mq-send -l >/dev/null
	for _ in $(seq 8); do
		run -4 --separate-stderr mq-recv -P 2 -- no-such-command-here
		assert_equal "$stderr" "mq-recv: no-such-command-here: command not found"
	done
	assert_equal "$(mq-ls --json | grep -c '"state":"ready","attempts":0,')" 3
	assert_equal "$(count dead)" 0
	touch "$W/plain"	# not executable
	run -4 --separate-stderr mq-recv -- "$W/plain"
	assert_equal "$stderr" "mq-recv: $W/plain: Permission denied"
	run -4 --separate-stderr mq-recv -- "$W"
	assert_equal "$stderr" "mq-recv: $W: Permission denied"
	assert_equal "$(mq-ls --json | grep -c '"state":"ready","attempts":0,')" 3
}

@test "worker: a job that cannot be started later gives its claim's attempt back" {
	mkdir "$W/bin"
	# The first job removes its own command: the next cannot start.
	printf 'cat >>"$W/ran"; rm "$W/bin/job"\n' >"$W/bin/job"
	chmod +x "$W/bin/job"
	seq 1 3 | mq-send -l >/dev/null
	PATH="$W/bin:$PATH" run -4 --separate-stderr mq-recv -- job
	assert_equal "$(cat "$W/ran")" 1
	[[ $stderr == *"mq-recv: job: No such file or directory"* ]]
	assert_equal "$(count cur)" 0
	assert_equal "$(mq-ls --json | grep -c '"state":"ready","attempts":0,')" 2
	assert_equal "$(count dead)" 0
	# Its release says why, for a death for attempts to name.
	assert_equal "$(cat "$MQ_DIR"/last/*)" "cannot run job: No such file or directory"
}

@test "worker: a failed job's message is released with its failure as the reason, which a death for attempts elsewhere names" {
	id=$(echo x | mq-send)
	run -5 --separate-stderr mq-recv -- sh -c 'echo "db down" >&2; exit 3'
	assert_equal "$(count new)" 1
	run -1 --separate-stderr ahead 600 mq-recv -m 1
	run -0 mq-dlq ls
	[[ $output == "$id	1	"*"	max attempts; last: exit 3: db down	2	x\\n" ]]
	run -0 mq-dlq ls --json
	[[ $output == *"\"reason\":\"max attempts; last: exit 3: db down\""* ]]
}

@test "worker: a job gets the worker's environment with its own MQ_* once each, none of the worker's" {
	echo x | mq-send >"$W/id"
	MQ_ID=stale MQ_RECEIPT=stale MQ_ATTEMPT=9 MQ_PRIORITY=7 MQ_DEATHS=3 \
	    MQ_GROUP=stale MQ_KEY=stale FOO='a b' \
	    run -0 --separate-stderr mq-recv -- sh -c 'env >"$W/env"'
	for v in MQ_ID MQ_RECEIPT MQ_ATTEMPT MQ_PRIORITY MQ_DEATHS MQ_DIR; do
		assert_equal "$(grep -c "^$v=" "$W/env")" 1
	done
	assert_equal "$(grep -c '^MQ_GROUP=\|^MQ_KEY=' "$W/env")" 0
	grep -qx "MQ_ID=$(cat "$W/id")" "$W/env"
	grep -qx 'MQ_ATTEMPT=1' "$W/env"
	grep -qx 'MQ_PRIORITY=0' "$W/env"
	grep -qx 'MQ_DEATHS=0' "$W/env"
	grep -qx "MQ_DIR=$(cd "$MQ_DIR" && pwd -P)" "$W/env"
	grep -q "^MQ_RECEIPT=$(cd "$MQ_DIR" && pwd -P)/cur/" "$W/env"
	grep -qx 'FOO=a b' "$W/env"
}

@test "worker: the command is looked for in PATH as execvp does: past one that cannot be run, a script without #! run by sh" {
	mkdir "$W/a" "$W/b"
	printf 'echo b "$1" >>"$W/ran"\n' >"$W/b/job"
	chmod +x "$W/b/job"
	printf 'echo a >>"$W/ran"\n' >"$W/a/job"	# not executable: passed over
	printf '1\n2\n' | mq-send -l >/dev/null
	PATH="$W/a:$W/b:$PATH" run -0 --separate-stderr mq-recv -- job arg
	assert_equal "$(cat "$W/ran")" "b arg
b arg"
	echo x | mq-send >/dev/null
	run -4 --separate-stderr mq-recv -- no-such-command-here
	[[ $stderr == "mq-recv: no-such-command-here: command not found"* ]]
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 1
}

@test "worker: a command moved to another directory of PATH while the worker runs is found there" {
	mkdir "$W/a" "$W/b"
	# The first job moves its own command from a/ to b/.
	printf 'echo "$(cat)" >>"$W/ran"; mv "$W/a/job" "$W/b/job" 2>/dev/null; :\n' >"$W/a/job"
	chmod +x "$W/a/job"
	printf '1\n2\n3\n' | mq-send -l >/dev/null
	PATH="$W/a:$W/b:$PATH" run -0 --separate-stderr mq-recv -- job
	assert_equal "$(cat "$W/ran")" "1
2
3"
	assert_exist "$W/b/job"
}

@test "worker: the command's path is found once: one replaced in place runs new, one put earlier in PATH later is not seen" {
	mkdir "$W/a" "$W/b"
	# The first job puts a job in a/, earlier in PATH, and replaces its own
	# file in b/ (a new file renamed over it).
	cat >"$W/b/job" <<-'EOF'
	echo "b1 $(cat)" >>"$W/ran"
	printf 'echo "a $(cat)" >>"$W/ran"\n' >"$W/a/job"
	chmod +x "$W/a/job"
	printf 'echo "b2 $(cat)" >>"$W/ran"\n' >"$W/b/job.new"
	chmod +x "$W/b/job.new"
	mv "$W/b/job.new" "$W/b/job"
	EOF
	chmod +x "$W/b/job"
	printf '1\n2\n3\n' | mq-send -l >/dev/null
	PATH="$W/a:$W/b:$PATH" run -0 --separate-stderr mq-recv -- job
	assert_equal "$(cat "$W/ran")" "b1 1
b2 2
b2 3"
}

@test "worker: a worker killed with SIGKILL takes its job with it; the message comes back" {
	[ "$(uname)" = Linux ] || skip "only Linux kills a job with its worker"
	echo x | mq-send >/dev/null
	mq-recv -t 0.5 -- sh -c 'touch "$W/started"; sleep 1; touch "$W/finished"' &
	pid=$!
	while [ ! -e "$W/started" ]; do sleep 0.05; done
	kill -KILL "$pid"
	wait "$pid" || true
	sleep 1.5
	assert_not_exist "$W/finished"
	run mq-recv
	assert_success
	[[ $output == *",2" ]]
}

@test "worker: the poison message, 30 messages, MAX 3, -P 5: 29 done, poison dead after 3 attempts, spool empty" {
	seq 1 30 | mq-send -l >/dev/null
	run -5 --separate-stderr mq-recv -P 5 -m 3 --backoff 0.05 --backoff-max 0.1 -w 1 -- sh -c '
		b=$(cat)
		[ "$b" = 5 ] && { echo "poison $MQ_ATTEMPT" >&2; exit 1; }
		echo "$b" >>"$W/done"'
	assert_equal "$(sort -n "$W/done" | tr '\n' ' ')" "$(seq 1 30 | grep -vx 5 | tr '\n' ' ')"
	run mq-dlq ls
	assert_equal "${#lines[@]}" 1
	[[ $output == *$'\t3\t'*$'\tmax attempts; last: exit 1: poison 3\t'* ]]
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
}

@test "worker -P 1: the good messages complete in order of production" {
	seq 1 30 | mq-send -l >/dev/null
	run -5 mq-recv -m 3 --backoff 0.05 --backoff-max 0.1 -w 1 -- sh -c '
		b=$(cat)
		[ "$b" = 5 ] && exit 1
		echo "$b" >>"$W/done"'
	assert_equal "$(tr '\n' ' ' <"$W/done")" "$(seq 1 30 | grep -vx 5 | tr '\n' ' ')"
	assert_equal "$(count dead)" 1
}

@test "worker: two workers on one spool run each of 600 messages exactly once" {
	seq 1 600 | mq-send -l >/dev/null
	mq-recv -P 2 -- sh -c 'echo "$(cat)" >>"$W/done"' &
	a=$!
	mq-recv -P 2 -- sh -c 'echo "$(cat)" >>"$W/done"' &
	b=$!
	wait "$a" || true
	wait "$b" || true
	assert_equal "$(sort -n "$W/done" | uniq -d | wc -l)" 0
	assert_equal "$(sort -n "$W/done" | tr '\n' ' ')" "$(seq 1 600 | tr '\n' ' ')"
	assert_equal "$(count new)$(count cur)" 00
}

@test "worker -P 1: messages sent while it works still come out in order of production" {
	seq 1 50 | mq-send -l >/dev/null
	mq-recv -w 1 -- sh -c 'b=$(cat); echo "$b" >>"$W/done"
		[ "$b" = 10 ] && seq 51 100 | mq-send -l >/dev/null; true'
	assert_equal "$(tr '\n' ' ' <"$W/done")" "$(seq 1 100 | tr '\n' ' ')"
}

@test "worker: the first stop signal says the jobs are awaited and that a second one kills them" {
	echo x | mq-send >/dev/null
	mq-recv -w -- sh -c 'touch "$W/started"; i=0
		while [ ! -e "$W/go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done' \
	    2>"$W/err" &
	pid=$!
	i=0
	while [ ! -e "$W/started" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
	kill -INT "$pid"
	i=0
	while ! grep -q stopping "$W/err" && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
	touch "$W/go"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(cat "$W/err")" "mq-recv: stopping: waiting for 1 running job (again to kill it)"
	assert_equal "$(count new)$(count cur)" 00
}

@test "worker -w: waits for a spool that does not exist yet" {
	(sleep 0.5; echo first | mq-send >/dev/null) &
	run --separate-stderr timeout 20 mq-recv -w 10 -n 1 -- sh -c 'cat >"$W/body"'
	wait
	assert_success
	assert_equal "$(cat "$W/body")" first
}

@test "worker -w: a spool removed while waiting stops the worker (4)" {
	mq-send -l </dev/null >/dev/null
	mq-recv -w -- true 2>"$BATS_TEST_TMPDIR/err" &
	remove_spool_under $!
	assert_equal "$st" 4
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" "mq-recv: $MQ_DIR: spool removed"
}

@test "worker: the spool's max-attempts (mq-conf) decides when a message is dead; -m wins" {
	echo a | mq-send >/dev/null
	mq-conf max-attempts=2
	# shellcheck disable=SC2016 # expanded by the job's shell
	run -5 --separate-stderr timeout -k 5 20 mq-recv --backoff 0.01 -w 1 -- sh -c 'echo "$MQ_ATTEMPT" >>"$W/attempts"; exit 1'
	assert_equal "$(cat "$W/attempts")" "$(printf '1\n2')"
	assert_equal "$(count dead)" 1
	[[ $stderr == *"attempt 1 of 2"* ]]
	rm "$W/attempts"
	echo b | mq-send >/dev/null
	# shellcheck disable=SC2016 # expanded by the job's shell
	run -5 --separate-stderr timeout -k 5 20 mq-recv -m 3 --backoff 0.01 -w 1 -- sh -c 'echo "$MQ_ATTEMPT" >>"$W/attempts"; exit 1'
	assert_equal "$(cat "$W/attempts")" "$(printf '1\n2\n3')"
	assert_equal "$(count dead)" 2
}

@test "worker: the lease is the spool's (mq-conf lease); -t wins" {
	printf 'a\n' | mq-send >/dev/null
	mq-conf lease=500
	# shellcheck disable=SC2016 # expanded by the job's shell
	run -0 mq-recv -- sh -c 'echo "$MQ_RECEIPT" >"$W/r"'
	d=$(sed 's/.*\/[^,]*,\([0-9]*\)\..*/\1/' "$W/r")
	left=$((d - $(date +%s)))
	[ "$left" -ge 490 ] && [ "$left" -le 500 ]
	printf 'b\n' | mq-send >/dev/null
	# shellcheck disable=SC2016 # expanded by the job's shell
	run -0 mq-recv -t 20 -- sh -c 'echo "$MQ_RECEIPT" >"$W/r"'
	d=$(sed 's/.*\/[^,]*,\([0-9]*\)\..*/\1/' "$W/r")
	left=$((d - $(date +%s)))
	[ "$left" -ge 10 ] && [ "$left" -le 20 ]
}

@test "worker: a running worker follows mq-conf: max-attempts and ttl changed while it waits apply to its next claims" {
	mq-send -l </dev/null >/dev/null
	# shellcheck disable=SC2016 # expanded by the job's shell
	timeout -k 5 30 mq-recv --backoff 0.01 -w 8 -- sh -c 'echo "$MQ_ATTEMPT" >>"$W/attempts"; exit 1' \
	    2>/dev/null &
	worker=$!
	sleep 0.3
	mq-conf max-attempts=1
	sleep 0.3
	echo a | mq-send >/dev/null
	for _ in $(seq 1 100); do [ "$(count dead)" -eq 1 ] && break; sleep 0.05; done
	assert_equal "$(cat "$W/attempts")" 1
	run mq-dlq ls
	assert_output --partial "max attempts"
	# A ttl set now buries a message that waited past it instead of running it.
	mq-conf ttl=0.2 paused=yes
	# (A worker reads the settings at most every 100 ms.)
	sleep 0.3
	echo b | mq-send >/dev/null
	sleep 0.5
	mq-conf paused=no
	for _ in $(seq 1 100); do [ "$(count dead)" -eq 2 ] && break; sleep 0.05; done
	assert_equal "$(count dead)" 2
	assert_equal "$(cat "$W/attempts")" 1
	run mq-dlq ls
	assert_output --partial "	ttl	"
	kill "$worker" 2>/dev/null || :
	wait "$worker" || :
}

@test "worker: a job that dead-letters its own message then fails: the late release (lease lost) leaves the dead letter's reason" {
	printf '#!/bin/sh\nmq-ack -x "poison: bad input" "$MQ_RECEIPT"; exit 1\n' >"$W/job.sh"
	chmod +x "$W/job.sh"
	id=$(echo m | mq-send)
	run --separate-stderr mq-recv -n 1 -- "$W/job.sh"
	[[ $stderr == *"lease lost"* ]] || fail "$stderr"
	run -0 mq-dlq ls
	[[ $output == "$id	1	"*"	poison: bad input	"* ]] || fail "$output"
	assert_not_exist "$MQ_DIR/last/$id"
}

@test "worker: a failed job's release whose reason finds no room is done all the same, with a warning" {
	id=$(echo m | mq-send)
	run -5 --separate-stderr faulty 'write:errno=ENOSPC:at=/tmp/' \
	    mq-recv -n 1 -- sh -c 'exit 3'
	[[ $stderr == *"mq-recv: cur/"*": reason not kept: No space left on device"* ]] || fail "$stderr"
	assert_equal "$(count new)" 1
	assert_equal "$(count cur)" 0
}

@test "worker --drain: waits for the retry of a job that failed once, and for a delayed message; exit 0" {
	echo flaky | mq-send >/dev/null
	echo later | mq-send -D 0.5 >/dev/null
	run -0 --separate-stderr timeout -k 5 30 mq-recv --drain --backoff 0.05 -- \
	    sh -c 'b=$(cat); echo "$b $MQ_ATTEMPT" >>"$W/runs"; [ "$b" != flaky ] || [ "$MQ_ATTEMPT" -ge 2 ]'
	assert_equal "$(sort "$W/runs" | tr '\n' ' ')" "flaky 1 flaky 2 later 1 "
	assert_equal "$(count new)$(count cur)$(count dead)" 000
	# Without --drain the same retry is left for the next run (exit 5).
	echo flaky | mq-send >/dev/null
	run -5 --separate-stderr timeout -k 5 30 mq-recv --backoff 0.05 -- \
	    sh -c 'b=$(cat); [ "$MQ_ATTEMPT" -ge 2 ]'
	assert_equal "$(count new)" 1
}

@test "worker --drain: a message that dies makes it exit 5, once the others are done" {
	printf 'ok\nbad\nflaky\n' | mq-send -l >/dev/null
	run -5 --separate-stderr timeout -k 5 30 mq-recv --drain -m 2 --backoff 0.05 -- sh -c "$outcomes_job"
	assert_equal "$(count new)$(count cur)$(count dead)" 002
}

@test "worker: exit 65 is never retried, whatever attempts are left: the job runs once, dead at attempt 1" {
	mq-conf max-attempts=3
	id=$(echo bad | mq-send)
	run -5 timeout -k 5 30 mq-recv --drain --backoff 0 -- sh -c 'echo ran >>"$1"; exit 65' _ "$W/runs"
	assert_equal "$(wc -l <"$W/runs")" 1
	run -0 mq-dlq ls
	[[ $output == "$id	1	"*"	exit 65	"* ]] || fail "$output"
}

@test "worker --drain: an empty spool, or one of dead letters only, exits 0 at once without running anything" {
	mq-send -l </dev/null
	run -0 --separate-stderr timeout -k 5 30 mq-recv --drain -- touch "$W/ran"
	assert_equal "$stderr" ""
	echo bad | mq-send >/dev/null
	run -5 timeout -k 5 30 mq-recv -- sh -c 'exit 65'
	run -0 --separate-stderr timeout -k 5 30 mq-recv --drain -- touch "$W/ran"
	assert_not_exist "$W/ran"
	assert_equal "$(count dead)" 1
}

@test "worker --drain: waits for another's lease: acked there, it is not run; expired, it is claimed and run" {
	echo theirs | mq-send >/dev/null
	r=$(mq-recv -t 60)
	(sleep 0.5; touch "$W/acking"; mq-ack "$r") &
	run -0 --separate-stderr timeout -k 5 30 mq-recv --drain -- touch "$W/ran"
	# It ended after the ack began, not at once.
	assert_exist "$W/acking"
	wait
	assert_not_exist "$W/ran"
	assert_equal "$(count new)$(count cur)" 00
	echo abandoned | mq-send >/dev/null
	mq-recv -t 0.3 >/dev/null
	run -0 --separate-stderr timeout -k 5 30 mq-recv --drain -- sh -c 'cat >"$W/ran"'
	assert_equal "$(cat "$W/ran")" abandoned
	assert_equal "$(count new)$(count cur)" 00
}

@test "worker --drain with -w is a usage error, and nothing is run" {
	echo x | mq-send >/dev/null
	run -2 --separate-stderr mq-recv --drain -w -- touch "$W/ran"
	[[ $stderr == "mq-recv: --drain and -w:"* ]] || fail "$stderr"
	run -2 mq-recv -w 5 --drain -- touch "$W/ran"
	assert_not_exist "$W/ran"
	assert_equal "$(count new)" 1
}
