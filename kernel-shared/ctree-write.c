// SPDX-License-Identifier: GPL-2.0-only
/*
 * Changing B-trees, copy-on-write.
 *
 * A search that will modify copies every block on its path that was not
 * written in the running transaction (btrfs_cow_block) and, when it will
 * insert, splits full nodes on the way down, so that a leaf split always
 * finds room for one or two new pointers in its parent.  Leaves split as
 * often as needed for the new items to fit, ending with a leaf of their
 * own if need be.  Deletions merge a leaf or node that fell below a quarter
 * full into a sibling when the two fit in one block, remove emptied blocks
 * from their parents, and shrink the root when it is left with one child.
 *
 * Blocks are never changed in place across transactions: the superblock of
 * the committed state keeps pointing at intact blocks until the commit.
 * So an insert at the path a read-only lookup left (a lookup, then an
 * insert of what it did not find, or an item it found extended) goes
 * there directly only when every block on that path is already this
 * transaction's copy and the leaf has room (btrfs_path_takes()); otherwise
 * it descends again as a search for write.
 *
 * A search with ins_len > 0 is a promise to insert: it may push items to
 * the neighbours or split the leaf so that the new items fit, and a split
 * for a key at either end of a leaf leaves the new items a leaf of their
 * own, empty until they arrive.  The caller must then insert (or extend)
 * at the path, or the tree keeps an empty leaf below a node, which the
 * kernel refuses; only a tree's root may be an empty leaf.  A caller that
 * may find nothing to insert looks up first with btrfs_search_slot(), or
 * searches with ins_len 0.  The commit refuses to write a tree that broke
 * the promise (-EUCLEAN), and the committed state stays as it was.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctree.h"
#include "super.h"
#include "errctx.h"
#include "transaction.h"

/* ---- block layout helpers ---- */

static u32 nritems(const struct extent_buffer *eb)
{
	return btrfs_header_nritems_eb(eb);
}

static void set_nritems(struct extent_buffer *eb, u32 n)
{
	btrfs_set_header_nritems(eb_header(eb), n);
}

static u8 *leaf_data(const struct extent_buffer *eb)
{
	return (u8 *)eb->data + sizeof(struct btrfs_header);
}

static u32 leaf_data_size(const struct tlog_fs *fs)
{
	return btrfs_leaf_data_size(fs->nodesize);
}

/* Where item data starts: the lowest offset in use (the end if empty). */
static u32 leaf_data_end(const struct tlog_fs *fs, const struct extent_buffer *leaf)
{
	u32 n = nritems(leaf);

	return n ? btrfs_item_offset(leaf, n - 1) : leaf_data_size(fs);
}

static u32 item_end(const struct extent_buffer *leaf, int slot)
{
	return btrfs_item_offset(leaf, slot) + btrfs_item_size(leaf, slot);
}

static u32 leaf_used(const struct tlog_fs *fs, const struct extent_buffer *leaf)
{
	return nritems(leaf) * sizeof(struct btrfs_item) +
	       leaf_data_size(fs) - leaf_data_end(fs, leaf);
}

static void set_item(struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
		     u32 offset, u32 size)
{
	struct btrfs_item *item = btrfs_item_nr(leaf, slot);

	btrfs_cpu_key_to_disk(&item->key, key);
	btrfs_set_raw_item_offset(item, offset);
	btrfs_set_raw_item_size(item, size);
}

static void set_node_ptr(struct extent_buffer *node, int slot, const struct btrfs_disk_key *key,
			 u64 blockptr, u64 generation)
{
	struct btrfs_key_ptr *kp = btrfs_key_ptr_nr(node, slot);

	kp->key = *key;
	btrfs_set_key_ptr_blockptr(kp, blockptr);
	btrfs_set_key_ptr_generation(kp, generation);
}

/* The first key of a block, in disk order. */
static struct btrfs_disk_key first_key(const struct extent_buffer *eb)
{
	if (btrfs_header_level_eb(eb) == 0)
		return btrfs_item_nr(eb, 0)->key;
	return btrfs_key_ptr_nr(eb, 0)->key;
}

static u32 max_ptrs(const struct tlog_fs *fs)
{
	return btrfs_nodeptrs_per_block(fs->nodesize);
}

/* ---- allocating and freeing blocks ---- */

/*
 * A new block of @root at @level, written in this transaction: empty, or
 * with @from's items (COW); the header is the new block's either way.
 */
static int new_block(struct tlog_trans *trans, struct btrfs_root *root, int level,
		     const struct extent_buffer *from, struct extent_buffer **ret)
{
	struct tlog_fs *fs = trans->fs;
	struct extent_buffer *eb;
	struct btrfs_header *h;
	u64 bytenr;
	int err;

	err = trans->ops->alloc_tree_block(trans, root, level, &bytenr);
	if (err)
		return err;
	eb = btrfs_new_tree_block(fs, bytenr, from);
	if (!eb)
		return -ENOMEM;
	/* a log block is written by the log sync, never by the commit */
	if (root->root_key.objectid == BTRFS_TREE_LOG_OBJECTID)
		btrfs_mark_log_buffer_dirty(fs, eb);
	h = eb_header(eb);
	memcpy(h->fsid, fs->header_fsid, BTRFS_FSID_SIZE);
	memcpy(h->chunk_tree_uuid, fs->chunk_tree_uuid, BTRFS_UUID_SIZE);
	btrfs_set_header_bytenr(h, bytenr);
	btrfs_set_header_flags(h, BTRFS_HEADER_FLAG_WRITTEN |
			       ((u64)BTRFS_MIXED_BACKREF_REV << BTRFS_BACKREF_REV_SHIFT));
	btrfs_set_header_generation(h, trans->transid);
	btrfs_set_header_owner(h, root->root_key.objectid);
	btrfs_set_header_level(h, level);
	*ret = eb;
	return 0;
}

