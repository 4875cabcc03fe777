/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Checksums: the four btrfs checksum types (crc32c, xxhash64, sha256,
 * blake2b-256), each computed by a library, and the "raw" crc32c used for
 * name and back-reference hashes.
 */
#ifndef TLOG_CSUM_H
#define TLOG_CSUM_H

#include <stdbool.h>
#include "format.h"

/* Number of significant bytes of a checksum type, or 0 if unknown. */
int btrfs_csum_type_size(u16 type);
/* Name as btrfs-progs prints it ("crc32c", "xxhash64", ...), or NULL. */
const char *btrfs_csum_type_name(u16 type);
/* Map a name ("crc32c", "xxhash", "xxhash64", "sha256", "blake2") to a type. */
int btrfs_csum_type_from_name(const char *name);
bool btrfs_csum_type_supported(u16 type);

/*
 * Checksum @len bytes at @data with @type into @out (BTRFS_CSUM_SIZE bytes,
 * zero padded after the significant bytes).  Returns 0 or -EINVAL.
 */
int btrfs_csum_data(u16 type, const void *data, size_t len, u8 *out);

/* crc32c register update with no pre- or post-inversion. */
u32 crc32c_raw(u32 seed, const void *data, size_t len);
/* Hash of a directory entry or xattr name (DIR_ITEM / XATTR_ITEM key offset). */
u64 btrfs_name_hash(const char *name, size_t len);
/* Hash of an INODE_EXTREF key. */
u64 btrfs_extref_hash(u64 parent_objectid, const char *name, size_t len);
/* Hash of an EXTENT_DATA_REF key. */
u64 btrfs_extent_data_ref_hash(u64 root, u64 objectid, u64 offset);

#endif
