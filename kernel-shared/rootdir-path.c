// SPDX-License-Identifier: GPL-2.0-only
/*
 * Paths inside a source tree (rootdir.h).  Archives spell one path many
 * ways ("./a//b/", "/a/b", "a/./b"); the populator and the options that
 * name paths (--subvol, --inode-flags) must agree on one spelling, so
 * every path goes through here once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rootdir.h"

int tlog_rootdir_path_normalize(const char *in, char **out)
{
	size_t len = strlen(in), n = 0;
	char *buf = malloc(len + 1);
	const char *p = in;

	if (!buf)
		return -ENOMEM;
	while (*p) {
		const char *end = strchr(p, '/');
		size_t clen = end ? (size_t)(end - p) : strlen(p);

		if (clen == 2 && p[0] == '.' && p[1] == '.') {
			free(buf);
			return -EINVAL;
		}
		if (clen && !(clen == 1 && p[0] == '.')) {
			if (n)
				buf[n++] = '/';
			memcpy(buf + n, p, clen);
			n += clen;
		}
		p += clen;
		while (*p == '/')
			p++;
	}
	buf[n] = 0;
	*out = buf;
	return 0;
}
