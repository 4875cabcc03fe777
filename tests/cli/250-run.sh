#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tlogctl run on its own (no mount needed): the script is parsed whole
# before anything changes, refused operations are reported as the system
# call would report them and the script goes on (or stops with
# --strict), power cut vs clean unmount, SOURCE_DATE_EPOCH, --stats and
# JSON, mount options, path walks (one budget of 40 symlinks, trailing
# slashes, no-follow calls), and what the resulting image holds, read
# back through the query commands.
. "$(dirname "$0")/../common.sh"

img="$TMP/img"
tl mkfs -q -b 256M "$img" || fail "mkfs"
fp() { sha256sum "$1" | cut -d' ' -f1; }

# ---- a syntax error anywhere: exit 2, SCRIPT:LINE, nothing written ----
printf 'mkdir /a\nwrite /a/f 0 10\nbogus /x\n' > "$TMP/bad1.tlw"
printf 'mkdir /a\nwrite /a/f zero 10\n' > "$TMP/bad2.tlw"
printf 'mkdir a\n' > "$TMP/bad3.tlw"
printf 'setxattr /a user.x "unclosed\n' > "$TMP/bad4.tlw"
printf 'mknod /n c 4096 1\n' > "$TMP/bad5.tlw"
before=$(fp "$img")
for i in 1 2 3 4 5; do
	rc=0
	tl run "$img" "$TMP/bad$i.tlw" > /dev/null 2> "$TMP/err" || rc=$?
	[ $rc = 2 ] || fail "syntax error $i: exit $rc, not 2"
	grep -q "^$TMP/bad$i.tlw:[0-9]*: " "$TMP/err" || { cat "$TMP/err"; fail "syntax error $i: no SCRIPT:LINE: message"; }
	[ "$(wc -l < "$TMP/err")" = 1 ] || { cat "$TMP/err"; fail "syntax error $i: more than one line"; }
done
grep -q ':3: unknown operation' <(tl run "$img" "$TMP/bad1.tlw" 2>&1) || fail "the line of the error"
# a quoted value may run over lines; the lines after it count as in the
# file, in tlogctl run and in its Python copy that drives the kernel tests
cat > "$TMP/multi.tlw" <<'S'
mkdir /q
setxattr /q user.x 'one
two
three'
bogus /x
S
rc=0
tl run "$img" "$TMP/multi.tlw" > /dev/null 2> "$TMP/err" || rc=$?
[ $rc = 2 ] && [ "$(cat "$TMP/err")" = "$TMP/multi.tlw:5: unknown operation 'bogus'" ] ||
	{ cat "$TMP/err"; fail "the line of an error after a three-line quoted value (exit $rc)"; }
rc=0
python3 "$TOP/tests/tools/wl-exec.py" "$TMP/multi.tlw" "$TMP/no-mount" 2> "$TMP/err.py" || rc=$?
[ $rc = 2 ] && diff "$TMP/err" "$TMP/err.py" || fail "wl-exec.py counts the lines otherwise (exit $rc)"
[ "$(fp "$img")" = "$before" ] || fail "a script with a syntax error changed the image"

# ---- refusals: reported, the script goes on; --strict stops ----
cat > "$TMP/ops.tlw" <<'S'
mkdir /d
write /d/a 0 5000 0x61
mkdir /d
rmdir /missing
write /d/b 0 100 0x62
link /d /d2
rename /d/a /d/b
symlink /d/b /s
setxattr /d/b user.k "a value"
removexattr /d/b user.none
chmod /d/b 600
chown /d/b 12 34
mknod /d/c c 1 3
mknod /d/p p
S
rc=0
tl run --commit "$img" "$TMP/ops.tlw" > /dev/null 2> "$TMP/err" || rc=$?
[ $rc = 0 ] || { cat "$TMP/err"; fail "run exited $rc"; }
cat > "$TMP/expect" <<E
$TMP/ops.tlw:3: mkdir: File exists
$TMP/ops.tlw:4: rmdir: No such file or directory
$TMP/ops.tlw:6: link: Operation not permitted
$TMP/ops.tlw:10: removexattr: No data available
E
diff "$TMP/expect" "$TMP/err" || fail "the refusals reported"
cat > "$TMP/multi2.tlw" <<'S'
mkdir /q
setxattr /q user.x "one
two
three"
rmdir /missing
S
tl run "$img" "$TMP/multi2.tlw" 2> "$TMP/err" || fail "run of multi2"
[ "$(cat "$TMP/err")" = "$TMP/multi2.tlw:5: rmdir: No such file or directory" ] ||
	{ cat "$TMP/err"; fail "the line of a refusal after a three-line quoted value"; }
