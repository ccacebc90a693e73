# make dist and the version: one number, in src/core/mq.h, that every tool
# prints, that debian/changelog and NEWS carry and that names the tarball.
load helper

top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

tools="mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls mq-show mq-rm mq-log mq-top"

in_git() {
	git -C "$top" rev-parse --git-dir >/dev/null 2>&1
}

# A clone of the checkout's committed files with its work tree's changes
# to tracked files applied, so that make dist runs where nothing else
# writes (not in the checkout, where other tests build).
clone() {
	in_git || skip "not a git checkout"
	git clone -q --no-hardlinks "$top" "$1"
	(cd "$top" && git ls-files -z | tar --null -cf - -T -) | (cd "$1" && tar -xf -)
}

@test "version: every tool's -V, make version, debian/changelog and NEWS say the same" {
	v=$(make -s --no-print-directory -C "$top" version)
	[[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "make version: $v"
	for t in mq $tools; do
		assert_equal "$("$t" -V)" "$t $v"
	done
	if [ -x "$top/bin/mq-relay" ]; then
		assert_equal "$(mq-relay -V)" "mq-relay $v"
	fi
	# The changelog's first line, as dpkg-parsechangelog -SVersion reads it.
	assert_equal "$(sed -n '1s/^mq (\([^)]*\)).*/\1/p' "$top/debian/changelog")" "$v"
	grep -qx "mq $v (.*)" "$top/NEWS" || fail "NEWS has no entry for $v"
	if command -v dpkg-parsechangelog >/dev/null; then
		assert_equal "$(cd "$top" && dpkg-parsechangelog -SVersion)" "$v"
	fi
}

@test "NEWS: an entry for each version of debian/changelog, newest first, from 0.1.0" {
	news=$(sed -n 's/^mq \([0-9.]*\) (.*)$/\1/p' "$top/NEWS")
	changelog=$(sed -n 's/^mq (\([^)]*\)).*/\1/p' "$top/debian/changelog")
	assert_equal "$news" "$changelog"
	assert_equal "$(tail -n 1 <<<"$news")" 0.1.0
}

@test "make dist: mq-VERSION.tar.gz of the tracked files under mq-VERSION/, the same bytes twice" {
	c=$BATS_TEST_TMPDIR/c
	clone "$c"
	v=$(make -s --no-print-directory -C "$c" version)
	run make -s -C "$c" dist
	assert_success
	assert_output "mq-$v.tar.gz"
	first=$(sha256sum <"$c/mq-$v.tar.gz")
	# Another mtime on every file, another umask: the same tarball.
	# Files that git does not track (what make builds, say) stay out.
	find "$c" -path "$c/.git" -prune -o -type f -exec touch -d '2001-01-01 00:00' {} +
	chmod g+w "$c/Makefile"
	mkdir "$c/bin"
	touch "$c/bin/mq-send" "$c/src/untracked.c"
	make -s -C "$c" dist >/dev/null
	assert_equal "$(sha256sum <"$c/mq-$v.tar.gz")" "$first"
	assert_equal "$(tar -tzf "$c/mq-$v.tar.gz")" \
	    "$(cd "$c" && git ls-files | LC_ALL=C sort | sed "s,^,mq-$v/,")"
	# Fixed owner, group and modes; the last commit's time.
	run tar -tvzf "$c/mq-$v.tar.gz"
	refute_line --regexp '^.{10} [^0]'
	refute_line --regexp '^.....w'
	refute_line --regexp '^........w'
	when=$(date -u -d "@$(git -C "$c" log -1 --format=%ct)" '+%Y-%m-%d %H:%M')
	[[ ${lines[0]} == *" $when "* ]] || fail "not the commit's time: ${lines[0]}"
	# gzip -n: no name, no time in the header (bytes 4-7 are zero).
	assert_equal "$(od -An -tx1 -j4 -N4 "$c/mq-$v.tar.gz" | tr -d ' ')" 00000000
}

@test "make dist: the unpacked tarball builds with make" {
	c=$BATS_TEST_TMPDIR/c
	clone "$c"
	v=$(make -s --no-print-directory -C "$c" version)
	make -s -C "$c" dist >/dev/null
	mkdir "$BATS_TEST_TMPDIR/u"
	tar -C "$BATS_TEST_TMPDIR/u" -xzf "$c/mq-$v.tar.gz"
	run make -s -C "$BATS_TEST_TMPDIR/u/mq-$v"
	assert_success
	assert_equal "$("$BATS_TEST_TMPDIR/u/mq-$v/bin/mq-send" -V)" "mq-send $v"
}

@test "make dist outside a git checkout fails and says why" {
	in_git || skip "not a git checkout: no tarball to unpack"
	c=$BATS_TEST_TMPDIR/c
	mkdir "$c"
	(cd "$top" && git ls-files -z | tar --null -cf - -T -) | (cd "$c" && tar -xf -)
	run -2 --separate-stderr make -s -C "$c" dist
	[[ $stderr == *"make dist: "*"not a git checkout"* ]] || fail "$stderr"
	assert_not_exist "$c"/mq-*.tar.gz
}
