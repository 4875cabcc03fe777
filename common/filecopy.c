// SPDX-License-Identifier: GPL-2.0-only
/*
 * copy_file_sparse: the crash points of "tlogctl run" copy the image once
 * per fsync.  A reflink costs nothing; without one, only the data ranges
 * are copied (copy_file_range lets the kernel do it without a round trip
 * through user space) and the holes stay holes.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filecopy.h"

/* [@pos, @end) of @in into @out at the same offsets. */
static int copy_range(int in, int out, off_t pos, off_t end)
{
	static char buf[1 << 20];

	while (pos < end) {
		size_t want = end - pos > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)(end - pos);
		off_t ipos = pos, opos = pos;
		ssize_t n = copy_file_range(in, &ipos, out, &opos, want, 0);

		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP ||
			      errno == EINVAL)) {
			n = pread(in, buf, want, pos);
			if (n > 0 && pwrite(out, buf, (size_t)n, pos) != n)
				return -errno ? -errno : -EIO;
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* the file shrank under us */
		pos += n;
	}
	return 0;
}

static int copy_data_ranges(int in, int out, off_t size)
{
	off_t pos = 0;

	while (pos < size) {
		off_t data = lseek(in, pos, SEEK_DATA), hole;
		int ret;

		if (data < 0)
			return errno == ENXIO ? 0 : -errno;
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		ret = copy_range(in, out, data, hole);
		if (ret)
			return ret;
		pos = hole;
	}
	return 0;
}

int copy_file_sparse(const char *src, const char *dst, bool *cloned)
{
	struct stat st;
	int in, out, ret = 0;

	if (cloned)
		*cloned = false;
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = S_ISREG(st.st_mode) ? -errno : -EINVAL;
		close(in);
		return ret;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		ret = -errno;
		close(in);
		return ret;
	}
	if (ioctl(out, FICLONE, in) == 0) {
		if (cloned)
			*cloned = true;
	} else if (ftruncate(out, st.st_size) < 0) {
		ret = -errno;
	} else {
		ret = copy_data_ranges(in, out, st.st_size);
	}
	if (close(out) < 0 && !ret)
		ret = -errno;
	close(in);
	if (ret)
		unlink(dst);
	return ret;
}
