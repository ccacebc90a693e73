load helper

# A worker (or a crafted holder) left running when a test failed.
teardown() {
	kill_left
}

# Waits (10 s at most) until mq-ls says the one lease is orphaned: a
# worker killed is gone at once, its job (killed with it) a moment after.
orphaned_soon() {
	within 10 eval 'mq-ls -s orphaned | grep -q .'
}

inflight_count() {
	[ "$(mq-ls -s inflight -s orphaned | wc -l)" -eq "$1" ]
}

# A worker with a lease of 300 s holding the one message there is, its
# pid in worker.pid.
worker_holding() {
	echo job | mq-send >"$BATS_TEST_TMPDIR/id"
	mq-conf lease=300 >/dev/null
	mq-recv -- sleep 600 &
	echo $! >"$BATS_TEST_TMPDIR/worker.pid"
	within 10 inflight_count 1
}

# This process' pid space: the hash a claim writes (holders/SPACE).
our_space() {
	local s
	for s in "$MQ_DIR"/holders/*; do
		case ${s##*/} in
		????????) echo "${s##*/}"; return ;;
		esac
	done
	return 1
}

# The one lease's name, and its bucket.
lease() {
	find "$MQ_DIR/cur" -type f | head -n 1
}

# How many bound holders holders/ lists.
bound_holders() {
	find "$MQ_DIR/holders" -type f -name '*.*' | wc -l
}

