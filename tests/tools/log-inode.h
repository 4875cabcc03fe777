/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * For tests of the log: copy every item of one inode (inode item, names,
 * extents...) of a subvolume into its log tree in the running
 * transaction, leaf run by leaf run, and the checksums of its regular
 * extents: what a full fsync of a new inode logs.  The inode's items must
 * be written back to the tree first.  Header-only: the unit tests and
 * tests/tools/ltest both use it.
 */
#ifndef TESTS_LOG_INODE_H
#define TESTS_LOG_INODE_H

#include "ctree.h"
#include "file-item.h"
#include "transaction.h"

static inline int test_log_csums_of(struct tlog_trans *trans, struct btrfs_root *log,
				    const struct extent_buffer *leaf, int slot)
{
	const struct btrfs_file_extent_item *fe = btrfs_item_ptr(leaf, slot);
	u64 bytenr, len, copied;

	if (btrfs_item_size(leaf, slot) < sizeof(*fe) ||
	    btrfs_file_extent_item_type(fe) != BTRFS_FILE_EXTENT_REG)
		return 0;
	bytenr = btrfs_file_extent_item_disk_bytenr(fe);
	len = btrfs_file_extent_item_disk_num_bytes(fe);
	return bytenr ? btrfs_log_csums(trans, log, bytenr, bytenr + len, &copied) : 0;
}

static inline int test_log_inode(struct tlog_trans *trans, struct btrfs_root *root, u64 ino)
{
	struct btrfs_key key = { ino, 0, 0 };
	struct btrfs_root *log;
	int err;

	err = tlog_trans_log_tree(trans, root, &log);
	/* logged anew: what an earlier sync logged of it goes */
	if (!err)
		err = btrfs_delete_objectid_items(trans, log, ino);
	while (!err) {
		struct btrfs_path path;
		struct extent_buffer *leaf;
		int slot, n = 0, ret;
		bool leaf_end;

		btrfs_init_path(&path);
		ret = btrfs_search_forward(root, &key, &path);
		if (ret) {
			btrfs_release_path(&path);
			return ret < 0 ? ret : 0;
		}
		leaf = path.nodes[0];
		slot = path.slots[0];
		while (slot + n < (int)btrfs_header_nritems_eb(leaf)) {
			btrfs_item_key_to_cpu(leaf, &key, slot + n);
			if (key.objectid != ino)
				break;
			n++;
		}
		leaf_end = slot + n == (int)btrfs_header_nritems_eb(leaf);
		if (n)
			err = btrfs_copy_items(trans, log, leaf, slot, n);
		for (int i = 0; !err && i < n; i++) {
			btrfs_item_key_to_cpu(leaf, &key, slot + i);
			if (key.type == BTRFS_EXTENT_DATA_KEY)
				err = test_log_csums_of(trans, log, leaf, slot + i);
		}
		btrfs_release_path(&path);
		if (n == 0 || !leaf_end)
			break;
		/* the leaf ended inside the inode: on after the last key copied */
		if (++key.offset == 0 && ++key.type == 0)
			break;
	}
	return err;
}

#endif