/* @eb leaves the tree: forget a block of this transaction, pin an older one. */
static int free_block(struct tlog_trans *trans, struct btrfs_root *root,
		      struct extent_buffer *eb)
{
	u64 bytenr = eb->start;
	int level = btrfs_header_level_eb(eb);

	if (btrfs_header_generation(eb_header(eb)) == trans->transid)
		btrfs_forget_tree_block(trans->fs, bytenr);
	return trans->ops->free_tree_block(trans, root, bytenr, level);
}

static bool written_in_trans(const struct tlog_trans *trans, const struct extent_buffer *eb)
{
	return eb->dirty && btrfs_header_generation(eb_header(eb)) == trans->transid;
}

/*
 * Copy @eb (the child at @slot of @parent, or the root when @parent is
 * NULL) into a new block of this transaction and point the parent at it.
 * Takes over the caller's reference to @eb; returns the copy referenced.
 */
static int cow_one(struct tlog_trans *trans, struct btrfs_root *root,
		   struct extent_buffer *parent, int slot, struct extent_buffer *eb,
		   struct extent_buffer **ret)
{
	struct extent_buffer *cow;
	int level = btrfs_header_level_eb(eb);
	int err;

	if (written_in_trans(trans, eb)) {
		*ret = eb;
		return 0;
	}
	/* new_block() writes the copy's header: address, generation, owner, flags */
	err = new_block(trans, root, level, eb, &cow);
	if (err) {
		free_extent_buffer(eb);
		return err;
	}
	if (parent) {
		btrfs_set_key_ptr_blockptr(btrfs_key_ptr_nr(parent, slot), cow->start);
		btrfs_set_key_ptr_generation(btrfs_key_ptr_nr(parent, slot), trans->transid);
	} else {
		root->bytenr = cow->start;
		root->generation = trans->transid;
	}
	if (trans->ops->cow_tree_block) {
		bool last_ref = true;

		err = trans->ops->cow_tree_block(trans, root, eb, cow, &last_ref);
		if (!err && last_ref)
			err = free_block(trans, root, eb);
	} else {
		err = free_block(trans, root, eb);
	}
	free_extent_buffer(eb);
	if (err) {
		free_extent_buffer(cow);
		return err;
	}
	*ret = cow;
	return 0;
}

int btrfs_cow_block(struct tlog_trans *trans, struct btrfs_root *root,
		    struct btrfs_path *path, int level)
{
	struct extent_buffer *parent = level + 1 < BTRFS_MAX_LEVEL ? path->nodes[level + 1] : NULL;

	return cow_one(trans, root, parent, parent ? path->slots[level + 1] : 0,
		       path->nodes[level], &path->nodes[level]);
}

/* Read the child at @slot of @parent (a block of this transaction) and COW it. */
static int read_child_cow(struct tlog_trans *trans, struct btrfs_root *root,
			  struct extent_buffer *parent, int slot, struct extent_buffer **ret)
{
	struct extent_buffer *eb;
	int err;

	err = read_tree_block(trans->fs, btrfs_node_blockptr(parent, slot),
			      btrfs_header_level_eb(parent) - 1,
			      btrfs_node_ptr_generation(parent, slot), &eb);
	if (err)
		return err;
	return cow_one(trans, root, parent, slot, eb, ret);
}

/* ---- keys in parents ---- */

/* Slot 0 of the block at @level changed its first key: tell the ancestors. */
static void fixup_low_keys(struct btrfs_path *path, const struct btrfs_disk_key *key, int level)
{
	for (int i = level; i < BTRFS_MAX_LEVEL && path->nodes[i]; i++) {
		btrfs_key_ptr_nr(path->nodes[i], path->slots[i])->key = *key;
		if (path->slots[i] != 0)
			break;
	}
}

/* ---- growing: new roots, pointers, splits ---- */

/* Put a new root above the current one, which is path->nodes[level]. */
static int insert_new_root(struct tlog_trans *trans, struct btrfs_root *root,
			   struct btrfs_path *path, int level)
{
	struct extent_buffer *lower = path->nodes[level], *c;
	struct btrfs_disk_key key = { 0 };
	int err;

	if (level + 1 >= BTRFS_MAX_LEVEL)
		return tlog_error(-EOVERFLOW, "tree %llu would grow past %d levels",
				  (unsigned long long)root->root_key.objectid, BTRFS_MAX_LEVEL);
	err = new_block(trans, root, level + 1, NULL, &c);
	if (err)
		return err;
	if (nritems(lower))
		key = first_key(lower);
	set_node_ptr(c, 0, &key, lower->start, btrfs_header_generation(eb_header(lower)));
	set_nritems(c, 1);
	root->bytenr = c->start;
	root->level = level + 1;
	root->generation = trans->transid;
	path->nodes[level + 1] = c;
	path->slots[level + 1] = 0;
	return 0;
}

static void insert_ptr(struct btrfs_path *path, int level, const struct btrfs_disk_key *key,
		       u64 bytenr, u64 generation, int slot)
{
	struct extent_buffer *node = path->nodes[level];
	u32 n = nritems(node);

	memmove(btrfs_key_ptr_nr(node, slot + 1), btrfs_key_ptr_nr(node, slot),
		(n - slot) * sizeof(struct btrfs_key_ptr));
	set_node_ptr(node, slot, key, bytenr, generation);
	set_nritems(node, n + 1);
	if (slot == 0)
		fixup_low_keys(path, key, level + 1);
}

/* Move the upper half of path->nodes[level] into a new sibling. */
static int split_node(struct tlog_trans *trans, struct btrfs_root *root,
		      struct btrfs_path *path, int level)
{
	struct extent_buffer *c = path->nodes[level], *split;
	u32 n = nritems(c), mid = (n + 1) / 2;
	struct btrfs_disk_key key;
	int err;

