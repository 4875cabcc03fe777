// SPDX-License-Identifier: GPL-2.0-only
/*
 * The superblock: reading a copy, validating it as the kernel does at
 * mount, choosing the copy to use, and writing every copy at commit (and
 * mkfs).  Only the primary is the filesystem's word; the others exist for
 * rescue, and never record the log.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "blockdev.h"
#include "csum.h"
#include "ctree.h"
#include "errctx.h"
#include "misc.h"
#include "super.h"

#define TLOG_SUPER_FLAGS_KNOWN (BTRFS_SUPER_FLAG_WRITTEN |		\
				BTRFS_SUPER_FLAG_RELOC |		\
				BTRFS_SUPER_FLAG_ERROR |		\
				BTRFS_SUPER_FLAG_SEEDING |		\
				BTRFS_SUPER_FLAG_METADUMP |		\
				BTRFS_SUPER_FLAG_METADUMP_V2 |		\
				BTRFS_SUPER_FLAG_CHANGING_FSID |	\
				BTRFS_SUPER_FLAG_CHANGING_FSID_V2)

int btrfs_read_super_raw(struct tlog_bdev *bdev, int mirror,
			 struct btrfs_super_block *sb)
{
	u64 off = btrfs_sb_offset(mirror);
	int ret;

	if (off + BTRFS_SUPER_INFO_SIZE > bdev->size)
		return -ENOENT;
	ret = tlog_bdev_read(bdev, sb, BTRFS_SUPER_INFO_SIZE, off);
	if (ret)
		return ret;
	if (btrfs_super_block_magic(sb) != BTRFS_MAGIC)
		return -TLOG_ENOTBTRFS;
	return 0;
}

bool btrfs_super_csum_ok(const struct btrfs_super_block *sb)
{
	u16 type = btrfs_super_block_csum_type(sb);
	u8 csum[BTRFS_CSUM_SIZE];

	if (!btrfs_csum_type_supported(type))
		return false;
	btrfs_csum_data(type, (const u8 *)sb + BTRFS_CSUM_SIZE,
			BTRFS_SUPER_INFO_SIZE - BTRFS_CSUM_SIZE, csum);
	return memcmp(csum, sb->csum, btrfs_csum_type_size(type)) == 0;
}

/*
 * The device size decides where superblock copies go and where chunks may
 * lie: a wrong one makes a writer skip copies it must write, or write
 * past the image.  The kernel refuses a filesystem whose total_bytes is
 * below its devices' sizes, and a device item that is used past its size.
 */
static int validate_super_sizes(const struct btrfs_super_block *sb)
{
	const struct btrfs_dev_item *dev = &sb->dev_item;
	u64 dev_total = btrfs_dev_item_total_bytes(dev);

	if (dev_total < BTRFS_SUPER_INFO_OFFSET + BTRFS_SUPER_INFO_SIZE)
		return tlog_error(-EUCLEAN, "device size %llu (dev_item.total_bytes) cannot hold the superblock",
				  (unsigned long long)dev_total);
	if (btrfs_dev_item_bytes_used(dev) > dev_total)
		return tlog_error(-EUCLEAN, "device uses %llu bytes of its %llu (dev_item)",
				  (unsigned long long)btrfs_dev_item_bytes_used(dev),
				  (unsigned long long)dev_total);
	if (btrfs_super_block_total_bytes(sb) < dev_total)
		return tlog_error(-EUCLEAN, "total_bytes %llu is below the device size %llu",
				  (unsigned long long)btrfs_super_block_total_bytes(sb),
				  (unsigned long long)dev_total);
	if (btrfs_super_block_bytes_used(sb) > btrfs_super_block_total_bytes(sb))
		return tlog_error(-EUCLEAN, "bytes_used %llu exceeds total_bytes %llu",
				  (unsigned long long)btrfs_super_block_bytes_used(sb),
				  (unsigned long long)btrfs_super_block_total_bytes(sb));
	return 0;
}

