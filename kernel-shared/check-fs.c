// SPDX-License-Identifier: GPL-2.0-only
/*
 * The subvolume pass of the checker: inodes, names, file extents and
 * orphans of every live subvolume tree, the subvolume links of the root
 * tree, data checksums (coverage, and with --check-data-csum the data
 * itself), the uuid tree and the quota tree's structure.
 *
 * It runs in its own thread through its own open (@fs) while the main
 * thread walks every tree and checks the extent tree, and reads each
 * tree once, in key order, with read-ahead.  Every item is judged by the
 * strict decoders in the tree walk; here an item that does not decode is
 * skipped in silence (the walk reports it), never trusted.
 *
 * Invariants the walk relies on (key order):
 *  - all items of one objectid are contiguous and INODE_ITEM (type 1) is
 *    the first of them, so an inode's counters (names, extent bytes,
 *    directory bytes, the end of its last extent) are summed while its
 *    items go by and judged when the objectid changes;
 *  - a name is the pair "INODE_REF/EXTREF entry" <-> "DIR_INDEX + DIR_ITEM
 *    entry", which live under different objectids: both sides are kept
 *    as small flat records (dir, index or hash, inode, hash of the name)
 *    and matched by sorting and merging once the tree is done;
 *  - data extents of all trees go into one flat list, sorted once, so an
 *    extent shared by snapshots and reflinks is checked once.
 *
 * Every rule is one the kernel keeps in what it writes (and btrfs check
 * enforces); where the kernel legitimately leaves something behind after
 * a crash (orphan items of inodes already evicted, checksums of
 * preallocated ranges) nothing is said.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "check-priv.h"
#include "array.h"
#include "blockdev.h"
#include "csum.h"
#include "errctx.h"
#include "inode.h"
#include "root-tree.h"
#include "tree-checker.h"

#define ULL(x) ((unsigned long long)(x))

/* ---- records ---- */

enum name_kind { NAME_REF, NAME_DIR_ITEM, NAME_DIR_INDEX };

/*
 * One name as one side records it: an INODE_REF/EXTREF entry (ino has the
 * name (dir, index)), or a DIR_ITEM/DIR_INDEX entry (dir holds ino).
 * @hash identifies the name: btrfs_name_hash() (the DIR_ITEM key offset)
 * in the high half and a second, independent crc in the low half.
 */
struct fs_name {
	u64 dir;
	u64 index;		/* refs and DIR_INDEX; the key offset for DIR_ITEM */
	u64 ino;		/* subvolume links: the subvolume id */
	u64 hash;
	u64 tree;		/* subvolume links only */
	u64 block;
	u32 slot;
	u8 type;		/* BTRFS_FT_*: the entry's, or the inode's for refs */
	u8 kind;		/* enum name_kind */
};

/* An inode of the tree being walked: for dangling entries and orphans. */
struct fs_inode {
	u64 ino;
	u32 nlink;
	u64 block;
	u32 slot;
};

/*
 * A file extent pointing at data.  [csum_start, csum_start + csum_len)
 * must have checksums (0 length: none are required).
 */
struct fs_extent {
	u64 bytenr;
	u64 len;		/* disk_num_bytes */
	u64 csum_start;
	u64 csum_len;
	u64 root;
	u64 ino;
	u64 file_offset;
	u64 block;
	u32 slot;
};

/* A live or dead subvolume of the root tree. */
struct fs_root {
	u64 id;
	u64 dirid;
	u64 block;
	u32 slot;
	u32 refs;
	bool dead;		/* refs 0 or an orphan item: being deleted */
	bool walked;		/* its tree was read to the end */
	bool has_backref;	/* a ROOT_REF or ROOT_BACKREF names it as a child */
	u8 uuid[BTRFS_UUID_SIZE];
	u8 received_uuid[BTRFS_UUID_SIZE];
};

/* A ROOT_REF (parent -> child) or ROOT_BACKREF (child -> parent). */
struct fs_root_ref {
	u64 parent;
	u64 child;
	u64 dirid;
	u64 sequence;
	u64 hash;
	u64 block;
	u32 slot;
	bool back;
};

struct csum_range {
	u64 start;
	u64 end;
};

/* The state of the pass. */
struct fs_check {
	struct tlog_check *c;
	struct tlog_fs *fs;
	bool no_holes;
	/* something was not walked: data it references is unknown */
	bool incomplete;
	bool root_tree_partial;	/* the root tree could not be read to the end */
	bool csum_tree_partial;	/* nor the csum tree: what it lacks is unknown */

	struct fs_root *roots;
	size_t nr_roots, alloc_roots;
	u64 *orphan_roots;
	size_t nr_orphan_roots, alloc_orphan_roots;
	struct fs_root_ref *root_refs;
	size_t nr_root_refs, alloc_root_refs;
	/* DIR_ITEM / DIR_INDEX entries naming a subvolume, from all trees */
	struct fs_name *links;
	size_t nr_links, alloc_links;

	struct fs_extent *extents;
	size_t nr_extents, alloc_extents;
	size_t nr_extents_unique;	/* the first ones are sorted and unique */
	struct csum_range *csums;
	size_t nr_csums, alloc_csums;
	u64 mismatches;		/* --check-data-csum: sectors whose checksum is wrong */

	/* per tree, emptied after each */
	struct fs_name *refs;
	size_t nr_refs, alloc_refs;
	struct fs_name *items;
	size_t nr_items, alloc_items;
	struct fs_name *index;
	size_t nr_index, alloc_index;
	struct fs_inode *inodes;
	size_t nr_inodes, alloc_inodes;
	u64 *orphans;
	size_t nr_orphans, alloc_orphans;
	/* inodes with an item that did not decode: their counts are not judged */
	u64 *tainted;
	size_t nr_tainted, alloc_tainted;
};

/* What is summed for the inode whose items are going by. */
struct inode_state {
	u64 ino;
	bool active;		/* some item of @ino was seen */
	bool have_item;
	bool tainted;		/* one of its items did not decode (reported by the walk) */
	u32 mode;
	u32 nlink;
	u64 size;
	u64 nbytes;
	u64 flags;
	u64 block;		/* where the INODE_ITEM (or first item) is */
	u32 slot;
	struct btrfs_key key;
	u32 names;
	u64 dir_bytes;		/* name_len of its DIR_ITEM and DIR_INDEX entries */
	u64 dir_entries;
	u64 extent_bytes;	/* nbytes as the kernel counts them */
	u64 extent_end;		/* end of the last file extent, sector aligned */
	u64 first_gap;		/* without NO_HOLES: start of the first gap, or -1 */
	u64 nr_extents;
};

/* The item being looked at. */
struct item_pos {
	const struct extent_buffer *leaf;
	int slot;
	const struct btrfs_key *key;
};

struct tree_walk {
	struct fs_check *fc;
	struct btrfs_root *root;
	u64 tree;
	u64 root_dirid;
	struct inode_state is;
	int err;		/* -ENOMEM */
};

static u64 name_hash(const char *name, size_t len)
{
	return (btrfs_name_hash(name, len) << 32) | crc32c_raw(0x9e3779b9U, name, len);
}

#define fs_problem(fc, area, tree, block, slot, key, ...) \
	check_problem((fc)->c, area, TLOG_CHECK_ITEM, tree, block, slot, key, __VA_ARGS__)

/* ---- comparisons for qsort and bsearch ---- */

/*
 * qsort() for arrays that may be empty (and then NULL), and that are
 * often sorted already: names and entries are collected in key order, so
 * one linear look saves most sorts (40% of the pass on a large image).
 */
static void sort_array(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	const char *p = v;
	size_t i;

	for (i = 1; i < n && cmp(p + (i - 1) * size, p + i * size) <= 0; i++)
		;
	if (i < n)
		qsort(v, n, size, cmp);
}

/* bsearch() for arrays that may be empty (and then NULL). */
static void *search_array(const void *key, const void *v, size_t n, size_t size,
			  int (*cmp)(const void *, const void *))
{
	return n ? bsearch(key, v, n, size, cmp) : NULL;
}

static int cmp_u64(u64 a, u64 b)
{
	return a < b ? -1 : a > b;
}

/* Refs and DIR_INDEX entries: by (dir, index). */
static int cmp_name_index(const void *pa, const void *pb)
{
	const struct fs_name *a = pa, *b = pb;

	if (a->dir != b->dir)
		return cmp_u64(a->dir, b->dir);
	if (a->index != b->index)
		return cmp_u64(a->index, b->index);
	return cmp_u64(a->ino, b->ino);
}

