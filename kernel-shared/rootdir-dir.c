// SPDX-License-Identifier: GPL-2.0-only
/*
 * The directory source of mkfs --rootdir (rootdir.h), and the choice
 * between a directory and an archive.
 *
 * The tree is walked in preorder, the root entry "" first, and the names
 * of each directory in byte order: readdir order is an accident of the
 * source filesystem, a fixed order is what lets two runs make the same
 * image.  A directory's names are read whole, and sorted, when the
 * directory itself is listed.
 *
 * Every call is relative to the descriptor of the directory holding the
 * entry (openat, statx, readlinkat), with O_NOFOLLOW or
 * AT_SYMLINK_NOFOLLOW: no path is resolved again per call, and no symlink
 * is followed, so nothing outside the tree is read.  A mount point inside
 * the tree is an ordinary directory here and is copied through.
 *
 * The stack of open directories is as deep as the tree, which may be
 * deeper than the descriptors a process has.  Invariant: frames[0] (the
 * root) and frames[lowest_open..nr_frames) hold open descriptors,
 * frames[1..lowest_open) are closed; at most DIR_FDS_OPEN are open.  A
 * closed directory is reopened when its last child directory is done,
 * through that child's "..", checked to be the same directory (if the
 * child was moved meanwhile, it is found by its names from the root).
 *
 * Files and directories are opened with O_NOATIME where that is allowed
 * (the owner, or root): reading the tree must not change the atimes a
 * second run would copy.  (readlink cannot help moving a symlink's.)
 *
 * Regular files are read with SEEK_DATA/SEEK_HOLE, so that a hole is never
 * read (nor written) as zeros, in blocks of at most DATA_BLOCK bytes that
 * do not cross a multiple of DATA_BLOCK.  A file that changes while it is
 * read gives exactly the size its entry said: what grew is not read, what
 * shrank reads as zeros.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "array.h"
#include "errctx.h"
#include "misc.h"
#include "rootdir.h"

#define DIR_FDS_OPEN	64
#define DATA_BLOCK	(1U << 20)
#define STATX_WANT	(STATX_BASIC_STATS | STATX_BTIME)
/* What estimate_dir counts for the items of one entry. */
#define ENTRY_METADATA	4096

/* One directory on the walk's stack. */
struct dir_frame {
	int fd;			/* -1 while closed (see the invariant above) */
	u64 dev, ino;		/* what a reopened @fd must be */
	char *blob;		/* the names, each NUL-terminated */
	char **names;		/* into @blob, sorted */
	size_t nr, next;
	size_t path_len;	/* this directory's path is path[0, path_len) */
	size_t name_off;	/* and its own name starts at path[name_off] */
};

/* Inodes with more than one link, by (st_dev, st_ino): open addressing. */
struct link_slot {
	u64 dev, ino;
	u64 id;			/* 0: an empty slot */
};

struct link_table {
	struct link_slot *slots;
	size_t cap, nr;		/* cap is 0 or a power of two, nr <= cap / 2 */
};

struct dir_source {
	struct tlog_source src;
	bool light;		/* estimating: no xattrs, targets or data */
	bool started;
	bool proc_fd;		/* /proc/self/fd reaches a directory's entries */
	char *root;

	struct dir_frame *frames;
	size_t nr_frames, frames_alloc, lowest_open, nr_open;

	char *path;		/* of the current entry, relative to @root */
	size_t path_alloc;

	struct link_table links;
	bool new_link;		/* the current entry is the first of its inode */
	u64 blocks;		/* its st_blocks */

	char *target;
	size_t target_alloc;

	char *xnames;		/* what llistxattr returned */
	size_t xnames_alloc;
	char *xvalues;		/* every value, one after the other */
	size_t xvalues_alloc;
	struct tlog_src_xattr *xattrs;
	size_t xattrs_alloc;
	size_t *xoffs;		/* where each value starts in @xvalues */
	size_t xoffs_alloc;

	/* the regular file last listed */
	int file_fd;
	u64 file_size, pos, seg_end;
	char *data;
};

static struct dir_source *dir_of(struct tlog_source *src)
{
	return (struct dir_source *)src;
}

/* ---- messages ---- */

