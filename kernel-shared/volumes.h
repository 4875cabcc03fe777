/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Chunk map: which physical ranges of the device back a logical range.
 * Built first from the superblock's sys_chunk_array (enough to read the
 * chunk tree), then from every CHUNK_ITEM of the chunk tree.
 */
#ifndef TLOG_VOLUMES_H
#define TLOG_VOLUMES_H

#include <stdbool.h>
#include "format.h"

struct tlog_fs;

#define TLOG_MAX_STRIPES 16

struct map_stripe {
	u64 devid;
	u64 physical;
	u8 dev_uuid[BTRFS_UUID_SIZE];
};

struct map_lookup {
	u64 logical;
	u64 length;
	u64 type;		/* block group flags */
	u64 stripe_len;
	u16 num_stripes;
	u16 sub_stripes;
	struct map_stripe stripes[TLOG_MAX_STRIPES];
};

struct chunk_map {
	struct map_lookup *maps;	/* sorted by logical, never overlapping */
	size_t nr;
	size_t alloc;
};

void chunk_map_init(struct chunk_map *map);
void chunk_map_release(struct chunk_map *map);

/*
 * Validate a chunk item of @item_size bytes at logical @logical and add it
 * to the map.  A chunk that duplicates one already known (the sys array and
 * the chunk tree both list SYSTEM chunks) is accepted if it is identical.
 */
int chunk_map_add(struct tlog_fs *fs, struct chunk_map *map, u64 logical,
		  const struct btrfs_chunk *chunk, u32 item_size);

/* The chunk that contains @logical, or NULL. */
const struct map_lookup *chunk_map_find(const struct chunk_map *map, u64 logical);

/*
 * Map [logical, logical + len) to physical copies.  The range must lie in
 * one chunk and, for striped profiles, one stripe.  Fills @physical with up
 * to @max copies and returns how many there are, or a negative errno.
 */
int btrfs_map_block(struct tlog_fs *fs, u64 logical, u64 len,
		    u64 *physical, int max);

/* Parse the superblock's sys_chunk_array into @map. */
int btrfs_read_sys_array(struct tlog_fs *fs, struct chunk_map *map);
/* Load every CHUNK_ITEM of the chunk tree into fs->chunks. */
int btrfs_read_chunk_tree(struct tlog_fs *fs);

/* "DATA|DUP" style description of block group flags into @buf. */
void btrfs_bg_flags_to_str(u64 flags, char *buf, size_t size);
/* "single", "dup", "raid1", ... for the profile bits of @flags. */
const char *btrfs_bg_profile_name(u64 flags);

#endif
