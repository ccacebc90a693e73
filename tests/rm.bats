load helper

# The bodies of everything claimable, in claim order, each acked.
bodies() {
	local r
	while r=$(mq-recv); do
		cat "$r"
		mq-ack "$r"
	done
}

# The message files of the spool, every state, parked ones too.
messages() {
	local d dirs=()
	for d in new cur dead groups; do
		[ ! -d "$MQ_DIR/$d" ] || dirs+=("$MQ_DIR/$d")
	done
	find "${dirs[@]}" -type f ! -name turn
}

@test "mq-rm: removes a ready, a delayed and a dead message by ID, quietly; -v names each with its state" {
	ready=$(echo r | mq-send)
	delayed=$(echo d | mq-send -D 3600)
	dead=$(echo x | mq-send)
	mq-ack "$(mq-recv)"
	mq-ack -x "broken" "$(mq-recv)"
	run -0 --separate-stderr mq-rm "$delayed"
	assert_output ""
	assert_equal "$stderr" ""
	ready=$(echo r | mq-send)
	run -0 --separate-stderr mq-rm -v "$ready" "$dead"
	assert_output ""
	assert_equal "$stderr" "mq-rm: removed $ready (ready)
mq-rm: removed $dead (dead)"
	assert_equal "$(messages)" ""
	# The dead letter's reason went with it.
	assert_equal "$(find "$MQ_DIR/reason" -type f | wc -l)" 0
	run -1 mq-show "$ready"
}

@test "mq-rm: in flight is refused (exit 3, the lease's end named) unless -f; its holder's ack then says lease lost" {
	id=$(echo job | mq-send)
	r=$(mq-recv)
	run -3 --separate-stderr mq-rm "$id"
	[[ $stderr =~ ^mq-rm:\ $id:\ in\ flight,\ lease\ until\ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z\;\ -f\ removes\ it$ ]] ||
	    fail "$stderr"
	assert_equal "$(count cur)" 1
	run -0 --separate-stderr mq-rm -v -f "$id"
	assert_equal "$stderr" "mq-rm: removed $id (inflight)"
	assert_equal "$(count cur)" 0
	run -3 mq-ack "$r"
	assert_output --partial "lease lost"
}

@test "mq-rm: a lease run out is removed without -f (nobody holds it)" {
	id=$(echo job | mq-send)
	r=$(mq-recv -t 1)
	sleep 1.2
	run -0 --separate-stderr mq-rm -v "$id"
	assert_equal "$stderr" "mq-rm: removed $id (expired)"
	run -3 mq-ack "$r"
	assert_equal "$(messages)" ""
}

@test "mq-rm: several IDs, one missing: the others are removed, exit 1" {
	a=$(echo a | mq-send)
	b=$(echo b | mq-send)
	run -1 --separate-stderr mq-rm "$a" 0000000000000000.1.000000000000 "$b"
	assert_equal "$stderr" "mq-rm: 0000000000000000.1.000000000000: no such message"
	assert_equal "$(messages)" ""
	# The worst status wins: in flight (3) over none (1).
	c=$(echo c | mq-send)
	mq-recv >/dev/null
	run -3 mq-rm 0000000000000000.1.000000000000 "$c"
}

@test "mq-rm: usage errors (2) change nothing: a malformed ID, no ID, IDs with --all, a bad option" {
	a=$(echo a | mq-send)
	before=$(messages)
	run -2 --separate-stderr mq-rm "$a" ../x
	[[ $stderr == *"../x: not a message ID"* ]] || fail "$stderr"
	run -2 --separate-stderr mq-rm
	[[ $stderr == *"name IDs or --all"* ]] || fail "$stderr"
	run -2 --separate-stderr mq-rm --all "$a"
	[[ $stderr == *"--all and IDs exclude each other"* ]] || fail "$stderr"
	run -2 --separate-stderr mq-rm -q "$a"
	[[ $stderr == *"usage: mq-rm "* ]] || fail "$stderr"
	assert_equal "$(messages)" "$before"
}

