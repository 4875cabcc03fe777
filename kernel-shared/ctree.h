/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * In-memory objects of an open filesystem (struct tlog_fs, struct btrfs_root,
 * struct extent_buffer, struct btrfs_path) and the B-tree read operations:
 * search, next/prev, item access.
 */
#ifndef TLOG_CTREE_H
#define TLOG_CTREE_H

#include <stdbool.h>
#include "format.h"
#include "list.h"
#include "volumes.h"

struct tlog_bdev;

/*
 * A tree block held in memory.  Owned by the block cache; callers hold refs.
 * @data is the block's bytes: either the buffer's own memory (@block, right
 * after the struct) or, on an image read in place (extent-io.c, "reading
 * in place"), the device's read-only mapping of them; never written then.
 */
struct extent_buffer {
	u8 *data;
	struct tlog_fs *fs;		/* the owner, for the last release */
	u64 start;
	u32 len;
	int refs;
	bool dirty;			/* changed in the running transaction */
	bool stale;			/* dropped from the cache, freed on last put */
	bool in_place;			/* @data is in the device's mapping */
	bool bare;			/* allocated without @block */
	struct extent_buffer *hash_next;
	struct list_head lru;		/* on the cache's LRU while refs == 0 */
	struct list_head dirty_list;	/* on fs->dirty_blocks while dirty */
	u8 block[];
};

/*
 * Read-ahead runs remembered: a window's children lie in a few runs, mostly
 * one; a FIEMAP walk has the windows of two trees and their next ones out.
 */
#define EB_HINTED_RUNS	64

struct eb_cache {
	struct extent_buffer **hash;
	size_t hash_size;		/* 1 << hash_bits */
	unsigned int hash_bits;
	struct list_head lru;		/* unreferenced buffers, oldest first */
	size_t nr_cached;
	size_t max_cached;		/* soft limit on unreferenced buffers */
	u64 hits, misses;
	/* buffer memory (extent-io.c): chunks carved into slots, and freed slots */
	void **chunks;
	size_t nr_chunks;
	u8 *carve, *carve_end;		/* the newest chunk's slots not handed out yet */
	struct extent_buffer *free_slots; /* linked through hash_next */
	size_t slot_size;
	u8 *prefetch_gap;		/* what read-ahead reads between blocks */
	/* the last runs read-ahead asked for, physical [start, end): see load_in_place() */
	struct { u64 start, end; } hinted[EB_HINTED_RUNS];
	unsigned int hinted_next;	/* the oldest entry, replaced next */
};

/* One tree: where its root block is and the ROOT_ITEM that describes it. */
struct btrfs_root {
	struct tlog_fs *fs;
	struct btrfs_key root_key;	/* (objectid, ROOT_ITEM, offset) */
	struct btrfs_root_item root_item; /* zero-filled past a legacy item */
	u64 bytenr;
	u64 generation;
	u8 level;
	/*
	 * A subvolume's log transactions, as the kernel counts them:
	 * log_transid is the one running (each log sync moves it on),
	 * last_log_commit the last one synced.  Both start again at 0 when
	 * a transaction makes the subvolume's log tree; between, they keep
	 * their values, and an inode changed then carries the old count.
	 */
	u64 log_transid;
	u64 last_log_commit;
	struct btrfs_search_hint *hint;	/* btrfs_root_hint_start(); NULL: off */
	struct btrfs_root *next;	/* fs->roots list */
};

/* Options for opening an image. */
struct tlog_open_opts {
	int super_mirror;		/* -1: the primary, or the newest valid copy if it is damaged */
	bool writable;
	bool skip_chunk_tree;		/* dump-super: superblock only */
	bool read_copies;		/* never read tree blocks in place (blockdev.h) */
	int fault_mode;			/* tests: TLOG_FAULT_* from the @fault_nth write */
	u64 fault_nth;
};

