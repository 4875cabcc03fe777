// SPDX-License-Identifier: GPL-2.0-only
/*
 * New chunks when a block group type runs out of space (as the kernel's
 * btrfs_create_chunk and btrfs_make_block_group make them): a hole in the
 * device takes the stripes; the chunk tree gets the CHUNK_ITEM and the
 * DEV_ITEM's new bytes_used, the device tree the DEV_EXTENTs, the block
 * group tree (or extent tree) the BLOCK_GROUP_ITEM, the free space tree an
 * all-free group.  A SYSTEM chunk also goes into the superblock's
 * sys_chunk_array, which is how a mount finds the chunk tree.  The same
 * steps run in reverse cut the free tail of the device's last chunk when
 * mkfs --shrink makes the image just big enough.
 */
#include <errno.h>
#include <string.h>

#include "block-group.h"
#include "errctx.h"
#include "free-space-tree.h"
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

/* The superblock's copy of the device item, written to the chunk tree's DEV_ITEM. */
static int write_dev_item(struct tlog_trans *trans)
{
	struct tlog_fs *fs = trans->fs;
	const struct btrfs_dev_item *sdi = &fs->super.dev_item;
	struct btrfs_key key = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY,
				 btrfs_dev_item_devid(sdi) };
	struct btrfs_path path;
	int ret;

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

/* The device's bytes_used changes, in the chunk tree and the superblock's copy. */
static int update_dev_item(struct tlog_trans *trans, s64 delta)
{
	struct btrfs_dev_item *sdi = &trans->fs->super.dev_item;

	btrfs_set_dev_item_bytes_used(sdi, btrfs_dev_item_bytes_used(sdi) + delta);
	return write_dev_item(trans);
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
		err = update_dev_item(trans, (s64)(len * stripes));
	if (!err)
		err = btrfs_add_block_group(fs, bgs, logical, len, flags);
	if (!err)
		err = insert_block_group(trans, logical, len, flags);
	if (!err)
		err = insert_free_space(trans, logical, len);
	return err;
}

/*
 * ---- the device shrunk to its content (mkfs --shrink) ----
 *
 * btrfs_alloc_chunk in reverse, for the free tail of the device's last
 * chunk: the chunk, its device extents, its block group and its free
 * space lose the tail, in the trees and in memory, and the device ends
 * where its last extent now does.  The tail is taken out of the
 * transaction's free space first, so nothing the cut itself writes can
 * land in it; being free in memory, it is free in the free space tree
 * too (nothing in it was allocated or freed in this transaction).
 * SYSTEM chunks are never cut: the superblock's sys_chunk_array holds a
 * copy of them.
 */

struct dev_extent_pos {
	u64 physical;
	u64 length;
	u64 chunk_offset;
};

/* The device extent at the highest offset: where the device's used space ends. */
static int last_dev_extent(struct tlog_fs *fs, struct dev_extent_pos *pos)
{
	u64 devid = btrfs_dev_item_devid(&fs->super.dev_item);
	struct btrfs_key key = { devid, BTRFS_DEV_EXTENT_KEY, (u64)-1 };
	const struct btrfs_dev_extent *de;
	struct btrfs_root *dev_root;
	struct btrfs_path path;
	char note[256];
	int ret;

	ret = btrfs_read_root(fs, BTRFS_DEV_TREE_OBJECTID, &dev_root);
	if (ret)
		return ret;
	btrfs_init_path(&path);
	ret = btrfs_search_backwards(dev_root, &key, &path);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "device %llu has no device extents",
				 (unsigned long long)devid);
	if (ret == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		de = btrfs_fixed_item_at(path.nodes[0], path.slots[0], &key, note, sizeof(note));
		if (!de) {
			ret = tlog_error(-EUCLEAN, "device extent at %llu: %s",
					 (unsigned long long)key.offset, note);
		} else {
			pos->physical = key.offset;
			pos->length = btrfs_dev_extent_length(de);
			pos->chunk_offset = btrfs_dev_extent_chunk_offset(de);
		}
	}
	btrfs_release_path(&path);
	return ret;
}

