// SPDX-License-Identifier: GPL-2.0-only
/*
 * Read side of the B-trees: binary search within blocks, root-to-leaf
 * search, and stepping between leaves.  The level of every child is checked
 * against its parent (level - 1), so a corrupted pointer can never make a
 * walk loop: each step down strictly lowers the level.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev.h"
#include "ctree.h"
#include "tree-checker.h"
#include "super.h"
#include "errctx.h"

void btrfs_init_path(struct btrfs_path *path)
{
	memset(path->nodes, 0, sizeof(path->nodes));
	memset(path->slots, 0, sizeof(path->slots));
	path->reada = false;
}

void btrfs_path_set_reada(struct btrfs_path *path, const struct btrfs_key *max)
{
	path->reada = true;
	path->reada_max = max ? *max : (struct btrfs_key){ (u64)-1, (u8)-1, (u64)-1 };
	memset(path->reada_node, 0, sizeof(path->reada_node));
	memset(path->reada_end, 0, sizeof(path->reada_end));
	path->reada_window = 0;
	path->reada_next_at = 0;
}

void btrfs_release_path(struct btrfs_path *path)
{
	for (int i = 0; i < BTRFS_MAX_LEVEL; i++) {
		if (path->nodes[i]) {
			free_extent_buffer(path->nodes[i]);
			path->nodes[i] = NULL;
		}
		path->slots[i] = 0;
	}
}

u32 btrfs_leaf_free_space(const struct tlog_fs *fs, const struct extent_buffer *leaf)
{
	u32 nritems = btrfs_header_nritems_eb(leaf);
	u32 used;

	if (nritems == 0)
		return btrfs_leaf_data_size(fs->nodesize);
	used = nritems * sizeof(struct btrfs_item) +
	       btrfs_leaf_data_size(fs->nodesize) - btrfs_item_offset(leaf, nritems - 1);
	return btrfs_leaf_data_size(fs->nodesize) - used;
}

/*
 * Binary search for @key in @eb.  Returns 0 and the slot of an exact match,
 * or 1 and the slot where it would be inserted.
 */
int bin_search_block(const struct extent_buffer *eb, const struct btrfs_key *key, int *slot)
{
	int lo = 0, hi = btrfs_header_nritems_eb(eb);
	bool leaf = btrfs_header_level_eb(eb) == 0;
	struct btrfs_key cur;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		int cmp;

		if (leaf)
			btrfs_item_key_to_cpu(eb, &cur, mid);
		else
			btrfs_node_key_to_cpu(eb, &cur, mid);
		cmp = btrfs_comp_cpu_keys(&cur, key);
		if (cmp < 0) {
			lo = mid + 1;
		} else if (cmp > 0) {
			hi = mid;
		} else {
			*slot = mid;
			return 0;
		}
	}
	*slot = lo;
	return 1;
}

/*
 * Read-ahead below the nodes a walk passes, in windows that grow: a path's
 * first search reads ahead at most READA_FIRST_WINDOW children per node
 * (and none past path->reada_max), so a one-off lookup reads what it
 * reads without read-ahead; each window after that is twice the one
 * before, up to a whole node, so a walk soon reads its leaves in large
 * runs.  A window is read when the walk reaches it, and the next one is
 * only hinted to the device, which then works ahead of the walk: from a
 * level-1 node whose window reaches its end, the hint goes to the next
 * level-1 node's leaves.
 *
 * To know those leaves the next node must be read.  Reading it when the
 * walk enters the node before would wait for it; in place (blockdev.h)
 * prefetching reads nothing, so the next node was unknown until the walk
 * reached it, and then the first run of its leaves was asked for on the
 * spot - on a cold 4 GiB SEEK walk, five waits for a 4 MiB run and a
 * millisecond each of the walk's own time allocating its pages.  So the
 * next node is only asked for at the entry, and read and its leaves
 * hinted once the walk is READA_NEXT_AFTER of the way through this one:
 * the node has long come in, and the device still has the rest of this
 * node's leaves and all of the next one's to read ahead of the walk.
 */
