#!/bin/sh
# make bench: mq against the system-call floor and python3-dirq, on tmpfs
# and on the disk under the working directory.  Every ratio compares
# medians measured in the same run, on the same file system.
#
# Environment: BENCH_N (batch size, 20000), BENCH_RUNS (5), BENCH_DEPTH
# (1000000), BENCH_FS (file systems to use, "/dev/shm $PWD/bench/tmp"),
# BENCH_ONLY (some of: rates startup workers depth delayed worker memory
# expired maxdepth overshoot group prio ls show history holders once top
# relay),
# BENCH_TOP_FRAMES (frames of each mq-top run, 10), BENCH_GROUP_N (messages parked
# behind a blocked group, 100000), BENCH_JOBS (jobs per worker-mode run, 2000),
# BENCH_BASE (the bin/ of another build, for maxdepth's row without a
# limit), BENCH_RELAY_N (messages per relay run, 10000), BENCH_RELAY_SIZE
# (their size in bytes, 100), BENCH_RELAY_BASE (another mq-relay binary,
# for a relay push row of its own in the same runs), BENCH_HISTORY_BASE (a
# git revision, or the bin/ of a build, without counters and log: the
# history rows' baseline; by default the parent of the commit that added
# src/core/count.c), BENCH_LOG_N (records of mq-log's log, 1000000),
# BENCH_HOLDER_BASE (the same for the holders rows: a build without lease
# holders; by default the parent of the commit that added
# src/core/holder.c).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
PATH="$top/bin:$here:$PATH"
export PATH
for t in floor spawn true-c; do
	[ -x "$here/$t" ] || { echo "bench.sh: bench/$t is missing: run make bench" >&2; exit 2; }
done
N=${BENCH_N:-20000}
R=${BENCH_RUNS:-5}
DEPTH=${BENCH_DEPTH:-1000000}
GROUP_N=${BENCH_GROUP_N:-100000}
LOG_N=${BENCH_LOG_N:-1000000}
case $LOG_N in
'' | *[!0-9]* | 0) echo "bench.sh: BENCH_LOG_N: a number of records, 1 or more" >&2; exit 2 ;;
esac
PY=/usr/bin/python3
[ -x "$PY" ] && "$PY" -c 'import dirq' 2>/dev/null || PY=
mkdir -p "$here/tmp"
FSLIST=${BENCH_FS:-"/dev/shm $here/tmp"}
RELAY_N=${BENCH_RELAY_N:-10000}
case $RELAY_N in
'' | *[!0-9]* | 0) echo "bench.sh: BENCH_RELAY_N: 1 to 65534" >&2; exit 2 ;;
esac
[ "$RELAY_N" -lt 65535 ] || { echo "bench.sh: BENCH_RELAY_N: 1 to 65534 (mq-relay pull -n)" >&2; exit 2; }
RELAY_SIZE=${BENCH_RELAY_SIZE:-100}
RELAY_BASE=${BENCH_RELAY_BASE:-}
[ -z "$RELAY_BASE" ] || [ -x "$RELAY_BASE" ] || { echo "bench.sh: BENCH_RELAY_BASE: $RELAY_BASE is not executable" >&2; exit 2; }
results=$(mktemp)
notes=$(mktemp)
# The RabbitMQ node of the relay rows (its directory), stopped on the way
# out whatever happens.
node=
relay_stop() {
	if [ -n "$node" ]; then
		sh "$top/tests/rabbit" stop "$node/n" >/dev/null 2>&1 || true
		rm -rf "$node"
		node=
	fi
}
# The workers holding leases in the holders rows, and their jobs' pids,
# stopped on the way out whatever happens (cleanup).
HOLD_PIDS='' HOLD_JOBS=''
# The holders part's directory, removed on the way out too: its spools of
# a million links take a third of tmpfs's inodes.
HOLD_W=''
# The state of a process (R, S, Z...), or nothing when there is none.
pstate() { sed -n 's/.*) \([A-Z]\).*/\1/p' "/proc/$1/stat" 2>/dev/null || true; }
holders_stop() {
	[ -n "$HOLD_PIDS" ] || return 0
	# The jobs are known first: a worker killed would leave them to init.
	for _p in $HOLD_PIDS; do
		HOLD_JOBS="$HOLD_JOBS $(pgrep -P "$_p" | tr '\n' ' ' || true)"
	done
	# A second stop signal: the worker signals its jobs, releases their
	# messages at once and exits.  Two signals too close may be taken
	# for one.
	# shellcheck disable=SC2086 # one word per pid
	kill -TERM $HOLD_PIDS 2>/dev/null || true
	sleep 0.3
	# shellcheck disable=SC2086
	kill -TERM $HOLD_PIDS 2>/dev/null || true
	_i=0
	while [ "$_i" -lt 100 ]; do
		_left=
		for _p in $HOLD_PIDS; do
			case $(pstate "$_p") in '' | Z) ;; *) _left=1 ;; esac
		done
		[ -n "$_left" ] || break
		sleep 0.1
		_i=$((_i + 1))
	done
	# Ended by themselves, they took their jobs along: pids of jobs
	# long gone are not signalled, which another process may have now.
	if [ -n "$_left" ]; then
		for _p in $HOLD_PIDS $HOLD_JOBS; do
			case $(pstate "$_p") in '' | Z) ;; *) kill -KILL "$_p" 2>/dev/null || true ;; esac
		done
	fi
	for _p in $HOLD_PIDS; do wait "$_p" 2>/dev/null || true; done
	HOLD_PIDS='' HOLD_JOBS=''
}
cleanup() {
	relay_stop
	holders_stop
	[ -z "$HOLD_W" ] || rm -rf "$HOLD_W"
	rm -f "$results" "$notes"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
# What a process start costs here, which the rows that start processes
# depend on: stated above the table, as the machine's own figure.
exec_us=$(spawn 200 true-c) || { echo "bench.sh: spawn of true-c failed" >&2; exit 2; }
exec_us=${exec_us%% *}

now() { date +%s%N; }
# median of the numbers on standard input
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# rate: messages, start ns, end ns
rate() { awk -v n="$1" -v s="$2" -v e="$3" 'BEGIN { printf "%.0f\n", n / ((e - s) / 1e9) }'; }
# row: fs, workload, mq value, unit, what it is compared with, its value,
# target; the ratio is mq value / compared value, unless RATIO is set (the
# median of ratios taken run by run, which drifts of the machine's speed
# between runs do not skew).
row() {
	_ratio=${RATIO:-$(awk -v a="$3" -v b="$6" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "%s", a }')}
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$_ratio" >>"$results"
	RATIO=
}
# median of the run-by-run ratios of two files of one number per run
ratios() { paste "$1" "$2" | awk '{ printf "%.4f\n", $1 / $2 }' | median; }
# paired: fs, workload, file of mq's figures (one a run), unit, what it is
# compared with, file of its figures, target: a row of the two medians and
# the median of the run-by-run ratios.
paired() {
	RATIO=$(ratios "$3" "$6")
	row "$1" "$2" "$(median <"$3")" "$4" "$5" "$(median <"$6")" "$7"
}
say() { printf '%s\n' "$*" >&2; }
# note: a line said now and printed again under the table.
note() { say "$*"; printf '%s\n' "$*" >>"$notes"; }

fsname() { case $1 in /dev/shm*) echo tmpfs ;; *) echo disk ;; esac; }

claim_all() { # spool, n per claim
	MQ_DIR=$1 sh -c "while mq-recv -n $2 -t 600 | mq-ack; do :; done"
}

bench_rates() { # fs
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	seq 1 "$N" >"$w/lines"
	echo 1 >"$w/one"
	for r in $(seq 1 "$R"); do
		say "$name: rates, run $r of $R"
		d=$(mktemp -d "$w/run.XXXXXX")
		# Each pair runs back to back, each step with nothing of the
		# one before it still in flight.
		# Which of the two goes first alternates: on a disk whose
		# creates wait for reads, the second one would otherwise
		# always find what the first one warmed.
		floor_nosync() { sync; floor send "$N" nosync "$d/f1" >>"$w/floor-send"; }
		mq_nosync() {
			sync; MQ_DIR="$d/a" spawn -i "$w/lines" -o /dev/null 1 mq-send -l -S |
			    awk -v n="$N" '{ printf "%.0f\n", n / ($1 / 1e6) }' >>"$w/mq-send"
		}
		if [ $((r % 2)) -eq 1 ]; then floor_nosync; mq_nosync; else mq_nosync; floor_nosync; fi
		sync; floor claim "$N" "$d/f1" >>"$w/floor-claim"
		sync; s=$(now); claim_all "$d/a" 1000; e=$(now)
		rate "$N" "$s" "$e" >>"$w/mq-claim1000"
		sync; floor send "$N" fsync "$d/f2" >>"$w/floor-fsync"
		sync; floor send "$N" syncfs "$d/f3" >>"$w/floor-syncfs"
		sync; MQ_DIR="$d/b" spawn -i "$w/lines" -o /dev/null 1 mq-send -l |
		    awk -v n="$N" '{ printf "%.0f\n", n / ($1 / 1e6) }' >>"$w/mq-durable"
		sync; s=$(now); claim_all "$d/b" 100; e=$(now)
		rate "$N" "$s" "$e" >>"$w/mq-claim100"
		MQ_DIR="$d/c" mq-send -l </dev/null
		sync; MQ_DIR="$d/c" spawn -i "$w/one" -o /dev/null 50 mq-send |
		    awk '{ printf "%.0f\n", 1e6 / $1 }' >>"$w/mq-single"
		if [ -n "$PY" ]; then
			sync; "$PY" "$here/dirq-bench.py" add "$N" "$d/dq" >>"$w/dirq-add"
			sync; "$PY" "$here/dirq-bench.py" get "$d/dq" >>"$w/dirq-get"
		fi
		rm -rf "$d"
	done
	paste "$w/floor-fsync" "$w/floor-syncfs" |
	    awk '{ print ($1 > $2 ? $1 : $2) }' >"$w/floor-durable"
	paired "$name" "send, no sync (mq-send -l -S)" "$w/mq-send" msg/s \
	    "floor, no sync" "$w/floor-send" ">= 0.6"
	paired "$name" "send, durable (mq-send -l)" "$w/mq-durable" msg/s \
	    "best durable floor (fsync each: $(median <"$w/floor-fsync"), syncfs: $(median <"$w/floor-syncfs"))" \
	    "$w/floor-durable" ">= 0.8"
	paired "$name" "send, durable (mq-send -l)" "$w/mq-durable" msg/s \
	    "one mq-send per message, durable" "$w/mq-single" ">= 5"
	paired "$name" "claim+ack (mq-recv -n 1000 | mq-ack)" "$w/mq-claim1000" msg/s \
	    "floor, rename+unlink" "$w/floor-claim" ">= 0.6"
	paired "$name" "claim+ack (mq-recv -n 100 | mq-ack)" "$w/mq-claim100" msg/s \
	    "floor, rename+unlink" "$w/floor-claim" "-"
	if [ -n "$PY" ]; then
		paired "$name" "claim+ack (mq-recv -n 1000 | mq-ack)" "$w/mq-claim1000" msg/s \
		    "python3-dirq lock+get+remove" "$w/dirq-get" ">= 1"
		paired "$name" "send, no sync (mq-send -l -S)" "$w/mq-send" msg/s \
		    "python3-dirq add" "$w/dirq-add" "-"
	fi
	rm -rf "$w"
}

