load helper

# Bounded queues: the spool's max-depth and overflow (mq-conf), mq-send's
# exit 6 and -w.  There is no command-line option for the depth itself:
# it is the spool's setting, so that every producer agrees on it.

# The bodies waiting in new/, in claim order, one per line (claims them).
bodies() {
	local r
	while r=$(mq-recv); do
		cat "$r"
		echo
		mq-ack "$r"
	done
}

# Milliseconds since the epoch.
ms() {
	echo $(($(date +%s%N) / 1000000))
}

# Files in tmp/ but the depth cache (tmp/.depth): what a send left behind.
tmpfiles() {
	find "$MQ_DIR/tmp" -type f ! -name .depth | wc -l | tr -d ' '
}

# new/'s modification time, in ns (the doorbell: mq_ring touches it).
bell() {
	date -r "$MQ_DIR/new" +%s%N
}

@test "depth: a full spool exits 6 naming it and prints the IDs that fitted, which alone are queued" {
	mq-conf max-depth=5
	run -6 --separate-stderr mq-send -l < <(seq 1 8)
	assert_equal "$stderr" "mq-send: $MQ_DIR: full (max-depth 5)"
	assert_equal "${#lines[@]}" 5
	assert_equal "$(count new)" 5
	# The IDs printed are those of the messages in new/.
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort)" \
	    "$(find "$MQ_DIR/new" -type f | sed 's,.*/,,; s/,.*//' | sort)"
	assert_equal "$(bodies | tr '\n' ' ')" "1 2 3 4 5 "
	# Nothing partial left behind: tmp/ holds no message.
	assert_equal "$(tmpfiles)" 0
}

@test "depth: the rest of a call is not sent, also with several files, and a full spool takes none" {
	mq-conf max-depth=2
	for f in a b c; do echo "$f" >"$BATS_TEST_TMPDIR/$f"; done
	run -6 --separate-stderr mq-send "$BATS_TEST_TMPDIR/a" \
	    "$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/c"
	assert_equal "${#lines[@]}" 2
	assert_equal "$(count new)" 2
	run -6 --separate-stderr mq-send <<<"d"
	assert_output ""
	assert_equal "$stderr" "mq-send: $MQ_DIR: full (max-depth 2)"
	assert_equal "$(count new)" 2
	assert_equal "$(tmpfiles)" 0
	assert_equal "$(bodies | tr '\n' ' ')" "a  b  "
}

@test "depth: room is made by claims, not only by acks of the same call" {
	mq-conf max-depth=2
	seq 1 2 | mq-send -l >/dev/null
	run -6 mq-send -l <<<"3"
	r=$(mq-recv)
	run mq-send -l <<<"3"
	assert_success
	assert_equal "${#lines[@]}" 1
	mq-ack "$r"
	assert_equal "$(bodies | tr '\n' ' ')" "2 3 "
}

@test "depth: -w waits for room and sends once a consumer claims" {
	mq-conf max-depth=1
	echo first | mq-send >/dev/null
	timeout 20 mq-send -w <<<"second" >"$BATS_TEST_TMPDIR/ids" &
	pid=$!
	sleep 0.3
	# Still waiting, and nothing of it queued.
	kill -0 "$pid"
	assert_equal "$(count new)" 1
	[ ! -s "$BATS_TEST_TMPDIR/ids" ]
	r=$(mq-recv)
	assert_equal "$(cat "$r")" first
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/ids" | tr -d ' ')" 1
	mq-ack "$r"
	assert_equal "$(bodies)" second
}

@test "depth: -w waits for a worker's claims too, and under MQ_WAIT=poll" {
	mq-conf max-depth=2
	seq 1 2 | mq-send -l >/dev/null
	MQ_WAIT=poll timeout 20 mq-send -l -w < <(seq 3 6) >"$BATS_TEST_TMPDIR/ids" &
	pid=$!
	sleep 0.3
	kill -0 "$pid"
	timeout 20 mq-recv -n 6 -w 10 -- sh -c 'cat >>"$1"; echo >>"$1"' _ "$BATS_TEST_TMPDIR/done"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/ids" | tr -d ' ')" 4
	assert_equal "$(tr '\n' ' ' <"$BATS_TEST_TMPDIR/done")" "1 2 3 4 5 6 "
}

@test "depth: -w SECS exits 6 after SECS without room, having sent nothing more" {
	mq-conf max-depth=1
	echo first | mq-send >/dev/null
	t0=$(ms)
	run -6 --separate-stderr timeout 20 mq-send -w 0.5 <<<"second"
	t1=$(ms)
	assert_output ""
	assert_equal "$stderr" "mq-send: $MQ_DIR: full (max-depth 1)"
	[ $((t1 - t0)) -ge 500 ] || fail "gave up after $((t1 - t0)) ms"
	assert_equal "$(count new)" 1
	assert_equal "$(tmpfiles)" 0
}

