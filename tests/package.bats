# The Debian packages: built from a copy of the tracked files in a
# temporary directory, checked by lintian, installed into a throwaway root
# where make demo's scenario runs from the installed paths, then purged.
# The build is done once for the file (setup_file).
# mq-test: long
load helper

top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

# What is missing to build and check the packages, if anything.
missing_tools() {
	local t m=
	for t in dpkg-buildpackage dpkg-deb dpkg-parsechangelog dh lintian; do
		command -v "$t" >/dev/null 2>&1 || m="$m $t"
	done
	pkg-config --exists librabbitmq 2>/dev/null || m="$m librabbitmq-dev"
	echo "${m# }"
}

setup_file() {
	[ -z "$(missing_tools)" ] || return 0
	build=$BATS_FILE_TMPDIR/build
	mkdir -p "$build/mq"
	# The tracked files (what make dist ships), or in an unpacked tarball
	# all of it: dpkg-buildpackage cleans the tree first.
	if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$top" && git ls-files -z | tar --null -cf - -T -)
	else
		(cd "$top" && tar -cf - --exclude=./.git .)
	fi | (cd "$build/mq" && tar -xf -)
	# Built as a packager would, whatever this make check was given
	# (make check SANITIZE=1 passes it down in MAKEFLAGS).
	(cd "$build/mq" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE \
	    dpkg-buildpackage -us -uc -b) >"$build/log" 2>&1 || {
		echo "# dpkg-buildpackage failed (log in $build/log):" >&3
		tail -n 30 "$build/log" | sed 's/^/# /' >&3
	}
	version=$(cd "$build/mq" && dpkg-parsechangelog -SVersion)
	echo "$version" >"$build/version"
}

setup() {
	local m
	m=$(missing_tools)
	[ -z "$m" ] || skip "needs $m (sh share/deps.sh test installs them)"
	build=$BATS_FILE_TMPDIR/build
	version=$(cat "$build/version")
	arch=$(dpkg --print-architecture)
	mq_deb=$build/mq_${version}_$arch.deb
	relay_deb=$build/mq-relay_${version}_$arch.deb
}

@test "package: dpkg-buildpackage -b builds mq and mq-relay of src/core/mq.h's version" {
	assert_file_exist "$mq_deb"
	assert_file_exist "$relay_deb"
	assert_equal "$version" "$(make -s --no-print-directory -C "$top" version)"
	assert_equal "$(dpkg-deb -f "$mq_deb" Version)" "$version"
	# The results go to the parent of the tree, the temporary directory.
	assert_file_exist "$build/mq_${version}_$arch.changes"
}

@test "package: mq depends on libc only, mq-relay on mq and the rabbitmq-c runtime" {
	deps=$(dpkg-deb -f "$mq_deb" Depends)
	[[ $deps =~ ^libc6\ \(\>=\ [0-9.]+\)$ ]] || fail "mq depends on: $deps"
	deps=$(dpkg-deb -f "$relay_deb" Depends)
	[[ $deps == *"librabbitmq4"* ]] || fail "mq-relay depends on: $deps"
	[[ $deps == *"mq (= $version)"* ]] || fail "mq-relay depends on: $deps"
}

@test "package: lintian finds no error and no warning" {
	run lintian "$build/mq_${version}_$arch.changes"
	# (as root lintian says it should not be, on stderr, with status 0)
	assert_success
	refute_line --regexp '^[EW]: '
}

# The paths a package ships, files and links, sorted.
files_of() {
	dpkg-deb -c "$1" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' | sort
}

@test "package: mq has the tools, pages, completions, units, examples and alerting rules where Debian expects them; mq-relay the relay alone" {
	files=$(files_of "$mq_deb")
	for p in mq mq-ack mq-conf mq-dlq mq-log mq-ls mq-recv mq-rm mq-send mq-show mq-stat mq-sweep mq-top; do
		grep -qx "/usr/bin/$p" <<<"$files" || fail "no /usr/bin/$p"
		grep -qx "/usr/share/man/man1/$p.1.gz" <<<"$files" || fail "no page of $p"
		grep -qx "/usr/share/bash-completion/completions/$p" <<<"$files" || fail "no completion of $p"
	done
	for f in /usr/share/man/man5/mq-spool.5.gz /usr/share/man/man7/mq.7.gz \
	    /usr/share/zsh/vendor-completions/_mq /usr/lib/systemd/system/mq-worker@.service \
	    /usr/lib/systemd/system/mq-sweep@.service /usr/lib/systemd/system/mq-sweep@.timer \
	    /usr/share/doc/mq/examples/xargs-pool.sh /usr/share/doc/mq/copyright \
	    /usr/share/doc/mq/prometheus/mq-alerts.yml; do
		grep -qx "$f" <<<"$files" || fail "no $f in mq"
	done
	grep -qxE '/usr/share/doc/mq/NEWS(\.gz)?' <<<"$files" || fail "no NEWS in mq"
	run grep -e mq-relay -e /usr/local <<<"$files"
	assert_output ""
	relay=$(files_of "$relay_deb")
	assert_equal "$(grep -v ^/usr/share/doc/ <<<"$relay")" "$(printf '%s\n' /usr/bin/mq-relay \
	    /usr/lib/systemd/system/mq-relay-pull@.service /usr/lib/systemd/system/mq-relay-push@.service \
	    /usr/share/bash-completion/completions/mq-relay /usr/share/man/man1/mq-relay.1.gz | sort)"
}

