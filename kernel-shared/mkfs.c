// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlog_mkfs: make a filesystem by building its trees directly.
 *
 * A fresh filesystem is small and fully known in advance, so instead of
 * running transactions against an empty image (what mkfs.btrfs does) the
 * items of every tree are computed as lists, packed into blocks, given
 * addresses in the chunk layout, and written once.  The only circularity is
 * that a tree's contents depend on how many blocks the trees take (extent
 * items, block group usage, free space, root items): it is resolved by
 * planning a block count for every tree, building the items for that plan,
 * packing them, and repeating until the packing matches the plan.
 *
 * Everything is written in generation 1.  The references are section 12 of
 * the format reference (the checklist) and 12.1 (the write order).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uuid/uuid.h>

#include "array.h"
#include "blockdev.h"
#include "csum.h"
#include "super.h"
#include "errctx.h"
#include "leaf-builder.h"
#include "misc.h"
#include "mkfs.h"

#define SZ_64K		(64ULL * 1024)
#define SZ_1M		(1024ULL * 1024)
#define SZ_1G		(1024ULL * SZ_1M)
#define MKFS_GENERATION	1ULL
#define MAX_PLAN_ROUNDS	32

const struct tlog_mkfs_feature tlog_mkfs_features[] = {
	{ "mixed-bg", NULL, false, BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS, false, false,
	  "mixed data and metadata block groups" },
	{ "extref", NULL, false, BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF, true, true,
	  "increased hardlink limit per file to 65536" },
	{ "raid56", NULL, false, BTRFS_FEATURE_INCOMPAT_RAID56, false, false,
	  "raid56 extended format" },
	{ "skinny-metadata", NULL, false, BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA, true, true,
	  "reduced-size metadata extent refs" },
	{ "no-holes", NULL, false, BTRFS_FEATURE_INCOMPAT_NO_HOLES, true, true,
	  "no explicit hole extents for files" },
	{ "raid1c34", NULL, false, BTRFS_FEATURE_INCOMPAT_RAID1C34, false, false,
	  "RAID1 with 3 or 4 copies" },
	{ "zoned", NULL, false, BTRFS_FEATURE_INCOMPAT_ZONED, false, false,
	  "support zoned devices" },
	{ "extent-tree-v2", NULL, false, BTRFS_FEATURE_INCOMPAT_EXTENT_TREE_V2, false, false,
	  "new extent tree format (experimental)" },
	{ "raid-stripe-tree", NULL, false, BTRFS_FEATURE_INCOMPAT_RAID_STRIPE_TREE, false, false,
	  "raid stripe tree (experimental)" },
	{ "squota", NULL, false, BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA, false, false,
	  "squota support (simple accounting qgroups)" },
	{ "quota", NULL, false, 0, false, false,
	  "quota support (qgroups)" },
	{ "free-space-tree", "fst", true,
	  BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE | BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID,
	  true, true, "free space tree, space cache v2" },
	{ "block-group-tree", "bgt", true, BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE, true, true,
	  "block group tree, for faster mount" },
	{ NULL, NULL, false, 0, false, false, NULL }
};

const struct tlog_mkfs_feature *tlog_mkfs_find_feature(const char *name)
{
	for (const struct tlog_mkfs_feature *f = tlog_mkfs_features; f->name; f++)
		if (!strcmp(f->name, name) || (f->alias && !strcmp(f->alias, name)))
			return f;
	return NULL;
}

void tlog_mkfs_default_cfg(struct tlog_mkfs_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nodesize = 16384;
	cfg->sectorsize = 4096;
	cfg->csum_type = BTRFS_CSUM_TYPE_CRC32;
	cfg->metadata_profile = BTRFS_BLOCK_GROUP_DUP;
	cfg->data_profile = 0;
	cfg->incompat_flags = BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF;
	for (const struct tlog_mkfs_feature *f = tlog_mkfs_features; f->name; f++) {
		if (!f->is_default)
			continue;
		if (f->compat_ro)
			cfg->compat_ro_flags |= f->flags;
		else
			cfg->incompat_flags |= f->flags;
	}
}

