load helper

comp_bash="$BATS_TEST_DIRNAME/../share/completions/mq.bash"
comp_zsh="$BATS_TEST_DIRNAME/../share/completions/_mq"
tools="mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm mq-log mq-top"

# Every option a tool's usage names: bundles such as -0lSv split up.
options_of() {
	"$1" --help | sed -n '/^usage:/,/^[^ u]/p' | grep -E '^(usage:| )' | split_options
}

# The options in the lines of a usage or synopsis on stdin, one a line.
split_options() {
	grep -oE -- '(^|[[ |,])(--[a-z-]+|-[a-zA-Z0-9]+)' | sed 's/^[[ |,]//' |
	    while read -r o; do
		case $o in
		--*) printf '%s\n' "$o" ;;
		-??*) o=${o#-}; while [ -n "$o" ]; do printf '%s\n' "-${o%"${o#?}"}"; o=${o#?}; done ;;
		*) printf '%s\n' "$o" ;; # not echo, which takes -n and -e for its own
		esac
	done | grep -vx -- '--' | sort -u
}

# mq-relay is built only where librabbitmq is found: its options as its
# man page names them (the synopsis and the options' tags), and as its
# --help names them when it is built.
relay_page="$BATS_TEST_DIRNAME/../share/man/man1/mq-relay.1"
relay_options() {
	{
		mandoc -Tascii "$relay_page" | sed 's/.\x08//g' |
		    sed -n '/^SYNOPSIS/,/^DESCRIPTION/p; /^OPTIONS/,/^ENVIRONMENT/{/^     -/p;}' |
		    sed 's/^ *mq-relay//' | split_options
		if command -v mq-relay >/dev/null; then options_of mq-relay; fi
	} | sort -u
}

# Runs the bash completion for the words given; prints COMPREPLY.  The
# function is the one complete -F names for the first word.
complete_bash() {
	bash -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		f=$(complete -p "$1" | sed -n "s/^complete -F \([^ ]*\) .*/\1/p")
		"$f"
		printf "%s\n" "${COMPREPLY[@]}"' _ "$comp_bash" "$@"
}

# Runs _mq (zsh) for the words given, as zsh would for the last of them,
# with zsh's completion functions replaced by stand-ins that print what
# they were given: _arguments its specifications, _describe its items;
# _normal completes the words anew, as zsh does, by their first.
complete_zsh() {
	zsh -f -c '
		eval "_mq() { $(<"$1") }"
		_arguments() { print -r -- "_arguments ${(q)@}"; }
		_describe() {
			[[ $1 == -t ]] && shift 2
			print -r -- "_describe $1"
			print -rl -- "${(@P)2}"
		}
		_normal() { service=$words[1]; _mq; }
		shift
		service=$1 words=("$@") CURRENT=$# PREFIX=${@[-1]}
		_mq' _ "$comp_zsh" "$@"
}

@test "completion (bash): every option of every tool, as its --help names them" {
	for t in $tools; do
		want=$(options_of "$t")
		[ -n "$want" ]
		have=$(bash -c 'source "$1"; _mq_options "$2"' _ "$comp_bash" "$t" | tr ' ' '\n' | sort -u)
		missing=$(comm -23 <(echo "$want") <(echo "$have"))
		assert_equal "$t: $missing" "$t: "
	done
}

@test "completion (bash): options, spools after -d, subcommands and dead letter IDs" {
	run complete_bash mq-recv --ti
	assert_output "--timeout"
	mkdir -p "$BATS_TEST_TMPDIR/spools/alpha"
	cd "$BATS_TEST_TMPDIR/spools"
	run complete_bash mq-stat -d al
	assert_output "alpha"
	run complete_bash mq-dlq ""
	assert_output "ls
show
redrive
purge"
	echo x | mq-send >/dev/null
	mq-ack -x test "$(mq-recv)"
	id=$(mq-dlq ls | cut -f 1)
	run complete_bash mq-dlq -d "$MQ_DIR" show ""
	assert_output "$id"
	run complete_bash mq-recv -P 4 -- ech
	assert_line echo
}

