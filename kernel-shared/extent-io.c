// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tree blocks in memory: the block cache, reading blocks (every copy of a
 * mirrored block tried in turn) with their checks, read-ahead of a node's
 * children, and the blocks a transaction creates and dirties.
 *
 * Every tree block is verified once, when it enters the cache: checksum,
 * header (bytenr, fsid, level) and the layout of its items, so that all
 * later item accesses stay inside the block.  What the parent says about a
 * child (level, generation) is checked on every read because it depends on
 * who asks.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev.h"
#include "ctree.h"
#include "errctx.h"
#include "extent-io.h"
#include "hugemem.h"
#include "misc.h"
#include "tree-checker.h"
#include "volumes.h"

/* Default block cache: this many bytes of unreferenced tree blocks. */
#define TLOG_CACHE_BYTES (256ULL << 20)

/* ---- buffer memory ---- */

/*
 * Tree blocks come and go by the thousand in a walk or a replay.  Taken
 * from malloc one by one, every buffer past the cache's high-water mark is
 * fresh memory, a fault and a clear per page touched.  So buffers are
 * carved from 2 MiB chunks that may be huge pages (hugemem.h), and a freed
 * buffer goes on a free list for the next one: memory is only new when
 * more blocks are held than ever before.  Chunks are given back when the
 * filesystem is closed.
 *
 * Under AddressSanitizer every buffer is its own malloc instead, so that
 * overruns and uses after free of tree blocks are still caught.
 */
#define EB_CHUNK_BYTES		HUGEMEM_ALIGN

#if defined(__SANITIZE_ADDRESS__)
#define EB_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EB_POOL 0
#endif
#endif
#ifndef EB_POOL
#define EB_POOL 1
#endif

static size_t eb_slot_size(u32 nodesize)
{
	return round_up(sizeof(struct extent_buffer) + nodesize, 64);
}

static struct extent_buffer *eb_slot_alloc(struct eb_cache *cache)
{
	struct extent_buffer *eb = cache->free_slots;
	void **chunks;

	if (!EB_POOL)
		return malloc(cache->slot_size);
	if (eb) {
		cache->free_slots = eb->hash_next;
		return eb;
	}
	if (cache->carve + cache->slot_size > cache->carve_end) {
		chunks = realloc(cache->chunks, (cache->nr_chunks + 1) * sizeof(*chunks));
		if (!chunks)
			return NULL;
		cache->chunks = chunks;
		chunks[cache->nr_chunks] = hugemem_alloc(EB_CHUNK_BYTES);
		if (!chunks[cache->nr_chunks])
			return NULL;
		cache->carve = chunks[cache->nr_chunks++];
		cache->carve_end = cache->carve + EB_CHUNK_BYTES;
	}
	eb = (struct extent_buffer *)cache->carve;
	cache->carve += cache->slot_size;
	return eb;
}

static void eb_slot_free(struct eb_cache *cache, struct extent_buffer *eb)
{
	if (eb->bare) {
		if (!eb->in_place)
			free(eb->data);
		free(eb);
		return;
	}
	if (!EB_POOL) {
		free(eb);
		return;
	}
	eb->hash_next = cache->free_slots;
	cache->free_slots = eb;
}

static void eb_slots_release(struct eb_cache *cache)
{
	for (size_t i = 0; i < cache->nr_chunks; i++)
		hugemem_free(cache->chunks[i], EB_CHUNK_BYTES);
	free(cache->chunks);
	cache->chunks = NULL;
	cache->nr_chunks = 0;
	cache->carve = cache->carve_end = NULL;
	cache->free_slots = NULL;
}

/* ---- block cache ---- */

/*
 * A power-of-two table indexed by the top bits of a multiplicative hash:
 * every search looks up a block per level, and a division by a prime
 * table size was a third of that.  The table doubles when it holds more
 * blocks than buckets (a commit's dirty blocks are all held).
 */
#define EB_HASH_MIN_BITS	14

static size_t eb_hash(const struct eb_cache *cache, u64 bytenr)
{
	return (size_t)(((bytenr >> 12) * 0x9E3779B97F4A7C15ULL) >> (64 - cache->hash_bits));
}

