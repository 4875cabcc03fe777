// SPDX-License-Identifier: GPL-2.0-only
/*
 * Open files and the file extent cursor (see file.h).
 *
 * The cursor keeps a full path (root to leaf) into the subvolume tree.
 * Moving forward to a nearby offset steps through items of the current
 * leaf and, through btrfs_next_leaf(), into the next leaf, reusing the
 * upper levels; only a jump backwards or far ahead costs a search from the
 * root.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errctx.h"
#include "file.h"
#include "misc.h"

/* Items stepped over before a jump forward falls back to a fresh search. */
#define CURSOR_MAX_STEPS 64

int tlog_file_open(struct tlog_fs *fs, struct btrfs_root *root, u64 ino,
		   struct tlog_file **ret)
{
	struct tlog_file *file = calloc(1, sizeof(*file));
	int err;

	tlog_error_clear();
	if (!file)
		return -ENOMEM;
	file->fs = fs;
	file->root = root;
	file->ino = ino;
	err = btrfs_read_inode(root, ino, &file->inode);
	if (err) {
		free(file);
		return err;
	}
	file->size = btrfs_inode_item_size(&file->inode);
	file->mode = btrfs_inode_item_mode(&file->inode);
	btrfs_init_path(&file->cur.path);
	btrfs_path_set_reada(&file->cur.path,
			     &(struct btrfs_key){ ino, BTRFS_EXTENT_DATA_KEY, (u64)-1 });
	*ret = file;
	return 0;
}

void tlog_file_close(struct tlog_file *file)
{
	if (!file)
		return;
	tlog_file_read_release(file);
	btrfs_release_path(&file->cur.path);
	free(file);
}

static int bad_extent(const struct tlog_file *file, u64 offset, const char *why)
{
	return tlog_error(-EUCLEAN, "corrupted file extent item (inode %llu offset %llu): %s",
			  (unsigned long long)file->ino, (unsigned long long)offset, why);
}

/*
 * What reading needs beyond the kernel's rules: an inline extent fits one
 * sector, a regular one maps bytes, from a disk range that does not wrap,
 * and no extent is in an encoding this reader does not know.
 */
static int check_readable(const struct tlog_file *file, const struct tlog_file_extent *ext)
{
	u32 sectorsize = file->fs->sectorsize;

	if (ext->other_encoding)
		return bad_extent(file, ext->start, "encrypted or encoded extent");
	if (ext->type == BTRFS_FILE_EXTENT_INLINE) {
		if (ext->ram_bytes == 0 || ext->ram_bytes > sectorsize ||
		    ext->start > (u64)-1 - sectorsize)
			return bad_extent(file, ext->start, "inline extent of impossible size");
		return 0;
	}
	if (ext->num_bytes == 0)
		return bad_extent(file, ext->start, "unaligned or empty range");
	if (ext->disk_bytenr &&
	    (ext->disk_num_bytes == 0 || ext->disk_bytenr + ext->disk_num_bytes < ext->disk_bytenr))
		return bad_extent(file, ext->start, "bad disk range");
	return 0;
}

/* Decode and check the EXTENT_DATA item at @slot of @leaf into @ext. */
static int decode_extent(const struct tlog_file *file, const struct extent_buffer *leaf,
			 int slot, const struct btrfs_key *key, struct tlog_file_extent *ext)
{
	int ret = btrfs_decode_file_extent(file->fs, leaf, slot, key, ext);

	return ret ? ret : check_readable(file, ext);
}

/* Load the item under the path; 1 if it is not an extent item of the inode. */
static int load_cursor_item(struct tlog_file *file)
{
	struct tlog_extent_cursor *cur = &file->cur;
	struct extent_buffer *leaf = cur->path.nodes[0];
	struct btrfs_key key;
	int ret;

	cur->valid = false;
	if (!leaf || cur->path.slots[0] >= (int)btrfs_header_nritems_eb(leaf))
		return 1;
	btrfs_item_key_to_cpu(leaf, &key, cur->path.slots[0]);
	if (key.objectid != file->ino || key.type != BTRFS_EXTENT_DATA_KEY)
		return 1;
	ret = decode_extent(file, leaf, cur->path.slots[0], &key, &cur->ext);
	if (ret)
		return ret;
	cur->valid = true;
	return 0;
}

