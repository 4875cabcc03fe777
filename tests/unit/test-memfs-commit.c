// SPDX-License-Identifier: GPL-2.0-only
/*
 * Transaction commit on a memory device, against a model: random inserts,
 * deletes and rewrites of items in the fs tree, committed, the device
 * opened again, and exactly the model's items found; the generation
 * advanced and every superblock copy that fits written.  Then the same
 * commit with every one of its writes failed, and dropped, in turn: the
 * device must show the old state or the new one, nothing else.  Last, a
 * commit that would write an empty leaf below a node is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "errctx.h"
#include "mem-fs.h"
#include "transaction.h"

#define ITEM_TYPE	BTRFS_TEMPORARY_ITEM_KEY
#define MAX_ITEMS	2048

struct item {
	u64 objectid, offset;
	u32 size, fill;
};

struct model {
	struct item v[MAX_ITEMS];
	size_t nr;
};

static void fill_item(u8 *p, const struct item *it)
{
	for (u32 i = 0; i < it->size; i++)
		p[i] = (u8)(it->fill + i * 13);
}

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->objectid != y->objectid)
		return x->objectid < y->objectid ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static struct item *model_find(struct model *m, u64 objectid, u64 offset)
{
	struct item key = { objectid, offset, 0, 0 };

	return bsearch(&key, m->v, m->nr, sizeof(key), cmp_item);
}

/*
 * @nops random changes to the fs tree of @fs in one transaction, mirrored in
 * @m, then commit.  Returns the first error (the transaction aborted).
 */
static int random_trans(struct tlog_fs *fs, struct model *m, u64 seed, int nops)
{
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_trans *trans;
	u8 buf[512];
	u64 s = seed | 1;
	int err;

	err = tlog_trans_start(fs, &trans);
	if (err)
		return err;
	for (int i = 0; !err && i < nops; i++) {
		u32 op = memfs_rng(&s) % 10;

		if (op < 6 || m->nr < 8) {		/* insert a new item */
			struct item it = { 1000 + memfs_rng(&s) % 64, memfs_rng(&s) % 100000,
					   1 + memfs_rng(&s) % 400, memfs_rng(&s) };
			struct btrfs_key key = { it.objectid, ITEM_TYPE, it.offset };

			if (model_find(m, it.objectid, it.offset) || m->nr == MAX_ITEMS)
				continue;
			fill_item(buf, &it);
			err = btrfs_insert_item(trans, root, &key, buf, it.size);
			m->v[m->nr++] = it;
			qsort(m->v, m->nr, sizeof(*m->v), cmp_item);
		} else if (op < 8) {			/* delete one */
			size_t j = memfs_rng(&s) % m->nr;
			struct btrfs_key key = { m->v[j].objectid, ITEM_TYPE, m->v[j].offset };

			err = btrfs_delete_item(trans, root, &key);
			memmove(m->v + j, m->v + j + 1, (m->nr - j - 1) * sizeof(*m->v));
			m->nr--;
		} else {				/* rewrite one in place */
			struct item *it = &m->v[memfs_rng(&s) % m->nr];
			struct btrfs_key key = { it->objectid, ITEM_TYPE, it->offset };
			struct btrfs_path path;

			btrfs_init_path(&path);
			err = btrfs_search_slot_for_write(trans, root, &key, &path, 0);
			if (err == 0) {
				it->fill = memfs_rng(&s);
				fill_item(btrfs_item_ptr(path.nodes[0], path.slots[0]), it);
				btrfs_mark_buffer_dirty(fs, path.nodes[0]);
			} else if (err > 0) {
				err = -ENOENT;
			}
			btrfs_release_path(&path);
		}
	}
	if (err) {
		tlog_trans_abort(trans);
		return err;
	}
	return tlog_trans_commit(trans);
}

