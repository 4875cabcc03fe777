// SPDX-License-Identifier: GPL-2.0-only
// Tests the checksum types, btrfs_csum_data and the crc32c-based key hashes (csum.c).
#include <errno.h>
#include <string.h>
#include <criterion/criterion.h>

#include "csum.h"

/*
 * Expected values come from independent implementations, not from the code
 * under test: crc32c and the key hashes from a bitwise Python CRC-32C
 * (reflected polynomial 0x82F63B78) and from kernel-written items;
 * xxhash64 from `xxhsum -H64` (xxhash 0.8.1); sha256 from sha256sum / FIPS
 * 180-2; blake2b-256 from `b2sum -l 256` and Python hashlib.
 */

static void csum_str(u16 type, const char *s, u8 *out)
{
	cr_assert_eq(btrfs_csum_data(type, s, strlen(s), out), 0);
}

/* The bytes from @from on are all zero. */
static void assert_zero_tail(const u8 *csum, int from)
{
	for (int i = from; i < BTRFS_CSUM_SIZE; i++)
		cr_assert_eq(csum[i], 0, "csum byte %d is 0x%02x, expected 0", i, csum[i]);
}

/* ---- checksum data ---- */

Test(csum, crc32c_check_value)
{
	/* CRC-32C check value: crc32c("123456789") = 0xE3069283, stored LE */
	static const u8 expect[4] = { 0x83, 0x92, 0x06, 0xE3 };
	u8 csum[BTRFS_CSUM_SIZE];

	memset(csum, 0xAA, sizeof(csum));
	csum_str(BTRFS_CSUM_TYPE_CRC32, "123456789", csum);
	cr_assert_arr_eq(csum, expect, sizeof(expect));
	assert_zero_tail(csum, 4);
}

Test(csum, crc32c_empty)
{
	/* CRC-32C of no bytes is 0 (init 0xFFFFFFFF, final XOR 0xFFFFFFFF) */
	u8 csum[BTRFS_CSUM_SIZE];

	memset(csum, 0xAA, sizeof(csum));
	cr_assert_eq(btrfs_csum_data(BTRFS_CSUM_TYPE_CRC32, "", 0, csum), 0);
	assert_zero_tail(csum, 0);
}

Test(csum, xxhash64_empty)
{
	/* XXH64("", seed 0) = 0xEF46DB3751D8E999 (xxHash reference vector), stored LE */
	static const u8 expect[8] = { 0x99, 0xE9, 0xD8, 0x51, 0x37, 0xDB, 0x46, 0xEF };
	u8 csum[BTRFS_CSUM_SIZE];

	memset(csum, 0xAA, sizeof(csum));
	cr_assert_eq(btrfs_csum_data(BTRFS_CSUM_TYPE_XXHASH, "", 0, csum), 0);
	cr_assert_arr_eq(csum, expect, sizeof(expect));
	assert_zero_tail(csum, 8);
}

Test(csum, xxhash64_check_string)
{
	/* printf 123456789 | xxhsum -H64 -> 8cb841db40e6ae83, stored LE */
	static const u8 expect[8] = { 0x83, 0xAE, 0xE6, 0x40, 0xDB, 0x41, 0xB8, 0x8C };
	u8 csum[BTRFS_CSUM_SIZE];

	memset(csum, 0xAA, sizeof(csum));
	csum_str(BTRFS_CSUM_TYPE_XXHASH, "123456789", csum);
	cr_assert_arr_eq(csum, expect, sizeof(expect));
	assert_zero_tail(csum, 8);
}

Test(csum, sha256_abc)
{
	/* FIPS 180-2 example: SHA-256("abc") */
	static const u8 expect[32] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
		0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
		0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
		0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
	};
	u8 csum[BTRFS_CSUM_SIZE];

	csum_str(BTRFS_CSUM_TYPE_SHA256, "abc", csum);
	cr_assert_arr_eq(csum, expect, sizeof(expect));
}

Test(csum, blake2b_256_abc)
{
	/* unkeyed BLAKE2b with a 32-byte digest of "abc" (b2sum -l 256) */
	static const u8 expect[32] = {
		0xbd, 0xdd, 0x81, 0x3c, 0x63, 0x42, 0x39, 0x72,
		0x31, 0x71, 0xef, 0x3f, 0xee, 0x98, 0x57, 0x9b,
		0x94, 0x96, 0x4e, 0x3b, 0xb1, 0xcb, 0x3e, 0x42,
		0x72, 0x62, 0xc8, 0xc0, 0x68, 0xd5, 0x23, 0x19,
	};
	u8 csum[BTRFS_CSUM_SIZE];

	csum_str(BTRFS_CSUM_TYPE_BLAKE2, "abc", csum);
	cr_assert_arr_eq(csum, expect, sizeof(expect));
}

Test(csum, unknown_type_is_einval)
{
	u8 csum[BTRFS_CSUM_SIZE];

	cr_assert_eq(btrfs_csum_data(4, "abc", 3, csum), -EINVAL);
	cr_assert_eq(btrfs_csum_data(0xFFFF, "abc", 3, csum), -EINVAL);
}

/* ---- checksum type table ---- */