tl ls -l "$img" /d > "$TMP/ls" || fail "ls after run"
grep -q '^-rw------- *1 *12 *34 *5000 .* b$' "$TMP/ls" || { cat "$TMP/ls"; fail "/d/b after rename over it, chmod, chown"; }
grep -q '^c' "$TMP/ls" && grep -q '^p' "$TMP/ls" || { cat "$TMP/ls"; fail "device and fifo"; }
[ "$(tl cat "$img" /d/b | head -c 5000 | tr -d a | wc -c)" = 0 ] || fail "contents of /d/b"
[ "$(tl ls "$img" /d | tr '\n' ' ')" = "b c p " ] || fail "names in /d: $(tl ls "$img" /d)"
tl stat "$img" /d/c | grep -qi "device.*1, *3\|1:3\|rdev.*1,3\|major.*1" ||
	{ tl stat "$img" /d/c; fail "rdev of /d/c"; }

printf 'mkdir /e\nrmdir /nothing\nmkdir /f\n' > "$TMP/strict.tlw"
rc=0
tl run --strict --commit "$img" "$TMP/strict.tlw" 2> "$TMP/err" || rc=$?
[ $rc = 1 ] || fail "--strict: exit $rc, not 1"
tl ls "$img" / | grep -qx e || fail "--strict: what came before the refusal is lost"
tl ls "$img" / | grep -qx f && fail "--strict: an operation after the refusal was applied"

# ---- power cut vs clean unmount ----
base=$(fp "$img")
printf 'mkdir /pc\nwrite /pc/x 0 1m\n' > "$TMP/pc.tlw"
tl run "$img" "$TMP/pc.tlw" || fail "run without --commit"
[ "$(fp "$img")" = "$base" ] || fail "without --commit nothing may be committed"
printf 'mkdir /pc\nsync\nwrite /pc/x 0 1m\n' > "$TMP/pc2.tlw"
tl run "$img" "$TMP/pc2.tlw" || fail "run with a sync"
tl ls "$img" / | grep -qx pc || fail "the sync did not commit"
tl ls "$img" /pc | grep -q . && fail "a write after the last sync was committed"

# ---- SOURCE_DATE_EPOCH, stdin, --stats --format json ----
printf 'mkdir /t\nwrite /t/x 0 10\n' | SOURCE_DATE_EPOCH=1000000000 tl run --commit --stats --format json "$img" - > "$TMP/stats.json" ||
	fail "run from stdin"
python3 - "$TMP/stats.json" <<'PY' || fail "--stats JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["operations"] == 2 and d["operations_done"] == 2 and d["operations_refused"] == 0, d
assert d["transactions"] >= 1 and d["blocks_written"] > 0 and d["data_extents"] == 0, d
PY
tl stat --format json "$img" /t/x | python3 -c '
import json, sys
d = json.load(sys.stdin)
m = d.get("mtime") or d.get("times", {}).get("mtime")
s = json.dumps(m)
assert "1000000000" in s or "2001-09-09" in s, s' || { tl stat "$img" /t/x; fail "SOURCE_DATE_EPOCH not used for times"; }

# ---- mount options ----
rc=0
tl run -o compress=brotli "$img" "$TMP/pc.tlw" 2> "$TMP/err" || rc=$?
[ $rc = 1 ] && grep -q "ERROR: bad mount options" "$TMP/err" || { cat "$TMP/err"; fail "a bad -o"; }
printf 'write /z 0 1m 0x7a\n' > "$TMP/z.tlw"
tl run -o compress=zstd --commit "$img" "$TMP/z.tlw" || fail "run -o compress=zstd"
tl fiemap -v "$img" /z | python3 -c '
import sys
flags = [int(l.split()[-1], 16) for l in sys.stdin.read().splitlines()[2:]]
sys.exit(0 if flags and all(f & 8 for f in flags) else 1)' || { tl fiemap -v "$img" /z; fail "compress=zstd wrote plain extents"; }
tl dump-super "$img" | grep -qi "compress_zstd\|COMPRESS_ZSTD" || fail "compress=zstd did not mark the filesystem"
[ "$(tl cat "$img" /z | tr -d z | wc -c)" = 0 ] && [ "$(tl cat "$img" /z | wc -c)" = 1048576 ] ||
	fail "compressed contents read back wrong"

# ---- path walks: one budget of 40 symlinks for the whole walk ----
# (as Linux counts: middle and final links together), trailing slashes,
# the calls that do not follow a final link
simg="$TMP/walk.img"
tl mkfs -q -b 256M "$simg" || fail "mkfs for the path walks"
# chain DIR NAME N TARGET: DIR/NAME1 -> NAME2 -> ... -> NAMEN -> TARGET
chain() {
	local i
	echo "symlink $4 $1/$2$3"
	for ((i = $3 - 1; i >= 1; i--)); do echo "symlink $2$((i + 1)) $1/$2$i"; done
}
{
	echo "mkdir /s"
	echo "mkdir /s/d"
	echo "write /s/d/f 0 10"
	chain /s m 20 d
	chain /s n 40 d
	chain /s o 41 d
	chain /s/d f 20 f
	chain /s/d g 21 f
	cat <<'S'
symlink m1/f2 /s/y
symlink m1/f1 /s/x
symlink d /s/ld
symlink /s/d /s/abs
symlink nothere /s/dang
truncate /s/m1/f1 3
chmod /s/y 604
truncate /s/m1/g1 1
chmod /s/m1/g1 640
chmod /s/x 640
write /s/n1/h 0 5
write /s/o1/i 0 5
create /s/o1/p
chown /s/m1/g1 3 4
link /s/d/f1 /s/d/f1b
chown /s/ld/ 5 6
fsync /s/ld/
chown /s/d/f1/ 1 1
write /s/d/f/ 0 1
write /s/d/new/ 0 1
chmod /s/d/.. 700
write /s/abs/a 0 3
write /s/dang 0 4
S
} > "$TMP/walk.tlw"
lineof() { grep -nxF "$1" "$TMP/walk.tlw" | cut -d: -f1; }
ELOOP="Too many levels of symbolic links"
rc=0
tl run --commit "$simg" "$TMP/walk.tlw" > /dev/null 2> "$TMP/err" || rc=$?
[ $rc = 0 ] || { cat "$TMP/err"; fail "path walks: run exited $rc"; }
cat > "$TMP/expect" <<E
$TMP/walk.tlw:$(lineof "truncate /s/m1/g1 1"): truncate: $ELOOP
$TMP/walk.tlw:$(lineof "chmod /s/m1/g1 640"): chmod: $ELOOP
$TMP/walk.tlw:$(lineof "chmod /s/x 640"): chmod: $ELOOP
$TMP/walk.tlw:$(lineof "write /s/o1/i 0 5"): write: $ELOOP
$TMP/walk.tlw:$(lineof "create /s/o1/p"): create: $ELOOP
$TMP/walk.tlw:$(lineof "chown /s/d/f1/ 1 1"): chown: Not a directory
$TMP/walk.tlw:$(lineof "write /s/d/f/ 0 1"): write: Is a directory
$TMP/walk.tlw:$(lineof "write /s/d/new/ 0 1"): write: Is a directory
E
diff "$TMP/expect" "$TMP/err" || fail "path walks: the refusals (40 links in all followed, the 41st ELOOP)"
tl ls -l "$simg" /s/d > "$TMP/ls" || fail "ls /s/d"
grep -q '^-rw----r-- *1 *0 *0 *3 .* f$' "$TMP/ls" ||
	{ cat "$TMP/ls"; fail "/s/d/f: truncated and chmod-ed through 40 links, not through 41"; }
grep -q '^l.* 3 *4 .* g1 -> g2$' "$TMP/ls" || { cat "$TMP/ls"; fail "chown (lchown) followed the final link"; }
grep -q '^l.* 2 .* f1 -> f2$' "$TMP/ls" && grep -q '^l.* f1b -> f2$' "$TMP/ls" ||
	{ cat "$TMP/ls"; fail "link followed the final link"; }
grep -q '^-.* 0 *0 *5 .* h$' "$TMP/ls" && grep -q '^-.* 0 *0 *3 .* a$' "$TMP/ls" ||
	{ cat "$TMP/ls"; fail "40 middle links, or an absolute target from the top"; }
grep -q ' i$\| p$\| new$' "$TMP/ls" && { cat "$TMP/ls"; fail "made through 41 links, or with a trailing slash"; }
tl ls -l "$simg" / | grep -q '^drwx------ .* s$' || { tl ls -l "$simg" /; fail "chmod /s/d/.. is /s"; }
tl ls -l "$simg" /s > "$TMP/ls" || fail "ls /s"
grep -q '^d.* 5 *6 .* d$' "$TMP/ls" || { cat "$TMP/ls"; fail "chown /s/ld/: a trailing slash follows"; }
grep -q '^-.* 0 *0 *4 .* nothere$' "$TMP/ls" || { cat "$TMP/ls"; fail "write through a dangling link makes its target"; }

