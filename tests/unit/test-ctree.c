// SPDX-License-Identifier: GPL-2.0-only
// Tests tree block verification on synthetic leaves and nodes, and btrfs_leaf_free_space.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "csum.h"
#include "ctree.h"
#include "super.h"
#include "tree-checker.h"
#include "errctx.h"

/*
 * Blocks are laid out as the kernel writes them: a 101-byte header, then 25-byte item
 * headers (leaf) or 33-byte key pointers (node); leaf item offsets count
 * from the end of the header and data is packed from the end of the block;
 * the checksum covers bytes [32, nodesize).
 */
#define NODESIZE	16384
#define SECTORSIZE	4096
#define BLOCK_BYTENR	30605312ULL	/* 16K-aligned, inside the mkfs METADATA chunk */
#define HDR		sizeof(struct btrfs_header)
#define LEAF_DATA	(NODESIZE - HDR)	/* 16283 */

static struct tlog_fs *fs;
static u8 *block;

static void setup(void)
{
	fs = calloc(1, sizeof(*fs));
	block = calloc(1, NODESIZE);
	cr_assert_not_null(fs);
	cr_assert_not_null(block);
	fs->nodesize = NODESIZE;
	fs->sectorsize = SECTORSIZE;
	fs->csum_type = BTRFS_CSUM_TYPE_CRC32;
	fs->csum_size = 4;
	memset(fs->header_fsid, 0x5A, BTRFS_FSID_SIZE);
	tlog_error_clear();
}

static void teardown(void)
{
	free(block);
	free(fs);
}

TestSuite(ctree, .init = setup, .fini = teardown);

static struct btrfs_header *hdr(void)
{
	return (struct btrfs_header *)block;
}

/* Checksum the block as the current fs csum type says, into the header. */
static void seal(void)
{
	u8 csum[BTRFS_CSUM_SIZE];

	cr_assert_eq(btrfs_csum_data(fs->csum_type, block + BTRFS_CSUM_SIZE,
				     NODESIZE - BTRFS_CSUM_SIZE, csum), 0);
	memcpy(hdr()->csum, csum, BTRFS_CSUM_SIZE);
}

static void init_header(u8 level, u32 nritems)
{
	memset(block, 0, NODESIZE);
	memcpy(hdr()->fsid, fs->header_fsid, BTRFS_FSID_SIZE);
	btrfs_set_header_bytenr(hdr(), BLOCK_BYTENR);
	btrfs_set_header_flags(hdr(), 0x0100000000000001ULL);	/* WRITTEN, backref rev 1 */
	btrfs_set_header_generation(hdr(), 7);
	btrfs_set_header_owner(hdr(), BTRFS_FS_TREE_OBJECTID);
	btrfs_set_header_nritems(hdr(), nritems);
	btrfs_set_header_level(hdr(), level);
}

static struct btrfs_item *item(int slot)
{
	return (struct btrfs_item *)(block + HDR + (size_t)slot * sizeof(struct btrfs_item));
}

static struct btrfs_key_ptr *key_ptr(int slot)
{
	return (struct btrfs_key_ptr *)(block + HDR + (size_t)slot * sizeof(struct btrfs_key_ptr));
}

static void set_disk_key(struct btrfs_disk_key *dk, u64 objectid, u8 type, u64 offset)
{
	struct btrfs_key k = { .objectid = objectid, .type = type, .offset = offset };

	btrfs_cpu_key_to_disk(dk, &k);
}

/*
 * The fs-tree root directory of a fresh mkfs: INODE_ITEM (160
 * bytes), INODE_REF ".." (10 + 2 bytes) and a DIR_ITEM for "default" (30 + 7
 * bytes, hash 2378154706).  Data is packed from the end: item 0 ends at
 * LEAF_DATA and each following item ends where the previous one starts.
 */
static const struct { u64 objectid; u8 type; u64 offset; u32 size; } leaf_items[] = {
	{ 256, BTRFS_INODE_ITEM_KEY, 0, 160 },
	{ 256, BTRFS_INODE_REF_KEY, 256, 12 },
	{ 256, BTRFS_DIR_ITEM_KEY, 2378154706ULL, 37 },
};
#define NR_LEAF_ITEMS 3
#define LEAF_ITEM_BYTES (160 + 12 + 37)

