#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# fiemap, seek, cat and export on randomly built files against the kernel.
# A seeded generator (TLOG_SEED repeats a run) builds at least 40 files with
# random writes, fallocate (with and without keep-size), hole punches,
# truncates up and down, reflinks, inline-sized files, writes far out (up to
# 1 TiB), snapshots modified afterwards (of a subvolume and of the top
# level), a deleted snapshot, compressed writes on a compress-force=zstd mount,
# with random fsync/sync in between.  On a read-only mount the kernel's
# FIEMAP, SEEK_DATA/SEEK_HOLE map, some range and single-seek probes and
# sha256 of every file are recorded; then tlogctl must give exactly the
# same answers on the unmounted image, cat must give the same bytes, and
# export must write the same bytes without filling the holes.
. "$(dirname "$0")/../common.sh"
need_cmd python3 gcc xfs_io mkfs.btrfs btrfs sha256sum
need_mount

FIX="$TOP/tests/fixtures/fiemap"
"$TLOGCTL" fiemap --help >/dev/null 2>&1 || fail "tlogctl has no fiemap command"
"$TLOGCTL" seek --help >/dev/null 2>&1 || fail "tlogctl has no seek command"
"$TLOGCTL" cat --help >/dev/null 2>&1 || fail "tlogctl has no cat command"
"$TLOGCTL" export --help >/dev/null 2>&1 || fail "tlogctl has no export command"

