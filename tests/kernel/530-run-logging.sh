#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# fsync logging of "tlogctl run" against the kernel's.  For each scenario
# of tests/kernel/replay-scenarios (TLOG_SUBSET=N: every Nth) on one of a
# few mkfs variants (nodesize 4k/16k, with and without no-holes), two
# copies of one fresh image:
#   A: the kernel's crash image - loop mount with commit=3600, the
#      script through wl-exec.py, the image copied while still mounted;
#   B: tlogctl run (no --commit) of the same script: the power cut after
#      its last operation, with --check-contract (no violation allowed).
# Both are mounted by the kernel, which replays each log, and walked
# (tests/tools/treecmp.py); the trees must be the same, btrfs check must
# find nothing in B after the kernel's replay, and "tlogctl replay-log" of
# another copy of B must give the same tree too.  The full commits of
# tlogctl's fsyncs (--stats, with their reasons) are counted, and where
# both sides wrote a log the inodes, names and ranges of the two logs
# (tlogctl dump-log) are compared, differences printed as notes (the
# kernel's delayed items order some things differently; the replayed
# trees must not differ).
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs btrfs python3 losetup
need_mount
[ -x "$TLOGCTL" ] || fail "no tlogctl at $TLOGCTL"

SCN="$TOP/tests/kernel/replay-scenarios"
VARIANTS=("-n 4k" "-n 16k" "-n 4k -O ^no-holes" "-n 16k -O ^no-holes")
SUBSET=${TLOG_SUBSET:-1}
scripts=()
i=0
for s in "$SCN"/*.tlw; do
	[ $((i % SUBSET)) = 0 ] && scripts+=("$s")
	i=$((i + 1))
done

total=0 logged=0 committed=0 equal=0 failed=0 lognotes=0
FAILS=()

# walk IMG MNT JSON: mount IMG (the kernel replays its log), walk, unmount
walk_image() {
	mount_image "$1" "$2" || return 1
	python3 -S "$TREECMP" walk "$2" "$3" > /dev/null || { umount_image "$2"; return 1; }
	umount_image "$2"
}

n=0
for script in "${scripts[@]}"; do
	name=$(basename "$script" .tlw)
	opts=${VARIANTS[$((n % ${#VARIANTS[@]}))]}
	n=$((n + 1))
	d="$TMP/$name"
	mkdir -p "$d"
	size=$(directive "$script" size)
	mkfsopts=$(directive "$script" mkfs)
	mntopts=$(directive "$script" mount)
	# shellcheck disable=SC2086
	make_image "$d/fresh.img" "${size:-256M}" $opts $mkfsopts
	cp --sparse=always "$d/fresh.img" "$d/B.img"
	total=$((total + 1))

	# A: the kernel's crash image
	mount_image "$d/fresh.img" "$d/m" "commit=3600${mntopts:+,$mntopts}"
	python3 -S "$WLEXEC" "$script" "$d/m" 2> "$d/wl.err" > /dev/null
	cp --sparse=always "$d/fresh.img" "$d/A.img" || fail "cannot copy the live image"
	umount_image "$d/m"
	rm -f "$d/fresh.img"

	# B: tlogctl run, no --commit
	if ! tl run ${mntopts:+-o "$mntopts"} --check-contract --stats --format json "$d/B.img" "$script" \
		> "$d/B.stats" 2> "$d/B.err"; then
		cat "$d/B.err"
		FAILS+=("$name: tlogctl run failed")
		failed=$((failed + 1))
		continue
	fi
	reasons=$(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["full_commit_reasons"]))' "$d/B.stats")
	nlogs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["log_syncs"])' "$d/B.stats")
	kind=logged
	if [ -n "$reasons" ]; then
		kind="committed ($(echo "$reasons" | head -1))"
		committed=$((committed + 1))
	else
		logged=$((logged + 1))
	fi
	if [ "$nlogs" -gt 0 ] && [ "$(log_root_of "$d/A.img")" != 0 ]; then
		log_summary "$d/A.img" > "$d/A.log"
		log_summary "$d/B.img" > "$d/B.log"
		if ! diff -u "$d/A.log" "$d/B.log" > "$d/log.diff"; then
			lognotes=$((lognotes + 1))
			echo "note: $name: the logs differ (kernel -, tlogctl +):"
			sed -n '3,12p' "$d/log.diff" | sed 's/^/    /'
		fi
	fi
	cp --sparse=always "$d/B.img" "$d/C.img"

	walk_image "$d/A.img" "$d/m" "$d/A.json" || fail "$name: the kernel's crash image does not mount"
	if ! walk_image "$d/B.img" "$d/m" "$d/B.json"; then
		FAILS+=("$name ($opts): the kernel does not mount tlogctl's image")
		failed=$((failed + 1))
		continue
	fi
	if ! btrfs check --readonly "$d/B.img" > "$d/check.out" 2>&1; then
		head -20 "$d/check.out"
		FAILS+=("$name ($opts): btrfs check after the kernel's replay of tlogctl's log")
		failed=$((failed + 1))
		continue
	fi
	if ! tl replay-log "$d/C.img" > /dev/null 2> "$d/replay.err"; then
		cat "$d/replay.err"
		FAILS+=("$name ($opts): tlogctl replay-log of tlogctl's log")
		failed=$((failed + 1))
		continue
	fi
	walk_image "$d/C.img" "$d/m" "$d/C.json" || { FAILS+=("$name: replay-log's image does not mount"); failed=$((failed + 1)); continue; }
	if ! python3 -S "$TREECMP" diff --labels kernel-replay,replay-log "$d/B.json" "$d/C.json" > "$d/BC.diff" 2>&1; then
		head -20 "$d/BC.diff"
		FAILS+=("$name ($opts): replay-log and the kernel replay tlogctl's log differently")
		failed=$((failed + 1))
		continue
	fi
	if python3 -S "$TREECMP" diff --labels kernel,tlogctl "$d/A.json" "$d/B.json" > "$d/AB.diff" 2>&1; then
		equal=$((equal + 1))
		echo "$name ($opts): $kind, same tree as the kernel's"
	else
		head -20 "$d/AB.diff"
		FAILS+=("$name ($opts): $kind, and the kernel's replays of the two images differ")
		failed=$((failed + 1))
	fi
	rm -f "$d"/*.img
done

echo "scripts: $total; fsyncs all logged: $logged ($((100 * logged / (total ? total : 1)))%);" \
	"a full commit where the kernel makes one: $committed; same tree as the kernel: $equal;" \
	"log summaries differing (notes): $lognotes"
if [ ${#FAILS[@]} -gt 0 ]; then
	printf '  %s\n' "${FAILS[@]}"
	fail "$failed scenario(s) failed"
fi
exit 0
