// SPDX-License-Identifier: GPL-2.0-only
/*
 * The log trees, checked the way the kernel's mount will use them, then
 * replayed for real on a copy-on-write view of the image.
 *
 * `btrfs check` only asks whether logged data has checksums, and says "no
 * error found" on images the kernel cannot mount until the log is zeroed.
 * The log is written in the transaction after the committed one and is
 * outside the extent tree: replay pins its blocks, adds references to the
 * committed extents it names and inserts extent items for the new ones.
 * So, before replaying:
 *
 *   - every block of the log root tree and of each log tree is readable,
 *     owned by the log, of generation super + 1, its items valid and in
 *     order, and its space free: no extent item, no committed tree block,
 *     no other log block;
 *   - every log tree belongs to a subvolume that exists;
 *   - every logged inode has its inode item (in the log or, failing that,
 *     the subvolume), its logged names name directories that exist, its
 *     dir index ranges are well formed;
 *   - every logged data extent is either a data extent the extent tree
 *     has (replay adds a reference) or free space in a data block group
 *     that no other logged extent overlaps (replay inserts its item: a
 *     collision with allocated space makes the mount fail), and its data
 *     has checksums where the inode wants them.
 *
 * Then the proof: the image is wrapped in a copy-on-write device, opened
 * writable, the log replayed and committed as replay-log does, and the
 * other passes run on what the commit left.  The image is never written.
 *
 * Memory: the log's block addresses and its new data extents, one small
 * record each; the log is bounded by what one transaction can fsync.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "blockdev.h"
#include "check-priv.h"
#include "dir-item.h"
#include "errctx.h"
#include "inode.h"
#include "root-tree.h"
#include "transaction.h"
#include "tree-checker.h"
#include "tree-log.h"
#include "volumes.h"

#define AREA "log"


/* A data extent the log names that the extent tree does not have. */
struct new_extent {
	u64 bytenr;
	u64 len;
	u64 subvol;
	u64 ino;
	u64 leaf;
	struct btrfs_key key;
};

struct log_check {
	struct tlog_check *c;
	struct tlog_fs *fs;
	u64 log_gen;			/* the generation every log block carries */
	struct btrfs_root *extent_root;	/* NULL: unreadable, reported by check-tree.c */
	struct btrfs_root *csum_root;
	/* the block walk */
	u64 tree;		/* the log's subvolume (TREE_LOG_OBJECTID: the root tree) */
	struct btrfs_key last_key;	/* the last key of the previous leaf of the tree */
	bool has_last_key;
	u64 *blocks;			/* every block once, sorted after the walk */
	size_t nr_blocks, alloc_blocks;
	u64 *seen;			/* the same, as an open-addressing set (0: empty) */
	size_t seen_slots;
	bool tree_damaged;		/* this tree's structure: its items are not walked */
	bool log_damaged;		/* any tree's: no replay */
	bool log_unreadable;		/* a block could not be read at all */
	struct new_extent *extents;
	size_t nr_extents, alloc_extents;
	/* the logged inode the cursor is in */
	u64 ino;
	u64 ino_flags;
	bool ino_missing_reported;
	u64 last_parent_ok;		/* a directory already found, to skip repeated lookups */
};

static void report_leaf(struct log_check *lc, enum tlog_check_grade grade, u64 block,
			int slot, const struct btrfs_key *key, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static void report_leaf(struct log_check *lc, enum tlog_check_grade grade, u64 block,
			int slot, const struct btrfs_key *key, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	check_problem(lc->c, AREA, grade, lc->tree, block, slot, key, "%s", what);
}

/* A block of the log cannot be read or does not fit its tree: replay cannot walk it. */
static void structure_damaged(struct log_check *lc)
{
	lc->tree_damaged = true;
	lc->log_damaged = true;
}

/* ---- the blocks ---- */

/* The key of an extent item: the bytes it covers. */
static u64 extent_item_len(const struct log_check *lc, const struct btrfs_key *key)
{
	return key->type == BTRFS_METADATA_ITEM_KEY ? lc->fs->nodesize : key->offset;
}

/*
 * Whether an extent item covers part of [@start, @start + @len): the last
 * extent item starting before the end is the only one that can, extent
 * items never overlapping each other (check-extent.c reports those that
 * do).  1 with its key in @found, 0, or a negative errno.
 */
static int find_overlapping_extent(struct log_check *lc, u64 start, u64 len,
				   struct btrfs_key *found)
{
	struct btrfs_key key = { start + len - 1, (u8)-1, (u64)-1 };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(lc->extent_root, &key, &path);
	while (ret >= 0) {
		ret = btrfs_prev_item(lc->extent_root, &path);
		if (ret) {
			ret = ret > 0 ? 0 : ret;	/* the start of the tree */
			break;
		}
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.type != BTRFS_EXTENT_ITEM_KEY && key.type != BTRFS_METADATA_ITEM_KEY)
			continue;	/* back references, block groups */
		*found = key;
		ret = key.objectid + extent_item_len(lc, &key) > start;
		break;
	}
	btrfs_release_path(&path);
	return ret;
}

