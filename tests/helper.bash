# Loaded by every test file: the built programs first on PATH and a
# scratch spool per test.
bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

PATH="$BATS_TEST_DIRNAME/../bin:$PATH"

# make check-valgrind: every mq program runs under valgrind memcheck, and
# any error it finds fails the test (exit 99).
if [ -n "${MQ_VALGRIND:-}" ]; then
	vg="$BATS_RUN_TMPDIR/valgrind-bin"
	if [ ! -d "$vg" ]; then
		mkdir -p "$vg"
		for t in mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm mq-log mq-top mq-relay; do
			printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite %s "$@"\n' \
			    "$(cd "$BATS_TEST_DIRNAME/../bin" && pwd)/$t" >"$vg/$t"
			chmod +x "$vg/$t"
		done
	fi
	PATH="$vg:$PATH"
fi
export MQ_DIR="$BATS_TEST_TMPDIR/spool"
unset XDG_STATE_HOME

# A directory of the programs that other users can run too: tests that
# switch users run them from there, since a checkout under a private home
# (/root is 0700 on Debian) is out of those users' reach.  bats removes it.
public_bin() {
	local d="$BATS_RUN_TMPDIR/public-bin" t
	if [ ! -d "$d" ]; then
		chmod 711 "$BATS_RUN_TMPDIR"
		mkdir -p "$d.$$"
		for t in "$BATS_TEST_DIRNAME"/../bin/mq-*; do
			cp "$t" "$d.$$/"
		done
		chmod -R a+rX "$d.$$"
		mv "$d.$$" "$d" 2>/dev/null || rm -rf "$d.$$"
	fi
	echo "$d"
}

# Number of message files in a state directory of the spool ($1).
count() {
	find "$MQ_DIR/$1" -type f | wc -l | tr -d ' '
}

# The bodies of everything claimable, in claim order, one per line.
drain() {
	local r
	while r=$(mq-recv "$@"); do
		cat "$r"
		echo
		mq-ack "$r"
	done
}

# Removes the spool once process $1 holds its new/ open (it is waiting on
# it), then waits for that process (at most 10 s); its status is in $st.
holds_new() {
	local fd
	for fd in "/proc/$1/fd/"*; do
		[ "$(readlink "$fd")" = "$2" ] && return 0
	done
	return 1
}
# shellcheck disable=SC2034 # st is for the caller
remove_spool_under() {
	local new i=0
	new="$(cd "$MQ_DIR" && pwd -P)/new"
	while ! holds_new "$1" "$new" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	rm -rf "$MQ_DIR"
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	kill -9 "$1" 2>/dev/null || true
	st=0
	wait "$1" || st=$?
}

