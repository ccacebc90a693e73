load helper

# The spool's log (mq-log): a record a line for each state change and
# each job.  Messages are named in $names ("NAME ID" lines) so that the
# records can be compared as text (digest).

setup() {
	names=$BATS_TEST_TMPDIR/names
	: >"$names"
	fpid=
}

teardown() {
	if [ -n "$fpid" ]; then
		kill "$fpid" 2>/dev/null || true
		wait "$fpid" 2>/dev/null || true
	fi
}

# name NAME ID: the message ID is called NAME in digest's output.
name() {
	echo "$1 $2" >>"$names"
}

# sendn NAME [mq-send options]: sends NAME as a message and names it.
sendn() {
	local n=$1 id
	shift
	id=$(echo "$n" | mq-send "$@") || return
	name "$n" "$id"
}

# digest [mq-log options]: mq-log --json as lines "KIND NAME KEY=VALUE...",
# the ID by its name (- for none, ? for one not named); time, pid and uid
# checked (ISO 8601 to the millisecond, a number, ours) and left out; the
# values that vary from run to run checked and shown as a letter: job_pid
# N (a number), start T (ISO 8601), runtime S (seconds), host H (this
# host's name), delay_ms D (a number of ms up to 600 s).
digest() {
	mq-log --json "$@" >"$BATS_TEST_TMPDIR/json" || return
	python3 - "$BATS_TEST_TMPDIR/json" "$names" "$(id -u)" "$(hostname)" <<'EOF'
import json, re, sys
names = dict(reversed(l.split()) for l in open(sys.argv[2]))
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r.pop("time")), line
    kind, i = r.pop("kind"), r.pop("id")
    assert type(r.pop("pid")) is int and r.pop("uid") == int(sys.argv[3]), line
    for k, ok, shown in (
            ("job_pid", lambda v: type(v) is int, "N"),
            ("start", lambda v: re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", v), "T"),
            ("runtime", lambda v: type(v) in (int, float) and v >= 0, "S"),
            ("host", lambda v: v == sys.argv[4], "H"),
            ("delay_ms", lambda v: type(v) is int and 0 < v <= 600000, "D")):
        if k in r:
            assert ok(r[k]), line
            r[k] = shown
    print(" ".join([kind, "-" if i is None else names.get(i, "?")] +
        ["%s=%s" % kv for kv in r.items()]))
EOF
}

