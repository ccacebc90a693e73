load helper

# The one file of the spool named for ID $1 (any state), its path.
file_of() {
	local d dirs=()
	for d in new cur dead groups; do
		[ ! -d "$MQ_DIR/$d" ] || dirs+=("$MQ_DIR/$d")
	done
	find "${dirs[@]}" -name "$1,*"
}

# Checks that mq-show prints file $2's bytes for ID $1, exactly.
shows() {
	timeout 20 mq-show "$1" >"$BATS_TEST_TMPDIR/out"
	cmp "$BATS_TEST_TMPDIR/out" "$2"
}

@test "mq-show: the body of a ready, delayed, blocked, in-flight, expired and dead message, byte for byte" {
	head -c 3000 /dev/urandom >"$BATS_TEST_TMPDIR/bin"
	printf 'a\0b\r\n\033[2J' >"$BATS_TEST_TMPDIR/ctl"
	: >"$BATS_TEST_TMPDIR/empty"
	echo head >"$BATS_TEST_TMPDIR/head"
	ready=$(mq-send "$BATS_TEST_TMPDIR/bin")
	delayed=$(mq-send -D 3600 "$BATS_TEST_TMPDIR/ctl")
	mq-send -g G "$BATS_TEST_TMPDIR/head" >/dev/null
	blocked=$(mq-send -g G "$BATS_TEST_TMPDIR/empty")
	dead=$(mq-send "$BATS_TEST_TMPDIR/ctl")
	expired=$(mq-send "$BATS_TEST_TMPDIR/bin")
	inflight=$(mq-send "$BATS_TEST_TMPDIR/empty")
	# Claimed in send order: the ready one and the group's head first.
	r1=$(mq-recv -n 2)
	r=$(mq-recv); mq-ack -x "broken" "$r"
	# A 5 s lease, past which the clock is moved (ahead), not slept: a
	# slow run (valgrind) keeps its margin.
	r=$(mq-recv -t 5)
	[ "$(basename "$r" | cut -d, -f1)" = "$expired" ]
	r=$(mq-recv)
	[ "$(basename "$r" | cut -d, -f1)" = "$inflight" ]
	mq-ack -r "$(head -n 1 <<<"$r1")"
	for s in ready delayed blocked inflight expired dead; do
		run -0 --separate-stderr ahead 6 mq-show -v "${!s}"
		case $s in
		inflight|expired)
			# A lease says who holds it: mq-recv, whose receipt it was.
			assert_regex "$stderr" "^mq-show: ${!s}: $s, held by $(id -un)@$(uname -n):[0-9]+ since [0-9T:-]+Z\$" ;;
		*)
			assert_equal "$stderr" "mq-show: ${!s}: $s" ;;
		esac
	done
	shows "$ready" "$BATS_TEST_TMPDIR/bin"
	shows "$delayed" "$BATS_TEST_TMPDIR/ctl"
	shows "$blocked" "$BATS_TEST_TMPDIR/empty"
	shows "$inflight" "$BATS_TEST_TMPDIR/empty"
	shows "$expired" "$BATS_TEST_TMPDIR/bin"
	shows "$dead" "$BATS_TEST_TMPDIR/ctl"
}

@test "mq-show -v: a waiting message past its time to live (its own, or the spool's) is dead, as mq-ls lists it" {
	a=$(echo a | mq-send --ttl 0.001)
	b=$(echo b | mq-send)
	sleep 0.2
	run -0 --separate-stderr mq-show -v "$a"
	assert_output a
	assert_equal "$stderr" "mq-show: $a: dead"
	assert_equal "$(mq-ls -s dead | cut -f1)" "$a"
	run -0 --separate-stderr mq-show -v "$b"
	assert_equal "$stderr" "mq-show: $b: ready"
	mq-conf -f ttl=0.5
	sleep 0.6
	run -0 --separate-stderr mq-show -v "$b"
	assert_output b
	assert_equal "$stderr" "mq-show: $b: dead"
	assert_equal "$(mq-ls -s dead | wc -l)" 2
}

