// SPDX-License-Identifier: GPL-2.0-only
/*
 * The extent tree against the rest of the filesystem (check-priv.h):
 *
 *  - every extent item's refs is the sum of its back references, extent
 *    items do not overlap, and each lies inside a block group of its kind;
 *  - every tree block the walk reached has an extent item of its level,
 *    and every tree block extent item names a block the walk reached;
 *  - the back references the extent tree holds are exactly those the
 *    walk's tree and data references call for (the kernel's rules below);
 *  - each block group's used bytes is the sum of its extents, and the
 *    superblock's bytes_used the sum of all extents;
 *  - the free space tree lists exactly what the extents leave free of
 *    each group (the stripes of superblock copies are not compared: they
 *    are neither extents nor space the allocator hands out).
 *
 * btrfs_check_item() does not decode extent items and keyed back
 * references; this pass does, with the one decoder of each, and reports
 * what the decoder refuses.  Block group and free space info items are
 * judged by the tree walk and only skipped here when refused.
 *
 * Why flat records: the extent tree is read once, in key order, into an
 * array of extents and one of the back references found; the walk's
 * references are turned into one array of the back references expected.
 * Both reference arrays are sorted by one comparator and merged, so the
 * memory is a few tens of bytes per reference and no leaf is kept.
 *
 * The kernel's rule for which back reference a reference makes: a block
 * whose extent item has BTRFS_BLOCK_FLAG_FULL_BACKREF references its
 * children (and, a leaf, its data) by its own address (SHARED_BLOCK_REF,
 * SHARED_DATA_REF); any other block references them by its owner's tree
 * id (TREE_BLOCK_REF, EXTENT_DATA_REF with inode and offset).  A root
 * block is referenced by its tree id, except in a relocation tree, whose
 * blocks all carry full back references (the root's own by its address).
 * A leaf shared by snapshots holds its references once.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "block-group.h"
#include "check-priv.h"
#include "errctx.h"
#include "root-tree.h"
#include "tree-checker.h"

/* At most this many differing free ranges are reported per block group. */
#define FREE_SPACE_REPORT_MAX	3
/* What is kept of the flags of an extent item the decoder refused. */
#define EXTENT_FLAGS_KEPT	(BTRFS_EXTENT_FLAG_TREE_BLOCK | BTRFS_EXTENT_FLAG_DATA | \
				 BTRFS_BLOCK_FLAG_FULL_BACKREF)

/* One extent item, in extent tree order (start ascending). */
struct ext_rec {
	u64 start;
	u64 len;
	u64 refs;
	u64 flags;
	u64 leaf;		/* where the item is */
	u32 slot;
	u8 key_type;
	u8 level;
	bool bad;		/* the decoder refused it: its references are unknown */
	bool reached;		/* a tree or file extent references it */
};

/*
 * One back reference: @id is the root (TREE_BLOCK_REF, EXTENT_DATA_REF)
 * or the parent block (SHARED_*); @objectid and @offset only for
 * EXTENT_DATA_REF.
 */
struct ref_rec {
	u64 bytenr;
	u64 id;
	u64 objectid;
	u64 offset;
	u32 count;
	u8 type;
};

/* One block group item. */
struct bg_rec {
	u64 start;
	u64 len;
	u64 flags;
	u64 used;
	u64 found_used;
	u64 leaf;
	u32 slot;
};

struct range_list {
	struct free_range *v;
	size_t nr, alloc;
};

struct xcheck {
	struct tlog_check *c;
	struct tlog_fs *fs;
	struct ext_rec *ext;
	size_t nr_ext, alloc_ext;
	struct ref_rec *found;
	size_t nr_found, alloc_found;
	struct ref_rec *expect;
	size_t nr_expect, alloc_expect;
	struct bg_rec *bg;
	size_t nr_bg, alloc_bg;
	u64 cur_sum;		/* references counted for the last extent item */
	bool extent_tree_whole;	/* the extent tree was read to its end */
};

/* ---- small helpers ---- */

static struct btrfs_key ext_key(const struct ext_rec *e)
{
	return (struct btrfs_key){ e->start, e->key_type,
				   e->key_type == BTRFS_METADATA_ITEM_KEY ? e->level : e->len };
}

static bool ext_is_tree(const struct ext_rec *e)
{
	return e->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK;
}

/* Report at the extent item @e. */
#define ext_problem(x, e, ...)								\
	do {										\
		struct btrfs_key __k = ext_key(e);					\
		check_problem((x)->c, "extent", TLOG_CHECK_ITEM, BTRFS_EXTENT_TREE_OBJECTID, \
			      (e)->leaf, (int)(e)->slot, &__k, __VA_ARGS__);		\
	} while (0)

/* The extent item starting at @bytenr, or NULL. */
static struct ext_rec *find_ext(struct xcheck *x, u64 bytenr)
{
	size_t lo = 0, hi = x->nr_ext;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->ext[mid].start < bytenr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->nr_ext && x->ext[lo].start == bytenr ? &x->ext[lo] : NULL;
}

/* The extent item covering @bytenr (not necessarily starting there), or NULL. */
static struct ext_rec *find_ext_covering(struct xcheck *x, u64 bytenr)
{
	size_t lo = 0, hi = x->nr_ext;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->ext[mid].start <= bytenr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	if (bytenr - x->ext[lo - 1].start < x->ext[lo - 1].len)
		return &x->ext[lo - 1];
	return NULL;
}

