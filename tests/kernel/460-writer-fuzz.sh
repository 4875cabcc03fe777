#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The writers on damaged images whose checksums are still right:
# "replay-log", "replay-log --dry-run" and "zero-log -f" on mutants of
# kernel-made crash images (helpers/replay-lib.sh make_mixed_crash_image,
# one default crc32c/DUP image and one "-m single --csum xxhash" image).
# tests/tools/imgfuzz.py makes the mutants and re-seals every checksum it
# breaks, in every copy (tree block copies; the superblock copies, or the
# primary only):
#   chunk  the chunk tree's CHUNK_ITEMs (stripe offsets and devids, length,
#          num_stripes, sub_stripes, type, stripe_len, sector_size, key) and
#          DEV_ITEM, the superblock's sys_chunk_array, or a SYSTEM chunk in
#          both at once;
#   super  superblock fields: dev_item.total_bytes (0 too), total_bytes,
#          bytes_used, root / chunk_root / log_root and their levels,
#          generation, sectorsize, nodesize, num_devices,
#          sys_chunk_array_size, csum_type, ...;
#   log    log tree blocks: random leaf bytes as in 450, fields of the
#          log's file extent, inode and csum items and keys, block headers,
#          the log root tree's ROOT_ITEMs.
# The first mutants are the same for every seed (imgfuzz.py pinned(): the
# bugs known so far and the edges), then TLOG_FUZZ_COUNT (100) random ones
# per base image, the classes in turn.  For every mutant and writer:
#  - no crash, hang or sanitizer report (run_nocrash);
#  - no write past the device end: the image file keeps its size and has
#    no blocks allocated past it;
#  - exit 1: exactly one "tlogctl: ERROR:" line, every superblock copy
#    byte-identical (a failed transaction may have written copy-on-write
#    blocks into free space before it; --dry-run must not have written
#    anything);
#  - exit 0 and "has no log tree": the superblock copy tlogctl reads (the
#    valid one with the highest generation) has log_root 0, and the image
#    is byte-identical;
#  - exit 0 after replaying / discarding: every superblock copy that fits
#    the device (the primary always; a mirror if it ends before
#    dev_item.total_bytes and inside the file) is valid (checksum, bytenr,
#    the mount-time checks), has log_root 0 and the same contents as the
#    primary; a replay raised the generation; btrfs check --readonly finds
#    nothing in the result, unless it finds the same in the mutant already
#    (damage the writer accepted, as the kernel does: noted, counted) or,
#    for replay-log, in the kernel's own replay of the mutant (a rw mount,
#    only tried when replay-log's result is the first to have errors;
#    TLOG_FUZZ_KERNEL=0 turns it off);
#  - --dry-run exit 0: "Would replay", the image byte-identical.
# Each failure prints a one-line reproducer (seed, base, mutant index and
# the mutation).  TLOG_SEED (default 4600), TLOG_FUZZ_COUNT (100),
# TLOG_FUZZ_ONLY="N ..." (those mutants only), TLOG_FUZZ_SPEC=SPEC (one
# mutation as imgfuzz.py prints it), TLOG_FUZZ_BASE="dup single".
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs btrfs python3 xfs_io setfattr
need_mount
FUZZ="$TOP/tests/tools/imgfuzz.py"
tl replay-log --help > /dev/null 2>&1 || fail "tlogctl has no replay-log command"

seed=${TLOG_SEED:-4600}
count=${TLOG_FUZZ_COUNT:-100}
bases=${TLOG_FUZZ_BASE:-dup single}
only=${TLOG_FUZZ_ONLY:-}
onespec=${TLOG_FUZZ_SPEC:-}
echo "seed $seed (TLOG_SEED), $count random mutants per base image (TLOG_FUZZ_COUNT)"

base_opts() {
	case "$1" in
	dup) echo "" ;;
	single) echo "-m single --csum xxhash" ;;
	*) fail "unknown base image '$1' (dup, single)" ;;
	esac
}

FAILS="$TMP/failures"
: > "$FAILS"
NOTES="$TMP/notes"
: > "$NOTES"
STATS="$TMP/stats"
: > "$STATS"

# failed BASE INDEX WRITER CLASS DESC PROBLEM-FILE: show and remember one failure
failed() {
	local base="$1" i="$2" w="$3" cls="$4" desc="$5" what="$6" repro
	if [ -n "$onespec" ]; then
		repro="TLOG_FUZZ_BASE=$base TLOG_FUZZ_SPEC='${desc%% (*}'"
	else
		repro="TLOG_SEED=$seed TLOG_FUZZ_BASE=$base TLOG_FUZZ_ONLY=$i"
	fi
	echo "FAIL: $base mutant $i ($cls) $w: $(head -1 "$what")"
	sed '1d; s/^/      /' "$what" | head -12
	echo "      mutation: $desc"
	echo "$repro tests/run-tests.sh --filter 460-writer-fuzz  # $cls $desc -> $w: $(head -1 "$what")" >> "$FAILS"
}

