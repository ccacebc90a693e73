# mq-test: long
load helper
load once-round

# A power cut loses nothing a tool said it did.  Each round makes a fresh
# ext4 or xfs image on a loop device, runs a seeded random workload of
# every tool that changes a spool (tests/crash/workload), which cuts the
# power at a point its seed picks: between two commands, 0 to 20 ms into
# one, or right after one's K-th rename, fsync, syncfs, link or unlink
# (stopped there by strace); the cut is `xfs_io -x -c shutdown` without
# -f, which drops what the file system had not made durable, as a power
# loss does.  Then the file system is mounted again and tests/crash/check
# compares the spools with the workload's ledger of promises (kept outside
# the image), and drains them with the clock far ahead.  ext4 is mounted
# with commit=600 and noauto_da_alloc, so that only what mq syncs is
# durable, not what a journal commit or a rename's flush would save.
#
# CRASH_ROUNDS rounds per file system (default 12: some 50 s each on a
# two-core machine); CRASH_SEED replays: round N uses seed CRASH_SEED+N,
# so a failing round's seed, given back, runs it first.  Every round's
# seed is printed, with where its cut fell.

setup() {
	MNT="$BATS_TEST_TMPDIR/mnt"
	IMG="$BATS_TEST_TMPDIR/img"
	CRASH="$BATS_TEST_DIRNAME/crash"
	DEV=
	ROUNDS=${CRASH_ROUNDS:-12}
	SEED=${CRASH_SEED:-$(((RANDOM << 15 | RANDOM) % 1000000000))}
}

teardown() {
	detach
}

# Whether $MNT is mounted, as the kernel's table says: a stat of a file
# system shut down fails (EIO), and mountpoint(1) would say no.
mounted() {
	awk -v m="$MNT" '$2 == m { found = 1 } END { exit !found }' /proc/self/mounts
}

# Unmounts $MNT and detaches its loop device, whatever state they are in.
detach() {
	if mounted; then
		timeout 20 umount "$MNT" || timeout 20 umount -l "$MNT" || true
	fi
	if [ -n "$DEV" ]; then
		timeout 20 losetup -d "$DEV" || true
		DEV=
	fi
}

# Skips unless this machine can make, mount and cut file system $1.
needs() {
	[ "$(id -u)" -eq 0 ] || skip "mounting a loop device needs root"
	[ -e /dev/loop-control ] || skip "this machine has no loop devices"
	command -v losetup >/dev/null || skip "losetup is not installed (mount)"
	command -v mountpoint >/dev/null || skip "mountpoint is not installed (util-linux)"
	command -v "mkfs.$1" >/dev/null || skip "mkfs.$1 is not installed"
	command -v xfs_io >/dev/null || skip "xfs_io is not installed (xfsprogs): it makes the cut"
	command -v strace >/dev/null || skip "strace is not installed: it stops a command at a system call"
	command -v faketime >/dev/null || skip "faketime is not installed: the drain moves the clock"
	command -v python3 >/dev/null || skip "python3 is not installed"
	fresh "$1" || skip "this machine does not allow mounting a loop device"
	detach
}

# Makes a fresh file system $1 in $IMG, attaches it and mounts it on $MNT.
# xfs wants 300 MB at least (mkfs.xfs 5.19 and later); the image is sparse.
fresh() {
	rm -f "$IMG"
	case $1 in
	ext4)
		truncate -s 64M "$IMG"
		timeout 60 mkfs.ext4 -q -F "$IMG" || return 1
		OPTS=commit=600,noauto_da_alloc
		;;
	xfs)
		truncate -s 320M "$IMG"
		timeout 60 mkfs.xfs -q -f "$IMG" || return 1
		OPTS=defaults
		;;
	esac
	DEV=$(timeout 20 losetup -f --show "$IMG") || return 1
	mkdir -p "$MNT"
	timeout 20 mount -o "$OPTS" "$DEV" "$MNT" 2>/dev/null
}

