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
#include "print-tree.h"
#include "tree-checker.h"
#include "volumes.h"

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

/*
 * The newest finding of this thread: the error context keeps only its
 * text, a checker that gathers many findings wants its fields.
 */
static _Thread_local struct tlog_finding last_finding;

const struct tlog_finding *tlog_last_finding(void)
{
	return &last_finding;
}

static void fill_finding(struct tlog_finding *f, const struct extent_buffer *leaf, int slot,
			 const struct btrfs_key *key, const char *kind, const char *what)
{
	f->tree = btrfs_header_owner(eb_header(leaf));
	f->block = leaf->start;
	f->slot = slot;
	f->key = *key;
	snprintf(f->kind, sizeof(f->kind), "%s", kind);
	snprintf(f->what, sizeof(f->what), "%s", what);
}

/* Record what is wrong with the item at @slot, and where; returns -EUCLEAN. */
__attribute__((format(printf, 5, 6)))
static int item_error(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
		      const char *kind, const char *fmt, ...)
{
	struct tlog_finding *f = &last_finding;
	char what[sizeof(f->what)], tree[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fill_finding(f, leaf, slot, key, kind, what);
	btrfs_tree_name(f->tree, tree, sizeof(tree));
	return tlog_error(-EUCLEAN, "%s block %llu slot %d key (%llu %u %llu): %s: %s",
			  tree, (unsigned long long)f->block, slot,
			  (unsigned long long)key->objectid, key->type,
			  (unsigned long long)key->offset, kind, f->what);
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

/* ---- inodes, names, roots, block groups, devices, free space ---- */

/*
 * What is wrong with an entry: nothing, a rule the kernel enforces (the
 * entry can still be read, and a tolerant reader shows it), or its
 * lengths, which leave nothing to read.
 */
enum entry_verdict {
	ENTRY_OK,
	ENTRY_BREAKS_RULE,
	ENTRY_UNREADABLE,
};

/*
 * Directory entries and xattrs: each entry fits the item, names a known
 * type (xattrs only in XATTR_ITEMs), has a name of at most 255 bytes and
 * data only if it is an xattr; a name-hashed item's key is its hash.
 */
static enum entry_verdict judge_dir_entry(const u8 *ptr, u32 size, u32 cur,
					  const struct btrfs_key *key, char *what, size_t n)
{
	const struct btrfs_dir_item *di = (const void *)(ptr + cur);
	bool xattr = key->type == BTRFS_XATTR_ITEM_KEY;
	enum entry_verdict broken;
	u16 name_len, data_len;
	u8 type;

	if (size - cur < sizeof(*di)) {
		snprintf(what, n, "entry header at %u is cut off", cur);
		return ENTRY_UNREADABLE;
	}
	name_len = btrfs_dir_item_name_len(di);
	data_len = btrfs_dir_item_data_len(di);
	type = btrfs_dir_item_type(di) & ~BTRFS_FT_ENCRYPTED;
	/* a rule broken by an entry that does not fit is reported as the first thing wrong */
	broken = (u32)name_len + data_len > size - cur - sizeof(*di) ? ENTRY_UNREADABLE
								     : ENTRY_BREAKS_RULE;
	if (type == BTRFS_FT_UNKNOWN || type >= BTRFS_FT_MAX)
		return snprintf(what, n, "invalid type %u", type), broken;
	if (xattr != (type == BTRFS_FT_XATTR))
		return snprintf(what, n, "type %u in %s item", type,
				xattr ? "an xattr" : "a directory"), broken;
	if (name_len == 0 || name_len > BTRFS_NAME_LEN)
		return snprintf(what, n, "name of %u bytes", name_len), broken;
	if (data_len && !xattr)
		return snprintf(what, n, "%u bytes of data in a directory entry", data_len), broken;
	if (broken == ENTRY_UNREADABLE)
		return snprintf(what, n, "entry at %u does not fit", cur), broken;
	if (key->type != BTRFS_DIR_INDEX_KEY &&
	    btrfs_name_hash((const char *)(di + 1), name_len) != key->offset)
		return snprintf(what, n, "name hash mismatch"), ENTRY_BREAKS_RULE;
	return ENTRY_OK;
}

static void fill_dir_entry(const struct btrfs_dir_item *di, const struct btrfs_key *key,
			   struct tlog_dir_entry *de)
{
	de->dir = key->objectid;
	btrfs_disk_key_to_cpu(&de->location, &di->location);
	de->index = key->type == BTRFS_DIR_INDEX_KEY ? key->offset : 0;
	de->transid = btrfs_dir_item_transid(di);
	de->type = btrfs_dir_item_type(di);
	de->name_len = btrfs_dir_item_name_len(di);
	de->name = (const char *)(di + 1);
	de->data_len = btrfs_dir_item_data_len(di);
	de->data = (const u8 *)(di + 1) + de->name_len;
}

/*
 * The verdict @what on an entry: refused with a finding, or for a tolerant
 * reader (@note) written down; an unreadable entry is refused either way.
 */
static int entry_verdict(enum entry_verdict v, const char *what, const struct extent_buffer *leaf,
			 int slot, const struct btrfs_key *key, const char *kind,
			 char *note, size_t note_size)
{
	if (v == ENTRY_OK)
		return 0;
	if (!note)
		return item_error(leaf, slot, key, kind, "%s", what);
	snprintf(note, note_size, "%s: %s", kind, what);
	return v == ENTRY_UNREADABLE ? -EUCLEAN : 0;
}

/*
 * An inode: its size, a file type and nothing but permission bits beside
 * it, generations no newer than the transaction being logged, one link at
 * most for a directory, and only flags the kernel knows.  An item larger
 * than an inode can still be read.  @fs may be NULL: no generation rule.
 */
static enum entry_verdict judge_inode_item(const struct tlog_fs *fs, const u8 *ptr, u32 size,
					   const struct btrfs_key *key, char *what, size_t n)
{
	const struct btrfs_inode_item *ii = (const void *)ptr;
	/* a printer may show a leaf with no filesystem around it */
	u64 newest = fs ? btrfs_super_block_generation(&fs->super) + 1 : (u64)-1;
	u64 flags;
	u32 mode;

	if (!is_inode_objectid(key->objectid) || key->offset != 0)
		return snprintf(what, n, "invalid key"), ENTRY_BREAKS_RULE;
	if (size != sizeof(*ii))
		return snprintf(what, n, "item size %u, expected %zu", size, sizeof(*ii)),
		       size < sizeof(*ii) ? ENTRY_UNREADABLE : ENTRY_BREAKS_RULE;
	if (btrfs_inode_item_generation(ii) > newest)
		return snprintf(what, n, "generation %llu is newer than %llu",
				(unsigned long long)btrfs_inode_item_generation(ii),
				(unsigned long long)newest), ENTRY_BREAKS_RULE;
	if (btrfs_inode_item_transid(ii) > newest)
		return snprintf(what, n, "transid %llu is newer than %llu",
				(unsigned long long)btrfs_inode_item_transid(ii),
				(unsigned long long)newest), ENTRY_BREAKS_RULE;
	mode = btrfs_inode_item_mode(ii);
	if ((mode & ~(S_IFMT | MODE_PERM_BITS)) || !is_valid_file_type(mode))
		return snprintf(what, n, "invalid mode 0%o", mode), ENTRY_BREAKS_RULE;
	if (S_ISDIR(mode) && btrfs_inode_item_nlink(ii) > 1)
		return snprintf(what, n, "directory with %u links", btrfs_inode_item_nlink(ii)),
		       ENTRY_BREAKS_RULE;
	flags = btrfs_inode_item_flags(ii);
	if ((flags & 0xffffffffULL & ~INODE_FLAGS_KNOWN) ||
	    (flags & ~0xffffffffULL & ~INODE_RO_FLAGS_KNOWN))
		return snprintf(what, n, "unknown flags 0x%llx", (unsigned long long)flags),
		       ENTRY_BREAKS_RULE;
	return ENTRY_OK;
}

int btrfs_decode_inode_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			    const struct btrfs_key *key, const struct btrfs_inode_item **ii,
			    char *note, size_t note_size)
{
	char what[sizeof(last_finding.what)];
	enum entry_verdict v;
	int ret;

	if (note)
		note[0] = '\0';
	v = judge_inode_item(fs, btrfs_item_ptr(leaf, slot), btrfs_item_size(leaf, slot), key,
			     what, sizeof(what));
	ret = entry_verdict(v, what, leaf, slot, key, "inode", note, note_size);
	if (ret == 0)
		*ii = btrfs_item_ptr(leaf, slot);
	return ret;
}

static int check_inode_item(const struct tlog_fs *fs, const struct extent_buffer *leaf,
			    int slot, const struct btrfs_key *key)
{
	const struct btrfs_inode_item *ii;

	return btrfs_decode_inode_item(fs, leaf, slot, key, &ii, NULL, 0);
}

int btrfs_dir_entry_at(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
		       u32 cur, struct tlog_dir_entry *de, char *note, size_t note_size)
{
	const u8 *ptr = btrfs_item_ptr(leaf, slot);
	char what[sizeof(last_finding.what)];
	enum entry_verdict v;
	int ret;

	if (note)
		note[0] = '\0';
	v = judge_dir_entry(ptr, btrfs_item_size(leaf, slot), cur, key, what, sizeof(what));
	ret = entry_verdict(v, what, leaf, slot, key, "dir item", note, note_size);
	if (ret)
		return ret;
	fill_dir_entry((const void *)(ptr + cur), key, de);
	return (int)(sizeof(struct btrfs_dir_item) + de->name_len + de->data_len);
}

/*
 * Inode refs and extrefs: a chain of headers, each with the name it
 * counts; an INODE_REF's parent is its key's offset.
 */
static enum entry_verdict judge_ref_entry(const u8 *ptr, u32 size, u32 cur,
					  const struct btrfs_key *key, struct tlog_ref_entry *ref,
					  char *what, size_t n)
{
	bool ext = key->type == BTRFS_INODE_EXTREF_KEY;
	u32 hdr = ext ? sizeof(struct btrfs_inode_extref) : sizeof(struct btrfs_inode_ref);

	if (size - cur < hdr) {
		snprintf(what, n, "header at %u is cut off", cur);
		return ENTRY_UNREADABLE;
	}
	if (ext) {
		const struct btrfs_inode_extref *e = (const void *)(ptr + cur);

		ref->parent = btrfs_inode_extref_parent_objectid(e);
		ref->index = btrfs_inode_extref_index(e);
		ref->name_len = btrfs_inode_extref_name_len(e);
	} else {
		const struct btrfs_inode_ref *r = (const void *)(ptr + cur);

		ref->parent = key->offset;
		ref->index = btrfs_inode_ref_index(r);
		ref->name_len = btrfs_inode_ref_name_len(r);
	}
	ref->name = (const char *)(ptr + cur + hdr);
	ref->len = hdr + ref->name_len;
	if (ref->name_len > size - cur - hdr) {
		snprintf(what, n, "name at %u does not fit", cur);
		return ENTRY_UNREADABLE;
	}
	return ENTRY_OK;
}

int btrfs_ref_entry_at(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
		       u32 cur, struct tlog_ref_entry *ref, char *note, size_t note_size)
{
	char what[sizeof(last_finding.what)];
	enum entry_verdict v;
	int ret;

	if (note)
		note[0] = '\0';
	v = judge_ref_entry(btrfs_item_ptr(leaf, slot), btrfs_item_size(leaf, slot), cur, key,
			    ref, what, sizeof(what));
	ret = entry_verdict(v, what, leaf, slot, key, "inode ref", note, note_size);
	return ret ? ret : (int)ref->len;
}

static bool is_ref_key(u8 type)
{
	return type == BTRFS_INODE_REF_KEY || type == BTRFS_INODE_EXTREF_KEY;
}

/* Decode the entry at @cur of a packed item strictly: its length, or -EUCLEAN. */
static int packed_entry_len(const struct extent_buffer *leaf, int slot,
			    const struct btrfs_key *key, u32 cur)
{
	struct tlog_dir_entry de;
	struct tlog_ref_entry ref;

	if (is_ref_key(key->type))
		return btrfs_ref_entry_at(leaf, slot, key, cur, &ref, NULL, 0);
	return btrfs_dir_entry_at(leaf, slot, key, cur, &de, NULL, 0);
}

/*
 * Dir items, xattrs and inode refs pack entries one after another: each
 * is one its readers accept, and a ref item has one at least.
 */
static int check_packed_item(const struct extent_buffer *leaf, int slot,
			     const struct btrfs_key *key)
{
	u32 size = btrfs_item_size(leaf, slot), cur = 0;

	if (size == 0 && is_ref_key(key->type))
		return item_error(leaf, slot, key, "inode ref", "empty item");
	while (cur < size) {
		int len = packed_entry_len(leaf, slot, key, cur);

		if (len < 0)
			return len;
		cur += len;
	}
	return 0;
}

/* A ROOT_REF or ROOT_BACKREF: the directory and name of a subvolume's link. */
int btrfs_decode_root_ref(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
			  struct tlog_root_ref *ref, char *note, size_t note_size)
{
	const struct btrfs_root_ref *rr = btrfs_item_ptr(leaf, slot);
	u32 size = btrfs_item_size(leaf, slot);
	char what[sizeof(last_finding.what)];
	enum entry_verdict v = ENTRY_UNREADABLE;

	if (note)
		note[0] = '\0';
	if (size < sizeof(*rr)) {
		snprintf(what, sizeof(what), "item size %u is too small", size);
	} else if (btrfs_root_ref_name_len(rr) > size - sizeof(*rr)) {
		snprintf(what, sizeof(what), "name length %u past item end",
			 btrfs_root_ref_name_len(rr));
	} else {
		ref->dirid = btrfs_root_ref_dirid(rr);
		ref->sequence = btrfs_root_ref_sequence(rr);
		ref->name_len = btrfs_root_ref_name_len(rr);
		ref->name = (const char *)(rr + 1);
		v = ENTRY_OK;
	}
	return entry_verdict(v, what, leaf, slot, key, "root ref", note, note_size);
}

/*
 * A ROOT_ITEM, of today's size or of the legacy one before generation_v2
 * (read as the full item, zero-filled): its tree's root is a block at a
 * sector-aligned address, of a level a tree can have.  @fs may be NULL:
 * no alignment rule.
 */
static enum entry_verdict judge_root_item(const struct tlog_fs *fs,
					  const struct btrfs_root_item *ri, u32 size,
					  char *what, size_t n)
{
	if (size < BTRFS_ROOT_ITEM_LEGACY_SIZE)
		return snprintf(what, n, "item size %u is too small", size), ENTRY_UNREADABLE;
	if (size != sizeof(*ri) && size != BTRFS_ROOT_ITEM_LEGACY_SIZE)
		return snprintf(what, n, "item size %u, expected %zu or %zu", size, sizeof(*ri),
				BTRFS_ROOT_ITEM_LEGACY_SIZE), ENTRY_BREAKS_RULE;
	if (btrfs_root_item_level(ri) >= BTRFS_MAX_LEVEL)
		return snprintf(what, n, "invalid root level %u", btrfs_root_item_level(ri)),
		       ENTRY_BREAKS_RULE;
	if (btrfs_root_item_bytenr(ri) == 0 || (fs && btrfs_root_item_bytenr(ri) % fs->sectorsize))
		return snprintf(what, n, "invalid root address %llu",
				(unsigned long long)btrfs_root_item_bytenr(ri)), ENTRY_BREAKS_RULE;
	return ENTRY_OK;
}

int btrfs_decode_root_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			   const struct btrfs_key *key, struct btrfs_root_item *ri,
			   char *note, size_t note_size)
{
	u32 size = btrfs_item_size(leaf, slot);
	char what[sizeof(last_finding.what)];
	enum entry_verdict v;

	if (note)
		note[0] = '\0';
	memset(ri, 0, sizeof(*ri));
	memcpy(ri, btrfs_item_ptr(leaf, slot), size < sizeof(*ri) ? size : sizeof(*ri));
	v = judge_root_item(fs, ri, size, what, sizeof(what));
	return entry_verdict(v, what, leaf, slot, key, "root item", note, note_size);
}

