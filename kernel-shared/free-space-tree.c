// SPDX-License-Identifier: GPL-2.0-only
/*
 * Keeping the free space tree in step with allocations (as the kernel's
 * free-space-tree.c does; Documentation/design/format.md):
 * per block group either FREE_SPACE_EXTENT items for the maximal free runs
 * or FREE_SPACE_BITMAP items (one bit per sector), and a FREE_SPACE_INFO
 * counting the runs.  Groups keep the form they have; converting between
 * the two is a policy of the kernel, and either is valid at any count.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "errctx.h"
#include "tree-checker.h"
#include "free-space-tree.h"
#include "misc.h"
#include "root-tree.h"
#include "transaction.h"

static int fst_root(struct tlog_trans *trans, struct btrfs_root **ret)
{
	return btrfs_read_root(trans->fs, BTRFS_FREE_SPACE_TREE_OBJECTID, ret);
}

/* The FREE_SPACE_INFO at @path, or NULL (the finding recorded) when refused. */
static const struct btrfs_free_space_info *free_space_info_at(const struct btrfs_path *path)
{
	struct btrfs_key key;

	btrfs_item_key_to_cpu(path->nodes[0], &key, path->slots[0]);
	return btrfs_fixed_item_at(path->nodes[0], path->slots[0], &key, NULL, 0);
}

/* Add @delta to the group's FREE_SPACE_INFO extent count. */
static int update_info(struct tlog_trans *trans, struct btrfs_root *root,
		       const struct tlog_block_group *bg, int delta)
{
	struct btrfs_key key = { bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->length };
	struct btrfs_free_space_info *info;
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, root, &key, &path, 0);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "block group %llu has no free space info",
				 (unsigned long long)bg->start);
	if (ret == 0 && !free_space_info_at(&path))
		ret = -EUCLEAN;
	if (ret == 0) {
		info = btrfs_item_ptr(path.nodes[0], path.slots[0]);
		btrfs_set_free_space_info_extent_count(info,
			btrfs_free_space_info_extent_count(info) + delta);
	}
	btrfs_release_path(&path);
	return ret;
}

/* Whether the group keeps its free space as bitmaps. */
static int uses_bitmaps(struct btrfs_root *root, const struct tlog_block_group *bg, bool *ret)
{
	struct btrfs_key key = { bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->length };
	struct btrfs_path path;
	int err;

	btrfs_init_path(&path);
	err = btrfs_search_slot(root, &key, &path);
	if (err > 0)
		err = tlog_error(-EUCLEAN, "block group %llu has no free space info",
				 (unsigned long long)bg->start);
	if (err == 0) {
		const struct btrfs_free_space_info *info = free_space_info_at(&path);

		if (!info)
			err = -EUCLEAN;
		else
			*ret = btrfs_free_space_info_flags(info) & BTRFS_FREE_SPACE_USING_BITMAPS;
	}
	btrfs_release_path(&path);
	return err;
}

/* ---- bitmap form: bit i of an item is the sector at key.objectid + i * sectorsize ---- */

/* Bytes one bitmap item covers: one bit per sector, 256 bytes of bits. */
static u64 bitmap_range(const struct tlog_fs *fs)
{
	return (u64)fs->sectorsize * 2048;
}

/*
 * Position @path on the bitmap item covering @pos (for writing when @trans
 * is given).  1 when no bitmap covers it.
 */
static int find_bitmap(struct tlog_trans *trans, struct btrfs_root *root, u64 pos,
		       struct btrfs_path *path, struct btrfs_key *found)
{
	struct btrfs_key key = { pos, BTRFS_FREE_SPACE_BITMAP_KEY, (u64)-1 };
	int ret;

	ret = btrfs_search_slot(root, &key, path);
	if (ret > 0)
		ret = btrfs_prev_item(root, path);
	if (ret)
		return ret;
	btrfs_item_key_to_cpu(path->nodes[0], found, path->slots[0]);
	if (found->type != BTRFS_FREE_SPACE_BITMAP_KEY || found->objectid > pos ||
	    pos - found->objectid >= found->offset)
		return 1;
	if (!trans)
		return 0;
	btrfs_release_path(path);
	return btrfs_search_slot_for_write(trans, root, found, path, 0);
}