/* Refs and DIR_ITEM entries: by (dir, name, inode). */
static int cmp_name_hash(const void *pa, const void *pb)
{
	const struct fs_name *a = pa, *b = pb;

	if (a->dir != b->dir)
		return cmp_u64(a->dir, b->dir);
	if (a->hash != b->hash)
		return cmp_u64(a->hash, b->hash);
	return cmp_u64(a->ino, b->ino);
}

static int cmp_inode(const void *pa, const void *pb)
{
	const struct fs_inode *a = pa, *b = pb;

	return cmp_u64(a->ino, b->ino);
}

static int cmp_u64p(const void *pa, const void *pb)
{
	return cmp_u64(*(const u64 *)pa, *(const u64 *)pb);
}

static int cmp_root(const void *pa, const void *pb)
{
	const struct fs_root *a = pa, *b = pb;

	return cmp_u64(a->id, b->id);
}

static int cmp_root_ref(const void *pa, const void *pb)
{
	const struct fs_root_ref *a = pa, *b = pb;

	if (a->parent != b->parent)
		return cmp_u64(a->parent, b->parent);
	if (a->child != b->child)
		return cmp_u64(a->child, b->child);
	return (int)a->back - (int)b->back;
}

/* Subvolume links: by (tree, child, kind). */
static int cmp_link(const void *pa, const void *pb)
{
	const struct fs_name *a = pa, *b = pb;

	if (a->tree != b->tree)
		return cmp_u64(a->tree, b->tree);
	if (a->ino != b->ino)
		return cmp_u64(a->ino, b->ino);
	return (int)a->kind - (int)b->kind;
}

static int cmp_extent_csum(const void *pa, const void *pb)
{
	const struct fs_extent *a = pa, *b = pb;

	if (a->csum_start != b->csum_start)
		return cmp_u64(a->csum_start, b->csum_start);
	return cmp_u64(a->csum_len, b->csum_len);
}

static int cmp_extent_bytenr(const void *pa, const void *pb)
{
	const struct fs_extent *a = pa, *b = pb;

	if (a->bytenr != b->bytenr)
		return cmp_u64(a->bytenr, b->bytenr);
	return cmp_u64(a->len, b->len);
}

/* Extents: the same disk range needing the same checksums is one. */
static int cmp_extent_full(const void *pa, const void *pb)
{
	const struct fs_extent *a = pa, *b = pb;
	int d = cmp_extent_bytenr(a, b);

	return d ? d : cmp_extent_csum(a, b);
}

static struct fs_root *find_root_rec(struct fs_check *fc, u64 id)
{
	struct fs_root key = { .id = id };

	return search_array(&key, fc->roots, fc->nr_roots, sizeof(key), cmp_root);
}

static const struct fs_inode *find_inode_rec(const struct fs_check *fc, u64 ino)
{
	struct fs_inode key = { .ino = ino };

	return search_array(&key, fc->inodes, fc->nr_inodes, sizeof(key), cmp_inode);
}