#define READA_FIRST_WINDOW	4
#define READA_MAX_WINDOW	1024
#define READA_NEXT_AFTER(nritems)	((nritems) / 4)

/* The level-1 node after the one at path->nodes[1]: its parent and slot there. */
static struct extent_buffer *next_level1_parent(struct btrfs_path *path, int *slot)
{
	struct extent_buffer *parent = path->nodes[2];

	if (!parent)
		return NULL;
	*slot = path->slots[2] + 1;
	return *slot < (int)btrfs_header_nritems_eb(parent) ? parent : NULL;
}

/* Hint a window of the next level-1 node's leaves, reading that node. */
static void reada_hint_next_node(struct btrfs_root *root, struct btrfs_path *path, u32 window)
{
	struct extent_buffer *parent, *next;
	struct tlog_errsave saved;
	int slot;

	parent = next_level1_parent(path, &slot);
	if (!parent)
		return;
	/* within reada_max: prefetching stops at children that start past it */
	if (btrfs_prefetch_children(root->fs, parent, slot, 1, &path->reada_max, true) <= slot)
		return;
	/* a hint only: a block that does not read is the walk's to report */
	tlog_error_save(&saved);
	if (read_tree_block(root->fs, btrfs_node_blockptr(parent, slot), 1,
			    btrfs_node_ptr_generation(parent, slot), &next) == 0) {
		btrfs_prefetch_children(root->fs, next, 0, window, &path->reada_max, false);
		free_extent_buffer(next);
	}
	tlog_error_restore(&saved);
}

/* Ask for the next level-1 node now, and plan the hint of its leaves. */
static void reada_plan_next_node(struct btrfs_root *root, struct btrfs_path *path,
				 struct extent_buffer *node, int slot)
{
	int at = READA_NEXT_AFTER((int)btrfs_header_nritems_eb(node));
	struct extent_buffer *parent;
	int pslot;

	parent = next_level1_parent(path, &pslot);
	if (!parent)
		return;
	if (!root->fs->in_place) {
		/* prefetching read the next node: its leaves are known now */
		reada_hint_next_node(root, path, path->reada_window);
		return;
	}
	btrfs_prefetch_children(root->fs, parent, pslot, 1, &path->reada_max, true);
	path->reada_next_at = at > slot ? at : slot + 1;
}

static void reada_below(struct btrfs_root *root, struct btrfs_path *path,
			struct extent_buffer *node, int slot)
{
	int level = btrfs_header_level_eb(node), end;
	u32 window = path->reada_window ? path->reada_window : READA_FIRST_WINDOW;

	if (!path->reada || level == 0)
		return;
	if (path->reada_node[level] == node->start && slot < path->reada_end[level]) {
		if (level == 1 && path->reada_next_at && slot >= path->reada_next_at) {
			path->reada_next_at = 0;
			reada_hint_next_node(root, path, path->reada_window);
		}
		return;
	}
	if (level == 1)
		path->reada_next_at = 0;
	end = btrfs_prefetch_children(root->fs, node, slot, window, &path->reada_max, true);
	path->reada_node[level] = node->start;
	path->reada_end[level] = end > slot ? end : slot + 1;
	path->reada_window = window * 2 < READA_MAX_WINDOW ? window * 2 : READA_MAX_WINDOW;
	if (end < (int)btrfs_header_nritems_eb(node))
		btrfs_prefetch_children(root->fs, node, end, path->reada_window,
					&path->reada_max, false);
	else if (level == 1)
		reada_plan_next_node(root, path, node, slot);
}

/* Read the child of @parent at @slot, checking what the parent says about it. */
static int read_child(struct btrfs_root *root, struct extent_buffer *parent, int slot,
		      struct extent_buffer **ret)
{
	int level = btrfs_header_level_eb(parent) - 1;
	struct btrfs_key pkey, ckey;
	int err;

