// SPDX-License-Identifier: GPL-2.0-only
/*
 * wtest: drive the write path from test scripts.
 *
 *   wtest mkdir IMAGE COUNT PER_TRANS PREFIX
 *
 * Creates COUNT directories PREFIX-NNNNN in the top-level directory,
 * committing a transaction every PER_TRANS of them.  TLOG_FAULT_INJECT=
 * fail:N or drop:N makes the Nth write and all after it fail or vanish;
 * the number of writes issued is printed on stderr.  The items are those
 * the kernel writes for mkdir, so btrfs check and a mount can judge the
 * result.  Not a user command: `tlogctl run` will do this properly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "csum.h"
#include "ctree.h"
#include "errctx.h"
#include "blockdev.h"
#include "inode.h"
#include "transaction.h"

static u64 next_objectid(struct btrfs_root *root)
{
	struct btrfs_key key = { BTRFS_LAST_FREE_OBJECTID, (u8)-1, (u64)-1 };
	struct btrfs_path path;
	u64 ret = BTRFS_FIRST_FREE_OBJECTID;

	btrfs_init_path(&path);
	if (btrfs_search_slot(root, &key, &path) > 0 && btrfs_prev_item(root, &path) == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.objectid >= BTRFS_FIRST_FREE_OBJECTID)
			ret = key.objectid + 1;
	}
	btrfs_release_path(&path);
	return ret;
}

static u64 next_dir_index(struct btrfs_root *root, u64 dir)
{
	struct btrfs_key key = { dir, BTRFS_DIR_INDEX_KEY, (u64)-1 };
	struct btrfs_path path;
	u64 ret = 2;

	btrfs_init_path(&path);
	if (btrfs_search_backwards(root, &key, &path) == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		ret = key.offset + 1;
	}
	btrfs_release_path(&path);
	return ret;
}

static void set_now(struct btrfs_timespec *ts)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	btrfs_set_timespec_sec(ts, now.tv_sec);
	btrfs_set_timespec_nsec(ts, now.tv_nsec);
}

static int insert_dir_entry(struct tlog_trans *trans, struct btrfs_root *root,
			    const struct btrfs_key *key, u64 child, const char *name, u16 len)
{
	u8 buf[sizeof(struct btrfs_dir_item) + BTRFS_NAME_LEN];
	struct btrfs_dir_item *di = (struct btrfs_dir_item *)buf;
	struct btrfs_key loc = { child, BTRFS_INODE_ITEM_KEY, 0 };

	memset(buf, 0, sizeof(buf));
	btrfs_cpu_key_to_disk(&di->location, &loc);
	btrfs_set_dir_item_transid(di, trans->transid);
	btrfs_set_dir_item_name_len(di, len);
	btrfs_set_dir_item_type(di, BTRFS_FT_DIR);
	memcpy(di + 1, name, len);
	return btrfs_insert_item(trans, root, key, buf, sizeof(*di) + len);
}

static int do_mkdir(struct tlog_trans *trans, struct btrfs_root *root, u64 parent,
		    const char *name)
{
	u16 len = strlen(name);
	u64 ino = next_objectid(root), index = next_dir_index(root, parent);
	struct btrfs_key keys[2] = {
		{ ino, BTRFS_INODE_ITEM_KEY, 0 },
		{ ino, BTRFS_INODE_REF_KEY, parent },
	};
	u32 sizes[2] = { sizeof(struct btrfs_inode_item), sizeof(struct btrfs_inode_ref) + len };
	struct btrfs_key dkey = { parent, BTRFS_DIR_ITEM_KEY, btrfs_name_hash(name, len) };
	struct btrfs_inode_item *ii;
	struct btrfs_inode_ref *ref;
	struct btrfs_path path;
	int ret;

	/* the inode and its name in one batch */
	btrfs_init_path(&path);
	ret = btrfs_insert_empty_items(trans, root, &path, keys, sizes, 2);
	if (ret)
		return ret;
	ii = btrfs_item_ptr(path.nodes[0], path.slots[0]);
	btrfs_set_inode_item_generation(ii, trans->transid);
	btrfs_set_inode_item_transid(ii, trans->transid);
	btrfs_set_inode_item_nlink(ii, 1);
	btrfs_set_inode_item_mode(ii, S_IFDIR | 0755);
	set_now(&ii->atime);
	ii->ctime = ii->mtime = ii->otime = ii->atime;
	ref = btrfs_item_ptr(path.nodes[0], path.slots[0] + 1);
	btrfs_set_inode_ref_index(ref, index);
	btrfs_set_inode_ref_name_len(ref, len);
	memcpy(ref + 1, name, len);
	btrfs_release_path(&path);

	ret = insert_dir_entry(trans, root, &dkey, ino, name, len);
	if (!ret) {
		dkey.type = BTRFS_DIR_INDEX_KEY;
		dkey.offset = index;
		ret = insert_dir_entry(trans, root, &dkey, ino, name, len);
	}
	if (ret)
		return ret;

	/* the parent grows by the name twice (DIR_ITEM and DIR_INDEX) */
	keys[0] = (struct btrfs_key){ parent, BTRFS_INODE_ITEM_KEY, 0 };
	ret = btrfs_search_slot_for_write(trans, root, &keys[0], &path, 0);
	if (ret == 0) {
		ii = btrfs_item_ptr(path.nodes[0], path.slots[0]);
		btrfs_set_inode_item_size(ii, btrfs_inode_item_size(ii) + 2 * len);
		btrfs_set_inode_item_transid(ii, trans->transid);
		btrfs_set_inode_item_sequence(ii, btrfs_inode_item_sequence(ii) + 1);
		set_now(&ii->mtime);
		ii->ctime = ii->mtime;
	} else if (ret > 0) {
		ret = -ENOENT;
	}
	btrfs_release_path(&path);
	return ret;
}

