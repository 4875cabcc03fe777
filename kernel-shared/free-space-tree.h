/* SPDX-License-Identifier: GPL-2.0-only */
/* Free space tree updates for allocations and frees in a transaction. */
#ifndef TLOG_FREE_SPACE_TREE_H
#define TLOG_FREE_SPACE_TREE_H

#include "block-group.h"

struct tlog_trans;

/* [start, start + len) of @bg became allocated / free. */
int fst_remove_range(struct tlog_trans *trans, const struct tlog_block_group *bg,
		     u64 start, u64 len);
int fst_add_range(struct tlog_trans *trans, const struct tlog_block_group *bg,
		  u64 start, u64 len);

#endif
