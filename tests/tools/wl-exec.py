#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Run a workload script (Documentation/design/workload.md) against a mounted directory.

usage: wl-exec.py [-v] [--strict] SCRIPT|- MOUNTPOINT

Every operation is issued as the real system call(s) the language says it
stands for, with paths taken relative to MOUNTPOINT.  The whole script is
parsed first, with the grammar of common/workload.c (the parser of
tlogctl run; this file mirrors it: the same words, quotes and comments,
the same limits and the same messages): a syntax error rejects it before
anything is done (exit 2, "SCRIPT:LINE: ...").  An operation the kernel
refuses changes nothing, is reported on stderr as
"SCRIPT:LINE: <operation>: <strerror>" and the script goes on (--strict:
exit 1 at the first such failure).

The operations and the system calls they stand for:
  mkdir PATH                          mkdir(PATH, 0755)
  create PATH                         open(O_CREAT|O_EXCL|O_WRONLY, 0644)
  write PATH OFF LEN [BYTE]           open(O_CREAT|O_WRONLY, 0644), pwrite LEN bytes BYTE (0xab)
  truncate PATH SIZE                  truncate
  falloc PATH OFF LEN [keep]          fallocate (keep: FALLOC_FL_KEEP_SIZE)
  punch PATH OFF LEN                  fallocate(PUNCH_HOLE|KEEP_SIZE)
  link OLD NEW                        link
  rename OLD NEW [noreplace|exchange] renameat2 (RENAME_NOREPLACE / RENAME_EXCHANGE)
  unlink PATH / rmdir PATH            unlink / rmdir
  symlink TARGET PATH                 symlink
  mknod PATH c|b|p|s [MAJOR MINOR]    mknod(0644 | S_IFCHR/S_IFBLK/S_IFIFO/S_IFSOCK)
  setxattr PATH NAME VALUE [create|replace]  lsetxattr (XATTR_CREATE / XATTR_REPLACE)
  removexattr PATH NAME               lremovexattr
  chmod PATH MODE                     chmod (octal, at most 07777)
  chown PATH UID GID                  lchown
  utimes PATH ATIME MTIME             utimensat(AT_SYMLINK_NOFOLLOW), times SEC[.NSEC]
  chattr PATH [+-=]FLAGS              open(O_RDONLY|O_NONBLOCK), FS_IOC_GETFLAGS, FS_IOC_SETFLAGS
                                      with C nodatacow, c compress, m nocompress
  fsync PATH / fdatasync PATH         open(O_RDONLY|O_NONBLOCK), fsync / fdatasync
  sync                                syncfs (a commit)
  mksubvol PATH                       BTRFS_IOC_SUBVOL_CREATE
  mksnap SRC PATH                     BTRFS_IOC_SNAP_CREATE of subvolume SRC
  clone SRC DST                       DST (created if needed) becomes a reflink copy of SRC (FICLONE)
  clonerange SRC SRCOFF LEN DST DSTOFF  FICLONERANGE (DST must exist)
