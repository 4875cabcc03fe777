// SPDX-License-Identifier: GPL-2.0-only
/*
 * The error context: the why printed with an error is that error's own.
 * Lookups whose "not found" is an answer record nothing, their reading
 * counterparts do, and saved contexts survive best-effort work.
 */
#include <errno.h>
#include <string.h>
#include <criterion/criterion.h>

#include "errctx.h"
#include "inode.h"
#include "mem-tree.h"
#include "root-tree.h"

Test(errctx, save_restore_keeps_the_reason)
{
	struct tlog_errsave saved;

	tlog_error_clear();
	tlog_error(-EIO, "bad checksum on tree block %d", 42);
	tlog_error_save(&saved);
	tlog_error(-EIO, "prefetch of a neighbour failed");
	tlog_error_restore(&saved);
	cr_assert_str_eq(tlog_error_get(), "bad checksum on tree block 42");
}

Test(errctx, save_restore_keeps_nothing_recorded)
{
	struct tlog_errsave saved;

	tlog_error_clear();
	tlog_error_save(&saved);
	tlog_error(-EIO, "prefetch failed");
	tlog_error_restore(&saved);
	cr_assert_null(tlog_error_get());
}

Test(errctx, wrap_prefixes)
{
	tlog_error_clear();
	tlog_error(-EIO, "short read");
	cr_assert_eq(tlog_error_wrap(-EIO, "cannot read chunk root"), -EIO);
	cr_assert_str_eq(tlog_error_get(), "cannot read chunk root: short read");
}

Test(errctx, inode_probe_records_nothing)
{
	struct mem_tree t;
	struct btrfs_inode_item ii;

	mem_tree_setup(&t, 4096, 7);
	tlog_error_clear();
	cr_assert_eq(btrfs_lookup_inode(&t.root, 300, &ii), -ENOENT);
	cr_assert_null(tlog_error_get(), "a probe recorded \"%s\"", tlog_error_get());
	cr_assert_eq(btrfs_read_inode(&t.root, 300, &ii), -ENOENT);
	cr_assert_not_null(tlog_error_get());
	cr_assert(strstr(tlog_error_get(), "inode 300") != NULL, "%s", tlog_error_get());
	mem_tree_teardown(&t);
}

Test(errctx, root_probe_records_nothing)
{
	struct mem_tree t;
	struct btrfs_root *root;

	mem_tree_setup(&t, 4096, 7);
	/* the in-memory fs has no log tree: absence, asked two ways */
	tlog_error_clear();
	cr_assert_eq(btrfs_find_root(t.fs, BTRFS_TREE_LOG_OBJECTID, &root), -ENOENT);
	cr_assert_null(tlog_error_get());
	cr_assert_eq(btrfs_read_root(t.fs, BTRFS_TREE_LOG_OBJECTID, &root), -ENOENT);
	cr_assert_str_eq(tlog_error_get(), "the filesystem has no log tree");
	mem_tree_teardown(&t);
}
