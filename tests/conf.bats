load helper

# The settings mq-conf prints for a spool that has none.
defaults="max-attempts=5
lease=30
max-depth=0
overflow=reject
ttl=0
paused=no
dedup-window=0
log-size=16M
log-age=7d
keep-output=0
once-window=0"

# The conf file and its inode, to see that a refused change left it alone.
conf_state() {
	if [ -e "$MQ_DIR/conf" ]; then stat -c %i "$MQ_DIR/conf"; cat "$MQ_DIR/conf"; else echo none; fi
}

@test "mq-conf: a new spool has every default, key=value a line" {
	mq-conf max-depth= >/dev/null
	run mq-conf
	assert_success
	assert_output "$defaults"
}

@test "mq-conf: every key is set, read back alone and in the listing, as it was given" {
	mq-conf max-attempts=3 lease=2.50 max-depth=100 overflow=drop-oldest \
	    ttl=3600 paused=yes dedup-window=0.5 log-size=512K log-age=1d \
	    keep-output=3d once-window=14d
	run mq-conf
	assert_output "max-attempts=3
lease=2.50
max-depth=100
overflow=drop-oldest
ttl=3600
paused=yes
dedup-window=0.5
log-size=512K
log-age=1d
keep-output=3d
once-window=14d"
	run mq-conf lease paused max-depth
	assert_output "2.50
yes
100"
	# The file holds only what is not a default.
	mq-conf overflow=reject ttl=0
	run cat "$MQ_DIR/conf"
	refute_line --partial overflow
	refute_line --partial ttl
	assert_line "max-depth=100"
}

@test "mq-conf: key= puts a key back to its default" {
	mq-conf max-attempts=3 paused=yes
	mq-conf paused=
	assert_equal "$(mq-conf paused)" no
	assert_equal "$(mq-conf max-attempts)" 3
	mq-conf max-attempts=
	assert_equal "$(mq-conf)" "$defaults"
}

@test "mq-conf: every bad value is a usage error (2) that changes nothing" {
	mq-conf max-attempts=4 lease=9 max-depth=7 overflow=drop-oldest ttl=60 \
	    paused=yes dedup-window=5
	before=$(conf_state)
	for bad in max-attempts=0 max-attempts=-1 max-attempts=x max-attempts=1.5 \
	    max-attempts=1000001 max-attempts=' 3' \
	    lease=0 lease=0.000 lease=-1 lease=abc lease=1.2345 lease=1e3 lease=. \
	    max-depth=-1 max-depth=1.5 max-depth=ten max-depth=1000000001 \
	    overflow=drop overflow=REJECT overflow=drop_oldest \
	    ttl=-5 ttl=1hh ttl=1.5ms ttl=1.0000 ttl=99999999999 \
	    paused=YES paused=y paused=-2 paused=2x paused=truth \
	    dedup-window=-1 dedup-window=x \
	    log-size=-1 log-size=1.5M log-size=16MB log-size=16m log-size=2G \
	    log-size=K log-age=x log-age=-1 keep-output=x keep-output=-2 \
	    once-window=x once-window=-1 once-window=1.5ms; do
		run -2 --separate-stderr mq-conf "$bad"
		[[ $stderr == "mq-conf: $bad: "*"; nothing changed" ]] ||
		    { echo "$bad: $stderr"; false; }
		assert_equal "$(conf_state)" "$before"
	done
}

@test "mq-conf: one bad setting of several: none is set" {
	mq-conf max-depth=7
	before=$(conf_state)
	run -2 mq-conf max-attempts=2 ttl=60 paused=maybe
	assert_equal "$(conf_state)" "$before"
	run -2 mq-conf max-attempts=2 colour=blue
	assert_output --partial "colour: unknown key"
	assert_equal "$(conf_state)" "$before"
}

