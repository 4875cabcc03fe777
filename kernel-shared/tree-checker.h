/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a valid tree block and a valid item are: one decoder and validator
 * per item type, with the rules the kernel's tree-checker applies to every
 * leaf it reads, and the block header and leaf/node layout checks.  Every
 * reader decodes through here, so one item gets one verdict from every
 * command; printers use the same decoders in a tolerant mode.
 *
 * A leaf whose checksum and layout are fine can still hold items the
 * kernel refuses (an inode without a file type, an inline extent whose
 * length disagrees with its item); a writer that accepted them would
 * replay a log the kernel cannot mount into an image btrfs check rejects.
 *
 * A finding is recorded with its place (tree, block, slot, key) and what
 * is wrong, in a struct tlog_finding and as the error context's text.
 *
 * Sections: item dispatch and block layout; inodes, names, roots, block
 * groups, devices and free space; extents, references and checksums.
 */
#ifndef TLOG_TREE_CHECKER_H
#define TLOG_TREE_CHECKER_H

#include "ctree.h"
#include "inode.h"

/*
 * One thing wrong with one item: where it is (the tree owning the leaf,
 * the block, the slot and the item's key), what kind of item and what is
 * wrong.  The error context holds the same as text:
 *   "TREE block B slot S key (o t off): kind: what".
 */
struct tlog_finding {
	u64 tree;
	u64 block;
	int slot;
	struct btrfs_key key;
	char kind[32];
	char what[192];
};

/* The newest finding of this thread (zeroes before the first). */
const struct tlog_finding *tlog_last_finding(void);

/*
 * Check the item at @slot of @leaf with the decoder of its type.  @prev is
 * the key of the item before it in the same leaf, or NULL for slot 0: file
 * extents may not overlap their predecessor.  Returns 0 or -EUCLEAN.
 */
int btrfs_check_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
		     const struct btrfs_key *key, const struct btrfs_key *prev);

/* Verify a tree block image (checksum, header and layout) read for @bytenr. */
int btrfs_check_tree_block(struct tlog_fs *fs, const u8 *buf, u64 bytenr);
/* The same without the checksum: header and item layout only. */
int btrfs_check_tree_block_layout(struct tlog_fs *fs, const u8 *buf, u64 bytenr);
/*
 * The kernel's write-time tree-checker: the layout of block @eb and, for
 * a leaf, every item through the decoder of its type.  Reads check only
 * the checksum and layout (the hot path: every block read); the items of
 * a block are judged where they matter - before it is written, and by
 * replay before a log item is used.
 */
int btrfs_check_block_for_write(struct tlog_fs *fs, const struct extent_buffer *eb);

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

/*
 * One back reference, inline in an extent item or keyed: what it names
 * and how many references it counts.
 */
struct tlog_extent_ref {
	u8 type;		/* BTRFS_{TREE_BLOCK,SHARED_BLOCK,EXTENT_DATA,SHARED_DATA,EXTENT_OWNER}_REF_KEY */
	u32 at;			/* inline: where it starts in the item */
	u32 len;		/* inline: bytes it takes, 0 for an unknown type */
	u64 offset;		/* root or parent; EXTENT_DATA_REF: the key's (0 inline) */
	u64 root, objectid, file_offset;	/* EXTENT_DATA_REF */
	u32 count;		/* references counted: 1 for tree blocks, 0 for owners */
};

/* An EXTENT_ITEM or METADATA_ITEM, decoded up to its inline references. */
struct tlog_extent_item {
	u64 refs;
	u64 generation;
	u64 flags;		/* BTRFS_EXTENT_FLAG_*, BTRFS_BLOCK_FLAG_FULL_BACKREF */
	int level;		/* tree blocks: from the key (skinny) or the block info */
	const struct btrfs_tree_block_info *info;	/* non-skinny tree blocks, else NULL */
	const u8 *ptr;		/* the item, valid as long as the leaf is */
	u32 size;
	u32 refs_start;		/* where the inline references begin */
	/* btrfs_decode_extent_item: */
	u64 inline_refs;	/* references the inline ones count */
	u32 nr_inline;		/* inline references */
	struct tlog_extent_ref first;	/* the first of them, when there is one */
};

static inline bool btrfs_is_data_ref(u8 type)
{
	return type == BTRFS_EXTENT_DATA_REF_KEY || type == BTRFS_SHARED_DATA_REF_KEY;
}

/*
 * The fixed part of the extent item of @size bytes at @ptr, read without
 * judging it; -EUCLEAN (no finding) when it is cut short.
 */
int btrfs_parse_extent_item(const void *ptr, u32 size, const struct btrfs_key *key,
			    struct tlog_extent_item *ret);
/* Bytes an inline reference of @type takes, 0 for a type there is none of. */
u32 btrfs_inline_ref_size(u8 type);
/*
 * The inline reference at *@cur of @ei (start at ei->refs_start), *@cur
 * moved past it: 0, 1 after the last, -EUCLEAN (no finding) for one cut
 * off or of an unknown type (ret->len 0).
 */
int btrfs_next_inline_ref(const struct tlog_extent_item *ei, u32 *cur,
			  struct tlog_extent_ref *ret);
