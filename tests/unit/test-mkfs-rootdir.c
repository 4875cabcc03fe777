// SPDX-License-Identifier: GPL-2.0-only
/*
 * The library seams under mkfs --rootdir: superblocks held back until the
 * image is whole (and the old ones wiped before), data cloned from the
 * source, images that two runs make byte for byte the same, and the
 * device shrunk to its content.  Each is what makes a populated image
 * either right or visibly not a filesystem, so each is shown on the bytes
 * of a memory device.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "block-group.h"
#include "blockdev.h"
#include "check.h"
#include "ctree.h"
#include "errctx.h"
#include "file-item.h"
#include "file.h"
#include "inode-ops.h"
#include "mkfs.h"
#include "root-tree.h"
#include "transaction.h"
#include "volumes.h"
#include "mem-fs.h"

#define SB0		(64ULL << 10)
#define SB1		(64ULL << 20)
#define SBLEN		4096ULL

/* ---- a tracing device: every write and flush of the device below, in order ---- */

struct trace_op {
	char kind;		/* 'W' write, 'C' clone, 'F' flush */
	u64 offset, len;
};

struct trace_bdev {
	struct tlog_bdev *inner;
	struct trace_op ops[256];
	int nr;
};

static struct trace_bdev *trace_of(struct tlog_bdev *bdev)
{
	return bdev->priv;
}

static void trace_push(struct tlog_bdev *bdev, char kind, u64 offset, u64 len)
{
	struct trace_bdev *tb = trace_of(bdev);

	if (tb->nr < (int)(sizeof(tb->ops) / sizeof(tb->ops[0])))
		tb->ops[tb->nr++] = (struct trace_op){ kind, offset, len };
}

static int trace_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset)
{
	return tlog_bdev_read(trace_of(bdev)->inner, buf, len, offset);
}

static int trace_write(struct tlog_bdev *bdev, const void *buf, size_t len, u64 offset)
{
	trace_push(bdev, 'W', offset, len);
	return tlog_bdev_write(trace_of(bdev)->inner, buf, len, offset);
}

static int trace_flush(struct tlog_bdev *bdev)
{
	trace_push(bdev, 'F', 0, 0);
	return tlog_bdev_flush(trace_of(bdev)->inner);
}

static int trace_clone(struct tlog_bdev *bdev, int fd, u64 src_off, u64 len, u64 offset)
{
	trace_push(bdev, 'C', offset, len);
	return tlog_bdev_clone_from(trace_of(bdev)->inner, fd, src_off, len, offset);
}

static void trace_close(struct tlog_bdev *bdev)
{
	tlog_bdev_close(trace_of(bdev)->inner);
	free(bdev->priv);
}

static const struct tlog_bdev_ops trace_ops = {
	.read = trace_read, .write = trace_write, .flush = trace_flush,
	.clone_from = trace_clone, .close = trace_close,
};

static struct tlog_bdev *wrap_trace(struct tlog_bdev *inner)
{
	struct tlog_bdev *bdev = calloc(1, sizeof(*bdev));
	struct trace_bdev *tb = calloc(1, sizeof(*tb));

	cr_assert(bdev && tb);
	tb->inner = inner;
	bdev->ops = &trace_ops;
	bdev->refs = 1;
	bdev->name = strdup("trace");
	bdev->priv = tb;
	bdev->size = inner->size;
	bdev->writable = true;
	return bdev;
}

static void fill(u8 *buf, size_t len, u32 seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (u8)(seed * 31 + i * 7 + (i >> 9));
}

/* ---- superblocks held back ---- */

