load helper

# Every number of seconds a tool reads (options and settings) is checked
# against the bound its reader applies, fraction included: 1000000000
# (about 31 years) at the most, and 0.001 at the least where zero would
# mean nothing.  A value just past a bound is exit 2 and changes nothing.

MOST=1000000000
PAST=1000000000.001

# past TOOL ARGS...: exit 2, saying the bound, and the spool unchanged.
past() {
	local before after
	before=$(spool_listing)
	# Taken by mistake, a wait or a repeat would not end by itself.
	run -2 --separate-stderr timeout -k 5 20 "$@"
	[[ $stderr == *"too large (the most is 1000000000 seconds)"* ]] || {
		echo "$* said: $stderr" >&2
		return 1
	}
	[ -z "$output" ]
	after=$(spool_listing)
	[ "$before" = "$after" ]
}

spool_listing() {
	[ -d "$MQ_DIR" ] || return 0
	(cd "$MQ_DIR" && find . -path ./tmp -prune -o -print | LC_ALL=C sort)
}

@test "durations: mq-send --ttl just past the bound (1000000000.001) is refused, not queued under a name no tool reads" {
	past mq-send --ttl "$PAST" </dev/null
	echo big | mq-send -S >/dev/null
	past mq-send -S --ttl "$PAST" </dev/null
	past mq-send --ttl 1000000001 </dev/null
	past mq-send --ttl 12345678901234567890 </dev/null
	run -0 mq-stat --json
	[[ $output == *'"ready":1,'* ]]
}

@test "durations: mq-send --ttl at the bound is queued, and every tool sees it" {
	id=$(printf big | mq-send -S --ttl "$MOST")
	run -0 mq-show "$id"
	[ "$output" = big ]
	run -0 mq-ls --json
	[[ $output == *"\"id\":\"$id\""* ]]
	r=$(mq-recv)
	[ "$(cat "$r")" = big ]
}

@test "durations: mq-send -D and -w at the bound are taken, just past are refused" {
	past mq-send -D "$PAST" </dev/null
	past mq-send -w "$PAST" </dev/null
	id=$(echo later | mq-send -D "$MOST")
	run -0 mq-ls -s delayed
	[[ $output == "$id"* ]]
	id=$(echo now | mq-send -w "$MOST")
	run -0 mq-ls -s ready
	[[ $output == "$id"* ]]
}

@test "durations: mq-send --ttl 0.001 is the least, 0 is refused" {
	run -2 --separate-stderr mq-send --ttl 0 </dev/null
	[[ $stderr == *"too small"* ]]
	echo x | mq-send --ttl 0.001 >/dev/null
}

@test "durations: mq-recv -t, -w, --timeout, --backoff and --backoff-max at the bound are taken, just past are refused" {
	echo a | mq-send >/dev/null
	past mq-recv -t "$PAST"
	past mq-recv -w "$PAST"
	past mq-recv -n 1 --timeout "$PAST" -- true
	past mq-recv -n 1 --backoff "$PAST" -- true
	past mq-recv -n 1 --backoff-max "$PAST" -- true
	r=$(mq-recv -t "$MOST" -w "$MOST")
	[ "$(cat "$r")" = a ]
	# The lease's end is about 31 years from now.
	run -0 mq-ls --json -s inflight
	end=$(printf '%s\n' "$output" | sed -n 's/.*"time":"\([0-9]*\)-.*/\1/p')
	[ "$end" -ge $(($(date -u +%Y) + 31)) ]
	mq-ack "$r"
	echo b | mq-send >/dev/null
	run -0 mq-recv -n 1 --timeout "$MOST" --backoff "$MOST" \
	    --backoff-max "$MOST" -- cat
	[ "$output" = b ]
}

@test "durations: mq-recv -t and --timeout 0.001 are the least, 0 is refused" {
	echo a | mq-send >/dev/null
	run -2 --separate-stderr mq-recv -t 0
	[[ $stderr == *"too small"* ]]
	run -2 --separate-stderr mq-recv -n 1 --timeout 0 -- true
	[[ $stderr == *"too small"* ]]
	r=$(mq-recv -t 0.001)
	[ -n "$r" ]
}

@test "durations: mq-ack -r and -e at the bound are taken, just past are refused and the lease is kept" {
	echo a | mq-send >/dev/null
	r=$(mq-recv -t 60)
	past mq-ack -r "$PAST" "$r"
	past mq-ack -e "$PAST" "$r"
	r2=$(mq-ack -e "$MOST" "$r")
	[ -f "$r2" ]
	mq-ack -r "$MOST" "$r2"
	run -0 mq-ls -s delayed
	[ "${#lines[@]}" -eq 1 ]
}

