// SPDX-License-Identifier: GPL-2.0-only
/*
 * The fsync contract (contract.h).  One capture routine reads an inode's
 * state from a tree - the live mount's after the fsync, the replayed
 * image's at a check - into text (names, xattrs, entries, sorted) and a
 * hash of the data, so the two sides are compared by one decoder.  The
 * live side takes size and mode from the in-memory inode, which the
 * fsync logged and the tree may not have yet (the delayed inode item).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "array.h"
#include "blockdev.h"
#include "contract.h"
#include "dir-item.h"
#include "errctx.h"
#include "file.h"
#include "inode.h"
#include "root-tree.h"
#include "tree-checker.h"
#include "tree-log.h"

/* A growable string of sorted lines. */
struct lines {
	char **v;
	size_t nr, alloc;
};

struct inode_state {
	u32 mode;
	u64 size;
	u64 data_hash;
	char *names;		/* "parent name\n", sorted */
	char *xattrs;		/* "name hash\n", sorted */
	char *entries;		/* a directory's "name ino\n", sorted */
};

struct record {
	u64 root, ino;
	unsigned int line;
	u64 changes;		/* tlog_inode.changes at the fsync */
	struct inode_state st;
};

struct tlog_contract {
	struct record *recs;
	size_t nr, alloc;
	unsigned long long checked;
};

