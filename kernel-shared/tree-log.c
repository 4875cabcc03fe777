// SPDX-License-Identifier: GPL-2.0-only
/*
 * Log trees (Documentation/design/log-replay.md): the log as replay, dump-log and zero-log read
 * it - its subvolumes, its blocks, its items inode by inode, the lookups
 * replay makes in it - then counting what it holds, and discarding it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev.h"
#include "dir-item.h"
#include "root-tree.h"
#include "super.h"
#include "errctx.h"
#include "tree-log.h"

void tlog_log_open(struct tlog_fs *fs, struct btrfs_root *lrt)
{
	lrt->bytenr = btrfs_super_block_log_root(&fs->super);
	lrt->level = btrfs_super_block_log_root_level(&fs->super);
	lrt->generation = fs->generation + 1;
}

/* ---- the subvolumes with a log ---- */

int tlog_log_for_each_subvol(struct tlog_fs *fs, tlog_log_subvol_fn fn, void *arg)
{
	struct btrfs_key min = { BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0 };
	struct btrfs_key max = { BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	int ret = 0;

	if (!fs->log_root_tree)
		return 0;
	/* @fn may read the log tree: a search of its own leaves the iterator's leaf valid */
	btrfs_for_each_item(fs->log_root_tree, &iter, &min, &max) {
		ret = fn(fs, iter.key.offset, arg);
		if (ret)
			break;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	return ret;
}

static int add_subvol(struct tlog_fs *fs, u64 subvol, void *arg)
{
	struct tlog_log_subvols *s = arg;

	(void)fs;
	if (s->nr == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		u64 *ids = realloc(s->ids, cap * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		s->ids = ids;
		s->cap = cap;
	}
	s->ids[s->nr++] = subvol;
	return 0;
}

static void reverse_ids(u64 *ids, size_t nr)
{
	for (size_t i = 0; i < nr / 2; i++) {
		u64 t = ids[i];

		ids[i] = ids[nr - 1 - i];
		ids[nr - 1 - i] = t;
	}
}

int tlog_log_list_subvols(struct tlog_fs *fs, enum tlog_log_order order,
			  struct tlog_log_subvols *subvols)
{
	int ret;

	*subvols = (struct tlog_log_subvols){ 0 };
	ret = tlog_log_for_each_subvol(fs, add_subvol, subvols);
	if (ret) {
		tlog_log_subvols_free(subvols);
		return ret;
	}
	/* the log root tree lists them lowest first */
	if (order == TLOG_LOG_HIGHEST_FIRST)
		reverse_ids(subvols->ids, subvols->nr);
	return 0;
}

void tlog_log_subvols_free(struct tlog_log_subvols *subvols)
{
	free(subvols->ids);
	*subvols = (struct tlog_log_subvols){ 0 };
}

/* ---- the blocks of the log ---- */

struct block_walk {
	struct tlog_fs *fs;
	tlog_log_block_fn fn;
	void *arg;
	bool in_root_tree;
};

static int walk_tree_blocks(struct block_walk *bw, u64 bytenr, int level, u64 gen)
{
	struct extent_buffer *eb;
	int ret;

	ret = read_tree_block(bw->fs, bytenr, level, gen, &eb);
	if (ret) {
		char where[64];

		snprintf(where, sizeof(where), "log block %llu", (unsigned long long)bytenr);
		return tlog_error_wrap(ret, where);
	}
	ret = bw->fn(bw->fs, eb, bw->in_root_tree, bw->arg);
	/* every child is wanted: read them together, not one by one */
	if (!ret && level > 0)
		btrfs_prefetch_children(bw->fs, eb, 0, BTRFS_PREFETCH_ALL, NULL, true);
	for (u32 i = 0; !ret && level > 0 && i < btrfs_header_nritems_eb(eb); i++)
		ret = walk_tree_blocks(bw, btrfs_node_blockptr(eb, i), level - 1,
				       btrfs_node_ptr_generation(eb, i));
	free_extent_buffer(eb);
	return ret;
}

int tlog_log_for_each_block(struct tlog_fs *fs, tlog_log_block_fn fn, void *arg)
{
	struct btrfs_root *lrt = fs->log_root_tree;
	struct block_walk bw = { .fs = fs, .fn = fn, .arg = arg, .in_root_tree = true };
	struct tlog_log_subvols subvols;
	int ret;

	if (!lrt)
		return 0;
	ret = walk_tree_blocks(&bw, lrt->bytenr, lrt->level, lrt->generation);
	if (ret)
		return ret;
	ret = tlog_log_list_subvols(fs, TLOG_LOG_HIGHEST_FIRST, &subvols);
	if (ret)
		return ret;
	bw.in_root_tree = false;
	for (size_t i = 0; !ret && i < subvols.nr; i++) {
		struct btrfs_root *log;

		ret = btrfs_read_log_root(fs, subvols.ids[i], &log);
		if (!ret)
			ret = walk_tree_blocks(&bw, log->bytenr, log->level, log->generation);
	}
	tlog_log_subvols_free(&subvols);
	return ret;
}

/* ---- lookups in a log tree ---- */

/* The DIR_LOG_INDEX item at the path: its end, or -EUCLEAN when it has none. */
static int dir_range_end(const struct btrfs_path *path, u64 dir, u64 *end)
{
	const struct extent_buffer *leaf = path->nodes[0];

	if (btrfs_item_size(leaf, path->slots[0]) < sizeof(struct btrfs_dir_log_item))
		return tlog_error(-EUCLEAN, "log: bad DIR_LOG_INDEX item of directory %llu",
				  (unsigned long long)dir);
	*end = btrfs_dir_log_item_end(btrfs_item_ptr(leaf, path->slots[0]));
	return 0;
}

/* The range starting at or before *@start, if it reaches *@start: 0, else 1. */
static int dir_range_around(struct btrfs_root *log, u64 dir, u64 *start, u64 *end)
{
	struct btrfs_key key = { dir, BTRFS_DIR_LOG_INDEX_KEY, *start };
	struct btrfs_path path;
	u64 found_end = 0;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_backwards(log, &key, &path);
	if (ret == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		ret = dir_range_end(&path, dir, &found_end);
		if (!ret && *start >= key.offset && *start <= found_end) {
			*start = key.offset;
			*end = found_end;
		} else if (!ret) {
			ret = 1;
		}
	}
	btrfs_release_path(&path);
	return ret;
}

/* The first range starting at or after *@start: 0, else 1. */
static int dir_range_after(struct btrfs_root *log, u64 dir, u64 *start, u64 *end)
{
	struct btrfs_key key = { dir, BTRFS_DIR_LOG_INDEX_KEY, *start };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_forward(log, &key, &path);
	if (ret == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.objectid != dir || key.type != BTRFS_DIR_LOG_INDEX_KEY)
			ret = 1;
		else
			ret = dir_range_end(&path, dir, end);
		if (ret == 0)
			*start = key.offset;
	}
	btrfs_release_path(&path);
	return ret;
}

int tlog_log_find_dir_range(struct btrfs_root *log, u64 dir, u64 *start, u64 *end)
{
	int ret = dir_range_around(log, dir, start, end);

	if (ret <= 0)
		return ret;
	return dir_range_after(log, dir, start, end);
}

int tlog_log_has_ref_name(struct btrfs_root *log, const struct btrfs_key *key, u64 parent,
			  const char *name, u16 len)
{
	struct tlog_ref_name *names;
	struct btrfs_path path;
	int ret, nr;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(log, key, &path);
	if (ret > 0) {
		btrfs_release_path(&path);
		return 0;
	}
	if (ret == 0)
		ret = btrfs_decode_ref_item(path.nodes[0], path.slots[0], &names, &nr);
	btrfs_release_path(&path);
	if (ret)
		return ret;
	for (int i = 0; i < nr && !ret; i++)
		ret = names[i].parent == parent && names[i].len == len &&
		      memcmp(names[i].name, name, len) == 0;
	free(names);
	return ret;
}

/* ---- the items of a log tree ---- */

static enum tlog_log_item_kind inode_item_kind(u8 type)
{
	switch (type) {
	case BTRFS_INODE_ITEM_KEY:
		return TLOG_LOG_INODE_ITEM;
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		return TLOG_LOG_NAME;
	case BTRFS_XATTR_ITEM_KEY:
		return TLOG_LOG_XATTR;
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
		return TLOG_LOG_DIR_ENTRY;
	case BTRFS_EXTENT_DATA_KEY:
		return TLOG_LOG_EXTENT;
	case BTRFS_DIR_LOG_ITEM_KEY:
	case BTRFS_DIR_LOG_INDEX_KEY:
		return TLOG_LOG_DIR_RANGE;
	}
	return TLOG_LOG_INODE_OTHER;
}

static enum tlog_log_item_kind item_kind(const struct btrfs_key *key)
{
	if (key->objectid == BTRFS_EXTENT_CSUM_OBJECTID && key->type == BTRFS_EXTENT_CSUM_KEY)
		return TLOG_LOG_CSUM;
	if (key->objectid == BTRFS_ORPHAN_OBJECTID && key->type == BTRFS_ORPHAN_ITEM_KEY)
		return TLOG_LOG_ORPHAN;
	if (key->objectid < BTRFS_LAST_FREE_OBJECTID)
		return inode_item_kind(key->type);
	return TLOG_LOG_SPECIAL;
}

/* Classify the item the iterator is on and follow the inode it belongs to. */
static void cursor_settle(struct tlog_log_cursor *cur)
{
	const struct btrfs_tree_iter *it = &cur->iter;

	if (it->ret)
		return;
	cur->kind = item_kind(&it->key);
	cur->in_inode = cur->kind < TLOG_LOG_CSUM;
	cur->first_of_inode = false;
	if (!cur->in_inode)
		return;
	if (!cur->seen_inode || it->key.objectid != cur->inode.ino) {
		cur->inode = (struct tlog_logged_inode){ .ino = it->key.objectid };
		cur->first_of_inode = true;
		cur->seen_inode = true;
	}
	if (cur->kind == TLOG_LOG_INODE_ITEM &&
	    btrfs_item_size(it->leaf, it->slot) >= sizeof(struct btrfs_inode_item)) {
		const struct btrfs_inode_item *ii = btrfs_item_ptr(it->leaf, it->slot);

		cur->inode.has_inode_item = true;
		cur->inode.ignored = btrfs_inode_item_nlink(ii) == 0;
	}
}

void tlog_log_cursor_start(struct btrfs_root *log, struct tlog_log_cursor *cur)
{
	struct btrfs_key min = { 0, 0, 0 }, max = { (u64)-1, (u8)-1, (u64)-1 };

	memset(cur, 0, sizeof(*cur));
	btrfs_tree_iter_start(log, &cur->iter, &min, &max);
	cursor_settle(cur);
}

void tlog_log_cursor_next(struct tlog_log_cursor *cur)
{
	btrfs_tree_iter_next(&cur->iter);
	cursor_settle(cur);
}

void tlog_log_cursor_end(struct tlog_log_cursor *cur)
{
	btrfs_tree_iter_end(&cur->iter);
}

/* ---- counting and discarding ---- */

/* The INODE_ITEMs of one log tree. */
static int count_inodes_in(struct tlog_fs *fs, u64 subvol, void *arg)
{
	struct tlog_log_cursor cur;
	struct btrfs_root *log;
	u64 *inodes = arg;
	int ret;

	ret = btrfs_read_log_root(fs, subvol, &log);
	if (ret)
		return ret;
	tlog_log_for_each_item(log, &cur)
		if (cur.iter.key.type == BTRFS_INODE_ITEM_KEY)
			(*inodes)++;
	ret = cur.iter.ret < 0 ? cur.iter.ret : 0;
	tlog_log_cursor_end(&cur);
	return ret;
}

int btrfs_count_logged_inodes(struct tlog_fs *fs, u64 *inodes, u64 *subvols)
{
	struct tlog_log_subvols list;
	int err;

	tlog_error_clear();
	*inodes = 0;
	*subvols = 0;
	err = tlog_log_list_subvols(fs, TLOG_LOG_LOWEST_FIRST, &list);
	if (err)
		return err;
	*subvols = list.nr;
	for (size_t i = 0; !err && i < list.nr; i++)
		err = count_inodes_in(fs, list.ids[i], inodes);
	tlog_log_subvols_free(&list);
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
	/* the image has no log now: nothing of it may stay cached */
	if (!err)
		btrfs_drop_log_roots(fs);
	return err;
}
