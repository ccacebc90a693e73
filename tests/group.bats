load helper

# Ordered groups: mq-send -g GROUP.

# Sends each of the remaining arguments as a message of group $1.
gsend() {
	local g=$1 b
	shift
	for b; do
		echo "$b" | mq-send -g "$g" >/dev/null
	done
}

# The body of one claimed message (its receipt in $r), or fails.
recv_one() {
	r=$(mq-recv "$@")
	body=$(cat "$r")
}

# The parked messages of group $1 (files in its tree, not its turn).
parked() {
	find "$MQ_DIR/groups/$1" -mindepth 4 -type f | wc -l | tr -d ' '
}

@test "group: a bad group exits 2 and sends nothing" {
	for g in '' "$(printf 'a%.0s' $(seq 65))" .hidden a/b a,b 'a b'; do
		run -2 --separate-stderr mq-send -g "$g" </dev/null
		[[ $stderr == *"invalid group"* ]] || fail "-g '$g': $stderr"
	done
	assert_equal "$(count new 2>/dev/null || echo 0)" 0
	# 64 bytes of the alphabet are a group.
	echo x | mq-send -g "$(printf 'a%.0s' $(seq 60)).-_9"
}

@test "group: -g with -D is a usage error (exit 2)" {
	run -2 --separate-stderr mq-send -g A -D 10 </dev/null
	[[ $stderr == *"-g and -D exclude each other"* ]]
	run -2 --separate-stderr mq-send -D 0 -g A </dev/null
}

@test "group: one in flight at a time; the next mq-recv gets another group's or nothing" {
	gsend A a1 a2
	recv_one
	assert_equal "$body" a1
	run -1 mq-recv
	gsend B b1
	recv_one
	assert_equal "$body" b1
	run -1 mq-recv -n 5
}

@test "group: send order is kept (five in a group, drained with acks)" {
	gsend A 1 2 3 4 5
	run drain
	assert_output "$(printf '1\n\n2\n\n3\n\n4\n\n5\n')"
	# Nothing is left behind: sweep removes the empty group.
	mq-sweep
	assert_not_exist "$MQ_DIR/groups/A"
}

@test "group: a released message comes back before the later ones" {
	gsend A a1 a2 a3
	recv_one
	mq-ack -r "$r"
	run drain
	assert_output "$(printf 'a1\n\na2\n\na3\n')"
}

@test "group: a delayed release keeps its group waiting while other groups flow" {
	gsend A a1 a2
	gsend B b1 b2
	recv_one
	assert_equal "$body" a1
	mq-ack -r 60 "$r"
	run drain
	assert_output "$(printf 'b1\n\nb2\n')"
	run -1 mq-recv
}

