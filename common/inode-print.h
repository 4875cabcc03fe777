/* SPDX-License-Identifier: GPL-2.0-only */
/* Inode attributes as ls and stat show them, in text and JSON. */
#ifndef TLOG_INODE_PRINT_H
#define TLOG_INODE_PRINT_H

#include <json-c/json.h>
#include "format.h"

/* st_blocks as the kernel reports it: nbytes rounded up to a sector, in 512 B units. */
u64 inode_st_blocks(const struct btrfs_inode_item *inode, u32 sectorsize);

/* What stat(2) would return, as JSON; @subvol is the tree the inode is in. */
json_object *inode_to_json(u64 subvol, u64 ino, const struct btrfs_inode_item *inode,
			   u32 sectorsize);

/* "regular file", "directory", ... as stat(1) says. */
const char *inode_type_name(u32 mode);

#endif