static int bitmap_bit(struct btrfs_root *root, const struct tlog_block_group *bg, u64 pos,
		      bool *free_bit)
{
	u32 ss = root->fs->sectorsize;
	struct btrfs_path path;
	struct btrfs_key key;
	int ret;

	*free_bit = false;
	if (pos < bg->start || pos >= bg->start + bg->length)
		return 0;
	btrfs_init_path(&path);
	ret = find_bitmap(NULL, root, pos, &path, &key);
	if (ret == 0) {
		u64 bit = (pos - key.objectid) / ss;
		const u8 *bits = btrfs_item_ptr(path.nodes[0], path.slots[0]);

		if (bit / 8 >= btrfs_item_size(path.nodes[0], path.slots[0]))
			ret = -EUCLEAN;
		else
			*free_bit = bits[bit / 8] & (1U << (bit % 8));
	}
	btrfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

/* Set (free) or clear (allocated) the bits of [start, start + len). */
static int bitmap_set_range(struct tlog_trans *trans, struct btrfs_root *root,
			    const struct tlog_block_group *bg, u64 start, u64 len, bool set)
{
	u32 ss = trans->fs->sectorsize;
	struct btrfs_path path;
	struct btrfs_key key;
	int ret;

	btrfs_init_path(&path);
	ret = find_bitmap(trans, root, start, &path, &key);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "no free space bitmap covers %llu in group %llu",
				 (unsigned long long)start, (unsigned long long)bg->start);
	if (ret == 0 && start + len > key.objectid + key.offset)
		ret = tlog_error(-EOPNOTSUPP, "range %llu+%llu crosses a free space bitmap",
				 (unsigned long long)start, (unsigned long long)len);
	if (ret == 0) {
		u8 *bits = btrfs_item_ptr(path.nodes[0], path.slots[0]);
		u32 size = btrfs_item_size(path.nodes[0], path.slots[0]);

		for (u64 pos = start; pos < start + len; pos += ss) {
			u64 bit = (pos - key.objectid) / ss;

			if (bit / 8 >= size) {
				ret = -EUCLEAN;
				break;
			}
			if (!!(bits[bit / 8] & (1U << (bit % 8))) == set) {
				ret = tlog_error(-EUCLEAN, "sector %llu is already %s in the free space tree",
						 (unsigned long long)pos, set ? "free" : "allocated");
				break;
			}
			bits[bit / 8] ^= 1U << (bit % 8);
		}
	}
	btrfs_release_path(&path);
	return ret;
}

/*
 * Change a range in bitmap form; the run count changes by whether its
 * neighbours are free: a freed range between two free ones joins them
 * (-1), between two used ones makes a run (+1); taking one does the reverse.
 */
static int bitmap_change(struct tlog_trans *trans, struct btrfs_root *root,
			 const struct tlog_block_group *bg, u64 start, u64 len, bool set)
{
	bool left, right;
	int ret, delta;

	ret = bitmap_bit(root, bg, start - trans->fs->sectorsize, &left);
	if (!ret)
		ret = bitmap_bit(root, bg, start + len, &right);
	if (!ret)
		ret = bitmap_set_range(trans, root, bg, start, len, set);
	if (ret)
		return ret;
	delta = (left && right) ? -1 : (!left && !right) ? 1 : 0;
	return update_info(trans, root, bg, set ? delta : -delta);
}

/* The free extent item with the highest start <= @pos in the group, if any. */
static int find_extent_before(struct tlog_trans *trans, struct btrfs_root *root,
			      const struct tlog_block_group *bg, u64 pos,
			      struct btrfs_key *found)
{
	struct btrfs_key key = { pos, BTRFS_FREE_SPACE_EXTENT_KEY, (u64)-1 };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, &key, &path);
	if (ret > 0)
		ret = btrfs_prev_item(root, &path);
	while (ret == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], found, path.slots[0]);
		if (found->objectid < bg->start) {
			ret = 1;
			break;
		}
		if (found->type == BTRFS_FREE_SPACE_EXTENT_KEY)
			break;
		if (found->type == BTRFS_FREE_SPACE_BITMAP_KEY) {
			ret = tlog_error(-EOPNOTSUPP, "free space bitmaps are not changed yet");
			break;
		}
		ret = btrfs_prev_item(root, &path);
	}
	btrfs_release_path(&path);
	return ret;
}

static int insert_extent(struct tlog_trans *trans, struct btrfs_root *root, u64 start, u64 len)
{
	struct btrfs_key key = { start, BTRFS_FREE_SPACE_EXTENT_KEY, len };

	return btrfs_insert_item(trans, root, &key, NULL, 0);
}

/* Extent form: the free run holding the range shrinks or splits. */
static int extent_remove(struct tlog_trans *trans, struct btrfs_root *root,
			 const struct tlog_block_group *bg, u64 start, u64 len)
{
	struct btrfs_key ext;
	u64 end = start + len, ext_end;
	int ret, delta = -1;

	ret = find_extent_before(trans, root, bg, start, &ext);
	if (ret == 0 && (ext_end = ext.objectid + ext.offset) >= end) {
		ret = btrfs_delete_item(trans, root, &ext);
		if (!ret && ext.objectid < start) {
			ret = insert_extent(trans, root, ext.objectid, start - ext.objectid);
			delta++;
		}
		if (!ret && ext_end > end) {
			ret = insert_extent(trans, root, end, ext_end - end);
			delta++;
		}
		return ret ? ret : update_info(trans, root, bg, delta);
	}
	if (ret < 0)
		return ret;
	return tlog_error(-EUCLEAN, "free space tree does not list %llu+%llu as free",
			  (unsigned long long)start, (unsigned long long)len);
}