bench_startup() { # fs
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	k=200
	MQ_DIR="$w/q" mq-send -l </dev/null
	for r in $(seq 1 "$R"); do
		say "$name: start-up, run $r of $R"
		# Each run is paired with an exec of the trivial program just
		# before it (spawn -r): the machine's speed changes by more
		# than the difference being measured within a few seconds.
		MQ_DIR="$w/q" spawn -r true-c "$k" mq-recv >>"$w/recv"
		seq 1 "$k" | MQ_DIR="$w/q" mq-send -l -S >/dev/null
		MQ_DIR="$w/q" mq-recv -n "$k" -t 600 >"$w/receipts"
		MQ_DIR="$w/q" spawn -r true-c -a "$w/receipts" "$k" mq-ack >>"$w/ack"
	done
	for t in recv ack; do
		cut -d' ' -f1 "$w/$t" | median >"$w/$t.us"
		cut -d' ' -f3 "$w/$t" | median >"$w/$t.ref"
		cut -d' ' -f4 "$w/$t" | median >"$w/$t.ratio"
	done
	RATIO=$(cat "$w/recv.ratio")
	row "$name" "start-up: mq-recv, empty spool" "$(cat "$w/recv.us")" us \
	    "exec of a trivial C program (paired runs)" "$(cat "$w/recv.ref")" "<= 1.2"
	RATIO=$(cat "$w/ack.ratio")
	row "$name" "start-up: mq-ack of one receipt" "$(cat "$w/ack.us")" us \
	    "exec of a trivial C program (paired runs)" "$(cat "$w/ack.ref")" "<= 1.2"
	rm -rf "$w"
}

bench_depth() { # fs
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	k=50
	say "$name: depth: filling spools of 1000 and $DEPTH messages"
	seq 1 1000 | MQ_DIR="$w/small" mq-send -l -S >/dev/null
	seq 1 "$DEPTH" | MQ_DIR="$w/deep" mq-send -l -S >/dev/null
	for r in $(seq 1 "$R"); do
		say "$name: depth, run $r of $R"
		MQ_DIR="$w/small" spawn -o /dev/null "$k" mq-recv -t 3600 >>"$w/small.t"
		MQ_DIR="$w/deep" spawn -o /dev/null "$k" mq-recv -t 3600 >>"$w/deep.t"
	done
	# Expired leases at depth: claim k with a short lease, let them expire.
	MQ_DIR="$w/deep" mq-recv -n "$k" -t 0.2 >/dev/null
	sleep 1
	MQ_DIR="$w/deep" spawn -o /dev/null "$k" mq-recv -t 3600 >"$w/expired.t"
	# A count of the ready messages has to read every leaf.
	s=$(now); c=$(find "$w/deep/new" -type f | wc -l); e=$(now)
	small=$(cut -d' ' -f1 "$w/small.t" | median)
	row "$name" "count $c ready (find new -type f | wc -l)" "$(((e - s) / 1000))" us \
	    "claim one, 1000 ready" "$small" "-"
	# mq-stat reads every leaf too, and with -b stats each message for
	# its size; each run paired with a find just before it.
	for r in $(seq 1 "$R"); do
		spawn -o /dev/null 1 find "$w/deep/new" -type f >>"$w/find.t"
		MQ_DIR="$w/deep" spawn -o /dev/null 1 mq-stat >>"$w/stat.t"
		MQ_DIR="$w/deep" spawn -o /dev/null 1 mq-stat -b >>"$w/statb.t"
	done
	for t in find stat statb; do cut -d' ' -f1 "$w/$t.t" >"$w/$t.us"; done
	paired "$name" "mq-stat, $c messages" "$w/stat.us" us \
	    "find new -type f" "$w/find.us" "<= 1.3"
	paired "$name" "mq-stat -b (bytes: a stat a message), $c messages" "$w/statb.us" us \
	    "find new -type f" "$w/find.us" "-"
	row "$name" "peak RSS of that mq-stat -b" "$(cut -d' ' -f2 "$w/statb.t" | sort -n | tail -n 1)" KiB \
	    "16 MiB" 16384 "<= 1"
	row "$name" "claim one, $DEPTH ready (mq-recv)" "$(cut -d' ' -f1 "$w/deep.t" | median)" us \
	    "claim one, 1000 ready" "$small" "<= 2"
	row "$name" "peak RSS of that claim" "$(cut -d' ' -f2 "$w/deep.t" | sort -n | tail -n 1)" KiB \
	    "16 MiB" 16384 "<= 1"
	row "$name" "reclaim one expired lease, $DEPTH ready" "$(cut -d' ' -f1 "$w/expired.t" | median)" us \
	    "claim one, 1000 ready" "$small" "-"
	rm -rf "$w"
}

bench_overshoot() { # fs: 8 senders at once into max-depth=100
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	say "$name: overshoot: 8 x mq-send -l -w of 200 into max-depth=100"
	MQ_DIR="$w/q" mq-conf max-depth=100
	: >"$w/sampling"
	(
		max=0
		while [ -e "$w/sampling" ]; do
			n=$(find "$w/q/new" -type f | wc -l)
			[ "$n" -le "$max" ] || max=$n
			echo "$max" >"$w/max"
		done
	) &
	sampler=$!
	pids=
	for i in 1 2 3 4 5 6 7 8; do
		seq "${i}001" "${i}200" | MQ_DIR="$w/q" timeout 300 mq-send -l -w >/dev/null &
		pids="$pids $!"
	done
	MQ_DIR="$w/q" timeout 300 mq-recv -n 1600 -w 30 -- sh -c 'sleep 0.005; cat >/dev/null'
	for p in $pids; do wait "$p"; done
	rm "$w/sampling"
	wait "$sampler"
	left=$(find "$w/q/new" "$w/q/cur" "$w/q/dead" -type f | wc -l)
	row "$name" "most waiting, 8 senders at once, max-depth 100" "$(cat "$w/max")" msgs \
	    "the bound: 100 + 7 x max(1, 100/8)" 184 "<= 1"
	row "$name" "of the 1600 sent, left unprocessed or dead" "$left" msgs "(none)" 0 "-"
	rm -rf "$w"
}

bench_delayed() { # fs: delayed messages ahead of a ready one
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	k=50
	say "$name: $DEPTH delayed messages"
	seq 1 "$DEPTH" | MQ_DIR="$w/q" mq-send -l -S -D 3600 >/dev/null
	seq 1 1000 | MQ_DIR="$w/s" mq-send -l -S >/dev/null
	for r in $(seq 1 "$R"); do
		seq 1 "$k" | MQ_DIR="$w/q" mq-send -l -S >/dev/null
		MQ_DIR="$w/q" spawn -o /dev/null "$k" mq-recv -t 3600 | cut -d' ' -f1 >>"$w/d.t"
		MQ_DIR="$w/s" spawn -o /dev/null "$k" mq-recv -t 3600 | cut -d' ' -f1 >>"$w/s.t"
	done
	row "$name" "claim one behind $DEPTH delayed" "$(median <"$w/d.t")" us \
	    "claim one, 1000 ready" "$(median <"$w/s.t")" "-"
	# Eight receivers waiting: CPU while idle, and for one wake.
	pids=
	for i in 1 2 3 4 5 6 7 8; do
		MQ_DIR="$w/q" mq-recv -w 60 >"$w/waiter.$i" &
		pids="$pids $!"
	done
	sleep 1
	ticks() { for p in $pids; do awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0; done |
	    awk '{ s += $1 } END { print s * 10 }'; }
	t0=$(ticks); sleep 3; t1=$(ticks)
	echo wake | MQ_DIR="$w/q" mq-send >/dev/null
	sleep 1; t2=$(ticks)
	# shellcheck disable=SC2086 # one word per pid
	kill $pids 2>/dev/null || true
	wait 2>/dev/null || true
	RATIO=$((t1 - t0))
	row "$name" "8 waiting mq-recv -w, CPU over 3 s idle" "$((t1 - t0))" ms \
	    "(none)" 0 "= 0"
	RATIO=$((t2 - t1))
	row "$name" "8 waiters woken by 1 message ($DEPTH delayed)" "$((t2 - t1))" ms \
	    "(all 8 together)" 0 "-"
	rm -rf "$w"
}

