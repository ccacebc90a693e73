load helper

top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

installed_tree() { # root
	(cd "$1" && find . \( -type f -o -type l \) | sort)
}

@test "make install: programs, man pages, completions, units, examples and alerting rules under DESTDIR and PREFIX" {
	dest=$BATS_TEST_TMPDIR/dest
	make -s -C "$top" install DESTDIR="$dest" >/dev/null
	expected=$(
		for p in mq mq-ack mq-conf mq-dlq mq-log mq-ls mq-recv mq-rm mq-send mq-show mq-stat mq-sweep mq-top; do
			echo "./usr/local/bin/$p"
			echo "./usr/local/share/man/man1/$p.1"
			echo "./usr/local/share/bash-completion/completions/$p"
		done
		echo ./usr/local/share/man/man5/mq-spool.5
		echo ./usr/local/share/man/man7/mq.7
		echo ./usr/local/share/zsh/site-functions/_mq
		for u in mq-sweep@.service mq-sweep@.timer mq-worker@.service; do
			echo "./usr/local/lib/systemd/system/$u"
		done
		for e in cron-producer.sh once-result.sh outbox-relay.sh redrive-runbook.sh shared-spool.sh \
		    thumbnail-job.sh thumbnail-worker.conf xargs-pool.sh; do
			echo "./usr/local/share/doc/mq/examples/$e"
		done
		echo ./usr/local/share/doc/mq/prometheus/mq-alerts.yml
		# mq-relay, built only where librabbitmq is found, with its page,
		# completion and units.
		if [ -x "$top/bin/mq-relay" ]; then
			echo ./usr/local/bin/mq-relay
			echo ./usr/local/share/man/man1/mq-relay.1
			echo ./usr/local/share/bash-completion/completions/mq-relay
			echo ./usr/local/lib/systemd/system/mq-relay-push@.service
			echo ./usr/local/lib/systemd/system/mq-relay-pull@.service
		fi
	)
	assert_equal "$(installed_tree "$dest")" "$(sort <<<"$expected")"
	cmp "$top/share/prometheus/mq-alerts.yml" "$dest/usr/local/share/doc/mq/prometheus/mq-alerts.yml"
	for p in mq mq-ack mq-conf mq-dlq mq-log mq-ls mq-recv mq-rm mq-send mq-show mq-stat mq-sweep mq-top; do
		run "$dest/usr/local/bin/$p" --version
		assert_success
	done
	# The units name the programs where they are installed.
	grep -q '^ExecStart=/usr/local/bin/mq-recv ' "$dest/usr/local/lib/systemd/system/mq-worker@.service"
	run grep -r '@BINDIR@' "$dest"
	assert_failure
}

@test "make uninstall removes what make install put there, and nothing else" {
	dest=$BATS_TEST_TMPDIR/dest
	mkdir -p "$dest/usr/local/bin"
	touch "$dest/usr/local/bin/other-tool"
	make -s -C "$top" install DESTDIR="$dest" >/dev/null
	make -s -C "$top" uninstall DESTDIR="$dest" >/dev/null
	assert_equal "$(installed_tree "$dest")" "./usr/local/bin/other-tool"
}

@test "make install PREFIX=...: everything under it, and the units point there" {
	prefix=$BATS_TEST_TMPDIR/opt/mq
	make -s -C "$top" install PREFIX="$prefix" >/dev/null
	assert_file_executable "$prefix/bin/mq-recv"
	assert_file_exist "$prefix/share/man/man1/mq-stat.1"
	grep -q "^ExecStart=$prefix/bin/mq-sweep -d %f$" "$prefix/lib/systemd/system/mq-sweep@.service"
}

# Every line of the installed examples and units under DESTDIR $1 and
# PREFIX $2 that names a path of another install (/usr/local, or /usr as
# a package's: /usr/bin:/bin, cron's PATH, is no install's), or that keeps
# a placeholder.
wrong_paths() {
	local d="$1$2/share/doc/mq/examples $1$2/lib/systemd/system"
	# shellcheck disable=SC2086 # two directories
	{
		[ "$2" = /usr/local ] || grep -rn /usr/local $d
		[ "$2" = /usr ] || grep -rnE '(^|[^a-z/])/usr/(bin|share|lib)/' $d
		grep -rn '@[A-Z]*DIR@' $d
	} || :
}

@test "make install: the examples and units name the programs and examples where that install puts them" {
	for prefix in /usr/local /usr /opt/mq; do
		dest=$BATS_TEST_TMPDIR/dest$prefix
		if [ "$prefix" = /usr/local ]; then
			make -s -C "$top" install DESTDIR="$dest" >/dev/null
		else
			make -s -C "$top" install PREFIX="$prefix" DESTDIR="$dest" >/dev/null
		fi
		ex=$dest$prefix/share/doc/mq/examples
		grep -qx "MQ_WORKER_COMMAND=$prefix/share/doc/mq/examples/thumbnail-job.sh /srv/thumbs" \
		    "$ex/thumbnail-worker.conf"
		for e in cron-producer.sh outbox-relay.sh; do
			grep -qx "#   PATH=$prefix/bin:/usr/bin:/bin" "$ex/$e"
			grep -q "^#   \* \* \* \* \* $prefix/share/doc/mq/examples/$e " "$ex/$e"
		done
		grep -qx "ExecStart=$prefix/bin/mq-recv -d %f -w \$MQ_WORKER_OPTS -- \$MQ_WORKER_COMMAND" \
		    "$dest$prefix/lib/systemd/system/mq-worker@.service"
		run wrong_paths "$dest" "$prefix"
		assert_output ""
		# The scripts stay executable: the worker's command is one.
		for e in "$top"/share/doc/mq/examples/*.sh; do
			assert_file_executable "$ex/${e##*/}"
		done
	done
}

