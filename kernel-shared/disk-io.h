/* SPDX-License-Identifier: GPL-2.0-only */
/* Superblock access and validation. */
#ifndef TLOG_DISK_IO_H
#define TLOG_DISK_IO_H

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
 * Write fs->super to every copy that fits the device, each with its own
 * bytenr and checksum, primary first.  The caller flushes around it.
 */
int btrfs_write_all_supers(struct tlog_fs *fs);

/* Verify a tree block image (checksum and header) read for @bytenr. */
int btrfs_check_tree_block(struct tlog_fs *fs, const u8 *buf, u64 bytenr);
/* The same without the checksum: header and item layout only. */
int btrfs_check_tree_block_layout(struct tlog_fs *fs, const u8 *buf, u64 bytenr);

#endif
