#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# JSON is streamed: on an image of a 100,000-entry directory, dump-tree
# and ls --format json run within a fixed memory bound, far below what
# building the whole document took (0.8 GB for ls, 2.9 GB for dump-tree),
# and print the whole document.  The bound is on the address space
# (ulimit -v); sanitizers reserve terabytes of it, so there the peak
# resident size is bounded instead, with room for their shadow memory.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs python3

NR=100000
LIMIT_KB=$((200 * 1024))
SANITIZED=0
if grep -qa __asan_init "$TLOGCTL"; then
	SANITIZED=1
	LIMIT_KB=$((500 * 1024))
	# freed memory waits in the quarantine: keep that small and fixed
	export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=16"
fi
src="$TMP/src"
mkdir -p "$src/d"
(cd "$src/d" && seq -f "entry-%06g" 1 $NR | xargs touch) || fail "cannot make $NR files"
img="$TMP/img"
make_image "$img" 1G -r "$src"
rm -rf "$src"

# CMD... under the limit, stdout in $TMP/out
limited() {
	local rc=0
	if [ $SANITIZED = 0 ]; then
		( ulimit -v $LIMIT_KB && exec "$TLOGCTL" "$@" ) > "$TMP/out" 2> "$TMP/err" || rc=$?
	else
		python3 - $LIMIT_KB "$TLOGCTL" "$@" > "$TMP/out" 2> "$TMP/err" <<'PY' || rc=$?
import resource, subprocess, sys
limit = int(sys.argv[1])
rc = subprocess.call(sys.argv[2:])
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
if rc == 0 and peak > limit:
    sys.stderr.write(f"peak resident size {peak} KiB is over {limit} KiB\n")
    rc = 1
sys.exit(rc)
PY
	fi
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
