#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Make a source tree that exercises everything mkfs --rootdir must copy.

usage: gentree.py [--seed N] [--files N] [--small] [--readable] [--no-socket]
                  [--no-trusted] [--no-special-links] [--no-negative-ns] [--strict] DIR

DIR must not exist or be empty.  The same seed gives the same tree: names,
contents, hole maps, modes, owners, xattrs and the times gentree sets
(atime and mtime; ctime and birth time are the source filesystem's, set
when the tree is made, and differ from run to run).

What it holds (all of it unless --small):
  sizes/       files of every size class around the inline limit and the
               sector size, up to a few MiB, compressible text and random
               bytes (incompressible) of each
  sparse/      random hole maps: 4 KiB-aligned and unaligned data pieces,
               leading and trailing holes, an all-hole file, a 16 GiB file
               with two pieces of data
  links/       hard links: two names in one directory, names across
               directories, a file with 20 names, hard-linked symlink,
               FIFO and device, a hard-linked sparse file with xattrs
  symlinks/    relative, absolute, dangling, to a directory, a 4000-byte
               target
  special/     FIFOs, a unix socket, character and block devices (small and
               large major/minor numbers)
  deep/        a chain of 50 directories (60-byte names), a file at the end
  names/       255-byte names (ASCII and UTF-8), odd bytes in names
  xattrs/      many user.* xattrs with binary values, a 3000- and an
               8000-byte value, empty values, security.* and trusted.*
               xattrs, security.capability (revision 2)
  acl/         POSIX ACLs: access ACLs with named users and groups, a
               default ACL inherited by what is made inside (and one file
               whose inherited ACL was removed again)
  modes/       every special bit: setuid, setgid, sticky, 000, 7777
  owners/      many uids and gids, up to 4294967294
  times/       edge times: 0, before 1970, after 2038 and 2106
  bulk/        --files small files (default 3000) in 30 directories,
               random sizes, owners, modes and nanosecond times
  empty/       an empty directory
The root directory itself gets a mode, an owner, user.* and security.*
xattrs and times.

--small: a few dozen entries (files with data, inline and not, a sparse
file, a hard link, a symlink, a FIFO, xattrs, a subdirectory), for tests
that run many times.
--readable: what a non-root user may archive: every file readable and every
directory searchable by everyone (modes get a+r, directories a+rx).
--no-socket: no unix socket (tar does not archive them).
--no-trusted: no trusted.* xattrs (only root can read them).
--no-special-links: no hard-linked FIFO or device (GNU tar archives every
name of one as a separate inode).
--no-negative-ns: times before 1970 in whole seconds (libarchive 3.6.2
reads a pax time "-S.F" as -S + F, not -(S + F)).
--strict: fail when something cannot be made (mknod, chown, security.*,
trusted.* need root; FIFOs and sockets need a filesystem that has them);
without it such entries are left out and a note says what.