@test "depth: -w with a number after it takes it as seconds; bad ones are usage errors" {
	mq-conf max-depth=1
	echo first | mq-send >/dev/null
	run -6 timeout 20 mq-send -w 0.1 <<<"x"
	run -6 timeout 20 mq-send -w0.1 <<<"x"
	run -2 --separate-stderr mq-send -w 5x <<<"x"
	[[ $stderr == "mq-send: -w 5x: "* ]]
	assert_equal "$(count new)" 1
}

@test "depth: mq-conf raising max-depth lets a waiting sender go on" {
	mq-conf max-depth=1
	echo first | mq-send >/dev/null
	timeout 20 mq-send -w <<<"second" >/dev/null &
	pid=$!
	sleep 0.3
	kill -0 "$pid"
	mq-conf max-depth=2
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(count new)" 2
}

@test "depth: overflow=drop-oldest buries the oldest with reason maxlen; the newest remain" {
	mq-conf max-depth=3 overflow=drop-oldest
	seq 1 3 | mq-send -l >"$BATS_TEST_TMPDIR/old"
	run --separate-stderr mq-send -v -l < <(seq 4 5)
	assert_success
	assert_equal "${#lines[@]}" 2
	# -v names each message dead-lettered to make room.
	oldest=$(head -n 1 "$BATS_TEST_TMPDIR/old")
	[[ $stderr == *"mq-send: $oldest: dead: maxlen"* ]]
	assert_equal "$(count new)" 3
	assert_equal "$(count dead)" 2
	run mq-dlq ls
	assert_equal "${#lines[@]}" 2
	[[ ${lines[0]} == "$oldest"*maxlen* ]]
	[[ ${lines[1]} == "$(sed -n 2p "$BATS_TEST_TMPDIR/old")"*maxlen* ]]
	assert_equal "$(bodies | tr '\n' ' ')" "3 4 5 "
}

@test "depth: drop-oldest with a batch larger than max-depth keeps the newest max-depth of it" {
	mq-conf max-depth=5 overflow=drop-oldest
	run mq-send -l < <(seq 1 23)
	assert_success
	# Every message was queued (its ID printed), none lost: dead or waiting.
	assert_equal "${#lines[@]}" 23
	assert_equal "$(count new)" 5
	assert_equal "$(count dead)" 18
	run mq-dlq ls
	assert_equal "$(grep -c maxlen <<<"$output")" 18
	assert_equal "$(bodies | tr '\n' ' ')" "19 20 21 22 23 "
}

@test "depth: drop-oldest never exits 6, with -w or without" {
	mq-conf max-depth=1 overflow=drop-oldest
	echo a | mq-send >/dev/null
	run timeout 20 mq-send -w <<<"b"
	assert_success
	run mq-send <<<"c"
	assert_success
	assert_equal "$(bodies)" c
	assert_equal "$(count dead)" 2
}

@test "depth: delayed messages count as waiting" {
	mq-conf max-depth=2
	seq 1 2 | mq-send -l -D 3600 >/dev/null
	run -1 mq-recv
	run -6 --separate-stderr mq-send <<<"now"
	assert_equal "$stderr" "mq-send: $MQ_DIR: full (max-depth 2)"
	assert_equal "$(count new)" 2
}

@test "depth: -D into a full spool exits 6; with room it is sent and counts" {
	mq-conf max-depth=2
	echo ready | mq-send >/dev/null
	run mq-send -D 3600 <<<"later"
	assert_success
	run -6 --separate-stderr mq-send -D 3600 <<<"later too"
	assert_output ""
	assert_equal "$(count new)" 2
}

@test "depth: drop-oldest takes the ready messages before the delayed ones, as a claim would" {
	mq-conf max-depth=2 overflow=drop-oldest
	echo later | mq-send -D 3600 >/dev/null
	echo ready | mq-send >/dev/null
	echo new | mq-send >/dev/null
	run mq-dlq show "$(mq-dlq ls | cut -f 1)"
	assert_output ready
	assert_equal "$(count new)" 2
}

@test "depth: max-depth=0 and the default are no limit" {
	mq-conf max-depth=2
	mq-conf max-depth=0
	run mq-send -l < <(seq 1 10)
	assert_success
	assert_equal "${#lines[@]}" 10
	mq-conf max-depth=10
	run -6 mq-send <<<"x"
	mq-conf max-depth=
	run mq-send <<<"x"
	assert_success
	assert_equal "$(count new)" 11
}

@test "depth: claims ring the doorbell when max-depth is set, and only then" {
	seq 1 4 | mq-send -l >/dev/null
	b0=$(bell)
	sleep 0.05
	r=$(mq-recv)
	assert_equal "$(bell)" "$b0"
	mq-ack "$r"
	mq-conf max-depth=10
	b0=$(bell)
	sleep 0.05
	r=$(mq-recv)
	[ "$(bell)" != "$b0" ]
	mq-ack "$r"
	# Worker mode too.
	b0=$(bell)
	sleep 0.05
	timeout 20 mq-recv -n 1 -- true
	[ "$(bell)" != "$b0" ]
}

