// SPDX-License-Identifier: GPL-2.0-only
/*
 * The fsync contract of tree-log-write.c on a memory device: random
 * writes, truncates, xattr changes, chmods, renames, new files (some in
 * new directories) with fsyncs of files and directories and the odd sync,
 * then a power cut (the mount closed without a commit).  After the log is
 * replayed (btrfs_replay_log), every file not changed since its last
 * fsync or sync has exactly the name, size, data, mode and xattrs it had
 * then.  The runs must have logged (not only committed), directories and
 * renamed files included, for the test to count.
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
	int nr;			/* its place in run.files */
	bool exists;
	bool clean;		/* unchanged since its last fsync or sync */
	u64 ino;
	/* the state now, and at its last fsync or sync */
	struct m_state {
		char path[32];
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
	u64 dir_fsyncs, renames;
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
	const char *slash = strrchr(f->now.path, '/');
	char parent[32];

	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - f->now.path), f->now.path);
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
	memset(&f->now.size, 0, sizeof(f->now) - sizeof(f->now.path));
	f->now.mode = S_IFREG | 0644;
}

/*
 * A rename to a name no other file has: within its directory, or from a
 * directory to the top.  Its parents are logged at its next fsync.
 */
static void op_rename(struct run *r, struct m_file *f)
{
	const char *slash = strrchr(f->now.path, '/');
	bool to_top = slash != f->now.path && memfs_rng(&r->seed) % 2;
	char odir[32], ndir[32], nname[16], npath[64];
	struct tlog_inode *od, *nd;

	snprintf(odir, sizeof(odir), "%.*s", (int)(slash - f->now.path), f->now.path);
	snprintf(ndir, sizeof(ndir), "%s", to_top ? "" : odir);
	snprintf(nname, sizeof(nname), "g%d_%u", f->nr, (unsigned)(memfs_rng(&r->seed) % 100000));
	snprintf(npath, sizeof(npath), "%s/%s", ndir, nname);
	od = lookup(r, odir[0] ? odir : "/");
	nd = lookup(r, ndir[0] ? ndir : "/");
	check(r, tlog_rename(r->mnt, od, slash + 1, (u16)strlen(slash + 1), nd, nname,
			     (u16)strlen(nname), TLOG_RENAME_NOREPLACE), "rename");
	tlog_iput(r->mnt, od);
	tlog_iput(r->mnt, nd);
	cr_assert_lt(strlen(npath), sizeof(f->now.path));
	memcpy(f->now.path, npath, strlen(npath) + 1);
	f->clean = false;
	r->renames++;
}

/* fsync of the top directory: its new entries logged, no file's state changed. */
static void op_fsync_dir(struct run *r)
{
	struct tlog_inode *dir = lookup(r, "/");

	check(r, tlog_fsync(r->mnt, dir, false), "fsync /");
	tlog_iput(r->mnt, dir);
	r->dir_fsyncs++;
}

