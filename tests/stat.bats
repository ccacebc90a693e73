load helper

# A spool with messages in every state: 4 ready (one of them 3 bytes),
# 2 delayed, 2 in flight, 1 expired, 1 dead.
every_state() {
	printf '1\n2\n3\nabc\n' | mq-send -l >/dev/null
	printf 'd1\nd2\n' | mq-send -l -D 600 >/dev/null
	printf 'f1\nf2\nx1\ndead\n' | mq-send -l >/dev/null
	# Claim the 8 that are due, put the first 4 back, keep f1 and f2,
	# let x1's lease run out and dead-letter the last.
	mq-recv -n 8 -t 600 >"$BATS_TEST_TMPDIR/r"
	head -n 4 "$BATS_TEST_TMPDIR/r" | mq-ack -r
	mq-ack -e 0.001 "$(sed -n 7p "$BATS_TEST_TMPDIR/r")" >/dev/null
	mq-ack -x broken "$(sed -n 8p "$BATS_TEST_TMPDIR/r")"
	sleep 0.05
}

json_field() { # field: from $output, one JSON object
	python3 -c 'import json, sys; v = json.loads(sys.argv[1])[sys.argv[2]]; print("null" if v is None else v)' "$output" "$1"
}

@test "mq-stat -b --json: counts every state, bytes, and the ages" {
	every_state
	run --separate-stderr mq-stat -b --json
	assert_success
	[ -z "$stderr" ]
	assert_equal "$(json_field spool)" "$MQ_DIR"
	assert_equal "$(json_field ready)" 4
	assert_equal "$(json_field delayed)" 2
	assert_equal "$(json_field inflight)" 2
	assert_equal "$(json_field blocked)" 0
	assert_equal "$(json_field expired)" 1
	assert_equal "$(json_field dead)" 1
	# 1 2 3 abc d1 d2 f1 f2 x1 dead: 20 bytes
	assert_equal "$(json_field bytes)" 20
	age=$(json_field oldest_ready_age_seconds)
	python3 -c "import sys; a = float(sys.argv[1]); sys.exit(not 0 < a < 60)" "$age"
	[ "$(json_field oldest_dead_age_seconds)" != null ]
}

@test "mq-stat: counting moves nothing" {
	every_state
	before=$(cd "$MQ_DIR" && find . | sort)
	mq-stat >/dev/null
	mq-stat --json >/dev/null
	mq-stat --prometheus >/dev/null
	assert_equal "$(cd "$MQ_DIR" && find . | sort)" "$before"
}

@test "mq-stat: the table has a header and a line per spool, the path last" {
	every_state
	run mq-stat
	assert_success
	assert_equal "${#lines[@]}" 2
	[[ ${lines[0]} =~ ^\ *READY\ +DELAYED\ +BLOCKED\ +INFLIGHT\ +EXPIRED\ +DEAD\ +OLDEST-READY\ +OLDEST-DEAD\ +SETTINGS\ +SPOOL$ ]]
	read -r ready delayed blocked inflight expired dead oready odead settings spool <<<"${lines[1]}"
	assert_equal "$ready $delayed $blocked $inflight $expired $dead $settings $spool" "4 2 0 2 1 1 - $MQ_DIR"
	[[ $oready =~ ^[0-9]+s$ ]]
	[[ $odead =~ ^[0-9]+s$ ]]
}

@test "mq-stat -b: the table has a BYTES column before the settings" {
	every_state
	run mq-stat -b
	assert_success
	assert_equal "${#lines[@]}" 2
	[[ ${lines[0]} =~ ^\ *READY\ +DELAYED\ +BLOCKED\ +INFLIGHT\ +EXPIRED\ +DEAD\ +OLDEST-READY\ +OLDEST-DEAD\ +BYTES\ +SETTINGS\ +SPOOL$ ]]
	read -r ready delayed blocked inflight expired dead oready odead bytes settings spool <<<"${lines[1]}"
	assert_equal "$ready $delayed $blocked $inflight $expired $dead $bytes $settings $spool" "4 2 0 2 1 1 20 - $MQ_DIR"
}

