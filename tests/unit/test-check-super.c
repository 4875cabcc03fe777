// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tests the checker's superblock and volume passes (check-super.c) on a
 * filesystem made in memory: clean as made, and each damage - made with
 * the checksum re-sealed, so only the cross-reference can find it -
 * found with its numbers.  What the kernel itself leaves behind (a
 * mirror lagging one commit, a log root in the primary alone, a backup
 * slot of the next transaction) must stay clean.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "blockdev.h"
#include "check-priv.h"
#include "csum.h"
#include "ctree.h"
#include "mem-fs.h"
#include "root-tree.h"
#include "super.h"

#define MAX_SEEN 32

static char seen[MAX_SEEN][300];
static int nr_seen;

static void collect(const struct tlog_problem *p, void *arg)
{
	(void)arg;
	if (nr_seen < MAX_SEEN)
		snprintf(seen[nr_seen], sizeof(seen[0]), "%s: %s", p->area, p->what);
	nr_seen++;
}

/* Run both passes on @bdev, read-only; returns the problems found. */
static int run_checks(struct tlog_bdev *bdev)
{
	struct tlog_open_opts opts = { .super_mirror = -1 };
	struct tlog_check_stats stats = { 0 };
	struct tlog_check c = { 0 };
	struct tlog_fs *fs;

	nr_seen = 0;
	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0);
	c.bdev = bdev;
	c.fs = fs;
	c.stats = &stats;
	c.opts.report = collect;
	pthread_mutex_init(&c.lock, NULL);
	cr_assert_eq(check_super(&c, fs), 0);
	cr_assert_eq(check_chunks(&c, fs), 0);
	pthread_mutex_destroy(&c.lock);
	free(c.seen_problems);	/* what check_problem() remembers for the replay's check */
	tlog_close(fs);
	cr_assert_eq(stats.problems, (u64)nr_seen);
	return nr_seen;
}

static bool saw(const char *what)
{
	for (int i = 0; i < nr_seen && i < MAX_SEEN; i++)
		if (strstr(seen[i], what))
			return true;
	return false;
}

static void dump_seen(void)
{
	for (int i = 0; i < nr_seen && i < MAX_SEEN; i++)
		cr_log_info("%s", seen[i]);
}

static void put_le(u8 *p, int size, u64 v)
{
	for (int i = 0; i < size; i++)
		p[i] = (u8)(v >> (8 * i));
}

static u64 get_le(const u8 *p, int size)
{
	u64 v = 0;

	for (int i = size - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Set @size bytes at @off of superblock copy @mirror to @v and re-seal it. */
static void edit_super(struct tlog_bdev *bdev, int mirror, size_t off, int size, u64 v)
{
	u8 *sb = tlog_bdev_memory_data(bdev) + btrfs_sb_offset(mirror);
	u16 type = (u16)get_le(sb + offsetof(struct btrfs_super_block, csum_type), 2);

	put_le(sb + off, size, v);
	cr_assert_eq(btrfs_csum_data(type, sb + BTRFS_CSUM_SIZE,
				     BTRFS_SUPER_INFO_SIZE - BTRFS_CSUM_SIZE, sb), 0);
}

static u64 super_field(struct tlog_bdev *bdev, int mirror, size_t off, int size)
{
	return get_le(tlog_bdev_memory_data(bdev) + btrfs_sb_offset(mirror) + off, size);
}

/*
 * Add @delta to the @size-byte field at @field of the first item of type
 * @type at or after @min in tree @tree, in every copy of its leaf, and
 * re-seal the leaf.  Returns the field's old value.
 */
static u64 edit_item(struct tlog_bdev *bdev, u64 tree, const struct btrfs_key *min, u8 type,
		     u32 field, int size, u64 delta)
{
	struct tlog_open_opts opts = { .super_mirror = -1 };
	struct btrfs_path path;
	struct btrfs_root *root;
	struct btrfs_key key;
	struct tlog_fs *fs;
	u64 phys[2], old = 0;
	u32 item_off, nodesize;
	u16 csum_type;
	int copies, ret;
	u64 leaf;
	u8 *data = tlog_bdev_memory_data(bdev);

	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0);
	cr_assert_eq(btrfs_read_root(fs, tree, &root), 0);
	btrfs_init_path(&path);
	ret = btrfs_search_forward(root, min, &path);
	for (; ret == 0; ret = btrfs_next_item(root, &path)) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.type == type)
			break;
	}
	cr_assert_eq(ret, 0, "no item of type %u", type);
	leaf = path.nodes[0]->start;
	item_off = sizeof(struct btrfs_header) + btrfs_item_offset(path.nodes[0], path.slots[0]);
	btrfs_release_path(&path);
	nodesize = fs->nodesize;
	csum_type = fs->csum_type;
	copies = btrfs_map_block(fs, leaf, nodesize, phys, 2);
	cr_assert_gt(copies, 0);
	tlog_close(fs);
	for (int i = 0; i < copies; i++) {
		u8 *blk = data + phys[i];

		old = get_le(blk + item_off + field, size);
		put_le(blk + item_off + field, size, old + delta);
		cr_assert_eq(btrfs_csum_data(csum_type, blk + BTRFS_CSUM_SIZE,
					     nodesize - BTRFS_CSUM_SIZE, blk), 0);
	}
	return old;
}

