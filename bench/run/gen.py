#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write the metadata-heavy workload of bench/run: about NOPS operations.

usage: gen.py [NOPS]   (default 40000; the script goes to stdout)

Deterministic (a fixed seed): 64 directories, then in rounds over them
files created and given small writes (inline and one-block data), xattrs
set and replaced, renames within and across directories, hard links,
unlinks and a few more mkdirs; no sync in the middle.
"""
import random
import sys


def main():
    nops = int(sys.argv[1]) if len(sys.argv) > 1 else 40000
    rnd = random.Random(20261201)
    out = []
    dirs = ["/d%02d" % i for i in range(64)]
    out += ["mkdir %s" % d for d in dirs]
    files = []
    n = 0
    while len(out) < nops:
        r = rnd.random()
        if r < 0.30 or len(files) < 100:
            p = "%s/f%06d" % (rnd.choice(dirs), n)
            n += 1
            out.append("create %s" % p)
            files.append(p)
        elif r < 0.55:
            p = rnd.choice(files)
            ln = rnd.choice([100, 700, 2000, 4096, 6000])
            out.append("write %s %d %d 0x%02x" % (p, rnd.choice([0, 0, 4096]), ln, rnd.randrange(256)))
        elif r < 0.70:
            p = rnd.choice(files)
            out.append("setxattr %s user.%s %s" % (p, rnd.choice("abcd"), "v" * rnd.randrange(1, 60)))
        elif r < 0.82:
            i = rnd.randrange(len(files))
            q = "%s/r%06d" % (rnd.choice(dirs), n)
            n += 1
            out.append("rename %s %s" % (files[i], q))
            files[i] = q
        elif r < 0.87:
            p = rnd.choice(files)
            q = "%s/l%06d" % (rnd.choice(dirs), n)
            n += 1
            out.append("link %s %s" % (p, q))
            files.append(q)
        elif r < 0.995:
            i = rnd.randrange(len(files))
            out.append("unlink %s" % files[i])
            files[i] = files[-1]
            files.pop()
        else:
            d = "%s/sub%d" % (rnd.choice(dirs), n)
            n += 1
            out.append("mkdir %s" % d)
            dirs.append(d)
    sys.stdout.write("# bench/run workload (bench/run/gen.py %d)\n" % nops)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
