#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tlogctl mkfs --rootdir copies a tree exactly, as the kernel and btrfs
# check see it.  The source is a generated tree (tests/tools/gentree.py:
# thousands of entries, sparse files, every size class around the inline
# limit, hard links, symlinks, FIFOs, a socket, devices, deep directories,
# long names, many xattrs incl. ACLs, security.* and trusted.*, special
# modes, many owners, nanosecond times) on a btrfs loop mount (every xattr
# namespace, exact SEEK_HOLE, birth times), mounted noatime so that reading
# it changes nothing.  Every image made from it:
#  - btrfs check --readonly --check-data-csum is clean, with Debian's
#    btrfs-progs and with the newer build (../shared/tools/btrfs-progs-new.sh),
#    and tlogctl check exits 0;
#  - mounted ro,noatime, tests/tools/cmptree.py finds no difference from the
#    source (type, mode, owner, size, content, 4 KiB data/hole map, link
#    count and hard-link identity, symlink target, rdev, every xattr,
#    atime/mtime/ctime/btime in ns) and compared every entry.
# Images: plain; --compress zlib, lzo, zstd:3 (compressible files have
# encoded extents, random data has none); subvolumes (rw, ro, default,
# nested: get-default, the ro property, each compared); --inode-flags
# nodatacow (lsattr shows C on the directory and what it holds, nowhere
# else); --owner; --shrink (the file ends at the last device extent and is
# smaller than without it); --reflink onto the source's filesystem (the
# image shares extents with the source); a POSIX tar archive of a readable variant of
# the tree made by an unprivileged user (as a file, gzip on standard
# input, zstd as a file): the archive keeps everything but birth times,
# and the test compares everything else.
. "$(dirname "$0")/../common.sh"
need_cmd tar setpriv lsattr filefrag gzip
. "$TOP/tests/kernel/helpers/rootdir-lib.sh"
NEW=$(bash "$SHARED/tools/btrfs-progs-new.sh" 2>"$TMP/progs-new.err") ||
	skip "the newer btrfs-progs does not build: $(tail -1 "$TMP/progs-new.err")"
[ -x "$NEW/btrfs" ] || skip "no btrfs in $NEW"
make_source_fs 3G
python3 "$GENTREE" --strict --seed 7 "$SRC" > "$TMP/gentree.out" || fail "gentree"
nsrc=$(awk '/^gentree:/ {print $2}' "$TMP/gentree.out")
[ "${nsrc:-0}" -ge 3000 ] || fail "gentree made only ${nsrc:-no} entries"

# count DIR: entries under DIR, itself included
count() {
	python3 -c 'import os, sys
print(1 + sum(len(d) + len(f) for _, d, f in os.walk(sys.argv[1])))' "$1"
}

# mkimg WHAT IMG OPTIONS...: tlogctl mkfs -q -f OPTIONS IMG succeeds quietly
mkimg() {
	local what="$1" target="$2"
	shift 2
	rm -f "$target"
	run_nocrash "$TMP/mk" "$TLOGCTL" mkfs -q -f "$@" "$target" || fail "$what: mkfs crashed"
	[ "$(cat "$TMP/mk.rc")" = 0 ] || {
		cat "$TMP/mk.err"; fail "$what: tlogctl mkfs $* exit $(cat "$TMP/mk.rc")"; }
	[ ! -s "$TMP/mk.out" ] || { cat "$TMP/mk.out"; fail "$what: -q, yet mkfs printed"; }
}

# checked WHAT IMG: both btrfs checks (with data checksums) and tlogctl check
checked() {
	local what="$1" i="$2" b
	for b in btrfs "$NEW/btrfs"; do
		timeout 300 "$b" check --readonly --check-data-csum "$i" > "$TMP/check.out" 2>&1 || {
			grep -v '^\[' "$TMP/check.out" | tail -20
			fail "$what: $b check --readonly --check-data-csum: not clean"; }
	done
	run_nocrash "$TMP/tlc" "$TLOGCTL" check "$i" || fail "$what: tlogctl check crashed"
	[ "$(cat "$TMP/tlc.rc")" = 0 ] || {
		head -20 "$TMP/tlc.out" "$TMP/tlc.err"; fail "$what: tlogctl check exit $(cat "$TMP/tlc.rc")"; }
}

