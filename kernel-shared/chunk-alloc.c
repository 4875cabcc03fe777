// SPDX-License-Identifier: GPL-2.0-only
/*
 * New chunks when a block group type runs out of space (as the kernel's
 * btrfs_create_chunk and btrfs_make_block_group make them): a hole in the
 * device takes the stripes; the chunk tree gets the CHUNK_ITEM and the
 * DEV_ITEM's new bytes_used, the device tree the DEV_EXTENTs, the block
 * group tree (or extent tree) the BLOCK_GROUP_ITEM, the free space tree an
 * all-free group.  A SYSTEM chunk
 * also goes into the superblock's sys_chunk_array, which is how a mount
 * finds the chunk tree.
 */
#include <errno.h>
#include <string.h>

#include "block-group.h"
#include "errctx.h"
#include "root-tree.h"
#include "tree-checker.h"
#include "transaction.h"
#include "volumes.h"

#define SZ_1M (1024ULL * 1024)
#define SZ_16M (16 * SZ_1M)
#define SZ_256M (256 * SZ_1M)
#define SZ_1G (1024 * SZ_1M)

/* Chunk size the kernel aims at: 10% of the device, capped per type. */
static u64 wanted_chunk_size(const struct tlog_fs *fs, u64 type)
{
	u64 total = btrfs_super_block_total_bytes(&fs->super);
	/* mixed groups are sized as data, as the kernel does */
	u64 cap = (type & BTRFS_BLOCK_GROUP_DATA) ? SZ_1G :
		  type == BTRFS_BLOCK_GROUP_SYSTEM ? 32 * SZ_1M :
		  total >= 50 * SZ_1G ? SZ_1G : SZ_256M;
	/* a tenth of the filesystem, rounded up to 16 MiB (decide_stripe_size) */
	u64 size = (total / 10 + SZ_16M - 1) / SZ_16M * SZ_16M;

	if (size < SZ_16M)
		size = SZ_16M;
	return size < cap ? size : cap;
}

/* The profile chunks of @type already use (metadata may be DUP). */
static int profile_of(const struct tlog_fs *fs, u64 type, int *stripes, u64 *profile)
{
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct map_lookup *m = &fs->chunks.maps[i];

		if ((m->type & BTRFS_BLOCK_GROUP_TYPE_MASK) != type)
			continue;
		*profile = m->type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
		*stripes = m->num_stripes;
		return 0;
	}
	*profile = 0;
	*stripes = 1;
	return 0;
}

/* The first hole of at least @need bytes between the device's extents, and its size. */
static int find_device_hole(struct tlog_fs *fs, u64 need, u64 *start, u64 *hole_len)
{
	u64 devid = btrfs_dev_item_devid(&fs->super.dev_item);
	u64 total = btrfs_dev_item_total_bytes(&fs->super.dev_item);
	struct btrfs_key min = { devid, BTRFS_DEV_EXTENT_KEY, 0 };
	struct btrfs_key max = { devid, BTRFS_DEV_EXTENT_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	struct btrfs_root *dev_root;
	u64 pos = SZ_1M, best = 0, best_len = 0;
	int err;

	err = btrfs_read_root(fs, BTRFS_DEV_TREE_OBJECTID, &dev_root);
	if (err)
		return err;
	btrfs_for_each_item(dev_root, &iter, &min, &max) {
		char note[256];
		const struct btrfs_dev_extent *de = btrfs_fixed_item_at(iter.leaf, iter.slot,
									&iter.key, note,
									sizeof(note));

		/* one that cannot be read claims no space: as before, not an error here */
		if (!de)
			continue;
		if (iter.key.offset > pos && iter.key.offset - pos > best_len) {
			best = pos;
			best_len = iter.key.offset - pos;
		}
		if (iter.key.offset + btrfs_dev_extent_length(de) > pos)
			pos = iter.key.offset + btrfs_dev_extent_length(de);
	}
	err = iter.ret < 0 ? iter.ret : 0;
	btrfs_tree_iter_end(&iter);
	if (err)
		return err;
	if (total > pos && total - pos > best_len) {
		best = pos;
		best_len = total - pos;
	}
	if (best_len < need)
		return tlog_error(-ENOSPC, "the device has no room for another chunk");
	*start = best;
	*hole_len = best_len;
	return 0;
}

static int insert_chunk_item(struct tlog_trans *trans, u64 logical, u64 len, u64 type,
			     int stripes, const u64 *physical)
{
	struct tlog_fs *fs = trans->fs;
	u8 buf[sizeof(struct btrfs_chunk) + 3 * sizeof(struct btrfs_stripe)] = { 0 };
	struct btrfs_chunk *c = (struct btrfs_chunk *)buf;
	struct btrfs_key key = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, logical };
	int err;

	btrfs_set_chunk_length(c, len);
	btrfs_set_chunk_owner(c, BTRFS_EXTENT_TREE_OBJECTID);
	btrfs_set_chunk_stripe_len(c, BTRFS_STRIPE_LEN);
	btrfs_set_chunk_type(c, type);
	btrfs_set_chunk_io_align(c, BTRFS_STRIPE_LEN);
	btrfs_set_chunk_io_width(c, BTRFS_STRIPE_LEN);
	btrfs_set_chunk_sector_size(c, fs->sectorsize);
	btrfs_set_chunk_num_stripes(c, stripes);
	btrfs_set_chunk_sub_stripes(c, 1);
	for (int i = 0; i < stripes; i++) {
		struct btrfs_stripe *s = btrfs_chunk_stripe(c, i);

		btrfs_set_stripe_devid(s, btrfs_dev_item_devid(&fs->super.dev_item));
		btrfs_set_stripe_offset(s, physical[i]);
		memcpy(s->dev_uuid, fs->super.dev_item.uuid, BTRFS_UUID_SIZE);
	}
	err = btrfs_insert_item(trans, fs->chunk_root, &key, buf, btrfs_chunk_item_size(stripes));
	if (!err)
		err = chunk_map_add(fs, &fs->chunks, logical, c, btrfs_chunk_item_size(stripes));
	return err;
}

