#!/bin/sh
# Installs the Debian packages that mq needs for a purpose.  As root it runs
# apt-get; otherwise it prints the exact command to run and exits 1.
# Usage: sh share/deps.sh [--check] [build | relay | test | bench]
#   build: what make needs (make demo asks for no more)
#   relay: build, and rabbitmq-c, without which mq-relay is not built
#   test:  build, and what make check needs (the default)
#   bench: test, and what make bench compares with
#   --check: only say what is missing.

build="make gcc libc6-dev pkg-config libbsd-dev"
# Test tools: bats and its libraries, mandoc (man-page lint), strace (the
# syscall tests), gdb (stops a process at a chosen step, for races),
# python3 (JSON checks), faketime (clock jumps), valgrind,
# clang with its runtime (fuzzing), shellcheck, systemd (unit checks), zsh
# (completion), e2fsprogs/mount (full file-system tests on loop mounts),
# xfsprogs (tests/powercut.bats: mkfs.xfs, and xfs_io, which cuts the power
# of an ext4 or xfs loop mount) and eatmydata (the same cuts with fsync
# made a no-op, which must be seen to lose messages), tmux (a real
# terminal for mq-recv --progress),
# man-db (pages as man shows them), sqlite3 (the outbox-relay example's
# test), prometheus (for promtool, which checks mq-stat --prometheus;
# its server is not run), time (GNU time: a program's peak memory, as
# mq-show's streaming is checked) and jq (the README's runbook of mq-log
# runs as it is written), and for mq-relay's tests: librabbitmq-dev
# (rabbitmq-c: without it mq-relay is not built), rabbitmq-server (the tests
# start private nodes on loopback, tests/rabbit; the system's own service is
# not used) and openssl (a throw-away CA and certificate for the TLS test),
# and for the Debian packages' test (tests/package.bats builds them, checks
# them and installs them into a throw-away root): dpkg-dev
# (dpkg-buildpackage), debhelper (debian/rules is dh's) and lintian; no
# fakeroot, as debian/control says Rules-Requires-Root: no.
test="$build bats bats-support bats-assert bats-file mandoc strace gdb python3
    faketime valgrind clang libclang-rt-14-dev shellcheck systemd zsh
    e2fsprogs mount xfsprogs eatmydata man-db sqlite3 prometheus time jq
    librabbitmq-dev rabbitmq-server openssl dpkg-dev debhelper lintian tmux"
relay="$build librabbitmq-dev"
bench="$test python3-dirq"
need=$test
purpose="test" to="test mq"
check=
for a in "$@"; do
	case $a in
	--check) check=1 ;;
	build) need=$build purpose="build" to="build mq" ;;
	relay) need=$relay purpose="relay" to="build mq-relay" ;;
	test) need=$test purpose="test" to="test mq" ;;
	bench) need=$bench purpose="bench" to="bench mq" ;;
	*)
		echo "usage: sh share/deps.sh [--check] [build | relay | test | bench]" >&2
		exit 2
		;;
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
	echo "missing Debian packages to $to:$missing" >&2
	echo "Run as root:  sh share/deps.sh $purpose   (or: $cmd)" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "these Debian packages are needed to $to:$missing" >&2
	echo "Run as root:" >&2
	echo "  $cmd" >&2
	exit 1
fi
echo "installing:$missing" >&2
DEBIAN_FRONTEND=noninteractive
export DEBIAN_FRONTEND
# shellcheck disable=SC2086 # one word per package
apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing
