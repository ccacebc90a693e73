load helper

# A paused spool (mq-conf paused=yes): mq-recv claims nothing, worker mode
# stops claiming and lets its jobs finish, mq-send still works.  Jobs
# write what they did into $W (outside the spool).

setup() {
	W=$BATS_TEST_TMPDIR/w
	mkdir -p "$W"
	export W
}

# A spool made on /dev/shm, outside the test's directory.
teardown() {
	if [ -e "$BATS_TEST_TMPDIR/shm" ]; then
		rm -rf "$(cat "$BATS_TEST_TMPDIR/shm")"
	fi
}

# Waits (at most 20 s) until the command succeeds.
wait_for() {
	local i=0
	until "$@"; do
		[ $i -lt 400 ] || return 1
		sleep 0.05
		i=$((i + 1))
	done
}

started() { # n: at least n jobs have started
	[ "$(find "$W" -name 'started.*' | wc -l)" -ge "$1" ]
}

empty() { # state directory: holds no message
	[ "$(count "$1")" -eq 0 ]
}

said_times() { # n, text, file: n lines of the file end with text
	[ "$(grep -c -- "$2\$" "$3")" -eq "$1" ]
}

said() { # text, file: a line of the file ends with text
	grep -q -- "$1\$" "$2" 2>/dev/null
}

# CPU time (user + system, in clock ticks) that process $1 has used.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# The pid of mq-recv itself under timeout(1), which writes it to $W/pid
# (timeout's own pid would not count the CPU time of its child).
recv_pid() {
	wait_for test -s "$W/pid"
	cat "$W/pid"
}

@test "mq-recv: a paused spool: exit 1 at once, saying so (not silent as on an empty one), nothing claimed" {
	printf 'a\nb\n' | mq-send -l >/dev/null
	mq-conf paused=yes
	run -1 --separate-stderr timeout -k 5 20 mq-recv -n 2
	[ -z "$output" ]
	assert_equal "$stderr" "mq-recv: $MQ_DIR: paused"
	assert_equal "$(count new)" 2
	assert_equal "$(count cur)" 0
	run -1 --separate-stderr mq-recv -v
	assert_equal "$stderr" "mq-recv: $MQ_DIR: paused"
	assert_equal "$(count new)" 2
	mq-conf paused=no
	run -0 mq-recv -n 2
	assert_equal "${#lines[@]}" 2
}

@test "mq-recv -w: waits while paused and claims once resumed" {
	echo a | mq-send >/dev/null
	mq-conf paused=yes
	timeout -k 5 20 mq-recv -v -w >"$W/out" 2>"$W/err" &
	pid=$!
	wait_for said "paused" "$W/err"
	sleep 0.3
	# Still waiting, nothing claimed.
	kill -0 "$pid"
	[ ! -s "$W/out" ]
	assert_equal "$(count cur)" 0
	mq-conf paused=no
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(wc -l <"$W/out")" 1
	assert_equal "$(cat "$(cat "$W/out")")" a
}

@test "mq-recv -w: the resume is seen with MQ_WAIT=poll too" {
	echo a | mq-send >/dev/null
	mq-conf paused=yes
	MQ_WAIT=poll timeout -k 5 20 mq-recv -v -w >"$W/out" 2>"$W/err" &
	pid=$!
	wait_for said "paused" "$W/err"
	mq-conf paused=no
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(cat "$(cat "$W/out")")" a
}

@test "mq-recv -w: a spool paused while it waits is not claimed from" {
	mq-send -l </dev/null
	timeout -k 5 20 mq-recv -w >"$W/out" &
	pid=$!
	sleep 0.3
	mq-conf paused=yes
	echo a | mq-send >/dev/null
	sleep 0.5
	kill -0 "$pid"
	[ ! -s "$W/out" ]
	assert_equal "$(count new)" 1
	mq-conf paused=
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(count new)" 0
}

@test "mq-recv -w SECS: still paused after SECS: exit 1, nothing claimed" {
	echo a | mq-send >/dev/null
	mq-conf paused=yes
	run -1 --separate-stderr timeout -k 5 20 mq-recv -w 0.5
	[ -z "$output" ]
	assert_equal "$stderr" "mq-recv: $MQ_DIR: paused"
	assert_equal "$(count new)" 1
}

