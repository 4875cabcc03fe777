#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# replay-log against the kernel on the 328 CrashMonkey/Ace seq-1 workloads
# of the corpus (shared/corpus/crashmonkey/*.tlw): each is run on a loop
# mount with commit=3600 and copied before unmounting; the copy replayed
# by tlogctl must equal the kernel's replay, the queries on the
# unreplayed copy must answer as the kernel does with and without the log
# (see helpers/replay-lib.sh).  Workloads that end with a sync leave no
# log: replay-log must then say so, exit 0 and change nothing.
# Identical scripts (the corpus repeats some) run once.  All distinct
# workloads run by default (about 2 minutes); TLOG_SUBSET=N runs a
# deterministic 1/N of them that rotates daily (TLOG_ROTATE=K picks the
# slice), TLOG_ONLY=PATTERN the matching ones.
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs btrfs python3 xfs_io losetup sha256sum
need_mount
[ -d "$CORPUS/crashmonkey" ] || skip "corpus not found at $CORPUS"
replay_init

subset=${TLOG_SUBSET:-1}
[ "${TLOG_FULL:-0}" = 1 ] && subset=1
rot=${TLOG_ROTATE:-$(( $(date +%s) / 86400 % subset ))}
[ "$subset" -gt 1 ] && echo "running slice $rot of $subset (TLOG_ROTATE=$rot; TLOG_FULL=1 for all)"

declare -A seen=()
i=0 dups=0
for s in $(ls "$CORPUS"/crashmonkey/*.tlw | sort -V); do
	name=$(basename "$s" .tlw)
	[ -n "${TLOG_ONLY:-}" ] && [[ "$name" != *$TLOG_ONLY* ]] && continue
	key=$(grep -v '^[[:space:]]*#' "$s" | sed 's/[[:space:]]*#.*//' | sha256sum | cut -c1-16)
	if [ -n "${seen[$key]:-}" ]; then
		dups=$((dups + 1))
		continue
	fi
	seen[$key]=$name
	i=$((i + 1))
	[ $(( i % subset )) = "$rot" ] || continue
	run_scenario "$name" scenario "$s" "$name"
done
[ $((SCN_PASSED + SCN_FAILED)) -gt 0 ] || skip "no CrashMonkey workloads selected"
echo "($dups scripts identical to an earlier one were not run again)"
scenario_summary "CrashMonkey workloads"
exit 0