/* Index of the first extent ending after @bytenr. */
static size_t first_ext_after(const struct xcheck *x, u64 bytenr)
{
	size_t lo = 0, hi = x->nr_ext;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->ext[mid].start + x->ext[mid].len <= bytenr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct bg_rec *find_bg(struct xcheck *x, u64 bytenr)
{
	size_t lo = 0, hi = x->nr_bg;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->bg[mid].start <= bytenr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && bytenr - x->bg[lo - 1].start < x->bg[lo - 1].len)
		return &x->bg[lo - 1];
	return NULL;
}

static const char *ref_name(u8 type)
{
	switch (type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
		return "tree block ref";
	case BTRFS_SHARED_BLOCK_REF_KEY:
		return "shared block ref";
	case BTRFS_EXTENT_DATA_REF_KEY:
		return "data ref";
	case BTRFS_SHARED_DATA_REF_KEY:
		return "shared data ref";
	}
	return "ref";
}

/* "tree block ref root 5", "data ref root 5 inode 257 offset 0", ... */
static void ref_text(const struct ref_rec *r, char *buf, size_t size)
{
	if (r->type == BTRFS_EXTENT_DATA_REF_KEY)
		snprintf(buf, size, "data ref root %llu inode %llu offset %llu",
			 (unsigned long long)r->id, (unsigned long long)r->objectid,
			 (unsigned long long)r->offset);
	else
		snprintf(buf, size, "%s %s %llu", ref_name(r->type),
			 r->type == BTRFS_TREE_BLOCK_REF_KEY ? "root" : "parent",
			 (unsigned long long)r->id);
}

/* The one order of back references: extent, then what the reference names. */
static int cmp_ref(const void *a, const void *b)
{
	const struct ref_rec *x = a, *y = b;

	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->objectid != y->objectid)
		return x->objectid < y->objectid ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return 0;
}

/* Sort @v and fold equal references into one, their counts summed. */
static size_t sort_and_fold(struct ref_rec *v, size_t nr)
{
	size_t out = 0;

	if (!nr)
		return 0;
	qsort(v, nr, sizeof(*v), cmp_ref);
	for (size_t i = 1; i < nr; i++) {
		if (!cmp_ref(&v[out], &v[i])) {
			u64 sum = (u64)v[out].count + v[i].count;

			v[out].count = sum > UINT32_MAX ? UINT32_MAX : (u32)sum;
		} else {
			v[++out] = v[i];
		}
	}
	return out + 1;
}

static int push_ref(struct ref_rec **v, size_t *nr, size_t *alloc, const struct ref_rec *r)
{
	if (array_reserve(*v, *alloc, *nr + 1))
		return -ENOMEM;
	(*v)[(*nr)++] = *r;
	return 0;
}

static int push_range(struct range_list *l, u64 start, u64 len)
{
	if (!len)
		return 0;
	if (l->nr && l->v[l->nr - 1].start + l->v[l->nr - 1].len == start) {
		l->v[l->nr - 1].len += len;
		return 0;
	}
	if (array_reserve(l->v, l->alloc, l->nr + 1))
		return -ENOMEM;
	l->v[l->nr++] = (struct free_range){ start, len };
	return 0;
}

/* ---- pass 1: the extent tree ---- */

/* The last extent item's references are all read: does refs add up? */
static void finish_extent(struct xcheck *x)
{
	struct ext_rec *e;

	if (!x->nr_ext)
		return;
	e = &x->ext[x->nr_ext - 1];
	if (!e->bad && e->refs != x->cur_sum)
		ext_problem(x, e, "extent %llu+%llu has refs %llu, its back references count %llu",
			    (unsigned long long)e->start, (unsigned long long)e->len,
			    (unsigned long long)e->refs, (unsigned long long)x->cur_sum);
	x->cur_sum = 0;
}

static int add_found(struct xcheck *x, u64 bytenr, const struct tlog_extent_ref *r)
{
	struct ref_rec rec = { .bytenr = bytenr, .type = r->type, .count = r->count };

	if (r->type == BTRFS_EXTENT_OWNER_REF_KEY)
		return 0;	/* simple quota owner: names no reference, counts none */
	if (r->type == BTRFS_EXTENT_DATA_REF_KEY) {
		rec.id = r->root;
		rec.objectid = r->objectid;
		rec.offset = r->file_offset;
	} else {
		rec.id = r->offset;
	}
	x->cur_sum += r->count;
	return push_ref(&x->found, &x->nr_found, &x->alloc_found, &rec);
}

