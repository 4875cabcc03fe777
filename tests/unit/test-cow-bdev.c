// SPDX-License-Identifier: GPL-2.0-only
/*
 * The copy-on-write device: check's dry replay commits a transaction into
 * it, so it must read back every byte written at any alignment, read the
 * rest from the device below, and never write that device - which may be
 * open read-only - whatever is written on top.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "blockdev.h"
#include "ctree.h"
#include "mkfs.h"
#include "transaction.h"

#define DEV_SIZE	(512ULL << 20)

/* A memory device filled with a pattern, and a copy of its bytes. */
static struct tlog_bdev *patterned(u64 size, u8 **copy)
{
	struct tlog_bdev *bdev;
	u8 *data;

	cr_assert_eq(tlog_bdev_create_memory("inner", size, &bdev), 0);
	data = tlog_bdev_memory_data(bdev);
	for (u64 i = 0; i < size; i++)
		data[i] = (u8)(i * 7 + (i >> 12));
	*copy = malloc(size);
	cr_assert_not_null(*copy);
	memcpy(*copy, data, size);
	return bdev;
}

Test(cow_bdev, unaligned_writes_read_back_and_leave_the_inner_device_alone)
{
	/* not a whole number of pages: the last page is short */
	const u64 size = 5 * 4096 + 100;
	struct tlog_bdev *inner, *cow;
	u8 *orig, *want, *got = malloc(size);
	static const struct { u64 off; size_t len; } w[] = {
		{ 1, 3 }, { 4090, 20 }, { 8192, 4096 }, { 3 * 4096 - 1, 4096 + 2 },
		{ size - 7, 7 }, { 0, 1 },
	};

	inner = patterned(size, &orig);
	inner->writable = false;	/* what check opens */
	want = malloc(size);
	memcpy(want, orig, size);
	cr_assert_eq(tlog_bdev_wrap_cow(inner, &cow), 0);
	cr_assert(cow->writable);
	cr_assert_eq(cow->size, size);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		u8 buf[8192];

		for (size_t j = 0; j < w[i].len; j++)
			buf[j] = (u8)(0xa5 ^ (i + j));
		cr_assert_eq(tlog_bdev_write(cow, buf, w[i].len, w[i].off), 0);
		memcpy(want + w[i].off, buf, w[i].len);
	}
	/* the whole device, and reads that start and end inside pages */
	cr_assert_eq(tlog_bdev_read(cow, got, size, 0), 0);
	cr_assert_eq(memcmp(got, want, size), 0);
	for (u64 off = 0; off < size; off += 1531) {
		size_t len = off + 5000 < size ? 5000 : size - off;

		cr_assert_eq(tlog_bdev_read(cow, got, len, off), 0);
		cr_assert_eq(memcmp(got, want + off, len), 0, "read at %llu",
			     (unsigned long long)off);
	}
	cr_assert_eq(memcmp(tlog_bdev_memory_data(inner), orig, size), 0);
	cr_assert_eq(tlog_bdev_cow_pages(cow), 6);
	cr_assert_eq(tlog_bdev_write(cow, got, 8, size - 4), -EIO);
	cr_assert_eq(tlog_bdev_cow_pages(inner), 0);
	/* the wrapper holds its own reference */
	cr_assert_eq(inner->refs, 2);
	tlog_bdev_close(cow);
	cr_assert_eq(inner->refs, 1);
	tlog_bdev_close(inner);
	free(orig);
	free(want);
	free(got);
}

Test(cow_bdev, many_pages_grow_the_table)
{
	const u64 size = 64ULL << 20;
	struct tlog_bdev *inner, *cow;
	u8 *orig;

	inner = patterned(size, &orig);
	cr_assert_eq(tlog_bdev_wrap_cow(inner, &cow), 0);
	for (u64 off = 0; off < size; off += 3 * 4096) {
		u64 v = off ^ 0x5555;

		cr_assert_eq(tlog_bdev_write(cow, &v, sizeof(v), off + 13), 0);
	}
	for (u64 off = 0; off < size; off += 3 * 4096) {
		u64 v;
		u8 b;

		cr_assert_eq(tlog_bdev_read(cow, &v, sizeof(v), off + 13), 0);
		cr_assert_eq(v, off ^ 0x5555);
		if (off + 4096 >= size)
			break;
		cr_assert_eq(tlog_bdev_read(cow, &b, 1, off + 4096), 0);
		cr_assert_eq(b, orig[off + 4096]);
	}
	cr_assert_eq(tlog_bdev_cow_pages(cow), (size + 3 * 4096 - 1) / (3 * 4096));
	cr_assert_eq(memcmp(tlog_bdev_memory_data(inner), orig, size), 0);
	tlog_bdev_close(cow);
	tlog_bdev_close(inner);
	free(orig);
}

/* A filesystem opened writable on the wrapper commits into it alone. */
Test(cow_bdev, commit_on_top_of_a_read_only_image)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true };
	struct tlog_mkfs_result res;
	struct tlog_mkfs_cfg cfg;
	struct tlog_bdev *inner, *cow;
	struct tlog_trans *trans;
	struct tlog_fs *fs;
	u8 *before;

	cr_assert_eq(tlog_bdev_create_memory("inner", DEV_SIZE, &inner), 0);
	tlog_mkfs_default_cfg(&cfg);
	cr_assert_eq(tlog_mkfs(inner, &cfg, &res), 0);
	before = malloc(DEV_SIZE);
	cr_assert_not_null(before);
	memcpy(before, tlog_bdev_memory_data(inner), DEV_SIZE);
	inner->writable = false;
	cr_assert_eq(tlog_bdev_wrap_cow(inner, &cow), 0);

	cr_assert_eq(tlog_open_bdev(cow, &opts, &fs), 0);
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(tlog_trans_commit(trans), 0);
	tlog_close(fs);
	cr_assert_gt(tlog_bdev_cow_pages(cow), 0);

	/* the wrapper sees the commit, the image does not */
	opts.writable = false;
	cr_assert_eq(tlog_open_bdev(cow, &opts, &fs), 0);
	cr_assert_eq(fs->generation, res.generation + 1);
	tlog_close(fs);
	cr_assert_eq(tlog_open_bdev(inner, &opts, &fs), 0);
	cr_assert_eq(fs->generation, res.generation);
	tlog_close(fs);
	cr_assert_eq(memcmp(tlog_bdev_memory_data(inner), before, DEV_SIZE), 0);
	tlog_bdev_close(cow);
	tlog_bdev_close(inner);
	free(before);
}