/* Record "ROOT/PATH: WHAT: strerror" for the current entry and return @err. */
static int entry_error(struct dir_source *ds, int err, const char *what)
{
	return tlog_error(err, "%s%s%s: %s: %s", ds->root, ds->path[0] ? "/" : "", ds->path,
			  what, strerror(-err));
}

/* ---- hard links ---- */

static u64 link_hash(u64 dev, u64 ino)
{
	u64 h = (ino ^ (dev * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

	return h ^ (h >> 32);
}

static int link_grow(struct link_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	struct link_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots || cap < t->cap) {
		free(slots);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->cap; i++) {
		struct link_slot *s = &t->slots[i];
		size_t j = link_hash(s->dev, s->ino) & (cap - 1);

		if (!s->id)
			continue;
		while (slots[j].id)
			j = (j + 1) & (cap - 1);
		slots[j] = *s;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

/*
 * The id of inode (@dev, @ino): the one it was given when first seen, or
 * the next (1, 2, ...) with *@first set.  Exact where any mix of the two
 * numbers into 64 bits could collide across filesystems.
 */
static int link_id(struct link_table *t, u64 dev, u64 ino, u64 *id, bool *first)
{
	size_t j;
	int err;

	if (t->nr + 1 > t->cap / 2) {
		err = link_grow(t);
		if (err)
			return err;
	}
	j = link_hash(dev, ino) & (t->cap - 1);
	while (t->slots[j].id) {
		if (t->slots[j].dev == dev && t->slots[j].ino == ino) {
			*id = t->slots[j].id;
			*first = false;
			return 0;
		}
		j = (j + 1) & (t->cap - 1);
	}
	t->slots[j] = (struct link_slot){ dev, ino, ++t->nr };
	*id = t->nr;
	*first = true;
	return 0;
}

/* ---- entries ---- */

static int statx_fd(int fd, struct statx *stx)
{
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_WANT, stx))
		return -errno;
	return 0;
}

static struct timespec ts_of(const struct statx_timestamp *t)
{
	return (struct timespec){ .tv_sec = t->tv_sec, .tv_nsec = t->tv_nsec };
}

/* The fields of @e that statx gives, and the link id. */
static int fill_entry(struct dir_source *ds, const struct statx *stx, struct tlog_src_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->path = ds->path;
	e->mode = stx->stx_mode;
	e->uid = stx->stx_uid;
	e->gid = stx->stx_gid;
	if (S_ISCHR(stx->stx_mode) || S_ISBLK(stx->stx_mode))
		e->rdev = makedev(stx->stx_rdev_major, stx->stx_rdev_minor);
	if (S_ISREG(stx->stx_mode))
		e->size = stx->stx_size;
	e->atime = ts_of(&stx->stx_atime);
	e->mtime = ts_of(&stx->stx_mtime);
	e->ctime = ts_of(&stx->stx_ctime);
	if (stx->stx_mask & STATX_BTIME) {
		e->btime = ts_of(&stx->stx_btime);
		e->has_btime = true;
	}
	e->nlink = stx->stx_nlink;
	ds->blocks = stx->stx_blocks;
	ds->new_link = true;
	if (!S_ISDIR(stx->stx_mode) && stx->stx_nlink > 1) {
		int err = link_id(&ds->links, makedev(stx->stx_dev_major, stx->stx_dev_minor),
				  stx->stx_ino, &e->link_id, &ds->new_link);

		if (err)
			return entry_error(ds, err, "cannot note hard link");
	}
	return 0;
}

/* ---- xattrs ---- */

static int cmp_xattr(const void *a, const void *b)
{
	return strcmp(((const struct tlog_src_xattr *)a)->name,
		      ((const struct tlog_src_xattr *)b)->name);
}

/* Either an open descriptor or a path whose last component is not followed. */
struct xattr_target {
	int fd;
	const char *path;
};

static ssize_t xt_list(const struct xattr_target *t, char *buf, size_t size)
{
	return t->fd >= 0 ? flistxattr(t->fd, buf, size) : llistxattr(t->path, buf, size);
}

static ssize_t xt_get(const struct xattr_target *t, const char *name, void *buf, size_t size)
{
	return t->fd >= 0 ? fgetxattr(t->fd, name, buf, size) :
			    lgetxattr(t->path, name, buf, size);
}

/* The names of @t's xattrs into ds->xnames; *@len bytes. */
static int list_xattr_names(struct dir_source *ds, const struct xattr_target *t, size_t *len)
{
	for (;;) {
		ssize_t need = xt_list(t, NULL, 0), got;
		int err;

		if (need < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP)) {
			need = 0;
		} else if (need < 0) {
			return entry_error(ds, -errno, "cannot list xattrs");
		}
		if (need == 0) {
			*len = 0;
			return 0;
		}
		err = array_reserve(ds->xnames, ds->xnames_alloc, (size_t)need);
		if (err)
			return entry_error(ds, err, "cannot list xattrs");
		got = xt_list(t, ds->xnames, ds->xnames_alloc);
		if (got < 0 && errno == ERANGE)
			continue;	/* one was added since */
		if (got < 0)
			return entry_error(ds, -errno, "cannot list xattrs");
		*len = (size_t)got;
		return 0;
	}
}

