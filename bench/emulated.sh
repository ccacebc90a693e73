#!/bin/sh
# bench/emulated.sh: rows of bench/bench.sh on a machine where starting a
# process is dear.  The rows run inside a Debian 12 guest under qemu's
# software emulation (TCG, 2 virtual CPUs): there every instruction is
# dear, and a process start dearest of all, as page faults, the loader
# and the kernel's exec path are all emulated (an exec of a trivial C
# program: about 30 ms, against under 1 ms on the host).  What counts for
# a target such as claim+ack against the system-call floor is what an
# exec costs in messages of the floor: the table's head line and start-up
# rows give the exec's cost, its rates rows the floor's.
# KVM is not used on purpose: with it, a guest is as fast as its host.
#
# Usage (as root): sh bench/emulated.sh
# Environment: these four of bench/bench.sh, passed to the guest (the
# others are not): BENCH_ONLY (default "startup rates worker"),
# BENCH_RUNS (3), BENCH_JOBS (500), BENCH_FS (tmpfs and the guest's ext4
# disk: "/dev/shm /root/mq/bench/tmp"); and
#   BENCH_VM_DIR     cache of the guest's root (default /var/tmp/mq-bench-vm)
#   BENCH_VM_SECS    bound of the whole guest run (default 3600)
#   BENCH_VM_MIRROR  Debian mirror (default http://deb.debian.org/debian)
# Needs the Debian packages qemu-system-x86, debootstrap and e2fsprogs.
# The guest runs the tracked files of this working tree, built in its own
# root (chroot, at full speed) before it boots.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
vm=${BENCH_VM_DIR:-/var/tmp/mq-bench-vm}
secs=${BENCH_VM_SECS:-3600}
mirror=${BENCH_VM_MIRROR:-http://deb.debian.org/debian}
only=${BENCH_ONLY:-"startup rates worker"}
runs=${BENCH_RUNS:-3}
jobs=${BENCH_JOBS:-500}
fslist=${BENCH_FS:-"/dev/shm /root/mq/bench/tmp"}
PATH=$PATH:/usr/sbin:/sbin

die() { echo "emulated.sh: $*" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot)"
for c in qemu-system-x86_64 debootstrap mkfs.ext4; do
	command -v "$c" >/dev/null ||
	    die "$c not found: apt-get install qemu-system-x86 debootstrap e2fsprogs"
done
case $secs in '' | *[!0-9]* | 0*) die "BENCH_VM_SECS: a whole number of seconds, 1 or more" ;; esac
for v in "$only" "$runs" "$jobs" "$fslist"; do
	case $v in *[\"\$\`]*) die "BENCH_ONLY, BENCH_RUNS, BENCH_JOBS, BENCH_FS: no quote, \$ or \`" ;; esac
done

root=$vm/root
if [ ! -e "$root/.complete" ]; then
	rm -rf "$root"
	mkdir -p "$vm"
	echo "emulated.sh: building the guest's root in $root" >&2
	debootstrap --variant=minbase \
	    --include=make,gcc,libc6-dev,pkg-config,libbsd-dev,python3,python3-dirq,linux-image-amd64,initramfs-tools \
	    bookworm "$root" "$mirror" >"$vm/debootstrap.log" 2>&1 ||
	    die "debootstrap failed: see $vm/debootstrap.log"
	touch "$root/.complete"
fi
for kernel in "$root"/boot/vmlinuz-*; do :; done
for initrd in "$root"/boot/initrd.img-*; do :; done
if [ ! -f "$kernel" ] || [ ! -f "$initrd" ]; then die "no kernel in $root/boot"; fi

# The guest's init: what it needs mounted, the job from the host's
# share (9p), its output back there, and power off.
cat >"$root/mq-bench-init" <<'EOF'
#!/bin/sh
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH HOME=/root LC_ALL=C
mount -t proc proc /proc 2>/dev/null
mount -t sysfs sys /sys 2>/dev/null
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/shm /run /tmp
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -o remount,rw /
modprobe 9pnet_virtio
modprobe 9p
mkdir -p /mnt
mount -t 9p -o trans=virtio,version=9p2000.L share /mnt
sh /mnt/job.sh >/mnt/out.log 2>&1
echo "guest: job exit status $?" >>/mnt/out.log
umount /mnt
sync
echo o >/proc/sysrq-trigger
sleep 60
EOF
chmod 755 "$root/mq-bench-init"

files=$(mktemp)
share=
# Whatever ends the run, the share and the 8 GB image do not stay.
trap 'rm -rf "$files" "$share" "$vm/disk.img"' EXIT
trap 'exit 130' INT TERM
git -C "$top" ls-files -z >"$files" || die "$top: not a git checkout (its tracked files are what the guest runs)"
rm -rf "$root/root/mq"
mkdir -p "$root/root/mq"
(cd "$top" && tar --null -T "$files" -cf -) | tar -xf - -C "$root/root/mq" ||
    die "copying the tracked files to the guest's root failed"
chroot "$root" sh -c 'cd /root/mq && make -s all bench/floor bench/spawn bench/true-c' \
    >"$vm/build.log" 2>&1 || die "the build in the guest's root failed: see $vm/build.log"

share=$(mktemp -d "$vm/share.XXXXXX")
cat >"$share/job.sh" <<EOF
cd /root/mq
echo "guest: \$(nproc) CPUs, kernel \$(uname -r), emulated"
s=0
BENCH_ONLY="$only" BENCH_RUNS="$runs" BENCH_JOBS="$jobs" BENCH_FS="$fslist" \
    sh bench/bench.sh >/tmp/bench.out 2>&1 || s=\$?
grep -v ', run [0-9]* of ' /tmp/bench.out
exit \$s
EOF
echo "emulated.sh: making the disk image" >&2
rm -f "$vm/disk.img"
truncate -s 8G "$vm/disk.img"
mkfs.ext4 -q -F -d "$root" "$vm/disk.img"
echo "emulated.sh: the guest runs: $only ($runs runs, up to $secs s)" >&2
status=0
timeout -k 10 "$secs" qemu-system-x86_64 -accel tcg,thread=multi -cpu max \
    -smp 2 -m 4096 -kernel "$kernel" -initrd "$initrd" \
    -append "root=/dev/vda rw console=ttyS0 quiet init=/mq-bench-init" \
    -drive "file=$vm/disk.img,format=raw,if=virtio" \
    -virtfs "local,path=$share,mount_tag=share,security_model=none" \
    -nographic -no-reboot >"$vm/console.log" 2>&1 || status=$?
[ "$status" -ne 124 ] && [ "$status" -ne 137 ] ||
    echo "emulated.sh: the guest did not end within $secs s (BENCH_VM_SECS)" >&2
[ -s "$share/out.log" ] || die "the guest wrote nothing (qemu: $status): see $vm/console.log"
cat "$share/out.log"
grep -q '^guest: job exit status 0$' "$share/out.log" || status=1
[ "$status" -eq 0 ] || die "the guest's run failed (status $status)"
