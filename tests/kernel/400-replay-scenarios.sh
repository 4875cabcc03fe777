#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# replay-log against the kernel's mount-time replay on hand-written crash
# scenarios, the fstests / CrashMonkey classics of fsync + power cut
# (tests/kernel/replay-scenarios/*.tlw: renames, links, unlinks, directory
# fsyncs, moves between directories, truncate, punch, fallocate with and
# without keep-size, xattrs, symlinks, compression, subvolumes, snapshots,
# reflinks, a commit in the middle, ...), one mixed workload again on other
# formats (mixed block groups, 4K and 64K nodes, xxhash/sha256/blake2
# checksums, single metadata, no skinny metadata, no NO_HOLES, quotas, no
# free space tree, no extref; nodatasum, nodatacow, max_inline=0 mounts),
# and generated ones (3000 files in one fsynced directory, files with
# hundreds of extents, long refs and extrefs, large xattrs).  Each script
# runs on a loop mount with commit=3600 and the image is copied before
# unmounting; the copy replayed by "tlogctl replay-log" must equal the one
# the kernel replays (names, inode numbers, modes, sizes, links, data,
# holes, xattrs, directory order; btrfs check clean) and fiemap, seek, cat
# and ls on the unreplayed copy must answer what the kernel answers after
# its replay, and with --no-log what a ro,rescue=nologreplay mount answers
# (see helpers/replay-lib.sh); the inode items of the two replays must be
# the same too (sequence, exact timestamps), but for the ctime the replay
# gives an inode that loses a name: the time of each replay.  The harness
# first checks that it notices a spoilt replay, a ctime left as it was and
# answers from the wrong view; replay-log's interface
# (--dry-run, --format json, a second run, a missing image) is checked on
# one image.  TLOG_ONLY=PATTERN runs the matching scenarios only.
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs btrfs python3 xfs_io losetup
need_mount
replay_init

SCN="$TOP/tests/kernel/replay-scenarios"
GEN="$TMP/gen"
mkdir -p "$GEN"
export WL_STRICT=1

# --- generated scenarios -----------------------------------------------------
{
	echo "# 3000 new files in one directory, fsync of the directory"
	echo "mkdir /big"
	echo "create /big/committed"
	echo "sync"
	for i in $(seq 0 2999); do echo "create /big/f$i"; done
	echo "write /big/f1500 0 5000 0x61"
	echo "fsync /big"
} > "$GEN/g01-dir-3000-files.tlw"
{
	echo "# 1000 committed files, every other one unlinked, some renamed, fsync of the directory"
	echo "mkdir /d"
	for i in $(seq 0 999); do echo "create /d/file-$i"; done
	echo "sync"
	for i in $(seq 0 2 999); do echo "unlink /d/file-$i"; done
	for i in $(seq 1 10 999); do echo "rename /d/file-$i /d/renamed-$i"; done
	for i in $(seq 0 99); do echo "create /d/new-$i"; done
	echo "fsync /d"
} > "$GEN/g02-dir-1000-unlink-half.tlw"
{
	echo "# 300 separate 4K extents written with gaps, fsync"
	echo "create /f"
	echo "sync"
	for i in $(seq 0 299); do echo "write /f $((i * 8192)) 4096 $((i % 250 + 1))"; done
	echo "fsync /f"
} > "$GEN/g03-many-extents-new.tlw"
{
	echo "# 4M committed, every other 4K block overwritten with fsyncs between, then punched"
	echo "write /f 0 4m 0x61"
	echo "sync"
	for i in $(seq 0 2 511); do
		echo "write /f $((i * 4096)) 4096 $((i % 200 + 2))"
		[ $((i % 64)) = 0 ] && echo "fsync /f"
	done
	echo "punch /f 1m 256k"
	echo "fsync /f"
} > "$GEN/g04-many-extents-overwrite.tlw"
{
	echo "# 40 hard links with 200-byte names (an 8K INODE_REF item), a new link, fsync (generic/040)"
	echo "mkdir /d"
	echo "write /d/f 0 100 0x61"
	long=$(printf 'n%.0s' $(seq 1 195))
	for i in $(seq 10 49); do echo "link /d/f /d/${long}$i"; done
	echo "sync"
	echo "link /d/f /d/newlink"
	echo "write /d/f 100 10 0x62"
	echo "fsync /d/f"
} > "$GEN/g05-long-inode-ref.tlw"
{
	echo "# 90 hard links with 200-byte names: past one leaf's worth the names go to INODE_EXTREF items"
	echo "mkdir /d"
	echo "write /d/f 0 100 0x61"
	long=$(printf 'x%.0s' $(seq 1 195))
	for i in $(seq 10 99); do echo "link /d/f /d/${long}$i"; done
	echo "sync"
	echo "unlink /d/${long}50"
	echo "write /d/f 100 10 0x62"
	echo "fsync /d/f"
} > "$GEN/g08-extrefs-unlink.tlw"
{
	echo "# an inode with INODE_EXTREF names gets a new link in another directory, fsync of the new name"
	echo "mkdir /d"
	echo "mkdir /e"
	echo "write /d/f 0 100 0x61"
	long=$(printf 'y%.0s' $(seq 1 195))
	for i in $(seq 10 99); do echo "link /d/f /d/${long}$i"; done
	echo "sync"
	echo "link /d/f /e/other"
	echo "fsync /e/other"
} > "$GEN/g09-extrefs-new-link.tlw"
{
	echo "# 20 directories of 30 files, half of the directories fsynced, files in the others fsynced"
	for d in $(seq 0 19); do echo "mkdir /t$d"; done
	echo "sync"
	for d in $(seq 0 19); do
		for f in $(seq 0 29); do echo "write /t$d/f$f 0 $((f * 300 + 1)) $((d + 1))"; done
	done
	for d in $(seq 0 2 19); do echo "fsync /t$d"; done
	for d in $(seq 1 2 19); do echo "fsync /t$d/f3"; done
} > "$GEN/g06-tree-600-files.tlw"
{
	echo "# 500 xattrs-carrying files renamed across directories with fsyncs"
	echo "mkdir /src"
	echo "mkdir /dst"
	for i in $(seq 0 99); do echo "write /src/f$i 0 $((i * 41 + 1)) 0x61"; echo "setxattr /src/f$i user.n v$i"; done
	echo "sync"
	for i in $(seq 0 99); do
		echo "write /src/f$i 0 1 0x62"
		echo "fsync /src/f$i"
	done
	for i in $(seq 0 3 99); do echo "rename /src/f$i /dst/f$i"; done
	for i in $(seq 0 9 99); do echo "fsync /dst/f$i"; done
	echo "fsync /src"
} > "$GEN/g07-renames-across-dirs.tlw"

