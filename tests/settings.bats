load helper

# The spool's settings (mq-conf) give mq-recv's and mq-sweep's defaults
# for -m and -t; an option on the command line wins.  (Worker mode: in
# worker.bats; paused: pause.bats.)

# Seconds from now to the lease deadline of a receipt, rounded down.
lease_left() {
	local d now
	d=${1##*/}
	d=${d#*,}
	d=${d%%,*}
	now=$(date +%s)
	echo $((${d%.*} - now))
}

# Claims the one message with a lease of 1 ms and lets it run out.
claim_and_expire() {
	mq-recv -t 0.001 "$@" >/dev/null
	sleep 0.05
}

@test "mq-recv: the lease is the spool's (mq-conf lease), -t wins" {
	printf 'a\nb\n' | mq-send -l >/dev/null
	mq-conf lease=500
	left=$(lease_left "$(mq-recv)")
	[ "$left" -ge 490 ] && [ "$left" -le 500 ]
	left=$(lease_left "$(mq-recv -t 20)")
	[ "$left" -ge 10 ] && [ "$left" -le 20 ]
}

@test "mq-recv: a message is dead after the spool's max-attempts" {
	id=$(echo x | mq-send)
	mq-conf max-attempts=2
	claim_and_expire
	claim_and_expire
	run -1 mq-recv
	assert_equal "$(count dead)" 1
	run mq-dlq ls
	[[ $output == "$id	2	"*"	max attempts	"* ]]
}

@test "mq-recv: -m wins over the spool's max-attempts" {
	echo x | mq-send >/dev/null
	mq-conf max-attempts=1
	claim_and_expire -m 3
	claim_and_expire -m 3
	run -0 mq-recv -m 3
	[[ $output == *",3" ]]
	assert_equal "$(count dead)" 0
}

@test "mq-sweep: buries at the spool's max-attempts, -m wins" {
	echo x | mq-send >/dev/null
	echo y | mq-send >/dev/null
	claim_and_expire -n 2
	mq-conf max-attempts=2
	mq-sweep
	assert_equal "$(count dead)" 0
	assert_equal "$(count new)" 2
	claim_and_expire -n 2
	# With -m 3 the spool's 2 is not used: both go back.
	mq-sweep -m 3
	assert_equal "$(count dead)" 0
	assert_equal "$(count new)" 2
	claim_and_expire -n 2 -m 3
	mq-sweep
	assert_equal "$(count dead)" 2
	assert_equal "$(count new)" 0
}

@test "mq-sweep -i: a sweeping service follows a change of max-attempts" {
	echo x | mq-send >/dev/null
	claim_and_expire
	mq-conf max-attempts=1
	timeout -k 5 20 mq-sweep -i 0.1 &
	pid=$!
	i=0
	while [ "$(count dead)" -eq 0 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	kill "$pid"
	wait "$pid" || true
	assert_equal "$(count dead)" 1
}

@test "mq-recv -w: a change of lease while it waits applies to its claim" {
	mq-send -l </dev/null >/dev/null
	timeout -k 5 20 mq-recv -w 15 >"$BATS_TEST_TMPDIR/r" &
	pid=$!
	sleep 0.3
	mq-conf lease=500
	sleep 0.3
	echo a | mq-send >/dev/null
	wait "$pid"
	left=$(lease_left "$(cat "$BATS_TEST_TMPDIR/r")")
	[ "$left" -ge 490 ] && [ "$left" -le 500 ] || { echo "left: $left"; false; }
}
