// SPDX-License-Identifier: GPL-2.0-only
/*
 * Back references of shared blocks: copying a tree block that a snapshot
 * shares (the kernel's update_ref_for_cow; Documentation/design/format.md).
 *
 * A reference is "normal" (TREE_BLOCK_REF root, EXTENT_DATA_REF root/inode/
 * offset: whichever block of that tree holds the pointer) or "full"
 * (SHARED_BLOCK_REF / SHARED_DATA_REF parent: that very block).  A block
 * with FULL_BACKREF in its extent flags refers to its children by full
 * references.  When the running tree copies a block others still use:
 *
 *  - the first tree to copy it away from its owner turns it FULL_BACKREF
 *    (its children gain full references from it for the others' sake; the
 *    normal references go on serving the copy);
 *  - any other copy gives the children normal references from the copy;
 *  - the running tree's own reference to the old block is dropped.
 *
 * A block no other tree uses any more, but marked FULL_BACKREF, hands its
 * children normal references from the copy and drops its full ones.
 *
 * New references are added as keyed items; existing ones, inline or keyed,
 * are found and counted either way.
 */
#include <errno.h>
#include <string.h>

#include "backref.h"
#include "csum.h"
#include "errctx.h"
#include "root-tree.h"
#include "transaction.h"
#include "tree-checker.h"

/* Key of the extent item of a data extent. */
static struct btrfs_key data_extent_key(u64 bytenr, u64 len)
{
	return (struct btrfs_key){ bytenr, BTRFS_EXTENT_ITEM_KEY, len };
}

/* What a reference is: its type and, for data refs, whom it names. */
struct ref_desc {
	u8 type;		/* keyed/inline ref type */
	u64 parent_or_root;	/* parent bytenr (shared) or root (normal) */
	u64 ino, offset;	/* EXTENT_DATA_REF only */
};

static bool data_ref_matches(const struct btrfs_extent_data_ref *dref, const struct ref_desc *r)
{
	return btrfs_extent_data_ref_root(dref) == r->parent_or_root &&
	       btrfs_extent_data_ref_objectid(dref) == r->ino &&
	       btrfs_extent_data_ref_offset(dref) == r->offset;
}

static bool inline_ref_matches(const struct tlog_extent_ref *ref, const struct ref_desc *r)
{
	if (ref->type != r->type)
		return false;
	if (ref->type == BTRFS_EXTENT_DATA_REF_KEY)
		return ref->root == r->parent_or_root && ref->objectid == r->ino &&
		       ref->file_offset == r->offset;
	return ref->offset == r->parent_or_root;
}

/*
 * Find @r inline in the extent item at the path: its offset in the item,
 * or 0 when absent.  Writers change the extent tree whatever its state:
 * the walk judges nothing and ends at a reference it cannot read.
 */
static u32 find_inline_ref(const struct btrfs_path *path, const struct btrfs_key *key,
			   const struct ref_desc *r)
{
	struct tlog_extent_item ei;
	struct tlog_extent_ref ref;
	u32 cur;
	int ret;

	if (btrfs_parse_extent_item(btrfs_item_ptr(path->nodes[0], path->slots[0]),
				    btrfs_item_size(path->nodes[0], path->slots[0]), key, &ei))
		return 0;
	btrfs_for_each_inline_ref(&ei, &cur, &ref, ret)
		if (inline_ref_matches(&ref, r))
			return ref.at;
	return 0;
}

/* Key of the keyed form of @r for the extent at @bytenr. */
static struct btrfs_key keyed_ref_key(u64 bytenr, const struct ref_desc *r)
{
	u64 off = r->parent_or_root;

	if (r->type == BTRFS_EXTENT_DATA_REF_KEY)
		off = btrfs_extent_data_ref_hash(r->parent_or_root, r->ino, r->offset);
	return (struct btrfs_key){ bytenr, r->type, off };
}