/* The committed tree block that overlaps [@start, @start + @len), or NULL. */
static const struct check_block *committed_block_over(const struct log_check *lc, u64 start,
						      u64 len)
{
	const struct tlog_check *c = lc->c;
	size_t lo = 0, hi = c->nr_blocks;

	/* the first block starting at or after the end, then the ones before it */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->blocks[mid].bytenr < start + len)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo > 0) {
		const struct check_block *b = &c->blocks[--lo];

		if (b->bytenr + lc->fs->nodesize <= start)
			break;
		if (!b->log)
			return b;
	}
	return NULL;
}

/* The space of a log block must be free in the committed filesystem. */
static int check_block_space(struct log_check *lc, const struct extent_buffer *eb)
{
	u64 start = eb->start, len = lc->fs->nodesize;
	const struct map_lookup *map = chunk_map_find(&lc->fs->chunks, start);
	const struct check_block *b;
	struct btrfs_key found;
	int ret;

	if (map && !(map->type & BTRFS_BLOCK_GROUP_METADATA))
		report_leaf(lc, TLOG_CHECK_ITEM, start, -1, NULL,
			    "log block %llu is not in a metadata block group",
			    (unsigned long long)start);

	if (!lc->c->opts.log_only) {
		b = committed_block_over(lc, start, len);
		if (b)
			report_leaf(lc, TLOG_CHECK_ITEM, start, -1, NULL,
				    "log block %llu overlaps the committed tree block %llu of "
				    "tree %llu: replay would overwrite it",
				    (unsigned long long)start, (unsigned long long)b->bytenr,
				    (unsigned long long)b->owner);
	}
	if (!lc->extent_root)
		return 0;
	ret = find_overlapping_extent(lc, start, len, &found);
	if (ret < 0)
		return ret == -ENOMEM ? ret : 0;
	if (ret)
		report_leaf(lc, TLOG_CHECK_ITEM, start, -1, NULL,
			    "log block %llu is claimed by the extent item (%llu %u %llu): the "
			    "log lies in allocated space",
			    (unsigned long long)start, (unsigned long long)found.objectid,
			    found.type, (unsigned long long)found.offset);
	return 0;
}

/* Header fields the read does not judge: the owner and the generation. */
static void check_block_header(struct log_check *lc, const struct extent_buffer *eb)
{
	const struct btrfs_header *h = eb_header(eb);

	if (btrfs_header_owner(h) != BTRFS_TREE_LOG_OBJECTID)
		report_leaf(lc, TLOG_CHECK_ITEM, eb->start, -1, NULL,
			    "log block owner %llu, expected %llu (the log)",
			    (unsigned long long)btrfs_header_owner(h),
			    (unsigned long long)BTRFS_TREE_LOG_OBJECTID);
	if (btrfs_header_generation(h) != lc->log_gen)
		report_leaf(lc, TLOG_CHECK_ITEM, eb->start, -1, NULL,
			    "log block generation %llu, expected %llu (the transaction after "
			    "the committed one)",
			    (unsigned long long)btrfs_header_generation(h),
			    (unsigned long long)lc->log_gen);
}

/* A log root item: for a subvolume that exists, pointing at a block of the log's generation. */
static void check_log_root_item(struct log_check *lc, const struct extent_buffer *eb, int slot,
				const struct btrfs_key *key)
{
	struct btrfs_root *root;
	const struct btrfs_root_item *ri;

	if (key->objectid != BTRFS_TREE_LOG_OBJECTID || key->type != BTRFS_ROOT_ITEM_KEY) {
		report_leaf(lc, TLOG_CHECK_ITEM, eb->start, slot, key,
			    "unexpected item in the log root tree");
		return;
	}
	if (btrfs_find_root(lc->fs, key->offset, &root) == -ENOENT)
		report_leaf(lc, TLOG_CHECK_ITEM, eb->start, slot, key,
			    "log tree of subvolume %llu, which does not exist: replay drops it "
			    "and what it logged",
			    (unsigned long long)key->offset);
	if (btrfs_item_size(eb, slot) < sizeof(*ri))
		return;		/* btrfs_check_item() said so */
	ri = btrfs_item_ptr(eb, slot);
	if (btrfs_root_item_generation(ri) != lc->log_gen)
		report_leaf(lc, TLOG_CHECK_ITEM, eb->start, slot, key,
			    "log tree of subvolume %llu has generation %llu, expected %llu",
			    (unsigned long long)key->offset,
			    (unsigned long long)btrfs_root_item_generation(ri),
			    (unsigned long long)lc->log_gen);
}

