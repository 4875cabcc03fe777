// SPDX-License-Identifier: GPL-2.0-only
/* The pass comes in its own commit. */
#include "check-priv.h"

int check_fs_trees(struct tlog_check *c, struct tlog_fs *fs)
{
	(void)c;
	(void)fs;
	return 0;
}