static int read_extent_item(struct xcheck *x, struct btrfs_tree_iter *it)
{
	const struct btrfs_key *key = &it->key;
	struct tlog_extent_item ei;
	struct tlog_extent_ref ref;
	struct ext_rec *e, *prev;
	u32 cur;
	int ret;

	finish_extent(x);
	check_count(x->c, &x->c->stats->extent_items, 1);
	if (array_reserve(x->ext, x->alloc_ext, x->nr_ext + 1))
		return -ENOMEM;
	prev = x->nr_ext ? &x->ext[x->nr_ext - 1] : NULL;
	e = &x->ext[x->nr_ext];
	memset(e, 0, sizeof(*e));
	e->start = key->objectid;
	e->len = key->type == BTRFS_METADATA_ITEM_KEY ? x->fs->nodesize : key->offset;
	e->leaf = it->leaf->start;
	e->slot = (u32)it->slot;
	e->key_type = key->type;
	/*
	 * btrfs_check_item() leaves extent items to this pass: a refused one
	 * is reported here, and what can be read of it kept for the checks
	 * that do not need its references.
	 */
	if (btrfs_decode_extent_item(x->fs, it->leaf, it->slot, key, &ei)) {
		check_problem_finding(x->c, "extent", BTRFS_EXTENT_TREE_OBJECTID);
		e->bad = true;
		if (btrfs_parse_extent_item(btrfs_item_ptr(it->leaf, it->slot),
					    btrfs_item_size(it->leaf, it->slot), key, &ei) == 0)
			e->flags = ei.flags & EXTENT_FLAGS_KEPT;
		else if (key->type == BTRFS_METADATA_ITEM_KEY)
			e->flags = BTRFS_EXTENT_FLAG_TREE_BLOCK;
		e->level = (u8)ei.level;
	} else {
		e->refs = ei.refs;
		e->flags = ei.flags;
		e->level = (u8)ei.level;
	}
	if (e->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK && e->flags & BTRFS_EXTENT_FLAG_DATA)
		e->flags &= ~BTRFS_EXTENT_FLAG_DATA;
	x->nr_ext++;
	if (prev && e->start < prev->start + prev->len)
		ext_problem(x, e, "extent %llu+%llu overlaps extent %llu+%llu",
			    (unsigned long long)e->start, (unsigned long long)e->len,
			    (unsigned long long)prev->start, (unsigned long long)prev->len);
	if (e->bad)
		return 0;
	btrfs_for_each_inline_ref(&ei, &cur, &ref, ret) {
		int err = add_found(x, e->start, &ref);

		if (err)
			return err;
	}
	return 0;
}

static int read_keyed_ref(struct xcheck *x, struct btrfs_tree_iter *it)
{
	struct ext_rec *e = x->nr_ext ? &x->ext[x->nr_ext - 1] : NULL;
	struct tlog_extent_ref ref;

	if (!e || e->start != it->key.objectid) {
		check_problem(x->c, "extent", TLOG_CHECK_ITEM, BTRFS_EXTENT_TREE_OBJECTID,
			      it->leaf->start, it->slot, &it->key,
			      "back reference to %llu, which has no extent item",
			      (unsigned long long)it->key.objectid);
		return 0;
	}
	/* btrfs_check_item() leaves keyed references to this pass too */
	if (btrfs_decode_keyed_ref(it->leaf, it->slot, &it->key, &ref)) {
		check_problem_finding(x->c, "extent", BTRFS_EXTENT_TREE_OBJECTID);
		e->bad = true;
		return 0;
	}
	if (e->bad)
		return 0;
	if (btrfs_is_data_ref(ref.type) == ext_is_tree(e)) {
		check_problem(x->c, "extent", TLOG_CHECK_ITEM, BTRFS_EXTENT_TREE_OBJECTID,
			      it->leaf->start, it->slot, &it->key,
			      "%s of a %s extent", ref_name(ref.type),
			      ext_is_tree(e) ? "tree block" : "data");
	}
	return add_found(x, e->start, &ref);
}

static int read_bg_item(struct xcheck *x, struct btrfs_tree_iter *it)
{
	const struct btrfs_block_group_item *bgi;
	struct bg_rec *bg;

	bgi = btrfs_fixed_item_at(it->leaf, it->slot, &it->key, NULL, 0);
	if (!bgi)
		return 0;	/* reported by the tree walk */
	if (array_reserve(x->bg, x->alloc_bg, x->nr_bg + 1))
		return -ENOMEM;
	bg = &x->bg[x->nr_bg++];
	memset(bg, 0, sizeof(*bg));
	bg->start = it->key.objectid;
	bg->len = it->key.offset;
	bg->used = btrfs_block_group_item_used(bgi);
	bg->flags = btrfs_block_group_item_flags(bgi);
	bg->leaf = it->leaf->start;
	bg->slot = (u32)it->slot;
	return 0;
}

/*
 * Read the tree @tree_id whole, @fn on every item.  *@whole says whether
 * it was read to its end: a tree partly unreadable (reported here) leaves
 * the cross-checks that need all of it undone.
 */
static int read_tree(struct xcheck *x, u64 tree_id, const char *area,
		     int (*fn)(struct xcheck *, struct btrfs_tree_iter *), bool *whole)
{
	struct btrfs_key min = { 0, 0, 0 }, max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_root *root;
	struct btrfs_tree_iter it;
	int err = 0;

	*whole = false;
	if (btrfs_read_root(x->fs, tree_id, &root)) {
		check_problem_errctx(x->c, area, TLOG_CHECK_TREE, tree_id, 0,
				     "the tree cannot be read");
		return 0;
	}
	btrfs_for_each_item(root, &it, &min, &max) {
		err = fn(x, &it);
		if (err)
			break;
	}
	if (!err && it.ret < 0) {
		if (it.ret == -ENOMEM)
			err = -ENOMEM;
		else if (!x->c->refs_incomplete)	/* else the walk reported it */
			check_problem_errctx(x->c, area, TLOG_CHECK_TREE, tree_id, 0,
					     "the tree cannot be read to its end");
	} else if (!err) {
		*whole = true;
	}
	btrfs_tree_iter_end(&it);
	return err;
}

static int extent_tree_item(struct xcheck *x, struct btrfs_tree_iter *it)
{
	switch (it->key.type) {
	case BTRFS_EXTENT_ITEM_KEY:
	case BTRFS_METADATA_ITEM_KEY:
		return read_extent_item(x, it);
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_SHARED_BLOCK_REF_KEY:
	case BTRFS_EXTENT_DATA_REF_KEY:
	case BTRFS_SHARED_DATA_REF_KEY:
		return read_keyed_ref(x, it);
	case BTRFS_BLOCK_GROUP_ITEM_KEY:
		if (btrfs_block_group_root_id(x->fs) == BTRFS_EXTENT_TREE_OBJECTID)
			return read_bg_item(x, it);
		return 0;
	}
	return 0;
}

