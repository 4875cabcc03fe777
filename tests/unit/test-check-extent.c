// SPDX-License-Identifier: GPL-2.0-only
/*
 * The checker's extent pass (check-extent.c) end to end on a memory
 * device: a filesystem with data extents written by the library checks
 * clean in the extent, block group and free space areas, and each damage
 * made through a transaction (an extent item's refs, a block group's used
 * bytes, a free space extent dropped, a file extent pointing into another
 * extent, a back reference nothing makes) is reported with its numbers,
 * once.
 * The other areas (an inode without a name, say) are not this test's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "check.h"
#include "csum.h"
#include "errctx.h"
#include "mem-fs.h"
#include "transaction.h"

#define INO		300
#define NR_EXT		8

struct found {
	int nr;			/* problems in the extent pass's areas */
	char what[8][300];
};

static bool extent_area(const char *area)
{
	return !strcmp(area, "extent") || !strcmp(area, "block-group") ||
	       !strcmp(area, "free-space");
}

static void collect(const struct tlog_problem *p, void *arg)
{
	struct found *f = arg;

	if (!extent_area(p->area))
		return;
	if (f->nr < 8)
		snprintf(f->what[f->nr], sizeof(f->what[0]), "%s: %s", p->area, p->what);
	f->nr++;
}

static void run_check(struct tlog_bdev *bdev, struct found *f, struct tlog_check_stats *stats)
{
	struct tlog_check_opts opts = { .threads = 1, .report = collect, .report_arg = f };

	memset(f, 0, sizeof(*f));
	memset(stats, 0, sizeof(*stats));
	cr_assert_eq(tlog_check_image(bdev, &opts, stats), 0, "%s", tlog_error_get());
}

/* Whether one of the problems found contains @text. */
static bool reported(const struct found *f, const char *text)
{
	for (int i = 0; i < f->nr && i < 8; i++)
		if (strstr(f->what[i], text))
			return true;
	return false;
}

static void dump(const struct found *f)
{
	for (int i = 0; i < f->nr && i < 8; i++)
		cr_log_info("%s", f->what[i]);
}

/* A filesystem with NR_EXT data extents of inode INO; their addresses in @bytenr. */
static struct tlog_bdev *make_fs(u64 *bytenr)
{
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_trans *trans;

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(memfs_create_inode(trans, root, INO, 0, 0), 0);
	for (int i = 0; i < NR_EXT; i++)
		cr_assert_eq(memfs_write_extent(trans, root, INO, (u64)i * 65536,
						(u64)(i + 1) * fs->sectorsize, i, &bytenr[i]),
			     0, "%s", tlog_error_get());
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
	tlog_close(fs);
	return bdev;
}

Test(check_extent, library_written_fs_is_clean)
{
	u64 bytenr[NR_EXT];
	struct tlog_bdev *bdev = make_fs(bytenr);
	struct tlog_check_stats stats;
	struct found f;

	run_check(bdev, &f, &stats);
	dump(&f);
	cr_expect_eq(f.nr, 0, "%d problems in the extent areas, first: %s", f.nr, f.what[0]);
	cr_expect_geq(stats.extent_items, NR_EXT);
	tlog_bdev_close(bdev);
}

static void raise_refs(struct tlog_trans *trans, void *arg)
{
	const u64 *b = arg;
	struct btrfs_key key = { b[0], BTRFS_EXTENT_ITEM_KEY, b[1] };
	struct btrfs_path path;
	struct btrfs_extent_item *ei = memfs_item_for_write(trans, BTRFS_EXTENT_TREE_OBJECTID, &key,
						       &path);

	btrfs_set_extent_item_refs(ei, btrfs_extent_item_refs(ei) + 1);
	btrfs_release_path(&path);
}

Test(check_extent, refs_above_the_back_references)
{
	u64 bytenr[NR_EXT];
	struct tlog_bdev *bdev = make_fs(bytenr);
	struct tlog_check_stats stats;
	struct found f;
	u64 arg[2];

	arg[0] = bytenr[2];
	arg[1] = 3 * 4096;
	memfs_damage(bdev, raise_refs, arg);
	run_check(bdev, &f, &stats);
	dump(&f);
	cr_expect_eq(f.nr, 1);
	cr_expect(reported(&f, "has refs 2, its back references count 1"), "%s", f.what[0]);
	tlog_bdev_close(bdev);
}

static void change_used(struct tlog_trans *trans, void *arg)
{
	const u64 *bg = arg;
	struct btrfs_key key = { bg[0], BTRFS_BLOCK_GROUP_ITEM_KEY, bg[1] };
	struct btrfs_path path;
	struct btrfs_block_group_item *bgi;

	bgi = memfs_item_for_write(trans, btrfs_block_group_root_id(trans->fs), &key, &path);
	btrfs_set_block_group_item_used(bgi, btrfs_block_group_item_used(bgi) + 4096);
	btrfs_release_path(&path);
}

Test(check_extent, block_group_used_off)
{
	u64 bytenr[NR_EXT], bg[2];
	struct tlog_bdev *bdev = make_fs(bytenr);
	struct tlog_check_stats stats;
	struct free_range *v;
	struct tlog_fs *fs;
	struct found f;
	size_t nr;

	fs = memfs_open(bdev, 0, 0);
	memfs_fst_group(fs, bytenr[0], &v, &nr, &bg[0], &bg[1]);
	free(v);
	tlog_close(fs);
	memfs_damage(bdev, change_used, bg);
	run_check(bdev, &f, &stats);
	dump(&f);
	cr_expect_eq(f.nr, 1);
	cr_expect(reported(&f, "block-group: block group"), "%s", f.what[0]);
	tlog_bdev_close(bdev);
}

static void point_nowhere(struct tlog_trans *trans, void *arg)
{
	const u64 *where = arg;
	struct btrfs_root *root = memfs_root(trans->fs, BTRFS_FS_TREE_OBJECTID);

	/* one sector into the extent of bytenr[3], which is 4 sectors long */
	cr_assert_eq(memfs_insert_file_extent(trans, root, INO, 1 << 20, where[0] + 4096, 4096,
					      0, 4096), 0, "%s", tlog_error_get());
}

Test(check_extent, file_extent_inside_another_extent)
{
	u64 bytenr[NR_EXT];
	struct tlog_bdev *bdev = make_fs(bytenr);
	struct tlog_check_stats stats;
	struct found f;
	char want[96];

	memfs_damage(bdev, point_nowhere, &bytenr[3]);
	run_check(bdev, &f, &stats);
	dump(&f);
	snprintf(want, sizeof(want), "inside extent %llu+%u", (unsigned long long)bytenr[3],
		 4 * 4096);
	cr_expect_eq(f.nr, 1);
	cr_expect(reported(&f, want), "%s", f.what[0]);
	tlog_bdev_close(bdev);
}

static void drop_free_space(struct tlog_trans *trans, void *arg)
{
	const u64 *bg = arg;
	struct btrfs_root *fst = memfs_root(trans->fs, BTRFS_FREE_SPACE_TREE_OBJECTID);
	struct btrfs_key min = { bg[0], BTRFS_FREE_SPACE_EXTENT_KEY, 0 };
	struct btrfs_key max = { bg[0] + bg[1] - 1, BTRFS_FREE_SPACE_BITMAP_KEY, (u64)-1 };
	u64 deleted = 0;

	cr_assert_eq(btrfs_delete_items_range(trans, fst, &min, &max, &deleted), 0);
	cr_assert_gt(deleted, 0);
}

Test(check_extent, free_space_not_listed)
{
	u64 bytenr[NR_EXT], bg[2];
	struct tlog_bdev *bdev = make_fs(bytenr);
	struct tlog_check_stats stats;
	struct free_range *v;
	struct tlog_fs *fs;
	struct found f;
	size_t nr;

	fs = memfs_open(bdev, 0, 0);
	memfs_fst_group(fs, bytenr[0], &v, &nr, &bg[0], &bg[1]);
	free(v);
	tlog_close(fs);
	cr_assert_gt(nr, 0);
	memfs_damage(bdev, drop_free_space, bg);
	run_check(bdev, &f, &stats);
	dump(&f);
	cr_expect(reported(&f, "free space info counts"), "%s", f.what[0]);
	cr_expect(reported(&f, "is free but not listed"), "%s", f.what[0]);
	tlog_bdev_close(bdev);
}

static void extra_backref(struct tlog_trans *trans, void *arg)
{
	const u64 *b = arg;
	struct btrfs_root *extent_root = memfs_root(trans->fs, BTRFS_EXTENT_TREE_OBJECTID);
	struct btrfs_extent_data_ref ref;
	struct btrfs_key key = { b[0], BTRFS_EXTENT_DATA_REF_KEY,
				 btrfs_extent_data_ref_hash(BTRFS_FS_TREE_OBJECTID, 999, 0) };

	btrfs_set_extent_data_ref_root(&ref, BTRFS_FS_TREE_OBJECTID);
	btrfs_set_extent_data_ref_objectid(&ref, 999);
	btrfs_set_extent_data_ref_offset(&ref, 0);
	btrfs_set_extent_data_ref_count(&ref, 1);
	cr_assert_eq(btrfs_insert_item(trans, extent_root, &key, &ref, sizeof(ref)), 0, "%s",
		     tlog_error_get());
}

Test(check_extent, back_reference_nothing_makes)
{
	u64 bytenr[NR_EXT];
	struct tlog_bdev *bdev = make_fs(bytenr);
	struct tlog_check_stats stats;
	struct found f;

	memfs_damage(bdev, extra_backref, &bytenr[5]);
	run_check(bdev, &f, &stats);
	dump(&f);
	cr_expect_eq(f.nr, 2);
	cr_expect(reported(&f, "has refs 1, its back references count 2"), "%s", f.what[0]);
	cr_expect(reported(&f, "data ref root 5 inode 999 offset 0 (count 1) that nothing makes"),
		  "%s", f.what[1]);
	tlog_bdev_close(bdev);
}