/*
 * The value of @name appended to ds->xvalues at *@used: 0, 1 when the
 * xattr went away since it was listed, or -errno.
 */
static int read_xattr_value(struct dir_source *ds, const struct xattr_target *t,
			    const char *name, size_t *used, size_t *size)
{
	for (;;) {
		ssize_t got = xt_get(t, name, ds->xvalues + *used, ds->xvalues_alloc - *used);
		ssize_t need;
		int err;

		if (got >= 0) {
			*size = (size_t)got;
			*used += (size_t)got;
			return 0;
		}
		if (errno == ENODATA)
			return 1;
		if (errno != ERANGE)
			return entry_error(ds, -errno, "cannot read xattr");
		need = xt_get(t, name, NULL, 0);
		if (need < 0 && errno == ENODATA)
			return 1;
		if (need < 0)
			return entry_error(ds, -errno, "cannot read xattr");
		err = array_reserve(ds->xvalues, ds->xvalues_alloc, *used + (size_t)need + 1);
		if (err)
			return entry_error(ds, err, "cannot read xattr");
	}
}

/* Every xattr of @t into @e, sorted by name (the order llistxattr has is the filesystem's). */
static int read_xattrs(struct dir_source *ds, const struct xattr_target *t,
		       struct tlog_src_entry *e)
{
	size_t len, used = 0, nr = 0;
	int err = list_xattr_names(ds, t, &len);

	if (err || !len)
		return err;
	err = array_reserve(ds->xvalues, ds->xvalues_alloc, 4096);
	if (err)
		return entry_error(ds, err, "cannot read xattrs");
	for (size_t off = 0; off < len; off += strlen(ds->xnames + off) + 1) {
		const char *name = ds->xnames + off;
		size_t start = used, size = 0;

		if (!name[0] || memchr(name, 0, len - off) == NULL)
			break;
		err = array_reserve(ds->xattrs, ds->xattrs_alloc, nr + 1);
		if (!err)
			err = array_reserve(ds->xoffs, ds->xoffs_alloc, nr + 1);
		if (err)
			return entry_error(ds, err, "cannot read xattrs");
		err = read_xattr_value(ds, t, name, &used, &size);
		if (err < 0)
			return err;
		if (err)
			continue;
		ds->xattrs[nr] = (struct tlog_src_xattr){ .name = name, .size = size };
		ds->xoffs[nr++] = start;
	}
	/* the values are placed once @xvalues no longer moves */
	for (size_t i = 0; i < nr; i++)
		ds->xattrs[i].value = ds->xvalues + ds->xoffs[i];
	if (nr)
		qsort(ds->xattrs, nr, sizeof(*ds->xattrs), cmp_xattr);
	e->xattrs = ds->xattrs;
	e->nr_xattrs = nr;
	return 0;
}

/* The xattrs of @name in directory @dirfd, which cannot be opened (symlinks, devices, FIFOs). */
static int read_xattrs_at(struct dir_source *ds, int dirfd, const char *name,
			  struct tlog_src_entry *e)
{
	struct xattr_target t = { .fd = -1 };
	char buf[64 + NAME_MAX];
	char *full = NULL;
	int err;

