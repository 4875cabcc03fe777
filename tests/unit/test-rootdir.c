// SPDX-License-Identifier: GPL-2.0-only
/*
 * The populator of mkfs --rootdir (rootdir.c) on a memory filesystem, fed
 * by a fake source over an array of entries: what it makes is read back
 * with the library's readers (inode items, names, extents, xattrs, root
 * items) and compared with what the entries say.
 *
 *  - focused cases: every file type and its metadata (modes with setuid,
 *    owners, all four times with nanoseconds, rdev), inline and regular
 *    extents with holes left as holes, xattrs set after the data (so a
 *    capability survives), hard links from link ids and from an
 *    archive's earlier paths, implicit parents, a duplicate path, bad
 *    names, subvolumes (read-only, default), inode flags and their
 *    inheritance, --owner and time clamping;
 *  - a model-based random test: random trees of entries in a directory
 *    source's order, populated, every path read back against the model;
 *    the same tree twice gives the same device bytes.
 *
 * TLOG_TEST_SEED changes the seed of the random test; ROOTDIR_DUMP=PREFIX
 * writes every image populated without error to PREFIX.PID.N, to look at
 * with btrfs check or a loop mount.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "blockdev.h"
#include "csum.h"
#include "dir-item.h"
#include "errctx.h"
#include "file.h"
#include "inode-ops.h"
#include "inode.h"
#include "mem-fs.h"
#include "root-tree.h"
#include "rootdir.h"

#define FIXED_NOW	1700000000ULL

/* ---- the fake source ---- */

struct fblock {
	u64 off, len;
};

struct fent {
	struct tlog_src_entry e;
	const struct fblock *blocks;	/* regular files: the data, the rest holes */
	size_t nr_blocks;
	u8 seed;			/* of the data's bytes */
};

struct fsrc {
	struct tlog_source src;
	const struct fent *v;
	size_t nr, next, blk;
	u8 *buf;
	size_t buf_size;
	bool fail_read;			/* read_data fails */
	int fd;				/* data_fd's answer, when fsrc_ops_fd is used */
};

/* The byte at offset @x of a file whose data has seed @seed. */
static u8 content(u8 seed, u64 x)
{
	return (u8)(seed * 31 + x * 7 + (x >> 9) + 1);
}

static int fsrc_next(struct tlog_source *s, struct tlog_src_entry *e)
{
	struct fsrc *f = (struct fsrc *)s;

	if (f->next >= f->nr)
		return 1;
	*e = f->v[f->next++].e;
	f->blk = 0;
	return 0;
}

static int fsrc_read(struct tlog_source *s, const void **buf, size_t *len, u64 *off)
{
	struct fsrc *f = (struct fsrc *)s;
	const struct fent *fe = &f->v[f->next - 1];
	const struct fblock *b;

	if (f->fail_read)
		return tlog_error(-EIO, "%s: read failed", fe->e.path);
	if (f->blk >= fe->nr_blocks)
		return 1;
	b = &fe->blocks[f->blk++];
	if (b->len > f->buf_size) {
		free(f->buf);
		f->buf = malloc(b->len);
		cr_assert(f->buf);
		f->buf_size = b->len;
	}
	for (u64 i = 0; i < b->len; i++)
		f->buf[i] = content(fe->seed, b->off + i);
	*buf = f->buf;
	*len = b->len;
	*off = b->off;
	return 0;
}

static const struct tlog_source_ops fsrc_ops = {
	.next = fsrc_next,
	.read_data = fsrc_read,
};

static int fsrc_data_fd(struct tlog_source *s)
{
	return ((struct fsrc *)s)->fd;
}

static const struct tlog_source_ops fsrc_ops_fd = {
	.next = fsrc_next,
	.read_data = fsrc_read,
	.data_fd = fsrc_data_fd,
};

/* ---- populating a fresh memory filesystem ---- */

struct run {
	struct tlog_bdev *bdev;
	struct tlog_fs *fs;		/* open for reading back after populate */
	struct btrfs_root *top;
	int err;
	char why[512];
	struct tlog_rootdir_stats stats;
};

/* The device of the next run_populate() holds @base_image when set (else a new mkfs). */
static const u8 *base_image;

static struct tlog_bdev *new_device(void)
{
	struct tlog_bdev *bdev;

	if (!base_image)
		return memfs_make();
	cr_assert_eq(tlog_bdev_create_memory("rootdir", MEMFS_SIZE, &bdev), 0);
	cr_assert_eq(tlog_bdev_write(bdev, base_image, MEMFS_SIZE, 0), 0);
	return bdev;
}

static void run_populate(struct run *r, const struct fent *v, size_t nr,
			 const struct tlog_rootdir_opts *o)
{
	struct fsrc f = { .src = { .ops = &fsrc_ops, .name = "fake" }, .v = v, .nr = nr };
	struct tlog_mount *mnt;
	struct tlog_fs *fs;

	memset(r, 0, sizeof(*r));
	r->bdev = new_device();
	fs = memfs_open(r->bdev, 0, 0);
	cr_assert_eq(tlog_mount_open(fs, &mnt), 0);
	tlog_mount_set_fixed_time(mnt, FIXED_NOW);
	r->err = tlog_rootdir_populate(mnt, &f.src, o, &r->stats);
	if (r->err && tlog_error_get())
		snprintf(r->why, sizeof(r->why), "%s", tlog_error_get());
	tlog_mount_close(mnt);
	tlog_close(fs);
	free(f.buf);
	r->fs = memfs_open(r->bdev, 0, 0);
	r->top = memfs_root(r->fs, BTRFS_FS_TREE_OBJECTID);
}

static u8 *device_bytes(struct tlog_bdev *bdev);

/* ROOTDIR_DUMP=PREFIX: each image is written to PREFIX.PID.N too, for btrfs check and mount. */
static void dump_image(struct run *r)
{
	static int n;
	const char *prefix = getenv("ROOTDIR_DUMP");
	char name[4096];
	u8 *img;
	FILE *f;

	if (!prefix)
		return;
	snprintf(name, sizeof(name), "%s.%d.%d", prefix, (int)getpid(), n++);
	img = device_bytes(r->bdev);
	f = fopen(name, "wb");
	cr_assert(f);
	cr_assert_eq(fwrite(img, 1, MEMFS_SIZE, f), MEMFS_SIZE);
	fclose(f);
	free(img);
}

static void run_end(struct run *r)
{
	if (!r->err)
		dump_image(r);
	tlog_close(r->fs);
	tlog_bdev_close(r->bdev);
}

static void populate_ok(struct run *r, const struct fent *v, size_t nr,
			const struct tlog_rootdir_opts *o)
{
	run_populate(r, v, nr, o);
	cr_assert_eq(r->err, 0, "populate: %d (%s)", r->err, r->why);
}

