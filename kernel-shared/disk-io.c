// SPDX-License-Identifier: GPL-2.0-only
/*
 * Opening an image: superblock selection and validation, the tree block
 * cache, and reading tree blocks with their checks.
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
#include "csum.h"
#include "ctree.h"
#include "disk-io.h"
#include "transaction.h"
#include "tree-log.h"
#include "errctx.h"
#include "volumes.h"

#define TLOG_SUPER_FLAGS_KNOWN (BTRFS_SUPER_FLAG_WRITTEN |		\
				BTRFS_SUPER_FLAG_RELOC |		\
				BTRFS_SUPER_FLAG_ERROR |		\
				BTRFS_SUPER_FLAG_SEEDING |		\
				BTRFS_SUPER_FLAG_METADUMP |		\
				BTRFS_SUPER_FLAG_METADUMP_V2 |		\
				BTRFS_SUPER_FLAG_CHANGING_FSID |	\
				BTRFS_SUPER_FLAG_CHANGING_FSID_V2)

/* Default block cache: this many bytes of unreferenced tree blocks. */
#define TLOG_CACHE_BYTES (256ULL << 20)

static bool is_power_of_2(u64 n)
{
	return n && !(n & (n - 1));
}

/* ---- superblock ---- */

int btrfs_read_super_raw(struct tlog_bdev *bdev, int mirror,
			 struct btrfs_super_block *sb)
{
	u64 off = btrfs_sb_offset(mirror);
	int ret;

	if (off + BTRFS_SUPER_INFO_SIZE > bdev->size)
		return -ENOENT;
	ret = tlog_bdev_read(bdev, sb, BTRFS_SUPER_INFO_SIZE, off);
	if (ret)
		return ret;
	if (btrfs_super_block_magic(sb) != BTRFS_MAGIC)
		return -TLOG_ENOTBTRFS;
	return 0;
}

bool btrfs_super_csum_ok(const struct btrfs_super_block *sb)
{
	u16 type = btrfs_super_block_csum_type(sb);
	u8 csum[BTRFS_CSUM_SIZE];

	if (!btrfs_csum_type_supported(type))
		return false;
	btrfs_csum_data(type, (const u8 *)sb + BTRFS_CSUM_SIZE,
			BTRFS_SUPER_INFO_SIZE - BTRFS_CSUM_SIZE, csum);
	return memcmp(csum, sb->csum, btrfs_csum_type_size(type)) == 0;
}

/*
 * The device size decides where superblock copies go and where chunks may
 * lie: a wrong one makes a writer skip copies it must write, or write
 * past the image.  The kernel refuses a filesystem whose total_bytes is
 * below its devices' sizes, and a device item that is used past its size.
 */
static int validate_super_sizes(const struct btrfs_super_block *sb)
{
	const struct btrfs_dev_item *dev = &sb->dev_item;
	u64 dev_total = btrfs_dev_item_total_bytes(dev);

	if (dev_total < BTRFS_SUPER_INFO_OFFSET + BTRFS_SUPER_INFO_SIZE)
		return tlog_error(-EUCLEAN, "device size %llu (dev_item.total_bytes) cannot hold the superblock",
				  (unsigned long long)dev_total);
	if (btrfs_dev_item_bytes_used(dev) > dev_total)
		return tlog_error(-EUCLEAN, "device uses %llu bytes of its %llu (dev_item)",
				  (unsigned long long)btrfs_dev_item_bytes_used(dev),
				  (unsigned long long)dev_total);
	if (btrfs_super_block_total_bytes(sb) < dev_total)
		return tlog_error(-EUCLEAN, "total_bytes %llu is below the device size %llu",
				  (unsigned long long)btrfs_super_block_total_bytes(sb),
				  (unsigned long long)dev_total);
	if (btrfs_super_block_bytes_used(sb) > btrfs_super_block_total_bytes(sb))
		return tlog_error(-EUCLEAN, "bytes_used %llu exceeds total_bytes %llu",
				  (unsigned long long)btrfs_super_block_bytes_used(sb),
				  (unsigned long long)btrfs_super_block_total_bytes(sb));
	return 0;
}