static bool is_subvol_id(u64 id)
{
	return id == BTRFS_FS_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

/* ---- the root tree: subvolumes, dead roots, root refs ---- */

static int add_root_item(struct fs_check *fc, const struct extent_buffer *leaf, int slot,
			 const struct btrfs_key *key)
{
	struct btrfs_root_item ri;
	struct fs_root *r;

	if (btrfs_decode_root_item(fc->fs, leaf, slot, key, &ri, NULL, 0))
		return 0;
	if (array_reserve(fc->roots, fc->alloc_roots, fc->nr_roots + 1))
		return -ENOMEM;
	r = &fc->roots[fc->nr_roots++];
	memset(r, 0, sizeof(*r));
	r->id = key->objectid;
	r->dirid = btrfs_root_item_root_dirid(&ri);
	r->refs = btrfs_root_item_refs(&ri);
	r->dead = r->refs == 0;
	r->block = leaf->start;
	r->slot = slot;
	memcpy(r->uuid, ri.uuid, BTRFS_UUID_SIZE);
	memcpy(r->received_uuid, ri.received_uuid, BTRFS_UUID_SIZE);
	return 0;
}

static int add_root_ref(struct fs_check *fc, const struct extent_buffer *leaf, int slot,
			const struct btrfs_key *key)
{
	struct tlog_root_ref rr;
	struct fs_root_ref *r;
	bool back = key->type == BTRFS_ROOT_BACKREF_KEY;

	if (btrfs_decode_root_ref(leaf, slot, key, &rr, NULL, 0))
		return 0;
	if (array_reserve(fc->root_refs, fc->alloc_root_refs, fc->nr_root_refs + 1))
		return -ENOMEM;
	r = &fc->root_refs[fc->nr_root_refs++];
	r->parent = back ? key->offset : key->objectid;
	r->child = back ? key->objectid : key->offset;
	r->dirid = rr.dirid;
	r->sequence = rr.sequence;
	r->hash = name_hash(rr.name, rr.name_len);
	r->block = leaf->start;
	r->slot = slot;
	r->back = back;
	return 0;
}

/*
 * A file extent of an inode that is no file (the free space cache in the
 * root tree, the old inode number cache): its data is referenced, and
 * its checksums, if any, are not stale.  Nothing is judged.
 */
static int add_referenced_extent(struct fs_check *fc, u64 tree, const struct extent_buffer *leaf,
				 int slot, const struct btrfs_key *key)
{
	struct tlog_file_extent fe;
	struct fs_extent *e;

	if (btrfs_parse_file_extent(btrfs_item_ptr(leaf, slot), btrfs_item_size(leaf, slot),
				    key->offset, &fe) || fe.type == BTRFS_FILE_EXTENT_INLINE ||
	    !fe.disk_bytenr)
		return 0;
	if (array_reserve(fc->extents, fc->alloc_extents, fc->nr_extents + 1))
		return -ENOMEM;
	e = &fc->extents[fc->nr_extents++];
	*e = (struct fs_extent){
		.bytenr = fe.disk_bytenr, .len = fe.disk_num_bytes, .root = tree,
		.ino = key->objectid, .file_offset = key->offset, .block = leaf->start,
		.slot = (u32)slot,
	};
	return 0;
}

/* One pass over the root tree: the subvolumes, which are dead, their refs. */
static int read_root_tree(struct fs_check *fc)
{
	struct btrfs_key min = { 0, 0, 0 };
	struct btrfs_key max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_tree_iter it;
	int err = 0;

	btrfs_for_each_item(fc->fs->tree_root, &it, &min, &max) {
		const struct btrfs_key *k = &it.key;

		if (k->type == BTRFS_ROOT_ITEM_KEY &&
		    (is_subvol_id(k->objectid) || k->objectid == BTRFS_DATA_RELOC_TREE_OBJECTID)) {
			err = add_root_item(fc, it.leaf, it.slot, k);
		} else if (k->type == BTRFS_ROOT_REF_KEY || k->type == BTRFS_ROOT_BACKREF_KEY) {
			err = add_root_ref(fc, it.leaf, it.slot, k);
		} else if (k->type == BTRFS_EXTENT_DATA_KEY) {
			err = add_referenced_extent(fc, BTRFS_ROOT_TREE_OBJECTID, it.leaf,
						    it.slot, k);
		} else if (k->objectid == BTRFS_ORPHAN_OBJECTID &&
			   k->type == BTRFS_ORPHAN_ITEM_KEY) {
			err = array_reserve(fc->orphan_roots, fc->alloc_orphan_roots,
					    fc->nr_orphan_roots + 1);
			if (!err)
				fc->orphan_roots[fc->nr_orphan_roots++] = k->offset;
		}
		if (err)
			break;
	}
	if (it.ret < 0) {
		fc->incomplete = true;
		fc->root_tree_partial = true;
	}
	btrfs_tree_iter_end(&it);
	if (err)
		return err;

	/* snapshots: one ROOT_ITEM per id, the newest (highest offset) last */
	sort_array(fc->roots, fc->nr_roots, sizeof(*fc->roots), cmp_root);
	for (size_t i = 0; i < fc->nr_orphan_roots; i++) {
		struct fs_root *r = find_root_rec(fc, fc->orphan_roots[i]);

		if (r)
			r->dead = true;
	}
	for (size_t i = 0; i < fc->nr_roots; i++)
		if (fc->roots[i].dead)
			fc->incomplete = true;
	sort_array(fc->root_refs, fc->nr_root_refs, sizeof(*fc->root_refs), cmp_root_ref);
	return 0;
}

/* ---- one subvolume tree ---- */

static int push_name(struct fs_name **v, size_t *nr, size_t *alloc, const struct fs_name *n)
{
	if (array_reserve_size(v, alloc, *nr + 1, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*nr)++] = *n;
	return 0;
}

/* Judge the inode whose items have all gone by. */
static void finish_inode(struct tree_walk *w)
{
	struct fs_check *fc = w->fc;
	struct inode_state *is = &w->is;
	u32 ftype;

	if (!is->active)
		return;
	is->active = false;
	if (is->tainted) {
		if (array_reserve(fc->tainted, fc->alloc_tainted, fc->nr_tainted + 1) == 0)
			fc->tainted[fc->nr_tainted++] = is->ino;
		else
			w->err = -ENOMEM;
		return;
	}
	if (!is->have_item) {
		fs_problem(fc, "inode", w->tree, is->block, (int)is->slot, &is->key,
			   "items of inode %llu but no INODE_ITEM", ULL(is->ino));
		return;
	}
	ftype = btrfs_mode_to_ftype(is->mode);
	if (is->names != is->nlink)
		fs_problem(fc, "inode", w->tree, is->block, (int)is->slot, &is->key,
			   "inode %llu nlink %u but %u name%s", ULL(is->ino), is->nlink,
			   is->names, is->names == 1 ? "" : "s");
	if (ftype == BTRFS_FT_DIR) {
		if (is->names > 1)
			fs_problem(fc, "dir", w->tree, is->block, (int)is->slot, &is->key,
				   "directory %llu has %u names", ULL(is->ino), is->names);
		if (is->size != is->dir_bytes)
			fs_problem(fc, "dir", w->tree, is->block, (int)is->slot, &is->key,
				   "directory %llu i_size %llu but its entries' names add up to "
				   "%llu",
				   ULL(is->ino), ULL(is->size), ULL(is->dir_bytes));
		if (is->nr_extents)
			fs_problem(fc, "file-extent", w->tree, is->block, (int)is->slot, &is->key,
				   "directory %llu has %llu file extent items", ULL(is->ino),
				   ULL(is->nr_extents));
		return;
	}
	if (is->dir_entries)
		fs_problem(fc, "dir", w->tree, is->block, (int)is->slot, &is->key,
			   "inode %llu is no directory (mode 0%o) but has %llu directory entries",
			   ULL(is->ino), is->mode, ULL(is->dir_entries));
	/*
	 * An inode with no link may be half evicted: its items go in
	 * several transactions, the INODE_ITEM (the first key) last.
	 */
	if ((ftype != BTRFS_FT_REG_FILE && ftype != BTRFS_FT_SYMLINK) || !is->nlink)
		return;
	if (is->nbytes != is->extent_bytes)
		fs_problem(fc, "inode", w->tree, is->block, (int)is->slot, &is->key,
			   "inode %llu nbytes %llu but its file extents hold %llu",
			   ULL(is->ino), ULL(is->nbytes), ULL(is->extent_bytes));
	/*
	 * Without NO_HOLES the kernel fills every gap below i_size with a
	 * hole item (btrfs check's "file extent discount").
	 */
	if (!fc->no_holes && is->size) {
		u64 gap = is->first_gap;

		if (gap == (u64)-1 && is->extent_end < is->size)
			gap = is->extent_end;
		if (gap != (u64)-1 && gap < is->size)
			fs_problem(fc, "file-extent", w->tree, is->block, (int)is->slot, &is->key,
				   "inode %llu (i_size %llu) has no file extent at %llu and the "
				   "filesystem has no NO_HOLES",
				   ULL(is->ino), ULL(is->size), ULL(gap));
	}
}

static void start_inode(struct tree_walk *w, const struct item_pos *pos)
{
	struct inode_state *is = &w->is;

	finish_inode(w);
	memset(is, 0, sizeof(*is));
	is->ino = pos->key->objectid;
	is->active = true;
	is->block = pos->leaf->start;
	is->slot = pos->slot;
	is->key = *pos->key;
	is->first_gap = (u64)-1;
}

static int do_inode_item(struct tree_walk *w, const struct item_pos *pos)
{
	const struct btrfs_inode_item *ii;
	struct inode_state *is = &w->is;
	struct fs_check *fc = w->fc;
	struct fs_inode *rec;

	is->have_item = true;
	if (array_reserve(fc->inodes, fc->alloc_inodes, fc->nr_inodes + 1))
		return -ENOMEM;
	rec = &fc->inodes[fc->nr_inodes++];
	rec->ino = is->ino;
	rec->nlink = 1;
	rec->block = pos->leaf->start;
	rec->slot = pos->slot;
	if (btrfs_decode_inode_item(fc->fs, pos->leaf, pos->slot, pos->key, &ii, NULL, 0)) {
		is->tainted = true;
		return 0;
	}
	is->mode = btrfs_inode_item_mode(ii);
	is->nlink = btrfs_inode_item_nlink(ii);
	is->size = btrfs_inode_item_size(ii);
	is->nbytes = btrfs_inode_item_nbytes(ii);
	is->flags = btrfs_inode_item_flags(ii);
	rec->nlink = is->nlink;
	return 0;
}

/* The names of an INODE_REF or INODE_EXTREF item. */
static int do_ref_item(struct tree_walk *w, const struct item_pos *pos)
{
	struct fs_check *fc = w->fc;
	struct inode_state *is = &w->is;
	u32 size = btrfs_item_size(pos->leaf, pos->slot);
	u32 cur = 0;

	while (cur < size) {
		struct tlog_ref_entry ref;
		struct fs_name n;
		int len = btrfs_ref_entry_at(pos->leaf, pos->slot, pos->key, cur, &ref, NULL, 0);

		if (len <= 0) {
			is->tainted = true;
			break;
		}
		cur += (u32)len;
		is->names++;
		/* the root directory's ".." names itself and has no entry */
		if (ref.parent == is->ino && is->ino == w->root_dirid)
			continue;
		n = (struct fs_name){
			.dir = ref.parent, .index = ref.index, .ino = is->ino,
			.hash = name_hash(ref.name, ref.name_len), .block = pos->leaf->start,
			.slot = (u32)pos->slot, .type = btrfs_mode_to_ftype(is->mode),
			.kind = NAME_REF,
		};
		if (push_name(&fc->refs, &fc->nr_refs, &fc->alloc_refs, &n))
			return -ENOMEM;
	}
	return 0;
}

/* The entries of a DIR_ITEM or DIR_INDEX item: directory @ino holds them. */
static int do_dir_item(struct tree_walk *w, const struct item_pos *pos)
{
	struct fs_check *fc = w->fc;
	struct inode_state *is = &w->is;
	bool index = pos->key->type == BTRFS_DIR_INDEX_KEY;
	u32 size = btrfs_item_size(pos->leaf, pos->slot);
	u32 cur = 0;

	while (cur < size) {
		struct tlog_dir_entry de;
		struct fs_name n;
		int len = btrfs_dir_entry_at(pos->leaf, pos->slot, pos->key, cur, &de, NULL, 0);
		int err;

		if (len <= 0) {
			is->tainted = true;
			break;
		}
		cur += (u32)len;
		is->dir_bytes += de.name_len;
		is->dir_entries++;
		n = (struct fs_name){
			.dir = is->ino, .index = pos->key->offset, .ino = de.location.objectid,
			.hash = name_hash(de.name, de.name_len), .tree = w->tree,
			.block = pos->leaf->start, .slot = (u32)pos->slot,
			.type = de.type & ~BTRFS_FT_ENCRYPTED,
			.kind = index ? NAME_DIR_INDEX : NAME_DIR_ITEM,
		};
		if (de.location.type == BTRFS_ROOT_ITEM_KEY) {
			err = push_name(&fc->links, &fc->nr_links, &fc->alloc_links, &n);
		} else if (de.location.type == BTRFS_INODE_ITEM_KEY) {
			if (index)
				err = push_name(&fc->index, &fc->nr_index, &fc->alloc_index, &n);
			else
				err = push_name(&fc->items, &fc->nr_items, &fc->alloc_items, &n);
		} else {
			fs_problem(fc, "dir", w->tree, pos->leaf->start, pos->slot, pos->key,
				   "directory %llu entry names key type %u, neither an inode nor a "
				   "subvolume",
				   ULL(is->ino), de.location.type);
			err = 0;
		}
		if (err)
			return err;
	}
	return 0;
}

static int add_extent(struct tree_walk *w, const struct item_pos *pos,
		      const struct tlog_file_extent *fe)
{
	struct fs_check *fc = w->fc;
	struct fs_extent *e;
	bool sums = fe->type == BTRFS_FILE_EXTENT_REG &&
		    !(w->is.flags & BTRFS_INODE_NODATASUM);

	if (array_reserve(fc->extents, fc->alloc_extents, fc->nr_extents + 1))
		return -ENOMEM;
	e = &fc->extents[fc->nr_extents++];
	e->bytenr = fe->disk_bytenr;
	e->len = fe->disk_num_bytes;
	/*
	 * A compressed extent is summed as it lies on disk, whole; an
	 * uncompressed one only where written: a REG item made by writing
	 * into part of a preallocated extent names the whole extent but
	 * only its part has checksums (btrfs check counts the same).
	 */
	if (!sums) {
		e->csum_start = 0;
		e->csum_len = 0;
	} else if (fe->compression != BTRFS_COMPRESS_NONE) {
		e->csum_start = fe->disk_bytenr;
		e->csum_len = fe->disk_num_bytes;
	} else {
		e->csum_start = fe->disk_bytenr + fe->offset;
		e->csum_len = fe->num_bytes;
	}
	e->root = w->tree;
	e->ino = w->is.ino;
	e->file_offset = fe->start;
	e->block = pos->leaf->start;
	e->slot = pos->slot;
	return 0;
}

static int do_file_extent(struct tree_walk *w, const struct item_pos *pos)
{
	struct fs_check *fc = w->fc;
	struct inode_state *is = &w->is;
	u32 secsz = fc->fs->sectorsize;
	struct tlog_file_extent fe;
	u64 end;

	if (btrfs_decode_file_extent(fc->fs, pos->leaf, pos->slot, pos->key, &fe)) {
		is->tainted = true;
		return 0;
	}
	is->nr_extents++;
	if (fe.start < is->extent_end)
		fs_problem(fc, "file-extent", w->tree, pos->leaf->start, pos->slot, pos->key,
			   "inode %llu file extent at %llu overlaps the one before, which ends at "
			   "%llu",
			   ULL(is->ino), ULL(fe.start), ULL(is->extent_end));
	else if (fe.start > is->extent_end && is->first_gap == (u64)-1)
		is->first_gap = is->extent_end;

	if (fe.type == BTRFS_FILE_EXTENT_INLINE) {
		if (fe.start != 0)
			fs_problem(fc, "file-extent", w->tree, pos->leaf->start, pos->slot,
				   pos->key, "inode %llu inline extent at file offset %llu, not 0",
				   ULL(is->ino), ULL(fe.start));
		is->extent_bytes += fe.ram_bytes;
		end = fe.start + ((fe.ram_bytes + secsz - 1) / secsz) * secsz;
	} else {
		if (fe.disk_bytenr)
			is->extent_bytes += fe.num_bytes;
		end = fe.start + fe.num_bytes;
		if (fe.type == BTRFS_FILE_EXTENT_PREALLOC &&
		    fe.compression != BTRFS_COMPRESS_NONE)
			fs_problem(fc, "file-extent", w->tree, pos->leaf->start, pos->slot,
				   pos->key, "inode %llu preallocated extent is compressed (%u)",
				   ULL(is->ino), fe.compression);
		if (fe.disk_bytenr && fe.compression == BTRFS_COMPRESS_NONE &&
		    (fe.offset > fe.disk_num_bytes ||
		     fe.num_bytes > fe.disk_num_bytes - fe.offset))
			fs_problem(fc, "file-extent", w->tree, pos->leaf->start, pos->slot,
				   pos->key,
				   "inode %llu extent offset %llu + %llu bytes past the %llu bytes "
				   "of extent %llu",
				   ULL(is->ino), ULL(fe.offset), ULL(fe.num_bytes),
				   ULL(fe.disk_num_bytes), ULL(fe.disk_bytenr));
		else if (fe.disk_bytenr && add_extent(w, pos, &fe))
			return -ENOMEM;
	}
	if (end > is->extent_end)
		is->extent_end = end;
	return 0;
}

/* One item of a subvolume tree, in key order. */
static int walk_item(struct tree_walk *w, const struct item_pos *pos)
{
	struct fs_check *fc = w->fc;
	const struct btrfs_key *k = pos->key;

	if (k->objectid == BTRFS_ORPHAN_OBJECTID) {
		finish_inode(w);
		if (k->type != BTRFS_ORPHAN_ITEM_KEY)
			return 0;
		if (array_reserve(fc->orphans, fc->alloc_orphans, fc->nr_orphans + 1))
			return -ENOMEM;
		fc->orphans[fc->nr_orphans++] = k->offset;
		return 0;
	}
	if (k->objectid > BTRFS_LAST_FREE_OBJECTID) {
		/* the old inode number cache and its free space: not inodes */
		finish_inode(w);
		if (k->type == BTRFS_EXTENT_DATA_KEY)
			return add_referenced_extent(fc, w->tree, pos->leaf, pos->slot, k);
		return 0;
	}
	if (k->objectid < BTRFS_FIRST_FREE_OBJECTID) {
		finish_inode(w);
		fs_problem(fc, "inode", w->tree, pos->leaf->start, pos->slot, k,
			   "item of inode %llu, below the first inode number %llu",
			   ULL(k->objectid), ULL(BTRFS_FIRST_FREE_OBJECTID));
		return 0;
	}
	if (!w->is.active || w->is.ino != k->objectid)
		start_inode(w, pos);

	switch (k->type) {
	case BTRFS_INODE_ITEM_KEY:
		return do_inode_item(w, pos);
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		return do_ref_item(w, pos);
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
		return do_dir_item(w, pos);
	case BTRFS_EXTENT_DATA_KEY:
		return do_file_extent(w, pos);
	}
	return 0;
}

/* ---- names of one tree, matched ---- */

static const char *name_kind_str(u8 kind)
{
	if (kind == NAME_DIR_INDEX)
		return "DIR_INDEX";
	return kind == NAME_DIR_ITEM ? "DIR_ITEM" : "INODE_REF";
}

static bool is_tainted(const struct fs_check *fc, u64 ino)
{
	return search_array(&ino, fc->tainted, fc->nr_tainted, sizeof(u64), cmp_u64p) != NULL;
}

static void report_entry_without_ref(struct fs_check *fc, u64 tree, const struct fs_name *e)
{
	struct btrfs_key key = { e->dir, e->kind == NAME_DIR_INDEX ? BTRFS_DIR_INDEX_KEY :
				 BTRFS_DIR_ITEM_KEY, e->index };

	if (!find_inode_rec(fc, e->ino))
		fs_problem(fc, "dir", tree, e->block, (int)e->slot, &key,
			   "directory %llu %s entry (offset %llu) names inode %llu, which does not "
			   "exist",
			   ULL(e->dir), name_kind_str(e->kind), ULL(e->index), ULL(e->ino));
	else
		fs_problem(fc, "dir", tree, e->block, (int)e->slot, &key,
			   "directory %llu %s entry (offset %llu) names inode %llu, which has no "
			   "such name",
			   ULL(e->dir), name_kind_str(e->kind), ULL(e->index), ULL(e->ino));
}

static void report_ref_without_entry(struct fs_check *fc, u64 tree, const struct fs_name *r,
				     u8 kind)
{
	struct btrfs_key key = { r->ino, BTRFS_INODE_REF_KEY, r->dir };

	fs_problem(fc, "dir", tree, r->block, (int)r->slot, &key,
		   "inode %llu name in directory %llu (index %llu) has no %s entry",
		   ULL(r->ino), ULL(r->dir), ULL(r->index), name_kind_str(kind));
}

/* The same name and file type on both sides of a matched pair. */
static void compare_pair(struct fs_check *fc, u64 tree, const struct fs_name *r,
			 const struct fs_name *e)
{
	struct btrfs_key key = { e->dir, e->kind == NAME_DIR_INDEX ? BTRFS_DIR_INDEX_KEY :
				 BTRFS_DIR_ITEM_KEY, e->index };

	if (r->ino != e->ino)
		fs_problem(fc, "dir", tree, e->block, (int)e->slot, &key,
			   "directory %llu index %llu names inode %llu, but inode %llu has that "
			   "index",
			   ULL(e->dir), ULL(e->index), ULL(e->ino), ULL(r->ino));
	else if (r->hash != e->hash)
		fs_problem(fc, "dir", tree, e->block, (int)e->slot, &key,
			   "directory %llu %s entry for inode %llu has another name than its "
			   "INODE_REF",
			   ULL(e->dir), name_kind_str(e->kind), ULL(e->ino));
	else if (r->type != e->type)
		fs_problem(fc, "dir", tree, e->block, (int)e->slot, &key,
			   "directory %llu %s entry for inode %llu has file type %u, the inode's "
			   "mode says %u",
			   ULL(e->dir), name_kind_str(e->kind), ULL(e->ino), e->type, r->type);
}

/*
 * Merge the refs (sorted by @cmp) with the entries of one kind (sorted the
 * same): every ref has its entry and every entry its ref.
 */
static void match_names(struct fs_check *fc, u64 tree, struct fs_name *refs, size_t nr_refs,
			struct fs_name *ents, size_t nr_ents, u8 kind,
			int (*cmp)(const void *, const void *), bool by_index)
{
	size_t i = 0, j = 0;

	sort_array(refs, nr_refs, sizeof(*refs), cmp);
	sort_array(ents, nr_ents, sizeof(*ents), cmp);
	while (i < nr_refs || j < nr_ents) {
		int d;

		if (i == nr_refs)
			d = 1;
		else if (j == nr_ents)
			d = -1;
		else if (by_index)
			d = refs[i].dir != ents[j].dir ? cmp_u64(refs[i].dir, ents[j].dir) :
			    cmp_u64(refs[i].index, ents[j].index);
		else
			d = cmp(&refs[i], &ents[j]);
		if (d < 0) {
			if (!is_tainted(fc, refs[i].ino) && !is_tainted(fc, refs[i].dir))
				report_ref_without_entry(fc, tree, &refs[i], kind);
			i++;
		} else if (d > 0) {
			if (!is_tainted(fc, ents[j].ino) && !is_tainted(fc, ents[j].dir))
				report_entry_without_ref(fc, tree, &ents[j]);
			j++;
		} else {
			if (!is_tainted(fc, refs[i].ino) && !is_tainted(fc, refs[i].dir))
				compare_pair(fc, tree, &refs[i], &ents[j]);
			i++;
			j++;
		}
	}
}

/* Inodes with no link have an orphan item (the kernel adds it with the last unlink). */
static void check_orphans(struct fs_check *fc, u64 tree)
{
	sort_array(fc->orphans, fc->nr_orphans, sizeof(u64), cmp_u64p);
	for (size_t i = 0; i < fc->nr_inodes; i++) {
		const struct fs_inode *in = &fc->inodes[i];
		struct btrfs_key key = { in->ino, BTRFS_INODE_ITEM_KEY, 0 };

		if (in->nlink)
			continue;
		if (!search_array(&in->ino, fc->orphans, fc->nr_orphans, sizeof(u64), cmp_u64p))
			fs_problem(fc, "inode", tree, in->block, (int)in->slot, &key,
				   "inode %llu has no link and no orphan item", ULL(in->ino));
	}
}

/*
 * Keep one record per extent and checksummed range: snapshots and
 * reflinks name the same extents again and again, and the list would
 * grow with them rather than with distinct metadata.  Done when the list
 * has doubled since the last time, so the sorting stays O(n log n).
 */
static void compact_extents(struct fs_check *fc)
{
	size_t n = 0;

	if (fc->nr_extents < 2 * fc->nr_extents_unique + 1024)
		return;
	sort_array(fc->extents, fc->nr_extents, sizeof(*fc->extents), cmp_extent_full);
	for (size_t i = 0; i < fc->nr_extents; i++)
		if (!n || cmp_extent_full(&fc->extents[n - 1], &fc->extents[i]))
			fc->extents[n++] = fc->extents[i];
	fc->nr_extents = fc->nr_extents_unique = n;
}

static void end_tree(struct fs_check *fc, u64 tree, bool complete)
{
	if (complete) {
		sort_array(fc->inodes, fc->nr_inodes, sizeof(*fc->inodes), cmp_inode);
		match_names(fc, tree, fc->refs, fc->nr_refs, fc->index, fc->nr_index,
			    NAME_DIR_INDEX, cmp_name_index, true);
		match_names(fc, tree, fc->refs, fc->nr_refs, fc->items, fc->nr_items,
			    NAME_DIR_ITEM, cmp_name_hash, false);
		check_orphans(fc, tree);
	}
	check_count(fc->c, &fc->c->stats->inodes, fc->nr_inodes);
	check_count(fc->c, &fc->c->stats->names, fc->nr_index);
	fc->nr_refs = fc->nr_items = fc->nr_index = fc->nr_inodes = fc->nr_orphans = 0;
	fc->nr_tainted = 0;
	compact_extents(fc);
}

/* Walk subvolume @r once, in key order; judge its inodes and names. */
static int check_subvol(struct fs_check *fc, struct fs_root *r)
{
	struct btrfs_key min = { 0, 0, 0 };
	struct btrfs_key max = { (u64)-1, (u8)-1, (u64)-1 };
	struct tree_walk w = { .fc = fc, .tree = r->id, .root_dirid = r->dirid };
	struct btrfs_tree_iter it;
	size_t links_before = fc->nr_links;
	int err;

	err = btrfs_find_root(fc->fs, r->id, &w.root);
	if (err) {
		/* the tree walk reports a root it cannot read */
		fc->incomplete = true;
		return err == -ENOMEM ? err : 0;
	}
	btrfs_for_each_item(w.root, &it, &min, &max) {
		struct item_pos pos = { it.leaf, it.slot, &it.key };

		err = walk_item(&w, &pos);
		if (!err)
			err = w.err;
		if (err)
			break;
	}
	/* an inode cut off by a block that cannot be read is not judged */
	if (!err && it.ret == 1)
		finish_inode(&w);
	if (!err)
		err = w.err;
	if (it.ret < 0) {
		fc->incomplete = true;
		fc->nr_links = links_before;
	}
	btrfs_tree_iter_end(&it);
	if (err)
		return err;
	r->walked = it.ret == 1;
	end_tree(fc, r->id, r->walked);
	return 0;
}

/* ---- subvolume links: ROOT_REF, ROOT_BACKREF, the entries naming them ---- */

static void check_root_backrefs(struct fs_check *fc)
{
	struct fs_root_ref *v = fc->root_refs;
	size_t n = fc->nr_root_refs;

	if (fc->root_tree_partial)
		return;
	/* sorted by (parent, child, back): a ref and its backref are neighbours */
	for (size_t i = 0; i < n; i++) {
		struct fs_root_ref *r = &v[i];
		struct fs_root_ref *o = NULL;
		struct btrfs_key key = { r->back ? r->child : r->parent,
					 r->back ? BTRFS_ROOT_BACKREF_KEY : BTRFS_ROOT_REF_KEY,
					 r->back ? r->parent : r->child };
		struct fs_root *child = find_root_rec(fc, r->child);

		if (child)
			child->has_backref = true;
		if (i + 1 < n && v[i + 1].parent == r->parent && v[i + 1].child == r->child &&
		    v[i + 1].back != r->back)
			o = &v[i + 1];
		else if (i > 0 && v[i - 1].parent == r->parent && v[i - 1].child == r->child &&
			 v[i - 1].back != r->back)
			o = &v[i - 1];
		if (!o)
			fs_problem(fc, "root", BTRFS_ROOT_TREE_OBJECTID, r->block, (int)r->slot,
				   &key,
				   "%s of subvolume %llu in %llu has no %s",
				   r->back ? "ROOT_BACKREF" : "ROOT_REF", ULL(r->child),
				   ULL(r->parent), r->back ? "ROOT_REF" : "ROOT_BACKREF");
		else if (!r->back && (o->dirid != r->dirid || o->sequence != r->sequence ||
				      o->hash != r->hash))
			fs_problem(fc, "root", BTRFS_ROOT_TREE_OBJECTID, r->block, (int)r->slot,
				   &key,
				   "ROOT_REF of subvolume %llu in %llu (dir %llu index %llu) and "
				   "its ROOT_BACKREF (dir %llu index %llu) differ",
				   ULL(r->child), ULL(r->parent), ULL(r->dirid),
				   ULL(r->sequence), ULL(o->dirid), ULL(o->sequence));
		if (!r->back && (!child || child->dead))
			fs_problem(fc, "root", BTRFS_ROOT_TREE_OBJECTID, r->block, (int)r->slot,
				   &key,
				   "ROOT_REF names subvolume %llu, which %s", ULL(r->child),
				   child ? "is being deleted" : "does not exist");
	}
}

/* The first of the links of @tree to @child of @kind (sorted by cmp_link); *@nr of them. */
static const struct fs_name *find_links(const struct fs_check *fc, u64 tree, u64 child, u8 kind,
					size_t *nr)
{
	struct fs_name key = { .tree = tree, .ino = child, .kind = kind };
	size_t lo = 0, hi = fc->nr_links, end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_link(&fc->links[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < fc->nr_links && !cmp_link(&fc->links[end], &key); end++)
		;
	*nr = end - lo;
	return *nr ? &fc->links[lo] : NULL;
}

/* The one of @nr links at @e that is where ROOT_REF @r says, or NULL. */
static const struct fs_name *link_of_ref(const struct fs_name *e, size_t nr,
					 const struct fs_root_ref *r)
{
	for (size_t i = 0; i < nr; i++)
		if (e[i].dir == r->dirid && e[i].hash == r->hash &&
		    (e[i].kind != NAME_DIR_INDEX || e[i].index == r->sequence))
			return &e[i];
	return NULL;
}

/*
 * Each ROOT_REF (parent -> child) of a walked parent has its DIR_INDEX
 * and DIR_ITEM there.  Other entries naming the child are no error: a
 * snapshot keeps the entries of a subvolume nested in its source (the
 * kernel shows an empty directory there), and the subvolume may since
 * have been moved into that very snapshot.
 */
static void check_links(struct fs_check *fc)
{
	sort_array(fc->links, fc->nr_links, sizeof(*fc->links), cmp_link);
	for (size_t i = 0; i < fc->nr_root_refs; i++) {
		const struct fs_root_ref *r = &fc->root_refs[i];
		struct fs_root *parent = find_root_rec(fc, r->parent);
		struct btrfs_key key = { r->parent, BTRFS_ROOT_REF_KEY, r->child };
		int slot = (int)r->slot;

		if (r->back || !parent || !parent->walked)
			continue;
		for (u8 kind = NAME_DIR_ITEM; kind <= NAME_DIR_INDEX; kind++) {
			size_t nr;
			const struct fs_name *e = find_links(fc, r->parent, r->child, kind, &nr);

			if (!nr)
				fs_problem(fc, "root", BTRFS_ROOT_TREE_OBJECTID, r->block, slot,
					   &key,
					   "subvolume %llu has no %s in directory %llu of %llu",
					   ULL(r->child), name_kind_str(kind), ULL(r->dirid),
					   ULL(r->parent));
			else if (!link_of_ref(e, nr, r))
				fs_problem(fc, "root", BTRFS_ROOT_TREE_OBJECTID, r->block, slot,
					   &key,
					   "ROOT_REF of subvolume %llu (dir %llu index %llu) and "
					   "its %s entry (dir %llu offset %llu) differ",
					   ULL(r->child), ULL(r->dirid), ULL(r->sequence),
					   name_kind_str(kind), ULL(e->dir), ULL(e->index));
		}
	}
	for (size_t i = 0; i < fc->nr_links; i++) {
		const struct fs_name *e = &fc->links[i];
		struct btrfs_key key = { e->dir, e->kind == NAME_DIR_INDEX ? BTRFS_DIR_INDEX_KEY :
					 BTRFS_DIR_ITEM_KEY, e->index };

		if (e->type != BTRFS_FT_DIR)
			fs_problem(fc, "dir", e->tree, e->block, (int)e->slot, &key,
				   "directory %llu entry for subvolume %llu has file type %u, not "
				   "a directory",
				   ULL(e->dir), ULL(e->ino), e->type);
	}
	/* every live subvolume is linked somewhere */
	for (size_t i = 0; i < fc->nr_roots; i++) {
		const struct fs_root *r = &fc->roots[i];
		struct btrfs_key key = { r->id, BTRFS_ROOT_ITEM_KEY, 0 };

		if (r->id >= BTRFS_FIRST_FREE_OBJECTID && r->id <= BTRFS_LAST_FREE_OBJECTID &&
		    !r->dead && !r->has_backref && !fc->root_tree_partial)
			fs_problem(fc, "root", BTRFS_ROOT_TREE_OBJECTID, r->block, (int)r->slot,
				   &key,
				   "subvolume %llu is linked in no directory (no ROOT_REF nor "
				   "ROOT_BACKREF)",
				   ULL(r->id));
	}
}

/* ---- checksums ---- */

/* The csum tree as merged ranges; overlapping items are reported. */
static int load_csums(struct fs_check *fc, struct btrfs_root *csum_root)
{
	struct btrfs_key min = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0 };
	struct btrfs_key max = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, (u64)-1 };
	struct btrfs_tree_iter it;
	u64 bytes = 0;
	int err = 0;

	btrfs_for_each_item(csum_root, &it, &min, &max) {
		struct tlog_csum_item ci;
		struct csum_range *last;

		if (btrfs_decode_csum_item(fc->fs, it.leaf, it.slot, &it.key, &ci))
			continue;
		if (ci.end <= ci.start)
			continue;
		bytes += ci.end - ci.start;
		last = fc->nr_csums ? &fc->csums[fc->nr_csums - 1] : NULL;
		if (last && ci.start < last->end) {
			fs_problem(fc, "csum", BTRFS_CSUM_TREE_OBJECTID, it.leaf->start, it.slot,
				   &it.key,
				   "checksums of [%llu, %llu) overlap the item before (to %llu)",
				   ULL(ci.start), ULL(ci.end), ULL(last->end));
			if (ci.end > last->end)
				last->end = ci.end;
			continue;
		}
		if (last && ci.start == last->end) {
			last->end = ci.end;
			continue;
		}
		if (array_reserve(fc->csums, fc->alloc_csums, fc->nr_csums + 1)) {
			err = -ENOMEM;
			break;
		}
		fc->csums[fc->nr_csums++] = (struct csum_range){ ci.start, ci.end };
	}
	if (it.ret < 0) {
		fc->incomplete = true;
		fc->csum_tree_partial = true;
	}
	btrfs_tree_iter_end(&it);
	check_count(fc->c, &fc->c->stats->csum_bytes, bytes);
	return err;
}

