// SPDX-License-Identifier: GPL-2.0-only
/*
 * Data block group size classes (block-group.h): where a data extent goes
 * when extents of other sizes went before it, within one mount and after
 * the filesystem is opened again, and when the groups of its class are
 * full and no chunk can be made.
 */
#include <errno.h>
#include <criterion/criterion.h>

#include "block-group.h"
#include "errctx.h"
#include "file-extent.h"
#include "mem-fs.h"
#include "transaction.h"

#define INO	300

Test(block_group, size_class_limits)
{
	cr_assert_eq(btrfs_calc_size_class(4096), BTRFS_BG_SZ_SMALL);
	cr_assert_eq(btrfs_calc_size_class(128 << 10), BTRFS_BG_SZ_SMALL);
	cr_assert_eq(btrfs_calc_size_class((128 << 10) + 4096), BTRFS_BG_SZ_MEDIUM);
	cr_assert_eq(btrfs_calc_size_class(8 << 20), BTRFS_BG_SZ_MEDIUM);
	cr_assert_eq(btrfs_calc_size_class((8 << 20) + 4096), BTRFS_BG_SZ_LARGE);
}

/* The data block group holding @bytenr, or 0. */
static u64 data_group_of(struct tlog_fs *fs, u64 bytenr)
{
	struct tlog_block_groups bgs;
	struct tlog_block_group *bg;
	u64 start = 0;

	cr_assert_eq(btrfs_load_block_groups(fs, &bgs), 0);
	bg = btrfs_lookup_block_group(&bgs, bytenr);
	if (bg && (bg->flags & BTRFS_BLOCK_GROUP_DATA))
		start = bg->start;
	btrfs_free_block_groups(&bgs);
	return start;
}

static u64 write_extent(struct tlog_trans *trans, struct btrfs_root *root, u64 off, u64 len)
{
	u64 bytenr;

	cr_assert_eq(memfs_write_extent(trans, root, INO, off, len, (u32)off, &bytenr), 0, "%s",
		     tlog_error_get());
	return bytenr;
}

/*
 * A small extent gives the empty data group of mkfs the small class: a
 * medium one then makes a chunk (and the transaction needs a full commit,
 * as the kernel's fsync would do), and later small and medium extents go
 * to the group of their class - also after the filesystem is opened
 * again, when the classes come from sampling the extent tree.
 */
Test(block_group, extents_go_to_groups_of_their_class)
{
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_trans *trans;
	u64 small, medium, small2, medium2;

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(memfs_create_inode(trans, root, INO, 16 << 20, 0), 0);
	small = write_extent(trans, root, 0, 16 << 10);
	cr_assert_not(tlog_trans_needs_full_commit(trans), "a small extent fits mkfs's group");
	medium = write_extent(trans, root, 1 << 20, 512 << 10);
	cr_assert(tlog_trans_needs_full_commit(trans), "a medium extent made a chunk");
	cr_assert_str_eq(tlog_trans_full_commit_reason(trans), "a chunk was allocated");
	cr_assert_neq(data_group_of(fs, small), 0);
	small2 = write_extent(trans, root, 64 << 10, 8 << 10);
	medium2 = write_extent(trans, root, 4 << 20, 256 << 10);
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
	tlog_close(fs);

	fs = memfs_open(bdev, 0, 0);
	cr_assert_neq(data_group_of(fs, small), data_group_of(fs, medium));
	cr_assert_eq(data_group_of(fs, small2), data_group_of(fs, small));
	cr_assert_eq(data_group_of(fs, medium2), data_group_of(fs, medium));

	/* a new mount: the classes come from the extents the groups hold */
	root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	medium2 = write_extent(trans, root, 8 << 20, 1 << 20);
	small2 = write_extent(trans, root, 12 << 20, 4 << 10);
	cr_assert_not(tlog_trans_needs_full_commit(trans), "no chunk needed: %s",
		      tlog_trans_full_commit_reason(trans));
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
	cr_assert_eq(data_group_of(fs, small2), data_group_of(fs, small));
	cr_assert_eq(data_group_of(fs, medium2), data_group_of(fs, medium));
	tlog_close(fs);
	tlog_bdev_close(bdev);
}

/*
 * A group left empty by a commit loses its class: a medium extent then
 * goes to the group its small extents held, without a new chunk (a free
 * in the same transaction is not enough: the space is pinned until the
 * commit, and the class stays).
 */
Test(block_group, an_emptied_group_loses_its_class)
{
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_trans *trans;
	u64 small, medium, found;

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(memfs_create_inode(trans, root, INO, 16 << 20, 0), 0);
	small = write_extent(trans, root, 0, 16 << 10);
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(btrfs_drop_file_extents(trans, root, INO, 0, 16 << 10, &found), 0);
	cr_assert_eq(found, 16 << 10);
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	medium = write_extent(trans, root, 1 << 20, 512 << 10);
	cr_assert_not(tlog_trans_needs_full_commit(trans), "a chunk for a medium extent: %s",
		      tlog_trans_full_commit_reason(trans));
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
	cr_assert_eq(data_group_of(fs, medium), data_group_of(fs, small));
	tlog_close(fs);
	tlog_bdev_close(bdev);
}
