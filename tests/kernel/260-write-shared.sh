#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Writing into trees a snapshot shares: the copied blocks' references
# (FULL_BACKREF, shared and normal refs for child blocks and data extents)
# must leave an extent tree btrfs check accepts, with both the subvolume
# and its snapshot intact for tlogctl and the kernel.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs
WTEST="$BUILDDIR/tests/tools/wtest"
[ -x "$WTEST" ] || fail "tests/tools/wtest is not built"

need_mount
img="$TMP/s.img"
mnt="$TMP/mnt"
head -c 3000000 /dev/urandom > "$TMP/big"
for opts in "" "-n 4096" "-O ^skinny-metadata -n 4096" "tlogctl"; do
	if [ "$opts" = tlogctl ]; then
		rm -f "$img"
		tl mkfs -q -b 1G "$img" || fail "tlogctl mkfs"
	else
		make_image "$img" 1G $opts
	fi
	what="${opts:-defaults}"
	mount_image "$img" "$mnt"
	for i in $(seq 1 400); do echo "$i" > "$mnt/file$i"; done
	cp "$TMP/big" "$mnt/big"
	btrfs subvolume snapshot "$mnt" "$mnt/snap" > /dev/null || fail "$what: snapshot"
	umount_image "$mnt"

	WTEST_SUBVOL=256 "$WTEST" mkdir "$img" 2000 700 insnap 2> "$TMP/w.err" ||
		{ cat "$TMP/w.err"; fail "$what: writing into the snapshot"; }
	check_clean "$img" "$what, snapshot changed"
	"$WTEST" mkdir "$img" 2000 700 intop 2> "$TMP/w.err" ||
		{ cat "$TMP/w.err"; fail "$what: writing into the snapshotted subvolume"; }
	check_clean "$img" "$what, both changed"
	# files the snapshot shares: unlinking drops one reference of their data
	"$WTEST" rm "$img" big 2> "$TMP/w.err" || { cat "$TMP/w.err"; fail "$what: rm of a shared file"; }
	"$WTEST" rm "$img" file5 2> "$TMP/w.err" || { cat "$TMP/w.err"; fail "$what: rm file5"; }
	check_clean "$img" "$what, shared files unlinked"
	[ "$(tl ls "$img" / | wc -l)" = 2400 ] || fail "$what: top level has $(tl ls "$img" / | wc -l) entries"
	[ "$(tl ls --subvol 256 "$img" / | wc -l)" = 2401 ] || fail "$what: the snapshot lost entries"
	mount_image "$img" "$mnt"
	[ "$(ls "$mnt" | wc -l)" = 2400 ] && [ "$(ls "$mnt/snap" | wc -l)" = 2401 ] ||
		fail "$what: the kernel sees the wrong entries"
	cmp -s "$mnt/snap/big" "$TMP/big" || fail "$what: the snapshot's data changed"
	[ "$(cat "$mnt/snap/file77")" = 77 ] || fail "$what: snapshot file content"
	echo changed > "$mnt/file1" && rm "$mnt/snap/file2" || fail "$what: the kernel cannot write"
	umount_image "$mnt"
	check_clean "$img" "$what, after the kernel wrote"
done
exit 0