int main(int argc, char **argv)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true };
	struct tlog_trans *trans = NULL;
	struct btrfs_root *root;
	struct tlog_fs *fs;
	long count, per;
	int err;

	if (argc != 6 || strcmp(argv[1], "mkdir") != 0) {
		fprintf(stderr, "usage: wtest mkdir IMAGE COUNT PER_TRANS PREFIX\n");
		return 2;
	}
	count = atol(argv[3]);
	per = atol(argv[4]);
	if (getenv("TLOG_FAULT_INJECT")) {
		char mode[8];
		unsigned long long nth;

		if (sscanf(getenv("TLOG_FAULT_INJECT"), "%7[a-z]:%llu", mode, &nth) != 2) {
			fprintf(stderr, "wtest: bad TLOG_FAULT_INJECT\n");
			return 2;
		}
		opts.fault_mode = strcmp(mode, "drop") ? TLOG_FAULT_FAIL : TLOG_FAULT_DROP;
		opts.fault_nth = nth;
	}
	err = tlog_open(argv[2], &opts, &fs);
	if (err) {
		fprintf(stderr, "open: %s\n", tlog_error_get());
		return 1;
	}
	err = btrfs_read_root(fs, BTRFS_FS_TREE_OBJECTID, &root);
	for (long i = 0; !err && i < count; i++) {
		char name[256];

		if (!trans)
			err = tlog_trans_start(fs, &trans);
		if (err)
			break;
		snprintf(name, sizeof(name), "%s-%05ld", argv[5], i);
		err = do_mkdir(trans, root, btrfs_root_item_root_dirid(&root->root_item), name);
		if (!err && ((i + 1) % per == 0 || i + 1 == count)) {
			err = tlog_trans_commit(trans);
			trans = NULL;
		}
	}
	if (err) {
		if (trans)
			tlog_trans_abort(trans);
		fprintf(stderr, "wtest: %d %s\n", err, tlog_error_get() ? tlog_error_get() : "");
	}
	fprintf(stderr, "writes: %llu\n", (unsigned long long)fs->bdev->nr_writes);
	tlog_close(fs);
	return err ? 1 : 0;
}