@test "completion (bash): mq-show and mq-rm complete the IDs of the spool, in every state" {
	printf 'a\nb\nc\n' | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	mq-ack -x test "$(mq-recv)"
	mq-recv >/dev/null
	for t in mq-show mq-rm; do
		run complete_bash "$t" -d "$MQ_DIR" ""
		assert_equal "$(sort <<<"$output")" "$(sort "$BATS_TEST_TMPDIR/ids")"
	done
	last=$(tail -n 1 "$BATS_TEST_TMPDIR/ids")
	run complete_bash mq-rm -f -d "$MQ_DIR" "${last%?}"
	assert_output "$last"
}

@test "completion (zsh): mq-show and mq-rm offer the IDs mq-ls lists" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	grep -qF -- "'*:message ID:_mq_ids'" "$comp_zsh"
	grep -qF -- "'(--all)*:message ID:_mq_ids'" "$comp_zsh"
	grep -qF -- 'mq-ls $spool' "$comp_zsh"
}

@test "completion (bash): mq-send -p completes the priorities 0 to 9" {
	run complete_bash mq-send -p ""
	assert_equal "$(echo "$output" | tr '\n' ' ')" "0 1 2 3 4 5 6 7 8 9 "
	run complete_bash mq-send -l -p 7
	assert_output 7
	run complete_bash mq-send -
	assert_line -p
}

@test "completion (bash): mq-ls -s completes the states" {
	run complete_bash mq-ls -s ""
	assert_equal "$(echo "$output" | tr '\n' ' ')" "expired ready delayed blocked inflight orphaned dead "
	run complete_bash mq-ls -l -s in
	assert_output inflight
	run complete_bash mq-ls --j
	assert_output --json
}

@test "completion (zsh): mq-ls -s offers the states" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	grep -qF -- "'*-s[only this state]:state:(expired ready delayed blocked inflight orphaned dead)'" "$comp_zsh"
}

@test "completion (zsh): mq-send -p offers the priorities 0 to 9" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	grep -qF -- "'-p[priority, higher claimed first]:priority:(0 1 2 3 4 5 6 7 8 9)'" "$comp_zsh"
}

@test "completion (bash): mq-conf's keys, and the words of overflow and paused" {
	run complete_bash mq-conf max-d
	assert_output "max-depth="
	run complete_bash mq-conf ""
	assert_equal "$(echo "$output" | wc -l)" 11
	assert_line "log-size="
	assert_line "log-age="
	assert_line "keep-output="
	assert_line "once-window="
	assert_line "dedup-window="
	# As bash splits it at "=" ...
	run complete_bash mq-conf overflow = d
	assert_output "drop-oldest"
	run complete_bash mq-conf paused =
	assert_output "yes
no"
	# ... and as it is when "=" does not split words.
	run complete_bash mq-conf overflow=r
	assert_output "overflow=reject"
	run complete_bash mq-conf ttl = ""
	assert_output ""
}

@test "completion (zsh): parses, covers every tool and every option" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	zsh -n "$comp_zsh"
	assert_equal "$(head -n 1 "$comp_zsh")" "#compdef $tools mq-relay mq"
	for t in $tools; do
		for o in $(options_of "$t"); do
			grep -qE -- "['{,)*]${o}[[(]" "$comp_zsh" || grep -qE -- "['{]${o}[,}]" "$comp_zsh" ||
			    { echo "$t: $o is not in _mq"; false; }
		done
	done
}

