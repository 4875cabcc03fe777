// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sources of mkfs --rootdir (rootdir-dir.c, rootdir-archive.c), read
 * back against what the test made:
 *
 *  - a directory under /tmp: the exact entry order (preorder, names in
 *    byte order), every field against statx, hard links sharing an id,
 *    xattrs, a symlink's target, a FIFO, data blocks of at most 1 MiB on
 *    1 MiB boundaries, a sparse file whose holes are never read; a chain
 *    of directories deeper than the descriptors allowed; the estimate;
 *    errors that name the path; the read-ahead worker giving the same
 *    stream of entries, blocks and errors as a walk on the caller's
 *    thread (TLOG_ROOTDIR_NO_READAHEAD=1), over some thousands of
 *    entries, and a caller stopping anywhere without leaking;
 *  - archives written here with libarchive (pax, plain and gzip): paths
 *    brought to one spelling and ".." refused, owners, times, device
 *    numbers, a sparse map, hard links, symlinks, xattrs once each, POSIX
 *    ACLs converted to the kernel's xattr format (or taken as the archive
 *    has them), standard input; damaged and truncated archives fail
 *    cleanly.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>

#include "errctx.h"
#include "rootdir.h"

#define MIB		(1024 * 1024)
#define MAX_RECS	2048
#define MAX_X		8
#define MAX_BLOCKS	16

/* ---- what a source gave, copied out of it ---- */

struct rec {
	char *path, *hardlink, *symlink;
	struct tlog_src_entry e;	/* its pointers are not to be used */
	size_t nr_x;
	char *xname[MAX_X];
	char *xval[MAX_X];
	size_t xsize[MAX_X];
	unsigned char *data;		/* e.size bytes, holes zero */
	size_t nr_blocks;
	u64 boff[MAX_BLOCKS], blen[MAX_BLOCKS];
	bool has_fd;
};

static struct rec recs[MAX_RECS];
static size_t nr_recs;

static char *dupmem(const void *p, size_t n)
{
	char *d = malloc(n + 1);

	cr_assert_not_null(d);
	memcpy(d, p, n);
	d[n] = 0;
	return d;
}

static int read_blocks(struct tlog_source *src, struct rec *r)
{
	const void *buf;
	size_t len;
	u64 off;
	int ret;

	r->data = calloc(1, r->e.size + 1);
	cr_assert_not_null(r->data);
	while ((ret = src->ops->read_data(src, &buf, &len, &off)) == 0) {
		cr_assert(off + len <= r->e.size, "%s: block %llu+%zu past %llu", r->path,
			  (unsigned long long)off, len, (unsigned long long)r->e.size);
		cr_assert(len > 0);
		if (r->nr_blocks) {
			u64 prev = r->boff[r->nr_blocks - 1] + r->blen[r->nr_blocks - 1];

			cr_assert(off >= prev, "%s: blocks overlap", r->path);
		}
		memcpy(r->data + off, buf, len);
		if (r->nr_blocks < MAX_BLOCKS) {
			r->boff[r->nr_blocks] = off;
			r->blen[r->nr_blocks] = len;
		}
		r->nr_blocks++;
	}
	return ret < 0 ? ret : 0;
}

/* Every entry of @src into recs[] (with the data when @data): 0 or the first error. */
static int collect(struct tlog_source *src, bool data)
{
	struct tlog_src_entry e;
	int ret;

	nr_recs = 0;
	while ((ret = src->ops->next(src, &e)) == 0) {
		struct rec *r = &recs[nr_recs++];

		cr_assert(nr_recs <= MAX_RECS);
		memset(r, 0, sizeof(*r));
		r->e = e;
		r->path = strdup(e.path);
		r->hardlink = e.hardlink ? strdup(e.hardlink) : NULL;
		r->symlink = e.symlink ? strdup(e.symlink) : NULL;
		cr_assert(e.nr_xattrs <= MAX_X);
		r->nr_x = e.nr_xattrs;
		for (size_t i = 0; i < e.nr_xattrs; i++) {
			r->xname[i] = strdup(e.xattrs[i].name);
			r->xval[i] = dupmem(e.xattrs[i].value, e.xattrs[i].size);
			r->xsize[i] = e.xattrs[i].size;
			if (i)
				cr_assert(strcmp(r->xname[i - 1], r->xname[i]) < 0,
					  "%s: xattrs not sorted and unique", r->path);
		}
		r->has_fd = src->ops->data_fd && src->ops->data_fd(src) >= 0;
		if (data && (S_ISREG(e.mode) || e.hardlink)) {
			ret = read_blocks(src, r);
			if (ret)
				return ret;
		}
	}
	return ret < 0 ? ret : 0;
}

static void free_recs(void)
{
	for (size_t i = 0; i < nr_recs; i++) {
		struct rec *r = &recs[i];

		free(r->path);
		free(r->hardlink);
		free(r->symlink);
		free(r->data);
		for (size_t j = 0; j < r->nr_x; j++) {
			free(r->xname[j]);
			free(r->xval[j]);
		}
	}
	nr_recs = 0;
}

static struct rec *find(const char *path)
{
	for (size_t i = 0; i < nr_recs; i++)
		if (!strcmp(recs[i].path, path))
			return &recs[i];
	cr_assert_fail("no entry \"%s\"", path);
	return NULL;
}

static const char *xattr_of(const struct rec *r, const char *name, size_t *size)
{
	for (size_t i = 0; i < r->nr_x; i++) {
		if (!strcmp(r->xname[i], name)) {
			*size = r->xsize[i];
			return r->xval[i];
		}
	}
	return NULL;
}

static void assert_paths(const char *const *want, size_t nr)
{
	cr_assert_eq(nr_recs, nr, "%zu entries, %zu wanted", nr_recs, nr);
	for (size_t i = 0; i < nr; i++)
		cr_assert_str_eq(recs[i].path, want[i], "entry %zu", i);
}

static bool error_names(const char *what)
{
	const char *msg = tlog_error_get();

	return msg && strstr(msg, what);
}

/* ---- a directory ---- */

static char root[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	chmod(path, 0700);
	return remove(path);
}

static void remove_tree(void)
{
	if (root[0])
		nftw(root, rm_one, 32, FTW_DEPTH | FTW_PHYS);
	root[0] = 0;
}

static void fini(void)
{
	free_recs();
	remove_tree();
}

static void make_root(void)
{
	strcpy(root, "/tmp/rootdir-source-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
}

static char *at(const char *rel)
{
	static char buf[4][4096];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, 4096, "%s/%s", root, rel);
	return p;
}

static void write_file(const char *rel, const void *data, size_t len)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static unsigned char pattern(u64 off)
{
	return (unsigned char)(off * 7 + off / 4096 + 1);
}

#define BIG_SIZE	(2 * MIB + MIB / 2 + 7)
#define SPARSE_SIZE	(5 * MIB)

