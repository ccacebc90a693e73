#!/bin/sh
# The transactional outbox: an application that must change its database
# and queue a message about it cannot do both atomically, so it inserts
# the message into an outbox table in the same transaction as its change,
# and this relay moves the outbox to the spool:
#
#   CREATE TABLE outbox (id INTEGER PRIMARY KEY, payload TEXT NOT NULL,
#       relayed INTEGER NOT NULL DEFAULT 0);
#
#   outbox-relay.sh DB    # relay every row not yet relayed, in id order
#
# Each row is sent with its id as the dedup key (mq-send -k outbox-ID),
# and marked relayed only after mq-send has exited 0, so it is durable in
# the spool.  Why a crash at any point is safe to rerun:
#   - killed before mq-send queued the row: it is still unrelayed, and the
#     next run sends it;
#   - killed after mq-send queued it (even before its ID was printed) but
#     before the row was marked: the next run sends it again with the same
#     key, and mq-send adds nothing: it prints the ID of the message
#     queued the first time;
#   - killed after the mark: the row is not selected again.
# So every row is queued exactly once, as long as the spool remembers the
# key until the rerun: while the message is waiting, in flight or dead
# that is always so; once it is acked, for the spool's dedup-window.  Set
# it longer than a crashed relay can stay down (cron reruns it every
# minute here; an hour leaves room), once, before the first run:
#
#   mq-conf dedup-window=3600
#
# With a window of 0, a row whose message was acked before the rerun
# would be queued again.  The body is the payload and a newline (the
# sqlite3 CLI ends each row with one).  A full spool (max-depth, exit 6)
# stops the run; the rest waits for the next.
#
#   PATH=@BINDIR@:/usr/bin:/bin
#   MQ_DIR=/var/spool/events
#   * * * * * @DOCDIR@/examples/outbox-relay.sh /srv/app.db
set -eu
db=${1:?usage: outbox-relay.sh DB}
if [ "$(mq-conf dedup-window 2>/dev/null || echo 0)" = 0 ]; then
	echo "outbox-relay.sh: the spool's dedup-window is 0: a rerun after" \
	    "a crash may queue a row twice (mq-conf dedup-window=3600)" >&2
fi
# Wait for the application's transactions rather than fail on them.
sql() {
	sqlite3 -batch -cmd '.timeout 10000' "$db" "$1"
}
body=$(mktemp)
trap 'rm -f "$body"' EXIT
# Listed first: no read of the table stays open while rows are marked.
ids=$(sql 'SELECT id FROM outbox WHERE relayed = 0 ORDER BY id;')
for id in $ids; do
	# ids are the table's integers, so they are safe in the SQL below.
	# Read into a file, not piped: a failed read must not be sent.
	sql "SELECT payload FROM outbox WHERE id = $id;" >"$body"
	mq-send -k "outbox-$id" "$body" >/dev/null
	sql "UPDATE outbox SET relayed = 1 WHERE id = $id;"
done