int btrfs_validate_super(const struct btrfs_super_block *sb, int mirror)
{
	u32 sectorsize = btrfs_super_block_sectorsize(sb);
	u32 nodesize = btrfs_super_block_nodesize(sb);
	u64 incompat = btrfs_super_block_incompat_flags(sb);
	u16 csum_type = btrfs_super_block_csum_type(sb);
	const u8 *fsid;

	if (btrfs_super_block_magic(sb) != BTRFS_MAGIC)
		return tlog_error(-TLOG_ENOTBTRFS, "no btrfs magic");
	if (!btrfs_csum_type_supported(csum_type))
		return tlog_error(-EOPNOTSUPP, "unsupported checksum type %u", csum_type);
	if (!btrfs_super_csum_ok(sb))
		return tlog_error(-EUCLEAN, "superblock checksum mismatch");
	if (btrfs_super_block_bytenr(sb) != btrfs_sb_offset(mirror))
		return tlog_error(-EUCLEAN, "superblock bytenr %llu is not its offset %llu",
				  (unsigned long long)btrfs_super_block_bytenr(sb),
				  (unsigned long long)btrfs_sb_offset(mirror));
	if (!is_power_of_2(sectorsize) || sectorsize < 4096 || sectorsize > 65536)
		return tlog_error(-EUCLEAN, "invalid sectorsize %u", sectorsize);
	if (!is_power_of_2(nodesize) || nodesize < sectorsize ||
	    nodesize > BTRFS_MAX_NODESIZE)
		return tlog_error(-EUCLEAN, "invalid nodesize %u", nodesize);
	if (btrfs_super_block_leafsize(sb) != nodesize)
		return tlog_error(-EUCLEAN, "leafsize %u differs from nodesize %u",
				  btrfs_super_block_leafsize(sb), nodesize);
	if (!is_power_of_2(btrfs_super_block_stripesize(sb)))
		return tlog_error(-EUCLEAN, "invalid stripesize %u",
				  btrfs_super_block_stripesize(sb));
	if (btrfs_super_block_root_level(sb) >= BTRFS_MAX_LEVEL ||
	    btrfs_super_block_chunk_root_level(sb) >= BTRFS_MAX_LEVEL ||
	    btrfs_super_block_log_root_level(sb) >= BTRFS_MAX_LEVEL)
		return tlog_error(-EUCLEAN, "tree root level out of range");
	if (btrfs_super_block_root(sb) % sectorsize ||
	    btrfs_super_block_chunk_root(sb) % sectorsize ||
	    btrfs_super_block_log_root(sb) % sectorsize)
		return tlog_error(-EUCLEAN, "unaligned tree root address");
	if (btrfs_super_block_root(sb) == 0 || btrfs_super_block_chunk_root(sb) == 0)
		return tlog_error(-EUCLEAN, "root or chunk root address is zero");
	if (btrfs_super_block_num_devices(sb) == 0)
		return tlog_error(-EUCLEAN, "num_devices is zero");
	if (btrfs_super_block_num_devices(sb) > 1)
		return tlog_error(-EOPNOTSUPP, "filesystem has %llu devices; only single-device images are supported",
				  (unsigned long long)btrfs_super_block_num_devices(sb));
	if (btrfs_super_block_bytes_used(sb) < 6ULL * nodesize)
		return tlog_error(-EUCLEAN, "bytes_used %llu is below 6 nodes",
				  (unsigned long long)btrfs_super_block_bytes_used(sb));
	if (btrfs_super_block_sys_chunk_array_size(sb) > BTRFS_SYSTEM_CHUNK_ARRAY_SIZE)
		return tlog_error(-EUCLEAN, "sys_chunk_array_size %u too large",
				  btrfs_super_block_sys_chunk_array_size(sb));
	if (btrfs_super_block_flags(sb) & ~TLOG_SUPER_FLAGS_KNOWN)
		return tlog_error(-EOPNOTSUPP, "unknown superblock flags 0x%llx",
				  (unsigned long long)btrfs_super_block_flags(sb));
	if (btrfs_super_block_flags(sb) & (BTRFS_SUPER_FLAG_CHANGING_FSID |
					   BTRFS_SUPER_FLAG_CHANGING_FSID_V2))
		return tlog_error(-EOPNOTSUPP, "an fsid change was interrupted on this filesystem");
	if (incompat & ~TLOG_SUPPORTED_INCOMPAT)
		return tlog_error(-EOPNOTSUPP, "unsupported incompat features 0x%llx",
				  (unsigned long long)(incompat & ~TLOG_SUPPORTED_INCOMPAT));
	fsid = (incompat & BTRFS_FEATURE_INCOMPAT_METADATA_UUID) ?
		sb->metadata_uuid : sb->fsid;
	if (memcmp(fsid, sb->dev_item.fsid, BTRFS_FSID_SIZE) != 0)
		return tlog_error(-EUCLEAN, "dev_item fsid does not match the filesystem");
	return validate_super_sizes(sb);
}

