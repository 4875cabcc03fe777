#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# An interrupted replay-log leaves a valid image that replays to the right
# tree.  On small kernel-made crash images (a new file with data and an
# xattr; a rename over an existing file; a directory with new, removed and
# renamed entries, fsynced; a reflinked copy partly overwritten), every
# write of "tlogctl replay-log" in turn fails (TLOG_FAULT_INJECT=fail:N:
# exit 1, one error line) or is lost with all after it (drop:N, a power
# cut).  Each time btrfs check accepts the image, and either it still has
# its log and a second replay-log gives the reference tree (a copy replayed
# without faults, itself equal to the kernel's replay), or it is replayed
# already and shows that tree; for every KERNEL_EVERY-th write (4) the
# kernel's mount replays the interrupted image to that tree as well.
# A log block (of the log root tree, of a log tree) corrupted in every copy
# makes replay-log fail with one error line naming the block and write
# nothing; --dry-run writes nothing.  Trees are compared on mounts by
# tests/tools/treecmp.py.  TLOG_ONLY="NAME ..." runs some scenarios only.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs python3 xfs_io losetup cmp cp
need_mount
TREECMP="$TOP/tests/tools/treecmp.py"
[ -f "$TREECMP" ] || fail "tests/tools/treecmp.py is missing"
tl replay-log --help > /dev/null 2>&1 || fail "tlogctl has no replay-log command"
KERNEL_EVERY=${KERNEL_EVERY:-4}
mnt="$TMP/mnt"

# the primary superblock's log root, as the kernel and btrfs-progs see it
log_root_of() {
	btrfs inspect-internal dump-super "$1" 2>/dev/null | awk '$1 == "log_root" {print $2}'
}

# mount_ro IMG DIR: mount on a read-only loop device, where an image that
# still has a log cannot be mounted ("log replay required on RO media")
mount_ro() {
	local loop
	mkdir -p "$2"
	loop=$(losetup -r -f --show "$1") || fail "losetup -r $1"
	LOOPS+=("$loop")
	mount -o ro "$loop" "$2" || return 1
	MOUNTS+=("$2")
}

# walk_cmp DIR OUT REF LABEL: walk the mounted DIR into OUT and compare it
# with the walk REF; on a difference show it and fail with LABEL
walk_cmp() {
	python3 -S "$TREECMP" walk "$1" "$2" --diff --labels reference,"$4" "$3" > "$TMP/tree.diff" 2>&1 || {
		head -30 "$TMP/tree.diff"; umount_image "$1"; fail "$4: not the reference tree"; }
}

# ---- the scenarios: a committed state (setup_*), then what only the log holds (log_*)

setup_newfile() {
	mkdir "$1/d"
	echo committed > "$1/d/old"
}
log_newfile() {
	python3 - "$1" <<-'PY'
	import os, sys
	p = os.path.join(sys.argv[1], "d", "new")
	fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o640)
	os.write(fd, bytes(range(256)) * 800)
	os.setxattr(p, "user.tag", b"logged")
	os.fsync(fd)
	PY
}

setup_rename() {
	xfs_io -f -c "pwrite -q -S 0x61 0 20k" "$1/target" || return 1
	echo other > "$1/other"
}
log_rename() {
	python3 - "$1" <<-'PY'
	import os, sys
	m = sys.argv[1]
	fd = os.open(os.path.join(m, "target.tmp"), os.O_CREAT | os.O_WRONLY, 0o600)
	os.write(fd, b"new contents " * 4000)
	os.fsync(fd)
	os.close(fd)
	os.rename(os.path.join(m, "target.tmp"), os.path.join(m, "target"))
	fd = os.open(os.path.join(m, "target"), os.O_RDONLY)
	os.fsync(fd)
	PY
}

setup_dir() {
	mkdir "$1/d"
	for i in 0 1 2 3 4 5 6 7 8 9; do echo "file $i" > "$1/d/f$i"; done
	ln -s f0 "$1/d/link"
}
log_dir() {
	python3 - "$1" <<-'PY'
	import os, sys
	d = os.path.join(sys.argv[1], "d")
	for n in ("f2", "f5", "link"):
	    os.unlink(os.path.join(d, n))
	os.rename(os.path.join(d, "f7"), os.path.join(d, "f7b"))
	os.mkdir(os.path.join(d, "sub"))
	for n in ("n1", "n2", "n3"):
	    with open(os.path.join(d, n), "wb") as f:
	        f.write(n.encode() * 3000)
	fd = os.open(d, os.O_RDONLY)
	os.fsync(fd)
	PY
}

