// SPDX-License-Identifier: GPL-2.0-only
/*
 * The log model (tree-log.h) on logs built in memory: the log root tree is
 * the fixture's tree, given to the filesystem as its log root tree, and
 * the log trees are made in the same transaction.
 */
#include <errno.h>
#include <string.h>
#include <criterion/criterion.h>

#include "blockdev.h"
#include "dir-item.h"
#include "super.h"
#include "errctx.h"
#include "mem-tree.h"
#include "mkfs.h"
#include "tree-log.h"

#define TRANSID		7

static struct mem_tree t;

static void setup(void)
{
	mem_tree_setup(&t, 4096, TRANSID);
	t.root.root_key = (struct btrfs_key){ BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0 };
	t.fs->log_root_tree = &t.root;
}

static void teardown(void)
{
	/* the fixture owns the log root tree, not the filesystem */
	t.fs->log_root_tree = NULL;
	mem_tree_teardown(&t);
}

static void insert(struct btrfs_root *root, u64 objectid, u8 type, u64 offset,
		   const void *data, u32 size)
{
	struct btrfs_key key = { objectid, type, offset };

	cr_assert_eq(btrfs_insert_item(&t.trans, root, &key, data, size), 0, "%s",
		     tlog_error_get() ? tlog_error_get() : "");
}

static void insert_inode(struct btrfs_root *root, u64 ino, u32 mode, u32 nlink)
{
	struct btrfs_inode_item ii;

	memset(&ii, 0, sizeof(ii));
	btrfs_set_inode_item_mode(&ii, mode);
	btrfs_set_inode_item_nlink(&ii, nlink);
	btrfs_set_inode_item_generation(&ii, TRANSID);
	insert(root, ino, BTRFS_INODE_ITEM_KEY, 0, &ii, sizeof(ii));
}

static void insert_dir_range(struct btrfs_root *root, u64 dir, u64 start, u64 end)
{
	struct btrfs_dir_log_item dl;

	btrfs_set_dir_log_item_end(&dl, end);
	insert(root, dir, BTRFS_DIR_LOG_INDEX_KEY, start, &dl, sizeof(dl));
}

/* A log tree, empty, in the fixture's transaction. */
static void create_log_tree(struct btrfs_root *log, u64 subvol)
{
	memset(log, 0, sizeof(*log));
	log->fs = t.fs;
	log->root_key = (struct btrfs_key){ BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, subvol };
	cr_assert_eq(btrfs_create_tree(&t.trans, log), 0);
}

/* The log root tree's item for @subvol, naming @log's root block. */
static void add_log_root(u64 subvol, const struct btrfs_root *log)
{
	struct btrfs_root_item ri;

	memset(&ri, 0, sizeof(ri));
	btrfs_set_root_item_bytenr(&ri, log->bytenr);
	btrfs_set_root_item_level(&ri, log->level);
	btrfs_set_root_item_generation(&ri, log->generation);
	insert(&t.root, BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, subvol, &ri, sizeof(ri));
}

static int count_block(struct tlog_fs *fs, const struct extent_buffer *eb, bool in_root_tree,
		       void *arg)
{
	u64 *counts = arg;

	(void)fs;
	(void)eb;
	counts[in_root_tree]++;
	return 0;
}

#define MANY_SUBVOLS	300	/* more than the 256 a fixed array once held */

Test(tree_log, more_than_256_subvolumes, .init = setup, .fini = teardown)
{
	struct tlog_log_subvols subvols;
	struct btrfs_root log;
	u64 inodes, nr, blocks[2] = { 0, 0 };

	/* every subvolume's log root names the same log tree: two inodes */
	create_log_tree(&log, 0);
	insert_inode(&log, 256, 040755, 1);
	insert_inode(&log, 257, 0100644, 1);
	for (u64 i = 0; i < MANY_SUBVOLS; i++)
		add_log_root(256 + i, &log);
	cr_assert_gt(t.root.level, 0, "the log root tree should span leaves");

	cr_assert_eq(btrfs_count_logged_inodes(t.fs, &inodes, &nr), 0, "%s", tlog_error_get());
	cr_assert_eq(nr, MANY_SUBVOLS);
	cr_assert_eq(inodes, 2 * MANY_SUBVOLS);

	cr_assert_eq(tlog_log_list_subvols(t.fs, TLOG_LOG_HIGHEST_FIRST, &subvols), 0);
	cr_assert_eq(subvols.nr, MANY_SUBVOLS);
	for (size_t i = 0; i < subvols.nr; i++)
		cr_assert_eq(subvols.ids[i], 256 + MANY_SUBVOLS - 1 - i);
	tlog_log_subvols_free(&subvols);
	cr_assert_null(subvols.ids);

	cr_assert_eq(tlog_log_for_each_block(t.fs, count_block, blocks), 0);
	cr_assert_eq(blocks[false], MANY_SUBVOLS, "one leaf per log tree");
	cr_assert_gt(blocks[true], 1);
}