Test(hold_super, super_writes_stay_in_memory_until_release)
{
	/* copies 0 and 1 inside, 2 (256 GiB) not */
	const u64 size = SB1 + (1ULL << 20);
	struct tlog_bdev *inner, *hold;
	u8 *want = calloc(1, size), *got = malloc(size), *buf = malloc(1 << 20);
	static const struct { u64 off, len; } w[] = {
		{ 0, SB0 - 100 },		/* before copy 0 */
		{ SB0 - 100, 300 },		/* across the start of copy 0 */
		{ SB0 + SBLEN - 50, 1000 },	/* across its end */
		{ SB0 + 1000, 10 },		/* inside */
		{ SB0 - 8192, 3 * 8192 },	/* over all of it */
		{ SB1 - 4096, 4096 },		/* just before copy 1 */
		{ SB1 + SBLEN, 4096 },		/* just after */
		{ SB1 + 17, 40 },		/* inside copy 1 */
	};
	u8 *data;

	cr_assert_eq(tlog_bdev_create_memory("hold", size, &inner), 0);
	data = tlog_bdev_memory_data(inner);
	cr_assert_eq(tlog_bdev_wrap_hold_super(inner, &hold), 0);
	cr_assert_eq(hold->size, size);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		fill(buf, w[i].len, (u32)i + 1);
		cr_assert_eq(tlog_bdev_write(hold, buf, w[i].len, w[i].off), 0);
		memcpy(want + w[i].off, buf, w[i].len);
	}
	/* the device below has everything but the copies, which are as they were */
	for (u64 off = 0; off < size; off += SBLEN) {
		static const u8 zero[SBLEN];
		bool copy = off == SB0 || off == SB1;

		cr_assert_eq(memcmp(data + off, copy ? zero : want + off, SBLEN), 0,
			     "at %llu", (unsigned long long)off);
	}
	/* through the wrapper, everything, read at any alignment */
	cr_assert_eq(tlog_bdev_read(hold, got, size, 0), 0);
	cr_assert_eq(memcmp(got, want, size), 0);
	cr_assert_eq(tlog_bdev_read(hold, got, 5000, SB0 - 3000), 0);
	cr_assert_eq(memcmp(got, want + SB0 - 3000, 5000), 0);
	cr_assert_eq(tlog_bdev_read(hold, got, 10, SB1 + 20), 0);
	cr_assert_eq(memcmp(got, want + SB1 + 20, 10), 0);

	cr_assert_eq(tlog_bdev_release_super(hold), 0);
	cr_assert_eq(memcmp(data, want, size), 0);
	/* released: later writes go straight through */
	fill(buf, 100, 99);
	cr_assert_eq(tlog_bdev_write(hold, buf, 100, SB0), 0);
	cr_assert_eq(memcmp(data + SB0, buf, 100), 0);
	cr_assert_eq(tlog_bdev_release_super(inner), -EINVAL);
	tlog_bdev_close(hold);
	free(want);
	free(got);
	free(buf);
}

Test(hold_super, closing_without_release_writes_no_superblock)
{
	struct tlog_bdev *inner, *hold;
	u8 buf[SBLEN], zero[SBLEN] = { 0 };
	u8 *data;

	cr_assert_eq(tlog_bdev_create_memory("hold", 2ULL << 20, &inner), 0);
	data = tlog_bdev_memory_data(tlog_bdev_get(inner));
	cr_assert_eq(tlog_bdev_wrap_hold_super(inner, &hold), 0);
	fill(buf, sizeof(buf), 5);
	cr_assert_eq(tlog_bdev_write(hold, buf, sizeof(buf), SB0), 0);
	cr_assert_eq(tlog_bdev_write(hold, buf, sizeof(buf), 0), 0);
	tlog_bdev_close(hold);
	cr_assert_eq(memcmp(data + SB0, zero, SBLEN), 0);
	cr_assert_eq(memcmp(data, buf, SBLEN), 0);
	tlog_bdev_close(inner);
}

/*
 * A filesystem shrunk below a mirror's place after the mirror was held:
 * the release writes the primary, not the stale mirror past its end.
 */
Test(hold_super, a_mirror_past_the_shrunk_end_is_not_written)
{
	struct tlog_bdev *inner, *hold;
	struct btrfs_super_block *sb = calloc(1, sizeof(*sb));
	u8 buf[SBLEN], zero[SBLEN] = { 0 };
	u8 *data;

	cr_assert_eq(tlog_bdev_create_memory("hold", SB1 + (1ULL << 20), &inner), 0);
	data = tlog_bdev_memory_data(tlog_bdev_get(inner));
	cr_assert_eq(tlog_bdev_wrap_hold_super(inner, &hold), 0);
	fill(buf, sizeof(buf), 8);
	cr_assert_eq(tlog_bdev_write(hold, buf, sizeof(buf), SB1), 0);
	btrfs_set_super_block_magic(sb, BTRFS_MAGIC);
	btrfs_set_dev_item_total_bytes(&sb->dev_item, SB1);
	cr_assert_eq(tlog_bdev_write(hold, sb, sizeof(*sb), SB0), 0);
	cr_assert_eq(tlog_bdev_release_super(hold), 0);
	cr_assert_eq(memcmp(data + SB0, sb, SBLEN), 0);
	cr_assert_eq(memcmp(data + SB1, zero, SBLEN), 0);
	tlog_bdev_close(hold);
	tlog_bdev_close(inner);
	free(sb);
}

