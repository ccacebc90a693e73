load helper

# A spool with a message in every state, their IDs in ids/NAME:
#   x1 expired (its lease ran out), p9 ready at priority 9, r3 ready at
#   priority 3, r0 and ga (head of group a) and gb (head of group b) ready
#   at priority 0, dl delayed, ga2 and gb2 blocked behind their heads, fl
#   in flight, dd dead (dead/), old dead (past its ttl, still in new/).
every_state() {
	local d="$BATS_TEST_TMPDIR/ids" r="$BATS_TEST_TMPDIR/r"
	mkdir -p "$d"
	printf 'fl\nx1\ndd\n' | mq-send -l >"$BATS_TEST_TMPDIR/sent"
	sed -n 1p "$BATS_TEST_TMPDIR/sent" >"$d/fl"
	sed -n 2p "$BATS_TEST_TMPDIR/sent" >"$d/x1"
	sed -n 3p "$BATS_TEST_TMPDIR/sent" >"$d/dd"
	mq-recv -n 3 -t 600 >"$r"
	mq-ack -e 0.001 "$(sed -n 2p "$r")" >/dev/null
	mq-ack -x broken "$(sed -n 3p "$r")"
	echo old | mq-send --ttl 0.001 >"$d/old"
	echo r0 | mq-send >"$d/r0"
	echo gb | mq-send -g b >"$d/gb"
	echo ga | mq-send -g a >"$d/ga"
	echo gb2 | mq-send -g b >"$d/gb2"
	echo ga2 | mq-send -g a >"$d/ga2"
	echo r3 | mq-send -p 3 >"$d/r3"
	echo p9 | mq-send -p 9 >"$d/p9"
	echo dl | mq-send -D 600 >"$d/dl"
	sleep 0.05
}

id_of() {
	cat "$BATS_TEST_TMPDIR/ids/$1"
}

