// SPDX-License-Identifier: GPL-2.0-only
/*
 * Log replay of a log built in memory: a log tree with one new file's
 * inode item, INODE_REF and DIR_INDEX entry (and its parent's DIR_INDEX),
 * written into free metadata space of a memory device with the superblock
 * pointing at its log root tree.  The replay must make the file appear
 * with its name, size and link count, and clear log_root.  Then every write
 * of the replay's commit is failed, and dropped, in turn: the device shows
 * either the log still to replay (and replaying it then works) or the
 * replayed file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "block-group.h"
#include "csum.h"
#include "super.h"
#include "errctx.h"
#include "inode.h"
#include "leaf-builder.h"
#include "mem-fs.h"
#include "transaction.h"
#include "tree-log.h"
#include "volumes.h"

#define LOG_INO		257
#define LOG_SIZE	12345
#define LOG_INDEX	2
static const char log_name[] = "logged-file";

/* Write a finished block to every copy of @bytenr. */
static void write_block(struct tlog_fs *fs, u64 bytenr, const u8 *buf)
{
	u64 phys[4];
	int n = btrfs_map_block(fs, bytenr, fs->nodesize, phys, 4);

	cr_assert_gt(n, 0, "%s", tlog_error_get());
	for (int i = 0; i < n; i++)
		cr_assert_eq(tlog_bdev_write(fs->bdev, buf, fs->nodesize, phys[i]), 0);
}

static void finalize(struct tlog_fs *fs, struct tlog_leaf_builder *lb, u64 bytenr, u64 gen)
{
	struct tlog_block_info info = {
		.bytenr = bytenr, .generation = gen, .owner = BTRFS_TREE_LOG_OBJECTID,
		.fsid = fs->header_fsid, .chunk_tree_uuid = fs->chunk_tree_uuid,
		.csum_type = fs->csum_type,
	};

	cr_assert_eq(tlog_block_finalize(lb, &info), 0, "%s", tlog_error_get());
}

static void dir_entry(struct tlog_leaf_builder *lb, u64 dir, u8 type, u64 offset, u64 gen)
{
	struct btrfs_key key = { dir, type, offset };
	struct btrfs_key loc = { LOG_INO, BTRFS_INODE_ITEM_KEY, 0 };
	u16 len = sizeof(log_name) - 1;
	struct btrfs_dir_item *di = tlog_leaf_append(lb, &key, NULL, sizeof(*di) + len);

	cr_assert_not_null(di, "%s", tlog_error_get());
	btrfs_cpu_key_to_disk(&di->location, &loc);
	btrfs_set_dir_item_transid(di, gen);
	btrfs_set_dir_item_name_len(di, len);
	btrfs_set_dir_item_type(di, BTRFS_FT_REG_FILE);
	memcpy(di + 1, log_name, len);
}

/*
 * Build the log of one new file in the top directory and point the
 * superblock at it, as a crash after an fsync leaves it.  The two blocks
 * lie in space the extent tree calls free.
 */
static void plant_log(struct tlog_bdev *bdev)
{
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct tlog_block_groups bgs;
	struct tlog_leaf_builder lb;
	u64 gen = fs->generation + 1, log_bytenr, root_bytenr;
	u16 len = sizeof(log_name) - 1;
	u8 *buf = malloc(fs->nodesize);
	struct btrfs_key key;

	cr_assert_not_null(buf);
	cr_assert_eq(btrfs_load_block_groups(fs, &bgs), 0);
	cr_assert_eq(btrfs_alloc_range(&bgs, BTRFS_BLOCK_GROUP_METADATA, fs->nodesize,
				       fs->nodesize, 0, &log_bytenr), 0);
	cr_assert_eq(btrfs_alloc_range(&bgs, BTRFS_BLOCK_GROUP_METADATA, fs->nodesize,
				       fs->nodesize, 0, &root_bytenr), 0);
	btrfs_free_block_groups(&bgs);
	cr_assert(memfs_fst_range_free(fs, log_bytenr, fs->nodesize));

	/* the log tree of subvolume 5 */
	tlog_leaf_init(&lb, buf, fs->nodesize, 0);
	dir_entry(&lb, BTRFS_FIRST_FREE_OBJECTID, BTRFS_DIR_INDEX_KEY, LOG_INDEX, gen);
	{
		struct btrfs_inode_item *ii;
		struct btrfs_inode_ref *ref;

		key = (struct btrfs_key){ LOG_INO, BTRFS_INODE_ITEM_KEY, 0 };
		ii = tlog_leaf_append(&lb, &key, NULL, sizeof(*ii));
		cr_assert_not_null(ii);
		btrfs_set_inode_item_generation(ii, gen);
		btrfs_set_inode_item_transid(ii, gen);
		btrfs_set_inode_item_size(ii, LOG_SIZE);
		btrfs_set_inode_item_nlink(ii, 1);
		btrfs_set_inode_item_mode(ii, S_IFREG | 0640);
		key = (struct btrfs_key){ LOG_INO, BTRFS_INODE_REF_KEY, BTRFS_FIRST_FREE_OBJECTID };
		ref = tlog_leaf_append(&lb, &key, NULL, sizeof(*ref) + len);
		cr_assert_not_null(ref);
		btrfs_set_inode_ref_index(ref, LOG_INDEX);
		btrfs_set_inode_ref_name_len(ref, len);
		memcpy(ref + 1, log_name, len);
	}
	finalize(fs, &lb, log_bytenr, gen);
	write_block(fs, log_bytenr, buf);

	/* the log root tree: one ROOT_ITEM for it */
	{
		struct btrfs_root_item *ri;

		tlog_leaf_init(&lb, buf, fs->nodesize, 0);
		key = (struct btrfs_key){ BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY,
					  BTRFS_FS_TREE_OBJECTID };
		ri = tlog_leaf_append(&lb, &key, NULL, sizeof(*ri));
		cr_assert_not_null(ri);
		btrfs_set_root_item_generation(ri, gen);
		btrfs_set_root_item_generation_v2(ri, gen);
		btrfs_set_root_item_bytenr(ri, log_bytenr);
		btrfs_set_root_item_level(ri, 0);
		btrfs_set_root_item_refs(ri, 0);
		btrfs_set_inode_item_nlink(&ri->inode, 1);
		btrfs_set_inode_item_mode(&ri->inode, S_IFDIR | 0755);
		finalize(fs, &lb, root_bytenr, gen);
		write_block(fs, root_bytenr, buf);
	}
	btrfs_set_super_block_log_root(&fs->super, root_bytenr);
	btrfs_set_super_block_log_root_level(&fs->super, 0);
	cr_assert_eq(btrfs_write_all_supers(fs), 0);
	free(buf);
	tlog_close(fs);
}

