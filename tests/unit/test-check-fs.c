// SPDX-License-Identifier: GPL-2.0-only
/*
 * The checker's subvolume pass (check-fs.c) end to end on a memory
 * device: a filesystem made by the library's inode operations (files,
 * a directory, hard links, a symlink, data, a subvolume) checks clean in
 * the pass's areas, and each damage made through a transaction (a link
 * count, a directory size, a directory index moved, a file type, a csum
 * item cut short, a ROOT_BACKREF removed) is reported, with its numbers.
 * The other passes' areas are not this test's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "check.h"
#include "csum.h"
#include "errctx.h"
#include "inode-ops.h"
#include "mem-fs.h"
#include "transaction.h"

#define MAX_FOUND	16

struct found {
	int nr;			/* problems in the subvolume pass's areas */
	char what[MAX_FOUND][300];
};

static bool fs_area(const char *area)
{
	static const char *const areas[] = { "inode", "dir", "file-extent", "csum", "root",
					     "uuid", "qgroup" };

	for (size_t i = 0; i < sizeof(areas) / sizeof(areas[0]); i++)
		if (!strcmp(area, areas[i]))
			return true;
	return false;
}

static void collect(const struct tlog_problem *p, void *arg)
{
	struct found *f = arg;

	if (!fs_area(p->area))
		return;
	if (f->nr < MAX_FOUND)
		snprintf(f->what[f->nr], sizeof(f->what[0]), "%s: %s", p->area, p->what);
	f->nr++;
}

static void run_check(struct tlog_bdev *bdev, struct found *f, struct tlog_check_stats *stats,
		      bool data)
{
	struct tlog_check_opts opts = {
		.threads = 2, .check_data_csum = data, .report = collect, .report_arg = f,
	};

	memset(f, 0, sizeof(*f));
	memset(stats, 0, sizeof(*stats));
	cr_assert_eq(tlog_check_image(bdev, &opts, stats), 0, "%s", tlog_error_get());
}

static bool reported(const struct found *f, const char *text)
{
	for (int i = 0; i < f->nr && i < MAX_FOUND; i++)
		if (strstr(f->what[i], text))
			return true;
	return false;
}

static void dump(const struct found *f)
{
	for (int i = 0; i < f->nr && i < MAX_FOUND; i++)
		cr_log_info("%s", f->what[i]);
}

static struct tlog_inode *create(struct tlog_mount *mnt, struct tlog_inode *dir,
				 const char *name, u32 mode, const char *target)
{
	struct tlog_inode *inode;

	cr_assert_eq(tlog_create(mnt, dir, name, (u16)strlen(name), mode, 0, target, &inode), 0,
		     "create %s: %s", name, tlog_error_get());
	return inode;
}

/*
 * /f1 (3 sectors of data, also /d/hard), /d/f2 (an inline extent), /d/sym,
 * /sv (a subvolume).  Inode numbers: 257 f1, 258 d, 259 f2, 260 sym.
 */
static struct tlog_bdev *make_fs(void)
{
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_inode *top, *f1, *d, *f2, *sym;
	struct tlog_mount *mnt;

	cr_assert_eq(tlog_mount_open(fs, &mnt), 0);
	cr_assert_eq(tlog_iget(mnt, root, BTRFS_FIRST_FREE_OBJECTID, &top), 0);
	f1 = create(mnt, top, "f1", S_IFREG | 0644, NULL);
	d = create(mnt, top, "d", S_IFDIR | 0755, NULL);
	f2 = create(mnt, d, "f2", S_IFREG | 0644, NULL);
	sym = create(mnt, d, "sym", S_IFLNK | 0777, "../f1");
	cr_assert_eq(tlog_write(mnt, f1, 0, 3 * 4096, 0x5a), 0, "%s", tlog_error_get());
	cr_assert_eq(tlog_write(mnt, f2, 0, 100, 0x33), 0, "%s", tlog_error_get());
	cr_assert_eq(tlog_link(mnt, f1, d, "hard", 4), 0, "%s", tlog_error_get());
	cr_assert_eq(tlog_create_subvol(mnt, top, "sv", 2), 0, "%s", tlog_error_get());
	cr_assert_eq(tlog_sync(mnt), 0, "%s", tlog_error_get());
	tlog_iput(mnt, sym);
	tlog_iput(mnt, f2);
	tlog_iput(mnt, d);
	tlog_iput(mnt, f1);
	tlog_iput(mnt, top);
	tlog_mount_close(mnt);
	tlog_close(fs);
	return bdev;
}

