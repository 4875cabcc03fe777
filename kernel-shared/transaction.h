/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The running transaction, as far as the B-tree code needs it: its transid
 * (blocks written in it carry it and are changed in place; older blocks
 * are copied on write) and where new tree blocks come from and freed ones
 * go.  The space allocator plugs in behind the ops, so the B-tree code can
 * be exercised on an in-memory allocator as well as on a real image.
 */
#ifndef TLOG_TRANSACTION_H
#define TLOG_TRANSACTION_H

#include "ctree.h"

struct tlog_trans;

struct tlog_trans_ops {
	/* An unused, nodesize-aligned address for a new block of @root at @level. */
	int (*alloc_tree_block)(struct tlog_trans *trans, struct btrfs_root *root,
				int level, u64 *bytenr);
	/* @bytenr no longer belongs to @root (its space is pinned until commit). */
	int (*free_tree_block)(struct tlog_trans *trans, struct btrfs_root *root,
			       u64 bytenr, int level);
	/*
	 * Optional: @buf is being copied to @cow and may be shared with other
	 * trees; sort out the references, and clear *@last_ref when @buf
	 * stays in use elsewhere (it is then not freed).
	 */
	int (*cow_tree_block)(struct tlog_trans *trans, struct btrfs_root *root,
			      const struct extent_buffer *buf, const struct extent_buffer *cow,
			      bool *last_ref);
};

struct tlog_trans {
	struct tlog_fs *fs;
	u64 transid;
	const struct tlog_trans_ops *ops;
	void *priv;			/* the allocator's state */
};



/* ---- transactions on an image (transaction.c) ---- */

/*
 * Start the transaction after the committed one on @fs (opened writable).
 * Tree blocks come from the metadata block groups' free space; the extent
 * tree, free space tree, block group items and root items are brought in
 * step at commit.
 */
int tlog_trans_start(struct tlog_fs *fs, struct tlog_trans **ret);
/*
 * Commit: record new and freed blocks in the extent and free space trees,
 * update block group and root items until nothing changes, write every
 * new block (all copies), flush, then the superblocks, flush.  Until the
 * primary superblock is written the image still shows the old state.
 */
int tlog_trans_commit(struct tlog_trans *trans);
/* Drop a transaction without writing anything. */
void tlog_trans_abort(struct tlog_trans *trans);
/*
 * SYSTEM space is grown when less than @bytes are free (default 16 tree
 * blocks); tests raise it to exercise the growth.
 */
void tlog_trans_set_system_reserve(struct tlog_trans *trans, u64 bytes);

/*
 * Space for extent-tree users: take @len bytes of a block group of @type
 * (BTRFS_BLOCK_GROUP_DATA...), and account a range as allocated or freed
 * in its block group's used bytes and the free space tree.  Freed space is
 * not handed out again before the commit.
 */
int tlog_trans_alloc_space(struct tlog_trans *trans, u64 type, u64 len, u64 align, u64 *ret);
int tlog_trans_account_space(struct tlog_trans *trans, u64 bytenr, u64 len, bool allocated);

/* References when copying a block a snapshot may share (backref.c). */
int btrfs_update_ref_for_cow(struct tlog_trans *trans, struct btrfs_root *root,
			     const struct extent_buffer *buf, const struct extent_buffer *cow,
			     bool *last_ref);

/* Drop one normal reference to a data extent others still reference. */
int btrfs_drop_data_ref(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root, u64 ino,
			u64 offset);

/* ---- data extents (extent-tree.c) and their checksums (file-item.c) ---- */

/*
 * A new data extent of @len bytes (sector multiple) for file offset
 * @offset of inode @ino in @root, with its extent item and one
 * EXTENT_DATA_REF.  Its data must be written with btrfs_write_data().
 */
int btrfs_alloc_data_extent(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			    u64 offset, u64 len, u64 *bytenr);
/*
 * Drop the reference of (@root, @ino, @offset) to the data extent at
 * @bytenr; the last one frees the extent and its checksums.
 */
int btrfs_free_data_extent(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root,
			   u64 ino, u64 offset);
/* Write data into space allocated in this transaction (all copies). */
int btrfs_write_data(struct tlog_trans *trans, u64 bytenr, const void *buf, size_t len);
/* Checksum @len bytes of data written at @bytenr into the csum tree. */
int btrfs_insert_data_csums(struct tlog_trans *trans, u64 bytenr, const void *data, u64 len);
/* Remove the checksums of [bytenr, bytenr + len), splitting items that overlap. */
int btrfs_delete_data_csums(struct tlog_trans *trans, u64 bytenr, u64 len);
#endif
