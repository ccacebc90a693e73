load helper

# mq-recv --once: the ledger of finished messages (once/).  Jobs count
# their runs into $W/count, a line each, outside the spool.

setup() {
	W=$BATS_TEST_TMPDIR/w
	mkdir -p "$W"
	export W
}

# A worker left running when a test failed.
teardown() {
	local p
	for p in "$BATS_TEST_TMPDIR"/*.pid; do
		[ -e "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
	done
	true
}

# Runs "$@" until it succeeds, for at most $1 seconds: 1 when it never did.
within() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 20; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
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
# first call of mq_receipt_ack (with $1 "after": once that call returned),
# where the shell command $2 runs; then gdb kills it (SIGKILL).
killed_at_ack() {
	local -a fin=()
	command -v gdb >/dev/null || fail "gdb is not installed"
	[ "$1" != after ] || fin=(-ex finish)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    run timeout -k 5 60 gdb -q -batch -ex 'set breakpoint pending on' \
	    -ex 'break mq_receipt_ack' -ex "run --once -- $W/job </dev/null" \
	    "${fin[@]}" -ex "shell $2" -ex kill --args "$(bin_of mq-recv)" </dev/null
	assert_output --partial "Breakpoint 1"
}

@test "once: a job that exits 0 is in the ledger before its message is gone; then acked" {
	job none
	id=$(echo a | mq-send)
	# Stopped where the ack is made: the entry is there, and durable
	# (synced before), while the message still is in flight.
	killed_at_ack before "ls $MQ_DIR/once >$W/once.at; find $MQ_DIR/cur -type f | wc -l >$W/cur.at"
	assert_equal "$(cat "$W/once.at")" "i$id"
	assert_equal "$(cat "$W/cur.at")" 1
	# Run to its end, the worker syncs once/ and then acks.
	rm -rf "${MQ_DIR:?}/once"
	echo b | mq-send >/dev/null
	# LeakSanitizer (a sanitized build) cannot work under ptrace.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    run timeout 20 strace -e trace=openat,fsync,unlinkat -o "$W/trace" mq-recv -n 1 --once -- "$W/job"
	assert_success
	rec=$(grep -n 'openat([0-9]*, "i' "$W/trace" | cut -d: -f1)
	ack=$(grep -nE 'unlinkat\([0-9]+, "[0-9a-f]{16}\.[^"]*,[0-9]+"' "$W/trace" | cut -d: -f1 | tail -n 1)
	sync=$(awk -v r="$rec" 'NR > r && /fsync/ { print NR; exit }' "$W/trace")
	[ -n "$rec" ] && [ -n "$sync" ] && [ -n "$ack" ] || fail "no record, sync or ack: $output"
	[ "$rec" -lt "$sync" ] && [ "$sync" -lt "$ack" ] || fail "record $rec, sync $sync, ack $ack"
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

@test "once: a message sent again with a recorded key is acked without running, said with -v and logged as skipped" {
	job none
	echo a | mq-send -k k1 >/dev/null
	run -0 mq-recv --once -- "$W/job"
	id=$(echo a | mq-send -k k1)
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

@test "once: without --once, a worker neither looks at nor keeps a ledger" {
	job none
	echo a | mq-send -k k1 >/dev/null
	run -0 mq-recv --once -- "$W/job"
	echo a | mq-send -k k1 >/dev/null
	echo b | mq-send >/dev/null
	run -0 mq-recv -- "$W/job"
	assert_equal "$(runs)" 3
	assert_equal "$(entries)" 1
	rm -rf "${MQ_DIR:?}/once"
	echo c | mq-send >/dev/null
	run -0 mq-recv -- "$W/job"
	assert_not_exist "$MQ_DIR/once"
}

@test "once: worker killed before the job's effect: run again, counted once" {
	job before
	echo a | mq-send >/dev/null
	run -137 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 0
	assert_not_exist "$MQ_DIR/once"
	# Its lease orphaned, the next claim takes it at once.
	none_held
	run -0 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 1
	assert_equal "$(entries)" 1
	assert_equal "$(count cur)" 0
}

@test "once: worker killed after the job's effect, before its record: run twice, the one window" {
	job after
	echo a | mq-send >/dev/null
	run -137 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 1
	assert_not_exist "$MQ_DIR/once"
	none_held
	run -0 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 2
	assert_equal "$(entries)" 1
}

@test "once: worker killed after the record, before the ack: not run again, acked" {
	job none
	id=$(echo a | mq-send)
	killed_at_ack before true
	assert_equal "$(runs)" 1
	assert_equal "$(count cur)" 1
	run -0 --separate-stderr mq-recv -v --once -- "$W/job"
	assert_equal "$(runs)" 1
	[[ $stderr == *"$id: finished before (--once): acked, not run"* ]]
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 0
}

@test "once: worker killed after the ack: nothing left to run" {
	job none
	echo a | mq-send >/dev/null
	killed_at_ack after true
	assert_equal "$(runs)" 1
	assert_equal "$(count cur)" 0
	run -1 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 1
	assert_equal "$(entries)" 1
}

@test "once: -P 8 over 200 messages: each run once, 200 entries" {
	job none
	seq 1 200 | mq-send -l >/dev/null
	run -0 timeout 120 mq-recv -P 8 --once -- "$W/job"
	assert_equal "$(runs)" 200
	assert_equal "$(sort -u "$W/count" | wc -l | tr -d ' ')" 200
	assert_equal "$(entries)" 200
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	assert_equal "$(count dead)" 0
}

@test "once: a stale holder and a new one finishing together: one entry, one ack, the stale one's lease lost" {
	# Each job says it started, then waits for go.
	cat >"$W/job" <<EOF
#!/bin/sh
cat >/dev/null
echo "\$MQ_ATTEMPT" >>"$W/started"
i=0
while [ ! -e "$W/go" ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
echo "\$MQ_ID" >>"$W/count"
EOF
	chmod +x "$W/job"
	id=$(echo a | mq-send)
	mq-recv -t 1 -n 1 --once -- "$W/job" 2>"$W/stale.err" &
	echo $! >"$BATS_TEST_TMPDIR/stale.pid"
	within 10 lines_of "$W/started" 1
	# Stopped, it keeps no lease: the lease runs out, another claims it.
	kill -STOP "$(cat "$BATS_TEST_TMPDIR/stale.pid")"
	mq-recv -w 20 -n 1 --once -- "$W/job" 2>"$W/new.err" &
	echo $! >"$BATS_TEST_TMPDIR/new.pid"
	within 20 lines_of "$W/started" 2
	touch "$W/go"
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
	run -0 mq-log --kind ack "$id"
	assert_equal "$(grep -c "ack  *$id" <<<"$output")" 1
	run -0 mq-log --kind job "$id"
	assert_line --regexp "attempt=1 .*outcome=lost"
	assert_line --regexp "attempt=2 .*outcome=acked"
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 0
}

@test "once: a record that cannot be made acks nothing: released, said, the worker claims no more (exit 4)" {
	job none
	id=$(echo a | mq-send)
	echo b | mq-send >/dev/null
	run -4 --separate-stderr faulty 'openat:errno=ENOSPC:at=spool/once/i' mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 1
	assert_equal "$stderr" "mq-recv: $id: $MQ_DIR/once: No space left on device; not recorded (--once), released"
	assert_equal "$(count new)" 2
	assert_equal "$(count cur)" 0
	run -0 mq-log --kind job "$id"
	assert_output --regexp "outcome=released"
	# Recorded this time: run again, as no entry landed.
	run -0 mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 3
	assert_equal "$(entries)" 2
}

@test "once: a sync of the ledger that fails acks nothing: released; an entry that landed all the same skips it next time" {
	job none
	id=$(echo a | mq-send)
	run -4 --separate-stderr faulty 'fsync:errno=EIO:at=spool/once' mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 1
	assert_equal "$stderr" "mq-recv: $MQ_DIR/once: Input/output error; 1 recorded message not acked (--once), released"
	assert_equal "$(count new)" 1
	run -0 --separate-stderr mq-recv -v --once -- "$W/job"
	assert_equal "$(runs)" 1
	[[ $stderr == *"$id: finished before (--once): acked, not run"* ]]
	assert_equal "$(count new)" 0
}

@test "once: a ledger that cannot be read runs no job: the message goes back as it came, the worker stops (exit 4)" {
	job none
	echo a | mq-send >/dev/null
	# once/ a file: no entry can be looked up in it.
	touch "$MQ_DIR/once"
	run -4 --separate-stderr mq-recv --once -- "$W/job"
	assert_equal "$(runs)" 0
	assert_equal "$stderr" "mq-recv: $MQ_DIR/once: Not a directory"
	assert_equal "$(count new)" 1
	r=$(mq-recv)
	[ "${r##*,}" = 1 ]
}

@test "once: mq-sweep removes entries past once-window; younger ones and what is no entry stay" {
	job none
	mq-conf once-window=1h
	id=$(echo a | mq-send)
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