	err = read_tree_block(root->fs, btrfs_node_blockptr(parent, slot), level,
			      btrfs_node_ptr_generation(parent, slot), ret);
	if (err)
		return err;
	/* The parent's key must be the child's first key. */
	btrfs_node_key_to_cpu(parent, &pkey, slot);
	if (btrfs_header_nritems_eb(*ret) > 0) {
		if (level == 0)
			btrfs_item_key_to_cpu(*ret, &ckey, 0);
		else
			btrfs_node_key_to_cpu(*ret, &ckey, 0);
		if (btrfs_comp_cpu_keys(&pkey, &ckey) != 0) {
			free_extent_buffer(*ret);
			*ret = NULL;
			return tlog_error(-EUCLEAN,
					  "tree block %llu: first key differs from its parent's key",
					  (unsigned long long)btrfs_node_blockptr(parent, slot));
		}
	} else if (level == 0 && root->level != 0) {
		/* Only a root leaf may be empty. */
		u64 bytenr = btrfs_node_blockptr(parent, slot);

		free_extent_buffer(*ret);
		*ret = NULL;
		return tlog_error(-EUCLEAN, "tree block %llu: empty leaf below a node",
				  (unsigned long long)bytenr);
	}
	return 0;
}

static int read_root_block(struct btrfs_root *root, struct extent_buffer **ret)
{
	return read_tree_block(root->fs, root->bytenr, root->level, root->generation, ret);
}

/* ---- search hints ---- */

/*
 * A hint is the path of the root's last read-only search, its blocks
 * referenced so that they stay the buffers they were.  It is never
 * trusted, only checked: it still holds for @key when its top block is
 * the root's block now, each node's slot still points at the block below
 * and the key lies between that slot's key and the next one - exactly
 * the descent a search would make, whatever the tree went through since
 * (blocks copied, split, merged: a block dropped from the cache is stale,
 * and a copy has another address).  Checking costs two key comparisons a
 * level, where a descent bisects each node and looks each child up.
 */
struct btrfs_search_hint {
	struct extent_buffer *nodes[BTRFS_MAX_LEVEL];
	int slots[BTRFS_MAX_LEVEL];
	u64 hits, misses;
};

int btrfs_root_hint_start(struct btrfs_root *root)
{
	if (!root->hint)
		root->hint = calloc(1, sizeof(*root->hint));
	return root->hint ? 0 : -ENOMEM;
}

void btrfs_root_hint_end(struct btrfs_root *root)
{
	if (!root->hint)
		return;
	for (int i = 0; i < BTRFS_MAX_LEVEL; i++)
		free_extent_buffer(root->hint->nodes[i]);
	free(root->hint);
	root->hint = NULL;
}

void btrfs_root_hint_stats(const struct btrfs_root *root, u64 *hits, u64 *misses)
{
	*hits = root->hint ? root->hint->hits : 0;
	*misses = root->hint ? root->hint->misses : 0;
}

/* Keep the path a search of @root just left as its hint. */
static void hint_keep(struct btrfs_root *root, const struct btrfs_path *path)
{
	struct btrfs_search_hint *hint = root->hint;

	for (int i = 0; i < BTRFS_MAX_LEVEL; i++) {
		if (hint->nodes[i] != path->nodes[i]) {
			free_extent_buffer(hint->nodes[i]);
			hint->nodes[i] = path->nodes[i];
			if (hint->nodes[i])
				extent_buffer_get(hint->nodes[i]);
		}
		hint->slots[i] = path->slots[i];
	}
}

/* Whether @key lies in the range slot @slot of @node leads to. */
static bool node_slot_spans(const struct extent_buffer *node, int slot, const struct btrfs_key *key)
{
	int nritems = (int)btrfs_header_nritems_eb(node);
	struct btrfs_key k;

	if (slot >= nritems)
		return false;
	if (slot > 0) {
		btrfs_node_key_to_cpu(node, &k, slot);
		if (btrfs_comp_cpu_keys(key, &k) < 0)
			return false;
	}
	if (slot + 1 < nritems) {
		btrfs_node_key_to_cpu(node, &k, slot + 1);
		if (btrfs_comp_cpu_keys(key, &k) >= 0)
			return false;
	}
	return true;
}