@test "mq-rm: a missing spool is an error (4) naming it" {
	run -4 --separate-stderr mq-rm 0000000000000000.1.000000000000
	[[ $stderr == "mq-rm: $MQ_DIR: "* ]] || fail "$stderr"
	assert_not_exist "$MQ_DIR"
}

@test "mq-rm: the head of an ordered group removed promotes the next, which mq-recv then gets" {
	gsend A a1 a2 a3
	head=$(basename "$(find "$MQ_DIR/new" -type f)" | cut -d, -f1)
	run -0 --separate-stderr mq-rm -v "$head"
	assert_equal "$stderr" "mq-rm: removed $head (ready)"
	run -0 bodies
	assert_output "a2
a3"
	# A head in flight, with -f: the next is promoted as after an ack.
	gsend B b1 b2
	r=$(mq-recv)
	mq-rm -f "$(basename "$r" | cut -d, -f1)"
	run -0 bodies
	assert_output "b2"
	assert_equal "$(messages)" ""
}

@test "mq-rm: a parked member removed leaves the order of the rest" {
	gsend A a1 a2 a3 a4
	ids=$(find "$MQ_DIR/groups/A" -mindepth 4 -type f -printf '%f\n' | cut -d, -f1 | sort)
	a3=$(sed -n 2p <<<"$ids")
	run -0 --separate-stderr mq-rm -v "$a3"
	assert_equal "$stderr" "mq-rm: removed $a3 (blocked)"
	run -0 bodies
	assert_output "a1
a2
a4"
}

@test "mq-rm: a keyed message removed starts the dedup window as an ack does" {
	mq-conf dedup-window=30
	id=$(echo one | mq-send -k nightly)
	mq-rm "$id"
	assert_equal "$(messages)" ""
	# Within the window: the key is still remembered, nothing is added.
	run -0 mq-send -k nightly <<<"two"
	assert_output "$id"
	assert_equal "$(count new)" 0
	# The same after an ack.
	id2=$(echo one | mq-send -k acked)
	mq-ack "$(mq-recv)"
	run -0 mq-send -k acked <<<"two"
	assert_output "$id2"
	# Window 0: free at once.
	mq-conf dedup-window=0
	run -0 mq-send -k nightly <<<"three"
	[ "$output" != "$id" ]
	assert_equal "$(count new)" 1
}

@test "mq-rm --all: every waiting message (ready, delayed, blocked, expired lease); in flight only with -f; dead letters never" {
	echo r | mq-send >/dev/null
	echo d | mq-send -D 3600 >/dev/null
	gsend G g1 g2 g3
	echo dead | mq-send -p 9 >/dev/null
	mq-ack -x "broken" "$(mq-recv)"
	echo exp | mq-send -p 8 >/dev/null
	mq-recv -t 1 >/dev/null
	inflight=$(echo fly | mq-send -p 7)
	r=$(mq-recv)
	sleep 1.2
	run -0 --separate-stderr mq-rm -v --all
	assert_equal "$(grep -c 'removed .* (ready)' <<<"$stderr")" 2
	assert_equal "$(grep -c 'removed .* (delayed)' <<<"$stderr")" 1
	assert_equal "$(grep -c 'removed .* (blocked)' <<<"$stderr")" 2
	assert_equal "$(grep -c 'removed .* (expired)' <<<"$stderr")" 1
	assert_equal "${#lines[@]}" 0
	[ "$(wc -l <<<"$stderr")" -eq 6 ] || fail "$stderr"
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 1
	assert_equal "$(count dead)" 1
	run -1 mq-recv
	run -0 --separate-stderr mq-rm -v -f --all
	assert_equal "$stderr" "mq-rm: removed $inflight (inflight)"
	run -3 mq-ack "$r"
	assert_equal "$(count dead)" 1
	# An empty queue: nothing to do, exit 0.
	run -0 mq-rm --all
}

