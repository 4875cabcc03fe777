#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# "tlogctl run --commit" against the kernel (see helpers/run-lib.sh): every
# script on a fresh image, run by the kernel on a loop mount (A, then a
# clean umount) and by tlogctl on the unmounted image (B); the refusals,
# the trees (FIEMAP included), btrfs check before and after the kernel
# writes to B must agree.  Scripts: the hand-written scenarios
# (replay-scenarios/*.tlw), the CrashMonkey/Ace corpus
# (../shared/corpus/crashmonkey, identical scripts once) and
# TLOG_RUN_RANDOM (200) random scripts (tests/tools/wl-random.py plus the
# operations it does not write; seed TLOG_SEED, by default the date, so
# that each day runs others).
# The mkfs options go round a matrix: nodesize 4k/16k/64k, checksum
# crc32c/xxhash/sha256/blake2, with and without no-holes (64k images get
# 1G: on smaller ones the kernel's metadata reservation refuses operations
# tlogctl lets through or writes dirty data back early, a known
# difference).  FIEMAP answers that differ
# only in how extents lying side by side on disk were merged (physical
# placement, the allocator's) are printed as notes, not failures.  Scripts
# with features tlogctl run does not claim (RUN_UNSUPPORTED in
# helpers/run-lib.sh, empty now) would be listed as not run.  TLOG_SUBSET=N
# (the sanitizer runs) runs a 1/N share rotating daily (TLOG_ROTATE=K the
# slice, TLOG_FULL=1 all); TLOG_ONLY="PATTERN..." the names matching one.
#
# The fsync log too: for a share of the scripts (every TLOG_CRASH_SHARE-th,
# default 3, rotating daily; 1 for all) the kernel's mount has commit=3600
# and its image is copied before the unmount - the power cut after the
# last operation - and tlogctl run without --commit makes its own; the
# kernel mounts both, replaying each log, and the trees must be the same,
# btrfs check clean, and tlogctl replay-log must agree with the kernel's
# replay (helpers/run-lib.sh crash_compare).  The scenarios and the CrashMonkey
# corpus must agree exactly.  The random scripts must too, but for a small
# budget (TLOG_CRASH_BUDGET, default 2% of those compared, at least 1) for
# the kernel's own timing, which no offline model reproduces: an
# asynchronous writeback (the rename-over auto_da_alloc flush) or delayed
# item flush finishing before or after a commit (Documentation/design/
# log-write.md).  With seed 20261202, 1 of 300 differed (r-008: such a
# flush).  Each difference is printed; more than the budget fails.
# For the scripts where both sides wrote a log, the inodes, names, extents
# and index ranges dump-log shows are compared too, and the share that
# agrees is reported (the rest are printed with TLOG_VERBOSE=1).  The
# scenarios and the CrashMonkey corpus must log what the kernel logs: a
# difference in two runs fails, but for the scripts
# replay-scenarios/log-differs.txt lists with the reason (one that agrees
# now is noted, to be taken off).
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
. "$(dirname "$0")/helpers/run-lib.sh"
need_cmd mkfs.btrfs btrfs python3 xfs_io losetup sha256sum
run_init
need_mount

SEED=${TLOG_SEED:-$(date +%Y%m%d)}
NRANDOM=${TLOG_RUN_RANDOM:-200}
echo "seed $SEED (rerun with TLOG_SEED=$SEED)"
[ -n "$RUN_UNSUPPORTED" ] && echo "not claimed by tlogctl run yet (RUN_UNSUPPORTED): $RUN_UNSUPPORTED"

subset=${TLOG_SUBSET:-1}
[ "${TLOG_FULL:-0}" = 1 ] && subset=1
rot=${TLOG_ROTATE:-$(( $(date +%s) / 86400 % subset ))}
[ "$subset" -gt 1 ] && echo "running slice $rot of $subset (TLOG_ROTATE=$rot; TLOG_FULL=1 for all)"
crash_share=${TLOG_CRASH_SHARE:-3}
crash_rot=$(( $(date +%s) / 86400 % crash_share ))
echo "power cuts compared for every ${crash_share}th script (slice $crash_rot; TLOG_CRASH_SHARE=1 for all)"