@test "mq-conf: an unknown key, or showing and setting at once, is a usage error" {
	mq-conf max-depth=7
	run -2 --separate-stderr mq-conf colour
	assert_equal "$stderr" "mq-conf: colour: unknown key (one of max-attempts, lease, max-depth, overflow, ttl, paused, dedup-window, log-size, log-age, keep-output, once-window)"
	run -2 mq-conf ttl paused=yes
	assert_output --partial "showing and setting do not mix"
	assert_equal "$(mq-conf paused)" no
	run -2 mq-conf =5
	assert_output --partial "unknown key"
}

@test "mq-conf: a bad setting makes no spool; a good one makes it, as mq-send would" {
	run -2 mq-conf ttl=never
	assert_not_exist "$MQ_DIR"
	mq-conf ttl=60
	assert_dir_exist "$MQ_DIR/new"
	echo hi | mq-send >/dev/null
	assert_equal "$(mq-conf ttl)" 60
}

@test "mq-conf: showing the settings of a missing spool exits 4 and makes nothing" {
	run -4 --separate-stderr mq-conf
	assert_equal "$stderr" "mq-conf: $MQ_DIR: No such file or directory"
	run -4 mq-conf ttl
	assert_not_exist "$MQ_DIR"
}

@test "mq-conf: -v says what changed on stderr, and nothing on stdout" {
	mq-conf max-depth=5
	run --separate-stderr mq-conf -v max-depth=6 ttl=0 paused=yes
	assert_output ""
	assert_equal "$stderr" "mq-conf: $MQ_DIR: max-depth=6 (was 5)
mq-conf: $MQ_DIR: paused=yes (was no)"
}

@test "mq-conf: a change is one rename of a synced file, then a sync of the spool" {
	command -v strace >/dev/null || skip "strace is not installed"
	mq-conf max-depth=1
	ino=$(stat -c %i "$MQ_DIR/conf")
	# LeakSanitizer (make check SANITIZE=1) cannot run under ptrace.
	ASAN_OPTIONS=detect_leaks=0 run strace -f -e trace=fsync,fdatasync,rename,renameat,renameat2 -o "$BATS_TEST_TMPDIR/trace" \
	    mq-conf max-depth=2
	assert_success
	# The file is synced, renamed over conf, and the directory synced.
	calls=$(grep -oE '^[0-9]+ +(fsync|fdatasync|renameat2?|rename)\(' "$BATS_TEST_TMPDIR/trace" |
	    sed 's/^[0-9]* *//; s/($//' | tr '\n' ' ')
	assert_equal "$calls" "fsync renameat fsync "
	grep -q 'renameat([0-9]*, "[0-9a-f.]*,conf", [0-9]*, "conf")' "$BATS_TEST_TMPDIR/trace"
	[ "$(stat -c %i "$MQ_DIR/conf")" != "$ino" ]
	# Nothing is left in tmp/.
	assert_equal "$(find "$MQ_DIR/tmp" -type f | wc -l)" 0
}

@test "mq-conf: a failed write changes nothing and leaves nothing behind" {
	mq-conf max-depth=1
	before=$(conf_state)
	run -4 --separate-stderr faulty 'fsync:errno=EIO' mq-conf max-depth=2
	[[ $stderr == "mq-conf: $MQ_DIR/conf: nothing changed: "* ]]
	assert_equal "$(conf_state)" "$before"
	assert_equal "$(find "$MQ_DIR/tmp" -type f | wc -l)" 0
}

@test "mq-conf: writers at the same time lose none of each other's keys" {
	mq-conf max-depth=1
	for round in 1 2 3 4 5; do
		mq-conf max-attempts= ttl= lease= paused= dedup-window=
		mq-conf max-attempts=$((round + 1)) &
		mq-conf -f ttl=$round &
		mq-conf lease=$round &
		mq-conf paused=yes &
		mq-conf dedup-window=$round &
		wait
		assert_equal "$(mq-conf max-attempts ttl lease paused dedup-window | tr '\n' ' ')" \
		    "$((round + 1)) $round $round yes $round "
	done
}

