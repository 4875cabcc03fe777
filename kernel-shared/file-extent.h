/* SPDX-License-Identifier: GPL-2.0-only */
/* File extent items of an inode in a subvolume tree: dropping ranges. */
#ifndef TLOG_FILE_EXTENT_H
#define TLOG_FILE_EXTENT_H

#include "transaction.h"

/*
 * Remove what inode @ino maps in [start, end) (end (u64)-1 for "to the end
 * of the file"), cutting or splitting items at the edges and releasing the
 * references of dropped extents.  *@bytes_found gets the bytes that
 * counted in the inode's nbytes (regular and prealloc extents, inline
 * data; not holes), which the caller subtracts.  Inline extents can only
 * be dropped whole (-EOPNOTSUPP otherwise, as in the kernel).
 */
int btrfs_drop_file_extents(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			    u64 start, u64 end, u64 *bytes_found);

#endif
