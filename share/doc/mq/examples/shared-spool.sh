#!/bin/sh
# A spool that a team shares: make a shared spool root once, owned by the
# team's group, setgid and group-writable; every spool made inside it by a
# member is shared with the group (2770, messages 0660) whatever the
# member's umask, and nobody else can read it.  Run as root:
#
#   shared-spool.sh jobs /var/spool/mq       # then: MQ_DIR=/var/spool/mq/builds
set -eu
group=${1:?usage: shared-spool.sh GROUP ROOT}
root=${2:?usage: shared-spool.sh GROUP ROOT}
install -d -m 2770 -g "$group" "$root"
echo "shared spool root $root for group $group: spools made inside are shared"
