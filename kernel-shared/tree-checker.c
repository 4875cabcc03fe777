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
#include <sys/stat.h>

#include "csum.h"
#include "errctx.h"
#include "misc.h"
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

/* Where the file extent at @slot ends in the file. */
static u64 file_extent_end(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key)
{
	const struct btrfs_file_extent_item *fi = btrfs_item_ptr(leaf, slot);

	if (btrfs_file_extent_item_type(fi) == BTRFS_FILE_EXTENT_INLINE)
		return key->offset + btrfs_file_extent_item_ram_bytes(fi);
	return key->offset + btrfs_file_extent_item_num_bytes(fi);
}

static int check_file_extent_aligned(const struct extent_buffer *leaf, int slot,
				     const struct btrfs_key *key, u32 sectorsize)
{
	const struct btrfs_file_extent_item *fi = btrfs_item_ptr(leaf, slot);
	static const char * const names[] = {
		"ram_bytes", "disk_bytenr", "disk_num_bytes", "offset", "num_bytes",
	};
	const u64 values[] = {
		btrfs_file_extent_item_ram_bytes(fi), btrfs_file_extent_item_disk_bytenr(fi),
		btrfs_file_extent_item_disk_num_bytes(fi), btrfs_file_extent_item_offset(fi),
		btrfs_file_extent_item_num_bytes(fi),
	};

	for (int i = 0; i < 5; i++)
		if (values[i] % sectorsize)
			return item_error(leaf, slot, key, "file extent", "%s %llu is not aligned to %u",
					  names[i], (unsigned long long)values[i], sectorsize);
	return 0;
}

/*
 * A file extent: at a sector-aligned file offset, past the end of the one
 * before it, of a known type and compression, unencrypted; an uncompressed
 * inline extent holds exactly ram_bytes, a regular one is a whole item of
 * aligned fields that does not overflow the file.
 */