Prints "gentree: N entries" (the root included) on standard output.
"""
import argparse
import os
import random
import socket
import stat
import struct
import sys

BLOCK = 4096
UIDS = [0, 1, 2, 100, 999, 1000, 1001, 4242, 65533, 65534, 65536, 100000, 1 << 20,
        2147483647, 4294967294]

# POSIX ACL xattr format (version 2): a header, then (tag, perm, id) entries
# sorted by tag, then by id.
ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER = 1, 2, 4, 8, 16, 32
ACL_UNDEFINED_ID = 0xffffffff


def acl_value(entries):
    out = struct.pack("<I", 2)
    for tag, perm, xid in sorted(entries, key=lambda e: (e[0], e[2])):
        out += struct.pack("<HHI", tag, perm, ACL_UNDEFINED_ID if xid is None else xid)
    return out


def cap_value(permitted, inheritable):
    # vfs_cap_data revision 2 with the effective flag
    return struct.pack("<IIIII", 0x02000000 | 1, permitted & 0xffffffff, inheritable & 0xffffffff,
                       permitted >> 32, inheritable >> 32)


class Gen:
    def __init__(self, args):
        self.top = os.path.abspath(args.dir)
        self.r = random.Random(args.seed)
        self.args = args
        self.count = 1
        self.skipped = {}
        # applied at the end, deepest first: (path, uid, gid, mode, xattrs, atime, mtime)
        self.meta = []
        self.root = os.geteuid() == 0

    # ---- helpers ----

    def p(self, rel):
        return os.path.join(self.top, rel)

    def cannot(self, what, err):
        if self.args.strict:
            sys.exit(f"gentree: cannot make {what}: {err}")
        kind = what.split(":")[0]
        n, first = self.skipped.get(kind, (0, f"{what}: {err}"))
        self.skipped[kind] = (n + 1, first)

    def text(self, n):
        words = [b"btrfs", b"extent", b"inode", b"subvolume", b"checksum", b"tree", b"\n",
                 b"compress", b"root", b"delayed", b"ref", b"0123456789", b" "]
        out = bytearray()
        while len(out) < n:
            out += self.r.choice(words) + b" "
        return bytes(out[:n])

    def data(self, n, kind=None):
        kind = kind or self.r.choice(["text", "random", "zeros"])
        if kind == "random":
            return self.r.randbytes(n)
        if kind == "zeros":
            return bytes(n)
        return self.text(n)

    def rtime(self):
        # seconds between 1990 and 2030 with random nanoseconds
        return self.r.randrange(631152000, 1893456000) * 10**9 + self.r.randrange(10**9)

    def owner(self):
        return self.r.choice(UIDS), self.r.choice(UIDS)

    def fmode(self):
        return self.r.choice([0o644, 0o600, 0o755, 0o640, 0o444, 0o664, 0o700, 0o400, 0o4755,
                              0o2755, 0o1644, 0o000])

    def later(self, rel, mode=None, owner=None, xattrs=None, times=None):
        """Metadata applied after everything exists (creating entries
        changes the times of directories; chown clears setuid and
        security.capability, so modes and xattrs come after owners)."""
        if owner is None:
            owner = self.owner()
        if times is None:
            times = (self.rtime(), self.rtime())
        self.meta.append((rel, mode, owner, xattrs or [], times))

    def mkdir(self, rel, mode=None, **kw):
        os.mkdir(self.p(rel), 0o755)
        self.count += 1
        if mode is None:
            mode = self.r.choice([0o755, 0o750, 0o700, 0o775, 0o1777, 0o2755, 0o711])
        self.later(rel, mode=mode, **kw)

    def write(self, rel, pieces, size, mode=None, **kw):
        """A regular file of @size bytes holding @pieces [(offset, bytes)]
        and holes elsewhere (a trailing hole by truncating)."""
        fd = os.open(self.p(rel), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            for off, b in pieces:
                os.pwrite(fd, b, off)
            os.ftruncate(fd, size)
        finally:
            os.close(fd)
        self.count += 1
        self.later(rel, mode=self.fmode() if mode is None else mode, **kw)

    def file(self, rel, size, kind=None, **kw):
        self.write(rel, [(0, self.data(size, kind))] if size else [], size, **kw)

    def symlink(self, target, rel, **kw):
        os.symlink(target, self.p(rel))
        self.count += 1
        self.later(rel, **kw)

    def link(self, old, new):
        os.link(self.p(old), self.p(new), follow_symlinks=False)
        self.count += 1

    def fifo(self, rel, **kw):
        try:
            os.mkfifo(self.p(rel), 0o644)
        except OSError as e:
            self.cannot(f"FIFO: {rel}", e)
            return False
        self.count += 1
        self.later(rel, mode=self.r.choice([0o644, 0o600, 0o666, 0o4640]), **kw)
        return True

    def node(self, rel, kind, major, minor, **kw):
        try:
            os.mknod(self.p(rel), kind | 0o600, os.makedev(major, minor))
        except OSError as e:
            self.cannot(f"device: {rel}", e)
            return False
        self.count += 1
        self.later(rel, mode=self.r.choice([0o600, 0o660, 0o666, 0o640]), **kw)
        return True

    def sock(self, rel, **kw):
        if self.args.no_socket:
            return False
        cwd = os.getcwd()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            os.chdir(os.path.dirname(self.p(rel)))
            s.bind(os.path.basename(rel))
        except OSError as e:
            self.cannot(f"socket: {rel}", e)
            return False
        finally:
            s.close()
            os.chdir(cwd)
        self.count += 1
        self.later(rel, mode=0o755, **kw)
        return True

    # ---- metadata, applied last ----

    def apply(self, rel, mode, owner, xattrs, times):
        path = self.p(rel)
        st = os.lstat(path)
        is_link = stat.S_ISLNK(st.st_mode)
        try:
            os.chown(path, owner[0], owner[1], follow_symlinks=False)
        except PermissionError as e:
            self.cannot(f"owner: {rel}", e)
        if mode is not None and not is_link:
            if self.args.readable:
                mode |= 0o555 if stat.S_ISDIR(st.st_mode) else 0o444
            os.chmod(path, mode)
        # capabilities last: a chown drops them, and set ACLs change the mode
        for name, value in sorted(xattrs, key=lambda x: x[0] == "security.capability"):
            if self.args.no_trusted and name.startswith("trusted."):
                continue
            try:
                os.setxattr(path, name, value, follow_symlinks=False)
            except OSError as e:
                self.cannot(f"{name.split('.')[0]}.* xattr: {rel}: {name}", e)
        os.utime(path, ns=times, follow_symlinks=False)

    def finish(self):
        # deepest first: the times of a directory are set after everything in it
        for rel, mode, owner, xattrs, times in sorted(self.meta, key=lambda m: -m[0].count("/")):
            self.apply(rel, mode, owner, xattrs, times)
        # the root last
        self.apply("", 0o751, (1234, 4321),
                   [("user.root", b"root xattr\0value"), ("security.test", b"root-label"),
                    ("user.empty", b"")], (1000000000 * 10**9 + 123456789, 1100000000 * 10**9 + 1))

    # ---- the parts of the tree ----

    def sizes(self):
        self.mkdir("sizes")
        sz = [0, 1, 2, 100, 1000, 2047, 2048, 2049, 3000, 4095, 4096, 4097, 8191, 8192, 8193,
              12288, 65535, 65536, 65537, 131071, 131072, 131073, 1048577, 3 * 1048576 + 5,
              5 * 1048576 - 1]
        for n in sz:
            for kind in ["text", "random"]:
                self.file(f"sizes/{kind}-{n}", n, kind)
        self.file("sizes/zeros-131073", 131073, "zeros")
        # mixed: compressible and incompressible halves in one file
        self.write("sizes/mixed", [(0, self.text(300000)), (300000, self.r.randbytes(300000))],
                   600000)

    def sparse(self):
        self.mkdir("sparse")
        for i in range(40):
            size = self.r.choice([8192, 65536, 300000, 1 << 20, 3 << 20]) + self.r.randrange(5000)
            pieces = []
            pos = self.r.choice([0, 0, BLOCK, 12345])
            while pos < size:
                n = self.r.choice([1, 100, BLOCK, 2 * BLOCK, 5000, 70000])
                n = min(n, size - pos)
                pieces.append((pos, self.data(n)))
                pos += n + self.r.choice([BLOCK, 3 * BLOCK, 4097, 200000, 1000, 65536])
                if self.r.random() < 0.3:
                    pos = (pos + BLOCK - 1) // BLOCK * BLOCK
            if i % 5 == 0 and pieces:
                pieces.pop()		# a trailing hole
            self.write(f"sparse/s{i:02}", pieces, size)
        self.write("sparse/all-hole", [], 5 << 20)
        self.write("sparse/all-hole-small", [], 1000)
        self.write("sparse/leading-hole", [(1 << 20, self.text(10000))], (1 << 20) + 10000)
        self.write("sparse/trailing-hole", [(0, self.text(10000))], 1 << 20)
        self.write("sparse/one-byte-at-end", [((1 << 20) - 1, b"x")], 1 << 20)
        self.write("sparse/small-unaligned", [(1000, b"y" * 10)], 1010)
        self.write("sparse/huge", [(8 << 30, self.text(5000)), ((16 << 30) - 7, b"the end")],
                   16 << 30)

    def links(self):
        self.mkdir("links")
        self.mkdir("links/a")
        self.mkdir("links/b")
        self.mkdir("links/b/c")
        self.file("links/a/pair1", 5000)
        self.link("links/a/pair1", "links/a/pair2")
        self.file("links/a/across", 300)
        self.link("links/a/across", "links/b/across")
        self.link("links/a/across", "links/b/c/across-deeper")
        self.file("links/many", 70000)
        for i in range(19):
            self.link("links/many", ["links/a", "links/b", "links/b/c", "links"][i % 4] + f"/many{i}")
        self.write("links/sparse-xattr", [(BLOCK * 3, self.text(9000))], 1 << 20,
                   xattrs=[("user.linked", b"\x00\x01\x02")])
        self.link("links/sparse-xattr", "links/b/sparse-xattr-2")
        self.symlink("a/pair1", "links/sym")
        self.link("links/sym", "links/b/sym-hardlink")
        if self.fifo("links/fifo") and not self.args.no_special_links:
            self.link("links/fifo", "links/a/fifo-2")
        if self.node("links/chr", stat.S_IFCHR, 1, 3) and not self.args.no_special_links:
            self.link("links/chr", "links/b/c/chr-2")
        self.file("links/inline", 10)
        self.link("links/inline", "links/b/inline-2")

    def symlinks(self):
        self.mkdir("symlinks")
        self.symlink("../sizes/text-4096", "symlinks/relative")
        self.symlink("/etc/passwd", "symlinks/absolute")
        self.symlink("does/not/exist", "symlinks/dangling")
        self.symlink("../deep", "symlinks/to-dir")
        self.symlink("x" * 4000, "symlinks/long")
        self.symlink("a" * 255 + "/" + "b" * 255, "symlinks/long-names")
        self.symlink("odd \t\n\\ bytes \xe9", "symlinks/odd")
        self.symlink(".", "symlinks/dot")

    def special(self):
        self.mkdir("special")
        self.fifo("special/fifo", xattrs=[("security.test", b"fifo label")])
        self.fifo("special/fifo2")
        self.sock("special/socket")
        for name, kind, ma, mi in [("null", stat.S_IFCHR, 1, 3), ("tty", stat.S_IFCHR, 5, 0),
                                   ("big-chr", stat.S_IFCHR, 4095, 1048575),
                                   ("zero-chr", stat.S_IFCHR, 0, 0),
                                   ("sda", stat.S_IFBLK, 8, 0), ("nvme", stat.S_IFBLK, 259, 65537),
                                   ("big-blk", stat.S_IFBLK, 511, 300000)]:
            self.node(f"special/{name}", kind, ma, mi,
                      xattrs=[("security.test", name.encode())] if name == "sda" else None)

    def deep(self):
        rel = "deep"
        self.mkdir(rel)
        for i in range(50):
            rel += f"/{i:02}-" + "d" * 57
            self.mkdir(rel)
        self.file(rel + "/bottom", 5000)
        self.symlink("../" * 10 + "x", rel + "/up")

    def names(self):
        self.mkdir("names")
        self.file("names/" + "n" * 255, 10)
        self.file("names/" + "\u00e9" * 127 + "x", 20)          # 255 bytes of UTF-8
        self.file("names/" + "\u6f22" * 85, 30)                 # 255 bytes, 3-byte characters
        self.mkdir("names/" + "D" * 255)
        self.file("names/" + "D" * 255 + "/" + "f" * 255, 40)
        for name in ["with space", "tab\there", "new\nline", "back\\slash", "-dash", ".hidden",
                     "..dots", "colon:", "\u2603 snow", "\U0001f600"]:
            self.file("names/" + name, len(name))

    def xattrs(self):
        self.mkdir("xattrs", xattrs=[("user.dir", b"on a directory"), ("trusted.dir", b"t")])
        many = [(f"user.x{i:03}", self.r.randbytes(self.r.randrange(0, 200))) for i in range(100)]
        self.file("xattrs/many", 100, xattrs=many)
        self.file("xattrs/big", 100, xattrs=[("user.big3000", self.r.randbytes(3000)),
                                             ("user.big8000", self.text(8000))])
        self.file("xattrs/binary", 0, xattrs=[("user.nul", b"\0\0\0"), ("user.empty", b""),
                                              ("user.high", bytes(range(256)))])
        self.file("xattrs/long-name", 0, xattrs=[("user." + "n" * 250, b"v")])
        self.file("xattrs/security", 4000,
                  xattrs=[("security.test", b"system_u:object_r:etc_t:s0\0"),
                          ("trusted.overlay.opaque", b"y"), ("user.mixed", b"u")])
        self.file("xattrs/capability", 20000, mode=0o755,
                  xattrs=[("security.capability", cap_value(1 << 12 | 1 << 10, 0))])
        self.file("xattrs/capability-hi", 100, mode=0o750,
                  xattrs=[("security.capability", cap_value(1 << 38 | 1, 1 << 33))])
        self.symlink("many", "xattrs/symlink", xattrs=[("security.test", b"on a symlink"),
                                                       ("trusted.sym", b"t")])
        for i in range(30):
            self.file(f"xattrs/f{i:02}", self.r.randrange(0, 5000),
                      xattrs=[(f"user.k{j}", self.text(self.r.randrange(1, 300)))
                              for j in range(self.r.randrange(1, 8))])

    def acl(self):
        other = 5 if self.args.readable else 0
        access = acl_value([(ACL_USER_OBJ, 7, None), (ACL_USER, 5, 1000), (ACL_USER, 6, 65534),
                            (ACL_GROUP_OBJ, 5, None), (ACL_GROUP, 4, 100), (ACL_MASK, 7, None),
                            (ACL_OTHER, other, None)])
        default = acl_value([(ACL_USER_OBJ, 7, None), (ACL_USER, 7, 4242),
                             (ACL_GROUP_OBJ, 5, None), (ACL_MASK, 7, None), (ACL_OTHER, 5, None)])
        self.mkdir("acl", mode=0o755)
        self.file("acl/access", 100, mode=0o640)
        self.mkdir("acl/dir-default", mode=0o755)
        self.mkdir("acl/dir-both", mode=0o770)
        # the default ACL now, so that what is made below inherits it
        for rel, name, value in [("acl/dir-default", "system.posix_acl_default", default),
                                 ("acl/dir-both", "system.posix_acl_default", default)]:
            try:
                os.setxattr(self.p(rel), name, value)
            except OSError as e:
                self.cannot(f"ACL: {rel}", e)
        self.file("acl/dir-default/inherited", 100, mode=None)
        self.mkdir("acl/dir-default/sub-inherited")
        self.file("acl/dir-default/acl-removed", 100)
        try:
            os.removexattr(self.p("acl/dir-default/acl-removed"), "system.posix_acl_access")
        except OSError:
            pass
        self.mkdir("acl/dir-default/default-removed")
        try:
            os.removexattr(self.p("acl/dir-default/default-removed"), "system.posix_acl_default")
        except OSError:
            pass
        self.file("acl/dir-default/default-removed/plain", 10)
        # set last (in finish), after chmod
        self.meta.append(("acl/access", 0o640, self.owner(),
                          [("system.posix_acl_access", access)], (self.rtime(), self.rtime())))
        self.meta.append(("acl/dir-both", 0o770, self.owner(),
                          [("system.posix_acl_access", access)], (self.rtime(), self.rtime())))

    def modes(self):
        self.mkdir("modes")
        for m in [0o4755, 0o4711, 0o2755, 0o2710, 0o6755, 0o1755, 0o7777, 0o0000, 0o0001,
                  0o4000, 0o2000, 0o1000, 0o777, 0o400]:
            self.file(f"modes/f{m:04o}", 10, mode=m)
        for m in [0o1777, 0o3777, 0o2775, 0o0000, 0o7755, 0o0700]:
            self.mkdir(f"modes/d{m:04o}", mode=m)

    def owners(self):
        self.mkdir("owners")
        for i, u in enumerate(UIDS):
            g = UIDS[(i * 7 + 3) % len(UIDS)]
            self.file(f"owners/u{u}-g{g}", 10, owner=(u, g))
            self.mkdir(f"owners/dir-u{u}", owner=(u, u))
        self.symlink("x", "owners/symlink-4242", owner=(4242, 4243))

    def times(self):
        self.mkdir("times")
        neg = 0 if self.args.no_negative_ns else 1
        for name, ns in [("epoch", 0), ("one-ns", 1), ("before-1970", -10**18 - 5 * neg),
                         ("1969", -1 * 10**9 + 999999999 * neg), ("y2038", (2**31) * 10**9 - 1),
                         ("after-2038", (2**31 + 5) * 10**9 + 7), ("y2106", (2**32 + 1) * 10**9),
                         ("max-ns", 1234567890 * 10**9 + 999999999)]:
            self.file(f"times/{name}", 1, times=(ns, ns))
        self.file("times/atime-newer", 1, times=(1700000000 * 10**9 + 5, 1600000000 * 10**9))
        self.file("times/atime-older", 1, times=(1500000000 * 10**9, 1600000000 * 10**9 + 9))

    def bulk(self, nfiles):
        self.mkdir("bulk")
        ndirs = 30
        for d in range(ndirs):
            self.mkdir(f"bulk/dir{d:03}")
        for i in range(nfiles):
            n = self.r.choice([0, 1, 17, 512, 1500, 2048, 2049, 3000, 4096, 5000, 9000, 20000,
                               70000])
            self.file(f"bulk/dir{i % ndirs:03}/file{i:05}-" + "z" * self.r.randrange(0, 60),
                      n, self.r.choice(["text", "text", "random"]))

    def small(self):
        self.mkdir("d")
        self.file("inline", 100, "text")
        self.file("d/regular", 20000, "random")
        self.file("d/text", 9000, "text")
        self.write("d/sparse", [(BLOCK * 2, self.text(5000)), (1 << 20, b"end")], (1 << 20) + 3)
        self.link("d/regular", "hardlink")
        self.symlink("d/regular", "symlink")
        self.fifo("fifo")
        self.file("xattr", 10, xattrs=[("user.a", b"1"), ("user.b", self.r.randbytes(300))])
        self.mkdir("d/e")
        for i in range(20):
            self.file(f"d/e/f{i:02}", self.r.randrange(0, 6000))

    def run(self):
        os.umask(0)
        os.makedirs(self.top, exist_ok=True)
        if os.listdir(self.top):
            sys.exit(f"gentree: {self.top} is not empty")
        if self.args.small:
            self.small()
        else:
            for part in [self.sizes, self.sparse, self.links, self.symlinks, self.special,
                         self.deep, self.names, self.xattrs, self.acl, self.modes, self.owners,
                         self.times]:
                part()
            self.bulk(self.args.files)
            self.mkdir("empty")
        self.finish()
        for what, (n, first) in sorted(self.skipped.items()):
            print(f"gentree: note: {n} {what} left out, the first: {first}", file=sys.stderr)
        print(f"gentree: {self.count} entries")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--readable", action="store_true")
    ap.add_argument("--no-socket", action="store_true")
    ap.add_argument("--no-trusted", action="store_true")
    ap.add_argument("--no-special-links", action="store_true")
    ap.add_argument("--no-negative-ns", action="store_true")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("dir")
    Gen(ap.parse_args()).run()


if __name__ == "__main__":
    main()
