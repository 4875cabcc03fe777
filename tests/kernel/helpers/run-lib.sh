# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Helpers for the differential tests of "tlogctl run" (tests/kernel/500,
# 510), sourced after common.sh and helpers/replay-lib.sh (for its tmpfs
# TMP, directive and run_scenario).
#
# run_compare SCRIPT NAME [mkfs options...]: one fresh image (mkfs.btrfs
# with the options, then the script's "# @mkfs:" options, of "# @size:"
# size, 256M by default), copied to A and B:
#   A: loop-mounted with the script's "# @mount:" options,
#      tests/tools/wl-exec.py SCRIPT, umount (clean);
#   B: tlogctl run --commit [-o MOUNT-OPTIONS] B SCRIPT.
# Then: both exit 0; their stderr (the lines of the operations the
# system call refuses, "SCRIPT:LINE: op: error") is the same; btrfs check
# --readonly finds nothing in B; A and B mounted have the same tree
# (tests/tools/treecmp.py walk --fiemap: names, inode numbers, readdir
# order, types, modes, owners, sizes, st_blocks, link counts, inode flags,
# contents, SEEK_DATA/SEEK_HOLE maps, FIEMAP extents and flags without
# physical addresses, symlink targets, device numbers, xattrs, subvolume
# roots); the kernel then goes on writing to B (a new file with data, a
# directory, a rename, umount) and btrfs check finds nothing again.
#
# Variants (tests/kernel/510): RUN_STRICT=1 runs both with --strict and
# RUN_EXPECT_RC (default 0) is the exit status both must have;
# RUN_ERRNO_ONLY=1 compares only the "op: error" parts of the refusals
# (which line runs out of space first may differ) and not the trees, and
# the kernel writes nothing more (the image is full).
#
# Only with TLOG_RUN_SELFTEST=1 is B the kernel again (wl-exec.py on a
# second mount): the harness checking itself, every diff must be empty.
# Never in CI, never automatically: a tlogctl without "run" fails.

# Features of a script (script_features) that tlogctl run does not claim
# yet: such scripts are not in the suite's default set and are listed as
# not run, with the feature (empty: tlogctl run claims the whole language
# and the mount options compress, compress-force, max_inline; e.g.
# "mount:compress op:mksnap chattr:c" would leave those out).  One word per feature: "mount:OPTION" (a
# "# @mount:" option, matched without its "=VALUE" too), "op:NAME" (an
# operation), "chattr:c" (the compress flag set).  TLOG_RUN_UNSUPPORTED
# overrides it (TLOG_RUN_UNSUPPORTED= runs everything).
: "${RUN_UNSUPPORTED=}"
RUN_UNSUPPORTED=${TLOG_RUN_UNSUPPORTED-$RUN_UNSUPPORTED}

# The mkfs matrix: scripts are spread over it (run_matrix_opts I).
RUN_NODESIZES=(4k 16k 64k)
RUN_CSUMS=(crc32c xxhash sha256 blake2)
RUN_HOLES=("" "-O ^no-holes")

RUN_SELFTEST=0

# run_init: the mode, once per test script
run_init() {
	if [ "${TLOG_RUN_SELFTEST:-0}" = 1 ]; then
		no_skip && fail "TLOG_RUN_SELFTEST=1 compares the kernel with itself: not in CI"
		RUN_SELFTEST=1
		echo "mode: harness self-test (TLOG_RUN_SELFTEST=1: B is the kernel again)"
		return
	fi
	[ -x "$TLOGCTL" ] || fail "no tlogctl at $TLOGCTL (build it first)"
	if ! tl run --help > "$TMP/run-help.out" 2>&1; then
		sed -n '1,5p' "$TMP/run-help.out"
		fail "tlogctl has no working 'run' command (tlogctl run --help fails): nothing to compare with the kernel"
	fi
	echo "mode: tlogctl run --commit against the kernel"
}

# run_matrix_opts I: the mkfs options of the I-th script (all 24
# combinations in turn: nodesize fastest, then checksum, then no-holes)
run_matrix_opts() {
	local i=$1
	local ns=${RUN_NODESIZES[$((i % 3))]} cs=${RUN_CSUMS[$((i / 3 % 4))]}
	local holes=${RUN_HOLES[$((i / 12 % 2))]}
	echo "-n $ns --csum $cs${holes:+ $holes}"
}

# script_features SCRIPT: the features of SCRIPT, one per line (see above)
script_features() {
	local o
	for o in $(directive "$1" mount | tr ',' ' '); do
		echo "mount:$o"
		echo "mount:${o%%=*}"
	done
	awk '!/^[[:space:]]*#/ && NF { print "op:" $1 }
	     $1 == "chattr" && $3 ~ /^[+=].*c/ { print "chattr:c" }' "$1"
}

