#!/bin/sh
# A producer for cron: every file that has arrived in INBOX becomes one
# message, the path INBOX/queued/NAME, where the worker finds it (the
# worker service of thumbnail-worker.conf runs thumbnail-job.sh on it).
# Files whose names begin with a dot are left alone: write a file under
# such a name and rename it when it is complete.
#
# Each file is first linked into queued/ (a hard link: queued/ is inside
# INBOX, on the same file system), then all the queued/ paths are sent,
# and only once mq-send has exited 0, so that they are durable, are the
# names in INBOX removed.  So a worker never gets a path that does not
# exist yet, and a crash at any moment loses no image: until its message
# is sent, the file is still in INBOX and the next run sends it.  A crash
# after the send and before the removal sends a file twice, which an
# idempotent worker shrugs off.  A file that arrives under the name of one
# still in queued/ replaces it: give files unique names.
#
# cron runs commands with PATH=/usr/bin:/bin: set PATH at the top of the
# crontab (crontab -e) so that it holds @BINDIR@, where mq-send is:
#
#   PATH=@BINDIR@:/usr/bin:/bin
#   MQ_DIR=/var/spool/thumbs
#   * * * * * @DOCDIR@/examples/cron-producer.sh /srv/incoming
set -eu
inbox=${1:?usage: cron-producer.sh INBOX}
mkdir -p "$inbox/queued"
list=$(mktemp)
paths=$(mktemp)
trap 'rm -f "$list" "$paths"' EXIT
find "$inbox" -maxdepth 1 -type f ! -name '.*' >"$list"
[ -s "$list" ] || exit 0
while IFS= read -r f; do
	q=$inbox/queued/${f##*/}
	# -f: a run that crashed before its removals may have linked it.
	ln -f "$f" "$q"
	printf '%s\n' "$q"
done <"$list" >"$paths"
mq-send -l <"$paths" >/dev/null
while IFS= read -r f; do
	rm -f "$f"
done <"$list"
