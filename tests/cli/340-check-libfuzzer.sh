#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The libFuzzer harness of the checker (tests/fuzz/fuzz-check.c), built
# with clang, ASan and UBSan by tests/fuzz/build.sh, run for
# TLOG_FUZZ_BUDGET seconds (60) on a base image made by tlogctl mkfs and
# run (files, xattrs, links, inline and regular extents, a snapshot, an
# fsync log), which must check clean first.  The seed corpus is made
# here: one input per field that matters (block bytenr, level, nritems,
# generation, owner, the first item's key and offset, a node pointer,
# superblock roots) for each of the first targets, re-sealed and not.
# Any crash, leak, timeout (-timeout 20 s per input) or sanitizer report
# fails the test; the input and the base image are then kept in
# TLOG_FUZZ_SAVE (/tmp/tlog-check-fuzz) with the command that repeats it.
# Objects are cached in TLOG_FUZZ_BUILD (default: a directory in /tmp
# named after this tree), so the second run of CI only relinks.  The
# harness is the same sanitized build in both of CI's passes, so the
# sanitizer pass (TLOG_SUBSET set) gives it a quarter of the time.
. "$(dirname "$0")/../common.sh"
need_cmd clang python3
tl check --help > /dev/null 2>&1 || fail "tlogctl has no check command"

budget=${TLOG_FUZZ_BUDGET:-$((60 / ${TLOG_SUBSET:-1}))}
save=${TLOG_FUZZ_SAVE:-/tmp/tlog-check-fuzz}
build=${TLOG_FUZZ_BUILD:-${TMPDIR:-/tmp}/tlog-fuzz-build.$(echo "$TOP" | md5sum | cut -c1-8)}

start=$(date +%s)
"$TOP/tests/fuzz/build.sh" "$build" > "$TMP/build.log" 2>&1 || {
	tail -30 "$TMP/build.log"; fail "tests/fuzz/build.sh failed"; }
echo "built in $(( $(date +%s) - start ))s"
FUZZER="$build/fuzz-check"

# the base image
img="$TMP/base.img"
tl mkfs -q -b 100M "$img" || fail "mkfs"
cat > "$TMP/script" <<-'EOF'
	mkdir /d
	mkdir /d/e
	write /d/small 0 100
	write /d/big 0 300k
	write /d/big 1m 64k 0x11
	setxattr /d/big user.a hello
	setxattr /d/small user.long xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
	link /d/big /d/e/biglink
	symlink /d/small /d/sl
	mknod /d/fifo p
	create /d/pre
	falloc /d/pre 0 64k
	sync
	mksnap / /snap
	write /d/after 0 20k
	write /snap/d/big 0 4k 0x22
	unlink /d/e/biglink
	sync
	write /d/log1 0 9000
	setxattr /d/log1 user.x y
	link /d/log1 /d/e/log1b
	fsync /d/log1
	write /d/small 50 10 0x33
	fsync /d/small
EOF
tl run "$img" "$TMP/script" > "$TMP/run.out" 2>&1 || { cat "$TMP/run.out"; fail "run"; }
run_nocrash "$TMP/c" "$TLOGCTL" check "$img" || fail "check of the base image crashed"
[ "$(cat "$TMP/c.rc")" = 0 ] || { cat "$TMP/c.out"; fail "the base image does not check clean"; }

# the seed corpus (input format: the comment at the top of fuzz-check.c)
mkdir -p "$TMP/seeds" "$TMP/corpus" "$TMP/art"
python3 -S - "$TMP/seeds" <<-'PY' || fail "cannot write the seed corpus"
	import os, struct, sys
	out = sys.argv[1]
	def rec(flags, target, off, data):
	    return struct.pack("<BHHB", flags, target, off, len(data) - 1) + data
	# (offset, bytes) in a tree block, each field written whole so that
	# libFuzzer's comparison tracing finds the value in the input: bytenr,
	# generation, owner, nritems, level, slot 0's key objectid / type /
	# offset, item offset and size (in a node: block pointer and its
	# generation), bytes inside the data
	q = lambda v: struct.pack("<Q", v)
	fields = [(48, q(0x1000)), (80, q(3)), (88, q(0x105)), (96, struct.pack("<I", 0x101)),
	          (100, b"\x01"), (101, q(0x101)), (109, b"\x54"), (110, q(0x10001)),
	          (118, struct.pack("<I", 0x3e00)), (122, struct.pack("<I", 0x120)),
	          (126, q(0x11)), (16000, b"\x01\x02\x03\x04")]
	n = 0
	def put(data):
	    global n
	    open(os.path.join(out, "seed-%03d" % n), "wb").write(data)
	    n += 1
	put(b"\x00")
	put(b"\x01")
	put(b"\x02")
	for t in range(3, 40):
	    for off, data in fields:
	        put(b"\x00" + rec(0, t, off, data))
	    put(b"\x00" + rec(2, t, 200, b"\x01"))
	# superblock: root, chunk_root, log_root, generation, bytes_used, sys array
	for off in (80, 88, 96, 72, 120, 811, 811 + 17 + 44):
	    put(b"\x00" + rec(1, 0, off, b"\x10"))
	PY

echo "fuzzing for ${budget}s"
ASAN_OPTIONS="$ASAN_OPTIONS:allocator_may_return_null=1" TLOG_FUZZ_IMAGE="$img" \
	timeout -k 10 $((budget + 120)) "$FUZZER" -max_total_time="$budget" -timeout=20 \
	-rss_limit_mb=2048 -max_len=512 -print_final_stats=1 -artifact_prefix="$TMP/art/" \
	"$TMP/corpus" "$TMP/seeds" > "$TMP/fuzz.log" 2>&1
rc=$?
grep -E '^fuzz-check:|^Done|^stat::number_of_executed_units|^stat::peak_rss' "$TMP/fuzz.log"
if [ $rc != 0 ] || [ -n "$(ls -A "$TMP/art")" ]; then
	grep -E -m1 -B2 -A30 'ERROR: |runtime error|==ABORTING|deadly signal|Timeout|out-of-memory' \
		"$TMP/fuzz.log" || tail -40 "$TMP/fuzz.log"
	mkdir -p "$save"
	keep="$save/libfuzzer-$(date +%Y%m%d-%H%M%S)"
	mkdir -p "$keep" && cp --sparse=always "$img" "$keep/base.img" && cp "$TMP"/art/* "$keep/" 2>/dev/null
	echo "kept in $keep; repeat: TLOG_FUZZ_IMAGE=$keep/base.img $FUZZER $keep/<crash file>"
	fail "the harness found a problem (exit $rc)"
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/fuzz.log")
[ "${runs:-0}" -gt 0 ] || { tail -20 "$TMP/fuzz.log"; fail "the harness ran no input"; }
echo "$runs inputs, $(ls "$TMP/corpus" | wc -l) in the corpus, no crash"
exit 0
