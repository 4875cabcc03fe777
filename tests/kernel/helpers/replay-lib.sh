# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Helpers for the replay-log differential tests (tests/kernel/400-430)
# and the damage tests (450, 460: make_mixed_crash_image), sourced after
# common.sh.  A scenario is a workload script
# (Documentation/design/workload.md) run by tests/tools/wl-exec.py on a loop mount
# with commit=3600; the image copied while still mounted is the crash
# image.  compare_replay then checks:
#  - a copy replayed by the kernel (A: a ro mount of a writable loop
#    device, which replays and commits but does no orphan cleanup) and a
#    copy replayed by "tlogctl replay-log" (B, then mounted rw) have the
#    same tree (tests/tools/treecmp.py: inode numbers, types, modes,
#    owners, sizes, link counts, st_blocks, inode flags, contents,
#    data/hole maps, symlink targets, xattrs, readdir order); B has no log
#    left; btrfs check finds nothing in B before and after that rw mount;
#    "replay-log --dry-run" writes nothing; on an image without a log
#    replay-log says "no log", exits 0 and writes nothing;
#  - tlogctl fiemap -v, seek -a -r 0, cat and ls -l -i on the unreplayed
#    crash image answer what the kernel answers on A, and with --no-log
#    what it answers on a ro,rescue=nologreplay mount of the crash image
#    (tests/tools/qcmp.py; at most REPLAY_QUERY_FILES files and as many
#    directories per scenario, default 50);
#  - the inode items of A and B, read from the unmounted images, are the
#    same (treecmp.py inodes-diff: sequence, transid, exact timestamps,
#    orphans), except that a timestamp the kernel's replay set to its
#    clock (the ctime of an inode that lost a name) must be B's replay
#    time in B: the crash image is copied at CRASH_TIME, and both replays
#    run later, each within its measured window.
# Only with TLOG_REPLAY_SELFTEST=1 is B a second kernel replay: the harness
# checking itself, every diff must be empty, only the committed view is
# queried.  Never automatically: a tlogctl without a working replay-log or
# --no-log fails the test.
#
# Scenario scripts may carry directives in comments:
#   # @mkfs: OPTIONS     extra mkfs.btrfs options (e.g. -O ^no-holes)
#   # @mount: OPTIONS    extra mount options (e.g. compress=zstd)
#   # @size: SIZE        image size (default 256M)

