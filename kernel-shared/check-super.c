// SPDX-License-Identifier: GPL-2.0-only
/*
 * The checker's first passes: the superblock copies and the volume
 * metadata that every other address depends on.
 *
 * Opening the image already validated the superblock in use, parsed the
 * sys_chunk_array and loaded the chunk tree, but it stops at the first
 * thing it refuses and it never looks at the other superblock copies,
 * the block groups or the device tree.  Here each of those is compared
 * with the others, as the kernel does at mount (block group vs chunk,
 * dev extent vs chunk stripe) and as btrfs check does (device bytes_used
 * vs the dev extents), and every disagreement is reported with numbers.
 *
 * What the kernel itself may leave behind is not a problem:
 *  - superblock copies other than the primary may lag behind it (a power
 *    cut between the writes of one commit) and never record a log (a log
 *    sync writes the primary alone), so only a copy *newer* than the one
 *    in use, or one of the same generation describing other trees, is;
 *  - the kernel fills a backup root slot when it writes the superblocks,
 *    after the next transaction may have started: a slot can name blocks
 *    of that next transaction, and old slots can name chunks a balance
 *    has removed since.  Only the slot of the superblock's own generation
 *    must name the superblock's trees.
 *
 * Invariants: the chunk records are sorted by logical address (the chunk
 * tree's key order, checked while loading; a chunk out of order or
 * overlapping is reported and not recorded); stripes of chunk i are
 * stripes[chunks[i].first_stripe ...+num_stripes).  Only chunks that
 * passed btrfs_check_chunk() are recorded, so their fields are sane.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "blockdev.h"
#include "check-priv.h"
#include "csum.h"
#include "errctx.h"
#include "misc.h"
#include "root-tree.h"
#include "super.h"
#include "tree-checker.h"
#include "volumes.h"

#define UUID_STR_LEN 37

/*
 * "01234567-89ab-cdef-0123-456789abcdef" into @buf (UUID_STR_LEN bytes).
 * libtlog does not link against the command layer's string helpers.
 */
static void uuid_str(const u8 *uuid, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	char *p = buf;

	for (int i = 0; i < BTRFS_UUID_SIZE; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[uuid[i] >> 4];
		*p++ = hex[uuid[i] & 15];
	}
	*p = '\0';
}

/* The reason the library recorded for its last refusal, or @dflt. */
static const char *why(const char *dflt)
{
	const char *r = tlog_error_get();

	return r ? r : dflt;
}

/* ---- superblock copies ---- */

/* "the primary superblock" or "superblock copy 2 (at 274877906944)". */
static void copy_name(int mirror, char *buf, size_t size)
{
	if (mirror == 0)
		snprintf(buf, size, "the primary superblock");
	else
		snprintf(buf, size, "superblock copy %d (at %llu)", mirror,
			 (unsigned long long)btrfs_sb_offset(mirror));
}

/*
 * Whether a writer must have written copy @mirror: the kernel and mkfs
 * write every copy that ends before the device's last byte.  Copies past
 * it may hold anything (an old filesystem, a shrunk device's leftovers).
 */
static bool copy_expected(const struct tlog_fs *fs, int mirror)
{
	u64 dev_total = btrfs_dev_item_total_bytes(&fs->super.dev_item);

	return mirror == 0 || btrfs_sb_offset(mirror) + BTRFS_SUPER_INFO_SIZE < dev_total;
}

/*
 * Read copy @mirror into @sb and judge it alone.  Returns true when it is
 * a valid superblock that can be compared with the one in use.  A copy
 * past the end of the image is the truncation reported by the caller.
 */
static bool read_copy(struct tlog_check *c, struct tlog_fs *fs, int mirror,
		      struct btrfs_super_block *sb)
{
	char name[64];
	u16 csum_type;
	int ret;

	copy_name(mirror, name, sizeof(name));
	tlog_error_clear();
	ret = btrfs_read_super_raw(fs->bdev, mirror, sb);
	if (ret == -ENOENT)
		return false;
	/*
	 * A copy never written (btrfs-image -r restores only the primary)
	 * leaves nothing the kernel reads at mount, and btrfs check passes
	 * it: worth saying, as a rescue would miss it, but no problem.
	 */
	if (ret == -TLOG_ENOTBTRFS) {
		check_problem(c, "super", TLOG_CHECK_WARNING, 0, 0, -1, NULL,
			      "%s has no btrfs magic (never written?)", name);
		return false;
	}
	if (ret) {
		check_problem(c, "super", TLOG_CHECK_TREE, 0, 0, -1, NULL,
			      "%s cannot be read: %s", name, why(strerror(-ret)));
		return false;
	}
	csum_type = btrfs_super_block_csum_type(sb);
	if (!btrfs_csum_type_supported(csum_type)) {
		check_problem(c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "%s has unknown checksum type %u", name, csum_type);
		return false;
	}
	if (!btrfs_super_csum_ok(sb)) {
		check_problem(c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "%s: checksum mismatch", name);
		return false;
	}
	tlog_error_clear();
	if (btrfs_validate_super(sb, mirror)) {
		check_problem(c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "%s: %s", name, why("refused"));
		return false;
	}
	return true;
}

/* One field two copies of one generation must agree on. */
struct super_field {
	const char *name;
	u64 (*get)(const struct btrfs_super_block *sb);
};

