#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A short tour of tlogctl on file images it makes itself: a populated,
# reproducible image from a directory (mkfs --rootdir), then reading it,
# changing it offline, and replaying a log tree the kernel wrote.
set -euo pipefail
cd "$(dirname "$0")/.."
TL=./tlogctl
work=$(mktemp -d /tmp/tlogctl-demo.XXXXXX)
cleanup() {
	mountpoint -q "$work/mnt" 2>/dev/null && umount "$work/mnt"
	rm -rf "$work"
}
trap cleanup EXIT

run() { echo; echo "\$ tlogctl $*"; "$TL" "$@"; }

# A small source tree: a sparse file (a hole between two runs of data), a
# hard link, a symlink, an xattr, times with nanoseconds, and a FIFO and a
# device node when root.
mkdir -p "$work/src/docs" "$work/src/bin"
echo "hello from an offline image" > "$work/src/docs/readme.txt"
head -c 200000 /dev/urandom > "$work/src/bin/blob"
head -c 8192 /dev/urandom | dd of="$work/src/bin/blob" bs=4096 seek=256 conv=notrunc status=none
ln "$work/src/docs/readme.txt" "$work/src/docs/hardlink.txt"
ln -s docs/readme.txt "$work/src/link"
command -v setfattr > /dev/null && setfattr -n user.origin -v demo "$work/src/docs/readme.txt"
touch -d "2024-02-29 12:34:56.123456789" "$work/src/docs/readme.txt"
if [ "$(id -u)" = 0 ]; then
	mkfifo "$work/src/bin/pipe"
	mknod "$work/src/bin/null" c 1 3
fi

# With SOURCE_DATE_EPOCH (times after it are clamped to it, and it is the
# filesystem's own time) and a fixed UUID (-U: the other UUIDs derive from
# it), the image depends on the source alone: two builds are identical.
export SOURCE_DATE_EPOCH=1735689600	# 2025-01-01
UUID=0b6c8f6e-2a8f-4c1e-9d57-3f0d1f4a5e21
run mkfs -L demo -b 256M -U $UUID --rootdir "$work/src" "$work/demo.img"
"$TL" mkfs -q -L demo -b 256M -U $UUID --rootdir "$work/src" "$work/again.img"
echo; echo "\$ sha256sum demo.img again.img    # a second build of the same tree"
(cd "$work" && sha256sum demo.img again.img)
a=$(sha256sum < "$work/demo.img")
b=$(sha256sum < "$work/again.img")
[ "$a" = "$b" ] || { echo "the two builds differ: not reproducible"; exit 1; }
rm -f "$work/again.img"
unset SOURCE_DATE_EPOCH

run --version
run mkfs -L made-by-tlogctl -b 256M -f "$work/fresh.img"
run dump-tree -t fs "$work/fresh.img"
run dump-super "$work/demo.img"
run ls -l -i "$work/demo.img" /
run ls -l -i "$work/demo.img" /docs
run ls -l -i "$work/demo.img" /bin
run stat "$work/demo.img" /bin/blob
run stat "$work/demo.img" /docs/readme.txt
run fiemap -v "$work/demo.img" /bin/blob
run seek "$work/demo.img" /bin/blob -a -r 0
run cat "$work/demo.img" /docs/readme.txt
echo; echo "\$ tlogctl stat --format json IMAGE /link"
"$TL" stat --format json "$work/demo.img" /link

# File operations applied offline, as the kernel would apply them.
cat > "$work/ops.tlw" <<'OPS'
mkdir /projects
write /projects/notes 0 10000 0x61
link /projects/notes /notes-link
setxattr /projects/notes user.owner demo
create /projects/big
falloc /projects/big 0 1m keep
sync
rename /projects/notes /projects/notes.old
mkdir /projects
write /projects/notes.old 4096 4096 0x62
OPS
echo; echo "\$ cat ops.tlw"; cat "$work/ops.tlw"
run run --commit --stats "$work/demo.img" "$work/ops.tlw" || true
run ls -l -i "$work/demo.img" /projects
run fiemap -v "$work/demo.img" /projects/notes.old
run check "$work/demo.img"
echo; echo "\$ btrfs check --readonly IMAGE"
btrfs check --readonly "$work/demo.img" 2>&1 | grep -E "no error found|error"

# Replaying a log offline: the kernel writes a log tree at fsync; the image
# is copied before the transaction commits, as a power cut would leave it.
if [ "$(id -u)" != 0 ] || ! grep -qw btrfs /proc/filesystems; then
	echo; echo "(skipping the log replay demo: it needs root and a kernel with btrfs for a loop mount)"
	exit 0
fi
mkdir -p "$work/mnt"
"$TL" mkfs -q -b 256M "$work/live.img"
mount -o loop,commit=3600 "$work/live.img" "$work/mnt"
mkdir "$work/mnt/d"
echo "committed" > "$work/mnt/d/old"
sync
echo "written after the last commit, then fsynced" > "$work/mnt/d/new"
mv "$work/mnt/d/old" "$work/mnt/d/renamed"
xfs_io -c fsync "$work/mnt/d/new" && xfs_io -c fsync "$work/mnt/d"
cp --sparse=always "$work/live.img" "$work/crash.img"
umount "$work/mnt"
echo; echo "# a crash image: the fsyncs live only in its log tree"
run dump-log "$work/crash.img"
run check --log-only "$work/crash.img"
run ls --no-log "$work/crash.img" /d
run ls "$work/crash.img" /d
run replay-log --dry-run "$work/crash.img"
run replay-log -v "$work/crash.img"
run cat "$work/crash.img" /d/new
echo; echo "\$ btrfs check --readonly IMAGE"
btrfs check --readonly "$work/crash.img" 2>&1 | grep -E "no error found|error"