@test "mq-send: a paused spool still takes messages" {
	mq-conf paused=yes
	run -0 mq-send <<<"x"
	run -0 mq-send -l <<<$'y\nz'
	assert_equal "$(count new)" 3
	mq-conf paused=no
	run -0 mq-recv -n 3
	assert_equal "${#lines[@]}" 3
}

@test "worker: a paused spool without -w: exit 1, saying so, no job run" {
	echo a | mq-send >/dev/null
	mq-conf paused=yes
	run -1 --separate-stderr timeout -k 5 20 mq-recv -- touch "$W/ran"
	assert_equal "$stderr" "mq-recv: $MQ_DIR: paused"
	assert_not_exist "$W/ran"
	assert_equal "$(count new)" 1
}

@test "worker -w SECS: paused time counts as idle: exit 1 after SECS, no job run" {
	echo a | mq-send >/dev/null
	mq-conf paused=yes
	run -1 --separate-stderr timeout -k 5 20 mq-recv -v -w 0.5 -- touch "$W/ran"
	assert_equal "$stderr" "mq-recv: $MQ_DIR: paused"
	assert_not_exist "$W/ran"
	assert_equal "$(count new)" 1
}

# A worker (-P 1) is busy with the first of three messages when the spool
# is paused: it must see the pause while its slot is busy, let the job
# finish and ack it, claim nothing more, and go on once resumed.
pause_while_busy() {
	local pid st=0
	printf '1\n2\n3\n' | mq-send -l >/dev/null
	# shellcheck disable=SC2016 # expanded by the job's shell
	timeout -k 5 30 mq-recv -v -w 2 -- sh -c '
		b=$(cat)
		touch "$W/started.$b"
		i=0
		while [ ! -e "$W/go" ] && [ $i -lt 400 ]; do
			sleep 0.05
			i=$((i + 1))
		done
		echo "$b" >>"$W/done"' 2>"$W/err" &
	pid=$!
	wait_for started 1
	mq-conf paused=yes
	# Seen while the only slot is busy: before the job is let go.
	wait_for said "$MQ_DIR: paused" "$W/err"
	assert_equal "$(find "$W" -name 'started.*' | wc -l)" 1
	touch "$W/go"
	wait_for test -s "$W/done"
	# The running job was settled: acked, and nothing else claimed.
	wait_for empty cur
	sleep 0.5
	assert_equal "$(find "$W" -name 'started.*' | wc -l)" 1
	assert_equal "$(count new)" 2
	assert_equal "$(count cur)" 0
	kill -0 "$pid"
	mq-conf paused=no
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(cat "$W/done")" "$(printf '1\n2\n3')"
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	assert_equal "$(count dead)" 0
	assert_equal "$(grep -c ': paused$' "$W/err")" 1
	assert_equal "$(grep -c ': resumed$' "$W/err")" 1
}

@test "worker: pause lets the running job finish and be acked, claims nothing, resume goes on" {
	pause_while_busy
}

@test "worker: the pause and the resume are seen with MQ_WAIT=poll too" {
	MQ_WAIT=poll
	export MQ_WAIT
	pause_while_busy
}

@test "worker: pause and resume again and again; -v says each once" {
	seq 1 4 | mq-send -l >/dev/null
	mq-conf paused=yes
	# shellcheck disable=SC2016 # expanded by the job's shell
	timeout -k 5 30 mq-recv -v -w 2 -- sh -c 'cat >>"$W/done"; echo >>"$W/done"' 2>"$W/err" &
	pid=$!
	wait_for said "paused" "$W/err"
	for i in 1 2; do
		mq-conf paused=no
		wait_for empty new
		mq-conf paused=yes
		wait_for said_times $((i + 1)) ': paused' "$W/err"
		echo "more$i" | mq-send >/dev/null
		sleep 0.3
		assert_equal "$(count new)" 1
	done
	mq-conf paused=no
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(grep -c ': paused$' "$W/err")" 3
	assert_equal "$(grep -c ': resumed$' "$W/err")" 3
	assert_equal "$(grep -c . "$W/done")" 6
}

