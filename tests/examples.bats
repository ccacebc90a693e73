load helper

ex=$(cd "$BATS_TEST_DIRNAME/../share/doc/mq/examples" && pwd)
units=$(cd "$BATS_TEST_DIRNAME/../share/systemd" && pwd)
top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

# The crontabs in a text ($1): each run of non-blank lines that holds a
# cron entry (five time fields, then a command), without the indentation
# and code fences that a reader leaves out when pasting it.
crontabs() {
	sed -E 's/^[[:blank:]]*//' <<<"$1" | grep -v '^```' | awk '
		NF == 0 { if (cron) printf "%s\n", block; block = ""; cron = 0; next }
		{ block = block $0 "\n" }
		$1 $2 $3 $4 $5 ~ /^[0-9*\/,-]+$/ && $6 ~ /^[A-Za-z_\/.]/ { cron = 1 }
		END { if (cron) printf "%s\n", block }'
}

# Runs each entry of the crontabs ($1) once, as cron(8) does: with /bin/sh,
# in an environment of only HOME, LOGNAME, SHELL=/bin/sh and
# PATH=/usr/bin:/bin and the crontab's NAME=value lines.  An entry must
# succeed and print nothing (cron mails what it prints).  Absolute paths
# under /usr/local, /var and /srv are taken under $root, where
# make install DESTDIR=$root has put mq.
run_crontabs() {
	local line cmd n=0
	local env=(HOME="$BATS_TEST_TMPDIR" LOGNAME="$(id -un)" SHELL=/bin/sh PATH=/usr/bin:/bin)
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		line=$(sed -E "s#(^|[[:blank:]=:<>])/(usr/local|var|srv)/#\1$root/\2/#g" <<<"$line")
		if [[ $line =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then
			env+=("$line")
		elif [[ $line =~ ^([0-9*/,-]+[[:blank:]]+){5}(.*)$ ]]; then
			cmd=${BASH_REMATCH[2]}
			# Cron ends the command at a % (the rest is its input).
			[[ ! $cmd =~ (^|[^\\])% ]] || { echo "unescaped % in: $cmd"; return 1; }
			cmd=${cmd//\\%/%}
			run env -i "${env[@]}" /bin/sh -c "$cmd"
			if [ "$status" -ne 0 ] || [ -n "$output" ]; then
				echo "under cron: $cmd: status $status: $output"
				return 1
			fi
			n=$((n + 1))
		else
			echo "not a crontab line (cron does not join lines): $line"
			return 1
		fi
	done <<<"$1"
	[ "$n" -gt 0 ] || { echo "no cron entry found"; return 1; }
}

# make install under $root, with the default PREFIX (/usr/local).
install_root() {
	root=$BATS_TEST_TMPDIR/root
	make -s -C "$top" install DESTDIR="$root" >/dev/null
	mkdir -p "$root/var/spool" "$root/srv"
}

@test "example cron-producer.sh feeds the worker it is documented with: every image done, none dead" {
	in=$BATS_TEST_TMPDIR/in out=$BATS_TEST_TMPDIR/thumbs
	mkdir -p "$in" "$out"
	echo A >"$in/a.jpg"
	echo B >"$in/b.jpg"
	echo partial >"$in/.c.jpg"
	sh "$ex/cron-producer.sh" "$in"
	assert_equal "$(count new)" 2
	assert_file_exist "$in/queued/a.jpg"
	assert_file_not_exist "$in/a.jpg"
	assert_file_exist "$in/.c.jpg"
	# The next run finds nothing new.
	sh "$ex/cron-producer.sh" "$in"
	assert_equal "$(count new)" 2
	# The worker of thumbnail-worker.conf: thumbnail-job.sh in worker mode.
	run timeout 20 mq-recv -- sh "$ex/thumbnail-job.sh" "$out"
	assert_success
	assert_equal "$(cat "$out"/*.thumb | sort | tr '\n' ' ')" "A B "
	assert_equal "$(count dead)" 0
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
}

@test "example cron-producer.sh: a crash before or after the send loses no image" {
	in=$BATS_TEST_TMPDIR/in out=$BATS_TEST_TMPDIR/thumbs crash=$BATS_TEST_TMPDIR/crash
	mkdir -p "$in" "$out" "$crash"
	echo A >"$in/a.jpg"
	echo B >"$in/b.jpg"
	# Killed where it would send: nothing sent, both still in the inbox.
	printf '#!/bin/sh\nkill -9 $PPID\n' >"$crash/mq-send"
	chmod +x "$crash/mq-send"
	PATH="$crash:$PATH" run sh "$ex/cron-producer.sh" "$in"
	assert_equal "$status" 137
	assert_equal "$(count new)" 0
	assert_file_exist "$in/a.jpg"
	assert_file_exist "$in/b.jpg"
	sh "$ex/cron-producer.sh" "$in"
	assert_equal "$(count new)" 2
	# Killed right after a durable send: sent, and sent again next time.
	echo C >"$in/c.jpg"
	printf '#!/bin/sh\n"%s" "$@"\nkill -9 $PPID\n' "$top/bin/mq-send" >"$crash/mq-send"
	PATH="$crash:$PATH" run sh "$ex/cron-producer.sh" "$in"
	assert_equal "$status" 137
	assert_file_exist "$in/c.jpg"
	sh "$ex/cron-producer.sh" "$in"
	assert_file_not_exist "$in/c.jpg"
	assert_equal "$(count new)" 4
	run timeout 20 mq-recv -- sh "$ex/thumbnail-job.sh" "$out"
	assert_success
	assert_equal "$(cat "$out"/*.thumb | sort -u | tr '\n' ' ')" "A B C "
	assert_equal "$(count dead)" 0
}

@test "example cron-producer.sh: its crontab works under cron's environment" {
	install_root
	mkdir -p "$root/srv/incoming"
	echo A >"$root/srv/incoming/a.jpg"
	# The installed example, whose crontab names where it is installed.
	run_crontabs "$(crontabs "$(sed -n 's/^#//p' "$root/usr/local/share/doc/mq/examples/cron-producer.sh")")"
	assert_file_exist "$root/srv/incoming/queued/a.jpg"
	r=$(mq-recv -d "$root/var/spool/thumbs")
	assert_equal "$(cat "$r")" "$root/srv/incoming/queued/a.jpg"
}

# The Nth (from 1) ```sh block of the README's section on producers and
# workers, as a reader pastes it.
readme_sh() {
	sed -n '/^## A producer and a pool of workers/,/^## /p' "$top/README.md" |
	    awk -v n="$1" '/^```/ { if (inblock) { inblock = 0; next } if ($0 == "```sh") { i++; inblock = 1; next } }
		inblock && i == n'
}

# For the README's jobs: ImageMagick's convert SRC -resize GEOMETRY DST,
# as a copy.
fake_convert() {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\ncp "$1" "$4"\n' >"$BATS_TEST_TMPDIR/bin/convert"
	chmod +x "$BATS_TEST_TMPDIR/bin/convert"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH"
}

@test "README: the producer and xargs pool, pasted into a shell, make every thumbnail" {
	fake_convert
	cd "$BATS_TEST_TMPDIR"
	mkdir photos
	for i in 1 2 3 4 5 6 7 8 9 10; do echo "$i" >"photos/$i.jpg"; done
	code=$(readme_sh 1)
	# The same, but the pool stops when idle for a second.
	[[ $code == *'export MQ_DIR=/var/spool/thumbs'*'while mq-recv -w -n '* ]]
	code=${code//export MQ_DIR=\/var\/spool\/thumbs/export MQ_DIR=$BATS_TEST_TMPDIR/spool}
	code=${code//mq-recv -w -n/mq-recv -w 1 -n}
	run timeout 30 sh -c "$code"
	assert_success
	for i in 1 2 3 4 5 6 7 8 9 10; do
		assert_equal "$(cat "thumbs/$i.jpg")" "$i"
	done
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	assert_equal "$(count dead)" 0
}

@test "README: the xargs pool started before its spool waits for it, saying so once and no error, then works" {
	fake_convert
	cd "$BATS_TEST_TMPDIR"
	export MQ_DIR=$BATS_TEST_TMPDIR/later
	mkdir thumbs photos
	echo 1 >photos/1.jpg
	# From the loop (and what it needs) to its end.
	code=$(readme_sh 1 | sed -n '/^b=\$(mktemp)/,/^done$/p')
	[[ $code == *'while mq-recv -w '* ]]
	timeout 30 sh -c "$code" 2>err &
	pid=$!
	sleep 1
	kill -0 "$pid"
	assert_equal "$(cat err)" "mq-recv: $MQ_DIR: waiting for the spool to be made"
	echo "$PWD/photos/1.jpg" | mq-send -l >/dev/null
	for _ in $(seq 1 100); do
		[ -s thumbs/1.jpg ] && break
		sleep 0.1
	done
	kill "$pid"
	wait "$pid" || true
	assert_equal "$(cat thumbs/1.jpg)" 1
	assert_equal "$(cat err)" "mq-recv: $MQ_DIR: waiting for the spool to be made"
}

@test "README: the worker-mode pool makes every thumbnail once" {
	fake_convert
	cd "$BATS_TEST_TMPDIR"
	mkdir photos thumbs
	for i in 1 2 3; do echo "$i" >"photos/$i.jpg"; done
	find photos -name '*.jpg' | mq-send -l >/dev/null
	code=$(readme_sh 2)
	[[ $code == 'mq-recv -w -P 8 '* ]]
	# The same, but it stops when idle for a second.
	run timeout 30 sh -c "${code/mq-recv -w /mq-recv -w 1 }"
	assert_success
	assert_equal "$(cat thumbs/*.jpg | sort | tr '\n' ' ')" "1 2 3 "
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
}

@test "README: the --once job that calls a service passes the key, else the ID, as its idempotency key" {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	# curl, as the service sees it: the header and the body.
	printf '#!/bin/sh\nfor a; do case $a in Idempotency-Key:*) k=$a ;; esac; done\necho "$k|$(cat)" >>"%s"\n' \
	    "$BATS_TEST_TMPDIR/calls" >"$BATS_TEST_TMPDIR/bin/curl"
	chmod +x "$BATS_TEST_TMPDIR/bin/curl"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH"
	id=$(echo one | mq-send)
	echo two | mq-send -k charge-7 >/dev/null
	code=$(readme_sh 3)
	[[ $code == 'mq-recv -w -P 4 --once '* ]]
	# The same, but it stops when idle for a second; the same key sent
	# again is not sent to the service again.
	run timeout 30 sh -c "${code/mq-recv -w /mq-recv -w 1 }"
	assert_success
	echo two | mq-send -k charge-7 >/dev/null
	run timeout 30 sh -c "${code/mq-recv -w /mq-recv -w 1 }"
	assert_success
	assert_equal "$(sort "$BATS_TEST_TMPDIR/calls")" "$(printf '%s\n' "Idempotency-Key: $id|one" "Idempotency-Key: charge-7|two" | sort)"
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
}

@test "README: its crontab works under cron's environment" {
	install_root
	mq-send -d "$root/var/spool/thumbs" </dev/null >/dev/null
	run_crontabs "$(crontabs "$(cat "$top/README.md")")"
}

@test "mq-sweep(1): its crontab works under cron's environment" {
	install_root
	mq-send -d "$root/var/spool/jobs" </dev/null >/dev/null
	run_crontabs "$(crontabs "$(mandoc -Tascii "$top/share/man/man1/mq-sweep.1" | sed 's/.\x08//g')")"
}

@test "mq-stat(1): its crontab works under cron's environment, and the metrics land" {
	install_root
	echo x | mq-send -d "$root/var/spool/thumbs" >/dev/null
	mq-send -l -d "$root/var/spool/mail" </dev/null
	# Debian's prometheus-node-exporter reads its textfiles there.
	d=$root/var/lib/prometheus/node-exporter
	mkdir -p "$d"
	run_crontabs "$(crontabs "$(mandoc -Tascii "$top/share/man/man1/mq-stat.1" | sed 's/.\x08//g')")"
	grep -q "^mq_messages{spool=\"$root/var/spool/thumbs\",state=\"ready\"} 1\$" "$d/mq.prom"
	grep -q "^mq_messages{spool=\"$root/var/spool/mail\",state=\"ready\"} 0\$" "$d/mq.prom"
	assert_equal "$(ls "$d")" mq.prom
}

@test "example xargs-pool.sh: every job run, failures retried, exits when idle" {
	seq 1 20 | mq-send -l >/dev/null
	# Job 7 fails the first time it is run.
	cat >"$BATS_TEST_TMPDIR/job" <<JOB
#!/bin/sh
b=\$(cat)
if [ "\$b" = 7 ] && [ ! -e "$BATS_TEST_TMPDIR/failed-once" ]; then
	touch "$BATS_TEST_TMPDIR/failed-once"; exit 1
fi
echo "\$b" >>"$BATS_TEST_TMPDIR/done"
JOB
	chmod +x "$BATS_TEST_TMPDIR/job"
	# The failed one waits out its 30 s before a retry; the pool is idle
	# before that and stops.
	JOB="$BATS_TEST_TMPDIR/job" IDLE=0.5 sh "$ex/xargs-pool.sh"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/done")" 19
	assert_equal "$(count new)" 1
	assert_equal "$(count cur)" 0
}

@test "example xargs-pool.sh: a spool still not made after IDLE: the wait said, one error and exit 4, no loop of errors" {
	export MQ_DIR=$BATS_TEST_TMPDIR/no-spool
	JOB=true IDLE=1 run timeout 20 sh "$ex/xargs-pool.sh"
	assert_equal "$status" 4
	assert_equal "${#lines[@]}" 2
	assert_equal "${lines[0]}" "mq-recv: $MQ_DIR: waiting for the spool to be made"
	assert_output --partial "No such file or directory"
}

@test "example xargs-pool.sh: slow jobs, two pools, a short lease: no message runs twice" {
	# mq-recv with a default lease of 3 s instead of 30 s, the time of
	# this test scaled down: jobs of 0.5 s, four at a time in each pool.
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\ncase " $* " in *" -t "*) ;; *) set -- -t 3 "$@" ;; esac\nexec "%s" "$@"\n' \
	    "$top/bin/mq-recv" >"$BATS_TEST_TMPDIR/bin/mq-recv"
	chmod +x "$BATS_TEST_TMPDIR/bin/mq-recv"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH"
	printf '#!/bin/sh\nb=$(cat)\nsleep 0.5\necho "$b" >>"%s"\n' "$BATS_TEST_TMPDIR/done" \
	    >"$BATS_TEST_TMPDIR/job"
	chmod +x "$BATS_TEST_TMPDIR/job"
	seq 1 64 | mq-send -l >/dev/null
	# Idle for longer than a lease, so that each pool would see another
	# one's expired leases.
	export JOB=$BATS_TEST_TMPDIR/job IDLE=4 LEASE=3 PARALLEL=4
	timeout 60 sh "$ex/xargs-pool.sh" 2>"$BATS_TEST_TMPDIR/err1" &
	p1=$!
	timeout 60 sh "$ex/xargs-pool.sh" 2>"$BATS_TEST_TMPDIR/err2" &
	p2=$!
	st1=0 st2=0
	wait "$p1" || st1=$?
	wait "$p2" || st2=$?
	assert_equal "$(sort -n "$BATS_TEST_TMPDIR/done" | tr '\n' ' ')" "$(seq 1 64 | tr '\n' ' ')"
	assert_equal "$st1 $st2" "0 0"
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err1" "$BATS_TEST_TMPDIR/err2")" ""
}

@test "example worker service: mq-worker@.service's ExecStart with thumbnail-worker.conf works, as installed" {
	# Installed under a prefix of the test's own, so that the paths the
	# unit and the example name are those of the install.
	prefix=$BATS_TEST_TMPDIR/prefix
	make -s -C "$top" install PREFIX="$prefix" >/dev/null
	out=$BATS_TEST_TMPDIR/srv/thumbs
	mkdir -p "$out"
	printf 'img\n' >"$BATS_TEST_TMPDIR/a.jpg"
	printf '%s\n' "$BATS_TEST_TMPDIR/a.jpg" "$BATS_TEST_TMPDIR/missing.jpg" | mq-send -l >/dev/null
	# The command line the unit runs, with the example's settings read
	# as systemd reads an environment file (KEY=rest of the line), its
	# /srv taken under the test's directory.
	exec_start=$(sed -n 's/^ExecStart=//p' "$prefix/lib/systemd/system/mq-worker@.service")
	conf=$prefix/share/doc/mq/examples/thumbnail-worker.conf
	MQ_WORKER_OPTS=$(sed -n 's/^MQ_WORKER_OPTS=//p' "$conf")
	MQ_WORKER_COMMAND=$(sed -n "/^MQ_WORKER_COMMAND=/{s###; s# /srv/# $BATS_TEST_TMPDIR/srv/#; p;}" "$conf")
	cmd=${exec_start//%f/$MQ_DIR}
	cmd=${cmd//\$MQ_WORKER_OPTS/$MQ_WORKER_OPTS}
	cmd=${cmd//\$MQ_WORKER_COMMAND/$MQ_WORKER_COMMAND}
	assert_equal "$cmd" "$prefix/bin/mq-recv -d $MQ_DIR -w -P 4 -t 60 --timeout 600 --backoff 5 -- $prefix/share/doc/mq/examples/thumbnail-job.sh $out"
	# shellcheck disable=SC2086 # split into words as systemd does
	$cmd 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	for _ in $(seq 1 200); do
		[ "$(count dead)" -eq 0 ] || [ "$(count cur)" -gt 0 ] || break
		sleep 0.1
	done
	kill -TERM "$pid"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 0
	# The result is keyed by the message ID; the bad input is dead at once.
	assert_equal "$(cat "$out"/*.thumb)" img
	run mq-dlq ls
	[[ $output == *$'\t1\t'*$'\texit 65: no such image: '"$BATS_TEST_TMPDIR/missing.jpg"$'\t'* ]]
	assert_equal "$(count new)" 0
}

# once-result.sh's worker, in the background (its pid in worker.pid),
# with mv in PATH a wrapper that kills the worker at its first call: before
# the rename ($1 before) or after it (after).
once_worker_killed() {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cat >"$BATS_TEST_TMPDIR/bin/mv" <<EOF
#!/bin/sh
if [ ! -e "$BATS_TEST_TMPDIR/killed" ]; then
	touch "$BATS_TEST_TMPDIR/killed"
	[ "$1" = before ] || /bin/mv "\$@"
	kill -9 "\$(cat "$BATS_TEST_TMPDIR/worker.pid")"
	exit 0
fi
exec /bin/mv "\$@"
EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/mv"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH" mq-recv --once -- sh "$ex/once-result.sh" "$out" &
	echo $! >"$BATS_TEST_TMPDIR/worker.pid"
	st=0
	wait "$(cat "$BATS_TEST_TMPDIR/worker.pid")" || st=$?
	assert_equal "$st" 137
}

@test "example once-result.sh: a worker killed in mid-job, before or after the rename, leaves one result per message" {
	out=$BATS_TEST_TMPDIR/results
	mkdir -p "$out"
	a=$(echo alpha | mq-send)
	echo beta | mq-send -k 'order/7' >/dev/null
	k=k$(printf '%s' 'order/7' | sha256sum | cut -c1-32)
	for when in before after; do
		rm -f "$BATS_TEST_TMPDIR/killed"
		once_worker_killed "$when"
		[ -e "$BATS_TEST_TMPDIR/killed" ]
		# The killed worker's lease orphaned once its job is reaped.
		for ((i = 0; i < 200; i++)); do
			mq-ls -s inflight | grep -q . || break
			sleep 0.05
		done
	done
	# The first message's result renamed into place, then the kill: not
	# recorded, so its job runs again, finds it and writes nothing.
	ino=$(stat -c %i "$out/i$a")
	run -0 timeout 20 mq-recv --once -- sh "$ex/once-result.sh" "$out"
	assert_equal "$(stat -c %i "$out/i$a")" "$ino"
	run -0 ls "$out"
	assert_output "$(printf '%s\n' "$k" "i$a" | sort)"
	assert_equal "$(cat "$out/i$a")" ALPHA
	assert_equal "$(cat "$out/$k")" BETA
	assert_equal "$(count new)" 0
	assert_equal "$(count cur)" 0
	# Sent again with its key: acked, not run.
	echo gamma | mq-send -k 'order/7' >/dev/null
	run -0 timeout 20 mq-recv --once -- sh "$ex/once-result.sh" "$out"
	assert_equal "$(cat "$out/$k")" BETA
}

@test "example thumbnail-job.sh: a redelivered message does its work once" {
	out=$BATS_TEST_TMPDIR/thumbs
	mkdir -p "$out"
	echo one >"$BATS_TEST_TMPDIR/a.jpg"
	MQ_ID=abc sh "$ex/thumbnail-job.sh" "$out" <<<"$BATS_TEST_TMPDIR/a.jpg"
	echo two >"$BATS_TEST_TMPDIR/a.jpg"
	MQ_ID=abc sh "$ex/thumbnail-job.sh" "$out" <<<"$BATS_TEST_TMPDIR/a.jpg"
	assert_equal "$(cat "$out/abc.thumb")" one
}

@test "example redrive-runbook.sh: the summary by reason, then only the matching ones redriven" {
	seq 1 5 | mq-send -l >/dev/null
	for _ in 1 2 3; do mq-ack -x "timed out after 600 s" "$(mq-recv)"; done
	for _ in 1 2; do mq-ack -x "exit 65: bad input" "$(mq-recv)"; done
	run sh "$ex/redrive-runbook.sh"
	assert_success
	assert_line --partial "5 dead letters; by reason:"
	assert_line --regexp '^ *3 timed out after 600 s$'
	assert_line --regexp '^ *2 exit 65: bad input$'
	assert_equal "$(count dead)" 5
	run sh "$ex/redrive-runbook.sh" 'timed out'
	assert_success
	assert_line "redriving 3 matching 'timed out':"
	assert_equal "$(count dead)" 2
	assert_equal "$(count new)" 3
	run mq-dlq ls
	[[ $output != *"timed out"* ]]
}

@test "example shared-spool.sh: members of the group share the spools made under the root" {
	[ "$(id -u)" -eq 0 ] || skip "making a shared root and switching users needs root"
	top=$(mktemp -d /tmp/mq-ex.XXXXXX)
	chmod 755 "$top"
	run sh "$ex/shared-spool.sh" 4242 "$top/mq"
	assert_success
	assert_equal "$(stat -c '%a %g' "$top/mq")" "2770 4242"
	as() { setpriv --reuid="$1" --regid="$1" --groups=4242 env PATH="$(public_bin):$PATH" sh -c 'umask 077; exec "$@"' sh "${@:2}"; }
	echo job | as 4001 mq-send -d "$top/mq/builds" >/dev/null
	r=$(as 4002 mq-recv -d "$top/mq/builds")
	assert_equal "$(as 4002 cat "$r")" job
	as 4002 mq-ack -d "$top/mq/builds" "$r"
	rm -rf "$top"
}

# An outbox of $1 rows, none relayed, in the database $db.
outbox() {
	db=$BATS_TEST_TMPDIR/app.db
	sqlite3 "$db" 'CREATE TABLE outbox (id INTEGER PRIMARY KEY,
	    payload TEXT NOT NULL, relayed INTEGER NOT NULL DEFAULT 0);'
	for i in $(seq 1 "$1"); do
		echo "INSERT INTO outbox (payload) VALUES ('event $i');"
	done | sqlite3 "$db"
}

# The bodies queued: every one exactly once, "event 1" to "event $1".
queued_once() {
	assert_equal "$(count new)" "$1"
	assert_equal "$(find "$MQ_DIR/new" -type f -exec cat {} + | sort)" \
	    "$(seq 1 "$1" | sed 's/^/event /' | sort)"
	assert_equal "$(sqlite3 "$db" 'SELECT count(*) FROM outbox WHERE relayed = 0;')" 0
}

@test "example outbox-relay.sh: killed (SIGKILL) at random points, rerun to the end: every row queued exactly once" {
	command -v sqlite3 >/dev/null || fail "sqlite3 is not installed (sh share/deps.sh test)"
	command -v setsid >/dev/null || fail "setsid is not installed"
	outbox 60
	mq-send -l </dev/null
	mq-conf dedup-window=3600
	for n in 1 2 3 4 5 6; do
		# The relay and what it runs, in a group of their own: all killed.
		setsid sh "$ex/outbox-relay.sh" "$db" 2>/dev/null &
		pid=$!
		sleep "0.$(shuf -i 5-40 -n 1)"
		kill -9 -- "-$pid" 2>/dev/null || true
		wait "$pid" || true
	done
	run -0 --separate-stderr timeout 60 sh "$ex/outbox-relay.sh" "$db"
	assert_equal "$stderr" ""
	queued_once 60
	# A run with nothing left to relay adds nothing.
	run -0 timeout 60 sh "$ex/outbox-relay.sh" "$db"
	queued_once 60
}

@test "example outbox-relay.sh: killed after a send and before its row is marked: the rerun adds nothing for it" {
	command -v sqlite3 >/dev/null || fail "sqlite3 is not installed (sh share/deps.sh test)"
	crash=$BATS_TEST_TMPDIR/crash
	mkdir -p "$crash"
	outbox 3
	mq-send -l </dev/null
	mq-conf dedup-window=3600
	# sqlite3 that kills the relay where it would mark the first row.
	printf '#!/bin/sh\ncase "$*" in *UPDATE*) kill -9 $PPID; exit 1 ;; esac\nexec %s "$@"\n' \
	    "$(command -v sqlite3)" >"$crash/sqlite3"
	chmod +x "$crash/sqlite3"
	PATH="$crash:$PATH" run timeout 60 sh "$ex/outbox-relay.sh" "$db"
	assert_equal "$status" 137
	assert_equal "$(count new)" 1
	# Even once consumed and acked, the key is remembered (dedup-window).
	r=$(mq-recv)
	mq-ack "$r"
	run -0 timeout 60 sh "$ex/outbox-relay.sh" "$db"
	assert_equal "$(count new)" 2
	assert_equal "$(find "$MQ_DIR/new" -type f -exec cat {} + | sort | tr '\n' ' ')" "event 2 event 3 "
	assert_equal "$(sqlite3 "$db" 'SELECT count(*) FROM outbox WHERE relayed = 0;')" 0
}

@test "example outbox-relay.sh: its crontab, as installed, works under cron's environment" {
	command -v sqlite3 >/dev/null || fail "sqlite3 is not installed (sh share/deps.sh test)"
	install_root
	db=$root/srv/app.db
	sqlite3 "$db" 'CREATE TABLE outbox (id INTEGER PRIMARY KEY,
	    payload TEXT NOT NULL, relayed INTEGER NOT NULL DEFAULT 0);
	    INSERT INTO outbox (payload) VALUES ('"'event 1'"'), ('"'event 2'"');'
	mq-send -l -d "$root/var/spool/events" </dev/null
	mq-conf -d "$root/var/spool/events" dedup-window=3600
	# (the comment at its head)
	run_crontabs "$(crontabs "$(sed -n '/^[^#]/q; s/^#//p' "$root/usr/local/share/doc/mq/examples/outbox-relay.sh")")"
	assert_equal "$(mq-ls -d "$root/var/spool/events" -s ready | wc -l)" 2
	assert_equal "$(sqlite3 "$db" 'SELECT count(*) FROM outbox WHERE relayed = 0;')" 0
}

@test "example outbox-relay.sh: warns when the spool's dedup-window is 0" {
	command -v sqlite3 >/dev/null || fail "sqlite3 is not installed (sh share/deps.sh test)"
	outbox 1
	run -0 --separate-stderr timeout 60 sh "$ex/outbox-relay.sh" "$db"
	[[ $stderr == *"dedup-window is 0"* ]]
	assert_equal "$(count new)" 1
}

@test "README: the 3 a.m. runbook, pasted into a shell, lists, shows, cancels and redrives" {
	code=$(sed -n '/^## At 3 a.m.: looking into a queue/,/^## /p' "$top/README.md" |
	    awk '/^```/ { if (inblock) exit; if ($0 == "```sh") { inblock = 1; next } } inblock')
	[[ $code == 'export MQ_DIR=/var/spool/thumbs'* ]]
	code=${code//export MQ_DIR=\/var\/spool\/thumbs/export MQ_DIR=$BATS_TEST_TMPDIR/spool}
	printf 'held\n' | mq-send >/dev/null
	printf 'broken\n' | mq-send >/dev/null
	mq-ack -x 'out of disk' "$(mq-recv -n 2 | tail -n 1)"
	printf 'rm -rf /\nresize a.jpg\n' | mq-send -l >"$BATS_TEST_TMPDIR/ids"
	first=$(head -n 1 "$BATS_TEST_TMPDIR/ids")
	run timeout 30 sh -c "$code"
	assert_success
	assert_line --partial "$first"$'\tready'
	assert_line --partial 'inflight'
	assert_line --partial 'rm -rf /'
	assert_line --partial 'out of disk'
	assert_line --partial '"deaths":[{'
	# The first ready one is gone, the dead letter waits again beside the other.
	run mq-show "$first"
	assert_failure 1
	assert_equal "$(mq-ls -s dead | wc -l)" 0
	assert_equal "$(mq-ls -s ready | wc -l)" 2
}

@test "README: what happened last night, pasted into a shell, tells counters, deaths, failed jobs, one message's life and its output" {
	code=$(sed -n '/^### What happened last night/,/^## /p' "$top/README.md" |
	    awk '/^```/ { if (inblock) exit; if ($0 == "```sh") { inblock = 1; next } } inblock')
	[[ $code == 'export MQ_DIR=/var/spool/thumbs'* ]]
	code=${code//export MQ_DIR=\/var\/spool\/thumbs/export MQ_DIR=$BATS_TEST_TMPDIR/spool}
	# -f follows for ever: the runbook's last line, run bounded below.
	[[ $code == *'mq-log -f --kind dead '* ]]
	code=${code%mq-log -f --kind dead *}
	mq-conf keep-output=1h 2>/dev/null
	ok=$(echo fine | mq-send)
	bad=$(echo broken | mq-send)
	mq-recv -m 1 -w 0 -- sh -c 'read -r b; [ "$b" = fine ] || { echo "no good: $b" >&2; exit 3; }' \
	    >/dev/null 2>&1 || true
	mq-conf paused=yes 2>/dev/null
	mq-conf paused=no 2>/dev/null
	gone=$(echo cancelled | mq-send)
	mq-rm "$gone"
	code=${code//18ec96c3495e4b28/$bad}
	run timeout 30 sh -c "$code"
	assert_success
	assert_line --partial '"sent": 3'
	assert_line --regexp "remove +$gone .*state=ready"
	assert_line --regexp "dead +$bad .*cause=attempts"
	assert_line --regexp "conf +- .*user=$(id -un) set=paused=yes"
	assert_line "$bad"$'\t3\tno good: broken'
	refute_line --partial "$ok"$'\t'
	assert_line --regexp "send +$bad"
	assert_line "no good: broken"
	# -f, bounded: a death after it started is printed.
	timeout 10 mq-log -f --kind dead >"$BATS_TEST_TMPDIR/f" &
	f=$!
	sleep 0.5
	echo later | mq-send >/dev/null
	mq-ack -x later "$(mq-recv)"
	for _ in $(seq 50); do grep -q "reason=later" "$BATS_TEST_TMPDIR/f" && break; sleep 0.1; done
	kill "$f" 2>/dev/null || true
	wait "$f" || true
	run grep -c 'reason=later' "$BATS_TEST_TMPDIR/f"
	assert_output 1
}

@test "README: Several hosts uses mq-relay's options, units and environment file as they are" {
	text=$(sed -n '/^## Several hosts/,/^## Layout/p' "$top/README.md")
	[ -n "$text" ]
	# Every mq-relay command takes only options that mq-relay(1) names.
	synopsis=$(mandoc -Tascii "$top/share/man/man1/mq-relay.1" | sed 's/.\x08//g' |
	    sed -n '/^SYNOPSIS/,/^DESCRIPTION/p')
	n=0
	while read -r o; do
		grep -qE -- "\\[${o}[] ]|\\[-[0-9a-z]*${o#-}[0-9a-z]*\\]" <<<"$synopsis" ||
		    fail "README uses mq-relay $o, which mq-relay(1) does not name"
		n=$((n + 1))
	done < <(grep -oE 'mq-relay (push|pull)( -[a-z0-9]+( [^ #-][^ ]*)?)*' <<<"$text" |
	    grep -oE ' -[a-z0-9]+' | tr -d ' ')
	[ "$n" -ge 3 ]
	# The units it enables exist, and read the environment file it writes.
	for u in mq-relay-push@ mq-relay-pull@ mq-worker@; do
		grep -q "systemctl enable --now $u\\\$i" <<<"$text" || fail "README does not enable $u"
		assert_file_exist "$units/$u.service"
	done
	for u in mq-relay-push@ mq-relay-pull@; do
		grep -qx 'EnvironmentFile=-/etc/mq/relay-%i.env' "$units/$u.service"
	done
	# Its lines that write the file, run under a private /etc: mode 600,
	# and the URIs quoted as systemd reads them.
	export MQ_RELAY_URI='amqp://u:p@h1 amqp://u:p@h2'
	i=var-spool-jobs
	etc=$BATS_TEST_TMPDIR/etc
	while IFS= read -r line; do
		eval "${line//\/etc\//$etc/}"
	done < <(grep -E '^(mkdir -p /etc/mq|printf .MQ_RELAY_URI)' <<<"$text")
	assert_equal "$(stat -c %a "$etc/mq/relay-$i.env")" 600
	assert_equal "$(cat "$etc/mq/relay-$i.env")" 'MQ_RELAY_URI="amqp://u:p@h1 amqp://u:p@h2"'
}