static void make_tree(void)
{
	unsigned char *big = malloc(BIG_SIZE), blk[4096];
	int fd;

	make_root();
	for (u64 i = 0; i < BIG_SIZE; i++)
		big[i] = pattern(i);
	write_file("big", big, BIG_SIZE);
	free(big);
	write_file("empty", "", 0);
	cr_assert_eq(mkfifo(at("fifo"), 0640), 0);
	write_file("hard1", "linked\n", 7);
	cr_assert_eq(link(at("hard1"), at("hard2")), 0);
	cr_assert_eq(symlink("big", at("link")), 0);
	fd = open(at("sparse"), O_WRONLY | O_CREAT, 0600);
	cr_assert(fd >= 0);
	cr_assert_eq(ftruncate(fd, SPARSE_SIZE), 0);
	memset(blk, 0xab, sizeof(blk));
	cr_assert_eq(pwrite(fd, blk, sizeof(blk), MIB), (ssize_t)sizeof(blk));
	memset(blk, 0xcd, sizeof(blk));
	cr_assert_eq(pwrite(fd, blk, sizeof(blk), 3 * MIB), (ssize_t)sizeof(blk));
	cr_assert_eq(fsync(fd), 0);
	close(fd);
	cr_assert_eq(mkdir(at("sub"), 0750), 0);
	cr_assert_eq(mkdir(at("sub/deep"), 0700), 0);
	write_file("sub/deep/f", "x", 1);
	write_file("tiny", "t", 1);
	cr_assert_eq(setxattr(at("big"), "user.test", "value", 5, 0), 0);
	cr_assert_eq(setxattr(at("big"), "user.empty", "", 0, 0), 0);
	cr_assert_eq(setxattr(root, "user.root", "r", 1, 0), 0);

	/* trusted.* needs root; a symlink's xattrs are reached without following it */
	if (geteuid() == 0)
		cr_assert_eq(lsetxattr(at("link"), "trusted.onlink", "L", 1, 0), 0);
}

static void assert_statx(const struct rec *r, const char *full)
{
	struct statx stx;

	cr_assert_eq(statx(AT_FDCWD, full, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME,
			   &stx), 0);
	cr_assert_eq(r->e.mode, stx.stx_mode, "%s", r->path);
	cr_assert_eq(r->e.uid, stx.stx_uid);
	cr_assert_eq(r->e.gid, stx.stx_gid);
	cr_assert_eq(r->e.nlink, stx.stx_nlink);
	cr_assert_eq(r->e.mtime.tv_sec, stx.stx_mtime.tv_sec);
	cr_assert_eq(r->e.mtime.tv_nsec, stx.stx_mtime.tv_nsec, "%s", r->path);
	/* readlink moves a symlink's atime (relatime): the entry has the one before */
	if (!S_ISLNK(stx.stx_mode))
		cr_assert_eq(r->e.atime.tv_nsec, stx.stx_atime.tv_nsec, "%s", r->path);
	cr_assert_eq(r->e.ctime.tv_nsec, stx.stx_ctime.tv_nsec);
	cr_assert_eq(r->e.has_btime, !!(stx.stx_mask & STATX_BTIME));
	if (r->e.has_btime)
		cr_assert_eq(r->e.btime.tv_nsec, stx.stx_btime.tv_nsec);
	if (S_ISREG(stx.stx_mode))
		cr_assert_eq(r->e.size, stx.stx_size);
}

TestSuite(rootdir_source, .fini = fini);

Test(rootdir_source, dir_order_and_fields)
{
	static const char *const order[] = {
		"", "big", "empty", "fifo", "hard1", "hard2", "link", "sparse",
		"sub", "sub/deep", "sub/deep/f", "tiny",
	};
	struct tlog_source *src;
	const char *v;
	size_t size;
	struct rec *r;

	make_tree();
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	cr_assert_str_eq(src->name, root);
	cr_assert_eq(collect(src, true), 0, "%s", tlog_error_get());
	tlog_source_close(src);
	assert_paths(order, sizeof(order) / sizeof(order[0]));

	for (size_t i = 0; i < nr_recs; i++)
		assert_statx(&recs[i], i ? at(recs[i].path) : root);

	r = find("");
	cr_assert(S_ISDIR(r->e.mode));
	v = xattr_of(r, "user.root", &size);
	cr_assert(v && size == 1 && v[0] == 'r');

	r = find("big");
	cr_assert(r->has_fd);
	cr_assert_eq(r->e.link_id, 0);
	v = xattr_of(r, "user.test", &size);
	cr_assert(v && size == 5 && !memcmp(v, "value", 5));
	v = xattr_of(r, "user.empty", &size);
	cr_assert(v && size == 0);
	cr_assert_eq(r->nr_blocks, 3, "big: %zu blocks", r->nr_blocks);
	cr_assert(r->boff[0] == 0 && r->blen[0] == MIB);
	cr_assert(r->boff[1] == MIB && r->blen[1] == MIB);
	cr_assert(r->boff[2] == 2 * MIB && r->blen[2] == BIG_SIZE - 2 * MIB);
	for (u64 i = 0; i < BIG_SIZE; i++)
		if (r->data[i] != pattern(i))
			cr_assert_fail("big: byte %llu differs", (unsigned long long)i);

	r = find("empty");
	cr_assert(S_ISREG(r->e.mode) && r->e.size == 0 && r->nr_blocks == 0);

	r = find("fifo");
	cr_assert(S_ISFIFO(r->e.mode) && !r->has_fd);
	cr_assert_eq(r->e.mode & 07777, 0640);

	cr_assert_neq(find("hard1")->e.link_id, 0);
	cr_assert_eq(find("hard1")->e.link_id, find("hard2")->e.link_id);
	cr_assert_eq(find("hard1")->e.nlink, 2);
	cr_assert_str_eq((char *)find("hard2")->data, "linked\n");

	r = find("link");
	cr_assert(S_ISLNK(r->e.mode) && !r->has_fd);
	cr_assert_str_eq(r->symlink, "big");
	if (geteuid() == 0) {
		v = xattr_of(r, "trusted.onlink", &size);
		cr_assert(v && size == 1 && v[0] == 'L', "a symlink's own xattr");
	}

	/* data only where it was written: the gaps are not read */
	r = find("sparse");
	cr_assert_eq(r->e.size, SPARSE_SIZE);
	cr_assert_eq(r->nr_blocks, 2, "sparse: %zu blocks", r->nr_blocks);
	cr_assert(r->boff[0] == MIB && r->blen[0] == 4096);
	cr_assert(r->boff[1] == 3 * MIB && r->blen[1] == 4096);
	cr_assert(r->data[MIB] == 0xab && r->data[3 * MIB + 4095] == 0xcd);

	cr_assert(S_ISDIR(find("sub/deep")->e.mode));
	cr_assert_eq(find("sub/deep")->e.mode & 07777, 0700);
	cr_assert_str_eq((char *)find("sub/deep/f")->data, "x");
	cr_assert_eq(find("sub")->e.link_id, 0, "directories have no link id");
}

/*
 * Values together larger than the room first made for them (ext4 keeps
 * one block of xattrs: tmpfs takes larger ones, where it has user.*).
 */
