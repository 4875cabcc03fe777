#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The refusals of "tlogctl run" against the kernel's: every operation's
# errors (ENOENT, EEXIST, ENOTEMPTY, EISDIR, ENOTDIR, EXDEV, ELOOP, EMLINK,
# ENAMETOOLONG, EINVAL, ENODATA, EPERM, ENOTTY, ERANGE, EOPNOTSUPP, ENOSPC),
# each a script run by the kernel (tests/tools/wl-exec.py on a loop mount)
# and by "tlogctl run --commit" on a copy of the same fresh image (see
# helpers/run-lib.sh): the stderr lines must be the same, the kernel's
# must hold the expected ones, and the trees must agree.  ENOSPC (a 114M
# image filled) compares the errors only.  --strict: both exit 1 at the
# first refusal, and nothing after it is applied (the trees agree).  Syntax
# errors: exit 2, "SCRIPT:LINE: ..." as wl-exec.py says it, the image
# unchanged (cmp).
. "$(dirname "$0")/../common.sh"
. "$(dirname "$0")/helpers/replay-lib.sh"
. "$(dirname "$0")/helpers/run-lib.sh"
need_cmd mkfs.btrfs btrfs python3 xfs_io losetup sha256sum cmp
run_init
need_mount

L255=$(printf 'n%.0s' $(seq 255))
L256=${L255}x
mkdir -p "$TMP/cases"

# err_case NAME "EXPECTED LINE..." [mkfs options...] < SCRIPT: the
# expected lines are "LINE: op: error" or "*: op: error" (any line), one
# per line of the argument, which the kernel's stderr must hold, after
# run_compare
err_case() {
	local name="$1" expect="$2"; shift 2
	local s="$TMP/cases/$name.tlw"
	cat > "$s"
	run_scenario "$name" err_check "$s" "$name" "$expect" "$@"
}
err_check() {
	local s="$1" name="$2" expect="$3"; shift 3
	local e missing=0
	run_compare "$s" "$name" "$@"
	while IFS= read -r e; do
		[ -n "$e" ] || continue
		# "*: op: error": on some line
		if [ "${e:0:3}" = "*: " ]; then
			grep -q ":[0-9]*: ${e:3}\$" "$SCN_DIR/A.err"
		else
			grep -qxF "$s:$e" "$SCN_DIR/A.err"
		fi || { echo "expected from the kernel: $s:$e"; missing=1; }
	done <<< "$expect"
	if [ $missing = 1 ]; then
		echo "the kernel said:"
		sed 's/^/    /' "$SCN_DIR/A.err"
		fail "$name: the kernel did not refuse as the case expects (a wrong case)"
	fi
}

E_NOENT="No such file or directory" E_EXIST="File exists" E_NOTEMPTY="Directory not empty"
E_ISDIR="Is a directory" E_NOTDIR="Not a directory" E_XDEV="Invalid cross-device link"
E_MLINK="Too many links" E_NAMETOOLONG="File name too long" E_INVAL="Invalid argument"
E_NODATA="No data available" E_PERM="Operation not permitted" E_NOTTY="Inappropriate ioctl for device"
E_RANGE="Numerical result out of range" E_OPNOTSUPP="Operation not supported"
E_NOSPC="No space left on device" E_BUSY="Device or resource busy"
E_LOOP="Too many levels of symbolic links"

