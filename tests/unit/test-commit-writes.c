// SPDX-License-Identifier: GPL-2.0-only
/*
 * How a commit writes its tree blocks: sorted by physical address and
 * coalesced into gather writes (tlog_bdev_writev), few and large, with
 * the very bytes that writing block by block leaves.  Then the gather
 * write through every device: the fault wrapper counts each piece as a write,
 * the hold wrapper keeps what falls in a superblock copy, the cow wrapper
 * keeps it in memory, and the file backend, which sends aligned ones with
 * O_DIRECT, leaves what a buffered read then sees.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "blockdev.h"
#include "errctx.h"
#include "mem-fs.h"
#include "transaction.h"

/* ---- a tracing device: every write and gather write, in order ---- */

struct trace_write {
	char kind;		/* 'W' write, 'V' gather write */
	u64 offset, len;
	int pieces;
};

struct trace_bdev {
	struct tlog_bdev *inner;
	struct trace_write ops[65536];
	size_t nr;
};

static struct trace_bdev *trace_of(struct tlog_bdev *bdev)
{
	return bdev->priv;
}

static void trace_push(struct tlog_bdev *bdev, char kind, u64 offset, u64 len, int pieces)
{
	struct trace_bdev *tb = trace_of(bdev);

	cr_assert_lt(tb->nr, sizeof(tb->ops) / sizeof(tb->ops[0]));
	tb->ops[tb->nr++] = (struct trace_write){ kind, offset, len, pieces };
}

static int trace_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset)
{
	return tlog_bdev_read(trace_of(bdev)->inner, buf, len, offset);
}

static int trace_write(struct tlog_bdev *bdev, const void *buf, size_t len, u64 offset)
{
	trace_push(bdev, 'W', offset, len, 1);
	return tlog_bdev_write(trace_of(bdev)->inner, buf, len, offset);
}

static int trace_writev(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset)
{
	u64 len = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	trace_push(bdev, 'V', offset, len, iovcnt);
	return tlog_bdev_writev(trace_of(bdev)->inner, iov, iovcnt, offset);
}

static int trace_flush(struct tlog_bdev *bdev)
{
	return tlog_bdev_flush(trace_of(bdev)->inner);
}

static void trace_close(struct tlog_bdev *bdev)
{
	tlog_bdev_close(trace_of(bdev)->inner);
	free(bdev->priv);
}

static const struct tlog_bdev_ops trace_gather_ops = {
	.read = trace_read, .write = trace_write, .writev = trace_writev,
	.flush = trace_flush, .close = trace_close,
};

/* Without writev: the layer falls back to one write per block, the old path. */
static const struct tlog_bdev_ops trace_plain_ops = {
	.read = trace_read, .write = trace_write,
	.flush = trace_flush, .close = trace_close,
};

static struct tlog_bdev *wrap_trace(struct tlog_bdev *inner, bool gather)
{
	struct tlog_bdev *bdev = calloc(1, sizeof(*bdev));
	struct trace_bdev *tb = calloc(1, sizeof(*tb));

	cr_assert(bdev && tb);
	tb->inner = inner;
	bdev->ops = gather ? &trace_gather_ops : &trace_plain_ops;
	bdev->refs = 1;
	bdev->name = strdup("trace");
	bdev->priv = tb;
	bdev->size = inner->size;
	bdev->writable = true;
	return bdev;
}

/* ---- a commit of many blocks ---- */

#define NR_ITEMS	6000

/*
 * Insert NR_ITEMS items of 100 to 400 bytes into the fs tree of the
 * filesystem on @mem, through a tracing device, and commit: some hundreds
 * of leaves, each written twice (DUP metadata).  The transaction's clock
 * is fixed, so that two runs write the same bytes.
 */
static void big_commit(struct tlog_bdev *mem, struct tlog_bdev *trace)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true };
	struct btrfs_root *root;
	struct tlog_trans *trans;
	struct tlog_fs *fs;
	u8 buf[400];
	u64 s = 42;

	tlog_bdev_get(mem);
	cr_assert_eq(tlog_open_bdev(trace, &opts, &fs), 0, "open: %s", tlog_error_get());
	root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	btrfs_set_timespec_sec(&trans->now, 1700000000);
	btrfs_set_timespec_nsec(&trans->now, 0);
	for (u32 i = 0; i < NR_ITEMS; i++) {
		struct btrfs_key key = { 1000 + i / 64, BTRFS_TEMPORARY_ITEM_KEY, i % 64 };
		u32 size = 100 + memfs_rng(&s) % 300;

		memset(buf, (int)(i * 7), size);
		cr_assert_eq(btrfs_insert_item(trans, root, &key, buf, size), 0, "%s",
			     tlog_error_get());
	}
	cr_assert_eq(tlog_trans_commit(trans), 0, "commit: %s", tlog_error_get());
	tlog_close(fs);
}

Test(commit_writes, few_large_sorted_writes)
{
	struct tlog_bdev *mem = memfs_make();
	struct tlog_bdev *trace = wrap_trace(mem, true);
	struct trace_bdev *tb = trace_of(trace);
	u64 gathers = 0, blocks = 0, last_end = 0, writes0 = mem->nr_writes;

	big_commit(mem, trace);
	for (size_t i = 0; i < tb->nr; i++) {
		const struct trace_write *w = &tb->ops[i];

		if (w->kind != 'V')
			continue;
		gathers++;
		blocks += w->pieces;
		cr_assert_leq(w->len, 4U << 20, "a gather write of %llu bytes",
			      (unsigned long long)w->len);
		/* one commit's gather writes rise and never overlap */
		if (w->offset < last_end)
			last_end = 0;
		cr_assert_geq(w->offset, last_end);
		last_end = w->offset + w->len;
	}
	cr_assert_geq(blocks, 200, "only %llu tree blocks written", (unsigned long long)blocks);
	cr_assert_leq(gathers * 8, blocks, "%llu gather writes for %llu blocks",
		      (unsigned long long)gathers, (unsigned long long)blocks);
	/* statistics count blocks, as block by block */
	for (size_t i = 0; i < tb->nr; i++)
		writes0 += tb->ops[i].pieces;
	cr_assert_eq(mem->nr_writes, writes0, "the memory device counted %llu writes, not %llu",
		     (unsigned long long)mem->nr_writes, (unsigned long long)writes0);
	tlog_bdev_close(mem);
	tlog_bdev_close(trace);
}

Test(commit_writes, same_bytes_as_block_by_block)
{
	struct tlog_bdev *mem_v = memfs_make(), *mem_w, *tr_v, *tr_w;
	u64 singles = 0;

	/* the same filesystem on both (mkfs stamps the time) */
	cr_assert_eq(tlog_bdev_create_memory("w", MEMFS_SIZE, &mem_w), 0);
	memcpy(tlog_bdev_memory_data(mem_w), tlog_bdev_memory_data(mem_v), MEMFS_SIZE);
	mem_v->nr_writes = 0;
	mem_w->nr_writes = 0;
	tr_v = wrap_trace(mem_v, true);
	tr_w = wrap_trace(mem_w, false);
	big_commit(mem_v, tr_v);
	big_commit(mem_w, tr_w);
	for (size_t i = 0; i < trace_of(tr_w)->nr; i++)
		singles += trace_of(tr_w)->ops[i].len <= 65536;
	cr_assert_gt(trace_of(tr_w)->nr, 4 * trace_of(tr_v)->nr, "%zu writes, %zu gathered",
		     trace_of(tr_w)->nr, trace_of(tr_v)->nr);
	/* a fault sweep learns the same number of writes either way */
	cr_assert_eq(mem_v->nr_writes, trace_of(tr_w)->nr);
	cr_assert_eq(singles, trace_of(tr_w)->nr);
	for (size_t i = 0; i < MEMFS_SIZE; i++)
		if (tlog_bdev_memory_data(mem_v)[i] != tlog_bdev_memory_data(mem_w)[i])
			cr_assert_fail("the gathered commit wrote other bytes, first at %zu", i);
	tlog_bdev_close(mem_v);
	tlog_bdev_close(mem_w);
	tlog_bdev_close(tr_v);
	tlog_bdev_close(tr_w);
}

/* ---- the gather write through each device ---- */

static u8 piece_a[3000], piece_b[5192], piece_c[8192];

static const struct iovec pieces[] = {
	{ piece_a, sizeof(piece_a) }, { piece_b, sizeof(piece_b) }, { piece_c, sizeof(piece_c) },
};

#define PIECES_LEN	(sizeof(piece_a) + sizeof(piece_b) + sizeof(piece_c))

static void fill_pieces(u32 seed)
{
	u32 n = 0;

	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++)
		for (size_t j = 0; j < pieces[i].iov_len; j++, n++)
			((u8 *)pieces[i].iov_base)[j] = (u8)(seed + n * 7 + (n >> 8));
}

/* The pieces back to back, into @buf of PIECES_LEN bytes. */
static void flatten(u8 *buf)
{
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		memcpy(buf, pieces[i].iov_base, pieces[i].iov_len);
		buf += pieces[i].iov_len;
	}
}

/* Whether @buf holds the pieces back to back. */
static bool holds_pieces(const u8 *buf)
{
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		if (memcmp(buf, pieces[i].iov_base, pieces[i].iov_len))
			return false;
		buf += pieces[i].iov_len;
	}
	return true;
}

/*
 * Each piece counts as a write: the N-th write and all later fail (or
 * vanish), the pieces of a gather write before the N-th reach the device.
 */
Test(commit_writes, fault_counts_each_piece)
{
	for (int mode = TLOG_FAULT_FAIL; mode <= TLOG_FAULT_DROP; mode++) {
		const int expect = mode == TLOG_FAULT_FAIL ? -EIO : 0;
		struct tlog_bdev *mem, *fault;
		u8 flat[PIECES_LEN];
		const u8 *data;

		cr_assert_eq(tlog_bdev_create_memory("m", 1 << 20, &mem), 0);
		data = tlog_bdev_memory_data(mem);
		cr_assert_eq(tlog_bdev_wrap_fault(mem, mode, 5, &fault), 0);
		fill_pieces(1);
		cr_assert_eq(tlog_bdev_writev(fault, pieces, 3, 0), 0);
		cr_assert_eq(tlog_bdev_write(fault, piece_a, sizeof(piece_a), 65536), 0);
		cr_assert(holds_pieces(data));
		cr_assert_eq(fault->nr_writes, 4);
		cr_assert_eq(mem->nr_writes, 4);
		/* write 5 is the first piece of this one: none of it goes */
		fill_pieces(2);
		cr_assert_eq(tlog_bdev_writev(fault, pieces, 3, 131072), expect);
		cr_assert_eq(tlog_bdev_write(fault, piece_a, sizeof(piece_a), 0), expect);
		cr_assert_eq(tlog_bdev_writev(fault, pieces, 3, 0), expect);
		cr_assert_eq(tlog_bdev_flush(fault), expect);
		cr_assert_eq(mem->nr_writes, 4);
		fill_pieces(1);
		cr_assert(holds_pieces(data), "a write after the fault reached the device");
		for (size_t i = 131072; i < 131072 + PIECES_LEN; i++)
			cr_assert_eq(data[i], 0);
		tlog_bdev_close(fault);

		/* write 2 is the second piece: the first goes, a torn write */
		cr_assert_eq(tlog_bdev_create_memory("m", 1 << 20, &mem), 0);
		data = tlog_bdev_memory_data(mem);
		cr_assert_eq(tlog_bdev_wrap_fault(mem, mode, 2, &fault), 0);
		fill_pieces(3);
		flatten(flat);
		cr_assert_eq(tlog_bdev_writev(fault, pieces, 3, 4096), expect);
		cr_assert_eq(mem->nr_writes, 1);
		cr_assert_eq(memcmp(data + 4096, flat, sizeof(piece_a)), 0);
		for (size_t i = 4096 + sizeof(piece_a); i < 4096 + PIECES_LEN; i++)
			cr_assert_eq(data[i], 0);
		tlog_bdev_close(fault);
	}
}

