#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Compare a source tree with its copy (a mounted image made by mkfs --rootdir).

usage: cmptree.py [--no-ctime] [--no-atime] [--ignore-btime] [--owner U:G]
                  [--clamp EPOCH] [--no-dir-size] [--skip-xattr PREFIX]...
                  [--max-print N] SRC MNT

Every entry under SRC (relative paths, SRC itself included as ".") must be
in MNT and the other way round, with equal:
  type, mode (with setuid, setgid, sticky), uid and gid (--owner: every
  entry has U:G instead), size (of directories too, unless --no-dir-size or
  SRC is not on btrfs: the size of a btrfs directory is its names), link
  count (of non-directories: a btrfs directory always has one), the
  content (sha256 of what lies in the data of either; holes read as
  zeros, so they are not read), the data/hole map of regular files as the set of 4 KiB
  blocks SEEK_DATA/SEEK_HOLE call data (btrfs maps whole blocks), symlink
  targets, device numbers, every xattr (name and value, listxattr and
  getxattr without following symlinks; --skip-xattr leaves out names
  starting with PREFIX), and the times in nanoseconds: atime, mtime, ctime
  and the birth time (statx) unless --no-atime, --no-ctime or
  --ignore-btime.  With --clamp EPOCH a time of MNT must be min(SRC's, EPOCH).
Hard-link identity: the names that share an inode in SRC share one in MNT,
and no other name shares it (compared both ways).

Prints each difference as "PATH: what: SRC-value != MNT-value" (at most
--max-print lines, default 1000, then how many more), and at the end
"cmptree: N entries compared (...by type...), D differences".  Exits 1 when
there is a difference, 2 on bad usage.
"""
import argparse
import ctypes
import ctypes.util
import hashlib
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from treecmp import data_map  # noqa: E402  the one SEEK_DATA/SEEK_HOLE walk

BLOCK = 4096
STATX_BTIME = 0x800
AT_SYMLINK_NOFOLLOW = 0x100
AT_FDCWD = -100

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def btime_ns(path):
    """The birth time in ns from statx(2), or None when the filesystem has none."""
    buf = ctypes.create_string_buffer(256)
    if _libc.statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, buf) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    mask = int.from_bytes(buf.raw[0:4], "little")
    if not mask & STATX_BTIME:
        return None
    sec = int.from_bytes(buf.raw[80:88], "little", signed=True)
    nsec = int.from_bytes(buf.raw[88:92], "little")
    return sec * 10**9 + nsec


def is_btrfs(path):
    out = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True)
    return out.stdout.strip() == "btrfs"


def walk(top):
    """Every path under top, relative, as bytes; top itself is b"."."""
    out = [b"."]
    stack = [b""]
    while stack:
        rel = stack.pop()
        full = os.path.join(top, rel) if rel else top
        for e in sorted(os.scandir(full), key=lambda e: e.name):
            r = os.path.join(rel, e.name) if rel else e.name
            out.append(r)
            if e.is_dir(follow_symlinks=False):
                stack.append(r)
    return out


def block_map(path, size):
    """The 4 KiB blocks SEEK_DATA/SEEK_HOLE call data, as merged ranges."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        # ranges, not every block: a 16 GiB file has few pieces
        pieces = [(d // BLOCK, (h + BLOCK - 1) // BLOCK) for d, h in data_map(fd, size)]
    finally:
        os.close(fd)
    return [tuple(m) for m in union(pieces, [])]


def union(a, b):
    merged = []
    for x, y in sorted(a + b):
        if merged and x <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], y)
        else:
            merged.append([x, y])
    return merged


def digest(path, ranges, size):
    """sha256 of the bytes of @ranges (block ranges) of the file: outside
    the data of both files every byte reads as zero, so comparing these
    compares the whole content without reading 16 GiB of holes."""
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        for a, b in ranges:
            pos, end = a * BLOCK, min(b * BLOCK, size)
            while pos < end:
                buf = os.pread(f.fileno(), min(1 << 20, end - pos), pos)
                if not buf:
                    h.update(b"short read")
                    break
                h.update(buf)
                pos += len(buf)
    return h.hexdigest()


def xattrs(path, skip):
    out = {}
    for name in os.listxattr(path, follow_symlinks=False):
        if any(name.startswith(p) for p in skip):
            continue
        out[name] = os.getxattr(path, name, follow_symlinks=False)
    return out


def show(v):
    if isinstance(v, bytes):
        return repr(v) if len(v) <= 80 else f"{len(v)} bytes sha256 {hashlib.sha256(v).hexdigest()[:16]}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {show(x)}" for k, x in sorted(v.items())) + "}"
    if isinstance(v, list) and len(v) > 8:
        return f"{v[:8]}... ({len(v)} ranges)"
    return str(v)