# lines_in FILE N: waits (5 s at most) until FILE has N lines or more.
lines_in() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(wc -l <"$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# follow N [VAR=VALUE...]: mq-log -f in the background (with those
# variables set), its output in $BATS_TEST_TMPDIR/follow and its pid in
# $fpid; returns once it has printed the N records already there.
follow() {
	local n=$1
	shift
	env "$@" mq-log -f >"$BATS_TEST_TMPDIR/follow" 2>&1 &
	fpid=$!
	lines_in "$BATS_TEST_TMPDIR/follow" "$n" || fail "mq-log -f did not print the $n records there: $(cat "$BATS_TEST_TMPDIR/follow")"
}

# The IDs in mq-log's text output (the third column) of the file $1.
ids_in() {
	awk '{ print $3 }' "$1"
}

@test "mq-log: sends, claims, acks and releases are logged with their fields, oldest first" {
	sendn a -p 3
	sendn b -g G
	sendn c -D 600
	r=$(mq-recv)
	mq-ack -r --reason "not now" "$r"
	mq-ack "$(mq-recv)"
	r=$(mq-recv)
	mq-ack -r 60 "$r"
	run -0 digest
	assert_output "send a tool=mq-send prio=3
send b tool=mq-send group=G
send c tool=mq-send delay_ms=D
claim a tool=mq-recv attempt=1
release a tool=mq-ack attempt=1 reason=not now
claim a tool=mq-recv attempt=2
ack a tool=mq-ack attempt=2
claim b tool=mq-recv attempt=1
release b tool=mq-ack attempt=1 delay_ms=D"
}

@test "mq-log: a lease that ran out is told: mq-sweep's expire, and the claim that takes it after" {
	sendn a
	sendn b
	mq-recv -n 2 -t 0.1 >/dev/null
	sleep 0.3
	# One is taken by the claim that meets it, the other swept back.
	mq-recv -n 1 >/dev/null
	mq-sweep
	run -0 digest --kind claim,expire
	assert_equal "${#lines[@]}" 4
	assert_equal "${lines[0]}" "claim a tool=mq-recv attempt=1"
	assert_equal "${lines[1]}" "claim b tool=mq-recv attempt=1"
	# Which of the two the claim meets first is the claim's to choose.
	taken=$(cut -d' ' -f2 <<<"${lines[2]}")
	[ "$taken" = a ] && swept=b || swept=a
	assert_equal "${lines[2]}" "claim $taken tool=mq-recv attempt=2 expired=yes"
	assert_equal "${lines[3]}" "expire $swept tool=mq-sweep attempt=1"
	# Not counted: the next claim of b is.
	assert_equal "$(mq-stat --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["counters"]["claimed"])')" 3
}

@test "mq-log: a send to several spools is logged in each" {
	other=$BATS_TEST_TMPDIR/other
	id=$(echo x | mq-send -d "$MQ_DIR" -d "$other")
	name x "$id"
	run -0 digest
	assert_output "send x tool=mq-send"
	run -0 digest -d "$other"
	assert_output "send x tool=mq-send"
}

@test "mq-log: each death is logged with its cause, attempt and reason: rejected, attempts, ttl, maxlen" {
	sendn rejected
	mq-ack -x "bad input" "$(mq-recv)"
	sendn exit65
	run -5 mq-recv -- sh -c 'echo "cannot parse" >&2; exit 65'
	sendn spent
	run -5 mq-recv -m 1 -- sh -c 'echo oops >&2; exit 3'
	sendn expired --ttl 1
	ahead 5 mq-sweep
	mq-conf max-depth=1 overflow=drop-oldest
	sendn dropped
	sendn kept
	run -0 digest --kind dead
	assert_output "dead rejected tool=mq-ack cause=rejected attempt=1 reason=bad input
dead exit65 tool=mq-recv cause=rejected attempt=1 reason=exit 65: cannot parse
dead spent tool=mq-recv cause=attempts attempt=1 reason=max attempts; last: exit 3: oops
dead expired tool=mq-sweep cause=ttl attempt=0 reason=ttl
dead dropped tool=mq-send cause=maxlen attempt=0 reason=maxlen"
}

@test "mq-log: redrives, removals with their state, and purges are logged; a redrive elsewhere is a send there from here" {
	other=$BATS_TEST_TMPDIR/other
	for n in p q r s; do
		sendn "$n"
		mq-ack -x dead "$(mq-recv)"
	done
	mq-dlq redrive "$(grep '^p ' "$names" | cut -d' ' -f2)" 2>/dev/null
	mq-dlq redrive --to "$other" "$(grep '^q ' "$names" | cut -d' ' -f2)" 2>/dev/null
	mq-dlq purge "$(grep '^r ' "$names" | cut -d' ' -f2)" 2>/dev/null
	mq-rm "$(grep '^s ' "$names" | cut -d' ' -f2)"
	# p is ready again: claimed, it is in flight.
	r=$(mq-recv)
	sendn t
	sendn u -D 600
	mq-rm "$(grep '^t ' "$names" | cut -d' ' -f2)" "$(grep '^u ' "$names" | cut -d' ' -f2)"
	mq-rm -f "$(basename "$r" | cut -d, -f1)"
	run -0 digest --kind redrive,remove,purge
	assert_output "redrive p tool=mq-dlq attempts=1
redrive q tool=mq-dlq attempts=1 to=$(cd "$other" && pwd -P)
purge r tool=mq-dlq attempts=1
purge s tool=mq-rm attempts=1
remove t tool=mq-rm state=ready
remove u tool=mq-rm state=delayed
remove p tool=mq-rm state=inflight"
	run -0 digest -d "$other"
	assert_output "send q tool=mq-dlq from=$(cd "$MQ_DIR" && pwd -P)"
}

@test "mq-log: a change of settings is logged with who made it, what was set and what it was; its id is null" {
	mq-send -l </dev/null
	mq-conf max-depth=10 lease=5
	# A setting made again changes nothing, and is not logged.
	mq-conf lease=5
	mq-conf lease=
	run -0 digest
	assert_output "conf - tool=mq-conf user=$(id -un) set=lease=5 max-depth=10 was=lease=30 max-depth=0
conf - tool=mq-conf user=$(id -un) set=lease=30 was=lease=5"
	run -0 mq-log --json
	python3 -c '
import json, sys
for l in sys.argv[1].splitlines():
    r = json.loads(l)
    assert "id" in r and r["id"] is None, l' "$output"
}

@test "mq-log: a worker logs each job: attempt, host, its pid, start, runtime, exit or signal, outcome and its last line on stderr" {
	for n in ok fails killed slow bad; do
		sendn "$n"
	done
	W=$BATS_TEST_TMPDIR/w
	export W
	run -5 --separate-stderr mq-recv --backoff 60 --timeout 1 -- sh -c 'echo "$MQ_ID $$" >>"$W"
		case $(cat) in
		ok) ;;
		fails) echo "out of disk" >&2; exit 3 ;;
		killed) kill -9 $$ ;;
		slow) exec sleep 30 ;;
		bad) echo "cannot parse" >&2; exit 65 ;;
		esac'
	run -0 digest --kind job
	assert_output "job ok tool=mq-recv attempt=1 host=H job_pid=N start=T runtime=S exit=0 outcome=acked
