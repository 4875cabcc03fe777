// SPDX-License-Identifier: GPL-2.0-only
/*
 * Read-ahead of tree blocks, counted where the bytes come from: a device
 * below the filesystem notes every read, scatter read and read-ahead hint
 * (on a file a hint makes the kernel read from disk, so it counts as a
 * read) as the 4 KiB units it touches.  The fs tree is three levels high:
 * small files, one big sparse file of 150,000 extent items, more small
 * files, the big file sharing a leaf with its neighbours on either side.
 *
 * Read-ahead must not cost a single seek on a small file anything: one
 * SEEK_DATA or SEEK_HOLE on a cold cache must read no unit that the same
 * seek with read-ahead off does not (read-ahead stops at the inode's last
 * key), on every small file, wherever it lies, with the same answer.
 * Once as a tool seeks (the file's open has cached the path to its inode
 * item) and once with that path dropped, so that the seek's own search
 * reads ahead below every node.  And the counting must see read-ahead at
 * all: a SEEK_DATA/SEEK_HOLE walk of the big file with it on reads the
 * leaves in a few large scatter reads instead of one read per block,
 * with the same answers and every leaf the walk needs read.
 *
 * Each test runs twice: reading blocks into buffers, and reading them in
 * place (blockdev.h), where a block touched is a read and read-ahead is
 * only hints, which must then ask for the leaves in the same few runs;
 * and with read-ahead on, no block may be touched in place before a hint
 * asked for all of it (the mapping would read it a page at a time).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "blockdev.h"
#include "errctx.h"
#include "extent-tree.h"
#include "file.h"
#include "mem-fs.h"
#include "transaction.h"
#include "volumes.h"

/* ---- a counting device: what was read, in 4 KiB units, and how often ---- */

#define UNIT_SHIFT	12
#define NR_UNITS	(MEMFS_SIZE >> UNIT_SHIFT)

/* Reads since count_mark(): units not read before it, calls. */
struct usage {
	u64 units;
	u64 calls;		/* reads and scatter reads, or blocks read in place */
	u64 readvs;		/* the scatter reads: read-ahead's */
	u64 hints;
	u64 unhinted;		/* in place: blocks touched that no hint asked for whole */
	u64 on_the_spot;	/* in place: blocks first asked for just before their touch */
	u64 asked_again;	/* units hinted that a hint had asked for already */
};

struct count_bdev {
	struct tlog_bdev *inner;
	struct usage total;		/* calls; units are counted in @seen */
	struct usage mark;		/* ...at count_mark() */
	u8 seen[NR_UNITS / 8];		/* units read or hinted */
	u8 seen_mark[NR_UNITS / 8];
	u8 hinted[NR_UNITS / 8];	/* units hinted */
	/* in place: blocks touched so far, and per unit that count at its first hint, + 1 */
	u64 touches;
	u64 hinted_at[NR_UNITS];
};

static struct count_bdev *count_of(struct tlog_bdev *bdev)
{
	return bdev->priv;
}

static void mark_units(struct tlog_bdev *bdev, u8 *map, u64 offset, u64 len)
{
	u64 end = offset + len < bdev->size ? offset + len : bdev->size;

	for (u64 u = offset >> UNIT_SHIFT; offset < end && u <= (end - 1) >> UNIT_SHIFT; u++)
		map[u / 8] |= (u8)(1U << (u % 8));
}

static void count_range(struct tlog_bdev *bdev, u64 offset, u64 len)
{
	mark_units(bdev, count_of(bdev)->seen, offset, len);
}

static int count_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset)
{
	count_of(bdev)->total.calls++;
	count_range(bdev, offset, len);
	return tlog_bdev_read(count_of(bdev)->inner, buf, len, offset);
}

static int count_readv(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset)
{
	u64 len = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	count_of(bdev)->total.calls++;
	count_of(bdev)->total.readvs++;
	count_range(bdev, offset, len);
	return tlog_bdev_readv(count_of(bdev)->inner, iov, iovcnt, offset);
}

static void count_readahead(struct tlog_bdev *bdev, u64 offset, u64 len)
{
	struct count_bdev *cb = count_of(bdev);
	u64 end = offset + len < bdev->size ? offset + len : bdev->size;

	cb->total.hints++;
	count_range(bdev, offset, len);
	mark_units(bdev, cb->hinted, offset, len);
	for (u64 u = offset >> UNIT_SHIFT; offset < end && u <= (end - 1) >> UNIT_SHIFT; u++) {
		if (cb->hinted_at[u])
			cb->total.asked_again++;
		else
			cb->hinted_at[u] = cb->touches + 1;
	}
	tlog_bdev_readahead(cb->inner, offset, len);
}