@test "depth: concurrent senders with -w overshoot by at most one credit each, and lose nothing" {
	# max-depth 16: a count grants max(1, room / 8), at most 2 messages,
	# so 4 senders stay within 16 + 3 * 2 (mq-send(1)).
	mq-conf max-depth=16
	pids=()
	for i in 1 2 3 4; do
		seq "${i}01" "${i}40" | timeout 60 mq-send -l -w 30 >"$BATS_TEST_TMPDIR/ids.$i" &
		pids+=($!)
	done
	# The depth, sampled until the work is done (at most 90 s).
	touch "$BATS_TEST_TMPDIR/sampling"
	(
		max=0 end=$((SECONDS + 90))
		while [ -e "$BATS_TEST_TMPDIR/sampling" ] && [ "$SECONDS" -lt "$end" ]; do
			n=$(find "$MQ_DIR/new" -type f 2>/dev/null | wc -l)
			[ "$n" -le "$max" ] || max=$n
			echo "$max" >"$BATS_TEST_TMPDIR/max"
		done
	) &
	sampler=$!
	st=0
	timeout 60 mq-recv -n 160 -w 20 -- sh -c 'sleep 0.01; cat >>"$1"; echo >>"$1"' _ "$BATS_TEST_TMPDIR/done" || st=$?
	rm "$BATS_TEST_TMPDIR/sampling"
	wait "$sampler"
	for pid in "${pids[@]}"; do wait "$pid" || st=$?; done
	assert_equal "$st" 0
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/done" | tr -d ' ')" 160
	assert_equal "$(sort -n "$BATS_TEST_TMPDIR/done" | tr '\n' ' ')" \
	    "$(for i in 1 2 3 4; do seq "${i}01" "${i}40"; done | sort -n | tr '\n' ' ')"
	max=$(cat "$BATS_TEST_TMPDIR/max")
	[ "$max" -le 22 ] || fail "depth reached $max"
	[ "$max" -ge 1 ]
}

# The depth cache (tmp/.depth): mq-send lists only the leaves of new/ that
# changed since the last count, and must count exactly all the same.

# Proves that mq-send counts exactly what new/ holds (find's count, n):
# with max-depth n + 1 one more message fits and the next exits 6.  Each
# proof adds that one message (a far-delayed probe, a new leaf), leaves a
# depth cache, and lifts max-depth again.
exact() {
	local n
	n=$(count new)
	mq-conf max-depth=$((n + 1))
	run mq-send -D 100000 <<<probe
	assert_success
	run -6 mq-send -D 100000 <<<probe
	assert_equal "$(count new)" $((n + 1))
	if [ ! -f "$MQ_DIR/tmp/.depth" ]; then
		# Every leaf changed within the tick of the count that listed
		# it (racily clean: not cached, so no cache was written); a
		# count a second later caches the probe's leaf at least.
		sleep 1.1
		run -6 mq-send -D 100000 <<<probe
	fi
	[ -f "$MQ_DIR/tmp/.depth" ] || fail "no depth cache"
	[ ! -L "$MQ_DIR/tmp/.depth" ] || fail "the depth cache is a symlink"
	assert_equal "$(head -c 11 "$MQ_DIR/tmp/.depth")" "mq-depth 3 "
	mq-conf max-depth=1000000
}

# Runs a tool with its clock frozen at $FROZEN (faketime), which ASan, when
# built in, must allow to preload.  Files' times stay the file system's
# (NO_FAKE_STAT): those are what the cache compares.
frozen() {
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    NO_FAKE_STAT=1 faketime -f "$FROZEN" "$@"
}

# The leaf of new/ that holds the message whose body is $1.
leaf_of() {
	dirname "$(grep -rlx -- "$1" "$MQ_DIR/new" | head -n 1)"
}