# compared WHAT SRCDIR MNTDIR [cmptree options...]: no difference, every entry compared
compared() {
	local what="$1" s="$2" m="$3" want got
	shift 3
	want=$(count "$s")
	python3 "$CMPTREE" "$@" "$s" "$m" > "$TMP/cmp.out" 2>&1 || {
		head -60 "$TMP/cmp.out"; tail -1 "$TMP/cmp.out"; fail "$what: the image differs from the source"; }
	got=$(awk '/^cmptree:/ {print $2}' "$TMP/cmp.out")
	[ "$got" = "$want" ] || { tail -1 "$TMP/cmp.out"; fail "$what: compared $got entries of $want"; }
	echo "$what: $(tail -1 "$TMP/cmp.out")"
}

# whole WHAT IMG [cmptree options...]: checked, mounted, compared with $SRC
whole() {
	local what="$1" i="$2"
	shift 2
	checked "$what" "$i"
	mount_image "$i" "$mnt" ro,noatime
	compared "$what" "$SRC" "$mnt" "$@"
	umount_image "$mnt"
}

# encoded MNT PATH: how many extents of the file FIEMAP calls encoded (compressed)
encoded() {
	filefrag -v "$1/$2" | awk '/^ *[0-9]+:/ && /encoded/ {n++} END {print n + 0}'
}

# ---- plain ----
mkimg plain "$img" -r "$SRC"
whole plain "$img"
plain_size=$(stat -c %s "$img")

# ---- compression ----
for c in zlib lzo zstd:3; do
	mkimg "--compress $c" "$img" --compress "$c" -r "$SRC"
	whole "--compress $c" "$img"
	mount_image "$img" "$mnt" ro,noatime
	for f in sizes/text-1048577 sizes/text-131073 sizes/zeros-131073 sizes/text-5242879; do
		[ "$(encoded "$mnt" "$f")" -gt 0 ] || {
			filefrag -v "$mnt/$f"; fail "--compress $c: $f is not compressed"; }
	done
	for f in sizes/random-1048577 sizes/random-131073 sizes/random-5242879; do
		[ "$(encoded "$mnt" "$f")" = 0 ] || {
			filefrag -v "$mnt/$f"; fail "--compress $c: random data in $f was stored compressed"; }
	done
	umount_image "$mnt"
done

# ---- subvolumes: rw, ro, the default, and one nested in the default ----
mkimg subvolumes "$img" -r "$SRC" -u rw:links -u ro:sparse -u default:bulk -u rw:bulk/dir001
checked subvolumes "$img"
mount_image "$img" "$mnt" ro,noatime
compared "subvolumes, the default mounted" "$SRC/bulk" "$mnt"
umount_image "$mnt"
mount_image "$img" "$mnt" ro,noatime,subvolid=5
compared "subvolumes, the top level mounted" "$SRC" "$mnt"
btrfs subvolume get-default "$mnt" > "$TMP/default" || fail "subvolume get-default"
grep -q ' path bulk$' "$TMP/default" || { cat "$TMP/default"; fail "the default subvolume is not bulk"; }
btrfs subvolume list "$mnt" | awk '{print $NF}' | sort > "$TMP/subvols"
printf '%s\n' bulk bulk/dir001 links sparse > "$TMP/subvols.want"
same_file "$TMP/subvols.want" "$TMP/subvols" || fail "the subvolumes are not those asked for"
for sv in sparse:true links:false bulk:false bulk/dir001:false; do
	[ "$(btrfs property get -ts "$mnt/${sv%%:*}" ro)" = "ro=${sv#*:}" ] ||
		fail "subvolume ${sv%%:*}: $(btrfs property get -ts "$mnt/${sv%%:*}" ro), expected ro=${sv#*:}"
done
[ "$(stat -c %i "$mnt/links")" = 256 ] || fail "links is not a subvolume root"
umount_image "$mnt"

# ---- --inode-flags nodatacow on a directory ----
mkimg nodatacow "$img" -r "$SRC" --inode-flags nodatacow:sizes
whole "--inode-flags nodatacow:sizes" "$img"
mount_image "$img" "$mnt" ro,noatime
[[ "$(lsattr -d "$mnt/sizes" | awk '{print $1}')" == *C* ]] || { lsattr -d "$mnt/sizes"; fail "no C on sizes"; }
lsattr "$mnt/sizes" > "$TMP/lsattr" || fail "lsattr sizes"
[ "$(awk '$1 ~ /C/' "$TMP/lsattr" | wc -l)" = "$(ls -A "$mnt/sizes" | wc -l)" ] || {
	head "$TMP/lsattr"; fail "not every file in sizes has C"; }
