#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# dump-log on the log-tree metadumps of the corpus: each shows the logged
# file, in text and JSON.  A log tree block with a flipped byte gives one
# error line and exit 1.
. "$(dirname "$0")/../common.sh"
need_cmd xz btrfs-image python3

[ -d "$CORPUS/btrfs-progs/tests" ] || skip "corpus not found at $CORPUS"

n=0
for x in $(find "$CORPUS/btrfs-progs/tests" -name '*.img.xz' | sort); do
	name="$(basename "$(dirname "$x")")/$(basename "$x")"
	xz -dc "$x" > "$TMP/dump" || fail "cannot decompress $x"
	btrfs-image -r "$TMP/dump" "$TMP/img" >/dev/null 2>&1 || fail "btrfs-image -r $x"
	run_nocrash "$TMP/r" "$TLOGCTL" dump-log "$TMP/img" || fail "$name: dump-log crashed"
	[ "$(cat "$TMP/r.rc")" = 0 ] || { cat "$TMP/r.err"; fail "$name: dump-log exited $(cat "$TMP/r.rc")"; }
	awk '/^log tree of subvolume 5:/ { t = 1; next } /^log tree/ { t = 0 }
	     t && /^  inode 257$/ { i = 1; next } /^  inode/ { i = 0 }
	     t && i && /name "file" in directory 256/ { ok = 1 }
	     END { exit !ok }' "$TMP/r.out" || { cat "$TMP/r.out"; fail "$name: name \"file\" of inode 257 not shown"; }
	run_nocrash "$TMP/j" "$TLOGCTL" dump-log --format json "$TMP/img" || fail "$name: JSON crashed"
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
t = [t for t in j["trees"] if t["subvol"] == 5][0]
i = [i for i in t["inodes"] if i["ino"] == 257][0]
assert any(n["name"] == "file" and n["parent"] == 256 for n in i["names"]), i
assert i["inode"] is not None and i["extents"], i
' "$TMP/j.out" || fail "$name: JSON"
	n=$((n + 1))
done
[ $n -gt 0 ] || skip "no log-tree metadumps in the corpus"

# flip a byte in every copy of the log tree block of subvolume 5
logtree=$(python3 -c '
import json, sys
print([t for t in json.load(open(sys.argv[1]))["trees"] if t["subvol"] == 5][0]["root"])
' "$TMP/j.out")
cp "$TMP/img" "$TMP/bad.img"
flip_block "$TMP/bad.img" "$logtree"
expect_error "tree block $logtree" "$TLOGCTL" dump-log "$TMP/bad.img"
[ ! -s "$TMP/r.out" ] || fail "output printed before the error"
expect_error "tree block $logtree" "$TLOGCTL" dump-log --format json "$TMP/bad.img"
echo "$n log metadumps"
exit 0