/*
 * Append the SYSTEM chunk at @logical (the highest, so the array stays in
 * order) to the superblock's sys_chunk_array, from the chunk map.
 */
static int add_to_sys_chunk_array(struct tlog_fs *fs, u64 logical)
{
	const struct map_lookup *m = chunk_map_find(&fs->chunks, logical);
	struct btrfs_super_block *sb = &fs->super;
	u32 size = btrfs_super_block_sys_chunk_array_size(sb);
	u8 buf[sizeof(struct btrfs_disk_key) + sizeof(struct btrfs_chunk) +
	       (TLOG_MAX_STRIPES - 1) * sizeof(struct btrfs_stripe)] = { 0 };
	struct btrfs_key key = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, logical };
	struct btrfs_chunk *c = (void *)(buf + sizeof(struct btrfs_disk_key));
	u32 len;

	if (!m)
		return -EUCLEAN;
	len = sizeof(struct btrfs_disk_key) + btrfs_chunk_item_size(m->num_stripes);
	if (size + len > BTRFS_SYSTEM_CHUNK_ARRAY_SIZE)
		return tlog_error(-ENOSPC, "the superblock has no room for another system chunk");
	btrfs_cpu_key_to_disk((struct btrfs_disk_key *)buf, &key);
	btrfs_set_chunk_length(c, m->length);
	btrfs_set_chunk_owner(c, BTRFS_EXTENT_TREE_OBJECTID);
	btrfs_set_chunk_stripe_len(c, m->stripe_len);
	btrfs_set_chunk_type(c, m->type);
	btrfs_set_chunk_io_align(c, BTRFS_STRIPE_LEN);
	btrfs_set_chunk_io_width(c, BTRFS_STRIPE_LEN);
	btrfs_set_chunk_sector_size(c, fs->sectorsize);
	btrfs_set_chunk_num_stripes(c, m->num_stripes);
	btrfs_set_chunk_sub_stripes(c, 1);
	for (int i = 0; i < m->num_stripes; i++) {
		struct btrfs_stripe *s = btrfs_chunk_stripe(c, i);

		btrfs_set_stripe_devid(s, m->stripes[i].devid);
		btrfs_set_stripe_offset(s, m->stripes[i].physical);
		memcpy(s->dev_uuid, m->stripes[i].dev_uuid, BTRFS_UUID_SIZE);
	}
	memcpy(sb->sys_chunk_array + size, buf, len);
	btrfs_set_super_block_sys_chunk_array_size(sb, size + len);
	return 0;
}

static int insert_dev_extents(struct tlog_trans *trans, u64 logical, u64 len, int stripes,
			      const u64 *physical)
{
	struct tlog_fs *fs = trans->fs;
	struct btrfs_root *dev_root;
	int err = btrfs_read_root(fs, BTRFS_DEV_TREE_OBJECTID, &dev_root);

	for (int i = 0; !err && i < stripes; i++) {
		struct btrfs_key key = { btrfs_dev_item_devid(&fs->super.dev_item),
					 BTRFS_DEV_EXTENT_KEY, physical[i] };
		struct btrfs_dev_extent de;

		memset(&de, 0, sizeof(de));
		btrfs_set_dev_extent_chunk_tree(&de, BTRFS_CHUNK_TREE_OBJECTID);
		btrfs_set_dev_extent_chunk_objectid(&de, BTRFS_FIRST_CHUNK_TREE_OBJECTID);
		btrfs_set_dev_extent_chunk_offset(&de, logical);
		btrfs_set_dev_extent_length(&de, len);
		memcpy(de.chunk_tree_uuid, fs->chunk_tree_uuid, BTRFS_UUID_SIZE);
		err = btrfs_insert_item(trans, dev_root, &key, &de, sizeof(de));
	}
	return err;
}