/*
 * Reading in place (blockdev.h), over the memory device's bytes, which
 * nothing changes while a test reads them: a block read in place is a
 * read, bytes wanted now are a hint.
 */
static int count_map_begin(struct tlog_bdev *bdev)
{
	return tlog_bdev_memory_data(count_of(bdev)->inner) ? 0 : -EOPNOTSUPP;
}

static bool count_covers(struct tlog_bdev *bdev, u64 offset, u64 len, bool hinted);

/*
 * A block touched in place that no hint covered would come in a page at a
 * time (the mapping reads no more than the page touched): counted.
 */
static const u8 *count_map_read(struct tlog_bdev *bdev, u64 offset, size_t len)
{
	struct count_bdev *cb = count_of(bdev);

	if (!count_covers(bdev, offset, len, true))
		cb->total.unhinted++;
	/*
	 * Asked for after the block before was touched: the device had no
	 * time to read it ahead of the walk, which now waits for all of it.
	 */
	else if (cb->hinted_at[offset >> UNIT_SHIFT] == cb->touches + 1)
		cb->total.on_the_spot++;
	cb->touches++;
	count_of(bdev)->total.calls++;
	count_range(bdev, offset, len);
	return tlog_bdev_memory_data(count_of(bdev)->inner) + offset;
}

static void count_map_willneed(struct tlog_bdev *bdev, u64 offset, u64 len)
{
	count_readahead(bdev, offset, len);
}

static bool count_map_revoked(struct tlog_bdev *bdev)
{
	(void)bdev;
	return false;
}

static void count_map_end(struct tlog_bdev *bdev)
{
	(void)bdev;
}

static void count_close(struct tlog_bdev *bdev)
{
	tlog_bdev_close(count_of(bdev)->inner);
	free(bdev->priv);
}

static const struct tlog_bdev_ops count_ops = {
	.read = count_read, .readv = count_readv, .readahead = count_readahead,
	.close = count_close,
};

static const struct tlog_bdev_ops count_in_place_ops = {
	.read = count_read, .readv = count_readv, .readahead = count_readahead,
	.map_begin = count_map_begin, .map_read = count_map_read,
	.map_willneed = count_map_willneed, .map_revoked = count_map_revoked,
	.map_end = count_map_end, .close = count_close,
};

/* Whether the tests below read tree blocks in place (a second run of each). */
static bool in_place;

/* A read-only counting device over @inner, which it takes a reference of. */
static struct tlog_bdev *wrap_count(struct tlog_bdev *inner)
{
	struct tlog_bdev *bdev = calloc(1, sizeof(*bdev));
	struct count_bdev *cb = calloc(1, sizeof(*cb));

	cr_assert(bdev && cb);
	cb->inner = tlog_bdev_get(inner);
	bdev->ops = in_place ? &count_in_place_ops : &count_ops;
	bdev->refs = 1;
	bdev->name = strdup("count");
	bdev->priv = cb;
	bdev->size = inner->size;
	return bdev;
}

static void count_mark(struct tlog_bdev *bdev)
{
	struct count_bdev *cb = count_of(bdev);

	memcpy(cb->seen_mark, cb->seen, sizeof(cb->seen_mark));
	cb->mark = cb->total;
}

/* Into @fresh (may be NULL): the units read since count_mark() and not before. */
static struct usage count_since_mark(struct tlog_bdev *bdev, u8 *fresh)
{
	const struct count_bdev *cb = count_of(bdev);
	struct usage use = {
		.calls = cb->total.calls - cb->mark.calls,
		.readvs = cb->total.readvs - cb->mark.readvs,
		.hints = cb->total.hints - cb->mark.hints,
		.unhinted = cb->total.unhinted - cb->mark.unhinted,
		.on_the_spot = cb->total.on_the_spot - cb->mark.on_the_spot,
		.asked_again = cb->total.asked_again - cb->mark.asked_again,
	};

	for (size_t i = 0; i < sizeof(cb->seen); i++) {
		u8 units = cb->seen[i] & ~cb->seen_mark[i];

		use.units += __builtin_popcount(units);
		if (fresh)
			fresh[i] = units;
	}
	return use;
}

/*
 * The requests read-ahead made: scatter reads of whole windows, or, in
 * place, where blocks are only touched one by one, the hints.
 */
static u64 ahead(const struct usage *use)
{
	return in_place ? use->hints : use->readvs;
}