@test "mq-conf: a conf that does not parse stops every tool (4), naming the file and line" {
	mq-conf max-depth=5
	printf 'max-depth=5\nlease=soon\n' >"$MQ_DIR/conf"
	echo x >"$BATS_TEST_TMPDIR/x"
	for t in "mq-conf" "mq-recv" "mq-sweep" "mq-send $BATS_TEST_TMPDIR/x"; do
		# shellcheck disable=SC2086 # a command and its argument
		run -4 --separate-stderr $t
		[[ $stderr == "${t%% *}: $MQ_DIR/conf: line 2: "* ]] || { echo "$t: $stderr"; false; }
	done
	# Setting does not overwrite what it cannot read.
	run -4 mq-conf ttl=5
	assert_equal "$(cat "$MQ_DIR/conf")" "max-depth=5
lease=soon"
}

@test "mq-conf: keys it does not know are kept, comments and blank lines allowed" {
	printf '# set by hand\nmax-depth=5\n\nfuture-key=1\n' >"$BATS_TEST_TMPDIR/c"
	mq-conf -f ttl=1
	cp "$BATS_TEST_TMPDIR/c" "$MQ_DIR/conf"
	assert_equal "$(mq-conf max-depth)" 5
	mq-conf -f ttl=7
	run cat "$MQ_DIR/conf"
	assert_line "future-key=1"
	assert_line "ttl=7"
	assert_line "max-depth=5"
}

@test "mq-conf: a conf that is not a regular file is not followed" {
	mq-conf -f ttl=1
	rm "$MQ_DIR/conf"
	printf 'max-depth=99\n' >"$BATS_TEST_TMPDIR/elsewhere"
	ln -s "$BATS_TEST_TMPDIR/elsewhere" "$MQ_DIR/conf"
	run -4 --separate-stderr mq-conf max-depth
	[[ $stderr == "mq-conf: $MQ_DIR/conf: "* ]]
}

@test "mq-conf: every tool reads the settings with one small read, no scan" {
	command -v strace >/dev/null || skip "strace is not installed"
	mq-conf max-attempts=3
	seq 1 2000 | mq-send -l -S >/dev/null
	ASAN_OPTIONS=detect_leaks=0 strace -e trace=openat,read -o "$BATS_TEST_TMPDIR/trace" mq-recv >/dev/null
	assert_equal "$(grep -c '"conf"' "$BATS_TEST_TMPDIR/trace")" 1
	fd=$(sed -n 's/.*"conf".* = \([0-9]*\)$/\1/p' "$BATS_TEST_TMPDIR/trace")
	# One read that returns the file, one that finds its end: those on
	# its descriptor until another file is opened under that number.
	assert_equal "$(awk -v fd="$fd" '
	    /"conf"/ { on = 1; next }
	    on && /^openat/ && $NF == fd { on = 0 }
	    on && index($0, "read(" fd ",") == 1 { n++ }
	    END { print n + 0 }' "$BATS_TEST_TMPDIR/trace")" 2
}

@test "mq-conf: a value equal to its default, however written, is no setting" {
	mq-conf lease=30.0 max-depth=00 ttl=0.000 max-attempts=05 dedup-window=0.0
	assert_equal "$(mq-conf)" "$defaults"
	run cat "$MQ_DIR/conf"
	assert_output ""
	run mq-stat --json
	assert_output --partial '"settings":{}'
}

@test "mq-conf: a hand-written line with blanks around its key stops the tools, not ignored" {
	mq-conf -f ttl=1
	printf 'max-depth = 5\n' >"$MQ_DIR/conf"
	run -4 --separate-stderr mq-conf max-depth
	assert_equal "$stderr" "mq-conf: $MQ_DIR/conf: line 1: a blank in the key (key=value, no blanks)"
	run -4 mq-recv
}

@test "mq-conf: a change in place whose sync failed says so (4), not that nothing changed" {
	mq-conf max-depth=1
	# The file's fsync is the first, the spool directory's the second.
	run -4 --separate-stderr faulty 'fsync:errno=EIO:nth=2' mq-conf max-depth=2
	assert_equal "$stderr" "mq-conf: $MQ_DIR/conf: changed, but not made durable: Input/output error"
	assert_equal "$(mq-conf max-depth)" 2
}

