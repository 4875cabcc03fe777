#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The copy-on-write write path on images made by mkfs.btrfs: thousands of
# directories created over several transactions (splits, new tree levels,
# extent items, free space tree, block group items, root items, superblock)
# must pass btrfs check, be seen by tlogctl and by the kernel, and survive
# the kernel writing to the image afterwards.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs
WTEST="$BUILDDIR/tests/tools/wtest"
[ -x "$WTEST" ] || fail "tests/tools/wtest is not built"

need_mount
img="$TMP/w.img"
mnt="$TMP/mnt"
# images from mkfs.btrfs, and from tlogctl mkfs (block group tree)
for opts in "" "-n 4096" "-n 65536 -m single" "-O ^skinny-metadata" "-R ^free-space-tree" \
	    "--csum sha256" "--csum xxhash -n 8192" "tlogctl" "tlogctl -n 4096 --csum blake2"; do
	if [ "${opts%% *}" = tlogctl ]; then
		what="tlogctl mkfs ${opts#tlogctl}"
		rm -f "$img"
		tl mkfs -q -b 512M ${opts#tlogctl} "$img" || fail "$what"
	else
		what="mkfs.btrfs $opts"
		make_image "$img" 512M $opts
	fi
	"$WTEST" mkdir "$img" 3000 700 dir 2> "$TMP/w.err" || { cat "$TMP/w.err"; fail "$what: wtest mkdir failed"; }
	check_clean "$img" "$what"
	tl ls "$img" / > "$TMP/ls" || fail "$what: tlogctl ls"
	[ "$(wc -l < "$TMP/ls")" = 3000 ] || fail "$what: tlogctl ls shows $(wc -l < "$TMP/ls") entries"
	tl dump-tree "$img" > /dev/null || fail "$what: dump-tree of the result"
	mount_image "$img" "$mnt"
	[ "$(ls "$mnt" | wc -l)" = 3000 ] || fail "$what: the kernel sees $(ls "$mnt" | wc -l) entries"
	[ -d "$mnt/dir-02999" ] || fail "$what: dir-02999 missing"
	[ "$(stat -c %s "$mnt")" = $((3000 * 9 * 2)) ] || fail "$what: root dir size $(stat -c %s "$mnt")"
	mkdir "$mnt/by-kernel" && echo data > "$mnt/dir-00007/file" && rmdir "$mnt/dir-01000" ||
		fail "$what: the kernel cannot change the image"
	umount_image "$mnt"
	check_clean "$img" "$what, after the kernel wrote"
	# and a second round on top of the kernel's changes
	"$WTEST" mkdir "$img" 500 250 more 2> "$TMP/w.err" || { cat "$TMP/w.err"; fail "$what: second wtest round"; }
	check_clean "$img" "$what, second round"
done

# metadata outgrows its chunk: a new METADATA chunk (same profile) is made
rm -f "$img"
tl mkfs -q -b 1G "$img" || fail "mkfs for the metadata growth test"
"$WTEST" mkdir "$img" 150000 25000 many 2> "$TMP/w.err" || { cat "$TMP/w.err"; fail "150000 dirs"; }
check_clean "$img" "metadata growth"
[ "$(tl dump-tree -t chunk "$img" | grep -c 'type METADATA|DUP')" -ge 2 ] ||
	fail "no new metadata chunk was allocated"
mount_image "$img" "$mnt"
[ "$(ls "$mnt" | wc -l)" = 150000 ] || fail "the kernel does not see 150000 entries"
umount_image "$mnt"

# SYSTEM space grows too (forced early here): the new chunk must also reach
# the superblock's sys_chunk_array, or no mount could find the chunk tree
for mk in "tlogctl" "mkfs.btrfs -m single"; do
	if [ "$mk" = tlogctl ]; then
		rm -f "$img"; tl mkfs -q -b 1G "$img" || fail "mkfs"
	else
		make_image "$img" 1G -m single
	fi
	head -c 20000000 /dev/urandom > "$TMP/big"
	WTEST_SYSTEM_RESERVE=$((1 << 30)) "$WTEST" write "$img" big "$TMP/big" 2> "$TMP/w.err" ||
		{ cat "$TMP/w.err"; fail "$mk: write with SYSTEM growth"; }
	check_clean "$img" "$mk: SYSTEM growth"
	[ "$(tl dump-super -f "$img" | grep -c 'type SYSTEM')" = 2 ] ||
		fail "$mk: the new SYSTEM chunk is not in the sys_chunk_array"
	mount_image "$img" "$mnt"
	cmp -s "$mnt/big" "$TMP/big" || fail "$mk: the kernel reads the file wrong"
	mkdir "$mnt/by-kernel" || fail "$mk: the kernel cannot write"
	umount_image "$mnt"
	check_clean "$img" "$mk: SYSTEM growth, after the kernel wrote"
done
exit 0
