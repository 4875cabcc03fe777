// SPDX-License-Identifier: GPL-2.0-only
/*
 * Inode items, directory entries and path resolution in subvolume trees.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csum.h"
#include "errctx.h"
#include "inode.h"
#include "root-tree.h"
#include "tree-checker.h"

static void fill_empty_subvol_dir(struct btrfs_inode_item *inode)
{
	memset(inode, 0, sizeof(*inode));
	btrfs_set_inode_item_mode(inode, S_IFDIR | 0755);
	btrfs_set_inode_item_nlink(inode, 1);
}

/*
 * Whether the item can be read is all that reading or changing an inode
 * judges: the tree checker's rules are the log's (replay checks them),
 * and committed trees written by other tools may bend them.
 */
int btrfs_inode_item_at(const struct tlog_fs *fs, const struct btrfs_path *path,
			const struct btrfs_inode_item **ii)
{
	char note[sizeof(tlog_last_finding()->what)];
	struct btrfs_key key;
	int ret;

	btrfs_item_key_to_cpu(path->nodes[0], &key, path->slots[0]);
	ret = btrfs_decode_inode_item(fs, path->nodes[0], path->slots[0], &key, ii, note,
				      sizeof(note));
	if (ret)
		return tlog_error(ret, "inode %llu: %s", (unsigned long long)key.objectid, note);
	return 0;
}

int btrfs_lookup_inode(struct btrfs_root *root, u64 ino, struct btrfs_inode_item *ret)
{
	struct btrfs_key key = { ino, BTRFS_INODE_ITEM_KEY, 0 };
	struct btrfs_path path;
	int err;

	if (ino == BTRFS_EMPTY_SUBVOL_DIR_OBJECTID) {
		fill_empty_subvol_dir(ret);
		return 0;
	}

	btrfs_init_path(&path);
	err = btrfs_search_slot(root, &key, &path);
	if (err == 0) {
		const struct btrfs_inode_item *ii;

		err = btrfs_inode_item_at(root->fs, &path, &ii);
		if (err == 0)
			memcpy(ret, ii, sizeof(*ret));
	} else if (err > 0) {
		err = -ENOENT;	/* an answer, not an error: nothing recorded */
	}
	btrfs_release_path(&path);
	return err;
}

int btrfs_read_inode(struct btrfs_root *root, u64 ino, struct btrfs_inode_item *ret)
{
	int err = btrfs_lookup_inode(root, ino, ret);

	if (err == -ENOENT)
		return tlog_error(-ENOENT, "inode %llu not found in tree %llu",
				  (unsigned long long)ino,
				  (unsigned long long)root->root_key.objectid);
	return err;
}

int btrfs_for_each_dir_entry(const struct extent_buffer *leaf, int slot,
			     int (*fn)(const struct tlog_dir_entry *de, void *arg),
			     void *arg)
{
	u32 size = btrfs_item_size(leaf, slot), cur = 0;
	struct btrfs_key key;

	btrfs_item_key_to_cpu(leaf, &key, slot);
	while (cur < size) {
		struct tlog_dir_entry de;
		int len = btrfs_dir_entry_at(leaf, slot, &key, cur, &de, NULL, 0);
		int ret;

		if (len < 0)
			return len;
		ret = fn(&de, arg);
		if (ret)
			return ret;
		cur += len;
	}
	return 0;
}

int btrfs_find_name_in_dir_item(const struct extent_buffer *leaf, int slot, const char *name,
				u16 len, struct tlog_dir_entry *de, u32 *off)
{
	u32 size = btrfs_item_size(leaf, slot), cur = 0;
	struct btrfs_key key;

	btrfs_item_key_to_cpu(leaf, &key, slot);
	while (cur < size) {
		int elen = btrfs_dir_entry_at(leaf, slot, &key, cur, de, NULL, 0);

		if (elen < 0)
			return elen;
		if (de->name_len == len && memcmp(de->name, name, len) == 0) {
			if (off)
				*off = cur;
			return 0;
		}
		cur += elen;
	}
	return -ENOENT;
}

int btrfs_lookup_dir_entry(struct btrfs_root *root, u64 dir, const char *name,
			   size_t len, struct tlog_dir_entry *de)
{
	struct btrfs_key key = { dir, BTRFS_DIR_ITEM_KEY, btrfs_name_hash(name, len) };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, &key, &path);
	if (ret > 0) {
		/* no item with this name hash */
		btrfs_release_path(&path);
		return -ENOENT;
	}
	if (ret == 0)
		ret = btrfs_find_name_in_dir_item(path.nodes[0], path.slots[0], name, len, de, NULL);
	btrfs_release_path(&path);
	/* the entry's own bytes went with the path; the caller's name is equal */
	if (ret == 0)
		de->name = name;
	return ret;
}

