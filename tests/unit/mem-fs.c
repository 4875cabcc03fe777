// SPDX-License-Identifier: GPL-2.0-only
/* A filesystem on a memory device, for unit tests (see mem-fs.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "block-group.h"
#include "csum.h"
#include "extent-tree.h"
#include "file-item.h"
#include "root-tree.h"
#include "super.h"
#include "errctx.h"
#include "mkfs.h"
#include "mem-fs.h"

u64 memfs_seed(void)
{
	const char *e = getenv("TLOG_TEST_SEED");

	return e ? strtoull(e, NULL, 0) : 20261201;
}

struct tlog_bdev *memfs_make(void)
{
	return memfs_make_nodesize(0);
}

struct tlog_bdev *memfs_make_nodesize(u32 nodesize)
{
	return memfs_make_features(nodesize, 0, 0);
}

struct tlog_bdev *memfs_make_features(u32 nodesize, u64 clear_incompat, u64 clear_compat_ro)
{
	struct tlog_mkfs_result res;
	struct tlog_mkfs_cfg cfg;
	struct tlog_bdev *bdev;

	cr_assert_eq(tlog_bdev_create_memory("memfs", MEMFS_SIZE, &bdev), 0);
	tlog_mkfs_default_cfg(&cfg);
	if (nodesize)
		cfg.nodesize = nodesize;
	cfg.incompat_flags &= ~clear_incompat;
	cfg.compat_ro_flags &= ~clear_compat_ro;
	cfg.fsid_set = true;
	memset(cfg.fsid, 0x42, sizeof(cfg.fsid));
	cr_assert_eq(tlog_mkfs(bdev, &cfg, &res), 0, "mkfs: %s", tlog_error_get());
	return bdev;
}

int memfs_try_open(struct tlog_bdev *bdev, int fault_mode, u64 fault_nth, struct tlog_fs **fs)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true,
				       .fault_mode = fault_mode, .fault_nth = fault_nth };

	return tlog_open_bdev(bdev, &opts, fs);
}

struct tlog_fs *memfs_open(struct tlog_bdev *bdev, int fault_mode, u64 fault_nth)
{
	struct tlog_fs *fs;
	int err = memfs_try_open(bdev, fault_mode, fault_nth, &fs);

	cr_assert_eq(err, 0, "open: %d %s", err, tlog_error_get());
	return fs;
}

struct btrfs_root *memfs_root(struct tlog_fs *fs, u64 objectid)
{
	struct btrfs_root *root;

	cr_assert_eq(btrfs_read_root(fs, objectid, &root), 0, "root %llu: %s",
		     (unsigned long long)objectid, tlog_error_get());
	return root;
}

u64 memfs_super_generation(struct tlog_bdev *bdev, int mirror)
{
	struct btrfs_super_block sb;
	u64 off = btrfs_sb_offset(mirror);

	if (off + sizeof(sb) > bdev->size)
		return 0;
	cr_assert_eq(tlog_bdev_read(bdev, &sb, sizeof(sb), off), 0);
	if (btrfs_super_block_magic(&sb) != BTRFS_MAGIC || btrfs_super_block_bytenr(&sb) != off)
		return 0;
	return btrfs_super_block_generation(&sb);
}

int memfs_create_inode(struct tlog_trans *trans, struct btrfs_root *root, u64 ino, u64 size,
		       u64 nbytes)
{
	struct btrfs_key key = { ino, BTRFS_INODE_ITEM_KEY, 0 };
	struct btrfs_inode_item ii;

	memset(&ii, 0, sizeof(ii));
	btrfs_set_inode_item_generation(&ii, trans->transid);
	btrfs_set_inode_item_transid(&ii, trans->transid);
	btrfs_set_inode_item_size(&ii, size);
	btrfs_set_inode_item_nbytes(&ii, nbytes);
	btrfs_set_inode_item_nlink(&ii, 1);
	btrfs_set_inode_item_mode(&ii, S_IFREG | 0644);
	ii.atime = ii.ctime = ii.mtime = ii.otime = trans->now;
	return btrfs_insert_item(trans, root, &key, &ii, sizeof(ii));
}

int memfs_insert_file_extent(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			     u64 file_off, u64 bytenr, u64 disk_len, u64 offset, u64 num)
{
	struct btrfs_file_extent_item fi;
	struct btrfs_key key = { ino, BTRFS_EXTENT_DATA_KEY, file_off };

	memset(&fi, 0, sizeof(fi));
	btrfs_set_file_extent_item_generation(&fi, trans->transid);
	btrfs_set_file_extent_item_ram_bytes(&fi, disk_len);
	btrfs_set_file_extent_item_type(&fi, BTRFS_FILE_EXTENT_REG);
	btrfs_set_file_extent_item_disk_bytenr(&fi, bytenr);
	btrfs_set_file_extent_item_disk_num_bytes(&fi, disk_len);
	btrfs_set_file_extent_item_offset(&fi, offset);
	btrfs_set_file_extent_item_num_bytes(&fi, num);
	return btrfs_insert_item(trans, root, &key, &fi, sizeof(fi));
}

int memfs_write_extent(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
		       u64 file_off, u64 len, u32 seed, u64 *bytenr)
{
	u8 *buf = malloc(len);
	int ret;

	cr_assert_not_null(buf);
	for (u64 i = 0; i < len; i++)
		buf[i] = (u8)(seed * 31 + i * 7 + (i >> 12));
	ret = btrfs_alloc_data_extent(trans, root, ino, file_off, len, bytenr);
	if (!ret)
		ret = btrfs_write_data(trans, *bytenr, buf, len);
	if (!ret)
		ret = btrfs_insert_data_csums(trans, *bytenr, buf, len);
	if (!ret)
		ret = memfs_insert_file_extent(trans, root, ino, file_off, *bytenr, len, 0, len);
	free(buf);
	return ret;
}

s64 memfs_extent_refs(struct tlog_fs *fs, u64 bytenr, u64 len)
{
	struct btrfs_root *extent_root = memfs_root(fs, BTRFS_EXTENT_TREE_OBJECTID);
	struct btrfs_key key = { bytenr, BTRFS_EXTENT_ITEM_KEY, len };
	struct btrfs_path path;
	s64 ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(extent_root, &key, &path);
	if (ret == 0)
		ret = btrfs_extent_item_refs((struct btrfs_extent_item *)
					     btrfs_item_ptr(path.nodes[0], path.slots[0]));
	else if (ret > 0)
		ret = 0;
	btrfs_release_path(&path);
	return ret;
}

/* ---- the free space tree, decoded ---- */

