load helper

# Time to live: mq-send --ttl and the spool's ttl (mq-conf).  Short ttls
# (0.2 s) and bounded sleeps; nothing here asserts how fast anything is.

setup() {
	W=$BATS_TEST_TMPDIR/w
	mkdir -p "$W"
}

# The reason column of mq-dlq ls, one line per dead letter.
reasons() {
	mq-dlq ls | cut -f 4
}

# The one file of a state directory, its name only.
only_name() {
	local f
	f=$(find "$MQ_DIR/$1" -type f)
	[ "$(printf '%s\n' "$f" | wc -l)" -eq 1 ] || return 1
	echo "${f##*/}"
}

# A comma-separated field (1-based) of a name.
field() {
	cut -d, -f "$2" <<<"$1"
}

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

@test "ttl: mq-send --ttl writes the ttl and time sent into the name; without it names are as before" {
	id=$(echo a | mq-send --ttl 1.5)
	name=$(only_name new)
	assert_equal "$(field "$name" 1)" "$id"
	assert_equal "$(field "$name" 2)" 0
	# SENT is the ID's own time: its first 16 hex digits are ns.
	assert_equal "$(field "$name" 3)" $((16#${id%%.*} / 1000000))
	assert_equal "$(field "$name" 4)" 1500
	mq-ack "$(mq-recv)"
	id=$(echo b | mq-send)
	assert_equal "$(only_name new)" "$id,0"
}

@test "ttl: mq-recv buries a message past its --ttl with the reason ttl and claims the next" {
	old=$(echo old | mq-send --ttl 0.2)
	sleep 0.4
	echo fresh | mq-send >/dev/null
	r=$(mq-recv)
	assert_equal "$(cat "$r")" fresh
	mq-ack "$r"
	run mq-dlq ls
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_equal "$(cut -f 1 <<<"$output")" "$old"
	assert_equal "$(cut -f 4 <<<"$output")" ttl
	assert_equal "$(cut -f 6 <<<"$output")" 'old\n'
	# Nothing left: exit 1, nothing handed out.
	run -1 mq-recv
	assert_output ""
}

@test "ttl: an expired message alone in the spool: mq-recv exits 1 and buries it" {
	echo a | mq-send --ttl 0.2 >/dev/null
	sleep 0.4
	run -1 mq-recv -n 5
	assert_output ""
	assert_equal "$(count new)" 0
	assert_equal "$(reasons)" ttl
	# The burial left nothing behind in tmp/.
	assert_equal "$(count tmp)" 0
}

@test "ttl: a message not yet past its --ttl is claimed" {
	echo a | mq-send --ttl 60 >/dev/null
	sleep 0.3
	r=$(mq-recv)
	assert_equal "$(cat "$r")" a
	assert_equal "$(count dead)" 0
}

@test "ttl: a run of expired messages is buried by one claim, each with its reason" {
	seq 1 50 | mq-send -l --ttl 0.2 >/dev/null
	sleep 0.4
	echo live | mq-send >/dev/null
	r=$(mq-recv)
	assert_equal "$(cat "$r")" live
	assert_equal "$(count dead)" 50
	assert_equal "$(count reason)" 50
	assert_equal "$(reasons | sort -u)" ttl
	assert_equal "$(count tmp)" 0
	# Each reason stands alone: purging one leaves the others.
	id=$(mq-dlq ls | head -n 1 | cut -f 1)
	mq-dlq purge "$id"
	assert_equal "$(count reason)" 49
	assert_equal "$(reasons | sort -u)" ttl
}

@test "ttl: mq-sweep buries expired waiting messages, delayed ones too; -v says so" {
	a=$(echo a | mq-send --ttl 0.2)
	b=$(echo b | mq-send -D 3600 --ttl 0.2)
	keep=$(echo c | mq-send --ttl 3600)
	sleep 0.4
	run --separate-stderr mq-sweep -v
	assert_success
	[[ $stderr == *"$a: dead: ttl"* ]]
	[[ $stderr == *"$b: dead: ttl"* ]]
	[[ $stderr != *"$keep"* ]]
	assert_equal "$(count dead)" 2
	assert_equal "$(reasons)" "$(printf 'ttl\nttl')"
	assert_equal "$(only_name new)" "$keep,0,$((16#${keep%%.*} / 1000000)),3600000"
}

@test "ttl: mq-sweep buries an expired lease past its ttl instead of putting it back" {
	# The claim must come before the ttl: one of 5 s, and the clock moved
	# past it, not a short one slept through (a slow run outlasts it).
	id=$(echo a | mq-send --ttl 5)
	mq-recv -t 0.1 >/dev/null
	run --separate-stderr ahead 10 mq-sweep -v
	assert_success
	[[ $stderr == *"$id: dead: ttl"* ]]
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	assert_equal "$(reasons)" ttl
}

@test "ttl: mq-recv buries an expired lease past its ttl rather than hand it out again" {
	echo a | mq-send --ttl 5 >/dev/null
	mq-recv -t 0.1 >/dev/null
	run -1 ahead 10 mq-recv
	assert_equal "$(count cur)" 0
	assert_equal "$(reasons)" ttl
}

@test "ttl: the spool's ttl applies to every waiting message, also one sent before it was set" {
	before=$(echo before | mq-send)
	mq-conf -f ttl=0.2
	after=$(echo after | mq-send)
	sleep 0.4
	run -1 mq-recv
	assert_equal "$(count dead)" 2
	assert_equal "$(mq-dlq ls | cut -f 1,4)" "$(printf '%s\tttl\n%s\tttl' "$before" "$after")"
	# Their names never had a ttl: the setting is read by whoever looks.
	for f in "$MQ_DIR"/dead/*; do
		assert_equal "$(tr -cd , <<<"${f##*/}")" ,,
	done
}

@test "ttl: mq-sweep applies the spool's ttl too" {
	id=$(echo a | mq-send)
	mq-conf -f ttl=0.2
	sleep 0.4
	run --separate-stderr mq-sweep -v
	[[ $stderr == *"$id: dead: ttl"* ]]
	assert_equal "$(reasons)" ttl
}

@test "ttl: the lower of --ttl and the spool's ttl wins" {
	mq-conf -f ttl=60
	echo own | mq-send --ttl 0.2 >/dev/null
	sleep 0.4
	run -1 mq-recv
	assert_equal "$(reasons)" ttl
	mq-dlq purge --all
	mq-conf -f ttl=0.2
	echo spool | mq-send --ttl 60 >/dev/null
	sleep 0.4
	run -1 mq-recv
	assert_equal "$(reasons)" ttl
	# Neither passed: claimed.
	mq-dlq purge --all
	mq-conf -f ttl=60
	echo both | mq-send --ttl 60 >/dev/null
	sleep 0.3
	r=$(mq-recv)
	assert_equal "$(cat "$r")" both
}

@test "ttl: a message's own ttl longer than the spool's does not outlive it: mq-ls calls it dead, mq-sweep buries it at the spool's" {
	mq-conf -f ttl=60
	id=$(echo own | mq-send --ttl 3600)
	assert_equal "$(ahead 120 mq-ls -s dead | cut -f 1)" "$id"
	ahead 120 mq-sweep
	assert_equal "$(mq-dlq ls | cut -f 1,4)" "$id	ttl"
	assert_equal "$(field "$(only_name dead)" 2)" "$(((16#${id%%.*} / 1000000 + 60000) / 1000))"
}

@test "ttl: a spool's ttl set back to none (ttl=) expires nothing more" {
	mq-conf -f ttl=0.2
	mq-conf ttl=
	echo a | mq-send >/dev/null
	sleep 0.4
	r=$(mq-recv)
	assert_equal "$(cat "$r")" a
}

@test "ttl: a message in flight does not expire under its holder: ack after the ttl exits 0" {
	# Long enough to be claimed in time on a loaded machine, or valgrind.
	echo a | mq-send --ttl 2 >/dev/null
	mq-conf -f ttl=2
	r=$(mq-recv -t 30)
	sleep 2.3
	run mq-sweep
	assert_success
	assert_file_exist "$r"
	run mq-ack "$r"
	assert_success
	assert_equal "$(count dead)" 0
	assert_equal "$(count cur)" 0
}

@test "ttl: a lease extended past the ttl is still its holder's" {
	echo a | mq-send --ttl 2 >/dev/null
	r=$(mq-recv -t 30)
	sleep 2.3
	r2=$(mq-ack -e 60 "$r")
	run mq-ack "$r2"
	assert_success
	assert_equal "$(count dead)" 0
}

@test "ttl: a release keeps the clock (the time sent and the ttl)" {
	id=$(echo a | mq-send --ttl 0.6)
	sent=$((16#${id%%.*} / 1000000))
	r=$(mq-recv)
	sleep 0.4
	mq-ack -r "$r"
	# Back in new/ with the time of its send, not of its release.
	assert_equal "$(only_name new)" "$id,1,$sent,600"
	sleep 0.4
	# 0.8 s after its send: expired, though only 0.4 s after the release.
	run -1 mq-recv
	assert_equal "$(reasons)" ttl
	assert_equal "$(mq-dlq ls | cut -f 2)" 1
}

# The clock is moved (ahead, faketime), not waited for: a redriven
# message must be claimed within its ttl of the redrive, which a slow run
# (the sanitizers) must not be able to miss.
@test "ttl: a redrive restarts the clock and keeps the ttl" {
	id=$(echo a | mq-send --ttl 30)
	run -1 ahead 40 mq-recv
	# dead/ keeps the message's own ttl.
	assert_equal "$(field "$(only_name dead)" 4)" 30000
	t0=$(now_ms)
	ahead 40 mq-dlq redrive --all
	name=$(only_name new)
	assert_equal "$(field "$name" 1)" "$id"
	assert_equal "$(field "$name" 2)" 0
	[ "$(field "$name" 3)" -ge "$t0" ]
	assert_equal "$(field "$name" 4)" 30000
	assert_equal "$(count reason)" 0
	# 40 s after its send, but just redriven: claimed.
	r=$(ahead 40 mq-recv)
	assert_equal "$(cat "$r")" a
	# The ttl is still its own: released, it expires 30 s after the
	# redrive.
	mq-ack -r "$r"
	run -1 ahead 80 mq-recv
	assert_equal "$(reasons)" ttl
}

@test "ttl: a redrive restarts the clock under the spool's ttl too" {
	mq-conf -f ttl=30
	echo a | mq-send >/dev/null
	run -1 ahead 40 mq-recv
	ahead 40 mq-dlq redrive --all
	r=$(ahead 40 mq-recv)
	assert_equal "$(cat "$r")" a
}

@test "ttl: mq-dlq redrive --to DIR restarts the clock and keeps the ttl" {
	id=$(echo a | mq-send --ttl 30)
	run -1 ahead 40 mq-recv
	t0=$(now_ms)
	ahead 40 mq-dlq redrive --to "$BATS_TEST_TMPDIR/other" --all
	assert_equal "$(count dead)" 0
	export MQ_DIR=$BATS_TEST_TMPDIR/other
	name=$(only_name new)
	assert_equal "$(field "$name" 1)" "$id"
	[ "$(field "$name" 3)" -ge "$t0" ]
	assert_equal "$(field "$name" 4)" 30000
	r=$(ahead 40 mq-recv)
	assert_equal "$(cat "$r")" a
}

@test "ttl: worker mode buries expired messages and runs the rest" {
	printf 'x\ny\n' | mq-send -l --ttl 0.2 >/dev/null
	echo z | mq-send >/dev/null
	sleep 0.4
	run timeout 20 mq-recv -- sh -c 'cat >>"$1"; echo >>"$1"' _ "$W/seen"
	assert_success
	assert_equal "$(cat "$W/seen")" z
	assert_equal "$(count dead)" 2
	assert_equal "$(reasons | sort -u)" ttl
}

@test "ttl: worker mode applies the spool's ttl" {
	echo old | mq-send >/dev/null
	mq-conf -f ttl=0.2
	sleep 0.4
	run -1 timeout 20 mq-recv -- sh -c 'cat >>"$1"' _ "$W/seen"
	assert_file_not_exist "$W/seen"
	assert_equal "$(reasons)" ttl
}

@test "ttl: worker mode: a job that runs past the ttl is not expired under it" {
	echo a | mq-send --ttl 2 >/dev/null
	run timeout 20 mq-recv -- sh -c 'sleep 2.3; cat >"$1"' _ "$W/seen"
	assert_success
	assert_equal "$(cat "$W/seen")" a
	assert_equal "$(count dead)" 0
	assert_equal "$(count cur)" 0
}

@test "ttl: --ttl with a bad value exits 2 and sends nothing" {
	for v in 0 0.0 0.000 -1 x 1.2345 '' 1e3 ' 1' 99999999999; do
		run -2 --separate-stderr mq-send --ttl "$v" <<<"msg"
		assert_output ""
		[[ $stderr == "mq-send: --ttl $v: "* ]]
	done
	run -2 --separate-stderr mq-send --ttl
	assert_output ""
	assert_not_exist "$MQ_DIR"
	mq-send -l </dev/null >/dev/null
	run -2 mq-send --ttl 0 <<<"msg"
	assert_equal "$(count new)" 0
}

@test "ttl: names of older spools (short forms) still work, and the spool's ttl counts from their ID" {
	mq-send -l </dev/null >/dev/null
	# A message of two hours ago, named as before names had expiry fields.
	id=$(printf '%016x.4242.0123456789ab' $((($(date +%s) - 7200) * 1000000000)))
	key=$(printf '%011x' $((($(date +%s) - 7200) * 1000)))
	leaf="$MQ_DIR/new/${key:0:5}/${key:0:8}/$key"
	mkdir -p "$leaf"
	echo old >"$leaf/$id,1"
	r=$(mq-recv)
	assert_equal "$(cat "$r")" old
	# Claimed and released, it keeps the short form: ID, deadline,
	# holder, attempt.
	[[ ${r##*/} == "$id",*,h*,2 ]]
	assert_equal "$(tr -cd , <<<"${r##*/}")" ,,,
	mq-ack -r "$r"
	assert_equal "$(only_name new)" "$id,2"
	# An hour's ttl: it was sent two hours ago.
	mq-conf -f ttl=3600
	run -1 mq-recv
	assert_equal "$(mq-dlq ls | cut -f 1,2,4)" "$(printf '%s\t2\tttl' "$id")"
	name=$(only_name dead)
	[[ $name == "$id",*,2 ]]
	assert_equal "$(tr -cd , <<<"$name")" ,,
}

@test "ttl: mq-stat does not count an expired message not yet buried as ready" {
	echo a | mq-send --ttl 0.2 >/dev/null
	echo b | mq-send >/dev/null
	sleep 0.4
	run mq-stat --json
	assert_success
	[[ $output == *'"ready":1,'* ]]
	[[ $output == *'"dead":1,'* ]]
	# Counting moved nothing.
	assert_equal "$(count new)" 2
}

@test "ttl: receivers racing through the same expired messages leave each dead letter its reason" {
	seq 1 2000 | mq-send -l -S --ttl 0.2 >/dev/null
	sleep 0.4
	for i in 1 2 3 4; do
		timeout 60 mq-recv -n 1 >"$W/out.$i" &
	done
	wait
	assert_equal "$(cat "$W"/out.*)" ""
	assert_equal "$(count new)" 0
	assert_equal "$(count dead)" 2000
	assert_equal "$(count reason)" 2000
	assert_equal "$(reasons | sort | uniq -c | tr -s ' ')" " 2000 ttl"
	assert_equal "$(count tmp)" 0
}

@test "ttl: whoever buries an expired message (mq-recv, mq-sweep, mq-send at max-depth, mq-dlq, the claim of its run-out lease) dates its death at its expiry" {
	# A ttl of 5 s, and each burier run with the clock 10 s ahead.
	for who in recv sweep send dlq lease; do
		export MQ_DIR=$BATS_TEST_TMPDIR/$who
		id=$(echo a | mq-send --ttl 5)
		case $who in
		recv) ahead 10 mq-recv || true ;;
		sweep) ahead 10 mq-sweep ;;
		send) mq-conf max-depth=1; ahead 10 mq-send <<<b >/dev/null ;;
		dlq) ahead 10 mq-dlq ls >/dev/null ;;
		lease) mq-recv -t 5 >/dev/null; ahead 10 mq-recv || true ;;
		esac
		# dead/ID,DIED,A,TTL: DIED in seconds, the ID's time in ns.
		assert_equal "$who: $(field "$(only_name dead)" 2)" \
		    "$who: $(((16#${id%%.*} / 1000000 + 5000) / 1000))"
		assert_equal "$who: $(mq-dlq ls | cut -f 1,4)" "$who: $id	ttl"
	done
}

@test "ttl: an expired lease past its ttl at max attempts is buried as ttl, as mq-ls calls it dead" {
	for who in recv sweep; do
		export MQ_DIR=$BATS_TEST_TMPDIR/$who
		mq-conf max-attempts=1
		id=$(echo a | mq-send --ttl 5)
		mq-recv -t 5 >/dev/null
		assert_equal "$(ahead 10 mq-ls -s dead | cut -f 1)" "$id"
		case $who in
		recv) run -1 ahead 10 mq-recv ;;
		sweep) ahead 10 mq-sweep ;;
		esac
		assert_equal "$who: $(mq-dlq ls | cut -f 1,2,4)" "$who: $id	1	ttl"
		assert_equal "$who: $(field "$(only_name dead)" 2)" \
		    "$who: $(((16#${id%%.*} / 1000000 + 5000) / 1000))"
	done
}