#define SB_OFF(field) offsetof(struct btrfs_super_block, field)

Test(check_super, clean_as_made)
{
	struct tlog_bdev *bdev = memfs_make();

	cr_assert_eq(run_checks(bdev), 0, "first: %s", nr_seen ? seen[0] : "");
	tlog_bdev_close(bdev);
}

Test(check_super, clean_without_block_group_tree)
{
	struct tlog_bdev *bdev = memfs_make_features(0, 0,
						     BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE);

	cr_assert_eq(run_checks(bdev), 0, "first: %s", nr_seen ? seen[0] : "");
	tlog_bdev_close(bdev);
}

/* A power cut between the primary and the other copies of one commit. */
Test(check_super, mirror_one_commit_behind_is_clean)
{
	struct tlog_bdev *bdev = memfs_make();
	u64 gen = super_field(bdev, 1, SB_OFF(generation), 8);

	edit_super(bdev, 1, SB_OFF(generation), 8, gen - 1);
	edit_super(bdev, 1, SB_OFF(root), 8, 1ULL << 30);
	cr_assert_eq(run_checks(bdev), 0, "first: %s", nr_seen ? seen[0] : "");
	tlog_bdev_close(bdev);
}

/* A log sync writes its log root to the primary alone. */
Test(check_super, log_root_in_primary_alone_is_clean)
{
	struct tlog_bdev *bdev = memfs_make();

	edit_super(bdev, 0, SB_OFF(log_root), 8, 1ULL << 30);
	edit_super(bdev, 0, SB_OFF(log_root_level), 1, 0);
	cr_assert_eq(run_checks(bdev), 0, "first: %s", nr_seen ? seen[0] : "");
	tlog_bdev_close(bdev);
}

Test(check_super, mirror_newer_than_primary)
{
	struct tlog_bdev *bdev = memfs_make();
	u64 gen = super_field(bdev, 1, SB_OFF(generation), 8);

	edit_super(bdev, 1, SB_OFF(generation), 8, gen + 3);
	cr_assert_eq(run_checks(bdev), 1);
	dump_seen();
	cr_assert(saw("superblock copy 1 (at 67108864) has generation"), "%s", seen[0]);
	cr_assert(saw("newer than"));
	tlog_bdev_close(bdev);
}

Test(check_super, mirror_same_generation_other_root)
{
	struct tlog_bdev *bdev = memfs_make();
	u64 root = super_field(bdev, 1, SB_OFF(root), 8);

	edit_super(bdev, 1, SB_OFF(root), 8, root + 16384);
	cr_assert_eq(run_checks(bdev), 1);
	cr_assert(saw("disagree on root"), "%s", seen[0]);
	tlog_bdev_close(bdev);
}

