#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tlogctl run --check-contract: after every sync and fsync the log is
# replayed in memory and every file and directory fsynced (and unchanged
# since) must have what it had at its fsync.  On the scenarios and the
# CrashMonkey corpus: no violation, and many inodes checked.  With a
# logging rule left out on purpose (TLOG_LOG_BREAK: the old parents of a
# renamed or unlinked inode, or the inodes of a directory's new entries)
# the same scripts must show violations, reported with their lines.
# TLOG_SUBSET=N (the sanitizer pass) runs every Nth script.
. "$(dirname "$0")/../common.sh"
[ -d "$CORPUS/crashmonkey" ] || skip "no CrashMonkey corpus at $CORPUS/crashmonkey"

SUBSET=${TLOG_SUBSET:-1}
scripts=()
i=0
for s in "$TOP"/tests/kernel/replay-scenarios/*.tlw "$CORPUS"/crashmonkey/*.tlw; do
	[ $((i % SUBSET)) = 0 ] && scripts+=("$s")
	i=$((i + 1))
done
tl mkfs -q -b 512M "$TMP/fresh.img" || fail "mkfs"

# run_all BREAK SCRIPT...: each script run; N CHECKED VIOL BAD get the
# number of scripts, inodes checked, violations, scripts with violations
run_all() {
	local rule="$1" s c v
	shift
	N=0 CHECKED=0 VIOL=0 BAD=0
	for s in "$@"; do
		cp --sparse=always "$TMP/fresh.img" "$TMP/r.img"
		TLOG_LOG_BREAK=$rule run_nocrash "$TMP/r" "$TLOGCTL" run --check-contract --stats \
			"$TMP/r.img" "$s" || fail "$(basename "$s"): crashed"
		c=$(sed -n 's/^contract checks: [0-9]* (\([0-9]*\) inodes checked), violations: [0-9]*$/\1/p' "$TMP/r.out")
		v=$(sed -n 's/^contract checks: .*, violations: \([0-9]*\)$/\1/p' "$TMP/r.out")
		[ -n "$c" ] && [ -n "$v" ] || { cat "$TMP/r.err"; fail "$(basename "$s"): no contract stats"; }
		if [ "$v" -gt 0 ]; then
			BAD=$((BAD + 1))
			[ "$(cat "$TMP/r.rc")" = 1 ] || fail "$(basename "$s"): $v violations and exit $(cat "$TMP/r.rc")"
			grep -q "^$s:[0-9]*: contract broken: .*(fsync at line [0-9]*)$" "$TMP/r.err" ||
				{ cat "$TMP/r.err"; fail "$(basename "$s"): violations not reported with their lines"; }
			[ -n "$rule" ] || { cat "$TMP/r.err"; fail "$(basename "$s"): the fsync contract is broken"; }
		fi
		N=$((N + 1)) CHECKED=$((CHECKED + c)) VIOL=$((VIOL + v))
	done
}

run_all "" "${scripts[@]}"
[ "$VIOL" = 0 ] || fail "$VIOL violations"
[ "$CHECKED" -ge "$N" ] || fail "only $CHECKED inodes checked in $N scripts"
echo "$N scripts: $CHECKED inodes checked after their fsyncs, no violation"
# a rule left out: the scenarios (written for these rules) must show it
for rule in parents new-dentries; do
	run_all "$rule" "$TOP"/tests/kernel/replay-scenarios/*.tlw
	[ "$VIOL" -gt 0 ] || fail "TLOG_LOG_BREAK=$rule: no violation found in $N scripts"
	echo "TLOG_LOG_BREAK=$rule: $VIOL violations found in $BAD of $N scripts"
done
exit 0
