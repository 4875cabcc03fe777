// SPDX-License-Identifier: GPL-2.0-only
/*
 * Chunk map: logical to physical address translation for SINGLE and DUP.
 * Other profiles are recognised (so that dump commands can show them) but
 * mapping through them is refused: tlogctl handles single-device images.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "ctree.h"
#include "errctx.h"
#include "misc.h"
#include "tree-checker.h"
#include "volumes.h"

void chunk_map_init(struct chunk_map *map)
{
	memset(map, 0, sizeof(*map));
}

void chunk_map_release(struct chunk_map *map)
{
	free(map->maps);
	chunk_map_init(map);
}

static int map_cmp(const void *a, const void *b)
{
	const struct map_lookup *x = a, *y = b;

	return x->logical < y->logical ? -1 : x->logical > y->logical;
}

int chunk_map_add(struct tlog_fs *fs, struct chunk_map *map, u64 logical,
		  const struct btrfs_chunk *chunk, u32 item_size)
{
	struct map_lookup m = { 0 };
	const struct map_lookup *old;
	int ret;

	ret = btrfs_check_chunk(fs, logical, chunk, item_size);
	if (ret)
		return ret;

	m.logical = logical;
	m.length = btrfs_chunk_length(chunk);
	m.type = btrfs_chunk_type(chunk);
	m.stripe_len = btrfs_chunk_stripe_len(chunk);
	m.num_stripes = btrfs_chunk_num_stripes(chunk);
	m.sub_stripes = btrfs_chunk_sub_stripes(chunk);
	for (int i = 0; i < m.num_stripes; i++) {
		const struct btrfs_stripe *s = btrfs_chunk_stripe(chunk, i);

		m.stripes[i].devid = btrfs_stripe_devid(s);
		m.stripes[i].physical = btrfs_stripe_offset(s);
		memcpy(m.stripes[i].dev_uuid, s->dev_uuid, BTRFS_UUID_SIZE);
	}

	old = chunk_map_find(map, logical);
	if (!old && map->nr) {
		/* the new chunk may still overlap the start of a later one */
		for (size_t i = 0; i < map->nr; i++)
			if (map->maps[i].logical > logical &&
			    map->maps[i].logical < logical + m.length) {
				old = &map->maps[i];
				break;
			}
	}
	if (old) {
		if (old->logical == m.logical && old->length == m.length &&
		    old->type == m.type && old->num_stripes == m.num_stripes &&
		    memcmp(old->stripes, m.stripes, sizeof(m.stripes)) == 0)
			return 0;
		return tlog_error(-EUCLEAN, "chunk at %llu overlaps chunk at %llu",
				  (unsigned long long)logical,
				  (unsigned long long)old->logical);
	}

	if (array_reserve(map->maps, map->alloc, map->nr + 1))
		return -ENOMEM;
	map->maps[map->nr++] = m;
	qsort(map->maps, map->nr, sizeof(*map->maps), map_cmp);
	return 0;
}

const struct map_lookup *chunk_map_find(const struct chunk_map *map, u64 logical)
{
	size_t lo = 0, hi = map->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct map_lookup *m = &map->maps[mid];

		if (logical < m->logical)
			hi = mid;
		else if (logical - m->logical >= m->length)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

int btrfs_map_block(struct tlog_fs *fs, u64 logical, u64 len,
		    u64 *physical, int max)
{
	const struct map_lookup *m = chunk_map_find(&fs->chunks, logical);
	u64 profile, off;
	int copies = 0;

	if (!m)
		return tlog_error(-EUCLEAN, "logical address %llu is in no chunk",
				  (unsigned long long)logical);
	off = logical - m->logical;
	if (len > m->length - off)
		return tlog_error(-EUCLEAN, "range %llu+%llu crosses the end of chunk %llu",
				  (unsigned long long)logical, (unsigned long long)len,
				  (unsigned long long)m->logical);
	profile = m->type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
	if (profile != 0 && profile != BTRFS_BLOCK_GROUP_DUP)
		return tlog_error(-EOPNOTSUPP, "chunk %llu uses profile %s, which is not supported",
				  (unsigned long long)m->logical, btrfs_bg_profile_name(m->type));
	for (int i = 0; i < m->num_stripes; i++) {
		if (m->stripes[i].devid != btrfs_dev_item_devid(&fs->super.dev_item))
			return tlog_error(-EOPNOTSUPP,
					  "chunk %llu lives on device %llu: multi-device filesystems are not supported",
					  (unsigned long long)m->logical,
					  (unsigned long long)m->stripes[i].devid);
		if (copies < max)
			physical[copies++] = m->stripes[i].physical + off;
	}
	return copies;
}

int btrfs_read_sys_array(struct tlog_fs *fs, struct chunk_map *map)
{
	const struct btrfs_super_block *sb = &fs->super;
	u32 size = btrfs_super_block_sys_chunk_array_size(sb);
	const u8 *p = sb->sys_chunk_array;
	u64 last = 0;
	u32 cur = 0;
	int ret;

	if (size > BTRFS_SYSTEM_CHUNK_ARRAY_SIZE)
		return tlog_error(-EUCLEAN, "sys_chunk_array_size %u is larger than %u",
				  size, BTRFS_SYSTEM_CHUNK_ARRAY_SIZE);
	if (size < sizeof(struct btrfs_disk_key) + sizeof(struct btrfs_chunk))
		return tlog_error(-EUCLEAN, "sys_chunk_array_size %u holds no chunk", size);

	while (cur < size) {
		struct btrfs_key key;
		const struct btrfs_chunk *chunk;
		u32 len;
		u16 num_stripes;

		if (size - cur < sizeof(struct btrfs_disk_key) + sizeof(struct btrfs_chunk))
			return tlog_error(-EUCLEAN, "sys_chunk_array: truncated entry at byte %u", cur);
		btrfs_disk_key_to_cpu(&key, (const struct btrfs_disk_key *)(p + cur));
		cur += sizeof(struct btrfs_disk_key);
		if (key.type != BTRFS_CHUNK_ITEM_KEY ||
		    key.objectid != BTRFS_FIRST_CHUNK_TREE_OBJECTID)
			return tlog_error(-EUCLEAN, "sys_chunk_array: key (%llu %u) is not a chunk item",
					  (unsigned long long)key.objectid, key.type);
		if (cur > sizeof(struct btrfs_disk_key) && key.offset <= last)
			return tlog_error(-EUCLEAN, "sys_chunk_array: chunks out of order at %llu",
					  (unsigned long long)key.offset);
		last = key.offset;
		chunk = (const struct btrfs_chunk *)(p + cur);
		num_stripes = btrfs_chunk_num_stripes(chunk);
		if (num_stripes == 0 || num_stripes > TLOG_MAX_STRIPES)
			return tlog_error(-EUCLEAN, "sys_chunk_array: chunk %llu has %u stripes",
					  (unsigned long long)key.offset, num_stripes);
		len = btrfs_chunk_item_size(num_stripes);
		if (len > size - cur)
			return tlog_error(-EUCLEAN, "sys_chunk_array: chunk %llu runs past the array",
					  (unsigned long long)key.offset);
		if (!(btrfs_chunk_type(chunk) & BTRFS_BLOCK_GROUP_SYSTEM))
			return tlog_error(-EUCLEAN, "sys_chunk_array: chunk %llu is not a SYSTEM chunk",
					  (unsigned long long)key.offset);
		ret = chunk_map_add(fs, map, key.offset, chunk, len);
		if (ret)
			return ret;
		cur += len;
	}
	return 0;
}

static int read_dev_items(struct tlog_fs *fs)
{
	struct btrfs_tree_iter iter;
	struct btrfs_key min = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, 0 };
	struct btrfs_key max = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, (u64)-1 };
	int ret = 0, found = 0;

	btrfs_for_each_item(fs->chunk_root, &iter, &min, &max) {
		ret = btrfs_check_dev_item(fs, iter.leaf, iter.slot, &iter.key);
		if (ret)
			break;
		found++;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	if (!ret && !found)
		ret = tlog_error(-EUCLEAN, "the chunk tree has no item for device %llu",
				 (unsigned long long)btrfs_dev_item_devid(&fs->super.dev_item));
	return ret;
}

