#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# fsync logging of tlogctl run against the kernel: one dbench-like
# workload (bench/fsync/gen.py: NFILES (3000) files created, written and
# fsynced, renames, links and unlinks between the fsyncs, directory
# fsyncs; deterministic) applied to copies of one image on tmpfs
# (/dev/shm) by the kernel - loop mount, bench/run/kdrive issuing the
# system calls, umount - and by "tlogctl run" (no --commit: the image
# is left as a power cut after the last fsync would leave it), with the
# logger's optimisations and without them (--no-log-optimizations).
#
# Before anything is timed the results must agree: the kernel's image
# copied while still mounted and tlogctl's are both mounted by the
# kernel, which replays each log, and the trees must be the same
# (tests/tools/treecmp.py); the two tlogctl runs must write the same log
# (dump-log).  Then RUNS (3) timed runs of each; medians, operations per
# second and the ratios (above 1: tlogctl is faster), and the counters
# of the two tlogctl runs side by side.
#
#   bench/fsync/run.sh           (needs root: loop mounts)
#   RUNS=3 NFILES=3000 SIZE=4G MKFS_OPTS=""
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
TL=${TLOGCTL:-$TOP/tlogctl}
TREECMP=$TOP/tests/tools/treecmp.py
RUNS=${RUNS:-3}
NFILES=${NFILES:-3000}
SIZE=${SIZE:-4G}
MKFS_OPTS=${MKFS_OPTS:-}
NAME=fsync
. "$TOP/bench/run/lib.sh"
per_sec() { awk -v n="$1" -v ms="$2" 'BEGIN { printf "%.0f", n / (ms / 1000) }'; }
python3 "$TOP/bench/fsync/gen.py" "$NFILES" > "$work/w.tlw"
script="$work/w.tlw"
nops=$(grep -vc '^#' "$script")
truncate -s "$SIZE" "$work/base.img"
# shellcheck disable=SC2086
mkfs.btrfs -q -f $MKFS_OPTS "$work/base.img" > /dev/null
echo "workload: $nops operations ($(awk '!/^#/{print $1}' "$script" | sort | uniq -c |
	awk '{printf "%s%s %s", sep, $2, $1; sep=", "}')); image $SIZE on $base${MKFS_OPTS:+, mkfs $MKFS_OPTS}"

# walk IMG JSON: mount (the kernel replays the log), walk, unmount
walk() {
	mount -o loop "$1" "$mnt"
	python3 "$TREECMP" walk "$mnt" "$2" > /dev/null
	umount "$mnt"
}

# the results must agree before anything is timed
cp --sparse=always "$work/base.img" "$work/k.img"
mount -o loop,commit=3600 "$work/k.img" "$mnt"
"$work/kdrive" "$script" "$mnt" 2> "$work/k.err"
cp --sparse=always "$work/k.img" "$work/kcrash.img"
umount "$mnt"
for v in on off; do
	cp --sparse=always "$work/base.img" "$work/t-$v.img"
	opt=; [ $v = off ] && opt=--no-log-optimizations
	"$TL" run $opt --stats --format json "$work/t-$v.img" "$script" > "$work/t-$v.json" 2> "$work/t-$v.err"
	diff -u --label kernel --label tlogctl "$work/k.err" "$work/t-$v.err" ||
		{ echo "the refused operations differ"; exit 1; }
	"$TL" dump-log "$work/t-$v.img" | grep -v '^log root tree\|^log tree of' > "$work/t-$v.log"
done
cmp -s "$work/t-on.log" "$work/t-off.log" ||
	{ diff "$work/t-on.log" "$work/t-off.log" | head; echo "the optimisations change the log"; exit 1; }
walk "$work/kcrash.img" "$work/k.json"
walk "$work/t-on.img" "$work/t.json"
python3 "$TREECMP" diff --labels kernel,tlogctl "$work/k.json" "$work/t.json" > "$work/tree.diff" ||
	{ head -40 "$work/tree.diff"; echo "after a power cut and the kernel's replay, tlogctl's tree differs from the kernel's"; exit 1; }
btrfs check --readonly "$work/t-on.img" > "$work/check.out" 2>&1 ||
	{ tail -20 "$work/check.out"; echo "btrfs check finds errors after the replay of tlogctl's log"; exit 1; }
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/k.json")
echo "results agree after a power cut and the kernel's log replay: $n paths; the two tlogctl logs are the same"
rm -f "$work"/k.img "$work"/kcrash.img "$work"/t-on.img "$work"/t-off.img

: > "$work/k.ms"; : > "$work/kd.ms"; : > "$work/on.ms"; : > "$work/off.ms"
for i in $(seq "$RUNS"); do
	cp --sparse=always "$work/base.img" "$work/k.img"
	sync
	t0=$(now_ns)
	mount -o loop "$work/k.img" "$mnt"
	t1=$(now_ns)
	"$work/kdrive" "$script" "$mnt" 2> /dev/null
	ms_since "$t1" >> "$work/kd.ms"
	umount "$mnt"
	ms_since "$t0" >> "$work/k.ms"
	rm -f "$work/k.img"
	for v in on off; do
		opt=; [ $v = off ] && opt=--no-log-optimizations
		cp --sparse=always "$work/base.img" "$work/t.img"
		sync
		t0=$(now_ns)
		"$TL" run $opt "$work/t.img" "$script" 2> /dev/null
		ms_since "$t0" >> "$work/$v.ms"
		rm -f "$work/t.img"
	done
	echo "run $i: kernel $(tail -1 "$work/k.ms") ms (system calls $(tail -1 "$work/kd.ms") ms)," \
		"tlogctl $(tail -1 "$work/on.ms") ms, without the optimisations $(tail -1 "$work/off.ms") ms"
done
k=$(median < "$work/k.ms"); kd=$(median < "$work/kd.ms")
on=$(median < "$work/on.ms"); off=$(median < "$work/off.ms")
echo "median of $RUNS ($nops operations):"
echo "  kernel, mount + system calls + umount: $k ms, $(per_sec "$nops" "$k") ops/s"
echo "  kernel, the system calls alone:        $kd ms, $(per_sec "$nops" "$kd") ops/s"
echo "  tlogctl run:                           $on ms, $(per_sec "$nops" "$on") ops/s;" \
	"ratio $(ratio "$k" "$on")x (system calls alone: $(ratio "$kd" "$on")x)"
echo "  tlogctl run --no-log-optimizations:    $off ms, $(per_sec "$nops" "$off") ops/s"
python3 - "$work/t-on.json" "$work/t-off.json" <<'PY'
import json, sys
on, off = (json.load(open(f)) for f in sys.argv[1:3])
keys = ["inodes_logged", "items_copied", "log_searches", "deletion_searches",
        "deletion_searches_first_logging", "copy_buffer_allocations",
        "inode_items_flushed_for_log", "log_syncs", "log_blocks_written",
        "log_blocks_verified", "full_commits"]
print("  %-32s %12s %12s" % ("counter", "optimised", "not"))
for k in keys:
    print("  %-32s %12d %12d" % (k, on.get(k, 0), off.get(k, 0)))
reasons = {}
for r in on.get("full_commit_reasons", []):
    reasons[r] = reasons.get(r, 0) + 1
for r, c in sorted(reasons.items()):
    print("  full commit: %s (%d)" % (r, c))
PY