static int lines_add(struct lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int lines_add(struct lines *l, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	if (array_reserve(l->v, l->alloc, l->nr + 1))
		return -ENOMEM;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	l->v[l->nr++] = s;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines sorted and joined; @l is emptied.  NULL on no memory. */
static char *lines_join(struct lines *l)
{
	size_t len = 1;
	char *out, *p;

	if (l->nr)
		qsort(l->v, l->nr, sizeof(*l->v), cmp_str);
	for (size_t i = 0; i < l->nr; i++)
		len += strlen(l->v[i]) + 1;
	out = p = malloc(len);
	for (size_t i = 0; i < l->nr; i++) {
		if (out)
			p += sprintf(p, "%s\n", l->v[i]);
		free(l->v[i]);
	}
	if (out)
		*p = '\0';
	free(l->v);
	memset(l, 0, sizeof(*l));
	return out;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->nr; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The end of a capture: *@out the lines joined, unless @ret says it failed. */
static int lines_finish(struct lines *l, int ret, char **out)
{
	if (ret) {
		lines_free(l);
		return ret;
	}
	*out = lines_join(l);
	return *out ? 0 : -ENOMEM;
}

static void state_free(struct inode_state *st)
{
	free(st->names);
	free(st->xattrs);
	free(st->entries);
	memset(st, 0, sizeof(*st));
}

/* Names printed so that any byte survives: hex. */
static void hex(char *out, const char *name, u16 len)
{
	for (u16 i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", (unsigned char)name[i]);
	out[2 * len] = '\0';
}

static int capture_names(struct btrfs_root *root, u64 ino, struct inode_state *st)
{
	struct tlog_ref_name *names;
	struct lines l = { 0 };
	size_t nr;
	int ret = btrfs_inode_names(root, ino, &names, &nr);

	for (size_t i = 0; !ret && i < nr; i++) {
		char h[2 * 255 + 1];

		hex(h, names[i].name, names[i].len);
		ret = lines_add(&l, "%llu %s", (unsigned long long)names[i].parent, h);
	}
	free(names);
	return lines_finish(&l, ret, &st->names);
}

static int add_xattr(const struct tlog_dir_entry *de, void *arg)
{
	char h[2 * 255 + 1];

	hex(h, de->name, de->name_len);
	return lines_add(arg, "%s %016llx", h,
			 (unsigned long long)XXH64(de->data, de->data_len, 0));
}

static int capture_xattrs(struct btrfs_root *root, u64 ino, struct inode_state *st)
{
	struct btrfs_key min = { ino, BTRFS_XATTR_ITEM_KEY, 0 };
	struct btrfs_key max = { ino, BTRFS_XATTR_ITEM_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	struct lines l = { 0 };
	int ret = 0;

	btrfs_for_each_item(root, &iter, &min, &max) {
		ret = btrfs_for_each_dir_entry(iter.leaf, iter.slot, add_xattr, &l);
		if (ret)
			break;
	}
	if (!ret && iter.ret < 0)
		ret = iter.ret;
	btrfs_tree_iter_end(&iter);
	return lines_finish(&l, ret, &st->xattrs);
}

static int add_entry(const struct tlog_dir_entry *de, void *arg)
{
	char h[2 * 255 + 1];

	hex(h, de->name, de->name_len);
	return lines_add(arg, "%s %llu", h, (unsigned long long)de->location.objectid);
}

static int capture_entries(struct btrfs_root *root, u64 ino, struct inode_state *st)
{
	struct lines l = { 0 };

	return lines_finish(&l, btrfs_iterate_dir(root, ino, add_entry, &l), &st->entries);
}

static int capture_data(struct tlog_fs *fs, struct btrfs_root *root, u64 ino, u64 size,
			u64 *hash)
{
	static char buf[1 << 16];
	XXH64_state_t *xs = XXH64_createState();
	struct tlog_file *file;
	u64 pos = 0;
	int ret;

	if (!xs)
		return -ENOMEM;
	XXH64_reset(xs, 0);
	ret = tlog_file_open(fs, root, ino, &file);
	if (!ret) {
		file->size = size;	/* the live inode's, which the tree may lag */
		while (!ret && pos < size) {
			ssize_t n = tlog_file_pread(file, buf, sizeof(buf), pos);

			if (n <= 0) {
				ret = n < 0 ? (int)n : -EIO;
				break;
			}
			XXH64_update(xs, buf, (size_t)n);
			pos += (u64)n;
		}
		tlog_file_close(file);
	}
	*hash = XXH64_digest(xs);
	XXH64_freeState(xs);
	return ret;
}

/* The state of @ino in @root; @mode and @size as given (the live inode's or the tree's). */
static int capture(struct tlog_fs *fs, struct btrfs_root *root, u64 ino, u32 mode, u64 size,
		   struct inode_state *st)
{
	int ret;

	memset(st, 0, sizeof(*st));
	st->mode = mode;
	st->size = size;
	ret = capture_names(root, ino, st);
	if (!ret)
		ret = capture_xattrs(root, ino, st);
	if (!ret && S_ISDIR(mode))
		ret = capture_entries(root, ino, st);
	if (!ret && S_ISREG(mode))
		ret = capture_data(fs, root, ino, size, &st->data_hash);
	if (ret)
		state_free(st);
	return ret;
}

int tlog_contract_new(struct tlog_contract **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void tlog_contract_free(struct tlog_contract *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr; i++)
		state_free(&c->recs[i].st);
	free(c->recs);
	free(c);
}

unsigned long long tlog_contract_checked(const struct tlog_contract *c)
{
	return c->checked;
}

int tlog_contract_record(struct tlog_contract *c, struct tlog_mount *mnt,
			 struct tlog_inode *inode, unsigned int line)
{
	struct record *r = NULL;
	int ret;

	for (size_t i = 0; i < c->nr; i++)
		if (c->recs[i].root == inode->root->root_key.objectid && c->recs[i].ino == inode->ino)
			r = &c->recs[i];
	if (!r) {
		if (array_reserve(c->recs, c->alloc, c->nr + 1))
			return -ENOMEM;
		r = &c->recs[c->nr++];
		memset(r, 0, sizeof(*r));
		r->root = inode->root->root_key.objectid;
		r->ino = inode->ino;
	}
	state_free(&r->st);
	r->line = line;
	r->changes = inode->changes;
	ret = capture(mnt->fs, inode->root, inode->ino, tlog_inode_mode(inode),
		      btrfs_inode_item_size(&inode->item), &r->st);
	if (ret)
		r->changes = (u64)-1;	/* never checked */
	return ret;
}

/* The first differing line of two captures, for the report. */
static void first_diff(const char *want, const char *got, char *out, size_t len)
{
	const char *w = want ? want : "", *g = got ? got : "";

	while (*w && *w == *g) {
		const char *wn = strchr(w, '\n'), *gn = strchr(g, '\n');

		if (!wn || !gn || wn - w != gn - g || memcmp(w, g, (size_t)(wn - w)))
			break;
		w = wn + 1;
		g = gn + 1;
	}
	snprintf(out, len, "expected \"%.*s\", found \"%.*s\"", (int)strcspn(w, "\n"), w,
		 (int)strcspn(g, "\n"), g);
}

static void compare(const struct record *r, const struct inode_state *got,
		    void (*report)(void *, unsigned int, const char *), void *arg, int *bad)
{
	char what[1024], d[700];
	const struct inode_state *want = &r->st;

#define VIOLATION(...) do {							\
		snprintf(what, sizeof(what), __VA_ARGS__);			\
		(*bad)++;							\
		if (report)							\
			report(arg, r->line, what);				\
	} while (0)

	if (got->mode != want->mode)
		VIOLATION("inode %llu: mode %o after replay, %o at its fsync",
			  (unsigned long long)r->ino, got->mode, want->mode);
	if (got->size != want->size)
		VIOLATION("inode %llu: size %llu after replay, %llu at its fsync",
			  (unsigned long long)r->ino, (unsigned long long)got->size,
			  (unsigned long long)want->size);
	else if (got->data_hash != want->data_hash)
		VIOLATION("inode %llu: its data differs from the data at its fsync",
			  (unsigned long long)r->ino);
	if (strcmp(got->names, want->names)) {
		first_diff(want->names, got->names, d, sizeof(d));
		VIOLATION("inode %llu: its names (parent, hex name) differ: %s",
			  (unsigned long long)r->ino, d);
	}
	if (strcmp(got->xattrs, want->xattrs)) {
		first_diff(want->xattrs, got->xattrs, d, sizeof(d));
		VIOLATION("inode %llu: its xattrs differ: %s", (unsigned long long)r->ino, d);
	}
	if (want->entries && (!got->entries || strcmp(got->entries, want->entries))) {
		first_diff(want->entries, got->entries, d, sizeof(d));
		VIOLATION("directory %llu: its entries (hex name, inode) differ: %s",
			  (unsigned long long)r->ino, d);
	}
#undef VIOLATION
}

/* Each name of the record must lead to the inode in the replayed tree. */
static void check_names_lead_here(struct btrfs_root *root, const struct record *r,
				  void (*report)(void *, unsigned int, const char *), void *arg,
				  int *bad)
{
	const char *p = r->st.names;

	while (p && *p) {
		unsigned long long parent;
		char h[2 * 255 + 1], name[256], what[700];
		struct tlog_dir_entry de;
		size_t len;
		int n = 0;

		if (sscanf(p, "%llu %510s%n", &parent, h, &n) != 2)
			break;
		p += n + 1;
		if (parent == r->ino)
			continue;	/* a subvolume root's "..", no entry anywhere */
		len = strlen(h) / 2;
		for (size_t i = 0; i < len; i++) {
			unsigned int v;

			sscanf(h + 2 * i, "%2x", &v);
			name[i] = (char)v;
		}
		if (btrfs_lookup_dir_entry(root, parent, name, len, &de) == 0 &&
		    de.location.objectid == r->ino)
			continue;
		tlog_error_clear();
		snprintf(what, sizeof(what), "inode %llu: name %s (hex) in directory %llu "
			 "does not lead to it after replay", (unsigned long long)r->ino, h, parent);
		(*bad)++;
		if (report)
			report(arg, r->line, what);
	}
}

/*
 * The image as a mount after a power cut right now would show it: a
 * second, read-only open of the device with its log replayed in memory
 * (tlog_apply_log_overlay, the log view the queries use); the image is
 * not written.
 */
static int open_replayed(struct tlog_mount *mnt, struct tlog_fs **fs)
{
	struct tlog_open_opts opts = { .super_mirror = -1 };
	int ret = tlog_open_bdev(mnt->fs->bdev, &opts, fs);

	if (ret || !(*fs)->log_root_tree)
		return ret;
	ret = tlog_apply_log_overlay(*fs);
	if (ret) {
		tlog_close(*fs);
		*fs = NULL;
	}
	return ret;
}

int tlog_contract_check(struct tlog_contract *c, struct tlog_mount *mnt,
			void (*report)(void *arg, unsigned int line, const char *what),
			void *arg)
{
	struct tlog_fs *fs;
	int ret, bad = 0;

	ret = tlog_bdev_flush(mnt->fs->bdev);
	if (!ret)
		ret = open_replayed(mnt, &fs);
	if (ret)
		return ret;
	for (size_t i = 0; !ret && i < c->nr; i++) {
		const struct record *r = &c->recs[i];
		struct tlog_inode *live = NULL;
		struct btrfs_inode_item ii;
		struct inode_state got;
		struct btrfs_root *root;
		bool unchanged;

		/* only what has not changed since its fsync is promised */
		if (r->changes == (u64)-1)
			continue;
		ret = btrfs_find_root(mnt->fs, r->root, &root);
		if (!ret)
			ret = tlog_iget(mnt, root, r->ino, &live);
		if (ret == -ENOENT) {
			tlog_error_clear();
			ret = 0;
			continue;
		}
		if (ret)
			break;
		unchanged = live->changes == r->changes;
		tlog_iput(mnt, live);
		if (!unchanged)
			continue;
		c->checked++;
		ret = btrfs_read_root(fs, r->root, &root);
		if (!ret)
			ret = btrfs_read_inode(root, r->ino, &ii);
		if (ret == -ENOENT) {
			char what[128];

			tlog_error_clear();
			snprintf(what, sizeof(what), "inode %llu is gone after replay",
				 (unsigned long long)r->ino);
			bad++;
			if (report)
				report(arg, r->line, what);
			ret = 0;
			continue;
		}
		if (!ret)
			ret = capture(fs, root, r->ino, btrfs_inode_item_mode(&ii),
				      btrfs_inode_item_size(&ii), &got);
		if (ret)
			break;
		compare(r, &got, report, arg, &bad);
		check_names_lead_here(root, r, report, arg, &bad);
		state_free(&got);
	}
	tlog_close(fs);
	return ret ? ret : bad;
}
