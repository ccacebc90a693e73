load helper

# mq-top: -b frames as text; on a real terminal (tmux), the screen, the
# keys and the terminal given back.

# A tmux server a test started and left, when it failed; a worker too.
teardown() {
	[ ! -S "$BATS_TEST_TMPDIR/tmux" ] || tmux -S "$BATS_TEST_TMPDIR/tmux" kill-server 2>/dev/null || true
	if [ -n "${worker:-}" ]; then
		kill -KILL "$worker" 2>/dev/null || true
		wait "$worker" 2>/dev/null || true
	fi
}

tm() {
	tmux -S "$BATS_TEST_TMPDIR/tmux" "$@"
}

# The screen of the session, as text (-e: with its escapes).
screen() {
	tm capture-pane -p "$@" -t top
}

# Waits (at most 10 s) until the screen has a line matching $1 (grep
# -E); fails saying what it shows otherwise.
await() {
	local i
	for ((i = 0; i < 200; i++)); do
		screen | grep -qE -- "$1" && return 0
		sleep 0.05
	done
	fail "no line matching '$1' on the screen: $(screen)"
}

# mq-top on a terminal of 80x24 in a tmux session "top", its pid in
# $BATS_TEST_TMPDIR/pid, "exit STATUS" printed when it ends and the
# terminal's modes (stty -a) before it and after it in before and after;
# $1: the environment (env words), the rest: mq-top's arguments.
top_in_tmux() {
	command -v tmux >/dev/null || fail "tmux is not installed"
	local envs=$1
	shift
	cat >"$BATS_TEST_TMPDIR/run.sh" <<-EOF
		stty -a >"$BATS_TEST_TMPDIR/before"
		echo "before mq-top"
		sh -c 'echo \$\$ >"$BATS_TEST_TMPDIR/pid"; exec mq-top "\$@"' mq-top $*
		echo "exit \$?"
		stty -a >"$BATS_TEST_TMPDIR/after"
		sleep 60
	EOF
	tm new-session -d -s top -x 80 -y 24 \
	    "env PATH='$PATH' MQ_DIR='$MQ_DIR' $envs sh '$BATS_TEST_TMPDIR/run.sh'"
}

# After mq-top: the shell's line, the modes as before, the normal screen
# with the cursor shown.
assert_given_back() {
	await "^exit $1\$"
	screen | grep -qx "before mq-top" || fail "the screen before mq-top is not back: $(screen)"
	local i
	for ((i = 0; i < 100; i++)); do
		[ -s "$BATS_TEST_TMPDIR/after" ] && break
		sleep 0.05
	done
	assert_equal "$(cat "$BATS_TEST_TMPDIR/after")" "$(cat "$BATS_TEST_TMPDIR/before")"
	assert_equal "$(tm display-message -p -t top '#{alternate_on}')" 0
	assert_equal "$(tm display-message -p -t top '#{cursor_flag}')" 1
}

# A spool with some of everything: 2 in flight (a worker's jobs), a
# retry waiting (delayed, attempt 1), a dead letter (rejected), 3 ready.
busy_spool() {
	printf '%s\n' a b c d e f g | mq-send -l >/dev/null
	mq-ack -x "bad input" "$(mq-recv)"
	mq-ack -r 600 "$(mq-recv)"
	# The worker's output and bats' own descriptors elsewhere: its jobs
	# must not hold the test's output open.
	mq-recv -w -P 2 -- sleep 30 >/dev/null 2>&1 3>&- &
	worker=$!
	local i
	for ((i = 0; i < 200; i++)); do
		[[ $(mq-stat --json) == *'"inflight":2,'* ]] && return 0
		sleep 0.05
	done
	fail "the worker claimed nothing: $(mq-stat)"
}

# A number of mq-stat --json ($1: its output) by key ($2).
json_number() {
	grep -oE "\"$2\":[0-9]+" <<<"$1" | head -n 1 | cut -d: -f2
}