#define SUPER_GETTER(field)							\
static u64 get_##field(const struct btrfs_super_block *sb)			\
{										\
	return btrfs_super_block_##field(sb);					\
}
SUPER_GETTER(root)
SUPER_GETTER(root_level)
SUPER_GETTER(chunk_root)
SUPER_GETTER(chunk_root_level)
SUPER_GETTER(chunk_root_generation)
SUPER_GETTER(total_bytes)
SUPER_GETTER(bytes_used)
SUPER_GETTER(num_devices)
SUPER_GETTER(sectorsize)
SUPER_GETTER(nodesize)
SUPER_GETTER(csum_type)
SUPER_GETTER(incompat_flags)
SUPER_GETTER(compat_ro_flags)
SUPER_GETTER(sys_chunk_array_size)
#undef SUPER_GETTER

static u64 get_dev_total_bytes(const struct btrfs_super_block *sb)
{
	return btrfs_dev_item_total_bytes(&sb->dev_item);
}

static u64 get_dev_bytes_used(const struct btrfs_super_block *sb)
{
	return btrfs_dev_item_bytes_used(&sb->dev_item);
}

/*
 * What one commit writes to every copy alike.  Left out: bytenr and csum
 * (per copy), the log root (the primary's alone, by a log sync), the
 * flags and the backup roots (equal too, but not worth a report of their
 * own when the trees agree).
 */
static const struct super_field same_gen_fields[] = {
	{ "root", get_root },
	{ "root_level", get_root_level },
	{ "chunk_root", get_chunk_root },
	{ "chunk_root_level", get_chunk_root_level },
	{ "chunk_root_generation", get_chunk_root_generation },
	{ "total_bytes", get_total_bytes },
	{ "bytes_used", get_bytes_used },
	{ "num_devices", get_num_devices },
	{ "sectorsize", get_sectorsize },
	{ "nodesize", get_nodesize },
	{ "csum_type", get_csum_type },
	{ "incompat_flags", get_incompat_flags },
	{ "compat_ro_flags", get_compat_ro_flags },
	{ "sys_chunk_array_size", get_sys_chunk_array_size },
	{ "dev_item.total_bytes", get_dev_total_bytes },
	{ "dev_item.bytes_used", get_dev_bytes_used },
};

/* Compare valid copy @mirror with the superblock in use. */
static void compare_copy(struct tlog_check *c, struct tlog_fs *fs, int mirror,
			 const struct btrfs_super_block *sb)
{
	const struct btrfs_super_block *use = &fs->super;
	u64 gen = btrfs_super_block_generation(sb);
	u64 use_gen = btrfs_super_block_generation(use);
	char name[64], used[64], a[UUID_STR_LEN], b[UUID_STR_LEN];
	u32 sys_size;

	copy_name(mirror, name, sizeof(name));
	copy_name(fs->super_mirror, used, sizeof(used));
	if (memcmp(sb->fsid, use->fsid, BTRFS_FSID_SIZE) != 0) {
		uuid_str(sb->fsid, a);
		uuid_str(use->fsid, b);
		check_problem(c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "%s has fsid %s, %s %s", name, a, used, b);
		return;
	}
	if (gen > use_gen) {
		check_problem(c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "%s has generation %llu, newer than the %llu of %s", name,
			      (unsigned long long)gen, (unsigned long long)use_gen, used);
		return;
	}
	/* older: the commit's other writes did not all land; nothing to compare */
	if (gen < use_gen)
		return;
	for (size_t i = 0; i < sizeof(same_gen_fields) / sizeof(same_gen_fields[0]); i++) {
		const struct super_field *f = &same_gen_fields[i];

		if (f->get(sb) == f->get(use))
			continue;
		check_problem(c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "%s and %s, both of generation %llu, disagree on %s: %llu and %llu",
			      name, used, (unsigned long long)gen, f->name,
			      (unsigned long long)f->get(sb), (unsigned long long)f->get(use));
		return;
	}
	sys_size = btrfs_super_block_sys_chunk_array_size(sb);
	if (sys_size <= BTRFS_SYSTEM_CHUNK_ARRAY_SIZE &&
	    memcmp(sb->sys_chunk_array, use->sys_chunk_array, sys_size) != 0)
		check_problem(c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "%s and %s, both of generation %llu, disagree on the sys_chunk_array",
			      name, used, (unsigned long long)gen);
}

/* A tree a backup root slot records. */
struct backup_tree {
	const char *name;
	u64 bytenr;
	u64 gen;
	u8 level;
};

static void backup_trees(const struct btrfs_root_backup *b, struct backup_tree t[TLOG_BACKUP_NR])
{
	t[TLOG_BACKUP_TREE_ROOT] = (struct backup_tree){ "tree root",
		btrfs_root_backup_tree_root(b), btrfs_root_backup_tree_root_gen(b),
		btrfs_root_backup_tree_root_level(b) };
	t[TLOG_BACKUP_CHUNK_ROOT] = (struct backup_tree){ "chunk root",
		btrfs_root_backup_chunk_root(b), btrfs_root_backup_chunk_root_gen(b),
		btrfs_root_backup_chunk_root_level(b) };
	t[TLOG_BACKUP_EXTENT_ROOT] = (struct backup_tree){ "extent root",
		btrfs_root_backup_extent_root(b), btrfs_root_backup_extent_root_gen(b),
		btrfs_root_backup_extent_root_level(b) };
	t[TLOG_BACKUP_FS_ROOT] = (struct backup_tree){ "fs root",
		btrfs_root_backup_fs_root(b), btrfs_root_backup_fs_root_gen(b),
		btrfs_root_backup_fs_root_level(b) };
	t[TLOG_BACKUP_DEV_ROOT] = (struct backup_tree){ "dev root",
		btrfs_root_backup_dev_root(b), btrfs_root_backup_dev_root_gen(b),
		btrfs_root_backup_dev_root_level(b) };
	t[TLOG_BACKUP_CSUM_ROOT] = (struct backup_tree){ "csum root",
		btrfs_root_backup_csum_root(b), btrfs_root_backup_csum_root_gen(b),
		btrfs_root_backup_csum_root_level(b) };
}