# the mixed workload again on other filesystem formats
fmt_variant() {
	{ echo "# 094-mixed-workload on mkfs.btrfs $2"; echo "# @mkfs: $2"; [ -n "${3:-}" ] && echo "# @mount: $3"
	  grep -v '^#' "$SCN/094-mixed-workload.tlw"; } > "$GEN/f-$1.tlw"
}
fmt_variant mixed-bg "--mixed"
fmt_variant mixed-bg-zstd "--mixed" compress=zstd
fmt_variant nodesize-4k "-n 4096"
fmt_variant nodesize-64k "-n 65536"
fmt_variant csum-xxhash "--csum xxhash"
fmt_variant csum-sha256 "--csum sha256"
fmt_variant csum-blake2 "--csum blake2"
fmt_variant metadata-single "-m single"
fmt_variant no-skinny-metadata "-O ^skinny-metadata"
fmt_variant no-holes-off-zlib "-O ^no-holes" compress=zlib
fmt_variant quota "-R quota"
fmt_variant no-free-space-tree "-R ^free-space-tree"
fmt_variant no-extref "-O ^extref"
fmt_variant nodatasum "" nodatasum
fmt_variant nodatacow "" nodatacow
fmt_variant max-inline-0 "" max_inline=0
{
	echo "# xattr values of 3900 bytes on a file and a directory, committed, then replaced and removed"
	v=$(printf 'v%.0s' $(seq 1 3900))
	w=$(printf 'w%.0s' $(seq 1 3000))
	echo "mkdir /d"
	echo "create /d/f"
	echo "setxattr /d/f user.big1 $v"
	echo "setxattr /d/f user.big2 $v"
	echo "setxattr /d user.dirbig $v"
	echo "sync"
	echo "setxattr /d/f user.big1 $w"
	echo "removexattr /d/f user.big2"
	echo "setxattr /d/f user.big3 $v"
	echo "fsync /d/f"
	echo "create /d/g"
	echo "setxattr /d/g user.new $w"
	echo "setxattr /d user.dirbig $w"
	echo "fsync /d"
} > "$GEN/g11-large-xattrs.tlw"
{
	echo "# 3000 new files in one directory on 4K nodes: a deep log tree"
	echo "# @mkfs: -n 4096"
	echo "mkdir /big"
	echo "create /big/committed"
	echo "sync"
	for i in $(seq 0 2999); do echo "create /big/f$i"; done
	echo "write /big/f1500 0 5000 0x61"
	echo "fsync /big"
} > "$GEN/g10-dir-3000-files-4k-nodes.tlw"

# --- the harness checks itself -----------------------------------------------
# A spoilt B (one byte appended to a file after the replay) must fail.
self_check() {
	TLOG_BREAK_B='echo x >> "$d/mB/d/z"' scenario "$SCN/023-dir-fsync-new-entries.tlw" self-check
}
( SCN_DIR="$TMP/self"; mkdir -p "$SCN_DIR"; MOUNTS=(); LOOPS=(); trap scenario_cleanup EXIT
  self_check ) > "$TMP/self.log" 2>&1 &&
	{ cat "$TMP/self.log"; fail "the harness did not notice a spoilt replay"; }
