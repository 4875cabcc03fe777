// SPDX-License-Identifier: GPL-2.0-only
/*
 * Data on disk and its checksums in the csum tree (as the kernel's
 * file-item.c keeps them): one checksum per sector, in items keyed
 * (EXTENT_CSUM, EXTENT_CSUM, bytenr) that never overlap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "blockdev.h"
#include "csum.h"
#include "errctx.h"
#include "file-item.h"
#include "misc.h"
#include "root-tree.h"
#include "transaction.h"
#include "tree-checker.h"
#include "volumes.h"

/* Sectors per csum item, as the kernel caps them, and small enough for any leaf. */
static u32 max_csums_per_item(const struct tlog_fs *fs)
{
	u32 n = (btrfs_leaf_data_size(fs->nodesize) - 50) / fs->csum_size - 1;

	return n < 4096 ? n : 4096;
}

static int csum_root(struct tlog_trans *trans, struct btrfs_root **ret)
{
	return btrfs_read_root(trans->fs, BTRFS_CSUM_TREE_OBJECTID, ret);
}

/*
 * The first piece of [bytenr, bytenr + len) that lies in one chunk, in
 * *@piece, and where each copy of it is on the device; returns how many
 * copies there are.
 */
static int map_data_piece(struct tlog_fs *fs, u64 bytenr, u64 len, u64 *physical, u64 *piece)
{
	const struct map_lookup *m = chunk_map_find(&fs->chunks, bytenr);

	*piece = len;
	if (m && m->logical + m->length - bytenr < *piece)
		*piece = m->logical + m->length - bytenr;
	return btrfs_map_block(fs, bytenr, *piece, physical, TLOG_MAX_STRIPES);
}

int btrfs_write_data(struct tlog_trans *trans, u64 bytenr, const void *buf, size_t len)
{
	struct tlog_fs *fs = trans->fs;
	const u8 *p = buf;

	while (len) {
		u64 physical[TLOG_MAX_STRIPES], piece;
		int copies = map_data_piece(fs, bytenr, len, physical, &piece);

		if (copies < 0)
			return copies;
		for (int i = 0; i < copies; i++) {
			int err = tlog_bdev_write(fs->bdev, p, piece, physical[i]);

			if (err)
				return err;
		}
		p += piece;
		bytenr += piece;
		len -= piece;
	}
	return 0;
}

#define CLONE_ALIGN	4096ULL

/* Where the 4 KiB blocks of a piece start and how many bytes they cover. */
struct clone_span {
	u64 head;		/* bytes before the first whole block, written */
	u64 len;		/* bytes cloned; 0 when nothing can be */
};

/*
 * The whole blocks of a piece of @len bytes whose source is at @src_off,
 * in a source of @src_size bytes: a clone needs the source and every copy
 * aligned alike, else the piece is written whole; and it stops at the
 * last whole block of the source (the zeros that pad an extent past the
 * end of the file are not the source's, and a clone may not reach past
 * its end).
 */
static struct clone_span clone_span_of(u64 src_off, u64 len, u64 src_size, const u64 *physical,
				       int copies)
{
	struct clone_span span = { .head = (CLONE_ALIGN - src_off % CLONE_ALIGN) % CLONE_ALIGN };

	if (src_off < src_size && src_size - src_off < len)
		len = src_size - src_off;
	if (src_off >= src_size || span.head >= len)
		return (struct clone_span){ 0, 0 };
	for (int i = 0; i < copies; i++)
		if ((physical[i] + span.head) % CLONE_ALIGN)
			return (struct clone_span){ 0, 0 };
	span.len = (len - span.head) / CLONE_ALIGN * CLONE_ALIGN;
	return span;
}

/*
 * One copy of a piece: the head and tail written, the blocks between
 * cloned (or written where the device cannot clone, which *@can_clone
 * then remembers, so that later pieces do not ask again).
 */
static int clone_copy(struct tlog_fs *fs, u64 physical, int src_fd, u64 src_off, const u8 *p,
		      u64 len, struct clone_span span, bool *can_clone, bool *cloned)
{
	u64 tail = span.head + span.len;
	int err = 0;

	*cloned = false;
	if (span.head)
		err = tlog_bdev_write(fs->bdev, p, span.head, physical);
	if (!err && span.len && *can_clone) {
		err = tlog_bdev_clone_from(fs->bdev, src_fd, src_off + span.head, span.len,
					   physical + span.head);
		if (err == -EOPNOTSUPP)
			*can_clone = false;
		else if (!err)
			*cloned = true;
	}
	if ((!err || err == -EOPNOTSUPP) && span.len && !*cloned)
		err = tlog_bdev_write(fs->bdev, p + span.head, span.len, physical + span.head);
	if (!err && tail < len)
		err = tlog_bdev_write(fs->bdev, p + tail, len - tail, physical + tail);
	return err;
}