@test "mq-top -b -n 2: two frames of plain text, a blank line between, exit 0" {
	echo hi | mq-send >/dev/null
	run -0 --separate-stderr mq-top -b -n 2 -i 0.1
	assert_equal "$(grep -c '^mq-top  ' <<<"$output")" 2
	assert_equal "$stderr" ""
	# No escape sequence, no control character but the newlines.
	! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' <<<"$output" || fail "$output"
	# The first frame has no rates yet; the second has them.
	assert_equal "$(grep -c '  in -/s  out -/s  to dead -/s' <<<"$output")" 1
	assert_equal "$(grep -cE '  in [0-9]+\.[0-9]/s  out [0-9]+\.[0-9]/s  to dead [0-9]+\.[0-9]/s' <<<"$output")" 1
	# Frames apart: the second begins after a blank line.
	assert_equal "$(grep -B1 '^mq-top  ' <<<"$output" | sed -n 3p)" ""
}

@test "mq-top -b: the counts, depth, dead letters by cause and in-flight rows are mq-stat's and mq-ls's" {
	busy_spool
	mq-conf max-depth=10 >/dev/null
	stat=$(mq-stat --json)
	run -0 --separate-stderr mq-top -b -n 1
	for k in ready delayed inflight expired blocked; do
		grep -qE "  $k $(json_number "$stat" "$k")( |\$)" <<<"$output" || fail "$k: $stat; $output"
	done
	grep -qE "  dead letters $(json_number "$stat" dead)  died of attempts 0 rejected 1 ttl 0 maxlen 0\$" <<<"$output" || fail "$output"
	waiting=$(($(json_number "$stat" ready) + $(json_number "$stat" delayed)))
	grep -qF "  depth $waiting/10 ($((waiting * 10))%)  paused no  oldest ready " <<<"$output" || fail "$output"
	# Each message in flight a row: its ID (cut to 34 columns at 80),
	# attempt 1 of 5, running for, lease left, its holder as mq-ls -l
	# names it.
	mq-ls -l -s inflight | cut -f 1,8 | while IFS=$'\t' read -r id holder; do
		grep -qE "^ ${id:0:34} +1/5 +[0-9]+s +[0-9]+s $holder\$" <<<"$output" || fail "$id $holder: $output"
	done
	assert_equal "$(grep -c '1/5' <<<"$output")" 2
	[ "$(wc -L <<<"$output")" -le 80 ] || fail "$output"
}

@test "mq-top -b: each spool a block of its own, -d and operands alike; a missing one is exit 4 before any frame" {
	echo a | MQ_DIR="$BATS_TEST_TMPDIR/one" mq-send >/dev/null
	printf 'a\nb\n' | MQ_DIR="$BATS_TEST_TMPDIR/two" mq-send -l >/dev/null
	run -0 mq-top -b -n 1 -d "$BATS_TEST_TMPDIR/one" "$BATS_TEST_TMPDIR/two"
	assert_line "$BATS_TEST_TMPDIR/one"
	assert_line "$BATS_TEST_TMPDIR/two"
	assert_equal "$(grep -c '  ready ' <<<"$output")" 2
	grep -q '  ready 2 ' <<<"$output"
	run -4 --separate-stderr mq-top -b -n 1 "$BATS_TEST_TMPDIR/one" "$BATS_TEST_TMPDIR/none"
	assert_output ""
	assert_equal "$stderr" "mq-top: $BATS_TEST_TMPDIR/none: No such file or directory"
}

@test "mq-top without a terminal and without -b: exit 2, saying so" {
	echo a | mq-send >/dev/null
	run -2 --separate-stderr mq-top
	assert_output ""
	assert_equal "$stderr" "mq-top: stdout is not a terminal (-b for frames as text)"
	run -2 --separate-stderr mq-top -b -n 0
	run -2 --separate-stderr mq-top -b -i 0
}

