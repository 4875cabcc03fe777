#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A transaction interrupted at any write -- the write failing, or it and
# everything after it lost as in a power cut -- leaves an image that btrfs
# check accepts, showing either the state before the transaction or the
# state after it, and that can be written again.
. "$(dirname "$0")/../common.sh"
need_cmd btrfs
WTEST="$BUILDDIR/tests/tools/wtest"
[ -x "$WTEST" ] || fail "tests/tools/wtest is not built"

for mkopts in "-b 256M" "-b 256M -n 4096 -m single"; do
	base="$TMP/base.img"
	rm -f "$base"
	tl mkfs -q $mkopts "$base" || fail "mkfs $mkopts"
	"$WTEST" mkdir "$base" 50 50 old 2> /dev/null || fail "setup"
	cp --sparse=always "$base" "$TMP/count.img"
	total=$("$WTEST" mkdir "$TMP/count.img" 300 300 new 2>&1 | awk '/^writes:/ {print $2}')
	[ "${total:-0}" -gt 3 ] || fail "the transaction issued ${total:-no} writes"
	for mode in fail drop; do
		for n in $(seq 1 "$total"); do
			img="$TMP/f.img"
			cp --sparse=always "$base" "$img"
			TLOG_FAULT_INJECT="$mode:$n" "$WTEST" mkdir "$img" 300 300 new > /dev/null 2>&1
			btrfs check --readonly "$img" > "$TMP/check" 2>&1 ||
				{ tail -5 "$TMP/check"; fail "$mkopts: $mode at write $n/$total: btrfs check fails"; }
			entries=$(tl ls "$img" / | wc -l)
			[ "$entries" = 50 ] || [ "$entries" = 350 ] ||
				fail "$mkopts: $mode at write $n/$total: $entries entries, neither before nor after"
			"$WTEST" mkdir "$img" 20 20 again > /dev/null 2>&1 ||
				fail "$mkopts: $mode at write $n/$total: the image cannot be written again"
			btrfs check --readonly "$img" > "$TMP/check" 2>&1 ||
				{ tail -5 "$TMP/check"; fail "$mkopts: $mode at write $n/$total: check after rewriting"; }
		done
	done
	echo "$mkopts: $total write points, fail and drop"
done