/* Read and validate copy @mirror; the reason of a failure is recorded. */
static int load_super_copy(struct tlog_bdev *bdev, int mirror, struct btrfs_super_block *sb)
{
	int ret = btrfs_read_super_raw(bdev, mirror, sb);

	if (ret == 0)
		return btrfs_validate_super(sb, mirror);
	if (ret == -TLOG_ENOTBTRFS)
		return tlog_error(ret, "no btrfs magic");
	if (ret == -ENOENT)
		return tlog_error(ret, "superblock copy %d lies past the end of the device", mirror);
	return ret;
}

/*
 * The newest valid copy other than the primary, for an image whose
 * primary is damaged.  Returns the copy or -1.
 */
static int load_backup_super(struct tlog_bdev *bdev, struct btrfs_super_block *sb)
{
	struct btrfs_super_block tmp;
	u64 best_gen = 0;
	int best = -1;

	for (int i = 1; i < BTRFS_SUPER_MIRROR_MAX; i++) {
		if (load_super_copy(bdev, i, &tmp))
			continue;
		if (best < 0 || btrfs_super_block_generation(&tmp) > best_gen) {
			best = i;
			best_gen = btrfs_super_block_generation(&tmp);
			memcpy(sb, &tmp, sizeof(tmp));
		}
	}
	return best;
}

int btrfs_load_super(struct tlog_bdev *bdev, int mirror,
		     struct btrfs_super_block *sb, int *used, char *damage, size_t size)
{
	char why[sizeof(((struct tlog_fs *)0)->primary_damage)];
	int ret, backup;

	if (damage && size)
		damage[0] = '\0';
	if (bdev->size < BTRFS_SUPER_INFO_OFFSET + BTRFS_SUPER_INFO_SIZE)
		return tlog_error(-TLOG_ENOTBTRFS,
				  "image is too small to hold a superblock (%llu bytes)",
				  (unsigned long long)bdev->size);
	if (mirror >= 0) {
		ret = load_super_copy(bdev, mirror, sb);
		if (ret)
			return tlog_error_wrap(ret, mirror ? "superblock copy" : "primary superblock");
		*used = mirror;
		return 0;
	}
	/* the kernel reads the primary alone: it is the filesystem's word */
	ret = load_super_copy(bdev, 0, sb);
	if (ret == 0) {
		*used = 0;
		return 0;
	}
	snprintf(why, sizeof(why), "%s", tlog_error_get() ? tlog_error_get() : strerror(-ret));
	/* no magic anywhere is a foreign image, not a damaged one */
	backup = ret == -TLOG_ENOTBTRFS ? -1 : load_backup_super(bdev, sb);
	if (backup < 0)
		return tlog_error(ret, "%s", why);
	if (damage)
		snprintf(damage, size, "%s", why);
	*used = backup;
	tlog_error_clear();
	return 0;
}

/* ---- tree block verification ---- */

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
		if (ptr == 0 || ptr % fs->sectorsize)
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

/* ---- block cache ---- */

static size_t eb_hash(const struct eb_cache *cache, u64 bytenr)
{
	return (size_t)((bytenr >> 12) * 0x9E3779B97F4A7C15ULL >> 20) % cache->hash_size;
}

