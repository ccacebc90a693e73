load helper

@test "man pages: mandoc -Tlint reports nothing" {
	run mandoc -Tlint -Wwarning "$BATS_TEST_DIRNAME"/../share/man/man*/*
	assert_success
	assert_output ""
}

@test "man pages: one per tool, plus mq-spool(5) and mq(7)" {
	for t in mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm mq-relay; do
		assert_file_exist "$BATS_TEST_DIRNAME/../share/man/man1/$t.1"
	done
	assert_file_exist "$BATS_TEST_DIRNAME/../share/man/man5/mq-spool.5"
	assert_file_exist "$BATS_TEST_DIRNAME/../share/man/man7/mq.7"
}

@test "man pages: each has ENVIRONMENT, FILES, EXIT STATUS and EXAMPLES" {
	for page in "$BATS_TEST_DIRNAME"/../share/man/man*/*; do
		for sh in ENVIRONMENT FILES "EXIT STATUS" EXAMPLES; do
			grep -qx ".Sh $sh" "$page" || { echo "${page##*/}: no $sh"; false; }
		done
	done
}

# The rows of mq(7)'s comparison table as its source gives them, one line
# per row, as extended regular expressions: the cells, separated by tabs,
# with any em dash matching what the renderer makes of it.
table_rows() {
	sed -n '/^\.Ss Compared with other queues/,/^\.El/s/^\.It //p' \
	    "$BATS_TEST_DIRNAME/../share/man/man7/mq.7" |
	    sed -E 's/Sy //g; s/ Ta /\t/g; s/\\\(em/@EM@/g' |
	    sed -E 's/[][().*+?^$|\\{}]/\\&/g; s/@EM@/[^ ]+/g'
}

# Each row of the table renders on one line of its own ($1: the page as
# rendered), every cell in its column: a cell too wide for its column
# wraps onto the next line or runs into its neighbour.
check_table() {
	local rendered=$1 row n=0
	while IFS= read -r row; do
		grep -Eq -- "^ +${row//	/  +}\$" <<<"$rendered" ||
		    { echo "row not on one line: $row"; echo "$rendered"; return 1; }
		n=$((n + 1))
	done < <(table_rows)
	assert_equal "$n" 11
}

@test "mq(7): the comparison table renders one row per line with mandoc" {
	check_table "$(mandoc -Tascii "$BATS_TEST_DIRNAME/../share/man/man7/mq.7" |
	    sed 's/.\x08//g' | expand)"
}

@test "mq(7): the comparison table renders one row per line with man at 80 columns" {
	command -v man >/dev/null || skip "man (man-db) is not installed"
	check_table "$(MANWIDTH=80 man -l "$BATS_TEST_DIRNAME/../share/man/man7/mq.7" 2>/dev/null |
	    sed 's/.\x08//g' | expand)"
}

# mq-relay(1) names every option and environment variable of the
# program, the defaults, the headers it sends, and is in mq(7)'s list.
@test "mq-relay(1): options, defaults, headers, environment, sections; mq(7) names it" {
	page=$BATS_TEST_DIRNAME/../share/man/man1/mq-relay.1
	text=$(mandoc -Tascii "$page" | sed 's/.\x08//g' | tr -s ' \n' '  ')
	for sh in SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT "EXIT STATUS" GUARANTEES SECURITY EXAMPLES "SEE ALSO"; do
		grep -qx ".Sh $sh" "$page" || fail "no $sh"
	done
	for s in "mq-relay push [-1v] [-d dir] [-n batch] [-q queue] [-s bytes] [uri ...]" \
	    "mq-relay pull [-1v] [-d dir] [-n max] [-q queue] [uri ...]" \
	    "1 to 1024 (default 100)" "1 to 65535 (default 1000)" \
	    MQ_RELAY_URI MQ_RELAY_CACERT MQ_RELAY_CERT MQ_RELAY_KEY MQ_DIR \
	    message-id delivery-mode timestamp x-mq-priority x-mq-group x-mq-key \
	    x-mq-attempts x-mq-sent x-mq-ttl x-queue-type=quorum amqp://localhost \
	    "deaths/ID" "2xmax" "-h, --help" "-V, --version"; do
		grep -qF -- "$s" <<<"$text" || fail "mq-relay(1) does not say: $s"
	done
	grep -qx '.Xr mq-relay 1 ,' "$BATS_TEST_DIRNAME/../share/man/man7/mq.7"
	# Its page installs with the program only.
	grep -q '^MAN1RELAY = share/man/man1/mq-relay.1$' "$BATS_TEST_DIRNAME/../Makefile"
}