static int eb_hash_alloc(struct eb_cache *cache, unsigned int bits)
{
	struct extent_buffer **hash = calloc((size_t)1 << bits, sizeof(*hash));
	struct extent_buffer **old = cache->hash;
	size_t old_size = cache->hash_size;

	if (!hash)
		return -ENOMEM;
	cache->hash = hash;
	cache->hash_bits = bits;
	cache->hash_size = (size_t)1 << bits;
	for (size_t i = 0; i < old_size; i++) {
		for (struct extent_buffer *eb = old[i], *next; eb; eb = next) {
			size_t h = eb_hash(cache, eb->start);

			next = eb->hash_next;
			eb->hash_next = hash[h];
			hash[h] = eb;
		}
	}
	free(old);
	return 0;
}

int eb_cache_init(struct eb_cache *cache, u32 nodesize)
{
	cache->max_cached = TLOG_CACHE_BYTES / nodesize;
	cache->hash = NULL;
	cache->hash_size = 0;
	cache->slot_size = eb_slot_size(nodesize);
	INIT_LIST_HEAD(&cache->lru);
	memset(cache->hinted, 0, sizeof(cache->hinted));
	cache->hinted_next = 0;
	return eb_hash_alloc(cache, EB_HASH_MIN_BITS);
}

static struct extent_buffer *eb_cache_lookup(struct eb_cache *cache, u64 bytenr)
{
	struct extent_buffer *eb = cache->hash[eb_hash(cache, bytenr)];

	for (; eb; eb = eb->hash_next)
		if (eb->start == bytenr)
			return eb;
	return NULL;
}

static void eb_cache_unhash(struct eb_cache *cache, struct extent_buffer *eb)
{
	struct extent_buffer **pp = &cache->hash[eb_hash(cache, eb->start)];

	while (*pp && *pp != eb)
		pp = &(*pp)->hash_next;
	if (*pp)
		*pp = eb->hash_next;
}

static void eb_cache_insert(struct eb_cache *cache, struct extent_buffer *eb)
{
	size_t h;

	/* a table that cannot grow only gets longer chains */
	if (cache->nr_cached >= cache->hash_size && cache->hash_bits < 8 * sizeof(size_t) - 2)
		eb_hash_alloc(cache, cache->hash_bits + 1);
	h = eb_hash(cache, eb->start);
	eb->hash_next = cache->hash[h];
	cache->hash[h] = eb;
	cache->nr_cached++;
}

/* Drop unreferenced buffers, oldest first, until the cache is under its limit. */
static void eb_cache_shrink(struct eb_cache *cache)
{
	while (cache->nr_cached > cache->max_cached && !list_empty(&cache->lru)) {
		struct extent_buffer *eb = list_first_entry(&cache->lru,
							    struct extent_buffer, lru);

		list_del_init(&eb->lru);
		eb_cache_unhash(cache, eb);
		cache->nr_cached--;
		eb_slot_free(cache, eb);
	}
}

void btrfs_set_cache_limit(struct tlog_fs *fs, u64 bytes)
{
	fs->cache.max_cached = bytes / fs->nodesize ? bytes / fs->nodesize : 1;
	eb_cache_shrink(&fs->cache);
}

void eb_cache_destroy(struct eb_cache *cache)
{
	if (!cache->hash)
		return;
	for (size_t i = 0; i < cache->hash_size; i++) {
		struct extent_buffer *eb = cache->hash[i];

		while (eb) {
			struct extent_buffer *next = eb->hash_next;

			eb_slot_free(cache, eb);
			eb = next;
		}
	}
	free(cache->hash);
	cache->hash = NULL;
	free(cache->prefetch_gap);
	cache->prefetch_gap = NULL;
	eb_slots_release(cache);
}

void free_extent_buffer(struct extent_buffer *eb)
{
	struct tlog_fs *fs;

	if (!eb)
		return;
	if (--eb->refs > 0)
		return;
	fs = eb->fs;
	if (eb->stale) {
		eb_slot_free(&fs->cache, eb);
		return;
	}
	/* The buffer stays cached; it only becomes evictable. */
	list_add_tail(&eb->lru, &fs->cache.lru);
	eb_cache_shrink(&fs->cache);
}

static void init_extent_buffer(struct tlog_fs *fs, struct extent_buffer *eb, u64 bytenr)
{
	eb->fs = fs;
	eb->start = bytenr;
	eb->len = fs->nodesize;
	eb->refs = 1;
	eb->dirty = false;
	eb->stale = false;
	eb->in_place = false;
	eb->bare = false;
	eb->hash_next = NULL;
	INIT_LIST_HEAD(&eb->lru);
	INIT_LIST_HEAD(&eb->dirty_list);
}