@test "systemd units: mq-worker@.service and its example configuration say the jobs run as root unless a User= is set, and show one" {
	for f in "$top/share/systemd/mq-worker@.service" "$top/share/doc/mq/examples/thumbnail-worker.conf"; do
		grep -q 'run.* as root unless' "$f" || fail "${f##*/} does not say the jobs run as root"
		grep -qE '^#( +)?User=' "$f" || fail "${f##*/} shows no User="
		grep -qE '^#( +)?Group=' "$f" || fail "${f##*/} shows no Group="
		grep -q 'shared spool root' "$f" || fail "${f##*/} does not name the shared spool root"
		grep -q '@DOCDIR@/examples/shared-spool.sh' "$f" || fail "${f##*/} does not name shared-spool.sh"
	done
	# In the unit, commented where they go.
	sed -n '/^\[Service\]/,/^\[/p' "$top/share/systemd/mq-worker@.service" | grep -qx '#User=thumbs'
	sed -n '/^\[Service\]/,/^\[/p' "$top/share/systemd/mq-worker@.service" | grep -qx '#Group=jobs'
}

@test "systemd units: systemd-analyze verify passes for an instance of each" {
	command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
	prefix=$BATS_TEST_TMPDIR/usr
	make -s -C "$top" install PREFIX="$prefix" >/dev/null
	mkdir "$BATS_TEST_TMPDIR/units"
	for u in mq-sweep@.service mq-sweep@.timer mq-worker@.service; do
		cp "$prefix/lib/systemd/system/$u" "$BATS_TEST_TMPDIR/units/${u/@/@var-spool-thumbs}"
	done
	# mq-relay's units, as make install writes them, naming a program that
	# exists (verify checks it): the one built, or a stand-in.
	relaybin=$BATS_TEST_TMPDIR/relaybin
	mkdir "$relaybin"
	if [ -x "$prefix/bin/mq-relay" ]; then
		cp "$prefix/bin/mq-relay" "$relaybin/"
	else
		printf '#!/bin/sh\nexit 0\n' >"$relaybin/mq-relay"
		chmod +x "$relaybin/mq-relay"
	fi
	for u in mq-relay-push@.service mq-relay-pull@.service; do
		sed "s,@BINDIR@,$relaybin,g" "$top/share/systemd/$u" \
		    >"$BATS_TEST_TMPDIR/units/${u/@/@var-spool-jobs}"
	done
	run --separate-stderr systemd-analyze verify --man=no "$BATS_TEST_TMPDIR"/units/*
	assert_success
	[ -z "$stderr" ]
	# The instance is the spool's path, escaped as systemd does.
	assert_equal "$(systemd-escape --path /var/spool/thumbs)" var-spool-thumbs
}

@test "systemd units: mq-relay's, one per direction, as documented" {
	for d in push pull; do
		u=$top/share/systemd/mq-relay-$d@.service
		grep -qx "ExecStart=@BINDIR@/mq-relay $d -d %f \\\$MQ_RELAY_OPTS" "$u"
		# The URIs, passwords and all, come from a file only root reads.
		grep -qx 'EnvironmentFile=-/etc/mq/relay-%i.env' "$u"
		grep -qx 'Restart=always' "$u"
		grep -qx 'RestartSec=5s' "$u"
		grep -qx 'KillMode=mixed' "$u"
		grep -qx 'KillSignal=SIGTERM' "$u"
		grep -qx 'NoNewPrivileges=yes' "$u"
		grep -qx 'Documentation=man:mq-relay(1)' "$u"
		grep -qx 'RequiresMountsFor=%f' "$u"
	done
}

@test "make install: mq-relay's page, completion and units come with the program, and only with it" {
	# A copy of the checkout (objects and programs kept up to date), in
	# which a stand-in for mq-relay is put when none is built.
	copy=$BATS_TEST_TMPDIR/copy
	mkdir "$copy"
	(cd "$top" && tar -cf - --exclude=.git .) | (cd "$copy" && tar -xpf -)
	relay_files="bin/mq-relay share/man/man1/mq-relay.1 share/bash-completion/completions/mq-relay
	    lib/systemd/system/mq-relay-push@.service lib/systemd/system/mq-relay-pull@.service"
	# (make all builds it where librabbitmq is found.)
	make -s -C "$copy" install DESTDIR="$BATS_TEST_TMPDIR/without" >/dev/null
	if [ ! -x "$copy/bin/mq-relay" ]; then
		for f in $relay_files; do
			assert_file_not_exist "$BATS_TEST_TMPDIR/without/usr/local/$f"
		done
		printf '#!/bin/sh\nexit 0\n' >"$copy/bin/mq-relay"
		chmod +x "$copy/bin/mq-relay"
	fi
	dest=$BATS_TEST_TMPDIR/with
	make -s -C "$copy" install DESTDIR="$dest" >/dev/null
	for f in $relay_files; do
		assert_file_exist "$dest/usr/local/$f"
	done
	grep -qx 'ExecStart=/usr/local/bin/mq-relay push -d %f $MQ_RELAY_OPTS' \
	    "$dest/usr/local/lib/systemd/system/mq-relay-push@.service"
	make -s -C "$copy" uninstall DESTDIR="$dest" >/dev/null
	assert_equal "$(installed_tree "$dest")" ""
}
