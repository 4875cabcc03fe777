// SPDX-License-Identifier: GPL-2.0-only
/*
 * kdrive: run a workload script on a mounted directory with the real
 * system calls, parsed by the parser of tlogctl run (common/workload.c).
 * The C twin of tests/tools/wl-exec.py, for timing the kernel without a
 * Python interpreter in the way (bench/run/run.sh).
 *
 *   kdrive [--strict] SCRIPT|- MOUNTPOINT     run it (umask 0)
 *   kdrive --parse SCRIPT|-                   parse only: exit 0, or 2 and the message
 *
 * The script runs chrooted into MOUNTPOINT (needs root): absolute symlink
 * targets and ".." resolve inside the filesystem, as in tlogctl run.
 * Errors: "SCRIPT:LINE: <operation>: <strerror>" on stderr and on to the
 * next line (--strict: exit 1); a syntax error exit 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "workload.h"

#define BTRFS_IOC_SUBVOL_CREATE 0x5000940e
#define BTRFS_IOC_SNAP_CREATE 0x50009401

struct vol_args {
	int64_t fd;
	char name[4088];
};

static char mnt[PATH_MAX];

static const char *P(const char *path, char *buf)
{
	snprintf(buf, PATH_MAX * 2, "%s%s", mnt, path);
	return buf;
}

static int subvol_ioctl(unsigned long req, const char *path, int src)
{
	char buf[PATH_MAX * 2], *slash;
	struct vol_args va = { .fd = src };
	int fd, ret;

	P(path, buf);
	while (strlen(buf) > 1 && buf[strlen(buf) - 1] == '/')
		buf[strlen(buf) - 1] = '\0';
	slash = strrchr(buf, '/');
	if (strlen(slash + 1) > 4087) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(va.name, slash + 1);
	*slash = '\0';
	fd = open(buf[0] ? buf : "/", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -1;
	ret = ioctl(fd, req, &va);
	int e = errno;
	close(fd);
	errno = e;
	return ret;
}

#define TRY(x) do { if ((x) < 0) goto err; } while (0)

static int run_cmd(const struct wl_cmd *c)
{
	char a[PATH_MAX * 2], b[PATH_MAX * 2];
	int fd = -1, fd2 = -1, e;
	static char *chunk;

	switch (c->op) {
	case WL_MKDIR:
		TRY(mkdir(P(c->path, a), 0755));
		break;
	case WL_CREATE:
		TRY(fd = open(P(c->path, a), O_CREAT | O_EXCL | O_WRONLY, 0644));
		break;
	case WL_WRITE: {
		uint64_t done = 0;

		if (!chunk)
			chunk = malloc(1 << 20);
		TRY(fd = open(P(c->path, a), O_CREAT | O_WRONLY, 0644));
		memset(chunk, c->byte, 1 << 20);
		while (done < c->len) {
			size_t n = c->len - done < (1 << 20) ? c->len - done : (1 << 20);
			ssize_t w = pwrite(fd, chunk, n, c->off + done);

			TRY(w);
			done += w;
		}
		break;
	}
	case WL_TRUNCATE:
		TRY(truncate(P(c->path, a), c->len));
		break;
	case WL_FALLOC:
	case WL_PUNCH:
		TRY(fd = open(P(c->path, a), O_WRONLY));
		TRY(fallocate(fd, c->op == WL_PUNCH ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE :
			      (c->flags & WL_FALLOC_KEEP_SIZE) ? FALLOC_FL_KEEP_SIZE : 0,
			      c->off, c->len));
		break;
	case WL_LINK:
		TRY(link(P(c->path, a), P(c->path2, b)));
		break;
	case WL_RENAME:
		TRY(renameat2(AT_FDCWD, P(c->path, a), AT_FDCWD, P(c->path2, b),
			      (c->flags & WL_RENAME_NOREPLACE ? RENAME_NOREPLACE : 0) |
			      (c->flags & WL_RENAME_EXCHANGE ? RENAME_EXCHANGE : 0)));
		break;
	case WL_UNLINK:
		TRY(unlink(P(c->path, a)));
		break;
	case WL_RMDIR:
		TRY(rmdir(P(c->path, a)));
		break;
	case WL_SYMLINK:
		TRY(symlink(c->name, P(c->path, a)));
		break;
	case WL_MKNOD:
		TRY(mknod(P(c->path, a), c->mode, makedev(c->major, c->minor)));
		break;
	case WL_SETXATTR:
		TRY(lsetxattr(P(c->path, a), c->name, c->value, c->value_len,
			      (c->flags & WL_XATTR_CREATE ? XATTR_CREATE : 0) |
			      (c->flags & WL_XATTR_REPLACE ? XATTR_REPLACE : 0)));
		break;
	case WL_REMOVEXATTR:
		TRY(lremovexattr(P(c->path, a), c->name));
		break;
	case WL_CHMOD:
		TRY(chmod(P(c->path, a), c->mode));
		break;
	case WL_CHOWN:
		TRY(lchown(P(c->path, a), c->uid, c->gid));
		break;
	case WL_UTIMES: {
		struct timespec ts[2] = { { c->atime.sec, c->atime.nsec },
					  { c->mtime.sec, c->mtime.nsec } };

		TRY(utimensat(AT_FDCWD, P(c->path, a), ts, AT_SYMLINK_NOFOLLOW));
		break;
	}
	case WL_CHATTR: {
		int flags;
		unsigned int set = 0, clear = 0;

		TRY(fd = open(P(c->path, a), O_RDONLY | O_NONBLOCK | O_NOCTTY));
		TRY(ioctl(fd, FS_IOC_GETFLAGS, &flags));
		if (c->set & WL_ATTR_NOCOW) set |= FS_NOCOW_FL;
		if (c->set & WL_ATTR_COMPRESS) set |= FS_COMPR_FL;
		if (c->set & WL_ATTR_NOCOMPRESS) set |= FS_NOCOMP_FL;
		if (c->clear & WL_ATTR_NOCOW) clear |= FS_NOCOW_FL;
		if (c->clear & WL_ATTR_COMPRESS) clear |= FS_COMPR_FL;
		if (c->clear & WL_ATTR_NOCOMPRESS) clear |= FS_NOCOMP_FL;
		flags = (int)(((unsigned int)flags & ~clear) | set);
		TRY(ioctl(fd, FS_IOC_SETFLAGS, &flags));
		break;
	}
	case WL_FSYNC:
	case WL_FDATASYNC:
		TRY(fd = open(P(c->path, a), O_RDONLY | O_NONBLOCK));
		TRY(c->op == WL_FSYNC ? fsync(fd) : fdatasync(fd));
		break;
	case WL_SYNC:
		TRY(fd = open("/", O_RDONLY | O_DIRECTORY));
		TRY(syncfs(fd));
		break;
	case WL_MKSUBVOL:
		TRY(subvol_ioctl(BTRFS_IOC_SUBVOL_CREATE, c->path, 0));
		break;
	case WL_MKSNAP:
		TRY(fd = open(P(c->path, a), O_RDONLY | O_DIRECTORY));
		TRY(subvol_ioctl(BTRFS_IOC_SNAP_CREATE, c->path2, fd));
		break;
	case WL_CLONE:
		TRY(fd2 = open(P(c->path, a), O_RDONLY));
		TRY(fd = open(P(c->path2, b), O_CREAT | O_WRONLY, 0644));
		TRY(ioctl(fd, FICLONE, fd2));
		break;
	case WL_CLONERANGE: {
		struct file_clone_range r;

		TRY(fd2 = open(P(c->path, a), O_RDONLY));
		TRY(fd = open(P(c->path2, b), O_WRONLY));
		r.src_fd = fd2;
		r.src_offset = c->off;
		r.src_length = c->len;
		r.dest_offset = c->off2;
		TRY(ioctl(fd, FICLONERANGE, &r));
		break;
	}
	default:
		errno = EINVAL;
		goto err;
	}
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0)
		close(fd2);
	return 0;
err:
	e = errno;
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0)
		close(fd2);
	return -e;
}

int main(int argc, char **argv)
{
	struct wl_script s;
	char err[1024];
	bool strict = false, parse_only = false;
	FILE *f;
	int i = 1, ret;

	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "--strict"))
			strict = true;
		else if (!strcmp(argv[i], "--parse"))
			parse_only = true;
		else
			break;
	}
	if (argc - i != (parse_only ? 1 : 2)) {
		fprintf(stderr, "usage: kdrive [--strict] SCRIPT|- MOUNTPOINT | kdrive --parse SCRIPT|-\n");
		return 2;
	}
	f = strcmp(argv[i], "-") ? fopen(argv[i], "r") : stdin;
	if (!f) {
		fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
		return 2;
	}
	ret = wl_parse(f, argv[i], &s, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	if (parse_only)
		return 0;
	if (!realpath(argv[i + 1], mnt)) {
		fprintf(stderr, "%s: %s\n", argv[i + 1], strerror(errno));
		return 2;
	}
	/* the filesystem is the script's whole world (symlinks, "..") */
	if (chroot(mnt) || chdir("/")) {
		fprintf(stderr, "chroot %s: %s\n", mnt, strerror(errno));
		return 2;
	}
	mnt[0] = '\0';
	umask(0);
	for (size_t k = 0; k < s.nr; k++) {
		ret = run_cmd(&s.cmds[k]);
		if (ret) {
			fprintf(stderr, "%s:%u: %s: %s\n", argv[i], s.cmds[k].line,
				wl_op_name(s.cmds[k].op), strerror(-ret));
			if (strict)
				return 1;
		}
	}
	return 0;
}
