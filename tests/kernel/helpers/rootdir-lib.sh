# SPDX-License-Identifier: GPL-2.0-only
# Shared by the kernel tests of mkfs --rootdir (700, 710); sourced after
# tests/common.sh.  The source tree lives on a btrfs of its own: every
# xattr namespace, exact SEEK_DATA/SEEK_HOLE, and no atime updates
# (noatime) to move the times between the copy and the comparison.
need_cmd btrfs mkfs.btrfs python3
need_mount
"$TLOGCTL" mkfs --help > "$TMP/help" 2>&1
grep -q -- '--rootdir' "$TMP/help" || fail "tlogctl mkfs has no --rootdir"

GENTREE="$TOP/tests/tools/gentree.py"
CMPTREE="$TOP/tests/tools/cmptree.py"
mnt="$TMP/mnt"
img="$TMP/img"

# A btrfs of SIZE for the source at $TMP/srcfs; SRC names the tree in it.
# mount -o loop detaches its loop device on umount.
make_source_fs() {
	truncate -s "$1" "$TMP/src.img"
	mkfs.btrfs -q -f "$TMP/src.img" > /dev/null 2>&1 || fail "mkfs.btrfs of the source"
	mkdir -p "$TMP/srcfs"
	mount -o loop,noatime "$TMP/src.img" "$TMP/srcfs" || fail "mount the source"
	MOUNTS+=("$TMP/srcfs")
	SRC="$TMP/srcfs/tree"
}
