#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# dump-super shows the same fields and values as btrfs-progs for images of
# every checksum type, node size, metadata profile and feature mix.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs python3

check_image() {
	local img="$1" what="$2"
	tl dump-super -f "$img" > "$TMP/ours" || fail "$what: dump-super failed"
	btrfs inspect-internal dump-super -f "$img" > "$TMP/theirs" 2>/dev/null
	same_file "$TMP/theirs" "$TMP/ours" || fail "$what: dump-super differs from btrfs-progs"
	# JSON carries the same values
	tl dump-super -f --format json "$img" > "$TMP/json" || fail "$what: json"
	python3 - "$TMP/json" "$TMP/theirs" <<'PY' || fail "$what: json differs from text"
import json, sys
j = json.load(open(sys.argv[1]))["superblocks"][0]
text = {}
for line in open(sys.argv[2]):
    parts = line.rstrip("\n").split("\t")
    parts = [p for p in parts if p]
    if len(parts) == 2:
        text[parts[0]] = parts[1]
checks = {"generation": "generation", "root": "root", "chunk_root": "chunk_root",
          "total_bytes": "total_bytes", "bytes_used": "bytes_used",
          "nodesize": "nodesize", "sectorsize": "sectorsize", "num_devices": "num_devices",
          "fsid": "fsid", "csum_size": "csum_size", "sys_array_size": "sys_array_size",
          "dev_item.total_bytes": None, "dev_item.bytes_used": None}
for k, jk in checks.items():
    if jk is None:
        v = j["dev_item"][k.split(".")[1]]
    else:
        v = j[jk]
    if str(v) != text[k].split(" ")[0]:
        sys.exit(f"{k}: json {v} text {text[k]}")
assert j["csum_match"] is True
assert len(j["backup_roots"]) == 4
assert len(j["sys_chunk_array"]) >= 1
PY
	# every copy that fits is shown with -a
	tl dump-super -a "$img" > "$TMP/all" || fail "$what: dump-super -a"
	btrfs inspect-internal dump-super -a "$img" > "$TMP/all.theirs" 2>/dev/null
	same_file "$TMP/all.theirs" "$TMP/all" || fail "$what: dump-super -a differs"
}

n=0
for csum in crc32c xxhash sha256 blake2; do
	for ns in 4096 16384 65536; do
		for prof in single dup; do
			img="$TMP/img"
			make_image "$img" 300M --csum "$csum" -n "$ns" -m "$prof" -L "lbl-$csum"
			check_image "$img" "csum=$csum nodesize=$ns metadata=$prof"
			n=$((n + 1))
		done
	done
done
for feat in "^no-holes" "^skinny-metadata" "^extref" "block-group-tree"; do
	img="$TMP/img"
	rm -f "$img"; truncate -s 300M "$img"
	mkfs.btrfs -q -f -O "$feat" "$img" >/dev/null 2>&1 || { echo "mkfs.btrfs lacks -O $feat"; continue; }
	check_image "$img" "features $feat"
	n=$((n + 1))
done
make_image "$TMP/img" 300M -R ^free-space-tree
check_image "$TMP/img" "no free space tree"
# a filesystem larger than 256 GiB has three copies
make_image "$TMP/big" 300G
check_image "$TMP/big" "300 GiB image"
[ "$(tl dump-super -a "$TMP/big" | grep -c '^superblock: ')" -eq 3 ] || fail "300G: 3 copies expected"
tl dump-super -s 2 "$TMP/big" | grep -q 'bytenr=274877906944' || fail "-s 2"
echo "checked $((n + 2)) images"