@test "completion (bash): every option of mq-relay, as its page and --help name them" {
	want=$(relay_options)
	# Its page names at least these.
	for o in -1 -v -d -n -q -h --help -V --version; do
		grep -qx -- "$o" <<<"$want" || fail "mq-relay(1) does not name $o: $want"
	done
	have=$(bash -c 'source "$1"; _mq_options mq-relay' _ "$comp_bash" | tr ' ' '\n' | sort -u)
	assert_equal "$(comm -23 <(echo "$want") <(echo "$have"))" ""
	grep -q 'complete -F _mq .*mq-relay' <(sed -n '/^complete /,$p' "$comp_bash" | tr -d '\\\n')
}

@test "completion (bash): mq-relay's directions, then its options, spools after -d" {
	run complete_bash mq-relay ""
	assert_output "push
pull"
	run complete_bash mq-relay pu
	assert_output "push
pull"
	run complete_bash mq-relay --v
	assert_output "--version"
	mkdir -p "$BATS_TEST_TMPDIR/spools/alpha"
	cd "$BATS_TEST_TMPDIR/spools"
	run complete_bash mq-relay push -d al
	assert_output "alpha"
	run complete_bash mq-relay pull -v -d alpha -
	for o in -1 -v -d -n -q; do
		grep -qx -- "$o" <<<"$output" || fail "$o not offered: $output"
	done
	refute_line push
	# No value is offered for -n, -q or a URI.
	run complete_bash mq-relay push -n ""
	assert_output ""
	run complete_bash mq-relay pull -q ""
	assert_output ""
	run complete_bash mq-relay push -1 ""
	assert_output ""
}

@test "completion (zsh): mq-relay's directions and every option of its page" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	grep -qF -- "'1:direction:((push\:\"local spool to the broker\" pull\:\"broker to the local spool\"))'" "$comp_zsh"
	grep -qF -- "'-d[spool]:spool:_directories'" <(sed -n '/^mq-relay)/,/^	;;/p' "$comp_zsh")
	for o in $(relay_options); do
		sed -n '/^mq-relay)/,/^	;;/p' "$comp_zsh" | grep -qE -- "['{,)*]${o}[[(]|['{,]${o}[,}]" ||
		    { echo "mq-relay: $o is not in _mq"; false; }
	done
}

@test "completion (bash): mq completes its tools and help, mq help the tools, mq - its options" {
	run complete_bash mq ""
	assert_equal "$(echo "$output" | tr '\n' ' ')" "send recv ack sweep dlq stat conf ls show rm log top relay help "
	run complete_bash mq re
	assert_equal "$(echo "$output" | tr '\n' ' ')" "recv relay "
	run complete_bash mq help ""
	assert_equal "$(echo "$output" | tr '\n' ' ')" "send recv ack sweep dlq stat conf ls show rm log top relay "
	run complete_bash mq help recv ""
	assert_output ""
	run complete_bash mq -
	assert_equal "$(echo "$output" | tr '\n' ' ')" "-h --help -V --version "
	run complete_bash mq frob -
	assert_output ""
	# Loaded by the name mq too (bash-completion loads completions/mq).
	bash -c 'source "$1"; complete -p mq' _ "$comp_bash" | grep -qx 'complete -F _mq_front mq'
}

