load helper

# The hash a key ($1) is filed under: the first 128 bits of its SHA-256.
keyhash() {
	printf '%s' "$1" | sha256sum | cut -c1-32
}

# Whether keys/HASH of key $1 is there (a symbolic link, which test -e
# would follow to a target that is no file).
record() {
	[ -L "$MQ_DIR/keys/$(keyhash "$1")" ]
}

# The message files of the spool (new/, cur/, dead/), one path a line.
messages() {
	find "$MQ_DIR/new" "$MQ_DIR/cur" "$MQ_DIR/dead" -type f
}

@test "key: the SHA-256 of keys (tests/key-test.c: FIPS 180-4 vectors) all pass" {
	[ -x "$BATS_TEST_DIRNAME/key-test" ] ||
	    fail "tests/key-test is not built (make tests/key-test)"
	run ${MQ_VALGRIND:+valgrind -q --error-exitcode=99 --leak-check=full} \
	    "$BATS_TEST_DIRNAME/key-test"
	assert_success
	refute_output --partial "not ok"
	assert_line --regexp '^1\.\.[0-9]+$'
	assert_line --partial "a million 'a'"
}

@test "mq-send -k: a second send of the key prints the first ID, exits 0 and adds nothing" {
	id=$(echo first | mq-send -k order-42)
	run -0 --separate-stderr mq-send -k order-42 <<<"second"
	assert_output "$id"
	assert_equal "$stderr" ""
	assert_equal "$(count new)" 1
	assert_equal "$(cat "$(messages)")" first
	# Nothing left behind in tmp/ by the send that added nothing.
	assert_equal "$(find "$MQ_DIR/tmp" -type f ! -name ".*" | wc -l)" 0
	run -0 --separate-stderr mq-send -v -k order-42 <<<"third"
	assert_output "$id"
	assert_equal "$stderr" "mq-send: $id: held by key"
	# Another key is another message; the name carries the key's hash.
	id2=$(echo other | mq-send -k order-43)
	[ "$id2" != "$id" ]
	assert_equal "$(count new)" 2
	h=$(keyhash order-42)
	assert_equal "$(find "$MQ_DIR/new" -name "$id,0,k$h" | wc -l)" 1
	# The records: keys/HASH -> "ID KEY", keys/ID the message's inode.
	assert_equal "$(readlink "$MQ_DIR/keys/$h")" "$id order-42"
	[ "$(stat -c %i "$MQ_DIR/keys/$id")" = "$(stat -c %i "$(find "$MQ_DIR/new" -name "$id,*")")" ]
	# keys/ is made as the spool's other directories are.
	assert_equal "$(stat -c %a "$MQ_DIR/keys")" "$(stat -c %a "$MQ_DIR/new")"
}

@test "mq-send -k: no keys/ until a keyed send, and plain sends do not make it" {
	echo plain | mq-send >/dev/null
	mq-sweep
	assert_file_not_exist "$MQ_DIR/keys"
}

@test "mq-send -k: held while the message is in flight and while it is dead" {
	id=$(echo body | mq-send -k job-1)
	r=$(mq-recv -t 60)
	run -0 mq-send -k job-1 <<<"again"
	assert_output "$id"
	assert_equal "$(count cur)" 1
	mq-ack -x "broken" "$r"
	run -0 mq-send -k job-1 <<<"again"
	assert_output "$id"
	assert_equal "$(count dead)" 1
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
}

@test "mq-send -k: with dedup-window 0 (the default), once acked the key is free" {
	id=$(echo one | mq-send -k daily)
	r=$(mq-recv)
	mq-ack "$r"
	run -0 mq-send -k daily <<<"two"
	[ "$output" != "$id" ]
	assert_equal "$(count new)" 1
	assert_equal "$(readlink "$MQ_DIR/keys/$(keyhash daily)")" "$output daily"
	# The old holder's record went with it.
	assert_file_not_exist "$MQ_DIR/keys/$id"
}