err_case enoent "2: mkdir: $E_NOENT
3: create: $E_NOENT
4: write: $E_NOENT
5: truncate: $E_NOENT
6: falloc: $E_NOENT
7: punch: $E_NOENT
8: link: $E_NOENT
9: link: $E_NOENT
10: rename: $E_NOENT
11: rename: $E_NOENT
12: unlink: $E_NOENT
13: rmdir: $E_NOENT
14: symlink: $E_NOENT
15: mknod: $E_NOENT
16: setxattr: $E_NOENT
17: removexattr: $E_NOENT
18: chmod: $E_NOENT
19: chown: $E_NOENT
20: utimes: $E_NOENT
21: chattr: $E_NOENT
22: fsync: $E_NOENT
23: fdatasync: $E_NOENT
24: mksubvol: $E_NOENT
25: mksnap: $E_NOENT
26: clone: $E_NOENT
27: clonerange: $E_NOENT
28: rename: $E_NOENT
30: write: $E_NOENT
31: truncate: $E_NOENT" <<'EOF2'
create /f
mkdir /no/d
create /no/f
write /no/f 0 10
truncate /nofile 0
falloc /nofile 0 4k
punch /nofile 0 4k
link /nofile /g
link /f /no/g
rename /nofile /g
rename /f /no/g
unlink /nofile
rmdir /nodir
symlink /f /no/l
mknod /no/n p
setxattr /nofile user.a 1
removexattr /nofile user.a
chmod /nofile 0600
chown /nofile 1 1
utimes /nofile 1 1
chattr /nofile +C
fsync /nofile
fdatasync /nofile
mksubvol /no/sv
mksnap /nosv /snap
clone /nofile /g
clonerange /f 0 4k /nofile 0
rename /f /nofile exchange
symlink /nowhere /dangling
write /dangling/x 0 1
truncate /dangling 0
EOF2

err_case eexist "4: mkdir: $E_EXIST
5: mkdir: $E_EXIST
6: create: $E_EXIST
7: create: $E_EXIST
8: link: $E_EXIST
9: symlink: $E_EXIST
10: mknod: $E_EXIST
11: mksubvol: $E_EXIST
12: rename: $E_EXIST
13: rename: $E_EXIST
15: setxattr: $E_EXIST
16: mksnap: $E_EXIST
18: create: $E_EXIST" <<'EOF2'
mkdir /d
create /f
create /g
mkdir /d
mkdir /f
create /f
create /d
link /f /g
symlink x /f
mknod /f p
mksubvol /d
rename /f /g noreplace
rename /f /d noreplace
setxattr /f user.a 1 create
setxattr /f user.a 2 create
mksnap / /d
symlink /f /l
create /l
EOF2

err_case enotempty "4: rmdir: $E_NOTEMPTY
5: rename: $E_NOTEMPTY
8: rmdir: $E_NOTEMPTY" <<'EOF2'
mkdir /d
create /d/f
mkdir /e
rmdir /d
rename /e /d
mksubvol /sv
create /sv/f
rmdir /sv
EOF2

err_case eisdir "4: unlink: $E_ISDIR
5: write: $E_ISDIR
6: truncate: $E_ISDIR
7: falloc: $E_ISDIR
8: punch: $E_ISDIR
9: rename: $E_ISDIR
10: clone: $E_ISDIR
11: clonerange: $E_ISDIR
13: unlink: $E_ISDIR" <<'EOF2'
mkdir /d
create /f
write /f 0 8k
unlink /d
write /d 0 10
truncate /d 0
falloc /d 0 4k
punch /d 0 4k
rename /f /d
clone /f /d
clonerange /f 0 4k /d 0
mksubvol /sv
unlink /sv
EOF2

err_case enotdir "3: rmdir: $E_NOTDIR
4: mkdir: $E_NOTDIR
5: create: $E_NOTDIR
6: rename: $E_NOTDIR
7: link: $E_NOTDIR
8: write: $E_NOTDIR
9: fsync: $E_NOTDIR
10: unlink: $E_NOTDIR
11: mksubvol: $E_NOTDIR
12: setxattr: $E_NOTDIR" <<'EOF2'
mkdir /d
create /f
rmdir /f
mkdir /f/x
create /f/x
rename /d /f
link /f /f/y
write /f/z 0 1
fsync /f/
unlink /f/
mksubvol /f/sv
setxattr /f/x user.a 1
rename /f /d exchange
EOF2

