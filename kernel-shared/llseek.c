// SPDX-License-Identifier: GPL-2.0-only
/*
 * SEEK_DATA and SEEK_HOLE with btrfs's answers (the kernel's
 * find_desired_extent; Documentation/design/fiemap-seek.md):
 * regular and inline extents are data; prealloc extents, explicit hole
 * items and gaps between items are holes; everything from i_size on is the
 * hole at EOF.  Results are the offset asked for, an item boundary, or
 * i_size, never rounded.
 */
#include <errno.h>

#include "errctx.h"
#include "file.h"
#include "misc.h"

/* Where data of @ext ends for SEEK purposes (inline data runs to its sector end). */
static u64 data_end(const struct tlog_file *file, const struct tlog_file_extent *ext)
{
	u32 ss = file->fs->sectorsize;

	if (ext->type == BTRFS_FILE_EXTENT_INLINE)
		return ext->start + round_up(ext->end - ext->start, ss);
	return ext->end;
}

static int seek_data(struct tlog_file *file, u64 offset, u64 *ret)
{
	int err = tlog_file_cursor_seek(file, offset);

	while (err == 0) {
		const struct tlog_file_extent *ext = &file->cur.ext;

		if (ext->start >= file->size)
			break;
		if (tlog_extent_is_data(ext) && data_end(file, ext) > offset) {
			*ret = ext->start > offset ? ext->start : offset;
			return 0;
		}
		err = tlog_file_cursor_next(file);
	}
	return err < 0 ? err : -ENXIO;
}

static int seek_hole(struct tlog_file *file, u64 offset, u64 *ret)
{
	u64 pos = offset;
	int err;

	/*
	 * The kernel's shortcut: with no prealloc and every byte up to i_size
	 * accounted for in nbytes, there is no hole before EOF.
	 */
	if (!(btrfs_inode_item_flags(&file->inode) & BTRFS_INODE_PREALLOC) &&
	    btrfs_inode_item_nbytes(&file->inode) == file->size) {
		*ret = file->size;
		return 0;
	}

	err = tlog_file_cursor_seek(file, pos);
	while (err == 0 && pos < file->size) {
		const struct tlog_file_extent *ext = &file->cur.ext;

		/* a gap before the next item, or a hole or prealloc item */
		if (ext->start > pos || !tlog_extent_is_data(ext))
			break;
		pos = data_end(file, ext);
		err = tlog_file_cursor_next(file);
	}
	if (err < 0)
		return err;
	*ret = pos < file->size ? pos : file->size;
	return 0;
}

int tlog_file_seek(struct tlog_file *file, s64 offset, int whence, u64 *ret)
{
	tlog_error_clear();
	if (whence != TLOG_SEEK_DATA && whence != TLOG_SEEK_HOLE)
		return -EINVAL;
	if (offset < 0) {
		/*
		 * btrfs starts the search at 0 but compares the data it finds
		 * with the negative offset as unsigned: SEEK_DATA always fails,
		 * SEEK_HOLE answers as for 0.
		 */
		if (whence == TLOG_SEEK_DATA || file->size == 0)
			return -ENXIO;
		offset = 0;
	}
	if ((u64)offset >= file->size)
		return -ENXIO;
	if (whence == TLOG_SEEK_DATA)
		return seek_data(file, offset, ret);
	return seek_hole(file, offset, ret);
}
