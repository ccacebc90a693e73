# mq-test: long (tests/run starts it first)
load helper

@test "torture: 20 s and more of kill -9 at random instants loses nothing, keyed sends and deaths' histories included (tests/torture 20)" {
	run timeout 600 sh "$BATS_TEST_DIRNAME/torture" 20
	assert_success
	assert_line --regexp '^sent=[1-9][0-9]* processed=[0-9]+ lost=0 dup=[0-9]+ kills=[1-9][0-9]* left=0 dead=0 ttl=0 maxlen=0 bad=0 keyed=[1-9][0-9]* keyheld=[1-9][0-9]* keylost=0 keydup=0 broken=0 redriven=[1-9][0-9]* torn=0 shrunk=0$'
}

@test "torture: with max-depth and ttl set, 20 s and more of kill -9 loses nothing; messages past their ttl are dead, not lost" {
	run timeout 600 sh "$BATS_TEST_DIRNAME/torture" 20 max-depth=40 ttl=1
	assert_success
	assert_line --regexp '^sent=[1-9][0-9]* processed=[0-9]+ lost=0 dup=[0-9]+ kills=[1-9][0-9]* left=0 dead=0 ttl=[1-9][0-9]* maxlen=0 bad=0 keyed=[0-9]+ keyheld=[0-9]+ keylost=0 keydup=0 broken=0 redriven=[0-9]+ torn=0 shrunk=0$'
}

@test "torture: with max-depth, overflow=drop-oldest and ttl, 10 s and more of kill -9 loses nothing; dropped messages are dead, not lost" {
	# A max-depth below the bursts of 20: every burst drops messages.
	run timeout 600 sh "$BATS_TEST_DIRNAME/torture" 10 max-depth=10 overflow=drop-oldest ttl=1
	assert_success
	assert_line --regexp '^sent=[1-9][0-9]* processed=[0-9]+ lost=0 dup=[0-9]+ kills=[1-9][0-9]* left=0 dead=0 ttl=[0-9]+ maxlen=[1-9][0-9]* bad=0 keyed=[0-9]+ keyheld=[0-9]+ keylost=0 keydup=0 broken=0 redriven=[0-9]+ torn=0 shrunk=0$'
}

@test "torture: a producer's failing mq-send (exit 4) fails the run" {
	[ -f "$BATS_TEST_DIRNAME/fault.so" ] || fail "tests/fault.so is not built"
	# Every mq-send fails (4) syncing new/ after its message landed.
	LD_PRELOAD="$BATS_TEST_DIRNAME/fault.so" \
	    MQ_FAULT='fsync:errno=EIO:at=/spool/new' \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    run --separate-stderr timeout 300 sh "$BATS_TEST_DIRNAME/torture" 2
	assert_failure 1
	assert_line --regexp '^sent=0 .* bad=[1-9][0-9]* keyed='
	[[ $stderr == *"p1: exit 4"* ]]
	[[ $stderr == *"mq-send: "*"/spool/new: Input/output error"* ]]
}
