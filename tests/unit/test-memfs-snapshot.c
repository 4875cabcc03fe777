// SPDX-License-Identifier: GPL-2.0-only
/*
 * Copy-on-write of blocks a snapshot shares (backref.c).  A snapshot of
 * the fs tree is made as the kernel makes one (the source's root copied
 * into a block of the new tree, its children given one more reference,
 * last_snapshot set), then both trees are changed at random and file
 * ranges dropped in the source, over several commits.  After each the
 * device is opened again and checked against the models of both trees and
 * against the invariant of the extent tree: every tree block reachable
 * from a root has an extent item whose refs are the number of distinct
 * blocks (and roots) pointing at it, every data extent's refs the number
 * of file extent items in distinct leaves, and nothing else is allocated.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "errctx.h"
#include "file-extent.h"
#include "mem-fs.h"
#include "transaction.h"

#define SNAP_ID		256
#define ITEM_TYPE	BTRFS_TEMPORARY_ITEM_KEY
#define NR_FILES	40
#define FIRST_INO	300
#define MAX_ITEMS	4096

/* ---- the items of one tree ---- */

struct sitem {
	u64 objectid, offset;
	u32 size, fill;
};

struct smodel {
	struct sitem v[MAX_ITEMS];
	size_t nr;
};

static void fill(u8 *p, const struct sitem *it)
{
	for (u32 i = 0; i < it->size; i++)
		p[i] = (u8)(it->fill + i * 29);
}

