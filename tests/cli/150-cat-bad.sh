#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# cat and export on bad input: paths that are not regular files, an
# existing DEST, data that fails its checksum, damaged EXTENT_DATA items.
# Always one error line and exit 1, never a crash; --verify names the
# offset of the bad sector.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs sha256sum python3 cmp

src="$TMP/src"
mkdir -p "$src/d"
head -c 200000 /dev/urandom > "$src/big"
head -c 8192 /dev/urandom > "$src/mid"
python3 -c "import sys; sys.stdout.write('inline text %d\n' * 60 % tuple(range(60)))" > "$src/inl"
ln -s big "$src/sl"
img="$TMP/good.img"
make_image "$img" 256M -r "$src"

for f in big mid inl; do
	tl cat "$img" /$f | cmp -s - "$src/$f" || fail "cat /$f"
done

# not regular files, missing paths, bad arguments
for c in cat export; do
	args=(); [ $c = export ] && args=("$TMP/out")
	expect_error "cannot find /nope" "$TLOGCTL" $c "$img" /nope "${args[@]}"
	expect_error "it is a directory" "$TLOGCTL" $c "$img" /d "${args[@]}"
	expect_error "it is a symlink" "$TLOGCTL" $c "$img" /sl "${args[@]}"
	expect_error "not enough arguments" "$TLOGCTL" $c "$img"
	expect_error "No such file" "$TLOGCTL" $c "$TMP/no.img" /big "${args[@]}"
done
[ -e "$TMP/out" ] && fail "a failed export left DEST behind"
expect_error "too many arguments" "$TLOGCTL" cat "$img" /big extra

# DEST exists: refused without -f and left alone
echo keep > "$TMP/out"
expect_error "it exists" "$TLOGCTL" export "$img" /big "$TMP/out"
[ "$(cat "$TMP/out")" = keep ] || fail "export without -f changed DEST"
tl export -f "$img" /big "$TMP/out" && cmp -s "$TMP/out" "$src/big" || fail "export -f"
expect_error "it is the image" "$TLOGCTL" export -f "$img" /big "$img"
expect_error "cannot create" "$TLOGCTL" export "$img" /big "$TMP/no/such/dir/out"

# helper: the physical byte of a logical address, from the chunk tree's JSON
cat > "$TMP/img.py" <<'PY'
import json, struct, subprocess, sys

def crc32c(data, crc=0xFFFFFFFF):
    table = crc32c.table
    if table is None:
        table = crc32c.table = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
crc32c.table = None

def tree(tl, img, t):
    out = subprocess.run([tl, "dump-tree", "-t", t, "--format", "json", img],
                         stdout=subprocess.PIPE, check=True).stdout
    return json.loads(out)["trees"]

def physical(tl, img, logical):
    """Every copy of a logical byte (single and DUP chunks)."""
    for t in tree(tl, img, "chunk"):
        for b in t["blocks"]:
            for it in b["items"]:
                if it["key"]["type"] != 228:
                    continue
                start, d = it["key"]["offset"], it["data"]
                if start <= logical < start + d["length"]:
                    return [s["offset"] + logical - start for s in d["stripes"]]
    sys.exit("no chunk holds %d" % logical)

def flip_data(tl, img, path, offset):
    out = subprocess.run([tl, "fiemap", "--format", "json", img, path],
                         stdout=subprocess.PIPE, check=True).stdout
    for e in json.loads(out)["extents"]:
        if e["logical"] <= offset < e["logical"] + e["length"]:
            phys = physical(tl, img, e["physical"] + offset - e["logical"])[0]
            with open(img, "r+b") as f:
                f.seek(phys)
                b = f.read(1)
                f.seek(phys)
                f.write(bytes([b[0] ^ 0xFF]))
            return
    sys.exit("offset %d of %s is not mapped" % (offset, path))

def patch_extent(tl, img, ino, field, fmt, value):
    """Rewrite a field of inode @ino's first EXTENT_DATA item, in every copy
    of its leaf, and fix the leaf checksums (crc32c)."""
    nodesize = None
    for line in subprocess.run([tl, "dump-super", img], stdout=subprocess.PIPE,
                               check=True, text=True).stdout.splitlines():
        if line.split()[:1] == ["nodesize"]:
            nodesize = int(line.split()[1])
    for t in tree(tl, img, "5"):
        for b in t["blocks"]:
            for it in b.get("items", []):
                k = it["key"]
                if k["objectid"] == ino and k["type"] == 108:
                    where = 101 + it["offset"] + field
                    for phys in physical(tl, img, b["bytenr"]):
                        with open(img, "r+b") as f:
                            f.seek(phys)
                            leaf = bytearray(f.read(nodesize))
                            struct.pack_into(fmt, leaf, where, value)
                            struct.pack_into("<I", leaf, 0, crc32c(leaf[32:]))
                            f.seek(phys)
                            f.write(leaf)
                    return
    sys.exit("no extent item for inode %d" % ino)

cmd, tl, img = sys.argv[1:4]
if cmd == "flip":
    flip_data(tl, img, sys.argv[4], int(sys.argv[5]))
else:
    patch_extent(tl, img, int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7], 0))
PY

# a flipped data byte: --verify names its sector, DEST is not created
cp "$img" "$TMP/flip.img"
python3 "$TMP/img.py" flip "$TLOGCTL" "$TMP/flip.img" /big $((12 * 4096 + 1234)) || fail "flipping a byte"
rm -f "$TMP/out"
expect_error "checksum mismatch in /big at offset 49152 (" \
	"$TLOGCTL" export --verify "$TMP/flip.img" /big "$TMP/out"
[ -e "$TMP/out" ] && fail "export --verify wrote DEST despite the bad checksum"
# without --verify the bytes come out as they are on disk
tl export "$TMP/flip.img" /big "$TMP/out" || fail "export of the flipped file"
[ "$(cmp -l "$TMP/out" "$src/big" | wc -l)" = 1 ] || fail "export: not exactly one byte differs"
[ "$(cmp -l "$TMP/out" "$src/big" | awk '{print $1}')" = $((12 * 4096 + 1234 + 1)) ] ||
	fail "export: the wrong byte differs"
tl cat "$TMP/flip.img" /big | cmp -s - "$TMP/out" || fail "cat of the flipped file"
# the other files still verify
for f in mid inl; do
	rm -f "$TMP/out"
	tl export --verify "$TMP/flip.img" /$f "$TMP/out" && cmp -s "$TMP/out" "$src/$f" ||
		fail "export --verify /$f"
done

# damaged EXTENT_DATA items: (file, field offset, struct format, value, expected error)
ino() { tl stat "$img" "$1" | awk '$3 == "Inode:" {print $4}'; }
big=$(ino /big) mid=$(ino /mid) inl=$(ino /inl)
[ -n "$big" ] && [ -n "$mid" ] && [ -n "$inl" ] || fail "inode numbers"
while read -r name f field fmt value text; do
	cp "$img" "$TMP/bad.img"
	python3 "$TMP/img.py" patch "$TLOGCTL" "$TMP/bad.img" "${!name}" "$field" "$fmt" "$value" ||
		fail "patching /$f"
	text=${text//_/ }
	expect_error "$text" "$TLOGCTL" cat "$TMP/bad.img" /$f
	rm -f "$TMP/out"
	expect_error "$text" "$TLOGCTL" export "$TMP/bad.img" /$f "$TMP/out"
	[ -e "$TMP/out" ] && fail "a failed export left DEST behind (/$f, $text)"
	expect_error "" "$TLOGCTL" export --verify "$TMP/bad.img" /$f "$TMP/out"
done <<'EOF'
mid mid 16 B 1 zlib
mid mid 16 B 2 lzo
mid mid 16 B 3 zstd
mid mid 16 B 9 unknown_compression
big big 16 B 3 impossible_size
inl inl 16 B 1 zlib
inl inl 16 B 2 lzo
inl inl 16 B 3 zstd
mid mid 21 <Q 0x7fff0000000 in_no_chunk
mid mid 37 <Q 0x100000 outside_the
mid mid 29 <Q 4097 not_sector_aligned
big big 45 <Q 0x40000000 outside_the
EOF
exit 0