	if (!path->nodes[level + 1]) {
		err = insert_new_root(trans, root, path, level);
		if (err)
			return err;
	}
	err = new_block(trans, root, level, NULL, &split);
	if (err)
		return err;
	memcpy(btrfs_key_ptr_nr(split, 0), btrfs_key_ptr_nr(c, mid),
	       (n - mid) * sizeof(struct btrfs_key_ptr));
	set_nritems(split, n - mid);
	set_nritems(c, mid);
	key = first_key(split);
	insert_ptr(path, level + 1, &key, split->start, trans->transid,
		   path->slots[level + 1] + 1);
	if (path->slots[level] >= (int)mid) {
		path->slots[level] -= mid;
		path->nodes[level] = split;
		path->slots[level + 1]++;
		free_extent_buffer(c);
	} else {
		free_extent_buffer(split);
	}
	return 0;
}

/* Move items [mid, n) of @l into the empty leaf @r. */
static void move_items_to_new_leaf(const struct tlog_fs *fs, struct extent_buffer *l,
				   struct extent_buffer *r, u32 mid)
{
	u32 n = nritems(l), nr = n - mid;
	u32 start, bytes, shift;

	if (nr == 0)
		return;
	start = leaf_data_end(fs, l);
	bytes = item_end(l, mid) - start;
	shift = leaf_data_size(fs) - item_end(l, mid);
	memcpy(leaf_data(r) + leaf_data_size(fs) - bytes, leaf_data(l) + start, bytes);
	memcpy(btrfs_item_nr(r, 0), btrfs_item_nr(l, mid), nr * sizeof(struct btrfs_item));
	for (u32 i = 0; i < nr; i++) {
		struct btrfs_item *item = btrfs_item_nr(r, i);

		btrfs_set_raw_item_offset(item, btrfs_raw_item_offset(item) + shift);
	}
	set_nritems(r, nr);
	set_nritems(l, mid);
}

/* Where to split @leaf so its used bytes divide about evenly (0 < mid < n). */
static u32 balanced_split_point(const struct tlog_fs *fs, const struct extent_buffer *leaf)
{
	u32 n = nritems(leaf), half = leaf_used(fs, leaf) / 2, used = 0, mid;

	for (mid = 0; mid + 1 < n; mid++) {
		used += btrfs_item_size(leaf, mid) + sizeof(struct btrfs_item);
		if (used >= half)
			break;
	}
	return mid + 1 < n ? mid + 1 : n - 1;
}

/*
 * Split the leaf at path->nodes[0] once, so that the side where @key goes
 * (at path->slots[0]) gets fewer items, or none when the key goes to an end.
 */
static int split_leaf_once(struct tlog_trans *trans, struct btrfs_root *root,
			   const struct btrfs_key *key, struct btrfs_path *path, bool extend)
{
	struct tlog_fs *fs = trans->fs;
	struct extent_buffer *l = path->nodes[0], *r;
	u32 n = nritems(l), slot = path->slots[0], mid;
	struct btrfs_disk_key rkey;
	int err;

	if (!path->nodes[1]) {
		err = insert_new_root(trans, root, path, 0);
		if (err)
			return err;
	}
	if (extend) {
		/* the item grows in place: split right after it, or just before */
		if (n == 1)
			return tlog_error(-EOVERFLOW, "an item cannot grow past a leaf");
		mid = slot + 1 < n ? slot + 1 : slot;
	} else if (slot >= n) {
		mid = n;		/* the new items start an empty right leaf */
	} else if (slot == 0) {
		mid = 0;		/* everything moves right; they fill the left */
	} else {
		mid = balanced_split_point(fs, l);
	}

	err = new_block(trans, root, 0, NULL, &r);
	if (err)
		return err;
	move_items_to_new_leaf(fs, l, r, mid);
	if (nritems(r))
		rkey = first_key(r);
	else
		btrfs_cpu_key_to_disk(&rkey, key);
	insert_ptr(path, 1, &rkey, r->start, trans->transid, path->slots[1] + 1);

	if (slot > mid || (slot == mid && (extend || (mid == n && n > 0)))) {
		path->nodes[0] = r;
		path->slots[0] = slot - mid;
		path->slots[1]++;
		free_extent_buffer(l);
	} else {
		free_extent_buffer(r);
	}
	return 0;
}

/* Bytes items [from, to) of @leaf take, headers included. */
static u32 items_bytes(const struct extent_buffer *leaf, u32 from, u32 to)
{
	if (from >= to)
		return 0;
	return (to - from) * sizeof(struct btrfs_item) +
	       item_end(leaf, from) - btrfs_item_offset(leaf, to - 1);
}

/*
 * Move the last items of the leaf at the path (those after the insertion
 * point) to the front of its right sibling, as many as fit there.
 */
static int push_leaf_right(struct tlog_trans *trans, struct btrfs_root *root,
			   struct btrfs_path *path, bool extend)
{
	struct tlog_fs *fs = trans->fs;
	struct extent_buffer *l = path->nodes[0], *parent = path->nodes[1], *r;
	u32 n = nritems(l), first = path->slots[0] + (extend ? 1 : 0), from = n;
	int pslot = path->slots[1], err;
	u32 rn, bytes, data, shift, free_r;

