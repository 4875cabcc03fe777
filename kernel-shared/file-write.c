// SPDX-License-Identifier: GPL-2.0-only
/*
 * File data as the kernel's page cache and writeback produce it.
 *
 * A write only makes bytes dirty (struct tlog_dirty_run, in
 * inode-ops.h); extents are made when dirty data is written back, the
 * way btrfs's delalloc does it: each contiguous run of dirty sectors
 * becomes one extent of up to BTRFS_MAX_EXTENT_SIZE, or an inline extent
 * when it holds the whole small file, or is written in place where it
 * falls into a preallocated extent (or, for a NODATACOW file, into an
 * extent only it references).  So the layout of a file - what FIEMAP
 * shows after a sync - depends on what was dirty together, as it does
 * under the kernel.
 *
 * The edge cases follow the kernel's helpers:
 *  - truncate_block(): zeroing the rest of the block at the old EOF when
 *    a file grows, or the partial blocks of a punched range, makes that
 *    block dirty, whatever backs it;
 *  - cont_expand(): growing a file past its EOF block inserts explicit
 *    hole items for the new range when the filesystem lacks NO_HOLES;
 *  - fallocate and punch hole write the dirty data of their range back
 *    before they change its extents.
 *
 * The bytes of a dirty sector that no write covered are the file's
 * current contents, read from the trees when the sector is written back
 * (nothing else changes them in between), and zero past i_size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "backref.h"
#include "compression.h"
#include "csum.h"
#include "errctx.h"
#include "extent-tree.h"
#include "file-extent.h"
#include "file-item.h"
#include "file.h"
#include "inode-ops.h"
#include "misc.h"

/* The largest extent writeback makes of uncompressed data. */
#define BTRFS_MAX_EXTENT_SIZE	(128ULL << 20)
/* The largest extent one fallocate step makes. */
#define BTRFS_MAX_PREALLOC_SIZE	(256ULL << 20)
/* Data is staged for writing in pieces of this size. */
#define WRITE_CHUNK		(1U << 20)

static u64 sector_down(const struct tlog_mount *mnt, u64 v)
{
	return v / mnt->fs->sectorsize * mnt->fs->sectorsize;
}

static u64 sector_up(const struct tlog_mount *mnt, u64 v)
{
	u64 ss = mnt->fs->sectorsize;

	return v > UINT64_MAX - ss ? UINT64_MAX / ss * ss : (v + ss - 1) / ss * ss;
}

static u64 i_size(const struct tlog_inode *inode)
{
	return btrfs_inode_item_size(&inode->item);
}

static u64 inode_flags(const struct tlog_inode *inode)
{
	return btrfs_inode_item_flags(&inode->item);
}

void tlog_inode_add_bytes(struct tlog_inode *inode, s64 delta)
{
	u64 n = btrfs_inode_item_nbytes(&inode->item);

	btrfs_set_inode_item_nbytes(&inode->item, delta < 0 && (u64)-delta > n ? 0 : n + delta);
}

static bool no_holes(const struct tlog_mount *mnt)
{
	return mnt->fs->incompat & BTRFS_FEATURE_INCOMPAT_NO_HOLES;
}

/* ---- the dirty runs ---- */

/* Cut [start, end) out of the runs (a run across an edge keeps its outside part). */
static int dirty_cut(struct tlog_inode *inode, u64 start, u64 end)
{
	size_t i = 0;

	while (i < inode->nr_dirty) {
		struct tlog_dirty_run *r = &inode->dirty[i];

		if (r->end <= start || r->start >= end) {
			i++;
			continue;
		}
		if (r->start < start && r->end > end) {
			struct tlog_dirty_run tail = { end, r->end, r->byte, NULL };

			if (r->data) {
				tail.data = malloc(r->end - end);
				if (!tail.data)
					return -ENOMEM;
				memcpy(tail.data, r->data + (end - r->start), r->end - end);
			}
			if (array_reserve(inode->dirty, inode->alloc_dirty, inode->nr_dirty + 1)) {
				free(tail.data);
				return -ENOMEM;
			}
			r = &inode->dirty[i];
			r->end = start;
			memmove(&inode->dirty[i + 2], &inode->dirty[i + 1],
				(inode->nr_dirty - i - 1) * sizeof(*r));
			inode->dirty[i + 1] = tail;
			inode->nr_dirty++;
			return 0;
		}
		if (r->start < start) {
			r->end = start;
			i++;
		} else if (r->end > end) {
			if (r->data)
				memmove(r->data, r->data + (end - r->start), r->end - end);
			r->start = end;
			i++;
		} else {
			free(r->data);
			memmove(r, r + 1, (inode->nr_dirty - i - 1) * sizeof(*r));
			inode->nr_dirty--;
		}
	}
	return 0;
}

void tlog_dirty_release(struct tlog_inode *inode)
{
	for (size_t i = 0; i < inode->nr_dirty; i++)
		free(inode->dirty[i].data);
	inode->nr_dirty = 0;
}

/* Put @run (which overlaps nothing) in its place among the runs. */
static int dirty_insert(struct tlog_mount *mnt, struct tlog_inode *inode,
			const struct tlog_dirty_run *run)
{
	size_t i;

	for (i = 0; i < inode->nr_dirty && inode->dirty[i].start < run->start; i++)
		;
	if (array_reserve(inode->dirty, inode->alloc_dirty, inode->nr_dirty + 1))
		return -ENOMEM;
	memmove(&inode->dirty[i + 1], &inode->dirty[i],
		(inode->nr_dirty - i) * sizeof(inode->dirty[0]));
	inode->dirty[i] = *run;
	inode->nr_dirty++;
	if (list_empty(&inode->dirty_list))
		list_add_tail(&inode->dirty_list, &mnt->dirty_inodes);
	return 0;
}

/* A byte run that may join its neighbour of the same value. */
static bool joins(const struct tlog_dirty_run *r, u8 byte)
{
	return !r->data && r->byte == byte;
}

/* Bytes [start, end) now hold @byte in the page cache. */
static int dirty_set(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end,
		     u8 byte)
{
	struct tlog_dirty_run run = { start, end, byte, NULL };
	size_t i;
	int err;

	if (start >= end)
		return 0;
	err = dirty_cut(inode, start, end);
	if (err)
		return err;
	for (i = 0; i < inode->nr_dirty && inode->dirty[i].start < start; i++)
		;
	/* one run for neighbours of the same value: sequential writes stay one run */
	if (i > 0 && inode->dirty[i - 1].end == start && joins(&inode->dirty[i - 1], byte)) {
		inode->dirty[i - 1].end = end;
		if (i < inode->nr_dirty && inode->dirty[i].start == end &&
		    joins(&inode->dirty[i], byte)) {
			inode->dirty[i - 1].end = inode->dirty[i].end;
			memmove(&inode->dirty[i], &inode->dirty[i + 1],
				(inode->nr_dirty - i - 1) * sizeof(inode->dirty[0]));
			inode->nr_dirty--;
		}
		return 0;
	}
	if (i < inode->nr_dirty && inode->dirty[i].start == end && joins(&inode->dirty[i], byte)) {
		inode->dirty[i].start = start;
		return 0;
	}
	return dirty_insert(mnt, inode, &run);
}

/* Bytes [start, start + len) now hold a copy of @buf in the page cache. */
static int dirty_set_data(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start,
			  const void *buf, u64 len)
{
	struct tlog_dirty_run run = { start, start + len, 0, malloc(len ? len : 1) };
	int err;

	if (!run.data)
		return -ENOMEM;
	memcpy(run.data, buf, len);
	err = dirty_cut(inode, start, start + len);
	if (!err)
		err = dirty_insert(mnt, inode, &run);
	if (err)
		free(run.data);
	return err;
}

/*
 * btrfs_truncate_block(): zero [from, to) of the block holding @from
 * (to the block's end when @to is 0) and make the block dirty; nothing
 * when @from is block-aligned and the range ends on a block edge.
 */
