// SPDX-License-Identifier: GPL-2.0-only
/*
 * Data extents on a memory device, against a model: files written,
 * ranges shared into other files (reflink: one more reference to the
 * extent), ranges dropped (cut, split, removed).  After each commit the
 * device is opened again and the file extent items, the references of
 * every extent in the extent tree, the free space tree and the space of
 * freed extents are compared with the model.  Then every write of such a
 * transaction is failed, and dropped, in turn.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "backref.h"
#include "errctx.h"
#include "file-extent.h"
#include "file-item.h"
#include "mem-fs.h"
#include "transaction.h"

#define NR_INODES	6
#define FIRST_INO	300
#define FILE_SECTORS	96
#define MAX_EXTENTS	1024
#define MAX_ITEMS	1024

struct dext {
	u64 bytenr, len;
};

struct fitem {
	u64 ino, file_off, num, ext_off;
	int ext;
};

struct dmodel {
	struct dext ext[MAX_EXTENTS];
	int nr_ext;
	struct fitem it[MAX_ITEMS];
	int nr_it;
	/* what was exercised */
	u64 writes, reflinks, drops, splits, frees, bytes_found;
};

static int refs_of(const struct dmodel *m, int ext)
{
	int n = 0;

	for (int i = 0; i < m->nr_it; i++)
		n += m->it[i].ext == ext;
	return n;
}

static void add_item(struct dmodel *m, struct fitem it)
{
	cr_assert_lt(m->nr_it, MAX_ITEMS);
	m->it[m->nr_it++] = it;
}

/* Drop [s, e) of @ino in the model; the bytes it had mapped. */
static u64 model_drop(struct dmodel *m, u64 ino, u64 s, u64 e)
{
	u64 found = 0;
	int n = m->nr_it;

	for (int i = 0; i < n; i++) {
		struct fitem *it = &m->it[i];
		u64 a = it->file_off, b = a + it->num;

		if (it->ino != ino || b <= s || a >= e)
			continue;
		if (s <= a && b <= e) {
			found += it->num;
			it->ino = 0;		/* removed below */
		} else if (a < s && b > e) {
			struct fitem right = *it;

			right.file_off = e;
			right.ext_off = it->ext_off + (e - a);
			right.num = b - e;
			it->num = s - a;
			found += e - s;
			add_item(m, right);
			m->splits++;
			it = &m->it[i];
		} else if (a < s) {
			found += b - s;
			it->num = s - a;
		} else {
			found += e - a;
			it->ext_off += e - a;
			it->num = b - e;
			it->file_off = e;
		}
	}
	for (int i = 0; i < m->nr_it;) {
		if (m->it[i].ino == 0)
			m->it[i] = m->it[--m->nr_it];
		else
			i++;
	}
	return found;
}

static int drop_range(struct tlog_trans *trans, struct btrfs_root *root, struct dmodel *m,
		      u64 ino, u64 s, u64 e)
{
	int refs_before[MAX_EXTENTS];
	u64 found = 0, want;
	int err;

	for (int x = 0; x < m->nr_ext; x++)
		refs_before[x] = refs_of(m, x);
	err = btrfs_drop_file_extents(trans, root, ino, s, e, &found);
	if (err)
		return err;
	want = model_drop(m, ino, s, e);
	cr_assert_eq(found, want, "drop %llu [%llu, %llu): %llu bytes found, model %llu",
		     (unsigned long long)ino, (unsigned long long)s, (unsigned long long)e,
		     (unsigned long long)found, (unsigned long long)want);
	m->bytes_found += found;
	m->drops++;
	for (int x = 0; x < m->nr_ext; x++)
		if (refs_before[x] && !refs_of(m, x))
			m->frees++;
	return 0;
}