Test(commit_writes, hold_keeps_the_super_bytes_of_a_gather_write)
{
	const u64 sb = btrfs_sb_offset(0), at = sb - 4096;
	struct tlog_bdev *mem, *hold;
	u8 back[PIECES_LEN], flat[PIECES_LEN];
	const u8 *data;

	cr_assert_eq(tlog_bdev_create_memory("m", 1 << 20, &mem), 0);
	data = tlog_bdev_memory_data(mem);
	cr_assert_eq(tlog_bdev_wrap_hold_super(mem, &hold), 0);
	fill_pieces(3);
	/* [sb - 4096, sb + 12288): a piece before the copy, the copy, one after */
	cr_assert_eq(tlog_bdev_writev(hold, pieces, 3, at), 0, "%s", tlog_error_get());
	for (u64 i = sb; i < sb + BTRFS_SUPER_INFO_SIZE; i++)
		cr_assert_eq(data[i], 0, "byte %llu of the superblock copy reached the device",
			     (unsigned long long)i);
	flatten(flat);
	cr_assert_eq(memcmp(data + at, flat, sb - at), 0);
	cr_assert_eq(memcmp(data + sb + BTRFS_SUPER_INFO_SIZE,
			    flat + (sb + BTRFS_SUPER_INFO_SIZE - at),
			    at + PIECES_LEN - sb - BTRFS_SUPER_INFO_SIZE), 0);
	cr_assert_eq(tlog_bdev_read(hold, back, sizeof(back), at), 0);
	cr_assert(holds_pieces(back));
	/* a gather write that misses every copy passes through as one write */
	mem->nr_writes = 0;
	cr_assert_eq(tlog_bdev_writev(hold, pieces, 3, 1 << 19), 0);
	cr_assert_eq(mem->nr_writes, 3);
	cr_assert(holds_pieces(data + (1 << 19)));
	cr_assert_eq(tlog_bdev_release_super(hold), 0);
	cr_assert(holds_pieces(data + at));
	tlog_bdev_close(hold);
}

Test(commit_writes, cow_keeps_a_gather_write_in_memory)
{
	struct tlog_bdev *mem, *cow;
	u8 back[PIECES_LEN];

	cr_assert_eq(tlog_bdev_create_memory("m", 1 << 20, &mem), 0);
	cr_assert_eq(tlog_bdev_wrap_cow(mem, &cow), 0);
	fill_pieces(4);
	cr_assert_eq(tlog_bdev_writev(cow, pieces, 3, 1000), 0);
	cr_assert_eq(tlog_bdev_read(cow, back, sizeof(back), 1000), 0);
	cr_assert(holds_pieces(back));
	cr_assert_eq(mem->nr_writes, 0);
	for (size_t i = 0; i < 1 << 20; i++)
		cr_assert_eq(tlog_bdev_memory_data(mem)[i], 0);
	cr_assert_eq(tlog_bdev_writev(cow, pieces, 3, (1 << 20) - 100), -EIO);
	tlog_bdev_close(cow);
	tlog_bdev_close(mem);
}

Test(commit_writes, gather_write_checks_range_and_mode)
{
	struct tlog_bdev *mem;

	cr_assert_eq(tlog_bdev_create_memory("m", 1 << 16, &mem), 0);
	fill_pieces(5);
	cr_assert_eq(tlog_bdev_writev(mem, pieces, 3, (1 << 16) - PIECES_LEN + 1), -EIO);
	cr_assert_eq(tlog_bdev_writev(mem, pieces, 3, (1 << 16) - PIECES_LEN), 0);
	cr_assert_eq(tlog_bdev_writev(mem, pieces, 0, 1 << 16), 0);
	mem->writable = false;
	cr_assert_eq(tlog_bdev_writev(mem, pieces, 3, 0), -EROFS);
	tlog_bdev_close(mem);
}

/* ---- the file backend: direct gather writes, buffered reads ---- */

#define FILE_LEN	(16U << 20)

static char *temp_image(const char *dir)
{
	char *path;
	int fd;

	cr_assert(asprintf(&path, "%s/tlog-commit-writes-XXXXXX", dir) > 0);
	fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	cr_assert_eq(ftruncate(fd, FILE_LEN), 0);
	close(fd);
	return path;
}

/* @len bytes of a pattern of @seed, in a buffer nothing aligns. */
static u8 *pattern(size_t len, u32 seed)
{
	u8 *p = malloc(len + 1);

	cr_assert(p);
	for (size_t i = 0; i < len; i++)
		p[i + 1] = (u8)(seed * 31 + i * 13 + (i >> 12));
	return p;
}