Test(check_super, mirror_bad_checksum)
{
	struct tlog_bdev *bdev = memfs_make();

	tlog_bdev_memory_data(bdev)[btrfs_sb_offset(1) + SB_OFF(label)] ^= 1;
	cr_assert_eq(run_checks(bdev), 1);
	cr_assert(saw("superblock copy 1 (at 67108864): checksum mismatch"), "%s", seen[0]);
	tlog_bdev_close(bdev);
}

Test(check_super, backup_slot_of_current_generation_names_other_root)
{
	struct tlog_bdev *bdev = memfs_make();
	u64 gen = super_field(bdev, 0, SB_OFF(generation), 8);
	int hit = -1;

	for (int i = 0; i < BTRFS_NUM_BACKUP_ROOTS && hit < 0; i++) {
		size_t slot = SB_OFF(super_roots) + i * sizeof(struct btrfs_root_backup);
		size_t gen_off = slot + offsetof(struct btrfs_root_backup, tree_root_gen);

		if (super_field(bdev, 0, gen_off, 8) != gen)
			continue;
		hit = i;
		edit_super(bdev, 0, slot + offsetof(struct btrfs_root_backup, tree_root), 8,
			   super_field(bdev, 0, slot, 8) + 16384);
	}
	cr_assert_geq(hit, 0, "mkfs left no backup slot of generation %llu",
		      (unsigned long long)gen);
	cr_assert_eq(run_checks(bdev), 1);
	cr_assert(saw("backup root slot"), "%s", seen[0]);
	tlog_bdev_close(bdev);
}

/* The kernel fills the slot after the next transaction may have begun. */
Test(check_super, backup_slot_of_next_generation_is_clean)
{
	struct tlog_bdev *bdev = memfs_make();
	u64 gen = super_field(bdev, 0, SB_OFF(generation), 8);
	size_t slot = SB_OFF(super_roots) + 3 * sizeof(struct btrfs_root_backup);

	edit_super(bdev, 0, slot + offsetof(struct btrfs_root_backup, tree_root), 8, 1ULL << 30);
	edit_super(bdev, 0, slot + offsetof(struct btrfs_root_backup, tree_root_gen), 8, gen + 1);
	cr_assert_eq(run_checks(bdev), 0, "first: %s", nr_seen ? seen[0] : "");
	tlog_bdev_close(bdev);
}

Test(check_super, dev_extent_length)
{
	struct tlog_bdev *bdev = memfs_make();
	struct btrfs_key min = { 0, BTRFS_DEV_EXTENT_KEY, 0 };

	edit_item(bdev, BTRFS_DEV_TREE_OBJECTID, &min, BTRFS_DEV_EXTENT_KEY,
		  offsetof(struct btrfs_dev_extent, length), 8, 4096);
	cr_assert_geq(run_checks(bdev), 3);
	dump_seen();
	cr_assert(saw("dev extent 1048576 length 8392704, but chunk 1048576 has stripes of"),
		  "%s", seen[0]);
	cr_assert(saw("in its device item, but its dev extents add up to"));
	cr_assert(saw("in the superblock's dev_item, but its dev extents add up to"));
	tlog_bdev_close(bdev);
}

Test(check_super, dev_extent_names_missing_chunk)
{
	struct tlog_bdev *bdev = memfs_make();
	struct btrfs_key min = { 0, BTRFS_DEV_EXTENT_KEY, 0 };

	edit_item(bdev, BTRFS_DEV_TREE_OBJECTID, &min, BTRFS_DEV_EXTENT_KEY,
		  offsetof(struct btrfs_dev_extent, chunk_offset), 8, 4096);
	cr_assert_eq(run_checks(bdev), 2);
	dump_seen();
	cr_assert(saw("which does not exist"), "%s", seen[0]);
	cr_assert(saw("has no dev extent"));
	tlog_bdev_close(bdev);
}