job fails tool=mq-recv attempt=1 host=H job_pid=N start=T runtime=S exit=3 outcome=released stderr=out of disk
job killed tool=mq-recv attempt=1 host=H job_pid=N start=T runtime=S signal=9 outcome=released
job slow tool=mq-recv attempt=1 host=H job_pid=N start=T runtime=S signal=15 timed_out=yes outcome=released
job bad tool=mq-recv attempt=1 host=H job_pid=N start=T runtime=S exit=65 outcome=dead stderr=cannot parse"
	# job_pid is the job's own, and the slow one ran about its timeout.
	run -0 mq-log --kind job --json
	python3 -c '
import json, sys
pids = dict(l.split() for l in open(sys.argv[2]))
for l in sys.argv[1].splitlines():
    r = json.loads(l)
    assert pids[r["id"]] == str(r["job_pid"]), (l, pids)
    if r.get("timed_out"):
        assert 1 <= r["runtime"] < 30, l' "$output" "$W"
}

@test "mq-log --kind: only the records of those kinds; an unknown kind is a usage error (2)" {
	sendn a
	sendn b
	mq-ack "$(mq-recv)"
	mq-ack -r "$(mq-recv)"
	run -0 digest --kind ack,release
	assert_output "ack a tool=mq-ack attempt=1
release b tool=mq-ack attempt=1"
	run -0 digest --kind claim
	assert_output "claim a tool=mq-recv attempt=1
claim b tool=mq-recv attempt=1"
	run -2 --separate-stderr mq-log --kind ack,nope
	assert_equal "$stderr" "mq-log: --kind nope: not a kind (send, claim, ack, release, orphan, expire, dead, redrive, remove, purge, conf, job)"
	run -2 mq-log --kind ,
	run -1 mq-log --kind dead
	assert_output ""
}

