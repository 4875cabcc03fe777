// SPDX-License-Identifier: GPL-2.0-only
/*
 * FIEMAP with btrfs's answers (the kernel's extent_fiemap;
 * Documentation/design/fiemap-seek.md).
 *
 * Items are reported whole, in key order, from the one containing the
 * sector-aligned start of the range; consecutive reported extents merge
 * when logically and physically contiguous with equal flags; LAST goes on
 * the extent reaching the end of the inode's last non-hole item; SHARED is
 * decided per data extent from its back references and, for subvolumes
 * that have been snapshotted, from the tree blocks above the item.
 *
 * The sharing check dominates the kernel's cost.  Here both trees are
 * walked with cursors that move forward with the file, so the extent tree
 * lookups of a whole-file map touch each extent tree leaf about once.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "errctx.h"
#include "file.h"
#include "misc.h"
#include "root-tree.h"

/* s_maxbytes of btrfs: MAX_LFS_FILESIZE */
#define TLOG_MAX_FILE_SIZE ((u64)LLONG_MAX)

struct fiemap_ctx {
	struct tlog_file *file;
	struct btrfs_root *extent_root;
	struct btrfs_path extent_path;	/* cursor into the extent tree */
	bool check_shared;
	/* the last data extent checked, and its answer */
	u64 last_bytenr;
	bool last_shared;
	/* tree blocks on the item's path already checked, per level */
	u64 block_checked[BTRFS_MAX_LEVEL];
	bool block_shared[BTRFS_MAX_LEVEL];
};

/* Count the references of a data extent; *@other when one names another inode. */
struct ref_count {
	u64 refs;
	bool other;
};

static void count_data_ref(struct fiemap_ctx *ctx, const struct tlog_extent_ref *ref,
			   struct ref_count *rc)
{
	rc->refs++;
	if (ref->type == BTRFS_EXTENT_DATA_REF_KEY &&
	    (ref->objectid != ctx->file->ino ||
	     ref->root != ctx->file->root->root_key.objectid))
		rc->other = true;
}

static int count_inline_refs(struct fiemap_ctx *ctx, const struct tlog_extent_item *ei,
			     struct ref_count *rc)
{
	struct tlog_extent_ref ref;
	u32 cur;
	int ret;

	/* most extents have one reference, which the decoder kept */
	if (ei->nr_inline == 1) {
		if (btrfs_is_data_ref(ei->first.type))
			count_data_ref(ctx, &ei->first, rc);
		return 0;
	}
	btrfs_for_each_inline_ref(ei, &cur, &ref, ret)
		if (btrfs_is_data_ref(ref.type))
			count_data_ref(ctx, &ref, rc);
	return ret < 0 ? ret : 0;
}

/* References of the data extent at @bytenr, inline and keyed. */
static int data_extent_refs(struct fiemap_ctx *ctx, u64 bytenr, u64 len, struct ref_count *rc)
{
	struct btrfs_key key = { bytenr, BTRFS_EXTENT_ITEM_KEY, len };
	struct btrfs_path *path = &ctx->extent_path;
	struct tlog_extent_item ei;
	int ret;

	memset(rc, 0, sizeof(*rc));
	ret = btrfs_search_slot_near(ctx->extent_root, &key, path);
	if (ret)
		return ret < 0 ? ret : tlog_error(-EUCLEAN, "data extent %llu has no extent item",
						  (unsigned long long)bytenr);
	ret = btrfs_decode_extent_item(ctx->file->fs, path->nodes[0], path->slots[0], &key, &ei);
	if (!ret)
		ret = count_inline_refs(ctx, &ei, rc);
	if (ret)
		return ret;	/* the finding names the extent item */
	/*
	 * The item's refs count every reference, inline or keyed: when the
	 * inline ones hold them all (the decoder summed them), no keyed one
	 * follows, and the walk need not step to the next item (and maybe
	 * leaf) to see that.
	 */
	if (ei.inline_refs >= ei.refs)
		return 0;
	/* keyed refs follow the extent item */
	for (;;) {
		struct tlog_extent_ref ref;

		ret = btrfs_next_item(ctx->extent_root, path);
		if (ret)
			break;
		btrfs_item_key_to_cpu(path->nodes[0], &key, path->slots[0]);
		if (key.objectid != bytenr)
			break;
		if (!btrfs_is_data_ref(key.type))
			continue;
		ret = btrfs_decode_keyed_ref(path->nodes[0], path->slots[0], &key, &ref);
		if (ret)
			break;
		count_data_ref(ctx, &ref, rc);
	}
	return ret < 0 ? ret : 0;
}

