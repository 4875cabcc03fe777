// SPDX-License-Identifier: GPL-2.0-only
/*
 * Claiming a target for writing: the mount checks and the BSD lock (see
 * claim.h for why each is needed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/sysmacros.h>

#include "claim.h"
#include "errctx.h"

/*
 * The mount source of one /proc/self/mountinfo line is a block device
 * @rdev.  btrfs reports an anonymous st_dev in field 3, so the source
 * path after the " - " separator is stat'ed as well.
 */
static bool mountinfo_line_is(const char *line, dev_t rdev, char *mnt, size_t size)
{
	char point[PATH_MAX], src[PATH_MAX];
	unsigned int maj, min;
	const char *sep;
	struct stat st;

	if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, point) != 3)
		return false;
	sep = strstr(line, " - ");
	if (!sep || sscanf(sep + 3, "%*s %4095s", src) != 1)
		return false;
	if (makedev(maj, min) != rdev &&
	    !(src[0] == '/' && stat(src, &st) == 0 && S_ISBLK(st.st_mode) && st.st_rdev == rdev))
		return false;
	snprintf(mnt, size, "%s", point);
	return true;
}

/* Whether block device @rdev is the source of a mount; @where gets its path. */
static bool blockdev_mounted(dev_t rdev, char *where, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[2 * PATH_MAX + 256];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = mountinfo_line_is(line, rdev, where, size);
	fclose(f);
	return found;
}

/* Read one line of a sysfs attribute into @buf, without its newline. */
static bool read_sysfs(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/*
 * Whether loop device @name (e.g. "loop3") is backed by the file @st and
 * mounted.  The backing file is matched by device and inode, not by name,
 * so a path given differently (relative, through a symlink) still matches.
 */
static bool loop_backed_and_mounted(const char *name, const struct stat *st,
				    char *where, size_t size)
{
	char path[PATH_MAX], backing[PATH_MAX], dev[32];
	unsigned int maj, min;
	struct stat bst;

	snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file", name);
	if (!read_sysfs(path, backing, sizeof(backing)))
		return false;
	if (stat(backing, &bst) || bst.st_dev != st->st_dev || bst.st_ino != st->st_ino)
		return false;
	snprintf(path, sizeof(path), "/sys/block/%s/dev", name);
	if (!read_sysfs(path, dev, sizeof(dev)) || sscanf(dev, "%u:%u", &maj, &min) != 2)
		return false;
	return blockdev_mounted(makedev(maj, min), where, size);
}

static bool file_mounted_via_loop(const struct stat *st, char *where, size_t size)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	bool found = false;

	if (!d)
		return false;
	while (!found && (de = readdir(d)))
		if (strncmp(de->d_name, "loop", 4) == 0)
			found = loop_backed_and_mounted(de->d_name, st, where, size);
	closedir(d);
	return found;
}

int tlog_target_mounted(const struct stat *st, char *where, size_t size)
{
	if (S_ISBLK(st->st_mode))
		return blockdev_mounted(st->st_rdev, where, size);
	if (S_ISREG(st->st_mode))
		return file_mounted_via_loop(st, where, size);
	return 0;
}

/*
 * The whole disk of partition @rdev, opened read-only for its lock, or -1
 * when @rdev is no partition (or sysfs cannot say).  sysfs names the
 * partition's parent directory after the disk; /dev/block/MAJ:MIN is not
 * always there (no udev in containers), so the disk is found by name.
 */
static int open_whole_disk(dev_t rdev)
{
	char link[PATH_MAX], real[PATH_MAX], *slash;
	char path[PATH_MAX + 32];

	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u/partition", major(rdev), minor(rdev));
	if (access(link, F_OK) != 0)
		return -1;
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u/..", major(rdev), minor(rdev));
	if (!realpath(link, real))
		return -1;
	slash = strrchr(real, '/');
	if (!slash)
		return -1;
	snprintf(path, sizeof(path), "/dev/%s", slash + 1);
	return open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

static int lock_fd(int fd, const char *path)
{
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK)
			return tlog_error(-TLOG_ELOCKED, "locked by another process");
		/* a filesystem without BSD locks (some network ones) cannot lock */
		if (errno == ENOLCK || errno == EOPNOTSUPP)
			return 0;
		return tlog_error(-errno, "cannot lock %s: %s", path, strerror(errno));
	}
	return 0;
}

int tlog_claim_fd(int fd, const char *path, const struct stat *st, int *disk_fd)
{
	char where[PATH_MAX];
	int ret;

	*disk_fd = -1;
	if (tlog_target_mounted(st, where, sizeof(where)))
		return tlog_error(-EBUSY, "mounted on %s", where);
	ret = lock_fd(fd, path);
	if (ret)
		return ret;
	if (S_ISBLK(st->st_mode)) {
		*disk_fd = open_whole_disk(st->st_rdev);
		if (*disk_fd >= 0) {
			ret = lock_fd(*disk_fd, path);
			if (ret) {
				close(*disk_fd);
				*disk_fd = -1;
				return ret;
			}
		}
	}
	return 0;
}