# ---- the logger's optimisations: the same log, fewer searches ----
scn="$TOP/tests/kernel/replay-scenarios"
cat "$scn/023-dir-fsync-new-entries.tlw" "$scn/044-truncate-grow-fsync.tlw" |
	grep -v '^sync' > "$TMP/opt.tlw"
for v in on off; do
	opt=; [ $v = off ] && opt=--no-log-optimizations
	tl mkfs -q -b 256M "$TMP/opt-$v.img" || fail "mkfs"
	SOURCE_DATE_EPOCH=1700000000 tl run $opt --stats --format json "$TMP/opt-$v.img" "$TMP/opt.tlw" \
		> "$TMP/opt-$v.json" 2> "$TMP/opt-$v.err" || { cat "$TMP/opt-$v.err"; fail "run ($v)"; }
	tl dump-log "$TMP/opt-$v.img" | grep -v '^log root tree\|^log tree of' > "$TMP/opt-$v.log"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(*[d[k] for k in sys.argv[2:]])' \
		"$TMP/opt-$v.json" log_syncs deletion_searches_first_logging log_searches \
		copy_buffer_allocations inode_items_flushed_for_log log_blocks_written \
		log_blocks_verified items_copied > "$TMP/opt-$v.n"
done
diff "$TMP/opt-on.log" "$TMP/opt-off.log" || fail "--no-log-optimizations changes the log"
read -r syncs first_on searches_on allocs_on flushed_on written verified copied < "$TMP/opt-on.n"
read -r _ first_off searches_off allocs_off flushed_off _ _ _ < "$TMP/opt-off.n"
[ "$syncs" -gt 1 ] || fail "the script synced no log ($syncs)"
[ "$first_on" = 0 ] || fail "$first_on deletion searches for inodes logged the first time"
[ "$first_off" -gt 0 ] && [ "$searches_off" -gt "$searches_on" ] ||
	fail "without the optimisations: $first_off first-time deletion searches, $searches_off log searches (with: $searches_on)"
# one item list, grown to the longest run, for every copy ($copied items)
[ "$allocs_on" -ge 1 ] && [ "$allocs_on" -le 3 ] && [ "$allocs_off" -gt $((allocs_on * 3)) ] ||
	fail "item lists allocated for copies: $allocs_on (without the optimisations $allocs_off)"
# full syncs copy from memory, without writing the inode item to the subvolume first
[ "$flushed_on" = 0 ] && [ "$flushed_off" -gt 0 ] ||
	fail "inode items written for the log: $flushed_on (without the optimisations $flushed_off)"
[ "$written" -gt 0 ] && [ "$verified" = "$written" ] ||
	fail "$verified of $written log blocks checked before they were written"
# a log block the kernel would refuse is never written: the fsync commits instead
tl mkfs -q -b 256M "$TMP/bad.img" || fail "mkfs"
TLOG_LOG_BREAK=bad-item tl run --stats --format json "$TMP/bad.img" "$TMP/opt.tlw" \
	> "$TMP/bad.json" 2> "$TMP/bad.err" || { cat "$TMP/bad.err"; fail "run with bad log items"; }
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["log_syncs"], d["full_commits"], *set(d["full_commit_reasons"]))' \
	"$TMP/bad.json" > "$TMP/bad.n"
[ "$(cat "$TMP/bad.n")" = "0 $syncs writing the log failed" ] ||
	fail "inode items without a file type: $(cat "$TMP/bad.n") (log syncs, full commits, reasons)"
tl dump-log "$TMP/bad.img" | grep -q '^no log tree' || fail "a log with bad items reached the disk"

# ---- bad targets ----
rc=0
tl run "$TMP/missing.img" "$TMP/pc.tlw" 2> "$TMP/err" || rc=$?
[ $rc = 1 ] && grep -q "^tlogctl: ERROR: " "$TMP/err" || fail "a missing image"
rc=0
tl run "$img" "$TMP/missing.tlw" 2> "$TMP/err" || rc=$?
[ $rc = 2 ] && grep -q "cannot open" "$TMP/err" || { cat "$TMP/err"; fail "a missing script: exit $rc"; }
echo "run: syntax, refusals, strict, power cut, epoch, stats, options, path walks, log optimisations, bad targets"