static void usage_add(struct usage *sum, const struct usage *use)
{
	sum->units += use->units;
	sum->calls += use->calls;
	sum->readvs += use->readvs;
	sum->hints += use->hints;
	sum->unhinted += use->unhinted;
	sum->on_the_spot += use->on_the_spot;
	sum->asked_again += use->asked_again;
}

/* Whether every unit of the physical range [@offset, +@len) was read (or hinted). */
static bool count_covers(struct tlog_bdev *bdev, u64 offset, u64 len, bool hinted)
{
	const struct count_bdev *cb = count_of(bdev);
	const u8 *map = hinted ? cb->hinted : cb->seen;

	for (u64 u = offset >> UNIT_SHIFT; u <= (offset + len - 1) >> UNIT_SHIFT; u++)
		if (!(map[u / 8] & (1U << (u % 8))))
			return false;
	return true;
}

/* ---- the filesystem: small files, a big sparse one, more small files ---- */

#define FIRST_INO	257
#define BIG_INO		260	/* 257..259 before it */
#define LAST_INO	460	/* 261..460 after it */
#define BIG_EXTENTS	150000	/* 4 KiB of data every 8 KiB */
#define BIG_SIZE	((u64)BIG_EXTENTS * 8192)
#define SMALL_SIZE	16384	/* data [0, 4K) and [8K, 12K), holes between and at EOF */

/*
 * A file of @ino with @nr extents of 4 KiB every 8 KiB from 0, all of the
 * data extent at @bytenr; the items from the @from-th on are inserted here.
 */
static void add_file(struct tlog_trans *trans, struct btrfs_root *root, u64 ino, u64 nr,
		     u64 size, u64 bytenr, u64 from)
{
	cr_assert_eq(memfs_create_inode(trans, root, ino, size, nr * 4096), 0, "%s",
		     tlog_error_get());
	for (u64 i = from; i < nr; i++)
		cr_assert_eq(memfs_insert_file_extent(trans, root, ino, i * 8192, bytenr, 4096, 0,
						      4096), 0, "%s", tlog_error_get());
}

/*
 * The image every test reads.  All extent items point to one real data
 * extent (its references are not counted: nothing here checks them, and
 * seeks read no data).
 */
static u32 image_nodesize;	/* 0: memfs's default */

/* A new image of image_nodesize and a transaction on it, for the files of a test. */
static struct tlog_trans *image_begin(struct tlog_bdev **mem, struct btrfs_root **root)
{
	struct tlog_fs *fs;
	struct tlog_trans *trans;

	*mem = memfs_make_nodesize(image_nodesize);
	fs = memfs_open(*mem, 0, 0);
	*root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(tlog_trans_start(fs, &trans), 0, "%s", tlog_error_get());
	return trans;
}

/* Commit what image_begin() started and close the filesystem: the image is in @mem. */
static void image_end(struct tlog_trans *trans)
{
	struct tlog_fs *fs = trans->fs;

	cr_assert_eq(tlog_trans_commit(trans), 0, "commit: %s", tlog_error_get());
	tlog_close(fs);
}

static struct tlog_bdev *make_image(void)
{
	struct tlog_bdev *mem;
	struct btrfs_root *root;
	struct tlog_trans *trans = image_begin(&mem, &root);
	u64 bytenr;

	cr_assert_eq(memfs_write_extent(trans, root, FIRST_INO, 0, 4096, 7, &bytenr), 0, "%s",
		     tlog_error_get());
	for (u64 ino = FIRST_INO; ino <= LAST_INO; ino++) {
		u64 from = ino == FIRST_INO;

		if (ino == BIG_INO)
			add_file(trans, root, ino, BIG_EXTENTS, BIG_SIZE, bytenr, from);
		else
			add_file(trans, root, ino, 2, SMALL_SIZE, bytenr, from);
	}
	image_end(trans);
	return mem;
}

static struct tlog_fs *open_ro(struct tlog_bdev *bdev)
{
	struct tlog_open_opts opts = { .super_mirror = -1 };
	struct tlog_fs *fs;

	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0, "open: %s", tlog_error_get());
	/* the counting devices read in place when asked to; the memory device never */
	cr_assert_eq(fs->in_place, in_place && bdev->ops == &count_in_place_ops);
	return fs;
}

/* Whether the inode item of @ino follows an item of @ino - 1 in the same leaf. */
static bool shares_leaf_with_previous(struct btrfs_root *root, u64 ino)
{
	struct btrfs_key key = { ino, BTRFS_INODE_ITEM_KEY, 0 };
	struct btrfs_path path;
	bool shared = false;

	btrfs_init_path(&path);
	cr_assert_eq(btrfs_search_slot(root, &key, &path), 0);
	if (path.slots[0] > 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0] - 1);
		shared = key.objectid == ino - 1;
	}
	btrfs_release_path(&path);
	return shared;
}

