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

@test "mq-stat --json: counts every state, bytes, and the ages" {
	every_state
	run --separate-stderr mq-stat --json
	assert_success
	[ -z "$stderr" ]
	assert_equal "$(json_field spool)" "$MQ_DIR"
	assert_equal "$(json_field ready)" 4
	assert_equal "$(json_field delayed)" 2
	assert_equal "$(json_field in_flight)" 2
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
	[[ ${lines[0]} =~ ^\ *READY\ +DELAYED\ +IN-FLIGHT\ +EXPIRED\ +DEAD\ +OLDEST-READY\ +OLDEST-DEAD\ +BYTES\ +SPOOL$ ]]
	read -r ready delayed inflight expired dead oready odead bytes spool <<<"${lines[1]}"
	assert_equal "$ready $delayed $inflight $expired $dead $bytes $spool" "4 2 2 1 1 20 $MQ_DIR"
	[[ $oready =~ ^[0-9]+s$ ]]
	[[ $odead =~ ^[0-9]+s$ ]]
}

@test "mq-stat --prometheus: HELP and TYPE once per metric, a sample per state and spool" {
	every_state
	other=$BATS_TEST_TMPDIR/other
	echo z | mq-send -d "$other" >/dev/null
	run mq-stat --prometheus -d "$MQ_DIR" -d "$other"
	assert_success
	for m in mq_messages mq_oldest_ready_age_seconds mq_oldest_dead_age_seconds mq_bytes; do
		assert_equal "$(grep -c "^# HELP $m " <<<"$output")" 1
		assert_equal "$(grep -c "^# TYPE $m gauge$" <<<"$output")" 1
	done
	assert_line "mq_messages{spool=\"$MQ_DIR\",state=\"ready\"} 4"
	assert_line "mq_messages{spool=\"$MQ_DIR\",state=\"delayed\"} 2"
	assert_line "mq_messages{spool=\"$MQ_DIR\",state=\"in_flight\"} 2"
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
	run mq-stat --prometheus -d "$d"
	assert_success
	assert_line "mq_bytes{spool=\"$BATS_TEST_TMPDIR/a\\\"b\\\\c\"} 2"
}

@test "mq-stat: an empty spool counts zero; ages are null, - and 0" {
	mq-send -l </dev/null
	run mq-stat --json
	assert_equal "$(json_field ready)" 0
	assert_equal "$(json_field oldest_ready_age_seconds)" null
	assert_equal "$(json_field oldest_dead_age_seconds)" null
	run mq-stat
	[[ ${lines[1]} =~ ^\ +0\ +0\ +0\ +0\ +0\ +-\ +-\ +0\ +$MQ_DIR$ ]]
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

@test "mq-stat: --json with --prometheus, an operand or an empty -d is a usage error (2)" {
	mq-send -l </dev/null
	run -2 mq-stat --json --prometheus
	run -2 mq-stat extra
	run -2 mq-stat -d ""
}