	if (ds->proc_fd && strlen(name) <= NAME_MAX) {
		snprintf(buf, sizeof(buf), "/proc/self/fd/%d/%s", dirfd, name);
		t.path = buf;
	} else {
		if (asprintf(&full, "%s/%s", ds->root, ds->path) < 0)
			return entry_error(ds, -ENOMEM, "cannot read xattrs");
		t.path = full;
	}
	err = read_xattrs(ds, &t, e);
	free(full);
	return err;
}

/* ---- the stack of directories ---- */

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory @fd, without "." and "..", sorted, into @f. */
static int read_names(struct dir_source *ds, int fd, struct dir_frame *f)
{
	size_t used = 0, alloc = 0, nr = 0;
	int dfd = dup(fd), err = 0;
	struct dirent *de;
	DIR *dir;

	if (dfd < 0)
		return entry_error(ds, -errno, "cannot read directory");
	dir = fdopendir(dfd);
	if (!dir) {
		err = -errno;
		close(dfd);
		return entry_error(ds, err, "cannot read directory");
	}
	for (;;) {
		size_t len;

		errno = 0;
		de = readdir(dir);
		if (!de) {
			err = -errno;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		len = strlen(de->d_name) + 1;
		err = array_reserve(f->blob, alloc, used + len);
		if (err)
			break;
		memcpy(f->blob + used, de->d_name, len);
		used += len;
		nr++;
	}
	closedir(dir);
	if (!err && nr) {
		f->names = malloc(nr * sizeof(*f->names));
		if (!f->names)
			err = -ENOMEM;
	}
	if (err)
		return entry_error(ds, err, "cannot read directory");
	for (size_t i = 0, off = 0; i < nr; i++, off += strlen(f->blob + off) + 1)
		f->names[i] = f->blob + off;
	if (nr)
		qsort(f->names, nr, sizeof(*f->names), cmp_name);
	f->nr = nr;
	return 0;
}

static void free_frame(struct dir_frame *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->names);
	free(f->blob);
}

/*
 * Directory @fd (its statx @stx), the current entry, on top of the
 * stack: its names read, and the farthest open ancestor closed if that
 * makes too many descriptors.  @fd is the frame's even on failure.
 */
static int push_frame(struct dir_source *ds, int fd, const struct statx *stx, size_t name_off)
{
	struct dir_frame *f;
	int err = array_reserve(ds->frames, ds->frames_alloc, ds->nr_frames + 1);

	if (err) {
		close(fd);
		return entry_error(ds, err, "cannot read directory");
	}
	f = &ds->frames[ds->nr_frames++];
	*f = (struct dir_frame){
		.fd = fd,
		.dev = makedev(stx->stx_dev_major, stx->stx_dev_minor),
		.ino = stx->stx_ino,
		.path_len = strlen(ds->path),
		.name_off = name_off,
	};
	ds->nr_open++;
	if (ds->nr_open > DIR_FDS_OPEN) {
		struct dir_frame *old = &ds->frames[ds->lowest_open++];

		close(old->fd);
		old->fd = -1;
		ds->nr_open--;
	}
	return read_names(ds, fd, f);
}

static bool same_dir(int fd, const struct dir_frame *f)
{
	struct statx stx;

	return statx_fd(fd, &stx) == 0 && S_ISDIR(stx.stx_mode) &&
	       makedev(stx.stx_dev_major, stx.stx_dev_minor) == f->dev && stx.stx_ino == f->ino;
}

/*
 * Frame @k, closed, opened again by its names from the root: the slow way,
 * for when ".." of its child is not it any more (renamed meanwhile).
 */
