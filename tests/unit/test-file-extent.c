// SPDX-License-Identifier: GPL-2.0-only
// Tests btrfs_drop_file_extents() (file-extent.c) on an in-memory tree with
// hole extents (REG, disk_bytenr 0) and inline extents, which need no
// extent tree: every way an item can meet the dropped range, then random
// drops against a model of the file's map.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "csum.h"
#include "ctree.h"
#include "errctx.h"
#include "file-extent.h"
#include "transaction.h"
#include "mem-tree.h"

/* ---- an in-memory tree to change (mem-tree.c) ---- */

static struct mem_tree F;

static void setup_nodesize(u32 nodesize)
{
	mem_tree_setup(&F, nodesize, 9);
}

static void setup(void)
{
	setup_nodesize(16384);
}

static void setup_small(void)
{
	setup_nodesize(4096);
}

static void teardown(void)
{
	mem_tree_teardown(&F);
}

TestSuite(file_extent, .init = setup, .fini = teardown);

/* ---- helpers ---- */

#define INO	257ULL
#define K	1024ULL
#define END	((u64)-1)

/*
 * A hole extent of @len bytes at file offset @off.  @fioff (its "offset"
 * field) and @gen (its generation) tell the pieces of an extent apart; its
 * ram_bytes is @len and must survive cuts.
 */
static void put_hole(u64 ino, u64 off, u64 len, u64 fioff, u64 gen)
{
	struct btrfs_key key = { ino, BTRFS_EXTENT_DATA_KEY, off };
	struct btrfs_file_extent_item fi;

	memset(&fi, 0, sizeof(fi));
	btrfs_set_file_extent_item_generation(&fi, gen);
	btrfs_set_file_extent_item_ram_bytes(&fi, len);
	btrfs_set_file_extent_item_type(&fi, BTRFS_FILE_EXTENT_REG);
	btrfs_set_file_extent_item_offset(&fi, fioff);
	btrfs_set_file_extent_item_num_bytes(&fi, len);
	cr_assert_eq(btrfs_insert_item(&F.trans, &F.root, &key, &fi, sizeof(fi)), 0, "%s",
		     tlog_error_get());
}

/* An inline extent of @len bytes of data standing for @ram bytes of the file. */
static void put_inline(u64 ino, u64 off, u32 len, u64 ram, u8 compression)
{
	struct btrfs_key key = { ino, BTRFS_EXTENT_DATA_KEY, off };
	u8 buf[BTRFS_FILE_EXTENT_INLINE_DATA_START + 256];
	struct btrfs_file_extent_item *fi = (void *)buf;

	cr_assert_leq(len, 256);
	memset(buf, 0, sizeof(buf));
	btrfs_set_file_extent_item_generation(fi, 5);
	btrfs_set_file_extent_item_ram_bytes(fi, ram);
	btrfs_set_file_extent_item_compression(fi, compression);
	btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_INLINE);
	for (u32 i = 0; i < len; i++)
		buf[BTRFS_FILE_EXTENT_INLINE_DATA_START + i] = (u8)('a' + i % 26);
	cr_assert_eq(btrfs_insert_item(&F.trans, &F.root, &key, buf,
				       BTRFS_FILE_EXTENT_INLINE_DATA_START + len), 0);
}

/* What a test expects of one item; type INLINE items only have start and ram. */
struct ext {
	u64 start, len, offset, ram, gen;
	u8 type;
};

#define HOLE(start, len, offset, ram, gen) \
	{ (start), (len), (offset), (ram), (gen), BTRFS_FILE_EXTENT_REG }
#define INLINE(start, ram) { (start), 0, 0, (ram), 5, BTRFS_FILE_EXTENT_INLINE }

