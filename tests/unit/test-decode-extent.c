// SPDX-License-Identifier: GPL-2.0-only
/*
 * The decoders of file extent, extent, back reference and csum items: the
 * item the kernel writes decodes to its fields, and one broken in a single
 * field is refused with a finding naming block, slot and key.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "csum.h"
#include "ctree.h"
#include "errctx.h"
#include "leaf-builder.h"
#include "tree-checker.h"

#define NODESIZE	4096
#define SECTOR		4096
#define BLOCK		30408704ULL
#define INO		257ULL
#define DATA_BYTENR	(13ULL << 20)

static struct tlog_fs *fs;
static struct tlog_leaf_builder lb;
/* one leaf of the fs tree, at BLOCK; items are appended to it */
static union {
	struct extent_buffer eb;
	u8 bytes[sizeof(struct extent_buffer) + NODESIZE];
} leaf_mem;
static struct extent_buffer *const leaf = &leaf_mem.eb;

static void setup(void)
{
	memset(&leaf_mem, 0, sizeof(leaf_mem));
	*leaf = (struct extent_buffer){ .data = leaf->block, .start = BLOCK, .len = NODESIZE };
	tlog_leaf_init(&lb, leaf->data, NODESIZE, 0);
	btrfs_set_header_owner(eb_header(leaf), BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(tlog_fs_create_memory(NODESIZE, SECTOR, BTRFS_CSUM_TYPE_CRC32, &fs), 0);
}

static void teardown(void)
{
	tlog_close(fs);
}

TestSuite(decode_extent, .init = setup, .fini = teardown);

/* Append an item of @size zeroed bytes keyed (@objectid, @type, @offset). */
static void *add(u64 objectid, u8 type, u64 offset, u32 size)
{
	void *p = tlog_leaf_append(&lb, &(struct btrfs_key){ objectid, type, offset }, NULL, size);

	cr_assert_not_null(p, "no room for item %u", lb.nritems);
	btrfs_set_header_nritems(eb_header(leaf), lb.nritems);
	return p;
}

static struct btrfs_key key_of(int slot)
{
	struct btrfs_key key;

	btrfs_item_key_to_cpu(leaf, &key, slot);
	return key;
}

/* The last finding names block, slot and key of @slot. */
static void assert_finding_at(int slot, const char *what)
{
	struct btrfs_key key = key_of(slot);
	char place[128];

	snprintf(place, sizeof(place), "block %llu slot %d key (%llu %u %llu)", BLOCK, slot,
		 (unsigned long long)key.objectid, key.type, (unsigned long long)key.offset);
	cr_assert_not_null(tlog_error_get(), "%s: no finding", what);
	cr_assert(strstr(tlog_error_get(), place) != NULL, "%s: finding without its place: %s",
		  what, tlog_error_get());
}

/* ---- file extent items ---- */

static int decode_fe(int slot, struct tlog_file_extent *fe)
{
	struct btrfs_key key = key_of(slot);

	tlog_error_clear();
	return btrfs_decode_file_extent(fs, leaf, slot, &key, fe);
}

/* A regular extent as the kernel writes it: the second half of an 8 KiB extent. */
static struct btrfs_file_extent_item *add_regular(u64 file_offset)
{
	struct btrfs_file_extent_item *fi = add(INO, BTRFS_EXTENT_DATA_KEY, file_offset,
						sizeof(*fi));

	btrfs_set_file_extent_item_generation(fi, 7);
	btrfs_set_file_extent_item_ram_bytes(fi, 2 * SECTOR);
	btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_REG);
	btrfs_set_file_extent_item_disk_bytenr(fi, DATA_BYTENR);
	btrfs_set_file_extent_item_disk_num_bytes(fi, 2 * SECTOR);
	btrfs_set_file_extent_item_offset(fi, SECTOR);
	btrfs_set_file_extent_item_num_bytes(fi, SECTOR);
	return fi;
}

static struct btrfs_file_extent_item *add_inline(const char *data)
{
	u32 len = strlen(data);
	u8 *p = add(INO, BTRFS_EXTENT_DATA_KEY, 0, BTRFS_FILE_EXTENT_INLINE_DATA_START + len);
	struct btrfs_file_extent_item *fi = (void *)p;

