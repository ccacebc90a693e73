load helper

top="$BATS_TEST_DIRNAME/.."

# A machine where no Debian package is installed and the user is not root:
# dpkg-query finds nothing, id says uid 1000, pkg-config finds nothing.
setup() {
	stub="$BATS_TEST_TMPDIR/stub"
	mkdir -p "$stub"
	printf '#!/bin/sh\nexit 1\n' >"$stub/dpkg-query"
	printf '#!/bin/sh\necho 1000\n' >"$stub/id"
	printf '#!/bin/sh\nexit 1\n' >"$stub/pkg-config"
	chmod +x "$stub"/*
}

@test "deps.sh build: as another user, prints the apt-get line for the build packages only" {
	run -1 --separate-stderr env PATH="$stub:$PATH" sh "$top/share/deps.sh" build
	assert_equal "$output" ""
	[[ $stderr == *"apt-get update && apt-get install -y --no-install-recommends make gcc libc6-dev pkg-config libbsd-dev"* ]]
	[[ $stderr != *bats* && $stderr != *valgrind* && $stderr != *systemd* ]]
}

@test "deps.sh: the default is what make check needs, the build packages included" {
	run -1 --separate-stderr env PATH="$stub:$PATH" sh "$top/share/deps.sh"
	[[ $stderr == *" libbsd-dev "* ]]
	for p in bats bats-support bats-assert bats-file mandoc strace python3 \
	    faketime valgrind shellcheck e2fsprogs; do
		[[ $stderr == *" $p "* || $stderr == *" $p" ]] || fail "$p missing: $stderr"
	done
}

@test "deps.sh: an unknown purpose is a usage error" {
	run -2 --separate-stderr sh "$top/share/deps.sh" everything
	[[ $stderr == "usage: "* ]]
}

@test "make without libbsd says what to run instead of failing in the compiler" {
	run -2 --separate-stderr env PATH="$stub:$PATH" make -s -C "$top" all
	[[ $stderr == *"sh share/deps.sh build"* ]]
	[[ $stderr != *"implicit declaration"* ]]
}

@test "make demo as another user asks for the build packages only" {
	run -2 --separate-stderr env PATH="$stub:$PATH" make -s -C "$top" demo
	[[ $stderr == *"libbsd-dev"* ]]
	[[ $stderr != *bats* && $stderr != *valgrind* && $stderr != *clang* ]]
}

@test "README: the quick start names every package deps.sh installs for make check, and no other" {
	run -1 --separate-stderr env PATH="$stub:$PATH" sh "$top/share/deps.sh"
	wanted=$(sed -n 's/.*--no-install-recommends //p' <<<"$stderr" | tr ' ' '\n' | sort)
	[ -n "$wanted" ]
	# The two backquoted lists of the paragraph after the quick start's
	# commands: the build packages, then the test tools.
	named=$(sed -n '/^Each installs the Debian packages/,/^$/p' "$top/README.md" |
	    tr '\n' ' ' | grep -o '`[^`]*`' | tr -d '`' | grep -e libbsd-dev -e bats |
	    tr ' ' '\n' | grep -vx -e '' -e make | sort -u)
	assert_equal "$named" "$(sort -u <<<"$wanted" | grep -vx make)"
}
