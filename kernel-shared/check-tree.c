// SPDX-License-Identifier: GPL-2.0-only
/*
 * One walk of every tree, every distinct block read once.
 *
 * Invariants of the walk:
 *  - a block is entered at most once, however many parents point at it
 *    (snapshots share subtrees; a damaged pointer may make a cycle): a set
 *    of the addresses entered decides, so the walk ends on any image;
 *  - every pointer is recorded, entered or not: a block shared by two
 *    parents is one block with two references, which is what the extent
 *    tree must count;
 *  - a block that cannot be read is a problem at its parent's pointer,
 *    and what hangs below it is not known: the record is then incomplete
 *    (check-extent.c does not call an extent's references "extra" then).
 *
 * Each block is judged as read_tree_block() judges every read (checksum,
 * fsid, bytenr, layout, the level and generation its parent states), then
 * here for what needs its place in the tree: keys inside the range its
 * parent gives it and increasing across leaves, the owner a block of its
 * tree may have, no generation past the superblock's, no empty block
 * below a root; and a leaf's items each through the decoder of its type.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "check-priv.h"
#include "array.h"
#include "errctx.h"
#include "print-tree.h"
#include "tree-checker.h"

/* Open addressing set of block addresses; 0 marks an empty slot (no block is at 0). */
struct seen_set {
	u64 *slots;
	size_t size;		/* a power of two */
	size_t nr;
};

static size_t seen_hash(u64 bytenr, size_t size)
{
	return (size_t)((bytenr >> 12) * 0x9E3779B97F4A7C15ULL) & (size - 1);
}

static int seen_grow(struct seen_set *s)
{
	size_t size = s->size ? s->size * 2 : 4096;
	u64 *slots = calloc(size, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->size; i++) {
		size_t h;

		if (!s->slots[i])
			continue;
		for (h = seen_hash(s->slots[i], size); slots[h]; h = (h + 1) & (size - 1))
			;
		slots[h] = s->slots[i];
	}
	free(s->slots);
	s->slots = slots;
	s->size = size;
	return 0;
}

/* Add @bytenr: 1 when it was there already, 0 when added, -ENOMEM. */
static int seen_add(struct seen_set *s, u64 bytenr)
{
	size_t h;

	if ((s->nr + 1) * 2 > s->size && seen_grow(s))
		return -ENOMEM;
	for (h = seen_hash(bytenr, s->size); s->slots[h]; h = (h + 1) & (s->size - 1))
		if (s->slots[h] == bytenr)
			return 1;
	s->slots[h] = bytenr;
	s->nr++;
	return 0;
}

struct tree_walk {
	struct tlog_check *c;
	struct tlog_fs *fs;
	struct seen_set seen;
	u64 tree;		/* the tree being walked */
	struct btrfs_key last;	/* the last leaf key of this tree */
	bool have_last;
	u64 items;
	u64 blocks_total;	/* estimate, for progress */
};

/*
 * The owners a block of @tree may have, as the kernel's tree-checker
 * allows them: a subvolume tree (5, or 256 up to the first qgroup level
 * above 0) shares blocks with its snapshots, so any subvolume may own
 * them; a relocation tree is a snapshot of one, so it takes theirs and
 * its own; every other tree owns its blocks alone.
 */
static bool is_fstree(u64 id)
{
	return id == BTRFS_FS_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id < (1ULL << 48));
}

static bool owner_fits_tree(u64 owner, u64 tree)
{
	if (tree == BTRFS_TREE_RELOC_OBJECTID)
		return owner == tree || is_fstree(owner);
	if (is_fstree(tree))
		return is_fstree(owner);
	return owner == tree;
}

static int record_tree_ref(struct tlog_check *c, u64 bytenr, u64 parent, u64 root, int level)
{
	if (array_reserve(c->tree_refs, c->alloc_tree_refs, c->nr_tree_refs + 1))
		return -ENOMEM;
	c->tree_refs[c->nr_tree_refs++] = (struct check_tree_ref){
		.bytenr = bytenr, .parent = parent, .root = root, .level = (u8)level,
	};
	return 0;
}

