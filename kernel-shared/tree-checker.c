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

#define EXTENT_FLAGS_KNOWN	(BTRFS_EXTENT_FLAG_DATA | BTRFS_EXTENT_FLAG_TREE_BLOCK |	\
				 BTRFS_BLOCK_FLAG_FULL_BACKREF)

int btrfs_parse_extent_item(const void *ptr, u32 size, const struct btrfs_key *key,
			    struct tlog_extent_item *ret)
{
	const struct btrfs_extent_item *ei = ptr;

	memset(ret, 0, sizeof(*ret));
	ret->ptr = ptr;
	ret->size = size;
	if (size < sizeof(*ei))
		return -EUCLEAN;
	ret->refs = btrfs_extent_item_refs(ei);
	ret->generation = btrfs_extent_item_generation(ei);
	ret->flags = btrfs_extent_item_flags(ei);
	ret->refs_start = sizeof(*ei);
	if (!(ret->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK))
		return 0;
	if (key->type == BTRFS_METADATA_ITEM_KEY) {
		/* skinny: the level is the key's offset, there is no block info */
		ret->level = key->offset > BTRFS_MAX_LEVEL ? BTRFS_MAX_LEVEL : (int)key->offset;
		return 0;
	}
	if (size < sizeof(*ei) + sizeof(*ret->info))
		return -EUCLEAN;
	ret->info = (const void *)(ei + 1);
	ret->level = btrfs_tree_block_info_level(ret->info);
	ret->refs_start += sizeof(*ret->info);
	return 0;
}

u32 btrfs_inline_ref_size(u8 type)
{
	switch (type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_SHARED_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		return sizeof(struct btrfs_extent_inline_ref);
	case BTRFS_SHARED_DATA_REF_KEY:
		return sizeof(struct btrfs_extent_inline_ref) + sizeof(struct btrfs_shared_data_ref);
	case BTRFS_EXTENT_DATA_REF_KEY:
		/* the data ref stands where the offset would */
		return offsetof(struct btrfs_extent_inline_ref, offset) +
		       sizeof(struct btrfs_extent_data_ref);
	}
	return 0;
}

/* What an EXTENT_DATA_REF names, inline or keyed. */
static void fill_data_ref(const struct btrfs_extent_data_ref *dref, struct tlog_extent_ref *ret)
{
	ret->root = btrfs_extent_data_ref_root(dref);
	ret->objectid = btrfs_extent_data_ref_objectid(dref);
	ret->file_offset = btrfs_extent_data_ref_offset(dref);
	ret->count = btrfs_extent_data_ref_count(dref);
	ret->offset = btrfs_extent_data_ref_hash(ret->root, ret->objectid, ret->file_offset);
}

int btrfs_next_inline_ref(const struct tlog_extent_item *ei, u32 *cur,
			  struct tlog_extent_ref *ret)
{
	const struct btrfs_extent_inline_ref *iref = (const void *)(ei->ptr + *cur);

	memset(ret, 0, sizeof(*ret));
	ret->at = *cur;
	if (*cur >= ei->size)
		return 1;
	ret->type = btrfs_extent_inline_ref_type(iref);
	ret->len = btrfs_inline_ref_size(ret->type);
	/* every inline reference is at least a type and an offset */
	if (ei->size - *cur < sizeof(*iref) || !ret->len || ei->size - *cur < ret->len)
		return -EUCLEAN;
	ret->count = 1;
	if (ret->type == BTRFS_EXTENT_DATA_REF_KEY) {
		fill_data_ref((const void *)&iref->offset, ret);
	} else {
		ret->offset = btrfs_extent_inline_ref_offset(iref);
		if (ret->type == BTRFS_SHARED_DATA_REF_KEY)
			ret->count = btrfs_shared_data_ref_count((const void *)(iref + 1));
	}
	*cur += ret->len;
	return 0;
}

static int check_extent_flags(const struct tlog_fs *fs, const struct extent_buffer *leaf,
			      int slot, const struct btrfs_key *key,
			      const struct tlog_extent_item *ei)
{
	bool data = ei->flags & BTRFS_EXTENT_FLAG_DATA;
	bool tree = ei->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK;

	if (ei->flags & ~EXTENT_FLAGS_KNOWN)
		return item_error(leaf, slot, key, "extent", "unknown flags 0x%llx",
				  (unsigned long long)ei->flags);
	if (data == tree)
		return item_error(leaf, slot, key, "extent", "flags 0x%llx name %s",
				  (unsigned long long)ei->flags,
				  data ? "both data and a tree block" : "neither data nor a tree block");
	if (key->type == BTRFS_METADATA_ITEM_KEY && !tree)
		return item_error(leaf, slot, key, "extent", "metadata item of a data extent");
	if (data && (ei->flags & BTRFS_BLOCK_FLAG_FULL_BACKREF))
		return item_error(leaf, slot, key, "extent", "full backref flag on data");
	if (key->objectid % fs->sectorsize)
		return item_error(leaf, slot, key, "extent", "unaligned bytenr");
	if (key->type == BTRFS_EXTENT_ITEM_KEY && (!key->offset || key->offset % fs->sectorsize))
		return item_error(leaf, slot, key, "extent", "length is not a whole number of sectors");
	/* a skinny item's level was capped at BTRFS_MAX_LEVEL when read */
	if (tree && ei->level >= BTRFS_MAX_LEVEL)
		return item_error(leaf, slot, key, "extent", "tree block level %d", ei->level);
	return 0;
}

/* A reference of the extent's kind, after the one before it in the kernel's order. */
static int check_inline_ref(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
			    const struct tlog_extent_item *ei, const struct tlog_extent_ref *ref,
			    const struct tlog_extent_ref *last)
{
	bool data = ei->flags & BTRFS_EXTENT_FLAG_DATA;

	if (ref->type != BTRFS_EXTENT_OWNER_REF_KEY && btrfs_is_data_ref(ref->type) != data)
		return item_error(leaf, slot, key, "extent", "%s reference at byte %u of a %s extent",
				  btrfs_is_data_ref(ref->type) ? "data" : "tree block", ref->at,
				  data ? "data" : "tree block");
	/* types ascend; within a type, offsets (hashes of data refs) descend */
	if (last && (ref->type < last->type ||
		     (ref->type == last->type && ref->offset > last->offset)))
		return item_error(leaf, slot, key, "extent", "inline reference at byte %u out of order",
				  ref->at);
	return 0;
}

static int check_inline_refs(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
			     const struct tlog_extent_item *ei)
{
	struct tlog_extent_ref ref, last;
	u64 counted = 0;
	u32 cur;
	int ret;

	btrfs_for_each_inline_ref(ei, &cur, &ref, ret) {
		if (check_inline_ref(leaf, slot, key, ei, &ref, ref.at > ei->refs_start ? &last : NULL))
			return -EUCLEAN;
		counted += ref.count;
		last = ref;
	}
	if (ret < 0 && !ref.len && ei->size - ref.at >= sizeof(struct btrfs_extent_inline_ref))
		return item_error(leaf, slot, key, "extent", "unknown inline reference type %u at byte %u",
				  ref.type, ref.at);
	if (ret < 0)
		return item_error(leaf, slot, key, "extent", "inline reference at byte %u is cut off",
				  ref.at);
	if (counted > ei->refs)
		return item_error(leaf, slot, key, "extent", "inline references count %llu, refs %llu",
				  (unsigned long long)counted, (unsigned long long)ei->refs);
	return 0;
}

int btrfs_decode_extent_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			     const struct btrfs_key *key, struct tlog_extent_item *ret)
{
	u32 size = btrfs_item_size(leaf, slot);

	if (btrfs_parse_extent_item(btrfs_item_ptr(leaf, slot), size, key, ret))
		return item_error(leaf, slot, key, "extent", "item size %u is too small", size);
	if (check_extent_flags(fs, leaf, slot, key, ret))
		return -EUCLEAN;
	return check_inline_refs(leaf, slot, key, ret);
}

/* Bytes the keyed back reference of @type holds; -1 for no such type. */
static int keyed_ref_size(u8 type)
{
	switch (type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_SHARED_BLOCK_REF_KEY:
		return 0;
	case BTRFS_EXTENT_DATA_REF_KEY:
		return sizeof(struct btrfs_extent_data_ref);
	case BTRFS_SHARED_DATA_REF_KEY:
		return sizeof(struct btrfs_shared_data_ref);
	}
	return -1;
}

int btrfs_parse_keyed_ref(const void *ptr, u32 size, const struct btrfs_key *key,
			  struct tlog_extent_ref *ret)
{
	int want = keyed_ref_size(key->type);

	memset(ret, 0, sizeof(*ret));
	ret->type = key->type;
	ret->offset = key->offset;
	ret->count = 1;
	if (want < 0 || size < (u32)want)
		return -EUCLEAN;
	if (key->type == BTRFS_EXTENT_DATA_REF_KEY)
		fill_data_ref(ptr, ret);
	else if (key->type == BTRFS_SHARED_DATA_REF_KEY)
		ret->count = btrfs_shared_data_ref_count(ptr);
	return 0;
}

int btrfs_decode_keyed_ref(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
			   struct tlog_extent_ref *ret)
{
	u32 size = btrfs_item_size(leaf, slot);
	int want = keyed_ref_size(key->type);

	if (want < 0)
		return item_error(leaf, slot, key, "extent ref", "not a back reference");
	if (size != (u32)want)
		return item_error(leaf, slot, key, "extent ref", "item size %u, expected %d", size, want);
	btrfs_parse_keyed_ref(btrfs_item_ptr(leaf, slot), size, key, ret);
	if (key->type == BTRFS_EXTENT_DATA_REF_KEY && ret->offset != key->offset)
		return item_error(leaf, slot, key, "extent ref", "key offset is not the hash of the ref");
	return 0;
}

int btrfs_decode_csum_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			   const struct btrfs_key *key, struct tlog_csum_item *ret)
{
	u32 size = btrfs_item_size(leaf, slot);

	memset(ret, 0, sizeof(*ret));
	if (key->objectid != BTRFS_EXTENT_CSUM_OBJECTID || key->type != BTRFS_EXTENT_CSUM_KEY)
		return item_error(leaf, slot, key, "csum", "invalid key");
	if (key->offset % fs->sectorsize)
		return item_error(leaf, slot, key, "csum", "unaligned bytenr");
	if (size % fs->csum_size)
		return item_error(leaf, slot, key, "csum", "item size %u is not a multiple of %u",
				  size, (unsigned)fs->csum_size);
	ret->start = key->offset;
	ret->end = key->offset + (u64)(size / fs->csum_size) * fs->sectorsize;
	if (ret->end < ret->start)
		return item_error(leaf, slot, key, "csum", "end overflows");
	ret->csums = btrfs_item_ptr(leaf, slot);
	ret->size = size;
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
