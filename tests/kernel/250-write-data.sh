#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Data through the write path: files written with data extents, extent
# items, back references and checksums, then unlinked (which frees extents
# and cuts csum items shared with neighbouring extents), must pass
# btrfs check --check-data-csum, read back byte-exact through tlogctl and
# the kernel, and take the kernel's own writes afterwards.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs sha256sum
WTEST="$BUILDDIR/tests/tools/wtest"
[ -x "$WTEST" ] || fail "tests/tools/wtest is not built"

same_data() {	# same_data IMAGE PATH SRC WHAT
	[ "$(tl cat "$1" "$2" | sha256sum)" = "$(sha256sum < "$3")" ] ||
		fail "$4: $2 reads back wrong"
}

need_mount
mnt="$TMP/mnt"
img="$TMP/d.img"
srcdir="$TMP/src"
mkdir -p "$srcdir"
head -c 20000123 /dev/urandom > "$srcdir/big"
head -c 1048576 /dev/urandom > "$srcdir/mib"
head -c 5000 /dev/urandom > "$srcdir/small"
printf x > "$srcdir/byte"
: > "$srcdir/empty"

for opts in "tlogctl" "tlogctl -n 4096 --csum sha256" "mkfs.btrfs" "mkfs.btrfs -R ^free-space-tree -m single" \
	    "mkfs.btrfs --csum xxhash -O ^skinny-metadata"; do
	if [ "${opts%% *}" = tlogctl ]; then
		rm -f "$img"
		tl mkfs -q -b 1G ${opts#tlogctl} "$img" || fail "$opts"
	else
		make_image "$img" 1G ${opts#mkfs.btrfs}
	fi
	for f in big mib small byte empty; do
		"$WTEST" write "$img" "$f" "$srcdir/$f" 2> "$TMP/w.err" ||
			{ cat "$TMP/w.err"; fail "$opts: writing $f"; }
	done
	check_clean "$img" "$opts" --check-data-csum
	for f in big mib small byte empty; do
		same_data "$img" "/$f" "$srcdir/$f" "$opts"
	done
	"$WTEST" rm "$img" mib 2> "$TMP/w.err" || { cat "$TMP/w.err"; fail "$opts: rm mib"; }
	"$WTEST" rm "$img" byte 2> "$TMP/w.err" || { cat "$TMP/w.err"; fail "$opts: rm byte"; }
	check_clean "$img" "$opts, after unlinking" --check-data-csum
	mount_image "$img" "$mnt"
	[ "$(ls "$mnt" | tr '\n' ' ')" = "big empty small " ] || fail "$opts: the kernel lists $(ls "$mnt")"
	for f in big small empty; do
		cmp -s "$mnt/$f" "$srcdir/$f" || fail "$opts: the kernel reads $f wrong"
	done
	cp "$srcdir/mib" "$mnt/by-kernel" && rm "$mnt/small" || fail "$opts: the kernel cannot write"
	umount_image "$mnt"
	check_clean "$img" "$opts, after the kernel wrote" --check-data-csum
	"$WTEST" write "$img" again "$srcdir/mib" 2> /dev/null || fail "$opts: writing after the kernel"
	check_clean "$img" "$opts, writing after the kernel" --check-data-csum
	same_data "$img" /by-kernel "$srcdir/mib" "$opts"
	same_data "$img" /again "$srcdir/mib" "$opts"
done

# a fragmented data group switches its free space to bitmaps at the
# kernel's threshold, and the bitmaps are kept right afterwards
rm -f "$img"
tl mkfs -q -b 1G "$img" || fail "mkfs for the bitmap test"
head -c 4096 /dev/urandom > "$TMP/s4k"
for i in $(seq 1 30); do "$WTEST" write "$img" "f$i" "$TMP/s4k" 2> /dev/null || fail "write f$i"; done
for i in $(seq 1 2 30); do "$WTEST" rm "$img" "f$i" 2> /dev/null || fail "rm f$i"; done
check_clean "$img" "fragmented data group" --check-data-csum
tl dump-tree -t free-space "$img" | grep -q 'count 1[0-9] flags 1' ||
	fail "the fragmented data group did not switch to bitmaps"
for i in $(seq 2 2 30); do "$WTEST" rm "$img" "f$i" 2> /dev/null || fail "rm f$i"; done
"$WTEST" write "$img" again "$TMP/s4k" 2> /dev/null || fail "write into bitmaps"
check_clean "$img" "bitmap group after more changes" --check-data-csum
mount_image "$img" "$mnt"
cmp -s "$mnt/again" "$TMP/s4k" || fail "the kernel reads the file written into bitmaps wrong"
umount_image "$mnt"

# csum items that span several extents (mkfs.btrfs --rootdir merges them):
# unlinking the middle file must cut the item, not drop its neighbours'
mkdir -p "$TMP/root"
for i in 1 2 3 4 5; do head -c $((i * 70000)) /dev/urandom > "$TMP/root/f$i"; done
make_image "$img" 512M -r "$TMP/root"
"$WTEST" rm "$img" f3 2> "$TMP/w.err" || { cat "$TMP/w.err"; fail "rm from a --rootdir image"; }
check_clean "$img" "--rootdir image after unlinking f3" --check-data-csum
for i in 1 2 4 5; do same_data "$img" "/f$i" "$TMP/root/f$i" "--rootdir image"; done
exit 0