static int truncate_block(struct tlog_mount *mnt, struct tlog_inode *inode, u64 from, u64 to)
{
	u64 block_end = sector_down(mnt, from) + mnt->fs->sectorsize;

	if (!to || to > block_end)
		to = block_end;
	if (from == sector_down(mnt, from) && to == block_end)
		return 0;
	if (from == sector_down(mnt, from) && !to)
		return 0;
	return dirty_set(mnt, inode, from, to, 0);
}

/* ---- data space: what writeback will need ---- */

/* The bytes of the sectors @inode has dirty. */
static u64 dirty_sector_bytes(const struct tlog_mount *mnt, const struct tlog_inode *inode)
{
	u64 total = 0, end = 0;

	for (size_t i = 0; i < inode->nr_dirty; i++) {
		u64 s = sector_down(mnt, inode->dirty[i].start), e = sector_up(mnt, inode->dirty[i].end);

		if (s < end)
			s = end;
		if (e > s)
			total += e - s;
		if (e > end)
			end = e;
	}
	return total;
}

/* The exact bytes of dirty data writeback will need (the kernel's bytes_may_use). */
static u64 count_dirty_bytes(struct tlog_mount *mnt)
{
	struct list_head *pos;
	u64 total = 0;

	for (pos = mnt->dirty_inodes.next; pos != &mnt->dirty_inodes; pos = pos->next) {
		const struct tlog_inode *inode = list_entry(pos, struct tlog_inode, dirty_list);

		if (!inode->evicted)
			total += dirty_sector_bytes(mnt, inode);
	}
	return total;
}

/*
 * btrfs_check_data_free_space: @bytes more dirty data must fit in the
 * data space left once everything already dirty is written; -ENOSPC
 * (changing nothing) when it does not.  When the block groups are short
 * but the device is not, new data chunks come now, as the kernel's
 * reservation makes them (ALLOC_CHUNK_FORCE) - in the running
 * transaction, so that an fsync after it commits.
 */
static int reserve_data_space(struct tlog_mount *mnt, u64 bytes)
{
	u64 in_groups = tlog_trans_group_space(mnt->trans, BTRFS_BLOCK_GROUP_DATA);
	u64 left;

	if (bytes <= in_groups && mnt->reserved_bound <= in_groups - bytes) {
		mnt->reserved_bound += bytes;
		return 0;
	}
	/* the cheap bound says no: count what is dirty exactly */
	mnt->reserved_bound = count_dirty_bytes(mnt);
	left = tlog_trans_space_left(mnt->trans, BTRFS_BLOCK_GROUP_DATA);
	if (bytes > left || mnt->reserved_bound > left - bytes)
		return -ENOSPC;
	while (mnt->reserved_bound + bytes > in_groups) {
		int err = tlog_trans_force_chunk(mnt->trans, BTRFS_BLOCK_GROUP_DATA);

		if (err == -ENOSPC) {
			tlog_error_clear();
			break;
		}
		if (err)
			return err;
		in_groups = tlog_trans_group_space(mnt->trans, BTRFS_BLOCK_GROUP_DATA);
	}
	mnt->reserved_bound += bytes;
	return 0;
}

/* ---- reading what the trees hold ---- */

/* The extents of @inode that overlap [start, end), in order. */
static int collect_extents(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end,
			   struct tlog_file_extent **ret, size_t *nr)
{
	struct tlog_file_extent *v = NULL;
	struct tlog_file *file;
	size_t alloc = 0, n = 0;
	int err;

	*ret = NULL;
	*nr = 0;
	err = tlog_file_open(mnt->fs, inode->root, inode->ino, &file);
	if (err)
		return err;
	for (err = tlog_file_cursor_seek(file, start); err == 0 && file->cur.ext.start < end;
	     err = tlog_file_cursor_next(file)) {
		if (array_reserve(v, alloc, n + 1)) {
			err = -ENOMEM;
			break;
		}
		v[n] = file->cur.ext;
		v[n].inline_data = NULL;
		n++;
	}
	tlog_file_close(file);
	if (err < 0) {
		free(v);
		return err;
	}
	*ret = v;
	*nr = n;
	return 0;
}

/* Read [off, off + len) of the file as the trees hold it, zeros past @size. */
static int read_old_data(struct tlog_mount *mnt, struct tlog_inode *inode, u64 size, u8 *buf,
			 u64 off, u64 len)
{
	struct tlog_file *file;
	ssize_t got;
	int err;

	memset(buf, 0, len);
	if (off >= size)
		return 0;
	err = tlog_file_open(mnt->fs, inode->root, inode->ino, &file);
	if (err)
		return err;
	file->size = size;
	got = tlog_file_pread(file, buf, len, off);
	tlog_file_close(file);
	return got < 0 ? (int)got : 0;
}

/* ---- writeback ---- */

/*
 * The bytes [off, off + len) of the page cache: old contents, the dirty
 * runs over them, zeros from i_size on.  @len is at most WRITE_CHUNK.
 */
static int fill_chunk(struct tlog_mount *mnt, struct tlog_inode *inode, u8 *buf, u64 off,
		      u64 len)
{
	u64 end = off + len, covered = off;
	bool whole = true;

	/* read the old data only where some byte is not dirty */
	for (size_t i = 0; i < inode->nr_dirty && covered < end; i++) {
		const struct tlog_dirty_run *r = &inode->dirty[i];

		if (r->end <= covered)
			continue;
		if (r->start > covered)
			break;
		covered = r->end;
	}
	if (covered < end && covered < i_size(inode))
		whole = false;
	if (!whole) {
		int err = read_old_data(mnt, inode, i_size(inode), buf, off, len);

		if (err)
			return err;
	} else {
		memset(buf, 0, len);
	}
	for (size_t i = 0; i < inode->nr_dirty; i++) {
		const struct tlog_dirty_run *r = &inode->dirty[i];
		u64 s = r->start > off ? r->start : off, e = r->end < end ? r->end : end;

		if (r->start >= end)
			break;
		if (s < e && r->data)
			memcpy(buf + (s - off), r->data + (s - r->start), e - s);
		else if (s < e)
			memset(buf + (s - off), r->byte, e - s);
	}
	if (i_size(inode) < end)
		memset(buf + (i_size(inode) > off ? i_size(inode) - off : 0), 0,
		       end - (i_size(inode) > off ? i_size(inode) : off));
	return 0;
}

/* Write the page cache's [start, end) to @bytenr, with checksums unless NODATASUM. */
static int write_range_data(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end,
			    u64 bytenr)
{
	bool sums = !(inode_flags(inode) & BTRFS_INODE_NODATASUM);
	u8 *buf = malloc(WRITE_CHUNK);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (u64 off = start; !err && off < end; off += WRITE_CHUNK) {
		u64 n = end - off < WRITE_CHUNK ? end - off : WRITE_CHUNK;

		err = fill_chunk(mnt, inode, buf, off, n);
		if (!err && mnt->clone_inode == inode && mnt->clone_fd >= 0) {
			/* mkfs --reflink: the same bytes are the source file's at @off */
			u64 cloned = 0;

			err = btrfs_clone_data(mnt->trans, bytenr + (off - start), mnt->clone_fd,
					       off, buf, n, &cloned);
			mnt->cloned_bytes += cloned;
		} else if (!err) {
			err = btrfs_write_data(mnt->trans, bytenr + (off - start), buf, n);
		}
		if (!err && sums)
			err = btrfs_insert_data_csums(mnt->trans, bytenr + (off - start), buf, n);
	}
	free(buf);
	mnt->stats.data_bytes_written += end - start;
	return err;
}