/* ---- reading back ---- */

static struct tlog_ino ino_of(struct run *r, const char *path)
{
	struct tlog_ino ino;
	char abs[4096];
	int err;

	snprintf(abs, sizeof(abs), "/%s", path);
	err = tlog_resolve_path(r->fs, NULL, abs, &ino);
	cr_assert_eq(err, 0, "%s: not found (%d)", path, err);
	return ino;
}

static bool exists(struct run *r, const char *path)
{
	struct tlog_ino ino;
	char abs[4096];

	snprintf(abs, sizeof(abs), "/%s", path);
	return tlog_resolve_path(r->fs, NULL, abs, &ino) == 0;
}

static struct btrfs_inode_item item_of(struct run *r, const char *path)
{
	struct tlog_ino ino = ino_of(r, path);
	struct btrfs_inode_item ii;

	cr_assert_eq(btrfs_read_inode(ino.root, ino.ino, &ii), 0, "%s: no inode item", path);
	return ii;
}

/* The same in static storage, for one use at a time. */
static const struct btrfs_inode_item *item_ptr(struct run *r, const char *path)
{
	static struct btrfs_inode_item ii;

	ii = item_of(r, path);
	return &ii;
}

static void assert_time(const struct btrfs_timespec *t, s64 sec, u32 nsec, const char *what)
{
	cr_assert_eq((s64)btrfs_timespec_sec(t), sec, "%s: sec %lld, want %lld", what,
		     (long long)btrfs_timespec_sec(t), (long long)sec);
	cr_assert_eq(btrfs_timespec_nsec(t), nsec, "%s: nsec %u, want %u", what,
		     btrfs_timespec_nsec(t), nsec);
}

/* The file at @path holds @size bytes: the blocks of @seed, zeros elsewhere. */
static void assert_contents(struct run *r, const char *path, u64 size, const struct fblock *b,
			    size_t nr, u8 seed)
{
	struct tlog_ino ino = ino_of(r, path);
	struct tlog_file *file;
	u8 *buf = malloc(size + 1), *want = calloc(1, size + 1);
	ssize_t got;

	cr_assert(buf);
	cr_assert_eq(tlog_file_open(r->fs, ino.root, ino.ino, &file), 0);
	got = tlog_file_pread(file, buf, size + 1, 0);
	cr_assert_eq(got, (ssize_t)size, "%s: read %zd of %llu", path, got,
		     (unsigned long long)size);
	cr_assert(want);
	for (size_t i = 0; i < nr; i++)
		for (u64 x = b[i].off; x < b[i].off + b[i].len && x < size; x++)
			want[x] = content(seed, x);
	if (memcmp(buf, want, size)) {
		u64 x = 0;

		while (buf[x] == want[x])
			x++;
		cr_assert_fail("%s: byte %llu is %u, want %u", path, (unsigned long long)x,
			       buf[x], want[x]);
	}
	tlog_file_close(file);
	free(buf);
	free(want);
}

struct ext {
	u64 off, len;
	u8 type;
};

