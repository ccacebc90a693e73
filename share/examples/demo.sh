#!/bin/sh
# A guided run of mq on a temporary spool: a producer, four parallel
# workers, one job that fails once and is retried, one poison job that
# always fails and ends as a dead letter.  Run it with `make demo`.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
PATH="$here/../../bin:$PATH"

# One job, run by a worker: $1 is the receipt printed by mq-recv.
if [ "${1:-}" = work ]; then
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
	poison*)
		echo "   worker $$: '$body' attempt $attempt FAILED -> mq-ack -r (retry)"
		mq-ack -r 0 "$r"
		exit 0 ;;
	esac
	sleep 0.2
	echo "   worker $$: '$body' attempt $attempt done -> mq-ack"
	mq-ack "$r"
	echo "$body" >>"${MQ_DIR%/spool}/done"
	exit 0
fi

MQ_DIR=$(mktemp -d "${TMPDIR:-/tmp}/mq-demo.XXXXXX")/spool
export MQ_DIR
trap 'rm -rf "${MQ_DIR%/spool}"' EXIT

cat <<TXT
mq demo: a queue is a directory, each message a file.
Spool: $MQ_DIR

1. A producer sends 12 jobs, one per line (mq-send -l prints their IDs):
TXT
{
	for i in 1 2 3 4 5 6 7 8 9 10; do echo "resize photo-$i.jpg"; done
	echo "flaky: upload, fails once"
	echo "poison: corrupt input, always fails"
} | mq-send -l | sed 's/^/   /'
echo "   ready: $(find "$MQ_DIR/new" -type f | wc -l) messages in new/"

cat <<'TXT'

2. Workers claim batches and run 4 jobs at a time:
     mq-recv -n 8 -m 3 -0 | xargs -0 -P 4 -n 1 <job>
   Each claim is a rename into cur/ with a 30 s lease; a job that fails is
   released for a retry; after 3 attempts a message goes to dead/.
TXT
round=0
while mq-recv -n 8 -m 3 -0 >"${MQ_DIR%/spool}/batch"; do
	round=$((round + 1))
	echo "   -- batch $round: $(tr -cd '\0' <"${MQ_DIR%/spool}/batch" | wc -c) claimed"
	xargs -0 -P 4 -n 1 sh "$here/demo.sh" work <"${MQ_DIR%/spool}/batch"
done
echo "   -- nothing left to claim: mq-recv exited 1"

cat <<'TXT'

3. The dead letters, as a sysadmin lists them (mq-dlq ls):
   ID  attempts  died  reason  size  start of body
TXT
mq-dlq ls | sed 's/^/   /'

dead=$(mq-dlq ls | wc -l)
id=$(mq-dlq ls | cut -f 1 | head -n 1)
cat <<TXT

4. Inspect it (mq-dlq show ID), then redrive it to run it again
   (mq-dlq redrive --all) or delete it (mq-dlq purge --all):
TXT
echo "   body: $(mq-dlq show "$id")"
mq-dlq purge --all
echo "   purged; dead letters left: $(mq-dlq ls | wc -l)"

cat <<TXT

Summary: 12 jobs sent, $(wc -l <"${MQ_DIR%/spool}/done") done, $dead dead-lettered after 3 attempts;
the spool is empty: new/ $(find "$MQ_DIR/new" -type f | wc -l), cur/ $(find "$MQ_DIR/cur" -type f | wc -l), dead/ $(find "$MQ_DIR/dead" -type f | wc -l).
Next: man mq (share/man/man7/mq.7), README.md.
TXT