/* The device's bytes_used grows, in the chunk tree and the superblock's copy. */
static int update_dev_item(struct tlog_trans *trans, u64 added)
{
	struct tlog_fs *fs = trans->fs;
	struct btrfs_dev_item *sdi = &fs->super.dev_item;
	struct btrfs_key key = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY,
				 btrfs_dev_item_devid(sdi) };
	struct btrfs_path path;
	int ret;

	btrfs_set_dev_item_bytes_used(sdi, btrfs_dev_item_bytes_used(sdi) + added);
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, fs->chunk_root, &key, &path, 0);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "the chunk tree has no item for device %llu",
				 (unsigned long long)key.offset);
	if (ret == 0)
		memcpy(btrfs_item_ptr(path.nodes[0], path.slots[0]), sdi, sizeof(*sdi));
	btrfs_release_path(&path);
	return ret;
}

static int insert_block_group(struct tlog_trans *trans, u64 logical, u64 len, u64 flags)
{
	struct tlog_fs *fs = trans->fs;
	struct btrfs_key key = { logical, BTRFS_BLOCK_GROUP_ITEM_KEY, len };
	struct btrfs_block_group_item bgi;
	struct btrfs_root *root;
	int err;

	err = btrfs_read_root(fs, btrfs_block_group_root_id(fs), &root);
	if (err)
		return err;
	memset(&bgi, 0, sizeof(bgi));
	btrfs_set_block_group_item_chunk_objectid(&bgi, BTRFS_FIRST_CHUNK_TREE_OBJECTID);
	btrfs_set_block_group_item_flags(&bgi, flags);
	return btrfs_insert_item(trans, root, &key, &bgi, sizeof(bgi));
}

static int insert_free_space(struct tlog_trans *trans, u64 logical, u64 len)
{
	struct tlog_fs *fs = trans->fs;
	struct btrfs_key keys[2] = {
		{ logical, BTRFS_FREE_SPACE_INFO_KEY, len },
		{ logical, BTRFS_FREE_SPACE_EXTENT_KEY, len },
	};
	u32 sizes[2] = { sizeof(struct btrfs_free_space_info), 0 };
	struct btrfs_root *root;
	struct btrfs_path path;
	int err;

	if (!(fs->compat_ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE))
		return 0;
	err = btrfs_read_root(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, &root);
	if (err)
		return err;
	btrfs_init_path(&path);
	err = btrfs_insert_empty_items(trans, root, &path, keys, sizes, 2);
	if (!err)
		btrfs_set_free_space_info_extent_count(btrfs_item_ptr(path.nodes[0], path.slots[0]), 1);
	btrfs_release_path(&path);
	return err;
}

int btrfs_alloc_chunk(struct tlog_trans *trans, struct tlog_block_groups *bgs, u64 type)
{
	struct tlog_fs *fs = trans->fs;
	u64 profile, len, hole = 0, hole_len = 0, logical = 0, physical[2], flags;
	int stripes, err;

	profile_of(fs, type, &stripes, &profile);
	if (stripes > 2)
		return tlog_error(-EOPNOTSUPP, "cannot allocate chunks of this profile");
	len = wanted_chunk_size(fs, type);
	err = find_device_hole(fs, SZ_1M * stripes, &hole, &hole_len);
	if (err)
		return err;
	if (hole_len < len * stripes)
		len = hole_len / stripes / SZ_1M * SZ_1M;
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct map_lookup *m = &fs->chunks.maps[i];

		if (m->logical + m->length > logical)
			logical = m->logical + m->length;
	}
	for (int i = 0; i < stripes; i++)
		physical[i] = hole + i * len;
	flags = type | profile;
	err = insert_chunk_item(trans, logical, len, flags, stripes, physical);
	if (!err && type == BTRFS_BLOCK_GROUP_SYSTEM)
		err = add_to_sys_chunk_array(fs, logical);
	if (!err)
		err = insert_dev_extents(trans, logical, len, stripes, physical);
	if (!err)
		err = update_dev_item(trans, len * stripes);
	if (!err)
		err = btrfs_add_block_group(fs, bgs, logical, len, flags);
	if (!err)
		err = insert_block_group(trans, logical, len, flags);
	if (!err)
		err = insert_free_space(trans, logical, len);
	return err;
}
