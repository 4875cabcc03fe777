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
#endif
