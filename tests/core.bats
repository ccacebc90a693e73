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
