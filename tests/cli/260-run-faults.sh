#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tlogctl run interrupted at any write of its commits -- the write
# failing, or it and every later one lost as in a power cut -- leaves an
# image btrfs check accepts, showing the state of one of its commits
# (before the script, after its sync, around its snapshot, after its
# end), never a mix, and that can be written again.  A snapshot commits
# twice here where the kernel commits once: the state between is that of
# the script up to the snapshot, committed (see tlogctl-run(8)).
. "$(dirname "$0")/../common.sh"
need_cmd btrfs
export SOURCE_DATE_EPOCH=1700000000

cat > "$TMP/setup.tlw" <<'S'
mkdir /d
write /d/keep 0 20k 0x11
write /d/small 0 100 0x12
setxattr /d/keep user.a one
mksubvol /sv
write /sv/in 0 64k 0x13
S
cat > "$TMP/script.tlw" <<'S'
mkdir /e
write /e/new 0 300k 0x21
link /d/keep /e/keep2
rename /d/small /e/moved
truncate /d/keep 5000
sync
falloc /e/new 256k 256k keep
punch /e/new 4k 100k
clone /e/new /e/copy
write /sv/in 8k 4k 0x22
setxattr /e/moved user.b two
unlink /e/keep2
mksnap /sv /snap
write /snap/in 0 4k 0x23
S
# a listing of everything the scripts touch, contents hashed
state() {
	local img="$1" d f
	for d in / /d /e /sv /snap; do
		echo "== $d"
		tl ls -l -i "$img" "$d" 2>&1 | sed "s|$img|IMAGE|g"
	done
	for f in /d/keep /d/small /e/new /e/copy /e/moved /sv/in /snap/in; do
		printf '%s %s\n' "$f" "$(tl cat "$img" "$f" 2>/dev/null | sha256sum | cut -c1-16)"
	done | sed "s|$img|IMAGE|g"
}
for mkopts in "-b 256M" "-b 256M -n 4096 -O ^no-holes,^block-group-tree"; do
	base="$TMP/base.img"
	rm -f "$base"
	tl mkfs -q $mkopts "$base" || fail "mkfs $mkopts"
	tl run --commit "$base" "$TMP/setup.tlw" || fail "setup"
	# the committed states: before, after the sync (line 6), before and
	# after the snapshot (lines 12, 13), at the end
	states=""
	for lines in 0 6 12 13 14; do
		cp --sparse=always "$base" "$TMP/p.img"
		head -$lines "$TMP/script.tlw" > "$TMP/prefix.tlw"
		tl run --commit "$TMP/p.img" "$TMP/prefix.tlw" || fail "the first $lines lines"
		state "$TMP/p.img" > "$TMP/s$lines"
		[ $lines = 0 ] || ! cmp -s "$TMP/s$prev" "$TMP/s$lines" ||
			fail "lines $prev-$lines changed nothing: the test would prove nothing"
		prev=$lines
		states="$states $lines"
	done
	cp --sparse=always "$base" "$TMP/s2.img"
	total=$(TLOG_FAULT_INJECT=fail:1000000000 tl run --commit "$TMP/s2.img" "$TMP/script.tlw" 2>&1 |
		sed -n 's/.*fault injection .*: \([0-9]*\) writes issued/\1/p')
	[ "${total:-0}" -gt 10 ] || fail "$mkopts: the script issued ${total:-no} writes"
	state "$TMP/s2.img" | cmp -s - "$TMP/s14" || fail "the fault-free run differs from the full script"
	btrfs check --readonly "$TMP/s2.img" > "$TMP/check" 2>&1 ||
		{ tail -5 "$TMP/check"; fail "$mkopts: the uninterrupted run fails btrfs check"; }
	# under the sanitizers (TLOG_SUBSET=N) every Nth write point, rotating daily
	step=${TLOG_SUBSET:-1}
	first=$(( $(date +%j) % step + 1 ))
	seen=""
	for mode in fail drop; do
		for n in $(seq "$first" "$step" "$total"); do
			img="$TMP/f.img"
			cp --sparse=always "$base" "$img"
			TLOG_FAULT_INJECT="$mode:$n" tl run --commit "$img" "$TMP/script.tlw" > /dev/null 2>&1
			btrfs check --readonly "$img" > "$TMP/check" 2>&1 ||
				{ tail -5 "$TMP/check"; fail "$mkopts: $mode at write $n/$total: btrfs check fails"; }
			state "$img" > "$TMP/s"
			hit=""
			for l in $states; do
				cmp -s "$TMP/s" "$TMP/s$l" && hit=$l
			done
			if [ -z "$hit" ]; then
				diff "$TMP/s12" "$TMP/s" | head -20
				fail "$mkopts: $mode at write $n/$total: a state of no commit"
			fi
			case " $seen " in *" $hit "*) ;; *) seen="$seen $hit" ;; esac
			printf 'write /again 0 10k\nmkdir /again-d\n' > "$TMP/again.tlw"
			tl run --commit "$img" "$TMP/again.tlw" > /dev/null 2>&1 ||
				fail "$mkopts: $mode at write $n/$total: the image cannot be written again"
			btrfs check --readonly "$img" > "$TMP/check" 2>&1 ||
				{ tail -5 "$TMP/check"; fail "$mkopts: $mode at write $n/$total: check after rewriting"; }
		done
	done
	# every commit was interrupted somewhere: each state was seen
	[ "$step" = 1 ] && for l in $states; do
		case " $seen " in *" $l "*) ;; *) fail "$mkopts: the state after line $l was never seen" ;; esac
	done
	echo "$mkopts: $total write points, fail and drop: states after lines$seen"
done
