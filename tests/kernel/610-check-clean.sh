#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tlogctl check has no false positives: it exits 0 on every image here,
# and btrfs check --readonly (Debian's and the newer build from
# ../shared/tools/btrfs-progs-new.sh) calls the same images clean:
#  - mkfs.btrfs images of both builds with several -n, -O and --csum
#    options, and tlogctl mkfs images;
#  - tlogctl run images, committed (--commit) and with a log;
#  - kernel-written images after heavy use: many files, directories, hard
#    links, xattrs, symlinks, renames, reflinks, snapshots modified on both
#    sides, compress=zstd and lzo, fallocate and punched holes, deletions;
#    checked with --check-data-csum too;
#  - a kernel crash image holding an orphan (a file deleted while open),
#    and kernel crash images with log trees (the replay scenarios, a few
#    CrashMonkey workloads, a heavy-use image with fsyncs): check and
#    check --log-only, and the same images replayed by tlogctl replay-log.
# Every image is checked by all three; every finding of tlogctl is a false
# positive and is listed (with the image's recipe) before the test fails.
#
# One disagreement is expected and explained: Debian's mkfs.btrfs 6.2
# leaves free space tree items (FREE_SPACE_INFO and an extent) for the
# temporary chunks it removed; btrfs check 6.19 reports them ("Space key
# logical L length N has no corresponding block group"), Debian's 6.2 does
# not, the kernel ignores them, and tlogctl must not fail such an image
# (it says so as a "warning:", which does not change its exit status).
# That message, and only that one, is allowed from the newer btrfs check on
# images made by Debian's mkfs, and where it appears tlogctl must warn; a
# tlogctl warning on any other image fails.
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
need_cmd mkfs.btrfs btrfs python3 xfs_io setfattr losetup fallocate
need_mount

NEW=$(bash "$SHARED/tools/btrfs-progs-new.sh" 2>"$TMP/progs-new.err") ||
	skip "the newer btrfs-progs does not build: $(tail -1 "$TMP/progs-new.err")"
[ -x "$NEW/btrfs" ] && [ -x "$NEW/mkfs.btrfs" ] || skip "no btrfs-progs build in $NEW"

mnt="$TMP/mnt"
problems=()
nimg=0
stale_seen=0
# the allowed message, and what btrfs check prints on any image
STALE_FST='^Space key logical [0-9]+ length [0-9]+ has no corresponding block group$'
BC_CHATTER='^\[[0-9]/[0-9]\]|^Opening filesystem|^Checking filesystem|^UUID:|^found [0-9]+ bytes used'
BC_CHATTER+='|^total |^btree space waste|^file data blocks|^ referenced|^cache and super generation'

