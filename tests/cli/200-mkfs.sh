#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tlogctl mkfs makes images that btrfs check accepts, that blkid recognises
# with our UUID and label, and that our own readers open, for a matrix of
# checksums, node sizes, profiles, features and sizes; bad options and
# occupied targets give one clear error and leave the target untouched.
. "$(dirname "$0")/../common.sh"
need_cmd btrfs blkid mkfs.btrfs mkfs.ext4

img="$TMP/img"

# check_image WHAT IMG LABEL: btrfs check, blkid, our readers and btrfs-progs agree.
check_image() {
	local what="$1" i="$2" label="$3" uuid
	btrfs check --readonly "$i" > "$TMP/check.out" 2>&1 ||
		{ tail -20 "$TMP/check.out"; fail "$what: btrfs check"; }
	grep -qiE '^ERROR|errors found' "$TMP/check.out" &&
		{ tail -20 "$TMP/check.out"; fail "$what: btrfs check reports errors"; }
	uuid=$(tl dump-super "$i" | awk '$1 == "fsid" {print $2}')
	[ -n "$uuid" ] || fail "$what: dump-super shows no fsid"
	blkid -p -o export "$i" > "$TMP/blkid.out" || fail "$what: blkid finds nothing"
	grep -qx 'TYPE=btrfs' "$TMP/blkid.out" || fail "$what: blkid TYPE"
	grep -qx "UUID=$uuid" "$TMP/blkid.out" || fail "$what: blkid UUID"
	if [ -n "$label" ]; then
		grep -qx "LABEL=$label" "$TMP/blkid.out" || fail "$what: blkid LABEL"
	fi
	tl dump-super -f "$i" > "$TMP/ours" || fail "$what: dump-super"
	btrfs inspect-internal dump-super -f "$i" > "$TMP/theirs" 2>/dev/null
	same_file "$TMP/theirs" "$TMP/ours" || fail "$what: dump-super differs from btrfs-progs"
	tl dump-tree "$i" > /dev/null || fail "$what: dump-tree"
	tl ls "$i" / > "$TMP/ls" || fail "$what: ls /"
	[ ! -s "$TMP/ls" ] || fail "$what: the new root directory is not empty"
}

# mk WHAT SIZE [OPTIONS...]: a fresh sparse file, mkfs, check.
mk() {
	local what="$1" size="$2"; shift 2
	rm -f "$img"
	truncate -s "$size" "$img"
	run_nocrash "$TMP/mk" "$TLOGCTL" mkfs -q -L "lbl-$size" "$@" "$img" || fail "$what: crash"
	[ "$(cat "$TMP/mk.rc")" = 0 ] || { cat "$TMP/mk.err"; fail "$what: mkfs $*"; }
	[ ! -s "$TMP/mk.out" ] || fail "$what: -q printed something"
	check_image "$what" "$img" "lbl-$size"
}

n=0
for csum in crc32c xxhash sha256 blake2; do
	for ns in 4096 16384 65536; do
		for prof in single dup; do
			mk "$csum/$ns/$prof" 128M --csum "$csum" -n "$ns" -m "$prof"
			n=$((n + 1))
		done
	done
done
for feat in ^no-holes,^block-group-tree ^free-space-tree,^block-group-tree \
	    ^block-group-tree ^skinny-metadata ^extref; do
	for ns in 4096 16384; do
		mk "$feat/$ns" 128M -O "$feat" -n "$ns"
		n=$((n + 1))
	done
done
mk "-R alias" 128M -R ^free-space-tree -O ^bgt
for size in 1G 100G; do
	for prof in single dup; do
		mk "$size/$prof" "$size" -m "$prof"
		n=$((n + 1))
	done
done
echo "$n images checked"

# features reach the superblock
mk "features" 128M -O ^no-holes,^block-group-tree,^skinny-metadata
tl dump-super "$img" > "$TMP/sb"
grep -q 'SKINNY_METADATA\|NO_HOLES\|BLOCK_GROUP_TREE' "$TMP/sb" && fail "disabled features are set"
grep -q 'FREE_SPACE_TREE_VALID' "$TMP/sb" || fail "free space tree missing"

# -U and the default summary
rm -f "$img"; truncate -s 1G "$img"
tl mkfs -U 0a2b3c4d-1111-2222-3333-444455556666 -L summary "$img" > "$TMP/sum" || fail "mkfs -U"
grep -q '^UUID: *0a2b3c4d-1111-2222-3333-444455556666$' "$TMP/sum" || fail "summary UUID"
grep -q '^Label: *summary$' "$TMP/sum" || fail "summary label"
grep -q '^Node size: *16384$' "$TMP/sum" || fail "summary node size"
grep -q '^Checksum: *crc32c$' "$TMP/sum" || fail "summary checksum"
grep -qE '^  Metadata: +DUP' "$TMP/sum" || fail "summary metadata profile"
grep -q 'block-group-tree' "$TMP/sum" || fail "summary features"
check_image "-U" "$img" summary

