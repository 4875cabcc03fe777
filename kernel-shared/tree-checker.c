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
	if (btrfs_root_item_bytenr(ri) == 0 || (fs && !IS_ALIGNED(btrfs_root_item_bytenr(ri), fs->sectorsize)))
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
	if (length == 0 || !IS_ALIGNED(length, fs->sectorsize) || !IS_ALIGNED(logical, fs->sectorsize))
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

int btrfs_check_block_for_write(struct tlog_fs *fs, const struct extent_buffer *eb)
{
	struct btrfs_key key, prev;
	int ret = btrfs_check_tree_block_layout(fs, eb->data, eb->start);

	if (ret || btrfs_header_level_eb(eb) != 0)
		return ret;
	for (u32 slot = 0; !ret && slot < btrfs_header_nritems_eb(eb); slot++) {
		btrfs_item_key_to_cpu(eb, &key, slot);
		ret = btrfs_check_item(fs, eb, slot, &key, slot ? &prev : NULL);
		prev = key;
	}
	return ret;
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

	/*
	 * The sector size is a power of two (the superblock's check): one
	 * mask for all five, not five 64-bit divisions per item, which were
	 * a tenth of a SEEK walk.  The loop only names the culprit.
	 */
	if ((sectorsize & (sectorsize - 1)) == 0 &&
	    !((fe->ram_bytes | fe->disk_bytenr | fe->disk_num_bytes | fe->offset | fe->num_bytes) &
	      (sectorsize - 1)))
		return 0;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		if (!IS_ALIGNED(values[i], sectorsize))
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
	if (!IS_ALIGNED(key->offset, sectorsize))
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
}

/*
 * Where a reference sorts among its type: its offset, or for an
 * EXTENT_DATA_REF the hash of what it names.  The hash is a crc32c, worked
 * out only when two references are compared, not for every one read: a
 * FIEMAP walk reads the extent item of every extent.
 */
static u64 ref_sort_key(const struct tlog_extent_ref *ref)
{
	if (ref->type == BTRFS_EXTENT_DATA_REF_KEY)
		return btrfs_extent_data_ref_hash(ref->root, ref->objectid, ref->file_offset);
	return ref->offset;
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
	/* an owner ref (simple quotas) names the extent's owner and counts no reference */
	ret->count = ret->type == BTRFS_EXTENT_OWNER_REF_KEY ? 0 : 1;
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
	if (!IS_ALIGNED(key->objectid, fs->sectorsize))
		return item_error(leaf, slot, key, "extent", "unaligned bytenr");
	if (key->type == BTRFS_EXTENT_ITEM_KEY && (!key->offset || !IS_ALIGNED(key->offset, fs->sectorsize)))
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
		     (ref->type == last->type && ref_sort_key(ref) > ref_sort_key(last))))
		return item_error(leaf, slot, key, "extent", "inline reference at byte %u out of order",
				  ref->at);
	return 0;
}

/*
 * The first reference is decoded where the item keeps it, and the others
 * in turn into two slots, the one before kept for the order check: a
 * FIEMAP walk decodes an item per extent, and copying the reference just
 * decoded stalled on its fresh stores (a third of this function's time).
 */
static int check_inline_refs(const struct extent_buffer *leaf, int slot, const struct btrfs_key *key,
			     struct tlog_extent_item *ei)
{
	struct tlog_extent_ref slots[2], *ref = &ei->first, *last = NULL;
	u64 counted = 0;
	u32 cur = ei->refs_start;
	int ret;

	ei->nr_inline = 0;
	while ((ret = btrfs_next_inline_ref(ei, &cur, ref)) == 0) {
		if (check_inline_ref(leaf, slot, key, ei, ref, last))
			return -EUCLEAN;
		ei->nr_inline++;
		counted += ref->count;
		last = ref;
		ref = &slots[ei->nr_inline & 1];
	}
	if (ret < 0 && !ref->len && ei->size - ref->at >= sizeof(struct btrfs_extent_inline_ref))
		return item_error(leaf, slot, key, "extent", "unknown inline reference type %u at byte %u",
				  ref->type, ref->at);
	if (ret < 0)
		return item_error(leaf, slot, key, "extent", "inline reference at byte %u is cut off",
				  ref->at);
	if (!ei->nr_inline)
		memset(&ei->first, 0, sizeof(ei->first));
	if (counted > ei->refs)
		return item_error(leaf, slot, key, "extent", "inline references count %llu, refs %llu",
				  (unsigned long long)counted, (unsigned long long)ei->refs);
	ei->inline_refs = counted;
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
	if (key->type == BTRFS_EXTENT_DATA_REF_KEY && ref_sort_key(ret) != key->offset)
		return item_error(leaf, slot, key, "extent ref", "key offset is not the hash of the ref");
	return 0;
}

void btrfs_parse_csum_item(const void *ptr, u32 size, u64 key_offset, u32 csum_size,
			   u32 sectorsize, struct tlog_csum_item *ret)
{
	ret->start = key_offset;
	ret->end = key_offset + (u64)(size / csum_size) * sectorsize;
	ret->csums = ptr;
	ret->size = size;
}

int btrfs_decode_csum_item(const struct tlog_fs *fs, const struct extent_buffer *leaf, int slot,
			   const struct btrfs_key *key, struct tlog_csum_item *ret)
{
	u32 size = btrfs_item_size(leaf, slot);

	memset(ret, 0, sizeof(*ret));
	if (key->objectid != BTRFS_EXTENT_CSUM_OBJECTID || key->type != BTRFS_EXTENT_CSUM_KEY)
		return item_error(leaf, slot, key, "csum", "invalid key");
	if (!IS_ALIGNED(key->offset, fs->sectorsize))
		return item_error(leaf, slot, key, "csum", "unaligned bytenr");
	if (size % fs->csum_size)
		return item_error(leaf, slot, key, "csum", "item size %u is not a multiple of %u",
				  size, (unsigned)fs->csum_size);
	btrfs_parse_csum_item(btrfs_item_ptr(leaf, slot), size, key->offset, fs->csum_size,
			      fs->sectorsize, ret);
	if (ret->end < ret->start)
		return item_error(leaf, slot, key, "csum", "end overflows");
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