int btrfs_read_chunk_tree(struct tlog_fs *fs)
{
	struct btrfs_tree_iter iter;
	struct btrfs_key min = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, 0 };
	struct btrfs_key max = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, (u64)-1 };
	int ret = 0;

	btrfs_for_each_item(fs->chunk_root, &iter, &min, &max) {
		ret = chunk_map_add(fs, &fs->chunks, iter.key.offset,
				    btrfs_item_ptr(iter.leaf, iter.slot),
				    btrfs_item_size(iter.leaf, iter.slot));
		if (ret)
			break;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	return ret ? ret : read_dev_items(fs);
}

const char *btrfs_bg_profile_name(u64 flags)
{
	switch (flags & BTRFS_BLOCK_GROUP_PROFILE_MASK) {
	case 0: return "single";
	case BTRFS_BLOCK_GROUP_RAID0: return "raid0";
	case BTRFS_BLOCK_GROUP_RAID1: return "raid1";
	case BTRFS_BLOCK_GROUP_DUP: return "dup";
	case BTRFS_BLOCK_GROUP_RAID10: return "raid10";
	case BTRFS_BLOCK_GROUP_RAID5: return "raid5";
	case BTRFS_BLOCK_GROUP_RAID6: return "raid6";
	case BTRFS_BLOCK_GROUP_RAID1C3: return "raid1c3";
	case BTRFS_BLOCK_GROUP_RAID1C4: return "raid1c4";
	}
	return "unknown";
}

/* Append to a bounded string; keeps it NUL-terminated when it runs out. */
static void str_append(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len >= size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n;
}

void btrfs_bg_flags_to_str(u64 flags, char *buf, size_t size)
{
	static const struct { u64 bit; const char *name; } names[] = {
		{ BTRFS_BLOCK_GROUP_DATA, "DATA" },
		{ BTRFS_BLOCK_GROUP_SYSTEM, "SYSTEM" },
		{ BTRFS_BLOCK_GROUP_METADATA, "METADATA" },
		{ BTRFS_BLOCK_GROUP_RAID0, "RAID0" },
		{ BTRFS_BLOCK_GROUP_RAID1, "RAID1" },
		{ BTRFS_BLOCK_GROUP_DUP, "DUP" },
		{ BTRFS_BLOCK_GROUP_RAID10, "RAID10" },
		{ BTRFS_BLOCK_GROUP_RAID5, "RAID5" },
		{ BTRFS_BLOCK_GROUP_RAID6, "RAID6" },
		{ BTRFS_BLOCK_GROUP_RAID1C3, "RAID1C3" },
		{ BTRFS_BLOCK_GROUP_RAID1C4, "RAID1C4" },
	};
	u64 orig = flags;
	size_t len = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(flags & names[i].bit))
			continue;
		str_append(buf, size, &len, "%s%s", len ? "|" : "", names[i].name);
		flags &= ~names[i].bit;
	}
	if (!(orig & BTRFS_BLOCK_GROUP_PROFILE_MASK))
		str_append(buf, size, &len, "%ssingle", len ? "|" : "");
	if (flags)
		str_append(buf, size, &len, "%sUNKNOWN.0x%llx", len ? "|" : "",
			   (unsigned long long)flags);
}
