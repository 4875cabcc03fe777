#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Bad input gets one clear error line and exit 1: never a crash, a hang,
# or a change to the image.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs mkfs.ext4 btrfs sha256sum python3

src="$TMP/src"
mkdir -p "$src/d"
echo data > "$src/d/f"
ln -s d "$src/sl"
make_image "$TMP/good.img" 256M -r "$src"

# missing image, a directory, an empty file
for c in dump-super dump-tree ls stat; do
	args=("$TMP/nonexistent.img"); [ $c = stat ] && args+=(/)
	expect_error "No such file or directory" "$TLOGCTL" $c "${args[@]}"
done
expect_error "not a regular file or block device" "$TLOGCTL" dump-tree "$TMP"
: > "$TMP/empty.img"
expect_error "too small" "$TLOGCTL" dump-tree "$TMP/empty.img"
expect_error "not a btrfs image" "$TLOGCTL" dump-super "$TMP/empty.img"

# foreign filesystem: libblkid names it
truncate -s 64M "$TMP/ext4.img"
mkfs.ext4 -q -F "$TMP/ext4.img" >/dev/null 2>&1
expect_error "holds ext4, not btrfs" "$TLOGCTL" dump-tree "$TMP/ext4.img"
expect_error "holds ext4, not btrfs" "$TLOGCTL" dump-super "$TMP/ext4.img"
expect_error "holds ext4, not btrfs" "$TLOGCTL" ls "$TMP/ext4.img" /

# zeroed image of btrfs size
truncate -s 256M "$TMP/zero.img"
expect_error "not a btrfs image\|no btrfs" "$TLOGCTL" ls "$TMP/zero.img" /

# truncated btrfs image: superblock present, tree blocks missing
head -c 20M "$TMP/good.img" > "$TMP/trunc.img"
expect_error "" "$TLOGCTL" dump-tree "$TMP/trunc.img"
head -c 66000 "$TMP/good.img" > "$TMP/trunc2.img"
expect_error "too small\|past the end\|ends before" "$TLOGCTL" dump-tree "$TMP/trunc2.img"

# corrupted superblock checksum: only copy 1 is valid, tlogctl uses it
cp "$TMP/good.img" "$TMP/badsb.img"
printf '\xff' | dd of="$TMP/badsb.img" bs=1 seek=$((65536 + 200)) conv=notrunc status=none
expect_error "checksum mismatch" "$TLOGCTL" dump-super "$TMP/badsb.img"
expect_error "checksum mismatch" "$TLOGCTL" dump-tree --super 0 "$TMP/badsb.img"
tl ls "$TMP/badsb.img" / > /dev/null || fail "fallback to the superblock copy at 64MiB"

# corrupted root tree block (both DUP copies)
root=$(tl dump-super "$TMP/good.img" | awk '$1 == "root" {print $2}')
cp "$TMP/good.img" "$TMP/badroot.img"
for phys in $(tl dump-tree -t chunk --format json "$TMP/good.img" | python3 -c '
import json, sys
root = int(sys.argv[1])
for t in json.load(sys.stdin)["trees"]:
    for b in t["blocks"]:
        for it in b.get("items", []):
            d = it.get("data", {})
            if it["key"]["type"] == 228 and it["key"]["offset"] <= root < it["key"]["offset"] + d["length"]:
                for s in d["stripes"]:
                    print(s["offset"] + root - it["key"]["offset"])
' "$root"); do
	printf '\x00\x01\x02\x03' | dd of="$TMP/badroot.img" bs=1 seek=$((phys + 300)) conv=notrunc status=none
done
expect_error "checksum mismatch on tree block $root" "$TLOGCTL" ls "$TMP/badroot.img" /

# bad paths
expect_error "'nope' not found" "$TLOGCTL" ls "$TMP/good.img" /nope
expect_error "not a directory" "$TLOGCTL" ls "$TMP/good.img" /d/f/x
expect_error "symlink" "$TLOGCTL" stat "$TMP/good.img" /sl/f
expect_error "not a subvolume id" "$TLOGCTL" ls --subvol 2 "$TMP/good.img" /
expect_error "tree 999 does not exist" "$TLOGCTL" ls --subvol 999 "$TMP/good.img" /
expect_error "invalid subvolume id" "$TLOGCTL" ls --subvol -1 "$TMP/good.img" /
expect_error "unknown tree" "$TLOGCTL" dump-tree -t nosuchtree "$TMP/good.img"
expect_error "invalid block address" "$TLOGCTL" dump-tree -b 12x "$TMP/good.img"
expect_error "is in no chunk" "$TLOGCTL" dump-tree -b 4096 "$TMP/good.img"
expect_error "invalid superblock copy" "$TLOGCTL" dump-super -s 3 "$TMP/good.img"

# paths that work: "." and ".." are resolved by name
tl stat "$TMP/good.img" /d/../d/./f | grep -q 'Size: 5 ' || fail "/d/../d/./f"

# nothing above changed any image
for img in good badsb badroot trunc; do
	sha256sum "$TMP/$img.img" > "$TMP/$img.sum"
done
for c in "dump-tree" "ls -l" "dump-super -a"; do
	for img in good badsb badroot trunc; do
		tl $c "$TMP/$img.img" >/dev/null 2>&1 || true
	done
done
for img in good badsb badroot trunc; do
	sha256sum -c --quiet "$TMP/$img.sum" || fail "$img.img was modified"
done
exit 0
