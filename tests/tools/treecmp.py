#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Record what a mounted btrfs tree looks like, and compare two records.

usage: treecmp.py walk [--fiemap] MNT OUT.json [--diff [--labels A,B] REF.json]
       treecmp.py diff [--labels A,B] A.json B.json
       treecmp.py files [--limit N] A.json [B.json ...]
       treecmp.py inodes TLOGCTL IMG OUT.json
       treecmp.py inodes-diff [--labels A,B] --replay-time CRASH A0 A1 B0 B1 A.json B.json

walk: for every path under MNT (the mount point itself is "/"): inode
number, type, mode, uid, gid, size, nlink, st_blocks, inode flags (files and
directories, as lsattr shows them), sha256 of the content
(a read error is recorded as such), the data/hole map from SEEK_DATA and
SEEK_HOLE, the symlink target, the xattrs (sorted, values in hex), for
directories the names in readdir order (btrfs: directory index order), and
whether the directory is a subvolume root, for device nodes the device
number.  With --fiemap, also the FIEMAP extents of every regular file
(FIEMAP_FLAG_SYNC; logical offset, length and flags of each, the physical
address left out).  Timestamps are not recorded.  FIEMAP merges extents
that lie side by side on disk, so where two answers differ only in how
logically adjacent extents of equal flags are merged, the difference is
one of physical placement: it is printed as a note, not counted.

diff (or walk --diff, REF being A and the walk B): prints every path only on one side and every differing field, and
exits 1 when there is any difference.

files: the regular files of the given records, sorted, the first N
(default 50) of their union, one per line.

inodes: every inode item of every subvolume tree of the unmounted image
IMG, all fields (what a mount does not show: sequence, transid,
generation, exact timestamps; orphans too), read with tlogctl dump-tree.

inodes-diff: compares two such records of two replays of the same crash
image, A and B, which ran at different times: CRASH is when the crash
image was copied (ns since the epoch; every time it holds is older), A0-A1
and B0-B1 the wall-clock windows of the two replays.  A timestamp later
than CRASH was set by the replay ("replay time": it must lie in its own
replay's window, give or take SLACK_NS for coarse kernel clocks); where
one side has replay time the other must have it too, any other timestamp
must be equal, and so must every other field.  Exits 1 on a difference.
"""
import fcntl
import hashlib
import json
import os
import stat
import subprocess
import sys


def data_map(fd, size):
    out = []
    pos = 0
    while pos < size:
        try:
            d = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: no data after pos
            break
        h = os.lseek(fd, d, os.SEEK_HOLE)
        out.append([d, h])
        pos = h
    return out


def content(path, size):
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as e:
        return "open error: %s" % os.strerror(e.errno), None
    try:
        m = data_map(fd, size)
        os.lseek(fd, 0, os.SEEK_SET)
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            h.update(b)
    except OSError as e:
        return "read error: %s" % os.strerror(e.errno), None
    finally:
        os.close(fd)
    return h.hexdigest(), m


FS_IOC_GETFLAGS = 0x80086601
FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 1
FIEMAP_EXTENT_LAST = 1
FIEMAP_BATCH = 256


def fiemap(path):
    """[[logical, length, flags], ...] of the whole file (no physical address)"""
    import struct
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as e:
        return "open error: %s" % os.strerror(e.errno)
    out = []
    start = 0
    try:
        while True:
            req = bytearray(struct.pack("QQIIII", start, (1 << 64) - 1 - start, FIEMAP_FLAG_SYNC,
                                        0, FIEMAP_BATCH, 0) + bytes(56 * FIEMAP_BATCH))
            fcntl.ioctl(fd, FS_IOC_FIEMAP, req, True)
            n = struct.unpack_from("I", req, 20)[0]
            if n == 0:
                break
            last = False
            for i in range(n):
                lo, _, ln, _, _, fl = struct.unpack_from("QQQQQI", req, 32 + 56 * i)
                out.append([lo, ln, "0x%x" % fl])
                last = fl & FIEMAP_EXTENT_LAST
                start = lo + ln
            if last or n < FIEMAP_BATCH:
                break
    except OSError as e:
        return "fiemap error: %s" % os.strerror(e.errno)
    finally:
        os.close(fd)
    return out



def inode_flags(path):
    """chattr flags (FS_IOC_GETFLAGS: C nocow, c compress, ...)"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        return "open error: %s" % os.strerror(e.errno)
    try:
        buf = fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))
        return "0x%x" % int.from_bytes(buf[:4], "little")
    except OSError as e:
        return "error: %s" % os.strerror(e.errno)
    finally:
        os.close(fd)


def xattrs(path):
    out = {}
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError as e:
        return {"<listxattr error>": os.strerror(e.errno)}
    for n in sorted(names):
        try:
            out[n] = os.getxattr(path, n, follow_symlinks=False).hex()
        except OSError as e:
            out[n] = "<error: %s>" % os.strerror(e.errno)
    return out