bench_expired() { # fs: claims when most of a deep queue has expired
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	k=50
	dead=$((DEPTH * 9 / 10))
	say "$name: expired: two spools of $DEPTH, $dead of one past their ttl"
	# The same names in both (long forms for 90%), only the ttl differs.
	seq 1 "$dead" | MQ_DIR="$w/exp" mq-send -l -S --ttl 1 >/dev/null
	seq 1 $((DEPTH - dead)) | MQ_DIR="$w/exp" mq-send -l -S >/dev/null
	seq 1 "$dead" | MQ_DIR="$w/live" mq-send -l -S --ttl 36000 >/dev/null
	seq 1 $((DEPTH - dead)) | MQ_DIR="$w/live" mq-send -l -S >/dev/null
	sleep 1.2
	# The first claim meets the run of expired messages and buries it.
	sync; MQ_DIR="$w/exp" spawn -o /dev/null 1 mq-recv -t 3600 >"$w/first.t"
	buried=$(find "$w/exp/dead" -type f | wc -l)
	for r in $(seq 1 "$R"); do
		say "$name: expired, run $r of $R"
		MQ_DIR="$w/exp" spawn -o /dev/null "$k" mq-recv -t 3600 >>"$w/exp.t"
		MQ_DIR="$w/live" spawn -o /dev/null "$k" mq-recv -t 3600 >>"$w/live.t"
	done
	live=$(cut -d' ' -f1 "$w/live.t" | median)
	once=$(cut -d' ' -f1 "$w/first.t")
	row "$name" "first claim, burying $buried expired of $DEPTH" "$once" us \
	    "claim one, $DEPTH ready, none expired" "$live" "-"
	per=$(awk -v f="$once" -v n="$buried" 'BEGIN { if (n > 0) printf "%.2f", f / n; else print 0 }')
	RATIO=$per
	row "$name" "that first claim, per message buried" "$per" us \
	    "(none)" 0 "-"
	row "$name" "claim one, after $buried expired were buried" "$(cut -d' ' -f1 "$w/exp.t" | median)" us \
	    "claim one, $DEPTH ready, none expired" "$live" "<= 1.3"
	row "$name" "peak RSS of the first claim" "$(cut -d' ' -f2 "$w/first.t")" KiB \
	    "16 MiB" 16384 "<= 1"
	rm -rf "$w"
}

bench_workers() { # fs: one worker against two
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	worker() { # spool, log prefix: claim 100, ack them, keep the receipts
		i=0
		while MQ_DIR=$1 mq-recv -n 100 -t 600 >"$2.$i"; do
			MQ_DIR=$1 mq-ack <"$2.$i" 2>>"$w/errors" || true
			i=$((i + 1))
		done
	}
	for r in $(seq 1 "$R"); do
		say "$name: workers, run $r of $R"
		for nw in 1 2; do
			rm -rf "$w/q" "$w"/log.$nw.*
			seq 1 "$N" | MQ_DIR="$w/q" mq-send -l -S >/dev/null
			s=$(now)
			for i in $(seq 1 "$nw"); do worker "$w/q" "$w/log.$nw.$i" & done
			wait
			e=$(now)
			rate "$N" "$s" "$e" >>"$w/rate.$nw"
		done
		# The machine's own ceiling: two workers that share nothing.
		rm -rf "$w/q1" "$w/q2"
		seq 1 $((N / 2)) | MQ_DIR="$w/q1" mq-send -l -S >/dev/null
		seq 1 $((N / 2)) | MQ_DIR="$w/q2" mq-send -l -S >/dev/null
		s=$(now)
		worker "$w/q1" "$w/sep.1" & worker "$w/q2" "$w/sep.2" &
		wait
		e=$(now)
		rate "$N" "$s" "$e" >>"$w/rate.sep"
	done
	lost=$(grep -c 'lease lost' "$w/errors" 2>/dev/null || true)
	dups=$(cat "$w"/log.2.* | sed 's,.*/,,; s/,.*//' | sort | uniq -d | wc -l)
	all=$(cat "$w"/log.2.* | wc -l)
	[ "$all" -eq "$N" ] || say "$name: 2 workers claimed $all of $N"
	paired "$name" "claim+ack, 2 workers (lease lost: ${lost:-0}, duplicates: $dups)" \
	    "$w/rate.2" msg/s "1 worker" "$w/rate.1" ">= 1.6"
	paired "$name" "claim+ack, 2 workers on 2 separate spools (control)" \
	    "$w/rate.sep" msg/s "1 worker" "$w/rate.1" "-"
	rm -rf "$w"
}

bench_worker() { # fs: worker mode, short jobs, -P 1 2 4 8
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	k=${BENCH_JOBS:-2000}
	for r in $(seq 1 "$R"); do
		say "$name: worker mode, run $r of $R"
		# The floor: starting the job's process, one after another.
		spawn "$k" true | awk '{ printf "%.0f\n", 1e6 / $1 }' >>"$w/floor"
		for p in 1 2 4 8; do
			rm -rf "$w/q"
			seq 1 "$k" | MQ_DIR="$w/q" mq-send -l -S >/dev/null
			s=$(now); MQ_DIR="$w/q" mq-recv -P "$p" -- true; e=$(now)
			rate "$k" "$s" "$e" >>"$w/P$p"
		done
		rm -rf "$w/q"
		seq 1 40 | MQ_DIR="$w/q" mq-send -l -S >/dev/null
		s=$(now); MQ_DIR="$w/q" mq-recv -P 1 -- sleep 0.1; e=$(now)
		rate 40 "$s" "$e" >>"$w/sleep1"
		for p in 4 8; do
			seq 1 40 | MQ_DIR="$w/q" mq-send -l -S >/dev/null
			s=$(now); MQ_DIR="$w/q" mq-recv -P "$p" -- sleep 0.1; e=$(now)
			rate 40 "$s" "$e" >>"$w/sleep$p"
		done
	done
	# Near the floor at -P 1; at -P 2 on two cores, the worker's own work
	# goes on while a job runs.
	for p in 1 2 4 8; do
		case $p in 1) goal=">= 0.85" ;; 2) goal=">= 0.95" ;; *) goal=- ;; esac
		paired "$name" "worker mode -P $p, $k jobs of true (mq-recv -- true)" \
		    "$w/P$p" jobs/s "posix_spawn of true, one after another" \
		    "$w/floor" "$goal"
	done
	for p in 2 4 8; do
		paired "$name" "worker mode -P $p, $k jobs of true" "$w/P$p" jobs/s \
		    "worker mode -P 1" "$w/P1" "-"
	done
	paired "$name" "worker mode -P 4, 40 jobs of sleep 0.1" "$w/sleep4" jobs/s \
	    "worker mode -P 1" "$w/sleep1" ">= 3"
	paired "$name" "worker mode -P 8, 40 jobs of sleep 0.1" "$w/sleep8" jobs/s \
	    "worker mode -P 1" "$w/sleep1" ">= 6"
	rm -rf "$w"
}

# A bounded spool (max-depth): a batch send counts what waits, up to
# max-depth, before it adds anything.  Each timed send is followed by a
# claim and ack of the 1000 oldest, so a spool holds the same number
# every time; a run times three pairs of sends, the two of a pair back to
# back and in turns first, as a pair differs by milliseconds.  The row at $DEPTH without a limit compares with the
# mq-send of another build, BENCH_BASE (its bin/ directory; the row is
# left out without it), to show that a spool without max-depth pays
# nothing for it.
bench_maxdepth() { # fs
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	full=90000 max=100000
	seq 1 1000 >"$w/lines"
	# batch SPOOL COMMAND...: the time of one send of the 1000 lines.
	batch() {
		_q=$1
		shift
		sync
		MQ_DIR=$_q spawn -i "$w/lines" -o /dev/null 1 "$@" | cut -d' ' -f1
		MQ_DIR=$_q mq-recv -n 1000 -t 600 | MQ_DIR=$_q mq-ack
	}
	# pairs NAME SPOOL CMD NAME SPOOL CMD: three timed pairs of sends,
	# each way round, durable and not, into NAME.durable, NAME.nosync.
	pairs() {
		for _i in 1 2 3; do
			for _s in durable nosync; do
				_f=-l
				[ "$_s" = durable ] || _f=-lS
				if [ $(((r + _i) % 2)) -eq 1 ]; then
					batch "$2" "$3" "$_f" >>"$w/$1.$_s"
					batch "$5" "$6" "$_f" >>"$w/$4.$_s"
				else
					batch "$5" "$6" "$_f" >>"$w/$4.$_s"
					batch "$2" "$3" "$_f" >>"$w/$1.$_s"
				fi
			done
		done
	}
	say "$name: maxdepth: two spools of $full messages"
	seq 1 "$full" | MQ_DIR="$w/lim" mq-send -l -S >/dev/null
	seq 1 "$full" | MQ_DIR="$w/free" mq-send -l -S >/dev/null
	MQ_DIR="$w/lim" mq-conf max-depth="$max"
	# The first count after max-depth is set lists every leaf and makes
	# the depth cache (tmp/.depth); a producer's sends after it list only
	# the leaves that changed.  One send each, untimed, before the pairs.
	echo warm | MQ_DIR="$w/lim" mq-send >/dev/null
	echo warm | MQ_DIR="$w/free" mq-send >/dev/null
	for r in $(seq 1 "$R"); do
		say "$name: maxdepth, run $r of $R"
		pairs lim "$w/lim" mq-send free "$w/free" mq-send
	done
	paired "$name" "send 1000 (mq-send -l), $full queued, max-depth $max" \
	    "$w/lim.durable" us "the same, no max-depth" \
	    "$w/free.durable" "<= 1.3"
	paired "$name" "send 1000 (mq-send -l -S), $full queued, max-depth $max" \
	    "$w/lim.nosync" us "the same, no max-depth" \
	    "$w/free.nosync" "<= 1.3"
	rm -rf "$w/lim" "$w/free"
	if [ -z "${BENCH_BASE:-}" ]; then
		say "$name: maxdepth: no BENCH_BASE, no row for $DEPTH queued"
		rm -rf "$w"
		return
	fi
	say "$name: maxdepth: a spool of $DEPTH messages"
	seq 1 "$DEPTH" | MQ_DIR="$w/deep" mq-send -l -S >/dev/null
	for r in $(seq 1 "$R"); do
		say "$name: maxdepth at $DEPTH, run $r of $R"
		pairs this "$w/deep" mq-send base "$w/deep" "$BENCH_BASE/mq-send"
	done
	paired "$name" "send 1000 (mq-send -l), $DEPTH queued, no max-depth" \
	    "$w/this.durable" us "mq-send of $BENCH_BASE" \
	    "$w/base.durable" "<= 1.1"
	paired "$name" "send 1000 (mq-send -l -S), $DEPTH queued, no max-depth" \
	    "$w/this.nosync" us "mq-send of $BENCH_BASE" \
	    "$w/base.nosync" "<= 1.1"
	rm -rf "$w"
}