/* Every address a used backup slot records is one a tree block can have. */
static void check_backup_addresses(struct tlog_check *c, struct tlog_fs *fs, int slot,
				   const struct backup_tree t[TLOG_BACKUP_NR])
{
	for (int j = 0; j < TLOG_BACKUP_NR; j++) {
		if (t[j].bytenr == 0)
			continue;
		if (IS_ALIGNED(t[j].bytenr, fs->sectorsize) && t[j].level < BTRFS_MAX_LEVEL)
			continue;
		check_problem(c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "backup root slot %d: %s %llu level %u is no tree block address",
			      slot, t[j].name, (unsigned long long)t[j].bytenr, t[j].level);
	}
}

/* A slot's tree of generation @gen is the superblock's @bytenr, @level. */
static void check_backup_tree(struct tlog_check *c, int slot, const struct backup_tree *t,
			      u64 gen, u64 bytenr, u8 level)
{
	if (t->gen != gen || (t->bytenr == bytenr && t->level == level))
		return;
	check_problem(c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
		      "backup root slot %d names %s %llu level %u of generation %llu, but the superblock's is %llu level %u",
		      slot, t->name, (unsigned long long)t->bytenr, t->level,
		      (unsigned long long)gen, (unsigned long long)bytenr, level);
}

/*
 * The backup root slots of the superblock in use.  Every used slot holds
 * block addresses a rescue mount would read: aligned, of a possible
 * level.  The slot written with the superblock's own generation names
 * its root tree, and a slot whose chunk root is of the superblock's
 * chunk root generation names that chunk root: a block of a generation
 * is only ever replaced in a later one.
 */
static void check_backup_roots(struct tlog_check *c, struct tlog_fs *fs)
{
	const struct btrfs_super_block *sb = &fs->super;

	for (int i = 0; i < BTRFS_NUM_BACKUP_ROOTS; i++) {
		struct backup_tree t[TLOG_BACKUP_NR];

		backup_trees(&sb->super_roots[i], t);
		if (t[TLOG_BACKUP_TREE_ROOT].bytenr == 0)
			continue;	/* never used */
		check_backup_addresses(c, fs, i, t);
		check_backup_tree(c, i, &t[TLOG_BACKUP_TREE_ROOT], btrfs_super_block_generation(sb),
				  btrfs_super_block_root(sb), btrfs_super_block_root_level(sb));
		check_backup_tree(c, i, &t[TLOG_BACKUP_CHUNK_ROOT],
				  btrfs_super_block_chunk_root_generation(sb),
				  btrfs_super_block_chunk_root(sb),
				  btrfs_super_block_chunk_root_level(sb));
	}
}

/*
 * The superblock in use against the image: the kernel refuses a device
 * whose size item exceeds the block device, so a cut-off copy of an
 * image cannot be mounted even when every block it still holds is fine.
 */
static void check_image_size(struct tlog_check *c, struct tlog_fs *fs)
{
	u64 dev_total = btrfs_dev_item_total_bytes(&fs->super.dev_item);

	if (fs->truncated)
		check_problem(c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "the image is %llu bytes, shorter than the device size %llu its superblock records: truncated",
			      (unsigned long long)fs->bdev->size, (unsigned long long)dev_total);
}

int check_super(struct tlog_check *c, struct tlog_fs *fs)
{
	struct btrfs_super_block *sb;
	struct tlog_errsave save;

	sb = malloc(sizeof(*sb));
	if (!sb)
		return -ENOMEM;
	tlog_error_save(&save);
	for (int mirror = 0; mirror < BTRFS_SUPER_MIRROR_MAX; mirror++) {
		if (!copy_expected(fs, mirror))
			break;
		if (!read_copy(c, fs, mirror, sb) || mirror == fs->super_mirror)
			continue;
		compare_copy(c, fs, mirror, sb);
	}
	tlog_error_restore(&save);
	free(sb);
	check_image_size(c, fs);
	check_backup_roots(c, fs);
	return 0;
}

/* ---- chunks, block groups, device extents ---- */

struct chunk_rec {
	u64 logical;
	u64 length;
	u64 type;
	u64 stripe_len;
	u64 stripe_size;	/* bytes each stripe takes on its device */
	u64 leaf;		/* where the chunk item is */
	int slot;
	u32 first_stripe;
	u16 num_stripes;
	u16 sub_stripes;
	bool in_sys;		/* also in the sys_chunk_array */
	bool has_bg;
};

struct stripe_rec {
	u64 devid;
	u64 physical;
	u8 dev_uuid[BTRFS_UUID_SIZE];
	bool has_dev_extent;
};

struct chunk_check {
	struct tlog_check *c;
	struct tlog_fs *fs;
	u64 devid;		/* the one device, from the superblock */
	u64 dev_total;
	struct chunk_rec *chunks;
	size_t nr_chunks, alloc_chunks;
	struct stripe_rec *stripes;
	size_t nr_stripes, alloc_stripes;
	bool chunks_complete;	/* the chunk tree was read to its end */
	u64 tree_dev_bytes_used;
	bool have_tree_dev_item;
};