	if (pslot + 1 >= (int)nritems(parent) || first >= n)
		return 0;
	err = read_child_cow(trans, root, parent, pslot + 1, &r);
	if (err)
		return err;
	free_r = btrfs_leaf_free_space(fs, r);
	while (from > first && items_bytes(l, from - 1, n) <= free_r)
		from--;
	if (from == n) {
		free_extent_buffer(r);
		return 0;
	}
	rn = nritems(r);
	bytes = n - from;
	data = item_end(l, from) - btrfs_item_offset(l, n - 1);
	/* make room at the front of the right leaf: its data down, headers up */
	memmove(leaf_data(r) + leaf_data_end(fs, r) - data, leaf_data(r) + leaf_data_end(fs, r),
		leaf_data_size(fs) - leaf_data_end(fs, r));
	for (u32 i = 0; i < rn; i++) {
		struct btrfs_item *item = btrfs_item_nr(r, i);

		btrfs_set_raw_item_offset(item, btrfs_raw_item_offset(item) - data);
	}
	memmove(btrfs_item_nr(r, bytes), btrfs_item_nr(r, 0), rn * sizeof(struct btrfs_item));
	/* the moved items take the top of the right leaf */
	memcpy(leaf_data(r) + leaf_data_size(fs) - data, leaf_data(l) + btrfs_item_offset(l, n - 1),
	       data);
	memcpy(btrfs_item_nr(r, 0), btrfs_item_nr(l, from), bytes * sizeof(struct btrfs_item));
	shift = leaf_data_size(fs) - item_end(l, from);
	for (u32 i = 0; i < bytes; i++) {
		struct btrfs_item *item = btrfs_item_nr(r, i);

		btrfs_set_raw_item_offset(item, btrfs_raw_item_offset(item) + shift);
	}
	set_nritems(r, rn + bytes);
	set_nritems(l, from);
	btrfs_key_ptr_nr(parent, pslot + 1)->key = first_key(r);
	free_extent_buffer(r);
	return 0;
}

/*
 * Move the first items of the leaf at the path (those before the insertion
 * point) to the end of its left sibling, as many as fit there.  When all of
 * them moved and the left leaf still has @needed bytes free, the new items
 * go at its end: they would otherwise start a leaf of their own in front of
 * this one (a split at slot 0), and replay, inserting a file's refs and
 * extents after its inode item in ascending order, would leave one such
 * nearly empty leaf every few leaves.
 */
static int push_leaf_left(struct tlog_trans *trans, struct btrfs_root *root,
			  struct btrfs_path *path, u32 needed, bool extend)
{
	struct tlog_fs *fs = trans->fs;
	struct extent_buffer *l = path->nodes[0], *parent = path->nodes[1], *left;
	u32 n = nritems(l), limit = path->slots[0], k = 0, ln, data, free_l, shift;
	int pslot = path->slots[1], err;
	struct btrfs_disk_key key;

	if (pslot == 0 || limit == 0)
		return 0;
	if (limit >= n)
		limit = n - 1;	/* keep one item: the leaf must not go empty */
	err = read_child_cow(trans, root, parent, pslot - 1, &left);
	if (err)
		return err;
	free_l = btrfs_leaf_free_space(fs, left);
	while (k < limit && items_bytes(l, 0, k + 1) <= free_l)
		k++;
	if (k == 0) {
		free_extent_buffer(left);
		return 0;
	}
	/* append items [0, k) to the left leaf */
	ln = nritems(left);
	data = leaf_data_size(fs) - btrfs_item_offset(l, k - 1);
	memcpy(leaf_data(left) + leaf_data_end(fs, left) - data,
	       leaf_data(l) + btrfs_item_offset(l, k - 1), data);
	memcpy(btrfs_item_nr(left, ln), btrfs_item_nr(l, 0), k * sizeof(struct btrfs_item));
	shift = leaf_data_size(fs) - leaf_data_end(fs, left);
	for (u32 i = 0; i < k; i++) {
		struct btrfs_item *item = btrfs_item_nr(left, ln + i);

		btrfs_set_raw_item_offset(item, btrfs_raw_item_offset(item) - shift);
	}
	set_nritems(left, ln + k);
	/* close the gap in this leaf: remaining data up, headers down */
	memmove(leaf_data(l) + leaf_data_end(fs, l) + data, leaf_data(l) + leaf_data_end(fs, l),
		btrfs_item_offset(l, k - 1) - leaf_data_end(fs, l));
	for (u32 i = k; i < n; i++) {
		struct btrfs_item *item = btrfs_item_nr(l, i);

		btrfs_set_raw_item_offset(item, btrfs_raw_item_offset(item) + data);
	}
	memmove(btrfs_item_nr(l, 0), btrfs_item_nr(l, k), (n - k) * sizeof(struct btrfs_item));
	set_nritems(l, n - k);
	path->slots[0] -= k;
	key = first_key(l);
	fixup_low_keys(path, &key, 1);
	if (path->slots[0] == 0 && !extend && btrfs_leaf_free_space(fs, left) >= needed) {
		free_extent_buffer(l);
		path->nodes[0] = left;
		path->slots[0] = ln + k;
		path->slots[1]--;
		return 0;
	}
	free_extent_buffer(left);
	return 0;
}

static int split_leaf(struct tlog_trans *trans, struct btrfs_root *root,
		      const struct btrfs_key *key, struct btrfs_path *path, u32 needed,
		      bool extend)
{
	/* first, as the kernel does, make room by handing items to the neighbours */
	if (path->nodes[1]) {
		int err = push_leaf_right(trans, root, path, extend);

		if (!err && btrfs_leaf_free_space(trans->fs, path->nodes[0]) < needed)
			err = push_leaf_left(trans, root, path, needed, extend);
		if (err)
			return err;
	}
	/* each split leaves the new items fewer neighbours, down to none */
	while (btrfs_leaf_free_space(trans->fs, path->nodes[0]) < needed) {
		int err = split_leaf_once(trans, root, key, path, extend);

		if (err)
			return err;
	}
	return 0;
}

/* ---- search for modification ---- */

