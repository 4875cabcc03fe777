// SPDX-License-Identifier: GPL-2.0-only
/*
 * Data extents: allocation with their extent item and back reference, and
 * release with the item, checksums and space (as the kernel's
 * __btrfs_free_extent; Documentation/design/format.md).
 *
 * A new extent has one inline EXTENT_DATA_REF.  Dropping a reference of an
 * extent others still use (reflinks, snapshots) only removes that
 * reference; the last one takes the item, checksums and space.
 */
#include <errno.h>
#include <string.h>

#include "backref.h"
#include "errctx.h"
#include "extent-tree.h"
#include "misc.h"
#include "file-item.h"
#include "root-tree.h"
#include "transaction.h"
#include "tree-checker.h"

#define DATA_ITEM_SIZE (sizeof(struct btrfs_extent_item) + 1 + \
			sizeof(struct btrfs_extent_data_ref))

/* The extent item of a new data extent with one reference. */
static int insert_data_extent_item(struct tlog_trans *trans, struct btrfs_root *eroot,
				   u64 bytenr, u64 len, u64 root, u64 ino, u64 offset)
{
	u8 buf[DATA_ITEM_SIZE] = { 0 };
	struct btrfs_extent_item *ei = (struct btrfs_extent_item *)buf;
	struct btrfs_extent_data_ref *dref = (void *)(buf + sizeof(*ei) + 1);
	struct btrfs_key key = { bytenr, BTRFS_EXTENT_ITEM_KEY, len };

	btrfs_set_extent_item_refs(ei, 1);
	btrfs_set_extent_item_generation(ei, trans->transid);
	btrfs_set_extent_item_flags(ei, BTRFS_EXTENT_FLAG_DATA);
	buf[sizeof(*ei)] = BTRFS_EXTENT_DATA_REF_KEY;
	btrfs_set_extent_data_ref_root(dref, root);
	btrfs_set_extent_data_ref_objectid(dref, ino);
	btrfs_set_extent_data_ref_offset(dref, offset);
	btrfs_set_extent_data_ref_count(dref, 1);
	return btrfs_insert_item(trans, eroot, &key, buf, sizeof(buf));
}

int btrfs_alloc_data_extent_upto(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
				 u64 offset, u64 len, u64 *bytenr, u64 *got)
{
	struct btrfs_root *eroot;
	int err;

	if (len == 0 || !IS_ALIGNED(len, trans->fs->sectorsize))
		return tlog_error(-EINVAL, "data extent length %llu is not a sector multiple",
				  (unsigned long long)len);
	err = btrfs_read_root(trans->fs, BTRFS_EXTENT_TREE_OBJECTID, &eroot);
	if (!err)
		err = tlog_trans_alloc_extent(trans, BTRFS_BLOCK_GROUP_DATA, len,
					      got ? trans->fs->sectorsize : len, bytenr, &len);
	if (!err)
		err = insert_data_extent_item(trans, eroot, *bytenr, len,
					      root->root_key.objectid, ino, offset);
	if (!err && got)
		*got = len;
	return err ? err : tlog_trans_account_space(trans, *bytenr, len, true);
}

int btrfs_alloc_data_extent(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			    u64 offset, u64 len, u64 *bytenr)
{
	return btrfs_alloc_data_extent_upto(trans, root, ino, offset, len, bytenr, NULL);
}

int btrfs_claim_logged_data_extent(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root,
				   u64 ino, u64 offset)
{
	struct btrfs_root *eroot;
	int err;

	if (len == 0 || !IS_ALIGNED(len, trans->fs->sectorsize) ||
	    !IS_ALIGNED(bytenr, trans->fs->sectorsize))
		return tlog_error(-EUCLEAN, "logged data extent %llu+%llu is not sector aligned",
				  (unsigned long long)bytenr, (unsigned long long)len);
	err = btrfs_read_root(trans->fs, BTRFS_EXTENT_TREE_OBJECTID, &eroot);
	if (!err)
		err = insert_data_extent_item(trans, eroot, bytenr, len, root, ino, offset);
	return err ? err : tlog_trans_claim_space(trans, bytenr, len);
}

