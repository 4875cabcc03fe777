// SPDX-License-Identifier: GPL-2.0-only
/*
 * Finding trees: ROOT_ITEMs in the root tree (and, for log trees, in the
 * log root tree), turned into struct btrfs_root objects cached in the fs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctree.h"
#include "errctx.h"
#include "misc.h"
#include "root-tree.h"
#include "tree-checker.h"

static struct btrfs_root *find_cached_root(struct tlog_fs *fs, u64 objectid, u64 offset)
{
	for (struct btrfs_root *r = fs->roots; r; r = r->next)
		if (r->root_key.objectid == objectid && r->root_key.offset == offset)
			return r;
	return NULL;
}

/* Copy a ROOT_ITEM (legacy or full size) into @root and check what it claims. */
static int load_root_item(struct tlog_fs *fs, struct btrfs_root *root,
			  const struct extent_buffer *leaf, int slot)
{
	struct btrfs_root_item *ri = &root->root_item;
	int ret;

	ret = btrfs_decode_root_item(fs, leaf, slot, &root->root_key, ri, NULL, 0);
	if (ret)
		return ret;
	root->bytenr = btrfs_root_item_bytenr(ri);
	root->level = btrfs_root_item_level(ri);
	root->generation = btrfs_root_item_generation(ri);
	return 0;
}

/* Make a struct btrfs_root of the ROOT_ITEM at @slot and cache it in @fs. */
static int add_root_from_item(struct tlog_fs *fs, const struct extent_buffer *leaf,
			      int slot, const struct btrfs_key *key,
			      struct btrfs_root **ret)
{
	struct btrfs_root *root = calloc(1, sizeof(*root));
	int err;

	if (!root)
		return -ENOMEM;
	root->fs = fs;
	root->root_key = *key;
	err = load_root_item(fs, root, leaf, slot);
	if (err) {
		free(root);
		return err;
	}
	root->next = fs->roots;
	fs->roots = root;
	*ret = root;
	return 0;
}

/*
 * The ROOT_ITEM of @objectid in root tree @tree: the highest offset wins
 * (snapshots carry their creation transid there).  0 with @path on it and
 * its key in *@key, -ENOENT, or -errno; the caller releases @path.
 */
static int search_root_item(struct btrfs_root *tree, u64 objectid, struct btrfs_path *path,
			    struct btrfs_key *key)
{
	int err;

	*key = (struct btrfs_key){ objectid, BTRFS_ROOT_ITEM_KEY, (u64)-1 };
	btrfs_init_path(path);
	err = btrfs_search_backwards(tree, key, path);
	if (err == 0)
		btrfs_item_key_to_cpu(path->nodes[0], key, path->slots[0]);
	return err > 0 ? -ENOENT : err;
}

static int lookup_root_item(struct tlog_fs *fs, u64 objectid, struct btrfs_root **ret)
{
	struct btrfs_key key;
	struct btrfs_path path;
	int err = search_root_item(fs->tree_root, objectid, &path, &key);

	if (err == 0) {
		*ret = find_cached_root(fs, objectid, key.offset);
		if (!*ret)
			err = add_root_from_item(fs, path.nodes[0], path.slots[0], &key, ret);
	}
	btrfs_release_path(&path);
	return err;
}

int btrfs_find_root(struct tlog_fs *fs, u64 objectid, struct btrfs_root **ret)
{
	if (objectid == BTRFS_ROOT_TREE_OBJECTID) {
		*ret = fs->tree_root;
		return 0;
	}
	if (objectid == BTRFS_CHUNK_TREE_OBJECTID) {
		*ret = fs->chunk_root;
		return 0;
	}
	if (objectid == BTRFS_TREE_LOG_OBJECTID) {
		if (!fs->log_root_tree)
			return -ENOENT;
		*ret = fs->log_root_tree;
		return 0;
	}
	return lookup_root_item(fs, objectid, ret);
}

int btrfs_read_commit_root(struct tlog_fs *fs, u64 objectid, struct btrfs_root *out)
{
	const struct btrfs_super_block *sb = &fs->super;
	struct btrfs_root tree_root = {
		.fs = fs,
		.root_key = { BTRFS_ROOT_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0 },
		.bytenr = btrfs_super_block_root(sb),
		.generation = btrfs_super_block_generation(sb),
		.level = btrfs_super_block_root_level(sb),
	};
	struct btrfs_path path;
	int err;

	memset(out, 0, sizeof(*out));
	out->fs = fs;
	err = search_root_item(&tree_root, objectid, &path, &out->root_key);
	if (err == 0)
		err = load_root_item(fs, out, path.nodes[0], path.slots[0]);
	btrfs_release_path(&path);
	return err;
}

int btrfs_read_root(struct tlog_fs *fs, u64 objectid, struct btrfs_root **ret)
{
	int err = btrfs_find_root(fs, objectid, ret);

	if (err != -ENOENT)
		return err;
	if (objectid == BTRFS_TREE_LOG_OBJECTID)
		return tlog_error(-ENOENT, "the filesystem has no log tree");
	return tlog_error(-ENOENT, "tree %llu does not exist", (unsigned long long)objectid);
}

int btrfs_read_log_root(struct tlog_fs *fs, u64 objectid, struct btrfs_root **ret)
{
	struct btrfs_key key = { BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, objectid };
	struct btrfs_path path;
	int err;

	if (!fs->log_root_tree)
		return tlog_error(-ENOENT, "the filesystem has no log tree");
	*ret = find_cached_root(fs, key.objectid, key.offset);
	if (*ret)
		return 0;
	btrfs_init_path(&path);
	err = btrfs_search_slot(fs->log_root_tree, &key, &path);
	if (err == 0)
		err = add_root_from_item(fs, path.nodes[0], path.slots[0], &key, ret);
	else if (err > 0)
		err = tlog_error(-ENOENT, "no log tree for subvolume %llu",
				 (unsigned long long)objectid);
	btrfs_release_path(&path);
	return err;
}

void btrfs_drop_log_roots(struct tlog_fs *fs)
{
	struct btrfs_root **pp = &fs->roots;

	while (*pp) {
		struct btrfs_root *r = *pp;

		if (r->root_key.objectid != BTRFS_TREE_LOG_OBJECTID) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		free(r);
	}
	free(fs->log_root_tree);
	fs->log_root_tree = NULL;
}

int btrfs_new_root(struct tlog_fs *fs, const struct btrfs_key *key, struct btrfs_root **ret)
{
	struct btrfs_root *root;

	if (find_cached_root(fs, key->objectid, key->offset))
		return tlog_error(-EEXIST, "tree %llu exists", (unsigned long long)key->objectid);
	root = calloc(1, sizeof(*root));
	if (!root)
		return -ENOMEM;
	root->fs = fs;
	root->root_key = *key;
	root->next = fs->roots;
	fs->roots = root;
	*ret = root;
	return 0;
}
