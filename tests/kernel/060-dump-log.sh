#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Crash images with a kernel-written log tree (fsync, then copy before
# unmount): dump-tree prints the log root tree and every log tree with the
# same items as btrfs-progs, and dump-super shows the log root.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs python3
need_mount

img="$TMP/k.img"
mnt="$TMP/mnt"
make_image "$img" 512M
mount_image "$img" "$mnt" commit=3600
mkdir "$mnt/dir"
echo committed > "$mnt/dir/old"
sync
# after the commit: changes that only the log will hold
python3 - "$mnt" <<'PY'
import os, sys
m = sys.argv[1]
fd = os.open(os.path.join(m, "dir", "new"), os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"x" * 200000)
os.setxattr(os.path.join(m, "dir", "new"), "user.k", b"v")
os.fsync(fd)
os.close(fd)
os.rename(os.path.join(m, "dir", "old"), os.path.join(m, "dir", "renamed"))
fd = os.open(os.path.join(m, "dir"), os.O_RDONLY)
os.fsync(fd)
os.close(fd)
PY
cp --sparse=always "$img" "$TMP/crash.img"
umount_image "$mnt"

tl dump-super "$TMP/crash.img" > "$TMP/super" || fail "dump-super"
logroot=$(awk '$1 == "log_root" {print $2}' "$TMP/super")
[ "$logroot" != 0 ] || fail "the crash image has no log root (log_root 0)"

tl dump-tree "$TMP/crash.img" > "$TMP/ours" || fail "dump-tree of a crash image"
btrfs inspect-internal dump-tree "$TMP/crash.img" 2>/dev/null | tail -n +2 > "$TMP/theirs"
same_file "$TMP/theirs" "$TMP/ours" || fail "dump-tree differs from btrfs-progs on a log image"
grep -q '^log root tree' "$TMP/ours" || fail "no log root tree"
grep -q '^log tree key (TREE_LOG ROOT_ITEM 5)' "$TMP/ours" || fail "no log tree for subvolume 5"
tl dump-tree -t log "$TMP/crash.img" > "$TMP/log" || fail "dump-tree -t log"
grep -q 'name: new' "$TMP/log" || fail "the logged name is not in the log"
grep -q 'XATTR_ITEM' "$TMP/log" || fail "the logged xattr is not in the log"
grep -q 'EXTENT_CSUM' "$TMP/log" || fail "the logged csums are not in the log"
tl dump-tree -t log --format json "$TMP/crash.img" | python3 -c '
import json, sys
j = json.load(sys.stdin)
names = [t["name"] for t in j["trees"]]
assert names[0] == "log root tree" and "log tree" in names[1:], names
' || fail "json log dump"
exit 0
