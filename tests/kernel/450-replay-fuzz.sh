#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# replay-log and the log view of queries on damaged logs whose checksums
# are still right: random bytes of the log tree leaves (item headers and
# item data) are changed and the block checksum recomputed, in every copy,
# so the damage reaches the replay itself instead of being caught by the
# checksum.  Whatever the damage: no crash, no hang, no sanitizer report;
# exit 0 or one "tlogctl: ERROR:" line; on error the image is unchanged.
# TLOG_SEED picks the damage (default 1000, so CI is repeatable), TLOG_FUZZ_RUNS
# how much (200).
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs python3 xfs_io setfattr
need_mount

runs=${TLOG_FUZZ_RUNS:-200}
seed=${TLOG_SEED:-1000}
echo "seed $seed, $runs damaged logs"

# a log with a bit of everything: new files with data, a rename over a
# file, hard links, xattrs, a directory fsync with removed entries, a
# truncate and a punched hole
img="$TMP/k.img"
mnt="$TMP/mnt"
make_image "$img" 256M
mount_image "$img" "$mnt" commit=3600
mkdir "$mnt/d" "$mnt/e"
for i in 1 2 3 4 5 6; do echo "committed $i" > "$mnt/d/old$i"; done
xfs_io -f -c "pwrite 0 256k" "$mnt/d/big" > /dev/null
sync
xfs_io -f -c "pwrite 0 64k" -c "pwrite 128k 16k" "$mnt/d/new" > /dev/null
setfattr -n user.a -v 1 "$mnt/d/new" || fail "setfattr on the mount"
ln "$mnt/d/new" "$mnt/e/link"
mv "$mnt/d/old1" "$mnt/d/old2"
rm "$mnt/d/old3"
mv "$mnt/d/old4" "$mnt/e/moved"
xfs_io -c "truncate 100k" -c "fpunch 8k 8k" "$mnt/d/big"
echo tiny > "$mnt/e/inline"
for f in d/new d/big e/inline e d; do xfs_io -c fsync "$mnt/$f"; done
cp --sparse=always "$img" "$TMP/crash.img"
umount_image "$mnt"
[ "$(tl dump-super "$TMP/crash.img" | awk '$1 == "log_root" {print $2}')" != 0 ] ||
	fail "the kernel left no log"
tl replay-log --dry-run "$TMP/crash.img" > /dev/null || fail "the undamaged log does not replay"

# the physical copies of every log tree leaf, from dump-tree's JSON
tl dump-tree -t log --format json "$TMP/crash.img" > "$TMP/log.json" || fail "dump-tree -t log"
tl dump-tree -t chunk --format json "$TMP/crash.img" > "$TMP/chunk.json" || fail "dump-tree -t chunk"
python3 - "$TMP/log.json" "$TMP/chunk.json" > "$TMP/leaves" <<'PY' || fail "cannot map the log leaves"
import json, sys
log, chunk = (json.load(open(p)) for p in sys.argv[1:3])
chunks = []
for t in chunk["trees"]:
    for b in t["blocks"]:
        for it in b.get("items", []):
            if it["key"]["type"] == 228:
                chunks.append((it["key"]["offset"], it["data"]["length"],
                               [s["offset"] for s in it["data"]["stripes"]]))
for t in log["trees"]:
    for b in t["blocks"]:
        if b.get("level", 0) != 0:
            continue
        for start, length, stripes in chunks:
            if start <= b["bytenr"] < start + length:
                print(b["bytenr"], " ".join(str(s + b["bytenr"] - start) for s in stripes))
PY
[ -s "$TMP/leaves" ] || fail "no log leaves found"
nodesize=$(tl dump-super "$TMP/crash.img" | awk '$1 == "nodesize" {print $2}')

# damage IMG SEED: change 1-8 bytes of one log leaf past its header, fix the csum
damage() {
	python3 - "$1" "$2" "$TMP/leaves" "$nodesize" <<'PY'
import random, sys
img, seed, leaves, nodesize = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = random.Random(seed)
table = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    table.append(c)
def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
rows = [l.split() for l in open(leaves) if l.strip()]
bytenr, *copies = rng.choice(rows)
with open(img, "r+b") as f:
    f.seek(int(copies[0]))
    blk = bytearray(f.read(nodesize))
    nritems = int.from_bytes(blk[96:100], "little")
    # mostly item headers and the item data they point at, sometimes anywhere
    hdr_end = 101 + 25 * nritems
    for _ in range(rng.randint(1, 8)):
        if rng.random() < 0.5:
            pos = rng.randrange(101, max(hdr_end, 102))
        else:
            pos = rng.randrange(101, nodesize)
        blk[pos] = rng.choice([0, 0xFF, rng.randrange(256), blk[pos] ^ (1 << rng.randrange(8))])
    blk[0:32] = crc32c(blk[32:]).to_bytes(4, "little") + bytes(28)
    for off in copies:
        f.seek(int(off))
        f.write(blk)
PY
}

bad=0 errors=0 replayed=0
for i in $(seq 1 "$runs"); do
	cp --sparse=always "$TMP/crash.img" "$TMP/f.img"
	damage "$TMP/f.img" $((seed + i)) || fail "cannot damage the image"
	cp --sparse=always "$TMP/f.img" "$TMP/f.orig"
	# the log view of a query, then the replay itself
	run_nocrash "$TMP/q" "$TLOGCTL" ls "$TMP/f.img" /d || { bad=1; echo "run $i: ls crashed"; break; }
	run_nocrash "$TMP/r" "$TLOGCTL" replay-log "$TMP/f.img" || { bad=1; echo "run $i: replay-log crashed"; break; }
	rc=$(cat "$TMP/r.rc")
	case $rc in
	0)	replayed=$((replayed + 1)) ;;
	1)	errors=$((errors + 1))
		[ "$(grep -c '^tlogctl: ERROR:' "$TMP/r.err")" = 1 ] || {
			cat "$TMP/r.err"; bad=1; echo "run $i: not one error line"; break; }
		cmp -s "$TMP/f.img" "$TMP/f.orig" || { bad=1; echo "run $i: failed replay changed the image"; break; } ;;
	*)	cat "$TMP/r.err"; bad=1; echo "run $i: exit $rc"; break ;;
	esac
done
[ $bad = 0 ] || fail "seed $seed, run $i (TLOG_SEED=$seed to repeat)"
echo "$replayed replayed, $errors refused with an error"
exit 0
