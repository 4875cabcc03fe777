/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Compressing file data as btrfs stores it (compression.c): a zlib
 * stream, a zstd frame with at most a 2^17 window, or btrfs's lzo
 * framing (a total length, then one length-prefixed lzo1x segment per
 * sector of input, no segment header across a sector boundary).  The
 * readers in file-read.c and the kernel's decode all three.
 */
#ifndef TLOG_COMPRESSION_H
#define TLOG_COMPRESSION_H

#include <stddef.h>
#include "format.h"

/* The most file data one compressed extent holds (BTRFS_MAX_UNCOMPRESSED). */
#define BTRFS_MAX_UNCOMPRESSED	(128U * 1024)

/* The kernel's default levels (zlib 3, zstd 3; lzo has none). */
#define BTRFS_ZLIB_DEFAULT_LEVEL 3
#define BTRFS_ZSTD_DEFAULT_LEVEL 3

/*
 * Compress @len bytes (at most BTRFS_MAX_UNCOMPRESSED) with @type
 * (BTRFS_COMPRESS_*) at @level (0: the default) into @out, which has room
 * for @cap bytes.  0 and *@out_len, -E2BIG when the result would not fit
 * @cap (the data does not compress enough), other -errno on failure.
 */
int btrfs_compress(u8 type, int level, const u8 *in, size_t len, u32 sectorsize, u8 *out,
		   size_t cap, size_t *out_len);

#endif