/* The chunk map entry of the chunk at @logical, to change; NULL when there is none. */
static struct map_lookup *chunk_map_entry(struct tlog_fs *fs, u64 logical)
{
	for (size_t i = 0; i < fs->chunks.nr; i++)
		if (fs->chunks.maps[i].logical == logical)
			return &fs->chunks.maps[i];
	return NULL;
}

/*
 * The length @bg keeps: up to the start of its last free range when that
 * reaches the group's end, rounded up to 1 MiB (the granularity chunks
 * are allocated in) and never below it.  A superblock stripe inside the
 * group is not free space: a tail behind one is not cut.
 */
static u64 kept_length(const struct tlog_block_group *bg)
{
	u64 end = bg->start + bg->length, used_end = end, keep;

	if (bg->nr_free) {
		const struct free_range *last = &bg->free[bg->nr_free - 1];

		if (last->start + last->len == end)
			used_end = last->start;
	}
	keep = (used_end - bg->start + SZ_1M - 1) / SZ_1M * SZ_1M;
	if (keep < SZ_1M)
		keep = SZ_1M;
	return keep < bg->length ? keep : bg->length;
}

/* Copy the item at @key (at most @cap bytes) into @buf and delete it: it is to be re-keyed. */
static int take_item(struct tlog_trans *trans, struct btrfs_root *root,
		     const struct btrfs_key *key, void *buf, u32 cap, u32 *size)
{
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, root, key, &path, -1);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "tree %llu has no item (%llu %u %llu)",
				 (unsigned long long)root->root_key.objectid,
				 (unsigned long long)key->objectid, key->type,
				 (unsigned long long)key->offset);
	if (ret == 0) {
		*size = btrfs_item_size(path.nodes[0], path.slots[0]);
		if (*size > cap)
			ret = tlog_error(-EUCLEAN, "item (%llu %u %llu) has %u bytes, more than %u",
					 (unsigned long long)key->objectid, key->type,
					 (unsigned long long)key->offset, *size, cap);
	}
	if (ret == 0) {
		memcpy(buf, btrfs_item_ptr(path.nodes[0], path.slots[0]), *size);
		ret = btrfs_del_items(trans, root, &path, path.slots[0], 1);
	}
	btrfs_release_path(&path);
	return ret;
}

/* Give the item at @key the offset @offset (a length, in the keys that hold one). */
static int rekey_item(struct tlog_trans *trans, struct btrfs_root *root,
		      const struct btrfs_key *key, u64 offset)
{
	struct btrfs_key new_key = { key->objectid, key->type, offset };
	u8 buf[256];
	u32 size;
	int err = take_item(trans, root, key, buf, sizeof(buf), &size);

	return err ? err : btrfs_insert_item(trans, root, &new_key, buf, size);
}

/*
 * A bitmap that reaches past the new end of its group becomes the last
 * bitmap of a shorter group: fewer bits (those past the end are clear,
 * the range being allocated now).
 */
static int cut_last_bitmap(struct tlog_trans *trans, struct btrfs_root *root, u64 bg_start,
			   u64 new_end)
{
	u32 ss = trans->fs->sectorsize;
	struct btrfs_key key = { new_end - 1, BTRFS_FREE_SPACE_BITMAP_KEY, (u64)-1 };
	struct btrfs_path path;
	u8 bits[256];
	u32 size;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, &key, &path);
	if (ret > 0)
		ret = btrfs_prev_item(root, &path);
	if (ret == 0)
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
	btrfs_release_path(&path);
	if (ret)
		return ret < 0 ? ret : 0;
	if (key.type != BTRFS_FREE_SPACE_BITMAP_KEY || key.objectid < bg_start ||
	    key.objectid + key.offset <= new_end)
		return 0;
	ret = take_item(trans, root, &key, bits, sizeof(bits), &size);
	if (ret)
		return ret;
	key.offset = new_end - key.objectid;
	return btrfs_insert_item(trans, root, &key, bits, (u32)((key.offset / ss + 7) / 8));
}