Test(check_super, device_item_bytes_used)
{
	struct tlog_bdev *bdev = memfs_make();
	struct btrfs_key min = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, 0 };

	edit_item(bdev, BTRFS_CHUNK_TREE_OBJECTID, &min, BTRFS_DEV_ITEM_KEY,
		  offsetof(struct btrfs_dev_item, bytes_used), 8, (u64)-(1 << 20));
	cr_assert_eq(run_checks(bdev), 1);
	cr_assert(saw("in its device item, but its dev extents add up to"), "%s", seen[0]);
	tlog_bdev_close(bdev);
}

Test(check_super, block_group_flags)
{
	struct tlog_bdev *bdev = memfs_make_features(0, 0,
						     BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE);
	struct btrfs_key min = { 0, 0, 0 };

	edit_item(bdev, BTRFS_EXTENT_TREE_OBJECTID, &min, BTRFS_BLOCK_GROUP_ITEM_KEY,
		  offsetof(struct btrfs_block_group_item, flags), 8, BTRFS_BLOCK_GROUP_DATA);
	cr_assert_geq(run_checks(bdev), 1);
	cr_assert(saw("has flags"), "%s", seen[0]);
	cr_assert(saw("its chunk"));
	tlog_bdev_close(bdev);
}

Test(check_super, block_group_in_block_group_tree_used)
{
	struct tlog_bdev *bdev = memfs_make();
	struct btrfs_key min = { 0, 0, 0 };

	edit_item(bdev, BTRFS_BLOCK_GROUP_TREE_OBJECTID, &min, BTRFS_BLOCK_GROUP_ITEM_KEY,
		  offsetof(struct btrfs_block_group_item, used), 8, 1ULL << 40);
	cr_assert_eq(run_checks(bdev), 1);
	cr_assert(saw("exceeds its length"), "%s", seen[0]);
	tlog_bdev_close(bdev);
}

/* The logical address of the first chunk that is not a SYSTEM chunk. */
static u64 first_non_system_chunk(struct tlog_bdev *bdev)
{
	struct tlog_open_opts opts = { .super_mirror = -1 };
	struct tlog_fs *fs;
	u64 logical = 0;

	cr_assert_eq(tlog_open_bdev(bdev, &opts, &fs), 0);
	for (size_t i = 0; i < fs->chunks.nr && !logical; i++)
		if (!(fs->chunks.maps[i].type & BTRFS_BLOCK_GROUP_SYSTEM))
			logical = fs->chunks.maps[i].logical;
	tlog_close(fs);
	cr_assert_neq(logical, 0);
	return logical;
}

Test(check_super, chunk_stripe_device_uuid)
{
	struct tlog_bdev *bdev = memfs_make();
	struct btrfs_key min = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
				 first_non_system_chunk(bdev) };

	edit_item(bdev, BTRFS_CHUNK_TREE_OBJECTID, &min, BTRFS_CHUNK_ITEM_KEY,
		  offsetof(struct btrfs_chunk, stripe) + offsetof(struct btrfs_stripe, dev_uuid),
		  1, 1);
	cr_assert_geq(run_checks(bdev), 1);
	dump_seen();
	cr_assert(saw("names device uuid"), "%s", seen[0]);
	tlog_bdev_close(bdev);
}

/*
 * A SYSTEM chunk must be the same in the sys_chunk_array and the chunk
 * tree.  The open refuses the differences that change the chunk map;
 * the others are the checker's.
 */
Test(check_super, sys_array_chunk_differs)
{
	struct tlog_bdev *bdev = memfs_make();
	size_t off = SB_OFF(sys_chunk_array) + sizeof(struct btrfs_disk_key) +
		     offsetof(struct btrfs_chunk, sub_stripes);

	edit_super(bdev, 0, off, 2, super_field(bdev, 0, off, 2) + 1);
	cr_assert_eq(run_checks(bdev), 2);
	dump_seen();
	cr_assert(saw("its sub_stripes differs between the sys_chunk_array and the chunk tree"),
		  "%s", seen[0]);
	/* the primary is now of another sys_chunk_array than copy 1 */
	cr_assert(saw("disagree on the sys_chunk_array"));
	tlog_bdev_close(bdev);
}
