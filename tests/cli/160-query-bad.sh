#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# fiemap and seek on bad input: missing paths, directories, symlinks, bad or
# huge offsets get one error line and exit 1; offsets past EOF get the
# kernel's answers (EOF, no extents), not errors.
. "$(dirname "$0")/../common.sh"
need_cmd mkfs.btrfs

# like expect_error, and nothing may reach stdout before the error
expect_error_quiet() {
	expect_error "$@"
	[ ! -s "$TMP/r.out" ] || { cat "$TMP/r.out"; fail "output on stdout despite the error: $*"; }
}

src="$TMP/src"
mkdir -p "$src/dir"
head -c 10000 /dev/urandom > "$src/dir/file"
ln -s file "$src/dir/link"
ln -s dir "$src/dirlink"
make_image "$TMP/img" 256M -r "$src"
img="$TMP/img"

for cmd in "fiemap" "seek -d 0"; do
	set -- $cmd
	c=$1; shift
	expect_error_quiet "'nope' not found" "$TLOGCTL" "$c" "$img" /dir/nope "$@"
	expect_error_quiet "it is a directory" "$TLOGCTL" "$c" "$img" /dir "$@"
	expect_error_quiet "it is a symlink" "$TLOGCTL" "$c" "$img" /dir/link "$@"
	expect_error_quiet "symlink" "$TLOGCTL" "$c" "$img" /dirlink/file "$@"
	expect_error_quiet "not a directory" "$TLOGCTL" "$c" "$img" /dir/file/x "$@"
done
expect_error_quiet "invalid offset" "$TLOGCTL" seek "$img" /dir/file -d 12abc
expect_error_quiet "invalid offset" "$TLOGCTL" seek "$img" /dir/file -d 18446744073709551615
expect_error_quiet "invalid offset" "$TLOGCTL" seek "$img" /dir/file -d -- -5
expect_error_quiet "one of -d, -h or -a" "$TLOGCTL" seek "$img" /dir/file 0
expect_error_quiet "invalid offset" "$TLOGCTL" fiemap "$img" /dir/file -- -1
expect_error_quiet "invalid length" "$TLOGCTL" fiemap "$img" /dir/file 0 1x
expect_error_quiet "Invalid argument" "$TLOGCTL" fiemap "$img" /dir/file 0 0
expect_error_quiet "File too large" "$TLOGCTL" fiemap "$img" /dir/file 9223372036854775807

# past EOF: the kernel's answers
tl seek "$img" /dir/file -d 10000 > "$TMP/o" || fail "seek past EOF"
printf 'Whence\tResult\nDATA\tEOF\n' | cmp -s - "$TMP/o" || { cat "$TMP/o"; fail "seek -d at EOF"; }
tl seek "$img" /dir/file -h 1G > "$TMP/o" || fail "seek far past EOF"
printf 'Whence\tResult\nHOLE\tEOF\n' | cmp -s - "$TMP/o" || { cat "$TMP/o"; fail "seek -h past EOF"; }
tl fiemap --format json "$img" /dir/file 1G > "$TMP/o" || fail "fiemap past EOF"
[ "$(cat "$TMP/o")" = '{"extents":[]}' ] || { cat "$TMP/o"; fail "fiemap past EOF has extents"; }
tl fiemap --format json "$img" /dir/file 9223372036854771712 > "$TMP/o" || fail "fiemap at the largest offset"
exit 0
