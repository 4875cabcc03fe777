/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A filesystem on a memory device for unit tests of the write path: mkfs,
 * open (with fault injection), the items a test puts in the fs tree, files
 * with data extents, and reading back what the extent and free space trees
 * say.  No file and no root are needed.
 */
#ifndef TESTS_UNIT_MEM_FS_H
#define TESTS_UNIT_MEM_FS_H

#include "blockdev.h"
#include "ctree.h"
#include "transaction.h"

#define MEMFS_SIZE	(256ULL << 20)

/* xorshift: the random operations of a test, repeatable from its seed */
static inline u32 memfs_rng(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (u32)(*s >> 11);
}

/* The seed of the random tests: TLOG_TEST_SEED, else a fixed one. */
u64 memfs_seed(void);

/* A fresh filesystem (fixed fsid) on a new memory device. */
struct tlog_bdev *memfs_make(void);
/* The same with tree blocks of @nodesize bytes (0: the default). */
struct tlog_bdev *memfs_make_nodesize(u32 nodesize);
/* The same without the incompat and compat_ro feature bits given. */
struct tlog_bdev *memfs_make_features(u32 nodesize, u64 clear_incompat, u64 clear_compat_ro);
/* Open @bdev writable; @fault_mode 0 for none.  Asserts success. */
struct tlog_fs *memfs_open(struct tlog_bdev *bdev, int fault_mode, u64 fault_nth);
/* The same, returning the error instead of asserting. */
int memfs_try_open(struct tlog_bdev *bdev, int fault_mode, u64 fault_nth, struct tlog_fs **fs);
struct btrfs_root *memfs_root(struct tlog_fs *fs, u64 objectid);
/* Open @bdev, start a transaction, let @change damage it, commit (checker tests). */
void memfs_damage(struct tlog_bdev *bdev, void (*change)(struct tlog_trans *, void *), void *arg);
/* The item @key of @tree, its leaf dirtied for writing; asserts it is there. */
struct btrfs_path;
void *memfs_item_for_write(struct tlog_trans *trans, u64 tree, const struct btrfs_key *key,
			   struct btrfs_path *path);
/* The generation of superblock copy @mirror as on the device (0 if absent/invalid magic). */
u64 memfs_super_generation(struct tlog_bdev *bdev, int mirror);

/* A bare inode item @ino (regular file, @size bytes, @nbytes counted). */
int memfs_create_inode(struct tlog_trans *trans, struct btrfs_root *root, u64 ino, u64 size,
		       u64 nbytes);
/* A regular file extent item: @ino maps [file_off, +num) to @bytenr's extent at @offset. */
int memfs_insert_file_extent(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			     u64 file_off, u64 bytenr, u64 disk_len, u64 offset, u64 num);
/* A new data extent of @len bytes for @ino at @file_off, written with a pattern of @seed. */
int memfs_write_extent(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
		       u64 file_off, u64 len, u32 seed, u64 *bytenr);

/* refs of the EXTENT_ITEM of @bytenr (@len), 0 when there is none; <0 on read error. */
s64 memfs_extent_refs(struct tlog_fs *fs, u64 bytenr, u64 len);

/*
 * Compare the free space tree with the free space the extent tree implies,
 * in every block group: extents and bitmaps both decoded, the extent_count
 * of each FREE_SPACE_INFO checked.  Asserts; returns the free ranges seen.
 */
u64 memfs_check_free_space_tree(struct tlog_fs *fs);
/* Whether [start, start + len) is wholly free by the free space tree. */
bool memfs_fst_range_free(struct tlog_fs *fs, u64 start, u64 len);
/*
 * The free ranges (malloc'd) of the block group holding @bytenr by the free
 * space tree, and the group; returns the flags of its FREE_SPACE_INFO.
 */
struct free_range;
int memfs_fst_group(struct tlog_fs *fs, u64 bytenr, struct free_range **v, size_t *nr,
		    u64 *bg_start, u64 *bg_len);
/* Bytes of [bytenr, bytenr + len) the csum tree has checksums for. */
u64 memfs_csum_bytes(struct tlog_fs *fs, u64 bytenr, u64 len);
/*
 * Fault injection at every write of a change: a clean run counts the
 * writes W the change makes; then for n in 1..W the change runs with
 * write n failed, and again dropped (TLOG_FAULT_FAIL / _DROP).  A failed
 * change must return an error, a dropped one must not notice; afterwards
 * the device must open, with a free space tree in step with its extent
 * tree, and a generation that says whether the change happened (the old
 * state, or one commit later the new); @check must then find that state.
 * Both must be seen.
 */
struct memfs_fault_case {
	const char *name;
	struct tlog_bdev *(*setup)(void *arg);		/* a fresh device, before */
	int (*change)(struct tlog_fs *fs, void *arg);	/* 0 or the first error */
	/* @where is NULL after the clean run (the new state, to remember) */
	void (*check)(struct tlog_fs *fs, void *arg, bool new_state, const char *where);
	void *arg;
};

struct memfs_fault_stats {
	u64 writes, points, old, new;
};

void memfs_fault_sweep(const struct memfs_fault_case *c, struct memfs_fault_stats *st);

#endif
