/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The consistency checker (`tlogctl check`): every structure of an image
 * read, judged and cross-referenced, and a log tree proven to replay.
 *
 * A check never stops at the first problem.  Each is reported with its
 * place (tree, block, slot, key), what is wrong and a grade: an item is
 * bad (the rest of its tree was checked), a tree or part of one could not
 * be read (what hangs below it was not checked), or the image cannot be
 * used at all (nothing more could be checked).  A caller tells "problems
 * found" from "could not check" by the return value: problems are
 * reported, never returned.
 *
 * Memory grows with the metadata, never with file data: what is cross-
 * referenced (tree blocks, back references, names) is kept in flat arrays
 * of small records, sorted and merged once, rather than a node per item.
 */
#ifndef TLOG_CHECK_H
#define TLOG_CHECK_H

#include <stdbool.h>
#include "ctree.h"

enum tlog_check_grade {
	/*
	 * Not as it should be, but harmless to the kernel and left by tools
	 * people use (free space items of the chunks mkfs.btrfs 6.2 made and
	 * removed): reported, not counted as a problem.
	 */
	TLOG_CHECK_WARNING = 0,
	TLOG_CHECK_ITEM = 1,		/* an item or a count is wrong */
	TLOG_CHECK_TREE = 2,		/* a block or tree could not be read */
	TLOG_CHECK_IMAGE = 3,		/* nothing more could be checked */
};

/* One problem: where, what, how bad. */
struct tlog_problem {
	const char *area;	/* "super", "chunk", "tree", "extent", "inode", "log", ... */
	enum tlog_check_grade grade;
	u64 tree;		/* objectid of the tree, 0 when none */
	u64 block;		/* tree block, 0 when none */
	int slot;		/* -1 when none */
	bool has_key;
	struct btrfs_key key;
	bool after_replay;	/* found in the trees the dry replay left */
	char what[256];
};

typedef void (*tlog_problem_fn)(const struct tlog_problem *p, void *arg);
/* Progress of a phase: @done of @total units (0: unknown). */
typedef void (*tlog_check_progress_fn)(const char *phase, u64 done, u64 total, void *arg);

struct tlog_check_opts {
	bool log_only;		/* the log trees and their dry replay only */
	bool check_data_csum;	/* read every data extent and verify its checksums */
	int threads;		/* 1: one thread; 2 (default): subvolumes beside the extent tree */
	int super_mirror;	/* the superblock copy to check from; -1: the primary */
	tlog_problem_fn report;
	void *report_arg;
	tlog_check_progress_fn progress;
	void *progress_arg;
};

struct tlog_check_stats {
	u64 problems;
	u64 warnings;		/* TLOG_CHECK_WARNING findings */
	u64 trees;		/* trees walked (log trees included) */
	u64 tree_blocks;	/* distinct tree blocks read */
	u64 items;
	u64 extent_items;
	u64 data_refs;		/* file extent items pointing at data */
	u64 inodes;
	u64 names;		/* directory entries */
	u64 csum_bytes;		/* data bytes covered by checksums */
	u64 data_bytes_verified;	/* --check-data-csum */
	u64 log_trees;
	bool has_log;
	bool log_replayed;	/* the dry replay ran and its result was checked */
};

/*
 * Check the filesystem on @bdev (read-only; a second open of it checks
 * the subvolumes in another thread).  Problems go to opts->report; the
 * return value is 0 when the check ran (whatever it found: see
 * stats->problems), or a negative errno when it could not (not btrfs, an
 * I/O error, no memory), with the reason in the error context.  An image
 * too damaged to open is a problem of grade TLOG_CHECK_IMAGE, not an error.
 */
struct tlog_bdev;
int tlog_check_image(struct tlog_bdev *bdev, const struct tlog_check_opts *opts,
		     struct tlog_check_stats *stats);

#endif
