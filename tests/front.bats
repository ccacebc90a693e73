# mq, the front command: mq TOOL ARG ... is mq-TOOL ARG ....
load helper

top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
all_tools="send recv ack sweep dlq stat conf ls show rm log top relay"

# A directory holding only a copy of mq (no tool beside it), and an empty
# one for a PATH where nothing is found.
lone_mq() {
	mkdir -p "$BATS_TEST_TMPDIR/lone" "$BATS_TEST_TMPDIR/empty"
	cp "$top/bin/mq" "$BATS_TEST_TMPDIR/lone/mq"
}

@test "mq TOOL runs mq-TOOL with its arguments: mq conf -d DIR sets and reads as mq-conf does" {
	run -0 --separate-stderr mq conf -d "$BATS_TEST_TMPDIR/q" lease=7 max-attempts=3
	run -0 mq conf -d "$BATS_TEST_TMPDIR/q" lease
	assert_output 7
	assert_equal "$(mq conf -d "$BATS_TEST_TMPDIR/q")" "$(mq-conf -d "$BATS_TEST_TMPDIR/q")"
	id=$(echo hello | mq send)
	r=$(mq recv)
	assert_equal "$(cat "$r")" hello
	run -0 mq ack "$r"
	run -0 mq ls
	assert_output ""
	[[ $id =~ ^[0-9a-f]{16}\. ]] || fail "mq send printed: $id"
}

@test "mq passes the tool's exit status and streams through: 1 of mq recv on an empty spool, 2 of a bad option, 4 of a missing spool, 3 of a stale receipt" {
	run -4 --separate-stderr mq recv
	assert_output ""
	[[ $stderr == "mq-recv: $MQ_DIR: "* ]] || fail "$stderr"
	mq send </dev/null >/dev/null
	mq ack "$(mq recv)"
	run -1 --separate-stderr mq recv
	assert_output ""
	assert_equal "$stderr" ""
	run -2 --separate-stderr mq recv --no-such-option
	[[ $stderr == *"usage: mq-recv "* ]] || fail "$stderr"
	echo x | mq send >/dev/null
	r=$(mq recv)
	mq ack "$r"
	run -3 --separate-stderr mq ack "$r"
	[[ $stderr == *"lease lost"* ]] || fail "$stderr"
}