struct ranges {
	struct free_range *v;
	size_t nr, cap;
	u32 flags;	/* of the FREE_SPACE_INFO */
	u32 bitmaps;	/* bitmap items seen */
};

static void ranges_add(struct ranges *r, u64 start, u64 len)
{
	if (r->nr && r->v[r->nr - 1].start + r->v[r->nr - 1].len == start) {
		r->v[r->nr - 1].len += len;
		return;
	}
	if (r->nr == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		cr_assert_not_null(r->v);
	}
	r->v[r->nr++] = (struct free_range){ start, len };
}

/* The free ranges of the group at @bg_start as the free space tree has them. */
static void fst_ranges(struct tlog_fs *fs, u64 bg_start, u64 bg_len, struct ranges *r,
		       u32 *extent_count, u32 *nr_extents)
{
	struct btrfs_root *fst = memfs_root(fs, BTRFS_FREE_SPACE_TREE_OBJECTID);
	struct btrfs_key min = { bg_start, 0, 0 }, max = { bg_start + bg_len - 1, (u8)-1, (u64)-1 };
	struct btrfs_tree_iter iter;

	*extent_count = (u32)-1;
	*nr_extents = 0;
	btrfs_for_each_item(fst, &iter, &min, &max) {
		const struct btrfs_key *k = &iter.key;
		void *p = btrfs_item_ptr(iter.leaf, iter.slot);

		if (k->type == BTRFS_FREE_SPACE_INFO_KEY) {
			if (k->objectid == bg_start) {
				*extent_count = btrfs_free_space_info_extent_count(p);
				r->flags = btrfs_free_space_info_flags(p);
			}
		} else if (k->type == BTRFS_FREE_SPACE_EXTENT_KEY) {
			cr_assert_geq(k->objectid, bg_start);
			cr_assert_leq(k->objectid + k->offset, bg_start + bg_len);
			ranges_add(r, k->objectid, k->offset);
			(*nr_extents)++;
		} else if (k->type == BTRFS_FREE_SPACE_BITMAP_KEY) {
			const u8 *bits = p;
			u64 nbits = k->offset / fs->sectorsize;

			/* runs may go on in the next bitmap: ranges_add() merges them */
			for (u64 i = 0; i < nbits; i++)
				if (bits[i / 8] & (1U << (i % 8)))
					ranges_add(r, k->objectid + i * fs->sectorsize, fs->sectorsize);
			r->bitmaps++;
		}
	}
	btrfs_tree_iter_end(&iter);
	cr_assert_eq(iter.ret, 1, "free space tree: %s", tlog_error_get());
}