/*
 * Bytes one stripe of a chunk takes on its device: the chunk's length
 * over the stripes that hold distinct data.  The chunk passed
 * btrfs_check_chunk(), so the counts fit the profile.
 */
static u64 chunk_stripe_size(u64 type, u64 length, u16 num_stripes, u16 sub_stripes)
{
	u64 profile = type & BTRFS_BLOCK_GROUP_PROFILE_MASK;

	if ((profile & BTRFS_BLOCK_GROUP_RAID0) && num_stripes)
		return length / num_stripes;
	if ((profile & BTRFS_BLOCK_GROUP_RAID10) && num_stripes >= sub_stripes && sub_stripes)
		return length / (num_stripes / sub_stripes);
	if ((profile & BTRFS_BLOCK_GROUP_RAID5) && num_stripes > 1)
		return length / (num_stripes - 1);
	if ((profile & BTRFS_BLOCK_GROUP_RAID6) && num_stripes > 2)
		return length / (num_stripes - 2);
	return length;
}

/* The chunk starting at @logical, or NULL. */
static struct chunk_rec *find_chunk(struct chunk_check *cc, u64 logical)
{
	size_t lo = 0, hi = cc->nr_chunks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cc->chunks[mid].logical == logical)
			return &cc->chunks[mid];
		if (cc->chunks[mid].logical < logical)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void flags_str(u64 flags, char *buf, size_t size)
{
	char s[96];

	btrfs_bg_flags_to_str(flags, s, sizeof(s));
	snprintf(buf, size, "%s (0x%llx)", s, (unsigned long long)flags);
}

/*
 * The stripes of a chunk on the one device: the kernel finds a stripe's
 * device by devid and uuid and refuses a chunk whose device is missing.
 */
static void check_chunk_devices(struct chunk_check *cc, const struct extent_buffer *leaf,
				int slot, const struct btrfs_key *key,
				const struct btrfs_chunk *chunk)
{
	const u8 *uuid = cc->fs->super.dev_item.uuid;
	char a[UUID_STR_LEN], b[UUID_STR_LEN];

	for (int i = 0; i < btrfs_chunk_num_stripes(chunk); i++) {
		const struct btrfs_stripe *s = btrfs_chunk_stripe(chunk, i);

		if (btrfs_stripe_devid(s) != cc->devid) {
			check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID,
				      leaf->start, slot, key,
				      "chunk %llu stripe %d is on device %llu, the filesystem has only device %llu",
				      (unsigned long long)key->offset, i,
				      (unsigned long long)btrfs_stripe_devid(s),
				      (unsigned long long)cc->devid);
		} else if (memcmp(s->dev_uuid, uuid, BTRFS_UUID_SIZE) != 0) {
			uuid_str(s->dev_uuid, a);
			uuid_str(uuid, b);
			check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID,
				      leaf->start, slot, key,
				      "chunk %llu stripe %d names device uuid %s, device %llu is %s",
				      (unsigned long long)key->offset, i, a,
				      (unsigned long long)cc->devid, b);
		}
	}
}

/* Record the valid chunk item at @slot; -ENOMEM only. */
static int add_chunk(struct chunk_check *cc, const struct extent_buffer *leaf, int slot,
		     const struct btrfs_key *key)
{
	const struct btrfs_chunk *chunk = btrfs_item_ptr(leaf, slot);
	u32 size = btrfs_item_size(leaf, slot);
	struct chunk_rec *r, *prev;

	tlog_error_clear();
	if (btrfs_check_chunk(cc->fs, key->offset, chunk, size)) {
		check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID,
			      leaf->start, slot, key, "%s", why("invalid chunk item"));
		return 0;
	}
	check_chunk_devices(cc, leaf, slot, key, chunk);
	prev = cc->nr_chunks ? &cc->chunks[cc->nr_chunks - 1] : NULL;
	if (prev && key->offset <= prev->logical)
		return 0;	/* out of key order: the tree walk reports it */
	if (prev && key->offset - prev->logical < prev->length) {
		check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID,
			      leaf->start, slot, key,
			      "chunk %llu overlaps chunk %llu, which ends at %llu",
			      (unsigned long long)key->offset, (unsigned long long)prev->logical,
			      (unsigned long long)(prev->logical + prev->length));
		return 0;
	}
	if (array_reserve(cc->chunks, cc->alloc_chunks, cc->nr_chunks + 1) ||
	    array_reserve(cc->stripes, cc->alloc_stripes,
			  cc->nr_stripes + btrfs_chunk_num_stripes(chunk)))
		return -ENOMEM;
	r = &cc->chunks[cc->nr_chunks++];
	memset(r, 0, sizeof(*r));
	r->logical = key->offset;
	r->length = btrfs_chunk_length(chunk);
	r->type = btrfs_chunk_type(chunk);
	r->stripe_len = btrfs_chunk_stripe_len(chunk);
	r->num_stripes = btrfs_chunk_num_stripes(chunk);
	r->sub_stripes = btrfs_chunk_sub_stripes(chunk);
	r->stripe_size = chunk_stripe_size(r->type, r->length, r->num_stripes, r->sub_stripes);
	r->leaf = leaf->start;
	r->slot = slot;
	r->first_stripe = (u32)cc->nr_stripes;
	for (int i = 0; i < r->num_stripes; i++) {
		const struct btrfs_stripe *s = btrfs_chunk_stripe(chunk, i);
		struct stripe_rec *sr = &cc->stripes[cc->nr_stripes++];

		sr->devid = btrfs_stripe_devid(s);
		sr->physical = btrfs_stripe_offset(s);
		memcpy(sr->dev_uuid, s->dev_uuid, BTRFS_UUID_SIZE);
		sr->has_dev_extent = false;
	}
	return 0;
}

