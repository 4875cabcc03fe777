#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The transaction's log (tlog_trans_log_tree / tlog_trans_sync_log) as the
# kernel replays it.  tests/tools/ltest makes a new file with data in the
# running transaction of a mkfs.btrfs image holding one committed file,
# logs its items and checksums, syncs the log and stops without a commit
# (a power cut after fsync).  The primary superblock alone gets log_root,
# the generation stays.  The kernel's mount replays it: the file is there
# with its data, the committed file unchanged, btrfs check clean after the
# mount; tlogctl replay-log on a copy gives the same tree (treecmp.py).
# Two syncs in one transaction replay to the second.  Every write of a
# sync failed and dropped in turn (TLOG_FAULT_INJECT): the kernel mounts
# and shows the state before that sync or after it, btrfs check clean,
# the committed file untouched.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs python3 losetup cmp
need_mount
LTEST="$BUILDDIR/tests/tools/ltest"
TREECMP="$TOP/tests/tools/treecmp.py"
[ -x "$LTEST" ] || fail "tests/tools/ltest is not built"
mnt="$TMP/mnt"
SIZE=100000

log_root_of() {
	btrfs inspect-internal dump-super ${2:+-s "$2"} "$1" 2>/dev/null |
		awk '$1 == "log_root" {print $2}'
}
gen_of() {
	btrfs inspect-internal dump-super "$1" 2>/dev/null | awk '$1 == "generation" {print $2}'
}

# file_is PATH SIZE: PATH holds SIZE bytes of ltest's pattern
file_is() {
	python3 - "$1" "$2" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
n = int(sys.argv[2])
want = bytes(0x41 + i % 23 for i in range(n))
sys.exit(0 if data == want else 1)
PY
}

# the base: mkfs.btrfs, one committed file - small, as /fresh is, so that
# both extents are of the same size class (block-group.h) and the data of
# /fresh needs no new chunk, which would make the log impossible (as for
# the kernel: its fsync would commit)
base="$TMP/base.img"
make_image "$base" 256M
mount_image "$base" "$mnt"
head -c 90000 /dev/urandom > "$TMP/committed"
cp "$TMP/committed" "$mnt/committed"
umount_image "$mnt"
base_gen=$(gen_of "$base")

# kernel_state IMG [JSON]: mount (replaying the log), STATE = the size of
# /fresh (-1 if absent) after checking the committed file and fresh's
# content, unmount, btrfs check.  Fails the test on anything else.  Not
# run in a subshell: the mounts must stay known to the cleanup trap.
STATE=
kernel_state() {
	local img="$1" size=-1
	mount_image "$img" "$mnt" || fail "$img: the kernel does not mount it"
	cmp -s "$TMP/committed" "$mnt/committed" || fail "$img: the committed file changed"
	if [ -e "$mnt/fresh" ]; then
		size=$(stat -c %s "$mnt/fresh")
		file_is "$mnt/fresh" "$size" || fail "$img: /fresh has the wrong data"
	fi
	[ -n "${2:-}" ] && python3 "$TREECMP" walk "$mnt" "$2" > /dev/null
	umount_image "$mnt"
	btrfs check --readonly "$img" > "$TMP/check.out" 2>&1 ||
		{ cat "$TMP/check.out"; fail "$img: btrfs check after the kernel's mount"; }
	STATE=$size
}

# one sync, then the power cut
img="$TMP/one.img"
cp --sparse=always "$base" "$img"
"$LTEST" "$img" fresh $SIZE 2> "$TMP/ltest.err" || { cat "$TMP/ltest.err"; fail "ltest"; }
[ "$(log_root_of "$img")" != 0 ] || fail "no log root after the sync"
[ "$(log_root_of "$img" 1)" = 0 ] || fail "superblock copy 1 got the log root"
[ "$(gen_of "$img")" = "$base_gen" ] || fail "the sync changed the generation"
tl dump-log "$img" > "$TMP/dump-log" || fail "dump-log"
grep -q 'name "fresh"' "$TMP/dump-log" || fail "the log does not name the file"
cp --sparse=always "$img" "$TMP/offline.img"
kernel_state "$img" "$TMP/kernel.json"
[ "$STATE" = $SIZE ] || fail "the kernel's replay lost the file"
[ "$(log_root_of "$img")" = 0 ] || fail "the kernel's mount left the log"
tl replay-log "$TMP/offline.img" > /dev/null || fail "tlogctl replay-log"
btrfs check --readonly "$TMP/offline.img" > /dev/null 2>&1 || fail "btrfs check after replay-log"
kernel_state "$TMP/offline.img" "$TMP/offline.json"
[ "$STATE" = $SIZE ] || fail "replay-log lost the file"
python3 "$TREECMP" diff --labels kernel,replay-log "$TMP/kernel.json" "$TMP/offline.json" ||
	fail "replay-log and the kernel replay to different trees"
echo "one sync: replayed by the kernel and by replay-log alike"

# two syncs in one transaction: the second's log
img="$TMP/two.img"
cp --sparse=always "$base" "$img"
"$LTEST" "$img" fresh $SIZE 2 2> /dev/null || fail "ltest, two syncs"
kernel_state "$img"
[ "$STATE" = $SIZE ] || fail "two syncs: not the second sync's log"
echo "two syncs: the second's log"

# faults at every write of the (last) sync
for syncs in 1 2; do
	half=$(( (SIZE + 1) / 2 ))
	before=-1
	[ $syncs = 2 ] && before=$half
	cp --sparse=always "$base" "$TMP/count.img"
	read -r first last < <("$LTEST" "$TMP/count.img" fresh $SIZE $syncs 2>&1 |
				awk '/^sync-writes:/ {print $2, $3}')
	[ -n "$first" ] && [ "$last" -ge "$first" ] || fail "no write count from ltest"
	old=0 new=0
	for mode in fail drop; do
		for n in $(seq "$first" "$last"); do
			img="$TMP/fault.img"
			cp --sparse=always "$base" "$img"
			rc=0
			TLOG_FAULT_INJECT="$mode:$n" "$LTEST" "$img" fresh $SIZE $syncs \
				> /dev/null 2>&1 || rc=$?
			if [ $mode = fail ] && [ $rc = 0 ]; then
				fail "$syncs syncs, fail at write $n: not noticed"
			fi
			if [ $mode = drop ] && [ $rc != 0 ]; then
				fail "$syncs syncs, drop at write $n: ltest failed"
			fi
			kernel_state "$img"
			got=$STATE
			case "$got" in
			"$before") old=$((old + 1)) ;;
			$SIZE) new=$((new + 1)) ;;
			*) fail "$syncs syncs, $mode at write $n: /fresh has $got bytes" ;;
			esac
		done
	done
	echo "$syncs syncs: writes $first..$last of the last sync failed/dropped: $old left the state before it, $new the new one"
	[ $old -gt 0 ] || fail "no fault left the state before the sync"
done
exit 0