@test "mq-log ID: only that message's records, gone or not; a prefix of 8 or more matches; a bad ID is a usage error (2)" {
	sendn a
	sendn b
	a=$(grep '^a ' "$names" | cut -d' ' -f2)
	b=$(grep '^b ' "$names" | cut -d' ' -f2)
	mq-ack "$(mq-recv)"
	run -0 digest "$a"
	assert_output "send a tool=mq-send
claim a tool=mq-recv attempt=1
ack a tool=mq-ack attempt=1"
	run -0 digest "$b"
	assert_output "send b tool=mq-send"
	run -0 digest "$b" "$a"
	assert_equal "${#lines[@]}" 4
	# Sent within the same second, they share a prefix longer than 8.
	run -0 digest "${a:0:8}"
	assert_equal "${#lines[@]}" 4
	run -2 --separate-stderr mq-log "${a:0:7}"
	assert_equal "$stderr" "mq-log: ${a:0:7}: not a message ID"
	run -2 mq-log "not-an-id"
	run -2 mq-log "$a" "$a/x"
	run -1 mq-log "0000000000000000.1.000000000000"
	assert_output ""
}

@test "mq-log --since: only the records of the last secs" {
	old=$(echo old | mq-send)
	# Sent an hour later.
	new=$(echo new | ahead 3600 mq-send)
	run -0 ahead 3600 mq-log --since 60
	assert_equal "$(awk '{ print $3 }' <<<"$output")" "$new"
	run -0 ahead 3600 mq-log --since 2h
	assert_equal "$(awk '{ print $3 }' <<<"$output")" "$(printf '%s\n%s' "$old" "$new")"
	run -1 ahead 7200 mq-log --since 60
	assert_output ""
	run -2 mq-log --since soon
}

@test "mq-log: exit 1 when no record matched: no log yet, or none of the kind or ID asked" {
	mq-send -l </dev/null
	assert_not_exist "$MQ_DIR/log"
	run -1 --separate-stderr mq-log
	assert_output ""
	[ -z "$stderr" ]
	sendn a
	run -0 mq-log
	run -1 mq-log --kind ack
	run -1 mq-log --json --kind claim,ack
	assert_output ""
}

@test "mq-log: tabs, newlines, backslashes and control bytes in a value are escaped on disk, a record a line, and come back exact in --json" {
	reason=$'a\tb\nc\x01d\\e\x1b[31mred\x7f end'
	sendn a
	mq-ack -r --reason "$reason" "$(mq-recv)"
	mq-ack -x "$reason" "$(mq-recv)"
	# send, claim, release, claim, dead: five lines, each of a record.
	assert_equal "$(wc -l <"$MQ_DIR/log")" 5
	run grep -c -v -E $'^[^\t]+\t[a-z]+\t[^\t]+\ttool=[^\t]+\tpid=[0-9]+\tuid=[0-9]+(\t[a-z_]+=[^\t]*)*$' "$MQ_DIR/log"
	assert_output 0
	grep -qF 'reason=a\tb\nc\x01d\\e\x1b[31mred\x7f end' "$MQ_DIR/log"
	run -0 mq-log --json --kind release,dead
	python3 -c '
import json, sys
got = [json.loads(l)["reason"] for l in sys.argv[1].splitlines()]
assert got == [sys.argv[2]] * 2, (got, sys.argv[2])' "$output" "$reason"
}

@test "mq-log: the text output escapes what would drive a terminal (ESC, control bytes)" {
	sendn a
	mq-ack -x $'\x1b]0;owned\x07\x1b[2Jgone\r' "$(mq-recv)"
	run -0 mq-log --kind dead
	assert_output --partial 'reason=\x1b]0;owned\x07\x1b[2Jgone\r'
	bad=$(mq-log | LC_ALL=C tr -d '\n' | LC_ALL=C tr -dc '\000-\037\177' | wc -c)
	assert_equal "$bad" 0
}

@test "mq-log: log-size=0 writes no log, and the counters count all the same" {
	mq-conf log-size=0
	rm -f "$MQ_DIR/log"
	sendn a
	sendn b
	mq-ack "$(mq-recv)"
	mq-ack -x no "$(mq-recv)"
	mq-dlq purge --all 2>/dev/null
	mq-rm "$(echo c | mq-send)"
	mq-conf lease=5
	assert_not_exist "$MQ_DIR/log"
	assert_not_exist "$MQ_DIR/log.1"
	run -1 mq-log
	run -0 mq-stat --json
	python3 -c '
import json, sys
c = json.loads(sys.argv[1])["counters"]
assert (c["sent"], c["claimed"], c["acked"], c["removed"], c["dead"]["rejected"]) == (3, 2, 1, 2, 1), c' "$output"
	# Back on, the log is written again.
	mq-conf log-size=1M
	sendn d
	run -0 digest --kind send
	assert_output "send d tool=mq-send"
}

