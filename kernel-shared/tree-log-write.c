// SPDX-License-Identifier: GPL-2.0-only
/*
 * The fsync log, written as the kernel writes it.
 *
 * btrfs_sync_file decides between nothing (the inode is all in the last
 * commit or log), logging the inode and syncing the log, and a full
 * commit.  Logging follows btrfs_log_inode_parent and btrfs_log_inode:
 *
 *  - full sync (inode->full_sync: new inode, truncate, clone...): the old
 *    log items of the inode go, then every item of it in a leaf changed
 *    in this transaction is copied (extents of past transactions below
 *    i_size excepted: the committed tree has them), holes between
 *    extents logged as hole items with NO_HOLES, prealloc extents past
 *    EOF, the checksums of new extents;
 *  - COPY_EVERYTHING (inode->needs_full_log: a link, an xattr change):
 *    the same for the inode item, names and xattrs, and then the fast
 *    path for extents;
 *  - fast path: the inode item and the extents written since the last
 *    log (inode->modified), each replacing what the log had there.
 *
 * A new inode brings its new ancestor directories into the log as
 * "exists" entries (log_all_new_ancestors), so that replay can link it.
 * What this logger does not do yet ends in a full commit whose reason
 * starts "(not logged yet)": correct, only slower than the kernel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errctx.h"
#include "file-extent.h"
#include "file-item.h"
#include "misc.h"
#include "tree-checker.h"
#include "tree-log-write.h"

/* btrfs_log_inode's inode_only */
enum log_mode {
	LOG_INODE_ALL,
	LOG_INODE_EXISTS,
};

/* Logging needs a full commit instead (BTRFS_LOG_FORCE_COMMIT). */
#define LOG_FORCE_COMMIT	1
/* The inode is in the log already: no log sync (BTRFS_NO_LOG_SYNC). */
#define LOG_NO_SYNC		2

#define NOT_LOGGED_YET		"(not logged yet): "

struct log_ctx {
	struct tlog_mount *mnt;
	struct tlog_trans *trans;
	struct btrfs_root *log;
	const char *reason;	/* of a full commit */
	bool logged_before;	/* the inode being logged was, in this transaction */
};

static int force_commit(struct log_ctx *ctx, const char *reason)
{
	if (!ctx->reason)
		ctx->reason = reason;
	return LOG_FORCE_COMMIT;
}

static u64 i_size(const struct tlog_inode *inode)
{
	return btrfs_inode_item_size(&inode->item);
}

static u64 last_committed(const struct log_ctx *ctx)
{
	return ctx->trans->fs->generation;
}

/* The key right after @key. */
static bool key_next(struct btrfs_key *key)
{
	if (++key->offset)
		return true;
	if (++key->type)
		return true;
	return ++key->objectid != 0;
}

/* ---- what the inode's runtime state says ---- */

static bool inode_logged(const struct log_ctx *ctx, const struct tlog_inode *inode)
{
	return inode->logged_trans == ctx->trans->transid;
}

/* btrfs_inode_in_log: logged in this transaction, unchanged since. */
static bool inode_in_log(const struct tlog_mount *mnt, const struct tlog_inode *inode)
{
	return mnt->trans && inode->logged_trans == mnt->trans->transid &&
	       inode->last_sub_trans <= inode->last_log_commit;
}

/* skip_inode_logging: the last commit or the log has every change. */
static bool skip_inode_logging(const struct tlog_mount *mnt, const struct tlog_inode *inode)
{
	return !mnt->trans || inode->last_trans <= mnt->fs->generation ||
	       inode_in_log(mnt, inode);
}

/* need_log_inode: an ancestor directory has something the log lacks. */
static bool need_log_inode(const struct log_ctx *ctx, const struct tlog_inode *inode)
{
	if (S_ISDIR(tlog_inode_mode(inode)) && inode->last_trans < ctx->trans->transid)
		return false;
	return !(inode_logged(ctx, inode) && !inode->needs_full_log);
}

/* ---- log items ---- */

/*
 * fill_inode_item for the log: the in-memory inode; an "exists" entry has
 * generation 0 (replay then keeps what the subvolume has) and @logged_isize.
 * nbytes is the inode's, which replay ignores.
 */