static int list_extents(u64 ino, struct ext *v, int max)
{
	struct btrfs_key min = { ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct btrfs_key maxk = { ino, BTRFS_EXTENT_DATA_KEY, (u64)-1 };
	struct btrfs_tree_iter iter;
	int n = 0;

	btrfs_for_each_item(&F.root, &iter, &min, &maxk) {
		const struct btrfs_file_extent_item *fi = btrfs_item_ptr(iter.leaf, iter.slot);
		u32 size = btrfs_item_size(iter.leaf, iter.slot);

		cr_assert_lt(n, max, "more than %d extents", max);
		v[n].start = iter.key.offset;
		v[n].type = btrfs_file_extent_item_type(fi);
		v[n].ram = btrfs_file_extent_item_ram_bytes(fi);
		v[n].gen = btrfs_file_extent_item_generation(fi);
		if (v[n].type == BTRFS_FILE_EXTENT_INLINE) {
			v[n].len = v[n].offset = 0;
		} else {
			cr_assert_eq(size, sizeof(*fi));
			cr_assert_eq(v[n].type, BTRFS_FILE_EXTENT_REG);
			cr_assert_eq(btrfs_file_extent_item_disk_bytenr(fi), 0, "still a hole");
			cr_assert_eq(btrfs_file_extent_item_disk_num_bytes(fi), 0);
			cr_assert_eq(btrfs_file_extent_item_compression(fi), 0);
			v[n].len = btrfs_file_extent_item_num_bytes(fi);
			v[n].offset = btrfs_file_extent_item_offset(fi);
		}
		n++;
	}
	cr_assert_geq(iter.ret, 0);
	btrfs_tree_iter_end(&iter);
	return n;
}

static void expect_extents(u64 ino, const struct ext *want, int nr)
{
	struct ext got[64];
	int n = list_extents(ino, got, 64);

	for (int i = 0; i < n && i < nr; i++) {
		cr_assert_eq(got[i].start, want[i].start, "extent %d starts at %lluK, not %lluK", i,
			     (unsigned long long)got[i].start / K,
			     (unsigned long long)want[i].start / K);
		cr_assert_eq(got[i].type, want[i].type, "extent %d: type", i);
		cr_assert_eq(got[i].len, want[i].len, "extent %d: %lluK long, not %lluK", i,
			     (unsigned long long)got[i].len / K,
			     (unsigned long long)want[i].len / K);
		cr_assert_eq(got[i].offset, want[i].offset, "extent %d: offset %lluK, not %lluK",
			     i, (unsigned long long)got[i].offset / K,
			     (unsigned long long)want[i].offset / K);
		cr_assert_eq(got[i].ram, want[i].ram, "extent %d: ram_bytes", i);
		cr_assert_eq(got[i].gen, want[i].gen, "extent %d: generation", i);
	}
	cr_assert_eq(n, nr, "%d extents, expected %d", n, nr);
}

#define EXPECT(ino, ...) do {							\
		const struct ext want_[] = { __VA_ARGS__ };			\
		expect_extents((ino), want_, sizeof(want_) / sizeof(want_[0]));	\
	} while (0)
#define EXPECT_NONE(ino)	expect_extents((ino), NULL, 0)

static void check_tree(void)
{
	u64 items, blocks;

	cr_assert_eq(btrfs_check_tree_structure(&F.root, &items, &blocks), 0, "tree check: %s",
		     tlog_error_get());
	cr_assert_eq(blocks, F.alloc.allocated);
}

static bool item_exists(u64 objectid, u8 type, u64 offset)
{
	struct btrfs_key key = { objectid, type, offset };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(&F.root, &key, &path);
	btrfs_release_path(&path);
	cr_assert_geq(ret, 0);
	return ret == 0;
}

/* Drop [start, end) of INO; the return value must be @want_ret. */
static u64 drop_ret(u64 start, u64 end, int want_ret)
{
	u64 found = 12345;
	int ret = btrfs_drop_file_extents(&F.trans, &F.root, INO, start, end, &found);

	cr_assert_eq(ret, want_ret, "drop [%llu, %llu): %d, expected %d (%s)",
		     (unsigned long long)start, (unsigned long long)end, ret, want_ret,
		     tlog_error_get());
	return found;
}

