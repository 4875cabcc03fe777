#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# check on mutants of kernel-written images: the mutation fuzzer of
# tests/cli/330-check-mutate.sh (tests/tools/imgfuzz.py check-fuzz, whose
# assertions 330 lists) on two images the kernel wrote:
#  - used: 4 KiB nodes (trees three levels deep), mounted with
#    compress=zstd, filled with files of every size, xattrs, hard links,
#    symlinks, reflinked copies, preallocated and punched files, a
#    subvolume and a snapshot both changed afterwards, deletions; then
#    unmounted;
#  - crash: a crash image with a log tree (helpers/replay-lib.sh
#    make_mixed_crash_image: written and fsynced on a commit=3600 mount,
#    copied while still mounted).
# Both must check clean before they are mutated.  TLOG_FUZZ_BUDGET seconds
# in all (45), TLOG_FUZZ_COUNT mutants at most per image (5000), TLOG_SEED
# (default: the clock; printed), TLOG_FUZZ_ONLY="N ...", TLOG_FUZZ_BASE
# ("used crash"); failing mutants are kept in TLOG_FUZZ_SAVE
# (/tmp/tlog-check-fuzz).
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs btrfs python3 xfs_io setfattr
need_mount
FUZZ="$TOP/tests/tools/imgfuzz.py"
tl check --help > /dev/null 2>&1 || fail "tlogctl has no check command"

seed=${TLOG_SEED:-$(date +%s)}
budget=${TLOG_FUZZ_BUDGET:-45}
count=${TLOG_FUZZ_COUNT:-5000}
bases=${TLOG_FUZZ_BASE:-used crash}
save=${TLOG_FUZZ_SAVE:-/tmp/tlog-check-fuzz}
echo "seed $seed (TLOG_SEED), ${budget}s (TLOG_FUZZ_BUDGET), at most $count mutants per base"

# make_used_image IMG: the kernel's image after some use (see the top)
make_used_image() {
	local img="$1" m="$TMP/used.mnt" i
	make_image "$img" 256M -n 4096
	mount_image "$img" "$m" compress=zstd
	mkdir -p "$m/d/e" "$m/d/deep/a/b"
	for i in $(seq 1 150); do
		if [ $((i % 3)) = 0 ]; then
			xfs_io -f -c "pwrite -S $((i % 256)) 0 $((4096 * (i % 13 + 1) + i))" "$m/d/f$i" > /dev/null
		else
			head -c $((40 + i * 11)) /dev/urandom > "$m/d/f$i"
		fi
		[ $((i % 4)) = 0 ] && setfattr -n user.k$i -v "value $i" "$m/d/f$i"
		[ $((i % 7)) = 0 ] && ln "$m/d/f$i" "$m/d/e/l$i"
		[ $((i % 11)) = 0 ] && ln -s "../../f$i" "$m/d/deep/a/s$i"
	done
	head -c 1M /dev/urandom > "$m/d/random"
	xfs_io -f -c "pwrite 0 2m" "$m/d/big" > /dev/null
	cp --reflink=always "$m/d/big" "$m/d/big.clone" || fail "reflink copy"
	xfs_io -c "reflink $m/d/random 64k 1m 128k" "$m/d/big" > /dev/null || fail "reflink range"
	xfs_io -f -c "falloc 0 1m" -c "pwrite 256k 16k" "$m/d/prealloc" > /dev/null
	xfs_io -c "fpunch 100k 40k" "$m/d/big.clone"
	btrfs subvolume create "$m/sub" > /dev/null || fail "subvolume create"
	echo "in the subvolume" > "$m/sub/file"
	xfs_io -f -c "pwrite 0 300k" "$m/sub/data" > /dev/null
	sync
	btrfs subvolume snapshot "$m" "$m/snap" > /dev/null || fail "snapshot"
	xfs_io -c "pwrite -S 0x22 0 8k" "$m/snap/d/big" > /dev/null
	rm -f "$m/d/f2" "$m/d/f3" "$m/snap/d/f5"
	mv "$m/d/f9" "$m/d/e/f9"
	echo changed >> "$m/d/f10"
	umount_image "$m"
}

n=$(echo $bases | wc -w)
bad=0
for b in $bases; do
	img="$TMP/$b.img"
	case "$b" in
	used) make_used_image "$img" ;;
	crash) make_mixed_crash_image "$img" ;;
	*) fail "unknown base image '$b' (used, crash)" ;;
	esac
	sum=$(python3 -S "$FUZZ" digest "$img")
	run_nocrash "$TMP/c" "$TLOGCTL" check "$img" || fail "$b: check of the base image crashed"
	[ "$(cat "$TMP/c.rc")" = 0 ] || {
		cat "$TMP/c.out" "$TMP/c.err"; fail "$b: the base image is not clean (exit $(cat "$TMP/c.rc"))"; }
	[ "$(python3 -S "$FUZZ" digest "$img")" = "$sum" ] || fail "$b: check changed the base image"
	tl dump-tree --format json "$img" > "$TMP/trees.json" || fail "$b: dump-tree"
	tl dump-tree -t chunk --format json "$img" > "$TMP/chunk.json" || fail "$b: dump-tree -t chunk"
	python3 -S "$FUZZ" tree-layout "$img" "$TMP/trees.json" "$TMP/chunk.json" > "$TMP/lay.json" ||
		fail "$b: imgfuzz.py tree-layout"
	python3 -S "$FUZZ" check-fuzz "$img" "$TMP/lay.json" "$seed" $((budget / n)) "$count" \
		"$save" "$b" "$TLOGCTL" check || bad=1
done
[ $bad = 0 ] || fail "check failed on mutants (seed $seed; TLOG_SEED=$seed TLOG_FUZZ_ONLY=N TLOG_FUZZ_BASE=BASE to repeat one)"
exit 0
