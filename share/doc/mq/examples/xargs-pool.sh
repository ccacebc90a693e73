#!/bin/sh
# A worker pool made of a pipeline: claim 64 at a time, run 8 jobs at
# once with xargs, ack each job that succeeds and release a failed one for
# a retry in 30 s.  JOB is run with the message body on its standard input.
# It stops once nothing came for IDLE seconds (default: never).
#
#   JOB=/usr/local/bin/thumbnail IDLE=60 xargs-pool.sh
set -eu
: "${JOB:?set JOB to the command to run for each message}"
batch=$(mktemp)
trap 'rm -f "$batch"' EXIT
export JOB
wait=-w
[ -z "${IDLE:-}" ] || wait=-w$IDLE
while mq-recv "$wait" -n 64 -0 >"$batch"; do
	# shellcheck disable=SC2016 # expanded by the job's shell
	xargs -0 -r -P 8 -n 1 sh -c '
		if $JOB <"$1"; then mq-ack "$1"; else mq-ack -r 30 "$1"; fi' _ <"$batch"
done