static int reopen_from_root(struct dir_source *ds, size_t k)
{
	int fd = ds->frames[0].fd;

	for (size_t j = 1; j <= k; j++) {
		const struct dir_frame *f = &ds->frames[j];
		size_t len = f->path_len - f->name_off;
		char name[NAME_MAX + 1];
		int next, err = -ENAMETOOLONG;

		if (len <= NAME_MAX) {
			memcpy(name, ds->path + f->name_off, len);
			name[len] = 0;
			next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			err = next < 0 ? -errno : 0;
		}
		if (fd != ds->frames[0].fd)
			close(fd);
		if (err)
			return err;
		fd = next;
	}
	if (!same_dir(fd, &ds->frames[k])) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Done with the top directory; its parent, if closed, opened again. */
static int pop_frame(struct dir_source *ds)
{
	struct dir_frame *top = &ds->frames[ds->nr_frames - 1];
	size_t k = ds->nr_frames - 2;
	int err = 0;

	if (ds->nr_frames >= 2 && ds->frames[k].fd < 0) {
		int fd = openat(top->fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0 && !same_dir(fd, &ds->frames[k])) {
			close(fd);
			fd = -1;
		}
		if (fd < 0)
			fd = reopen_from_root(ds, k);
		if (fd < 0) {
			ds->path[ds->frames[k].path_len] = 0;
			err = entry_error(ds, fd, "cannot reopen directory (moved while read?)");
		} else {
			ds->frames[k].fd = fd;
			ds->lowest_open--;
			ds->nr_open++;
		}
	}
	free_frame(top);
	ds->nr_frames--;
	ds->nr_open--;
	return err;
}

/* ds->path becomes the path of @name in directory @f; where the name starts in *@name_off. */
static int set_path(struct dir_source *ds, const struct dir_frame *f, const char *name,
		    size_t *name_off)
{
	size_t off = f->path_len ? f->path_len + 1 : 0, len = strlen(name);
	int err = array_reserve(ds->path, ds->path_alloc, off + len + 1);

	if (err)
		return tlog_error(err, "out of memory for path");
	if (off)
		ds->path[f->path_len] = '/';
	memcpy(ds->path + off, name, len + 1);
	*name_off = off;
	return 0;
}

/* ---- listing ---- */

static void end_file(struct dir_source *ds)
{
	if (ds->file_fd >= 0)
		close(ds->file_fd);
	ds->file_fd = -1;
}

static int list_root(struct dir_source *ds, struct tlog_src_entry *e)
{
	struct xattr_target t;
	struct statx stx;
	int fd, err;

	ds->started = true;
	fd = open(ds->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = open(ds->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return entry_error(ds, -errno, "cannot open directory");
	err = statx_fd(fd, &stx);
	if (err) {
		close(fd);
		return entry_error(ds, err, "cannot stat");
	}
	ds->lowest_open = 1;
	err = push_frame(ds, fd, &stx, 0);
	if (!err)
		err = fill_entry(ds, &stx, e);
	t = (struct xattr_target){ .fd = fd };
	if (!err && !ds->light)
		err = read_xattrs(ds, &t, e);
	return err;
}

/* Open @name in @dirfd without following it, and not as the atime's reader where allowed. */
static int open_entry(int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);

	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
	return fd;
}

static int list_dir(struct dir_source *ds, int dirfd, const char *name, size_t name_off,
		    struct tlog_src_entry *e)
{
	struct xattr_target t;
	struct statx stx;
	int fd = open_entry(dirfd, name, O_RDONLY | O_DIRECTORY);
	int err;

	if (fd < 0)
		return entry_error(ds, -errno, "cannot open directory");
	err = statx_fd(fd, &stx);
	if (err) {
		close(fd);
		return entry_error(ds, err, "cannot stat");
	}
	err = push_frame(ds, fd, &stx, name_off);
	if (!err)
		err = fill_entry(ds, &stx, e);
	t = (struct xattr_target){ .fd = fd };
	if (!err && !ds->light)
		err = read_xattrs(ds, &t, e);
	return err;
}

/* A regular file, opened: what it is now is what its entry says. */
static int list_file(struct dir_source *ds, int dirfd, const char *name,
		     struct tlog_src_entry *e)
{
	struct xattr_target t;
	struct statx stx;
	int fd = open_entry(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	int err;

	if (fd < 0)
		return entry_error(ds, -errno, "cannot open");
	ds->file_fd = fd;
	err = statx_fd(fd, &stx);
	if (err)
		return entry_error(ds, err, "cannot stat");
	if (!S_ISREG(stx.stx_mode))
		return entry_error(ds, -EAGAIN, "changed type while read");
	err = fill_entry(ds, &stx, e);
	if (err)
		return err;
	ds->file_size = e->size;
	ds->pos = 0;
	ds->seg_end = 0;
	t = (struct xattr_target){ .fd = fd };
	return read_xattrs(ds, &t, e);
}

static int read_target(struct dir_source *ds, int dirfd, const char *name, u64 size,
		       struct tlog_src_entry *e)
{
	size_t want = size < PATH_MAX ? (size_t)size + 1 : PATH_MAX;

	for (;;) {
		ssize_t len;
		int err = array_reserve(ds->target, ds->target_alloc, want);

		if (err)
			return entry_error(ds, err, "cannot read symlink");
		len = readlinkat(dirfd, name, ds->target, ds->target_alloc);
		if (len < 0)
			return entry_error(ds, -errno, "cannot read symlink");
		if ((size_t)len < ds->target_alloc) {
			ds->target[len] = 0;
			e->symlink = ds->target;
			return 0;
		}
		want = ds->target_alloc * 2;
	}
}

/* Entry @name of directory @f (ds->path set): 0, -ENOENT if gone since listed, or -errno. */
static int list_child(struct dir_source *ds, struct dir_frame *f, const char *name,
		      size_t name_off, struct tlog_src_entry *e)
{
	struct statx stx;
	int err;

	if (statx(f->fd, name, AT_SYMLINK_NOFOLLOW, STATX_WANT, &stx)) {
		if (errno == ENOENT)
			return -ENOENT;
		return entry_error(ds, -errno, "cannot stat");
	}
	if (S_ISDIR(stx.stx_mode))
		return list_dir(ds, f->fd, name, name_off, e);
	if (S_ISREG(stx.stx_mode) && !ds->light)
		return list_file(ds, f->fd, name, e);
	err = fill_entry(ds, &stx, e);
	if (err || ds->light)
		return err;
	if (S_ISLNK(stx.stx_mode)) {
		err = read_target(ds, f->fd, name, stx.stx_size, e);
		if (err)
			return err;
	}
	return read_xattrs_at(ds, f->fd, name, e);
}

/*
 * Preorder: a directory is pushed when it is listed, and its names are
 * taken from the top of the stack until none are left.  An entry removed
 * between the directory's read and its own stat is skipped (a tree that
 * changes under the walk is the caller's to avoid; the rest still copies).
 */
static int dir_next(struct tlog_source *src, struct tlog_src_entry *e)
{
	struct dir_source *ds = dir_of(src);

	end_file(ds);
	if (!ds->started)
		return list_root(ds, e);
	while (ds->nr_frames) {
		struct dir_frame *f = &ds->frames[ds->nr_frames - 1];
		size_t name_off = 0;
		const char *name;
		int err;

		if (f->next == f->nr) {
			err = pop_frame(ds);
			if (err)
				return err;
			continue;
		}
		name = f->names[f->next++];
		err = set_path(ds, f, name, &name_off);
		if (!err)
			err = list_child(ds, f, name, name_off, e);
		if (err == -ENOENT)
			continue;
		return err;
	}
	return 1;
}

/* ---- data ---- */

/* The next data segment at or after ds->pos: 0, or 1 when only holes are left. */
static int seek_segment(struct dir_source *ds)
{
	off_t data = lseek(ds->file_fd, (off_t)ds->pos, SEEK_DATA), hole;

	if (data < 0 && errno == ENXIO)
		return 1;
	if (data < 0)
		return entry_error(ds, -errno, "cannot seek to data");
	if ((u64)data >= ds->file_size)
		return 1;
	hole = lseek(ds->file_fd, data, SEEK_HOLE);
	if (hole < 0)
		return entry_error(ds, -errno, "cannot seek to hole");
	ds->pos = (u64)data;
	ds->seg_end = (u64)hole < ds->file_size ? (u64)hole : ds->file_size;
	if (ds->seg_end <= ds->pos)	/* changed between the two calls */
		ds->seg_end = ds->pos + 1;
	return 0;
}

static int dir_read_data(struct tlog_source *src, const void **buf, size_t *len, u64 *off)
{
	struct dir_source *ds = dir_of(src);
	size_t want, done = 0;
	u64 end;

	if (ds->file_fd < 0 || ds->pos >= ds->file_size)
		return 1;
	if (ds->pos >= ds->seg_end) {
		int ret = seek_segment(ds);

		if (ret) {
			ds->pos = ds->file_size;
			return ret;
		}
	}
	if (!ds->data) {
		ds->data = malloc(DATA_BLOCK);
		if (!ds->data)
			return entry_error(ds, -ENOMEM, "cannot read");
	}
	end = round_down(ds->pos, DATA_BLOCK) + DATA_BLOCK;
	if (end > ds->seg_end)
		end = ds->seg_end;
	want = (size_t)(end - ds->pos);
	while (done < want) {
		ssize_t n = pread(ds->file_fd, ds->data + done, want - done,
				  (off_t)(ds->pos + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return entry_error(ds, -errno, "cannot read");
		if (n == 0) {
			/* it shrank: zeros up to here, a hole after */
			memset(ds->data + done, 0, want - done);
			ds->seg_end = ds->file_size;
			end = ds->file_size;
			break;
		}
		done += (size_t)n;
	}
	*buf = ds->data;
	*len = want;
	*off = ds->pos;
	ds->pos = end;
	return 0;
}

static int dir_data_fd(struct tlog_source *src)
{
	return dir_of(src)->file_fd;
}

static void dir_close(struct tlog_source *src)
{
	struct dir_source *ds = dir_of(src);

	end_file(ds);
	while (ds->nr_frames)
		free_frame(&ds->frames[--ds->nr_frames]);
	free(ds->frames);
	free(ds->links.slots);
	free(ds->path);
	free(ds->target);
	free(ds->xnames);
	free(ds->xvalues);
	free(ds->xattrs);
	free(ds->xoffs);
	free(ds->data);
	free(ds->root);
	free(ds);
}

static const struct tlog_source_ops dir_ops = {
	.next = dir_next,
	.read_data = dir_read_data,
	.data_fd = dir_data_fd,
	.close = dir_close,
};

static int open_dir(const char *path, bool light, struct dir_source **ret)
{
	struct dir_source *ds = calloc(1, sizeof(*ds));
	struct stat st;
	int err = 0;

	if (!ds || !(ds->root = strdup(path)) || !(ds->path = calloc(1, 1))) {
		if (ds)
			free(ds->root);
		free(ds);
		return tlog_error(-ENOMEM, "out of memory");
	}
	ds->path_alloc = 1;
	ds->src.ops = &dir_ops;
	ds->src.name = ds->root;
	ds->light = light;
	ds->file_fd = -1;
	ds->proc_fd = stat("/proc/self/fd", &st) == 0;
	if (stat(path, &st))
		err = -errno;
	else if (!S_ISDIR(st.st_mode))
		err = -ENOTDIR;
	if (err) {
		dir_close(&ds->src);
		return tlog_error(err, "%s: %s", path, strerror(-err));
	}
	*ret = ds;
	return 0;
}

int tlog_source_open_dir(const char *path, struct tlog_source **ret)
{
	struct dir_source *ds;
	int err = open_dir(path, false, &ds);

	if (!err)
		*ret = &ds->src;
	return err;
}

int tlog_source_estimate_dir(const char *path, u64 *bytes)
{
	struct tlog_src_entry e;
	struct dir_source *ds;
	u64 sum = 0;
	int err = open_dir(path, true, &ds);

	if (err)
		return err;
	while ((err = dir_next(&ds->src, &e)) == 0) {
		sum += ENTRY_METADATA;
		if (ds->new_link)
			sum += ds->blocks * 512;
	}
	dir_close(&ds->src);
	if (err < 0)
		return err;
	*bytes = sum;
	return 0;
}

/* ---- either ---- */

int tlog_source_open(const char *path, struct tlog_source **ret)
{
	struct stat st;

	if (strcmp(path, "-") == 0)
		return tlog_source_open_archive(path, ret);
	if (stat(path, &st))
		return tlog_error(-errno, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return tlog_source_open_dir(path, ret);
	return tlog_source_open_archive(path, ret);
}

void tlog_source_close(struct tlog_source *src)
{
	if (src)
		src->ops->close(src);
}
