#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Every image of the public corpus (fuzzed images, log-tree metadumps) is
# read by dump-super and dump-tree: no crash, no hang, no sanitizer report,
# and a failure is one clear error line.
. "$(dirname "$0")/../common.sh"
need_cmd xz btrfs-image

[ -d "$CORPUS/btrfs-progs/tests" ] || skip "corpus not found at $CORPUS"

n=0 ok=0 errors=0
check_one() {
	local img="$1" name="$2" c rc
	for c in "dump-super -a" "dump-super -f" "dump-tree" "dump-tree -t log" "ls -l" "stat"; do
		local args=("$img")
		case $c in ls*|stat) args+=(/) ;; esac
		run_nocrash "$TMP/r" timeout 30 "$TLOGCTL" $c "${args[@]}" || fail "$name: $c"
		rc=$(cat "$TMP/r.rc")
		case $rc in
		0) ok=$((ok + 1)) ;;
		1)
			grep -q '^tlogctl: ERROR: ' "$TMP/r.err" ||
				{ cat "$TMP/r.err"; fail "$name: $c failed without an error line"; }
			errors=$((errors + 1)) ;;
		*) cat "$TMP/r.err"; fail "$name: $c exited $rc" ;;
		esac
	done
	n=$((n + 1))
}

for x in "$CORPUS"/btrfs-progs/tests/fuzz-tests/images/*.raw.xz; do
	xz -dc "$x" > "$TMP/img" || fail "cannot decompress $x"
	check_one "$TMP/img" "$(basename "$x")"
done

# Log-tree metadumps, restored by btrfs-image.
for x in $(find "$CORPUS/btrfs-progs/tests" -name '*.img.xz'); do
	xz -dc "$x" > "$TMP/dump" || fail "cannot decompress $x"
	btrfs-image -r "$TMP/dump" "$TMP/img" >/dev/null 2>&1 || fail "btrfs-image -r $x"
	check_one "$TMP/img" "$(basename "$(dirname "$x")")/$(basename "$x")"
	# these are valid images with a log: the log tree must be shown
	tl dump-tree -t log "$TMP/img" > "$TMP/log.out" || fail "$x: dump-tree -t log"
	grep -q '^log root tree' "$TMP/log.out" || fail "$x: no log root tree shown"
	grep -q 'INODE_ITEM' "$TMP/log.out" || fail "$x: log tree items not shown"
done
echo "$n images, $ok commands succeeded, $errors failed cleanly"