Test(rootdir_source, dir_large_xattrs)
{
	static char val[3][20000];
	struct tlog_source *src;
	const char *v;
	size_t size;

	strcpy(root, "/dev/shm/rootdir-source-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	write_file("f", "", 0);
	for (int i = 0; i < 3; i++) {
		char name[16];

		memset(val[i], 'a' + i, sizeof(val[i]));
		snprintf(name, sizeof(name), "user.%c", 'a' + i);
		if (setxattr(at("f"), name, val[i], 3000 + i * 8000, 0))
			cr_skip_test("no large user xattrs on /dev/shm: %s", strerror(errno));
	}
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	cr_assert_eq(collect(src, false), 0, "%s", tlog_error_get());
	tlog_source_close(src);
	cr_assert_eq(recs[1].nr_x, 3);
	for (int i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "user.%c", 'a' + i);
		v = xattr_of(&recs[1], name, &size);
		cr_assert(v && size == 3000 + (size_t)i * 8000 && !memcmp(v, val[i], size), "%s", name);
	}
}

/* Device numbers as makedev() has them (making the nodes needs root). */
Test(rootdir_source, dir_devices)
{
	struct tlog_source *src;

	if (geteuid() != 0)
		cr_skip_test("mknod needs root");
	umask(0);
	make_root();
	cr_assert_eq(mknod(at("blk"), S_IFBLK | 0660, makedev(259, 1048575)), 0);
	cr_assert_eq(mknod(at("chr"), S_IFCHR | 0620, makedev(4, 64)), 0);
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	cr_assert_eq(collect(src, true), 0);
	tlog_source_close(src);
	cr_assert_eq(nr_recs, 3);
	cr_assert_eq(find("blk")->e.mode, S_IFBLK | 0660);
	cr_assert_eq(find("blk")->e.rdev, makedev(259, 1048575));
	cr_assert_eq(find("chr")->e.rdev, makedev(4, 64));
	cr_assert_eq(find("chr")->e.size, 0);
}

/* Many inodes with two names each: one id per inode, none shared between two. */
Test(rootdir_source, dir_many_links)
{
	struct tlog_source *src;
	char name[32], other[32];
	u64 *ids = calloc(700, sizeof(*ids));

	make_root();
	for (int i = 0; i < 700; i++) {
		snprintf(name, sizeof(name), "a%03d", i);
		snprintf(other, sizeof(other), "b%03d", i);
		write_file(name, "", 0);
		cr_assert_eq(link(at(name), at(other)), 0);
	}
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	cr_assert_eq(collect(src, false), 0);
	tlog_source_close(src);
	cr_assert_eq(nr_recs, 1401);
	for (int i = 0; i < 700; i++) {
		ids[i] = recs[1 + i].e.link_id;
		cr_assert_neq(ids[i], 0);
		cr_assert_eq(recs[701 + i].e.link_id, ids[i], "b%03d", i);
		for (int j = 0; j < i; j++)
			cr_assert_neq(ids[j], ids[i]);
	}
	free(ids);
}

Test(rootdir_source, dir_is_deterministic)
{
	struct tlog_source *src;
	char *first[32];
	size_t n;

	make_tree();
	cr_assert_eq(tlog_source_open(root, &src), 0);
	cr_assert_not_null(src->ops->data_fd, "a directory was taken for an archive");
	cr_assert_eq(collect(src, false), 0);
	tlog_source_close(src);
	n = nr_recs;
	for (size_t i = 0; i < n; i++)
		first[i] = strdup(recs[i].path);
	free_recs();
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	cr_assert_eq(collect(src, false), 0);
	tlog_source_close(src);
	cr_assert_eq(nr_recs, n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_str_eq(recs[i].path, first[i]);
		free(first[i]);
	}
}

/* A file that grows or shrinks while read gives its entry's size, the lost part as zeros. */
Test(rootdir_source, dir_file_changing_under_read)
{
	static unsigned char buf[3 * MIB];
	struct tlog_source *src;
	struct tlog_src_entry e;
	const void *b;
	size_t len;
	u64 off;
	int fd;

	make_root();
	memset(buf, 0x11, sizeof(buf));
	write_file("f", buf, sizeof(buf));
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	cr_assert_eq(src->ops->next(src, &e), 0);
	cr_assert_eq(src->ops->next(src, &e), 0);
	cr_assert_str_eq(e.path, "f");
	cr_assert_eq(src->ops->read_data(src, &b, &len, &off), 0);
	cr_assert(off == 0 && len == MIB);
	fd = open(at("f"), O_WRONLY);
	cr_assert_eq(ftruncate(fd, MIB + 100), 0);
	close(fd);
	cr_assert_eq(src->ops->read_data(src, &b, &len, &off), 0);
	cr_assert(off == MIB && len == MIB);
	cr_assert(((const unsigned char *)b)[99] == 0x11 && ((const unsigned char *)b)[100] == 0);
	cr_assert_eq(src->ops->read_data(src, &b, &len, &off), 1, "nothing after a shrink");
	tlog_source_close(src);

	/* growing: nothing past the size the entry gave */
	write_file("f", buf, 100);
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	cr_assert_eq(src->ops->next(src, &e), 0);
	cr_assert_eq(src->ops->next(src, &e), 0);
	fd = open(at("f"), O_WRONLY | O_APPEND);
	cr_assert_eq(write(fd, buf, 5000), 5000);
	close(fd);
	cr_assert_eq(src->ops->read_data(src, &b, &len, &off), 0);
	cr_assert(off == 0 && len == 100);
	cr_assert_eq(src->ops->read_data(src, &b, &len, &off), 1);
	tlog_source_close(src);
}

#define DEPTH	1100

/* Deeper than the descriptors allowed: directories closed on the way down come back. */
Test(rootdir_source, dir_deeper_than_descriptors)
{
	struct rlimit rl = { 128, 128 };
	struct tlog_source *src;
	int fd, next;
	struct rec *r;

	make_root();
	fd = open(root, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < DEPTH; i++) {
		if (i == DEPTH / 2) {
			/* after "d" in byte order: listed once the chain below is done */
			next = openat(fd, "m", O_WRONLY | O_CREAT, 0644);
			cr_assert(next >= 0);
			close(next);
		}
		cr_assert_eq(mkdirat(fd, "d", 0755), 0);
		next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		cr_assert(next >= 0);
		close(fd);
		fd = next;
	}
	next = openat(fd, "bottom", O_WRONLY | O_CREAT, 0644);
	close(next);
	close(fd);
	write_file("z", "z", 1);

	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	cr_assert_eq(collect(src, true), 0, "%s", tlog_error_get());
	tlog_source_close(src);
	cr_assert_eq(nr_recs, 1 + DEPTH + 3);
	r = &recs[DEPTH + 1];
	cr_assert_eq(strlen(r->path), DEPTH * 2 + 6, "%s", r->path);
	cr_assert(!strcmp(r->path + DEPTH * 2, "bottom"));
	cr_assert_eq(strlen(recs[DEPTH + 2].path), (DEPTH / 2) * 2 + 1);
	cr_assert_eq(recs[DEPTH + 2].path[DEPTH / 2 * 2], 'm');
	cr_assert_str_eq(recs[DEPTH + 3].path, "z");
}

