#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Images made by tlogctl mkfs mount; the kernel writes, renames and deletes
# a few hundred files and enough data to allocate new chunks; after
# unmounting, btrfs check is still clean, dump-tree reads the result and ls
# and stat agree with what the kernel showed.  A mounted target is refused.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs
need_mount

img="$TMP/k.img"
mnt="$TMP/mnt"

populate() {
	local mib="$1"
	(
		set -e
		cd "$mnt"
		mkdir d e
		for i in $(seq 1 300); do echo "file $i" > "d/f$i"; done
		for i in $(seq 1 100); do mv "d/f$i" "e/renamed-$i"; done
		for i in $(seq 101 2 299); do rm "d/f$i"; done
		ln -s d/f102 link
		dd if=/dev/urandom of=big bs=1M count="$mib" status=none
		head -c 5000 /dev/urandom > e/small
	) || fail "$what: populating"
	sync
}

# kernel_view DIR: "name ino size nlink" of every entry below DIR, sorted
kernel_view() {
	(cd "$mnt" && find . -mindepth 1 -printf '%P %i %s %n\n' | LC_ALL=C sort)
}

# our view of the same, from the unmounted image
tl_view() {
	local dir
	for dir in / /d /e; do
		tl ls "$img" "$dir" | while read -r name; do
			local p="${dir%/}/$name"
			tl stat "$img" "$p" | awk -v p="${p#/}" '
				/Size:/ {size = $2}
				/Inode:/ {ino = $4; nlink = $6}
				END {print p, ino, size, nlink}'
		done
	done | LC_ALL=C sort
}

n=0
while read -r size mib opts; do
	what="${opts:-defaults} $size"
	rm -f "$img"
	truncate -s "$size" "$img"
	tl mkfs -q $opts "$img" || fail "$what: mkfs"
	btrfs check --readonly "$img" > /dev/null 2>&1 || fail "$what: check of the new image"
	mount_image "$img" "$mnt"
	populate "$mib"
	kernel_view > "$TMP/kernel"
	chunks=$(btrfs filesystem df "$mnt" | awk -F'total=' '/^Data/ {print $2}' | cut -d, -f1)
	umount_image "$mnt"
	btrfs check --readonly "$img" > "$TMP/check" 2>&1 ||
		{ tail -20 "$TMP/check"; fail "$what: check after the kernel wrote"; }
	tl dump-tree "$img" > /dev/null || fail "$what: dump-tree of the kernel-modified image"
	tl_view > "$TMP/ours"
	same_file "$TMP/kernel" "$TMP/ours" || fail "$what: ls/stat differ from the kernel"
	echo "$what: ok (data chunks $chunks)"
	n=$((n + 1))
done <<'MATRIX'
1G 200
1G 200 -n 4096 -m single --csum xxhash
1G 200 -n 65536 --csum blake2
1G 200 -O ^no-holes,^block-group-tree --csum sha256
1G 200 -O ^free-space-tree,^block-group-tree,^skinny-metadata -n 4096
128M 20 -m single
128M 20 --csum sha256
MATRIX
[ $n -eq 7 ] || fail "only $n images tested"

# a mounted target is refused, as a file and as its loop device (mounted
# read-only: a read-write mount may write on its own, which is not ours)
make_image "$img" 256M
mount_image "$img" "$mnt" ro
sum=$(md5sum < "$img")
expect_error "mounted" "$TLOGCTL" mkfs -f "$img"
expect_error "mounted\|busy" "$TLOGCTL" mkfs -f "${LOOPS[0]}"
[ "$(md5sum < "$img")" = "$sum" ] || fail "a refused mkfs changed a mounted image"
umount_image "$mnt"
tl mkfs -q -f "$img" || fail "mkfs after unmounting"
exit 0
