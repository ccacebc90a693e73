load helper

top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
rules=$top/share/prometheus/mq-alerts.yml
unit=$top/tests/prometheus/mq-alerts.test.yml

setup() {
	command -v promtool >/dev/null || fail "promtool is not installed (sh share/deps.sh)"
}

# The alert names of a rules file ($1), sorted.
alerts_of() {
	sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\) *$/\1/p' "$1" | sort
}

@test "alerting rules: promtool check rules accepts them" {
	run promtool check rules "$rules"
	assert_success
	assert_line "  SUCCESS: 5 rules found"
}

@test "alerting rules: promtool test rules passes their unit tests" {
	run promtool test rules "$unit"
	assert_success
	assert_line "  SUCCESS"
}

@test "alerting rules: each has a severity, a summary and a description naming the spool, and unit tests" {
	assert_equal "$(alerts_of "$rules" | tr '\n' ' ')" \
	    "MqConsumersStuck MqDeadLettersGrowing MqDepthNearLimit MqMetricsStale MqOldestReadyTooOld "
	# (labels, then annotations, under each alert; promtool has checked
	# the rest of the layout)
	run awk '
		/^ *- alert:/ { if (name != "") check(); name = $3; sev = sum = desc = 0; next }
		/^ *severity: (warning|critical)$/ { sev = 1 }
		/^ *summary: .*\{\{ \$labels\.(spool|instance) \}\}/ { sum = 1 }
		/^ *description: .*\{\{ \$labels\.(spool|file) \}\}/ { desc = 1 }
		function check() { if (!sev || !sum || !desc) print name ": severity " sev ", summary " sum ", description " desc }
		END { check() }' "$rules"
	assert_output ""
	# Every alert is seen firing in the unit tests.
	for a in $(alerts_of "$rules"); do
		grep -q "alertname: $a\$" "$unit" || fail "no unit test of $a"
		sed -n "/alertname: $a\$/,/eval_time/p" "$unit" | grep -q 'exp_labels:' ||
		    fail "$a is never expected to fire"
	done
}

# Runs the unit tests on a copy of the rules edited by sed's $1 (none
# when empty), laid out as in the tree; an edit must change the rules.
mutant() {
	mkdir -p "$BATS_TEST_TMPDIR/m/share/prometheus" "$BATS_TEST_TMPDIR/m/tests/prometheus"
	cp "$unit" "$BATS_TEST_TMPDIR/m/tests/prometheus/"
	sed -E "$1" "$rules" >"$BATS_TEST_TMPDIR/m/share/prometheus/mq-alerts.yml"
	[ -z "$1" ] || ! cmp -s "$rules" "$BATS_TEST_TMPDIR/m/share/prometheus/mq-alerts.yml" ||
	    fail "the edit $1 changed nothing"
	promtool check rules "$BATS_TEST_TMPDIR/m/share/prometheus/mq-alerts.yml" >/dev/null ||
	    fail "the edit $1 makes the rules invalid"
	run promtool test rules "$BATS_TEST_TMPDIR/m/tests/prometheus/mq-alerts.test.yml"
}

@test "alerting rules: the unit tests fail when a threshold, a window or an exclusion changes" {
	# An unchanged copy passes: the failures below are the edits'.
	mutant ''
	assert_success
	# Each edit, and the alert whose unit tests it must fail.
	while IFS='|' read -r alert edit; do
		mutant "$edit"
		assert_failure
		assert_output --partial "FAILED:"
		assert_output --partial "alertname: $alert,"
		# and none of the others'
		assert_equal "$(grep -o 'alertname: [A-Za-z]*' <<<"$output" | sort -u)" "alertname: $alert"
	done <<'EDITS'
MqOldestReadyTooOld|s/> 900$/> 1800/
MqOldestReadyTooOld|s/> 900$/>= 900/
MqDeadLettersGrowing|s/mq_dead_total\[1h\]/mq_dead_total[5m]/
MqDeadLettersGrowing|s/increase\(mq_dead_total\[1h\]\) > 0$/increase(mq_dead_total[1h]) >= 0/
MqConsumersStuck|s/mq_acked_total\[15m\]/mq_acked_total[5m]/
MqConsumersStuck|s/\(mq_paused == 0\)/(mq_paused >= 0)/
MqConsumersStuck|s/\(mq_messages\{state="ready"\}\) > 0\)/(mq_messages{state="ready"}) >= 0)/
MqDepthNearLimit|s/ready\|delayed\|blocked/ready|delayed/
MqDepthNearLimit|s/ready\|delayed\|blocked/ready|delayed|blocked|inflight|dead/
MqDepthNearLimit|s/\(mq_max_depth > 0\)/(mq_max_depth >= 0)/
MqDepthNearLimit|s/>= 0\.9$/> 0.9/
MqMetricsStale|s/> 600$/> 1200/
MqMetricsStale|s/mq\[\.\]prom/.*/
EDITS
}

@test "mq-stat(1): names each alert, the expressions the rules use, and where make install puts them" {
	text=$(mandoc -Tascii "$top/share/man/man1/mq-stat.1" | sed 's/.\x08//g')
	alerting=$(sed -n '/^ALERTING$/,/^EXAMPLES$/p' <<<"$text")
	for a in $(alerts_of "$rules"); do
		grep -qE "^ +$a( |\$)" <<<"$alerting" || fail "mq-stat(1) does not list $a"
	done
	# The expressions it quotes are the rules'.
	n=0
	while IFS= read -r e; do
		grep -qF -- "$e" "$rules" || fail "mq-stat(1) quotes $e, which is not in the rules"
		n=$((n + 1))
	done < <(sed -n '/^\.Sh ALERTING$/,/^\.Sh /s/^\.Pq Li \(.*\) ,$/\1/p' "$top/share/man/man1/mq-stat.1")
	[ "$n" -ge 4 ] || fail "mq-stat(1) quotes $n expressions"
	dest=$BATS_TEST_TMPDIR/dest
	make -s -C "$top" install DESTDIR="$dest" >/dev/null
	installed=/usr/local/share/doc/mq/prometheus/mq-alerts.yml
	grep -qF "$installed" <<<"$alerting" || fail "mq-stat(1) does not say $installed"
	run promtool check rules "$dest$installed"
	assert_success
}

@test "alerting rules: every mq_ metric and label value they use is one mq-stat --prometheus prints" {
	echo x | mq-send >/dev/null
	mq-stat --prometheus >"$BATS_TEST_TMPDIR/metrics"
	used=$(grep -oE 'mq_[a-z_]+' "$rules" | sort -u)
	[ -n "$used" ]
	for m in $used; do
		grep -qE "^$m\{" "$BATS_TEST_TMPDIR/metrics" || fail "the rules use $m, which mq-stat --prometheus does not print"
	done
	# The states they match are mq-stat's words.
	for s in $(grep -oE 'state=~?"[^"]*"' "$rules" | sed 's/.*"\(.*\)"/\1/' | tr '|' ' '); do
		grep -qF "state=\"$s\"" "$BATS_TEST_TMPDIR/metrics" || fail "the rules match state $s, which mq-stat does not print"
	done
}
