load helper

# Priorities: mq-send -p N (0 to 9).  A higher number is claimed first,
# oldest first within one; each priority N > 0 has its own tree new/pN.
# Short delays (-D 1, leases of 0.1 s) and bounded waits; nothing here
# asserts how fast anything is.

setup() {
	W=$BATS_TEST_TMPDIR/w
	mkdir -p "$W"
	export W
}

# Sends the body $1 with priority $2 (and any further options).
send() {
	local body=$1 prio=$2
	shift 2
	echo "$body" | mq-send -p "$prio" "$@"
}

# The bodies of everything claimable, in claim order, on one line.
order() {
	drain | sed '/^$/d' | tr '\n' ' '
}

# The path of the one message file in new/, from new/ down.
only_path() {
	local f
	f=$(find "$MQ_DIR/new" -type f)
	[ "$(printf '%s\n' "$f" | wc -l)" -eq 1 ] || return 1
	echo "${f#"$MQ_DIR"/new/}"
}

@test "priority: -p 9 is claimed before -p 0, whatever was sent first" {
	send low 0 >/dev/null
	send urgent 9 >/dev/null
	assert_equal "$(order)" "urgent low "
}

@test "priority: oldest first within one priority, -l batches and separate sends alike" {
	seq 1 3 | mq-send -l -p 4 >/dev/null
	send 4 4 >/dev/null
	send 5 4 >/dev/null
	assert_equal "$(order)" "1 2 3 4 5 "
}

@test "priority: several priorities interleaved come out by priority, then by send" {
	for m in a3:3 b0:0 c7:7 d3:3 e9:9 f0:0 g7:7 h1:1; do
		send "${m%%:*}" "${m##*:}" >/dev/null
	done
	assert_equal "$(order)" "e9 c7 g7 a3 d3 h1 b0 f0 "
}

@test "priority: a message of priority N lives under new/pN, named with ,pN; 0 as before" {
	id=$(send a 6)
	[[ $(only_path) == p6/?????/????????/???????????/"$id",0,p6 ]]
	r=$(mq-recv)
	mq-ack "$r"
	id=$(send b 0)
	[[ $(only_path) == ?????/????????/???????????/"$id",0 ]]
}

@test "priority: a delayed high-priority message takes its place when it is due" {
	send old1 0 >/dev/null
	send old2 0 >/dev/null
	send later 9 -D 1 >/dev/null
	# Not due yet: the backlog goes first.
	r=$(mq-recv)
	assert_equal "$(cat "$r")" old1
	mq-ack "$r"
	# Once due, it goes before the rest of the backlog.
	sleep 1.2
	r=$(mq-recv)
	assert_equal "$(cat "$r")" later
	mq-ack "$r"
	assert_equal "$(order)" "old2 "
}

