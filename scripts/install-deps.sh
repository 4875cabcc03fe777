#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Install what tlogctl needs to build and test on Debian 12 (run as root).
set -euo pipefail

BUILD_DEPS=(build-essential autoconf automake libtool pkg-config
	libblkid-dev uuid-dev zlib1g-dev libzstd-dev liblzo2-dev libisal-dev
	libxxhash-dev libgcrypt20-dev libjson-c-dev libcriterion-dev libarchive-dev)
# Test-only: the oracles (btrfs-progs, the kernel through mount) and tools.
TEST_DEPS=(btrfs-progs xfsprogs e2fsprogs util-linux xz-utils python3 attr
	coreutils kmod clang libclang-rt-dev acl tar)

missing=()
for p in "${BUILD_DEPS[@]}" "${TEST_DEPS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi
