#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Run the whole suite: Criterion unit tests, then tests/cli and tests/kernel
# scripts.  Prints one line per script and closes with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILDDIR=$TOP
FILTER=""
while [ $# -gt 0 ]; do
	case "$1" in
	--builddir) BUILDDIR=$2; shift 2 ;;
	--filter) FILTER=$2; shift 2 ;;
	*) echo "usage: $0 [--builddir DIR] [--filter PATTERN]"; exit 2 ;;
	esac
done
export TOP BUILDDIR

passed=0 failed=0 skipped=0
failures=()

if [ -x "$BUILDDIR/tests/unit/unit-tests" ] && [ -z "$FILTER" ]; then
	echo "== unit tests (Criterion)"
	if "$BUILDDIR/tests/unit/unit-tests" --jobs 2; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures+=("unit-tests")
	fi
fi

for t in "$TOP"/tests/cli/*.sh "$TOP"/tests/kernel/*.sh; do
	[ -e "$t" ] || continue
	name=${t#"$TOP"/tests/}
	[ -n "$FILTER" ] && [[ "$name" != *$FILTER* ]] && continue
	log=$(mktemp)
	start=$(date +%s)
	bash "$t" > "$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0)  echo "PASS  $name (${secs}s)"; passed=$((passed + 1)) ;;
	77) echo "SKIP  $name: $(grep -m1 '^SKIP' "$log")"; skipped=$((skipped + 1)) ;;
	*)  echo "FAIL  $name (exit $rc)"; sed 's/^/      /' "$log" | tail -40
	    failed=$((failed + 1)); failures+=("$name") ;;
	esac
	rm -f "$log"
done

echo
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
