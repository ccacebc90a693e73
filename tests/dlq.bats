load helper

# Sends the arguments as messages and dead-letters each with reason "r<n>".
bury() {
	local i=0 r
	printf '%s\n' "$@" | mq-send -l >/dev/null
	for _ in "$@"; do
		i=$((i + 1))
		r=$(mq-recv)
		mq-ack -x "r$i" "$r"
	done
}

@test "mq-dlq ls: no dead letters prints nothing and exits 0" {
	mq-send </dev/null >/dev/null
	run --separate-stderr mq-dlq ls
	assert_success
	assert_output ""
	run mq-dlq
	assert_success
	assert_output ""
}

@test "mq-dlq ls: ID, attempts, time of death, reason, size, start of body" {
	id=$(echo "hello world" | mq-send)
	r=$(mq-recv)
	mq-ack -x "it broke" "$r"
	run mq-dlq ls
	assert_success
	IFS=$'\t' read -r f1 f2 f3 f4 f5 f6 <<<"$output"
	assert_equal "$f1" "$id"
	assert_equal "$f2" 1
	[[ $f3 =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]]
	now=$(date -u +%s); died=$(date -u -d "$f3" +%s)
	[ $((now - died)) -le 5 ]
	assert_equal "$f4" "it broke"
	assert_equal "$f5" 12
	assert_equal "$f6" 'hello world\n'
}

@test "mq-dlq ls: dead letters are listed in enqueue order" {
	bury a b c
	run mq-dlq ls
	assert_equal "$(cut -f 4 <<<"$output" | tr '\n' ' ')" "r1 r2 r3 "
}

@test "mq-dlq ls: control characters and bad UTF-8 never reach the terminal raw" {
	printf 'body\033[31m\r\n\tx\x9b\xff\xc3\xa9' | mq-send >/dev/null
	r=$(mq-recv)
	mq-ack -x "$(printf 'line1\nline2\033]0;pwned\007 \\ é')" "$r"
	run mq-dlq ls
	assert_equal "${#lines[@]}" 1
	[[ $output != *$'\033'* ]]
	[[ $output != *$'\r'* ]]
	[[ $output != *$'\x9b'* ]]
	f4=$(cut -f 4 <<<"$output")
	assert_equal "$f4" 'line1\nline2\x1b]0;pwned\x07 \\ é'
	f6=$(cut -f 6 <<<"$output")
	assert_equal "$f6" 'body\x1b[31m\r\n\tx\x9b\xffé'
}

@test "mq-dlq ls --json: one object per line, reason exact" {
	id=$(printf 'a"b' | mq-send)
	r=$(mq-recv)
	mq-ack -x "$(printf 'tab\there "q" \\ nl\nend')" "$r"
	run mq-dlq ls --json
	assert_success
	assert_equal "${#lines[@]}" 1
	# The shape of mq-ls --json (mq_message_json): time is died.
	[[ $output == "{\"id\":\"$id\",\"state\":\"dead\",\"attempts\":1,\"time\":\"20"*"\",\"priority\":0,\"died\":\"20"*"\",\"reason\":\"tab\\there \\\"q\\\" \\\\ nl\\nend\",\"deaths\":[{\"time\":\"20"*"\",\"reason\":\"tab\\there \\\"q\\\" \\\\ nl\\nend\",\"attempts\":1}],\"size\":3,\"body\":\"a\\\"b\"}" ]]
	if command -v python3 >/dev/null; then
		reason=$(python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["reason"], end="")' <<<"$output")
		assert_equal "$reason" "$(printf 'tab\there "q" \\ nl\nend')"
	fi
}

# One shape for a dead letter in every listing (mq_message_json): mq-ls
# -l --json prints the object mq-dlq ls --json does, before the burial of
# one past its time to live as after it.
@test "mq-dlq ls --json and mq-ls -l -s dead --json print the same object for each dead letter" {
	echo one | mq-send -k kk -p 2 >/dev/null
	mq-ack -x 'bad "x"' "$(mq-recv)"
	echo two | mq-send --ttl 1 >/dev/null
	run -0 ahead 5 mq-ls -l -s dead --json
	sort <<<"$output" >"$BATS_TEST_TMPDIR/ls"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/ls")" 2
	grep -q '"reason":"ttl"' "$BATS_TEST_TMPDIR/ls"
	run -0 ahead 5 mq-dlq ls --json
	assert_equal "$(sort <<<"$output")" "$(cat "$BATS_TEST_TMPDIR/ls")"
	# Buried now: the same again.
	run -0 ahead 5 mq-ls -l -s dead --json
	assert_equal "$(sort <<<"$output")" "$(cat "$BATS_TEST_TMPDIR/ls")"
	assert_equal "$(find "$MQ_DIR/dead" -type f | wc -l)" 2
}

