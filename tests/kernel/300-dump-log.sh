#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# dump-log on crash images (fsync, copy before unmount): the logged names,
# xattrs, extents, holes and directory ranges are reported, and the
# (inode, key type) pairs and file extents agree with btrfs-progs' dump of
# the log trees.  A cleanly unmounted image has no log.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs python3 xfs_io
need_mount

img="$TMP/k.img"
mnt="$TMP/mnt"
make_image "$img" 512M
mount_image "$img" "$mnt" commit=3600
mkdir "$mnt/d" "$mnt/dd"
for f in a b c; do echo "$f" > "$mnt/d/$f"; done
touch "$mnt/dd/x" "$mnt/dd/y"
echo hl > "$mnt/hl"
echo xf > "$mnt/xf"
xfs_io -f -c "pwrite -q 0 16k" "$mnt/punch"
btrfs -q subvolume create "$mnt/sv" >/dev/null
sync

# after the commit: changes that only the log will hold
python3 - "$mnt" <<'PY'
import os, sys
m = sys.argv[1]
def fsync(path):
    fd = os.open(os.path.join(m, path), os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
fd = os.open(os.path.join(m, "newf"), os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"n" * 100000)
os.fsync(fd)
os.close(fd)
os.rename(os.path.join(m, "d", "a"), os.path.join(m, "d", "a2"))
fsync("d")
os.setxattr(os.path.join(m, "xf"), "user.tag", b"v")
fsync("xf")
os.link(os.path.join(m, "hl"), os.path.join(m, "d", "hl2"))
fsync("hl")
os.unlink(os.path.join(m, "dd", "x"))
open(os.path.join(m, "dd", "z"), "w").close()
fsync("dd")
with open(os.path.join(m, "sv", "svf"), "w") as f:
    f.write("in a subvolume")
    f.flush()
    os.fsync(f.fileno())
PY
xfs_io -c "fpunch 4k 4k" -c fsync "$mnt/punch"
cp --sparse=always "$img" "$TMP/crash.img"
umount_image "$mnt"

# a cleanly unmounted image has no log
tl dump-log "$img" > "$TMP/clean" || fail "dump-log of a clean image"
[ "$(cat "$TMP/clean")" = "no log tree" ] || fail "clean image: $(cat "$TMP/clean")"
tl dump-log --format json "$img" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j == {"log_root": 0, "trees": []}, j
' || fail "clean image JSON"

crash="$TMP/crash.img"
tl dump-log "$crash" > "$TMP/text" || fail "dump-log of the crash image"
for n in newf a2 hl2 z svf; do
	grep -q "name \"$n\" in directory" "$TMP/text" || { cat "$TMP/text"; fail "logged name $n not shown"; }
done
grep -q 'xattr "user.tag"' "$TMP/text" || fail "logged xattr not shown"
grep -q 'index range \[' "$TMP/text" || fail "no directory index range shown"
grep -q '^log tree of subvolume 256:' "$TMP/text" || fail "no log tree for the subvolume"

tl dump-log --format json "$crash" > "$TMP/json" || fail "dump-log --format json"
python3 - "$TMP/json" <<'PY' || fail "JSON facts"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["log_root"] > 0 and j["generation"] > 0
trees = {t["subvol"]: t for t in j["trees"]}
assert set(trees) == {5, 256}, trees.keys()
def by_name(tree, name):
    for ino in tree["inodes"]:
        if any(n["name"] == name for n in ino["names"]):
            return ino
    raise AssertionError("no inode named " + name)
fs = trees[5]
newf = by_name(fs, "newf")
assert newf["inode"]["size"] == 100000, newf["inode"]
regular = [e for e in newf["extents"] if e["type"] == "regular"]
assert sum(e["length"] for e in regular) >= 100000, newf["extents"]
# the new data's checksums are in the log
for e in regular:
    s = e["disk_bytenr"] + e["extent_offset"]
    assert any(c["start"] <= s < c["start"] + c["length"] for c in fs["csums"]), e
punch = by_name(fs, "punch")
assert any(e["type"] == "hole" and e["file_offset"] == 4096 for e in punch["extents"]), punch
assert "user.tag" in by_name(fs, "xf")["xattrs"]
hl = by_name(fs, "hl")
assert {n["name"] for n in hl["names"]} >= {"hl", "hl2"}, hl["names"]
dd = [i for i in fs["inodes"] if any(d["name"] == "z" for d in i["dir_entries"])]
assert dd and dd[0]["dir_ranges"] and all(r["applied"] for r in dd[0]["dir_ranges"]), dd
assert "x" not in {d["name"] for d in dd[0]["dir_entries"]}
PY

# the same items as btrfs-progs' dump of each log tree
python3 - "$TMP/json" > "$TMP/ours" <<'PY' || fail "cannot list our facts"
import json, sys
j = json.load(open(sys.argv[1]))
for t in j["trees"]:
    out = set()
    for i in t["inodes"]:
        ino = i["ino"]
        if i["inode"] is not None:
            out.add((ino, "INODE_ITEM"))
        for n in i["names"]: out.add((ino, n["key"]))
        if i["xattrs"]: out.add((ino, "XATTR_ITEM"))
        for e in i["extents"]:
            out.add((ino, "EXTENT_DATA"))
            out.add((ino, "extent", e["file_offset"], e.get("disk_bytenr", 0), e["length"]))
        for d in i["dir_entries"]: out.add((ino, d["key"]))
        for r in i["dir_ranges"]:
            out.add((ino, r["key"]))
            out.add((ino, r["key"], r["start"], r["end"]))
        for o in i.get("other", []): out.add((ino, o["key"]))
    if t["csums"]: out.add(("EXTENT_CSUM", "EXTENT_CSUM"))
    for o in t["orphans"]: out.add(("ORPHAN", "ORPHAN_ITEM"))
    for x in sorted(map(str, out)): print(t["subvol"], x)
PY
logroot=$(tl dump-super "$crash" | awk '$1 == "log_root" {print $2}')
[ -n "$logroot" ] && [ "$logroot" != 0 ] || fail "no log root in the crash image"
btrfs inspect-internal dump-tree -b "$logroot" "$crash" > "$TMP/lrt" 2>/dev/null ||
	fail "btrfs-progs cannot read the log root tree"
python3 - "$TMP/lrt" "$crash" > "$TMP/theirs" <<'PY' || fail "cannot list btrfs-progs' facts"
import re, subprocess, sys
lrt = open(sys.argv[1]).read()
# each "(TREE_LOG ROOT_ITEM subvol)" item is followed by its root's bytenr
for subvol, bytenr in re.findall(r"key \(TREE_LOG ROOT_ITEM (\d+)\).*?\n.*?bytenr (\d+)", lrt, re.S):
    dump = subprocess.run(["btrfs", "inspect-internal", "dump-tree", "-b", bytenr, "--follow",
                           sys.argv[2]], capture_output=True, text=True, check=True).stdout
    out = set()
    cur = None
    for line in dump.splitlines():
        m = re.search(r"item \d+ key \((\S+) (\S+) (\d+)\)", line)
        if m:
            obj, typ, off = m.groups()
            cur = (obj, typ, int(off))
            ino = int(obj) if obj.isdigit() else obj
            out.add((ino, typ))
            continue
        m = re.search(r"dir log end (\d+)", line)
        if m and cur[1] in ("DIR_LOG_INDEX", "DIR_LOG_ITEM"):
            out.add((int(cur[0]), cur[1], cur[2], int(m.group(1))))
        m = re.search(r"extent data disk byte (\d+) nr \d+", line)
        if m:
            cur_extent = (int(cur[0]), "extent", cur[2], int(m.group(1)))
        m = re.search(r"extent data offset \d+ nr (\d+) ram", line)
        if m:
            out.add(cur_extent + (int(m.group(1)),))
        m = re.search(r"inline extent data size \d+ ram_bytes (\d+)", line)
        if m:
            out.add((int(cur[0]), "extent", cur[2], 0, int(m.group(1))))
    for x in sorted(map(str, out)): print(subvol, x)
PY
same_file "$TMP/theirs" "$TMP/ours" || fail "dump-log facts differ from btrfs-progs' log trees"
exit 0