static int record_block(struct tlog_check *c, const struct extent_buffer *eb)
{
	const struct btrfs_header *h = eb_header(eb);

	if (array_reserve(c->blocks, c->alloc_blocks, c->nr_blocks + 1))
		return -ENOMEM;
	c->blocks[c->nr_blocks++] = (struct check_block){
		.bytenr = eb->start, .owner = btrfs_header_owner(h),
		.generation = btrfs_header_generation(h), .level = btrfs_header_level(h),
	};
	return 0;
}

/* A file extent item that points at data: one reference to its extent. */
static int record_data_ref(struct tree_walk *w, const struct extent_buffer *leaf, int slot,
			   const struct btrfs_key *key)
{
	struct tlog_check *c = w->c;
	struct tlog_file_extent fe;

	if (btrfs_parse_file_extent(btrfs_item_ptr(leaf, slot), btrfs_item_size(leaf, slot),
				    key->offset, &fe))
		return 0;
	if (fe.type == BTRFS_FILE_EXTENT_INLINE || fe.disk_bytenr == 0)
		return 0;
	if (array_reserve(c->data_refs, c->alloc_data_refs, c->nr_data_refs + 1))
		return -ENOMEM;
	c->data_refs[c->nr_data_refs++] = (struct check_data_ref){
		.bytenr = fe.disk_bytenr, .len = fe.disk_num_bytes, .leaf = leaf->start,
		.root = btrfs_header_owner(eb_header(leaf)), .ino = key->objectid,
		.offset = key->offset - fe.offset,
	};
	return 0;
}

/*
 * A file extent refused only for overlapping the one before it still
 * holds its reference (the kernel would read it): recorded, so the one
 * problem is not followed by "no file extent points at" its extent.
 */
static bool refers_despite_finding(struct tree_walk *w, const struct extent_buffer *eb, int slot,
				   const struct btrfs_key *key)
{
	struct tlog_file_extent fe;

	return key->type == BTRFS_EXTENT_DATA_KEY &&
	       btrfs_decode_file_extent(w->fs, eb, slot, key, &fe) == 0;
}

static void key_problem(struct tree_walk *w, const struct extent_buffer *eb, int slot,
			const struct btrfs_key *key, const char *what)
{
	check_problem(w->c, "tree", TLOG_CHECK_ITEM, w->tree, eb->start, slot, key, "%s", what);
}

/*
 * The key at @slot lies in [lo, hi) and, the first one, equals the key its
 * parent gives the block (which is how a search finds it).
 */
static bool key_in_range(struct tree_walk *w, const struct extent_buffer *eb, int slot,
			 const struct btrfs_key *key, const struct btrfs_key *lo,
			 const struct btrfs_key *hi)
{
	if (slot == 0 && lo && btrfs_comp_cpu_keys(key, lo) != 0) {
		key_problem(w, eb, slot, key, "first key differs from the key in the parent node");
		return false;
	}
	if ((lo && btrfs_comp_cpu_keys(key, lo) < 0) || (hi && btrfs_comp_cpu_keys(key, hi) >= 0)) {
		key_problem(w, eb, slot, key, "key outside the range of its parent's pointer");
		return false;
	}
	return true;
}

static int walk_leaf(struct tree_walk *w, const struct extent_buffer *eb,
		     const struct btrfs_key *lo, const struct btrfs_key *hi)
{
	u32 n = btrfs_header_nritems_eb(eb);
	struct btrfs_key key, prev;
	bool bad;
	int err;

	for (u32 i = 0; i < n; i++) {
		btrfs_item_key_to_cpu(eb, &key, i);
		key_in_range(w, eb, i, &key, lo, hi);
		if (w->have_last && btrfs_comp_cpu_keys(&w->last, &key) >= 0)
			key_problem(w, eb, i, &key, "key not after the last key of the previous leaf");
		w->last = key;
		w->have_last = true;
		w->items++;
		bad = btrfs_check_item(w->fs, eb, i, &key, i ? &prev : NULL) != 0;
		if (bad)
			check_problem_finding(w->c, "tree", w->tree);
		if (key.type == BTRFS_EXTENT_DATA_KEY &&
		    (!bad || refers_despite_finding(w, eb, i, &key))) {
			err = record_data_ref(w, eb, i, &key);
			if (err)
				return err;
		}
		prev = key;
	}
	return 0;
}