# verdict IMG WHAT [debian-mkfs] [check options...]: all three checkers
# call IMG clean.  With "debian-mkfs", the newer btrfs check may report
# the stale free space items of Debian's mkfs (see the top), nothing else.
verdict() {
	local img="$1" what="$2" stale=0 rc b bin
	shift 2
	if [ "${1:-}" = debian-mkfs ]; then
		stale=1
		shift
	fi
	nimg=$((nimg + 1))
	run_nocrash "$TMP/tl" "$TLOGCTL" check "$@" "$img" || fail "$what: tlogctl check crashed"
	rc=$(cat "$TMP/tl.rc")
	if [ "$rc" != 0 ]; then
		echo "FALSE POSITIVE ($what, check $*): exit $rc"
		grep -v '^  ' "$TMP/tl.out" | head -20 | sed 's/^/    /'
		sed -n '1,5p' "$TMP/tl.err" | sed 's/^/    /'
		problems+=("$what: tlogctl check $* exit $rc: $(head -1 "$TMP/tl.out")")
	fi
	# A warning is for what tools leave behind and the kernel ignores
	# (Debian's mkfs): none on any other image.
	nwarn=$(grep -c '^warning: ' "$TMP/tl.out")
	if [ "$nwarn" != 0 ] && [ $stale = 0 ]; then
		echo "UNEXPECTED WARNING ($what, check $*):"
		grep '^warning: ' "$TMP/tl.out" | head -5 | sed 's/^/    /'
		problems+=("$what: tlogctl check $* warns: $(grep -m1 '^warning: ' "$TMP/tl.out")")
	fi
	[ $# = 0 ] || return 0	# btrfs check once per image, with the plain check
	for b in debian new; do
		bin=btrfs
		[ $b = new ] && bin="$NEW/btrfs"
		rc=0
		timeout 120 "$bin" check --readonly "$img" > "$TMP/bc.$b" 2>&1 || rc=$?
		[ $rc = 0 ] && continue
		if [ $b = new ] && [ $stale = 1 ] && grep -q '^Space key logical' "$TMP/bc.new" &&
			! grep -v -E "$STALE_FST|$BC_CHATTER" "$TMP/bc.new" | grep -q .; then
			stale_seen=$((stale_seen + 1))
			if [ "$nwarn" = 0 ]; then
				echo "no tlogctl warning where btrfs check 6.19 reports stale free space ($what)"
				problems+=("$what: tlogctl check does not warn about the stale free space items")
			fi
			continue
		fi
		echo "btrfs check ($b) not clean ($what): exit $rc"
		grep -v '^\[' "$TMP/bc.$b" | head -12 | sed 's/^/    /'
		problems+=("$what: btrfs check ($b) exit $rc:"
			"$(grep -v '^\[' "$TMP/bc.$b" | head -1)")
	done
}

# ---- mkfs images ----
MKFS_OPTS=("" "-n 4096" "-n 65536" "-O ^no-holes" "-O block-group-tree" "--csum xxhash"
	"--csum sha256" "--csum blake2" "-m single -d single" "-O ^no-holes -n 8192 --csum xxhash"
	"-M")
for builder in debian new; do
	mk=mkfs.btrfs
	[ $builder = new ] && mk="$NEW/mkfs.btrfs"
	for o in "${MKFS_OPTS[@]}"; do
		# Debian's 6.2 does not know the block group tree
		[ $builder = debian ] && [[ "$o" == *block-group-tree* ]] && continue
		img="$TMP/mkfs.img"
		rm -f "$img"
		truncate -s 300M "$img"
		# shellcheck disable=SC2086
		$mk -q -f $o "$img" > "$TMP/mkfs.out" 2>&1 || {
			cat "$TMP/mkfs.out"; fail "mkfs.btrfs ($builder) $o refused"; }
		flag=""
		[ $builder = debian ] && flag=debian-mkfs
		verdict "$img" "mkfs.btrfs ($builder) ${o:-defaults}" ${flag:+"$flag"}
	done
done
for o in "" "-n 4096" "-O ^no-holes,^block-group-tree" "--csum sha256" "-O ^block-group-tree" \
	"-m single"; do
	img="$TMP/tlmkfs.img"
	rm -f "$img"
	# shellcheck disable=SC2086
	tl mkfs -q -f -b 300M $o "$img" || fail "tlogctl mkfs $o"
	verdict "$img" "tlogctl mkfs ${o:-defaults}"
done

# ---- tlogctl run: committed, and left with a log ----
for s in 001-fsync-new-file 013-link-then-fsync 024-dir-fsync-removed-and-added \
	036-move-then-replace-dir 044-truncate-grow-fsync; do
	script="$TOP/tests/kernel/replay-scenarios/$s.tlw"
	[ -f "$script" ] || fail "no scenario $script"
	for mode in --commit ""; do
		img="$TMP/run.img"
		rm -f "$img"
		tl mkfs -q -f -b 256M "$img" || fail "tlogctl mkfs"
		tl run $mode "$img" "$script" > "$TMP/run.out" 2>&1 || {
			cat "$TMP/run.out"; fail "tlogctl run $mode $s"; }
		verdict "$img" "tlogctl run ${mode:-(log)} $s"
		[ -z "$mode" ] && verdict "$img" "tlogctl run (log) $s" --log-only
	done
done

# ---- kernel-written images after heavy use ----

# heavy_use DIR: what a busy filesystem sees (mounted compress=zstd)
heavy_use() {
	local m="$1" i
	(
		set -e
		cd "$m"
		mkdir -p a/b/c d e
		for i in $(seq 1 300); do echo "file $i $RANDOM" > "a/f$i"; done
		for i in $(seq 1 60); do head -c $((i * 700)) /dev/urandom > "a/b/r$i"; done
		for i in $(seq 1 40); do mkdir "d/dir$i"; touch "d/dir$i/x"; done
		for i in $(seq 1 30); do ln "a/f$i" "e/link$i"; done
		for i in $(seq 1 20); do setfattr -n user.k$i -v "value $i" "a/f$i"; done
		setfattr -n user.big -v "$(head -c 3000 /dev/zero | tr '\0' v)" a/f50
		for i in $(seq 1 20); do ln -s "../a/f$i" "e/sym$i"; done
		ln -s "$(head -c 2000 /dev/zero | tr '\0' s)" e/longsym 2>/dev/null || true
		for i in $(seq 100 150); do mv "a/f$i" "d/moved$i"; done
		mv d/dir1 a/b/c/dir1-moved
		head -c 3M /dev/urandom > big
		cp --reflink=always big big.ref
		xfs_io -c "pwrite -q 1M 64k" big.ref
		cp --reflink=always a/b/r60 a/b/r60.ref
		yes compressible | head -c 2M > comp
		xfs_io -f -c "falloc 0 2M" -c "pwrite -q 256k 64k" -c "fpunch 1M 128k" prealloc
		xfs_io -f -c "pwrite -q 0 1M" -c "fpunch 4k 8k" -c "fpunch 512k 100k" punched
		xfs_io -f -c "falloc -k 0 1M" keepsize
		xfs_io -f -c "pwrite -q 0 10k" -c "truncate 3000" -c "truncate 100k" trunc
		btrfs -q subvolume create sv
		for i in $(seq 1 50); do echo "sv $i" > "sv/s$i"; done
		head -c 500k /dev/urandom > sv/data
		sync
		btrfs -q subvolume snapshot sv snap1
		btrfs -q subvolume snapshot . rootsnap
		btrfs -q subvolume snapshot -r sv snap-ro
		for i in $(seq 1 20); do rm "sv/s$i"; echo "changed" >> "snap1/s$((i + 20))"; done
		xfs_io -c "pwrite -q 100k 8k" sv/data
		xfs_io -c "pwrite -q 200k 8k" snap1/data
		rm -rf rootsnap/a/b
		echo "new in the snapshot" > rootsnap/newfile
		for i in $(seq 200 260); do rm "a/f$i"; done
		rm big
		rm -rf d/dir2 d/dir3
	) || fail "heavy use"
	sync
}

# more_use DIR: after a remount with compress=lzo
more_use() {
	local m="$1"
	(
		set -e
		cd "$m"
		yes lzo-data | head -c 1M > lzo
		xfs_io -c "pwrite -q 0 128k" comp
		cp --reflink=always lzo sv/lzo.ref
		btrfs -q subvolume delete snap-ro
	) || fail "more use"
	sync
}

# heavy_image IMG MKFS [quota] [mkfs options...]: with "quota", quota
# groups are enabled first and a full balance runs at the end (shared
# back references, relocated trees, qgroup items)
heavy_image() {
	local img="$1" mk="$2" quota=0
	shift 2
	if [ "${1:-}" = quota ]; then
		quota=1
		shift
	fi
	rm -f "$img"
	truncate -s 1G "$img"
	"$mk" -q -f "$@" "$img" >/dev/null 2>&1 || fail "$mk $* failed"
	mount_image "$img" "$mnt" compress=zstd
	[ $quota = 1 ] && { btrfs quota enable "$mnt" || fail "quota enable"; }
	heavy_use "$mnt"
	umount_image "$mnt"
	mount_image "$img" "$mnt" compress=lzo
	more_use "$mnt"
	if [ $quota = 1 ]; then
		btrfs balance start --full-balance "$mnt" > /dev/null || fail "balance"
		btrfs quota rescan -w "$mnt" > /dev/null || fail "quota rescan"
	fi
	umount_image "$mnt"
}

img="$TMP/heavy.img"
heavy_image "$img" "$NEW/mkfs.btrfs"
verdict "$img" "kernel heavy use (new mkfs, zstd then lzo)"
verdict "$img" "kernel heavy use (new mkfs, zstd then lzo)" --check-data-csum
heavy_image "$img" mkfs.btrfs -O ^no-holes --csum xxhash -n 8192
verdict "$img" "kernel heavy use (Debian mkfs -O ^no-holes --csum xxhash -n 8192)" debian-mkfs
verdict "$img" "kernel heavy use (Debian mkfs -O ^no-holes --csum xxhash -n 8192)" debian-mkfs \
	--check-data-csum
heavy_image "$img" "$NEW/mkfs.btrfs" quota -O block-group-tree --csum blake2
verdict "$img" "kernel heavy use, quota, full balance (new mkfs -O block-group-tree --csum blake2)"

# the free space cache of old (v1) instead of the free space tree
img="$TMP/v1.img"
make_image "$img" 512M -R ^free-space-tree
mount_image "$img" "$mnt" space_cache=v1
heavy_use "$mnt"
umount_image "$mnt"
verdict "$img" "kernel heavy use, space_cache=v1 (Debian mkfs -R ^free-space-tree)" debian-mkfs

# ---- kernel crash images ----

# An orphan: a file deleted while still open when the image is copied.
img="$TMP/orphan.img"
make_image "$img" 512M
mount_image "$img" "$mnt"
head -c 300k /dev/urandom > "$mnt/doomed"
echo keep > "$mnt/kept"
exec 7<"$mnt/doomed"
rm "$mnt/doomed"
sync
cp --sparse=always "$img" "$TMP/orphan-crash.img"
exec 7<&-
umount_image "$mnt"
python3 "$TOP/tests/tools/damage.py" "$TMP/orphan-crash.img" list --tree fs --type 48 | grep -q . ||
	fail "the orphan crash image has no ORPHAN_ITEM"
verdict "$TMP/orphan-crash.img" "kernel crash image with an orphan (file deleted while open)" \
	debian-mkfs

# check_crash IMG WHAT [debian-mkfs]: a crash image, then its tlogctl replay
check_crash() {
	local img="$1" what="$2" flag="${3:-}"
	verdict "$img" "$what" ${flag:+"$flag"}
	verdict "$img" "$what" ${flag:+"$flag"} --log-only
	[ "$(log_root_of "$img")" != 0 ] || return 0
	cp --sparse=always "$img" "$TMP/replayed.img"
	tl replay-log "$TMP/replayed.img" > "$TMP/replay.out" 2>&1 || {
		cat "$TMP/replay.out"; fail "$what: tlogctl replay-log"; }
	verdict "$TMP/replayed.img" "$what, replayed by tlogctl" ${flag:+"$flag"}
}

# A heavy-use image with a log: fsyncs after the last commit.
img="$TMP/heavy-crash.img"
rm -f "$img"
truncate -s 1G "$img"
"$NEW/mkfs.btrfs" -q -f "$img" >/dev/null || fail "mkfs"
mount_image "$img" "$mnt" commit=3600,compress=zstd
heavy_use "$mnt"
python3 - "$mnt" <<'PY' || fail "fsync workload"
import os, sys
m = sys.argv[1]
def w(path, data, sync=True):
    fd = os.open(os.path.join(m, path), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, data)
    if sync:
        os.fsync(fd)
    os.close(fd)
def fsync(path):
    fd = os.open(os.path.join(m, path), os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
w("a/new1", b"n" * 200000)
w("sv/new2", b"x" * 5000)
os.rename(os.path.join(m, "a/f1"), os.path.join(m, "a/f1-renamed"))
fsync("a")
os.link(os.path.join(m, "a/f2"), os.path.join(m, "d/f2-link"))
fsync("a/f2")
os.setxattr(os.path.join(m, "a/f3"), "user.logged", b"v")
fsync("a/f3")
os.unlink(os.path.join(m, "a/f6"))
open(os.path.join(m, "a/created"), "w").close()
fsync("a")
w("snap1/s40", b"appended in the snapshot")
PY
xfs_io -c "fpunch 8k 8k" -c fsync "$mnt/punched"
xfs_io -c "pwrite -q 64k 64k" -c fsync "$mnt/comp"
cp --sparse=always "$img" "$TMP/heavy-crash.copy"
umount_image "$mnt"
[ "$(log_root_of "$TMP/heavy-crash.copy")" != 0 ] || fail "the heavy crash image has no log"
check_crash "$TMP/heavy-crash.copy" "kernel crash image after heavy use (zstd, fsyncs)"
verdict "$TMP/heavy-crash.copy" "kernel crash image after heavy use (zstd, fsyncs)" \
	--check-data-csum

# Replay scenarios (every fourth) and a few CrashMonkey workloads.
i=0
for s in "$TOP"/tests/kernel/replay-scenarios/*.tlw; do
	i=$((i + 1))
	[ $((i % 4)) = 1 ] || continue
	name=$(basename "$s" .tlw)
	make_crash_image "$s" "$TMP/scn.img" > "$TMP/scn.out" 2>&1 || {
		cat "$TMP/scn.out"; fail "crash image of $name"; }
	check_crash "$TMP/scn.img" "kernel crash image: replay scenario $name" debian-mkfs
done
if [ -d "$CORPUS/crashmonkey" ]; then
	for n in 1 10 50 100 150 200 250 300; do
		s="$CORPUS/crashmonkey/j-lang$n.tlw"
		[ -f "$s" ] || continue
		make_crash_image "$s" "$TMP/scn.img" > "$TMP/scn.out" 2>&1 || {
			cat "$TMP/scn.out"; fail "crash image of j-lang$n"; }
		check_crash "$TMP/scn.img" "kernel crash image: CrashMonkey j-lang$n" debian-mkfs
	done
else
	no_skip && fail "corpus not found at $CORPUS"
	echo "note: no CrashMonkey corpus at $CORPUS"
fi

echo "$nimg checks of images; the newer btrfs check reported only the stale free space items" \
	"of Debian's mkfs on $stale_seen, and tlogctl check warned about them there"
if [ ${#problems[@]} -gt 0 ]; then
	printf '  %s\n' "${problems[@]}"
	fail "${#problems[@]} image(s) not clean"
fi
exit 0