/* A chain of @depth directories "d" under the root, with file "m" beside the one at @m_at. */
static void make_chain(int depth, int m_at)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY), next;

	for (int i = 0; i < depth; i++) {
		if (i == m_at) {
			next = openat(fd, "m", O_WRONLY | O_CREAT, 0644);
			cr_assert(next >= 0);
			close(next);
		}
		cr_assert_eq(mkdirat(fd, "d", 0755), 0);
		next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		cr_assert(next >= 0);
		close(fd);
		fd = next;
	}
	close(fd);
	write_file("z", "z", 1);
}

/*
 * A directory moved away while its subtree is walked: its old parent,
 * closed meanwhile, is found again by its names from the root.
 */
Test(rootdir_source, dir_ancestor_moved)
{
	struct tlog_source *src;
	struct tlog_src_entry e;
	char from[512] = "";

	make_root();
	make_chain(150, 87);
	/* the walk must not be done before the move: on the caller's thread */
	setenv("TLOG_ROOTDIR_NO_READAHEAD", "1", 1);
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	unsetenv("TLOG_ROOTDIR_NO_READAHEAD");
	do {
		cr_assert_eq(src->ops->next(src, &e), 0);
	} while (strlen(e.path) < 150 * 2 - 1);
	/* the directory at depth 88 is open, its parent (depth 87) closed */
	for (int i = 0; i < 88; i++)
		strcat(from, i ? "/d" : "d");
	cr_assert_eq(rename(at(from), at("moved")), 0);
	cr_assert_eq(src->ops->next(src, &e), 0, "%s", tlog_error_get());
	cr_assert_eq(strlen(e.path), 87 * 2 + 1, "%s", e.path);
	cr_assert_eq(e.path[87 * 2], 'm');
	cr_assert_eq(src->ops->next(src, &e), 0);
	cr_assert_str_eq(e.path, "z");
	cr_assert_eq(src->ops->next(src, &e), 1);
	tlog_source_close(src);
}

Test(rootdir_source, dir_estimate)
{
	static const char *const names[] = {
		"big", "empty", "fifo", "hard1", "link", "sparse", "sub", "sub/deep",
		"sub/deep/f", "tiny",
	};
	u64 bytes, want;
	struct stat st;

	make_tree();
	cr_assert_eq(stat(root, &st), 0);
	want = 12 * 4096 + (u64)st.st_blocks * 512;
	/* hard2 is hard1: its blocks count once */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cr_assert_eq(lstat(at(names[i]), &st), 0);
		want += (u64)st.st_blocks * 512;
	}
	cr_assert_eq(tlog_source_estimate_dir(root, &bytes), 0);
	cr_assert_eq(bytes, want, "%llu, wanted %llu", (unsigned long long)bytes,
		     (unsigned long long)want);
	cr_assert_lt(bytes, 4 * MIB, "the sparse file's holes count for nothing");
}

Test(rootdir_source, dir_errors_name_the_path)
{
	struct tlog_source *src;
	pid_t pid;
	int status;

	tlog_error_clear();
	cr_assert_eq(tlog_source_open_dir("/nonexistent/rootdir", &src), -ENOENT);
	cr_assert(error_names("/nonexistent/rootdir"));
	cr_assert_eq(tlog_source_open("/nonexistent/x", &src), -ENOENT);

	make_root();
	write_file("plain", "p", 1);
	cr_assert_eq(tlog_source_open_dir(at("plain"), &src), -ENOTDIR);
	if (geteuid() != 0)
		return;

	/* an unreadable file, seen by a user who may not read it */
	cr_assert_eq(chmod(root, 0755), 0);
	cr_assert_eq(mkdir(at("a"), 0755), 0);
	write_file("a/secret", "s", 1);
	cr_assert_eq(chmod(at("a/secret"), 0), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int ret = 1;

		if (setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 &&
		    setresuid(65534, 65534, 65534) == 0 && tlog_source_open_dir(root, &src) == 0) {
			struct tlog_src_entry e;
			int err;

			while ((err = src->ops->next(src, &e)) == 0)
				;
			ret = err == -EACCES && error_names("a/secret") ? 0 : 2;
			tlog_source_close(src);
		}
		_exit(ret);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
}

/* ---- read-ahead (a worker thread walks ahead of the caller) ---- */

#define GEN_DIRS	12
#define GEN_FILES	300

/*
 * A tree of some thousands of entries: in each directory files of sizes
 * around the read-ahead's cut (256 KiB) and the 1 MiB block, sparse ones,
 * symlinks, xattrs, hard links across directories, FIFOs, nested dirs.
 */
static void make_big_tree(void)
{
	static unsigned char buf[MIB + 4096];
	char rel[64], rel2[64];

	make_root();
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = pattern(i);
	for (int d = 0; d < GEN_DIRS; d++) {
		snprintf(rel, sizeof(rel), "d%02d", d);
		cr_assert_eq(mkdir(at(rel), 0755), 0);
		snprintf(rel, sizeof(rel), "d%02d/sub", d);
		cr_assert_eq(mkdir(at(rel), 0755), 0);
		for (int f = 0; f < GEN_FILES; f++) {
			static const size_t sizes[] = { 0, 1, 100, 4096, 5000, 65536, 256 << 10,
							(256 << 10) + 1, MIB + 17 };
			size_t size = f % 40 == 7 ? sizes[f / 40 % 9] : (size_t)(f * 37 + d) % 9000;

			snprintf(rel, sizeof(rel), "d%02d/%sf%03d", d, f % 3 ? "" : "sub/", f);
			if (f % 50 == 11) {
				const char *to = f % 100 == 11 ? "somewhere/else" : "f001";

				cr_assert_eq(symlink(to, at(rel)), 0);
				continue;
			}
			if (f % 97 == 5) {
				cr_assert_eq(mkfifo(at(rel), 0600), 0);
				continue;
			}
			write_file(rel, buf + f, size);
			if (f % 31 == 3) {
				int fd = open(at(rel), O_WRONLY);

				cr_assert(fd >= 0);
				cr_assert_eq(pwrite(fd, "end", 3, 3 * MIB + f), 3);
				close(fd);
			}
			if (f % 7 == 2)
				cr_assert_eq(setxattr(at(rel), "user.n", rel, strlen(rel), 0), 0);
			if (f % 13 == 4)
				cr_assert_eq(setxattr(at(rel), "user.big", buf, 3000, 0), 0);
			if (f % 61 == 9 && d) {
				snprintf(rel2, sizeof(rel2), "d%02d/z-link%03d", d - 1, f);
				cr_assert_eq(link(at(rel), at(rel2)), 0);
			}
		}
	}
}

/* Append @len bytes to @out. */
static void put(FILE *out, const void *p, size_t len)
{
	cr_assert_eq(fwrite(p, 1, len, out), len);
}

/*
 * Everything the directory source gives, in order, as bytes: entries
 * with every field, xattrs, blocks with their offsets and data, whether
 * there is a descriptor, the error (number and message) that ends it.
 * @stop_after: stop after that many entries (0: never).
 */
static char *stream_of(const char *dir, bool readahead, size_t stop_after, size_t *len)
{
	struct tlog_source *src;
	struct tlog_src_entry e;
	char *mem = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&mem, len);
	int ret;

	cr_assert_not_null(out);
	if (readahead)
		unsetenv("TLOG_ROOTDIR_NO_READAHEAD");
	else
		setenv("TLOG_ROOTDIR_NO_READAHEAD", "1", 1);
	cr_assert_eq(tlog_source_open_dir(dir, &src), 0);
	unsetenv("TLOG_ROOTDIR_NO_READAHEAD");
	while ((ret = src->ops->next(src, &e)) == 0) {
		const void *buf;
		size_t blen;
		u64 off;
		int fd = src->ops->data_fd(src);

		fprintf(out, "%s|%o %u %u %llu %llu %lld.%ld %lld.%ld %lld.%ld %d %lld.%ld %llu %u",
			e.path, e.mode, e.uid, e.gid, (unsigned long long)e.rdev,
			(unsigned long long)e.size, (long long)e.atime.tv_sec, e.atime.tv_nsec,
			(long long)e.mtime.tv_sec, e.mtime.tv_nsec, (long long)e.ctime.tv_sec,
			e.ctime.tv_nsec, e.has_btime, (long long)e.btime.tv_sec, e.btime.tv_nsec,
			(unsigned long long)e.link_id, e.nlink);
		fprintf(out, " [%s] fd %d\n", e.symlink ? e.symlink : "-", fd >= 0);
		cr_assert_eq(e.hardlink, NULL);
		cr_assert_eq(fd >= 0, S_ISREG(e.mode), "%s", e.path);
		for (size_t i = 0; i < e.nr_xattrs; i++) {
			fprintf(out, "x %s %zu:", e.xattrs[i].name, e.xattrs[i].size);
			put(out, e.xattrs[i].value, e.xattrs[i].size);
			fputc('\n', out);
		}
		while (S_ISREG(e.mode) &&
		       (ret = src->ops->read_data(src, &buf, &blen, &off)) == 0) {
			fprintf(out, "b %llu %zu:", (unsigned long long)off, blen);
			put(out, buf, blen);
			fputc('\n', out);
		}
		if (ret < 0)
			break;
		if (++n == stop_after)
			break;
	}
	if (ret < 0)
		fprintf(out, "error %d %s\n", ret, tlog_error_get());
	else
		fprintf(out, "end %d\n", ret);
	tlog_source_close(src);
	fclose(out);
	return mem;
}