/* Every item through its decoder, keys rising within the leaf and from the leaf before. */
static void check_leaf_items(struct log_check *lc, const struct extent_buffer *eb, bool root_tree)
{
	struct btrfs_key key, prev;

	for (u32 i = 0; i < btrfs_header_nritems_eb(eb); i++) {
		btrfs_item_key_to_cpu(eb, &key, i);
		if (lc->has_last_key && btrfs_comp_cpu_keys(&key, &lc->last_key) <= 0) {
			report_leaf(lc, TLOG_CHECK_TREE, eb->start, i, &key,
				    "key not above the one before it (%llu %u %llu)",
				    (unsigned long long)lc->last_key.objectid, lc->last_key.type,
				    (unsigned long long)lc->last_key.offset);
			structure_damaged(lc);
		}
		if (btrfs_check_item(lc->fs, eb, i, &key, i ? &prev : NULL))
			check_problem_finding(lc->c, AREA, lc->tree);
		else if (root_tree)
			check_log_root_item(lc, eb, i, &key);
		prev = key;
		lc->last_key = key;
		lc->has_last_key = true;
	}
}

static int walk_block(struct log_check *lc, u64 bytenr, int level, u64 gen,
		      const struct btrfs_key *parent_key, bool root_tree);

/* The children of node @eb, each one's first key the node's key for it. */
static int walk_children(struct log_check *lc, const struct extent_buffer *eb, int level,
			 bool root_tree)
{
	for (u32 i = 0; i < btrfs_header_nritems_eb(eb); i++) {
		struct btrfs_key key;
		int ret;

		btrfs_node_key_to_cpu(eb, &key, i);
		ret = walk_block(lc, btrfs_node_blockptr(eb, i), level - 1,
				 btrfs_node_ptr_generation(eb, i), &key, root_tree);
		if (ret)
			return ret;
	}
	return 0;
}

static size_t seen_hash(u64 bytenr, size_t slots)
{
	return (size_t)((bytenr * 0x9e3779b97f4a7c15ULL) >> 20) & (slots - 1);
}

static void seen_put(u64 *slots, size_t nr_slots, u64 bytenr)
{
	size_t i = seen_hash(bytenr, nr_slots);

	while (slots[i])
		i = (i + 1) & (nr_slots - 1);
	slots[i] = bytenr;
}

static bool seen_has(const struct log_check *lc, u64 bytenr)
{
	size_t i;

	if (!lc->seen_slots)
		return false;
	for (i = seen_hash(bytenr, lc->seen_slots); lc->seen[i]; i = (i + 1) & (lc->seen_slots - 1))
		if (lc->seen[i] == bytenr)
			return true;
	return false;
}

/* Keep the set at most half full. */
static int seen_grow(struct log_check *lc)
{
	size_t nr = lc->seen_slots ? 2 * lc->seen_slots : 256;
	u64 *slots;

	if (2 * (lc->nr_blocks + 1) <= lc->seen_slots)
		return 0;
	slots = calloc(nr, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < lc->nr_blocks; i++)
		seen_put(slots, nr, lc->blocks[i]);
	free(lc->seen);
	lc->seen = slots;
	lc->seen_slots = nr;
	return 0;
}

static int record_block(struct log_check *lc, u64 bytenr)
{
	if (array_reserve(lc->blocks, lc->alloc_blocks, lc->nr_blocks + 1) || seen_grow(lc))
		return -ENOMEM;
	seen_put(lc->seen, lc->seen_slots, bytenr);
	lc->blocks[lc->nr_blocks++] = bytenr;
	return 0;
}

/*
 * One block of the log and what hangs below it.  A block that cannot be
 * read is reported and skipped: the rest of the log is still checked.
 */
static int walk_block(struct log_check *lc, u64 bytenr, int level, u64 gen,
		      const struct btrfs_key *parent_key, bool root_tree)
{
	struct extent_buffer *eb;
	struct btrfs_key first;
	int ret;

	if (level < 0 || level >= BTRFS_MAX_LEVEL) {
		report_leaf(lc, TLOG_CHECK_TREE, bytenr, -1, NULL, "log block at level %d", level);
		structure_damaged(lc);
		lc->log_unreadable = true;
		return 0;
	}
	/* a block reached twice is walked once: shared children must not multiply the walk */
	if (seen_has(lc, bytenr)) {
		report_leaf(lc, TLOG_CHECK_TREE, bytenr, -1, NULL,
			    "log block %llu is reached twice in the log",
			    (unsigned long long)bytenr);
		structure_damaged(lc);
		lc->has_last_key = false;
		return 0;
	}
	tlog_error_clear();
	ret = read_tree_block(lc->fs, bytenr, level, gen, &eb);
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		check_problem_errctx(lc->c, AREA, TLOG_CHECK_TREE, lc->tree, bytenr,
				     "log block cannot be read");
		structure_damaged(lc);
		lc->log_unreadable = true;
		lc->has_last_key = false;	/* what follows is compared with what it can be */
		return 0;
	}
	ret = record_block(lc, bytenr);
	if (ret)
		goto out;
	check_block_header(lc, eb);
	ret = check_block_space(lc, eb);
	if (ret)
		goto out;
	if (parent_key && btrfs_header_nritems_eb(eb)) {
		if (level)
			btrfs_node_key_to_cpu(eb, &first, 0);
		else
			btrfs_item_key_to_cpu(eb, &first, 0);
		if (btrfs_comp_cpu_keys(&first, parent_key)) {
			report_leaf(lc, TLOG_CHECK_TREE, bytenr, 0, &first,
				    "first key differs from its parent's key (%llu %u %llu)",
				    (unsigned long long)parent_key->objectid, parent_key->type,
				    (unsigned long long)parent_key->offset);
			structure_damaged(lc);
		}
	}
	if (level == 0)
		check_leaf_items(lc, eb, root_tree);
	else
		ret = walk_children(lc, eb, level, root_tree);