int btrfs_clone_data(struct tlog_trans *trans, u64 bytenr, int src_fd, u64 src_off,
		     const void *buf, size_t len, u64 *cloned)
{
	struct tlog_fs *fs = trans->fs;
	bool can_clone = src_fd >= 0;
	const u8 *p = buf;
	struct stat st = { 0 };
	u64 done = 0;

	if (can_clone && (fstat(src_fd, &st) < 0 || !S_ISREG(st.st_mode)))
		can_clone = false;

	while (len) {
		u64 physical[TLOG_MAX_STRIPES], piece;
		int copies = map_data_piece(fs, bytenr, len, physical, &piece);
		struct clone_span span;
		bool all_cloned = copies > 0;

		if (copies < 0)
			return copies;
		span = (struct clone_span){ 0, 0 };
		if (can_clone)
			span = clone_span_of(src_off, piece, (u64)st.st_size, physical, copies);
		for (int i = 0; i < copies; i++) {
			bool this_cloned;
			int err = clone_copy(fs, physical[i], src_fd, src_off, p, piece, span,
					     &can_clone, &this_cloned);

			if (err)
				return err;
			all_cloned &= this_cloned;
		}
		if (all_cloned)
			done += span.len;
		p += piece;
		bytenr += piece;
		src_off += piece;
		len -= piece;
	}
	if (cloned)
		*cloned = done;
	return 0;
}

/*
 * Whether the item before the slot a read-only search for @bytenr stopped
 * at (in that leaf: the kernel looks no further) is a csum item that ends
 * just at @bytenr, below the item cap; its key in *@prev.
 */
static bool csum_item_ends_at(const struct tlog_fs *fs, const struct btrfs_path *path,
			      u64 bytenr, struct btrfs_key *prev)
{
	const struct extent_buffer *leaf = path->nodes[0];
	u32 cs = fs->csum_size, size;

	if (path->slots[0] == 0)
		return false;
	btrfs_item_key_to_cpu(leaf, prev, path->slots[0] - 1);
	size = btrfs_item_size(leaf, path->slots[0] - 1);
	return prev->objectid == BTRFS_EXTENT_CSUM_OBJECTID &&
	       prev->type == BTRFS_EXTENT_CSUM_KEY && size % cs == 0 &&
	       prev->offset + (u64)(size / cs) * fs->sectorsize == bytenr &&
	       size / cs < max_csums_per_item(fs);
}

/*
 * Checksums that continue an item go at its end, as the kernel's
 * btrfs_csum_file_blocks puts them: as many as the item cap and its leaf
 * allow, the leaf split first if it has no room for one more.  Data
 * written in pieces that are adjacent on disk, such as a replayed log's
 * extents, so has its checksums in a few large items, not one small item
 * per piece.  @path is the lookup csum_item_ends_at() accepted; the item
 * grows there when nothing on it needs copying, else a search for write
 * finds it again.  *@done: how many of the @sectors went there.  The path
 * is released.
 */
static int extend_csum_item(struct tlog_trans *trans, struct btrfs_root *root,
			    struct btrfs_path *path, const struct btrfs_key *prev,
			    const u8 *csums, u64 sectors, u64 *done)
{
	struct tlog_fs *fs = trans->fs;
	u32 cs = fs->csum_size, size, free;
	u64 n;
	int ret = 0;

	*done = 0;
	if (btrfs_path_takes(trans, root, path, cs)) {
		path->slots[0]--;
	} else {
		btrfs_release_path(path);
		ret = btrfs_search_slot_for_write(trans, root, prev, path, (int)cs);
		if (ret > 0)
			ret = tlog_error(-EUCLEAN, "csum item %llu vanished",
					 (unsigned long long)prev->offset);
	}
	if (ret == 0) {
		size = btrfs_item_size(path->nodes[0], path->slots[0]);
		free = btrfs_leaf_free_space(fs, path->nodes[0]);
		n = max_csums_per_item(fs) - size / cs;
		if (n > free / cs)
			n = free / cs;
		if (n > sectors)
			n = sectors;
		ret = btrfs_extend_item(trans, path, (u32)(n * cs));
	}
	if (ret == 0) {
		memcpy((u8 *)btrfs_item_ptr(path->nodes[0], path->slots[0]) + size, csums, n * cs);
		*done = n;
	}
	btrfs_release_path(path);
	return ret;
}

/*
 * Insert @sectors checksums for @bytenr into @root, in items as large as
 * allowed: the first ones at the end of the item they continue, if any,
 * else in a new item where the lookup for @bytenr stopped (its path still
 * held); the rest in new items.
 */