/* Add @delta to the extent item's refs, and @count_delta to @r's count if data. */
static int adjust_extent_item(struct tlog_trans *trans, struct btrfs_root *eroot,
			      const struct btrfs_key *ekey, int delta, u64 set_flags,
			      const struct ref_desc *inline_r, int count_delta, bool *found)
{
	struct btrfs_path path;
	int ret;

	*found = false;
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, eroot, ekey, &path, 0);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "extent %llu has no extent item",
				 (unsigned long long)ekey->objectid);
	if (ret == 0) {
		u8 *p = btrfs_item_ptr(path.nodes[0], path.slots[0]);
		struct btrfs_extent_item *ei = (void *)p;
		u32 at = inline_r ? find_inline_ref(&path, ekey, inline_r) : 0;

		btrfs_set_extent_item_refs(ei, btrfs_extent_item_refs(ei) + delta);
		btrfs_set_extent_item_flags(ei, btrfs_extent_item_flags(ei) | set_flags);
		if (at && count_delta) {
			if (inline_r->type == BTRFS_EXTENT_DATA_REF_KEY) {
				struct btrfs_extent_data_ref *d = (void *)(p + at + 1);

				btrfs_set_extent_data_ref_count(d, btrfs_extent_data_ref_count(d) +
								count_delta);
			} else {
				struct btrfs_shared_data_ref *d = (void *)(p + at + 1 + 8);

				btrfs_set_shared_data_ref_count(d, btrfs_shared_data_ref_count(d) +
								count_delta);
			}
		}
		*found = at != 0;
	}
	btrfs_release_path(&path);
	return ret;
}

/* One more reference @r to an extent (tree block or data). */
static int add_ref(struct tlog_trans *trans, const struct btrfs_key *ekey, u64 bytenr,
		   const struct ref_desc *r)
{
	bool data = r->type == BTRFS_EXTENT_DATA_REF_KEY || r->type == BTRFS_SHARED_DATA_REF_KEY;
	struct btrfs_key rkey = keyed_ref_key(bytenr, r);
	struct btrfs_root *eroot;
	struct btrfs_path path;
	bool found;
	int ret;

	ret = btrfs_read_root(trans->fs, BTRFS_EXTENT_TREE_OBJECTID, &eroot);
	if (ret)
		return ret;
	/* counted in place when the same data reference exists inline */
	ret = adjust_extent_item(trans, eroot, ekey, 1, 0, data ? r : NULL, data ? 1 : 0, &found);
	if (ret || found)
		return ret;
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, eroot, &rkey, &path, 0);
	if (ret == 0) {
		u8 *p = btrfs_item_ptr(path.nodes[0], path.slots[0]);

		/* the keyed reference exists: count one more */
		if (r->type == BTRFS_EXTENT_DATA_REF_KEY && data_ref_matches((void *)p, r))
			btrfs_set_extent_data_ref_count((void *)p,
				btrfs_extent_data_ref_count((void *)p) + 1);
		else if (r->type == BTRFS_SHARED_DATA_REF_KEY)
			btrfs_set_shared_data_ref_count((void *)p,
				btrfs_shared_data_ref_count((void *)p) + 1);
		else
			ret = tlog_error(-EOPNOTSUPP, "reference key collision on extent %llu",
					 (unsigned long long)bytenr);
		btrfs_release_path(&path);
		return ret;
	}
	btrfs_release_path(&path);
	if (ret < 0)
		return ret;
	if (r->type == BTRFS_EXTENT_DATA_REF_KEY) {
		struct btrfs_extent_data_ref d;

		btrfs_set_extent_data_ref_root(&d, r->parent_or_root);
		btrfs_set_extent_data_ref_objectid(&d, r->ino);
		btrfs_set_extent_data_ref_offset(&d, r->offset);
		btrfs_set_extent_data_ref_count(&d, 1);
		return btrfs_insert_item(trans, eroot, &rkey, &d, sizeof(d));
	}
	if (r->type == BTRFS_SHARED_DATA_REF_KEY) {
		struct btrfs_shared_data_ref d;

		btrfs_set_shared_data_ref_count(&d, 1);
		return btrfs_insert_item(trans, eroot, &rkey, &d, sizeof(d));
	}
	return btrfs_insert_item(trans, eroot, &rkey, NULL, 0);
}

/* Remove an inline reference at @at of the item at the path. */
static int remove_inline_ref(struct tlog_trans *trans, struct btrfs_path *path, u32 at)
{
	u8 *p = btrfs_item_ptr(path->nodes[0], path->slots[0]);
	u32 size = btrfs_item_size(path->nodes[0], path->slots[0]);
	u32 len = btrfs_inline_ref_size(p[at]);

	memmove(p + at, p + at + len, size - at - len);
	return btrfs_truncate_item(trans, path, size - len, true);
}

/*
 * One reference @r fewer.  The last one only with @allow_last (the extent
 * item is then left with refs 0 for the caller to free or revive).
 */