/*
 * Items that are one struct and nothing else: the kernel refuses any
 * other size, and a reader cannot read a shorter one.
 */
static const struct fixed_item {
	u8 type;
	u32 size;
	const char *kind;
} fixed_items[] = {
	{ BTRFS_BLOCK_GROUP_ITEM_KEY, sizeof(struct btrfs_block_group_item), "block group" },
	{ BTRFS_FREE_SPACE_INFO_KEY, sizeof(struct btrfs_free_space_info), "free space info" },
	{ BTRFS_DEV_EXTENT_KEY, sizeof(struct btrfs_dev_extent), "dev extent" },
	{ BTRFS_QGROUP_INFO_KEY, sizeof(struct btrfs_qgroup_info_item), "qgroup info" },
	{ BTRFS_QGROUP_LIMIT_KEY, sizeof(struct btrfs_qgroup_limit_item), "qgroup limit" },
};

static const struct fixed_item *fixed_item_of(u8 type)
{
	for (size_t i = 0; i < sizeof(fixed_items) / sizeof(fixed_items[0]); i++)
		if (fixed_items[i].type == type)
			return &fixed_items[i];
	return NULL;
}

const void *btrfs_fixed_item_at(const struct extent_buffer *leaf, int slot,
				const struct btrfs_key *key, char *note, size_t note_size)
{
	const struct fixed_item *fi = fixed_item_of(key->type);
	u32 size = btrfs_item_size(leaf, slot);
	char what[sizeof(last_finding.what)];
	enum entry_verdict v = ENTRY_OK;

	if (note)
		note[0] = '\0';
	if (!fi) {
		snprintf(what, sizeof(what), "key type %u is no fixed-size item", key->type);
		v = ENTRY_UNREADABLE;
	} else if (size != fi->size) {
		snprintf(what, sizeof(what), "item size %u, expected %u", size, fi->size);
		v = size < fi->size ? ENTRY_UNREADABLE : ENTRY_BREAKS_RULE;
	}
	if (entry_verdict(v, what, leaf, slot, key, fi ? fi->kind : "item", note, note_size))
		return NULL;
	return btrfs_item_ptr(leaf, slot);
}

static int check_fixed_item(const struct extent_buffer *leaf, int slot,
			    const struct btrfs_key *key)
{
	return btrfs_fixed_item_at(leaf, slot, key, NULL, 0) ? 0 : -EUCLEAN;
}

/*
 * Chunks are read from the superblock's sys_chunk_array as well as from
 * the chunk tree's leaves: the chunk check works on the item alone and
 * names the chunk by its logical address.
 */
static bool is_power_of_2(u64 n)
{
	return n && !(n & (n - 1));
}

/* Bytes each stripe of a chunk covers on its device. */
static u64 chunk_stripe_size(u64 type, u64 length, u16 num_stripes, u16 sub_stripes)
{
	u64 profile = type & BTRFS_BLOCK_GROUP_PROFILE_MASK;

	if (profile & BTRFS_BLOCK_GROUP_RAID0)
		return length / num_stripes;
	if ((profile & BTRFS_BLOCK_GROUP_RAID10) && sub_stripes)
		return length * sub_stripes / num_stripes;
	if ((profile & BTRFS_BLOCK_GROUP_RAID5) && num_stripes > 1)
		return length / (num_stripes - 1);
	if ((profile & BTRFS_BLOCK_GROUP_RAID6) && num_stripes > 2)
		return length / (num_stripes - 2);
	return length;	/* single, DUP and the mirrors: a whole copy each */
}

