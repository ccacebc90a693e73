load helper

@test "mq-send: standard input is one message and its ID is printed" {
	run --separate-stderr mq-send <<<"hello"
	assert_success
	[[ $output =~ ^[0-9a-f]{16}\.[0-9]+\.[0-9a-f]{12}$ ]]
	[ -z "$stderr" ]
	r=$(mq-recv)
	assert_equal "$(cat "$r")" "hello"
}

@test "mq-send: IDs use only [A-Za-z0-9._-] and sort in enqueue order" {
	seq 1 300 | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	run grep -cvE '^[A-Za-z0-9._-]+$' "$BATS_TEST_TMPDIR/ids"
	assert_output 0
	LC_ALL=C sort -c "$BATS_TEST_TMPDIR/ids"
	assert_equal "$(sort -u "$BATS_TEST_TMPDIR/ids" | wc -l)" 300
}

@test "mq-send: IDs of separate calls sort in call order" {
	a=$(echo a | mq-send); b=$(echo b | mq-send); c=$(echo c | mq-send)
	assert_equal "$(printf '%s\n' "$c" "$a" "$b" | LC_ALL=C sort | tr '\n' ' ')" "$a $b $c "
}

@test "mq-send: each FILE becomes one message, '-' is standard input" {
	printf 'one\n' >"$BATS_TEST_TMPDIR/f1"
	printf 'three' >"$BATS_TEST_TMPDIR/f3"
	run mq-send "$BATS_TEST_TMPDIR/f1" - "$BATS_TEST_TMPDIR/f3" <<<"two"
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_equal "$(drain)" "$(printf 'one\n\ntwo\n\nthree')"
}

@test "mq-send -l: every line is a message, empty lines and an unterminated last line too" {
	run mq-send -l < <(printf 'a\n\nc')
	assert_success
	assert_equal "${#lines[@]}" 3
	r=$(mq-recv -n 3)
	mapfile -t rs <<<"$r"
	assert_equal "$(cat "${rs[0]}")" a
	[ ! -s "${rs[1]}" ]
	assert_equal "$(cat "${rs[2]}")" c
}

@test "mq-send -l: no input sends nothing" {
	run mq-send -l </dev/null
	assert_success
	assert_output ""
	run -1 mq-recv
}

@test "mq-send -0: every NUL-terminated record is a message" {
	run mq-send -0 < <(printf 'x y\0line\nbreak\0')
	assert_success
	assert_equal "${#lines[@]}" 2
	r=$(mq-recv -n 2 -0 | tr '\0' '\n' | tail -n 1)
	assert_equal "$(cat "$r")" "$(printf 'line\nbreak')"
}

@test "mq-send: -l with -0 is a usage error and creates nothing" {
	run -2 --separate-stderr mq-send -l -0 </dev/null
	[[ $stderr == mq-send:* ]]
	assert_not_exist "$MQ_DIR"
}

@test "mq-send: binary bytes arrive exactly" {
	head -c 65536 /dev/urandom >"$BATS_TEST_TMPDIR/bin"
	printf '\0\377\n\0' >>"$BATS_TEST_TMPDIR/bin"
	mq-send "$BATS_TEST_TMPDIR/bin" >/dev/null
	r=$(mq-recv)
	cmp "$r" "$BATS_TEST_TMPDIR/bin"
}

@test "mq-send: an empty input is one empty message" {
	mq-send </dev/null >/dev/null
	r=$(mq-recv)
	assert_file_exist "$r"
	[ ! -s "$r" ]
}

@test "mq-send: a multi-megabyte message arrives whole" {
	head -c 12000000 /dev/urandom >"$BATS_TEST_TMPDIR/big"
	mq-send <"$BATS_TEST_TMPDIR/big" >/dev/null
	r=$(mq-recv)
	cmp "$r" "$BATS_TEST_TMPDIR/big"
}

@test "mq-send: a missing spool is created with its parents, private" {
	export MQ_DIR="$BATS_TEST_TMPDIR/a/b/spool"
	echo x | mq-send >/dev/null
	assert_dir_exist "$MQ_DIR/new"
	assert_equal "$(stat -c %a "$MQ_DIR")" 700
}

@test "mq-send: the spool comes from -d, then MQ_DIR, then XDG_STATE_HOME" {
	echo x | mq-send -d "$BATS_TEST_TMPDIR/d" >/dev/null
	assert_dir_exist "$BATS_TEST_TMPDIR/d/new"
	assert_not_exist "$MQ_DIR"
	unset MQ_DIR
	XDG_STATE_HOME="$BATS_TEST_TMPDIR/xdg" mq-send </dev/null >/dev/null
	assert_dir_exist "$BATS_TEST_TMPDIR/xdg/mq/new"
	HOME="$BATS_TEST_TMPDIR/home" mq-send </dev/null >/dev/null
	assert_dir_exist "$BATS_TEST_TMPDIR/home/.local/state/mq/new"
}

