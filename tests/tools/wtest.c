// SPDX-License-Identifier: GPL-2.0-only
/*
 * wtest: drive the write path from test scripts, through the library's
 * inode operations (inode-ops.h) as tlogctl run does.
 *
 *   wtest mkdir IMAGE COUNT PER_TRANS PREFIX
 *   wtest write IMAGE NAME SRCFILE    a regular file in / with SRCFILE's bytes
 *   wtest rm IMAGE NAME               unlink a regular file from /
 *
 * mkdir creates COUNT directories PREFIX-NNNNN in the top-level directory,
 * committing a transaction every PER_TRANS of them: many commits of many
 * items, which is what the write-path tests need and the run language
 * has no short way to say.  TLOG_FAULT_INJECT=fail:N or drop:N makes the
 * Nth write and all after it fail or vanish; the number of writes issued
 * is printed on stderr.  WTEST_SUBVOL=ID works in another subvolume,
 * WTEST_SYSTEM_RESERVE=BYTES makes SYSTEM space grow early.
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

static int read_file(const char *path, u8 **data, u64 *size)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -errno;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	*data = malloc(n ? n : 1);
	if (!*data || fread(*data, 1, n, f) != (size_t)n) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*size = n;
	return 0;
}

/* The running transaction, with the SYSTEM reserve the test asked for. */
static int start(struct tlog_mount *mnt)
{
	struct tlog_trans *trans;
	int err = tlog_mount_trans(mnt, &trans);

	if (!err && getenv("WTEST_SYSTEM_RESERVE"))
		tlog_trans_set_system_reserve(trans, strtoull(getenv("WTEST_SYSTEM_RESERVE"), NULL, 0));
	return err;
}

static int do_write(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name,
		    const char *src)
{
	struct tlog_inode *inode;
	u8 *data = NULL;
	u64 size = 0;
	int err = read_file(src, &data, &size);

	if (!err)
		err = start(mnt);
	if (!err)
		err = tlog_create(mnt, dir, name, strlen(name), S_IFREG | 0644, 0, NULL, &inode);
	if (!err) {
		if (size)
			err = tlog_write_data(mnt, inode, 0, data, size);
		tlog_iput(mnt, inode);
	}
	free(data);
	return err ? err : tlog_sync(mnt);
}

static int do_mkdirs(struct tlog_mount *mnt, struct tlog_inode *dir, long count, long per,
		     const char *prefix)
{
	int err = 0;

	for (long i = 0; !err && i < count; i++) {
		char name[256];

		snprintf(name, sizeof(name), "%s-%05ld", prefix, i);
		err = start(mnt);
		if (!err)
			err = tlog_create(mnt, dir, name, strlen(name), S_IFDIR | 0755, 0, NULL, NULL);
		if (!err && ((i + 1) % per == 0 || i + 1 == count))
			err = tlog_sync(mnt);
	}
	return err;
}

int main(int argc, char **argv)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true };
	struct tlog_mount *mnt = NULL;
	struct tlog_inode *dir = NULL;
	struct btrfs_root *root;
	struct tlog_fs *fs;
	int err;

	if (!((argc == 5 && strcmp(argv[1], "write") == 0) ||
	      (argc == 4 && strcmp(argv[1], "rm") == 0) ||
	      (argc == 6 && strcmp(argv[1], "mkdir") == 0))) {
		fprintf(stderr, "usage: wtest mkdir IMAGE COUNT PER_TRANS PREFIX | write IMAGE NAME SRC | rm IMAGE NAME\n");
		return 2;
	}
	if (getenv("TLOG_FAULT_INJECT")) {
		char mode[8];
		unsigned long long nth;

		if (sscanf(getenv("TLOG_FAULT_INJECT"), "%7[a-z]:%llu", mode, &nth) != 2) {
			fprintf(stderr, "wtest: bad TLOG_FAULT_INJECT\n");
			return 2;
		}
		opts.fault_mode = strcmp(mode, "drop") ? TLOG_FAULT_FAIL : TLOG_FAULT_DROP;
		opts.fault_nth = nth;
	}
	err = tlog_open(argv[2], &opts, &fs);
	if (err) {
		fprintf(stderr, "open: %s\n", tlog_error_get());
		return 1;
	}
	err = btrfs_read_root(fs, getenv("WTEST_SUBVOL") ? strtoull(getenv("WTEST_SUBVOL"), NULL, 0) :
			      BTRFS_FS_TREE_OBJECTID, &root);
	if (!err)
		err = tlog_mount_open(fs, &mnt);
	if (!err)
		err = tlog_iget(mnt, root, btrfs_root_item_root_dirid(&root->root_item), &dir);
	if (!err && strcmp(argv[1], "write") == 0)
		err = do_write(mnt, dir, argv[3], argv[4]);
	else if (!err && strcmp(argv[1], "rm") == 0) {
		err = tlog_unlink(mnt, dir, argv[3], strlen(argv[3]), false);
		if (!err)
			err = tlog_sync(mnt);
	}
	else if (!err)
		err = do_mkdirs(mnt, dir, atol(argv[3]), atol(argv[4]), argv[5]);
	if (err)
		fprintf(stderr, "wtest: %d %s\n", err, tlog_error_get() ? tlog_error_get() : "");
	fprintf(stderr, "writes: %llu\n", (unsigned long long)fs->bdev->nr_writes);
	tlog_iput(mnt, dir);
	tlog_mount_close(mnt);
	tlog_close(fs);
	return err ? 1 : 0;
}
