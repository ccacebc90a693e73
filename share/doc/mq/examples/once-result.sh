#!/bin/sh
# A job whose result is a file, for a worker run with --once:
#
#   mq-recv -w --once -- @DOCDIR@/examples/once-result.sh OUTDIR
#
# The result is named by the message's key (MQ_KEY, when it was sent with
# mq-send -k), else by its ID, written under a temporary name and synced,
# then renamed into place and its directory synced: that rename is the
# job's effect and its record at once, durable before the job exits 0,
# so before the worker acks its message.  --once runs a job twice only
# when its worker dies (or the power goes) after the job's effect and
# before the message's move into the ledger is durable (mq-recv(1)); the
# job run again then finds its result and does nothing.  A killed job
# leaves a temporary file, never half a result.
#
# A job that calls a service instead passes the same name on as its
# idempotency key, so that the service does the work once:
#
#   curl -fsS -H "Idempotency-Key: ${MQ_KEY:-$MQ_ID}" --data-binary @- "$URL"
set -eu
dir=${1:?usage: once-result.sh OUTDIR}
if [ -n "${MQ_KEY:-}" ]; then
	# A key may hold any byte but NUL and newline: named by its hash.
	name=k$(printf '%s' "$MQ_KEY" | sha256sum | cut -c1-32)
else
	name=i$MQ_ID
fi
out=$dir/$name
[ -e "$out" ] && exit 0
tmp=$dir/.$name.$$
# The work: here, the body in upper case.
tr '[:lower:]' '[:upper:]' >"$tmp"
# sync FILE is fsync(2) (GNU coreutils 8.24 and later).
sync "$tmp"
mv "$tmp" "$out"
sync "$dir"