/*
 * Whether the hint leads to @key's leaf (see above).  Never while blocks
 * are read in place (a revoked mapping is noticed by reading) or after
 * the image changed under the reader: read_tree_block() says so.
 */
static bool hint_holds(const struct btrfs_root *root, const struct btrfs_key *key)
{
	const struct btrfs_search_hint *hint = root->hint;
	const struct extent_buffer *top = hint->nodes[root->level];

	if (root->fs->in_place || root->fs->image_changed || !top || top->stale ||
	    top->start != root->bytenr || btrfs_header_level_eb(top) != root->level ||
	    btrfs_header_generation(eb_header(top)) != root->generation)
		return false;
	for (int level = root->level; level > 0; level--) {
		const struct extent_buffer *node = hint->nodes[level];
		const struct extent_buffer *child = hint->nodes[level - 1];
		int slot = hint->slots[level];

		if (!child || child->stale || !node_slot_spans(node, slot, key) ||
		    btrfs_node_blockptr(node, slot) != child->start)
			return false;
	}
	return true;
}

/* Search @key in the hint's leaf, the path filled from the hint; 1 when not found. */
static int search_from_hint(struct btrfs_root *root, const struct btrfs_key *key,
			    struct btrfs_path *path)
{
	struct btrfs_search_hint *hint = root->hint;
	int ret, slot;

	for (int level = root->level; level >= 0; level--) {
		path->nodes[level] = hint->nodes[level];
		extent_buffer_get(path->nodes[level]);
		path->slots[level] = hint->slots[level];
	}
	ret = bin_search_block(path->nodes[0], key, &slot);
	path->slots[0] = hint->slots[0] = slot;
	return ret;
}

int btrfs_search_slot(struct btrfs_root *root, const struct btrfs_key *key,
		      struct btrfs_path *path)
{
	struct extent_buffer *eb;
	int ret, level, slot = 0;

	btrfs_release_path(path);
	if (root->hint && !path->reada) {
		if (hint_holds(root, key)) {
			root->hint->hits++;
			return search_from_hint(root, key, path);
		}
		root->hint->misses++;
	}
	ret = read_root_block(root, &eb);
	if (ret)
		return ret;

	for (;;) {
		level = btrfs_header_level_eb(eb);
		path->nodes[level] = eb;
		ret = bin_search_block(eb, key, &slot);
		if (level == 0) {
			path->slots[0] = slot;
			if (root->hint && !path->reada)
				hint_keep(root, path);
			return ret;
		}
		/* In a node, descend into the child whose range holds the key. */
		if (ret && slot > 0)
			slot--;
		path->slots[level] = slot;
		reada_below(root, path, eb, slot);
		ret = read_child(root, eb, slot, &eb);
		if (ret) {
			btrfs_release_path(path);
			return ret;
		}
	}
}

/* Whether @key lies within the keys of @leaf; sets *@after when it is past them. */
static bool leaf_spans_key(const struct extent_buffer *leaf, const struct btrfs_key *key,
			   bool *after)
{
	u32 nritems = btrfs_header_nritems_eb(leaf);
	struct btrfs_key first, last;

	*after = false;
	if (nritems == 0)
		return false;
	btrfs_item_key_to_cpu(leaf, &first, 0);
	btrfs_item_key_to_cpu(leaf, &last, nritems - 1);
	if (btrfs_comp_cpu_keys(key, &first) < 0)
		return false;
	if (btrfs_comp_cpu_keys(key, &last) > 0) {
		*after = true;
		return false;
	}
	return true;
}

/*
 * How far a search in a leaf the path holds looks forward from the path's
 * slot before it bisects: a cursor's next key is most often the next item
 * or one of the few after it (a data extent's keyed refs, the metadata
 * items between two data extents), and a few key loads in a row cost less
 * than a bisection's eight scattered ones.
 */
#define NEAR_SCAN_ITEMS	8

/*
 * bin_search_block() of a leaf whose keys span @key, starting with the
 * few items from *@slot on when the key there is not past @key.
 */