As root (the loop-mount tests), the script runs chrooted into MOUNTPOINT:
"/" is its top, so absolute symlink targets and ".." resolve inside the
filesystem as tlogctl run resolves them, never on the host.
Opening follows a final symlink (write, truncate, falloc, punch, chmod,
chattr, fsync...); link, the l-calls and utimensat do not.
Numbers are decimal or 0x hex with an optional k, m or g suffix; ids
(UID, GID, MAJOR, MINOR) are numbers below 2^32-1.
The file is processed with umask 0, so modes are exactly those of the
language (0644 files and nodes, 0755 directories).
"""
import ctypes
import ctypes.util
import errno
import fcntl
import os
import stat
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
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                           ctypes.c_uint]
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
RENAME_NOREPLACE = 1 << 0
RENAME_EXCHANGE = 1 << 1
FS_IOC_GETFLAGS = 0x80086601          # _IOR('f', 1, long); the kernel reads an int
FS_IOC_SETFLAGS = 0x40086602          # _IOW('f', 2, long)


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


libc.utimensat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(Timespec), ctypes.c_int]


class SyntaxErr(Exception):
    pass


# The parser mirrors common/workload.c (the grammar of tlogctl run) byte
# for byte: the same words, the same limits, the same messages.
BLANKS = b" \t\r"
MAX_WORDS = 8
U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1
S64_MAX = (1 << 63) - 1


def show(word):
    return word.decode("utf-8", "surrogateescape")


def parse_u64(b):
    """strutil.c parse_u64 without suffixes: decimal or 0x hex, all of b"""
    base, p = 10, 0
    if b[:2] in (b"0x", b"0X"):
        base, p = 16, 2
    digits = b"0123456789abcdefABCDEF" if base == 16 else b"0123456789"
    if p == len(b) or any(c not in digits for c in b[p:]):
        return None
    v = int(b[p:], base)
    return v if v <= U64_MAX else None


def number(word):
    if not word or len(word) >= 32:
        raise SyntaxErr("bad number '%s'" % show(word))
    mult = {ord("k"): 1 << 10, ord("K"): 1 << 10, ord("m"): 1 << 20, ord("M"): 1 << 20,
            ord("g"): 1 << 30, ord("G"): 1 << 30}.get(word[-1], 1)
    v = parse_u64(word[:-1] if mult != 1 else word)
    if v is None:
        raise SyntaxErr("bad number '%s'" % show(word))
    if v > U64_MAX // mult:
        raise SyntaxErr("number '%s' too large" % show(word))
    return v * mult


def wl_time(word):
    dot = word.find(b".")
    sec = word[:dot] if dot >= 0 else word
    if not sec or len(sec) >= 24:
        raise SyntaxErr("bad time '%s'" % show(word))
    v = parse_u64(sec)
    if v is None or v > S64_MAX:
        raise SyntaxErr("bad time '%s'" % show(word))
    ns = 0
    if dot >= 0:
        frac = word[dot + 1:]
        if not 1 <= len(frac) <= 9 or any(c not in b"0123456789" for c in frac):
            raise SyntaxErr("bad time '%s' (SEC or SEC.NSEC)" % show(word))
        ns = int(frac.ljust(9, b"0"))
    return (v, ns)


ATTR_BITS = {ord("C"): 0x00800000, ord("c"): 0x00000004, ord("m"): 0x00000400}  # FS_*_FL


def attr_flags(word):
    """[+-=]LETTERS: (set, clear) as FS_IOC_SETFLAGS bits"""
    sign = word[:1]
    if sign not in (b"+", b"-", b"=") or len(word) < 2:
        raise SyntaxErr("bad flags '%s' (+FLAGS, -FLAGS or =FLAGS)" % show(word))
    bits = 0
    for c in word[1:]:
        if c not in ATTR_BITS:
            raise SyntaxErr("unknown flag '%s' (C, c or m)" % chr(c))
        bits |= ATTR_BITS[c]
    if sign == b"-":
        return 0, bits
    if sign == b"=":
        return bits, sum(ATTR_BITS.values()) & ~bits
    return bits, 0


def octal_mode(word):
    w = word.lstrip(b" \t\n\v\f\r")     # strtoul skips leading space
    if not word or word[:1] in (b"-", b"+") or not w or w[:1] in (b"-", b"+") or \
            any(c not in b"01234567" for c in w) or int(w, 8) > 0o7777:
        raise SyntaxErr("bad octal mode '%s'" % show(word))
    return int(w, 8)


# kinds (common/workload.c): p absolute path, s string, n number, b byte,
# m octal mode, u 32-bit id, t time, T mknod type, F chattr flags, w a
# keyword of the operation; after '[' the rest is optional
OPS = {
    "mkdir": ("p",),
    "create": ("p",),
    "write": ("pnn[b",),
    "truncate": ("pn",),
    "falloc": ("pnn[w", {"keep": "keep"}),
    "punch": ("pnn",),
    "link": ("pp",),
    "rename": ("pp[w", {"noreplace": "noreplace", "exchange": "exchange"}),
    "unlink": ("p",),
    "rmdir": ("p",),
    "symlink": ("sp",),
    "mknod": ("pT[uu",),
    "setxattr": ("pss[w", {"create": "create", "replace": "replace"}),
    "removexattr": ("ps",),
    "chmod": ("pm",),
    "chown": ("puu",),
    "utimes": ("ptt",),
    "chattr": ("pF",),
    "fsync": ("p",),
    "fdatasync": ("p",),
    "sync": ("",),
    "mksubvol": ("p",),
    "mksnap": ("pp",),
    "clone": ("pp",),
    "clonerange": ("pnnpn",),
}
NODE_TYPES = {b"c": stat.S_IFCHR, b"b": stat.S_IFBLK, b"p": stat.S_IFIFO, b"s": stat.S_IFSOCK}


def parse_arg(op, kind, word, keywords):
    if kind == "p":
        if word[:1] != b"/":
            raise SyntaxErr("path '%s' is not absolute" % show(word))
        return word
    if kind == "s":
        return word
    if kind == "n":
        return number(word)
    if kind == "b":
        v = number(word)
        if v > 255:
            raise SyntaxErr("byte value '%s' out of range" % show(word))
        return v
    if kind == "m":
        return octal_mode(word)
    if kind == "u":
        v = number(word)
        if v > U32_MAX - 1:
            raise SyntaxErr("id '%s' out of range" % show(word))
        return v
    if kind == "t":
        return wl_time(word)
    if kind == "T":
        if len(word) != 1 or word not in NODE_TYPES:
            raise SyntaxErr("bad node type '%s' (c, b, p or s)" % show(word))
        return 0o644 | NODE_TYPES[word]
    if kind == "F":
        return attr_flags(word)
    if kind == "w":
        w = show(word)
        if w in keywords:
            return keywords[w]
        raise SyntaxErr("unexpected '%s'" % w)
    raise AssertionError(kind)


def parse_line(words):
    op, args = show(words[0]), words[1:]
    if op not in OPS:
        raise SyntaxErr("unknown operation '%s'" % op)
    spec = OPS[op][0]
    keywords = OPS[op][1] if len(OPS[op]) > 1 else {}
    req = spec.split("[")[0]
    opt = spec[len(req) + 1:]
    if not len(req) <= len(args) <= len(req) + len(opt):
        if opt:
            raise SyntaxErr("%s takes %d-%d arguments, got %d" %
                            (op, len(req), len(req) + len(opt), len(args)))
        raise SyntaxErr("%s takes %d arguments, got %d" % (op, len(req), len(args)))
    out = [parse_arg(op, kind, a, keywords) for kind, a in zip(req + opt, args)]
    if op == "mknod":
        dev = stat.S_ISCHR(out[1]) or stat.S_ISBLK(out[1])
        if dev and len(words) != 5:
            raise SyntaxErr("mknod of a device takes MAJOR MINOR")
        if not dev and len(words) != 3:
            raise SyntaxErr("mknod of a FIFO or socket takes no numbers")
    return op, out


def split_words(text, pos):
    """common/workload.c split_words: the words of the line at pos, where
    the next line starts, and how many lines of the file that was (a
    quote may run over newlines)"""
    words = []
    end = len(text)
    s = pos
    lines = 1
    while True:
        while s < end and text[s] in BLANKS:
            s += 1
        if s == end or text[s] == 0x0a:
            break
        if text[s] == 0x23:  # '#'
            while s < end and text[s] != 0x0a:
                s += 1
            break
        if len(words) == MAX_WORDS:
            raise SyntaxErr("too many words")
        w = bytearray()
        while s < end and text[s] not in b" \t\r\n":
            c = text[s]
            if c == 0x27:  # '
                s += 1
                while s < end and text[s] != 0x27:
                    if text[s] == 0x0a:
                        lines += 1
                    w.append(text[s])
                    s += 1
                if s == end:
                    raise SyntaxErr("no closing quotation")
                s += 1
            elif c == 0x22:  # "
                s += 1
                while s < end and text[s] != 0x22:
                    if text[s] == 0x5c and s + 1 < end and text[s + 1] in b'"\\$`':
                        s += 1
                    elif text[s] == 0x0a:
                        lines += 1
                    w.append(text[s])
                    s += 1
                if s == end:
                    raise SyntaxErr("no closing quotation")
                s += 1
            elif c == 0x5c and s + 1 < end and text[s + 1] != 0x0a:
                w.append(text[s + 1])
                s += 2
            else:
                w.append(c)
                s += 1
        # the C parser's words are NUL-terminated strings
        words.append(bytes(w).split(b"\0", 1)[0])
    if s < end:
        s += 1
    return words, s, lines


def parse(script):
    if script == "-":
        text = sys.stdin.buffer.read()
    else:
        with open(script, "rb") as fh:
            text = fh.read()
    ops = []
    pos, next_line = 0, 1
    while pos < len(text):
        # an operation's messages name the line it starts on
        lineno = next_line
        try:
            words, pos, lines = split_words(text, pos)
            next_line += lines
            if not words:
                continue
            op, args = parse_line(words)
        except SyntaxErr as e:
            raise SyntaxErr("%s:%d: %s" % (script, lineno, e))
        ops.append((lineno, op, args, " ".join(show(w) for w in words)))
    return ops


class Runner:
    def __init__(self, mnt, verbose):
        self.mnt = os.fsencode(os.path.abspath(mnt)) if mnt else b""
        self.verbose = verbose

    def p(self, path):
        if path == b"/":
            return self.mnt or b"/"
        return self.mnt + b"/" + path.lstrip(b"/")

    @staticmethod
    def check(ret):
        if ret != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))

    def subvol_ioctl(self, req, path, src_fd):
        parent, name = os.path.split(self.p(path).rstrip(b"/"))
        if len(name) > 4087:
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            args = bytearray(struct.pack("q4088s", src_fd, name))
            fcntl.ioctl(fd, req, args, True)
        finally:
            os.close(fd)

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
                self.check(libc.fallocate(fd, mode, a[1], a[2]))
            finally:
                os.close(fd)
        elif op == "link":
            os.link(p(a[0]), p(a[1]), follow_symlinks=False)
        elif op == "rename":
            flags = {None: 0, "noreplace": RENAME_NOREPLACE,
                     "exchange": RENAME_EXCHANGE}[a[2] if len(a) > 2 else None]
            self.check(libc.renameat2(AT_FDCWD, p(a[0]), AT_FDCWD, p(a[1]), flags))
        elif op == "unlink":
            os.unlink(p(a[0]))
        elif op == "rmdir":
            os.rmdir(p(a[0]))
        elif op == "symlink":
            os.symlink(a[0], p(a[1]))
        elif op == "mknod":
            dev = os.makedev(a[2], a[3]) if len(a) > 2 else 0
            os.mknod(p(a[0]), a[1], dev)
        elif op == "setxattr":
            flags = {None: 0, "create": os.XATTR_CREATE,
                     "replace": os.XATTR_REPLACE}[a[3] if len(a) > 3 else None]
            os.setxattr(p(a[0]), a[1], a[2], flags, follow_symlinks=False)
        elif op == "removexattr":
            os.removexattr(p(a[0]), a[1], follow_symlinks=False)
        elif op == "chmod":
            os.chmod(p(a[0]), a[1])
        elif op == "chown":
            os.lchown(p(a[0]), a[1], a[2])
        elif op == "utimes":
            ts = (Timespec * 2)(Timespec(*a[1]), Timespec(*a[2]))
            self.check(libc.utimensat(AT_FDCWD, p(a[0]), ts, AT_SYMLINK_NOFOLLOW))
        elif op == "chattr":
            # open (a final symlink followed; O_NONBLOCK as chattr(1): a FIFO
            # does not wait), FS_IOC_GETFLAGS, FS_IOC_SETFLAGS; the kernel
            # answers ENOTTY for what is not a file or a directory
            fd = os.open(p(a[0]), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
            try:
                old = struct.unpack("i", fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(4)))[0]
                setb, clear = a[1]
                new = (old & ~clear) | setb
                fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", new))
            finally:
                os.close(fd)
        elif op in ("fsync", "fdatasync"):
            fd = os.open(p(a[0]), os.O_RDONLY | os.O_NONBLOCK)   # a FIFO does not wait
            try:
                (os.fsync if op == "fsync" else os.fdatasync)(fd)
            finally:
                os.close(fd)
        elif op == "sync":
            fd = os.open(p(b"/"), os.O_RDONLY | os.O_DIRECTORY)
            try:
                self.check(libc.syncfs(fd))
            finally:
                os.close(fd)
        elif op == "mksubvol":
            self.subvol_ioctl(BTRFS_IOC_SUBVOL_CREATE, a[0], 0)
        elif op == "mksnap":
            src = os.open(p(a[0]), os.O_RDONLY | os.O_DIRECTORY)
            try:
                self.subvol_ioctl(BTRFS_IOC_SNAP_CREATE, a[1], src)
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


def say(msg):
    sys.stderr.flush()
    sys.stderr.buffer.write(msg.encode("utf-8", "surrogateescape") + b"\n")
    sys.stderr.buffer.flush()


def main():
    argv = sys.argv[1:]
    verbose = strict = False
    while argv and argv[0].startswith("-") and argv[0] != "-":
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
        say(str(e))
        sys.exit(2)
    except OSError as e:
        say("%s: %s" % (script, e.strerror))
        sys.exit(2)
    os.umask(0)
    if os.geteuid() == 0:
        # the filesystem is the whole world of a script: an absolute
        # symlink target or ".." at the top resolve inside it, as in
        # tlogctl run, and never reach the host's files
        os.chroot(mnt)
        os.chdir("/")
        mnt = ""
    r = Runner(mnt, verbose)
    failures = 0
    for lineno, op, args, text in ops:
        if verbose:
            say("%s:%d: %s" % (script, lineno, text))
        try:
            r.run(op, args)
        except OSError as e:
            failures += 1
            say("%s:%d: %s: %s" % (script, lineno, op, os.strerror(e.errno) if e.errno
                                   else str(e)))
            if strict:
                sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    main()
