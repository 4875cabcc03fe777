// SPDX-License-Identifier: GPL-2.0-only
/*
 * In-memory block groups and free space (see block-group.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "block-group.h"
#include "errctx.h"
#include "misc.h"
#include "root-tree.h"
#include "tree-checker.h"
#include "volumes.h"

static int cmp_bg(const void *a, const void *b)
{
	const struct tlog_block_group *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct tlog_block_group *btrfs_lookup_block_group(struct tlog_block_groups *bgs, u64 bytenr)
{
	size_t lo = 0, hi = bgs->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct tlog_block_group *bg = &bgs->v[mid];

		if (bytenr < bg->start)
			hi = mid;
		else if (bytenr - bg->start >= bg->length)
			lo = mid + 1;
		else
			return bg;
	}
	return NULL;
}

static int add_free(struct tlog_block_group *bg, u64 start, u64 len)
{
	size_t i = 0;

	while (i < bg->nr_free && bg->free[i].start < start)
		i++;
	/* merge with the neighbours when they touch */
	if (i > 0 && bg->free[i - 1].start + bg->free[i - 1].len == start) {
		bg->free[i - 1].len += len;
		if (i < bg->nr_free && start + len == bg->free[i].start) {
			bg->free[i - 1].len += bg->free[i].len;
			memmove(bg->free + i, bg->free + i + 1,
				(bg->nr_free - i - 1) * sizeof(*bg->free));
			bg->nr_free--;
		}
		return 0;
	}
	if (i < bg->nr_free && start + len == bg->free[i].start) {
		bg->free[i].start = start;
		bg->free[i].len += len;
		return 0;
	}
	if (array_reserve(bg->free, bg->cap_free, bg->nr_free + 1))
		return -ENOMEM;
	memmove(bg->free + i + 1, bg->free + i, (bg->nr_free - i) * sizeof(*bg->free));
	bg->free[i] = (struct free_range){ start, len };
	bg->nr_free++;
	return 0;
}

/* Remove [start, start + len), which must lie inside one free range. */
static int take_free(struct tlog_block_group *bg, size_t i, u64 start, u64 len)
{
	struct free_range *r = &bg->free[i];
	u64 end = start + len, rend = r->start + r->len;

	if (start == r->start && end == rend) {
		memmove(bg->free + i, bg->free + i + 1, (bg->nr_free - i - 1) * sizeof(*r));
		bg->nr_free--;
	} else if (start == r->start) {
		r->start = end;
		r->len = rend - end;
	} else if (end == rend) {
		r->len = start - r->start;
	} else {
		r->len = start - r->start;
		return add_free(bg, end, rend - end);
	}
	return 0;
}

/* Remove [start, start + len) from whatever free ranges it overlaps. */
static int exclude_range(struct tlog_block_group *bg, u64 start, u64 len)
{
	u64 end = start + len;

	for (size_t i = 0; i < bg->nr_free;) {
		struct free_range r = bg->free[i];
		u64 s = r.start > start ? r.start : start;
		u64 e = r.start + r.len < end ? r.start + r.len : end;
		size_t before = bg->nr_free;
		int err;

		if (s >= e) {
			i++;
			continue;
		}
		err = take_free(bg, i, s, e - s);
		if (err)
			return err;
		if (bg->nr_free >= before)
			i++;
	}
	return 0;
}

/*
 * Ranges that map onto superblock copies are never allocated (the kernel's
 * exclude_super_stripes; Documentation/design/format.md, Allocation).
 */
static int exclude_super_stripes(struct tlog_fs *fs, struct tlog_block_group *bg)
{
	const struct map_lookup *m = chunk_map_find(&fs->chunks, bg->start);

	if (bg->start < BTRFS_SUPER_INFO_OFFSET)
		exclude_range(bg, bg->start, BTRFS_SUPER_INFO_OFFSET - bg->start);
	if (!m)
		return 0;
	for (int mirror = 0; mirror < BTRFS_SUPER_MIRROR_MAX; mirror++) {
		u64 sb = btrfs_sb_offset(mirror);

		for (int s = 0; s < m->num_stripes; s++) {
			u64 phys = m->stripes[s].physical;

			if (sb + BTRFS_STRIPE_LEN <= phys || sb >= phys + m->length)
				continue;
			/* the whole 64 KiB stripe around the copy, in logical terms */
			if (sb >= phys)
				exclude_range(bg, m->logical + (sb - phys), BTRFS_STRIPE_LEN);
			else
				exclude_range(bg, m->logical, sb + BTRFS_STRIPE_LEN - phys);
		}
	}
	return 0;
}