out:
	free_extent_buffer(eb);
	return ret;
}

static int walk_log_tree(struct log_check *lc, u64 tree, struct btrfs_root *root, bool root_tree)
{
	lc->tree = tree;
	lc->has_last_key = false;
	lc->tree_damaged = false;
	return walk_block(lc, root->bytenr, root->level, root->generation, NULL, root_tree);
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Log blocks may not overlap (a block reached twice was reported by the walk). */
static void check_overlapping_blocks(struct log_check *lc)
{
	u64 *b = lc->blocks;

	if (lc->nr_blocks)
		qsort(b, lc->nr_blocks, sizeof(*b), cmp_u64);
	for (size_t i = 1; i < lc->nr_blocks; i++) {
		if (b[i] < b[i - 1] + lc->fs->nodesize)
			check_problem(lc->c, AREA, TLOG_CHECK_ITEM, BTRFS_TREE_LOG_OBJECTID, b[i],
				      -1, NULL, "log blocks %llu and %llu overlap",
				      (unsigned long long)b[i - 1], (unsigned long long)b[i]);
	}
}

/* ---- logged inodes ---- */

/* Whether @ino has an inode item in @root: 1, 0, or a negative errno. */
static int has_inode_item(struct btrfs_root *root, u64 ino)
{
	struct btrfs_key key = { ino, BTRFS_INODE_ITEM_KEY, 0 };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, &key, &path);
	btrfs_release_path(&path);
	return ret < 0 ? ret : ret == 0;
}

/*
 * An inode with items but no inode item in the log: replay reads the
 * subvolume's, and fails (the kernel: -EIO, no mount) without one.  A
 * directory logged only for what was deleted from it legitimately has
 * nothing but DIR_LOG_INDEX ranges, which is why those are not counted.
 */
static void check_inode_item_present(struct log_check *lc, struct btrfs_root *subvol,
				     const struct tlog_log_cursor *cur)
{
	const struct btrfs_tree_iter *it = &cur->iter;
	struct btrfs_inode_item ii;
	int ret;

	if (cur->inode.has_inode_item || cur->kind == TLOG_LOG_DIR_RANGE ||
	    lc->ino_missing_reported)
		return;
	lc->ino_missing_reported = true;
	ret = subvol ? btrfs_lookup_inode(subvol, it->key.objectid, &ii) : -ENOENT;
	if (ret == 0) {
		lc->ino_flags = btrfs_inode_item_flags(&ii);
		return;
	}
	if (ret == -ENOENT)
		report_leaf(lc, TLOG_CHECK_ITEM, it->leaf->start, it->slot, &it->key,
			    "inode %llu has items in the log but no inode item, in the log or "
			    "the subvolume: replay fails, the kernel would refuse to mount",
			    (unsigned long long)it->key.objectid);
}

/* Whether directory @dir exists in the log or the committed subvolume: 1, 0, -errno. */
static int directory_exists(struct log_check *lc, struct btrfs_root *subvol,
			    struct btrfs_root *log, u64 dir)
{
	struct btrfs_inode_item ii;
	int ret;

	if (dir == lc->last_parent_ok)
		return 1;
	ret = has_inode_item(log, dir);
	if (ret == 0 && subvol) {
		ret = btrfs_lookup_inode(subvol, dir, &ii);
		ret = ret == -ENOENT ? 0 : ret < 0 ? ret : 1;
	}
	if (ret == 1)
		lc->last_parent_ok = dir;
	return ret;
}

/*
 * Every logged name of the inode is in a directory that exists.  Replay
 * (the kernel's add_inode_ref) skips a name whose directory it cannot
 * find and goes on: the name is lost, and an inode left with no name is
 * given an orphan item and deleted at the next mount.
 */
static int check_logged_names(struct log_check *lc, struct btrfs_root *subvol,
			      struct btrfs_root *log, const struct btrfs_tree_iter *it)
{
	struct tlog_ref_name *names;
	int nr, ret;