int tlog_file_cursor_next(struct tlog_file *file)
{
	struct tlog_extent_cursor *cur = &file->cur;
	int ret;

	if (!cur->valid)
		return 1;
	cur->gap_start = cur->ext.end;
	ret = btrfs_next_item(file->root, &cur->path);
	if (ret) {
		cur->valid = false;
		return ret;
	}
	cur->nr_steps++;
	return load_cursor_item(file);
}

/* A search from the root for the item containing @offset, or the one after. */
static int cursor_search(struct tlog_file *file, u64 offset)
{
	struct tlog_extent_cursor *cur = &file->cur;
	struct btrfs_key key = { file->ino, BTRFS_EXTENT_DATA_KEY, offset };
	int ret;

	cur->nr_searches++;
	cur->valid = false;
	cur->gap_start = 0;
	ret = btrfs_search_slot(file->root, &key, &cur->path);
	if (ret < 0)
		return ret;
	if (ret == 0) {
		ret = load_cursor_item(file);
		/* what precedes an exact hit is unknown: no gap to trust */
		cur->gap_start = cur->ext.start;
		return ret;
	}

	/* The previous item may still cover @offset. */
	ret = btrfs_prev_item(file->root, &cur->path);
	if (ret < 0)
		return ret;
	if (ret == 0) {
		ret = load_cursor_item(file);
		if (ret < 0)
			return ret;
		if (ret == 0 && cur->ext.end > offset) {
			cur->gap_start = cur->ext.start;
			return 0;
		}
		/* Not covering: the item after it is the one we want. */
		cur->gap_start = ret == 0 ? cur->ext.end : 0;
		ret = btrfs_next_item(file->root, &cur->path);
		if (ret)
			return ret;
	}
	/* else nothing precedes the search slot: it is the tree's first item */
	return load_cursor_item(file);
}

int tlog_file_cursor_seek(struct tlog_file *file, u64 offset)
{
	struct tlog_extent_cursor *cur = &file->cur;
	int ret;

	/* In the gap just before the cached item: it is the item after @offset. */
	if (cur->valid && cur->ext.start > offset && offset >= cur->gap_start)
		return 0;
	if (cur->valid && cur->ext.start <= offset) {
		/* Forward from the cached item: the cp/tar and walk patterns. */
		for (int i = 0; i < CURSOR_MAX_STEPS; i++) {
			if (cur->ext.end > offset)
				return 0;
			ret = tlog_file_cursor_next(file);
			if (ret)
				return ret;
			if (cur->ext.start > offset)
				return 0;
		}
	}
	return cursor_search(file, offset);
}

int tlog_file_last_extent_end(struct tlog_file *file, u64 *ret)
{
	struct btrfs_key key = { file->ino, BTRFS_EXTENT_DATA_KEY, (u64)-1 };
	struct tlog_file_extent ext;
	struct btrfs_path path;
	int err;

	*ret = 0;
	btrfs_init_path(&path);
	err = btrfs_search_backwards(file->root, &key, &path);
	while (err == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.objectid != file->ino || key.type != BTRFS_EXTENT_DATA_KEY)
			break;
		err = decode_extent(file, path.nodes[0], path.slots[0], &key, &ext);
		if (err)
			break;
		if (!tlog_extent_is_hole(&ext)) {
			if (ext.type == BTRFS_FILE_EXTENT_INLINE)
				*ret = ext.start + round_up(ext.end - ext.start, file->fs->sectorsize);
			else
				*ret = ext.end;
			break;
		}
		/* Explicit holes do not count: look further back. */
		err = btrfs_prev_item(file->root, &path);
	}
	btrfs_release_path(&path);
	return err < 0 ? err : 0;
}