err_case exdev "5: link: $E_XDEV
6: rename: $E_XDEV
7: link: $E_XDEV
8: rename: $E_XDEV
9: rename: $E_XDEV" <<'EOF2'
mksubvol /sv
create /f
mkdir /d
create /sv/g
link /f /sv/f
rename /f /sv/f
link /sv/g /g
rename /d /sv/d
rename /f /sv/g exchange
clone /f /sv/h
EOF2

# subvolumes (btrfs_rename, btrfs_rename_exchange): an inode stays in its
# subvolume, in an exchange too unless both are subvolumes; a subvolume is
# never replaced; "a directory into itself" holds through a subvolume; and
# what is allowed after the refusals: two subvolumes trade names, one
# replaces an empty directory, a file trades with a subvolume
err_case subvol-moves "9: rename: $E_XDEV
10: rename: $E_NOTEMPTY
11: rename: $E_NOTEMPTY
12: rename: $E_INVAL
13: rename: $E_XDEV" <<'EOF2'
mksubvol /a
mksubvol /b
mkdir /top
mksubvol /top/sv
mkdir /top/sv/in
create /f
create /a/g
mkdir /d
rename /f /a/g exchange
rename /d /a
rename /a /b
rename /top /top/sv/in/x
rename /a/g /b exchange
rename /a /b exchange
rename /b /d
rename /f /a exchange
EOF2

# ELOOP: one path walk follows at most 40 symlinks, those in the middle
# of the path and the final ones together, the 41st is refused; the calls
# that do not follow a final link (lchown, utimensat, link) act on the
# link, a trailing slash follows it and wants a directory, and is EISDIR
# for open(O_CREAT).  Targets are relative: the kernel's walk of an
# absolute one would leave the mount.
# eloop_chain DIR NAME N TARGET: DIR/NAME1 -> NAME2 -> ... -> NAMEN -> TARGET
eloop_chain() {
	local i
	echo "symlink $4 $1/$2$3"
	for ((i = $3 - 1; i >= 1; i--)); do echo "symlink $2$((i + 1)) $1/$2$i"; done
}
eloop_script() {
	echo "mkdir /s"
	echo "mkdir /s/d"
	echo "write /s/d/f 0 10"
	eloop_chain /s m 20 d
	eloop_chain /s n 40 d
	eloop_chain /s o 41 d
	eloop_chain /s/d f 20 f
	eloop_chain /s/d g 21 f
	cat <<'EOF2'
symlink m1/f2 /s/y
symlink m1/f1 /s/x
symlink d /s/ld
symlink nothere /s/dang
symlink loop /s/loop
truncate /s/m1/f1 3
chmod /s/y 604
truncate /s/m1/g1 1
chmod /s/m1/g1 640
chmod /s/x 640
write /s/n1/h 0 5
write /s/o1/i 0 5
create /s/o1/p
mkdir /s/o1/q
chown /s/m1/g1 3 4
utimes /s/m1/g1 5 5
link /s/d/f1 /s/d/f1b
chown /s/ld/ 5 6
fsync /s/ld/
chown /s/d/f1/ 1 1
write /s/d/f/ 0 1
write /s/d/new/ 0 1
write /s/ld/ 0 1
chmod /s/d/.. 700
write /s/dang 0 4
fsync /s/loop
chown /s/loop 1 2
EOF2
}
eloop_line() { eloop_script | grep -nxF "$1" | cut -d: -f1; }
# (from a process substitution, not a pipe: a pipeline would run err_case
# in a subshell, and its failure would not be counted)
err_case eloop "$(eloop_line "truncate /s/m1/g1 1"): truncate: $E_LOOP
$(eloop_line "chmod /s/m1/g1 640"): chmod: $E_LOOP
$(eloop_line "chmod /s/x 640"): chmod: $E_LOOP
$(eloop_line "write /s/o1/i 0 5"): write: $E_LOOP
$(eloop_line "create /s/o1/p"): create: $E_LOOP
$(eloop_line "mkdir /s/o1/q"): mkdir: $E_LOOP
$(eloop_line "chown /s/d/f1/ 1 1"): chown: $E_NOTDIR
$(eloop_line "write /s/d/f/ 0 1"): write: $E_ISDIR
$(eloop_line "write /s/d/new/ 0 1"): write: $E_ISDIR
$(eloop_line "write /s/ld/ 0 1"): write: $E_ISDIR
$(eloop_line "fsync /s/loop"): fsync: $E_LOOP" < <(eloop_script)