/* The EXTENT_DATA items of @path (at most @max), their number returned. */
static size_t extents_of(struct run *r, const char *path, struct ext *v, size_t max)
{
	struct tlog_ino ino = ino_of(r, path);
	struct btrfs_key min = { ino.ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_key maxk = { ino.ino, BTRFS_EXTENT_DATA_KEY, (u64)-1 };
	struct btrfs_tree_iter it;
	size_t n = 0;

	btrfs_for_each_item(ino.root, &it, &min, &maxk) {
		const struct btrfs_file_extent_item *fi = btrfs_item_ptr(it.leaf, it.slot);
		u8 type = btrfs_file_extent_item_type(fi);

		cr_assert_lt(n, max);
		v[n].off = it.key.offset;
		v[n].type = type;
		v[n].len = type == BTRFS_FILE_EXTENT_INLINE ?
			   btrfs_file_extent_item_ram_bytes(fi) :
			   btrfs_file_extent_item_num_bytes(fi);
		if (type != BTRFS_FILE_EXTENT_INLINE)
			cr_assert_neq(btrfs_file_extent_item_disk_bytenr(fi), 0,
				      "%s: a hole extent at %llu", path,
				      (unsigned long long)it.key.offset);
		n++;
	}
	cr_assert_eq(it.ret, 1);
	btrfs_tree_iter_end(&it);
	return n;
}

struct xfind {
	const char *name;
	u8 value[256];
	int len;		/* -1: absent */
	int count;
};

static int xfind_cb(const struct tlog_dir_entry *de, void *arg)
{
	struct xfind *x = arg;

	x->count++;
	if (de->name_len == strlen(x->name) && !memcmp(de->name, x->name, de->name_len)) {
		x->len = de->data_len < sizeof(x->value) ? de->data_len : sizeof(x->value);
		memcpy(x->value, de->data, x->len);
	}
	return 0;
}

/* The value of xattr @name of @path (length, -1 if absent); *@count gets how many it has. */
static int xattr_of(struct run *r, const char *path, const char *name, void *value, int *count)
{
	struct tlog_ino ino = ino_of(r, path);
	struct btrfs_key min = { ino.ino, BTRFS_XATTR_ITEM_KEY, 0 };
	struct btrfs_key max = { ino.ino, BTRFS_XATTR_ITEM_KEY, (u64)-1 };
	struct btrfs_tree_iter it;
	struct xfind x = { .name = name, .len = -1 };

	btrfs_for_each_item(ino.root, &it, &min, &max)
		cr_assert_eq(btrfs_for_each_dir_entry(it.leaf, it.slot, xfind_cb, &x), 0);
	cr_assert_eq(it.ret, 1);
	btrfs_tree_iter_end(&it);
	if (value && x.len > 0)
		memcpy(value, x.value, x.len);
	if (count)
		*count = x.count;
	return x.len;
}

static u32 names_of(struct run *r, const char *path)
{
	struct tlog_ino ino = ino_of(r, path);
	u32 n = 0;

	cr_assert_eq(btrfs_count_inode_names(ino.root, ino.ino, &n), 0);
	return n;
}

#define TS(s, n)	((struct timespec){ (s), (n) })
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ---- focused cases ---- */

static const struct fblock small_blocks[] = { { 0, 100 } };
static const struct fblock sparse_blocks[] = { { 0, 8192 }, { 65536, 4096 } };
static const u8 cap_value[20] = { 1, 0, 0, 2 };
static const struct tlog_src_xattr suid_xattrs[] = {
	{ "security.capability", cap_value, sizeof(cap_value) },
	{ "user.a", "hello", 5 },
};
static const struct tlog_src_xattr root_xattrs[] = {
	{ "user.root", "r", 1 },
};

Test(rootdir, types_and_metadata)
{
	const struct fent v[] = {
		{ .e = { .path = "", .mode = S_IFDIR | 0750, .uid = 5, .gid = 6,
			 .atime = TS(100, 1), .mtime = TS(200, 2), .ctime = TS(300, 3),
			 .xattrs = root_xattrs, .nr_xattrs = 1 } },
		{ .e = { .path = "d", .mode = S_IFDIR | 0711, .uid = 7, .gid = 8,
			 .atime = TS(1000, 11), .mtime = TS(2000, 22), .ctime = TS(3000, 33),
			 .btime = TS(500, 44), .has_btime = true } },
		{ .e = { .path = "d/small", .mode = S_IFREG | 0644, .size = 100,
			 .mtime = TS(1234, 999999999), .ctime = TS(1235, 1) },
		  .blocks = small_blocks, .nr_blocks = 1, .seed = 1 },
		{ .e = { .path = "d/sparse", .mode = S_IFREG | 0600, .size = 1 << 20,
			 .mtime = TS(5, 5), .ctime = TS(6, 6) },
		  .blocks = sparse_blocks, .nr_blocks = 2, .seed = 2 },
		{ .e = { .path = "d/suid", .mode = S_IFREG | 04755, .uid = 1000, .gid = 1000,
			 .size = 5000, .xattrs = suid_xattrs, .nr_xattrs = 2,
			 .mtime = TS(7, 7), .ctime = TS(8, 8) },
		  .blocks = (const struct fblock[]){ { 0, 5000 } }, .nr_blocks = 1, .seed = 3 },
		{ .e = { .path = "d/link", .mode = S_IFLNK | 0777, .symlink = "small",
			 .uid = 3, .gid = 4, .mtime = TS(9, 9), .ctime = TS(10, 10) } },
		{ .e = { .path = "d/fifo", .mode = S_IFIFO | 0640, .mtime = TS(11, 11) } },
		{ .e = { .path = "d/sock", .mode = S_IFSOCK | 0755 } },
		{ .e = { .path = "d/chr", .mode = S_IFCHR | 0620, .rdev = makedev(4, 64) } },
		{ .e = { .path = "d/blk", .mode = S_IFBLK | 0660, .rdev = makedev(259, 70000) } },
		{ .e = { .path = "d/empty", .mode = S_IFREG | 01644, .size = 0 } },
	};
	struct btrfs_inode_item ii;
	struct ext ex[8];
	u8 val[64];
	char target[64];
	struct tlog_ino ino;
	struct run r;
	int count;

	populate_ok(&r, v, ARRAY_SIZE(v), NULL);

	ii = item_of(&r, "");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFDIR | 0750);
	cr_assert_eq(btrfs_inode_item_uid(&ii), 5);
	cr_assert_eq(btrfs_inode_item_gid(&ii), 6);
	assert_time(&ii.atime, 100, 1, "root atime");
	assert_time(&ii.mtime, 200, 2, "root mtime");
	assert_time(&ii.ctime, 300, 3, "root ctime");
	assert_time(&ii.otime, 200, 2, "root otime (mtime without btime)");
	cr_assert_eq(xattr_of(&r, "", "user.root", val, NULL), 1);

	/* d got its children after its own entry: its times are still the source's */
	ii = item_of(&r, "d");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFDIR | 0711);
	cr_assert_eq(btrfs_inode_item_uid(&ii), 7);
	assert_time(&ii.atime, 1000, 11, "d atime");
	assert_time(&ii.mtime, 2000, 22, "d mtime");
	assert_time(&ii.ctime, 3000, 33, "d ctime");
	assert_time(&ii.otime, 500, 44, "d otime");
	cr_assert_eq(btrfs_inode_item_nlink(&ii), 1);

	ii = item_of(&r, "d/small");
	cr_assert_eq(btrfs_inode_item_size(&ii), 100);
	cr_assert_eq(btrfs_inode_item_nbytes(&ii), 100);
	assert_time(&ii.mtime, 1234, 999999999, "small mtime");
	assert_time(&ii.ctime, 1235, 1, "small ctime");
	cr_assert_eq(extents_of(&r, "d/small", ex, 8), 1);
	cr_assert_eq(ex[0].type, BTRFS_FILE_EXTENT_INLINE);
	assert_contents(&r, "d/small", 100, small_blocks, 1, 1);

	/* holes stay holes: two extents, nothing over the gap or the tail */
	ii = item_of(&r, "d/sparse");
	cr_assert_eq(btrfs_inode_item_size(&ii), 1 << 20);
	cr_assert_eq(btrfs_inode_item_nbytes(&ii), 8192 + 4096);
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFREG | 0600);
	cr_assert_eq(extents_of(&r, "d/sparse", ex, 8), 2);
	cr_assert_eq(ex[0].off, 0);
	cr_assert_eq(ex[0].len, 8192);
	cr_assert_eq(ex[1].off, 65536);
	cr_assert_eq(ex[1].len, 4096);
	assert_contents(&r, "d/sparse", 1 << 20, sparse_blocks, 2, 2);
	cr_assert_eq(r.stats.hole_bytes, (1 << 20) - 8192 - 4096);

	/* setuid kept through chown, the capability through the write */
	ii = item_of(&r, "d/suid");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFREG | 04755);
	cr_assert_eq(btrfs_inode_item_uid(&ii), 1000);
	cr_assert_eq(btrfs_inode_item_gid(&ii), 1000);
	cr_assert_eq(btrfs_inode_item_nbytes(&ii), 8192);
	cr_assert_eq(xattr_of(&r, "d/suid", "security.capability", val, &count),
		     (int)sizeof(cap_value));
	cr_assert(!memcmp(val, cap_value, sizeof(cap_value)));
	cr_assert_eq(count, 2);
	cr_assert_eq(xattr_of(&r, "d/suid", "user.a", val, NULL), 5);
	cr_assert(!memcmp(val, "hello", 5));
	assert_contents(&r, "d/suid", 5000, (const struct fblock[]){ { 0, 5000 } }, 1, 3);

	ii = item_of(&r, "d/link");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFLNK | 0777);
	cr_assert_eq(btrfs_inode_item_uid(&ii), 3);
	assert_time(&ii.ctime, 10, 10, "link ctime");
	ino = ino_of(&r, "d/link");
	cr_assert_eq(btrfs_read_symlink(ino.root, ino.ino, target, sizeof(target)), 5);
	cr_assert_str_eq(target, "small");

	cr_assert_eq(btrfs_inode_item_mode(item_ptr(&r, "d/fifo")),
		     S_IFIFO | 0640);
	ii = item_of(&r, "d/sock");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFSOCK | 0755);
	ii = item_of(&r, "d/chr");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFCHR | 0620);
	cr_assert_eq(btrfs_inode_item_rdev(&ii), (4ULL << 20) | 64);
	ii = item_of(&r, "d/blk");
	cr_assert_eq(btrfs_inode_item_rdev(&ii), (259ULL << 20) | 70000);
	ii = item_of(&r, "d/empty");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFREG | 01644);
	cr_assert_eq(btrfs_inode_item_size(&ii), 0);
	cr_assert_eq(extents_of(&r, "d/empty", ex, 8), 0);

	/* inode numbers in entry order */
	cr_assert_eq(ino_of(&r, "d").ino, 257);
	cr_assert_eq(ino_of(&r, "d/small").ino, 258);
	cr_assert_eq(ino_of(&r, "d/empty").ino, 266);

	cr_assert_eq(r.stats.entries, ARRAY_SIZE(v));
	cr_assert_eq(r.stats.files, 4);
	cr_assert_eq(r.stats.dirs, 1);
	cr_assert_eq(r.stats.symlinks, 1);
	cr_assert_eq(r.stats.specials, 4);
	cr_assert_eq(r.stats.xattrs, 3);
	cr_assert_eq(r.stats.data_bytes, 100 + 8192 + 4096 + 5000);
	run_end(&r);
}

