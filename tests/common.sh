# SPDX-License-Identifier: GPL-2.0-only
# Helpers sourced by every test script.  A test script exits 0 (pass),
# 1 (fail) or 77 (skip, with the reason on stdout).
#
# In CI nothing may pass by not running: with TLOG_NO_SKIP=1 (set by
# .ci/run) or CI=true (set by CI services) every skip is a failure.
# TLOG_REQUIRE_KERNEL=1, its older name, still works.
set -u
set -o pipefail

: "${TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${BUILDDIR:=$TOP}"
TLOGCTL="$BUILDDIR/tlogctl"
SHARED="${SHARED:-$TOP/../shared}"
CORPUS="$SHARED/corpus"

# Sanitizer runs: a finding must fail the test, never pass as "exit 1".
export ASAN_OPTIONS="${ASAN_OPTIONS:-exitcode=86:detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=87}"
export TZ=UTC LC_ALL=C

TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlogctl-test.XXXXXX")
MOUNTS=()
LOOPS=()

# On every exit, a stopped or failed one included: what runs inside a
# mount goes first (it keeps the mount busy), then the mounts (lazily if
# still busy), then the loop devices.  An image a loop device still holds
# is not deleted: a loop device on a deleted file outlives the test and
# has wedged later mounts of a whole CI run.
cleanup() {
	local m l i held
	pkill -TERM -P $$ 2>/dev/null
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		m=${MOUNTS[$i]}
		mountpoint -q "$m" || continue
		umount "$m" 2>/dev/null || { sleep 1; umount "$m" 2>/dev/null; } ||
			umount -l "$m" 2>/dev/null
	done
	for l in "${LOOPS[@]}"; do
		losetup -d "$l" 2>/dev/null
	done
	held=$(losetup -a 2>/dev/null | grep -F "$TMP/" || true)
	if [ -n "$held" ]; then
		echo "cleanup: loop devices still hold images under $TMP; left in place:" >&2
		echo "$held" >&2
		return
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

# Whether a skip must fail (see the top of this file).
no_skip() {
	[ "${TLOG_NO_SKIP:-0}" = 1 ] || [ "${CI:-}" = true ] || [ "${TLOG_REQUIRE_KERNEL:-0}" = 1 ]
}

skip() {
	if no_skip; then
		echo "FAIL: cannot run, and skips are failures here (TLOG_NO_SKIP/CI): $*"
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}

# Run tlogctl; any sanitizer report or crash is a failure of the test.
tl() {
	"$TLOGCTL" "$@"
}

# Exit status of a command that may fail but must not crash: prints it.
# Fails the test on signals, sanitizer exits and timeouts.
run_nocrash() {
	local out="$1"; shift
	local rc=0
	timeout 60 "$@" >"$out.out" 2>"$out.err" || rc=$?
	if [ $rc -ge 124 ] || [ $rc -eq 86 ] || [ $rc -eq 87 ]; then
		echo "command crashed or hung (exit $rc): $*"
		sed -n '1,30p' "$out.err"
		return 1
	fi
	if grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$out.err"; then
		echo "sanitizer report: $*"
		sed -n '1,30p' "$out.err"
		return 1
	fi
	echo "$rc" > "$out.rc"
	return 0
}

need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "$c is not installed"
	done
}

# Loop mounts need root and a kernel with btrfs.
need_mount() {
	[ "$(id -u)" = 0 ] || skip "kernel tests need root (loop mounts)"
	grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || true
	grep -qw btrfs /proc/filesystems || skip "the kernel has no btrfs"
	local probe="$TMP/probe.img" dir="$TMP/probe.mnt"
	truncate -s 128M "$probe" && mkfs.btrfs -q -f "$probe" >/dev/null 2>&1 ||
		skip "mkfs.btrfs cannot make a probe image"
	mkdir -p "$dir"
	mount -o loop "$probe" "$dir" 2>/dev/null || skip "loop mount does not work here"
	umount "$dir"
	rm -f "$probe"
}

# mount_image IMG DIR [OPTS]: loop-mount and remember it for cleanup.
mount_image() {
	local img="$1" dir="$2" opts="${3:-}"
	local loop
	mkdir -p "$dir"
	loop=$(losetup -f --show "$img") || fail "losetup $img"
	LOOPS+=("$loop")
	mount ${opts:+-o "$opts"} "$loop" "$dir" || fail "mount $img"
	MOUNTS+=("$dir")
}

umount_image() {
	local dir="$1" l
	umount "$dir" || fail "umount $dir"
	for l in "${LOOPS[@]}"; do
		losetup -d "$l" 2>/dev/null
	done
	LOOPS=()
}

# mkfs IMG SIZE [mkfs.btrfs options...]
make_image() {
	local img="$1" size="$2"; shift 2
	rm -f "$img"
	truncate -s "$size" "$img"
	mkfs.btrfs -q -f "$@" "$img" >/dev/null 2>&1 || fail "mkfs.btrfs $* failed"
}

# Compare two files; on difference, show the first lines of the diff.
same_file() {
	if ! diff -u "$1" "$2" > "$TMP/diff.out"; then
		echo "difference between $1 and $2:"
		head -40 "$TMP/diff.out"
		return 1
	fi
}

# expect_error TEXT CMD...: CMD exits 1 with exactly one "tlogctl: ERROR:"
# line, which mentions TEXT (a grep pattern); no crash, no hang.
expect_error() {
	local text="$1"; shift
	run_nocrash "$TMP/r" "$@" || fail "crash: $*"
	[ "$(cat "$TMP/r.rc")" = 1 ] || { cat "$TMP/r.err"; fail "exit $(cat "$TMP/r.rc"), expected 1: $*"; }
	grep -q "^tlogctl: ERROR: .*$text" "$TMP/r.err" || {
		cat "$TMP/r.err"; fail "no error mentioning '$text': $*"; }
	[ "$(grep -c '^tlogctl: ERROR:' "$TMP/r.err")" -eq 1 ] || {
		cat "$TMP/r.err"; fail "more than one error line: $*"; }
}

# check_clean IMG WHAT [btrfs check options...]: btrfs check --readonly
# finds nothing, or the test fails showing the end of its report.
check_clean() {
	local img="$1" what="$2"
	shift 2
	btrfs check --readonly "$@" "$img" > "$TMP/check.out" 2>&1 || {
		tail -20 "$TMP/check.out"; fail "$what: btrfs check found errors"; }
}

# flip_block IMG BYTENR: flip a byte inside every copy of a tree block
# (mapped through the chunk tree, so it works for log blocks too)
flip_block() {
	local img="$1" block="$2" phys p
	phys=$(tl dump-tree -t chunk --format json "$img" | python3 -c '
import json, sys
block = int(sys.argv[1])
for t in json.load(sys.stdin)["trees"]:
    for b in t["blocks"]:
        for it in b.get("items", []):
            d = it.get("data", {})
            if it["key"]["type"] == 228 and it["key"]["offset"] <= block < it["key"]["offset"] + d["length"]:
                for s in d["stripes"]:
                    print(s["offset"] + block - it["key"]["offset"])
' "$block")
	[ -n "$phys" ] || fail "cannot map tree block $block"
	for p in $phys; do
		python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]) + 200)
    b = f.read(1)
    f.seek(int(sys.argv[2]) + 200)
    f.write(bytes([b[0] ^ 0xff]))
' "$img" "$p"
	done
}
