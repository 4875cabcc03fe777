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
 * or a full commit where the kernel falls back to one.
 * Each full commit's reason goes into mnt->stats.
 */
int btrfs_sync_file(struct tlog_mount *mnt, struct tlog_inode *inode, bool datasync);

/*
 * btrfs_del_dir_entries_in_log and btrfs_del_inode_ref_in_log: the name
 * (@name, @index) of @inode left @dir (not by a rename): when either was
 * logged in this transaction, the log loses that name too.
 */
void btrfs_log_unlink(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *inode,
		      const char *name, u16 len, u64 index);

/*
 * btrfs_log_new_name: @inode got a name by link (@old_dir NULL) or by a
 * rename from (@old_dir, @old_name, @old_index).  When it or @old_dir
 * was logged in this transaction, the log gets the new name (the inode
 * logged as existing, with what replay needs of its parents) and loses
 * the old one; the log is not synced.  A failure leaves the transaction
 * needing a full commit at the next fsync.
 */
void btrfs_log_new_name(struct tlog_mount *mnt, struct tlog_inode *inode,
			struct tlog_inode *old_dir, const char *old_name, u16 old_len,
			u64 old_index);

#endif
