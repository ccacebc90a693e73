load helper

# A valid-looking name of each state, for planting things under it.
ID=0000000000000001.1.000000000001

plant_specials() { # directory, name
	mkfifo "$1/${2}"
	ln -s /etc/passwd "$1/${2/0001,/0002,}"
	mkdir "$1/${2/0001,/0003,}"
	python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
	    "$1/${2/0001,/0004,}"
}

@test "hostile: FIFOs, symlinks, directories and sockets in new/ are never handed out or followed" {
	echo real | mq-send >/dev/null
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	plant_specials "$leaf" "0000000000000001.1.000000000001,0"
	run timeout 5 mq-recv -n 10
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_equal "$(cat "$output")" real
	run timeout 5 mq-recv -n 10
	assert_failure 1
	[ -p "$leaf/0000000000000001.1.000000000001,0" ]
	[ -L "$leaf/0000000000000001.1.000000000002,0" ]
}

@test "hostile: FIFOs, symlinks, directories and sockets in cur/ are never reclaimed or followed" {
	mq-send -l </dev/null >/dev/null
	mkdir -p "$MQ_DIR/cur/1000000000"
	plant_specials "$MQ_DIR/cur/1000000000" "$ID,999999999.500,1"
	run timeout 5 mq-recv -n 10
	assert_failure 1
	run timeout 5 mq-sweep
	assert_success
	[ -p "$MQ_DIR/cur/1000000000/$ID,999999999.500,1" ]
	assert_equal "$(count dead)" 0
}

@test "hostile: FIFOs, symlinks, directories and sockets in dead/ are never listed, shown or followed" {
	mq-send -l </dev/null >/dev/null
	plant_specials "$MQ_DIR/dead" "$ID,1000000000,1"
	run timeout 5 mq-dlq ls
	assert_success
	assert_output ""
	run timeout 5 mq-dlq show "$ID"
	assert_failure 1
	run timeout 5 mq-dlq purge --all
	assert_success
	[ -p "$MQ_DIR/dead/$ID,1000000000,1" ]
}

@test "hostile: names with overflowing, negative or junk fields, and 255-byte names, are skipped and kept" {
	echo real | mq-send >/dev/null
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	mkdir -p "$MQ_DIR/cur/1000000000"
	long=$(printf '%0255d' 0)
	for n in "$ID,99999999999999999999" "$ID,-1" "$ID,x" "$ID,1,2" "$long" \
	    "${ID}x,0" "$ID,"; do
		touch "$leaf/$n"
	done
	for n in "$ID,99999999999999999999.000,1" "$ID,-5.000,1" "$ID,1.000,99999999999" \
	    "$ID,abc,1" "$long"; do
		touch "$MQ_DIR/cur/1000000000/$n"
	done
	touch "$MQ_DIR/dead/$ID,-1,1" "$MQ_DIR/dead/$long"
	r=$(mq-recv -n 20)
	assert_equal "$(cat "$r")" real
	run -1 mq-recv
	run mq-dlq ls
	assert_output ""
	mq-sweep
	assert_file_exist "$leaf/$ID,-1" "$leaf/$long" "$MQ_DIR/cur/1000000000/$long" \
	    "$MQ_DIR/dead/$long"
}

@test "hostile: negative and overflowing numbers for every numeric option are usage errors" {
	echo x | mq-send >/dev/null
	r=$(mq-recv)
	for bad in -1 99999999999999999999 1x "" 0x10 1e3 +1; do
		run -2 mq-send -D "$bad" </dev/null
		for o in -n -t -m -w; do run -2 mq-recv $o "$bad"; done
		run -2 mq-ack -e "$bad" "$r"
		[ -z "$bad" ] || run -2 mq-ack "-r$bad" "$r"
		for o in -m -w; do run -2 mq-sweep $o "$bad"; done
	done
	run -2 mq-recv -n 0
	run -2 mq-recv -m 0
	assert_file_exist "$r"
	assert_equal "$(count new)" 0
}