@test "mq-send -k: dedup-window=2: an ack holds the key 2 s more, then it is free" {
	mq-conf dedup-window=2
	id=$(echo one | mq-send -k nightly)
	r=$(mq-recv)
	mq-ack "$r"
	acked=$(date +%s%N)
	run -0 mq-send -k nightly <<<"two"
	# Only if this ran within the window (a slow machine may not).
	if [ $(( ($(date +%s%N) - acked) / 1000000 )) -lt 1900 ]; then
		assert_output "$id"
		assert_equal "$(count new)" 0
	fi
	sleep 2.1
	run -0 mq-send -k nightly <<<"three"
	[ "$output" != "$id" ]
	assert_equal "$(count new)" 1
	assert_equal "$(cat "$(messages)")" three
}

@test "mq-send -k: a purge starts the window as an ack does" {
	mq-conf dedup-window=30
	id=$(echo one | mq-send -k purged)
	r=$(mq-recv)
	mq-ack -x "bad" "$r"
	mq-dlq purge "$id"
	assert_equal "$(count dead)" 0
	run -0 mq-send -k purged <<<"two"
	assert_output "$id"
	assert_equal "$(count new)" 0
	# Window 0 now: the purge was long enough ago.
	mq-conf dedup-window=0
	run -0 mq-send -k purged <<<"three"
	[ "$output" != "$id" ]
	assert_equal "$(count new)" 1
}

@test "mq-send -k: 8 senders racing on one key, 20 rounds: one message each round, all 8 print its ID" {
	for round in $(seq 1 20); do
		for i in 1 2 3 4 5 6 7 8; do
			echo "r$round-s$i" | timeout 20 mq-send -k "race-$round" \
			    >"$BATS_TEST_TMPDIR/out.$i" &
		done
		wait
		assert_equal "$(find "$MQ_DIR/new" -name "*,k$(keyhash "race-$round")" | wc -l)" 1
		assert_equal "$(cat "$BATS_TEST_TMPDIR"/out.* | sort -u | wc -l)" 1
		assert_equal "$(cat "$BATS_TEST_TMPDIR"/out.* | wc -l)" 8
		assert_equal "$(cat "$BATS_TEST_TMPDIR/out.1")" \
		    "$(readlink "$MQ_DIR/keys/$(keyhash "race-$round")" | cut -d' ' -f1)"
		rm -f "$BATS_TEST_TMPDIR"/out.*
	done
	assert_equal "$(count new)" 20
	assert_equal "$(find "$MQ_DIR/tmp" -type f ! -name ".*" | wc -l)" 0
}

@test "mq-send -k: bad keys and -k with -l, -0 or several files are usage errors (2); nothing sent" {
	echo a >"$BATS_TEST_TMPDIR/a"
	echo b >"$BATS_TEST_TMPDIR/b"
	long=$(printf '%0201d' 0)
	run -2 --separate-stderr mq-send -k "" <<<"x"
	[[ $stderr == *"-k: a key is 1 to 200 bytes, no newline"* ]]
	run -2 mq-send -k "$long" <<<"x"
	run -0 mq-send -k "${long:1}" <<<"x"
	run -2 mq-send -k "$(printf 'a\nb')" <<<"x"
	run -2 --separate-stderr mq-send -k k -l <<<"x"
	[[ $stderr == *"-k sends one message: not with -l or -0"* ]]
	run -2 mq-send -k k -0 <<<"x"
	run -2 --separate-stderr mq-send -k k "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	[[ $stderr == *"-k sends one message: not with several files"* ]]
	run -2 mq-send -k
	assert_equal "$(count new)" 1
	# One file is fine.
	run -0 mq-send -k file-key "$BATS_TEST_TMPDIR/a"
	assert_equal "$(count new)" 2
}

@test "mq-send -k: a sender killed between its records and its rename: the rerun queues exactly one" {
	# The state a SIGKILL there leaves, made by hand: tmp/ID written,
	# keys/ID linked to it, keys/HASH naming it; the lock died with it.
	mq-send -l </dev/null >/dev/null
	mkdir -p "$MQ_DIR/keys"
	dead=18ed0000000000aa.4242.0123456789ab
	echo stranded >"$MQ_DIR/tmp/$dead"
	ln "$MQ_DIR/tmp/$dead" "$MQ_DIR/keys/$dead"
	ln -s "$dead crash-key" "$MQ_DIR/keys/$(keyhash crash-key)"
	run -0 mq-send -k crash-key <<<"rerun"
	id=$output
	[ "$id" != "$dead" ]
	run -0 mq-send -k crash-key <<<"rerun again"
	assert_output "$id"
	assert_equal "$(count new)" 1
	assert_equal "$(cat "$(messages)")" rerun
	# What the killed sender left is gone.
	assert_file_not_exist "$MQ_DIR/tmp/$dead"
	assert_file_not_exist "$MQ_DIR/keys/$dead"
	assert_equal "$(readlink "$MQ_DIR/keys/$(keyhash crash-key)")" "$id crash-key"
}

