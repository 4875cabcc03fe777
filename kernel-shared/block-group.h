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

struct tlog_block_group {
	u64 start;
	u64 length;
	u64 flags;
	u64 used;
	bool used_changed;		/* BLOCK_GROUP_ITEM needs rewriting */
	struct free_range *free;	/* sorted, merged, allocatable */
	size_t nr_free, cap_free;
};

struct tlog_block_groups {
	struct tlog_block_group *v;
	size_t nr, alloc;
	u64 data_cursor;		/* data allocations go on from here */
};

int btrfs_load_block_groups(struct tlog_fs *fs, struct tlog_block_groups *bgs);
void btrfs_free_block_groups(struct tlog_block_groups *bgs);
struct tlog_block_group *btrfs_lookup_block_group(struct tlog_block_groups *bgs, u64 bytenr);

/* Take @len bytes aligned to @align from a group of type @type_flags. */
int btrfs_alloc_range(struct tlog_block_groups *bgs, u64 type_flags, u64 len, u64 align,
		      u64 *ret);
/* A new, empty block group (a chunk just allocated). */
int btrfs_add_block_group(struct tlog_fs *fs, struct tlog_block_groups *bgs, u64 start,
			  u64 length, u64 flags);
/* Allocatable bytes left in the groups of @type_flags. */
u64 btrfs_free_bytes(const struct tlog_block_groups *bgs, u64 type_flags);
struct tlog_trans;
/* A new chunk and block group of @type (DATA or METADATA), all of it free (chunk-alloc.c). */
int btrfs_alloc_chunk(struct tlog_trans *trans, struct tlog_block_groups *bgs, u64 type);

/* Never hand out [start, start + len), free or not (pinned log blocks, claimed extents). */
int btrfs_exclude_range(struct tlog_block_groups *bgs, u64 start, u64 len);
/* Give [start, start + len) back to its group's free space. */
int btrfs_free_range(struct tlog_block_groups *bgs, u64 start, u64 len);

#endif
