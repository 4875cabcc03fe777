// SPDX-License-Identifier: GPL-2.0-only
// The in-memory tree fixture of the unit tests (mem-tree.h).
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "csum.h"
#include "errctx.h"
#include "mem-tree.h"

static int mem_alloc_block(struct tlog_trans *trans, struct btrfs_root *root, int level,
			   u64 *bytenr)
{
	struct mem_alloc *a = trans->priv;

	(void)root;
	(void)level;
	*bytenr = (a->next += trans->fs->nodesize);
	a->allocated++;
	return 0;
}

static int mem_free_block(struct tlog_trans *trans, struct btrfs_root *root, u64 bytenr,
			  int level)
{
	struct mem_alloc *a = trans->priv;

	(void)root;
	(void)level;
	cr_assert_lt(a->nr_free, a->cap, "more frees than blocks");
	for (size_t i = 0; i < a->nr_free; i++)
		cr_assert_neq(a->free[i], bytenr, "block %llu freed twice",
			      (unsigned long long)bytenr);
	a->free[a->nr_free++] = bytenr;
	a->allocated--;
	return 0;
}

static const struct tlog_trans_ops mem_ops = {
	.alloc_tree_block = mem_alloc_block,
	.free_tree_block = mem_free_block,
};

void mem_tree_setup(struct mem_tree *t, u32 nodesize, u64 transid)
{
	memset(t, 0, sizeof(*t));
	tlog_error_clear();
	cr_assert_eq(tlog_fs_create_memory(nodesize, 4096, BTRFS_CSUM_TYPE_CRC32, &t->fs), 0);
	t->alloc.next = 1 << 20;
	t->alloc.cap = 1 << 16;
	t->alloc.free = calloc(t->alloc.cap, sizeof(u64));
	cr_assert_not_null(t->alloc.free);
	t->root.fs = t->fs;
	t->root.root_key = (struct btrfs_key){ 5, BTRFS_ROOT_ITEM_KEY, 0 };
	t->trans = (struct tlog_trans){ .fs = t->fs, .transid = transid, .ops = &mem_ops,
					.priv = &t->alloc };
	cr_assert_eq(btrfs_create_tree(&t->trans, &t->root), 0);
}

void mem_tree_teardown(struct mem_tree *t)
{
	tlog_close(t->fs);
	free(t->alloc.free);
}