/* The extent item at the path, read without judging; false if it is cut short. */
static bool read_extent_item(const struct btrfs_path *path, struct tlog_extent_item *ei)
{
	struct btrfs_key key;

	btrfs_item_key_to_cpu(path->nodes[0], &key, path->slots[0]);
	return btrfs_parse_extent_item(btrfs_item_ptr(path->nodes[0], path->slots[0]),
				       btrfs_item_size(path->nodes[0], path->slots[0]), &key, ei) == 0;
}

/* Whether the item at the path holds exactly the one reference given. */
static bool only_this_ref(const struct btrfs_path *path, u64 root, u64 ino, u64 offset)
{
	struct tlog_extent_item ei;
	struct tlog_extent_ref ref;
	u32 cur;

	if (!read_extent_item(path, &ei) || ei.size != DATA_ITEM_SIZE || ei.refs != 1)
		return false;
	cur = ei.refs_start;
	return btrfs_next_inline_ref(&ei, &cur, &ref) == 0 &&
	       ref.type == BTRFS_EXTENT_DATA_REF_KEY && ref.root == root &&
	       ref.objectid == ino && ref.file_offset == offset && ref.count == 1;
}

/* The refs count of the extent item at the path; false if the item is too small. */
static bool item_refs(const struct btrfs_path *path, u64 *refs)
{
	struct tlog_extent_item ei;

	if (!read_extent_item(path, &ei))
		return false;
	*refs = ei.refs;
	return true;
}

/* Delete the extent item at the path (released here), its checksums and its space. */
static int delete_data_extent(struct tlog_trans *trans, struct btrfs_root *eroot,
			      struct btrfs_path *path, u64 bytenr, u64 len)
{
	int ret = btrfs_del_items(trans, eroot, path, path->slots[0], 1);

	btrfs_release_path(path);
	if (!ret)
		ret = btrfs_delete_data_csums(trans, bytenr, len);
	return ret ? ret : tlog_trans_account_space(trans, bytenr, len, false);
}

int btrfs_search_extent_tree(struct tlog_trans *trans, const struct btrfs_key *key, int ins_len,
			     struct btrfs_root **eroot, struct btrfs_path *path)
{
	int ret = btrfs_read_root(trans->fs, BTRFS_EXTENT_TREE_OBJECTID, eroot);

	if (ret)
		return ret;
	btrfs_init_path(path);
	ret = btrfs_search_slot_for_write(trans, *eroot, key, path, ins_len);
	if (ret < 0)
		btrfs_release_path(path);
	return ret;
}

int btrfs_free_data_extent(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root,
			   u64 ino, u64 offset)
{
	struct btrfs_key key = { bytenr, BTRFS_EXTENT_ITEM_KEY, len };
	struct btrfs_root *eroot;
	struct btrfs_path path;
	u64 refs = 0;
	int ret;

	ret = btrfs_search_extent_tree(trans, &key, -1, &eroot, &path);
	if (ret < 0)
		return ret;
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "data extent %llu+%llu has no extent item",
				 (unsigned long long)bytenr, (unsigned long long)len);
	if (ret == 0 && item_refs(&path, &refs) && refs > 1) {
		/* others still use it (reflinks, snapshots): one reference less */
		btrfs_release_path(&path);
		return btrfs_drop_data_ref(trans, bytenr, len, root, ino, offset);
	}
	if (ret == 0 && tlog_trans_defers_frees(trans)) {
		/*
		 * As the kernel's delayed references: the extent stays until the
		 * end of the transaction, and a reference added meanwhile (log
		 * replay re-adding what it just truncated away) revives it with
		 * its checksums.
		 */
		btrfs_release_path(&path);
		ret = btrfs_drop_last_data_ref(trans, bytenr, len, root, ino, offset);
		return ret ? ret : tlog_trans_defer_data_free(trans, bytenr, len);
	}
	if (ret == 0 && refs == 1 && !only_this_ref(&path, root, ino, offset)) {
		/*
		 * The last reference is a keyed one (a reflink outlived the
		 * inline reference of the extent's first file): drop it, and
		 * the extent with it.
		 */
		btrfs_release_path(&path);
		ret = btrfs_drop_last_data_ref(trans, bytenr, len, root, ino, offset);
		return ret ? ret : btrfs_finish_data_free(trans, bytenr, len);
	}
	if (ret == 0 && !only_this_ref(&path, root, ino, offset))
		ret = tlog_error(-EUCLEAN, "data extent %llu: its only reference is not (%llu %llu %llu)",
				 (unsigned long long)bytenr, (unsigned long long)root,
				 (unsigned long long)ino, (unsigned long long)offset);
	if (ret == 0)
		return delete_data_extent(trans, eroot, &path, bytenr, len);
	btrfs_release_path(&path);
	return ret;
}