/* Whether the tree block @bytenr at @level is referenced more than once. */
static int tree_block_shared(struct fiemap_ctx *ctx, u64 bytenr, int level, bool *shared)
{
	struct btrfs_key key = btrfs_tree_block_extent_key(ctx->file->fs, bytenr, level);
	struct tlog_extent_item ei;
	struct btrfs_path path;
	int ret;

	*shared = false;
	btrfs_init_path(&path);
	ret = btrfs_search_slot(ctx->extent_root, &key, &path);
	if (ret == 0) {
		ret = btrfs_decode_extent_item(ctx->file->fs, path.nodes[0], path.slots[0], &key,
					       &ei);
		*shared = ret == 0 && ei.refs > 1;
	}
	btrfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

/* A path block shared with another tree shares everything below it. */
static int item_path_shared(struct fiemap_ctx *ctx, bool *shared)
{
	struct btrfs_path *path = &ctx->file->cur.path;

	*shared = false;
	for (int level = 0; level < BTRFS_MAX_LEVEL && path->nodes[level]; level++) {
		u64 bytenr = path->nodes[level]->start;
		int ret;

		if (ctx->block_checked[level] != bytenr) {
			ret = tree_block_shared(ctx, bytenr, level, &ctx->block_shared[level]);
			if (ret)
				return ret;
			ctx->block_checked[level] = bytenr;
		}
		if (ctx->block_shared[level]) {
			*shared = true;
			return 0;
		}
	}
	return 0;
}

static int extent_shared(struct fiemap_ctx *ctx, const struct tlog_file_extent *ext,
			 bool *shared)
{
	struct ref_count rc;
	int ret;

	if (ctx->last_bytenr == ext->disk_bytenr) {
		*shared = ctx->last_shared;
		return 0;
	}
	ret = data_extent_refs(ctx, ext->disk_bytenr, ext->disk_num_bytes, &rc);
	if (ret)
		return ret;
	if (rc.other || rc.refs > 1) {
		*shared = true;
	} else if (ext->generation >
		   btrfs_root_item_last_snapshot(&ctx->file->root->root_item)) {
		/* written after the last snapshot: nobody else can see it */
		*shared = false;
	} else {
		ret = item_path_shared(ctx, shared);
		if (ret)
			return ret;
	}
	ctx->last_bytenr = ext->disk_bytenr;
	ctx->last_shared = *shared;
	return 0;
}

/* The FIEMAP extent one item produces (before merging). */
static int item_to_fiemap(struct fiemap_ctx *ctx, const struct tlog_file_extent *ext,
			  struct tlog_fiemap_extent *fe)
{
	u32 ss = ctx->file->fs->sectorsize;
	bool shared = false;
	int ret;

	fe->logical = ext->start;
	if (ext->type == BTRFS_FILE_EXTENT_INLINE) {
		fe->physical = 0;
		fe->length = round_up(ext->end, ss) - ext->start;
		fe->flags = TLOG_FIEMAP_EXTENT_DATA_INLINE | TLOG_FIEMAP_EXTENT_NOT_ALIGNED;
		if (ext->compression)
			fe->flags |= TLOG_FIEMAP_EXTENT_ENCODED;
		return 0;
	}
	fe->length = ext->num_bytes;
	fe->flags = 0;
	if (ext->compression) {
		/* the item's offset points into decompressed data: not on disk */
		fe->physical = ext->disk_bytenr;
		fe->flags |= TLOG_FIEMAP_EXTENT_ENCODED;
	} else {
		fe->physical = ext->disk_bytenr + ext->offset;
	}
	if (ext->type == BTRFS_FILE_EXTENT_PREALLOC)
		fe->flags |= TLOG_FIEMAP_EXTENT_UNWRITTEN;
	if (ctx->check_shared) {
		ret = extent_shared(ctx, ext, &shared);
		if (ret)
			return ret;
		if (shared)
			fe->flags |= TLOG_FIEMAP_EXTENT_SHARED;
	}
	return 0;
}

static bool can_merge(const struct tlog_fiemap_extent *a, const struct tlog_fiemap_extent *b)
{
	return a->logical + a->length == b->logical &&
	       a->physical + a->length == b->physical &&
	       a->flags == b->flags;
}

static int check_request(struct tlog_fiemap_request *req)
{
	u32 bad = req->flags & ~TLOG_FIEMAP_FLAG_SYNC;

	if (bad) {
		req->flags = bad;
		return -EBADR;
	}
	if (req->extent_count > UINT_MAX / 56)
		return -EINVAL;
	if (req->length == 0)
		return -EINVAL;
	if (req->start >= TLOG_MAX_FILE_SIZE)
		return -EFBIG;
	if (req->length > TLOG_MAX_FILE_SIZE - req->start)
		req->length = TLOG_MAX_FILE_SIZE - req->start;
	return 0;
}

/*
 * Where extents go: a fixed array of @cap (0: count only, the ioctl's count
 * mode) or, with @grow, an array grown as needed (no limit).
 */
struct fiemap_sink {
	struct tlog_fiemap_extent *ext;
	u32 cap;
	u32 mapped;
	bool grow;
	tlog_fiemap_fn emit;	/* instead of an array: each extent handed on */
	void *arg;
};

/* Store one extent.  1 when a fixed array is full: the walk stops there. */
static int sink_store(struct fiemap_sink *sink, const struct tlog_fiemap_extent *fe)
{
	if (sink->emit) {
		sink->mapped++;
		return sink->emit(fe, sink->arg);
	}
	if (sink->grow && sink->mapped == sink->cap) {
		u32 cap = sink->cap ? sink->cap * 2 : 256;
		struct tlog_fiemap_extent *p;

		if (cap < sink->cap)
			return -EOVERFLOW;
		p = realloc(sink->ext, (size_t)cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		sink->ext = p;
		sink->cap = cap;
	}
	if (sink->cap && sink->mapped == sink->cap)
		return 1;
	if (sink->cap)
		sink->ext[sink->mapped] = *fe;
	sink->mapped++;
	return 0;
}

/* The walk of section 2 over [range_start, range_end), into @sink. */
static int fiemap_walk(struct fiemap_ctx *ctx, u64 range_start, u64 range_end,
		       struct fiemap_sink *sink)
{
	struct tlog_file *file = ctx->file;
	struct tlog_fiemap_extent pending = { 0 }, fe;
	bool have_pending = false;
	u64 last_end;
	int ret;

	ret = tlog_file_last_extent_end(file, &last_end);
	if (ret)
		return ret;
	ret = tlog_file_cursor_seek(file, range_start);
	while (ret == 0 && file->cur.ext.start < range_end) {
		const struct tlog_file_extent *ext = &file->cur.ext;
		bool reached_end = ext->end >= range_end;

		if (!tlog_extent_is_hole(ext)) {
			ret = item_to_fiemap(ctx, ext, &fe);
			if (ret)
				return ret;
			if (have_pending && can_merge(&pending, &fe)) {
				pending.length += fe.length;
			} else {
				/* one more to emit and no room: stop, no LAST */
				if (have_pending && (ret = sink_store(sink, &pending)))
					return ret < 0 ? ret : 0;
				pending = fe;
				have_pending = true;
			}
		}
		if (reached_end)
			break;
		ret = tlog_file_cursor_next(file);
	}
	if (ret < 0)
		return ret;
	if (!have_pending)
		return 0;
	if (pending.logical + pending.length >= last_end)
		pending.flags |= TLOG_FIEMAP_EXTENT_LAST;
	ret = sink_store(sink, &pending);
	return ret < 0 ? ret : 0;
}

static int fiemap_run(struct tlog_file *file, struct tlog_fiemap_request *req,
		      struct fiemap_sink *sink, bool check_shared)
{
	struct fiemap_ctx ctx = { .file = file, .check_shared = check_shared };
	u32 ss = file->fs->sectorsize;
	int ret;

	ret = check_request(req);
	if (ret)
		return ret;
	if (check_shared) {
		ret = btrfs_read_root(file->fs, BTRFS_EXTENT_TREE_OBJECTID, &ctx.extent_root);
		if (ret)
			return ret;
		btrfs_init_path(&ctx.extent_path);
		/* data extent items come in bytenr order as the file goes on */
		btrfs_path_set_reada(&ctx.extent_path, NULL);
	}
	ret = fiemap_walk(&ctx, req->start / ss * ss,
			  round_up(req->start + req->length, ss), sink);
	if (check_shared)
		btrfs_release_path(&ctx.extent_path);
	req->mapped_extents = sink->mapped;
	return ret;
}

int tlog_file_fiemap(struct tlog_file *file, struct tlog_fiemap_request *req,
		     struct tlog_fiemap_extent *extents)
{
	struct fiemap_sink sink = { .ext = extents, .cap = req->extent_count };

	tlog_error_clear();
	req->mapped_extents = 0;
	return fiemap_run(file, req, &sink, req->extent_count > 0);
}

int tlog_file_fiemap_each(struct tlog_file *file, u64 start, u64 length, tlog_fiemap_fn fn,
			  void *arg)
{
	struct tlog_fiemap_request req = { .start = start, .length = length };
	struct fiemap_sink sink = { .emit = fn, .arg = arg };

	tlog_error_clear();
	return fiemap_run(file, &req, &sink, true);
}

int tlog_file_fiemap_all(struct tlog_file *file, u64 start, u64 length,
			 struct tlog_fiemap_extent **ret, u32 *nr)
{
	struct tlog_fiemap_request req = { .start = start, .length = length };
	struct fiemap_sink sink = { .grow = true };
	int err;

	tlog_error_clear();
	err = fiemap_run(file, &req, &sink, true);
	if (err) {
		free(sink.ext);
		return err;
	}
	*ret = sink.ext;
	*nr = sink.mapped;
	return 0;
}