static int bg_tree_item(struct xcheck *x, struct btrfs_tree_iter *it)
{
	if (it->key.type == BTRFS_BLOCK_GROUP_ITEM_KEY)
		return read_bg_item(x, it);
	return 0;
}

/* ---- block groups: placement of extents, used bytes ---- */

static bool bg_fits(const struct xcheck *x, const struct ext_rec *e, const struct bg_rec *bg)
{
	const struct check_block *b;

	if (!ext_is_tree(e))
		return bg->flags & BTRFS_BLOCK_GROUP_DATA;
	b = check_find_block(x->c, e->start);
	if (b && b->owner == BTRFS_CHUNK_TREE_OBJECTID)
		return bg->flags & BTRFS_BLOCK_GROUP_SYSTEM;
	return bg->flags & BTRFS_BLOCK_GROUP_METADATA;
}

/* Report at the BLOCK_GROUP_ITEM of @bg: "block group S+L <what>". */
static void bg_problem(struct xcheck *x, const struct bg_rec *bg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void bg_problem(struct xcheck *x, const struct bg_rec *bg, const char *fmt, ...)
{
	struct btrfs_key key = { bg->start, BTRFS_BLOCK_GROUP_ITEM_KEY, bg->len };
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	check_problem(x->c, "block-group", TLOG_CHECK_ITEM, btrfs_block_group_root_id(x->fs),
		      bg->leaf, (int)bg->slot, &key, "block group %llu+%llu %s",
		      (unsigned long long)bg->start, (unsigned long long)bg->len, what);
}

/* The extent @e lies in a block group of its kind; count it in the group's used bytes. */
static void place_extent(struct xcheck *x, struct ext_rec *e)
{
	struct bg_rec *bg = find_bg(x, e->start);

	if (!bg) {
		ext_problem(x, e, "extent %llu+%llu lies in no block group",
			    (unsigned long long)e->start, (unsigned long long)e->len);
		return;
	}
	if (e->len > bg->start + bg->len - e->start)
		ext_problem(x, e, "extent %llu+%llu runs past the end of block group %llu+%llu",
			    (unsigned long long)e->start, (unsigned long long)e->len,
			    (unsigned long long)bg->start, (unsigned long long)bg->len);
	if (!bg_fits(x, e, bg))
		ext_problem(x, e, "%s extent %llu+%llu lies in block group %llu of flags 0x%llx",
			    ext_is_tree(e) ? "tree block" : "data",
			    (unsigned long long)e->start, (unsigned long long)e->len,
			    (unsigned long long)bg->start, (unsigned long long)bg->flags);
	bg->found_used += e->len;
}

static void check_block_groups(struct xcheck *x)
{
	u64 total = 0, super_used = btrfs_super_block_bytes_used(&x->fs->super);

	for (size_t i = 0; i < x->nr_ext; i++)
		place_extent(x, &x->ext[i]);
	for (size_t i = 0; i < x->nr_bg; i++) {
		struct bg_rec *bg = &x->bg[i], *prev = i ? &x->bg[i - 1] : NULL;

		if (prev && bg->start < prev->start + prev->len)
			bg_problem(x, bg, "overlaps the block group %llu+%llu",
				   (unsigned long long)prev->start, (unsigned long long)prev->len);
		if (bg->used != bg->found_used)
			bg_problem(x, bg, "has used %llu, its extents take %llu",
				   (unsigned long long)bg->used,
				   (unsigned long long)bg->found_used);
		total += bg->found_used;
	}
	/* against the extents, so that one wrong group is one problem, not two */
	if (total != super_used)
		check_problem(x->c, "block-group", TLOG_CHECK_ITEM, 0, 0, -1, NULL,
			      "superblock bytes_used %llu, the extents of the block groups take "
			      "%llu", (unsigned long long)super_used, (unsigned long long)total);
}

/* ---- tree blocks vs their extent items; the expected references ---- */

static void check_tree_block_extents(struct xcheck *x)
{
	for (size_t i = 0; i < x->c->nr_blocks; i++) {
		const struct check_block *b = &x->c->blocks[i];
		struct ext_rec *e;

		if (b->log)
			continue;
		e = find_ext(x, b->bytenr);
		if (!e || !ext_is_tree(e)) {
			check_problem(x->c, "extent", TLOG_CHECK_ITEM, b->owner, b->bytenr, -1,
				      NULL, "tree block %llu owned by tree %llu has no extent item",
				      (unsigned long long)b->bytenr, (unsigned long long)b->owner);
			continue;
		}
		e->reached = true;
		if (e->len != x->fs->nodesize)
			ext_problem(x, e, "extent item of tree block %llu is %llu bytes, "
				    "nodesize %u", (unsigned long long)b->bytenr,
				    (unsigned long long)e->len, x->fs->nodesize);
		if (e->level != b->level)
			ext_problem(x, e, "extent item of tree block %llu says level %u, "
				    "the block has %u", (unsigned long long)b->bytenr, e->level,
				    b->level);
	}
	if (x->c->refs_incomplete)
		return;
	for (size_t i = 0; i < x->nr_ext; i++) {
		struct ext_rec *e = &x->ext[i];

		if (ext_is_tree(e) && !e->reached)
			ext_problem(x, e, "extent item of tree block %llu, which no tree reaches",
				    (unsigned long long)e->start);
	}
}

/* The back reference a reference from the block @parent makes, by its extent's flags. */
static bool full_backref(struct xcheck *x, u64 parent)
{
	struct ext_rec *p = find_ext(x, parent);

	return p && ext_is_tree(p) && (p->flags & BTRFS_BLOCK_FLAG_FULL_BACKREF);
}

static int expect_tree_refs(struct xcheck *x)
{
	for (size_t i = 0; i < x->c->nr_tree_refs; i++) {
		const struct check_tree_ref *t = &x->c->tree_refs[i];
		struct ref_rec r = { .bytenr = t->bytenr, .count = 1 };
		struct ext_rec *e = find_ext(x, t->bytenr);

		if (!e || !ext_is_tree(e))
			continue;	/* reported with the block */
		if (!t->parent && t->root == BTRFS_TREE_RELOC_OBJECTID) {
			r.type = BTRFS_SHARED_BLOCK_REF_KEY;
			r.id = t->bytenr;
		} else if (t->parent && full_backref(x, t->parent)) {
			r.type = BTRFS_SHARED_BLOCK_REF_KEY;
			r.id = t->parent;
		} else {
			r.type = BTRFS_TREE_BLOCK_REF_KEY;
			r.id = t->root;
		}
		if (push_ref(&x->expect, &x->nr_expect, &x->alloc_expect, &r))
			return -ENOMEM;
	}
	return 0;
}

/* A file extent pointing where no extent item of its start and length is. */
static void report_bad_data_ref(struct xcheck *x, const struct check_data_ref *d, size_t more)
{
	struct ext_rec *e = find_ext_covering(x, d->bytenr);
	char where[96] = "which has no extent item";

	if (e && ext_is_tree(e))
		snprintf(where, sizeof(where), "which is the tree block %llu",
			 (unsigned long long)e->start);
	else if (e && e->start == d->bytenr)
		snprintf(where, sizeof(where), "but the extent item there is %llu+%llu",
			 (unsigned long long)e->start, (unsigned long long)e->len);
	else if (e)
		snprintf(where, sizeof(where), "inside extent %llu+%llu",
			 (unsigned long long)e->start, (unsigned long long)e->len);
	check_problem(x->c, "extent", TLOG_CHECK_ITEM, d->root, d->leaf, -1, NULL,
		      "file extent in tree %llu inode %llu offset %llu points at %llu+%llu, %s%s",
		      (unsigned long long)d->root, (unsigned long long)d->ino,
		      (unsigned long long)d->offset, (unsigned long long)d->bytenr,
		      (unsigned long long)d->len, where,
		      more ? " (and other file extents the same)" : "");
}

static int expect_data_refs(struct xcheck *x)
{
	const struct check_data_ref *d = x->c->data_refs;
	size_t n = x->c->nr_data_refs;

	for (size_t i = 0; i < n; i++) {
		struct ref_rec r = { .bytenr = d[i].bytenr, .count = 1 };
		struct ext_rec *e = find_ext(x, d[i].bytenr);
		size_t same = 0;

		if (!e || ext_is_tree(e) || e->len != d[i].len) {
			/* one report for a run of file extents pointing at one wrong place */
			while (i + 1 < n && d[i + 1].bytenr == d[i].bytenr &&
			       d[i + 1].len == d[i].len) {
				same++;
				i++;
			}
			report_bad_data_ref(x, &d[i], same);
			continue;
		}
		e->reached = true;
		if (full_backref(x, d[i].leaf)) {
			r.type = BTRFS_SHARED_DATA_REF_KEY;
			r.id = d[i].leaf;
		} else {
			r.type = BTRFS_EXTENT_DATA_REF_KEY;
			r.id = d[i].root;
			r.objectid = d[i].ino;
			r.offset = d[i].offset;
		}
		if (push_ref(&x->expect, &x->nr_expect, &x->alloc_expect, &r))
			return -ENOMEM;
	}
	return 0;
}

/*
 * A data extent no file extent points at: one problem for the extent
 * rather than one per back reference it holds.
 */
static void check_unreached_data(struct xcheck *x)
{
	if (x->c->refs_incomplete)
		return;
	for (size_t i = 0; i < x->nr_ext; i++) {
		struct ext_rec *e = &x->ext[i];

		if (ext_is_tree(e) || e->reached || e->bad)
			continue;
		ext_problem(x, e, "data extent %llu+%llu has refs %llu but no file extent "
			    "points at it", (unsigned long long)e->start,
			    (unsigned long long)e->len, (unsigned long long)e->refs);
	}
}

/*
 * Whether the references of the extent at @bytenr are compared: its item
 * is readable and something references it (an extent nothing references
 * was reported once, as a whole).
 */
static bool refs_comparable(struct xcheck *x, u64 bytenr)
{
	struct ext_rec *e = find_ext(x, bytenr);

	return e && !e->bad && e->reached;
}

static void merge_refs(struct xcheck *x)
{
	size_t i = 0, j = 0;
	char text[128];

	while (i < x->nr_expect || j < x->nr_found) {
		const struct ref_rec *ex = i < x->nr_expect ? &x->expect[i] : NULL;
		const struct ref_rec *fo = j < x->nr_found ? &x->found[j] : NULL;
		int d = !ex ? 1 : !fo ? -1 : cmp_ref(ex, fo);
		const struct ref_rec *r = d <= 0 ? ex : fo;
		struct ext_rec *e;

		i += d <= 0;
		j += d >= 0;
		if (!refs_comparable(x, r->bytenr))
			continue;
		e = find_ext(x, r->bytenr);
		ref_text(r, text, sizeof(text));
		if (d < 0)
			ext_problem(x, e, "extent %llu+%llu lacks the %s (count %u)",
				    (unsigned long long)e->start, (unsigned long long)e->len, text,
				    r->count);
		else if (d > 0 && !x->c->refs_incomplete)
			ext_problem(x, e, "extent %llu+%llu has a %s (count %u) that nothing makes",
				    (unsigned long long)e->start, (unsigned long long)e->len, text,
				    r->count);
		else if (d == 0 && ex->count != fo->count &&
			 (ex->count > fo->count || !x->c->refs_incomplete))
			ext_problem(x, e, "extent %llu+%llu: its %s counts %u, the references "
				    "found make %u", (unsigned long long)e->start,
				    (unsigned long long)e->len, text, fo->count, ex->count);
	}
}

/* ---- the free space tree ---- */

/* Append to @out the parts of the sorted ranges @a that no range of @b covers. */
static int range_subtract(const struct free_range *a, size_t na, const struct free_range *b,
			  size_t nb, struct range_list *out)
{
	size_t j = 0;

	for (size_t i = 0; i < na; i++) {
		u64 s = a[i].start, e = a[i].start + a[i].len;

		while (j < nb && b[j].start + b[j].len <= s)
			j++;
		for (size_t k = j; k < nb && b[k].start < e && s < e; k++) {
			if (b[k].start > s && push_range(out, s, b[k].start - s))
				return -ENOMEM;
			if (b[k].start + b[k].len > s)
				s = b[k].start + b[k].len;
		}
		if (s < e && push_range(out, s, e - s))
			return -ENOMEM;
	}
	return 0;
}

/* Append to @out the intersection of the sorted ranges @a and @b. */
static int range_intersect(const struct free_range *a, size_t na, const struct free_range *b,
			   size_t nb, struct range_list *out)
{
	size_t i = 0, j = 0;

	while (i < na && j < nb) {
		u64 s = a[i].start > b[j].start ? a[i].start : b[j].start;
		u64 ae = a[i].start + a[i].len, be = b[j].start + b[j].len;
		u64 e = ae < be ? ae : be;

		if (s < e && push_range(out, s, e - s))
			return -ENOMEM;
		if (ae < be)
			i++;
		else
			j++;
	}
	return 0;
}

/* What is known of the free space tree's items of one block group. */
struct fst_group {
	struct bg_rec *bg;
	bool has_info;
	u32 extent_count;
	u32 info_flags;
	u64 info_leaf;
	u32 info_slot;
	bool saw_extents, saw_bitmaps;
	struct range_list found;	/* free as the tree lists it, merged */
	struct range_list allowed;	/* the group minus the superblock copies */
	struct range_list expect;	/* ...minus the extents */
	struct range_list tmp;
};

static void fst_problem(struct xcheck *x, const struct fst_group *g, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fst_problem(struct xcheck *x, const struct fst_group *g, const char *fmt, ...)
{
	struct btrfs_key key = { g->bg->start, BTRFS_FREE_SPACE_INFO_KEY, g->bg->len };
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	check_problem(x->c, "free-space", TLOG_CHECK_ITEM, BTRFS_FREE_SPACE_TREE_OBJECTID,
		      g->has_info ? g->info_leaf : 0, g->has_info ? (int)g->info_slot : -1,
		      &key, "block group %llu: %s", (unsigned long long)g->bg->start, what);
}

/* The group's range minus the superblock copies, as the allocator computes it. */
static int allowed_ranges(struct xcheck *x, struct fst_group *g)
{
	struct tlog_block_groups one = { .fs = x->fs };
	int err;

	g->allowed.nr = 0;
	err = btrfs_add_block_group(x->fs, &one, g->bg->start, g->bg->len, g->bg->flags);
	for (size_t i = 0; !err && i < one.v[0].nr_free; i++)
		err = push_range(&g->allowed, one.v[0].free[i].start, one.v[0].free[i].len);
	btrfs_free_block_groups(&one);
	return err;
}

static void report_range_diff(struct xcheck *x, struct fst_group *g, const struct range_list *d,
			      const char *what)
{
	u64 bytes = 0;

	for (size_t i = 0; i < d->nr; i++) {
		bytes += d->v[i].len;
		if (i < FREE_SPACE_REPORT_MAX)
			fst_problem(x, g, "%llu+%llu %s", (unsigned long long)d->v[i].start,
				    (unsigned long long)d->v[i].len, what);
	}
	if (d->nr > FREE_SPACE_REPORT_MAX)
		fst_problem(x, g, "%zu ranges (%llu bytes) in all %s", d->nr,
			    (unsigned long long)bytes, what);
}

/*
 * The group's free space items are all read: compare them with the
 * extents.  The ranges of superblock copies are compared as neither free
 * nor used: whether they are listed is the writer's choice.
 */
static int finish_fst_group(struct xcheck *x, struct fst_group *g)
{
	struct free_range ext;
	size_t first;
	int err;

	if (!g->has_info) {
		fst_problem(x, g, "has no free space info");
		return 0;
	}
	if (g->extent_count != g->found.nr)
		fst_problem(x, g, "free space info counts %u free extents, the tree lists %zu",
			    g->extent_count, g->found.nr);
	if ((g->info_flags & BTRFS_FREE_SPACE_USING_BITMAPS) ? g->saw_extents : g->saw_bitmaps)
		fst_problem(x, g, "free space info %s bitmaps, but the group has %s items",
			    (g->info_flags & BTRFS_FREE_SPACE_USING_BITMAPS) ? "uses" : "uses no",
			    g->saw_extents ? "extent" : "bitmap");
	err = allowed_ranges(x, g);
	if (err)
		return err;
	/* expected free: allowed minus the extents of the group (in start order) */
	g->expect.nr = 0;
	g->tmp.nr = 0;
	first = first_ext_after(x, g->bg->start);
	for (size_t i = first; i < x->nr_ext && x->ext[i].start < g->bg->start + g->bg->len; i++) {
		ext = (struct free_range){ x->ext[i].start, x->ext[i].len };
		err = push_range(&g->tmp, ext.start, ext.len);
		if (err)
			return err;
	}
	err = range_subtract(g->allowed.v, g->allowed.nr, g->tmp.v, g->tmp.nr, &g->expect);
	if (err)
		return err;
	/* found, restricted to the allowed ranges */
	g->tmp.nr = 0;
	err = range_intersect(g->found.v, g->found.nr, g->allowed.v, g->allowed.nr, &g->tmp);
	if (err)
		return err;
	/* listed free but used: found - expect; free but not listed: expect - found */
	g->allowed.nr = 0;
	err = range_subtract(g->tmp.v, g->tmp.nr, g->expect.v, g->expect.nr, &g->allowed);
	if (err)
		return err;
	report_range_diff(x, g, &g->allowed, "is listed free but is used");
	g->allowed.nr = 0;
	err = range_subtract(g->expect.v, g->expect.nr, g->tmp.v, g->tmp.nr, &g->allowed);
	if (err)
		return err;
	report_range_diff(x, g, &g->allowed, "is free but not listed");
	return 0;
}

/* Report at the free space item at @it. */
static void fst_item_problem(struct xcheck *x, const struct btrfs_tree_iter *it, const char *fmt,
			     ...) __attribute__((format(printf, 3, 4)));

static void fst_item_problem(struct xcheck *x, const struct btrfs_tree_iter *it, const char *fmt,
			     ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	check_problem(x->c, "free-space", TLOG_CHECK_ITEM, BTRFS_FREE_SPACE_TREE_OBJECTID,
		      it->leaf->start, it->slot, &it->key, "%s", what);
}

static bool bit_is_set(const u8 *map, u64 bit)
{
	return map[bit / 8] & (1U << (bit % 8));
}

/*
 * A FREE_SPACE_BITMAP item: bit i set means the sector at key.objectid +
 * i * sectorsize is free.  Runs of set bits are added to the group's free
 * ranges (merged with a run ending where the item starts).
 */
static int fst_bitmap(struct xcheck *x, struct fst_group *g, struct btrfs_tree_iter *it)
{
	u32 ss = x->fs->sectorsize;
	u64 bits = it->key.offset / ss;
	u32 size = btrfs_item_size(it->leaf, it->slot);
	const u8 *map = btrfs_item_ptr(it->leaf, it->slot);

	if (it->key.offset % ss || (bits + 7) / 8 != size) {
		fst_item_problem(x, it, "bitmap of %llu bytes has %u bytes of bits",
				 (unsigned long long)it->key.offset, size);
		return 0;
	}
	for (u64 b = 0, end; b < bits; b = end) {
		bool set = bit_is_set(map, b);

		/* the run of equal bits from b, whole bytes at a time where they are */
		for (end = b + 1; end < bits;) {
			if (!(end % 8) && bits - end >= 8 && map[end / 8] == (set ? 0xff : 0))
				end += 8;
			else if (bit_is_set(map, end) == set)
				end++;
			else
				break;
		}
		if (set && push_range(&g->found, it->key.objectid + b * ss, (end - b) * ss))
			return -ENOMEM;
	}
	return 0;
}

/*
 * mkfs.btrfs before 6.16.1 removes its temporary block groups, which lie
 * below the first real one, but not their free space items; the kernel
 * ignores them (newer kernels delete them at mount).  Every image such an
 * mkfs made has them: a warning, as btrfs check 6.16.1+ reports them, but
 * no problem.
 */
static bool mkfs_leftover(const struct xcheck *x, const struct btrfs_key *key)
{
	return x->nr_bg && key->objectid < x->bg[0].start &&
	       key->offset <= x->bg[0].start - key->objectid;
}

/* One item of the free space tree, of the group @g (or none that holds it). */
static int fst_item(struct xcheck *x, struct fst_group *g, struct btrfs_tree_iter *it)
{
	const struct btrfs_key *key = &it->key;
	const struct btrfs_free_space_info *info;

	if (!g && mkfs_leftover(x, key)) {
		if (key->type == BTRFS_FREE_SPACE_INFO_KEY)
			check_problem(x->c, "free-space", TLOG_CHECK_WARNING,
				      BTRFS_FREE_SPACE_TREE_OBJECTID, it->leaf->start, it->slot, key,
				      "free space info of %llu+%llu, a block group mkfs.btrfs made and removed (harmless, the kernel ignores it)",
				      (unsigned long long)key->objectid,
				      (unsigned long long)key->offset);
		return 0;
	}
	if (key->type == BTRFS_FREE_SPACE_INFO_KEY) {
		if (!g || key->objectid != g->bg->start || key->offset != g->bg->len) {
			fst_item_problem(x, it, "free space info of %llu+%llu, which is no block "
					 "group", (unsigned long long)key->objectid,
					 (unsigned long long)key->offset);
			return 0;
		}
		info = btrfs_fixed_item_at(it->leaf, it->slot, key, NULL, 0);
		if (!info)
			return 0;	/* reported by the tree walk */
		g->has_info = true;
		g->extent_count = btrfs_free_space_info_extent_count(info);
		g->info_flags = btrfs_free_space_info_flags(info);
		g->info_leaf = it->leaf->start;
		g->info_slot = (u32)it->slot;
		return 0;
	}
	if (key->type != BTRFS_FREE_SPACE_EXTENT_KEY && key->type != BTRFS_FREE_SPACE_BITMAP_KEY)
		return 0;
	if (!g || !key->offset || key->offset > g->bg->start + g->bg->len - key->objectid) {
		fst_item_problem(x, it, "free space %llu+%llu lies in no block group",
				 (unsigned long long)key->objectid,
				 (unsigned long long)key->offset);
		return 0;
	}
	if (g->found.nr) {
		struct free_range *last = &g->found.v[g->found.nr - 1];

		if (key->objectid < last->start + last->len) {
			fst_item_problem(x, it, "free space %llu+%llu overlaps the item before",
					 (unsigned long long)key->objectid,
					 (unsigned long long)key->offset);
			return 0;
		}
	}
	if (key->type == BTRFS_FREE_SPACE_EXTENT_KEY) {
		g->saw_extents = true;
		return push_range(&g->found, key->objectid, key->offset);
	}
	g->saw_bitmaps = true;
	return fst_bitmap(x, g, it);
}

static void fst_group_start(struct fst_group *g, struct bg_rec *bg)
{
	g->bg = bg;
	g->has_info = false;
	g->saw_extents = g->saw_bitmaps = false;
	g->found.nr = 0;
}

static int check_free_space_tree(struct xcheck *x)
{
	struct btrfs_key min = { 0, 0, 0 }, max = { (u64)-1, (u8)-1, (u64)-1 };
	struct fst_group g = { 0 };
	struct btrfs_tree_iter it;
	struct btrfs_root *root;
	size_t next = 0;	/* the next group not yet started */
	bool started = false;
	int err = 0;

	if (btrfs_read_root(x->fs, BTRFS_FREE_SPACE_TREE_OBJECTID, &root)) {
		check_problem_errctx(x->c, "free-space", TLOG_CHECK_TREE,
				     BTRFS_FREE_SPACE_TREE_OBJECTID, 0, "the tree cannot be read");
		return 0;
	}
	btrfs_for_each_item(root, &it, &min, &max) {
		/* finish the groups that end before this item, start the one holding it */
		while (!err && next < x->nr_bg && x->bg[next].start <= it.key.objectid) {
			if (started)
				err = finish_fst_group(x, &g);
			fst_group_start(&g, &x->bg[next++]);
			started = true;
		}
		if (err)
			break;
		err = fst_item(x, started && it.key.objectid - g.bg->start < g.bg->len ? &g : NULL,
			       &it);
		if (err)
			break;
	}
	if (!err && it.ret < 0) {
		if (it.ret == -ENOMEM)
			err = -ENOMEM;
		else
			check_problem_errctx(x->c, "free-space", TLOG_CHECK_TREE,
					     BTRFS_FREE_SPACE_TREE_OBJECTID, 0,
					     "the tree cannot be read to its end");
	}
	btrfs_tree_iter_end(&it);
	if (!err && it.ret >= 0) {
		if (started)
			err = finish_fst_group(x, &g);
		while (!err && next < x->nr_bg) {
			fst_group_start(&g, &x->bg[next++]);
			err = finish_fst_group(x, &g);
		}
	}
	free(g.found.v);
	free(g.allowed.v);
	free(g.expect.v);
	free(g.tmp.v);
	return err;
}

/* ---- the pass ---- */

static void free_xcheck(struct xcheck *x)
{
	free(x->ext);
	free(x->found);
	free(x->expect);
	free(x->bg);
}

static int cmp_bg(const void *a, const void *b)
{
	const struct bg_rec *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int check_extents(struct tlog_check *c, struct tlog_fs *fs)
{
	struct xcheck x = { .c = c, .fs = fs };
	bool bg_whole = true;
	int err;

	check_progress(c, "extent tree", 0, 0);
	err = read_tree(&x, BTRFS_EXTENT_TREE_OBJECTID, "extent", extent_tree_item,
			&x.extent_tree_whole);
	if (!err)
		finish_extent(&x);
	if (!err && btrfs_block_group_root_id(fs) != BTRFS_EXTENT_TREE_OBJECTID)
		err = read_tree(&x, btrfs_block_group_root_id(fs), "block-group", bg_tree_item,
				&bg_whole);
	if (err || !x.extent_tree_whole)
		goto out;	/* what the unread part holds is unknown: no cross-checks */
	if (x.nr_bg)
		qsort(x.bg, x.nr_bg, sizeof(*x.bg), cmp_bg);
	if (bg_whole)
		check_block_groups(&x);
	check_tree_block_extents(&x);
	err = expect_tree_refs(&x);
	if (!err)
		err = expect_data_refs(&x);
	if (err)
		goto out;
	check_unreached_data(&x);
	x.nr_found = sort_and_fold(x.found, x.nr_found);
	x.nr_expect = sort_and_fold(x.expect, x.nr_expect);
	merge_refs(&x);
	/* a free space tree not marked valid is rebuilt by the kernel, not trusted */
	if (bg_whole && (fs->compat_ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE) &&
	    (fs->compat_ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID)) {
		check_progress(c, "free space tree", 0, 0);
		err = check_free_space_tree(&x);
	}
out:
	free_xcheck(&x);
	return err;
}