bench_group() { # fs: a claim with messages parked behind a blocked group
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	k=50 n=$GROUP_N
	say "$name: group: $n messages behind one blocked group"
	# The group's head in flight, the rest parked behind it.
	echo head | MQ_DIR="$w/g" mq-send -g A >/dev/null
	MQ_DIR="$w/g" mq-recv -t 3600 >/dev/null
	seq 1 "$n" | MQ_DIR="$w/g" mq-send -l -S -g A >/dev/null
	# As many messages, without a group, in the plain spool.
	seq 1 "$n" | MQ_DIR="$w/p" mq-send -l -S >/dev/null
	for r in $(seq 1 "$R"); do
		say "$name: group, run $r of $R"
		seq 1 "$k" | MQ_DIR="$w/g" mq-send -l -S >/dev/null
		MQ_DIR="$w/g" spawn -o /dev/null "$k" mq-recv -t 3600 | cut -d' ' -f1 >>"$w/g.t"
		MQ_DIR="$w/p" spawn -o /dev/null "$k" mq-recv -t 3600 | cut -d' ' -f1 >>"$w/p.t"
	done
	row "$name" "claim one, $n parked behind a blocked group" "$(median <"$w/g.t")" us \
	    "claim one, $n ready, no group" "$(median <"$w/p.t")" "<= 2"
	rm -rf "$w"
}

bench_prio() { # fs: a claim at depth with the messages over 10 priorities
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	k=50
	say "$name: priorities: two spools of $DEPTH, one over 10 priorities"
	seq 1 "$DEPTH" | MQ_DIR="$w/plain" mq-send -l -S >/dev/null
	for p in 0 1 2 3 4 5 6 7 8 9; do
		seq 1 $((DEPTH / 10)) | MQ_DIR="$w/prio" mq-send -l -S -p "$p" >/dev/null
	done
	for r in $(seq 1 "$R"); do
		say "$name: priorities, run $r of $R"
		MQ_DIR="$w/prio" spawn -o /dev/null "$k" mq-recv -t 3600 | cut -d' ' -f1 >>"$w/prio.t"
		MQ_DIR="$w/plain" spawn -o /dev/null "$k" mq-recv -t 3600 | cut -d' ' -f1 >>"$w/plain.t"
	done
	# The most a priority costs a claim: nine trees above it with
	# nothing due, each descended to its first leaf.
	for p in 1 2 3 4 5 6 7 8 9; do
		echo later | MQ_DIR="$w/plain" mq-send -S -D 3600 -p "$p" >/dev/null
	done
	for r in $(seq 1 "$R"); do
		say "$name: priorities, nine delayed trees above, run $r of $R"
		MQ_DIR="$w/plain" spawn -o /dev/null "$k" mq-recv -t 3600 | cut -d' ' -f1 >>"$w/above.t"
	done
	paired "$name" "claim one, $DEPTH queued over 10 priorities" "$w/prio.t" us \
	    "claim one, $DEPTH queued, no priorities (same run)" "$w/plain.t" "<= 1.2"
	paired "$name" "claim one, $DEPTH at priority 0, 9 delayed trees above" "$w/above.t" us \
	    "claim one, $DEPTH queued, no priorities (same run)" "$w/plain.t" "-"
	rm -rf "$w"
}

bench_ls() { # fs: mq-ls of BENCH_DEPTH messages against find, and its memory
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	say "$name: ls: filling a spool of $DEPTH messages"
	# Over four priorities, a fifth of them delayed (in two trees): the
	# ready pass and the delayed pass both have leaves to list.
	q=$((DEPTH / 10))
	for p in 0 3 6 9; do
		seq 1 $((q * 2)) | MQ_DIR="$w/q" mq-send -S -l -p "$p" >/dev/null
	done
	seq 1 "$q" | MQ_DIR="$w/q" mq-send -S -l -D 3600 >/dev/null
	seq 1 "$q" | MQ_DIR="$w/q" mq-send -S -l -D 3600 -p 6 >/dev/null
	c=$(find "$w/q" -type f | wc -l)
	for r in $(seq 1 "$R"); do
		say "$name: ls, run $r of $R"
		s=$(now); find "$w/q" -type f | wc -l >/dev/null; e=$(now)
		echo $(((e - s) / 1000)) >>"$w/find.t"
		s=$(now); mq-ls -d "$w/q" >/dev/null; e=$(now)
		echo $(((e - s) / 1000)) >>"$w/ls.t"
	done
	/usr/bin/time -f %M -o "$w/rss" mq-ls -d "$w/q" >/dev/null
	s=$(now); mq-ls -l -d "$w/q" >/dev/null; e=$(now)
	paired "$name" "mq-ls, $c messages" "$w/ls.t" us \
	    "find SPOOL -type f | wc -l (same runs)" "$w/find.t" "<= 2"
	row "$name" "peak RSS of that mq-ls" "$(tail -n 1 "$w/rss")" KiB \
	    "4 MiB" 4096 "<= 1"
	row "$name" "mq-ls -l (opens, stats, reads each), $c messages" "$(((e - s) / 1000))" us \
	    "find SPOOL -type f | wc -l" "$(median <"$w/find.t")" "-"
	rm -rf "$w"
}

# mq-top watching a deep spool at the default interval: the CPU time it
# takes (user + sys) over the time it runs, as it is a share of a core,
# its first frame (which lists every leaf) included; still, then with a
# sender and a consumer changing the spool while it watches.
bench_top() { # fs
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	frames=${BENCH_TOP_FRAMES:-10}
	say "$name: top: filling a spool of $DEPTH messages"
	seq 1 "$DEPTH" | MQ_DIR="$w/q" mq-send -S -l >/dev/null
	seq 1 100 >"$w/hundred"
	for r in $(seq 1 "$R"); do
		say "$name: top, run $r of $R"
		/usr/bin/time -f '%U %S %e' -o "$w/time" \
		    mq-top -b -n "$frames" -i 2 -d "$w/q" >/dev/null
		awk '{ printf "%.2f\n", ($1 + $2) / $3 * 100 }' "$w/time" >>"$w/still"
		MQ_DIR="$w/q" sh -c 'while :; do mq-send -S -l <"$1" >/dev/null;
		    mq-recv -n 100 -t 600 | mq-ack; sleep 0.1; done' sh "$w/hundred" &
		busy=$!
		/usr/bin/time -f '%U %S %e' -o "$w/time" \
		    mq-top -b -n "$frames" -i 2 -d "$w/q" >/dev/null
		kill "$busy"
		wait "$busy" 2>/dev/null || :
		awk '{ printf "%.2f\n", ($1 + $2) / $3 * 100 }' "$w/time" >>"$w/busy"
	done
	row "$name" "mq-top -b -n $frames -i 2, $DEPTH messages: CPU / wall" \
	    "$(median <"$w/still")" "%" "10% of one core" 10 "<= 1"
	row "$name" "the same, 100 sent and 100 acked every 0.1 s meanwhile" \
	    "$(median <"$w/busy")" "%" "10% of one core" 10 "<= 1"
	rm -rf "$w"
}

bench_memory() { # fs
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	say "$name: memory, a 1 GiB message"
	head -c 1073741824 /dev/zero >"$w/big"
	MQ_DIR="$w/q" spawn -i "$w/big" -o "$w/id" 1 mq-send >"$w/send.t"
	rm -f "$w/big"
	r=$(MQ_DIR="$w/q" mq-recv)
	MQ_DIR="$w/q" mq-ack -x big "$r"
	MQ_DIR="$w/q" spawn -o /dev/null 1 mq-dlq show "$(cat "$w/id")" >"$w/show.t"
	row "$name" "peak RSS, mq-send of 1 GiB" "$(cut -d' ' -f2 "$w/send.t")" KiB \
	    "4 MiB" 4096 "<= 1"
	row "$name" "peak RSS, mq-dlq show of 1 GiB" "$(cut -d' ' -f2 "$w/show.t")" KiB \
	    "4 MiB" 4096 "<= 1"
	rm -rf "$w"
}

bench_show() { # fs: mq-show of a 1 GiB message against cat of its file
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	say "$name: show, a 1 GiB message"
	id=$(head -c 1073741824 /dev/urandom | MQ_DIR="$w/q" mq-send -S)
	f=$(find "$w/q/new" -type f)
	# Each mq-show paired with a cat of the same file just before it
	# (spawn -r: cat reads it as its standard input).
	MQ_DIR="$w/q" spawn -r "$(command -v cat)" -i "$f" -o /dev/null "$R" \
	    mq-show "$id" >"$w/show.t"
	RATIO=$(cut -d' ' -f4 "$w/show.t")
	row "$name" "mq-show of 1 GiB" "$(cut -d' ' -f1 "$w/show.t")" us \
	    "cat of its file" "$(cut -d' ' -f3 "$w/show.t")" "-"
	row "$name" "peak RSS, mq-show of 1 GiB" "$(cut -d' ' -f2 "$w/show.t")" KiB \
	    "8 MiB" 8192 "<= 1"
	rm -rf "$w"
}