@test "mq-top on a terminal: fits 80x24, q quits with exit 0, the terminal given back" {
	busy_spool
	top_in_tmux "" -i 0.5
	await "^  ready 3 "
	await "^ ID +ATTEMPT +RUNNING +LEFT +HOLDER"
	assert_equal "$(screen | wc -l)" 24
	[ "$(screen | wc -L)" -le 80 ] || fail "$(screen)"
	assert_equal "$(tm display-message -p -t top '#{alternate_on}')" 1
	assert_equal "$(tm display-message -p -t top '#{cursor_flag}')" 0
	screen | tail -n 1 | grep -q '^q quit'
	tm send-keys -t top q
	assert_given_back 0
}

@test "mq-top on a terminal: killed by SIGTERM, the terminal is given back and the status is the signal's" {
	echo a | mq-send >/dev/null
	top_in_tmux "" -i 0.5
	await "^  ready 1 "
	kill -TERM "$(cat "$BATS_TEST_TMPDIR/pid")"
	assert_given_back 143
}

@test "mq-top on a terminal: p asks, y pauses (as mq-conf, logged), n changes nothing, p y resumes" {
	echo a | mq-send >/dev/null
	top_in_tmux "" -i 0.5
	await "^  ready 1 "
	tm send-keys -t top p
	await "^pause $MQ_DIR\\? y/n\$"
	tm send-keys -t top n
	await "^$MQ_DIR: nothing changed\$"
	assert_equal "$(mq-conf paused)" no
	tm send-keys -t top p
	await "^pause $MQ_DIR\\? y/n\$"
	tm send-keys -t top y
	await "^$MQ_DIR  PAUSED\$"
	assert_equal "$(mq-conf paused)" yes
	mq-log --kind conf | grep -q 'set=paused=yes' || fail "$(mq-log)"
	tm send-keys -t top p
	await "^resume $MQ_DIR\\? y/n\$"
	tm send-keys -t top y
	await "^  depth 1 \\(no max-depth\\)  paused no "
	assert_equal "$(mq-conf paused)" no
	tm send-keys -t top q
	assert_given_back 0
}

@test "mq-top on a terminal: s sorts the in-flight list by the next order, / filters it by ID, Esc clears" {
	busy_spool
	top_in_tmux "" -i 0.5
	await "^in flight: 2, by lease left"
	tm send-keys -t top s
	await "^in flight: 2, by running for"
	tm send-keys -t top s
	await "^in flight: 2, by attempt"
	tm send-keys -t top s
	await "^in flight: 2, by ID"
	id=$(mq-ls -s inflight | cut -f 1 | head -n 1)
	other=$(mq-ls -s inflight | cut -f 1 | tail -n 1)
	# The time part of an ID: one sender's IDs differ there.
	tm send-keys -t top / "${id:0:16}" Enter
	await "^in flight: 2, 1 with \"${id:0:16}\" in the ID"
	screen | grep -q "^ ${id:0:34} " || fail "$(screen)"
	! screen | grep -q "^ ${other:0:34} " || fail "$(screen)"
	tm send-keys -t top Escape
	await "^in flight: 2, by ID"
	tm send-keys -t top '?'
	await "^  q +quit"
	tm send-keys -t top x
	await "^in flight: 2"
	tm send-keys -t top q
	assert_given_back 0
}

@test "mq-top on a terminal: resized to 60x20 and back, drawn again at each size, no line longer than the width" {
	busy_spool
	top_in_tmux "" -i 10
	await "^ ID +ATTEMPT"
	tm resize-window -t top -x 60 -y 20
	local i
	for ((i = 0; i < 200; i++)); do
		[ "$(screen | wc -l)" -eq 20 ] && screen | tail -n 1 | grep -q '^q quit' && break
		sleep 0.05
	done
	assert_equal "$(screen | wc -l)" 20
	[ "$(screen | wc -L)" -le 60 ] || fail "$(screen)"
	screen | tail -n 1 | grep -q '^q quit' || fail "$(screen)"
	tm resize-window -t top -x 80 -y 24
	for ((i = 0; i < 200; i++)); do
		screen | grep -qE '^ ID {33}ATTEMPT' && break
		sleep 0.05
	done
	screen | grep -qE '^ ID {33}ATTEMPT' || fail "$(screen)"
	[ "$(screen | wc -L)" -le 80 ] || fail "$(screen)"
	tm send-keys -t top q
	assert_given_back 0
}

