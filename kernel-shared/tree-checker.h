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
 * Check the item at @slot of @leaf, owned by tree @owner (a log tree for
 * subvolume @owner's log: pass the log's objectid).  @prev is the key of
 * the item before it in the same leaf, or NULL for slot 0: file extents
 * may not overlap their predecessor.  Returns 0 or -EUCLEAN.
 */
int btrfs_check_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
		     const struct btrfs_key *key, const struct btrfs_key *prev);

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
