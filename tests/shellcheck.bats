load helper

top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

@test "shellcheck: every shell script of the project is clean" {
	command -v shellcheck >/dev/null || skip "shellcheck is not installed"
	cd "$top"
	scripts=$(git ls-files -co --exclude-standard 2>/dev/null | grep -E '\.(sh|bash|bats)$|^tests/(run|torture|rabbit)$|^\.ci/run$' ||
	    find . -path ./tests/fuzz -prune -o -type f \( -name '*.sh' -o -name '*.bash' -o -name '*.bats' \) -print)
	[ -n "$scripts" ]
	# The completion is for bash; the rest say what they are in their #!.
	run shellcheck -s bash share/completions/mq.bash
	assert_success
	# shellcheck disable=SC2046 # one word per file
	run shellcheck $(grep -v '^share/completions/' <<<"$scripts")
	assert_success
	assert_output ""
}