static int drop_ref_ext(struct tlog_trans *trans, const struct btrfs_key *ekey, u64 bytenr,
			const struct ref_desc *r, bool allow_last)
{
	struct btrfs_key rkey = keyed_ref_key(bytenr, r);
	struct btrfs_root *eroot;
	struct btrfs_path path;
	int ret;

	ret = btrfs_read_root(trans->fs, BTRFS_EXTENT_TREE_OBJECTID, &eroot);
	if (ret)
		return ret;
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, eroot, ekey, &path, -1);
	if (ret > 0)
		ret = -EUCLEAN;
	if (ret == 0) {
		u8 *p = btrfs_item_ptr(path.nodes[0], path.slots[0]);
		struct btrfs_extent_item *ei = (void *)p;
		u32 at = find_inline_ref(&path, ekey, r);

		if (btrfs_extent_item_refs(ei) < 1 ||
		    (btrfs_extent_item_refs(ei) == 1 && !allow_last)) {
			ret = tlog_error(-EUCLEAN, "extent %llu would lose its last reference here",
					 (unsigned long long)bytenr);
		} else {
			btrfs_set_extent_item_refs(ei, btrfs_extent_item_refs(ei) - 1);
			if (at) {
				u32 cnt = 1;

				if (r->type == BTRFS_EXTENT_DATA_REF_KEY) {
					struct btrfs_extent_data_ref *d = (void *)(p + at + 1);

					cnt = btrfs_extent_data_ref_count(d);
					btrfs_set_extent_data_ref_count(d, cnt - 1);
				} else if (r->type == BTRFS_SHARED_DATA_REF_KEY) {
					struct btrfs_shared_data_ref *d = (void *)(p + at + 1 + 8);

					cnt = btrfs_shared_data_ref_count(d);
					btrfs_set_shared_data_ref_count(d, cnt - 1);
				}
				if (cnt == 1)
					ret = remove_inline_ref(trans, &path, at);
				btrfs_release_path(&path);
				return ret;
			}
		}
	}
	btrfs_release_path(&path);
	if (ret)
		return ret;
	/* a keyed reference, then */
	ret = btrfs_search_slot_for_write(trans, eroot, &rkey, &path, -1);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "extent %llu lacks the reference to drop",
				 (unsigned long long)bytenr);
	if (ret == 0) {
		void *p = btrfs_item_ptr(path.nodes[0], path.slots[0]);
		u32 cnt = 1;

		if (r->type == BTRFS_EXTENT_DATA_REF_KEY) {
			cnt = btrfs_extent_data_ref_count(p);
			btrfs_set_extent_data_ref_count(p, cnt - 1);
		} else if (r->type == BTRFS_SHARED_DATA_REF_KEY) {
			cnt = btrfs_shared_data_ref_count(p);
			btrfs_set_shared_data_ref_count(p, cnt - 1);
		}
		if (cnt == 1)
			ret = btrfs_del_items(trans, eroot, &path, path.slots[0], 1);
	}
	btrfs_release_path(&path);
	return ret;
}

/* One reference @r fewer, never the last (freeing goes its own way). */
static int drop_ref(struct tlog_trans *trans, const struct btrfs_key *ekey, u64 bytenr,
		    const struct ref_desc *r)
{
	return drop_ref_ext(trans, ekey, bytenr, r, false);
}

/*
 * References from @eb to each of its children: add (@add) or drop them,
 * full (parent @eb) or normal (@root's).
 */
static int change_child_refs(struct tlog_trans *trans, struct btrfs_root *root,
			     const struct extent_buffer *eb, bool full, bool add)
{
	struct tlog_fs *fs = trans->fs;
	int level = btrfs_header_level_eb(eb);
	u32 n = btrfs_header_nritems_eb(eb);
	int ret = 0;

	for (u32 i = 0; !ret && i < n; i++) {
		struct ref_desc r = { 0 };
		struct btrfs_key ekey;
		u64 bytenr;

		if (level > 0) {
			bytenr = btrfs_node_blockptr(eb, i);
			ekey = btrfs_tree_block_extent_key(fs, bytenr, level - 1);
			r.type = full ? BTRFS_SHARED_BLOCK_REF_KEY : BTRFS_TREE_BLOCK_REF_KEY;
			r.parent_or_root = full ? eb->start : root->root_key.objectid;
		} else {
			struct tlog_file_extent fe;
			struct btrfs_key key;

			/*
			 * Every extent the block points to is counted, whatever
			 * else is wrong with its item: judging is for readers.
			 */
			btrfs_item_key_to_cpu(eb, &key, i);
			if (key.type != BTRFS_EXTENT_DATA_KEY ||
			    btrfs_parse_file_extent(btrfs_item_ptr(eb, i), btrfs_item_size(eb, i),
						    key.offset, &fe) ||
			    fe.type == BTRFS_FILE_EXTENT_INLINE || !fe.disk_bytenr)
				continue;
			bytenr = fe.disk_bytenr;
			ekey = data_extent_key(bytenr, fe.disk_num_bytes);
			r.type = full ? BTRFS_SHARED_DATA_REF_KEY : BTRFS_EXTENT_DATA_REF_KEY;
			r.parent_or_root = full ? eb->start : root->root_key.objectid;
			r.ino = key.objectid;
			r.offset = key.offset - fe.offset;
		}
		ret = add ? add_ref(trans, &ekey, bytenr, &r) : drop_ref(trans, &ekey, bytenr, &r);
	}
	return ret;
}

