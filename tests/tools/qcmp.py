#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Compare tlogctl's file queries on an unmounted image with the kernel's.

usage: qcmp.py [--limit N] --view LABEL MNT OUT QOPTS [--view ...] TLOGCTL IMG

Each view is a kernel's view of IMG (MNT, a mount of a copy of IMG): it is
walked by treecmp.py (the record is written to OUT).  The paths checked
are the first N (default 50) of the union of the views' regular files.
Then, in each view whose QOPTS is not "skip" (QOPTS: "-" for no options,
else tlogctl options such as "--no-log"), for every path that is a regular
file in that view:

  tlogctl fiemap -v OPTS IMG PATH   == xfs_io -r -c 'fiemap -v'  (first line skipped)
  tlogctl seek OPTS IMG PATH -a -r 0 == xfs_io -r -c 'seek -a -r 0'
  sha256(tlogctl cat OPTS IMG PATH)  == sha256 of the kernel's read

(cat is not compared where the kernel's read fails, e.g. a metadump
without data).  For the first N directories of the views, in each view
where the directory exists:

  tlogctl ls -l -i --format json OPTS IMG DIR == the names in DIR and, for
      each, lstat's inode number, type, mode, links, owner, size, blocks
  A path absent from the view must make tlogctl cat fail
(exit 1, no crash).  OPTS (e.g. --no-log) go before IMG.  Every difference
is printed; the exit status is 1 if there was any.
"""
import difflib
import hashlib
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import treecmp  # noqa: E402

SANITIZER = ("AddressSanitizer", "runtime error", "LeakSanitizer")
LS_TYPES = {0o100000: "file", 0o040000: "dir", 0o120000: "symlink", 0o020000: "chardev",
            0o060000: "blockdev", 0o010000: "fifo", 0o140000: "socket"}


def xfs_io_batch(mnt, paths, cmd):
    """One xfs_io run over all paths (it applies each -c command to every
    open file, in order); returns {path: text}, or None when the output
    cannot be split unambiguously (then each file is asked alone)."""
    rel = ["." + p for p in paths]
    p = subprocess.run(["xfs_io", "-r", "-c", cmd, *rel], cwd=mnt,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0 or p.stderr:
        return None
    lines = p.stdout.decode("utf-8", "replace").splitlines(keepends=True)
    out = {}
    if cmd.startswith("fiemap"):
        # each file's table starts with a "NAME:" line
        idx = []
        for i, r in enumerate(rel):
            start = idx[-1] + 1 if idx else 0
            try:
                j = lines.index(r + ":\n", start)
            except ValueError:
                return None
            idx.append(j)
        idx.append(len(lines))
        for k, path in enumerate(paths):
            out[path] = "".join(lines[idx[k] + 1:idx[k + 1]])
    else:
        starts = [i for i, l in enumerate(lines) if l == "Whence\tResult\n"]
        if len(starts) != len(paths) or (starts and starts[0] != 0):
            return None
        starts.append(len(lines))
        for k, path in enumerate(paths):
            out[path] = "".join(lines[starts[k]:starts[k + 1]])
    return out


def xfs_io_one(mnt, path, cmd):
    p = subprocess.run(["xfs_io", "-r", "-c", cmd, "." + path], cwd=mnt,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text = p.stdout.decode("utf-8", "replace")
    if cmd.startswith("fiemap"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text


class Q:
    def __init__(self, tl, opts, img, label):
        self.tl, self.opts, self.img, self.label = tl, opts, img, label
        self.bad = 0
        self.queries = 0
        self.errors = {}  # a tlogctl error is shown once per view
        self.shown = 0

    def run(self, args, binary=False):
        try:
            p = subprocess.run([self.tl, *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=120)
        except subprocess.TimeoutExpired:
            return None, b"", "timed out"
        err = p.stderr.decode("utf-8", "replace")
        if p.returncode < 0 or p.returncode in (86, 87) or any(s in err for s in SANITIZER):
            return None, p.stdout, "crashed (exit %d): %s" % (p.returncode, err[:2000])
        return p.returncode, p.stdout if binary else p.stdout.decode("utf-8", "replace"), err

    def cmdline(self, sub, path, extra=()):
        return [sub, *self.opts, self.img, path, *extra] if sub != "fiemap" else \
               ["fiemap", "-v", *self.opts, self.img, path]

    SHOW = 6  # mismatches shown in full per view; the others in one line each

    def mismatch(self, what, expected, got):
        self.bad += 1
        if got.startswith("exit ") and got in self.errors:
            self.errors[got] += 1
            return
        self.errors.setdefault(got if got.startswith("exit ") else None, 1)
        self.shown += 1
        if self.shown > self.SHOW:
            print("MISMATCH [%s] tlogctl %s (not shown)" % (self.label, what))
            return
        print("MISMATCH [%s] tlogctl %s" % (self.label, what))
        if "\n" in expected or "\n" in got:
            diff = difflib.unified_diff(expected.splitlines(), got.splitlines(),
                                        "kernel", "tlogctl", lineterm="", n=1)
            for i, line in enumerate(diff):
                if i == 30:
                    print("   ... (diff cut)")
                    break
                print("   " + line.replace("\t", "\\t"))
        else:
            print("   kernel:  %s" % expected)
            print("   tlogctl: %s" % got)

    def text(self, sub, path, expected, extra=(), skip_first=False):
        self.queries += 1
        args = self.cmdline(sub, path, extra)
        shown = " ".join(os.path.basename(a) if a == self.img else a for a in args)
        rc, out, err = self.run(args)
        if rc != 0:
            self.mismatch(shown, expected, "exit %s: %s" % (rc, err.strip()))
            return
        if skip_first:
            out = out.split("\n", 1)[1] if "\n" in out else ""
        if out != expected:
            self.mismatch(shown, expected, out)

    def ls(self, d, rec):
        """tlogctl ls -l -i --format json of directory d == the kernel's
        names and, per entry, lstat's inode number, type, mode, links,
        owner, size and blocks."""
        self.queries += 1
        args = ["ls", "-l", "-i", "--format", "json", *self.opts, self.img, d]
        shown = " ".join(os.path.basename(a) if a == self.img else a for a in args)
        rc, out, err = self.run(args)
        want = {}
        for n in rec[d]["entries"]:
            e = rec[(d.rstrip("/") + "/" + n)]
            want[n] = "ino %d %s %s nlink %d uid %d gid %d size %d blocks %d" % (
                e["ino"], e["type"], e["mode"], e["nlink"], e["uid"], e["gid"], e["size"],
                e["blocks"])
        if rc != 0:
            self.mismatch(shown, "%d entries" % len(want), "exit %s: %s" % (rc, err.strip()))
            return
        try:
            got = {}
            for x in json.loads(out)["entries"]:
                t = LS_TYPES.get(x["mode"] & 0o170000, "unknown")
                got[x["name"]] = "ino %d %s %04o nlink %d uid %d gid %d size %d blocks %d" % (
                    x["ino"], t, x["mode"] & 0o7777, x["nlink"], x["uid"], x["gid"], x["size"],
                    x["blocks"])
        except (ValueError, KeyError, TypeError) as ex:
            self.mismatch(shown, "JSON with entries", "unreadable output (%s): %s" % (ex, out[:300]))
            return
        if got != want:
            exp = "".join("%s: %s\n" % (n, want[n]) for n in sorted(want))
            res = "".join("%s: %s\n" % (n, got[n]) for n in sorted(got))
            self.mismatch(shown, exp, res)

    def cat(self, path, expected):
        self.queries += 1
        args = ["cat", *self.opts, self.img, path]
        shown = " ".join(os.path.basename(a) if a == self.img else a for a in args)
        rc, out, err = self.run(args, binary=True)
        if expected is None:  # the path does not exist in the kernel's view
            if rc != 1:
                self.mismatch(shown, "no such file (exit 1)",
                              "exit %s: %s" % (rc, err.strip() or "%d bytes" % len(out)))
            return
        if rc != 0:
            self.mismatch(shown, "sha256 " + expected, "exit %s: %s" % (rc, err.strip()))
            return
        got = hashlib.sha256(out).hexdigest()
        if got != expected:
            self.mismatch(shown, "sha256 %s" % expected,
                          "sha256 %s (%d bytes)" % (got, len(out)))


def main():
    argv = sys.argv[1:]
    limit = 50
    views = []
    while argv and argv[0].startswith("--"):
        if argv[0] == "--limit" and len(argv) > 1:
            limit = int(argv[1])
            argv = argv[2:]
        elif argv[0] == "--view" and len(argv) > 4:
            views.append(argv[1:5])
            argv = argv[5:]
        else:
            sys.exit(__doc__)
    if len(argv) != 2 or not views:
        sys.exit(__doc__)
    tl, img = argv
    recs = []
    for label, mnt, out, qopts in views:
        rec = treecmp.walk(mnt)
        with open(out, "w") as fh:
            json.dump(rec, fh, sort_keys=True, indent=0)
        recs.append(rec)
    files = set()
    for rec in recs:
        files |= {p for p, e in rec.items() if e["type"] == "file"}
    paths = sorted(files)[:limit]
    dirs = set()
    for rec in recs:
        dirs |= {p for p, e in rec.items() if e["type"] == "dir"}
    dirs = sorted(dirs)[:limit]
    bad = 0
    for (label, mnt, out, qopts), rec in zip(views, recs):
        if qopts == "skip":
            continue
        bad += compare_view(tl, img, mnt, rec, paths, dirs, label,
                            qopts.split() if qopts != "-" else [])
    return 1 if bad else 0


def compare_view(tl, img, mnt, rec, paths, dirs, label, opts):
    files = [p for p in paths if p in rec and rec[p]["type"] == "file"]
    q = Q(tl, opts, img, label)
    fiemap = xfs_io_batch(mnt, files, "fiemap -v") if files else {}
    if fiemap is None:
        fiemap = {p: xfs_io_one(mnt, p, "fiemap -v") for p in files}
    seek = xfs_io_batch(mnt, files, "seek -a -r 0") if files else {}
    if seek is None:
        seek = {p: xfs_io_one(mnt, p, "seek -a -r 0") for p in files}
    for p in paths:
        if p not in rec:
            q.cat(p, None)
            continue
        if rec[p]["type"] != "file":
            continue
        q.text("fiemap", p, fiemap[p], skip_first=True)
        q.text("seek", p, seek[p], extra=("-a", "-r", "0"))
        sha = rec[p].get("sha256", "")
        if len(sha) == 64:
            q.cat(p, sha)
    for d in dirs:
        if d in rec and rec[d]["type"] == "dir":
            q.ls(d, rec)
    for e, n in q.errors.items():
        if e is not None and n > 1:
            print("[%s] the same error on %d more queries: %s" % (label, n - 1, e[:300]))
    if q.bad or os.environ.get("TLOG_VERBOSE") == "1":
        print("[%s] %d queries on %d paths, %d mismatches" % (label, q.queries, len(paths), q.bad))
    return q.bad


if __name__ == "__main__":
    sys.exit(main())
