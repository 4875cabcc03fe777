// SPDX-License-Identifier: GPL-2.0-only
/*
 * File extent items of an inode: dropping a range of a file (Documentation/design/format.md, "Data and checksums"),
 * as truncate, punch and log replay need it.
 *
 * An item that straddles an end of the range is cut, keeping its extent
 * and adjusting (key offset, extent offset, num_bytes); one that spans the
 * whole range is split in two, and the second half takes one more
 * reference to the same extent (same root, inode and key.offset -
 * extent offset, so the same EXTENT_DATA_REF counted twice).  Items fully
 * inside lose their reference; the last reference frees the extent.
 */
#include <errno.h>
#include <string.h>

#include "backref.h"
#include "errctx.h"
#include "extent-tree.h"
#include "file-extent.h"
#include "misc.h"
#include "tree-checker.h"

struct found_extent {
	struct btrfs_key key;
	struct tlog_file_extent ext;
	struct btrfs_file_extent_item fi;	/* the item as found, to write back cut */
};

static int decode_extent(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			 struct found_extent *fe)
{
	int ret;

	btrfs_item_key_to_cpu(leaf, &fe->key, slot);
	ret = btrfs_decode_file_extent(fs, leaf, slot, &fe->key, &fe->ext);
	if (ret)
		return ret;
	/* only a regular or prealloc item is ever cut and written back */
	memset(&fe->fi, 0, sizeof(fe->fi));
	if (fe->ext.type != BTRFS_FILE_EXTENT_INLINE)
		memcpy(&fe->fi, btrfs_item_ptr(leaf, slot), sizeof(fe->fi));
	return 0;
}

/*
 * Whether the item at @slot of @leaf is an extent of @ino that reaches
 * past @pos: 1 with *@fe filled in, 0 if not, or the error decoding it.
 */
static int extent_reaches(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			  u64 ino, u64 pos, struct found_extent *fe)
{
	struct btrfs_key key;
	int ret;

	btrfs_item_key_to_cpu(leaf, &key, slot);
	if (key.objectid != ino || key.type != BTRFS_EXTENT_DATA_KEY)
		return 0;
	ret = decode_extent(fs, leaf, slot, fe);
	return ret ? ret : fe->ext.end > pos;
}

/* The first extent item of @ino ending after @pos, starting before @end; 1 if none. */
static int next_extent(struct btrfs_root *root, u64 ino, u64 pos, u64 end,
		       struct found_extent *fe)
{
	struct btrfs_key key = { ino, BTRFS_EXTENT_DATA_KEY, pos };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, &key, &path);
	if (ret > 0 && path.slots[0] > 0) {
		/*
		 * The item before, in this leaf, may reach into the range;
		 * if not, the first item after @pos is where the search
		 * stopped (or the first of the next leaf).
		 */
		ret = extent_reaches(root->fs, path.nodes[0], path.slots[0] - 1, ino, pos, fe);
		if (ret)
			goto found_before;
		if (path.slots[0] < (int)btrfs_header_nritems_eb(path.nodes[0])) {
			ret = 0;
		} else {
			path.slots[0]--;
			ret = btrfs_next_item(root, &path);
		}
	} else if (ret > 0) {
		/* the item before, in an earlier leaf, may reach into the range */
		ret = btrfs_prev_item(root, &path);
		if (ret == 0) {
			ret = extent_reaches(root->fs, path.nodes[0], path.slots[0], ino, pos, fe);
			if (ret)
				goto found_before;
		}
		key = (struct btrfs_key){ ino, BTRFS_EXTENT_DATA_KEY, pos };
		btrfs_release_path(&path);
		ret = ret < 0 ? ret : btrfs_search_forward(root, &key, &path);
	}
	if (ret == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.objectid != ino || key.type != BTRFS_EXTENT_DATA_KEY || key.offset >= end)
			ret = 1;
		else
			ret = decode_extent(root->fs, path.nodes[0], path.slots[0], fe);
	}
	btrfs_release_path(&path);
	return ret;

found_before:
	btrfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

static bool has_extent(const struct found_extent *fe)
{
	return fe->ext.type != BTRFS_FILE_EXTENT_INLINE && fe->ext.disk_bytenr != 0;
}

/* Bytes of the extent that count in the inode's nbytes. */
static bool counts_bytes(const struct found_extent *fe)
{
	return fe->ext.type == BTRFS_FILE_EXTENT_INLINE || has_extent(fe);
}