@test "mq-send -D: a delayed message is invisible until due" {
	mq-send -D 600 <<<"later" >/dev/null
	run -1 mq-recv
	run -1 ahead 300 mq-recv
	r=$(ahead 601 mq-recv)
	assert_equal "$(cat "$r")" later
}

@test "mq-send -D: a ready message is claimed before a delayed one sent earlier" {
	mq-send -D 30 <<<"later" >/dev/null
	mq-send <<<"now" >/dev/null
	r=$(mq-recv)
	assert_equal "$(cat "$r")" now
	run -1 mq-recv
}

@test "mq-send: a file that cannot be read leaves nothing visible and exits 4" {
	run -4 --separate-stderr mq-send "$BATS_TEST_TMPDIR/missing"
	[[ $stderr == *"missing"* ]]
	assert_equal "$(count new)" 0
	run -1 mq-recv
}

@test "mq-send: a read error in the middle of a message leaves no partial message" {
	mkdir "$BATS_TEST_TMPDIR/adir"
	run -4 --separate-stderr mq-send "$BATS_TEST_TMPDIR/adir"
	assert_equal "$(count new)" 0
	assert_equal "$(count tmp)" 0
}

@test "mq-send: a read error names the input, not the spool (whole and -l)" {
	mkdir "$BATS_TEST_TMPDIR/adir"
	run -4 --separate-stderr mq-send "$BATS_TEST_TMPDIR/adir"
	assert_equal "$stderr" "mq-send: $BATS_TEST_TMPDIR/adir: Is a directory"
	run -4 --separate-stderr mq-send -l "$BATS_TEST_TMPDIR/adir"
	assert_equal "$stderr" "mq-send: $BATS_TEST_TMPDIR/adir: Is a directory"
	assert_equal "$(count tmp)" 0
	assert_equal "$(count new)" 0
}

@test "mq-send -S: skips syncing and still delivers" {
	seq 1 50 | mq-send -l -S >/dev/null
	assert_equal "$(count new)" 50
}

@test "mq-send: bad -D values are usage errors" {
	for v in -1 x 1.2345 99999999999 ""; do
		run -2 mq-send -D "$v" </dev/null
	done
	assert_not_exist "$MQ_DIR"
}

@test "mq-send: a spool that is a regular file is an error (4)" {
	touch "$BATS_TEST_TMPDIR/file"
	run -4 --separate-stderr mq-send -d "$BATS_TEST_TMPDIR/file" </dev/null
	[[ $stderr == mq-send:* ]]
}

@test "mq-send: an empty -d is a usage error" {
	run -2 mq-send -d "" </dev/null
}

@test "mq-send: durable order is write, fsync(file), rename, fsync(dirs), then the ID" {
	command -v strace >/dev/null || skip "strace is not installed"
	mq-send </dev/null >/dev/null
	ASAN_OPTIONS=detect_leaks=0 strace -o "$BATS_TEST_TMPDIR/trace" \
	    -e trace=write,fsync,fdatasync,rename,renameat,renameat2 \
	    mq-send <<<"durable" >/dev/null
	# One letter per step, in the order they happened; the last sync is
	# the counters' (count.c), after the directories'.
	steps=$(sed -n \
	    -e 's/^write(1, .*/I/p' \
	    -e 's/^write([0-9]*, "durable.*/W/p' \
	    -e 's/^f\(data\)\{0,1\}sync.*/F/p' \
	    -e 's/^rename.*/R/p' "$BATS_TEST_TMPDIR/trace" | tr -d '\n')
	assert_equal "$steps" "WFRFFFFFI"
}

# The same without strace: fault.so makes the file's sync fail, and logs
# the syncs and renames of a send that works.
@test "mq-send: a message whose file cannot be synced is an error (4) and queues nothing" {
	mq-send -l </dev/null
	run -4 --separate-stderr faulty 'fsync:errno=EIO:at=/spool/tmp/' mq-send <<<"durable"
	assert_output ""
	[[ $stderr == "mq-send: $MQ_DIR/tmp/"*": Input/output error" ]] || fail "$stderr"
	assert_equal "$(count new)$(count tmp)" 00
	run -1 mq-recv
}

@test "mq-send: the file is synced, renamed, then every level of new/ that holds it synced, before it exits" {
	mq-send -l </dev/null
	log=$BATS_TEST_TMPDIR/log
	top=$(cd "$MQ_DIR" && pwd -P)
	for p in 0 3; do
		: >"$log"
		id=$(faulty "fsync:log=$log renameat:log=$log" mq-send -p "$p" <<<"durable")
		leaf=$(find "$top/new" -type f -name "$id,*" -printf '%h')
		[ -n "$leaf" ] || fail "$id is not in new/"
		levels="$leaf ${leaf%/*} ${leaf%/*/*}"
		[ "$p" -eq 0 ] || levels="$levels $top/new/p$p"
		# The file, its rename out of tmp/, then the levels up to new/,
		# each once.
		run grep -v -e '^fsync .*/tmp/\.depth' "$log"
		assert_line --index 0 "fsync $top/tmp/$id"
		assert_line --index 1 "renameat $top/tmp/$id"
		for d in $levels "$top/new"; do
			assert_equal "$d: $(grep -c -x "fsync $d" "$log")" "$d: 1"
			[ "$(grep -n -x "fsync $d" "$log" | cut -d: -f1)" -gt \
			    "$(grep -n -x "renameat $top/tmp/$id" "$log" | cut -d: -f1)" ] ||
			    fail "$d synced before the rename"
		done
	done
}

