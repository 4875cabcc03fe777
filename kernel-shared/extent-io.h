/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The tree block cache's lifecycle, for opening and closing a filesystem.
 * Reading, creating and dirtying blocks is declared in ctree.h, where the
 * tree code that uses them looks.
 */
#ifndef TLOG_EXTENT_IO_H
#define TLOG_EXTENT_IO_H

#include "ctree.h"

/* An empty cache for blocks of @nodesize; 0 or -ENOMEM. */
int eb_cache_init(struct eb_cache *cache, u32 nodesize);
/* Free every block, dirty or not. */
void eb_cache_destroy(struct eb_cache *cache);
/*
 * Read tree blocks in place from now on when the device can (blockdev.h),
 * for a filesystem opened read-only; and stop, for close.
 */
void btrfs_begin_reading_in_place(struct tlog_fs *fs);
void btrfs_end_reading_in_place(struct tlog_fs *fs);

#endif