static int read_block_group_items(struct tlog_fs *fs, struct tlog_block_groups *bgs)
{
	struct btrfs_key min = { 0, BTRFS_BLOCK_GROUP_ITEM_KEY, 0 };
	struct btrfs_key max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_root *tree;
	struct btrfs_tree_iter iter;
	int err;

	err = btrfs_read_root(fs, btrfs_block_group_root_id(fs), &tree);
	if (err)
		return err;
	btrfs_for_each_item(tree, &iter, &min, &max) {
		const struct btrfs_block_group_item *bgi;
		struct tlog_block_group *bg;

		if (iter.key.type != BTRFS_BLOCK_GROUP_ITEM_KEY)
			continue;
		bgi = btrfs_fixed_item_at(iter.leaf, iter.slot, &iter.key, NULL, 0);
		if (!bgi) {
			err = -EUCLEAN;
			break;
		}
		if (array_reserve(bgs->v, bgs->alloc, bgs->nr + 1)) {
			err = -ENOMEM;
			break;
		}
		bg = &bgs->v[bgs->nr++];
		memset(bg, 0, sizeof(*bg));
		bg->start = iter.key.objectid;
		bg->length = iter.key.offset;
		bg->used = btrfs_block_group_item_used(bgi);
		bg->committed_used = bg->used;
		bg->flags = btrfs_block_group_item_flags(bgi);
	}
	if (!err && iter.ret < 0)
		err = iter.ret;
	btrfs_tree_iter_end(&iter);
	if (bgs->nr)
		qsort(bgs->v, bgs->nr, sizeof(*bgs->v), cmp_bg);
	return err;
}

/* ---- size classes ---- */

#define SIZE_CLASS_SAMPLES	5

enum btrfs_bg_size_class btrfs_calc_size_class(u64 len)
{
	if (len <= 128ULL << 10)
		return BTRFS_BG_SZ_SMALL;
	if (len <= 8ULL << 20)
		return BTRFS_BG_SZ_MEDIUM;
	return BTRFS_BG_SZ_LARGE;
}

/* Groups of data only have classes (not metadata, not mixed groups). */
static bool uses_size_class(const struct tlog_block_group *bg)
{
	return (bg->flags & BTRFS_BLOCK_GROUP_TYPE_MASK) == BTRFS_BLOCK_GROUP_DATA;
}

/*
 * load_block_group_size_class, fed by the walk over the extent tree: the
 * i-th sample of a group is the first extent item at or after
 * start + i * (length / 5); @key is the next extent item in key order.
 */
static void sample_extent(struct tlog_block_group *bg, const struct btrfs_key *key)
{
	u64 step = bg->length / SIZE_CLASS_SAMPLES;

	if (!uses_size_class(bg) || key->objectid + key->offset > bg->start + bg->length)
		return;
	while (bg->samples < SIZE_CLASS_SAMPLES &&
	       bg->start + bg->samples * step <= key->objectid) {
		if (!bg->sample_min || key->offset < bg->sample_min)
			bg->sample_min = key->offset;
		bg->sampled_class = btrfs_calc_size_class(bg->sample_min);
		bg->samples++;
	}
}

static struct tlog_bg_size_class *remembered_class(struct tlog_fs *fs, u64 start)
{
	for (size_t i = 0; i < fs->nr_bg_size_classes; i++)
		if (fs->bg_size_classes[i].start == start)
			return &fs->bg_size_classes[i];
	return NULL;
}

/* The mount keeps @bg's class (it outlives the transaction's groups). */
static int remember_class(struct tlog_fs *fs, const struct tlog_block_group *bg)
{
	struct tlog_bg_size_class *c = remembered_class(fs, bg->start);

	if (!c) {
		if (array_reserve(fs->bg_size_classes, fs->alloc_bg_size_classes,
				  fs->nr_bg_size_classes + 1))
			return -ENOMEM;
		c = &fs->bg_size_classes[fs->nr_bg_size_classes++];
		c->start = bg->start;
		c->used = bg->committed_used;
	}
	c->size_class = bg->size_class;
	return 0;
}

/*
 * The classes of the groups: the ones the mount knows, and at its first
 * data allocation (when the kernel caches the groups) what the extent
 * tree says of the others.
 */
