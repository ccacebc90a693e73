#!/bin/sh
# Dead letters at 3 a.m.: what failed and why, then run again those whose
# reason matches PATTERN (a POSIX extended regular expression, as grep -E
# takes), once the cause is fixed: RATE a second (default 50), waiting
# for room when the spool is at its max-depth.
#
#   redrive-runbook.sh                  # the summary only
#   redrive-runbook.sh 'timed out'      # ...and redrive the ones that timed out
#   redrive-runbook.sh 'timed out' 5    # ...5 a second
set -eu
pattern=${1:-}
rate=${2:-50}
total=$(mq-dlq ls | wc -l | tr -d ' ')
echo "$total dead letters; by reason:"
mq-dlq ls | cut -f 4 | sort | uniq -c | sort -rn
[ -n "$pattern" ] || exit 0
n=$(mq-dlq ls --reason "$pattern" | wc -l | tr -d ' ')
if [ "$n" -eq 0 ]; then
	echo "none matches '$pattern'"
	exit 0
fi
echo "redriving $n matching '$pattern':"
mq-dlq ls --reason "$pattern" | cut -f 1
# It says on stderr how many it redrove ("mq-dlq: redriven N").
mq-dlq redrive --reason "$pattern" --rate "$rate" -w
