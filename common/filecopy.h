/* SPDX-License-Identifier: GPL-2.0-only */
/* Copying an image file cheaply: a reflink where the host allows it. */
#ifndef TLOG_COMMON_FILECOPY_H
#define TLOG_COMMON_FILECOPY_H

#include <stdbool.h>

/*
 * Copy regular file @src to @dst (created, or truncated): a reflink
 * (FICLONE) when both are on a filesystem that shares extents (btrfs,
 * XFS), else a sparse copy of the data ranges SEEK_DATA/SEEK_HOLE find,
 * so that a mostly empty image costs what it holds.  *@cloned (may be
 * NULL) tells which.  0 or -errno; a failed copy removes @dst.
 */
int copy_file_sparse(const char *src, const char *dst, bool *cloned);

#endif