@test "mq-stat: without -b no bytes are printed and no message is stat'ed" {
	seq 1 50 | mq-send -l >/dev/null
	mq-recv -n 10 -t 600 >/dev/null
	run mq-stat --json
	assert_success
	assert_equal "$(json_field ready)" 40
	assert_equal "$(json_field bytes 2>/dev/null || echo absent)" absent
	run mq-stat --prometheus
	refute_line --partial mq_bytes
	# One stat a message with -b; without it fewer than one a message
	# (the spool's own directories and files).  The program itself, not
	# the valgrind wrapper of make check-valgrind.
	command -v strace >/dev/null || skip "strace is not installed"
	stats() {
		ASAN_OPTIONS=detect_leaks=0 strace -f -c -e trace=stat,lstat,fstat,newfstatat,statx -o "$BATS_TEST_TMPDIR/st" \
		    "$BATS_TEST_DIRNAME/../bin/mq-stat" "$@" >/dev/null
		awk '$NF ~ /stat/ { n += $4 } END { print n + 0 }' "$BATS_TEST_TMPDIR/st"
	}
	with=$(stats -b)
	without=$(stats)
	[ $((with - without)) -ge 50 ] || fail "-b: $with stats, without: $without"
	[ "$without" -lt 50 ] || fail "without -b: $without stats for 50 messages"
}

@test "mq-stat --prometheus: HELP and TYPE once per metric, a sample per state and spool" {
	every_state
	other=$BATS_TEST_TMPDIR/other
	echo z | mq-send -d "$other" >/dev/null
	run mq-stat -b --prometheus -d "$MQ_DIR" -d "$other"
	assert_success
	for m in mq_messages mq_oldest_ready_age_seconds mq_oldest_dead_age_seconds mq_bytes; do
		assert_equal "$(grep -c "^# HELP $m " <<<"$output")" 1
		assert_equal "$(grep -c "^# TYPE $m gauge$" <<<"$output")" 1
	done
	assert_line "mq_messages{spool=\"$MQ_DIR\",state=\"ready\"} 4"
	assert_line "mq_messages{spool=\"$MQ_DIR\",state=\"delayed\"} 2"
	assert_line "mq_messages{spool=\"$MQ_DIR\",state=\"inflight\"} 2"
	assert_line "mq_messages{spool=\"$MQ_DIR\",state=\"expired\"} 1"
	assert_line "mq_messages{spool=\"$MQ_DIR\",state=\"dead\"} 1"
	assert_line "mq_messages{spool=\"$other\",state=\"ready\"} 1"
	assert_line "mq_oldest_dead_age_seconds{spool=\"$other\"} 0.000"
	assert_line "mq_bytes{spool=\"$MQ_DIR\"} 20"
	# Every sample line is NAME{LABELS} VALUE.
	bad=$(grep -v '^#' <<<"$output" | grep -Ev '^[a-z_]+\{[^}]*\} [0-9.]+$' || true)
	assert_equal "$bad" ""
}

@test "mq-stat --prometheus: a quote or backslash in a spool's path is escaped in its label" {
	d=$BATS_TEST_TMPDIR/a\"b\\c
	echo x | mq-send -d "$d" >/dev/null
	run mq-stat -b --prometheus -d "$d"
	assert_success
	assert_line "mq_bytes{spool=\"$BATS_TEST_TMPDIR/a\\\"b\\\\c\"} 2"
}

@test "mq-stat: an empty spool counts zero; ages are null, - and 0" {
	mq-send -l </dev/null
	run mq-stat --json
	assert_equal "$(json_field ready)" 0
	assert_equal "$(json_field oldest_ready_age_seconds)" null
	assert_equal "$(json_field oldest_dead_age_seconds)" null
	run mq-stat -b
	[[ ${lines[1]} =~ ^\ +0\ +0\ +0\ +0\ +0\ +0\ +-\ +-\ +0\ +-\ +$MQ_DIR$ ]]
	run mq-stat
	[[ ${lines[1]} =~ ^\ +0\ +0\ +0\ +0\ +0\ +0\ +-\ +-\ +-\ +$MQ_DIR$ ]]
	run mq-stat --prometheus
	assert_line "mq_oldest_ready_age_seconds{spool=\"$MQ_DIR\"} 0.000"
}