/* A buffer for the block at @bytenr, one reference, not in the cache yet. */
static struct extent_buffer *alloc_extent_buffer(struct tlog_fs *fs, u64 bytenr)
{
	struct extent_buffer *eb = eb_slot_alloc(&fs->cache);

	if (!eb)
		return NULL;
	init_extent_buffer(fs, eb, bytenr);
	eb->data = eb->block;
	return eb;
}

/* The same for a block read in place at @bytes: only the struct is allocated. */
static struct extent_buffer *alloc_in_place_buffer(struct tlog_fs *fs, u64 bytenr,
						   const u8 *bytes)
{
	struct extent_buffer *eb = malloc(sizeof(*eb));

	if (!eb)
		return NULL;
	init_extent_buffer(fs, eb, bytenr);
	/* never written: a read-only filesystem COWs into buffers of its own */
	eb->data = (u8 *)bytes;
	eb->in_place = true;
	eb->bare = true;
	return eb;
}

/* Read one copy of a tree block and verify it. */
static int read_tree_block_copy(struct tlog_fs *fs, u64 physical, u64 bytenr, u8 *buf)
{
	int ret = tlog_bdev_read(fs->bdev, buf, fs->nodesize, physical);

	if (ret)
		return ret;
	return btrfs_check_tree_block(fs, buf, bytenr);
}

/* ---- reading in place ---- */

/*
 * On a device that holds its bytes still (blockdev.h, "reading in place"),
 * a block is checked where the mapping has it and the cache holds a bare
 * buffer pointing there: no copy out of the page cache, and no buffer
 * memory to fault in and clear.  Read-ahead is then only hints.
 *
 * When the device asks for its bytes back (a writer is waiting), every
 * cached block is copied out and checked again before the device is let
 * go, and reads copy from then on.  A block read in place stays in the
 * cache's hash while it is held (one forgotten while held is copied out
 * first), so the hash finds them all; a pointer into a block taken
 * before and used after the read that lets go still reads the mapping,
 * which no longer holds still.  A copy that no longer
 * passes the checks means the writer did not wait (the kernel's
 * lease-break-time ran out): its buffer is zeroed, which keeps every
 * later access by those who hold it inside it, and every read fails from
 * then on: nothing read before can be trusted to agree with it.
 */
void btrfs_begin_reading_in_place(struct tlog_fs *fs)
{
	fs->in_place = tlog_bdev_map_begin(fs->bdev);
}

void btrfs_end_reading_in_place(struct tlog_fs *fs)
{
	if (!fs->in_place)
		return;
	fs->in_place = false;
	tlog_bdev_map_end(fs->bdev);
}

static void copy_out_in_place(struct tlog_fs *fs, struct extent_buffer *eb)
{
	u8 *copy = malloc(eb->len);
	struct tlog_errsave saved;

	if (!copy) {
		/*
		 * The device waits for no one: the block becomes an empty
		 * one, as if changed (in_place stays: nothing to free).
		 */
		static const u8 empty_block[BTRFS_MAX_NODESIZE];

		eb->data = (u8 *)empty_block;
		fs->image_changed = true;
		return;
	}
	memcpy(copy, eb->data, eb->len);
	tlog_error_save(&saved);
	if (btrfs_check_tree_block(fs, copy, eb->start)) {
		memset(copy, 0, eb->len);
		fs->image_changed = true;
	}
	tlog_error_restore(&saved);
	eb->data = copy;
	eb->in_place = false;
}

static void stop_reading_in_place(struct tlog_fs *fs)
{
	struct eb_cache *cache = &fs->cache;

	for (size_t i = 0; i < cache->hash_size; i++)
		for (struct extent_buffer *eb = cache->hash[i]; eb; eb = eb->hash_next)
			if (eb->in_place)
				copy_out_in_place(fs, eb);
	btrfs_end_reading_in_place(fs);
}

static void note_hinted_run(struct eb_cache *cache, u64 start, u64 end)
{
	cache->hinted[cache->hinted_next].start = start;
	cache->hinted[cache->hinted_next].end = end;
	cache->hinted_next = (cache->hinted_next + 1) % EB_HINTED_RUNS;
}

/*
 * Whether @physical lies in a run read-ahead asked for lately.  Newest
 * first: a walk mostly touches what it asked for last.
 */
