#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# zero-log on a crash image with a kernel-written log: it says what is
# lost, refuses off a terminal without -f (image untouched), and with -f
# leaves exactly what btrfs rescue zero-log leaves: a superblock without a
# log, an image btrfs check accepts, and the committed state the kernel
# shows with rescue=nologreplay.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs python3 sha256sum
need_mount

img="$TMP/k.img"
mnt="$TMP/mnt"
make_image "$img" 512M
mount_image "$img" "$mnt" commit=3600
mkdir "$mnt/dir"
echo committed > "$mnt/dir/old"
sync
python3 - "$mnt" <<'PY'
import os, sys
m = sys.argv[1]
for name in ("a", "b", "c"):
    fd = os.open(os.path.join(m, "dir", name), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, name.encode() * 10000)
    os.fsync(fd)
    os.close(fd)
PY
cp --sparse=always "$img" "$TMP/crash.img"
umount_image "$mnt"

# what the kernel shows without replaying: the reference result
cp --sparse=always "$TMP/crash.img" "$TMP/ref.img"
mount_image "$TMP/ref.img" "$mnt" ro,rescue=nologreplay
(cd "$mnt" && find . | LC_ALL=C sort) > "$TMP/nologreplay.list"
umount_image "$mnt"

# off a terminal, without -f: refused, nothing written
sha256sum "$TMP/crash.img" > "$TMP/sum"
rc=0
tl zero-log "$TMP/crash.img" < /dev/null > "$TMP/out" 2> "$TMP/err" || rc=$?
[ $rc = 1 ] || fail "zero-log without -f off a terminal exited $rc"
grep -q '^tlogctl: ERROR: .*use -f' "$TMP/err" || { cat "$TMP/err"; fail "no clear refusal"; }
grep -q 'holds 3 inodes\|holds [0-9]* inodes' "$TMP/out" || { cat "$TMP/out"; fail "does not say what is lost"; }
sha256sum -c --quiet "$TMP/sum" || fail "the refused zero-log changed the image"

# with -f: the same superblock btrfs rescue zero-log writes
cp --sparse=always "$TMP/crash.img" "$TMP/progs.img"
btrfs rescue zero-log "$TMP/progs.img" > /dev/null 2>&1 || fail "btrfs rescue zero-log"
tl zero-log -f "$TMP/crash.img" > "$TMP/out" || fail "zero-log -f"
tl dump-super -f "$TMP/crash.img" > "$TMP/ours" || fail "dump-super after zero-log"
tl dump-super -f "$TMP/progs.img" > "$TMP/theirs" || fail "dump-super of btrfs-progs' result"
sed -i 's/device=.*//' "$TMP/ours" "$TMP/theirs"
same_file "$TMP/theirs" "$TMP/ours" || fail "the superblock differs from btrfs rescue zero-log's"
btrfs check --readonly "$TMP/crash.img" > "$TMP/check" 2>&1 || { tail "$TMP/check"; fail "btrfs check"; }
mount_image "$TMP/crash.img" "$mnt"
(cd "$mnt" && find . | LC_ALL=C sort) > "$TMP/after.list"
umount_image "$mnt"
same_file "$TMP/nologreplay.list" "$TMP/after.list" || fail "not the committed state"
tl zero-log -f "$TMP/crash.img" | grep -q 'has no log tree' || fail "a second zero-log"
exit 0