/*
 * A whole mkfs through the wrapper: nothing below looks like a btrfs
 * until the release, which flushes the data before the first superblock
 * and flushes again after the last.
 */
Test(hold_super, mkfs_superblocks_come_last)
{
	struct tlog_mkfs_cfg cfg;
	struct tlog_mkfs_result res;
	struct tlog_bdev *mem, *trace, *hold;
	struct trace_bdev *tb;
	struct tlog_fs *fs;
	int mirror_at = -1, primary_at = -1;

	cr_assert_eq(tlog_bdev_create_memory("mkfs", MEMFS_SIZE, &mem), 0);
	tlog_bdev_get(mem);
	trace = wrap_trace(mem);
	tb = trace_of(trace);
	cr_assert_eq(tlog_bdev_wrap_hold_super(trace, &hold), 0);
	tlog_mkfs_default_cfg(&cfg);
	cr_assert_eq(tlog_mkfs(hold, &cfg, &res), 0, "%s", tlog_error_get());
	cr_assert_eq(memfs_super_generation(mem, 0), 0);
	cr_assert_eq(memfs_super_generation(mem, 1), 0);
	/* the held image opens through the wrapper */
	{
		struct tlog_open_opts opts = { .super_mirror = -1 };

		cr_assert_eq(tlog_open_bdev(hold, &opts, &fs), 0, "%s", tlog_error_get());
		tlog_close(fs);
	}
	for (int i = 0; i < tb->nr; i++)
		cr_assert(tb->ops[i].kind != 'W' || (tb->ops[i].offset != SB0 &&
						     tb->ops[i].offset != SB1));
	tb->nr = 0;
	cr_assert_eq(tlog_bdev_release_super(hold), 0);
	for (int i = 0; i < tb->nr; i++) {
		if (tb->ops[i].kind == 'W' && tb->ops[i].offset == SB1)
			mirror_at = i;
		if (tb->ops[i].kind == 'W' && tb->ops[i].offset == SB0)
			primary_at = i;
	}
	/* flush, the mirror, flush, the primary alone last, flush: nothing else */
	cr_assert_eq(tb->nr, 5);
	cr_assert_eq(tb->ops[0].kind, 'F');
	cr_assert_eq(mirror_at, 1);
	cr_assert_eq(tb->ops[2].kind, 'F');
	cr_assert_eq(primary_at, 3);
	cr_assert_eq(tb->ops[4].kind, 'F');
	cr_assert_eq(memfs_super_generation(mem, 0), 1);
	cr_assert_eq(memfs_super_generation(mem, 1), 1);
	tlog_bdev_close(hold);
	fs = memfs_open(mem, 0, 0);
	tlog_close(fs);
	tlog_bdev_close(mem);
}

/*
 * The same order under a power cut: dropping every write from the first
 * superblock on leaves the data written and no filesystem; dropping from
 * the primary leaves only the mirror (no filesystem the kernel mounts,
 * though the mirror describes the whole one); past it, a whole one.
 */
Test(hold_super, a_cut_release_leaves_no_half_made_filesystem)
{
	for (u64 nth = 1; nth <= 3; nth++) {
		struct tlog_mkfs_cfg cfg;
		struct tlog_mkfs_result res;
		struct tlog_bdev *mem, *trace, *fault, *hold;
		u64 writes;

		cr_assert_eq(tlog_bdev_create_memory("cut", MEMFS_SIZE, &mem), 0);
		tlog_bdev_get(mem);
		trace = wrap_trace(mem);
		/* count the writes before the release: the trace sees them */
		cr_assert_eq(tlog_bdev_wrap_hold_super(tlog_bdev_get(trace), &hold), 0);
		tlog_mkfs_default_cfg(&cfg);
		cr_assert_eq(tlog_mkfs(hold, &cfg, &res), 0);
		writes = trace->nr_writes;
		tlog_bdev_close(hold);
		tlog_bdev_close(trace);
		tlog_bdev_close(mem);

		cr_assert_eq(tlog_bdev_create_memory("cut", MEMFS_SIZE, &mem), 0);
		tlog_bdev_get(mem);
		cr_assert_eq(tlog_bdev_wrap_fault(mem, TLOG_FAULT_DROP, writes + nth, &fault), 0);
		cr_assert_eq(tlog_bdev_wrap_hold_super(fault, &hold), 0);
		cr_assert_eq(tlog_mkfs(hold, &cfg, &res), 0);
		cr_assert_eq(tlog_bdev_release_super(hold), 0);
		tlog_bdev_close(hold);
		/* write writes+1 is the mirror, writes+2 the primary copy */
		cr_assert_eq(memfs_super_generation(mem, 1), nth == 1 ? 0 : 1, "nth %llu",
			     (unsigned long long)nth);
		cr_assert_eq(memfs_super_generation(mem, 0), nth <= 2 ? 0 : 1);
		tlog_bdev_close(mem);
	}
}