/*
 * The chunk tree's DEV_ITEM of our device: the superblock's copy of it
 * must agree (btrfs_check_dev_item), and so must its uuid and fsid, by
 * which the kernel finds the device the chunks' stripes name.
 */
static void check_dev_item(struct chunk_check *cc, const struct extent_buffer *leaf, int slot,
			   const struct btrfs_key *key)
{
	const struct btrfs_dev_item *sb_dev = &cc->fs->super.dev_item;
	const struct btrfs_dev_item *dev;
	char a[UUID_STR_LEN], b[UUID_STR_LEN];
	int ret;

	tlog_error_clear();
	ret = btrfs_check_dev_item(cc->fs, leaf, slot, key);
	if (ret == -EOPNOTSUPP) {
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID, leaf->start,
			      slot, key, "device item %llu: the filesystem has only device %llu",
			      (unsigned long long)key->offset, (unsigned long long)cc->devid);
		return;
	}
	if (ret) {
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID, leaf->start,
			      slot, key, "%s", why("invalid device item"));
		if (btrfs_item_size(leaf, slot) < sizeof(*dev))
			return;
	}
	dev = btrfs_item_ptr(leaf, slot);
	if (cc->have_tree_dev_item)
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID, leaf->start,
			      slot, key, "a second device item for device %llu",
			      (unsigned long long)cc->devid);
	cc->have_tree_dev_item = true;
	cc->tree_dev_bytes_used = btrfs_dev_item_bytes_used(dev);
	if (memcmp(dev->uuid, sb_dev->uuid, BTRFS_UUID_SIZE) != 0) {
		uuid_str(dev->uuid, a);
		uuid_str(sb_dev->uuid, b);
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID, leaf->start,
			      slot, key, "device item %llu has uuid %s, the superblock's %s",
			      (unsigned long long)cc->devid, a, b);
	}
	if (memcmp(dev->fsid, sb_dev->fsid, BTRFS_UUID_SIZE) != 0) {
		uuid_str(dev->fsid, a);
		uuid_str(sb_dev->fsid, b);
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID, leaf->start,
			      slot, key, "device item %llu has fsid %s, the superblock's %s",
			      (unsigned long long)cc->devid, a, b);
	}
}

/* Read the chunk tree: chunk items and device items.  -ENOMEM only. */
static int load_chunk_tree(struct chunk_check *cc)
{
	struct btrfs_key min = { 0, 0, 0 };
	struct btrfs_key max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_tree_iter iter;
	int ret = 0;

	btrfs_for_each_item(cc->fs->chunk_root, &iter, &min, &max) {
		const struct btrfs_key *key = &iter.key;

		if (key->type == BTRFS_CHUNK_ITEM_KEY &&
		    key->objectid == BTRFS_FIRST_CHUNK_TREE_OBJECTID)
			ret = add_chunk(cc, iter.leaf, iter.slot, key);
		else if (key->type == BTRFS_DEV_ITEM_KEY &&
			 key->objectid == BTRFS_DEV_ITEMS_OBJECTID)
			check_dev_item(cc, iter.leaf, iter.slot, key);
		if (ret)
			break;
	}
	if (!ret && iter.ret < 0)
		check_problem_errctx(cc->c, "chunk", TLOG_CHECK_TREE, BTRFS_CHUNK_TREE_OBJECTID, 0,
				     "cannot read all of the chunk tree");
	cc->chunks_complete = !ret && iter.ret == 1;
	btrfs_tree_iter_end(&iter);
	if (!ret && !cc->have_tree_dev_item && cc->chunks_complete)
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID, 0, -1, NULL,
			      "the chunk tree has no device item for device %llu",
			      (unsigned long long)cc->devid);
	return ret;
}

/* What differs between a sys_chunk_array chunk and the chunk tree's, or NULL. */
static const char *sys_chunk_diff(const struct chunk_check *cc, const struct map_lookup *m,
				  const struct chunk_rec *r)
{
	if (m->length != r->length)
		return "length";
	if (m->type != r->type)
		return "type";
	if (m->stripe_len != r->stripe_len)
		return "stripe_len";
	if (m->num_stripes != r->num_stripes)
		return "num_stripes";
	if (m->sub_stripes != r->sub_stripes)
		return "sub_stripes";
	for (int i = 0; i < m->num_stripes; i++) {
		const struct stripe_rec *s = &cc->stripes[r->first_stripe + i];

		if (m->stripes[i].devid != s->devid)
			return "stripe devid";
		if (m->stripes[i].physical != s->physical)
			return "stripe offset";
		if (memcmp(m->stripes[i].dev_uuid, s->dev_uuid, BTRFS_UUID_SIZE) != 0)
			return "stripe device uuid";
	}
	return NULL;
}

/*
 * The sys_chunk_array is how the chunk tree itself is found: each of its
 * chunks must be the chunk tree's, and every SYSTEM chunk of the chunk
 * tree must be in it (the kernel adds and removes both in one
 * transaction), or a chunk tree block may lie where no one can map it.
 */