# the list: NAME SCRIPT
list=()
for s in "$TOP"/tests/kernel/replay-scenarios/*.tlw; do
	list+=("scn-$(basename "$s" .tlw) $s")
done
if [ -d "$CORPUS/crashmonkey" ]; then
	declare -A seen=()
	dups=0
	for s in $(ls "$CORPUS"/crashmonkey/*.tlw | sort -V); do
		key=$(grep -v '^[[:space:]]*#' "$s" | sed 's/[[:space:]]*#.*//' | sha256sum | cut -c1-16)
		if [ -n "${seen[$key]:-}" ]; then
			dups=$((dups + 1))
			continue
		fi
		seen[$key]=1
		list+=("cm-$(basename "$s" .tlw) $s")
	done
	echo "CrashMonkey corpus: $dups scripts identical to an earlier one not run again"
else
	no_skip && fail "the CrashMonkey corpus is not at $CORPUS/crashmonkey"
	echo "note: no CrashMonkey corpus at $CORPUS/crashmonkey"
fi
# random scripts: generated with a margin, the first NRANDOM supported ones run
run_random_scripts "$SEED" $((NRANDOM + NRANDOM / 2 + 10)) "$TMP/rnd"
nr=0
for s in $(ls "$TMP"/rnd/*.tlw | sort -V); do
	[ $nr -lt "$NRANDOM" ] || break
	[ -z "$(run_unsupported "$s")" ] || continue
	list+=("$(basename "$s" .tlw) $s")
	nr=$((nr + 1))
done
[ $nr = "$NRANDOM" ] || fail "only $nr supported random scripts of the $NRANDOM asked for"

# the scripts allowed to log otherwise than the kernel: the first word of each line
log_differs_ok=" $(sed -n 's/^\([^#[:space:]][^[:space:]]*\).*/\1/p' \
	"$TOP/tests/kernel/replay-scenarios/log-differs.txt" | tr '\n' ' ') "
listed_log_differs() { [[ "$log_differs_ok" == *" $1 "* ]]; }
# a scenario or corpus script not listed must log what the kernel logs
must_log_same() { [[ "$1" != r-* ]] && ! listed_log_differs "$1"; }
notrun=() crash_names=()
i=0 ran=0 crashes=0 kernel_breaks=0 random_crashes=0 logs_same=0 logs_differ=0 start=$(date +%s)
for e in "${list[@]}"; do
	name=${e%% *} s=${e#* }
	i=$((i + 1))
	if [ -n "${TLOG_ONLY:-}" ]; then
		match=0
		for pat in $TLOG_ONLY; do [[ "$name" == *$pat* ]] && match=1; done
		[ $match = 1 ] || continue
	fi
	u=$(run_unsupported "$s")
	if [ -n "$u" ]; then
		notrun+=("$name ($u)")
		continue
	fi
	[ $(( i % subset )) = "$rot" ] || continue
	opts=$(run_matrix_opts "$i")
	RUN_CRASH=0
	if [ $(( i / subset % crash_share )) = "$crash_rot" ]; then
		RUN_CRASH=1
		crashes=$((crashes + 1))
	fi
	RUN_CRASH_NOTES=0
	if [[ "$name" == r-* ]]; then
		RUN_CRASH_NOTES=1
		[ $RUN_CRASH = 1 ] && random_crashes=$((random_crashes + 1))
	fi
	before=$SCN_FAILED
	# shellcheck disable=SC2086
	run_scenario "$name" run_compare "$s" "$name" $opts
	# a scenario's log that differs is tried once more: the kernel's own
	# timing can change what it logs (log-write.md, "Known differences")
	if [ "$SCN_FAILED" = "$before" ] && must_log_same "$name" &&
	   grep -q '^log-compare: differs' "$TMP/scn.log"; then
		cp "$TMP/scn.log" "$TMP/scn.first.log"
		SCN_PASSED=$((SCN_PASSED - 1))
		# shellcheck disable=SC2086
		run_scenario "$name" run_compare "$s" "$name" $opts
		if [ "$SCN_FAILED" = "$before" ] && grep -q '^log-compare: same' "$TMP/scn.log"; then
			echo "note: $name: the log differed from the kernel's, the same the second time:"
			grep -A8 '^log-compare:' "$TMP/scn.first.log"
		fi
	fi
	if grep -q '^log-compare: same' "$TMP/scn.log"; then
		logs_same=$((logs_same + 1))
		listed_log_differs "$name" &&
			echo "note: $name logs what the kernel logs now: take it off replay-scenarios/log-differs.txt"
	elif grep -q '^log-compare: differs' "$TMP/scn.log"; then
		logs_differ=$((logs_differ + 1))
		if must_log_same "$name"; then
			echo "FAIL  $name: its log differs from the kernel's"
			grep -A8 '^log-compare:' "$TMP/scn.log"
			SCN_PASSED=$((SCN_PASSED - 1))
			SCN_FAILED=$((SCN_FAILED + 1))
			SCN_FAILURES+=("$name (its log)")
		elif [ "${TLOG_VERBOSE:-0}" = 1 ]; then
			grep -A8 '^log-compare:' "$TMP/scn.log"
		fi
	fi
	if [ $RUN_CRASH = 1 ] && grep -q '^crash-note:' "$TMP/scn.log"; then
		crash_names+=("$name")
		echo "note: $name ($opts): $(grep -A8 '^crash-note:' "$TMP/scn.log" | sed 's/^crash-note: //')"
	fi
	if grep -q '^contract-kernel:' "$TMP/scn.log"; then
		kernel_breaks=$((kernel_breaks + 1))
		echo "note: $name ($opts): $(grep -A5 '^contract-kernel:' "$TMP/scn.log" | sed 's/^contract-kernel: //')"
	fi
	[ "$SCN_FAILED" = "$before" ] || echo "      (seed $SEED; rerun: TLOG_SEED=$SEED TLOG_ONLY=$name)"
	ran=$((ran + 1))
done
[ $ran -gt 0 ] || skip "no scripts selected"
echo
echo "${#notrun[@]} script(s) not run, their features not claimed by tlogctl run (RUN_UNSUPPORTED=\"$RUN_UNSUPPORTED\"):"
for n in "${notrun[@]}"; do echo "    $n"; done
budget=$(( random_crashes * 2 / 100 ))
[ "$budget" -ge 1 ] || budget=1
budget=${TLOG_CRASH_BUDGET:-$budget}
crash_notes=${#crash_names[@]}
echo "seed $SEED; $ran scripts in $(( $(date +%s) - start ))s, $crashes of them also compared after a power cut;" \
	"$crash_notes of the $random_crashes random ones compared differ (budget $budget)"
if [ "$crash_notes" -gt "$budget" ]; then
	SCN_FAILED=$((SCN_FAILED + 1))
	SCN_FAILURES+=("$crash_notes random scripts differ from the kernel after a power cut, over the budget of $budget: ${crash_names[*]}")
fi
echo "fsync contract: broken in $kernel_breaks power-cut script(s) by the kernel's own log too (the same tree after both replays)"
echo "dump-log: of the $((logs_same + logs_differ)) power-cut scripts where the kernel and tlogctl" \
	"both wrote a log, $logs_same show the same logged inodes, names, extents and index ranges" \
	"($((100 * logs_same / (logs_same + logs_differ ? logs_same + logs_differ : 1)))%; TLOG_VERBOSE=1 prints the others)"
scenario_summary "tlogctl run against the kernel"
exit 0