/* Drop [start, end) of INO, which holds only holes: nothing counts. */
static void drop_holes(u64 start, u64 end)
{
	cr_assert_eq(drop_ret(start, end, 0), 0, "holes have no bytes");
	check_tree();
}

/* ---- one extent and the range ---- */

Test(file_extent, range_inside_one_extent_splits_it)
{
	put_hole(INO, 0, 64 * K, 8 * K, 1);
	drop_holes(16 * K, 24 * K);
	EXPECT(INO, HOLE(0, 16 * K, 8 * K, 64 * K, 1),
	       HOLE(24 * K, 40 * K, 32 * K, 64 * K, 1));
	/* and the second piece once more */
	drop_holes(28 * K, 60 * K);
	EXPECT(INO, HOLE(0, 16 * K, 8 * K, 64 * K, 1),
	       HOLE(24 * K, 4 * K, 32 * K, 64 * K, 1),
	       HOLE(60 * K, 4 * K, 68 * K, 64 * K, 1));
}

Test(file_extent, range_inside_an_extent_not_at_zero)
{
	put_hole(INO, 100 * K, 40 * K, 0, 1);
	drop_holes(104 * K, 136 * K);
	EXPECT(INO, HOLE(100 * K, 4 * K, 0, 40 * K, 1), HOLE(136 * K, 4 * K, 36 * K, 40 * K, 1));
}

Test(file_extent, cut_the_tail)
{
	put_hole(INO, 0, 64 * K, 0, 1);
	/* the range ends where the extent does */
	drop_holes(48 * K, 64 * K);
	EXPECT(INO, HOLE(0, 48 * K, 0, 64 * K, 1));
	/* the range goes on past it */
	drop_holes(40 * K, 100 * K);
	EXPECT(INO, HOLE(0, 40 * K, 0, 64 * K, 1));
	/* to the end of the file */
	drop_holes(36 * K, END);
	EXPECT(INO, HOLE(0, 36 * K, 0, 64 * K, 1));
	/* a range just after the extent leaves it alone */
	drop_holes(36 * K, 40 * K);
	EXPECT(INO, HOLE(0, 36 * K, 0, 64 * K, 1));
}

Test(file_extent, cut_the_front)
{
	put_hole(INO, 16 * K, 48 * K, 4 * K, 1);
	/* the range starts before the extent */
	drop_holes(0, 32 * K);
	EXPECT(INO, HOLE(32 * K, 32 * K, 20 * K, 48 * K, 1));
	/* the range starts where the extent does */
	drop_holes(32 * K, 40 * K);
	EXPECT(INO, HOLE(40 * K, 24 * K, 28 * K, 48 * K, 1));
	/* a range just before it leaves it alone */
	drop_holes(36 * K, 40 * K);
	EXPECT(INO, HOLE(40 * K, 24 * K, 28 * K, 48 * K, 1));
	/* one sector left */
	drop_holes(0, 60 * K);
	EXPECT(INO, HOLE(60 * K, 4 * K, 48 * K, 48 * K, 1));
}

Test(file_extent, drop_whole_extents)
{
	put_hole(INO, 0, 16 * K, 0, 1);
	put_hole(INO, 16 * K, 16 * K, 0, 2);
	put_hole(INO, 48 * K, 16 * K, 0, 3);
	/* exactly one extent */
	drop_holes(16 * K, 32 * K);
	EXPECT(INO, HOLE(0, 16 * K, 0, 16 * K, 1), HOLE(48 * K, 16 * K, 0, 16 * K, 3));
	/* a range around one extent */
	drop_holes(40 * K, 72 * K);
	EXPECT(INO, HOLE(0, 16 * K, 0, 16 * K, 1));
	drop_holes(0, 16 * K);
	EXPECT_NONE(INO);
}