static int insert_file_extent(struct tlog_mount *mnt, struct tlog_inode *inode, u64 file_off,
			      u8 type, u64 bytenr, u64 disk_len, u64 offset, u64 len, u64 ram)
{
	struct btrfs_file_extent_item fi;
	struct btrfs_key key = { inode->ino, BTRFS_EXTENT_DATA_KEY, file_off };

	memset(&fi, 0, sizeof(fi));
	btrfs_set_file_extent_item_generation(&fi, mnt->trans->transid);
	btrfs_set_file_extent_item_ram_bytes(&fi, ram);
	btrfs_set_file_extent_item_type(&fi, type);
	btrfs_set_file_extent_item_disk_bytenr(&fi, bytenr);
	btrfs_set_file_extent_item_disk_num_bytes(&fi, disk_len);
	btrfs_set_file_extent_item_offset(&fi, offset);
	btrfs_set_file_extent_item_num_bytes(&fi, len);
	return btrfs_insert_item(mnt->trans, inode->root, &key, &fi, sizeof(fi));
}

int tlog_drop_extents(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end)
{
	u64 found = 0;
	int err = btrfs_drop_file_extents(mnt->trans, inode->root, inode->ino, start, end, &found);

	tlog_inode_add_bytes(inode, -(s64)found);
	return err;
}

/* A new extent for [start, end) of the page cache (cow_file_range). */
static int cow_range(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end)
{
	while (start < end) {
		u64 len = end - start, bytenr;
		int err;

		if (len > BTRFS_MAX_EXTENT_SIZE)
			len = BTRFS_MAX_EXTENT_SIZE;
		/* the allocator may not find one piece that big: it takes less */
		err = btrfs_alloc_data_extent_upto(mnt->trans, inode->root, inode->ino, start, len,
						   &bytenr, &len);
		if (err)
			return err;
		err = write_range_data(mnt, inode, start, start + len, bytenr);
		if (!err)
			err = tlog_drop_extents(mnt, inode, start, start + len);
		if (!err)
			err = insert_file_extent(mnt, inode, start, BTRFS_FILE_EXTENT_REG, bytenr, len,
						 0, len, len);
		if (err)
			return err;
		tlog_inode_add_bytes(inode, (s64)len);
		mnt->stats.extents_written++;
		start += len;
	}
	return 0;
}

/*
 * Write [start, end) into the extent @e (prealloc, or a NODATACOW file's
 * own extent) in place: the data goes where the extent already is, and
 * the range's item becomes a regular one pointing into the same extent
 * (btrfs_mark_extent_written).
 */
static int nocow_range(struct tlog_mount *mnt, struct tlog_inode *inode,
		       const struct tlog_file_extent *e, u64 start, u64 end)
{
	u64 disk = e->disk_bytenr + e->offset + (start - e->start);
	int err;

	err = write_range_data(mnt, inode, start, end, disk);
	if (err || e->type != BTRFS_FILE_EXTENT_PREALLOC)
		return err;
	return btrfs_mark_extent_written(mnt->trans, inode->root, inode->ino, start, end);
}

/*
 * Whether an existing extent can take the range's data in place
 * (can_nocow_file_extent): a preallocated one, or for a NODATACOW file
 * an uncompressed regular one, that no snapshot can share (newer than the
 * subvolume's last snapshot) and nothing but this file at this position
 * references - a clone of preallocated space makes the next write into
 * it copy-on-write, as shared data must be.
 */
static int can_nocow(struct tlog_mount *mnt, const struct tlog_inode *inode,
		     const struct tlog_file_extent *e, bool *ret)
{
	bool shared;
	int err;

	*ret = false;
	if (e->type != BTRFS_FILE_EXTENT_PREALLOC &&
	    (!(inode_flags(inode) & BTRFS_INODE_NODATACOW) || e->type != BTRFS_FILE_EXTENT_REG))
		return 0;
	if (!e->disk_bytenr || e->compression ||
	    e->generation <= btrfs_root_item_last_snapshot(&inode->root->root_item))
		return 0;
	err = btrfs_data_extent_shared(mnt->fs, inode->root, inode->ino, e->start - e->offset,
				       e->disk_bytenr, e->disk_num_bytes, &shared);
	if (!err)
		*ret = !shared;
	return err;
}

/*
 * run_delalloc_nocow: in-place where an extent allows it, copy-on-write
 * elsewhere, each piece an ordered extent of its own.  A writeback that
 * waits for a range only (btrfs_wait_ordered_range: fallocate, punch,
 * reflink) writes the pages of that range and completes the ordered
 * extents overlapping it; the pieces of the same dirty run that start at
 * or past @limit keep their pages dirty until a later writeback.  So
 * writing stops there: *@written is where it stopped (@end when all of
 * it was written).
 */
static int write_back_range(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end,
			    u64 limit, u64 *written)
{
	struct tlog_file_extent *v;
	size_t nr;
	u64 cow_start = start;
	int err = collect_extents(mnt, inode, start, end, &v, &nr);

	if (err)
		return err;
	*written = end;
	for (size_t i = 0; !err && i < nr; i++) {
		const struct tlog_file_extent *e = &v[i];
		u64 s = e->start > start ? e->start : start, t = e->end < end ? e->end : end;
		bool nocow;

		if (s >= t)
			continue;
		err = can_nocow(mnt, inode, e, &nocow);
		if (err || !nocow)
			continue;
		if (cow_start < s && cow_start >= limit)
			break;
		if (cow_start < s)
			err = cow_range(mnt, inode, cow_start, s);
		if (err)
			break;
		cow_start = s;
		if (s >= limit)
			break;
		err = nocow_range(mnt, inode, e, s, t);
		cow_start = t;
	}
	if (!err && cow_start < end) {
		if (cow_start < limit)
			err = cow_range(mnt, inode, cow_start, end);
		else
			*written = cow_start;
	}
	free(v);
	return err;
}

/* ---- compressed writeback (compress_file_range) ---- */

/* inode_need_compress: the mount or the inode asks, and nothing forbids it. */
static bool need_compress(const struct tlog_mount *mnt, const struct tlog_inode *inode)
{
	u64 flags = inode_flags(inode);

	/* btrfs_inode_can_compress; a file with preallocation takes the nocow path */
	if (flags & (BTRFS_INODE_NODATACOW | BTRFS_INODE_NODATASUM | BTRFS_INODE_PREALLOC))
		return false;
	if (mnt->compress_force)
		return true;
	if (flags & BTRFS_INODE_NOCOMPRESS)
		return false;
	return mnt->compress_type || (flags & BTRFS_INODE_COMPRESS);
}

/* The property's algorithm first, then the mount's, zlib when neither says. */
static u8 compress_type(const struct tlog_mount *mnt, struct tlog_inode *inode)
{
	u8 type = tlog_inode_compress_type(inode);

	if (type)
		return type;
	return mnt->compress_type ? mnt->compress_type : BTRFS_COMPRESS_ZLIB;
}

/* A compressed inline extent: the whole (small) file, as the kernel tries first at 0. */
static int write_compressed_inline(struct tlog_mount *mnt, struct tlog_inode *inode,
				   const u8 *data, size_t len)
{
	struct btrfs_key key = { inode->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	u32 item = BTRFS_FILE_EXTENT_INLINE_DATA_START + (u32)len;
	u8 *buf = calloc(1, item);
	struct btrfs_file_extent_item *fi = (void *)buf;
	int err;

	if (!buf)
		return -ENOMEM;
	btrfs_set_file_extent_item_generation(fi, mnt->trans->transid);
	btrfs_set_file_extent_item_ram_bytes(fi, i_size(inode));
	btrfs_set_file_extent_item_compression(fi, compress_type(mnt, inode));
	btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_INLINE);
	memcpy(buf + BTRFS_FILE_EXTENT_INLINE_DATA_START, data, len);
	err = tlog_drop_extents(mnt, inode, 0, mnt->fs->sectorsize);
	if (!err)
		err = btrfs_insert_item(mnt->trans, inode->root, &key, buf, item);
	if (!err)
		tlog_inode_add_bytes(inode, (s64)i_size(inode));
	free(buf);
	return err;
}

