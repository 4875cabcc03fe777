/* SPDX-License-Identifier: GPL-2.0-only */
/* Log trees: what they hold, and discarding them. */
#ifndef TLOG_TREE_LOG_H
#define TLOG_TREE_LOG_H

#include "ctree.h"

/* Inodes and subvolumes with items in the log (0 and 0 without a log). */
int btrfs_count_logged_inodes(struct tlog_fs *fs, u64 *inodes, u64 *subvols);

/*
 * Forget the log, as `btrfs rescue zero-log` does: the superblock's
 * log_root and log_root_level are cleared and every copy rewritten.  The
 * log's blocks were never in the extent tree, so nothing else changes;
 * every fsync since the last commit is lost.
 */
int btrfs_discard_log(struct tlog_fs *fs);

#endif