@test "depth: the count stays exact through sends, claims, releases, burials, removed and new leaves" {
	command -v faketime >/dev/null || skip "faketime is not installed"
	# Two leaves made with the clock an hour and two back: the older one
	# expired (--ttl 0.1), so the first count buries its messages.
	FROZEN=$(date -d '-2 hours' '+%Y-%m-%d %H:%M:%S')
	seq 1 3 | sed 's/^/expired/' | frozen mq-send -l --ttl 0.1 >/dev/null
	FROZEN=$(date -d '-1 hour' '+%Y-%m-%d %H:%M:%S')
	seq 1 10 | sed 's/^/old/' | frozen mq-send -l >/dev/null
	seq 1 1500 | mq-send -l >/dev/null
	for d in 50 100 150; do
		seq 1 5 | mq-send -l -D "$d" >/dev/null
	done
	expired=$(leaf_of expired1)
	old=$(leaf_of old1)
	[ "$expired" != "$old" ]
	# Burials: the first count buries the expired leaf's three (not
	# waiting, not counted); the leaf stays, empty, for a claim to remove.
	mq-conf max-depth=1000000
	mq-send -D 100000 <<<probe >/dev/null
	assert_equal "$(mq-dlq ls | cut -f 4 | sort | uniq -c | tr -s ' ')" " 3 ttl"
	assert_equal "$(find "$expired" -type f | wc -l)" 0
	exact
	# The first claim removes the empty leaf (long settled), and claims
	# from the old one.
	r=$(mq-recv)
	assert_equal "$(cat "$r")" old1
	mq-ack "$r"
	assert_equal "$(mq-dlq ls | wc -l | tr -d ' ')" 3
	[ ! -d "$expired" ]
	exact
	# Claims from the oldest leaf.
	for i in 2 3; do
		r=$(mq-recv)
		assert_equal "$(cat "$r")" "old$i"
		mq-ack "$r"
	done
	exact
	# A release into an old leaf: with the clock of that leaf, the
	# message is due at its key and goes back into it.
	r=$(mq-recv)
	assert_equal "$(cat "$r")" old4
	before=$(find "$old" -type f | wc -l)
	frozen mq-ack -r "$r"
	assert_equal "$(find "$old" -type f | wc -l)" $((before + 1))
	exact
	# The old leaf emptied (its seven and one more): the claims remove it.
	mq-recv -n 8 | mq-ack
	[ ! -d "$old" ]
	exact
	# A new leaf, in the past, so before every cached one.
	FROZEN=$(date -d '-3 hours' '+%Y-%m-%d %H:%M:%S')
	seq 1 4 | frozen mq-send -l >/dev/null
	exact
	# And messages added to a cached leaf by several senders.
	for i in 1 2 3; do
		seq 1 4 | frozen mq-send -l >/dev/null
		exact
	done
}

# Makes and mounts a small ext4 with 128-byte inodes: timestamps of whole
# seconds, so that changes within one second leave a leaf's mtime alone.
coarse_fs() {
	[ "$(id -u)" -eq 0 ] || skip "mounting a loop device needs root"
	command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 is not installed (e2fsprogs)"
	command -v mountpoint >/dev/null || skip "mountpoint is not installed (util-linux)"
	[ -e /dev/loop-control ] || skip "this machine has no loop devices"
	MNT="$BATS_TEST_TMPDIR/mnt"
	truncate -s 16M "$BATS_TEST_TMPDIR/img"
	timeout 60 mkfs.ext4 -q -I 128 "$BATS_TEST_TMPDIR/img" 2>/dev/null
	mkdir "$MNT"
	timeout 20 mount -o loop "$BATS_TEST_TMPDIR/img" "$MNT" 2>/dev/null ||
	    skip "this machine does not allow mounting a loop device"
	touch "$MNT/probe"
	assert_equal "$(stat -c %y "$MNT/probe" | sed 's/.*\.\([0-9]*\) .*/\1/')" 000000000
}

teardown() {
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT" 2>/dev/null; then
		timeout 20 umount "$MNT" || timeout 20 umount -l "$MNT" || true
	fi
}

@test "depth: a leaf changed again within the tick of its listing is listed again (racily clean)" {
	command -v faketime >/dev/null || skip "faketime is not installed"
	coarse_fs
	# The tools' clock is frozen, so every send goes into one leaf; the
	# file system's is not, but ticks in whole seconds.  Three sends in
	# one second: the second lists the leaf (one message) in the second
	# that is its mtime, and adds to it without changing that mtime.  The
	# third must not trust that listing: the spool is full (2).
	FROZEN=$(date -d '-1 hour' '+%Y-%m-%d %H:%M:%S')
	for try in 1 2 3 4 5; do
		export MQ_DIR="$MNT/spool.$try"
		mq-conf max-depth=2
		# Start at the beginning of a second.
		sleep "$(date +%N | awk '{ printf "%.3f", 1.02 - $1 / 1e9 }')"
		s0=$(date +%s)
		frozen mq-send <<<1 >/dev/null
		frozen mq-send <<<2 >/dev/null
		st=0
		frozen mq-send <<<3 >/dev/null 2>&1 || st=$?
		s1=$(date +%s)
		[ "$s0" != "$s1" ] || break
	done
	[ "$s0" = "$s1" ] || skip "three sends did not fit in one second in $try tries"
	leaf=$(find "$MQ_DIR/new" -mindepth 3 -type d)
	assert_equal "$(echo "$leaf" | wc -l)" 1
	# The leaf's mtime is that second: the case is real.
	assert_equal "$(stat -c %Y "$leaf")" "$s0"
	assert_equal "$st" 6
	assert_equal "$(count new)" 2
	# Not older than the count that listed it: not cached.
	run grep "^0 $(basename "$leaf") " "$MQ_DIR/tmp/.depth"
	assert_failure
	# A second later it is, and the count is still exact.
	sleep 1.1
	run -6 frozen mq-send <<<3
	grep -q "^0 $(basename "$leaf") [0-9]* $s0 0 [0-9]* 0 2\$" "$MQ_DIR/tmp/.depth"
	run -6 frozen mq-send <<<3
	assert_equal "$(count new)" 2
}