@test "completion (bash): mq TOOL completes as mq-TOOL: options, spools after -d, IDs, subcommands, settings" {
	for t in $tools; do
		assert_equal "$(complete_bash mq "${t#mq-}" -)" "$(complete_bash "$t" -)"
	done
	run complete_bash mq recv --ti
	assert_output "--timeout"
	mkdir -p "$BATS_TEST_TMPDIR/spools/alpha"
	cd "$BATS_TEST_TMPDIR/spools"
	run complete_bash mq stat -d al
	assert_output "alpha"
	run complete_bash mq dlq ""
	assert_equal "$(echo "$output" | tr '\n' ' ')" "ls show redrive purge "
	printf 'a\nb\n' | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	mq-ack -x test "$(mq-recv)"
	run complete_bash mq dlq -d "$MQ_DIR" show ""
	assert_output "$(head -n 1 "$BATS_TEST_TMPDIR/ids")"
	run complete_bash mq rm -d "$MQ_DIR" ""
	assert_equal "$(sort <<<"$output")" "$(sort "$BATS_TEST_TMPDIR/ids")"
	run complete_bash mq show -d "$MQ_DIR" ""
	assert_equal "$(sort <<<"$output")" "$(sort "$BATS_TEST_TMPDIR/ids")"
	run complete_bash mq conf overflow = d
	assert_output "drop-oldest"
	run complete_bash mq ls -s in
	assert_output inflight
	run complete_bash mq relay ""
	assert_equal "$(echo "$output" | tr '\n' ' ')" "push pull "
	run complete_bash mq recv -P 4 -- ech
	assert_line echo
}

@test "completion (zsh): mq offers its tools and help, mq help the tools, mq - its options" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	run -0 complete_zsh mq ""
	assert_line --index 0 "_describe mq tool"
	assert_equal "$(sed 1d <<<"$output" | cut -d: -f1 | tr '\n' ' ')" "send recv ack sweep dlq stat conf ls show rm log top relay help "
	run -0 complete_zsh mq help ""
	assert_equal "$(sed 1d <<<"$output" | cut -d: -f1 | tr '\n' ' ')" "send recv ack sweep dlq stat conf ls show rm log top relay "
	run -0 complete_zsh mq -
	for o in -h --help -V --version; do
		[[ $output == *"\\)${o}\\["* ]] || fail "mq - does not offer $o: $output"
	done
	run -0 complete_zsh mq frob ""
	assert_output ""
}

@test "completion (zsh): mq TOOL completes as mq-TOOL does" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	for t in $tools mq-relay; do
		want=$(complete_zsh "$t" -)
		[ -n "$want" ] || fail "$t: nothing"
		assert_equal "$(complete_zsh mq "${t#mq-}" -)" "$want"
	done
	assert_equal "$(complete_zsh mq dlq show "")" "$(complete_zsh mq-dlq show "")"
	assert_equal "$(complete_zsh mq relay push -d "")" "$(complete_zsh mq-relay push -d "")"
}

# zsh itself, in a pseudo-terminal: a line typed, then a tab; what it
# writes back, read until it holds $2 (at most 30 s).
zsh_tab_shows() {
	timeout -k 5 30 zsh -f -c '
		zmodload zsh/zpty || exit 2
		zpty z zsh -f -i
		zpty -w z "PS1=\"> \"; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D; PATH=$2:\$PATH"
		zpty -w -n z "$3"$'"'"'\t'"'"'
		zpty -r z out "*$4*" && print -r -- "$out"' _ "$BATS_TEST_TMPDIR/zfunc" "$BATS_TEST_DIRNAME/../bin" "$1" "$2"
}

@test "completion (zsh): typed in zsh, mq TOOL completes the tool's options" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	mkdir -p "$BATS_TEST_TMPDIR/zfunc"
	cp "$comp_zsh" "$BATS_TEST_TMPDIR/zfunc/_mq"
	run -0 zsh_tab_shows "mq send --t" "mq send --ttl"
	run -0 zsh_tab_shows "mq recv -" "run up to n jobs at once"
	run -0 zsh_tab_shows "mq st" "mq stat"
}

@test "completion (bash): mq-dlq redrive offers --to and spools after it; mq-show and mq-dlq offer -0, mq-show no -r" {
	run complete_bash mq-dlq redrive --t
	assert_output "--to"
	mkdir -p "$BATS_TEST_TMPDIR/spools/alpha"
	cd "$BATS_TEST_TMPDIR/spools"
	run complete_bash mq-dlq redrive --to al
	assert_output "alpha"
	run complete_bash mq-dlq purge -
	assert_output "$(printf '%s\n' -0 --all --reason --older-than --newer-than)"
	run complete_bash mq-show -
	assert_line -0
	refute_line -r
}
