load helper

# Death history: every death (time, reason, attempts) kept across redrive
# in deaths/ID, counted by the name's ,dN (src/core/history.c, mq-spool(5)).

# The deaths of dead letter $1 as mq-dlq ls --json lists them, one a line:
# the attempts, then the reason as JSON.
deaths() {
	mq-dlq ls --json | python3 -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    if o["id"] == sys.argv[1]:
        for d in o["deaths"]:
            print(d["attempts"], json.dumps(d["reason"]))
' "$1"
}

# Checks that the death times of dead letter $1 are ISO 8601 UTC, oldest
# first, and of the last minute.
times_ok() {
	mq-dlq ls --json | python3 -c '
import json, sys, time, calendar
for line in sys.stdin:
    o = json.loads(line)
    if o["id"] != sys.argv[1]:
        continue
    ts = [calendar.timegm(time.strptime(d["time"], "%Y-%m-%dT%H:%M:%SZ"))
          for d in o["deaths"]]
    assert ts == sorted(ts), ts
    assert all(time.time() - 60 <= t <= time.time() + 1 for t in ts), ts
    assert o["deaths"][-1]["time"] == o["died"], o
    sys.exit(0)
sys.exit(1)
' "$1"
}

# The whole records in a history file $1 (python3: TIME ATTEMPTS LEN\n,
# LEN bytes, \n), or "torn" when one runs past the end of the file.
records() {
	python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
n = 0
while b:
    head, sep, b = b.partition(b"\n")
    t, a, l = head.split(b" ")
    l = 0 if l == b"-" else int(l)
    if not sep or len(b) < l + 1 or b[l:l + 1] != b"\n":
        print("torn")
        sys.exit(0)
    b = b[l + 1:]
    n += 1
print(n)
' "$1"
}

# The name of the one dead letter, or of the one message in new/ or cur/.
dead_name() {
	find "$MQ_DIR/dead" -type f -printf '%f\n'
}
live_name() {
	find "$MQ_DIR/new" "$MQ_DIR/cur" -type f -printf '%f\n'
}

@test "deaths: kept across 1, 2 and 3 redrives, oldest first, with times, reasons and attempts" {
	id=$(echo job | mq-send)
	r1=$(printf 'one\ttab "quoted" \\ back\nline two')
	mq-ack -x "$r1" "$(mq-recv)"
	assert_equal "$(dead_name)" "$id,$(dead_name | cut -d, -f2),1"
	assert_equal "$(deaths "$id")" '1 "one\ttab \"quoted\" \\ back\nline two"'
	times_ok "$id"

	mq-dlq redrive "$id"
	[[ $(live_name) == "$id,0,"*",0,d1" ]] || fail "$(live_name)"
	# Two attempts this time: the first lease runs out.
	timeout 20 mq-recv -t 0.1 >/dev/null
	sleep 0.3
	mq-ack -x two "$(mq-recv)"
	[[ $(dead_name) == "$id,"*",2,d1" ]] || fail "$(dead_name)"
	assert_equal "$(deaths "$id")" "$(printf '%s\n' \
	    '1 "one\ttab \"quoted\" \\ back\nline two"' '2 "two"')"
	times_ok "$id"

	mq-dlq redrive "$id"
	mq-ack -x three "$(mq-recv)"
	mq-dlq redrive "$id"
	[[ $(live_name) == "$id,0,"*",d3" ]] || fail "$(live_name)"
	assert_equal "$(records "$MQ_DIR/deaths/$id")" 3
	mq-ack -x "four" "$(mq-recv)"
	[[ $(dead_name) == "$id,"*",1,d3" ]] || fail "$(dead_name)"
	assert_equal "$(deaths "$id")" "$(printf '%s\n' \
	    '1 "one\ttab \"quoted\" \\ back\nline two"' '2 "two"' \
	    '1 "three"' '1 "four"')"
	times_ok "$id"
}