Test(tree_log, no_log_no_subvolumes, .init = setup, .fini = teardown)
{
	struct tlog_log_subvols subvols;
	u64 inodes = 1, nr = 1;

	cr_assert_eq(tlog_log_list_subvols(t.fs, TLOG_LOG_LOWEST_FIRST, &subvols), 0);
	cr_assert_eq(subvols.nr, 0);
	tlog_log_subvols_free(&subvols);
	t.fs->log_root_tree = NULL;
	cr_assert_eq(btrfs_count_logged_inodes(t.fs, &inodes, &nr), 0);
	cr_assert_eq(inodes, 0);
	cr_assert_eq(nr, 0);
}

static int stop_at_second(struct tlog_fs *fs, u64 subvol, void *arg)
{
	u64 *seen = arg;

	(void)fs;
	seen[seen[0]++ + 1] = subvol;
	return seen[0] == 2 ? 42 : 0;
}

Test(tree_log, subvolume_walk_lowest_first_and_stoppable, .init = setup, .fini = teardown)
{
	struct btrfs_root log;
	u64 seen[4] = { 0 };

	create_log_tree(&log, 0);
	add_log_root(5, &log);
	add_log_root(300, &log);
	add_log_root(257, &log);
	cr_assert_eq(tlog_log_for_each_subvol(t.fs, stop_at_second, seen), 42);
	cr_assert_eq(seen[0], 2);
	cr_assert_eq(seen[1], 5);
	cr_assert_eq(seen[2], 257);
}

Test(tree_log, dir_index_ranges, .init = setup, .fini = teardown)
{
	struct btrfs_root log;
	u64 start, end;

	create_log_tree(&log, 5);
	insert_dir_range(&log, 256, 2, 5);
	insert_dir_range(&log, 256, 10, 20);
	insert_dir_range(&log, 258, 0, (u64)-1);

	start = 3;
	cr_assert_eq(tlog_log_find_dir_range(&log, 256, &start, &end), 0);
	cr_assert_eq(start, 2);
	cr_assert_eq(end, 5);
	start = 6;	/* between ranges: the next one */
	cr_assert_eq(tlog_log_find_dir_range(&log, 256, &start, &end), 0);
	cr_assert_eq(start, 10);
	cr_assert_eq(end, 20);
	start = 0;
	cr_assert_eq(tlog_log_find_dir_range(&log, 256, &start, &end), 0);
	cr_assert_eq(start, 2);
	start = 21;
	cr_assert_eq(tlog_log_find_dir_range(&log, 256, &start, &end), 1);
	start = 0;
	cr_assert_eq(tlog_log_find_dir_range(&log, 257, &start, &end), 1);
	start = 12345;
	cr_assert_eq(tlog_log_find_dir_range(&log, 258, &start, &end), 0);
	cr_assert_eq(start, 0);
	cr_assert_eq(end, (u64)-1);
}

Test(tree_log, short_dir_range_item_is_refused, .init = setup, .fini = teardown)
{
	struct btrfs_root log;
	u64 start = 0, end;
	u32 junk = 0;

	create_log_tree(&log, 5);
	insert(&log, 256, BTRFS_DIR_LOG_INDEX_KEY, 0, &junk, sizeof(junk));
	tlog_error_clear();
	cr_assert_eq(tlog_log_find_dir_range(&log, 256, &start, &end), -EUCLEAN);
	cr_assert(strstr(tlog_error_get(), "directory 256") != NULL, "%s", tlog_error_get());
}

Test(tree_log, names_in_logged_refs, .init = setup, .fini = teardown)
{
	struct btrfs_key ref = { 257, BTRFS_INODE_REF_KEY, 256 };
	struct btrfs_key none = { 258, BTRFS_INODE_REF_KEY, 256 };
	struct btrfs_root log;

	create_log_tree(&log, 5);
	cr_assert_eq(btrfs_insert_inode_ref(&t.trans, &log, 257, 256, "a", 1, 2), 0);
	cr_assert_eq(btrfs_insert_inode_ref(&t.trans, &log, 257, 256, "bb", 2, 3), 0);
	cr_assert_eq(tlog_log_has_ref_name(&log, &ref, 256, "a", 1), 1);
	cr_assert_eq(tlog_log_has_ref_name(&log, &ref, 256, "bb", 2), 1);
	cr_assert_eq(tlog_log_has_ref_name(&log, &ref, 256, "b", 1), 0);
	cr_assert_eq(tlog_log_has_ref_name(&log, &ref, 300, "a", 1), 0);
	cr_assert_eq(tlog_log_has_ref_name(&log, &none, 256, "a", 1), 0);
}

struct seen_item {
	enum tlog_log_item_kind kind;
	u64 ino;
	bool first, has_inode_item, ignored;
};