Test(wipe_super, zeroes_the_copies_inside_the_device)
{
	/* copy 1 cut by the end of the device: what of it is inside goes */
	const u64 size = SB1 + 1000;
	struct tlog_bdev *bdev, *hold;
	u8 *data, *want = malloc(size);

	cr_assert_eq(tlog_bdev_create_memory("wipe", size, &bdev), 0);
	data = tlog_bdev_memory_data(bdev);
	fill(data, size, 3);
	memcpy(want, data, size);
	memset(want + SB0, 0, SBLEN);
	memset(want + SB1, 0, 1000);
	cr_assert_eq(tlog_bdev_wipe_super(bdev), 0);
	cr_assert_eq(memcmp(data, want, size), 0);

	/* through the hold wrapper, the device below is wiped */
	fill(data, size, 4);
	memcpy(want, data, size);
	memset(want + SB0, 0, SBLEN);
	memset(want + SB1, 0, 1000);
	tlog_bdev_get(bdev);
	cr_assert_eq(tlog_bdev_wrap_hold_super(bdev, &hold), 0);
	cr_assert_eq(tlog_bdev_wipe_super(hold), 0);
	cr_assert_eq(memcmp(data, want, size), 0);
	tlog_bdev_close(hold);
	tlog_bdev_close(bdev);
	free(want);
}

Test(wipe_super, a_failed_write_is_an_error)
{
	struct tlog_bdev *bdev, *fault;

	cr_assert_eq(tlog_bdev_create_memory("wipe", 1ULL << 20, &bdev), 0);
	cr_assert_eq(tlog_bdev_wrap_fault(bdev, TLOG_FAULT_FAIL, 1, &fault), 0);
	cr_assert_eq(tlog_bdev_wipe_super(fault), -EIO);
	tlog_bdev_close(fault);
}

/* ---- clones ---- */

/* A temporary file of @len patterned bytes, open for reading. */
static int temp_source(u64 len, u8 **bytes)
{
	char path[] = "/tmp/tlog-clone-XXXXXX";
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	unlink(path);
	*bytes = malloc(len);
	fill(*bytes, len, 77);
	cr_assert_eq(pwrite(fd, *bytes, len, 0), (ssize_t)len);
	return fd;
}

Test(clone_from, devices_that_cannot_say_so_without_a_reason)
{
	struct tlog_bdev *mem, *cow, *fault;
	u8 *src;
	int fd = temp_source(8192, &src);

	cr_assert_eq(tlog_bdev_create_memory("clone", 1ULL << 20, &mem), 0);
	tlog_error_clear();
	cr_assert_eq(tlog_bdev_clone_from(mem, fd, 0, 8192, 4096), -EOPNOTSUPP);
	cr_assert_eq(mem->nr_writes, 0);
	cr_assert_null(tlog_error_get());
	cr_assert_eq(tlog_bdev_clone_from(mem, fd, 0, 100, 4096), -EINVAL);
	cr_assert_eq(tlog_bdev_wrap_cow(mem, &cow), 0);
	cr_assert_eq(tlog_bdev_clone_from(cow, fd, 0, 4096, 0), -EOPNOTSUPP);
	tlog_bdev_close(cow);

	/* the fault wrapper counts a clone as a write, and fails or drops it as one */
	cr_assert_eq(tlog_bdev_wrap_fault(mem, TLOG_FAULT_FAIL, 2, &fault), 0);
	cr_assert_eq(tlog_bdev_clone_from(fault, fd, 0, 4096, 0), -EOPNOTSUPP);
	cr_assert_eq(fault->nr_writes, 1);
	cr_assert_eq(tlog_bdev_clone_from(fault, fd, 0, 4096, 0), -EIO);
	tlog_bdev_close(fault);
	cr_assert_eq(tlog_bdev_create_memory("clone", 1ULL << 20, &mem), 0);
	cr_assert_eq(tlog_bdev_wrap_fault(mem, TLOG_FAULT_DROP, 1, &fault), 0);
	cr_assert_eq(tlog_bdev_clone_from(fault, fd, 0, 4096, 0), 0);
	tlog_bdev_close(fault);
	close(fd);
	free(src);
}

