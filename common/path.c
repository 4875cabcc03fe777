// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <sys/stat.h>

#include "errctx.h"
#include "messages.h"
#include "open.h"
#include "options.h"
#include "path.h"
#include "root-tree.h"
#include "tree-log.h"

int resolve_image_path(struct tlog_fs *fs, u64 subvol, const char *image,
		       const char *path, struct tlog_ino *ret)
{
	struct btrfs_root *start = NULL;
	int err;

	tlog_error_clear();
	if (subvol && !btrfs_is_subvolume_id(subvol)) {
		error("%llu is not a subvolume id (use 5 or 256 and up)",
		      (unsigned long long)subvol);
		return -EINVAL;
	}
	if (subvol) {
		err = btrfs_read_root(fs, subvol, &start);
		if (err) {
			error_errno(err, "cannot open subvolume %llu of %s",
				    (unsigned long long)subvol, image);
			return err;
		}
	}
	err = tlog_resolve_path(fs, start, path, ret);
	if (err)
		error_errno(err, "cannot find %s in %s", path, image);
	return err;
}

int open_image_file(struct tlog_fs *fs, u64 subvol, const char *image,
		    const char *path, struct tlog_file **ret)
{
	struct tlog_ino ino;
	int err;

	err = resolve_image_path(fs, subvol, image, path, &ino);
	if (err)
		return err;
	tlog_error_clear();
	err = tlog_file_open(fs, ino.root, ino.ino, ret);
	if (err) {
		error_errno(err, "cannot open %s in %s", path, image);
		return err;
	}
	if (!S_ISREG((*ret)->mode)) {
		u32 mode = (*ret)->mode;

		if (S_ISDIR(mode))
			error("cannot query %s in %s (it is a directory)", path, image);
		else if (S_ISLNK(mode))
			error("cannot query %s in %s (it is a symlink)", path, image);
		else
			error("cannot query %s in %s (not a regular file)", path, image);
		tlog_file_close(*ret);
		*ret = NULL;
		return S_ISDIR(mode) ? -EISDIR : -EINVAL;
	}
	return 0;
}

/*
 * Open the image as the kernel would show it: with the log replayed (in
 * memory; the image is not changed), or the committed state for --no-log.
 */
static int open_fs(const struct cmd_common *common, const char *image, struct tlog_fs **fs)
{
	struct tlog_open_opts opts = { .super_mirror = common->super_mirror };
	int err = open_image(image, &opts, fs);

	if (err || common->no_log || !(*fs)->log_root_tree)
		return err;
	tlog_error_clear();
	err = tlog_apply_log_overlay(*fs);
	if (err) {
		error_errno(err, "cannot apply the log tree of %s (--no-log shows the committed state)",
			    image);
		tlog_close(*fs);
		*fs = NULL;
	}
	return err;
}

int cmd_open_path(const struct cmd_common *common, const char *image, const char *path,
		  struct tlog_fs **fs, struct tlog_ino *ino)
{
	int err = open_fs(common, image, fs);

	if (err)
		return err;
	err = resolve_image_path(*fs, common->subvol, image, path, ino);
	if (err) {
		tlog_close(*fs);
		*fs = NULL;
	}
	return err;
}

int cmd_open_file(const struct cmd_common *common, const char *image, const char *path,
		  struct tlog_fs **fs, struct tlog_file **file)
{
	int err = open_fs(common, image, fs);

	if (err)
		return err;
	err = open_image_file(*fs, common->subvol, image, path, file);
	if (err) {
		tlog_close(*fs);
		*fs = NULL;
	}
	return err;
}
