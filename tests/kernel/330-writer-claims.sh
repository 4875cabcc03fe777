#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Writers claim their target.  Every writer (replay-log, zero-log, mkfs)
# refuses an image the kernel has mounted — through a loop device backed
# by the file, or the loop device given directly — with "IMAGE is mounted
# on DIR", and an image or device another process holds the BSD lock of
# (flock IMAGE sleep) with "IMAGE is in use (locked by another process)".
# The lock is held from before the first read to the last write: a second
# writer is refused while zero-log waits at its question, and a mount
# made during the question is caught before anything is written.  Each
# refusal leaves the image byte-identical; unclaimed, the writers work.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs btrfs python3 sha256sum flock losetup
need_mount

mnt="$TMP/mnt"
make_image "$TMP/k.img" 256M
mount_image "$TMP/k.img" "$mnt" commit=3600
echo committed > "$mnt/old"
sync
python3 - "$mnt" <<'PY'
import os, sys
for i in range(20):
    fd = os.open(os.path.join(sys.argv[1], "f%d" % i), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"x" * 5000)
    os.fsync(fd)
    os.close(fd)
PY
cp --sparse=always "$TMP/k.img" "$TMP/crash.img"
umount_image "$mnt"
# log_state IMG: the first line of dump-log ("log root tree ..." or "no log tree")
log_state() {
	tl dump-log "$1" > "$TMP/dump-log.out" || fail "dump-log $1"
	head -1 "$TMP/dump-log.out"
}
log_state "$TMP/crash.img" | grep -q "^log root tree" || fail "the crash image has no log"

# writers_refuse IMG TEXT: each writer exits 1 with one error naming TEXT
# and leaves IMG byte-identical
writers_refuse() {
	local img="$1" text="$2" sum
	sum=$(sha256sum < "$img")
	expect_error "$text" "$TLOGCTL" replay-log "$img"
	expect_error "$text" "$TLOGCTL" zero-log -f "$img"
	expect_error "$text" "$TLOGCTL" mkfs -f "$img"
	[ "$(sha256sum < "$img")" = "$sum" ] || fail "a refused writer changed $img"
}

# --- mounted (read-only, without replay, so that the kernel writes nothing)
cp --sparse=always "$TMP/crash.img" "$TMP/m.img"
mount_image "$TMP/m.img" "$mnt" ro,rescue=nologreplay
loop=${LOOPS[-1]}
writers_refuse "$TMP/m.img" "m.img is mounted on $mnt\$"
ln -s "$TMP/m.img" "$TMP/link.img"
writers_refuse "$TMP/link.img" "link.img is mounted on $mnt\$"
writers_refuse "$loop" "$loop is mounted on $mnt\$"
# readers may look at a mounted image
tl ls "$TMP/m.img" / > /dev/null || fail "ls of a mounted image"
tl replay-log --dry-run "$TMP/m.img" > /dev/null || fail "a dry run of a mounted image"
umount_image "$mnt"
echo "mounted: refused by every writer, through the file, a link and the device"

# --- locked by another process
# hold_lock PATH: "flock PATH sleep" in the background, once it holds the
# lock; release_lock ends it (flock's child, which shares the lock, too)
hold_lock() {
	timeout 120 flock "$1" sleep 120 &
	holder=$!
	for _ in $(seq 100); do
		flock -n "$1" true 2>/dev/null || return 0
		sleep 0.1
	done
	fail "flock $1 did not take the lock"
}
release_lock() {
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	holder=
}
holder=
trap 'release_lock; cleanup' EXIT

cp --sparse=always "$TMP/crash.img" "$TMP/l.img"
hold_lock "$TMP/l.img"
writers_refuse "$TMP/l.img" "l.img is in use (locked by another process)"
release_lock
# a loop device (attached, not mounted) locked as a udev client would
loop=$(losetup -f --show "$TMP/l.img") || fail "losetup"
LOOPS+=("$loop")
hold_lock "$loop"
writers_refuse "$loop" "$loop is in use (locked by another process)"
release_lock
# unlocked, the attached device is written: O_EXCL is ours to take
tl replay-log "$loop" > "$TMP/out" 2>&1 || { cat "$TMP/out"; fail "replay-log on an idle loop device"; }
losetup -d "$loop"
log_state "$TMP/l.img" | grep -q "^no log tree" || fail "replay-log through the device left the log"
check_clean "$TMP/l.img" "replayed through a loop device"
echo "locked: refused; unlocked and unmounted: written"

# --- while zero-log waits at its question (on a terminal)
# ask IMG ANSWER [ACTION]: run "zero-log IMG" on a pty, wait for its
# question, run ACTION (a shell command) while it waits, then answer.
# Prints zero-log's output and exits with its status.
ask() {
	python3 - "$TLOGCTL" "$@" <<'PY'
import os, pty, subprocess, sys, time
tlogctl, img, answer = sys.argv[1:4]
action = sys.argv[4] if len(sys.argv) > 4 else None
pid, fd = pty.fork()
if pid == 0:
    os.execv(tlogctl, [tlogctl, "zero-log", img])
out = b""
deadline = time.time() + 30
while b"[y/N]" not in out and time.time() < deadline:
    try:
        out += os.read(fd, 4096)
    except OSError:
        break
if b"[y/N]" not in out:
    sys.stdout.write(out.decode(errors="replace"))
    sys.exit("no question asked")
if action:
    r = subprocess.run(action, shell=True)
    if r.returncode:
        sys.exit("the action failed (exit %d)" % r.returncode)
os.write(fd, answer.encode() + b"\n")
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
PY
}

cp --sparse=always "$TMP/crash.img" "$TMP/q.img"
sum=$(sha256sum < "$TMP/q.img")
# a second writer is refused while the first one asks
ask "$TMP/q.img" n "
	! '$TLOGCTL' replay-log '$TMP/q.img' 2> '$TMP/second.err' &&
	grep -q 'q.img is in use (locked by another process)' '$TMP/second.err'
" > "$TMP/ask.out" || { cat "$TMP/ask.out" "$TMP/second.err"; fail "a second writer during the question"; }
grep -q "Nothing changed" "$TMP/ask.out" || fail "answering n: $(cat "$TMP/ask.out")"
[ "$(sha256sum < "$TMP/q.img")" = "$sum" ] || fail "the refused second writer or 'n' changed the image"

# a mount made during the question is caught before the first write
rc=0
ask "$TMP/q.img" y "mount -o loop,ro,rescue=nologreplay '$TMP/q.img' '$mnt'" > "$TMP/ask.out" || rc=$?
MOUNTS+=("$mnt")
for l in $(losetup -j "$TMP/q.img" -O NAME -n); do LOOPS+=("$l"); done
[ $rc = 1 ] || { cat "$TMP/ask.out"; fail "zero-log answered y under a new mount exited $rc"; }
grep -q "ERROR: .*mounted on $mnt" "$TMP/ask.out" || { cat "$TMP/ask.out"; fail "no 'mounted' error"; }
umount_image "$mnt"
[ "$(sha256sum < "$TMP/q.img")" = "$sum" ] || fail "zero-log wrote under a mount"

# and with nobody else around, "y" discards the log
ask "$TMP/q.img" y > "$TMP/ask.out" || { cat "$TMP/ask.out"; fail "zero-log answered y"; }
grep -q "Log discarded" "$TMP/ask.out" || fail "answering y: $(cat "$TMP/ask.out")"
log_state "$TMP/q.img" | grep -q "^no log tree" || fail "the log is still there"
check_clean "$TMP/q.img" "after zero-log on a terminal"
echo "question pending: a second writer refused, a new mount caught, then written"
exit 0