@test "mq-send -k: a sender killed by SIGKILL at any point: the reruns queue the key once, no record names a missing message" {
	for n in $(seq 1 30); do
		echo "try $n" | timeout 20 mq-send -k kill-key >/dev/null &
		pid=$!
		sleep "0.00$((RANDOM % 10))"
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" || true
	done
	run -0 mq-send -k kill-key <<<"last"
	id=$output
	run -0 mq-send -k kill-key <<<"last again"
	assert_output "$id"
	assert_equal "$(count new)" 1
	mq-sweep
	for h in "$MQ_DIR"/keys/*; do
		[ -L "$h" ] || continue
		assert_file_exist "$MQ_DIR/keys/$(readlink "$h" | cut -d' ' -f1)"
	done
	# Only the holder's two records are left once swept.
	assert_equal "$(find "$MQ_DIR/keys" -mindepth 1 | wc -l)" 2
}

@test "mq-send -k: another key with the same hash: exit 4 naming keys/HASH, nothing sent" {
	mq-send -l </dev/null >/dev/null
	mkdir -p "$MQ_DIR/keys"
	h=$(keyhash mine)
	other=18ed0000000000aa.4242.0123456789ab
	ln -s "$other not-mine" "$MQ_DIR/keys/$h"
	run -4 --separate-stderr mq-send -k mine <<<"x"
	assert_output ""
	assert_equal "$stderr" "mq-send: $MQ_DIR/keys/$h: another key has this hash"
	assert_equal "$(count new)" 0
	assert_equal "$(find "$MQ_DIR/tmp" -type f ! -name ".*" | wc -l)" 0
	assert_equal "$(readlink "$MQ_DIR/keys/$h")" "$other not-mine"
}

@test "mq-send -k: keys/ replaced by a symbolic link is refused, not followed" {
	mq-send -l </dev/null >/dev/null
	mkdir "$BATS_TEST_TMPDIR/elsewhere"
	ln -s "$BATS_TEST_TMPDIR/elsewhere" "$MQ_DIR/keys"
	run -4 --separate-stderr mq-send -k k <<<"x"
	[[ $stderr == "mq-send: $MQ_DIR/keys: "* ]]
	assert_equal "$(find "$BATS_TEST_TMPDIR/elsewhere" -mindepth 1 | wc -l)" 0
	assert_equal "$(count new)" 0
	assert_equal "$(find "$MQ_DIR/tmp" -type f ! -name ".*" | wc -l)" 0
	# keys/HASH a symbolic link to a file elsewhere is not one of ours.
	rm "$MQ_DIR/keys"
	mkdir "$MQ_DIR/keys"
	echo secret >"$BATS_TEST_TMPDIR/elsewhere/f"
	ln -s "$BATS_TEST_TMPDIR/elsewhere/f" "$MQ_DIR/keys/$(keyhash k)"
	run -4 --separate-stderr mq-send -k k <<<"x"
	[[ $stderr == *"keys/$(keyhash k): not a key record" ]]
	assert_equal "$(cat "$BATS_TEST_TMPDIR/elsewhere/f")" secret
}

@test "mq-send -k, mq-sweep: a record whose key is longer than any key is not one, and overflows nothing" {
	mq-send -l </dev/null >/dev/null
	mkdir -p "$MQ_DIR/keys"
	ln -s "$(printf '%016x.1.0123456789ab' 1) $(head -c 240 /dev/zero | tr '\0' A)" \
	    "$MQ_DIR/keys/$(keyhash k)"
	run -4 --separate-stderr mq-send -k k <<<"x"
	[[ $stderr == *"keys/$(keyhash k): not a key record" ]]
	run mq-sweep
	assert_success
	assert_equal "$(count new)" 0
}

@test "mq-sweep: forgets keys past their window, broken records and orphans; keeps what is held" {
	# A 5 s window, passed by moving the clock ahead (ahead), not by a
	# sleep: a slow run (valgrind, a loaded machine) keeps its margin.
	mq-conf dedup-window=5
	held=$(echo a | mq-send -k held)
	gone=$(echo b | mq-send -k gone)
	r=$(mq-recv)
	[[ $r == *"$held"* ]]
	mq-ack "$r"
	# An orphan keys/ID (a sender died between its two links) and a
	# broken record (keys/ID gone).
	orphan=18ed0000000000aa.4242.0123456789ab
	echo o >"$MQ_DIR/keys/$orphan"
	ln -s "18ed0000000000bb.4242.0123456789ab broken" "$MQ_DIR/keys/$(keyhash broken)"
	# Something that is not a record is left alone.
	echo x >"$MQ_DIR/keys/README"
	run -0 --separate-stderr mq-sweep -v
	[[ $stderr == *"$orphan: orphan key record removed"* ]]
	[[ $stderr == *"18ed0000000000bb.4242.0123456789ab: key forgotten: its record was broken"* ]]
	# held was acked less than 5 s ago: still held.
	record held || fail "the record of held is gone"
	run -0 --separate-stderr ahead 6 mq-sweep -v
	[[ $stderr == *"$held: key forgotten: its window is over"* ]]
	! record held || fail "the record of held is there"
	assert_file_not_exist "$MQ_DIR/keys/$held"
	assert_file_not_exist "$MQ_DIR/keys/$orphan"
	! record broken || fail "the broken record is there"
	# gone is still waiting: its key stays.
	assert_equal "$(readlink "$MQ_DIR/keys/$(keyhash gone)")" "$gone gone"
	assert_file_exist "$MQ_DIR/keys/README"
	run -0 mq-send -k gone <<<"c"
	assert_output "$gone"
}

@test "mq-sweep: a dead sender's record (message still in tmp/) is forgotten with its message" {
	mq-send -l </dev/null >/dev/null
	mkdir -p "$MQ_DIR/keys"
	dead=18ed0000000000aa.4242.0123456789ab
	echo stranded >"$MQ_DIR/tmp/$dead"
	ln "$MQ_DIR/tmp/$dead" "$MQ_DIR/keys/$dead"
	ln -s "$dead k" "$MQ_DIR/keys/$(keyhash k)"
	run -0 --separate-stderr mq-sweep -v
	[[ $stderr == *"$dead: key forgotten: its send did not finish"* ]]
	assert_equal "$(find "$MQ_DIR/keys" "$MQ_DIR/tmp" -type f -o -type l | wc -l)" 0
}

@test "mq-recv worker mode: MQ_KEY is the message's key, byte for byte; unset for a message without one" {
	key=$'a key with spaces, "quotes", \\ slashes/ and UTF-8: \xc3\xa9\xe2\x82\xac'
	echo one | mq-send -k "$key" >/dev/null
	echo two | mq-send >/dev/null
	MQ_KEY=stale run -0 timeout 20 mq-recv -n 2 -- \
	    sh -c 'printf "[%s]\n" "${MQ_KEY-unset}" >>"$0"' "$BATS_TEST_TMPDIR/seen"
	assert_equal "$(sed -n 1p "$BATS_TEST_TMPDIR/seen")" "[$key]"
	assert_equal "$(sed -n 2p "$BATS_TEST_TMPDIR/seen")" "[unset]"
}

@test "mq-dlq ls --json: the key, as a JSON string; redrive keeps it" {
	key=$'k "q" \\ /x/ \xc3\xa9'
	id=$(echo body | mq-send -k "$key")
	echo plain | mq-send >/dev/null
	for _ in 1 2; do r=$(mq-recv); mq-ack -x "why" "$r"; done
	run -0 mq-dlq ls --json
	assert_line --index 0 --partial "{\"id\":\"$id\",\"state\":\"dead\",\"attempts\":1,\"time\":"
	assert_line --index 0 --partial "\"priority\":0,\"key\":\"k \\\"q\\\" \\\\ /x/ "$'\xc3\xa9'"\",\"died\":"
	refute_line --index 1 --partial '"key"'
	if command -v python3 >/dev/null; then
		got=$(python3 -c 'import json,sys; sys.stdout.write(json.loads(sys.stdin.readline())["key"])' <<<"$output")
		assert_equal "$got" "$key"
	fi
	ino=$(stat -c %i "$MQ_DIR/keys/$id")
	mq-dlq redrive "$id"
	# The same inode, the key in its name, held still.
	f=$(find "$MQ_DIR/new" -name "$id,*")
	[[ $f == *",k$(keyhash "$key"),d1" ]]
	assert_equal "$(stat -c %i "$f")" "$ino"
	run -0 mq-send -k "$key" <<<"again"
	assert_output "$id"
	MQ_KEY='' run -0 timeout 20 mq-recv -n 1 -- sh -c 'printf "%s" "$MQ_KEY" >"$0"' "$BATS_TEST_TMPDIR/k"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/k")" "$key"
}

@test "mq-send -k with -D, --ttl and -S: the name carries them and the key" {
	id=$(echo later | mq-send -S -D 60 --ttl 600 -k delayed)
	f=$(find "$MQ_DIR/new" -name "$id,*")
	[[ ${f##*/} =~ ^$id,0,[0-9]+,600000,k$(keyhash delayed)$ ]]
	run -0 mq-send -k delayed <<<"again"
	assert_output "$id"
	run -1 mq-recv
}