static void build_leaf(void)
{
	u32 end = LEAF_DATA;

	init_header(0, NR_LEAF_ITEMS);
	for (int i = 0; i < NR_LEAF_ITEMS; i++) {
		u32 off = end - leaf_items[i].size;

		set_disk_key(&item(i)->key, leaf_items[i].objectid, leaf_items[i].type,
			     leaf_items[i].offset);
		btrfs_set_raw_item_offset(item(i), off);
		btrfs_set_raw_item_size(item(i), leaf_items[i].size);
		memset(block + HDR + off, 0x10 + i, leaf_items[i].size);
		end = off;
	}
	seal();
}

/* A level-1 node with @n pointers to 16K-aligned children. */
static void build_node(u32 n)
{
	init_header(1, n);
	for (u32 i = 0; i < n; i++) {
		set_disk_key(&key_ptr((int)i)->key, 256 + i, BTRFS_INODE_ITEM_KEY, 0);
		btrfs_set_key_ptr_blockptr(key_ptr((int)i), 30408704ULL + (u64)(i + 1) * NODESIZE);
		btrfs_set_key_ptr_generation(key_ptr((int)i), 6);
	}
	seal();
}

static int check(void)
{
	return btrfs_check_tree_block(fs, block, BLOCK_BYTENR);
}

/* Rejected with -EUCLEAN, and the recorded reason mentions @why. */
static void assert_bad(const char *why)
{
	const char *msg;

	tlog_error_clear();
	cr_assert_eq(check(), -EUCLEAN, "block with %s was accepted", why);
	msg = tlog_error_get();
	cr_assert_not_null(msg, "no reason recorded for %s", why);
	cr_assert_not_null(strstr(msg, why), "reason \"%s\" does not mention \"%s\"", msg, why);
}

/* ---- valid blocks ---- */

Test(ctree, valid_leaf)
{
	build_leaf();
	cr_assert_eq(check(), 0, "valid leaf rejected: %s", tlog_error_get());
}

Test(ctree, valid_empty_leaf)
{
	init_header(0, 0);
	seal();
	cr_assert_eq(check(), 0, "%s", tlog_error_get());
}

Test(ctree, valid_node)
{
	build_node(3);
	cr_assert_eq(check(), 0, "valid node rejected: %s", tlog_error_get());
}

Test(ctree, valid_node_level_7)
{
	/* levels 0..7 are allowed */
	build_node(2);
	btrfs_set_header_level(hdr(), 7);
	seal();
	cr_assert_eq(check(), 0, "%s", tlog_error_get());
}

Test(ctree, valid_leaf_xxhash64)
{
	/* the checker uses the fs checksum type and size, here xxhash64 (8 bytes) */
	fs->csum_type = BTRFS_CSUM_TYPE_XXHASH;
	fs->csum_size = 8;
	build_leaf();
	cr_assert_eq(check(), 0, "%s", tlog_error_get());
	/* a crc32c-sealed block does not pass as xxhash64 */
	fs->csum_type = BTRFS_CSUM_TYPE_CRC32;
	seal();
	fs->csum_type = BTRFS_CSUM_TYPE_XXHASH;
	assert_bad("checksum");
}

/* ---- header corruption ---- */

Test(ctree, flipped_data_byte)
{
	build_leaf();
	block[NODESIZE - 1] ^= 0x01;	/* last byte of item 0's data */
	assert_bad("checksum");
}

Test(ctree, flipped_header_byte)
{
	build_leaf();
	block[BTRFS_CSUM_SIZE] ^= 0x80;	/* first checksummed byte (fsid[0]) */
	assert_bad("checksum");
}

Test(ctree, flipped_csum_byte)
{
	build_leaf();
	hdr()->csum[3] ^= 0x01;		/* last significant crc32c byte */
	assert_bad("checksum");
}

Test(ctree, csum_tail_not_significant)
{
	/* only csum_size bytes of the 32-byte field count */
	build_leaf();
	hdr()->csum[4] ^= 0xFF;
	cr_assert_eq(check(), 0, "%s", tlog_error_get());
}

