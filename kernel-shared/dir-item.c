// SPDX-License-Identifier: GPL-2.0-only
/*
 * Names in subvolume trees: directory entries, inode back
 * references, xattrs and the items that hold several of them.
 *
 * DIR_ITEM, XATTR_ITEM, INODE_REF and INODE_EXTREF items pack every entry
 * that shares their key (a name hash, or the parent) one after another;
 * removing one entry cuts it out, removing the last deletes the item.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "csum.h"
#include "dir-item.h"
#include "errctx.h"
#include "tree-checker.h"

int btrfs_del_item_part(struct tlog_trans *trans, struct btrfs_root *root,
			struct btrfs_path *path, u32 off, u32 len)
{
	struct extent_buffer *leaf = path->nodes[0];
	u32 size = btrfs_item_size(leaf, path->slots[0]);
	u8 *p = btrfs_item_ptr(leaf, path->slots[0]);

	if (len >= size)
		return btrfs_del_items(trans, root, path, path->slots[0], 1);
	memmove(p + off, p + off + len, size - off - len);
	return btrfs_truncate_item(trans, path, size - len, true);
}

int btrfs_overwrite_item(struct tlog_trans *trans, struct btrfs_root *root,
			 const struct btrfs_key *key, const void *data, u32 size, bool *changed)
{
	struct btrfs_path path;
	u32 old;
	int ret;

	*changed = false;
	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, key, &path);
	if (ret == 0 && btrfs_item_size(path.nodes[0], path.slots[0]) == size &&
	    memcmp(btrfs_item_ptr(path.nodes[0], path.slots[0]), data, size) == 0) {
		btrfs_release_path(&path);
		return 0;
	}
	if (ret < 0) {
		btrfs_release_path(&path);
		return ret;
	}
	*changed = true;
	if (ret > 0)
		return btrfs_insert_item_at(trans, root, &path, key, data, size);
	/* room for the growth only: a whole second copy might not fit a leaf */
	old = btrfs_item_size(path.nodes[0], path.slots[0]);
	btrfs_release_path(&path);
	ret = btrfs_search_slot_for_write(trans, root, key, &path,
					  size > old ? (int)(size - old) : 0);
	if (ret > 0)
		ret = -EUCLEAN;
	if (ret == 0) {
		old = btrfs_item_size(path.nodes[0], path.slots[0]);
		if (old < size)
			ret = btrfs_extend_item(trans, &path, size - old);
		else if (old > size)
			ret = btrfs_truncate_item(trans, &path, size, true);
	}
	if (ret == 0)
		memcpy(btrfs_item_ptr(path.nodes[0], path.slots[0]), data, size);
	btrfs_release_path(&path);
	return ret;
}

/* ---- DIR_ITEM / DIR_INDEX / XATTR_ITEM ---- */

/* Offset and length of the entry called @name in the dir-format item at @slot. */
static int find_dir_entry(const struct extent_buffer *leaf, int slot, const char *name,
			  u16 len, u32 *off, u32 *entry_len)
{
	struct tlog_dir_entry de;
	int ret = btrfs_find_name_in_dir_item(leaf, slot, name, len, &de, off);

	if (ret == 0)
		*entry_len = sizeof(struct btrfs_dir_item) + de.name_len + de.data_len;
	return ret;
}

static u32 fill_dir_item(u8 *buf, const char *name, u16 len,
			 const struct btrfs_key *location, u8 type, u64 transid)
{
	struct btrfs_dir_item *di = (void *)buf;

	memset(di, 0, sizeof(*di));
	btrfs_cpu_key_to_disk(&di->location, location);
	btrfs_set_dir_item_transid(di, transid);
	btrfs_set_dir_item_name_len(di, len);
	btrfs_set_dir_item_type(di, type);
	memcpy(di + 1, name, len);
	return sizeof(*di) + len;
}

/*
 * Append an entry to the item at @key, creating it if needed.  Whether it
 * exists is asked read-only first: a search that makes room for a key
 * that is not there may leave an empty leaf behind if nothing is then
 * inserted at its slot.
 */
