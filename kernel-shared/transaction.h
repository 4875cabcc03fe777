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
/*
 * The block groups an image transaction allocates from (the chunk code
 * grows and cuts them); NULL for a transaction of another allocator.
 */
struct tlog_block_groups;
struct tlog_block_groups *tlog_trans_block_groups(struct tlog_trans *trans);
/* Keep [bytenr, bytenr + len) out of this transaction's allocations (log blocks). */
int tlog_trans_pin(struct tlog_trans *trans, u64 bytenr, u64 len);
/*
 * Commit: record new and freed blocks in the extent and free space trees,
 * update block group and root items until nothing changes, write every
 * new block (all copies), flush, then the superblocks, flush.  Until the
 * primary superblock is written the image still shows the old state.
 * The superblocks have log_root 0: the log ends (its blocks, written or
 * not, are free space in the next transaction, and no log root stays
 * cached, neither ours nor one a replay read).
 */
int tlog_trans_commit(struct tlog_trans *trans);
/*
 * Drop a transaction without writing anything.  Its log goes too; a log a
 * sync wrote stays on the image, and @fs then shows it as an open would.
 */
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
 * A data extent of @len bytes, or less (not below @min) when the space
 * is fragmented, as btrfs_reserve_extent settles: a new chunk first, then
 * the longest free range.
 * *@got is the length taken.
 */
int tlog_trans_alloc_extent(struct tlog_trans *trans, u64 type, u64 len, u64 min, u64 *ret,
			    u64 *got);
/*
 * Bytes a new extent of @type could still get: the free space of its
 * block groups (space freed in this transaction not counted: it is pinned
 * until the commit) and the device's unallocated space.
 */
u64 tlog_trans_space_left(struct tlog_trans *trans, u64 type);
/* The same within the block groups only (no new chunk). */
u64 tlog_trans_group_space(struct tlog_trans *trans, u64 type);
/*
 * A new chunk of @type now (the data space reservation's ALLOC_CHUNK_FORCE);
 * -ENOSPC when the device has no room for one.
 */
int tlog_trans_force_chunk(struct tlog_trans *trans, u64 type);
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

/* ---- the log of the running transaction (fsync) ---- */

/*
 * The log tree of subvolume @root in this transaction, created empty on
 * first use (the kernel's start_log_trans / btrfs_add_log_tree), and with
 * the first one the log root tree (fs->log_root_tree).  Log trees are
 * cached roots keyed (TREE_LOG_OBJECTID, ROOT_ITEM, subvolume id), so
 * btrfs_read_log_root() finds them too.  Their blocks are changed with
 * the usual B-tree calls and @trans: see transaction.c for where they
 * come from and go.  -EAGAIN when the transaction needs a full commit;
 * -EINVAL in a replay or in-memory transaction, or for a tree that is
 * not a subvolume.
 */
int tlog_trans_log_tree(struct tlog_trans *trans, struct btrfs_root *root,
			struct btrfs_root **log);
/* The log tree of subvolume @root_objectid in this transaction, NULL when none. */
struct btrfs_root *tlog_trans_find_log(struct tlog_trans *trans, u64 root_objectid);
/* How many log trees this transaction has. */
size_t tlog_trans_nr_logs(struct tlog_trans *trans);
/*
 * btrfs_sync_log of @log (NULL: of every log tree): its ROOT_ITEM into the
 * log root tree, every dirty log block written (checksummed, all copies),
 * flush, the last committed superblock with log_root / log_root_level
 * written to the primary copy only, flush.  Nothing of the committed state
 * changes.  As in the kernel, where each subvolume syncs its own log, the
 * root items of other logs stay as their last sync left them, so their
 * changes since are not part of the synced log (their blocks may be
 * written, unreferenced).  The written blocks are clean afterwards:
 * changing a log again copies them, so a power cut before the next sync
 * finds this one's log.  0 without a log; -EAGAIN (nothing written) when
 * the transaction needs a full commit.  A failed sync sets that: commit
 * instead.
 */
int tlog_trans_sync_log(struct tlog_trans *trans, struct btrfs_root *log);
/*
 * The log can no longer be used in this transaction (btrfs_set_log_full_commit):
 * fsync must commit.  Set by the transaction itself whenever a chunk is
 * allocated in it, a log block finds no space, or a log sync fails.  The
 * first @reason is kept; the getter returns NULL when not set.
 */
void tlog_trans_set_needs_full_commit(struct tlog_trans *trans, const char *reason);
bool tlog_trans_needs_full_commit(struct tlog_trans *trans);
const char *tlog_trans_full_commit_reason(struct tlog_trans *trans);

#endif