@test "mq-send: a batch is written, synced once (syncfs), renamed, dirs synced, then its IDs" {
	command -v strace >/dev/null || skip "strace is not installed"
	mq-send -l </dev/null >/dev/null
	ASAN_OPTIONS=detect_leaks=0 strace -o "$BATS_TEST_TMPDIR/trace" \
	    -e trace=write,fsync,syncfs,rename,renameat,renameat2 \
	    mq-send -l < <(printf 'a\nb\nc\n') >/dev/null
	steps=$(sed -n \
	    -e 's/^write(1, .*/I/p' \
	    -e 's/^write([0-9]*, "[abc]".*/W/p' \
	    -e 's/^syncfs.*/S/p' \
	    -e 's/^fsync.*/F/p' \
	    -e 's/^rename.*/R/p' "$BATS_TEST_TMPDIR/trace" | tr -d '\n')
	assert_equal "$steps" "WWWSRRRFFFFI"
}

@test "mq-send -S: no fsync at all" {
	command -v strace >/dev/null || skip "strace is not installed"
	mq-send </dev/null >/dev/null
	ASAN_OPTIONS=detect_leaks=0 strace -o "$BATS_TEST_TMPDIR/trace" \
	    -e trace=fsync,fdatasync,sync,syncfs mq-send -S <<<"fast" >/dev/null
	run grep -c sync "$BATS_TEST_TMPDIR/trace"
	assert_output 0
}

@test "mq-send -l: a slow producer's messages are visible and printed one by one" {
	mq-send -l </dev/null >/dev/null
	coproc SEND { mq-send -l; }
	echo first >&"${SEND[1]}"
	read -r -t 5 id <&"${SEND[0]}"
	[ -n "$id" ]
	r=$(mq-recv)
	assert_equal "$(cat "$r")" first
	# shellcheck disable=SC1083,SC2093 # closes the coprocess's input
	exec {SEND[1]}>&-
	wait
}

@test "mq-send -v: says on stderr which input each queued ID came from; stdout unchanged" {
	echo one >"$BATS_TEST_TMPDIR/f"
	run --separate-stderr mq-send -v -l "$BATS_TEST_TMPDIR/f" - <<<$'two\nthree'
	assert_success
	[ "${#lines[@]}" -eq 3 ]
	assert_equal "$stderr" "mq-send: ${lines[0]}: queued from $BATS_TEST_TMPDIR/f
mq-send: ${lines[1]}: queued from stdin
mq-send: ${lines[2]}: queued from stdin"
	run --separate-stderr mq-send <<<quiet
	assert_success
	[ -z "$stderr" ]
}

@test "mq-send: a spool it makes, and the parents it makes, are synced into their directories before its ID is printed" {
	command -v strace >/dev/null || skip "strace is not installed"
	mkdir "$BATS_TEST_TMPDIR/top"
	cd "$BATS_TEST_TMPDIR/top"
	ASAN_OPTIONS=detect_leaks=0 run strace -f -y -e trace=fsync,write \
	    -o "$BATS_TEST_TMPDIR/trace" mq-send -d a/b/sp <<<"first"
	assert_success
	top=$(pwd -P)
	# Each new entry's directory is synced: ., a, a/b, and the spool
	# itself for new/ and the other state directories in it; all before
	# the ID is written.
	out=$(grep -n 'write(1<' "$BATS_TEST_TMPDIR/trace" | cut -d: -f1)
	for d in "$top" "$top/a" "$top/a/b" "$top/a/b/sp"; do
		n=$(grep -n "fsync([0-9]*<$d>)" "$BATS_TEST_TMPDIR/trace" |
		    head -1 | cut -d: -f1)
		[ -n "$n" ] || fail "$d is never synced"
		[ "$n" -lt "$out" ] || fail "$d is synced after the ID is printed"
	done
	# A second send makes nothing, and syncs none of them.
	ASAN_OPTIONS=detect_leaks=0 run strace -f -y -e trace=fsync \
	    -o "$BATS_TEST_TMPDIR/trace2" mq-send -d a/b/sp <<<"second"
	assert_success
	run grep -E "fsync\([0-9]*<$top(/a|/a/b)?>\)" "$BATS_TEST_TMPDIR/trace2"
	assert_failure
}
