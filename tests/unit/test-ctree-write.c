// SPDX-License-Identifier: GPL-2.0-only
// Tests the copy-on-write B-tree changes (ctree-write.c) against a model:
// thousands of random inserts, deletes, extends and truncates, the whole
// tree checked after every step, over several transactions.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "csum.h"
#include "ctree.h"
#include "errctx.h"
#include "transaction.h"

/* ---- an in-memory allocator: freed blocks come back after a commit ---- */

struct mem_alloc {
	u64 next;
	u64 *pinned, *free;
	size_t nr_pinned, nr_free, cap;
	u64 allocated;		/* live blocks */
};

static int mem_alloc_block(struct tlog_trans *trans, struct btrfs_root *root, int level,
			   u64 *bytenr)
{
	struct mem_alloc *a = trans->priv;

	(void)root;
	(void)level;
	if (a->nr_free)
		*bytenr = a->free[--a->nr_free];
	else
		*bytenr = (a->next += trans->fs->nodesize);
	a->allocated++;
	return 0;
}

static int mem_free_block(struct tlog_trans *trans, struct btrfs_root *root, u64 bytenr,
			  int level)
{
	struct mem_alloc *a = trans->priv;

	(void)trans;
	(void)root;
	(void)level;
	cr_assert_lt(a->nr_pinned, a->cap, "more frees than blocks");
	for (size_t i = 0; i < a->nr_pinned; i++)
		cr_assert_neq(a->pinned[i], bytenr, "block %llu freed twice",
			      (unsigned long long)bytenr);
	a->pinned[a->nr_pinned++] = bytenr;
	a->allocated--;
	return 0;
}

static const struct tlog_trans_ops mem_ops = {
	.alloc_tree_block = mem_alloc_block,
	.free_tree_block = mem_free_block,
};

/* "Commit": the blocks are written, and space freed in the transaction is reusable. */
static void commit(struct tlog_trans *trans)
{
	struct mem_alloc *a = trans->priv;
	struct tlog_fs *fs = trans->fs;

	while (!list_empty(&fs->dirty_blocks))
		btrfs_clear_buffer_dirty(fs, list_first_entry(&fs->dirty_blocks,
							      struct extent_buffer, dirty_list));
	memcpy(a->free + a->nr_free, a->pinned, a->nr_pinned * sizeof(u64));
	a->nr_free += a->nr_pinned;
	a->nr_pinned = 0;
	trans->transid++;
}

/* ---- the model: what the tree must hold ---- */

struct model_item {
	struct btrfs_key key;
	u32 size;
	u8 fill;
};

struct model {
	struct model_item *v;
	size_t nr;
};