Test(file_extent, range_spanning_several_extents)
{
	put_hole(INO, 0, 16 * K, 0, 1);
	put_hole(INO, 16 * K, 16 * K, 0, 2);
	put_hole(INO, 48 * K, 32 * K, 0, 3);
	put_hole(INO, 80 * K, 16 * K, 0, 4);
	/* the tail of 1, all of 2, a gap, the front of 3 */
	drop_holes(8 * K, 64 * K);
	EXPECT(INO, HOLE(0, 8 * K, 0, 16 * K, 1), HOLE(64 * K, 16 * K, 16 * K, 32 * K, 3),
	       HOLE(80 * K, 16 * K, 0, 16 * K, 4));
	/* from a gap, across two extents' boundary */
	drop_holes(4 * K, 84 * K);
	EXPECT(INO, HOLE(0, 4 * K, 0, 16 * K, 1), HOLE(84 * K, 12 * K, 4 * K, 16 * K, 4));
}

Test(file_extent, range_to_the_end_of_the_file)
{
	/* other inodes' extents and items around must stay */
	put_hole(INO - 1, 0, 16 * K, 0, 7);
	put_hole(INO - 1, 64 * K, 16 * K, 0, 7);
	put_hole(INO + 1, 0, 16 * K, 0, 8);
	cr_assert_eq(btrfs_insert_item(&F.trans, &F.root,
				       &(struct btrfs_key){ INO, BTRFS_INODE_ITEM_KEY, 0 },
				       "inode", 5), 0);
	put_hole(INO, 0, 16 * K, 0, 1);
	put_hole(INO, 16 * K, 16 * K, 0, 2);
	put_hole(INO, 48 * K, 32 * K, 0, 3);
	put_hole(INO, 1ULL << 40, 16 * K, 0, 4);

	drop_holes(8 * K, END);
	EXPECT(INO, HOLE(0, 8 * K, 0, 16 * K, 1));
	drop_holes(0, END);
	EXPECT_NONE(INO);
	EXPECT(INO - 1, HOLE(0, 16 * K, 0, 16 * K, 7), HOLE(64 * K, 16 * K, 0, 16 * K, 7));
	EXPECT(INO + 1, HOLE(0, 16 * K, 0, 16 * K, 8));
	cr_assert(item_exists(INO, BTRFS_INODE_ITEM_KEY, 0), "the inode item is not an extent");
	/* the previous inode's last extent is not in the way of a search from 0 */
	put_hole(INO, 32 * K, 16 * K, 0, 5);
	drop_holes(0, 40 * K);
	EXPECT(INO, HOLE(40 * K, 8 * K, 8 * K, 16 * K, 5));
	EXPECT(INO - 1, HOLE(0, 16 * K, 0, 16 * K, 7), HOLE(64 * K, 16 * K, 0, 16 * K, 7));
}

Test(file_extent, nothing_to_drop)
{
	/* an inode without extents */
	drop_holes(0, END);
	EXPECT_NONE(INO);
	put_hole(INO, 0, 16 * K, 0, 1);
	put_hole(INO, 48 * K, 16 * K, 0, 2);
	/* a gap, an empty range, a range past the end */
	drop_holes(16 * K, 48 * K);
	drop_holes(20 * K, 24 * K);
	drop_holes(8 * K, 8 * K);
	drop_holes(64 * K, END);
	drop_holes(1ULL << 40, (1ULL << 40) + 4 * K);
	EXPECT(INO, HOLE(0, 16 * K, 0, 16 * K, 1), HOLE(48 * K, 16 * K, 0, 16 * K, 2));
	/* another inode */
	cr_assert_eq(btrfs_drop_file_extents(&F.trans, &F.root, INO + 1, 0, END,
					     &(u64){ 0 }), 0);
	EXPECT(INO, HOLE(0, 16 * K, 0, 16 * K, 1), HOLE(48 * K, 16 * K, 0, 16 * K, 2));
}

