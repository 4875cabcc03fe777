/* SPDX-License-Identifier: GPL-2.0-only */
/* File extent items of an inode in a subvolume tree: dropping ranges, writing into prealloc. */
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

/*
 * Data written into the preallocated extent item covering [start, end)
 * (btrfs_mark_extent_written): that range becomes a regular item, what
 * is left of the item before and after stays preallocated, and a regular
 * item of the same extent right before or after, mapped contiguously,
 * merges with the written range.  Every item touched is stamped with the
 * transaction, as the kernel's are; the extent's reference count follows
 * the number of items.  -EUCLEAN when no preallocated item covers the
 * range.
 */
int btrfs_mark_extent_written(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			      u64 start, u64 end);

#endif