# mutant_dirty M: btrfs check --readonly finds errors in the mutant itself
# (checked once per mutant)
mutant_dirty() {
	if [ -z "$MUTANT_CHECK" ]; then
		MUTANT_CHECK=clean
		timeout 120 btrfs check --readonly "$1" > "$TMP/mcheck.out" 2>&1 || MUTANT_CHECK=dirty
	fi
	[ "$MUTANT_CHECK" = dirty ]
}

# kernel_dirty M: the kernel's own replay of the mutant M (a rw mount)
# leaves errors that btrfs check reports as well: then replay-log leaving
# errors is the kernel's behaviour, not a failure.  Only asked when
# replay-log's result has errors and M has none; KERNEL_SAYS tells what the
# kernel did.  TLOG_FUZZ_KERNEL=0: never mount a mutant.
kernel_dirty() {
	local k="$TMP/kernel.img" dir="$TMP/kmnt" rc=1
	KERNEL_SAYS=
	[ "${TLOG_FUZZ_KERNEL:-1}" = 1 ] || return 1
	cp --sparse=always "$1" "$k"
	mkdir -p "$dir"
	# -o loop: the loop device goes away with the mount (or its failure)
	if mount -o loop "$k" "$dir" 2> "$TMP/kmount.err"; then
		MOUNTS+=("$dir")
		umount "$dir" || fail "umount $dir"
		if timeout 120 btrfs check --readonly "$k" > "$TMP/kcheck.out" 2>&1; then
			KERNEL_SAYS="replays it, and btrfs check finds nothing after that"
		else
			KERNEL_SAYS="replays it, and btrfs check finds errors after that too"
			rc=0
		fi
	else
		KERNEL_SAYS="refuses to mount it (the log does not replay)"
	fi
	rm -f "$k"
	return $rc
}

WRITERS="dry-run replay zero-log"
writer_args() {
	case "$1" in
	dry-run) echo "replay-log --dry-run" ;;
	replay) echo "replay-log" ;;
	zero-log) echo "zero-log -f" ;;
	esac
}

# one_mutant BASE INDEX DESC M: every writer on its own copy of the mutant
# M, then the verdicts
one_mutant() {
	local base="$1" i="$2" desc="$3" m="$4" cls w tag
	local -a runs=()
	case "$desc" in
	super*) cls=super ;;
	log*) cls=log ;;
	none*) cls=none ;;
	*) cls=chunk ;;
	esac
	[ "${TLOG_VERBOSE:-0}" = 1 ] && echo "$base mutant $i: $desc"
	MUTANT_CHECK=
	KERNEL_SAYS=
	for w in $WRITERS; do
		cp --sparse=always "$m" "$TMP/$w.img"
		# shellcheck disable=SC2046
		if run_nocrash "$TMP/$w" "$TLOGCTL" $(writer_args "$w") "$TMP/$w.img" > "$TMP/v.out"; then
			runs+=("$w" "$(cat "$TMP/$w.rc")" "$TMP/$w.out" "$TMP/$w.err" "$TMP/$w.img")
		else
			failed "$base" "$i" "$w" "$cls" "$desc" "$TMP/v.out"
			rm -f "$TMP/$w.img"
		fi
	done
	[ ${#runs[@]} -gt 0 ] || return
	python3 -S "$FUZZ" verify "$m" "${runs[@]}" > "$TMP/verdict" 2>&1
	for w in $WRITERS; do
		[ -f "$TMP/$w.img" ] || continue
		if grep -q "^$w fail " "$TMP/verdict"; then
			{ sed -n "s/^$w fail //p" "$TMP/verdict"
			  echo "(tlogctl $(writer_args "$w") exited $(cat "$TMP/$w.rc"))"
			  sed -n '1,4p' "$TMP/$w.err"; } > "$TMP/v.out"
			failed "$base" "$i" "$w" "$cls" "$desc" "$TMP/v.out"
			echo "$cls $w failed $base $i" >> "$STATS"
			rm -f "$TMP/$w.img"
			continue
		fi
		tag=$(sed -n "s/^$w ok //p" "$TMP/verdict")
		[ -n "$tag" ] || { cat "$TMP/verdict"; fail "imgfuzz.py verify gave no verdict for $w"; }
		case "$tag" in
		refused-cow)
			echo "$base mutant $i ($cls) $w: failed after writing blocks (not the superblock): $desc" >> "$NOTES"
			;;
		replayed|zeroed)
			if ! timeout 120 btrfs check --readonly "$TMP/$w.img" > "$TMP/check.out" 2>&1; then
				if mutant_dirty "$m"; then
					tag="$tag-onto-damage"
					echo "$base mutant $i ($cls) $w: btrfs check finds errors before and after: $desc" >> "$NOTES"
				elif [ "$w" = replay ] && kernel_dirty "$m"; then
					tag="$tag-as-kernel"
					echo "$base mutant $i ($cls) $w: btrfs check finds errors after the kernel's replay too: $desc" >> "$NOTES"
				else
					{ echo "btrfs check --readonly finds errors after $w exited 0 (none before it)"
					  grep -iE 'error|wrong|mismatch|missing|corrupt|invalid|fail|bad' "$TMP/check.out" | head -8
					  echo "(tlogctl said: $(tail -1 "$TMP/$w.out"))"
					  [ -n "$KERNEL_SAYS" ] && echo "(the kernel: $KERNEL_SAYS)"; } > "$TMP/v.out"
					failed "$base" "$i" "$w" "$cls" "$desc" "$TMP/v.out"
					tag=failed
				fi
			fi
			;;
		esac
		echo "$cls $w $tag $base $i" >> "$STATS"
		rm -f "$TMP/$w.img"
	done
}

