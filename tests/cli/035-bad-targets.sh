#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Targets that are not images, and images that are not whole, are named
# for what they are: a FIFO, a directory, a socket or a character device
# is refused at once by every command (a FIFO used to hang every reader);
# an image shorter than its device item gets a warning from readers and
# is refused by writers; a damaged primary superblock is reported with the
# copy used instead, writers refuse it unless a copy is chosen, and a
# backup copy's silence is never taken for "no log tree".  A refusal
# leaves the image byte-identical and its size unchanged.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs sha256sum python3 timeout

src="$TMP/src"
mkdir -p "$src/d"
echo data > "$src/d/f"
make_image "$TMP/good.img" 256M -r "$src"

# every command, with the arguments it needs after the image
commands=(
	"dump-super" "dump-tree" "dump-log" "ls|/" "stat|/d/f" "fiemap|/d/f"
	"seek|/d/f|-d|0" "cat|/d/f" "export|/d/f|$TMP/out" "replay-log"
	"replay-log|--dry-run" "zero-log|-f" "mkfs|-f"
)
writers=("replay-log" "zero-log|-f")

# run_cmd SPEC IMAGE: the command of SPEC on IMAGE, within 20 seconds
cmd_argv() {
	local spec="$1" img="$2" name rest
	IFS='|' read -r -a parts <<< "$spec"
	name=${parts[0]}
	rest=("${parts[@]:1}")
	case $name in
	mkfs|zero-log|replay-log|dump-super|dump-tree|dump-log)
		argv=("$name" "${rest[@]}" "$img") ;;
	seek)
		argv=("$name" "$img" "${rest[0]}" "${rest[1]}" "${rest[2]}") ;;
	*)
		argv=("$name" "$img" "${rest[@]}") ;;
	esac
}

# refuse_all TARGET TEXT: every command fails at once naming TEXT
refuse_all() {
	local target="$1" text="$2" spec start
	for spec in "${commands[@]}"; do
		cmd_argv "$spec" "$target"
		start=$(date +%s)
		expect_error "$text" timeout 20 "$TLOGCTL" "${argv[@]}"
		[ $(( $(date +%s) - start )) -lt 10 ] || fail "${argv[*]} took too long on $text"
	done
}

mkfifo "$TMP/fifo"
refuse_all "$TMP/fifo" "a FIFO, not a regular file or block device"
mkdir "$TMP/dir"
refuse_all "$TMP/dir" "a directory, not a regular file or block device"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$TMP/sock"
refuse_all "$TMP/sock" "a socket, not a regular file or block device"
refuse_all /dev/null "a character device, not a regular file or block device"
echo "not images: refused at once, by type"

# image_state IMG: what a refusal must not change
image_state() {
	echo "$(sha256sum < "$1") $(stat -c %s "$1")"
}

# writers_refuse IMG TEXT [OPTS]: every writer fails naming TEXT, IMG untouched
writers_refuse() {
	local img="$1" text="$2" spec before
	shift 2
	before=$(image_state "$img")
	for spec in "${writers[@]}"; do
		cmd_argv "$spec" "$img"
		expect_error "$text" "$TLOGCTL" "${argv[0]}" "$@" "${argv[@]:1}"
		[ "$(image_state "$img")" = "$before" ] || fail "${argv[*]} changed $img"
	done
}

# --- truncated: readers warn and work, writers refuse
cp --sparse=always "$TMP/good.img" "$TMP/short.img"
truncate -s 200M "$TMP/short.img"
tl ls "$TMP/short.img" /d > "$TMP/ls.out" 2> "$TMP/ls.err" || {
	cat "$TMP/ls.err"; fail "ls of a truncated image"; }
grep -qx f "$TMP/ls.out" || fail "ls of a truncated image lists $(cat "$TMP/ls.out")"
grep -q "^tlogctl: WARNING: .*short.img is 209715200 bytes, shorter than the 268435456" "$TMP/ls.err" ||
	{ cat "$TMP/ls.err"; fail "no warning for a truncated image"; }
writers_refuse "$TMP/short.img" "truncated"
echo "truncated image: readers warn, writers refuse"

# --- damaged primary superblock (a byte of its body, checksum left as is)
cp --sparse=always "$TMP/good.img" "$TMP/sb.img"
python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(65536 + 0x100)
    b = f.read(1)
    f.seek(65536 + 0x100)
    f.write(bytes([b[0] ^ 0x5a]))
' "$TMP/sb.img"
tl ls "$TMP/sb.img" /d > "$TMP/ls.out" 2> "$TMP/ls.err" || {
	cat "$TMP/ls.err"; fail "ls with a damaged primary superblock"; }
grep -qx f "$TMP/ls.out" || fail "ls from the backup lists $(cat "$TMP/ls.out")"
grep -q "^tlogctl: WARNING: the primary superblock of .*sb.img is damaged (superblock checksum mismatch); using copy 1" \
	"$TMP/ls.err" || { cat "$TMP/ls.err"; fail "no warning naming the copy used"; }
writers_refuse "$TMP/sb.img" "primary superblock is damaged.*--super 1"
# chosen explicitly, the copy is used, but it cannot say whether there is a log
writers_refuse "$TMP/sb.img" "cannot tell whether .* has a log tree" --super 1
# readers never say "no log tree" on a backup's word
for c in "replay-log --dry-run" "dump-log"; do
	# shellcheck disable=SC2086
	tl $c "$TMP/sb.img" > "$TMP/nl.out" 2>&1
	if grep -qi "has no log tree\|^no log tree" "$TMP/nl.out"; then
		cat "$TMP/nl.out"; fail "$c says 'no log tree' on the word of a backup copy"
	fi
done
# the primary chosen explicitly is an error, not a fallback
expect_error "primary superblock.*checksum mismatch" "$TLOGCTL" ls --super 0 "$TMP/sb.img" /
echo "damaged primary superblock: named, writers refuse, no 'no log' from a backup"

# --- the healthy image: writers still work
tl zero-log -f "$TMP/good.img" > "$TMP/z.out" 2>&1 || { cat "$TMP/z.out"; fail "zero-log on a good image"; }
grep -q "has no log tree" "$TMP/z.out" || fail "zero-log: $(cat "$TMP/z.out")"
tl replay-log "$TMP/good.img" > "$TMP/r.out" 2>&1 || { cat "$TMP/r.out"; fail "replay-log on a good image"; }
check_clean "$TMP/good.img" "good image after the writers"
echo "a healthy image: writers work"