static u64 clamp_u64(u64 v, u64 lo, u64 hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int check_features(const struct tlog_mkfs_cfg *cfg)
{
	u64 ro = cfg->compat_ro_flags;
	const u64 fst = BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE |
			BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID;
	u64 known_incompat = BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF, known_ro = 0;

	for (const struct tlog_mkfs_feature *f = tlog_mkfs_features; f->name; f++) {
		if (!f->supported)
			continue;
		if (f->compat_ro)
			known_ro |= f->flags;
		else
			known_incompat |= f->flags;
	}
	if ((cfg->incompat_flags & ~known_incompat) || (ro & ~known_ro))
		return tlog_error(-EOPNOTSUPP, "feature bits 0x%llx/0x%llx are not supported",
				  (unsigned long long)(cfg->incompat_flags & ~known_incompat),
				  (unsigned long long)(ro & ~known_ro));
	if (!(cfg->incompat_flags & BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF))
		return tlog_error(-EINVAL, "mixed-backref is required");
	if ((ro & fst) && (ro & fst) != fst)
		return tlog_error(-EINVAL, "free-space-tree needs both of its compat_ro bits");
	/* The kernel refuses to mount a block group tree without these two. */
	if ((ro & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE) && !(ro & fst))
		return tlog_error(-EINVAL, "block-group-tree requires free-space-tree; add ^block-group-tree");
	if ((ro & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE) &&
	    !(cfg->incompat_flags & BTRFS_FEATURE_INCOMPAT_NO_HOLES))
		return tlog_error(-EINVAL, "block-group-tree requires no-holes; add ^block-group-tree");
	return 0;
}

int tlog_mkfs_check_cfg(const struct tlog_mkfs_cfg *cfg)
{
	u32 ss = cfg->sectorsize, ns = cfg->nodesize;

	if (!is_power_of_2(ss) || ss < 4096 || ss > 65536)
		return tlog_error(-EINVAL, "invalid sector size %u, not a power of two from 4096 to 65536", ss);
	if (!is_power_of_2(ns) || ns < ss || ns > BTRFS_MAX_NODESIZE)
		return tlog_error(-EINVAL,
				  "invalid node size %u, not a power of two from the sector size %u to 65536",
				  ns, ss);
	if (!btrfs_csum_type_supported(cfg->csum_type))
		return tlog_error(-EINVAL, "unsupported checksum type %u", cfg->csum_type);
	if (cfg->metadata_profile != 0 && cfg->metadata_profile != BTRFS_BLOCK_GROUP_DUP)
		return tlog_error(-EINVAL, "metadata profile must be single or dup");
	if (cfg->data_profile != 0)
		return tlog_error(-EINVAL, "data profile must be single");
	if (strnlen(cfg->label, BTRFS_LABEL_SIZE) >= BTRFS_LABEL_SIZE)
		return tlog_error(-EINVAL, "label is longer than %d bytes", BTRFS_LABEL_SIZE - 1);
	return check_features(cfg);
}

/* ---- layout ---- */

enum { CH_SYS, CH_META, CH_DATA };

struct mk_chunk {
	u64 logical;
	u64 length;
	u64 type;
	int num_stripes;
	u64 physical[2];
	u64 cursor;		/* next free logical address for tree blocks */
	u64 used;		/* block group used */
};

/*
 * Chunk sizes follow what mkfs.btrfs makes for one device: SYSTEM 8 MiB
 * (4 MiB single), METADATA a tenth of the device in raw bytes (so a
 * twentieth per DUP copy) between 32 MiB (8 MiB single) and 256 MiB
 * (1 GiB from 50 GiB up), DATA 8 MiB.  The kernel allocates more chunks
 * as the filesystem fills.
 */
static void plan_chunk_sizes(const struct tlog_mkfs_cfg *cfg, u64 total, u64 len[3])
{
	bool dup = cfg->metadata_profile == BTRFS_BLOCK_GROUP_DUP;
	u64 cap = total >= 50 * SZ_1G ? SZ_1G : 256 * SZ_1M;

	len[CH_SYS] = dup ? 8 * SZ_1M : 4 * SZ_1M;
	if (dup)
		len[CH_META] = clamp_u64(round_down(total / 20, SZ_64K), 32 * SZ_1M, cap);
	else
		len[CH_META] = clamp_u64(round_down(total / 10, SZ_64K), 8 * SZ_1M, cap);
	len[CH_DATA] = 8 * SZ_1M;
}

static u64 layout_end(const struct tlog_mkfs_cfg *cfg, const u64 len[3])
{
	int copies = cfg->metadata_profile == BTRFS_BLOCK_GROUP_DUP ? 2 : 1;

	return BTRFS_DEVICE_RANGE_RESERVED + copies * (len[CH_SYS] + len[CH_META]) + len[CH_DATA];
}

u64 tlog_mkfs_min_size(const struct tlog_mkfs_cfg *cfg)
{
	u64 len[3];

	/* at the minimum the metadata chunk takes its floor size */
	plan_chunk_sizes(cfg, 0, len);
	return layout_end(cfg, len);
}

/*
 * Lay the chunks out one after the other from 1 MiB, each DUP copy right
 * after the first.  The logical address of a chunk is the physical offset
 * of its first copy: that keeps logical ranges disjoint and easy to read
 * in dumps.
 */
static void plan_layout(const struct tlog_mkfs_cfg *cfg, u64 total, struct mk_chunk ch[3])
{
	static const u64 types[3] = {
		BTRFS_BLOCK_GROUP_SYSTEM, BTRFS_BLOCK_GROUP_METADATA, BTRFS_BLOCK_GROUP_DATA
	};
	u64 len[3], phys = BTRFS_DEVICE_RANGE_RESERVED;

	plan_chunk_sizes(cfg, total, len);
	for (int i = 0; i < 3; i++) {
		u64 profile = i == CH_DATA ? cfg->data_profile : cfg->metadata_profile;

		memset(&ch[i], 0, sizeof(ch[i]));
		ch[i].length = len[i];
		ch[i].type = types[i] | profile;
		ch[i].num_stripes = profile == BTRFS_BLOCK_GROUP_DUP ? 2 : 1;
		ch[i].logical = phys;
		for (int s = 0; s < ch[i].num_stripes; s++) {
			ch[i].physical[s] = phys;
			phys += len[i];
		}
	}
}

/*
 * Whether [logical, logical + len) maps onto a superblock copy through any
 * stripe.  The kernel reserves the 64 KiB stripe unit around each copy
 * (format reference 7.6), so that is what is avoided.
 */
static bool hits_super_stripe(const struct mk_chunk *ch, u64 logical, u64 len)
{
	for (int i = 0; i < BTRFS_SUPER_MIRROR_MAX; i++) {
		u64 sb = btrfs_sb_offset(i);

		for (int s = 0; s < ch->num_stripes; s++) {
			u64 start;

			if (sb < ch->physical[s] || sb >= ch->physical[s] + ch->length)
				continue;
			start = ch->logical + round_down(sb - ch->physical[s], SZ_64K);
			if (logical < start + SZ_64K && start < logical + len)
				return true;
		}
	}
	return false;
}

static int alloc_tree_block(struct mk_chunk *ch, u32 nodesize, u64 *ret)
{
	while (ch->cursor + nodesize <= ch->logical + ch->length) {
		u64 cand = ch->cursor;

		ch->cursor += nodesize;
		if (!hits_super_stripe(ch, cand, nodesize)) {
			*ret = cand;
			return 0;
		}
	}
	return tlog_error(-ENOSPC, "the initial trees do not fit in the %llu-byte chunk",
			  (unsigned long long)ch->length);
}

/* ---- trees as item lists ---- */

enum {
	T_ROOT, T_EXTENT, T_CHUNK, T_DEV, T_FS, T_CSUM, T_UUID, T_FST, T_BGT, T_RELOC, T_MAX
};

static const u64 tree_ids[T_MAX] = {
	[T_ROOT] = BTRFS_ROOT_TREE_OBJECTID,
	[T_EXTENT] = BTRFS_EXTENT_TREE_OBJECTID,
	[T_CHUNK] = BTRFS_CHUNK_TREE_OBJECTID,
	[T_DEV] = BTRFS_DEV_TREE_OBJECTID,
	[T_FS] = BTRFS_FS_TREE_OBJECTID,
	[T_CSUM] = BTRFS_CSUM_TREE_OBJECTID,
	[T_UUID] = BTRFS_UUID_TREE_OBJECTID,
	[T_FST] = BTRFS_FREE_SPACE_TREE_OBJECTID,
	[T_BGT] = BTRFS_BLOCK_GROUP_TREE_OBJECTID,
	[T_RELOC] = BTRFS_DATA_RELOC_TREE_OBJECTID,
};

struct mk_item {
	struct btrfs_key key;
	u32 size;
	size_t off;		/* of the data in the tree's arena */
};

/* One block of a packed tree: leaves first, then each node level, root last. */
struct mk_block {
	u8 level;
	u32 first;		/* first item (leaf) or first child block (node) */
	u32 nr;
	struct btrfs_key first_key;
	u64 bytenr;
};

struct mk_tree {
	u64 id;
	bool present;
	struct mk_item *items;
	u32 nr_items, alloc_items;
	u8 *arena;
	size_t arena_len, arena_alloc;
	struct mk_block *blocks;
	u32 nr_blocks;
	/* the plan the items were built for */
	u32 plan_blocks;
	u8 plan_level;
	u64 *addr;
};

struct mk_ctx {
	const struct tlog_mkfs_cfg *cfg;
	u32 nodesize;
	u64 total_bytes;
	bool skinny, fst, bgt;
	u8 fsid[BTRFS_FSID_SIZE];
	u8 dev_uuid[BTRFS_UUID_SIZE];
	u8 chunk_uuid[BTRFS_UUID_SIZE];
	u8 fs_uuid[BTRFS_UUID_SIZE];
	struct btrfs_timespec now;
	struct mk_chunk chunks[3];
	struct mk_tree trees[T_MAX];
	u64 bytes_used;
	u64 dev_bytes_used;
	int err;		/* sticky allocation failure of the item lists */
	u8 scratch[BTRFS_MAX_NODESIZE];
};

static void tree_reset(struct mk_tree *t)
{
	t->nr_items = 0;
	t->arena_len = 0;
}

static void tree_release(struct mk_tree *t)
{
	free(t->items);
	free(t->arena);
	free(t->blocks);
	free(t->addr);
}

/*
 * Add an item to @t and return its zeroed data, to fill before the next
 * call.  On allocation failure the error sticks in @c and a scratch
 * buffer is returned, so builders need no error paths of their own.
 */
static void *add_item(struct mk_ctx *c, struct mk_tree *t, u64 objectid, u8 type,
		      u64 offset, u32 size)
{
	size_t alloc_items = t->alloc_items;
	struct mk_item *it;

	if (array_reserve(t->items, alloc_items, t->nr_items + 1) ||
	    array_reserve(t->arena, t->arena_alloc, t->arena_len + size + 1)) {
		c->err = -ENOMEM;
		memset(c->scratch, 0, size);
		return c->scratch;
	}
	t->alloc_items = alloc_items;
	it = &t->items[t->nr_items++];
	it->key.objectid = objectid;
	it->key.type = type;
	it->key.offset = offset;
	it->size = size;
	it->off = t->arena_len;
	t->arena_len += size;
	memset(t->arena + it->off, 0, size);
	return t->arena + it->off;
}

static u64 tree_root_bytenr(const struct mk_tree *t)
{
	return t->addr[t->plan_blocks - 1];
}

/* ---- the contents of each tree ---- */

static void fill_dev_item(const struct mk_ctx *c, struct btrfs_dev_item *di)
{
	u32 ss = c->cfg->sectorsize;

	btrfs_set_dev_item_devid(di, 1);
	btrfs_set_dev_item_total_bytes(di, c->total_bytes);
	btrfs_set_dev_item_bytes_used(di, c->dev_bytes_used);
	btrfs_set_dev_item_io_align(di, ss);
	btrfs_set_dev_item_io_width(di, ss);
	btrfs_set_dev_item_sector_size(di, ss);
	memcpy(di->uuid, c->dev_uuid, BTRFS_UUID_SIZE);
	memcpy(di->fsid, c->fsid, BTRFS_FSID_SIZE);
}

static void fill_chunk_item(const struct mk_ctx *c, const struct mk_chunk *ch,
			    struct btrfs_chunk *chunk)
{
	btrfs_set_chunk_length(chunk, ch->length);
	btrfs_set_chunk_owner(chunk, BTRFS_EXTENT_TREE_OBJECTID);
	btrfs_set_chunk_stripe_len(chunk, BTRFS_STRIPE_LEN);
	btrfs_set_chunk_type(chunk, ch->type);
	btrfs_set_chunk_io_align(chunk, BTRFS_STRIPE_LEN);
	btrfs_set_chunk_io_width(chunk, BTRFS_STRIPE_LEN);
	btrfs_set_chunk_sector_size(chunk, c->cfg->sectorsize);
	btrfs_set_chunk_num_stripes(chunk, ch->num_stripes);
	btrfs_set_chunk_sub_stripes(chunk, 1);
	for (int s = 0; s < ch->num_stripes; s++) {
		struct btrfs_stripe *st = btrfs_chunk_stripe(chunk, s);

		btrfs_set_stripe_devid(st, 1);
		btrfs_set_stripe_offset(st, ch->physical[s]);
		memcpy(st->dev_uuid, c->dev_uuid, BTRFS_UUID_SIZE);
	}
}

static void build_chunk_tree(struct mk_ctx *c)
{
	struct mk_tree *t = &c->trees[T_CHUNK];

	fill_dev_item(c, add_item(c, t, BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, 1,
				  sizeof(struct btrfs_dev_item)));
	for (int i = 0; i < 3; i++) {
		const struct mk_chunk *ch = &c->chunks[i];

		fill_chunk_item(c, ch, add_item(c, t, BTRFS_FIRST_CHUNK_TREE_OBJECTID,
						BTRFS_CHUNK_ITEM_KEY, ch->logical,
						btrfs_chunk_item_size(ch->num_stripes)));
	}
}

static void build_dev_tree(struct mk_ctx *c)
{
	struct mk_tree *t = &c->trees[T_DEV];

	for (int i = 0; i < 3; i++) {
		const struct mk_chunk *ch = &c->chunks[i];

		for (int s = 0; s < ch->num_stripes; s++) {
			struct btrfs_dev_extent *de;

			de = add_item(c, t, 1, BTRFS_DEV_EXTENT_KEY, ch->physical[s], sizeof(*de));
			btrfs_set_dev_extent_chunk_tree(de, BTRFS_CHUNK_TREE_OBJECTID);
			btrfs_set_dev_extent_chunk_objectid(de, BTRFS_FIRST_CHUNK_TREE_OBJECTID);
			btrfs_set_dev_extent_chunk_offset(de, ch->logical);
			btrfs_set_dev_extent_length(de, ch->length);
			memcpy(de->chunk_tree_uuid, c->chunk_uuid, BTRFS_UUID_SIZE);
		}
	}
}

static void fill_dir_inode(const struct mk_ctx *c, struct btrfs_inode_item *ii)
{
	btrfs_set_inode_item_generation(ii, MKFS_GENERATION);
	btrfs_set_inode_item_transid(ii, MKFS_GENERATION);
	btrfs_set_inode_item_nlink(ii, 1);
	btrfs_set_inode_item_mode(ii, 040755);
	ii->atime = c->now;
	ii->ctime = c->now;
	ii->mtime = c->now;
	ii->otime = c->now;
}

static void add_inode_ref(struct mk_ctx *c, struct mk_tree *t, u64 ino, u64 parent,
			  u64 index, const char *name)
{
	size_t len = strlen(name);
	struct btrfs_inode_ref *ref;

	ref = add_item(c, t, ino, BTRFS_INODE_REF_KEY, parent, sizeof(*ref) + len);
	btrfs_set_inode_ref_index(ref, index);
	btrfs_set_inode_ref_name_len(ref, len);
	memcpy(ref + 1, name, len);
}

/* An empty subvolume-format tree: the root directory 256 and its "..". */
static void build_subvol_tree(struct mk_ctx *c, struct mk_tree *t)
{
	fill_dir_inode(c, add_item(c, t, BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_ITEM_KEY, 0,
				   sizeof(struct btrfs_inode_item)));
	add_inode_ref(c, t, BTRFS_FIRST_FREE_OBJECTID, BTRFS_FIRST_FREE_OBJECTID, 0, "..");
}

static void build_uuid_tree(struct mk_ctx *c)
{
	u64 lo, hi;
	__le64 *id;

	memcpy(&lo, c->fs_uuid, 8);
	memcpy(&hi, c->fs_uuid + 8, 8);
	id = add_item(c, &c->trees[T_UUID], le64toh(lo), BTRFS_UUID_KEY_SUBVOL, le64toh(hi),
		      sizeof(*id));
	*id = htole64(BTRFS_FS_TREE_OBJECTID);
}

/* The block groups: in tree 11 with block-group-tree, else in the extent tree. */
static void add_block_group_items(struct mk_ctx *c, struct mk_tree *t)
{
	for (int i = 0; i < 3; i++) {
		const struct mk_chunk *ch = &c->chunks[i];
		struct btrfs_block_group_item *bg;

		bg = add_item(c, t, ch->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, ch->length, sizeof(*bg));
		btrfs_set_block_group_item_used(bg, ch->used);
		btrfs_set_block_group_item_chunk_objectid(bg, BTRFS_FIRST_CHUNK_TREE_OBJECTID);
		btrfs_set_block_group_item_flags(bg, ch->type);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Free space of one block group in extent form: everything but the tree
 * blocks in it.  Superblock stripes stay listed as free, as the kernel
 * and mkfs list them (it excludes them itself when it loads the group).
 */
static void add_free_space(struct mk_ctx *c, const struct mk_chunk *ch, u64 *addrs, u32 nr)
{
	struct mk_tree *t = &c->trees[T_FST];
	struct btrfs_free_space_info *info;
	u64 cur = ch->logical, end = ch->logical + ch->length;
	u32 runs = 0, info_idx = t->nr_items;

	add_item(c, t, ch->logical, BTRFS_FREE_SPACE_INFO_KEY, ch->length, sizeof(*info));
	if (nr)
		qsort(addrs, nr, sizeof(*addrs), cmp_u64);
	for (u32 i = 0; i <= nr; i++) {
		u64 next = i < nr ? addrs[i] : end;

		if (next > cur) {
			add_item(c, t, cur, BTRFS_FREE_SPACE_EXTENT_KEY, next - cur, 0);
			runs++;
		}
		if (i < nr)
			cur = addrs[i] + c->nodesize;
	}
	/* the count is known only now; the arena may have moved meanwhile */
	if (c->err)
		return;
	info = (struct btrfs_free_space_info *)(t->arena + t->items[info_idx].off);
	btrfs_set_free_space_info_extent_count(info, runs);
	btrfs_set_free_space_info_flags(info, 0);
}

static int build_free_space_tree(struct mk_ctx *c)
{
	for (int i = 0; i < 3; i++) {
		const struct mk_chunk *ch = &c->chunks[i];
		u64 *addrs = NULL;
		size_t alloc = 0;
		u32 nr = 0;

		for (int ti = 0; ti < T_MAX; ti++) {
			const struct mk_tree *t = &c->trees[ti];

			if (!t->present)
				continue;
			for (u32 b = 0; b < t->plan_blocks; b++) {
				if (t->addr[b] < ch->logical || t->addr[b] >= ch->logical + ch->length)
					continue;
				if (array_reserve(addrs, alloc, nr + 1)) {
					free(addrs);
					return -ENOMEM;
				}
				addrs[nr++] = t->addr[b];
			}
		}
		add_free_space(c, ch, addrs, nr);
		free(addrs);
	}
	return 0;
}

static void fill_root_item(const struct mk_ctx *c, const struct mk_tree *t,
			   struct btrfs_root_item *ri)
{
	bool subvol = t->id == BTRFS_FS_TREE_OBJECTID || t->id == BTRFS_DATA_RELOC_TREE_OBJECTID;

	/* the legacy embedded inode, as the kernel and mkfs fill it */
	btrfs_set_inode_item_generation(&ri->inode, MKFS_GENERATION);
	btrfs_set_inode_item_size(&ri->inode, 3);
	btrfs_set_inode_item_nbytes(&ri->inode, c->nodesize);
	btrfs_set_inode_item_nlink(&ri->inode, 1);
	btrfs_set_inode_item_mode(&ri->inode, 040755);
	btrfs_set_root_item_generation(ri, MKFS_GENERATION);
	btrfs_set_root_item_root_dirid(ri, subvol ? BTRFS_FIRST_FREE_OBJECTID : 0);
	btrfs_set_root_item_bytenr(ri, tree_root_bytenr(t));
	btrfs_set_root_item_bytes_used(ri, (u64)t->plan_blocks * c->nodesize);
	btrfs_set_root_item_refs(ri, 1);
	btrfs_set_root_item_level(ri, t->plan_level);
	/* equal to generation, or the kernel resets the fields after it */
	btrfs_set_root_item_generation_v2(ri, MKFS_GENERATION);
	if (t->id == BTRFS_FS_TREE_OBJECTID) {
		memcpy(ri->uuid, c->fs_uuid, BTRFS_UUID_SIZE);
		btrfs_set_root_item_ctransid(ri, MKFS_GENERATION);
		btrfs_set_root_item_otransid(ri, MKFS_GENERATION);
		ri->ctime = c->now;
		ri->otime = c->now;
	}
}

/*
 * The root tree: a ROOT_ITEM for every tree but itself and the chunk tree
 * (both reached through the superblock), and the root tree directory 6
 * whose "default" entry names the default subvolume.
 */
static void build_root_tree(struct mk_ctx *c)
{
	static const char def[] = "default";
	struct mk_tree *t = &c->trees[T_ROOT];
	struct btrfs_dir_item *di;
	struct btrfs_key loc = {
		BTRFS_FS_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, (u64)-1
	};

	for (int i = 0; i < T_MAX; i++) {
		const struct mk_tree *sub = &c->trees[i];

		if (!sub->present || i == T_ROOT || i == T_CHUNK)
			continue;
		fill_root_item(c, sub, add_item(c, t, sub->id, BTRFS_ROOT_ITEM_KEY, 0,
						sizeof(struct btrfs_root_item)));
	}
	add_inode_ref(c, t, BTRFS_FS_TREE_OBJECTID, BTRFS_ROOT_TREE_DIR_OBJECTID, 0, def);
	fill_dir_inode(c, add_item(c, t, BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_INODE_ITEM_KEY, 0,
				   sizeof(struct btrfs_inode_item)));
	add_inode_ref(c, t, BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_ROOT_TREE_DIR_OBJECTID, 0, "..");
	di = add_item(c, t, BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_DIR_ITEM_KEY,
		      btrfs_name_hash(def, strlen(def)), sizeof(*di) + strlen(def));
	btrfs_cpu_key_to_disk(&di->location, &loc);
	btrfs_set_dir_item_transid(di, MKFS_GENERATION);
	btrfs_set_dir_item_name_len(di, strlen(def));
	btrfs_set_dir_item_type(di, BTRFS_FT_DIR);
	memcpy(di + 1, def, strlen(def));
}

/*
 * One extent item per tree block with a TREE_BLOCK_REF to its owner.
 * Non-skinny items also carry the block's first key, which only packing
 * knows: fix_extent_first_keys() fills it in afterwards.
 */
static void add_tree_block_extent(struct mk_ctx *c, const struct mk_tree *owner, u64 bytenr,
				  u8 level)
{
	struct mk_tree *t = &c->trees[T_EXTENT];
	u32 size = sizeof(struct btrfs_extent_item) + sizeof(struct btrfs_extent_inline_ref);
	struct btrfs_extent_inline_ref *ref;
	struct btrfs_extent_item *ei;
	u8 *p;

	if (c->skinny) {
		p = add_item(c, t, bytenr, BTRFS_METADATA_ITEM_KEY, level, size);
	} else {
		size += sizeof(struct btrfs_tree_block_info);
		p = add_item(c, t, bytenr, BTRFS_EXTENT_ITEM_KEY, c->nodesize, size);
	}
	ei = (struct btrfs_extent_item *)p;
	btrfs_set_extent_item_refs(ei, 1);
	btrfs_set_extent_item_generation(ei, MKFS_GENERATION);
	btrfs_set_extent_item_flags(ei, BTRFS_EXTENT_FLAG_TREE_BLOCK);
	p += sizeof(*ei);
	if (!c->skinny) {
		btrfs_set_tree_block_info_level((struct btrfs_tree_block_info *)p, level);
		p += sizeof(struct btrfs_tree_block_info);
	}
	ref = (struct btrfs_extent_inline_ref *)p;
	btrfs_set_extent_inline_ref_type(ref, BTRFS_TREE_BLOCK_REF_KEY);
	btrfs_set_extent_inline_ref_offset(ref, owner->id);
}

/*
 * Level of block @b of @t in the plan.  The plan was taken from the last
 * packing, whose blocks are still there while the next round is built;
 * in the first round every tree is planned as one leaf.
 */
static u8 planned_level(const struct mk_tree *t, u32 b)
{
	if (t->blocks && t->nr_blocks == t->plan_blocks)
		return t->blocks[b].level;
	return 0;
}

static void build_extent_tree(struct mk_ctx *c)
{
	for (int i = 0; i < T_MAX; i++) {
		const struct mk_tree *t = &c->trees[i];

		if (!t->present)
			continue;
		for (u32 b = 0; b < t->plan_blocks; b++)
			add_tree_block_extent(c, t, t->addr[b], planned_level(t, b));
	}
	if (!c->bgt)
		add_block_group_items(c, &c->trees[T_EXTENT]);
}

/* ---- packing ---- */

static int cmp_items(const void *a, const void *b)
{
	return btrfs_comp_cpu_keys(&((const struct mk_item *)a)->key,
				   &((const struct mk_item *)b)->key);
}

static int push_block(struct mk_tree *t, u32 *alloc, u8 level, u32 first, u32 nr,
		      const struct btrfs_key *first_key)
{
	size_t a = *alloc;

	if (array_reserve(t->blocks, a, t->nr_blocks + 1))
		return -ENOMEM;
	*alloc = a;
	t->blocks[t->nr_blocks++] = (struct mk_block){
		.level = level, .first = first, .nr = nr, .first_key = *first_key,
	};
	return 0;
}

/*
 * Sort the items and cut them into leaves, filled in order, then stack
 * node levels on top until one block is left.  Only sizes matter, so the
 * shape does not change when item contents do.
 */
static int pack_tree(struct mk_ctx *c, struct mk_tree *t)
{
	u32 cap = btrfs_leaf_data_size(c->nodesize), ptrs = btrfs_nodeptrs_per_block(c->nodesize);
	u32 alloc = 0, used = 0, first = 0, level_start, level_end;
	struct btrfs_key zero = { 0 };
	u8 level = 0;
	int ret;

	free(t->blocks);
	t->blocks = NULL;
	t->nr_blocks = 0;
	if (t->nr_items)
		qsort(t->items, t->nr_items, sizeof(*t->items), cmp_items);
	for (u32 i = 0; i < t->nr_items; i++) {
		u32 cost = tlog_leaf_item_cost(t->items[i].size);

		if (i && !btrfs_comp_cpu_keys(&t->items[i - 1].key, &t->items[i].key))
			return tlog_error(-EUCLEAN, "duplicate key in new tree %lld",
					  (long long)t->id);
		if (used + cost > cap) {
			ret = push_block(t, &alloc, 0, first, i - first, &t->items[first].key);
			if (ret)
				return ret;
			first = i;
			used = 0;
		}
		used += cost;
	}
	ret = push_block(t, &alloc, 0, first, t->nr_items - first,
			 t->nr_items ? &t->items[first].key : &zero);
	if (ret)
		return ret;
	level_start = 0;
	level_end = t->nr_blocks;
	while (level_end - level_start > 1) {
		level++;
		for (u32 b = level_start; b < level_end; b += ptrs) {
			u32 nr = level_end - b < ptrs ? level_end - b : ptrs;

			ret = push_block(t, &alloc, level, b, nr, &t->blocks[b].first_key);
			if (ret)
				return ret;
		}
		level_start = level_end;
		level_end = t->nr_blocks;
	}
	return 0;
}

/* ---- planning ---- */

static int assign_addresses(struct mk_ctx *c)
{
	for (int i = 0; i < 3; i++) {
		c->chunks[i].cursor = c->chunks[i].logical;
		c->chunks[i].used = 0;
	}
	for (int i = 0; i < T_MAX; i++) {
		struct mk_tree *t = &c->trees[i];
		struct mk_chunk *ch = &c->chunks[i == T_CHUNK ? CH_SYS : CH_META];
		u64 *addr;

		if (!t->present)
			continue;
		addr = realloc(t->addr, t->plan_blocks * sizeof(*addr));
		if (!addr)
			return -ENOMEM;
		t->addr = addr;
		for (u32 b = 0; b < t->plan_blocks; b++) {
			int ret = alloc_tree_block(ch, c->nodesize, &t->addr[b]);

			if (ret)
				return ret;
			ch->used += c->nodesize;
		}
	}
	c->bytes_used = 0;
	for (int i = 0; i < 3; i++)
		c->bytes_used += c->chunks[i].used;
	return 0;
}

static int build_all_trees(struct mk_ctx *c)
{
	int ret;

	for (int i = 0; i < T_MAX; i++)
		tree_reset(&c->trees[i]);
	build_chunk_tree(c);
	build_dev_tree(c);
	build_subvol_tree(c, &c->trees[T_FS]);
	build_subvol_tree(c, &c->trees[T_RELOC]);
	build_uuid_tree(c);
	if (c->fst) {
		ret = build_free_space_tree(c);
		if (ret)
			return ret;
	}
	if (c->bgt)
		add_block_group_items(c, &c->trees[T_BGT]);
	build_root_tree(c);
	build_extent_tree(c);
	return c->err;
}

/*
 * Plan, build and pack until every tree packs into the number of blocks
 * and the height its contents were computed for.
 */
static int plan_trees(struct mk_ctx *c)
{
	for (int round = 0; round < MAX_PLAN_ROUNDS; round++) {
		bool stable = true;
		int ret;

		ret = assign_addresses(c);
		if (!ret)
			ret = build_all_trees(c);
		if (ret)
			return ret;
		for (int i = 0; i < T_MAX; i++) {
			struct mk_tree *t = &c->trees[i];

			if (!t->present)
				continue;
			ret = pack_tree(c, t);
			if (ret)
				return ret;
			if (t->nr_blocks != t->plan_blocks ||
			    t->blocks[t->nr_blocks - 1].level != t->plan_level) {
				t->plan_blocks = t->nr_blocks;
				t->plan_level = t->blocks[t->nr_blocks - 1].level;
				stable = false;
			}
		}
		if (stable)
			return 0;
	}
	return tlog_error(-EDEADLK, "the tree layout did not settle");
}

/* Non-skinny extent items hold the first key of their block. */
static void fix_extent_first_keys(struct mk_ctx *c)
{
	struct mk_tree *et = &c->trees[T_EXTENT];

	if (c->skinny)
		return;
	for (int i = 0; i < T_MAX; i++) {
		struct mk_tree *t = &c->trees[i];

		if (!t->present)
			continue;
		for (u32 b = 0; b < t->nr_blocks; b++) {
			struct btrfs_key key = { t->addr[b], BTRFS_EXTENT_ITEM_KEY, c->nodesize };
			struct mk_item *it = bsearch(&key, et->items, et->nr_items,
						     sizeof(*et->items), cmp_items);
			struct btrfs_tree_block_info *info;

			if (!it)
				continue;
			info = (struct btrfs_tree_block_info *)(et->arena + it->off +
								sizeof(struct btrfs_extent_item));
			btrfs_cpu_key_to_disk(&info->key, &t->blocks[b].first_key);
		}
	}
}

/* ---- writing ---- */

struct mk_image {
	u8 *buf[3];		/* per chunk, from its logical start to its cursor */
	u64 len[3];
};

static int chunk_of(const struct mk_ctx *c, u64 logical)
{
	for (int i = 0; i < 3; i++)
		if (logical >= c->chunks[i].logical &&
		    logical < c->chunks[i].logical + c->chunks[i].length)
			return i;
	return -1;
}

static int render_block(struct mk_ctx *c, struct mk_tree *t, u32 b, u8 *dst)
{
	const struct mk_block *blk = &t->blocks[b];
	struct tlog_leaf_builder lb;
	struct tlog_block_info info = {
		.bytenr = t->addr[b],
		.generation = MKFS_GENERATION,
		.owner = t->id,
		.fsid = c->fsid,
		.chunk_tree_uuid = c->chunk_uuid,
		.csum_type = c->cfg->csum_type,
	};

	tlog_leaf_init(&lb, dst, c->nodesize, blk->level);
	for (u32 i = 0; i < blk->nr; i++) {
		if (blk->level) {
			u32 child = blk->first + i;
			int ret = tlog_node_append(&lb, &t->blocks[child].first_key,
						   t->addr[child], MKFS_GENERATION);

			if (ret)
				return ret;
		} else {
			const struct mk_item *it = &t->items[blk->first + i];

			if (!tlog_leaf_append(&lb, &it->key, t->arena + it->off, it->size))
				return -EUCLEAN;
		}
	}
	return tlog_block_finalize(&lb, &info);
}

static int render_image(struct mk_ctx *c, struct mk_image *img)
{
	for (int i = 0; i < 3; i++) {
		img->len[i] = c->chunks[i].cursor - c->chunks[i].logical;
		if (!img->len[i])
			continue;
		img->buf[i] = calloc(1, img->len[i]);
		if (!img->buf[i])
			return -ENOMEM;
	}
	for (int i = 0; i < T_MAX; i++) {
		struct mk_tree *t = &c->trees[i];

		if (!t->present)
			continue;
		for (u32 b = 0; b < t->nr_blocks; b++) {
			int ci = chunk_of(c, t->addr[b]);
			int ret;

			if (ci < 0)
				return tlog_error(-EUCLEAN, "new block %llu outside the chunks",
						  (unsigned long long)t->addr[b]);
			ret = render_block(c, t, b, img->buf[ci] + (t->addr[b] - c->chunks[ci].logical));
			if (ret)
				return ret;
		}
	}
	return 0;
}

static bool block_is_used(const struct mk_ctx *c, u64 bytenr)
{
	for (int i = 0; i < T_MAX; i++) {
		const struct mk_tree *t = &c->trees[i];

		if (!t->present)
			continue;
		for (u32 b = 0; b < t->nr_blocks; b++)
			if (t->addr[b] == bytenr)
				return true;
	}
	return false;
}

/*
 * Write each run of consecutive tree blocks of a chunk with one pwrite per
 * copy.  Skipped superblock stripes split runs, so that nothing is written
 * over a superblock location.
 */
static int write_chunk_blocks(struct tlog_bdev *bdev, struct mk_ctx *c, const struct mk_image *img,
			      int ci)
{
	const struct mk_chunk *ch = &c->chunks[ci];
	u64 run = 0;

	for (u64 off = 0; off <= img->len[ci]; off += c->nodesize) {
		bool used = off < img->len[ci] && block_is_used(c, ch->logical + off);

		if (used)
			continue;
		if (off > run) {
			for (int s = 0; s < ch->num_stripes; s++) {
				int ret = tlog_bdev_write(bdev, img->buf[ci] + run, off - run,
							  ch->physical[s] + run);

				if (ret)
					return ret;
			}
		}
		run = off + c->nodesize;
	}
	return 0;
}

/* Backup slot 0 records the new trees; the kernel fills the others as it commits. */
static void fill_backup_root(const struct mk_ctx *c, struct btrfs_super_block *sb)
{
	static const int tree_of[TLOG_BACKUP_NR] = {
		[TLOG_BACKUP_TREE_ROOT] = T_ROOT,
		[TLOG_BACKUP_CHUNK_ROOT] = T_CHUNK,
		[TLOG_BACKUP_EXTENT_ROOT] = T_EXTENT,
		[TLOG_BACKUP_FS_ROOT] = T_FS,
		[TLOG_BACKUP_DEV_ROOT] = T_DEV,
		[TLOG_BACKUP_CSUM_ROOT] = T_CSUM,
	};
	struct tlog_backup_tree trees[TLOG_BACKUP_NR];

	for (int i = 0; i < TLOG_BACKUP_NR; i++) {
		const struct mk_tree *t = &c->trees[tree_of[i]];

		trees[i] = (struct tlog_backup_tree){
			tree_root_bytenr(t), MKFS_GENERATION, t->plan_level,
		};
	}
	btrfs_set_backup_root(&sb->super_roots[0], sb, trees);
}

static void fill_super(const struct mk_ctx *c, struct btrfs_super_block *sb)
{
	const struct tlog_mkfs_cfg *cfg = c->cfg;
	const struct mk_chunk *sys = &c->chunks[CH_SYS];
	struct btrfs_disk_key *key = (struct btrfs_disk_key *)sb->sys_chunk_array;
	struct btrfs_key k = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, sys->logical };
	u32 chunk_size = btrfs_chunk_item_size(sys->num_stripes);

	memset(sb, 0, sizeof(*sb));
	memcpy(sb->fsid, c->fsid, BTRFS_FSID_SIZE);
	btrfs_set_super_block_flags(sb, BTRFS_SUPER_FLAG_WRITTEN);
	btrfs_set_super_block_magic(sb, BTRFS_MAGIC);
	btrfs_set_super_block_generation(sb, MKFS_GENERATION);
	btrfs_set_super_block_root(sb, tree_root_bytenr(&c->trees[T_ROOT]));
	btrfs_set_super_block_chunk_root(sb, tree_root_bytenr(&c->trees[T_CHUNK]));
	btrfs_set_super_block_total_bytes(sb, c->total_bytes);
	btrfs_set_super_block_bytes_used(sb, c->bytes_used);
	btrfs_set_super_block_root_dir_objectid(sb, BTRFS_ROOT_TREE_DIR_OBJECTID);
	btrfs_set_super_block_num_devices(sb, 1);
	btrfs_set_super_block_sectorsize(sb, cfg->sectorsize);
	btrfs_set_super_block_nodesize(sb, cfg->nodesize);
	btrfs_set_super_block_leafsize(sb, cfg->nodesize);
	btrfs_set_super_block_stripesize(sb, cfg->sectorsize);
	btrfs_set_super_block_sys_chunk_array_size(sb, sizeof(*key) + chunk_size);
	btrfs_set_super_block_chunk_root_generation(sb, MKFS_GENERATION);
	btrfs_set_super_block_compat_ro_flags(sb, cfg->compat_ro_flags);
	btrfs_set_super_block_incompat_flags(sb, cfg->incompat_flags);
	btrfs_set_super_block_csum_type(sb, cfg->csum_type);
	btrfs_set_super_block_root_level(sb, c->trees[T_ROOT].plan_level);
	btrfs_set_super_block_chunk_root_level(sb, c->trees[T_CHUNK].plan_level);
	fill_dev_item(c, &sb->dev_item);
	memcpy(sb->label, cfg->label, strnlen(cfg->label, BTRFS_LABEL_SIZE - 1));
	/* 0 means "free space tree"; -1 tells the kernel there is no v1 cache yet */
	btrfs_set_super_block_cache_generation(sb, c->fst ? 0 : (u64)-1);
	/* the UUID tree is exact, so the kernel need not rescan it */
	btrfs_set_super_block_uuid_tree_generation(sb, MKFS_GENERATION);
	btrfs_cpu_key_to_disk(key, &k);
	fill_chunk_item(c, sys, (struct btrfs_chunk *)(key + 1));
	fill_backup_root(c, sb);
}

/* Every copy that fits, as a commit writes them (btrfs_write_supers). */
static int write_supers(struct tlog_bdev *bdev, const struct mk_ctx *c)
{
	struct btrfs_super_block *sb = malloc(sizeof(*sb));
	int ret;

	if (!sb)
		return -ENOMEM;
	fill_super(c, sb);
	ret = btrfs_write_supers(bdev, sb);
	free(sb);
	return ret;
}

/*
 * Before anything else: zero the first MiB (the primary superblock and
 * the signatures of other filesystems and partition tables live there),
 * every superblock copy, and the last MiB of the device (backup GPT, md
 * and other end-of-device signatures).  After this no superblock points
 * at trees that the following writes overwrite, so an interrupted mkfs
 * leaves no filesystem rather than a corrupt one.
 */
static int wipe_old_signatures(struct tlog_bdev *bdev, u64 layout_end_bytes)
{
	u8 *zero = calloc(1, SZ_1M);
	u64 tail;
	int ret;

	if (!zero)
		return -ENOMEM;
	ret = tlog_bdev_write(bdev, zero, SZ_1M, 0);
	for (int i = 1; i < BTRFS_SUPER_MIRROR_MAX && !ret; i++)
		if (btrfs_sb_offset(i) + BTRFS_SUPER_INFO_SIZE <= bdev->size)
			ret = tlog_bdev_write(bdev, zero, BTRFS_SUPER_INFO_SIZE, btrfs_sb_offset(i));
	tail = bdev->size > SZ_1M ? bdev->size - SZ_1M : 0;
	if (tail < layout_end_bytes)
		tail = layout_end_bytes;
	if (!ret && tail < bdev->size)
		ret = tlog_bdev_write(bdev, zero, bdev->size - tail, tail);
	if (!ret)
		ret = tlog_bdev_flush(bdev);
	free(zero);
	return ret;
}

static int write_filesystem(struct tlog_bdev *bdev, struct mk_ctx *c)
{
	struct mk_image img;
	int ret;

	memset(&img, 0, sizeof(img));
	ret = render_image(c, &img);
	if (!ret)
		ret = wipe_old_signatures(bdev, c->chunks[CH_DATA].logical + c->chunks[CH_DATA].length);
	for (int i = 0; i < 3 && !ret; i++)
		if (img.len[i])
			ret = write_chunk_blocks(bdev, c, &img, i);
	if (!ret)
		ret = tlog_bdev_flush(bdev);
	if (!ret)
		ret = write_supers(bdev, c);
	if (!ret)
		ret = tlog_bdev_flush(bdev);
	for (int i = 0; i < 3; i++)
		free(img.buf[i]);
	return ret;
}

/* ---- entry point ---- */

/*
 * A name-based (version 5) UUID: SHA-1 of the seed as namespace and a
 * name that says what the UUID is for, so that one seed (the fsid of a
 * reproducible build) gives every UUID of the image, each its own.
 */
void tlog_derive_uuid(const u8 *seed, const char *what, u64 id, u8 *out)
{
	char name[128];
	int len = snprintf(name, sizeof(name), "%s:%llu", what, (unsigned long long)id);

	if (len < 0)
		len = 0;
	if ((size_t)len >= sizeof(name))
		len = sizeof(name) - 1;
	uuid_generate_sha1(out, seed, name, (size_t)len);
}

/* The device, chunk tree and fs tree UUIDs: random, or derived from the fsid. */
static void make_uuids(struct mk_ctx *c, const struct tlog_mkfs_cfg *cfg)
{
	if (!cfg->derive_uuids) {
		uuid_generate(c->dev_uuid);
		uuid_generate(c->chunk_uuid);
		uuid_generate(c->fs_uuid);
		return;
	}
	tlog_derive_uuid(c->fsid, "device", 1, c->dev_uuid);
	tlog_derive_uuid(c->fsid, "chunk-tree", BTRFS_CHUNK_TREE_OBJECTID, c->chunk_uuid);
	tlog_derive_uuid(c->fsid, "subvol", BTRFS_FS_TREE_OBJECTID, c->fs_uuid);
}

static void init_ctx(struct mk_ctx *c, const struct tlog_mkfs_cfg *cfg, u64 total)
{
	struct timespec ts;

	c->cfg = cfg;
	c->nodesize = cfg->nodesize;
	c->total_bytes = total;
	c->skinny = cfg->incompat_flags & BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA;
	c->fst = cfg->compat_ro_flags & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE;
	c->bgt = cfg->compat_ro_flags & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE;
	if (cfg->fsid_set)
		memcpy(c->fsid, cfg->fsid, BTRFS_FSID_SIZE);
	else
		uuid_generate(c->fsid);
	make_uuids(c, cfg);
	if (cfg->time_set) {
		ts.tv_sec = (time_t)cfg->time_sec;
		ts.tv_nsec = 0;
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
	}
	btrfs_set_timespec_sec(&c->now, (u64)ts.tv_sec);
	btrfs_set_timespec_nsec(&c->now, (u32)ts.tv_nsec);
	plan_layout(cfg, total, c->chunks);
	for (int i = 0; i < 3; i++)
		c->dev_bytes_used += c->chunks[i].length * c->chunks[i].num_stripes;
	for (int i = 0; i < T_MAX; i++) {
		c->trees[i].id = tree_ids[i];
		c->trees[i].present = (i != T_FST || c->fst) && (i != T_BGT || c->bgt);
		c->trees[i].plan_blocks = 1;
	}
}

static void fill_result(const struct mk_ctx *c, struct tlog_mkfs_result *res)
{
	memcpy(res->fsid, c->fsid, BTRFS_FSID_SIZE);
	memcpy(res->dev_uuid, c->dev_uuid, BTRFS_UUID_SIZE);
	memcpy(res->chunk_tree_uuid, c->chunk_uuid, BTRFS_UUID_SIZE);
	memcpy(res->fs_tree_uuid, c->fs_uuid, BTRFS_UUID_SIZE);
	res->total_bytes = c->total_bytes;
	res->bytes_used = c->bytes_used;
	res->generation = MKFS_GENERATION;
	res->nr_tree_blocks = 0;
	for (int i = 0; i < T_MAX; i++)
		if (c->trees[i].present)
			res->nr_tree_blocks += c->trees[i].nr_blocks;
	for (int i = 0; i < 3; i++) {
		const struct mk_chunk *ch = &c->chunks[i];

		res->chunks[i] = (struct tlog_mkfs_chunk){
			.logical = ch->logical, .length = ch->length, .type = ch->type,
			.num_stripes = ch->num_stripes,
			.physical = { ch->physical[0], ch->physical[1] },
		};
	}
}

int tlog_mkfs(struct tlog_bdev *bdev, const struct tlog_mkfs_cfg *cfg,
	      struct tlog_mkfs_result *res)
{
	u64 total = cfg->total_bytes ? cfg->total_bytes : bdev->size;
	u64 writes_before = bdev->nr_writes;
	struct mk_ctx *c;
	int ret;

	tlog_error_clear();
	memset(res, 0, sizeof(*res));
	ret = tlog_mkfs_check_cfg(cfg);
	if (ret)
		return ret;
	if (total > bdev->size)
		return tlog_error(-EINVAL, "size %llu is larger than the device (%llu bytes)",
				  (unsigned long long)total, (unsigned long long)bdev->size);
	total = round_down(total, cfg->sectorsize);
	if (total < tlog_mkfs_min_size(cfg))
		return tlog_error(-ENOSPC, "%llu bytes is too small, the minimum is %llu bytes",
				  (unsigned long long)total,
				  (unsigned long long)tlog_mkfs_min_size(cfg));
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	init_ctx(c, cfg, total);
	ret = plan_trees(c);
	if (!ret) {
		fix_extent_first_keys(c);
		fill_result(c, res);
		ret = write_filesystem(bdev, c);
	}
	res->nr_writes = bdev->nr_writes - writes_before;
	for (int i = 0; i < T_MAX; i++)
		tree_release(&c->trees[i]);
	free(c);
	return ret;
}
