// SPDX-License-Identifier: GPL-2.0-only
/*
 * The free space tree against a model of the free ranges of the data block
 * group: sector-sized data extents allocated, every other one freed so the
 * group's free runs cross the kernel's threshold and it turns to bitmaps,
 * then random frees and allocations in bitmap form, each committed and the
 * device opened again.  The tree (extents and bitmaps decoded) must hold
 * exactly the model's free ranges after every commit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "block-group.h"
#include "errctx.h"
#include "file-extent.h"
#include "mem-fs.h"
#include "transaction.h"

#define INO		300
#define MAX_EXT		2048

struct fmodel {
	u64 bytenr[MAX_EXT], len[MAX_EXT];	/* by file slot; len 0: free slot */
	int nr;
	u64 bg_start, bg_len;
};

static int cmp_u64pair(const void *a, const void *b)
{
	const u64 *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The free runs the model implies; the number of runs. */
static size_t model_free(const struct fmodel *m, struct free_range *out, size_t max)
{
	static u64 used[MAX_EXT][2];
	u64 pos = m->bg_start;
	size_t n = 0, k = 0;

	for (int i = 0; i < m->nr; i++)
		if (m->len[i]) {
			used[k][0] = m->bytenr[i];
			used[k++][1] = m->len[i];
		}
	qsort(used, k, sizeof(used[0]), cmp_u64pair);
	for (size_t i = 0; i <= k; i++) {
		u64 next = i < k ? used[i][0] : m->bg_start + m->bg_len;

		cr_assert_geq(next, pos, "model extents overlap at %llu", (unsigned long long)next);
		if (next > pos) {
			cr_assert_lt(n, max);
			out[n++] = (struct free_range){ pos, next - pos };
		}
		if (i < k)
			pos = used[i][0] + used[i][1];
	}
	return n;
}

/* Compare the data group's free space tree with the model; its info flags. */
static u32 check(struct tlog_bdev *bdev, const struct fmodel *m, u64 seed, int round,
		 size_t *nr_runs)
{
	static struct free_range want[MAX_EXT + 1];
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct free_range *got;
	size_t nr, nwant;
	u64 start, len;
	u32 flags;

	flags = memfs_fst_group(fs, m->bg_start, &got, &nr, &start, &len);
	cr_assert_eq(start, m->bg_start);
	nwant = model_free(m, want, MAX_EXT + 1);
	cr_assert_eq(nr, nwant, "seed %llu round %d: %zu free runs in the tree, model %zu",
		     (unsigned long long)seed, round, nr, nwant);
	for (size_t i = 0; i < nr; i++) {
		cr_assert_eq(got[i].start, want[i].start, "seed %llu round %d run %zu",
			     (unsigned long long)seed, round, i);
		cr_assert_eq(got[i].len, want[i].len, "seed %llu round %d run %zu at %llu",
			     (unsigned long long)seed, round, i, (unsigned long long)got[i].start);
	}
	free(got);
	memfs_check_free_space_tree(fs);
	tlog_close(fs);
	*nr_runs = nr;
	return flags;
}

static void alloc_one(struct tlog_trans *trans, struct btrfs_root *root, struct fmodel *m,
		      int slot, u64 len)
{
	u64 bytenr;

	cr_assert_eq(memfs_write_extent(trans, root, INO, (u64)slot * 4 * trans->fs->sectorsize,
					len, slot, &bytenr), 0, "%s", tlog_error_get());
	m->bytenr[slot] = bytenr;
	m->len[slot] = len;
}

static void free_one(struct tlog_trans *trans, struct btrfs_root *root, struct fmodel *m,
		     int slot)
{
	u64 off = (u64)slot * 4 * trans->fs->sectorsize, found;

	cr_assert_eq(btrfs_drop_file_extents(trans, root, INO, off, off + m->len[slot], &found),
		     0, "%s", tlog_error_get());
	cr_assert_eq(found, m->len[slot]);
	m->len[slot] = 0;
}

Test(memfs_fst, free_ranges_follow_the_model_across_bitmaps)
{
	static struct fmodel m;
	struct tlog_bdev *bdev = memfs_make();
	u64 seed = memfs_seed(), s = seed | 1;
	struct tlog_trans *trans;
	struct btrfs_root *root;
	struct tlog_fs *fs;
	u32 ss, flags;
	u64 high, ops = 0;
	size_t runs, most = 0;
	int bitmap_rounds = 0;

	memset(&m, 0, sizeof(m));
	fs = memfs_open(bdev, 0, 0);
	root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	ss = fs->sectorsize;
	/* round 0: 600 one-sector extents, side by side */
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_eq(memfs_create_inode(trans, root, INO, 0, 0), 0);
	m.nr = 600;
	for (int i = 0; i < m.nr; i++)
		alloc_one(trans, root, &m, i, ss);
	cr_assert_eq(tlog_trans_commit(trans), 0);
	{
		struct tlog_block_groups bgs;
		struct tlog_block_group *bg;

		cr_assert_eq(btrfs_load_block_groups(fs, &bgs), 0);
		bg = btrfs_lookup_block_group(&bgs, m.bytenr[0]);
		cr_assert_not_null(bg);
		cr_assert(bg->flags & BTRFS_BLOCK_GROUP_DATA);
		m.bg_start = bg->start;
		m.bg_len = bg->length;
		btrfs_free_block_groups(&bgs);
	}
	tlog_close(fs);
	/* the kernel's threshold: runs cost more as extent items than as bitmaps */
	high = (m.bg_len + 256ULL * 8 * ss - 1) / (256ULL * 8 * ss) *
	       (sizeof(struct btrfs_item) + 256) / sizeof(struct btrfs_item);
	cr_assert_lt(high, 290, "the threshold %llu cannot be crossed", (unsigned long long)high);
	flags = check(bdev, &m, seed, 0, &runs);
	cr_assert_not(flags & BTRFS_FREE_SPACE_USING_BITMAPS);

	for (int round = 1; round <= 6; round++) {
		fs = memfs_open(bdev, 0, 0);
		root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
		cr_assert_eq(tlog_trans_start(fs, &trans), 0);
		if (round == 1) {
			/* every other one: ~300 runs, past the threshold */
			for (int i = 0; i < m.nr; i += 2, ops++)
				free_one(trans, root, &m, i);
		} else if (round < 6) {
			for (int k = 0; k < 150; k++, ops++) {
				int slot = memfs_rng(&s) % (m.nr + 20);

				if (slot >= MAX_EXT)
					continue;
				if (slot < m.nr && m.len[slot]) {
					free_one(trans, root, &m, slot);
				} else {
					alloc_one(trans, root, &m, slot, (1 + memfs_rng(&s) % 3) * ss);
					if (slot >= m.nr)
						m.nr = slot + 1;
				}
			}
		} else {
			/* everything goes: one run, the whole group */
			for (int i = 0; i < m.nr; i++, ops++)
				if (m.len[i])
					free_one(trans, root, &m, i);
		}
		cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
		tlog_close(fs);
		flags = check(bdev, &m, seed, round, &runs);
		if (runs > most)
			most = runs;
		if (flags & BTRFS_FREE_SPACE_USING_BITMAPS)
			bitmap_rounds++;
		if (round == 1)
			cr_assert(flags & BTRFS_FREE_SPACE_USING_BITMAPS,
				  "%zu runs (threshold %llu) and still extents", runs,
				  (unsigned long long)high);
	}
	cr_assert_eq(runs, 1);
	cr_assert_gt(most, high);
	cr_assert_geq(bitmap_rounds, 5);
	cr_log_info("fst: %llu allocations and frees, up to %zu runs (threshold %llu), %d rounds in bitmaps",
		    (unsigned long long)ops + 600, most, (unsigned long long)high, bitmap_rounds);
	tlog_bdev_close(bdev);
}