/*
 * The free space tree of the group @old loses [@new_end, its end): the
 * range is taken as allocated (which keeps the INFO's count of free runs
 * right, in either form), the bitmaps left behind it go, the one across
 * the new end is shortened, and the INFO is re-keyed to the new length.
 */
static int cut_free_space(struct tlog_trans *trans, const struct tlog_block_group *old,
			  u64 new_end)
{
	struct tlog_fs *fs = trans->fs;
	u64 old_end = old->start + old->length;
	struct btrfs_key min = { new_end, 0, 0 };
	struct btrfs_key max = { old_end - 1, (u8)-1, (u64)-1 };
	struct btrfs_key info = { old->start, BTRFS_FREE_SPACE_INFO_KEY, old->length };
	struct btrfs_root *root;
	int err;

	if (!(fs->compat_ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE))
		return 0;
	err = fst_remove_range(trans, old, new_end, old_end - new_end);
	if (!err)
		err = btrfs_read_root(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, &root);
	if (!err)
		err = btrfs_delete_items_range(trans, root, &min, &max, NULL);
	if (!err)
		err = cut_last_bitmap(trans, root, old->start, new_end);
	if (!err)
		err = rekey_item(trans, root, &info, new_end - old->start);
	return err;
}

/* The BLOCK_GROUP_ITEM, whose key holds the length, re-keyed; its used count as in memory. */
static int cut_block_group_item(struct tlog_trans *trans, const struct tlog_block_group *bg,
				u64 old_len)
{
	struct tlog_fs *fs = trans->fs;
	struct btrfs_key key = { bg->start, BTRFS_BLOCK_GROUP_ITEM_KEY, old_len };
	struct btrfs_block_group_item bgi;
	struct btrfs_root *root;
	u32 size;
	int err;

	err = btrfs_read_root(fs, btrfs_block_group_root_id(fs), &root);
	if (!err)
		err = take_item(trans, root, &key, &bgi, sizeof(bgi), &size);
	if (!err && size != sizeof(bgi))
		err = tlog_error(-EUCLEAN, "block group item %llu has %u bytes",
				 (unsigned long long)bg->start, size);
	if (err)
		return err;
	btrfs_set_block_group_item_used(&bgi, bg->used);
	key.offset = bg->length;
	return btrfs_insert_item(trans, root, &key, &bgi, sizeof(bgi));
}

/* The CHUNK_ITEM's length and each stripe's DEV_EXTENT length. */
static int cut_chunk_items(struct tlog_trans *trans, const struct map_lookup *m, u64 new_len)
{
	struct tlog_fs *fs = trans->fs;
	struct btrfs_key key = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
				 m->logical };
	struct btrfs_root *dev_root;
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, fs->chunk_root, &key, &path, 0);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "the chunk tree has no chunk %llu",
				 (unsigned long long)m->logical);
	if (ret == 0)
		btrfs_set_chunk_length(btrfs_item_ptr(path.nodes[0], path.slots[0]), new_len);
	btrfs_release_path(&path);
	if (!ret)
		ret = btrfs_read_root(fs, BTRFS_DEV_TREE_OBJECTID, &dev_root);
	for (int i = 0; !ret && i < m->num_stripes; i++) {
		key = (struct btrfs_key){ m->stripes[i].devid, BTRFS_DEV_EXTENT_KEY,
					  m->stripes[i].physical };
		ret = btrfs_search_slot_for_write(trans, dev_root, &key, &path, 0);
		if (ret > 0)
			ret = tlog_error(-EUCLEAN, "device %llu has no extent at %llu",
					 (unsigned long long)key.objectid,
					 (unsigned long long)key.offset);
		if (ret == 0)
			btrfs_set_dev_extent_length(btrfs_item_ptr(path.nodes[0], path.slots[0]),
						    new_len);
		btrfs_release_path(&path);
	}
	return ret;
}