# base_build PART VAR FILE DIR WITHOUT: the baseline build of PART's rows
# (a build without WITHOUT), into BASE_BIN (its bin/, empty when the rows
# are skipped: one note says why) and BASE_WHAT.  The variable VAR names
# it: a git revision, by default the parent of the commit that added FILE,
# built once into bench/tmp/DIR; or the bin/ of a build made elsewhere (for
# a tree without git).
base_build() {
	BASE_BIN='' BASE_WHAT=''
	eval "_b=\${$2:-}"
	if [ -n "$_b" ] && [ -d "$_b" ]; then
		for _t in mq-send mq-recv mq-ack; do
			if [ ! -x "$_b/$_t" ]; then
				note "$1: skipped: $2: $_b/$_t is missing"
				return 0
			fi
		done
		BASE_BIN=$(cd "$_b" && pwd)
		BASE_WHAT=$BASE_BIN
		return 0
	fi
	if ! command -v git >/dev/null 2>&1 ||
	    ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		note "$1: skipped: no git repository to build the baseline from ($2 may name the bin/ of a build without $5)"
		return 0
	fi
	if [ -z "$_b" ]; then
		_b=$(git -C "$top" log --diff-filter=A --format=%H -- "$3" | tail -n 1)
		if [ -z "$_b" ]; then
			note "$1: skipped: no commit in the repository added $3"
			return 0
		fi
		_b=$_b^
	fi
	if ! _rev=$(git -C "$top" rev-parse -q --verify "$_b^{commit}"); then
		note "$1: skipped: revision $_b is not in the repository (a shallow clone?)"
		return 0
	fi
	_dir=$here/tmp/$4
	if [ "$(cat "$_dir/.built" 2>/dev/null)" != "$_rev" ]; then
		say "$1: building the baseline $_rev in bench/tmp/$4"
		rm -rf "$_dir"
		mkdir -p "$_dir"
		if ! git -C "$top" archive "$_rev" | tar -x -C "$_dir" ||
		    ! make -C "$_dir" bin/mq-send bin/mq-recv bin/mq-ack \
		    >"$_dir/make.log" 2>&1; then
			note "$1: skipped: the baseline $_rev did not build (bench/tmp/$4/make.log)"
			return 0
		fi
		echo "$_rev" >"$_dir/.built"
	fi
	BASE_BIN=$_dir/bin
	BASE_WHAT=$(git -C "$top" rev-parse --short "$_rev")
}

# The spool's history, its counters (count.c) and its log (log.c): what
# they cost the rates, against a build without them.  BENCH_HISTORY_BASE
# is that build: a git revision, by default the parent of the commit that
# added src/core/count.c, built once into bench/tmp/base; or the bin/ of a
# build made elsewhere.  HIST_BIN is its bin/, empty when the rows are
# skipped.
HIST_BIN='' HIST_TRIED='' HIST_WHAT=''
history_base() {
	[ -z "$HIST_TRIED" ] || return 0
	HIST_TRIED=1
	base_build history BENCH_HISTORY_BASE src/core/count.c base \
	    "counters and log"
	HIST_BIN=$BASE_BIN HIST_WHAT=$BASE_WHAT
}

# hist_step W SIDE STEP SPOOL: one timed step of the history rows with the
# binaries of SIDE (cur: this build; base: HIST_BIN), its rate onto
# W/SIDE.STEP.t.  The claim loop finds mq-recv and mq-ack by name, in PATH.
hist_step() {
	_p=$PATH
	[ "$2" = cur ] || _p=$HIST_BIN:$PATH
	sync
	case $3 in
	durable | nosync)
		_f=-l
		[ "$3" = durable ] || _f=-lS
		PATH=$_p MQ_DIR=$4 spawn -i "$1/lines" -o /dev/null 1 mq-send "$_f" |
		    awk -v n="$N" '{ printf "%.0f\n", n / ($1 / 1e6) }'
		;;
	claim)
		_s=$(now)
		(PATH=$_p; claim_all "$4" 1000)
		_e=$(now)
		rate "$N" "$_s" "$_e"
		;;
	esac >>"$1/$2.$3.t"
}

bench_history() { # fs: the rates with counters and log, and without
	history_base
	[ -n "$HIST_BIN" ] || return 0
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	seq 1 "$N" >"$w/lines"
	for r in $(seq 1 "$R"); do
		say "$name: history, run $r of $R"
		d=$(mktemp -d "$w/run.XXXXXX")
		# Each step four times, the two builds in ABBA order (BAAB in
		# even runs), so that a drift of the machine's speed within
		# the run bills both alike; each into a spool of its own, which
		# the claims drain in the same order.
		order="base cur cur base"
		[ $((r % 2)) -eq 1 ] || order="cur base base cur"
		for step in durable nosync claim; do
			seen=
			for side in $order; do
				i=1
				case " $seen " in *" $side "*) i=2 ;; esac
				seen="$seen $side"
				q=$d/$side.d$i
				[ "$step" != nosync ] || q=$d/$side.s$i
				hist_step "$w" "$side" "$step" "$q"
			done
			# One figure of each build a run: 2N over its two
			# steps' time.
			for side in base cur; do
				awk '{ t += 1 / $1 } END { printf "%.0f\n", NR / t }' \
				    "$w/$side.$step.t" >>"$w/$side.$step"
				rm -f "$w/$side.$step.t"
			done
			say "$name: history, run $r: $step: $(tail -n 1 "$w/cur.$step") msg/s, without: $(tail -n 1 "$w/base.$step")"
		done
		# That the two builds differ where they should: only this one
		# keeps counters, and logs each send, claim and ack.
		if [ "$r" -eq 1 ]; then
			if [ -e "$d/base.d1/counters" ] || [ -e "$d/base.d1/log" ]; then
				note "history: $name: the baseline ($HIST_WHAT) keeps counters or a log: not a build without them"
			fi
			[ -e "$d/cur.d1/counters" ] ||
			    note "history: $name: this build kept no counters"
			recs=$(cat "$d/cur.d1/log" "$d/cur.d1/log.1" 2>/dev/null | wc -l)
			[ "$recs" -eq $((3 * N)) ] ||
			    note "history: $name: this build logged $recs records for $N sends, claims and acks (not $((3 * N)))"
		fi
		rm -rf "$d"
	done
	paired "$name" "send, durable (mq-send -l), counted and logged" \
	    "$w/cur.durable" msg/s "the same, built without (at $HIST_WHAT)" \
	    "$w/base.durable" ">= 0.95"
	paired "$name" "send, no sync (mq-send -l -S), counted and logged" \
	    "$w/cur.nosync" msg/s "the same, built without (at $HIST_WHAT)" \
	    "$w/base.nosync" ">= 0.95"
	paired "$name" "claim+ack (mq-recv -n 1000 | mq-ack), counted, logged" \
	    "$w/cur.claim" msg/s "the same, built without (at $HIST_WHAT)" \
	    "$w/base.claim" ">= 0.95"
	rm -rf "$w"
}

# A log of LOG_N records as log.c writes them, spread evenly over the 24
# hours before END (ms since the epoch): a message's send (mq-send), claim
# (mq-recv) and ack (mq-ack) one after another, a new process of each
# every 1000 messages.  Times are formatted here (no strftime in POSIX
# awk); the day's part once a second.
hist_log() { # n, end ms
	awk -v n="$1" -v end="$2" -v uid="$(id -u)" '
	function two(v) { return v < 10 ? "0" v : v }
	function iso(s,   z, era, doe, yoe, y, doy, mp, d, m, r) {
		z = int(s / 86400) + 719468
		r = s - int(s / 86400) * 86400
		era = int(z / 146097)
		doe = z - era * 146097
		yoe = int((doe - int(doe / 1460) + int(doe / 36524) - int(doe / 146096)) / 365)
		y = yoe + era * 400
		doy = doe - (365 * yoe + int(yoe / 4) - int(yoe / 100))
		mp = int((5 * doy + 2) / 153)
		d = doy - int((153 * mp + 2) / 5) + 1
		m = mp < 10 ? mp + 3 : mp - 9
		if (m <= 2) y++
		return y "-" two(m) "-" two(d) "T" two(int(r / 3600)) ":" \
		    two(int(r % 3600 / 60)) ":" two(r % 60)
	}
	BEGIN {
		start = end - 86400000
		last = -1
		pid = 20000
		for (i = 0; i < n; i++) {
			ms = start + int(i * 86400000 / n)
			s = int(ms / 1000)
			if (s != last) {
				day = iso(s)
				last = s
			}
			k = i % 3
			if (k == 0) {
				if (i % 3000 == 0) {
					pid += 3
					rnd = sprintf("%06x%06x", (pid * 7919) % 16777216, (i * 104729) % 16777216)
				}
				# The ID: the send time in ns, 16 hex digits.
				ns = ms * 1000000
				hi = int(ns / 4294967296)
				id = sprintf("%08x%08x.%s.%s", hi, ns - hi * 4294967296, pid, rnd)
			}
			if (k == 0)
				printf "%s.%03dZ\tsend\t%s\ttool=mq-send\tpid=%s\tuid=%s\n", day, ms - s * 1000, id, pid, uid
			else if (k == 1)
				printf "%s.%03dZ\tclaim\t%s\ttool=mq-recv\tpid=%s\tuid=%s\tattempt=1\n", day, ms - s * 1000, id, pid + 1, uid
			else
				printf "%s.%03dZ\tack\t%s\ttool=mq-ack\tpid=%s\tuid=%s\tattempt=1\n", day, ms - s * 1000, id, pid + 2, uid
		}
	}'
}