@test "deaths: a 1 MiB reason is kept whole across redrives" {
	id=$(echo job | mq-send)
	mq-ack -x small "$(mq-recv)"
	# The longest reason a dead letter keeps (no argument is that long).
	head -c 786432 /dev/urandom | base64 -w 0 >"$MQ_DIR/reason/$id"
	assert_equal "$(stat -c %s "$MQ_DIR/reason/$id")" 1048576
	cp "$MQ_DIR/reason/$id" "$BATS_TEST_TMPDIR/big"
	mq-dlq redrive "$id"
	mq-ack -x second "$(mq-recv)"
	mq-dlq redrive "$id"
	mq-ack -x third "$(mq-recv)"
	mq-dlq ls --json | python3 -c '
import json, sys
o = json.loads(sys.stdin.readline())
big = open(sys.argv[1]).read()
assert [d["reason"] for d in o["deaths"]] == [big, "second", "third"]
' "$BATS_TEST_TMPDIR/big"
}

@test "deaths: every kind of death is recorded: max attempts, -x, exit 65, ttl, maxlen" {
	id=$(echo job | mq-send)
	timeout 20 mq-recv -t 0.1 -m 1 >/dev/null
	sleep 0.3
	run -1 timeout 20 mq-recv -m 1
	assert_equal "$(count dead)" 1
	mq-dlq redrive "$id"
	mq-ack -x "by hand" "$(mq-recv)"
	mq-dlq redrive "$id"
	run -5 --separate-stderr timeout 20 mq-recv -- sh -c 'echo "bad input" >&2; exit 65'
	assert_equal "$(count dead)" 1
	mq-dlq redrive "$id"
	mq-conf -f ttl=1
	sleep 1.3
	run -1 timeout 20 mq-recv
	assert_equal "$(count dead)" 1
	mq-conf ttl=
	mq-dlq redrive "$id"
	mq-conf max-depth=1 overflow=drop-oldest
	echo newer | mq-send >/dev/null
	assert_equal "$(count dead)" 1
	[[ $(dead_name) == "$id,"*",d4" ]] || fail "$(dead_name)"
	run deaths "$id"
	assert_equal "${#lines[@]}" 5
	[[ ${lines[0]} == '1 "max attempts'* ]] || fail "${lines[0]}"
	assert_equal "${lines[1]}" '1 "by hand"'
	assert_equal "${lines[2]}" '1 "exit 65: bad input"'
	assert_equal "${lines[3]}" '0 "ttl"'
	assert_equal "${lines[4]}" '0 "maxlen"'
	times_ok "$id"
}

@test "deaths: the text listing of mq-dlq ls is unchanged: the latest reason, escaped" {
	id=$(printf 'body\033[31m' | mq-send)
	mq-ack -x first "$(mq-recv)"
	mq-dlq redrive "$id"
	mq-ack -x "$(printf 'latest\nline\033]0;pwned\007 \\ é')" "$(mq-recv)"
	name=$(dead_name)
	[[ $name == *",d1" ]] || fail "$name"
	died=$(cut -d, -f 2 <<<"$name")
	iso=$(date -u -d "@$died" +%Y-%m-%dT%H:%M:%SZ)
	run --separate-stderr mq-dlq ls
	assert_success
	[ -z "$stderr" ]
	# The format as it was before there were deaths, byte for byte.
	assert_equal "$output" "$id	1	$iso	"'latest\nline\x1b]0;pwned\x07 \\ é'"	9	"'body\x1b[31m'
	[[ $output != *$'\033'* ]]
	# And the same as that of the same dead letter without a history.
	expected=$output
	mv "$MQ_DIR/dead/$name" "$MQ_DIR/dead/${name%,d1}"
	rm "$MQ_DIR/deaths/$id"
	run mq-dlq ls
	assert_equal "$output" "$expected"
}