@test "mq-rm: a waiting message past its time to live is dead to it, as to mq-ls: -v says so, by ID it is removed (parked too), --all leaves it" {
	echo r | mq-send >/dev/null
	a=$(echo a | mq-send --ttl 0.001)
	echo g1 | mq-send -g G >/dev/null
	g2=$(echo g2 | mq-send -g G --ttl 0.001)
	g3=$(echo g3 | mq-send -g G --ttl 0.001)
	sleep 0.2
	run -0 mq-ls -s dead
	assert_equal "$(cut -f1 <<<"$output" | sort)" "$(printf '%s\n' "$a" "$g2" "$g3" | sort)"
	# Parked: removed under its group's lock, the rest of the group kept.
	run -0 --separate-stderr mq-rm -v "$g2"
	assert_equal "$stderr" "mq-rm: removed $g2 (dead)"
	assert_equal "$(messages | grep -c "/$g2,")" 0
	# --all: the ready ones (the head g1 too); the dead stay.
	run -0 --separate-stderr mq-rm -v --all
	assert_equal "$(grep -c 'removed .* (ready)' <<<"$stderr")" 2
	[ "$(wc -l <<<"$stderr")" -eq 2 ] || fail "$stderr"
	# g3 is the group's head now, in new/, as dead as before.
	run -0 mq-ls
	assert_equal "$(cut -f1,2 <<<"$output" | sort)" "$(printf '%s\tdead\n' "$a" "$g3" | sort)"
	run -0 --separate-stderr mq-rm -v "$a" "$g3"
	assert_equal "$stderr" "mq-rm: removed $a (dead)
mq-rm: removed $g3 (dead)"
	assert_equal "$(messages)" ""
	assert_equal "$(count dead)" 0
}

@test "mq-rm racing mq-recv for one message, 50 rounds: claimed (rm exits 3, the ack succeeds) or removed (recv exits 1), never both" {
	t=$BATS_TEST_TMPDIR
	for round in $(seq 1 50); do
		id=$(echo "r$round" | mq-send)
		{ st=0; timeout 20 mq-recv >"$t/r" || st=$?; echo $st >"$t/recv"; } &
		{ st=0; timeout 20 mq-rm "$id" 2>/dev/null || st=$?; echo $st >"$t/rm"; } &
		wait
		recv=$(cat "$t/recv") rm=$(cat "$t/rm")
		if [ "$recv" = 0 ]; then
			[ "$rm" = 3 ] || fail "round $round: claimed, yet mq-rm exited $rm"
			run -0 mq-ack "$(cat "$t/r")"
		else
			[ "$recv" = 1 ] && [ "$rm" = 0 ] ||
			    fail "round $round: mq-recv exited $recv, mq-rm $rm"
		fi
		[ -z "$(messages)" ] || fail "round $round: left $(messages)"
	done
}

@test "mq-rm -v --all against two mq-recv -n 16 loops, 2000 messages: each removed or claimed (and acked), none both, none left" {
	t=$BATS_TEST_TMPDIR
	seq 1 2000 | mq-send -l -S >/dev/null
	# Each loop acks what it claims, one receipt at a time, and notes the
	# status of every ack.
	claim() {
		local r
		while r=$(timeout 20 mq-recv -n 16); do
			while read -r rc; do
				st=0
				timeout 20 mq-ack "$rc" || st=$?
				echo $st
			done <<<"$r"
		done >"$t/acks.$1"
	}
	claim 1 &
	claim 2 &
	timeout 60 mq-rm -v --all 2>"$t/removed"
	wait
	removed=$(grep -c '^mq-rm: removed ' "$t/removed")
	claimed=$(cat "$t/acks.1" "$t/acks.2" | wc -l)
	[ "$(cat "$t/acks.1" "$t/acks.2" | sort -u)" = 0 ] || [ "$claimed" -eq 0 ] ||
	    fail "an ack failed: $(sort "$t/acks.1" "$t/acks.2" | uniq -c)"
	assert_equal "$((removed + claimed))" 2000
	assert_equal "$(messages)" ""
}