class Compare:
    def __init__(self, args):
        self.a = args
        self.src = os.fsencode(args.src)
        self.mnt = os.fsencode(args.mnt)
        self.ndiff = 0
        self.clamp = None if args.clamp is None else args.clamp * 10**9
        if args.owner:
            u, g = args.owner.split(":")
            self.owner = (int(u), int(g))
        else:
            self.owner = None
        self.dir_size = not args.no_dir_size and is_btrfs(args.src)

    def diff(self, rel, what, a, b):
        self.ndiff += 1
        if self.ndiff <= self.a.max_print:
            print(f"{rel.decode(errors='backslashreplace')}: {what}: {show(a)} != {show(b)}")

    def expect_time(self, t):
        return t if self.clamp is None else min(t, self.clamp)

    def entry(self, rel, s, m, ps, pm):
        d = self.diff
        if stat.S_IFMT(s.st_mode) != stat.S_IFMT(m.st_mode):
            d(rel, "type", oct(stat.S_IFMT(s.st_mode)), oct(stat.S_IFMT(m.st_mode)))
            return
        if stat.S_IMODE(s.st_mode) != stat.S_IMODE(m.st_mode):
            d(rel, "mode", oct(stat.S_IMODE(s.st_mode)), oct(stat.S_IMODE(m.st_mode)))
        want = self.owner or (s.st_uid, s.st_gid)
        if want != (m.st_uid, m.st_gid):
            d(rel, "owner", f"{want[0]}:{want[1]}", f"{m.st_uid}:{m.st_gid}")
        isdir = stat.S_ISDIR(s.st_mode)
        if (not isdir or self.dir_size) and s.st_size != m.st_size:
            d(rel, "size", s.st_size, m.st_size)
        if not isdir and s.st_nlink != m.st_nlink:
            d(rel, "nlink", s.st_nlink, m.st_nlink)
        if stat.S_ISREG(s.st_mode):
            bs, bm = block_map(ps, s.st_size), block_map(pm, m.st_size)
            if bs != bm:
                d(rel, "data blocks [first, end)", bs, bm)
            both = union(bs, bm)
            hs, hm = digest(ps, both, s.st_size), digest(pm, both, m.st_size)
            if hs != hm:
                d(rel, "content", hs, hm)
        elif stat.S_ISLNK(s.st_mode):
            ts, tm = os.readlink(ps), os.readlink(pm)
            if ts != tm:
                d(rel, "symlink target", ts, tm)
        elif stat.S_ISCHR(s.st_mode) or stat.S_ISBLK(s.st_mode):
            if s.st_rdev != m.st_rdev:
                d(rel, "rdev", f"{os.major(s.st_rdev)}:{os.minor(s.st_rdev)}",
                  f"{os.major(m.st_rdev)}:{os.minor(m.st_rdev)}")
        xs, xm = xattrs(ps, self.a.skip_xattr), xattrs(pm, self.a.skip_xattr)
        if xs != xm:
            for k in sorted(set(xs) | set(xm)):
                if xs.get(k) != xm.get(k):
                    d(rel, f"xattr {k}", xs.get(k, "(none)"), xm.get(k, "(none)"))
        times = [("mtime", s.st_mtime_ns, m.st_mtime_ns)]
        if not self.a.no_atime:
            times.append(("atime", s.st_atime_ns, m.st_atime_ns))
        if not self.a.no_ctime:
            times.append(("ctime", s.st_ctime_ns, m.st_ctime_ns))
        if not self.a.ignore_btime:
            bs, bm = btime_ns(ps), btime_ns(pm)
            if bs is not None:
                times.append(("btime", bs, bm))
        for what, ts, tm in times:
            if self.expect_time(ts) != tm:
                d(rel, what, self.expect_time(ts), tm)

    def run(self):
        ls, lm = walk(self.src), walk(self.mnt)
        ss, sm = set(ls), set(lm)
        for rel in ls:
            if rel not in sm:
                self.diff(rel, "only in SRC", "present", "missing")
        for rel in lm:
            if rel not in ss:
                self.diff(rel, "only in MNT", "missing", "present")
        counts = {}
        group_s, group_m = {}, {}   # (dev, ino) -> names, non-directories
        where_s, where_m = {}, {}
        n = 0
        for rel in ls:
            if rel not in sm:
                continue
            ps = self.src if rel == b"." else os.path.join(self.src, rel)
            pm = self.mnt if rel == b"." else os.path.join(self.mnt, rel)
            s, m = os.lstat(ps), os.lstat(pm)
            n += 1
            kind = {stat.S_IFREG: "files", stat.S_IFDIR: "dirs", stat.S_IFLNK: "symlinks",
                    stat.S_IFIFO: "fifos", stat.S_IFSOCK: "sockets", stat.S_IFCHR: "chr",
                    stat.S_IFBLK: "blk"}.get(stat.S_IFMT(s.st_mode), "other")
            counts[kind] = counts.get(kind, 0) + 1
            self.entry(rel, s, m, ps, pm)
            if not stat.S_ISDIR(s.st_mode):
                where_s[rel] = (s.st_dev, s.st_ino)
                group_s.setdefault(where_s[rel], []).append(rel)
            if not stat.S_ISDIR(m.st_mode):
                where_m[rel] = (m.st_dev, m.st_ino)
                group_m.setdefault(where_m[rel], []).append(rel)
        nlinked = 0
        for rel in where_s:
            if rel not in where_m:
                continue
            gs = sorted(group_s[where_s[rel]])
            gm = sorted(group_m[where_m[rel]])
            if len(gs) > 1:
                nlinked += 1
            if gs != gm:
                self.diff(rel, "names of the inode", b", ".join(gs), b", ".join(gm))
        if self.ndiff > self.a.max_print:
            print(f"... and {self.ndiff - self.a.max_print} more differences")
        kinds = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        print(f"cmptree: {n} entries compared ({kinds}; {nlinked} names of hard-linked inodes), "
              f"{self.ndiff} differences")
        return 1 if self.ndiff else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-ctime", action="store_true")
    ap.add_argument("--no-atime", action="store_true")
    ap.add_argument("--ignore-btime", action="store_true")
    ap.add_argument("--no-dir-size", action="store_true")
    ap.add_argument("--owner")
    ap.add_argument("--clamp", type=int)
    ap.add_argument("--skip-xattr", action="append", default=[])
    ap.add_argument("--max-print", type=int, default=1000)
    ap.add_argument("src")
    ap.add_argument("mnt")
    args = ap.parse_args()
    for p in (args.src, args.mnt):
        if not os.path.isdir(p):
            print(f"cmptree: {p} is not a directory", file=sys.stderr)
            sys.exit(2)
    sys.exit(Compare(args).run())


if __name__ == "__main__":
    main()