# a missing file is created: 1 GiB by default, -b otherwise
rm -f "$img"
tl mkfs -q "$img" || fail "mkfs on a missing file"
[ "$(stat -c %s "$img")" = 1073741824 ] || fail "default size of a new file"
check_image "new file" "$img" ""
rm -f "$img"
tl mkfs -q -b 300M "$img" || fail "mkfs -b on a missing file"
[ "$(stat -c %s "$img")" = $((300 * 1024 * 1024)) ] || fail "-b size of a new file"
# -b smaller than the file: the filesystem is that size
rm -f "$img"; truncate -s 1G "$img"
tl mkfs -q -b 200M "$img" || fail "mkfs -b smaller than the file"
tl dump-super "$img" | grep -qx "total_bytes		$((200 * 1024 * 1024))" || fail "-b total_bytes"

# -O list-all
tl mkfs -O list-all > "$TMP/list" || fail "-O list-all"
for f in extref skinny-metadata no-holes free-space-tree block-group-tree mixed-bg; do
	grep -q "^$f " "$TMP/list" || fail "-O list-all does not list $f"
done

# bad input: one error line, the existing target unchanged
rm -f "$img"; truncate -s 1G "$img"
printf 'keep me' | dd of="$img" bs=1 seek=70000 conv=notrunc status=none
sum=$(md5sum < "$img")
expect_error "node size" "$TLOGCTL" mkfs -n 8000 "$img"
expect_error "node size" "$TLOGCTL" mkfs -n 131072 "$img"
expect_error "node size" "$TLOGCTL" mkfs -n 4096 -s 16384 "$img"
expect_error "sector size" "$TLOGCTL" mkfs -s 8192 "$img"
expect_error "sector size" "$TLOGCTL" mkfs -s 2048 "$img"
expect_error "UUID" "$TLOGCTL" mkfs -U garbage "$img"
expect_error "label" "$TLOGCTL" mkfs -L "$(printf 'x%.0s' $(seq 1 256))" "$img"
expect_error "unrecognized filesystem feature 'frob'" "$TLOGCTL" mkfs -O frob "$img"
expect_error "mixed-bg.*not supported" "$TLOGCTL" mkfs -O mixed-bg "$img"
expect_error "block-group-tree requires free-space-tree" "$TLOGCTL" mkfs -O ^free-space-tree "$img"
expect_error "block-group-tree requires no-holes" "$TLOGCTL" mkfs -O ^no-holes "$img"
expect_error "checksum" "$TLOGCTL" mkfs --csum md5 "$img"
expect_error "data profile" "$TLOGCTL" mkfs -d dup "$img"
expect_error "metadata profile" "$TLOGCTL" mkfs -m raid1 "$img"
expect_error "larger than the device" "$TLOGCTL" mkfs -b 2G "$img"
expect_error "too small" "$TLOGCTL" mkfs -b 80M "$img"
expect_error "too small" "$TLOGCTL" mkfs -m single -b 20M "$img"
expect_error "not enough arguments" "$TLOGCTL" mkfs
[ "$(md5sum < "$img")" = "$sum" ] || fail "a refused mkfs changed the target"
rm -f "$TMP/small"; truncate -s 50M "$TMP/small"
expect_error "too small" "$TLOGCTL" mkfs "$TMP/small"
expect_error "too small" "$TLOGCTL" mkfs "$TMP/new-small" -b 10M
[ -e "$TMP/new-small" ] && fail "a refused mkfs left a new file behind"
expect_error "not a regular file" "$TLOGCTL" mkfs "$TMP"
tl mkfs -q -m single -b 21M "$TMP/tiny" || fail "the minimum single size is refused"
check_image "tiny" "$TMP/tiny" ""

# an existing filesystem is overwritten only with -f, and named
rm -f "$img"; truncate -s 256M "$img"
mkfs.ext4 -q -F "$img" > /dev/null 2>&1 || fail "mkfs.ext4"
sum=$(md5sum < "$img")
expect_error "ext4.*-f" "$TLOGCTL" mkfs "$img"
[ "$(md5sum < "$img")" = "$sum" ] || fail "the ext4 image was changed without -f"
tl mkfs -q -f "$img" || fail "mkfs -f over ext4"
check_image "over ext4" "$img" ""
blkid -p -o export "$img" | grep -c '^TYPE=' | grep -qx 1 || fail "ext4 signature left over"
make_image "$img" 1G -L old
expect_error "btrfs.*-f" "$TLOGCTL" mkfs "$img"
tl mkfs -q -f -L new "$img" || fail "mkfs -f over btrfs"
check_image "over btrfs" "$img" new
exit 0