/* Whether the fs tree's test items are exactly @m's (asserting structure). */
static bool matches(struct tlog_fs *fs, const struct model *m, u64 seed)
{
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct btrfs_key min = { 0, ITEM_TYPE, 0 }, max = { (u64)-1, ITEM_TYPE, (u64)-1 };
	struct btrfs_tree_iter iter;
	u64 nr_items, nr_blocks;
	size_t j = 0;
	bool ok = true;
	u8 want[512];

	cr_assert_eq(btrfs_check_tree_structure(root, &nr_items, &nr_blocks), 0,
		     "seed %llu: %s", (unsigned long long)seed, tlog_error_get());
	btrfs_for_each_item(root, &iter, &min, &max) {
		if (iter.key.type != ITEM_TYPE)
			continue;
		if (!ok)
			continue;
		if (j == m->nr || iter.key.objectid != m->v[j].objectid ||
		    iter.key.offset != m->v[j].offset ||
		    btrfs_item_size(iter.leaf, iter.slot) != m->v[j].size) {
			ok = false;
			continue;
		}
		fill_item(want, &m->v[j]);
		if (memcmp(btrfs_item_ptr(iter.leaf, iter.slot), want, m->v[j].size))
			ok = false;
		j++;
	}
	cr_assert_eq(iter.ret, 1, "seed %llu: %s", (unsigned long long)seed, tlog_error_get());
	return ok && j == m->nr;
}

Test(memfs_commit, random_changes_survive_reopen)
{
	static struct model m;
	struct tlog_bdev *bdev = memfs_make();
	u64 seed = memfs_seed(), gen, ops = 0;
	struct tlog_fs *fs;

	m.nr = 0;
	fs = memfs_open(bdev, 0, 0);
	gen = fs->generation;
	tlog_close(fs);
	for (int round = 0; round < 8; round++) {
		int nops = 50 + round * 40;
		u64 w0 = bdev->nr_writes;

		fs = memfs_open(bdev, 0, 0);
		cr_assert(matches(fs, &m, seed), "seed %llu round %d: before", (unsigned long long)seed, round);
		cr_assert_eq(random_trans(fs, &m, seed + round, nops), 0, "seed %llu round %d: %s",
			     (unsigned long long)seed, round, tlog_error_get());
		tlog_close(fs);
		ops += nops;
		cr_assert_gt(bdev->nr_writes, w0, "the commit wrote nothing");

		fs = memfs_open(bdev, 0, 0);
		cr_assert_eq(fs->generation, gen + 1, "seed %llu round %d", (unsigned long long)seed, round);
		gen = fs->generation;
		cr_assert(matches(fs, &m, seed), "seed %llu round %d: %zu model items differ from the tree",
			  (unsigned long long)seed, round, m.nr);
		memfs_check_free_space_tree(fs);
		tlog_close(fs);
		/* every copy that fits on the device: 64 KiB and 64 MiB, not 256 GiB */
		cr_assert_eq(memfs_super_generation(bdev, 0), gen);
		cr_assert_eq(memfs_super_generation(bdev, 1), gen);
		cr_assert_eq(memfs_super_generation(bdev, 2), 0);
	}
	cr_assert_geq(m.nr, 200, "only %zu items: the test exercised too little", m.nr);
	cr_assert_eq(ops, 8 * 50 + 40 * 28);
	tlog_bdev_close(bdev);
}

/* ---- every write of a commit failed or dropped ---- */

#define BASE_OPS	150
#define FAULT_OPS	300

struct fault_ctx {
	struct model old, new, scratch;
	u64 seed;
};

/* A committed state to change: the old one. */
static struct tlog_bdev *fault_setup(void *arg)
{
	struct fault_ctx *c = arg;
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);

	c->old.nr = 0;
	cr_assert_eq(random_trans(fs, &c->old, c->seed, BASE_OPS), 0, "%s", tlog_error_get());
	tlog_close(fs);
	c->scratch = c->old;
	return bdev;
}

static int fault_change(struct tlog_fs *fs, void *arg)
{
	struct fault_ctx *c = arg;

	return random_trans(fs, &c->scratch, c->seed + 1, FAULT_OPS);
}

static void fault_check(struct tlog_fs *fs, void *arg, bool new_state, const char *where)
{
	struct fault_ctx *c = arg;

	if (!where)
		c->new = c->scratch;
	cr_assert(matches(fs, new_state ? &c->new : &c->old, c->seed), "%s: not the %s items",
		  where ? where : "clean run", new_state ? "new" : "old");
}

Test(memfs_commit, fault_at_every_write)
{
	static struct fault_ctx ctx;
	struct memfs_fault_case fc = { "commit", fault_setup, fault_change, fault_check, &ctx };
	struct memfs_fault_stats st;

	ctx.seed = memfs_seed();
	memfs_fault_sweep(&fc, &st);
	cr_assert_geq(st.writes, 10);
}

/* ---- a search that made room and then inserted nothing ---- */