static size_t count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	size_t n = 0;

	cr_assert_not_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* The same entries, fields, blocks and bytes with the worker as without. */
Test(rootdir_source, dir_readahead_same_stream)
{
	size_t len1, len2, fds = count_fds();
	char *s1, *s2;

	make_big_tree();
	/* a first walk moves the symlinks' atimes (readlink) once and for all */
	free(stream_of(root, false, 0, &len1));
	s1 = stream_of(root, false, 0, &len1);
	s2 = stream_of(root, true, 0, &len2);
	cr_assert_gt(len1, 20 * MIB, "the tree has its data");
	cr_assert(len1 > 6 && !memcmp(s1 + len1 - 6, "end 1\n", 6), "the walk ends well");
	cr_assert_eq(len1, len2, "%zu bytes without read-ahead, %zu with", len1, len2);
	cr_assert(!memcmp(s1, s2, len1), "the streams differ");
	free(s2);
	/* and again: the worker's timing changes nothing */
	s2 = stream_of(root, true, 0, &len2);
	cr_assert(len1 == len2 && !memcmp(s1, s2, len1));
	free(s1);
	free(s2);
	cr_assert_eq(count_fds(), fds, "descriptors left open");
}

/* A caller that stops anywhere (before the first entry, early, midway) leaves nothing behind. */
Test(rootdir_source, dir_readahead_stops_early)
{
	static const size_t stops[] = { 1, 2, 17, 1000, 1500, 3000 };
	struct tlog_source *src;
	struct tlog_src_entry e;
	size_t fds = count_fds();
	const void *buf;
	size_t len;
	u64 off;

	make_big_tree();
	/* closed before the first entry */
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	tlog_source_close(src);
	/* the symlinks' atimes moved once and for all (readlink) */
	free(stream_of(root, false, 0, &len));
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		size_t len1, len2;
		char *s1 = stream_of(root, false, stops[i], &len1);
		char *s2 = stream_of(root, true, stops[i], &len2);

		cr_assert(len1 == len2 && !memcmp(s1, s2, len1), "stopped after %zu", stops[i]);
		free(s1);
		free(s2);
	}
	/* stopped in the middle of a file's data, large or small */
	cr_assert_eq(tlog_source_open_dir(root, &src), 0);
	for (int big = 0; big < 2;) {
		cr_assert_eq(src->ops->next(src, &e), 0);
		if (!S_ISREG(e.mode) || !e.size)
			continue;
		if ((!big && e.size <= 256 * 1024) || (big && e.size > MIB)) {
			cr_assert_eq(src->ops->read_data(src, &buf, &len, &off), 0);
			big++;
		}
	}
	tlog_source_close(src);
	cr_assert_eq(count_fds(), fds, "descriptors left open");
}

/*
 * Errors in the middle of the walk come at the same point, with the same
 * message, with the worker as without: a file and a directory the user
 * may not read.
 */
Test(rootdir_source, dir_readahead_errors_in_order)
{
	static const char *const bad[] = { "d05/f100", "d07/sub" };
	pid_t pid;
	int status;

	if (geteuid() != 0)
		return;
	make_big_tree();
	cr_assert_eq(chmod(root, 0755), 0);
	for (size_t i = 0; i < 2; i++) {
		cr_assert_eq(chmod(at(bad[i]), 0), 0);
		pid = fork();
		cr_assert(pid >= 0);
		if (pid == 0) {
			size_t len1, len2;
			char *s1, *s2;

			if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
			    setresuid(65534, 65534, 65534))
				_exit(1);
			free(stream_of(root, false, 0, &len1));	/* atimes of symlinks */
			s1 = stream_of(root, false, 0, &len1);
			s2 = stream_of(root, true, 0, &len2);
			if (!memmem(s1, len1, "error -13 ", 10) ||
			    !memmem(s1, len1, bad[i], strlen(bad[i])))
				_exit(2);
			_exit(len1 == len2 && !memcmp(s1, s2, len1) ? 0 : 3);
		}
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: status %d", bad[i],
			  status);
		cr_assert_eq(chmod(at(bad[i]), i ? 0700 : 0644), 0);
	}
}

/* ---- archives ---- */

static char archive_path[4200];