@test "mq-show: looks only: no attempt counted, no rename, no lease" {
	id=$(echo hello | mq-send -D 3600)
	before=$(file_of "$id")
	run -0 mq-show "$id"
	assert_output hello
	assert_equal "$(file_of "$id")" "$before"
	assert_equal "$(count cur)" 0
	command -v strace >/dev/null || fail "strace is not installed"
	# LeakSanitizer cannot run under ptrace (make SANITIZE=1).
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    strace -f -o "$BATS_TEST_TMPDIR/trace" \
	    -e trace=rename,renameat,renameat2,unlink,unlinkat,link,linkat,flock,mkdir,mkdirat \
	    "$(bin_of mq-show)" "$id" >/dev/null
	run grep -E '^[0-9]+ +(rename|unlink|link|flock|mkdir)' "$BATS_TEST_TMPDIR/trace"
	assert_failure 1
	assert_output ""
}

@test "mq-show: exit 1 for no such ID, 2 for a malformed one or a usage error" {
	echo x | mq-send >/dev/null
	run -1 --separate-stderr mq-show 0000000000000000.1.000000000000
	assert_output ""
	assert_equal "$stderr" "mq-show: 0000000000000000.1.000000000000: no such message"
	run -2 --separate-stderr mq-show ../../etc/passwd
	assert_output ""
	[[ $stderr == *"not a message ID"* ]] || fail "$stderr"
	run -2 --separate-stderr mq-show
	[[ $stderr == "usage: mq-show "* ]] || fail "$stderr"
	id=$(echo y | mq-send)
	# An acked message is gone.
	mq-ack "$(mq-recv)"
	mq-ack "$(mq-recv)"
	run -1 mq-show "$id"
}

@test "mq-show: a missing spool is an error (4) naming it" {
	run -4 --separate-stderr mq-show 0000000000000000.1.000000000000
	[[ $stderr == "mq-show: $MQ_DIR: "* ]] || fail "$stderr"
	assert_not_exist "$MQ_DIR"
}

@test "mq-show: a FIFO or a symbolic link planted under a message's name is neither opened for reading nor followed (exit 4)" {
	echo secret >"$BATS_TEST_TMPDIR/secret"
	id=$(echo one | mq-send)
	f=$(file_of "$id")
	rm "$f"
	mkfifo "$f"
	run -4 --separate-stderr timeout 10 mq-show "$id"
	assert_output ""
	assert_equal "$stderr" "mq-show: $id: not a regular file"
	# Not even opened (an open would wake a writer blocked on the FIFO).
	command -v strace >/dev/null || fail "strace is not installed"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    timeout 20 strace -f -qq -e trace=open,openat -o "$BATS_TEST_TMPDIR/trace" \
	    "$(bin_of mq-show)" "$id" 2>/dev/null || true
	run grep -F "\"${f##*/}\"" "$BATS_TEST_TMPDIR/trace"
	assert_failure 1
	rm "$f"
	ln -s "$BATS_TEST_TMPDIR/secret" "$f"
	run -4 --separate-stderr timeout 10 mq-show "$id"
	assert_output ""
	assert_equal "$stderr" "mq-show: $id: not a regular file"
}

@test "mq-show: streams: the peak RSS for a 64 MiB body is within 2 MiB of a 1-byte body's" {
	[ -x /usr/bin/time ] || fail "GNU time is not installed (sh share/deps.sh)"
	small=$(printf x | mq-send -S)
	big=$(head -c 64M /dev/urandom | mq-send -S)
	/usr/bin/time -o "$BATS_TEST_TMPDIR/small" -f %M mq-show "$small" >/dev/null
	/usr/bin/time -o "$BATS_TEST_TMPDIR/big" -f %M mq-show "$big" >"$BATS_TEST_TMPDIR/out"
	cmp "$BATS_TEST_TMPDIR/out" "$(file_of "$big")"
	s=$(tail -n 1 "$BATS_TEST_TMPDIR/small")
	b=$(tail -n 1 "$BATS_TEST_TMPDIR/big")
	[ $((b - s)) -le 2048 ] || fail "peak RSS: $b KiB for 64 MiB, $s KiB for 1 byte"
}