@test "mq-send -k with max-depth: a held key needs no room (exit 0), a new key finds the spool full (exit 6)" {
	mq-conf max-depth=1
	id=$(echo one | mq-send -k first)
	run -0 mq-send -k first <<<"again"
	assert_output "$id"
	run -6 --separate-stderr mq-send -k second <<<"two"
	assert_output ""
	[[ $stderr == *"full (max-depth 1)"* ]]
	assert_equal "$(count new)" 1
	assert_equal "$(find "$MQ_DIR/tmp" -type f ! -name ".*" | wc -l)" 0
	! record second || fail "a record of second is there"
	# Room made while it waits (-w): it goes on, and holds the key.
	(sleep 0.5; r=$(mq-recv) && mq-ack "$r") &
	run -0 timeout 20 mq-send -w 10 -k second <<<"two"
	id2=$output
	wait
	run -0 mq-send -k second <<<"two again"
	assert_output "$id2"
	# overflow=drop-oldest: the key's message makes room as any does.
	mq-conf overflow=drop-oldest
	run -0 mq-send -k third <<<"three"
	assert_equal "$(count new)" 1
}

@test "completion: mq-send -k takes a key, with no value to complete (bash and zsh)" {
	comp=$BATS_TEST_DIRNAME/../share/completions
	cd "$BATS_TEST_TMPDIR"
	touch afile
	run bash -c 'source "$1"; COMP_WORDS=(mq-send -k ""); COMP_CWORD=2; _mq
		printf "%s\n" "${COMPREPLY[@]}"' _ "$comp/mq.bash"
	assert_output ""
	run bash -c 'source "$1"; COMP_WORDS=(mq-send -k key ""); COMP_CWORD=3; _mq
		printf "%s\n" "${COMPREPLY[@]}"' _ "$comp/mq.bash"
	assert_output "afile"
	run bash -c 'source "$1"; _mq_options mq-send' _ "$comp/mq.bash"
	assert_output --partial " -k "
	grep -q "'(-l -0)-k\[dedup key[^]]*\]:key'" "$comp/_mq"
}

