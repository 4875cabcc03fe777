/* SPDX-License-Identifier: GPL-2.0-only */
/* Log trees: what they hold, and discarding them. */
#ifndef TLOG_TREE_LOG_H
#define TLOG_TREE_LOG_H

#include "ctree.h"

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
