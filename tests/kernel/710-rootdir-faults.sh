#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Images of tlogctl mkfs --rootdir cut short (TLOG_FAULT_INJECT: write N
# failing, or write N and all later ones lost as on a power cut) never
# mount with wrong content: the kernel either refuses them, or mounts them
# and tests/tools/cmptree.py finds exactly the source tree (everything:
# contents, holes, owners, modes, links, xattrs, times in ns).  The cut
# points: a spread over the whole run and its last writes (where the
# superblocks are), and the uncut run, which must mount.
. "$(dirname "$0")/../common.sh"
. "$TOP/tests/kernel/helpers/rootdir-lib.sh"
make_source_fs 512M
python3 "$GENTREE" --small --strict --seed 11 "$SRC" > /dev/null || fail "gentree"
# and some bulk, so that the run has many writes to cut
mkdir "$SRC/more"
for i in $(seq 1 40); do head -c $((i * 3000)) /dev/urandom > "$SRC/more/f$i"; done
nsrc=$(python3 -c 'import os, sys
print(1 + sum(len(d) + len(f) for _, d, f in os.walk(sys.argv[1])))' "$SRC")

rm -f "$img"
TLOG_FAULT_INJECT=fail:999999999 "$TLOGCTL" mkfs -q -r "$SRC" "$img" 2> "$TMP/err" ||
	{ cat "$TMP/err"; fail "the uncut run"; }
W=$(sed -n 's/^tlogctl: fault injection fail:999999999: \([0-9]*\) writes issued$/\1/p' "$TMP/err")
[ "${W:-0}" -ge 5 ] || { cat "$TMP/err"; fail "no write count"; }

refused=0 mounted=0
for mode in drop fail; do
	for n in $( (seq 1 $((W / 8 + 1)) "$W"; seq $((W > 8 ? W - 7 : 1)) $((W + 1))) | sort -nu); do
		rm -f "$img"
		TLOG_FAULT_INJECT="$mode:$n" timeout 60 "$TLOGCTL" mkfs -q -r "$SRC" "$img" \
			> /dev/null 2>&1
		[ -e "$img" ] || { refused=$((refused + 1)); continue; }
		loop=$(losetup -f --show "$img") || fail "losetup"
		LOOPS+=("$loop")
		mkdir -p "$mnt"
		if ! mount -o ro,noatime "$loop" "$mnt" 2> /dev/null; then
			[ "$n" -le "$W" ] || fail "the uncut run ($mode:$n) does not mount"
			losetup -d "$loop"
			LOOPS=()
			refused=$((refused + 1))
			continue
		fi
		MOUNTS+=("$mnt")
		python3 "$CMPTREE" "$SRC" "$mnt" > "$TMP/cmp.out" 2>&1 || {
			head -30 "$TMP/cmp.out"; fail "$mode:$n of $W: the kernel mounts the image with wrong content"; }
		grep -q "^cmptree: $nsrc entries compared" "$TMP/cmp.out" || {
			tail -1 "$TMP/cmp.out"; fail "$mode:$n of $W: not every entry compared"; }
		umount_image "$mnt"
		mounted=$((mounted + 1))
	done
done
echo "$W writes; $refused cut images refused by the kernel (or not made), $mounted mounted with the right content"
[ $refused -gt 0 ] || fail "no cut image was refused: the faults did not bite"
exit 0