# run_unsupported SCRIPT: the features of SCRIPT in RUN_UNSUPPORTED (empty: none)
run_unsupported() {
	local f u out=""
	[ -n "$RUN_UNSUPPORTED" ] || return 0
	for f in $(script_features "$1" | sort -u); do
		for u in $RUN_UNSUPPORTED; do
			[ "$f" = "$u" ] && out="$out $f"
		done
	done
	echo "${out# }"
}

# A template image per set of mkfs options and size: mkfs once, copy
# (a copy of a fresh image is a fresh image, and much cheaper).
run_fresh_image() {
	local img="$1" size="$2"; shift 2
	local key tpl
	key=$(echo "$size $*" | sha256sum | cut -c1-16)
	tpl="$TMP/tpl/$key.img"
	if [ ! -f "$tpl" ]; then
		mkdir -p "$TMP/tpl"
		make_image "$tpl.new" "$size" "$@"
		mv "$tpl.new" "$tpl"
	fi
	cp --sparse=always "$tpl" "$img" || fail "cannot copy the image"
}

# run_kernel_side IMG MNT SCRIPT MNTOPTS OUT [CRASH]: the script run by the
# kernel on a loop mount of IMG, stderr to OUT.err, exit status to OUT.rc;
# with CRASH, the mount has commit=3600 and IMG is copied to CRASH before
# the unmount: the power cut after the last operation, its fsync log in it
run_kernel_side() {
	local img="$1" mnt="$2" script="$3" mntopts="$4" out="$5" crash="${6:-}" rc=0
	[ -n "$crash" ] && mntopts="commit=3600${mntopts:+,$mntopts}"
	mount_image "$img" "$mnt" "$mntopts"
	timeout 300 python3 -S "$WLEXEC" ${RUN_STRICT_OPT:-} "$script" "$mnt" > "$out.out" 2> "$out.err" || rc=$?
	echo $rc > "$out.rc"
	if [ -n "$crash" ]; then
		cp --sparse=always "$img" "$crash" || fail "cannot copy the live image"
	fi
	umount_image "$mnt"
}

# crash_walk IMG MNT JSON: mount IMG (the kernel replays its log), walk it
crash_walk() {
	mount_image "$1" "$2" || return 1
	python3 -S "$TREECMP" walk "$2" "$3" > /dev/null || { umount_image "$2"; return 1; }
	umount_image "$2"
}

