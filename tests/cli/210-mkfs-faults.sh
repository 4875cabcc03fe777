#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Crash safety of tlogctl mkfs: with every write in turn failing (and all
# after it), or silently dropped as on a power cut, the target holds either
# no valid btrfs superblock or a filesystem that btrfs check accepts, both
# when it started empty and when it held a valid btrfs made by mkfs.btrfs.
. "$(dirname "$0")/../common.sh"
need_cmd btrfs blkid mkfs.btrfs

img="$TMP/img"

# A primary superblock that btrfs-progs or libblkid would take as btrfs.
has_btrfs_super() {
	blkid -p -o value -s TYPE "$1" 2>/dev/null | grep -qx btrfs && return 0
	btrfs inspect-internal dump-super "$1" > "$TMP/ds" 2>/dev/null || return 1
	grep -q '^magic.*\[match\]' "$TMP/ds" && grep -q '^csum	.*\[match\]' "$TMP/ds"
}

# prepare empty|btrfs: the starting target
prepare() {
	rm -f "$img"
	truncate -s 128M "$img"
	if [ "$1" = btrfs ]; then
		mkfs.btrfs -q -f -L old "$img" > /dev/null 2>&1 || fail "mkfs.btrfs"
		printf 'old data' > "$TMP/x"
	fi
}

total=0
for opts in "" "-m single" "-n 4096 --csum sha256" "-O ^free-space-tree,^block-group-tree -n 65536"; do
	prepare empty
	tl mkfs -f -v $opts "$img" > "$TMP/v" || fail "mkfs $opts"
	writes=$(awk '/^Writes:/ {print $2}' "$TMP/v")
	[ -n "$writes" ] && [ "$writes" -ge 6 ] || fail "mkfs -v reports no write count"
	btrfs check --readonly "$img" > /dev/null 2>&1 || fail "$opts: no faults, yet check fails"
	for start in empty btrfs; do
		for mode in fail drop; do
			for n in $(seq 1 "$writes"); do
				what="$start, $mode:$n, options '$opts'"
				prepare "$start"
				rc=0
				TLOG_FAULT_INJECT="$mode:$n" "$TLOGCTL" mkfs -q -f $opts "$img" \
					> "$TMP/out" 2> "$TMP/err" || rc=$?
				grep -q "fault injection $mode:$n: $writes writes issued\|fault injection $mode:$n: $n writes issued" "$TMP/err" ||
					{ cat "$TMP/err"; fail "$what: no write count on stderr"; }
				if [ "$mode" = fail ]; then
					[ $rc = 1 ] || fail "$what: exit $rc, expected 1"
					[ "$(grep -c '^tlogctl: ERROR:' "$TMP/err")" = 1 ] ||
						{ cat "$TMP/err"; fail "$what: not one error line"; }
				else
					[ $rc = 0 ] || fail "$what: exit $rc with dropped writes"
				fi
				if has_btrfs_super "$img"; then
					btrfs check --readonly "$img" > "$TMP/check" 2>&1 ||
						{ tail -20 "$TMP/check"; fail "$what: a valid superblock over a broken filesystem"; }
				fi
				total=$((total + 1))
			done
		done
	done
done
echo "$total fault runs"
# a bad value of the variable is an error, not ignored
prepare empty
expect_error "TLOG_FAULT_INJECT" env TLOG_FAULT_INJECT=sometimes "$TLOGCTL" mkfs -f "$img"
exit 0