static int check_file_extent(const struct tlog_fs *fs, const struct extent_buffer *leaf,
			     int slot, const struct btrfs_key *key, const struct btrfs_key *prev)
{
	const struct btrfs_file_extent_item *fi = btrfs_item_ptr(leaf, slot);
	u32 size = btrfs_item_size(leaf, slot);
	u8 type;

	if (key->offset % fs->sectorsize)
		return item_error(leaf, slot, key, "file extent", "unaligned file offset");
	if (size < BTRFS_FILE_EXTENT_INLINE_DATA_START)
		return item_error(leaf, slot, key, "file extent", "item size %u is too small", size);
	type = btrfs_file_extent_item_type(fi);
	if (type >= NR_FILE_EXTENT_TYPES)
		return item_error(leaf, slot, key, "file extent", "invalid type %u", type);
	if (btrfs_file_extent_item_compression(fi) >= NR_COMPRESS_TYPES)
		return item_error(leaf, slot, key, "file extent", "invalid compression %u",
				  btrfs_file_extent_item_compression(fi));
	if (btrfs_file_extent_item_encryption(fi))
		return item_error(leaf, slot, key, "file extent", "invalid encryption %u",
				  btrfs_file_extent_item_encryption(fi));
	if (type == BTRFS_FILE_EXTENT_INLINE) {
		if (key->offset)
			return item_error(leaf, slot, key, "file extent", "inline extent not at offset 0");
		if (btrfs_file_extent_item_compression(fi) == BTRFS_COMPRESS_NONE &&
		    size != BTRFS_FILE_EXTENT_INLINE_DATA_START + btrfs_file_extent_item_ram_bytes(fi))
			return item_error(leaf, slot, key, "file extent",
					  "uncompressed inline extent of %llu bytes in an item of %u",
					  (unsigned long long)btrfs_file_extent_item_ram_bytes(fi), size);
	} else {
		if (size != sizeof(*fi))
			return item_error(leaf, slot, key, "file extent", "item size %u, expected %zu",
					  size, sizeof(*fi));
		if (check_file_extent_aligned(leaf, slot, key, fs->sectorsize))
			return -EUCLEAN;
		if (key->offset + btrfs_file_extent_item_num_bytes(fi) < key->offset)
			return item_error(leaf, slot, key, "file extent", "end overflows");
	}
	if (prev && prev->objectid == key->objectid && prev->type == BTRFS_EXTENT_DATA_KEY &&
	    file_extent_end(leaf, slot - 1, prev) > key->offset)
		return item_error(leaf, slot, key, "file extent",
				  "the extent before it ends at %llu, past this one's start",
				  (unsigned long long)file_extent_end(leaf, slot - 1, prev));
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

/* ---- tree block layout ---- */

static int check_leaf(struct tlog_fs *fs, const u8 *buf, u64 bytenr)
{
	const struct btrfs_header *h = (const struct btrfs_header *)buf;
	u32 nritems = btrfs_header_nritems(h);
	u32 data_size = btrfs_leaf_data_size(fs->nodesize);
	struct btrfs_key prev = { 0 }, key;
	u32 data_end = data_size;	/* where the next item's data must end */

	if ((u64)nritems * sizeof(struct btrfs_item) > data_size)
		return tlog_error(-EUCLEAN, "leaf %llu: %u items cannot fit",
				  (unsigned long long)bytenr, nritems);
	for (u32 i = 0; i < nritems; i++) {
		const struct btrfs_item *item = (const struct btrfs_item *)
			(buf + sizeof(*h) + (size_t)i * sizeof(*item));
		u32 off = btrfs_raw_item_offset(item);
		u32 size = btrfs_raw_item_size(item);

		btrfs_disk_key_to_cpu(&key, &item->key);
		if (i > 0 && btrfs_comp_cpu_keys(&prev, &key) >= 0)
			return tlog_error(-EUCLEAN, "leaf %llu: key %u is not above key %u",
					  (unsigned long long)bytenr, i, i - 1);
		if (off > data_size || size > data_size - off)
			return tlog_error(-EUCLEAN,
					  "leaf %llu: item %u data [%u, +%u) is outside the leaf",
					  (unsigned long long)bytenr, i, off, size);
		if (off < (u64)nritems * sizeof(struct btrfs_item))
			return tlog_error(-EUCLEAN,
					  "leaf %llu: item %u data overlaps the item headers",
					  (unsigned long long)bytenr, i);
		/* item data is packed back to back from the end of the leaf */
		if (off + size != data_end)
			return tlog_error(-EUCLEAN,
					  "leaf %llu: item %u data ends at %u, expected %u",
					  (unsigned long long)bytenr, i, off + size, data_end);
		data_end = off;
		prev = key;
	}
	return 0;
}

static int check_node(struct tlog_fs *fs, const u8 *buf, u64 bytenr)
{
	const struct btrfs_header *h = (const struct btrfs_header *)buf;
	u32 nritems = btrfs_header_nritems(h);
	struct btrfs_key prev = { 0 }, key;

	if (nritems == 0 || nritems > btrfs_nodeptrs_per_block(fs->nodesize))
		return tlog_error(-EUCLEAN, "node %llu: invalid number of pointers %u",
				  (unsigned long long)bytenr, nritems);
	for (u32 i = 0; i < nritems; i++) {
		const struct btrfs_key_ptr *kp = (const struct btrfs_key_ptr *)
			(buf + sizeof(*h) + (size_t)i * sizeof(*kp));
		u64 ptr = btrfs_key_ptr_blockptr(kp);

		btrfs_disk_key_to_cpu(&key, &kp->key);
		if (i > 0 && btrfs_comp_cpu_keys(&prev, &key) >= 0)
			return tlog_error(-EUCLEAN, "node %llu: key %u is not above key %u",
					  (unsigned long long)bytenr, i, i - 1);
		if (ptr == 0 || !IS_ALIGNED(ptr, fs->sectorsize))
			return tlog_error(-EUCLEAN, "node %llu: pointer %u to invalid address %llu",
					  (unsigned long long)bytenr, i, (unsigned long long)ptr);
		prev = key;
	}
	return 0;
}

int btrfs_check_tree_block(struct tlog_fs *fs, const u8 *buf, u64 bytenr)
{
	const struct btrfs_header *h = (const struct btrfs_header *)buf;
	u8 csum[BTRFS_CSUM_SIZE];

	btrfs_csum_data(fs->csum_type, buf + BTRFS_CSUM_SIZE,
			fs->nodesize - BTRFS_CSUM_SIZE, csum);
	if (memcmp(csum, h->csum, fs->csum_size) != 0)
		return tlog_error(-EUCLEAN, "checksum mismatch on tree block %llu",
				  (unsigned long long)bytenr);
	return btrfs_check_tree_block_layout(fs, buf, bytenr);
}

int btrfs_check_tree_block_layout(struct tlog_fs *fs, const u8 *buf, u64 bytenr)
{
	const struct btrfs_header *h = (const struct btrfs_header *)buf;

	if (btrfs_header_bytenr(h) != bytenr)
		return tlog_error(-EUCLEAN, "tree block %llu claims to be at %llu",
				  (unsigned long long)bytenr,
				  (unsigned long long)btrfs_header_bytenr(h));
	if (memcmp(h->fsid, fs->header_fsid, BTRFS_FSID_SIZE) != 0)
		return tlog_error(-EUCLEAN, "tree block %llu belongs to another filesystem (bad fsid)",
				  (unsigned long long)bytenr);
	if (btrfs_header_level(h) >= BTRFS_MAX_LEVEL)
		return tlog_error(-EUCLEAN, "tree block %llu has invalid level %u",
				  (unsigned long long)bytenr, btrfs_header_level(h));
	if (btrfs_header_level(h) == 0)
		return check_leaf(fs, buf, bytenr);
	return check_node(fs, buf, bytenr);
}