bench_history_log() { # fs: mq-log over a log of LOG_N records
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	say "$name: history: a log of $LOG_N records over the last 24 hours"
	echo one | MQ_DIR="$w/q" mq-send >/dev/null
	# A log-size that keeps such a log (what is read is the same).
	MQ_DIR="$w/q" mq-conf log-size=1G
	hist_log "$LOG_N" $(($(now) / 1000000)) >"$w/q/log"
	for r in $(seq 1 "$R"); do
		say "$name: history, mq-log, run $r of $R"
		# The floor: the records of the last hour by their first field,
		# which sorts as their time (ISO 8601, UTC, fixed width).
		t=$(date -u -d "@$(($(now) / 1000000000 - 3600))" +%Y-%m-%dT%H:%M:%S.000Z)
		order="floor since all"
		k=$(((r - 1) % 3))
		while [ "$k" -gt 0 ]; do
			order="${order#* } ${order%% *}"
			k=$((k - 1))
		done
		for x in $order; do
			case $x in
			floor) spawn -o /dev/null 1 awk -F '\t' -v T="$t" '$1 >= T' "$w/q/log" ;;
			since) MQ_DIR="$w/q" spawn -o /dev/null 1 mq-log --since 1h ;;
			all) MQ_DIR="$w/q" spawn -o /dev/null 1 mq-log ;;
			esac | cut -d' ' -f1 >>"$w/$x.us"
		done
	done
	shown=$(MQ_DIR="$w/q" mq-log --since 1h | wc -l)
	floor=$(awk -F '\t' -v T="$t" '$1 >= T' "$w/q/log" | wc -l)
	for x in floor since all; do
		awk -v n="$LOG_N" '{ printf "%.0f\n", n / ($1 / 1e6) }' "$w/$x.us" >"$w/$x.rate"
	done
	paired "$name" "mq-log --since 1h, a log of $LOG_N records ($shown shown)" \
	    "$w/since.us" us "awk -F'\\t' '\$1 >= T' of that log ($floor lines)" \
	    "$w/floor.us" "-"
	paired "$name" "mq-log --since 1h, records read a second" \
	    "$w/since.rate" rec/s "awk -F'\\t' '\$1 >= T', records read a second" \
	    "$w/floor.rate" "-"
	paired "$name" "mq-log, all $LOG_N records" "$w/all.us" us \
	    "awk -F'\\t' '\$1 >= T' of that log" "$w/floor.us" "-"
	paired "$name" "mq-log, all records, records read a second" \
	    "$w/all.rate" rec/s "awk -F'\\t' '\$1 >= T', records read a second" \
	    "$w/floor.rate" "-"
	rm -rf "$w"
}

# mq-relay against what it is built on (rabbitmq-c's own confirmed
# publishing, bench/amqp-confirm) and against mq-send, on one RabbitMQ node
# (tests/rabbit) started once for every file system, after every other
# row, and stopped at the end (relay_stop; cleanup if the bench fails).
# RELAY_URI stays empty when the rows are skipped (one note says why).
# The node's data directory is on tmpfs whatever the file system measured:
# in use the broker is on other hosts, and here its fsyncs would share the
# disk measured and bill the relay for them.
RELAY_URI=
relay_start() {
	if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
		note "relay: skipped: rabbitmq-server not installed"
		return 0
	fi
	if [ ! -x "$top/bin/mq-relay" ]; then
		note "relay: skipped: mq-relay not built"
		return 0
	fi
	if [ ! -x "$here/amqp-confirm" ]; then
		note "relay: skipped: bench/amqp-confirm not built (librabbitmq not found)"
		return 0
	fi
	if [ ! -f "$top/tests/rabbit" ]; then
		note "relay: skipped: tests/rabbit is missing"
		return 0
	fi
	node=$(mktemp -d /dev/shm/mq-bench-rabbit.XXXXXX)
	port=$(sh "$top/tests/rabbit" ports 1)
	say "relay: starting a RabbitMQ node on 127.0.0.1:$port"
	if ! sh "$top/tests/rabbit" start "$node/n" rb1 "$port" >"$node/start.log" 2>&1; then
		note "relay: skipped: the RabbitMQ node did not start: $(tail -n 1 "$node/start.log")"
		return 0
	fi
	RELAY_URI=amqp://guest:guest@127.0.0.1:$port
}

# pulled N: reads mq-relay pull -v's lines and prints the time (ns) at which
# the messages added reach N, their batch acked (what is left is -1's check
# that the queue is empty, after a second without a delivery), or at the end
# of its input if they never do.  The other lines go to standard error.
pulled() {
	# A shell loop, not awk: awk may read a pipe ahead in blocks.
	_a=0 _t=
	while IFS= read -r _l; do
		case $_l in
		*" pulled "*"(added "*)
			_k=${_l#*(added }
			_a=$((_a + ${_k%%,*}))
			[ -n "$_t" ] || [ "$_a" -lt "$1" ] || _t=$(now)
			;;
		*" connected to "*) ;;
		*) printf '%s\n' "$_l" >&2 ;;
		esac
	done
	echo "${_t:-$(now)}"
}

# gone QUEUE: deletes it and prints how many messages it held.
gone() {
	sh "$top/tests/rabbit" ctl "$node/n" delete_queue "$1" |
	    sed -n 's/.* with \([0-9][0-9]*\) ready.*/\1/p'
}

# pull_one W X QUEUE DIR: one of the pull pairs' steps (X: relay, the pull
# of QUEUE into the spool DIR, or client, mq-send -l of the lines into DIR);
# its rate onto W/pull.X.t; 1 on a failure.
pull_one() {
	sync
	_s=$(now)
	if [ "$2" = relay ]; then
		{
			MQ_RELAY_URI=$RELAY_URI timeout 600 mq-relay pull -1 \
			    -v -n $((RELAY_N + 1)) -d "$4" -q "$3" 2>&1 >/dev/null
			echo $? >"$1/rc"
		} | pulled "$RELAY_N" >"$1/end"
		[ "$(cat "$1/rc")" -eq 0 ] || return 1
		_e=$(cat "$1/end")
	else
		MQ_DIR=$4 mq-send -l <"$1/lines" >/dev/null || return 1
		_e=$(now)
	fi
	rate "$RELAY_N" "$_s" "$_e" >>"$1/pull.$2.t"
}

# relay_run W R: run R, both pairs back to back on the node; 1 on a failure.
relay_run() {
	_qa=bench-$name-$2-relay _qb=bench-$name-$2-client
	_qc=bench-$name-$2-base
	rm -rf "$1/out" "$1/in" "$1/in2" "$1/send" "$1/send2" "$1/floor" \
	    "$1/base" "$1/unlink" "$1/pull.relay.t" "$1/pull.client.t"
	# The pulls' spools, made now, together, before the push rows'
	# deletions: their files go where their directories are (ext4 puts
	# a file in its directory's block group), the same group for all.
	for _d in in in2 send send2; do
		MQ_DIR="$1/$_d" mq-send -l </dev/null >/dev/null || return 1
	done
	MQ_DIR="$1/out" mq-send -l <"$1/lines" >/dev/null || return 1
	# The push's local floor: mq-recv -n 100 | mq-ack of the same N.
	MQ_DIR="$1/floor" mq-send -l <"$1/lines" >/dev/null || return 1
	[ -z "$RELAY_BASE" ] ||
	    MQ_DIR="$1/base" mq-send -l <"$1/lines" >/dev/null || return 1
	# Which of the pushes goes first turns from run to run.
	_order="relay client floor unlink${RELAY_BASE:+ base}"
	_n=4
	[ -z "$RELAY_BASE" ] || _n=5
	_k=$((($2 - 1) % _n))
	while [ "$_k" -gt 0 ]; do
		_order="${_order#* } ${_order%% *}"
		_k=$((_k - 1))
	done
	for _x in $_order; do
		sync
		_s=$(now)
		case $_x in
		relay)
			MQ_RELAY_URI=$RELAY_URI timeout 600 mq-relay push -1 \
			    -n 100 -d "$1/out" -q "$_qa" || return 1
			;;
		base)
			MQ_RELAY_URI=$RELAY_URI timeout 600 "$RELAY_BASE" push -1 \
			    -n 100 -d "$1/base" -q "$_qc" || return 1
			;;
		floor)
			claim_all "$1/floor" 100 || true
			;;
		unlink)
			# What any push's ack costs at the least (floor.c
			# times it: its files are made first, not timed).
			floor unlink "$RELAY_N" "$RELAY_SIZE" "$1/unlink" \
			    >>"$1/push.unlink" || return 1
			continue
			;;
		*)
			timeout 600 amqp-confirm -n "$RELAY_N" -s "$RELAY_SIZE" \
			    -b 100 -q "$_qb" "$RELAY_URI" >/dev/null || return 1
			;;
		esac
		_e=$(now)
		rate "$RELAY_N" "$_s" "$_e" >>"$1/push.$_x"
	done
	_fl=$(find "$1/floor/new" "$1/floor/cur" -type f 2>/dev/null | wc -l)
	[ "$_fl" -eq 0 ] || note "relay: $name, run $2: $_fl left in the spool after mq-recv -n 100 | mq-ack"
	if [ -n "$RELAY_BASE" ]; then
		_bl=$(find "$1/base/new" "$1/base/cur" -type f 2>/dev/null | wc -l)
		_bh=$(gone "$_qc")
		[ "$_bl" -eq 0 ] || note "relay: $name, run $2: $_bl left in the spool after $RELAY_BASE push -1"
		[ "$_bh" = "$RELAY_N" ] || note "relay: $name, run $2: the queue held ${_bh:-?} of $RELAY_N after $RELAY_BASE push"
	fi
	# The pulls: two of each, in the order relay client client relay
	# (odd runs) or client relay relay client (even runs), so that a
	# drift of the disk's speed during the run bills both alike.  The
	# first pull takes the client's queue, the second the relay's (what
	# mq-relay push put there, with its x-mq-* headers); mq-send the same
	# lines into send and send2.  Pull's -n is more than the messages of
	# the run: nothing consumes the spool, and its flow control stops at
	# -n waiting (where -1 does not end it either).
	# On a disk whose ext4 has no journal (this machine's), a new file's
	# inode is not one deleted in the last 30 s or so, and each create
	# scans past those in its group: whichever of the pair ran first
	# after the push rows' deletions paid for them (up to 10 times
	# slower).  All start after.
	[ "$name" = tmpfs ] || { sync; sleep 61; }
	_order="relay client client relay"
	[ $(($2 % 2)) -eq 1 ] || _order="client relay relay client"
	_pr=0 _pc=0
	for _x in $_order; do
		# The first pull takes the baseline's queue, the second the
		# relay push's; each step into a spool of its own.
		if [ "$_x" = relay ]; then
			_pr=$((_pr + 1))
			_q=$_qb _to=$1/in
			[ "$_pr" -eq 1 ] || _q=$_qa _to=$1/in2
		else
			_pc=$((_pc + 1))
			_q='' _to=$1/send
			[ "$_pc" -eq 1 ] || _to=$1/send2
		fi
		pull_one "$1" "$_x" "$_q" "$_to" || return 1
	done
	# One figure of each a run: 2N over the two steps' time.
	for _x in relay client; do
		awk '{ t += 1 / $1 } END { printf "%.0f\n", NR / t }' \
		    "$1/pull.$_x.t" >>"$1/pull.$_x"
		rm -f "$1/pull.$_x.t"
	done
	_left=$(find "$1/out/new" "$1/out/cur" -type f 2>/dev/null | wc -l)
	_in=$(find "$1/in/new" -type f | wc -l)
	_in2=$(find "$1/in2/new" -type f | wc -l)
	_held=$(gone "$_qa")
	_rest=$(gone "$_qb")
	[ "$_left" -eq 0 ] || note "relay: $name, run $2: $_left left in the spool after mq-relay push -1"
	# What the relay's queue held: the second pull took it all.
	[ "$_in2" -eq "$RELAY_N" ] || note "relay: $name, run $2: the queue held $_in2 of $RELAY_N after mq-relay push (as mq-relay pull added them)"
	[ "$_in" -eq "$RELAY_N" ] || note "relay: $name, run $2: mq-relay pull added $_in of $RELAY_N"
	[ "$_rest" = 0 ] || note "relay: $name, run $2: ${_rest:-?} left on the queue after mq-relay pull -1"
	[ "$_held" = 0 ] || note "relay: $name, run $2: ${_held:-?} left on the relay's queue after mq-relay pull -1"
	rm -rf "$1/out" "$1/in" "$1/in2" "$1/send" "$1/send2" "$1/floor" \
	    "$1/base" "$1/unlink"
}

