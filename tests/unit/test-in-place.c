// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reading tree blocks in place (blockdev.h, extent-io.c) from a real file:
 * a read-only open maps the image under a read lease and its blocks are
 * the mapping's; the answers are the same as from copies.  A writer that
 * comes along waits until the reader has copied what it holds and let the
 * lease go, and what the reader then holds is what it checked, not what
 * the writer wrote.  The reader's own process cannot open the image for
 * writing behind its back; an image someone already writes is read, not
 * mapped, and so is an image on tmpfs, whose holes a mapping would fill.
 * And a writer that did not wait (the kernel's lease-break-time ran out)
 * is caught: the blocks it changed fail their checks again when they are
 * copied out, and the filesystem refuses to read on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <criterion/criterion.h>

#include "blockdev.h"
#include "errctx.h"
#include "extent-io.h"
#include "mem-fs.h"
#include "transaction.h"
#include "volumes.h"

#define NR_INODES	4000	/* about 60 leaves of inode items */
#define FIRST_INO	257
#define MAX_LEAVES	256

static char image[] = "/tmp/tlogctl-in-place.XXXXXX";
static char shm_image[] = "/dev/shm/tlogctl-in-place.XXXXXX";

/* A filesystem with NR_INODES inode items in its fs tree, on a memory device. */
static struct tlog_bdev *make_fs(void)
{
	struct tlog_bdev *mem = memfs_make();
	struct tlog_fs *fs = memfs_open(mem, 0, 0);
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_trans *trans;

	cr_assert_eq(tlog_trans_start(fs, &trans), 0, "%s", tlog_error_get());
	for (u64 ino = FIRST_INO; ino < FIRST_INO + NR_INODES; ino++)
		cr_assert_eq(memfs_create_inode(trans, root, ino, ino * 4096, 0), 0, "%s",
			     tlog_error_get());
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
	tlog_close(fs);
	return mem;
}

/*
 * The memory device's bytes in a sparse file at @path (a mkstemp
 * template), as cp --sparse=always leaves them: every zero page a hole,
 * tree blocks included.
 */
static void write_image(struct tlog_bdev *mem, char *path)
{
	const u8 *data = tlog_bdev_memory_data(mem);
	static const u8 zero[4096];
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	for (u64 off = 0; off < mem->size; off += sizeof(zero))
		if (memcmp(data + off, zero, sizeof(zero)))
			cr_assert_eq(pwrite(fd, data + off, sizeof(zero), (off_t)off),
				     (ssize_t)sizeof(zero));
	cr_assert_eq(ftruncate(fd, (off_t)mem->size), 0);
	close(fd);
}

static void setup(void)
{
	struct tlog_bdev *mem = make_fs();

	write_image(mem, image);
	tlog_bdev_close(mem);
}

static void teardown(void)
{
	unlink(image);
}

static struct tlog_fs *open_path(const char *path, bool copies)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .read_copies = copies };
	struct tlog_fs *fs;

	cr_assert_eq(tlog_open(path, &opts, &fs), 0, "open: %s", tlog_error_get());
	return fs;
}

static struct tlog_fs *open_image(bool copies)
{
	return open_path(image, copies);
}

/* Every item of the fs tree, keys and bytes, folded into one number (FNV-1a). */
struct digest {
	u64 items;
	u64 hash;
	int ret;		/* the walk's end: 1, or an error */
	u64 leaves[MAX_LEAVES];	/* logical addresses */
	int nr_leaves;
};

static void fold(u64 *hash, const void *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		*hash = (*hash ^ ((const u8 *)p)[i]) * 0x100000001b3ULL;
}

static void digest_tree(struct btrfs_root *root, struct digest *d)
{
	struct btrfs_key min = { 0, 0, 0 }, max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_tree_iter iter;

	memset(d, 0, sizeof(*d));
	d->hash = 0xcbf29ce484222325ULL;
	btrfs_for_each_item(root, &iter, &min, &max) {
		if (d->nr_leaves == 0 || d->leaves[d->nr_leaves - 1] != iter.leaf->start) {
			cr_assert_lt(d->nr_leaves, MAX_LEAVES);
			d->leaves[d->nr_leaves++] = iter.leaf->start;
		}
		fold(&d->hash, &iter.key, sizeof(iter.key));
		fold(&d->hash, btrfs_item_ptr(iter.leaf, iter.slot),
		     btrfs_item_size(iter.leaf, iter.slot));
		d->items++;
	}
	d->ret = iter.ret;
	btrfs_tree_iter_end(&iter);
}

static void digest_fs_tree(struct tlog_fs *fs, struct digest *d)
{
	digest_tree(memfs_root(fs, BTRFS_FS_TREE_OBJECTID), d);
}

/* Whether every cached block of the walk is read in place. */
static bool leaves_in_place(struct tlog_fs *fs, const struct digest *d)
{
	for (int i = 0; i < d->nr_leaves; i++) {
		const struct extent_buffer *eb = btrfs_find_cached_block(fs, d->leaves[i]);

		if (!eb || !eb->in_place)
			return false;
	}
	return true;
}

