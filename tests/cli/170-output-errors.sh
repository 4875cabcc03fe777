#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A failed write to standard output is an error of every command, in text
# and JSON: with stdout on /dev/full each one exits 1 with exactly one
# error line, "cannot write output (No space left on device)".  The
# writers run on throwaway copies.  A reader that closes the pipe still
# ends a command quietly (SIGPIPE), and with SIGPIPE ignored the EPIPE is
# reported like ENOSPC.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs python3 cmp

[ -w /dev/full ] || skip "no /dev/full"

src="$TMP/src"
mkdir -p "$src/docs"
echo hello > "$src/docs/readme.txt"
head -c 300000 /dev/urandom > "$src/big"
ln -s docs/readme.txt "$src/link"
img="$TMP/img"
make_image "$img" 256M -r "$src"

# An image with a log, so that the log commands have something to say.
logimg=$img
if command -v btrfs-image >/dev/null && command -v xz >/dev/null; then
	x=$(find "$CORPUS/btrfs-progs/tests" -name '*.img.xz' 2>/dev/null | sort | head -1)
	if [ -n "$x" ] && xz -dc "$x" > "$TMP/dump" &&
	   btrfs-image -r "$TMP/dump" "$TMP/log.img" >/dev/null 2>&1; then
		logimg="$TMP/log.img"
	fi
fi
[ "$logimg" != "$img" ] || echo "note: no log metadump in the corpus, log commands run on an image without a log"

# CMD... with stdout on /dev/full: exit 1, one error line, about the output
to_full() {
	expect_error "cannot write output (No space left on device)" \
		bash -c 'exec "$@" > /dev/full' to-full "$TLOGCTL" "$@"
}

n=0
for fmt in "" "--format json"; do
	to_full dump-super $fmt "$img"
	to_full dump-super -f $fmt "$img"
	to_full dump-tree $fmt "$img"
	to_full dump-tree -t chunk $fmt "$img"
	to_full dump-tree -t log $fmt "$logimg"
	to_full dump-log $fmt "$logimg"
	to_full dump-log $fmt "$img"
	to_full ls $fmt "$img" /
	to_full ls -l -i $fmt "$img" /
	to_full stat $fmt "$img" /link
	to_full stat $fmt "$img" /big
	to_full fiemap $fmt "$img" /big
	to_full seek $fmt "$img" /big -d 0
	to_full seek $fmt "$img" /big -a -r 0
	to_full seek $fmt "$img" /big -h -r 0
	to_full replay-log --dry-run $fmt "$logimg"
	to_full replay-log --dry-run $fmt "$img"
	cp "$logimg" "$TMP/w.img"
	to_full replay-log -v $fmt "$TMP/w.img"
	n=$((n + 18))
done
to_full fiemap -v "$img" /big
to_full cat "$img" /big
to_full cat "$img" /docs/readme.txt
cp "$logimg" "$TMP/w.img"
to_full zero-log -f "$TMP/w.img"
to_full zero-log -f "$img"
rm -f "$TMP/new.img"
to_full mkfs "$TMP/new.img"
to_full mkfs -O list-all
to_full --version
to_full help
n=$((n + 9))
for c in $(tl --help | awk '/^Commands:/{on=1; next} on && /^  [a-z]/{print $1}'); do
	to_full "$c" --help
	to_full help "$c"
	n=$((n + 2))
done

# export writes DEST, not stdout: nothing is lost
tl export "$img" /big "$TMP/exported" > /dev/full || fail "export with stdout on /dev/full"
cmp -s "$src/big" "$TMP/exported" || fail "export: DEST differs"
# mkfs -q prints nothing: nothing to lose either
rm -f "$TMP/new.img"
tl mkfs -q "$TMP/new.img" > /dev/full || fail "mkfs -q with stdout on /dev/full"

# A command that fails before printing keeps its own error, alone.
expect_error "cannot find /nope" bash -c 'exec "$@" > /dev/full' to-full "$TLOGCTL" ls "$img" /nope
grep -q "cannot write output" "$TMP/r.err" && fail "ls of a missing path reports the output too"

# A reader gone: SIGPIPE ends the command quietly, as "| head" expects...
rc=0
tl dump-tree "$img" 2> "$TMP/pipe.err" | head -c 10 > /dev/null || rc=$?
[ $rc -eq 0 ] || [ $rc -eq 141 ] || fail "dump-tree | head exits $rc"
[ ! -s "$TMP/pipe.err" ] || { cat "$TMP/pipe.err"; fail "dump-tree | head printed an error"; }
# ...and with SIGPIPE ignored the EPIPE is one error line and exit 1.
python3 - "$TLOGCTL" "$img" <<'PY' || fail "EPIPE with SIGPIPE ignored"
import os, signal, subprocess, sys
tl, img = sys.argv[1], sys.argv[2]
for args in (["dump-tree", img], ["dump-tree", "--format", "json", img],
             ["ls", "-l", img, "/"], ["stat", "--format", "json", img, "/big"]):
    # the reader is gone before the command starts: every write fails
    r, w = os.pipe()
    os.close(r)
    p = subprocess.Popen([tl] + args, stdout=w, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN))
    os.close(w)
    err = p.stderr.read().decode()
    rc = p.wait()
    lines = [l for l in err.splitlines() if l.startswith("tlogctl: ERROR:")]
    if rc != 1 or len(lines) != 1 or "cannot write output (Broken pipe)" not in lines[0]:
        sys.exit(f"{args}: exit {rc}, stderr {err!r}")
PY
echo "$n commands checked with stdout on /dev/full"
exit 0
