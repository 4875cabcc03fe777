/* SPDX-License-Identifier: GPL-2.0-only */
/* Data extents: allocation, references and release (extent-tree.c). */
#ifndef TLOG_EXTENT_TREE_H
#define TLOG_EXTENT_TREE_H

#include <stdbool.h>
#include "transaction.h"

/*
 * A new data extent of @len bytes (sector multiple) for file offset
 * @offset of inode @ino in @root, with its extent item and one
 * EXTENT_DATA_REF.  Its data must be written with btrfs_write_data().
 */
int btrfs_alloc_data_extent(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			    u64 offset, u64 len, u64 *bytenr);
/* The same, taking less than @len when space is fragmented; *@got is what it took. */
int btrfs_alloc_data_extent_upto(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
				 u64 offset, u64 len, u64 *bytenr, u64 *got);
/*
 * Find @key in the extent tree to change it (@ins_len as for
 * btrfs_search_slot_for_write): 0 found, 1 not, or -errno with @path
 * released.  *@eroot is the extent tree, for the caller's edits.
 */
int btrfs_search_extent_tree(struct tlog_trans *trans, const struct btrfs_key *key, int ins_len,
			     struct btrfs_root **eroot, struct btrfs_path *path);

/*
 * Drop the reference of (@root, @ino, @offset) to the data extent at
 * @bytenr; the last one frees the extent and its checksums.
 */
int btrfs_free_data_extent(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root,
			   u64 ino, u64 offset);

/*
 * The extent item of a data extent written in the transaction a log belongs
 * to, which only the log referred to: refs 1, an inline EXTENT_DATA_REF,
 * its space taken from the free space (log replay).
 */
int btrfs_claim_logged_data_extent(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root,
				   u64 ino, u64 offset);

/*
 * Whether anything but file @ino of @root, at data ref offset @offset
 * (the file position of the extent's first byte), may reference the data
 * extent at @bytenr (btrfs_cross_ref_exist, not strict): more than one
 * back reference, a shared one, references counted elsewhere, or the
 * extent as old as the root's last snapshot.  A write may go into the
 * extent in place only when it is not shared.
 */
int btrfs_data_extent_shared(struct tlog_fs *fs, struct btrfs_root *root, u64 ino, u64 offset,
			     u64 bytenr, u64 len, bool *shared);

/* Free a data extent whose deferred free came due (see tlog_trans_defers_frees). */
int btrfs_finish_data_free(struct tlog_trans *trans, u64 bytenr, u64 len);

#endif
