// SPDX-License-Identifier: GPL-2.0-only
/*
 * Log trees (log-tree.md): counting what they hold, and discarding them.
 */
#include <errno.h>

#include "blockdev.h"
#include "super.h"
#include "errctx.h"
#include "tree-log.h"

/* Distinct objectids with an INODE_ITEM in one log tree. */
static int count_inodes_in(struct btrfs_root *log, u64 *inodes)
{
	struct btrfs_key min = { 0, 0, 0 }, max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_tree_iter iter;
	int err;

	btrfs_for_each_item(log, &iter, &min, &max)
		if (iter.key.type == BTRFS_INODE_ITEM_KEY)
			(*inodes)++;
	err = iter.ret < 0 ? iter.ret : 0;
	btrfs_tree_iter_end(&iter);
	return err;
}

int btrfs_count_logged_inodes(struct tlog_fs *fs, u64 *inodes, u64 *subvols)
{
	struct btrfs_key min = { BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0 };
	struct btrfs_key max = { BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	u64 ids[256];
	size_t nr = 0;
	int err = 0;

	tlog_error_clear();
	*inodes = 0;
	*subvols = 0;
	if (!fs->log_root_tree)
		return 0;
	/* collect the subvolume ids first: reading a log root moves no iterator */
	btrfs_for_each_item(fs->log_root_tree, &iter, &min, &max)
		if (nr < sizeof(ids) / sizeof(ids[0]))
			ids[nr++] = iter.key.offset;
	if (iter.ret < 0)
		err = iter.ret;
	btrfs_tree_iter_end(&iter);
	for (size_t i = 0; !err && i < nr; i++) {
		struct btrfs_root *log;

		err = btrfs_read_log_root(fs, ids[i], &log);
		if (!err)
			err = count_inodes_in(log, inodes);
	}
	*subvols = nr;
	return err;
}

int btrfs_discard_log(struct tlog_fs *fs)
{
	int err;

	tlog_error_clear();
	if (!fs->bdev->writable)
		return tlog_error(-EROFS, "the image is open read-only");
	if (!btrfs_super_block_log_root(&fs->super))
		return 0;
	btrfs_set_super_block_log_root(&fs->super, 0);
	btrfs_set_super_block_log_root_level(&fs->super, 0);
	err = tlog_bdev_flush(fs->bdev);
	if (!err)
		err = btrfs_write_all_supers(fs);
	if (!err)
		err = tlog_bdev_flush(fs->bdev);
	return err;
}
