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
/*
 * Bytes a new extent of @type could still get: the free space of its
 * block groups (space freed in this transaction not counted: it is pinned
 * until the commit) and the device's unallocated space.
 */
u64 tlog_trans_space_left(struct tlog_trans *trans, u64 type);
/* Take the given range, which must be free, as allocated (a logged data extent). */
int tlog_trans_claim_space(struct tlog_trans *trans, u64 bytenr, u64 len);

/*
 * Data extents whose last reference went in a transaction that defers
 * frees (log replay, like the kernel's delayed references) are freed at
 * its end unless referenced again: tlog_trans_run_deferred_frees() (also
 * run by commit) calls btrfs_finish_data_free() for each.
 */
bool tlog_trans_defers_frees(struct tlog_trans *trans);
int tlog_trans_defer_data_free(struct tlog_trans *trans, u64 bytenr, u64 len);
int tlog_trans_run_deferred_frees(struct tlog_trans *trans);

#endif