/*
 * Every stripe on our device lies inside it, as the kernel's dev extent
 * verification at mount demands: a chunk map that points past the end
 * would send reads to nowhere and writes far beyond the image.
 */
static int check_chunk_stripes(const struct tlog_fs *fs, u64 logical,
			       const struct btrfs_chunk *chunk)
{
	u64 devid = btrfs_dev_item_devid(&fs->super.dev_item);
	u64 dev_size = btrfs_dev_item_total_bytes(&fs->super.dev_item);
	u16 num_stripes = btrfs_chunk_num_stripes(chunk);
	u64 size = chunk_stripe_size(btrfs_chunk_type(chunk), btrfs_chunk_length(chunk),
				     num_stripes, btrfs_chunk_sub_stripes(chunk));

	for (int i = 0; i < num_stripes; i++) {
		const struct btrfs_stripe *s = btrfs_chunk_stripe(chunk, i);
		u64 physical = btrfs_stripe_offset(s);

		if (btrfs_stripe_devid(s) != devid)
			continue;
		if (physical + size < physical || physical + size > dev_size)
			return tlog_error(-EUCLEAN,
					  "chunk at %llu: stripe %d [%llu, +%llu) is beyond the device end %llu",
					  (unsigned long long)logical, i,
					  (unsigned long long)physical, (unsigned long long)size,
					  (unsigned long long)dev_size);
	}
	return 0;
}