struct tlog_fs {
	struct tlog_bdev *bdev;
	struct btrfs_super_block super;
	int super_mirror;		/* which copy was loaded */
	/*
	 * Why the primary superblock was not used when another copy was
	 * loaded in its place ("" otherwise).  Only the primary records a
	 * log, so such an image's log is unknown, not absent.
	 */
	char primary_damage[160];
	/* The image is shorter than the device size its superblock records. */
	bool truncated;
	u64 generation;
	u32 nodesize;
	u32 sectorsize;
	u16 csum_type;
	int csum_size;
	u64 incompat;
	u64 compat_ro;
	u8 fsid[BTRFS_FSID_SIZE];
	u8 header_fsid[BTRFS_FSID_SIZE];	/* metadata_uuid when set */
	u8 chunk_tree_uuid[BTRFS_UUID_SIZE];	/* stamped into every tree block */
	struct chunk_map chunks;
	struct eb_cache cache;
	bool no_readahead;		/* btrfs_set_readahead() */
	bool in_place;			/* tree blocks are read in place (extent-io.c) */
	bool image_changed;		/* ...and changed while they were */
	struct btrfs_root *tree_root;
	struct btrfs_root *chunk_root;
	struct btrfs_root *log_root_tree;	/* NULL when there is no log */
	struct btrfs_root *roots;		/* other roots read so far */
	/*
	 * Dirty blocks, each on exactly one of two lists: the running
	 * transaction's (written by its commit) and the log's (blocks of log
	 * trees and the log root tree, written by tlog_trans_sync_log()).  A
	 * commit writes no log block, a log sync no transaction block.
	 */
	struct list_head dirty_blocks;
	struct list_head log_dirty_blocks;
	struct tlog_trans *overlay;		/* the log replayed in memory, if applied */
	u64 data_cursor;			/* where data allocations go on, across transactions */
	/* log blocks written by log syncs, and checked before (write_log_blocks) */
	u64 log_blocks_written, log_blocks_verified;
	/* descents that may change a tree (btrfs_search_slot_for_write), for tests */
	u64 write_searches;
	/*
	 * The size class of each data block group, as the kernel keeps it in
	 * memory for as long as it is mounted (block-group.h): taken from the
	 * extent tree at the first data allocation, then set by allocations.
	 */
	struct tlog_bg_size_class {
		u64 start;
		u64 used;		/* the group's used bytes at the last commit */
		u8 size_class;
	} *bg_size_classes;
	size_t nr_bg_size_classes, alloc_bg_size_classes;
	bool bg_size_classes_loaded;
	/* tlog_fs_new_uuid(): derived from @uuid_seed when set, else random */
	bool uuid_seeded;
	u8 uuid_seed[BTRFS_UUID_SIZE];
};

/* Tree blocks have skinny extent items (METADATA_ITEM keyed by level). */
static inline bool btrfs_fs_skinny(const struct tlog_fs *fs)
{
	return fs->incompat & BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA;
}

/* Key of the extent item of the tree block at @bytenr, @level. */
static inline struct btrfs_key btrfs_tree_block_extent_key(const struct tlog_fs *fs, u64 bytenr,
							   int level)
{
	if (btrfs_fs_skinny(fs))
		return (struct btrfs_key){ bytenr, BTRFS_METADATA_ITEM_KEY, (u64)level };
	return (struct btrfs_key){ bytenr, BTRFS_EXTENT_ITEM_KEY, fs->nodesize };
}

/* The tree holding BLOCK_GROUP_ITEMs: the block group tree, else the extent tree. */
static inline u64 btrfs_block_group_root_id(const struct tlog_fs *fs)
{
	return (fs->compat_ro & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE) ?
	       BTRFS_BLOCK_GROUP_TREE_OBJECTID : BTRFS_EXTENT_TREE_OBJECTID;
}

