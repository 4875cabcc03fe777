/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * In-memory tree block builder.  Items are appended in key order into a
 * nodesize buffer (item headers from the front, data from the back, as the
 * on-disk leaf layout wants it); key pointers are appended the same way
 * into a node.  tlog_block_finalize() then fills in the header and the
 * checksum, so that the buffer can be written as it is.
 */
#ifndef TLOG_LEAF_BUILDER_H
#define TLOG_LEAF_BUILDER_H

#include <stdbool.h>
#include "format.h"

struct tlog_leaf_builder {
	u8 *buf;		/* nodesize bytes, owned by the caller */
	u32 nodesize;
	u8 level;		/* 0: leaf, else node */
	u32 nritems;
	u32 data_start;		/* leaf: lowest item data offset, from the header end */
	struct btrfs_key last_key;
};

/* What the header of a finished block says about it. */
struct tlog_block_info {
	u64 bytenr;
	u64 generation;
	u64 owner;
	const u8 *fsid;			/* BTRFS_FSID_SIZE */
	const u8 *chunk_tree_uuid;	/* BTRFS_UUID_SIZE */
	u16 csum_type;
};

/* Start an empty block of @level in @buf (zeroed here). */
void tlog_leaf_init(struct tlog_leaf_builder *lb, u8 *buf, u32 nodesize, u8 level);

/* Bytes an item of @data_size would take in a leaf (header included). */
static inline u32 tlog_leaf_item_cost(u32 data_size)
{
	return sizeof(struct btrfs_item) + data_size;
}

/* Free bytes between the item headers and the item data. */
u32 tlog_leaf_free_space(const struct tlog_leaf_builder *lb);

/*
 * Append an item with @size bytes of data and return where the data goes
 * (zeroed), or NULL with a recorded error when the key is not greater than
 * the last one or the leaf is full.  @data, when not NULL, is copied in.
 */
void *tlog_leaf_append(struct tlog_leaf_builder *lb, const struct btrfs_key *key,
		       const void *data, u32 size);

/* Append a key pointer to a node.  0, or -ENOSPC / -EINVAL with context. */
int tlog_node_append(struct tlog_leaf_builder *lb, const struct btrfs_key *key,
		     u64 blockptr, u64 generation);

/* Write the header fields and the checksum.  0 or -EINVAL. */
int tlog_block_finalize(struct tlog_leaf_builder *lb, const struct tlog_block_info *info);

#endif
