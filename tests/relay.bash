# Loaded by the mq-relay test files after helper.bash: private RabbitMQ
# nodes on loopback (tests/rabbit), started once per file in setup_file
# and stopped, whatever happened, in teardown_file.
#
#   setup_file()    { relay_node; }        # one node:  $RELAY_DIR1 $RELAY_PORT1
#   setup_file()    { relay_cluster; }     # three:     $RELAY_DIR1..3 $RELAY_PORT1..3
#   teardown_file() { relay_teardown; }
#
# $RELAY_URI is the AMQP URI of node 1 (amqp://guest:guest@127.0.0.1:PORT),
# $RELAY_URIS those of every node started, in order.  RELAY_TLS=CERTDIR
# before relay_node: the node also listens with TLS on $RELAY_PORT1 + 1.
# Without rabbitmq-server the file's tests fail (it is a test package of
# share/deps.sh), they are not skipped.

RABBIT="$BATS_TEST_DIRNAME/rabbit"

# rabbit ARGS: tests/rabbit, bounded (start waits at most 180 s itself, and
# its last check and stop up to a minute more, before it says why).
rabbit() {
	timeout -k 5 300 sh "$RABBIT" "$@"
}

# The nodes this file started, one DIR a line, for relay_teardown.
relay_nodes_file() {
	echo "$BATS_FILE_TMPDIR/rabbit-nodes"
}

relay_need() {
	[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] ||
	    { echo "rabbitmq-server is not installed (sh share/deps.sh)" >&2; return 1; }
	[ -x "$BATS_TEST_DIRNAME/../bin/mq-relay" ] ||
	    { echo "bin/mq-relay is not built (librabbitmq-dev missing? sh share/deps.sh)" >&2; return 1; }
}

