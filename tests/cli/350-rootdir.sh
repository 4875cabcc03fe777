#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tlogctl mkfs --rootdir without a mount (also runs under the sanitizers):
#  - reproducible: with SOURCE_DATE_EPOCH and -U, two runs over two trees
#    generated with the same seed (tests/tools/gentree.py) give the same
#    bytes (cmp), and so do two runs over one tar archive (as a file and
#    on standard input), also with each --compress (compression runs in a
#    worker); another -U gives another image;
#  - the image holds the source, as tlogctl's own readers see it: names
#    (ls), type, mode, owner, size, link count, device numbers and clamped
#    times (stat), contents (cat) of files of every kind;
#  - errors: a missing source, a source that is neither a directory nor an
#    archive, an archive with a 256-byte name or a ".." path, a tree too big
#    for the target, bad --subvol/--compress/--inode-flags/--owner values
#    and two default subvolumes each give one "tlogctl: ERROR:" line and
#    exit 1, and the target is left without a btrfs superblock.
. "$(dirname "$0")/../common.sh"
need_cmd python3 tar sha256sum

GENTREE="$TOP/tests/tools/gentree.py"
"$TLOGCTL" mkfs --help > "$TMP/help" 2>&1
grep -q -- '--rootdir' "$TMP/help" || fail "tlogctl mkfs has no --rootdir"

EPOCH=1600000000
UUID1=5e1d0c4a-6b1f-4d5e-9a3c-2f7e8d9c0b1a
UUID2=0c0ffee0-1234-4321-8765-0123456789ab

# The same seed twice, into two trees: the times gentree does not set
# (ctime, birth time) differ between them, but SOURCE_DATE_EPOCH clamps
# them.  Readable (what a non-root user can read and archive), and small
# bulk.
for t in a b; do
	python3 "$GENTREE" --seed 3 --files 300 --readable --no-socket "$TMP/tree-$t" \
		> "$TMP/gen-$t.out" 2> "$TMP/gen-$t.err" || { cat "$TMP/gen-$t.err"; fail "gentree"; }
done
cat "$TMP/gen-a.err"

# mk IMG OPTIONS...: a reproducible mkfs that must succeed
mk() {
	local target="$1"
	shift
	rm -f "$target"
	run_nocrash "$TMP/mk" env SOURCE_DATE_EPOCH=$EPOCH "$TLOGCTL" mkfs -q "$@" "$target" ||
		fail "mkfs $* crashed"
	[ "$(cat "$TMP/mk.rc")" = 0 ] || { cat "$TMP/mk.err"; fail "mkfs $* exit $(cat "$TMP/mk.rc")"; }
}

# sum IMG: the data/hole map and the sha256 of the data: equal for two
# files exactly when they hold the same bytes laid out the same way (a
# sha256sum would read the gigabyte of holes, seconds per image)
sum() {
	python3 - "$1" <<'PY'
import hashlib, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
h = hashlib.sha256()
pos = 0
while pos < size:
    try:
        d = os.lseek(fd, pos, os.SEEK_DATA)
    except OSError:
        break
    e = os.lseek(fd, d, os.SEEK_HOLE)
    h.update(f"{d}-{e}:".encode())
    while d < e:
        b = os.pread(fd, min(e - d, 1 << 22), d)
        h.update(b)
        d += len(b)
    pos = e
print(size, h.hexdigest())
PY
}

# What the offline check below compares: lstat of every entry of a few
# directories, taken now, before mkfs reads the tree (a read may change
# the atime of a file where the source is mounted relatime; the image must
# hold the atime from before the read).  Listing a directory may change its
# atime: the same is done to tree-b, so that the two stay the same.
python3 - "$TMP/tree-a" "$TMP/tree-b" > "$TMP/lstat.json" <<'PY' || fail "lstat snapshot"
import json, os, sys
for other in sys.argv[2:]:
    for d in ["sizes", "sparse", "links", "links/a", "links/b/c", "special", "symlinks", "modes",
              "owners", "times", "names", "acl/dir-default"]:
        os.listdir(os.path.join(other, d))
src = sys.argv[1]
paths = [""]
for d in ["sizes", "sparse", "links", "links/a", "links/b/c", "special", "symlinks", "modes",
          "owners", "times", "names", "acl/dir-default"]:
    paths.append(d)
    paths += [os.path.join(d, e) for e in sorted(os.listdir(os.path.join(src, d)))]
out = []
for p in paths:
    s = os.lstat(os.path.join(src, p))
    out.append({"path": p, "mode": s.st_mode, "uid": s.st_uid, "gid": s.st_gid,
                "nlink": s.st_nlink, "size": s.st_size, "rdev": s.st_rdev,
                "atime": s.st_atime_ns, "mtime": s.st_mtime_ns, "ctime": s.st_ctime_ns})
json.dump(out, sys.stdout)
PY

