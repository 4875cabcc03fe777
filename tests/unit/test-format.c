// SPDX-License-Identifier: GPL-2.0-only
// Tests format.h helpers: key order and encoding, LE accessors, superblock offsets, size formulas.
#include <string.h>
#include <criterion/criterion.h>

#include "format.h"

/* Expected values are the on-disk format's (kernel fs/btrfs headers) unless noted. */

static struct btrfs_key key(u64 objectid, u8 type, u64 offset)
{
	struct btrfs_key k = { .objectid = objectid, .type = type, .offset = offset };

	return k;
}

/* a < b, b > a, and each equals itself */
static void assert_key_lt(struct btrfs_key a, struct btrfs_key b)
{
	cr_assert_eq(btrfs_comp_cpu_keys(&a, &b), -1,
		     "(%llu %u %llu) should sort before (%llu %u %llu)",
		     (unsigned long long)a.objectid, a.type, (unsigned long long)a.offset,
		     (unsigned long long)b.objectid, b.type, (unsigned long long)b.offset);
	cr_assert_eq(btrfs_comp_cpu_keys(&b, &a), 1);
	cr_assert_eq(btrfs_comp_cpu_keys(&a, &a), 0);
	cr_assert_eq(btrfs_comp_cpu_keys(&b, &b), 0);
}

/* ---- key ordering (section 1: unsigned tuple objectid, type, offset) ---- */

Test(format, key_order_objectid_first)
{
	/* objectid decides even when type and offset point the other way */
	assert_key_lt(key(5, 255, (u64)-1), key(6, 0, 0));
}

Test(format, key_order_type_second)
{
	assert_key_lt(key(256, BTRFS_INODE_ITEM_KEY, 100), key(256, BTRFS_INODE_REF_KEY, 0));
	/* section 8: INODE_ITEM < INODE_REF < XATTR < DIR_ITEM < DIR_INDEX < EXTENT_DATA */
	assert_key_lt(key(256, BTRFS_INODE_REF_KEY, 256), key(256, BTRFS_XATTR_ITEM_KEY, 0));
	assert_key_lt(key(256, BTRFS_XATTR_ITEM_KEY, 9), key(256, BTRFS_DIR_ITEM_KEY, 0));
	assert_key_lt(key(256, BTRFS_DIR_ITEM_KEY, (u64)-1), key(256, BTRFS_DIR_INDEX_KEY, 2));
	assert_key_lt(key(256, BTRFS_DIR_INDEX_KEY, 3), key(256, BTRFS_EXTENT_DATA_KEY, 0));
}

Test(format, key_order_offset_last)
{
	assert_key_lt(key(256, BTRFS_DIR_INDEX_KEY, 2), key(256, BTRFS_DIR_INDEX_KEY, 3));
}

Test(format, key_order_is_unsigned)
{
	/* -9 (data reloc tree) is 0xFFFFFFFFFFFFFFF7 and sorts after 5 */
	assert_key_lt(key(5, BTRFS_ROOT_ITEM_KEY, 0),
		      key(BTRFS_DATA_RELOC_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0));
	/* offsets and types compare unsigned too */
	assert_key_lt(key(1, 1, 1), key(1, 1, 1ULL << 63));
	assert_key_lt(key(1, 127, 0), key(1, 128, 0));
}

/* ---- disk key encoding (17 bytes, little-endian, packed) ---- */

Test(format, disk_key_byte_layout)
{
	static const u8 expect[17] = {
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,	/* objectid LE */
		0x54,						/* type */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,	/* offset LE */
	};
	struct btrfs_key cpu = key(0x0102030405060708ULL, BTRFS_DIR_ITEM_KEY,
				   0x1112131415161718ULL);
	struct btrfs_disk_key disk;

	cr_assert_eq(BTRFS_DIR_ITEM_KEY, 0x54);
	btrfs_cpu_key_to_disk(&disk, &cpu);
	cr_assert_arr_eq(&disk, expect, sizeof(expect));
}

Test(format, disk_key_round_trip)
{
	struct btrfs_key in[] = {
		key(0, 0, 0),
		key(BTRFS_DATA_RELOC_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0),
		key(256, BTRFS_DIR_ITEM_KEY, 2378154706ULL),
		key((u64)-1, 255, (u64)-1),
	};

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct btrfs_disk_key disk;
		struct btrfs_key out;

		memset(&out, 0xAA, sizeof(out));
		btrfs_cpu_key_to_disk(&disk, &in[i]);
		btrfs_disk_key_to_cpu(&out, &disk);
		cr_assert_eq(out.objectid, in[i].objectid, "key %zu", i);
		cr_assert_eq(out.type, in[i].type, "key %zu", i);
		cr_assert_eq(out.offset, in[i].offset, "key %zu", i);
	}
}

Test(format, disk_key_negative_objectid_bytes)
{
	/* section 1: -9 is stored as two's complement 0xFFFFFFFFFFFFFFF7 (LE: f7 ff ..) */
	struct btrfs_key cpu = key(BTRFS_DATA_RELOC_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0);
	struct btrfs_disk_key disk;
	const u8 *b = (const u8 *)&disk;

	btrfs_cpu_key_to_disk(&disk, &cpu);
	cr_assert_eq(b[0], 0xF7);
	for (int i = 1; i < 8; i++)
		cr_assert_eq(b[i], 0xFF);
	cr_assert_eq(b[8], 132);
}