@test "mq-send -k: the order of its steps: data synced, lock, keys/ID, keys/HASH, keys/ synced, rename, unlock" {
	command -v strace >/dev/null || skip "strace is not installed"
	mq-send -l </dev/null
	# LeakSanitizer cannot run under ptrace.
	ASAN_OPTIONS=detect_leaks=0 strace -o "$BATS_TEST_TMPDIR/trace" \
	    -e trace=flock,linkat,symlinkat,fsync,renameat,renameat2 \
	    mq-send -k ordered <<<"body" >"$BATS_TEST_TMPDIR/id"
	id=$(cat "$BATS_TEST_TMPDIR/id")
	t=$BATS_TEST_TMPDIR/trace
	at() { grep -nE "$1" "$t" | head -n 1 | cut -d: -f1; }
	data=$(at '^fsync\(')
	lock=$(at 'flock\([0-9]+, LOCK_EX\)')
	link=$(at "^linkat\(.*\"$id\", 0\)")
	sym=$(at "^symlinkat\(\"$id ordered\"")
	keysfd=$(sed -nE 's/^flock\(([0-9]+), LOCK_EX\).*/\1/p' "$t")
	# The fd number may have been the data's too: the first after sym.
	sync=$(awk -v s="$sym" -v fd="fsync($keysfd)" 'NR > s && index($0, fd) == 1 { print NR; exit }' "$t")
	move=$(at "^renameat2?\(.*\"$id,0,k$(keyhash ordered)\"")
	unlock=$(at 'flock\([0-9]+, LOCK_UN\)')
	for v in "$data" "$lock" "$link" "$sym" "$sync" "$move" "$unlock"; do
		[ -n "$v" ] || { cat "$t"; fail "a step is missing"; }
	done
	[ "$data" -lt "$lock" ] && [ "$lock" -lt "$link" ] &&
	    [ "$link" -lt "$sym" ] && [ "$sym" -lt "$sync" ] &&
	    [ "$sync" -lt "$move" ] && [ "$move" -lt "$unlock" ] ||
	    { cat "$t"; fail "steps out of order"; }
	# -S: no sync of keys/ either.
	ASAN_OPTIONS=detect_leaks=0 strace -o "$t" -e trace=fsync,fdatasync,syncfs \
	    mq-send -S -k unsynced <<<"body" >/dev/null
	run grep -cE '^(fsync|fdatasync|syncfs)\(' "$t"
	assert_output 0
}