/* One compressed extent: @out (@clen bytes) holding [start, start + ram) of the file. */
static int write_compressed_extent(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start,
				   u64 ram, u8 *out, size_t clen)
{
	u64 disk = sector_up(mnt, clen), bytenr;
	int err;

	memset(out + clen, 0, disk - clen);
	err = btrfs_alloc_data_extent(mnt->trans, inode->root, inode->ino, start, disk, &bytenr);
	if (!err)
		err = btrfs_write_data(mnt->trans, bytenr, out, disk);
	if (!err)
		err = btrfs_insert_data_csums(mnt->trans, bytenr, out, disk);
	if (!err)
		err = tlog_drop_extents(mnt, inode, start, start + ram);
	if (!err) {
		struct btrfs_file_extent_item fi;
		struct btrfs_key key = { inode->ino, BTRFS_EXTENT_DATA_KEY, start };

		memset(&fi, 0, sizeof(fi));
		btrfs_set_file_extent_item_generation(&fi, mnt->trans->transid);
		btrfs_set_file_extent_item_ram_bytes(&fi, ram);
		btrfs_set_file_extent_item_compression(&fi, compress_type(mnt, inode));
		btrfs_set_file_extent_item_type(&fi, BTRFS_FILE_EXTENT_REG);
		btrfs_set_file_extent_item_disk_bytenr(&fi, bytenr);
		btrfs_set_file_extent_item_disk_num_bytes(&fi, disk);
		btrfs_set_file_extent_item_num_bytes(&fi, ram);
		err = btrfs_insert_item(mnt->trans, inode->root, &key, &fi, sizeof(fi));
	}
	if (!err) {
		tlog_inode_add_bytes(inode, (s64)ram);
		mnt->stats.extents_written++;
		mnt->stats.data_bytes_written += disk;
	}
	return err;
}

static bool inline_ok(const struct tlog_mount *mnt, const struct tlog_inode *inode, u64 end);
static int write_inline(struct tlog_mount *mnt, struct tlog_inode *inode);

/* What the kernel does with a range it gave up compressing: plain extents (or inline). */
static int write_uncompressed(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start,
			      u64 end)
{
	if (start == 0 && inline_ok(mnt, inode, end))
		return write_inline(mnt, inode);
	return cow_range(mnt, inode, start, end);
}

/*
 * compress_file_range over [start, end): 512 KiB chunks (the async cow
 * work items), each compressed 128 KiB at a time.  A piece that does not
 * save a whole sector is incompressible: the inode is marked NOCOMPRESS
 * (unless compression is forced) and the rest goes out uncompressed.
 */
static int compress_range(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end)
{
	u32 ss = mnt->fs->sectorsize;
	u8 *in = malloc(BTRFS_MAX_UNCOMPRESSED), *out = malloc(BTRFS_MAX_UNCOMPRESSED + ss);
	int err = in && out ? 0 : -ENOMEM;

	for (u64 cs = start; !err && cs < end; cs += 512 * 1024) {
		u64 ce = end - cs < 512 * 1024 ? end : cs + 512 * 1024, pos = cs;
		u64 actual_end = i_size(inode) < ce ? i_size(inode) : ce;

		while (!err && pos < ce) {
			u64 piece = ce - pos < BTRFS_MAX_UNCOMPRESSED ? ce - pos : BTRFS_MAX_UNCOMPRESSED;
			u64 total_in = (actual_end < pos + piece ? actual_end : pos + piece) - pos;
			size_t clen;

			/*
			 * What is left is one block that is not the whole file
			 * (6.18 asks i_size, not the on-disk size): compressing
			 * it would save nothing, and says nothing about the
			 * file's data (no NOCOMPRESS).
			 */
			if (actual_end - pos <= ss && (pos > 0 || ce < i_size(inode))) {
				err = write_uncompressed(mnt, inode, pos, ce);
				break;
			}
			if (!need_compress(mnt, inode)) {
				err = write_uncompressed(mnt, inode, pos, ce);
				break;
			}
			err = fill_chunk(mnt, inode, in, pos, total_in);
			if (err)
				break;
			err = btrfs_compress(compress_type(mnt, inode), mnt->compress_level, in, total_in, ss,
					     out, BTRFS_MAX_UNCOMPRESSED, &clen);
			if (err && err != -E2BIG)
				break;
			if (!err && pos == 0 && actual_end <= ss && ce >= i_size(inode) &&
			    clen <= mnt->max_inline && clen <= tlog_max_inline_data_size(mnt->fs)) {
				err = write_compressed_inline(mnt, inode, out, clen);
				break;
			}
			total_in = sector_up(mnt, total_in);
			if (!err && sector_up(mnt, clen) + ss <= total_in) {
				err = write_compressed_extent(mnt, inode, pos, total_in, out, clen);
				pos += total_in;
				continue;
			}
			/* incompressible */
			if (!mnt->compress_force)
				btrfs_set_inode_item_flags(&inode->item,
							   inode_flags(inode) | BTRFS_INODE_NOCOMPRESS);
			err = write_uncompressed(mnt, inode, pos, ce);
			break;
		}
	}
	free(in);
	free(out);
	return err;
}

/*
 * can_cow_file_range_inline: the whole file in one dirty range from 0,
 * shorter than a sector (a full sector is never inlined uncompressed), no
 * longer than max_inline, and not a NODATACOW file.
 */
static bool inline_ok(const struct tlog_mount *mnt, const struct tlog_inode *inode, u64 end)
{
	u64 size = i_size(inode);

	return size && end >= size && size < mnt->fs->sectorsize &&
	       size <= mnt->max_inline && size <= tlog_max_inline_data_size(mnt->fs) &&
	       !(inode_flags(inode) & BTRFS_INODE_NODATACOW);
}

static int write_inline(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	u64 size = i_size(inode);
	struct btrfs_key key = { inode->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	u32 item = BTRFS_FILE_EXTENT_INLINE_DATA_START + (u32)size;
	struct btrfs_file_extent_item *fi;
	u8 *buf = calloc(1, item + mnt->fs->sectorsize);
	int err;

	if (!buf)
		return -ENOMEM;
	err = fill_chunk(mnt, inode, buf + item, 0, mnt->fs->sectorsize);
	if (!err) {
		memmove(buf + BTRFS_FILE_EXTENT_INLINE_DATA_START, buf + item, size);
		err = tlog_drop_extents(mnt, inode, 0, mnt->fs->sectorsize);
	}
	if (!err) {
		fi = (void *)buf;
		memset(fi, 0, BTRFS_FILE_EXTENT_INLINE_DATA_START);
		btrfs_set_file_extent_item_generation(fi, mnt->trans->transid);
		btrfs_set_file_extent_item_ram_bytes(fi, size);
		btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_INLINE);
		err = btrfs_insert_item(mnt->trans, inode->root, &key, buf, item);
	}
	if (!err)
		tlog_inode_add_bytes(inode, (s64)size);
	free(buf);
	return err;
}

/*
 * btrfs_inode_safe_disk_i_size_write(inode, 0): the size the inode item
 * gets on disk is i_size - without NO_HOLES no more than the prefix of
 * the file that file extent items cover, as a size past a gap (dirty
 * data not written yet) would leave part of the file without items.
 * Called wherever the kernel calls it: written data reaching the disk,
 * and a truncate, fallocate or reflink setting i_size.
 */
static int update_disk_i_size(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	u64 size = i_size(inode), covered = 0;
	struct tlog_file_extent *v;
	size_t nr;
	int err;

	if (no_holes(mnt)) {
		inode->disk_i_size = size;
		return 0;
	}
	err = collect_extents(mnt, inode, 0, size, &v, &nr);
	if (err)
		return err;
	for (size_t i = 0; i < nr && v[i].start <= covered; i++)
		covered = sector_up(mnt, v[i].end) > covered ? sector_up(mnt, v[i].end) : covered;
	free(v);
	inode->disk_i_size = covered < size ? covered : size;
	return 0;
}

