load helper

# Users are numeric IDs (no accounts needed): 4001 and 4002 are members of
# group 4242, 4003 is not.
as() { # uid, groups, command ...
	local uid=$1 groups=--clear-groups
	[ -z "$2" ] || groups=--groups=$2
	shift 2
	setpriv --reuid="$uid" --regid="$uid" "$groups" \
	    env PATH="$(public_bin):$PATH" MQ_DIR="${MQ_DIR:-}" sh -c 'umask 077; exec "$@"' sh "$@"
}

setup() {
	[ "$(id -u)" -eq 0 ] || skip "switching users needs root"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	top=$(mktemp -d /tmp/mq-shared.XXXXXX)
	chmod 755 "$top"
	mkdir "$top/spools"
	chgrp 4242 "$top/spools"
	chmod 2770 "$top/spools"
	Q="$top/spools/team"
}

teardown() {
	[ -z "${top:-}" ] || rm -rf "$top"
}

@test "shared: a spool made under a shared spool root is shared with its group, whatever the umask" {
	as 4001 4242 mq-send -d "$Q" -l < <(seq 1 3) >/dev/null
	assert_equal "$(stat -c '%a %g' "$Q")" "2770 4242"
	for d in tmp new cur dead reason; do
		assert_equal "$(stat -c '%a %g' "$Q/$d")" "2770 4242"
	done
	f=$(find "$Q/new" -type f | head -n 1)
	assert_equal "$(stat -c '%a %g' "$f")" "660 4242"
	assert_equal "$(stat -c '%a' "$(dirname "$f")")" 2770
}

@test "shared: every member can send, claim, ack and dead-letter; the others can read nothing" {
	as 4001 4242 mq-send -d "$Q" -l < <(seq 1 3) >/dev/null
	r=$(as 4002 4242 mq-recv -d "$Q")
	assert_equal "$(as 4002 4242 cat "$r")" 1
	as 4002 4242 mq-ack -d "$Q" "$r"
	r=$(as 4002 4242 mq-recv -d "$Q")
	as 4002 4242 mq-ack -d "$Q" -x "bad" "$r"
	run as 4001 4242 mq-dlq -d "$Q" ls
	assert_success
	assert_output --partial bad
	run as 4001 4242 mq-dlq -d "$Q" redrive --all
	assert_success
	# Not a member: no access at all.
	run -4 as 4003 "" mq-recv -d "$Q"
	run as 4003 "" cat "$(find "$Q/new" -type f | head -n 1)"
	assert_failure
	assert_equal "$(find "$Q/new" -type f | wc -l)" 2
}

@test "shared: a spool made elsewhere is private (0700, messages 0600)" {
	mkdir "$top/home"
	chown 4001 "$top/home"
	export MQ_DIR="$top/home/q"
	as 4001 "" sh -c 'umask 022; echo x | mq-send' >/dev/null
	assert_equal "$(stat -c '%a' "$MQ_DIR")" 700
	assert_equal "$(stat -c '%a' "$(find "$MQ_DIR/new" -type f)")" 600
}

@test "shared: settings set by one member are read and changed by the others, not by outsiders" {
	as 4001 4242 mq-conf -d "$Q" max-attempts=2 paused=yes
	assert_equal "$(stat -c '%a %g' "$Q/conf")" "660 4242"
	assert_equal "$(as 4002 4242 mq-conf -d "$Q" max-attempts)" 2
	as 4002 4242 mq-conf -d "$Q" paused=no
	assert_equal "$(stat -c '%a %g' "$Q/conf")" "660 4242"
	assert_equal "$(as 4001 4242 mq-conf -d "$Q" paused)" no
	run -4 as 4003 "" mq-conf -d "$Q" max-attempts
	run -4 as 4003 "" mq-conf -d "$Q" max-attempts=9
	assert_equal "$(mq-conf -d "$Q" max-attempts)" 2
}