static bool in_hinted_run(const struct eb_cache *cache, u64 physical)
{
	for (unsigned int n = 1; n <= EB_HINTED_RUNS; n++) {
		unsigned int i = (cache->hinted_next + EB_HINTED_RUNS - n) % EB_HINTED_RUNS;

		if (physical >= cache->hinted[i].start && physical < cache->hinted[i].end)
			return true;
	}
	return false;
}

/*
 * Check one copy of a tree block where the device maps it.  The mapping
 * reads no more than the page touched (MADV_RANDOM), so a block nobody
 * asked for - a tree's root, a lookup's path - would come in one
 * synchronous page at a time, four waits for a 16 KiB block when cold.
 * Asking for the whole block first makes it one request (unless
 * read-ahead is off: then nothing is asked for); blocks that read-ahead
 * asked for lately skip the system call.
 */
static int load_in_place(struct tlog_fs *fs, u64 physical, u64 bytenr,
			 struct extent_buffer **ret)
{
	const u8 *bytes;
	int err;

	if (!fs->no_readahead && !in_hinted_run(&fs->cache, physical))
		tlog_bdev_map_willneed(fs->bdev, physical, fs->nodesize);
	bytes = tlog_bdev_map_read(fs->bdev, fs->nodesize, physical);
	if (!bytes)
		return -EIO;	/* past the end: the reason is recorded */
	err = btrfs_check_tree_block(fs, bytes, bytenr);
	if (err)
		return err;
	*ret = alloc_in_place_buffer(fs, bytenr, bytes);
	return *ret ? 0 : -ENOMEM;
}

static int load_tree_block(struct tlog_fs *fs, u64 bytenr, struct extent_buffer **ret)
{
	u64 physical[TLOG_MAX_STRIPES];
	struct extent_buffer *eb;
	int copies, err = -EIO;

	if (!IS_ALIGNED(bytenr, fs->sectorsize) || bytenr == 0)
		return tlog_error(-EUCLEAN, "tree block address %llu is not aligned",
				  (unsigned long long)bytenr);
	copies = btrfs_map_block(fs, bytenr, fs->nodesize, physical, TLOG_MAX_STRIPES);
	if (copies < 0)
		return copies;

	if (fs->in_place) {
		/* DUP keeps two copies: a bad first copy is not the end. */
		for (int i = 0; i < copies; i++) {
			err = load_in_place(fs, physical[i], bytenr, &eb);
			if (!err)
				break;
		}
		if (err)
			return err;
		eb_cache_insert(&fs->cache, eb);
		*ret = eb;
		return 0;
	}

	eb = alloc_extent_buffer(fs, bytenr);
	if (!eb)
		return -ENOMEM;

	for (int i = 0; i < copies; i++) {
		err = read_tree_block_copy(fs, physical[i], bytenr, eb->data);
		if (!err)
			break;
	}
	if (err) {
		eb_slot_free(&fs->cache, eb);
		return err;
	}
	eb_cache_insert(&fs->cache, eb);
	*ret = eb;
	return 0;
}

/* ---- prefetching ---- */

/* Reads are merged across gaps up to this size, and capped at the second. */
#define PREFETCH_MAX_GAP	(128U << 10)
#define PREFETCH_MAX_READ	(4U << 20)
#define PREFETCH_MAX_BLOCKS	1024
/* Blocks in one scatter read: with the gaps, within IOV_MAX (1024). */
#define PREFETCH_RUN_BLOCKS	512

struct prefetch_block {
	u64 physical;
	u64 bytenr;
};

static int cmp_prefetch_block(const void *a, const void *b)
{
	const struct prefetch_block *x = a, *y = b;

	return x->physical < y->physical ? -1 : x->physical > y->physical;
}

/*
 * Read one run of blocks straight into new buffers (the gaps between them
 * into @gap), verify each, and cache the good ones unreferenced.
 */