static void fill_inode_item(const struct log_ctx *ctx, const struct tlog_inode *inode,
			    enum log_mode mode, u64 logged_isize, struct btrfs_inode_item *out)
{
	*out = inode->item;
	if (mode == LOG_INODE_EXISTS) {
		btrfs_set_inode_item_generation(out, 0);
		btrfs_set_inode_item_size(out, logged_isize);
	} else {
		btrfs_set_inode_item_generation(out, inode->generation);
	}
	btrfs_set_inode_item_transid(out, ctx->trans->transid);
	btrfs_set_inode_item_block_group(out, 0);
}

/* log_inode_item: the inode item, overwritten in the log or inserted. */
static int log_inode_item(struct log_ctx *ctx, const struct tlog_inode *inode,
			  enum log_mode mode, u64 logged_isize)
{
	struct btrfs_key key = { inode->ino, BTRFS_INODE_ITEM_KEY, 0 };
	struct btrfs_inode_item item;
	struct btrfs_path path;
	int ret;

	fill_inode_item(ctx, inode, mode, logged_isize, &item);
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(ctx->trans, ctx->log, &key, &path, 0);
	if (ret == 0 && btrfs_item_size(path.nodes[0], path.slots[0]) == sizeof(item))
		memcpy(btrfs_item_ptr(path.nodes[0], path.slots[0]), &item, sizeof(item));
	btrfs_release_path(&path);
	if (ret > 0)
		ret = btrfs_insert_item(ctx->trans, ctx->log, &key, &item, sizeof(item));
	if (!ret)
		ctx->mnt->stats.items_copied++;
	return ret;
}

/* drop_inode_items: the inode's log items of types up to @max_type. */
static int drop_inode_items(struct log_ctx *ctx, const struct tlog_inode *inode, u8 max_type)
{
	struct btrfs_key min = { inode->ino, 0, 0 };
	struct btrfs_key max = { inode->ino, max_type, (u64)-1 };

	ctx->mnt->stats.deletion_searches++;
	return btrfs_delete_items_range(ctx->trans, ctx->log, &min, &max, NULL);
}

/* The log's extents of the inode in [start, end) go (btrfs_drop_extents on the log). */
static int drop_log_extents(struct log_ctx *ctx, const struct tlog_inode *inode, u64 start,
			    u64 end)
{
	u64 found;

	ctx->mnt->stats.deletion_searches++;
	return btrfs_drop_file_extents(ctx->trans, ctx->log, inode->ino, start, end, &found);
}

/* A hole item [start, start + len) in the log (btrfs_insert_hole_extent). */
static int log_hole(struct log_ctx *ctx, const struct tlog_inode *inode, u64 start, u64 len)
{
	struct btrfs_key key = { inode->ino, BTRFS_EXTENT_DATA_KEY, start };
	struct btrfs_file_extent_item fi;
	int ret;

	memset(&fi, 0, sizeof(fi));
	btrfs_set_file_extent_item_num_bytes(&fi, len);
	btrfs_set_file_extent_item_ram_bytes(&fi, len);
	btrfs_set_file_extent_item_generation(&fi, ctx->trans->transid);
	btrfs_set_file_extent_item_type(&fi, BTRFS_FILE_EXTENT_REG);
	ret = btrfs_insert_item(ctx->trans, ctx->log, &key, &fi, sizeof(fi));
	if (!ret)
		ctx->mnt->stats.items_copied++;
	return ret;
}

/*
 * The data checksums of the new extent in @leaf's @slot (log_extent_csums
 * / copy_items): the whole on-disk extent when compressed, else the part
 * the item uses.  Extents of past transactions have theirs committed.
 */
static int log_extent_csums(struct log_ctx *ctx, const struct tlog_inode *inode,
			    const struct tlog_file_extent *ext)
{
	u64 start, len, copied;

	if (btrfs_inode_item_flags(&inode->item) & BTRFS_INODE_NODATASUM)
		return 0;
	if (ext->type != BTRFS_FILE_EXTENT_REG || !ext->disk_bytenr ||
	    ext->generation <= last_committed(ctx))
		return 0;
	if (ext->compression) {
		start = ext->disk_bytenr;
		len = ext->disk_num_bytes;
	} else {
		start = ext->disk_bytenr + ext->offset;
		len = ext->num_bytes;
	}
	return btrfs_log_csums(ctx->trans, ctx->log, start, start + len, &copied);
}