	btrfs_set_file_extent_item_generation(fi, 7);
	btrfs_set_file_extent_item_ram_bytes(fi, len);
	btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_INLINE);
	memcpy(p + BTRFS_FILE_EXTENT_INLINE_DATA_START, data, len);
	return fi;
}

Test(decode_extent, regular_extent_decodes_to_its_fields)
{
	struct tlog_file_extent fe;

	add_regular(3 * SECTOR);
	cr_assert_eq(decode_fe(0, &fe), 0, "%s", tlog_error_get());
	cr_assert_eq(fe.start, 3 * SECTOR);
	cr_assert_eq(fe.end, 4 * SECTOR);
	cr_assert_eq(fe.generation, 7);
	cr_assert_eq(fe.type, BTRFS_FILE_EXTENT_REG);
	cr_assert_eq(fe.disk_bytenr, DATA_BYTENR);
	cr_assert_eq(fe.disk_num_bytes, 2 * SECTOR);
	cr_assert_eq(fe.offset, SECTOR);
	cr_assert_eq(fe.num_bytes, SECTOR);
	cr_assert_eq(fe.ram_bytes, 2 * SECTOR);
	cr_assert_null(fe.inline_data);
}

Test(decode_extent, inline_extent_decodes_to_its_data)
{
	struct tlog_file_extent fe;

	add_inline("hello, world");
	cr_assert_eq(decode_fe(0, &fe), 0, "%s", tlog_error_get());
	cr_assert_eq(fe.type, BTRFS_FILE_EXTENT_INLINE);
	cr_assert_eq(fe.end, 12);
	cr_assert_eq(fe.inline_len, 12);
	cr_assert_eq(memcmp(fe.inline_data, "hello, world", 12), 0);
	cr_assert_eq(fe.disk_bytenr, 0);
	cr_assert_eq(fe.num_bytes, 0);
}

/* Each field of a regular extent, broken alone, is refused. */
Test(decode_extent, broken_regular_extent_fields_refused)
{
	static const struct {
		size_t field;	/* byte offset in the item */
		int width;
		u64 value;
		const char *what;
	} cases[] = {
		{ offsetof(struct btrfs_file_extent_item, type), 1, 3, "type 3" },
		{ offsetof(struct btrfs_file_extent_item, compression), 1, 4, "compression 4" },
		{ offsetof(struct btrfs_file_extent_item, encryption), 1, 1, "encryption" },
		{ offsetof(struct btrfs_file_extent_item, ram_bytes), 8, 100, "unaligned ram_bytes" },
		{ offsetof(struct btrfs_file_extent_item, disk_bytenr), 8, DATA_BYTENR + 1,
		  "unaligned disk_bytenr" },
		{ offsetof(struct btrfs_file_extent_item, disk_num_bytes), 8, 4097,
		  "unaligned disk_num_bytes" },
		{ offsetof(struct btrfs_file_extent_item, offset), 8, 512, "unaligned offset" },
		{ offsetof(struct btrfs_file_extent_item, num_bytes), 8, 513, "unaligned num_bytes" },
		{ offsetof(struct btrfs_file_extent_item, num_bytes), 8, (u64)-SECTOR,
		  "an end past 2^64" },
	};
	u8 *p = (u8 *)add_regular(SECTOR);
	u8 good[sizeof(struct btrfs_file_extent_item)];
	struct tlog_file_extent fe;

	memcpy(good, p, sizeof(good));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		u64 le = htole64(cases[i].value);

		memcpy(p, good, sizeof(good));
		memcpy(p + cases[i].field, &le, cases[i].width);
		cr_assert_eq(decode_fe(0, &fe), -EUCLEAN, "%s was accepted", cases[i].what);
		assert_finding_at(0, cases[i].what);
	}
}

Test(decode_extent, unaligned_file_offset_refused)
{
	struct tlog_file_extent fe;

	add_regular(SECTOR + 1);
	cr_assert_eq(decode_fe(0, &fe), -EUCLEAN);
	assert_finding_at(0, "an unaligned key offset");
}

