#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# JSON is streamed: on an image of a 100,000-entry directory, dump-tree
# and ls --format json run within a fixed address space limit, far below
# what building the whole document took (0.8 GB for ls, 2.9 GB for
# dump-tree), and print the whole document.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs python3

# Sanitizers reserve terabytes of address space: no limit can apply.
grep -qa __asan_init "$TLOGCTL" && skip "tlogctl is built with a sanitizer"

NR=100000
LIMIT_KB=$((200 * 1024))
src="$TMP/src"
mkdir -p "$src/d"
(cd "$src/d" && seq -f "entry-%06g" 1 $NR | xargs touch) || fail "cannot make $NR files"
img="$TMP/img"
make_image "$img" 1G -r "$src"
rm -rf "$src"

# CMD... under the limit, stdout in $TMP/out
limited() {
	local rc=0
	( ulimit -v $LIMIT_KB && exec "$TLOGCTL" "$@" ) > "$TMP/out" 2> "$TMP/err" || rc=$?
	[ $rc -eq 0 ] || { head -5 "$TMP/err"; fail "exit $rc within ${LIMIT_KB} KiB: $*"; }
}

limited ls --format json "$img" /d
python3 - "$TMP/out" $NR <<'PY' || fail "ls --format json: the document"
import json, sys
j = json.load(open(sys.argv[1]))
n = len(j["entries"])
if j["path"] != "/d" or n != int(sys.argv[2]) or j["entries"][-1]["name"] != "entry-%06d" % n:
    sys.exit(f"path {j['path']}, {n} entries")
PY

limited dump-tree --format json "$img"
# the document is large: its shape from the start and the end, its items by count
head -3 "$TMP/out" | tr -d ' \n' | grep -qx '{"trees":\[{' || fail "dump-tree --format json: start"
tail -c 200 "$TMP/out" | grep -q '"uuid":"[0-9a-f-]*"$' || fail "dump-tree --format json: end"
n=$(grep -c '"type_name":"DIR_INDEX"' "$TMP/out")
[ "$n" -ge $NR ] || fail "dump-tree --format json: $n DIR_INDEX keys, want at least $NR"

limited dump-tree "$img"
limited ls -l "$img" /d
echo "$NR entries within $LIMIT_KB KiB"
exit 0
