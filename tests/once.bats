load helper
load once-round

# mq-recv --once: the ledger of finished messages (once/).  Jobs count
# their runs into $W/count, a line each, outside the spool.

setup() {
	W=$BATS_TEST_TMPDIR/w
	mkdir -p "$W"
	export W
}

# A worker left running when a test failed.
teardown() {
	kill_left
}

# Once the killed worker's job is gone too (reaped: it died with the
# worker), its lease is orphaned and the next claim takes it at once.
none_held() {
	within 10 eval '! mq-ls -s inflight | grep -q .'
}

lines_of() {
	[ -e "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ]
}

runs() {
	if [ -e "$W/count" ]; then wc -l <"$W/count" | tr -d ' '; else echo 0; fi
}

entries() {
	find "$MQ_DIR/once" -type f | wc -l | tr -d ' '
}

# The ledger's entry of a message sent with key $1: k and its hash.
key_entry() {
	echo "k$(printf '%s' "$1" | sha256sum | cut -c1-32)"
}

# A job that counts its run; where $1 says, it kills its worker ($PPID:
# the job is the worker's child) the first time it runs: "before" its
# effect (the line appended), "after" it.
job() {
	cat >"$W/job" <<EOF
#!/bin/sh
cat >/dev/null
if [ ! -e "$W/died" ] && [ "$1" = before ]; then
	touch "$W/died"
	kill -9 \$PPID
	exit 0
fi
echo "\$MQ_ID" >>"$W/count"
if [ ! -e "$W/died" ] && [ "$1" = after ]; then
	touch "$W/died"
	kill -9 \$PPID
fi
exit 0
EOF
	chmod +x "$W/job"
}

# A worker of the job, as mq-recv --once -- job, stopped by gdb at its
# first call of $1 (mq_receipt_done: about to rename the message into the
# ledger; mq_once_sync: renamed, not synced yet; with $2 "after": once
# that call returned), where the shell command $3 runs; then gdb kills it
# (SIGKILL).
killed_at() {
	local -a fin=()
	command -v gdb >/dev/null || fail "gdb is not installed"
	[ "$2" != after ] || fin=(-ex finish)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    run timeout -k 5 60 gdb -q -batch -ex 'set breakpoint pending on' \
	    -ex "break $1" -ex "run --once -- $W/job </dev/null" \
	    "${fin[@]}" -ex "shell $3" -ex kill --args "$(bin_of mq-recv)" </dev/null
	assert_output --partial "Breakpoint 1"
}

# Message $1, finished, in cur/ again as well, under a lease run out, as
# a file system without a journal may keep both names after a crash.
kept_again() {
	mkdir -p "$MQ_DIR/cur/1"
	cp -p "$MQ_DIR/once/i$1" "$MQ_DIR/cur/1/$1,1.000,1"
}

@test "once: a finished message is renamed into the ledger, its ack and its record in one rename; then once/ is synced" {
	command -v strace >/dev/null || skip "strace is not installed"
	job none
	id=$(printf 'the body' | mq-send)
	# LeakSanitizer (a sanitized build) cannot work under ptrace.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    run timeout 20 strace -e trace=renameat,renameat2,fsync,unlinkat -o "$W/trace" mq-recv -n 1 --once -- "$W/job"
	assert_success
	done=$(grep -nE "rename.*\"$id,[^\"]*\", [0-9]+, \"i$id\"" "$W/trace" | cut -d: -f1)
	[ -n "$done" ] || fail "no rename into once/: $(cat "$W/trace")"
	sync=$(awk -v r="$done" 'NR > r && /fsync/ { print NR; exit }' "$W/trace")
	[ -n "$sync" ] || fail "no sync after the rename: $(cat "$W/trace")"
	# Not unlinked: the message is its own record.
	run grep -E "unlinkat\([0-9]+, \"$id" "$W/trace"
	assert_failure
	run -0 cat "$MQ_DIR/once/i$id"
	assert_output "the body"
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 0
	run -0 mq-log --kind ack,job "$id"
	assert_line --regexp "ack +$id "
	assert_line --regexp "job +$id .*outcome=acked"
}

@test "once: entries are named k and the key's hash for a keyed message, i and the ID for any other" {
	job none
	id=$(echo a | mq-send)
	echo b | mq-send -k 'order 1/2' >/dev/null
	run -0 mq-recv --once -- "$W/job"
	run -0 ls "$MQ_DIR/once"
	assert_output "$(printf '%s\n' "i$id" "$(key_entry 'order 1/2')" | sort)"
	assert_equal "$(runs)" 2
}

@test "once: a message delivered again once its entry was made (a crash kept both names) is acked without running, said with -v and logged as skipped" {
	job none
	id=$(echo a | mq-send)
	# What a file system without a journal may keep after a crash: the
	# message in cur/ under its lease, and its entry in once/.
	run -0 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 1
	kept_again "$id"
	run -0 --separate-stderr mq-recv -v --once -- "$W/job"
	assert_equal "$(runs)" 1
	[[ $stderr == *"mq-recv: $id: finished before (--once): acked, not run"* ]]
	[[ $stderr == *"0 done, 0 retried, 0 dead, 1 skipped in "* ]]
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	run -0 mq-log --kind job "$id"
	assert_line --regexp "job +$id .*attempt=2 host=[^ ]+ outcome=skipped\$"
	refute_line --regexp "attempt=2 .*job_pid"
}

@test "once: a message sent again with a finished key (its dedup window over) is acked without running, said with -v and logged as skipped" {
	job none
	mq-conf dedup-window=60
	first=$(echo a | mq-send -k k1)
	run -0 mq-recv --once -- "$W/job"
	assert_equal "$(entries)" 1
	# Within dedup-window the key is held, as after any ack.
	run -0 ahead 30 mq-send -k k1 <<<a
	assert_output "$first"
	assert_equal "$(count new)" 0
	# Past it, a send adds a message, which the ledger knows.
	mq-conf dedup-window=0
	id=$(echo a | mq-send -k k1)
	[ "$id" != "$first" ]
	run -0 --separate-stderr mq-recv -v --once -- "$W/job"
	assert_equal "$(runs)" 1
	[[ $stderr == *"mq-recv: $id: finished before (--once): acked, not run"* ]]
	[[ $stderr == *"0 done, 0 retried, 0 dead, 1 skipped in "* ]]
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	run -0 mq-log --kind job,ack "$id"
	assert_line --regexp "ack +$id "
	assert_line --regexp "job +$id .*attempt=1 host=[^ ]+ outcome=skipped\$"
	refute_output --partial job_pid
}

@test "once: a key looked at as its holder is renamed into the ledger is held dedup-window from the rename, not from the holder's claim" {
	mq-conf dedup-window=200ms
	id=$(echo a | mq-send -k k1)
	cat >"$W/job" <<EOF
#!/bin/sh
i=0
while [ ! -e "$W/go" ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
EOF
	chmod +x "$W/job"
	mq-recv --once -- "$W/job" 2>"$W/err" &
	echo $! >"$BATS_TEST_TMPDIR/worker.pid"
	within 10 eval 'mq-ls -s inflight | grep -q .'
	# The claim's rename, the file's last change until the rename into
	# the ledger, is older than dedup-window when the key is looked at.
	sleep 0.3
	echo b >"$W/b"
	# The send has found the holder with two links (in cur/ still) and
	# looks for its entry: the job ends and the rename is made then.
	race_at mq-send mq_once_keeps "-k k1 <$W/b" \
	    "touch $W/go; i=0; while [ ! -e $MQ_DIR/once/$(key_entry k1) ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i + 1)); done"
	assert_success
	assert_output --partial "Breakpoint 1"
	assert_output --partial "$id"
	assert_equal "$(count new)" 0
	st=0
	wait "$(cat "$BATS_TEST_TMPDIR/worker.pid")" || st=$?
	assert_equal "$st" 0
	assert_equal "$(cat "$W/err")" ""
}

@test "once: without --once, a worker neither looks at nor keeps a ledger" {
	job none
	id=$(echo a | mq-send)
	run -0 mq-recv --once -- "$W/job"
	kept_again "$id"
	echo b | mq-send >/dev/null
	run -0 mq-recv -- "$W/job"
	assert_equal "$(runs)" 3
	assert_equal "$(entries)" 1
	rm -rf "${MQ_DIR:?}/once"
	echo c | mq-send >/dev/null
	run -0 mq-recv -- "$W/job"
	assert_not_exist "$MQ_DIR/once"
}

@test "once: worker killed before the job's effect runs it again once; killed after it, before its record, twice: the one window" {
	local when first want
	for when in before after; do
		rm -rf "${MQ_DIR:?}" "$W/count" "$W/died"
		job "$when"
		echo a | mq-send >/dev/null
		run -137 mq-recv --once -- "$W/job"
		first=0 want=1
		[ "$when" = before ] || first=1 want=2
		assert_equal "$(runs)" "$first"
		assert_not_exist "$MQ_DIR/once"
		# Its lease orphaned, the next claim takes it at once.
		none_held
		run -0 mq-recv --once -- "$W/job"
		assert_equal "$(runs)" "$want"
		assert_equal "$(entries)" 1
		assert_equal "$(count cur)" 0
	done
}

@test "once: worker killed after the job's end, before its message is renamed into the ledger: run twice, the one window" {
	job none
	echo a | mq-send >/dev/null
	killed_at mq_receipt_done before true
	assert_equal "$(runs)" 1
	assert_equal "$(count cur)" 1
	assert_equal "$(entries)" 0
	none_held
	run -0 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 2
	assert_equal "$(entries)" 1
}

@test "once: worker killed after the rename into the ledger, before its sync: not run again, nothing left in flight" {
	job none
	id=$(echo a | mq-send)
	killed_at mq_once_sync before "find $MQ_DIR/cur -type f | wc -l >$W/cur.at"
	assert_equal "$(cat "$W/cur.at")" 0
	assert_equal "$(runs)" 1
	run -0 ls "$MQ_DIR/once"
	assert_output "i$id"
	run -1 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 1
}

@test "once: worker killed after the sync: not run again" {
	job none
	echo a | mq-send >/dev/null
	killed_at mq_once_sync after true
	assert_equal "$(runs)" 1
	assert_equal "$(count cur)" 0
	run -1 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 1
	assert_equal "$(entries)" 1
}

@test "once: an ordered group's messages each go into the ledger as its turn passes on, in send order" {
	cat >"$W/job" <<EOF
#!/bin/sh
cat >>"$W/count"
EOF
	chmod +x "$W/job"
	for i in 1 2 3; do echo "$i" | mq-send -g g1 >/dev/null; done
	echo x | mq-send -k kx -g g1 >/dev/null
	run -0 timeout 60 mq-recv -P 4 --once -- "$W/job"
	assert_equal "$(cat "$W/count")" "1
2
3
x"
	assert_equal "$(entries)" 4
	[ -e "$MQ_DIR/once/$(key_entry kx)" ]
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	run -0 find "$MQ_DIR/groups" -name 'leaving.*'
	assert_output ""
}

@test "once: kill -9 at each point of a job's end: a counting job runs again only when killed after its effect, before its record; once-result.sh's results always equal the messages" {
	local kind point want
	for kind in plain result; do
		for point in before after record synced; do
			export MQ_DIR=$BATS_TEST_TMPDIR/$kind.$point/spool
			export RESULTS=$BATS_TEST_TMPDIR/$kind.$point/results
			once_round "$point" "$kind" true true
			want=3
			[ "$kind.$point" != plain.after ] || want=4
			echo "# kill -9, $kind job, $point: $runs runs of 3 messages" >&3
			[ "$runs" -eq "$want" ] || fail "$kind, killed $point: $runs runs, not $want"
		done
	done
}

@test "once: a group's head whose last rename into the ledger fails is recorded all the same (its empty entry made first); mq-sweep finishes its leave" {
	job none
	id=$(echo a | mq-send -g g1)
	run -0 --separate-stderr faulty 'renameat:errno=ENOSPC:at=/leaving.' mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 1
	assert_file_exist "$MQ_DIR/once/i$id"
	assert_file_empty "$MQ_DIR/once/i$id"
	run -0 find "$MQ_DIR/groups" -name 'leaving.*'
	assert_output --partial "leaving.$id"
	run -0 --separate-stderr mq-sweep -v
	[[ $stderr == *"unfinished ack: acked"* ]]
	run -0 find "$MQ_DIR/groups" -name 'leaving.*'
	assert_output ""
	assert_file_exist "$MQ_DIR/once/i$id"
	# Delivered again (a crash kept it), it is not run.
	kept_again "$id"
	run -0 --separate-stderr mq-recv -v --once -- "$W/job"
	assert_equal "$(runs)" 1
}

@test "once: two workers -P 8 at once over 400 messages: each run once, 400 entries" {
	job none
	seq 1 400 | mq-send -l >/dev/null
	timeout 120 mq-recv -P 8 --once -- "$W/job" 2>"$W/a.err" &
	a=$!
	timeout 120 mq-recv -P 8 --once -- "$W/job" 2>"$W/b.err" &
	b=$!
	st=0
	wait "$a" || st=$?
	[ "$st" -le 1 ] || fail "worker a: $st: $(cat "$W/a.err")"
	st=0
	wait "$b" || st=$?
	[ "$st" -le 1 ] || fail "worker b: $st: $(cat "$W/b.err")"
	assert_equal "$(cat "$W/a.err" "$W/b.err")" ""
	assert_equal "$(runs)" 400
	assert_equal "$(sort -u "$W/count" | wc -l | tr -d ' ')" 400
	assert_equal "$(entries)" 400
	run -0 mq-log --kind ack
	assert_equal "${#lines[@]}" 400
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	assert_equal "$(count dead)" 0
}

# Two holders of message $1 (its body): a worker whose lease (1 s) runs
# out while it is stopped (SIGSTOP: it keeps no lease), and one that then
# claims the message; both are left running their jobs, each waiting for
# its go ($W/go.ATTEMPT), the stale one stopped.  Their pids in
# stale.pid and new.pid, their stderr in $W/stale.err and $W/new.err.
two_holders() {
	cat >"$W/job" <<EOF
#!/bin/sh
cat >/dev/null
echo "\$MQ_ATTEMPT" >>"$W/started"
i=0
while [ ! -e "$W/go.\$MQ_ATTEMPT" ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
echo "\$MQ_ID" >>"$W/count"
EOF
	chmod +x "$W/job"
	id=$(printf '%s' "$1" | mq-send)
	mq-recv -t 1 -n 1 --once -- "$W/job" 2>"$W/stale.err" &
	echo $! >"$BATS_TEST_TMPDIR/stale.pid"
	within 10 lines_of "$W/started" 1
	kill -STOP "$(cat "$BATS_TEST_TMPDIR/stale.pid")"
	mq-recv -w 20 -n 1 --once -- "$W/job" 2>"$W/new.err" &
	echo $! >"$BATS_TEST_TMPDIR/new.pid"
	within 20 lines_of "$W/started" 2
}

@test "once: a stale holder and a new one finishing together: one entry, one ack, the stale one's lease lost" {
	two_holders a
	touch "$W/go.1" "$W/go.2"
	within 10 lines_of "$W/count" 2
	kill -CONT "$(cat "$BATS_TEST_TMPDIR/stale.pid")"
	st=0
	wait "$(cat "$BATS_TEST_TMPDIR/new.pid")" || st=$?
	assert_equal "$st" 0
	st=0
	wait "$(cat "$BATS_TEST_TMPDIR/stale.pid")" || st=$?
	assert_equal "$st" 5
	assert_equal "$(cat "$W/started")" "1
2"
	assert_equal "$(cat "$W/new.err")" ""
	assert_equal "$(grep -c . "$W/stale.err")" 1
	grep -q "lease lost" "$W/stale.err"
	run -0 ls "$MQ_DIR/once"
	assert_output "i$id"
	# The message itself, which the stale one's empty entry left whole.
	run -0 cat "$MQ_DIR/once/i$id"
	assert_output a
	run -0 mq-log --kind ack "$id"
	assert_equal "$(grep -c "ack  *$id" <<<"$output")" 1
	run -0 mq-log --kind job "$id"
	assert_line --regexp "attempt=1 .*outcome=lost"
	assert_line --regexp "attempt=2 .*outcome=acked"
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 0
}

@test "once: a stale holder finishing first records an empty entry; the holder of the lease then renames the message over it: one entry, one ack" {
	two_holders 'the body'
	# The stale one ends first: its lease is lost, its record empty.
	kill -CONT "$(cat "$BATS_TEST_TMPDIR/stale.pid")"
	touch "$W/go.1"
	st=0
	wait "$(cat "$BATS_TEST_TMPDIR/stale.pid")" || st=$?
	assert_equal "$st" 5
	grep -q "lease lost" "$W/stale.err"
	assert_file_exist "$MQ_DIR/once/i$id"
	assert_file_empty "$MQ_DIR/once/i$id"
	assert_equal "$(count cur)" 1
	touch "$W/go.2"
	st=0
	wait "$(cat "$BATS_TEST_TMPDIR/new.pid")" || st=$?
	assert_equal "$st" 0
	assert_equal "$(cat "$W/new.err")" ""
	run -0 ls "$MQ_DIR/once"
	assert_output "i$id"
	run -0 cat "$MQ_DIR/once/i$id"
	assert_output "the body"
	run -0 mq-log --kind ack "$id"
	assert_equal "$(grep -c "ack  *$id" <<<"$output")" 1
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 0
}

@test "once: a message that cannot be renamed into the ledger is released, said, and the worker claims no more (exit 4)" {
	job none
	id=$(echo a | mq-send)
	echo b | mq-send >/dev/null
	# The first rename out of cur/ is that one; the release is the next.
	run -4 --separate-stderr faulty 'renameat:errno=ENOSPC:at=/cur/:times=1' mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 1
	assert_equal "$stderr" "mq-recv: $id: $MQ_DIR/once: No space left on device; not recorded (--once), released"
	assert_equal "$(count new)" 2
	assert_equal "$(count cur)" 0
	assert_equal "$(entries)" 0
	run -0 mq-log --kind job "$id"
	assert_output --regexp "outcome=released"
	# Not recorded: run again.
	run -0 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 3
	assert_equal "$(entries)" 2
}

@test "once: a sync of the ledger that fails is said, and the worker claims no more (exit 4); the rename stands" {
	id=$(echo a | mq-send)
	id2=$(echo b | mq-send)
	echo c | mq-send >/dev/null
	# The second job waits until the failed sync of the first's rename
	# has been said: it was started (its slot free) but ends after.
	cat >"$W/job" <<EOF
#!/bin/sh
cat >/dev/null
echo "\$MQ_ID" >>"$W/count"
i=0
while [ "\$MQ_ID" = "$id2" ] && [ ! -e "$W/go" ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
exit 0
EOF
	chmod +x "$W/job"
	fault_env 'fsync:errno=EIO:at=spool/once:times=1' timeout -k 5 60 mq-recv --once -- "$W/job" 2>"$W/err" &
	pid=$!
	echo "$pid" >"$BATS_TEST_TMPDIR/worker.pid"
	within 20 grep -q "Input/output error" "$W/err"
	touch "$W/go"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 4
	assert_equal "$(runs)" 2
	assert_equal "$(cat "$W/err")" "mq-recv: $MQ_DIR/once: Input/output error; 1 finished message may run again after a power cut (--once)"
	run -0 ls "$MQ_DIR/once"
	assert_output "$(printf '%s\n' "i$id" "i$id2" | sort)"
	assert_equal "$(count new)" 1
	assert_equal "$(count cur)" 0
}

@test "once: a ledger that cannot be read runs no job: the message goes back, its attempt given back, said; the worker stops (exit 4)" {
	job none
	id=$(echo a | mq-send)
	# once/ a file: no entry can be looked up in it.
	touch "$MQ_DIR/once"
	run -4 --separate-stderr mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 0
	assert_equal "$stderr" "mq-recv: $id: $MQ_DIR/once: Not a directory; not looked up (--once), released"
	assert_equal "$(count new)" 1
	run -0 mq-log --kind release "$id"
	assert_output --partial "reason=not looked up (--once): Not a directory"
	r=$(mq-recv)
	[ "${r##*,}" = 1 ]
}

@test "once: mq-sweep removes entries past once-window; younger ones and what is no entry stay" {
	job none
	mq-conf once-window=1h
	id=$(echo a | mq-send)
	# Sent two hours ago: the entry's age counts from its rename, not
	# from its body's last write.
	find "$MQ_DIR/new" -type f -exec touch -d '-2 hours' {} +
	run -0 mq-recv --once -- "$W/job"
	touch "$MQ_DIR/once/junk"
	run -0 --separate-stderr ahead 1800 mq-sweep -v
	assert_equal "$(entries)" 2
	run -0 --separate-stderr ahead 7200 mq-sweep -v
	assert_equal "$stderr" "mq-sweep: once/i$id: past once-window: removed"
	run -0 ls "$MQ_DIR/once"
	assert_output junk
}

@test "once: once-window 0: the spool's ttl, else 7 days, never less than lease x max-attempts" {
	job none
	seq 1 3 | mq-send -l >/dev/null
	run -0 mq-recv --once -- "$W/job"
	# No ttl: 7 days.
	ahead $((6 * 86400)) mq-sweep
	assert_equal "$(entries)" 3
	mq-conf lease=1d max-attempts=10
	ahead $((8 * 86400)) mq-sweep
	assert_equal "$(entries)" 3
	mq-conf lease= max-attempts=
	ahead $((8 * 86400)) mq-sweep
	assert_equal "$(entries)" 0
	# A ttl: that.
	echo b | mq-send >/dev/null
	run -0 mq-recv --once -- "$W/job"
	mq-conf ttl=1h
	ahead 1800 mq-sweep
	assert_equal "$(entries)" 1
	ahead 7200 mq-sweep
	assert_equal "$(entries)" 0
}

@test "once: --once without a command is a usage error naming it" {
	run -2 --separate-stderr mq-recv --once
	assert_equal "$stderr" "mq-recv: --once needs a command to run"
}

@test "once: -w SECS counts idle time from the last message acked as finished before, not from the last job" {
	job none
	id=$(echo a | mq-send)
	run -0 mq-recv --once -- "$W/job"
	kept_again "$id"
	# The look-up held 6 s, past -w 5; a message comes 1 s after it
	# (its look-up the second stop).
	race_at mq-recv mq_once_done "-w 5 --once -- $W/job" \
	    "sleep 6; (sleep 1; echo late | MQ_DIR=$MQ_DIR $(bin_of mq-send)) >/dev/null 2>&1 &" 2
	[[ $output == *"Breakpoint 1"* ]] || fail "mq_once_done was not reached: $output"
	assert_equal "$(runs)" 2
	assert_equal "$(count new)" 0
}

@test "once: an entry whose key is still held outlives once-window, so that its removal does not hold the key anew" {
	job none
	mq-conf once-window=1 dedup-window=2
	first=$(echo a | mq-send -k k1)
	run -0 mq-recv --once -- "$W/job"
	sleep 1
	# Past once-window, within dedup-window: kept (its key record is its
	# other link, whose time would change with its removal).
	run -0 ahead 0.5 mq-sweep
	assert_equal "$(entries)" 1
	# Past dedup-window from the ack: the key is free, the ledger knows it.
	run -0 ahead 1.5 mq-send -k k1 <<<a
	[ "$output" != "$first" ] || fail "the key is held past dedup-window from its ack"
	# (Sent on the clock ahead, it is visible on that clock only.)
	run -0 --separate-stderr ahead 1.5 mq-recv -v --once -- "$W/job"
	assert_equal "$(runs)" 1
	[[ $stderr == *"finished before (--once): acked, not run"* ]]
	# Once its key is forgotten, the entry goes.
	run -0 ahead 3600 mq-sweep
	assert_equal "$(entries)" 0
}