@test "mq-conf: setting keys on a missing spool makes it and says so, naming it; on an existing one it says nothing" {
	run -0 --separate-stderr mq-conf -d "$BATS_TEST_TMPDIR/wrok" paused=yes
	assert_equal "$stderr" "mq-conf: $BATS_TEST_TMPDIR/wrok: new spool"
	[ "$(mq-conf -d "$BATS_TEST_TMPDIR/wrok" paused)" = yes ]
	run -0 --separate-stderr mq-conf -d "$BATS_TEST_TMPDIR/wrok" paused=no
	[ -z "$stderr" ]
	# Showing still makes nothing.
	run -4 --separate-stderr mq-conf -d "$BATS_TEST_TMPDIR/other"
	assert_not_exist "$BATS_TEST_TMPDIR/other"
}

@test "mq-conf ttl: a ttl that would expire waiting messages at once is refused without -f, naming how many; nothing changed" {
	seq 1 9 | mq-send -l >/dev/null
	run -2 --separate-stderr ahead 30 mq-conf ttl=2
	assert_equal "$stderr" "mq-conf: $MQ_DIR: ttl=2 would expire 9 waiting messages at once; nothing changed (-f to set it)"
	assert_equal "$(mq-conf ttl)" 0
	# A ttl that expires none of them is set without a word.
	run -0 --separate-stderr ahead 30 mq-conf ttl=60
	[ -z "$stderr" ]
	# Lowering it past their age is refused too, and -f sets it.
	run -2 --separate-stderr ahead 30 mq-conf max-attempts=3 ttl=10
	[[ $stderr == *"would expire 9 waiting messages"* ]]
	assert_equal "$(mq-conf max-attempts)" 5
	run -0 --separate-stderr ahead 30 mq-conf -f -v ttl=10
	assert_equal "${stderr_lines[0]}" "mq-conf: $MQ_DIR: ttl=10 expires 9 waiting messages now"
	assert_equal "${stderr_lines[1]}" "mq-conf: $MQ_DIR: ttl=10 (was 60)"
	run -0 ahead 30 mq-stat --json
	[[ $output == *'"dead":9,'* ]]
	run -2 --separate-stderr mq-conf -f
	[[ $stderr == *"-f goes with a setting"* ]]
}

@test "mq-conf ttl: on a terminal it asks, and sets the ttl only on a yes" {
	seq 1 3 | mq-send -l >/dev/null
	answer() { # y|n, ttl
		# faketime as ahead runs it (ASan must allow its library).
		(sleep 0.5; echo "$1") | timeout -k 5 30 script -qec \
		    "ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}verify_asan_link_order=0 NO_FAKE_STAT=1 faketime -f +30s mq-conf ttl=$2; echo rc=\$?" \
		    /dev/null | tr -d '\r'
	}
	run answer n 2
	[[ $output == *"ttl=2 expires 3 waiting messages now (dead letters, reason ttl); set it? [y/N]"* ]]
	[[ $output == *"nothing changed"* ]]
	[[ $output == *"rc=2"* ]]
	assert_equal "$(mq-conf ttl)" 0
	run answer y 2
	[[ $output == *"rc=0"* ]]
	assert_equal "$(mq-conf ttl)" 2
}

@test "mq-conf: paused takes yes/no, true/false, on/off and 1/0, and prints as set" {
	local v
	echo x | mq-send -S >/dev/null
	for v in yes true on 1; do
		mq-conf paused="$v"
		assert_equal "$(mq-conf paused)" "$v"
		run -1 mq-recv
	done
	for v in no false off 0; do
		mq-conf paused=yes
		mq-conf paused="$v"
		assert_equal "$(mq-conf paused)" no
		run -0 mq-recv -t 0.001
	done
}