Test(ctree, wrong_bytenr)
{
	build_leaf();
	btrfs_set_header_bytenr(hdr(), BLOCK_BYTENR + NODESIZE);
	seal();
	assert_bad("claims to be at");
	/* and the same block read from another address */
	build_leaf();
	cr_assert_eq(btrfs_check_tree_block(fs, block, BLOCK_BYTENR + NODESIZE), -EUCLEAN);
}

Test(ctree, wrong_fsid)
{
	build_leaf();
	hdr()->fsid[15] ^= 0x01;
	seal();
	assert_bad("fsid");
}

Test(ctree, level_8)
{
	build_node(2);
	btrfs_set_header_level(hdr(), BTRFS_MAX_LEVEL);
	seal();
	assert_bad("invalid level");
}

/* ---- leaf layout corruption ---- */

Test(ctree, leaf_unsorted_keys)
{
	build_leaf();
	/* item 2 gets a key below item 1 (256 INODE_REF 256) */
	set_disk_key(&item(2)->key, 256, BTRFS_INODE_ITEM_KEY, 5);
	seal();
	assert_bad("is not above");
}

Test(ctree, leaf_duplicate_keys)
{
	/* keys must be strictly increasing */
	build_leaf();
	set_disk_key(&item(1)->key, 256, BTRFS_INODE_ITEM_KEY, 0);
	seal();
	assert_bad("is not above");
}

Test(ctree, leaf_unsigned_key_order)
{
	/* (-9 ...) after (256 ...) is ascending: objectids compare unsigned */
	build_leaf();
	set_disk_key(&item(2)->key, BTRFS_DATA_RELOC_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0);
	seal();
	cr_assert_eq(check(), 0, "%s", tlog_error_get());
}

Test(ctree, leaf_item_past_end)
{
	build_leaf();
	/* item 0 ends exactly at LEAF_DATA; one more byte runs past the leaf */
	btrfs_set_raw_item_size(item(0), 161);
	seal();
	assert_bad("outside the leaf");
}

Test(ctree, leaf_item_offset_past_end)
{
	build_leaf();
	btrfs_set_raw_item_offset(item(2), LEAF_DATA + 1);
	btrfs_set_raw_item_size(item(2), 0);
	seal();
	assert_bad("outside the leaf");
}

Test(ctree, leaf_item_size_wraps)
{
	/* offset + size would wrap around 2^32 */
	build_leaf();
	btrfs_set_raw_item_size(item(2), 0xFFFFFFF0U);
	seal();
	assert_bad("outside the leaf");
}

Test(ctree, leaf_item_overlaps_headers)
{
	build_leaf();
	/* three item headers take [0, 75) of the data area */
	btrfs_set_raw_item_offset(item(2), 3 * sizeof(struct btrfs_item) - 1);
	seal();
	assert_bad("overlaps the item headers");
}

Test(ctree, leaf_item_right_after_headers)
{
	/* data may start exactly where the item headers end: grow the last item */
	u32 start = 3 * sizeof(struct btrfs_item);

	build_leaf();
	btrfs_set_raw_item_size(item(2), btrfs_raw_item_offset(item(1)) - start);
	btrfs_set_raw_item_offset(item(2), start);
	seal();
	cr_assert_eq(check(), 0, "%s", tlog_error_get());
}

Test(ctree, leaf_gap_between_items)
{
	/* item data is packed with no gaps (kernel tree-checker) */
	build_leaf();
	btrfs_set_raw_item_offset(item(2), btrfs_raw_item_offset(item(2)) - 8);
	seal();
	assert_bad("expected");
}

Test(ctree, leaf_too_many_items)
{
	/* 16283 / 25 = 651 item headers at most */
	build_leaf();
	btrfs_set_header_nritems(hdr(), 652);
	seal();
	assert_bad("cannot fit");
	btrfs_set_header_nritems(hdr(), 0xFFFFFFFFU);
	seal();
	assert_bad("cannot fit");
}

/* ---- node corruption ---- */

Test(ctree, node_zero_pointers)
{
	build_node(0);
	assert_bad("invalid number of pointers");
}

Test(ctree, node_too_many_pointers)
{
	/* 16283 / 33 = 493 pointers at most */
	build_node(2);
	btrfs_set_header_nritems(hdr(), 494);
	seal();
	assert_bad("invalid number of pointers");
}