/* ---- inline extents ---- */

Test(file_extent, inline_extent_dropped_whole)
{
	put_inline(INO, 0, 11, 11, BTRFS_COMPRESS_NONE);
	cr_assert_eq(drop_ret(0, 4 * K, 0), 11, "bytes_found is the inline size");
	EXPECT_NONE(INO);
	check_tree();

	/* ranges are whole sectors: the inline extent's own range is refused */
	put_inline(INO, 0, 100, 100, BTRFS_COMPRESS_NONE);
	drop_ret(0, 100, -EINVAL);
	EXPECT(INO, INLINE(0, 100));
}

Test(file_extent, compressed_inline_extent_counts_ram_bytes)
{
	put_inline(INO, 0, 20, 3000, BTRFS_COMPRESS_ZLIB);
	cr_assert_eq(drop_ret(0, END, 0), 3000);
	EXPECT_NONE(INO);
}

Test(file_extent, inline_extent_and_holes)
{
	put_inline(INO, 0, 50, 50, BTRFS_COMPRESS_NONE);
	put_hole(INO, 4 * K, 8 * K, 0, 1);
	put_hole(INO, 12 * K, 8 * K, 0, 2);
	/* only the holes: nothing counts */
	cr_assert_eq(drop_ret(8 * K, 16 * K, 0), 0);
	EXPECT(INO, INLINE(0, 50), HOLE(4 * K, 4 * K, 0, 8 * K, 1),
	       HOLE(16 * K, 4 * K, 4 * K, 8 * K, 2));
	/* the inline extent and a hole: only the inline data counts */
	cr_assert_eq(drop_ret(0, 8 * K, 0), 50);
	EXPECT(INO, HOLE(16 * K, 4 * K, 4 * K, 8 * K, 2));
	check_tree();
}

Test(file_extent, unaligned_ranges_are_refused)
{
	put_inline(INO, 0, 100, 100, BTRFS_COMPRESS_NONE);
	/* a range must be whole sectors (the end may be "to the end of the file") */
	drop_ret(50, 4 * K, -EINVAL);
	drop_ret(0, 50, -EINVAL);
	drop_ret(10, 20, -EINVAL);
	drop_ret(99, END, -EINVAL);
	EXPECT(INO, INLINE(0, 100));
	/* past its sector there is nothing */
	cr_assert_eq(drop_ret(4 * K, 8 * K, 0), 0);
	EXPECT(INO, INLINE(0, 100));
	check_tree();
}

/* ---- random drops against a model, on 4K leaves ---- */

TestSuite(file_extent_small, .init = setup_small, .fini = teardown);

#define SECT	4096ULL
#define NS	4096		/* sectors in the modelled file: 16 MiB */

struct cell {
	u64 gen;	/* 0: nothing mapped */
	u64 off;	/* the "offset" field an item covering this sector gives it */
};

struct rmodel {
	struct cell c[NS];
	u64 ram[1 << 16];	/* ram_bytes by generation */
	u64 next_gen;
};

/* A hole extent of its own over sectors [s, s + n), in the tree and the model. */
static void model_put(struct rmodel *m, u64 s, u64 n)
{
	u64 gen = m->next_gen++;
	/* distinct offsets: no two extents' pieces can ever look continuous */
	u64 base = (gen << 24) * SECT + (u64)(rand() % 16) * SECT;

	cr_assert_lt(gen, 1 << 16);
	put_hole(INO, s * SECT, n * SECT, base, gen);
	m->ram[gen] = n * SECT;
	for (u64 i = 0; i < n; i++)
		m->c[s + i] = (struct cell){ gen, base + i * SECT };
}

