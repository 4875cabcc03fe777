// SPDX-License-Identifier: GPL-2.0-only
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "inode-print.h"
#include "misc.h"
#include "output.h"
#include "strutil.h"

u64 inode_st_blocks(const struct btrfs_inode_item *inode, u32 sectorsize)
{
	u64 nbytes = btrfs_inode_item_nbytes(inode);

	return round_up(nbytes, sectorsize) >> 9;
}

const char *inode_type_name(u32 mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symbolic link";
	case S_IFCHR: return "character special file";
	case S_IFBLK: return "block special file";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	}
	return "unknown";
}

static json_object *timespec_to_json(const struct btrfs_timespec *ts)
{
	json_object *o = json_object_new_object();

	/* seconds are signed on disk: a time before 1970 is negative */
	json_add_s64(o, "sec", (s64)btrfs_timespec_sec(ts));
	json_add_u64(o, "nsec", btrfs_timespec_nsec(ts));
	return o;
}

json_object *inode_to_json(u64 subvol, u64 ino, const struct btrfs_inode_item *inode,
			   u32 sectorsize)
{
	json_object *o = json_object_new_object();
	u32 mode = btrfs_inode_item_mode(inode);
	u64 rdev = btrfs_inode_item_rdev(inode);
	char mstr[11];

	mode_to_str(mode, mstr);
	json_add_u64(o, "subvol", subvol);
	json_add_u64(o, "ino", ino);
	json_add_str(o, "type", inode_type_name(mode));
	json_add_u64(o, "mode", mode);
	json_add_str(o, "mode_str", mstr);
	json_add_u64(o, "nlink", btrfs_inode_item_nlink(inode));
	json_add_u64(o, "uid", btrfs_inode_item_uid(inode));
	json_add_u64(o, "gid", btrfs_inode_item_gid(inode));
	json_add_u64(o, "size", btrfs_inode_item_size(inode));
	json_add_u64(o, "blocks", inode_st_blocks(inode, sectorsize));
	json_add_u64(o, "nbytes", btrfs_inode_item_nbytes(inode));
	/* btrfs stores the kernel's dev_t encoding: major << 20 | minor */
	json_add_u64(o, "rdev_major", rdev >> 20);
	json_add_u64(o, "rdev_minor", rdev & 0xfffff);
	json_add_u64(o, "generation", btrfs_inode_item_generation(inode));
	json_add_u64(o, "transid", btrfs_inode_item_transid(inode));
	json_add_u64(o, "sequence", btrfs_inode_item_sequence(inode));
	json_add_u64(o, "flags", btrfs_inode_item_flags(inode));
	json_object_object_add(o, "atime", timespec_to_json(&inode->atime));
	json_object_object_add(o, "mtime", timespec_to_json(&inode->mtime));
	json_object_object_add(o, "ctime", timespec_to_json(&inode->ctime));
	json_object_object_add(o, "otime", timespec_to_json(&inode->otime));
	return o;
}
