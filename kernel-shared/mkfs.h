/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Creating a filesystem by direct construction: the chunk layout is
 * computed, every tree of a fresh filesystem is built in memory with all
 * its cross references (extent items, block groups, free space, device
 * extents, root items), and the blocks and superblocks are written in an
 * order that never leaves a half-made filesystem that looks valid.
 */
#ifndef TLOG_MKFS_H
#define TLOG_MKFS_H

#include <stdbool.h>
#include "format.h"

struct tlog_bdev;

struct tlog_mkfs_cfg {
	u32 nodesize;
	u32 sectorsize;
	u16 csum_type;
	u64 metadata_profile;	/* 0 (single) or BTRFS_BLOCK_GROUP_DUP; also used for SYSTEM */
	u64 data_profile;	/* 0 (single) */
	u64 incompat_flags;	/* only the bits of the feature table */
	u64 compat_ro_flags;
	u64 total_bytes;	/* 0: the whole device */
	bool fsid_set;		/* else a random fsid is made */
	u8 fsid[BTRFS_FSID_SIZE];
	char label[BTRFS_LABEL_SIZE];
	/*
	 * Reproducible images: @time_set gives the filesystem's own times
	 * (root directory, root items) as @time_sec (SOURCE_DATE_EPOCH),
	 * nanoseconds 0; @derive_uuids makes the device, chunk tree and fs
	 * tree UUIDs from the fsid (tlog_derive_uuid: "device" 1,
	 * "chunk-tree" 3, "subvol" 5) instead of random - reproducible with
	 * @fsid_set.  A writer that goes on (subvolumes) seeds its UUIDs
	 * from the fsid too: tlog_fs_set_uuid_seed().
	 */
	bool time_set;
	u64 time_sec;
	bool derive_uuids;
};

/*
 * A UUID made from @seed, @what and @id (a name-based, version 5 UUID):
 * the same arguments always give the same UUID, different ones
 * different UUIDs.
 */
void tlog_derive_uuid(const u8 *seed, const char *what, u64 id, u8 *out);

/* The layout and identity of the new filesystem, for the summary. */
struct tlog_mkfs_chunk {
	u64 logical;
	u64 length;
	u64 type;		/* block group flags */
	int num_stripes;
	u64 physical[2];
};

#define TLOG_MKFS_NR_CHUNKS 3

struct tlog_mkfs_result {
	u8 fsid[BTRFS_FSID_SIZE];
	u8 dev_uuid[BTRFS_UUID_SIZE];
	u8 chunk_tree_uuid[BTRFS_UUID_SIZE];
	u8 fs_tree_uuid[BTRFS_UUID_SIZE];
	u64 total_bytes;
	u64 bytes_used;
	u64 generation;
	u32 nr_tree_blocks;
	struct tlog_mkfs_chunk chunks[TLOG_MKFS_NR_CHUNKS];	/* SYSTEM, METADATA, DATA */
	u64 nr_writes;		/* writes issued to the device */
};

/* A filesystem feature as -O names it. */
struct tlog_mkfs_feature {
	const char *name;
	const char *alias;	/* or NULL */
	bool compat_ro;		/* @flags are compat_ro bits, else incompat */
	u64 flags;		/* 0 for features without an on-disk bit */
	bool supported;		/* tlogctl mkfs can create it */
	bool is_default;
	const char *desc;
};

/* The feature table, terminated by an entry with a NULL name. */
extern const struct tlog_mkfs_feature tlog_mkfs_features[];
const struct tlog_mkfs_feature *tlog_mkfs_find_feature(const char *name);

/* Defaults of mkfs.btrfs 6.19 for one device. */
void tlog_mkfs_default_cfg(struct tlog_mkfs_cfg *cfg);

/*
 * Check @cfg without looking at a device: sizes, profiles, feature
 * combinations the kernel refuses, the label.  0 or -EINVAL with context.
 */
int tlog_mkfs_check_cfg(const struct tlog_mkfs_cfg *cfg);

/* The smallest device size @cfg can be made on. */
u64 tlog_mkfs_min_size(const struct tlog_mkfs_cfg *cfg);

/*
 * Make a filesystem on @bdev.  Fills @res (also on failure, as far as it
 * got: nr_writes says how many writes were issued).  0 or -errno with
 * context.
 */
int tlog_mkfs(struct tlog_bdev *bdev, const struct tlog_mkfs_cfg *cfg,
	      struct tlog_mkfs_result *res);

#endif
