// SPDX-License-Identifier: GPL-2.0-only
/*
 * Opening and closing a filesystem: the superblock chosen (super.c), the
 * system chunks and the chunk tree mapped (volumes.c), the root and chunk
 * tree roots read through the block cache (extent-io.c), and what a
 * writer must refuse (a truncated image, a damaged primary superblock).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

#include "blockdev.h"
#include "csum.h"
#include "ctree.h"
#include "extent-io.h"
#include "super.h"
#include "misc.h"
#include "mkfs.h"
#include "transaction.h"
#include "tree-log.h"
#include "errctx.h"
#include "volumes.h"

int tlog_fs_create_memory(u32 nodesize, u32 sectorsize, u16 csum_type, struct tlog_fs **ret)
{
	struct tlog_fs *fs = calloc(1, sizeof(*fs));
	int err;

	if (!fs)
		return -ENOMEM;
	chunk_map_init(&fs->chunks);
	INIT_LIST_HEAD(&fs->cache.lru);
	INIT_LIST_HEAD(&fs->dirty_blocks);
	INIT_LIST_HEAD(&fs->log_dirty_blocks);
	fs->nodesize = nodesize;
	fs->sectorsize = sectorsize;
	fs->csum_type = csum_type;
	fs->csum_size = btrfs_csum_type_size(csum_type);
	fs->generation = 1;
	err = eb_cache_init(&fs->cache, nodesize);
	if (err) {
		free(fs);
		return err;
	}
	/* nothing behind the cache: it must never drop a block */
	fs->cache.max_cached = SIZE_MAX;
	*ret = fs;
	return 0;
}

/*
 * UUIDs the library gives new things (subvolumes, snapshots): random, as
 * the kernel's, unless a reproducible build fixed a seed; the name of the
 * thing then makes each one its own.
 */
void tlog_fs_set_uuid_seed(struct tlog_fs *fs, const u8 *seed)
{
	memcpy(fs->uuid_seed, seed, BTRFS_UUID_SIZE);
	fs->uuid_seeded = true;
}

void tlog_fs_new_uuid(struct tlog_fs *fs, const char *what, u64 id, u8 *out)
{
	if (fs->uuid_seeded)
		tlog_derive_uuid(fs->uuid_seed, what, id, out);
	else
		uuid_generate(out);
}

/* ---- open / close ---- */

static struct btrfs_root *alloc_root(struct tlog_fs *fs, u64 objectid)
{
	struct btrfs_root *root = calloc(1, sizeof(*root));

	if (!root)
		return NULL;
	root->fs = fs;
	root->root_key.objectid = objectid;
	root->root_key.type = BTRFS_ROOT_ITEM_KEY;
	return root;
}

static int setup_fs_from_super(struct tlog_fs *fs)
{
	const struct btrfs_super_block *sb = &fs->super;

	fs->generation = btrfs_super_block_generation(sb);
	fs->nodesize = btrfs_super_block_nodesize(sb);
	fs->sectorsize = btrfs_super_block_sectorsize(sb);
	fs->csum_type = btrfs_super_block_csum_type(sb);
	fs->csum_size = btrfs_csum_type_size(fs->csum_type);
	fs->incompat = btrfs_super_block_incompat_flags(sb);
	fs->compat_ro = btrfs_super_block_compat_ro_flags(sb);
	memcpy(fs->fsid, sb->fsid, BTRFS_FSID_SIZE);
	memcpy(fs->header_fsid,
	       (fs->incompat & BTRFS_FEATURE_INCOMPAT_METADATA_UUID) ?
	       sb->metadata_uuid : sb->fsid, BTRFS_FSID_SIZE);
	return eb_cache_init(&fs->cache, fs->nodesize);
}

static int setup_tree_roots(struct tlog_fs *fs)
{
	const struct btrfs_super_block *sb = &fs->super;
	struct extent_buffer *eb;
	int ret;

	fs->chunk_root = alloc_root(fs, BTRFS_CHUNK_TREE_OBJECTID);
	fs->tree_root = alloc_root(fs, BTRFS_ROOT_TREE_OBJECTID);
	if (!fs->chunk_root || !fs->tree_root)
		return -ENOMEM;

	fs->chunk_root->bytenr = btrfs_super_block_chunk_root(sb);
	fs->chunk_root->root_key.offset = 0;
	fs->chunk_root->level = btrfs_super_block_chunk_root_level(sb);
	fs->chunk_root->generation = btrfs_super_block_chunk_root_generation(sb);
	ret = read_tree_block(fs, fs->chunk_root->bytenr, fs->chunk_root->level,
			      fs->chunk_root->generation, &eb);
	if (ret)
		return tlog_error_wrap(ret, "cannot read chunk root");
	memcpy(fs->chunk_tree_uuid, eb_header(eb)->chunk_tree_uuid, BTRFS_UUID_SIZE);
	free_extent_buffer(eb);
	ret = btrfs_read_chunk_tree(fs);
	if (ret)
		return tlog_error_wrap(ret, "cannot read chunk tree");

	fs->tree_root->bytenr = btrfs_super_block_root(sb);
	fs->tree_root->level = btrfs_super_block_root_level(sb);
	fs->tree_root->generation = fs->generation;
	ret = read_tree_block(fs, fs->tree_root->bytenr, fs->tree_root->level,
			      fs->tree_root->generation, &eb);
	if (ret)
		return tlog_error_wrap(ret, "cannot read root tree");
	free_extent_buffer(eb);

	if (btrfs_super_block_log_root(sb)) {
		fs->log_root_tree = alloc_root(fs, BTRFS_TREE_LOG_OBJECTID);
		if (!fs->log_root_tree)
			return -ENOMEM;
		tlog_log_open(fs, fs->log_root_tree);
	}
	return 0;
}