@test "depth: a leaf whose mtime is not older than the count's start is listed again (racily clean, by hand)" {
	mq-conf max-depth=100
	seq 1 3 | mq-send -l >/dev/null
	leaf=$(find "$MQ_DIR/new" -mindepth 3 -type d)
	# An mtime in the future: the clock of the file system has not passed
	# it, as it had not passed a change in the tick of the listing.
	future=$(($(date +%s) + 3600))
	touch -m -d "@$future" "$leaf"
	exact
	run grep "^0 $(basename "$leaf") " "$MQ_DIR/tmp/.depth"
	assert_failure
	# A message more in it (moved from another leaf), its mtime the same.
	id=$(mq-send -D 200000 <<<moved)
	mv "$(find "$MQ_DIR/new" -type f -name "$id,*")" "$leaf/"
	touch -m -d "@$future" "$leaf"
	assert_equal "$(find "$leaf" -type f | wc -l)" 4
	exact
}

# The depth cache saved in $BATS_TEST_TMPDIR/good with every count set to
# 0 and its header as given ($1): trusted, it would undercount.
zeroed() {
	sed '1d; s/ [0-9]*$/ 0/' "$BATS_TEST_TMPDIR/good" >"$BATS_TEST_TMPDIR/body"
	{
		printf '%s\n' "$1"
		cat "$BATS_TEST_TMPDIR/body"
	} >"$BATS_TEST_TMPDIR/zeroed"
}

@test "depth: a corrupt, short, foreign, symlinked or directory tmp/.depth is ignored, not followed, and written anew" {
	seq 1 1500 | mq-send -l >/dev/null
	seq 1 3 | mq-send -l -D 50 >/dev/null
	exact
	c="$MQ_DIR/tmp/.depth"
	for bad in version count order short nul garbage empty fifo symlink; do
		exact
		nl=$(($(wc -l <"$c") - 1))
		cp "$c" "$BATS_TEST_TMPDIR/good"
		rm -f "$c"
		case $bad in
		# Right mtimes, counts 0: each would be trusted if read.
		# The versions before this one: entries without expiry (1),
		# keys without a priority (2).
		version) zeroed "mq-depth 1 $nl"; cp "$BATS_TEST_TMPDIR/zeroed" "$c"
			exact
			[ -f "$c" ] && [ ! -L "$c" ] || fail "$bad: not written anew"
			cp "$c" "$BATS_TEST_TMPDIR/good"
			zeroed "mq-depth 2 $nl"; sed '2,$s/^0 //' "$BATS_TEST_TMPDIR/zeroed" >"$c" ;;
		count) zeroed "mq-depth 3 $((nl + 1))"; cp "$BATS_TEST_TMPDIR/zeroed" "$c" ;;
		order) zeroed "mq-depth 3 $nl"; { head -n 1 "$BATS_TEST_TMPDIR/zeroed"; sed 1d "$BATS_TEST_TMPDIR/zeroed" | sort -r; } >"$c" ;;
		short) zeroed "mq-depth 3 $nl"; head -c -1 "$BATS_TEST_TMPDIR/zeroed" >"$c" ;;
		nul) zeroed "mq-depth 3 $nl"; { cat "$BATS_TEST_TMPDIR/zeroed"; printf '\0'; } >"$c" ;;
		garbage) head -c 4000 /dev/urandom >"$c" ;;
		empty) : >"$c" ;;
		fifo) mkfifo "$c" ;;
		# Not followed: the file it names is read by nobody, changed by
		# nobody.
		symlink)
			zeroed "mq-depth 3 $nl"
			cp "$BATS_TEST_TMPDIR/zeroed" "$BATS_TEST_TMPDIR/target"
			ln -s "$BATS_TEST_TMPDIR/target" "$c" ;;
		esac
		exact
		[ -f "$c" ] && [ ! -L "$c" ] || fail "$bad: not written anew"
		assert_equal "$(tmpfiles)" 0
	done
	cmp "$BATS_TEST_TMPDIR/zeroed" "$BATS_TEST_TMPDIR/target"
	# A directory cannot be replaced by a file: it is left alone, and
	# every count lists every leaf.
	rm -f "$c"
	mkdir "$c"
	exact_dir() {
		n=$(count new)
		mq-conf max-depth=$((n + 1))
		mq-send -D 100000 <<<probe >/dev/null
		run -6 mq-send -D 100000 <<<probe
		assert_equal "$(count new)" $((n + 1))
		[ -d "$c" ]
		assert_equal "$(tmpfiles)" 0
		mq-conf max-depth=1000000
	}
	exact_dir
	exact_dir
}