static int check_sys_array(struct chunk_check *cc)
{
	struct chunk_map sys;
	int ret;

	chunk_map_init(&sys);
	tlog_error_clear();
	ret = btrfs_read_sys_array(cc->fs, &sys);
	if (ret == -ENOMEM) {
		chunk_map_release(&sys);
		return ret;
	}
	if (ret) {
		check_problem(cc->c, "super", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "sys_chunk_array: %s", why("invalid"));
		chunk_map_release(&sys);
		return 0;
	}
	for (size_t i = 0; i < sys.nr; i++) {
		const struct map_lookup *m = &sys.maps[i];
		struct chunk_rec *r = find_chunk(cc, m->logical);
		const char *diff;

		if (!r) {
			if (cc->chunks_complete)
				check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
					      "SYSTEM chunk %llu of the sys_chunk_array is not in the chunk tree",
					      (unsigned long long)m->logical);
			continue;
		}
		r->in_sys = true;
		diff = sys_chunk_diff(cc, m, r);
		if (diff) {
			struct btrfs_key key = { BTRFS_FIRST_CHUNK_TREE_OBJECTID,
						 BTRFS_CHUNK_ITEM_KEY, r->logical };

			check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID,
				      r->leaf, r->slot, &key,
				      "SYSTEM chunk %llu: its %s differs between the sys_chunk_array and the chunk tree",
				      (unsigned long long)r->logical, diff);
		}
	}
	for (size_t i = 0; i < cc->nr_chunks; i++) {
		const struct chunk_rec *r = &cc->chunks[i];
		struct btrfs_key key = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
					 r->logical };

		if ((r->type & BTRFS_BLOCK_GROUP_SYSTEM) && !r->in_sys)
			check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID,
				      r->leaf, r->slot, &key,
				      "SYSTEM chunk %llu of the chunk tree is not in the sys_chunk_array",
				      (unsigned long long)r->logical);
	}
	chunk_map_release(&sys);
	return 0;
}

/* One BLOCK_GROUP_ITEM against its chunk, as the kernel's mount demands. */
static void check_block_group(struct chunk_check *cc, u64 tree, const struct extent_buffer *leaf,
			      int slot, const struct btrfs_key *key)
{
	const struct btrfs_block_group_item *bg;
	struct chunk_rec *r;
	char note[128], a[128], b[128];
	u64 flags, used;

	bg = btrfs_fixed_item_at(leaf, slot, key, note, sizeof(note));
	if (!bg)
		return;		/* cut short: the tree walk reports it */
	flags = btrfs_block_group_item_flags(bg);
	used = btrfs_block_group_item_used(bg);
	if (btrfs_block_group_item_chunk_objectid(bg) != BTRFS_FIRST_CHUNK_TREE_OBJECTID)
		check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, tree, leaf->start, slot, key,
			      "block group %llu has chunk_objectid %llu, expected %llu",
			      (unsigned long long)key->objectid,
			      (unsigned long long)btrfs_block_group_item_chunk_objectid(bg),
			      (unsigned long long)BTRFS_FIRST_CHUNK_TREE_OBJECTID);
	if (used > key->offset)
		check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, tree, leaf->start, slot, key,
			      "block group %llu used %llu exceeds its length %llu",
			      (unsigned long long)key->objectid, (unsigned long long)used,
			      (unsigned long long)key->offset);
	r = find_chunk(cc, key->objectid);
	if (!r) {
		if (cc->chunks_complete)
			check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, tree, leaf->start, slot, key,
				      "block group %llu length %llu has no chunk",
				      (unsigned long long)key->objectid,
				      (unsigned long long)key->offset);
		return;
	}
	if (r->has_bg) {
		check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, tree, leaf->start, slot, key,
			      "chunk %llu has a second block group item, of length %llu",
			      (unsigned long long)r->logical, (unsigned long long)key->offset);
		return;
	}
	r->has_bg = true;
	if (key->offset != r->length)
		check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, tree, leaf->start, slot, key,
			      "block group %llu length %llu, but its chunk is %llu long",
			      (unsigned long long)key->objectid, (unsigned long long)key->offset,
			      (unsigned long long)r->length);
	if (flags != r->type) {
		flags_str(flags, a, sizeof(a));
		flags_str(r->type, b, sizeof(b));
		check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, tree, leaf->start, slot, key,
			      "block group %llu has flags %s, but its chunk %s",
			      (unsigned long long)key->objectid, a, b);
	}
}

/*
 * Every BLOCK_GROUP_ITEM against the chunks and every chunk against its
 * block group.  In the extent tree the block group items lie among the
 * extent items, so the whole tree is read (with read-ahead); the block
 * group tree holds nothing else.
 */
static void check_block_groups(struct chunk_check *cc)
{
	u64 tree = btrfs_block_group_root_id(cc->fs);
	struct btrfs_key min = { 0, 0, 0 };
	struct btrfs_key max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_tree_iter iter;
	struct btrfs_root *root;
	bool complete;
	char t[128];

	tlog_error_clear();
	if (btrfs_read_root(cc->fs, tree, &root)) {
		check_problem_errctx(cc->c, "chunk", TLOG_CHECK_TREE, tree, 0,
				     "cannot read the tree of the block groups");
		return;
	}
	btrfs_for_each_item(root, &iter, &min, &max) {
		if (iter.key.type == BTRFS_BLOCK_GROUP_ITEM_KEY)
			check_block_group(cc, tree, iter.leaf, iter.slot, &iter.key);
	}
	if (iter.ret < 0)
		check_problem_errctx(cc->c, "chunk", TLOG_CHECK_TREE, tree, 0,
				     "cannot read all block group items");
	complete = iter.ret == 1;
	btrfs_tree_iter_end(&iter);
	if (!complete)
		return;
	for (size_t i = 0; i < cc->nr_chunks; i++) {
		const struct chunk_rec *r = &cc->chunks[i];
		struct btrfs_key key = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
					 r->logical };

		if (r->has_bg)
			continue;
		flags_str(r->type, t, sizeof(t));
		check_problem(cc->c, "chunk", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID, r->leaf,
			      r->slot, &key, "chunk %llu length %llu %s has no block group item",
			      (unsigned long long)r->logical, (unsigned long long)r->length, t);
	}
}

/* State of the walk over the device tree. */
struct dev_walk {
	u64 prev_devid;
	u64 prev_end;		/* end of the previous dev extent of prev_devid */
	bool have_prev;
	u64 bytes;		/* the lengths of our device's dev extents */
};

/*
 * The stripe of chunk @r that dev extent (@devid, @physical) backs, or
 * NULL.
 */
static struct stripe_rec *find_stripe(struct chunk_check *cc, const struct chunk_rec *r,
				      u64 devid, u64 physical)
{
	for (int i = 0; i < r->num_stripes; i++) {
		struct stripe_rec *s = &cc->stripes[r->first_stripe + i];

		if (s->devid == devid && s->physical == physical)
			return s;
	}
	return NULL;
}

/*
 * The dev extent's own fields and its place on the device.  One whose
 * length is reported as impossible does not move the end the next one is
 * compared with, so that one bad length is one report.
 */
static void check_dev_extent_place(struct chunk_check *cc, struct dev_walk *w,
				   const struct extent_buffer *leaf, int slot,
				   const struct btrfs_key *key, const struct btrfs_dev_extent *de)
{
	u64 len = btrfs_dev_extent_length(de);
	u64 end = key->offset + len < key->offset ? (u64)-1 : key->offset + len;
	bool ours = key->objectid == cc->devid;
	bool inside = len && end <= cc->dev_total;

	if (btrfs_dev_extent_chunk_tree(de) != BTRFS_CHUNK_TREE_OBJECTID ||
	    btrfs_dev_extent_chunk_objectid(de) != BTRFS_FIRST_CHUNK_TREE_OBJECTID)
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_DEV_TREE_OBJECTID, leaf->start,
			      slot, key, "dev extent %llu names chunk tree %llu objectid %llu, expected %llu and %llu",
			      (unsigned long long)key->offset,
			      (unsigned long long)btrfs_dev_extent_chunk_tree(de),
			      (unsigned long long)btrfs_dev_extent_chunk_objectid(de),
			      (unsigned long long)BTRFS_CHUNK_TREE_OBJECTID,
			      (unsigned long long)BTRFS_FIRST_CHUNK_TREE_OBJECTID);
	if (w->have_prev && w->prev_devid == key->objectid && key->offset < w->prev_end)
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_DEV_TREE_OBJECTID, leaf->start,
			      slot, key, "dev extent %llu overlaps the one before it, which ends at %llu",
			      (unsigned long long)key->offset, (unsigned long long)w->prev_end);
	if (ours && !inside)
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_DEV_TREE_OBJECTID, leaf->start,
			      slot, key, "dev extent %llu length %llu is not inside the device's %llu bytes",
			      (unsigned long long)key->offset, (unsigned long long)len,
			      (unsigned long long)cc->dev_total);
	if (!w->have_prev || w->prev_devid != key->objectid) {
		w->prev_end = 0;
		w->prev_devid = key->objectid;
		w->have_prev = true;
	}
	if ((inside || !ours) && end > w->prev_end)
		w->prev_end = end;
	if (ours)
		w->bytes += len;
}

/* One DEV_EXTENT against the chunk it says it backs (the kernel's mount check). */
static void check_dev_extent(struct chunk_check *cc, struct dev_walk *w,
			     const struct extent_buffer *leaf, int slot,
			     const struct btrfs_key *key)
{
	const struct btrfs_dev_extent *de;
	struct chunk_rec *r;
	struct stripe_rec *s;
	char note[128];
	u64 chunk;

	de = btrfs_fixed_item_at(leaf, slot, key, note, sizeof(note));
	if (!de)
		return;		/* cut short: the tree walk reports it */
	if (key->objectid != cc->devid)
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_DEV_TREE_OBJECTID, leaf->start,
			      slot, key, "dev extent %llu is on device %llu, the filesystem has only device %llu",
			      (unsigned long long)key->offset, (unsigned long long)key->objectid,
			      (unsigned long long)cc->devid);
	check_dev_extent_place(cc, w, leaf, slot, key, de);
	chunk = btrfs_dev_extent_chunk_offset(de);
	r = find_chunk(cc, chunk);
	if (!r) {
		if (cc->chunks_complete)
			check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_DEV_TREE_OBJECTID,
				      leaf->start, slot, key,
				      "dev extent %llu names chunk %llu, which does not exist",
				      (unsigned long long)key->offset, (unsigned long long)chunk);
		return;
	}
	s = find_stripe(cc, r, key->objectid, key->offset);
	if (!s) {
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_DEV_TREE_OBJECTID, leaf->start,
			      slot, key, "dev extent %llu names chunk %llu, which has no stripe at device %llu offset %llu",
			      (unsigned long long)key->offset, (unsigned long long)chunk,
			      (unsigned long long)key->objectid, (unsigned long long)key->offset);
		return;
	}
	s->has_dev_extent = true;
	if (btrfs_dev_extent_length(de) != r->stripe_size)
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_DEV_TREE_OBJECTID, leaf->start,
			      slot, key, "dev extent %llu length %llu, but chunk %llu has stripes of %llu",
			      (unsigned long long)key->offset,
			      (unsigned long long)btrfs_dev_extent_length(de),
			      (unsigned long long)chunk, (unsigned long long)r->stripe_size);
}