struct acl_in {
	int type, perm, tag, id;
};

struct ent_in {
	const char *path;
	mode_t mode;
	int uid, gid;
	dev_t rdev;
	const char *hardlink, *symlink;
	u64 size;
	const char *xname;
	const char *xval;
	size_t xsize;
	const struct acl_in *acl;
	size_t nr_acl;
	u64 sparse[2][2];	/* offset, length; length 0: not sparse */
};

#define ACL_A	ARCHIVE_ENTRY_ACL_TYPE_ACCESS
#define ACL_D	ARCHIVE_ENTRY_ACL_TYPE_DEFAULT

static const struct acl_in file_acl[] = {
	{ ACL_A, 6, ARCHIVE_ENTRY_ACL_USER_OBJ, -1 },
	{ ACL_A, 4, ARCHIVE_ENTRY_ACL_GROUP_OBJ, -1 },
	{ ACL_A, 0, ARCHIVE_ENTRY_ACL_OTHER, -1 },
	{ ACL_A, 7, ARCHIVE_ENTRY_ACL_USER, 1001 },
	{ ACL_A, 5, ARCHIVE_ENTRY_ACL_GROUP, 2002 },
	{ ACL_A, 7, ARCHIVE_ENTRY_ACL_MASK, -1 },
};

/* no mask: the reader makes one */
static const struct acl_in dir_acl[] = {
	{ ACL_D, 7, ARCHIVE_ENTRY_ACL_USER_OBJ, -1 },
	{ ACL_D, 5, ARCHIVE_ENTRY_ACL_GROUP_OBJ, -1 },
	{ ACL_D, 5, ARCHIVE_ENTRY_ACL_OTHER, -1 },
	{ ACL_D, 7, ARCHIVE_ENTRY_ACL_USER, 1001 },
};

static const struct acl_in clash_acl[] = {
	{ ACL_A, 7, ARCHIVE_ENTRY_ACL_USER, 5 },
};

/* system.posix_acl_access as an xattr: user::rw- user:7:r-- group::r-- mask::r-- other::--- */
static const char raw_acl[] =
	"\x02\0\0\0"
	"\x01\0\x06\0\xff\xff\xff\xff"
	"\x02\0\x04\0\x07\0\0\0"
	"\x04\0\x04\0\xff\xff\xff\xff"
	"\x10\0\x04\0\xff\xff\xff\xff"
	"\x20\0\0\0\xff\xff\xff\xff";

static const struct ent_in archive_ents[] = {
	{ .path = "./", .mode = S_IFDIR | 0755, .xname = "user.root", .xval = "R", .xsize = 1 },
	{ .path = "./a//b/", .mode = S_IFDIR | 0750, .uid = 1, .gid = 2,
	  .acl = dir_acl, .nr_acl = 4 },
	{ .path = "a/b/file", .mode = S_IFREG | 0640, .uid = 1000, .gid = 100, .size = 10,
	  .xname = "user.k", .xval = "v\0w", .xsize = 3, .acl = file_acl, .nr_acl = 6 },
	{ .path = "sparse", .mode = S_IFREG | 0600, .size = 4 * MIB,
	  .sparse = { { MIB, 4096 }, { 3 * MIB, 4096 } } },
	{ .path = "hl", .mode = S_IFREG | 0640, .hardlink = "./a/b//file" },
	{ .path = "sym", .mode = S_IFLNK | 0777, .symlink = "a/b/file" },
	{ .path = "dev", .mode = S_IFCHR | 0620, .gid = 5, .rdev = 0 },
	{ .path = "/abs//x", .mode = S_IFREG | 0644, .size = 3 },
	{ .path = "aclx", .mode = S_IFREG | 0600, .xname = "system.posix_acl_access",
	  .xval = raw_acl, .xsize = sizeof(raw_acl) - 1, .acl = clash_acl, .nr_acl = 1 },
	{ .path = "x/../../evil", .mode = S_IFREG | 0644, .size = 1 },
};

#define NR_ARCHIVE_ENTS	(sizeof(archive_ents) / sizeof(archive_ents[0]))
#define DEV_RDEV	makedev(4, 64)
#define MTIME_SEC	1700000000
#define MTIME_NSEC	123456789

static unsigned char file_byte(const struct ent_in *in, u64 off)
{
	u64 pos = off;

	if (!in->sparse[0][1])
		return (unsigned char)('0' + pos % 10);
	for (int i = 0; i < 2; i++)
		if (off >= in->sparse[i][0] && off < in->sparse[i][0] + in->sparse[i][1])
			return (unsigned char)(0x40 + i);
	return 0;
}

static void write_entry(struct archive *a, struct archive_entry *ae, const struct ent_in *in)
{
	static unsigned char buf[64 * 1024];

	archive_entry_clear(ae);
	archive_entry_copy_pathname(ae, in->path);
	archive_entry_set_mode(ae, in->mode);
	archive_entry_set_uid(ae, in->uid);
	archive_entry_set_gid(ae, in->gid);
	archive_entry_set_mtime(ae, MTIME_SEC, MTIME_NSEC);
	archive_entry_set_atime(ae, MTIME_SEC + 1, 5);
	archive_entry_set_ctime(ae, MTIME_SEC + 2, 9);
	archive_entry_set_birthtime(ae, MTIME_SEC - 1, 7);
	if (S_ISCHR(in->mode))
		archive_entry_set_rdev(ae, DEV_RDEV);
	if (in->hardlink)
		archive_entry_copy_hardlink(ae, in->hardlink);
	if (in->symlink)
		archive_entry_copy_symlink(ae, in->symlink);
	archive_entry_set_size(ae, (la_int64_t)in->size);
	if (in->xname)
		archive_entry_xattr_add_entry(ae, in->xname, in->xval, in->xsize);
	for (size_t i = 0; i < in->nr_acl; i++)
		cr_assert_eq(archive_entry_acl_add_entry(ae, in->acl[i].type, in->acl[i].perm,
							 in->acl[i].tag, in->acl[i].id, NULL),
			     ARCHIVE_OK);
	for (int i = 0; i < 2; i++)
		if (in->sparse[i][1])
			archive_entry_sparse_add_entry(ae, (la_int64_t)in->sparse[i][0],
						       (la_int64_t)in->sparse[i][1]);
	cr_assert_geq(archive_write_header(a, ae), ARCHIVE_WARN, "%s", archive_error_string(a));
	for (u64 off = 0; off < in->size;) {
		size_t n = in->size - off < sizeof(buf) ? (size_t)(in->size - off) : sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = file_byte(in, off + i);
		cr_assert_eq(archive_write_data(a, buf, n), (la_ssize_t)n);
		off += n;
	}
}

/*
 * The first @nr entries of the test archive into a file in a new
 * temporary directory: pax restricted, or with @gzip full pax and gzip.
 */
