// SPDX-License-Identifier: GPL-2.0-only
/*
 * The memory device: an image that needs no file and no root.  mkfs
 * writes a filesystem on it that tlog_open_bdev() opens again and again,
 * and fault injection wraps it like any device.
 */
#include <errno.h>
#include <string.h>
#include <criterion/criterion.h>

#include "blockdev.h"
#include "ctree.h"
#include "super.h"
#include "mkfs.h"

#define DEV_SIZE	(512ULL << 20)

static struct tlog_bdev *make_fs(struct tlog_mkfs_result *res)
{
	struct tlog_mkfs_cfg cfg;
	struct tlog_bdev *bdev;

	cr_assert_eq(tlog_bdev_create_memory("mem", DEV_SIZE, &bdev), 0);
	tlog_mkfs_default_cfg(&cfg);
	cr_assert_eq(tlog_mkfs(bdev, &cfg, res), 0);
	return bdev;
}

Test(memdev, reads_back_what_was_written_and_refuses_past_the_end)
{
	struct tlog_bdev *bdev;
	u8 buf[8] = { 0 };

	cr_assert_eq(tlog_bdev_create_memory("mem", 1 << 20, &bdev), 0);
	cr_assert_eq(tlog_bdev_write(bdev, "btrfs!", 6, 4096), 0);
	cr_assert_eq(tlog_bdev_read(bdev, buf, 6, 4096), 0);
	cr_assert_str_eq((char *)buf, "btrfs!");
	cr_assert_eq(memcmp(tlog_bdev_memory_data(bdev) + 4096, "btrfs!", 6), 0);
	cr_assert_eq(tlog_bdev_write(bdev, buf, 8, (1 << 20) - 4), -EIO);
	cr_assert_eq(tlog_bdev_read(bdev, buf, 8, 1 << 20), -EIO);
	tlog_bdev_close(bdev);
}

Test(memdev, mkfs_then_open_twice)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true };
	struct tlog_mkfs_result res;
	struct tlog_bdev *bdev = make_fs(&res);
	struct tlog_fs *fs;

	for (int i = 0; i < 2; i++) {
		cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0);
		cr_assert_eq(fs->super_mirror, 0);
		cr_assert_eq(fs->generation, res.generation);
		cr_assert_eq(memcmp(fs->fsid, res.fsid, BTRFS_FSID_SIZE), 0);
		cr_assert_null(fs->log_root_tree);
		tlog_close(fs);
	}
	/* the device outlives the filesystems opened on it */
	cr_assert_eq(bdev->refs, 1);
	tlog_bdev_close(bdev);
}

Test(memdev, damaged_primary_is_reported_and_refused_for_writing)
{
	struct tlog_open_opts opts = { .super_mirror = -1 };
	struct tlog_mkfs_result res;
	struct tlog_bdev *bdev = make_fs(&res);
	struct tlog_fs *fs;

	tlog_bdev_memory_data(bdev)[BTRFS_SUPER_INFO_OFFSET + 0x100] ^= 0x5a;
	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0);
	cr_assert_eq(fs->super_mirror, 1);
	cr_assert(strstr(fs->primary_damage, "checksum") != NULL, "%s", fs->primary_damage);
	tlog_close(fs);
	opts.writable = true;
	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), -EROFS);
	opts.super_mirror = 1;
	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0);
	tlog_close(fs);
	tlog_bdev_close(bdev);
}

Test(memdev, open_through_fault_injection)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true,
				       .fault_mode = TLOG_FAULT_FAIL, .fault_nth = 1 };
	struct tlog_mkfs_result res;
	struct tlog_bdev *bdev = make_fs(&res);
	struct tlog_fs *fs;
	u8 sb[16];

	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0);
	cr_assert_eq(btrfs_write_all_supers(fs), -EIO);
	tlog_close(fs);
	/* nothing reached the device, which is still there */
	cr_assert_eq(tlog_bdev_read(bdev, sb, sizeof(sb), BTRFS_SUPER_INFO_OFFSET), 0);
	cr_assert_eq(bdev->refs, 1);
	tlog_bdev_close(bdev);
}
