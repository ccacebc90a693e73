#!/bin/sh
# Installs the Debian packages that building and testing mq need.  As root
# it runs apt-get; otherwise it prints the exact command to run.
# Usage: sh share/deps.sh [--check] [bench]
#   --check: only say what is missing; bench: also what make bench needs.

need="make gcc pkg-config libbsd-dev bats bats-support bats-assert bats-file mandoc strace
    python3 faketime valgrind clang libclang-rt-14-dev shellcheck systemd zsh"
check=
for a in "$@"; do
	case $a in
	--check) check=1 ;;
	bench) need="$need python3 python3-dirq" ;;
	esac
done

# Elsewhere than Debian, the README lists what to install by hand.
command -v dpkg-query >/dev/null || exit 0

missing=
for p in $need; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
	    missing="$missing $p"
done
[ -z "$missing" ] && exit 0

cmd="apt-get update && apt-get install -y --no-install-recommends$missing"
if [ -n "$check" ]; then
	echo "missing Debian packages:$missing" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "mq needs these Debian packages:$missing" >&2
	echo "Run as root:" >&2
	echo "  $cmd" >&2
	exit 1
fi
echo "installing:$missing" >&2
DEBIAN_FRONTEND=noninteractive
export DEBIAN_FRONTEND
# shellcheck disable=SC2086 # one word per package
apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing
