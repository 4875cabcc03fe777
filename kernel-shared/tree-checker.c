// SPDX-License-Identifier: GPL-2.0-only
/*
 * Item checks with the kernel's tree-checker rules (see tree-checker.h).
 *
 * Each check says what the kernel would refuse, and no more: a rule that
 * is stricter than the kernel's would refuse images and logs the kernel
 * mounts.  The kernel reads a log tree's leaves through the same checker
 * at mount, so a log that fails here is one the kernel will not replay.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "csum.h"
#include "errctx.h"
#include "print-tree.h"
#include "tree-checker.h"

/* The low 32 bits of an inode's flags: what the kernel knows. */
#define INODE_FLAGS_KNOWN	(BTRFS_INODE_NODATASUM | BTRFS_INODE_NODATACOW |	\
				 BTRFS_INODE_READONLY | BTRFS_INODE_NOCOMPRESS |	\
				 BTRFS_INODE_PREALLOC | BTRFS_INODE_SYNC |		\
				 BTRFS_INODE_IMMUTABLE | BTRFS_INODE_APPEND |		\
				 BTRFS_INODE_NODUMP | BTRFS_INODE_NOATIME |		\
				 BTRFS_INODE_DIRSYNC | BTRFS_INODE_COMPRESS |		\
				 BTRFS_INODE_ROOT_ITEM_INIT)
/* ... and of the high 32, the read-only compatible ones */
#define INODE_RO_FLAGS_KNOWN	BTRFS_INODE_RO_VERITY

#define NR_FILE_EXTENT_TYPES	3
#define NR_COMPRESS_TYPES	4
#define MODE_PERM_BITS		07777

__attribute__((format(printf, 5, 6)))
static int item_error(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
		      const char *kind, const char *fmt, ...)
{
	char what[256], tree[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	btrfs_tree_name(btrfs_header_owner(eb_header(leaf)), tree, sizeof(tree));
	return tlog_error(-EUCLEAN, "%s block %llu slot %d key (%llu %u %llu): %s: %s",
			  tree, (unsigned long long)leaf->start, slot,
			  (unsigned long long)key->objectid, key->type,
			  (unsigned long long)key->offset, kind, what);
}

static bool is_inode_objectid(u64 id)
{
	return (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID) ||
	       id == BTRFS_ROOT_TREE_DIR_OBJECTID || id == BTRFS_FREE_INO_OBJECTID;
}

static bool is_valid_file_type(u32 mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		return true;
	}
	return false;
}

/*
 * An inode: its size, a file type and nothing but permission bits beside
 * it, generations no newer than the transaction being logged, one link at
 * most for a directory, and only flags the kernel knows.
 */
static int check_inode_item(const struct tlog_fs *fs, const struct extent_buffer *leaf,
			    int slot, const struct btrfs_key *key)
{
	const struct btrfs_inode_item *ii = btrfs_item_ptr(leaf, slot);
	u64 newest = btrfs_super_block_generation(&fs->super) + 1;
	u64 flags;
	u32 mode;

	if (!is_inode_objectid(key->objectid) || key->offset != 0)
		return item_error(leaf, slot, key, "inode", "invalid key");
	if (btrfs_item_size(leaf, slot) != sizeof(*ii))
		return item_error(leaf, slot, key, "inode", "item size %u, expected %zu",
				  btrfs_item_size(leaf, slot), sizeof(*ii));
	if (btrfs_inode_item_generation(ii) > newest)
		return item_error(leaf, slot, key, "inode", "generation %llu is newer than %llu",
				  (unsigned long long)btrfs_inode_item_generation(ii),
				  (unsigned long long)newest);
	if (btrfs_inode_item_transid(ii) > newest)
		return item_error(leaf, slot, key, "inode", "transid %llu is newer than %llu",
				  (unsigned long long)btrfs_inode_item_transid(ii),
				  (unsigned long long)newest);
	mode = btrfs_inode_item_mode(ii);
	if ((mode & ~(S_IFMT | MODE_PERM_BITS)) || !is_valid_file_type(mode))
		return item_error(leaf, slot, key, "inode", "invalid mode 0%o", mode);
	if (S_ISDIR(mode) && btrfs_inode_item_nlink(ii) > 1)
		return item_error(leaf, slot, key, "inode", "directory with %u links",
				  btrfs_inode_item_nlink(ii));
	flags = btrfs_inode_item_flags(ii);
	if ((flags & 0xffffffffULL & ~INODE_FLAGS_KNOWN) ||
	    (flags & ~0xffffffffULL & ~INODE_RO_FLAGS_KNOWN))
		return item_error(leaf, slot, key, "inode", "unknown flags 0x%llx",
				  (unsigned long long)flags);
	return 0;
}

