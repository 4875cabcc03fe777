# SPDX-License-Identifier: GPL-2.0-only
# Shared by bench/run/run.sh and bench/fsync/run.sh (sourced with NAME
# set): root and the tools checked, a work directory on tmpfs with a
# mount point and a cleanup that unmounts and detaches, timing helpers,
# and bench/run/kdrive built (the kernel's side of a script).
[ "$(id -u)" = 0 ] || { echo "bench/$NAME needs root (loop mounts)"; exit 1; }
"$TL" run --help > /dev/null 2>&1 || { echo "$TL has no run command"; exit 1; }
for c in mkfs.btrfs btrfs python3 cc; do
	command -v $c > /dev/null || { echo "bench/$NAME needs $c"; exit 1; }
done
base=/dev/shm
[ "$(stat -f -c %T $base 2>/dev/null)" = tmpfs ] || base=${TMPDIR:-/tmp}
work=$(mktemp -d "$base/tlogctl-bench-$NAME.XXXXXX")
mnt="$work/mnt"
mkdir -p "$mnt"
cleanup() {
	local f l
	mountpoint -q "$mnt" && umount "$mnt"
	for f in "$work"/*.img; do
		[ -e "$f" ] || continue
		for l in $(losetup -n -O NAME -j "$f"); do losetup -d "$l" || true; done
	done
	rm -rf "$work"
}
trap cleanup EXIT

now_ns() { date +%s%N; }
ms_since() { awk -v d=$(($(now_ns) - $1)) 'BEGIN { printf "%.1f\n", d / 1e6 }'; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b < 0.01) b = 0.01; printf "%.2f", a / b }'; }

# the driver, on the parser tlogctl run uses
cc -O2 -std=gnu11 -ffunction-sections -Wl,--gc-sections -I"$TOP/common" -I"$TOP" \
	-o "$work/kdrive" "$TOP/bench/run/kdrive.c" "$TOP/common/workload.c" "$TOP/common/strutil.c"