Test(rootdir, hard_links_by_id)
{
	const struct fent v[] = {
		{ .e = { .path = "a", .mode = S_IFREG | 0644, .size = 3000, .link_id = 77,
			 .nlink = 3, .mtime = TS(50, 5), .ctime = TS(60, 6) },
		  .blocks = (const struct fblock[]){ { 0, 3000 } }, .nr_blocks = 1, .seed = 9 },
		{ .e = { .path = "d", .mode = S_IFDIR | 0755, .mtime = TS(70, 7),
			 .ctime = TS(80, 8) } },
		{ .e = { .path = "d/b", .mode = S_IFREG | 0644, .size = 3000, .link_id = 77,
			 .nlink = 3, .mtime = TS(50, 5), .ctime = TS(60, 6) } },
		{ .e = { .path = "d/c", .mode = S_IFREG | 0644, .size = 3000, .link_id = 77,
			 .nlink = 3, .mtime = TS(50, 5), .ctime = TS(60, 6) } },
		{ .e = { .path = "e", .mode = S_IFREG | 0644, .size = 0, .link_id = 78,
			 .nlink = 1 } },
	};
	struct btrfs_inode_item ii;
	struct run r;

	populate_ok(&r, v, ARRAY_SIZE(v), NULL);
	cr_assert_eq(ino_of(&r, "a").ino, ino_of(&r, "d/b").ino);
	cr_assert_eq(ino_of(&r, "a").ino, ino_of(&r, "d/c").ino);
	ii = item_of(&r, "d/c");
	cr_assert_eq(btrfs_inode_item_nlink(&ii), 3);
	cr_assert_eq(names_of(&r, "a"), 3);
	assert_time(&ii.ctime, 60, 6, "linked ctime");
	assert_time(&ii.mtime, 50, 5, "linked mtime");
	ii = item_of(&r, "d");
	assert_time(&ii.mtime, 70, 7, "d mtime after links");
	assert_time(&ii.ctime, 80, 8, "d ctime after links");
	assert_contents(&r, "d/b", 3000, (const struct fblock[]){ { 0, 3000 } }, 1, 9);
	cr_assert_eq(r.stats.hardlinks, 2);
	cr_assert_eq(r.stats.files, 2);
	run_end(&r);
}

Test(rootdir, archive_order_and_replacement)
{
	static const struct fblock first[] = { { 0, 6000 } }, second[] = { { 0, 50 } };
	const struct fent v[] = {
		/* a child before its parents: x and x/y made implicitly */
		{ .e = { .path = "x/y/z", .mode = S_IFREG | 0644, .size = 6000 },
		  .blocks = first, .nr_blocks = 1, .seed = 4 },
		{ .e = { .path = "x", .mode = S_IFDIR | 0700, .uid = 9, .mtime = TS(42, 420),
			 .ctime = TS(43, 430) } },
		/* the same path again: replaces */
		{ .e = { .path = "x/y/z", .mode = S_IFREG | 0600, .size = 50 },
		  .blocks = second, .nr_blocks = 1, .seed = 5 },
		{ .e = { .path = "h", .hardlink = "x/y/z" } },
		/* a directory entry for an existing directory: metadata only */
		{ .e = { .path = "x/y", .mode = S_IFDIR | 0701, .mtime = TS(44, 440) } },
	};
	struct btrfs_inode_item ii;
	struct run r;

	populate_ok(&r, v, ARRAY_SIZE(v), NULL);
	ii = item_of(&r, "x");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFDIR | 0700);
	cr_assert_eq(btrfs_inode_item_uid(&ii), 9);
	assert_time(&ii.mtime, 42, 420, "x mtime");
	assert_time(&ii.ctime, 43, 430, "x ctime");
	ii = item_of(&r, "x/y");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFDIR | 0701);
	assert_time(&ii.mtime, 44, 440, "x/y mtime");
	ii = item_of(&r, "x/y/z");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFREG | 0600);
	cr_assert_eq(btrfs_inode_item_size(&ii), 50);
	cr_assert_eq(btrfs_inode_item_nlink(&ii), 2);
	assert_contents(&r, "x/y/z", 50, second, 1, 5);
	cr_assert_eq(ino_of(&r, "h").ino, ino_of(&r, "x/y/z").ino);
	cr_assert_eq(names_of(&r, "h"), 2);
	ii = item_of(&r, "x/y");
	cr_assert_eq(btrfs_inode_item_size(&ii), 2);	/* one name "z", counted twice */
	cr_assert_eq(r.stats.hardlinks, 1);
	run_end(&r);
}

Test(rootdir, bad_names)
{
	char name[300];
	struct fent v[] = {
		{ .e = { .path = "ok", .mode = S_IFDIR | 0755 } },
		{ .e = { .path = name, .mode = S_IFREG | 0644 } },
	};
	struct run r;

	memset(name, 0, sizeof(name));
	memcpy(name, "ok/", 3);
	memset(name + 3, 'n', 256);
	run_populate(&r, v, ARRAY_SIZE(v), NULL);
	cr_assert_eq(r.err, -ENAMETOOLONG);
	cr_assert(strstr(r.why, "ok/nnnn"), "why: %s", r.why);
	run_end(&r);

	name[3 + 255] = 0;		/* 255 bytes: fine */
	populate_ok(&r, v, ARRAY_SIZE(v), NULL);
	cr_assert(exists(&r, name));
	run_end(&r);

	v[1].e.path = "ok/../x";
	run_populate(&r, v, ARRAY_SIZE(v), NULL);
	cr_assert_eq(r.err, -EINVAL);
	run_end(&r);
	v[1].e.path = "ok//x";
	run_populate(&r, v, ARRAY_SIZE(v), NULL);
	cr_assert_eq(r.err, -EINVAL);
	run_end(&r);
	v[1].e.path = "ok/x";
	v[1].e.mode = 0170000 | 0644;	/* no such type */
	run_populate(&r, v, ARRAY_SIZE(v), NULL);
	cr_assert_eq(r.err, -EINVAL);
	cr_assert(strstr(r.why, "ok/x"), "why: %s", r.why);
	run_end(&r);
	v[1].e.mode = S_IFREG | 0644;
	v[1].e.hardlink = "nowhere";
	run_populate(&r, v, ARRAY_SIZE(v), NULL);
	cr_assert_eq(r.err, -ENOENT);
	run_end(&r);
}