/*
 * The fs tree is three levels high, and the big file shares its first leaf
 * with the inode before it and its last with the inode after it.
 */
static void check_shape(struct tlog_bdev *mem)
{
	struct tlog_fs *fs = open_ro(mem);
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);

	cr_assert_geq(root->level, 2, "the fs tree is only %d levels high", root->level + 1);
	cr_assert(shares_leaf_with_previous(root, BIG_INO));
	cr_assert(shares_leaf_with_previous(root, BIG_INO + 1));
	tlog_close(fs);
}

/* ---- one seek on a cold cache ---- */

/*
 * Drop from @fs's cache the blocks on the path to @ino's inode item, all
 * that opening the file read of the fs tree: a search then meets every
 * level uncached and reads ahead at each.
 */
static void forget_inode_path(struct tlog_fs *fs, struct btrfs_root *root, u64 ino)
{
	struct btrfs_key key = { ino, BTRFS_INODE_ITEM_KEY, 0 };
	u64 blocks[BTRFS_MAX_LEVEL];
	struct btrfs_path path;
	int nr = 0;

	btrfs_init_path(&path);
	cr_assert_eq(btrfs_search_slot(root, &key, &path), 0);
	for (int level = 0; level < BTRFS_MAX_LEVEL && path.nodes[level]; level++)
		blocks[nr++] = path.nodes[level]->start;
	btrfs_release_path(&path);
	for (int i = 0; i < nr; i++)
		btrfs_forget_tree_block(fs, blocks[i]);
}

struct seek_run {
	struct usage use;	/* from the file's open to the answer */
	u8 fresh[NR_UNITS / 8];	/* the units it read */
	int ret;
	u64 answer;
};

/*
 * Open the filesystem afresh on a counting device over @mem, with
 * read-ahead @on or off, then open @ino and seek once; with @cold_tree
 * the blocks the file's open read are dropped from the cache before the
 * seek (not from the count: read again, they are not read anew).
 */
static void cold_seek(struct tlog_bdev *mem, u64 ino, u64 offset, int whence, bool on,
		      bool cold_tree, struct seek_run *run)
{
	struct tlog_bdev *dev = wrap_count(mem);
	struct tlog_fs *fs = open_ro(dev);
	struct btrfs_root *root;
	struct tlog_file *file;

	btrfs_set_readahead(fs, on);
	root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	count_mark(dev);
	cr_assert_eq(tlog_file_open(fs, root, ino, &file), 0, "inode %llu: %s",
		     (unsigned long long)ino, tlog_error_get());
	if (cold_tree)
		forget_inode_path(fs, root, ino);
	run->answer = (u64)-1;
	run->ret = tlog_file_seek(file, (s64)offset, whence, &run->answer);
	run->use = count_since_mark(dev, run->fresh);
	tlog_file_close(file);
	tlog_close(fs);
	tlog_bdev_close(dev);
}

/* ---- single seeks on small files ---- */

static const struct small_seek {
	int whence;
	u64 offset;
	int ret;
	u64 answer;
} small_seeks[] = {
	{ TLOG_SEEK_DATA, 0, 0, 0 },
	{ TLOG_SEEK_DATA, 4096, 0, 8192 },
	{ TLOG_SEEK_DATA, 12288, -ENXIO, (u64)-1 },
	{ TLOG_SEEK_HOLE, 0, 0, 4096 },
	{ TLOG_SEEK_HOLE, 8192, 0, 12288 },
};

#define NR_SMALL_SEEKS	(sizeof(small_seeks) / sizeof(small_seeks[0]))

struct small_totals {
	struct usage on, off;
	u64 runs;
};

static const char *whence_name(int whence)
{
	return whence == TLOG_SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE";
}

/* Whether every unit in @a is also in @b. */
static bool units_within(const u8 *a, const u8 *b)
{
	for (size_t i = 0; i < NR_UNITS / 8; i++)
		if (a[i] & ~b[i])
			return false;
	return true;
}

/*
 * One seek on small file @ino both ways: the same answer, and with
 * read-ahead no unit read that was not read without it.
 */