/*
 * An image file: a clone either works (the bytes are the source's) or is
 * refused with -EOPNOTSUPP and no reason (ext4, tmpfs).  The hold wrapper
 * refuses one into a superblock copy, which must be held, not cloned.
 */
Test(clone_from, file_clones_or_says_it_cannot)
{
	char path[] = "/tmp/tlog-image-XXXXXX";
	const u64 size = 1ULL << 20;
	struct tlog_bdev *img, *hold;
	u8 *src, got[8192];
	int fd = temp_source(8192, &src), ifd = mkstemp(path), err;

	cr_assert(ifd >= 0);
	cr_assert_eq(ftruncate(ifd, (off_t)size), 0);
	close(ifd);
	cr_assert_eq(tlog_bdev_open_file(path, TLOG_BDEV_RDWR, &img), 0, "%s", tlog_error_get());
	tlog_error_clear();
	err = tlog_bdev_clone_from(img, fd, 0, 8192, 3 * 4096);
	cr_assert(err == 0 || err == -EOPNOTSUPP, "%d %s", err, tlog_error_get());
	cr_assert_eq(img->nr_writes, 1);
	if (err == 0) {
		cr_assert_eq(tlog_bdev_read(img, got, 8192, 3 * 4096), 0);
		cr_assert_eq(memcmp(got, src, 8192), 0);
	} else {
		cr_assert_null(tlog_error_get());
	}
	cr_assert_eq(tlog_bdev_wrap_hold_super(img, &hold), 0);
	cr_assert_eq(tlog_bdev_clone_from(hold, fd, 0, 8192, SB0 - 4096), -EOPNOTSUPP);
	tlog_bdev_close(hold);
	unlink(path);
	close(fd);
	free(src);
}

/* btrfs_clone_data on a device that cannot clone writes everything, every copy. */
Test(clone_data, falls_back_to_writing)
{
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	const size_t len = 3 * 4096 + 123;
	struct tlog_trans *trans;
	u8 *src, *got = malloc(len);
	u64 bytenr, cloned = 99, physical[TLOG_MAX_STRIPES];
	int fd = temp_source(len, &src), copies;

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(tlog_trans_alloc_space(trans, BTRFS_BLOCK_GROUP_DATA, 4 * 4096, 4096, &bytenr),
		     0);
	cr_assert_eq(btrfs_clone_data(trans, bytenr, fd, 0, src, len, &cloned), 0,
		     "%s", tlog_error_get());
	cr_assert_eq(cloned, 0);
	copies = btrfs_map_block(fs, bytenr, len, physical, TLOG_MAX_STRIPES);
	cr_assert_gt(copies, 0);
	for (int i = 0; i < copies; i++) {
		cr_assert_eq(tlog_bdev_read(fs->bdev, got, len, physical[i]), 0);
		cr_assert_eq(memcmp(got, src, len), 0);
	}
	/* an unaligned source: written too */
	cr_assert_eq(btrfs_clone_data(trans, bytenr, fd, 5, src + 5, 4096, &cloned), 0);
	cr_assert_eq(tlog_bdev_read(fs->bdev, got, 4096, physical[0]), 0);
	cr_assert_eq(memcmp(got, src + 5, 4096), 0);
	tlog_trans_abort(trans);
	tlog_close(fs);
	tlog_bdev_close(bdev);
	close(fd);
	free(src);
	free(got);
}

/* ---- reproducible images ---- */

static const u8 fixed_fsid[BTRFS_FSID_SIZE] = {
	0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33,
	0x44, 0x44, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55,
};

#define REPRO_TIME	1700000000ULL

static struct tlog_inode *make(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name,
			       u32 mode, const char *target)
{
	struct tlog_inode *inode;

	cr_assert_eq(tlog_create(mnt, dir, name, (u16)strlen(name), mode, 0, target, &inode), 0,
		     "create %s: %s", name, tlog_error_get());
	return inode;
}

/*
 * mkfs, then a subvolume, a snapshot and files, as mkfs --rootdir does
 * with -U and SOURCE_DATE_EPOCH.
 */