@test "mq-show: a body claimed while it is shown is found again (in flight) and shown" {
	id=$(echo moving | mq-send)
	# mq-show stopped once it found the message, before it opens it; a
	# receiver claims it meanwhile.
	# Stopped twice at mq_found_open: continued twice.
	race_at mq-show mq_found_open "$id >$BATS_TEST_TMPDIR/out" \
	    "mq-recv >$BATS_TEST_TMPDIR/r" 2
	[[ $output == *"Breakpoint 1"* ]] || fail "mq_found_open was not reached: $output"
	[[ $output == *"exited normally"* ]] || fail "mq-show failed: $output"
	# It met the message gone, and found it again.
	[ "$(grep -c '^Breakpoint 1,' <<<"$output")" -eq 2 ] || fail "$output"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/out")" moving
	run -0 mq-ack "$(cat "$BATS_TEST_TMPDIR/r")"
}

# mq-show's standard output on a terminal (script(1) gives it one).
show_on_tty() {
	script -qec "mq-show $*" /dev/null </dev/null | tr -d '\r'
}

@test "mq-show: on a terminal nothing of the body takes it over: controls and bad UTF-8 escaped, lines and tabs kept; --raw raw; a pipe byte for byte" {
	command -v script >/dev/null || fail "script (bsdutils) is not installed"
	id=$(printf 'a\033[31mred\tx\nline2\x80\xc3\xa9\\end\a' | mq-send)
	run show_on_tty "$id"
	assert_output "$(printf 'a\\x1b[31mred\tx\nline2\\x80\xc3\xa9\\\\end\\x07')"
	run show_on_tty --raw "$id"
	assert_output "$(printf 'a\033[31mred\tx\nline2\x80\xc3\xa9\\end\a')"
	mq-show "$id" | cmp - "$(file_of "$id")"
}

@test "mq-show --raw: the body raw on a terminal; -r, its old spelling, is refused (exit 2) naming --raw" {
	command -v script >/dev/null || fail "script (bsdutils) is not installed"
	id=$(printf 'a\033[31mred\a' | mq-send)
	run show_on_tty --raw "$id"
	assert_output "$(printf 'a\033[31mred\a')"
	mq-show --raw "$id" | cmp - "$(file_of "$id")"
	run -2 --separate-stderr mq-show -r "$id"
	assert_output ""
	assert_equal "$stderr" "mq-show: -r is now --raw"
}

@test "mq-show: on a terminal, a UTF-8 character cut by a read's end is shown whole, not escaped" {
	command -v script >/dev/null || fail "script (bsdutils) is not installed"
	# 65535 bytes, then a 2-byte character across the 64 KiB read.
	id=$( { head -c 65535 /dev/zero | tr '\0' a; printf '\xc3\xa9z'; } | mq-send)
	run show_on_tty "$id"
	[[ $output == *"a"$'\xc3\xa9'"z" ]] || fail "cut: ${output: -12}"
	[[ $output != *'\x'* ]]
}

