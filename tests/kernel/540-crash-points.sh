#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tlogctl run --crash-points DIR: one image per sync, fsync and fdatasync,
# each exactly the image a run of the script up to that line leaves (a
# power cut right after it) - byte for byte, with SOURCE_DATE_EPOCH fixing
# the clock - and each mounted by the kernel, which replays its log,
# with btrfs check clean afterwards.  Once on a btrfs host directory,
# where the crash points are reflinks, and on the test's own (usually
# not btrfs), where they are sparse copies.
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs btrfs losetup cmp
need_mount
export SOURCE_DATE_EPOCH=1700000000

SCN="$TOP/tests/kernel/replay-scenarios"
# (no subvolumes: their UUIDs are random, so two runs differ in them)
SCRIPTS=(037-fsync-new-dir-entry-then-rename 024-dir-fsync-removed-and-added
	 017-new-link-durable-through-other-fsync 010-rename-then-recreate-name)

# check_points SCRIPT WORK: run with crash points in WORK, check them all;
# N and CLONES get the number of crash points and of reflinks
check_points() {
	local script="$1" w="$2" img n=0 line ops cp
	make_image "$w/fresh.img" 256M
	cp --sparse=always "$w/fresh.img" "$w/run.img"
	tl run --crash-points "$w/cp" --stats --format json "$w/run.img" "$script" > "$w/stats.json" ||
		fail "$(basename "$script"): tlogctl run --crash-points failed"
	ops=$(awk '!/^[[:space:]]*#/ && ($1 == "sync" || $1 == "fsync" || $1 == "fdatasync")' "$script" | wc -l)
	for cp in "$w"/cp/*.img; do
		[ -e "$cp" ] || break
		n=$((n + 1))
		line=$(basename "$cp" .img | cut -d- -f2)
		[ "$(basename "$cp" .img | cut -d- -f1)" = "$(printf %04d $n)" ] ||
			fail "$(basename "$script"): crash point $cp out of sequence"
		awk -v l="$line" 'NR == l { print $1 }' "$script" | grep -qxE 'sync|fsync|fdatasync' ||
			fail "$(basename "$script"): crash point $cp is not at a sync line"
		head -n "$line" "$script" > "$w/prefix.tlw"
		cp --sparse=always "$w/fresh.img" "$w/prefix.img"
		tl run "$w/prefix.img" "$w/prefix.tlw" 2> /dev/null
		cmp -s "$w/prefix.img" "$cp" ||
			fail "$(basename "$script"): crash point $cp differs from a run of lines 1-$line"
		mount_image "$cp" "$w/m" || fail "$(basename "$script"): crash point $cp does not mount"
		umount_image "$w/m"
		btrfs check --readonly "$cp" > "$w/check.out" 2>&1 ||
			{ head -20 "$w/check.out"; fail "$(basename "$script"): btrfs check after replaying $cp"; }
		rm -f "$cp" "$w/prefix.img"
	done
	[ $n = "$ops" ] || fail "$(basename "$script"): $n crash points for $ops sync operations"
	N=$n
	CLONES=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["crash_points_reflinked"])' "$w/stats.json")
}

# on a btrfs host directory: reflinks
make_image "$TMP/host.img" 2G
mount_image "$TMP/host.img" "$TMP/host"
mkdir -p "$TMP/host/w"
check_points "$SCN/${SCRIPTS[0]}.tlw" "$TMP/host/w"
[ "$N" -gt 0 ] && [ "$CLONES" = "$N" ] || fail "on btrfs: $CLONES of $N crash points reflinked"
echo "${SCRIPTS[0]} on btrfs: $N crash points, all reflinks"
umount_image "$TMP/host"

# on the test's directory: copies (reflinks if it happens to be btrfs or XFS)
for s in "${SCRIPTS[@]}"; do
	mkdir -p "$TMP/$s"
	check_points "$SCN/$s.tlw" "$TMP/$s"
	echo "$s: $N crash points ($CLONES reflinks), each the run up to its line, each replayed by the kernel"
done

# refusals: a block device as the image, a file as the directory
expect_error "regular file" "$TLOGCTL" run --crash-points "$TMP/cpx" /dev/null "$SCN/${SCRIPTS[0]}.tlw"
touch "$TMP/notdir"
expect_error "not a directory\|cannot make" "$TLOGCTL" run --crash-points "$TMP/notdir" "$TMP/${SCRIPTS[0]}/fresh.img" "$SCN/${SCRIPTS[0]}.tlw"
exit 0