Test(decode_extent, regular_extent_of_wrong_size_refused)
{
	struct tlog_file_extent fe;
	struct btrfs_file_extent_item *fi = add(INO, BTRFS_EXTENT_DATA_KEY, 0, 40);

	btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_REG);
	cr_assert_eq(decode_fe(0, &fe), -EUCLEAN);
	assert_finding_at(0, "a 40-byte regular item");
	/* the tolerant reading refuses it too, but says nothing */
	tlog_error_clear();
	cr_assert_eq(btrfs_parse_file_extent(fi, 40, 0, &fe), -EUCLEAN);
	cr_assert_null(tlog_error_get());
}

Test(decode_extent, item_shorter_than_the_header_refused)
{
	struct tlog_file_extent fe;

	add(INO, BTRFS_EXTENT_DATA_KEY, 0, 20);
	cr_assert_eq(decode_fe(0, &fe), -EUCLEAN);
	assert_finding_at(0, "a 20-byte item");
}

Test(decode_extent, inline_extent_of_wrong_length_refused)
{
	struct btrfs_file_extent_item *fi = add_inline("hello");
	struct tlog_file_extent fe;

	btrfs_set_file_extent_item_ram_bytes(fi, 6);
	cr_assert_eq(decode_fe(0, &fe), -EUCLEAN);
	assert_finding_at(0, "ram_bytes 6 for 5 bytes");
	/* compressed, the lengths differ by nature */
	btrfs_set_file_extent_item_compression(fi, BTRFS_COMPRESS_ZLIB);
	cr_assert_eq(decode_fe(0, &fe), 0, "%s", tlog_error_get());
}

Test(decode_extent, inline_extent_past_offset_zero_refused)
{
	struct tlog_file_extent fe;
	u8 *p = add(INO, BTRFS_EXTENT_DATA_KEY, SECTOR, BTRFS_FILE_EXTENT_INLINE_DATA_START + 1);

	btrfs_set_file_extent_item_ram_bytes((void *)p, 1);
	btrfs_set_file_extent_item_type((void *)p, BTRFS_FILE_EXTENT_INLINE);
	cr_assert_eq(decode_fe(0, &fe), -EUCLEAN);
	assert_finding_at(0, "an inline extent at 4096");
}

Test(decode_extent, overlap_with_the_extent_before_refused_by_the_checker)
{
	struct btrfs_key key, prev;

	add_regular(0);
	add_regular(SECTOR);
	btrfs_set_file_extent_item_num_bytes(btrfs_item_ptr(leaf, 0), 2 * SECTOR);
	key = key_of(1);
	prev = key_of(0);
	tlog_error_clear();
	cr_assert_eq(btrfs_check_item(fs, leaf, 1, &key, &prev), -EUCLEAN);
	assert_finding_at(1, "an overlap");
}

/* ---- extent items and back references ---- */

static int decode_ei(int slot, struct tlog_extent_item *ei)
{
	struct btrfs_key key = key_of(slot);

	tlog_error_clear();
	return btrfs_decode_extent_item(fs, leaf, slot, &key, ei);
}

#define DATA_REF_LEN	(1 + sizeof(struct btrfs_extent_data_ref))
#define SHARED_DATA_LEN	(sizeof(struct btrfs_extent_inline_ref) + sizeof(struct btrfs_shared_data_ref))

/*
 * A data extent with refs 3: one EXTENT_DATA_REF counting two and one
 * SHARED_DATA_REF counting one, in the kernel's order.
 */
static u8 *add_data_extent(void)
{
	u32 size = sizeof(struct btrfs_extent_item) + DATA_REF_LEN + SHARED_DATA_LEN;
	u8 *p = add(DATA_BYTENR, BTRFS_EXTENT_ITEM_KEY, 2 * SECTOR, size);
	struct btrfs_extent_data_ref *dref;
	struct btrfs_extent_inline_ref *sref;
	u8 *cur = p + sizeof(struct btrfs_extent_item);

	btrfs_set_extent_item_refs((void *)p, 3);
	btrfs_set_extent_item_generation((void *)p, 7);
	btrfs_set_extent_item_flags((void *)p, BTRFS_EXTENT_FLAG_DATA);
	*cur = BTRFS_EXTENT_DATA_REF_KEY;
	dref = (void *)(cur + 1);
	btrfs_set_extent_data_ref_root(dref, BTRFS_FS_TREE_OBJECTID);
	btrfs_set_extent_data_ref_objectid(dref, INO);
	btrfs_set_extent_data_ref_offset(dref, 0);
	btrfs_set_extent_data_ref_count(dref, 2);
	sref = (void *)(cur + DATA_REF_LEN);
	btrfs_set_extent_inline_ref_type(sref, BTRFS_SHARED_DATA_REF_KEY);
	btrfs_set_extent_inline_ref_offset(sref, BLOCK);
	btrfs_set_shared_data_ref_count((void *)(sref + 1), 1);
	return p;
}