static void make_archive(bool gzip, size_t nr)
{
	struct archive *a = archive_write_new();
	struct archive_entry *ae = archive_entry_new();

	make_root();
	snprintf(archive_path, sizeof(archive_path), "%s/test.tar%s", root, gzip ? ".gz" : "");
	if (gzip) {
		cr_assert_eq(archive_write_set_format_pax(a), ARCHIVE_OK);
		cr_assert_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	} else {
		cr_assert_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	}
	cr_assert_eq(archive_write_open_filename(a, archive_path), ARCHIVE_OK);
	for (size_t i = 0; i < nr; i++)
		write_entry(a, ae, &archive_ents[i]);
	cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	archive_entry_free(ae);
}

static void assert_acl(const struct rec *r, const char *name, const u16 (*want)[3], size_t nr)
{
	const unsigned char *v;
	size_t size;

	v = (const unsigned char *)xattr_of(r, name, &size);
	cr_assert_not_null(v, "%s: no %s", r->path, name);
	cr_assert_eq(size, 4 + nr * 8, "%s: %s of %zu bytes", r->path, name, size);
	cr_assert(v[0] == 2 && !v[1] && !v[2] && !v[3]);
	for (size_t i = 0; i < nr; i++) {
		const unsigned char *p = v + 4 + i * 8;
		u32 id = p[4] | p[5] << 8 | p[6] << 16 | (u32)p[7] << 24;

		cr_assert_eq(p[0] | p[1] << 8, want[i][0], "%s entry %zu tag", name, i);
		cr_assert_eq(p[2] | p[3] << 8, want[i][1], "%s entry %zu perm", name, i);
		cr_assert_eq(id, want[i][2] == 0xffff ? 0xffffffffU : want[i][2],
			     "%s entry %zu id", name, i);
	}
}

/*
 * pax restricted has the mtime (with nanoseconds where an entry needs an
 * extended header anyway) and nothing else: the other times are the
 * mtime.  Full pax has them all.
 */
static void assert_archive_times(const struct rec *r, bool full)
{
	bool ext = full || r->nr_x || !strcmp(r->path, "sparse");
	const struct timespec *m = &r->e.mtime;

	cr_assert_eq(m->tv_sec, MTIME_SEC, "%s", r->path);
	cr_assert_eq(m->tv_nsec, ext ? MTIME_NSEC : 0, "%s", r->path);
	if (!full) {
		cr_assert(r->e.atime.tv_sec == m->tv_sec && r->e.atime.tv_nsec == m->tv_nsec);
		cr_assert(r->e.ctime.tv_sec == m->tv_sec && r->e.ctime.tv_nsec == m->tv_nsec);
		cr_assert(!r->e.has_btime);
		return;
	}
	cr_assert(r->e.atime.tv_sec == MTIME_SEC + 1 && r->e.atime.tv_nsec == 5, "%s", r->path);
	cr_assert(r->e.ctime.tv_sec == MTIME_SEC + 2 && r->e.ctime.tv_nsec == 9, "%s", r->path);
	cr_assert(r->e.has_btime, "%s", r->path);
	cr_assert(r->e.btime.tv_sec == MTIME_SEC - 1 && r->e.btime.tv_nsec == 7, "%s", r->path);
}

/* What the test archive reads as, up to the entry with ".." (that error is the caller's). */
static void assert_archive_entries(bool full)
{
	static const char *const order[] = {
		"", "a/b", "a/b/file", "sparse", "hl", "sym", "dev", "abs/x", "aclx",
	};
	static const u16 access[][3] = {
		{ 0x01, 6, 0xffff }, { 0x02, 7, 1001 }, { 0x04, 4, 0xffff },
		{ 0x08, 5, 2002 }, { 0x10, 7, 0xffff }, { 0x20, 0, 0xffff },
	};
	static const u16 deflt[][3] = {
		{ 0x01, 7, 0xffff }, { 0x02, 7, 1001 }, { 0x04, 5, 0xffff },
		{ 0x10, 7, 0xffff }, { 0x20, 5, 0xffff },
	};
	const char *v;
	size_t size;
	struct rec *r;

	assert_paths(order, sizeof(order) / sizeof(order[0]));
	for (size_t i = 0; i < nr_recs; i++) {
		cr_assert(!recs[i].has_fd);
		if (recs[i].hardlink)
			continue;
		assert_archive_times(&recs[i], full);
	}

	r = find("");
	cr_assert_eq(r->e.mode, S_IFDIR | 0755);
	cr_assert_eq(r->nr_x, 1);
	v = xattr_of(r, "user.root", &size);
	cr_assert(v && size == 1 && *v == 'R');

	r = find("a/b");
	cr_assert_eq(r->e.mode, S_IFDIR | 0750);
	cr_assert(r->e.uid == 1 && r->e.gid == 2);
	cr_assert_eq(r->nr_x, 1, "a default ACL only");
	assert_acl(r, "system.posix_acl_default", deflt, 5);

	/* the mode's group bits are the mask, as on the file the ACL came from */
	r = find("a/b/file");
	cr_assert_eq(r->e.mode, S_IFREG | 0670, "mode %o", r->e.mode);
	cr_assert(r->e.uid == 1000 && r->e.gid == 100 && r->e.size == 10);
	cr_assert_eq(r->nr_x, 2, "the xattr once, and the ACL");
	v = xattr_of(r, "user.k", &size);
	cr_assert(v && size == 3 && !memcmp(v, "v\0w", 3));
	assert_acl(r, "system.posix_acl_access", access, 6);
	cr_assert_eq(r->nr_blocks, 1);
	cr_assert(!memcmp(r->data, "0123456789", 10));

	r = find("sparse");
	cr_assert_eq(r->e.size, 4 * MIB);
	cr_assert_eq(r->nr_blocks, 2, "%zu blocks", r->nr_blocks);
	cr_assert(r->boff[0] == MIB && r->blen[0] == 4096);
	cr_assert(r->boff[1] == 3 * MIB && r->blen[1] == 4096);
	cr_assert(r->data[MIB] == 0x40 && r->data[3 * MIB + 4095] == 0x41);

	r = find("hl");
	cr_assert_str_eq(r->hardlink, "a/b/file");
	cr_assert_eq(r->nr_blocks, 0);

	r = find("sym");
	cr_assert(S_ISLNK(r->e.mode));
	cr_assert_str_eq(r->symlink, "a/b/file");

	r = find("dev");
	cr_assert_eq(r->e.mode, S_IFCHR | 0620);
	cr_assert_eq(r->e.rdev, DEV_RDEV);
	cr_assert_eq(r->e.gid, 5);

	r = find("abs/x");
	cr_assert_eq(r->e.size, 3);
	cr_assert(!memcmp(r->data, "012", 3));

	/* the archive's own system.posix_acl_access wins over its ACL, and sets the mode */
	r = find("aclx");
	cr_assert_eq(r->e.mode, S_IFREG | 0640, "mode %o", r->e.mode);
	cr_assert_eq(r->nr_x, 1);
	v = xattr_of(r, "system.posix_acl_access", &size);
	cr_assert(v && size == sizeof(raw_acl) - 1 && !memcmp(v, raw_acl, size));
}

