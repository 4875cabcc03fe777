#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Crash safety of tlogctl mkfs --rootdir: with write N failing (and every
# later one), or write N and every later one silently lost as on a power
# cut, for N over the whole run, the target is never a half-written
# filesystem presented as good:
#  - a failed run exits 1 with one "tlogctl: ERROR:" line and leaves no
#    valid superblock (the superblocks are written last); a run losing
#    writes exits 0, or 1 with one error line where it read back what it
#    had written;
#  - every superblock copy that is valid after a cut run (the primary, and
#    the one at 64 MiB) describes the complete filesystem: btrfs check and
#    tlogctl check are clean and the trees and file contents are those of
#    the uncut run (same SOURCE_DATE_EPOCH and -U: the same image);
#  - over an old btrfs (-f), the old filesystem is either gone or, where
#    its superblock is still valid, still clean.
# Counts how the runs ended and requires both ends: not a filesystem, and
# complete (the uncut run N = W + 1 included), so that the test is seen to
# test something.
. "$(dirname "$0")/../common.sh"
need_cmd btrfs python3 sha256sum mkfs.btrfs

GENTREE="$TOP/tests/tools/gentree.py"
"$TLOGCTL" mkfs --help > "$TMP/help" 2>&1
grep -q -- '--rootdir' "$TMP/help" || fail "tlogctl mkfs has no --rootdir"

export SOURCE_DATE_EPOCH=1700000000
UUID=7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d
SRC="$TMP/src"
img="$TMP/img"
python3 "$GENTREE" --small --seed 5 --readable "$SRC" > "$TMP/gen.out" 2> "$TMP/gen.err" ||
	{ cat "$TMP/gen.err"; fail "gentree"; }
mapfile -t FILES < <(cd "$SRC" && find . -type f -printf '%P\n' | LC_ALL=C sort)
[ "${#FILES[@]}" -ge 20 ] || fail "the source has only ${#FILES[@]} files"
[ "$(find "$SRC" -type f -links +1 | wc -l)" -ge 2 ] || fail "the source has no hard link"

# valid IMG N: superblock copy N is a valid btrfs superblock
valid() {
	btrfs inspect-internal dump-super -s "$2" "$1" > "$TMP/ds" 2> /dev/null || return 1
	grep -q '^magic.*\[match\]' "$TMP/ds" && grep -q '^csum	.*\[match\]' "$TMP/ds"
}

# signature IMG [N]: the trees and every file's content, as read through copy N
signature() {
	local f
	{
		"$TLOGCTL" dump-tree --super "${2:-0}" "$1" || echo "dump-tree failed"
		for f in "${FILES[@]}"; do
			echo "$f $("$TLOGCTL" cat --super "${2:-0}" "$1" "/$f" | sha256sum)"
		done
	} 2>&1 | sha256sum
}

# complete WHAT IMG N: what copy N describes is the whole, clean filesystem
complete() {
	local what="$1" i="$2" n="$3"
	btrfs check --readonly --super "$n" "$i" > "$TMP/check" 2>&1 || {
		tail -15 "$TMP/check"; fail "$what: copy $n valid, yet btrfs check fails"; }
	run_nocrash "$TMP/tlc" "$TLOGCTL" check --super "$n" "$i" || fail "$what: tlogctl check crashed"
	[ "$(cat "$TMP/tlc.rc")" = 0 ] || {
		head -10 "$TMP/tlc.out"; fail "$what: copy $n valid, yet tlogctl check exit $(cat "$TMP/tlc.rc")"; }
	[ "$(signature "$i" "$n")" = "$want" ] ||
		fail "$what: copy $n valid, but the trees or contents are not those of the uncut run"
}

# ---- the uncut run ----
rm -f "$img"
TLOG_FAULT_INJECT=fail:999999999 "$TLOGCTL" mkfs -q -U $UUID -r "$SRC" "$img" 2> "$TMP/err" ||
	{ cat "$TMP/err"; fail "the uncut run"; }
W=$(sed -n 's/^tlogctl: fault injection fail:999999999: \([0-9]*\) writes issued$/\1/p' "$TMP/err")
[ "${W:-0}" -ge 5 ] || { cat "$TMP/err"; fail "no write count from the uncut run"; }
btrfs check --readonly "$img" > "$TMP/check" 2>&1 || { tail "$TMP/check"; fail "uncut: btrfs check"; }
want=$(signature "$img")
valid "$img" 1 && mirror=1 || mirror=0
cp --sparse=always "$img" "$TMP/uncut.img"
echo "the uncut run: $W writes, superblock copy at 64 MiB: $mirror"

