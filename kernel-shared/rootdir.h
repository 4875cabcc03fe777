/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Populating a filesystem from a source tree (mkfs --rootdir).
 *
 * Two halves meet here.  A source (struct tlog_source) is anything that
 * can list a tree of files with their metadata and hand out the data of
 * its regular files: a directory on a mounted filesystem (rootdir-dir.c)
 * or an archive libarchive reads (rootdir-archive.c).  The populator
 * (rootdir.c) takes the entries one at a time and makes them through the
 * inode operations of a struct tlog_mount, exactly as a program copying
 * the tree onto a mounted btrfs would: the same items, inline extents,
 * compression decisions and checksums the kernel writes, because they are
 * the same code that `run` checks against the kernel.  Nothing here
 * writes an item of its own.
 *
 * Entries arrive in the source's order.  A directory source lists a
 * directory before what it holds and the names of a directory in byte
 * order (readdir order is the source filesystem's accident; a fixed order
 * is what makes two runs give the same image).  An archive lists what it
 * holds in any order: a parent that is missing when a child arrives is
 * made as a plain directory and takes its own metadata when (if) its entry
 * comes; a second entry for a non-directory path replaces the first, as
 * tar does when extracting.
 *
 * What is copied: file types (regular, directory, symlink, FIFO, socket,
 * character and block devices with their numbers), modes including
 * setuid/setgid/sticky, owners, all four times with nanoseconds (ctime as
 * the source has it, otime from the source's birth time when it has one,
 * else its mtime), every extended attribute (user.*, trusted.*,
 * security.* such as SELinux labels and capabilities, POSIX ACLs as
 * system.posix_acl_*), data with its holes (a hole of the source is never
 * written as zeros), hard links (one inode with every name).  The root
 * entry ("") gives the top-level directory its metadata and xattrs.
 */
#ifndef TLOG_ROOTDIR_H
#define TLOG_ROOTDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include "format.h"

struct tlog_mount;

/* ---- sources ---- */

struct tlog_src_xattr {
	const char *name;	/* full name, NUL-terminated: "user.foo", "system.posix_acl_access" */
	const void *value;	/* for system.posix_acl_*: the kernel's xattr format (version 2) */
	size_t size;
};

/*
 * One entry of a source tree.  Pointers stay valid until the next call of
 * the source's next().
 */
struct tlog_src_entry {
	/*
	 * Relative to the source's root, components separated by one '/',
	 * no leading or trailing '/', no "." or ".." component; "" is the
	 * root itself.  Components may be longer than btrfs allows: the
	 * populator refuses them with a clear error.
	 */
	const char *path;
	u32 mode;		/* S_IF* type and permission bits, as st_mode */
	u32 uid, gid;
	u64 rdev;		/* devices: the number as a dev_t (makedev()) */
	u64 size;		/* regular files: the size */
	struct timespec atime, mtime, ctime;
	struct timespec btime;	/* birth time, when has_btime */
	bool has_btime;
	/*
	 * Hard links.  A directory source gives every non-directory with
	 * more than one link a nonzero @link_id (from st_dev and st_ino) and
	 * its @nlink: entries with the same id are one inode.  An archive
	 * names the earlier path instead (@hardlink, and no other field but
	 * @path is meaningful).
	 */
	u64 link_id;
	u32 nlink;
	const char *hardlink;
	const char *symlink;	/* symlinks: the target */
	const struct tlog_src_xattr *xattrs;
	size_t nr_xattrs;
};

struct tlog_source;

struct tlog_source_ops {
	/*
	 * The next entry: 0 and *@entry filled, 1 when there is none left,
	 * or -errno with the reason (and the path) in the error context.
	 */
	int (*next)(struct tlog_source *src, struct tlog_src_entry *entry);
	/*
	 * The data of the regular file last returned by next(): 0 and
	 * *@len bytes at *@buf for file offset *@off, 1 at the end.  Blocks
	 * come in increasing offset order and do not overlap; a gap between
	 * them (or after the last, up to the entry's size) is a hole.  The
	 * buffer is the source's, valid until the next call.
	 */
	int (*read_data)(struct tlog_source *src, const void **buf, size_t *len, u64 *off);
	/*
	 * A descriptor of the file last returned by next(), open for
	 * reading, whose offsets are the file's (for cloning with
	 * FICLONERANGE), or -1 when the source has none (an archive).
	 * Optional: NULL is the same as -1.
	 */
	int (*data_fd)(struct tlog_source *src);
	void (*close)(struct tlog_source *src);
};

struct tlog_source {
	const struct tlog_source_ops *ops;
	const char *name;	/* for messages: the directory or archive */
	/*
	 * An estimate of the space the tree takes (data rounded up to
	 * sectors, plus metadata), for sizing a new target; 0 when
	 * unknown (an archive on a pipe).
	 */
	u64 estimated_bytes;
};

/*
 * A directory: entries as lstat(2) and statx(2) see them, xattrs with
 * llistxattr/lgetxattr, data read with SEEK_DATA/SEEK_HOLE so that holes
 * stay holes.  A directory of another filesystem inside @path (a mount
 * point) is copied through.  Errors name the path that failed.
 */