/*
 * Writers work on the image as the kernel would mount it.  One that is
 * shorter than its device size (a cut-off copy) would be grown by the
 * first write near its end; one whose primary superblock is damaged would
 * have a backup copy, which never records the log, written over every
 * copy.  Readers only get told (fs->truncated, fs->primary_damage).
 */
static int check_image_size(struct tlog_fs *fs, const struct tlog_open_opts *opts)
{
	u64 dev_size = btrfs_dev_item_total_bytes(&fs->super.dev_item);

	fs->truncated = fs->bdev->size < dev_size;
	if (!opts->writable)
		return 0;
	if (fs->primary_damage[0] && opts->super_mirror < 0)
		return tlog_error(-EROFS, "the primary superblock is damaged: %s; choose copy %d with --super %d to write from it",
				  fs->primary_damage, fs->super_mirror, fs->super_mirror);
	if (fs->truncated)
		return tlog_error(-EROFS, "the image is %llu bytes, shorter than the %llu bytes of its device item: truncated",
				  (unsigned long long)fs->bdev->size, (unsigned long long)dev_size);
	return 0;
}

int tlog_open_bdev(struct tlog_bdev *bdev, const struct tlog_open_opts *opts,
		   struct tlog_fs **ret)
{
	struct tlog_fs *fs;
	int err;

	tlog_error_clear();
	if (opts->writable && !bdev->writable)
		return tlog_error(-EROFS, "%s is open read-only", bdev->name);
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	chunk_map_init(&fs->chunks);
	INIT_LIST_HEAD(&fs->cache.lru);
	INIT_LIST_HEAD(&fs->dirty_blocks);
	INIT_LIST_HEAD(&fs->log_dirty_blocks);
	fs->bdev = tlog_bdev_get(bdev);
	if (opts->fault_mode) {
		err = tlog_bdev_wrap_fault(fs->bdev, opts->fault_mode, opts->fault_nth, &fs->bdev);
		if (err) {
			tlog_bdev_close(bdev);
			fs->bdev = NULL;
			goto fail;
		}
	}
	err = btrfs_load_super(fs->bdev, opts->super_mirror, &fs->super, &fs->super_mirror,
			       fs->primary_damage, sizeof(fs->primary_damage));
	if (err)
		goto fail;
	err = check_image_size(fs, opts);
	if (err)
		goto fail;
	err = setup_fs_from_super(fs);
	if (err)
		goto fail;
	if (!opts->writable && !opts->fault_mode && !opts->read_copies)
		btrfs_begin_reading_in_place(fs);
	err = btrfs_read_sys_array(fs, &fs->chunks);
	if (err)
		goto fail;
	if (!opts->skip_chunk_tree) {
		err = setup_tree_roots(fs);
		if (err)
			goto fail;
	}
	*ret = fs;
	return 0;
fail:
	tlog_close(fs);
	return err;
}

int tlog_open(const char *path, const struct tlog_open_opts *opts, struct tlog_fs **ret)
{
	struct tlog_bdev *bdev;
	int err;

	tlog_error_clear();
	err = tlog_bdev_open_file(path, opts->writable ? TLOG_BDEV_RDWR : TLOG_BDEV_RDONLY, &bdev);
	if (err)
		return err;
	err = tlog_open_bdev(bdev, opts, ret);
	/* the filesystem holds its own reference when it opened */
	tlog_bdev_close(bdev);
	return err;
}

static void free_root_list(struct btrfs_root *root)
{
	while (root) {
		struct btrfs_root *next = root->next;

		btrfs_root_hint_end(root);
		free(root);
		root = next;
	}
}

void tlog_close(struct tlog_fs *fs)
{
	if (!fs)
		return;
	if (fs->overlay)
		tlog_trans_abort(fs->overlay);
	while (!list_empty(&fs->dirty_blocks))
		btrfs_clear_buffer_dirty(fs, list_first_entry(&fs->dirty_blocks,
							      struct extent_buffer, dirty_list));
	while (!list_empty(&fs->log_dirty_blocks))
		btrfs_clear_buffer_dirty(fs, list_first_entry(&fs->log_dirty_blocks,
							      struct extent_buffer, dirty_list));
	free_root_list(fs->roots);
	free(fs->tree_root);
	free(fs->chunk_root);
	free(fs->log_root_tree);
	free(fs->bg_size_classes);
	eb_cache_destroy(&fs->cache);
	btrfs_end_reading_in_place(fs);
	chunk_map_release(&fs->chunks);
	tlog_bdev_close(fs->bdev);
	free(fs);
}