static void check_small_seek(struct tlog_bdev *mem, u64 ino, const struct small_seek *s,
			     bool cold_tree, struct small_totals *t)
{
	struct seek_run on, off;

	cold_seek(mem, ino, s->offset, s->whence, true, cold_tree, &on);
	cold_seek(mem, ino, s->offset, s->whence, false, cold_tree, &off);
	cr_assert_eq(off.ret, s->ret, "inode %llu %s %llu: %d", (unsigned long long)ino,
		     whence_name(s->whence), (unsigned long long)s->offset, off.ret);
	cr_assert_eq(on.ret, off.ret);
	cr_assert_eq(on.answer, off.answer);
	if (in_place)
		cr_assert_eq(on.use.unhinted, 0, "inode %llu %s %llu: %llu blocks touched in "
			     "place before they were asked for", (unsigned long long)ino,
			     whence_name(s->whence), (unsigned long long)s->offset,
			     (unsigned long long)on.use.unhinted);
	if (s->ret == 0)
		cr_assert_eq(on.answer, s->answer);
	cr_assert_leq(on.use.units, off.use.units,
		      "inode %llu %s %llu: %llu units read with read-ahead, %llu without",
		      (unsigned long long)ino, whence_name(s->whence),
		      (unsigned long long)s->offset, (unsigned long long)on.use.units,
		      (unsigned long long)off.use.units);
	cr_assert(units_within(on.fresh, off.fresh), "inode %llu %s %llu: read-ahead read "
		  "other units", (unsigned long long)ino, whence_name(s->whence),
		  (unsigned long long)s->offset);
	usage_add(&t->on, &on.use);
	usage_add(&t->off, &off.use);
	t->runs++;
	if (ino == FIRST_INO || ino == BIG_INO - 1 || ino == BIG_INO + 1 || ino == LAST_INO)
		cr_log_info("inode %llu %s %llu: %llu units in %llu reads with read-ahead, "
			    "%llu in %llu without", (unsigned long long)ino,
			    whence_name(s->whence), (unsigned long long)s->offset,
			    (unsigned long long)on.use.units, (unsigned long long)on.use.calls,
			    (unsigned long long)off.use.units, (unsigned long long)off.use.calls);
}

/* Every seek of small_seeks[] on every small file: before, beside and after the big one. */
static void check_small_files(bool cold_tree, struct small_totals *t)
{
	struct tlog_bdev *mem = make_image();

	check_shape(mem);
	for (u64 ino = FIRST_INO; ino <= LAST_INO; ino++) {
		if (ino == BIG_INO)
			continue;
		for (size_t i = 0; i < NR_SMALL_SEEKS; i++)
			check_small_seek(mem, ino, &small_seeks[i], cold_tree, t);
	}
	cr_log_info("%llu seeks: %llu units in %llu reads (%llu scattered, %llu hints) "
		    "with read-ahead, %llu in %llu without", (unsigned long long)t->runs,
		    (unsigned long long)t->on.units, (unsigned long long)t->on.calls,
		    (unsigned long long)t->on.readvs, (unsigned long long)t->on.hints,
		    (unsigned long long)t->off.units, (unsigned long long)t->off.calls);
	/* the switch works: only the seeks with read-ahead read ahead */
	cr_assert_gt(ahead(&t->on), 0);
	cr_assert_eq(t->off.readvs + t->off.hints, 0);
	tlog_bdev_close(mem);
}

/* As a tool does it: open the file (its inode's path is then cached), seek. */
static void open_and_seek_small_file_reads_no_more(void)
{
	struct small_totals t = { 0 };

	check_small_files(false, &t);
}

Test(readahead, open_and_seek_small_file_reads_no_more)
{
	open_and_seek_small_file_reads_no_more();
}

Test(readahead, open_and_seek_small_file_reads_no_more_in_place)
{
	in_place = true;
	open_and_seek_small_file_reads_no_more();
}

/* The seek's own search on a cold tree: read-ahead below the root and every node. */
static void seek_on_cold_tree_reads_no_more(void)
{
	struct small_totals t = { 0 };

	check_small_files(true, &t);
	/* the level-1 node and the leaf below the root, at least, by read-ahead */
	cr_assert_geq(ahead(&t.on), 2 * t.runs);
}

Test(readahead, seek_on_cold_tree_reads_no_more)
{
	seek_on_cold_tree_reads_no_more();
}

Test(readahead, seek_on_cold_tree_reads_no_more_in_place)
{
	in_place = true;
	seek_on_cold_tree_reads_no_more();
}

/* ---- a walk of the big file ---- */

struct walk {
	struct usage use;
	u64 *answers;		/* data start, hole start, in turn */
	size_t nr;
	struct tlog_bdev *dev;	/* still open, to ask what was read */
};

