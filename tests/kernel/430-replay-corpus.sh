#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# replay-log against the kernel on btrfs-progs' log-tree test images
# (fsck-tests/063-*, 065-*, misc-tests/052-* of the corpus, restored with
# btrfs-image -r): a copy replayed by the kernel and one replayed by
# tlogctl are walked and compared (see helpers/replay-lib.sh), btrfs check
# is run on tlogctl's result, and the queries on the unreplayed image must answer
# as the kernel does with and without the log.  The metadumps carry no
# file data: where the kernel's read fails (EIO on a checksum), cat is not
# compared, and btrfs check need only be clean where it is clean on the
# kernel's replay.
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs btrfs btrfs-image xz python3 xfs_io losetup
need_mount
[ -d "$CORPUS/btrfs-progs/tests" ] || skip "corpus not found at $CORPUS"
replay_init
export REPLAY_CHECK_A=1

metadump() {
	local x="$1" name="$2"
	xz -dc "$x" > "$SCN_DIR/dump" || fail "cannot decompress $x"
	btrfs-image -r "$SCN_DIR/dump" "$SCN_DIR/crash.img" > "$SCN_DIR/restore.out" 2>&1 || {
		cat "$SCN_DIR/restore.out"; fail "btrfs-image -r $x"; }
	rm -f "$SCN_DIR/dump"
	[ "$(log_root_of "$SCN_DIR/crash.img")" != 0 ] || fail "$name: the restored image has no log"
	compare_replay "$SCN_DIR/crash.img" "$name"
}

for x in $(find "$CORPUS/btrfs-progs/tests" -name '*.img.xz' \
		\( -path '*/fsck-tests/063-*' -o -path '*/fsck-tests/065-*' -o -path '*/misc-tests/052-*' \) | sort); do
	name="$(basename "$(dirname "$x")")/$(basename "$x" .img.xz)"
	run_scenario "${name//\//:}" metadump "$x" "$name"
done
[ $((SCN_PASSED + SCN_FAILED)) -gt 0 ] || skip "no log-tree metadumps in the corpus"
scenario_summary "btrfs-progs log-tree images"
exit 0