/* The free ranges of a group by the extent tree: what no extent item covers. */
static void extent_tree_free(struct tlog_fs *fs, u64 bg_start, u64 bg_len, struct ranges *r)
{
	struct btrfs_root *extent_root = memfs_root(fs, BTRFS_EXTENT_TREE_OBJECTID);
	struct btrfs_key min = { bg_start, 0, 0 }, max = { bg_start + bg_len - 1, (u8)-1, (u64)-1 };
	struct btrfs_tree_iter iter;
	u64 pos = bg_start;

	btrfs_for_each_item(extent_root, &iter, &min, &max) {
		u64 len;

		if (iter.key.type == BTRFS_EXTENT_ITEM_KEY)
			len = iter.key.offset;
		else if (iter.key.type == BTRFS_METADATA_ITEM_KEY)
			len = fs->nodesize;
		else
			continue;
		cr_assert_geq(iter.key.objectid, pos, "extents overlap at %llu",
			      (unsigned long long)iter.key.objectid);
		if (iter.key.objectid > pos)
			ranges_add(r, pos, iter.key.objectid - pos);
		pos = iter.key.objectid + len;
	}
	btrfs_tree_iter_end(&iter);
	cr_assert_eq(iter.ret, 1, "extent tree: %s", tlog_error_get());
	cr_assert_leq(pos, bg_start + bg_len);
	if (pos < bg_start + bg_len)
		ranges_add(r, pos, bg_start + bg_len - pos);
}

u64 memfs_check_free_space_tree(struct tlog_fs *fs)
{
	struct tlog_block_groups bgs = { 0 };
	u64 total = 0;

	cr_assert_eq(btrfs_load_block_groups(fs, &bgs), 0, "%s", tlog_error_get());
	cr_assert_gt(bgs.nr, 0);
	for (size_t i = 0; i < bgs.nr; i++) {
		struct tlog_block_group *bg = &bgs.v[i];
		struct ranges r = { 0 }, want = { 0 };
		u32 count, nr;

		fst_ranges(fs, bg->start, bg->length, &r, &count, &nr);
		extent_tree_free(fs, bg->start, bg->length, &want);
		cr_assert_eq(count, r.nr, "group %llu: extent_count %u, %zu free runs",
			     (unsigned long long)bg->start, count, r.nr);
		if (!r.bitmaps)
			cr_assert_eq(nr, r.nr, "group %llu: %u extent items for %zu runs",
				     (unsigned long long)bg->start, nr, r.nr);
		cr_assert_eq(!!r.bitmaps, !!(r.flags & BTRFS_FREE_SPACE_USING_BITMAPS),
			     "group %llu: flags %#x, %u bitmaps", (unsigned long long)bg->start,
			     r.flags, r.bitmaps);
		cr_assert_eq(r.nr, want.nr, "group %llu: %zu free ranges in the tree, %zu by the extent tree",
			     (unsigned long long)bg->start, r.nr, want.nr);
		for (size_t j = 0; j < r.nr; j++) {
			cr_assert_eq(r.v[j].start, want.v[j].start, "group %llu range %zu",
				     (unsigned long long)bg->start, j);
			cr_assert_eq(r.v[j].len, want.v[j].len, "group %llu range %zu at %llu",
				     (unsigned long long)bg->start, j,
				     (unsigned long long)r.v[j].start);
		}
		total += r.nr;
		free(r.v);
		free(want.v);
	}
	btrfs_free_block_groups(&bgs);
	return total;
}