@test "mq-stat: foreign names are not counted" {
	echo x | mq-send >/dev/null
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	touch "$leaf/.hidden" "$leaf/junk~" "$MQ_DIR/cur/notabucket" "$MQ_DIR/dead/junk"
	mkfifo "$leaf/$(basename "$(find "$MQ_DIR/new" -type f -name '*,0')" ,0)x,0"
	run mq-stat --json
	assert_equal "$(json_field ready)" 1
	assert_equal "$(json_field dead)" 0
}

@test "mq-stat: a missing spool is an error (4) naming it; the others are still printed" {
	echo x | mq-send >/dev/null
	run -4 --separate-stderr mq-stat --json -d "$MQ_DIR" -d "$BATS_TEST_TMPDIR/none"
	[[ $stderr == "mq-stat: $BATS_TEST_TMPDIR/none: "* ]]
	assert_equal "$(json_field ready)" 1
	mkdir "$BATS_TEST_TMPDIR/plain"
	run -4 --separate-stderr mq-stat -d "$BATS_TEST_TMPDIR/plain"
	[[ $stderr == *"not a spool"* ]]
}

@test "mq-stat: --json with --prometheus or an empty -d is a usage error (2)" {
	mq-send -l </dev/null
	run -2 mq-stat --json --prometheus
	run -2 mq-stat -d ""
}

@test "mq-stat: the settings that differ from the defaults, paused first, in the table" {
	echo x | mq-send >/dev/null
	other=$BATS_TEST_TMPDIR/other
	mq-send -l -d "$other" </dev/null
	mq-conf max-depth=100 lease=2.5 paused=yes
	run --separate-stderr mq-stat -d "$MQ_DIR" -d "$other"
	assert_success
	assert_equal "${#lines[@]}" 3
	read -r ready _ _ _ _ _ _ _ settings spool <<<"${lines[1]}"
	assert_equal "$ready $settings $spool" "1 paused=yes,lease=2.5,max-depth=100 $MQ_DIR"
	read -r ready _ _ _ _ _ _ _ settings spool <<<"${lines[2]}"
	assert_equal "$ready $settings $spool" "0 - $other"
	# The column is as wide as its widest value: the paths line up.
	assert_equal "$(( ${#lines[1]} - ${#MQ_DIR} ))" "$(( ${#lines[2]} - ${#other} ))"
	# Set back to its default, a key is not shown.
	mq-conf paused=no max-depth= lease=30
	run mq-stat
	read -r _ _ _ _ _ _ _ _ settings _ <<<"${lines[1]}"
	assert_equal "$settings" -
}

@test "mq-stat --json: a settings object, with mq-conf's keys and values as set" {
	echo x | mq-send >/dev/null
	run mq-stat --json
	assert_equal "$(python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1])["settings"]))' "$output")" "{}"
	mq-conf max-attempts=3 lease=1.50 max-depth=10 overflow=drop-oldest ttl=60 paused=yes dedup-window=5 \
	    log-size=1M log-age=2d keep-output=1h once-window=3d
	run --separate-stderr mq-stat --json
	assert_success
	got=$(python3 -c 'import json, sys
s = json.loads(sys.argv[1])["settings"]
print("\n".join("%s=%s" % (k, v) for k, v in sorted(s.items())))
assert all(isinstance(v, str) for v in s.values())' "$output")
	assert_equal "$got" "$(mq-conf | grep -v '^$' | sort)"
	assert_equal "$(json_field ready)" 1
}

@test "mq-stat --prometheus: mq_paused and mq_max_depth gauges per spool" {
	echo x | mq-send >/dev/null
	other=$BATS_TEST_TMPDIR/other
	mq-send -l -d "$other" </dev/null
	mq-conf paused=yes max-depth=250
	run --separate-stderr mq-stat --prometheus -d "$MQ_DIR" -d "$other"
	assert_success
	for m in mq_paused mq_max_depth; do
		assert_equal "$(grep -c "^# HELP $m " <<<"$output")" 1
		assert_equal "$(grep -c "^# TYPE $m gauge$" <<<"$output")" 1
	done
	assert_line "mq_paused{spool=\"$MQ_DIR\"} 1"
	assert_line "mq_max_depth{spool=\"$MQ_DIR\"} 250"
	assert_line "mq_paused{spool=\"$other\"} 0"
	assert_line "mq_max_depth{spool=\"$other\"} 0"
	# HELP and TYPE come right before the samples of their metric.
	n=0
	while read -r hash word name _; do
		case "$hash $word" in
		"# HELP") help=$name ;;
		"# TYPE") assert_equal "$name" "$help"; cur=$name ;;
		*) assert_equal "${hash%%\{*}" "$cur" ;;
		esac
		n=$((n + 1))
	done <<<"$output"
	assert_equal "$n" "${#lines[@]}"
	bad=$(grep -v '^#' <<<"$output" | grep -Ev '^[a-z_]+\{[^}]*\} [0-9.]+$' || true)
	assert_equal "$bad" ""
}

