load helper

comp_bash="$BATS_TEST_DIRNAME/../share/completions/mq.bash"
comp_zsh="$BATS_TEST_DIRNAME/../share/completions/_mq"
tools="mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm"

# Every option a tool's usage names: bundles such as -0lSv split up.
options_of() {
	"$1" --help | sed -n '/^usage:/,/^[^ u]/p' | grep -E '^(usage:| )' |
	    grep -oE -- '(^|[[ |])(--[a-z-]+|-[a-zA-Z0-9]+)' | sed 's/^[[ |]//' |
	    while read -r o; do
		case $o in
		--*) echo "$o" ;;
		-??*) o=${o#-}; while [ -n "$o" ]; do echo "-${o%"${o#?}"}"; o=${o#?}; done ;;
		*) echo "$o" ;;
		esac
	done | grep -vx -- '--' | sort -u
}

# Runs the bash completion for the words given; prints COMPREPLY.
complete_bash() {
	bash -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_mq
		printf "%s\n" "${COMPREPLY[@]}"' _ "$comp_bash" "$@"
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
	grep -qF -- "'1:message ID:_mq_ids'" "$comp_zsh"
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
	assert_equal "$(echo "$output" | tr '\n' ' ')" "expired ready delayed blocked inflight dead "
	run complete_bash mq-ls -l -s in
	assert_output inflight
	run complete_bash mq-ls --j
	assert_output --json
}

@test "completion (zsh): mq-ls -s offers the states" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	grep -qF -- "'*-s[only this state]:state:(expired ready delayed blocked inflight dead)'" "$comp_zsh"
}

@test "completion (zsh): mq-send -p offers the priorities 0 to 9" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	grep -qF -- "'-p[priority, higher claimed first]:priority:(0 1 2 3 4 5 6 7 8 9)'" "$comp_zsh"
}

@test "completion (bash): mq-conf's keys, and the words of overflow and paused" {
	run complete_bash mq-conf max-d
	assert_output "max-depth="
	run complete_bash mq-conf ""
	assert_equal "$(echo "$output" | wc -l)" 7
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
	assert_equal "$(head -n 1 "$comp_zsh")" "#compdef $tools"
	for t in $tools; do
		for o in $(options_of "$t"); do
			grep -qE -- "['{,)*]${o}[[(]" "$comp_zsh" || grep -qE -- "['{]${o}[,}]" "$comp_zsh" ||
			    { echo "$t: $o is not in _mq"; false; }
		done
	done
}