bool memfs_fst_range_free(struct tlog_fs *fs, u64 start, u64 len)
{
	struct tlog_block_groups bgs = { 0 };
	struct tlog_block_group *bg;
	struct ranges r = { 0 };
	bool ret = false;
	u32 count, nr;

	cr_assert_eq(btrfs_load_block_groups(fs, &bgs), 0, "%s", tlog_error_get());
	bg = btrfs_lookup_block_group(&bgs, start);
	cr_assert_not_null(bg);
	fst_ranges(fs, bg->start, bg->length, &r, &count, &nr);
	for (size_t j = 0; j < r.nr; j++)
		if (r.v[j].start <= start && start + len <= r.v[j].start + r.v[j].len)
			ret = true;
	free(r.v);
	btrfs_free_block_groups(&bgs);
	return ret;
}

int memfs_fst_group(struct tlog_fs *fs, u64 bytenr, struct free_range **v, size_t *nr,
		    u64 *bg_start, u64 *bg_len)
{
	struct tlog_block_groups bgs = { 0 };
	struct tlog_block_group *bg;
	struct ranges r = { 0 };
	u32 count, n;

	cr_assert_eq(btrfs_load_block_groups(fs, &bgs), 0, "%s", tlog_error_get());
	bg = btrfs_lookup_block_group(&bgs, bytenr);
	cr_assert_not_null(bg);
	*bg_start = bg->start;
	*bg_len = bg->length;
	fst_ranges(fs, bg->start, bg->length, &r, &count, &n);
	cr_assert_eq(count, r.nr);
	btrfs_free_block_groups(&bgs);
	*v = r.v;
	*nr = r.nr;
	return (int)r.flags;
}

u64 memfs_csum_bytes(struct tlog_fs *fs, u64 bytenr, u64 len)
{
	struct btrfs_root *csum_root = memfs_root(fs, BTRFS_CSUM_TREE_OBJECTID);
	struct btrfs_key min = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0 };
	struct btrfs_key max = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	u64 covered = 0;

	btrfs_for_each_item(csum_root, &iter, &min, &max) {
		u64 a = iter.key.offset;
		u64 b = a + (u64)btrfs_item_size(iter.leaf, iter.slot) / fs->csum_size *
			    fs->sectorsize;
		u64 lo = a > bytenr ? a : bytenr, hi = b < bytenr + len ? b : bytenr + len;

		if (hi > lo)
			covered += hi - lo;
	}
	btrfs_tree_iter_end(&iter);
	cr_assert_eq(iter.ret, 1, "csum tree: %s", tlog_error_get());
	return covered;
}

/* Open @bdev again after a change: the new state, by the generation? */
static bool after_change(struct tlog_bdev *bdev, u64 gen0, const char *where, struct tlog_fs **fs)
{
	int err = memfs_try_open(bdev, 0, 0, fs);

	cr_assert_eq(err, 0, "%s: the device no longer opens: %s", where, tlog_error_get());
	cr_assert((*fs)->generation == gen0 || (*fs)->generation == gen0 + 1,
		  "%s: generation %llu, before %llu", where,
		  (unsigned long long)(*fs)->generation, (unsigned long long)gen0);
	return (*fs)->generation == gen0 + 1;
}