static int leaf_search_forward(const struct extent_buffer *leaf, const struct btrfs_key *key,
			       int *slot)
{
	int nritems = (int)btrfs_header_nritems_eb(leaf), s = *slot;
	struct btrfs_key cur;

	if (s < 0 || s >= nritems)
		return bin_search_block(leaf, key, slot);
	for (int end = s + NEAR_SCAN_ITEMS; s < nritems && s < end; s++) {
		int cmp;

		btrfs_item_key_to_cpu(leaf, &cur, s);
		cmp = btrfs_comp_cpu_keys(&cur, key);
		if (cmp > 0 && s == *slot)
			break;		/* the key is behind the slot: bisect */
		if (cmp >= 0) {
			*slot = s;
			return cmp != 0;
		}
	}
	return bin_search_block(leaf, key, slot);
}

int btrfs_search_slot_near(struct btrfs_root *root, const struct btrfs_key *key,
			   struct btrfs_path *path)
{
	struct extent_buffer *leaf = path->nodes[0];
	bool after;

	if (leaf && btrfs_header_level_eb(leaf) == 0) {
		if (leaf_spans_key(leaf, key, &after))
			return leaf_search_forward(leaf, key, &path->slots[0]);
		/* one step to the next leaf covers keys that walk forward */
		if (after && btrfs_next_leaf(root, path) == 0) {
			leaf = path->nodes[0];
			if (leaf_spans_key(leaf, key, &after))
				return bin_search_block(leaf, key, &path->slots[0]);
			if (!after && btrfs_header_nritems_eb(leaf) > 0) {
				/* between the two leaves: the next key is the first here */
				path->slots[0] = 0;
				return 1;
			}
		}
	}
	return btrfs_search_slot(root, key, path);
}

/* Walk down from @level at path->slots[level] along the leftmost (or rightmost) edge. */
static int descend(struct btrfs_root *root, struct btrfs_path *path, int level, bool rightmost)
{
	while (level > 0) {
		struct extent_buffer *child;
		int ret;

		reada_below(root, path, path->nodes[level], path->slots[level]);
		ret = read_child(root, path->nodes[level], path->slots[level], &child);
		if (ret)
			return ret;
		level--;
		free_extent_buffer(path->nodes[level]);
		path->nodes[level] = child;
		path->slots[level] = rightmost ?
			(int)btrfs_header_nritems_eb(child) - 1 : 0;
		if (path->slots[level] < 0)
			path->slots[level] = 0;
	}
	return 0;
}

int btrfs_next_leaf(struct btrfs_root *root, struct btrfs_path *path)
{
	int level;

	for (level = 1; level < BTRFS_MAX_LEVEL; level++) {
		struct extent_buffer *node = path->nodes[level];

		if (!node)
			return 1;
		if (path->slots[level] + 1 < (int)btrfs_header_nritems_eb(node)) {
			path->slots[level]++;
			return descend(root, path, level, false);
		}
	}
	return 1;
}

int btrfs_prev_leaf(struct btrfs_root *root, struct btrfs_path *path)
{
	int level;

	for (level = 1; level < BTRFS_MAX_LEVEL; level++) {
		if (!path->nodes[level])
			return 1;
		if (path->slots[level] > 0) {
			path->slots[level]--;
			return descend(root, path, level, true);
		}
	}
	return 1;
}

int btrfs_next_item(struct btrfs_root *root, struct btrfs_path *path)
{
	struct extent_buffer *leaf = path->nodes[0];

	if (path->slots[0] + 1 < (int)btrfs_header_nritems_eb(leaf)) {
		path->slots[0]++;
		return 0;
	}
	/* Skip over any (invalid but harmless) empty leaves. */
	for (;;) {
		int ret = btrfs_next_leaf(root, path);

		if (ret)
			return ret;
		if (btrfs_header_nritems_eb(path->nodes[0]) > 0)
			return 0;
	}
}

