/* SPDX-License-Identifier: GPL-2.0-only */
/* Writing data and keeping its checksums in the csum tree (file-item.c). */
#ifndef TLOG_FILE_ITEM_H
#define TLOG_FILE_ITEM_H

#include <stddef.h>
#include "transaction.h"

/* Write data into space allocated in this transaction (all copies). */
int btrfs_write_data(struct tlog_trans *trans, u64 bytenr, const void *buf, size_t len);
/*
 * btrfs_write_data() for data that is also the bytes of @src_fd at
 * @src_off (mkfs --reflink): in each copy, the whole 4 KiB blocks are
 * cloned from @src_fd where the device can (tlog_bdev_clone_from) and the
 * source and the copy are aligned alike, up to the source's last whole
 * block; the rest (the zeros padding the last sector past the source's
 * end included), and everything where the device cannot clone, is
 * written from @buf, which holds all @len bytes.  *@cloned (may be
 * NULL) gets the logical bytes cloned in every copy (counted once, not
 * per copy).
 */
int btrfs_clone_data(struct tlog_trans *trans, u64 bytenr, int src_fd, u64 src_off,
		     const void *buf, size_t len, u64 *cloned);
/* Checksum @len bytes of data written at @bytenr into the csum tree. */
int btrfs_insert_data_csums(struct tlog_trans *trans, u64 bytenr, const void *data, u64 len);
/* Insert @sectors checksums (csum_size bytes each) for the data at @bytenr. */
int btrfs_insert_csums(struct tlog_trans *trans, u64 bytenr, const u8 *csums, u64 sectors);
/*
 * Replace the checksums of [start, end) in the csum tree by those @src (a
 * log tree) holds for that range, piece by piece; ranges @src does not
 * cover are left alone.  *@copied gets the bytes covered.
 */
int btrfs_copy_csums(struct tlog_trans *trans, struct btrfs_root *src, u64 start, u64 end,
		     u64 *copied);
/*
 * Log the data checksums of [start, end): the log tree @log's own for the
 * range are replaced by what the csum tree holds (the kernel's log_csums).
 * *@copied gets the bytes covered.
 */
int btrfs_log_csums(struct tlog_trans *trans, struct btrfs_root *log, u64 start, u64 end,
		    u64 *copied);
/* Remove the checksums of [bytenr, bytenr + len), splitting items that overlap. */
int btrfs_delete_data_csums(struct tlog_trans *trans, u64 bytenr, u64 len);

#endif
