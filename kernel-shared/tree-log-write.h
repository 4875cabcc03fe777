/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Writing the fsync log as the kernel does (fs/btrfs/file.c btrfs_sync_file,
 * tree-log.c btrfs_log_inode and friends), over the inode operations of
 * inode-ops.h and the transaction's log trees (transaction.h).
 */
#ifndef TLOG_TREE_LOG_WRITE_H
#define TLOG_TREE_LOG_WRITE_H

#include <stdbool.h>
#include "inode-ops.h"

/*
 * fsync(2) / fdatasync(2) of @inode (6.18 logs both alike): its data
 * written back; nothing more when the last commit or log has it all;
 * otherwise the inode (and its new ancestors) logged and the log synced,
 * or a full commit where the kernel falls back to one - or where this
 * logger does not log yet, with a reason starting "(not logged yet)".
 * Each full commit's reason goes into mnt->stats.
 */
int btrfs_sync_file(struct tlog_mount *mnt, struct tlog_inode *inode, bool datasync);

/*
 * A name of @inode went or came, or one went from directory @dir (may be
 * NULL): when either was logged in this transaction its log is out of
 * date, and updating it (btrfs_log_new_name, btrfs_del_*_in_log) is not
 * done yet - the transaction needs a full commit at the next fsync.
 */
void btrfs_log_name_changed(struct tlog_mount *mnt, struct tlog_inode *dir,
			    struct tlog_inode *inode);

#endif