int btrfs_prev_item(struct btrfs_root *root, struct btrfs_path *path)
{
	if (path->slots[0] > 0) {
		path->slots[0]--;
		return 0;
	}
	for (;;) {
		int ret = btrfs_prev_leaf(root, path);

		if (ret)
			return ret;
		if (btrfs_header_nritems_eb(path->nodes[0]) > 0)
			return 0;
	}
}

int btrfs_search_forward(struct btrfs_root *root, const struct btrfs_key *key,
			 struct btrfs_path *path)
{
	int ret = btrfs_search_slot(root, key, path);

	if (ret <= 0)
		return ret;
	if (path->slots[0] < (int)btrfs_header_nritems_eb(path->nodes[0]))
		return 0;
	/* Past the end of this leaf: the next item, if any, is in the next leaf. */
	path->slots[0] = btrfs_header_nritems_eb(path->nodes[0]) - 1;
	if (btrfs_header_nritems_eb(path->nodes[0]) == 0)
		path->slots[0] = 0;
	return btrfs_next_item(root, path);
}

/*
 * The key after the subtree at path->nodes[level]: the next pointer's key
 * in the lowest ancestor that has one.  false at the end of the tree.
 */
static bool key_after_subtree(const struct btrfs_path *path, int level, struct btrfs_key *key)
{
	for (int l = level + 1; l < BTRFS_MAX_LEVEL && path->nodes[l]; l++) {
		if (path->slots[l] + 1 < (int)btrfs_header_nritems_eb(path->nodes[l])) {
			btrfs_node_key_to_cpu(path->nodes[l], key, path->slots[l] + 1);
			return true;
		}
	}
	return false;
}

int btrfs_search_forward_since(struct btrfs_root *root, struct btrfs_key *min_key,
			       struct btrfs_path *path, u64 min_trans)
{
	for (;;) {
		struct extent_buffer *eb;
		struct btrfs_key next;
		int ret, level, slot;
		bool restart = false;

		btrfs_release_path(path);
		ret = read_root_block(root, &eb);
		if (ret)
			return ret;
		if (btrfs_header_generation(eb_header(eb)) < min_trans) {
			free_extent_buffer(eb);
			return 1;
		}
		for (;;) {
			level = btrfs_header_level_eb(eb);
			path->nodes[level] = eb;
			ret = bin_search_block(eb, min_key, &slot);
			if (level == 0) {
				path->slots[0] = slot;
				if (slot < (int)btrfs_header_nritems_eb(eb)) {
					btrfs_item_key_to_cpu(eb, min_key, slot);
					return 0;
				}
				break;
			}
			if (ret && slot > 0)
				slot--;
			/* subtrees not changed since @min_trans hold nothing wanted */
			while (slot < (int)btrfs_header_nritems_eb(eb) &&
			       btrfs_node_ptr_generation(eb, slot) < min_trans)
				slot++;
			path->slots[level] = slot;
			if (slot >= (int)btrfs_header_nritems_eb(eb))
				break;
			btrfs_node_key_to_cpu(eb, &next, slot);
			if (btrfs_comp_cpu_keys(&next, min_key) > 0)
				*min_key = next;
			ret = read_child(root, eb, slot, &eb);
			if (ret) {
				btrfs_release_path(path);
				return ret;
			}
		}
		/* nothing here: go on after this block */
		restart = key_after_subtree(path, level, &next);
		if (!restart) {
			btrfs_release_path(path);
			return 1;
		}
		*min_key = next;
	}
}

int btrfs_search_backwards(struct btrfs_root *root, const struct btrfs_key *key,
			   struct btrfs_path *path)
{
	struct btrfs_key found;
	int ret = btrfs_search_slot(root, key, path);

	if (ret <= 0)
		return ret;
	ret = btrfs_prev_item(root, path);
	if (ret)
		return ret;
	btrfs_item_key_to_cpu(path->nodes[0], &found, path->slots[0]);
	if (found.objectid != key->objectid || found.type != key->type)
		return 1;
	return 0;
}

/* ---- range iteration ---- */

