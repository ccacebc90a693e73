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
		for t in mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm; do
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