static int load_size_classes(struct tlog_block_groups *bgs, bool first_data_alloc)
{
	struct tlog_fs *fs = bgs->fs;

	if (!fs)
		return 0;
	for (size_t i = 0; i < bgs->nr; i++) {
		struct tlog_block_group *bg = &bgs->v[i];
		struct tlog_bg_size_class *c = remembered_class(fs, bg->start);

		if (!uses_size_class(bg))
			continue;
		if (c && c->used && !bg->used) {
			/* the last commit freed its last extent: the class goes with it */
			bg->size_class = BTRFS_BG_SZ_NONE;
			if (remember_class(fs, bg))
				return -ENOMEM;
		} else if (c) {
			bg->size_class = c->size_class;
		} else if (first_data_alloc) {
			bg->size_class = bg->sampled_class;
			if (remember_class(fs, bg))
				return -ENOMEM;
		}
		c = remembered_class(fs, bg->start);
		if (c)
			c->used = bg->committed_used;
	}
	if (first_data_alloc)
		fs->bg_size_classes_loaded = true;
	return 0;
}

/* Free space of every group: its range minus every extent item. */
static int compute_free_space(struct tlog_fs *fs, struct tlog_block_groups *bgs)
{
	struct btrfs_key min = { 0, 0, 0 }, max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_root *extent_root;
	struct btrfs_tree_iter iter;
	int err;

	for (size_t i = 0; i < bgs->nr; i++) {
		err = add_free(&bgs->v[i], bgs->v[i].start, bgs->v[i].length);
		if (err)
			return err;
	}
	err = btrfs_read_root(fs, BTRFS_EXTENT_TREE_OBJECTID, &extent_root);
	if (err)
		return err;
	btrfs_for_each_item(extent_root, &iter, &min, &max) {
		u64 len;
		struct tlog_block_group *bg;

		if (iter.key.type == BTRFS_EXTENT_ITEM_KEY)
			len = iter.key.offset;
		else if (iter.key.type == BTRFS_METADATA_ITEM_KEY)
			len = fs->nodesize;
		else
			continue;
		bg = btrfs_lookup_block_group(bgs, iter.key.objectid);
		if (!bg || iter.key.objectid + len > bg->start + bg->length) {
			err = tlog_error(-EUCLEAN, "extent %llu+%llu lies outside every block group",
					 (unsigned long long)iter.key.objectid,
					 (unsigned long long)len);
			break;
		}
		err = exclude_range(bg, iter.key.objectid, len);
		if (err)
			break;
		if (iter.key.type == BTRFS_EXTENT_ITEM_KEY)
			sample_extent(bg, &iter.key);
	}
	if (!err && iter.ret < 0)
		err = iter.ret;
	btrfs_tree_iter_end(&iter);
	for (size_t i = 0; !err && i < bgs->nr; i++)
		err = exclude_super_stripes(fs, &bgs->v[i]);
	return err;
}

int btrfs_load_block_groups(struct tlog_fs *fs, struct tlog_block_groups *bgs)
{
	int err;

	memset(bgs, 0, sizeof(*bgs));
	bgs->fs = fs;
	err = read_block_group_items(fs, bgs);
	if (!err)
		err = compute_free_space(fs, bgs);
	if (!err)
		err = load_size_classes(bgs, false);
	if (err)
		btrfs_free_block_groups(bgs);
	return err;
}

void btrfs_free_block_groups(struct tlog_block_groups *bgs)
{
	for (size_t i = 0; i < bgs->nr; i++)
		free(bgs->v[i].free);
	free(bgs->v);
	memset(bgs, 0, sizeof(*bgs));
}

/* Which groups an allocation may use, in the order find_free_extent's loops widen it. */
enum class_pass {
	CLASS_MATCH,		/* its own class */
	CLASS_MATCH_OR_UNSET,	/* or a group without a class yet */
	CLASS_ANY,		/* no chunk could be made: any group */
};

static bool class_allows(const struct tlog_block_group *bg, u8 want, enum class_pass pass)
{
	if (!uses_size_class(bg) || pass == CLASS_ANY || bg->size_class == want)
		return true;
	return pass == CLASS_MATCH_OR_UNSET && bg->size_class == BTRFS_BG_SZ_NONE;
}

/* The first fit for @len at or after @from in the groups of @type_flags; 1 if none. */
static int find_fit(struct tlog_block_groups *bgs, u64 type_flags, u64 len, u64 align, u64 from,
		    u8 want, enum class_pass pass, u64 *ret)
{
	for (size_t g = 0; g < bgs->nr; g++) {
		struct tlog_block_group *bg = &bgs->v[g];

		if ((bg->flags & BTRFS_BLOCK_GROUP_TYPE_MASK) != type_flags ||
		    bg->start + bg->length <= from || !class_allows(bg, want, pass))
			continue;
		for (size_t i = 0; i < bg->nr_free; i++) {
			struct free_range *r = &bg->free[i];
			u64 start = round_up(r->start > from ? r->start : from, align);
			int err;

			if (start + len > r->start + r->len)
				continue;
			*ret = start;
			err = take_free(bg, i, start, len);
			/* the first allocation in a group without a class gives it one */
			if (!err && uses_size_class(bg) && bg->size_class == BTRFS_BG_SZ_NONE) {
				bg->size_class = want;
				if (bgs->fs)
					err = remember_class(bgs->fs, bg);
			}
			return err;
		}
	}
	return 1;
}

