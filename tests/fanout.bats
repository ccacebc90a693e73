load helper

# mq-send -d A -d B ...: each message into every spool, under one ID.

setup() {
	A="$BATS_TEST_TMPDIR/a"
	B="$BATS_TEST_TMPDIR/b"
	C="$BATS_TEST_TMPDIR/c"
	MNTS=()
}

teardown() {
	local m
	for m in "${MNTS[@]}"; do
		timeout 20 umount "$m" || timeout 20 umount -l "$m" || true
	done
}

# The message files of spool $1's new/, one "name inode" line each, sorted.
files() {
	find "$1/new" -type f -printf '%f %i\n' | sort
}

# The IDs waiting in spool $1, sorted.
ids() {
	find "$1/new" -type f -printf '%f\n' | sed 's/,.*//' | sort
}

# Mounts a tmpfs of $2 (default 8m) on $1, or skips.
tmpfs() {
	[ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root"
	mkdir -p "$1"
	timeout 20 mount -t tmpfs -o "size=${2:-8m}" tmpfs "$1" 2>/dev/null ||
	    skip "this machine does not allow mounting a tmpfs"
	MNTS+=("$1")
}

# Makes $1 a read-only view of itself (a bind mount), or skips.
readonly_dir() {
	[ "$(id -u)" -eq 0 ] || skip "a read-only bind mount needs root"
	timeout 20 mount --bind "$1" "$1" 2>/dev/null ||
	    skip "this machine does not allow bind mounts"
	MNTS+=("$1")
	timeout 20 mount -o remount,ro,bind "$1" ||
	    skip "this machine does not allow a read-only bind mount"
	run touch "$1/probe"
	assert_failure
}

@test "fanout: one ID per message in every spool, printed once; one inode (hard links) on one file system" {
	run --separate-stderr mq-send -l -d "$A" -d "$B" -d "$C" < <(seq 1 5)
	assert_success
	[ -z "$stderr" ]
	assert_equal "${#lines[@]}" 5
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" 5
	printf '%s\n' "${lines[@]}" | sort >"$BATS_TEST_TMPDIR/printed"
	for d in "$A" "$B" "$C"; do
		assert_equal "$(ids "$d")" "$(cat "$BATS_TEST_TMPDIR/printed")"
	done
	# Same names, same inodes: the body was written once.
	assert_equal "$(files "$A")" "$(files "$B")"
	assert_equal "$(files "$A")" "$(files "$C")"
	for f in "$A"/new/*/*/*/*; do
		assert_equal "$(stat -c %h "$f")" 3
	done
	# Nothing is left in any tmp/ but the spare directories.
	assert_equal "$(find "$A/tmp" "$B/tmp" "$C/tmp" -type f ! -name ".*" | wc -l)" 0
}

@test "fanout: each spool's receiver gets each message once, bodies identical" {
	printf 'one\ntwo\nthree\n' | mq-send -l -d "$A" -d "$B" >/dev/null
	printf 'x\0y z\0' | mq-send -0 -d "$A" -d "$B" >/dev/null
	printf 'whole\nfile' >"$BATS_TEST_TMPDIR/f"
	mq-send -d "$A" -d "$B" "$BATS_TEST_TMPDIR/f" >/dev/null
	for d in "$A" "$B"; do
		MQ_DIR="$d" drain -t 60 >"$BATS_TEST_TMPDIR/got"
		assert_equal "$(cat "$BATS_TEST_TMPDIR/got")" \
		    "$(printf 'one\ntwo\nthree\nx\ny z\nwhole\nfile')"
		MQ_DIR="$d" run -1 mq-recv
	done
}

@test "fanout: -l with many messages (more than a batch) into 3 spools" {
	# A batch is at most 1024 messages (a leaf's worth): two batches.
	run --separate-stderr mq-send -l -d "$A" -d "$B" -d "$C" < <(seq 1 1100)
	assert_success
	assert_equal "${#lines[@]}" 1100
	printf '%s\n' "${lines[@]}" | sort >"$BATS_TEST_TMPDIR/printed"
	assert_equal "$(sort -u "$BATS_TEST_TMPDIR/printed" | wc -l)" 1100
	for d in "$A" "$B" "$C"; do
		assert_equal "$(ids "$d")" "$(cat "$BATS_TEST_TMPDIR/printed")"
	done
	# The bodies, one a line (awk ends the last line of each).
	MQ_DIR="$C" mq-recv -n 3000 -t 60 | xargs -d '\n' awk 1 |
	    sort -n >"$BATS_TEST_TMPDIR/got"
	assert_equal "$(grep -c . "$BATS_TEST_TMPDIR/got")" 1100
	assert_equal "$(cat "$BATS_TEST_TMPDIR/got")" "$(seq 1 1100)"
}

@test "fanout: -D and --ttl apply in every spool" {
	run mq-send -D 600 --ttl 900 -d "$A" -d "$B" <<<"later"
	assert_success
	id=$output
	for d in "$A" "$B"; do
		f=$(find "$d/new" -type f)
		# ID,0,SENT,TTL: the time to live, in ms.
		[[ ${f##*/} == "$id",0,*,900000 ]]
		MQ_DIR="$d" run -1 mq-recv
		MQ_DIR="$d" run mq-stat --json
		assert_output --partial '"delayed":1'
	done
}

