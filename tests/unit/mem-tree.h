/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A subvolume-like tree in memory for unit tests: an in-memory filesystem,
 * one root, and a transaction whose allocator hands out fresh addresses
 * and checks that no block is freed twice.
 */
#ifndef TLOG_TEST_MEM_TREE_H
#define TLOG_TEST_MEM_TREE_H

#include "ctree.h"
#include "transaction.h"

struct mem_alloc {
	u64 next;
	u64 *free;
	size_t nr_free, cap;
	u64 allocated;		/* live blocks */
};

struct mem_tree {
	struct tlog_fs *fs;
	struct btrfs_root root;	/* tree 5, created empty */
	struct mem_alloc alloc;
	struct tlog_trans trans;
};

void mem_tree_setup(struct mem_tree *t, u32 nodesize, u64 transid);
void mem_tree_teardown(struct mem_tree *t);

#endif