/*
 * Cut the chunk at @logical (with its block group) to @new_len bytes.
 * The group array and the chunk map may move while trees change (a new
 * chunk), so both are looked up again after each step that can.
 */
static int cut_chunk(struct tlog_trans *trans, struct tlog_block_groups *bgs, u64 logical,
		     u64 new_len)
{
	struct tlog_fs *fs = trans->fs;
	struct tlog_block_group *bg = btrfs_lookup_block_group(bgs, logical);
	struct tlog_block_group old = *bg;
	u64 tail = old.length - new_len;
	struct map_lookup *m;
	int err;

	err = btrfs_exclude_range(bgs, logical + new_len, tail);
	if (!err)
		err = cut_free_space(trans, &old, logical + new_len);
	if (err)
		return err;
	bg = btrfs_lookup_block_group(bgs, logical);
	bg->length = new_len;
	err = cut_block_group_item(trans, bg, old.length);
	m = chunk_map_entry(fs, logical);
	if (!err)
		err = cut_chunk_items(trans, m, new_len);
	if (err)
		return err;
	m = chunk_map_entry(fs, logical);
	m->length = new_len;
	return update_dev_item(trans, -(s64)(tail * m->num_stripes));
}

/*
 * Only chunks whose every stripe is the chunk's whole length (single,
 * DUP) are cut, and only DATA and METADATA ones.
 */
static bool chunk_can_be_cut(const struct map_lookup *m)
{
	u64 profile = m->type & BTRFS_BLOCK_GROUP_PROFILE_MASK;

	if (m->type & BTRFS_BLOCK_GROUP_SYSTEM)
		return false;
	return profile == 0 || profile == BTRFS_BLOCK_GROUP_DUP;
}

/* The device ends at @size: the superblock, its device item and the chunk tree's. */
static int set_device_size(struct tlog_trans *trans, u64 size)
{
	struct btrfs_super_block *sb = &trans->fs->super;

	btrfs_set_super_block_total_bytes(sb, size);
	btrfs_set_dev_item_total_bytes(&sb->dev_item, size);
	return write_dev_item(trans);
}

int btrfs_shrink_to_fit(struct tlog_trans *trans, u64 *new_size)
{
	struct tlog_fs *fs = trans->fs;
	struct tlog_block_groups *bgs = tlog_trans_block_groups(trans);
	struct dev_extent_pos last;
	const struct map_lookup *m;
	int err;

	if (!bgs)
		return tlog_error(-EINVAL, "shrinking needs a transaction on an image");
	if (btrfs_super_block_num_devices(&fs->super) != 1)
		return tlog_error(-EOPNOTSUPP, "only a filesystem of one device can be shrunk");
	err = last_dev_extent(fs, &last);
	if (err)
		return err;
	m = chunk_map_find(&fs->chunks, last.chunk_offset);
	if (!m || m->logical != last.chunk_offset)
		return tlog_error(-EUCLEAN, "device extent at %llu belongs to no chunk (%llu)",
				  (unsigned long long)last.physical,
				  (unsigned long long)last.chunk_offset);
	if (chunk_can_be_cut(m)) {
		const struct tlog_block_group *bg = btrfs_lookup_block_group(bgs, m->logical);
		u64 keep;

		if (!bg || bg->start != m->logical || bg->length != m->length)
			return tlog_error(-EUCLEAN, "chunk %llu has no block group of its size",
					  (unsigned long long)m->logical);
		keep = kept_length(bg);
		if (keep < bg->length)
			err = cut_chunk(trans, bgs, m->logical, keep);
		if (!err)
			err = last_dev_extent(fs, &last);
		if (err)
			return err;
	}
	err = set_device_size(trans, last.physical + last.length);
	if (!err)
		*new_size = last.physical + last.length;
	return err;
}