/* Replace the item @fe by a copy starting at @new_start (a cut front). */
static int move_item_start(struct tlog_trans *trans, struct btrfs_root *root,
			   const struct found_extent *fe, u64 new_start, u64 new_end)
{
	struct btrfs_file_extent_item fi = fe->fi;
	struct btrfs_key key = fe->key;
	int ret;

	btrfs_set_file_extent_item_offset(&fi, fe->ext.offset + (new_start - fe->key.offset));
	btrfs_set_file_extent_item_num_bytes(&fi, new_end - new_start);
	ret = btrfs_delete_item(trans, root, &fe->key);
	key.offset = new_start;
	return ret ? ret : btrfs_insert_item(trans, root, &key, &fi, sizeof(fi));
}

/* Shorten the item @fe to end at @new_end. */
static int cut_item_tail(struct tlog_trans *trans, struct btrfs_root *root,
			 const struct found_extent *fe, u64 new_end)
{
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, root, &fe->key, &path, 0);
	if (ret > 0)
		ret = -EUCLEAN;
	if (ret == 0)
		btrfs_set_file_extent_item_num_bytes(btrfs_item_ptr(path.nodes[0], path.slots[0]),
						     new_end - fe->key.offset);
	btrfs_release_path(&path);
	return ret;
}

/* Log trees hold no references of their own (the kernel's non-shareable roots). */
static bool updates_refs(const struct btrfs_root *root)
{
	return root->root_key.objectid != BTRFS_TREE_LOG_OBJECTID;
}

static u64 ref_offset(const struct found_extent *fe)
{
	return fe->key.offset - fe->ext.offset;
}

static int drop_whole_item(struct tlog_trans *trans, struct btrfs_root *root,
			   const struct found_extent *fe)
{
	int ret = btrfs_delete_item(trans, root, &fe->key);

	if (ret || !has_extent(fe) || !updates_refs(root))
		return ret;
	return btrfs_free_data_extent(trans, fe->ext.disk_bytenr, fe->ext.disk_num_bytes,
				      root->root_key.objectid, fe->key.objectid, ref_offset(fe));
}

/* The item spans [start, end) and more on both sides: keep both ends. */
static int split_around(struct tlog_trans *trans, struct btrfs_root *root,
			const struct found_extent *fe, u64 start, u64 end)
{
	struct btrfs_file_extent_item tail = fe->fi;
	struct btrfs_key key = fe->key;
	int ret;

	btrfs_set_file_extent_item_offset(&tail, fe->ext.offset + (end - fe->key.offset));
	btrfs_set_file_extent_item_num_bytes(&tail, fe->ext.end - end);
	ret = cut_item_tail(trans, root, fe, start);
	key.offset = end;
	if (!ret)
		ret = btrfs_insert_item(trans, root, &key, &tail, sizeof(tail));
	if (ret || !has_extent(fe) || !updates_refs(root))
		return ret;
	return btrfs_add_data_ref(trans, fe->ext.disk_bytenr, fe->ext.disk_num_bytes,
				  root->root_key.objectid, fe->key.objectid, ref_offset(fe));
}

int btrfs_drop_file_extents(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			    u64 start, u64 end, u64 *bytes_found)
{
	u32 ss = root->fs->sectorsize;
	u64 pos = start;
	int ret = 0;

	*bytes_found = 0;
	if (!IS_ALIGNED(start, ss) || (end != (u64)-1 && !IS_ALIGNED(end, ss)))
		return tlog_error(-EINVAL, "inode %llu: dropping unaligned range %llu-%llu",
				  (unsigned long long)ino, (unsigned long long)start,
				  (unsigned long long)end);
	while (pos < end) {
		struct found_extent fe;
		u64 lo, hi;
		bool inl;

		ret = next_extent(root, ino, pos, end, &fe);
		if (ret)
			break;
		inl = fe.ext.type == BTRFS_FILE_EXTENT_INLINE;
		lo = fe.key.offset > start ? fe.key.offset : start;
		hi = fe.ext.end < end ? fe.ext.end : end;
		if (inl && (fe.key.offset < start || fe.ext.end > end)) {
			/* the kernel cannot cut inline extents either */
			ret = tlog_error(-EOPNOTSUPP,
					 "inode %llu: dropping part of an inline extent",
					 (unsigned long long)ino);
			break;
		}
		if (fe.key.offset < start && fe.ext.end > end)
			ret = split_around(trans, root, &fe, start, end);
		else if (fe.key.offset < start)
			ret = cut_item_tail(trans, root, &fe, start);
		else if (fe.ext.end > end)
			ret = move_item_start(trans, root, &fe, end, fe.ext.end);
		else
			ret = drop_whole_item(trans, root, &fe);
		if (ret)
			break;
		if (counts_bytes(&fe))
			*bytes_found += hi - lo;
		pos = fe.ext.end > pos ? fe.ext.end : pos + 1;
	}
	return ret > 0 ? 0 : ret;
}

/* ---- writing into preallocated space ---- */