int btrfs_search_slot_for_write(struct tlog_trans *trans, struct btrfs_root *root,
				const struct btrfs_key *key, struct btrfs_path *path,
				int ins_len)
{
	struct tlog_fs *fs = trans->fs;
	struct extent_buffer *eb;
	int ret, level, slot;

	if (ins_len > 0 && (u32)ins_len > leaf_data_size(fs))
		return tlog_error(-EOVERFLOW, "%d bytes of items cannot fit in one leaf", ins_len);
	fs->write_searches++;
	btrfs_release_path(path);
	ret = read_tree_block(fs, root->bytenr, root->level, root->generation, &eb);
	if (ret)
		return ret;
	ret = cow_one(trans, root, NULL, 0, eb, &eb);
	if (ret)
		return ret;

	for (;;) {
		level = btrfs_header_level_eb(eb);
		path->nodes[level] = eb;
		ret = bin_search_block(eb, key, &slot);
		if (level == 0) {
			path->slots[0] = slot;
			if (ins_len > 0 &&
			    btrfs_leaf_free_space(fs, eb) < (u32)ins_len) {
				int err = split_leaf(trans, root, key, path, ins_len,
						     ret == 0);

				if (err) {
					btrfs_release_path(path);
					return err;
				}
			}
			return ret;
		}
		if (ret && slot > 0)
			slot--;
		path->slots[level] = slot;
		/* room for the pointers a split below may add */
		if (ins_len > 0 && nritems(eb) >= max_ptrs(fs) - 3) {
			int err = split_node(trans, root, path, level);

			if (err) {
				btrfs_release_path(path);
				return err;
			}
			eb = path->nodes[level];
			slot = path->slots[level];
		}
		ret = read_child_cow(trans, root, eb, slot, &eb);
		if (ret) {
			btrfs_release_path(path);
			return ret;
		}
	}
}

/* ---- inserting ---- */

/* The bytes of @nr items of @sizes, headers included; -EINVAL when @keys are out of order. */
static int items_to_insert(const struct btrfs_key *keys, const u32 *sizes, int nr, u32 *bytes)
{
	u32 total = 0;

	for (int i = 0; i < nr; i++) {
		total += sizes[i] + sizeof(struct btrfs_item);
		if (i && btrfs_comp_cpu_keys(&keys[i - 1], &keys[i]) >= 0)
			return tlog_error(-EINVAL, "items to insert are not in key order");
	}
	*bytes = total;
	return 0;
}

/*
 * Put the items into the leaf at @path, which has room for them, at the
 * path's slot (where a search for keys[0] stopped); @bytes is their
 * size, headers included (items_to_insert()).
 */
static int insert_into_leaf(struct tlog_trans *trans, struct btrfs_path *path,
			    const struct btrfs_key *keys, const u32 *sizes, int nr, u32 bytes)
{
	struct tlog_fs *fs = trans->fs;
	u32 total_data = bytes - nr * (u32)sizeof(struct btrfs_item);
	struct extent_buffer *leaf;
	u32 n, data_end, off;
	int slot;

	leaf = path->nodes[0];
	slot = path->slots[0];
	n = nritems(leaf);
	if (slot < (int)n) {
		struct btrfs_key next;

		btrfs_item_key_to_cpu(leaf, &next, slot);
		if (btrfs_comp_cpu_keys(&keys[nr - 1], &next) >= 0) {
			btrfs_release_path(path);
			return -EEXIST;
		}
	}
	data_end = leaf_data_end(fs, leaf);
	if (slot < (int)n) {
		/* make room: shift later items' data down and their headers up */
		u32 old_end = item_end(leaf, slot);

		memmove(leaf_data(leaf) + data_end - total_data, leaf_data(leaf) + data_end,
			old_end - data_end);
		for (u32 i = slot; i < n; i++) {
			struct btrfs_item *item = btrfs_item_nr(leaf, i);

			btrfs_set_raw_item_offset(item, btrfs_raw_item_offset(item) - total_data);
		}
		memmove(btrfs_item_nr(leaf, slot + nr), btrfs_item_nr(leaf, slot),
			(n - slot) * sizeof(struct btrfs_item));
		off = old_end;
	} else {
		off = data_end;
	}
	for (int i = 0; i < nr; i++) {
		off -= sizes[i];
		set_item(leaf, slot + i, &keys[i], off, sizes[i]);
		memset(leaf_data(leaf) + off, 0, sizes[i]);
	}
	set_nritems(leaf, n + nr);
	if (slot == 0) {
		struct btrfs_disk_key dkey;

		btrfs_cpu_key_to_disk(&dkey, &keys[0]);
		fixup_low_keys(path, &dkey, 1);
	}
	return 0;
}

int btrfs_insert_empty_items(struct tlog_trans *trans, struct btrfs_root *root,
			     struct btrfs_path *path, const struct btrfs_key *keys,
			     const u32 *sizes, int nr)
{
	u32 bytes;
	int ret = items_to_insert(keys, sizes, nr, &bytes);

	if (ret)
		return ret;
	ret = btrfs_search_slot_for_write(trans, root, &keys[0], path, (int)bytes);
	if (ret <= 0) {
		if (ret == 0) {
			btrfs_release_path(path);
			return -EEXIST;
		}
		return ret;
	}
	return insert_into_leaf(trans, path, keys, sizes, nr, bytes);
}

bool btrfs_path_takes(const struct tlog_trans *trans, const struct btrfs_root *root,
		      const struct btrfs_path *path, u32 bytes)
{
	int level;

	if (!path->nodes[0] || btrfs_leaf_free_space(trans->fs, path->nodes[0]) < bytes)
		return false;
	for (level = 0; level < BTRFS_MAX_LEVEL && path->nodes[level]; level++)
		if (!written_in_trans(trans, path->nodes[level]))
			return false;
	return level == root->level + 1 && path->nodes[root->level]->start == root->bytenr;
}

int btrfs_insert_empty_items_at(struct tlog_trans *trans, struct btrfs_root *root,
				struct btrfs_path *path, const struct btrfs_key *keys,
				const u32 *sizes, int nr)
{
	u32 bytes;
	int ret = items_to_insert(keys, sizes, nr, &bytes);

	if (ret) {
		btrfs_release_path(path);
		return ret;
	}
	if (btrfs_path_takes(trans, root, path, bytes))
		return insert_into_leaf(trans, path, keys, sizes, nr, bytes);
	return btrfs_insert_empty_items(trans, root, path, keys, sizes, nr);
}

