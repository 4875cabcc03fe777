// SPDX-License-Identifier: GPL-2.0-only
/*
 * In-memory tree block builder; see leaf-builder.h.  The layout rules come
 * from the format reference (4.1-4.3): item offsets count from the end of
 * the header, item 0's data ends at the end of the block, and each next
 * item's data ends where the previous one's begins.
 */
#include <errno.h>
#include <string.h>

#include "csum.h"
#include "errctx.h"
#include "leaf-builder.h"

#define HDR_SIZE ((u32)sizeof(struct btrfs_header))

void tlog_leaf_init(struct tlog_leaf_builder *lb, u8 *buf, u32 nodesize, u8 level)
{
	memset(buf, 0, nodesize);
	lb->buf = buf;
	lb->nodesize = nodesize;
	lb->level = level;
	lb->nritems = 0;
	lb->data_start = btrfs_leaf_data_size(nodesize);
	memset(&lb->last_key, 0, sizeof(lb->last_key));
}

u32 tlog_leaf_free_space(const struct tlog_leaf_builder *lb)
{
	u32 used;

	if (lb->level)
		used = lb->nritems * sizeof(struct btrfs_key_ptr);
	else
		used = lb->nritems * sizeof(struct btrfs_item) +
		       (btrfs_leaf_data_size(lb->nodesize) - lb->data_start);
	return btrfs_leaf_data_size(lb->nodesize) - used;
}

/* Keys must strictly increase inside a block. */
static int check_key_order(const struct tlog_leaf_builder *lb, const struct btrfs_key *key)
{
	if (lb->nritems && btrfs_comp_cpu_keys(&lb->last_key, key) >= 0)
		return tlog_error(-EINVAL, "key (%llu %u %llu) out of order in a new block",
				  (unsigned long long)key->objectid, key->type,
				  (unsigned long long)key->offset);
	return 0;
}

void *tlog_leaf_append(struct tlog_leaf_builder *lb, const struct btrfs_key *key,
		       const void *data, u32 size)
{
	struct btrfs_item *item;
	u8 *dst;

	if (lb->level || check_key_order(lb, key))
		return NULL;
	if (tlog_leaf_free_space(lb) < tlog_leaf_item_cost(size)) {
		tlog_error(-ENOSPC, "no room for a %u-byte item in a new leaf", size);
		return NULL;
	}
	item = (struct btrfs_item *)(lb->buf + HDR_SIZE) + lb->nritems;
	lb->data_start -= size;
	btrfs_cpu_key_to_disk(&item->key, key);
	btrfs_set_raw_item_offset(item, lb->data_start);
	btrfs_set_raw_item_size(item, size);
	dst = lb->buf + HDR_SIZE + lb->data_start;
	if (data)
		memcpy(dst, data, size);
	lb->nritems++;
	lb->last_key = *key;
	return dst;
}

int tlog_node_append(struct tlog_leaf_builder *lb, const struct btrfs_key *key,
		     u64 blockptr, u64 generation)
{
	struct btrfs_key_ptr *ptr;
	int ret;

	if (!lb->level)
		return tlog_error(-EINVAL, "key pointer appended to a leaf");
	ret = check_key_order(lb, key);
	if (ret)
		return ret;
	if (lb->nritems >= btrfs_nodeptrs_per_block(lb->nodesize))
		return tlog_error(-ENOSPC, "no room for another key pointer in a new node");
	ptr = (struct btrfs_key_ptr *)(lb->buf + HDR_SIZE) + lb->nritems;
	btrfs_cpu_key_to_disk(&ptr->key, key);
	btrfs_set_key_ptr_blockptr(ptr, blockptr);
	btrfs_set_key_ptr_generation(ptr, generation);
	lb->nritems++;
	lb->last_key = *key;
	return 0;
}

int tlog_block_finalize(struct tlog_leaf_builder *lb, const struct tlog_block_info *info)
{
	struct btrfs_header *h = (struct btrfs_header *)lb->buf;

	memcpy(h->fsid, info->fsid, BTRFS_FSID_SIZE);
	memcpy(h->chunk_tree_uuid, info->chunk_tree_uuid, BTRFS_UUID_SIZE);
	btrfs_set_header_bytenr(h, info->bytenr);
	btrfs_set_header_flags(h, BTRFS_HEADER_FLAG_WRITTEN |
			       ((u64)BTRFS_MIXED_BACKREF_REV << BTRFS_BACKREF_REV_SHIFT));
	btrfs_set_header_generation(h, info->generation);
	btrfs_set_header_owner(h, info->owner);
	btrfs_set_header_nritems(h, lb->nritems);
	btrfs_set_header_level(h, lb->level);
	return btrfs_csum_data(info->csum_type, lb->buf + BTRFS_CSUM_SIZE,
			       lb->nodesize - BTRFS_CSUM_SIZE, h->csum);
}