@test "mq-stat: a spool whose conf does not parse is an error (4) naming it; the others are still printed" {
	echo x | mq-send >/dev/null
	other=$BATS_TEST_TMPDIR/other
	echo y | mq-send -d "$other" >/dev/null
	echo 'paused=maybe' >"$other/conf"
	run -4 --separate-stderr mq-stat --json -d "$MQ_DIR" -d "$other"
	assert_equal "$stderr" "mq-stat: $other/conf: line 1: not yes/no, true/false, on/off, 1/0, a duration or a time (2026-12-05T08:00:00Z)"
	assert_equal "$(json_field spool)" "$MQ_DIR"
}

@test "mq-stat --prometheus: promtool check metrics accepts it, with settings and several spools" {
	command -v promtool >/dev/null || fail "promtool is not installed (sh share/deps.sh)"
	other=$BATS_TEST_TMPDIR/other
	seq 1 3 | mq-send -l >/dev/null
	mq-conf max-depth=100 paused=yes
	echo x | mq-send -d "$other" >/dev/null
	mq-ack -d "$other" -x 'bad "input"' "$(mq-recv -d "$other")"
	mq-stat --prometheus -d "$MQ_DIR" -d "$other" >"$BATS_TEST_TMPDIR/metrics"
	run promtool check metrics <"$BATS_TEST_TMPDIR/metrics"
	assert_success
	grep -q "^mq_paused{spool=\"$MQ_DIR\"} 1$" "$BATS_TEST_TMPDIR/metrics"
	grep -q "^mq_max_depth{spool=\"$other\"} 0$" "$BATS_TEST_TMPDIR/metrics"
}

# ready_age: the oldest ready message's age, in whole seconds, from
# mq-stat --json run with the clock SECS ahead.
ready_age() {
	run -0 ahead "$1" mq-stat --json
	json_field oldest_ready_age_seconds | cut -d. -f1
}

@test "mq-stat: the oldest ready age counts from a redrive, not from the first send" {
	echo m | mq-send >/dev/null
	r=$(mq-recv)
	mq-ack -x bad "$r"
	ahead 3600 mq-dlq redrive --all
	# Redriven an hour after its send, it has been ready for seconds.
	[ "$(ready_age 3600)" -lt 60 ]
	# And it ages from there.
	[ "$(ready_age 3700)" -ge 100 ]
}

@test "mq-stat: the oldest ready age counts from a release, and from the end of its delay" {
	echo m | mq-send >/dev/null
	r=$(ahead 3600 mq-recv)
	ahead 3600 mq-ack -r "$r"
	[ "$(ready_age 3600)" -lt 60 ]
	r=$(ahead 3600 mq-recv)
	ahead 3600 mq-ack -r 600 "$r"
	run -0 ahead 3600 mq-stat --json
	[ "$(json_field ready)" = 0 ]
	# Due at 4200 s: at 4300 s it has been ready for about 100 s.
	age=$(ready_age 4300)
	[ "$age" -ge 95 ] && [ "$age" -lt 160 ]
	echo d | mq-send -D 600 >/dev/null
	mq-rm --all
	echo d | mq-send -D 600 >/dev/null
	age=$(ready_age 700)
	[ "$age" -ge 95 ] && [ "$age" -lt 160 ]
}

@test "mq-stat: a message that never left new/ is as old as its send" {
	echo m | mq-send >/dev/null
	age=$(ready_age 3600)
	[ "$age" -ge 3600 ] && [ "$age" -lt 3660 ]
}