Test(rootdir, source_read_error)
{
	const struct fent v[] = {
		{ .e = { .path = "f", .mode = S_IFREG | 0644, .size = 10 },
		  .blocks = (const struct fblock[]){ { 0, 10 } }, .nr_blocks = 1 },
	};
	struct fsrc f = { .src = { .ops = &fsrc_ops, .name = "fake" }, .v = v, .nr = 1,
			  .fail_read = true };
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct tlog_mount *mnt;

	cr_assert_eq(tlog_mount_open(fs, &mnt), 0);
	cr_assert_eq(tlog_rootdir_populate(mnt, &f.src, NULL, NULL), -EIO);
	cr_assert(strstr(tlog_error_get(), "f"));
	tlog_mount_close(mnt);
	tlog_close(fs);
	tlog_bdev_close(bdev);
}

Test(rootdir, subvolumes)
{
	const struct fent v[] = {
		{ .e = { .path = "sv", .mode = S_IFDIR | 0750, .uid = 11, .mtime = TS(90, 9) } },
		{ .e = { .path = "sv/f", .mode = S_IFREG | 0644, .size = 10, .link_id = 5,
			 .nlink = 2 },
		  .blocks = (const struct fblock[]){ { 0, 10 } }, .nr_blocks = 1, .seed = 6 },
		{ .e = { .path = "g", .mode = S_IFREG | 0644, .size = 10, .link_id = 5,
			 .nlink = 2 },
		  .blocks = (const struct fblock[]){ { 0, 10 } }, .nr_blocks = 1, .seed = 6 },
		/* "ro/in" before "ro": the subvolume is made implicitly */
		{ .e = { .path = "ro/in", .mode = S_IFREG | 0644 } },
		{ .e = { .path = "ro", .mode = S_IFDIR | 0700, .mtime = TS(91, 1) } },
		{ .e = { .path = "a", .mode = S_IFDIR | 0755 } },
		{ .e = { .path = "a/def", .mode = S_IFDIR | 0755 } },
		/* an archive's links into another subvolume: copies */
		{ .e = { .path = "sv/small", .mode = S_IFREG | 0640, .size = 50, .uid = 12,
			 .mtime = TS(92, 2) },
		  .blocks = (const struct fblock[]){ { 0, 50 } }, .nr_blocks = 1, .seed = 7 },
		{ .e = { .path = "hs", .hardlink = "sv/small" } },
		{ .e = { .path = "sv/big", .mode = S_IFREG | 0604, .size = 9000 },
		  .blocks = (const struct fblock[]){ { 0, 9000 } }, .nr_blocks = 1, .seed = 8 },
		{ .e = { .path = "hb", .hardlink = "sv/big" } },
	};
	const struct tlog_rootdir_subvol sv[] = {
		{ "sv", TLOG_SUBVOL_RW },
		{ "ro", TLOG_SUBVOL_RO },
		{ "a/def", TLOG_SUBVOL_DEFAULT },
	};
	struct tlog_rootdir_opts o = { .subvols = sv, .nr_subvols = ARRAY_SIZE(sv) };
	struct btrfs_inode_item ii;
	struct btrfs_root *root;
	struct tlog_dir_entry de;
	struct tlog_ino ino;
	struct run r;

	populate_ok(&r, v, ARRAY_SIZE(v), &o);
	cr_assert_eq(r.stats.subvols, 3);
	ino = ino_of(&r, "sv");
	cr_assert_eq(ino.ino, BTRFS_FIRST_FREE_OBJECTID);
	cr_assert_eq(ino.root->root_key.objectid, 256);
	ii = item_of(&r, "sv");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFDIR | 0750);
	cr_assert_eq(btrfs_inode_item_uid(&ii), 11);
	assert_time(&ii.mtime, 90, 9, "sv mtime");
	cr_assert_eq(btrfs_root_item_flags(&ino.root->root_item) & BTRFS_ROOT_SUBVOL_RDONLY, 0);
	/* a link across subvolumes is a copy */
	cr_assert_neq(ino_of(&r, "sv/f").root, ino_of(&r, "g").root);
	cr_assert_eq(btrfs_inode_item_nlink(item_ptr(&r, "g")), 1);
	assert_contents(&r, "g", 10, (const struct fblock[]){ { 0, 10 } }, 1, 6);
	assert_contents(&r, "sv/f", 10, (const struct fblock[]){ { 0, 10 } }, 1, 6);

	ino = ino_of(&r, "ro");
	cr_assert_eq(ino.root->root_key.objectid, 257);
	cr_assert_eq(btrfs_read_root(r.fs, 257, &root), 0);
	cr_assert_neq(btrfs_root_item_flags(&root->root_item) & BTRFS_ROOT_SUBVOL_RDONLY, 0);
	ii = item_of(&r, "ro");
	assert_time(&ii.mtime, 91, 1, "ro mtime");
	cr_assert(exists(&r, "ro/in"));

	ino = ino_of(&r, "a/def");
	cr_assert_eq(ino.root->root_key.objectid, 258);
	cr_assert_eq(btrfs_lookup_dir_entry(r.fs->tree_root, BTRFS_ROOT_TREE_DIR_OBJECTID,
					    "default", 7, &de), 0);
	cr_assert_eq(de.location.objectid, 258);
	cr_assert_eq(de.location.type, BTRFS_ROOT_ITEM_KEY);
	cr_assert_eq(de.location.offset, 0);
	cr_assert_neq(r.fs->incompat & BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL, 0);

	cr_assert_neq(ino_of(&r, "hs").root, ino_of(&r, "sv/small").root);
	ii = item_of(&r, "hs");
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFREG | 0640);
	cr_assert_eq(btrfs_inode_item_uid(&ii), 12);
	cr_assert_eq(btrfs_inode_item_nlink(&ii), 1);
	assert_time(&ii.mtime, 92, 2, "hs mtime");
	assert_contents(&r, "hs", 50, (const struct fblock[]){ { 0, 50 } }, 1, 7);
	assert_contents(&r, "hb", 9000, (const struct fblock[]){ { 0, 9000 } }, 1, 8);
	cr_assert_eq(btrfs_inode_item_mode(item_ptr(&r, "hb")), S_IFREG | 0604);
	run_end(&r);
}