@test "mq-dlq ls --json shows a dead letter's priority and group, and redrive keeps them" {
	mq-send -l </dev/null >/dev/null
	id=$(printf '%016x.4242.0123456789ab' $(($(date +%s) * 1000000000)))
	echo body >"$MQ_DIR/dead/$id,$(date +%s),2,p3,gorders-eu"
	run mq-dlq ls --json
	assert_success
	[[ $output == *'"priority":3,"group":"orders-eu","died":"'*'","reason":null,"deaths":[{"time":"'*'","reason":null,"attempts":2}],"size":5,'* ]]
	mq-dlq redrive "$id"
	r=$(mq-recv)
	[[ ${r##*/} == "$id",*,1,*,p3,gorders-eu,d1 ]]
}

@test "mq-dlq show: prints the body byte for byte" {
	head -c 100000 /dev/urandom >"$BATS_TEST_TMPDIR/body"
	id=$(mq-send "$BATS_TEST_TMPDIR/body")
	r=$(mq-recv)
	mq-ack -x why "$r"
	mq-dlq show "$id" >"$BATS_TEST_TMPDIR/out"
	cmp "$BATS_TEST_TMPDIR/body" "$BATS_TEST_TMPDIR/out"
}

@test "mq-dlq show: an unknown ID exits 1" {
	mq-send </dev/null >/dev/null
	run -1 --separate-stderr mq-dlq show 0000000000000001.1.000000000001
	[[ $stderr == *"no such dead letter"* ]]
	run -2 mq-dlq show
}

@test "mq-dlq redrive: back to new/ in the original order with attempts reset" {
	bury a b c
	mq-dlq redrive --all
	assert_equal "$(count dead)" 0
	assert_equal "$(count reason)" 0
	mapfile -t rs < <(mq-recv -n 3)
	assert_equal "$(cat "${rs[@]}" | tr -d '\n')" abc
	# ID,DEADLINE,ATTEMPT and, since a redrive enqueues anew, ,SENT,TTL
	IFS=, read -r _ _ attempt _ <<<"$(unheld <<<"${rs[0]##*/}")"
	assert_equal "$attempt" 1
}

@test "mq-dlq redrive ID: only the named dead letters" {
	bury a b c
	mapfile -t ids < <(mq-dlq ls | cut -f 1)
	mq-dlq redrive "${ids[2]}" "${ids[0]}"
	assert_equal "$(count dead)" 1
	assert_equal "$(mq-dlq ls | cut -f 1)" "${ids[1]}"
	mapfile -t rs < <(mq-recv -n 3)
	assert_equal "$(cat "${rs[@]}" | tr -d '\n')" ac
}

@test "mq-dlq redrive --to DIR: to another spool" {
	bury a b
	mq-dlq redrive --to "$BATS_TEST_TMPDIR/other" --all
	assert_equal "$(count dead)" 0
	run -1 mq-recv
	mapfile -t rs < <(mq-recv -d "$BATS_TEST_TMPDIR/other" -n 3)
	assert_equal "$(cat "${rs[@]}" | tr -d '\n')" ab
}

@test "mq-dlq redrive --to DIR: across file systems by copy" {
	[ -d /dev/shm ] && [ -w /dev/shm ] || skip "no /dev/shm"
	[ "$(stat -c %d /dev/shm)" != "$(stat -c %d "$BATS_TEST_TMPDIR")" ] || skip "same file system"
	bury a
	other=$(mktemp -d /dev/shm/mq.XXXXXX)
	mq-dlq redrive --to "$other/q" --all
	assert_equal "$(count dead)" 0
	r=$(mq-recv -d "$other/q")
	assert_equal "$(cat "$r")" a
	rm -rf "$other"
}

@test "mq-dlq purge: deletes the named dead letters or --all" {
	bury a b c
	mapfile -t ids < <(mq-dlq ls | cut -f 1)
	mq-dlq purge "${ids[1]}"
	assert_equal "$(count dead)" 2
	mq-dlq purge --all
	assert_equal "$(count dead)" 0
	assert_equal "$(count reason)" 0
	run -1 mq-recv
}

@test "mq-dlq: redrive or purge with no ID and no --all changes nothing and exits 2" {
	bury a
	run -2 mq-dlq redrive
	run -2 mq-dlq purge
	run -2 mq-dlq redrive --to "$BATS_TEST_TMPDIR/x"
	assert_equal "$(count dead)" 1
	assert_not_exist "$BATS_TEST_TMPDIR/x"
}

@test "mq-dlq: an unknown ID to redrive or purge exits 1, known ones are still handled" {
	bury a
	id=$(mq-dlq ls | cut -f 1)
	run -1 mq-dlq purge 0000000000000001.1.000000000001 "$id"
	assert_equal "$(count dead)" 0
}

@test "mq-dlq: bad usage exits 2" {
	mq-send </dev/null >/dev/null
	run -2 mq-dlq frobnicate
	run -2 mq-dlq ls extra
	run -2 mq-dlq show --json x
	run -2 mq-dlq ls -t x
	run -2 mq-dlq purge --all x
}

@test "mq-dlq: a missing spool is an error (4)" {
	run -4 mq-dlq ls
	assert_not_exist "$MQ_DIR"
}

@test "mq-dlq redrive: a parked one whose sync fails does not fail the next one's placement" {
	echo g1 | mq-send -g A >/dev/null
	echo p | mq-send >/dev/null
	r=$(mq-recv)
	assert_equal "$(cat "$r")" g1
	mq-ack -x r1 "$r"
	r=$(mq-recv)
	assert_equal "$(cat "$r")" p
	mq-ack -x r2 "$r"
	echo h | mq-send -g A >/dev/null
	run -4 --separate-stderr faulty 'fsync:errno=EIO:at=/groups/' \
	    mq-dlq redrive --all
	[[ $stderr == *"Input/output error"* ]] || fail "$stderr"
	# Both are queued: g1 parked behind h, p in new/.
	assert_equal "$(count dead)" 0
	assert_equal "$(parked A)" 1
	run mq-recv -n 5
	assert_equal "${#lines[@]}" 2
	run sort "${lines[@]}"
	assert_output "$(printf 'h\np')"
}

@test "mq-dlq redrive by copy: a parked one whose sync fails is no dead letter any more" {
	echo h | mq-send -g A >/dev/null
	echo g1 | mq-send -g A >/dev/null
	r=$(mq-recv)
	mq-ack "$r"
	r=$(mq-recv)
	assert_equal "$(cat "$r")" g1
	mq-ack -x r1 "$r"
	echo h2 | mq-send -g A >/dev/null
	id=$(mq-dlq ls | cut -f 1)
	# Across file systems (EXDEV: copied), its parking's sync failing.
	run -4 --separate-stderr faulty \
	    'renameat:errno=EXDEV:at=/dead/ fsync:errno=EIO:at=/groups/' \
	    mq-dlq redrive "$id"
	[[ $stderr == *"Input/output error"* ]] || fail "$stderr"
	assert_equal "$(count dead)" 0
	assert_equal "$(count reason)" 0
	assert_equal "$(parked A)" 1
	# A retry finds nothing to redrive: no second copy.
	run -1 --separate-stderr mq-dlq redrive "$id"
	assert_equal "$(parked A)" 1
}

@test "mq-dlq redrive: a dead letter's reason does not come back as the last reason of its next death" {
	id=$(echo job | mq-send)
	r=$(mq-recv)
	mq-ack -r --reason "first life" "$r"
	run -1 --separate-stderr mq-recv -m 1
	mq-dlq redrive --all >/dev/null
	assert_not_exist "$MQ_DIR/reason/$id"
	assert_not_exist "$MQ_DIR/last/$id"
	r=$(mq-recv)
	mq-ack -r "$r"
	run -1 --separate-stderr mq-recv -m 1
	run -0 mq-dlq ls
	[[ $output == "$id	1	"*"	max attempts	"* ]]
}

# The time an ID was sent, in ms (its first 16 hex digits are ns).
sent_ms() {
	echo $((16#${1%%.*} / 1000000))
}

# A time in ms as mq-dlq ls and mq-ls write it (ISO 8601, UTC, seconds).
iso() {
	date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%SZ
}

# The DIED field of dead/ID,DIED,... (seconds).
died() {
	find "$MQ_DIR/dead" -name "$1,*" | sed 's/.*\///' | cut -d, -f 2
}

# "ID<tab>time of death" of every dead letter, as mq-dlq ls says, sorted;
# the clock $1 seconds ahead.
dlq_died() {
	ahead "$1" mq-dlq ls | cut -f 1,3 | sort
}

@test "mq-dlq ls: messages past their ttl are dead letters without a sweep, dead as of their expiry, as mq-ls and mq-stat say" {
	# A ttl of 5 s (the spool's) and one of 2 s (the message's own),
	# passed by moving the clock ahead 10 s: never slept through.
	mq-conf -f ttl=5
	mapfile -t ids < <(seq 1 4 | mq-send -l)
	ids+=("$(echo own | mq-send --ttl 2)")
	# mq-ls and mq-stat call them dead before anything buried them.
	ahead 10 mq-ls -s dead | cut -f 1,4 | sort >"$BATS_TEST_TMPDIR/ls"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/ls")" 5
	[[ $(ahead 10 mq-stat --json) == *'"dead":5,'* ]]
	assert_equal "$(count dead)" 0
	run -0 --separate-stderr ahead 10 mq-dlq ls
	assert_equal "${#lines[@]}" 5
	assert_equal "$(cut -f 4 <<<"$output" | sort -u)" ttl
	# Dead at their expiry (sent + ttl), as mq-ls said, not when met.
	assert_equal "$(cut -f 1,3 <<<"$output" | sort)" "$(cat "$BATS_TEST_TMPDIR/ls")"
	for id in "${ids[@]}"; do
		ttl=5000
		[ "$id" != "${ids[4]}" ] || ttl=2000
		assert_equal "$id $(died "$id")" "$id $((($(sent_ms "$id") + ttl) / 1000))"
		grep -qx "$id	$(iso $(($(sent_ms "$id") + ttl)))" \
		    "$BATS_TEST_TMPDIR/ls" || fail "$id: not dead at its expiry"
	done
	# mq-stat counts what mq-dlq lists.
	[[ $(ahead 10 mq-stat --json) == *'"dead":5,'* ]]
	assert_equal "$(ahead 10 mq-ls -s dead | wc -l)" 5
	assert_equal "$(count new)" 0
	# A sweep later moves no time of death.
	before=$(dlq_died 10)
	ahead 20 mq-sweep
	assert_equal "$(dlq_died 20)" "$before"
}

@test "mq-dlq: a sweep buries at the expiry too, and mq-dlq ls agrees with mq-ls before and after" {
	mq-conf -f ttl=5
	seq 1 3 | mq-send -l >/dev/null
	ls_before=$(ahead 10 mq-ls -s dead | cut -f 1,4 | sort)
	ahead 10 mq-sweep
	assert_equal "$(dlq_died 30)" "$ls_before"
}

@test "mq-dlq show, purge --all and redrive --all act on messages past their ttl without a sweep" {
	mapfile -t ids < <(printf 'a\nb\n' | mq-send -l --ttl 30)
	run -0 --separate-stderr ahead 60 mq-dlq show "${ids[0]}"
	assert_output a
	run -0 --separate-stderr ahead 60 mq-dlq -v purge --all
	assert_equal "$(grep -c ': purged$' <<<"$stderr")" 2
	assert_equal "$(count dead)" 0
	assert_equal "$(count new)" 0
	[[ $(ahead 60 mq-stat --json) == *'"dead":0,'* ]]
	mapfile -t ids < <(printf 'c\nd\n' | mq-send -l --ttl 30)
	run -0 --separate-stderr ahead 60 mq-dlq -v redrive --all
	assert_equal "$(grep -c ': redriven$' <<<"$stderr")" 2
	assert_equal "$(count dead)" 0
	[[ $(ahead 60 mq-stat --json) == *'"ready":2,'*'"dead":0,'* ]]
	# Their time to live runs from the redrive: 30 s, for a slow run.
	mapfile -t rs < <(ahead 60 mq-recv -n 2)
	assert_equal "$(cat "${rs[@]}")" cd
}

@test "mq-dlq: the parked messages of an ordered group past their ttl are dead letters, as mq-ls and mq-stat call them" {
	for b in a b c; do
		echo "$b" | mq-send -g G --ttl 30 >/dev/null
	done
	echo d | mq-send -g G --ttl 3600 >/dev/null
	assert_equal "$(parked G)" 3
	assert_equal "$(ahead 60 mq-ls -s dead | wc -l)" 3
	st=$(ahead 60 mq-stat --json)
	[[ $st == *'"blocked":1,'* && $st == *'"dead":3,'* ]] || fail "$st"
	run -0 --separate-stderr ahead 60 mq-dlq ls
	assert_equal "${#lines[@]}" 3
	assert_equal "$(cut -f 4 <<<"$output" | sort -u)" ttl
	assert_equal "$(cut -f 6 <<<"$output" | tr '\n' ' ')" 'a\n b\n c\n '
	[[ $(ahead 60 mq-stat --json) == *'"ready":1,'*'"dead":3,'* ]]
	# The one alive has the group's turn.
	r=$(ahead 60 mq-recv)
	assert_equal "$(cat "$r")" d
	ahead 60 mq-ack "$r"
	# Redriven, they go back into their group, in order, their time to
	# live from the redrive: 30 s, which a slow run (valgrind) needs.
	ahead 60 mq-dlq redrive --all
	for b in a b c; do
		r=$(ahead 60 mq-recv)
		assert_equal "$(cat "$r")" "$b"
		ahead 60 mq-ack "$r"
	done
}

@test "mq-dlq ls: a lease run out past its ttl is a dead letter, one still running is not" {
	# Leases of 5 s and 600 s, and the clock moved 10 s ahead.
	a=$(echo a | mq-send --ttl 5)
	mq-recv -t 5 >/dev/null
	b=$(echo b | mq-send --ttl 5)
	r=$(mq-recv -t 600)
	assert_equal "$(basename "$r" | cut -d, -f 1)" "$b"
	assert_equal "$(ahead 10 mq-ls -s dead | cut -f 1)" "$a"
	run -0 --separate-stderr ahead 10 mq-dlq ls
	assert_equal "$(cut -f 1,2,4 <<<"$output")" "$(printf '%s\t1\tttl' "$a")"
	assert_equal "$(died "$a")" $((($(sent_ms "$a") + 5000) / 1000))
	assert_equal "$(ahead 10 mq-ls -s inflight | cut -f 1)" "$b"
	ahead 10 mq-ack "$r"
}

# mq-dlq show's (or mq-show's) standard output on a terminal (script(1)
# gives it one).
on_tty() {
	script -qec "$*" /dev/null </dev/null | tr -d '\r'
}

@test "mq-dlq show: on a terminal control characters are escaped as mq-show escapes them; --raw raw; a pipe byte for byte" {
	command -v script >/dev/null || fail "script (bsdutils) is not installed"
	printf 'evil \033[31mred\033[0m\tx\nline2\x80\xc3\xa9\\end\a' >"$BATS_TEST_TMPDIR/body"
	id=$(mq-send "$BATS_TEST_TMPDIR/body")
	mq-ack -x why "$(mq-recv)"
	run on_tty mq-dlq show "$id"
	assert_output "$(printf 'evil \\x1b[31mred\\x1b[0m\tx\nline2\\x80\xc3\xa9\\\\end\\x07')"
	[[ $output != *$'\033'* ]]
	assert_equal "$output" "$(on_tty mq-show "$id")"
	run on_tty mq-dlq show --raw "$id"
	assert_output "$(printf 'evil \033[31mred\033[0m\tx\nline2\x80\xc3\xa9\\end\a')"
	assert_equal "$output" "$(on_tty mq-show --raw "$id")"
	mq-dlq show "$id" | cmp - "$BATS_TEST_TMPDIR/body"
	mq-dlq show --raw "$id" | cmp - "$BATS_TEST_TMPDIR/body"
	run -2 mq-dlq ls --raw
	run -2 mq-dlq purge --raw --all
	assert_equal "$(count dead)" 1
}

@test "mq-dlq ls and show by a user who may only read: what is past its ttl is told as not buried, exit 0; the dead letters listed" {
	[ "$(id -u)" -eq 0 ] || skip "switching users needs root"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	top=$(mktemp -d /tmp/mq-dlq-ro.XXXXXX)
	chmod 755 "$top"
	export MQ_DIR=$top/spool
	id=$(echo gone | mq-send)
	mq-ack -x broken "$(mq-recv)"
	echo old | mq-send --ttl 5 >/dev/null
	chmod -R a+rX "$MQ_DIR"
	reader() {
		setpriv --reuid=4003 --regid=4003 --clear-groups \
		    env PATH="$(public_bin):$PATH" MQ_DIR="$MQ_DIR" \
		    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		    NO_FAKE_STAT=1 faketime -f +60s "$@"
	}
	run -0 --separate-stderr reader mq-dlq ls
	assert_equal "$stderr" "mq-dlq: $MQ_DIR: what is past its ttl is not buried (mq-ls -s dead lists it): Permission denied"
	assert_equal "${#lines[@]}" 1
	[[ ${lines[0]} == "$id	"* ]]
	run -0 --separate-stderr reader mq-dlq show "$id"
	assert_equal "$output" gone
	run -1 --separate-stderr reader mq-dlq show 0123456789abcdef.1.0123456789ab
	# A writer's redrive is no looker's: it fails where it cannot bury.
	run -4 --separate-stderr reader mq-dlq redrive --all
	rm -rf "$top"
}

# Plants a dead letter of ID $1 whose body is the line $2 (no reason
# recorded), in a spool made if missing.
plant_dead() {
	[ -d "$MQ_DIR/dead" ] || mq-send -l </dev/null >/dev/null
	printf '%s\n' "$2" >"$MQ_DIR/dead/$1,$(date +%s),1"
}

@test "mq-dlq show, redrive and purge: a unique prefix of 8 characters or more selects the dead letter; 7 is malformed (exit 2); one no dead letter's ID begins with is exit 1" {
	plant_dead 0000000b00000001.1.000000000001 one
	plant_dead 0000000b00000002.1.000000000001 two
	plant_dead 0000000c00000001.1.000000000001 three
	plant_dead 0000000d00000001.1.000000000001 four
	# A live message's ID is no dead letter's.
	live=$(echo live | mq-send)
	run -0 mq-dlq show 0000000c
	assert_output three
	run -0 mq-dlq show 0000000b00000002
	assert_output two
	for cmd in show redrive purge; do
		# Redrive and purge say how many, 0 too.
		case $cmd in
		redrive) n=$'\nmq-dlq: redriven 0' ;;
		purge) n=$'\nmq-dlq: purged 0' ;;
		*) n= ;;
		esac
		run -2 --separate-stderr mq-dlq "$cmd" 0000000
		assert_equal "$stderr" "mq-dlq: 0000000: not a message ID"
		run -1 --separate-stderr mq-dlq "$cmd" 0000000e
		assert_equal "$stderr" "mq-dlq: 0000000e: no such dead letter$n"
		run -1 --separate-stderr mq-dlq "$cmd" "${live%?}"
		assert_equal "$stderr" "mq-dlq: ${live%?}: no such dead letter$n"
	done
	assert_equal "$(count dead)" 4
	run -0 mq-dlq redrive 0000000c
	run -0 mq-dlq purge 0000000d0000
	assert_equal "$(mq-dlq ls | cut -f 1)" "$(printf '%s\n' 0000000b00000001.1.000000000001 0000000b00000002.1.000000000001)"
	assert_equal "$(mq-ls -s ready | cut -f 1 | sort)" "$(printf '%s\n' 0000000c00000001.1.000000000001 "$live" | sort)"
}

@test "mq-dlq show, redrive and purge: an ambiguous prefix is exit 2 listing ten of the IDs that begin with it and how many more; nothing changes" {
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
		plant_dead "$(printf '0000000b000000%02x.1.000000000001' "$i")" "$i"
	done
	plant_dead 0000000c00000001.1.000000000001 c
	want=$( {
		echo "mq-dlq: 0000000b: ambiguous, 12 dead letters match:"
		for i in 1 2 3 4 5 6 7 8 9 10; do
			printf 'mq-dlq:   0000000b000000%02x.1.000000000001\n' "$i"
		done
		echo "mq-dlq:   and 2 more"
	} )
	before=$(ls "$MQ_DIR/dead")
	for cmd in show redrive purge; do
		run -2 --separate-stderr mq-dlq "$cmd" 0000000c 0000000b
		assert_output ""
		assert_equal "$stderr" "$want"
	done
	assert_equal "$(ls "$MQ_DIR/dead")" "$before"
	run -1 mq-recv
	# Two: both, and no more.
	mq-dlq purge 0000000b00000003 0000000b00000004 0000000b00000005 \
	    0000000b00000006 0000000b00000007 0000000b00000008 0000000b00000009 \
	    0000000b0000000a 0000000b0000000b 0000000b0000000c
	run -2 --separate-stderr mq-dlq redrive 0000000b
	assert_equal "$stderr" "$(printf '%s\n' "mq-dlq: 0000000b: ambiguous, 2 dead letters match:" \
	    "mq-dlq:   0000000b00000001.1.000000000001" "mq-dlq:   0000000b00000002.1.000000000001")"
}

@test "mq-dlq: a malformed ID is exit 2 in show, redrive and purge, named as not a message ID; nothing changes" {
	bury a
	id=$(mq-dlq ls | cut -f 1)
	for cmd in show redrive purge; do
		run -2 --separate-stderr mq-dlq "$cmd" "$id" ../../etc/passwd
		assert_output ""
		assert_equal "$stderr" "mq-dlq: ../../etc/passwd: not a message ID"
		run -2 --separate-stderr mq-dlq "$cmd" - <<<"$(printf '%s\nXYZ\n' "$id")"
		assert_output ""
		assert_equal "$stderr" "mq-dlq: XYZ: not a message ID"
	done
	assert_equal "$(mq-dlq ls | cut -f 1)" "$id"
}

@test "mq-dlq show, redrive and purge -: IDs from standard input, one a line (blank ones skipped) or NUL-terminated with -0" {
	bury a b c d e
	mapfile -t ids < <(mq-dlq ls | cut -f 1)
	run -0 mq-dlq show - <<<"$(printf '%s\n\n%s\n' "${ids[1]}" "${ids[0]%?}")"
	assert_output ba
	run -0 bash -c 'printf "%s\0" "$@" | mq-dlq show -0 -' _ "${ids[2]}" "${ids[3]}"
	assert_output cd
	run -0 mq-dlq show "${ids[4]}" "${ids[0]}"
	assert_output ea
	run -0 bash -c 'mq-dlq ls | cut -f 1 | head -n 2 | mq-dlq redrive -'
	assert_equal "$(mq-ls -s ready | cut -f 1)" "$(printf '%s\n' "${ids[0]}" "${ids[1]}")"
	run -0 bash -c 'printf "%s\0" "$1" | mq-dlq redrive -0 -' _ "${ids[2]}"
	run -0 bash -c 'printf "%s\0\0%s\0" "$1" "$2" | mq-dlq purge -0 -' _ "${ids[3]}" "${ids[4]}"
	assert_equal "$(count dead)" 0
	assert_equal "$(count reason)" 0
	assert_equal "$(mq-ls -s ready | wc -l)" 3
	# Nothing read: nothing to do.
	run -1 --separate-stderr mq-dlq purge - </dev/null
	assert_equal "$stderr" ""
	run -2 mq-dlq ls -0
}

@test "mq-dlq redrive -t, its old spelling, is refused (exit 2) naming --to; nothing moves" {
	bury a
	run -2 --separate-stderr mq-dlq redrive -t "$BATS_TEST_TMPDIR/other" --all
	assert_output ""
	assert_equal "$stderr" "mq-dlq: -t is now --to"
	assert_equal "$(count dead)" 1
	assert_not_exist "$BATS_TEST_TMPDIR/other"
	run -2 --separate-stderr mq-dlq purge --to "$BATS_TEST_TMPDIR/other" --all
	assert_equal "$stderr" "mq-dlq: --to goes with redrive"
	run -0 mq-dlq redrive --to "$BATS_TEST_TMPDIR/other" --all
	assert_equal "$(count dead)" 0
	assert_equal "$(cat "$(mq-recv -d "$BATS_TEST_TMPDIR/other")")" a
}

# dead_at SECS N [REASON]: a dead letter that died SECS seconds ago, with
# body N and REASON (none: no reason recorded), named by N (1 to 9); its ID
# is printed.
dead_at() {
	local id
	id=$(printf '00000010%08x.1.000000000001' "$2")
	[ -d "$MQ_DIR/dead" ] || mq-send -l </dev/null >/dev/null
	printf '%s\n' "$2" >"$MQ_DIR/dead/$id,$(($(date +%s) - $1)),1"
	if [ $# -ge 3 ]; then
		mkdir -p "$MQ_DIR/reason"
		printf '%s' "$3" >"$MQ_DIR/reason/$id"
	fi
	echo "$id"
}

@test "mq-dlq ls --reason: only the dead letters whose reason matches the extended regex; none matching lists nothing, exit 0" {
	bury a b c
	mq-ack -x "timed out after 600 s" "$(echo d | mq-send >/dev/null; mq-recv)"
	run -0 mq-dlq ls --reason 'r(1|3)$'
	assert_equal "$(cut -f 4 <<<"$output" | tr '\n' ' ')" "r1 r3 "
	run -0 mq-dlq ls --reason 'timed out after [0-9]+ s'
	assert_equal "$(cut -f 6 <<<"$output")" 'd\n'
	run -0 --separate-stderr mq-dlq ls --reason nothing-like-it
	assert_output ""
	assert_equal "$stderr" ""
	run -0 mq-dlq ls --json --reason '^r2$'
	assert_equal "${#lines[@]}" 1
	[[ $output == *'"reason":"r2"'* ]]
}

@test "mq-dlq --reason: a bad regex is exit 2 naming it and why, in ls, redrive and purge; nothing changes" {
	bury a
	for cmd in ls redrive purge; do
		run -2 --separate-stderr mq-dlq "$cmd" --reason '(unclosed'
		[[ $stderr == "mq-dlq: --reason (unclosed: "?* ]] || fail "$stderr"
		assert_output ""
	done
	assert_equal "$(count dead)" 1
}

@test "mq-dlq --reason: a dead letter with no reason recorded matches as the empty string" {
	none=$(dead_at 0 1)
	dead_at 0 2 "it broke" >/dev/null
	run -0 mq-dlq ls --reason '^$'
	assert_equal "$(cut -f 1,4 <<<"$output")" "$none"$'\t(no reason recorded)'
	run -0 mq-dlq ls --reason 'broke|^$'
	assert_equal "${#lines[@]}" 2
	run -0 mq-dlq ls --reason .
	assert_equal "$(cut -f 4 <<<"$output")" "it broke"
	run -0 --separate-stderr mq-dlq purge --reason '^$'
	assert_equal "$stderr" "mq-dlq: purged 1"
	assert_equal "$(mq-dlq ls | cut -f 4)" "it broke"
}

@test "mq-dlq --older-than and --newer-than choose by time of death" {
	old=$(dead_at 10800 1 r)
	new=$(dead_at 0 2 r)
	run -0 mq-dlq ls --older-than 1h
	assert_equal "$(cut -f 1 <<<"$output")" "$old"
	run -0 mq-dlq ls --newer-than 1h
	assert_equal "$(cut -f 1 <<<"$output")" "$new"
	run -0 mq-dlq ls --newer-than 4h
	assert_equal "${#lines[@]}" 2
	# Two hours on, both died more than an hour ago.
	run -0 ahead 7200 mq-dlq ls --older-than 1h
	assert_equal "${#lines[@]}" 2
	run -0 ahead 7200 mq-dlq ls --newer-than 3600
	assert_output ""
	run -2 --separate-stderr mq-dlq ls --older-than 1y
	[[ $stderr == *"--older-than 1y"* ]]
	run -2 mq-dlq purge --newer-than -1
}

@test "mq-dlq: filters combine with AND" {
	dead_at 10800 1 "timeout" >/dev/null
	new=$(dead_at 0 2 "timeout")
	dead_at 0 3 "exit 65" >/dev/null
	run -0 mq-dlq ls --reason timeout --newer-than 1h
	assert_equal "$(cut -f 1 <<<"$output")" "$new"
	run -0 mq-dlq ls --reason timeout --older-than 1h --newer-than 30m
	assert_output ""
	run -0 --separate-stderr mq-dlq redrive --reason timeout --newer-than 1h
	assert_equal "$stderr" "mq-dlq: redriven 1"
	assert_equal "$(cat "$(mq-recv)")" 2
	assert_equal "$(count dead)" 2
}

@test "mq-dlq redrive and purge with a filter and no ID: every dead letter it matches; with --all too, the filter applies" {
	bury a b c
	run -0 --separate-stderr mq-dlq redrive --reason 'r[13]'
	assert_equal "$stderr" "mq-dlq: redriven 2"
	assert_equal "$(mq-dlq ls | cut -f 4)" r2
	assert_equal "$(count new)" 2
	assert_equal "$(count reason)" 1
	bury d e
	run -0 --separate-stderr mq-dlq purge --all --reason '^r1$'
	assert_equal "$stderr" "mq-dlq: purged 1"
	assert_equal "$(mq-dlq ls | cut -f 4 | sort | tr '\n' ' ')" "r2 r2 "
}

@test "mq-dlq redrive and purge with IDs and a filter: only the named ones that match" {
	bury a b c
	mapfile -t ids < <(mq-dlq ls | cut -f 1)
	run -0 --separate-stderr mq-dlq purge --reason 'r[12]' "${ids[1]}" "${ids[2]}"
	assert_equal "$stderr" "mq-dlq: purged 1"
	assert_equal "$(mq-dlq ls | cut -f 4 | tr '\n' ' ')" "r1 r3 "
	run -0 --separate-stderr mq-dlq redrive --newer-than 1h "${ids[0]}"
	assert_equal "$stderr" "mq-dlq: redriven 1"
	assert_equal "$(mq-dlq ls | cut -f 4)" r3
}

@test "mq-dlq redrive and purge: a filter that matches nothing is nothing to do: 0 said, exit 1, nothing changes" {
	bury a b
	mapfile -t ids < <(mq-dlq ls | cut -f 1)
	run -1 --separate-stderr mq-dlq redrive --reason nomatch
	assert_equal "$stderr" "mq-dlq: redriven 0"
	run -1 --separate-stderr mq-dlq purge --older-than 1d
	assert_equal "$stderr" "mq-dlq: purged 0"
	run -1 --separate-stderr mq-dlq purge --reason nomatch "${ids[@]}"
	assert_equal "$stderr" "mq-dlq: purged 0"
	run -1 --separate-stderr mq-dlq redrive --all --to "$BATS_TEST_TMPDIR/other" --reason nomatch
	assert_not_exist "$BATS_TEST_TMPDIR/other"
	assert_equal "$(count dead)" 2
	assert_equal "$(count reason)" 2
}

@test "mq-dlq redrive and purge say how many on standard error, 0 too; exit as before" {
	bury a b c
	mapfile -t ids < <(mq-dlq ls | cut -f 1)
	run -0 --separate-stderr mq-dlq purge "${ids[0]}"
	assert_output ""
	assert_equal "$stderr" "mq-dlq: purged 1"
	run -0 --separate-stderr mq-dlq redrive --all
	assert_equal "$stderr" "mq-dlq: redriven 2"
	run -0 --separate-stderr mq-dlq redrive --all
	assert_equal "$stderr" "mq-dlq: redriven 0"
	run -0 --separate-stderr mq-dlq purge --all
	assert_equal "$stderr" "mq-dlq: purged 0"
	run -1 --separate-stderr mq-dlq redrive 0000000000000001.1.000000000001
	assert_equal "$stderr" "mq-dlq: 0000000000000001.1.000000000001: no such dead letter"$'\n'"mq-dlq: redriven 0"
}

@test "mq-dlq ls on a terminal: a header, and when each died as an age; into a pipe as before" {
	command -v script >/dev/null || fail "script (bsdutils) is not installed"
	mq-send -l </dev/null >/dev/null
	run on_tty mq-dlq ls
	assert_output ""
	bury a
	dead_at 10800 1 "timeout" >/dev/null
	dead_at 180000 2 >/dev/null
	run on_tty mq-dlq ls
	assert_equal "${lines[0]}" $'ID\tATTEMPTS\tDIED\tREASON\tSIZE\tBODY'
	assert_equal "${#lines[@]}" 4
	# In ID order: the planted ones first.
	assert_equal "$(cut -f 3,4 <<<"${lines[1]}")" $'3h ago\ttimeout'
	assert_equal "$(cut -f 3,4,6 <<<"${lines[2]}")" $'2d ago\t(no reason recorded)\t2\\n'
	[[ $(cut -f 3 <<<"${lines[3]}") =~ ^[0-9]+s\ ago$ ]] || fail "${lines[3]}"
	out=$(ahead 600 script -qec "mq-dlq ls --reason r1" /dev/null </dev/null | tr -d '\r')
	assert_equal "$(sed -n 2p <<<"$out" | cut -f 3)" "10m ago"
	# A pipe: no header, times in UTC, as scripts read them.
	run -0 mq-dlq ls
	assert_equal "${#lines[@]}" 3
	for l in "${lines[@]}"; do
		[[ $(cut -f 3 <<<"$l") =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]] || fail "$l"
	done
	# --json on a terminal is as in a pipe.
	assert_equal "$(on_tty mq-dlq ls --json | wc -l)" 3
	[[ $(on_tty mq-dlq ls --json) != *"ago"* ]]
}

@test "mq-dlq redrive --rate: paced, and SIGTERM stops it cleanly with what it moved durable and counted" {
	bury a b c
	# One now, one at 2 s, one at 4 s.
	mq-dlq redrive --all --rate 0.5 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	for _ in $(seq 1 100); do
		[ "$(count new)" -eq 0 ] || break
		sleep 0.1
	done
	[ "$(count new)" -ge 1 ]
	[ "$(count new)" -lt 3 ]
	kill -TERM "$pid"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	n=$(count new)
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" "mq-dlq: redriven $n"
	assert_equal "$(count dead)" $((3 - n))
	assert_equal "$(count reason)" $((3 - n))
	# Not stopped, it moves them all.
	run -0 --separate-stderr mq-dlq redrive --all --rate 1000
	assert_equal "$stderr" "mq-dlq: redriven $((3 - n))"
	assert_equal "$(count new)" 3
}

@test "mq-dlq redrive --rate: a positive number a second; another, or with another command, is exit 2" {
	bury a
	for r in 0 -1 x 1e3 '' 2000000; do
		run -2 mq-dlq redrive --all --rate "$r"
	done
	run -2 mq-dlq purge --all --rate 1
	run -2 mq-dlq ls --rate 1
	run -2 mq-dlq purge --all -w
	run -2 mq-dlq show -w 1 x
	run -2 mq-dlq show --reason x 0000000000000001.1.000000000001
	run -2 mq-dlq redrive --all -w 5x
	assert_equal "$(count dead)" 1
	run -0 mq-dlq redrive --all --rate 0.5
	assert_equal "$(count new)" 1
}

@test "mq-dlq redrive into a spool at max-depth: stops there, exit 6, nothing overfilled" {
	bury a b c
	echo ready | mq-send >/dev/null
	mq-conf max-depth=2
	run -6 --separate-stderr mq-dlq redrive --all
	assert_equal "$stderr" "mq-dlq: $MQ_DIR: full (max-depth 2)"$'\n'"mq-dlq: redriven 1"
	assert_equal "$(count new)" 2
	assert_equal "$(count dead)" 2
	assert_equal "$(mq-dlq ls | cut -f 4 | tr '\n' ' ')" "r2 r3 "
	# -w SECS that runs out: the same.
	run -6 --separate-stderr mq-dlq redrive --all -w 0.2
	assert_equal "$(count new)" 2
	# --to a full spool.
	mq-conf -d "$BATS_TEST_TMPDIR/other" max-depth=1
	run -6 mq-dlq redrive --all --to "$BATS_TEST_TMPDIR/other"
	assert_equal "$(find "$BATS_TEST_TMPDIR/other/new" -type f | wc -l)" 1
	assert_equal "$(count dead)" 1
}

@test "mq-dlq redrive -w: waits for room under max-depth, then goes on" {
	bury a
	echo ready | mq-send >/dev/null
	mq-conf max-depth=1
	mq-dlq redrive --all -w 20 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	sleep 1
	kill -0 "$pid"
	assert_equal "$(count dead)" 1
	mq-ack "$(mq-recv)"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" "mq-dlq: redriven 1"
	assert_equal "$(count dead)" 0
	assert_equal "$(count new)" 1
}

@test "mq-dlq redrive with overflow=drop-oldest makes room as mq-send does, never exit 6" {
	bury a b
	printf '%s\n' w1 w2 | mq-send -l >/dev/null
	mq-conf max-depth=2 overflow=drop-oldest
	run -0 --separate-stderr mq-dlq redrive --all
	assert_equal "$stderr" "mq-dlq: redriven 2"
	assert_equal "$(count new)" 2
	assert_equal "$(mq-dlq ls | cut -f 4 | tr '\n' ' ')" "maxlen maxlen "
	assert_equal "$(drain | tr '\n' ' ')" "a b "
}

@test "mq-dlq -v: ls says how many it listed, 0 too; show says each dead letter's attempts and death" {
	echo a | mq-send >/dev/null
	mq-ack -x broken "$(mq-recv)"
	id=$(mq-dlq ls | cut -f 1)
	run -0 --separate-stderr mq-dlq -v ls
	assert_equal "$stderr" "mq-dlq: $MQ_DIR: 1 dead letter listed"
	run -0 --separate-stderr mq-dlq -v ls --reason nomatch
	assert_output ""
	assert_equal "$stderr" "mq-dlq: $MQ_DIR: 0 dead letters listed"
	run -0 --separate-stderr mq-dlq show -v "$id"
	assert_output a
	[[ $stderr == "mq-dlq: $id: dead letter, 1 attempt, died 20"*Z ]] || fail "$stderr"
}

@test "mq-dlq: a bad option of a command is named by the program; a bad --reason is escaped" {
	mq-send </dev/null >/dev/null
	run -2 --separate-stderr mq-dlq show -r x
	[[ ${stderr_lines[0]} == "mq-dlq: "* ]] || fail "$stderr"
	run -2 --separate-stderr mq-dlq ls --reason $'\e[2J('
	[[ $stderr == "mq-dlq: --reason \\x1b[2J(: "* ]] || fail "$stderr"
	[[ $stderr != *$'\e'* ]] || fail "raw escape: $stderr"
}