Test(csum, type_sizes)
{
	cr_assert_eq(btrfs_csum_type_size(BTRFS_CSUM_TYPE_CRC32), 4);
	cr_assert_eq(btrfs_csum_type_size(BTRFS_CSUM_TYPE_XXHASH), 8);
	cr_assert_eq(btrfs_csum_type_size(BTRFS_CSUM_TYPE_SHA256), 32);
	cr_assert_eq(btrfs_csum_type_size(BTRFS_CSUM_TYPE_BLAKE2), 32);
	cr_assert_eq(btrfs_csum_type_size(4), 0);
	cr_assert_eq(btrfs_csum_type_size(0xFFFF), 0);
}

Test(csum, type_supported)
{
	for (u16 t = 0; t <= 3; t++)
		cr_assert(btrfs_csum_type_supported(t), "type %u", t);
	cr_assert_not(btrfs_csum_type_supported(4));
	cr_assert_not(btrfs_csum_type_supported(0xFFFF));
}

Test(csum, type_names)
{
	/* the names of btrfs-progs' btrfs_csums[] table (kernel-shared/ctree.c) */
	cr_assert_str_eq(btrfs_csum_type_name(BTRFS_CSUM_TYPE_CRC32), "crc32c");
	cr_assert_str_eq(btrfs_csum_type_name(BTRFS_CSUM_TYPE_XXHASH), "xxhash64");
	cr_assert_str_eq(btrfs_csum_type_name(BTRFS_CSUM_TYPE_SHA256), "sha256");
	cr_assert_str_eq(btrfs_csum_type_name(BTRFS_CSUM_TYPE_BLAKE2), "blake2");
	cr_assert_null(btrfs_csum_type_name(4));
}

Test(csum, type_from_name)
{
	cr_assert_eq(btrfs_csum_type_from_name("crc32c"), BTRFS_CSUM_TYPE_CRC32);
	cr_assert_eq(btrfs_csum_type_from_name("xxhash"), BTRFS_CSUM_TYPE_XXHASH);
	cr_assert_eq(btrfs_csum_type_from_name("xxhash64"), BTRFS_CSUM_TYPE_XXHASH);
	cr_assert_eq(btrfs_csum_type_from_name("sha256"), BTRFS_CSUM_TYPE_SHA256);
	cr_assert_eq(btrfs_csum_type_from_name("blake2"), BTRFS_CSUM_TYPE_BLAKE2);
	cr_assert_eq(btrfs_csum_type_from_name("blake2b"), BTRFS_CSUM_TYPE_BLAKE2);
	/* the printed names parse back */
	for (u16 t = 0; t <= 3; t++)
		cr_assert_eq(btrfs_csum_type_from_name(btrfs_csum_type_name(t)), t);
}

Test(csum, type_from_bad_name)
{
	cr_assert_eq(btrfs_csum_type_from_name(""), -EINVAL);
	cr_assert_eq(btrfs_csum_type_from_name("md5"), -EINVAL);
	cr_assert_eq(btrfs_csum_type_from_name("crc32c "), -EINVAL);
	cr_assert_eq(btrfs_csum_type_from_name("sha"), -EINVAL);
	cr_assert_eq(btrfs_csum_type_from_name("blake2s"), -EINVAL);
}

/* ---- crc32c_raw and the key hashes ---- */

Test(csum, crc32c_raw_has_no_inversion)
{
	/* inverting seed and result by hand gives the standard CRC-32C */
	cr_assert_eq(~crc32c_raw(~0U, "123456789", 9), 0xE3069283U);
	/* no bytes: the register is returned unchanged */
	cr_assert_eq(crc32c_raw(0x12345678U, "", 0), 0x12345678U);
}

static void assert_name_hash(const char *name, u64 expect)
{
	cr_assert_eq(btrfs_name_hash(name, strlen(name)), expect,
		     "name_hash(\"%s\") = %llu, expected %llu", name,
		     (unsigned long long)btrfs_name_hash(name, strlen(name)),
		     (unsigned long long)expect);
}

Test(csum, name_hash_examples)
{
	/* the name hash, checked against kernel-written DIR_ITEM keys */
	assert_name_hash("default", 2378154706ULL);
	assert_name_hash("small.txt", 474883676ULL);
	assert_name_hash("symlink", 2091710611ULL);
	assert_name_hash("snap", 2961127307ULL);
	assert_name_hash("user.test", 103394969ULL);
}

Test(csum, name_hash_uses_len_not_nul)
{
	/* only @len bytes count: "defaultXYZ" with len 7 is "default" */
	cr_assert_eq(btrfs_name_hash("defaultXYZ", 7), 2378154706ULL);
}

Test(csum, extref_hash_example)
{
	/* parent 304, name "n078_" + 200 x 'y' -> 825281864 */
	char name[5 + 200];

	memcpy(name, "n078_", 5);
	memset(name + 5, 'y', 200);
	cr_assert_eq(btrfs_extref_hash(304, name, sizeof(name)), 825281864ULL);
}

Test(csum, extref_hash_truncates_parent_to_u32)
{
	/* crc32c_raw((u32)parent, name): the high half of the parent is ignored */
	char name[5 + 200];

	memcpy(name, "n078_", 5);
	memset(name + 5, 'y', 200);
	cr_assert_eq(btrfs_extref_hash((1ULL << 32) | 304, name, sizeof(name)), 825281864ULL);
}

Test(csum, extent_data_ref_hash_example)
{
	/* root 5, inode 297, offset 0 (recomputed in Python) */
	cr_assert_eq(btrfs_extent_data_ref_hash(5, 297, 0), 1007496931555208115ULL);
}
