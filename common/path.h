/* SPDX-License-Identifier: GPL-2.0-only */
/* Paths inside images: the --subvol option, resolving, opening files. */
#ifndef TLOG_PATH_H
#define TLOG_PATH_H

#include "file.h"
#include "inode.h"

/*
 * Resolve @path in @fs starting at subvolume @subvol (0: the top level).
 * Prints one error line on failure and returns -errno.
 */
int resolve_image_path(struct tlog_fs *fs, u64 subvol, const char *image,
		       const char *path, struct tlog_ino *ret);

/* Parse the argument of --subvol; prints an error and returns -EINVAL. */
int parse_subvol_arg(const char *arg, u64 *ret);

/*
 * Resolve @path and open it as a regular file for queries.  Directories,
 * symlinks and special files are refused with one error line.
 */
int open_image_file(struct tlog_fs *fs, u64 subvol, const char *image,
		    const char *path, struct tlog_file **ret);

#endif
