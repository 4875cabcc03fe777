/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Item checks, as the kernel's tree-checker applies them to every leaf it
 * reads.  A leaf whose checksum and layout are fine can still hold items
 * the kernel refuses (an inode without a file type, an inline extent whose
 * length disagrees with its item); a writer that accepted them would
 * replay a log the kernel cannot mount into an image btrfs check rejects.
 *
 * A finding is recorded in the error context with its place: tree, block,
 * slot, key, and what is wrong.
 */
#ifndef TLOG_TREE_CHECKER_H
#define TLOG_TREE_CHECKER_H

#include "ctree.h"

/*
 * Check the item at @slot of @leaf, owned by tree @owner (a log tree for
 * subvolume @owner's log: pass the log's objectid).  @prev is the key of
 * the item before it in the same leaf, or NULL for slot 0: file extents
 * may not overlap their predecessor.  Returns 0 or -EUCLEAN.
 */
int btrfs_check_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
		     const struct btrfs_key *key, const struct btrfs_key *prev);

/* ---- extents, references, checksums ---- */

/* One EXTENT_DATA item, decoded. */
struct tlog_file_extent {
	u64 start;		/* key.offset: file offset of the item */
	u64 end;		/* start + num_bytes; inline: start + ram_bytes */
	u64 generation;
	u64 ram_bytes;
	u64 disk_bytenr;	/* 0 for holes and inline */
	u64 disk_num_bytes;
	u64 offset;		/* into the (decompressed) extent */
	u64 num_bytes;		/* 0 for inline */
	u8 type;		/* BTRFS_FILE_EXTENT_{INLINE,REG,PREALLOC} */
	u8 compression;		/* BTRFS_COMPRESS_* */
	u8 encryption;
	u16 other_encoding;
	u32 item_size;
	const u8 *inline_data;	/* inline payload, valid as long as the leaf is */
	u32 inline_len;		/* bytes of payload on disk (compressed or not) */
};

/*
 * The fields of a file extent item of @size bytes at @ptr, keyed at file
 * offset @key_offset, read without judging their values: for printers and
 * for the checks below, which share this one layout.  Returns -EUCLEAN,
 * with no finding, when the item cannot hold the fields of its type (the
 * header for any type, the whole item for all but inline); what it holds
 * is filled even then.
 */
int btrfs_parse_file_extent(const void *ptr, u32 size, u64 key_offset,
			    struct tlog_file_extent *ret);
/* btrfs_parse_file_extent() of the item at @slot, with a finding when it is cut short. */
int btrfs_read_file_extent(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
			   struct tlog_file_extent *ret);
/*
 * Decode the file extent item at @slot and judge it by the kernel's rules
 * (all of btrfs_check_item()'s but the overlap with the item before it).
 * Returns 0 or -EUCLEAN with a finding.
 */
int btrfs_decode_file_extent(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			     const struct btrfs_key *key, struct tlog_file_extent *ret);

#endif