static int model_find(const struct model *m, const struct btrfs_key *key, size_t *pos)
{
	size_t lo = 0, hi = m->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = btrfs_comp_cpu_keys(&m->v[mid].key, key);

		if (c == 0) {
			*pos = mid;
			return 1;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pos = lo;
	return 0;
}

static void model_insert(struct model *m, const struct model_item *it, size_t pos)
{
	m->v = realloc(m->v, (m->nr + 1) * sizeof(*m->v));
	memmove(m->v + pos + 1, m->v + pos, (m->nr - pos) * sizeof(*m->v));
	m->v[pos] = *it;
	m->nr++;
}

static void model_delete(struct model *m, size_t pos)
{
	memmove(m->v + pos, m->v + pos + 1, (m->nr - pos - 1) * sizeof(*m->v));
	m->nr--;
}

/* Items carry their fill byte in every byte, so content moves are checked too. */
static void check_against_model(struct btrfs_root *root, const struct model *m)
{
	struct btrfs_key min = { 0, 0, 0 }, max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_tree_iter iter;
	size_t i = 0;

	btrfs_for_each_item(root, &iter, &min, &max) {
		const u8 *p = btrfs_item_ptr(iter.leaf, iter.slot);
		u32 size = btrfs_item_size(iter.leaf, iter.slot);

		cr_assert_lt(i, m->nr, "tree has more items than the model");
		cr_assert_eq(btrfs_comp_cpu_keys(&iter.key, &m->v[i].key), 0,
			     "item %zu: key (%llu %u %llu) expected (%llu %u %llu)", i,
			     (unsigned long long)iter.key.objectid, iter.key.type,
			     (unsigned long long)iter.key.offset,
			     (unsigned long long)m->v[i].key.objectid, m->v[i].key.type,
			     (unsigned long long)m->v[i].key.offset);
		cr_assert_eq(size, m->v[i].size, "item %zu: size %u expected %u", i, size,
			     m->v[i].size);
		for (u32 b = 0; b < size; b++)
			cr_assert_eq(p[b], m->v[i].fill, "item %zu byte %u changed", i, b);
		i++;
	}
	cr_assert_geq(iter.ret, 0, "walk failed");
	btrfs_tree_iter_end(&iter);
	cr_assert_eq(i, m->nr, "tree has %zu items, model %zu", i, m->nr);
}

static void check_structure(struct btrfs_root *root, const struct model *m, struct mem_alloc *a)
{
	u64 items, blocks;
	int err = btrfs_check_tree_structure(root, &items, &blocks);

	cr_assert_eq(err, 0, "tree check: %s", tlog_error_get());
	cr_assert_eq(items, m->nr, "tree holds %llu items, model %zu",
		     (unsigned long long)items, m->nr);
	cr_assert_eq(blocks, a->allocated, "%llu blocks reachable, %llu allocated",
		     (unsigned long long)blocks, (unsigned long long)a->allocated);
}

struct fixture {
	struct tlog_fs *fs;
	struct btrfs_root root;
	struct mem_alloc alloc;
	struct tlog_trans trans;
	struct model model;
	/* inserts at a read-only search's path: in that leaf, or by a new descent */
	int inserts_in_place, inserts_searched;
};

static void setup_fixture(struct fixture *f, u32 nodesize)
{
	memset(f, 0, sizeof(*f));
	cr_assert_eq(tlog_fs_create_memory(nodesize, 4096, BTRFS_CSUM_TYPE_CRC32, &f->fs), 0);
	f->alloc.next = 1 << 20;
	f->alloc.cap = 1 << 20;
	f->alloc.pinned = calloc(f->alloc.cap, sizeof(u64));
	f->alloc.free = calloc(f->alloc.cap, sizeof(u64));
	f->root.fs = f->fs;
	f->root.root_key = (struct btrfs_key){ 5, BTRFS_ROOT_ITEM_KEY, 0 };
	f->trans = (struct tlog_trans){ .fs = f->fs, .transid = 2, .ops = &mem_ops,
					.priv = &f->alloc };
	cr_assert_eq(btrfs_create_tree(&f->trans, &f->root), 0);
}

static void teardown_fixture(struct fixture *f)
{
	btrfs_root_hint_end(&f->root);
	tlog_close(f->fs);
	free(f->alloc.pinned);
	free(f->alloc.free);
	free(f->model.v);
}

static u32 random_size(u32 nodesize)
{
	u32 r = rand() % 100;

	if (r < 5)
		return 0;
	if (r < 90)
		return rand() % 120;
	/* big items force splits that leave items alone in a leaf */
	return rand() % (btrfs_max_item_size(nodesize) / 2);
}

static void do_insert(struct fixture *f)
{
	struct model_item it = {
		.key = { rand() % 3000, (u8)(rand() % 4), rand() % 8 },
		.size = random_size(f->fs->nodesize),
		.fill = (u8)(rand() | 1),
	};
	struct btrfs_path path;
	size_t pos;
	int exists = model_find(&f->model, &it.key, &pos), ret;

	btrfs_init_path(&path);
	if (rand() % 2) {
		ret = btrfs_insert_empty_items(&f->trans, &f->root, &path, &it.key, &it.size, 1);
	} else {
		/* a lookup first, then the insert at the path it left */
		u64 searches = f->fs->write_searches;

		ret = btrfs_search_slot(&f->root, &it.key, &path);
		cr_assert_geq(ret, 0, "lookup failed: %d", ret);
		cr_assert_eq(ret == 0, exists, "lookup disagrees with the model");
		if (ret == 0) {
			btrfs_release_path(&path);
			return;
		}
		ret = btrfs_insert_empty_items_at(&f->trans, &f->root, &path, &it.key,
						  &it.size, 1);
		if (f->fs->write_searches == searches)
			f->inserts_in_place++;
		else
			f->inserts_searched++;
	}
	if (exists) {
		cr_assert_eq(ret, -EEXIST, "duplicate insert gave %d", ret);
	} else {
		cr_assert_eq(ret, 0, "insert failed: %d %s", ret, tlog_error_get());
		/* copy-on-write: only this transaction's blocks were changed */
		for (int level = 0; level <= f->root.level; level++)
			cr_assert(path.nodes[level]->dirty &&
				  btrfs_header_generation(eb_header(path.nodes[level])) ==
				  f->trans.transid, "insert changed a committed block at level %d",
				  level);
		memset(btrfs_item_ptr(path.nodes[0], path.slots[0]), it.fill, it.size);
		model_insert(&f->model, &it, pos);
	}
	btrfs_release_path(&path);
}

/*
 * A lookup, checked against the model: found or not, the item's size and
 * content, and for a missing key the neighbours around the slot.  With
 * the root's search hint on, most start in the leaf of the search before;
 * the hint must never lead elsewhere than a descent would.
 */
static void lookup_key(struct fixture *f, struct btrfs_key key)
{
	struct btrfs_path path;
	struct btrfs_key k;
	size_t pos;
	int exists, ret;

	exists = model_find(&f->model, &key, &pos);
	btrfs_init_path(&path);
	ret = btrfs_search_slot(&f->root, &key, &path);
	cr_assert_geq(ret, 0, "lookup failed: %d", ret);
	cr_assert_eq(ret == 0, exists, "lookup of (%llu %u %llu) disagrees with the model",
		     (unsigned long long)key.objectid, key.type, (unsigned long long)key.offset);
	if (exists) {
		cr_assert_eq(btrfs_item_size(path.nodes[0], path.slots[0]), f->model.v[pos].size);
		if (f->model.v[pos].size)
			cr_assert_eq(*(u8 *)btrfs_item_ptr(path.nodes[0], path.slots[0]),
				     f->model.v[pos].fill, "lookup found another item's data");
	} else {
		if (path.slots[0] < (int)btrfs_header_nritems_eb(path.nodes[0])) {
			btrfs_item_key_to_cpu(path.nodes[0], &k, path.slots[0]);
			cr_assert(pos < f->model.nr && !btrfs_comp_cpu_keys(&k, &f->model.v[pos].key),
				  "the slot of a missing key is not before its successor");
		}
		if (path.slots[0] > 0) {
			btrfs_item_key_to_cpu(path.nodes[0], &k, path.slots[0] - 1);
			cr_assert(pos > 0 && !btrfs_comp_cpu_keys(&k, &f->model.v[pos - 1].key),
				  "the slot of a missing key is not after its predecessor");
		}
	}
	btrfs_release_path(&path);
}

/* A lookup, then one of a key near it, as a writer's lookups go. */
static void do_lookup(struct fixture *f)
{
	struct btrfs_key key = { rand() % 3000, (u8)(rand() % 4), rand() % 8 };

	if (f->model.nr && rand() % 2)
		key = f->model.v[rand() % f->model.nr].key;
	lookup_key(f, key);
	key.type = (u8)(rand() % 4);
	key.offset = rand() % 8;
	lookup_key(f, key);
}

static void do_delete(struct fixture *f)
{
	size_t pos;
	int ret;

	if (!f->model.nr)
		return;
	pos = rand() % f->model.nr;
	ret = btrfs_delete_item(&f->trans, &f->root, &f->model.v[pos].key);
	cr_assert_eq(ret, 0, "delete failed: %d %s", ret, tlog_error_get());
	model_delete(&f->model, pos);
}

static void do_resize(struct fixture *f)
{
	struct btrfs_path path;
	struct model_item *it;
	u32 max = btrfs_max_item_size(f->fs->nodesize) / 2;
	int ret;

	if (!f->model.nr)
		return;
	it = &f->model.v[rand() % f->model.nr];
	btrfs_init_path(&path);
	if (rand() % 2 && it->size < max) {
		u32 diff = 1 + rand() % (max - it->size);

		ret = btrfs_search_slot_for_write(&f->trans, &f->root, &it->key, &path, diff);
		cr_assert_eq(ret, 0, "search to extend: %d %s", ret, tlog_error_get());
		cr_assert_eq(btrfs_extend_item(&f->trans, &path, diff), 0, "%s", tlog_error_get());
		/* the new bytes are zero; give them the item's fill */
		memset((u8 *)btrfs_item_ptr(path.nodes[0], path.slots[0]) + it->size, it->fill,
		       diff);
		it->size += diff;
	} else if (it->size > 0) {
		u32 new_size = rand() % it->size;

		ret = btrfs_search_slot_for_write(&f->trans, &f->root, &it->key, &path, 0);
		cr_assert_eq(ret, 0, "search to truncate: %d", ret);
		cr_assert_eq(btrfs_truncate_item(&f->trans, &path, new_size, rand() % 2), 0);
		it->size = new_size;
	}
	btrfs_release_path(&path);
}

static void random_run(u32 nodesize, unsigned int seed, int steps, int want_level)
{
	struct fixture f;
	int max_level = 0;
	size_t max_items = 0;
	u64 hits, misses;

	srand(seed);
	setup_fixture(&f, nodesize);
	/* searches start from the last one's path when it still leads there */
	cr_assert_eq(btrfs_root_hint_start(&f.root), 0);
	for (int step = 0; step < steps; step++) {
		int op = rand() % 100;
		/* grow first, then churn, then mostly shrink, to see merges and root shrinks */
		int insert_pct = step < steps / 3 ? 75 : step < 2 * steps / 3 ? 50 : 25;

		if (op < insert_pct)
			do_insert(&f);
		else if (op < insert_pct + 40)
			do_delete(&f);
		else
			do_resize(&f);
		do_lookup(&f);
		check_structure(&f.root, &f.model, &f.alloc);
		if (f.root.level > max_level)
			max_level = f.root.level;
		if (f.model.nr > max_items)
			max_items = f.model.nr;
		if (step % 97 == 0)
			check_against_model(&f.root, &f.model);
		if (step % 401 == 400)
			commit(&f.trans);
	}
	check_against_model(&f.root, &f.model);
	/* the run must have built a real tree, or it proved little */
	cr_assert_geq(max_level, want_level, "tree only reached level %d with %zu items",
		      max_level, max_items);
	/* both ways of inserting at a lookup's path were taken */
	cr_assert_gt(f.inserts_in_place, 100, "%d inserts in place", f.inserts_in_place);
	cr_assert_gt(f.inserts_searched, 100, "%d inserts searched again", f.inserts_searched);
	/* and searches both from the hint and from the root */
	btrfs_root_hint_stats(&f.root, &hits, &misses);
	cr_assert_gt(hits, (u64)steps / 10, "%llu searches from the hint", (unsigned long long)hits);
	cr_assert_gt(misses, (u64)steps / 10, "%llu searches past the hint",
		     (unsigned long long)misses);
	while (f.model.nr)
		do_delete(&f);
	check_structure(&f.root, &f.model, &f.alloc);
	cr_assert_eq(f.root.level, 0, "an emptied tree is a single leaf");
	teardown_fixture(&f);
}

Test(ctree_write, random_4k_nodes, .timeout = 120)
{
	random_run(4096, 1, 6000, 2);
}

Test(ctree_write, random_16k_nodes, .timeout = 120)
{
	random_run(16384, 2, 6000, 1);
}

Test(ctree_write, batch_insert_and_tall_tree, .timeout = 120)
{
	struct fixture f;
	u32 sizes[3] = { 100, 10, 0 };

	setup_fixture(&f, 4096);
	/* ascending batches of three: an inode with its ref and a dir entry */
	for (u64 ino = 256; ino < 256 + 4000; ino++) {
		struct btrfs_key keys[3] = {
			{ ino, BTRFS_INODE_ITEM_KEY, 0 },
			{ ino, BTRFS_INODE_REF_KEY, 256 },
			{ ino, BTRFS_XATTR_ITEM_KEY, 7 },
		};
		struct btrfs_path path;

		btrfs_init_path(&path);
		cr_assert_eq(btrfs_insert_empty_items(&f.trans, &f.root, &path, keys, sizes, 3), 0,
			     "%s", tlog_error_get());
		for (int i = 0; i < 3; i++) {
			struct model_item it = { keys[i], sizes[i], 0 };
			size_t pos;

			cr_assert_eq(model_find(&f.model, &keys[i], &pos), 0);
			model_insert(&f.model, &it, pos);
		}
		btrfs_release_path(&path);
		if (ino % 1000 == 0)
			commit(&f.trans);
	}
	check_structure(&f.root, &f.model, &f.alloc);
	check_against_model(&f.root, &f.model);
	cr_assert_geq(f.root.level, 2, "12000 items in 4K leaves make a tree of 3 levels");
	teardown_fixture(&f);
}

Test(ctree_write, cow_keeps_committed_blocks)
{
	struct fixture f;
	struct btrfs_key key = { 300, BTRFS_INODE_ITEM_KEY, 0 };
	u64 old_root;
	u32 size = 8;

	setup_fixture(&f, 4096);
	cr_assert_eq(btrfs_insert_item(&f.trans, &f.root, &key, "12345678", size), 0);
	commit(&f.trans);
	old_root = f.root.bytenr;
	key.objectid = 301;
	cr_assert_eq(btrfs_insert_item(&f.trans, &f.root, &key, "abcdefgh", size), 0);
	cr_assert_neq(f.root.bytenr, old_root, "the committed root was changed in place");
	cr_assert_eq(f.root.generation, f.trans.transid);
	cr_assert_eq(f.alloc.nr_pinned, 1, "the old root is pinned until the commit");
	cr_assert_eq(f.alloc.pinned[0], old_root);
	teardown_fixture(&f);
}

/*
 * Replay's order: inode items first, ascending, then each inode's ref and
 * inline extent after its item.  Each insert lands in a full leaf just
 * after what push_leaf_left can hand to the left neighbour; the new items
 * must then go at the end of that neighbour, not start a leaf of their
 * own, or one leaf in five stays nearly empty (a third more leaves).
 */
Test(ctree_write, inserts_after_each_item_pack_leaves)
{
	struct fixture f;
	const u64 first = 256, nr = 3000;
	const u32 inode_size = 160, sizes[2] = { 16, 351 };
	u64 items, blocks, bytes = 0, least;
	struct btrfs_path path;

	setup_fixture(&f, 4096);
	btrfs_init_path(&path);
	for (u64 ino = first; ino < first + nr; ino++) {
		struct btrfs_key key = { ino, BTRFS_INODE_ITEM_KEY, 0 };

		cr_assert_eq(btrfs_insert_empty_items(&f.trans, &f.root, &path, &key,
						      &inode_size, 1), 0, "%s", tlog_error_get());
		btrfs_release_path(&path);
		bytes += inode_size + sizeof(struct btrfs_item);
	}
	for (u64 ino = first; ino < first + nr; ino++) {
		struct btrfs_key keys[2] = {
			{ ino, BTRFS_INODE_REF_KEY, 256 },
			{ ino, BTRFS_EXTENT_DATA_KEY, 0 },
		};

		for (int i = 0; i < 2; i++) {
			cr_assert_eq(btrfs_insert_empty_items(&f.trans, &f.root, &path, &keys[i],
							      &sizes[i], 1), 0, "%s",
				     tlog_error_get());
			btrfs_release_path(&path);
			bytes += sizes[i] + sizeof(struct btrfs_item);
		}
	}
	cr_assert_eq(btrfs_check_tree_structure(&f.root, &items, &blocks), 0, "%s",
		     tlog_error_get());
	cr_assert_eq(items, 3 * nr);
	least = (bytes + btrfs_leaf_data_size(4096) - 1) / btrfs_leaf_data_size(4096);
	/* 509 blocks here (nodes included), as dense as the kernel's replay; 580 before */
	cr_assert_leq(blocks, least + least / 6, "%llu blocks for %llu leaves of items",
		      (unsigned long long)blocks, (unsigned long long)least);
	teardown_fixture(&f);
}