static int append_entry(struct tlog_trans *trans, struct btrfs_root *root,
			const struct btrfs_key *key, const u8 *entry, u32 len,
			const char *name, u16 name_len)
{
	struct btrfs_path path;
	u32 off, elen, size;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, key, &path);
	if (ret > 0)
		return btrfs_insert_item_at(trans, root, &path, key, entry, len);
	btrfs_release_path(&path);
	if (ret == 0)
		ret = btrfs_search_slot_for_write(trans, root, key, &path, (int)len);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "item (%llu %u %llu) vanished",
				 (unsigned long long)key->objectid, key->type,
				 (unsigned long long)key->offset);
	if (ret == 0 && name) {
		ret = find_dir_entry(path.nodes[0], path.slots[0], name, name_len, &off, &elen);
		ret = ret == -ENOENT ? 0 : ret ? ret : 1;
	}
	if (ret == 1)
		ret = tlog_error(-EEXIST, "name \"%.*s\" exists in (%llu %u %llu)", name_len, name,
				 (unsigned long long)key->objectid, key->type,
				 (unsigned long long)key->offset);
	if (ret == 0) {
		size = btrfs_item_size(path.nodes[0], path.slots[0]);
		ret = btrfs_extend_item(trans, &path, len);
		if (ret == 0)
			memcpy((u8 *)btrfs_item_ptr(path.nodes[0], path.slots[0]) + size, entry, len);
	}
	btrfs_release_path(&path);
	return ret;
}

int btrfs_append_to_item(struct tlog_trans *trans, struct btrfs_root *root,
			 const struct btrfs_key *key, const void *data, u32 len)
{
	return append_entry(trans, root, key, data, len, NULL, 0);
}

int btrfs_add_dir_entries(struct tlog_trans *trans, struct btrfs_root *root, u64 dir,
			  const char *name, u16 len, const struct btrfs_key *location,
			  u8 type, u64 index)
{
	struct btrfs_key key = { dir, BTRFS_DIR_ITEM_KEY, btrfs_name_hash(name, len) };
	u8 buf[sizeof(struct btrfs_dir_item) + 256];
	u32 size = fill_dir_item(buf, name, len, location, type, trans->transid);
	int ret;

	ret = append_entry(trans, root, &key, buf, size, name, len);
	if (ret)
		return ret;
	key = (struct btrfs_key){ dir, BTRFS_DIR_INDEX_KEY, index };
	ret = btrfs_insert_item(trans, root, &key, buf, size);
	if (ret == -EEXIST)
		return tlog_error(-EEXIST, "directory %llu already has an entry at index %llu",
				  (unsigned long long)dir, (unsigned long long)index);
	return ret;
}

/* Cut entry @name out of the dir-format item @key; -ENOENT when absent. */
static int delete_named_entry(struct tlog_trans *trans, struct btrfs_root *root,
			      const struct btrfs_key *key, const char *name, u16 len)
{
	struct btrfs_path path;
	u32 off, elen;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, root, key, &path, -1);
	if (ret > 0)
		ret = -ENOENT;
	if (ret == 0)
		ret = find_dir_entry(path.nodes[0], path.slots[0], name, len, &off, &elen);
	if (ret == 0)
		ret = btrfs_del_item_part(trans, root, &path, off, elen);
	btrfs_release_path(&path);
	return ret;
}

int btrfs_remove_dir_entries(struct tlog_trans *trans, struct btrfs_root *root, u64 dir,
			     const char *name, u16 len, u64 index)
{
	struct btrfs_key key = { dir, BTRFS_DIR_ITEM_KEY, btrfs_name_hash(name, len) };
	int ret;

	ret = delete_named_entry(trans, root, &key, name, len);
	if (ret == -ENOENT)
		ret = tlog_error(-EUCLEAN, "directory %llu has no entry \"%.*s\"",
				 (unsigned long long)dir, len, name);
	if (ret)
		return ret;
	/* the index comes from the back reference: whatever entry is there goes */
	key = (struct btrfs_key){ dir, BTRFS_DIR_INDEX_KEY, index };
	ret = btrfs_delete_item(trans, root, &key);
	if (ret == -ENOENT || ret > 0)
		ret = 0;
	return ret;
}

struct index_ctx {
	struct tlog_dir_entry *de;
	char *name;
};