/* SEEK_DATA and SEEK_HOLE in turn through the whole big file, on a cold cache. */
static void walk_big_file(struct tlog_bdev *mem, bool on, struct walk *w)
{
	struct tlog_fs *fs;
	struct btrfs_root *root;
	struct tlog_file *file;
	u64 pos = 0;
	int ret;

	w->dev = wrap_count(mem);
	fs = open_ro(w->dev);
	btrfs_set_readahead(fs, on);
	root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	w->answers = malloc(2 * (BIG_EXTENTS + 1) * sizeof(*w->answers));
	w->nr = 0;
	cr_assert_not_null(w->answers);
	count_mark(w->dev);
	cr_assert_eq(tlog_file_open(fs, root, BIG_INO, &file), 0, "%s", tlog_error_get());
	for (;;) {
		ret = tlog_file_seek(file, (s64)pos, TLOG_SEEK_DATA, &pos);
		if (ret == -ENXIO)
			break;
		cr_assert_eq(ret, 0, "SEEK_DATA %llu: %d %s", (unsigned long long)pos, ret,
			     tlog_error_get());
		w->answers[w->nr++] = pos;
		cr_assert_eq(tlog_file_seek(file, (s64)pos, TLOG_SEEK_HOLE, &pos), 0);
		w->answers[w->nr++] = pos;
		cr_assert_leq(w->nr, 2 * BIG_EXTENTS);
	}
	w->use = count_since_mark(w->dev, NULL);
	tlog_file_close(file);
	tlog_close(fs);
}

static void walk_release(struct walk *w)
{
	tlog_bdev_close(w->dev);
	free(w->answers);
}

/*
 * The leaves holding the big file's extent items: how many, their bytes in
 * *@bytes, whether @dev read all of them, and how many it was hinted.
 */