static void op_change(struct run *r, struct m_file *f)
{
	struct tlog_inode *inode = lookup(r, f->now.path);
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
	struct tlog_inode *inode = lookup(r, f->now.path);

	check(r, tlog_fsync(r->mnt, inode, memfs_rng(&r->seed) % 4 == 0), "fsync");
	tlog_iput(r->mnt, inode);
	/*
	 * Only this file: a full commit instead of the log writes no other
	 * file's dirty data back (nor does the kernel's), so the others'
	 * states since their last fsync are not known to be on disk.
	 */
	make_durable(f);
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
	const char *path = f->durable.path;
	const char *name = strrchr(path, '/') + 1;
	u64 dir = BTRFS_FIRST_FREE_OBJECTID;
	ssize_t n;

	if (strchr(path + 1, '/')) {
		char parent[32];

		snprintf(parent, sizeof(parent), "%.*s", (int)(name - 1 - path - 1), path + 1);
		cr_assert_eq(btrfs_lookup_dir_entry(root, dir, parent, strlen(parent), &de), 0,
			     "seed %llu: %s: its directory is gone", (unsigned long long)r->seed,
			     path);
		dir = de.location.objectid;
	}
	cr_assert_eq(btrfs_lookup_dir_entry(root, dir, name, strlen(name), &de), 0,
		     "seed %llu: %s: fsynced and gone", (unsigned long long)r->seed, path);
	cr_assert_eq(de.location.objectid, f->ino, "seed %llu: %s: another inode",
		     (unsigned long long)r->seed, path);
	check(r, btrfs_read_inode(root, f->ino, &ii), "read inode");
	cr_assert_eq(btrfs_inode_item_size(&ii), f->durable.size, "seed %llu: %s: size %llu, want %llu",
		     (unsigned long long)r->seed, path,
		     (unsigned long long)btrfs_inode_item_size(&ii),
		     (unsigned long long)f->durable.size);
	cr_assert_eq(btrfs_inode_item_mode(&ii), f->durable.mode, "seed %llu: %s: mode %o, want %o",
		     (unsigned long long)r->seed, path, btrfs_inode_item_mode(&ii),
		     f->durable.mode);
	check(r, tlog_file_open(r->fs, root, f->ino, &file), "file open");
	n = tlog_file_pread(file, buf, f->durable.size, 0);
	tlog_file_close(file);
	cr_assert_eq(n, (ssize_t)f->durable.size, "seed %llu: %s: read %zd", (unsigned long long)r->seed,
		     path, n);
	for (u64 i = 0; i < f->durable.size; i++)
		cr_assert_eq(buf[i], f->durable.data[i], "seed %llu: %s: byte %llu is %u, want %u",
			     (unsigned long long)r->seed, path, (unsigned long long)i, buf[i],
			     f->durable.data[i]);
	btrfs_for_each_item(root, &iter, &min, &max)
		btrfs_for_each_dir_entry(iter.leaf, iter.slot, have_xattr, found);
	btrfs_tree_iter_end(&iter);
	for (int i = 0; i < NR_XATTRS; i++)
		cr_assert_eq(found[i], f->durable.xattr[i], "seed %llu: %s: xattr %s is %u, want %u",
			     (unsigned long long)r->seed, path, xattr_names[i], found[i],
			     f->durable.xattr[i]);
}

/* One run: @nr_ops random operations, the power cut, the replay, the checks. */
static void one_run(u64 seed, int nr_ops, u64 *log_syncs, u64 *checked, u64 *dir_fsyncs,
		    u64 *renames)
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
		r.files[i].nr = i;
		if (i % 3 == 2)
			snprintf(r.files[i].now.path, sizeof(r.files[i].now.path), "/d%d/f%d", i, i);
		else
			snprintf(r.files[i].now.path, sizeof(r.files[i].now.path), "/f%d", i);
	}
	/* something committed first, as a mounted filesystem has */
	op_create(&r, &r.files[0]);
	check(&r, tlog_sync(r.mnt), "sync");
	make_durable(&r.files[0]);
	for (int op = 0; op < nr_ops; op++) {
		struct m_file *f = &r.files[memfs_rng(&r.seed) % NR_FILES];
		u32 k = memfs_rng(&r.seed) % 24;

		tlog_mount_tick(r.mnt);
		if (getenv("TLOG_TEST_TRACE"))
			fprintf(stderr, "op %d: file %d (%s) k %u\n", op, f->nr, f->now.path, k);
		if (!f->exists)
			op_create(&r, f);
		else if (k < 12)
			op_change(&r, f);
		else if (k < 19)
			op_fsync(&r, f);
		else if (k < 21)
			op_rename(&r, f);
		else if (k < 23)
			op_fsync_dir(&r);
		else {
			check(&r, tlog_sync(r.mnt), "sync");
			for (int i = 0; i < NR_FILES; i++)
				if (r.files[i].exists)
					make_durable(&r.files[i]);
		}
	}
	*log_syncs += r.mnt->stats.log_syncs;
	*dir_fsyncs += r.dir_fsyncs;
	*renames += r.renames;
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
	u64 seed = memfs_seed(), log_syncs = 0, checked = 0, dir_fsyncs = 0, renames = 0;

	for (int run = 0; run < 40; run++)
		one_run(seed + (u64)run * 7919, 12 + run % 30, &log_syncs, &checked, &dir_fsyncs,
			&renames);
	cr_log_info("fsync contract: %llu files checked, %llu log syncs, %llu directory fsyncs, "
		    "%llu renames", (unsigned long long)checked, (unsigned long long)log_syncs,
		    (unsigned long long)dir_fsyncs, (unsigned long long)renames);
	cr_assert_gt(log_syncs, 0, "no fsync logged: the contract was only tested on commits");
	cr_assert_gt(dir_fsyncs, 0, "no directory fsync");
	cr_assert_gt(renames, 0, "no rename");
	cr_assert_gt(checked, 0);
}