/* A skinny tree block extent with one TREE_BLOCK_REF. */
static u8 *add_metadata_extent(u8 level, u64 owner)
{
	u32 size = sizeof(struct btrfs_extent_item) + sizeof(struct btrfs_extent_inline_ref);
	u8 *p = add(BLOCK, BTRFS_METADATA_ITEM_KEY, level, size);
	struct btrfs_extent_inline_ref *iref = (void *)(p + sizeof(struct btrfs_extent_item));

	btrfs_set_extent_item_refs((void *)p, 1);
	btrfs_set_extent_item_generation((void *)p, 7);
	btrfs_set_extent_item_flags((void *)p, BTRFS_EXTENT_FLAG_TREE_BLOCK);
	btrfs_set_extent_inline_ref_type(iref, BTRFS_TREE_BLOCK_REF_KEY);
	btrfs_set_extent_inline_ref_offset(iref, owner);
	return p;
}

Test(decode_extent, data_extent_decodes_with_its_inline_refs)
{
	struct tlog_extent_item ei;
	struct tlog_extent_ref ref[3];
	u32 cur;
	int n = 0, ret;

	add_data_extent();
	cr_assert_eq(decode_ei(0, &ei), 0, "%s", tlog_error_get());
	cr_assert_eq(ei.refs, 3);
	/* the data ref counts 2, the shared data ref 1: all of refs is inline */
	cr_assert_eq(ei.inline_refs, 3);
	cr_assert_eq(ei.generation, 7);
	cr_assert_eq(ei.flags, BTRFS_EXTENT_FLAG_DATA);
	cr_assert_null(ei.info);
	btrfs_for_each_inline_ref(&ei, &cur, &ref[n], ret)
		cr_assert(++n < 3, "more references than written");
	cr_assert_eq(ret, 1);
	cr_assert_eq(n, 2);
	cr_assert_eq(ref[0].type, BTRFS_EXTENT_DATA_REF_KEY);
	cr_assert_eq(ref[0].root, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(ref[0].objectid, INO);
	cr_assert_eq(ref[0].file_offset, 0);
	cr_assert_eq(ref[0].count, 2);
	/* an inline data ref has no offset; its hash is worked out only to sort it */
	cr_assert_eq(ref[0].offset, 0);
	cr_assert_eq(ref[1].type, BTRFS_SHARED_DATA_REF_KEY);
	cr_assert_eq(ref[1].offset, BLOCK);
	cr_assert_eq(ref[1].count, 1);
	cr_assert_eq(ref[1].at, sizeof(struct btrfs_extent_item) + DATA_REF_LEN);
	/* the decoder counted them and kept the first, as the walk gives it */
	cr_assert_eq(ei.nr_inline, 2);
	cr_assert_eq(ei.first.type, ref[0].type);
	cr_assert_eq(ei.first.at, ref[0].at);
	cr_assert_eq(ei.first.root, ref[0].root);
	cr_assert_eq(ei.first.objectid, ref[0].objectid);
	cr_assert_eq(ei.first.count, ref[0].count);
}

Test(decode_extent, tree_block_extents_decode_skinny_and_not)
{
	struct tlog_extent_item ei;
	struct tlog_extent_ref ref;
	u32 size = sizeof(struct btrfs_extent_item) + sizeof(struct btrfs_tree_block_info) +
		   sizeof(struct btrfs_extent_inline_ref);
	u8 *p;
	u32 cur;

	add_metadata_extent(1, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(decode_ei(0, &ei), 0, "%s", tlog_error_get());
	cr_assert_eq(ei.level, 1);
	cur = ei.refs_start;
	cr_assert_eq(btrfs_next_inline_ref(&ei, &cur, &ref), 0);
	cr_assert_eq(ref.type, BTRFS_TREE_BLOCK_REF_KEY);
	cr_assert_eq(ref.offset, BTRFS_FS_TREE_OBJECTID);

	p = add(BLOCK + NODESIZE, BTRFS_EXTENT_ITEM_KEY, NODESIZE, size);
	btrfs_set_extent_item_refs((void *)p, 1);
	btrfs_set_extent_item_flags((void *)p, BTRFS_EXTENT_FLAG_TREE_BLOCK);
	btrfs_set_tree_block_info_level((void *)(p + sizeof(struct btrfs_extent_item)), 2);
	p[size - sizeof(struct btrfs_extent_inline_ref)] = BTRFS_TREE_BLOCK_REF_KEY;
	cr_assert_eq(decode_ei(1, &ei), 0, "%s", tlog_error_get());
	cr_assert_not_null(ei.info);
	cr_assert_eq(ei.level, 2);
	cr_assert_eq(ei.refs_start, size - sizeof(struct btrfs_extent_inline_ref));
}

Test(decode_extent, broken_extent_flags_refused)
{
	static const u64 bad[] = {
		0, BTRFS_EXTENT_FLAG_DATA | BTRFS_EXTENT_FLAG_TREE_BLOCK, 1ULL << 5,
		BTRFS_EXTENT_FLAG_DATA | BTRFS_BLOCK_FLAG_FULL_BACKREF,
	};
	struct tlog_extent_item ei;
	u8 *p = add_data_extent();

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		btrfs_set_extent_item_flags((void *)p, bad[i]);
		cr_assert_eq(decode_ei(0, &ei), -EUCLEAN, "flags 0x%llx were accepted",
			     (unsigned long long)bad[i]);
		assert_finding_at(0, "bad flags");
	}
}

Test(decode_extent, tree_block_ref_in_a_data_extent_refused)
{
	struct tlog_extent_item ei;
	u8 *p = add_data_extent();

	/* the shared data ref becomes a shared block ref of the same size prefix */
	p[sizeof(struct btrfs_extent_item) + DATA_REF_LEN] = BTRFS_SHARED_BLOCK_REF_KEY;
	cr_assert_eq(decode_ei(0, &ei), -EUCLEAN);
	assert_finding_at(0, "a block ref in a data extent");
}

Test(decode_extent, unknown_or_cut_inline_refs_refused)
{
	struct tlog_extent_item ei;
	u8 *p = add_data_extent();

	p[sizeof(struct btrfs_extent_item) + DATA_REF_LEN] = 99;
	cr_assert_eq(decode_ei(0, &ei), -EUCLEAN);
	assert_finding_at(0, "inline ref type 99");
	cr_assert(strstr(tlog_error_get(), "unknown") != NULL, "%s", tlog_error_get());

	p[sizeof(struct btrfs_extent_item) + DATA_REF_LEN] = BTRFS_SHARED_DATA_REF_KEY;
	/* one byte less: the item's data stays where it is, its end moves */
	btrfs_set_raw_item_size(btrfs_item_nr(leaf, 0), btrfs_item_size(leaf, 0) - 1);
	cr_assert_eq(decode_ei(0, &ei), -EUCLEAN);
	assert_finding_at(0, "a cut-off ref");
	cr_assert(strstr(tlog_error_get(), "cut off") != NULL, "%s", tlog_error_get());
}

/*
 * A skinny tree block extent with refs @nr and room for @nr inline refs
 * of the simple kind (type and offset), which the caller fills in.
 */
static struct btrfs_extent_inline_ref *add_tree_block_refs(int nr)
{
	u32 size = sizeof(struct btrfs_extent_item) + nr * sizeof(struct btrfs_extent_inline_ref);
	u8 *p = add(BLOCK, BTRFS_METADATA_ITEM_KEY, 0, size);

	btrfs_set_extent_item_refs((void *)p, nr);
	btrfs_set_extent_item_flags((void *)p, BTRFS_EXTENT_FLAG_TREE_BLOCK);
	return (void *)(p + sizeof(struct btrfs_extent_item));
}

Test(decode_extent, inline_refs_out_of_order_refused)
{
	struct btrfs_extent_inline_ref *iref = add_tree_block_refs(2);
	struct tlog_extent_item ei;

	btrfs_set_extent_inline_ref_type(iref, BTRFS_SHARED_BLOCK_REF_KEY);
	btrfs_set_extent_inline_ref_offset(iref, BLOCK);
	btrfs_set_extent_inline_ref_type(iref + 1, BTRFS_TREE_BLOCK_REF_KEY);
	btrfs_set_extent_inline_ref_offset(iref + 1, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(decode_ei(0, &ei), -EUCLEAN);
	assert_finding_at(0, "a tree block ref after a shared one");
	/* in the kernel's order it is fine */
	btrfs_set_extent_inline_ref_type(iref, BTRFS_TREE_BLOCK_REF_KEY);
	btrfs_set_extent_inline_ref_offset(iref, BTRFS_FS_TREE_OBJECTID);
	btrfs_set_extent_inline_ref_type(iref + 1, BTRFS_SHARED_BLOCK_REF_KEY);
	btrfs_set_extent_inline_ref_offset(iref + 1, BLOCK);
	cr_assert_eq(decode_ei(0, &ei), 0, "%s", tlog_error_get());
}

Test(decode_extent, inline_refs_of_one_type_in_ascending_order_refused)
{
	struct btrfs_extent_inline_ref *iref = add_tree_block_refs(2);
	struct tlog_extent_item ei;

	btrfs_set_extent_inline_ref_type(iref, BTRFS_TREE_BLOCK_REF_KEY);
	btrfs_set_extent_inline_ref_offset(iref, 256);
	btrfs_set_extent_inline_ref_type(iref + 1, BTRFS_TREE_BLOCK_REF_KEY);
	btrfs_set_extent_inline_ref_offset(iref + 1, 257);
	cr_assert_eq(decode_ei(0, &ei), -EUCLEAN);
	assert_finding_at(0, "roots 256 then 257");
	/* the kernel puts the larger first */
	btrfs_set_extent_inline_ref_offset(iref, 258);
	cr_assert_eq(decode_ei(0, &ei), 0, "%s", tlog_error_get());
}

/*
 * Past the first, references are decoded into two slots in turn, the one
 * before kept for the order check: four of one type are judged pair by
 * pair whichever slots hold them, and the first stays whole.
 */
Test(decode_extent, every_pair_of_many_inline_refs_is_judged)
{
	struct btrfs_extent_inline_ref *iref = add_tree_block_refs(4);
	struct tlog_extent_item ei;

	for (int i = 0; i < 4; i++) {
		btrfs_set_extent_inline_ref_type(iref + i, BTRFS_TREE_BLOCK_REF_KEY);
		btrfs_set_extent_inline_ref_offset(iref + i, 400 - i);
	}
	cr_assert_eq(decode_ei(0, &ei), 0, "%s", tlog_error_get());
	cr_assert_eq(ei.nr_inline, 4);
	cr_assert_eq(ei.inline_refs, 4);
	cr_assert_eq(ei.first.type, BTRFS_TREE_BLOCK_REF_KEY);
	cr_assert_eq(ei.first.offset, 400);
	cr_assert_eq(ei.first.at, sizeof(struct btrfs_extent_item));
	/* each later pair out of order is found, in either slot */
	for (int bad = 2; bad < 4; bad++) {
		btrfs_set_extent_inline_ref_offset(iref + bad, 500);
		cr_assert_eq(decode_ei(0, &ei), -EUCLEAN, "ref %d out of order", bad);
		assert_finding_at(0, "one ref above the one before it");
		btrfs_set_extent_inline_ref_offset(iref + bad, 400 - bad);
	}
	cr_assert_eq(decode_ei(0, &ei), 0, "%s", tlog_error_get());
}

Test(decode_extent, extent_item_without_inline_refs_has_no_first)
{
	u8 *p = add(DATA_BYTENR, BTRFS_EXTENT_ITEM_KEY, SECTOR, sizeof(struct btrfs_extent_item));
	struct tlog_extent_item ei;

	btrfs_set_extent_item_refs((void *)p, 1);
	btrfs_set_extent_item_flags((void *)p, BTRFS_EXTENT_FLAG_DATA);
	memset(&ei, 0xa5, sizeof(ei));
	cr_assert_eq(decode_ei(0, &ei), 0, "%s", tlog_error_get());
	cr_assert_eq(ei.nr_inline, 0);
	cr_assert_eq(ei.inline_refs, 0);
	cr_assert_eq(ei.first.type, 0);
	cr_assert_eq(ei.first.at, 0);
	cr_assert_eq(ei.first.count, 0);
}

Test(decode_extent, inline_refs_counting_more_than_refs_refused)
{
	struct tlog_extent_item ei;
	u8 *p = add_data_extent();

	btrfs_set_extent_item_refs((void *)p, 2);
	cr_assert_eq(decode_ei(0, &ei), -EUCLEAN);
	assert_finding_at(0, "refs 2 for 3 counted");
	/* fewer: the rest are keyed */
	btrfs_set_extent_item_refs((void *)p, 5);
	cr_assert_eq(decode_ei(0, &ei), 0, "%s", tlog_error_get());
}

Test(decode_extent, extent_item_too_small_refused)
{
	struct tlog_extent_item ei;

	add(DATA_BYTENR, BTRFS_EXTENT_ITEM_KEY, SECTOR, sizeof(struct btrfs_extent_item) - 1);
	cr_assert_eq(decode_ei(0, &ei), -EUCLEAN);
	assert_finding_at(0, "a short extent item");
}

Test(decode_extent, keyed_data_ref_decodes_and_must_be_keyed_by_its_hash)
{
	u64 hash = btrfs_extent_data_ref_hash(BTRFS_FS_TREE_OBJECTID, INO, 0);
	struct btrfs_extent_data_ref *dref;
	struct tlog_extent_ref ref;
	struct btrfs_key key;

	dref = add(DATA_BYTENR, BTRFS_EXTENT_DATA_REF_KEY, hash, sizeof(*dref));
	btrfs_set_extent_data_ref_root(dref, BTRFS_FS_TREE_OBJECTID);
	btrfs_set_extent_data_ref_objectid(dref, INO);
	btrfs_set_extent_data_ref_count(dref, 4);
	key = key_of(0);
	tlog_error_clear();
	cr_assert_eq(btrfs_decode_keyed_ref(leaf, 0, &key, &ref), 0, "%s", tlog_error_get());
	cr_assert_eq(ref.root, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(ref.objectid, INO);
	cr_assert_eq(ref.count, 4);

	btrfs_set_extent_data_ref_offset(dref, SECTOR);
	cr_assert_eq(btrfs_decode_keyed_ref(leaf, 0, &key, &ref), -EUCLEAN);
	assert_finding_at(0, "a data ref under another's hash");
}

Test(decode_extent, keyed_ref_of_wrong_size_refused)
{
	struct tlog_extent_ref ref;
	struct btrfs_key key;

	add(DATA_BYTENR, BTRFS_SHARED_DATA_REF_KEY, BLOCK, 8);
	key = key_of(0);
	tlog_error_clear();
	cr_assert_eq(btrfs_decode_keyed_ref(leaf, 0, &key, &ref), -EUCLEAN);
	assert_finding_at(0, "an 8-byte shared data ref");
}

/* ---- csum items ---- */

static int decode_csum(int slot, struct tlog_csum_item *ci)
{
	struct btrfs_key key = key_of(slot);

	tlog_error_clear();
	return btrfs_decode_csum_item(fs, leaf, slot, &key, ci);
}

Test(decode_extent, csum_item_decodes_to_its_range)
{
	struct tlog_csum_item ci;
	u8 *p = add(BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, DATA_BYTENR,
		    3 * fs->csum_size);

	cr_assert_eq(decode_csum(0, &ci), 0, "%s", tlog_error_get());
	cr_assert_eq(ci.start, DATA_BYTENR);
	cr_assert_eq(ci.end, DATA_BYTENR + 3 * SECTOR);
	cr_assert_eq(ci.csums, p);
	cr_assert_eq(ci.size, 3 * fs->csum_size);
}

Test(decode_extent, csum_item_of_partial_checksum_refused)
{
	struct tlog_csum_item ci;

	add(BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, DATA_BYTENR, fs->csum_size + 1);
	cr_assert_eq(decode_csum(0, &ci), -EUCLEAN);
	assert_finding_at(0, "a partial checksum");
}

Test(decode_extent, csum_item_at_unaligned_bytenr_refused)
{
	struct tlog_csum_item ci;

	add(BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, DATA_BYTENR + 512, fs->csum_size);
	cr_assert_eq(decode_csum(0, &ci), -EUCLEAN);
	assert_finding_at(0, "an unaligned csum item");
}