@test "durations: mq-ack -e 0.001 is the least, 0 is refused" {
	echo a | mq-send >/dev/null
	r=$(mq-recv -t 60)
	run -2 --separate-stderr mq-ack -e 0 "$r"
	[[ $stderr == *"too small"* ]]
	[ -f "$r" ]
}

@test "durations: mq-sweep -i just past the bound is refused; at the bound it sweeps and waits" {
	echo a | mq-send >/dev/null
	past mq-sweep -i "$PAST"
	run -2 --separate-stderr mq-sweep -i 0
	[[ $stderr == *"too small"* ]]
	run -124 timeout 2 mq-sweep -i "$MOST"
}

@test "durations: the settings lease, ttl and dedup-window at the bound are set, just past are refused and nothing changes" {
	mq-conf max-attempts=3
	for key in lease ttl dedup-window; do
		past mq-conf "$key=$PAST"
		past mq-conf max-attempts=4 "$key=$PAST"
		[ "$(mq-conf max-attempts)" = 3 ]
		mq-conf "$key=$MOST"
		[ "$(mq-conf "$key")" = "$MOST" ]
	done
	run -2 --separate-stderr mq-conf lease=0
	[[ $stderr == *"too small"* ]]
	mq-conf lease=0.001
}

@test "durations: every page states the bound of the seconds it takes" {
	cd "$BATS_TEST_DIRNAME/../share/man/man1"
	for page in mq-send.1 mq-recv.1 mq-ack.1 mq-sweep.1 mq-conf.1; do
		grep -q '1000000000' "$page" || {
			echo "$page: no bound stated" >&2
			return 1
		}
	done
}

# in_secs ISO: how many seconds from now ISO (UTC, to the second) is.
in_secs() {
	echo $(($(date -u -d "$1" +%s) - $(date +%s)))
}

# near GOT WANT: GOT is WANT, give or take the second lost to ISO's
# truncation and a slow machine's few.
near() {
	if [ "$1" -lt $(($2 - 2)) ] || [ "$1" -gt $(($2 + 5)) ]; then
		echo "$1 s, not $2" >&2
		return 1
	fi
}

@test "durations: a number with a unit (ms, s, m, h, d) is that long: mq-send -D, mq-recv -t, mq-ack -e" {
	local pair d want id t r
	for pair in 90:90 2.5:2 90s:90 1.5m:90 2h:7200 1d:86400 1500ms:1; do
		d=${pair%%:*} want=${pair#*:}
		id=$(echo x | mq-send -S -D "$d")
		t=$(mq-ls --json | grep "$id" | sed 's/.*"time":"\([^"]*\)".*/\1/')
		near "$(in_secs "$t")" "$want" || fail "-D $d"
	done
	echo y | mq-send -S >/dev/null
	r=$(mq-recv -t 2m)
	t=$(mq-ls --json -s inflight | sed 's/.*"time":"\([^"]*\)".*/\1/')
	near "$(in_secs "$t")" 120 || fail "-t 2m"
	mq-ack -e 1.5h "$r" >/dev/null
	t=$(mq-ls --json -s inflight | sed 's/.*"time":"\([^"]*\)".*/\1/')
	near "$(in_secs "$t")" 5400 || fail "-e 1.5h"
}

@test "durations: the settings take units and print as set; lease=250ms is a quarter of a second" {
	mq-conf ttl=1.5h dedup-window=2d lease=250ms
	assert_equal "$(mq-conf ttl)" 1.5h
	assert_equal "$(mq-conf dedup-window)" 2d
	echo x | mq-send -S >/dev/null
	mq-recv >/dev/null
	# Run out within the second (the lease was 250 ms, not 250 s).
	run -0 timeout 5 sh -c 'until mq-ls -s expired | grep -q .; do sleep 0.1; done'
	# At the bound in every unit, and just past it.
	mq-conf ttl=11574d
	past mq-conf ttl=11575d
	past mq-conf ttl=16666667m
	past mq-conf ttl=277778h
	assert_equal "$(mq-conf ttl)" 11574d
}

@test "durations: any other form is exit 2 naming the forms taken, and changes nothing" {
	local v
	mq-conf ttl=60
	for v in 5x 1.5ms .5 5. 1..5 1.5.h 2hh h 1e3 -1 ' 5' '5 ' 0x10 1,5; do
		run -2 --separate-stderr mq-conf ttl="$v"
		[[ $stderr == *"not a duration (90, 1.5, 250ms, 90s, 1.5m, 2h, 1d)"* ]] ||
		    fail "ttl=$v: $stderr"
		run -2 --separate-stderr mq-send -S -D "$v" </dev/null
		[[ $stderr == *"not a duration (90, 1.5, 250ms, 90s, 1.5m, 2h, 1d)"* ]] || fail "-D $v: $stderr"
	done
	assert_equal "$(mq-conf ttl)" 60
	assert_equal "$(mq-ls | wc -l)" 0
}
