load helper

@test "man pages: mandoc -Tlint reports nothing" {
	run mandoc -Tlint -Wwarning "$BATS_TEST_DIRNAME"/../share/man/man*/*
	assert_success
	assert_output ""
}

@test "man pages: one per tool, plus mq-spool(5) and mq(7)" {
	for t in mq mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm mq-log mq-top mq-relay; do
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
	for s in "mq-relay push [-1v] [-d dir] [-n batch] [-q queue] [--max-bytes bytes] [uri ...]" \
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

# The quotes of a page as mandoc renders it ($1), one line per fault,
# with the page and the rendered line: a quote not closed within its
# paragraph, closed without being open, or opened inside one of its own
# kind; and a single-quoted span that fills a parenthesis and holds a
# list ("(‘a, b’)").  Each is the mark of an enclosure macro (Ql, Sq,
# Dq, Pq ...) that ran on to the end of its line and took in the words
# meant to follow it.
quote_faults() {
	mandoc -Tutf8 "$1" | LC_ALL=C.UTF-8 col -bx |
	    LC_ALL=C sed 's/\xe2\x80\x98/\x01/g; s/\xe2\x80\x99/\x02/g; s/\xe2\x80\x9c/\x03/g; s/\xe2\x80\x9d/\x04/g' |
	    LC_ALL=C awk -v page="${1##*/}" '
		function say(line, what, text) {
			gsub(/\001/, "\342\200\230", text); gsub(/\002/, "\342\200\231", text)
			gsub(/\003/, "\342\200\234", text); gsub(/\004/, "\342\200\235", text)
			sub(/^[ \t]+/, "", text)
			printf "%s:%d: %s: %s\n", page, line, what, text
		}
		function end_paragraph(  i) {
			for (i = 1; i <= depth; i++)
				say(at[i], "a quote not closed in its paragraph", text[i])
			if (match(para, /\(\001[^\002]*, [^\002]*\002\)/))
				say(first, "a list single-quoted as one literal",
				    substr(para, RSTART, RLENGTH))
			depth = 0; para = ""; first = 0
		}
		NF == 0 { end_paragraph(); next }
		{
			if (!first) first = NR
			line = $0; sub(/^[ \t]+/, "", line)
			para = para " " line
			for (i = 1; i <= length($0); i++) {
				c = substr($0, i, 1)
				if (c == "\001" || c == "\003") {
					for (j = 1; j <= depth; j++)
						if (stack[j] == c) {
							say(NR, "a quote opened inside one of its kind", $0)
							break
						}
					stack[++depth] = c; at[depth] = NR; text[depth] = $0
				} else if (c == "\002" || c == "\004") {
					if (depth > 0 && stack[depth] == (c == "\002" ? "\001" : "\003"))
						depth--
					else
						say(NR, "a quote closed that is not open", $0)
				}
			}
		}
		END { end_paragraph() }'
}

@test "man pages: rendered, every quote closes in its paragraph, after what it quotes" {
	faults=$(for page in "$BATS_TEST_DIRNAME"/../share/man/man*/*; do
		quote_faults "$page"
	done)
	[ -z "$faults" ] || fail "misplaced quotes:"$'\n'"$faults"
}

@test "README and mq-ls(1) name the states mq-ls lists, in its order" {
	mq-send </dev/null >/dev/null
	run -2 --separate-stderr mq-ls -s no-such-state
	states=$(sed -n 's/.*no such state (\(.*\))$/\1/p' <<<"$stderr" | sed 's/, /\n/g')
	[ "$(wc -l <<<"$states")" -ge 6 ]
	top=$BATS_TEST_DIRNAME/..
	# The README's paragraph on mq-ls, its states in backquotes.
	readme=$(sed -n '/^`mq-ls` lists every message/,/^$/p' "$top/README.md" |
	    grep -o '`[a-z]*`' | tr -d '`' | grep -Fxf <(echo "$states")) || :
	assert_equal "$readme" "$states"
	page=$(sed -n '/^\.Bl -tag -width inflight/,/^\.El/s/^\.It Li //p' "$top/share/man/man1/mq-ls.1")
	assert_equal "$page" "$states"
}

@test "README: its lines for reading the pages in a checkout find them there, and the system's still" {
	command -v man >/dev/null || skip "man (man-db) is not installed"
	top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	cd "$top"
	# The two lines of the README's block, each as a reader runs it, with
	# man -w printing the file that man would show.
	# (mq(7), not mq(1), the front command, which man finds first.)
	line=$(grep -E '^MANPATH=\$PWD/share/man: man 7 mq( |$)' README.md | sed 's/ *#.*//')
	assert_equal "$line" 'MANPATH=$PWD/share/man: man 7 mq'
	assert_equal "$(eval "${line/man 7 mq/man -w 7 mq}")" "$top/share/man/man7/mq.7"
	assert_equal "$(eval "${line/man 7 mq/man -w mq-recv}")" "$top/share/man/man1/mq-recv.1"
	assert_equal "$(eval "${line/man 7 mq/man -w mq}")" "$top/share/man/man1/mq.1"
	# The trailing colon keeps the system's pages (if it has man's own).
	if man -w man >/dev/null 2>&1; then
		run eval "${line/man 7 mq/man -w man}"
		assert_success
	fi
	line=$(grep -E '^man \./share/man/man7/mq\.7( |$)' README.md | sed 's/ *#.*//')
	assert_equal "$(${line/man /man -w })" ./share/man/man7/mq.7
	# and demo.sh's last word is the same line.
	grep -qF 'Next: MANPATH=\$PWD/share/man: man 7 mq' share/examples/demo.sh
}

# Status $1's entry in the EXIT STATUS list of a page ($2), rendered on
# one line.
exit_status_text() {
	mandoc -Tascii "$2" | sed 's/.\x08//g' | sed -n '/^EXIT STATUS/,/^EXAMPLES/p' |
	    awk -v n="$1" '$1 == n { on = 1; sub(/^ *[0-9]+ */, "") } on && NF == 0 { exit } on' |
	    tr -s ' \n' '  '
}

@test "mq(7) and mq-rm(1): status 3 is told as the tools return it, a lost lease or one held by another" {
	top=$BATS_TEST_DIRNAME/..
	echo x | mq-send >/dev/null
	r=$(mq-recv)
	id=$(mq-ls | cut -f 1)
	# mq-rm of a message in flight.
	run -3 --separate-stderr mq-rm "$id"
	[[ $stderr == *"in flight"* ]]
	# mq-ack of a receipt whose lease is gone.
	mq-ack "$r"
	run -3 --separate-stderr mq-ack "$r"
	[[ $stderr == *"lease lost"* ]]
	text=$(exit_status_text 3 "$top/share/man/man7/mq.7")
	for w in "lost" "stale receipt" "mq-ack(1)" "mq-rm(1)" "in flight"; do
		[[ $text == *"$w"* ]] || fail "mq(7), status 3 does not say $w: $text"
	done
	text=$(exit_status_text 3 "$top/share/man/man1/mq-rm.1")
	[[ $text == *"in flight"* && $text == *"lease"* ]] || fail "mq-rm(1), status 3: $text"
	# Every status a page lists is one of mq(7)'s.
	for page in "$top"/share/man/man1/*.1; do
		while read -r n; do
			[ -n "$(exit_status_text "$n" "$top/share/man/man7/mq.7")" ] ||
			    fail "${page##*/}: status $n is not in mq(7)"
		done < <(sed -n '/^\.Sh EXIT STATUS/,/^\.Sh/s/^\.It \([0-9]*\)$/\1/p' "$page")
	done
}