# Renames the message of ID $1 (any state) to ID $2 where it is: IDs that
# share a prefix, made on purpose.
rename_id() {
	local f b
	f=$(file_of "$1")
	b=${f##*/}
	mv "$f" "${f%/*}/$2,${b#*,}"
}

@test "mq-show: a unique prefix of 8 characters or more selects the message; 7 is malformed (exit 2); one no ID begins with is exit 1" {
	a=$(echo alpha | mq-send)
	b=$(echo beta | mq-send -D 3600)
	c=$(echo gamma | mq-send)
	rename_id "$a" 0000000b00000001.1.000000000001
	rename_id "$b" 0000000b00000002.1.000000000001
	rename_id "$c" 0000000c00000001.1.000000000001
	run -0 --separate-stderr mq-show -v 0000000c
	assert_output gamma
	assert_equal "$stderr" "mq-show: 0000000c00000001.1.000000000001: ready"
	run -0 mq-show 0000000b00000002
	assert_output beta
	run -0 mq-show 0000000b00000001.1.000000000001
	assert_output alpha
	run -2 --separate-stderr mq-show 0000000
	assert_output ""
	assert_equal "$stderr" "mq-show: 0000000: not a message ID"
	for bad in 0000000B 0000000b0000000x 0000000b00000001.x 0000000b00000001..; do
		run -2 --separate-stderr mq-show "$bad"
		assert_equal "$stderr" "mq-show: $bad: not a message ID"
	done
	run -1 --separate-stderr mq-show 0000000d
	assert_output ""
	assert_equal "$stderr" "mq-show: 0000000d: no such message"
}

@test "mq-show: an ambiguous prefix is exit 2 listing the IDs that begin with it, ten at most, and how many more" {
	printf '%s\n' 1 2 3 4 5 6 7 8 9 10 11 12 | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	i=0
	while read -r id; do
		i=$((i + 1))
		rename_id "$id" "$(printf '0000000b000000%02x.1.000000000001' "$i")"
	done <"$BATS_TEST_TMPDIR/ids"
	run -2 --separate-stderr mq-show 0000000b
	assert_output ""
	assert_equal "$(sed -n 1p <<<"$stderr")" "mq-show: 0000000b: ambiguous, 12 messages match:"
	assert_equal "$(sed -n '2,11p' <<<"$stderr")" "$(for i in 1 2 3 4 5 6 7 8 9 10; do printf 'mq-show:   0000000b000000%02x.1.000000000001\n' "$i"; done)"
	assert_equal "$(sed -n '12,$p' <<<"$stderr")" "mq-show:   and 2 more"
	# A whole ID, and a prefix one ID alone begins with, still select.
	run -0 mq-show 0000000b0000000c.1.000000000001 0000000b0000000b
	assert_output 1211
}

@test "mq-show -: IDs from standard input, one a line (blank ones skipped) or NUL-terminated with -0; several IDs, each body in turn" {
	a=$(echo one | mq-send)
	b=$(echo two | mq-send -D 3600)
	run -0 --separate-stderr mq-show - <<<"$(printf '%s\n\n  \n%s\n' "$a" "${b:0:20}")"
	assert_output "$(printf 'one\ntwo')"
	assert_equal "$stderr" ""
	run -0 bash -c 'printf "%s\0%s\0" "$1" "$2" | mq-show -0 -' _ "$b" "$a"
	assert_output "$(printf 'two\none')"
	run -0 bash -c 'mq-ls | cut -f 1 | mq-show -'
	assert_output "$(printf 'one\ntwo')"
	run -0 mq-show "$b" "$a" "$b"
	assert_output "$(printf 'two\none\ntwo')"
	# One missing: the others shown, exit 1.
	run -1 --separate-stderr mq-show "$a" 0000000000000000.1.000000000000 "$b"
	assert_output "$(printf 'one\ntwo')"
	assert_equal "$stderr" "mq-show: 0000000000000000.1.000000000000: no such message"
	# Nothing read: nothing to do.
	run -1 --separate-stderr mq-show - </dev/null
	assert_output ""
	assert_equal "$stderr" ""
}

@test "mq-show: a malformed ID, given or read, is exit 2 naming it (escaped) before any body is shown" {
	a=$(echo one | mq-send)
	run -2 --separate-stderr mq-show "$a" ../x
	assert_output ""
	assert_equal "$stderr" "mq-show: ../x: not a message ID"
	run -2 --separate-stderr mq-show - <<<"$(printf '%s\nnot-an-id\nx\033y\n' "$a")"
	assert_output ""
	assert_equal "$stderr" "$(printf '%s\n' "mq-show: not-an-id: not a message ID" 'mq-show: x\x1by: not a message ID')"
	run -2 --separate-stderr bash -c 'printf "%s\n" "$1" | mq-show -0 -' _ "$a"
	assert_output ""
	[[ $stderr == *"\n: not a message ID" ]] || fail "$stderr"
}