TestSuite(in_place, .init = setup, .fini = teardown);

/* A read-only open reads in place, and sees what copies see. */
Test(in_place, same_answers_as_copies)
{
	struct tlog_fs *mapped = open_image(false), *copied = open_image(true);
	struct digest a, b;

	cr_assert(mapped->in_place, "a read-only file image is not read in place");
	cr_assert_not(copied->in_place);
	digest_fs_tree(mapped, &a);
	digest_fs_tree(copied, &b);
	cr_assert_eq(a.ret, 1, "%s", tlog_error_get());
	cr_assert_eq(b.ret, 1);
	cr_assert_eq(a.items, NR_INODES + 2, "%llu items", (unsigned long long)a.items);
	cr_assert_eq(a.items, b.items);
	cr_assert_eq(a.hash, b.hash);
	cr_assert_gt(a.nr_leaves, 20, "only %d leaves", a.nr_leaves);
	cr_assert(leaves_in_place(mapped, &a));
	cr_assert_not(leaves_in_place(copied, &b));
	tlog_close(mapped);
	tlog_close(copied);
}

/* Overwrite the blocks at @physical[] with 0xff once the open for writing gets through. */
static void writer(const u64 *physical, int nr, u32 nodesize)
{
	u8 junk[BTRFS_MAX_NODESIZE];
	int fd = open(image, O_WRONLY);	/* waits for the reader's lease */

	if (fd < 0)
		_exit(2);
	memset(junk, 0xff, nodesize);
	for (int i = 0; i < nr; i++)
		if (pwrite(fd, junk, nodesize, (off_t)physical[i]) != (ssize_t)nodesize)
			_exit(3);
	_exit(close(fd) ? 4 : 0);
}

static bool wait_revoked(struct tlog_fs *fs)
{
	const struct timespec ms = { .tv_nsec = 1000000 };

	for (int i = 0; i < 10000; i++) {
		if (tlog_bdev_map_revoked(fs->bdev))
			return true;
		nanosleep(&ms, NULL);
	}
	return false;
}

/*
 * A writer waits for the reader, which copies out what it checked; the
 * writer's bytes are then on disk, and only a block read again sees them.
 */
Test(in_place, writer_waits_and_reader_keeps_what_it_checked)
{
	struct tlog_fs *fs = open_image(false);
	u64 physical[2 * MAX_LEAVES];
	struct digest before, after;
	int status, nr = 0;
	pid_t pid;

	digest_fs_tree(fs, &before);
	cr_assert_eq(before.ret, 1);
	cr_assert(leaves_in_place(fs, &before));
	/* every copy (metadata is DUP) */
	for (int i = 0, copies; i < before.nr_leaves; i++, nr += copies) {
		copies = btrfs_map_block(fs, before.leaves[i], fs->nodesize, &physical[nr], 2);
		cr_assert_geq(copies, 1);
	}

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		writer(physical, nr, fs->nodesize);
	cr_assert(wait_revoked(fs), "the writer's open did not reach the reader");
	cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "the writer did not wait");

	/* the next block read copies out and lets go */
	digest_fs_tree(fs, &after);
	cr_assert_not(fs->in_place);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer: %d", status);
	cr_assert_eq(after.ret, 1, "%s", tlog_error_get());
	cr_assert_eq(after.items, before.items);
	cr_assert_eq(after.hash, before.hash);
	cr_assert_not(fs->image_changed);
	cr_assert_not(leaves_in_place(fs, &before));

	/* again after the writer: the same, from the copies */
	digest_fs_tree(fs, &after);
	cr_assert_eq(after.hash, before.hash);

	/* a leaf read anew is the writer's, and fails its checks */
	btrfs_forget_tree_block(fs, before.leaves[before.nr_leaves / 2]);
	digest_fs_tree(fs, &after);
	cr_assert_lt(after.ret, 0, "a leaf of 0xff bytes was read without error");
	tlog_close(fs);
}

/* The reader's own process: refused at once, not left waiting for itself. */
Test(in_place, own_write_open_is_refused)
{
	struct tlog_fs *fs = open_image(false);
	struct tlog_bdev *bdev;

	cr_assert(fs->in_place);
	cr_assert_eq(tlog_bdev_open_file(image, TLOG_BDEV_RDWR, &bdev), -EBUSY);
	cr_assert(strstr(tlog_error_get(), "open for reading in this program"), "%s",
		  tlog_error_get());
	tlog_close(fs);
	cr_assert_eq(tlog_bdev_open_file(image, TLOG_BDEV_RDWR, &bdev), 0, "%s", tlog_error_get());
	tlog_bdev_close(bdev);
}