Test(tree_log, items_inode_by_inode, .init = setup, .fini = teardown)
{
	static const struct seen_item want[] = {
		{ TLOG_LOG_INODE_ITEM, 256, true, true, false },
		{ TLOG_LOG_NAME, 256, false, true, false },
		{ TLOG_LOG_DIR_RANGE, 256, false, true, false },
		{ TLOG_LOG_DIR_ENTRY, 256, false, true, false },
		{ TLOG_LOG_INODE_ITEM, 257, true, true, true },
		{ TLOG_LOG_XATTR, 257, false, true, true },
		{ TLOG_LOG_EXTENT, 258, true, false, false },
		{ TLOG_LOG_INODE_OTHER, 258, false, false, false },
		{ TLOG_LOG_CSUM, 0, false, false, false },
		{ TLOG_LOG_ORPHAN, 0, false, false, false },
	};
	struct btrfs_file_extent_item fi;
	struct tlog_log_cursor cur;
	struct btrfs_root log;
	size_t n = 0;

	memset(&fi, 0, sizeof(fi));
	create_log_tree(&log, 5);
	insert_inode(&log, 256, 040755, 1);
	cr_assert_eq(btrfs_insert_inode_ref(&t.trans, &log, 256, 256, "..", 2, 0), 0);
	insert(&log, 256, BTRFS_DIR_INDEX_KEY, 2, NULL, 0);
	insert_dir_range(&log, 256, 2, 2);
	insert_inode(&log, 257, 0100644, 0);
	insert(&log, 257, BTRFS_XATTR_ITEM_KEY, 99, NULL, 0);
	insert(&log, 258, BTRFS_EXTENT_DATA_KEY, 0, &fi, sizeof(fi));
	insert(&log, 258, BTRFS_EXTENT_CSUM_KEY, 0, NULL, 0);	/* a key no inode has */
	insert(&log, BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, 257, NULL, 0);
	insert(&log, BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 1 << 20, NULL, 0);

	tlog_log_for_each_item(&log, &cur) {
		const struct seen_item *w = &want[n];

		cr_assert_lt(n, sizeof(want) / sizeof(want[0]));
		cr_assert_eq(cur.kind, w->kind, "item %zu", n);
		cr_assert_eq(cur.in_inode, cur.kind < TLOG_LOG_CSUM, "item %zu", n);
		if (cur.in_inode) {
			cr_assert_eq(cur.inode.ino, w->ino, "item %zu", n);
			cr_assert_eq(cur.first_of_inode, w->first, "item %zu", n);
			cr_assert_eq(cur.inode.has_inode_item, w->has_inode_item, "item %zu", n);
			cr_assert_eq(cur.inode.ignored, w->ignored, "item %zu", n);
		} else {
			cr_assert_not(cur.first_of_inode, "item %zu", n);
		}
		n++;
	}
	cr_assert_eq(cur.iter.ret, 1);
	tlog_log_cursor_end(&cur);
	cr_assert_eq(n, sizeof(want) / sizeof(want[0]));
}

/* A log root named in the superblock must carry the next transaction's generation. */
Test(tree_log, log_root_generation_is_set_at_open)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true };
	struct tlog_mkfs_result res;
	struct tlog_mkfs_cfg cfg;
	struct tlog_bdev *bdev;
	struct btrfs_key key = { 0, 0, 0 };
	struct btrfs_path path;
	struct tlog_fs *fs;
	u64 root_tree;

	cr_assert_eq(tlog_bdev_create_memory("mem", 512ULL << 20, &bdev), 0);
	tlog_mkfs_default_cfg(&cfg);
	cr_assert_eq(tlog_mkfs(bdev, &cfg, &res), 0);
	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0);
	/* the root tree's block stands in for a log root: its generation is one short */
	root_tree = btrfs_super_block_root(&fs->super);
	btrfs_set_super_block_log_root(&fs->super, root_tree);
	btrfs_set_super_block_log_root_level(&fs->super, btrfs_super_block_root_level(&fs->super));
	cr_assert_eq(btrfs_write_all_supers(fs), 0);
	tlog_close(fs);

	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0);
	cr_assert_not_null(fs->log_root_tree);
	cr_assert_eq(fs->log_root_tree->bytenr, root_tree);
	cr_assert_eq(fs->log_root_tree->generation, fs->generation + 1);
	tlog_error_clear();
	btrfs_init_path(&path);
	cr_assert_eq(btrfs_search_slot(fs->log_root_tree, &key, &path), -EUCLEAN);
	btrfs_release_path(&path);
	cr_assert(strstr(tlog_error_get(), "transid") != NULL, "%s", tlog_error_get());
	cr_assert_eq(btrfs_discard_log(fs), 0);
	tlog_close(fs);
	tlog_bdev_close(bdev);
}