Test(check_fs, library_written_fs_is_clean)
{
	struct tlog_bdev *bdev = make_fs();
	struct tlog_check_stats stats;
	struct found f;

	run_check(bdev, &f, &stats, true);
	dump(&f);
	cr_expect_eq(f.nr, 0, "%d problems, first: %s", f.nr, f.what[0]);
	cr_expect_geq(stats.inodes, 5);
	cr_expect_geq(stats.names, 5);
	cr_expect_geq(stats.csum_bytes, 3 * 4096);
	cr_expect_geq(stats.data_bytes_verified, 3 * 4096);
	tlog_bdev_close(bdev);
}

static void set_nlink(struct tlog_trans *trans, void *arg)
{
	struct btrfs_key key = { 259, BTRFS_INODE_ITEM_KEY, 0 };
	struct btrfs_path path;
	struct btrfs_inode_item *ii = memfs_item_for_write(trans, BTRFS_FS_TREE_OBJECTID, &key, &path);

	btrfs_set_inode_item_nlink(ii, *(u32 *)arg);
	btrfs_release_path(&path);
}

Test(check_fs, nlink_above_the_names)
{
	struct tlog_bdev *bdev = make_fs();
	struct tlog_check_stats stats;
	struct found f;
	u32 nlink = 2;

	memfs_damage(bdev, set_nlink, &nlink);
	run_check(bdev, &f, &stats, false);
	dump(&f);
	cr_expect_eq(f.nr, 1);
	cr_expect(reported(&f, "inode 259 nlink 2 but 1 name"), "%s", f.what[0]);
	tlog_bdev_close(bdev);
}

Test(check_fs, no_link_and_no_orphan_item)
{
	struct tlog_bdev *bdev = make_fs();
	struct tlog_check_stats stats;
	struct found f;
	u32 nlink = 0;

	memfs_damage(bdev, set_nlink, &nlink);
	run_check(bdev, &f, &stats, false);
	dump(&f);
	cr_expect_eq(f.nr, 2);
	cr_expect(reported(&f, "inode 259 nlink 0 but 1 name"));
	cr_expect(reported(&f, "inode 259 has no link and no orphan item"));
	tlog_bdev_close(bdev);
}

static void grow_dir(struct tlog_trans *trans, void *arg)
{
	struct btrfs_key key = { 258, BTRFS_INODE_ITEM_KEY, 0 };
	struct btrfs_path path;
	struct btrfs_inode_item *ii = memfs_item_for_write(trans, BTRFS_FS_TREE_OBJECTID, &key, &path);

	(void)arg;
	btrfs_set_inode_item_size(ii, btrfs_inode_item_size(ii) + 2);
	btrfs_release_path(&path);
}

Test(check_fs, directory_size_off)
{
	struct tlog_bdev *bdev = make_fs();
	struct tlog_check_stats stats;
	struct found f;

	memfs_damage(bdev, grow_dir, NULL);
	run_check(bdev, &f, &stats, false);
	dump(&f);
	cr_expect_eq(f.nr, 1);
	/* "f2", "sym", "hard" twice: 18 bytes */
	cr_expect(reported(&f, "directory 258 i_size 20 but its entries' names add up to 18"),
		  "%s", f.what[0]);
	tlog_bdev_close(bdev);
}

/* The DIR_INDEX of /d/f2 (the first of directory 258) keyed one index further. */
static void move_index(struct tlog_trans *trans, void *arg)
{
	struct btrfs_root *root = memfs_root(trans->fs, BTRFS_FS_TREE_OBJECTID);
	struct btrfs_key min = { 258, BTRFS_DIR_INDEX_KEY, 0 };
	struct btrfs_key max = { 258, BTRFS_DIR_INDEX_KEY, (u64)-1 };
	struct btrfs_key key = { 0 };
	struct btrfs_tree_iter it;
	u8 buf[512];
	u32 size = 0;

	(void)arg;
	btrfs_for_each_item(root, &it, &min, &max) {
		key = it.key;
		size = btrfs_item_size(it.leaf, it.slot);
		cr_assert_leq(size, sizeof(buf));
		memcpy(buf, btrfs_item_ptr(it.leaf, it.slot), size);
		break;
	}
	btrfs_tree_iter_end(&it);
	cr_assert_neq(size, 0);
	cr_assert_eq(btrfs_delete_item(trans, root, &key), 0);
	key.offset += 100;
	cr_assert_eq(btrfs_insert_item(trans, root, &key, buf, size), 0);
}