/*
 * copy_items: @nr items of @leaf from @slot into the log, with the
 * checksums of the new extents among them.
 */
static int copy_items(struct log_ctx *ctx, const struct tlog_inode *inode,
		      const struct extent_buffer *leaf, int slot, int nr)
{
	int ret;

	if (!nr)
		return 0;
	for (int i = slot; i < slot + nr; i++) {
		struct btrfs_key key;
		struct tlog_file_extent ext;

		btrfs_item_key_to_cpu(leaf, &key, i);
		if (key.type != BTRFS_EXTENT_DATA_KEY)
			continue;
		ret = btrfs_read_file_extent(leaf, i, &key, &ext);
		if (!ret)
			ret = log_extent_csums(ctx, inode, &ext);
		if (ret)
			return ret;
	}
	ret = btrfs_copy_items(ctx->trans, ctx->log, leaf, slot, nr);
	if (!ret)
		ctx->mnt->stats.items_copied += nr;
	return ret;
}

/*
 * An extent of a past transaction below i_size is in the committed tree
 * already; after a clone in this transaction the kernel logs them all.
 */
static bool skip_old_extent(const struct log_ctx *ctx, const struct tlog_inode *inode,
			    const struct extent_buffer *leaf, int slot, const struct btrfs_key *key)
{
	const struct btrfs_file_extent_item *fi = btrfs_item_ptr(leaf, slot);

	return btrfs_file_extent_item_generation(fi) < ctx->trans->transid &&
	       key->offset < i_size(inode) && inode->last_reflink_trans < ctx->trans->transid;
}

/*
 * copy_inode_items_to_log: the inode's items up to @max_type in leaves
 * changed in this transaction.  The inode item is written from memory
 * afterwards (log_inode_item), xattrs by log_all_xattrs, extents at or
 * past i_size by log_prealloc_extents.
 */
static int copy_inode_items(struct log_ctx *ctx, const struct tlog_inode *inode, u8 max_type)
{
	struct btrfs_key min = { inode->ino, BTRFS_INODE_ITEM_KEY, 0 };
	int ret = 0;

	for (;;) {
		struct btrfs_path path;
		struct extent_buffer *leaf;
		int slot, nritems, run = 0, nr = 0;
		bool stop = false;

		btrfs_init_path(&path);
		ret = btrfs_search_forward_since(inode->root, &min, &path, ctx->trans->transid);
		if (ret) {
			btrfs_release_path(&path);
			return ret < 0 ? ret : 0;
		}
		leaf = path.nodes[0];
		nritems = (int)btrfs_header_nritems_eb(leaf);
		for (slot = path.slots[0]; !ret && slot < nritems; slot++) {
			struct btrfs_key key;
			bool take;

			btrfs_item_key_to_cpu(leaf, &key, slot);
			if (key.objectid != inode->ino || key.type > max_type ||
			    (key.type == BTRFS_EXTENT_DATA_KEY && key.offset >= i_size(inode))) {
				stop = true;
				break;
			}
			if (key.type == BTRFS_INODE_ITEM_KEY || key.type == BTRFS_XATTR_ITEM_KEY)
				take = false;
			else if (key.type == BTRFS_EXTENT_DATA_KEY)
				take = !skip_old_extent(ctx, inode, leaf, slot, &key);
			else
				take = true;
			if (take && nr && run + nr == slot) {
				nr++;
				continue;
			}
			ret = copy_items(ctx, inode, leaf, run, nr);
			run = slot;
			nr = take;
		}
		if (!ret)
			ret = copy_items(ctx, inode, leaf, run, nr);
		if (!ret && !stop)
			btrfs_item_key_to_cpu(leaf, &min, nritems - 1);
		btrfs_release_path(&path);
		if (ret || stop || !key_next(&min))
			return ret;
	}
}