	if (btrfs_decode_ref_item(it->leaf, it->slot, &names, &nr))
		return 0;	/* reported by the block walk */
	for (int i = 0; i < nr; i++) {
		ret = directory_exists(lc, subvol, log, names[i].parent);
		if (ret < 0 && ret != -ENOMEM)
			continue;	/* the subvolume's own walk reports it */
		if (ret < 0) {
			free(names);
			return ret;
		}
		if (ret == 0)
			report_leaf(lc, TLOG_CHECK_ITEM, it->leaf->start, it->slot, &it->key,
				    "logged name \"%.*s\" of inode %llu is in directory %llu, "
				    "which exists neither in subvolume %llu nor in the log: "
				    "replay drops the name (an inode left without names is "
				    "deleted at mount)",
				    (int)names[i].len, names[i].name,
				    (unsigned long long)it->key.objectid,
				    (unsigned long long)names[i].parent,
				    (unsigned long long)lc->tree);
	}
	free(names);
	return 0;
}

static void check_dir_range(struct log_check *lc, const struct btrfs_tree_iter *it)
{
	const struct btrfs_dir_log_item *dl;

	if (it->key.type != BTRFS_DIR_LOG_INDEX_KEY ||
	    btrfs_item_size(it->leaf, it->slot) < sizeof(*dl))
		return;
	dl = btrfs_item_ptr(it->leaf, it->slot);
	if (btrfs_dir_log_item_end(dl) < it->key.offset)
		report_leaf(lc, TLOG_CHECK_ITEM, it->leaf->start, it->slot, &it->key,
			    "dir index range of directory %llu ends at %llu, before its start %llu",
			    (unsigned long long)it->key.objectid,
			    (unsigned long long)btrfs_dir_log_item_end(dl),
			    (unsigned long long)it->key.offset);
}

/*
 * How far from @pos the csum items of @root cover without a gap: @pos
 * when none covers it.  Each item covers (its size / csum size) sectors
 * from its key's offset.
 */
static int csum_covered_until(struct log_check *lc, struct btrfs_root *root, u64 pos, u64 end,
			      u64 *until)
{
	struct btrfs_key key = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, pos };
	struct btrfs_path path;
	int ret;

	*until = pos;
	btrfs_init_path(&path);
	ret = btrfs_search_backwards(root, &key, &path);
	if (ret == 1) {
		btrfs_release_path(&path);
		ret = btrfs_search_forward(root, &key, &path);
	}
	while (ret == 0 && *until < end) {
		u64 covers;

		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.objectid != BTRFS_EXTENT_CSUM_OBJECTID ||
		    key.type != BTRFS_EXTENT_CSUM_KEY || key.offset > *until)
			break;
		covers = (u64)(btrfs_item_size(path.nodes[0], path.slots[0]) /
			       lc->fs->csum_size) * lc->fs->sectorsize;
		if (key.offset + covers > *until)
			*until = key.offset + covers;
		ret = btrfs_next_item(root, &path);
	}
	btrfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

/*
 * The data of a logged regular extent has checksums: in the log (new
 * data) or in the committed csum tree (an extent of an earlier
 * transaction, whose checksums the kernel does not log again).
 */
static int check_logged_csums(struct log_check *lc, struct btrfs_root *log,
			      const struct btrfs_tree_iter *it, const struct tlog_file_extent *fe)
{
	u64 start, end, pos;
	int ret;

	if (fe->compression) {
		start = fe->disk_bytenr;
		end = start + fe->disk_num_bytes;
	} else {
		start = fe->disk_bytenr + fe->offset;
		end = start + fe->num_bytes;
	}
	for (pos = start; pos < end;) {
		u64 a, b = pos;

		ret = csum_covered_until(lc, log, pos, end, &a);
		if (!ret && lc->csum_root)
			ret = csum_covered_until(lc, lc->csum_root, pos, end, &b);
		if (ret)
			return ret == -ENOMEM ? ret : 0;
		if (a == pos && b == pos) {
			report_leaf(lc, TLOG_CHECK_ITEM, it->leaf->start, it->slot, &it->key,
				    "logged data %llu..%llu of inode %llu has no checksums, in "
				    "the log or the csum tree (from %llu)",
				    (unsigned long long)start, (unsigned long long)end,
				    (unsigned long long)it->key.objectid, (unsigned long long)pos);
			return 0;
		}
		pos = a > b ? a : b;
	}
	return 0;
}

/* An extent item at exactly (@bytenr, EXTENT_ITEM, @len): 1 data, 2 not data, 0 none, -errno. */
static int lookup_data_extent(struct log_check *lc, u64 bytenr, u64 len)
{
	struct btrfs_key key = { bytenr, BTRFS_EXTENT_ITEM_KEY, len };
	struct tlog_extent_item ei;
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(lc->extent_root, &key, &path);
	if (ret == 0) {
		ret = btrfs_parse_extent_item(btrfs_item_ptr(path.nodes[0], path.slots[0]),
					      btrfs_item_size(path.nodes[0], path.slots[0]), &key,
					      &ei);
		ret = ret == 0 && (ei.flags & BTRFS_EXTENT_FLAG_DATA) ? 1 : 2;
	} else if (ret > 0) {
		ret = 0;
	}
	btrfs_release_path(&path);
	return ret;
}

