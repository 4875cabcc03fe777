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
 * A directory is logged by its new index items and DIR_LOG_INDEX ranges
 * (log_directory_changes), the inodes of its new entries after it
 * (log_new_dir_dentries).  A new inode brings its new ancestors in as
 * "exists" entries (log_all_new_ancestors); one that gained or lost a
 * name, the directories it had names in at the last commit
 * (log_all_parents); a new name that was another inode's at the last
 * commit, that inode (log_conflicting_inodes).  Link, rename and unlink
 * keep the log of this transaction true (btrfs_log_new_name,
 * btrfs_log_unlink).  Full commits happen where the kernel's do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "dir-item.h"
#include "errctx.h"
#include "file-extent.h"
#include "file-item.h"
#include "misc.h"
#include "root-tree.h"
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

struct log_ctx {
	struct tlog_mount *mnt;
	struct tlog_trans *trans;
	struct btrfs_root *log;
	const char *reason;	/* of a full commit */
	bool logged_before;	/* the inode being logged was, in this transaction */
	/*
	 * a link or rename logging the new name: what it logs is not synced,
	 * so it must not make a later fsync of those inodes skip the sync
	 */
	bool logging_new_name;
	/* a directory logged in full copied an entry of a new name (not a subvolume) */
	bool log_new_dentries;
	/* conflicting inodes: queued by name checks, logged by the outermost btrfs_log_inode */
	struct btrfs_root *root;
	u64 fsync_ino;
	bool logging_conflicts;
	struct conflict {
		u64 ino, parent;
	} *conflicts;		/* a queue: [conflicts_head, nr_conflicts) waiting */
	size_t nr_conflicts, alloc_conflicts, conflicts_head;
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

/*
 * Whether the log may hold items of the inode being logged, which must go
 * before new ones come: only when it was logged before in this
 * transaction.  The kernel's optimisation of skipping those searches (and
 * the logged-i_size search) for an inode logged for the first time is
 * switched off by mnt->log_unoptimized, for bench/fsync to measure it.
 */
static bool may_be_in_log(const struct log_ctx *ctx)
{
	return ctx->logged_before || ctx->mnt->log_unoptimized;
}

/* A deletion search in the log; counted apart when the inode was not logged before. */
static void count_deletion_search(struct log_ctx *ctx)
{
	ctx->mnt->stats.deletion_searches++;
	ctx->mnt->stats.log_searches++;
	if (!ctx->logged_before)
		ctx->mnt->stats.deletion_searches_first_logging++;
}

/*
 * btrfs_inode_in_log: logged in this transaction, unchanged since, and
 * that logging synced (a new name is logged without a sync).
 */
static bool inode_in_log(const struct tlog_mount *mnt, const struct tlog_inode *inode)
{
	return mnt->trans && inode->logged_trans == mnt->trans->transid &&
	       inode->last_sub_trans <= inode->last_log_commit &&
	       inode->last_sub_trans <= (s64)inode->root->last_log_commit;
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
 * @logged_isize and generation 0 (replay then keeps what the subvolume
 * has) - unless the inode was logged before in this transaction, whose
 * logged size and attributes replay must then apply (6.18.y: a truncate
 * to 0, fsync, link, power cut kept the old size).  nbytes is 0: replay
 * computes it, and the kernel leaves it unset.
 */
static void fill_inode_item(const struct log_ctx *ctx, const struct tlog_inode *inode,
			    enum log_mode mode, u64 logged_isize, struct btrfs_inode_item *out)
{
	*out = inode->item;
	btrfs_set_inode_item_generation(out, inode->generation);
	if (mode == LOG_INODE_EXISTS) {
		/* logged before in this transaction: that logging's values stay in force */
		if (!ctx->logged_before)
			btrfs_set_inode_item_generation(out, 0);
		btrfs_set_inode_item_size(out, logged_isize);
	}
	btrfs_set_inode_item_transid(out, ctx->trans->transid);
	btrfs_set_inode_item_block_group(out, 0);
	btrfs_set_inode_item_nbytes(out, 0);
	if (ctx->mnt->log_broken & TLOG_BREAK_BAD_ITEM)
		btrfs_set_inode_item_mode(out, btrfs_inode_item_mode(out) & ~S_IFMT);
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
	ctx->mnt->stats.log_searches++;
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

	count_deletion_search(ctx);
	return btrfs_delete_items_range(ctx->trans, ctx->log, &min, &max, NULL);
}

/* The log's extents of the inode in [start, end) go (btrfs_drop_extents on the log). */
static int drop_log_extents(struct log_ctx *ctx, const struct tlog_inode *inode, u64 start,
			    u64 end)
{
	u64 found;

	count_deletion_search(ctx);
	return btrfs_drop_file_extents(ctx->trans, ctx->log, inode->ino, start, end, &found);
}

/* A file extent item made for the log (not copied from the subvolume's leaves). */
static int insert_log_extent(struct log_ctx *ctx, const struct tlog_inode *inode, u64 start,
			     const struct btrfs_file_extent_item *fi)
{
	struct btrfs_key key = { inode->ino, BTRFS_EXTENT_DATA_KEY, start };
	int ret;

	ctx->mnt->stats.log_searches++;
	ret = btrfs_insert_item(ctx->trans, ctx->log, &key, fi, sizeof(*fi));
	if (!ret)
		ctx->mnt->stats.items_copied++;
	return ret;
}

/* A hole item [start, start + len) in the log (btrfs_insert_hole_extent). */
static int log_hole(struct log_ctx *ctx, const struct tlog_inode *inode, u64 start, u64 len)
{
	struct btrfs_file_extent_item fi;

	memset(&fi, 0, sizeof(fi));
	btrfs_set_file_extent_item_num_bytes(&fi, len);
	btrfs_set_file_extent_item_ram_bytes(&fi, len);
	btrfs_set_file_extent_item_generation(&fi, ctx->trans->transid);
	btrfs_set_file_extent_item_type(&fi, BTRFS_FILE_EXTENT_REG);
	return insert_log_extent(ctx, inode, start, &fi);
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
 * Items [@slot, @slot + @nr) of @leaf into the log in one insertion (the
 * XFS-style contiguous copy), listed in the mount's item list, allocated
 * once and reused as the kernel reuses its scratch buffer.  With the
 * optimisations off: one item at a time, a new list for each.
 */
static int copy_run(struct log_ctx *ctx, const struct extent_buffer *leaf, int slot, int nr)
{
	struct tlog_mount *mnt = ctx->mnt;
	int ret = 0;

	if (!mnt->log_unoptimized) {
		mnt->stats.log_searches++;
		ret = btrfs_item_batch_reserve(&mnt->log_batch, nr);
		if (ret < 0)
			return ret;
		mnt->stats.copy_buffer_allocations += ret;
		return btrfs_copy_items_batch(ctx->trans, ctx->log, leaf, slot, nr, &mnt->log_batch);
	}
	for (int i = slot; !ret && i < slot + nr; i++) {
		mnt->stats.log_searches++;
		mnt->stats.copy_buffer_allocations++;
		ret = btrfs_copy_items(ctx->trans, ctx->log, leaf, i, 1);
	}
	return ret;
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
	ret = copy_run(ctx, leaf, slot, nr);
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

	if (may_be_in_log(ctx))
		ret = drop_log_extents(ctx, inode, ext->start, ext->end);
	return ret ? ret : copy_items(ctx, inode, leaf, slot, 1);
}

/*
 * log_one_extent of an extent map narrower than the item in @leaf's
 * @slot: the kernel logs what the map covers, [start, end), and the item
 * may cover more - data written into preallocated space merges with the
 * regular item of the same extent next to it (btrfs_mark_extent_written),
 * which was logged, if at all, by an earlier fsync.
 */
static int log_extent_part(struct log_ctx *ctx, const struct tlog_inode *inode,
			   const struct extent_buffer *leaf, int slot,
			   const struct tlog_file_extent *ext, u64 start, u64 end)
{
	struct btrfs_file_extent_item fi;
	struct tlog_file_extent part = *ext;
	int ret = 0;

	memcpy(&fi, btrfs_item_ptr(leaf, slot), sizeof(fi));
	part.offset += start - ext->start;
	part.num_bytes = end - start;
	part.start = start;
	part.end = end;
	btrfs_set_file_extent_item_offset(&fi, part.offset);
	btrfs_set_file_extent_item_num_bytes(&fi, part.num_bytes);
	if (may_be_in_log(ctx))
		ret = drop_log_extents(ctx, inode, start, end);
	if (!ret)
		ret = log_extent_csums(ctx, inode, &part);
	return ret ? ret : insert_log_extent(ctx, inode, start, &fi);
}

/*
 * The item's extent, as the maps the runs recorded cover it: whole when
 * one run covers it (the common case, copied as it is), else each part
 * a run covers.
 */
static int log_extent_maps(struct log_ctx *ctx, const struct tlog_inode *inode,
			   const struct extent_buffer *leaf, int slot,
			   const struct tlog_file_extent *ext)
{
	const struct tlog_dirty_run *runs = inode->modified;
	u64 pos = ext->start;
	int ret = 0;

	for (size_t i = 0; i < inode->nr_modified && runs[i].start < ext->end; i++)
		if (runs[i].start <= ext->start && runs[i].end >= ext->end)
			return log_one_extent(ctx, inode, leaf, slot, ext);
	if (ext->type == BTRFS_FILE_EXTENT_INLINE || ext->compression)
		return log_one_extent(ctx, inode, leaf, slot, ext);
	for (size_t i = 0; !ret && i < inode->nr_modified && runs[i].start < ext->end; i++) {
		u64 lo = runs[i].start > pos ? runs[i].start : pos;
		u64 hi = runs[i].end < ext->end ? runs[i].end : ext->end;

		if (hi <= lo)
			continue;
		ret = log_extent_part(ctx, inode, leaf, slot, ext, lo, hi);
		pos = hi;
	}
	return ret;
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
			if (may_be_in_log(ctx))
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
		if (may_be_in_log(ctx))
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

	/* nothing written since the last log: the prealloc extents past EOF still */
	if (nr == 0)
		return log_prealloc_extents(ctx, inode);
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
		ret = log_extent_maps(ctx, inode, iter.leaf, iter.slot, &ext);
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

/* ---- directories (log_directory_changes) ---- */

/*
 * insert_dir_log_key: the log is the authority on @dir's index numbers
 * [@first, @last]: replay deletes the entries there the log lacks.  A
 * range already starting at @first (an earlier fsync in this
 * transaction) is widened, never narrowed.
 */
static int insert_dir_log_key(struct log_ctx *ctx, u64 dir, u64 first, u64 last)
{
	struct btrfs_key key = { dir, BTRFS_DIR_LOG_INDEX_KEY, first };
	struct btrfs_dir_log_item item;
	struct btrfs_path path;
	int ret;

	ctx->mnt->stats.log_searches++;
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(ctx->trans, ctx->log, &key, &path, 0);
	if (ret == 0 && btrfs_item_size(path.nodes[0], path.slots[0]) == sizeof(item)) {
		struct btrfs_dir_log_item *cur = btrfs_item_ptr(path.nodes[0], path.slots[0]);

		if (btrfs_dir_log_item_end(cur) < last)
			btrfs_set_dir_log_item_end(cur, last);
	} else if (ret == 0) {
		ret = tlog_error(-EUCLEAN, "log: directory %llu: range item of %u bytes",
				 (unsigned long long)dir, btrfs_item_size(path.nodes[0], path.slots[0]));
	}
	btrfs_release_path(&path);
	if (ret <= 0)
		return ret;
	btrfs_set_dir_log_item_end(&item, last);
	ret = btrfs_insert_item(ctx->trans, ctx->log, &key, &item, sizeof(item));
	if (!ret)
		ctx->mnt->stats.items_copied++;
	return ret;
}

/* flush_dir_items_batch: @nr new index items of @leaf from @slot into the log. */
static int flush_dir_items(struct log_ctx *ctx, struct tlog_inode *dir,
			   const struct extent_buffer *leaf, int slot, int nr)
{
	struct btrfs_key last;
	int ret;

	if (!nr)
		return 0;
	ret = copy_run(ctx, leaf, slot, nr);
	if (ret)
		return ret;
	ctx->mnt->stats.items_copied += nr;
	btrfs_item_key_to_cpu(leaf, &last, slot + nr - 1);
	dir->last_dir_index_offset = last.offset;
	if (!dir->first_dir_index_to_log) {
		struct btrfs_key first;

		btrfs_item_key_to_cpu(leaf, &first, slot);
		dir->first_dir_index_to_log = first.offset;
	}
	return 0;
}

/*
 * process_dir_items_leaf: the index items of @dir in @leaf from @slot.
 * Entries of past transactions are in the subvolume already: skipped,
 * but a gap before one of them is a range of deleted entries, logged as
 * such.  New entries not logged yet are copied, contiguous runs in one
 * go.  Returns 1 when the directory's items end in this leaf.
 */
static int process_dir_leaf(struct log_ctx *ctx, struct tlog_inode *dir,
			    const struct extent_buffer *leaf, int slot, u64 *last_old)
{
	const int nritems = (int)btrfs_header_nritems_eb(leaf);
	int run = slot, nr = 0, ret = 0;

	for (; slot < nritems; slot++) {
		struct tlog_dir_entry de;
		struct btrfs_key key;

		btrfs_item_key_to_cpu(leaf, &key, slot);
		if (key.objectid != dir->ino || key.type != BTRFS_DIR_INDEX_KEY)
			break;
		ret = btrfs_dir_entry_at(leaf, slot, &key, 0, &de, NULL, 0);
		if (ret < 0)
			return ret;
		if (de.transid < ctx->trans->transid) {
			ret = flush_dir_items(ctx, dir, leaf, run, nr);
			nr = 0;
			if (!ret && key.offset > *last_old + 1)
				ret = insert_dir_log_key(ctx, dir->ino, *last_old + 1, key.offset - 1);
			if (ret)
				return ret;
			*last_old = key.offset;
			continue;
		}
		/*
		 * A new entry's inode is looked at even when an earlier
		 * logging copied the entry: the kernel logs the inodes of
		 * the entries still in its delayed items at each full
		 * logging of the directory (log_new_delayed_dentries), and
		 * those are the entries new in the transaction.
		 */
		if (de.location.type != BTRFS_ROOT_ITEM_KEY)
			ctx->log_new_dentries = true;
		if (key.offset <= dir->last_dir_index_offset)
			continue;
		if (nr && run + nr == slot) {
			nr++;
			continue;
		}
		ret = flush_dir_items(ctx, dir, leaf, run, nr);
		if (ret)
			return ret;
		run = slot;
		nr = 1;
	}
	ret = flush_dir_items(ctx, dir, leaf, run, nr);
	if (ret)
		return ret;
	return slot < nritems;
}

/* The highest index number of @dir below @before, or @dflt when none (btrfs_previous_item). */
static int prev_dir_index(struct btrfs_root *root, u64 dir, u64 before, u64 dflt, u64 *ret_index)
{
	struct btrfs_key key = { dir, BTRFS_DIR_INDEX_KEY, before - 1 };
	struct btrfs_path path;
	int ret;

	*ret_index = dflt;
	if (before == 0)
		return 0;
	btrfs_init_path(&path);
	ret = btrfs_search_backwards(root, &key, &path);
	if (ret == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		*ret_index = key.offset;
	}
	btrfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

/*
 * log_dir_items: from index @min_offset, the entries of @dir in leaves
 * changed in this transaction, and the range they cover: from the entry
 * before the first one (deletions in between) to where the changed
 * leaves end (*@last_offset; (u64)-1 when they reach the directory's
 * end).  The next call starts past *@last_offset.
 */
static int log_dir_items(struct log_ctx *ctx, struct tlog_inode *dir, u64 min_offset,
			 u64 *last_offset)
{
	struct btrfs_root *root = dir->root;
	struct btrfs_key min = { dir->ino, BTRFS_DIR_INDEX_KEY, min_offset };
	u64 last_old = min_offset - 1;
	struct btrfs_path path;
	int ret;

	*last_offset = (u64)-1;
	btrfs_init_path(&path);
	ret = btrfs_search_forward_since(root, &min, &path, ctx->trans->transid);
	btrfs_release_path(&path);
	if (ret < 0)
		return ret;
	if (ret > 0 || min.objectid != dir->ino || min.type != BTRFS_DIR_INDEX_KEY) {
		/* nothing changed from @min_offset on: the range runs past the last entry */
		ret = prev_dir_index(root, dir->ino, (u64)-1, last_old, &last_old);
		if (ret == 0 && last_old == (u64)-1)
			return 0;
		goto done;
	}
	ret = prev_dir_index(root, dir->ino, min.offset, last_old, &last_old);
	if (ret)
		return ret;
	ret = btrfs_search_forward(root, &min, &path);
	while (ret == 0) {
		struct btrfs_key next;

		ret = process_dir_leaf(ctx, dir, path.nodes[0], path.slots[0], &last_old);
		if (ret)
			break;
		ret = btrfs_next_leaf(root, &path);
		if (ret)
			break;
		btrfs_item_key_to_cpu(path.nodes[0], &next, 0);
		if (next.objectid != dir->ino || next.type != BTRFS_DIR_INDEX_KEY)
			break;
		if (btrfs_header_generation(eb_header(path.nodes[0])) != ctx->trans->transid) {
			/* an unchanged leaf: its first entry bounds the deletions logged */
			*last_offset = next.offset - 1;
			break;
		}
	}
	btrfs_release_path(&path);
done:
	if (ret < 0)
		return ret;
	if (last_old < *last_offset)
		return insert_dir_log_key(ctx, dir->ino, last_old + 1, *last_offset);
	return 0;
}

/*
 * log_directory_changes: the new entries of @dir and the ranges that
 * make replay delete the removed ones, leaf run by leaf run.  An entry
 * logged by an earlier fsync in this transaction is not copied again.
 */
static int log_directory_changes(struct log_ctx *ctx, struct tlog_inode *dir)
{
	u64 min = BTRFS_DIR_START_INDEX, max;
	int ret;

	if (!ctx->logged_before)
		dir->last_dir_index_offset = BTRFS_DIR_START_INDEX - 1;
	for (;;) {
		ret = log_dir_items(ctx, dir, min, &max);
		if (ret || max == (u64)-1)
			return ret;
		min = max + 1;
	}
}

/*
 * get_inode_size_to_log: the i_size an "exists" entry gives the inode,
 * so that logging that it exists neither loses logged data nor grows it:
 * what the log has when it was logged before in this transaction, what
 * the last commit has for an older inode, 0 for a new one; never above
 * the current size (a shrinking truncate before a new name).
 */
static int size_to_log(struct log_ctx *ctx, const struct tlog_inode *inode, u64 *size)
{
	struct btrfs_inode_item item;
	int ret = -ENOENT;

	*size = 0;
	if (may_be_in_log(ctx)) {
		ctx->mnt->stats.log_searches++;
		ret = btrfs_lookup_inode(ctx->log, inode->ino, &item);
	}
	if (ret == -ENOENT && !ctx->logged_before && inode->generation < ctx->trans->transid) {
		struct btrfs_root committed;

		ret = btrfs_read_commit_root(ctx->trans->fs, inode->root->root_key.objectid,
					     &committed);
		if (!ret)
			ret = btrfs_lookup_inode(&committed, inode->ino, &item);
	}
	if (ret == -ENOENT) {
		tlog_error_clear();	/* no item: an inode that exists only now */
		return 0;
	}
	if (ret)
		return ret;
	*size = btrfs_inode_item_size(&item);
	if (*size > i_size(inode))
		*size = i_size(inode);
	return 0;
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
			return may_be_in_log(ctx) ? drop_inode_items(ctx, inode, *max_type) : 0;
		inode->full_sync = false;
		inode->needs_full_log = false;
		/*
		 * The log's inode item comes from memory (log_inode_item), so
		 * the kernel no longer commits the delayed inode into the
		 * subvolume first; without the optimisations, it is.
		 */
		if (ctx->mnt->log_unoptimized && inode->item_dirty) {
			int ret = tlog_write_inode_item(ctx->mnt, inode);

			if (ret)
				return ret;
			ctx->mnt->stats.inode_items_flushed_for_log++;
		}
		if (!may_be_in_log(ctx))
			return 0;
		count_deletion_search(ctx);
		return btrfs_delete_objectid_items(ctx->trans, ctx->log, inode->ino);
	}
	if (inode->needs_full_log || mode == LOG_INODE_EXISTS) {
		inode->needs_full_log = false;
		*fast_search = mode == LOG_INODE_ALL;
		return may_be_in_log(ctx) ? drop_inode_items(ctx, inode, *max_type) : 0;
	}
	*fast_search = mode == LOG_INODE_ALL;
	*max_type = 0;
	return 0;
}

static int check_ref_name_overrides(struct log_ctx *ctx, const struct tlog_inode *inode);
static int log_conflicting_inodes(struct log_ctx *ctx);
static int log_new_dir_dentries(struct log_ctx *ctx, struct tlog_inode *start);

static int btrfs_log_inode(struct log_ctx *ctx, struct tlog_inode *inode, enum log_mode mode)
{
	const u32 imode = tlog_inode_mode(inode);
	const bool full_dir_logging = S_ISDIR(imode) && mode == LOG_INODE_ALL;
	bool fast_search = false, xattrs_logged = false;
	u8 max_type = BTRFS_XATTR_ITEM_KEY;
	u64 logged_isize = 0;
	int ret;

	if (S_ISLNK(imode))
		mode = LOG_INODE_ALL;	/* an empty symlink is invalid: its target always */
	ctx->logged_before = inode_logged(ctx, inode);
	/*
	 * An entry moved from this directory to one the log does not
	 * know: logging the directory alone would lose it at replay.
	 */
	if (full_dir_logging && inode->last_unlink_trans >= ctx->trans->transid)
		return force_commit(ctx, "a directory an entry was moved out of, or a subvolume removed from");
	ret = check_ref_name_overrides(ctx, inode);
	if (ret)
		return ret;
	if (S_ISDIR(imode)) {
		inode->needs_full_log = false;
		ret = may_be_in_log(ctx) ? drop_inode_items(ctx, inode, BTRFS_XATTR_ITEM_KEY) : 0;
	} else {
		if (mode == LOG_INODE_EXISTS)
			ret = size_to_log(ctx, inode, &logged_isize);
		if (!ret)
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
		ret = log_inode_item(ctx, inode, mode, logged_isize);
	/* the fast path of an inode not logged yet in this transaction: its xattrs too */
	if (!ret && !xattrs_logged && !ctx->logged_before)
		ret = log_all_xattrs(ctx, inode);
	if (!ret && fast_search)
		ret = log_changed_extents(ctx, inode);
	if (!ret && full_dir_logging)
		ret = log_directory_changes(ctx, inode);
	if (ret)
		return ret;
	if (mode == LOG_INODE_ALL)
		inode->nr_modified = 0;
	inode->logged_trans = ctx->trans->transid;
	if (mode != LOG_INODE_EXISTS && !ctx->logging_new_name)
		inode->last_log_commit = inode->last_sub_trans;
	if (mode == LOG_INODE_ALL)
		inode->last_reflink_trans = 0;
	ctx->mnt->stats.inodes_logged++;
	return log_conflicting_inodes(ctx);
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
 * Conflicting inodes (btrfs_check_ref_name_override, add_conflicting_inode,
 * log_conflicting_inodes).  A name of a new inode may have belonged, at
 * the last commit, to another inode that has since lost it (mv a b;
 * touch a; fsync a): replay of the new name would unlink that other inode
 * and lose it.  So the other inode is logged too, as existing, with the
 * names it has now; or, when it is gone, its old directory in full.
 */
#define MAX_CONFLICT_INODES	10

/*
 * The inode that name @name in @dir belonged to at the last commit, when
 * another than @ino: *@other, 0 if none.  A subvolume there: force commit.
 */
static int name_owner_at_commit(struct log_ctx *ctx, struct btrfs_root *committed, u64 dir,
				const char *name, u16 len, u64 ino, u64 *other)
{
	struct tlog_dir_entry de;
	int ret;

	*other = 0;
	ret = btrfs_lookup_dir_entry(committed, dir, name, len, &de);
	if (ret == -ENOENT) {
		tlog_error_clear();
		return 0;
	}
	if (ret)
		return ret;
	if (de.location.type != BTRFS_INODE_ITEM_KEY)
		return force_commit(ctx, "a new name that was a subvolume's at the last commit");
	if (de.location.objectid != ino)
		*other = de.location.objectid;
	return 0;
}

static int add_conflicting_inode(struct log_ctx *ctx, struct btrfs_root *committed, u64 ino,
				 u64 parent)
{
	struct tlog_inode *other;
	struct conflict *c;
	int ret;

	if (ino == ctx->fsync_ino)
		return 0;
	/*
	 * Counted over the whole fsync, never down: two inodes that swapped
	 * names (an exchange) keep naming each other while their full sync
	 * or COPY_EVERYTHING stays set, until this says commit.
	 */
	if (ctx->nr_conflicts >= MAX_CONFLICT_INODES)
		return force_commit(ctx, "too many conflicting inodes");
	ret = tlog_iget(ctx->mnt, ctx->root, ino, &other);
	if (ret == -ENOENT) {
		struct btrfs_inode_item item;

		/* gone since the commit: only a directory needs its parent logged */
		tlog_error_clear();
		ret = btrfs_lookup_inode(committed, ino, &item);
		if (ret)
			return ret;
		if (!S_ISDIR(btrfs_inode_item_mode(&item)))
			return 0;
	} else if (ret) {
		return ret;
	} else {
		bool need = need_log_inode(ctx, other);

		tlog_iput(ctx->mnt, other);
		if (!need)
			return 0;
	}
	if (array_reserve(ctx->conflicts, ctx->alloc_conflicts, ctx->nr_conflicts + 1))
		return -ENOMEM;
	c = &ctx->conflicts[ctx->nr_conflicts++];
	c->ino = ino;
	c->parent = parent;
	return 0;
}

/*
 * The names of @inode - new in this transaction, renamed or linked in it,
 * or itself logged as a conflict - against the names of the last commit:
 * each other inode a name belonged to is queued for log_conflicting_inodes.
 */
static int check_ref_name_overrides(struct log_ctx *ctx, const struct tlog_inode *inode)
{
	struct tlog_ref_name *names;
	struct btrfs_root committed;
	size_t nr;
	int ret;

	/*
	 * The kernel checks every name it copies from the leaves changed in
	 * this transaction, whatever the inode's age ("btrfs: always detect
	 * conflicting inodes when logging inode refs", in 6.18 and stable
	 * from 6.1): a directory renamed within its parent - an exchange,
	 * which leaves its last_unlink_trans alone - as much as a new inode
	 * or a file given a name (seed 20261207 r-053).  An inode not
	 * changed in this transaction has the names it had at the last
	 * commit, which can be nobody else's then.
	 */
	if (inode->last_trans < ctx->trans->transid)
		return 0;
	ret = btrfs_read_commit_root(ctx->trans->fs, inode->root->root_key.objectid, &committed);
	if (ret == -ENOENT) {
		tlog_error_clear();
		return 0;
	}
	if (ret)
		return ret;
	ret = btrfs_inode_names(inode->root, inode->ino, &names, &nr);
	for (size_t i = 0; !ret && i < nr; i++) {
		u64 other;

		ret = name_owner_at_commit(ctx, &committed, names[i].parent, names[i].name,
					   names[i].len, inode->ino, &other);
		if (!ret && other)
			ret = add_conflicting_inode(ctx, &committed, other, names[i].parent);
	}
	free(names);
	return ret;
}

/*
 * A conflicting inode that still exists, logged as existing.  Not a
 * directory moved to another parent in this transaction (its
 * last_unlink_trans): the 6.18 kernel commits then, seen on its logs
 * (log-write.md, "Full commits"), while a directory renamed within its
 * parent, or a file, is logged.
 */
static int log_conflicting_inode(struct log_ctx *ctx, struct tlog_inode *inode)
{
	if (S_ISDIR(tlog_inode_mode(inode)) && inode->last_unlink_trans >= ctx->trans->transid)
		return force_commit(ctx, "a conflicting directory was moved in this transaction");
	return btrfs_log_inode(ctx, inode, LOG_INODE_EXISTS);
}

/*
 * A directory logged in full for another inode's sake (an old parent of
 * it, or the old directory of a conflicting inode that is gone).  As any
 * full logging of a directory does in the kernel (log_new_delayed_dentries
 * inside btrfs_log_inode), the inodes of its new entries are logged too:
 * a symlink created after an earlier fsync of the directory would
 * otherwise lose its only name at replay (seed 20261211 r-048).  The
 * caller's own log_new_dentries is kept as it was.
 */
static int log_dir_in_full(struct log_ctx *ctx, struct tlog_inode *dir)
{
	const bool log_new_dentries = ctx->log_new_dentries;
	int ret;

	ctx->log_new_dentries = false;
	ret = btrfs_log_inode(ctx, dir, LOG_INODE_ALL);
	if (!ret && ctx->log_new_dentries)
		ret = log_new_dir_dentries(ctx, dir);
	ctx->log_new_dentries = log_new_dentries;
	return ret;
}

/*
 * log_conflicting_inodes, by the outermost btrfs_log_inode only: each
 * queued inode as existing (its own names may queue more), or the old
 * directory of one that is gone, in full.
 */
static int log_conflicting_inodes(struct log_ctx *ctx)
{
	int ret = 0;

	if (ctx->logging_conflicts)
		return 0;
	ctx->logging_conflicts = true;
	while (!ret && ctx->conflicts_head < ctx->nr_conflicts) {
		struct conflict c = ctx->conflicts[ctx->conflicts_head++];
		struct tlog_inode *inode;

		ret = tlog_iget(ctx->mnt, ctx->root, c.ino, &inode);
		if (ret == -ENOENT) {
			tlog_error_clear();
			ret = tlog_iget(ctx->mnt, ctx->root, c.parent, &inode);
			if (ret == -ENOENT) {
				tlog_error_clear();
				ret = force_commit(ctx, "the directory of a conflicting inode was removed");
			}
			if (!ret) {
				ret = log_dir_in_full(ctx, inode);
				tlog_iput(ctx->mnt, inode);
			}
			continue;
		}
		if (ret)
			break;
		if (need_log_inode(ctx, inode))
			ret = log_conflicting_inode(ctx, inode);
		tlog_iput(ctx->mnt, inode);
	}
	ctx->logging_conflicts = false;
	ctx->conflicts_head = ctx->nr_conflicts;
	return ret;
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
	for (size_t i = 0; !ret && i < nr; i++)
		ret = log_new_ancestors(ctx, inode->root, parents[i]);
	free(parents);
	return ret;
}

/* One directory to visit in log_new_dir_dentries. */
struct dir_list {
	u64 *v;
	size_t nr, alloc, head;
};

static int dir_list_push(struct dir_list *l, u64 ino)
{
	if (array_reserve(l->v, l->alloc, l->nr + 1))
		return -ENOMEM;
	l->v[l->nr++] = ino;
	return 0;
}

/*
 * The next entry of directory @dir in the log with index >= *@next whose
 * inode a log replay needs with it: a name new in this transaction, of an
 * inode (not a subvolume).  0 with *@ino and *@is_dir, 1 when none.
 */
static int next_new_logged_dentry(struct log_ctx *ctx, u64 dir, u64 *next, u64 *ino,
				  bool *is_dir)
{
	struct btrfs_key min = { dir, BTRFS_DIR_INDEX_KEY, *next };
	struct btrfs_key max = { dir, BTRFS_DIR_INDEX_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	int ret = 1;

	btrfs_for_each_item(ctx->log, &iter, &min, &max) {
		struct tlog_dir_entry de;

		ret = btrfs_dir_entry_at(iter.leaf, iter.slot, &iter.key, 0, &de, NULL, 0);
		if (ret < 0)
			break;
		ret = 1;
		*next = iter.key.offset + 1;
		if (de.transid < ctx->trans->transid || de.location.type == BTRFS_ROOT_ITEM_KEY)
			continue;
		*ino = de.location.objectid;
		*is_dir = de.type == BTRFS_FT_DIR;
		ret = 0;
		break;
	}
	if (ret > 0 && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	return ret;
}

/*
 * log_new_dir_dentries: the inodes of the new entries logged for @start,
 * so that replay finds each with the link count its names give it:
 * files as existing, directories in full, and in turn the new entries of
 * those, breadth first.  Each directory is looked at from its
 * first_dir_index_to_log on: a later fsync does not log again the inodes
 * of entries an earlier one looked at, even if they changed since (the
 * kernel's delayed items, logged once, behave the same).  So this is done
 * when logging a new name too (6.18.y: skipping it then lost the inodes
 * of entries a later directory fsync no longer looks at).
 */
static int log_new_dir_dentries(struct log_ctx *ctx, struct tlog_inode *start)
{
	struct dir_list dirs = { 0 };
	struct tlog_inode *dir = start;
	int ret = 0;

	for (;;) {
		u64 next = dir->first_dir_index_to_log, ino;
		bool is_dir;

		while (!ret) {
			struct tlog_inode *inode;

			ret = next_new_logged_dentry(ctx, dir->ino, &next, &ino, &is_dir);
			if (ret) {
				ret = ret < 0 ? ret : 0;
				break;
			}
			ret = tlog_iget(ctx->mnt, start->root, ino, &inode);
			if (ret)
				break;
			if (need_log_inode(ctx, inode)) {
				ctx->log_new_dentries = false;
				ret = btrfs_log_inode(ctx, inode,
						      is_dir ? LOG_INODE_ALL : LOG_INODE_EXISTS);
				if (!ret && ctx->log_new_dentries)
					ret = dir_list_push(&dirs, ino);
			}
			tlog_iput(ctx->mnt, inode);
		}
		/* the entries looked at are not looked at again (first_dir_index_to_log) */
		if (!ret)
			dir->first_dir_index_to_log = next;
		if (dir != start)
			tlog_iput(ctx->mnt, dir);
		if (ret || dirs.head == dirs.nr)
			break;
		ret = tlog_iget(ctx->mnt, start->root, dirs.v[dirs.head++], &dir);
		if (ret)
			break;
	}
	free(dirs.v);
	return ret;
}

/*
 * btrfs_log_all_parents: an inode that lost or gained a name in this
 * transaction has each directory it had names in at the last commit
 * logged in full, so that replay drops the names it no longer has.  A
 * parent removed since commits (replay could not tell where the inode
 * went).
 */
static int log_all_parents(struct log_ctx *ctx, struct tlog_inode *inode)
{
	struct tlog_ref_name *names;
	struct btrfs_root committed;
	size_t nr;
	int ret;

	ret = btrfs_read_commit_root(ctx->trans->fs, inode->root->root_key.objectid, &committed);
	if (ret == -ENOENT) {
		tlog_error_clear();
		return 0;
	}
	if (!ret)
		ret = btrfs_inode_names(&committed, inode->ino, &names, &nr);
	if (ret)
		return ret;
	for (size_t i = 0; !ret && i < nr; i++) {
		struct tlog_inode *dir;

		ret = tlog_iget(ctx->mnt, inode->root, names[i].parent, &dir);
		if (ret == -ENOENT) {
			tlog_error_clear();
			ret = force_commit(ctx, "an old parent directory of the inode was removed");
			break;
		}
		if (ret)
			break;
		if (need_log_inode(ctx, dir))
			ret = log_dir_in_full(ctx, dir);
		tlog_iput(ctx->mnt, dir);
	}
	free(names);
	return ret;
}

/*
 * btrfs_log_inode_parent: @inode (LOG_INODE_ALL for an fsync,
 * LOG_INODE_EXISTS for a new name) and what replay needs of its parents.
 */
static int log_inode_parent(struct log_ctx *ctx, struct tlog_inode *inode, enum log_mode mode)
{
	const struct btrfs_root_item *ri = &inode->root->root_item;
	bool log_dentries;
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
	ctx->log_new_dentries = false;
	if (!ret)
		ret = btrfs_log_inode(ctx, inode, mode);
	if (ret)
		return ret;
	/* a file with all its names committed needs nothing of its parents */
	if (S_ISREG(tlog_inode_mode(inode)) && inode->generation < ctx->trans->transid &&
	    inode->last_unlink_trans < ctx->trans->transid)
		return 0;
	log_dentries = ctx->log_new_dentries && !(ctx->mnt->log_broken & TLOG_BREAK_NEW_DENTRIES);
	if (inode->last_unlink_trans >= ctx->trans->transid &&
	    !(ctx->mnt->log_broken & TLOG_BREAK_PARENTS))
		ret = log_all_parents(ctx, inode);
	if (!ret)
		ret = log_all_new_ancestors(ctx, inode);
	if (!ret && log_dentries)
		ret = log_new_dir_dentries(ctx, inode);
	return ret;
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
	const struct tlog_fs *fs = ctx->trans->fs;
	const u64 written = fs->log_blocks_written, verified = fs->log_blocks_verified;
	int ret = tlog_trans_sync_log(ctx->trans, ctx->log);

	if (ret)
		return ret;
	ctx->root->last_log_commit = ctx->root->log_transid++;
	ctx->mnt->stats.log_syncs++;
	ctx->mnt->stats.log_blocks_written += fs->log_blocks_written - written;
	ctx->mnt->stats.log_blocks_verified += fs->log_blocks_verified - verified;
	return 0;
}

/* btrfs_init_log_ctx: a logging of @inode (an fsync, or a new name) in the running transaction. */
static struct log_ctx init_log_ctx(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	return (struct log_ctx){
		.mnt = mnt,
		.trans = mnt->trans,
		.root = inode->root,
		.fsync_ino = inode->ino,
	};
}

int btrfs_sync_file(struct tlog_mount *mnt, struct tlog_inode *inode, bool datasync)
{
	struct log_ctx ctx;
	int ret;

	(void)datasync;		/* 6.18 logs an fdatasync as an fsync */
	ret = tlog_writeback_inode(mnt, inode);
	if (ret)
		return ret;
	if (skip_inode_logging(mnt, inode)) {
		inode->full_sync = false;
		return 0;
	}
	ctx = init_log_ctx(mnt, inode);
	ret = log_inode_parent(&ctx, inode, LOG_INODE_ALL);
	free(ctx.conflicts);
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

/* ---- names changing after logging (btrfs_log_new_name, btrfs_del_*_in_log) ---- */

/*
 * del_logged_dentry: @dir's index item @index in the log, when it is
 * the name @name, deleted.  1 when the log does not have it.
 */
static int del_logged_dentry(struct tlog_trans *trans, struct btrfs_root *log, u64 dir,
			     const char *name, u16 len, u64 index)
{
	struct btrfs_key key = { dir, BTRFS_DIR_INDEX_KEY, index };
	struct tlog_dir_entry de;
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, log, &key, &path, -1);
	if (ret == 0) {
		ret = btrfs_dir_entry_at(path.nodes[0], path.slots[0], &key, 0, &de, NULL, 0);
		if (ret >= 0 && (de.name_len != len || memcmp(de.name, name, len)))
			ret = 1;
		else if (ret >= 0)
			ret = btrfs_del_items(trans, log, &path, path.slots[0], 1);
	}
	btrfs_release_path(&path);
	return ret;
}

/* The log of @root in the running transaction, when one of @a, @b was logged in it. */
static struct btrfs_root *log_of_logged(struct tlog_mount *mnt, const struct tlog_inode *a,
					const struct tlog_inode *b)
{
	u64 transid;

	if (!mnt->trans || mnt->log_recovering)
		return NULL;
	transid = mnt->trans->transid;
	if (!(a && a->logged_trans == transid) && !(b && b->logged_trans == transid))
		return NULL;
	return tlog_trans_find_log(mnt->trans, (a ? a : b)->root->root_key.objectid);
}

static void log_update_failed(struct tlog_mount *mnt, const char *reason)
{
	tlog_error_clear();
	tlog_trans_set_needs_full_commit(mnt->trans, reason);
}

void btrfs_log_unlink(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *inode,
		      const char *name, u16 len, u64 index)
{
	struct btrfs_root *log = log_of_logged(mnt, dir, inode);
	u64 transid, idx;
	int ret = 0;

	if (!log)
		return;
	transid = mnt->trans->transid;
	if (inode->logged_trans == transid) {
		ret = btrfs_delete_inode_ref(mnt->trans, log, inode->ino, dir->ino, name, len, &idx);
		if (ret == -ENOENT) {
			tlog_error_clear();
			ret = 0;
		}
	}
	if (!ret && dir->logged_trans == transid)
		ret = del_logged_dentry(mnt->trans, log, dir->ino, name, len, index);
	if (ret < 0)
		log_update_failed(mnt, "updating the log for an unlink failed");
}

void btrfs_log_new_name(struct tlog_mount *mnt, struct tlog_inode *inode,
			struct tlog_inode *old_dir, const char *old_name, u16 old_len,
			u64 old_index)
{
	struct log_ctx ctx;
	struct btrfs_root *log;
	int ret = 0;

	/* its next logging copies all its items, whether or not the log has it now */
	inode->needs_full_log = true;
	log = log_of_logged(mnt, inode, old_dir);
	if (!log)
		return;
	ctx = init_log_ctx(mnt, inode);
	ctx.log = log;
	ctx.logging_new_name = true;
	/* the old name must not come back with the new one at replay */
	if (old_dir && old_dir->logged_trans == ctx.trans->transid) {
		ret = del_logged_dentry(ctx.trans, ctx.log, old_dir->ino, old_name, old_len, old_index);
		if (ret > 0)
			ret = insert_dir_log_key(&ctx, old_dir->ino, old_index, old_index);
	}
	if (!ret)
		ret = log_inode_parent(&ctx, inode, LOG_INODE_EXISTS);
	free(ctx.conflicts);
	if (ret < 0)
		log_update_failed(mnt, "logging a new name failed");
	else if (ret == LOG_FORCE_COMMIT)
		log_update_failed(mnt, ctx.reason ? ctx.reason : "logging a new name failed");
}
