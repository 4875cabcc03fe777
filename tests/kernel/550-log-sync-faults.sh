#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tlogctl run interrupted at every write - the write and all later ones
# failing, or silently lost as in a power cut - over scripts whose fsyncs
# write logs (and fall back to commits): the kernel mounts every such
# image, replaying its log, to the state of one of the run's crash points
# (tlogctl run --crash-points of the uninterrupted run, each replayed by
# the kernel too) or the state before the script, never a mix; btrfs
# check finds nothing after the replay.  The number of writes a clean
# run issues bounds the loop, so every write of every log sync and
# commit is hit.
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs btrfs python3 losetup
need_mount
export SOURCE_DATE_EPOCH=1700000000

cat > "$TMP/mixed.tlw" <<'S'
mkdir /d
write /d/f 0 9000 0x61
write /g 0 100 0x62
sync
write /d/f 9000 5000 0x63
fsync /d/f
mkdir /d/sub
create /d/sub/x
rename /g /d/g2
fsync /d
link /d/f /d/sub/f2
write /d/sub/x 0 3000 0x64
fsync /d/sub/x
unlink /d/g2
setxattr /d/f user.k v
fsync /d/f
S
SCRIPTS=("$TMP/mixed.tlw" "$TOP/tests/kernel/replay-scenarios/017-new-link-durable-through-other-fsync.tlw"
	 "$TOP/tests/kernel/replay-scenarios/024-dir-fsync-removed-and-added.tlw")

# walk IMG JSON: mount (the kernel replays the log), walk, unmount, btrfs check
walk() {
	mount_image "$1" "$TMP/m" || return 1
	python3 -S "$TREECMP" walk "$TMP/m" "$2" > /dev/null || { umount_image "$TMP/m"; return 1; }
	umount_image "$TMP/m"
	btrfs check --readonly "$1" > "$TMP/check.out" 2>&1 || { head -20 "$TMP/check.out"; return 1; }
}

make_image "$TMP/fresh.img" 256M
total=0
for s in "${SCRIPTS[@]}"; do
	name=$(basename "$s" .tlw)
	w="$TMP/$name"
	mkdir -p "$w"
	# the states a power cut may leave: before the script, each crash point
	cp --sparse=always "$TMP/fresh.img" "$w/s0.img"
	walk "$w/s0.img" "$w/state-0000.json" || fail "$name: the fresh image"
	rm -f "$w/s0.img"
	cp --sparse=always "$TMP/fresh.img" "$w/run.img"
	tl run --crash-points "$w/cp" --stats --format json "$w/run.img" "$s" > "$w/stats.json" ||
		fail "$name: the uninterrupted run"
	writes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["blocks_written"])' "$w/stats.json")
	logs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["log_syncs"])' "$w/stats.json")
	[ "$logs" -gt 0 ] || fail "$name: the uninterrupted run synced no log"
	for cp in "$w"/cp/*.img; do
		walk "$cp" "$w/state-$(basename "$cp" .img).json" || fail "$name: crash point $cp"
		rm -f "$cp"
	done
	states=("$w"/state-*.json)
	for mode in drop fail; do
		for k in $(seq 1 "$writes"); do
			cp --sparse=always "$TMP/fresh.img" "$w/x.img"
			TLOG_FAULT_INJECT=$mode:$k run_nocrash "$w/x" "$TLOGCTL" run "$w/x.img" "$s" ||
				fail "$name: $mode:$k: tlogctl run crashed"
			if [ $mode = fail ] && [ "$(cat "$w/x.rc")" = 0 ]; then
				fail "$name: fail:$k: a failed write and the run exits 0"
			fi
			walk "$w/x.img" "$w/x.json" || fail "$name: $mode:$k: the kernel cannot mount and replay the image, or btrfs check complains"
			match=
			for st in "${states[@]}"; do
				if python3 -S "$TREECMP" diff "$st" "$w/x.json" > /dev/null 2>&1; then
					match=$(basename "$st" .json)
					break
				fi
			done
			if [ -z "$match" ]; then
				python3 -S "$TREECMP" diff --labels last-crash-point,interrupted "${states[-1]}" "$w/x.json" | head -20
				fail "$name: $mode:$k: the state after the kernel's replay is none of the crash points'"
			fi
			total=$((total + 1))
			rm -f "$w/x.img"
		done
	done
	echo "$name: $writes writes ($logs log syncs, ${#states[@]} states), each failed and each dropped: every image replays to one of the states"
done
echo "$total interrupted runs, each mounted and replayed by the kernel"
exit 0