/* The first csum range ending after @pos, or NULL. */
static const struct csum_range *csum_after(const struct fs_check *fc, u64 pos)
{
	size_t lo = 0, hi = fc->nr_csums;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fc->csums[mid].end <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < fc->nr_csums ? &fc->csums[lo] : NULL;
}

/* Problems of one kind reported one by one; more are summed up in one. */
#define MAX_REPORTS_EACH 100

/* Every summed extent has checksums for all it covers; each range judged once. */
static void check_csum_coverage(struct fs_check *fc)
{
	u64 more = 0, more_bytes = 0;

	sort_array(fc->extents, fc->nr_extents, sizeof(*fc->extents), cmp_extent_csum);
	for (size_t i = 0; i < fc->nr_extents; i++) {
		const struct fs_extent *e = &fc->extents[i];
		const struct csum_range *r;
		struct btrfs_key key = { e->ino, BTRFS_EXTENT_DATA_KEY, e->file_offset };
		u64 pos, end, missing = 0, first = 0;

		if (!e->csum_len)
			continue;
		if (i > 0 && !cmp_extent_csum(e, &fc->extents[i - 1]))
			continue;
		pos = e->csum_start;
		end = e->csum_start + e->csum_len;
		while (pos < end) {
			r = csum_after(fc, pos);
			if (!r || r->start >= end) {
				if (!missing)
					first = pos;
				missing += end - pos;
				break;
			}
			if (r->start > pos) {
				if (!missing)
					first = pos;
				missing += r->start - pos;
			}
			pos = r->end;
		}
		if (missing && more++ >= MAX_REPORTS_EACH)
			more_bytes += missing;
		else if (missing)
			fs_problem(fc, "csum", e->root, e->block, (int)e->slot, &key,
				   "csum missing: %llu of the %llu bytes at %llu (extent %llu, "
				   "inode %llu offset %llu) have no checksum, the first at %llu",
				   ULL(missing), ULL(e->csum_len), ULL(e->csum_start),
				   ULL(e->bytenr),
				   ULL(e->ino), ULL(e->file_offset), ULL(first));
	}
	if (more > MAX_REPORTS_EACH)
		fs_problem(fc, "csum", BTRFS_CSUM_TREE_OBJECTID, 0, -1, NULL,
			   "csum missing for %llu more extents (%llu bytes)",
			   ULL(more - MAX_REPORTS_EACH), ULL(more_bytes));
}

