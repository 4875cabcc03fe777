/* SPDX-License-Identifier: GPL-2.0-only */
/* Opening targets for commands: clear errors, libblkid probing. */
#ifndef TLOG_OPEN_H
#define TLOG_OPEN_H

#include <stddef.h>
#include "ctree.h"

/*
 * Open @path with @opts.  On failure prints one error line (naming the
 * filesystem libblkid finds when it is not btrfs) and returns -errno.
 */
int open_image(const char *path, const struct tlog_open_opts *opts, struct tlog_fs **ret);

/*
 * Name what libblkid finds on @path ("ext4", "xfs", "dos partition table"),
 * into @buf.  Returns 0 if something was found, -ENOENT otherwise.
 */
int probe_signature(const char *path, char *buf, size_t size);

#endif
