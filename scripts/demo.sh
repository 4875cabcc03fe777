#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A short tour of tlogctl on a file image made by mkfs.btrfs.
set -euo pipefail
cd "$(dirname "$0")/.."
TL=./tlogctl
work=$(mktemp -d /tmp/tlogctl-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/src/docs" "$work/src/bin"
echo "hello from an offline image" > "$work/src/docs/readme.txt"
head -c 200000 /dev/urandom > "$work/src/bin/blob"
ln -s docs/readme.txt "$work/src/link"
truncate -s 256M "$work/demo.img"
mkfs.btrfs -q -f -L demo -r "$work/src" "$work/demo.img"

run() { echo; echo "\$ tlogctl $*"; "$TL" "$@"; }
run --version
run mkfs -L made-by-tlogctl -b 256M -f "$work/fresh.img"
run dump-tree -t fs "$work/fresh.img"
run dump-super "$work/demo.img"
run ls -l -i "$work/demo.img" /
run ls -l "$work/demo.img" /docs
run stat "$work/demo.img" /bin/blob
run fiemap -v "$work/demo.img" /bin/blob
run seek "$work/demo.img" /bin/blob -a -r 0
run cat "$work/demo.img" /docs/readme.txt
echo; echo "\$ tlogctl stat --format json IMAGE /link"
"$TL" stat --format json "$work/demo.img" /link