/* A file extent must not reach past the start of the one after it. */
static int check_file_extent(const struct tlog_fs *fs, const struct extent_buffer *leaf,
			     int slot, const struct btrfs_key *key, const struct btrfs_key *prev)
{
	struct tlog_file_extent fe, before;
	int ret = btrfs_decode_file_extent(fs, leaf, slot, key, &fe);

	if (ret || !prev || prev->objectid != key->objectid || prev->type != BTRFS_EXTENT_DATA_KEY)
		return ret;
	/* a malformed item before this one is its own finding */
	if (btrfs_parse_file_extent(btrfs_item_ptr(leaf, slot - 1), btrfs_item_size(leaf, slot - 1),
				    prev->offset, &before) == 0 && before.end > key->offset)
		return item_error(leaf, slot, key, "file extent",
				  "the extent before it ends at %llu, past this one's start",
				  (unsigned long long)before.end);
	return 0;
}

/*
 * Directory entries and xattrs: each entry fits the item, names a known
 * type (xattrs only in XATTR_ITEMs), has a name of at most 255 bytes and
 * data only if it is an xattr; a name-hashed item's key is its hash.
 */
static int check_dir_item(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key)
{
	const u8 *ptr = btrfs_item_ptr(leaf, slot);
	u32 size = btrfs_item_size(leaf, slot), cur = 0;
	bool xattr = key->type == BTRFS_XATTR_ITEM_KEY;

	while (cur < size) {
		const struct btrfs_dir_item *di = (const void *)(ptr + cur);
		u16 name_len, data_len;
		u8 type;

		if (size - cur < sizeof(*di))
			return item_error(leaf, slot, key, "dir item", "entry header at %u is cut off", cur);
		name_len = btrfs_dir_item_name_len(di);
		data_len = btrfs_dir_item_data_len(di);
		type = btrfs_dir_item_type(di) & ~BTRFS_FT_ENCRYPTED;
		if (type == BTRFS_FT_UNKNOWN || type >= BTRFS_FT_MAX)
			return item_error(leaf, slot, key, "dir item", "invalid type %u", type);
		if (xattr != (type == BTRFS_FT_XATTR))
			return item_error(leaf, slot, key, "dir item", "type %u in %s item", type,
					  xattr ? "an xattr" : "a directory");
		if (name_len == 0 || name_len > BTRFS_NAME_LEN)
			return item_error(leaf, slot, key, "dir item", "name of %u bytes", name_len);
		if (data_len && !xattr)
			return item_error(leaf, slot, key, "dir item", "%u bytes of data in a directory entry",
					  data_len);
		if ((u32)name_len + data_len > size - cur - sizeof(*di))
			return item_error(leaf, slot, key, "dir item", "entry at %u does not fit", cur);
		if (key->type != BTRFS_DIR_INDEX_KEY &&
		    btrfs_name_hash((const char *)(di + 1), name_len) != key->offset)
			return item_error(leaf, slot, key, "dir item", "name hash mismatch");
		cur += sizeof(*di) + name_len + data_len;
	}
	return 0;
}

/* Inode refs and extrefs: a chain of headers, each with the name it counts. */
static int check_inode_ref(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key)
{
	const u8 *ptr = btrfs_item_ptr(leaf, slot);
	u32 size = btrfs_item_size(leaf, slot), cur = 0;
	bool ext = key->type == BTRFS_INODE_EXTREF_KEY;
	u32 hdr = ext ? sizeof(struct btrfs_inode_extref) : sizeof(struct btrfs_inode_ref);

	if (size == 0)
		return item_error(leaf, slot, key, "inode ref", "empty item");
	while (cur < size) {
		u16 len;

		if (size - cur < hdr)
			return item_error(leaf, slot, key, "inode ref", "header at %u is cut off", cur);
		len = ext ? btrfs_inode_extref_name_len((const void *)(ptr + cur))
			  : btrfs_inode_ref_name_len((const void *)(ptr + cur));
		if (len > size - cur - hdr)
			return item_error(leaf, slot, key, "inode ref", "name at %u does not fit", cur);
		cur += hdr + len;
	}
	return 0;
}

int btrfs_check_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
		     const struct btrfs_key *key, const struct btrfs_key *prev)
{
	switch (key->type) {
	case BTRFS_INODE_ITEM_KEY:
		return check_inode_item(fs, leaf, slot, key);
	case BTRFS_EXTENT_DATA_KEY:
		return check_file_extent(fs, leaf, slot, key, prev);
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
	case BTRFS_XATTR_ITEM_KEY:
		return check_dir_item(leaf, slot, key);
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		return check_inode_ref(leaf, slot, key);
	}
	return 0;
}

/* ---- extents, references, checksums ---- */

int btrfs_parse_file_extent(const void *ptr, u32 size, u64 key_offset,
			    struct tlog_file_extent *ret)
{
	const struct btrfs_file_extent_item *fi = ptr;

