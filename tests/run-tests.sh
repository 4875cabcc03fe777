#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Run the whole suite: Criterion unit tests, then tests/cli and tests/kernel
# scripts.  Prints one line per script and closes with "N passed, N failed,
# N skipped".  A test that cannot run says SKIP and why; with TLOG_NO_SKIP=1
# (.ci/run) or CI=true it is a failure instead (see tests/common.sh).
#
# --share K/N runs every cli test but only the kernel tests whose place in
# the list is K modulo N (the sanitizer pass of .ci/run rotates K daily).
# A script running longer than TLOG_TEST_TIMEOUT seconds (default 1500)
# is stopped and fails: its cleanup trap still unmounts and detaches what
# it used, so one hang cannot take the rest of the run with it.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILDDIR=$TOP
FILTER=""
SHARE_K=0 SHARE_N=1
while [ $# -gt 0 ]; do
	case "$1" in
	--builddir) BUILDDIR=$2; shift 2 ;;
	--filter) FILTER=$2; shift 2 ;;
	--share)
		SHARE_K=${2%/*} SHARE_N=${2#*/}
		[[ "$SHARE_K" =~ ^[0-9]+$ && "$SHARE_N" =~ ^[1-9][0-9]*$ ]] &&
			[ "$SHARE_K" -lt "$SHARE_N" ] || { echo "--share K/N: 0 <= K < N"; exit 2; }
		shift 2 ;;
	*) echo "usage: $0 [--builddir DIR] [--filter PATTERN] [--share K/N]"; exit 2 ;;
	esac
done
TIMEOUT=${TLOG_TEST_TIMEOUT:-1500}
export TOP BUILDDIR

passed=0 failed=0 skipped=0
failures=()

no_skip() {
	[ "${TLOG_NO_SKIP:-0}" = 1 ] || [ "${CI:-}" = true ] || [ "${TLOG_REQUIRE_KERNEL:-0}" = 1 ]
}

# report_skip NAME REASON: a SKIP line, or in CI a FAIL line
report_skip() {
	if no_skip; then
		echo "FAIL  $1: cannot run, and skips are failures here (TLOG_NO_SKIP/CI): $2"
		failed=$((failed + 1))
		failures+=("$1")
	else
		echo "SKIP  $1: $2"
		skipped=$((skipped + 1))
	fi
}

# Why the Criterion binary is missing: configured without it, or not built.
unit_tests_missing() {
	if grep -q '^S\["ENABLE_TESTS_TRUE"\]="#"' "$BUILDDIR/config.status" 2>/dev/null; then
		echo "configured with --disable-tests: no Criterion unit tests (apt-get install libcriterion-dev)"
	else
		echo "tests/unit/unit-tests is not built (make check builds it)"
	fi
}

# The unit tests, failing on a sanitizer's report too: Criterion runs each
# test in a child whose leak or UBSan report does not fail the test.
run_unit_tests() {
	local log rc
	log=$(mktemp)
	"$BUILDDIR/tests/unit/unit-tests" --jobs 2 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	if [ "$rc" = 0 ] && grep -qE 'ERROR: (Leak|Address)Sanitizer|runtime error:' "$log"; then
		echo "unit tests: a sanitizer reported an error (above)"
		rc=1
	fi
	rm -f "$log"
	return "$rc"
}

if [ -z "$FILTER" ]; then
	if [ -x "$BUILDDIR/tests/unit/unit-tests" ]; then
		echo "== unit tests (Criterion)"
		if run_unit_tests; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
			failures+=("unit-tests")
		fi
	else
		report_skip unit-tests "$(unit_tests_missing)"
	fi
fi

kernel_nr=0
for t in "$TOP"/tests/cli/*.sh "$TOP"/tests/kernel/*.sh; do
	[ -e "$t" ] || continue
	name=${t#"$TOP"/tests/}
	[ -n "$FILTER" ] && [[ "$name" != *$FILTER* ]] && continue
	if [[ "$name" == kernel/* ]]; then
		kernel_nr=$((kernel_nr + 1))
		[ $(((kernel_nr - 1) % SHARE_N)) = "$SHARE_K" ] || continue
	fi
	log=$(mktemp)
	start=$(date +%s)
	timeout -k 60 "$TIMEOUT" bash "$t" > "$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	[ $rc = 124 ] && echo "stopped after ${TIMEOUT}s (TLOG_TEST_TIMEOUT)" >> "$log"
	case $rc in
	0)  echo "PASS  $name (${secs}s)"; passed=$((passed + 1)) ;;
	77) report_skip "$name" "$(sed -n 's/^SKIP: //p' "$log" | head -1)" ;;
	*)  echo "FAIL  $name (exit $rc)"; sed 's/^/      /' "$log" | tail -40
	    failed=$((failed + 1)); failures+=("$name") ;;
	esac
	rm -f "$log"
done

echo
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