Test(format, uuid_tree_key_example)
{
	/*
	 * Section 11.1: UUID b83bbfa4-45f4-7648-b943-e6fab55af760 is keyed as
	 * (le64(uuid[0..8]) = 0x4876f445a4bf3bb8, 251, le64(uuid[8..16]) =
	 * 0x60f75ab5fae643b9).  The 17 bytes of such a key decode to that.
	 */
	static const u8 uuid[16] = {
		0xb8, 0x3b, 0xbf, 0xa4, 0x45, 0xf4, 0x76, 0x48,
		0xb9, 0x43, 0xe6, 0xfa, 0xb5, 0x5a, 0xf7, 0x60,
	};
	u8 raw[17];
	struct btrfs_disk_key disk;
	struct btrfs_key cpu;

	memcpy(raw, uuid, 8);
	raw[8] = BTRFS_UUID_KEY_SUBVOL;
	memcpy(raw + 9, uuid + 8, 8);
	memcpy(&disk, raw, sizeof(raw));
	btrfs_disk_key_to_cpu(&cpu, &disk);
	cr_assert_eq(cpu.objectid, 0x4876f445a4bf3bb8ULL);
	cr_assert_eq(cpu.type, 251);
	cr_assert_eq(cpu.offset, 0x60f75ab5fae643b9ULL);
}

/* ---- little-endian accessors ---- */

Test(format, header_setters_are_little_endian)
{
	/* section 4.1: bytenr at 48, flags at 56, nritems at 96, level at 100 */
	u8 buf[sizeof(struct btrfs_header)];
	struct btrfs_header *h = (struct btrfs_header *)buf;

	memset(buf, 0, sizeof(buf));
	btrfs_set_header_bytenr(h, 30588928);		/* 0x01D2C000 */
	btrfs_set_header_flags(h, 0x0100000000000001ULL);
	btrfs_set_header_nritems(h, 0x0102);
	btrfs_set_header_level(h, 7);

	cr_assert_eq(buf[48], 0x00);
	cr_assert_eq(buf[49], 0xC0);
	cr_assert_eq(buf[50], 0xD2);
	cr_assert_eq(buf[51], 0x01);
	cr_assert_eq(buf[56], 0x01);
	cr_assert_eq(buf[63], 0x01);
	cr_assert_eq(buf[96], 0x02);
	cr_assert_eq(buf[97], 0x01);
	cr_assert_eq(buf[100], 7);
	cr_assert_eq(btrfs_header_bytenr(h), 30588928);
	cr_assert_eq(btrfs_header_nritems(h), 0x0102);
	cr_assert_eq(btrfs_header_level(h), 7);
	/* the normal header flags carry backref revision 1 in bits 56..63 */
	cr_assert_eq(btrfs_header_backref_rev(h), BTRFS_MIXED_BACKREF_REV);
}

/* ---- superblock copies (section 1) ---- */

Test(format, sb_offsets)
{
	cr_assert_eq(btrfs_sb_offset(0), 65536ULL);		/* 0x10000 */
	cr_assert_eq(btrfs_sb_offset(1), 67108864ULL);		/* 0x4000000, 64 MiB */
	cr_assert_eq(btrfs_sb_offset(2), 274877906944ULL);	/* 0x4000000000, 256 GiB */
}

/* ---- size formulas (section 13 table) ---- */

static void assert_sizes(u32 nodesize, u32 leaf_data, u32 max_item, u32 ptrs)
{
	cr_assert_eq(btrfs_leaf_data_size(nodesize), leaf_data, "nodesize %u", nodesize);
	cr_assert_eq(btrfs_max_item_size(nodesize), max_item, "nodesize %u", nodesize);
	cr_assert_eq(btrfs_nodeptrs_per_block(nodesize), ptrs, "nodesize %u", nodesize);
	/* max inline payload = max_item - 21 */
	cr_assert_eq(btrfs_file_extent_inline_len(max_item), (int)max_item - 21);
}

Test(format, size_formulas_4k)
{
	assert_sizes(4096, 3995, 3970, 121);
}

Test(format, size_formulas_16k)
{
	assert_sizes(16384, 16283, 16258, 493);
}

Test(format, size_formulas_64k)
{
	assert_sizes(65536, 65435, 65410, 1982);
}

Test(format, file_extent_inline_len)
{
	/* section 8.7: inline item size = 21 + payload (3000-byte inline file) */
	cr_assert_eq(btrfs_file_extent_inline_len(21 + 3000), 3000);
	cr_assert_eq(btrfs_file_extent_inline_len(21), 0);
}

Test(format, chunk_item_size)
{
	/* section 5.2: 48 + 32 * num_stripes (80 single, 112 DUP) */
	cr_assert_eq(btrfs_chunk_item_size(1), 80);
	cr_assert_eq(btrfs_chunk_item_size(2), 112);
	cr_assert_eq(btrfs_chunk_item_size(4), 176);
}

Test(format, chunk_stripe_address)
{
	/* stripes start at offset 48 of the chunk item, 32 bytes each */
	u8 buf[112] = { 0 };
	struct btrfs_chunk *c = (struct btrfs_chunk *)buf;

	cr_assert_eq((u8 *)btrfs_chunk_stripe(c, 0) - buf, 48);
	cr_assert_eq((u8 *)btrfs_chunk_stripe(c, 1) - buf, 80);
}