/* One transaction of @nops random writes, reflinks and drops, then commit. */
static int data_trans(struct tlog_fs *fs, struct dmodel *m, u64 seed, int nops, bool create)
{
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	u32 ss = fs->sectorsize;
	struct tlog_trans *trans;
	u64 s = seed | 1;
	int err;

	err = tlog_trans_start(fs, &trans);
	for (int i = 0; create && !err && i < NR_INODES; i++)
		err = memfs_create_inode(trans, root, FIRST_INO + i, (u64)FILE_SECTORS * ss, 0);
	for (int i = 0; !err && i < nops; i++) {
		u32 op = memfs_rng(&s) % 10;
		u64 ino = FIRST_INO + memfs_rng(&s) % NR_INODES;
		u64 off = (u64)(memfs_rng(&s) % FILE_SECTORS) * ss;
		u64 len = (u64)(1 + memfs_rng(&s) % 12) * ss;

		if (op < 4 || m->nr_it == 0) {			/* write new data */
			u64 bytenr;

			err = drop_range(trans, root, m, ino, off, off + len);
			if (!err)
				err = memfs_write_extent(trans, root, ino, off, len, (u32)s, &bytenr);
			if (err)
				break;
			cr_assert_lt(m->nr_ext, MAX_EXTENTS);
			m->ext[m->nr_ext] = (struct dext){ bytenr, len };
			add_item(m, (struct fitem){ ino, off, len, 0, m->nr_ext++ });
			m->writes++;
		} else if (op < 7) {				/* reflink part of an item */
			struct fitem src = m->it[memfs_rng(&s) % m->nr_it];
			u64 cut = (u64)(memfs_rng(&s) % (src.num / ss)) * ss;
			const struct dext *x = &m->ext[src.ext];

			src.ext_off += cut;
			src.num -= cut;
			if (src.num > len)
				src.num = len;
			err = drop_range(trans, root, m, ino, off, off + src.num);
			if (err)
				break;
			if (!refs_of(m, src.ext))
				continue;	/* the drop freed it */
			err = btrfs_add_data_ref(trans, x->bytenr, x->len, root->root_key.objectid,
						 ino, off - src.ext_off);
			if (!err)
				err = memfs_insert_file_extent(trans, root, ino, off, x->bytenr, x->len,
							       src.ext_off, src.num);
			src.ino = ino;
			src.file_off = off;
			add_item(m, src);
			m->reflinks++;
		} else {					/* drop a range */
			u64 end = memfs_rng(&s) % 8 == 0 ? (u64)-1 : off + len;

			err = drop_range(trans, root, m, ino, off, end);
		}
	}
	if (err) {
		tlog_trans_abort(trans);
		return err;
	}
	return tlog_trans_commit(trans);
}

static int cmp_fitem(const void *a, const void *b)
{
	const struct fitem *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->file_off < y->file_off ? -1 : x->file_off > y->file_off;
}