Test(ctree, node_pointer_zero)
{
	build_node(3);
	btrfs_set_key_ptr_blockptr(key_ptr(1), 0);
	seal();
	assert_bad("invalid address");
}

Test(ctree, node_pointer_unaligned)
{
	build_node(3);
	btrfs_set_key_ptr_blockptr(key_ptr(2), 30408704ULL + 512);
	seal();
	assert_bad("invalid address");
}

Test(ctree, node_unsorted_keys)
{
	build_node(3);
	set_disk_key(&key_ptr(2)->key, 256, BTRFS_INODE_ITEM_KEY, 0);	/* = key 0 */
	seal();
	assert_bad("is not above");
}

/* ---- free space ---- */

static struct extent_buffer *leaf_eb(void)
{
	struct extent_buffer *eb = calloc(1, sizeof(*eb) + NODESIZE);

	cr_assert_not_null(eb);
	eb->data = eb->block;
	eb->start = BLOCK_BYTENR;
	eb->len = NODESIZE;
	eb->refs = 1;
	memcpy(eb->data, block, NODESIZE);
	return eb;
}

Test(ctree, leaf_free_space)
{
	struct extent_buffer *eb;

	build_leaf();
	eb = leaf_eb();
	/* 16283 - 3 * 25 - (160 + 12 + 37) = 15999 */
	cr_assert_eq(btrfs_leaf_free_space(fs, eb), 15999);
	cr_assert_eq(btrfs_leaf_free_space(fs, eb),
		     LEAF_DATA - NR_LEAF_ITEMS * sizeof(struct btrfs_item) - LEAF_ITEM_BYTES);
	free(eb);
}

Test(ctree, empty_leaf_free_space)
{
	struct extent_buffer *eb;

	init_header(0, 0);
	eb = leaf_eb();
	cr_assert_eq(btrfs_leaf_free_space(fs, eb), 16283);
	free(eb);
}

Test(ctree, item_accessors)
{
	struct extent_buffer *eb;
	struct btrfs_key k;

	build_leaf();
	eb = leaf_eb();
	cr_assert_eq(btrfs_header_nritems_eb(eb), 3);
	cr_assert_eq(btrfs_header_level_eb(eb), 0);
	btrfs_item_key_to_cpu(eb, &k, 2);
	cr_assert_eq(k.objectid, 256);
	cr_assert_eq(k.type, BTRFS_DIR_ITEM_KEY);
	cr_assert_eq(k.offset, 2378154706ULL);
	cr_assert_eq(btrfs_item_size(eb, 0), 160);
	cr_assert_eq(btrfs_item_offset(eb, 0), LEAF_DATA - 160);
	/* item 0's data is the last 160 bytes of the block */
	cr_assert_eq((u8 *)btrfs_item_ptr(eb, 0), eb->data + NODESIZE - 160);
	cr_assert_eq(*(u8 *)btrfs_item_ptr(eb, 1), 0x11);
	free(eb);
}

/*
 * The block cache's table grows past its first 16384 buckets: a commit
 * holds all its dirty blocks, and a memory filesystem never drops one.
 * Every block is still found, at its own address, after the doublings.
 */
Test(ctree, block_cache_finds_every_block_as_it_grows)
{
	const u32 nodesize = 4096;
	const u64 nr = 40000, base = 1ULL << 30;
	struct tlog_fs *mem;

	cr_assert_eq(tlog_fs_create_memory(nodesize, 4096, BTRFS_CSUM_TYPE_CRC32, &mem), 0);
	for (u64 i = 0; i < nr; i++) {
		struct extent_buffer *eb = btrfs_new_tree_block(mem, base + i * nodesize, NULL);

		cr_assert_not_null(eb);
		free_extent_buffer(eb);
	}
	cr_assert_gt(mem->cache.hash_size, nr / 2, "%zu buckets for %llu blocks",
		     mem->cache.hash_size, (unsigned long long)nr);
	for (u64 i = 0; i < nr; i++) {
		const struct extent_buffer *eb = btrfs_find_cached_block(mem, base + i * nodesize);

		cr_assert(eb && eb->start == base + i * nodesize, "block %llu lost",
			  (unsigned long long)i);
	}
	cr_assert_null(btrfs_find_cached_block(mem, base + nr * nodesize));
	tlog_close(mem);
}