static bool block_can_be_shared(struct btrfs_root *root, const struct extent_buffer *buf)
{
	if (!btrfs_is_subvolume_id(root->root_key.objectid))
		return false;
	/* only blocks older than the last snapshot can be in another tree */
	return btrfs_header_generation(eb_header(buf)) <=
	       btrfs_root_item_last_snapshot(&root->root_item);
}

int btrfs_update_ref_for_cow(struct tlog_trans *trans, struct btrfs_root *root,
			     const struct extent_buffer *buf, const struct extent_buffer *cow,
			     bool *last_ref)
{
	struct tlog_fs *fs = trans->fs;
	int level = btrfs_header_level_eb(buf);
	struct btrfs_key ekey = btrfs_tree_block_extent_key(fs, buf->start, level);
	struct btrfs_root *eroot;
	struct btrfs_path path;
	u64 refs, flags, owner = btrfs_header_owner(eb_header(buf));
	struct ref_desc mine = { BTRFS_TREE_BLOCK_REF_KEY, root->root_key.objectid, 0, 0 };
	bool found;
	int ret;

	*last_ref = true;
	if (!block_can_be_shared(root, buf))
		return 0;
	ret = btrfs_read_root(trans->fs, BTRFS_EXTENT_TREE_OBJECTID, &eroot);
	if (ret)
		return ret;
	btrfs_init_path(&path);
	ret = btrfs_search_slot(eroot, &ekey, &path);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "tree block %llu has no extent item",
				 (unsigned long long)buf->start);
	if (ret == 0) {
		struct tlog_extent_item ei;

		ret = btrfs_decode_extent_item(trans->fs, path.nodes[0], path.slots[0], &ekey, &ei);
		refs = ei.refs;
		flags = ei.flags;
	}
	btrfs_release_path(&path);
	if (ret)
		return ret;

	if (refs > 1) {
		if (owner == root->root_key.objectid && !(flags & BTRFS_BLOCK_FLAG_FULL_BACKREF)) {
			ret = change_child_refs(trans, root, buf, true, true);
			if (!ret)
				ret = adjust_extent_item(trans, eroot, &ekey, 0,
							 BTRFS_BLOCK_FLAG_FULL_BACKREF, NULL, 0,
							 &found);
		} else {
			ret = change_child_refs(trans, root, cow, false, true);
		}
		if (!ret)
			ret = drop_ref(trans, &ekey, buf->start, &mine);
		*last_ref = false;
		return ret;
	}
	if (flags & BTRFS_BLOCK_FLAG_FULL_BACKREF) {
		ret = change_child_refs(trans, root, cow, false, true);
		if (!ret)
			ret = change_child_refs(trans, root, buf, true, false);
	}
	return ret;
}

int btrfs_drop_data_ref(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root, u64 ino,
			u64 offset)
{
	struct btrfs_key ekey = data_extent_key(bytenr, len);
	struct ref_desc r = { BTRFS_EXTENT_DATA_REF_KEY, root, ino, offset };

	return drop_ref(trans, &ekey, bytenr, &r);
}

int btrfs_add_data_ref(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root, u64 ino,
		       u64 offset)
{
	struct btrfs_key ekey = data_extent_key(bytenr, len);
	struct ref_desc r = { BTRFS_EXTENT_DATA_REF_KEY, root, ino, offset };

	return add_ref(trans, &ekey, bytenr, &r);
}

int btrfs_drop_last_data_ref(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root, u64 ino,
			     u64 offset)
{
	struct btrfs_key ekey = data_extent_key(bytenr, len);
	struct ref_desc r = { BTRFS_EXTENT_DATA_REF_KEY, root, ino, offset };

	return drop_ref_ext(trans, &ekey, bytenr, &r, true);
}

int btrfs_inc_tree_refs(struct tlog_trans *trans, struct btrfs_root *root,
			const struct extent_buffer *eb)
{
	return change_child_refs(trans, root, eb, false, true);
}