/* Whether the device shows exactly @m: file extent items and extent refs. */
static bool data_matches(struct tlog_fs *fs, struct dmodel *m, u64 seed, int *freed_checked)
{
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct btrfs_key min = { FIRST_INO, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_key max = { FIRST_INO + NR_INODES, BTRFS_EXTENT_DATA_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	struct fitem sorted[MAX_ITEMS];
	int j = 0;
	bool ok = true;

	memcpy(sorted, m->it, m->nr_it * sizeof(*sorted));
	qsort(sorted, m->nr_it, sizeof(*sorted), cmp_fitem);
	btrfs_for_each_item(root, &iter, &min, &max) {
		struct btrfs_file_extent_item *fi = btrfs_item_ptr(iter.leaf, iter.slot);
		const struct fitem *w = &sorted[j];

		if (iter.key.type != BTRFS_EXTENT_DATA_KEY || !ok)
			continue;
		if (j == m->nr_it || iter.key.objectid != w->ino || iter.key.offset != w->file_off ||
		    btrfs_file_extent_item_disk_bytenr(fi) != m->ext[w->ext].bytenr ||
		    btrfs_file_extent_item_offset(fi) != w->ext_off ||
		    btrfs_file_extent_item_num_bytes(fi) != w->num) {
			cr_log_error("seed %llu: item %d (%llu, %llu) differs from the model",
				     (unsigned long long)seed, j, (unsigned long long)iter.key.objectid,
				     (unsigned long long)iter.key.offset);
			ok = false;
			continue;
		}
		j++;
	}
	cr_assert_eq(iter.ret, 1, "seed %llu: %s", (unsigned long long)seed, tlog_error_get());
	if (!ok || j != m->nr_it)
		return false;
	for (int x = 0; x < m->nr_ext; x++) {
		s64 refs;
		bool reused = false;

		/* a freed extent's space may hold a newer extent */
		for (int y = 0; !refs_of(m, x) && y < m->nr_ext; y++)
			if (y != x && refs_of(m, y) &&
			    m->ext[y].bytenr < m->ext[x].bytenr + m->ext[x].len &&
			    m->ext[x].bytenr < m->ext[y].bytenr + m->ext[y].len)
				reused = true;
		if (reused)
			continue;
		refs = memfs_extent_refs(fs, m->ext[x].bytenr, m->ext[x].len);

		cr_assert_geq(refs, 0, "%s", tlog_error_get());
		if (refs != refs_of(m, x)) {
			cr_log_error("seed %llu: extent %llu: %lld refs, model %d",
				     (unsigned long long)seed, (unsigned long long)m->ext[x].bytenr,
				     (long long)refs, refs_of(m, x));
			return false;
		}
		/* checksums live as long as the extent */
		cr_assert_eq(memfs_csum_bytes(fs, m->ext[x].bytenr, m->ext[x].len),
			     refs ? m->ext[x].len : 0, "seed %llu: extent %llu+%llu, %lld refs",
			     (unsigned long long)seed, (unsigned long long)m->ext[x].bytenr,
			     (unsigned long long)m->ext[x].len, (long long)refs);
		if (refs == 0 && freed_checked) {
			/* its space is back in the free space tree */
			cr_assert(memfs_fst_range_free(fs, m->ext[x].bytenr, m->ext[x].len),
				  "seed %llu: freed extent %llu+%llu is not free space",
				  (unsigned long long)seed, (unsigned long long)m->ext[x].bytenr,
				  (unsigned long long)m->ext[x].len);
			(*freed_checked)++;
		}
	}
	memfs_check_free_space_tree(fs);
	return true;
}

Test(memfs_data, refs_and_free_space_follow_the_model)
{
	static struct dmodel m;
	struct tlog_bdev *bdev = memfs_make();
	u64 seed = memfs_seed();
	int freed_checked = 0;
	struct tlog_fs *fs;

	memset(&m, 0, sizeof(m));
	for (int round = 0; round < 6; round++) {
		fs = memfs_open(bdev, 0, 0);
		cr_assert_eq(data_trans(fs, &m, seed + round, 60, round == 0), 0,
			     "seed %llu round %d: %s", (unsigned long long)seed, round,
			     tlog_error_get());
		tlog_close(fs);
		fs = memfs_open(bdev, 0, 0);
		cr_assert(data_matches(fs, &m, seed, &freed_checked), "seed %llu round %d",
			  (unsigned long long)seed, round);
		tlog_close(fs);
	}
	cr_log_info("data: %llu writes, %llu reflinks, %llu drops (%llu splits), %llu extents freed, %d checked free",
		    (unsigned long long)m.writes, (unsigned long long)m.reflinks,
		    (unsigned long long)m.drops, (unsigned long long)m.splits,
		    (unsigned long long)m.frees, freed_checked);
	cr_assert_geq(m.writes, 50);
	cr_assert_geq(m.reflinks, 30);
	cr_assert_geq(m.splits, 5);
	cr_assert_geq(m.frees, 20);
	cr_assert_geq(freed_checked, 10);
	/* some extent is shared by several items */
	int most = 0;

	for (int x = 0; x < m.nr_ext; x++)
		if (refs_of(&m, x) > most)
			most = refs_of(&m, x);
	cr_assert_geq(most, 3);
	tlog_bdev_close(bdev);
}

struct fault_ctx {
	struct dmodel old, new, scratch;
	u64 seed;
};

static struct tlog_bdev *fault_setup(void *arg)
{
	struct fault_ctx *c = arg;
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);

	memset(&c->old, 0, sizeof(c->old));
	cr_assert_eq(data_trans(fs, &c->old, c->seed, 40, true), 0, "%s", tlog_error_get());
	tlog_close(fs);
	c->scratch = c->old;
	return bdev;
}

static int fault_change(struct tlog_fs *fs, void *arg)
{
	struct fault_ctx *c = arg;

	return data_trans(fs, &c->scratch, c->seed + 7, 30, false);
}

static void fault_check(struct tlog_fs *fs, void *arg, bool new_state, const char *where)
{
	struct fault_ctx *c = arg;

	if (!where)
		c->new = c->scratch;
	cr_assert(data_matches(fs, new_state ? &c->new : &c->old, c->seed, NULL),
		  "%s: not the %s data", where ? where : "clean run", new_state ? "new" : "old");
}

Test(memfs_data, fault_at_every_write)
{
	static struct fault_ctx ctx;
	struct memfs_fault_case fc = { "data commit", fault_setup, fault_change, fault_check, &ctx };
	struct memfs_fault_stats st;

	ctx.seed = memfs_seed();
	memfs_fault_sweep(&fc, &st);
	cr_assert_geq(st.writes, 10);
}

/* Inode A with an extent of @len bytes, B sharing all of it; committed. */
static u64 shared_pair(struct tlog_bdev *bdev, u64 len)
{
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_trans *trans;
	u64 bytenr;

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(memfs_create_inode(trans, root, FIRST_INO, len, len), 0);
	cr_assert_eq(memfs_create_inode(trans, root, FIRST_INO + 1, len, len), 0);
	cr_assert_eq(memfs_write_extent(trans, root, FIRST_INO, 0, len, 3, &bytenr), 0);
	cr_assert_eq(btrfs_add_data_ref(trans, bytenr, len, root->root_key.objectid,
					FIRST_INO + 1, 0), 0);
	cr_assert_eq(memfs_insert_file_extent(trans, root, FIRST_INO + 1, 0, bytenr, len, 0, len), 0);
	cr_assert_eq(tlog_trans_commit(trans), 0);
	tlog_close(fs);
	return bytenr;
}

/*
 * A reflink outlives the file the extent was written for: the inline
 * reference goes first, and the last one left is keyed.  Dropping it must
 * free the extent (it once failed with "its only reference is not").
 */
Test(memfs_data, last_reference_keyed_frees_the_extent)
{
	struct tlog_bdev *bdev = memfs_make();
	u64 len = 8 * 4096, bytenr = shared_pair(bdev, len), found;
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct btrfs_root *root;
	struct tlog_trans *trans;

	cr_assert_eq(fs->sectorsize, 4096);
	root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(memfs_extent_refs(fs, bytenr, len), 2);
	cr_assert_not(memfs_fst_range_free(fs, bytenr, len));
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(btrfs_drop_file_extents(trans, root, FIRST_INO, 0, (u64)-1, &found), 0);
	cr_assert_eq(found, len);
	cr_assert_eq(btrfs_drop_file_extents(trans, root, FIRST_INO + 1, 0, (u64)-1, &found), 0,
		     "%s", tlog_error_get());
	cr_assert_eq(found, len);
	cr_assert_eq(tlog_trans_commit(trans), 0);
	tlog_close(fs);

	fs = memfs_open(bdev, 0, 0);
	cr_assert_eq(memfs_extent_refs(fs, bytenr, len), 0);
	cr_assert(memfs_fst_range_free(fs, bytenr, len));
	memfs_check_free_space_tree(fs);
	tlog_close(fs);
	tlog_bdev_close(bdev);
}

/*
 * Drops on the device, each committed and the device opened again: a
 * split in the middle, a cut head, a cut tail, the rest, then the last
 * reference (a reflink of the whole extent) with the extent, its checksums
 * and its space.
 */
Test(memfs_data, drops_commit_and_reopen)
{
	static struct dmodel m;
	struct tlog_bdev *bdev = memfs_make();
	u64 ss = 4096, len = 16 * ss, bytenr = shared_pair(bdev, len);
	struct tlog_fs *fs;
	struct btrfs_root *root;
	struct tlog_trans *trans;
	static const struct {
		u64 ino, start, end, found;
		int refs, items;
	} steps[] = {
		{ FIRST_INO, 4, 8, 4, 3, 3 },		/* split: A twice, B */
		{ FIRST_INO, 0, 2, 2, 3, 3 },		/* head */
		{ FIRST_INO, 12, (u64)-1, 4, 3, 3 },	/* tail, to the end */
		{ FIRST_INO, 0, (u64)-1, 6, 1, 1 },	/* A's rest */
		{ FIRST_INO + 1, 0, (u64)-1, 16, 0, 0 },	/* B: the last reference */
	};
	int freed_checked = 0;

	memset(&m, 0, sizeof(m));
	m.ext[0] = (struct dext){ bytenr, len };
	m.nr_ext = 1;
	add_item(&m, (struct fitem){ FIRST_INO, 0, len, 0, 0 });
	add_item(&m, (struct fitem){ FIRST_INO + 1, 0, len, 0, 0 });

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		u64 before = m.bytes_found;

		fs = memfs_open(bdev, 0, 0);
		cr_assert(data_matches(fs, &m, 0, &freed_checked), "before step %zu", i);
		root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
		cr_assert_eq(tlog_trans_start(fs, &trans), 0);
		cr_assert_eq(drop_range(trans, root, &m, steps[i].ino, steps[i].start * ss,
					steps[i].end == (u64)-1 ? (u64)-1 : steps[i].end * ss), 0,
			     "step %zu: %s", i, tlog_error_get());
		cr_assert_eq(m.bytes_found - before, steps[i].found * ss, "step %zu", i);
		cr_assert_eq(tlog_trans_commit(trans), 0);
		tlog_close(fs);

		fs = memfs_open(bdev, 0, 0);
		cr_assert(data_matches(fs, &m, 0, &freed_checked), "after step %zu", i);
		cr_assert_eq(memfs_extent_refs(fs, bytenr, len), steps[i].refs, "step %zu", i);
		cr_assert_eq(m.nr_it, steps[i].items, "step %zu", i);
		tlog_close(fs);
	}
	cr_assert_eq(freed_checked, 1);
	cr_assert_eq(m.splits, 1);
	tlog_bdev_close(bdev);
}