/*
 * Checksums of data no file extent refers to.  Only when every tree that
 * can refer to data was read: a subvolume being deleted still holds its
 * extents (and their checksums) until the cleaner gets to them.
 */
static void check_stale_csums(struct fs_check *fc)
{
	size_t j = 0;
	u64 covered = 0;	/* the extents up to j reach this far */

	if (fc->incomplete || fc->fs->log_root_tree)
		return;
	sort_array(fc->extents, fc->nr_extents, sizeof(*fc->extents), cmp_extent_bytenr);
	for (size_t i = 0; i < fc->nr_csums; i++) {
		u64 pos = fc->csums[i].start, end = fc->csums[i].end;

		while (pos < end) {
			while (j < fc->nr_extents && fc->extents[j].bytenr <= pos) {
				u64 e = fc->extents[j].bytenr + fc->extents[j].len;

				if (e > covered)
					covered = e;
				j++;
			}
			if (covered > pos) {
				pos = covered;
				continue;
			}
			{
				u64 next = j < fc->nr_extents ? fc->extents[j].bytenr : end;
				struct btrfs_key key = { BTRFS_EXTENT_CSUM_OBJECTID,
							 BTRFS_EXTENT_CSUM_KEY, pos };

				if (next > end)
					next = end;
				fs_problem(fc, "csum", BTRFS_CSUM_TREE_OBJECTID, 0, -1, &key,
					   "checksums of [%llu, %llu) belong to no file extent",
					   ULL(pos), ULL(next));
				pos = next;
			}
		}
	}
}

