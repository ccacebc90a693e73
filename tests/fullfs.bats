load helper

# A full file system must not stop consumers: claiming, acking, releasing,
# dead-lettering and purging are what frees the space.  tmpfs makes
# directories for nothing, so these run on a real ext4 image, loop-mounted,
# with no free block or with no free inode.

setup() {
	MNT="$BATS_TEST_TMPDIR/mnt"
	IMG="$BATS_TEST_TMPDIR/img"
}

teardown() {
	# mount -o loop detaches its loop device when unmounted.
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT" 2>/dev/null; then
		timeout 20 umount "$MNT" || timeout 20 umount -l "$MNT" || true
	fi
}

# The number of spare directories in tmp/.
spares() {
	find "$MQ_DIR/tmp" -mindepth 1 -maxdepth 1 -type d -name '.spare.*' |
	    wc -l | tr -d ' '
}

# Makes and mounts a 24 MiB ext4 with the mkfs.ext4 options given.
ext4() {
	[ "$(id -u)" -eq 0 ] || skip "mounting a loop device needs root"
	command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 is not installed (e2fsprogs)"
	command -v mountpoint >/dev/null || skip "mountpoint is not installed (util-linux)"
	[ -e /dev/loop-control ] || skip "this machine has no loop devices"
	truncate -s 24M "$IMG"
	timeout 60 mkfs.ext4 -q -m 0 "$@" "$IMG"
	mkdir "$MNT"
	timeout 20 mount -o loop "$IMG" "$MNT" 2>/dev/null ||
	    skip "this machine does not allow mounting a loop device"
	mkdir "$MNT/junk"
	export MQ_DIR="$MNT/spool"
}

# Takes every free block (a big file, then one-byte files), or with
# "inodes" every free inode (empty files); again after anything freed some.
# Files go outside the spool.
fill() {
	local i
	if [ "${FULL:-blocks}" = blocks ]; then
		timeout 60 dd if=/dev/zero of="$MNT/junk/big.$RANDOM$RANDOM" \
		    bs=64k 2>/dev/null || true
	fi
	for ((i = 0; i < 100000; i++)); do
		if [ "${FULL:-blocks}" = blocks ]; then
			printf x 2>/dev/null >"$MNT/junk/f.$RANDOM$RANDOM.$i" ||
			    break
		else
			: 2>/dev/null >"$MNT/junk/f.$RANDOM$RANDOM.$i" || break
		fi
	done
	sync -f "$MNT"
	# Nothing can make a directory now: the test is real.
	run -1 mkdir "$MNT/junk/probe"
	[[ $output == *"No space left on device"* ]]
}

# Drains a full file system completely through every consumer path.
drain_full() {
	local ids r1 r2 r3 id3 r i

	ids=$(seq 1 8 | mq-send -l)
	# Three leases ending in three different seconds: three new buckets.
	fill; r1=$(timeout 20 mq-recv -t 100)
	fill; r2=$(timeout 20 mq-recv -t 200)
	fill; r3=$(timeout 20 mq-recv -t 300)
	[ -n "$r1" ] && [ -n "$r2" ] && [ -n "$r3" ]
	assert_equal "$(find "$MQ_DIR/cur" -mindepth 1 -maxdepth 1 -type d | wc -l | tr -d " ")" 3
	assert_equal "$(spares)" 5
	assert_equal "$(cat "$r1")" 1
	# An extension moves the lease to a bucket of its own too.
	fill; r1=$(timeout 20 mq-ack -e 400 "$r1")
	assert_equal "$(cat "$r1")" 1
	fill; timeout 20 mq-ack "$r1"
	# A release with a delay goes to a new leaf of new/.
	fill; timeout 20 mq-ack -r 1 "$r2"
	fill; timeout 20 mq-ack -x broken "$r3"
	# No room for the reason: the body is buried without one.
	id3=$(sed -n 3p <<<"$ids")
	run --separate-stderr timeout 20 mq-dlq ls
	assert_success
	assert_output --regexp "^$id3	1	[-0-9T:]+Z	\(no reason recorded\)	1	3$"
	run --separate-stderr timeout 20 mq-dlq ls --json
	assert_success
	[[ $output == *'"reason":null,'* ]]
	run --separate-stderr timeout 20 mq-dlq show "$id3"
	assert_success
	assert_output 3
	fill; timeout 20 mq-dlq purge "$id3"
	assert_equal "$(timeout 20 mq-dlq ls)" ""
	assert_equal "$(count dead)" 0
	sleep 1.5
	# What is left (the released one and five never claimed) drains from a
	# full file system, each claim in a bucket of its own.
	fill
	for ((i = 0; i < 6; i++)); do
		r=$(timeout 20 mq-recv -t "$((10 + i))")
		cat "$r" >>"$BATS_TEST_TMPDIR/got"
		echo >>"$BATS_TEST_TMPDIR/got"
		timeout 20 mq-ack "$r"
	done
	run -1 timeout 20 mq-recv
	assert_equal "$(sort -n "$BATS_TEST_TMPDIR/got" | tr '\n' ' ')" "2 4 5 6 7 8 "
	assert_equal "$(count new)$(count cur)$(count dead)" 000
	# Once there is room again, sweeping makes the spares used up.
	rm -rf "$MNT/junk"
	timeout 20 mq-sweep
	assert_equal "$(spares)" 8
}