Test(rootdir, subvolume_errors)
{
	const struct fent v[] = {
		{ .e = { .path = "d", .mode = S_IFDIR | 0755 } },
	};
	const struct tlog_rootdir_subvol missing[] = { { "nothere", TLOG_SUBVOL_RW } };
	const struct tlog_rootdir_subvol two[] = {
		{ "d", TLOG_SUBVOL_DEFAULT }, { "e", TLOG_SUBVOL_DEFAULT_RO },
	};
	struct tlog_rootdir_opts o = { .subvols = missing, .nr_subvols = 1 };
	struct run r;

	run_populate(&r, v, ARRAY_SIZE(v), &o);
	cr_assert_eq(r.err, -ENOENT);
	cr_assert(strstr(r.why, "nothere"), "why: %s", r.why);
	run_end(&r);
	o.subvols = two;
	o.nr_subvols = 2;
	run_populate(&r, v, ARRAY_SIZE(v), &o);
	cr_assert_eq(r.err, -EINVAL);
	run_end(&r);
}

Test(rootdir, inode_flags)
{
	const struct fent v[] = {
		{ .e = { .path = "nc", .mode = S_IFDIR | 0755 } },
		{ .e = { .path = "nc/f", .mode = S_IFREG | 0644, .size = 8192 },
		  .blocks = (const struct fblock[]){ { 0, 8192 } }, .nr_blocks = 1, .seed = 1 },
		{ .e = { .path = "nc/sub", .mode = S_IFDIR | 0755 } },
		{ .e = { .path = "ns", .mode = S_IFDIR | 0755 } },
		{ .e = { .path = "ns/f", .mode = S_IFREG | 0644, .size = 8192 },
		  .blocks = (const struct fblock[]){ { 0, 8192 } }, .nr_blocks = 1, .seed = 1 },
		{ .e = { .path = "plain", .mode = S_IFREG | 0644, .size = 8192 },
		  .blocks = (const struct fblock[]){ { 0, 8192 } }, .nr_blocks = 1, .seed = 1 },
	};
	const struct tlog_rootdir_iflags fl[] = {
		{ "nc", BTRFS_INODE_NODATACOW }, { "ns", BTRFS_INODE_NODATASUM },
		{ "plain", BTRFS_INODE_NODATACOW },
	};
	struct tlog_rootdir_opts o = { .iflags = fl, .nr_iflags = ARRAY_SIZE(fl) };
	u64 nocow_sum = BTRFS_INODE_NODATACOW | BTRFS_INODE_NODATASUM;
	struct run r;

#define FLAGS(p) btrfs_inode_item_flags(item_ptr(&r, p))
	populate_ok(&r, v, ARRAY_SIZE(v), &o);
	cr_assert_eq(FLAGS("nc"), BTRFS_INODE_NODATACOW);
	cr_assert_eq(FLAGS("nc/f"), nocow_sum);
	cr_assert_eq(FLAGS("nc/sub"), BTRFS_INODE_NODATACOW);
	cr_assert_eq(FLAGS("ns"), BTRFS_INODE_NODATASUM);
	cr_assert_eq(FLAGS("ns/f"), 0);		/* NODATASUM is not inherited */
	cr_assert_eq(FLAGS("plain"), nocow_sum);
	assert_contents(&r, "nc/f", 8192, (const struct fblock[]){ { 0, 8192 } }, 1, 1);
#undef FLAGS
	run_end(&r);

	o.nr_iflags = 1;
	o.iflags = (const struct tlog_rootdir_iflags[]){ { "absent", BTRFS_INODE_NODATACOW } };
	run_populate(&r, v, ARRAY_SIZE(v), &o);
	cr_assert_eq(r.err, -ENOENT);
	run_end(&r);
}

struct progress_count {
	u64 calls, done, last_entries;
};

static void count_progress(void *ctx, const struct tlog_rootdir_stats *st, bool done)
{
	struct progress_count *c = ctx;

	c->calls++;
	c->done += done;
	cr_assert_geq(st->entries, c->last_entries);
	c->last_entries = st->entries;
}

Test(rootdir, owner_and_clamp)
{
	struct progress_count pc = { 0 };
	const struct fent v[] = {
		{ .e = { .path = "", .mode = S_IFDIR | 0755, .uid = 1, .mtime = TS(2000, 5) } },
		{ .e = { .path = "f", .mode = S_IFREG | 06755, .uid = 1, .gid = 2,
			 .atime = TS(500, 7), .mtime = TS(1500, 8), .ctime = TS(999, 9),
			 .btime = TS(3000, 3), .has_btime = true } },
		{ .e = { .path = "p/q", .mode = S_IFREG | 0644, .uid = 3, .gid = 3 } },
	};
	struct tlog_rootdir_opts o = { .set_owner = true, .uid = 42, .gid = 43,
				       .clamp_times = true, .clamp_sec = 1000,
				       .progress = count_progress, .progress_ctx = &pc };
	struct btrfs_inode_item ii;
	struct run r;

	populate_ok(&r, v, ARRAY_SIZE(v), &o);
	cr_assert_eq(pc.calls, ARRAY_SIZE(v) + 1);	/* each entry, and the end */
	cr_assert_eq(pc.done, 1);
	ii = item_of(&r, "");
	cr_assert_eq(btrfs_inode_item_uid(&ii), 42);
	assert_time(&ii.mtime, 1000, 0, "root mtime clamped");
	ii = item_of(&r, "f");
	cr_assert_eq(btrfs_inode_item_uid(&ii), 42);
	cr_assert_eq(btrfs_inode_item_gid(&ii), 43);
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFREG | 06755);
	assert_time(&ii.atime, 500, 7, "atime kept");
	assert_time(&ii.mtime, 1000, 0, "mtime clamped");
	assert_time(&ii.ctime, 999, 9, "ctime kept");
	assert_time(&ii.otime, 1000, 0, "otime clamped");
	ii = item_of(&r, "p");		/* implicit parent: owner too */
	cr_assert_eq(btrfs_inode_item_uid(&ii), 42);
	cr_assert_eq(btrfs_inode_item_mode(&ii), S_IFDIR | 0755);
	ii = item_of(&r, "p/q");
	cr_assert_eq(btrfs_inode_item_gid(&ii), 43);
	run_end(&r);
}

/*
 * --reflink with a descriptor for the data: the clone path of writeback
 * is taken (a memory device cannot share blocks with a file, so the data
 * is written), and the image holds the same data.
 */