static int insert_csums_in(struct tlog_trans *trans, struct btrfs_root *root, u64 bytenr,
			   const u8 *csums, u64 sectors)
{
	struct tlog_fs *fs = trans->fs;
	u32 ss = fs->sectorsize, cs = fs->csum_size, per_item = max_csums_per_item(fs);
	struct btrfs_key key = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, bytenr };
	struct btrfs_key prev;
	struct btrfs_path path;
	u64 first = 0, n;
	int err;

	if (sectors == 0)
		return 0;
	btrfs_init_path(&path);
	err = btrfs_search_slot(root, &key, &path);
	if (err <= 0) {
		btrfs_release_path(&path);
		return err < 0 ? err : -EEXIST;
	}
	err = 0;
	/* both helpers below release the path when done with it */
	if (csum_item_ends_at(fs, &path, bytenr, &prev))
		err = extend_csum_item(trans, root, &path, &prev, csums, sectors, &first);
	for (; !err && first < sectors; first += n) {
		key.offset = bytenr + first * ss;
		n = sectors - first < per_item ? sectors - first : per_item;
		if (path.nodes[0])
			err = btrfs_insert_item_at(trans, root, &path, &key, csums + first * cs,
						   (u32)(n * cs));
		else
			err = btrfs_insert_item(trans, root, &key, csums + first * cs,
						(u32)(n * cs));
	}
	btrfs_release_path(&path);
	return err;
}

int btrfs_insert_csums(struct tlog_trans *trans, u64 bytenr, const u8 *csums, u64 sectors)
{
	struct btrfs_root *root;
	int err = csum_root(trans, &root);

	return err ? err : insert_csums_in(trans, root, bytenr, csums, sectors);
}

int btrfs_insert_data_csums(struct tlog_trans *trans, u64 bytenr, const void *data, u64 len)
{
	struct tlog_fs *fs = trans->fs;
	u32 ss = fs->sectorsize;
	u64 sectors = div_round_up(len, ss);
	u8 *buf, sector[65536];
	int err;

	if (ss > sizeof(sector))
		return -EOPNOTSUPP;
	buf = malloc(sectors ? (size_t)sectors * fs->csum_size : 1);
	if (!buf)
		return -ENOMEM;
	for (u64 i = 0; i < sectors; i++) {
		u64 off = i * ss;
		u64 take = len - off < ss ? len - off : ss;
		u8 csum[BTRFS_CSUM_SIZE];

		/* a partial last sector is checksummed as on disk: zero padded */
		memcpy(sector, (const u8 *)data + off, take);
		memset(sector + take, 0, ss - take);
		btrfs_csum_data(fs->csum_type, sector, ss, csum);
		memcpy(buf + i * fs->csum_size, csum, fs->csum_size);
	}
	err = btrfs_insert_csums(trans, bytenr, buf, sectors);
	free(buf);
	return err;
}

/* Decode the csum item at the path, keyed @key, into @found; 1 if the item is none. */
static int decode_csum_at(const struct tlog_fs *fs, const struct btrfs_path *path,
			  struct btrfs_key *key, struct tlog_csum_item *found)
{
	btrfs_item_key_to_cpu(path->nodes[0], key, path->slots[0]);
	if (key->objectid != BTRFS_EXTENT_CSUM_OBJECTID || key->type != BTRFS_EXTENT_CSUM_KEY)
		return 1;
	return btrfs_decode_csum_item(fs, path->nodes[0], path->slots[0], key, found);
}

/*
 * The csum item that starts at or before @pos, if it reaches past @pos;
 * otherwise the first one starting after @pos below @end.  1 if none.
 * found->csums is gone with the path: callers search again to use them.
 */
static int find_csum_item(struct btrfs_root *root, u64 pos, u64 end, struct btrfs_key *key,
			  struct tlog_csum_item *found)
{
	struct btrfs_path path;
	int ret;

	*key = (struct btrfs_key){ BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, pos };
	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, key, &path);
	if (ret > 0 && btrfs_prev_item(root, &path) == 0) {
		ret = decode_csum_at(root->fs, &path, key, found);
		if (ret < 0 || (ret == 0 && found->end > pos)) {
			btrfs_release_path(&path);
			return ret;
		}
		ret = btrfs_next_item(root, &path);
	} else if (ret > 0) {
		/* nothing before: the search slot may be past its leaf */
		ret = btrfs_search_forward(root, key, &path);
	}
	if (ret == 0) {
		ret = decode_csum_at(root->fs, &path, key, found);
		if (ret == 0 && found->start >= end)
			ret = 1;
	}
	found->csums = NULL;
	btrfs_release_path(&path);
	return ret;
}

static int delete_csums_in(struct tlog_trans *trans, struct btrfs_root *root, u64 bytenr,
			   u64 len);