@test "mq-ls: every state, in claim order, with its attempts, time and priority" {
	every_state
	run --separate-stderr mq-ls --json
	assert_success
	[ -z "$stderr" ]
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/out"
	python3 - "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/ids" <<'EOF'
import datetime, json, os, sys, time
ids = {open(os.path.join(sys.argv[2], f)).read().strip(): f
       for f in os.listdir(sys.argv[2])}
got = [json.loads(l) for l in open(sys.argv[1])]
now = time.time()
def t(o):
    return datetime.datetime.strptime(o["time"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
names = [ids[o["id"]] for o in got]
want = ["x1", "p9", "r3", "old", "r0", "gb", "ga", "dl", "ga2", "gb2",
        "fl", "dd", "old"]
# old is met among the ready but listed with the dead, last.
want.remove("old")
assert names == want, names
want_state = {"x1": "expired", "p9": "ready", "r3": "ready", "r0": "ready",
              "gb": "ready", "ga": "ready", "dl": "delayed",
              "ga2": "blocked", "gb2": "blocked", "fl": "inflight",
              "dd": "dead", "old": "dead"}
for o in got:
    n = ids[o["id"]]
    assert o["state"] == want_state[n], (n, o)
    assert o["attempts"] == (1 if n in ("x1", "fl", "dd") else 0), (n, o)
    assert o["priority"] == {"p9": 9, "r3": 3}.get(n, 0), (n, o)
    assert ("group" in o) == (n in ("ga", "gb", "ga2", "gb2")), (n, o)
    # delayed: visible in 600 s; in flight: its lease ends in 600 s;
    # the others' times are of the last moments (the setup's 14 commands
    # may take a couple of minutes under valgrind on a loaded machine).
    if n in ("dl", "fl"):
        assert now + 400 < t(o) < now + 610, (n, o)
    else:
        assert now - 200 < t(o) <= now + 1, (n, o)
EOF
}

@test "mq-ls: the text line is id, state, attempts, time, priority, tab-separated" {
	every_state
	run --separate-stderr mq-ls
	assert_success
	assert_equal "${#lines[@]}" 12
	id=$(id_of r3)
	line=$(grep "^$id" <<<"$output")
	re="^$id"$'\t'"ready"$'\t'"0"$'\t''[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'$'\t'"3\$"
	[[ $line =~ $re ]]
	id=$(id_of fl)
	line=$(grep "^$id" <<<"$output")
	re="^$id"$'\t'"inflight"$'\t'"1"$'\t''[-0-9T:]+Z'$'\t'"0\$"
	[[ $line =~ $re ]]
	# The time of a lease is its deadline, as in the claimed file's name.
	name=$(basename "$(find "$MQ_DIR/cur" -name "$id,*")")
	deadline=${name#*,}
	deadline=${deadline%%.*}
	assert_equal "$(cut -f4 <<<"$line")" "$(date -u -d "@$deadline" +%Y-%m-%dT%H:%M:%SZ)"
}

@test "mq-ls -s ready: the order in which mq-recv then claims them" {
	for p in 0 4 9 2; do
		seq 1 5 | sed "s/^/p$p-/" | mq-send -l -p "$p" >/dev/null
	done
	seq 1 3 | mq-send -l >/dev/null
	seq 1 3 | mq-send -l -D 600 -p 9 >/dev/null
	echo late | mq-send -p 4 >/dev/null
	run --separate-stderr mq-ls -s ready
	assert_success
	assert_equal "${#lines[@]}" 24
	cut -f1 <<<"$output" >"$BATS_TEST_TMPDIR/listed"
	run grep -v $'\tready\t' <<<"$output"
	assert_failure 1
	mq-recv -n 100 >"$BATS_TEST_TMPDIR/receipts"
	sed 's,.*/,,; s/,.*//' "$BATS_TEST_TMPDIR/receipts" >"$BATS_TEST_TMPDIR/claimed"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/claimed")" "$(cat "$BATS_TEST_TMPDIR/listed")"
}

@test "mq-ls -s: only those states, repeatable, still in claim order" {
	every_state
	run --separate-stderr mq-ls -s dead -s expired
	assert_success
	assert_equal "$(cut -f1,2 <<<"$output")" "$(id_of x1)	expired
$(id_of dd)	dead
$(id_of old)	dead"
	run --separate-stderr mq-ls -s blocked
	assert_equal "$(cut -f1,2 <<<"$output")" "$(id_of ga2)	blocked
$(id_of gb2)	blocked"
	run --separate-stderr mq-ls -s delayed -s inflight -s delayed
	assert_equal "$(cut -f1,2 <<<"$output")" "$(id_of dl)	delayed
$(id_of fl)	inflight"
}

@test "mq-ls -s: an unknown state exits 2 naming it" {
	every_state
	run --separate-stderr mq-ls -s waiting
	assert_failure 2
	assert_equal "$output" ""
	[[ $stderr == *waiting* ]]
	run --separate-stderr mq-ls -s
	assert_failure 2
	run --separate-stderr mq-ls "$MQ_DIR" extra
	assert_failure 2
}

@test "mq-ls --json: id, state, attempts, time, priority; key and group when set; -l size and body" {
	echo -n 'hello body' | mq-send -k 'the key' -p 2 >"$BATS_TEST_TMPDIR/k"
	printf 'grouped\n' | mq-send -g g1 >"$BATS_TEST_TMPDIR/g"
	run --separate-stderr mq-ls --json -l
	assert_success
	[ -z "$stderr" ]
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/out"
	python3 - "$BATS_TEST_TMPDIR/out" "$(cat "$BATS_TEST_TMPDIR/k")" "$(cat "$BATS_TEST_TMPDIR/g")" <<'EOF'
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
assert len(objs) == 2, objs
k, g = objs
assert list(k) == ["id", "state", "attempts", "time", "priority", "key",
                   "size", "body"], k
assert k["id"] == sys.argv[2] and k["state"] == "ready", k
assert k["key"] == "the key" and k["priority"] == 2, k
assert k["size"] == 10 and k["body"] == "hello body", k
assert g["id"] == sys.argv[3] and g["group"] == "g1" and "key" not in g, g
assert g["size"] == 8 and g["body"] == "grouped\n", g
EOF
	# Without -l, nothing that needs the file.
	run --separate-stderr mq-ls --json
	assert_equal "${#lines[@]}" 2
	run grep -q '"size"\|"body"' <<<"$output"
	assert_failure 1
}

@test "mq-ls -l: a body's control bytes, NUL, newline and bad UTF-8 are escaped as mq-dlq ls does, one line each" {
	printf 'a\033[31mred\000nul\nline\377\376end' | mq-send >/dev/null
	printf 'dead\033]0;title\007\n\n' | mq-send >/dev/null
	echo plain | mq-send >/dev/null
	run --separate-stderr mq-ls -l
	assert_success
	assert_equal "${#lines[@]}" 3
	printf '%s' "$output" >"$BATS_TEST_TMPDIR/out"
	run env LC_ALL=C grep -q $'[\001-\010\013-\037\177]' "$BATS_TEST_TMPDIR/out"
	assert_failure 1
	run env LC_ALL=C grep -qP '[\x80-\xff]' "$BATS_TEST_TMPDIR/out"
	assert_failure 1
	# The same body dead-lettered: mq-dlq ls shows it as mq-ls does.
	r=$(mq-recv)
	mq-ack -x why "$r"
	run mq-ls -l -s dead
	assert_equal "${#lines[@]}" 1
	ls_body=$(cut -f7 <<<"$output")
	ls_size=$(cut -f6 <<<"$output")
	run mq-dlq ls
	assert_equal "$ls_body" "$(cut -f6 <<<"$output")"
	assert_equal "$ls_size" "$(cut -f5 <<<"$output")"
	[ -n "$ls_body" ]
	[[ $ls_body != *$'\033'* ]]
}

@test "mq-ls: listing changes nothing (names, inodes, links, times, attempts)" {
	every_state
	snap() { find "$MQ_DIR" -printf '%p %i %n %T@\n' | sort; }
	before=$(snap)
	attempts=$(mq-ls | cut -f1,3 | sort)
	mq-ls -l --json >/dev/null
	mq-ls -l >/dev/null
	mq-ls -s dead >/dev/null
	assert_equal "$(snap)" "$before"
	assert_equal "$(mq-ls | cut -f1,3 | sort)" "$attempts"
}

@test "mq-ls: no rename, unlink, link, mkdir, lock or write (strace)" {
	command -v strace >/dev/null || skip "strace is not installed"
	every_state
	# keys/ too, as --json reads keys.
	echo k | mq-send -k somekey >/dev/null
	ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=rename,renameat,renameat2,unlink,unlinkat,link,linkat,symlink,symlinkat,mkdir,mkdirat,flock,utimensat,ftruncate,openat,open,creat,write,pwrite64,fcntl \
	    -o "$BATS_TEST_TMPDIR/trace" "$(bin_of mq-ls)" -l --json >"$BATS_TEST_TMPDIR/out"
	# It did look at the spool, the message files too (-l).
	grep -q 'openat(.*"new"' "$BATS_TEST_TMPDIR/trace"
	grep -q "openat(.*\"$(id_of r0),0\"" "$BATS_TEST_TMPDIR/trace"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/out")" 13
	run grep -E '^[0-9]+ +(rename|renameat|renameat2|unlink|unlinkat|link|linkat|symlink|symlinkat|mkdir|mkdirat|flock|utimensat|ftruncate|creat)\(' "$BATS_TEST_TMPDIR/trace"
	assert_failure 1
	run grep -E 'open(at)?\(.*(O_WRONLY|O_RDWR|O_CREAT|O_TRUNC)' "$BATS_TEST_TMPDIR/trace"
	assert_failure 1
	run grep -E 'fcntl\(.*F_SETLK' "$BATS_TEST_TMPDIR/trace"
	assert_failure 1
	# Its only writes are to standard output and error.
	run grep -E '^[0-9]+ +p?write(64)?\([^12],' "$BATS_TEST_TMPDIR/trace"
	assert_failure 1
}

@test "mq-ls: the counts by state agree with mq-stat" {
	every_state
	echo k | mq-send -p 5 -D 300 >/dev/null
	mq-conf -f ttl=3600
	run --separate-stderr mq-stat --json
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/stat"
	mq-ls --json >"$BATS_TEST_TMPDIR/ls"
	python3 - "$BATS_TEST_TMPDIR/stat" "$BATS_TEST_TMPDIR/ls" <<'EOF'
import collections, json, sys
st = json.load(open(sys.argv[1]))
n = collections.Counter(json.loads(l)["state"] for l in open(sys.argv[2]))
got = {"ready": n["ready"], "delayed": n["delayed"], "inflight": n["inflight"],
       "expired": n["expired"], "dead": n["dead"], "blocked": n["blocked"]}
want = {k: st[k] for k in got}
assert got == want, (got, want)
assert sum(got.values()) == 13, got
EOF
}

@test "mq-ls: an empty spool lists nothing and exits 0; a missing one exits 4" {
	echo x | mq-send >/dev/null
	mq-ack "$(mq-recv)"
	run --separate-stderr mq-ls
	assert_success
	assert_equal "$output" ""
	[ -z "$stderr" ]
	run --separate-stderr mq-ls --json -l
	assert_success
	assert_equal "$output" ""
	run --separate-stderr mq-ls -d "$BATS_TEST_TMPDIR/nowhere"
	assert_failure 4
	[[ $stderr == *nowhere* ]]
	[ ! -e "$BATS_TEST_TMPDIR/nowhere" ]
}

@test "mq-ls: a waiting message past its time to live is listed dead, at its expiry" {
	echo a | mq-send --ttl 0.001 >"$BATS_TEST_TMPDIR/a"
	echo b | mq-send -D 600 --ttl 1 >"$BATS_TEST_TMPDIR/b"
	echo c | mq-send >"$BATS_TEST_TMPDIR/c"
	sleep 1.1
	run --separate-stderr mq-ls
	assert_success
	assert_equal "$(cut -f1,2 <<<"$output")" "$(cat "$BATS_TEST_TMPDIR/c")	ready
$(cat "$BATS_TEST_TMPDIR/a")	dead
$(cat "$BATS_TEST_TMPDIR/b")	dead"
	# Its time is when it expired: its send and its ttl.
	a=$(cat "$BATS_TEST_TMPDIR/a")
	ms=$((16#${a%%.*} / 1000000))
	assert_equal "$(grep "^$a" <<<"$output" | cut -f4)" "$(date -u -d "@$(((ms + 1) / 1000))" +%Y-%m-%dT%H:%M:%SZ)"
	# The spool's ttl too, and the delayed one is delayed no more.
	run mq-ls -s delayed
	assert_equal "$output" ""
	mq-conf -f ttl=0.5
	run mq-ls -s dead
	assert_equal "${#lines[@]}" 3
	run mq-ls -s ready
	assert_equal "$output" ""
}

@test "mq-ls: a foreign file in a leaf, a dot-file, a junk bucket are not listed" {
	echo a | mq-send >"$BATS_TEST_TMPDIR/a"
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	touch "$leaf/.hidden" "$leaf/junk" "$leaf/junk~" "$MQ_DIR/dead/junk"
	mkdir "$MQ_DIR/cur/notabucket" "$leaf/adir"
	touch "$MQ_DIR/cur/notabucket/$(cat "$BATS_TEST_TMPDIR/a"),1,1"
	run --separate-stderr mq-ls -l
	assert_success
	[ -z "$stderr" ]
	assert_equal "${#lines[@]}" 1
	[[ ${lines[0]} == "$(cat "$BATS_TEST_TMPDIR/a")"$'\t'ready$'\t'* ]]
}

@test "mq-ls: a leaf that cannot be read is told, the rest listed, exit 4" {
	echo a | mq-send >/dev/null
	echo b | mq-send -D 600 >"$BATS_TEST_TMPDIR/b"
	chmod 755 "$BATS_TEST_TMPDIR"
	chmod -R a+rX "$MQ_DIR"
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f -name '*,0' | head -1)")
	if [ "$(find "$leaf" -type f)" = "$(find "$MQ_DIR/new" -type f -name "$(cat "$BATS_TEST_TMPDIR/b"),0")" ]; then
		leaf=$(dirname "$(find "$MQ_DIR/new" -type f -name '*,0' | tail -1)")
	fi
	chmod 0 "$leaf"
	run --separate-stderr as_nobody mq-ls
	chmod 755 "$leaf"
	assert_failure 4
	[[ $stderr == "mq-ls: new/"*": Permission denied" ]]
	assert_equal "$output" "$(cat "$BATS_TEST_TMPDIR/b")	delayed	0	$(cut -f4 <<<"$output")	0"
}

@test "mq-ls: a leaf of more messages than are sorted at once (one mq-send -D batch) is listed in claim order" {
	seq 1 30000 | mq-send -l -S -D 2 >"$BATS_TEST_TMPDIR/sent"
	# One leaf holds them all.
	assert_equal "$(find "$MQ_DIR/new" -type f -printf '%h\n' | sort -u | wc -l)" 1
	# Delayed, or ready if the send took that long: in ID order either way.
	run --separate-stderr mq-ls -s delayed -s ready
	assert_success
	cut -f1 <<<"$output" >"$BATS_TEST_TMPDIR/listed"
	cmp "$BATS_TEST_TMPDIR/sent" "$BATS_TEST_TMPDIR/listed"
	i=0
	while [ "$(mq-ls -s ready | wc -l)" -ne 30000 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	mq-ls -s ready | cut -f1 >"$BATS_TEST_TMPDIR/ready"
	cmp "$BATS_TEST_TMPDIR/sent" "$BATS_TEST_TMPDIR/ready"
	mq-recv -n 30000 -t 600 | sed 's,.*/,,; s/,.*//' >"$BATS_TEST_TMPDIR/claimed"
	cmp "$BATS_TEST_TMPDIR/claimed" "$BATS_TEST_TMPDIR/ready"
}

@test "mq-ls: more buckets of cur/ than are sorted at once are listed in lease order" {
	seq 1 1500 | mq-send -l -S >/dev/null
	mq-recv -n 1500 -t 600 >/dev/null
	# Each lease into a bucket of its own, the last ID's ending first.
	python3 - "$MQ_DIR/cur" >"$BATS_TEST_TMPDIR/want" <<'PY'
import os, sys
cur = sys.argv[1]
names = []
for b in os.listdir(cur):
    for n in os.listdir(os.path.join(cur, b)):
        names.append((n, b))
names.sort(reverse=True)
base = int(max(b for _, b in names)) + 10
for i, (n, b) in enumerate(names):
    s = base + i
    os.mkdir(os.path.join(cur, str(s)))
    f = n.split(",")
    os.rename(os.path.join(cur, b, n),
              os.path.join(cur, str(s), "%s,%d.500,%s" % (f[0], s - 1, f[-1])))
    print(f[0])
PY
	run --separate-stderr mq-ls -s inflight
	assert_success
	assert_equal "${#lines[@]}" 1500
	assert_equal "$(cut -f1 <<<"$output")" "$(cat "$BATS_TEST_TMPDIR/want")"
}

@test "mq-ls --json: deaths, oldest first, for a dead letter and a redriven message; none for one that never died" {
	echo a | mq-send >/dev/null
	mq-ack -x first "$(mq-recv)"
	mq-dlq redrive --all
	mq-ack -x "$(printf 'second\ttab')" "$(mq-recv)"
	echo b | mq-send >/dev/null
	run mq-ls --json -s dead
	assert_success
	python3 -c '
import json, sys
o = json.loads(sys.argv[1])
assert [d["reason"] for d in o["deaths"]] == ["first", "second\ttab"], o
assert [d["attempts"] for d in o["deaths"]] == [1, 1], o
assert o["deaths"][1]["time"] == o["time"], o' "$output"
	mq-dlq redrive --all
	run mq-ls --json
	assert_success
	python3 -c '
import json, sys
objs = [json.loads(l) for l in sys.argv[1].splitlines()]
assert len(objs) == 2, objs
# b was sent before the redrive: it comes first.
assert "deaths" not in objs[0], objs
assert [d["reason"] for d in objs[1]["deaths"]] == ["first", "second\ttab"], objs' "$output"
	# The text listing has no deaths and stays one line each.
	assert_equal "$(mq-ls | wc -l)" 2
	assert_equal "$(mq-ls | cut -f 2 | sort -u)" ready
}

@test "mq-ls DIR: the spool as the operand, as with -d; two spools are refused" {
	echo here | mq-send >/dev/null
	other=$BATS_TEST_TMPDIR/other
	printf 'x\ny\n' | mq-send -l -d "$other" >/dev/null
	run -0 env -u MQ_DIR mq-ls "$other"
	assert_equal "${#lines[@]}" 2
	assert_equal "$(mq-ls -s ready "$other" | wc -l)" 2
	run -2 --separate-stderr mq-ls -d "$MQ_DIR" "$other"
	[[ $stderr == *"one spool: -d or an operand"* ]] || fail "$stderr"
	run -2 mq-ls "$MQ_DIR" "$other"
	run -4 mq-ls "$BATS_TEST_TMPDIR/none"
}

@test "mq-ls -v: says on stderr the spool, where its name came from and how many were listed in each state" {
	printf 'a\nb\nc\n' | mq-send -l >/dev/null
	mq-ack -x broken "$(mq-recv)"
	run -0 --separate-stderr mq-ls -v
	assert_equal "${#lines[@]}" 3
	assert_equal "$stderr" "mq-ls: $MQ_DIR (from \$MQ_DIR): 3 listed: 2 ready, 1 dead"
	run -0 --separate-stderr mq-ls -v -s dead -d "$MQ_DIR"
	assert_equal "$stderr" "mq-ls: $MQ_DIR (from -d): 1 listed: 1 dead"
	run -0 --separate-stderr mq-ls -v -s inflight "$MQ_DIR"
	assert_equal "$output" ""
	assert_equal "$stderr" "mq-ls: $MQ_DIR (from an operand): 0 listed"
}