int btrfs_iterate_dir(struct btrfs_root *root, u64 dir,
		      int (*fn)(const struct tlog_dir_entry *de, void *arg), void *arg)
{
	struct btrfs_key min = { dir, BTRFS_DIR_INDEX_KEY, 0 };
	struct btrfs_key max = { dir, BTRFS_DIR_INDEX_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	int ret = 0;

	tlog_error_clear();
	btrfs_for_each_item(root, &iter, &min, &max) {
		ret = btrfs_for_each_dir_entry(iter.leaf, iter.slot, fn, arg);
		if (ret)
			break;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	return ret;
}

/* Whether the ROOT_REF of @child in @parent names this directory entry. */
static int subvol_linked_here(struct tlog_fs *fs, struct btrfs_root *parent,
			      const struct tlog_dir_entry *de)
{
	struct btrfs_key key = { parent->root_key.objectid, BTRFS_ROOT_REF_KEY,
				 de->location.objectid };
	struct tlog_root_ref ref;
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(fs->tree_root, &key, &path);
	if (ret) {
		btrfs_release_path(&path);
		return ret < 0 ? ret : 0;
	}
	ret = btrfs_decode_root_ref(path.nodes[0], path.slots[0], &key, &ref, NULL, 0);
	if (ret == 0)
		ret = ref.dirid == de->dir && ref.name_len == de->name_len &&
		      memcmp(ref.name, de->name, de->name_len) == 0;
	btrfs_release_path(&path);
	return ret;
}

int btrfs_entry_target(struct tlog_fs *fs, struct btrfs_root *root,
		       const struct tlog_dir_entry *de, struct tlog_ino *ret)
{
	struct btrfs_root *sub;
	int err;

	if (de->location.type == BTRFS_INODE_ITEM_KEY) {
		ret->root = root;
		ret->ino = de->location.objectid;
		return 0;
	}
	if (de->location.type != BTRFS_ROOT_ITEM_KEY)
		return tlog_error(-EUCLEAN, "directory entry points at key type %u",
				  de->location.type);
	err = subvol_linked_here(fs, root, de);
	if (err < 0)
		return err;
	if (err == 0) {
		ret->root = root;
		ret->ino = BTRFS_EMPTY_SUBVOL_DIR_OBJECTID;
		return 0;
	}
	err = btrfs_read_root(fs, de->location.objectid, &sub);
	if (err)
		return err;
	ret->root = sub;
	ret->ino = btrfs_root_item_root_dirid(&sub->root_item);
	return 0;
}

/* Parent of a directory: its INODE_REF, or the subvolume's place in its parent. */
static int lookup_parent(struct tlog_fs *fs, struct tlog_ino *cur)
{
	struct btrfs_key key = { cur->ino, BTRFS_INODE_REF_KEY, 0 };
	struct btrfs_path path;
	int ret;

	if (cur->ino == btrfs_root_item_root_dirid(&cur->root->root_item)) {
		struct btrfs_key bkey = { cur->root->root_key.objectid,
					  BTRFS_ROOT_BACKREF_KEY, 0 };
		struct btrfs_root *parent;
		struct tlog_root_ref ref;

		if (cur->root->root_key.objectid == BTRFS_FS_TREE_OBJECTID)
			return 0;	/* ".." of the top is itself */
		btrfs_init_path(&path);
		ret = btrfs_search_forward(fs->tree_root, &bkey, &path);
		if (ret == 0) {
			btrfs_item_key_to_cpu(path.nodes[0], &bkey, path.slots[0]);
			if (bkey.objectid != cur->root->root_key.objectid ||
			    bkey.type != BTRFS_ROOT_BACKREF_KEY)
				ret = 1;
			else
				ret = btrfs_decode_root_ref(path.nodes[0], path.slots[0], &bkey,
							    &ref, NULL, 0);
		}
		btrfs_release_path(&path);
		if (ret)
			return ret < 0 ? ret : 0;	/* detached: stay */
		ret = btrfs_read_root(fs, bkey.offset, &parent);
		if (ret)
			return ret;
		cur->root = parent;
		cur->ino = ref.dirid;
		return 0;
	}

	btrfs_init_path(&path);
	ret = btrfs_search_forward(cur->root, &key, &path);
	if (ret == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.objectid != cur->ino || key.type != BTRFS_INODE_REF_KEY)
			ret = tlog_error(-EUCLEAN, "directory %llu has no parent reference",
					 (unsigned long long)cur->ino);
		else
			cur->ino = key.offset;
	}
	btrfs_release_path(&path);
	return ret > 0 ? -EUCLEAN : ret;
}

int tlog_resolve_path(struct tlog_fs *fs, struct btrfs_root *start, const char *path,
		      struct tlog_ino *ret)
{
	struct btrfs_inode_item inode;
	struct tlog_ino cur;
	const char *p = path;
	int err;

	tlog_error_clear();
	if (!start) {
		err = btrfs_read_root(fs, BTRFS_FS_TREE_OBJECTID, &start);
		if (err)
			return err;
	}
	cur.root = start;
	cur.ino = btrfs_root_item_root_dirid(&start->root_item);

	for (;;) {
		struct tlog_dir_entry de;
		const char *name;
		size_t len;
		u32 mode;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		name = p;
		while (*p && *p != '/')
			p++;
		len = p - name;

		err = btrfs_read_inode(cur.root, cur.ino, &inode);
		if (err)
			return err;
		mode = btrfs_inode_item_mode(&inode);
		if (S_ISLNK(mode))
			return tlog_error(-ELOOP, "a component of the path is a symlink");
		if (!S_ISDIR(mode))
			return tlog_error(-ENOTDIR, "a component of the path is not a directory");
		if (len == 1 && name[0] == '.')
			continue;
		if (len == 2 && name[0] == '.' && name[1] == '.') {
			err = lookup_parent(fs, &cur);
			if (err)
				return err;
			continue;
		}
		if (len > BTRFS_NAME_LEN)
			return tlog_error(-ENAMETOOLONG, "a path component is longer than 255 bytes");
		err = btrfs_lookup_dir_entry(cur.root, cur.ino, name, len, &de);
		if (err == -ENOENT)
			return tlog_error(-ENOENT, "'%.*s' not found", (int)len, name);
		if (err)
			return err;
		err = btrfs_entry_target(fs, cur.root, &de, &cur);
		if (err)
			return err;
	}
	/* The final inode must exist. */
	err = btrfs_read_inode(cur.root, cur.ino, &inode);
	if (err)
		return err;
	*ret = cur;
	return 0;
}

u8 btrfs_mode_to_ftype(u32 mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return BTRFS_FT_REG_FILE;
	case S_IFDIR: return BTRFS_FT_DIR;
	case S_IFCHR: return BTRFS_FT_CHRDEV;
	case S_IFBLK: return BTRFS_FT_BLKDEV;
	case S_IFIFO: return BTRFS_FT_FIFO;
	case S_IFSOCK: return BTRFS_FT_SOCK;
	case S_IFLNK: return BTRFS_FT_SYMLINK;
	}
	return BTRFS_FT_UNKNOWN;
}