# the points: every write if few, else a spread and the last 24; and W+1.
# A share of the spread under TLOG_SUBSET (the sanitizer pass of .ci/run):
# the last writes, where the superblocks go, always.
SUBSET=${TLOG_SUBSET:-1}
if [ "$W" -le 160 ] && [ "$SUBSET" -le 1 ]; then
	POINTS=$(seq 1 $((W + 1)))
else
	POINTS=$( (seq 1 $(((W - 24) / (100 / SUBSET) + 1)) $((W - 24)); seq $((W - 23)) $((W + 1))) |
		sort -nu)
fi

none=0 whole=0 whole_cut=0 old_kept=0 runs=0
# one START MODE N: a run cut at write N, judged
one() {
	local start="$1" mode="$2" n="$3" what rc=0 c any=0
	what="$start target, $mode:$n of $W"
	rm -f "$img"
	if [ "$start" = btrfs ]; then
		truncate -s 1G "$img"
		mkfs.btrfs -q -f -L old "$img" > /dev/null 2>&1 || fail "mkfs.btrfs of the old target"
	fi
	TLOG_FAULT_INJECT="$mode:$n" timeout 60 "$TLOGCTL" mkfs -q -f -U $UUID -r "$SRC" "$img" \
		> "$TMP/out" 2> "$TMP/err" || rc=$?
	runs=$((runs + 1))
	[ $rc -lt 124 ] || { cat "$TMP/err"; fail "$what: crash or hang (exit $rc)"; }
	grep -qE "^tlogctl: fault injection $mode:$n: [0-9]+ writes issued$" "$TMP/err" ||
		{ cat "$TMP/err"; fail "$what: no write count on stderr"; }
	if [ "$mode" = fail ] && [ "$n" -le "$W" ]; then
		[ $rc = 1 ] || { cat "$TMP/err"; fail "$what: exit $rc, expected 1"; }
		[ "$(grep -c '^tlogctl: ERROR:' "$TMP/err")" = 1 ] ||
			{ cat "$TMP/err"; fail "$what: not one error line"; }
	elif [ "$n" -gt "$W" ]; then
		[ $rc = 0 ] || { cat "$TMP/err"; fail "$what: exit $rc, expected 0"; }
	else
		# lost writes may be noticed when mkfs reads back what it wrote
		[ $rc = 0 ] || { [ $rc = 1 ] && [ "$(grep -c '^tlogctl: ERROR:' "$TMP/err")" = 1 ]; } ||
			{ cat "$TMP/err"; fail "$what: exit $rc, expected 0, or 1 with one error line"; }
	fi
	for c in 0 1; do
		valid "$img" $c || continue
		any=1
		if [ "$start" = btrfs ] && grep -q '^label[[:space:]]*old$' "$TMP/ds"; then
			# the old filesystem: untouched, or it would not be valid
			btrfs check --readonly --super $c "$img" > "$TMP/check" 2>&1 || {
				tail -15 "$TMP/check"; fail "$what: the old filesystem's copy $c is valid, yet broken"; }
			old_kept=$((old_kept + 1))
			continue
		fi
		[ "$mode" = fail ] && [ "$n" -le "$W" ] && [ $c = 0 ] &&
			fail "$what: the failed run left a valid superblock"
		complete "$what" "$img" $c
	done
	if valid "$img" 0 && ! grep -q '^label[[:space:]]*old$' "$TMP/ds"; then
		whole=$((whole + 1))
		[ "$n" -le "$W" ] && whole_cut=$((whole_cut + 1))
	elif [ $any = 0 ]; then
		none=$((none + 1))
		run_nocrash "$TMP/ds2" "$TLOGCTL" dump-super "$img" || fail "$what: dump-super crashed"
		[ "$(cat "$TMP/ds2.rc")" != 0 ] || fail "$what: tlogctl dump-super reads a superblock btrfs-progs rejects"
	fi
	return 0
}

for mode in fail drop; do
	for n in $POINTS; do
		one new "$mode" "$n"
	done
done
# over an old filesystem: a spread, and the last writes
for mode in fail drop; do
	for n in $( (seq 1 $((W / 12 + 1)) "$W"; seq $((W > 6 ? W - 5 : 1)) $((W + 1))) | sort -nu); do
		one btrfs "$mode" "$n"
	done
done

echo "$runs runs: $none left no filesystem, $whole a complete one ($whole_cut of them cut runs)," \
	"$old_kept valid copies of the old filesystem kept clean"
[ $none -gt 0 ] || fail "no run left the target without a filesystem: the faults did not bite"
[ $whole -gt 0 ] || fail "no run left a complete filesystem"
exit 0