/*
 * Checksums of data written piece by piece, adjacent on disk (a replayed
 * log's extents), continue the item before them as the kernel's do: 5000
 * sectors one at a time give two items, the first at the item cap (the
 * item before the second one's first piece filled its leaf, so that leaf
 * is split to let it grow), not 5000 items.
 */
Test(memfs_data, adjacent_checksums_continue_one_item)
{
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	const u64 base = 1ULL << 30, nr = 5000;
	struct btrfs_key min = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0 };
	struct btrfs_key max = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	struct tlog_trans *trans;
	u32 cs = fs->csum_size, ss = fs->sectorsize;
	u64 items = 0, next = base, searches;

	/*
	 * All but the last in one transaction: after the first, the item to
	 * extend is on a path of this transaction's blocks, extended where
	 * the lookup found it - a search for write only when a leaf is full.
	 * The last one in a second transaction, its item in committed blocks:
	 * found again by a search for write, which copies them.
	 */
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	searches = fs->write_searches;
	for (u64 i = 0; i < nr; i++) {
		u8 csum[BTRFS_CSUM_SIZE];

		if (i == nr - 1) {
			cr_assert_lt(fs->write_searches - searches, 10,
				     "%llu searches for write for %llu adjacent checksums",
				     (unsigned long long)(fs->write_searches - searches),
				     (unsigned long long)i);
			cr_assert_eq(tlog_trans_commit(trans), 0);
			cr_assert_eq(tlog_trans_start(fs, &trans), 0);
			searches = fs->write_searches;
		}
		memset(csum, (int)(i % 251), cs);
		cr_assert_eq(btrfs_insert_csums(trans, base + i * ss, csum, 1), 0, "%s",
			     tlog_error_get());
	}
	cr_assert_gt(fs->write_searches, searches, "the last item was not copied");
	cr_assert_eq(tlog_trans_commit(trans), 0);
	tlog_close(fs);

	fs = memfs_open(bdev, 0, 0);
	btrfs_for_each_item(memfs_root(fs, BTRFS_CSUM_TREE_OBJECTID), &iter, &min, &max) {
		const u8 *p = btrfs_item_ptr(iter.leaf, iter.slot);
		u32 n = btrfs_item_size(iter.leaf, iter.slot) / cs;

		cr_assert_eq(iter.key.offset, next, "item at %llu, expected %llu",
			     (unsigned long long)iter.key.offset, (unsigned long long)next);
		for (u32 k = 0; k < n; k++, next += ss)
			cr_assert_eq(p[k * cs], (u8)((next - base) / ss % 251),
				     "checksum of sector %llu moved",
				     (unsigned long long)((next - base) / ss));
		items++;
	}
	cr_assert_geq(iter.ret, 0, "%s", tlog_error_get());
	btrfs_tree_iter_end(&iter);
	cr_assert_eq(next, base + nr * ss, "the checksums end at %llu", (unsigned long long)next);
	cr_assert_eq(items, 2, "%llu csum items for %llu adjacent sectors",
		     (unsigned long long)items, (unsigned long long)nr);
	tlog_close(fs);
	tlog_bdev_close(bdev);
}