/*
 * Where a logged extent's data is.  The kernel's replay looks for the
 * extent item of exactly this extent and adds a reference to it; failing
 * that it inserts one (btrfs_alloc_logged_file_extent), taking the space
 * out of the block group's free space - which fails, and the mount with
 * it, when any of the space is allocated.
 */
static int check_logged_extent_space(struct log_check *lc, const struct btrfs_tree_iter *it,
				     const struct tlog_file_extent *fe)
{
	u64 bytenr = fe->disk_bytenr, len = fe->disk_num_bytes;
	const struct map_lookup *map = chunk_map_find(&lc->fs->chunks, bytenr);
	struct new_extent *ne;
	struct btrfs_key found;
	int ret;

	if (!map || !(map->type & BTRFS_BLOCK_GROUP_DATA) || len > map->logical + map->length ||
	    bytenr > map->logical + map->length - len) {
		report_leaf(lc, TLOG_CHECK_ITEM, it->leaf->start, it->slot, &it->key,
			    "logged extent %llu+%llu of inode %llu is not inside a data block "
			    "group",
			    (unsigned long long)bytenr, (unsigned long long)len,
			    (unsigned long long)it->key.objectid);
		return 0;
	}
	if (!lc->extent_root)
		return 0;
	ret = lookup_data_extent(lc, bytenr, len);
	if (ret == 2)
		report_leaf(lc, TLOG_CHECK_ITEM, it->leaf->start, it->slot, &it->key,
			    "logged extent %llu+%llu of inode %llu is a tree block's extent, "
			    "not data",
			    (unsigned long long)bytenr, (unsigned long long)len,
			    (unsigned long long)it->key.objectid);
	if (ret)
		return ret == -ENOMEM ? ret : 0;
	ret = find_overlapping_extent(lc, bytenr, len, &found);
	if (ret < 0)
		return ret == -ENOMEM ? ret : 0;
	if (ret) {
		report_leaf(lc, TLOG_CHECK_ITEM, it->leaf->start, it->slot, &it->key,
			    "logged extent %llu+%llu of inode %llu collides with the allocated "
			    "extent %llu+%llu: replay fails, the kernel would refuse to mount",
			    (unsigned long long)bytenr, (unsigned long long)len,
			    (unsigned long long)it->key.objectid,
			    (unsigned long long)found.objectid,
			    (unsigned long long)extent_item_len(lc, &found));
		return 0;
	}
	if (array_reserve(lc->extents, lc->alloc_extents, lc->nr_extents + 1))
		return -ENOMEM;
	ne = &lc->extents[lc->nr_extents++];
	*ne = (struct new_extent){ bytenr, len, lc->tree, it->key.objectid, it->leaf->start,
				   it->key };
	return 0;
}

static int check_logged_extent(struct log_check *lc, struct btrfs_root *log,
			       const struct btrfs_tree_iter *it)
{
	struct tlog_file_extent fe;
	int ret;

	if (btrfs_parse_file_extent(btrfs_item_ptr(it->leaf, it->slot),
				    btrfs_item_size(it->leaf, it->slot), it->key.offset, &fe) ||
	    fe.type == BTRFS_FILE_EXTENT_INLINE || fe.disk_bytenr == 0 || fe.disk_num_bytes == 0)
		return 0;
	ret = check_logged_extent_space(lc, it, &fe);
	if (!ret && fe.type == BTRFS_FILE_EXTENT_REG && !(lc->ino_flags & BTRFS_INODE_NODATASUM))
		ret = check_logged_csums(lc, log, it, &fe);
	return ret;
}

/* Start of a logged inode: what is known of it before its other items. */
static void enter_inode(struct log_check *lc, const struct tlog_log_cursor *cur)
{
	const struct btrfs_tree_iter *it = &cur->iter;

	lc->ino = cur->inode.ino;
	lc->ino_flags = 0;
	lc->ino_missing_reported = false;
	if (cur->kind == TLOG_LOG_INODE_ITEM &&
	    btrfs_item_size(it->leaf, it->slot) >= sizeof(struct btrfs_inode_item))
		lc->ino_flags = btrfs_inode_item_flags(
			(const struct btrfs_inode_item *)btrfs_item_ptr(it->leaf, it->slot));
}

static int check_logged_item(struct log_check *lc, struct btrfs_root *subvol,
			     struct btrfs_root *log, const struct tlog_log_cursor *cur)
{
	if (!cur->in_inode)
		return 0;
	if (cur->first_of_inode)
		enter_inode(lc, cur);
	check_inode_item_present(lc, subvol, cur);
	switch (cur->kind) {
	case TLOG_LOG_NAME:
		return check_logged_names(lc, subvol, log, &cur->iter);
	case TLOG_LOG_DIR_RANGE:
		check_dir_range(lc, &cur->iter);
		return 0;
	case TLOG_LOG_EXTENT:
		return check_logged_extent(lc, log, &cur->iter);
	default:
		return 0;
	}
}