static int replay(struct tlog_fs *fs, struct tlog_replay_stats *st)
{
	struct tlog_trans *trans;
	int err = tlog_trans_start_flags(fs, TLOG_TRANS_LOG_REPLAY, &trans);

	if (err)
		return err;
	err = btrfs_replay_log(trans, st);
	if (err) {
		tlog_trans_abort(trans);
		return err;
	}
	return tlog_trans_commit(trans);
}

/* 1 when the replayed file is there (and right), 0 when it is absent. */
static int file_state(struct tlog_fs *fs)
{
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_dir_entry de;
	struct btrfs_inode_item ii, dir;
	int err;

	err = btrfs_lookup_dir_entry(root, BTRFS_FIRST_FREE_OBJECTID, log_name,
				     sizeof(log_name) - 1, &de);
	if (err == -ENOENT) {
		cr_assert_eq(btrfs_lookup_inode(root, LOG_INO, &ii), -ENOENT);
		return 0;
	}
	cr_assert_eq(err, 0, "%s", tlog_error_get());
	cr_assert_eq(de.location.objectid, LOG_INO);
	cr_assert_eq(de.type, BTRFS_FT_REG_FILE);
	cr_assert_eq(btrfs_read_inode(root, LOG_INO, &ii), 0);
	cr_assert_eq(btrfs_inode_item_size(&ii), LOG_SIZE);
	cr_assert_eq(btrfs_inode_item_nlink(&ii), 1);
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFREG | 0640);
	/* the parent counts the name twice (DIR_ITEM and DIR_INDEX) */
	cr_assert_eq(btrfs_read_inode(root, BTRFS_FIRST_FREE_OBJECTID, &dir), 0);
	cr_assert_eq(btrfs_inode_item_size(&dir), 2 * (sizeof(log_name) - 1));
	return 1;
}

Test(memfs_replay, logged_file_appears_and_log_root_is_cleared)
{
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_replay_stats st = { 0 };
	struct tlog_fs *fs;
	u64 gen;

	plant_log(bdev);
	fs = memfs_open(bdev, 0, 0);
	cr_assert_not_null(fs->log_root_tree, "the planted log is not seen");
	cr_assert_eq(file_state(fs), 0);
	gen = fs->generation;
	cr_assert_eq(replay(fs, &st), 0, "%s", tlog_error_get());
	cr_assert_eq(st.nr, 1);
	cr_assert_eq(st.inodes[0].ino, LOG_INO);
	cr_assert(st.inodes[0].created);
	cr_assert_geq(st.names_added, 1);
	tlog_replay_stats_free(&st);
	tlog_close(fs);

	fs = memfs_open(bdev, 0, 0);
	cr_assert_null(fs->log_root_tree);
	cr_assert_eq(btrfs_super_block_log_root(&fs->super), 0);
	cr_assert_eq(fs->generation, gen + 1);
	cr_assert_eq(file_state(fs), 1);
	memfs_check_free_space_tree(fs);
	tlog_close(fs);
	tlog_bdev_close(bdev);
}

static struct tlog_bdev *fault_setup(void *arg)
{
	struct tlog_bdev *bdev = memfs_make();

	(void)arg;
	plant_log(bdev);
	return bdev;
}

static int fault_change(struct tlog_fs *fs, void *arg)
{
	(void)arg;
	return replay(fs, NULL);
}

static void fault_check(struct tlog_fs *fs, void *arg, bool new_state, const char *where)
{
	(void)arg;
	where = where ? where : "clean run";
	if (new_state) {
		cr_assert_null(fs->log_root_tree, "%s: replayed, and the log is still there", where);
		cr_assert_eq(file_state(fs), 1, "%s", where);
		return;
	}
	/* the old state: the log is still there, and replays */
	cr_assert_not_null(fs->log_root_tree, "%s: not replayed, and no log", where);
	cr_assert_eq(file_state(fs), 0, "%s", where);
	cr_assert_eq(replay(fs, NULL), 0, "%s: the second replay: %s", where, tlog_error_get());
	cr_assert_null(fs->log_root_tree);
	cr_assert_eq(btrfs_super_block_log_root(&fs->super), 0);
	cr_assert_eq(file_state(fs), 1, "%s: the second replay", where);
}

Test(memfs_replay, fault_at_every_write)
{
	struct memfs_fault_case fc = { "replay", fault_setup, fault_change, fault_check, NULL };
	struct memfs_fault_stats st;

	memfs_fault_sweep(&fc, &st);
	cr_assert_geq(st.writes, 8);
}
