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
 * tlog_source_open_dir() walks in a thread of its own, ahead of the
 * caller, so that the source's system calls overlap the caller's work;
 * the caller sees exactly the entries, data and errors of a walk on its
 * own thread (see "read-ahead" below).
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
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

/*
 * Where the data of one regular file is read: its blocks come from @fd,
 * [@pos, @seg_end) being the rest of the data segment being read.
 */
struct data_reader {
	int fd;			/* -1: none */
	u64 size, pos, seg_end;
	char *data;		/* DATA_BLOCK bytes, allocated at the first read */
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

	struct data_reader file;	/* the regular file last listed */
};

static struct dir_source *dir_of(struct tlog_source *src)
{
	return (struct dir_source *)src;
}

/* ---- messages ---- */

/* Record "ROOT/PATH: WHAT: strerror" and return @err. */
static int path_error(const char *root, const char *path, int err, const char *what)
{
	return tlog_error(err, "%s%s%s: %s: %s", root, path[0] ? "/" : "", path, what,
			  strerror(-err));
}

/* The same, for the current entry. */
static int entry_error(struct dir_source *ds, int err, const char *what)
{
	return path_error(ds->root, ds->path, err, what);
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
	if (ds->file.fd >= 0)
		close(ds->file.fd);
	ds->file.fd = -1;
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
	ds->file.fd = fd;
	err = statx_fd(fd, &stx);
	if (err)
		return entry_error(ds, err, "cannot stat");
	if (!S_ISREG(stx.stx_mode))
		return entry_error(ds, -EAGAIN, "changed type while read");
	err = fill_entry(ds, &stx, e);
	if (err)
		return err;
	ds->file.size = e->size;
	ds->file.pos = 0;
	ds->file.seg_end = 0;
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

/*
 * The next data segment at or after r->pos: 0, or 1 when only holes are
 * left.  Errors name ROOT/PATH.
 */
static int seek_segment(struct data_reader *r, const char *root, const char *path)
{
	off_t data = lseek(r->fd, (off_t)r->pos, SEEK_DATA), hole;

	if (data < 0 && errno == ENXIO)
		return 1;
	if (data < 0)
		return path_error(root, path, -errno, "cannot seek to data");
	if ((u64)data >= r->size)
		return 1;
	hole = lseek(r->fd, data, SEEK_HOLE);
	if (hole < 0)
		return path_error(root, path, -errno, "cannot seek to hole");
	r->pos = (u64)data;
	r->seg_end = (u64)hole < r->size ? (u64)hole : r->size;
	if (r->seg_end <= r->pos)	/* changed between the two calls */
		r->seg_end = r->pos + 1;
	return 0;
}

/* The next block of @r, as read_data() of struct tlog_source_ops gives it. */
static int read_block(struct data_reader *r, const char *root, const char *path,
		      const void **buf, size_t *len, u64 *off)
{
	size_t want, done = 0;
	u64 end;

	if (r->fd < 0 || r->pos >= r->size)
		return 1;
	if (r->pos >= r->seg_end) {
		int ret = seek_segment(r, root, path);

		if (ret) {
			r->pos = r->size;
			return ret;
		}
	}
	if (!r->data) {
		r->data = malloc(DATA_BLOCK);
		if (!r->data)
			return path_error(root, path, -ENOMEM, "cannot read");
	}
	end = round_down(r->pos, DATA_BLOCK) + DATA_BLOCK;
	if (end > r->seg_end)
		end = r->seg_end;
	want = (size_t)(end - r->pos);
	while (done < want) {
		ssize_t n = pread(r->fd, r->data + done, want - done, (off_t)(r->pos + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return path_error(root, path, -errno, "cannot read");
		if (n == 0) {
			/* it shrank: zeros up to here, a hole after */
			memset(r->data + done, 0, want - done);
			r->seg_end = r->size;
			end = r->size;
			break;
		}
		done += (size_t)n;
	}
	*buf = r->data;
	*len = want;
	*off = r->pos;
	r->pos = end;
	return 0;
}

static int dir_read_data(struct tlog_source *src, const void **buf, size_t *len, u64 *off)
{
	struct dir_source *ds = dir_of(src);

	return read_block(&ds->file, ds->root, ds->path, buf, len, off);
}

static int dir_data_fd(struct tlog_source *src)
{
	return dir_of(src)->file.fd;
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
	free(ds->file.data);
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
	ds->file.fd = -1;
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

/* ---- read-ahead ---- */

/*
 * The walk runs ahead in a thread of its own, so that the source's
 * system calls (statx, open, SEEK_DATA/read, xattrs, getdents, close)
 * overlap the building of the trees on the caller's thread.  The worker
 * calls dir_next() exactly as the caller would and copies each entry into
 * a slot of a ring: its path, symlink target, xattrs, and for a regular
 * file of at most RA_SMALL bytes its data blocks (as read_block gives
 * them, holes left out) or the error that cut them short.  The caller
 * takes the slots in order, so entries, blocks and errors come exactly
 * as without the worker, at the same point and with the same message
 * (the error context is per thread: the worker copies the message into
 * the slot and the caller records it again).
 *
 * A regular file's slot keeps its descriptor open, for data_fd() and for
 * the data of a larger file, read on the caller's thread as before.  The
 * caller passes descriptors it is done with back to the worker to close.
 *
 * Bounds (invariant, under @lock): head - released <= RA_SLOTS slots in
 * use; no slot is filled while @bytes >= RA_BYTES or @fds >= @fd_max
 * (@fds counts descriptors in slots in use and in @closing).  The slot
 * the caller has (the last taken) stays in use until its next call of
 * next() or close().  Neither side waits on the other for long: the
 * worker wakes a waiting caller at the end, before it waits itself and
 * every RA_BATCH entries; the caller wakes a waiting worker when the
 * queue is at half and before it waits itself, when the queue is empty
 * (and nothing bounds the worker then).
 *
 * TLOG_ROOTDIR_NO_READAHEAD=1 in the environment walks on the caller's
 * thread as before (for tests comparing the two, and those that change
 * the tree between calls).
 */
#define RA_SLOTS	1024
#define RA_BYTES	(64U << 20)
#define RA_SMALL	(256U << 10)
#define RA_FDS		256
/*
 * A thread switch costs more than an entry: a caller that has caught up
 * waits for RA_BATCH entries (or the end) before it is woken, and a
 * worker that filled the queue waits for it to drain to half.
 */
#define RA_BATCH	64
/*
 * A slot's buffer larger than this is freed when the slot is reused: what
 * all slots keep between entries stays under RA_SLOTS * RA_KEEP.
 */
#define RA_KEEP		(64U << 10)

struct ra_block {
	u64 off;
	size_t len, at;		/* at: where in the slot's @buf */
};

struct ra_slot {
	struct tlog_src_entry e;	/* pointers into @buf and @xattrs once filled */
	int ret;			/* of next(): 0, 1 (the end) or -errno */
	char *msg;			/* the reason of ret < 0 */
	int fd;				/* a regular file's, or -1 */
	bool preread;			/* the data is in @blocks (then @data_err) */
	int data_err;			/* 0, or the error read_data gives after the blocks */
	char *data_msg;
	char *buf;			/* path, target, xattr names and values, data */
	size_t used, alloc;
	struct tlog_src_xattr *xattrs;
	size_t xattrs_alloc;
	struct ra_block *blocks;
	size_t nr_blocks, blocks_alloc;
};

struct ra_source {
	struct tlog_source src;
	struct dir_source *ds;		/* the worker's walk */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t ready;		/* a slot was filled */
	pthread_cond_t room;		/* a slot or descriptor was given back, or stop */
	struct ra_slot *slots;
	size_t head, tail, released;	/* filled, taken, given back: released <= tail <= head */
	size_t bytes, fds, fd_max;
	int *closing;			/* descriptors given back, for the worker to close */
	size_t nr_closing;
	bool stop;
	bool worker_waits, caller_waits;	/* in pthread_cond_wait */
	bool thread_started;
	int *worker_closing;		/* the worker's copy of @closing, while it closes them */

	/* the caller's side */
	struct ra_slot *cur;		/* the slot of the entry last taken */
	size_t next_block;
	struct data_reader rd;		/* a larger file's data */
};

static struct ra_source *ra_of(struct tlog_source *src)
{
	return (struct ra_source *)src;
}

/* A copy of @len bytes at @p into @s's buffer; where in *@at. */
static int slot_put(struct ra_slot *s, const void *p, size_t len, size_t *at)
{
	int err = array_reserve(s->buf, s->alloc, s->used + len);

	if (err)
		return err;
	memcpy(s->buf + s->used, p, len);
	*at = s->used;
	s->used += len;
	return 0;
}

static int slot_put_str(struct ra_slot *s, const char *str, size_t *at)
{
	return slot_put(s, str, strlen(str) + 1, at);
}

/* @s emptied for a new entry (its descriptor already given back). */
static void slot_reset(struct ra_slot *s)
{
	free(s->msg);
	free(s->data_msg);
	s->msg = s->data_msg = NULL;
	s->ret = s->data_err = 0;
	s->fd = -1;
	s->preread = false;
	s->used = 0;
	s->nr_blocks = 0;
	if (s->alloc > RA_KEEP) {
		free(s->buf);
		s->buf = NULL;
		s->alloc = 0;
	}
}

static void slot_free(struct ra_slot *s)
{
	slot_reset(s);
	free(s->buf);
	free(s->xattrs);
	free(s->blocks);
}

/* The error recorded on this thread, copied; NULL if there is none or no memory. */
static char *error_copy(void)
{
	const char *msg = tlog_error_get();

	return msg ? strdup(msg) : NULL;
}

/* Every data block of the file the walk is on, into @s (a read error ends them). */
static int slot_read_data(struct ra_source *ra, struct ra_slot *s)
{
	const void *buf;
	size_t len;
	u64 off;
	int ret;

	s->preread = true;
	ret = array_reserve(s->buf, s->alloc, s->used + ra->ds->file.size);
	if (ret)
		return ret;
	while ((ret = dir_read_data(&ra->ds->src, &buf, &len, &off)) == 0) {
		struct ra_block *b;
		int err = array_reserve(s->blocks, s->blocks_alloc, s->nr_blocks + 1);

		if (err)
			return err;
		b = &s->blocks[s->nr_blocks];
		err = slot_put(s, buf, len, &b->at);
		if (err)
			return err;
		b->off = off;
		b->len = len;
		s->nr_blocks++;
	}
	if (ret < 0) {
		s->data_err = ret;
		s->data_msg = error_copy();
	}
	return 0;
}

/* Entry @e the walk gave, copied into @s with everything it points to. */
static int slot_fill(struct ra_source *ra, struct ra_slot *s, const struct tlog_src_entry *e)
{
	size_t path_at, target_at = 0, *name_at = NULL, *value_at = NULL;
	int err;

	s->e = *e;
	if (e->nr_xattrs) {
		name_at = malloc(2 * e->nr_xattrs * sizeof(*name_at));
		if (!name_at)
			return -ENOMEM;
		value_at = name_at + e->nr_xattrs;
	}
	err = slot_put_str(s, e->path, &path_at);
	if (!err && e->symlink)
		err = slot_put_str(s, e->symlink, &target_at);
	for (size_t i = 0; !err && i < e->nr_xattrs; i++) {
		err = slot_put_str(s, e->xattrs[i].name, &name_at[i]);
		if (!err)
			err = slot_put(s, e->xattrs[i].value, e->xattrs[i].size, &value_at[i]);
	}
	if (!err)
		err = array_reserve(s->xattrs, s->xattrs_alloc, e->nr_xattrs);
	if (!err && S_ISREG(e->mode)) {
		if (e->size <= RA_SMALL)
			err = slot_read_data(ra, s);
		s->fd = ra->ds->file.fd;
		ra->ds->file.fd = -1;
	}
	if (!err) {
		/* @buf moves no more */
		s->e.path = s->buf + path_at;
		if (e->symlink)
			s->e.symlink = s->buf + target_at;
		for (size_t i = 0; i < e->nr_xattrs; i++)
			s->xattrs[i] = (struct tlog_src_xattr){
				.name = s->buf + name_at[i],
				.value = s->buf + value_at[i],
				.size = e->xattrs[i].size,
			};
		s->e.xattrs = e->nr_xattrs ? s->xattrs : NULL;
	}
	free(name_at);
	return err;
}

/*
 * Wait until a slot may be filled, closing what the caller gave back
 * meanwhile: true, or false when the worker is to stop.
 */
static bool ra_wait_room(struct ra_source *ra, int *closing)
{
	bool go;

	pthread_mutex_lock(&ra->lock);
	for (;;) {
		size_t n = ra->nr_closing;

		if (ra->stop)
			break;
		if (n >= RA_BATCH || (n && ra->fds >= ra->fd_max)) {
			memcpy(closing, ra->closing, n * sizeof(*closing));
			ra->nr_closing = 0;
			pthread_mutex_unlock(&ra->lock);
			for (size_t i = 0; i < n; i++)
				close(closing[i]);
			pthread_mutex_lock(&ra->lock);
			ra->fds -= n;
			continue;
		}
		if (ra->head - ra->released < RA_SLOTS && ra->bytes < RA_BYTES &&
		    ra->fds < ra->fd_max)
			break;
		if (ra->caller_waits)
			pthread_cond_signal(&ra->ready);
		ra->worker_waits = true;
		pthread_cond_wait(&ra->room, &ra->lock);
		ra->worker_waits = false;
	}
	go = !ra->stop;
	pthread_mutex_unlock(&ra->lock);
	return go;
}

/* The worker: the walk, one slot per entry, up to the end or the first error. */
static void *ra_worker(void *arg)
{
	struct ra_source *ra = arg;
	int ret = 0;

	while (ret == 0) {
		struct ra_slot *s = &ra->slots[ra->head % RA_SLOTS];
		struct tlog_src_entry e;

		if (!ra_wait_room(ra, ra->worker_closing))
			break;
		slot_reset(s);
		tlog_error_clear();
		ret = dir_next(&ra->ds->src, &e);
		if (ret == 0) {
			int err = slot_fill(ra, s, &e);

			if (err)
				ret = entry_error(ra->ds, err, "cannot queue");
		}
		if (ret) {
			s->ret = ret;
			s->msg = ret < 0 ? error_copy() : NULL;
		}
		pthread_mutex_lock(&ra->lock);
		ra->head++;
		ra->bytes += s->used;
		ra->fds += s->fd >= 0;
		if (ra->caller_waits && (ra->head - ra->tail >= RA_BATCH || ret))
			pthread_cond_signal(&ra->ready);
		pthread_mutex_unlock(&ra->lock);
	}
	return NULL;
}

/*
 * Under @lock, on the caller's side: wake a waiting worker if the queue
 * drained to half, or @now.
 */
static void ra_wake_worker(struct ra_source *ra, bool now)
{
	if (!ra->worker_waits)
		return;
	if (now || (ra->head - ra->released <= RA_SLOTS / 2 && ra->bytes <= RA_BYTES / 2 &&
		    ra->fds - ra->nr_closing <= ra->fd_max / 2))
		pthread_cond_signal(&ra->room);
}

/* The caller is done with its slot: its data no longer counts, its descriptor goes back. */
static void ra_release(struct ra_source *ra)
{
	struct ra_slot *s = ra->cur;

	if (!s)
		return;
	ra->cur = NULL;
	ra->rd.fd = -1;
	pthread_mutex_lock(&ra->lock);
	ra->released++;
	ra->bytes -= s->used;
	if (s->fd >= 0)
		ra->closing[ra->nr_closing++] = s->fd;
	s->fd = -1;
	ra_wake_worker(ra, false);
	pthread_mutex_unlock(&ra->lock);
}

static int ra_next(struct tlog_source *src, struct tlog_src_entry *e)
{
	struct ra_source *ra = ra_of(src);
	struct ra_slot *s;

	ra_release(ra);
	pthread_mutex_lock(&ra->lock);
	if (ra->tail == ra->head)
		ra_wake_worker(ra, true);
	while (ra->tail == ra->head) {
		ra->caller_waits = true;
		pthread_cond_wait(&ra->ready, &ra->lock);
		ra->caller_waits = false;
	}
	s = &ra->slots[ra->tail % RA_SLOTS];
	/* the last slot (the end or an error) stays, for every later call */
	if (!s->ret)
		ra->tail++;
	pthread_mutex_unlock(&ra->lock);
	if (s->ret < 0)
		return tlog_error(s->ret, "%s", s->msg ? s->msg : strerror(-s->ret));
	if (s->ret)
		return 1;
	ra->cur = s;
	ra->next_block = 0;
	ra->rd = (struct data_reader){ .fd = s->fd, .size = s->e.size, .data = ra->rd.data };
	*e = s->e;
	return 0;
}

static int ra_read_data(struct tlog_source *src, const void **buf, size_t *len, u64 *off)
{
	struct ra_source *ra = ra_of(src);
	struct ra_slot *s = ra->cur;
	struct ra_block *b;

	if (!s)
		return 1;
	if (!s->preread)
		return read_block(&ra->rd, ra->ds->root, s->e.path, buf, len, off);
	if (ra->next_block == s->nr_blocks) {
		if (!s->data_err)
			return 1;
		return tlog_error(s->data_err, "%s",
				  s->data_msg ? s->data_msg : strerror(-s->data_err));
	}
	b = &s->blocks[ra->next_block++];
	*buf = s->buf + b->at;
	*len = b->len;
	*off = b->off;
	return 0;
}

static int ra_data_fd(struct tlog_source *src)
{
	struct ra_source *ra = ra_of(src);

	return ra->cur ? ra->cur->fd : -1;
}

/* Stop the worker wherever it is, and free everything (also from ra_open halfway). */
static void ra_close(struct tlog_source *src)
{
	struct ra_source *ra = ra_of(src);

	if (ra->thread_started) {
		pthread_mutex_lock(&ra->lock);
		ra->stop = true;
		pthread_cond_broadcast(&ra->room);
		pthread_mutex_unlock(&ra->lock);
		pthread_join(ra->thread, NULL);
	}
	for (size_t i = ra->released; i < ra->head; i++) {
		struct ra_slot *s = &ra->slots[i % RA_SLOTS];

		if (s->fd >= 0)
			close(s->fd);
		s->fd = -1;
	}
	for (size_t i = 0; i < ra->nr_closing; i++)
		close(ra->closing[i]);
	for (size_t i = 0; ra->slots && i < RA_SLOTS; i++)
		slot_free(&ra->slots[i]);
	free(ra->slots);
	free(ra->closing);
	free(ra->worker_closing);
	free(ra->rd.data);
	pthread_cond_destroy(&ra->room);
	pthread_cond_destroy(&ra->ready);
	pthread_mutex_destroy(&ra->lock);
	if (ra->ds)
		dir_close(&ra->ds->src);
	free(ra);
}

static const struct tlog_source_ops ra_ops = {
	.next = ra_next,
	.read_data = ra_read_data,
	.data_fd = ra_data_fd,
	.close = ra_close,
};

/* Descriptors the queue may hold: a share of what the process may open beside the walk's. */
static size_t ra_fd_max(void)
{
	struct rlimit rl;
	rlim_t room;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return RA_FDS;
	if (rl.rlim_cur <= DIR_FDS_OPEN + 32)
		return 1;
	room = (rl.rlim_cur - DIR_FDS_OPEN - 32) / 2;
	return room < RA_FDS ? (size_t)room : RA_FDS;
}

static bool readahead_wanted(void)
{
	const char *v = getenv("TLOG_ROOTDIR_NO_READAHEAD");

	return !v || !v[0] || !strcmp(v, "0");
}

/*
 * @ds behind a read-ahead worker: 0 and *@ret, or 1 when no thread or
 * memory for it can be had (the caller walks on its own thread then,
 * with @ds as it was).
 */
static int ra_open(struct dir_source *ds, struct tlog_source **ret)
{
	struct ra_source *ra = calloc(1, sizeof(*ra));

	if (!ra)
		return 1;
	ra->src = (struct tlog_source){
		.ops = &ra_ops,
		.name = ds->root,
		.estimated_bytes = ds->src.estimated_bytes,
	};
	ra->ds = ds;
	ra->fd_max = ra_fd_max();
	ra->rd.fd = -1;
	pthread_mutex_init(&ra->lock, NULL);
	pthread_cond_init(&ra->ready, NULL);
	pthread_cond_init(&ra->room, NULL);
	ra->slots = calloc(RA_SLOTS, sizeof(*ra->slots));
	ra->closing = calloc(ra->fd_max, sizeof(*ra->closing));
	ra->worker_closing = calloc(ra->fd_max, sizeof(*ra->worker_closing));
	for (size_t i = 0; ra->slots && i < RA_SLOTS; i++)
		ra->slots[i].fd = -1;
	if (!ra->slots || !ra->closing || !ra->worker_closing ||
	    pthread_create(&ra->thread, NULL, ra_worker, ra)) {
		ra->ds = NULL;
		ra_close(&ra->src);
		return 1;
	}
	ra->thread_started = true;
	*ret = &ra->src;
	return 0;
}

int tlog_source_open_dir(const char *path, struct tlog_source **ret)
{
	struct dir_source *ds;
	int err = open_dir(path, false, &ds);

	if (err)
		return err;
	if (!readahead_wanted() || ra_open(ds, ret))
		*ret = &ds->src;
	return 0;
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
