#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tlogctl run against the kernel: one metadata-heavy workload of NOPS
# (40000) operations (bench/run/gen.py: creates, small writes, xattrs,
# renames, links, unlinks, a few mkdirs; deterministic), applied to a
# fresh copy of one image on tmpfs (/dev/shm) by the kernel -- loop mount,
# bench/run/kdrive (the same script parsed by common/workload.c, issued as
# system calls), umount, all timed -- and by "tlogctl run --commit" on
# another copy (one process, timed).  Medians of RUNS (3) runs and the
# ratio kernel / tlogctl (above 1: tlogctl is faster).  Before timing, the
# two results must agree: the same refusals, btrfs check clean, the same
# tree (tests/tools/treecmp.py walk: inode numbers, names, readdir order,
# sizes, contents, xattrs...), so that no run can pass by doing nothing.
#
#   bench/run/run.sh            (needs root: loop mounts)
#   RUNS=3 NOPS=40000 SIZE=1G MKFS_OPTS=""
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
TL=${TLOGCTL:-$TOP/tlogctl}
TREECMP=$TOP/tests/tools/treecmp.py
RUNS=${RUNS:-3}
NOPS=${NOPS:-40000}
SIZE=${SIZE:-1G}
MKFS_OPTS=${MKFS_OPTS:-}
NAME=run
. "$TOP/bench/run/lib.sh"
python3 "$TOP/bench/run/gen.py" "$NOPS" > "$work/w.tlw"
script="$work/w.tlw"
truncate -s "$SIZE" "$work/base.img"
# shellcheck disable=SC2086
mkfs.btrfs -q -f $MKFS_OPTS "$work/base.img" > /dev/null
echo "workload: $(grep -vc '^#' "$script") operations ($(awk '!/^#/{print $1}' "$script" | sort | uniq -c |
	awk '{printf "%s%s %s", sep, $2, $1; sep=", "}')); image $SIZE on $base${MKFS_OPTS:+, mkfs $MKFS_OPTS}"

kernel_run() {	# IMG ERR
	mount -o loop "$1" "$mnt"
	"$work/kdrive" "$script" "$mnt" 2> "$2"
	umount "$mnt"
}

# the results must agree before anything is timed
cp --sparse=always "$work/base.img" "$work/k.img"
cp --sparse=always "$work/base.img" "$work/t.img"
kernel_run "$work/k.img" "$work/k.err"
"$TL" run --commit "$work/t.img" "$script" 2> "$work/t.err"
diff -u --label kernel --label tlogctl "$work/k.err" "$work/t.err" ||
	{ echo "the refused operations differ"; exit 1; }
btrfs check --readonly "$work/t.img" > "$work/check.out" 2>&1 ||
	{ tail -20 "$work/check.out"; echo "btrfs check finds errors in tlogctl's result"; exit 1; }
mount -o loop,ro "$work/k.img" "$mnt"
python3 "$TREECMP" walk "$mnt" "$work/k.json"
umount "$mnt"
mount -o loop,ro "$work/t.img" "$mnt"
python3 "$TREECMP" walk "$mnt" "$work/t.json" --diff --labels kernel,tlogctl "$work/k.json" > "$work/tree.diff" ||
	{ umount "$mnt"; head -40 "$work/tree.diff"; echo "tlogctl's result differs from the kernel's"; exit 1; }
umount "$mnt"
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/k.json")
echo "results agree: $n paths, $(wc -l < "$work/k.err") refused operations on both sides"
rm -f "$work/k.img" "$work/t.img"

: > "$work/k.ms"
: > "$work/t.ms"
for i in $(seq "$RUNS"); do
	cp --sparse=always "$work/base.img" "$work/k.img"
	sync
	t0=$(now_ns)
	kernel_run "$work/k.img" /dev/null
	ms_since "$t0" >> "$work/k.ms"
	rm -f "$work/k.img"
	cp --sparse=always "$work/base.img" "$work/t.img"
	sync
	t0=$(now_ns)
	"$TL" run --commit "$work/t.img" "$script" 2> /dev/null
	ms_since "$t0" >> "$work/t.ms"
	rm -f "$work/t.img"
	echo "run $i: kernel $(tail -1 "$work/k.ms") ms, tlogctl $(tail -1 "$work/t.ms") ms"
done
k=$(median < "$work/k.ms")
t=$(median < "$work/t.ms")
echo "median of $RUNS: kernel (mount + kdrive + umount) $k ms, tlogctl run --commit $t ms, ratio $(ratio "$k" "$t")x"