setup_reflink() {
	# a 4 KiB extent first: the data block group then takes small extents
	# (size classes), and the 4 KiB write after the reflink needs no new
	# block group -- an fsync after one commits instead of logging
	xfs_io -f -c "pwrite -q -S 0x11 0 4k" -c fsync "$1/small" &&
		xfs_io -f -c "pwrite -q -S 0x5a 0 256k" "$1/src"
}
log_reflink() {
	cp --reflink=always "$1/src" "$1/dst" || return 1
	xfs_io -c "pwrite -q -S 0xcd 64k 4k" -c fsync "$1/dst"
}

# make_crash NAME: the crash image $TMP/NAME.crash (copied while mounted)
make_crash() {
	local name="$1" live="$TMP/$1.live"
	make_image "$live" 256M
	mount_image "$live" "$mnt" commit=3600
	"setup_$name" "$mnt" || fail "$name: setup"
	sync
	"log_$name" "$mnt" || fail "$name: logged operations"
	cp --sparse=always "$live" "$TMP/$name.crash"
	umount_image "$mnt"
	rm -f "$live"
	[ "$(log_root_of "$TMP/$name.crash")" != 0 ] || fail "$name: the crash image has no log"
}

# replay_ref NAME: $TMP/NAME.ref.json, the tree after a replay-log without
# faults, which must equal the kernel's replay; --dry-run writes nothing
replay_ref() {
	local name="$1" crash="$TMP/$1.crash" img="$TMP/ref.img"
	cp --sparse=always "$crash" "$img"
	mount_image "$img" "$mnt"
	python3 -S "$TREECMP" walk "$mnt" "$TMP/$name.kernel.json" || fail "$name: walk"
	umount_image "$mnt"

	cp --sparse=always "$crash" "$img"
	run_nocrash "$TMP/dry" "$TLOGCTL" replay-log --dry-run "$img" || fail "$name: --dry-run crashed"
	[ "$(cat "$TMP/dry.rc")" = 0 ] || { cat "$TMP/dry.err"; fail "$name: --dry-run exited $(cat "$TMP/dry.rc")"; }
	cmp -s "$crash" "$img" || fail "$name: replay-log --dry-run changed the image"
	tl replay-log --dry-run --format json "$img" > "$TMP/dry.json" || fail "$name: --dry-run --format json"
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$TMP/dry.json" ||
		fail "$name: --dry-run --format json is not JSON"
	cmp -s "$crash" "$img" || fail "$name: replay-log --dry-run --format json changed the image"

	run_nocrash "$TMP/rl" "$TLOGCTL" replay-log "$img" || fail "$name: replay-log crashed"
	[ "$(cat "$TMP/rl.rc")" = 0 ] || { cat "$TMP/rl.err"; fail "$name: replay-log exited $(cat "$TMP/rl.rc")"; }
	[ "$(log_root_of "$img")" = 0 ] || fail "$name: a log is left after replay-log"
	check_clean "$img" "$name: replay-log"
	mount_ro "$img" "$mnt" || fail "$name: cannot mount the replayed image on a read-only device"
	python3 -S "$TREECMP" walk "$mnt" "$TMP/$name.ref.json" --diff --labels kernel,tlogctl \
		"$TMP/$name.kernel.json" > "$TMP/tree.diff" 2>&1 || {
		head -30 "$TMP/tree.diff"; umount_image "$mnt"; fail "$name: replay-log and the kernel's replay differ"; }
	umount_image "$mnt"
	rm -f "$img"
}

# write_points NAME: TOTAL = how many writes a replay-log of the crash image
# issues: the "N writes issued" line that fault injection prints if there is
# one, else the first fail:N that the run survives, minus one
write_points() {
	local crash="$TMP/$1.crash" img="$TMP/count.img" n rc
	cp --sparse=always "$crash" "$img"
	TLOG_FAULT_INJECT=drop:1000000000 "$TLOGCTL" replay-log "$img" > /dev/null 2> "$TMP/count.err" ||
		{ cat "$TMP/count.err" >&2; fail "$1: replay-log with a fault that is never reached failed"; }
	n=$(sed -n 's/.*fault injection drop:1000000000: \([0-9]*\) writes issued.*/\1/p' "$TMP/count.err")
	if [ -z "$n" ]; then
		for n in $(seq 1 5000); do
			cp --sparse=always "$crash" "$img"
			rc=0
			TLOG_FAULT_INJECT=fail:$n "$TLOGCTL" replay-log "$img" > /dev/null 2>&1 || rc=$?
			[ $rc = 0 ] && break
		done
		n=$((n - 1))
	fi
	rm -f "$img"
	[ "$n" -gt 0 ] || fail "$1: replay-log ignores TLOG_FAULT_INJECT (fail:1 succeeds)"
	TOTAL=$n
}