bench_relay() { # fs
	[ -n "$RELAY_URI" ] || return 0
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	awk -v n="$RELAY_N" -v s="$RELAY_SIZE" 'BEGIN {
		l = sprintf("%" s "s", ""); gsub(/ /, "x", l)
		for (i = 1; i <= n; i++) print l }' >"$w/lines"
	for r in $(seq 1 "$R"); do
		say "$name: relay, run $r of $R"
		if ! relay_run "$w" "$r"; then
			note "relay: $name, run $r failed (above): no relay rows for $name"
			rm -rf "$w"
			return 0
		fi
	done
	paired "$name" "relay push, batches of 100 (mq-relay push -n 100)" \
	    "$w/push.relay" msg/s \
	    "rabbitmq-c confirmed publish, batches of 100" \
	    "$w/push.client" ">= 0.8"
	# What push must do locally per message bounds it: on a disk, below
	# the broker's rate.
	paired "$name" "relay push, batches of 100 (mq-relay push -n 100)" \
	    "$w/push.relay" msg/s \
	    "its local floor: claim+ack (mq-recv -n 100 | mq-ack)" \
	    "$w/push.floor" "-"
	# Why the disk's push row cannot meet its target here: push deletes
	# a file a message (its ack), and that alone is below 0.8 of the
	# broker's rate on this disk (ext4 mounted with discard).
	awk '{ printf "%.0f\n", 0.8 * $1 }' "$w/push.client" >"$w/push.target"
	paired "$name" "floor: unlink of a ${RELAY_SIZE}-byte file (floor unlink)" \
	    "$w/push.unlink" msg/s \
	    "0.8 x rabbitmq-c confirmed publish (push's target)" \
	    "$w/push.target" "-"
	if [ -n "$RELAY_BASE" ]; then
		paired "$name" "relay push, base binary (BENCH_RELAY_BASE)" \
		    "$w/push.base" msg/s \
		    "rabbitmq-c confirmed publish, batches of 100" \
		    "$w/push.client" ">= 0.8"
	fi
	paired "$name" "relay pull, 2 a run (mq-relay pull -n $((RELAY_N + 1)))" \
	    "$w/pull.relay" msg/s \
	    "mq-send -l durable, 2 a run (the four in ABBA order)" \
	    "$w/pull.client" ">= 0.5"
	rm -rf "$w"
}

# Lease holders (holder.c): a claim writes its holder into the lease's
# name, the first claim of a process checks holders/ for its pid space (a
# worker writes its own record there too), and a claim lists holders/ and
# judges each bound holder listed (at most once a second; a plain mq-recv
# claims once, so it always looks).  BENCH_HOLDER_BASE is the build
# without holders, as BENCH_HISTORY_BASE is history's: by default the
# parent of the commit that added src/core/holder.c, built once into
# bench/tmp/base-holder.
HOLD_BIN='' HOLD_TRIED='' HOLD_WHAT=''
holder_base() {
	[ -z "$HOLD_TRIED" ] || return 0
	HOLD_TRIED=1
	base_build holders BENCH_HOLDER_BASE src/core/holder.c base-holder \
	    "holders"
	HOLD_BIN=$BASE_BIN HOLD_WHAT=$BASE_WHAT
}

# holders_start SPOOL LOG: 8 workers that hold 125 leases each, with a job
# of an hour each; 0 once the 1000 bound leases are all in cur/ (60 s at
# most).
holders_start() {
	for _i in 1 2 3 4 5 6 7 8; do
		MQ_DIR=$1 mq-recv -P 125 -t 3600 -- sleep 3600 >/dev/null 2>>"$2" &
		HOLD_PIDS="$HOLD_PIDS $!"
	done
	_i=0
	while [ "$_i" -lt 600 ]; do
		[ "$(find "$1/cur" -type f -name '*,hw*' | wc -l)" -lt 1000 ] || return 0
		sleep 0.1
		_i=$((_i + 1))
	done
	return 1
}

# spool_copy FROM TO: a spool the same as FROM, its messages hard links
# to FROM's (the same tree, made in a fraction of a send's time); the
# files of its root (counters, log) copies of their own.
spool_copy() {
	cp -al "$1" "$2"
	find "$2" -maxdepth 1 -type f | while read -r _f; do
		rm -f "$_f"
		cp -p "$1/${_f##*/}" "$_f"
	done
}

# hold_pair SIDE REF COMMAND...: k claims of COMMAND, each paired with one
# of REF (a command line, split at blanks) just before it (in even runs,
# after it: REF is the command then), their receipts onto W/got.SIDE;
# the medians of COMMAND's, REF's and their ratios onto W/SIDE.us,
# W/SIDE.ref and W/SIDE.ratio.
hold_pair() {
	_side=$1 _ref=$2
	shift 2
	sync
	if [ $((r % 2)) -eq 1 ]; then
		spawn -o "$w/got.$_side" -r "$_ref" "$k" "$@" |
		    awk -v f="$w/$_side" '{ print $1 >>(f ".us"); print $3 >>(f ".ref"); print $4 >>(f ".ratio") }'
	else
		# shellcheck disable=SC2086 # REF split at blanks, as spawn -r does
		spawn -o "$w/got.$_side" -r "$*" "$k" $_ref |
		    awk -v f="$w/$_side" '{ print $3 >>(f ".us"); print $1 >>(f ".ref"); printf "%.4f\n", 1 / $4 >>(f ".ratio") }'
	fi
}

# hold_row SIDE WORKLOAD COMPARED TARGET: a row of hold_pair's figures.
hold_row() {
	RATIO=$(median <"$w/$1.ratio")
	row "$name" "$2" "$(median <"$w/$1.us")" us "$3" "$(median <"$w/$1.ref")" "$4"
}

# hold_skip SPOOL N: the N oldest of SPOOL claimed and acked, so that it
# is where its pair is.
hold_skip() {
	MQ_DIR=$1 mq-recv -n "$2" -t 3600 | MQ_DIR=$1 mq-ack
}

# hold_modes: one run of the worker mode rows, each build twice, ABBA
# (BAAB in even runs), each time into a spool of its own sent by its own
# mq-send; a build's figure for the run is 2 x jobs over its two runs.
hold_modes() {
	order="base cur cur base"
	[ $((r % 2)) -eq 1 ] || order="cur base base cur"
	for side in $order; do
		_p=$PATH
		[ "$side" = cur ] || _p=$HOLD_BIN:$PATH
		rm -rf "$w/q"
		PATH=$_p MQ_DIR=$w/q mq-send -l -S <"$w/lines" >/dev/null
		sync
		s=$(now); PATH=$_p MQ_DIR=$w/q mq-recv -P 4 -- true; e=$(now)
		rate "$jobs" "$s" "$e" >>"$w/P4.$side.t"
	done
	rm -rf "$w/q"
	for side in base cur; do
		awk '{ t += 1 / $1 } END { printf "%.0f\n", NR / t }' \
		    "$w/P4.$side.t" >>"$w/P4.$side"
		rm -f "$w/P4.$side.t"
	done
}

