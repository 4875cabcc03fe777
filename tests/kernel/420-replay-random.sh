#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# replay-log against the kernel on random workloads: a seeded generator
# (tests/tools/wl-random.py; TLOG_SEED repeats a run, TLOG_RANDOM_COUNT
# sets the number of scripts, default 30, TLOG_RANDOM_OPS="MIN MAX" their
# length, default "20 60") writes scripts of operations on files,
# directories, hard links, renames (of files over files, of
# directories), unlinks, rmdirs, writes, truncates, fallocate, punched
# holes, reflinks, xattrs, symlinks, chmod, fsync and fdatasync of files and
# directories and occasional syncs; some run without NO_HOLES, with
# compression or with a subvolume.  Each runs on a loop mount and is
# copied before unmounting; tlogctl's replay must equal the kernel's and
# the queries on the unreplayed copy must answer as the kernel does (see
# helpers/replay-lib.sh).  A failure prints the seed and the script.
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs btrfs python3 xfs_io losetup
need_mount
replay_init

SEED=${TLOG_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
COUNT=${TLOG_RANDOM_COUNT:-30}
echo "seed $SEED (rerun with TLOG_SEED=$SEED)"
OPS=${TLOG_RANDOM_OPS:-20 60}
# shellcheck disable=SC2086
python3 "$TOP/tests/tools/wl-random.py" "$SEED" "$COUNT" "$TMP/rnd" $OPS || fail "the generator failed"

for s in "$TMP"/rnd/*.tlw; do
	name=$(basename "$s" .tlw)
	before=$SCN_FAILED
	run_scenario "$name" scenario "$s" "$name"
	if [ "$SCN_FAILED" != "$before" ]; then
		echo "      seed $SEED, script $name:"
		sed 's/^/      | /' "$s"
	fi
done
echo "seed $SEED"
scenario_summary "random workloads"
exit 0