@test "hostile: a relative path or a path with extra components is not a receipt" {
	echo x | mq-send >/dev/null
	r=$(mq-recv)
	run -2 mq-ack "${r#/}"
	run -2 mq-ack "$r/"
	run -2 mq-ack "$r/x"
	run -2 mq-ack "${r%/*}//${r##*/}"
	assert_file_exist "$r"
}

@test "hostile: a spool the user may not write is an error (4) that names it" {
	echo x | mq-send >/dev/null
	chmod 755 "$BATS_TEST_TMPDIR"
	chmod -R a+rX "$MQ_DIR"
	[ "$(id -u)" -eq 0 ] || chmod -R a-w "$MQ_DIR"
	run -4 --separate-stderr as_nobody mq-send </dev/null
	[[ $stderr == "mq-send: "*"Permission denied"* ]]
	run -4 --separate-stderr as_nobody mq-recv
	[[ $stderr == "mq-recv: "*"Permission denied"* ]]
	[ "$(id -u)" -eq 0 ] || chmod -R u+w "$MQ_DIR"
	assert_equal "$(count new)" 1
}

@test "hostile: past a file size limit mq-send fails (4) and leaves nothing behind" {
	mq-send -l </dev/null >/dev/null
	head -c 2000000 /dev/zero >"$BATS_TEST_TMPDIR/big"
	run -4 --separate-stderr bash -c "ulimit -f 512; mq-send '$BATS_TEST_TMPDIR/big'"
	[[ $stderr == *"File too large"* ]]
	assert_equal "$(count new)$(count tmp)" 00
}

@test "hostile: a full file system makes mq-send fail (4) with nothing visible" {
	[ "$(id -u)" -eq 0 ] || skip "mounting a small tmpfs needs root"
	mkdir "$BATS_TEST_TMPDIR/small"
	mount -t tmpfs -o size=256k tmpfs "$BATS_TEST_TMPDIR/small" 2>/dev/null ||
	    skip "this machine does not allow mounting a tmpfs"
	export MQ_DIR="$BATS_TEST_TMPDIR/small/spool"
	seq 1 10 | mq-send -l >/dev/null
	head -c 1000000 /dev/urandom >"$BATS_TEST_TMPDIR/big"
	run -4 --separate-stderr mq-send "$BATS_TEST_TMPDIR/big"
	[[ $stderr == *"No space left"* ]]
	assert_equal "$(count new)$(count tmp)" 100
	assert_equal "$(drain | grep -c .)" 10
	umount "$BATS_TEST_TMPDIR/small"
}

@test "hostile: a receipt that could not be printed (stdout closed) is recovered by lease expiry" {
	echo precious | mq-send >/dev/null
	run -4 --separate-stderr bash -c 'mq-recv -t 0.3 >&-'
	[[ $stderr == *"stdout"* ]]
	sleep 0.5
	r=$(mq-recv)
	assert_equal "$(cat "$r")" precious
}

@test "hostile: a receipt lost in a broken pipe is recovered by lease expiry" {
	echo precious | mq-send >/dev/null
	bash -c 'mq-recv -t 0.3 | head -c0' || true
	sleep 0.5
	r=$(mq-recv)
	assert_equal "$(cat "$r")" precious
}

@test "hostile: a clock jumping forward ends leases early: redelivered, nothing lost" {
	command -v faketime >/dev/null || skip "faketime is not installed"
	echo jump | mq-send >/dev/null
	r1=$(mq-recv -t 60)
	# faketime preloads a library; ASan, when built in, must allow that.
	r2=$(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    faketime -f '+120s' mq-recv -t 60)
	[[ $r2 == *,2 ]]
	assert_equal "$(cat "$r2")" jump
	run -3 mq-ack "$r1"
	mq-ack "$r2"
	assert_equal "$(count new)$(count cur)$(count dead)" 000
}
