// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl cat: the bytes of a file of the image on standard output, as a
 * read of the mounted file returns them.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "errctx.h"
#include "messages.h"
#include "open.h"
#include "path.h"

static const char * const cat_usage[] = {
	"tlogctl cat IMAGE PATH",
	"Write the contents of a file of the image to standard output",
	"",
	"The bytes are those a read of the mounted file returns: holes and",
	"preallocated ranges read as zeros, compressed and inline extents are",
	"decoded, nothing past the file size is written.  Data checksums are",
	"not checked (tlogctl export --verify does that).  A reader that closes",
	"the pipe early ends the output quietly.",
	"",
	NULL
};

/* Large reads: a sequential reader costs one pass over the extent items. */
#define CAT_BUF_SIZE (1024 * 1024)

/* write(2) all of @buf; 0 or -errno. */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* Copy the file to @fd.  Prints the error; 0, -EPIPE (reader gone) or -errno. */
static int cat_file(struct tlog_file *file, int fd, const char *path, const char *image)
{
	u8 *buf = malloc(CAT_BUF_SIZE);
	u64 pos = 0;
	int err = 0;

	if (!buf) {
		error("cannot read %s in %s (%s)", path, image, strerror(ENOMEM));
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n = tlog_file_pread(file, buf, CAT_BUF_SIZE, pos);

		if (n < 0) {
			err = (int)n;
			error_errno(err, "cannot read %s in %s", path, image);
			break;
		}
		if (n == 0)
			break;
		err = write_all(fd, buf, n);
		if (err) {
			if (err != -EPIPE)
				output_error(err);
			break;
		}
		pos += n;
	}
	free(buf);
	return err;
}

static int cmd_cat(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	struct tlog_file *file = NULL;
	struct tlog_fs *fs;
	const char *image, *path;
	int err;

	cmd_parse_common_options(cmd, argc, argv, long_options, &common);
	check_argc(cmd, argc, 2, 2);
	image = argv[optind];
	path = argv[optind + 1];

	/* a closed pipe shows up as EPIPE from write(), handled quietly */
	signal(SIGPIPE, SIG_IGN);
	if (cmd_open_file(&common, image, path, &fs, &file))
		return 1;
	tlog_error_clear();
	err = cat_file(file, STDOUT_FILENO, path, image);
	tlog_file_close(file);
	tlog_close(fs);
	return err && err != -EPIPE ? 1 : 0;
}

const struct cmd_struct cmd_struct_cat = {
	.name = "cat",
	.fn = cmd_cat,
	.usage = cat_usage,
	.flags = CMD_PATH,
};