int btrfs_validate_super(const struct btrfs_super_block *sb, int mirror)
{
	u32 sectorsize = btrfs_super_block_sectorsize(sb);
	u32 nodesize = btrfs_super_block_nodesize(sb);
	u64 incompat = btrfs_super_block_incompat_flags(sb);
	u16 csum_type = btrfs_super_block_csum_type(sb);
	const u8 *fsid;

	if (btrfs_super_block_magic(sb) != BTRFS_MAGIC)
		return tlog_error(-TLOG_ENOTBTRFS, "no btrfs magic");
	if (!btrfs_csum_type_supported(csum_type))
		return tlog_error(-EOPNOTSUPP, "unsupported checksum type %u", csum_type);
	if (!btrfs_super_csum_ok(sb))
		return tlog_error(-EUCLEAN, "superblock checksum mismatch");
	if (btrfs_super_block_bytenr(sb) != btrfs_sb_offset(mirror))
		return tlog_error(-EUCLEAN, "superblock bytenr %llu is not its offset %llu",
				  (unsigned long long)btrfs_super_block_bytenr(sb),
				  (unsigned long long)btrfs_sb_offset(mirror));
	if (!is_power_of_2(sectorsize) || sectorsize < 4096 || sectorsize > 65536)
		return tlog_error(-EUCLEAN, "invalid sectorsize %u", sectorsize);
	if (!is_power_of_2(nodesize) || nodesize < sectorsize ||
	    nodesize > BTRFS_MAX_NODESIZE)
		return tlog_error(-EUCLEAN, "invalid nodesize %u", nodesize);
	if (btrfs_super_block_leafsize(sb) != nodesize)
		return tlog_error(-EUCLEAN, "leafsize %u differs from nodesize %u",
				  btrfs_super_block_leafsize(sb), nodesize);
	if (!is_power_of_2(btrfs_super_block_stripesize(sb)))
		return tlog_error(-EUCLEAN, "invalid stripesize %u",
				  btrfs_super_block_stripesize(sb));
	if (btrfs_super_block_root_level(sb) >= BTRFS_MAX_LEVEL ||
	    btrfs_super_block_chunk_root_level(sb) >= BTRFS_MAX_LEVEL ||
	    btrfs_super_block_log_root_level(sb) >= BTRFS_MAX_LEVEL)
		return tlog_error(-EUCLEAN, "tree root level out of range");
	if (!IS_ALIGNED(btrfs_super_block_root(sb), sectorsize) ||
	    !IS_ALIGNED(btrfs_super_block_chunk_root(sb), sectorsize) ||
	    !IS_ALIGNED(btrfs_super_block_log_root(sb), sectorsize))
		return tlog_error(-EUCLEAN, "unaligned tree root address");
	if (btrfs_super_block_root(sb) == 0 || btrfs_super_block_chunk_root(sb) == 0)
		return tlog_error(-EUCLEAN, "root or chunk root address is zero");
	if (btrfs_super_block_num_devices(sb) == 0)
		return tlog_error(-EUCLEAN, "num_devices is zero");
	if (btrfs_super_block_num_devices(sb) > 1)
		return tlog_error(-EOPNOTSUPP, "filesystem has %llu devices; only single-device images are supported",
				  (unsigned long long)btrfs_super_block_num_devices(sb));
	if (btrfs_super_block_bytes_used(sb) < 6ULL * nodesize)
		return tlog_error(-EUCLEAN, "bytes_used %llu is below 6 nodes",
				  (unsigned long long)btrfs_super_block_bytes_used(sb));
	if (btrfs_super_block_sys_chunk_array_size(sb) > BTRFS_SYSTEM_CHUNK_ARRAY_SIZE)
		return tlog_error(-EUCLEAN, "sys_chunk_array_size %u too large",
				  btrfs_super_block_sys_chunk_array_size(sb));
	if (btrfs_super_block_flags(sb) & ~TLOG_SUPER_FLAGS_KNOWN)
		return tlog_error(-EOPNOTSUPP, "unknown superblock flags 0x%llx",
				  (unsigned long long)btrfs_super_block_flags(sb));
	if (btrfs_super_block_flags(sb) & (BTRFS_SUPER_FLAG_CHANGING_FSID |
					   BTRFS_SUPER_FLAG_CHANGING_FSID_V2))
		return tlog_error(-EOPNOTSUPP, "an fsid change was interrupted on this filesystem");
	if (incompat & ~TLOG_SUPPORTED_INCOMPAT)
		return tlog_error(-EOPNOTSUPP, "unsupported incompat features 0x%llx",
				  (unsigned long long)(incompat & ~TLOG_SUPPORTED_INCOMPAT));
	fsid = (incompat & BTRFS_FEATURE_INCOMPAT_METADATA_UUID) ?
		sb->metadata_uuid : sb->fsid;
	if (memcmp(fsid, sb->dev_item.fsid, BTRFS_FSID_SIZE) != 0)
		return tlog_error(-EUCLEAN, "dev_item fsid does not match the filesystem");
	return validate_super_sizes(sb);
}