static int eb_cache_init(struct eb_cache *cache, u32 nodesize)
{
	cache->max_cached = TLOG_CACHE_BYTES / nodesize;
	cache->hash_size = 16411;
	cache->hash = calloc(cache->hash_size, sizeof(*cache->hash));
	INIT_LIST_HEAD(&cache->lru);
	return cache->hash ? 0 : -ENOMEM;
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
	size_t h = eb_hash(cache, eb->start);

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
		free(eb);
	}
}

static void eb_cache_destroy(struct eb_cache *cache)
{
	if (!cache->hash)
		return;
	for (size_t i = 0; i < cache->hash_size; i++) {
		struct extent_buffer *eb = cache->hash[i];

		while (eb) {
			struct extent_buffer *next = eb->hash_next;

			free(eb);
			eb = next;
		}
	}
	free(cache->hash);
	cache->hash = NULL;
}

void free_extent_buffer(struct extent_buffer *eb)
{
	struct tlog_fs *fs;

	if (!eb)
		return;
	if (--eb->refs > 0)
		return;
	if (eb->stale) {
		free(eb);
		return;
	}
	/* The buffer stays cached; it only becomes evictable. */
	fs = *(struct tlog_fs **)(eb->data + eb->len);
	list_add_tail(&eb->lru, &fs->cache.lru);
	eb_cache_shrink(&fs->cache);
}

/* A buffer for the block at @bytenr, one reference, not in the cache yet. */
static struct extent_buffer *alloc_extent_buffer(struct tlog_fs *fs, u64 bytenr)
{
	/* The owning fs pointer sits right after the data, for release. */
	struct extent_buffer *eb = malloc(sizeof(*eb) + fs->nodesize + sizeof(struct tlog_fs *));