int btrfs_delete_data_csums(struct tlog_trans *trans, u64 bytenr, u64 len)
{
	struct btrfs_root *root;
	int ret = csum_root(trans, &root);

	return ret ? ret : delete_csums_in(trans, root, bytenr, len);
}

static int delete_csums_in(struct tlog_trans *trans, struct btrfs_root *root, u64 bytenr,
			   u64 len)
{
	struct tlog_fs *fs = trans->fs;
	u32 ss = fs->sectorsize, cs = fs->csum_size;
	u64 end = bytenr + len, pos = bytenr;
	int ret = 0;

	while (!ret && pos < end) {
		struct tlog_csum_item found;
		struct btrfs_key key;
		struct btrfs_path path;
		u8 *copy;

		ret = find_csum_item(root, pos, end, &key, &found);
		if (ret)
			break;
		/* keep the parts outside the range: copy, delete, put them back */
		copy = malloc(found.size);
		if (!copy)
			return -ENOMEM;
		btrfs_init_path(&path);
		ret = btrfs_search_slot_for_write(trans, root, &key, &path, -1);
		if (ret == 0) {
			memcpy(copy, btrfs_item_ptr(path.nodes[0], path.slots[0]), found.size);
			ret = btrfs_del_items(trans, root, &path, path.slots[0], 1);
		} else if (ret > 0) {
			ret = -EUCLEAN;
		}
		btrfs_release_path(&path);
		if (!ret && key.offset < bytenr)
			ret = btrfs_insert_item(trans, root, &key, copy,
						(bytenr - key.offset) / ss * cs);
		if (!ret && found.end > end) {
			struct btrfs_key tail = key;

			tail.offset = end;
			ret = btrfs_insert_item(trans, root, &tail,
						copy + (end - key.offset) / ss * cs,
						(found.end - end) / ss * cs);
		}
		free(copy);
		pos = found.end;
	}
	return ret > 0 ? 0 : ret;
}

/*
 * The checksums @src has for [@start, @end) replace @dst's, piece by
 * piece as @src's items hold them (a range @src has none for is left as
 * @dst has it).
 */
static int copy_csums(struct tlog_trans *trans, struct btrfs_root *src, struct btrfs_root *dst,
		      u64 start, u64 end, u64 *copied)
{
	struct tlog_fs *fs = trans->fs;
	u32 ss = fs->sectorsize, cs = fs->csum_size;
	u64 pos = start;
	int ret = 0;

	*copied = 0;
	while (pos < end) {
		struct tlog_csum_item found;
		struct btrfs_key key;
		struct btrfs_path path;
		u64 from, to;
		u8 *copy;

		ret = find_csum_item(src, pos, end, &key, &found);
		if (ret)
			break;
		from = found.start > pos ? found.start : pos;
		to = found.end < end ? found.end : end;
		if (from >= to) {
			ret = tlog_error(-EUCLEAN, "csum item %llu of tree %llu is misaligned",
					 (unsigned long long)key.offset,
					 (unsigned long long)src->root_key.objectid);
			break;
		}
		/* the item's bytes go with the path: keep the piece wanted */
		copy = malloc((to - from) / ss * cs);
		if (!copy)
			return -ENOMEM;
		btrfs_init_path(&path);
		ret = btrfs_search_slot(src, &key, &path);
		if (ret == 0)
			memcpy(copy, (const u8 *)btrfs_item_ptr(path.nodes[0], path.slots[0]) +
				     (from - key.offset) / ss * cs, (to - from) / ss * cs);
		else if (ret > 0)
			ret = -EUCLEAN;
		btrfs_release_path(&path);
		if (!ret)
			ret = delete_csums_in(trans, dst, from, to - from);
		if (!ret)
			ret = insert_csums_in(trans, dst, from, copy, (to - from) / ss);
		free(copy);
		if (ret)
			break;
		*copied += to - from;
		pos = to;
	}
	return ret > 0 ? 0 : ret;
}

int btrfs_copy_csums(struct tlog_trans *trans, struct btrfs_root *src, u64 start, u64 end,
		     u64 *copied)
{
	struct btrfs_root *dst;
	int ret = csum_root(trans, &dst);

	*copied = 0;
	return ret ? ret : copy_csums(trans, src, dst, start, end, copied);
}

int btrfs_log_csums(struct tlog_trans *trans, struct btrfs_root *log, u64 start, u64 end,
		    u64 *copied)
{
	struct btrfs_root *src;
	int ret = csum_root(trans, &src);

	*copied = 0;
	/* the log's own csums of the range go first: none left from an older extent */
	if (!ret)
		ret = delete_csums_in(trans, log, start, end - start);
	return ret ? ret : copy_csums(trans, src, log, start, end, copied);
}