/* Read and validate copy @mirror; the reason of a failure is recorded. */
static int load_super_copy(struct tlog_bdev *bdev, int mirror, struct btrfs_super_block *sb)
{
	int ret = btrfs_read_super_raw(bdev, mirror, sb);

	if (ret == 0)
		return btrfs_validate_super(sb, mirror);
	if (ret == -TLOG_ENOTBTRFS)
		return tlog_error(ret, "no btrfs magic");
	if (ret == -ENOENT)
		return tlog_error(ret, "superblock copy %d lies past the end of the device", mirror);
	return ret;
}

/*
 * The newest valid copy other than the primary, for an image whose
 * primary is damaged.  Returns the copy or -1.
 */
static int load_backup_super(struct tlog_bdev *bdev, struct btrfs_super_block *sb)
{
	struct btrfs_super_block tmp;
	u64 best_gen = 0;
	int best = -1;

	for (int i = 1; i < BTRFS_SUPER_MIRROR_MAX; i++) {
		if (load_super_copy(bdev, i, &tmp))
			continue;
		if (best < 0 || btrfs_super_block_generation(&tmp) > best_gen) {
			best = i;
			best_gen = btrfs_super_block_generation(&tmp);
			memcpy(sb, &tmp, sizeof(tmp));
		}
	}
	return best;
}

int btrfs_load_super(struct tlog_bdev *bdev, int mirror,
		     struct btrfs_super_block *sb, int *used, char *damage, size_t size)
{
	char why[sizeof(((struct tlog_fs *)0)->primary_damage)];
	int ret, backup;

	if (damage && size)
		damage[0] = '\0';
	if (bdev->size < BTRFS_SUPER_INFO_OFFSET + BTRFS_SUPER_INFO_SIZE)
		return tlog_error(-TLOG_ENOTBTRFS,
				  "image is too small to hold a superblock (%llu bytes)",
				  (unsigned long long)bdev->size);
	if (mirror >= 0) {
		ret = load_super_copy(bdev, mirror, sb);
		if (ret)
			return tlog_error_wrap(ret, mirror ? "superblock copy" : "primary superblock");
		*used = mirror;
		return 0;
	}
	/* the kernel reads the primary alone: it is the filesystem's word */
	ret = load_super_copy(bdev, 0, sb);
	if (ret == 0) {
		*used = 0;
		return 0;
	}
	snprintf(why, sizeof(why), "%s", tlog_error_get() ? tlog_error_get() : strerror(-ret));
	/* no magic anywhere is a foreign image, not a damaged one */
	backup = ret == -TLOG_ENOTBTRFS ? -1 : load_backup_super(bdev, sb);
	if (backup < 0)
		return tlog_error(ret, "%s", why);
	if (damage)
		snprintf(damage, size, "%s", why);
	*used = backup;
	tlog_error_clear();
	return 0;
}

