/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inodes and names in subvolume trees: reading INODE_ITEMs, looking up and
 * listing directory entries, and resolving paths across subvolumes.
 */
#ifndef TLOG_INODE_H
#define TLOG_INODE_H

#include "ctree.h"

/* An inode identified by its tree and number. */
struct tlog_ino {
	struct btrfs_root *root;
	u64 ino;
};

/* One directory entry, decoded and bounds-checked. */
struct tlog_dir_entry {
	u64 dir;			/* directory holding the entry */
	struct btrfs_key location;	/* INODE_ITEM or ROOT_ITEM key */
	u64 index;			/* DIR_INDEX key offset (0 for DIR_ITEM) */
	u64 transid;
	u8 type;			/* BTRFS_FT_* */
	u16 name_len;
	const char *name;		/* not NUL-terminated; valid during the callback */
	u16 data_len;			/* an xattr's value, after the name */
	const u8 *data;
};

/*
 * Read inode @ino of @root.  The empty-subvolume stand-in is synthesised as
 * the kernel shows it: a 0755 directory, one link, owned by root (its times
 * are the time of lookup on a live system, left zero here).
 */
int btrfs_read_inode(struct btrfs_root *root, u64 ino, struct btrfs_inode_item *ret);
/* The same for a caller to whom absence is an answer: -ENOENT, nothing recorded. */
int btrfs_lookup_inode(struct btrfs_root *root, u64 ino, struct btrfs_inode_item *ret);

/*
 * The inode item at @path, decoded: 0 with *@ii pointing into the
 * leaf, or -EUCLEAN when it is too small to read.
 */
int btrfs_inode_item_at(const struct tlog_fs *fs, const struct btrfs_path *path,
			const struct btrfs_inode_item **ii);

/*
 * Walk the entries packed in one DIR_ITEM / DIR_INDEX / XATTR_ITEM item,
 * each decoded and checked by btrfs_dir_entry_at().  @fn returns non-zero
 * to stop (that value is returned).  -EUCLEAN, with the finding, on an
 * entry the tree checker refuses.
 */
int btrfs_for_each_dir_entry(const struct extent_buffer *leaf, int slot,
			     int (*fn)(const struct tlog_dir_entry *de, void *arg),
			     void *arg);

/*
 * Find the entry called @name in the dir-format item at @slot: 0 with
 * @de filled (pointing into the leaf) and *@off its place in the item
 * (@off may be NULL), -ENOENT, or -EUCLEAN for an entry the tree checker
 * refuses.
 */
int btrfs_find_name_in_dir_item(const struct extent_buffer *leaf, int slot, const char *name,
				u16 len, struct tlog_dir_entry *de, u32 *off);

/* Look up @name in directory @dir.  0 with @de filled (name not kept), -ENOENT. */
int btrfs_lookup_dir_entry(struct btrfs_root *root, u64 dir, const char *name,
			   size_t len, struct tlog_dir_entry *de);

/* Call @fn for every entry of @dir in index order (DIR_INDEX items). */
int btrfs_iterate_dir(struct btrfs_root *root, u64 dir,
		      int (*fn)(const struct tlog_dir_entry *de, void *arg), void *arg);

/*
 * Inode number the kernel gives the stand-in directory for a subvolume
 * entry that does not lead to its subvolume (a subvolume nested in the
 * source of a snapshot shows up this way inside the snapshot).
 */
#define BTRFS_EMPTY_SUBVOL_DIR_OBJECTID 2ULL

/*
 * The inode a directory entry names: a ROOT_ITEM location crosses into a
 * subvolume whose root directory is returned, if the subvolume's ROOT_REF
 * says it is linked at that entry; otherwise, like the kernel, an empty
 * stand-in directory (BTRFS_EMPTY_SUBVOL_DIR_OBJECTID in the parent's tree).
 */
int btrfs_entry_target(struct tlog_fs *fs, struct btrfs_root *root,
		       const struct tlog_dir_entry *de, struct tlog_ino *ret);

/*
 * Resolve an absolute or relative @path from the root directory of @start
 * (NULL: the top-level subvolume, as a mount of subvolid=5 shows it).
 * "." and ".." are resolved by name; a symlink in the middle of the path is
 * refused (-ELOOP), a non-directory in the middle gives -ENOTDIR.
 */
int tlog_resolve_path(struct tlog_fs *fs, struct btrfs_root *start, const char *path,
		      struct tlog_ino *ret);

/* BTRFS_FT_* for a mode, and S_IF* for a BTRFS_FT_* type. */
u8 btrfs_mode_to_ftype(u32 mode);
const char *btrfs_ftype_name(u8 type);

/*
 * The target of symlink @ino as readlink(2) returns it on the mounted
 * filesystem: its inline extent, at most i_size bytes and up to the first
 * NUL, copied into @buf with a terminating NUL.  Returns the target length
 * or -errno.
 */
int btrfs_read_symlink(struct btrfs_root *root, u64 ino, char *buf, size_t size);

#endif