# interrupted NAME MODE N TOTAL: one interrupted replay and its checks
interrupted() {
	local name="$1" mode="$2" n="$3" total="$4" img="$TMP/f.img" lr rc
	local what="$name, $mode:$n of $total writes"
	cp --sparse=always "$TMP/$name.crash" "$img"
	run_nocrash "$TMP/r" env TLOG_FAULT_INJECT="$mode:$n" "$TLOGCTL" replay-log "$img" ||
		fail "$what: replay-log crashed"
	rc=$(cat "$TMP/r.rc")
	if [ "$mode" = fail ]; then
		[ "$rc" = 1 ] || { cat "$TMP/r.err"; fail "$what: exit $rc, expected 1"; }
	else
		[ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$TMP/r.err"; fail "$what: exit $rc"; }
	fi
	if [ "$rc" = 1 ]; then
		[ "$(grep -c '^tlogctl: ERROR:' "$TMP/r.err")" = 1 ] ||
			{ cat "$TMP/r.err"; fail "$what: not one error line"; }
	fi
	check_clean "$img" "$what"
	lr=$(log_root_of "$img")
	[ -n "$lr" ] || fail "$what: no readable primary superblock"

	# the kernel, given the interrupted image, replays to the reference
	if [ $(( (n - 1) % KERNEL_EVERY )) = 0 ] || [ "$n" = "$total" ]; then
		cp --sparse=always "$img" "$TMP/k.img"
		mount_image "$TMP/k.img" "$mnt"
		walk_cmp "$mnt" "$TMP/k.json" "$TMP/$name.ref.json" "$what, then the kernel's replay"
		umount_image "$mnt"
		rm -f "$TMP/k.img"
		KERNEL_RUNS=$((KERNEL_RUNS + 1))
	fi

	if [ "$lr" != 0 ]; then
		STILL_LOGGED=$((STILL_LOGGED + 1))
		run_nocrash "$TMP/r2" "$TLOGCTL" replay-log "$img" || fail "$what: the second replay-log crashed"
		[ "$(cat "$TMP/r2.rc")" = 0 ] ||
			{ cat "$TMP/r2.err"; fail "$what: the second replay-log exited $(cat "$TMP/r2.rc")"; }
		[ "$(log_root_of "$img")" = 0 ] || fail "$what: a log is left after the second replay-log"
		check_clean "$img" "$what, replayed again"
	else
		REPLAYED=$((REPLAYED + 1))
	fi
	mount_ro "$img" "$mnt" || fail "$what: the result cannot be mounted on a read-only device"
	walk_cmp "$mnt" "$TMP/f.json" "$TMP/$name.ref.json" "$what"
	umount_image "$mnt"
	rm -f "$img"
}


scenarios=${TLOG_ONLY:-newfile rename dir reflink}
for name in $scenarios; do
	start=$(date +%s)
	make_crash "$name"
	replay_ref "$name"
	write_points "$name"
	total=$TOTAL
	KERNEL_RUNS=0 STILL_LOGGED=0 REPLAYED=0
	for mode in fail drop; do
		for n in $(seq 1 "$total"); do
			interrupted "$name" "$mode" "$n" "$total"
		done
	done
	echo "$name: $total write points, fail and drop; $STILL_LOGGED runs left the log," \
	     "$REPLAYED had replayed; $KERNEL_RUNS kernel replays; $(( $(date +%s) - start ))s"
done

# a corrupted log block, the log root tree's or subvolume 5's log tree
# root: one error naming it, nothing written
name=${scenarios%% *}
img="$TMP/bad.img"
logroot=$(log_root_of "$TMP/$name.crash")
subroot=$(tl dump-log --format json "$TMP/$name.crash" | python3 -c '
import json, sys
print([t for t in json.load(sys.stdin)["trees"] if t["subvol"] == 5][0]["root"])
') || fail "no log tree of subvolume 5 in the $name crash image"
for block in "$logroot" "$subroot"; do
	cp --sparse=always "$TMP/$name.crash" "$img"
	flip_block "$img" "$block"
	cp --sparse=always "$img" "$TMP/bad.orig"
	expect_error "tree block $block" "$TLOGCTL" replay-log "$img"
	cmp -s "$img" "$TMP/bad.orig" || fail "replay-log wrote to an image whose log block $block is bad"
done
echo "corrupted log blocks (log root tree $logroot, log tree $subroot): one error each, image unchanged"
exit 0
