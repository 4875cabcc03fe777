// SPDX-License-Identifier: GPL-2.0-only
/*
 * The populator of mkfs --rootdir: the entries of a source (rootdir.h)
 * made, one after the other, through the inode operations of a mount,
 * as a copying program would make them on a mounted btrfs.
 *
 * Why the work is ordered as it is: the operations have the kernel's side
 * effects, so what the source says must be applied after whatever would
 * undo it.  For each entry: create (the inode number is the next of its
 * subvolume: entry order), inode flags (before any data, as FS_IOC_SETFLAGS
 * wants), data (written back when the file is done), chown (which clears
 * setuid/setgid), chmod (the full mode), xattrs (a write or a chown would
 * remove security.capability), and the times last, set straight in the
 * in-memory inode item (ctime and otime included, which no system call
 * sets).  Adding or removing a name changes the times of the directory
 * and, for a hard link, the ctime of the inode: each such operation keeps
 * and puts back the times it would change, so the times already applied
 * stay, and those of a directory whose entry comes later are applied then.
 *
 * Invariants:
 *  - every directory made or met is in the directory cache (path -> inode,
 *    holding one reference) so that a parent is found with one hash lookup,
 *    never by walking from the root;
 *  - other inodes are dropped from the mount's cache (tlog_iforget) when
 *    their entry is done, so memory grows with the directories only; the
 *    hard links still expected are kept as (root, inode number) in the link
 *    map, whose entry goes when all the names it announced are seen;
 *  - nothing is committed per entry: the transaction is committed when its
 *    dirty tree blocks grow past DIRTY_COMMIT_BYTES, and at the end.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#include "errctx.h"
#include "inode-ops.h"
#include "inode.h"
#include "root-tree.h"
#include "rootdir.h"
#include "array.h"

/* Write a large file back every so many bytes, so its dirty data stays bounded. */
#define WRITEBACK_BYTES		(16ULL << 20)
/* Commit when the running transaction holds this much in dirty tree blocks. */
#define DIRTY_COMMIT_BYTES	(256ULL << 20)
/* How many entries between two counts of the dirty tree blocks. */
#define DIRTY_CHECK_ENTRIES	4096

/* ---- the directory cache: directory path -> inode ---- */

struct dir_slot {
	char *path;		/* NULL: free */
	size_t len;
	u64 hash;
	struct tlog_inode *inode;	/* a reference the cache holds */
};

/* ---- the link map: a directory source's link_id -> the inode in each subvolume ---- */

struct link_copy {
	struct btrfs_root *root;
	u64 ino;
};

struct link_slot {
	u64 id;			/* 0: free */
	bool dead;		/* a removed entry, which a probe must pass over */
	u32 nlink, seen;
	struct link_copy *copies;
	size_t nr_copies;
};

struct populate {
	struct tlog_mount *mnt;
	struct tlog_source *src;
	const struct tlog_rootdir_opts *opts;
	struct tlog_rootdir_stats *stats;
	struct tlog_inode *top;
	struct dir_slot *dirs;
	size_t dirs_cap, nr_dirs;
	struct link_slot *links;
	size_t links_cap, links_used;	/* used: live and dead slots */
	/* per option entry: met in the source; for subvolumes, the root made */
	bool *subvol_seen, *iflags_seen;
	struct btrfs_root **subvol_roots;
	size_t pos_alloc, hash_alloc;
	size_t *prefix_pos;		/* scratch: where each prefix of a path ends */
	u64 *prefix_hash;		/* and its hash */
	u64 cloned_base;
	unsigned int since_check;
};

/* FNV-1a, extended byte by byte so the hash of every prefix comes in one pass. */
#define HASH_INIT	0xcbf29ce484222325ULL

static inline u64 hash_step(u64 h, u8 c)
{
	return (h ^ c) * 0x100000001b3ULL;
}

static u64 hash_bytes(const char *s, size_t len)
{
	u64 h = HASH_INIT;

	for (size_t i = 0; i < len; i++)
		h = hash_step(h, (u8)s[i]);
	return h;
}

static struct dir_slot *dir_find(struct populate *p, const char *path, size_t len, u64 hash)
{
	if (!p->dirs_cap)
		return NULL;
	for (size_t i = hash & (p->dirs_cap - 1);; i = (i + 1) & (p->dirs_cap - 1)) {
		struct dir_slot *s = &p->dirs[i];

		if (!s->path)
			return NULL;
		if (s->hash == hash && s->len == len && !memcmp(s->path, path, len))
			return s;
	}
}

static int dirs_grow(struct populate *p)
{
	size_t cap = p->dirs_cap ? p->dirs_cap * 2 : 1024;
	struct dir_slot *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->dirs_cap; i++) {
		struct dir_slot *s = &p->dirs[i];
		size_t j = s->hash & (cap - 1);

		if (!s->path)
			continue;
		while (v[j].path)
			j = (j + 1) & (cap - 1);
		v[j] = *s;
	}
	free(p->dirs);
	p->dirs = v;
	p->dirs_cap = cap;
	return 0;
}

