#!/bin/sh
# A producer for cron: every file that has arrived in INBOX becomes one
# message (its path), then moves to INBOX/queued.  The paths are sent
# first and durably; a crash before the move only sends a file twice,
# which an idempotent worker shrugs off.
#
#   * * * * * MQ_DIR=/var/spool/thumbs /usr/local/share/doc/mq/examples/cron-producer.sh /srv/incoming
set -eu
inbox=${1:?usage: cron-producer.sh INBOX}
mkdir -p "$inbox/queued"
list=$(mktemp)
trap 'rm -f "$list"' EXIT
find "$inbox" -maxdepth 1 -type f ! -name '.*' >"$list"
[ -s "$list" ] || exit 0
mq-send -l <"$list" >/dev/null
while IFS= read -r f; do
	mv "$f" "$inbox/queued/"
done <"$list"
