/* SPDX-License-Identifier: GPL-2.0-only */
/* Finding and reading the roots of the trees (root-tree.c). */
#ifndef TLOG_ROOT_TREE_H
#define TLOG_ROOT_TREE_H

#include "format.h"

struct btrfs_root;
struct tlog_fs;

/*
 * The tree @objectid (a ROOT_ITEM in the root tree; the root and chunk
 * trees come from the superblock).  Roots are cached in @fs and freed with
 * it.
 */
int btrfs_read_root(struct tlog_fs *fs, u64 objectid, struct btrfs_root **ret);
/* The same for a caller to whom absence is an answer: -ENOENT, nothing recorded. */
int btrfs_find_root(struct tlog_fs *fs, u64 objectid, struct btrfs_root **ret);
/*
 * A tree being created with @key as its ROOT_ITEM key: cached in @fs at
 * once, so that its root item, filled by the caller and inserted into the
 * root tree, and every later change go through this one object.
 */
int btrfs_new_root(struct tlog_fs *fs, const struct btrfs_key *key, struct btrfs_root **ret);
/*
 * Tree @objectid as the last commit left it (the kernel's commit root):
 * the superblock's root tree is the committed one until the next commit,
 * and copy-on-write leaves every block it reaches in place.  @out is the
 * caller's, not cached: read-only searches only.  -ENOENT when the tree
 * is new in the running transaction.
 */
int btrfs_read_commit_root(struct tlog_fs *fs, u64 objectid, struct btrfs_root *out);
/* Root of the log tree for subvolume @objectid, or -ENOENT. */
int btrfs_read_log_root(struct tlog_fs *fs, u64 objectid, struct btrfs_root **ret);

#endif