/* Remember directory @path -> @inode; the cache takes over the caller's reference. */
static int dir_insert(struct populate *p, const char *path, size_t len, struct tlog_inode *inode)
{
	u64 hash = hash_bytes(path, len);
	struct dir_slot *s = dir_find(p, path, len, hash);
	size_t i;

	if (s) {
		tlog_iput(p->mnt, s->inode);
		s->inode = inode;
		return 0;
	}
	if ((p->nr_dirs + 1) * 2 > p->dirs_cap && dirs_grow(p))
		goto nomem;
	i = hash & (p->dirs_cap - 1);
	while (p->dirs[i].path)
		i = (i + 1) & (p->dirs_cap - 1);
	p->dirs[i].path = malloc(len + 1);
	if (!p->dirs[i].path)
		goto nomem;
	memcpy(p->dirs[i].path, path, len);
	p->dirs[i].path[len] = '\0';
	p->dirs[i].len = len;
	p->dirs[i].hash = hash;
	p->dirs[i].inode = inode;
	p->nr_dirs++;
	return 0;
nomem:
	tlog_iput(p->mnt, inode);
	return -ENOMEM;
}

static struct link_slot *link_find(struct populate *p, u64 id)
{
	if (!p->links_cap)
		return NULL;
	for (size_t i = (id * 0x9e3779b97f4a7c15ULL) & (p->links_cap - 1);;
	     i = (i + 1) & (p->links_cap - 1)) {
		struct link_slot *s = &p->links[i];

		if (!s->id && !s->dead)
			return NULL;
		if (s->id == id)
			return s;
	}
}