bench_holders() { # fs: claims and workers with holders named, and without
	holder_base
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	HOLD_W=$w
	k=100
	jobs=${BENCH_JOBS:-2000}
	seq 1 "$jobs" >"$w/lines"
	# Two spools alike at a time, claimed in step: a claim lists the
	# rest of the oldest leaf, whose cost falls as the leaf empties, so
	# a row and its reference take their messages at the same place in
	# the same tree.  The row's spool has its 1000 oldest in flight, the
	# reference (n) has them acked.  Two, not three: every link of a
	# copy is an inode of tmpfs's, which has about 3 million.
	say "$name: holders: filling a spool of $DEPTH messages"
	seq 1 "$DEPTH" | MQ_DIR="$w/n" mq-send -l -S >/dev/null
	spool_copy "$w/n" "$w/receipt"
	MQ_DIR="$w/receipt" mq-recv -n 1000 -t 3600 >"$w/held"
	hold_skip "$w/n" 1000
	# First, 1000 held by a receipt; the two builds, on n; worker mode.
	for r in $(seq 1 "$R"); do
		say "$name: holders, run $r of $R: 1000 held by a receipt"
		hold_pair receipt "mq-recv -d $w/n -t 3600" \
		    mq-recv -d "$w/receipt" -t 3600
		if [ -n "$HOLD_BIN" ]; then
			hold_pair base "$HOLD_BIN/mq-recv -d $w/n -t 3600" \
			    mq-recv -d "$w/n" -t 3600
			hold_skip "$w/receipt" $((2 * k))
			if [ "$r" -eq 1 ]; then
				# That the two builds differ where they
				# should: this one names a receipt's holder,
				# the baseline none.
				_named=$(grep -c ',h' "$w/got.base" || true)
				_r=$(grep -c ',hr' "$w/got.base" || true)
				if [ "$_named" -ne "$k" ] || [ "$_r" -ne "$k" ]; then
					note "holders: $name: of $((2 * k)) claims of the two builds, $_named name a holder (not $k, this build's)"
				fi
			fi
			hold_modes
		fi
		cat "$w"/got.* | mq-ack
		rm -f "$w"/got.*
		say "$name: holders, run $r: claim one, ratio to none in flight: held by a receipt $(tail -n 1 "$w/receipt.ratio"); this build to the baseline: $(tail -n 1 "$w/base.ratio" 2>/dev/null); -P 4: $(tail -n 1 "$w/P4.cur" 2>/dev/null) jobs/s, baseline $(tail -n 1 "$w/P4.base" 2>/dev/null)"
	done
	# Then 1000 held by 8 workers living through the runs, in a copy of
	# n made where n is now.
	MQ_DIR="$w/receipt" mq-ack <"$w/held"
	rm -rf "$w/receipt"
	spool_copy "$w/n" "$w/workers"
	if ! holders_start "$w/workers" "$w/workers.log"; then
		note "holders: $name: 8 workers did not hold 1000 leases within 60 s"
	fi
	hold_skip "$w/n" 1000
	[ "$(find "$w/workers/holders" -type f -name '*.*' | wc -l)" -eq 8 ] ||
	    note "holders: $name: holders/ does not list the 8 workers"
	for r in $(seq 1 "$R"); do
		say "$name: holders, run $r of $R: 1000 held by 8 workers"
		hold_pair workers "mq-recv -d $w/n -t 3600" \
		    mq-recv -d "$w/workers" -t 3600
		cat "$w"/got.* | mq-ack
		rm -f "$w"/got.*
		say "$name: holders, run $r: claim one, ratio to none in flight: held by 8 workers $(tail -n 1 "$w/workers.ratio")"
	done
	# The workers held their leases throughout.
	_n=$(find "$w/workers/cur" -type f -name '*,hw*' | wc -l)
	[ "$_n" -eq 1000 ] ||
	    note "holders: $name: the 8 workers held $_n leases at the end, not 1000"
	holders_stop
	hold_row receipt "claim one, $DEPTH ready, 1000 in flight (held by a receipt)" \
	    "claim one, $DEPTH ready, none in flight (paired runs)" "<= 1.1"
	hold_row workers "claim one, $DEPTH ready, 1000 in flight held by 8 live workers" \
	    "claim one, $DEPTH ready, none in flight (paired runs)" "<= 1.1"
	if [ -n "$HOLD_BIN" ]; then
		hold_row base "claim one (mq-recv), $DEPTH ready, holder named" \
		    "the same, built without holders (at $HOLD_WHAT, paired runs)" "<= 1.1"
		paired "$name" "worker mode -P 4, $jobs jobs of true, holders" \
		    "$w/P4.cur" jobs/s "the same, built without holders (at $HOLD_WHAT)" \
		    "$w/P4.base" "-"
	fi
	rm -rf "$w"
	HOLD_W=
}

# mq-recv --once: worker mode with the ledger of finished messages (each
# message acked by its rename into once/, one fsync of once/ for the jobs
# ending within 10 ms of the first) against the same worker without it,
# -P 4 over BENCH_JOBS jobs of true, each way twice a run in ABBA order
# (BAAB in even runs), each into a spool of its own; a way's figure for a
# run is 2N over its two runs' time.
once_modes() {
	order="plain once once plain"
	[ $((r % 2)) -eq 1 ] || order="once plain plain once"
	for side in $order; do
		_o=
		[ "$side" = plain ] || _o=--once
		rm -rf "$w/q"
		MQ_DIR=$w/q mq-send -l -S <"$w/lines" >/dev/null
		sync
		# shellcheck disable=SC2086 # _o: the option, or nothing
		s=$(now); MQ_DIR=$w/q mq-recv -P 4 $_o -- true; e=$(now)
		[ "$side" = plain ] || [ "$(find "$w/q/once" -type f | wc -l)" -eq "$jobs" ] ||
		    note "once: $name: the ledger does not hold $jobs entries"
		rate "$jobs" "$s" "$e" >>"$w/once.$side.t"
	done
	rm -rf "$w/q"
	for side in plain once; do
		awk '{ t += 1 / $1 } END { printf "%.0f\n", NR / t }' \
		    "$w/once.$side.t" >>"$w/once.$side"
		rm -f "$w/once.$side.t"
	done
}

bench_once() { # fs: worker mode with --once against without
	fs=$1 name=$(fsname "$1") w=$(mktemp -d "$1/mq-bench.XXXXXX")
	jobs=${BENCH_JOBS:-2000}
	seq 1 "$jobs" >"$w/lines"
	for r in $(seq 1 "$R"); do
		say "$name: once, run $r of $R"
		once_modes
		say "$name: once, run $r: -P 4: $(tail -n 1 "$w/once.once") jobs/s with --once, $(tail -n 1 "$w/once.plain") without"
	done
	paired "$name" "worker mode -P 4 --once, $jobs jobs of true" \
	    "$w/once.once" jobs/s "the same worker without --once" \
	    "$w/once.plain" ">= 0.8"
	rm -rf "$w"
}

ONLY=${BENCH_ONLY:-"rates startup workers depth delayed worker memory expired maxdepth overshoot group prio ls show history holders once top relay"}
want() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }
for fs in $FSLIST; do
	mkdir -p "$fs"
	for part in rates startup workers depth maxdepth history holders once; do
		want $part && bench_$part "$fs"
	done
done
first=${FSLIST%% *}
want delayed && bench_delayed "$first"
want worker && bench_worker "$first"
want memory && bench_memory "$first"
want expired && bench_expired "$first"
want overshoot && bench_overshoot "$first"
want group && bench_group "$first"
want prio && bench_prio "$first"
want ls && bench_ls "$first"
want show && bench_show "$first"
want history && bench_history_log "$first"
want top && bench_top "$first"
# Last, so that no other row shares the machine with the node.
if want relay; then
	relay_start
	for fs in $FSLIST; do
		bench_relay "$fs"
	done
	relay_stop
fi

printf '\nmq bench: N=%s, %s runs; values are medians; ratio = mq / compared\n' "$N" "$R"
printf '(for rates, the median of the ratios taken run by run)\n'
printf 'this machine: a run of a trivial C program takes %s us (posix_spawn to its end, median of 200, at the start)\n' "$exec_us"
awk -F'\t' '
function check(r, t, mq, base,   op, v) {
	if (t == "-" ) return ""
	# A row without its figures met nothing (a tool missing, a run failed).
	if (mq !~ /^[0-9.]+$/ || base !~ /^[0-9.]+$/) return "NO (no figure)"
	split(t, p, " "); op = p[1]; v = p[2] + 0
	if (op == ">=") return r >= v ? "yes" : "NO"
	if (op == "<=") return r <= v ? "yes" : "NO"
	if (op == "=") return r == v ? "yes" : "NO"
	return ""
}
BEGIN { printf "%-6s %-58s %9s %-6s %-62s %9s %7s %-7s %s\n", "fs", "workload", "mq", "unit",
    "compared with", "value", "ratio", "target", "met" }
{
	m = check($8 + 0, $7, $3, $6)
	printf "%-6s %-58s %9s %-6s %-62s %9s %7.2f %-7s %s\n", $1, $2, $3, $4, $5, $6, $8, $7, m
	if (m == "yes") met++
	else if (m != "") missed[++nmissed] = sprintf("%s %s: %.2f, target %s", $1, $2, $8, $7)
}
END {
	printf "\ntargets: %d met, %d not met\n", met, nmissed
	for (i = 1; i <= nmissed; i++) printf "  not met: %s\n", missed[i]
}' "$results"
if [ -s "$notes" ]; then
	printf '\n'
	cat "$notes"
fi