/* Extent form: a new free run, merged with the runs it touches. */
static int extent_add(struct tlog_trans *trans, struct btrfs_root *root,
		      const struct tlog_block_group *bg, u64 start, u64 len)
{
	struct btrfs_key left, right;
	u64 new_start = start, new_end = start + len;
	int ret, delta = 1;

	/* a free run ending at @start merges in */
	ret = find_extent_before(trans, root, bg, start, &left);
	if (ret < 0)
		return ret;
	if (ret == 0 && left.objectid + left.offset > start)
		return tlog_error(-EUCLEAN, "range %llu+%llu is already free",
				  (unsigned long long)start, (unsigned long long)len);
	if (ret == 0 && left.objectid + left.offset == start) {
		ret = btrfs_delete_item(trans, root, &left);
		if (ret)
			return ret;
		new_start = left.objectid;
		delta--;
	}
	/* so does one starting at the end, if that is still this block group's */
	ret = 1;
	if (new_end < bg->start + bg->length)
		ret = find_extent_before(trans, root, bg, new_end, &right);
	if (ret < 0)
		return ret;
	if (ret == 0 && right.objectid == new_end) {
		ret = btrfs_delete_item(trans, root, &right);
		if (ret)
			return ret;
		new_end = right.objectid + right.offset;
		delta--;
	}
	ret = insert_extent(trans, root, new_start, new_end - new_start);
	return ret ? ret : update_info(trans, root, bg, delta);
}


/* ---- converting between the two forms, at the kernel's thresholds ---- */

struct run_list {
	struct free_range *v;
	size_t nr, cap;
};

static int run_push(struct run_list *l, u64 start, u64 len)
{
	if (l->nr && l->v[l->nr - 1].start + l->v[l->nr - 1].len == start) {
		l->v[l->nr - 1].len += len;
		return 0;
	}
	if (array_reserve(l->v, l->cap, l->nr + 1))
		return -ENOMEM;
	l->v[l->nr++] = (struct free_range){ start, len };
	return 0;
}

/*
 * Take out every free space item of @bg (after its INFO) and return the free
 * runs they described, in order.
 */
static int take_group_items(struct tlog_trans *trans, struct btrfs_root *root,
			    const struct tlog_block_group *bg, struct run_list *runs)
{
	u32 ss = trans->fs->sectorsize;
	int ret;

	for (;;) {
		struct btrfs_key key = { bg->start, BTRFS_FREE_SPACE_INFO_KEY + 1, 0 };
		struct btrfs_path path;

		/* find the next item of the group, then delete it by its exact key */
		btrfs_init_path(&path);
		ret = btrfs_search_forward(root, &key, &path);
		if (ret == 0) {
			btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
			if (key.objectid >= bg->start + bg->length ||
			    (key.type != BTRFS_FREE_SPACE_EXTENT_KEY &&
			     key.type != BTRFS_FREE_SPACE_BITMAP_KEY))
				ret = 1;
		}
		btrfs_release_path(&path);
		if (ret)
			break;
		ret = btrfs_search_slot_for_write(trans, root, &key, &path, -1);
		if (ret > 0)
			ret = -EUCLEAN;
		if (ret == 0 && key.type == BTRFS_FREE_SPACE_EXTENT_KEY) {
			ret = run_push(runs, key.objectid, key.offset);
		} else if (ret == 0) {
			const u8 *bits = btrfs_item_ptr(path.nodes[0], path.slots[0]);
			u32 size = btrfs_item_size(path.nodes[0], path.slots[0]);

			for (u64 i = 0; !ret && i < key.offset / ss && i / 8 < size; i++)
				if (bits[i / 8] & (1U << (i % 8)))
					ret = run_push(runs, key.objectid + i * ss, ss);
		}
		if (ret == 0)
			ret = btrfs_del_items(trans, root, &path, path.slots[0], 1);
		btrfs_release_path(&path);
		if (ret)
			break;
	}
	return ret < 0 ? ret : 0;
}

static int set_info_flags(struct tlog_trans *trans, struct btrfs_root *root,
			  const struct tlog_block_group *bg, u32 flags)
{
	struct btrfs_key key = { bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->length };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, root, &key, &path, 0);
	if (ret == 0)
		btrfs_set_free_space_info_flags(btrfs_item_ptr(path.nodes[0], path.slots[0]), flags);
	btrfs_release_path(&path);
	return ret > 0 ? -EUCLEAN : ret;
}

