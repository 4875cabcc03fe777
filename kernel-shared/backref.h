/* SPDX-License-Identifier: GPL-2.0-only */
/* Back references of shared tree blocks and data extents (backref.c). */
#ifndef TLOG_BACKREF_H
#define TLOG_BACKREF_H

#include <stdbool.h>
#include "transaction.h"

/* References when copying a block a snapshot may share. */
int btrfs_update_ref_for_cow(struct tlog_trans *trans, struct btrfs_root *root,
			     const struct extent_buffer *buf, const struct extent_buffer *cow,
			     bool *last_ref);

/*
 * @eb is a new copy of a block in @root (a snapshot's root): everything
 * it points to gets one more normal reference from @root (btrfs_inc_ref).
 */
int btrfs_inc_tree_refs(struct tlog_trans *trans, struct btrfs_root *root,
			const struct extent_buffer *eb);

/* Drop one normal reference to a data extent others still reference. */
int btrfs_drop_data_ref(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root, u64 ino,
			u64 offset);

/* One more reference (@root, @ino, @offset) to the data extent at @bytenr. */
int btrfs_add_data_ref(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root, u64 ino,
		       u64 offset);

/* Drop the last reference of a data extent, leaving its item with refs 0. */
int btrfs_drop_last_data_ref(struct tlog_trans *trans, u64 bytenr, u64 len, u64 root, u64 ino,
			     u64 offset);

#endif