static int walk_block(struct tree_walk *w, u64 bytenr, int level, u64 generation,
		      const struct btrfs_key *lo, const struct btrfs_key *hi,
		      u64 parent, int parent_slot);

static int walk_node(struct tree_walk *w, struct extent_buffer *eb,
		     const struct btrfs_key *lo, const struct btrfs_key *hi)
{
	u32 n = btrfs_header_nritems_eb(eb);
	int level = btrfs_header_level_eb(eb);
	u64 owner = btrfs_header_owner(eb_header(eb));
	struct btrfs_key key, next;
	int err;

	btrfs_prefetch_children(w->fs, eb, 0, BTRFS_PREFETCH_ALL, NULL, true);
	for (u32 i = 0; i < n; i++) {
		u64 child = btrfs_node_blockptr(eb, i);
		bool last = i + 1 == n;

		btrfs_node_key_to_cpu(eb, &key, i);
		if (!key_in_range(w, eb, i, &key, lo, hi))
			continue;
		if (!last)
			btrfs_node_key_to_cpu(eb, &next, i + 1);
		/* read_tree_block() takes 0 for "not known"; no written block has it */
		if (btrfs_node_ptr_generation(eb, i) == 0)
			key_problem(w, eb, i, &key, "pointer generation 0");
		err = record_tree_ref(w->c, child, eb->start, owner, level - 1);
		if (!err)
			err = walk_block(w, child, level - 1, btrfs_node_ptr_generation(eb, i),
					 &key, last ? hi : &next, eb->start, i);
		if (err)
			return err;
	}
	return 0;
}

/* Header rules that need the block's place: owner, generation, emptiness. */
static void check_header(struct tree_walk *w, const struct extent_buffer *eb, bool is_root)
{
	const struct btrfs_header *h = eb_header(eb);
	u64 owner = btrfs_header_owner(h);

	if (!owner_fits_tree(owner, w->tree))
		check_problem(w->c, "tree", TLOG_CHECK_ITEM, w->tree, eb->start, -1, NULL,
			      "block owned by tree %llu in tree %llu", (unsigned long long)owner,
			      (unsigned long long)w->tree);
	if (btrfs_header_generation(h) > w->fs->generation)
		check_problem(w->c, "tree", TLOG_CHECK_ITEM, w->tree, eb->start, -1, NULL,
			      "block generation %llu is past the superblock's %llu",
			      (unsigned long long)btrfs_header_generation(h),
			      (unsigned long long)w->fs->generation);
	if (btrfs_header_nritems(h) == 0 && (!is_root || btrfs_header_level(h) > 0))
		check_problem(w->c, "tree", TLOG_CHECK_ITEM, w->tree, eb->start, -1, NULL,
			      "empty %s below the root", btrfs_header_level(h) ? "node" : "leaf");
}

static void unreadable_block(struct tree_walk *w, u64 bytenr, int level, u64 parent,
			     int parent_slot)
{
	const char *why = tlog_error_get();

	w->c->refs_incomplete = true;
	check_problem(w->c, "tree", TLOG_CHECK_TREE, w->tree, parent, parent ? parent_slot : -1,
		      NULL, "cannot read block %llu (level %d): %s", (unsigned long long)bytenr,
		      level, why && *why ? why : "read failed");
}

/*
 * A block entered already (shared with a snapshot, or pointed at twice by
 * damage) is not walked again, but this pointer to it must hold as well
 * as the first: the kernel follows it with its own key, level and
 * generation, and a search through it misses the block's items when its
 * keys are not in the range the pointer gives.
 */
