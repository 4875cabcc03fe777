/* SPDX-License-Identifier: GPL-2.0-only */
/* Log trees: what they hold, and discarding them. */
#ifndef TLOG_TREE_LOG_H
#define TLOG_TREE_LOG_H

#include "ctree.h"

/*
 * The log model: how the log root tree and the log trees are read, shared
 * by replay, dump-log and zero-log so that they see the same log.
 */

/*
 * Describe the log root tree @lrt from @fs's superblock (disk-io calls it
 * at open).  The log is written in the transaction after the committed
 * one, so that is the generation its root block must carry.
 */
void tlog_log_open(struct tlog_fs *fs, struct btrfs_root *lrt);

/*
 * Call @fn for every subvolume with a log tree, lowest id first, until it
 * returns non-zero (which is returned).  A failure to read the log root
 * tree is returned as it is: callers say what they were doing.
 */
typedef int (*tlog_log_subvol_fn)(struct tlog_fs *fs, u64 subvol, void *arg);
int tlog_log_for_each_subvol(struct tlog_fs *fs, tlog_log_subvol_fn fn, void *arg);

/* The ids of the subvolumes with a log tree, as many as there are. */
struct tlog_log_subvols {
	u64 *ids;
	size_t nr, cap;
};

enum tlog_log_order {
	TLOG_LOG_LOWEST_FIRST,
	TLOG_LOG_HIGHEST_FIRST,	/* the order the kernel replays them in */
};

int tlog_log_list_subvols(struct tlog_fs *fs, enum tlog_log_order order,
			  struct tlog_log_subvols *subvols);
void tlog_log_subvols_free(struct tlog_log_subvols *subvols);

/*
 * Call @fn for every block of the log, the log root tree's first, then
 * each log tree's (highest subvolume first), parents before children.
 * @in_root_tree tells the log root tree's blocks apart.  A block that
 * cannot be read stops the walk with its address in the error context.
 */
typedef int (*tlog_log_block_fn)(struct tlog_fs *fs, const struct extent_buffer *eb,
				 bool in_root_tree, void *arg);
int tlog_log_for_each_block(struct tlog_fs *fs, tlog_log_block_fn fn, void *arg);

/*
 * The logged index range [*@start, *@end] of directory @dir that contains
 * *@start, else the next one after it.  0 with the range, 1 if there is
 * none, or a negative errno (-EUCLEAN for a malformed DIR_LOG_INDEX item).
 */
int tlog_log_find_dir_range(struct btrfs_root *log, u64 dir, u64 *start, u64 *end);

/* 1 if the log's ref item @key (INODE_REF or INODE_EXTREF) has the name (@parent, @name). */
int tlog_log_has_ref_name(struct btrfs_root *log, const struct btrfs_key *key, u64 parent,
			  const char *name, u16 len);

/* ---- the items of a log tree, inode by inode ---- */

enum tlog_log_item_kind {
	/* items of a logged inode */
	TLOG_LOG_INODE_ITEM,
	TLOG_LOG_NAME,		/* INODE_REF, INODE_EXTREF */
	TLOG_LOG_XATTR,
	TLOG_LOG_DIR_ENTRY,	/* DIR_ITEM, DIR_INDEX */
	TLOG_LOG_EXTENT,
	TLOG_LOG_DIR_RANGE,	/* DIR_LOG_INDEX, and the old DIR_LOG_ITEM */
	TLOG_LOG_INODE_OTHER,	/* any other key of an inode */
	/* items of the tree */
	TLOG_LOG_CSUM,
	TLOG_LOG_ORPHAN,
	TLOG_LOG_SPECIAL,	/* another special objectid: not decoded */
};

/* What the log says about the inode of the current item so far. */
struct tlog_logged_inode {
	u64 ino;
	/* its inode item sorts first: both are known for its other items */
	bool has_inode_item;
	bool ignored;		/* the item has nlink 0: replay skips the inode */
};

/*
 * A position in a log tree, in key order: the item (iter.key, iter.leaf,
 * iter.slot) and what it is.  The payload is left to the caller to decode.
 *
 *	tlog_log_for_each_item(log, &cur) {
 *		if (cur.first_of_inode) ... cur.inode.ino ...
 *	}
 *	if (cur.iter.ret < 0) error
 *	tlog_log_cursor_end(&cur);
 */
struct tlog_log_cursor {
	struct btrfs_tree_iter iter;
	enum tlog_log_item_kind kind;
	struct tlog_logged_inode inode;	/* valid for the inode's kinds */
	bool first_of_inode;		/* the first item with inode.ino */
	bool in_inode;			/* the item is an inode's (kind < CSUM) */
	bool seen_inode;		/* private: inode was set */
};

void tlog_log_cursor_start(struct btrfs_root *log, struct tlog_log_cursor *cur);
void tlog_log_cursor_next(struct tlog_log_cursor *cur);
void tlog_log_cursor_end(struct tlog_log_cursor *cur);

#define tlog_log_for_each_item(log, cur)				\
	for (tlog_log_cursor_start(log, cur);				\
	     (cur)->iter.ret == 0;					\
	     tlog_log_cursor_next(cur))

/* Inodes and subvolumes with items in the log (0 and 0 without a log). */
int btrfs_count_logged_inodes(struct tlog_fs *fs, u64 *inodes, u64 *subvols);

/*
 * Forget the log, as `btrfs rescue zero-log` does: the superblock's
 * log_root and log_root_level are cleared and every copy rewritten.  The
 * log's blocks were never in the extent tree, so nothing else changes;
 * every fsync since the last commit is lost.
 */
int btrfs_discard_log(struct tlog_fs *fs);

/* What replay did to one inode (dry runs and -v report it). */
struct tlog_replay_inode {
	u64 subvol;
	u64 ino;
	bool created;		/* its inode item was inserted */
	bool updated;		/* its inode item was rewritten from the log */
	bool ignored;		/* logged with no links: left alone */
	bool orphaned;		/* ended without links: an orphan item awaits cleanup */
	u32 names_added;
	u32 names_removed;
	u64 data_bytes;		/* file bytes of the extents replayed */
};

struct tlog_replay_stats {
	struct tlog_replay_inode *inodes;
	size_t nr, cap;
	size_t *hash, hash_size;
	u64 subvols;		/* logs replayed */
	u64 subvols_skipped;	/* logs of deleted subvolumes, dropped */
	u64 log_blocks;
	u64 names_added, names_removed, data_bytes;
	bool qgroup_rescan;	/* quotas on: a rescan was requested */
	/* optional: called as log leaves are replayed (3 passes over @total) */
	void (*progress)(void *arg, u64 done, u64 total);
	void *progress_arg;
	u64 log_leaves;
};

/*
 * Replay the log trees of @trans's filesystem into their subvolumes as the
 * kernel does at mount (tree-log-replay.c); the caller commits (the
 * superblock's log_root is cleared then) or aborts.  @trans must have been
 * started with TLOG_TRANS_LOG_REPLAY.  @stats may be NULL.
 */
struct tlog_trans;
int btrfs_replay_log(struct tlog_trans *trans, struct tlog_replay_stats *stats);
void tlog_replay_stats_free(struct tlog_replay_stats *stats);

/*
 * Show @fs as the kernel mounts it: its log replayed in memory, nothing
 * written (the image may be open read-only).  Queries then answer for the
 * replayed state; tlog_close() drops it.  A no-op without a log.
 */
int tlog_apply_log_overlay(struct tlog_fs *fs);

#endif