Test(rootdir, reflink_descriptor)
{
	static const struct fblock b[] = { { 0, 20000 }, { 100000, 5000 } };
	const struct fent v[] = {
		{ .e = { .path = "f", .mode = S_IFREG | 0644, .size = 200000 },
		  .blocks = b, .nr_blocks = 2, .seed = 8 },
	};
	char tmpl[] = "/tmp/test-rootdir-XXXXXX";
	struct fsrc f = { .src = { .ops = &fsrc_ops_fd, .name = "fake" }, .v = v, .nr = 1 };
	struct tlog_rootdir_opts o = { .reflink = true };
	struct tlog_rootdir_stats st;
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct tlog_mount *mnt;
	struct run r;
	u8 *data = calloc(1, 200000);

	cr_assert(data);
	for (size_t i = 0; i < 2; i++)
		for (u64 x = b[i].off; x < b[i].off + b[i].len; x++)
			data[x] = content(8, x);
	f.fd = mkstemp(tmpl);
	cr_assert_geq(f.fd, 0);
	unlink(tmpl);
	cr_assert_eq(pwrite(f.fd, data, 200000, 0), 200000);
	cr_assert_eq(tlog_mount_open(fs, &mnt), 0);
	cr_assert_eq(tlog_rootdir_populate(mnt, &f.src, &o, &st), 0, "%s", tlog_error_get());
	cr_assert_eq(mnt->clone_fd, -1);
	cr_assert_null(mnt->clone_inode);
	cr_assert_eq(st.cloned_bytes, mnt->cloned_bytes);
	tlog_mount_close(mnt);
	tlog_close(fs);
	close(f.fd);
	free(f.buf);
	free(data);
	memset(&r, 0, sizeof(r));
	r.bdev = bdev;
	r.fs = memfs_open(bdev, 0, 0);
	assert_contents(&r, "f", 200000, b, 2, 8);
	run_end(&r);
}

/* A file larger than the writeback step: written back as it goes, holes kept. */
Test(rootdir, large_file)
{
	static struct fblock b[20];
	const struct fent v[] = {
		{ .e = { .path = "big", .mode = S_IFREG | 0644, .size = 48ULL << 20 },
		  .blocks = b, .nr_blocks = ARRAY_SIZE(b), .seed = 3 },
	};
	struct btrfs_inode_item ii;
	u64 data = 0;
	struct run r;

	for (size_t i = 0; i < ARRAY_SIZE(b); i++) {
		b[i] = (struct fblock){ (i * 2 + (i % 3 == 0)) << 20, 1 << 20 };
		data += b[i].len;
	}
	populate_ok(&r, v, ARRAY_SIZE(v), NULL);
	ii = item_of(&r, "big");
	cr_assert_eq(btrfs_inode_item_size(&ii), 48ULL << 20);
	cr_assert_eq(btrfs_inode_item_nbytes(&ii), data);
	cr_assert_eq(r.stats.data_bytes, data);
	cr_assert_eq(r.stats.hole_bytes, (48ULL << 20) - data);
	assert_contents(&r, "big", 48ULL << 20, b, ARRAY_SIZE(b), 3);
	run_end(&r);
}

/* ---- the model-based random test ---- */

#define R_MAX		400
#define R_MAXFILE	(200U * 1024)

struct rnode {
	char path[200];
	u32 mode;
	int parent;			/* index, -1 for the root */
	int depth;
	u64 link_id;			/* hard links: the first entry of the group */
	int link_first;
	struct fblock blocks[4];
	size_t nr_blocks;
};

struct rtree {
	struct rnode n[R_MAX];
	struct fent v[R_MAX];
	u32 nlink[R_MAX];		/* per first entry of a link group */
	size_t nr;
};

/* A random tree in a directory source's order: each directory before what it holds. */
static void make_tree(struct rtree *t, u64 *seed)
{
	int nr_dirs = 1, dirs[R_MAX];
	size_t nr = 50 + memfs_rng(seed) % (R_MAX - 50);

	memset(t, 0, sizeof(*t));
	t->n[0] = (struct rnode){ .path = "", .mode = S_IFDIR | 0755, .parent = -1 };
	dirs[0] = 0;
	t->nr = 1;
	while (t->nr < nr) {
		struct rnode *n = &t->n[t->nr];
		int pi = dirs[memfs_rng(seed) % nr_dirs];
		const struct rnode *par = &t->n[pi];
		u32 kind = memfs_rng(seed) % 10;
		char tmp[sizeof(n->path) + 32];
		int len;

		if (par->depth > 6)
			continue;
		n->parent = pi;
		n->depth = par->depth + 1;
		n->link_first = -1;
		len = snprintf(tmp, sizeof(tmp), "%s%sn%zu_%u", par->path, par->path[0] ? "/" : "",
			       t->nr, memfs_rng(seed) % 1000);
		cr_assert_lt(len, (int)sizeof(n->path));
		memcpy(n->path, tmp, (size_t)len + 1);
		if (kind < 3) {
			n->mode = S_IFDIR | (0700 | (memfs_rng(seed) % 0100));
			dirs[nr_dirs++] = (int)t->nr;
		} else if (kind < 8) {
			u64 off = 0;

			n->mode = S_IFREG | (0600 | (memfs_rng(seed) % 07000 & 05000) |
					     (memfs_rng(seed) % 0100));
			n->nr_blocks = memfs_rng(seed) % 5;
			for (size_t i = 0; i < n->nr_blocks; i++) {
				u64 gap = memfs_rng(seed) % 3 ? memfs_rng(seed) % 20000 : 0;
				u64 cap = memfs_rng(seed) % 2 ? 3000 : 40000;
				u64 blen = 1 + memfs_rng(seed) % cap;

				n->blocks[i] = (struct fblock){ off + gap, blen };
				off += gap + blen;
			}
			if (kind == 7 && t->nr > 1) {
				/* a hard link to an earlier regular file */
				int j = 1 + (int)(memfs_rng(seed) % (t->nr - 1));

				if (S_ISREG(t->n[j].mode)) {
					int first = t->n[j].link_first;

					if (first < 0)
						first = j;

					n->link_first = first;
					t->n[j].link_first = first;
					n->mode = t->n[first].mode;
					n->nr_blocks = t->n[first].nr_blocks;
					memcpy(n->blocks, t->n[first].blocks, sizeof(n->blocks));
					t->nlink[first] += t->nlink[first] ? 1 : 2;
				}
			}
		} else if (kind == 8) {
			n->mode = S_IFLNK | 0777;
		} else {
			n->mode = (memfs_rng(seed) % 2 ? S_IFIFO : S_IFCHR) | 0640;
		}
		t->nr++;
	}
	for (size_t i = 0; i < t->nr; i++) {
		struct rnode *n = &t->n[i];
		struct fent *f = &t->v[i];
		int first = n->link_first >= 0 ? n->link_first : (int)i;
		u64 end = n->nr_blocks ? n->blocks[n->nr_blocks - 1].off +
					 n->blocks[n->nr_blocks - 1].len : 0;

		f->e.path = n->path;
		f->e.mode = n->mode;
		f->e.uid = (u32)(first * 7 % 1000);
		f->e.gid = (u32)(first * 3 % 1000);
		f->e.atime = TS(1000000 + first, first * 1001 % 1000000000);
		f->e.mtime = TS(2000000 + first, first * 7919 % 1000000000);
		f->e.ctime = TS(3000000 + first, first * 104729 % 1000000000);
		if (first % 2)
			f->e.btime = TS(500000 + first, 17), f->e.has_btime = true;
		if (S_ISREG(n->mode)) {
			f->e.size = end + (first % 3 ? 0 : first * 100);
			f->blocks = n->blocks;
			f->nr_blocks = n->nr_blocks;
			f->seed = (u8)first;
			if (t->nlink[first]) {
				f->e.link_id = 1000 + first;
				f->e.nlink = t->nlink[first];
			}
		}
		if (S_ISLNK(n->mode))
			f->e.symlink = n->path;
		if (S_ISCHR(n->mode))
			f->e.rdev = makedev(first % 300, first * 13);
	}
}