@test "fanout: a copy, not a link, where the spools' modes or groups differ (a shared spool)" {
	[ "$(id -u)" -eq 0 ] || skip "making a shared spool's group needs root"
	mkdir "$BATS_TEST_TMPDIR/team"
	chgrp 4242 "$BATS_TEST_TMPDIR/team"
	chmod 2770 "$BATS_TEST_TMPDIR/team"
	S="$BATS_TEST_TMPDIR/team/q"
	run --separate-stderr mq-send -l -d "$A" -d "$S" < <(seq 1 3)
	assert_success
	assert_equal "$(stat -c '%a' "$S")" 2770
	assert_equal "$(ids "$A")" "$(ids "$S")"
	for f in "$S"/new/*/*/*/*; do
		assert_equal "$(stat -c '%a %g %h' "$f")" "660 4242 1"
	done
	for f in "$A"/new/*/*/*/*; do
		assert_equal "$(stat -c '%a %h' "$f")" "600 1"
	done
	# Not one inode: each spool has its own file.
	[ -z "$(comm -12 <(files "$A" | cut -d' ' -f2 | sort) <(files "$S" | cut -d' ' -f2 | sort))" ]
	assert_equal "$(MQ_DIR="$S" drain -t 60)" "$(printf '1\n2\n3')"
}

@test "fanout: across file systems the body is copied" {
	tmpfs "$BATS_TEST_TMPDIR/mnt"
	B="$BATS_TEST_TMPDIR/mnt/b"
	run --separate-stderr mq-send -l -d "$A" -d "$B" < <(seq 1 3)
	assert_success
	[ -z "$stderr" ]
	[ "$(stat -c %d "$A")" != "$(stat -c %d "$B")" ]
	assert_equal "$(ids "$A")" "$(ids "$B")"
	for f in "$A"/new/*/*/*/* "$B"/new/*/*/*/*; do
		assert_equal "$(stat -c %h "$f")" 1
	done
	assert_equal "$(MQ_DIR="$B" drain -t 60)" "$(printf '1\n2\n3')"
	assert_equal "$(MQ_DIR="$A" drain -t 60)" "$(printf '1\n2\n3')"
}

@test "fanout: a full spool (max-depth) is named, exit 6; the others get everything, whatever the order" {
	mq-send -d "$B" </dev/null >/dev/null
	MQ_DIR="$B" drain -t 60 >/dev/null
	mq-conf -d "$B" max-depth=1
	run -6 --separate-stderr mq-send -l -d "$B" -d "$A" -d "$C" < <(seq 1 4)
	assert_equal "${#lines[@]}" 4
	assert_equal "$stderr" "mq-send: $B: full (max-depth 1)"
	# B was empty: it took the first, and only that.
	assert_equal "$(find "$B/new" -type f | wc -l)" 1
	assert_equal "$(ids "$B")" "${lines[0]}"
	printf '%s\n' "${lines[@]}" | sort >"$BATS_TEST_TMPDIR/printed"
	assert_equal "$(ids "$A")" "$(cat "$BATS_TEST_TMPDIR/printed")"
	assert_equal "$(ids "$C")" "$(cat "$BATS_TEST_TMPDIR/printed")"
	assert_equal "$(find "$A/tmp" "$B/tmp" "$C/tmp" -type f ! -name ".*" | wc -l)" 0
	# Last instead of first: the same.
	run -6 --separate-stderr mq-send -l -d "$A" -d "$B" < <(seq 5 6)
	assert_equal "${#lines[@]}" 2
	assert_equal "$stderr" "mq-send: $B: full (max-depth 1)"
	assert_equal "$(MQ_DIR="$A" drain -t 60 | tr '\n' ' ')" "1 2 3 4 5 6 "
}

@test "fanout: -w waits for a full spool, then gives up on it (6); the others keep theirs" {
	mq-send -d "$B" </dev/null >/dev/null
	MQ_DIR="$B" drain -t 60 >/dev/null
	mq-conf -d "$B" max-depth=1
	run -6 --separate-stderr timeout 20 mq-send -w 1 -l -d "$A" -d "$B" < <(seq 1 3)
	assert_equal "${#lines[@]}" 3
	assert_equal "$stderr" "mq-send: $B: full (max-depth 1)"
	assert_equal "$(find "$A/new" -type f | wc -l)" 3
	assert_equal "$(find "$B/new" -type f | wc -l)" 1
}

@test "fanout: a spool that refuses the message (read-only) is named, exit 4; the others get everything, whatever the order" {
	mq-send -d "$B" </dev/null >/dev/null
	MQ_DIR="$B" drain -t 60 >/dev/null
	readonly_dir "$B"
	run -4 --separate-stderr mq-send -l -d "$B" -d "$A" < <(seq 1 3)
	assert_equal "${#lines[@]}" 3
	[[ $stderr == "mq-send: $B/tmp/"*": Read-only file system" ]]
	assert_equal "$(MQ_DIR="$A" drain -t 60 | tr '\n' ' ')" "1 2 3 "
	run -4 --separate-stderr mq-send -l -d "$A" -d "$B" < <(seq 4 6)
	assert_equal "${#lines[@]}" 3
	[[ $stderr == "mq-send: $B/tmp/"*": Read-only file system" ]]
	assert_equal "$(MQ_DIR="$A" drain -t 60 | tr '\n' ' ')" "4 5 6 "
	assert_equal "$(find "$B/new" -type f ! -name ".*" | wc -l)" 0
	assert_equal "$(find "$A/tmp" -type f ! -name ".*" | wc -l)" 0
}

@test "fanout: a spool that fills up while a message is written into it: the message goes on in the next, whole" {
	tmpfs "$BATS_TEST_TMPDIR/small" 256k
	B="$BATS_TEST_TMPDIR/small/b"
	head -c 1000000 /dev/urandom >"$BATS_TEST_TMPDIR/big"
	printf 'small' >"$BATS_TEST_TMPDIR/small.txt"
	# B first: the big body is begun in B, which has no room for it.
	run -4 --separate-stderr mq-send -d "$B" -d "$A" "$BATS_TEST_TMPDIR/small.txt" \
	    "$BATS_TEST_TMPDIR/big" "$BATS_TEST_TMPDIR/small.txt"
	assert_equal "${#lines[@]}" 3
	[[ $stderr == "mq-send: $B/tmp/"*": No space left on device" ]]
	# B failed with the first still in its batch: it took none, and has
	# nothing left over in tmp/.
	assert_equal "$(find "$B/new" "$B/tmp" -type f ! -name ".*" | wc -l)" 0
	printf '%s\n' "${lines[@]}" | sort >"$BATS_TEST_TMPDIR/printed"
	assert_equal "$(ids "$A")" "$(cat "$BATS_TEST_TMPDIR/printed")"
	r=$(MQ_DIR="$A" mq-recv -n 3 | sed -n 2p)
	cmp "$r" "$BATS_TEST_TMPDIR/big"
	# The same with -l: a long line, begun in B, is whole in A.
	head -c 300000 /dev/zero | tr '\0' x >"$BATS_TEST_TMPDIR/line"
	# From a file, not a pipe: a pipe's pause after "a" would publish it.
	{ printf 'a\n'; cat "$BATS_TEST_TMPDIR/line"; printf '\nb\n'; } \
	    >"$BATS_TEST_TMPDIR/lines"
	run -4 --separate-stderr mq-send -l -d "$B" -d "$A" \
	    <"$BATS_TEST_TMPDIR/lines"
	assert_equal "${#lines[@]}" 3
	[[ $stderr == "mq-send: $B/tmp/"*": No space left on device" ]]
	assert_equal "$(find "$B/new" "$B/tmp" -type f ! -name ".*" | wc -l)" 0
	mapfile -t rs < <(MQ_DIR="$A" mq-recv -n 3 -t 60)
	assert_equal "${#rs[@]}" 3
	assert_equal "$(cat "${rs[0]}")" a
	cmp "${rs[1]}" "$BATS_TEST_TMPDIR/line"
	assert_equal "$(cat "${rs[2]}")" b
}

@test "fanout: a spool that cannot be opened is named, exit 4; the others get everything" {
	mkdir -p "$B"
	printf 'not a directory' >"$B/tmp"
	printf 'file' >"$BATS_TEST_TMPDIR/plain"
	run -4 --separate-stderr mq-send -l -d "$A" -d "$B" -d "$BATS_TEST_TMPDIR/plain/q" -d "$C" < <(seq 1 3)
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --regexp '^[0-9a-f]{16}\.'
	[[ $stderr == *"mq-send: $B: not a spool"* ]]
	[[ $stderr == *"mq-send: $BATS_TEST_TMPDIR/plain/q: "* ]]
	assert_equal "$(MQ_DIR="$A" drain -t 60 | tr '\n' ' ')" "1 2 3 "
	assert_equal "$(MQ_DIR="$C" drain -t 60 | tr '\n' ' ')" "1 2 3 "
	# None at all: exit 4, the input is not read.
	run -4 --separate-stderr mq-send -d "$B" <<<x
	assert_output ""
}

@test "fanout: the same spool twice is a usage error (2), and nothing is sent" {
	mkdir -p "$BATS_TEST_TMPDIR/w"
	cd "$BATS_TEST_TMPDIR/w"
	run -2 --separate-stderr mq-send -d a -d b -d ./a <<<x
	assert_output ""
	[[ $stderr == *"a, ./a: the same spool"* ]]
	# No message: a spool's own files (its counters) are at its top.
	assert_equal "$(find a b -mindepth 2 -type f ! -name ".*" | wc -l)" 0
	ln -s a link
	run -2 --separate-stderr mq-send -d a -d link <<<x
	assert_equal "$(find a b -mindepth 2 -type f ! -name ".*" | wc -l)" 0
}

@test "fanout: -v says for each message which input it came from and which spools have it" {
	run --separate-stderr mq-send -v -d "$A" -d "$B" <<<x
	assert_success
	id=$output
	assert_equal "$stderr" "$(printf 'mq-send: %s: queued from stdin\nmq-send: %s: queued in %s\nmq-send: %s: queued in %s' \
	    "$id" "$id" "$A" "$id" "$B")"
}

@test "fanout: MQ_DIR alone is one spool; -d replaces it, and does not add to it" {
	run mq-send <<<x
	assert_success
	assert_equal "$(count new)" 1
	run mq-send -d "$A" -d "$B" <<<y
	assert_success
	assert_equal "$(count new)" 1
	assert_equal "$(find "$A/new" "$B/new" -type f | wc -l)" 2
}

@test "fanout: one spool links nothing and copies nothing (strace)" {
	command -v strace >/dev/null || skip "strace is not installed"
	ASAN_OPTIONS=detect_leaks=0 strace -f -e trace=link,linkat,openat \
	    -o "$BATS_TEST_TMPDIR/trace" mq-send -l < <(seq 1 3) >/dev/null
	run grep -c 'link' "$BATS_TEST_TMPDIR/trace"
	assert_output 0
	# Each message's file is opened in tmp/ to be written, never to be read.
	run grep -c 'O_RDONLY.*= [0-9]' <(grep -E '"[0-9a-f]{16}\.' "$BATS_TEST_TMPDIR/trace")
	assert_output 0
}

@test "fanout: every spool's new/ levels are synced before the IDs are written out (strace)" {
	command -v strace >/dev/null || skip "strace is not installed"
	ASAN_OPTIONS=detect_leaks=0 strace -y -e trace=fsync,syncfs,write,linkat \
	    -o "$BATS_TEST_TMPDIR/trace" mq-send -l -d "$A" -d "$B" < <(seq 1 2) >"$BATS_TEST_TMPDIR/out"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/out")" 2
	t="$BATS_TEST_TMPDIR/trace"
	# The one write to standard output, of both IDs.
	out=$(grep -n '^write(1<' "$t" | cut -d: -f1)
	assert_equal "$(wc -l <<<"$out")" 1
	# B got each body by a link.
	assert_equal "$(grep -c '^linkat(' "$t")" 2
	for d in "$A" "$B"; do
		rd=$(cd "$d" && pwd -P)
		leaf=$(find "$rd/new" -mindepth 3 -maxdepth 3 -type d)
		for level in "$rd/new" "${leaf%/*/*}" "${leaf%/*}" "$leaf"; do
			n=$(grep -n "^fsync([0-9]*<$level>)" "$t" | tail -n 1 | cut -d: -f1)
			[ -n "$n" ] || fail "$level: not synced"
			[ "$n" -lt "$out" ] || fail "$level: synced after the IDs were written"
		done
	done
	# The data first, once for both (one file system): one syncfs.
	assert_equal "$(grep -c '^syncfs(' "$t")" 1
	[ "$(grep -n '^syncfs(' "$t" | cut -d: -f1)" -lt "$(grep -n "^fsync([0-9]*<$(cd "$A" && pwd -P)/new>)" "$t" | head -n 1 | cut -d: -f1)" ]
}

@test "fanout: bad uses: an empty -d is a usage error (2)" {
	run -2 --separate-stderr mq-send -d "$A" -d "" <<<x
	[[ $stderr == *"-d: empty spool name"* ]]
	[ ! -e "$A" ]
}

@test "fanout: -p gives the message the same priority in every spool" {
	echo low | mq-send -d "$A" -d "$B" >/dev/null
	id=$(echo high | mq-send -p 7 -d "$A" -d "$B")
	for d in "$A" "$B"; do
		run find "$d/new/p7" -type f -name "$id,*,p7"
		assert_output --partial "$id"
		r=$(MQ_DIR="$d" mq-recv -t 60)
		assert_equal "$(cat "$r")" high
	done
}

@test "fanout: -g puts the message in its group in every spool; order is kept in each" {
	for m in m1 m2 m3; do
		echo "$m" | mq-send -g G -d "$A" -d "$B" >/dev/null
	done
	# Each spool has its own copy: a group's turn is told by a link count.
	find "$A/new" "$A/groups" -type f -printf '%i\n' | sort -u >"$BATS_TEST_TMPDIR/ia"
	find "$B/new" "$B/groups" -type f -printf '%i\n' | sort -u >"$BATS_TEST_TMPDIR/ib"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/ia")" 3
	assert_equal "$(comm -12 "$BATS_TEST_TMPDIR/ia" "$BATS_TEST_TMPDIR/ib")" ""
	for d in "$A" "$B"; do
		for m in m1 m2 m3; do
			r=$(MQ_DIR="$d" mq-recv -t 60)
			assert_equal "$(cat "$r")" "$m"
			# One of the group at a time, in this spool.
			MQ_DIR="$d" run -1 mq-recv -t 60
			MQ_DIR="$d" mq-ack "$r"
		done
	done
	# Nothing of the group is left in either spool.
	[ -z "$(find "$A/groups" "$B/groups" -type f 2>/dev/null)" ] ||
	    fail "groups left: $(find "$A/groups" "$B/groups" -type f)"
}

@test "fanout: -k into A only, then -d A -d B -k K adds to B under A's ID, and a rerun adds nothing" {
	id=$(echo first | mq-send -d "$A" -k K)
	before=$(files "$A")
	run --separate-stderr mq-send -d "$A" -d "$B" -k K < <(echo second)
	assert_success
	assert_output "$id"
	assert_equal "$(files "$A")" "$before"
	assert_equal "$(ids "$B")" "$id"
	r=$(MQ_DIR="$B" mq-recv -t 60)
	assert_equal "$(cat "$r")" second
	MQ_DIR="$B" mq-ack -r "$r"
	run --separate-stderr mq-send -d "$A" -d "$B" -k K < <(echo third)
	assert_success
	assert_output "$id"
	assert_equal "$(files "$A")" "$before"
	assert_equal "$(ids "$B")" "$id"
	assert_equal "$(find "$A/tmp" "$B/tmp" -type f ! -name ".*" | wc -l)" 0
}

@test "fanout: -k with a new key: one ID in every spool, each body its own inode" {
	run --separate-stderr mq-send -d "$A" -d "$B" -d "$C" -k K < <(echo x)
	assert_success
	id=$output
	for d in "$A" "$B" "$C"; do
		assert_equal "$(ids "$d")" "$id"
	done
	a=$(find "$A/new" -type f -exec stat -c %i {} +)
	b=$(find "$B/new" -type f -exec stat -c %i {} +)
	c=$(find "$C/new" -type f -exec stat -c %i {} +)
	[ "$a" != "$b" ] && [ "$a" != "$c" ] && [ "$b" != "$c" ] ||
	    fail "shared inodes: $a $b $c"
	# Each holds its key through its own keys/ID only.
	for d in "$A" "$B" "$C"; do
		assert_equal "$(stat -c %h "$d"/new/*/*/*/"$id",*)" 2
	done
	# An ack in one spool frees the key there, not in the others.
	r=$(MQ_DIR="$A" mq-recv -t 60)
	MQ_DIR="$A" mq-ack "$r"
	run --separate-stderr mq-send -d "$A" -d "$B" -d "$C" -k K < <(echo y)
	assert_success
	assert_output "$id"
	assert_equal "$(ids "$A")" "$id"
	assert_equal "$(cat "$A"/new/*/*/*/"$id",*)" y
	assert_equal "$(cat "$B"/new/*/*/*/"$id",*)" x
}

@test "fanout: -k held in one spool, the other full: it is named, exit 6, the holder's ID printed" {
	id=$(echo first | mq-send -d "$A" -k K)
	echo other | mq-send -d "$B" >/dev/null
	mq-conf -d "$B" max-depth=1
	run --separate-stderr mq-send -d "$A" -d "$B" -k K < <(echo second)
	assert_failure 6
	assert_output "$id"
	assert_equal "$stderr" "mq-send: $B: full (max-depth 1)"
	assert_equal "$(ids "$A")" "$id"
	assert_equal "$(find "$B/new" -type f | wc -l)" 1
	assert_equal "$(find "$A/tmp" "$B/tmp" -type f ! -name ".*" | wc -l)" 0
}

@test "fanout: -k, 8 senders racing into the same two spools: one message per key in each (5 rounds)" {
	for round in 1 2 3 4 5; do
		pids=()
		for i in 1 2 3 4 5 6 7 8; do
			echo "$i" | timeout 20 mq-send -d "$A" -d "$B" -k "K$round" \
			    >"$BATS_TEST_TMPDIR/out.$i" &
			pids+=($!)
		done
		for p in "${pids[@]}"; do
			wait "$p" || fail "round $round: a sender failed"
		done
		for d in "$A" "$B"; do
			assert_equal "$(find "$d/new" -type f -name "*,k*" | wc -l)" "$round"
		done
		# Every sender printed an ID that one of the spools holds.
		for i in 1 2 3 4 5 6 7 8; do
			id=$(cat "$BATS_TEST_TMPDIR/out.$i")
			[ -n "$(find "$A/new" "$B/new" -type f -name "$id,*")" ] ||
			    fail "round $round: sender $i printed $id, held nowhere"
		done
	done
	assert_equal "$(find "$A/tmp" "$B/tmp" -type f ! -name ".*" | wc -l)" 0
}

@test "fanout: -k, a rerun's copy under the holder's older ID counts its time to live from now" {
	mq-conf -f -d "$A" ttl=1 max-depth=1
	echo filler | mq-send -d "$A" >/dev/null
	run --separate-stderr mq-send -k K -d "$B" -d "$A" <<<"m"
	assert_failure 6
	id=$output
	timeout 20 mq-recv -d "$A" | mq-ack -d "$A"
	sleep 1.5
	run --separate-stderr mq-send -k K -d "$B" -d "$A" <<<"m"
	assert_success
	assert_output "$id"
	r=$(timeout 20 mq-recv -d "$A")
	[[ ${r##*/} == "$id",* ]]
	assert_equal "$(cat "$r")" m
	assert_equal "$(find "$A/dead" -type f | wc -l)" 0
}