int btrfs_alloc_range(struct tlog_block_groups *bgs, u64 type_flags, u64 len, u64 align,
		      unsigned int flags, u64 *ret)
{
	/*
	 * Data goes forward from the last data allocation, wrapping round
	 * when the space after it is used up, as the kernel's allocation
	 * cluster does: a new extent follows the last one written, not the
	 * first gap an earlier free left.  Tree blocks take the first fit.
	 */
	bool data = type_flags & BTRFS_BLOCK_GROUP_DATA;
	u8 want = btrfs_calc_size_class(len);
	enum class_pass pass = CLASS_MATCH;
	int err = 1;

	if (data && bgs->fs && !bgs->fs->bg_size_classes_loaded) {
		err = load_size_classes(bgs, true);
		if (err)
			return err;
		err = 1;
	}
	for (; err > 0 && pass <= CLASS_ANY; pass++) {
		err = find_fit(bgs, type_flags, len, align, data ? bgs->data_cursor : 0, want, pass,
			       ret);
		if (err > 0 && data && bgs->data_cursor)
			err = find_fit(bgs, type_flags, len, align, 0, want, pass, ret);
		/* past the unset groups comes a new chunk, the caller's */
		if (pass == CLASS_MATCH_OR_UNSET && !(flags & BTRFS_ALLOC_ANY_SIZE_CLASS))
			break;
	}
	if (err <= 0) {
		if (!err && data)
			bgs->data_cursor = *ret + len;
		return err;
	}
	return tlog_error(-ENOSPC, "no free space left for %llu bytes of %s",
			  (unsigned long long)len,
			  type_flags == BTRFS_BLOCK_GROUP_SYSTEM ? "system chunks" :
			  type_flags == BTRFS_BLOCK_GROUP_DATA ? "data" : "metadata");
}

u64 btrfs_largest_free(const struct tlog_block_groups *bgs, u64 type_flags)
{
	u64 best = 0;

	for (size_t g = 0; g < bgs->nr; g++) {
		if ((bgs->v[g].flags & BTRFS_BLOCK_GROUP_TYPE_MASK) != type_flags)
			continue;
		for (size_t i = 0; i < bgs->v[g].nr_free; i++)
			if (bgs->v[g].free[i].len > best)
				best = bgs->v[g].free[i].len;
	}
	return best;
}

int btrfs_free_range(struct tlog_block_groups *bgs, u64 start, u64 len)
{
	struct tlog_block_group *bg = btrfs_lookup_block_group(bgs, start);

	if (!bg)
		return tlog_error(-EUCLEAN, "freed range %llu is in no block group",
				  (unsigned long long)start);
	return add_free(bg, start, len);
}

int btrfs_exclude_range(struct tlog_block_groups *bgs, u64 start, u64 len)
{
	while (len) {
		struct tlog_block_group *bg = btrfs_lookup_block_group(bgs, start);
		u64 piece;
		int err;

		if (!bg)
			return tlog_error(-EUCLEAN, "range %llu is in no block group",
					  (unsigned long long)start);
		piece = bg->start + bg->length - start;
		piece = piece < len ? piece : len;
		err = exclude_range(bg, start, piece);
		if (err)
			return err;
		start += piece;
		len -= piece;
	}
	return 0;
}

int btrfs_add_block_group(struct tlog_fs *fs, struct tlog_block_groups *bgs, u64 start,
			  u64 length, u64 flags)
{
	struct tlog_block_group *bg;
	int err;

	if (array_reserve(bgs->v, bgs->alloc, bgs->nr + 1))
		return -ENOMEM;
	bg = &bgs->v[bgs->nr++];
	memset(bg, 0, sizeof(*bg));
	bg->start = start;
	bg->length = length;
	bg->flags = flags;
	err = add_free(bg, start, length);
	if (!err)
		err = exclude_super_stripes(fs, bg);
	qsort(bgs->v, bgs->nr, sizeof(*bgs->v), cmp_bg);
	return err;
}

u64 btrfs_free_bytes(const struct tlog_block_groups *bgs, u64 type_flags)
{
	u64 total = 0;

	for (size_t g = 0; g < bgs->nr; g++) {
		if ((bgs->v[g].flags & BTRFS_BLOCK_GROUP_TYPE_MASK) != type_flags)
			continue;
		for (size_t i = 0; i < bgs->v[g].nr_free; i++)
			total += bgs->v[g].free[i].len;
	}
	return total;
}