static void prefetch_run_read(struct tlog_fs *fs, const struct prefetch_block *blocks,
			      int nr, u8 *gap)
{
	struct extent_buffer *ebs[PREFETCH_RUN_BLOCKS];
	struct iovec iov[2 * PREFETCH_RUN_BLOCKS];
	u64 pos = blocks[0].physical;
	int niov = 0, i;
	bool ok;

	for (i = 0; i < nr; i++) {
		ebs[i] = alloc_extent_buffer(fs, blocks[i].bytenr);
		if (!ebs[i])
			break;
		if (blocks[i].physical > pos) {
			iov[niov].iov_base = gap;
			iov[niov++].iov_len = blocks[i].physical - pos;
		}
		iov[niov].iov_base = ebs[i]->data;
		iov[niov++].iov_len = fs->nodesize;
		pos = blocks[i].physical + fs->nodesize;
	}
	nr = i;
	ok = niov > 0 && tlog_bdev_readv(fs->bdev, iov, niov, blocks[0].physical) == 0;
	for (i = 0; i < nr; i++) {
		/* a bad block is left for the real read to report */
		if (!ok || eb_cache_lookup(&fs->cache, ebs[i]->start) ||
		    btrfs_check_tree_block(fs, ebs[i]->data, ebs[i]->start)) {
			eb_slot_free(&fs->cache, ebs[i]);
			continue;
		}
		ebs[i]->refs = 0;
		eb_cache_insert(&fs->cache, ebs[i]);
		list_add_tail(&ebs[i]->lru, &fs->cache.lru);
	}
}

/*
 * The run of blocks read together from @first: physically close enough to
 * read across the gaps, and not too large.  Returns its physical end and
 * the first block after it in *@last.
 */
static u64 prefetch_run(const struct tlog_fs *fs, const struct prefetch_block *blocks,
			int nr, int first, int *last)
{
	u64 start = blocks[first].physical, end = start + fs->nodesize;
	int i = first + 1;

	while (i < nr && i - first < PREFETCH_RUN_BLOCKS && blocks[i].physical >= end &&
	       blocks[i].physical - end <= PREFETCH_MAX_GAP &&
	       blocks[i].physical + fs->nodesize - start <= PREFETCH_MAX_READ) {
		end = blocks[i].physical + fs->nodesize;
		i++;
	}
	*last = i;
	return end;
}

int btrfs_prefetch_children(struct tlog_fs *fs, const struct extent_buffer *node, int slot,
			    u32 want, const struct btrfs_key *max, bool wait)
{
	u32 nritems = btrfs_header_nritems_eb(node), i;
	struct prefetch_block blocks[PREFETCH_MAX_BLOCKS];
	struct tlog_errsave saved;
	int nr = 0;

	if (fs->no_readahead || slot < 0)
		return slot;
	tlog_error_save(&saved);
	for (i = slot; i < nritems && i - slot < want && nr < PREFETCH_MAX_BLOCKS; i++) {
		u64 bytenr = btrfs_node_blockptr(node, i), phys;
		struct btrfs_key key;

		/* children starting past @max cannot hold what the walk wants */
		btrfs_node_key_to_cpu(node, &key, i);
		if (max && btrfs_comp_cpu_keys(&key, max) > 0)
			break;

		if (eb_cache_lookup(&fs->cache, bytenr))
			continue;
		if (btrfs_map_block(fs, bytenr, fs->nodesize, &phys, 1) != 1)
			continue;
		/*
		 * In place nothing is read here, so the cache does not say
		 * what was asked for already: the windows a walk hints ahead
		 * would each be asked for again when it reaches them, and a
		 * next node's first window again on entering it.  Once is
		 * enough; a block in a run asked for lately is on its way.
		 */
		if (fs->in_place && in_hinted_run(&fs->cache, phys))
			continue;
		blocks[nr].physical = phys;
		blocks[nr].bytenr = bytenr;
		nr++;
	}
	qsort(blocks, nr, sizeof(blocks[0]), cmp_prefetch_block);

	/*
	 * Ask for every run at once, so the device works on them in parallel;
	 * but not for the first one when it is read right away: the hint
	 * would only cost a system call.  In place nothing is read here, so
	 * that one is asked for now, not queued behind the other hints.
	 */
	for (int first = 0, last; first < nr; first = last) {
		u64 end = prefetch_run(fs, blocks, nr, first, &last);

		if (fs->in_place && wait && first == 0)
			tlog_bdev_map_willneed(fs->bdev, blocks[first].physical,
					       end - blocks[first].physical);
		else if (!wait || first > 0)
			tlog_bdev_readahead(fs->bdev, blocks[first].physical,
					    end - blocks[first].physical);
		if (fs->in_place)
			note_hinted_run(&fs->cache, blocks[first].physical, end);
	}
	/* in place, the device reads when the block is first used */
	if (!wait || fs->in_place)
		nr = 0;
	for (int first = 0, last; first < nr; first = last) {
		prefetch_run(fs, blocks, nr, first, &last);
		/* kept: a new 128 KiB allocation is an mmap and fresh pages each time */
		if (!fs->cache.prefetch_gap)
			fs->cache.prefetch_gap = malloc(PREFETCH_MAX_GAP);
		if (!fs->cache.prefetch_gap)
			break;
		prefetch_run_read(fs, blocks + first, last - first, fs->cache.prefetch_gap);
	}
	eb_cache_shrink(&fs->cache);
	/* failures here are not the caller's: the real reads report them */
	tlog_error_restore(&saved);
	return i;
}

