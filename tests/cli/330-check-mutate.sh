#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# check on mutants of images tlogctl wrote: a mutation fuzzer run for a
# fixed time.  Two base images, made by "tlogctl mkfs" and "tlogctl run"
# (directories, inline and regular extents, compressed ones in the
# second, prealloc, a sparse file, xattrs, hard links, symlinks, a
# snapshot with a changed file, and an fsync log on top), one with 16 KiB
# nodes in DUP metadata, one with 4 KiB nodes, single metadata and
# xxhash, so that trees are three levels deep.  Both must check clean.
#
# tests/tools/imgfuzz.py check-fuzz then changes one tree block of any
# tree, log trees included, in every copy: bit flips, header fields,
# item headers (keys, offsets, sizes), node key pointers, 1-8 byte
# integers inside item data; the checksum is re-sealed half of the time
# so that the checks past it are reached.  After each check the block is
# put back.  Asserted for every mutant:
#  - no crash, hang (TLOG_CHECK_TIMEOUT, 30 s) or sanitizer report, and
#    an exit status of 0, 1 or 2;
#  - the image unchanged by the check;
#  - exit 1 when the change is one every checker must report: unsealed,
#    or the block's bytenr, fsid, generation or level, the owner of a
#    tree that shares no blocks, the layout rules of the kernel's tree
#    checker (key order, item data contiguous and inside the leaf,
#    nritems), a node's key pointer (key, block pointer, generation), the
#    first key of a leaf its parent points at with another;
#  - exit 0 when only unused bytes of a block changed (sealed);
#  - --format json (every 8th run) prints JSON that parses.
# Other changes may be harmless: how often check calls them clean or not
# is printed, per region of the block.
#
# TLOG_FUZZ_BUDGET seconds in all (45), TLOG_FUZZ_COUNT mutants at most
# per base image (5000); TLOG_SEED (default: the clock; printed) picks the
# mutants, TLOG_FUZZ_ONLY="N ..." runs those only, TLOG_FUZZ_BASE="dup
# single" the base images.  Failing mutants are kept in TLOG_FUZZ_SAVE
# (/tmp/tlog-check-fuzz), each with the line that repeats it.
. "$(dirname "$0")/../common.sh"
need_cmd python3
FUZZ="$TOP/tests/tools/imgfuzz.py"
tl check --help > /dev/null 2>&1 || fail "tlogctl has no check command"

seed=${TLOG_SEED:-$(date +%s)}
budget=${TLOG_FUZZ_BUDGET:-45}
count=${TLOG_FUZZ_COUNT:-5000}
bases=${TLOG_FUZZ_BASE:-dup single}
save=${TLOG_FUZZ_SAVE:-/tmp/tlog-check-fuzz}
echo "seed $seed (TLOG_SEED), ${budget}s (TLOG_FUZZ_BUDGET), at most $count mutants per base"

# populate SCRIPT: a bit of everything, committed, then a snapshot, then
# an fsync log left as a power cut leaves it
populate() {
	local i
	{
		echo "mkdir /d"; echo "mkdir /d/e"; echo "mkdir /d/deep"; echo "mkdir /d/deep/a"
		for i in $(seq 1 120); do
			if [ $((i % 3)) = 0 ]; then
				echo "write /d/f$i 0 $((4096 * (i % 17 + 1) + i))"
			else
				echo "write /d/f$i 0 $((50 + i * 13))"
			fi
			[ $((i % 4)) = 0 ] && echo "setxattr /d/f$i user.k$i value$i"
			[ $((i % 7)) = 0 ] && echo "link /d/f$i /d/e/l$i"
			[ $((i % 11)) = 0 ] && echo "symlink /d/f$i /d/deep/a/s$i"
		done
		echo "mknod /d/fifo p"
		echo "create /d/pre"; echo "falloc /d/pre 0 256k"; echo "write /d/pre 64k 8k"
		echo "create /d/sparse"; echo "truncate /d/sparse 10m"; echo "write /d/sparse 5m 8k"
		echo "write /d/big 0 600k"; echo "punch /d/big 100k 40k"
		echo "sync"
		echo "mksnap / /snap"
		echo "write /snap/d/f3 0 4k 0x22"; echo "unlink /d/f2"; echo "rename /d/f5 /d/e/f5"
		echo "sync"
		echo "write /d/log1 0 9000"; echo "setxattr /d/log1 user.x y"
		echo "link /d/log1 /d/e/log1b"; echo "fsync /d/log1"
		echo "write /d/f6 50 10 0x33"; echo "fsync /d/f6"
		echo "mkdir /d/newdir"; echo "create /d/newdir/x"; echo "fsync /d/newdir"
	} > "$1"
}

# base NAME IMG: make the base image NAME
base() {
	local name="$1" img="$2" opts run_opts=""
	case "$name" in
	dup) opts="" ;;
	single) opts="-n 4096 -m single --csum xxhash"; run_opts="-o compress=zstd" ;;
	*) fail "unknown base image '$name' (dup, single)" ;;
	esac
	tl mkfs -q -f -b 256M $opts "$img" || fail "$name: mkfs"
	populate "$TMP/script"
	tl run $run_opts "$img" "$TMP/script" > "$TMP/run.out" 2>&1 || {
		cat "$TMP/run.out"; fail "$name: run"; }
	[ -s "$TMP/run.out" ] && { cat "$TMP/run.out"; fail "$name: an operation was refused"; }
	[ "$(tl dump-super "$img" | awk '$1 == "log_root" {print $2}')" != 0 ] ||
		fail "$name: the run left no log"
}

n=$(echo $bases | wc -w)
bad=0
for b in $bases; do
	img="$TMP/$b.img"
	base "$b" "$img"
	sha=$(sha256sum < "$img")
	run_nocrash "$TMP/c" "$TLOGCTL" check "$img" || fail "$b: check of the base image crashed"
	[ "$(cat "$TMP/c.rc")" = 0 ] || {
		cat "$TMP/c.out" "$TMP/c.err"; fail "$b: the base image is not clean (exit $(cat "$TMP/c.rc"))"; }
	[ "$(sha256sum < "$img")" = "$sha" ] || fail "$b: check changed the base image"
	tl dump-tree --format json "$img" > "$TMP/trees.json" || fail "$b: dump-tree"
	tl dump-tree -t chunk --format json "$img" > "$TMP/chunk.json" || fail "$b: dump-tree -t chunk"
	python3 -S "$FUZZ" tree-layout "$img" "$TMP/trees.json" "$TMP/chunk.json" > "$TMP/lay.json" ||
		fail "$b: imgfuzz.py tree-layout"
	python3 -S "$FUZZ" check-fuzz "$img" "$TMP/lay.json" "$seed" $((budget / n)) "$count" \
		"$save" "$b" "$TLOGCTL" check || bad=1
done
[ $bad = 0 ] || fail "check failed on mutants (seed $seed; TLOG_SEED=$seed TLOG_FUZZ_ONLY=N TLOG_FUZZ_BASE=BASE to repeat one)"
exit 0