int btrfs_check_chunk(const struct tlog_fs *fs, u64 logical, const struct btrfs_chunk *chunk,
		      u32 item_size)
{
	u64 length, type, stripe_len, profile;
	u16 num_stripes, sub_stripes;

	if (item_size < sizeof(struct btrfs_chunk))
		return tlog_error(-EUCLEAN, "chunk at %llu: item too small (%u bytes)",
				  (unsigned long long)logical, item_size);
	num_stripes = btrfs_chunk_num_stripes(chunk);
	sub_stripes = btrfs_chunk_sub_stripes(chunk);
	length = btrfs_chunk_length(chunk);
	type = btrfs_chunk_type(chunk);
	stripe_len = btrfs_chunk_stripe_len(chunk);
	profile = type & BTRFS_BLOCK_GROUP_PROFILE_MASK;

	if (num_stripes == 0)
		return tlog_error(-EUCLEAN, "chunk at %llu has no stripes",
				  (unsigned long long)logical);
	if (num_stripes > TLOG_MAX_STRIPES)
		return tlog_error(-EUCLEAN, "chunk at %llu has %u stripes",
				  (unsigned long long)logical, num_stripes);
	if (item_size != btrfs_chunk_item_size(num_stripes))
		return tlog_error(-EUCLEAN, "chunk at %llu: item size %u does not fit %u stripes",
				  (unsigned long long)logical, item_size, num_stripes);
	if (length == 0 || length % fs->sectorsize || logical % fs->sectorsize)
		return tlog_error(-EUCLEAN, "chunk at %llu: unaligned start or length %llu",
				  (unsigned long long)logical, (unsigned long long)length);
	if (logical + length < logical)
		return tlog_error(-EUCLEAN, "chunk at %llu: length %llu overflows",
				  (unsigned long long)logical, (unsigned long long)length);
	if (stripe_len != BTRFS_STRIPE_LEN || !is_power_of_2(stripe_len))
		return tlog_error(-EUCLEAN, "chunk at %llu: invalid stripe_len %llu",
				  (unsigned long long)logical, (unsigned long long)stripe_len);
	if (btrfs_chunk_sector_size(chunk) != fs->sectorsize)
		return tlog_error(-EUCLEAN, "chunk at %llu: sector_size %u, expected %u",
				  (unsigned long long)logical,
				  btrfs_chunk_sector_size(chunk), fs->sectorsize);
	if (!(type & BTRFS_BLOCK_GROUP_TYPE_MASK) ||
	    (type & ~(BTRFS_BLOCK_GROUP_TYPE_MASK | BTRFS_BLOCK_GROUP_PROFILE_MASK)))
		return tlog_error(-EUCLEAN, "chunk at %llu: invalid type 0x%llx",
				  (unsigned long long)logical, (unsigned long long)type);
	if (profile && !is_power_of_2(profile))
		return tlog_error(-EUCLEAN, "chunk at %llu: more than one profile in 0x%llx",
				  (unsigned long long)logical, (unsigned long long)type);
	if ((type & BTRFS_BLOCK_GROUP_SYSTEM) &&
	    (type & (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA)))
		return tlog_error(-EUCLEAN, "chunk at %llu: SYSTEM mixed with other types",
				  (unsigned long long)logical);
	if ((profile == 0 && num_stripes != 1) ||
	    (profile == BTRFS_BLOCK_GROUP_DUP && num_stripes != 2) ||
	    (profile == BTRFS_BLOCK_GROUP_RAID1 && num_stripes != 2) ||
	    (profile == BTRFS_BLOCK_GROUP_RAID10 && (num_stripes < 2 || sub_stripes != 2)))
		return tlog_error(-EUCLEAN, "chunk at %llu: %u stripes do not fit profile %s",
				  (unsigned long long)logical, num_stripes,
				  btrfs_bg_profile_name(type));
	return check_chunk_stripes(fs, logical, chunk);
}

/*
 * The chunk tree's item for our device agrees with the superblock's copy
 * of it, as the kernel's device setup at mount demands in its own way
 * (the filesystem's total_bytes covers the device, the device fits its
 * block device, no dev extent past its end): a device item of another
 * size would make the kernel refuse the image we write.
 */
int btrfs_check_dev_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			 const struct btrfs_key *key)
{
	const struct btrfs_dev_item *sb_dev = &fs->super.dev_item;
	const struct btrfs_dev_item *dev = btrfs_item_ptr(leaf, slot);

	if (btrfs_item_size(leaf, slot) < sizeof(*dev))
		return item_error(leaf, slot, key, "device item", "item too small (%u bytes)",
				  btrfs_item_size(leaf, slot));
	if (key->offset != btrfs_dev_item_devid(sb_dev) || btrfs_dev_item_devid(dev) != key->offset)
		return tlog_error(-EOPNOTSUPP, "device item %llu: only single-device images are supported (this is device %llu)",
				  (unsigned long long)key->offset,
				  (unsigned long long)btrfs_dev_item_devid(sb_dev));
	if (btrfs_dev_item_total_bytes(dev) != btrfs_dev_item_total_bytes(sb_dev))
		return item_error(leaf, slot, key, "device item", "size %llu, the superblock says %llu",
				  (unsigned long long)btrfs_dev_item_total_bytes(dev),
				  (unsigned long long)btrfs_dev_item_total_bytes(sb_dev));
	if (btrfs_dev_item_bytes_used(dev) > btrfs_dev_item_total_bytes(dev))
		return item_error(leaf, slot, key, "device item", "%llu bytes used of %llu",
				  (unsigned long long)btrfs_dev_item_bytes_used(dev),
				  (unsigned long long)btrfs_dev_item_total_bytes(dev));
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
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		return check_packed_item(leaf, slot, key);
	case BTRFS_BLOCK_GROUP_ITEM_KEY:
	case BTRFS_FREE_SPACE_INFO_KEY:
	case BTRFS_DEV_EXTENT_KEY:
	case BTRFS_QGROUP_INFO_KEY:
	case BTRFS_QGROUP_LIMIT_KEY:
		return check_fixed_item(leaf, slot, key);
	}
	return 0;
}