for base in $bases; do
	crash="$TMP/$base.crash"
	# shellcheck disable=SC2046
	make_mixed_crash_image "$crash" $(base_opts "$base")
	tl dump-tree -t chunk --format json "$crash" > "$TMP/chunk.json" || fail "$base: dump-tree -t chunk"
	tl dump-tree -t log --format json "$crash" > "$TMP/log.json" || fail "$base: dump-tree -t log"
	tl dump-tree -r --format json "$crash" > "$TMP/roots.json" || fail "$base: dump-tree -r"
	lay="$TMP/$base.layout"
	python3 -S "$FUZZ" layout "$crash" "$TMP/chunk.json" "$TMP/log.json" "$TMP/roots.json" > "$lay" ||
		fail "$base: cannot read the layout of the crash image"
	npinned=$(python3 -S "$FUZZ" count-pinned "$lay") || fail "imgfuzz.py count-pinned"

	# the undamaged crash image first: the harness checking itself
	nfail=$(wc -l < "$FAILS")
	one_mutant "$base" 0 "none" "$crash"
	[ "$(wc -l < "$FAILS")" = "$nfail" ] || fail "$base: the writers fail on the undamaged crash image"
	[ "$(tail -3 "$STATS" | awk '{printf "%s %s %s ", $1, $2, $3}')" = "none dry-run would-replay none replay replayed none zero-log zeroed " ] ||
		fail "$base: the undamaged crash image was not replayed and zeroed"

	if [ -n "$onespec" ]; then
		list=1
	elif [ -n "$only" ]; then
		list=$only
	else
		list=$(seq 1 $((npinned + count)))
	fi
	start=$(date +%s)
	mdir="$TMP/mutants"
	rm -rf "$mdir"
	mkdir -p "$mdir"
	if [ -n "$onespec" ]; then
		cp --sparse=always "$crash" "$mdir/1.img"
		desc=$(python3 -S "$FUZZ" apply "$mdir/1.img" "$lay" "$onespec") ||
			fail "cannot apply '$onespec'"
		echo "1 $desc" > "$mdir/list"
	else
		# shellcheck disable=SC2086
		python3 -S "$FUZZ" mutate-all "$crash" "$lay" "$seed-$base" "$mdir" $list > "$mdir/list" ||
			fail "$base: cannot make the mutants"
	fi
	while read -r i desc; do
		one_mutant "$base" "$i" "$desc" "$mdir/$i.img"
		rm -f "$mdir/$i.img"
	done < "$mdir/list"
	echo "$base: $(echo "$list" | wc -w) mutants ($npinned pinned) in $(( $(date +%s) - start ))s"
done

# what the writers did, per class
echo
for cls in chunk super log; do
	for w in dry-run replay zero-log; do
		line=$(awk -v c="$cls" -v w="$w" '$1 == c && $2 == w {n[$3]++} END {for (t in n) printf "%s %d, ", t, n[t]}' "$STATS")
		[ -n "$line" ] && echo "$cls / $w: ${line%, }"
	done
done
if [ -s "$NOTES" ]; then
	echo
	echo "notes ($(wc -l < "$NOTES"); not failures):"
	sed 's/^/    /' "$NOTES" | head -"${TLOG_NOTE_LINES:-20}"
fi
if [ -s "$FAILS" ]; then
	echo
	echo "$(wc -l < "$FAILS") failure(s); to repeat one:"
	cat "$FAILS"
	exit 1
fi
echo "no failures"
exit 0