	memset(ret, 0, sizeof(*ret));
	ret->start = key_offset;
	ret->end = key_offset;
	ret->item_size = size;
	if (size < BTRFS_FILE_EXTENT_INLINE_DATA_START)
		return -EUCLEAN;
	ret->generation = btrfs_file_extent_item_generation(fi);
	ret->ram_bytes = btrfs_file_extent_item_ram_bytes(fi);
	ret->compression = btrfs_file_extent_item_compression(fi);
	ret->encryption = btrfs_file_extent_item_encryption(fi);
	ret->other_encoding = btrfs_file_extent_item_other_encoding(fi);
	ret->type = btrfs_file_extent_item_type(fi);
	if (ret->type == BTRFS_FILE_EXTENT_INLINE) {
		ret->inline_data = (const u8 *)fi + BTRFS_FILE_EXTENT_INLINE_DATA_START;
		ret->inline_len = size - BTRFS_FILE_EXTENT_INLINE_DATA_START;
		ret->end = key_offset + ret->ram_bytes;
		return 0;
	}
	if (size < sizeof(*fi))
		return -EUCLEAN;
	ret->disk_bytenr = btrfs_file_extent_item_disk_bytenr(fi);
	ret->disk_num_bytes = btrfs_file_extent_item_disk_num_bytes(fi);
	ret->offset = btrfs_file_extent_item_offset(fi);
	ret->num_bytes = btrfs_file_extent_item_num_bytes(fi);
	ret->end = key_offset + ret->num_bytes;
	return 0;
}

int btrfs_read_file_extent(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
			   struct tlog_file_extent *ret)
{
	u32 size = btrfs_item_size(leaf, slot);

	if (btrfs_parse_file_extent(btrfs_item_ptr(leaf, slot), size, key->offset, ret))
		return item_error(leaf, slot, key, "file extent", "item size %u is too small", size);
	return 0;
}

static int check_file_extent_aligned(const struct extent_buffer *leaf, int slot,
				     const struct btrfs_key *key, const struct tlog_file_extent *fe,
				     u32 sectorsize)
{
	static const char * const names[] = {
		"ram_bytes", "disk_bytenr", "disk_num_bytes", "offset", "num_bytes",
	};
	const u64 values[] = {
		fe->ram_bytes, fe->disk_bytenr, fe->disk_num_bytes, fe->offset, fe->num_bytes,
	};

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		if (values[i] % sectorsize)
			return item_error(leaf, slot, key, "file extent",
					  "%s %llu is not sector aligned (%u)", names[i],
					  (unsigned long long)values[i], sectorsize);
	return 0;
}

/*
 * The kernel's rules: at a sector-aligned file offset, of a known type and
 * compression, unencrypted; an uncompressed inline extent at offset 0
 * holds exactly ram_bytes, a regular or prealloc one is a whole item of
 * aligned fields that does not overflow the file.
 */
static int check_decoded_file_extent(const struct extent_buffer *leaf, int slot,
				     const struct btrfs_key *key, const struct tlog_file_extent *fe,
				     u32 sectorsize)
{
	if (key->offset % sectorsize)
		return item_error(leaf, slot, key, "file extent", "unaligned file offset");
	if (fe->type >= NR_FILE_EXTENT_TYPES)
		return item_error(leaf, slot, key, "file extent", "invalid type %u", fe->type);
	if (fe->compression >= NR_COMPRESS_TYPES)
		return item_error(leaf, slot, key, "file extent", "unknown compression %u",
				  fe->compression);
	if (fe->encryption)
		return item_error(leaf, slot, key, "file extent", "invalid encryption %u",
				  fe->encryption);
	if (fe->type == BTRFS_FILE_EXTENT_INLINE) {
		if (key->offset)
			return item_error(leaf, slot, key, "file extent", "inline extent not at offset 0");
		if (fe->compression == BTRFS_COMPRESS_NONE && fe->inline_len != fe->ram_bytes)
			return item_error(leaf, slot, key, "file extent",
					  "uncompressed inline extent of %llu bytes in an item of %u",
					  (unsigned long long)fe->ram_bytes, fe->item_size);
		return 0;
	}
	if (fe->item_size != sizeof(struct btrfs_file_extent_item))
		return item_error(leaf, slot, key, "file extent", "item size %u, expected %zu",
				  fe->item_size, sizeof(struct btrfs_file_extent_item));
	if (check_file_extent_aligned(leaf, slot, key, fe, sectorsize))
		return -EUCLEAN;
	if (fe->end < key->offset)
		return item_error(leaf, slot, key, "file extent", "end overflows");
	return 0;
}

int btrfs_decode_file_extent(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			     const struct btrfs_key *key, struct tlog_file_extent *ret)
{
	int err = btrfs_parse_file_extent(btrfs_item_ptr(leaf, slot), btrfs_item_size(leaf, slot),
					  key->offset, ret);

	/* a short regular item is reported by its size, below */
	if (err && ret->item_size < BTRFS_FILE_EXTENT_INLINE_DATA_START)
		return item_error(leaf, slot, key, "file extent", "item size %u is too small",
				  ret->item_size);
	return check_decoded_file_extent(leaf, slot, key, ret, fs->sectorsize);
}
