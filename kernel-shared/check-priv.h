/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the checker's modules share (check.h is the interface):
 *
 *   check.c         the order of the passes, threads, reporting
 *   check-super.c   superblock copies, chunk tree vs sys_chunk_array,
 *                   device extents vs chunks, device bytes_used
 *   check-tree.c    every tree walked once: blocks, keys, items through
 *                   the strict decoders; tree block and data references
 *                   recorded for check-extent.c
 *   check-extent.c  extent items vs the references found, overlaps, block
 *                   group used bytes, bytes_used, the free space tree
 *   check-fs.c      subvolume trees: inodes, names, file extents,
 *                   checksums, orphans, root refs, uuid tree, quotas
 *   check-log.c     log trees, logged inodes, the dry replay
 *
 * A pass reports what it finds with check_problem() and returns a
 * negative errno only when it could not go on for a reason that is not
 * the image's fault (no memory).  Passes that run in the second thread
 * use their own struct tlog_fs (the block cache is not shared); reporting
 * and the counters are locked.
 */
#ifndef TLOG_CHECK_PRIV_H
#define TLOG_CHECK_PRIV_H

#include <pthread.h>
#include "check.h"

/* A tree block reached from a root; one record per distinct block. */
struct check_block {
	u64 bytenr;
	u64 owner;		/* header owner */
	u64 generation;
	u8 level;
	bool log;		/* a block of a log tree or the log root tree */
};

/*
 * A reference to a tree block: from the node @parent (whose header owner
 * is @root), or, @parent 0, from the root item (or superblock) of tree
 * @root to its root block.
 */
struct check_tree_ref {
	u64 bytenr;
	u64 parent;
	u64 root;
	u8 level;		/* the block's level as its parent says */
};

/*
 * A reference to a data extent by a file extent item: in leaf @leaf
 * (header owner @root), of inode @ino, data ref offset @offset (the
 * item's key offset minus its offset into the extent).
 */
struct check_data_ref {
	u64 bytenr;		/* disk_bytenr */
	u64 len;		/* disk_num_bytes */
	u64 leaf;
	u64 root;
	u64 ino;
	u64 offset;
};

struct tlog_check {
	struct tlog_bdev *bdev;
	struct tlog_fs *fs;		/* the main thread's open */
	struct tlog_check_opts opts;
	struct tlog_check_stats *stats;
	pthread_mutex_t lock;		/* report() and stats */
	bool after_replay;		/* checking the trees a dry replay left */
	/*
	 * Fingerprints of the problems of the committed trees: the check of
	 * the replayed trees finds those again wherever the replay changed
	 * nothing, and says only what is new.
	 */
	u64 *seen_problems;
	size_t nr_seen_problems, alloc_seen_problems;
	bool seen_problems_sorted;

	/* check-tree.c, for check-extent.c and check-log.c; sorted by bytenr */
	struct check_block *blocks;
	size_t nr_blocks, alloc_blocks;
	struct check_tree_ref *tree_refs;
	size_t nr_tree_refs, alloc_tree_refs;
	struct check_data_ref *data_refs;
	size_t nr_data_refs, alloc_data_refs;
	/* trees whose root could not be read or that are known bad: extent counts are off */
	bool refs_incomplete;
};

/*
 * Report a problem.  @tree, @block: 0 when none; @slot -1 and @key NULL
 * when none.  The text is the "what" ("inode 257 has 2 names, nlink 1").
 */
void check_problem(struct tlog_check *c, const char *area, enum tlog_check_grade grade,
		   u64 tree, u64 block, int slot, const struct btrfs_key *key,
		   const char *fmt, ...) __attribute__((format(printf, 8, 9)));
/* The same for a finding of the tree-checker (tree-checker.h) just made. */
void check_problem_finding(struct tlog_check *c, const char *area, u64 tree);
/* Report the error context's reason, with @what in front of it. */
void check_problem_errctx(struct tlog_check *c, const char *area, enum tlog_check_grade grade,
			  u64 tree, u64 block, const char *what);
void check_progress(struct tlog_check *c, const char *phase, u64 done, u64 total);
/* Add @n to a counter of c->stats, locked. */
void check_count(struct tlog_check *c, u64 *counter, u64 n);

/* The passes.  @fs is the open the pass reads through. */
int check_super(struct tlog_check *c, struct tlog_fs *fs);
int check_chunks(struct tlog_check *c, struct tlog_fs *fs);
int check_trees(struct tlog_check *c, struct tlog_fs *fs);
int check_extents(struct tlog_check *c, struct tlog_fs *fs);
int check_fs_trees(struct tlog_check *c, struct tlog_fs *fs);
int check_log(struct tlog_check *c, struct tlog_fs *fs);

/*
 * check.c: open @bdev and run every pass but the log's on it (the dry
 * replay's result is checked this way, c->after_replay set around it).
 * The walk's record is replaced by the one of @bdev's trees.
 */
int check_run_passes(struct tlog_check *c, struct tlog_bdev *bdev);

/* check-tree.c: the record of the block at @bytenr, or NULL (after check_trees). */
const struct check_block *check_find_block(const struct tlog_check *c, u64 bytenr);

#endif