void btrfs_set_readahead(struct tlog_fs *fs, bool on)
{
	fs->no_readahead = !on;
}

void btrfs_forget_tree_block(struct tlog_fs *fs, u64 bytenr)
{
	struct extent_buffer *eb = eb_cache_lookup(&fs->cache, bytenr);

	if (!eb)
		return;
	btrfs_clear_buffer_dirty(fs, eb);
	/* out of the hash, it would miss the copying out when the device asks */
	if (eb->in_place && eb->refs > 0)
		copy_out_in_place(fs, eb);
	eb_cache_unhash(&fs->cache, eb);
	fs->cache.nr_cached--;
	if (eb->refs == 0) {
		list_del_init(&eb->lru);
		eb_slot_free(&fs->cache, eb);
	} else {
		/* someone still looks at it: free it with the last reference */
		eb->stale = true;
	}
}

struct extent_buffer *btrfs_new_tree_block(struct tlog_fs *fs, u64 bytenr,
					   const struct extent_buffer *from)
{
	struct extent_buffer *eb;

	btrfs_forget_tree_block(fs, bytenr);
	eb = alloc_extent_buffer(fs, bytenr);
	if (!eb)
		return NULL;
	/* a copy overwrites every byte: zeroing first would be a second pass */
	if (from)
		memcpy(eb->data, from->data, eb->len);
	else
		memset(eb->data, 0, eb->len);
	eb_cache_insert(&fs->cache, eb);
	btrfs_mark_buffer_dirty(fs, eb);
	return eb;
}

void btrfs_mark_buffer_dirty(struct tlog_fs *fs, struct extent_buffer *eb)
{
	if (eb->dirty)
		return;
	eb->dirty = true;
	extent_buffer_get(eb);
	list_add_tail(&eb->dirty_list, &fs->dirty_blocks);
}

void btrfs_mark_log_buffer_dirty(struct tlog_fs *fs, struct extent_buffer *eb)
{
	btrfs_mark_buffer_dirty(fs, eb);
	list_del_init(&eb->dirty_list);
	list_add_tail(&eb->dirty_list, &fs->log_dirty_blocks);
}

void btrfs_clear_buffer_dirty(struct tlog_fs *fs, struct extent_buffer *eb)
{
	(void)fs;
	if (!eb->dirty)
		return;
	eb->dirty = false;
	list_del_init(&eb->dirty_list);
	free_extent_buffer(eb);
}

const struct extent_buffer *btrfs_find_cached_block(struct tlog_fs *fs, u64 bytenr)
{
	return eb_cache_lookup(&fs->cache, bytenr);
}

int read_tree_block(struct tlog_fs *fs, u64 bytenr, int level, u64 generation,
		    struct extent_buffer **ret)
{
	struct extent_buffer *eb;
	const struct btrfs_header *h;
	int err;

	if (fs->in_place && tlog_bdev_map_revoked(fs->bdev))
		stop_reading_in_place(fs);
	if (fs->image_changed)
		return tlog_error(-ESTALE, "%s changed while it was read", fs->bdev->name);
	eb = eb_cache_lookup(&fs->cache, bytenr);
	if (eb) {
		fs->cache.hits++;
		if (eb->refs++ == 0)
			list_del_init(&eb->lru);
	} else {
		fs->cache.misses++;
		err = load_tree_block(fs, bytenr, &eb);
		if (err)
			return err;
	}

	h = eb_header(eb);
	if (level >= 0 && btrfs_header_level(h) != level) {
		free_extent_buffer(eb);
		return tlog_error(-EUCLEAN, "tree block %llu has level %u, expected %d",
				  (unsigned long long)bytenr, btrfs_header_level(h), level);
	}
	if (generation && btrfs_header_generation(h) != generation) {
		free_extent_buffer(eb);
		return tlog_error(-EUCLEAN,
				  "parent transid verify failed on %llu: wanted %llu, found %llu",
				  (unsigned long long)bytenr, (unsigned long long)generation,
				  (unsigned long long)btrfs_header_generation(h));
	}
	*ret = eb;
	return 0;
}