# round FS SEED [WRAPPER...]: one round; its files are in $dir, the
# checker's status in $cst (0 kept, 1 violations, anything else a failure
# of the harness) and the workload's in $wst.
round() {
	local fs=$1 seed=$2 f pid
	shift 2
	dir="$BATS_TEST_TMPDIR/$fs.$seed"
	mkdir -p "$dir"
	fresh "$fs" || fail "round $seed: cannot make and mount $fs"
	wst=0
	timeout -k 5 120 "$@" "$CRASH/workload" "$MNT" "$dir/ledger" \
	    --seed "$seed" --steps 40 --work "$dir" \
	    --cut "xfs_io -x -c shutdown $(printf %q "$MNT")" \
	    >"$dir/workload.out" 2>&1 || wst=$?
	# The workload killed what it cut; the mount is left to nobody once
	# the killed have exited (a worker's job, in a process group of its
	# own, may take a moment more to end on the shut-down file system).
	for _ in $(seq 40); do
		timeout 20 umount "$MNT" 2>/dev/null && break
		sleep 0.25
	done
	if mounted; then
		# Who holds it (fuser is in no package the tests need).
		for f in /proc/[0-9]*/cwd /proc/[0-9]*/fd/*; do
			case $(readlink "$f" 2>/dev/null) in
			"$MNT"*)
				pid=${f#/proc/}
				echo "# $MNT held by $f: $(tr '\0' ' ' <"/proc/${pid%%/*}/cmdline" 2>/dev/null)" >&2 ;;
			esac
		done
		fail "round $seed: $MNT is still busy 10 s after the cut"
	fi
	timeout 20 mount -o "$OPTS" "$DEV" "$MNT" ||
	    fail "round $seed: $fs does not mount again after the cut"
	cst=0
	timeout -k 5 300 "$CRASH/check" "$MNT" "$dir/ledger" --drain \
	    >"$dir/check.out" 2>&1 || cst=$?
	detach
}

# rounds FS: $ROUNDS rounds of FS from seed $SEED; fails naming each round
# that lost, tore or broke anything, with its seed, cut and violations.
rounds() {
	local fs=$1 i seed bad=0 failed=""
	for ((i = 0; i < ROUNDS; i++)); do
		seed=$((SEED + i))
		round "$fs" "$seed"
		echo "# $(head -n 1 "$dir/workload.out")" >&3
		echo "# $(tail -n 1 "$dir/check.out")" >&3
		if [ "$cst" -ne 0 ] || [ "$wst" -ne 0 ]; then
			bad=$((bad + 1))
			failed="$failed
--- $fs, seed $seed (replay: CRASH_SEED=$seed CRASH_ROUNDS=1), workload status $wst, checker status $cst
$(cat "$dir/workload.out" "$dir/check.out")"
		fi
	done
	echo "# $fs: $ROUNDS rounds from seed $SEED, $bad with a violation" >&3
	[ "$bad" -eq 0 ] || fail "$fs: $bad of $ROUNDS rounds broke a promise:$failed"
}

@test "powercut: ext4 cut anywhere in a random workload keeps every promise" {
	needs ext4
	rounds ext4
}

@test "powercut: xfs cut anywhere in a random workload keeps every promise" {
	needs xfs
	rounds xfs
}

# The cut that found a dead letter's reason empty: a burial, then any
# later command that syncs (a send), then the cut.  On both file systems
# the dead letter keeps its reason, and so does one buried as ttl.
@test "powercut: a dead letter buried before a later send keeps its reason after a cut, on ext4 and xfs" {
	needs ext4
	local fs sp r why
	for fs in ext4 xfs; do
		needs "$fs"
		fresh "$fs" || fail "cannot make and mount $fs"
		sp="$MNT/sp"
		echo first | mq-send -d "$sp" >/dev/null
		echo old | mq-send -d "$sp" --ttl 1 >/dev/null
		r=$(mq-recv -d "$sp" -t 60)
		mq-ack -d "$sp" -x "the reason given" "$r"
		# Buried as ttl by the sweep, a run of one.
		ahead 5 mq-sweep -d "$sp"
		echo second | mq-send -d "$sp" >/dev/null
		timeout 20 xfs_io -x -c shutdown "$MNT"
		timeout 20 umount "$MNT"
		timeout 20 mount -o "$OPTS" "$DEV" "$MNT"
		why=$(mq-dlq -d "$sp" ls --json | python3 -c '
import json, sys
print(" / ".join(sorted(json.loads(l)["reason"] or "(none)" for l in sys.stdin)))')
		assert_equal "$why" "the reason given / ttl"
		detach
	done
}

# The harness can see a loss: with eatmydata, whose preload makes fsync
# and its kin do nothing, the same rounds must lose or tear a message the
# workload was told was sent.  A round cut before anything was sent loses
# nothing, so up to 8 rounds of ext4 are run until one does.
@test "powercut: under eatmydata (fsync a no-op) the checker sees a loss" {
	needs ext4
	command -v eatmydata >/dev/null || skip "eatmydata is not installed (Debian package eatmydata)"
	local i seed summary
	for ((i = 0; i < 8; i++)); do
		seed=$((SEED + i))
		round ext4 "$seed" eatmydata
		summary=$(tail -n 1 "$dir/check.out")
		echo "# eatmydata ext4 seed $seed: $summary" >&3
		[ "$wst" -eq 0 ] || fail "seed $seed: the workload failed: $(cat "$dir/workload.out")"
		[[ $summary == "check: lost "* ]] || fail "seed $seed: the checker failed: $(cat "$dir/check.out")"
		if [[ ! $summary =~ lost\ 0,\ torn\ 0, ]]; then
			assert_equal "$cst" 1
			return 0
		fi
	done
	fail "8 rounds under eatmydata lost nothing: the harness does not see a loss"
}

# cut: the power cut of $MNT (as a round's), and the file system mounted
# again.
cut() {
	timeout 20 xfs_io -x -c shutdown "$MNT"
	timeout 20 umount "$MNT"
	timeout 20 mount -o "$OPTS" "$DEV" "$MNT"
}

# The counters of spool $1 as JSON, the deaths as dead.CAUSE.
counts() {
	mq-stat --json -d "$1" | python3 -c '
import json, sys
c = json.load(sys.stdin)["counters"]
print(json.dumps(dict(c, **{"dead." + k: v for k, v in c.pop("dead").items()})))'
}

# The counters (count.c) after a cut.  A number mq-stat showed was synced
# first: the acks, releases and deaths after the sends (which sync the
# counters themselves), not synced by their own tools, stay counted.
@test "powercut: counters mq-stat showed are not taken back by a cut, on ext4 and xfs" {
	needs ext4
	local fs sp before after
	for fs in ext4 xfs; do
		needs "$fs"
		fresh "$fs" || fail "cannot make and mount $fs"
		sp="$MNT/sp"
		seq 1 30 | mq-send -l -d "$sp" >/dev/null
		mq-recv -d "$sp" -n 10 | mq-ack -d "$sp"
		mq-ack -d "$sp" -x bad "$(mq-recv -d "$sp")"
		mq-ack -d "$sp" -r "$(mq-recv -d "$sp")"
		mq-dlq -d "$sp" purge --all 2>/dev/null
		before=$(counts "$sp")
		mq-recv -d "$sp" -n 5 | mq-ack -d "$sp"
		cut
		after=$(counts "$sp")
		python3 - "$before" "$after" "$fs" <<'PY'
import json, sys
before, after, fs = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
assert (before["sent"], before["acked"], before["claimed"], before["released"], before["removed"],
    before["dead.rejected"]) == (30, 10, 12, 1, 1, 1), (fs, before)
back = [k for k in before if after[k] < before[k]]
assert not back, "%s: taken back by the cut: %s: %s, then %s" % (fs, back, before, after)
PY
		detach
	done
}

# A send mq-send said it made (it printed its ID) is durable, and so is
# its count: after a cut right after the last send, each is counted.
@test "powercut: every send mq-send made is still counted after a cut, on ext4 and xfs" {
	needs ext4
	local fs sp sent n
	for fs in ext4 xfs; do
		needs "$fs"
		fresh "$fs" || fail "cannot make and mount $fs"
		sp="$MNT/sp"
		: >"$BATS_TEST_TMPDIR/ids"
		for n in 30 1 20; do
			seq 1 "$n" | mq-send -l -d "$sp" >>"$BATS_TEST_TMPDIR/ids"
			mq-recv -d "$sp" -n 3 | mq-ack -d "$sp"
		done
		echo last | mq-send -d "$sp" >>"$BATS_TEST_TMPDIR/ids"
		cut
		sent=$(counts "$sp" | python3 -c 'import json, sys; print(json.load(sys.stdin)["sent"])')
		[ "$sent" -ge "$(wc -l <"$BATS_TEST_TMPDIR/ids")" ] ||
		    fail "$fs: $(wc -l <"$BATS_TEST_TMPDIR/ids") sends made, $sent counted after the cut"
		detach
	done
}

# The file system of $MNT, cut, mounted again (as after a reboot).
remount() {
	local _
	for _ in $(seq 40); do
		timeout 2 umount "$MNT" 2>/dev/null && break
		sleep 0.25
	done
	! mounted || fail "$MNT is still busy 10 s or more after the cut"
	timeout 20 mount -o "$OPTS" "$DEV" "$MNT" || fail "it does not mount again after the cut"
}

@test "powercut: --once, a cut at each point of a job's end, on ext4 and xfs: a counting job runs again only for a cut in its window; once-result.sh's results always equal the messages" {
	local fs kind point
	needs ext4
	needs xfs
	for fs in ext4 xfs; do
		for kind in plain result; do
			for point in before after record synced; do
				fresh "$fs" || fail "cannot make and mount $fs"
				export MQ_DIR=$MNT/q
				export RESULTS=$MNT/results
				once_round "$point" "$kind" "xfs_io -x -c shutdown $MNT" remount
				detach
				echo "# $fs, $kind job, cut $point: $runs runs of 3 messages" >&3
				case $kind.$point in
				plain.after) [ "$runs" -eq 4 ] ;;
				# The rename into once/ was not synced: the cut may
				# take it back, and the job runs again.
				plain.record) [ "$runs" -eq 3 ] || [ "$runs" -eq 4 ] ;;
				*) [ "$runs" -eq 3 ] ;;
				esac || fail "$fs, $kind job, cut $point: $runs runs"
			done
		done
	done
}