lsattr -d "$mnt/sparse" "$mnt/sparse/s01" "$mnt/links/many" | awk '$1 ~ /C/' | grep . &&
	fail "C outside the nodatacow directory"
umount_image "$mnt"

# ---- --owner ----
mkimg owner "$img" -r "$SRC" --owner 1234:5678
whole "--owner 1234:5678" "$img" --owner 1234:5678

# ---- --shrink ----
mkimg shrink "$img" -r "$SRC" --shrink
whole "--shrink" "$img"
size=$(stat -c %s "$img")
end=$(btrfs inspect-internal dump-tree -t dev "$img" | awk '
	/ key \([0-9]+ DEV_EXTENT [0-9]+\)/ {gsub(/\)/, "", $6); off = $6}
	/chunk_offset/ && off != "" {for (i = 1; i < NF; i++) if ($i == "length") e = off + $(i + 1);
		if (e > max) max = e; off = ""}
	END {print max + 0}')
[ "$end" -gt 0 ] || fail "--shrink: no device extents found"
[ "$size" = "$end" ] || fail "--shrink: the image is $size bytes, the last device extent ends at $end"
[ "$size" -lt "$plain_size" ] || fail "--shrink: $size bytes, not smaller than without it ($plain_size)"
dev_bytes=$(btrfs inspect-internal dump-super "$img" | awk '$1 == "dev_item.total_bytes" {print $2}')
[ "$dev_bytes" = "$size" ] || fail "--shrink: the device is $dev_bytes bytes in the superblock, the file $size"
echo "--shrink: $size bytes (without: $plain_size)"

# ---- --reflink: the image on the source's filesystem shares its data ----
rimg="$TMP/srcfs/reflink.img"
mkimg reflink "$rimg" -r "$SRC" --reflink
sync
shared=$(filefrag -v "$rimg" | grep -c shared)
[ "$shared" -gt 0 ] || fail "--reflink: no extent of the image is shared"
echo "--reflink: $shared extents of the image shared"
whole "--reflink" "$rimg"
rm -f "$rimg"

# ---- an archive made by an unprivileged user ----
# What tar can archive as nobody: readable files, no socket (tar skips
# them), no trusted.* xattrs (only root reads them).  GNU tar's posix
# format keeps atime, mtime and ctime in ns (pax headers), owners, devices,
# xattrs, ACLs and sparse maps; not birth times, and not that two names of
# a FIFO or device are one inode (it archives each as its own).  Times
# before 1970 are whole seconds: libarchive 3.6.2 (Debian 12) reads the pax
# time "-0.000000001" as +1 ns (see tests/tools/gentree.py); the
# directory-source images above have the fractions.
RSRC="$TMP/srcfs/readable"
python3 "$GENTREE" --strict --seed 8 --readable --no-socket --no-trusted --no-special-links \
	--no-negative-ns "$RSRC" > /dev/null || fail "gentree --readable"
chmod 711 "$TMP"
setpriv --reuid=65534 --regid=65534 --clear-groups \
	tar -C "$RSRC" --format=posix --xattrs --xattrs-include='*' --acls -S -cf - . \
	> "$TMP/tree.tar" 2> "$TMP/tar.err" || { cat "$TMP/tar.err"; fail "tar as nobody"; }
chmod 700 "$TMP"
SRC="$RSRC"
mkimg "archive" "$img" -r "$TMP/tree.tar"
whole "tar archive" "$img" --ignore-btime
gzip -c "$TMP/tree.tar" > "$TMP/tree.tar.gz"
rm -f "$img"
"$TLOGCTL" mkfs -q -r - "$img" < "$TMP/tree.tar.gz" > "$TMP/mk.out" 2>&1 || {
	cat "$TMP/mk.out"; fail "tlogctl mkfs -r - < tree.tar.gz"; }
whole "tar.gz on standard input" "$img" --ignore-btime
if command -v zstd > /dev/null; then
	zstd -q -c "$TMP/tree.tar" > "$TMP/tree.tar.zst"
	mkimg "archive.zst" "$img" -r "$TMP/tree.tar.zst" --compress zstd
	whole "tar.zst, --compress zstd" "$img" --ignore-btime
fi
exit 0