static void iter_load(struct btrfs_tree_iter *iter)
{
	iter->leaf = iter->path.nodes[0];
	iter->slot = iter->path.slots[0];
	btrfs_item_key_to_cpu(iter->leaf, &iter->key, iter->slot);
	if (btrfs_comp_cpu_keys(&iter->key, &iter->max) > 0)
		iter->ret = 1;
}

int btrfs_tree_iter_start(struct btrfs_root *root, struct btrfs_tree_iter *iter,
			  const struct btrfs_key *min, const struct btrfs_key *max)
{
	memset(iter, 0, sizeof(*iter));
	iter->root = root;
	iter->max = *max;
	btrfs_path_set_reada(&iter->path, max);
	iter->ret = btrfs_search_forward(root, min, &iter->path);
	if (iter->ret == 0)
		iter_load(iter);
	return iter->ret;
}

int btrfs_tree_iter_next(struct btrfs_tree_iter *iter)
{
	if (iter->ret)
		return iter->ret;
	iter->ret = btrfs_next_item(iter->root, &iter->path);
	if (iter->ret == 0)
		iter_load(iter);
	return iter->ret;
}

void btrfs_tree_iter_end(struct btrfs_tree_iter *iter)
{
	btrfs_release_path(&iter->path);
}

/* ---- structure check ---- */

struct tree_check {
	struct btrfs_root *root;
	u64 items;
	u64 blocks;
	bool have_last;
	struct btrfs_key last;		/* the last leaf key seen, for global order */
};

static int check_block(struct tree_check *tc, u64 bytenr, int level, u64 generation,
		       const struct btrfs_key *lo, const struct btrfs_key *hi, bool is_root)
{
	struct tlog_fs *fs = tc->root->fs;
	struct extent_buffer *eb;
	struct btrfs_key key;
	u32 n;
	int err;

	err = read_tree_block(fs, bytenr, level, generation, &eb);
	if (err)
		return err;
	err = btrfs_check_tree_block_layout(fs, eb->data, bytenr);
	n = btrfs_header_nritems_eb(eb);
	if (!err && n == 0 && (!is_root || level > 0))
		err = tlog_error(-EUCLEAN, "block %llu at level %d is empty",
				 (unsigned long long)bytenr, level);
	tc->blocks++;
	for (u32 i = 0; !err && i < n; i++) {
		if (level == 0)
			btrfs_item_key_to_cpu(eb, &key, i);
		else
			btrfs_node_key_to_cpu(eb, &key, i);
		if ((i == 0 && lo && btrfs_comp_cpu_keys(&key, lo) != 0) ||
		    (lo && btrfs_comp_cpu_keys(&key, lo) < 0) ||
		    (hi && btrfs_comp_cpu_keys(&key, hi) >= 0)) {
			err = tlog_error(-EUCLEAN, "block %llu slot %u: key outside its parent's range",
					 (unsigned long long)bytenr, i);
			break;
		}
		if (level == 0) {
			if (tc->have_last && btrfs_comp_cpu_keys(&tc->last, &key) >= 0)
				err = tlog_error(-EUCLEAN, "block %llu slot %u: keys out of order",
						 (unsigned long long)bytenr, i);
			tc->last = key;
			tc->have_last = true;
			tc->items++;
			continue;
		}
		{
			struct btrfs_key next;
			bool last = i + 1 == n;

			if (!last)
				btrfs_node_key_to_cpu(eb, &next, i + 1);
			err = check_block(tc, btrfs_node_blockptr(eb, i), level - 1,
					  btrfs_node_ptr_generation(eb, i), &key,
					  last ? hi : &next, false);
		}
	}
	free_extent_buffer(eb);
	return err;
}

int btrfs_check_tree_structure(struct btrfs_root *root, u64 *nr_items, u64 *nr_blocks)
{
	struct tree_check tc = { .root = root };
	int err = check_block(&tc, root->bytenr, root->level, root->generation, NULL, NULL, true);

	if (nr_items)
		*nr_items = tc.items;
	if (nr_blocks)
		*nr_blocks = tc.blocks;
	return err;
}