static int take_first_entry(const struct tlog_dir_entry *de, void *arg)
{
	struct index_ctx *ctx = arg;

	*ctx->de = *de;
	memcpy(ctx->name, de->name, de->name_len);
	ctx->name[de->name_len] = '\0';
	ctx->de->name = ctx->name;
	return 1;
}

int btrfs_lookup_dir_index(struct btrfs_root *root, u64 dir, u64 index,
			   struct tlog_dir_entry *de, char name[256])
{
	struct btrfs_key key = { dir, BTRFS_DIR_INDEX_KEY, index };
	struct index_ctx ctx = { de, name };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, &key, &path);
	if (ret > 0)
		ret = -ENOENT;
	if (ret == 0) {
		ret = btrfs_for_each_dir_entry(path.nodes[0], path.slots[0], take_first_entry, &ctx);
		ret = ret == 1 ? 0 : ret < 0 ? ret : -ENOENT;
	}
	btrfs_release_path(&path);
	return ret;
}

int btrfs_delete_xattr(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
		       const char *name, u16 len)
{
	struct btrfs_key key = { ino, BTRFS_XATTR_ITEM_KEY, btrfs_name_hash(name, len) };

	return delete_named_entry(trans, root, &key, name, len);
}

/* ---- INODE_REF / INODE_EXTREF ---- */

int btrfs_decode_ref_item(const struct extent_buffer *leaf, int slot,
			  struct tlog_ref_name **names, int *nr)
{
	u32 size = btrfs_item_size(leaf, slot), cur = 0;
	struct tlog_ref_name *v = NULL;
	struct btrfs_key key;
	size_t alloc = 0;
	int n = 0;

	btrfs_item_key_to_cpu(leaf, &key, slot);
	/* nearly every ref item holds one name: room for one, doubled as needed */
	if (size) {
		v = malloc(sizeof(*v));
		if (!v)
			return -ENOMEM;
		alloc = 1;
	}
	while (cur < size) {
		struct tlog_ref_entry ref;
		struct tlog_ref_name r;
		int elen = btrfs_ref_entry_at(leaf, slot, &key, cur, &ref, NULL, 0);

		/* the kernel's checker allows empty names; no name of a file is one */
		if (elen >= 0 && (ref.name_len == 0 || ref.name_len > BTRFS_NAME_LEN))
			elen = tlog_error(-EUCLEAN, "inode %llu: %s entry with a name of %u bytes",
					  (unsigned long long)key.objectid,
					  key.type == BTRFS_INODE_REF_KEY ? "INODE_REF" : "INODE_EXTREF",
					  ref.name_len);
		if (elen < 0) {
			free(v);
			return elen;
		}
		r.parent = ref.parent;
		r.index = ref.index;
		r.len = ref.name_len;
		memcpy(r.name, ref.name, r.len);
		r.name[r.len] = '\0';
		if (array_reserve(v, alloc, (size_t)n + 1)) {
			free(v);
			return -ENOMEM;
		}
		v[n++] = r;
		cur += elen;
	}
	*names = v;
	*nr = n;
	return 0;
}

/* Offset and length of (@parent, @name) in the ref item at @slot. */
static int find_ref_entry(const struct extent_buffer *leaf, int slot, u64 parent,
			  const char *name, u16 len, u32 *off, u32 *elen, u64 *index)
{
	u32 size = btrfs_item_size(leaf, slot), cur = 0;
	struct btrfs_key key;

	btrfs_item_key_to_cpu(leaf, &key, slot);
	while (cur < size) {
		struct tlog_ref_entry ref;
		char note[sizeof(tlog_last_finding()->what)];
		int this = btrfs_ref_entry_at(leaf, slot, &key, cur, &ref, note, sizeof(note));

		/*
		 * The names before a broken entry are still the inode's: a
		 * search stops there, and leaves the verdict on the item to
		 * btrfs_decode_ref_item().
		 */
		if (this < 0)
			break;
		if (ref.parent == parent && ref.name_len == len && memcmp(ref.name, name, len) == 0) {
			*off = cur;
			*elen = this;
			if (index)
				*index = ref.index;
			return 0;
		}
		cur += this;
	}
	return -ENOENT;
}

