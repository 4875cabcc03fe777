/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Changing names in subvolume trees: directory entries (DIR_ITEM by name
 * hash, DIR_INDEX by index), inode back references (INODE_REF per parent,
 * INODE_EXTREF per parent and name hash) and xattrs.
 *
 * These change items only.  What a link or an unlink does to the inodes
 * (sizes, link counts, times, i_version) is the inode operations' policy
 * (inode-ops.h), one for `run` and log replay alike.
 */
#ifndef TLOG_DIR_ITEM_H
#define TLOG_DIR_ITEM_H

#include "inode.h"
#include "transaction.h"

/* DIR_ITEM and DIR_INDEX of @name -> @location (@type BTRFS_FT_*) at @index, added or removed. */
int btrfs_add_dir_entries(struct tlog_trans *trans, struct btrfs_root *root, u64 dir,
			  const char *name, u16 len, const struct btrfs_key *location,
			  u8 type, u64 index);
int btrfs_remove_dir_entries(struct tlog_trans *trans, struct btrfs_root *root, u64 dir,
			     const char *name, u16 len, u64 index);

/* The entry at DIR_INDEX @index of @dir: 0 with @de filled (name copied to @name), or -ENOENT. */
int btrfs_lookup_dir_index(struct btrfs_root *root, u64 dir, u64 index,
			   struct tlog_dir_entry *de, char name[256]);
/* Delete xattr @name of @ino (one entry of its XATTR_ITEM). */
int btrfs_delete_xattr(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
		       const char *name, u16 len);

/* One name of an inode, as INODE_REF / INODE_EXTREF entries hold them. */
struct tlog_ref_name {
	u64 parent;
	u64 index;
	u16 len;
	char name[256];
};

/*
 * The names of @ino in the ref item at @slot of @leaf (INODE_REF or
 * INODE_EXTREF); *@names is allocated (free it), *@nr set.
 */
int btrfs_decode_ref_item(const struct extent_buffer *leaf, int slot,
			  struct tlog_ref_name **names, int *nr);
/* Whether @ino has the name (@parent, @name) in its refs; *@index gets its index. */
int btrfs_find_inode_ref(struct btrfs_root *root, u64 ino, u64 parent, const char *name,
			 u16 len, u64 *index);
/* Count every name of @ino (INODE_REF and INODE_EXTREF entries). */
int btrfs_count_inode_names(struct btrfs_root *root, u64 ino, u32 *count);
/*
 * Every name of @ino in @root (INODE_REF and INODE_EXTREF entries, in key
 * order): *@names (freed by the caller, NULL when none) and *@nr.
 */
int btrfs_inode_names(struct btrfs_root *root, u64 ino, struct tlog_ref_name **names,
		      size_t *nr);
/* Add the name (@parent, @name, @index) to @ino's INODE_REF item for @parent. */
int btrfs_insert_inode_ref(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			   u64 parent, const char *name, u16 len, u64 index);
/* Remove the name (@parent, @name) from @ino's refs; *@index gets its index. */
int btrfs_delete_inode_ref(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			   u64 parent, const char *name, u16 len, u64 *index);

/*
 * Append @len bytes of @data to the item @key of @root (an entry of an
 * item that packs several: xattrs and extrefs sharing a hash, uuid tree
 * ids), creating the item when there is none.
 */
int btrfs_append_to_item(struct tlog_trans *trans, struct btrfs_root *root,
			 const struct btrfs_key *key, const void *data, u32 len);
/*
 * Make the item @key of @root hold exactly @data (@size bytes): inserted,
 * resized or left alone when equal.  *@changed tells which.
 */
int btrfs_overwrite_item(struct tlog_trans *trans, struct btrfs_root *root,
			 const struct btrfs_key *key, const void *data, u32 size, bool *changed);
/* Delete the bytes [off, off + len) of the item at the path (the whole item if all). */
int btrfs_del_item_part(struct tlog_trans *trans, struct btrfs_root *root,
			struct btrfs_path *path, u32 off, u32 len);

#endif