static struct tlog_bdev *reproducible_image(void)
{
	struct tlog_mkfs_cfg cfg;
	struct tlog_mkfs_result res;
	struct tlog_bdev *bdev;
	struct tlog_mount *mnt;
	struct tlog_inode *top, *sub, *f, *d;
	struct tlog_fs *fs;
	u8 buf[20000];

	cr_assert_eq(tlog_bdev_create_memory("repro", MEMFS_SIZE, &bdev), 0);
	tlog_mkfs_default_cfg(&cfg);
	cfg.fsid_set = true;
	memcpy(cfg.fsid, fixed_fsid, sizeof(cfg.fsid));
	cfg.derive_uuids = true;
	cfg.time_set = true;
	cfg.time_sec = REPRO_TIME;
	cr_assert_eq(tlog_mkfs(bdev, &cfg, &res), 0, "%s", tlog_error_get());
	fs = memfs_open(bdev, 0, 0);
	tlog_fs_set_uuid_seed(fs, fixed_fsid);
	cr_assert_eq(tlog_mount_open(fs, &mnt), 0);
	tlog_mount_set_fixed_time(mnt, REPRO_TIME);
	cr_assert_eq(tlog_open_path(mnt, "/", 0, &top), 0);
	cr_assert_eq(tlog_create_subvol(mnt, top, "sub", 3), 0, "%s", tlog_error_get());
	cr_assert_eq(tlog_open_path(mnt, "/sub", 0, &sub), 0);
	d = make(mnt, sub, "dir", S_IFDIR | 0755, NULL);
	fill(buf, sizeof(buf), 9);
	for (int i = 0; i < 20; i++) {
		char name[32];

		snprintf(name, sizeof(name), "file%d", i);
		f = make(mnt, i % 2 ? d : sub, name, S_IFREG | 0644, NULL);
		cr_assert_eq(tlog_write_data(mnt, f, 0, buf, 100 + (u64)i * 997), 0);
		cr_assert_eq(tlog_setxattr(mnt, f, "user.x", name, strlen(name), 0), 0);
		tlog_iput(mnt, f);
	}
	tlog_iput(mnt, make(mnt, d, "link", S_IFLNK | 0777, "file1"));
	tlog_iput(mnt, d);
	cr_assert_eq(tlog_sync(mnt), 0, "%s", tlog_error_get());
	cr_assert_eq(tlog_create_snapshot(mnt, sub, top, "snap", 4), 0, "%s", tlog_error_get());
	tlog_iput(mnt, sub);
	tlog_iput(mnt, top);
	cr_assert_eq(tlog_sync(mnt), 0, "%s", tlog_error_get());
	tlog_mount_close(mnt);
	tlog_close(fs);
	return bdev;
}

Test(reproducible, two_runs_give_the_same_bytes)
{
	struct tlog_bdev *a = reproducible_image(), *b = reproducible_image();
	const u8 *x = tlog_bdev_memory_data(a), *y = tlog_bdev_memory_data(b);
	struct tlog_check_opts opts = { .super_mirror = -1, .threads = 1 };
	struct tlog_check_stats stats;

	for (u64 off = 0; off < MEMFS_SIZE; off += 4096)
		cr_assert_eq(memcmp(x + off, y + off, 4096), 0, "the images differ in block %llu",
			     (unsigned long long)off);
	cr_assert_eq(tlog_check_image(a, &opts, &stats), 0, "%s", tlog_error_get());
	cr_assert_eq(stats.problems, 0);
	tlog_bdev_close(a);
	tlog_bdev_close(b);
}

Test(reproducible, derived_uuids_are_stable_and_distinct)
{
	u8 a[16], b[16], c[16];

	tlog_derive_uuid(fixed_fsid, "subvol", 256, a);
	tlog_derive_uuid(fixed_fsid, "subvol", 256, b);
	tlog_derive_uuid(fixed_fsid, "subvol", 257, c);
	cr_assert_eq(memcmp(a, b, 16), 0);
	cr_assert_neq(memcmp(a, c, 16), 0);
	tlog_derive_uuid(fixed_fsid, "snapshot", 256, c);
	cr_assert_neq(memcmp(a, c, 16), 0);
	/* a name-based (SHA-1) UUID: version 5, RFC 4122 variant */
	cr_assert_eq(a[6] >> 4, 5);
	cr_assert_eq(a[8] >> 6, 2);
}

/* ---- shrink ---- */