@test "mq-log: past half of log-size the log becomes log.1, each about half of it at most, and mq-log reads both, in order" {
	mq-conf log-size=4K
	for i in $(seq 1 60); do
		echo "$i" | mq-send >>"$BATS_TEST_TMPDIR/sent"
	done
	assert_exist "$MQ_DIR/log.1"
	assert_exist "$MQ_DIR/log"
	# Rotated by the write that took it past 2 KiB: a record more at most.
	for f in log log.1; do
		[ "$(stat -c %s "$MQ_DIR/$f")" -le $((2048 + 512)) ] || fail "$f: $(stat -c %s "$MQ_DIR/$f") bytes"
	done
	# The last sends, in the order they were made, the older ones gone.
	mq-log --kind send >"$BATS_TEST_TMPDIR/logged"
	n=$(wc -l <"$BATS_TEST_TMPDIR/logged")
	[ "$n" -ge 15 ] && [ "$n" -lt 60 ] || fail "$n sends in the log"
	assert_equal "$(ids_in "$BATS_TEST_TMPDIR/logged")" "$(tail -n "$n" "$BATS_TEST_TMPDIR/sent")"
	# One process writes its buffer whole: then each is half and a buffer.
	seq 1 1000 | mq-send -l >/dev/null
	for f in log log.1; do
		[ ! -e "$MQ_DIR/$f" ] || [ "$(stat -c %s "$MQ_DIR/$f")" -le $((2048 + 32768)) ] ||
		    fail "$f: $(stat -c %s "$MQ_DIR/$f") bytes"
	done
	run -0 mq-log --json
	python3 -c '
import json, sys
for l in sys.argv[1].splitlines():
    assert json.loads(l)["kind"] == "send", l' "$output"
}

@test "mq-sweep: removes log.1 older than log-age and makes log.1 of a log whose first record is older; younger ones stay" {
	mq-conf log-age=1d
	sendn a
	mv "$MQ_DIR/log" "$MQ_DIR/log.1"
	sendn b
	touch -d '2 hours ago' "$MQ_DIR/log.1"
	mq-sweep
	assert_exist "$MQ_DIR/log.1"
	assert_exist "$MQ_DIR/log"
	touch -d '2 days ago' "$MQ_DIR/log.1"
	mq-sweep
	assert_not_exist "$MQ_DIR/log.1"
	run -0 digest
	assert_output "send b tool=mq-send"
	# A log whose first record is two days old becomes log.1.
	a=$(grep '^a ' "$names" | cut -d' ' -f2)
	{
		printf '%s\tsend\t%s\ttool=mq-send\tpid=1\tuid=%s\n' "$(date -u -d '2 days ago' +%Y-%m-%dT%H:%M:%S.000Z)" "$a" "$(id -u)"
		cat "$MQ_DIR/log"
	} >"$BATS_TEST_TMPDIR/log"
	mv "$BATS_TEST_TMPDIR/log" "$MQ_DIR/log"
	mq-sweep
	assert_exist "$MQ_DIR/log.1"
	assert_not_exist "$MQ_DIR/log"
	sendn c
	run -0 digest
	assert_output "send a tool=mq-send
send b tool=mq-send
send c tool=mq-send"
	# log-age=0: no bound but log-size.
	mq-conf log-age=0
	touch -d '30 days ago' "$MQ_DIR/log.1"
	mq-sweep
	assert_exist "$MQ_DIR/log.1"
}