	if (!eb)
		return NULL;
	eb->start = bytenr;
	eb->len = fs->nodesize;
	eb->refs = 1;
	eb->dirty = false;
	eb->stale = false;
	eb->hash_next = NULL;
	INIT_LIST_HEAD(&eb->lru);
	INIT_LIST_HEAD(&eb->dirty_list);
	memcpy(eb->data + eb->len, &fs, sizeof(fs));
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

static int load_tree_block(struct tlog_fs *fs, u64 bytenr, struct extent_buffer **ret)
{
	u64 physical[TLOG_MAX_STRIPES];
	struct extent_buffer *eb;
	int copies, err = -EIO;

	if (bytenr % fs->sectorsize || bytenr == 0)
		return tlog_error(-EUCLEAN, "tree block address %llu is not aligned",
				  (unsigned long long)bytenr);
	copies = btrfs_map_block(fs, bytenr, fs->nodesize, physical, TLOG_MAX_STRIPES);
	if (copies < 0)
		return copies;

	eb = alloc_extent_buffer(fs, bytenr);
	if (!eb)
		return -ENOMEM;

	/* DUP keeps two copies: a bad first copy is not the end. */
	for (int i = 0; i < copies; i++) {
		err = read_tree_block_copy(fs, physical[i], bytenr, eb->data);
		if (!err)
			break;
	}
	if (err) {
		free(eb);
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
			free(ebs[i]);
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

void btrfs_prefetch_children(struct tlog_fs *fs, const struct extent_buffer *node, int slot,
			     const struct btrfs_key *max, bool wait)
{
	u32 nritems = btrfs_header_nritems_eb(node);
	struct prefetch_block blocks[PREFETCH_MAX_BLOCKS];
	struct tlog_errsave saved;
	u8 *gap = NULL;
	int nr = 0;

	tlog_error_save(&saved);
	for (u32 i = slot; i < nritems && nr < PREFETCH_MAX_BLOCKS; i++) {
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
		blocks[nr].physical = phys;
		blocks[nr].bytenr = bytenr;
		nr++;
	}
	qsort(blocks, nr, sizeof(blocks[0]), cmp_prefetch_block);

	/* Ask for every run at once, so the device works on them in parallel. */
	for (int first = 0, last; first < nr; first = last) {
		u64 end = prefetch_run(fs, blocks, nr, first, &last);

		tlog_bdev_readahead(fs->bdev, blocks[first].physical, end - blocks[first].physical);
	}
	if (!wait)
		nr = 0;
	for (int first = 0, last; first < nr; first = last) {
		prefetch_run(fs, blocks, nr, first, &last);
		if (!gap)
			gap = malloc(PREFETCH_MAX_GAP);
		if (!gap)
			break;
		prefetch_run_read(fs, blocks + first, last - first, gap);
	}
	free(gap);
	eb_cache_shrink(&fs->cache);
	/* failures here are not the caller's: the real reads report them */
	tlog_error_restore(&saved);
}

void btrfs_forget_tree_block(struct tlog_fs *fs, u64 bytenr)
{
	struct extent_buffer *eb = eb_cache_lookup(&fs->cache, bytenr);

	if (!eb)
		return;
	btrfs_clear_buffer_dirty(fs, eb);
	eb_cache_unhash(&fs->cache, eb);
	fs->cache.nr_cached--;
	if (eb->refs == 0) {
		list_del_init(&eb->lru);
		free(eb);
	} else {
		/* someone still looks at it: free it with the last reference */
		eb->stale = true;
	}
}

struct extent_buffer *btrfs_new_tree_block(struct tlog_fs *fs, u64 bytenr)
{
	struct extent_buffer *eb;

	btrfs_forget_tree_block(fs, bytenr);
	eb = alloc_extent_buffer(fs, bytenr);
	if (!eb)
		return NULL;
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

void btrfs_clear_buffer_dirty(struct tlog_fs *fs, struct extent_buffer *eb)
{
	(void)fs;
	if (!eb->dirty)
		return;
	eb->dirty = false;
	list_del_init(&eb->dirty_list);
	free_extent_buffer(eb);
}

int tlog_fs_create_memory(u32 nodesize, u32 sectorsize, u16 csum_type, struct tlog_fs **ret)
{
	struct tlog_fs *fs = calloc(1, sizeof(*fs));
	int err;

	if (!fs)
		return -ENOMEM;
	chunk_map_init(&fs->chunks);
	INIT_LIST_HEAD(&fs->cache.lru);
	INIT_LIST_HEAD(&fs->dirty_blocks);
	fs->nodesize = nodesize;
	fs->sectorsize = sectorsize;
	fs->csum_type = csum_type;
	fs->csum_size = btrfs_csum_type_size(csum_type);
	fs->generation = 1;
	err = eb_cache_init(&fs->cache, nodesize);
	if (err) {
		free(fs);
		return err;
	}
	/* nothing behind the cache: it must never drop a block */
	fs->cache.max_cached = SIZE_MAX;
	*ret = fs;
	return 0;
}

/*
 * Every copy that ends before the device's last byte is written, as the
 * kernel writes them: a copy left behind would be found by a rescue tool
 * with an older, valid-looking filesystem in it.  A copy the image is too
 * short for is an error, never a quiet skip.
 */
int btrfs_write_all_supers(struct tlog_fs *fs)
{
	struct btrfs_super_block *sb = &fs->super;
	u64 total = btrfs_dev_item_total_bytes(&sb->dev_item);
	int err = 0;

	if (total < BTRFS_SUPER_INFO_OFFSET + BTRFS_SUPER_INFO_SIZE)
		return tlog_error(-EUCLEAN, "device size %llu leaves no room for the superblock",
				  (unsigned long long)total);
	for (int mirror = 0; mirror < BTRFS_SUPER_MIRROR_MAX; mirror++) {
		u64 off = btrfs_sb_offset(mirror);

		if (off + BTRFS_SUPER_INFO_SIZE >= total && mirror > 0)
			break;
		if (off + BTRFS_SUPER_INFO_SIZE > fs->bdev->size) {
			err = tlog_error(-EIO, "superblock copy %d at %llu lies past the end of %s",
					 mirror, (unsigned long long)off, fs->bdev->name);
			break;
		}
		btrfs_set_super_block_bytenr(sb, off);
		btrfs_csum_data(fs->csum_type, (u8 *)sb + BTRFS_CSUM_SIZE,
				BTRFS_SUPER_INFO_SIZE - BTRFS_CSUM_SIZE, sb->csum);
		err = tlog_bdev_write(fs->bdev, sb, BTRFS_SUPER_INFO_SIZE, off);
		if (err)
			break;
	}
	btrfs_set_super_block_bytenr(sb, btrfs_sb_offset(fs->super_mirror));
	return err;
}

const struct extent_buffer *btrfs_find_cached_block(struct tlog_fs *fs, u64 bytenr)
{
	return eb_cache_lookup(&fs->cache, bytenr);
}

int read_tree_block(struct tlog_fs *fs, u64 bytenr, int level, u64 generation,
		    struct extent_buffer **ret)
{
	struct extent_buffer *eb = eb_cache_lookup(&fs->cache, bytenr);
	const struct btrfs_header *h;
	int err;

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

/* ---- open / close ---- */

static struct btrfs_root *alloc_root(struct tlog_fs *fs, u64 objectid)
{
	struct btrfs_root *root = calloc(1, sizeof(*root));

	if (!root)
		return NULL;
	root->fs = fs;
	root->root_key.objectid = objectid;
	root->root_key.type = BTRFS_ROOT_ITEM_KEY;
	return root;
}

static int setup_fs_from_super(struct tlog_fs *fs)
{
	const struct btrfs_super_block *sb = &fs->super;

	fs->generation = btrfs_super_block_generation(sb);
	fs->nodesize = btrfs_super_block_nodesize(sb);
	fs->sectorsize = btrfs_super_block_sectorsize(sb);
	fs->csum_type = btrfs_super_block_csum_type(sb);
	fs->csum_size = btrfs_csum_type_size(fs->csum_type);
	fs->incompat = btrfs_super_block_incompat_flags(sb);
	fs->compat_ro = btrfs_super_block_compat_ro_flags(sb);
	memcpy(fs->fsid, sb->fsid, BTRFS_FSID_SIZE);
	memcpy(fs->header_fsid,
	       (fs->incompat & BTRFS_FEATURE_INCOMPAT_METADATA_UUID) ?
	       sb->metadata_uuid : sb->fsid, BTRFS_FSID_SIZE);
	return eb_cache_init(&fs->cache, fs->nodesize);
}

static int setup_tree_roots(struct tlog_fs *fs)
{
	const struct btrfs_super_block *sb = &fs->super;
	struct extent_buffer *eb;
	int ret;

	fs->chunk_root = alloc_root(fs, BTRFS_CHUNK_TREE_OBJECTID);
	fs->tree_root = alloc_root(fs, BTRFS_ROOT_TREE_OBJECTID);
	if (!fs->chunk_root || !fs->tree_root)
		return -ENOMEM;

	fs->chunk_root->bytenr = btrfs_super_block_chunk_root(sb);
	fs->chunk_root->root_key.offset = 0;
	fs->chunk_root->level = btrfs_super_block_chunk_root_level(sb);
	fs->chunk_root->generation = btrfs_super_block_chunk_root_generation(sb);
	ret = read_tree_block(fs, fs->chunk_root->bytenr, fs->chunk_root->level,
			      fs->chunk_root->generation, &eb);
	if (ret)
		return tlog_error_wrap(ret, "cannot read chunk root");
	memcpy(fs->chunk_tree_uuid, eb_header(eb)->chunk_tree_uuid, BTRFS_UUID_SIZE);
	free_extent_buffer(eb);
	ret = btrfs_read_chunk_tree(fs);
	if (ret)
		return tlog_error_wrap(ret, "cannot read chunk tree");

	fs->tree_root->bytenr = btrfs_super_block_root(sb);
	fs->tree_root->level = btrfs_super_block_root_level(sb);
	fs->tree_root->generation = fs->generation;
	ret = read_tree_block(fs, fs->tree_root->bytenr, fs->tree_root->level,
			      fs->tree_root->generation, &eb);
	if (ret)
		return tlog_error_wrap(ret, "cannot read root tree");
	free_extent_buffer(eb);

	if (btrfs_super_block_log_root(sb)) {
		fs->log_root_tree = alloc_root(fs, BTRFS_TREE_LOG_OBJECTID);
		if (!fs->log_root_tree)
			return -ENOMEM;
		tlog_log_open(fs, fs->log_root_tree);
	}
	return 0;
}

/*
 * Writers work on the image as the kernel would mount it.  One that is
 * shorter than its device size (a cut-off copy) would be grown by the
 * first write near its end; one whose primary superblock is damaged would
 * have a backup copy, which never records the log, written over every
 * copy.  Readers only get told (fs->truncated, fs->primary_damage).
 */
static int check_image_size(struct tlog_fs *fs, const struct tlog_open_opts *opts)
{
	u64 dev_size = btrfs_dev_item_total_bytes(&fs->super.dev_item);

	fs->truncated = fs->bdev->size < dev_size;
	if (!opts->writable)
		return 0;
	if (fs->primary_damage[0] && opts->super_mirror < 0)
		return tlog_error(-EROFS, "the primary superblock is damaged: %s; choose copy %d with --super %d to write from it",
				  fs->primary_damage, fs->super_mirror, fs->super_mirror);
	if (fs->truncated)
		return tlog_error(-EROFS, "the image is %llu bytes, shorter than the %llu bytes of its device item: truncated",
				  (unsigned long long)fs->bdev->size, (unsigned long long)dev_size);
	return 0;
}

int tlog_open_bdev(struct tlog_bdev *bdev, const struct tlog_open_opts *opts,
		   struct tlog_fs **ret)
{
	struct tlog_fs *fs;
	int err;

	tlog_error_clear();
	if (opts->writable && !bdev->writable)
		return tlog_error(-EROFS, "%s is open read-only", bdev->name);
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	chunk_map_init(&fs->chunks);
	INIT_LIST_HEAD(&fs->cache.lru);
	INIT_LIST_HEAD(&fs->dirty_blocks);
	fs->bdev = tlog_bdev_get(bdev);
	if (opts->fault_mode) {
		err = tlog_bdev_wrap_fault(fs->bdev, opts->fault_mode, opts->fault_nth, &fs->bdev);
		if (err) {
			tlog_bdev_close(bdev);
			fs->bdev = NULL;
			goto fail;
		}
	}
	err = btrfs_load_super(fs->bdev, opts->super_mirror, &fs->super, &fs->super_mirror,
			       fs->primary_damage, sizeof(fs->primary_damage));
	if (err)
		goto fail;
	err = check_image_size(fs, opts);
	if (err)
		goto fail;
	err = setup_fs_from_super(fs);
	if (err)
		goto fail;
	err = btrfs_read_sys_array(fs, &fs->chunks);
	if (err)
		goto fail;
	if (!opts->skip_chunk_tree) {
		err = setup_tree_roots(fs);
		if (err)
			goto fail;
	}
	*ret = fs;
	return 0;
fail:
	tlog_close(fs);
	return err;
}

int tlog_open(const char *path, const struct tlog_open_opts *opts, struct tlog_fs **ret)
{
	struct tlog_bdev *bdev;
	int err;

	tlog_error_clear();
	err = tlog_bdev_open_file(path, opts->writable ? TLOG_BDEV_RDWR : TLOG_BDEV_RDONLY, &bdev);
	if (err)
		return err;
	err = tlog_open_bdev(bdev, opts, ret);
	/* the filesystem holds its own reference when it opened */
	tlog_bdev_close(bdev);
	return err;
}

static void free_root_list(struct btrfs_root *root)
{
	while (root) {
		struct btrfs_root *next = root->next;

		free(root);
		root = next;
	}
}

void tlog_close(struct tlog_fs *fs)
{
	if (!fs)
		return;
	if (fs->overlay)
		tlog_trans_abort(fs->overlay);
	while (!list_empty(&fs->dirty_blocks))
		btrfs_clear_buffer_dirty(fs, list_first_entry(&fs->dirty_blocks,
							      struct extent_buffer, dirty_list));
	free_root_list(fs->roots);
	free(fs->tree_root);
	free(fs->chunk_root);
	free(fs->log_root_tree);
	eb_cache_destroy(&fs->cache);
	chunk_map_release(&fs->chunks);
	tlog_bdev_close(fs->bdev);
	free(fs->scratch);
	free(fs);
}
