load helper

tools="mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm"

@test "every tool: -h and --help print usage on stdout, exit 0, create no spool" {
	for t in $tools; do
		for o in -h --help; do
			run --separate-stderr "$t" "$o"
			assert_success
			[[ ${lines[0]} == "usage: $t "* ]]
			[ -z "$stderr" ]
		done
	done
	assert_not_exist "$MQ_DIR"
}

@test "every tool: -V and --version print the version on stdout and exit 0" {
	for t in $tools; do
		for o in -V --version; do
			run --separate-stderr "$t" "$o"
			assert_success
			[[ $output =~ ^$t\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
		done
	done
	assert_not_exist "$MQ_DIR"
}

@test "every tool: a bad option is a usage error (2) with the usage on stderr" {
	for t in $tools; do
		run -2 --separate-stderr "$t" --no-such-option
		assert_output ""
		[[ $stderr == *"usage: $t "* ]]
	done
	assert_not_exist "$MQ_DIR"
}

@test "every tool but mq-send: a missing spool is an error (4) naming it" {
	for t in mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls; do
		run -4 --separate-stderr "$t" </dev/null
		[[ $stderr == "$t: $MQ_DIR: "* ]]
	done
	assert_not_exist "$MQ_DIR"
}

@test "every tool: usage in --help agrees with the man page SYNOPSIS" {
	command -v mandoc >/dev/null || skip "mandoc is not installed"
	for t in $tools; do
		page="$BATS_TEST_DIRNAME/../share/man/man1/$t.1"
		syn=$(mandoc -Tascii "$page" | sed 's/.\x08//g' | sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' |
		    sed '1d;$d' | tr -s ' \t\n' ' ' | sed 's/^ //;s/ $//')
		use=$("$t" --help | sed -n '/^usage:/,/^[^ ]/p' | grep -E '^(usage:| +mq-| +\[)' |
		    sed 's/^usage: //' | tr -s ' \t\n' ' ' | sed 's/^ //;s/ $//')
		assert_equal "$use" "$syn"
	done
}

@test "every tool that has a default spool: --help names the ~/.local/state/mq fallback" {
	for t in mq-send mq-recv mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm; do
		run "$t" --help
		assert_output --partial '$XDG_STATE_HOME/mq,'
		# shellcheck disable=SC2088 # the words --help prints
		assert_output --partial '~/.local/state/mq'
	done
	# mq-ack has none: a receipt names its spool.
	run mq-ack --help
	assert_output --partial "else the receipt's own"
}

@test "mq-send: a missing operand says that operands are files" {
	run -4 --separate-stderr mq-send "hello world"
	assert_equal "$stderr" "mq-send: hello world: No such file or directory (operands are files; to send text, use: echo TEXT | mq-send)"
	assert_equal "$(find "$MQ_DIR/new" -type f | wc -l)" 0
}

@test "every tool on a missing default spool names the path it looked at and why that one (no -d, no MQ_DIR)" {
	for t in mq-stat mq-ls mq-recv mq-sweep mq-dlq mq-conf mq-rm; do
		args=
		[ "$t" = mq-rm ] && args=--all
		# shellcheck disable=SC2086 # an optional operand
		run -4 --separate-stderr env -u MQ_DIR -u XDG_STATE_HOME \
		    HOME="$BATS_TEST_TMPDIR/home" "$t" $args
		assert_equal "$stderr" "$t: $BATS_TEST_TMPDIR/home/.local/state/mq: no such spool (the default spool, as neither -d nor MQ_DIR is given)"
	done
	# A spool named by MQ_DIR or -d is only named.
	run -4 --separate-stderr mq-stat
	assert_equal "$stderr" "mq-stat: $MQ_DIR: No such file or directory"
}