const char *btrfs_ftype_name(u8 type)
{
	static const char *const names[] = {
		[BTRFS_FT_UNKNOWN] = "UNKNOWN",
		[BTRFS_FT_REG_FILE] = "FILE",
		[BTRFS_FT_DIR] = "DIR",
		[BTRFS_FT_CHRDEV] = "CHRDEV",
		[BTRFS_FT_BLKDEV] = "BLKDEV",
		[BTRFS_FT_FIFO] = "FIFO",
		[BTRFS_FT_SOCK] = "SOCK",
		[BTRFS_FT_SYMLINK] = "SYMLINK",
		[BTRFS_FT_XATTR] = "XATTR",
	};

	type &= ~BTRFS_FT_ENCRYPTED;
	return type < BTRFS_FT_MAX ? names[type] : "UNKNOWN";
}

/*
 * The kernel reads a symlink as a page of file data cut at i_size
 * (page_get_link), and readlink(2) returns it up to its first NUL.  The
 * inline extent may hold more: mkfs.btrfs --rootdir (6.2) stores the
 * target's terminating NUL, one byte past i_size.
 */
static size_t symlink_target_len(const u8 *data, size_t len, u64 i_size)
{
	const u8 *nul;

	if (len > i_size)
		len = (size_t)i_size;
	nul = memchr(data, '\0', len);
	return nul ? (size_t)(nul - data) : len;
}

int btrfs_read_symlink(struct btrfs_root *root, u64 ino, char *buf, size_t size)
{
	struct btrfs_key key = { ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct tlog_file_extent fe;
	struct btrfs_inode_item inode;
	struct btrfs_path path;
	const u8 *data;
	size_t len;
	int ret;

	tlog_error_clear();
	ret = btrfs_read_inode(root, ino, &inode);
	if (ret)
		return ret;
	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, &key, &path);
	if (ret) {
		btrfs_release_path(&path);
		if (ret > 0)
			return tlog_error(-EUCLEAN, "symlink %llu has no target extent",
					  (unsigned long long)ino);
		return ret;
	}
	ret = btrfs_decode_file_extent(root->fs, path.nodes[0], path.slots[0], &key, &fe);
	if (ret) {
		btrfs_release_path(&path);
		return ret;
	}
	if (fe.type != BTRFS_FILE_EXTENT_INLINE || fe.compression != BTRFS_COMPRESS_NONE) {
		btrfs_release_path(&path);
		return tlog_error(-EUCLEAN, "symlink %llu: target is not an uncompressed inline extent",
				  (unsigned long long)ino);
	}
	data = fe.inline_data;
	len = symlink_target_len(data, fe.inline_len, btrfs_inode_item_size(&inode));
	if (len >= size)
		len = size - 1;
	memcpy(buf, data, len);
	buf[len] = '\0';
	btrfs_release_path(&path);
	return (int)len;
}