/*
 * A buffered read caches the range, a buffered write dirties part of it,
 * then gather writes cover it (aligned: O_DIRECT where the filesystem
 * takes it; and unaligned): buffered reads must see their bytes, before
 * and after a flush and a new open.
 */
static void check_file_gather(const char *dir)
{
	const size_t big = 5U << 20;	/* more than one bounce buffer */
	const u64 tail = (4U << 20) + 1512 + 12345;
	char *path = temp_image(dir);
	struct tlog_bdev *bdev;
	u8 *a, *b, *c, *back = malloc(big);
	struct iovec iov[3];

	if (!path) {
		free(back);
		return;
	}
	cr_assert(back);
	a = pattern(big, 1);
	b = pattern(big, 2);
	c = pattern(12345, 3);
	cr_assert_eq(tlog_bdev_open_file(path, TLOG_BDEV_RDWR, &bdev), 0, "%s: %s", path,
		     tlog_error_get());
	cr_assert_eq(tlog_bdev_read(bdev, back, big, 1 << 20), 0);
	cr_assert_eq(tlog_bdev_write(bdev, c + 1, 12345, (1 << 20) + 777), 0);
	/* aligned: two pieces of 4 MiB - 4 KiB + 1 MiB + 4 KiB, at an odd place in memory */
	iov[0] = (struct iovec){ a + 1, (4U << 20) - 4096 };
	iov[1] = (struct iovec){ a + 1 + iov[0].iov_len, big - iov[0].iov_len };
	cr_assert_eq(tlog_bdev_writev(bdev, iov, 2, 1 << 20), 0, "%s", tlog_error_get());
	cr_assert_eq(tlog_bdev_read(bdev, back, big, 1 << 20), 0);
	cr_assert_eq(memcmp(back, a + 1, big), 0, "%s: a read after a direct write", dir);
	/* unaligned offset and length: buffered */
	iov[0] = (struct iovec){ b + 1, 1000 };
	iov[1] = (struct iovec){ b + 1001, 1 << 20 };
	iov[2] = (struct iovec){ c + 1, 12345 };
	cr_assert_eq(tlog_bdev_writev(bdev, iov, 3, (3U << 20) + 512), 0);
	cr_assert_eq(tlog_bdev_read(bdev, back, 1000, (3U << 20) + 512), 0);
	cr_assert_eq(memcmp(back, b + 1, 1000), 0);
	cr_assert_eq(tlog_bdev_read(bdev, back, 12345, (4U << 20) + 1512), 0);
	cr_assert_eq(memcmp(back, c + 1, 12345), 0);
	cr_assert_eq(tlog_bdev_flush(bdev), 0);
	tlog_bdev_close(bdev);

	cr_assert_eq(tlog_bdev_open_file(path, TLOG_BDEV_RDONLY, &bdev), 0);
	cr_assert_eq(tlog_bdev_read(bdev, back, (2U << 20) + 512, 1 << 20), 0);
	cr_assert_eq(memcmp(back, a + 1, (2U << 20) + 512), 0);
	cr_assert_eq(tlog_bdev_read(bdev, back, 1 << 20, (3U << 20) + 1512), 0);
	cr_assert_eq(memcmp(back, b + 1001, 1 << 20), 0);
	cr_assert_eq(tlog_bdev_read(bdev, back, 12345, (4U << 20) + 1512), 0);
	cr_assert_eq(memcmp(back, c + 1, 12345), 0);
	/* the tail of the first gather write, past the others */
	cr_assert_eq(tlog_bdev_read(bdev, back, (1 << 20) + big - tail, tail), 0);
	cr_assert_eq(memcmp(back, a + 1 + (tail - (1 << 20)), (1 << 20) + big - tail), 0);
	tlog_bdev_close(bdev);
	unlink(path);
	free(path);
	free(a);
	free(b);
	free(c);
	free(back);
}

Test(commit_writes, file_gather_writes_are_seen_by_reads)
{
	const char *tmp = getenv("TMPDIR");

	check_file_gather(tmp && *tmp ? tmp : "/tmp");
	check_file_gather("/var/tmp");
	/* tmpfs: O_DIRECT refused before Linux 6.6, taken since */
	if (access("/dev/shm", W_OK) == 0)
		check_file_gather("/dev/shm");
}