/*
 * A position in a tree: the block and slot at each level, leaf at 0.  The
 * read-ahead state is set by btrfs_path_set_reada() and only read while
 * @reada is on: btrfs_init_path() leaves it alone, as it is most of the
 * path and most paths make one lookup.
 */
struct btrfs_path {
	struct extent_buffer *nodes[BTRFS_MAX_LEVEL];
	int slots[BTRFS_MAX_LEVEL];
	bool reada;			/* prefetch leaves while walking */
	struct btrfs_key reada_max;	/* ...but none that start past this key */
	u64 reada_node[BTRFS_MAX_LEVEL];	/* node last prefetched from, per level */
	int reada_end[BTRFS_MAX_LEVEL];	/* ...up to this slot */
	u32 reada_window;		/* children in the next window; 0: the first */
	int reada_next_at;		/* level 1: hint the next node's leaves at this slot; 0: none */
};

/* ---- extent buffer access ---- */

static inline struct btrfs_header *eb_header(const struct extent_buffer *eb)
{
	return (struct btrfs_header *)eb->data;
}

static inline u32 btrfs_header_nritems_eb(const struct extent_buffer *eb)
{
	return btrfs_header_nritems(eb_header(eb));
}

static inline u8 btrfs_header_level_eb(const struct extent_buffer *eb)
{
	return btrfs_header_level(eb_header(eb));
}

static inline struct btrfs_item *btrfs_item_nr(const struct extent_buffer *eb, int slot)
{
	return (struct btrfs_item *)(eb->data + sizeof(struct btrfs_header) +
				     (size_t)slot * sizeof(struct btrfs_item));
}

static inline struct btrfs_key_ptr *btrfs_key_ptr_nr(const struct extent_buffer *eb, int slot)
{
	return (struct btrfs_key_ptr *)(eb->data + sizeof(struct btrfs_header) +
					(size_t)slot * sizeof(struct btrfs_key_ptr));
}

static inline void btrfs_item_key_to_cpu(const struct extent_buffer *eb,
					 struct btrfs_key *key, int slot)
{
	btrfs_disk_key_to_cpu(key, &btrfs_item_nr(eb, slot)->key);
}

static inline void btrfs_node_key_to_cpu(const struct extent_buffer *eb,
					 struct btrfs_key *key, int slot)
{
	btrfs_disk_key_to_cpu(key, &btrfs_key_ptr_nr(eb, slot)->key);
}

static inline u64 btrfs_node_blockptr(const struct extent_buffer *eb, int slot)
{
	return btrfs_key_ptr_blockptr(btrfs_key_ptr_nr(eb, slot));
}

static inline u64 btrfs_node_ptr_generation(const struct extent_buffer *eb, int slot)
{
	return btrfs_key_ptr_generation(btrfs_key_ptr_nr(eb, slot));
}

static inline u32 btrfs_item_size(const struct extent_buffer *eb, int slot)
{
	return btrfs_raw_item_size(btrfs_item_nr(eb, slot));
}

static inline u32 btrfs_item_offset(const struct extent_buffer *eb, int slot)
{
	return btrfs_raw_item_offset(btrfs_item_nr(eb, slot));
}

/* Item data; the block checker guarantees it lies inside the leaf. */
static inline void *btrfs_item_ptr(const struct extent_buffer *eb, int slot)
{
	return (void *)(eb->data + sizeof(struct btrfs_header) +
			btrfs_item_offset(eb, slot));
}

#define btrfs_item_ptr_type(eb, slot, type) ((type *)btrfs_item_ptr(eb, slot))

u32 btrfs_leaf_free_space(const struct tlog_fs *fs, const struct extent_buffer *leaf);

/* ---- block cache and tree block reads (disk-io.c) ---- */

/*
 * Read and verify the tree block at @bytenr.  @level and @generation are
 * what the parent says (-1 / 0: not known).  Returns 0 and a referenced
 * buffer in @ret, or a negative errno with the reason in the error context.
 */
int read_tree_block(struct tlog_fs *fs, u64 bytenr, int level, u64 generation,
		    struct extent_buffer **ret);