static int check_shared_pointer(struct tree_walk *w, u64 bytenr, int level, u64 generation,
				const struct btrfs_key *lo, const struct btrfs_key *hi,
				u64 parent, int parent_slot)
{
	struct extent_buffer *eb;
	struct btrfs_key first, last;
	u32 n;

	if (!parent)
		return 0;	/* a root shared by two root items: the extent counts say it */
	if (read_tree_block(w->fs, bytenr, level, generation, &eb)) {
		/* the block itself was walked: only this pointer is wrong */
		const char *why = tlog_error_get();

		check_problem(w->c, "tree", TLOG_CHECK_ITEM, w->tree, parent, parent_slot, lo,
			      "pointer to shared block %llu disagrees with it: %s",
			      (unsigned long long)bytenr, why && *why ? why : "read failed");
		return 0;
	}
	n = btrfs_header_nritems_eb(eb);
	if (n) {
		if (level) {
			btrfs_node_key_to_cpu(eb, &first, 0);
			btrfs_node_key_to_cpu(eb, &last, n - 1);
		} else {
			btrfs_item_key_to_cpu(eb, &first, 0);
			btrfs_item_key_to_cpu(eb, &last, n - 1);
		}
		if ((lo && btrfs_comp_cpu_keys(&first, lo) != 0) ||
		    (hi && btrfs_comp_cpu_keys(&last, hi) >= 0))
			check_problem(w->c, "tree", TLOG_CHECK_ITEM, w->tree, parent, parent_slot,
				      lo, "pointer to shared block %llu does not match its keys",
				      (unsigned long long)bytenr);
	}
	free_extent_buffer(eb);
	return 0;
}

static int walk_block(struct tree_walk *w, u64 bytenr, int level, u64 generation,
		      const struct btrfs_key *lo, const struct btrfs_key *hi,
		      u64 parent, int parent_slot)
{
	struct tlog_check *c = w->c;
	struct extent_buffer *eb;
	int err = seen_add(&w->seen, bytenr);

	if (err < 0)
		return err;
	if (err)
		return check_shared_pointer(w, bytenr, level, generation, lo, hi, parent,
					    parent_slot);
	if (read_tree_block(w->fs, bytenr, level, generation, &eb)) {
		unreadable_block(w, bytenr, level, parent, parent_slot);
		return 0;
	}
	check_header(w, eb, parent == 0);
	err = record_block(c, eb);
	if (!err && c->nr_blocks % 256 == 0)
		check_progress(c, "checking tree blocks", c->nr_blocks, w->blocks_total);
	if (!err)
		err = level ? walk_node(w, eb, lo, hi) : walk_leaf(w, eb, lo, hi);
	free_extent_buffer(eb);
	return err;
}

static int walk_tree(struct tree_walk *w, u64 tree, u64 bytenr, int level, u64 generation)
{
	int err = record_tree_ref(w->c, bytenr, 0, tree, level);

	if (err)
		return err;
	w->tree = tree;
	w->have_last = false;
	check_count(w->c, &w->c->stats->trees, 1);
	return walk_block(w, bytenr, level, generation, NULL, NULL, 0, -1);
}

/* A tree the root tree lists. */
struct root_entry {
	struct btrfs_key key;
	u64 bytenr;
	u64 generation;
	u8 level;
	bool dropping;		/* a deleted subvolume half dropped */
};

struct root_list {
	struct root_entry *v;
	size_t nr, alloc;
};

static int collect_root(struct tree_walk *w, struct root_list *roots,
			const struct btrfs_tree_iter *it)
{
	struct btrfs_root_item ri;
	struct btrfs_disk_key zero = { 0 };

	if (btrfs_decode_root_item(w->fs, it->leaf, it->slot, &it->key, &ri, NULL, 0))
		return 0;	/* the walk of the root tree reported it */
	if (array_reserve(roots->v, roots->alloc, roots->nr + 1))
		return -ENOMEM;
	roots->v[roots->nr++] = (struct root_entry){
		.key = it->key, .bytenr = btrfs_root_item_bytenr(&ri),
		.generation = btrfs_root_item_generation(&ri), .level = btrfs_root_item_level(&ri),
		.dropping = btrfs_root_item_refs(&ri) == 0 &&
			    memcmp(&ri.drop_progress, &zero, sizeof(zero)) != 0,
	};
	w->blocks_total += btrfs_root_item_bytes_used(&ri) / w->fs->nodesize;
	return 0;
}