int btrfs_insert_item_at(struct tlog_trans *trans, struct btrfs_root *root,
			 struct btrfs_path *path, const struct btrfs_key *key, const void *data,
			 u32 size)
{
	int ret = btrfs_insert_empty_items_at(trans, root, path, key, &size, 1);

	if (ret == 0 && size)
		memcpy(btrfs_item_ptr(path->nodes[0], path->slots[0]), data, size);
	btrfs_release_path(path);
	return ret;
}

int btrfs_insert_item(struct tlog_trans *trans, struct btrfs_root *root,
		      const struct btrfs_key *key, const void *data, u32 size)
{
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_insert_empty_items(trans, root, &path, key, &size, 1);
	/* empty items (free space extents) may come with no data at all */
	if (ret == 0 && size)
		memcpy(btrfs_item_ptr(path.nodes[0], path.slots[0]), data, size);
	btrfs_release_path(&path);
	return ret;
}

/*
 * The first key after @key in @root, if any (*@found), for a batch of
 * new items to stop before.  1 when @key itself exists.
 */
static int next_existing_key(struct btrfs_root *root, const struct btrfs_key *key,
			     struct btrfs_key *next, bool *found)
{
	struct btrfs_path path;
	int ret;

	*found = false;
	btrfs_init_path(&path);
	ret = btrfs_search_forward(root, key, &path);
	if (ret == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], next, path.slots[0]);
		*found = true;
		ret = btrfs_comp_cpu_keys(next, key) == 0;
	} else if (ret > 0) {
		ret = 0;
	}
	btrfs_release_path(&path);
	return ret;
}

int btrfs_insert_items(struct tlog_trans *trans, struct btrfs_root *root,
		       const struct btrfs_key *keys, const void *const *data, const u32 *sizes,
		       int nr)
{
	u32 room = leaf_data_size(trans->fs);
	int i = 0;

	while (i < nr) {
		struct btrfs_key next;
		struct btrfs_path path;
		bool bounded;
		u32 bytes = 0;
		int n = 0, ret;

		ret = next_existing_key(root, &keys[i], &next, &bounded);
		if (ret)
			return ret > 0 ? -EEXIST : ret;
		/* the run: keys before the next existing one, as many as a leaf holds */
		while (i + n < nr && (!bounded || btrfs_comp_cpu_keys(&keys[i + n], &next) < 0) &&
		       bytes + sizes[i + n] + sizeof(struct btrfs_item) <= room) {
			bytes += sizes[i + n] + sizeof(struct btrfs_item);
			n++;
		}
		if (n == 0)
			return tlog_error(bounded && btrfs_comp_cpu_keys(&keys[i], &next) >= 0 ?
					  -EINVAL : -EOVERFLOW,
					  "item %d to insert is out of order or larger than a leaf",
					  i);
		btrfs_init_path(&path);
		ret = btrfs_insert_empty_items(trans, root, &path, keys + i, sizes + i, n);
		if (ret == 0) {
			for (int j = 0; j < n; j++)
				if (data && data[i + j] && sizes[i + j])
					memcpy(btrfs_item_ptr(path.nodes[0], path.slots[0] + j),
					       data[i + j], sizes[i + j]);
		}
		btrfs_release_path(&path);
		if (ret)
			return ret;
		i += n;
	}
	return 0;
}

int btrfs_item_batch_reserve(struct btrfs_item_batch *batch, size_t nr)
{
	struct btrfs_key *keys;
	const void **data;
	u32 *sizes;

	if (nr <= batch->alloc)
		return 0;
	keys = realloc(batch->keys, nr * sizeof(*keys));
	if (keys)
		batch->keys = keys;
	data = realloc(batch->data, nr * sizeof(*data));
	if (data)
		batch->data = data;
	sizes = realloc(batch->sizes, nr * sizeof(*sizes));
	if (sizes)
		batch->sizes = sizes;
	if (!keys || !data || !sizes)
		return -ENOMEM;
	batch->alloc = nr;
	return 1;
}

void btrfs_item_batch_release(struct btrfs_item_batch *batch)
{
	free(batch->keys);
	free(batch->data);
	free(batch->sizes);
	memset(batch, 0, sizeof(*batch));
}

int btrfs_copy_items_batch(struct tlog_trans *trans, struct btrfs_root *dst,
			   const struct extent_buffer *src, int first_slot, int nr,
			   struct btrfs_item_batch *batch)
{
	int ret;

	if (nr <= 0 || first_slot < 0 || (u32)(first_slot + nr) > nritems(src))
		return -EINVAL;
	ret = btrfs_item_batch_reserve(batch, nr);
	if (ret < 0)
		return ret;
	for (int i = 0; i < nr; i++) {
		btrfs_item_key_to_cpu(src, &batch->keys[i], first_slot + i);
		batch->sizes[i] = btrfs_item_size(src, first_slot + i);
		batch->data[i] = btrfs_item_ptr(src, first_slot + i);
	}
	return btrfs_insert_items(trans, dst, batch->keys, batch->data, batch->sizes, nr);
}

int btrfs_copy_items(struct tlog_trans *trans, struct btrfs_root *dst,
		     const struct extent_buffer *src, int first_slot, int nr)
{
	struct btrfs_item_batch batch = { 0 };
	int ret = btrfs_copy_items_batch(trans, dst, src, first_slot, nr, &batch);

	btrfs_item_batch_release(&batch);
	return ret;
}

/* ---- resizing items in place ---- */

