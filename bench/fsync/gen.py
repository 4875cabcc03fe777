#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write the dbench-like workload of bench/fsync.

usage: gen.py [NFILES]   (default 3000; the script goes to stdout)

Deterministic (a fixed seed): 20 directories made and synced, then
NFILES files each created, written (1 byte to 64 KiB, some appended to
later) and fsynced; between the fsyncs, renames within and across
directories, hard links, unlinks, and every 50th file an fsync of its
directory.  The kind of load a mail or database server puts on fsync.
"""
import random
import sys


def main():
    nfiles = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    rnd = random.Random(20261202)
    dirs = ["/d%02d" % i for i in range(20)]
    out = ["mkdir %s" % d for d in dirs] + ["sync"]
    files = []
    n = 0
    for i in range(nfiles):
        d = dirs[i % len(dirs)]
        p = "%s/f%05d" % (d, i)
        size = rnd.choice([1, 100, 700, 3000, 4096, 9000, 16384, 65536])
        out.append("create %s" % p)
        out.append("write %s 0 %d 0x%02x" % (p, size, rnd.randrange(256)))
        out.append("fsync %s" % p)
        files.append(p)
        if files and rnd.random() < 0.15:
            q = rnd.choice(files)
            out.append("write %s 65536 4096 0x%02x" % (q, rnd.randrange(256)))
            out.append("fdatasync %s" % q)
        if len(files) > 10 and rnd.random() < 0.10:
            j = rnd.randrange(len(files))
            q = "%s/r%05d" % (rnd.choice(dirs), n)
            n += 1
            out.append("rename %s %s" % (files[j], q))
            files[j] = q
        if len(files) > 10 and rnd.random() < 0.04:
            q = "%s/l%05d" % (rnd.choice(dirs), n)
            n += 1
            out.append("link %s %s" % (rnd.choice(files), q))
            files.append(q)
        if len(files) > 10 and rnd.random() < 0.03:
            j = rnd.randrange(len(files))
            out.append("unlink %s" % files[j])
            files[j] = files[-1]
            files.pop()
        if i % 50 == 49:
            out.append("fsync %s" % d)
    sys.stdout.write("# bench/fsync workload (bench/fsync/gen.py %d)\n" % nfiles)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
