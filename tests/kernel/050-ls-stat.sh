#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ls and stat on an unmounted image agree with what the kernel shows on a
# loop mount of the same image: names, inode numbers, types, modes, link
# counts, sizes, blocks, owners, device numbers, times, symlink targets.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs python3
need_mount

img="$TMP/k.img"
mnt="$TMP/mnt"
for ns in 4096 16384; do
	make_image "$img" 512M -n "$ns"
	mount_image "$img" "$mnt"
	(
		set -e
		cd "$mnt"
		mkdir -p a/b/c empty many
		echo hello > a/file
		ln a/file a/b/hardlink
		ln a/file hardlink-top
		ln -s a/file symlink
		ln -s "$(printf 'x%.0s' $(seq 1 300))" longlink
		mkfifo fifo
		mknod chr c 1 3
		mknod blk b 7 200
		head -c 1000000 /dev/urandom > a/b/c/big
		truncate -s 10G sparse
		head -c 100 /dev/zero > inline
		chmod 4755 a/file; chmod 1777 empty; chown 1234:5678 inline
		touch -d '2001-02-03 04:05:06.789' a/b
		for i in $(seq 1 1500); do : > "many/f$i"; done
		btrfs subvolume create sub >/dev/null
		echo in-sub > sub/x
		mkdir sub/dir
		btrfs subvolume create sub/nested >/dev/null
		echo deep > sub/nested/y
		btrfs subvolume snapshot sub snap >/dev/null
		mv a/b/c/big a/b/c/big-renamed
		rm many/f7 many/f1000
		printf 'n\xe9me' > weird-$'\x01'-name
		: > 'back\slash'
	) || fail "populating the image"
	sync
	umount_image "$mnt"

	# our view of every directory, from the unmounted image
	mount_image "$img" "$mnt" ro
	python3 - "$TLOGCTL" "$img" "$mnt" <<'PY' || fail "nodesize $ns: tlogctl differs from the kernel"
import json, os, stat, subprocess, sys
tl, img, mnt = sys.argv[1:4]

def ours(*args):
    out = subprocess.run([tl, *args, "--format", "json"], stdout=subprocess.PIPE, check=True)
    return json.loads(out.stdout)

def esc(b):
    """A name as tlogctl prints it in JSON: invalid UTF-8 and controls as \\xNN."""
    out, i = [], 0
    while i < len(b):
        ch = None
        for n in (1, 2, 3, 4):
            try:
                ch = b[i:i + n].decode("utf-8")
                break
            except UnicodeDecodeError:
                pass
        if ch == "\\":
            out.append("\\\\")
            i += 1
        elif ch is None or (len(ch) == 1 and (ord(ch) < 0x20 or ord(ch) == 0x7f)):
            out.append("\\x%02x" % b[i])
            i += 1
        else:
            out.append(ch)
            i += n
    return "".join(out)

def fields(st):
    return {"ino": st.st_ino, "mode": st.st_mode, "nlink": st.st_nlink, "uid": st.st_uid,
            "gid": st.st_gid, "size": st.st_size, "blocks": st.st_blocks,
            "rdev_major": os.major(st.st_rdev), "rdev_minor": os.minor(st.st_rdev),
            "mtime": (int(st.st_mtime_ns // 10**9), st.st_mtime_ns % 10**9),
            "ctime": (int(st.st_ctime_ns // 10**9), st.st_ctime_ns % 10**9)}

def our_fields(e):
    f = {k: e[k] for k in ("ino", "mode", "nlink", "uid", "gid", "size", "blocks",
                           "rdev_major", "rdev_minor")}
    f["mtime"] = (e["mtime"]["sec"], e["mtime"]["nsec"])
    f["ctime"] = (e["ctime"]["sec"], e["ctime"]["nsec"])
    return f

bad = 0
checked = 0
for dirpath, dirnames, filenames in os.walk(mnt.encode()):
    rel = "/" + os.path.relpath(dirpath, mnt.encode()).decode("utf-8", "surrogateescape")
    rel = "/" if rel == "/." else rel
    # names that do not decode cannot be passed back as a path argument
    if "\\udc" in repr(rel):
        continue
    j = ours("ls", img, rel)
    got = {e["name"]: e for e in j["entries"]}
    want = {esc(n): os.lstat(os.path.join(dirpath, n)) for n in os.listdir(dirpath)}
    raw = {esc(n): n for n in os.listdir(dirpath)}
    if sorted(got) != sorted(want):
        print("names differ in", rel, sorted(set(got) ^ set(want)))
        bad += 1
        continue
    for n, st in want.items():
        g = our_fields(got[n])
        w = fields(st)
        if st.st_ino == 2:
            # a snapshot's stand-in for a nested subvolume: the kernel makes
            # it up at lookup, with the time of the lookup
            for k in ("mtime", "ctime"):
                del g[k], w[k]
        if g != w:
            print("differs:", rel, n, {k: (g[k], w[k]) for k in g if g[k] != w[k]})
            bad += 1
        if stat.S_ISLNK(st.st_mode):
            t = os.readlink(os.path.join(dirpath, raw[n]))
            if got[n].get("target") != t.decode():
                print("symlink target differs:", rel, n)
                bad += 1
        checked += 1

# stat of a few paths, including through subvolumes
for p in ["/", "/a/file", "/sub", "/sub/nested/y", "/snap/x", "/a/b", "/sparse", "/chr"]:
    s = ours("stat", img, p)
    w = fields(os.lstat(mnt + p))
    g = our_fields(s)
    if g != w:
        print("stat differs:", p, {k: (g[k], w[k]) for k in g if g[k] != w[k]})
        bad += 1
print(f"checked {checked} entries")
sys.exit(1 if bad else 0)
PY
	umount_image "$mnt"

	# text output: ls -l of a directory matches the names of the kernel's ls
	mount_image "$img" "$mnt" ro
	(cd "$mnt/a" && ls -1 | LC_ALL=C sort) > "$TMP/k.names"
	tl ls "$img" /a > "$TMP/t.names" || fail "ls /a"
	same_file "$TMP/k.names" "$TMP/t.names" || fail "ls /a names"
	umount_image "$mnt"
done
exit 0
