// SPDX-License-Identifier: GPL-2.0-only
/*
 * The fsync contract of tree-log-write.c on a memory device: random
 * writes, truncates, xattr changes, chmods, new files (some in new
 * directories) with fsyncs and the odd sync, then a power cut (the mount
 * closed without a commit).  After the log is replayed (btrfs_replay_log),
 * every file not changed since its last fsync or sync has exactly the
 * name, size, data, mode and xattrs it had then.  The runs must have
 * logged (not only committed) for the test to count.
 *
 * TLOG_TEST_SEED changes the seed; failures name it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "errctx.h"
#include "file.h"
#include "inode-ops.h"
#include "inode.h"
#include "mem-fs.h"
#include "tree-log.h"

#define NR_FILES	6
#define MAX_SIZE	(96U * 1024)
#define NR_XATTRS	3

static const char *const xattr_names[NR_XATTRS] = { "user.a", "user.b", "user.c" };

struct m_file {
	char path[32];
	bool exists;
	bool clean;		/* unchanged since its last fsync or sync */
	u64 ino;
	/* the state now, and at its last fsync or sync */
	struct m_state {
		u64 size;
		u32 mode;
		u8 data[MAX_SIZE];
		u8 xattr[NR_XATTRS];	/* 0: not set, else the one-byte value */
	} now, durable;
};

struct run {
	u64 seed;
	struct tlog_bdev *bdev;
	struct tlog_fs *fs;
	struct tlog_mount *mnt;
	struct m_file files[NR_FILES];
	u64 log_syncs, commits;
};

static struct tlog_inode *lookup(struct run *r, const char *path)
{
	struct tlog_inode *inode;
	int err = tlog_lookup_path(r->mnt, path, &inode);

	cr_assert_eq(err, 0, "seed %llu: lookup %s: %d %s", (unsigned long long)r->seed, path, err,
		     tlog_error_get());
	return inode;
}

static void check(struct run *r, int err, const char *what)
{
	cr_assert_eq(err, 0, "seed %llu: %s: %d %s", (unsigned long long)r->seed, what, err,
		     tlog_error_get());
}

static void make_durable(struct m_file *f)
{
	f->durable = f->now;
	f->clean = true;
}

static void op_create(struct run *r, struct m_file *f)
{
	struct tlog_inode *dir, *inode;
	const char *slash = strrchr(f->path, '/');
	char parent[32];

	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - f->path), f->path);
	if (parent[0] && tlog_lookup_path(r->mnt, parent, &dir) == -ENOENT) {
		struct tlog_inode *top = lookup(r, "/");

		check(r, tlog_create(r->mnt, top, parent + 1, (u16)strlen(parent + 1), S_IFDIR | 0755,
				     0, NULL, NULL), "mkdir");
		tlog_iput(r->mnt, top);
		dir = lookup(r, parent);
	} else if (!parent[0]) {
		dir = lookup(r, "/");
	}
	check(r, tlog_create(r->mnt, dir, slash + 1, (u16)strlen(slash + 1), S_IFREG | 0644, 0,
			     NULL, &inode), "create");
	f->ino = inode->ino;
	tlog_iput(r->mnt, inode);
	tlog_iput(r->mnt, dir);
	f->exists = true;
	f->clean = false;
	memset(&f->now, 0, sizeof(f->now));
	f->now.mode = S_IFREG | 0644;
}

static void op_change(struct run *r, struct m_file *f)
{
	struct tlog_inode *inode = lookup(r, f->path);
	u32 k = memfs_rng(&r->seed) % 10;

	if (k < 5) {
		u64 off = memfs_rng(&r->seed) % MAX_SIZE, len = 1 + memfs_rng(&r->seed) % 20000;
		u8 byte = (u8)(1 + memfs_rng(&r->seed) % 250);

		if (off + len > MAX_SIZE)
			len = MAX_SIZE - off;
		check(r, tlog_write(r->mnt, inode, off, len, byte), "write");
		memset(f->now.data + off, byte, len);
		if (off + len > f->now.size)
			f->now.size = off + len;
	} else if (k < 7) {
		u64 size = memfs_rng(&r->seed) % MAX_SIZE;

		check(r, tlog_truncate(r->mnt, inode, size), "truncate");
		if (size < f->now.size)
			memset(f->now.data + size, 0, MAX_SIZE - size);
		f->now.size = size;
	} else if (k < 9) {
		u32 x = memfs_rng(&r->seed) % NR_XATTRS;

		if (f->now.xattr[x] && memfs_rng(&r->seed) % 2) {
			check(r, tlog_removexattr(r->mnt, inode, xattr_names[x]), "removexattr");
			f->now.xattr[x] = 0;
		} else {
			u8 v = (u8)('0' + memfs_rng(&r->seed) % 40);

			check(r, tlog_setxattr(r->mnt, inode, xattr_names[x], &v, 1, 0), "setxattr");
			f->now.xattr[x] = v;
		}
	} else {
		u32 mode = S_IFREG | (0600 | (memfs_rng(&r->seed) % 0100));

		check(r, tlog_chmod(r->mnt, inode, mode & 07777), "chmod");
		f->now.mode = mode;
	}
	f->clean = false;
	tlog_iput(r->mnt, inode);
}

