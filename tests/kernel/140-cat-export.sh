#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# cat and export read every kind of file extent the kernel writes --
# inline (plain and compressed), regular, zlib/lzo/zstd compressed,
# prealloc, holes, reflinks, partial overwrites -- and return the bytes a
# read of the mounted file returns; export keeps holes and passes --verify.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs xfs_io fallocate sha256sum du stat python3
need_mount

img="$TMP/k.img"
mnt="$TMP/mnt"

# gen KIND SIZE: deterministic data; text compresses, rand does not
gen() {
	case "$1" in
	text) python3 -c "import sys
n = int(sys.argv[1]); w = b''
i = 0
while len(w) < n:
    w += b'line %d of some compressible text, %d\n' % (i, i * 7 % 13); i += 1
sys.stdout.buffer.write(w[:n])" "$2" ;;
	rand) head -c "$2" /dev/urandom ;;
	zero) head -c "$2" /dev/zero ;;
	esac
}

# populate PREFIX: the same set of files under each mount option
populate() {
	local p="$1"
	gen rand 100 > "${p}inline-100"
	gen rand 2000 > "${p}inline-2000-rand"
	gen text 2000 > "${p}inline-2000-text"
	gen text 3000 > "${p}small-3000-text"
	gen rand 5000 > "${p}rand-5000"
	gen text 12345 > "${p}text-12345"
	gen text 1000001 > "${p}text-1M"
	gen rand 300000 > "${p}rand-300K"
	# several compressed extents, then holes punched into them
	gen text 700000 > "${p}punched"
	fallocate -p -o 65536 -l 131072 "${p}punched"
	fallocate -p -o 400000 -l 10000 "${p}punched"
	# a partial overwrite leaves items that point into a (compressed) extent
	gen text 524288 > "${p}overwritten"
	sync
	gen rand 6000 | dd of="${p}overwritten" bs=1 seek=70000 conv=notrunc status=none
	# reflinked ranges of another file, at other offsets
	xfs_io -f -c "reflink ${p}text-1M 16384 0 65536" \
		-c "reflink ${p}rand-300K 0 131072 131072" \
		-c "reflink ${p}text-1M 262144 409600 139264" "${p}reflinked" >/dev/null
	# sparse: data islands in a mostly-hole file
	truncate -s 100M "${p}sparse"
	gen text 10000 | dd of="${p}sparse" bs=4096 seek=10 conv=notrunc status=none
	gen rand 5000 | dd of="${p}sparse" bs=1M seek=50 conv=notrunc status=none
	gen text 3333 | dd of="${p}sparse" bs=1 seek=$((100 * 1048576 - 3333)) conv=notrunc status=none
	# prealloc: unwritten extents, one written into, one past EOF
	fallocate -l 1M "${p}prealloc"
	gen text 8192 | dd of="${p}prealloc" bs=4096 seek=20 conv=notrunc status=none
	gen text 5000 > "${p}prealloc-keep"
	fallocate -n -o 5000 -l 1M "${p}prealloc-keep"
	# truncated down to an unaligned size, inside a (compressed) extent
	gen text 200000 > "${p}truncated"
	sync
	truncate -s 77777 "${p}truncated"
	: > "${p}empty"
	# no checksums (nodatacow)
	: > "${p}nodatasum"
	chattr +C "${p}nodatasum" 2>/dev/null
	gen rand 20000 > "${p}nodatasum"
	chmod 4751 "${p}rand-5000"
}

make_image "$img" 1G
mount_image "$img" "$mnt" "max_inline=2048"
(
	set -e
	cd "$mnt"
	populate plain-
	btrfs subvolume create sub >/dev/null
	btrfs subvolume create sub/nested >/dev/null
	gen text 50000 > sub/nested/deep
	gen rand 2500 > sub/nested/inline
)
# set -e does not act inside a subshell that is tested with ||
[ $? = 0 ] || fail "populating the image"
for c in zlib lzo zstd; do
	mount -o remount,compress-force=$c,max_inline=2048 "$mnt" || fail "remount $c"
	(set -e; cd "$mnt"; populate "$c-"; gen text 3000 > sub/nested/$c)
	[ $? = 0 ] || fail "populating with $c"