#define btrfs_for_each_inline_ref(ei, cur, ref, ret)				\
	for (*(cur) = (ei)->refs_start;						\
	     ((ret) = btrfs_next_inline_ref((ei), (cur), (ref))) == 0; )
/*
 * Decode the extent item at @slot and judge it, with its inline
 * references, by the kernel's rules: known flags naming data or a tree
 * block, references of the kind the extent has, in the kernel's order,
 * filling the item exactly and counting no more than its refs.  Returns 0
 * or -EUCLEAN with a finding.
 */
int btrfs_decode_extent_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			     const struct btrfs_key *key, struct tlog_extent_item *ret);
/*
 * The keyed back reference of @size bytes at @ptr, read without judging
 * it; -EUCLEAN (no finding) when it is no back reference or cut short.
 */
int btrfs_parse_keyed_ref(const void *ptr, u32 size, const struct btrfs_key *key,
			  struct tlog_extent_ref *ret);
/*
 * Decode the keyed back reference at @slot: of its exact size, a data
 * reference keyed by its hash.  Returns 0 or -EUCLEAN with a finding.
 */
int btrfs_decode_keyed_ref(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
			   struct tlog_extent_ref *ret);

/* An EXTENT_CSUM item: the checksums of the data sectors [start, end). */
struct tlog_csum_item {
	u64 start;
	u64 end;
	const u8 *csums;	/* valid as long as the leaf is */
	u32 size;
};

/*
 * The range a csum item of @size bytes at @ptr covers, read without
 * judging it (for printers; the decoder below shares it): a partial
 * checksum at the end is left out.
 */
void btrfs_parse_csum_item(const void *ptr, u32 size, u64 key_offset, u32 csum_size,
			   u32 sectorsize, struct tlog_csum_item *ret);

/*
 * Decode the csum item at @slot: a whole number of checksums for data
 * starting at a sector boundary.  Returns 0 or -EUCLEAN with a finding.
 */
int btrfs_decode_csum_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			   const struct btrfs_key *key, struct tlog_csum_item *ret);

/*
 * The chunk at @logical (@item_size bytes, from the chunk tree or the
 * sys_chunk_array): what the kernel's chunk validation demands, minus
 * multi-device rules, and every stripe on our device inside it.
 */
int btrfs_check_chunk(const struct tlog_fs *fs, u64 logical, const struct btrfs_chunk *chunk,
		      u32 item_size);

/*
 * The chunk tree's DEV_ITEM at @slot agrees with the superblock's copy;
 * -EOPNOTSUPP for another device's item.
 */
int btrfs_check_dev_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			 const struct btrfs_key *key);

/*
 * The decoders: one for each item format, used by every reader.  A strict
 * reader passes @note NULL and gets the item refused (-EUCLEAN, with a
 * finding) for anything the checks above refuse.  A tolerant reader
 * (the tree printer) passes a buffer for a note instead: an entry that
 * breaks a rule is still decoded and the note says what is wrong; only
 * an entry whose lengths leave nothing to read is refused, with the note
 * saying why and the error context untouched.
 */

/* The INODE_ITEM at @slot: *@ii points into the leaf. */
int btrfs_decode_inode_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			    const struct btrfs_key *key, const struct btrfs_inode_item **ii,
			    char *note, size_t note_size);

/* The ROOT_ITEM at @slot, copied to @ri (a legacy item zero-filled to the full size). */
int btrfs_decode_root_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			   const struct btrfs_key *key, struct btrfs_root_item *ri,
			   char *note, size_t note_size);

/*
 * The item at @slot when its type is one struct of a fixed size
 * (BLOCK_GROUP_ITEM, FREE_SPACE_INFO, DEV_EXTENT, QGROUP_INFO,
 * QGROUP_LIMIT): a pointer into the leaf, or NULL when refused.
 */
const void *btrfs_fixed_item_at(const struct extent_buffer *leaf, int slot,
				const struct btrfs_key *key, char *note, size_t note_size);

/*
 * The entry at byte @cur of the DIR_ITEM, DIR_INDEX or XATTR_ITEM at
 * @slot (key @key): @de filled, pointing into the leaf; returns its
 * length in the item.
 */
int btrfs_dir_entry_at(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
		       u32 cur, struct tlog_dir_entry *de, char *note, size_t note_size);

/* One name of an INODE_REF or INODE_EXTREF item, pointing into the leaf. */
struct tlog_ref_entry {
	u64 parent;
	u64 index;
	u16 name_len;
	const char *name;
	u32 len;		/* of the whole entry in the item */
};

/* The ref entry at byte @cur of the INODE_REF / INODE_EXTREF at @slot; returns its length. */
int btrfs_ref_entry_at(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
		       u32 cur, struct tlog_ref_entry *ref, char *note, size_t note_size);

/* A ROOT_REF / ROOT_BACKREF item, name pointing into the leaf. */
struct tlog_root_ref {
	u64 dirid;
	u64 sequence;
	u16 name_len;
	const char *name;
};

/* Decode the ROOT_REF or ROOT_BACKREF at @slot; 0 or -EUCLEAN. */
int btrfs_decode_root_ref(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
			  struct tlog_root_ref *ref, char *note, size_t note_size);

#endif