static void op_fsync(struct run *r, struct m_file *f)
{
	struct tlog_inode *inode = lookup(r, f->path);
	u64 commits = r->mnt->stats.transactions;

	check(r, tlog_fsync(r->mnt, inode, memfs_rng(&r->seed) % 4 == 0), "fsync");
	tlog_iput(r->mnt, inode);
	make_durable(f);
	/* a commit makes every file's state durable */
	if (r->mnt->stats.transactions != commits)
		for (int i = 0; i < NR_FILES; i++)
			if (r->files[i].exists)
				make_durable(&r->files[i]);
}

static int replay(struct tlog_fs *fs)
{
	struct tlog_trans *trans;
	int err = tlog_trans_start_flags(fs, TLOG_TRANS_LOG_REPLAY, &trans);

	if (err)
		return err;
	err = btrfs_replay_log(trans, NULL);
	if (err) {
		tlog_trans_abort(trans);
		return err;
	}
	return tlog_trans_commit(trans);
}

static int have_xattr(const struct tlog_dir_entry *de, void *arg)
{
	u8 *found = arg;

	for (int i = 0; i < NR_XATTRS; i++)
		if (de->name_len == strlen(xattr_names[i]) &&
		    !memcmp(de->name, xattr_names[i], de->name_len) && de->data_len == 1)
			found[i] = de->data[0];
	return 0;
}

static void check_file(struct run *r, struct btrfs_root *root, const struct m_file *f)
{
	struct btrfs_key min = { f->ino, BTRFS_XATTR_ITEM_KEY, 0 };
	struct btrfs_key max = { f->ino, BTRFS_XATTR_ITEM_KEY, (u64)-1 };
	struct btrfs_inode_item ii;
	struct btrfs_tree_iter iter;
	struct tlog_file *file;
	static u8 buf[MAX_SIZE];
	u8 found[NR_XATTRS] = { 0 };
	struct tlog_dir_entry de;
	const char *name = strrchr(f->path, '/') + 1;
	u64 dir = BTRFS_FIRST_FREE_OBJECTID;
	ssize_t n;

	if (f->path[1] != '/' && strchr(f->path + 1, '/')) {
		char parent[32];

		snprintf(parent, sizeof(parent), "%.*s", (int)(name - 1 - f->path - 1), f->path + 1);
		cr_assert_eq(btrfs_lookup_dir_entry(root, dir, parent, strlen(parent), &de), 0,
			     "seed %llu: %s: its directory is gone", (unsigned long long)r->seed,
			     f->path);
		dir = de.location.objectid;
	}
	cr_assert_eq(btrfs_lookup_dir_entry(root, dir, name, strlen(name), &de), 0,
		     "seed %llu: %s: fsynced and gone", (unsigned long long)r->seed, f->path);
	cr_assert_eq(de.location.objectid, f->ino, "seed %llu: %s: another inode",
		     (unsigned long long)r->seed, f->path);
	check(r, btrfs_read_inode(root, f->ino, &ii), "read inode");
	cr_assert_eq(btrfs_inode_item_size(&ii), f->durable.size, "seed %llu: %s: size %llu, want %llu",
		     (unsigned long long)r->seed, f->path,
		     (unsigned long long)btrfs_inode_item_size(&ii),
		     (unsigned long long)f->durable.size);
	cr_assert_eq(btrfs_inode_item_mode(&ii), f->durable.mode, "seed %llu: %s: mode %o, want %o",
		     (unsigned long long)r->seed, f->path, btrfs_inode_item_mode(&ii),
		     f->durable.mode);
	check(r, tlog_file_open(r->fs, root, f->ino, &file), "file open");
	n = tlog_file_pread(file, buf, f->durable.size, 0);
	tlog_file_close(file);
	cr_assert_eq(n, (ssize_t)f->durable.size, "seed %llu: %s: read %zd", (unsigned long long)r->seed,
		     f->path, n);
	for (u64 i = 0; i < f->durable.size; i++)
		cr_assert_eq(buf[i], f->durable.data[i], "seed %llu: %s: byte %llu is %u, want %u",
			     (unsigned long long)r->seed, f->path, (unsigned long long)i, buf[i],
			     f->durable.data[i]);
	btrfs_for_each_item(root, &iter, &min, &max)
		btrfs_for_each_dir_entry(iter.leaf, iter.slot, have_xattr, found);
	btrfs_tree_iter_end(&iter);
	for (int i = 0; i < NR_XATTRS; i++)
		cr_assert_eq(found[i], f->durable.xattr[i], "seed %llu: %s: xattr %s is %u, want %u",
			     (unsigned long long)r->seed, f->path, xattr_names[i], found[i],
			     f->durable.xattr[i]);
}