/* Whether the root block of tree @objectid is an empty leaf. */
static bool root_is_empty_leaf(struct tlog_fs *fs, u64 objectid)
{
	struct btrfs_root *root = memfs_root(fs, objectid);
	struct extent_buffer *eb;
	bool empty;

	if (root->level != 0)
		return false;
	cr_assert_eq(read_tree_block(fs, root->bytenr, 0, root->generation, &eb), 0, "%s",
		     tlog_error_get());
	empty = btrfs_header_nritems_eb(eb) == 0;
	free_extent_buffer(eb);
	return empty;
}

/*
 * Break the promise of ins_len > 0 on purpose: room for a leaf's worth of
 * items past the last key splits off an empty leaf below a new node, and
 * nothing is inserted.  The commit must refuse before writing anything,
 * the device must still hold the previous commit exactly, and the next
 * transaction that keeps its promise must commit.  An empty root leaf, by
 * contrast, is valid and must commit.
 */
Test(memfs_commit, empty_leaf_below_a_node_is_refused)
{
	static struct model m;
	struct tlog_bdev *bdev = memfs_make();
	struct btrfs_key last = { (u64)-1, (u8)-1, (u64)-1 };
	u64 seed = memfs_seed(), gen, w0, nr_items, nr_blocks, leaf;
	struct btrfs_path path;
	struct tlog_trans *trans;
	struct btrfs_root *root;
	struct tlog_fs *fs;
	char want[64];
	int ret;

	m.nr = 0;
	fs = memfs_open(bdev, 0, 0);
	cr_assert_eq(random_trans(fs, &m, seed, 60), 0, "%s", tlog_error_get());
	tlog_close(fs);

	/* control: COWing a tree whose root is an empty leaf commits */
	fs = memfs_open(bdev, 0, 0);
	cr_assert(root_is_empty_leaf(fs, BTRFS_CSUM_TREE_OBJECTID),
		  "the csum tree of a fresh image was expected empty");
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, memfs_root(fs, BTRFS_CSUM_TREE_OBJECTID), &last,
					  &path, 0);
	btrfs_release_path(&path);
	cr_assert_eq(ret, 1, "%d %s", ret, tlog_error_get());
	cr_assert_eq(tlog_trans_commit(trans), 0, "an empty root leaf was refused: %s",
		     tlog_error_get());
	tlog_close(fs);

	fs = memfs_open(bdev, 0, 0);
	gen = fs->generation;
	cr_assert(root_is_empty_leaf(fs, BTRFS_CSUM_TREE_OBJECTID));
	root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, root, &last, &path,
					  (int)btrfs_leaf_data_size(fs->nodesize));
	cr_assert_eq(ret, 1, "%d %s", ret, tlog_error_get());
	cr_assert_not_null(path.nodes[1], "the search did not split the leaf");
	cr_assert_eq(btrfs_header_nritems_eb(path.nodes[0]), 0, "the room made is not an empty leaf");
	leaf = path.nodes[0]->start;
	btrfs_release_path(&path);
	/* the broken tree exists in memory: the structure check sees it too */
	cr_assert_eq(btrfs_check_tree_structure(root, &nr_items, &nr_blocks), -EUCLEAN);

	w0 = bdev->nr_writes;
	tlog_error_clear();
	ret = tlog_trans_commit(trans);
	cr_assert_eq(ret, -EUCLEAN, "the commit returned %d, not -EUCLEAN", ret);
	snprintf(want, sizeof(want), "tree 5: leaf %llu is empty", (unsigned long long)leaf);
	cr_assert_not_null(tlog_error_get());
	cr_assert_not_null(strstr(tlog_error_get(), want), "why: %s", tlog_error_get());
	cr_assert_eq(bdev->nr_writes, w0, "the refused commit wrote %llu blocks",
		     (unsigned long long)(bdev->nr_writes - w0));
	tlog_close(fs);

	fs = memfs_open(bdev, 0, 0);
	cr_assert_eq(fs->generation, gen, "the refused commit moved the generation");
	cr_assert(matches(fs, &m, seed), "the committed items changed");
	memfs_check_free_space_tree(fs);
	cr_assert_eq(random_trans(fs, &m, seed + 1, 40), 0, "after the refusal: %s",
		     tlog_error_get());
	tlog_close(fs);

	fs = memfs_open(bdev, 0, 0);
	cr_assert_eq(fs->generation, gen + 1);
	cr_assert(matches(fs, &m, seed + 1));
	memfs_check_free_space_tree(fs);
	tlog_close(fs);
	tlog_bdev_close(bdev);
}
