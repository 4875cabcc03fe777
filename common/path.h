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

struct cmd_common;

/*
 * What every path command does first: open @image as the common options
 * say (--super) and resolve @path (from --subvol).  On failure one error
 * line is printed, nothing is left open, and -errno is returned.
 */
int cmd_open_path(const struct cmd_common *common, const char *image, const char *path,
		  struct tlog_fs **fs, struct tlog_ino *ino);
/* The same, opening @path as a regular file for queries. */
int cmd_open_file(const struct cmd_common *common, const char *image, const char *path,
		  struct tlog_fs **fs, struct tlog_file **file);

/*
 * Resolve @path and open it as a regular file for queries.  Directories,
 * symlinks and special files are refused with one error line.
 */
int open_image_file(struct tlog_fs *fs, u64 subvol, const char *image,
		    const char *path, struct tlog_file **ret);

#endif