@test "depth: a cache written by a count that stopped at max-depth keeps the leaves it did not reach" {
	for d in 10 20 30 40; do
		seq 1 5 | mq-send -l -D "$d" >/dev/null
	done
	# Stops in the second leaf of four.
	mq-conf max-depth=7
	run -6 mq-send <<<x
	assert_equal "$(sed -n 1p "$MQ_DIR/tmp/.depth")" "mq-depth 3 2"
	mq-conf max-depth=100
	exact
	# The four leaves at least; the newest one only if it was changed in
	# an earlier tick than its listing (racily clean otherwise).
	head=$(sed -n 1p "$MQ_DIR/tmp/.depth")
	[[ $head == "mq-depth 3 4" || $head == "mq-depth 3 5" ]] || { echo "$head"; false; }
	# Stopping again, at the first leaf, keeps the others.
	mq-conf max-depth=3
	run -6 mq-send <<<x
	assert_equal "$(sed -n 1p "$MQ_DIR/tmp/.depth")" "$head"
	exact
}

# The leaves of new/ that a traced run listed (getdents64 on them).
leaves_listed() {
	grep -oE 'getdents64\([0-9]+<[^>]*/new/[0-9a-f]{5}/[0-9a-f]{8}/[0-9a-f]{11}>' "$1" |
	    sed 's/.*<//; s/>$//' | sort -u | wc -l | tr -d ' '
}

@test "depth: a count lists only the leaves that changed since the last one (strace)" {
	command -v strace >/dev/null || skip "strace is not installed"
	mq-conf max-depth=100000
	for d in $(seq 10 10 200); do
		mq-send -D "$d" <<<"$d" >/dev/null
	done
	assert_equal "$(find "$MQ_DIR/new" -mindepth 3 -type d | wc -l)" 20
	# A count without a cache lists the twenty; the cache has them.
	rm "$MQ_DIR/tmp/.depth"
	ASAN_OPTIONS=detect_leaks=0 strace -y -e trace=getdents64 -o "$BATS_TEST_TMPDIR/t1" mq-send -D 5000 <<<a >/dev/null
	assert_equal "$(leaves_listed "$BATS_TEST_TMPDIR/t1")" 20
	sleep 0.05
	# The next lists the one leaf made since: a's.
	ASAN_OPTIONS=detect_leaks=0 strace -y -e trace=getdents64 -o "$BATS_TEST_TMPDIR/t2" mq-send -D 6000 <<<b >/dev/null
	assert_equal "$(leaves_listed "$BATS_TEST_TMPDIR/t2")" 1
	grep -q "/$(basename "$(leaf_of a)")>" "$BATS_TEST_TMPDIR/t2"
	sleep 0.05
	# A claim changes the oldest leaf (and removes it, if it can).
	mq-recv -D >/dev/null 2>&1 || true
	ASAN_OPTIONS=detect_leaks=0 strace -y -e trace=getdents64 -o "$BATS_TEST_TMPDIR/t3" mq-send -D 7000 <<<c >/dev/null
	[ "$(leaves_listed "$BATS_TEST_TMPDIR/t3")" -le 2 ]
	# Without the cache, every leaf is listed again.
	rm "$MQ_DIR/tmp/.depth"
	ASAN_OPTIONS=detect_leaks=0 strace -y -e trace=getdents64 -o "$BATS_TEST_TMPDIR/t4" mq-send -D 8000 <<<d >/dev/null
	assert_equal "$(leaves_listed "$BATS_TEST_TMPDIR/t4")" "$(($(find "$MQ_DIR/new" -mindepth 3 -type d | wc -l) - 1))"
}

@test "depth: an unchanged spool writes no cache; without max-depth none is read or written" {
	command -v strace >/dev/null || skip "strace is not installed"
	seq 1 3 | mq-send -l >/dev/null
	seq 1 3 | mq-send -l -D 50 >/dev/null
	mq-conf max-depth=6
	run -6 mq-send <<<x
	sleep 0.05
	run -6 mq-send <<<x
	sleep 0.05
	ASAN_OPTIONS=detect_leaks=0 strace -e trace=openat,renameat,renameat2,unlinkat -o "$BATS_TEST_TMPDIR/full" mq-send <<<x 2>/dev/null || true
	grep -q '"\.depth", O_RDONLY' "$BATS_TEST_TMPDIR/full"
	run grep -E ',depth"|renameat' "$BATS_TEST_TMPDIR/full"
	assert_failure
	mq-conf max-depth=0
	ASAN_OPTIONS=detect_leaks=0 strace -e trace=openat,stat,newfstatat,renameat,unlinkat -o "$BATS_TEST_TMPDIR/free" mq-send <<<x >/dev/null
	run grep -E '[.,]depth"' "$BATS_TEST_TMPDIR/free"
	assert_failure
}

# As uid $1 with groups $2, runs the rest from a directory all may run.
as() {
	local uid=$1 groups=--clear-groups
	[ -z "$2" ] || groups=--groups=$2
	shift 2
	setpriv --reuid="$uid" --regid="$uid" "$groups" \
	    env PATH="$(public_bin):$PATH" MQ_DIR="${MQ_DIR:-}" sh -c 'umask 077; exec "$@"' sh "$@"
}

