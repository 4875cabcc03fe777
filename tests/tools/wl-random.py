#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write random workload scripts (Documentation/design/workload.md) for crash tests.

usage: wl-random.py SEED COUNT OUTDIR [MINOPS MAXOPS]

Writes OUTDIR/r-SEED-NNN.tlw, COUNT scripts of MINOPS..MAXOPS (default
20..60) operations each after a committed set-up.  The same SEED always
gives the same scripts.  A model of the tree keeps most operations valid
(an invalid one is only skipped when the script runs): files with hard
links across directories, directories renamed and removed, symlinks,
writes, truncates, fallocate with and without keep-size, punched holes,
reflinks (the harness extensions clone and clonerange), xattrs, chmod, fsync and fdatasync of files and directories, and an
occasional committing sync; some scripts run without NO_HOLES, with
compression or with a subvolume (operations across it may fail: EXDEV).  Each script ends with an fsync.
"""
import os
import random
import sys

NAMES = ["a", "b", "c", "d", "e", "f", "g", "h", "foo", "bar"]
XATTRS = ["user.a", "user.b", "user.c"]


class Model:
    def __init__(self, rnd):
        self.rnd = rnd
        self.kind = {"/": "dir"}   # path -> dir | file | symlink
        self.ino = {}              # path -> inode id (files)
        self.next_ino = 1
        self.xattrs = {}           # path of dir/inode key -> set
        self.cloned = set()        # inode ids a reflink was made into

    def paths(self, kind=None):
        return sorted(p for p, k in self.kind.items() if kind is None or k == kind)

    def children(self, d):
        pre = d.rstrip("/") + "/"
        return [p for p in self.kind if p != d and p.startswith(pre) and "/" not in p[len(pre):]]

    def new_name(self, d=None):
        if d is None:
            d = self.rnd.choice(self.paths("dir"))
        base = d.rstrip("/") + "/"
        for _ in range(20):
            n = self.rnd.choice(NAMES) + ("" if self.rnd.random() < 0.7 else str(self.rnd.randrange(10)))
            if base + n not in self.kind:
                return base + n
        return base + "n%d" % self.rnd.randrange(10 ** 6)

    def xkey(self, p):
        return ("i", self.ino[p]) if p in self.ino else ("p", p)


def num(rnd, limit, align_p=0.7):
    v = rnd.randrange(0, limit)
    if rnd.random() < align_p:
        v -= v % 4096
    return v


def fmt(v):
    if v and v % (1 << 20) == 0:
        return "%dm" % (v >> 20)
    if v and v % 1024 == 0:
        return "%dk" % (v >> 10)
    return str(v)


def gen_script(rnd, nops):
    m = Model(rnd)
    out = []

    touched = set()  # paths named by an operation since the last sync

    def emit(line):
        out.append(line)
        w = line.split()
        if w[0] == "sync":
            touched.clear()
        elif w[0] == "symlink":
            touched.add(w[2])
        else:
            touched.update(a for a in w[1:3] if a.startswith("/"))

    def do_mkdir(p):
        emit("mkdir %s" % p)
        m.kind[p] = "dir"

    def do_create(p):
        emit("create %s" % p)
        m.kind[p] = "file"
        m.ino[p] = m.next_ino
        m.next_ino += 1

    def do_write(p):
        off = num(rnd, 1 << 20) if rnd.random() < 0.8 else num(rnd, 8 << 20)
        ln = max(1, num(rnd, 256 << 10, 0.6)) if rnd.random() < 0.8 else rnd.randrange(1, 3000)
        emit("write %s %s %s 0x%02x" % (p, fmt(off), fmt(ln), rnd.randrange(256)))
        if p not in m.kind:
            m.kind[p] = "file"
            m.ino[p] = m.next_ino
            m.next_ino += 1

    # variants: no NO_HOLES, compression, a subvolume
    if rnd.random() < 0.15:
        emit("# @mkfs: -O ^no-holes")
    if rnd.random() < 0.15:
        emit("# @mount: compress=%s" % rnd.choice(["zstd", "zlib", "lzo"]))
    if rnd.random() < 0.15:
        p = m.new_name("/")
        emit("mksubvol %s" % p)
        m.kind[p] = "dir"
    # the committed set-up; mostly with data block groups allocated
    # beforehand (a chunk allocation in the running transaction makes an
    # fsync commit instead of logging)
    if rnd.random() < 0.7:
        emit("create /.space")
        emit("falloc /.space 0 64m")
        emit("unlink /.space")
        emit("sync")
    for _ in range(rnd.randrange(1, 4)):
        do_mkdir(m.new_name())
    for _ in range(rnd.randrange(2, 7)):
        p = m.new_name()
        if rnd.random() < 0.8:
            do_write(p)
        else:
            do_create(p)
    if rnd.random() < 0.3:
        p = rnd.choice(m.paths("file"))
        emit("setxattr %s user.a committed" % p)
        m.xattrs.setdefault(m.xkey(p), set()).add("user.a")
    emit("sync")

    def pick(kind):
        ps = [p for p in m.paths(kind) if p != "/"] if kind != "dir" else m.paths("dir")
        return rnd.choice(ps) if ps else None

    ops = 0
    while ops < nops:
        r = rnd.random()
        files = m.paths("file")
        if r < 0.10:
            do_create(m.new_name())
        elif r < 0.15:
            do_mkdir(m.new_name())
        elif r < 0.30:
            p = pick("file") if rnd.random() < 0.9 else m.new_name()
            if p is None:
                continue
            do_write(p)
        elif r < 0.35:
            p = pick("file")
            if p is None:
                continue
            emit("truncate %s %s" % (p, fmt(num(rnd, 1 << 20))))
        elif r < 0.40:
            p = pick("file")
            if p is None:
                continue
            emit("falloc %s %s %s%s" % (p, fmt(num(rnd, 1 << 20)), fmt(max(1, num(rnd, 512 << 10))),
                                          " keep" if rnd.random() < 0.5 else ""))
        elif r < 0.45:
            p = pick("file")
            if p is None:
                continue
            off = num(rnd, 1 << 20)
            # A reflink drops the target's cached extent maps, and a punch
            # that starts mid-block in an uncached hole zeroes a block the
            # kernel's made-up map leaves out: a known difference
            # (Documentation/design/inode-ops.md), not generated (aligned
            # without drawing another number, so the scripts stay the same).
            if m.ino.get(p) in m.cloned:
                off -= off % 4096
            emit("punch %s %s %s" % (p, fmt(off), fmt(max(1, num(rnd, 256 << 10)))))
        elif r < 0.51:
            p = pick("file")
            if p is None:
                continue
            q = m.new_name()
            emit("link %s %s" % (p, q))
            m.kind[q] = "file"
            m.ino[q] = m.ino[p]
        elif r < 0.60:
            # rename: a file (maybe over another file) or a directory
            if rnd.random() < 0.75 or len(m.paths("dir")) < 2:
                p = pick("file") or pick("symlink")
                if p is None:
                    continue
                if rnd.random() < 0.3 and len(files) > 1:
                    q = rnd.choice([f for f in files if f != p] or [m.new_name()])
                else:
                    q = m.new_name()
                emit("rename %s %s" % (p, q))
                if q != p and (m.kind.get(q) in (None, "file", "symlink")):
                    if p in m.ino and q in m.ino and m.ino[p] == m.ino[q]:
                        pass  # rename between links of one inode: nothing happens
                    else:
                        m.kind[q] = m.kind.pop(p)
                        if p in m.ino:
                            m.ino[q] = m.ino.pop(p)
                        else:
                            m.ino.pop(q, None)
            else:
                p = pick("dir")
                if p == "/":
                    continue
                dst = rnd.choice([d for d in m.paths("dir") if not (d + "/").startswith(p + "/")])
                q = m.new_name(dst)
                emit("rename %s %s" % (p, q))
                moved = {}
                for k in list(m.kind):
                    if k == p or k.startswith(p + "/"):
                        moved[q + k[len(p):]] = (m.kind.pop(k), m.ino.pop(k, None))
                for k, (kind, ino) in moved.items():
                    m.kind[k] = kind
                    if ino is not None:
                        m.ino[k] = ino
        elif r < 0.66:
            p = pick("file") or pick("symlink")
            if p is None:
                continue
            emit("unlink %s" % p)
            m.kind.pop(p)
            m.ino.pop(p, None)
        elif r < 0.69:
            empty = [d for d in m.paths("dir") if d != "/" and not m.children(d)]
            if not empty:
                continue
            p = rnd.choice(empty)
            emit("rmdir %s" % p)
            m.kind.pop(p)
        elif r < 0.72:
            q = m.new_name()
            tgt = rnd.choice([rnd.choice(m.paths()), "../x", "some/where/else", "t" * rnd.randrange(1, 300)])
            emit("symlink %s %s" % (tgt, q))
            m.kind[q] = "symlink"
        elif r < 0.77:
            p = rnd.choice(m.paths())
            if p == "/" or m.kind[p] == "symlink":
                continue
            x = m.xattrs.setdefault(m.xkey(p), set())
            if x and rnd.random() < 0.4:
                n = rnd.choice(sorted(x))
                emit("removexattr %s %s" % (p, n))
                x.discard(n)
            else:
                n = rnd.choice(XATTRS)
                emit("setxattr %s %s %s" % (p, n, "v" * rnd.randrange(1, 80)))
                x.add(n)
        elif r < 0.78:
            p = rnd.choice(m.paths())
            if p == "/" or m.kind[p] == "symlink":
                continue
            emit("chmod %s %s" % (p, rnd.choice(["0600", "0640", "0755", "0700", "0444"])))
        elif r < 0.80:
            # reflinks: a whole file into a new or existing one, or a range
            p = pick("file")
            if p is None:
                continue
            if rnd.random() < 0.4:
                q = m.new_name() if rnd.random() < 0.6 else (pick("file") or m.new_name())
                emit("clone %s %s" % (p, q))
                if q not in m.kind:
                    m.kind[q] = "file"
                    m.ino[q] = m.next_ino
                    m.next_ino += 1
                m.cloned.add(m.ino.get(q))
            else:
                q = pick("file")
                a = 4096 * rnd.randrange(0, 128)
                emit("clonerange %s %s %s %s %s" % (p, fmt(a), fmt(4096 * rnd.randrange(1, 64)), q,
                                                    fmt(4096 * rnd.randrange(0, 256))))
                m.cloned.add(m.ino.get(q))
        elif r < 0.81:
            emit("sync")
        elif r < 0.92:
            p = pick("file")
            if p is None:
                continue
            emit("%s %s" % ("fsync" if rnd.random() < 0.8 else "fdatasync", p))
        else:
            emit("fsync %s" % rnd.choice(m.paths("dir")))
        ops += 1
    # end with an fsync (of something changed since the last sync, if
    # there is one) so that most scripts leave a log
    cands = m.paths("file") + m.paths("dir")
    changed = [p for p in cands if p in touched]
    emit("fsync %s" % rnd.choice(changed or cands))
    return out


def main():
    if len(sys.argv) not in (4, 6):
        sys.exit(__doc__)
    seed, count, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    lo, hi = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) == 6 else (20, 60)
    os.makedirs(outdir, exist_ok=True)
    for i in range(count):
        rnd = random.Random("%d-%d" % (seed, i))
        ops = gen_script(rnd, rnd.randrange(lo, hi + 1))
        with open(os.path.join(outdir, "r-%d-%03d.tlw" % (seed, i)), "w") as fh:
            fh.write("# random script %d of seed %d (tests/tools/wl-random.py)\n" % (i, seed))
            fh.write("\n".join(ops) + "\n")


if __name__ == "__main__":
    main()
