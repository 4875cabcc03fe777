/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Block groups and their free space, in memory, for allocating tree blocks.
 * Free space is derived from the extent tree (every range no extent item
 * covers), minus the ranges that map onto superblock copies, which are
 * never handed out.
 */
#ifndef TLOG_BLOCK_GROUP_H
#define TLOG_BLOCK_GROUP_H

#include "ctree.h"

struct free_range {
	u64 start;
	u64 len;
};

/*
 * Size classes of data block groups (the kernel's since 6.3): an
 * allocation goes to a group of its own class first (small: up to 128K,
 * medium: up to 8M, large: more), then to one without a class yet, which
 * takes the class; only when neither has room is a new chunk made, and
 * only when that fails does a group of another class do.  So small and
 * medium extents do not share a group while space lasts - and a medium
 * fallocate after small compressed writes makes a chunk, and the fsync
 * after it a full commit.  A group's class is known from the moment
 * space is first taken in the mount: from the extents it has then (the
 * smallest of five evenly spaced samples), else from its first allocation;
 * freeing the last extent of an earlier commit takes the class away
 * (btrfs_maybe_reset_size_class), space taken and given back within one
 * transaction does not (it is only pinned).
 */
enum btrfs_bg_size_class {
	BTRFS_BG_SZ_NONE,
	BTRFS_BG_SZ_SMALL,
	BTRFS_BG_SZ_MEDIUM,
	BTRFS_BG_SZ_LARGE,
};

/* The class of an allocation of @len bytes. */
enum btrfs_bg_size_class btrfs_calc_size_class(u64 len);

struct tlog_block_group {
	u64 start;
	u64 length;
	u64 flags;
	u64 used;
	u64 committed_used;		/* as the last commit left it */
	u8 size_class;			/* enum btrfs_bg_size_class, data groups only */
	u8 sampled_class;		/* what the extent tree says, when loaded */
	int samples;			/* of the extent tree, taken so far */
	u64 sample_min;			/* the smallest extent sampled */
	bool used_changed;		/* BLOCK_GROUP_ITEM needs rewriting */
	struct free_range *free;	/* sorted, merged, allocatable */
	size_t nr_free, cap_free;
};

struct tlog_block_groups {
	struct tlog_fs *fs;		/* which keeps the size classes across transactions */
	struct tlog_block_group *v;
	size_t nr, alloc;
	u64 data_cursor;		/* data allocations go on from here */
};

int btrfs_load_block_groups(struct tlog_fs *fs, struct tlog_block_groups *bgs);
void btrfs_free_block_groups(struct tlog_block_groups *bgs);
struct tlog_block_group *btrfs_lookup_block_group(struct tlog_block_groups *bgs, u64 bytenr);

/*
 * Take @len bytes aligned to @align from a group of type @type_flags.
 * Data respects the size classes: -ENOSPC when no group of the class or
 * without one has room, a new chunk being the caller's next step; with
 * BTRFS_ALLOC_ANY_SIZE_CLASS (after that step) a group of another class
 * as the last resort.
 */
#define BTRFS_ALLOC_ANY_SIZE_CLASS	(1U << 0)
int btrfs_alloc_range(struct tlog_block_groups *bgs, u64 type_flags, u64 len, u64 align,
		      unsigned int flags, u64 *ret);
/* A new, empty block group (a chunk just allocated). */
int btrfs_add_block_group(struct tlog_fs *fs, struct tlog_block_groups *bgs, u64 start,
			  u64 length, u64 flags);
/* Allocatable bytes left in the groups of @type_flags. */
u64 btrfs_free_bytes(const struct tlog_block_groups *bgs, u64 type_flags);
/* The longest free range in the groups of @type_flags. */
u64 btrfs_largest_free(const struct tlog_block_groups *bgs, u64 type_flags);
struct tlog_trans;
/* A new chunk and block group of @type (DATA or METADATA), all of it free (chunk-alloc.c). */
int btrfs_alloc_chunk(struct tlog_trans *trans, struct tlog_block_groups *bgs, u64 type);
/*
 * mkfs --shrink, on a one-device filesystem: the last chunk of the device
 * is cut to the end of its used space (rounded up to 1 MiB; not below
 * what its used bytes need) when it is a data or metadata chunk with free
 * space at its end, and the device's size (super and DEV_ITEM) becomes
 * the end of its last device extent, in *@new_size.  The caller commits
 * and then truncates a file target to *@new_size.
 */
int btrfs_shrink_to_fit(struct tlog_trans *trans, u64 *new_size);

/* Never hand out [start, start + len), free or not (pinned log blocks, claimed extents). */
int btrfs_exclude_range(struct tlog_block_groups *bgs, u64 start, u64 len);
/* Give [start, start + len) back to its group's free space. */
int btrfs_free_range(struct tlog_block_groups *bgs, u64 start, u64 len);

#endif