@test "mq-conf: paused takes a duration, kept as the time it ends; then every tool resumes by itself" {
	echo job | mq-send >/dev/null
	run -0 --separate-stderr mq-conf -v paused=1h
	until=$(mq-conf paused)
	[[ $until =~ ^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z$ ]] || fail "$until"
	assert_equal "$stderr" "mq-conf: $MQ_DIR: paused=$until (was no)"
	# An hour from now, to the second (rounded up).
	want=$(($(date +%s) + 3600))
	got=$(date -d "$until" +%s)
	[ "$got" -ge "$want" ] && [ "$got" -le $((want + 2)) ] || fail "$until: $got, not about $want"
	run -1 --separate-stderr mq-recv
	assert_equal "$stderr" "mq-recv: $MQ_DIR: paused"
	[[ $(mq-stat) == *"paused=$until"* ]]
	# Past its end: resumed, though conf is unchanged; shown as no.
	run -0 --separate-stderr ahead 3602 mq-conf paused
	assert_equal "$output" no
	run -0 --separate-stderr ahead 3602 mq-stat --prometheus
	assert_line "mq_paused{spool=\"$MQ_DIR\"} 0"
	run -0 --separate-stderr ahead 3602 mq-recv
	assert_equal "$stderr" ""
	# The time itself is taken too, as mq-conf prints it; a past one is no pause.
	mq-conf paused="$until"
	assert_equal "$(mq-conf paused)" "$until"
	mq-conf paused=2001-01-01T00:00:00Z
	assert_equal "$(mq-conf paused)" no
	# 1 and 0 stay booleans; 2 is two seconds.
	mq-conf paused=1
	assert_equal "$(mq-conf paused)" 1
	mq-conf paused=2
	[[ $(mq-conf paused) == *Z ]]
	# Paused for no time is not paused.
	mq-conf paused=0s
	assert_equal "$(mq-conf paused)" no
	run -2 --separate-stderr mq-conf paused=1000000001
	assert_equal "$stderr" "mq-conf: paused=1000000001: too large (the most is 1000000000 seconds); nothing changed"
	for bad in 2026-02-30T00:00:00Z 2027-02-29T00:00:00Z 2026-12-05T24:00:00Z 2026-12-05T-0:00:00Z \
	    "2026-12-05T 8:00:00Z" 2026-12-05 2026-12-05T08:00:00 -1h soon; do
		run -2 --separate-stderr mq-conf paused="$bad"
		assert_equal "$stderr" "mq-conf: paused=$bad: not yes/no, true/false, on/off, 1/0, a duration or a time (2026-12-05T08:00:00Z); nothing changed"
	done
}

@test "mq-conf paused=SECS: a waiting mq-recv -w and a worker resume by themselves when it ends" {
	err=$BATS_TEST_TMPDIR/err
	saying() { # text: the waiter has said it
		local _
		for _ in $(seq 1 200); do
			grep -q -- "$1" "$err" 2>/dev/null && return 0
			sleep 0.05
		done
		return 1
	}
	# Paused while they start, whatever the load; then for a second, set
	# while they wait: nothing rings the doorbell when it ends.
	for worker in "" "-- cat"; do
		mq-conf paused=yes
		echo "job$worker" | mq-send >/dev/null
		# shellcheck disable=SC2086 # the worker's command, as words
		timeout 30 mq-recv -n 1 -w 25 $worker >"$BATS_TEST_TMPDIR/out" 2>"$err" &
		pid=$!
		saying ": paused" || fail "not paused: $(cat "$err")"
		mq-conf paused=1s
		st=0
		wait "$pid" || st=$?
		assert_equal "$st" 0
		if [ -z "$worker" ]; then
			assert_equal "$(cat "$(cat "$BATS_TEST_TMPDIR/out")")" job
		else
			assert_equal "$(cat "$BATS_TEST_TMPDIR/out")" "job$worker"
			grep -q ": resumed$" "$err" || fail "no resumed: $(cat "$err")"
		fi
	done
}