@test "package: the examples and units name the package's paths, not make install's default, and the example job runs" {
	x=$BATS_TEST_TMPDIR/x
	dpkg-deb -x "$mq_deb" "$x"
	grep -qx 'MQ_WORKER_COMMAND=/usr/share/doc/mq/examples/thumbnail-job.sh /srv/thumbs' \
	    "$x/usr/share/doc/mq/examples/thumbnail-worker.conf"
	grep -qx '#   \* \* \* \* \* /usr/share/doc/mq/examples/cron-producer.sh /srv/incoming' \
	    "$x/usr/share/doc/mq/examples/cron-producer.sh"
	run grep -rn -e /usr/local -e '@[A-Z]*DIR@' "$x/usr/share/doc/mq/examples" "$x/usr/lib/systemd"
	assert_output ""
	# The worker's command is the example job itself: it must stay
	# executable (and uncompressed) in the package.
	assert_file_executable "$x/usr/share/doc/mq/examples/thumbnail-job.sh"
	# Prometheus reads the alerting rules as they are: uncompressed.
	cmp "$top/share/prometheus/mq-alerts.yml" "$x/usr/share/doc/mq/prometheus/mq-alerts.yml"
}

@test "package: installed into a throwaway root, make demo's scenario runs from its paths; a purge leaves only dpkg's own files" {
	# dpkg gives the files to root as it unpacks them, which only root can.
	[ "$(id -u)" -eq 0 ] || skip "installing into a root needs root (dpkg chowns what it unpacks)"
	root=$BATS_TEST_TMPDIR/root
	mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/log"
	touch "$root/var/lib/dpkg/status"
	# The root has no libc6 package (the host's libc runs the programs);
	# dpkg's log goes into the root, not the host's /var/log.
	opts=(--root="$root" --log="$root/var/log/dpkg.log" --force-depends)
	run dpkg "${opts[@]}" -i "$mq_deb" "$relay_deb"
	assert_success
	# The units name the installed programs.
	grep -qx 'ExecStart=/usr/bin/mq-recv -d %f -w $MQ_WORKER_OPTS -- $MQ_WORKER_COMMAND' \
	    "$root/usr/lib/systemd/system/mq-worker@.service"
	grep -qx 'ExecStart=/usr/bin/mq-relay push -d %f $MQ_RELAY_OPTS' \
	    "$root/usr/lib/systemd/system/mq-relay-push@.service"
	run grep -rl -e @BINDIR@ -e '^ExecStart=/usr/local' "$root/usr/lib/systemd"
	assert_output ""
	# make demo's script from a directory with no bin/ beside it, so that
	# only the installed programs are on PATH.
	mkdir -p "$BATS_TEST_TMPDIR/demo/examples"
	cp "$top/share/examples/demo.sh" "$BATS_TEST_TMPDIR/demo/examples/"
	PATH="$root/usr/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	assert_equal "$(command -v mq-recv)" "$root/usr/bin/mq-recv"
	for p in "$root"/usr/bin/mq-*; do
		assert_equal "$("$p" -V)" "${p##*/} $version"
	done
	run sh "$BATS_TEST_TMPDIR/demo/examples/demo.sh"
	assert_success
	assert_output --partial "'flaky: upload, fails once' attempt 2 done"
	assert_output --partial "worker mode: 30 jobs sent, 29 done, 1 dead-lettered after 3 attempts"
	assert_output --partial "new/ 0, cur/ 0, dead/ 0"
	run dpkg "${opts[@]}" --purge mq-relay mq
	assert_success
	run find "$root" -mindepth 1 ! -path "$root/var" ! -path "$root/var/lib" \
	    ! -path "$root/var/lib/dpkg" ! -path "$root/var/lib/dpkg/*" \
	    ! -path "$root/var/log" ! -path "$root/var/log/dpkg.log"
	assert_output ""
	run dpkg --root="$root" -l mq mq-relay
	refute_line --regexp '^(ii|rc) '
}