@test "depth: in a shared spool one member's cache is read and written anew by another" {
	command -v strace >/dev/null || skip "strace is not installed"
	[ "$(id -u)" -eq 0 ] || skip "switching users needs root"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	top=$(mktemp -d /tmp/mq-depth.XXXXXX)
	chmod 755 "$top"
	mkdir "$top/spools"
	chgrp 4242 "$top/spools"
	chmod 2770 "$top/spools"
	export MQ_DIR="$top/spools/team"
	as 4001 4242 mq-conf max-depth=100
	as 4001 4242 mq-send -l < <(seq 1 3) >/dev/null
	# (Later than the clock's tick in which the first leaf was made.)
	sleep 0.05
	as 4001 4242 mq-send -l -D 50 < <(seq 1 3) >/dev/null
	assert_equal "$(stat -c '%a %u %g' "$MQ_DIR/tmp/.depth")" "660 4001 4242"
	sleep 0.05
	# 4002 reads it (and lists only the leaf 4001's last send made).
	ASAN_OPTIONS=detect_leaks=0 strace -f -y -e trace=getdents64 -o "$BATS_TEST_TMPDIR/t" \
	    setpriv --reuid=4002 --regid=4002 --groups=4242 \
	    "$(public_bin)/mq-send" -l -D 100 < <(seq 1 2) >/dev/null
	assert_equal "$(leaves_listed "$BATS_TEST_TMPDIR/t")" 1
	assert_equal "$(stat -c '%a %u %g' "$MQ_DIR/tmp/.depth")" "660 4002 4242"
	# Now 8 of 10: two more fit, one for each, then neither.
	as 4002 4242 mq-conf max-depth=10
	as 4001 4242 mq-send <<<x >/dev/null
	as 4002 4242 mq-send <<<x >/dev/null
	run -6 as 4002 4242 mq-send <<<y
	run -6 as 4001 4242 mq-send <<<y
	assert_equal "$(count new)" 10
	rm -rf "$top"
}

@test "depth: mq-sweep removes a crashed count's tmp/ID,depth after 36 hours, never tmp/.depth" {
	mq-conf max-depth=10
	seq 1 3 | mq-send -l >/dev/null
	sleep 0.05
	mq-send <<<x >/dev/null
	[ -f "$MQ_DIR/tmp/.depth" ]
	old="$MQ_DIR/tmp/0000000000000001.1.000000000001,depth"
	young="$MQ_DIR/tmp/0000000000000002.1.000000000002,depth"
	cp "$MQ_DIR/tmp/.depth" "$old"
	cp "$MQ_DIR/tmp/.depth" "$young"
	touch -d '-37 hours' "$old" "$MQ_DIR/tmp/.depth"
	touch -d '-35 hours' "$young"
	mq-sweep
	assert_not_exist "$old"
	assert_file_exist "$young"
	assert_file_exist "$MQ_DIR/tmp/.depth"
}

# The reasons of the dead letters, with how many of each, on one line.
reasons() {
	mq-dlq ls | cut -f 4 | sort | uniq -c | awk '{ printf "%s %s;", $2, $1 }'
}

@test "depth: messages past the spool's ttl do not count; the count buries them as ttl" {
	# A ttl of 5 s, and the clock moved ahead past it (ahead) rather
	# than slept through: a loaded machine keeps its margin.
	mq-conf -f max-depth=3 ttl=5
	run -6 --separate-stderr mq-send -l < <(seq 1 5)
	assert_equal "${#lines[@]}" 3
	# Past the ttl they are dead; the send finds room, and makes it real.
	run --separate-stderr ahead 6 mq-send <<<new
	assert_success
	assert_equal "${#lines[@]}" 1
	id=${lines[0]}
	assert_equal "$(reasons)" "ttl 3;"
	assert_equal "$(count dead)" 3
	assert_equal "$(count new)" 1
	[ -n "$(find "$MQ_DIR/new" -type f -name "$id,*")" ]
	# A spool ttl does not go back: two more fit, then it is full again.
	# (on the same clock as new's send, its time.)
	ahead 6 mq-send <<<a >/dev/null
	ahead 6 mq-send <<<b >/dev/null
	run -6 ahead 6 mq-send <<<c
	assert_equal "$(ahead 6 bash -c "$(declare -f bodies); bodies" | tr -s '\n' ' ')" "new a b "
}

@test "depth: messages past their own --ttl do not count (no spool ttl)" {
	mq-conf max-depth=3
	run -6 --separate-stderr mq-send -l --ttl 1 < <(seq 1 5)
	assert_equal "${#lines[@]}" 3
	# One without a ttl: it stays, and counts.
	mq-conf max-depth=4
	mq-send <<<kept >/dev/null
	sleep 1.2
	run -6 --separate-stderr mq-send -l < <(seq 6 9)
	assert_equal "${#lines[@]}" 3
	assert_equal "$(reasons)" "ttl 3;"
	assert_equal "$(bodies | tr -s '\n' ' ')" "kept 6 7 8 "
}