static struct btrfs_key ref_key(u64 ino, u64 parent, const char *name, u16 len, bool ext)
{
	if (ext)
		return (struct btrfs_key){ ino, BTRFS_INODE_EXTREF_KEY,
					   btrfs_extref_hash(parent, name, len) };
	return (struct btrfs_key){ ino, BTRFS_INODE_REF_KEY, parent };
}

/*
 * Find the name (@parent, @name) among @ino's refs, old style first;
 * with @trans, cut it out of its item.  -ENOENT when absent.
 */
static int lookup_inode_ref(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			    u64 parent, const char *name, u16 len, u64 *index)
{
	for (int ext = 0; ext < 2; ext++) {
		struct btrfs_key key = ref_key(ino, parent, name, len, ext);
		struct btrfs_path path;
		u32 off, elen;
		int ret;

		btrfs_init_path(&path);
		ret = trans ? btrfs_search_slot_for_write(trans, root, &key, &path, -1) :
			      btrfs_search_slot(root, &key, &path);
		if (ret == 0)
			ret = find_ref_entry(path.nodes[0], path.slots[0], parent, name, len,
					     &off, &elen, index);
		else if (ret > 0)
			ret = -ENOENT;
		if (ret == 0 && trans)
			ret = btrfs_del_item_part(trans, root, &path, off, elen);
		btrfs_release_path(&path);
		if (ret != -ENOENT)
			return ret;
	}
	return -ENOENT;
}

int btrfs_find_inode_ref(struct btrfs_root *root, u64 ino, u64 parent, const char *name,
			 u16 len, u64 *index)
{
	return lookup_inode_ref(NULL, root, ino, parent, name, len, index);
}

int btrfs_delete_inode_ref(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			   u64 parent, const char *name, u16 len, u64 *index)
{
	return lookup_inode_ref(trans, root, ino, parent, name, len, index);
}

int btrfs_inode_names(struct btrfs_root *root, u64 ino, struct tlog_ref_name **names,
		      size_t *nr)
{
	struct btrfs_key min = { ino, BTRFS_INODE_REF_KEY, 0 };
	struct btrfs_key max = { ino, BTRFS_INODE_EXTREF_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	size_t alloc = 0;
	int ret = 0;

	*names = NULL;
	*nr = 0;
	btrfs_for_each_item(root, &iter, &min, &max) {
		struct tlog_ref_name *item = NULL;
		int n = 0;

		ret = btrfs_decode_ref_item(iter.leaf, iter.slot, &item, &n);
		if (!ret && !*names) {
			/* the first item's names are the list so far: no copy */
			*names = item;
			alloc = *nr = (size_t)n;
			item = NULL;
		} else if (!ret && array_reserve(*names, alloc, *nr + (size_t)n)) {
			ret = -ENOMEM;
		} else if (!ret) {
			if (n)
				memcpy(*names + *nr, item, (size_t)n * sizeof(*item));
			*nr += (size_t)n;
		}
		free(item);
		if (ret)
			break;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	if (ret) {
		free(*names);
		*names = NULL;
		*nr = 0;
	}
	return ret;
}

int btrfs_count_inode_names(struct btrfs_root *root, u64 ino, u32 *count)
{
	struct tlog_ref_name *names;
	size_t nr;
	int ret = btrfs_inode_names(root, ino, &names, &nr);

	free(names);
	*count = ret ? 0 : (u32)nr;
	return ret;
}

int btrfs_insert_inode_ref(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			   u64 parent, const char *name, u16 len, u64 index)
{
	struct btrfs_key key = { ino, BTRFS_INODE_REF_KEY, parent };
	u8 buf[sizeof(struct btrfs_inode_ref) + 256];
	struct btrfs_inode_ref *ref = (void *)buf;
	u64 old;

	if (btrfs_find_inode_ref(root, ino, parent, name, len, &old) == 0)
		return tlog_error(-EEXIST, "inode %llu already has the name \"%.*s\" in %llu",
				  (unsigned long long)ino, len, name, (unsigned long long)parent);
	btrfs_set_inode_ref_index(ref, index);
	btrfs_set_inode_ref_name_len(ref, len);
	memcpy(ref + 1, name, len);
	return append_entry(trans, root, &key, buf, sizeof(*ref) + len, NULL, 0);
}