# The seed fixes the operations; the kernel's allocation (physical
# addresses, where writeback splits extents) may still vary a little.
SEED=${TLOG_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "seed $SEED (rerun with TLOG_SEED=$SEED)"

KPROBE=$TMP/kprobe
gcc -O2 -Wall -o "$KPROBE" "$TOP/tests/kernel/helpers/kprobe.c" || fail "cannot build kprobe"

img=$TMP/R.img
mnt=$TMP/mnt
out=$TMP/out
mkdir -p "$out"

# ---------------------------------------------------------------------------
# The generator: gen.py PHASE MNT SEED OPSLOG.  Phase "plain" runs on a
# default mount, phase "zstd" on a compress-force=zstd mount.  Every command
# it runs is appended to OPSLOG (per file, to explain a mismatch).
# ---------------------------------------------------------------------------
cat > "$TMP/gen.py" <<'PY'
import json, os, random, shlex, subprocess, sys

phase, mnt, seed, opslog = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rnd = random.Random("%d-%s" % (seed, phase))
K = 4096
log = json.load(open(opslog)) if os.path.exists(opslog) else {}

def sh(*args, path=None):
    """Run a command in the mount point; returns True if it worked."""
    p = subprocess.run(args, cwd=mnt, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if path:
        log.setdefault(path, []).append(shlex.join(args) + ("" if p.returncode == 0 else
                                                            "   # failed: " + p.stderr.strip()))
    return p.returncode == 0

def xfs_io(path, *cmds, create=False):
    args = ["xfs_io"] + (["-f"] if create else [])
    for c in cmds:
        args += ["-c", c]
    return sh(*args, path, path=path)

def size(path):
    return os.stat(os.path.join(mnt, path)).st_size

FAR = ("far0", "sv/far1")  # files that also get writes far out (64-bit offsets)
far = False

def offset(limit=4 << 20):
    if far and rnd.random() < 0.3:
        limit = 1 << 40
    o = rnd.randrange(0, limit)
    return o - o % K if rnd.random() < 0.6 else o

def length(limit=512 << 10):
    n = rnd.randrange(1, limit)
    return max(K, n - n % K) if rnd.random() < 0.6 else n

def random_op(path, others):
    global far
    far = path in FAR
    op = rnd.choice(["pwrite"] * 4 + ["falloc", "falloc -k", "fpunch", "truncate", "reflink"])
    if op == "pwrite":
        xfs_io(path, "pwrite -S 0x%02x %d %d" % (rnd.randrange(1, 256), offset(), length()))
    elif op.startswith("falloc"):
        xfs_io(path, "%s %d %d" % (op, offset(), length(1 << 20)))
    elif op == "fpunch":
        xfs_io(path, "fpunch %d %d" % (offset(max(size(path), K)), length()))
    elif op == "truncate":
        s = size(path)
        new = rnd.randrange(0, s + 1) if s and rnd.random() < 0.5 else s + length(2 << 20)
        xfs_io(path, "truncate %d" % new)
    else:
        src = rnd.choice(others)
        s = size(src) // K * K
        if s < K:
            return
        so = rnd.randrange(0, s, K)
        n = rnd.randrange(K, s - so + 1, K)
        do = rnd.randrange(0, 4 << 20, K)
        if src == path and so < do + n and do < so + n:
            return  # reflink ranges of one file must not overlap
        xfs_io(path, "reflink %s %d %d %d" % (src, so, do, n))

def maybe_sync(path):
    r = rnd.random()
    if r < 0.3:
        xfs_io(path, "fsync")
    elif r < 0.38:
        sh("sync", path=path)

def populate(paths, rounds, others):
    for _ in range(rounds):
        path = rnd.choice(paths)
        random_op(path, others)
        maybe_sync(path)

def inline(path):
    xfs_io(path, "pwrite -S 0x%02x 0 %d" % (rnd.randrange(1, 256), rnd.randrange(1, 2048)), create=True)
    maybe_sync(path)

if phase == "plain":
    sh("btrfs", "subvolume", "create", "sv", path="sv")
    top = ["t%02d" % i for i in range(16)] + ["far0"]
    sub = ["sv/s%02d" % i for i in range(16)] + ["sv/far1"]
    for p in top + sub:
        xfs_io(p, "pwrite -S 0x%02x %d %d" % (rnd.randrange(1, 256), offset(), length()), create=True)
    for p in ("t16", "t17", "sv/s16", "sv/s17"):
        inline(p)
    populate(top + sub, 240, top + sub)
    sh("sync")
    sh("btrfs", "subvolume", "snapshot", "sv", "snap", path="snap")
    snap = ["snap/s%02d" % i for i in range(16)]
    # after the snapshot: some files change on either side, some stay shared
    populate(sub[:8] + snap[8:], 120, top + sub + snap)
    # a snapshot of the top level (its files become shared through tree
    # blocks too), and a snapshot deleted before unmounting: sv keeps the
    # last_snapshot generation, but nothing shares its blocks any more
    sh("btrfs", "subvolume", "snapshot", ".", "topsnap", path="topsnap")
    populate(top[:8], 40, top)
    sh("btrfs", "subvolume", "snapshot", "sv", "gone", path="gone")
    populate(sub[8:], 40, sub)
    sh("sync")
    sh("btrfs", "subvolume", "delete", "gone", path="gone")
elif phase == "zstd":
    comp = ["z%02d" % i for i in range(8)]
    for p in comp:
        xfs_io(p, "pwrite -S 0x%02x %d %d" % (rnd.randrange(1, 256), offset(), length(1 << 20)), create=True)
    for p in ("z08", "sv/z09"):
        inline(p)
    old = ["t%02d" % i for i in range(4)] + ["sv/s%02d" % i for i in range(4)]
    populate(comp + old, 100, comp + old)
json.dump(log, open(opslog, "w"), indent=1)
cmds = [c for cs in log.values() for c in cs]
print("%s phase: %d commands so far, %d failed" %
      (phase, len(cmds), sum("# failed" in c for c in cmds)))
PY

# ---------------------------------------------------------------------------
# Build, then record the kernel's answers on a read-only mount
# ---------------------------------------------------------------------------
# the seed also picks the format: no-holes or explicit hole items, and
# 4 KiB nodes (many leaves, so snapshots share tree blocks) or 16 KiB
mkfs_opts=()
[ $((SEED % 2)) = 1 ] && mkfs_opts+=(-O ^no-holes)
[ $((SEED / 2 % 2)) = 1 ] && mkfs_opts+=(-n 4096)
echo "mkfs.btrfs ${mkfs_opts[*]:-(defaults)}"
make_image "$img" 1G "${mkfs_opts[@]}"
mount_image "$img" "$mnt"
python3 "$TMP/gen.py" plain "$mnt" "$SEED" "$TMP/ops.json" || fail "generator (plain phase)"
umount_image "$mnt"
mount_image "$img" "$mnt" compress-force=zstd
python3 "$TMP/gen.py" zstd "$mnt" "$SEED" "$TMP/ops.json" || fail "generator (zstd phase)"
umount_image "$mnt"

mount_image "$img" "$mnt" ro
nfiles=$(find "$mnt" -type f | wc -l)
[ "$nfiles" -ge 40 ] || fail "the generator made only $nfiles files"
# per file: two random fiemap ranges and two single-seek offsets
probes=$(python3 - "$mnt" "$SEED" <<'PY'
import json, os, random, sys
mnt, seed = sys.argv[1], int(sys.argv[2])
rnd = random.Random(seed)
ranges, seeks = [], []
for top, dirs, names in os.walk(mnt):
    dirs.sort()
    for n in sorted(names):
        rel = os.path.relpath(os.path.join(top, n), mnt)
        s = os.stat(os.path.join(mnt, rel)).st_size
        for _ in range(2):
            start = rnd.randrange(0, s + 65536)
            ranges.append("%s %d %s" % (rel, start, rnd.choice(["~", str(rnd.randrange(1, 1 << 20))])))
        seeks.append("%s %d %d" % (rel, rnd.randrange(0, s + 4096), rnd.randrange(0, s + 4096)))
print(json.dumps([ranges, seeks]))
PY
) || fail "choosing the probes"
python3 "$FIX/collect.py" "$mnt" "$KPROBE" "$out/R.json" "{\"case\":\"random seed $SEED\"}" \
	"$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])[0]))' "$probes")" \
	"$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])[1]))' "$probes")" ||
	fail "recording the kernel's answers"
umount_image "$mnt"
python3 - "$out/R.json" <<'PY'
import collections, json, sys
files = json.load(open(sys.argv[1]))["files"]
flags = collections.Counter(x["flags"] & ~1 for e in files.values() for x in e["fiemap"]["extents"])
print("%d files, %d extents; extents by flags (LAST ignored): %s" % (
    len(files), sum(flags.values()), ", ".join("0x%x: %d" % kv for kv in sorted(flags.items()))))
print("largest: " + ", ".join("%s %d" % (p, e["seekmap"]["size"]) for p, e in
                            sorted(files.items(), key=lambda kv: -kv[1]["seekmap"]["size"])[:3]))
PY

# ---------------------------------------------------------------------------
# tlogctl against the kernel
# ---------------------------------------------------------------------------
bad=0
explained=0
explain() {  # the commands that built one file (and, for a snapshot's copy, its origin)
	explained=$((explained + 1))
	[ $explained -le 5 ] || return 0
	python3 - "$TMP/ops.json" "$1" <<'PY'
import json, sys
log, path = json.load(open(sys.argv[1])), sys.argv[2].lstrip("/")
names = [path]
if path.startswith("snap/"):
    names.append("sv/" + path[5:])
elif path.startswith("topsnap/"):
    names.append(path[8:])
for n in names:
    for c in log.get(n, []):
        print("      %s" % c)
PY
}

ln -s "$img" "$out/R.img"
if ! TMPDIR="$TMP" python3 "$FIX/check-fixtures.py" "$TLOGCTL" "$out" R > "$TMP/check.out"; then
	cat "$TMP/check.out"
	echo "how the files that differ were made (seed $SEED):"
	sed -n 's/^MISMATCH R \([^:]*\):.*/\1/p' "$TMP/check.out" | sort -u > "$TMP/differ"
	while read -r p; do
		echo "   $p"; explain "$p"
	done < "$TMP/differ"
	bad=1
else
	tail -1 "$TMP/check.out"
fi

# cat and export: the same bytes; export keeps holes.  Files too large to
# read whole (the far-out ones) have no sha256: cat skips them, export is
# checked on the bytes of the kernel's data segments.
python3 -c 'import json,sys
for p, e in json.load(open(sys.argv[1]))["files"].items():
    print(p, e["sha256"], e["data_sha256"], e["seekmap"]["size"], e["blocks"] * 512)' "$out/R.json" > "$TMP/files"
n=0 skipped=0
while read -r p sum dsum size alloc; do
	if [ "$sum" = None ]; then
		skipped=$((skipped + 1))
		continue
	fi
	got=$(tl cat "$img" "$p" </dev/null | sha256sum | cut -d' ' -f1)
	rc=${PIPESTATUS[0]}
	if [ "$rc" != 0 ] || [ "$got" != "$sum" ]; then
		echo "MISMATCH cat $p: exit $rc, sha256 $got, kernel $sum"
		explain "$p"; bad=1
	fi
	n=$((n + 1))
done < "$TMP/files"
echo "cat: $n files compared ($skipped too large to read whole)"
n=0
dest=$TMP/export.out
while read -r p sum dsum size alloc; do
	rm -f "$dest"
	if ! tl export "$img" "$p" "$dest" </dev/null > "$TMP/export.log" 2>&1; then
		echo "MISMATCH export $p: failed: $(head -3 "$TMP/export.log")"
		bad=1; continue
	fi
	used=$(du --block-size=1 "$dest" | cut -f1)
	if [ "$sum" != None ]; then
		got=$(sha256sum < "$dest" | cut -d' ' -f1)
	else
		got=$(python3 "$FIX/collect.py" --data-sha256 "$dest" "$out/R.json" "$p")
		sum=$dsum
	fi
	if [ "$got" != "$sum" ]; then
		echo "MISMATCH export $p: sha256 $got, kernel $sum"
		explain "$p"; bad=1
	elif [ "$(stat -c %s "$dest")" != "$size" ]; then
		echo "MISMATCH export $p: size $(stat -c %s "$dest"), kernel $size"
		bad=1
	elif [ "$used" -gt $((alloc + 1048576)) ]; then
		echo "MISMATCH export $p: $used bytes allocated, the original has $alloc (holes filled?)"
		explain "$p"; bad=1
	fi
	n=$((n + 1))
done < "$TMP/files"
echo "export: $n files compared"

[ $bad = 0 ] || fail "tlogctl differs from the kernel on random files (seed $SEED; rerun with TLOG_SEED=$SEED)"