# ---- reproducibility ----
mk "$TMP/a.img" -U $UUID1 -r "$TMP/tree-a"
mk "$TMP/b.img" -U $UUID1 -r "$TMP/tree-b"
cmp "$TMP/a.img" "$TMP/b.img" > "$TMP/cmp.out" 2>&1 ||
	fail "two runs with SOURCE_DATE_EPOCH and -U over the same tree differ ($(head -1 "$TMP/cmp.out"))"
[ "$(sum "$TMP/a.img")" = "$(sum "$TMP/b.img")" ] ||
	fail "two runs with SOURCE_DATE_EPOCH and -U over the same tree: other holes"
mk "$TMP/c.img" -U $UUID2 -r "$TMP/tree-a"
[ "$(sum "$TMP/a.img")" != "$(sum "$TMP/c.img")" ] || fail "another -U gives the same image"
echo "directory: identical images over two trees of one seed; another -U differs"

tar -C "$TMP/tree-a" --format=posix --xattrs --xattrs-include='*' --acls -S \
	-cf "$TMP/tree.tar" . 2> "$TMP/tar.err" || { cat "$TMP/tar.err"; fail "tar"; }
mk "$TMP/t1.img" -U $UUID1 -r "$TMP/tree.tar"
mk "$TMP/t2.img" -U $UUID1 -r "$TMP/tree.tar"
[ "$(sum "$TMP/t1.img")" = "$(sum "$TMP/t2.img")" ] ||
	fail "two runs over one tar archive differ ($(cmp "$TMP/t1.img" "$TMP/t2.img" | head -1))"
# compression runs in a worker: its order must not show in the image
for c in zstd:3 lzo zlib; do
	mk "$TMP/c1.img" -U $UUID1 --compress $c -r "$TMP/tree.tar"
	mk "$TMP/c2.img" -U $UUID1 --compress $c -r "$TMP/tree.tar"
	[ "$(sum "$TMP/c1.img")" = "$(sum "$TMP/c2.img")" ] ||
		fail "--compress $c: two runs over one tar archive differ" \
			"($(cmp "$TMP/c1.img" "$TMP/c2.img" | head -1))"
done
rm -f "$TMP/t2.img" "$TMP/c1.img" "$TMP/c2.img"
gzip -c "$TMP/tree.tar" > "$TMP/tree.tar.gz"
run_nocrash "$TMP/mk" env SOURCE_DATE_EPOCH=$EPOCH "$TLOGCTL" mkfs -q -U $UUID1 -r - "$TMP/t2.img" \
	< "$TMP/tree.tar.gz" || fail "mkfs -r - crashed"
[ "$(cat "$TMP/mk.rc")" = 0 ] || { cat "$TMP/mk.err"; fail "mkfs -r - < tree.tar.gz"; }
[ "$(sum "$TMP/t1.img")" = "$(sum "$TMP/t2.img")" ] ||
	fail "the archive on standard input (gzip) gives another image than the file"
echo "archive: identical images from a file and from standard input"

# ---- the content, as tlogctl reads it ----
tl check "$TMP/a.img" > "$TMP/check.out" 2>&1 || { head -20 "$TMP/check.out"; fail "tlogctl check"; }
# names of the top directory and of a few below
for d in / /links /links/b/c /sizes /special /xattrs; do
	tl ls "$TMP/a.img" "$d" > "$TMP/ls.img" || fail "ls $d"
	(cd "$TMP/tree-a$d" && ls -A | LC_ALL=C sort) > "$TMP/ls.src"
	same_file "$TMP/ls.src" "$TMP/ls.img" || fail "ls $d: other names than the source's"
done
# stat and cat of every entry of a few directories, against lstat and the bytes
python3 - "$TLOGCTL" "$TMP/a.img" "$TMP/tree-a" $EPOCH "$TMP/lstat.json" \
	> "$TMP/offline.out" 2>&1 <<'PY' ||
import json, os, stat, subprocess, sys
tlogctl, img, src, epoch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
bad = n = 0
def clamp(sec, nsec):
    return (epoch, 0) if sec > epoch or (sec == epoch and nsec > 0) else (sec, nsec)
class St:
    def __init__(self, d):
        for k, v in d.items():
            setattr(self, "st_" + k, v)