# Hundreds of short-lived sparse images: keep them on tmpfs when there is
# one (and TMPDIR does not say otherwise); the host's writeback of deleted
# images otherwise stalls the loop mounts now and then.
if [ -z "${TMPDIR:-}" ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
	[ "$(df -k --output=avail /dev/shm 2>/dev/null | tail -1)" -gt 4000000 ] 2>/dev/null; then
	_shm=$(mktemp -d /dev/shm/tlogctl-test.XXXXXX) && { rm -rf "$TMP"; TMP=$_shm; }
fi

WLEXEC="$TOP/tests/tools/wl-exec.py"
TREECMP="$TOP/tests/tools/treecmp.py"
QCMP="$TOP/tests/tools/qcmp.py"
: "${REPLAY_QUERY_FILES:=50}"

# replay_init: the mode, once per test script.  REPLAY_SELFTEST=1 only
# when asked for: a broken tlogctl must fail, not turn the comparison into
# the kernel against itself.
replay_init() {
	REPLAY_SELFTEST=0
	if [ "${TLOG_REPLAY_SELFTEST:-0}" = 1 ]; then
		no_skip && fail "TLOG_REPLAY_SELFTEST=1 compares the kernel with itself: not in CI"
		REPLAY_SELFTEST=1
		echo "mode: harness self-test (TLOG_REPLAY_SELFTEST=1: B is a second kernel replay)"
		return
	fi
	local t
	tl replay-log --help >/dev/null 2>&1 ||
		fail "tlogctl replay-log --help fails: nothing to compare with the kernel's replay"
	for t in fiemap seek cat ls; do
		tl $t --help 2>/dev/null | grep -q -- '--no-log' ||
			fail "tlogctl $t has no --no-log: the committed view cannot be compared"
	done
	echo "mode: tlogctl replay-log against the kernel's replay"
}

# directive SCRIPT NAME: the value of "# @NAME: VALUE" in SCRIPT
directive() {
	sed -n "s/^#[[:space:]]*@$2:[[:space:]]*//p" "$1" | tail -1
}

log_root_of() {
	tl dump-super "$1" 2>/dev/null | awk '$1 == "log_root" {print $2}'
}

# log_summary IMG: what the log of IMG says, as dump-log shows it: the
# logged inodes, their names and extent ranges, and the directories'
# entries and the index ranges the log is authoritative for, in order (no
# block addresses, no times).  Range items that touch or overlap are
# merged into their union, which is what replay reads: the kernel writes
# [2, 3] and [4, max] as two items where its delayed deletions and its
# tree walk each add one, tlogctl [2, max] from its tree walk alone, and a
# later fsync of the directory adds ranges inside an earlier one.
log_summary() {
	tl dump-log "$1" 2>/dev/null |
		sed -n -e 's/^log tree of \(subvolume [0-9]*\):.*/\1/p' \
		       -e 's/^  \(inode [0-9]*\)$/\1/p' -e 's/^    \(name .*\)$/\1/p' \
		       -e 's/^    \(extent \[[0-9]*, [0-9]*)\) .*/\1/p' \
		       -e 's/^    \(hole .*\)$/\1/p' \
		       -e 's/^    \(entry index [0-9]* .* -> inode [0-9]*\).*/\1/p' \
		       -e 's/^    \(index range [^:]*\):.*/\1/p' |
		awk '
		function flush() { if (have) print "index range [" lo ", " hi "] logged"; have = 0 }
		/^index range / {
			gsub(/[\[\],]/, " "); a = $3; b = $4
			# ranges come by start: one that touches or overlaps the last joins it
			if (have && (hi == "max" || a <= hi + 1)) {
				if (hi != "max" && (b == "max" || b + 0 > hi + 0))
					hi = b
				next
			}
			flush(); lo = a; hi = b; have = 1; next
		}
		{ flush(); print }
		END { flush() }'
}

# A cheap fingerprint of an image file: any write changes its mtime.
img_digest() {
	stat -c '%s %y %z' "$1"
}

# make_crash_image SCRIPT IMG [mkfs options...]: run SCRIPT on a fresh
# filesystem mounted with commit=3600 and copy the image file while it is
# still mounted.  Sets CRASH_LOG_ROOT (0: the scenario left no log).
# WL_STRICT=1: an operation the kernel refuses fails the scenario.
make_crash_image() {
	local script="$1" img="$2"; shift 2
	local src="$img.live" mnt="$img.mnt" size mkfsopts mntopts rc=0
	size=$(directive "$script" size)
	mkfsopts=$(directive "$script" mkfs)
	mntopts=$(directive "$script" mount)
	# shellcheck disable=SC2086
	make_image "$src" "${size:-256M}" $mkfsopts "$@"
	mount_image "$src" "$mnt" "commit=3600${mntopts:+,$mntopts}"
	python3 -S "$WLEXEC" "$script" "$mnt" 2> "$img.wl.err" || rc=$?
	if [ $rc != 0 ]; then
		cat "$img.wl.err"
		fail "wl-exec.py exited $rc on $script"
	fi
	if [ -s "$img.wl.err" ]; then
		echo "operations the kernel refused:"
		sed 's/^/    /' "$img.wl.err"
		[ "${WL_STRICT:-0}" = 1 ] && fail "the scenario has operations that fail"
	fi
	cp --sparse=always "$src" "$img" || fail "cannot copy the live image"
	CRASH_TIME=$(now_ns)
	umount_image "$mnt"
	rm -f "$src"
	CRASH_LOG_ROOT=$(log_root_of "$img")
	[ -n "$CRASH_LOG_ROOT" ] || fail "tlogctl dump-super cannot read the crash image"
	if [ "$CRASH_LOG_ROOT" = 0 ]; then
		echo "note: the scenario left no log tree (everything committed)"
	fi
}

# make_mixed_crash_image IMG [mkfs options...]: a crash image whose log
# has a bit of everything (the damage tests start from it): new files with
# data, a rename over a file, hard links, xattrs, a directory fsync with
# removed entries, a truncate and a punched hole; made on a 256M image
# mounted with commit=3600 and copied while still mounted.  Fails the test
# if the kernel left no log.
make_mixed_crash_image() {
	local img="$1"; shift
	local src="$img.live" mnt="$img.mnt" f i
	make_image "$src" 256M "$@"
	mount_image "$src" "$mnt" commit=3600
	mkdir "$mnt/d" "$mnt/e"
	for i in 1 2 3 4 5 6; do echo "committed $i" > "$mnt/d/old$i"; done
	xfs_io -f -c "pwrite 0 256k" "$mnt/d/big" > /dev/null
	sync
	xfs_io -f -c "pwrite 0 64k" -c "pwrite 128k 16k" "$mnt/d/new" > /dev/null
	setfattr -n user.a -v 1 "$mnt/d/new" || fail "setfattr on the mount"
	ln "$mnt/d/new" "$mnt/e/link"
	mv "$mnt/d/old1" "$mnt/d/old2"
	rm "$mnt/d/old3"
	mv "$mnt/d/old4" "$mnt/e/moved"
	xfs_io -c "truncate 100k" -c "fpunch 8k 8k" "$mnt/d/big"
	echo tiny > "$mnt/e/inline"
	for f in d/new d/big e/inline e d; do xfs_io -c fsync "$mnt/$f"; done
	cp --sparse=always "$src" "$img" || fail "cannot copy the live image"
	umount_image "$mnt"
	rm -f "$src"
	[ "$(log_root_of "$img")" != 0 ] || fail "the kernel left no log"
}

now_ns() {
	date +%s%N
}

# after_crash_copy T: wait until 50 ms have passed since T (ns), so that no
# time the kernel's (coarse, one tick behind) clock gives a replay can be
# taken for one the crash image already held
after_crash_copy() {
	local left=$(( $1 + 50000000 - $(now_ns) ))
	[ $left -le 0 ] || sleep "0.$(printf '%09d' $left)"
}

# kernel_replay IMG MNT: the kernel's replay of IMG, as for A (a ro mount
# of a writable loop device replays and commits, no orphan cleanup).
kernel_replay() {
	mount_image "$1" "$2" ro
	umount_image "$2"
}

# inode_items IMG OUT: the inode items of IMG's subvolumes (treecmp.py inodes)
inode_items() {
	python3 -S "$TREECMP" inodes "$TLOGCTL" "$1" "$2" || fail "cannot read the inode items of $1"
}

# compare_replay CRASH_IMG NAME: see the top of this file.  Fails the
# (sub)shell with the differences shown.
compare_replay() {
	local crash="$1" name="$2"
	local d="$crash.cmp" bad=0 rc
	mkdir -p "$d"
	local log_root=${CRASH_LOG_ROOT:-}
	[ -n "$log_root" ] || log_root=$(log_root_of "$crash")
	# a crash image not made here (a metadump) is older than this anyway
	local crash_time=${CRASH_TIME:-$(now_ns)} a0 a1 b0 b1
	after_crash_copy "$crash_time"

	# A: the kernel's replay: a ro mount of a writable loop device replays
	# and commits, but leaves the inodes that the replay orphaned (no
	# orphan cleanup): the state replay-log leaves and the query commands
	# show (an orphan still shares its extents: FIEMAP's SHARED flag).
	# N: the committed state, as ro,rescue=nologreplay shows it.  Both
	# walked, then queried.
	cp --sparse=always "$crash" "$d/A.img"
	a0=$(now_ns)
	mount_image "$d/A.img" "$d/mA" ro
	a1=$(now_ns)
	cp --sparse=always "$crash" "$d/N.img"
	mount_image "$d/N.img" "$d/mN" ro,rescue=nologreplay
	local qlog=- qnolog=--no-log
	[ $REPLAY_SELFTEST = 1 ] && qlog=skip
	python3 -S "$QCMP" --limit "$REPLAY_QUERY_FILES" \
		--view "log view" "$d/mA" "$d/A.json" "$qlog" \
		--view "no-log view" "$d/mN" "$d/N.json" "$qnolog" \
		"$TLOGCTL" "$crash" > "$d/q.out" 2>&1
	rc=$?
	[ "${TLOG_VERBOSE:-0}" = 1 ] && [ $rc = 0 ] && cat "$d/q.out"
	if [ $rc != 0 ]; then
		cat "$d/q.out"
		[ -s "$d/A.json" ] && [ -s "$d/N.json" ] || fail "$name: cannot walk the kernel's views"
		echo "FAIL: $name: tlogctl's queries on the crash image differ from the kernel's"
		bad=1
	fi
	umount_image "$d/mN"
	umount_image "$d/mA"
	inode_items "$d/A.img" "$d/A.inodes.json"
	# REPLAY_CHECK_A=1: btrfs check the kernel's result too; when it is not
	# clean either (a metadump without data, say), B need not be
	local a_clean=1
	if [ "${REPLAY_CHECK_A:-0}" = 1 ]; then
		btrfs check --readonly "$d/A.img" > "$d/checkA.out" 2>&1 || {
			a_clean=0
			echo "note: btrfs check is not clean on the kernel's replay either:"
			grep -i 'error\|wrong\|missing\|mismatch' "$d/checkA.out" | head -5 | sed 's/^/    /'
		}
	fi
	rm -f "$d/N.img" "$d/A.img"

	# B: tlogctl's replay (or, in self-test mode, the kernel's again)
	cp --sparse=always "$crash" "$d/B.img"
	if [ $REPLAY_SELFTEST = 0 ]; then
		local before after
		before=$(img_digest "$d/B.img")
		run_nocrash "$d/dry" "$TLOGCTL" replay-log --dry-run "$d/B.img" ||
			fail "$name: replay-log --dry-run crashed"
		[ "$(cat "$d/dry.rc")" = 0 ] || {
			sed -n '1,20p' "$d/dry.err"; fail "$name: replay-log --dry-run exited $(cat "$d/dry.rc")"; }
		after=$(img_digest "$d/B.img")
		[ "$before" = "$after" ] || fail "$name: replay-log --dry-run changed the image"
		b0=$(now_ns)
		run_nocrash "$d/rl" "$TLOGCTL" replay-log "$d/B.img" || fail "$name: replay-log crashed"
		b1=$(now_ns)
		rc=$(cat "$d/rl.rc")
		if [ "$rc" != 0 ]; then
			sed -n '1,30p' "$d/rl.err"
			fail "$name: tlogctl replay-log exited $rc"
		fi
		if [ "$log_root" = 0 ]; then
			grep -qi 'no log' "$d/rl.out" "$d/rl.err" || {
				cat "$d/rl.out" "$d/rl.err"; fail "$name: replay-log does not say there is no log"; }
			after=$(img_digest "$d/B.img")
			[ "$before" = "$after" ] || fail "$name: replay-log changed an image without a log"
		fi
		[ "$(log_root_of "$d/B.img")" = 0 ] || fail "$name: the image still has a log after replay-log"
		btrfs check --readonly "$d/B.img" > "$d/check.out" 2>&1 || [ $a_clean = 0 ] || {
			echo "FAIL: $name: btrfs check finds errors after replay-log:"
			grep -v '^\[\|^Opening\|^Checking\|^UUID\|^found \|^total \|^btree space\|^file data\|^ *referenced' \
				"$d/check.out" | head -25
			bad=1
		}
	else
		b0=$(now_ns)
		kernel_replay "$d/B.img" "$d/mB"
		b1=$(now_ns)
	fi
	inode_items "$d/B.img" "$d/B.inodes.json"
	# the harness checking itself: deliberately spoilt inode items must be noticed
	if [ -n "${TLOG_BREAK_ITEMS:-}" ]; then
		eval "$TLOG_BREAK_ITEMS"
	fi
	python3 -S "$TREECMP" inodes-diff --labels kernel,tlogctl \
		--replay-time "$crash_time" "$a0" "$a1" "$b0" "$b1" \
		"$d/A.inodes.json" "$d/B.inodes.json" > "$d/inodes.diff" 2>&1 ||
		[ -s "$d/inodes.diff" ] || echo "treecmp.py inodes-diff failed" > "$d/inodes.diff"
	mount_image "$d/B.img" "$d/mB"
	# the harness checking itself: a deliberately spoilt B must be noticed
	if [ -n "${TLOG_BREAK_B:-}" ]; then
		eval "$TLOG_BREAK_B"
	fi
	python3 -S "$TREECMP" walk "$d/mB" "$d/B.json" --diff --labels kernel,tlogctl "$d/A.json" \
		> "$d/tree.diff" 2>&1 || rc=$?
	umount_image "$d/mB"
	if [ $REPLAY_SELFTEST = 0 ]; then
		[ $bad = 1 ] || btrfs check --readonly "$d/B.img" > "$d/check.out" 2>&1 || [ $a_clean = 0 ] || {
			echo "FAIL: $name: btrfs check finds errors after a rw mount of the tlogctl replay:"
			tail -25 "$d/check.out"
			bad=1
		}
	fi
	rm -f "$d/B.img"

	if [ -s "$d/tree.diff" ]; then
		echo "FAIL: $name: the tlogctl replay differs from the kernel's:"
		head -"${TLOG_DIFF_LINES:-60}" "$d/tree.diff"
		bad=1
	fi
	if [ -s "$d/inodes.diff" ]; then
		echo "FAIL: $name: the inode items of the tlogctl replay differ from the kernel's:"
		head -"${TLOG_DIFF_LINES:-60}" "$d/inodes.diff"
		bad=1
	fi
	[ $bad = 0 ] || exit 1
}

# run_scenario NAME CMD...: run CMD in a subshell with its own cleanup;
# prints "ok NAME" or "FAIL NAME" and its log, and adds the result to
# SCN_PASSED / SCN_FAILED / SCN_FAILURES.  SCN_DIR is the scenario's
# scratch directory.  TLOG_KEEP=1 keeps a failed scenario's crash image
# in TLOG_KEEP_DIR (default /tmp); TLOG_VERBOSE=1 shows every log.
SCN_PASSED=0
SCN_FAILED=0
SCN_FAILURES=()
scenario_cleanup() {
	local m l
	for m in "${MOUNTS[@]}"; do
		mountpoint -q "$m" && umount "$m" 2>/dev/null
	done
	for l in "${LOOPS[@]}"; do
		losetup -d "$l" 2>/dev/null
	done
	[ "${TLOG_KEEP:-0}" = 1 ] || rm -rf "$SCN_DIR"
}
run_scenario() {
	local name="$1"; shift
	local rc=0 start
	SCN_DIR="$TMP/scn/$name"
	rm -rf "$SCN_DIR"
	mkdir -p "$SCN_DIR"
	start=$(date +%s%N)
	(
		MOUNTS=()
		LOOPS=()
		trap scenario_cleanup EXIT
		"$@"
	) > "$TMP/scn.log" 2>&1 || rc=$?
	local ms secs
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	secs=$(printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)))
	if [ $rc = 0 ]; then
		SCN_PASSED=$((SCN_PASSED + 1))
		if [ "${TLOG_VERBOSE:-0}" = 1 ]; then
			echo "ok    $name (${secs}s)"
			sed 's/^/      /' "$TMP/scn.log"
		else
			echo "ok    $name (${secs}s)$(grep -q 'left no log' "$TMP/scn.log" && echo ', no log')"
		fi
	else
		SCN_FAILED=$((SCN_FAILED + 1))
		SCN_FAILURES+=("$name")
		echo "FAIL  $name (${secs}s)"
		sed 's/^/      /' "$TMP/scn.log" | head -"${TLOG_FAIL_LINES:-80}"
		if [ "${TLOG_KEEP:-0}" = 1 ] && [ -f "$SCN_DIR/crash.img" ]; then
			local keep="${TLOG_KEEP_DIR:-/tmp}/replay-fail-${name//\//_}.img"
			cp --sparse=always "$SCN_DIR/crash.img" "$keep" && echo "      crash image kept: $keep"
		fi
	fi
	[ "${TLOG_KEEP:-0}" = 1 ] || rm -rf "$SCN_DIR"
}

# scenario_summary WHAT: the closing line; fails the test if any failed.
scenario_summary() {
	echo
	echo "$1: $SCN_PASSED passed, $SCN_FAILED failed"
	[ $SCN_FAILED = 0 ] || fail "$SCN_FAILED scenario(s) failed: ${SCN_FAILURES[*]}"
}

# scenario SCRIPT NAME [mkfs options...]: the whole check of one script
# (used inside run_scenario).
scenario() {
	local script="$1" name="$2"; shift 2
	make_crash_image "$script" "$SCN_DIR/crash.img" "$@"
	compare_replay "$SCN_DIR/crash.img" "$name"
}