void free_extent_buffer(struct extent_buffer *eb);
/*
 * Bring up to @nr children of @node from @slot on into the cache with as
 * few, large reads as their placement allows, stopping at the first child
 * whose keys start past @max (NULL: no bound); without @wait only ask the
 * device to start reading them.  Best effort: nothing is reported.
 * Returns the slot after the last child covered (cached or read).
 */
#define BTRFS_PREFETCH_ALL	UINT32_MAX
int btrfs_prefetch_children(struct tlog_fs *fs, const struct extent_buffer *node, int slot,
			    u32 nr, const struct btrfs_key *max, bool wait);
/*
 * Read-ahead of tree walks on (the default) or off: off, every block is
 * read alone when a walk reaches it (to compare, in tests and benchmarks).
 */
void btrfs_set_readahead(struct tlog_fs *fs, bool on);
/*
 * A new tree block at @bytenr: a copy of @from's bytes (COW, a snapshot's
 * root), or zeroed when @from is NULL; cached, dirty, with one reference
 * for the caller.  A stale cached copy of an old block at that address is
 * dropped.
 */
struct extent_buffer *btrfs_new_tree_block(struct tlog_fs *fs, u64 bytenr,
					   const struct extent_buffer *from);
/* Dirty blocks stay in memory (the dirty list holds a reference) until written. */
void btrfs_mark_buffer_dirty(struct tlog_fs *fs, struct extent_buffer *eb);
void btrfs_clear_buffer_dirty(struct tlog_fs *fs, struct extent_buffer *eb);
/* Dirty @eb as a block of the log (on fs->log_dirty_blocks, not fs->dirty_blocks). */
void btrfs_mark_log_buffer_dirty(struct tlog_fs *fs, struct extent_buffer *eb);
/* Forget the block at @bytenr: it was freed and must never be read from the cache. */
void btrfs_forget_tree_block(struct tlog_fs *fs, u64 bytenr);
/*
 * An open filesystem with no image behind it, for building trees in
 * memory (tests, mkfs): every block it uses must be created with
 * btrfs_new_tree_block().
 */
int tlog_fs_create_memory(u32 nodesize, u32 sectorsize, u16 csum_type, struct tlog_fs **ret);
/*
 * New UUIDs of @fs (subvolumes, snapshots): random, or after
 * tlog_fs_set_uuid_seed() derived from the seed (tlog_derive_uuid, with
 * @what and @id), so that a reproducible build gives the same ones.
 */
void tlog_fs_set_uuid_seed(struct tlog_fs *fs, const u8 *seed);
void tlog_fs_new_uuid(struct tlog_fs *fs, const char *what, u64 id, u8 *out);

/*
 * Keep at most @bytes of unreferenced tree blocks cached (the default is
 * 256 MiB).  A reader that visits every block once, as the checker does,
 * gains nothing from more than its read-ahead window and its passes'
 * working set, and pays for it in memory.
 */
void btrfs_set_cache_limit(struct tlog_fs *fs, u64 bytes);

/* The cached block at @bytenr, or NULL; no reference is taken. */
const struct extent_buffer *btrfs_find_cached_block(struct tlog_fs *fs, u64 bytenr);
static inline void extent_buffer_get(struct extent_buffer *eb)
{
	eb->refs++;
}

/* ---- paths and searching (ctree.c) ---- */

/*
 * Binary search for @key in one block: 0 and the slot of an exact match,
 * or 1 and the slot where it would go.
 */
int bin_search_block(const struct extent_buffer *eb, const struct btrfs_key *key, int *slot);

void btrfs_init_path(struct btrfs_path *path);
void btrfs_release_path(struct btrfs_path *path);
/*
 * Search hints: while on for @root, btrfs_search_slot() keeps the path of
 * its last search referenced, and a search whose key that path's nodes
 * still lead to starts in its leaf.  For a writer that looks up many
 * keys, most in the leaf of the one before (replay: a file's items, one
 * after the other); a walk does not need them.  Off again with
 * btrfs_root_hint_end() (and when the filesystem is closed).
 */