# crash_compare NAME SCRIPT MNTOPTS: the power cut after the last
# operation, by tlogctl run --check-contract without --commit (C: no
# contract violation, or the same one as the kernel's: a broken contract
# passes only when the kernel's replay of its own log gives the same tree,
# reported as "contract-kernel:") against the kernel's
# crash image (A.crash): both mounted by the kernel, which replays each
# log, must give the same tree; btrfs check finds nothing in C after the
# replay; tlogctl replay-log of another copy (D) gives the same tree too.
crash_compare() {
	local name="$1" script="$2" mntopts="$3" d="$SCN_DIR" bad=0 crc
	run_nocrash "$d/C" "$TLOGCTL" run --check-contract --stats ${mntopts:+-o "$mntopts"} \
		"$d/C.img" "$script" || fail "$name: tlogctl run (power cut) crashed"
	# a broken contract is ours unless the kernel's own log breaks it the
	# same way: judged below, once both logs are replayed by the kernel
	grep 'contract broken' "$d/C.err" | head -5 > "$d/C.contract"
	crc=$(cat "$d/C.rc")
	# exit 1 for the broken contract alone is judged below
	if [ -s "$d/C.contract" ] && [ "$crc" = 1 ] &&
	   [ "$(grep -c 'tlogctl: ERROR:' "$d/C.err")" = 1 ] &&
	   grep -q 'tlogctl: ERROR: the fsync contract was broken' "$d/C.err"; then
		crc=$(cat "$d/A.rc")
	fi
	[ "$crc" = "$(cat "$d/A.rc")" ] || fail "$name: tlogctl run without --commit exited $(cat "$d/C.rc")"
	sed -n 's/^fsync full commits: //p' "$d/C.out" > "$d/C.commits"
	cp --sparse=always "$d/C.img" "$d/D.img"
	# where both wrote a log, what dump-log shows of the two (counted by the caller)
	if [ "$(log_root_of "$d/A.crash")" != 0 ] && [ "$(log_root_of "$d/C.img")" != 0 ]; then
		log_summary "$d/A.crash" > "$d/A.logsum"
		log_summary "$d/C.img" > "$d/C.logsum"
		if diff -u "$d/A.logsum" "$d/C.logsum" > "$d/log.diff"; then
			echo "log-compare: same"
		else
			echo "log-compare: differs (kernel -, tlogctl +):"
			sed -n '3,10p' "$d/log.diff" | sed 's/^/    /'
		fi
	fi
	crash_walk "$d/A.crash" "$d/mA" "$d/Acrash.json" || fail "$name: the kernel's crash image does not mount"
	rm -f "$d/A.crash"
	if ! crash_walk "$d/C.img" "$d/mC" "$d/C.json"; then
		echo "FAIL: $name: the kernel does not mount (replay) tlogctl's crash image"
		return 1
	fi
	if ! btrfs check --readonly "$d/C.img" > "$d/checkC.out" 2>&1; then
		echo "FAIL: $name: btrfs check after the kernel replayed tlogctl's log:"
		show_check "$d/checkC.out"
		bad=1
	fi
	rm -f "$d/C.img"
	if ! python3 -S "$TREECMP" diff --labels kernel-crash,tlogctl-crash "$d/Acrash.json" "$d/C.json" \
		> "$d/crash.diff" 2>&1; then
		if [ -s "$d/C.contract" ]; then
			echo "FAIL: $name: tlogctl run --check-contract finds the fsync contract broken," \
				"and the kernel's replay of its own log differs:"
			sed 's/^/    /' "$d/C.contract"
			bad=1
		fi
		if [ "${RUN_CRASH_NOTES:-0}" = 1 ]; then
			# known differences (see the caller): shown and counted, not failed
			echo "crash-note: after a power cut and the kernel's log replay, the trees differ" \
				"(tlogctl's full commits: $(cat "$d/C.commits")):"
			head -12 "$d/crash.diff" | sed 's/^/    /'
		else
			echo "FAIL: $name: after a power cut and the kernel's log replay, the trees differ" \
				"(tlogctl's full commits: $(cat "$d/C.commits")):"
			head -"${TLOG_DIFF_LINES:-40}" "$d/crash.diff" | sed 's/^/    /'
			bad=1
		fi
	elif [ -s "$d/C.contract" ]; then
		# the same tree as the kernel's replay of its own log: the kernel's break
		echo "contract-kernel: the kernel's own log breaks the fsync contract the same way" \
			"(the two replayed trees are equal):"
		sed 's/^/    /' "$d/C.contract"
	fi
	if ! run_nocrash "$d/D" "$TLOGCTL" replay-log "$d/D.img" || [ "$(cat "$d/D.rc")" != 0 ]; then
		echo "FAIL: $name: tlogctl replay-log of tlogctl's crash image:"
		sed 's/^/    /' "$d/D.err" | head -5
		bad=1
	elif ! crash_walk "$d/D.img" "$d/mD" "$d/D.json" ||
		! python3 -S "$TREECMP" diff --labels kernel-replay,replay-log "$d/C.json" "$d/D.json" \
			> "$d/replay.diff" 2>&1; then
		echo "FAIL: $name: replay-log and the kernel replay tlogctl's log differently:"
		head -20 "$d/replay.diff" | sed 's/^/    /'
		bad=1
	fi
	rm -f "$d/D.img"
	return $bad
}

# show_check OUT: the interesting part of a btrfs check report
show_check() {
	grep -v '^\[\|^Opening\|^Checking\|^UUID\|^found \|^total \|^btree space\|^file data\|^ *referenced\|^cache and super' \
		"$1" | head -25 | sed 's/^/    /'
}

# kernel_writes MNT: the kernel goes on using an image tlogctl wrote
kernel_writes() {
	local mnt="$1" first
	first=$(cd "$mnt" && ls -A | head -1)
	xfs_io -f -c "pwrite -S 0x5a 0 200k" -c fsync "$mnt/.after-run" > /dev/null || return 1
	mkdir "$mnt/.after-dir" || return 1
	mv "$mnt/.after-run" "$mnt/.after-dir/moved" || return 1
	if [ -n "$first" ]; then
		mv "$mnt/$first" "$mnt/.after-renamed" || return 1
	fi
	echo more > "$mnt/.after-dir/small" || return 1
}

