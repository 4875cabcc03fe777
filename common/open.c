// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <blkid/blkid.h>

#include "blockdev.h"
#include "disk-io.h"
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

int open_image(const char *path, const struct tlog_open_opts *opts, struct tlog_fs **ret)
{
	char found[64];
	int err = tlog_open(path, opts, ret);

	if (err == 0)
		return 0;
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