int btrfs_root_hint_start(struct btrfs_root *root);
void btrfs_root_hint_end(struct btrfs_root *root);
/* Searches of @root the hint served and those it did not, since it was started. */
void btrfs_root_hint_stats(const struct btrfs_root *root, u64 *hits, u64 *misses);
/* Prefetch leaves while walking @path, none past @max (NULL: to the end of the tree). */
void btrfs_path_set_reada(struct btrfs_path *path, const struct btrfs_key *max);

/*
 * Find @key in @root.  Returns 0 if found (path points at it), 1 if not
 * (path points where it would be inserted, possibly one past the last item
 * of a leaf), or a negative errno.
 */
int btrfs_search_slot(struct btrfs_root *root, const struct btrfs_key *key,
		      struct btrfs_path *path);
/*
 * btrfs_search_slot() for callers whose keys mostly increase: when @path
 * already holds a leaf whose keys span @key, or the next leaf does, only
 * that leaf is searched.  Same results as btrfs_search_slot(), except that
 * a missing key between two leaves may be reported at slot 0 of the second.
 */
int btrfs_search_slot_near(struct btrfs_root *root, const struct btrfs_key *key,
			   struct btrfs_path *path);
/* Move to the first item of the next leaf.  0, 1 at the end, or -errno. */
int btrfs_next_leaf(struct btrfs_root *root, struct btrfs_path *path);
/* Move to the last item of the previous leaf.  0, 1 at the start, or -errno. */
int btrfs_prev_leaf(struct btrfs_root *root, struct btrfs_path *path);
/* Advance one item, crossing leaves.  0, 1 at the end, or -errno. */
int btrfs_next_item(struct btrfs_root *root, struct btrfs_path *path);
/* Step back one item, crossing leaves.  0, 1 at the start, or -errno. */
int btrfs_prev_item(struct btrfs_root *root, struct btrfs_path *path);
/*
 * Position @path on the first item >= @key.  0 on an item, 1 if there is
 * none, or -errno.
 */
int btrfs_search_forward(struct btrfs_root *root, const struct btrfs_key *key,
			 struct btrfs_path *path);
/*
 * btrfs_search_forward() that skips every subtree not changed since
 * transaction @min_trans (a node pointer's generation below it), as the
 * kernel's btrfs_search_forward(min_trans) does for logging: the first
 * item >= *@min_key in a leaf of generation >= @min_trans, its key stored
 * in *@min_key.  0 on an item, 1 if there is none, or -errno.  (Items of
 * a leaf that qualifies are all returned, old ones included.)
 */
int btrfs_search_forward_since(struct btrfs_root *root, struct btrfs_key *min_key,
			       struct btrfs_path *path, u64 min_trans);
/*
 * Find the last item <= @key with the same objectid and type as @key.
 * 0 if found, 1 if not, -errno.
 */
int btrfs_search_backwards(struct btrfs_root *root, const struct btrfs_key *key,
			   struct btrfs_path *path);

/*
 * Iteration over the items with min <= key <= max:
 *
 *	btrfs_for_each_item(root, &iter, &min, &max) { use iter.path ... }
 *	if (iter.ret < 0) error
 */
struct btrfs_tree_iter {
	struct btrfs_root *root;
	struct btrfs_path path;
	struct btrfs_key max;
	struct btrfs_key key;		/* key of the current item */
	struct extent_buffer *leaf;	/* current leaf */
	int slot;
	int ret;			/* 0 while positioned, 1 done, <0 error */
};

int btrfs_tree_iter_start(struct btrfs_root *root, struct btrfs_tree_iter *iter,
			  const struct btrfs_key *min, const struct btrfs_key *max);