# A paused worker sleeps: it uses (nearly) no CPU while it waits, where a
# busy loop would take a whole second of it per second.
paused_idle_cpu() {
	local pid before after
	mq-conf paused=yes
	# shellcheck disable=SC2016 # expanded by that shell
	timeout -k 5 30 sh -c 'echo $$ >"$0"; exec mq-recv -w -- true' "$W/pid" &
	pid=$!
	recv=$(recv_pid)
	sleep 0.3
	before=$(cpu_ticks "$recv")
	sleep 1
	after=$(cpu_ticks "$recv")
	kill -TERM "$recv"
	wait "$pid" || true
	[ $((after - before)) -lt 20 ]
}

@test "worker: paused, it waits without a busy loop" {
	paused_idle_cpu
}

@test "worker: paused, it waits without a busy loop, MQ_WAIT=poll too" {
	MQ_WAIT=poll
	export MQ_WAIT
	paused_idle_cpu
}

@test "worker: a busy worker on a paused spool does not spin either" {
	echo a | mq-send >/dev/null
	# shellcheck disable=SC2016 # expanded by the shells
	timeout -k 5 30 sh -c 'echo $$ >"$0"; exec mq-recv -v -w -- sh -c '\''touch "$W/started.1"; sleep 3'\' \
	    "$W/pid" 2>"$W/err" &
	pid=$!
	recv=$(recv_pid)
	wait_for started 1
	mq-conf paused=yes
	wait_for said "$MQ_DIR: paused" "$W/err"
	before=$(cpu_ticks "$recv")
	sleep 1
	after=$(cpu_ticks "$recv")
	kill -TERM "$recv"
	kill -TERM "$recv"
	wait "$pid" || true
	[ $((after - before)) -lt 20 ]
}

@test "worker: settings that stop parsing while it runs: the running job finishes and is acked, exit 4" {
	printf '1\n2\n' | mq-send -l >/dev/null
	# shellcheck disable=SC2016 # expanded by the job's shell
	timeout -k 5 30 mq-recv -w -- sh -c '
		b=$(cat)
		touch "$W/started.$b"
		i=0
		while [ ! -e "$W/go" ] && [ $i -lt 400 ]; do
			sleep 0.05
			i=$((i + 1))
		done
		echo "$b" >>"$W/done"' 2>"$W/err" &
	pid=$!
	wait_for started 1
	echo 'paused=maybe' >"$MQ_DIR/conf"
	# What mq-conf does after its write: ring the doorbell.
	touch "$MQ_DIR/new"
	wait_for said "conf: line 1: not yes/no, true/false, on/off, 1/0, a duration or a time (2026-12-05T08:00:00Z)" "$W/err"
	touch "$W/go"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 4
	assert_equal "$(cat "$W/done")" 1
	assert_equal "$(count cur)" 0
	assert_equal "$(count new)" 1
}

@test "mq-recv -w and a worker with -w on a paused spool say so once, without -v" {
	echo a | mq-send >/dev/null
	mq-conf paused=yes
	run -1 --separate-stderr timeout -k 5 20 mq-recv -w 0.5
	assert_equal "$stderr" "mq-recv: $MQ_DIR: paused"
	run -1 --separate-stderr timeout -k 5 20 mq-recv -w 0.5 -- touch "$W/ran"
	assert_equal "$stderr" "mq-recv: $MQ_DIR: paused"
	assert_not_exist "$W/ran"
	# An empty spool that is not paused stays silent.
	mq-conf paused=no
	mq-rm --all
	run -1 --separate-stderr timeout -k 5 20 mq-recv -w 0.2
	[ -z "$stderr" ]
}

@test "worker: paused and resumed are said without -v, once each" {
	mq-conf paused=yes
	timeout -k 5 60 mq-recv -w -- cat >"$W/out" 2>"$W/err" &
	pid=$!
	wait_for said "$MQ_DIR: paused" "$W/err"
	echo a | mq-send >/dev/null
	mq-conf paused=no
	wait_for said "$MQ_DIR: resumed" "$W/err"
	wait_for test -s "$W/out"
	kill -TERM "$pid"
	wait "$pid" || true
	assert_equal "$(grep -c ': paused$' "$W/err")" 1
	assert_equal "$(grep -c ': resumed$' "$W/err")" 1
}

