#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# fiemap and seek on the golden images of tests/fixtures/fiemap (the cases
# of the FIEMAP/SEEK reference, built and answered by a real kernel with
# make-fixtures.sh): every recorded query -- whole-file and range FIEMAP,
# the SEEK_DATA/SEEK_HOLE map, single seeks, and xfs_io's text layouts --
# must give exactly the kernel's answer.  No root needed.
. "$(dirname "$0")/../common.sh"
need_cmd python3

FIX="$TOP/tests/fixtures/fiemap"
ls "$FIX"/C*.json >/dev/null 2>&1 || fail "no fixtures in $FIX"
"$TLOGCTL" fiemap --help >/dev/null 2>&1 || fail "tlogctl has no fiemap command"
"$TLOGCTL" seek --help >/dev/null 2>&1 || fail "tlogctl has no seek command"

TMPDIR="$TMP" python3 "$FIX/check-fixtures.py" "$TLOGCTL" "$FIX" ||
	fail "tlogctl fiemap/seek differ from the kernel on the golden images (MISMATCH lines above)"