@test "depth: -w on a full spool goes on once its messages expire, with no consumer (paused)" {
	mq-conf -f max-depth=2 ttl=1 paused=yes
	seq 1 2 | mq-send -l >/dev/null
	run -6 mq-send <<<x
	run timeout 20 mq-send -w <<<late
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_equal "$(reasons)" "ttl 2;"
	mq-conf paused=no
	assert_equal "$(bodies)" late
}

@test "depth: drop-oldest buries the expired ones as ttl, then the oldest waiting ones as maxlen" {
	mq-conf max-depth=4 overflow=drop-oldest
	seq 1 2 | mq-send -l --ttl 1 >/dev/null
	old=$(mq-send <<<old)
	mq-send <<<older >/dev/null
	sleep 1.2
	assert_equal "$(count dead)" 0
	# 2 waiting and 3 more: one must go, the oldest of those waiting.
	run --separate-stderr mq-send -v -l < <(seq 3 5)
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_equal "$(grep dead: <<<"$stderr")" "mq-send: $old: dead: maxlen"
	assert_equal "$(reasons)" "maxlen 1;ttl 2;"
	assert_equal "$(mq-dlq ls | grep maxlen | cut -f 1)" "$old"
	assert_equal "$(bodies | tr -s '\n' ' ')" "older 3 4 5 "
}

@test "depth: the count counts only messages, as mq-stat does: a foreign file in a leaf is not one" {
	mq-conf max-depth=2
	mq-send <<<a >/dev/null
	leaf=$(leaf_of a)
	echo foreign >"$leaf/notes.txt"
	run mq-send -D 100000 <<<b
	assert_success
	run -6 mq-send <<<c
	assert_equal "$(mq-stat --json | grep -o '"ready": *[0-9]*' | grep -o '[0-9]*$')" 1
	assert_file_exist "$leaf/notes.txt"
}

# The cache's entry for the leaf $1 (of priority 0), without the priority
# and key: "INO S NS SENT OWN N".
entry() {
	grep "^0 $(basename "$1") " "$MQ_DIR/tmp/.depth" | cut -d ' ' -f 3-
}

@test "depth: a cached leaf whose messages expire is listed again, though its mtime is unchanged" {
	mq-conf max-depth=3
	# A ttl of 5 s, passed by moving the clock ahead (ahead), not by a
	# sleep: a loaded machine keeps its margin.
	ids=$(seq 1 3 | mq-send -l --ttl 5)
	leaf=$(leaf_of 1)
	first=$(head -n 1 <<<"$ids")
	sent=$(($(printf '%d' "0x${first%%.*}") / 1000000))
	sleep 0.05
	# Counted full while they live: the leaf is cached with its three,
	# their earliest send and earliest own expiry.
	run -6 mq-send <<<x
	mtime=$(stat -c %y "$leaf")
	e=$(entry "$leaf")
	assert_equal "$(cut -d ' ' -f 4- <<<"$e")" "$sent $((sent + 5000)) 3"
	run -6 mq-send <<<x
	# Nothing changed the leaf, and the cache still names its mtime.
	assert_equal "$(stat -c %y "$leaf")" "$mtime"
	assert_equal "$(entry "$leaf")" "$e"
	run ahead 6 mq-send <<<y
	assert_success
	assert_equal "$(reasons)" "ttl 3;"
	assert_equal "$(ahead 6 bash -c "$(declare -f bodies); bodies")" y
}

@test "depth: a spool ttl set after the cache was written is honoured" {
	mq-conf max-depth=3
	seq 1 3 | mq-send -l >/dev/null
	leaf=$(leaf_of 1)
	sleep 0.05
	run -6 mq-send <<<x
	run -6 mq-send <<<x
	# No own ttl: no own expiry (0), only the earliest send.
	[[ $(entry "$leaf") =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+\ 0\ 3$ ]]
	sleep 1.1
	mq-conf -f ttl=1
	run mq-send <<<y
	assert_success
	assert_equal "$(reasons)" "ttl 3;"
	# And a ttl that has not passed yet leaves a cached leaf counted.
	mq-conf -f ttl=3600
	seq 1 2 | mq-send -l >/dev/null
	sleep 0.05
	run -6 mq-send <<<z
	run -6 mq-send <<<z
	assert_equal "$(count new)" 3
}

@test "depth: with ttls set, a count still lists only the leaves that changed, while none of theirs can expire (strace)" {
	command -v strace >/dev/null || skip "strace is not installed"
	mq-conf -f max-depth=100000 ttl=3600
	for d in $(seq 10 10 100); do
		mq-send -D "$d" --ttl 600 <<<"$d" >/dev/null
	done
	# (Later than the clock's tick in which the last leaf was made.)
	sleep 0.05
	rm "$MQ_DIR/tmp/.depth"
	mq-send -D 5000 <<<a >/dev/null
	sleep 0.05
	ASAN_OPTIONS=detect_leaks=0 strace -y -e trace=getdents64 -o "$BATS_TEST_TMPDIR/t" mq-send -D 6000 <<<b >/dev/null
	assert_equal "$(leaves_listed "$BATS_TEST_TMPDIR/t")" 1
	assert_equal "$(count dead)" 0
}