void memfs_fault_sweep(const struct memfs_fault_case *c, struct memfs_fault_stats *st)
{
	struct tlog_bdev *bdev = c->setup(c->arg);
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	u64 w0 = bdev->nr_writes, gen0 = fs->generation;
	char where[128];

	memset(st, 0, sizeof(*st));
	cr_assert_eq(c->change(fs, c->arg), 0, "%s: clean run: %s", c->name, tlog_error_get());
	tlog_close(fs);
	st->writes = bdev->nr_writes - w0;
	cr_assert(after_change(bdev, gen0, c->name, &fs), "%s: the clean run changed nothing",
		  c->name);
	c->check(fs, c->arg, true, NULL);
	tlog_close(fs);
	tlog_bdev_close(bdev);
	cr_assert_geq(st->writes, 4, "%s: only %llu writes", c->name, (unsigned long long)st->writes);

	for (int mode = TLOG_FAULT_FAIL; mode <= TLOG_FAULT_DROP; mode++) {
		for (u64 n = 1; n <= st->writes; n++) {
			bool new_state;
			int err;

			snprintf(where, sizeof(where), "%s: seed %llu, %s at write %llu of %llu",
				 c->name, (unsigned long long)memfs_seed(),
				 mode == TLOG_FAULT_FAIL ? "fail" : "drop", (unsigned long long)n,
				 (unsigned long long)st->writes);
			bdev = c->setup(c->arg);
			fs = memfs_open(bdev, mode, n);
			gen0 = fs->generation;
			err = c->change(fs, c->arg);
			tlog_close(fs);
			if (mode == TLOG_FAULT_FAIL)
				cr_assert_neq(err, 0, "%s: the error went unnoticed", where);
			else
				cr_assert_eq(err, 0, "%s: %s", where, tlog_error_get());
			new_state = after_change(bdev, gen0, where, &fs);
			c->check(fs, c->arg, new_state, where);
			*(new_state ? &st->new : &st->old) += 1;
			memfs_check_free_space_tree(fs);
			tlog_close(fs);
			tlog_bdev_close(bdev);
			st->points++;
		}
	}
	cr_log_info("%s: %llu writes, %llu fault points, %llu left the old state, %llu the new",
		    c->name, (unsigned long long)st->writes, (unsigned long long)st->points,
		    (unsigned long long)st->old, (unsigned long long)st->new);
	cr_assert_eq(st->points, 2 * st->writes);
	cr_assert_gt(st->old, 0, "%s: no fault point left the old state", c->name);
	cr_assert_gt(st->new, 0, "%s: no fault point left the new state", c->name);
}

/* Open, start a transaction, let @change do its damage, commit. */
void memfs_damage(struct tlog_bdev *bdev, void (*change)(struct tlog_trans *, void *), void *arg)
{
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct tlog_trans *trans;

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	change(trans, arg);
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
	tlog_close(fs);
}

/* The item @key of @tree, for writing; asserts it is there. */
void *memfs_item_for_write(struct tlog_trans *trans, u64 tree, const struct btrfs_key *key,
			   struct btrfs_path *path)
{
	struct btrfs_root *root = memfs_root(trans->fs, tree);

	btrfs_init_path(path);
	cr_assert_eq(btrfs_search_slot_for_write(trans, root, key, path, 0), 0,
		     "no item (%llu %u %llu)", (unsigned long long)key->objectid, key->type,
		     (unsigned long long)key->offset);
	btrfs_mark_buffer_dirty(trans->fs, path->nodes[0]);
	return btrfs_item_ptr(path->nodes[0], path->slots[0]);
}
