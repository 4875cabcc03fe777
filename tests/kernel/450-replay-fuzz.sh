#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# replay-log and the log view of queries on damaged logs whose checksums
# are still right: random bytes of the log tree leaves (item headers and
# item data) are changed and the block checksum recomputed, in every copy
# (tests/tools/imgfuzz.py, shared with 460-writer-fuzz),
# so the damage reaches the replay itself instead of being caught by the
# checksum.  Whatever the damage: no crash, no hang, no sanitizer report;
# exit 0 or one "tlogctl: ERROR:" line; on error the image is unchanged.
# TLOG_SEED picks the damage (default 1000, so CI is repeatable), TLOG_FUZZ_RUNS
# how much (200).
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs python3 xfs_io setfattr
need_mount
FUZZ="$TOP/tests/tools/imgfuzz.py"

runs=${TLOG_FUZZ_RUNS:-200}
seed=${TLOG_SEED:-1000}
echo "seed $seed, $runs damaged logs"

# a log with a bit of everything (helpers/replay-lib.sh)
make_mixed_crash_image "$TMP/crash.img"
tl replay-log --dry-run "$TMP/crash.img" > /dev/null || fail "the undamaged log does not replay"

# the physical copies of every log tree leaf, from dump-tree's JSON
tl dump-tree -t log --format json "$TMP/crash.img" > "$TMP/log.json" || fail "dump-tree -t log"
tl dump-tree -t chunk --format json "$TMP/crash.img" > "$TMP/chunk.json" || fail "dump-tree -t chunk"
python3 -S "$FUZZ" leaves "$TMP/log.json" "$TMP/chunk.json" > "$TMP/leaves" ||
	fail "cannot map the log leaves"
[ -s "$TMP/leaves" ] || fail "no log leaves found"
nodesize=$(tl dump-super "$TMP/crash.img" | awk '$1 == "nodesize" {print $2}')

# damage IMG SEED: change 1-8 bytes of one log leaf past its header, fix the csum
damage() {
	python3 -S "$FUZZ" damage-leaf "$1" "$2" "$TMP/leaves" "$nodesize"
}

bad=0 errors=0 replayed=0
for i in $(seq 1 "$runs"); do
	cp --sparse=always "$TMP/crash.img" "$TMP/f.img"
	damage "$TMP/f.img" $((seed + i)) || fail "cannot damage the image"
	cp --sparse=always "$TMP/f.img" "$TMP/f.orig"
	# the log view of a query, then the replay itself
	run_nocrash "$TMP/q" "$TLOGCTL" ls "$TMP/f.img" /d || { bad=1; echo "run $i: ls crashed"; break; }
	run_nocrash "$TMP/r" "$TLOGCTL" replay-log "$TMP/f.img" || { bad=1; echo "run $i: replay-log crashed"; break; }
	rc=$(cat "$TMP/r.rc")
	case $rc in
	0)	replayed=$((replayed + 1)) ;;
	1)	errors=$((errors + 1))
		[ "$(grep -c '^tlogctl: ERROR:' "$TMP/r.err")" = 1 ] || {
			cat "$TMP/r.err"; bad=1; echo "run $i: not one error line"; break; }
		cmp -s "$TMP/f.img" "$TMP/f.orig" || { bad=1; echo "run $i: failed replay changed the image"; break; } ;;
	*)	cat "$TMP/r.err"; bad=1; echo "run $i: exit $rc"; break ;;
	esac
done
[ $bad = 0 ] || fail "seed $seed, run $i (TLOG_SEED=$seed to repeat)"
echo "$replayed replayed, $errors refused with an error"
exit 0
