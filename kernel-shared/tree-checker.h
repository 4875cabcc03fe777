/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Item checks, as the kernel's tree-checker applies them to every leaf it
 * reads.  A leaf whose checksum and layout are fine can still hold items
 * the kernel refuses (an inode without a file type, an inline extent whose
 * length disagrees with its item); a writer that accepted them would
 * replay a log the kernel cannot mount into an image btrfs check rejects.
 *
 * A finding is recorded in the error context with its place: tree, block,
 * slot, key, and what is wrong.
 */
#ifndef TLOG_TREE_CHECKER_H
#define TLOG_TREE_CHECKER_H

#include "ctree.h"

/*
 * Check the item at @slot of @leaf, owned by tree @owner (a log tree for
 * subvolume @owner's log: pass the log's objectid).  @prev is the key of
 * the item before it in the same leaf, or NULL for slot 0: file extents
 * may not overlap their predecessor.  Returns 0 or -EUCLEAN.
 */
int btrfs_check_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
		     const struct btrfs_key *key, const struct btrfs_key *prev);

/* Verify a tree block image (checksum, header and layout) read for @bytenr. */
int btrfs_check_tree_block(struct tlog_fs *fs, const u8 *buf, u64 bytenr);
/* The same without the checksum: header and item layout only. */
int btrfs_check_tree_block_layout(struct tlog_fs *fs, const u8 *buf, u64 bytenr);

#endif