/* btrfs_log_all_xattrs: every xattr item of the inode, changed or not. */
static int log_all_xattrs(struct log_ctx *ctx, const struct tlog_inode *inode)
{
	struct btrfs_key min = { inode->ino, BTRFS_XATTR_ITEM_KEY, 0 };
	struct btrfs_key max = { inode->ino, BTRFS_XATTR_ITEM_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	int ret = 0;

	btrfs_for_each_item(inode->root, &iter, &min, &max) {
		ret = copy_items(ctx, inode, iter.leaf, iter.slot, 1);
		if (ret)
			break;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	return ret;
}

/* The end of the extent in @leaf's @slot, sector-aligned for inline ones (btrfs_file_extent_end). */
static int extent_at(const struct log_ctx *ctx, const struct extent_buffer *leaf, int slot,
		     const struct btrfs_key *key, struct tlog_file_extent *ext)
{
	int ret = btrfs_read_file_extent(leaf, slot, key, ext);

	if (!ret && ext->type == BTRFS_FILE_EXTENT_INLINE)
		ext->end = round_up(ext->end, ctx->trans->fs->sectorsize);
	return ret;
}

/*
 * btrfs_log_holes (full sync, NO_HOLES): each gap between the inode's
 * extents, and the one up to i_size, as a hole item.
 */
static int log_holes(struct log_ctx *ctx, const struct tlog_inode *inode)
{
	struct btrfs_key min = { inode->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_key max = { inode->ino, BTRFS_EXTENT_DATA_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	u64 prev_end = 0;
	int ret = 0;

	if (!(ctx->trans->fs->incompat & BTRFS_FEATURE_INCOMPAT_NO_HOLES) || !i_size(inode))
		return 0;
	btrfs_for_each_item(inode->root, &iter, &min, &max) {
		struct tlog_file_extent ext;

		ret = extent_at(ctx, iter.leaf, iter.slot, &iter.key, &ext);
		if (!ret && prev_end < iter.key.offset)
			ret = log_hole(ctx, inode, prev_end, iter.key.offset - prev_end);
		if (ret)
			break;
		prev_end = ext.end;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	if (!ret && prev_end < i_size(inode))
		ret = log_hole(ctx, inode, prev_end,
			       round_up(i_size(inode) - prev_end, ctx->trans->fs->sectorsize));
	return ret;
}

/*
 * btrfs_log_prealloc_extents: the extents at and past i_size (a file
 * with the PREALLOC flag), replacing what the log had from there - or
 * from the end of a prealloc extent crossing i_size, which is logged
 * whole.
 */
static int log_prealloc_extents(struct log_ctx *ctx, const struct tlog_inode *inode)
{
	struct btrfs_key min = { inode->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_key max = { inode->ino, BTRFS_EXTENT_DATA_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	u64 truncate_offset = i_size(inode);
	bool dropped = false;
	int ret = 0;

	if (!(btrfs_inode_item_flags(&inode->item) & BTRFS_INODE_PREALLOC))
		return 0;
	btrfs_for_each_item(inode->root, &iter, &min, &max) {
		struct tlog_file_extent ext;

		if (iter.key.offset < i_size(inode)) {
			ret = extent_at(ctx, iter.leaf, iter.slot, &iter.key, &ext);
			if (ret)
				break;
			truncate_offset = ext.type == BTRFS_FILE_EXTENT_PREALLOC &&
					  ext.end > i_size(inode) ? ext.end : i_size(inode);
			continue;
		}
		if (!dropped) {
			ret = drop_log_extents(ctx, inode,
					       round_up(truncate_offset, ctx->trans->fs->sectorsize),
					       (u64)-1);
			dropped = true;
		}
		if (!ret)
			ret = copy_items(ctx, inode, iter.leaf, iter.slot, 1);
		if (ret)
			break;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	return ret;
}

/* ---- the fast path: extents changed since the last log ---- */

static int cmp_runs(const void *a, const void *b)
{
	const struct tlog_dirty_run *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Is [start, end) in one of the @nr sorted ranges @runs of kind @hole? */
static bool overlaps_modified(const struct tlog_dirty_run *runs, size_t nr, u64 start, u64 end,
			      int hole)
{
	for (size_t i = 0; i < nr && runs[i].start < end; i++)
		if ((hole < 0 || runs[i].byte == hole) && runs[i].end > start)
			return true;
	return false;
}

/*
 * log_one_extent for the extent item in @leaf's @slot: what the log had
 * in its range goes first when the inode was logged before in this
 * transaction (the deletion search the kernel skips otherwise).
 */
static int log_one_extent(struct log_ctx *ctx, const struct tlog_inode *inode,
			  const struct extent_buffer *leaf, int slot, const struct tlog_file_extent *ext)
{
	int ret = 0;

	if (ctx->logged_before)
		ret = drop_log_extents(ctx, inode, ext->start, ext->end);
	return ret ? ret : copy_items(ctx, inode, leaf, slot, 1);
}

/*
 * The hole extent maps of growing writes under NO_HOLES have no items:
 * the parts of @run no extent covers are logged as hole items.
 */
static int log_hole_run(struct log_ctx *ctx, const struct tlog_inode *inode,
			const struct tlog_dirty_run *run)
{
	struct btrfs_key min = { inode->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_key max = { inode->ino, BTRFS_EXTENT_DATA_KEY, run->end - 1 };
	struct btrfs_tree_iter iter;
	u64 pos = run->start;
	int ret = 0;

	btrfs_for_each_item(inode->root, &iter, &min, &max) {
		struct tlog_file_extent ext;

		ret = extent_at(ctx, iter.leaf, iter.slot, &iter.key, &ext);
		if (ret)
			break;
		if (ext.end <= pos)
			continue;
		if (iter.key.offset > pos) {
			if (ctx->logged_before)
				ret = drop_log_extents(ctx, inode, pos, iter.key.offset);
			if (!ret)
				ret = log_hole(ctx, inode, pos, iter.key.offset - pos);
			if (ret)
				break;
		}
		pos = ext.end;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	if (!ret && pos < run->end) {
		if (ctx->logged_before)
			ret = drop_log_extents(ctx, inode, pos, run->end);
		if (!ret)
			ret = log_hole(ctx, inode, pos, run->end - pos);
	}
	return ret;
}

/*
 * btrfs_log_changed_extents: each extent of this transaction in a range
 * written since the last log, prealloc extents past EOF aside (logged
 * after, by log_prealloc_extents).
 */
static int log_changed_extents(struct log_ctx *ctx, struct tlog_inode *inode)
{
	struct btrfs_key min = { inode->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_key max = { inode->ino, BTRFS_EXTENT_DATA_KEY, (u64)-1 };
	const bool no_holes = ctx->trans->fs->incompat & BTRFS_FEATURE_INCOMPAT_NO_HOLES;
	struct tlog_dirty_run *runs = inode->modified;
	size_t nr = inode->nr_modified;
	struct btrfs_tree_iter iter;
	int ret = 0;

	if (nr == 0)
		return 0;	/* nothing written since the last log (runs may be NULL) */
	qsort(runs, nr, sizeof(*runs), cmp_runs);
	btrfs_for_each_item(inode->root, &iter, &min, &max) {
		struct tlog_file_extent ext;

		ret = extent_at(ctx, iter.leaf, iter.slot, &iter.key, &ext);
		if (ret)
			break;
		if (ext.generation < ctx->trans->transid ||
		    !overlaps_modified(runs, nr, ext.start, ext.end, -1))
			continue;
		if (ext.type == BTRFS_FILE_EXTENT_PREALLOC && ext.start >= i_size(inode))
			continue;
		ret = log_one_extent(ctx, inode, iter.leaf, iter.slot, &ext);
		if (ret)
			break;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	/* hole runs may overlap (sorted by start): each part once */
	u64 done = 0;
	for (size_t i = 0; !ret && no_holes && i < nr; i++) {
		struct tlog_dirty_run run = runs[i];

		if (!run.byte)
			continue;
		if (run.start < done)
			run.start = done;
		if (run.start < run.end)
			ret = log_hole_run(ctx, inode, &run);
		if (run.end > done)
			done = run.end;
	}
	if (!ret)
		ret = log_prealloc_extents(ctx, inode);
	return ret;
}

/* ---- btrfs_log_inode ---- */

/*
 * The first logging steps of a file, by its runtime flags: which old log
 * items go, up to which item type its items are copied, whether extents
 * then take the fast path.  Returns the max key type to copy, or 0 to
 * copy none (the fast path alone).
 */
static int prepare_file(struct log_ctx *ctx, struct tlog_inode *inode, enum log_mode mode,
			bool *fast_search, u8 *max_type)
{
	*fast_search = false;
	*max_type = inode->full_sync && mode == LOG_INODE_ALL ? (u8)-1 : BTRFS_XATTR_ITEM_KEY;
	if (inode->full_sync) {
		if (mode == LOG_INODE_EXISTS)
			return ctx->logged_before ? drop_inode_items(ctx, inode, *max_type) : 0;
		inode->full_sync = false;
		inode->needs_full_log = false;
		if (!ctx->logged_before)
			return 0;
		ctx->mnt->stats.deletion_searches++;
		return btrfs_delete_objectid_items(ctx->trans, ctx->log, inode->ino);
	}
	if (inode->needs_full_log || mode == LOG_INODE_EXISTS) {
		inode->needs_full_log = false;
		*fast_search = mode == LOG_INODE_ALL;
		return ctx->logged_before ? drop_inode_items(ctx, inode, *max_type) : 0;
	}
	*fast_search = mode == LOG_INODE_ALL;
	*max_type = 0;
	return 0;
}

static int btrfs_log_inode(struct log_ctx *ctx, struct tlog_inode *inode, enum log_mode mode)
{
	const u32 imode = tlog_inode_mode(inode);
	bool fast_search = false, xattrs_logged = false;
	u8 max_type = BTRFS_XATTR_ITEM_KEY;
	int ret;

	if (S_ISLNK(imode))
		mode = LOG_INODE_ALL;	/* an empty symlink is invalid: its target always */
	if (S_ISDIR(imode) && mode == LOG_INODE_ALL)
		return force_commit(ctx, NOT_LOGGED_YET "a directory");
	if (!S_ISDIR(imode) && !S_ISREG(imode) && !S_ISLNK(imode))
		return force_commit(ctx, NOT_LOGGED_YET "a special file");
	if (!S_ISDIR(imode) && mode == LOG_INODE_EXISTS)
		return force_commit(ctx, NOT_LOGGED_YET "a file that only has to exist");
	ctx->logged_before = inode_logged(ctx, inode);
	if (S_ISDIR(imode)) {
		inode->needs_full_log = false;
		ret = ctx->logged_before ? drop_inode_items(ctx, inode, BTRFS_XATTR_ITEM_KEY) : 0;
	} else {
		ret = prepare_file(ctx, inode, mode, &fast_search, &max_type);
	}
	if (!ret && max_type) {
		ret = copy_inode_items(ctx, inode, max_type);
		if (!ret && mode == LOG_INODE_ALL && S_ISREG(imode) && !fast_search)
			ret = log_prealloc_extents(ctx, inode);
		if (!ret)
			ret = log_all_xattrs(ctx, inode);
		xattrs_logged = true;
		if (!ret && max_type >= BTRFS_EXTENT_DATA_KEY && !fast_search)
			ret = log_holes(ctx, inode);
	}
	if (!ret)
		ret = log_inode_item(ctx, inode, mode, 0);
	/* the fast path of an inode not logged yet in this transaction: its xattrs too */
	if (!ret && !xattrs_logged && !ctx->logged_before)
		ret = log_all_xattrs(ctx, inode);
	if (!ret && fast_search)
		ret = log_changed_extents(ctx, inode);
	if (ret)
		return ret;
	if (mode == LOG_INODE_ALL)
		inode->nr_modified = 0;
	inode->logged_trans = ctx->trans->transid;
	if (mode != LOG_INODE_EXISTS)
		inode->last_log_commit = inode->last_sub_trans;
	if (mode == LOG_INODE_ALL)
		inode->last_reflink_trans = 0;
	ctx->mnt->stats.inodes_logged++;
	return 0;
}

/* ---- the inode's parents ---- */

/*
 * The parent of directory @ino (its one INODE_REF), 0 when it has none
 * but an INODE_EXTREF.
 */
static int dir_parent(struct btrfs_root *root, u64 ino, u64 *parent)
{
	struct btrfs_key min = { ino, BTRFS_INODE_REF_KEY, 0 };
	struct btrfs_key max = { ino, BTRFS_INODE_REF_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	int ret;

	*parent = 0;
	btrfs_tree_iter_start(root, &iter, &min, &max);
	if (iter.ret == 0)
		*parent = iter.key.offset;
	ret = iter.ret < 0 ? iter.ret : 0;
	btrfs_tree_iter_end(&iter);
	return ret;
}

/*
 * A new inode's name in @dir may be the committed name of another inode
 * that lost it in this transaction (mv a b; create a): replay would take
 * the name from that inode and leave it with none.  The kernel logs that
 * other inode too (log_conflicting_inodes), not done here yet: a name
 * removed from @dir in this transaction commits instead.
 */
static int check_name_conflicts(struct log_ctx *ctx, const struct tlog_inode *inode, u64 dir)
{
	struct tlog_inode *parent;
	bool unlinked;
	int ret;

	if (inode->generation < ctx->trans->transid)
		return 0;
	ret = tlog_iget(ctx->mnt, inode->root, dir, &parent);
	if (ret)
		return ret;
	unlinked = parent->last_unlink_trans >= ctx->trans->transid;
	tlog_iput(ctx->mnt, parent);
	if (unlinked)
		return force_commit(ctx, NOT_LOGGED_YET "a new name where a name went (conflicting inodes)");
	return 0;
}

/*
 * log_new_ancestors: from directory @dir up to the subvolume's root, each
 * directory created in this transaction and not in the log yet is logged
 * as existing, so that replay can give it, and then the inode, a name.
 */
static int log_new_ancestors(struct log_ctx *ctx, struct btrfs_root *root, u64 dir)
{
	while (dir) {
		struct tlog_inode *inode;
		u64 parent = 0;
		int ret;

		ret = tlog_iget(ctx->mnt, root, dir, &inode);
		if (ret)
			return ret;
		if (inode->generation >= ctx->trans->transid && need_log_inode(ctx, inode))
			ret = btrfs_log_inode(ctx, inode, LOG_INODE_EXISTS);
		tlog_iput(ctx->mnt, inode);
		if (ret || dir == BTRFS_FIRST_FREE_OBJECTID)
			return ret;
		ret = dir_parent(root, dir, &parent);
		if (ret)
			return ret;
		if (!parent)
			return force_commit(ctx, "a new ancestor with an extended reference");
		/* a new directory's name can conflict as a new file's can (mv A B; mkdir A) */
		ret = tlog_iget(ctx->mnt, root, dir, &inode);
		if (!ret) {
			ret = check_name_conflicts(ctx, inode, parent);
			tlog_iput(ctx->mnt, inode);
		}
		if (ret)
			return ret;
		dir = parent;
	}
	return 0;
}

/*
 * log_all_new_ancestors: for each name of the new inode, its directory
 * and theirs.  Names in INODE_EXTREF items the kernel leaves to a commit.
 */
static int log_all_new_ancestors(struct log_ctx *ctx, struct tlog_inode *inode)
{
	struct btrfs_key min = { inode->ino, BTRFS_INODE_REF_KEY, 0 };
	struct btrfs_key max = { inode->ino, BTRFS_INODE_EXTREF_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	u64 *parents = NULL;
	size_t nr = 0;
	int ret = 0;

	btrfs_for_each_item(inode->root, &iter, &min, &max) {
		u64 *p;

		if (iter.key.type == BTRFS_INODE_EXTREF_KEY) {
			ret = force_commit(ctx, "a new inode with an extended reference");
			break;
		}
		p = realloc(parents, (nr + 1) * sizeof(*parents));
		if (!p) {
			ret = -ENOMEM;
			break;
		}
		parents = p;
		parents[nr++] = iter.key.offset;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	for (size_t i = 0; !ret && i < nr; i++) {
		ret = check_name_conflicts(ctx, inode, parents[i]);
		if (!ret)
			ret = log_new_ancestors(ctx, inode->root, parents[i]);
	}
	free(parents);
	return ret;
}

/* btrfs_log_inode_parent for the fsync of @inode. */
static int log_inode_parent(struct log_ctx *ctx, struct tlog_inode *inode)
{
	const struct btrfs_root_item *ri = &inode->root->root_item;
	int ret;

	if (btrfs_root_item_refs(ri) == 0)
		return force_commit(ctx, "the subvolume is being deleted");
	if (btrfs_root_item_generation(ri) == ctx->trans->transid)
		return force_commit(ctx, "the subvolume was created in this transaction");
	if (inode_in_log(ctx->mnt, inode))
		return LOG_NO_SYNC;
	if (tlog_trans_needs_full_commit(ctx->trans))
		return force_commit(ctx, tlog_trans_full_commit_reason(ctx->trans));
	ret = tlog_trans_log_tree(ctx->trans, inode->root, &ctx->log);
	if (ret == -EAGAIN)
		return force_commit(ctx, tlog_trans_full_commit_reason(ctx->trans));
	if (!ret)
		ret = btrfs_log_inode(ctx, inode, LOG_INODE_ALL);
	if (ret)
		return ret;
	/*
	 * An old file given a new hard link in this transaction: the kernel
	 * does more than log the inode with its names (kernel/530's
	 * 022-hardlinks-two-files and 035-link-into-dir-move-other-in replay
	 * differently otherwise); until that is modelled, commit.
	 */
	if (inode->last_link_trans >= ctx->trans->transid &&
	    inode->generation < ctx->trans->transid)
		return force_commit(ctx, NOT_LOGGED_YET "an old inode given a new hard link");
	/* a file with all its names committed needs nothing of its parents */
	if (S_ISREG(tlog_inode_mode(inode)) && inode->generation < ctx->trans->transid &&
	    inode->last_unlink_trans < ctx->trans->transid)
		return 0;
	if (inode->last_unlink_trans >= ctx->trans->transid)
		return force_commit(ctx, NOT_LOGGED_YET "the parents of an inode that lost a name");
	return log_all_new_ancestors(ctx, inode);
}

/* ---- btrfs_sync_file ---- */

static int note_full_commit(struct tlog_mount *mnt, const char *reason)
{
	struct tlog_mount_stats *st = &mnt->stats;
	char **r = realloc(st->full_commit_reasons, (st->full_commits + 1) * sizeof(*r));

	if (!r)
		return -ENOMEM;
	st->full_commit_reasons = r;
	r[st->full_commits] = strdup(reason ? reason : "unknown");
	if (!r[st->full_commits])
		return -ENOMEM;
	st->full_commits++;
	return 0;
}

static int sync_log(struct log_ctx *ctx)
{
	struct list_head *pos;
	u64 blocks = 0;
	int ret;

	for (pos = ctx->trans->fs->log_dirty_blocks.next; pos != &ctx->trans->fs->log_dirty_blocks;
	     pos = pos->next)
		blocks++;
	ret = tlog_trans_sync_log(ctx->trans);
	if (ret)
		return ret;
	ctx->mnt->log_transid++;
	ctx->mnt->stats.log_syncs++;
	ctx->mnt->stats.log_blocks_written += blocks;
	return 0;
}

int btrfs_sync_file(struct tlog_mount *mnt, struct tlog_inode *inode, bool datasync)
{
	struct log_ctx ctx = { .mnt = mnt };
	int ret;

	(void)datasync;		/* 6.18 logs an fdatasync as an fsync */
	ret = tlog_writeback_inode(mnt, inode);
	if (ret)
		return ret;
	if (skip_inode_logging(mnt, inode)) {
		inode->full_sync = false;
		return 0;
	}
	ctx.trans = mnt->trans;
	ret = log_inode_parent(&ctx, inode);
	if (ret == LOG_NO_SYNC)
		return 0;
	if (ret < 0) {
		/* the kernel's answer to a logging error: commit */
		tlog_error_clear();
		tlog_trans_set_needs_full_commit(ctx.trans, "logging failed");
		force_commit(&ctx, "logging failed");
	} else if (ret == 0) {
		ret = sync_log(&ctx);
		if (ret == 0)
			return 0;
		tlog_error_clear();
		force_commit(&ctx, tlog_trans_full_commit_reason(ctx.trans));
	} else {
		/* the log cannot be used any more in this transaction */
		tlog_trans_set_needs_full_commit(ctx.trans, ctx.reason);
	}
	ret = note_full_commit(mnt, ctx.reason);
	return ret ? ret : tlog_commit(mnt);
}

void btrfs_log_name_changed(struct tlog_mount *mnt, struct tlog_inode *dir,
			    struct tlog_inode *inode)
{
	u64 transid;

	if (!mnt->trans || mnt->log_recovering)
		return;
	transid = mnt->trans->transid;
	if (inode->logged_trans == transid || (dir && dir->logged_trans == transid))
		tlog_trans_set_needs_full_commit(mnt->trans, NOT_LOGGED_YET
						 "a name changed of an inode or directory logged in this transaction");
}
