# once_round POINT KIND CUT RESTORE: one round of the crash tests of
# mq-recv --once, with a kill (once.bats) or a power cut (powercut.bats).
# Three messages (one, two, three) are sent to $MQ_DIR and a worker --once
# runs KIND's job over them:
#
#	plain	tests/crash/once-job: counts its runs into $dir/count, an
#		effect outside the spool, as a service's would be
#	result	share/doc/mq/examples/once-result.sh, its results in
#		$RESULTS: the rename that makes one is its effect
#
# The worker claims one message (-n 1): its job's end is cut at POINT:
#
#	before	the job's effect not made (the count, the result's rename)
#	after	made, the job not ended
#	record	the job ended and its message renamed into once/, not synced
#		(gdb stops the worker at mq_once_sync, which it calls last
#		before it exits)
#	synced	once/ synced (gdb, once mq_once_sync has returned)
#
# where the shell command CUT runs and the worker is killed (SIGKILL).
# Then RESTORE runs (a command: the file system mounted again), and a
# worker with the clock an hour ahead (every lease run out) drains the
# spool.  Sets $runs: how many times a job made its effect (the count's
# lines; the results made).  Fails unless the spool is left with nothing
# but its ledger of three entries, and each result is its body's.

once_round() {
	local point=$1 kind=$2 cut=$3 restore=$4 st crash ex
	local -a job fin=()
	crash=$BATS_TEST_DIRNAME/crash
	ex=$BATS_TEST_DIRNAME/../share/doc/mq/examples
	dir=$BATS_TEST_TMPDIR/once.$point.$kind.$RANDOM
	mkdir -p "$dir/bin"
	for b in one two three; do
		echo "$b" | mq-send >/dev/null || fail "$point $kind: cannot send"
	done
	case $kind in
	plain)
		job=("$crash/once-job" "$dir/count") ;;
	result)
		mkdir -p "$RESULTS"
		ln -s "$crash/once-mv" "$dir/bin/mv"
		job=(env "PATH=$dir/bin:$PATH" sh "$ex/once-result.sh" "$RESULTS") ;;
	esac
	# What was made before the worker starts is durable.
	sync
	export CUT_CMD=$cut CUT_MARK=$dir/cut
	case $point in
	before|after)
		st=0
		CUT_AT=$point timeout -k 5 60 mq-recv -n 1 --once -- "${job[@]}" \
		    </dev/null >"$dir/worker.out" 2>&1 || st=$?
		[ "$st" -eq 137 ] ||
		    fail "$point $kind: the worker was not killed at its job's end (status $st): $(cat "$dir/worker.out")"
		;;
	record|synced)
		command -v gdb >/dev/null || fail "gdb is not installed"
		[ "$point" = record ] || fin=(-ex finish)
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		    timeout -k 5 60 gdb -q -batch -ex 'set breakpoint pending on' \
		    -ex 'break mq_once_sync' \
		    -ex "run -n 1 --once -- $(printf '%q ' "${job[@]}") </dev/null" \
		    "${fin[@]}" -ex "shell $cut" -ex kill \
		    --args "$(bin_of mq-recv)" </dev/null >"$dir/worker.out" 2>&1
		grep -q "Breakpoint 1" "$dir/worker.out" ||
		    fail "$point $kind: the worker never reached mq_once_sync: $(cat "$dir/worker.out")"
		;;
	esac
	$restore
	run ahead 3600 timeout -k 5 60 mq-recv --once -- "${job[@]}"
	[ "$status" -eq 0 ] || fail "$point $kind: the drain failed (status $status): $output"
	if [ "$(count new)" -ne 0 ] || [ "$(count cur)" -ne 0 ] ||
	    [ "$(count dead)" -ne 0 ]; then
		fail "$point $kind: left in the spool: $(find "$MQ_DIR/new" "$MQ_DIR/cur" "$MQ_DIR/dead" -type f)"
	fi
	[ "$(find "$MQ_DIR/once" -type f | wc -l)" -eq 3 ] ||
	    fail "$point $kind: the ledger: $(ls "$MQ_DIR/once")"
	case $kind in
	plain)
		runs=$(wc -l <"$dir/count") ;;
	result)
		runs=$(find "$RESULTS" -type f ! -name '.*' | wc -l)
		[ "$(cat "$RESULTS"/[ik]* | sort | tr '\n' ' ')" = "ONE THREE TWO " ] ||
		    fail "$point $kind: results: $(head "$RESULTS"/*)"
		;;
	esac
	runs=${runs// /}
}