static int write_bitmaps(struct tlog_trans *trans, struct btrfs_root *root,
			 const struct tlog_block_group *bg, const struct run_list *runs)
{
	u32 ss = trans->fs->sectorsize;
	u64 range = bitmap_range(trans->fs), end = bg->start + bg->length;
	size_t r = 0;
	int ret = 0;

	for (u64 start = bg->start; !ret && start < end; start += range) {
		u64 len = end - start < range ? end - start : range;
		struct btrfs_key key = { start, BTRFS_FREE_SPACE_BITMAP_KEY, len };
		u32 size = (u32)((len / ss + 7) / 8);
		u8 bits[2048 / 8] = { 0 };

		for (; r < runs->nr && runs->v[r].start < start + len; r++) {
			u64 s = runs->v[r].start > start ? runs->v[r].start : start;
			u64 e = runs->v[r].start + runs->v[r].len;

			if (e > start + len)
				e = start + len;
			for (u64 pos = s; pos < e; pos += ss)
				bits[(pos - start) / ss / 8] |= 1U << ((pos - start) / ss % 8);
			if (runs->v[r].start + runs->v[r].len > start + len)
				break;	/* the run goes on in the next bitmap */
		}
		ret = btrfs_insert_item(trans, root, &key, bits, size);
	}
	return ret;
}

static int write_extents(struct tlog_trans *trans, struct btrfs_root *root,
			 const struct run_list *runs)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < runs->nr; i++)
		ret = insert_extent(trans, root, runs->v[i].start, runs->v[i].len);
	return ret;
}

/*
 * The kernel's policy: a group whose free runs cost more as extent items
 * than as bitmaps switches to bitmaps, and back once well below that.
 */
static int convert_if_needed(struct tlog_trans *trans, struct btrfs_root *root,
			     const struct tlog_block_group *bg)
{
	u64 nr_bitmaps = div_round_up(bg->length, bitmap_range(trans->fs));
	u64 high = nr_bitmaps * (sizeof(struct btrfs_item) + 256) / sizeof(struct btrfs_item);
	u64 low = high > 100 ? high - 100 : 0;
	struct btrfs_key key = { bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->length };
	struct run_list runs = { 0 };
	struct btrfs_path path;
	u32 count = 0, flags = 0;
	bool to_bitmaps;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, &key, &path);
	if (ret == 0) {
		const struct btrfs_free_space_info *info = free_space_info_at(&path);

		if (!info) {
			ret = -EUCLEAN;
		} else {
			count = btrfs_free_space_info_extent_count(info);
			flags = btrfs_free_space_info_flags(info);
		}
	}
	btrfs_release_path(&path);
	if (ret)
		return ret > 0 ? -EUCLEAN : ret;
	if (!(flags & BTRFS_FREE_SPACE_USING_BITMAPS) && count > high)
		to_bitmaps = true;
	else if ((flags & BTRFS_FREE_SPACE_USING_BITMAPS) && count < low)
		to_bitmaps = false;
	else
		return 0;
	ret = take_group_items(trans, root, bg, &runs);
	if (!ret && runs.nr != count)
		ret = tlog_error(-EUCLEAN, "free space info of group %llu counts %u runs, found %zu",
				 (unsigned long long)bg->start, count, runs.nr);
	if (!ret)
		ret = to_bitmaps ? write_bitmaps(trans, root, bg, &runs) :
				   write_extents(trans, root, &runs);
	if (!ret)
		ret = set_info_flags(trans, root, bg,
				     to_bitmaps ? flags | BTRFS_FREE_SPACE_USING_BITMAPS :
						  flags & ~BTRFS_FREE_SPACE_USING_BITMAPS);
	free(runs.v);
	return ret;
}

/* Change a range in whichever form the group uses, then let the form follow the count. */
static int change_range(struct tlog_trans *trans, const struct tlog_block_group *bg,
			u64 start, u64 len, bool now_free)
{
	struct btrfs_root *root;
	bool bitmaps = false;
	int ret;

	ret = fst_root(trans, &root);
	if (!ret)
		ret = uses_bitmaps(root, bg, &bitmaps);
	if (ret)
		return ret;
	if (bitmaps)
		ret = bitmap_change(trans, root, bg, start, len, now_free);
	else if (now_free)
		ret = extent_add(trans, root, bg, start, len);
	else
		ret = extent_remove(trans, root, bg, start, len);
	return ret ? ret : convert_if_needed(trans, root, bg);
}

int fst_remove_range(struct tlog_trans *trans, const struct tlog_block_group *bg,
		     u64 start, u64 len)
{
	return change_range(trans, bg, start, len, false);
}

int fst_add_range(struct tlog_trans *trans, const struct tlog_block_group *bg,
		  u64 start, u64 len)
{
	return change_range(trans, bg, start, len, true);
}