# EMLINK: without extended refs, the names of an inode in one directory
# share one INODE_REF item, which must fit in a leaf (4k nodes: about 14
# names of 255 bytes).  The link count limit (65535, with extended refs)
# takes 65535 links: not here.  (A process substitution, not a pipe, as
# for eloop: a failure in a pipeline's subshell would not be counted.)
err_case emlink "*: link: $E_MLINK" -n 4k -O ^extref < <(
	echo "mkdir /d"
	echo "create /d/f"
	for i in $(seq 10 30); do echo "link /d/f /d/${L255:2}$i"; done
	echo "link /d/f /e"
	echo "mkdir /d2"
	echo "link /d/f /d2/${L255:2}10"
	echo "fsync /d/f"
)

err_case enametoolong "2: create: $E_NAMETOOLONG
3: mkdir: $E_NAMETOOLONG
4: symlink: $E_NAMETOOLONG
5: link: $E_NAMETOOLONG
6: rename: $E_NAMETOOLONG
7: mknod: $E_NAMETOOLONG
8: mksubvol: $E_NAMETOOLONG
9: write: $E_NAMETOOLONG
10: unlink: $E_NAMETOOLONG
11: setxattr: $E_RANGE
12: setxattr: $E_NAMETOOLONG" <<EOF2
create /f
create /$L256
mkdir /$L256
symlink /f /$L256
link /f /$L256
rename /f /$L256
mknod /$L256 p
mksubvol /$L256
write /$L256 0 1
unlink /$L256
setxattr /f user.$L256 1
setxattr /$L256 user.a 1
create /$L255
rename /$L255 /f
EOF2

err_case einval "4: rename: $E_INVAL
5: rename: $E_INVAL
6: falloc: $E_INVAL
7: punch: $E_INVAL
8: clonerange: $E_INVAL
9: rename: $E_INVAL
10: clone: $E_INVAL" <<'EOF2'
mkdir /d
mkdir /d/e
write /f 0 64k
rename /d /d/e/x
rename /d /d/x
falloc /f 0 0
punch /f 0 0
clonerange /f 1 4k /f 16k
rename /d /d/e exchange
clone /f /f
EOF2

err_case enodata "3: removexattr: $E_NODATA
4: setxattr: $E_NODATA
6: removexattr: $E_NODATA
7: setxattr: $E_NODATA" <<'EOF2'
create /f
mkdir /d
removexattr /f user.a
setxattr /f user.a 1 replace
setxattr /d user.b 1
removexattr /d user.c
setxattr /d user.c 1 replace
setxattr /f user.a 1 create
setxattr /f user.a 2 replace
removexattr /f user.a
EOF2

err_case eperm-enotty-eopnotsupp "4: link: $E_PERM
5: setxattr: $E_PERM
6: chattr: $E_NOTTY
7: chattr: $E_NOTTY
8: setxattr: $E_OPNOTSUPP
9: rmdir: $E_BUSY" <<'EOF2'
mkdir /d
mknod /p p
symlink /p /lp
link /d /d2
setxattr /lp user.a 1
chattr /p +C
chattr /lp +C
setxattr /d bogus.a 1
rmdir /
chattr /d +C
EOF2

# xattr values larger than a leaf
err_case exattr-size "*: setxattr: $E_NOSPC" -n 4k <<EOF2
create /f
setxattr /f user.big $(printf 'v%.0s' $(seq 5000))
setxattr /f user.ok small
EOF2