@test "mq-send -k: a key taken from an acknowledged holder syncs the file system, so a power cut cannot bring back both holders" {
	command -v strace >/dev/null || skip "strace is not installed"
	echo first | mq-send -k reused >/dev/null
	mq-ack "$(mq-recv -t 60)"
	# Nothing synced the ack's unlink; the new holder's sync must cover it.
	ASAN_OPTIONS=detect_leaks=0 run strace -f -e trace=fsync,fdatasync,syncfs,symlinkat,symlink \
	    -o "$BATS_TEST_TMPDIR/trace" mq-send -k reused <<<"second"
	assert_success
	run -0 grep -A1 -E '^[0-9]+ +symlinkat?\(' "$BATS_TEST_TMPDIR/trace"
	assert_line --index 1 --regexp '^[0-9]+ +syncfs\('
	# A key held for the first time costs an fsync of keys/ only.
	ASAN_OPTIONS=detect_leaks=0 run strace -f -e trace=fsync,fdatasync,syncfs,symlinkat,symlink \
	    -o "$BATS_TEST_TMPDIR/trace2" mq-send -k fresh <<<"third"
	assert_success
	run -0 grep -A1 -E '^[0-9]+ +symlinkat?\(' "$BATS_TEST_TMPDIR/trace2"
	assert_line --index 1 --regexp '^[0-9]+ +fsync\('
}

@test "mq-send -k: keys/, made by the first keyed send, is synced into the spool before the ID is printed" {
	command -v strace >/dev/null || skip "strace is not installed"
	echo plain | mq-send >/dev/null
	root=$(cd "$MQ_DIR" && pwd -P)
	ASAN_OPTIONS=detect_leaks=0 run strace -f -y -e trace=fsync,write \
	    -o "$BATS_TEST_TMPDIR/trace" mq-send -k first <<<"keyed"
	assert_success
	n=$(grep -n "fsync([0-9]*<$root>)" "$BATS_TEST_TMPDIR/trace" | head -1 | cut -d: -f1)
	out=$(grep -n 'write(1<' "$BATS_TEST_TMPDIR/trace" | cut -d: -f1)
	[ -n "$n" ] || fail "the spool is not synced after keys/ is made"
	[ "$n" -lt "$out" ]
}