@test "mq-top on a terminal: colours with a TERM, none with NO_COLOR or TERM=dumb" {
	echo a | mq-send >/dev/null
	top_in_tmux "" -i 0.5
	await "^  ready 1 "
	[[ $(screen -e) == *$'\e['*m* ]] || fail "no colour: $(screen -e | cat -v)"
	tm send-keys -t top q
	assert_given_back 0
	tm kill-server
	for e in NO_COLOR=1 TERM=dumb; do
		top_in_tmux "$e" -i 0.5
		await "^  ready 1 "
		! screen -e | grep -q $'\e\\[' || fail "$e: $(screen -e | cat -v)"
		tm send-keys -t top q
		assert_given_back 0
		tm kill-server
	done
}

# The README's picture of mq-top is a frame of this spool: its lines the
# same but for numbers, IDs, holders, times, the sparkline and the spool's name.
normalized() {
	sed -E -e 's/[0-9a-f]{16}\.[0-9]+\.[0-9a-f]*/ID/g' \
	    -e 's/[^ ]+@[^ ]+:[0-9]+$/HOLDER/' \
	    -e 's/^  depth [^ ]+  ([0-9]+-[0-9]+ over)/  depth SPARK  \1/' \
	    -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z/TIME/' \
	    -e 's/\b([0-9]+[dhm][0-9]+[hms]|[0-9]+m?s)\b/DUR/g' \
	    -e 's/[0-9]+(\.[0-9]+)?/N/g' -e 's/^\/.*/SPOOL/' -e 's/ +/ /g'
}

@test "README: the picture of mq-top is a frame of a busy spool as mq-top draws it" {
	busy_spool
	mq-conf max-depth=5000 max-attempts=3 >/dev/null
	# The second frame: with rates, and a sparkline of two.
	run -0 env LC_ALL=C.UTF-8 COLUMNS=80 mq-top -b -n 2 -i 0.2
	frame=$(tac <<<"$output" | sed '/^mq-top  /q' | tac)
	readme=$(sed -n '/^## Watching it live/,/^## /p' "$BATS_TEST_DIRNAME/../README.md" |
	    sed -n '/^```text$/,/^```$/p' | sed '1d;$d')
	[ -n "$readme" ] || fail "README.md: no text block under Watching it live"
	assert_equal "$(normalized <<<"$readme")" "$(normalized <<<"$frame")"
	[ "$(wc -L <<<"$readme")" -le 80 ] || fail "$readme"
}

@test "mq-top -b: leaves kept from frame to frame: a changed leaf counted anew, a kept one turns ready when due" {
	seq 1 3000 | mq-send -l >/dev/null
	echo later | mq-send -D 2 >/dev/null
	# Leaves as old as a quiet spool's: each frame may keep their counts.
	find "$MQ_DIR/new" -mindepth 1 -type d -exec touch -d '-1 hour' {} +
	mq-top -b -n 8 -i 0.5 >"$BATS_TEST_TMPDIR/frames" &
	top=$!
	local i
	for ((i = 0; i < 200; i++)); do
		grep -q '^in flight' "$BATS_TEST_TMPDIR/frames" && break
		sleep 0.05
	done
	grep -q '  ready 3000  delayed 1 ' "$BATS_TEST_TMPDIR/frames" || fail "$(cat "$BATS_TEST_TMPDIR/frames")"
	# A claim takes 5 from the oldest leaf: its mtime changes.
	mq-recv -n 5 >/dev/null
	for ((i = 0; i < 200; i++)); do
		kill -0 "$top" 2>/dev/null || break
		sleep 0.05
	done
	wait "$top"
	last=$(tac "$BATS_TEST_TMPDIR/frames" | sed '/^mq-top  /q' | tac)
	grep -q '  ready 2996  delayed 0  inflight 5 ' <<<"$last" || fail "$last"
	[[ $(mq-stat --json) == *'"ready":2996,"delayed":0,'* ]] || fail "$(mq-stat --json)"
}
