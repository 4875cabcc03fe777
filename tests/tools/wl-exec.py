#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Run a workload script (Documentation/design/workload.md) against a mounted directory.

usage: wl-exec.py [-v] [--strict] SCRIPT MOUNTPOINT

Every operation is issued as the real system call(s) the language says it
stands for, with paths taken relative to MOUNTPOINT.  The whole script is
parsed first: a syntax error rejects it before anything is done
(exit 2, "SCRIPT:LINE: ...").  An operation the kernel refuses changes
nothing, is reported on stderr as "SCRIPT:LINE: <operation>: <strerror>"
and the script goes on (--strict: exit 1 at the first such failure).

Harness-only extensions (not in the language of tlogctl run):
  mksubvol PATH                       btrfs subvolume create PATH (BTRFS_IOC_SUBVOL_CREATE)
  mksnap SRC PATH                     btrfs subvolume snapshot SRC PATH (BTRFS_IOC_SNAP_CREATE)
  clone SRC DST                       DST (created if needed) becomes a reflink copy of SRC (FICLONE)
  clonerange SRC SRCOFF LEN DST DSTOFF  FICLONERANGE (DST must exist)
The file is processed with umask 0, so modes are exactly those of the
language (0644 files, 0755 directories).
"""
import ctypes
import ctypes.util
import errno
import fcntl
import os
import shlex
import struct
import sys

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
BTRFS_IOC_SUBVOL_CREATE = 0x5000940e  # _IOW(0x94, 14, struct btrfs_ioctl_vol_args)
BTRFS_IOC_SNAP_CREATE = 0x50009401    # _IOW(0x94, 1, struct btrfs_ioctl_vol_args)
FICLONE = 0x40049409                  # _IOW(0x94, 9, int)
FICLONERANGE = 0x4020940d             # _IOW(0x94, 13, struct file_clone_range)

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
libc.syncfs.argtypes = [ctypes.c_int]


class SyntaxErr(Exception):
    pass


def number(text):
    t = text.lower()
    mult = 1
    if t and t[-1] in "kmg":
        mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[t[-1]]
        t = t[:-1]
    try:
        v = int(t, 16) if t.startswith("0x") else int(t, 10)
    except ValueError:
        raise SyntaxErr("bad number '%s'" % text)
    if v < 0:
        raise SyntaxErr("negative number '%s'" % text)
    return v * mult


def path_arg(text):
    if not text.startswith("/"):
        raise SyntaxErr("path '%s' is not absolute" % text)
    return text


# op: (min args, max args, argument kinds); kinds: p path, n number, s string,
# b byte, k the word "keep", m octal mode
OPS = {
    "mkdir": "p",
    "create": "p",
    "write": "pnn[b]",
    "truncate": "pn",
    "falloc": "pnn[k]",
    "punch": "pnn",
    "link": "pp",
    "rename": "pp",
    "unlink": "p",
    "rmdir": "p",
    "symlink": "sp",
    "setxattr": "pss",
    "removexattr": "ps",
    "chmod": "pm",
    "fsync": "p",
    "fdatasync": "p",
    "sync": "",
    "mksubvol": "p",
    "mksnap": "pp",
    "clone": "pp",
    "clonerange": "pnnpn",
}


def parse_line(words):
    op, args = words[0], words[1:]
    if op not in OPS:
        raise SyntaxErr("unknown operation '%s'" % op)
    spec = OPS[op]
    req = spec.split("[")[0]
    opt = spec[len(req):].strip("[]")
    if not len(req) <= len(args) <= len(req) + len(opt):
        raise SyntaxErr("%s takes %d%s arguments, got %d" %
                        (op, len(req), "-%d" % (len(req) + len(opt)) if opt else "", len(args)))
    out = []
    for kind, a in zip(req + opt, args):
        if kind == "p":
            out.append(path_arg(a))
        elif kind == "n":
            out.append(number(a))
        elif kind == "b":
            v = number(a)
            if v > 255:
                raise SyntaxErr("byte value '%s' out of range" % a)
            out.append(v)
        elif kind == "k":
            if a != "keep":
                raise SyntaxErr("expected 'keep', got '%s'" % a)
            out.append(True)
        elif kind == "m":
            try:
                out.append(int(a, 8))
            except ValueError:
                raise SyntaxErr("bad octal mode '%s'" % a)
        else:
            out.append(a)
    return op, out


def parse(script):
    ops = []
    with open(script) as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                words = shlex.split(line, comments=True)
            except ValueError as e:
                raise SyntaxErr("%s:%d: %s" % (script, lineno, e))
            if not words:
                continue
            try:
                op, args = parse_line(words)
            except SyntaxErr as e:
                raise SyntaxErr("%s:%d: %s" % (script, lineno, e))
            ops.append((lineno, op, args, " ".join(words)))
    return ops


class Runner:
    def __init__(self, mnt, verbose):
        self.mnt = os.path.abspath(mnt)
        self.verbose = verbose

    def p(self, path):
        return os.path.join(self.mnt, path.lstrip("/")) if path != "/" else self.mnt

    @staticmethod
    def falloc(fd, mode, off, length):
        if libc.fallocate(fd, mode, off, length) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))

    def run(self, op, a):
        p = self.p
        if op == "mkdir":
            os.mkdir(p(a[0]), 0o755)
        elif op == "create":
            os.close(os.open(p(a[0]), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        elif op == "write":
            path, off, length = a[0], a[1], a[2]
            byte = a[3] if len(a) > 3 else 0xab
            fd = os.open(p(path), os.O_CREAT | os.O_WRONLY, 0o644)
            try:
                chunk = bytes([byte]) * min(length, 1 << 20)
                done = 0
                while done < length:
                    n = min(len(chunk), length - done)
                    done += os.pwrite(fd, chunk[:n], off + done)
            finally:
                os.close(fd)
        elif op == "truncate":
            os.truncate(p(a[0]), a[1])
        elif op in ("falloc", "punch"):
            fd = os.open(p(a[0]), os.O_WRONLY)
            try:
                if op == "punch":
                    mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
                else:
                    mode = FALLOC_FL_KEEP_SIZE if len(a) > 3 else 0
                self.falloc(fd, mode, a[1], a[2])
            finally:
                os.close(fd)
        elif op == "link":
            os.link(p(a[0]), p(a[1]), follow_symlinks=False)
        elif op == "rename":
            os.rename(p(a[0]), p(a[1]))
        elif op == "unlink":
            os.unlink(p(a[0]))
        elif op == "rmdir":
            os.rmdir(p(a[0]))
        elif op == "symlink":
            os.symlink(a[0], p(a[1]))
        elif op == "setxattr":
            os.setxattr(p(a[0]), a[1], a[2].encode(), follow_symlinks=False)
        elif op == "removexattr":
            os.removexattr(p(a[0]), a[1], follow_symlinks=False)
        elif op == "chmod":
            os.chmod(p(a[0]), a[1])
        elif op in ("fsync", "fdatasync"):
            fd = os.open(p(a[0]), os.O_RDONLY)
            try:
                (os.fsync if op == "fsync" else os.fdatasync)(fd)
            finally:
                os.close(fd)
        elif op == "sync":
            fd = os.open(self.mnt, os.O_RDONLY | os.O_DIRECTORY)
            try:
                if libc.syncfs(fd) != 0:
                    e = ctypes.get_errno()
                    raise OSError(e, os.strerror(e))
            finally:
                os.close(fd)
        elif op == "mksubvol":
            parent, name = os.path.split(p(a[0]).rstrip("/"))
            if len(name.encode()) > 4087:
                raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
            fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                args = bytearray(struct.pack("q4088s", 0, name.encode()))
                fcntl.ioctl(fd, BTRFS_IOC_SUBVOL_CREATE, args, True)
            finally:
                os.close(fd)
        elif op == "mksnap":
            parent, name = os.path.split(p(a[1]).rstrip("/"))
            src = os.open(p(a[0]), os.O_RDONLY | os.O_DIRECTORY)
            try:
                fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    args = bytearray(struct.pack("q4088s", src, name.encode()))
                    fcntl.ioctl(fd, BTRFS_IOC_SNAP_CREATE, args, True)
                finally:
                    os.close(fd)
            finally:
                os.close(src)
        elif op == "clone":
            src = os.open(p(a[0]), os.O_RDONLY)
            try:
                fd = os.open(p(a[1]), os.O_CREAT | os.O_WRONLY, 0o644)
                try:
                    fcntl.ioctl(fd, FICLONE, src)
                finally:
                    os.close(fd)
            finally:
                os.close(src)
        elif op == "clonerange":
            src = os.open(p(a[0]), os.O_RDONLY)
            try:
                fd = os.open(p(a[3]), os.O_WRONLY)
                try:
                    fcntl.ioctl(fd, FICLONERANGE, struct.pack("qQQQ", src, a[1], a[2], a[4]))
                finally:
                    os.close(fd)
            finally:
                os.close(src)
        else:
            raise AssertionError(op)


def main():
    argv = sys.argv[1:]
    verbose = strict = False
    while argv and argv[0].startswith("-"):
        if argv[0] == "-v":
            verbose = True
        elif argv[0] == "--strict":
            strict = True
        else:
            sys.exit(__doc__)
        argv.pop(0)
    if len(argv) != 2:
        sys.exit(__doc__)
    script, mnt = argv
    try:
        ops = parse(script)
    except SyntaxErr as e:
        print(e, file=sys.stderr)
        sys.exit(2)
    except OSError as e:
        print("%s: %s" % (script, e.strerror), file=sys.stderr)
        sys.exit(2)
    os.umask(0)
    r = Runner(mnt, verbose)
    failures = 0
    for lineno, op, args, text in ops:
        if verbose:
            print("%s:%d: %s" % (script, lineno, text), file=sys.stderr)
        try:
            r.run(op, args)
        except OSError as e:
            failures += 1
            print("%s:%d: %s: %s" % (script, lineno, op, os.strerror(e.errno) if e.errno
                                      else str(e)), file=sys.stderr)
            if strict:
                sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    main()