static int check_logged_inodes(struct log_check *lc, u64 subvol_id, struct btrfs_root *log)
{
	struct tlog_log_cursor cur;
	struct btrfs_root *subvol = NULL;
	int ret = 0;

	lc->tree = subvol_id;
	lc->last_parent_ok = 0;
	if (btrfs_find_root(lc->fs, subvol_id, &subvol))
		subvol = NULL;	/* reported with its log root item */
	tlog_error_clear();
	tlog_log_for_each_item(log, &cur) {
		ret = check_logged_item(lc, subvol, log, &cur);
		if (ret)
			break;
	}
	if (!ret && cur.iter.ret < 0 && cur.iter.ret != -ENOMEM)
		check_problem_errctx(lc->c, AREA, TLOG_CHECK_TREE, subvol_id, 0,
				     "the log tree cannot be read to the end");
	else if (!ret && cur.iter.ret < 0)
		ret = cur.iter.ret;
	tlog_log_cursor_end(&cur);
	return ret;
}

static int cmp_new_extent(const void *a, const void *b)
{
	const struct new_extent *x = a, *y = b;

	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Whether [@start, @start + @len) overlaps a block of the log (sorted). */
static bool overlaps_log_block(const struct log_check *lc, u64 start, u64 len, u64 *block)
{
	size_t lo = 0, hi = lc->nr_blocks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (lc->blocks[mid] < start + len)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || lc->blocks[lo - 1] + lc->fs->nodesize <= start)
		return false;
	*block = lc->blocks[lo - 1];
	return true;
}

/*
 * New data extents may be named by several file extent items (a file
 * extent split, a clone within the log): the first replayed inserts the
 * extent item, the others add references.  Two that overlap without being
 * the same extent cannot both be inserted; one on a log block would be
 * allocated over the log being replayed.
 */
static void check_new_extents(struct log_check *lc)
{
	struct new_extent *e = lc->extents;
	u64 end = 0, block;
	size_t last = 0;

	if (lc->nr_extents)
		qsort(e, lc->nr_extents, sizeof(*e), cmp_new_extent);
	for (size_t i = 0; i < lc->nr_extents; i++) {
		if (overlaps_log_block(lc, e[i].bytenr, e[i].len, &block))
			check_problem(lc->c, AREA, TLOG_CHECK_ITEM, e[i].subvol, e[i].leaf, -1,
				      &e[i].key,
				      "logged extent %llu+%llu of inode %llu lies on the log "
				      "block %llu",
				      (unsigned long long)e[i].bytenr, (unsigned long long)e[i].len,
				      (unsigned long long)e[i].ino, (unsigned long long)block);
		if (i && e[i].bytenr < end &&
		    (e[i].bytenr != e[last].bytenr || e[i].len != e[last].len))
			check_problem(lc->c, AREA, TLOG_CHECK_ITEM, e[i].subvol, e[i].leaf, -1,
				      &e[i].key,
				      "logged extent %llu+%llu of inode %llu overlaps the "
				      "logged extent %llu+%llu of inode %llu: both cannot be "
				      "allocated, replay fails",
				      (unsigned long long)e[i].bytenr, (unsigned long long)e[i].len,
				      (unsigned long long)e[i].ino,
				      (unsigned long long)e[last].bytenr,
				      (unsigned long long)e[last].len,
				      (unsigned long long)e[last].ino);
		if (e[i].bytenr + e[i].len > end) {
			end = e[i].bytenr + e[i].len;
			last = i;
		}
	}
}

/* ---- the walk of the whole log ---- */

static int check_one_log_tree(struct tlog_fs *fs, u64 subvol, void *arg)
{
	struct log_check *lc = arg;
	struct btrfs_root *log;
	int ret;

	(void)fs;
	check_count(lc->c, &lc->c->stats->log_trees, 1);
	tlog_error_clear();
	ret = btrfs_read_log_root(lc->fs, subvol, &log);
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		check_problem_errctx(lc->c, AREA, TLOG_CHECK_TREE, subvol, 0,
				     "the log tree's root cannot be found");
		lc->log_damaged = true;
		lc->log_unreadable = true;
		return 0;
	}
	ret = walk_log_tree(lc, subvol, log, false);
	/* the items of a tree whose structure is broken are not in an order to follow */
	if (!ret && !lc->tree_damaged)
		ret = check_logged_inodes(lc, subvol, log);
	return ret;
}