@test "group: an expired lease keeps the order (the same message comes again)" {
	gsend A a1 a2
	recv_one -t 0.2
	sleep 0.4
	recv_one
	assert_equal "$body" a1
	[[ ${r##*/} == *,2,gA ]]
	mq-ack "$r"
	recv_one
	assert_equal "$body" a2
}

@test "group: an ack frees the group" {
	gsend A a1 a2
	recv_one
	run -1 mq-recv
	mq-ack "$r"
	recv_one
	assert_equal "$body" a2
}

@test "group: mq-ack -x frees the group" {
	gsend A a1 a2
	recv_one
	mq-ack -x broken "$r"
	recv_one
	assert_equal "$body" a2
	run mq-dlq ls
	[[ $output == *broken* ]]
}

@test "group: max attempts (buried at the claim) frees the group" {
	gsend A a1 a2
	recv_one
	mq-ack -r "$r"
	# a1 has had its one attempt: buried by this claim, and a2 is next.
	run drain -m 1
	assert_output a2
	assert_equal "$(count dead)" 1
}

@test "group: the head's time to live running out frees the group" {
	echo a1 | mq-send -g A --ttl 0.2 >/dev/null
	gsend A a2
	sleep 0.4
	run drain
	assert_output a2
	run mq-dlq ls
	[[ $output == *expired* ]]
}

@test "group: parked messages whose time to live ran out cannot hold up their group" {
	gsend A a1
	echo a2 | mq-send -g A --ttl 0.2 >/dev/null
	echo a3 | mq-send -g A --ttl 0.2 >/dev/null
	gsend A a4
	recv_one
	sleep 0.4
	mq-ack "$r"
	run drain
	assert_output a4
	assert_equal "$(count dead)" 2
}

@test "group: other messages (no group, other groups) are claimed around a blocked group" {
	gsend A a1 a2 a3
	echo plain | mq-send >/dev/null
	gsend B b1
	recv_one
	assert_equal "$body" a1
	run mq-recv -n 10
	assert_success
	assert_equal "${#lines[@]}" 2
	run cat "${lines[@]}"
	assert_output "$(printf 'plain\nb1')"
}

@test "group: worker mode with several slots never runs two of a group at once, and keeps order" {
	W=$BATS_TEST_TMPDIR
	for i in 1 2 3 4 5 6; do gsend A "$i"; gsend B "$i"; done
	run --separate-stderr timeout -k 5 60 mq-recv -P 4 -w 1 -- sh -c \
	    'n=$(cat); echo "start $MQ_GROUP $n" >>"$0/log"; sleep 0.1; echo "end $MQ_GROUP $n" >>"$0/log"' "$W"
	assert_success
	run awk '
	$1 == "start" { if (busy[$2]) { print "overlap", $2, $3; bad = 1 }
		busy[$2] = 1; order[$2] = order[$2] $3 }
	$1 == "end" { busy[$2] = 0 }
	END { print order["A"], order["B"]; exit bad }' "$W/log"
	assert_success
	assert_output "123456 123456"
}

@test "group: several worker processes at once never run two of a group at once, and keep order" {
	W=$BATS_TEST_TMPDIR
	for i in 1 2 3 4 5 6 7 8; do gsend A "$i"; gsend B "$i"; done
	for _ in 1 2 3; do
		timeout -k 5 60 mq-recv -P 2 -w 1 -- sh -c \
		    'n=$(cat); echo "start $MQ_GROUP $n" >>"$0/log"; sleep 0.05; echo "end $MQ_GROUP $n" >>"$0/log"' "$W" \
		    2>>"$W/err" &
	done
	wait
	run awk '
	$1 == "start" { if (busy[$2]) { print "overlap", $2, $3; bad = 1 }
		busy[$2] = 1; order[$2] = order[$2] $3 }
	$1 == "end" { busy[$2] = 0 }
	END { print order["A"], order["B"]; exit bad }' "$W/log"
	assert_success
	assert_output "12345678 12345678"
}

@test "group: a crash while holding the turn frees it when the lease runs out" {
	gsend A a1 a2
	# A consumer that claims and dies: its receipt is never used.
	mq-recv -t 0.3 >/dev/null
	run -1 mq-recv
	sleep 0.5
	recv_one
	assert_equal "$body" a1
	mq-ack "$r"
	recv_one
	assert_equal "$body" a2
}

@test "group: a worker killed while holding the turn: the turn comes back when the lease runs out" {
	gsend A a1 a2
	timeout -s KILL 1 mq-recv -t 1 -- sh -c 'cat >/dev/null; exec sleep 3' \
	    >/dev/null 2>&1 </dev/null || true
	run -1 mq-recv
	# Its last extension of the lease ran for another second at most.
	sleep 1.5
	recv_one
	assert_equal "$body" a1
	mq-ack "$r"
	recv_one
	assert_equal "$body" a2
}

@test "group: crash case by hand: a head without its turn is handed out and gets the turn" {
	gsend A a1 a2
	rm "$MQ_DIR/groups/A/turn"
	recv_one
	assert_equal "$body" a1
	assert_equal "$(stat -c %i "$MQ_DIR/groups/A/turn")" "$(stat -c %i "$r")"
	run -1 mq-recv
	mq-ack "$r"
	recv_one
	assert_equal "$body" a2
}

@test "group: crash case by hand: a message in new/ whose turn is another's is parked, not handed out" {
	gsend A a1 a2
	recv_one
	echo plain | mq-send >/dev/null
	# A promote killed after its rename: a2 in new/, the turn still a1's.
	a2=$(find "$MQ_DIR/groups/A" -mindepth 4 -type f)
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	mv "$a2" "$leaf/"
	assert_equal "$(parked A)" 0
	run mq-recv -n 5
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_equal "$(cat "${lines[0]}")" plain
	assert_equal "$(parked A)" 1
	mq-ack "$r"
	recv_one
	assert_equal "$body" a2
}

@test "group: mq-sweep removes empty group dirs and mends a turn whose message is gone" {
	gsend A a1
	recv_one
	mq-ack "$r"
	assert_exist "$MQ_DIR/groups/A"
	run mq-sweep -v
	assert_success
	[[ $output == *"group A: empty: removed"* ]]
	assert_not_exist "$MQ_DIR/groups/A"
	# A head removed by hand: its turn (nlink 1) goes, the next gets it.
	gsend B b1 b2
	rm "$(find "$MQ_DIR/new" -type f)"
	run -1 mq-recv
	run mq-sweep -v
	[[ $output == *"group B: turn of a message gone removed"* ]]
	[[ $output == *"group B: next message given the turn"* ]]
	recv_one
	assert_equal "$body" b2
}

@test "group: a redriven dead letter of a group re-enters its group" {
	gsend A a1 a2
	recv_one
	id=$(basename "$r" | cut -d, -f1)
	mq-ack -x broken "$r"
	recv_one
	assert_equal "$body" a2
	# a2 holds the turn: a1 waits behind it.
	mq-dlq redrive "$id"
	assert_equal "$(parked A)" 1
	run -1 mq-recv
	mq-ack "$r"
	recv_one
	assert_equal "$body" a1
	[[ ${r##*/} == "$id",*,1,*gA ]]
}

@test "group: a redriven dead letter of a group with no head becomes its head" {
	gsend A a1
	recv_one
	id=$(basename "$r" | cut -d, -f1)
	mq-ack -x broken "$r"
	mq-dlq redrive "$id"
	gsend A a2
	recv_one
	assert_equal "$body" a1
	run -1 mq-recv
}

@test "group: mq-dlq ls --json shows the group" {
	gsend orders-eu a1
	recv_one
	mq-ack -x broken "$r"
	run mq-dlq ls --json
	[[ $output == *'"group":"orders-eu"'* ]]
}

@test "group: worker mode exports MQ_GROUP" {
	gsend orders-eu a1
	run --separate-stderr timeout 20 mq-recv -n 1 -- sh -c 'echo "$MQ_GROUP"'
	assert_success
	assert_output orders-eu
}

@test "group: mq-stat counts the parked messages as blocked; max-depth counts them" {
	gsend A a1 a2 a3
	run mq-stat --json
	[[ $output == *'"ready":1,'* ]]
	[[ $output == *'"blocked":2'* ]]
	run mq-stat --prometheus
	[[ $output == *'state="blocked"} 2'* ]]
	mq-conf max-depth=3
	run -6 --separate-stderr mq-send -g A <<<a4
	run -6 --separate-stderr mq-send <<<plain
}