int btrfs_extend_item(struct tlog_trans *trans, struct btrfs_path *path, u32 size_diff)
{
	struct tlog_fs *fs = trans->fs;
	struct extent_buffer *leaf = path->nodes[0];
	int slot = path->slots[0];
	u32 n = nritems(leaf), data_end = leaf_data_end(fs, leaf), old_end;

	if (btrfs_leaf_free_space(fs, leaf) < size_diff)
		return tlog_error(-ENOSPC, "no room to extend an item by %u bytes", size_diff);
	old_end = item_end(leaf, slot);
	/* this item and the later ones move down; the new bytes end this item */
	memmove(leaf_data(leaf) + data_end - size_diff, leaf_data(leaf) + data_end,
		old_end - data_end);
	for (u32 i = slot; i < n; i++) {
		struct btrfs_item *item = btrfs_item_nr(leaf, i);

		btrfs_set_raw_item_offset(item, btrfs_raw_item_offset(item) - size_diff);
	}
	btrfs_set_raw_item_size(btrfs_item_nr(leaf, slot),
				btrfs_item_size(leaf, slot) + size_diff);
	memset(leaf_data(leaf) + old_end - size_diff, 0, size_diff);
	return 0;
}

int btrfs_truncate_item(struct tlog_trans *trans, struct btrfs_path *path, u32 new_size,
			bool from_end)
{
	struct tlog_fs *fs = trans->fs;
	struct extent_buffer *leaf = path->nodes[0];
	int slot = path->slots[0];
	u32 n = nritems(leaf), data_end = leaf_data_end(fs, leaf);
	u32 size = btrfs_item_size(leaf, slot), off = btrfs_item_offset(leaf, slot);
	u32 diff;

	if (new_size > size)
		return -EINVAL;
	diff = size - new_size;
	if (!from_end) {
		/* keep the tail: bring it to the front of the item's data */
		memmove(leaf_data(leaf) + off, leaf_data(leaf) + off + diff, new_size);
	}
	memmove(leaf_data(leaf) + data_end + diff, leaf_data(leaf) + data_end,
		off + new_size - data_end);
	for (u32 i = slot; i < n; i++) {
		struct btrfs_item *item = btrfs_item_nr(leaf, i);

		btrfs_set_raw_item_offset(item, btrfs_raw_item_offset(item) + diff);
	}
	btrfs_set_raw_item_size(btrfs_item_nr(leaf, slot), new_size);
	return 0;
}

/* ---- deleting ---- */

static int del_ptr(struct tlog_trans *trans, struct btrfs_root *root,
		   struct btrfs_path *path, int level, int slot);

/* Append every item of leaf @src to leaf @dst (which has room). */
static void append_leaf(const struct tlog_fs *fs, struct extent_buffer *dst,
			const struct extent_buffer *src)
{
	u32 dn = nritems(dst), sn = nritems(src);
	u32 src_start = leaf_data_end(fs, src), bytes = leaf_data_size(fs) - src_start;
	u32 dst_end = leaf_data_end(fs, dst);
	u32 shift = leaf_data_size(fs) - dst_end;

	memcpy(leaf_data(dst) + dst_end - bytes, leaf_data(src) + src_start, bytes);
	memcpy(btrfs_item_nr(dst, dn), btrfs_item_nr(src, 0), sn * sizeof(struct btrfs_item));
	for (u32 i = 0; i < sn; i++) {
		struct btrfs_item *item = btrfs_item_nr(dst, dn + i);

		btrfs_set_raw_item_offset(item, btrfs_raw_item_offset(item) - shift);
	}
	set_nritems(dst, dn + sn);
}

static void append_node(struct extent_buffer *dst, const struct extent_buffer *src)
{
	u32 dn = nritems(dst), sn = nritems(src);

	memcpy(btrfs_key_ptr_nr(dst, dn), btrfs_key_ptr_nr(src, 0),
	       sn * sizeof(struct btrfs_key_ptr));
	set_nritems(dst, dn + sn);
}

/* Bytes a block's contents take, to see whether two fit in one. */
static u32 block_used(const struct tlog_fs *fs, const struct extent_buffer *eb)
{
	if (btrfs_header_level_eb(eb) == 0)
		return leaf_used(fs, eb);
	return nritems(eb) * sizeof(struct btrfs_key_ptr);
}

static void append_block(const struct tlog_fs *fs, struct extent_buffer *dst,
			 const struct extent_buffer *src)
{
	if (btrfs_header_level_eb(dst) == 0)
		append_leaf(fs, dst, src);
	else
		append_node(dst, src);
}

/*
 * path->nodes[level] fell below a quarter full: fold it into its left
 * sibling, or its right sibling into it, when the two fit in one block.
 */
static int merge_with_sibling(struct tlog_trans *trans, struct btrfs_root *root,
			      struct btrfs_path *path, int level)
{
	struct tlog_fs *fs = trans->fs;
	struct extent_buffer *eb = path->nodes[level];
	struct extent_buffer *parent = path->nodes[level + 1], *sib;
	u32 capacity = leaf_data_size(fs);
	int pslot = path->slots[level + 1];
	int err;

	if (pslot > 0) {
		err = read_child_cow(trans, root, parent, pslot - 1, &sib);
		if (err)
			return err;
		if (block_used(fs, sib) + block_used(fs, eb) <= capacity) {
			append_block(fs, sib, eb);
			free_extent_buffer(sib);
			err = free_block(trans, root, eb);
			if (err)
				return err;
			return del_ptr(trans, root, path, level + 1, pslot);
		}
		free_extent_buffer(sib);
	}
	if (pslot + 1 < (int)nritems(parent)) {
		err = read_child_cow(trans, root, parent, pslot + 1, &sib);
		if (err)
			return err;
		if (block_used(fs, sib) + block_used(fs, eb) <= capacity) {
			append_block(fs, eb, sib);
			err = free_block(trans, root, sib);
			free_extent_buffer(sib);
			if (err)
				return err;
			return del_ptr(trans, root, path, level + 1, pslot + 1);
		}
		free_extent_buffer(sib);
	}
	return 0;
}

/* The root node has one child left: that child becomes the root. */
static int shrink_root(struct tlog_trans *trans, struct btrfs_root *root,
		       struct btrfs_path *path, int level)
{
	struct extent_buffer *node = path->nodes[level], *child;
	int err;

	err = read_child_cow(trans, root, node, 0, &child);
	if (err)
		return err;
	root->bytenr = child->start;
	root->level = level - 1;
	root->generation = trans->transid;
	free_extent_buffer(child);
	return free_block(trans, root, node);
}