TYPES = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink",
         stat.S_IFCHR: "chardev", stat.S_IFBLK: "blockdev", stat.S_IFIFO: "fifo",
         stat.S_IFSOCK: "socket"}


def walk(mnt, with_fiemap=False):
    rec = {}

    def visit(path, rel, parent_dev):
        st = os.lstat(path)
        e = {
            "ino": st.st_ino,
            "type": TYPES.get(stat.S_IFMT(st.st_mode), "unknown"),
            "mode": "%04o" % stat.S_IMODE(st.st_mode),
            "uid": st.st_uid,
            "gid": st.st_gid,
            "size": st.st_size,
            "nlink": st.st_nlink,
            "blocks": st.st_blocks,
        }
        x = xattrs(path)
        if x:
            e["xattrs"] = x
        rec[rel] = e
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            e["flags"] = inode_flags(path)
        if stat.S_ISREG(st.st_mode):
            e["sha256"], m = content(path, st.st_size)
            if m is not None:
                e["map"] = m
            if with_fiemap:
                e["fiemap"] = fiemap(path)
        elif stat.S_ISLNK(st.st_mode):
            e["target"] = os.readlink(path)
        elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            e["rdev"] = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
        elif stat.S_ISDIR(st.st_mode):
            if parent_dev is not None and st.st_dev != parent_dev:
                e["subvol_root"] = True
            with os.scandir(path) as it:
                names = [d.name for d in it]
            e["entries"] = names
            for n in sorted(names):
                visit(os.path.join(path, n), (rel.rstrip("/") + "/" + n), st.st_dev)

    visit(mnt, "/", None)
    return rec


def show(v):
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= 300 else s[:300] + "... (%d chars)" % len(s)


def coalesced(ext):
    """FIEMAP extents with logically adjacent ones of equal flags merged"""
    out = []
    for lo, ln, fl in ext:
        base = int(fl, 16) & ~FIEMAP_EXTENT_LAST
        if out and out[-1][0] + out[-1][1] == lo and out[-1][2] == base:
            out[-1][1] += ln
        else:
            out.append([lo, ln, base])
    return out


def placement_only(va, vb):
    """Whether two FIEMAP answers differ only where FIEMAP merged extents
    that lay side by side on disk: a matter of where the allocator put
    them, which the comparison leaves out with the physical addresses"""
    return (isinstance(va, list) and isinstance(vb, list) and va != vb and
            coalesced(va) == coalesced(vb))


PLACEMENT_NOTES = []


def diff(a, b, la, lb):
    bad = 0
    for p in sorted(set(a) | set(b)):
        if p not in b:
            print("only in %s: %s %s" % (la, p, show(a[p])))
            bad += 1
            continue
        if p not in a:
            print("only in %s: %s %s" % (lb, p, show(b[p])))
            bad += 1
            continue
        ea, eb = a[p], b[p]
        for k in sorted(set(ea) | set(eb)):
            va, vb = ea.get(k), eb.get(k)
            if k == "fiemap" and placement_only(va, vb):
                PLACEMENT_NOTES.append("%s: FIEMAP extents merged differently (placement): %s %s, %s %s"
                                       % (p, la, show(va), lb, show(vb)))
                continue
            if va != vb:
                bad += 1
                print("%s: %s differs" % (p, k))
                if k == "xattrs" and isinstance(va, dict) and isinstance(vb, dict):
                    for n in sorted(set(va or {}) | set(vb or {})):
                        if va.get(n) != vb.get(n):
                            print("    %s %-8s %s" % (n, la + ":", va.get(n, "(none)")))
                            print("    %s %-8s %s" % (n, lb + ":", vb.get(n, "(none)")))
                    continue
                print("    %-8s %s" % (la + ":", show(va) if va is not None else "(none)"))
                print("    %-8s %s" % (lb + ":", show(vb) if vb is not None else "(none)"))
    return bad


LAST_FREE_OBJECTID = (1 << 64) - 256
TIMES = ("atime", "ctime", "mtime", "otime")
SLACK_NS = 200 * 1000 * 1000