int tlog_writeback_range(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end)
{
	u64 lo = sector_down(mnt, start), hi = end == (u64)-1 ? (u64)-1 : sector_up(mnt, end);
	int err = 0;

	if (!inode->nr_dirty || inode->evicted)
		return 0;
	err = tlog_mount_trans(mnt, &mnt->trans);
	while (!err) {
		u64 s = 0, e = 0, size = sector_up(mnt, i_size(inode));
		size_t i;

		/*
		 * The next run of dirty sectors that starts in [lo, hi): like
		 * the kernel's delalloc range, it begins at the first dirty
		 * block in the range and goes on past @hi to the end of the
		 * contiguous dirty data.
		 */
		for (i = 0; i < inode->nr_dirty; i++) {
			const struct tlog_dirty_run *r = &inode->dirty[i];
			u64 rs = sector_down(mnt, r->start), re = sector_up(mnt, r->end);

			if (!e) {
				if (re <= lo || rs >= hi)
					continue;
				s = rs > lo ? rs : lo;
				e = re;
			} else if (rs <= e) {
				e = re > e ? re : e;
			} else {
				break;
			}
		}
		if (!e)
			break;
		if (e > size)
			e = size;
		if (e - s > BTRFS_MAX_EXTENT_SIZE)
			e = s + BTRFS_MAX_EXTENT_SIZE;
		if (s >= e) {
			/* dirty bytes past EOF (a truncate cut them): nothing to write */
			err = dirty_cut(inode, s, (u64)-1);
			continue;
		}
		if (need_compress(mnt, inode))
			err = compress_range(mnt, inode, s, e);
		else if (s == 0 && inline_ok(mnt, inode, e))
			err = write_inline(mnt, inode);
		else
			err = write_back_range(mnt, inode, s, e, hi, &e);
		if (!err && e == s)
			break;	/* cannot be: the run starts inside [lo, hi) */
		if (!err)
			err = dirty_cut(inode, s, e);
		mnt->reserved_bound = mnt->reserved_bound > e - s ? mnt->reserved_bound - (e - s) : 0;
		/* the extents searched only when the size can move */
		if (!err && i_size(inode) > inode->disk_i_size)
			err = update_disk_i_size(mnt, inode);
		if (!err) {
			tlog_inode_record_modified(inode, s, e, false);
			tlog_inode_mark_dirty(mnt, inode);
		}
	}
	return err;
}

/* ---- growing a file ---- */

/*
 * btrfs_cont_expand: the file grows from @old to @size; the block at the
 * old EOF is zeroed past it, and without NO_HOLES the unmapped part of
 * [round_up(old), round_up(size)) gets explicit hole items.
 */
static int cont_expand(struct tlog_mount *mnt, struct tlog_inode *inode, u64 old, u64 size)
{
	u64 hole_start = sector_up(mnt, old), block_end = sector_up(mnt, size), pos = hole_start;
	struct tlog_file_extent *v;
	size_t nr;
	int err;

	err = truncate_block(mnt, inode, old, 0);
	if (err || block_end <= hole_start)
		return err;
	err = collect_extents(mnt, inode, hole_start, block_end, &v, &nr);
	if (err)
		return err;
	/*
	 * Each part that is not preallocated gets a new hole extent map
	 * (modified: the next fsync logs it), and without NO_HOLES a hole
	 * item where no item is; preallocated space stays as it was.
	 */
	for (size_t i = 0; !err && i <= nr && pos < block_end; i++) {
		u64 gap_end = i < nr && v[i].start < block_end ? v[i].start : block_end;
		u64 item_end;

		if (gap_end > pos) {
			tlog_inode_record_modified(inode, pos, gap_end, true);
			if (!no_holes(mnt))
				err = insert_file_extent(mnt, inode, pos, BTRFS_FILE_EXTENT_REG, 0, 0,
							 0, gap_end - pos, gap_end - pos);
			pos = gap_end;
		}
		if (i == nr)
			break;
		item_end = sector_up(mnt, v[i].end) < block_end ? sector_up(mnt, v[i].end) : block_end;
		if (item_end <= pos)
			continue;
		if (v[i].type != BTRFS_FILE_EXTENT_PREALLOC)
			tlog_inode_record_modified(inode, pos, item_end, true);
		pos = item_end;
	}
	free(v);
	return err;
}

void tlog_inode_record_modified(struct tlog_inode *inode, u64 start, u64 end, bool hole)
{
	/*
	 * Without memory for the record the next fsync cannot know what
	 * changed: it logs every extent (the kernel's answer to a failed
	 * extent map allocation).
	 */
	if (array_reserve(inode->modified, inode->alloc_modified, inode->nr_modified + 1)) {
		inode->full_sync = true;
		return;
	}
	inode->modified[inode->nr_modified++] = (struct tlog_dirty_run){ start, end, hole, NULL };
}

/* A write, truncate or fallocate changed the data: mtime, ctime, i_version. */
static void data_changed(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	inode->item.mtime = inode->item.ctime = mnt->now;
	btrfs_set_inode_item_sequence(&inode->item, btrfs_inode_item_sequence(&inode->item) + 1);
	tlog_inode_mark_dirty(mnt, inode);
}

static int check_regular(const struct tlog_inode *inode)
{
	u32 mode = btrfs_inode_item_mode(&inode->item);

	if (S_ISDIR(mode))
		return -EISDIR;
	if (!S_ISREG(mode))
		return -EINVAL;
	return 0;
}

#define MAX_LFS_FILESIZE	((u64)INT64_MAX)

static int write_common(struct tlog_mount *mnt, struct tlog_inode *inode, u64 off, u64 len,
			u8 byte, const void *buf);

int tlog_write(struct tlog_mount *mnt, struct tlog_inode *inode, u64 off, u64 len, u8 byte)
{
	return write_common(mnt, inode, off, len, byte, NULL);
}

int tlog_write_data(struct tlog_mount *mnt, struct tlog_inode *inode, u64 off, const void *buf,
		    u64 len)
{
	return write_common(mnt, inode, off, len, 0, buf);
}

static int write_common(struct tlog_mount *mnt, struct tlog_inode *inode, u64 off, u64 len,
			u8 byte, const void *buf)
{
	u64 old = i_size(inode), end;
	int err = check_regular(inode);

	if (err)
		return err;
	if (off > MAX_LFS_FILESIZE || len > MAX_LFS_FILESIZE - off)
		return -EFBIG;
	if (len == 0)
		return 0;
	end = off + len;
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err && !(inode_flags(inode) & BTRFS_INODE_NODATACOW))
		err = reserve_data_space(mnt, sector_up(mnt, end) - sector_down(mnt, off));
	if (!err)
		err = tlog_inode_kill_privs(mnt, inode);
	if (err)
		return err;
	if (sector_down(mnt, off) > old)
		err = cont_expand(mnt, inode, old, end);
	else if (off > old)
		err = dirty_set(mnt, inode, old, off, 0);	/* the page's bytes past EOF read as zeros */
	if (!err)
		err = buf ? dirty_set_data(mnt, inode, off, buf, len) :
			    dirty_set(mnt, inode, off, end, byte);
	if (err)
		return err;
	if (end > old)
		btrfs_set_inode_item_size(&inode->item, end);
	data_changed(mnt, inode);
	return 0;
}

