// SPDX-License-Identifier: GPL-2.0-only
/*
 * Checksum types.  Nothing here implements a hash: crc32c comes from ISA-L,
 * xxhash64 from libxxhash, sha256 and blake2b-256 from libgcrypt.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <gcrypt.h>
#include <isa-l/crc.h>
#include <xxhash.h>

#include "csum.h"

struct csum_type_desc {
	const char *name;
	int size;
};

static const struct csum_type_desc csum_types[] = {
	[BTRFS_CSUM_TYPE_CRC32]  = { "crc32c", 4 },
	[BTRFS_CSUM_TYPE_XXHASH] = { "xxhash64", 8 },
	[BTRFS_CSUM_TYPE_SHA256] = { "sha256", 32 },
	[BTRFS_CSUM_TYPE_BLAKE2] = { "blake2", 32 },
};

#define NR_CSUM_TYPES (sizeof(csum_types) / sizeof(csum_types[0]))

bool btrfs_csum_type_supported(u16 type)
{
	return type < NR_CSUM_TYPES;
}

int btrfs_csum_type_size(u16 type)
{
	return btrfs_csum_type_supported(type) ? csum_types[type].size : 0;
}

const char *btrfs_csum_type_name(u16 type)
{
	return btrfs_csum_type_supported(type) ? csum_types[type].name : NULL;
}

int btrfs_csum_type_from_name(const char *name)
{
	static const struct { const char *alias; int type; } aliases[] = {
		{ "crc32c", BTRFS_CSUM_TYPE_CRC32 },
		{ "crc32", BTRFS_CSUM_TYPE_CRC32 },
		{ "xxhash", BTRFS_CSUM_TYPE_XXHASH },
		{ "xxhash64", BTRFS_CSUM_TYPE_XXHASH },
		{ "sha256", BTRFS_CSUM_TYPE_SHA256 },
		{ "blake2", BTRFS_CSUM_TYPE_BLAKE2 },
		{ "blake2b", BTRFS_CSUM_TYPE_BLAKE2 },
	};

	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (strcasecmp(name, aliases[i].alias) == 0)
			return aliases[i].type;
	return -EINVAL;
}

u32 crc32c_raw(u32 seed, const void *data, size_t len)
{
	/* ISA-L's iSCSI CRC neither inverts its seed nor its result. */
	return crc32_iscsi((unsigned char *)data, (int)len, seed);
}

static void gcrypt_init_once(void)
{
	static bool done;

	if (done)
		return;
	/* Only digests are used: no secure memory is needed. */
	gcry_check_version(NULL);
	gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
	gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
	done = true;
}

int btrfs_csum_data(u16 type, const void *data, size_t len, u8 *out)
{
	memset(out, 0, BTRFS_CSUM_SIZE);

	switch (type) {
	case BTRFS_CSUM_TYPE_CRC32: {
		u32 crc = ~crc32c_raw(~0U, data, len);

		crc = htole32(crc);
		memcpy(out, &crc, sizeof(crc));
		return 0;
	}
	case BTRFS_CSUM_TYPE_XXHASH: {
		u64 h = htole64(XXH64(data, len, 0));

		memcpy(out, &h, sizeof(h));
		return 0;
	}
	case BTRFS_CSUM_TYPE_SHA256:
		gcrypt_init_once();
		gcry_md_hash_buffer(GCRY_MD_SHA256, out, data, len);
		return 0;
	case BTRFS_CSUM_TYPE_BLAKE2:
		gcrypt_init_once();
		gcry_md_hash_buffer(GCRY_MD_BLAKE2B_256, out, data, len);
		return 0;
	}
	return -EINVAL;
}

u64 btrfs_name_hash(const char *name, size_t len)
{
	return crc32c_raw(~1U, name, len);
}

u64 btrfs_extref_hash(u64 parent_objectid, const char *name, size_t len)
{
	return crc32c_raw((u32)parent_objectid, name, len);
}

u64 btrfs_extent_data_ref_hash(u64 root, u64 objectid, u64 offset)
{
	__le64 le;
	u32 high, low;

	le = htole64(root);
	high = crc32c_raw(~0U, &le, sizeof(le));
	le = htole64(objectid);
	low = crc32c_raw(~0U, &le, sizeof(le));
	le = htole64(offset);
	low = crc32c_raw(low, &le, sizeof(le));
	/* The kernel shifts by 31, not 32; the overlap bit is part of the format. */
	return ((u64)high << 31) ^ (u64)low;
}
