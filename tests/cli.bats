load helper

tools="mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm mq-log mq-top"

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
	for t in mq-send mq-recv mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm mq-log; do
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
	for t in mq-stat mq-ls mq-recv mq-sweep mq-dlq mq-conf mq-rm mq-log; do
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

# The letters of a tool's usage lines (its --help up to the first line
# that is not one), one a line: [-0lSv] is four, --json none.
letters_of() {
	"$1" --help | sed -n '/^usage:/,/^[^ ]/p' | grep -E '^(usage:| )' |
	    grep -oE '(^|[[:space:][|])-[A-Za-z0-9]+' | sed 's/^[^-]*-//' |
	    fold -w 1 | sort -u
}

@test "every tool: each option letter of every usage is in mq(7)'s table, which has one row, one meaning, per letter" {
	page="$BATS_TEST_DIRNAME/../share/man/man7/mq.7"
	all="$tools"
	command -v mq-relay >/dev/null && all="$all mq-relay"
	[ -x "$BATS_TEST_DIRNAME/../bin/mq" ] && all="$all mq"
	# From the usages: letter tool, a line each.
	for t in $all; do
		for l in $(letters_of "$t"); do echo "$l $t"; done
		# Not in the usages, taken by every tool (tested above).
		printf 'h %s\nV %s\n' "$t" "$t"
	done | sort -u >"$BATS_TEST_TMPDIR/used"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/used")" -gt 40 ] || fail "too few letters read from the usages"
	# From the table: ".It Fl X [Ar arg] Ta meaning Ta tools".
	sed -n '/^\.Ss One meaning per option letter/,/^\.El/p' "$page" |
	    grep '^\.It Fl ' >"$BATS_TEST_TMPDIR/rows"
	dup=$(awk '{ print $3 }' "$BATS_TEST_TMPDIR/rows" | sort | uniq -d)
	assert_equal "$dup" ""
	while read -r row; do
		l=$(awk '{ print $3 }' <<<"$row")
		who=${row##* Ta }
		case $who in
		"every tool") who=$all ;;
		"every tool but mq") who=$(tr ' ' '\n' <<<"$all" | grep -vx mq) ;;
		esac
		for t in $who; do
			case " $all " in *" $t "*) echo "$l $t" ;; esac
		done
	done <"$BATS_TEST_TMPDIR/rows" | sort >"$BATS_TEST_TMPDIR/table"
	# A letter a tool gains must be placed in the table, in its one row:
	# a second meaning shows as a row that does not fit.
	run diff "$BATS_TEST_TMPDIR/table" "$BATS_TEST_TMPDIR/used"
	assert_success
}

@test "every tool: -v says something on stderr that the same call without -v does not" {
	printf 'a\nb\nc\nd\n' | mq-send -l >/dev/null
	mq-ack -x broken "$(mq-recv -t 600)"
	r1=$(mq-recv -t 600)
	r2=$(mq-recv -t 0.001)
	sleep 0.05
	dead=$(mq-ls -s dead | cut -f 1)
	ready=$(mq-ls -s ready | cut -f 1)
	# The lease run out goes back to new/.
	run -0 --separate-stderr mq-sweep -v
	[[ $stderr == *"$(basename "$r2" | cut -d, -f1)"* ]] || fail "mq-sweep -v: '$stderr'"
	try() { # what the call says on stderr, without and with -v
		local t=$1
		shift
		run -0 --separate-stderr "$t" "$@"
		quiet=$stderr
		run -0 --separate-stderr "$t" -v "$@"
		[ -n "$stderr" ] && [ "$stderr" != "$quiet" ] ||
		    fail "$t -v $*: nothing more said: '$stderr'"
	}
	try mq-stat
	try mq-ls
	try mq-show "$ready"
	run -0 --separate-stderr mq-conf max-depth=100
	assert_equal "$stderr" ""
	run -0 --separate-stderr mq-conf -v max-depth=200
	assert_equal "$stderr" "mq-conf: $MQ_DIR: max-depth=200 (was 100)"
	echo x | try mq-send
	try mq-recv -t 600
	r3=$(mq-recv -t 600)
	run -0 --separate-stderr mq-ack "$r1"
	assert_equal "$stderr" ""
	run -0 --separate-stderr mq-ack -v "$r3"
	[ -n "$stderr" ] || fail "mq-ack -v: nothing said"
	mq-ack -x broken "$(mq-recv -t 600)"
	dead2=$(mq-ls -s dead | grep -v "^$dead" | cut -f 1)
	run -0 --separate-stderr mq-dlq redrive "$dead"
	quiet=$stderr
	run -0 --separate-stderr mq-dlq -v redrive "$dead2"
	[ -n "$stderr" ] && [ "$stderr" != "${quiet//$dead/$dead2}" ] ||
	    fail "mq-dlq -v redrive: nothing more said: '$stderr'"
	mq-ls -s ready | cut -f 1 >"$BATS_TEST_TMPDIR/ready"
	run -0 --separate-stderr mq-rm "$(sed -n 1p "$BATS_TEST_TMPDIR/ready")"
	assert_equal "$stderr" ""
	run -0 --separate-stderr mq-rm -v "$(sed -n 2p "$BATS_TEST_TMPDIR/ready")"
	[ -n "$stderr" ] || fail "mq-rm -v: nothing said"
}
