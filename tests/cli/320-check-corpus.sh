#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# check on every image of the public corpus (the fuzzed and crafted images
# of btrfs-progs' fuzz tests, and the log-tree metadumps restored by
# btrfs-image), in each mode: plain, --format json, --log-only and
# --check-data-csum.  Whatever the image: no crash, no hang (each run has
# TLOG_CHECK_TIMEOUT seconds, default 60), no sanitizer report, exit 0
# (clean), 1 (problems) or 2 (could not check), JSON that parses, and the
# image unchanged (its size, mtime and a SHA-256 of its data).  Prints
# the verdict of each image and the counts.
. "$(dirname "$0")/../common.sh"
need_cmd xz btrfs-image python3
FUZZ="$TOP/tests/tools/imgfuzz.py"
tl check --help > /dev/null 2>&1 || fail "tlogctl has no check command"

[ -d "$CORPUS/btrfs-progs/tests" ] || skip "corpus not found at $CORPUS"
limit=${TLOG_CHECK_TIMEOUT:-60}

declare -A verdicts=([0]=0 [1]=0 [2]=0)
n=0
mkdir "$TMP/json"
# check_one IMG NAME: every mode on IMG; the plain run's verdict is counted.
# A write changes the mtime, checked after every run; the data is hashed
# before and after them all.
check_one() {
	local img="$1" name="$2" sum st mode rc start secs line=""
	local modes=("" "--format json" "--log-only" "--check-data-csum")
	sum=$(python3 -S "$FUZZ" digest "$img") || fail "$name: cannot hash the image"
	st=$(stat -c '%s %y' "$img")
	for mode in "${modes[@]}"; do
		start=$(date +%s%N)
		# shellcheck disable=SC2086
		run_nocrash "$TMP/r" timeout -k 5 "$limit" "$TLOGCTL" check $mode "$img" ||
			fail "$name: check ${mode:-(plain)} crashed or hung"
		secs=$(( ($(date +%s%N) - start) / 1000000 ))
		rc=$(cat "$TMP/r.rc")
		case $rc in
		0|1|2) ;;
		*) tail -20 "$TMP/r.err"; fail "$name: check ${mode:-(plain)} exited $rc" ;;
		esac
		# the JSON reports are parsed at the end, all at once
		[ "$mode" = "--format json" ] && cp "$TMP/r.out" "$TMP/json/$n.json" &&
			echo "$n $name" >> "$TMP/json/names"
		[ "$(stat -c '%s %y' "$img")" = "$st" ] || fail "$name: check ${mode:-(plain)} wrote to the image"
		if [ -z "$mode" ]; then
			verdicts[$rc]=$((verdicts[$rc] + 1))
			line="$name: exit $rc ($(grep -c . "$TMP/r.out") lines, ${secs} ms)"
		fi
	done
	[ "$(python3 -S "$FUZZ" digest "$img")" = "$sum" ] || fail "$name: check changed the image"
	echo "$line"
	n=$((n + 1))
}

# unxz SRC DST: decompressed, sparse (most of these images are zeros)
unxz_sparse() {
	rm -f "$2"
	xz -dc "$1" | dd of="$2" bs=64k iflag=fullblock conv=sparse status=none ||
		fail "cannot decompress $1"
}

for x in "$CORPUS"/btrfs-progs/tests/fuzz-tests/images/*.raw.xz; do
	unxz_sparse "$x" "$TMP/img"
	check_one "$TMP/img" "$(basename "$x")"
done

# Log-tree metadumps, restored by btrfs-image (as 040-corpus does).
for x in $(find "$CORPUS/btrfs-progs/tests" -name '*.img.xz' | sort); do
	xz -dc "$x" > "$TMP/dump" || fail "cannot decompress $x"
	btrfs-image -r "$TMP/dump" "$TMP/img" >/dev/null 2>&1 || fail "btrfs-image -r $x"
	check_one "$TMP/img" "$(basename "$(dirname "$x")")/$(basename "$x")"
done
[ $n -gt 0 ] || skip "no images in the corpus"
python3 -S - "$TMP/json" <<-'PY' || fail "check --format json printed something that is not JSON"
	import json, sys
	d = sys.argv[1]
	bad = 0
	for line in open(d + "/names"):
	    i, name = line.split(" ", 1)
	    try:
	        json.load(open("%s/%s.json" % (d, i)))
	    except ValueError as e:
	        print("%s: --format json: %s" % (name.strip(), e))
	        bad = 1
	sys.exit(bad)
	PY
echo "$n images: ${verdicts[0]} clean, ${verdicts[1]} with problems, ${verdicts[2]} could not be checked"
exit 0