/* The extent (sorted by bytenr) holding disk byte @pos, or NULL. */
static const struct fs_extent *extent_at(const struct fs_check *fc, u64 pos)
{
	size_t lo = 0, hi = fc->nr_extents;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fc->extents[mid].bytenr <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* extents starting at or before pos are [0, lo); the nearest may not be the longest */
	for (size_t k = lo; k > 0 && lo - k < 64; k--) {
		const struct fs_extent *e = &fc->extents[k - 1];

		if (pos < e->bytenr + e->len)
			return e;
	}
	return NULL;
}

#define VERIFY_CHUNK (1U << 20)

/*
 * Read [start, end) of data, in pieces that stay in one chunk, and compare
 * each sector with its checksum in @ci.  @buf holds VERIFY_CHUNK bytes.
 */
static void verify_range(struct fs_check *fc, const struct tlog_csum_item *ci, u8 *buf,
			 u64 block, int slot, const struct btrfs_key *ikey)
{
	struct tlog_fs *fs = fc->fs;
	u32 secsz = fs->sectorsize;
	u64 pos = ci->start;

	while (pos < ci->end) {
		const struct map_lookup *map = chunk_map_find(&fs->chunks, pos);
		u64 len = ci->end - pos, phys[TLOG_MAX_STRIPES];
		int n;

		if (len > VERIFY_CHUNK)
			len = VERIFY_CHUNK;
		if (map && pos + len > map->logical + map->length)
			len = map->logical + map->length - pos;
		if (map && map->stripe_len && (map->type & (BTRFS_BLOCK_GROUP_RAID0 |
							    BTRFS_BLOCK_GROUP_RAID10))) {
			u64 in = (pos - map->logical) % map->stripe_len;

			if (len > map->stripe_len - in)
				len = map->stripe_len - in;
		}
		len -= len % secsz;
		n = (map && len) ? btrfs_map_block(fs, pos, len, phys, TLOG_MAX_STRIPES) : -ENOENT;
		if (n <= 0 || tlog_bdev_read(fs->bdev, buf, len, phys[0])) {
			fs_problem(fc, "csum", BTRFS_CSUM_TREE_OBJECTID, block, slot, ikey,
				   "cannot read the data at %llu to verify its checksums",
				   ULL(pos));
			return;
		}
		for (u64 off = 0; off < len; off += secsz) {
			u64 sector = (pos + off - ci->start) / secsz;
			u8 sum[BTRFS_CSUM_SIZE];
			const struct fs_extent *e;

			btrfs_csum_data(fs->csum_type, buf + off, secsz, sum);
			if (!memcmp(sum, ci->csums + sector * (u64)fs->csum_size,
				    (size_t)fs->csum_size))
				continue;
			if (fc->mismatches++ >= MAX_REPORTS_EACH)
				continue;
			e = extent_at(fc, pos + off);
			if (e) {
				struct btrfs_key key = { e->ino, BTRFS_EXTENT_DATA_KEY,
							 e->file_offset };

				fs_problem(fc, "csum", e->root, e->block, (int)e->slot, &key,
					   "data checksum mismatch at %llu: sector %llu of extent "
					   "%llu, in the file extent at offset %llu of inode %llu "
					   "of tree %llu",
					   ULL(pos + off), ULL((pos + off - e->bytenr) / secsz),
					   ULL(e->bytenr), ULL(e->file_offset), ULL(e->ino),
					   ULL(e->root));
			} else {
				fs_problem(fc, "csum", BTRFS_CSUM_TREE_OBJECTID, block, slot, ikey,
					   "data checksum mismatch at %llu (no file refers to it)",
					   ULL(pos + off));
			}
		}
		check_count(fc->c, &fc->c->stats->data_bytes_verified, len);
		pos += len;
	}
}