static int collect_roots(struct tree_walk *w, struct root_list *roots)
{
	struct btrfs_key min = { 0, BTRFS_ROOT_ITEM_KEY, 0 };
	struct btrfs_key max = { (u64)-1, BTRFS_ROOT_ITEM_KEY, (u64)-1 };
	struct btrfs_tree_iter it;
	int err = 0;

	btrfs_for_each_item(w->fs->tree_root, &it, &min, &max) {
		if (it.key.type != BTRFS_ROOT_ITEM_KEY)
			continue;
		err = collect_root(w, roots, &it);
		if (err)
			break;
	}
	if (!err && it.ret < 0) {
		w->c->refs_incomplete = true;
		check_problem_errctx(w->c, "tree", TLOG_CHECK_TREE, BTRFS_ROOT_TREE_OBJECTID, 0,
				     "cannot list the trees of the root tree");
	}
	btrfs_tree_iter_end(&it);
	return err;
}

/*
 * A deleted subvolume being dropped has lost references below its drop
 * progress already; its blocks are neither walked nor counted, and the
 * extent counts may not add up around them.
 */
static int walk_listed_tree(struct tree_walk *w, const struct root_entry *r)
{
	if (r->dropping) {
		w->c->refs_incomplete = true;
		return 0;
	}
	return walk_tree(w, r->key.objectid, r->bytenr, r->level, r->generation);
}

static int cmp_block(const void *a, const void *b)
{
	const struct check_block *x = a, *y = b;

	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

static int cmp_tree_ref(const void *a, const void *b)
{
	const struct check_tree_ref *x = a, *y = b;

	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return x->root < y->root ? -1 : x->root > y->root;
}

static int cmp_data_ref(const void *a, const void *b)
{
	const struct check_data_ref *x = a, *y = b;

	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	if (x->leaf != y->leaf)
		return x->leaf < y->leaf ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

const struct check_block *check_find_block(const struct tlog_check *c, u64 bytenr)
{
	struct check_block key = { .bytenr = bytenr };

	if (!c->nr_blocks)
		return NULL;
	return bsearch(&key, c->blocks, c->nr_blocks, sizeof(key), cmp_block);
}

int check_trees(struct tlog_check *c, struct tlog_fs *fs)
{
	const struct btrfs_super_block *sb = &fs->super;
	struct tree_walk w = { .c = c, .fs = fs };
	struct root_list roots = { 0 };
	int err;

	err = walk_tree(&w, BTRFS_CHUNK_TREE_OBJECTID, fs->chunk_root->bytenr,
			fs->chunk_root->level, fs->chunk_root->generation);
	if (!err)
		err = walk_tree(&w, BTRFS_ROOT_TREE_OBJECTID, fs->tree_root->bytenr,
				fs->tree_root->level, btrfs_super_block_generation(sb));
	if (!err)
		err = collect_roots(&w, &roots);
	for (size_t i = 0; !err && i < roots.nr; i++)
		err = walk_listed_tree(&w, &roots.v[i]);
	free(roots.v);
	free(w.seen.slots);
	check_count(c, &c->stats->tree_blocks, c->nr_blocks);
	check_count(c, &c->stats->items, w.items);
	check_count(c, &c->stats->data_refs, c->nr_data_refs);
	if (err)
		return err;
	/* qsort wants an array even for no elements: a mkfs image has no data */
	if (c->nr_blocks)
		qsort(c->blocks, c->nr_blocks, sizeof(*c->blocks), cmp_block);
	if (c->nr_tree_refs)
		qsort(c->tree_refs, c->nr_tree_refs, sizeof(*c->tree_refs), cmp_tree_ref);
	if (c->nr_data_refs)
		qsort(c->data_refs, c->nr_data_refs, sizeof(*c->data_refs), cmp_data_ref);
	return 0;
}