/* A free slot for @id, the table grown (and cleaned of dead slots) when half full. */
static int link_new(struct populate *p, u64 id, struct link_slot **ret)
{
	size_t i;

	if ((p->links_used + 1) * 2 > p->links_cap) {
		size_t cap = p->links_cap ? p->links_cap * 2 : 256;
		struct link_slot *v = calloc(cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->links_used = 0;
		for (size_t k = 0; k < p->links_cap; k++) {
			struct link_slot *s = &p->links[k];
			size_t j;

			if (!s->id)
				continue;
			j = (s->id * 0x9e3779b97f4a7c15ULL) & (cap - 1);
			while (v[j].id)
				j = (j + 1) & (cap - 1);
			v[j] = *s;
			p->links_used++;
		}
		free(p->links);
		p->links = v;
		p->links_cap = cap;
	}
	i = (id * 0x9e3779b97f4a7c15ULL) & (p->links_cap - 1);
	while (p->links[i].id)
		i = (i + 1) & (p->links_cap - 1);
	if (!p->links[i].dead)
		p->links_used++;
	memset(&p->links[i], 0, sizeof(p->links[i]));
	p->links[i].id = id;
	*ret = &p->links[i];
	return 0;
}

static void link_remove(struct link_slot *s)
{
	free(s->copies);
	memset(s, 0, sizeof(*s));
	s->dead = true;
}

static int link_add_copy(struct link_slot *s, struct tlog_inode *inode)
{
	struct link_copy *v = realloc(s->copies, (s->nr_copies + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	s->copies = v;
	v[s->nr_copies++] = (struct link_copy){ inode->root, inode->ino };
	return 0;
}

/* ---- names and paths ---- */

static bool is_dir_inode(const struct tlog_inode *inode)
{
	return S_ISDIR(tlog_inode_mode(inode));
}

/* Each component 1..255 bytes, not "." or "..", no slash at either end. */
static int check_path(const char *path)
{
	const char *c = path;

	for (;;) {
		const char *end = strchrnul(c, '/');
		size_t len = (size_t)(end - c);

		bool dots = (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.');

		if (len == 0 || dots)
			return tlog_error(-EINVAL, "%s: bad path (an empty, \".\" or \"..\" name)",
					  path);
		if (len > BTRFS_NAME_LEN)
			return tlog_error(-ENAMETOOLONG, "%s: a name is longer than %d bytes", path,
					  BTRFS_NAME_LEN);
		if (!*end)
			return 0;
		c = end + 1;
	}
}

/* The index of @path among the --subvol options, or -1. */
static ssize_t find_subvol(const struct tlog_rootdir_opts *o, const char *path, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(o->subvols[i].path, path))
			return (ssize_t)i;
	return -1;
}

/* The index of @path among the --inode-flags options, or -1. */
static ssize_t find_iflags(const struct tlog_rootdir_opts *o, const char *path)
{
	for (size_t i = 0; i < o->nr_iflags; i++)
		if (!strcmp(o->iflags[i].path, path))
			return (ssize_t)i;
	return -1;
}

/*
 * @err for the entry @path: its reason when one was recorded ("PATH:
 * reason"), else what @err says.  An operation's answer (ENOSPC from a
 * write, ENOENT) is returned without a context of its own.
 */
static int path_error(int err, const char *path)
{
	if (!tlog_error_get())
		return tlog_error(err, "%s: %s", path, strerror(-err));
	return tlog_error_wrap(err, path);
}

/* ---- times ---- */

static void clamp_time(const struct populate *p, struct btrfs_timespec *dst,
		       const struct timespec *ts)
{
	u64 sec = (u64)ts->tv_sec;
	u32 nsec = ts->tv_nsec < 0 ? 0 : ts->tv_nsec > 999999999 ? 999999999 : (u32)ts->tv_nsec;

	/* later than the epoch by a nanosecond is later (a time has two fields) */
	if (p->opts->clamp_times && ts->tv_sec >= 0 &&
	    (sec > p->opts->clamp_sec || (sec == p->opts->clamp_sec && nsec))) {
		sec = p->opts->clamp_sec;
		nsec = 0;
	}
	btrfs_set_timespec_sec(dst, sec);
	btrfs_set_timespec_nsec(dst, nsec);
}

/* All four times of @e in @inode's item, directly: utimes would set ctime to now. */
static void set_times(struct populate *p, struct tlog_inode *inode, const struct tlog_src_entry *e)
{
	/*
	 * Reading a symlink moves its atime (O_NOATIME does not reach
	 * readlink), so the next run over the same tree would see another:
	 * a reproducible build takes its mtime instead.
	 */
	bool unstable_atime = p->opts->clamp_times && S_ISLNK(e->mode);

	clamp_time(p, &inode->item.atime, unstable_atime ? &e->mtime : &e->atime);
	clamp_time(p, &inode->item.mtime, &e->mtime);
	clamp_time(p, &inode->item.ctime, &e->ctime);
	clamp_time(p, &inode->item.otime, e->has_btime ? &e->btime : &e->mtime);
	tlog_inode_mark_dirty(p->mnt, inode);
}

/* The times a name operation changes, kept to be put back (see the top comment). */
struct saved_times {
	struct btrfs_timespec dir_mtime, dir_ctime, inode_ctime;
};

static void save_times(struct saved_times *t, const struct tlog_inode *dir,
		       const struct tlog_inode *inode)
{
	t->dir_mtime = dir->item.mtime;
	t->dir_ctime = dir->item.ctime;
	if (inode)
		t->inode_ctime = inode->item.ctime;
}

static void restore_times(struct populate *p, const struct saved_times *t,
			  struct tlog_inode *dir, struct tlog_inode *inode)
{
	dir->item.mtime = t->dir_mtime;
	dir->item.ctime = t->dir_ctime;
	tlog_inode_mark_dirty(p->mnt, dir);
	if (inode) {
		inode->item.ctime = t->inode_ctime;
		tlog_inode_mark_dirty(p->mnt, inode);
	}
}

/* ---- metadata ---- */

/* Owner, mode, xattrs, times: in the order that keeps each (see the top comment). */
static int apply_meta(struct populate *p, struct tlog_inode *inode, const struct tlog_src_entry *e)
{
	u32 uid = p->opts->set_owner ? p->opts->uid : e->uid;
	u32 gid = p->opts->set_owner ? p->opts->gid : e->gid;
	u32 mode = tlog_inode_mode(inode);
	int err = 0;

	if (uid != btrfs_inode_item_uid(&inode->item) || gid != btrfs_inode_item_gid(&inode->item))
		err = tlog_chown(p->mnt, inode, uid, gid);
	/* a symlink's mode is 0777 whatever the source says, as on Linux */
	if (!err && !S_ISLNK(mode) && (tlog_inode_mode(inode) & 07777) != (e->mode & 07777))
		err = tlog_chmod(p->mnt, inode, e->mode & 07777);
	if (err)
		return path_error(err, e->path[0] ? e->path : "/");
	for (size_t i = 0; i < e->nr_xattrs; i++) {
		const struct tlog_src_xattr *x = &e->xattrs[i];

		err = tlog_setxattr(p->mnt, inode, x->name, x->value, x->size, 0);
		if (err) {
			tlog_error(err, "%s: xattr %s: %s", e->path[0] ? e->path : "/", x->name,
				   strerror(-err));
			return err;
		}
		p->stats->xattrs++;
	}
	set_times(p, inode, e);
	return 0;
}

/* The --inode-flags of @path, if any, on @inode (just made: nothing written yet). */
static int apply_iflags(struct populate *p, struct tlog_inode *inode, const char *path)
{
	ssize_t i = find_iflags(p->opts, path);
	int err;

	if (i < 0)
		return 0;
	p->iflags_seen[i] = true;
	/*
	 * FS_IOC_SETFLAGS: NODATACOW brings NODATASUM on a regular file; on a
	 * directory it is what its new inodes inherit (tlog_create does, as
	 * btrfs_inherit_iflags), while NODATASUM stays the directory's own,
	 * as mkfs.btrfs and the kernel have it.
	 */
	err = tlog_set_inode_flags(p->mnt, inode, p->opts->iflags[i].flags, 0);
	if (err)
		tlog_error(err, "%s: inode flags: %s", path[0] ? path : "/", strerror(-err));
	return err;
}

/* ---- making names ---- */

/* What a name is made as: a new inode (tlog_create's arguments), or a link. */
struct make_args {
	u32 mode;
	u64 rdev;
	const char *target;
	struct tlog_inode *link;	/* a new name of this inode instead */
};

static int make_once(struct populate *p, struct tlog_inode *dir, const char *name, u16 len,
		     const struct make_args *a, struct tlog_inode **ret)
{
	struct saved_times t;
	int err;

	save_times(&t, dir, a->link);
	if (a->link) {
		err = tlog_link(p->mnt, a->link, dir, name, len);
		if (!err)
			err = tlog_iget(p->mnt, a->link->root, a->link->ino, ret);
	} else {
		err = tlog_create(p->mnt, dir, name, len, a->mode, a->rdev, a->target, ret);
	}
	if (!err)
		restore_times(p, &t, dir, a->link);
	return err;
}

/*
 * @name in @dir made as @a says, the times of the directory (and of a
 * linked inode) kept; an existing non-directory is replaced (unlinked
 * first, as tar extracts), an existing directory given back in *@existing
 * (with a reference) when a directory was asked for, for the caller to
 * update.  *@ret gets a reference to what was made.
 */
static int make_name(struct populate *p, struct tlog_inode *dir, const char *path,
		     const char *name, u16 len, const struct make_args *a,
		     struct tlog_inode **ret, struct tlog_inode **existing)
{
	struct tlog_inode *old;
	struct saved_times t;
	int err;

	*existing = NULL;
	err = make_once(p, dir, name, len, a, ret);
	if (err != -EEXIST)
		goto out;
	err = tlog_lookup(p->mnt, dir, name, len, &old);
	if (err)
		goto out;
	if (a->link == old) {			/* the same link again */
		*ret = old;
		return 0;
	}
	if (is_dir_inode(old)) {
		if (S_ISDIR(a->mode) && !a->link) {
			*existing = old;
			return 0;
		}
		tlog_iput(p->mnt, old);
		return tlog_error(-EEXIST, "%s: a directory is in the way", path);
	}
	tlog_iput(p->mnt, old);
	/* a later entry for the same path replaces the earlier, as tar extracts */
	save_times(&t, dir, NULL);
	err = tlog_unlink(p->mnt, dir, name, len, false);
	if (!err)
		restore_times(p, &t, dir, NULL);
	if (!err)
		err = make_once(p, dir, name, len, a, ret);
out:
	if (err)
		path_error(err, path);
	return err;
}

/*
 * A directory @path (@plen bytes) called @name in @parent: a subvolume
 * when the options list it.  *@ret gets a reference.
 */
static int make_dir(struct populate *p, struct tlog_inode *parent, const char *path, size_t plen,
		    const char *name, u16 len, u32 mode, struct tlog_inode **ret,
		    struct tlog_inode **existing)
{
	const struct tlog_rootdir_opts *o = p->opts;
	struct make_args a = { .mode = S_IFDIR | (mode & 0777) };
	char *copy;
	ssize_t sv;
	int err;

	copy = strndup(path, plen);
	if (!copy)
		return -ENOMEM;
	sv = find_subvol(o, copy, o->nr_subvols);
	if (sv >= 0) {
		struct saved_times t;

		*existing = NULL;
		save_times(&t, parent, NULL);
		err = tlog_create_subvol(p->mnt, parent, name, len);
		if (!err)
			restore_times(p, &t, parent, NULL);
		if (!err)
			err = tlog_lookup(p->mnt, parent, name, len, ret);
		if (err) {
			tlog_error(err, "%s: subvolume: %s", copy, strerror(-err));
		} else {
			p->subvol_seen[sv] = true;
			p->subvol_roots[sv] = (*ret)->root;
			p->stats->subvols++;
		}
	} else {
		err = make_name(p, parent, copy, name, len, &a, ret, existing);
	}
	if (!err && !*existing)
		err = apply_iflags(p, *ret, copy);
	free(copy);
	return err;
}

/*
 * The directory holding the last component of @path (@plen bytes of it,
 * the parent's path): from the cache, or made (mode 0755) with whatever
 * is missing above it when @create.  The hash of every prefix is taken in
 * one pass, so a miss costs no more than the path's length.
 */
static int get_dir(struct populate *p, const char *path, size_t plen, bool create,
		   struct tlog_inode **ret)
{
	struct tlog_inode *dir = p->top;
	size_t nr = 0, k;
	u64 h = HASH_INIT;
	struct dir_slot *s;

	if (plen == 0) {
		*ret = p->top;
		return 0;
	}
	/* the prefixes ending before each '/', and the whole */
	for (size_t i = 0; i <= plen; i++) {
		if (i == plen || path[i] == '/') {
			if (array_reserve(p->prefix_pos, p->pos_alloc, nr + 1) ||
			    array_reserve(p->prefix_hash, p->hash_alloc, nr + 1))
				return -ENOMEM;
			p->prefix_pos[nr] = i;
			p->prefix_hash[nr++] = h;
		}
		if (i < plen)
			h = hash_step(h, (u8)path[i]);
	}
	/* the deepest prefix known */
	for (k = nr; k > 0; k--) {
		s = dir_find(p, path, p->prefix_pos[k - 1], p->prefix_hash[k - 1]);
		if (s) {
			dir = s->inode;
			break;
		}
	}
	/* and what is below it, found or made */
	for (; k < nr; k++) {
		size_t start = k ? p->prefix_pos[k - 1] + 1 : 0, end = p->prefix_pos[k];
		const char *name = path + start;
		u16 len = (u16)(end - start);
		struct tlog_inode *child = NULL, *existing = NULL;
		int err = tlog_lookup(p->mnt, dir, name, len, &child);

		if (err == -ENOENT && create) {
			err = make_dir(p, dir, path, end, name, len, 0755, &child, &existing);
			if (!err && existing)
				child = existing;
			if (!err && p->opts->set_owner)
				err = tlog_chown(p->mnt, child, p->opts->uid, p->opts->gid);
		} else if (!err && !is_dir_inode(child)) {
			tlog_iput(p->mnt, child);
			err = -ENOTDIR;
		}
		if (!err)
			err = dir_insert(p, path, end, child);
		if (err) {
			if (!tlog_error_get())
				tlog_error(err, "%.*s: %s", (int)end, path, strerror(-err));
			return err;
		}
		dir = child;
	}
	*ret = dir;
	return 0;
}

/* ---- regular files ---- */

/* The data of the file last given by next(), written at its offsets, holes left. */
static int copy_data(struct populate *p, struct tlog_inode *inode, const struct tlog_src_entry *e)
{
	struct tlog_mount *mnt = p->mnt;
	u64 end = 0, pending = 0;
	int err = 0, r;

	for (;;) {
		const void *buf;
		size_t len;
		u64 off;

		r = p->src->ops->read_data(p->src, &buf, &len, &off);
		if (r)
			break;
		if (!len)
			continue;
		if (off > end)
			p->stats->hole_bytes += off - end;
		err = tlog_write_data(mnt, inode, off, buf, len);
		if (err)
			return err;
		p->stats->data_bytes += len;
		pending += len;
		if (off + len > end)
			end = off + len;
		if (pending >= WRITEBACK_BYTES) {
			err = tlog_writeback_inode(mnt, inode);
			if (err)
				return err;
			pending = 0;
		}
	}
	if (r < 0)
		return r;
	if (end < e->size) {
		p->stats->hole_bytes += e->size - end;
		err = tlog_truncate(mnt, inode, e->size);
	}
	if (!err)
		err = tlog_writeback_inode(mnt, inode);
	return err;
}

static int write_file(struct populate *p, struct tlog_inode *inode, const struct tlog_src_entry *e)
{
	struct tlog_mount *mnt = p->mnt;
	int fd = -1, err;

	if (p->opts->reflink && p->src->ops->data_fd)
		fd = p->src->ops->data_fd(p->src);
	if (fd >= 0) {
		mnt->clone_fd = fd;
		mnt->clone_inode = inode;
	}
	err = copy_data(p, inode, e);
	mnt->clone_fd = -1;
	mnt->clone_inode = NULL;
	p->stats->cloned_bytes = mnt->cloned_bytes - p->cloned_base;
	if (err)
		path_error(err, e->path);
	return err;
}

/* ---- entries ---- */

/* What tlog_create takes for a device: the kernel's dev_t (MKDEV: major << 20 | minor). */
static int kernel_rdev(const struct tlog_src_entry *e, u64 *ret)
{
	u64 maj = major((dev_t)e->rdev), min = minor((dev_t)e->rdev);

	if (maj >= (1U << 12) || min >= (1U << 20))
		return tlog_error(-EOVERFLOW, "%s: device number %llu:%llu too large for Linux",
				  e->path, (unsigned long long)maj, (unsigned long long)min);
	*ret = maj << 20 | min;
	return 0;
}

static int make_args_of(const struct tlog_src_entry *e, struct make_args *a)
{
	u32 type = e->mode & S_IFMT;

	memset(a, 0, sizeof(*a));
	a->mode = type | (e->mode & 0777);
	switch (type) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFIFO:
	case S_IFSOCK:
		return 0;
	case S_IFLNK:
		a->mode = S_IFLNK | 0777;
		a->target = e->symlink;
		if (!e->symlink || !e->symlink[0])
			return tlog_error(-EINVAL, "%s: symlink without a target", e->path);
		return 0;
	case S_IFCHR:
	case S_IFBLK:
		return kernel_rdev(e, &a->rdev);
	default:
		return tlog_error(-EINVAL, "%s: unsupported file type (mode 0%o)", e->path,
				  e->mode);
	}
}

static void count_type(struct populate *p, u32 mode)
{
	if (S_ISREG(mode))
		p->stats->files++;
	else if (S_ISDIR(mode))
		p->stats->dirs++;
	else if (S_ISLNK(mode))
		p->stats->symlinks++;
	else
		p->stats->specials++;
}

/*
 * A new inode in @dir for @e: made, flags, data, metadata.  *@ret keeps
 * the reference.
 */
static int new_inode(struct populate *p, struct tlog_inode *dir, const struct tlog_src_entry *e,
		     const char *name, u16 len, struct tlog_inode **ret)
{
	size_t plen = strlen(e->path);
	struct tlog_inode *inode = NULL, *existing = NULL;
	struct make_args a;
	struct dir_slot *s;
	int err = make_args_of(e, &a);

	if (err)
		return err;
	s = S_ISDIR(a.mode) ? dir_find(p, e->path, plen, hash_bytes(e->path, plen)) : NULL;
	if (s)		/* made before its entry came (an archive's implicit parent) */
		err = tlog_iget(p->mnt, s->inode->root, s->inode->ino, &existing);
	else if (S_ISDIR(a.mode))
		err = make_dir(p, dir, e->path, plen, name, len, a.mode, &inode, &existing);
	else
		err = make_name(p, dir, e->path, name, len, &a, &inode, &existing);
	if (err)
		return err;
	if (existing) {
		inode = existing;	/* a directory already there: its metadata updated */
	} else {
		count_type(p, a.mode);
		if (!S_ISDIR(a.mode))
			err = apply_iflags(p, inode, e->path);
		if (!err && S_ISREG(a.mode))
			err = write_file(p, inode, e);
	}
	if (!err)
		err = apply_meta(p, inode, e);
	if (!err && S_ISDIR(a.mode)) {
		err = dir_insert(p, e->path, plen, inode);	/* takes the reference */
		inode = NULL;
		if (err)
			return err;
	}
	if (err) {
		tlog_iput(p->mnt, inode);
		return err;
	}
	*ret = inode;
	return 0;
}

/* Drop a finished non-directory from the mount's cache (its item written now). */
static int forget(struct populate *p, struct tlog_inode *inode)
{
	return inode ? tlog_iforget(p->mnt, inode) : 0;
}

/*
 * Another name of @target in @dir.  In another subvolume a hard link
 * cannot be: a new inode takes the target's type, owner, mode, data
 * (shared, as a clone) and times, as mkfs.btrfs makes a copy there.
 */
static int link_to(struct populate *p, struct tlog_inode *dir, const struct tlog_src_entry *e,
		   const char *name, u16 len, struct tlog_inode *target)
{
	struct make_args a = { .link = target };
	struct tlog_inode *inode = NULL, *existing;
	char buf[4096];
	int err;

	if (target->root == dir->root) {
		err = make_name(p, dir, e->path, name, len, &a, &inode, &existing);
		if (!err) {
			p->stats->hardlinks++;
			tlog_iput(p->mnt, inode);
		}
		return err;
	}
	memset(&a, 0, sizeof(a));
	a.mode = tlog_inode_mode(target);
	a.rdev = btrfs_inode_item_rdev(&target->item);
	if (S_ISLNK(a.mode)) {
		err = btrfs_read_symlink(target->root, target->ino, buf, sizeof(buf));
		if (err < 0)
			return path_error(err, e->path);
		a.target = buf;
	}
	err = make_name(p, dir, e->path, name, len, &a, &inode, &existing);
	if (err)
		return err;
	count_type(p, a.mode);
	if (S_ISREG(a.mode) && btrfs_inode_item_size(&target->item))
		err = tlog_clone_range(p->mnt, target, 0, 0, inode, 0);
	if (!err && (btrfs_inode_item_uid(&inode->item) != btrfs_inode_item_uid(&target->item) ||
		     btrfs_inode_item_gid(&inode->item) != btrfs_inode_item_gid(&target->item)))
		err = tlog_chown(p->mnt, inode, btrfs_inode_item_uid(&target->item),
				 btrfs_inode_item_gid(&target->item));
	if (!err && !S_ISLNK(a.mode))
		err = tlog_chmod(p->mnt, inode, a.mode & 07777);
	if (!err) {
		inode->item.atime = target->item.atime;
		inode->item.mtime = target->item.mtime;
		inode->item.ctime = target->item.ctime;
		inode->item.otime = target->item.otime;
		tlog_inode_mark_dirty(p->mnt, inode);
	}
	if (err)
		path_error(err, e->path);
	err = err ? err : forget(p, inode);
	if (err)
		tlog_iput(p->mnt, inode);
	return err;
}

/* An archive's hard link: @e->hardlink names an earlier path. */
static int archive_link(struct populate *p, struct tlog_inode *dir, const struct tlog_src_entry *e,
			const char *name, u16 len)
{
	const char *t = e->hardlink, *slash;
	struct tlog_inode *tdir, *target;
	int err = check_path(t);

	if (err)
		return path_error(err, e->path);
	slash = strrchr(t, '/');
	err = get_dir(p, t, slash ? (size_t)(slash - t) : 0, false, &tdir);
	if (!err)
		err = tlog_lookup(p->mnt, tdir, slash ? slash + 1 : t,
				  (u16)strlen(slash ? slash + 1 : t), &target);
	if (err)
		return tlog_error(err, "%s: hard link to %s: %s", e->path, t, strerror(-err));
	if (is_dir_inode(target)) {
		tlog_iput(p->mnt, target);
		return tlog_error(-EPERM, "%s: hard link to directory %s", e->path, t);
	}
	err = link_to(p, dir, e, name, len, target);
	if (err)
		tlog_iput(p->mnt, target);
	else
		err = forget(p, target);
	return err;
}

/* A directory source's hard link: the inode of @e->link_id in this subvolume, if made. */
static int source_link(struct populate *p, struct tlog_inode *dir, const struct tlog_src_entry *e,
		       const char *name, u16 len, bool *done)
{
	struct link_slot *s = link_find(p, e->link_id);
	struct tlog_inode *target;
	int err;

	*done = false;
	if (!s)
		return 0;
	for (size_t i = 0; i < s->nr_copies; i++) {
		if (s->copies[i].root != dir->root)
			continue;
		err = tlog_iget(p->mnt, s->copies[i].root, s->copies[i].ino, &target);
		if (err)
			return path_error(err, e->path);
		err = link_to(p, dir, e, name, len, target);
		if (err) {
			tlog_iput(p->mnt, target);
			return err;
		}
		err = forget(p, target);
		if (++s->seen >= s->nlink)
			link_remove(s);
		*done = true;
		return err;
	}
	return 0;
}

/* After a new inode for a linked entry: remember it for the names to come. */
static int source_link_made(struct populate *p, const struct tlog_src_entry *e,
			    struct tlog_inode *inode)
{
	struct link_slot *s = link_find(p, e->link_id);
	int err = 0;

	if (!s) {
		if (e->nlink <= 1)
			return 0;
		err = link_new(p, e->link_id, &s);
		if (err)
			return err;
		s->nlink = e->nlink;
	}
	err = link_add_copy(s, inode);
	if (!err && ++s->seen >= s->nlink)
		link_remove(s);
	return err;
}

static int handle_root(struct populate *p, const struct tlog_src_entry *e)
{
	int err;

	if (!S_ISDIR(e->mode))
		return tlog_error(-EINVAL, "the root of %s is not a directory", p->src->name);
	err = apply_iflags(p, p->top, "");
	if (!err)
		err = apply_meta(p, p->top, e);
	return err;
}

static int handle_entry(struct populate *p, const struct tlog_src_entry *e)
{
	const char *slash, *name;
	struct tlog_inode *dir, *inode = NULL;
	bool done = false;
	size_t nlen;
	int err;

	if (!e->path)
		return tlog_error(-EINVAL, "an entry of %s has no path", p->src->name);
	if (!e->path[0])
		return handle_root(p, e);
	err = check_path(e->path);
	if (err)
		return err;
	slash = strrchr(e->path, '/');
	name = slash ? slash + 1 : e->path;
	nlen = strlen(name);
	err = get_dir(p, e->path, slash ? (size_t)(slash - e->path) : 0, true, &dir);
	if (err)
		return err;
	if (e->hardlink)
		return archive_link(p, dir, e, name, (u16)nlen);
	if (e->link_id && !S_ISDIR(e->mode)) {
		err = source_link(p, dir, e, name, (u16)nlen, &done);
		if (err || done)
			return err;
	}
	err = new_inode(p, dir, e, name, (u16)nlen, &inode);
	if (!err && e->link_id && inode && !S_ISDIR(e->mode))
		err = source_link_made(p, e, inode);
	if (!err)
		err = forget(p, inode);
	else
		tlog_iput(p->mnt, inode);
	return err;
}

/* ---- commits ---- */

/* Commit when the dirty tree blocks grow large (counted every DIRTY_CHECK_ENTRIES entries). */
static int maybe_commit(struct populate *p)
{
	const struct list_head *head = &p->mnt->fs->dirty_blocks, *pos;
	u64 n = 0;

	if (++p->since_check < DIRTY_CHECK_ENTRIES)
		return 0;
	p->since_check = 0;
	for (pos = head->next; pos != head; pos = pos->next)
		n++;
	if (n * p->mnt->fs->nodesize < DIRTY_COMMIT_BYTES)
		return 0;
	return tlog_sync(p->mnt);
}

/* ---- the end ---- */

static int finish_options(struct populate *p)
{
	const struct tlog_rootdir_opts *o = p->opts;
	int err = 0;

	for (size_t i = 0; i < o->nr_subvols; i++)
		if (!p->subvol_seen[i])
			return tlog_error(-ENOENT, "subvolume %s: not in %s", o->subvols[i].path,
					  p->src->name);
	for (size_t i = 0; i < o->nr_iflags; i++)
		if (!p->iflags_seen[i])
			return tlog_error(-ENOENT, "inode flags for %s: not in %s",
					  o->iflags[i].path[0] ? o->iflags[i].path : "/",
					  p->src->name);
	for (size_t i = 0; !err && i < o->nr_subvols; i++) {
		enum tlog_subvol_type t = o->subvols[i].type;

		if (t == TLOG_SUBVOL_RO || t == TLOG_SUBVOL_DEFAULT_RO)
			err = tlog_subvol_set_readonly(p->mnt, p->subvol_roots[i]);
		if (!err && (t == TLOG_SUBVOL_DEFAULT || t == TLOG_SUBVOL_DEFAULT_RO))
			err = tlog_set_default_subvol(p->mnt,
						      p->subvol_roots[i]->root_key.objectid);
		if (err)
			path_error(err, o->subvols[i].path);
	}
	return err;
}

static int check_options(const struct tlog_rootdir_opts *o)
{
	size_t defaults = 0;

	for (size_t i = 0; i < o->nr_subvols; i++) {
		const char *path = o->subvols[i].path;
		int err;

		if (!path || !path[0])
			return tlog_error(-EINVAL, "the top level cannot be made a subvolume");
		err = check_path(path);
		if (err)
			return err;
		if (o->subvols[i].type == TLOG_SUBVOL_DEFAULT ||
		    o->subvols[i].type == TLOG_SUBVOL_DEFAULT_RO)
			defaults++;
		if (find_subvol(o, path, i) >= 0)
			return tlog_error(-EINVAL, "subvolume %s given twice", path);
	}
	if (defaults > 1)
		return tlog_error(-EINVAL, "more than one default subvolume");
	for (size_t i = 0; i < o->nr_iflags; i++) {
		const char *path = o->iflags[i].path;

		if (!path || (path[0] && check_path(path)))
			return tlog_error(-EINVAL, "inode flags: bad path");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(o->iflags[j].path, path))
				return tlog_error(-EINVAL, "inode flags for %s given twice",
						  path[0] ? path : "/");
	}
	return 0;
}

static void release(struct populate *p)
{
	for (size_t i = 0; i < p->dirs_cap; i++) {
		if (p->dirs[i].path) {
			tlog_iput(p->mnt, p->dirs[i].inode);
			free(p->dirs[i].path);
		}
	}
	for (size_t i = 0; i < p->links_cap; i++)
		free(p->links[i].copies);
	free(p->dirs);
	free(p->links);
	free(p->subvol_seen);
	free(p->iflags_seen);
	free(p->subvol_roots);
	free(p->prefix_pos);
	free(p->prefix_hash);
	tlog_iput(p->mnt, p->top);
	p->mnt->clone_fd = -1;
	p->mnt->clone_inode = NULL;
}

static void progress(struct populate *p, bool done)
{
	if (p->opts->progress)
		p->opts->progress(p->opts->progress_ctx, p->stats, done);
}

int tlog_rootdir_populate(struct tlog_mount *mnt, struct tlog_source *src,
			  const struct tlog_rootdir_opts *opts, struct tlog_rootdir_stats *stats)
{
	static const struct tlog_rootdir_opts no_opts;
	struct tlog_rootdir_stats local;
	struct populate p = { .mnt = mnt, .src = src, .opts = opts ? opts : &no_opts };
	struct btrfs_root *fs_root;
	int err;

	tlog_error_clear();
	p.stats = stats ? stats : &local;
	memset(p.stats, 0, sizeof(*p.stats));
	err = check_options(p.opts);
	if (err)
		return err;
	p.subvol_seen = calloc(p.opts->nr_subvols + 1, sizeof(bool));
	p.subvol_roots = calloc(p.opts->nr_subvols + 1, sizeof(*p.subvol_roots));
	p.iflags_seen = calloc(p.opts->nr_iflags + 1, sizeof(bool));
	p.cloned_base = mnt->cloned_bytes;
	if (!p.subvol_seen || !p.subvol_roots || !p.iflags_seen) {
		err = -ENOMEM;
		goto out;
	}
	err = btrfs_read_root(mnt->fs, BTRFS_FS_TREE_OBJECTID, &fs_root);
	if (!err)
		err = tlog_iget(mnt, fs_root, BTRFS_FIRST_FREE_OBJECTID, &p.top);
	if (!err)
		err = tlog_mount_trans(mnt, &mnt->trans);
	while (!err) {
		struct tlog_src_entry e;
		int r;

		memset(&e, 0, sizeof(e));
		r = src->ops->next(src, &e);
		if (r < 0)
			err = r;
		if (r)
			break;
		p.stats->current = e.path;
		err = handle_entry(&p, &e);
		p.stats->entries++;
		if (!err)
			err = maybe_commit(&p);
		if (!err)
			progress(&p, false);
	}
	p.stats->current = NULL;
	if (!err)
		err = finish_options(&p);
	if (!err)
		err = tlog_sync(mnt);
	if (!err)
		progress(&p, true);
out:
	release(&p);
	return err;
}