/* The path at the extent item of the data extent (@bytenr, @len): it must have one. */
static int find_data_extent_item(struct tlog_fs *fs, u64 bytenr, u64 len, struct btrfs_path *path)
{
	struct btrfs_key key = { bytenr, BTRFS_EXTENT_ITEM_KEY, len };
	struct btrfs_root *eroot;
	int ret = btrfs_read_root(fs, BTRFS_EXTENT_TREE_OBJECTID, &eroot);

	btrfs_init_path(path);
	if (ret)
		return ret;
	ret = btrfs_search_slot(eroot, &key, path);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "data extent %llu has no extent item",
				 (unsigned long long)bytenr);
	return ret;
}

/* check_committed_ref: one inline EXTENT_DATA_REF naming the file, counting every reference. */
static bool only_this_file_refs(const struct tlog_extent_item *ei, struct btrfs_root *root,
				u64 ino, u64 offset)
{
	struct tlog_extent_ref ref;
	u32 cur;

	if (ei->size != ei->refs_start + btrfs_inline_ref_size(BTRFS_EXTENT_DATA_REF_KEY))
		return false;
	if (ei->generation <= btrfs_root_item_last_snapshot(&root->root_item))
		return false;
	cur = ei->refs_start;
	if (btrfs_next_inline_ref(ei, &cur, &ref) != 0 || ref.type != BTRFS_EXTENT_DATA_REF_KEY)
		return false;
	return ei->refs == ref.count && ref.root == root->root_key.objectid &&
	       ref.objectid == ino && ref.file_offset == offset;
}

int btrfs_data_extent_shared(struct tlog_fs *fs, struct btrfs_root *root, u64 ino, u64 offset,
			     u64 bytenr, u64 len, bool *shared)
{
	struct btrfs_key key = { bytenr, BTRFS_EXTENT_ITEM_KEY, len };
	struct tlog_extent_item ei;
	struct btrfs_path path;
	int ret = find_data_extent_item(fs, bytenr, len, &path);

	*shared = true;
	if (ret == 0 && btrfs_decode_extent_item(fs, path.nodes[0], path.slots[0], &key, &ei))
		ret = -EUCLEAN;	/* the finding names it */
	if (ret == 0)
		*shared = !only_this_file_refs(&ei, root, ino, offset);
	btrfs_release_path(&path);
	return ret;
}

int btrfs_finish_data_free(struct tlog_trans *trans, u64 bytenr, u64 len)
{
	struct btrfs_key key = { bytenr, BTRFS_EXTENT_ITEM_KEY, len };
	struct btrfs_root *eroot;
	struct btrfs_path path;
	u64 refs;
	int ret;

	ret = btrfs_search_extent_tree(trans, &key, -1, &eroot, &path);
	if (ret < 0)
		return ret;
	if (ret > 0) {
		/* freed already (deferred twice) */
		btrfs_release_path(&path);
		return 0;
	}
	if (ret == 0 && item_refs(&path, &refs) && refs == 0)
		return delete_data_extent(trans, eroot, &path, bytenr, len);
	/* referenced again: it stays */
	btrfs_release_path(&path);
	return ret < 0 ? ret : 0;
}
