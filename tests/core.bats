load helper

# The calls between the files of the core (src/libmq.a), one "caller
# callee" line each, from the symbols each object defines and uses.
core_calls() {
	nm -A -P "$1" | awk '
	{
		f = $1
		sub(/^.*\[/, "", f)
		sub(/\.o\]:$/, "", f)
	}
	$3 ~ /^[TDBR]$/ { def[$2] = f }
	$3 == "U" { use[++n] = f " " $2 }
	END {
		for (i = 1; i <= n; i++) {
			split(use[i], u, " ")
			if ((u[2] in def) && def[u[2]] != u[1])
				print u[1], def[u[2]]
		}
	}' | sort -u
}

@test "core: no call cycle between the files of the core (src/README)" {
	lib="$BATS_TEST_DIRNAME/../src/libmq.a"
	assert_file_exist "$lib"
	core_calls "$lib" >"$BATS_TEST_TMPDIR/calls"
	# Something to order: the core's files do call each other.
	assert [ -s "$BATS_TEST_TMPDIR/calls" ]
	run tsort "$BATS_TEST_TMPDIR/calls"
	assert_success
	refute_output --partial loop
}

@test "core: no platform #if in a .c file but wait.c (compat.h is the one place)" {
	for f in "$BATS_TEST_DIRNAME"/../src/*.c; do
		[ "${f##*/}" != wait.c ] || continue
		run grep -n '^[[:space:]]*#[[:space:]]*if' "$f"
		assert_failure 1
		assert_output ""
	done
}

@test "core: no main touches a state directory's fd or reads a receipt's layout" {
	src="$BATS_TEST_DIRNAME/../src"
	run grep -nE '\bsp(\.|->)(fd|tmp|new|cur|dead|reason)\b|\.bucket\b|\b(openat|renameat|unlinkat|mq_spool_spares)\(|(strlen|strn?cmp)\([^)]*MQ_DIR_' \
	    "$src"/mq-*.c "$src"/work.c
	assert_failure 1
	assert_output ""
}

@test "core: each tool spells its usage once, for usage() and --help" {
	for f in "$BATS_TEST_DIRNAME"/../src/mq-*.c; do
		n=$(grep -c '"usage: mq-' "$f")
		[ "$n" -eq 1 ] || fail "$f: usage spelled $n times"
	done
}

# -h, -V and a bad option are handled alike by every tool: one
# mq_common_opt (util.c) as the default: of each getopt switch, not a
# usage() and help() of each tool's own.
@test "core: each tool's -h, -V and bad options go through mq_common_opt" {
	for f in "$BATS_TEST_DIRNAME"/../src/mq-*.c; do
		run grep -nE '^(usage|help)\(|\b(usage|help)\(\)|\bmq_version\(' "$f"
		[ "$status" -eq 1 ] || fail "$f: its own option boilerplate: $output"
		grep -q 'mq_common_opt(ch, USAGE, help)' "$f" ||
		    fail "$f: no mq_common_opt"
	done
}

@test "core: each main fits in about two screens (100 lines)" {
	for f in "$BATS_TEST_DIRNAME"/../src/mq-*.c; do
		n=$(awk '/^main\(/ { s = NR } s && /^}/ { print NR - s + 1; exit }' "$f")
		[ -n "$n" ] && [ "$n" -le 100 ] || fail "$f: main is ${n:-no} lines"
	done
}
