#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Every command has --help; bad options and unknown commands give one
# error line and a non-zero exit.
. "$(dirname "$0")/../common.sh"

tl --version | grep -qE '^tlogctl [0-9]+\.[0-9]+' || fail "--version"
tl --help > "$TMP/help" || fail "--help exit status"
cmds=$(awk '/^Commands:/{on=1; next} on && /^  [a-z]/{print $1}' "$TMP/help")
[ -n "$cmds" ] || fail "no commands listed in --help"
for c in $cmds; do
	tl "$c" --help > "$TMP/h.$c" || fail "$c --help exits non-zero"
	grep -q "^usage: tlogctl $c" "$TMP/h.$c" || fail "$c --help has no usage line"
	tl help "$c" | cmp -s - "$TMP/h.$c" || fail "help $c differs from $c --help"
	[ -f "$TOP/Documentation/tlogctl-$c.8" ] || fail "no man page for $c"
	# every option in --help is documented in the man page
	for opt in $(grep -oE '(^|[ |])--[a-z][a-z-]+' "$TMP/h.$c" | tr -d ' |' | sort -u); do
		grep -q -- "${opt//-/\\\\-}\|$opt" "$TOP/Documentation/tlogctl-$c.8" ||
			fail "man page of $c does not mention $opt"
	done
	rc=0
	tl "$c" --no-such-option > "$TMP/o" 2> "$TMP/e" || rc=$?
	# check keeps 1 for "problems found": its usage errors exit 2
	want=1
	[ "$c" = check ] && want=2
	[ $rc -eq $want ] || fail "$c with a bad option exits $rc"
	[ "$(grep -c '^tlogctl: ERROR: ' "$TMP/e")" -eq 1 ] || fail "$c bad option: no single error line"
done
rc=0
tl no-such-command 2> "$TMP/e" || rc=$?
[ $rc -eq 1 ] && grep -q "^tlogctl: ERROR: unknown command" "$TMP/e" || fail "unknown command"
rc=0
tl ls 2> "$TMP/e" || rc=$?
[ $rc -eq 1 ] && grep -q "^tlogctl: ERROR: ls: not enough arguments" "$TMP/e" || fail "missing args"
rc=0
tl dump-tree --format yaml x 2> "$TMP/e" || rc=$?
[ $rc -eq 1 ] && grep -q "invalid output format" "$TMP/e" || fail "bad --format"
exit 0