@test "priority: a release (mq-ack -r) goes back into its priority's tree" {
	send low 0 >/dev/null
	id=$(send high 5)
	r=$(mq-recv)
	assert_equal "$(cat "$r")" high
	[[ ${r##*/} == "$id",*,1,p5 ]]
	mq-ack -r "$r"
	run find "$MQ_DIR/new/p5" -type f -name "$id,1,p5"
	assert_success
	[ -n "$output" ]
	assert_equal "$(order)" "high low "
}

@test "priority: a redrive keeps the priority" {
	id=$(send high 5)
	r=$(mq-recv)
	mq-ack -x broken "$r"
	send low 0 >/dev/null
	mq-dlq redrive "$id"
	run find "$MQ_DIR/new/p5" -type f -name "$id,0,*p5,d1"
	assert_success
	[ -n "$output" ]
	assert_equal "$(order)" "high low "
}

@test "priority: an expired lease keeps its priority (mq-sweep puts it back into new/pN)" {
	send low 0 >/dev/null
	id=$(send high 7)
	r=$(mq-recv -t 0.1)
	assert_equal "$(cat "$r")" high
	sleep 0.3
	mq-sweep
	run find "$MQ_DIR/new/p7" -type f -name "$id,1,p7"
	assert_success
	[ -n "$output" ]
	assert_equal "$(order)" "high low "
}

@test "priority: expired leases are claimed first, whatever their priority" {
	send low 0 >/dev/null
	r=$(mq-recv -t 0.1)
	assert_equal "$(cat "$r")" low
	send urgent 9 >/dev/null
	sleep 0.3
	assert_equal "$(order)" "low urgent "
}

@test "priority: worker mode with one slot runs the jobs by priority" {
	for m in a0:0 b5:5 c9:9 d0:0 e5:5; do
		send "${m%%:*}" "${m##*:}" >/dev/null
	done
	run timeout 20 mq-recv -P 1 -- sh -c 'cat >>"$W/seen"'
	assert_success
	assert_equal "$(tr '\n' ' ' <"$W/seen")" "c9 b5 e5 a0 d0 "
	run timeout 20 mq-recv -n 2 -- sh -c 'cat >>"$W/none"'
	assert_failure 1
}

@test "priority: worker mode with a kept leaf of priority 0 runs a priority-9 message sent meanwhile first" {
	seq 1 5 | mq-send -l >/dev/null
	# Past the tick of new/'s mtime that the sends rang: the worker sees
	# the first job's send by new/'s mtime alone.
	sleep 2.2
	run timeout 20 mq-recv -P 1 -- sh -c '
		b=$(cat); echo "$b" >>"$W/seen"
		[ "$b" != 1 ] || echo urgent | mq-send -p 9 >/dev/null'
	assert_success
	assert_equal "$(tr '\n' ' ' <"$W/seen")" "1 urgent 2 3 4 5 "
}

@test "priority: worker mode with a kept leaf runs a delayed higher-priority message once it is due" {
	seq 1 3 | mq-send -l >/dev/null
	send later 9 -D 3 >/dev/null
	sleep 2.2
	# The first claim keeps the rest of the leaf of 1 2 3, while later is
	# still delayed; each job outlasts what is left of the delay.
	run timeout 30 mq-recv -P 1 -- sh -c 'echo $(cat) >>"$W/seen"; sleep 1'
	assert_success
	seen=$(tr '\n' ' ' <"$W/seen")
	[[ $seen == "1 later 2 3 " || $seen == "later 1 2 3 " ]]
}

@test "priority: bad -p values exit 2, name -p and send nothing" {
	for bad in 10 -1 x "" 1.5 " 1"; do
		run -2 --separate-stderr mq-send -p "$bad" <<<"m"
		[[ $stderr == *"-p"* ]]
		[ -z "$output" ]
	done
	run -2 --separate-stderr mq-send -p
	[ ! -d "$MQ_DIR/new" ] || assert_equal "$(count new)" 0
	# Every value from 0 to 9 is taken.
	for p in 0 1 2 3 4 5 6 7 8 9; do
		send "$p" "$p" >/dev/null
	done
	assert_equal "$(order)" "9 8 7 6 5 4 3 2 1 0 "
}

@test "priority: overflow=drop-oldest drops the lowest priority first, the oldest first within it" {
	mq-conf max-depth=3 overflow=drop-oldest
	send x9 9 >/dev/null
	send y0 0 >/dev/null
	send z0 0 >/dev/null
	run --separate-stderr mq-send -v -p 5 <<<"w5"
	assert_success
	[[ $stderr == *"dead: maxlen"* ]]
	run mq-dlq ls
	assert_equal "${#lines[@]}" 1
	run mq-dlq show "$(mq-dlq ls | cut -f 1)"
	assert_output y0
	send v1 1 >/dev/null
	assert_equal "$(order)" "x9 w5 v1 "
	assert_equal "$(count dead)" 2
}

@test "priority: mq-stat counts the messages of every priority (ready, delayed, oldest)" {
	local t0 age
	t0=$(date +%s)
	send a 0 >/dev/null
	send b 3 >/dev/null
	send c 9 >/dev/null
	send d 9 -D 3600 >/dev/null
	send e 1 -D 3600 >/dev/null
	# 100 s on: the oldest ready message is 100 s old, plus however long
	# the sends took on a slow run (sanitizers, a loaded machine).
	run ahead 100 mq-stat --json
	assert_success
	[[ $output == *'"ready":3,"delayed":2,'* ]]
	age=$(sed -n 's/.*"oldest_ready_age_seconds":\([0-9]*\).*/\1/p' <<<"$output")
	[ -n "$age" ]
	[ "$age" -ge 100 ]
	[ "$age" -le $((100 + $(date +%s) - t0 + 1)) ]
}

@test "priority: mq-sweep expires messages past their ttl in every priority's tree" {
	send a 0 --ttl 0.2 >/dev/null
	send b 4 --ttl 0.2 >/dev/null
	send c 9 -D 3600 --ttl 0.2 >/dev/null
	keep=$(send d 9 --ttl 3600)
	sleep 0.4
	run --separate-stderr mq-sweep -v
	assert_success
	assert_equal "$(grep -c 'dead: ttl' <<<"$stderr")" 3
	assert_equal "$(count dead)" 3
	assert_equal "$(count new)" 1
	[[ $(only_path) == p9/*/"$keep",* ]]
}

@test "priority: max-depth counts the messages of every priority" {
	mq-conf max-depth=3
	send a 0 >/dev/null
	send b 5 >/dev/null
	send c 9 -D 3600 >/dev/null
	run -6 --separate-stderr mq-send <<<"d"
	# Counted again from the depth cache: the same.
	run -6 --separate-stderr mq-send -p 9 <<<"e"
	assert_equal "$(count new)" 3
	r=$(mq-recv)
	assert_equal "$(cat "$r")" b
	mq-ack "$r"
	run mq-send -p 2 <<<"f"
	assert_success
}

@test "priority: the depth cache (version 3) tells apart leaves of two priorities with one key" {
	mq-conf max-depth=5
	send a 0 >/dev/null
	send b 5 >/dev/null
	# Put b in a leaf of the same key as a's, in new/p5.
	pa=$(find "$MQ_DIR/new" -path "$MQ_DIR/new/p5" -prune -o -type f -print)
	pb=$(find "$MQ_DIR/new/p5" -type f)
	leaf=${pa#"$MQ_DIR"/new/}
	leaf=${leaf%/*}
	mkdir -p "$MQ_DIR/new/p5/$leaf"
	mv "$pb" "$MQ_DIR/new/p5/$leaf/"
	# Settled, so that the count caches both leaves.
	sleep 1.2
	seq 1 3 | mq-send -l >/dev/null
	run head -n 1 "$MQ_DIR/tmp/.depth"
	[[ $output == "mq-depth 3 "* ]]
	run grep -c "^5 ${leaf##*/} " "$MQ_DIR/tmp/.depth"
	assert_output 1
	run grep -c "^0 ${leaf##*/} " "$MQ_DIR/tmp/.depth"
	assert_output 1
	run -6 --separate-stderr mq-send <<<"x"
	assert_equal "$(count new)" 5
}

@test "priority: a depth cache of version 2 is ignored and written anew" {
	mq-conf max-depth=3
	send a 0 >/dev/null
	send b 5 >/dev/null
	leaf=$(find "$MQ_DIR/new/p5" -mindepth 3 -type d)
	# A version 2 line for b's leaf, as an older mq wrote it, that says
	# the leaf holds nothing.
	printf 'mq-depth 2 1\n%s %s %s 0 0 0 0\n' "${leaf##*/}" \
	    "$(stat -c %i "$leaf")" "$(stat -c %Y "$leaf")" >"$MQ_DIR/tmp/.depth"
	send c 9 >/dev/null
	run -6 --separate-stderr mq-send <<<"d"
	run head -n 1 "$MQ_DIR/tmp/.depth"
	[[ $output == "mq-depth 3 "* ]]
}

@test "priority: an empty new/pN is removed once it is drained" {
	id=$(send a 5)
	# Move the message into a leaf keyed long ago, so that every level of
	# its tree is settled (no sender can be filling it).
	f=$(find "$MQ_DIR/new/p5" -type f)
	mv "$f" "$W/"
	rm -r "$MQ_DIR/new/p5"
	mkdir -p "$MQ_DIR/new/p5/00000/00000000/00000000001"
	mv "$W/${f##*/}" "$MQ_DIR/new/p5/00000/00000000/00000000001/"
	send b 0 >/dev/null
	r=$(mq-recv)
	assert_equal "$(cat "$r")" a
	[[ $r == */"$id",* ]]
	# The claim that finds its leaf used up removes the tree.
	r=$(mq-recv)
	assert_equal "$(cat "$r")" b
	assert_not_exist "$MQ_DIR/new/p5"
	# A tree that still holds something stays.
	send c 3 -D 3600 >/dev/null
	run -1 mq-recv
	mq-sweep
	assert_exist "$MQ_DIR/new/p3"
}

@test "priority: mq-sweep removes an empty new/pN, not one that holds anything" {
	mkdir -p "$MQ_DIR/new/p4/00000/00000000/00000000001"
	send x 7 -D 3600 >/dev/null
	mq-sweep
	assert_not_exist "$MQ_DIR/new/p4"
	assert_exist "$MQ_DIR/new/p7"
}

@test "priority: foreign entries of new/ (p0, p10, a file p3, a symlink p5) are never followed, handed out or counted" {
	send a 2 >/dev/null
	mkdir -p "$W/elsewhere/00000/00000000/00000000001"
	echo secret >"$W/elsewhere/00000/00000000/00000000001/18ed3c600a90bd72.1.b30896cb1c24,0,p5"
	ln -s "$W/elsewhere" "$MQ_DIR/new/p5"
	mkdir -p "$MQ_DIR/new/p0/00000/00000000/00000000001" "$MQ_DIR/new/p10/00000/00000000/00000000001"
	echo x >"$MQ_DIR/new/p0/00000/00000000/00000000001/18ed3c600a90bd72.2.b30896cb1c24,0"
	echo x >"$MQ_DIR/new/p10/00000/00000000/00000000001/18ed3c600a90bd72.3.b30896cb1c24,0"
	echo x >"$MQ_DIR/new/p3"
	run mq-stat --json
	[[ $output == *'"ready":1,'* ]]
	assert_equal "$(order)" "a "
	mq-sweep
	assert_exist "$W/elsewhere/00000/00000000/00000000001/18ed3c600a90bd72.1.b30896cb1c24,0,p5"
	assert_exist "$MQ_DIR/new/p0/00000/00000000/00000000001/18ed3c600a90bd72.2.b30896cb1c24,0"
	assert_exist "$MQ_DIR/new/p3"
}

@test "priority: one mq-ack -r of receipts of several priorities puts each back into its own tree" {
	a=$(send a 0)
	b=$(send b 5)
	c=$(send c 9)
	d=$(send d 5)
	mq-recv -n 4 >"$W/receipts"
	assert_equal "$(wc -l <"$W/receipts")" 4
	# shellcheck disable=SC2046 # one receipt per line, no blanks
	mq-ack -r $(cat "$W/receipts")
	assert_equal "$(find "$MQ_DIR/new/p9" -type f -name "$c,1,p9" | wc -l)" 1
	assert_equal "$(find "$MQ_DIR/new/p5" -type f -name "$b,1,p5" | wc -l)" 1
	assert_equal "$(find "$MQ_DIR/new/p5" -type f -name "$d,1,p5" | wc -l)" 1
	assert_equal "$(find "$MQ_DIR/new" -path "$MQ_DIR/new/p*" -prune -o -type f -name "$a,1" -print | wc -l)" 1
	assert_equal "$(order)" "c b d a "
}

@test "worker mode exports MQ_PRIORITY, 0 for a message sent without -p; an inherited MQ_GROUP is not passed on" {
	echo urgent | mq-send -p 7 >/dev/null
	echo plain | mq-send >/dev/null
	MQ_GROUP=stale MQ_PRIORITY=5 run -0 timeout 20 mq-recv -n 2 -- \
	    sh -c 'printf "%s %s %s\n" "$(cat)" "$MQ_PRIORITY" "${MQ_GROUP-unset}" >>"$0"' "$BATS_TEST_TMPDIR/seen"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/seen")" "$(printf 'urgent 7 unset\nplain 0 unset')"
}