/*
 * Remove pointer @slot from path->nodes[level], then deal with what that
 * leaves: an empty node goes, a root with one child shrinks, a node below
 * a quarter full merges.  The path is not usable afterwards.
 */
static int del_ptr(struct tlog_trans *trans, struct btrfs_root *root,
		   struct btrfs_path *path, int level, int slot)
{
	struct extent_buffer *node = path->nodes[level];
	bool is_root = level + 1 >= BTRFS_MAX_LEVEL || !path->nodes[level + 1];
	u32 n = nritems(node);

	memmove(btrfs_key_ptr_nr(node, slot), btrfs_key_ptr_nr(node, slot + 1),
		(n - slot - 1) * sizeof(struct btrfs_key_ptr));
	set_nritems(node, --n);
	if (is_root)
		return n == 1 ? shrink_root(trans, root, path, level) : 0;
	if (n == 0) {
		int err = free_block(trans, root, node);

		return err ? err : del_ptr(trans, root, path, level + 1, path->slots[level + 1]);
	}
	if (slot == 0) {
		struct btrfs_disk_key key = first_key(node);

		fixup_low_keys(path, &key, level + 1);
	}
	if (n < max_ptrs(trans->fs) / 4)
		return merge_with_sibling(trans, root, path, level);
	return 0;
}

int btrfs_del_items(struct tlog_trans *trans, struct btrfs_root *root,
		    struct btrfs_path *path, int slot, int nr)
{
	struct tlog_fs *fs = trans->fs;
	struct extent_buffer *leaf = path->nodes[0];
	u32 n = nritems(leaf), dsize;

	if (nr <= 0 || slot < 0 || (u32)(slot + nr) > n)
		return -EINVAL;
	dsize = item_end(leaf, slot) - btrfs_item_offset(leaf, slot + nr - 1);
	if ((u32)(slot + nr) < n) {
		u32 data_end = leaf_data_end(fs, leaf);
		u32 last = btrfs_item_offset(leaf, slot + nr - 1);

		/* later items' data moves up into the hole */
		memmove(leaf_data(leaf) + data_end + dsize, leaf_data(leaf) + data_end,
			last - data_end);
		for (u32 i = slot + nr; i < n; i++) {
			struct btrfs_item *item = btrfs_item_nr(leaf, i);

			btrfs_set_raw_item_offset(item, btrfs_raw_item_offset(item) + dsize);
		}
		memmove(btrfs_item_nr(leaf, slot), btrfs_item_nr(leaf, slot + nr),
			(n - slot - nr) * sizeof(struct btrfs_item));
	}
	n -= nr;
	set_nritems(leaf, n);
	if (!path->nodes[1])
		return 0;		/* a root leaf may be empty */
	if (n == 0) {
		int err = free_block(trans, root, leaf);

		return err ? err : del_ptr(trans, root, path, 1, path->slots[1]);
	}
	if (slot == 0) {
		struct btrfs_disk_key key = first_key(leaf);

		fixup_low_keys(path, &key, 1);
	}
	if (leaf_used(fs, leaf) < leaf_data_size(fs) / 4)
		return merge_with_sibling(trans, root, path, 0);
	return 0;
}

int btrfs_delete_item(struct tlog_trans *trans, struct btrfs_root *root,
		      const struct btrfs_key *key)
{
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, root, key, &path, -1);
	if (ret == 0)
		ret = btrfs_del_items(trans, root, &path, path.slots[0], 1);
	else if (ret > 0)
		ret = -ENOENT;
	btrfs_release_path(&path);
	return ret;
}

int btrfs_create_tree(struct tlog_trans *trans, struct btrfs_root *root)
{
	struct extent_buffer *leaf;
	int err = new_block(trans, root, 0, NULL, &leaf);

	if (err)
		return err;
	root->bytenr = leaf->start;
	root->level = 0;
	root->generation = trans->transid;
	free_extent_buffer(leaf);
	return 0;
}

int btrfs_delete_items_range(struct tlog_trans *trans, struct btrfs_root *root,
			     const struct btrfs_key *min, const struct btrfs_key *max,
			     u64 *deleted)
{
	u64 count = 0;
	int ret;

	for (;;) {
		struct btrfs_key key;
		struct btrfs_path path;
		struct extent_buffer *leaf;
		int first, n = 0;

		/* where the next item to delete is, read-only: it may be in the next leaf */
		btrfs_init_path(&path);
		ret = btrfs_search_forward(root, min, &path);
		if (ret == 0)
			btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		btrfs_release_path(&path);
		if (ret || btrfs_comp_cpu_keys(&key, max) > 0)
			break;
		ret = btrfs_search_slot_for_write(trans, root, &key, &path, -1);
		if (ret) {
			btrfs_release_path(&path);
			if (ret > 0)
				ret = tlog_error(-EUCLEAN, "an item of tree %llu vanished",
						 (unsigned long long)root->root_key.objectid);
			break;
		}
		/* every item of the range in this leaf at once */
		leaf = path.nodes[0];
		first = path.slots[0];
		while (first + n < (int)nritems(leaf)) {
			struct btrfs_key k;

			btrfs_item_key_to_cpu(leaf, &k, first + n);
			if (btrfs_comp_cpu_keys(&k, max) > 0)
				break;
			n++;
		}
		ret = btrfs_del_items(trans, root, &path, first, n);
		btrfs_release_path(&path);
		if (ret)
			break;
		count += n;
	}
	if (deleted)
		*deleted = count;
	return ret < 0 ? ret : 0;
}

int btrfs_delete_objectid_items(struct tlog_trans *trans, struct btrfs_root *root,
				u64 objectid)
{
	struct btrfs_key min = { objectid, 0, 0 }, max = { objectid, (u8)-1, (u64)-1 };

	return btrfs_delete_items_range(trans, root, &min, &max, NULL);
}