@test "mq-stat: the members of an ordered group waiting their turn have a BLOCKED column, not counted as delayed" {
	printf 'a\nb\nc\n' | mq-send -l -g G >/dev/null
	echo later | mq-send -D 600 >/dev/null
	run -0 mq-stat
	read -r ready delayed blocked inflight _ <<<"${lines[1]}"
	assert_equal "$ready $delayed $blocked $inflight" "1 1 2 0"
	run -0 mq-stat --json
	assert_equal "$(json_field blocked) $(json_field delayed)" "2 1"
}

@test "mq-stat DIR ...: spools as operands, as with -d" {
	echo a | mq-send >/dev/null
	other=$BATS_TEST_TMPDIR/other
	printf 'x\ny\n' | mq-send -l -d "$other" >/dev/null
	run -0 mq-stat "$MQ_DIR" "$other"
	assert_equal "${#lines[@]}" 3
	assert_equal "$(awk 'NR > 1 { print $1, $NF }' <<<"$output")" "$(printf '1 %s\n2 %s' "$MQ_DIR" "$other")"
	run -0 mq-stat -d "$MQ_DIR" --json "$other"
	assert_equal "${#lines[@]}" 2
	run -4 --separate-stderr mq-stat "$BATS_TEST_TMPDIR/none"
	[[ $stderr == *"none: No such file or directory"* ]] || fail "$stderr"
	run -2 mq-stat ""
}

@test "mq-stat -v: says on stderr each spool counted, where its name came from and its total; stdout as without -v" {
	printf 'a\nb\n' | mq-send -l >/dev/null
	other=$BATS_TEST_TMPDIR/other
	echo x | mq-send -d "$other" >/dev/null
	run -0 --separate-stderr mq-stat -v --prometheus
	assert_equal "$stderr" "mq-stat: $MQ_DIR (from \$MQ_DIR): 2 messages"
	assert_equal "$(grep -v _age_ <<<"$output")" "$(mq-stat --prometheus | grep -v _age_)"
	run -0 --separate-stderr mq-stat -v -d "$other" "$MQ_DIR"
	assert_equal "$stderr" "$(printf 'mq-stat: %s (from -d): 1 message\nmq-stat: %s (from an operand): 2 messages' "$other" "$MQ_DIR")"
	xdg=$BATS_TEST_TMPDIR/xdg
	echo y | env MQ_DIR= XDG_STATE_HOME="$xdg" mq-send >/dev/null
	run -0 --separate-stderr env MQ_DIR= XDG_STATE_HOME="$xdg" mq-stat -v
	assert_equal "$stderr" "mq-stat: $xdg/mq (from \$XDG_STATE_HOME): 1 message"
}

# The counters of the spool ($1, default $MQ_DIR) as "NAME=N" words in
# mq-stat --json's order, the deaths as dead.CAUSE=N.
counters() {
	mq-stat --json -d "${1:-$MQ_DIR}" | python3 -c '
import json, sys
c = json.load(sys.stdin)["counters"]
print(" ".join(["%s=%d" % (k, v) for k, v in c.items() if k != "dead"] +
    ["dead.%s=%d" % (k, v) for k, v in c["dead"].items()]))'
}

# A known history: every transition counted once, in the spool it was made
# in.  Left: j and d ready; g2 (ttl) and h (maxlen) dead.
known_history() {
	printf 'a\nb\nc\nd\n' | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	mq-recv -n 4 >"$BATS_TEST_TMPDIR/r"
	mq-ack "$(sed -n 1p "$BATS_TEST_TMPDIR/r")" "$(sed -n 2p "$BATS_TEST_TMPDIR/r")"
	mq-ack -r --reason 'try later' "$(sed -n 3p "$BATS_TEST_TMPDIR/r")"
	mq-ack -x 'bad input' "$(sed -n 4p "$BATS_TEST_TMPDIR/r")"
	mq-ack "$(mq-recv)"
	# A job's exit 65: rejected.
	e=$(echo e | mq-send)
	run -5 mq-recv -- sh -c 'exit 65'
	# A job failing its 2 attempts: released once, then dead for attempts.
	f=$(echo f | mq-send)
	run -5 timeout 30 mq-recv -m 2 --backoff 0.001 -w 1 -- false
	# Past the ttl: buried by the sweep, and by a claim.
	mq-conf ttl=10
	g=$(echo g | mq-send)
	ahead 30 mq-sweep
	echo g2 | mq-send >/dev/null
	run -1 ahead 30 mq-recv
	mq-conf ttl=
	# A dedup hit sends nothing.
	echo g2 | mq-send -k K >/dev/null
	echo g2 | mq-send -k K >/dev/null
	mq-ack "$(mq-recv)"
	# Over max-depth 2, the oldest of h i j is dropped.
	mq-conf max-depth=2 overflow=drop-oldest
	printf 'h\ni\nj\n' | mq-send -l >"$BATS_TEST_TMPDIR/hij"
	mq-conf max-depth= overflow=
	d=$(sed -n 4p "$BATS_TEST_TMPDIR/ids")
	mq-dlq redrive "$d" 2>/dev/null
	mq-dlq redrive --to "$BATS_TEST_TMPDIR/other" "$e" 2>/dev/null
	mq-dlq purge "$f" 2>/dev/null
	# A dead letter removed is purged; i is removed while it waits.
	mq-rm "$g"
	mq-rm "$(sed -n 2p "$BATS_TEST_TMPDIR/hij")"
}

