// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <blkid/blkid.h>

#include "blockdev.h"
#include "claim.h"
#include "super.h"
#include "errctx.h"
#include "messages.h"
#include "open.h"

int probe_signature(const char *path, char *buf, size_t size)
{
	blkid_probe pr = blkid_new_probe_from_filename(path);
	const char *val = NULL;
	int ret = -ENOENT;

	if (!pr)
		return -ENOENT;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	if (blkid_do_safeprobe(pr) == 0) {
		if (blkid_probe_lookup_value(pr, "TYPE", &val, NULL) == 0) {
			snprintf(buf, size, "%s", val);
			ret = 0;
		} else if (blkid_probe_lookup_value(pr, "PTTYPE", &val, NULL) == 0) {
			snprintf(buf, size, "a %s partition table", val);
			ret = 0;
		}
	}
	blkid_free_probe(pr);
	return ret;
}

/*
 * A refused claim is said as what it is ("IMAGE is mounted on DIR", "IMAGE
 * is in use (locked by another process)"), not as a failure to open.
 * Returns false for other errors.
 */
static bool report_claim_error(const char *path, int err)
{
	const char *why = tlog_error_get();

	if (err == -EBUSY && why && strncmp(why, "mounted on ", 11) == 0) {
		error("%s is %s", path, why);
		return true;
	}
	if (err == -EBUSY || err == -TLOG_ELOCKED) {
		error("%s is in use (%s)", path, why ? why : strerror(-err));
		return true;
	}
	return false;
}

int open_target_for_writing(const char *path, struct tlog_bdev **ret)
{
	int err;

	tlog_error_clear();
	err = tlog_bdev_open_file(path, TLOG_BDEV_RDWR, ret);
	if (err && !report_claim_error(path, err))
		error_errno(err, "cannot open %s", path);
	return err;
}

/* What a reader should know about the image it is shown. */
static void warn_image_state(const char *path, const struct tlog_fs *fs)
{
	if (fs->primary_damage[0])
		warning("the primary superblock of %s is damaged (%s); using copy %d (generation %llu)",
			path, fs->primary_damage, fs->super_mirror,
			(unsigned long long)fs->generation);
	if (fs->truncated)
		warning("%s is %llu bytes, shorter than the %llu bytes its superblock records; reads past its end will fail",
			path, (unsigned long long)fs->bdev->size,
			(unsigned long long)btrfs_dev_item_total_bytes(&fs->super.dev_item));
}

void cmd_open_opts(const struct cmd_struct *cmd, const struct cmd_common *common,
		   struct tlog_open_opts *opts)
{
	*opts = (struct tlog_open_opts){
		.super_mirror = common->super_mirror,
		.writable = cmd->flags & CMD_WRITES,
	};
}

int open_image(const char *path, const struct tlog_open_opts *opts, struct tlog_fs **ret)
{
	char found[64];
	int err = tlog_open(path, opts, ret);

	if (err == 0) {
		warn_image_state(path, *ret);
		return 0;
	}
	if (report_claim_error(path, err))
		return err;
	if (err == -EROFS && opts->writable) {
		error_errno(err, "cannot write to %s", path);
		return err;
	}
	if (err == -TLOG_ENOTBTRFS && probe_signature(path, found, sizeof(found)) == 0 &&
	    strcmp(found, "btrfs") != 0) {
		error("%s holds %s, not btrfs", path, found);
		return err;
	}
	if (err == -TLOG_ENOTBTRFS) {
		error_errno(err, "%s is not a btrfs image", path);
		return err;
	}
	error_errno(err, "cannot open %s", path);
	return err;
}

int report_no_log(const struct tlog_fs *fs, const char *path, bool writer)
{
	if (fs->super_mirror == 0) {
		printf("%s has no log tree\n", path);
		return 0;
	}
	/* only the primary records the log: a backup's silence means nothing */
	if (writer) {
		error("cannot tell whether %s has a log tree (superblock copy %d never records one; only the primary does)",
		      path, fs->super_mirror);
		return -ENOENT;
	}
	printf("%s: superblock copy %d records no log tree (only the primary does; it may hold one)\n",
	       path, fs->super_mirror);
	return 0;
}

int fault_from_env(int *mode, unsigned long long *nth)
{
	const char *env = getenv(TLOG_FAULT_ENV);
	char name[8];

	*mode = 0;
	if (!env || !*env)
		return 0;
	if (sscanf(env, "%7[a-z]:%llu", name, nth) != 2 ||
	    (strcmp(name, "fail") && strcmp(name, "drop")) || *nth == 0) {
		error("invalid %s value '%s' (fail:N or drop:N)", TLOG_FAULT_ENV, env);
		return -EINVAL;
	}
	*mode = strcmp(name, "fail") ? TLOG_FAULT_DROP : TLOG_FAULT_FAIL;
	return 0;
}