/* --check-data-csum: every checksummed sector read once, in disk order. */
static int verify_data(struct fs_check *fc, struct btrfs_root *csum_root)
{
	struct btrfs_key min = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0 };
	struct btrfs_key max = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, (u64)-1 };
	struct btrfs_tree_iter it;
	u8 *buf = malloc(VERIFY_CHUNK);

	if (!buf)
		return -ENOMEM;
	sort_array(fc->extents, fc->nr_extents, sizeof(*fc->extents), cmp_extent_bytenr);
	btrfs_for_each_item(csum_root, &it, &min, &max) {
		struct tlog_csum_item ci;

		if (btrfs_decode_csum_item(fc->fs, it.leaf, it.slot, &it.key, &ci))
			continue;
		check_progress(fc->c, "data checksums", ci.start, 0);
		verify_range(fc, &ci, buf, it.leaf->start, it.slot, &it.key);
	}
	btrfs_tree_iter_end(&it);
	free(buf);
	if (fc->mismatches > MAX_REPORTS_EACH)
		fs_problem(fc, "csum", BTRFS_CSUM_TREE_OBJECTID, 0, -1, NULL,
			   "data checksum mismatch in %llu more sectors",
			   ULL(fc->mismatches - MAX_REPORTS_EACH));
	return 0;
}

static int check_csums(struct fs_check *fc)
{
	struct btrfs_root *csum_root;
	int err = btrfs_find_root(fc->fs, BTRFS_CSUM_TREE_OBJECTID, &csum_root);

	if (err == -ENOMEM)
		return err;
	if (err) {
		fc->incomplete = true;
		return 0;
	}
	err = load_csums(fc, csum_root);
	if (err)
		return err;
	if (!fc->csum_tree_partial)
		check_csum_coverage(fc);
	check_stale_csums(fc);
	if (fc->c->opts.check_data_csum)
		err = verify_data(fc, csum_root);
	return err;
}

/* ---- the uuid tree ---- */

static bool uuid_zero(const u8 *u)
{
	for (int i = 0; i < BTRFS_UUID_SIZE; i++)
		if (u[i])
			return false;
	return true;
}

static struct btrfs_key uuid_key(const u8 *uuid, u8 type)
{
	u64 a, b;

	memcpy(&a, uuid, 8);
	memcpy(&b, uuid + 8, 8);
	return (struct btrfs_key){ le64toh(a), type, le64toh(b) };
}

struct uuid_entry {
	u64 objectid, offset, id;
	u8 type;
};

static int cmp_uuid_entry(const void *pa, const void *pb)
{
	const struct uuid_entry *a = pa, *b = pb;

	if (a->type != b->type)
		return (int)a->type - (int)b->type;
	if (a->objectid != b->objectid)
		return cmp_u64(a->objectid, b->objectid);
	if (a->offset != b->offset)
		return cmp_u64(a->offset, b->offset);
	return cmp_u64(a->id, b->id);
}

/*
 * Each entry names a subvolume with that uuid (or received uuid), and
 * each live subvolume's uuids are in it: when the tree is current (the
 * superblock's uuid_tree_generation), else the kernel removes stale
 * entries and adds missing ones at mount.
 */