static void check_clean(struct tlog_bdev *bdev)
{
	struct tlog_check_opts opts = { .super_mirror = -1, .threads = 1 };
	struct tlog_check_stats stats;

	cr_assert_eq(tlog_check_image(bdev, &opts, &stats), 0, "%s", tlog_error_get());
	cr_assert_eq(stats.problems, 0, "the checker found %llu problems",
		     (unsigned long long)stats.problems);
}

/* Shrink, commit, and give back a device of just the new size with the image on it. */
static struct tlog_bdev *shrink(struct tlog_bdev *bdev, u64 *new_size)
{
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct tlog_trans *trans;
	struct tlog_bdev *small;

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(btrfs_shrink_to_fit(trans, new_size), 0, "%s", tlog_error_get());
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
	memfs_check_free_space_tree(fs);
	tlog_close(fs);
	cr_assert_leq(*new_size, MEMFS_SIZE);
	cr_assert_eq(tlog_bdev_create_memory("small", *new_size, &small), 0);
	memcpy(tlog_bdev_memory_data(small), tlog_bdev_memory_data(bdev), *new_size);
	tlog_bdev_close(bdev);
	fs = memfs_open(small, 0, 0);
	cr_assert_eq(btrfs_super_block_total_bytes(&fs->super), *new_size);
	cr_assert_eq(btrfs_dev_item_total_bytes(&fs->super.dev_item), *new_size);
	memfs_check_free_space_tree(fs);
	tlog_close(fs);
	check_clean(small);
	return small;
}

static void write_file(struct tlog_bdev *bdev, const char *name, u64 len, u32 seed)
{
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct tlog_mount *mnt;
	struct tlog_inode *top, *f;
	u8 *buf = malloc(len);

	fill(buf, len, seed);
	cr_assert_eq(tlog_mount_open(fs, &mnt), 0);
	cr_assert_eq(tlog_open_path(mnt, "/", 0, &top), 0);
	f = make(mnt, top, name, S_IFREG | 0644, NULL);
	cr_assert_eq(tlog_write_data(mnt, f, 0, buf, len), 0);
	tlog_iput(mnt, f);
	tlog_iput(mnt, top);
	cr_assert_eq(tlog_sync(mnt), 0, "%s", tlog_error_get());
	tlog_mount_close(mnt);
	tlog_close(fs);
	free(buf);
}

static void read_back(struct tlog_bdev *bdev, const char *name, u64 len, u32 seed)
{
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct tlog_mount *mnt;
	struct tlog_inode *f;
	struct tlog_file *file;
	u8 *want = malloc(len), *got = malloc(len);
	char path[64];

	fill(want, len, seed);
	snprintf(path, sizeof(path), "/%s", name);
	cr_assert_eq(tlog_mount_open(fs, &mnt), 0);
	cr_assert_eq(tlog_open_path(mnt, path, 0, &f), 0);
	cr_assert_eq(tlog_file_open(fs, memfs_root(fs, BTRFS_FS_TREE_OBJECTID), f->ino, &file), 0);
	cr_assert_eq(tlog_file_pread(file, got, len, 0), (ssize_t)len);
	cr_assert_eq(memcmp(got, want, len), 0);
	tlog_file_close(file);
	tlog_iput(mnt, f);
	tlog_mount_close(mnt);
	tlog_close(fs);
	free(want);
	free(got);
}

/* The chunk of the device's last extent: its logical start, length and type. */
static void last_chunk(struct tlog_bdev *bdev, u64 *logical, u64 *len, u64 *type, u64 *dev_end)
{
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);

	*dev_end = 0;
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct map_lookup *m = &fs->chunks.maps[i];

		for (int s = 0; s < m->num_stripes; s++) {
			if (m->stripes[s].physical + m->length > *dev_end) {
				*dev_end = m->stripes[s].physical + m->length;
				*logical = m->logical;
				*len = m->length;
				*type = m->type;
			}
		}
	}
	tlog_close(fs);
}

Test(shrink, cuts_the_last_data_chunk_to_its_content)
{
	struct tlog_bdev *bdev = memfs_make();
	u64 logical, len, type, end, new_size, l2, len2, t2, end2;

	write_file(bdev, "big", 20ULL << 20, 1);
	last_chunk(bdev, &logical, &len, &type, &end);
	cr_assert(type & BTRFS_BLOCK_GROUP_DATA);
	bdev = shrink(bdev, &new_size);
	last_chunk(bdev, &l2, &len2, &t2, &end2);
	cr_assert_eq(l2, logical);
	cr_assert_lt(len2, len);
	cr_assert_eq(len2 % (1ULL << 20), 0);
	cr_assert_eq(end2, new_size);
	cr_assert_eq(end - end2, len - len2);
	read_back(bdev, "big", 20ULL << 20, 1);
	tlog_bdev_close(bdev);
}