/* Shrink an inline extent to @size bytes in place (btrfs_truncate_inode_items). */
static int truncate_inline(struct tlog_mount *mnt, struct tlog_inode *inode, u64 size,
			   const struct tlog_file_extent *e)
{
	struct btrfs_key key = { inode->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_path path;
	int err;

	if (size == 0 || e->compression)
		return tlog_drop_extents(mnt, inode, 0, sector_up(mnt, e->end));
	btrfs_init_path(&path);
	err = btrfs_search_slot_for_write(mnt->trans, inode->root, &key, &path, 0);
	if (err > 0)
		err = -EUCLEAN;
	if (!err)
		err = btrfs_truncate_item(mnt->trans, &path,
					  BTRFS_FILE_EXTENT_INLINE_DATA_START + (u32)size, true);
	if (!err) {
		struct btrfs_file_extent_item *fi = btrfs_item_ptr(path.nodes[0], path.slots[0]);

		btrfs_set_file_extent_item_ram_bytes(fi, size);
		tlog_inode_add_bytes(inode, -(s64)(e->ram_bytes - size));
	}
	btrfs_release_path(&path);
	return err;
}

/* The file ends at @size: drop what lies past it (btrfs_truncate). */
static int shrink(struct tlog_mount *mnt, struct tlog_inode *inode, u64 size)
{
	struct tlog_file_extent *v;
	size_t nr;
	int err;

	err = dirty_cut(inode, size, (u64)-1);
	if (err)
		return err;
	err = collect_extents(mnt, inode, 0, 1, &v, &nr);
	if (err)
		return err;
	if (nr && v[0].type == BTRFS_FILE_EXTENT_INLINE && v[0].start == 0) {
		err = size < v[0].ram_bytes ? truncate_inline(mnt, inode, size, &v[0]) : 0;
		free(v);
		if (err)
			return err;
		/* whatever lies past the inline block goes as for any file */
		return tlog_drop_extents(mnt, inode, sector_up(mnt, size) > mnt->fs->sectorsize ?
				    sector_up(mnt, size) : mnt->fs->sectorsize, (u64)-1);
	}
	free(v);
	return tlog_drop_extents(mnt, inode, sector_up(mnt, size), (u64)-1);
}

int tlog_truncate(struct tlog_mount *mnt, struct tlog_inode *inode, u64 size)
{
	u64 old = i_size(inode);
	bool trimmed = false;	/* extents were cut: btrfs_truncate's extents_found */
	int err = check_regular(inode);

	if (err)
		return err;
	if (size > MAX_LFS_FILESIZE)
		return -EFBIG;
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err)
		err = tlog_inode_kill_privs(mnt, inode);
	if (!err && size > old) {
		err = cont_expand(mnt, inode, old, size);
	} else if (!err) {
		struct tlog_file_extent *v;
		size_t nr;

		/*
		 * btrfs_setsize then btrfs_truncate: the page cache past the
		 * new size goes, the dirty block holding it is written back
		 * (from round_down(size): its own extent), then what the trees
		 * hold past it is dropped.  The same size drops prealloc past
		 * EOF too.
		 */
		btrfs_set_inode_item_size(&inode->item, size);
		err = dirty_cut(inode, size, (u64)-1);
		if (!err && size != old)
			err = tlog_writeback_range(mnt, inode, sector_down(mnt, size), (u64)-1);
		if (!err)
			err = collect_extents(mnt, inode, size, (u64)-1, &v, &nr);
		if (!err) {
			trimmed = nr > 0;
			free(v);
			err = shrink(mnt, inode, size);
		}
	}
	if (err)
		return err;
	/* truncated to nothing: the last close starts writeback (the rewrite-by-replace idiom) */
	if (size == 0)
		inode->flush_on_close = true;
	btrfs_set_inode_item_size(&inode->item, size);
	err = update_disk_i_size(mnt, inode);
	if (err)
		return err;
	data_changed(mnt, inode);
	/*
	 * btrfs_truncate's btrfs_set_inode_full_sync when extents were cut
	 * (a growing truncate has hole maps for the fast path instead):
	 * pessimistic, it takes the last transaction of the inode - this one
	 * - as its last reflink, so the next fsync logs the older extents
	 * below i_size too.
	 */
	if (trimmed) {
		inode->full_sync = true;
		if (inode->last_reflink_trans < inode->last_trans)
			inode->last_reflink_trans = inode->last_trans;
	}
	return 0;
}

/* ---- fallocate ---- */

static int prealloc_range(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end)
{
	while (start < end) {
		u64 len = end - start, bytenr;
		int err;

		if (len > BTRFS_MAX_PREALLOC_SIZE)
			len = BTRFS_MAX_PREALLOC_SIZE;
		err = btrfs_alloc_data_extent_upto(mnt->trans, inode->root, inode->ino, start, len,
						   &bytenr, &len);
		if (!err)
			err = tlog_drop_extents(mnt, inode, start, start + len);
		if (!err)
			err = insert_file_extent(mnt, inode, start, BTRFS_FILE_EXTENT_PREALLOC, bytenr,
						 len, 0, len, len);
		if (err)
			return err;
		/* a new extent map, modified: the next fsync logs it */
		tlog_inode_record_modified(inode, start, start + len, false);
		tlog_inode_add_bytes(inode, (s64)len);
		btrfs_set_inode_item_flags(&inode->item, inode_flags(inode) | BTRFS_INODE_PREALLOC);
		start += len;
	}
	return 0;
}

/* fallocate mode 0 / KEEP_SIZE: preallocate the holes of the range (btrfs_fallocate). */
/* The bytes of [start, end) no extent maps (what fallocate must allocate). */
static int hole_bytes(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end,
		      u64 *ret)
{
	struct tlog_file_extent *v;
	u64 pos = start, holes = 0;
	size_t nr;
	int err = collect_extents(mnt, inode, start, end, &v, &nr);

	if (err)
		return err;
	for (size_t i = 0; i <= nr; i++) {
		u64 next = i < nr ? (v[i].start > start ? v[i].start : start) : end;

		if (i < nr && tlog_extent_is_hole(&v[i]))
			continue;
		if (next > end)
			next = end;
		if (next > pos)
			holes += next - pos;
		if (i < nr && sector_up(mnt, v[i].end) > pos)
			pos = sector_up(mnt, v[i].end);
	}
	free(v);
	*ret = holes;
	return 0;
}

static int allocate_range(struct tlog_mount *mnt, struct tlog_inode *inode, bool keep,
			  u64 off, u64 len)
{
	u64 start = sector_down(mnt, off), end = sector_up(mnt, off + len), old = i_size(inode);
	u64 pos = start;
	struct tlog_file_extent *v;
	size_t nr;
	u64 need;
	int err = hole_bytes(mnt, inode, start, end, &need);

	/* the whole range is reserved before anything changes, as btrfs_fallocate does */
	if (!err && need)
		err = reserve_data_space(mnt, need);
	if (err)
		return err;
	mnt->reserved_bound -= need;	/* taken now, not at writeback */
	if (start > old)
		err = cont_expand(mnt, inode, old, start);
	else if (off + len > old)
		err = truncate_block(mnt, inode, old, 0);
	if (!err)
		err = tlog_writeback_range(mnt, inode, start, end);
	if (!err)
		err = collect_extents(mnt, inode, start, end, &v, &nr);
	if (err)
		return err;
	/* the holes between extents and explicit hole items, merged */
	for (size_t i = 0; !err && i <= nr; i++) {
		bool is_hole = i < nr && v[i].type == BTRFS_FILE_EXTENT_REG && !v[i].disk_bytenr;
		u64 next = i < nr ? (v[i].start > start ? v[i].start : start) : end;

		if (next > end)
			next = end;
		if (is_hole)
			continue;
		if (next > pos)
			err = prealloc_range(mnt, inode, pos, next);
		/* an inline extent ends inside its block, which is not a hole */
		if (i < nr && sector_up(mnt, v[i].end) > pos)
			pos = sector_up(mnt, v[i].end);
	}
	free(v);
	if (err)
		return err;
	if (!keep && off + len > old) {
		btrfs_set_inode_item_size(&inode->item, off + len);
		return update_disk_i_size(mnt, inode);
	}
	return 0;
}

/*
 * The first part of [*@off, *@off + *@len) that is not a hole
 * (find_first_non_hole): only a hole right at the start is skipped.
 * Returns 1 when the whole range is a hole.
 */