static void read_archive_back(const char *path, bool full)
{
	struct tlog_source *src;
	int err;

	cr_assert_eq(tlog_source_open(path, &src), 0, "%s", tlog_error_get());
	cr_assert_null(src->ops->data_fd);
	tlog_error_clear();
	err = collect(src, true);
	tlog_source_close(src);
	cr_assert_eq(err, -EINVAL, "%d: %s", err, tlog_error_get());
	cr_assert(error_names("x/../../evil"), "%s", tlog_error_get());
	assert_archive_entries(full);
}

Test(rootdir_source, archive_pax)
{
	struct tlog_source *src;
	struct stat st;

	make_archive(false, NR_ARCHIVE_ENTS);
	read_archive_back(archive_path, false);
	cr_assert_eq(tlog_source_open_archive(archive_path, &src), 0);
	cr_assert_eq(stat(archive_path, &st), 0);
	cr_assert_eq(src->estimated_bytes, (u64)st.st_size);
	tlog_source_close(src);
}

Test(rootdir_source, archive_gzip)
{
	struct tlog_source *src;

	make_archive(true, NR_ARCHIVE_ENTS);
	read_archive_back(archive_path, true);
	cr_assert_eq(tlog_source_open_archive(archive_path, &src), 0);
	cr_assert_eq(src->estimated_bytes, 0, "a compressed archive's size says nothing");
	tlog_source_close(src);
}

Test(rootdir_source, archive_stdin)
{
	int fd;

	make_archive(true, NR_ARCHIVE_ENTS);
	fd = open(archive_path, O_RDONLY);
	cr_assert(fd >= 0);
	cr_assert_eq(dup2(fd, 0), 0);
	close(fd);
	read_archive_back("-", true);
}

/* An ACL that names its user instead of numbering it (GNU tar --acls): looked up here. */
static int read_named_acl(const char *user, struct rec **r)
{
	const struct acl_in acl = { ACL_A, 7, ARCHIVE_ENTRY_ACL_USER, -1 };
	struct archive *a = archive_write_new();
	struct archive_entry *ae = archive_entry_new();
	const struct ent_in in = { .path = "named", .mode = S_IFREG | 0600 };
	struct tlog_source *src;
	int err;

	cr_assert_eq(archive_write_set_format_pax(a), ARCHIVE_OK);
	cr_assert_eq(archive_write_open_filename(a, at("named.tar")), ARCHIVE_OK);
	write_entry(a, ae, &in);
	archive_entry_copy_pathname(ae, "named2");
	cr_assert_eq(archive_entry_acl_add_entry(ae, acl.type, acl.perm, acl.tag, acl.id, user),
		     ARCHIVE_OK);
	cr_assert_geq(archive_write_header(a, ae), ARCHIVE_WARN);
	cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	archive_entry_free(ae);
	cr_assert_eq(tlog_source_open_archive(at("named.tar"), &src), 0);
	tlog_error_clear();
	err = collect(src, false);
	tlog_source_close(src);
	*r = nr_recs == 2 ? &recs[1] : NULL;
	return err;
}

Test(rootdir_source, archive_acl_names)
{
	static const u16 want[][3] = {
		{ 0x01, 6, 0xffff }, { 0x02, 7, 0 }, { 0x04, 0, 0xffff },
		{ 0x10, 7, 0xffff }, { 0x20, 0, 0xffff },
	};
	struct rec *r;

	make_root();
	cr_assert_eq(read_named_acl("root", &r), 0, "%s", tlog_error_get());
	cr_assert_not_null(r);
	assert_acl(r, "system.posix_acl_access", want, 5);
	cr_assert_eq(r->e.mode, S_IFREG | 0670, "mode %o: the mask made up", r->e.mode);
	free_recs();
	cr_assert_eq(read_named_acl("no-such-user-here", &r), -EINVAL);
	cr_assert(error_names("named2") && error_names("no-such-user-here"), "%s",
		  tlog_error_get());
}

static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *buf;
	int fd = open(path, O_RDONLY);

	cr_assert(fd >= 0 && fstat(fd, &st) == 0);
	buf = malloc((size_t)st.st_size);
	cr_assert_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/*
 * Each prefix of @whole shorter than @end read as an archive: the errors, and the prefixes
 * that read without one.  The prefixes are in a memfd (freeing a file's
 * blocks on a disk mounted with discard takes long).
 */
static void read_cuts(const unsigned char *whole, size_t end, size_t step, int *failed,
		      int *whole_reads)
{
	int mfd = memfd_create("cut", 0);
	char path[64];

	cr_assert(mfd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	for (size_t cut = 100; cut < end; cut += step) {
		struct tlog_source *src;
		int err;

		cr_assert_eq(ftruncate(mfd, 0), 0);
		cr_assert_eq(pwrite(mfd, whole, cut, 0), (ssize_t)cut);
		tlog_error_clear();
		err = tlog_source_open_archive(path, &src);
		if (!err) {
			err = collect(src, true);
			tlog_source_close(src);
		}
		free_recs();
		if (!err) {
			(*whole_reads)++;
			continue;
		}
		cr_assert(err == -EIO || err == -EINVAL, "cut at %zu: %d", cut, err);
		cr_assert_not_null(tlog_error_get());
		(*failed)++;
	}
	close(mfd);
}

/*
 * Cut anywhere: an error, never a crash.  (A tar cut exactly between two
 * entries is a shorter archive: the end marker is optional; the cuts here
 * are never on a 512-byte boundary.)
 */
Test(rootdir_source, archive_truncated)
{
	unsigned char *whole;
	int failed = 0, whole_reads = 0;
	size_t len;

	make_archive(false, NR_ARCHIVE_ENTS - 1);
	whole = slurp(archive_path, &len);
	cr_assert_gt(len, 4096);
	/* the last 1024 bytes are the end marker, which a reader need not see */
	read_cuts(whole, len - 1024, 1531, &failed, &whole_reads);
	free(whole);
	cr_assert_eq(whole_reads, 0, "%d cuts read as whole archives", whole_reads);
	cr_assert_gt(failed, 5);

	remove_tree();
	make_archive(true, NR_ARCHIVE_ENTS - 1);
	whole = slurp(archive_path, &len);
	failed = whole_reads = 0;
	/* the trailer's checksum, after the end marker, need not be read either */
	read_cuts(whole, len - 16, 37, &failed, &whole_reads);
	free(whole);
	cr_assert_eq(whole_reads, 0, "%d cuts of the gzip read as whole", whole_reads);
}

Test(rootdir_source, archive_not_an_archive)
{
	struct tlog_source *src;
	char junk[4096];

	make_root();
	memset(junk, 'j', sizeof(junk));
	write_file("junk", junk, sizeof(junk));
	tlog_error_clear();
	cr_assert_eq(tlog_source_open(at("junk"), &src), -EINVAL);
	cr_assert(error_names("junk"), "%s", tlog_error_get());
	cr_assert_lt(tlog_source_open_archive(at("nothere"), &src), 0);
}