@test "mq-rm: stopped between its find and its unlink while mq-recv claims the message: exits 3 (met in flight), the receipt acks" {
	id=$(echo contested | mq-send)
	race_at mq-rm mq_remove "$id" "mq-recv >$BATS_TEST_TMPDIR/r"
	[[ $output == *"Breakpoint 1"* ]] || fail "mq_remove was not reached: $output"
	[[ $output == *"exited with code 03"* ]] || fail "mq-rm did not exit 3: $output"
	[[ $output == *"$id: in flight, lease until"* ]] || fail "$output"
	run -0 mq-ack "$(cat "$BATS_TEST_TMPDIR/r")"
	assert_equal "$(messages)" ""
}

@test "mq-rm: a message with a death history takes it along, waiting, parked, in flight (-f) or dead" {
	# Four messages that died once and were redriven: each has deaths/ID.
	printf 'a\nb\n' | mq-send -l >/dev/null
	printf 'c\n' | mq-send -g G >/dev/null
	printf 'd\n' | mq-send -g G >/dev/null
	for r in $(mq-recv -n 3); do mq-ack -x once "$r"; done
	mq-dlq redrive --all
	mq-ack -x once "$(mq-recv)"
	mq-dlq redrive --all
	run ls "$MQ_DIR/deaths"
	assert_equal "$(wc -l <<<"$output")" 4
	mq-ack -x twice "$(mq-recv)"
	inflight=$(mq-recv -t 60)
	# A group's head, the one parked behind it, one in flight, a dead one.
	assert_equal "$(mq-ls | cut -f 2 | tr '\n' ' ')" "ready blocked inflight dead "
	for id in $(mq-ls | cut -f 1); do
		mq-rm -f "$id"
	done
	assert_equal "$(mq-ls | wc -l)" 0
	run ls -A "$MQ_DIR/deaths"
	assert_output ""
	[ -n "$inflight" ]
}

# Renames the message of ID $1 (any state) to ID $2 where it is: IDs that
# share a prefix, made on purpose.
rename_id() {
	local f b
	f=$(messages | grep -F "/$1,")
	b=${f##*/}
	mv "$f" "${f%/*}/$2,${b#*,}"
}

@test "mq-rm: a unique prefix of 8 characters or more removes the message; 7 is malformed (exit 2); one no ID begins with is exit 1" {
	a=$(echo a | mq-send)
	b=$(echo b | mq-send -D 3600)
	c=$(echo c | mq-send)
	rename_id "$a" 0000000b00000001.1.000000000001
	rename_id "$b" 0000000b00000002.1.000000000001
	rename_id "$c" 0000000c00000001.1.000000000001
	run -2 --separate-stderr mq-rm 0000000
	assert_equal "$stderr" "mq-rm: 0000000: not a message ID"
	run -2 --separate-stderr mq-rm 0000000C
	assert_equal "$stderr" "mq-rm: 0000000C: not a message ID"
	assert_equal "$(messages | wc -l)" 3
	run -0 --separate-stderr mq-rm -v 0000000c
	assert_equal "$stderr" "mq-rm: removed 0000000c00000001.1.000000000001 (ready)"
	run -0 --separate-stderr mq-rm -v 0000000b00000002
	assert_equal "$stderr" "mq-rm: removed 0000000b00000002.1.000000000001 (delayed)"
	run -1 --separate-stderr mq-rm 0000000d
	assert_equal "$stderr" "mq-rm: 0000000d: no such message"
	assert_equal "$(messages | wc -l)" 1
	mq-rm 0000000b00000001.1.000000000001
	assert_equal "$(messages)" ""
}

@test "mq-rm: an ambiguous prefix is exit 2 listing ten of the IDs that begin with it and how many more; nothing is removed, not the other IDs named either" {
	seq 1 12 | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	i=0
	while read -r id; do
		i=$((i + 1))
		rename_id "$id" "$(printf '0000000b000000%02x.1.000000000001' "$i")"
	done <"$BATS_TEST_TMPDIR/ids"
	other=$(echo other | mq-send)
	before=$(messages | sort)
	run -2 --separate-stderr mq-rm "$other" 0000000b0000000
	assert_equal "$stderr" "$( {
		echo "mq-rm: 0000000b0000000: ambiguous, 12 messages match:"
		for i in 1 2 3 4 5 6 7 8 9 10; do
			printf 'mq-rm:   0000000b000000%02x.1.000000000001\n' "$i"
		done
		echo "mq-rm:   and 2 more"
	} )"
	assert_equal "$(messages | sort)" "$before"
	# Two: both listed, no "more".
	mq-rm 0000000b0000000a 0000000b0000000b 0000000b0000000c 0000000b00000003 \
	    0000000b00000004 0000000b00000005 0000000b00000006 0000000b00000007 \
	    0000000b00000008 0000000b00000009
	run -2 --separate-stderr mq-rm 0000000b
	assert_equal "$stderr" "$(printf '%s\n' "mq-rm: 0000000b: ambiguous, 2 messages match:" \
	    "mq-rm:   0000000b00000001.1.000000000001" "mq-rm:   0000000b00000002.1.000000000001")"
}

