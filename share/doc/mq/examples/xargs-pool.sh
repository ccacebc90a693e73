#!/bin/sh
# A worker pool made of a pipeline: claim PARALLEL messages (default 8),
# run them all at once with xargs, ack each job that succeeds and release
# a failed one for a retry in 30 s; then claim the next ones.  JOB is run
# with the message body on its standard input.  The pool exits 0 once
# nothing came for IDLE seconds (default: never), and at once with
# mq-recv's status if that fails (4, with the reason on standard error:
# the spool was still not made after IDLE seconds, or was removed, say)
# instead of trying again in a loop.
#
# A lease runs from the claim, not from the start of the job: so claim no
# more than can run at once, or a message waiting in xargs's queue behind
# slow jobs sees its lease run out and another worker runs it too, and
# give a lease (LEASE seconds, default 60) longer than the slowest job.
# For jobs of unknown length, mq-recv's worker mode extends the leases.
#
#   JOB=thumbnail IDLE=60 xargs-pool.sh
set -eu
: "${JOB:?set JOB to the command to run for each message}"
parallel=${PARALLEL:-8}
lease=${LEASE:-60}
batch=$(mktemp)
trap 'rm -f "$batch"' EXIT
export JOB
wait=-w
[ -z "${IDLE:-}" ] || wait=-w$IDLE
while :; do
	st=0
	mq-recv "$wait" -n "$parallel" -t "$lease" -0 >"$batch" || st=$?
	case $st in
	0) ;;
	1) exit 0 ;;
	*) exit "$st" ;;
	esac
	# A job whose ack failed (its lease ran out) said why, and its
	# message comes back: no reason to stop the pool.
	# shellcheck disable=SC2016 # expanded by the job's shell
	xargs -0 -r -P "$parallel" -n 1 sh -c '
		if $JOB <"$1"; then mq-ack "$1"
		else mq-ack -r 30 --reason "exit $?" "$1"; fi' \
	    _ <"$batch" || :
done