int btrfs_tree_iter_next(struct btrfs_tree_iter *iter);
void btrfs_tree_iter_end(struct btrfs_tree_iter *iter);

#define btrfs_for_each_item(root, iter, min, max)			\
	for (btrfs_tree_iter_start(root, iter, min, max);		\
	     (iter)->ret == 0;						\
	     btrfs_tree_iter_next(iter))

/*
 * Check the structure of a whole tree: every block's layout, levels, keys
 * in order across blocks, each parent's key and generation matching its
 * child, no empty blocks below the root.  Returns 0 and the number of items
 * and blocks, or -EUCLEAN with the first problem in the error context.
 */
int btrfs_check_tree_structure(struct btrfs_root *root, u64 *nr_items, u64 *nr_blocks);

/* ---- changing trees, copy-on-write (ctree-write.c) ---- */

struct tlog_trans;

/*
 * Search @key for a change: every block on the path is copied into the
 * running transaction first.  @ins_len > 0 makes room for that many bytes
 * of new items (headers included) in the leaf reached, and is a promise
 * to insert them there: the room may be a new, empty leaf, which only the
 * insertion makes valid (the commit refuses an empty leaf that is not its
 * tree's root).  @ins_len < 0 prepares a deletion.  Returns like
 * btrfs_search_slot().
 */
int btrfs_search_slot_for_write(struct tlog_trans *trans, struct btrfs_root *root,
				const struct btrfs_key *key, struct btrfs_path *path,
				int ins_len);
/*
 * Insert @nr items with @keys (in order, none present) and @sizes, zeroed,
 * in one leaf; the path points at the first.  -EEXIST if a key exists.
 */
int btrfs_insert_empty_items(struct tlog_trans *trans, struct btrfs_root *root,
			     struct btrfs_path *path, const struct btrfs_key *keys,
			     const u32 *sizes, int nr);
/*
 * The same at the path a read-only search for keys[0] left, which found
 * no such key (btrfs_search_slot() returned 1; the tree unchanged since):
 * in that leaf when no block on the path needs copying and it has the
 * room, else by a new search for write.  Saves a lookup-then-insert its
 * second descent.  The path is released on error.
 */
int btrfs_insert_empty_items_at(struct tlog_trans *trans, struct btrfs_root *root,
				struct btrfs_path *path, const struct btrfs_key *keys,
				const u32 *sizes, int nr);
/*
 * Whether the path a read-only search of @root left can take @bytes more
 * in its leaf as it stands: every block on it is this transaction's own
 * copy, already linked from its parent (the top one the root), and the
 * leaf has the room, so nothing needs copying or splitting.  Then the
 * leaf may be changed at the path (an insert, an item extended) without
 * a second descent.
 */
bool btrfs_path_takes(const struct tlog_trans *trans, const struct btrfs_root *root,
		      const struct btrfs_path *path, u32 bytes);
int btrfs_insert_item(struct tlog_trans *trans, struct btrfs_root *root,
		      const struct btrfs_key *key, const void *data, u32 size);
/* btrfs_insert_item() at such a lookup's path (released, as on error). */
int btrfs_insert_item_at(struct tlog_trans *trans, struct btrfs_root *root,
			 struct btrfs_path *path, const struct btrfs_key *key, const void *data,
			 u32 size);
/*
 * Insert @nr items with @keys (strictly increasing, none present), @sizes
 * and @data (@data[i] NULL: zeroed), as few leaves at a time as they
 * allow: every run of them that falls between two existing keys and fits
 * in a leaf goes in with one search (setup_items_for_insert style).
 * -EEXIST, with nothing of that run inserted, when a key exists.
 */
int btrfs_insert_items(struct tlog_trans *trans, struct btrfs_root *root,
		       const struct btrfs_key *keys, const void *const *data, const u32 *sizes,
		       int nr);
/*
 * The keys, data pointers and sizes of a batch of items to insert, kept
 * by a caller that copies many batches so that they are allocated once
 * and reused (the kernel logger's preallocated scratch buffer).
 */