@test "mq-rm -: IDs from standard input, one a line (blank ones skipped) or NUL-terminated with -0; mq-ls -s dead | cut -f1 | mq-rm - removes the dead" {
	printf '%s\n' a b c d e | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	mapfile -t ids <"$BATS_TEST_TMPDIR/ids"
	for _ in 1 2; do mq-ack -x broken "$(mq-recv)"; done
	run -0 --separate-stderr bash -c 'mq-ls -s dead | cut -f 1 | mq-rm -v -'
	# dead/ is listed as read, in no order.
	assert_equal "$(sort <<<"$stderr")" "$(printf 'mq-rm: removed %s (dead)\n' "${ids[0]}" "${ids[1]}" | sort)"
	assert_equal "$(mq-ls | wc -l)" 3
	run -0 mq-rm - <<<"$(printf '%s\n\n\t\n%s\n' "${ids[2]}" "${ids[3]%?}")"
	run -0 bash -c 'printf "%s\0" "$1" | mq-rm -0 -' _ "${ids[4]}"
	assert_equal "$(messages)" ""
	# Nothing read: nothing to do.
	run -1 --separate-stderr mq-rm - </dev/null
	assert_equal "$stderr" ""
}

@test "mq-rm -: a malformed line is exit 2 naming it, and nothing is removed" {
	a=$(echo a | mq-send)
	before=$(messages)
	run -2 --separate-stderr mq-rm - <<<"$(printf '%s\n../x\n' "$a")"
	assert_equal "$stderr" "mq-rm: ../x: not a message ID"
	run -2 --separate-stderr bash -c 'printf "%s\n" "$1" | mq-rm -0 -' _ "$a"
	assert_equal "$stderr" "mq-rm: $a\\n: not a message ID"
	assert_equal "$(messages)" "$before"
}

@test "mq-rm: an ID named twice, or with its prefix, is removed once: exit 0, no 'no such message'" {
	id=$(echo a | mq-send)
	other=$(echo b | mq-send)
	run -0 --separate-stderr mq-rm "$id" "${id:0:12}" "$id"
	assert_equal "$stderr" ""
	printf '%s\n%s\n' "$other" "$other" >"$BATS_TEST_TMPDIR/ids"
	run -0 --separate-stderr mq-rm -v - <"$BATS_TEST_TMPDIR/ids"
	assert_equal "$stderr" "mq-rm: removed $other (ready)"
	assert_equal "$(mq-ls | wc -l)" 0
}
