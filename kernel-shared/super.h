/* SPDX-License-Identifier: GPL-2.0-only */
/* The superblock: reading, validating, choosing and writing its copies. */
#ifndef TLOG_SUPER_H
#define TLOG_SUPER_H

#include <stdbool.h>
#include "ctree.h"

struct tlog_bdev;

/* Returned when no btrfs magic is found where the superblock should be. */
#define TLOG_ENOTBTRFS EMEDIUMTYPE

/*
 * Read the superblock copy @mirror raw, without validation.  Returns 0,
 * -ENOENT when the copy lies past the end of the device, -TLOG_ENOTBTRFS
 * when the magic is wrong, or another -errno.
 */
int btrfs_read_super_raw(struct tlog_bdev *bdev, int mirror,
			 struct btrfs_super_block *sb);
/* Whether the checksum of @sb is valid (false for unknown csum types). */
bool btrfs_super_csum_ok(const struct btrfs_super_block *sb);
/*
 * Check a superblock as the kernel does at mount.  @mirror is the copy it
 * came from (its bytenr must match).  0 or -EUCLEAN/-EOPNOTSUPP with reason.
 */
int btrfs_validate_super(const struct btrfs_super_block *sb, int mirror);
/*
 * Pick the superblock to use: @mirror >= 0 forces one; -1 takes the
 * primary, as the kernel does, and only when it is damaged the newest
 * valid other copy, saying why into @damage (@size bytes; may be NULL).
 * Sets *@used to the copy chosen.
 */
int btrfs_load_super(struct tlog_bdev *bdev, int mirror,
		     struct btrfs_super_block *sb, int *used, char *damage, size_t size);

/*
 * Write @sb to every copy that fits the device its dev_item describes,
 * each with its own bytenr and checksum, primary first, on @bdev (mkfs has
 * no tlog_fs yet).  @sb is left with the last copy's bytenr.  The caller
 * flushes around it.
 */
int btrfs_write_supers(struct tlog_bdev *bdev, struct btrfs_super_block *sb);
/*
 * The same limited to the first @max_mirrors copies: a log sync writes
 * the primary alone (the kernel's write_all_supers(fs_info, 1)), so the
 * other copies keep log_root 0.
 */
int btrfs_write_super_copies(struct tlog_bdev *bdev, struct btrfs_super_block *sb,
			     int max_mirrors);
/* The same for fs->super, which keeps the bytenr of the copy it came from. */
int btrfs_write_all_supers(struct tlog_fs *fs);

/* The trees a backup root slot records, in this order. */
enum {
	TLOG_BACKUP_TREE_ROOT,
	TLOG_BACKUP_CHUNK_ROOT,
	TLOG_BACKUP_EXTENT_ROOT,
	TLOG_BACKUP_FS_ROOT,
	TLOG_BACKUP_DEV_ROOT,
	TLOG_BACKUP_CSUM_ROOT,
	TLOG_BACKUP_NR,
};

struct tlog_backup_tree {
	u64 bytenr;
	u64 generation;
	u8 level;
};

/*
 * Fill backup root slot @b with @trees and the sizes @sb records (total
 * and used bytes, devices): what mkfs and every commit leave behind for a
 * mount with -o usebackuproot.  Which slot is the caller's choice.
 */
void btrfs_set_backup_root(struct btrfs_root_backup *b, const struct btrfs_super_block *sb,
			   const struct tlog_backup_tree trees[TLOG_BACKUP_NR]);

#endif