/* An image open for writing (here by the test itself) is read, not mapped. */
Test(in_place, not_while_someone_writes)
{
	int fd = open(image, O_RDWR);
	struct tlog_fs *fs;
	struct digest d;

	cr_assert_geq(fd, 0);
	fs = open_image(false);
	cr_assert_not(fs->in_place, "mapped while open for writing");
	digest_fs_tree(fs, &d);
	cr_assert_eq(d.ret, 1);
	cr_assert_eq(d.items, NR_INODES + 2);
	tlog_close(fs);
	close(fd);
}

/* The data ranges of the file at @path folded into one number: its layout. */
static u64 data_map(const char *path)
{
	int fd = open(path, O_RDONLY);
	u64 hash = 0xcbf29ce484222325ULL;
	off_t pos = 0, end;

	cr_assert_geq(fd, 0);
	while ((pos = lseek(fd, pos, SEEK_DATA)) >= 0) {
		end = lseek(fd, pos, SEEK_HOLE);
		fold(&hash, &pos, sizeof(pos));
		fold(&hash, &end, sizeof(end));
		pos = end;
	}
	close(fd);
	return hash;
}

/*
 * On tmpfs a fault on a hole allocates a page in the file: an image there
 * is read, not mapped, and reading it leaves its holes alone.
 */
Test(in_place, not_on_tmpfs_whose_holes_a_mapping_fills)
{
	struct tlog_bdev *mem = make_fs();
	struct tlog_fs *fs;
	struct digest d;
	u64 before;

	write_image(mem, shm_image);
	tlog_bdev_close(mem);
	before = data_map(shm_image);
	fs = open_path(shm_image, false);
	cr_assert_not(fs->in_place, "an image on tmpfs is read in place");
	digest_fs_tree(fs, &d);
	tlog_close(fs);
	cr_assert_eq(d.ret, 1);
	cr_assert_eq(data_map(shm_image), before, "reading changed the image's holes");
	unlink(shm_image);
}

/* ---- a writer that did not wait: a memory device whose bytes the test changes ---- */

struct late_bdev {
	struct tlog_bdev *inner;
	bool revoked;
	bool ended;
};

static struct late_bdev *late_of(struct tlog_bdev *bdev)
{
	return bdev->priv;
}

static int late_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset)
{
	return tlog_bdev_read(late_of(bdev)->inner, buf, len, offset);
}

static int late_map_begin(struct tlog_bdev *bdev)
{
	(void)bdev;
	return 0;
}

static const u8 *late_map_read(struct tlog_bdev *bdev, u64 offset, size_t len)
{
	(void)len;
	return tlog_bdev_memory_data(late_of(bdev)->inner) + offset;
}

static bool late_map_revoked(struct tlog_bdev *bdev)
{
	return late_of(bdev)->revoked;
}

static void late_map_end(struct tlog_bdev *bdev)
{
	late_of(bdev)->ended = true;
}

static void late_close(struct tlog_bdev *bdev)
{
	tlog_bdev_close(late_of(bdev)->inner);
	free(bdev->priv);
}

static const struct tlog_bdev_ops late_ops = {
	.read = late_read, .map_begin = late_map_begin, .map_read = late_map_read,
	.map_revoked = late_map_revoked, .map_end = late_map_end, .close = late_close,
};

Test(in_place, writer_that_did_not_wait_is_caught)
{
	struct tlog_bdev *mem = make_fs(), *bdev = calloc(1, sizeof(*bdev));
	struct tlog_open_opts opts = { .super_mirror = -1 };
	struct late_bdev *lb = calloc(1, sizeof(*lb));
	struct digest before, after;
	struct btrfs_root *root;
	struct tlog_fs *fs;
	u64 physical;

	cr_assert(bdev && lb);
	lb->inner = mem;
	*bdev = (struct tlog_bdev){ .ops = &late_ops, .refs = 1, .name = strdup("late"),
				    .priv = lb, .size = mem->size };
	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0, "%s", tlog_error_get());
	cr_assert(fs->in_place);
	root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	digest_tree(root, &before);
	cr_assert_eq(before.ret, 1);

	/* a leaf changes under the reader, then the device asks for its bytes */
	cr_assert_eq(btrfs_map_block(fs, before.leaves[1], fs->nodesize, &physical, 1), 1);
	tlog_bdev_memory_data(mem)[physical + fs->nodesize / 2] ^= 0x5a;
	lb->revoked = true;

	digest_tree(root, &after);
	cr_assert(lb->ended, "the device was not let go");
	cr_assert_not(fs->in_place);
	cr_assert(fs->image_changed, "a changed block passed as unchanged");
	cr_assert_lt(after.ret, 0);
	cr_assert(strstr(tlog_error_get(), "changed while it was read"), "%s", tlog_error_get());
	/* the changed leaf is held as an empty one: nothing of it to read past */
	cr_assert_eq(btrfs_header_nritems_eb(btrfs_find_cached_block(fs, before.leaves[1])), 0);
	tlog_close(fs);
	tlog_bdev_close(bdev);
}
