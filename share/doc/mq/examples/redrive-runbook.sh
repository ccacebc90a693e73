#!/bin/sh
# Dead letters at 3 a.m.: what failed and why, then run again those whose
# reason matches PATTERN (a grep -E pattern), once the cause is fixed.
#
#   redrive-runbook.sh                  # the summary only
#   redrive-runbook.sh 'timed out'      # ...and redrive the ones that timed out
set -eu
pattern=${1:-}
total=$(mq-dlq ls | wc -l | tr -d ' ')
echo "$total dead letters; by reason:"
mq-dlq ls | cut -f 4 | sort | uniq -c | sort -rn
[ -n "$pattern" ] || exit 0
ids=$(mq-dlq ls | awk -F'\t' -v p="$pattern" '$4 ~ p { print $1 }')
if [ -z "$ids" ]; then
	echo "none matches '$pattern'"
	exit 0
fi
echo "redriving $(echo "$ids" | wc -l | tr -d ' ') matching '$pattern':"
printf '%s\n' "$ids" | mq-dlq redrive -
echo "$ids"