/* Fill some of the unmapped sectors with new extents. */
static void model_fill(struct rmodel *m, int pct)
{
	u64 s = 0;

	while (s < NS) {
		u64 n;

		if (m->c[s].gen || rand() % 100 >= pct) {
			s++;
			continue;
		}
		n = 1 + rand() % 16;
		for (u64 i = 1; i < n; i++) {
			if (s + i >= NS || m->c[s + i].gen) {
				n = i;
				break;
			}
		}
		model_put(m, s, n);
		s += n;
	}
}

static void model_check(const struct rmodel *m)
{
	static struct ext want[NS], got[NS];
	int nw = 0, ng;

	for (u64 s = 0; s < NS; s++) {
		const struct cell *c = &m->c[s];

		if (!c->gen)
			continue;
		if (nw && want[nw - 1].gen == c->gen &&
		    want[nw - 1].start + want[nw - 1].len == s * SECT &&
		    want[nw - 1].offset + want[nw - 1].len == c->off) {
			want[nw - 1].len += SECT;
			continue;
		}
		want[nw++] = (struct ext)HOLE(s * SECT, SECT, c->off, m->ram[c->gen], c->gen);
	}
	ng = list_extents(INO, got, NS);
	for (int i = 0; i < ng && i < nw; i++) {
		cr_assert_eq(got[i].start, want[i].start, "extent %d at sector %llu, expected %llu",
			     i, (unsigned long long)(got[i].start / SECT),
			     (unsigned long long)(want[i].start / SECT));
		cr_assert_eq(got[i].len, want[i].len, "extent %d (sector %llu): %llu sectors, "
			     "expected %llu", i, (unsigned long long)(got[i].start / SECT),
			     (unsigned long long)(got[i].len / SECT),
			     (unsigned long long)(want[i].len / SECT));
		cr_assert_eq(got[i].offset, want[i].offset, "extent %d: offset", i);
		cr_assert_eq(got[i].gen, want[i].gen, "extent %d: generation", i);
		cr_assert_eq(got[i].ram, want[i].ram, "extent %d: ram_bytes", i);
	}
	cr_assert_eq(ng, nw, "%d extents, the model has %d", ng, nw);
}

static void random_drops(unsigned int seed, int steps)
{
	struct rmodel *m = calloc(1, sizeof(*m));
	int max_level = 0;

	srand(seed);
	m->next_gen = 1;
	/* neighbours that must not be touched */
	put_hole(INO - 1, 0, 64 * K, 0, 9000);
	put_hole(INO - 1, 1ULL << 30, 64 * K, 0, 9001);
	put_hole(INO + 1, 0, 64 * K, 0, 9002);
	model_fill(m, 90);
	model_check(m);
	for (int step = 0; step < steps; step++) {
		u64 s = rand() % NS, len, e;
		int r = rand() % 100;

		/* mostly short ranges, some long ones, some to the end of the file */
		len = r < 70 ? 1 + rand() % 24 : r < 90 ? 1 + rand() % (NS / 4) : NS;
		e = s + len > NS ? NS : s + len;
		if (r >= 95) {
			drop_holes(s * SECT, END);
			e = NS;
		} else {
			drop_holes(s * SECT, e * SECT);
		}
		for (u64 i = s; i < e; i++)
			m->c[i].gen = 0;
		model_check(m);
		if (F.root.level > max_level)
			max_level = F.root.level;
		if (step % 16 == 15)
			model_fill(m, 40);
	}
	cr_assert_geq(max_level, 1, "the file's items spanned several leaves");
	EXPECT(INO - 1, HOLE(0, 64 * K, 0, 64 * K, 9000),
	       HOLE(1ULL << 30, 64 * K, 0, 64 * K, 9001));
	EXPECT(INO + 1, HOLE(0, 64 * K, 0, 64 * K, 9002));
	free(m);
}

Test(file_extent_small, random_drops_1, .timeout = 120)
{
	random_drops(1, 600);
}

Test(file_extent_small, random_drops_2, .timeout = 120)
{
	random_drops(2, 600);
}