/*
 * A device statistics item: the kernel writes its five counters, and
 * reads what there is of them; more, or a part of one, is no item it
 * wrote.
 */
static void check_dev_stats(struct chunk_check *cc, const struct extent_buffer *leaf, int slot,
			    const struct btrfs_key *key)
{
	u32 size = btrfs_item_size(leaf, slot);

	if (size > sizeof(struct btrfs_dev_stats_item) || size % sizeof(__le64))
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_DEV_TREE_OBJECTID, leaf->start,
			      slot, key, "dev stats item of device %llu is %u bytes, expected %zu",
			      (unsigned long long)key->offset, size,
			      sizeof(struct btrfs_dev_stats_item));
}

/* After the dev tree: every stripe on our device has its dev extent. */
static void check_stripes_backed(struct chunk_check *cc)
{
	for (size_t i = 0; i < cc->nr_chunks; i++) {
		const struct chunk_rec *r = &cc->chunks[i];
		struct btrfs_key key = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
					 r->logical };

		for (int j = 0; j < r->num_stripes; j++) {
			const struct stripe_rec *s = &cc->stripes[r->first_stripe + j];

			if (s->has_dev_extent || s->devid != cc->devid)
				continue;
			check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID,
				      r->leaf, r->slot, &key,
				      "chunk %llu stripe %d (device %llu offset %llu length %llu) has no dev extent",
				      (unsigned long long)r->logical, j,
				      (unsigned long long)s->devid,
				      (unsigned long long)s->physical,
				      (unsigned long long)r->stripe_size);
		}
	}
}

/* The device's bytes_used, in the chunk tree and the superblock, is what its dev extents take. */
static void check_dev_bytes_used(struct chunk_check *cc, u64 bytes)
{
	u64 sb_used = btrfs_dev_item_bytes_used(&cc->fs->super.dev_item);

	if (cc->have_tree_dev_item && cc->tree_dev_bytes_used != bytes)
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, BTRFS_CHUNK_TREE_OBJECTID, 0, -1, NULL,
			      "device %llu bytes_used is %llu in its device item, but its dev extents add up to %llu",
			      (unsigned long long)cc->devid,
			      (unsigned long long)cc->tree_dev_bytes_used,
			      (unsigned long long)bytes);
	if (sb_used != bytes)
		check_problem(cc->c, "dev", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "device %llu bytes_used is %llu in the superblock's dev_item, but its dev extents add up to %llu",
			      (unsigned long long)cc->devid, (unsigned long long)sb_used,
			      (unsigned long long)bytes);
}

/* The device tree: dev extents against the chunks, stats items, bytes used. */
static void check_dev_tree(struct chunk_check *cc)
{
	struct btrfs_key min = { 0, 0, 0 };
	struct btrfs_key max = { (u64)-1, (u8)-1, (u64)-1 };
	struct dev_walk w = { 0 };
	struct btrfs_tree_iter iter;
	struct btrfs_root *root;
	bool complete;

	tlog_error_clear();
	if (btrfs_read_root(cc->fs, BTRFS_DEV_TREE_OBJECTID, &root)) {
		check_problem_errctx(cc->c, "dev", TLOG_CHECK_TREE, BTRFS_DEV_TREE_OBJECTID, 0,
				     "cannot read the device tree");
		return;
	}
	btrfs_for_each_item(root, &iter, &min, &max) {
		if (iter.key.type == BTRFS_DEV_EXTENT_KEY)
			check_dev_extent(cc, &w, iter.leaf, iter.slot, &iter.key);
		else if (iter.key.type == BTRFS_PERSISTENT_ITEM_KEY &&
			 iter.key.objectid == BTRFS_DEV_STATS_OBJECTID)
			check_dev_stats(cc, iter.leaf, iter.slot, &iter.key);
	}
	if (iter.ret < 0)
		check_problem_errctx(cc->c, "dev", TLOG_CHECK_TREE, BTRFS_DEV_TREE_OBJECTID, 0,
				     "cannot read all of the device tree");
	complete = iter.ret == 1;
	btrfs_tree_iter_end(&iter);
	if (!complete)
		return;
	check_stripes_backed(cc);
	check_dev_bytes_used(cc, w.bytes);
}

int check_chunks(struct tlog_check *c, struct tlog_fs *fs)
{
	struct chunk_check cc = {
		.c = c,
		.fs = fs,
		.devid = btrfs_dev_item_devid(&fs->super.dev_item),
		.dev_total = btrfs_dev_item_total_bytes(&fs->super.dev_item),
	};
	struct tlog_errsave save;
	int ret;

	tlog_error_save(&save);
	ret = load_chunk_tree(&cc);
	if (!ret)
		ret = check_sys_array(&cc);
	if (!ret) {
		check_block_groups(&cc);
		check_dev_tree(&cc);
	}
	free(cc.chunks);
	free(cc.stripes);
	tlog_error_restore(&save);
	return ret;
}