# pause_rounds BASE: 50 rounds under BASE, each a worker (-P 1, no -w) of
# three messages whose first job, the instant it has started, sees the
# spool paused (mq-conf paused=yes run and returned) and is then let end:
# not one more job may start, and the worker ends by itself (paused is as
# empty), its first message acked, the other two waiting.
pause_rounds() {
	local base=$1 i n pid st
	cat >"$W/job" <<'EOF'
#!/bin/sh
cat >/dev/null
echo "$MQ_ID" >>"$1.started"
i=0
while [ ! -e "$1.go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
EOF
	chmod +x "$W/job"
	for ((i = 0; i < 50; i++)); do
		export MQ_DIR=$base/q$i
		seq 1 3 | mq-send -l >/dev/null
		timeout -k 5 60 mq-recv -P 1 -- "$W/job" "$base/r$i" 2>"$base/r$i.err" &
		pid=$!
		wait_for test -s "$base/r$i.started" || fail "round $i: no job started"
		mq-conf paused=yes
		touch "$base/r$i.go"
		st=0
		wait "$pid" || st=$?
		n=$(wc -l <"$base/r$i.started")
		[ "$n" -eq 1 ] ||
		    fail "round $i: $n jobs started; none may start once mq-conf paused=yes has returned"
		[ "$st" -eq 0 ] || fail "round $i: the worker exited $st: $(cat "$base/r$i.err")"
		if [ "$(count new)" -ne 2 ] || [ "$(count cur)" -ne 0 ]; then
			fail "round $i: $(count new) waiting, $(count cur) in flight"
		fi
		grep -q "paused" "$base/r$i.err" || fail "round $i: the pause not said: $(cat "$base/r$i.err")"
		rm -rf "$MQ_DIR"
	done
}

@test "worker: paused the instant a job starts, on tmpfs: no further job starts once mq-conf has returned (50 rounds)" {
	[ -d /dev/shm ] && [ -w /dev/shm ] || fail "no /dev/shm to make a tmpfs spool in"
	[ "$(stat -f -c %T /dev/shm)" = tmpfs ] || fail "/dev/shm is not a tmpfs"
	base=$(mktemp -d /dev/shm/mq-pause.XXXXXX)
	echo "$base" >"$BATS_TEST_TMPDIR/shm"
	pause_rounds "$base"
}

@test "worker: paused the instant a job starts, on disk: no further job starts once mq-conf has returned (50 rounds)" {
	base=$BATS_TEST_TMPDIR/disk
	mkdir -p "$base"
	[ "$(stat -f -c %T "$base")" != tmpfs ] ||
	    skip "$BATS_TEST_TMPDIR is a tmpfs: the tmpfs test covers it"
	pause_rounds "$base"
}

@test "worker: a lease set while a job runs is the next claim's lease" {
	cat >"$W/job" <<EOF
#!/bin/sh
cat >/dev/null
echo "\$MQ_ID" >>"$W/started"
i=0
while [ ! -e "$W/go.\$MQ_ID" ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
EOF
	chmod +x "$W/job"
	seq 1 2 | mq-send -l >"$W/ids"
	timeout -k 5 60 mq-recv -P 1 -- "$W/job" 2>"$W/err" &
	pid=$!
	wait_for test -s "$W/started"
	mq-conf lease=3600
	touch "$W/go.$(sed -n 1p "$W/ids")"
	wait_for eval '[ "$(wc -l <"$W/started")" -ge 2 ]'
	# The second message's lease: an hour from its claim, not 30 s.
	left=$(mq-ls -l -s inflight | awk -F'\t' '{ print $4 }')
	touch "$W/go.$(sed -n 2p "$W/ids")"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	run -0 date -u -d "$left" +%s
	[ $((output - $(date +%s))) -gt 3000 ] || fail "the lease ends at $left"
}

@test "worker: a setting changed by its own job does not stop it: the rest of the queue runs, with inotify and with MQ_WAIT=poll" {
	# Each job changes the lease and ends at once: the next claim is the
	# first to see the change, and is stopped by it before it leases.
	cat >"$W/job" <<EOF
#!/bin/sh
cat >/dev/null
echo "\$MQ_ID" >>"$W/started.\$MQ_WAIT"
mq-conf lease=\$((3600 + \$(wc -l <"$W/started.\$MQ_WAIT")))
EOF
	chmod +x "$W/job"
	for wait in inotify poll; do
		seq 1 5 | mq-send -l >/dev/null
		st=0
		MQ_WAIT=$wait timeout -k 5 60 mq-recv -P 1 -- "$W/job" \
		    2>"$W/err" || st=$?
		[ "$st" -eq 0 ] || fail "MQ_WAIT=$wait: exit $st: $(cat "$W/err")"
		run -0 wc -l <"$W/started.$wait"
		[ "$output" -eq 5 ] ||
		    fail "MQ_WAIT=$wait: $output of 5 jobs run before the worker stopped"
		run -0 mq-conf lease
		assert_output "3605"
		[ "$(count new)" -eq 0 ] || fail "MQ_WAIT=$wait: $(count new) left"
	done
}

@test "worker: paused until a time, a resume before it is seen at once, with inotify and with MQ_WAIT=poll" {
	for wait in inotify poll; do
		echo "$wait" | mq-send >/dev/null
		mq-conf paused=1h
		st=0
		# shellcheck disable=SC2016 # expanded by the job's shell
		MQ_WAIT=$wait timeout -k 5 20 mq-recv -n 1 -w -- \
		    sh -c 'cat >"$W/done.$MQ_WAIT"' 2>"$W/err.$wait" &
		pid=$!
		wait_for said "$MQ_DIR: paused" "$W/err.$wait"
		mq-conf paused=no
		wait "$pid" || st=$?
		[ "$st" -eq 0 ] ||
		    fail "MQ_WAIT=$wait: exit $st: $(cat "$W/err.$wait")"
		assert_equal "$(cat "$W/done.$wait")" "$wait"
		said "$MQ_DIR: resumed" "$W/err.$wait"
	done
}

@test "mq-recv -n: a setting changed between its claims: the rest of the n are claimed, by the new one" {
	seq 1 3 | mq-send -l >/dev/null
	# Stopped at its first receipt while mq-conf sets the lease.
	race_at mq-recv print_receipt "-n 3 >$W/out" "mq-conf lease=3600" 3
	[[ $output == *"Breakpoint 1"* ]] || fail "print_receipt was not reached: $output"
	[[ $output == *"exited normally"* ]] || fail "mq-recv failed: $output"
	assert_equal "$(grep -c . "$W/out")" 3
	assert_equal "$(count new)" 0
	# The first by the lease before, the others by the new one.
	now=$(date +%s)
	n=0
	while IFS=, read -r _ deadline _; do
		[ $((${deadline%.*} - now)) -gt 3000 ] && n=$((n + 1))
	done < <(xargs -n 1 basename <"$W/out" | unheld)
	assert_equal "$n" 2
}

@test "mq-recv -n: a batch a pause cuts short says paused, prints what it claimed before, exit 0" {
	seq 1 3 | mq-send -l >/dev/null
	# Stopped at its first receipt while mq-conf pauses the spool.
	race_at mq-recv print_receipt "-n 3 >$W/out 2>$W/err" "mq-conf paused=yes" 3
	[[ $output == *"Breakpoint 1"* ]] || fail "print_receipt was not reached: $output"
	[[ $output == *"exited normally"* ]] || fail "mq-recv failed: $output"
	assert_equal "$(grep -c . "$W/out")" 1
	assert_equal "$(cat "$W/err")" "mq-recv: $MQ_DIR: paused"
	assert_equal "$(count new)" 2
}

@test "worker: a claim stopped by a setting changed by its own job keeps the order: oldest first" {
	cat >"$W/job" <<EOF
#!/bin/sh
cat >/dev/null
echo "\$MQ_ID" >>"$W/started"
mq-conf lease=\$((3600 + \$(wc -l <"$W/started")))
EOF
	chmod +x "$W/job"
	seq 1 6 | mq-send -l >"$W/ids"
	run -0 timeout -k 5 60 mq-recv -P 1 -- "$W/job"
	assert_equal "$(cat "$W/started")" "$(cat "$W/ids")"
}

@test "worker: a claim stopped between its leases by a change of conf keeps the order: oldest first" {
	seq 1 4 | mq-send -l >"$W/ids"
	# Stopped as its first job starts, while mq-conf sets the lease.
	race_at mq-recv start "-v -P 2 -- true 2>$W/err" "mq-conf lease=3600" 4
	[[ $output == *"Breakpoint 1"* ]] || fail "start was not reached: $output"
	[[ $output == *"exited normally"* ]] || fail "mq-recv failed: $output"
	run -0 sed -n 's/^mq-recv: \([^:]*\): attempt 1: started$/\1/p' "$W/err"
	assert_output "$(cat "$W/ids")"
}