static u64 leaves_read(struct tlog_bdev *mem, struct tlog_bdev *dev, u64 *bytes, bool *all_read,
		       u64 *nr_hinted)
{
	struct btrfs_key min = { BIG_INO, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_key max = { BIG_INO, BTRFS_EXTENT_DATA_KEY, (u64)-1 };
	struct tlog_fs *fs = open_ro(mem);
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct btrfs_tree_iter iter;
	u64 last = 0, nr = 0, phys;

	*all_read = true;
	*nr_hinted = 0;
	btrfs_for_each_item(root, &iter, &min, &max) {
		if (iter.leaf->start == last)
			continue;
		last = iter.leaf->start;
		nr++;
		cr_assert_eq(btrfs_map_block(fs, last, fs->nodesize, &phys, 1), 1);
		*all_read &= count_covers(dev, phys, fs->nodesize, false);
		*nr_hinted += count_covers(dev, phys, fs->nodesize, true);
	}
	cr_assert_eq(iter.ret, 1);
	btrfs_tree_iter_end(&iter);
	*bytes = nr * fs->nodesize;
	tlog_close(fs);
	return nr;
}

static void big_file_walk_reads_in_runs(void)
{
	struct tlog_bdev *mem = make_image();
	struct walk on, off;
	u64 leaves, bytes, hinted_on, hinted_off;
	bool all_on, all_off;

	check_shape(mem);
	walk_big_file(mem, true, &on);
	walk_big_file(mem, false, &off);
	cr_assert_eq(on.nr, 2 * BIG_EXTENTS);
	cr_assert_eq(off.nr, on.nr);
	cr_assert_eq(memcmp(on.answers, off.answers, on.nr * sizeof(*on.answers)), 0,
		     "the walks answer differently");
	cr_assert_eq(on.answers[1], 4096);
	cr_assert_eq(on.answers[on.nr - 1], BIG_SIZE - 4096);
	leaves = leaves_read(mem, on.dev, &bytes, &all_on, &hinted_on);
	leaves_read(mem, off.dev, &bytes, &all_off, &hinted_off);
	cr_log_info("walk of %llu leaves: %llu units in %llu reads (%llu scattered, %llu hints) "
		    "with read-ahead, %llu in %llu without", (unsigned long long)leaves,
		    (unsigned long long)on.use.units, (unsigned long long)on.use.calls,
		    (unsigned long long)on.use.readvs, (unsigned long long)on.use.hints,
		    (unsigned long long)off.use.units, (unsigned long long)off.use.calls);
	cr_assert_eq(off.use.readvs + off.use.hints, 0);
	cr_assert(all_on, "a leaf of the big file was not read with read-ahead");
	cr_assert(all_off, "a leaf of the big file was not read without read-ahead");
	cr_assert_geq(on.use.units << UNIT_SHIFT, bytes);
	/*
	 * Without read-ahead every block is a read of its own; with it the
	 * leaves, written by one commit side by side, come in runs of many:
	 * read so, or in place asked for so.
	 */
	cr_assert_eq(hinted_off, 0);
	if (in_place) {
		/*
		 * every leaf asked for before it was touched, but the first:
		 * the file's open found its inode item there, without read-ahead
		 */
		cr_assert_geq(hinted_on, leaves - 1, "%llu of %llu leaves hinted",
			     (unsigned long long)hinted_on, (unsigned long long)leaves);
		cr_assert_eq(on.use.calls, off.use.calls, "blocks touched in place");
		cr_assert_eq(on.use.unhinted, 0, "%llu blocks touched before they were asked for",
			     (unsigned long long)on.use.unhinted);
		cr_assert_leq(on.use.hints * 8, off.use.calls, "%llu hints for %llu blocks",
			      (unsigned long long)on.use.hints, (unsigned long long)off.use.calls);
	} else {
		cr_assert_leq(on.use.calls * 8, off.use.calls,
			      "%llu reads with read-ahead, %llu without",
			      (unsigned long long)on.use.calls, (unsigned long long)off.use.calls);
	}
	walk_release(&on);
	walk_release(&off);
	tlog_bdev_close(mem);
}

Test(readahead, big_file_walk_reads_in_runs)
{
	big_file_walk_reads_in_runs();
}

Test(readahead, big_file_walk_reads_in_runs_in_place)
{
	in_place = true;
	big_file_walk_reads_in_runs();
}

/*
 * In place, the device must be reading a walk's leaves before the walk
 * gets to them: a leaf first asked for just before its touch is a wait
 * for all of its run.  That happens while the windows grow, in the first
 * level-1 node, and for the blocks of the first search; it must not
 * happen again at every level-1 node the walk enters (the next node's
 * leaves were once unknown in place until the walk reached that node).
 * With 4 KiB nodes the big file's leaves span dozens of level-1 nodes.
 */
Test(readahead, walk_in_place_has_each_next_node_hinted_ahead)
{
	struct tlog_bdev *mem;
	struct walk on;
	u64 leaves, bytes, hinted, per_node;
	bool all;

	in_place = true;
	image_nodesize = 4096;
	mem = make_image();
	walk_big_file(mem, true, &on);
	cr_assert_eq(on.nr, 2 * BIG_EXTENTS);
	leaves = leaves_read(mem, on.dev, &bytes, &all, &hinted);
	per_node = btrfs_nodeptrs_per_block(4096);
	cr_log_info("walk of %llu leaves below at least %llu level-1 nodes: %llu blocks asked "
		    "for on the spot", (unsigned long long)leaves,
		    (unsigned long long)(leaves / per_node), (unsigned long long)on.use.on_the_spot);
	cr_assert(all);
	cr_assert_eq(on.use.unhinted, 0);
	cr_assert_geq(leaves / per_node, 16, "only %llu leaves", (unsigned long long)leaves);
	cr_assert_leq(on.use.on_the_spot, 12, "%llu blocks asked for as the walk reached them",
		      (unsigned long long)on.use.on_the_spot);
	walk_release(&on);
	tlog_bdev_close(mem);
}

/*
 * A file of @nr extents of 4 KiB every 8 KiB, each its own data extent
 * (allocated, not written: FIEMAP reads no data), so that FIEMAP's SHARED
 * answers walk the extent tree beside the file's items.
 */
#define OWN_INO		257

static struct tlog_bdev *make_image_own_extents(u64 nr)
{
	struct tlog_bdev *mem;
	struct btrfs_root *root;
	struct tlog_trans *trans = image_begin(&mem, &root);
	u64 bytenr;

	cr_assert_eq(memfs_create_inode(trans, root, OWN_INO, nr * 8192, nr * 4096), 0, "%s",
		     tlog_error_get());
	for (u64 i = 0; i < nr; i++) {
		cr_assert_eq(btrfs_alloc_data_extent(trans, root, OWN_INO, i * 8192, 4096, &bytenr),
			     0, "%s", tlog_error_get());
		cr_assert_eq(memfs_insert_file_extent(trans, root, OWN_INO, i * 8192, bytenr, 4096,
						      0, 4096), 0, "%s", tlog_error_get());
	}
	image_end(trans);
	return mem;
}

static int count_fiemap_extent(const struct tlog_fiemap_extent *ext, void *arg)
{
	(void)ext;
	((struct walk *)arg)->nr++;
	return 0;
}

/* FIEMAP of the whole of @ino, counting its extents into @w (no answers kept). */
static void fiemap_walk(struct tlog_bdev *mem, u64 ino, struct walk *w)
{
	struct tlog_fs *fs;
	struct tlog_file *file;

	w->dev = wrap_count(mem);
	w->answers = NULL;
	w->nr = 0;
	fs = open_ro(w->dev);
	count_mark(w->dev);
	cr_assert_eq(tlog_file_open(fs, memfs_root(fs, BTRFS_FS_TREE_OBJECTID), ino, &file), 0,
		     "%s", tlog_error_get());
	cr_assert_eq(tlog_file_fiemap_each(file, 0, (u64)-1, count_fiemap_extent, w), 0, "%s",
		     tlog_error_get());
	w->use = count_since_mark(w->dev, NULL);
	tlog_file_close(file);
	tlog_close(fs);
}

/* At most 1 in 50 of the units a walk touched asked for again. */
static void assert_asked_once(const char *what, const struct walk *w)
{
	cr_log_info("in place, %s: %llu units, %llu hints, %llu units asked for again", what,
		    (unsigned long long)w->use.units, (unsigned long long)w->use.hints,
		    (unsigned long long)w->use.asked_again);
	cr_assert_eq(w->use.unhinted, 0, "%s: %llu blocks touched unasked", what,
		     (unsigned long long)w->use.unhinted);
	cr_assert_leq(w->use.asked_again * 50, w->use.units, "%s: %llu of %llu units again", what,
		      (unsigned long long)w->use.asked_again, (unsigned long long)w->use.units);
}

/*
 * In place nothing is read ahead, only asked for, and what was asked for
 * must not be asked for again: every window hinted ahead of a walk used
 * to be hinted a second time when the walk reached it (and a next node's
 * first window on entering the node), once from the walk's own thread -
 * 3.4 times the metadata hinted on a cold 4 GiB FIEMAP, 44 MiB of it on
 * the walk's thread.  A SEEK walk over one tree, and FIEMAP, whose SHARED
 * answers walk the extent tree beside it (4 KiB nodes: hundreds of
 * leaves in each); a run read across a gap may cover a unit asked for
 * before, so a few are allowed.
 */
Test(readahead, walk_in_place_asks_for_each_block_once)
{
	struct tlog_bdev *mem;
	struct walk seek, map;

	in_place = true;
	mem = make_image();
	walk_big_file(mem, true, &seek);
	cr_assert_eq(seek.nr, 2 * BIG_EXTENTS);
	assert_asked_once("SEEK walk", &seek);
	walk_release(&seek);
	tlog_bdev_close(mem);

	image_nodesize = 4096;
	mem = make_image_own_extents(20000);
	fiemap_walk(mem, OWN_INO, &map);
	cr_assert_eq(map.nr, 20000);
	/* the file's leaves and the extent tree's, hundreds each */
	cr_assert_geq(map.use.units, 400, "%llu units", (unsigned long long)map.use.units);
	assert_asked_once("FIEMAP", &map);
	walk_release(&map);
	tlog_bdev_close(mem);
}

/*
 * One seek into the big file is a short query too: read-ahead starts with
 * a small window and grows only as a walk goes on, so a single SEEK_DATA
 * or SEEK_HOLE reads a few leaves more than without it, not the thousands
 * a whole-node read-ahead would (2,900 units at offset 0 before windows).
 */
static void one_seek_in_big_file_reads_a_window(void)
{
	static const u64 offsets[] = { 0, BIG_SIZE / 2 + 8192, BIG_SIZE - 8192 };
	struct tlog_bdev *mem = make_image();

	check_shape(mem);
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		for (int w = 0; w < 2; w++) {
			int whence = w ? TLOG_SEEK_HOLE : TLOG_SEEK_DATA;
			struct seek_run on = { 0 }, off = { 0 };

			cold_seek(mem, BIG_INO, offsets[i], whence, true, true, &on);
			cold_seek(mem, BIG_INO, offsets[i], whence, false, true, &off);
			cr_assert_eq(on.ret, off.ret);
			cr_assert_eq(on.answer, off.answer);
			cr_log_info("big file, %s at %llu: %llu units with read-ahead, %llu without",
				    whence_name(whence), (unsigned long long)offsets[i],
				    (unsigned long long)on.use.units,
				    (unsigned long long)off.use.units);
			/* at most the first window and the hint of the next, per level */
			cr_assert_leq(on.use.units, off.use.units + 3 * 12 * 4,
				      "%s at %llu: %llu units with read-ahead, %llu without",
				      whence_name(whence), (unsigned long long)offsets[i],
				      (unsigned long long)on.use.units,
				      (unsigned long long)off.use.units);
		}
	}
	tlog_bdev_close(mem);
}

Test(readahead, one_seek_in_big_file_reads_a_window)
{
	one_seek_in_big_file_reads_a_window();
}

Test(readahead, one_seek_in_big_file_reads_a_window_in_place)
{
	in_place = true;
	one_seek_in_big_file_reads_a_window();
}