Test(shrink, an_empty_filesystem_keeps_one_mebibyte_of_data)
{
	struct tlog_bdev *bdev = memfs_make();
	u64 logical, len, type, end, new_size;

	bdev = shrink(bdev, &new_size);
	last_chunk(bdev, &logical, &len, &type, &end);
	cr_assert(type & BTRFS_BLOCK_GROUP_DATA);
	cr_assert_eq(len, 1ULL << 20);
	cr_assert_eq(end, new_size);
	/* shrinking again changes nothing */
	bdev = shrink(bdev, &new_size);
	cr_assert_eq(new_size, end);
	tlog_bdev_close(bdev);
}

/* Free space kept as bitmaps: those past the cut go, the one across it is shortened. */
Test(shrink, cuts_a_group_whose_free_space_is_bitmaps)
{
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct tlog_mount *mnt;
	struct tlog_inode *top;
	struct free_range *v;
	u64 logical, len, type, end, new_size, bg_start, bg_len;
	size_t nr;
	u8 buf[8192];

	/* 8 KiB extents with every other one freed: many free runs */
	fill(buf, sizeof(buf), 2);
	cr_assert_eq(tlog_mount_open(fs, &mnt), 0);
	cr_assert_eq(tlog_open_path(mnt, "/", 0, &top), 0);
	for (int i = 0; i < 160; i++) {
		char name[16];
		struct tlog_inode *f;

		snprintf(name, sizeof(name), "f%d", i);
		f = make(mnt, top, name, S_IFREG | 0644, NULL);
		cr_assert_eq(tlog_write_data(mnt, f, 0, buf, sizeof(buf)), 0);
		tlog_iput(mnt, f);
	}
	cr_assert_eq(tlog_sync(mnt), 0, "%s", tlog_error_get());
	for (int i = 0; i < 160; i += 2) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		cr_assert_eq(tlog_unlink(mnt, top, name, (u16)strlen(name), false), 0);
	}
	tlog_iput(mnt, top);
	cr_assert_eq(tlog_sync(mnt), 0, "%s", tlog_error_get());
	tlog_mount_close(mnt);
	tlog_close(fs);

	last_chunk(bdev, &logical, &len, &type, &end);
	cr_assert(type & BTRFS_BLOCK_GROUP_DATA);
	fs = memfs_open(bdev, 0, 0);
	cr_assert(memfs_fst_group(fs, logical, &v, &nr, &bg_start, &bg_len) &
		  BTRFS_FREE_SPACE_USING_BITMAPS, "the group should use bitmaps (%zu runs)", nr);
	free(v);
	tlog_close(fs);
	bdev = shrink(bdev, &new_size);
	last_chunk(bdev, &logical, &len, &type, &end);
	cr_assert_eq(len, 2ULL << 20);
	cr_assert_eq(end, new_size);
	read_back(bdev, "f159", sizeof(buf), 2);
	tlog_bdev_close(bdev);
}

/* A DUP metadata chunk at the end of the device: both its stripes are cut. */
Test(shrink, cuts_a_dup_metadata_chunk)
{
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct tlog_trans *trans;
	u64 logical, len, type, end, new_size, l2, len2, t2, end2;

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(tlog_trans_force_chunk(trans, BTRFS_BLOCK_GROUP_METADATA), 0,
		     "%s", tlog_error_get());
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
	tlog_close(fs);
	last_chunk(bdev, &logical, &len, &type, &end);
	cr_assert(type & BTRFS_BLOCK_GROUP_METADATA);
	cr_assert(type & BTRFS_BLOCK_GROUP_DUP);
	bdev = shrink(bdev, &new_size);
	last_chunk(bdev, &l2, &len2, &t2, &end2);
	cr_assert_eq(l2, logical);
	cr_assert_lt(len2, len);
	cr_assert_eq(end2, new_size);
	/* the last stripe lost the tail: the device ends that much earlier */
	cr_assert_eq(end - end2, len - len2);
	tlog_bdev_close(bdev);
}
