#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# fiemap and seek against the running kernel: a handful of the golden cases
# are built afresh by tests/fixtures/fiemap/make-fixtures.sh (fresh images,
# this kernel's answers) and tlogctl must give exactly those answers.  A
# kernel whose answers drifted from the committed fixtures shows up here;
# the drift itself is reported as a note.
. "$(dirname "$0")/../common.sh"
need_cmd python3 gcc xfs_io mkfs.btrfs btrfs xz
need_mount

FIX="$TOP/tests/fixtures/fiemap"
CASES=(C05 C10 C14 C21 C25 C26 C28 C40 C41)
"$TLOGCTL" fiemap --help >/dev/null 2>&1 || fail "tlogctl has no fiemap command"

TMPDIR="$TMP" bash "$FIX/make-fixtures.sh" -o "$TMP/fresh" --raw "${CASES[@]}" ||
	fail "building the cases on this kernel failed"

# Not a failure: the kernel may legitimately allocate differently.
python3 - "$FIX" "$TMP/fresh" "${CASES[@]}" <<'PY'
import json, sys
old, new, cases = sys.argv[1], sys.argv[2], sys.argv[3:]
for c in cases:
    try:
        a = json.load(open("%s/%s.json" % (old, c)))
    except OSError:
        continue
    b = json.load(open("%s/%s.json" % (new, c)))
    for path in sorted(set(a["files"]) | set(b["files"])):
        fa, fb = a["files"].get(path), b["files"].get(path)
        if fa != fb:
            print("note: %s %s: this kernel (%s) answers differently from the committed "
                  "fixture (kernel %s)" % (c, path, b["kernel"], a["kernel"]))
PY

TMPDIR="$TMP" python3 "$FIX/check-fixtures.py" "$TLOGCTL" "$TMP/fresh" "${CASES[@]}" ||
	fail "tlogctl fiemap/seek differ from this kernel (MISMATCH lines above)"
