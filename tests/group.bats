load helper

# Ordered groups: mq-send -g GROUP.

# The body of one claimed message (its receipt in $r), or fails.  "ahead
# SECS" first: mq-recv runs with the clock that far ahead (faketime).
recv_one() {
	local clock=()
	if [ "${1:-}" = ahead ]; then
		clock=(ahead "$2")
		shift 2
	fi
	r=$("${clock[@]}" mq-recv "$@")
	body=$(cat "$r")
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
	[[ $output == *ttl* ]]
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
	# A consumer that claims and dies: its receipt is never used.  Its
	# lease is of 5 s and the clock moves past it, so that a slow run
	# cannot see it run out before the turn is seen held.
	mq-recv -t 5 >/dev/null
	run -1 mq-recv
	recv_one ahead 10
	assert_equal "$body" a1
	mq-ack "$r"
	recv_one
	assert_equal "$body" a2
}

@test "group: a worker killed while holding the turn: the turn comes back at once, its holder gone" {
	gsend A a1 a2
	timeout -s KILL 1 mq-recv -t 60 -- sh -c 'cat >/dev/null; exec sleep 3' \
	    >/dev/null 2>&1 </dev/null || true
	# Its lease has 60 s to run, but its holder is gone (once the kill
	# has ended it: timeout does not wait for that): the next claim takes
	# it back, as a lease run out, and the turn with it.
	for ((i = 0; i < 100; i++)); do
		mq-ls -s orphaned | grep -q . && break
		sleep 0.05
	done
	recv_one
	assert_equal "$body" a1
	assert_equal "$(basename "$r" | unheld | cut -d, -f3)" 2
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
	[[ ${r##*/} == "$id",*,1,*gA,d1 ]]
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

# The name in new/ of the claimed message whose receipt is $1.
new_name() {
	basename "$1" | unheld | cut -d, -f1,3-
}

@test "group: an ack racing a reclaim of its expired lease never leaves two of the group in flight" {
	gsend A a1 a2
	recv_one -t 1
	sleep 1.2
	# mq-ack stopped where it hands the turn on, while another receiver
	# claims: a1's lease has run out, so a1 is what it would take.
	race_at mq-ack promote "$r" \
	    "mq-recv -t 60 >$BATS_TEST_TMPDIR/r2; echo \$? >$BATS_TEST_TMPDIR/rc2"
	[[ $output == *"Breakpoint 1"* ]] || fail "promote was not reached: $output"
	[[ $output == *"exited normally"* ]] || fail "the ack failed: $output"
	# a1 was out of reach: that receiver got nothing, and a2 is next.
	assert_equal "$(cat "$BATS_TEST_TMPDIR/rc2")" 1
	assert_equal "$(count cur)" 0
	recv_one
	assert_equal "$body" a2
	run -1 mq-recv
}

@test "group: mq-sweep finishes a leave killed before its promote (leaving.*.ack: head again; .dead: buried)" {
	gsend A a1 a2
	recv_one
	mv "$r" "$MQ_DIR/groups/A/leaving.$(new_name "$r").ack"
	run -1 mq-recv
	run mq-sweep -v
	assert_success
	[[ $output == *"group A: unfinished ack: head again"* ]] || fail "$output"
	# The ack was never confirmed: a1 comes again, still the head.
	recv_one
	assert_equal "$body" a1
	run -1 mq-recv
	mv "$r" "$MQ_DIR/groups/A/leaving.$(new_name "$r").dead"
	run mq-sweep -v
	assert_success
	[[ $output == *"group A: unfinished burial: buried"* ]] || fail "$output"
	assert_equal "$(count dead)" 1
	recv_one
	assert_equal "$body" a2
	run -1 mq-recv
	assert_equal "$(find "$MQ_DIR/groups/A" -name 'leaving.*' | wc -l)" 0
}

@test "group: mq-sweep finishes a leave killed after its promote (leaving.*.dead, .ack: done)" {
	gsend A a1 a2
	recv_one
	assert_equal "$body" a1
	echo plain | mq-send >/dev/null
	mv "$r" "$MQ_DIR/groups/A/leaving.$(new_name "$r").dead"
	# Its promote was made: a2 in new/, with the turn.
	a2=$(find "$MQ_DIR/groups/A" -mindepth 4 -type f)
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	[[ $leaf == "$MQ_DIR"/new/* ]] || fail "no leaf in new/: $leaf"
	mv "$a2" "$leaf/"
	ln -f "$leaf/${a2##*/}" "$MQ_DIR/groups/A/turn"
	run mq-sweep -v
	assert_success
	[[ $output == *"group A: unfinished burial: buried"* ]] || fail "$output"
	assert_equal "$(count dead)" 1
	run mq-recv -n 5
	assert_equal "${#lines[@]}" 2
	run sort "${lines[@]}"
	assert_output "$(printf 'a2\nplain')"
	# An ack's, with nothing parked: the turn was unlinked.
	gsend B b1
	recv_one
	mv "$r" "$MQ_DIR/groups/B/leaving.$(new_name "$r").ack"
	rm "$MQ_DIR/groups/B/turn"
	run mq-sweep -v
	[[ $output == *"group B: unfinished ack: acked"* ]] || fail "$output"
	assert_equal "$(find "$MQ_DIR/groups" -name 'leaving.*' | wc -l)" 0
	assert_equal "$(count dead)" 1
}

# What a power cut can leave (tests/powercut.bats found it): the burial's
# first rename made durable by a later sync, not its last.  The caller was
# told "dead-lettered": every tool sees a dead letter before any sweep.
@test "group: a head a crash left half way through its burial is dead to mq-ls, mq-stat, mq-show, mq-dlq and mq-rm" {
	gsend A a1 a2
	recv_one
	id=$(basename "$r" | cut -d, -f1)
	printf 'poison' >"$MQ_DIR/reason/$id"
	mv "$r" "$MQ_DIR/groups/A/leaving.$(new_name "$r").dead"
	run mq-ls
	assert_success
	assert_line --regexp "^$id	dead	1	"
	run mq-ls -s dead --json
	assert_success
	assert_output --partial "\"id\":\"$id\",\"state\":\"dead\""
	assert_output --partial '"reason":"poison"'
	run mq-stat --json
	assert_output --partial '"blocked":1,'
	assert_output --partial '"dead":1,'
	run mq-show "$id"
	assert_success
	assert_output a1
	cp -a "$MQ_DIR" "$BATS_TEST_TMPDIR/copy"
	# mq-dlq finishes the burial first: a dead letter in dead/, a2 next.
	run mq-dlq ls
	assert_success
	assert_line --regexp "^$id	1	.*	poison	"
	assert_equal "$(find "$MQ_DIR/groups/A" -name 'leaving.*' | wc -l)" 0
	recv_one
	assert_equal "$body" a2
	# mq-rm by ID finishes it too, then removes the dead letter.
	MQ_DIR="$BATS_TEST_TMPDIR/copy"
	run mq-rm -v "$id"
	assert_success
	assert_output --partial "removed $id (dead)"
	run mq-ls
	assert_output --regexp "	ready	"
	refute_output --partial "$id"
	assert_equal "$(find "$MQ_DIR/groups/A" -name 'leaving.*' | wc -l)" 0
}

@test "group: overflow=drop-oldest neither counts nor drops parked messages" {
	gsend g h p1 p2 p3
	recv_one
	assert_equal "$body" h
	mq-conf max-depth=3 overflow=drop-oldest
	for b in a b c d; do echo "$b" | mq-send >/dev/null; done
	# Room for three plain ones: only a was dropped, the parked wait.
	assert_equal "$(count dead)" 1
	assert_equal "$(parked g)" 3
	run mq-recv -n 10
	run cat "${lines[@]}"
	assert_output "$(printf 'b\nc\nd')"
}

@test "group: a parked message whose sync fails is queued: its ID is printed, exit 4" {
	so="$BATS_TEST_DIRNAME/fault.so"
	[ -f "$so" ] || fail "tests/fault.so is not built (make tests/fault.so)"
	gsend A a1
	run -4 --separate-stderr env LD_PRELOAD="$so" \
	    MQ_FAULT='fsync:errno=EIO:at=/groups/' \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    timeout 20 mq-send -g A -k key2 <<<a2
	[[ $stderr == *"Input/output error"* ]] || fail "$stderr"
	id=$output
	assert_equal "$(parked A)" 1
	[[ $(find "$MQ_DIR/groups/A" -mindepth 4 -type f) == */"$id",* ]]
	# Its key was kept: a resend is the same message.
	run mq-send -g A -k key2 <<<a2
	assert_output "$id"
	assert_equal "$(parked A)" 1
}

@test "group: a send into a group with parked messages and no turn does not jump the queue" {
	gsend A a1 a2 a3
	# The head removed by hand, and its turn with it (as mq-sweep does).
	rm "$(find "$MQ_DIR/new" -type f)" "$MQ_DIR/groups/A/turn"
	gsend A a4
	run drain
	assert_output "$(printf 'a2\n\na3\n\na4\n')"
}

@test "group: a claim that parks takes a spare directory when none can be made" {
	so="$BATS_TEST_DIRNAME/fault.so"
	[ -f "$so" ] || fail "tests/fault.so is not built (make tests/fault.so)"
	gsend A a1 a2
	recv_one
	assert_equal "$body" a1
	echo plain | mq-send >/dev/null
	# A promote killed after its rename: a2 in new/, the turn a1's, and
	# no directory of the group's tree left to park a2 in.
	a2=$(find "$MQ_DIR/groups/A" -mindepth 4 -type f)
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	[[ $leaf == "$MQ_DIR"/new/* ]] || fail "no leaf in new/: $leaf"
	mv "$a2" "$leaf/"
	find "$MQ_DIR/groups/A" -mindepth 1 -type d -empty -delete
	find "$MQ_DIR/groups/A" -mindepth 1 -type d -empty -delete
	find "$MQ_DIR/groups/A" -mindepth 1 -type d -empty -delete
	assert_equal "$(find "$MQ_DIR/groups/A" -mindepth 1 -type d | wc -l)" 0
	run --separate-stderr env LD_PRELOAD="$so" \
	    MQ_FAULT='mkdirat:errno=ENOSPC:at=/groups/' \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    timeout 20 mq-recv -n 5
	assert_equal "$(parked A)" 1
	mq-ack "$r"
	recv_one
	assert_equal "$body" a2
}

@test "group: a symbolic link at groups/G is not followed by the claim's turn check" {
	gsend A a1 a2
	# groups/A moved away and replaced by a link to it: its turn is a1's.
	mv "$MQ_DIR/groups/A" "$BATS_TEST_TMPDIR/elsewhere"
	ln -s "$BATS_TEST_TMPDIR/elsewhere" "$MQ_DIR/groups/A"
	run --separate-stderr mq-recv
	assert_failure
	[[ $output != *"$MQ_DIR"* ]] || fail "handed out: $output"
}

@test "group: mq-sweep finishes a burial's promote killed after its move: the group stays in order" {
	gsend A a1 a2 a3
	recv_one
	assert_equal "$body" a1
	echo plain | mq-send >/dev/null
	mv "$r" "$MQ_DIR/groups/A/leaving.$(new_name "$r").dead"
	# The promote recorded (turn.ID, a link to a2) and a2 moved into new/;
	# killed before the rename over turn: the turn is still a1's.
	a2=$(find "$MQ_DIR/groups/A" -mindepth 4 -type f -name '*,*' |
	    sort | head -n 1)
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	[[ $leaf == "$MQ_DIR"/new/* ]] || fail "no leaf in new/: $leaf"
	name=${a2##*/}
	mv "$a2" "$leaf/"
	ln "$leaf/$name" "$MQ_DIR/groups/A/turn.${name%%,*}"
	run mq-sweep -v
	assert_success
	[[ $output == *"group A: unfinished promote: given the turn"* ]] ||
	    fail "$output"
	[[ $output == *"group A: unfinished burial: buried"* ]] || fail "$output"
	assert_equal "$(count dead)" 1
	run drain
	assert_success
	assert_equal "$(grep -v -e plain -e '^$' <<<"$output" | tr '\n' ' ')" \
	    "a2 a3 "
	assert_equal "$(find "$MQ_DIR/groups/A" -name 'turn.*' | wc -l)" 0
}

@test "group: mq-sweep removes the link of a promote killed before its move" {
	gsend A a1 a2 a3
	recv_one
	assert_equal "$body" a1
	mv "$r" "$MQ_DIR/groups/A/leaving.$(new_name "$r").dead"
	a2=$(find "$MQ_DIR/groups/A" -mindepth 4 -type f | sort | head -n 1)
	name=${a2##*/}
	ln "$a2" "$MQ_DIR/groups/A/turn.${name%%,*}"
	run mq-sweep -v
	assert_success
	[[ $output != *"unfinished promote"* ]] || fail "$output"
	assert_equal "$(find "$MQ_DIR/groups/A" -name 'turn.*' | wc -l)" 0
	run drain
	assert_output "$(printf 'a2\n\na3\n')"
}

@test "group: a leave whose last step fails after its promote is done (exit 0, reason kept); mq-sweep finishes it" {
	gsend A a1 a2 a3
	recv_one
	assert_equal "$body" a1
	run --separate-stderr faulty 'unlinkat:errno=EIO:at=/leaving.' mq-ack "$r"
	assert_success
	recv_one
	assert_equal "$body" a2
	run --separate-stderr faulty 'renameat:errno=EIO:at=/leaving.' \
	    mq-ack -x "it broke" "$r"
	assert_success
	assert_equal "$(count dead)" 0
	assert_equal "$(find "$MQ_DIR/groups/A" -name 'leaving.*' | wc -l)" 2
	recv_one
	assert_equal "$body" a3
	run mq-sweep -v
	assert_success
	[[ $output == *"group A: unfinished ack: acked"* ]] || fail "$output"
	[[ $output == *"group A: unfinished burial: buried"* ]] || fail "$output"
	assert_equal "$(find "$MQ_DIR/groups/A" -name 'leaving.*' | wc -l)" 0
	run mq-dlq ls
	[[ $output == *"it broke"* ]] || fail "$output"
}

@test "group: a leave whose promote fails puts the head back, into new/ when its bucket is gone" {
	gsend A a1 a2
	recv_one
	assert_equal "$body" a1
	top=$(find "$MQ_DIR/groups/A" -mindepth 1 -maxdepth 1 -type d)
	[ -n "$top" ] || fail "no tree"
	# The promote's move fails; the move back to cur/ finds no bucket.
	run -4 --separate-stderr faulty \
	    "renameat:errno=EIO:at=$top/ renameat:errno=ENOENT:nth=1:at=/leaving." \
	    mq-ack "$r"
	[[ $stderr == *"Input/output error"* ]] || fail "$stderr"
	assert_equal "$(find "$MQ_DIR/groups/A" -name 'leaving.*' | wc -l)" 0
	# Still the head, visible now; a2 still parked behind it.
	recv_one
	assert_equal "$body" a1
	assert_equal "$(parked A)" 1
	mq-ack "$r"
	recv_one
	assert_equal "$body" a2
}

@test "group: mq-sweep drops the link of a killed promote whose message was buried since" {
	gsend A a1
	echo a2 | mq-send -g A --ttl 0.2 >/dev/null
	gsend A a3
	recv_one
	assert_equal "$body" a1
	echo plain | mq-send >/dev/null
	mv "$r" "$MQ_DIR/groups/A/leaving.$(new_name "$r").dead"
	# Killed after a2's move into new/, before the rename over turn.
	a2=$(find "$MQ_DIR/groups/A" -mindepth 4 -type f | sort | head -n 1)
	leaf=$(dirname "$(find "$MQ_DIR/new" -type f)")
	[[ $leaf == "$MQ_DIR"/new/* ]] || fail "no leaf in new/: $leaf"
	name=${a2##*/}
	mv "$a2" "$leaf/"
	ln "$leaf/$name" "$MQ_DIR/groups/A/turn.${name%%,*}"
	sleep 0.4
	# The claim that meets a2 buries it (expired): it never had the turn.
	recv_one
	assert_equal "$body" plain
	mq-ack "$r"
	assert_equal "$(count dead)" 1
	run mq-sweep -v
	assert_success
	[[ $output != *"unfinished promote"* ]] || fail "$output"
	run drain
	assert_output a3
	assert_equal "$(count dead)" 2
}
