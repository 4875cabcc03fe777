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

/*
 * The copy-on-write overlay (contract checks replay a log over one):
 * random writes of any alignment through it read back from it, against
 * a model, while the device under it never changes.
 */
Test(memdev, overlay_reads_its_writes_and_leaves_the_device_alone)
{
	enum { SIZE = 256 << 10 };
	static u8 model[SIZE], orig[SIZE], buf[SIZE];
	struct tlog_bdev *dev, *ovl;
	u64 seed = 12345;

	cr_assert_eq(tlog_bdev_create_memory("mem", SIZE, &dev), 0);
	for (size_t i = 0; i < SIZE; i++)
		orig[i] = (u8)(i * 7 + i / 4096);
	cr_assert_eq(tlog_bdev_write(dev, orig, SIZE, 0), 0);
	memcpy(model, orig, SIZE);
	cr_assert_eq(tlog_bdev_wrap_overlay(dev, &ovl), 0);
	for (int n = 0; n < 2000; n++) {
		size_t off, len;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		off = (size_t)(seed >> 33) % SIZE;
		len = 1 + (size_t)(seed >> 17) % 9000;
		if (off + len > SIZE)
			len = SIZE - off;
		memset(buf, n & 0xff, len);
		cr_assert_eq(tlog_bdev_write(ovl, buf, len, off), 0);
		memset(model + off, n & 0xff, len);
		if (n % 100 == 0) {
			cr_assert_eq(tlog_bdev_read(ovl, buf, SIZE, 0), 0);
			cr_assert_eq(memcmp(buf, model, SIZE), 0, "overlay read after %d writes", n);
		}
	}
	/* reads of any alignment, mixing overlay pages and the device's */
	for (int n = 0; n < 500; n++) {
		size_t off, len;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		off = (size_t)(seed >> 33) % SIZE;
		len = 1 + (size_t)(seed >> 17) % 20000;
		if (off + len > SIZE)
			len = SIZE - off;
		cr_assert_eq(tlog_bdev_read(ovl, buf, len, off), 0);
		cr_assert_eq(memcmp(buf, model + off, len), 0, "read [%zu, +%zu)", off, len);
	}
	cr_assert_eq(memcmp(tlog_bdev_memory_data(dev), orig, SIZE), 0, "the device changed");
	tlog_bdev_close(ovl);
	/* the overlay held its own reference: the device is still usable */
	cr_assert_eq(tlog_bdev_read(dev, buf, 16, 0), 0);
	tlog_bdev_close(dev);
}
