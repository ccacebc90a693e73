#!/bin/sh
# A guided run of mq on a temporary spool: a producer; workers as a plain
# pipeline (mq-recv | xargs -P) with a job that fails once and is retried;
# then mq-recv's worker mode on 30 messages, one of them poison, which ends
# as a dead letter after 3 attempts; then a bounded queue (mq-conf
# max-depth=5) whose fast producer waits for a slow consumer.  Run it with
# `make demo`.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
PATH="$here/../../bin:$PATH"

# One job of the pipeline: $2 is the receipt printed by mq-recv.
if [ "${1:-}" = pipe-job ]; then
	r=$2
	attempt=${r##*,}
	body=$(cat "$r")
	case $body in
	flaky*)
		if [ "$attempt" -lt 2 ]; then
			echo "   worker $$: '$body' attempt $attempt FAILED -> mq-ack -r (retry)"
			mq-ack -r 0 "$r"
			exit 0
		fi ;;
	esac
	sleep 0.2
	echo "   worker $$: '$body' attempt $attempt done -> mq-ack"
	mq-ack "$r"
	echo "$body" >>"$work/pipe-done"
	exit 0
fi

# One job of worker mode: the body on stdin, the message in MQ_*.
if [ "${1:-}" = job ]; then
	body=$(cat)
	case $body in
	*corrupt*)
		echo "$body: cannot decode (attempt $MQ_ATTEMPT)" >&2
		exit 1 ;;
	esac
	sleep 0.1
	echo "   $body: done (attempt $MQ_ATTEMPT)"
	echo "$MQ_ID" >>"$work/done"
	exit 0
fi

# One job of the bounded queue: slow, and it notes the order of the work.
if [ "${1:-}" = slow-job ]; then
	cat >>"$work/bounded-done"
	echo >>"$work/bounded-done"
	sleep 0.05
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mq-demo.XXXXXX")
MQ_DIR=$work/spool
export MQ_DIR work
trap 'rm -rf "$work"' EXIT
count() { find "$MQ_DIR/$1" -type f | wc -l | tr -d ' '; }

cat <<TXT
mq demo: a queue is a directory, each message a file.
Spool: $MQ_DIR

1. A producer sends 6 jobs, one per line (mq-send -l prints their IDs):
TXT
{
	for i in 1 2 3 4 5; do echo "resize photo-$i.jpg"; done
	echo "flaky: upload, fails once"
} | mq-send -l | sed 's/^/   /'
echo "   ready: $(count new) messages in new/"

cat <<'TXT'

2. A pipeline of workers claims batches and runs 4 jobs at a time:
     mq-recv -n 8 -0 | xargs -0 -P 4 -n 1 <job>
   Each claim is a rename into cur/ with a 30 s lease; the job acks
   (mq-ack) or releases the message for a retry (mq-ack -r).
TXT
round=0
while mq-recv -n 8 -0 >"$work/batch"; do
	round=$((round + 1))
	echo "   -- batch $round: $(tr -cd '\0' <"$work/batch" | wc -c) claimed"
	xargs -0 -P 4 -n 1 sh "$here/demo.sh" pipe-job <"$work/batch"
done
echo "   -- nothing left to claim: mq-recv exited 1"

cat <<'TXT'

3. Worker mode: mq-recv runs the job itself, keeps each lease alive while
   its job runs, and acks on exit 0 or retries with backoff otherwise.
   30 photos, one of them corrupt; 5 jobs at once, 3 attempts at most:
     mq-recv -P 5 -m 3 --backoff 0.2 -w 1 -- <job>
TXT
seq 1 30 | sed 's/^/photo-/; s/$/.jpg/; s/^photo-5\.jpg$/photo-5.jpg (corrupt)/' |
    mq-send -l >"$work/ids"
{
	st=0
	mq-recv -P 5 -m 3 --backoff 0.2 -w 1 -- sh "$here/demo.sh" job 2>&1 ||
	    st=$?
	echo "$st" >"$work/status"
} | sed 's/^/   /'
echo "   -- idle for 1 s: the worker exited $(cat "$work/status") (5: a job failed)"

cat <<'TXT'

4. The dead letters, as a sysadmin lists them (mq-dlq ls):
   ID  attempts  died  reason  size  start of body
TXT
mq-dlq ls | sed 's/^/   /'

dead=$(mq-dlq ls | wc -l | tr -d ' ')
attempts=$(mq-dlq ls | cut -f 2 | head -n 1)
id=$(mq-dlq ls | cut -f 1 | head -n 1)
cat <<TXT

5. Inspect it (mq-dlq show ID), then redrive it to run it again
   (mq-dlq redrive --all) or delete it (mq-dlq purge --all):
TXT
echo "   body: $(mq-dlq show "$id")"
mq-dlq purge --all
echo "   purged; dead letters left: $(mq-dlq ls | wc -l | tr -d ' ')"

cat <<'TXT'

6. A bounded queue pushes back on its producer.  The spool's settings
   (mq-conf) say it holds at most 5 waiting messages:
     mq-conf max-depth=5
TXT
mq-conf max-depth=5
# A spool made for its settings is said so, on standard error.
mq-conf -d "$work/full" max-depth=5 2>"$work/conf-err"
echo "   which made the spool, and said so: $(cat "$work/conf-err")"
echo "   A send into a full spool sends what fits and exits 6:"
st=0
seq 1 8 | mq-send -d "$work/full" -l >"$work/full-ids" 2>"$work/full-err" ||
    st=$?
echo "     seq 1 8 | mq-send -l"
echo "   $(wc -l <"$work/full-ids" | tr -d ' ') IDs printed, then: $(cat "$work/full-err") (exit $st)"
cat <<'TXT'
   With -w the producer waits for room instead: 50 jobs, one slow
   consumer (50 ms a job), the depth sampled while the producer runs:
     seq 1 50 | mq-send -l -w &  mq-recv -w 1 -- <slow job>
TXT
seq 1 50 | sed 's/^/order-/' | mq-send -l -w 60 >"$work/bounded-ids" &
producer=$!
(
	max=0
	while kill -0 "$producer" 2>/dev/null; do
		d=$(count new)
		[ "$d" -gt "$max" ] && max=$d
		sleep 0.01
	done
	echo "$max" >"$work/max-depth"
) &
sampler=$!
mq-recv -w 1 -- sh "$here/demo.sh" slow-job
wait "$producer"
wait "$sampler"
inorder=no
[ "$(cat "$work/bounded-done")" = "$(seq 1 50 | sed 's/^/order-/')" ] && inorder=yes
echo "   50 sent, $(grep -c . "$work/bounded-done") done, in the order sent: $inorder;"
echo "   the most waiting at any sample: $(cat "$work/max-depth") (max-depth 5)"

cat <<TXT

Summary: pipeline: 6 jobs sent, $(wc -l <"$work/pipe-done" | tr -d ' ') done;
worker mode: 30 jobs sent, $(wc -l <"$work/done" | tr -d ' ') done, $dead dead-lettered after $attempts attempts;
bounded queue: 50 jobs sent through a queue of 5, $(grep -c . "$work/bounded-done") done in order, at most $(cat "$work/max-depth") waiting;
the spool is empty: new/ $(count new), cur/ $(count cur), dead/ $(count dead).
Next: MANPATH=\$PWD/share/man: man 7 mq (once installed, man 7 mq), README.md.
TXT