# run_compare SCRIPT NAME [mkfs options...]: see the top of this file;
# fails the (sub)shell with the script, the options and the differences.
run_compare() {
	local script="$1" name="$2"; shift 2
	local d="$SCN_DIR" size mkfsopts mntopts bad=0 rc want=${RUN_EXPECT_RC:-0}
	local RUN_STRICT_OPT=
	[ "${RUN_STRICT:-0}" = 1 ] && RUN_STRICT_OPT=--strict
	size=$(directive "$script" size)
	mkfsopts=$(directive "$script" mkfs)
	mntopts=$(directive "$script" mount)
	# shellcheck disable=SC2086
	set -- "$@" $mkfsopts
	# 64 KiB nodes on a small image: the kernel's metadata reservation,
	# which tlogctl does not model (Documentation/design/inode-ops.md),
	# refuses operations (ENOSPC) on 256M once every chunk is allocated,
	# and on 512M a rename's reservation makes it write back every file's
	# dirty data first (seed 20261206, r-124: a compressed extent cut in
	# two by the truncate after it): such images get 1G; and 2G when the
	# power cut is compared, as on 512M the reservation makes the kernel
	# commit instead of logging, even for a few operations
	local big=1G
	[ "${RUN_CRASH:-0}" = 1 ] && big=2G
	case " $* " in *" -n 64k "*) size=${size:-$big} ;; esac
	RUN_MKFS_DESC="mkfs.btrfs $* (size ${size:-256M})${mntopts:+, kernel mount -o $mntopts}"
	echo "script: $script"
	echo "mkfs:   $RUN_MKFS_DESC"
	run_fresh_image "$d/A.img" "${size:-256M}" "$@"
	cp --sparse=always "$d/A.img" "$d/B.img"
	local crash=
	if [ "${RUN_CRASH:-0}" = 1 ] && [ $RUN_SELFTEST = 0 ]; then
		crash="$d/A.crash"
		cp --sparse=always "$d/A.img" "$d/C.img"
	fi

	run_kernel_side "$d/A.img" "$d/mA" "$script" "$mntopts" "$d/A" "$crash"
	if [ $RUN_SELFTEST = 1 ]; then
		run_kernel_side "$d/B.img" "$d/mB" "$script" "$mntopts" "$d/B"
	else
		run_nocrash "$d/B" "$TLOGCTL" run --commit $RUN_STRICT_OPT ${mntopts:+-o "$mntopts"} \
			"$d/B.img" "$script" ||
			{ show_script "$script"; fail "$name: tlogctl run crashed"; }
	fi
	[ "$(cat "$d/A.rc")" = "$want" ] || { cat "$d/A.err"; fail "$name: wl-exec.py exited $(cat "$d/A.rc"), not $want"; }
	if [ "$(cat "$d/B.rc")" != "$want" ]; then
		echo "FAIL: $name: tlogctl run --commit $RUN_STRICT_OPT exited $(cat "$d/B.rc"), not $want:"
		sed -n '1,20p' "$d/B.err" | sed 's/^/    /'
		show_script "$script"
		exit 1
	fi
	if [ "${RUN_ERRNO_ONLY:-0}" = 1 ]; then
		local f
		for f in A B; do
			sed 's/^.*:[0-9]*: //' "$d/$f.err" | sort -u > "$d/$f.errno"
		done
		if ! diff -u --label kernel --label tlogctl "$d/A.errno" "$d/B.errno" > "$d/err.diff"; then
			echo "FAIL: $name: the errors of the refused operations differ:"
			sed 's/^/    /' "$d/err.diff" | head -20
			bad=1
		fi
	elif ! diff -u --label kernel --label tlogctl "$d/A.err" "$d/B.err" > "$d/err.diff"; then
		echo "FAIL: $name: the refused operations differ (stderr of wl-exec.py, of tlogctl run):"
		head -"${TLOG_DIFF_LINES:-40}" "$d/err.diff" | sed 's/^/    /'
		bad=1
	elif [ -s "$d/A.err" ] && [ "${TLOG_VERBOSE:-0}" = 1 ]; then
		echo "operations refused on both sides:"
		sed 's/^/    /' "$d/A.err"
	fi
	if [ $RUN_SELFTEST = 0 ] && ! btrfs check --readonly "$d/B.img" > "$d/check.out" 2>&1; then
		echo "FAIL: $name: btrfs check finds errors in the image tlogctl run wrote:"
		show_check "$d/check.out"
		show_script "$script"
		exit 1
	fi

	if [ "${RUN_ERRNO_ONLY:-0}" = 1 ]; then
		[ $bad = 0 ] || { show_script "$script"; exit 1; }
		return 0
	fi
	mount_image "$d/A.img" "$d/mA" ro
	python3 -S "$TREECMP" walk --fiemap "$d/mA" "$d/A.json" || fail "$name: cannot walk the kernel's tree"
	umount_image "$d/mA"
	rm -f "$d/A.img"
	mount_image "$d/B.img" "$d/mB"
	if [ -n "${TLOG_BREAK_B:-}" ]; then
		eval "$TLOG_BREAK_B"
	fi
	rc=0
	python3 -S "$TREECMP" walk --fiemap "$d/mB" "$d/B.json" --diff --labels kernel,tlogctl "$d/A.json" \
		> "$d/tree.diff" 2>&1 || rc=$?
	if [ $rc != 0 ]; then
		echo "FAIL: $name: the tree tlogctl run wrote differs from the kernel's:"
		head -"${TLOG_DIFF_LINES:-60}" "$d/tree.diff" | sed 's/^/    /'
		bad=1
	fi
	# differences of physical placement only (treecmp.py: FIEMAP merges
	# extents that lie side by side on disk): shown, not failures
	grep '^note: ' "$d/tree.diff" | sed 's/^/    /'
	kernel_writes "$d/mB" || { echo "FAIL: $name: the kernel cannot write to the image tlogctl run wrote"; bad=1; }
	umount_image "$d/mB"
	if [ $RUN_SELFTEST = 0 ] && ! btrfs check --readonly "$d/B.img" > "$d/check.out" 2>&1; then
		echo "FAIL: $name: btrfs check finds errors after the kernel wrote to tlogctl's image:"
		show_check "$d/check.out"
		bad=1
	fi
	rm -f "$d/B.img"
	if [ -n "$crash" ]; then
		crash_compare "$name" "$script" "$mntopts" || bad=1
	fi
	if [ $bad = 1 ]; then
		show_script "$script"
		exit 1
	fi
}