# relay_node: starts one node (named rl1_PID: a name of its own on the
# machine, for pgrep) for the file.
relay_node() {
	relay_need || return 1
	local port d="$BATS_FILE_TMPDIR/node1"
	local -a ports
	# Its AMQP (and TLS) port, distribution port and epmd port, distinct:
	# found by one run.
	read -r -a ports <<<"$(rabbit ports 1 2 | tr '\n' ' ')"
	[ ${#ports[@]} -eq 3 ] || return 1
	port=${ports[0]}
	echo "$d" >>"$(relay_nodes_file)"
	RABBIT_TLS=${RELAY_TLS:-} RABBIT_DIST_PORT=${ports[1]} RABBIT_EPMD_PORT=${ports[2]} \
	    rabbit start "$d" "rl1_$$" "$port" || return 1
	export RELAY_DIR1=$d RELAY_PORT1=$port
	export RELAY_URI="amqp://guest:guest@127.0.0.1:$port"
	export RELAY_URIS=$RELAY_URI
}

# relay_cluster: starts three nodes (rc1_PID..rc3_PID) as one cluster, all three
# at once, then waits until node 1 sees the three running.  Every port
# (three AMQP, three distribution, the epmd's) is chosen first, by one
# run, so no two nodes starting at once take the same.
relay_cluster() {
	relay_need || return 1
	local -a ports pids
	local i j d peers st=0
	read -r -a ports <<<"$(rabbit ports 3 4 | tr '\n' ' ')"
	[ ${#ports[@]} -eq 7 ] || return 1
	for i in 1 2 3; do
		echo "$BATS_FILE_TMPDIR/node$i" >>"$(relay_nodes_file)"
	done
	for i in 1 2 3; do
		d="$BATS_FILE_TMPDIR/node$i"
		peers=
		for j in 1 2 3; do
			[ "$j" -eq "$i" ] || peers="$peers $BATS_FILE_TMPDIR/node$j"
		done
		# shellcheck disable=SC2086 # one DIR a word
		RABBIT_DIST_PORT=${ports[i + 2]} RABBIT_EPMD_PORT=${ports[6]} \
		    rabbit start "$d" "rc${i}_$$" "${ports[i - 1]}" $peers &
		pids+=($!)
	done
	for i in 0 1 2; do
		wait "${pids[i]}" || st=1
	done
	[ $st -eq 0 ] || return 1
	RELAY_URIS=
	for i in 1 2 3; do
		export "RELAY_DIR$i=$BATS_FILE_TMPDIR/node$i" "RELAY_PORT$i=${ports[i - 1]}"
		RELAY_URIS="$RELAY_URIS${RELAY_URIS:+ }amqp://guest:guest@127.0.0.1:${ports[i - 1]}"
	done
	export RELAY_URIS RELAY_URI="amqp://guest:guest@127.0.0.1:${ports[0]}"
	relay_running 3 "$RELAY_DIR1" 120 || {
		echo "the cluster did not form: $(rabbit ctl "$RELAY_DIR1" -q cluster_status 2>&1)" >&2
		return 1
	}
}

# relay_running N DIR SECS: within SECS, DIR's node sees N running nodes
# in its cluster.
relay_running() {
	local n=$1 d=$2 secs=$3 end r
	end=$((SECONDS + secs))
	while [ $SECONDS -lt $end ]; do
		r=$(rabbit ctl "$d" -q cluster_status --formatter json 2>/dev/null |
		    sed -n 's/.*"running_nodes":\[\([^]]*\)\].*/\1/p' | tr ',' '\n' | grep -c . || true)
		[ "${r:-0}" -eq "$n" ] && return 0
		sleep 1
	done
	return 1
}

# relay_teardown: stops every node the file started (all at once), even
# after a failed test or a failed setup_file.
relay_teardown() {
	local f d
	local -a pids=()
	f=$(relay_nodes_file)
	[ -f "$f" ] || return 0
	while read -r d; do
		rabbit stop "$d" >/dev/null 2>&1 &
		pids+=($!)
	done <"$f"
	for d in "${pids[@]}"; do
		wait "$d" || true
	done
	rm -f "$f"
}

# relay_certs DIR: a self-signed CA (DIR/cacert.pem, DIR/ca.pem: the same)
# and a server certificate for localhost (SAN DNS:localhost only: a
# client that connects to 127.0.0.1 must find the name wrong) signed by
# it: DIR/cert.pem, DIR/key.pem.  DIR/otherca.pem: another CA, which
# signed nothing (a client given it must refuse the server).
relay_certs() {
	local d=$1
	mkdir -p "$d"
	(
		set -e
		cd "$d"
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mq test CA" \
		    -keyout cakey.pem -out cacert.pem -addext basicConstraints=critical,CA:TRUE \
		    -addext keyUsage=critical,keyCertSign,cRLSign
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mq other CA" \
		    -keyout otherkey.pem -out otherca.pem -addext basicConstraints=critical,CA:TRUE \
		    -addext keyUsage=critical,keyCertSign,cRLSign
		openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
		    -keyout key.pem -out req.pem
		printf '%s\n' "subjectAltName=DNS:localhost" \
		    "basicConstraints=CA:FALSE" "extendedKeyUsage=serverAuth" >ext.cnf
		openssl x509 -req -in req.pem -CA cacert.pem -CAkey cakey.pem \
		    -CAcreateserial -days 2 -extfile ext.cnf -out cert.pem
		cp cacert.pem ca.pem
		chmod 644 key.pem
	) >/dev/null 2>&1
}

# queue_count DIR QUEUE: the ready messages of QUEUE as node DIR sees
# them (the count a passive declare gives: exact, where list_queues's
# figures lag by the statistics interval); nothing when there is no such
# queue.  QUEUE: letters, digits, dot, dash and underscore.
queue_count() {
	rabbit ctl "$1" -q eval "case rabbit_amqqueue:lookup(rabbit_misc:r(<<\"/\">>, queue, <<\"$2\">>)) of
	    {ok, Q} -> {ok, N, _} = rabbit_amqqueue:stat(Q), N; _ -> none end." 2>/dev/null | grep -x '[0-9]*'
}

# listening PORT...: those of the TCP ports that something listens on
# (from /proc/net/tcp and tcp6), one a line.
listening() {
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v want=" $* " '
	    function hex(s,  i, n) {
		n = 0
		for (i = 1; i <= length(s); i++)
			n = n * 16 + index("0123456789ABCDEF", toupper(substr(s, i, 1))) - 1
		return n
	    }
	    $4 == "0A" { n = split($2, a, ":"); p = hex(a[n]); if (index(want, " " p " ")) print p }' | sort -un
}

# stop_bounded PID [SECS]: SIGTERM to PID (a background child of the
# test), then at most SECS (default 30) for it to exit; its exit status
# in $st.  One that did not exit in time is killed (kill -9, then a wait
# that cannot hang) and the test fails.
stop_bounded() {
	local pid=$1 secs=${2:-30}
	st=0
	kill -TERM "$pid" 2>/dev/null || true
	if ! timeout "$secs" tail --pid="$pid" -f /dev/null; then
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		st=137
		echo "PID $pid still ran $secs s after SIGTERM: killed" >&2
		return 1
	fi
	wait "$pid" || st=$?
}

# freeze_claiming PID DIR SECS: within SECS, stops PID (kill -STOP) at a
# moment when spool DIR holds claimed messages (cur/), their number in
# $claimed: a kill then comes with messages in flight, not between two
# batches.  The caller kills PID, or goes on with kill -CONT.
freeze_claiming() {
	local pid=$1 d=$2 end=$((SECONDS + $3))
	claimed=0
	while [ $SECONDS -lt $end ]; do
		if [ -n "$(find "$d/cur" -type f -print -quit 2>/dev/null)" ]; then
			kill -STOP "$pid" || return 1
			claimed=$(find "$d/cur" -type f | wc -l | tr -d ' ')
			[ "$claimed" -gt 0 ] && return 0
			kill -CONT "$pid"
		fi
		sleep 0.02
	done
	echo "spool $d: nothing claimed within $3 s" >&2
	return 1
}

# relay_until SECS CMD...: runs CMD every 0.05 s until it succeeds; fails
# after SECS.
relay_until() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.05
	done
}

# messages DIR: how many messages spool DIR holds, waiting or claimed.
messages() {
	find "$1/new" "$1/cur" -type f 2>/dev/null | wc -l | tr -d ' '
}

# relay_send N DIR: N messages (bodies body-1 .. body-N) into spool DIR
# with mq-send; appends "ID BODY" lines to $BATS_TEST_TMPDIR/sent.
relay_send() {
	local ids="$BATS_TEST_TMPDIR/sent.ids"
	seq -f 'body-%.0f' 1 "$1" | mq-send -l -d "$2" >"$ids" || return 1
	[ "$(wc -l <"$ids")" -eq "$1" ] || return 1
	paste -d ' ' "$ids" <(seq -f 'body-%.0f' 1 "$1") >>"$BATS_TEST_TMPDIR/sent"
}

# contents DIR: "ID BODY" of every message of spool DIR (waiting or
# claimed), sorted; a message twice is there twice.
contents() {
	find "$1/new" "$1/cur" -type f -print0 2>/dev/null |
	    xargs -0 -r awk 'FNR == 1 { n = split(FILENAME, p, "/"); sub(/,.*/, "", p[n]); print p[n], $0 }' |
	    LC_ALL=C sort
}

# relay_compare DIR WHAT: compares spool DIR with what relay_send sent:
# sets lost (IDs sent and not in DIR), dups (copies beyond the first),
# wrong (messages not sent, or with another body), and prints them
# (tap comment, on fd 3) under the title WHAT.
relay_compare() {
	local t="$BATS_TEST_TMPDIR"
	contents "$1" >"$t/got"
	LC_ALL=C sort -u "$t/sent" >"$t/sent.sorted"
	cut -d ' ' -f 1 "$t/sent.sorted" >"$t/sent.id"
	cut -d ' ' -f 1 "$t/got" | LC_ALL=C sort -u >"$t/got.id"
	lost=$(LC_ALL=C comm -23 "$t/sent.id" "$t/got.id" | wc -l | tr -d ' ')
	dups=$(($(wc -l <"$t/got") - $(wc -l <"$t/got.id")))
	wrong=$(LC_ALL=C sort -u "$t/got" | LC_ALL=C comm -13 "$t/sent.sorted" - | wc -l | tr -d ' ')
	echo "# $2: messages $(wc -l <"$t/sent.id" | tr -d ' '), lost $lost, duplicates $dups, wrong $wrong" >&3
}

# mute_peer MODE: a TCP listener on 127.0.0.1 that is no broker, in the
# background (python3), its port in $mute_port, its PID added to $mutes
# (mute_stop ends them); what it saw, one word a line, in
# $BATS_TEST_TMPDIR/mute.log.  MODE:
#   header  accepts, reads the client's protocol header ("header"), then
#           says nothing: the client waits for connection.start
#   login   accepts, answers the header with a connection.start, reads
#           the start-ok ("start-ok"), then says nothing: the client
#           waits for connection.tune, in its login
#   syn     accepts nobody: its backlog is full (one connection of its
#           own queued), so a client's SYN goes unanswered
mute_peer() {
	local log="$BATS_TEST_TMPDIR/mute.log" portf="$BATS_TEST_TMPDIR/mute.port"
	rm -f "$log" "$portf"
	python3 - "$1" "$log" "$portf" <<'PY' 3>&- &
import os, socket, struct, sys, time
mode, log, portf = sys.argv[1:4]
def said(word):
    with open(log, "a") as f:
        f.write(word + "\n")
def recv_all(c, n):
    got = b""
    while len(got) < n:
        b = c.recv(n - len(got))
        if not b:
            raise EOFError
        got += b
    return got
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(0)
held = []
if mode == "syn":
    filler = socket.create_connection(s.getsockname())
    held.append(filler)
with open(portf + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(portf + ".tmp", portf)
while mode == "syn":
    time.sleep(3600)
# connection.start: version 0-9, no server properties, PLAIN, en_US
args = b"\x00\x09" + struct.pack(">I", 0) + struct.pack(">I", 5) + b"PLAIN" + \
    struct.pack(">I", 5) + b"en_US"
payload = struct.pack(">HH", 10, 10) + args
start = struct.pack(">BHI", 1, 0, len(payload)) + payload + b"\xce"
while True:
    c, _ = s.accept()
    held.append(c)
    try:
        recv_all(c, 8)
        if mode == "header":
            said("header")
            continue
        c.sendall(start)
        head = recv_all(c, 7)
        recv_all(c, struct.unpack(">I", head[3:7])[0] + 1)
        said("start-ok")
    except (EOFError, OSError):
        pass
PY
	mutes="${mutes:-} $!"
	relay_until 30 test -s "$portf" || return 1
	# shellcheck disable=SC2034 # read by the tests that start a peer
	mute_port=$(cat "$portf")
}

# mute_stop: ends the peers mute_peer started.
mute_stop() {
	local p
	for p in ${mutes:-}; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	mutes=
}

# syn_sent PORT: a connection to 127.0.0.1:PORT waits for its SYN's answer
# (state SYN_SENT in /proc/net/tcp).
syn_sent() {
	awk -v port="$(printf '%04X' "$1")" '$3 == "0100007F:" port && $4 == "02" { f = 1 } END { exit !f }' /proc/net/tcp
}