@test "mq-stat --json: the counters count each transition once: sends, claims, acks, releases, deaths by cause, redrives, removals" {
	known_history
	run -0 counters
	assert_output "sent=12 claimed=9 acked=4 released=2 redriven=2 removed=3 dead.attempts=1 dead.rejected=2 dead.ttl=2 dead.maxlen=1"
	# The spool redriven into counts a send, and nothing else.
	run -0 counters "$BATS_TEST_TMPDIR/other"
	assert_output "sent=1 claimed=0 acked=0 released=0 redriven=0 removed=0 dead.attempts=0 dead.rejected=0 dead.ttl=0 dead.maxlen=0"
	# What entered is acked, removed, still here (alive or dead), or was
	# redriven away: 12 = 4 + 3 + 2 + 2 + 1.
	run -0 mq-stat --json
	python3 -c '
import json, sys
s = json.loads(sys.argv[1])
c = s["counters"]
live = sum(s[k] for k in ("ready", "delayed", "blocked", "inflight", "expired"))
assert (live, s["dead"]) == (2, 2), (live, s["dead"])
away = 1
assert c["sent"] == c["acked"] + c["removed"] + live + s["dead"] + away, s
# And each death is a dead letter still here, redriven or purged.
purged = 2
assert sum(c["dead"].values()) == s["dead"] + c["redriven"] + purged, s
' "$output"
}

@test "mq-stat: a fresh spool's counters are all zero" {
	mq-send -l </dev/null
	run -0 counters
	assert_output "sent=0 claimed=0 acked=0 released=0 redriven=0 removed=0 dead.attempts=0 dead.rejected=0 dead.ttl=0 dead.maxlen=0"
}

@test "mq-stat --prometheus: the counters as _total counters with the values of --json, and promtool accepts them" {
	command -v promtool >/dev/null || fail "promtool is not installed (sh share/deps.sh)"
	known_history
	mq-stat --prometheus -d "$MQ_DIR" -d "$BATS_TEST_TMPDIR/other" >"$BATS_TEST_TMPDIR/metrics"
	run promtool check metrics <"$BATS_TEST_TMPDIR/metrics"
	assert_success
	run cat "$BATS_TEST_TMPDIR/metrics"
	for m in sent claimed acked released redriven removed dead; do
		assert_equal "$(grep -c "^# HELP mq_${m}_total " <<<"$output")" 1
		assert_equal "$(grep -c "^# TYPE mq_${m}_total counter$" <<<"$output")" 1
	done
	other=$BATS_TEST_TMPDIR/other
	for v in sent=12 claimed=9 acked=4 released=2 redriven=2 removed=3; do
		assert_line "mq_${v%=*}_total{spool=\"$MQ_DIR\"} ${v#*=}"
	done
	for v in attempts=1 rejected=2 ttl=2 maxlen=1; do
		assert_line "mq_dead_total{spool=\"$MQ_DIR\",cause=\"${v%=*}\"} ${v#*=}"
		assert_line "mq_dead_total{spool=\"$other\",cause=\"${v%=*}\"} 0"
	done
	assert_line "mq_sent_total{spool=\"$other\"} 1"
	assert_line "mq_acked_total{spool=\"$other\"} 0"
}