@test "mq-log -f: prints the records there, then those appended as they come (inotify)" {
	sendn a
	follow 1
	holds_new "$fpid" anon_inode:inotify || fail "mq-log -f watches nothing"
	sendn b
	mq-ack "$(mq-recv)"
	lines_in "$BATS_TEST_TMPDIR/follow" 4 || fail "$(cat "$BATS_TEST_TMPDIR/follow")"
	run awk '{ print $2 }' "$BATS_TEST_TMPDIR/follow"
	assert_output "$(printf 'send\nsend\nclaim\nack')"
	kill -0 "$fpid"
}

@test "mq-log -f: prints the records appended as they come with MQ_WAIT=poll too" {
	sendn a
	follow 1 MQ_WAIT=poll
	run ! holds_new "$fpid" anon_inode:inotify
	sendn b
	mq-ack "$(mq-recv)"
	lines_in "$BATS_TEST_TMPDIR/follow" 4 || fail "$(cat "$BATS_TEST_TMPDIR/follow")"
	run awk '{ print $2 }' "$BATS_TEST_TMPDIR/follow"
	assert_output "$(printf 'send\nsend\nclaim\nack')"
	kill -0 "$fpid"
}

@test "mq-log -f: a record appended while it sets its watch up is printed without waiting for another" {
	sendn a
	# Stalled before the watch, after the log was read.
	LD_PRELOAD="$BATS_TEST_DIRNAME/fault.so" MQ_FAULT='inotify_init1:delay=1500ms' \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    mq-log -f >"$BATS_TEST_TMPDIR/follow" 2>&1 &
	fpid=$!
	log="$(cd "$MQ_DIR" && pwd -P)/log"
	for ((i = 0; i < 100; i++)); do
		holds_new "$fpid" "$log" && break
		sleep 0.02
	done
	sendn b
	lines_in "$BATS_TEST_TMPDIR/follow" 2 || fail "$(cat "$BATS_TEST_TMPDIR/follow")"
}

@test "mq-log -f: keeps following across a rotation, with inotify and with MQ_WAIT=poll" {
	mq-conf log-size=4K
	for wait in inotify poll; do
		rm -f "$MQ_DIR/log" "$MQ_DIR/log.1"
		sendn a
		follow 1 MQ_WAIT="$wait"
		# Some 30 records of 110 bytes: one rotation, at 2 KiB.
		for i in $(seq 1 30); do
			echo "$i" | mq-send >>"$BATS_TEST_TMPDIR/sent.$wait"
		done
		assert_exist "$MQ_DIR/log.1"
		lines_in "$BATS_TEST_TMPDIR/follow" 31 || fail "$wait: $(cat "$BATS_TEST_TMPDIR/follow")"
		assert_equal "$(ids_in "$BATS_TEST_TMPDIR/follow" | tail -n 30)" "$(cat "$BATS_TEST_TMPDIR/sent.$wait")"
		kill "$fpid"
		wait "$fpid" || true
		fpid=
	done
}

@test "mq-log: concurrent senders and claimers leave every record whole, a line each" {
	mq-send -l </dev/null
	t=$BATS_TEST_TMPDIR
	busy_begin 10
	busy_end
	run -0 mq-stat --json
	python3 - "$MQ_DIR/log" "$output" <<'EOF'
import json, re, sys
c = json.loads(sys.argv[2])["counters"]
rec = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\t(send|claim|ack)\t[0-9a-f]{16}\.\d+\.[0-9a-f]{12}\t"
    r"tool=mq-(send|recv|ack)\tpid=\d+\tuid=\d+(\tattempt=1)?")
kinds = {}
for line in open(sys.argv[1], "rb").read().decode().split("\n")[:-1]:
    m = rec.fullmatch(line)
    assert m, "not a whole record: %r" % line
    kinds[m[1]] = kinds.get(m[1], 0) + 1
assert kinds == {"send": 2000, "claim": c["claimed"], "ack": c["acked"]}, (kinds, c)
assert c["acked"] == 2000, c
EOF
	assert_equal "$(mq-log --kind send | wc -l)" 2000
	assert_equal "$(ids_in <(mq-log --kind send) | sort)" "$(cat "$t"/ids.* | sort)"
}
