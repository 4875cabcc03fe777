#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Damage btrfs images where their checksums do not see it, and judge what
a writer or the checker made of them.  Used by tests/kernel/450-replay-fuzz.sh,
tests/kernel/460-writer-fuzz.sh, tests/cli/330-check-mutate.sh and
tests/kernel/600-check-mutate-kernel.sh.

Every change re-seals the checksum of what it touched (tree block or
superblock, in the image's csum type) in every copy it changes, so the
damage reaches the code past the checksum checks.

  leaves LOG_JSON CHUNK_JSON
      "bytenr phys..." for every leaf of dump-tree JSON LOG_JSON, mapped
      through the chunk tree of dump-tree JSON CHUNK_JSON
  damage-leaf IMG SEED LEAVES NODESIZE
      change 1-8 bytes of one leaf of the list LEAVES (from "leaves") past
      its header, mostly in the item headers, and re-seal every copy
  layout IMG CHUNK_JSON LOG_JSON ROOTS_JSON
      what "mutate" needs to know about an undamaged image, as JSON
  mutate IMG LAYOUT SEED INDEX
      apply mutant INDEX of SEED (the first ones are the same for every
      seed, see pinned()), print its spec
  apply IMG LAYOUT SPEC
      apply one spec (as "mutate" prints it)
  count-pinned LAYOUT
      how many mutants every seed starts with
  mutate-all IMG LAYOUT SEED DIR INDEX...
      DIR/INDEX.img for each INDEX: a copy of IMG with that mutant applied;
      prints "INDEX SPEC (what it changed)"
  verify BEFORE [WRITER RC STDOUT STDERR AFTER]...
      judge writers (replay, dry-run, zero-log) that exited RC on a copy
      AFTER of the image BEFORE: prints "WRITER ok TAG" (TAG: replayed,
      zeroed, nolog, would-replay, refused, refused-cow) or a line
      "WRITER fail PROBLEM" per problem; exits 1 if there was a problem
"""
import errno
import fcntl
import hashlib
import json
import os
import random
import struct
import sys

SUPER_OFFSETS = (65536, 64 << 20, 256 << 30)
SUPER_SIZE = 4096
MAGIC = 0x4D5F53665248425F
U64 = (1 << 64) - 1

# ---- checksums ----

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    t = _CRC_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


_P1, _P2, _P3, _P4, _P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                           0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & U64


def _xxround(acc, v):
    return (_rotl((acc + v * _P2) & U64, 31) * _P1) & U64


def xxh64(data, seed=0):
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & U64, (seed + _P2) & U64, seed, (seed - _P1) & U64]
        lanes = struct.unpack_from("<%dQ" % (n // 32 * 4), data)
        for j in range(0, len(lanes), 4):
            v = [_xxround(v[k], lanes[j + k]) for k in range(4)]
        i = n // 32 * 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & U64
        for k in range(4):
            h = ((h ^ _xxround(0, v[k])) * _P1 + _P4) & U64
    else:
        h = (seed + _P5) & U64
    h = (h + n) & U64
    while i + 8 <= n:
        h ^= _xxround(0, struct.unpack_from("<Q", data, i)[0])
        h = (_rotl(h, 27) * _P1 + _P4) & U64
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * _P1) & U64
        h = (_rotl(h, 23) * _P2 + _P3) & U64
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & U64
        h = (_rotl(h, 11) * _P1) & U64
        i += 1
    h ^= h >> 33
    h = (h * _P2) & U64
    h ^= h >> 29
    h = (h * _P3) & U64
    h ^= h >> 32
    return h


CSUM_NAMES = {0: "crc32c", 1: "xxhash64", 2: "sha256", 3: "blake2b"}


def csum(ctype, data):
    """The 32-byte csum field for DATA in csum type CTYPE (None: unknown type)."""
    if ctype == 0:
        d = crc32c(data).to_bytes(4, "little")
    elif ctype == 1:
        d = xxh64(bytes(data)).to_bytes(8, "little")
    elif ctype == 2:
        d = hashlib.sha256(data).digest()
    elif ctype == 3:
        d = hashlib.blake2b(data, digest_size=32).digest()
    else:
        return None
    return d + bytes(32 - len(d))


def csum_size(ctype):
    return {0: 4, 1: 8, 2: 32, 3: 32}.get(ctype, 0)


def seal(buf, ctype):
    """Recompute the checksum of a tree block or superblock in place."""
    c = csum(ctype, bytes(buf[32:]))
    if c is not None:
        buf[0:32] = c


# ---- superblock ----

SUPER_FIELDS = {
    "bytenr": (48, 8), "flags": (56, 8), "magic": (64, 8), "generation": (72, 8),
    "root": (80, 8), "chunk_root": (88, 8), "log_root": (96, 8),
    "log_root_transid": (104, 8), "total_bytes": (112, 8), "bytes_used": (120, 8),
    "num_devices": (136, 8), "sectorsize": (144, 4), "nodesize": (148, 4),
    "leafsize": (152, 4), "stripesize": (156, 4), "sys_chunk_array_size": (160, 4),
    "chunk_root_generation": (164, 8), "incompat_flags": (188, 8), "csum_type": (196, 2),
    "root_level": (198, 1), "chunk_root_level": (199, 1), "log_root_level": (200, 1),
    "dev_item.devid": (201, 8), "dev_item.total_bytes": (209, 8),
    "dev_item.bytes_used": (217, 8), "dev_item.sector_size": (233, 4),
}
SYS_ARRAY = 811


def get(buf, off, size):
    return int.from_bytes(buf[off:off + size], "little")


def put(buf, off, size, val):
    buf[off:off + size] = (val & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def sget(sb, name):
    return get(sb, *SUPER_FIELDS[name])


def pow2(n):
    return n > 0 and n & (n - 1) == 0


def super_problem(sb, mirror):
    """Why tlogctl would not use superblock copy MIRROR (None: it would).
    The checks of btrfs_validate_super that the mutations can reach."""
    if sget(sb, "magic") != MAGIC:
        return "no magic"
    ctype = sget(sb, "csum_type")
    if ctype not in CSUM_NAMES:
        return "unknown csum type %d" % ctype
    if bytes(sb[0:csum_size(ctype)]) != csum(ctype, bytes(sb[32:]))[:csum_size(ctype)]:
        return "checksum mismatch"
    if sget(sb, "bytenr") != SUPER_OFFSETS[mirror]:
        return "bytenr"
    ss, ns = sget(sb, "sectorsize"), sget(sb, "nodesize")
    if not pow2(ss) or ss < 4096 or ss > 65536:
        return "sectorsize"
    if not pow2(ns) or ns < ss or ns > 65536:
        return "nodesize"
    if sget(sb, "leafsize") != ns:
        return "leafsize"
    if not pow2(sget(sb, "stripesize")):
        return "stripesize"
    if max(sget(sb, "root_level"), sget(sb, "chunk_root_level"), sget(sb, "log_root_level")) >= 8:
        return "level"
    if any(sget(sb, f) % ss for f in ("root", "chunk_root", "log_root")):
        return "unaligned root"
    if not sget(sb, "root") or not sget(sb, "chunk_root"):
        return "zero root"
    if sget(sb, "num_devices") != 1:
        return "num_devices"
    if sget(sb, "bytes_used") < 6 * ns:
        return "bytes_used"
    if sget(sb, "sys_chunk_array_size") > 2048:
        return "sys_chunk_array_size"
    return None


def read_supers(path):
    """[(mirror, offset, bytearray)] of the copies inside the file."""
    size = os.stat(path).st_size
    out = []
    with open(path, "rb") as f:
        for i, off in enumerate(SUPER_OFFSETS):
            if off + SUPER_SIZE <= size:
                f.seek(off)
                out.append((i, off, bytearray(f.read(SUPER_SIZE))))
    return out


def chosen_super(supers):
    """The copy tlogctl opens (btrfs_load_super): the valid one with the
    highest generation, the first on a tie; None if there is none."""
    best = None
    for i, off, sb in supers:
        if super_problem(sb, i) is None:
            if best is None or sget(sb, "generation") > sget(best[2], "generation"):
                best = (i, off, sb)
    return best


def sys_array_entries(sb):
    """[(position of the key in sb, position of the chunk item, num_stripes)]"""
    out = []
    size = min(sget(sb, "sys_chunk_array_size"), 2048)
    cur = 0
    while cur + 17 + 48 <= size:
        chunk = SYS_ARRAY + cur + 17
        n = get(sb, chunk + 44, 2)
        out.append((SYS_ARRAY + cur, chunk, n))
        cur += 17 + 48 + 32 * n
    return out


# ---- tree blocks ----

CHUNK_FIELDS = {
    "length": (0, 8), "owner": (8, 8), "stripe_len": (16, 8), "type": (24, 8),
    "io_align": (32, 4), "io_width": (36, 4), "sector_size": (40, 4),
    "num_stripes": (44, 2), "sub_stripes": (46, 2),
}
DEV_FIELDS = {
    "devid": (0, 8), "total_bytes": (8, 8), "bytes_used": (16, 8), "sector_size": (32, 4),
}
HEADER_FIELDS = {
    "bytenr": (48, 8), "flags": (56, 8), "generation": (80, 8), "owner": (88, 8),
    "nritems": (96, 4), "level": (100, 1),
}
FILE_EXTENT_FIELDS = {
    "generation": (0, 8), "ram_bytes": (8, 8), "compression": (16, 1), "type": (20, 1),
    "disk_bytenr": (21, 8), "disk_num_bytes": (29, 8), "offset": (37, 8), "num_bytes": (45, 8),
}
INODE_FIELDS = {
    "generation": (0, 8), "transid": (8, 8), "size": (16, 8), "nbytes": (24, 8),
    "nlink": (40, 4), "mode": (52, 4), "flags": (64, 8),
}
ROOT_ITEM_FIELDS = {"generation": (160, 8), "bytenr": (176, 8), "level": (238, 1),
                    "generation_v2": (239, 8)}
KEY_FIELDS = {"key.objectid": (0, 8), "key.type": (8, 1), "key.offset": (9, 8)}


def chunk_field(name):
    """(offset in the chunk item, size) of a CHUNK_FIELDS name or stripeN.devid/offset"""
    if name in CHUNK_FIELDS:
        return CHUNK_FIELDS[name]
    s, f = name.split(".")
    n = int(s[len("stripe"):])
    return (48 + 32 * n + (0 if f == "devid" else 8), 8)


def leaf_items(blk):
    """[(slot, header position, (objectid, type, offset), data position, size)]"""
    out = []
    for i in range(min(get(blk, 96, 4), (len(blk) - 101) // 25)):
        h = 101 + 25 * i
        key = (get(blk, h, 8), blk[h + 8], get(blk, h + 9, 8))
        out.append((i, h, key, 101 + get(blk, h + 17, 4), get(blk, h + 21, 4)))
    return out


class Image:
    """An image opened for damage: its layout and block/superblock access."""

    def __init__(self, path, layout):
        self.path = path
        self.lay = layout
        self.ctype = layout["csum_type"]
        self.nodesize = layout["nodesize"]
        self.f = open(path, "r+b")

    def read_block(self, copies):
        self.f.seek(copies[0])
        return bytearray(self.f.read(self.nodesize))

    def write_block(self, copies, blk):
        seal(blk, self.ctype)
        for off in copies:
            self.f.seek(off)
            self.f.write(blk)

    def supers(self, scope):
        out = []
        for i, off in enumerate(SUPER_OFFSETS):
            if off + SUPER_SIZE > self.lay["size"] or (scope == "primary" and i):
                continue
            self.f.seek(off)
            out.append((off, bytearray(self.f.read(SUPER_SIZE))))
        return out

    def write_super(self, off, sb, ctype=None):
        seal(sb, sget(sb, "csum_type") if ctype is None else ctype)
        self.f.seek(off)
        self.f.write(sb)

    def close(self):
        self.f.close()


def block_copies(chunks, bytenr):
    for c in chunks:
        if c["logical"] <= bytenr < c["logical"] + c["length"]:
            return [s + bytenr - c["logical"] for s in c["stripes"]]
    return []


def chunks_of(chunk_json):
    chunks = []
    for t in chunk_json["trees"]:
        for b in t["blocks"]:
            for it in b.get("items", []):
                if it["key"]["type"] == 228:
                    d = it["data"]
                    chunks.append({"logical": it["key"]["offset"], "length": d["length"],
                                   "type": d["type"] if isinstance(d["type"], int) else None,
                                   "stripes": [s["offset"] for s in d["stripes"]]})
    return chunks


def blocks_of(tree_json, chunks, leaves_only=False):
    out = []
    for t in tree_json["trees"]:
        for b in t["blocks"]:
            if leaves_only and b.get("level", 0) != 0:
                continue
            copies = block_copies(chunks, b["bytenr"])
            if copies:
                out.append({"bytenr": b["bytenr"], "level": b.get("level", 0),
                            "tree": t.get("name", ""), "copies": copies})
    return out


# ---- 450: random bytes of a log leaf ----

def cmd_leaves(log_path, chunk_path):
    log, chunk = (json.load(open(p)) for p in (log_path, chunk_path))
    for b in blocks_of(log, chunks_of(chunk), leaves_only=True):
        print(b["bytenr"], " ".join(str(c) for c in b["copies"]))


def damage_leaf(f, rng, rows, nodesize, ctype):
    """450's damage: 1-8 bytes of one leaf of ROWS ([bytenr, copy...]) past
    its header, mostly item headers and the item data they point at."""
    bytenr, *copies = rng.choice(rows)
    f.seek(int(copies[0]))
    blk = bytearray(f.read(nodesize))
    nritems = int.from_bytes(blk[96:100], "little")
    hdr_end = 101 + 25 * nritems
    changed = []
    for _ in range(rng.randint(1, 8)):
        if rng.random() < 0.5:
            pos = rng.randrange(101, max(hdr_end, 102))
        else:
            pos = rng.randrange(101, nodesize)
        blk[pos] = rng.choice([0, 0xFF, rng.randrange(256), blk[pos] ^ (1 << rng.randrange(8))])
        changed.append(pos)
    seal(blk, ctype)
    for off in copies:
        f.seek(int(off))
        f.write(blk)
    return int(bytenr), changed


def image_csum_type(path):
    with open(path, "rb") as f:
        f.seek(SUPER_OFFSETS[0])
        return get(f.read(SUPER_SIZE), *SUPER_FIELDS["csum_type"])


def cmd_damage_leaf(img, seed, leaves, nodesize):
    rows = [line.split() for line in open(leaves) if line.strip()]
    with open(img, "r+b") as f:
        damage_leaf(f, random.Random(int(seed)), rows, int(nodesize), image_csum_type(img))


# ---- 460: the mutants ----

def cmd_layout(img, chunk_path, log_path, roots_path):
    chunk, log, roots = (json.load(open(p)) for p in (chunk_path, log_path, roots_path))
    chunks = chunks_of(chunk)
    supers = read_supers(img)
    sb = supers[0][2]
    lay = {
        "size": os.stat(img).st_size,
        "csum_type": sget(sb, "csum_type"),
        "nodesize": sget(sb, "nodesize"),
        "sectorsize": sget(sb, "sectorsize"),
        "generation": sget(sb, "generation"),
        "bytes_used": sget(sb, "bytes_used"),
        "super": {k: sget(sb, k) for k in ("root", "chunk_root", "log_root", "total_bytes",
                                           "dev_item.total_bytes", "sys_chunk_array_size")},
        "chunks": chunks,
        "chunk_blocks": blocks_of(chunk, chunks),
        "log_blocks": blocks_of(log, chunks),
        "roots": sorted({b["bytenr"] for t in roots["trees"] for b in t["blocks"]}),
    }
    # the chunk types, from the chunk tree leaves themselves
    im = Image(img, lay)
    for b in lay["chunk_blocks"]:
        blk = im.read_block(b["copies"])
        if blk[100] == 0:
            for _, _, key, data, _ in leaf_items(blk):
                if key[1] == 228:
                    for c in chunks:
                        if c["logical"] == key[2]:
                            c["type"] = get(blk, data + 24, 8)
    im.close()
    json.dump(lay, sys.stdout)


SYSTEM, METADATA, DATA, DUP = 2, 4, 1, 32


def find_chunk(lay, kind):
    for c in lay["chunks"]:
        if c["type"] is not None and c["type"] & kind:
            return c
    return lay["chunks"][0]


def pinned(lay):
    """Mutants every seed starts with: the bugs known so far and the edges
    of each class."""
    S = lay["size"]
    meta, sysc, data = (find_chunk(lay, k) for k in (METADATA, SYSTEM, DATA))
    last = len(meta["stripes"]) - 1
    out = [
        "super/primary/dev_item.total_bytes=0",
        "super/all/dev_item.total_bytes=0",
        "chunktree/%d/stripe%d.offset=%d" % (meta["logical"], last, 1 << 50),
        "chunktree/%d/stripe0.offset=%d" % (meta["logical"], S),
        "chunktree/%d/stripe%d.offset=%d" % (meta["logical"], last, S - lay["nodesize"]),
        "chunkboth/all/%d/stripe%d.offset=%d" % (sysc["logical"], len(sysc["stripes"]) - 1,
                                                 1 << 50),
        "chunktree/%d/stripe0.offset=%d" % (data["logical"], 1 << 50),
        "chunktree/%d/length=%d" % (meta["logical"], meta["length"] * 64),
        "devitem/total_bytes=0",
        "devitem/total_bytes=%d" % (1 << 60),
        "super/all/dev_item.total_bytes=%d" % (S // 4),
        "super/primary/dev_item.total_bytes=%d" % (SUPER_OFFSETS[1] + SUPER_SIZE),
        "super/all/total_bytes=%d" % (1 << 60),
        "super/primary/log_root=0",
        "super/primary/generation=%d" % (lay["generation"] + 1),
        "super/all/nodesize+leafsize=%d" % (lay["nodesize"] * 2),
    ]
    return out


def random_spec(lay, rng, cls):
    S, ns, ss = lay["size"], lay["nodesize"], lay["sectorsize"]
    gen = lay["generation"]
    sup = lay["super"]
    scope = rng.choice(["primary", "primary", "all"])
    chunks = lay["chunks"]
    if cls == "chunk":
        what = rng.choice(["chunktree"] * 5 + ["sysarray"] * 2 + ["chunkboth"] * 2 +
                          ["devitem"] * 2)
        if what == "devitem":
            field = rng.choice(["total_bytes"] * 3 + ["bytes_used", "devid", "sector_size"])
            cur = sup["dev_item.total_bytes"]
            val = {
                "total_bytes": rng.choice([0, 4096, S // 2, S // 4, S - (1 << 20), S - 1,
                                           S + 4096, 2 * S, 1 << 60, U64]),
                "bytes_used": rng.choice([0, 1, cur * 2, U64]),
                "devid": rng.choice([0, 2, U64]),
                "sector_size": rng.choice([0, 512, 8192, 65536]),
            }[field]
            return "devitem/%s=%d" % (field, val)
        if what == "chunktree":
            c = rng.choice(chunks)
        else:
            c = find_chunk(lay, SYSTEM)
        n = len(c["stripes"])
        field = rng.choice(["stripe.offset"] * 6 + ["length"] * 3 + ["num_stripes"] * 2 +
                           ["type"] * 2 + ["stripe.devid", "sub_stripes", "stripe_len",
                                           "sector_size", "key.offset"])
        if field.startswith("stripe."):
            k = rng.randrange(n)
            field = "stripe%d.%s" % (k, field.split(".")[1])
        cur_off = c["stripes"][0]
        others = [s for x in chunks for s in x["stripes"] if s != cur_off]
        val = {
            "length": lambda: rng.choice([0, ss, c["length"] // 2, c["length"] * 2,
                                          c["length"] + S, 1 << 62, U64 - ss + 1,
                                          c["length"] + 1, S, c["length"] + ns]),
            "num_stripes": lambda: rng.choice([0, 1, 2, 3, 4, 0xFFFF]),
            "sub_stripes": lambda: rng.choice([0, 2, 0xFFFF]),
            "stripe_len": lambda: rng.choice([0, 4096, 1 << 20, U64]),
            "sector_size": lambda: rng.choice([0, 512, 8192, 65536]),
            "type": lambda: rng.choice([
                (c["type"] or 0) ^ DUP, (c["type"] or 0) ^ (1 << rng.randrange(11)),
                DATA, METADATA, SYSTEM, METADATA | DUP, SYSTEM | DUP, DATA | DUP,
                METADATA | 8, METADATA | 16, METADATA | 64, 0, U64]),
            "key.offset": lambda: rng.choice([c["logical"] + ss, c["logical"] + ns,
                                              c["logical"] - ns, c["logical"] + c["length"],
                                              0, 1 << 50]),
        }
        if field.endswith(".devid"):
            v = rng.choice([0, 2, U64])
        elif field.endswith(".offset") and field.startswith("stripe"):
            v = rng.choice([S, S - ns, S - c["length"] + ss, S + (1 << 30), 1 << 50,
                            1 << 58, U64 - 65535, 0, rng.choice(others or [0]),
                            cur_off + 65536, cur_off - (1 << 20), cur_off + 1,
                            rng.randrange(0, S // ss) * ss])
        else:
            v = val[field]()
        if what == "chunktree":
            return "chunktree/%d/%s=%d" % (c["logical"], field, v)
        return "%s/%s/%d/%s=%d" % (what, scope, c["logical"], field, v)
    if cls == "super":
        field = rng.choice(["dev_item.total_bytes"] * 4 + ["total_bytes"] * 2 +
                           ["bytes_used"] * 2 + ["root", "chunk_root"] + ["log_root"] * 3 +
                           ["root_level", "chunk_root_level", "log_root_level"] +
                           ["generation"] * 2 + ["chunk_root_generation", "sectorsize",
                                                 "nodesize+leafsize", "nodesize",
                                                 "num_devices", "sys_chunk_array_size",
                                                 "csum_type", "dev_item.bytes_used",
                                                 "dev_item.devid"])
        if field == "dev_item.total_bytes":
            v = rng.choice([0, 4096, SUPER_OFFSETS[0] + SUPER_SIZE,
                            SUPER_OFFSETS[1] + SUPER_SIZE, SUPER_OFFSETS[1] + SUPER_SIZE + 1,
                            S // 2, S // 4, S - (1 << 20), S - 4096, S - 1, S + 4096, 2 * S,
                            1 << 60, U64])
        elif field == "total_bytes":
            v = rng.choice([0, 4096, S // 2, S - 4096, S + 4096, 2 * S, 1 << 60, U64])
        elif field == "bytes_used":
            bu = lay["bytes_used"]
            v = rng.choice([0, 6 * ns - 1, 6 * ns, bu // 2, bu * 2, bu + ns, 1 << 60, U64])
        elif field in ("root", "chunk_root", "log_root"):
            cur = sup[field]
            targets = [r for r in lay["roots"] if r != cur] + \
                [b["bytenr"] for b in lay["log_blocks"] if b["bytenr"] != cur]
            v = rng.choice([0, cur + ns, cur - ns, cur + ss, cur + 2048, 1 << 50, U64 - 4095,
                            cur + (1 << 30), find_chunk(lay, DATA)["logical"],
                            find_chunk(lay, SYSTEM)["logical"]] + targets * 2)
        elif field.endswith("_level"):
            v = rng.choice([0, 1, 2, 7, 8, 255])
        elif field == "generation":
            v = rng.choice([0, 1, gen - 1, gen + 1, gen + 100, U64])
        elif field == "chunk_root_generation":
            v = rng.choice([0, gen - 1, gen + 1, U64])
        elif field == "sectorsize":
            v = rng.choice([0, 512, 2048, 8192, 16384, 65536, 4097])
        elif field.startswith("nodesize"):
            v = rng.choice([0, 4096, 8192, 32768, 65536, 131072, ns + 1, ns // 2])
        elif field == "num_devices":
            v = rng.choice([0, 2, U64])
        elif field == "sys_chunk_array_size":
            cur = sup["sys_chunk_array_size"]
            v = rng.choice([0, 17, 96, 97, cur - 1, cur + 1, cur + 32, 2048, 2049, 4096])
        elif field == "csum_type":
            v = rng.choice([0, 1, 2, 3, 4, 0xFFFF])
        elif field == "dev_item.devid":
            v = rng.choice([0, 2, U64])
        else:
            v = rng.choice([0, 1, U64])
        return "super/%s/%s=%d" % (scope, field, v)
    # log blocks
    blocks = lay["log_blocks"]
    what = rng.choice(["logleaf"] * 4 + ["logitem"] * 4 + ["loghdr"] * 2 + ["logroot"])
    if what == "logleaf":
        return "logleaf/%d" % rng.randrange(1 << 30)
    if what == "loghdr":
        b = rng.choice(blocks)
        field = rng.choice(list(HEADER_FIELDS))
        cur = {"bytenr": b["bytenr"], "generation": gen + 1, "level": b["level"]}.get(field, 0)
        v = {
            "bytenr": rng.choice([cur + ns, cur - ns, 0, U64 - 4095]),
            "flags": rng.choice([0, 1, 3, U64]),
            "generation": rng.choice([0, gen, gen + 2, U64]),
            "owner": rng.choice([0, 1, 5, 7, U64 - 6]),
            "nritems": rng.choice([0, 1, 2, 1000, 0xFFFFFFFF]),
            "level": rng.choice([cur + 1, 7, 8, 255]),
        }[field]
        return "loghdr/%d/%s=%d" % (b["bytenr"], field, v)
    if what == "logroot":
        field = rng.choice(list(ROOT_ITEM_FIELDS))
        v = {
            "generation": rng.choice([0, gen, gen + 2, U64]),
            "generation_v2": rng.choice([0, gen, U64]),
            "bytenr": rng.choice([0, 1 << 50, U64 - 4095] + lay["roots"] +
                                 [b["bytenr"] for b in blocks]),
            "level": rng.choice([1, 2, 7, 8, 255]),
        }[field]
        return "logroot/any/%s=%d" % (field, v)
    # logitem: a field of a file extent, inode or csum item of the log
    kind = rng.choice(["extent"] * 3 + ["inode"] * 2 + ["csumkey", "key"])
    if kind == "extent":
        field = rng.choice(["disk_bytenr"] * 3 + ["disk_num_bytes", "offset", "num_bytes",
                                                  "ram_bytes", "type", "compression",
                                                  "generation"])
        v = {
            "disk_bytenr": rng.choice([0, S, S + (1 << 30), 1 << 50, U64 - 4095, ss,
                                       find_chunk(lay, METADATA)["logical"],
                                       find_chunk(lay, SYSTEM)["logical"]]),
            "disk_num_bytes": rng.choice([0, ss, S, 1 << 50, U64 - 4095]),
            "offset": rng.choice([ss, 1 << 40, U64 - 4095]),
            "num_bytes": rng.choice([0, ss, S, 1 << 50, U64 - 4095]),
            "ram_bytes": rng.choice([0, ss, 1 << 50]),
            "type": rng.choice([0, 1, 2, 3, 255]),
            "compression": rng.choice([1, 2, 3, 4, 255]),
            "generation": rng.choice([0, gen + 5, U64]),
        }[field]
        return "logitem/extent/%d/%s=%d" % (rng.randrange(1 << 16), field, v)
    if kind == "inode":
        field = rng.choice(list(INODE_FIELDS))
        v = rng.choice([0, 1, 0xFFFFFFFF, 1 << 40, U64, gen + 5])
        return "logitem/inode/%d/%s=%d" % (rng.randrange(1 << 16), field, v)
    if kind == "csumkey":
        v = rng.choice([0, S, 1 << 50, U64 - 4095, find_chunk(lay, METADATA)["logical"]])
        return "logitem/csum/%d/key.offset=%d" % (rng.randrange(1 << 16), v)
    field = rng.choice(list(KEY_FIELDS))
    v = rng.choice([0, 1, 5, 256, 0xFF, U64, 1 << 50])
    return "logitem/any/%d/%s=%d" % (rng.randrange(1 << 16), field, v)


CLASSES = ("chunk", "super", "log")


def spec_of(lay, seed, index):
    p = pinned(lay)
    if index <= len(p):
        return p[index - 1]
    rng = random.Random("%s:%d" % (seed, index))
    return random_spec(lay, rng, CLASSES[(index - len(p) - 1) % len(CLASSES)])


def apply_spec(img, lay, spec):
    """Apply SPEC to IMG; returns what it changed (for the reproducer line)."""
    im = Image(img, lay)
    try:
        return _apply(im, lay, spec)
    finally:
        im.close()


def _assign(buf, pos, size, expr):
    field, val = expr.split("=")
    old = get(buf, pos, size)
    put(buf, pos, size, int(val))
    return "was %d" % old


def _apply(im, lay, spec):
    parts = spec.split("/")
    head = parts[0]
    if head == "super":
        scope, expr = parts[1], parts[2]
        field, val = expr.split("=")
        notes = []
        for off, sb in im.supers(scope):
            ctype = sget(sb, "csum_type")
            for f in field.split("+"):
                notes.append(_assign(sb, *SUPER_FIELDS[f], "%s=%s" % (f, val)))
            if field == "csum_type" and int(val) in CSUM_NAMES:
                ctype = int(val)
            im.write_super(off, sb, ctype)
        return notes[0] if notes else "no copy"
    if head in ("sysarray", "chunkboth"):
        scope, logical, expr = parts[1], int(parts[2]), parts[3]
        note = "not in the sys_chunk_array"
        for off, sb in im.supers(scope):
            for keypos, chunk, n in sys_array_entries(sb):
                if get(sb, keypos + 9, 8) != logical:
                    continue
                field = expr.split("=")[0]
                if field == "key.offset":
                    note = _assign(sb, keypos + 9, 8, expr)
                else:
                    o, s = chunk_field(field)
                    if o + s > 48 + 32 * n:
                        note = "field outside the item"
                        break
                    note = _assign(sb, chunk + o, s, expr)
                im.write_super(off, sb)
                break
        if head == "sysarray":
            return note
        note2 = _apply(im, lay, "chunktree/%d/%s" % (logical, expr))
        return "%s; chunk tree: %s" % (note, note2)
    if head in ("chunktree", "devitem"):
        expr = parts[-1]
        field = expr.split("=")[0]
        for b in lay["chunk_blocks"]:
            blk = im.read_block(b["copies"])
            if blk[100] != 0:
                continue
            for _, h, key, data, size in leaf_items(blk):
                if head == "devitem" and key[1] == 216:
                    o, s = DEV_FIELDS[field]
                elif head == "chunktree" and key[1] == 228 and key[2] == int(parts[1]):
                    if field == "key.offset":
                        note = _assign(blk, h + 9, 8, expr)
                        im.write_block(b["copies"], blk)
                        return note
                    o, s = chunk_field(field)
                else:
                    continue
                if o + s > size:
                    return "field outside the item"
                note = _assign(blk, data + o, s, expr)
                im.write_block(b["copies"], blk)
                return note
        return "item not found"
    if head == "logleaf":
        rows = [[b["bytenr"]] + b["copies"] for b in lay["log_blocks"] if b["level"] == 0]
        bytenr, changed = damage_leaf(im.f, random.Random(int(parts[1])), rows,
                                      im.nodesize, im.ctype)
        return "leaf %d bytes %s" % (bytenr, ",".join(map(str, changed)))
    if head == "loghdr":
        for b in lay["log_blocks"]:
            if b["bytenr"] == int(parts[1]):
                blk = im.read_block(b["copies"])
                note = _assign(blk, *HEADER_FIELDS[parts[2].split("=")[0]], parts[2])
                im.write_block(b["copies"], blk)
                return note
        return "block not found"
    if head == "logroot":
        # the ROOT_ITEMs of the log root tree point at the log trees
        expr = parts[2]
        for b in lay["log_blocks"]:
            blk = im.read_block(b["copies"])
            if blk[100] != 0 or b["tree"] != "log root tree":
                continue
            for _, _, key, data, size in leaf_items(blk):
                if key[1] == 132:
                    o, s = ROOT_ITEM_FIELDS[expr.split("=")[0]]
                    if o + s > size:
                        continue
                    note = _assign(blk, data + o, s, expr)
                    im.write_block(b["copies"], blk)
                    return "root item of log tree %d: %s" % (key[2], note)
        return "no log root item"
    if head == "logitem":
        kind, pick, expr = parts[1], int(parts[2]), parts[3]
        field = expr.split("=")[0]
        cands = []
        for b in lay["log_blocks"]:
            if b["level"] != 0 or b["tree"] == "log root tree":
                continue
            blk = im.read_block(b["copies"])
            if blk[100] != 0:
                continue
            for slot, h, key, data, size in leaf_items(blk):
                if kind == "extent" and key[1] == 108 and size >= 53:
                    cands.append((b, slot, data + FILE_EXTENT_FIELDS[field][0],
                                  FILE_EXTENT_FIELDS[field][1]))
                elif kind == "extent" and key[1] == 108 and field in ("generation", "ram_bytes",
                                                                      "compression", "type"):
                    cands.append((b, slot, data + FILE_EXTENT_FIELDS[field][0],
                                  FILE_EXTENT_FIELDS[field][1]))
                elif kind == "inode" and key[1] == 1 and size >= 160:
                    cands.append((b, slot, data + INODE_FIELDS[field][0], INODE_FIELDS[field][1]))
                elif kind == "csum" and key[1] == 128:
                    cands.append((b, slot, h + 9, 8))
                elif kind == "any":
                    o, s = KEY_FIELDS[field]
                    cands.append((b, slot, h + o, s))
        if not cands:
            return "no such item"
        b, slot, pos, s = cands[pick % len(cands)]
        blk = im.read_block(b["copies"])
        note = _assign(blk, pos, s, expr)
        im.write_block(b["copies"], blk)
        return "block %d slot %d: %s" % (b["bytenr"], slot, note)
    raise SystemExit("unknown mutation spec %r" % spec)


# ---- judging a writer ----

CHUNK = 1 << 20


def content_map(path):
    """{MiB index: sha256} of every MiB of the file that is not all zeros,
    found through SEEK_DATA so that sparse images are cheap."""
    out = {}
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos = 0
        seen = set()
        while pos < size:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:
                    break
                raise
            hole = os.lseek(fd, data, os.SEEK_HOLE)
            for idx in range(data // CHUNK, (hole - 1) // CHUNK + 1):
                if idx in seen:
                    continue
                seen.add(idx)
                buf = os.pread(fd, CHUNK, idx * CHUNK)
                if buf.count(0) != len(buf):
                    out[idx] = hashlib.sha256(buf).hexdigest()
            pos = max(hole, pos + 1)
    finally:
        os.close(fd)
    return out


FS_IOC_FIEMAP = 0xC020660B


def allocated_beyond(path, end):
    """A description of blocks allocated at or past byte END, or None."""
    fd = os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if st.st_size > end:
            try:
                data = os.lseek(fd, end, os.SEEK_DATA)
                return "data at byte %d" % data
            except OSError:
                pass
        # struct fiemap: start, length, flags, mapped, count, reserved + 1 extent
        req = struct.pack("=QQIIII", end, U64 - end, 0, 0, 1, 0) + bytes(56)
        try:
            res = bytearray(req)
            fcntl.ioctl(fd, FS_IOC_FIEMAP, res)
            if struct.unpack_from("=I", res, 20)[0]:
                return "an extent at byte %d" % struct.unpack_from("=Q", res, 32)[0]
            return None
        except OSError:
            pass
        # no FIEMAP (tmpfs): every allocated page must be data inside the file
        if _fs_type(path) == "tmpfs":
            data_bytes, pos = 0, 0
            while pos < st.st_size:
                try:
                    d = os.lseek(fd, pos, os.SEEK_DATA)
                except OSError:
                    break
                h = os.lseek(fd, d, os.SEEK_HOLE)
                data_bytes += (h + 4095) // 4096 * 4096 - d // 4096 * 4096
                pos = h
            if st.st_blocks * 512 > data_bytes:
                return "%d bytes allocated outside the data" % (st.st_blocks * 512 - data_bytes)
        return None
    finally:
        os.close(fd)


def _fs_type(path):
    """The type of the filesystem PATH is on, from /proc/self/mounts."""
    path = os.path.realpath(path)
    best, kind = "", ""
    try:
        for line in open("/proc/self/mounts"):
            f = line.split()
            mnt = f[1].replace("\\040", " ")
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, kind = mnt, f[2]
    except OSError:
        pass
    return kind


class Before:
    """What a writer started from: the mutant's size, contents, superblocks."""

    def __init__(self, path):
        self.path = path
        self.size = os.stat(path).st_size
        self.supers = read_supers(path)
        self.map = content_map(path)
        self.chosen = chosen_super(self.supers)


def judge(writer, rc, out_path, err_path, b, after):
    """(tag, [problems]) for WRITER (replay, dry-run, zero-log) that exited
    RC on AFTER, a copy of the image of Before B."""
    rc = int(rc)
    out = open(out_path, errors="replace").read()
    err = open(err_path, errors="replace").read()
    problems = []
    size1 = os.stat(after).st_size
    if size1 != b.size:
        problems.append("a write past the device end: the image grew from %d to %d bytes"
                        % (b.size, size1))
    beyond = allocated_beyond(after, b.size)
    if beyond:
        problems.append("a write past the device end: %s (the image has %d bytes)"
                        % (beyond, b.size))
    sup1 = read_supers(after)
    supers_same = [s[2] for s in b.supers] == [s[2] for s in sup1[:len(b.supers)]]
    map1 = content_map(after)
    changed = sorted(set(b.map) ^ set(map1) |
                     {k for k in b.map if map1.get(k, b.map[k]) != b.map[k]})
    identical = not changed and b.size == size1
    errors = [line for line in err.splitlines() if line.startswith("tlogctl: ERROR:")]
    chosen = b.chosen
    nolog = "has no log tree" in out
    tag = None

    def where():
        return "MiB " + ",".join(str(c) for c in changed[:8]) + (" ..." if len(changed) > 8 else "")

    if rc not in (0, 1):
        problems.append("exit %d" % rc)
    elif rc == 1:
        if len(errors) != 1:
            problems.append("exit 1 with %d 'tlogctl: ERROR:' lines, not one" % len(errors))
        if writer == "dry-run" and not identical:
            problems.append("--dry-run failed and changed the image (%s)" % where())
        elif not supers_same:
            problems.append("failed (exit 1) but changed the superblock (%s)"
                            % ", ".join("copy %d" % x[0] for x, y in zip(b.supers, sup1)
                                        if x[2] != y[2]))
        tag = "refused" if identical else "refused-cow"
    else:
        if errors:
            problems.append("exit 0 with an error line: %s" % errors[0])
        if nolog:
            if chosen is None or sget(chosen[2], "log_root") != 0:
                problems.append("says there is no log, but the superblock it reads "
                                "has log_root %s" % (sget(chosen[2], "log_root")
                                                     if chosen else "(no valid copy)"))
            if not identical:
                problems.append("says there is no log, but changed the image (%s)" % where())
            tag = "nolog"
        elif writer == "dry-run":
            if "Would replay the log of" not in out:
                problems.append("exit 0 without 'Would replay' or 'has no log tree'")
            if not identical:
                problems.append("--dry-run changed the image (%s)" % where())
            tag = "would-replay"
        else:
            want = "Replayed the log of" if writer == "replay" else "Log discarded."
            if want not in out:
                problems.append("exit 0 without '%s' or 'has no log tree'" % want)
            problems += after_commit(writer, chosen, sup1)
            tag = "replayed" if writer == "replay" else "zeroed"
    return tag, problems


def cmd_verify(before, *runs):
    """verify BEFORE [WRITER RC STDOUT STDERR AFTER]...: one line per
    writer, "WRITER ok TAG", or one "WRITER fail PROBLEM" per problem"""
    b = Before(before)
    bad = 0
    for k in range(0, len(runs), 5):
        writer, rc, out, err, after = runs[k:k + 5]
        tag, problems = judge(writer, rc, out, err, b, after)
        for p in problems:
            print(writer, "fail", p)
        if not problems:
            print(writer, "ok", tag)
        bad |= bool(problems)
    return 1 if bad else 0


def sparse_copy(src, dst):
    with open(src, "rb") as f, open(dst, "wb") as g:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        while pos < size:
            try:
                d = os.lseek(f.fileno(), pos, os.SEEK_DATA)
            except OSError:
                break
            h = os.lseek(f.fileno(), d, os.SEEK_HOLE)
            f.seek(d)
            g.seek(d)
            while d < h:
                buf = f.read(min(h - d, 1 << 20))
                g.write(buf)
                d += len(buf)
            pos = h
        g.truncate(size)


def cmd_mutate_all(img, layout, seed, outdir, *indexes):
    """mutate-all IMG LAYOUT SEED DIR INDEX...: DIR/INDEX.img, a copy of IMG
    with mutant INDEX applied, for each INDEX; prints "INDEX SPEC (note)"."""
    lay = json.load(open(layout))
    for i in indexes:
        path = os.path.join(outdir, "%s.img" % i)
        sparse_copy(img, path)
        spec = spec_of(lay, seed, int(i))
        print(i, "%s (%s)" % (spec, apply_spec(path, lay, spec)))


def after_commit(writer, chosen, sup1):
    """What a replay or zero-log that succeeded must have left in the
    superblocks: every copy that fits the device carries the new state,
    without a log, with a valid checksum."""
    problems = []
    if not sup1:
        return ["no superblock left"]
    primary = sup1[0][2]
    total = sget(primary, "dev_item.total_bytes")
    for i, off, sb in sup1:
        # as the kernel: a copy is written if it ends before the device does
        if i and not off + SUPER_SIZE < total:
            continue
        what = "superblock copy %d (at %d)" % (i, off)
        why = super_problem(sb, i)
        if why:
            problems.append("%s is not valid after the commit: %s" % (what, why))
            continue
        if sget(sb, "log_root") or sget(sb, "log_root_level"):
            problems.append("%s still has log_root %d (level %d)" % (
                what, sget(sb, "log_root"), sget(sb, "log_root_level")))
        if i and (sb[32:48] + sb[56:] != primary[32:48] + primary[56:]):
            problems.append("%s differs from the primary" % what)
    if chosen is not None and not problems:
        before = chosen[2]
        if writer == "replay" and sget(primary, "generation") <= sget(before, "generation"):
            problems.append("generation %d after the replay, %d before" % (
                sget(primary, "generation"), sget(before, "generation")))
    return problems


# ---- 330/600: mutants of any tree block, for check ----
#
# A mutant changes a few bytes of one tree block of any tree (every copy
# of it), with the checksum re-sealed half of the time, and says whether
# the change is one a checker must report whatever else it knows: the
# block's identity in its header (bytenr, fsid, generation, level, the
# owner of a tree whose blocks are never shared), the layout rules the
# kernel's tree-checker enforces on every block (items in key order, item
# data contiguous and inside the leaf, nritems within the block), the
# links between a node and its children (key, block pointer, generation)
# and, unsealed, the checksum itself.  Any other change may be harmless
# (a timestamp, a name byte): those are only counted.  A sealed change of
# bytes nothing uses (the free space of a block) must leave a clean image
# clean.

HDR = 101
LEAF_ITEM = 25
KEY_PTR = 33
TREE_LOG = U64 - 5
KEY_TYPES = (1, 12, 13, 24, 48, 54, 60, 72, 84, 96, 108, 128, 132, 144, 156, 168, 169,
             176, 178, 180, 182, 184, 192, 198, 204, 214, 216, 228, 240, 248, 249, 250, 251, 252)


def is_fs_tree(objectid):
    """Subvolume trees, as the kernel counts them (5, or 256 and up as a
    signed number with qgroup level 0): the trees snapshots share blocks
    between, so a block's owner may be another of them."""
    return objectid == 5 or 256 <= objectid < (1 << 48)


def node_ptrs(blk):
    """[(key, blockptr, generation)] of a node's key pointers."""
    n = min(get(blk, 96, 4), (len(blk) - HDR) // KEY_PTR)
    out = []
    for i in range(n):
        p = HDR + KEY_PTR * i
        out.append(((get(blk, p, 8), blk[p + 8], get(blk, p + 9, 8)),
                    get(blk, p + 17, 8), get(blk, p + 25, 8)))
    return out


def cmd_tree_layout(img, trees_path, chunk_path):
    """tree-layout IMG TREES_JSON CHUNK_JSON: every tree block of dump-tree
    JSON TREES_JSON (all trees, log trees too) with its copies, what tree
    it is in, and the key range its parents allow, as JSON."""
    trees, chunk = (json.load(open(p)) for p in (trees_path, chunk_path))
    chunks = chunks_of(chunk)
    sb = read_supers(img)[0][2]
    lay = {"size": os.stat(img).st_size, "csum_type": sget(sb, "csum_type"),
           "nodesize": sget(sb, "nodesize"), "sectorsize": sget(sb, "sectorsize"),
           "generation": sget(sb, "generation")}
    blocks = {}
    for t in trees["trees"]:
        for b in t["blocks"]:
            copies = block_copies(chunks, b["bytenr"])
            if not copies:
                continue
            e = blocks.setdefault(b["bytenr"], {"bytenr": b["bytenr"], "level": b["level"],
                                                "trees": [], "copies": copies,
                                                "nonroot": False, "upper": None})
            if t["objectid"] not in e["trees"]:
                e["trees"].append(t["objectid"])
    im = Image(img, lay)
    # a child's keys lie in [its key in the parent, the parent's next key):
    # walk the nodes top down so that a parent's own bound is known first
    for b in sorted(blocks.values(), key=lambda x: -x["level"]):
        if b["level"] == 0:
            continue
        ptrs = node_ptrs(im.read_block(b["copies"]))
        for i, (key, ptr, _) in enumerate(ptrs):
            child = blocks.get(ptr)
            if child is None:
                continue
            child["nonroot"] = True
            up = list(ptrs[i + 1][0]) if i + 1 < len(ptrs) else b["upper"]
            if up is not None and (child["upper"] is None or up < child["upper"]):
                child["upper"] = up
    im.close()
    lay["blocks"] = sorted(blocks.values(), key=lambda x: x["bytenr"])
    json.dump(lay, sys.stdout)


def pick_value(rng, size, cur, extra=()):
    mx = (1 << (8 * size)) - 1
    cands = [0, 1, mx, mx - 1, cur + 1, cur - 1, cur ^ (1 << rng.randrange(8 * size)),
             rng.randrange(mx + 1), cur * 2, 1 << (8 * size - 1), rng.randrange(256)]
    return rng.choice(cands + list(extra) * 2) & mx


def tree_mutant(lay, blk0, b, seed, index):
    """Mutant INDEX of SEED for block B (layout entry) whose bytes are
    BLK0: (spec, what it changes).  The spec applies without the rng:
    "tblock/BYTENR/POS/SIZE/set=VALUE|xor=MASK/seal|raw"."""
    rng = random.Random("%s:tblock:%d" % (seed, index))
    ns = lay["nodesize"]
    seal = rng.random() < 0.5
    level, n = blk0[100], get(blk0, 96, 4)
    leaf = level == 0
    bytenrs = [x["bytenr"] for x in lay["blocks"]]
    gen = lay["generation"]
    kinds = ["flip"] * 2 + ["hdr"] * 2 + (["ihdr"] * 3 + ["idata"] * 3 if leaf else ["kptr"] * 4)
    kind = rng.choice(kinds)
    if kind in ("ihdr", "idata", "kptr") and n == 0:
        kind = "hdr"
    if kind == "flip":
        lo = 32 if seal else 0
        end = HDR + (LEAF_ITEM if leaf else KEY_PTR) * n
        if rng.random() < 0.5 and end > lo:
            pos = rng.randrange(lo, min(end, ns))
        else:
            pos = rng.randrange(lo, ns)
        return ("tblock/%d/%d/1/xor=%d/%s" % (b["bytenr"], pos, 1 << rng.randrange(8),
                                              "seal" if seal else "raw"),
                "bit flip at %d" % pos)
    if kind == "hdr":
        field = rng.choice(["bytenr", "flags", "fsid", "chunk_tree_uuid", "generation",
                            "owner", "nritems", "level"])
        if field in ("fsid", "chunk_tree_uuid"):
            pos = (32 if field == "fsid" else 64) + rng.randrange(16)
            size = 1
            val = pick_value(rng, 1, blk0[pos])
        else:
            pos, size = HEADER_FIELDS[field]
            cur = get(blk0, pos, size)
            extra = {
                "bytenr": [cur + ns, cur - ns, cur + lay["sectorsize"]] + bytenrs,
                "generation": [gen, gen + 1, gen - 1, 0],
                "owner": [1, 2, 3, 4, 5, 7, 9, 10, 11, 256, 257, TREE_LOG, U64 - 8],
                "nritems": [n + 1, n - 1, 0, (ns - HDR) // LEAF_ITEM,
                            (ns - HDR) // LEAF_ITEM + 1, (ns - HDR) // KEY_PTR + 1],
                "level": [level + 1, level - 1, 7, 8],
                "flags": [0, 1, 1 << 56, 2 << 56],
            }[field]
            val = pick_value(rng, size, cur, extra)
        return ("tblock/%d/%d/%d/set=%d/%s" % (b["bytenr"], pos, size, val,
                                               "seal" if seal else "raw"),
                "header %s" % field)
    slot = rng.randrange(n)
    if kind == "kptr":
        p = HDR + KEY_PTR * slot
        field = rng.choice(["key.objectid", "key.type", "key.offset", "blockptr", "blockptr",
                            "generation"])
        o, size = {"key.objectid": (0, 8), "key.type": (8, 1), "key.offset": (9, 8),
                   "blockptr": (17, 8), "generation": (25, 8)}[field]
        cur = get(blk0, p + o, size)
        extra = bytenrs if field == "blockptr" else [gen, gen + 1] if field == "generation" \
            else KEY_TYPES if field == "key.type" else []
        val = pick_value(rng, size, cur, extra)
        return ("tblock/%d/%d/%d/set=%d/%s" % (b["bytenr"], p + o, size, val,
                                               "seal" if seal else "raw"),
                "node slot %d %s" % (slot, field))
    h = HDR + LEAF_ITEM * slot
    if kind == "ihdr":
        field = rng.choice(["key.objectid", "key.type", "key.offset"] * 2 + ["offset", "size"])
        o, size = {"key.objectid": (0, 8), "key.type": (8, 1), "key.offset": (9, 8),
                   "offset": (17, 4), "size": (21, 4)}[field]
        cur = get(blk0, h + o, size)
        extra = KEY_TYPES if field == "key.type" else \
            [cur + 1, cur - 1, cur + LEAF_ITEM, ns - HDR, ns] if field in ("offset", "size") \
            else []
        val = pick_value(rng, size, cur, extra)
        return ("tblock/%d/%d/%d/set=%d/%s" % (b["bytenr"], h + o, size, val,
                                               "seal" if seal else "raw"),
                "item %d %s" % (slot, field))
    # idata: an integer of 1-8 bytes inside the item's data
    off, isize = get(blk0, h + 17, 4), get(blk0, h + 21, 4)
    if isize == 0 or HDR + off + isize > ns:
        pos = h + rng.randrange(LEAF_ITEM)
        return ("tblock/%d/%d/1/xor=%d/%s" % (b["bytenr"], pos, 1 << rng.randrange(8),
                                              "seal" if seal else "raw"),
                "bit flip in the header of item %d (no data)" % slot)
    size = min(rng.choice([1, 2, 4, 8, 8]), isize)
    rel = rng.randrange(isize - size + 1)
    if rng.random() < 0.5:
        rel -= rel % size
    pos = HDR + off + rel
    extra = bytenrs + [gen, gen + 1] if size == 8 else []
    val = pick_value(rng, size, get(blk0, pos, size), extra)
    return ("tblock/%d/%d/%d/set=%d/%s" % (b["bytenr"], pos, size, val,
                                           "seal" if seal else "raw"),
            "item %d data +%d u%d" % (slot, rel, 8 * size))


def apply_tree_spec(blk, spec):
    """Apply spec's change to the block bytes BLK (in place); True if sealed."""
    _, _, pos, size, op, how = spec.split("/")
    pos, size = int(pos), int(size)
    kind, val = op.split("=")
    if kind == "xor":
        put(blk, pos, size, get(blk, pos, size) ^ int(val))
    else:
        put(blk, pos, size, int(val))
    return how == "seal"


def leaf_layout_problem(blk, nonroot):
    """Why the kernel's tree-checker would refuse leaf BLK (None: it would not)."""
    ns = len(blk)
    n = get(blk, 96, 4)
    if HDR + LEAF_ITEM * n > ns:
        return "nritems %d does not fit" % n
    if n == 0 and nonroot:
        return "empty leaf that is not a root"
    prev, end = None, ns - HDR
    for slot, h, key, data, size in leaf_items(blk):
        if prev is not None and key <= prev:
            return "slot %d key not above slot %d" % (slot, slot - 1)
        off = data - HDR
        if off + size != end:
            return "slot %d data does not end where slot %d starts" % (slot, slot - 1)
        if off < LEAF_ITEM * n:
            return "slot %d data overlaps the item headers" % slot
        prev, end = key, off
    return None


def node_layout_problem(blk, ss):
    ns = len(blk)
    n = get(blk, 96, 4)
    if n == 0 or HDR + KEY_PTR * n > ns:
        return "nritems %d" % n
    prev = None
    for key, ptr, _ in node_ptrs(blk):
        if prev is not None and key <= prev:
            return "keys out of order"
        if ptr == 0 or ptr % ss:
            return "block pointer %d" % ptr
        prev = key
    return None


def judge_tree_mutant(lay, b, old, new, sealed):
    """(must, region): MUST says why any checker has to report NEW (a
    mutant of block B whose bytes were OLD), or is None; REGION is where
    the change is: "hdr", "items" (headers or key pointers), "data" or
    "unused"."""
    csz = csum_size(lay["csum_type"])
    # a re-sealed checksum is not a change of its own
    diff = [i for i in range(csz if sealed else 0, len(old)) if old[i] != new[i]]
    if not sealed and any(i < csz or i >= 32 for i in diff):
        return "checksum", "raw"
    level, n = old[100], get(old, 96, 4)
    for f in ("bytenr", "generation", "level"):
        if get(old, *HEADER_FIELDS[f]) != get(new, *HEADER_FIELDS[f]):
            return "header %s" % f, "hdr"
    if old[32:48] != new[32:48]:
        return "header fsid", "hdr"
    log = TREE_LOG in b["trees"]
    if get(old, 88, 8) != get(new, 88, 8):
        if not all(is_fs_tree(t) for t in b["trees"]):
            return "header owner of a tree that shares no blocks", "hdr"
        if not is_fs_tree(get(new, 88, 8)):
            return "header owner not a subvolume in a subvolume tree", "hdr"
    n1 = get(new, 96, 4)
    if level:
        why = node_layout_problem(new, lay["sectorsize"])
        if why:
            return "node layout: " + why, "items"
        m = min(n, n1)
        if old[HDR:HDR + KEY_PTR * m] != new[HDR:HDR + KEY_PTR * m]:
            return "a key pointer of a node (its child no longer matches)", "items"
        # children lost or gained: their extent items no longer match
        # (a log tree's blocks have none: a shorter log is a valid log)
        if n1 != n and not log:
            return "nritems of a node", "items"
    else:
        why = leaf_layout_problem(new, b["nonroot"])
        if why:
            return "leaf layout: " + why, "items"
        ko, kn = leaf_items(old), leaf_items(new)
        if b["nonroot"] and ko and kn and ko[0][2] != kn[0][2]:
            return "first key of a leaf differs from its parent's key", "items"
        if b["upper"] is not None and kn and list(kn[-1][2]) >= b["upper"]:
            return "last key at or above the parent's next key", "items"
    # no rule broken for certain: where was the change?
    used_end = HDR + (KEY_PTR if level else LEAF_ITEM) * max(n, n1)
    data_lo = len(old)
    if not level:
        for _, _, _, data, _ in leaf_items(old) + leaf_items(new):
            data_lo = min(data_lo, data)
    if all(i < HDR for i in diff):
        region = "hdr"
    elif all(used_end <= i < data_lo or (csz <= i < 32) for i in diff):
        region = "unused"
    elif any(32 <= i < used_end for i in diff):
        region = "items"
    else:
        region = "data"
    return None, region


def sparse_digest(path, full=True):
    """(size, mtime, sha256 of every data range if FULL): what a write
    changes.  Not st_blocks: the host's writeback of earlier writes may
    change it at any time."""
    st = os.stat(path)
    if not full:
        return (st.st_size, st.st_mtime_ns)
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        while pos < st.st_size:
            try:
                d = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            e = os.lseek(fd, d, os.SEEK_HOLE)
            h.update(d.to_bytes(8, "little"))
            while d < e:
                buf = os.pread(fd, min(e - d, 1 << 20), d)
                if not buf:
                    break
                h.update(buf)
                d += len(buf)
            pos = e
    finally:
        os.close(fd)
    return (st.st_size, st.st_mtime_ns, h.hexdigest())


SANITIZER = ("AddressSanitizer", "runtime error", "LeakSanitizer")


def run_check(cmd, img, timeout):
    """(rc, stdout, stderr): rc None on a timeout, after which the whole
    process group is killed"""
    import signal
    import subprocess
    p = subprocess.Popen(cmd + [img], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, b"", b""
    return p.returncode, out, err


def crash_problem(rc, err):
    """Why exit RC with standard error ERR is a crash (None: it is not)."""
    text = err.decode(errors="replace")
    if rc is None:
        return "hang (no exit within the time limit)"
    if rc < 0:
        return "killed by signal %d" % -rc
    if any(s in text for s in SANITIZER):
        return "sanitizer report: " + next(line for line in text.splitlines()
                                          if any(s in line for s in SANITIZER))
    if rc in (86, 87):
        return "sanitizer exit %d" % rc
    if rc not in (0, 1, 2):
        return "exit %d" % rc
    return None


def cmd_check_fuzz(img, layout, seed, budget, count, savedir, name, *cmd):
    """check-fuzz IMG LAYOUT SEED BUDGET COUNT SAVEDIR NAME CMD...: mutants
    1, 2, ... of IMG (TLOG_FUZZ_ONLY="N ...": those only) until COUNT or
    BUDGET seconds, each checked by "CMD [OPTS] IMAGE" and then undone.
    Every 8th run adds --format json (its output must parse), every 8th
    from the 4th --log-only (only crashes judged).  A failure: a crash,
    hang or sanitizer report, an exit other than 0, 1, 2, the image
    changed by the check, exit 0 or 2 where the change must be reported,
    or a report where only unused bytes changed.  Failing mutants are kept
    in SAVEDIR (at most 5).  Exits 1 on a failure."""
    import time
    lay = json.load(open(layout))
    im = Image(img, lay)
    timeout = float(os.environ.get("TLOG_CHECK_TIMEOUT", "30"))
    only = os.environ.get("TLOG_FUZZ_ONLY", "").split()
    t0 = time.monotonic()
    deadline = t0 + float(budget)
    counts = {}
    fails = []
    saved = 0
    notes = 0

    def count_(key):
        counts[key] = counts.get(key, 0) + 1

    def indexes():
        if only:
            yield from (int(x) for x in only)
            return
        i = 1
        while i <= int(count) and time.monotonic() < deadline:
            yield i
            i += 1

    # nodes and log blocks more often than their share
    weighted = [x for x in lay["blocks"]
                for _ in range(1 + x["level"] + 2 * (TREE_LOG in x["trees"]))]
    n = 0
    for i in indexes():
        rng = random.Random("%s:pick:%d" % (seed, i))
        b = rng.choice(weighted)
        old = im.read_block(b["copies"])
        spec, what = tree_mutant(lay, old, b, seed, i)
        new = bytearray(old)
        sealed = apply_tree_spec(new, spec)
        if sealed:
            seal(new, im.ctype)
        if new == old:
            count_("unchanged")
            continue
        must, region = judge_tree_mutant(lay, b, old, new, sealed)
        for off in b["copies"]:
            im.f.seek(off)
            im.f.write(new)
        im.f.flush()
        mode = ["--format", "json"] if i % 8 == 0 else ["--log-only"] if i % 8 == 4 else []
        # a write changes the mtime; the contents are hashed now and then
        full = n % 16 == 0
        before = sparse_digest(img, full)
        rc, out, err = run_check(list(cmd) + mode, img, timeout)
        after = sparse_digest(img, full)
        n += 1
        problem = crash_problem(rc, err)
        if problem is None and after != before:
            problem = "the check changed the image"
        if problem is None and mode[:1] == ["--format"]:
            try:
                json.loads(out.decode())
            except ValueError as e:
                problem = "--format json output does not parse: %s" % e
        verdict = {0: "clean", 1: "problems", 2: "could not check"}.get(rc, "crash")
        if problem is None and mode != ["--log-only"]:
            if must and rc != 1:
                problem = "exit %d (%s), but it must be reported: %s" % (rc, verdict, must)
            elif region == "unused" and rc != 0:
                problem = "exit %d (%s), but only unused bytes changed" % (rc, verdict)
        if rc == 2 and notes < 5 and not problem:
            # not a failure, but worth a look: a tree block change the
            # check could not get past
            notes += 1
            print("note: mutant %d: %s (%s, block %d): exit 2 (%s)" % (
                i, spec, what, b["bytenr"], " ".join(mode) or "default"))
            for line in err.decode(errors="replace").strip().splitlines()[-3:]:
                print("    " + line)
        if mode == ["--log-only"]:
            count_("log-only " + verdict)
        elif must:
            count_("must " + verdict)
        else:
            count_("%s %s" % (region, verdict))
        if problem:
            repro = "TLOG_SEED=%s TLOG_FUZZ_ONLY=%d (base %s)" % (seed, i, name)
            where = ""
            if saved < 5:
                os.makedirs(savedir, exist_ok=True)
                path = os.path.join(savedir, "%s-seed%s-%d.img" % (name, seed, i))
                sparse_copy(img, path)
                saved += 1
                where = "; image kept: %s" % path
            msg = "mutant %d: %s (%s, block %d of tree %s, %s)%s: %s%s" % (
                i, spec, what, b["bytenr"], ",".join(str(t) for t in b["trees"]),
                " ".join(mode) or "default", "" if not must else " [must: %s]" % must,
                problem, where)
            print("FAIL " + msg + "; repeat: " + repro)
            tail = err.decode(errors="replace").strip().splitlines()[-15:]
            for line in tail:
                print("    " + line)
            fails.append(msg)
        for off in b["copies"]:
            im.f.seek(off)
            im.f.write(old)
        im.f.flush()
        if after != before:
            # the check wrote somewhere else: nothing later can be trusted
            print("the image was changed by the check; stopping %s" % name)
            break
        if len(fails) >= 20:
            break
    im.close()
    secs = time.monotonic() - t0
    print("%s: %d mutants checked in %.0fs (%.0f ms each), seed %s" % (
        name, n, secs, 1000 * secs / max(n, 1), seed))
    for k in sorted(counts):
        print("  %-28s %d" % (k, counts[k]))
    return 1 if fails else 0


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "leaves":
        cmd_leaves(*args)
    elif cmd == "damage-leaf":
        cmd_damage_leaf(*args)
    elif cmd == "layout":
        cmd_layout(*args)
    elif cmd == "count-pinned":
        print(len(pinned(json.load(open(args[0])))))
    elif cmd in ("mutate", "apply"):
        img, lay = args[0], json.load(open(args[1]))
        spec = spec_of(lay, args[2], int(args[3])) if cmd == "mutate" else args[2]
        note = apply_spec(img, lay, spec)
        print("%s (%s)" % (spec, note))
    elif cmd == "mutate-all":
        cmd_mutate_all(*args)
    elif cmd == "verify":
        return cmd_verify(*args)
    elif cmd == "tree-layout":
        cmd_tree_layout(*args)
    elif cmd == "check-fuzz":
        return cmd_check_fuzz(*args)
    elif cmd == "digest":
        print(*sparse_digest(args[0]))
    else:
        raise SystemExit("unknown command %s\n%s" % (cmd, __doc__))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