struct btrfs_item_batch {
	struct btrfs_key *keys;
	const void **data;
	u32 *sizes;
	size_t alloc;
};

/* Room for @nr items: 1 when @batch had to grow for it, 0 when it had room, or -ENOMEM. */
int btrfs_item_batch_reserve(struct btrfs_item_batch *batch, size_t nr);
void btrfs_item_batch_release(struct btrfs_item_batch *batch);

/*
 * Copy items [@first_slot, @first_slot + @nr) of leaf @src (of any tree;
 * the caller holds a reference) into @dst in one go, keys and data as
 * they are (the kernel's copy_items for the log), listed in @batch.
 * -EEXIST when one of the keys is in @dst already.
 */
int btrfs_copy_items_batch(struct tlog_trans *trans, struct btrfs_root *dst,
			   const struct extent_buffer *src, int first_slot, int nr,
			   struct btrfs_item_batch *batch);
/* The same with a batch of its own. */
int btrfs_copy_items(struct tlog_trans *trans, struct btrfs_root *dst,
		     const struct extent_buffer *src, int first_slot, int nr);
/*
 * Delete every item with @min <= key <= @max, a leaf's worth at a time;
 * *@deleted (may be NULL) gets how many.  Nothing there is not an error.
 */
int btrfs_delete_items_range(struct tlog_trans *trans, struct btrfs_root *root,
			     const struct btrfs_key *min, const struct btrfs_key *max,
			     u64 *deleted);
/* Delete every item of @objectid in @root (an inode's, evicted or logged anew). */
int btrfs_delete_objectid_items(struct tlog_trans *trans, struct btrfs_root *root,
				u64 objectid);
/*
 * Delete @nr items from @slot of the leaf at path->nodes[0] (reached with
 * btrfs_search_slot_for_write).  The path must be released afterwards.
 */
int btrfs_del_items(struct tlog_trans *trans, struct btrfs_root *root,
		    struct btrfs_path *path, int slot, int nr);
int btrfs_delete_item(struct tlog_trans *trans, struct btrfs_root *root,
		      const struct btrfs_key *key);
/*
 * Grow the item at the path by @size_diff zeroed bytes at its end; the
 * search must have asked for that room (ins_len = size_diff).
 */
int btrfs_extend_item(struct tlog_trans *trans, struct btrfs_path *path, u32 size_diff);
/* Shrink the item at the path to @new_size, cutting its end or its start. */
int btrfs_truncate_item(struct tlog_trans *trans, struct btrfs_path *path, u32 new_size,
			bool from_end);
/* Copy path->nodes[level] into the transaction (its parent already is). */
int btrfs_cow_block(struct tlog_trans *trans, struct btrfs_root *root,
		    struct btrfs_path *path, int level);
/* Give @root (objectid set) a new, empty root leaf. */
int btrfs_create_tree(struct tlog_trans *trans, struct btrfs_root *root);

/* ---- open / close (disk-io.c) ---- */

/*
 * Forget every log root of @fs: the log root tree and each log tree cached
 * by btrfs_read_log_root() or made by tlog_trans_log_tree() (root-tree.c).
 * Pointers to them are dangling afterwards.  The log's dirty blocks, if
 * any, are the caller's (transaction.c drops them first).
 */
void btrfs_drop_log_roots(struct tlog_fs *fs);

int tlog_open(const char *path, const struct tlog_open_opts *opts, struct tlog_fs **ret);
/*
 * The same on a device already open (a memory device in tests): the
 * filesystem takes a reference of its own, which tlog_close() drops, so
 * the caller may open the device again after closing the filesystem.
 */
int tlog_open_bdev(struct tlog_bdev *bdev, const struct tlog_open_opts *opts,
		   struct tlog_fs **ret);
void tlog_close(struct tlog_fs *fs);

#endif