@test "mq-stat: counters are exact and never go backwards under concurrent senders and claimers" {
	mq-send -l </dev/null
	t=$BATS_TEST_TMPDIR
	end=$((SECONDS + 120))
	busy_begin 20
	# Samples of the counters while they move.
	(
		while [ ! -e "$t/claimed" ] && [ $SECONDS -lt "$end" ]; do
			mq-stat --json | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["counters"]))'
		done
	) >"$t/samples" &
	s=$!
	busy_end
	touch "$t/claimed"
	wait "$s"
	assert_equal "$(cat "$t"/ids.* | sort -u | wc -l)" 2000
	run -0 counters
	assert_output "sent=2000 claimed=2000 acked=2000 released=0 redriven=0 removed=0 dead.attempts=0 dead.rejected=0 dead.ttl=0 dead.maxlen=0"
	run -0 mq-stat --json
	assert_equal "$(json_field ready) $(json_field inflight)" "0 0"
	# Every counter, sample after sample, only grew.
	python3 -c '
import json, sys
prev, n = None, 0
for line in open(sys.argv[1]):
    c = json.loads(line)
    flat = dict(c, **{"dead." + k: v for k, v in c.pop("dead").items()})
    if prev is not None:
        back = [k for k in flat if flat[k] < prev[k]]
        assert not back, "went back: %s: %s then %s" % (back, prev, flat)
    prev, n = flat, n + 1
assert n >= 2, "%d samples" % n
' "$t/samples"
}

@test "mq-stat -i: a table each round, with the rates of the counters over the last interval; - in the first" {
	seq 1 3 | mq-send -l >/dev/null
	# Rounds every 0.5 s; 200 sends land between the first two.
	mq-stat -i 0.5 >"$BATS_TEST_TMPDIR/rounds" &
	pid=$!
	for _ in $(seq 50); do [ -s "$BATS_TEST_TMPDIR/rounds" ] && break; sleep 0.1; done
	seq 1 200 | mq-send -l >/dev/null
	for _ in $(seq 50); do [ "$(grep -c '^ *READY' "$BATS_TEST_TMPDIR/rounds")" -ge 3 ] && break; sleep 0.1; done
	kill "$pid"
	wait "$pid" || true
	run grep -c '^ *READY' "$BATS_TEST_TMPDIR/rounds"
	[ "$output" -ge 3 ] || fail "$(cat "$BATS_TEST_TMPDIR/rounds")"
	# The header names the rates before the settings.
	run -0 sed -n 1p "$BATS_TEST_TMPDIR/rounds"
	[[ $output == *" SENT/S CLAIMED/S ACKED/S RELEASED/S DEAD/S  SETTINGS  SPOOL" ]] || fail "$output"
	# The first round has no rate; the sends show in a later one, and
	# nothing else moved.
	read -r _ _ _ _ _ _ _ _ sent _ <<<"$(sed -n 2p "$BATS_TEST_TMPDIR/rounds")"
	assert_equal "$sent" -
	awk '/^ *READY/ { next } NR > 2 { if ($9 > 0) seen++; if ($10 + $11 + $12 + $13 != 0) bad++ }
	    END { exit !(seen >= 1 && !bad) }' \
	    "$BATS_TEST_TMPDIR/rounds" || fail "$(cat "$BATS_TEST_TMPDIR/rounds")"
}

@test "mq-stat -i: a bad interval is a usage error (2); with --json each round prints its lines" {
	run -2 mq-stat -i 0
	run -2 mq-stat -i x
	run -2 mq-stat -i -1
	echo x | mq-send >/dev/null
	mq-stat -i 0.2 --json >"$BATS_TEST_TMPDIR/j" &
	pid=$!
	for _ in $(seq 50); do [ "$(wc -l <"$BATS_TEST_TMPDIR/j")" -ge 2 ] && break; sleep 0.1; done
	kill "$pid"
	wait "$pid" || true
	[ "$(wc -l <"$BATS_TEST_TMPDIR/j")" -ge 2 ]
	head -n 2 "$BATS_TEST_TMPDIR/j" | python3 -c '
import json, sys
for l in sys.stdin:
    assert json.loads(l)["counters"]["sent"] == 1, l'
}