# Renames the one lease to carry the holder "hK$2.$3.$4.0.$5" (kind $1,
# space, pid, start, since in hex).
hold_as() {
	local f n id rest
	f=$(lease)
	n=${f##*/}
	id=${n%%,*}
	rest=${n#*,}
	rest=${rest%%,h*}
	mv "$f" "${f%/*}/$id,$rest,h$1$2.$3.$4.0.$5,${n##*,}"
}

@test "holder: a claim names its holder: mq-ls -l user@host:pid, --json holder, mq-show -v; mq-recv's receipts are not bound" {
	seq 1 2 | mq-send -l >/dev/null
	r=$(mq-recv)
	run -0 mq-ls -l -s inflight
	assert_output --regexp "	$(id -un)@$(uname -n):[0-9]+\$"
	run -0 mq-ls --json -s inflight
	run -0 jq -r '.holder | [.host, (.pid|type), .uid, .user, .bound, (.since|test("^[0-9-]+T[0-9:]+Z$"))] | @tsv' <<<"$output"
	assert_output "$(printf '%s\tnumber\t%s\t%s\tfalse\ttrue' "$(uname -n)" "$(id -u)" "$(id -un)")"
	id=$(basename "$r" | cut -d, -f1)
	run -0 --separate-stderr mq-show -v "$id"
	assert_regex "$stderr" "^mq-show: $id: inflight, held by $(id -un)@$(uname -n):[0-9]+ since "
	# Waiting messages have none.
	run -0 mq-ls -l -s ready
	assert_output --regexp '	-$'
	run -0 mq-ls --json -s ready
	refute_output --partial holder
	# A plain message's receipt still ends with its attempt.
	[ "${r##*,}" = 1 ]
}

@test "holder: a worker is named bound, with its command; holders/ keeps it while it runs, not after" {
	worker_holding
	run -0 mq-ls --json -s inflight
	run -0 jq -r '.holder | [.bound, .tool, .command, .pid] | @tsv' <<<"$output"
	assert_output "$(printf 'true\tmq-recv\tsleep 600\t%s' "$(cat "$BATS_TEST_TMPDIR/worker.pid")")"
	run -0 --separate-stderr mq-show -v "$(cat "$BATS_TEST_TMPDIR/id")"
	assert_regex "$stderr" "inflight, held by .*:$(cat "$BATS_TEST_TMPDIR/worker.pid") \\(mq-recv: sleep 600\\) since "
	[ "$(bound_holders)" -eq 1 ]
	# A second signal kills its job: it ends, and forgets its record.
	kill -TERM "$(cat "$BATS_TEST_TMPDIR/worker.pid")"
	sleep 0.2
	kill -TERM "$(cat "$BATS_TEST_TMPDIR/worker.pid")"
	within 10 eval '[ "$(bound_holders)" -eq 0 ]'
	run wait "$(cat "$BATS_TEST_TMPDIR/worker.pid")"
}

@test "holder: a killed worker's lease is orphaned; the next claim takes it at once as a lease run out (attempt 2, logged)" {
	worker_holding
	kill -9 "$(cat "$BATS_TEST_TMPDIR/worker.pid")"
	wait "$(cat "$BATS_TEST_TMPDIR/worker.pid")" || true
	orphaned_soon
	run -0 mq-ls
	assert_output --regexp "^$(cat "$BATS_TEST_TMPDIR/id")	orphaned	1	"
	r=$(mq-recv)
	[ "${r##*,}" = 2 ]
	assert_equal "$(cat "$r")" job
	run -0 mq-log --kind orphan,claim "$(cat "$BATS_TEST_TMPDIR/id")"
	assert_line --index 1 --regexp "orphan +$(cat "$BATS_TEST_TMPDIR/id") .*attempt=1 holder_pid=$(cat "$BATS_TEST_TMPDIR/worker.pid")"
	assert_line --index 2 --regexp "claim +.*attempt=2 expired=yes"
	# Its holder forgotten: nobody left to look at.
	[ "$(bound_holders)" -eq 0 ]
}

@test "holder: mq-sweep takes an orphaned lease back at once, its attempt counted as for one run out" {
	worker_holding
	kill -9 "$(cat "$BATS_TEST_TMPDIR/worker.pid")"
	wait "$(cat "$BATS_TEST_TMPDIR/worker.pid")" || true
	orphaned_soon
	# Its holder's file lost (a power cut): mq-sweep judges every lease.
	rm "$MQ_DIR"/holders/*.*
	run -0 mq-sweep
	run -0 mq-ls
	assert_output --regexp "^$(cat "$BATS_TEST_TMPDIR/id")	ready	1	"
	r=$(mq-recv)
	[ "${r##*,}" = 2 ]
}

@test "holder: a live busy holder's lease is never taken, by a claim or by mq-sweep" {
	worker_holding
	run -1 mq-recv
	run -0 mq-sweep
	run -0 mq-ls
	assert_output --regexp "	inflight	1	"
	# The worker's job is still the first: it was never handed out again.
	run -0 mq-log --kind claim
	assert_equal "${#lines[@]}" 1
}

@test "holder: a pid used again by another process (its start differs) is gone; the same pid and start is not" {
	echo job | mq-send >/dev/null
	mq-conf lease=300 >/dev/null
	mq-recv >/dev/null
	space=$(our_space)
	sleep 600 &
	pid=$!
	echo "$pid" >"$BATS_TEST_TMPDIR/sleep.pid"
	start=$(cut -d' ' -f22 <"/proc/$pid/stat")
	since=$(printf %x "$(date +%s)")
	# The process itself: alive, busy.
	hold_as w "$space" "$(printf %x "$pid")" "$(printf %x "$start")" "$since"
	touch "$MQ_DIR/holders/$space.$(printf %x "$pid").$(printf %x "$start")"
	run -0 mq-ls
	assert_output --regexp "	inflight	1	"
	run -1 mq-recv
	# Another process that was given its pid: started at another time.
	hold_as w "$space" "$(printf %x "$pid")" "$(printf %x $((start + 1)))" "$since"
	touch "$MQ_DIR/holders/$space.$(printf %x "$pid").$(printf %x $((start + 1)))"
	run -0 mq-ls
	assert_output --regexp "	orphaned	1	"
	r=$(mq-recv)
	[ "${r##*,}" = 2 ]
}

@test "holder: a zombie holder (killed, not reaped yet) is gone" {
	echo job | mq-send >"$BATS_TEST_TMPDIR/id"
	mq-conf lease=300 >/dev/null
	# Its parent never waits for it: killed, it stays a zombie.
	sh -c 'mq-recv -- sleep 600 & echo $! >"$1"; exec sleep 600' sh \
	    "$BATS_TEST_TMPDIR/worker.pid" &
	echo $! >"$BATS_TEST_TMPDIR/parent.pid"
	within 10 inflight_count 1
	kill -9 "$(cat "$BATS_TEST_TMPDIR/worker.pid")"
	within 10 grep -q '^[^)]*) Z' "/proc/$(cat "$BATS_TEST_TMPDIR/worker.pid")/stat"
	orphaned_soon
	run -0 mq-ls
	assert_output --regexp "	orphaned	1	"
	r=$(mq-recv)
	[ "${r##*,}" = 2 ]
}

@test "holder: another host's holder, one of another pid namespace of this boot and one of an earlier boot of this host are left alone" {
	echo job | mq-send >/dev/null
	mq-conf lease=300 >/dev/null
	mq-recv >/dev/null
	space=$(our_space)
	boot=$(cat /proc/sys/kernel/random/boot_id)
	since=$(printf %x "$(date +%s)")
	# A pid that is surely no process here.
	pid=$(printf %x 4000000)
	printf 'host=elsewhere.example\nboot=%s\npidns=1\n' "$boot" \
	    >"$MQ_DIR/holders/0badc0de"
	touch "$MQ_DIR/holders/0badc0de.$pid.1"
	hold_as w 0badc0de "$pid" 1 "$since"
	run -0 mq-ls
	assert_output --regexp "	inflight	1	"
	run -1 mq-recv
	run -0 mq-sweep
	run -0 mq-ls
	assert_output --regexp "	inflight	1	"
	# This host, this boot, another pid namespace (a container).
	printf 'host=%s\nboot=%s\npidns=1\n' "$(uname -n)" "$boot" \
	    >"$MQ_DIR/holders/0badc0de"
	run -1 mq-recv
	run -0 mq-sweep
	run -0 mq-ls
	assert_output --regexp "	inflight	1	"
	# This host before it booted again: gone, surely, but a host's name
	# proves nothing (two sandboxes may share one): its lease runs out.
	printf 'host=%s\nboot=00000000-0000-0000-0000-000000000000\npidns=1\n' \
	    "$(uname -n)" >"$MQ_DIR/holders/0badc0de"
	run -1 mq-recv
	run -0 mq-sweep
	run -0 mq-ls
	assert_output --regexp "	inflight	1	"
	[ -e "$MQ_DIR/holders/$space" ]
}

@test "holder: a worker killed while its job's children run on is not gone until they are" {
	echo job | mq-send >"$BATS_TEST_TMPDIR/id"
	mq-conf lease=300 >/dev/null
	# The job's first process dies with the worker; its child does not.
	mq-recv -- sh -c 'sleep 600 & echo $! >"$1"; wait' sh "$BATS_TEST_TMPDIR/child.pid" &
	echo $! >"$BATS_TEST_TMPDIR/worker.pid"
	within 10 test -s "$BATS_TEST_TMPDIR/child.pid"
	# Its process group is in the worker's file before the job runs far.
	within 10 grep -q '^jobs=[0-9]' "$MQ_DIR"/holders/*.*
	kill -9 "$(cat "$BATS_TEST_TMPDIR/worker.pid")"
	wait "$(cat "$BATS_TEST_TMPDIR/worker.pid")" || true
	within 10 eval '! kill -0 "$(sed -n "s/^jobs=//p" "$MQ_DIR"/holders/*.* | cut -d" " -f1)" 2>/dev/null || kill -0 "$(cat "$BATS_TEST_TMPDIR/child.pid")"'
	run -0 mq-ls
	assert_output --regexp "	inflight	1	"
	run -1 mq-recv
	kill -9 "$(cat "$BATS_TEST_TMPDIR/child.pid")"
	within 10 eval '! kill -0 "$(cat "$BATS_TEST_TMPDIR/child.pid")" 2>/dev/null'
	run -0 mq-ls
	assert_output --regexp "	orphaned	1	"
	r=$(mq-recv)
	[ "${r##*,}" = 2 ]
}

@test "holder: mq-rm --all removes an orphaned message as a waiting one, without -f" {
	worker_holding
	kill -9 "$(cat "$BATS_TEST_TMPDIR/worker.pid")"
	wait "$(cat "$BATS_TEST_TMPDIR/worker.pid")" || true
	orphaned_soon
	run -0 mq-rm -v --all
	assert_output --partial "(orphaned)"
	assert_equal "$(mq-ls | wc -l)" 0
}

@test "holder: a receipt's holder gone is never judged: mq-recv's lease runs to its end" {
	echo job | mq-send >/dev/null
	mq-conf lease=300 >/dev/null
	mq-recv >/dev/null
	# mq-recv has exited: its receipt is someone else's to settle.
	run -0 mq-ls
	assert_output --regexp "	inflight	1	"
	run -1 mq-recv
	run -0 mq-sweep
	run -0 mq-ls
	assert_output --regexp "	inflight	1	"
}

@test "holder: a receiver waiting (-w) takes a killed worker's message within seconds, not at the lease's end" {
	worker_holding
	mq-recv -w 30 >"$BATS_TEST_TMPDIR/got" &
	waiter=$!
	echo "$waiter" >"$BATS_TEST_TMPDIR/waiter.pid"
	sleep 0.3
	kill -9 "$(cat "$BATS_TEST_TMPDIR/worker.pid")"
	wait "$(cat "$BATS_TEST_TMPDIR/worker.pid")" || true
	# Bounded by its own -w 30, well within the lease of 300 s.
	wait "$waiter"
	r=$(cat "$BATS_TEST_TMPDIR/got")
	[ "${r##*,}" = 2 ]
}

@test "holder: a lease extended (mq-ack -e) keeps its holder and since" {
	echo job | mq-send >/dev/null
	r=$(mq-recv)
	h=${r#*,h}
	h=${h%%,*}
	r2=$(mq-ack -e 120 "$r")
	h2=${r2#*,h}
	h2=${h2%%,*}
	assert_equal "$h2" "$h"
}

@test "holder: mq-top shows each lease's holder, and marks an orphaned one with !" {
	worker_holding
	pid=$(cat "$BATS_TEST_TMPDIR/worker.pid")
	id=$(cat "$BATS_TEST_TMPDIR/id")
	run -0 env COLUMNS=100 mq-top -b -n 1
	assert_line --regexp "^ $id +1/5 +[0-9]+s +[0-9]+m[0-9]+s $(id -un)@$(uname -n):$pid\$"
	kill -9 "$pid"
	wait "$pid" || true
	orphaned_soon
	run -0 env COLUMNS=100 mq-top -b -n 1
	assert_line --regexp "^!$id +1/5 +[0-9]+s +[0-9]+m[0-9]+s $(id -un)@$(uname -n):$pid\$"
}