# show_script SCRIPT: the script, numbered (at most TLOG_SCRIPT_LINES lines)
show_script() {
	echo "script $1 (mkfs: ${RUN_MKFS_DESC:-?}):"
	grep -n '' "$1" | head -"${TLOG_SCRIPT_LINES:-80}" | sed 's/^/    | /'
}

# run_random_scripts SEED COUNT OUTDIR: COUNT scripts of tests/tools/wl-random.py
# (seeded; lengths TLOG_RANDOM_OPS, default "10 30"), each with, after some
# of its lines, operations the generator does not write (seeded too):
# mknod, chown, utimes, chattr, rename noreplace/exchange, setxattr
# create/replace, on the paths the script names (some are refused: the
# refusals are compared too)
run_random_scripts() {
	local seed="$1" count="$2" out="$3"
	# shellcheck disable=SC2086
	python3 -S "$TOP/tests/tools/wl-random.py" "$seed" "$count" "$out" ${TLOG_RANDOM_OPS:-10 30} ||
		fail "wl-random.py failed"
	python3 -S - "$seed" "$out" <<-'PY' || fail "cannot add the new operations to the random scripts"
	import os, random, sys
	seed, out = sys.argv[1], sys.argv[2]
	for f in sorted(os.listdir(out)):
	    rnd = random.Random("%s-%s-run" % (seed, f))
	    lines = open(os.path.join(out, f)).read().splitlines()
	    paths = sorted({w for l in lines for w in l.split()[1:] if w.startswith("/") and w != "/"})
	    res, n = [], 0
	    for l in lines:
	        res.append(l)
	        if not paths or l.startswith("#") or rnd.random() > 0.12:
	            continue
	        p = rnd.choice(paths)
	        q = rnd.choice(paths)
	        d = p.rsplit("/", 1)[0] or ""
	        k = rnd.randrange(8)
	        if k == 0:
	            t = rnd.choice(["c 1 3", "b 8 1", "p", "s", "c 4 64"])
	            res.append("mknod %s/node%d %s" % (d, n, t))
	            n += 1
	        elif k == 1:
	            res.append("chown %s %d %d" % (p, rnd.choice([0, 1000, 65534, 123456]), rnd.choice([0, 100, 4242])))
	        elif k == 2:
	            res.append("utimes %s %d.%d %d" % (p, rnd.randrange(2 ** 31), rnd.randrange(10 ** 9), rnd.randrange(2 ** 33)))
	        elif k == 3:
	            res.append("chattr %s %s" % (p, rnd.choice(["+C", "-C", "+m", "-m", "=C", "=m"])))
	        elif k in (4, 5):
	            res.append("rename %s %s %s" % (p, q, rnd.choice(["noreplace", "exchange"])))
	        else:
	            res.append("setxattr %s user.%s v%d %s" % (p, rnd.choice("abq"), rnd.randrange(100), rnd.choice(["create", "replace", ""])))
	    open(os.path.join(out, f), "w").write("\n".join(res) + "\n")
	PY
}