# ENOSPC: a 114M image filled; which write runs out first may differ,
# the errors must not
RUN_ERRNO_ONLY=1 err_case enospc "*: write: $E_NOSPC" <<'EOF2'
# @size: 114M
create /big
write /big 0 100m 0x61
sync
write /a 0 30m 0x62
sync
write /b 0 30m 0x63
create /c
falloc /c 0 40m
sync
mkdir /d
create /d/e
EOF2

# --strict: exit 1 at the first refusal, nothing after it applied
RUN_STRICT=1 RUN_EXPECT_RC=1 err_case strict "5: rename: $E_NOENT" <<'EOF2'
mkdir /d
write /d/f 0 100k 0x31
sync
write /d/g 0 5000 0x32
rename /d/nope /d/x
create /after
write /d/f 0 4k 0x33
unlink /d/g
EOF2
# --strict without refusals: exit 0
RUN_STRICT=1 err_case strict-clean "" <<'EOF2'
mkdir /d
write /d/f 0 100k 0x31
rename /d/f /d/g
EOF2

# syntax errors: exit 2, the message wl-exec.py gives, the image unchanged
syntax_case() {
	local name="$1" line="$2" s="$TMP/cases/$1.tlw"
	cat > "$s"
	run_scenario "syntax-$name" syntax_check "$s" "$line"
}
syntax_check() {
	local s="$1" line="$2" d="$SCN_DIR"
	run_fresh_image "$d/img" 256M
	cp --sparse=always "$d/img" "$d/orig"
	run_nocrash "$d/tl" "$TLOGCTL" run --commit "$d/img" "$s" || fail "tlogctl run crashed"
	python3 -S "$WLEXEC" "$s" "$d/nonexistent-mount" > /dev/null 2> "$d/wl.err"
	[ $? = 2 ] || fail "wl-exec.py does not exit 2 on $s"
	[ "$(cat "$d/tl.rc")" = 2 ] || { cat "$d/tl.err"; fail "tlogctl run exited $(cat "$d/tl.rc"), not 2"; }
	grep -q "^$s:$line: " "$d/tl.err" || { cat "$d/tl.err"; fail "no '$s:$line: ...' message"; }
	grep -qxF -f "$d/wl.err" "$d/tl.err" || {
		echo "wl-exec.py: $(cat "$d/wl.err")"; echo "tlogctl:    $(cat "$d/tl.err")"
		fail "the syntax error messages differ"; }
	cmp -s "$d/img" "$d/orig" || fail "tlogctl run changed the image of a script with a syntax error"
	echo "$(cat "$d/tl.err")"
}
syntax_case unknown-op 3 <<'EOF2'
mkdir /d
create /d/f
frobnicate /d/f
EOF2
syntax_case bad-number 2 <<'EOF2'
create /f
write /f 0 12q
EOF2
syntax_case arg-count 4 <<'EOF2'
mkdir /d
sync
# a comment
link /d
EOF2
syntax_case relative-path 1 <<'EOF2'
create f
EOF2
syntax_case unclosed-quote 2 <<'EOF2'
create /f
setxattr /f user.a 'abc
EOF2
syntax_case bad-mode 2 <<'EOF2'
create /f
chmod /f 0999
EOF2
syntax_case mknod-numbers 1 <<'EOF2'
mknod /c c
EOF2
syntax_case bad-keyword 2 <<'EOF2'
create /f
rename /f /g sideways
EOF2
syntax_case bad-time 2 <<'EOF2'
create /f
utimes /f 1.1234567891 0
EOF2
syntax_case bad-flags 2 <<'EOF2'
create /f
chattr /f +X
EOF2
syntax_case last-line 40 <<EOF2
$(for i in $(seq 39); do echo "create /f$i"; done)
write /f1 0 0x
EOF2

scenario_summary "tlogctl run refusals against the kernel"
exit 0
