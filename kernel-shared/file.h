/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Open files of an image and the file extent cursor.
 *
 * A struct tlog_file is the offline counterpart of an open file
 * description: it holds the inode item and a cursor over the inode's
 * EXTENT_DATA items that is kept between calls.  Successive queries that
 * move forward (the cp/tar pattern of SEEK_DATA at the last hole, SEEK_HOLE
 * at the last data, or a fiemap or read walk) reuse the cursor's leaf and
 * cost amortised O(1) each, instead of a root-to-leaf search per call --
 * the offline analogue of the kernel caching extent state across lseek
 * calls on one open file.
 */
#ifndef TLOG_FILE_H
#define TLOG_FILE_H

#include <sys/types.h>

#include "ctree.h"
#include "inode.h"
#include "tree-checker.h"

static inline bool tlog_extent_is_hole(const struct tlog_file_extent *e)
{
	return e->type == BTRFS_FILE_EXTENT_REG && e->disk_bytenr == 0;
}

/* Data that SEEK_DATA and reads see as written (not holes, not prealloc). */
static inline bool tlog_extent_is_data(const struct tlog_file_extent *e)
{
	return e->type == BTRFS_FILE_EXTENT_INLINE ||
	       (e->type == BTRFS_FILE_EXTENT_REG && e->disk_bytenr != 0);
}

struct tlog_extent_cursor {
	struct btrfs_path path;
	bool valid;			/* positioned on an item of the inode */
	struct tlog_file_extent ext;	/* the item at the cursor */
	/*
	 * Offsets in [gap_start, ext.start) lie in the gap before the item:
	 * the end of the previous item, 0 when the item is the inode's first,
	 * ext.start when that is not known.
	 */
	u64 gap_start;
	u64 nr_searches;		/* root-to-leaf searches, for tests and benchmarks */
	u64 nr_steps;			/* items stepped over */
};

struct tlog_file {
	struct tlog_fs *fs;
	struct btrfs_root *root;
	u64 ino;
	struct btrfs_inode_item inode;
	u64 size;			/* i_size */
	u32 mode;
	struct tlog_extent_cursor cur;
	void *read_cache;		/* file-read.c's buffers, made on first read */
};

/* Open the inode @ino of @root.  Returns 0 or -errno. */
int tlog_file_open(struct tlog_fs *fs, struct btrfs_root *root, u64 ino,
		   struct tlog_file **ret);
void tlog_file_close(struct tlog_file *file);

/*
 * Position the cursor on the item that contains @offset or, if none does,
 * the first item after it.  Returns 0 when positioned, 1 when the inode has
 * no item at or after @offset, or -errno (-EUCLEAN for a malformed item).
 */
int tlog_file_cursor_seek(struct tlog_file *file, u64 offset);
/* Move to the next item of the inode: 0, 1 at the end, or -errno. */
int tlog_file_cursor_next(struct tlog_file *file);
/*
 * The end of the last item that is not an explicit hole (inline items count
 * with their sector-aligned end), 0 if there is none.  FIEMAP's LAST flag
 * depends on it.
 */
int tlog_file_last_extent_end(struct tlog_file *file, u64 *ret);

/* ---- SEEK_DATA / SEEK_HOLE (llseek.c) ---- */

#define TLOG_SEEK_DATA 3
#define TLOG_SEEK_HOLE 4

/*
 * lseek(fd, @offset, @whence) as btrfs answers it on the mounted image.
 * Returns 0 with *@ret set, -ENXIO past the data (or past i_size), -EINVAL
 * for a bad @whence, or another -errno.
 */
int tlog_file_seek(struct tlog_file *file, s64 offset, int whence, u64 *ret);

/* ---- FIEMAP (fiemap.c) ---- */

#define TLOG_FIEMAP_FLAG_SYNC		0x1
#define TLOG_FIEMAP_EXTENT_LAST		0x1
#define TLOG_FIEMAP_EXTENT_ENCODED	0x8
#define TLOG_FIEMAP_EXTENT_NOT_ALIGNED	0x100
#define TLOG_FIEMAP_EXTENT_DATA_INLINE	0x200
#define TLOG_FIEMAP_EXTENT_UNWRITTEN	0x800
#define TLOG_FIEMAP_EXTENT_SHARED	0x2000

struct tlog_fiemap_extent {
	u64 logical;
	u64 physical;
	u64 length;
	u32 flags;
};

struct tlog_fiemap_request {
	u64 start;		/* fm_start */
	u64 length;		/* fm_length; ~0 for "to the end" */
	u32 flags;		/* fm_flags; on -EBADR the rejected bits */
	u32 extent_count;	/* fm_extent_count; 0 counts only */
	u32 mapped_extents;	/* out: fm_mapped_extents */
};

/*
 * FS_IOC_FIEMAP as btrfs answers it.  @extents has room for
 * req->extent_count entries (may be NULL in count mode).  Returns 0, -EBADR
 * (unsupported flags, left in req->flags), -EINVAL, -EFBIG or another -errno.
 */
int tlog_file_fiemap(struct tlog_file *file, struct tlog_fiemap_request *req,
		     struct tlog_fiemap_extent *extents);
/*
 * FIEMAP of [@start, @start + @length) with room for every extent: the
 * answer of one request whose fm_extent_count is large enough.  *@ret is
 * allocated (free() it).
 */
int tlog_file_fiemap_all(struct tlog_file *file, u64 start, u64 length,
			 struct tlog_fiemap_extent **ret, u32 *nr);
/*
 * The same answer handed to @fn one extent at a time, in order, as the
 * walk finds it: a map of millions of extents needs no array.  @fn returns
 * 0 to go on or a negative errno, which ends the walk and is returned.
 */
typedef int (*tlog_fiemap_fn)(const struct tlog_fiemap_extent *ext, void *arg);
int tlog_file_fiemap_each(struct tlog_file *file, u64 start, u64 length, tlog_fiemap_fn fn,
			  void *arg);

/* ---- reading data and verifying checksums (file-read.c) ---- */

/*
 * pread(2) on the file as the mounted filesystem answers it: holes, gaps
 * and prealloc read as zeros, compressed and inline extents are decoded,
 * nothing at or past i_size is returned.  Returns the bytes read (short
 * only at i_size, 0 at or past it) or -errno: -EUCLEAN with context naming
 * the inode and file offset for a malformed or undecodable extent.
 * Sequential reads move the file's extent cursor forward and reuse the
 * last decompressed extent.
 */
ssize_t tlog_file_pread(struct tlog_file *file, void *buf, size_t len, u64 offset);

/*
 * Check the data checksums of every written extent of the file below
 * i_size (the referenced sectors of uncompressed extents, the whole
 * on-disk extent of compressed ones).  Inodes with NODATASUM have none to
 * check.  Returns 0 if all match; -EBADMSG for a mismatch or -ENODATA for
 * a sector without a checksum, with *@bad_offset set to the first file
 * offset affected (a sector start; the extent start for compressed data);
 * or another -errno.
 */
int tlog_file_verify(struct tlog_file *file, u64 *bad_offset);

/* Free what reads cached in @file; tlog_file_close() calls it. */
void tlog_file_read_release(struct tlog_file *file);

#endif
