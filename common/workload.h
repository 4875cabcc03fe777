/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The workload language of `tlogctl run` (Documentation/tlogctl-run.8):
 * one file operation per line, each standing for the system calls a
 * program would make on the mounted filesystem.
 *
 * A script is parsed whole before anything runs, so a syntax error
 * anywhere rejects it before the image is touched.  The parsed form is
 * shared by everything that runs scripts: tlogctl run, and the kernel
 * driver of bench/run, which issues the same operations as system calls.
 */
#ifndef TLOG_WORKLOAD_H
#define TLOG_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum wl_op {
	WL_MKDIR, WL_CREATE, WL_WRITE, WL_TRUNCATE, WL_FALLOC, WL_PUNCH,
	WL_LINK, WL_RENAME, WL_UNLINK, WL_RMDIR, WL_SYMLINK, WL_MKNOD,
	WL_SETXATTR, WL_REMOVEXATTR, WL_CHMOD, WL_CHOWN, WL_UTIMES, WL_CHATTR,
	WL_FSYNC, WL_FDATASYNC, WL_SYNC,
	WL_MKSUBVOL, WL_MKSNAP, WL_CLONE, WL_CLONERANGE,
	WL_NR_OPS
};

/* Flags of one operation (wl_cmd.flags). */
#define WL_FALLOC_KEEP_SIZE	(1U << 0)	/* falloc ... keep */
#define WL_RENAME_NOREPLACE	(1U << 1)	/* rename ... noreplace */
#define WL_RENAME_EXCHANGE	(1U << 2)	/* rename ... exchange */
#define WL_XATTR_CREATE		(1U << 3)	/* setxattr ... create */
#define WL_XATTR_REPLACE	(1U << 4)	/* setxattr ... replace */

/* chattr flags (wl_cmd.set / wl_cmd.clear): the letters of chattr(1). */
#define WL_ATTR_NOCOW		(1U << 0)	/* C */
#define WL_ATTR_COMPRESS	(1U << 1)	/* c */
#define WL_ATTR_NOCOMPRESS	(1U << 2)	/* m */

struct wl_time {
	int64_t sec;
	uint32_t nsec;
};

/* One operation; which fields mean something depends on @op. */
struct wl_cmd {
	enum wl_op op;
	unsigned int line;
	unsigned int flags;
	const char *path;		/* the operation's file */
	const char *path2;		/* link/rename/clone target, snapshot name */
	const char *name;		/* xattr name, symlink target */
	const char *value;		/* xattr value (not NUL-terminated in general) */
	size_t value_len;
	uint64_t off, len, off2;	/* write/falloc/punch/clonerange; truncate: len */
	uint32_t mode;			/* chmod; mknod: S_IF* | 0644 */
	uint32_t major, minor;		/* mknod c/b */
	uint32_t uid, gid;		/* chown */
	uint32_t set, clear;		/* chattr */
	uint8_t byte;			/* write: the value of every byte */
	struct wl_time atime, mtime;	/* utimes */
};

struct wl_script {
	const char *name;		/* as given: messages are "NAME:LINE: ..." */
	struct wl_cmd *cmds;
	size_t nr;
	char *text;			/* the script, tokens NUL-terminated in place */
	size_t alloc;
};

/*
 * Parse the whole of @f.  0, or -EINVAL with "NAME:LINE: what" in @err
 * (a syntax error), or -errno when @f cannot be read.
 */
int wl_parse(FILE *f, const char *name, struct wl_script *script, char *err, size_t errlen);
void wl_script_free(struct wl_script *script);

/* The operation's name as scripts spell it. */
const char *wl_op_name(enum wl_op op);

#endif