@test "deaths: redrive --to to another spool carries the history and removes the source's" {
	other="$BATS_TEST_TMPDIR/other"
	mq-send -l -d "$other" </dev/null >/dev/null
	id=$(echo job | mq-send)
	mq-ack -x one "$(mq-recv)"
	mq-dlq redrive "$id"
	mq-ack -x two "$(mq-recv)"
	assert_file_exist "$MQ_DIR/deaths/$id"
	mq-dlq redrive --to "$other" "$id"
	assert_not_exist "$MQ_DIR/deaths/$id"
	assert_not_exist "$MQ_DIR/reason/$id"
	assert_equal "$(records "$other/deaths/$id")" 2
	r=$(mq-recv -d "$other")
	[[ ${r##*/} == "$id,"*",d2" ]] || fail "$r"
	mq-ack -d "$other" -x three "$r"
	MQ_DIR=$other run deaths "$id"
	assert_equal "$output" "$(printf '%s\n' '1 "one"' '1 "two"' '1 "three"')"
	# -t naming the spool itself is a redrive within it: the history stays.
	MQ_DIR=$other mq-dlq redrive --to "$other/." "$id"
	assert_equal "$(records "$other/deaths/$id")" 3
}

@test "deaths: an ack takes the history along, of a message, a group's head and a worker's job" {
	printf 'a\n' | mq-send -l >/dev/null
	echo g | mq-send -g G >/dev/null
	mq-ack -x one "$(mq-recv)"
	mq-ack -x one "$(mq-recv)"
	mq-dlq redrive --all
	assert_equal "$(count deaths)" 2
	r=$(mq-recv)
	[[ $r == *",d1" ]] || fail "$r"
	mq-ack "$r"
	assert_equal "$(count deaths)" 1
	r=$(mq-recv)
	[[ $r == *",gG,d1" ]] || fail "$r"
	mq-ack "$r"
	assert_equal "$(count deaths)" 0
	assert_equal "$(count groups)" 0

	id=$(echo w | mq-send)
	mq-ack -x one "$(mq-recv)"
	mq-dlq redrive "$id"
	assert_file_exist "$MQ_DIR/deaths/$id"
	timeout 20 mq-recv -- true
	assert_equal "$(count deaths)" 0
	assert_equal "$(count new)$(count cur)" 00
}

@test "deaths: mq-sweep finishing a group head's interrupted ack removes its history" {
	id=$(echo g | mq-send -g G)
	mq-ack -x one "$(mq-recv)"
	mq-dlq redrive "$id"
	r=$(mq-recv)
	name=${r##*/}
	[[ $name == *",gG,d1" ]] || fail "$name"
	# Killed after the turn passed on (none to promote) and before the
	# unlink: groups/G/leaving.NAME.ack, NAME as in new/.
	IFS=, read -r rid _ rest <<<"$(unheld <<<"$name")"
	mv "$r" "$MQ_DIR/groups/G/leaving.$rid,$rest.ack"
	rm "$MQ_DIR/groups/G/turn"
	run --separate-stderr mq-sweep -v
	assert_success
	[[ $stderr == *"unfinished ack: acked"* ]] || fail "$stderr"
	assert_not_exist "$MQ_DIR/deaths/$id"
}

@test "deaths: purge removes the history" {
	id=$(echo job | mq-send)
	mq-ack -x one "$(mq-recv)"
	mq-dlq redrive "$id"
	mq-ack -x two "$(mq-recv)"
	assert_file_exist "$MQ_DIR/deaths/$id"
	mq-dlq purge "$id"
	assert_not_exist "$MQ_DIR/deaths/$id"
	assert_equal "$(count dead)$(count reason)" 00
}

@test "deaths: worker mode exports MQ_DEATHS, 0 with none and 2 after two redrives" {
	id=$(echo job | mq-send)
	MQ_DEATHS=7 timeout 20 mq-recv -- sh -c \
	    'echo "$MQ_DEATHS" >>"$0"; exit 65' "$BATS_TEST_TMPDIR/seen" || true
	mq-dlq redrive "$id"
	timeout 20 mq-recv -- sh -c \
	    'echo "$MQ_DEATHS" >>"$0"; exit 65' "$BATS_TEST_TMPDIR/seen" || true
	mq-dlq redrive "$id"
	timeout 20 mq-recv -- sh -c \
	    'echo "$MQ_DEATHS" >>"$0"' "$BATS_TEST_TMPDIR/seen"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/seen")" "$(printf '0\n1\n2')"
	assert_equal "$(count deaths)" 0
}

@test "deaths: a redrive killed between the history and the body: the same history, and a rerun gives N+1" {
	id=$(echo job | mq-send)
	mq-ack -x one "$(mq-recv)"
	mq-dlq redrive "$id"
	mq-ack -x two "$(mq-recv)"
	mq-dlq ls --json >"$BATS_TEST_TMPDIR/before"
	# The body's rename out of dead/ fails: the history is written.
	run -4 --separate-stderr faulty 'renameat:errno=EIO:at=/dead/' \
	    mq-dlq redrive "$id"
	[[ $(dead_name) == *",d1" ]] || fail "$(dead_name)"
	assert_equal "$(records "$MQ_DIR/deaths/$id")" 2
	mq-dlq ls --json >"$BATS_TEST_TMPDIR/after"
	cmp "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	# Again, then for real: still two records, not three or four.
	run -4 --separate-stderr faulty 'renameat:errno=EIO:at=/dead/' \
	    mq-dlq redrive "$id"
	mq-dlq redrive "$id"
	assert_equal "$(records "$MQ_DIR/deaths/$id")" 2
	[[ $(live_name) == *",d2" ]] || fail "$(live_name)"
	mq-ack -x three "$(mq-recv)"
	assert_equal "$(deaths "$id")" "$(printf '%s\n' '1 "one"' '1 "two"' '1 "three"')"
}

@test "deaths: a torn or corrupt history is a warning, never a crash; what is whole is shown" {
	id=$(echo job | mq-send)
	mq-ack -x one "$(mq-recv)"
	mq-dlq redrive "$id"
	mq-ack -x two "$(mq-recv)"
	mq-dlq redrive "$id"
	mq-ack -x three "$(mq-recv)"
	# The second record torn: its LEN runs past the end of the file.
	head -n 2 "$MQ_DIR/deaths/$id" >"$BATS_TEST_TMPDIR/h"
	printf '1796169859000 1 500\nshort\n' >>"$BATS_TEST_TMPDIR/h"
	cp "$BATS_TEST_TMPDIR/h" "$MQ_DIR/deaths/$id"
	assert_equal "$(records "$MQ_DIR/deaths/$id")" torn
	run -4 --separate-stderr mq-dlq ls --json
	[[ $stderr == *"deaths/$id: "* ]] || fail "$stderr"
	assert_equal "$(python3 -c 'import json,sys; print([(d["attempts"], d["reason"]) for d in json.loads(sys.stdin.readline())["deaths"]])' <<<"$output")" \
	    "[(1, 'one'), (1, 'three')]"
	# The text listing does not read it.
	run --separate-stderr mq-dlq ls
	assert_success
	[ -z "$stderr" ]
	# Garbage, an empty file, a directory: the same.
	printf 'not a record\n' >"$MQ_DIR/deaths/$id"
	run -4 --separate-stderr mq-dlq ls --json
	[[ $output == *'"deaths":[{"time":"'*'","reason":"three","attempts":1}]'* ]]
	: >"$MQ_DIR/deaths/$id"
	run --separate-stderr mq-dlq ls --json
	assert_success
	rm "$MQ_DIR/deaths/$id"
	mkdir "$MQ_DIR/deaths/$id"
	run -4 --separate-stderr mq-dlq ls --json
	[[ $stderr == *"deaths/$id: "* ]] || fail "$stderr"
	# What cannot be read does not hold a redrive back, but its history
	# must be written: a directory where deaths/ID goes fails it (4),
	# named as deaths/ID, and the dead letter stays.
	printf 'x\n' >"$MQ_DIR/deaths/$id/x"
	run -4 --separate-stderr mq-dlq redrive "$id"
	[[ $stderr == *"/deaths/$id: "* ]] || fail "$stderr"
	[[ $stderr != *"dead/"* ]] || fail "$stderr"
	[[ $(dead_name) == *",d2" ]] || fail "$(dead_name)"
	rm -r "$MQ_DIR/deaths/$id"
	printf 'x\n' >"$MQ_DIR/deaths/$id"
	run --separate-stderr mq-dlq redrive "$id"
	assert_success
	[[ $(live_name) == *",d1" ]] || fail "$(live_name)"
	assert_equal "$(records "$MQ_DIR/deaths/$id")" 1
}

@test "deaths: an ack of a message that never died makes no call about deaths/" {
	command -v strace >/dev/null || skip "strace is not installed"
	echo job | mq-send >/dev/null
	r=$(mq-recv)
	ASAN_OPTIONS=detect_leaks=0 strace -f -o "$BATS_TEST_TMPDIR/trace" mq-ack "$r"
	assert_equal "$(count cur)" 0
	# Not "deaths" nor "deaths/ID" (the checkout's path may hold the word).
	run grep -c '"deaths[/"]' "$BATS_TEST_TMPDIR/trace"
	assert_output 0
	# Where one that died makes its two (open deaths/, unlink).
	id=$(echo job2 | mq-send)
	mq-ack -x one "$(mq-recv)"
	mq-dlq redrive "$id"
	r=$(mq-recv)
	ASAN_OPTIONS=detect_leaks=0 strace -f -o "$BATS_TEST_TMPDIR/trace" mq-ack "$r"
	run grep -c '"deaths[/"]' "$BATS_TEST_TMPDIR/trace"
	assert_output 1
	assert_not_exist "$MQ_DIR/deaths/$id"
}

@test "deaths: a death with no reason recorded stays null in the history" {
	id=$(echo job | mq-send)
	mq-ack -x gone "$(mq-recv)"
	# As a burial on a full file system leaves it.
	rm "$MQ_DIR/reason/$id"
	mq-dlq redrive "$id"
	assert_equal "$(head -n 1 "$MQ_DIR/deaths/$id" | cut -d ' ' -f 3)" -
	mq-ack -x later "$(mq-recv)"
	assert_equal "$(deaths "$id")" "$(printf '%s\n' '1 null' '1 "later"')"
}

# Runs mq-dlq "$@" under gdb, stopped at the breakpoint $1 while the
# commands of $2 (one a line) run, then to its end; gdb's output in $output.
dlq_stopped() {
	local brk=$1 cmds=$2 c
	shift 2
	local args=()
	while IFS= read -r c; do
		[ -n "$c" ] && args+=(-ex "shell $c")
	done <<<"$cmds"
	# (LeakSanitizer, under make SANITIZE=1, cannot run under ptrace.)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    run timeout 60 gdb -q -batch -ex 'set breakpoint pending on' \
	    -ex "break $brk" -ex "run $*" "${args[@]}" \
	    -ex continue --args "$(bin_of mq-dlq)" </dev/null
	[[ $output == *"Breakpoint 1"* ]] || fail "$brk was not reached: $output"
}

@test "deaths: a redrive that listed a dead letter another redrive took meanwhile writes nothing: no such dead letter" {
	command -v gdb >/dev/null || fail "gdb is not installed"
	id=$(echo job | mq-send)
	mq-ack -x one "$(mq-recv)"
	t=$BATS_TEST_TMPDIR
	# B stops after its listing, before the lock; A redrives the message,
	# which dies again (d1, a new name, a new reason), then B goes on.
	dlq_stopped mq_dead_redrive "mq-dlq redrive $id >$t/a.out 2>&1; echo \$? >>$t/a.out
mq-ack -x two \$(mq-recv) >>$t/a.out 2>&1
cp $MQ_DIR/deaths/$id $t/history" redrive --all
	assert_equal "$(cat "$t/a.out")" "$(printf 'mq-dlq: redriven 1\n0')"
	[[ $output == *"$id: no such dead letter"* ]] || fail "$output"
	[[ $output == *"exited with code 01"* ]] || fail "B did not exit 1: $output"
	# The history is exactly A's, and the dead letter is A's d1.
	cmp "$t/history" "$MQ_DIR/deaths/$id"
	[[ $(dead_name) == "$id,"*",1,d1" ]] || fail "$(dead_name)"
	assert_equal "$(deaths "$id")" "$(printf '%s\n' '1 "one"' '1 "two"')"

	# The same against a redrive into another spool: B's --to twice.
	other="$t/other"
	mq-send -l -d "$other" </dev/null >/dev/null
	dlq_stopped mq_dead_redrive "mq-dlq redrive --to $other $id
mq-ack -d $other -x three \$(mq-recv -d $other)" redrive --to "$other" "$id"
	[[ $output == *"$id: no such dead letter"* ]] || fail "$output"
	[[ $output == *"exited with code 01"* ]] || fail "B did not exit 1: $output"
	assert_equal "$(count dead)" 0
	assert_not_exist "$MQ_DIR/deaths/$id"
	MQ_DIR=$other run deaths "$id"
	assert_output "$(printf '%s\n' '1 "one"' '1 "two"' '1 "three"')"
	assert_equal "$(records "$other/deaths/$id")" 2
}

@test "deaths: a redrive and a purge hold an flock of dead/ for one message; nothing else waits for it" {
	command -v gdb >/dev/null || fail "gdb is not installed"
	command -v flock >/dev/null || fail "flock(1) is not installed"
	id=$(echo job | mq-send)
	mq-ack -x one "$(mq-recv)"
	t=$BATS_TEST_TMPDIR
	# Stopped while it writes the history: dead/ is locked.
	dlq_stopped mq_history_carry "flock -n $MQ_DIR/dead true; echo \$? >$t/redrive" redrive "$id"
	assert_equal "$(cat "$t/redrive")" 1
	[[ $output == *"exited normally"* ]] || fail "$output"
	[[ $(live_name) == *",d1" ]] || fail "$(live_name)"
	# Free again once it is done; a burial does not wait for it.
	flock -n "$MQ_DIR/dead" true
	flock "$MQ_DIR/dead" timeout 20 mq-ack -x two "$(mq-recv)"
	[[ $(dead_name) == *",d1" ]] || fail "$(dead_name)"
	# A purge, stopped as it forgets the history.
	dlq_stopped mq_history_forget "flock -n $MQ_DIR/dead true; echo \$? >$t/purge" purge "$id"
	assert_equal "$(cat "$t/purge")" 1
	assert_equal "$(count dead)$(count deaths)" 00
}

@test "deaths: an unreadable reason or source history does not hold a redrive back" {
	id=$(echo job | mq-send)
	mq-ack -x one "$(mq-recv)"
	mq-dlq redrive "$id"
	mq-ack -x two "$(mq-recv)"
	# The reason a symbolic link, the history a symbolic link.
	mv "$MQ_DIR/reason/$id" "$BATS_TEST_TMPDIR/reason"
	ln -s "$BATS_TEST_TMPDIR/reason" "$MQ_DIR/reason/$id"
	mv "$MQ_DIR/deaths/$id" "$BATS_TEST_TMPDIR/deaths"
	ln -s "$BATS_TEST_TMPDIR/deaths" "$MQ_DIR/deaths/$id"
	run --separate-stderr mq-dlq redrive "$id"
	assert_success
	[[ $(live_name) == "$id,0,"*",d1" ]] || fail "$(live_name)"
	[ ! -L "$MQ_DIR/deaths/$id" ] || fail "the history is still the link"
	mq-ack -x three "$(mq-recv)"
	# The death whose reason could not be read: none (null).
	assert_equal "$(deaths "$id")" "$(printf '%s\n' '1 null' '1 "three"')"
	# The reason a directory, the history a directory: the same.
	rm "$MQ_DIR/reason/$id"
	mkdir "$MQ_DIR/reason/$id"
	run --separate-stderr mq-dlq redrive "$id"
	assert_success
	[[ $(live_name) == "$id,0,"*",d2" ]] || fail "$(live_name)"
	rmdir "$MQ_DIR/reason/$id"
	mq-ack -x four "$(mq-recv)"
	# A directory in place of the history cannot be read; into another
	# spool, whose deaths/ID can be written, it carries none of it.
	rm "$MQ_DIR/deaths/$id"
	mkdir "$MQ_DIR/deaths/$id"
	other="$BATS_TEST_TMPDIR/other"
	mq-send -l -d "$other" </dev/null >/dev/null
	run --separate-stderr mq-dlq redrive --to "$other" "$id"
	assert_success
	assert_equal "$(count dead)" 0
	r=$(mq-recv -d "$other")
	[[ ${r##*/} == "$id,"*",1,"*",d1" ]] || fail "$r"
	mq-ack -d "$other" -x five "$r"
	MQ_DIR=$other run deaths "$id"
	assert_output "$(printf '%s\n' '1 "four"' '1 "five"')"
}

@test "deaths: mq-dlq ls --json gives null for a reason that cannot be read" {
	id=$(echo job | mq-send)
	mq-ack -x one "$(mq-recv)"
	rm "$MQ_DIR/reason/$id"
	mkdir "$MQ_DIR/reason/$id"
	run -4 --separate-stderr mq-dlq ls --json
	[[ $stderr == *"reason/$id: "* ]] || fail "$stderr"
	python3 -c '
import json, sys
o = json.loads(sys.stdin.readline())
assert o["reason"] is None, o
assert [d["reason"] for d in o["deaths"]] == [None], o
' <<<"$output"
	rmdir "$MQ_DIR/reason/$id"
	ln -s /nonexistent "$MQ_DIR/reason/$id"
	run -4 --separate-stderr mq-dlq ls --json
	[[ $output == *'"reason":null,"deaths":[{"time":"'*'","reason":null,"attempts":1}]'* ]] || fail "$output"
}

@test "deaths: ,dN stays through a release, an extend, a worker's retry, a lease swept back and a reclaim" {
	mq-conf max-attempts=100
	id=$(echo job | mq-send)
	mq-ack -x one "$(mq-recv)"
	mq-dlq redrive "$id"
	[[ $(live_name) == "$id,0,"*",d1" ]] || fail "$(live_name)"
	# Released with mq-ack -r.
	r=$(mq-recv)
	[[ $r == */"$id,"*",1,"*",d1" ]] || fail "$r"
	mq-ack -r "$r"
	[[ $(live_name) == "$id,1,"*",d1" ]] || fail "released: $(live_name)"
	assert_file_exist "$MQ_DIR/deaths/$id"
	# Extended with mq-ack -e, then released.
	r=$(mq-recv)
	r=$(mq-ack -e 60 "$r")
	[[ $r == */"$id,"*",2,"*",d1" ]] || fail "extended: $r"
	[[ $(live_name) == "$id,"*",2,"*",d1" ]] || fail "extended: $(live_name)"
	mq-ack -r "$r"
	# Released by a failing worker's job, to be retried.
	run -5 timeout 20 mq-recv -n 1 --backoff 0.001 -- sh -c \
	    'echo "$MQ_DEATHS" >"$0"; exit 1' "$BATS_TEST_TMPDIR/seen"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/seen")" 1
	[[ $(live_name) == "$id,3,"*",d1" ]] || fail "worker: $(live_name)"
	assert_file_exist "$MQ_DIR/deaths/$id"
	# Its lease runs out and mq-sweep puts it back.
	sleep 0.1
	timeout 20 mq-recv -t 0.1 >/dev/null
	sleep 0.3
	run -0 timeout 20 mq-sweep
	assert_equal "$(count cur)" 0
	[[ $(live_name) == "$id,4,"*",d1" ]] || fail "swept back: $(live_name)"
	# Its lease runs out and mq-recv claims it again from cur/.
	timeout 20 mq-recv -t 0.1 >/dev/null
	sleep 0.3
	r=$(mq-recv)
	[[ $r == */"$id,"*",6,"*",d1" ]] || fail "reclaimed: $r"
	assert_file_exist "$MQ_DIR/deaths/$id"
	# And the history is still whole: one death, then this one.
	mq-ack -x two "$r"
	assert_equal "$(deaths "$id")" "$(printf '%s\n' '1 "one"' '6 "two"')"
}

@test "mq-dlq redrive: deaths/, made by the first redrive, is synced into the spool before the redrive is done" {
	command -v strace >/dev/null || skip "strace is not installed"
	echo doomed | mq-send >/dev/null
	mq-ack -x "first death" "$(mq-recv -t 60)"
	root=$(cd "$MQ_DIR" && pwd -P)
	ASAN_OPTIONS=detect_leaks=0 run strace -f -y -e trace=fsync,mkdirat \
	    -o "$BATS_TEST_TMPDIR/trace" mq-dlq redrive --all
	assert_success
	run -0 grep -A1 'mkdirat([0-9]*<[^>]*>, "deaths"' "$BATS_TEST_TMPDIR/trace"
	assert_line --index 1 --regexp "fsync\([0-9]+<$root>\)"
}