static int skip_leading_hole(struct tlog_mount *mnt, struct tlog_inode *inode, u64 *off, u64 *len)
{
	u64 end = *off + *len, hole_end;
	struct tlog_file_extent *v;
	size_t nr, i = 0;
	int err = collect_extents(mnt, inode, *off, end, &v, &nr);

	if (err)
		return err;
	/* the hole at *off ends at the next item that is not an explicit hole */
	if (nr && v[0].start <= *off && !tlog_extent_is_hole(&v[0])) {
		free(v);
		return 0;
	}
	while (i < nr && tlog_extent_is_hole(&v[i]))
		i++;
	hole_end = i < nr ? v[i].start : end;
	free(v);
	if (hole_end >= end)
		return 1;
	if (hole_end > *off) {
		*len = end - hole_end;
		*off = hole_end;
	}
	return 0;
}

/*
 * FALLOC_FL_PUNCH_HOLE | KEEP_SIZE (btrfs_punch_hole).  Returns 1 when
 * nothing changed (the range past EOF or a hole already): then not even
 * the times change.  Partial blocks are zeroed only where they hold
 * something: a hole at the start of the range, or at the start of its
 * partial last block, is skipped.
 */
static int punch_range(struct tlog_mount *mnt, struct tlog_inode *inode, u64 off, u64 len)
{
	u64 size = i_size(inode), ino_size = sector_up(mnt, size), orig = off;
	u64 lockstart, lockend, tail_start, tail_len;
	int err;

	err = tlog_writeback_range(mnt, inode, off, off + len);
	if (err)
		return err;
	/* past EOF only preallocation is there to punch: a hole otherwise */
	err = skip_leading_hole(mnt, inode, &off, &len);
	if (err)
		return err;		/* 1: all of it is a hole already */
	lockstart = sector_up(mnt, off);
	lockend = sector_down(mnt, off + len);	/* exclusive */
	if (sector_down(mnt, off) == sector_down(mnt, off + len - 1) && len < mnt->fs->sectorsize)
		return off < ino_size ? truncate_block(mnt, inode, off, off + len) : 1;
	err = off < ino_size ? truncate_block(mnt, inode, off, 0) : 0;
	if (err)
		return err;
	if (off == orig && lockstart < off + len) {
		/* the whole blocks after the first may be a hole already */
		u64 rest = off + len - lockstart, start = lockstart;

		err = skip_leading_hole(mnt, inode, &start, &rest);
		if (err < 0)
			return err;
		if (err)
			return 0;	/* the head block was zeroed: that is all */
		lockstart = start;
	}
	tail_start = lockend;
	tail_len = off + len - tail_start;
	if (tail_len) {
		u64 ts = tail_start, tl = tail_len;

		err = skip_leading_hole(mnt, inode, &ts, &tl);
		if (err < 0)
			return err;
		if (!err && ts == tail_start && tail_start + tail_len < ino_size)
			err = truncate_block(mnt, inode, tail_start, tail_start + tail_len);
		if (err < 0)
			return err;
	}
	if (lockend <= lockstart)
		return 0;
	/* not clamped to EOF: preallocation past it goes too */
	err = tlog_drop_extents(mnt, inode, lockstart, lockend);
	if (err || lockstart >= ino_size)
		return err;
	/* fill_holes: a hole extent map, modified, and without NO_HOLES its item */
	tlog_inode_record_modified(inode, lockstart, lockend, true);
	if (!no_holes(mnt))
		err = insert_file_extent(mnt, inode, lockstart, BTRFS_FILE_EXTENT_REG, 0, 0, 0,
					 lockend - lockstart, lockend - lockstart);
	return err;
}

int tlog_fallocate(struct tlog_mount *mnt, struct tlog_inode *inode, unsigned int mode,
		   u64 off, u64 len)
{
	int err = check_regular(inode);

	if (err)
		return err == -EINVAL ? -ENODEV : err;
	if (len == 0)
		return -EINVAL;
	if (off > MAX_LFS_FILESIZE || len > MAX_LFS_FILESIZE - off)
		return -EFBIG;
	if ((mode & TLOG_FALLOC_PUNCH_HOLE) && !(mode & TLOG_FALLOC_KEEP_SIZE))
		return -EOPNOTSUPP;
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err)
		err = tlog_inode_kill_privs(mnt, inode);
	if (err)
		return err;
	if (mode & TLOG_FALLOC_PUNCH_HOLE)
		err = punch_range(mnt, inode, off, len);
	else
		err = allocate_range(mnt, inode, mode & TLOG_FALLOC_KEEP_SIZE, off, len);
	if (err)
		return err < 0 ? err : 0;
	/* the extent maps it made are on the modified list: no full sync */
	data_changed(mnt, inode);
	return 0;
}

/* ---- reflink (FICLONE, FICLONERANGE) ---- */

/* A copy of the item @e, for [@file_off, +@num) of @inode, @offset into the extent. */
static int insert_extent_ref(struct tlog_mount *mnt, struct tlog_inode *inode, u64 file_off,
			     const struct tlog_file_extent *e, u64 offset, u64 num)
{
	struct btrfs_file_extent_item fi;
	struct btrfs_key key = { inode->ino, BTRFS_EXTENT_DATA_KEY, file_off };
	int err;

	memset(&fi, 0, sizeof(fi));
	/* a copy of the source's item: its generation too (btrfs_clone) */
	btrfs_set_file_extent_item_generation(&fi, e->generation);
	btrfs_set_file_extent_item_ram_bytes(&fi, e->ram_bytes);
	btrfs_set_file_extent_item_compression(&fi, e->compression);
	btrfs_set_file_extent_item_type(&fi, e->type);
	btrfs_set_file_extent_item_disk_bytenr(&fi, e->disk_bytenr);
	btrfs_set_file_extent_item_disk_num_bytes(&fi, e->disk_num_bytes);
	btrfs_set_file_extent_item_offset(&fi, offset);
	btrfs_set_file_extent_item_num_bytes(&fi, num);
	err = btrfs_add_data_ref(mnt->trans, e->disk_bytenr, e->disk_num_bytes,
				 inode->root->root_key.objectid, inode->ino, file_off - offset);
	if (!err)
		err = btrfs_insert_item(mnt->trans, inode->root, &key, &fi, sizeof(fi));
	if (!err)
		tlog_inode_add_bytes(inode, (s64)num);
	return err;
}

/*
 * An inline extent cloned elsewhere than the start of a file that has no
 * other data (clone_copy_inline_extent): its bytes are copied into the
 * destination's page cache, as runs of equal bytes.
 */
static int copy_inline_to_cache(struct tlog_mount *mnt, struct tlog_inode *src,
				struct tlog_inode *dst, u64 src_off, u64 dst_off, u64 len)
{
	u8 *buf = malloc(len ? len : 1);
	int err;

	if (!buf)
		return -ENOMEM;
	err = read_old_data(mnt, src, i_size(src), buf, src_off, len);
	if (!err)
		err = dirty_set_data(mnt, dst, dst_off, buf, len);
	free(buf);
	return err;
}

/* Whether @dst can take @e's inline item as it is: at 0, no data of its own past it. */
static int can_copy_inline_item(struct tlog_mount *mnt, struct tlog_inode *dst, u64 dst_off,
				const struct tlog_file_extent *e, bool *ret)
{
	struct tlog_file_extent *v;
	size_t nr;
	int err;

	*ret = false;
	if (dst_off != 0 || i_size(dst) > e->ram_bytes)
		return 0;
	err = collect_extents(mnt, dst, mnt->fs->sectorsize, (u64)-1, &v, &nr);
	if (err)
		return err;
	*ret = nr == 0;
	free(v);
	return 0;
}