grep -q '/d/z: sha256 differs' "$TMP/self.log" || { cat "$TMP/self.log"; fail "harness self-check"; }
echo "ok    harness self-check (a spoilt replay is noticed)"
# A replay that leaves the ctime of an inode that lost a name alone (B's
# inode items with every replay-time ctime put back to the mtime) must fail.
forget_replay_ctimes() {
	python3 - "$1" "$2" <<-'PY'
	import json, sys
	path, crash = sys.argv[1], int(sys.argv[2])
	rec = json.load(open(path))
	for e in rec.values():
	    if e["ctime"]["sec"] * 10**9 + e["ctime"]["nsec"] > crash:
	        e["ctime"] = e["mtime"]
	json.dump(rec, open(path, "w"))
	PY
}
( SCN_DIR="$TMP/self3"; mkdir -p "$SCN_DIR"; MOUNTS=(); LOOPS=(); trap scenario_cleanup EXIT
  TLOG_BREAK_ITEMS='forget_replay_ctimes "$d/B.inodes.json" "$crash_time"' \
	scenario "$SCN/007-rename-over-existing-file.tlw" self-check-ctime ) > "$TMP/self.log" 2>&1 &&
	{ cat "$TMP/self.log"; fail "the harness did not notice a replay that keeps the old ctime"; }
grep -q 'ctime differs' "$TMP/self.log" && grep -q 'kernel: .*(replay time' "$TMP/self.log" ||
	{ cat "$TMP/self.log"; fail "harness self-check of the replay's ctime"; }
echo "ok    harness self-check (a ctime not set to the replay's time is noticed)"
# The query comparison notices answers from the wrong view: tlogctl's
# committed view (--no-log) asked against the kernel's replay.
qself() {
	make_crash_image "$SCN/023-dir-fsync-new-entries.tlw" "$SCN_DIR/c.img"
	mount_image "$SCN_DIR/c.img" "$SCN_DIR/m" ro,rescue=nologreplay
	cp --sparse=always "$SCN_DIR/c.img" "$SCN_DIR/a.img"
	mount_image "$SCN_DIR/a.img" "$SCN_DIR/ma"
	python3 -S "$QCMP" --view "log view" "$SCN_DIR/ma" "$SCN_DIR/a.json" --no-log \
		--view "no-log view" "$SCN_DIR/m" "$SCN_DIR/n.json" skip "$TLOGCTL" "$SCN_DIR/c.img"
}
( SCN_DIR="$TMP/self2"; mkdir -p "$SCN_DIR"; MOUNTS=(); LOOPS=(); trap scenario_cleanup EXIT
  qself ) > "$TMP/self.log" 2>&1 &&
	{ cat "$TMP/self.log"; fail "the query comparison did not notice answers from the wrong view"; }
grep -q 'MISMATCH \[log view\] tlogctl .* /d/z' "$TMP/self.log" ||
	{ cat "$TMP/self.log"; fail "query self-check"; }
echo "ok    harness self-check (answers of the wrong view are noticed)"

# --- replay-log's own interface on one crash image ---------------------------
if [ $REPLAY_SELFTEST = 0 ]; then
	iface() {
		make_crash_image "$SCN/007-rename-over-existing-file.tlw" "$SCN_DIR/c.img"
		cp --sparse=always "$SCN_DIR/c.img" "$SCN_DIR/j.img"
		tl replay-log --dry-run --format json "$SCN_DIR/j.img" > "$SCN_DIR/dry.json" ||
			fail "replay-log --dry-run --format json"
		python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$SCN_DIR/dry.json" ||
			{ head -c 2000 "$SCN_DIR/dry.json"; fail "--dry-run --format json is not JSON"; }
		[ "$(log_root_of "$SCN_DIR/j.img")" != 0 ] || fail "--dry-run removed the log"
		tl replay-log -v --format json "$SCN_DIR/j.img" > "$SCN_DIR/real.json" ||
			fail "replay-log -v --format json"
		python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$SCN_DIR/real.json" ||
			{ head -c 2000 "$SCN_DIR/real.json"; fail "replay-log --format json is not JSON"; }
		[ "$(log_root_of "$SCN_DIR/j.img")" = 0 ] || fail "the log is still there"
		# a second run: no log, exit 0
		tl replay-log "$SCN_DIR/j.img" > "$SCN_DIR/again" 2>&1 || fail "replay-log of a replayed image"
		grep -qi 'no log' "$SCN_DIR/again" || { cat "$SCN_DIR/again"; fail "a second replay-log does not say 'no log'"; }
		expect_error "" "$TLOGCTL" replay-log "$SCN_DIR/does-not-exist.img"
	}
	run_scenario replay-log-interface iface
fi

# --- the scenarios -------------------------------------------------------------
for s in "$SCN"/*.tlw "$GEN"/*.tlw; do
	name=$(basename "$s" .tlw)
	[ -n "${TLOG_ONLY:-}" ] && [[ "$name" != *$TLOG_ONLY* ]] && continue
	run_scenario "$name" scenario "$s" "$name"
done
scenario_summary "replay scenarios"
exit 0