/*
 * Whether @n, the item next to the written range on one side, is a
 * regular piece of the same extent mapped contiguously with it (the
 * same extent offset origin), so that the written range and @n become
 * one item, as btrfs_mark_extent_written merges them.
 */
static bool merges_with(const struct found_extent *n, const struct found_extent *p)
{
	return n->ext.type == BTRFS_FILE_EXTENT_REG && !n->ext.compression &&
	       !btrfs_file_extent_item_encryption(&n->fi) &&
	       !btrfs_file_extent_item_other_encoding(&n->fi) &&
	       n->ext.disk_bytenr == p->ext.disk_bytenr && ref_offset(n) == ref_offset(p);
}

/* The extent item of @ino covering @pos exactly from its start (1: none). */
static int extent_starting_at(struct btrfs_root *root, u64 ino, u64 pos, struct found_extent *fe)
{
	int ret = next_extent(root, ino, pos, pos + 1, fe);

	return ret ? ret : fe->key.offset == pos ? 0 : 1;
}

/* The extent item of @ino ending exactly at @pos (1: none). */
static int extent_ending_at(struct btrfs_root *root, u64 ino, u64 pos, struct found_extent *fe)
{
	int ret = pos ? next_extent(root, ino, pos - 1, pos, fe) : 1;

	return ret ? ret : fe->ext.end == pos && fe->key.offset < pos ? 0 : 1;
}

/* A piece [start, end) of the item @p, of @type, stamped with this transaction. */
static int insert_piece(struct tlog_trans *trans, struct btrfs_root *root,
			const struct found_extent *p, u8 type, u64 start, u64 end)
{
	struct btrfs_file_extent_item fi = p->fi;
	struct btrfs_key key = { p->key.objectid, BTRFS_EXTENT_DATA_KEY, start };

	btrfs_set_file_extent_item_type(&fi, type);
	btrfs_set_file_extent_item_generation(&fi, trans->transid);
	btrfs_set_file_extent_item_offset(&fi, start - ref_offset(p));
	btrfs_set_file_extent_item_num_bytes(&fi, end - start);
	return btrfs_insert_item(trans, root, &key, &fi, sizeof(fi));
}

int btrfs_mark_extent_written(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			      u64 start, u64 end)
{
	struct found_extent p, prev, next;
	u64 lo = start, hi = end;
	int refs, ret;

	ret = next_extent(root, ino, start, end, &p);
	if (ret == 0 && (p.ext.type != BTRFS_FILE_EXTENT_PREALLOC || p.key.offset > start ||
			 p.ext.end < end))
		ret = 1;
	if (ret)
		return ret < 0 ? ret : tlog_error(-EUCLEAN, "inode %llu: no preallocated extent "
						  "covers [%llu, %llu)", (unsigned long long)ino,
						  (unsigned long long)start, (unsigned long long)end);
	/* a regular neighbour of the same extent takes the written range in */
	if (start == p.key.offset) {
		ret = extent_ending_at(root, ino, start, &prev);
		if (ret < 0)
			return ret;
		if (ret == 0 && merges_with(&prev, &p))
			lo = prev.key.offset;
	}
	if (end == p.ext.end) {
		ret = extent_starting_at(root, ino, end, &next);
		if (ret < 0)
			return ret;
		if (ret == 0 && merges_with(&next, &p))
			hi = next.ext.end;
	}
	/* the merged neighbours and the prealloc item go, the pieces come */
	ret = btrfs_delete_item(trans, root, &p.key);
	if (!ret && lo < start)
		ret = btrfs_delete_item(trans, root, &prev.key);
	if (!ret && hi > end)
		ret = btrfs_delete_item(trans, root, &next.key);
	if (!ret && p.key.offset < start)
		ret = insert_piece(trans, root, &p, BTRFS_FILE_EXTENT_PREALLOC, p.key.offset, start);
	if (!ret)
		ret = insert_piece(trans, root, &p, BTRFS_FILE_EXTENT_REG, lo, hi);
	if (!ret && end < p.ext.end)
		ret = insert_piece(trans, root, &p, BTRFS_FILE_EXTENT_PREALLOC, end, p.ext.end);
	/*
	 * One reference per item of the extent: the prealloc pieces left on
	 * either side are new items, the merged neighbours are gone.
	 */
	refs = (p.key.offset < start) + (end < p.ext.end) - (lo < start) - (hi > end);
	for (; !ret && refs > 0; refs--)
		ret = btrfs_add_data_ref(trans, p.ext.disk_bytenr, p.ext.disk_num_bytes,
					 root->root_key.objectid, ino, ref_offset(&p));
	for (; !ret && refs < 0; refs++)
		ret = btrfs_free_data_extent(trans, p.ext.disk_bytenr, p.ext.disk_num_bytes,
					     root->root_key.objectid, ino, ref_offset(&p));
	return ret;
}