static int clone_inline(struct tlog_mount *mnt, struct tlog_inode *src, struct tlog_inode *dst,
			const struct tlog_file_extent *e, u64 dst_off)
{
	struct btrfs_key key = { src->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_path path;
	bool copy;
	int err = can_copy_inline_item(mnt, dst, dst_off, e, &copy);

	if (err)
		return err;
	if (!copy)
		return copy_inline_to_cache(mnt, src, dst, 0, dst_off, e->ram_bytes);
	err = tlog_drop_extents(mnt, dst, 0, mnt->fs->sectorsize);
	btrfs_init_path(&path);
	if (!err)
		err = btrfs_search_slot(src->root, &key, &path);
	if (err > 0)
		err = -EUCLEAN;
	if (!err) {
		u32 size = btrfs_item_size(path.nodes[0], path.slots[0]);
		u8 *buf = malloc(size);

		if (!buf) {
			err = -ENOMEM;
		} else {
			memcpy(buf, btrfs_item_ptr(path.nodes[0], path.slots[0]), size);
			btrfs_release_path(&path);
			btrfs_set_file_extent_item_generation((void *)buf, mnt->trans->transid);
			key.objectid = dst->ino;
			err = btrfs_insert_item(mnt->trans, dst->root, &key, buf, size);
			free(buf);
			if (!err)
				tlog_inode_add_bytes(dst, (s64)e->ram_bytes);
		}
	}
	btrfs_release_path(&path);
	return err;
}

/* The clone itself: every item of [off, off + len) of @src, referenced at @dst_off of @dst. */
static int clone_extents(struct tlog_mount *mnt, struct tlog_inode *src, u64 off, u64 len,
			 struct tlog_inode *dst, u64 dst_off)
{
	u64 end = off + len, pos = dst_off;
	struct tlog_file_extent *v;
	size_t nr;
	int err = collect_extents(mnt, src, off, end, &v, &nr);

	if (err)
		return err;
	if (!err)
		err = tlog_drop_extents(mnt, dst, dst_off, dst_off + len);
	for (size_t i = 0; !err && i < nr; i++) {
		const struct tlog_file_extent *e = &v[i];
		u64 s = e->start > off ? e->start : off, t = e->end < end ? e->end : end;
		u64 at = dst_off + (s - off);

		if (e->type == BTRFS_FILE_EXTENT_INLINE) {
			err = clone_inline(mnt, src, dst, e, at);
			pos = sector_up(mnt, at + e->ram_bytes);
			continue;
		}
		if (s >= t)
			continue;
		if (!no_holes(mnt) && at > pos)
			err = insert_file_extent(mnt, dst, pos, BTRFS_FILE_EXTENT_REG, 0, 0, 0,
						 at - pos, at - pos);
		if (!err && e->disk_bytenr)
			err = insert_extent_ref(mnt, dst, at, e, e->offset + (s - e->start), t - s);
		else if (!err && !no_holes(mnt))
			err = insert_file_extent(mnt, dst, at, BTRFS_FILE_EXTENT_REG, 0, 0, 0, t - s,
						 t - s);
		pos = at + (t - s);
	}
	if (!err && !no_holes(mnt) && pos < dst_off + len)
		err = insert_file_extent(mnt, dst, pos, BTRFS_FILE_EXTENT_REG, 0, 0, 0,
					 dst_off + len - pos, dst_off + len - pos);
	free(v);
	return err;
}

/* The refusals that depend on the files alone. */
static int check_clone_files(struct tlog_mount *mnt, struct tlog_inode *src,
			     struct tlog_inode *dst)
{
	int err = check_regular(src);

	(void)mnt;
	if (!err)
		err = check_regular(dst);
	if (err)
		return err;
	if (src->root->fs != dst->root->fs)
		return -EXDEV;
	if ((inode_flags(src) ^ inode_flags(dst)) & BTRFS_INODE_NODATASUM)
		return -EINVAL;
	return 0;
}

/*
 * Where btrfs_wait_ordered_range(@start, @len) ends: at @start + @len,
 * at the end of the file when that wraps - or when @len is 0 at offset 0,
 * where its last byte, @start + @len - 1, wraps too - and nowhere past
 * @start otherwise (it waits for no range at all).
 */
static u64 ordered_range_end(u64 start, u64 len)
{
	if (start + len < start || (len == 0 && start == 0))
		return (u64)-1;
	return start + len;
}

/*
 * Written back before anything is shared, and before the checks of the
 * ranges (generic_remap_checks, check_clone() here), which come after
 * btrfs_remap_file_range_prep's flush in the kernel: a clone those refuse
 * has flushed already (seen on 6.18: the dirty data of a FICLONE of a
 * file onto itself, refused with EINVAL, is in the next commit).  The
 * whole source file, as the prep flushes it all (so that NOCOW writes
 * reach the disk as NOCOW before the extents gain a reference), then the
 * destination from the arguments as given: their length, or for 0 the
 * source's size from @off rounded out to sectors (a source offset past
 * its end wraps that to the end of the destination; an empty source
 * cloned to offset 0 flushes the whole destination, the wrap above).
 */
static int flush_clone_ranges(struct tlog_mount *mnt, struct tlog_inode *src, u64 off, u64 len,
			      struct tlog_inode *dst, u64 dst_off)
{
	u64 start = sector_down(mnt, dst_off), wb_len, end;
	int err = tlog_mount_trans(mnt, &mnt->trans);

	if (len)
		wb_len = sector_up(mnt, len);
	else
		wb_len = sector_up(mnt, i_size(src)) - sector_down(mnt, off);
	end = ordered_range_end(start, wb_len);
	if (!err)
		err = tlog_writeback_inode(mnt, src);
	if (!err && end > start)
		err = tlog_writeback_range(mnt, dst, start, end);
	return err;
}

/*
 * btrfs_clone_files: a clone past the destination's EOF grows it first,
 * and the block at the old EOF, zeroed past it, is written back and
 * waited for before the extents are cloned - the kernel must not clone
 * next to an extent that writeback is still replacing.  So that block
 * is on disk in this transaction, not left dirty for a later flush.
 */
static int clone_expand(struct tlog_mount *mnt, struct tlog_inode *dst, u64 dst_off)
{
	u64 old = i_size(dst);
	int err = cont_expand(mnt, dst, old, dst_off);

	if (!err)
		err = tlog_writeback_range(mnt, dst, sector_down(mnt, old), dst_off);
	return err;
}

/* generic_remap_checks: the clone's other refusals. */
static int check_clone(struct tlog_mount *mnt, struct tlog_inode *src, u64 off, u64 *len,
		       struct tlog_inode *dst, u64 dst_off, u64 *alen)
{
	u64 bs = mnt->fs->sectorsize, size = i_size(src);

	if (*len == 0)
		*len = off < size ? size - off : 0;
	if (off > size || *len > size - off || off % bs || dst_off % bs)
		return -EINVAL;
	if (*len > MAX_LFS_FILESIZE - dst_off)
		return -EFBIG;
	*alen = *len;
	if (*len % bs) {
		/*
		 * An unaligned length only up to the end of the source, and
		 * its partial last block never into the middle of the
		 * destination: the bytes past the source's EOF would show.
		 */
		if (off + *len != size || dst_off + *len < i_size(dst))
			return -EINVAL;
		*alen = sector_up(mnt, size) - off;
	}
	if (src == dst && off < dst_off + *alen && dst_off < off + *alen)
		return -EINVAL;
	return 0;
}

int tlog_clone_range(struct tlog_mount *mnt, struct tlog_inode *src, u64 off, u64 len,
		     struct tlog_inode *dst, u64 dst_off)
{
	u64 alen, end;
	int err = check_clone_files(mnt, src, dst);

	if (!err)
		err = flush_clone_ranges(mnt, src, off, len, dst, dst_off);
	if (!err)
		err = check_clone(mnt, src, off, &len, dst, dst_off, &alen);
	if (err || len == 0)
		return err;
	/* the destination's page cache over the range is replaced */
	err = dirty_cut(dst, dst_off, dst_off + alen);
	if (!err && dst_off > i_size(dst))
		err = clone_expand(mnt, dst, dst_off);
	if (!err)
		err = clone_extents(mnt, src, off, alen, dst, dst_off);
	if (err)
		return err;
	end = dst_off + len;
	if (end > i_size(dst)) {
		btrfs_set_inode_item_size(&dst->item, end);
		err = update_disk_i_size(mnt, dst);
		if (err)
			return err;
	}
	dst->last_reflink_trans = mnt->trans->transid;
	dst->full_sync = true;
	data_changed(mnt, dst);
	return 0;
}