/* One run: @nr_ops random operations, the power cut, the replay, the checks. */
static void one_run(u64 seed, int nr_ops, u64 *log_syncs, u64 *checked)
{
	static struct run r;
	struct btrfs_root *root;

	memset(&r, 0, sizeof(r));
	r.seed = seed;
	r.bdev = memfs_make();
	r.fs = memfs_open(r.bdev, 0, 0);
	check(&r, tlog_mount_open(r.fs, &r.mnt), "mount");
	/* every third file in a directory of its own, made with it: new ancestors */
	for (int i = 0; i < NR_FILES; i++) {
		if (i % 3 == 2)
			snprintf(r.files[i].path, sizeof(r.files[i].path), "/d%d/f%d", i, i);
		else
			snprintf(r.files[i].path, sizeof(r.files[i].path), "/f%d", i);
	}
	/* something committed first, as a mounted filesystem has */
	op_create(&r, &r.files[0]);
	check(&r, tlog_sync(r.mnt), "sync");
	make_durable(&r.files[0]);
	for (int op = 0; op < nr_ops; op++) {
		struct m_file *f = &r.files[memfs_rng(&r.seed) % NR_FILES];
		u32 k = memfs_rng(&r.seed) % 20;

		tlog_mount_tick(r.mnt);
		if (!f->exists)
			op_create(&r, f);
		else if (k < 12)
			op_change(&r, f);
		else if (k < 19)
			op_fsync(&r, f);
		else {
			check(&r, tlog_sync(r.mnt), "sync");
			for (int i = 0; i < NR_FILES; i++)
				if (r.files[i].exists)
					make_durable(&r.files[i]);
		}
	}
	*log_syncs += r.mnt->stats.log_syncs;
	/* the power cut */
	tlog_mount_close(r.mnt);
	tlog_close(r.fs);
	r.fs = memfs_open(r.bdev, 0, 0);
	check(&r, replay(r.fs), "replay");
	tlog_close(r.fs);
	r.fs = memfs_open(r.bdev, 0, 0);
	root = memfs_root(r.fs, BTRFS_FS_TREE_OBJECTID);
	for (int i = 0; i < NR_FILES; i++) {
		if (!r.files[i].exists || !r.files[i].clean)
			continue;
		check_file(&r, root, &r.files[i]);
		(*checked)++;
	}
	tlog_close(r.fs);
	tlog_bdev_close(r.bdev);
}

Test(log_write, fsynced_files_survive_a_power_cut, .timeout = 300)
{
	u64 seed = memfs_seed(), log_syncs = 0, checked = 0;

	for (int run = 0; run < 40; run++)
		one_run(seed + (u64)run * 7919, 12 + run % 30, &log_syncs, &checked);
	cr_log_info("fsync contract: %llu files checked, %llu log syncs",
		    (unsigned long long)checked, (unsigned long long)log_syncs);
	cr_assert_gt(log_syncs, 0, "no fsync logged: the contract was only tested on commits");
	cr_assert_gt(checked, 0);
}
