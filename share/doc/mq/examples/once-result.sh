#!/bin/sh
# A job whose result is a file, for a worker run with --once:
#
#   mq-recv -w --once -- @DOCDIR@/examples/once-result.sh OUTDIR
#
# The result is named by the message's key (MQ_KEY, when it was sent with
# mq-send -k), else by its ID, and written under a temporary name, then
# renamed into place: that rename is the job's effect and its record at
# once.  --once runs a job twice only when its worker dies after the
# job's effect and before the ledger's record is durable (mq-recv(1)); the
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
mv "$tmp" "$out"