for s in map(St, json.load(open(sys.argv[5]))):
    p = s.st_path
    full = os.path.join(src, p)
    r = subprocess.run([tlogctl, "stat", "--format", "json", img, "/" + p], capture_output=True)
    if r.returncode:
        print(f"{p}: tlogctl stat exit {r.returncode}: {r.stderr.decode(errors='replace')}")
        bad += 1
        continue
    j = json.loads(r.stdout)
    n += 1
    want = {"mode": s.st_mode, "uid": s.st_uid, "gid": s.st_gid}
    if not stat.S_ISDIR(s.st_mode):
        want["nlink"] = s.st_nlink
        want["size"] = s.st_size
    if stat.S_ISCHR(s.st_mode) or stat.S_ISBLK(s.st_mode):
        want["rdev_major"], want["rdev_minor"] = os.major(s.st_rdev), os.minor(s.st_rdev)
    # a directory's atime is taken as it is read; where the source is
    # mounted relatime, listing it may have changed it
    # a symlink's atime moves when it is read: a reproducible build (this
    # one has SOURCE_DATE_EPOCH) stores its mtime in its place
    for t in ["mtime", "ctime"] + ([] if stat.S_ISDIR(s.st_mode) else ["atime"]):
        ns = getattr(s, "st_mtime" if t == "atime" and stat.S_ISLNK(s.st_mode) else f"st_{t}")
        want[t] = dict(zip(["sec", "nsec"], clamp(ns // 10**9, ns % 10**9)))
    for k, v in want.items():
        if j.get(k) != v:
            print(f"{p}: {k}: source {v}, image {j.get(k)}")
            bad += 1
    if stat.S_ISREG(s.st_mode) and s.st_size <= 64 << 20:    # not the 16 GiB sparse file
        r = subprocess.run([tlogctl, "cat", img, "/" + p], capture_output=True)
        with open(full, "rb") as f:
            if r.returncode or r.stdout != f.read():
                print(f"{p}: tlogctl cat: other bytes than the source's (exit {r.returncode})")
                bad += 1
    elif stat.S_ISLNK(s.st_mode):
        r = subprocess.run([tlogctl, "ls", "-l", img, "/" + p], capture_output=True)
        if os.fsencode(os.readlink(full)) not in r.stdout:
            print(f"{p}: the symlink target is not shown by tlogctl ls -l")
            bad += 1
print(f"{n} entries stat'ed, {bad} differences")
sys.exit(1 if bad or n < 150 else 0)
PY
	{ head -40 "$TMP/offline.out"; fail "the image read by tlogctl differs from the source"; }
tail -1 "$TMP/offline.out"

# ---- errors ----
# no_fs WHAT IMG: no btrfs superblock on IMG (the file may be absent)
no_fs() {
	[ -e "$2" ] || return 0
	run_nocrash "$TMP/ds" "$TLOGCTL" dump-super "$2" || fail "$1: dump-super crashed"
	[ "$(cat "$TMP/ds.rc")" != 0 ] || fail "$1: the failed mkfs left a filesystem"
	[ "$(dd if="$2" bs=1 skip=65600 count=8 2> /dev/null | tr -d "\\0")" != "_BHRfS_M" ] ||
		fail "$1: the failed mkfs left a superblock magic"
}

# refused WHAT TEXT OPTIONS...: mkfs OPTIONS on a new target fails with one error mentioning TEXT
refused() {
	local what="$1" text="$2" target="$TMP/err.img"
	shift 2
	rm -f "$target"
	expect_error "$text" "$TLOGCTL" mkfs -q "$@" "$target"
	no_fs "$what" "$target"
}

refused "missing source" "nonexistent" -r "$TMP/nonexistent"
head -c 100000 /dev/urandom > "$TMP/junk"
refused "a file that is no archive" "junk\|rchive\|format" -r "$TMP/junk"

python3 - "$TMP" <<'PY' || fail "python tarfile"
import io, sys, tarfile
def archive(name, members):
    with tarfile.open(f"{sys.argv[1]}/{name}", "w", format=tarfile.PAX_FORMAT) as t:
        for path in members:
            i = tarfile.TarInfo(path)
            i.size = 5
            t.addfile(i, io.BytesIO(b"hello"))
archive("longname.tar", ["ok", "d/" + "n" * 256])
archive("dotdot.tar", ["ok", "d/../../escape"])
archive("dotdot2.tar", ["../escape"])
PY
refused "a 256-byte name" "ame\|255\|256\|long" -r "$TMP/longname.tar"
refused "a .. path" "\.\." -r "$TMP/dotdot.tar"
refused "a leading .. path" "\.\." -r "$TMP/dotdot2.tar"

mkdir "$TMP/300m"
head -c 300M /dev/urandom > "$TMP/300m/data"
NOSPACE="space\|small\|fit\|ENOSPC\|too big\|too large"
refused "300 MiB into 200 MiB" "$NOSPACE" -b 200M -r "$TMP/300m"
# (an existing file without -b is grown to fit, as mkfs.btrfs 6.19 does)
rm -rf "$TMP/300m"

refused "--subvol bad:x" "bad" -r "$TMP/tree-a" --subvol bad:sizes
refused "--subvol rw:not-there" "not-there" -r "$TMP/tree-a" --subvol rw:not-there
refused "two default subvolumes" "default" -r "$TMP/tree-a" -u default:sizes -u default:links
refused "--compress foo" "foo" -r "$TMP/tree-a" --compress foo
refused "--compress zstd:99" "99\|level" -r "$TMP/tree-a" --compress zstd:99
refused "--inode-flags foo:x" "foo" -r "$TMP/tree-a" --inode-flags foo:sizes
refused "--owner x" "owner\|x" -r "$TMP/tree-a" --owner x
refused "--subvol without --rootdir" "rootdir\|-r" --subvol rw:x
echo "errors: each one clear line, no filesystem left"
exit 0