static void check_tree(struct run *r, struct rtree *t, const char *where)
{
	for (size_t i = 0; i < t->nr; i++) {
		const struct rnode *n = &t->n[i];
		const struct fent *f = &t->v[i];
		int first = n->link_first >= 0 ? n->link_first : (int)i;
		struct btrfs_inode_item ii = item_of(r, n->path);

		cr_assert_eq(btrfs_inode_item_mode(&ii), n->mode, "%s: %s mode 0%o, want 0%o",
			     where, n->path, btrfs_inode_item_mode(&ii), n->mode);
		cr_assert_eq(btrfs_inode_item_uid(&ii), f->e.uid, "%s: %s uid", where, n->path);
		cr_assert_eq(btrfs_inode_item_gid(&ii), f->e.gid, "%s: %s gid", where, n->path);
		assert_time(&ii.atime, f->e.atime.tv_sec, (u32)f->e.atime.tv_nsec, n->path);
		assert_time(&ii.mtime, f->e.mtime.tv_sec, (u32)f->e.mtime.tv_nsec, n->path);
		assert_time(&ii.ctime, f->e.ctime.tv_sec, (u32)f->e.ctime.tv_nsec, n->path);
		if (f->e.has_btime)
			assert_time(&ii.otime, f->e.btime.tv_sec, (u32)f->e.btime.tv_nsec,
				    n->path);
		else
			assert_time(&ii.otime, f->e.mtime.tv_sec, (u32)f->e.mtime.tv_nsec,
				    n->path);
		if (S_ISREG(n->mode)) {
			u32 nlink = t->nlink[first] ? t->nlink[first] : 1;

			cr_assert_eq(btrfs_inode_item_size(&ii), f->e.size, "%s: %s size", where,
				     n->path);
			cr_assert_eq(btrfs_inode_item_nlink(&ii), nlink, "%s: %s nlink %u, want %u",
				     where, n->path, btrfs_inode_item_nlink(&ii), nlink);
			cr_assert_eq(ino_of(r, n->path).ino, ino_of(r, t->n[first].path).ino,
				     "%s: %s not the same inode as %s", where, n->path,
				     t->n[first].path);
			if (first == (int)i)
				assert_contents(r, n->path, f->e.size, n->blocks, n->nr_blocks,
						(u8)first);
		}
		if (S_ISCHR(n->mode))
			cr_assert_eq(btrfs_inode_item_rdev(&ii),
				     ((u64)major(f->e.rdev) << 20) | minor(f->e.rdev));
		if (S_ISLNK(n->mode)) {
			struct tlog_ino ino = ino_of(r, n->path);
			char buf[256];

			cr_assert_eq(btrfs_read_symlink(ino.root, ino.ino, buf, sizeof(buf)),
				     (int)strlen(n->path));
			cr_assert_str_eq(buf, n->path);
		}
	}
}

/* The whole device, for comparing two runs. */
static u8 *device_bytes(struct tlog_bdev *bdev)
{
	u8 *buf = malloc(MEMFS_SIZE);

	cr_assert(buf);
	cr_assert_eq(tlog_bdev_read(bdev, buf, MEMFS_SIZE, 0), 0);
	return buf;
}

Test(rootdir, random_trees, .timeout = 300)
{
	struct tlog_bdev *base = memfs_make();
	u64 seed = memfs_seed();
	static struct rtree t;
	u8 *image = device_bytes(base);

	tlog_bdev_close(base);
	for (int round = 0; round < 10; round++) {
		char where[64];
		struct run r, r2;
		u8 *a, *b;

		snprintf(where, sizeof(where), "seed %llu round %d", (unsigned long long)seed,
			 round);
		make_tree(&t, &seed);
		/* the same empty filesystem twice (mkfs gives each device a new uuid) */
		base_image = round < 3 ? image : NULL;
		populate_ok(&r, t.v, t.nr, NULL);
		check_tree(&r, &t, where);
		if (base_image) {
			populate_ok(&r2, t.v, t.nr, NULL);
			a = device_bytes(r.bdev);
			b = device_bytes(r2.bdev);
			cr_assert(!memcmp(a, b, MEMFS_SIZE), "%s: two runs differ", where);
			free(a);
			free(b);
			run_end(&r2);
		}
		run_end(&r);
	}
	base_image = NULL;
	free(image);
}

/* Many entries: the commits along the way and the directory cache's growth. */
Test(rootdir, many_entries, .timeout = 300)
{
	enum { NR = 20000 };
	struct fent *v = calloc(NR, sizeof(*v));
	char (*paths)[32] = calloc(NR, sizeof(*paths));
	static const struct fblock tiny[] = { { 0, 10 } };
	struct run r;

	cr_assert(v && paths);
	for (int i = 0; i < NR; i++) {
		if (i % 100 == 0) {
			snprintf(paths[i], sizeof(paths[i]), "d%d", i / 100);
			v[i].e.mode = S_IFDIR | 0755;
		} else {
			snprintf(paths[i], sizeof(paths[i]), "d%d/f%d", i / 100, i);
			v[i].e.mode = S_IFREG | 0644;
			v[i].e.size = 10;
			v[i].blocks = tiny;
			v[i].nr_blocks = 1;
			v[i].seed = (u8)i;
		}
		v[i].e.path = paths[i];
		v[i].e.mtime = TS(i, i);
	}
	populate_ok(&r, v, NR, NULL);
	cr_assert_eq(r.stats.files, NR - NR / 100);
	assert_contents(&r, "d199/f19999", 10, tiny, 1, (u8)19999);
	assert_time(&item_ptr(&r, "d150")->mtime, 15000, 15000,
		    "d150");
	run_end(&r);
	free(v);
	free(paths);
}