def inode_items(tlogctl, img):
    """{"SUBVOL:INO": inode item fields} of every subvolume tree of img"""
    p = subprocess.run([tlogctl, "dump-tree", "--format", "json", img],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit("tlogctl dump-tree %s failed: %s" % (img, p.stderr.decode(errors="replace")))
    rec = {}
    for t in json.loads(p.stdout)["trees"]:
        tree = t["objectid"]
        if tree != 5 and not 256 <= tree < LAST_FREE_OBJECTID:
            continue
        for b in t["blocks"]:
            for it in b.get("items", []):
                if it["key"]["type"] == 1:  # INODE_ITEM
                    rec["%d:%d" % (tree, it["key"]["objectid"])] = it["data"]
    return rec


def ns(ts):
    return ts["sec"] * 1000000000 + ts["nsec"]


def show_time(t, crash):
    if t > crash:
        return "%d.%09d (replay time, %.3f s after the crash copy)" % (
            t // 1000000000, t % 1000000000, (t - crash) / 1e9)
    return "%d.%09d (from the crash image)" % (t // 1000000000, t % 1000000000)


def time_problem(t, crash, start, end):
    """why t cannot be what a replay between start and end left, or None"""
    if t > crash and not start - SLACK_NS <= t <= end + SLACK_NS:
        return "later than the crash copy but outside its replay (%.3f s to %.3f s after it)" % (
            (start - crash) / 1e9, (end - crash) / 1e9)
    return None


def inodes_diff(a, b, la, lb, crash, wa, wb):
    bad = 0
    for k in sorted(set(a) | set(b), key=lambda k: tuple(int(x) for x in k.split(":"))):
        if k not in b or k not in a:
            print("inode %s only in %s" % (k, la if k in a else lb))
            bad += 1
            continue
        ea, eb = a[k], b[k]
        for f in sorted(set(ea) | set(eb)):
            va, vb = ea.get(f), eb.get(f)
            if f in TIMES and va is not None and vb is not None:
                ta, tb = ns(va), ns(vb)
                why = [(l, p) for l, p in ((la, time_problem(ta, crash, *wa)),
                                           (lb, time_problem(tb, crash, *wb))) if p]
                same = (ta > crash and tb > crash) or ta == tb
                if same and not why:
                    continue
                bad += 1
                print("inode %s (mode %o): %s differs" % (k, ea.get("mode", 0), f))
                print("    %-8s %s" % (la + ":", show_time(ta, crash)))
                print("    %-8s %s" % (lb + ":", show_time(tb, crash)))
                for l, p in why:
                    print("    %s's time is %s" % (l, p))
                continue
            if va != vb:
                bad += 1
                print("inode %s (mode %o): %s differs" % (k, ea.get("mode", 0), f))
                print("    %-8s %s" % (la + ":", show(va) if va is not None else "(none)"))
                print("    %-8s %s" % (lb + ":", show(vb) if vb is not None else "(none)"))
    return bad


def main():
    argv = sys.argv[1:]
    if not argv:
        sys.exit(__doc__)
    cmd = argv.pop(0)
    with_fiemap = cmd == "walk" and argv[:1] == ["--fiemap"]
    if with_fiemap:
        argv.pop(0)
    if cmd == "walk" and len(argv) in (2, 5, 6) and (len(argv) == 2 or argv[2] == "--diff"):
        rec = walk(argv[0], with_fiemap)
        with open(argv[1], "w") as fh:
            json.dump(rec, fh, sort_keys=True, indent=0)
        if len(argv) == 2:
            return 0
        # walk MNT OUT --diff [--labels A,B] REF.json: compare REF with this walk
        la, lb = "A", "B"
        rest = argv[3:]
        if rest[0] == "--labels":
            la, lb = rest[1].split(",", 1)
            rest = rest[2:]
        if len(rest) != 1:
            sys.exit(__doc__)
        n = diff(json.load(open(rest[0])), rec, la, lb)
        for note in PLACEMENT_NOTES:
            print("note: " + note)
        if n:
            print("%d difference(s) between %s and %s" % (n, la, lb))
        return 1 if n else 0
    if cmd == "diff":
        la, lb = "A", "B"
        if argv and argv[0] == "--labels":
            la, lb = argv[1].split(",", 1)
            argv = argv[2:]
        if len(argv) != 2:
            sys.exit(__doc__)
        a, b = (json.load(open(f)) for f in argv)
        n = diff(a, b, la, lb)
        for note in PLACEMENT_NOTES:
            print("note: " + note)
        if n:
            print("%d difference(s) between %s and %s" % (n, la, lb))
        return 1 if n else 0
    if cmd == "files":
        limit = 50
        if argv and argv[0] == "--limit":
            limit = int(argv[1])
            argv = argv[2:]
        paths = set()
        for f in argv:
            paths |= {p for p, e in json.load(open(f)).items() if e["type"] == "file"}
        for p in sorted(paths)[:limit]:
            print(p)
        return 0
    if cmd == "inodes" and len(argv) == 3:
        with open(argv[2], "w") as fh:
            json.dump(inode_items(argv[0], argv[1]), fh, sort_keys=True, indent=0)
        return 0
    if cmd == "inodes-diff":
        la, lb = "A", "B"
        if argv and argv[0] == "--labels":
            la, lb = argv[1].split(",", 1)
            argv = argv[2:]
        if len(argv) != 8 or argv[0] != "--replay-time":
            sys.exit(__doc__)
        crash, a0, a1, b0, b1 = (int(x) for x in argv[1:6])
        a, b = (json.load(open(f)) for f in argv[6:8])
        n = inodes_diff(a, b, la, lb, crash, (a0, a1), (b0, b1))
        if n:
            print("%d inode item difference(s) between %s and %s" % (n, la, lb))
        return 1 if n else 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
