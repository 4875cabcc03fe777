// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl export: copy a file out of the image into a sparse file, the way
 * cp --sparse=auto would copy it from the mounted filesystem: only the
 * ranges SEEK_DATA/SEEK_HOLE call data are written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "commands.h"
#include "errctx.h"
#include "messages.h"
#include "open.h"
#include "path.h"
#include "progress.h"

static const char * const export_usage[] = {
	"tlogctl export [--verify] [-f] IMAGE PATH DEST",
	"Copy a file out of the image, keeping its holes",
	"",
	"DEST receives the bytes a read of the mounted file returns.  Only the",
	"ranges SEEK_DATA and SEEK_HOLE report as data are written; holes and",
	"preallocated ranges stay holes in DEST, which is then extended to the",
	"file size.  DEST gets the permission bits of the file.  An existing",
	"DEST is refused unless -f is given; a failed export removes DEST.",
	"",
	"-f|--force          overwrite DEST if it exists",
	"--verify            check the data checksums first; a mismatch fails",
	"                    before DEST is created",
	NULL
};

enum {
	OPT_VERIFY = GETOPT_VAL_FIRST_CMD,
};

#define EXPORT_BUF_SIZE		(1024 * 1024)
/* Files smaller than this finish before a progress line would help. */
#define PROGRESS_MIN_SIZE	(64ULL * 1024 * 1024)
static int pwrite_all(int fd, const void *buf, size_t len, u64 offset)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)offset);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
		offset += n;
	}
	return 0;
}

struct export_ctx {
	struct tlog_file *file;
	const char *image;
	const char *path;
	const char *dest;
	int fd;
	u8 *buf;
	struct progress progress;
};

/* Copy file bytes [start, end) to the same offsets of DEST. */
static int copy_range(struct export_ctx *x, u64 start, u64 end)
{
	u64 pos = start;
	int err;

	while (pos < end) {
		size_t want = end - pos < EXPORT_BUF_SIZE ? end - pos : EXPORT_BUF_SIZE;
		ssize_t n = tlog_file_pread(x->file, x->buf, want, pos);

		if (n < 0) {
			error_errno((int)n, "cannot read %s in %s", x->path, x->image);
			return (int)n;
		}
		if (n == 0)
			break;
		err = pwrite_all(x->fd, x->buf, n, pos);
		if (err) {
			error("cannot write %s (%s)", x->dest, strerror(-err));
			return err;
		}
		pos += n;
		progress_update(&x->progress, pos);
	}
	return 0;
}

/* Every data segment, as SEEK_DATA then SEEK_HOLE find them, into DEST. */
static int copy_data(struct export_ctx *x)
{
	u64 pos = 0, data, hole;
	int err;

	while (pos < x->file->size) {
		err = tlog_file_seek(x->file, (s64)pos, TLOG_SEEK_DATA, &data);
		if (err == -ENXIO)
			break;
		if (!err)
			err = tlog_file_seek(x->file, (s64)data, TLOG_SEEK_HOLE, &hole);
		if (!err && hole <= data)
			err = tlog_error(-EUCLEAN, "SEEK_HOLE at %llu gave %llu",
					 (unsigned long long)data, (unsigned long long)hole);
		if (err) {
			error_errno(err == -ENXIO ? -EUCLEAN : err, "cannot map the data of %s in %s",
				    x->path, x->image);
			return err;
		}
		err = copy_range(x, data, hole);
		if (err)
			return err;
		pos = hole;
	}
	return 0;
}

/* Check the data checksums; prints the error.  0 or -errno. */
static int verify_file(struct export_ctx *x)
{
	u64 bad = 0;
	int err = tlog_file_verify(x->file, &bad);
	const char *why = tlog_error_get();

	if (!err)
		return 0;
	if (err == -EBADMSG)
		error("checksum mismatch in %s at offset %llu (%s)", x->path,
		      (unsigned long long)bad, why ? why : strerror(EBADMSG));
	else if (err == -ENODATA)
		error("missing checksum in %s at offset %llu (%s)", x->path,
		      (unsigned long long)bad, why ? why : strerror(ENODATA));
	else
		error_errno(err, "cannot verify %s in %s", x->path, x->image);
	return err;
}

static int open_dest(struct export_ctx *x, bool force)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
	struct stat dst, img;

	/* -f must not truncate the image being read */
	if (force && stat(x->dest, &dst) == 0 && stat(x->image, &img) == 0 &&
	    dst.st_dev == img.st_dev && dst.st_ino == img.st_ino) {
		error("cannot export to %s (it is the image)", x->dest);
		return -EINVAL;
	}
	x->fd = open(x->dest, flags, 0600);
	if (x->fd >= 0)
		return 0;
	if (errno == EEXIST)
		error("cannot export to %s (it exists; -f overwrites it)", x->dest);
	else
		error("cannot create %s (%s)", x->dest, strerror(errno));
	return -errno;
}

/* Size, mode and close; the data is in place. */
static int finish_dest(struct export_ctx *x)
{
	int fd = x->fd;

	x->fd = -1;
	if (ftruncate(fd, (off_t)x->file->size) || fchmod(fd, x->file->mode & 07777)) {
		int err = -errno;

		error("cannot finish %s (%s)", x->dest, strerror(errno));
		close(fd);
		return err;
	}
	if (close(fd)) {
		error("cannot write %s (%s)", x->dest, strerror(errno));
		return -EIO;
	}
	return 0;
}

/* Remove a half-written DEST; only a regular file, never a device given with -f. */
static void discard_dest(struct export_ctx *x)
{
	struct stat st;

	if (x->fd >= 0) {
		if (fstat(x->fd, &st) == 0 && S_ISREG(st.st_mode))
			unlink(x->dest);
		close(x->fd);
		x->fd = -1;
	} else {
		if (lstat(x->dest, &st) == 0 && S_ISREG(st.st_mode))
			unlink(x->dest);
	}
}

static int export_file(struct export_ctx *x, bool verify, bool force)
{
	char what[4200];
	int err;

	if (verify) {
		err = verify_file(x);
		if (err)
			return err;
	}
	x->buf = malloc(EXPORT_BUF_SIZE);
	if (!x->buf) {
		error("cannot export %s (%s)", x->path, strerror(ENOMEM));
		return -ENOMEM;
	}
	err = open_dest(x, force);
	if (err)
		return err;
	snprintf(what, sizeof(what), "exporting %s", x->path);
	progress_init(&x->progress, what, x->file->size, x->file->size >= PROGRESS_MIN_SIZE);
	tlog_error_clear();
	err = copy_data(x);
	progress_end(&x->progress);
	if (!err)
		err = finish_dest(x);
	if (err)
		discard_dest(x);
	return err;
}

static int cmd_export(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	struct export_ctx x = { .fd = -1 };
	bool verify = false, force = false;
	struct tlog_fs *fs;
	int c, err;

	while ((c = cmd_next_option(cmd, argc, argv, "f", long_options, &common)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case OPT_VERIFY:
			verify = true;
			break;
		}
	}
	check_argc(cmd, argc, 3, 3);
	x.image = argv[optind];
	x.path = argv[optind + 1];
	x.dest = argv[optind + 2];

	if (cmd_open_file(&common, x.image, x.path, &fs, &x.file))
		return 1;
	tlog_error_clear();
	err = export_file(&x, verify, force);
	free(x.buf);
	tlog_file_close(x.file);
	tlog_close(fs);
	return err ? 1 : 0;
}

const struct cmd_struct cmd_struct_export = {
	.name = "export",
	.fn = cmd_export,
	.usage = export_usage,
	.flags = CMD_PATH,
};