done
mount -o remount,compress-force=zstd,max_inline=3900 "$mnt" || fail "remount max_inline"
(set -e; cd "$mnt"; gen text 3800 > big-inline-zstd; gen rand 3800 > big-inline-rand)
[ $? = 0 ] || fail "populating with max_inline"
sync
subid=$(btrfs inspect-internal rootid "$mnt/sub/nested") || fail "rootid"
umount_image "$mnt"

mount_image "$img" "$mnt" ro
files=$(cd "$mnt" && find . -type f | sed 's|^\.||' | sort)
[ "$(echo "$files" | wc -l)" -ge 75 ] || fail "too few files: $files"
n=0
for f in $files; do
	want=$(sha256sum < "$mnt$f" | cut -d' ' -f1)
	got=$(tl cat "$img" "$f" | sha256sum | cut -d' ' -f1) || fail "cat $f failed"
	[ "$got" = "$want" ] || fail "cat $f: sha256 $got, kernel reads $want"

	rm -f "$TMP/out"
	tl export --verify "$img" "$f" "$TMP/out" || fail "export --verify $f failed"
	got=$(sha256sum < "$TMP/out" | cut -d' ' -f1)
	[ "$got" = "$want" ] || fail "export $f: sha256 $got, kernel reads $want"
	[ "$(stat -c %s "$TMP/out")" = "$(stat -c %s "$mnt$f")" ] || fail "export $f: size"
	[ "$(stat -c %a "$TMP/out")" = "$(stat -c %a "$mnt$f")" ] || fail "export $f: mode"
	n=$((n + 1))
done

# holes stay holes: 100M file with ~20K of data
for p in plain- zstd-; do
	tl export -f "$img" "/${p}sparse" "$TMP/out" || fail "export ${p}sparse"
	kb=$(du -k "$TMP/out" | cut -f1)
	[ "$kb" -lt 1024 ] || fail "export ${p}sparse uses ${kb}K: holes were written"
done
# prealloc is a hole for export, zeros for cat
tl export -f "$img" /plain-prealloc "$TMP/out" || fail "export prealloc"
kb=$(du -k "$TMP/out" | cut -f1)
[ "$kb" -lt 256 ] || fail "export prealloc uses ${kb}K"

# --subvol resolves from the nested subvolume
want=$(sha256sum < "$mnt/sub/nested/deep" | cut -d' ' -f1)
got=$(tl cat --subvol "$subid" "$img" /deep | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "cat --subvol $subid /deep"
tl export -f --subvol "$subid" "$img" /zstd "$TMP/out" && cmp -s "$TMP/out" "$mnt/sub/nested/zstd" ||
	fail "export --subvol"

# a reader that stops early is not an error
tl cat "$img" /zlib-text-1M 2> "$TMP/err" | head -c 10 > /dev/null ||
	fail "cat into a closed pipe exits ${PIPESTATUS[0]}"
[ -s "$TMP/err" ] && fail "cat into a closed pipe: $(cat "$TMP/err")"

umount_image "$mnt"

# other checksum types verify too
src="$TMP/src"
mkdir -p "$src"
gen text 300000 > "$src/t"
gen rand 70000 > "$src/r"
for csum in xxhash sha256 blake2; do
	make_image "$img" 256M --csum $csum
	mount_image "$img" "$mnt" compress-force=zstd
	cp "$src/t" "$src/r" "$mnt/"
	umount_image "$mnt"
	for f in t r; do
		rm -f "$TMP/out"
		tl export --verify "$img" /$f "$TMP/out" && cmp -s "$TMP/out" "$src/$f" ||
			fail "export --verify with $csum: /$f"
	done
done
echo "$n files read back as the kernel reads them"
exit 0