/*
 * Every copy that ends before the device's last byte is written, as the
 * kernel writes them: a copy left behind would be found by a rescue tool
 * with an older, valid-looking filesystem in it.  A copy the image is too
 * short for is an error, never a quiet skip.
 */
int btrfs_write_supers(struct tlog_bdev *bdev, struct btrfs_super_block *sb)
{
	return btrfs_write_super_copies(bdev, sb, BTRFS_SUPER_MIRROR_MAX);
}

int btrfs_write_super_copies(struct tlog_bdev *bdev, struct btrfs_super_block *sb,
			     int max_mirrors)
{
	u64 total = btrfs_dev_item_total_bytes(&sb->dev_item);
	int err = 0;

	if (total < BTRFS_SUPER_INFO_OFFSET + BTRFS_SUPER_INFO_SIZE)
		return tlog_error(-EUCLEAN, "device size %llu leaves no room for the superblock",
				  (unsigned long long)total);
	for (int mirror = 0; mirror < BTRFS_SUPER_MIRROR_MAX && mirror < max_mirrors; mirror++) {
		u64 off = btrfs_sb_offset(mirror);

		if (off + BTRFS_SUPER_INFO_SIZE >= total && mirror > 0)
			break;
		if (off + BTRFS_SUPER_INFO_SIZE > bdev->size) {
			err = tlog_error(-EIO, "superblock copy %d at %llu lies past the end of %s",
					 mirror, (unsigned long long)off, bdev->name);
			break;
		}
		btrfs_set_super_block_bytenr(sb, off);
		err = btrfs_csum_data(btrfs_super_block_csum_type(sb), (u8 *)sb + BTRFS_CSUM_SIZE,
				      BTRFS_SUPER_INFO_SIZE - BTRFS_CSUM_SIZE, sb->csum);
		if (!err)
			err = tlog_bdev_write(bdev, sb, BTRFS_SUPER_INFO_SIZE, off);
		if (err)
			break;
	}
	return err;
}

int btrfs_write_all_supers(struct tlog_fs *fs)
{
	int err = btrfs_write_supers(fs->bdev, &fs->super);

	/* in memory the superblock stays the copy it was loaded from */
	btrfs_set_super_block_bytenr(&fs->super, btrfs_sb_offset(fs->super_mirror));
	return err;
}

void btrfs_set_backup_root(struct btrfs_root_backup *b, const struct btrfs_super_block *sb,
			   const struct tlog_backup_tree trees[TLOG_BACKUP_NR])
{
	memset(b, 0, sizeof(*b));
#define BACKUP(field, idx)							\
	do {									\
		btrfs_set_root_backup_##field(b, trees[idx].bytenr);		\
		btrfs_set_root_backup_##field##_gen(b, trees[idx].generation);	\
		btrfs_set_root_backup_##field##_level(b, trees[idx].level);	\
	} while (0)
	BACKUP(tree_root, TLOG_BACKUP_TREE_ROOT);
	BACKUP(chunk_root, TLOG_BACKUP_CHUNK_ROOT);
	BACKUP(extent_root, TLOG_BACKUP_EXTENT_ROOT);
	BACKUP(fs_root, TLOG_BACKUP_FS_ROOT);
	BACKUP(dev_root, TLOG_BACKUP_DEV_ROOT);
	BACKUP(csum_root, TLOG_BACKUP_CSUM_ROOT);
#undef BACKUP
	btrfs_set_root_backup_total_bytes(b, btrfs_super_block_total_bytes(sb));
	btrfs_set_root_backup_bytes_used(b, btrfs_super_block_bytes_used(sb));
	btrfs_set_root_backup_num_devices(b, btrfs_super_block_num_devices(sb));
}