Test(check_fs, directory_index_moved)
{
	struct tlog_bdev *bdev = make_fs();
	struct tlog_check_stats stats;
	struct found f;

	memfs_damage(bdev, move_index, NULL);
	run_check(bdev, &f, &stats, false);
	dump(&f);
	cr_expect_eq(f.nr, 2);
	cr_expect(reported(&f, "has no DIR_INDEX entry"));
	cr_expect(reported(&f, "which has no such name"));
	tlog_bdev_close(bdev);
}

/* /d/sym's DIR_ITEM says it is a regular file. */
static void retype_entry(struct tlog_trans *trans, void *arg)
{
	struct btrfs_key key = { 258, BTRFS_DIR_ITEM_KEY, btrfs_name_hash("sym", 3) };
	struct btrfs_path path;
	struct btrfs_dir_item *di = memfs_item_for_write(trans, BTRFS_FS_TREE_OBJECTID, &key, &path);

	(void)arg;
	di->type = BTRFS_FT_REG_FILE;
	btrfs_release_path(&path);
}

Test(check_fs, entry_file_type_off)
{
	struct tlog_bdev *bdev = make_fs();
	struct tlog_check_stats stats;
	struct found f;

	memfs_damage(bdev, retype_entry, NULL);
	run_check(bdev, &f, &stats, false);
	dump(&f);
	cr_expect_eq(f.nr, 1);
	cr_expect(reported(&f, "entry for inode 260 has file type 1, the inode's mode says 7"),
		  "%s", f.what[0]);
	tlog_bdev_close(bdev);
}

/* The last checksum of the csum tree's first item dropped. */
static void cut_csum(struct tlog_trans *trans, void *arg)
{
	struct btrfs_root *root = memfs_root(trans->fs, BTRFS_CSUM_TREE_OBJECTID);
	struct btrfs_key key = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0 };
	struct btrfs_path path;
	u32 size;

	(void)arg;
	btrfs_init_path(&path);
	cr_assert_eq(btrfs_search_forward(root, &key, &path), 0);
	btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
	btrfs_release_path(&path);
	cr_assert_eq(btrfs_search_slot_for_write(trans, root, &key, &path, -1), 0);
	size = btrfs_item_size(path.nodes[0], path.slots[0]);
	cr_assert_gt(size, (u32)trans->fs->csum_size);
	cr_assert_eq(btrfs_truncate_item(trans, &path, size - (u32)trans->fs->csum_size, true),
		     0);
	btrfs_release_path(&path);
}

Test(check_fs, checksum_missing)
{
	struct tlog_bdev *bdev = make_fs();
	struct tlog_check_stats stats;
	struct found f;

	memfs_damage(bdev, cut_csum, NULL);
	run_check(bdev, &f, &stats, true);
	dump(&f);
	cr_expect_eq(f.nr, 1);
	cr_expect(reported(&f, "csum missing: 4096 of the 12288 bytes"), "%s", f.what[0]);
	tlog_bdev_close(bdev);
}

static void drop_backref(struct tlog_trans *trans, void *arg)
{
	struct btrfs_root *tree = memfs_root(trans->fs, BTRFS_ROOT_TREE_OBJECTID);
	struct btrfs_key min = { BTRFS_FIRST_FREE_OBJECTID, BTRFS_ROOT_BACKREF_KEY, 0 };
	struct btrfs_key max = { BTRFS_LAST_FREE_OBJECTID, BTRFS_ROOT_BACKREF_KEY, (u64)-1 };
	struct btrfs_key key = { 0 };
	struct btrfs_tree_iter it;

	(void)arg;
	btrfs_for_each_item(tree, &it, &min, &max) {
		if (it.key.type == BTRFS_ROOT_BACKREF_KEY) {
			key = it.key;
			break;
		}
	}
	btrfs_tree_iter_end(&it);
	cr_assert_eq(key.type, BTRFS_ROOT_BACKREF_KEY);
	cr_assert_eq(btrfs_delete_item(trans, tree, &key), 0);
}

Test(check_fs, root_backref_missing)
{
	struct tlog_bdev *bdev = make_fs();
	struct tlog_check_stats stats;
	struct found f;

	memfs_damage(bdev, drop_backref, NULL);
	run_check(bdev, &f, &stats, false);
	dump(&f);
	cr_expect_eq(f.nr, 1);
	cr_expect(reported(&f, "ROOT_REF of subvolume 256 in 5 has no ROOT_BACKREF"), "%s",
		  f.what[0]);
	tlog_bdev_close(bdev);
}