@test "mq execs the tool: the process of mq recv -w is mq-recv's, and a signal reaches it" {
	[ -e /proc/self/exe ] || skip "no /proc/self/exe"
	mq send </dev/null >/dev/null
	mq ack "$(mq recv)"
	timeout -k 5 60 mq recv -w >"$BATS_TEST_TMPDIR/r" &
	# (timeout's child is mq, then mq-recv, with the same pid.)
	pid=$(pgrep -P $! || :)
	i=0
	while [ -z "$pid" ] && [ $i -lt 200 ]; do sleep 0.05; pid=$(pgrep -P $! || :); i=$((i + 1)); done
	[ -n "$pid" ] || fail "no child of timeout"
	i=0
	while [ "$(readlink "/proc/$pid/exe")" != "$top/bin/mq-recv" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	assert_equal "$(readlink "/proc/$pid/exe")" "$top/bin/mq-recv"
	echo job | mq send >/dev/null
	st=0
	wait $! || st=$?
	assert_equal "$st" 0
	assert_equal "$(cat "$(cat "$BATS_TEST_TMPDIR/r")")" job
	# A signal is the tool's: mq-recv -w killed by TERM, not mq.
	timeout -k 5 60 mq recv -w &
	pid=$(pgrep -P $! || :)
	i=0
	while { [ -z "$pid" ] || [ "$(readlink "/proc/$pid/exe")" != "$top/bin/mq-recv" ]; } && [ $i -lt 200 ]; do
		sleep 0.05
		pid=$(pgrep -P $! || :)
		i=$((i + 1))
	done
	kill -TERM "$pid"
	st=0
	wait $! || st=$?
	[ "$st" -ne 124 ] || fail "mq-recv -w was not stopped by TERM"
}

@test "mq runs the tool installed beside it before one earlier in PATH" {
	mkdir -p "$BATS_TEST_TMPDIR/fake"
	printf '#!/bin/sh\necho fake mq-stat\n' >"$BATS_TEST_TMPDIR/fake/mq-stat"
	chmod +x "$BATS_TEST_TMPDIR/fake/mq-stat"
	mq send </dev/null >/dev/null
	PATH="$BATS_TEST_TMPDIR/fake:$PATH" run -0 mq stat
	refute_output --partial fake
	assert_equal "$output" "$(mq-stat)"
	# Run by a relative path, from elsewhere: the same.
	cd "$top"
	PATH="$BATS_TEST_TMPDIR/fake:$PATH" run -0 ./bin/mq stat
	refute_output --partial fake
	# With no tool beside it, the one in PATH.
	lone_mq
	PATH="$BATS_TEST_TMPDIR/fake:$PATH" run -0 "$BATS_TEST_TMPDIR/lone/mq" stat
	assert_output "fake mq-stat"
}

@test "mq, mq help, mq --help and mq -h list every tool, a line each with a summary, on stdout, exit 0" {
	run -0 --separate-stderr mq
	list=$output
	assert_equal "$stderr" ""
	for t in $all_tools; do
		grep -qE "^  $t +[a-z]" <<<"$list" || fail "mq does not list $t: $list"
	done
	assert_equal "$(grep -cE '^  [a-z]+ +[a-z]' <<<"$list")" 13
	for a in help --help -h; do
		run -0 --separate-stderr mq "$a"
		assert_equal "$output" "$list"
		assert_equal "$stderr" ""
	done
	[[ $list == "usage: mq "* ]] || fail "$list"
	assert_not_exist "$MQ_DIR"
}

@test "mq --version and -V print the version as every tool does" {
	v=$(make -s --no-print-directory -C "$top" version)
	for o in --version -V; do
		run -0 --separate-stderr mq "$o"
		assert_output "mq $v"
		assert_equal "$stderr" ""
	done
}

@test "mq's usage agrees with the SYNOPSIS of mq(1)" {
	syn=$(mandoc -Tascii "$top/share/man/man1/mq.1" | sed 's/.\x08//g' |
	    sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' | sed '1d;$d' | tr -s ' \t\n' ' ' | sed 's/^ //;s/ $//')
	use=$(mq --help | sed -n '/^usage:/,/^[^ u]/p' | grep -E '^(usage:| +mq )' |
	    sed 's/^usage: //' | tr -s ' \t\n' ' ' | sed 's/^ //;s/ $//')
	assert_equal "$use" "$syn"
	# and mq(1) lists every tool.
	for t in $all_tools; do
		grep -qx ".It Cm $t" "$top/share/man/man1/mq.1" || fail "mq(1) does not list $t"
	done
}

@test "mq help TOOL shows its manual page with man; mq help mq, mq(1)" {
	command -v man >/dev/null || skip "man (man-db) is not installed"
	MANPATH=$top/share/man MANPAGER=cat run -0 --separate-stderr mq help recv
	[[ $output == *"mq-recv"*"claim messages from a spool"* ]] || fail "$output"
	assert_equal "$stderr" ""
	MANPATH=$top/share/man MANPAGER=cat run -0 --separate-stderr mq help mq
	[[ $output == *"run an mq tool by its short name"* ]] || fail "$output"
}

@test "mq help TOOL without man, or without the page: the tool's --help, saying so" {
	lone_mq
	cp "$top/bin/mq-recv" "$BATS_TEST_TMPDIR/lone/"
	# No man in PATH: mq finds the tool beside it.
	run -0 --separate-stderr env PATH="$BATS_TEST_TMPDIR/empty" "$BATS_TEST_TMPDIR/lone/mq" help recv
	assert_equal "$output" "$(mq-recv --help)"
	assert_equal "$stderr" "mq: man is not installed: mq-recv --help instead"
	run -0 --separate-stderr env PATH="$BATS_TEST_TMPDIR/empty" "$BATS_TEST_TMPDIR/lone/mq" help mq
	assert_equal "$output" "$(mq --help)"
	assert_equal "$stderr" "mq: man is not installed: the list of tools instead"
	# man, but no page of it.
	if command -v man >/dev/null; then
		MANPATH=$BATS_TEST_TMPDIR/empty run -0 --separate-stderr mq help recv
		assert_equal "$output" "$(mq-recv --help)"
		assert_equal "$(tail -n 1 <<<"$stderr")" "mq: no manual page mq-recv(1): mq-recv --help instead"
	fi
	# Neither the page nor the tool: not installed.
	run -4 --separate-stderr env PATH="$BATS_TEST_TMPDIR/empty" "$BATS_TEST_TMPDIR/lone/mq" help send
	assert_output ""
	[[ $stderr == *"mq-send is not installed"* ]] || fail "$stderr"
}

@test "mq: an unknown tool, a path or an option where the tool goes is exit 2, named, pointing at mq help" {
	run -2 --separate-stderr mq frob -d x
	assert_output ""
	assert_equal "$stderr" "mq: frob: no such tool (mq help lists the tools)"
	run -2 --separate-stderr mq ./send
	assert_equal "$stderr" "mq: ./send: no such tool (mq help lists the tools)"
	run -2 --separate-stderr mq "$top/bin/mq-send"
	assert_equal "$stderr" "mq: $top/bin/mq-send: no such tool (mq help lists the tools)"
	run -2 --separate-stderr mq mq-send
	assert_equal "$stderr" "mq: mq-send: no such tool (mq help lists the tools)"
	run -2 --separate-stderr mq -d "$MQ_DIR" ls
	assert_equal "$stderr" "mq: -d: no such option (mq help lists the tools)"
	run -2 --separate-stderr mq help frob
	assert_equal "$stderr" "mq: frob: no such tool (mq help lists the tools)"
	run -2 --separate-stderr mq help recv send
	[[ $stderr == "usage: mq "* ]] || fail "$stderr"
	# What it names is escaped: one line, nothing for the terminal.
	run -2 --separate-stderr mq $'fr\033[2Job\n'
	assert_equal "$stderr" 'mq: fr\x1b[2Job\n: no such tool (mq help lists the tools)'
	assert_not_exist "$MQ_DIR"
}

@test "mq: a known tool that is not installed is exit 4, saying so" {
	lone_mq
	run -4 --separate-stderr env PATH="$BATS_TEST_TMPDIR/empty" "$BATS_TEST_TMPDIR/lone/mq" relay push
	assert_output ""
	assert_equal "$stderr" "mq: mq-relay is not installed (not in $BATS_TEST_TMPDIR/lone/ nor in PATH)"
	run -4 --separate-stderr env PATH="$BATS_TEST_TMPDIR/empty" "$BATS_TEST_TMPDIR/lone/mq" stat
	[[ $stderr == *"mq-stat is not installed"* ]] || fail "$stderr"
}