static int cmp_sitem(const void *a, const void *b)
{
	const struct sitem *x = a, *y = b;

	if (x->objectid != y->objectid)
		return x->objectid < y->objectid ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* @n random inserts and deletes in @root, mirrored in @m. */
static void random_items(struct tlog_trans *trans, struct btrfs_root *root, struct smodel *m,
			 u64 *s, int n, bool inserts_only)
{
	u8 buf[400];

	for (int i = 0; i < n; i++) {
		if (inserts_only || m->nr < 16 || memfs_rng(s) % 3) {
			struct sitem it = { 1000 + memfs_rng(s) % 50, memfs_rng(s) % 100000,
					    1 + memfs_rng(s) % 300, memfs_rng(s) };
			struct btrfs_key key = { it.objectid, ITEM_TYPE, it.offset };

			if (bsearch(&it, m->v, m->nr, sizeof(it), cmp_sitem) || m->nr == MAX_ITEMS)
				continue;
			fill(buf, &it);
			cr_assert_eq(btrfs_insert_item(trans, root, &key, buf, it.size), 0, "%s",
				     tlog_error_get());
			m->v[m->nr++] = it;
			qsort(m->v, m->nr, sizeof(*m->v), cmp_sitem);
		} else {
			size_t j = memfs_rng(s) % m->nr;
			struct btrfs_key key = { m->v[j].objectid, ITEM_TYPE, m->v[j].offset };

			cr_assert_eq(btrfs_delete_item(trans, root, &key), 0, "%s", tlog_error_get());
			memmove(m->v + j, m->v + j + 1, (m->nr - j - 1) * sizeof(*m->v));
			m->nr--;
		}
	}
}

static void check_items(struct btrfs_root *root, const struct smodel *m, const char *what)
{
	struct btrfs_key min = { 0, ITEM_TYPE, 0 }, max = { (u64)-1, ITEM_TYPE, (u64)-1 };
	struct btrfs_tree_iter iter;
	size_t j = 0;
	u8 want[400];

	btrfs_for_each_item(root, &iter, &min, &max) {
		if (iter.key.type != ITEM_TYPE)
			continue;
		cr_assert_lt(j, m->nr, "%s: more items than the model", what);
		cr_assert_eq(iter.key.objectid, m->v[j].objectid, "%s item %zu", what, j);
		cr_assert_eq(iter.key.offset, m->v[j].offset, "%s item %zu", what, j);
		cr_assert_eq(btrfs_item_size(iter.leaf, iter.slot), m->v[j].size);
		fill(want, &m->v[j]);
		cr_assert_eq(memcmp(btrfs_item_ptr(iter.leaf, iter.slot), want, m->v[j].size), 0,
			     "%s item %zu: other bytes", what, j);
		j++;
	}
	cr_assert_eq(iter.ret, 1, "%s", tlog_error_get());
	cr_assert_eq(j, m->nr, "%s: %zu items, model %zu", what, j, m->nr);
}

/* ---- counting references from the trees themselves ---- */

struct count {
	u64 key, len;	/* bytenr; data extents also by length */
	u32 n;
	bool data;
};

struct counts {
	struct count *v;
	size_t cap, used;
};

static struct count *count_of(struct counts *c, u64 bytenr, bool data)
{
	size_t h = (bytenr / 4096 * 0x9E3779B97F4A7C15ULL) % c->cap;

	while (c->v[h].n && (c->v[h].key != bytenr || c->v[h].data != data))
		h = (h + 1) % c->cap;
	if (!c->v[h].n) {
		cr_assert_lt(++c->used, c->cap / 2);
		c->v[h].key = bytenr;
		c->v[h].data = data;
	}
	return &c->v[h];
}

/* One more pointer to @bytenr; walk it the first time. */
static void walk(struct tlog_fs *fs, struct counts *c, u64 bytenr, int level, u64 gen)
{
	struct count *k = count_of(c, bytenr, false);
	struct extent_buffer *eb;

	if (k->n++)
		return;		/* shared: its children are counted once */
	cr_assert_eq(read_tree_block(fs, bytenr, level, gen, &eb), 0, "%s", tlog_error_get());
	for (u32 i = 0; i < btrfs_header_nritems_eb(eb); i++) {
		if (level > 0) {
			walk(fs, c, btrfs_node_blockptr(eb, i), level - 1, btrfs_node_ptr_generation(eb, i));
			continue;
		}
		struct btrfs_key key;

		btrfs_item_key_to_cpu(eb, &key, i);
		if (key.type == BTRFS_EXTENT_DATA_KEY) {
			struct btrfs_file_extent_item *fi = btrfs_item_ptr(eb, i);

			if (btrfs_file_extent_item_type(fi) != BTRFS_FILE_EXTENT_INLINE &&
			    btrfs_file_extent_item_disk_bytenr(fi)) {
				struct count *d = count_of(c, btrfs_file_extent_item_disk_bytenr(fi), true);

				d->len = btrfs_file_extent_item_disk_num_bytes(fi);
				d->n++;
			}
		}
	}
	free_extent_buffer(eb);
}

struct ref_stats {
	u64 tree_blocks, data_extents, full_backref, shared_blocks;
};

static void check_refs(struct tlog_fs *fs, struct ref_stats *st)
{
	struct btrfs_key min = { 0, 0, 0 }, max = { (u64)-1, (u8)-1, (u64)-1 };
	struct counts c = { .cap = 1 << 16 };
	struct btrfs_tree_iter iter;
	struct btrfs_root *eroot;
	u64 seen_blocks = 0, seen_data = 0, want_blocks = 0, want_data = 0;

	c.v = calloc(c.cap, sizeof(*c.v));
	cr_assert_not_null(c.v);
	walk(fs, &c, fs->tree_root->bytenr, fs->tree_root->level, 0);
	walk(fs, &c, fs->chunk_root->bytenr, fs->chunk_root->level, 0);
	btrfs_for_each_item(fs->tree_root, &iter, &min, &max) {
		struct btrfs_root_item *ri = btrfs_item_ptr(iter.leaf, iter.slot);

		if (iter.key.type != BTRFS_ROOT_ITEM_KEY)
			continue;
		walk(fs, &c, btrfs_root_item_bytenr(ri), btrfs_root_item_level(ri),
		     btrfs_root_item_generation(ri));
	}
	cr_assert_eq(iter.ret, 1, "%s", tlog_error_get());

	eroot = memfs_root(fs, BTRFS_EXTENT_TREE_OBJECTID);
	btrfs_for_each_item(eroot, &iter, &min, &max) {
		struct btrfs_extent_item *ei = btrfs_item_ptr(iter.leaf, iter.slot);
		bool data;
		struct count *k;

		if (iter.key.type != BTRFS_METADATA_ITEM_KEY && iter.key.type != BTRFS_EXTENT_ITEM_KEY)
			continue;
		data = btrfs_extent_item_flags(ei) & BTRFS_EXTENT_FLAG_DATA;
		k = count_of(&c, iter.key.objectid, data);
		cr_assert_neq(k->n, 0, "%s extent %llu is allocated but nothing points at it",
			      data ? "data" : "tree block", (unsigned long long)iter.key.objectid);
		cr_assert_eq(btrfs_extent_item_refs(ei), k->n, "%s extent %llu: refs %llu, pointed at %u times",
			     data ? "data" : "tree block", (unsigned long long)iter.key.objectid,
			     (unsigned long long)btrfs_extent_item_refs(ei), k->n);
		if (data) {
			cr_assert_eq(iter.key.offset, k->len);
			seen_data++;
		} else {
			seen_blocks++;
			if (btrfs_extent_item_flags(ei) & BTRFS_BLOCK_FLAG_FULL_BACKREF)
				st->full_backref++;
			if (k->n > 1)
				st->shared_blocks++;
		}
	}
	cr_assert_eq(iter.ret, 1, "%s", tlog_error_get());
	for (size_t i = 0; i < c.cap; i++)
		if (c.v[i].n && c.v[i].data)
			want_data++;
		else if (c.v[i].n)
			want_blocks++;
	cr_assert_eq(seen_blocks, want_blocks, "%llu tree blocks reachable, %llu with extent items",
		     (unsigned long long)want_blocks, (unsigned long long)seen_blocks);
	cr_assert_eq(seen_data, want_data);
	st->tree_blocks = seen_blocks;
	st->data_extents = seen_data;
	free(c.v);
}

/* ---- the snapshot, as the kernel's create_snapshot() makes it ---- */

static void make_snapshot(struct tlog_fs *fs)
{
	struct btrfs_root *src = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct btrfs_root fake = { .fs = fs, .root_key = { SNAP_ID, BTRFS_ROOT_ITEM_KEY, 0 } };
	struct btrfs_root *eroot = memfs_root(fs, BTRFS_EXTENT_TREE_OBJECTID);
	struct btrfs_key key = { 0, 0, 0 };
	struct btrfs_root_item ri;
	struct tlog_trans *trans;
	struct extent_buffer *old, *eb;
	struct btrfs_path path;
	u64 bytenr;
	int level;

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	/*
	 * The source's committed root is copied (its children all have their
	 * extent items); the source is marked snapshotted in its root item.
	 */
	btrfs_init_path(&path);
	cr_assert_eq(btrfs_search_slot_for_write(trans, fs->tree_root, &src->root_key, &path, 0), 0);
	btrfs_set_root_item_last_snapshot(&src->root_item, trans->transid);
	btrfs_set_root_item_last_snapshot(btrfs_item_ptr(path.nodes[0], path.slots[0]),
					  trans->transid);
	btrfs_mark_buffer_dirty(fs, path.nodes[0]);
	btrfs_release_path(&path);
	level = src->level;
	cr_assert_geq(level, 1, "the tree must have nodes to share");
	cr_assert_eq(read_tree_block(fs, src->bytenr, level, 0, &old), 0);

	cr_assert_eq(trans->ops->alloc_tree_block(trans, &fake, level, &bytenr), 0);
	eb = btrfs_new_tree_block(fs, bytenr, NULL);
	cr_assert_not_null(eb);
	memcpy(eb->data, old->data, fs->nodesize);
	btrfs_set_header_bytenr(eb_header(eb), bytenr);
	btrfs_set_header_owner(eb_header(eb), SNAP_ID);
	btrfs_set_header_generation(eb_header(eb), trans->transid);
	btrfs_mark_buffer_dirty(fs, eb);
	/* its children: one more (normal) reference, from the snapshot */
	for (u32 i = 0; i < btrfs_header_nritems_eb(eb); i++) {
		u64 child = btrfs_node_blockptr(eb, i);
		struct btrfs_key ekey = btrfs_tree_block_extent_key(fs, child, level - 1);
		struct btrfs_key rkey = { child, BTRFS_TREE_BLOCK_REF_KEY, SNAP_ID };
		struct btrfs_extent_item *ei;

		cr_assert_eq(btrfs_search_slot_for_write(trans, eroot, &ekey, &path, 0), 0);
		ei = btrfs_item_ptr(path.nodes[0], path.slots[0]);
		btrfs_set_extent_item_refs(ei, btrfs_extent_item_refs(ei) + 1);
		btrfs_release_path(&path);
		cr_assert_eq(btrfs_insert_item(trans, eroot, &rkey, NULL, 0), 0, "%s",
			     tlog_error_get());
	}
	free_extent_buffer(old);
	free_extent_buffer(eb);

	ri = src->root_item;
	btrfs_set_root_item_bytenr(&ri, bytenr);
	btrfs_set_root_item_level(&ri, level);
	btrfs_set_root_item_generation(&ri, trans->transid);
	btrfs_set_root_item_generation_v2(&ri, trans->transid);
	btrfs_set_root_item_refs(&ri, 1);
	memset(ri.uuid, 0x56, sizeof(ri.uuid));
	key = (struct btrfs_key){ SNAP_ID, BTRFS_ROOT_ITEM_KEY, 0 };
	cr_assert_eq(btrfs_insert_item(trans, fs->tree_root, &key, &ri, sizeof(ri)), 0, "%s",
		     tlog_error_get());
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
}

/* The file extent items of tree @id, as bytes, to see that they stay. */
static size_t file_extents(struct tlog_fs *fs, u64 id, u8 *out, size_t cap)
{
	struct btrfs_root *root = memfs_root(fs, id);
	struct btrfs_key min = { FIRST_INO, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_key max = { FIRST_INO + NR_FILES, BTRFS_EXTENT_DATA_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	size_t n = 0;

	btrfs_for_each_item(root, &iter, &min, &max) {
		struct btrfs_file_extent_item *fi = btrfs_item_ptr(iter.leaf, iter.slot);

		if (iter.key.type != BTRFS_EXTENT_DATA_KEY)
			continue;
		cr_assert_leq(n + sizeof(iter.key) + 24, cap);
		memcpy(out + n, &iter.key, sizeof(iter.key));
		n += sizeof(iter.key);
		memcpy(out + n, &fi->disk_bytenr, 24);	/* disk_bytenr, disk_num_bytes, offset */
		n += 24;
	}
	cr_assert_eq(iter.ret, 1, "%s", tlog_error_get());
	return n;
}

Test(memfs_snapshot, cow_of_shared_blocks_keeps_refs_exact)
{
	static struct smodel src, snap;
	static u8 snap_fe[1 << 20], now_fe[1 << 20];
	/* small blocks: a tree of three levels from a few thousand items */
	struct tlog_bdev *bdev = memfs_make_nodesize(4096);
	u64 seed = memfs_seed(), s = seed | 1;
	struct ref_stats st = { 0 };
	u64 full_backref_max = 0, dropped = 0;
	struct tlog_trans *trans;
	struct btrfs_root *root;
	struct tlog_fs *fs;
	size_t fe_len;

	/* a tree with nodes, files with data */
	src.nr = 0;
	fs = memfs_open(bdev, 0, 0);
	root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	for (int i = 0; i < NR_FILES; i++) {
		u64 bytenr, len = (u64)(4 + i % 5) * fs->sectorsize;

		cr_assert_eq(memfs_create_inode(trans, root, FIRST_INO + i, 2 * len, 2 * len), 0);
		cr_assert_eq(memfs_write_extent(trans, root, FIRST_INO + i, 0, len, i, &bytenr), 0);
		cr_assert_eq(memfs_write_extent(trans, root, FIRST_INO + i, len, len, i + 99, &bytenr), 0);
	}
	random_items(trans, root, &src, &s, 3000, true);
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
	check_refs(fs, &st);
	tlog_close(fs);

	fs = memfs_open(bdev, 0, 0);
	make_snapshot(fs);
	tlog_close(fs);
	snap = src;
	fs = memfs_open(bdev, 0, 0);
	check_items(memfs_root(fs, SNAP_ID), &snap, "snapshot");
	check_items(memfs_root(fs, BTRFS_FS_TREE_OBJECTID), &src, "source");
	check_refs(fs, &st);
	cr_assert_geq(st.shared_blocks, 2, "the snapshot shares no blocks");
	cr_assert_geq(memfs_root(fs, SNAP_ID)->level, 2);
	fe_len = file_extents(fs, SNAP_ID, snap_fe, sizeof(snap_fe));
	cr_assert_gt(fe_len, 0);
	tlog_close(fs);

	for (int round = 0; round < 5; round++) {
		fs = memfs_open(bdev, 0, 0);
		cr_assert_eq(tlog_trans_start(fs, &trans), 0);
		root = memfs_root(fs, round % 2 ? SNAP_ID : BTRFS_FS_TREE_OBJECTID);
		random_items(trans, root, round % 2 ? &snap : &src, &s, 150, false);
		root = memfs_root(fs, round % 2 ? BTRFS_FS_TREE_OBJECTID : SNAP_ID);
		random_items(trans, root, round % 2 ? &src : &snap, &s, 40, false);
		/*
		 * Drop data in the first half of the source's files; from round 2
		 * on also in the second half of the snapshot's, whose leaves the
		 * source has not copied (they are shared with normal refs).
		 */
		for (int k = 0; k < 6 + (round >= 2) * 6; k++) {
			u64 ino = FIRST_INO + memfs_rng(&s) % (NR_FILES / 2), found;
			u64 start = (u64)(memfs_rng(&s) % 8) * fs->sectorsize;

			root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
			if (k >= 6) {
				root = memfs_root(fs, SNAP_ID);
				ino += NR_FILES / 2;
			}
			cr_assert_eq(btrfs_drop_file_extents(trans, root, ino, start,
							     start + 3 * fs->sectorsize, &found),
				     0, "seed %llu round %d: %s", (unsigned long long)seed, round,
				     tlog_error_get());
			dropped += found;
		}
		cr_assert_eq(tlog_trans_commit(trans), 0, "seed %llu round %d: %s",
			     (unsigned long long)seed, round, tlog_error_get());
		tlog_close(fs);

		fs = memfs_open(bdev, 0, 0);
		check_items(memfs_root(fs, BTRFS_FS_TREE_OBJECTID), &src, "source");
		check_items(memfs_root(fs, SNAP_ID), &snap, "snapshot");
		check_refs(fs, &st);
		if (st.full_backref > full_backref_max)
			full_backref_max = st.full_backref;
		if (round < 2) {
			cr_assert_eq(file_extents(fs, SNAP_ID, now_fe, sizeof(now_fe)), fe_len);
			cr_assert_eq(memcmp(now_fe, snap_fe, fe_len), 0,
				     "seed %llu round %d: the snapshot's files changed",
				     (unsigned long long)seed, round);
		}
		memfs_check_free_space_tree(fs);
		tlog_close(fs);
		st.full_backref = 0;
	}
	cr_log_info("snapshot: %llu tree blocks, %llu data extents, up to %llu FULL_BACKREF blocks, %llu bytes dropped",
		    (unsigned long long)st.tree_blocks, (unsigned long long)st.data_extents,
		    (unsigned long long)full_backref_max, (unsigned long long)dropped);
	cr_assert_gt(full_backref_max, 1, "no shared block was copied away from its owner");
	cr_assert_gt(dropped, 0);
	tlog_bdev_close(bdev);
}
