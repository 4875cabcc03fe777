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
	/*
	 * The clock, read once when the transaction starts: what the kernel
	 * would call the current time for changes made in it (the ctime of
	 * an inode that loses a name in log replay).  One reading for the
	 * whole transaction keeps its changes consistent with each other.
	 */
	struct btrfs_timespec now;
	const struct tlog_trans_ops *ops;
	void *priv;			/* other allocators' state (the image's is around this) */
};



/* ---- transactions on an image (transaction.c) ---- */

/*
 * Start the transaction after the committed one on @fs (opened writable).
 * Tree blocks come from the metadata block groups' free space; the extent
 * tree, free space tree, block group items and root items are brought in
 * step at commit.
 */
int tlog_trans_start(struct tlog_fs *fs, struct tlog_trans **ret);

/* The transaction replays the log tree (the image may have one). */
#define TLOG_TRANS_LOG_REPLAY	(1U << 0)
/*
 * Changes stay in the block cache and are never written: an image open
 * read-only can be changed in memory (the log overlay of queries).
 */
#define TLOG_TRANS_IN_MEMORY	(1U << 1)
int tlog_trans_start_flags(struct tlog_fs *fs, unsigned int flags, struct tlog_trans **ret);
/* Keep [bytenr, bytenr + len) out of this transaction's allocations (log blocks). */
int tlog_trans_pin(struct tlog_trans *trans, u64 bytenr, u64 len);
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
/* Take the given range, which must be free, as allocated (a logged data extent). */
int tlog_trans_claim_space(struct tlog_trans *trans, u64 bytenr, u64 len);

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
/* One more reference (@root, @ino, @offset) to the data extent at @bytenr. */
int btrfs_add_data_ref(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root, u64 ino,
		       u64 offset);
/*
 * The extent item of a data extent written in the transaction a log belongs
 * to, which only the log referred to: refs 1, an inline EXTENT_DATA_REF,
 * its space taken from the free space (log replay).
 */
int btrfs_claim_logged_data_extent(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root,
				   u64 ino, u64 offset);
/* Drop the last reference of a data extent, leaving its item with refs 0. */
int btrfs_drop_last_data_ref(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root, u64 ino,
			     u64 offset);
/*
 * Data extents whose last reference went in a transaction that defers
 * frees (log replay, like the kernel's delayed references) are freed at
 * its end unless referenced again: tlog_trans_run_deferred_frees() (also
 * run by commit) calls btrfs_finish_data_free() for each.
 */
bool tlog_trans_defers_frees(struct tlog_trans *trans);
int tlog_trans_defer_data_free(struct tlog_trans *trans, u64 bytenr, u64 len);
int tlog_trans_run_deferred_frees(struct tlog_trans *trans);
int btrfs_finish_data_free(struct tlog_trans *trans, u64 bytenr, u64 len);
/* Write data into space allocated in this transaction (all copies). */
int btrfs_write_data(struct tlog_trans *trans, u64 bytenr, const void *buf, size_t len);
/* Checksum @len bytes of data written at @bytenr into the csum tree. */
int btrfs_insert_data_csums(struct tlog_trans *trans, u64 bytenr, const void *data, u64 len);
/* Insert @sectors checksums (csum_size bytes each) for the data at @bytenr. */
int btrfs_insert_csums(struct tlog_trans *trans, u64 bytenr, const u8 *csums, u64 sectors);
/*
 * Replace the checksums of [start, end) in the csum tree by those @src (a
 * log tree) holds for that range, piece by piece; ranges @src does not
 * cover are left alone.  *@copied gets the bytes covered.
 */
int btrfs_copy_csums(struct tlog_trans *trans, struct btrfs_root *src, u64 start, u64 end,
		     u64 *copied);
/* Remove the checksums of [bytenr, bytenr + len), splitting items that overlap. */
int btrfs_delete_data_csums(struct tlog_trans *trans, u64 bytenr, u64 len);
#endif