int tlog_source_open_dir(const char *path, struct tlog_source **ret);
/*
 * What copying directory @path takes, for sizing a new target: its
 * allocated data (st_blocks) and 4 KiB of metadata per entry.  A walk
 * with lstat only.
 */
int tlog_source_estimate_dir(const char *path, u64 *bytes);
/*
 * An archive in any format and compression libarchive reads; @path "-"
 * reads standard input.  Owners, modes, device numbers, xattrs, ACLs
 * (converted to system.posix_acl_*) and sparse maps come from the archive.
 */
int tlog_source_open_archive(const char *path, struct tlog_source **ret);
/*
 * @in as a path of struct tlog_src_entry: leading "/" and "./", trailing
 * and doubled slashes and "." components dropped ("", "." and "/" are the
 * root, ""). A ".." component is -EINVAL (an archive must not reach out
 * of the tree).  *@out is allocated; -ENOMEM.
 */
int tlog_rootdir_path_normalize(const char *in, char **out);
/* A directory or an archive, by what @path is ("-": an archive on standard input). */
int tlog_source_open(const char *path, struct tlog_source **ret);
void tlog_source_close(struct tlog_source *src);

/* ---- populating ---- */

enum tlog_subvol_type {
	TLOG_SUBVOL_RW,
	TLOG_SUBVOL_RO,
	TLOG_SUBVOL_DEFAULT,		/* rw, and the default subvolume */
	TLOG_SUBVOL_DEFAULT_RO,
};

/*
 * SUBDIR of the source made a subvolume instead of a directory (also when
 * it is made implicitly, as the parent of an archive entry listed before
 * it); its root directory takes the entry's metadata.  A path that never
 * comes from the source is an error; at most one default.  ro and default
 * are applied once everything is copied.
 */
struct tlog_rootdir_subvol {
	const char *path;		/* as tlog_src_entry.path: relative, no slashes at the ends */
	enum tlog_subvol_type type;
};

/*
 * Inode flags for one path, set right after it is made, before its data
 * (FS_IOC_SETFLAGS: NODATACOW brings NODATASUM on a regular file).  What
 * is made in a directory inherits as the kernel's btrfs_inherit_iflags
 * does: NODATACOW (and for regular files NODATASUM with it); NODATASUM of
 * a directory stays its own, as in mkfs.btrfs.  A path that never comes
 * from the source is an error.
 */
struct tlog_rootdir_iflags {
	const char *path;
	u64 flags;			/* BTRFS_INODE_NODATACOW and/or BTRFS_INODE_NODATASUM */
};

struct tlog_rootdir_stats {
	u64 entries;			/* source entries handled */
	/* inodes made for entries (directories made implicitly aside) */
	u64 files, dirs, symlinks, specials;
	u64 hardlinks;			/* names linked to an inode made before */
	u64 subvols;
	u64 xattrs;
	u64 data_bytes;			/* bytes of data read from the source */
	u64 hole_bytes;			/* bytes of regular files left as holes */
	u64 cloned_bytes;		/* of the data, cloned instead of written (--reflink) */
	const char *current;		/* path being copied, for progress (may be NULL) */
};

struct tlog_rootdir_opts {
	const struct tlog_rootdir_subvol *subvols;
	size_t nr_subvols;
	const struct tlog_rootdir_iflags *iflags;
	size_t nr_iflags;
	bool set_owner;			/* --owner: every inode gets @uid and @gid */
	u32 uid, gid;
	bool clamp_times;		/* SOURCE_DATE_EPOCH: no time later than @clamp_sec */
	u64 clamp_sec;
	/*
	 * --reflink: data of files the source has a descriptor for is
	 * cloned into the image (FICLONERANGE) where the image is a file on
	 * the same filesystem, whole sectors at a time; written otherwise.
	 */
	bool reflink;
	/* Called after each entry and at the end (@done); may be NULL. */
	void (*progress)(void *ctx, const struct tlog_rootdir_stats *stats, bool done);
	void *progress_ctx;
};


/*
 * Copy every entry of @src into the top-level subvolume of the mounted
 * filesystem @mnt, committing as it goes (and at the end: on success
 * everything is committed).  @stats (may be NULL) is filled as it goes.
 * Inode numbers follow the entries' order.  Times the source does not give
 * (directories made implicitly, the top level without a root entry, root
 * items) are the mount's clock: set it (tlog_mount_set_fixed_time) for a
 * reproducible image.  A hard link into another subvolume than its
 * inode's cannot be: a new inode there gets a copy (from the source, or
 * for an archive's link a clone of the earlier file, xattrs aside).
 * 0, or -errno with the reason and the path in the error context; on
 * failure the filesystem holds whatever was committed, and the caller
 * does not present it as good (mkfs never writes its superblock then).
 */
int tlog_rootdir_populate(struct tlog_mount *mnt, struct tlog_source *src,
			  const struct tlog_rootdir_opts *opts, struct tlog_rootdir_stats *stats);

#endif