static int check_log_trees(struct log_check *lc)
{
	struct tlog_log_subvols subvols;
	int ret;

	ret = walk_log_tree(lc, BTRFS_TREE_LOG_OBJECTID, lc->fs->log_root_tree, true);
	if (ret || lc->tree_damaged)
		return ret;
	tlog_error_clear();
	ret = tlog_log_list_subvols(lc->fs, TLOG_LOG_LOWEST_FIRST, &subvols);
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		check_problem_errctx(lc->c, AREA, TLOG_CHECK_TREE, BTRFS_TREE_LOG_OBJECTID,
				     lc->fs->log_root_tree->bytenr,
				     "the log root tree cannot be read");
		lc->log_damaged = true;
		lc->log_unreadable = true;
		return 0;
	}
	for (size_t i = 0; !ret && i < subvols.nr; i++)
		ret = check_one_log_tree(lc->fs, subvols.ids[i], lc);
	tlog_log_subvols_free(&subvols);
	if (ret)
		return ret;
	check_overlapping_blocks(lc);
	check_new_extents(lc);
	return 0;
}

/* ---- the dry replay ---- */

/*
 * Replay the log as the kernel's mount does, committing into @cow: a
 * failure is the reason the kernel's mount fails - or, where the kernel
 * checks less than the replay here (a logged extent over a tree block
 * is replayed by Linux 6.18, and the file then reads metadata), replays
 * the log into a damaged filesystem.  0 replayed,
 * 1 reported, or a negative errno for a failure that is not the image's.
 */
static int replay_into(struct tlog_check *c, struct tlog_bdev *cow)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true };
	struct tlog_trans *trans;
	struct tlog_fs *fs;
	const char *step = "open", *why;
	int err;

	tlog_error_clear();
	err = tlog_open_bdev(cow, &opts, &fs);
	if (err)
		goto fail;
	step = "replay";
	err = tlog_trans_start_flags(fs, TLOG_TRANS_LOG_REPLAY, &trans);
	if (!err) {
		err = btrfs_replay_log(trans, NULL);
		if (err)
			tlog_trans_abort(trans);
		else
			err = tlog_trans_commit(trans);
	}
	tlog_close(fs);
	if (!err)
		return 0;
fail:
	if (err == -ENOMEM)
		return err;
	/* a failure without a message of its own has only its errno */
	why = tlog_error_get();
	check_problem(c, AREA, TLOG_CHECK_IMAGE, BTRFS_TREE_LOG_OBJECTID, 0, -1, NULL,
		      "the log cannot be replayed%s: %s - the kernel's mount fails or leaves a damaged filesystem",
		      strcmp(step, "open") ? "" : " (the image cannot be opened for it)",
		      why && why[0] ? why : strerror(-err));
	return 1;
}

/*
 * The dry replay, then the other passes on what it left: a log that
 * replays into a damaged filesystem is as bad as one that does not.
 */
static int dry_replay(struct tlog_check *c)
{
	struct tlog_bdev *cow;
	int ret;

	ret = tlog_bdev_wrap_cow(c->bdev, &cow);
	if (ret)
		return ret;
	ret = replay_into(c, cow);
	if (ret == 0) {
		c->stats->log_replayed = true;
		if (!c->opts.log_only) {
			c->after_replay = true;
			ret = check_run_passes(c, cow);
			c->after_replay = false;
		}
	}
	tlog_bdev_close(cow);
	return ret < 0 ? ret : 0;
}

int check_log(struct tlog_check *c, struct tlog_fs *fs)
{
	struct log_check lc = { .c = c, .fs = fs, .log_gen = fs->generation + 1 };
	int ret;

	if (!fs->log_root_tree)
		return 0;
	c->stats->has_log = true;
	check_progress(c, "log", 0, 0);
	if (btrfs_find_root(fs, BTRFS_EXTENT_TREE_OBJECTID, &lc.extent_root))
		lc.extent_root = NULL;
	if (btrfs_find_root(fs, BTRFS_CSUM_TREE_OBJECTID, &lc.csum_root))
		lc.csum_root = NULL;
	ret = check_log_trees(&lc);
	free(lc.blocks);
	free(lc.seen);
	free(lc.extents);
	if (ret)
		return ret;
	/*
	 * The kernel reads every block of the log before it replays any: one
	 * it cannot read fails the mount.  One reached twice or out of key
	 * order it does not notice (its log walk does not compare a child's
	 * first key with its parent's): the mount replays the wrong items
	 * and loses what the others held.  Either way replaying it here
	 * would only walk the damage.
	 */
	if (lc.log_damaged) {
		check_problem(c, AREA, TLOG_CHECK_IMAGE, BTRFS_TREE_LOG_OBJECTID, 0, -1, NULL,
			      lc.log_unreadable ?
			      "the log cannot be replayed: a block of it cannot be read (above) "
			      "- the kernel would refuse to mount" :
			      "the log cannot be replayed correctly: its blocks are out of "
			      "order (above) - the kernel would replay the wrong items and lose "
			      "fsynced data");
		return 0;
	}
	return dry_replay(c);
}
