/* SPDX-License-Identifier: GPL-2.0-only */
/* The --subvol option: which tree paths start from. */
#ifndef TLOG_SUBVOL_H
#define TLOG_SUBVOL_H

#include "inode.h"

/*
 * Resolve @path in @fs starting at subvolume @subvol (0: the top level).
 * Prints one error line on failure and returns -errno.
 */
int resolve_image_path(struct tlog_fs *fs, u64 subvol, const char *image,
		       const char *path, struct tlog_ino *ret);

/* Parse the argument of --subvol; prints an error and returns -EINVAL. */
int parse_subvol_arg(const char *arg, u64 *ret);

#endif
