#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Make semantic damages in a btrfs image, with valid checksums.

A checker's verdict on a damaged image says something only when the damage
gets past the checksums: every tree block changed here is re-sealed in the
image's csum type (tests/tools/imgfuzz.py computes them), in every copy
(DUP, RAID1), and a changed superblock is re-sealed in every mirror.  The
damages are the ones a consistency checker must find by cross-referencing
(a wrong link count, a missing or extra back reference, ...), not by
decoding one block.  Used by tests/kernel/620-check-damage.sh.

Items are found by walking trees from the superblock: the chunk map comes
from the sys_chunk_array and then the chunk tree (single, DUP and RAID1
profiles on one device; striped profiles are refused).  Every walk is
bounded: a block is read at most once per walk, levels must go down by one,
so a cycle in a damaged image cannot loop.

Items are removed from a leaf properly (item headers and data shifted,
nritems lowered, the parents' keys fixed when the first key changes), or
grown/shrunk in place; a key is only changed where the new key keeps the
leaf in order (checked, else the damage is refused with exit 2).

  damage.py IMG list [--tree T] [--type N] [--ino N]
      print "tree leaf slot objectid type offset size" for the items
  damage.py IMG nlink --ino N --value V [--tree T]
  damage.py IMG inode --ino N --field F (--value V | --delta D) [--tree T]
      F: generation transid size nbytes nlink mode flags
  damage.py IMG delete-item --tree T --key OBJ,TYPE,OFF
  damage.py IMG extra-backref [--bytenr B]
      a keyed EXTENT_DATA_REF of the data extent B (default: the first one)
      from an inode that does not exist, and the extent's refs raised by one
  damage.py IMG drop-inline-ref [--bytenr B]
      the last inline back reference of a data extent removed, refs lowered
  damage.py IMG refs [--bytenr B] --delta D     the refs count of an extent item
  damage.py IMG bg-used [--bytenr B] --delta D  a block group's used bytes
  damage.py IMG dev-used --delta D   the chunk tree's DEV_ITEM bytes_used
  damage.py IMG dir-index --dir N [--index I] [--new J]
      the key offset of a DIR_INDEX changed (default: the highest, to +100)
  damage.py IMG overlap [--ino N]
      the key offset of a file's second extent moved into its first
  damage.py IMG csum-shorten [--count K] [--bytenr B]
      the last K checksums of a csum item dropped (default 1)
  damage.py IMG csum-delete [--bytenr B]
  damage.py IMG fst-extent [--shrink BYTES]  a free space extent shortened
  damage.py IMG fst-bitmap                   a bit of a free space bitmap flipped
  damage.py IMG super --field F (--value V | --delta D)
  damage.py IMG log-extent --target data|data-exact|tree
      a logged file extent pointed into another inode's committed extent
      (data: a sector inside it; data-exact: all of it, which is what a
      logged reflink looks like, so legal) or at a tree block
  damage.py IMG log-ref-missing-dir
      a logged INODE_REF moved to a parent directory that does not exist
  damage.py IMG log-item-size
      a log leaf whose last item's size runs past the leaf (checksum valid)

T is a tree id or name: root extent chunk dev fs csum uuid fst bgt, a
subvolume id, or log:SUBVOL for the log tree of SUBVOL.
Prints one line saying what it changed.  Exit 0 done, 2 refused (nothing
to damage of that kind, or an unsupported image; nothing was written).
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import imgfuzz  # noqa: E402  (checksums, superblock fields)
from imgfuzz import get, put, sget  # noqa: E402

HDR = 101
ITEM = 25
KPTR = 33
ROOT_ITEM_KEY = 132
LOG_OBJ = (1 << 64) - 6
TREE_NAMES = {"root": 1, "extent": 2, "chunk": 3, "dev": 4, "fs": 5, "csum": 7,
              "uuid": 9, "fst": 10, "bgt": 11}
CSUM_OBJ = (1 << 64) - 10
MIRROR_PROFILES = (1 << 4) | (1 << 5) | (1 << 9) | (1 << 10)   # RAID1, DUP, RAID1C3/4
STRIPED_PROFILES = (1 << 3) | (1 << 6) | (1 << 7) | (1 << 8)   # RAID0, RAID10, RAID5/6
MAX_LEVEL = 8


class Refused(Exception):
    """Nothing of that kind to damage, or an image this tool cannot handle."""


def crc32c_raw(seed, data):
    """crc32c without the final inversion, as btrfs's name and ref hashes use it."""
    c = seed
    t = imgfuzz._CRC_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c


def data_ref_hash(root, owner, offset):
    """The key offset of a keyed EXTENT_DATA_REF."""
    hi = crc32c_raw(0xFFFFFFFF, struct.pack("<Q", root))
    lo = crc32c_raw(0xFFFFFFFF, struct.pack("<Q", owner))
    lo = crc32c_raw(lo, struct.pack("<Q", offset))
    return ((hi << 31) ^ lo) & imgfuzz.U64


def key_at(buf, pos):
    return (get(buf, pos, 8), buf[pos + 8], get(buf, pos + 9, 8))


def put_key(buf, pos, key):
    put(buf, pos, 8, key[0])
    buf[pos + 8] = key[1]
    put(buf, pos + 9, 8, key[2])


class Leaf:
    """Item operations on one leaf buffer that keep it well formed."""

    def __init__(self, buf):
        self.buf = buf
        self.size = len(buf)

    def n(self):
        return get(self.buf, 96, 4)

    def key(self, s):
        return key_at(self.buf, HDR + ITEM * s)

    def off(self, s):
        return get(self.buf, HDR + ITEM * s + 17, 4)

    def len(self, s):
        return get(self.buf, HDR + ITEM * s + 21, 4)

    def data_pos(self, s):
        return HDR + self.off(s)

    def data(self, s):
        p = self.data_pos(s)
        return self.buf[p:p + self.len(s)]

    def _set_off(self, s, v):
        put(self.buf, HDR + ITEM * s + 17, 4, v)

    def _set_len(self, s, v):
        put(self.buf, HDR + ITEM * s + 21, 4, v)

    def _low(self):
        n = self.n()
        return self.off(n - 1) if n else self.size - HDR

    def free(self):
        return self._low() - ITEM * self.n()

    def _check_packed(self, s):
        o, sz = self.off(s), self.len(s)
        for j in range(self.n()):
            if j < s and self.off(j) < o + sz or j > s and self.off(j) + self.len(j) > o:
                raise Refused("leaf items are not packed in order; not touching it")

    def resize(self, s, at, delta):
        """Insert (delta > 0) or remove (delta < 0) bytes at byte AT of item S."""
        self._check_packed(s)
        o, sz = self.off(s), self.len(s)
        if at < 0 or at > sz or (delta < 0 and at - delta > sz):
            raise Refused("resize out of the item")
        low, p = self._low(), o + at
        b = self.buf
        if delta > 0:
            if self.free() < delta:
                raise Refused("no room in the leaf")
            b[HDR + low - delta:HDR + p - delta] = b[HDR + low:HDR + p]
            b[HDR + p - delta:HDR + p] = bytes(delta)
        else:
            d = -delta
            b[HDR + low + d:HDR + p + d] = b[HDR + low:HDR + p]
            b[HDR + low:HDR + low + d] = bytes(d)
        for j in range(s, self.n()):
            self._set_off(j, self.off(j) - delta)
        self._set_len(s, sz + delta)

    def delete(self, s):
        n = self.n()
        self.resize(s, 0, -self.len(s))
        b = self.buf
        b[HDR + ITEM * s:HDR + ITEM * (n - 1)] = b[HDR + ITEM * (s + 1):HDR + ITEM * n]
        b[HDR + ITEM * (n - 1):HDR + ITEM * n] = bytes(ITEM)
        put(b, 96, 4, n - 1)

    def insert(self, s, key, data):
        n = self.n()
        if self.free() < ITEM + len(data):
            raise Refused("no room in the leaf")
        top = self.off(s - 1) if s > 0 else self.size - HDR
        low, d = self._low(), len(data)
        b = self.buf
        b[HDR + low - d:HDR + top - d] = b[HDR + low:HDR + top]
        for j in range(s, n):
            self._set_off(j, self.off(j) - d)
        b[HDR + ITEM * (s + 1):HDR + ITEM * (n + 1)] = b[HDR + ITEM * s:HDR + ITEM * n]
        put_key(b, HDR + ITEM * s, key)
        put(b, 96, 4, n + 1)
        self._set_off(s, top - d)
        self._set_len(s, d)
        b[HDR + top - d:HDR + top] = data


class Image:
    def __init__(self, path):
        self.path = path
        self.f = open(path, "r+b")
        self.fsize = os.fstat(self.f.fileno()).st_size
        supers = imgfuzz.read_supers(path)
        best = imgfuzz.chosen_super(supers)
        if best is None:
            raise Refused("no valid superblock")
        self.sb = best[2]
        self.ctype = sget(self.sb, "csum_type")
        self.nodesize = sget(self.sb, "nodesize")
        self.sectorsize = sget(self.sb, "sectorsize")
        self.csize = imgfuzz.csum_size(self.ctype)
        self.chunks = []
        self.dirty = {}
        self._chunk_map()

    # ---- chunk map ----

    def _add_chunk(self, logical, buf, pos):
        length = get(buf, pos, 8)
        ctype = get(buf, pos + 24, 8)
        n = get(buf, pos + 44, 2)
        if n == 0 or pos + 48 + 32 * n > len(buf):
            return
        stripes = [get(buf, pos + 48 + 32 * i + 8, 8) for i in range(n)]
        for c in self.chunks:
            if c[0] == logical:
                return
        self.chunks.append((logical, length, ctype, stripes))

    def _chunk_map(self):
        for _, chunk, _n in imgfuzz.sys_array_entries(self.sb):
            self._add_chunk(get(self.sb, chunk - 17 + 9, 8), self.sb, chunk)
        for leaf, path in self.walk(sget(self.sb, "chunk_root"),
                                    self.sb[199]):
            lf = Leaf(leaf)
            for s in range(lf.n()):
                k = lf.key(s)
                if k[1] == 228 and lf.len(s) >= 80:
                    self._add_chunk(k[2], leaf, lf.data_pos(s))

    def copies(self, logical, length):
        for start, clen, ctype, stripes in self.chunks:
            if start <= logical and logical + length <= start + clen:
                if ctype & STRIPED_PROFILES:
                    raise Refused("striped profile (type %#x) not supported" % ctype)
                if len(stripes) > 1 and not ctype & MIRROR_PROFILES:
                    raise Refused("chunk with %d stripes, type %#x" % (len(stripes), ctype))
                return [s + logical - start for s in stripes]
        return []

    # ---- blocks ----

    def read(self, logical, length=None):
        length = length or self.nodesize
        c = self.copies(logical, length)
        if not c or c[0] + length > self.fsize:
            return None
        self.f.seek(c[0])
        return bytearray(self.f.read(length))

    def block(self, logical):
        """A tree block by logical address; the same buffer while changed."""
        if logical in self.dirty:
            return self.dirty[logical]
        b = self.read(logical)
        if b is None or get(b, 48, 8) != logical:
            return None
        return b

    def mark(self, logical, buf):
        self.dirty[logical] = buf

    def flush(self):
        for logical, buf in self.dirty.items():
            imgfuzz.seal(buf, self.ctype)
            for p in self.copies(logical, self.nodesize):
                self.f.seek(p)
                self.f.write(buf)
        self.dirty = {}
        self.f.flush()

    def walk(self, root, level):
        """(leaf buffer, path) for every leaf under ROOT in key order; the
        path is [(node bytenr, slot)] from the root down.  Bounded: every
        block at most once, levels strictly decreasing."""
        seen = set()
        limit = max(self.fsize // self.nodesize, 1)
        stack = [(root, level, [])]
        while stack:
            bytenr, want, path = stack.pop()
            if bytenr in seen or len(seen) >= limit or want >= MAX_LEVEL:
                continue
            seen.add(bytenr)
            b = self.block(bytenr)
            if b is None or b[100] != want:
                continue
            if want == 0:
                yield b, path
                continue
            n = min(get(b, 96, 4), (len(b) - HDR) // KPTR)
            for s in reversed(range(n)):
                p = HDR + KPTR * s
                stack.append((get(b, p + 17, 8), want - 1, path + [(bytenr, s)]))

    def fix_parents(self, path, leaf_slot, newkey):
        """After the first key of a block changed to NEWKEY: the key pointers
        above it (as long as the block is the first child)."""
        if leaf_slot != 0:
            return
        for bytenr, s in reversed(path):
            nb = self.block(bytenr)
            put_key(nb, HDR + KPTR * s, newkey)
            self.mark(bytenr, nb)
            if s != 0:
                return

    def upper_bound(self, path):
        """The first key after the leaf at PATH (None: it is the last leaf)."""
        for bytenr, s in reversed(path):
            nb = self.block(bytenr)
            if s + 1 < get(nb, 96, 4):
                return key_at(nb, HDR + KPTR * (s + 1))
        return None

    # ---- trees ----

    def root_item(self, tree_root, tree_level, objectid):
        found = None
        for leaf, _ in self.walk(tree_root, tree_level):
            lf = Leaf(leaf)
            for s in range(lf.n()):
                k = lf.key(s)
                if k[0] == objectid and k[1] == ROOT_ITEM_KEY and lf.len(s) >= 239:
                    p = lf.data_pos(s)
                    found = (get(leaf, p + 176, 8), leaf[p + 238])
        return found

    def tree_root(self, tree):
        if tree == 1:
            return sget(self.sb, "root"), self.sb[198]
        if tree == 3:
            return sget(self.sb, "chunk_root"), self.sb[199]
        if isinstance(tree, str) and tree.startswith("log"):
            lr = sget(self.sb, "log_root")
            if not lr:
                raise Refused("no log tree")
            if tree == "logroot":
                return lr, self.sb[200]
            sub = int(tree.split(":")[1])
            for leaf, _ in self.walk(lr, self.sb[200]):
                lf = Leaf(leaf)
                for s in range(lf.n()):
                    k = lf.key(s)
                    if k == (LOG_OBJ, ROOT_ITEM_KEY, sub):
                        p = lf.data_pos(s)
                        return get(leaf, p + 176, 8), leaf[p + 238]
            raise Refused("no log tree for subvolume %d" % sub)
        r = self.root_item(sget(self.sb, "root"), self.sb[198], tree)
        if r is None:
            raise Refused("no tree %s" % tree)
        return r

    def log_trees(self):
        lr = sget(self.sb, "log_root")
        if not lr:
            return []
        out = []
        for leaf, _ in self.walk(lr, self.sb[200]):
            lf = Leaf(leaf)
            for s in range(lf.n()):
                k = lf.key(s)
                if k[0] == LOG_OBJ and k[1] == ROOT_ITEM_KEY:
                    out.append("log:%d" % k[2])
        return out

    def items(self, tree, pred=lambda k: True):
        """[(leaf bytenr, leaf buffer, path, slot, key)] of matching items."""
        root, level = self.tree_root(tree)
        out = []
        for leaf, path in self.walk(root, level):
            lf = Leaf(leaf)
            for s in range(min(lf.n(), (len(leaf) - HDR) // ITEM)):
                k = lf.key(s)
                if pred(k):
                    out.append((get(leaf, 48, 8), leaf, path, s, k))
        return out

    def one(self, tree, pred, what):
        r = self.items(tree, pred)
        if not r:
            raise Refused("no %s in tree %s" % (what, tree))
        return r[0]

    # ---- edits ----

    def set_key(self, hit, newkey):
        bytenr, leaf, path, s, k = hit
        lf = Leaf(leaf)
        lo = lf.key(s - 1) if s > 0 else None
        hi = lf.key(s + 1) if s + 1 < lf.n() else self.upper_bound(path)
        if (lo is not None and not lo < newkey) or (hi is not None and not newkey < hi):
            raise Refused("key %s would break the order (%s .. %s)" % (newkey, lo, hi))
        put_key(leaf, HDR + ITEM * s, newkey)
        self.mark(bytenr, leaf)
        self.fix_parents(path, s, newkey)

    def delete(self, hit):
        bytenr, leaf, path, s, k = hit
        lf = Leaf(leaf)
        if lf.n() <= 1 and path:
            raise Refused("the only item of a leaf that is not the root")
        lf.delete(s)
        self.mark(bytenr, leaf)
        if s == 0 and lf.n():
            self.fix_parents(path, 0, lf.key(0))

    def insert_after(self, hit, key, data):
        """Insert KEY right after the item HIT (KEY must sort between)."""
        bytenr, leaf, path, s, k = hit
        lf = Leaf(leaf)
        hi = lf.key(s + 1) if s + 1 < lf.n() else self.upper_bound(path)
        if not k < key or (hi is not None and not key < hi):
            raise Refused("key %s does not fit after %s" % (key, k))
        lf.insert(s + 1, key, data)
        self.mark(bytenr, leaf)


def parse_tree(v):
    if v in TREE_NAMES:
        return TREE_NAMES[v]
    if v.startswith("log:") or v == "logroot":
        return v
    return int(v, 0)


def opts(args):
    out = {}
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("--") or i + 1 >= len(args):
            raise SystemExit("bad argument %s\n%s" % (a, __doc__))
        out[a[2:]] = args[i + 1]
        i += 2
    return out


def num(o, name, default=None):
    if name not in o:
        if default is None:
            raise SystemExit("--%s is needed" % name)
        return default
    return int(o[name], 0)


def is_data_extent(im, hit):
    """An EXTENT_ITEM of a data extent (flags bit 0 DATA)."""
    _, leaf, _, s, k = hit
    lf = Leaf(leaf)
    return k[1] == 168 and lf.len(s) >= 24 and get(leaf, lf.data_pos(s) + 16, 8) & 1


def find_data_extent(im, o, min_inline=0):
    """A data EXTENT_ITEM: at --bytenr, or the first with MIN_INLINE inline refs."""
    b = num(o, "bytenr", -1)
    hits = [h for h in im.items(2, lambda k: k[1] == 168 and (b < 0 or k[0] == b))
            if is_data_extent(im, h)]
    if b < 0 and min_inline:
        hits = [h for h in hits if len(inline_refs(h[1], Leaf(h[1]).data_pos(h[3]),
                                                   Leaf(h[1]).len(h[3]))) >= min_inline]
    if not hits:
        raise Refused("no data extent item%s" % ("" if b < 0 else " at %d" % b))
    return hits[0]


def inline_refs(leaf, pos, size):
    """[(position, length, type)] of the inline refs of a data EXTENT_ITEM."""
    out = []
    p, end = pos + 24, pos + size
    sizes = {176: 9, 182: 9, 178: 29, 184: 13}
    while p < end:
        t = leaf[p]
        ln = sizes.get(t)
        if ln is None or p + ln > end:
            break
        out.append((p, ln, t))
        p += ln
    return out


# ---- the damages ----

def d_list(im, o):
    trees = [parse_tree(o["tree"])] if "tree" in o else [1, 2, 3, 4, 5, 7, 9, 10, 11] + \
        im.log_trees()
    t = num(o, "type", -1)
    ino = num(o, "ino", -1)
    for tree in trees:
        try:
            hits = im.items(tree, lambda k: (t < 0 or k[1] == t) and (ino < 0 or k[0] == ino))
        except Refused:
            continue
        for bytenr, leaf, path, s, k in hits:
            print(tree, bytenr, s, k[0], k[1], k[2], Leaf(leaf).len(s))
    return None


def d_nlink(im, o):
    return d_inode(im, dict(o, field="nlink"))


def d_inode(im, o):
    """Any field of imgfuzz.INODE_FIELDS (size, nbytes, nlink, mode, ...)."""
    ino, f = num(o, "ino"), o.get("field", "nlink")
    if f not in imgfuzz.INODE_FIELDS:
        raise SystemExit("unknown inode field %s: %s" % (f, " ".join(imgfuzz.INODE_FIELDS)))
    off, size = imgfuzz.INODE_FIELDS[f]
    tree = parse_tree(o.get("tree", "fs"))
    hit = im.one(tree, lambda k: k == (ino, 1, 0), "inode %d" % ino)
    bytenr, leaf, _, s, _ = hit
    p = Leaf(leaf).data_pos(s) + off
    old = get(leaf, p, size)
    new = num(o, "value") if "value" in o else old + num(o, "delta")
    put(leaf, p, size, new)
    im.mark(bytenr, leaf)
    return "inode %d of tree %s: %s %d -> %d" % (ino, tree, f, old, new)


def d_delete_item(im, o):
    tree = parse_tree(o["tree"])
    key = tuple(int(x, 0) for x in o["key"].split(","))
    hit = im.one(tree, lambda k: k == key, "item %s" % (key,))
    im.delete(hit)
    return "deleted item %s of tree %s" % (key, tree)


def d_extra_backref(im, o):
    hit = find_data_extent(im, o)
    bytenr, leaf, path, s, k = hit
    ghost = 0xFFFF00
    key = (k[0], 178, data_ref_hash(5, ghost, 0))
    data = struct.pack("<QQQI", 5, ghost, 0, 1)
    # after the EXTENT_ITEM and any keyed refs that sort before it
    lf = Leaf(leaf)
    j = s
    while j + 1 < lf.n() and lf.key(j + 1) < key:
        j += 1
    if lf.key(j)[0] != k[0]:
        raise Refused("keyed refs of %d cross the leaf" % k[0])
    im.insert_after((bytenr, leaf, path, j, lf.key(j)), key, data)
    lf = Leaf(leaf)
    p = lf.data_pos(s)
    refs = get(leaf, p, 8)
    put(leaf, p, 8, refs + 1)
    return "extent %d: extra EXTENT_DATA_REF (root 5, inode %d), refs %d -> %d" % (
        k[0], ghost, refs, refs + 1)


def d_drop_inline_ref(im, o):
    hit = find_data_extent(im, o, 2)
    bytenr, leaf, path, s, k = hit
    lf = Leaf(leaf)
    pos, size = lf.data_pos(s), lf.len(s)
    refs = inline_refs(leaf, pos, size)
    if not refs:
        raise Refused("extent %d has no inline ref" % k[0])
    rp, ln, t = refs[-1]
    count = get(leaf, rp + 25, 4) if t == 178 else get(leaf, rp + 9, 4) if t == 184 else 1
    old = get(leaf, pos, 8)
    lf.resize(s, rp - pos, -ln)
    pos = Leaf(leaf).data_pos(s)
    put(leaf, pos, 8, old - count)
    im.mark(bytenr, leaf)
    return "extent %d: inline ref type %d removed, refs %d -> %d" % (k[0], t, old, old - count)


def d_refs(im, o):
    hit = find_data_extent(im, o)
    bytenr, leaf, _, s, k = hit
    p = Leaf(leaf).data_pos(s)
    old = get(leaf, p, 8)
    put(leaf, p, 8, old + num(o, "delta"))
    im.mark(bytenr, leaf)
    return "extent %d: refs %d -> %d" % (k[0], old, old + num(o, "delta"))


def d_bg_used(im, o):
    b = num(o, "bytenr", -1)
    pred = lambda k: k[1] == 192 and (b < 0 or k[0] == b)  # noqa: E731
    hits = []
    for tree in (11, 2):
        try:
            hits = im.items(tree, pred)
        except Refused:
            continue
        if hits:
            break
    if not hits:
        raise Refused("no block group item")
    # a data block group by default (flags at +16, DATA = 1)
    data = [h for h in hits if get(h[1], Leaf(h[1]).data_pos(h[3]) + 16, 8) & 1]
    bytenr, leaf, _, s, k = (data or hits)[0] if b < 0 else hits[0]
    p = Leaf(leaf).data_pos(s)
    old = get(leaf, p, 8)
    put(leaf, p, 8, old + num(o, "delta"))
    im.mark(bytenr, leaf)
    return "block group %d: used %d -> %d" % (k[0], old, old + num(o, "delta"))


def d_dev_used(im, o):
    """bytes_used of the chunk tree's DEV_ITEM (the superblock's copy is
    the super damage's dev_item.bytes_used)."""
    bytenr, leaf, _, s, k = im.one(3, lambda k: k[1] == 216, "device item")
    p = Leaf(leaf).data_pos(s) + 16
    old = get(leaf, p, 8)
    put(leaf, p, 8, old + num(o, "delta"))
    im.mark(bytenr, leaf)
    return "device item %d: bytes_used %d -> %d" % (k[2], old, old + num(o, "delta"))


def d_dir_index(im, o):
    d = num(o, "dir")
    tree = parse_tree(o.get("tree", "fs"))
    hits = im.items(tree, lambda k: k[0] == d and k[1] == 96)
    if not hits:
        raise Refused("directory %d has no DIR_INDEX" % d)
    i = num(o, "index", -1)
    hit = [h for h in hits if h[4][2] == i][0] if i >= 0 else hits[-1]
    new = num(o, "new", hit[4][2] + 100)
    im.set_key(hit, (d, 96, new))
    return "DIR_INDEX (%d 96 %d) -> offset %d" % (d, hit[4][2], new)


def d_overlap(im, o):
    """The first of two adjacent extents made longer by a sector (its disk
    extent has room, so its back reference and bounds stay right; the
    inode's nbytes follows), else the second one's key moved back."""
    tree = parse_tree(o.get("tree", "fs"))
    ino = num(o, "ino", -1)
    ss = im.sectorsize
    hits = im.items(tree, lambda k: k[1] == 108 and (ino < 0 or k[0] == ino))
    pairs = []
    for a, b in zip(hits, hits[1:]):
        pa = Leaf(a[1]).data_pos(a[3])
        if a[4][0] != b[4][0] or a[1][pa + 20] != 1 or a[1][pa + 16]:
            continue
        if a[4][2] + get(a[1], pa + 45, 8) == b[4][2]:
            pairs.append((a, b, pa))
    for a, b, pa in pairs:
        eo, nb, dnb = get(a[1], pa + 37, 8), get(a[1], pa + 45, 8), get(a[1], pa + 29, 8)
        if eo + nb + ss > dnb or not get(a[1], pa + 21, 8):
            continue
        inode = im.one(tree, lambda k: k == (a[4][0], 1, 0), "inode %d" % a[4][0])
        put(a[1], pa + 45, 8, nb + ss)
        im.mark(a[0], a[1])
        ib = im.block(inode[0])
        ip = Leaf(ib).data_pos(inode[3])
        put(ib, ip + 24, 8, get(ib, ip + 24, 8) + ss)
        im.mark(inode[0], ib)
        return "inode %d: file extent at %d made %d bytes long, into the one at %d" % (
            a[4][0], a[4][2], nb + ss, b[4][2])
    for a, b, pa in pairs:
        if b[4][2] - a[4][2] < 2 * ss:
            continue
        new = b[4][2] - ss
        im.set_key(b, (b[4][0], 108, new))
        return "inode %d: file extent at %d moved to %d, into the one at %d" % (
            b[4][0], b[4][2], new, a[4][2])
    raise Refused("no file with two adjacent regular extents")


def csum_hit(im, o, min_len):
    b = num(o, "bytenr", -1)
    for h in im.items(7, lambda k: k[0] == CSUM_OBJ and k[1] == 128 and (b < 0 or k[2] == b)):
        if Leaf(h[1]).len(h[3]) >= min_len:
            return h
    raise Refused("no csum item long enough")


def d_csum_shorten(im, o):
    k_ = num(o, "count", 1)
    hit = csum_hit(im, o, (k_ + 1) * im.csize)
    bytenr, leaf, _, s, k = hit
    lf = Leaf(leaf)
    ln = lf.len(s)
    lf.resize(s, ln - k_ * im.csize, -k_ * im.csize)
    im.mark(bytenr, leaf)
    end = k[2] + (ln // im.csize) * im.sectorsize
    return "csum item at %d: last %d checksums dropped (data %d..%d has none)" % (
        k[2], k_, end - k_ * im.sectorsize, end)


def d_csum_delete(im, o):
    hit = csum_hit(im, o, im.csize)
    im.delete(hit)
    return "csum item at %d deleted" % hit[4][2]


def d_fst_extent(im, o):
    sh = num(o, "shrink", im.sectorsize)
    for h in im.items(10, lambda k: k[1] == 199):
        if h[4][2] > sh:
            bytenr, leaf, path, s, k = h
            im.set_key(h, (k[0], k[1], k[2] - sh))
            return "free space extent %d+%d -> length %d" % (k[0], k[2], k[2] - sh)
    raise Refused("no free space extent")


def d_fst_bitmap(im, o):
    hits = im.items(10, lambda k: k[1] == 200)
    if not hits:
        raise Refused("no free space bitmap")
    bytenr, leaf, _, s, k = hits[0]
    p = Leaf(leaf).data_pos(s)
    leaf[p] ^= 1
    im.mark(bytenr, leaf)
    return "free space bitmap %d+%d: bit 0 flipped" % (k[0], k[2])


def d_super(im, o):
    f = o["field"]
    if f not in imgfuzz.SUPER_FIELDS:
        raise SystemExit("unknown field %s: %s" % (f, " ".join(imgfuzz.SUPER_FIELDS)))
    off, size = imgfuzz.SUPER_FIELDS[f]
    old = get(im.sb, off, size)
    new = num(o, "value") if "value" in o else old + num(o, "delta")
    for i, soff, sb in imgfuzz.read_supers(im.path):
        if imgfuzz.super_problem(sb, i) is not None:
            continue
        put(sb, off, size, new)
        imgfuzz.seal(sb, im.ctype)
        im.f.seek(soff)
        im.f.write(sb)
    return "superblock %s %d -> %d (all mirrors)" % (f, old, new)


def logged_regular_extent(im):
    for t in im.log_trees():
        for h in im.items(t, lambda k: k[1] == 108):
            lf = Leaf(h[1])
            p = lf.data_pos(h[3])
            if lf.len(h[3]) >= 53 and h[1][p + 20] == 1 and get(h[1], p + 21, 8):
                return t, h, p
    raise Refused("no logged regular file extent")


def d_log_extent(im, o):
    t, hit, p = logged_regular_extent(im)
    bytenr, leaf, _, s, k = hit
    target = o.get("target", "data")
    old = get(leaf, p + 21, 8)
    if target == "tree":
        new, length = sget(im.sb, "root"), im.nodesize
    else:
        new = length = None
        sub = int(t.split(":")[1])
        inside = target == "data"
        for h in im.items(sub, lambda kk: kk[1] == 108 and kk[0] != k[0]):
            q = Leaf(h[1]).data_pos(h[3])
            db, dl = get(h[1], q + 21, 8), get(h[1], q + 29, 8)
            if h[1][q + 20] != 1 or not db or db == old:
                continue
            if not inside:
                new, length = db, dl
                break
            if dl >= 2 * im.sectorsize:
                # a sector inside it: no extent item starts there, so the
                # replay must allocate space that is in use
                new, length = db + im.sectorsize, im.sectorsize
                break
        if new is None:
            raise Refused("no committed extent of another inode")
    num_bytes = min(get(leaf, p + 45, 8), length)
    put(leaf, p + 21, 8, new)
    put(leaf, p + 29, 8, length)
    put(leaf, p + 37, 8, 0)
    put(leaf, p + 45, 8, num_bytes)
    put(leaf, p + 8, 8, length)
    leaf[p + 16] = 0
    im.mark(bytenr, leaf)
    return "%s inode %d extent at %d: disk_bytenr %d -> %d (%s), length %d" % (
        t, k[0], k[2], old, new, "a tree block" if target == "tree" else
        "another inode's committed extent", num_bytes)


def d_log_ref_missing_dir(im, o):
    for t in im.log_trees():
        hits = im.items(t, lambda k: k[1] == 12 and k[0] >= 256)
        # the last INODE_REF of its inode, so a bigger parent keeps the order
        for i, h in enumerate(hits):
            if i + 1 < len(hits) and hits[i + 1][4][0] == h[4][0]:
                continue
            k = h[4]
            new = 0xF0000000 + k[0]
            try:
                im.set_key(h, (k[0], 12, new))
            except Refused:
                continue
            return "%s: INODE_REF (%d 12 %d) -> parent %d, which does not exist" % (
                t, k[0], k[2], new)
    raise Refused("no logged INODE_REF")


def d_log_item_size(im, o):
    for t in im.log_trees():
        for leaf, _ in im.walk(*im.tree_root(t)):
            lf = Leaf(leaf)
            n = lf.n()
            if n < 2:
                continue
            s = 0      # the first item's data is at the end of the leaf
            old = lf.len(s)
            put(leaf, HDR + ITEM * s + 21, 4, old + 64)
            im.mark(get(leaf, 48, 8), leaf)
            return "%s leaf %d slot %d %s: size %d -> %d (past the leaf's end)" % (
                t, get(leaf, 48, 8), s, lf.key(s), old, old + 64)
    raise Refused("no log leaf")


DAMAGES = {
    "list": d_list, "nlink": d_nlink, "inode": d_inode, "delete-item": d_delete_item,
    "extra-backref": d_extra_backref, "drop-inline-ref": d_drop_inline_ref,
    "refs": d_refs, "bg-used": d_bg_used, "dev-used": d_dev_used,
    "dir-index": d_dir_index, "overlap": d_overlap,
    "csum-shorten": d_csum_shorten, "csum-delete": d_csum_delete,
    "fst-extent": d_fst_extent, "fst-bitmap": d_fst_bitmap, "super": d_super,
    "log-extent": d_log_extent, "log-ref-missing-dir": d_log_ref_missing_dir,
    "log-item-size": d_log_item_size,
}


def main(argv):
    if len(argv) < 3 or argv[2] not in DAMAGES:
        raise SystemExit(__doc__)
    o = opts(argv[3:])
    try:
        im = Image(argv[1])
        msg = DAMAGES[argv[2]](im, o)
    except Refused as e:
        print("damage.py: refused: %s" % e, file=sys.stderr)
        return 2
    if msg is not None:
        im.flush()
        print(msg)
    im.f.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except BrokenPipeError:
        sys.exit(0)
