// SPDX-License-Identifier: GPL-2.0-only
/*
 * ltest: an fsync of a new file through the transaction's log, for the
 * kernel tests of the log (tests/kernel/520-log-trans.sh).
 *
 *   ltest IMAGE NAME SIZE [SYNCS]
 *
 * Opens IMAGE, creates NAME in the top-level directory in the running
 * transaction through the inode operations, writes SIZE bytes (byte i is
 * 'A' + i % 23) and writes them back, copies the new inode's items (inode
 * item, INODE_REF, file extents) and its data checksums into the fs
 * tree's log tree, syncs the log, and exits without committing: a power
 * cut after the fsync.  With SYNCS > 1 the file is written in SYNCS equal
 * pieces, each logged and synced in turn (later syncs copy the log).
 * TLOG_FAULT_INJECT=fail:N or drop:N makes the Nth write and all after it
 * fail or vanish (counted from the open); "writes: W" and "sync-writes:
 * FIRST LAST" (the writes of the last sync) are printed on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "blockdev.h"
#include "ctree.h"
#include "errctx.h"
#include "inode-ops.h"
#include "root-tree.h"
#include "transaction.h"
#include "log-inode.h"

static int log_file(struct tlog_fs *fs, const char *name, u64 size, int syncs, u64 *first,
		    u64 *last)
{
	struct tlog_mount *mnt = NULL;
	struct tlog_inode *dir = NULL, *f = NULL;
	struct btrfs_root *root;
	u64 piece = (size + syncs - 1) / syncs, ino;
	u8 *buf;
	int err;

	buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	for (u64 i = 0; i < size; i++)
		buf[i] = (u8)('A' + i % 23);
	err = btrfs_read_root(fs, BTRFS_FS_TREE_OBJECTID, &root);
	if (!err)
		err = tlog_mount_open(fs, &mnt);
	if (!err)
		err = tlog_iget(mnt, root, BTRFS_FIRST_FREE_OBJECTID, &dir);
	if (!err)
		err = tlog_create(mnt, dir, name, strlen(name), S_IFREG | 0644, 0, NULL, &f);
	for (int s = 0; !err && s < syncs; s++) {
		u64 off = (u64)s * piece, len = off >= size ? 0 : size - off < piece ? size - off : piece;

		ino = f->ino;
		if (len)
			err = tlog_write_data(mnt, f, off, buf + off, len);
		if (!err)
			err = tlog_writeback_inode(mnt, f);
		/* the inode item written back: the tree holds the inode as it is */
		if (!err)
			err = tlog_iforget(mnt, f);
		f = NULL;
		if (!err)
			err = test_log_inode(mnt->trans, root, ino);
		*first = fs->bdev->nr_writes + 1;
		if (!err)
			err = tlog_trans_sync_log(mnt->trans, NULL);
		*last = fs->bdev->nr_writes;
		if (!err && s + 1 < syncs)
			err = tlog_iget(mnt, root, ino, &f);
	}
	if (f)
		tlog_iput(mnt, f);
	if (dir)
		tlog_iput(mnt, dir);
	/* the power cut: nothing of the transaction is committed */
	tlog_mount_close(mnt);
	free(buf);
	return err;
}

int main(int argc, char **argv)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true };
	struct tlog_fs *fs;
	u64 first = 0, last = 0;
	int err, syncs;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: ltest IMAGE NAME SIZE [SYNCS]\n");
		return 2;
	}
	syncs = argc == 5 ? atoi(argv[4]) : 1;
	if (syncs < 1)
		return 2;
	if (getenv("TLOG_FAULT_INJECT")) {
		char mode[8];
		unsigned long long nth;

		if (sscanf(getenv("TLOG_FAULT_INJECT"), "%7[a-z]:%llu", mode, &nth) != 2) {
			fprintf(stderr, "ltest: bad TLOG_FAULT_INJECT\n");
			return 2;
		}
		opts.fault_mode = strcmp(mode, "drop") ? TLOG_FAULT_FAIL : TLOG_FAULT_DROP;
		opts.fault_nth = nth;
	}
	err = tlog_open(argv[1], &opts, &fs);
	if (err) {
		fprintf(stderr, "open: %s\n", tlog_error_get());
		return 1;
	}
	err = log_file(fs, argv[2], strtoull(argv[3], NULL, 0), syncs, &first, &last);
	if (err)
		fprintf(stderr, "ltest: %d %s\n", err, tlog_error_get() ? tlog_error_get() : "");
	fprintf(stderr, "writes: %llu\nsync-writes: %llu %llu\n",
		(unsigned long long)fs->bdev->nr_writes, (unsigned long long)first,
		(unsigned long long)last);
	tlog_close(fs);
	return err ? 1 : 0;
}