@test "fullfs: consumers drain an ext4 spool with no free block" {
	ext4
	FULL=blocks drain_full
}

@test "fullfs: consumers drain an ext4 spool with no free inode" {
	ext4 -N 64
	FULL=inodes drain_full
}

@test "fullfs: a sender takes no spare: on a full file system it fails (4) with nothing visible" {
	ext4
	mq-send -l </dev/null
	fill
	# An empty message needs an inode but no block; placing it would need
	# a new leaf of new/, which only a spare could give.
	for i in 1 2 3; do
		run -4 --separate-stderr timeout 20 mq-send -D "$((i * 5))" </dev/null
		[[ $stderr == *"No space left on device"* ]]
	done
	assert_equal "$(spares)" 8
	assert_equal "$(count new)$(count tmp)" 00
}

@test "fullfs: a spool is made with spare directories, which the tools leave alone" {
	echo x | mq-send >/dev/null
	assert_equal "$(spares)" 8
	for i in 0 1 2 3 4 5 6 7; do
		assert_dir_exist "$MQ_DIR/tmp/.spare.$i"
		assert_equal "$(stat -c %a "$MQ_DIR/tmp/.spare.$i")" \
		    "$(stat -c %a "$MQ_DIR/new")"
	done
	run mq-stat --json
	assert_success
	[[ $output == *'"ready":1'* ]]
	mq-sweep
	touch -d '3 days ago' "$MQ_DIR"/tmp/.spare.*
	mq-sweep
	assert_equal "$(spares)" 8
	assert_equal "$(drain)" x
	assert_equal "$(spares)" 8
}

@test "fullfs: spares used up are made again by mq-send and by mq-sweep" {
	echo x | mq-send >/dev/null
	rmdir "$MQ_DIR"/tmp/.spare.[0-4]
	echo y | mq-send >/dev/null
	assert_equal "$(spares)" 8
	rmdir "$MQ_DIR"/tmp/.spare.[3-7]
	mq-sweep
	assert_equal "$(spares)" 8
	# Something else under a spare's name is left as it is.
	rmdir "$MQ_DIR/tmp/.spare.7"
	echo junk >"$MQ_DIR/tmp/.spare.7"
	mq-sweep
	assert_file_exist "$MQ_DIR/tmp/.spare.7"
	assert_equal "$(cat "$MQ_DIR/tmp/.spare.7")" junk
}

@test "fullfs: a dead letter without a reason is listed, shown, redriven and purged" {
	printf 'a\nb\n' | mq-send -l >/dev/null
	for _ in 1 2; do mq-ack -x why "$(mq-recv)"; done
	rm "$MQ_DIR"/reason/*
	run --separate-stderr mq-dlq ls
	assert_success
	assert_equal "$(cut -f 4 <<<"$output")" "$(printf '%s\n' \
	    "(no reason recorded)" \
	    "(no reason recorded)")"
	[ -z "$stderr" ]
	run --separate-stderr mq-dlq ls --json
	assert_success
	assert_equal "${#lines[@]}" 2
	[[ ${lines[0]} == *'"priority":0,"died":"'*'","reason":null,"deaths":[{"time":"'*'","reason":null,"attempts":1}],"size":1,"body":"a"}' ]]
	if command -v python3 >/dev/null; then
		python3 -c 'import json,sys; [json.loads(l) for l in sys.stdin]' <<<"$output"
	fi
	ids=$(mq-dlq ls | cut -f 1)
	run --separate-stderr mq-dlq show "$(head -n 1 <<<"$ids")"
	assert_success
	assert_output a
	mq-dlq redrive "$(head -n 1 <<<"$ids")"
	assert_equal "$(drain)" a
	mq-dlq purge --all
	assert_equal "$(mq-dlq ls)" ""
	assert_equal "$(count dead)" 0
}
