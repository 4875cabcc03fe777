#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# dump-tree walks every tree of populated images without error and finds
# exactly the items btrfs-progs finds; its JSON holds the same items.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs python3

# A source tree with the item types a filesystem commonly holds.
src="$TMP/src"
mkdir -p "$src/dir/sub" "$src/many"
echo hello > "$src/small"
head -c 300000 /dev/urandom > "$src/dir/big"
head -c 5000 /dev/zero > "$src/dir/zeros"
ln -s small "$src/link"
ln "$src/small" "$src/dir/hardlink"
mkfifo "$src/fifo"
for i in $(seq 1 600); do echo "$i" > "$src/many/file-with-a-long-name-$i"; done
setfattr -n user.test -v value "$src/small" 2>/dev/null || true

# item lines "item N key (...)" and node pointers, without item offsets
keys() {
	grep -E '^\s+(item [0-9]+ key|key \()' "$1" | sed -E 's/ itemoff [0-9]+ itemsize [0-9]+//'
}

check_image() {
	local img="$1" what="$2" rc=0
	tl dump-tree "$img" > "$TMP/ours" 2> "$TMP/ours.err" || rc=$?
	[ $rc -eq 0 ] || { cat "$TMP/ours.err"; fail "$what: dump-tree exit $rc"; }
	btrfs inspect-internal dump-tree "$img" > "$TMP/theirs" 2>/dev/null
	keys "$TMP/theirs" | sort > "$TMP/k.theirs"
	keys "$TMP/ours" | sort > "$TMP/k.ours"
	[ -s "$TMP/k.ours" ] || fail "$what: no items printed"
	same_file "$TMP/k.theirs" "$TMP/k.ours" || fail "$what: items differ from btrfs-progs"
	# block headers: same blocks in both
	grep -E '^(leaf|node) [0-9]+ ' "$TMP/theirs" | awk '{print $1, $2}' | sort -u > "$TMP/b.theirs"
	grep -E '^(leaf|node) [0-9]+ ' "$TMP/ours" | awk '{print $1, $2}' | sort -u > "$TMP/b.ours"
	same_file "$TMP/b.theirs" "$TMP/b.ours" || fail "$what: blocks differ"
	tl dump-tree --format json "$img" > "$TMP/json" || fail "$what: json dump"
	python3 - "$TMP/json" "$(wc -l < "$TMP/k.ours")" <<'PY' || fail "$what: json"
import json, sys
j = json.load(open(sys.argv[1]))
n = 0
for t in j["trees"]:
    for b in t["blocks"]:
        n += len(b.get("items", [])) + len(b.get("ptrs", []))
if n != int(sys.argv[2]):
    sys.exit(f"json has {n} items+ptrs, text has {sys.argv[2]}")
PY
	# single trees by name and number
	tl dump-tree -t fs "$img" > "$TMP/t" || fail "$what: -t fs"
	grep -q '^fs tree key (FS_TREE ROOT_ITEM 0)' "$TMP/t" || fail "$what: -t fs heading"
	tl dump-tree -t 2 "$img" > "$TMP/t" || fail "$what: -t 2"
	grep -q 'owner EXTENT_TREE' "$TMP/t" || fail "$what: -t 2 shows the extent tree"
	local rootblock
	rootblock=$(tl dump-super "$img" | awk '$1 == "root" {print $2}')
	tl dump-tree -b "$rootblock" "$img" > "$TMP/t" || fail "$what: -b"
	grep -q "^leaf $rootblock \|^node $rootblock " "$TMP/t" || fail "$what: -b shows the block"
}

n=0
for csum in crc32c xxhash sha256 blake2; do
	for ns in 4096 16384 65536; do
		for prof in single dup; do
			make_image "$TMP/img" 256M --csum "$csum" -n "$ns" -m "$prof" -r "$src"
			check_image "$TMP/img" "csum=$csum nodesize=$ns metadata=$prof"
			n=$((n + 1))
		done
	done
done
for feat in "^no-holes" "^skinny-metadata" "block-group-tree"; do
	rm -f "$TMP/img"; truncate -s 256M "$TMP/img"
	mkfs.btrfs -q -f -O "$feat" -r "$src" "$TMP/img" >/dev/null 2>&1 || continue
	check_image "$TMP/img" "features $feat"
	n=$((n + 1))
done
echo "checked $n images"