static int check_uuid_tree(struct fs_check *fc)
{
	struct btrfs_key min = { 0, 0, 0 };
	struct btrfs_key max = { (u64)-1, (u8)-1, (u64)-1 };
	struct uuid_entry *v = NULL;
	size_t nr = 0, alloc = 0;
	struct btrfs_root *uuid_root;
	struct btrfs_tree_iter it;
	bool complete;
	int err = btrfs_find_root(fc->fs, BTRFS_UUID_TREE_OBJECTID, &uuid_root);

	if (err)
		return err == -ENOMEM ? err : 0;
	/* the kernel checks and rescans a tree that is not current at mount */
	if (btrfs_super_block_uuid_tree_generation(&fc->fs->super) !=
	    btrfs_super_block_generation(&fc->fs->super))
		return 0;
	btrfs_for_each_item(uuid_root, &it, &min, &max) {
		const struct btrfs_key *k = &it.key;
		const u8 *p = btrfs_item_ptr(it.leaf, it.slot);
		u32 size = btrfs_item_size(it.leaf, it.slot);

		if (k->type != BTRFS_UUID_KEY_SUBVOL && k->type != BTRFS_UUID_KEY_RECEIVED_SUBVOL)
			continue;
		if (size % sizeof(u64)) {
			fs_problem(fc, "uuid", BTRFS_UUID_TREE_OBJECTID, it.leaf->start, it.slot, k,
				   "uuid item of %u bytes, not a list of subvolume ids", size);
			continue;
		}
		for (u32 off = 0; off < size; off += sizeof(u64)) {
			u64 id;
			struct fs_root *r;
			const u8 *want;
			struct btrfs_key rk;

			memcpy(&id, p + off, sizeof(id));
			id = le64toh(id);
			r = find_root_rec(fc, id);
			if (!r && fc->root_tree_partial)
				continue;
			if (!r) {
				fs_problem(fc, "uuid", BTRFS_UUID_TREE_OBJECTID, it.leaf->start,
					   it.slot, k,
					   "uuid entry names subvolume %llu, which does not exist",
					   ULL(id));
				continue;
			}
			want = k->type == BTRFS_UUID_KEY_SUBVOL ? r->uuid : r->received_uuid;
			rk = uuid_key(want, k->type);
			if (!r->dead && (rk.objectid != k->objectid || rk.offset != k->offset))
				fs_problem(fc, "uuid", BTRFS_UUID_TREE_OBJECTID, it.leaf->start,
					   it.slot, k,
					   "uuid entry names subvolume %llu, whose %s differs",
					   ULL(id), k->type == BTRFS_UUID_KEY_SUBVOL ? "uuid" :
					   "received uuid");
			if (array_reserve(v, alloc, nr + 1)) {
				err = -ENOMEM;
				break;
			}
			v[nr++] = (struct uuid_entry){ k->objectid, k->offset, id, k->type };
		}
		if (err)
			break;
	}
	complete = it.ret == 1;
	btrfs_tree_iter_end(&it);
	if (err || !complete || fc->root_tree_partial) {
		free(v);
		return err;
	}
	sort_array(v, nr, sizeof(*v), cmp_uuid_entry);
	for (size_t i = 0; i < fc->nr_roots; i++) {
		const struct fs_root *r = &fc->roots[i];
		struct btrfs_key rkey = { r->id, BTRFS_ROOT_ITEM_KEY, 0 };
		int slot = (int)r->slot;

		if (r->dead || r->id < BTRFS_FIRST_FREE_OBJECTID ||
		    r->id > BTRFS_LAST_FREE_OBJECTID)
			continue;
		for (int t = 0; t < 2; t++) {
			const u8 *u = t ? r->received_uuid : r->uuid;
			u8 type = t ? BTRFS_UUID_KEY_RECEIVED_SUBVOL : BTRFS_UUID_KEY_SUBVOL;
			struct btrfs_key k = uuid_key(u, type);
			struct uuid_entry key = { k.objectid, k.offset, r->id, type };

			if (uuid_zero(u))
				continue;
			if (!search_array(&key, v, nr, sizeof(key), cmp_uuid_entry))
				fs_problem(fc, "uuid", BTRFS_ROOT_TREE_OBJECTID, r->block, slot,
					   &rkey, "subvolume %llu's %s is not in the uuid tree",
					   ULL(r->id), t ? "received uuid" : "uuid");
		}
	}
	free(v);
	return 0;
}

/* ---- the quota tree ---- */

static int push_u64(u64 **v, size_t *nr, size_t *alloc, u64 x)
{
	if (array_reserve_size(v, alloc, *nr + 1, sizeof(u64)))
		return -ENOMEM;
	(*v)[(*nr)++] = x;
	return 0;
}

/*
 * The status item, and each live subvolume's level-0 qgroup whole: INFO
 * and LIMIT are added and removed together.
 */
static int check_quota_tree(struct fs_check *fc)
{
	struct btrfs_key min = { 0, 0, 0 };
	struct btrfs_key max = { 0, (u8)-1, (u64)-1 };
	struct btrfs_root *qroot;
	struct btrfs_tree_iter it;
	u64 *info = NULL, *limit = NULL;
	size_t nr_info = 0, alloc_info = 0, nr_limit = 0, alloc_limit = 0;
	bool status = false, complete;
	int err = btrfs_find_root(fc->fs, BTRFS_QUOTA_TREE_OBJECTID, &qroot);

	if (err)
		return err == -ENOMEM ? err : 0;
	err = 0;
	btrfs_for_each_item(qroot, &it, &min, &max) {
		const struct btrfs_key *k = &it.key;

		if (k->type == BTRFS_QGROUP_STATUS_KEY)
			status = true;
		else if (k->type == BTRFS_QGROUP_INFO_KEY && !(k->offset >> 48))
			err = push_u64(&info, &nr_info, &alloc_info, k->offset);
		else if (k->type == BTRFS_QGROUP_LIMIT_KEY && !(k->offset >> 48))
			err = push_u64(&limit, &nr_limit, &alloc_limit, k->offset);
		if (err)
			break;
	}
	complete = it.ret == 1;
	btrfs_tree_iter_end(&it);
	if (!err && complete) {
		struct btrfs_key skey = { 0, BTRFS_QGROUP_STATUS_KEY, 0 };

		if (!status)
			fs_problem(fc, "qgroup", BTRFS_QUOTA_TREE_OBJECTID, 0, -1, &skey,
				   "the quota tree has no status item");
		for (size_t i = 0; i < fc->nr_roots; i++) {
			const struct fs_root *r = &fc->roots[i];
			struct btrfs_key rkey = { r->id, BTRFS_ROOT_ITEM_KEY, 0 };
			bool has_info, has_limit;

			if (r->dead || !is_subvol_id(r->id))
				continue;
			/* info and limit are sorted: the tree is in key order */
			has_info = search_array(&r->id, info, nr_info, sizeof(u64), cmp_u64p);
			has_limit = search_array(&r->id, limit, nr_limit, sizeof(u64), cmp_u64p);
			/*
			 * Older kernels let a subvolume's qgroup be destroyed
			 * while it lives: only half of one is wrong.
			 */
			if (has_info != has_limit)
				fs_problem(fc, "qgroup", BTRFS_ROOT_TREE_OBJECTID, r->block,
					   (int)r->slot, &rkey,
					   "subvolume %llu has no qgroup 0/%llu %s "
					   "item", ULL(r->id),
					   ULL(r->id), has_info ? "LIMIT" : "INFO");
		}
	}
	free(info);
	free(limit);
	return err;
}

/* ---- the pass ---- */

static void fs_check_release(struct fs_check *fc)
{
	free(fc->roots);
	free(fc->orphan_roots);
	free(fc->root_refs);
	free(fc->links);
	free(fc->extents);
	free(fc->csums);
	free(fc->refs);
	free(fc->items);
	free(fc->index);
	free(fc->inodes);
	free(fc->orphans);
	free(fc->tainted);
}

static int run_fs_checks(struct fs_check *fc)
{
	size_t done = 0;
	int err = read_root_tree(fc);

	if (err)
		return err;
	for (size_t i = 0; i < fc->nr_roots; i++) {
		struct fs_root *r = &fc->roots[i];

		if (r->dead)
			continue;
		check_progress(fc->c, "subvolumes", done++, fc->nr_roots);
		err = check_subvol(fc, r);
		if (err)
			return err;
	}
	check_root_backrefs(fc);
	check_links(fc);
	err = check_csums(fc);
	if (!err)
		err = check_uuid_tree(fc);
	if (!err)
		err = check_quota_tree(fc);
	return err;
}

int check_fs_trees(struct tlog_check *c, struct tlog_fs *fs)
{
	struct fs_check fc = {
		.c = c,
		.fs = fs,
		.no_holes = fs->incompat & BTRFS_FEATURE_INCOMPAT_NO_HOLES,
	};
	int err = run_fs_checks(&fc);

	fs_check_release(&fc);
	return err;
}