# Runs a command as an unprivileged user (root bypasses permissions), from
# public_bin.
as_nobody() {
	if [ "$(id -u)" -eq 0 ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups env PATH="$(public_bin):$PATH" MQ_DIR="$MQ_DIR" "$@"
	else
		"$@"
	fi
}

# Sends each of the remaining arguments as a message of group $1 (mq-send
# -g), in that order.
gsend() {
	local g=$1 b
	shift
	for b; do
		echo "$b" | mq-send -g "$g" >/dev/null
	done
}

# The parked messages of group $1 (files in its tree, not its turn).
parked() {
	find "$MQ_DIR/groups/$1" -mindepth 4 -type f | wc -l | tr -d ' '
}

# faulty SPEC CMD...: runs CMD with tests/fault.so making the system calls
# of SPEC fail or stall (tests/fault.c has the MQ_FAULT syntax), at most
# 20 s.  ASan (make SANITIZE=1) would refuse a preloaded library that
# comes before its runtime; the shim intercepts nothing ASan needs.
faulty() {
	local spec=$1
	shift
	fault_env "$spec" timeout -k 5 20 "$@"
}

# fault_env SPEC CMD...: CMD with the faults of SPEC as faulty sets them,
# without its bound: for a command the test starts in the background and
# stops itself, or a function that starts one (a file's relay_bg).
fault_env() {
	local spec=$1 so="$BATS_TEST_DIRNAME/fault.so"
	shift
	[ -f "$so" ] || fail "tests/fault.so is not built (make tests/fault.so)"
	LD_PRELOAD="$so" MQ_FAULT="$spec" \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    "$@"
}

# race_at PROG FUNC ARGS CMD [N]: a race made to happen, for a window too
# narrow to hit by chance.  Runs PROG ARGS (after gdb's "run": a
# redirection may follow them) under gdb, stopped at the first call of
# FUNC; runs the shell command CMD while it is stopped there; then
# continues it, N times (default 1: one more stop at FUNC each).  As
# bats's run: gdb's output in $output (Breakpoint 1 when FUNC was reached,
# how PROG ended), its status in $status; at most 60 s.  LeakSanitizer
# (make SANITIZE=1) cannot run under ptrace: it is off.
# The program itself, never its valgrind wrapper (make check-valgrind):
# what gdb stops or strace watches must be the program, not valgrind.
bin_of() {
	echo "$BATS_TEST_DIRNAME/../bin/$1"
}

race_at() {
	local prog=$1 fn=$2 args=$3 cmd=$4 n=${5:-1} i
	local -a cont=()
	command -v gdb >/dev/null || fail "gdb is not installed"
	for ((i = 0; i < n; i++)); do
		cont+=(-ex continue)
	done
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    run timeout -k 5 60 gdb -q -batch -ex 'set breakpoint pending on' \
	    -ex "break $fn" -ex "run $args" -ex "shell $cmd" "${cont[@]}" \
	    --args "$(bin_of "$prog")" </dev/null
}

# ahead SECS CMD...: runs CMD with the clock SECS seconds ahead (faketime),
# so that a test of "not before SECS" need not sleep them, and a slow run
# (valgrind, a loaded machine) cannot outlast a short delay before the
# "not yet" is checked.  Files' times stay the file system's; ASan, when
# built in, must allow the preloaded library.
ahead() {
	local secs=$1
	shift
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    NO_FAKE_STAT=1 faketime -f "+${secs}s" "$@"
}

# Names of cur/ (receipts too) without their holder field (,hK..., see
# mq-spool(5)), from stdin: ID,DEADLINE,ATTEMPT... as before it existed.
unheld() {
	sed -E 's/,h[wr][0-9a-f]{8}\.[0-9a-f]+\.[0-9a-f]+\.[0-9a-f]+\.[0-9a-f]+,/,/'
}

# within SECS CMD...: runs CMD until it succeeds, for at most SECS
# seconds: 1 when it never did.
within() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 20; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# For a teardown: kills (SIGKILL) what a test left running, each process
# whose pid it wrote in $BATS_TEST_TMPDIR/NAME.pid.
kill_left() {
	local p
	for p in "$BATS_TEST_TMPDIR"/*.pid; do
		[ -e "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
	done
	true
}

# A busy spool: four senders of 500 lines each (their IDs in
# $BATS_TEST_TMPDIR/ids.N) and two claimers acking batches of up to $1,
# until the sends are done and nothing is left; busy_end waits for them
# all.  Bounded: a claimer gives up (1) after 120 s.
busy_begin() {
	local i
	busy_pids=() busy_claimers=()
	busy_until=$((SECONDS + 120))
	for i in 1 2 3 4; do
		seq 1 500 | timeout 60 mq-send -l >"$BATS_TEST_TMPDIR/ids.$i" &
		busy_pids+=($!)
	done
	for i in 1 2; do
		busy_claimer "$1" &
		busy_claimers+=($!)
	done
}

busy_claimer() {
	local r
	while [ $SECONDS -lt "$busy_until" ]; do
		if r=$(mq-recv -n "$1"); then
			printf '%s\n' "$r" | mq-ack
		elif [ -e "$BATS_TEST_TMPDIR/sent" ]; then
			return 0
		else
			sleep 0.01
		fi
	done
	return 1
}

busy_end() {
	local p
	for p in "${busy_pids[@]}"; do
		wait "$p"
	done
	touch "$BATS_TEST_TMPDIR/sent"
	for p in "${busy_claimers[@]}"; do
		wait "$p"
	done
}
