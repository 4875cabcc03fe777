// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reading file data and verifying data checksums (see file.h).
 *
 * Reads walk the file's extent cursor, so a sequential reader pays one
 * pass over the EXTENT_DATA items.  Compressed extents are decoded whole
 * (at most 128 KiB) and the last one is kept, because a reader asking for
 * less than an extent at a time comes back for the rest of it.
 *
 * Every size that decides an allocation or a copy comes from the item and
 * is checked against what btrfs can write before it is used: images may
 * be damaged or hostile.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lzo1x.h>
#include <zlib.h>
#include <zstd.h>

#include "blockdev.h"
#include "csum.h"
#include "errctx.h"
#include "file.h"
#include "misc.h"
#include "root-tree.h"
#include "volumes.h"

/* btrfs compresses at most 128 KiB of file data into one extent. */
#define MAX_COMPRESSED		(128 * 1024)
/* ... and decodes zstd frames with at most this window (2^17). */
#define ZSTD_BTRFS_WINDOWLOG	17
/* Bytes of data read and checked at a time by tlog_file_verify(). */
#define VERIFY_CHUNK		(1024 * 1024)
/* lzo framing: little-endian u32 lengths. */
#define LZO_LEN			4

struct read_cache {
	/* The compressed extent last decoded into @ram, when @valid. */
	bool valid;
	u64 disk_bytenr;
	u64 disk_num_bytes;
	u64 ram_bytes;
	u8 compression;
	u8 *ram;		/* decoded data, compressed_limit() bytes */
	u8 *disk;		/* on-disk payload, compressed_limit() bytes */
	ZSTD_DCtx *zstd;
};

/*
 * The most a compressed extent may hold, on disk or decoded.  One sector
 * of slack over the kernel's limit keeps us reading images whose writer
 * rounded differently; anything larger is corruption, not data.
 */
static size_t compressed_limit(const struct tlog_fs *fs)
{
	return MAX_COMPRESSED + fs->sectorsize;
}

static u32 get_le32(const u8 *p)
{
	return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

__attribute__((format(printf, 3, 4)))
static int extent_error(const struct tlog_file *file, u64 pos, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return tlog_error(-EUCLEAN, "corrupted file extent item (inode %llu offset %llu): %s",
			  (unsigned long long)file->ino, (unsigned long long)pos, why);
}

/* Put "inode N offset P" in front of the context of a lower-level failure. */
static int wrap_error(const struct tlog_file *file, u64 pos, int err)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "inode %llu offset %llu",
		 (unsigned long long)file->ino, (unsigned long long)pos);
	return tlog_error_wrap(err, prefix);
}

static struct read_cache *get_cache(struct tlog_file *file)
{
	struct read_cache *c = file->read_cache;
	size_t limit = compressed_limit(file->fs);

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ram = malloc(limit);
	c->disk = malloc(limit);
	if (!c->ram || !c->disk) {
		free(c->ram);
		free(c->disk);
		free(c);
		return NULL;
	}
	file->read_cache = c;
	return c;
}

void tlog_file_read_release(struct tlog_file *file)
{
	struct read_cache *c = file ? file->read_cache : NULL;

	if (!c)
		return;
	ZSTD_freeDCtx(c->zstd);
	free(c->ram);
	free(c->disk);
	free(c);
	file->read_cache = NULL;
}

/*
 * Read @len bytes at @logical, through the chunk map, first copy.  A data
 * extent never crosses a chunk, but splitting at chunk ends costs nothing
 * and keeps a damaged item from turning into one huge bogus read.
 */
static int read_logical(struct tlog_fs *fs, u64 logical, void *buf, size_t len)
{
	u8 *out = buf;

	while (len) {
		const struct map_lookup *m = chunk_map_find(&fs->chunks, logical);
		u64 piece = len, physical;
		int ret;

		if (m && m->logical + m->length - logical < piece)
			piece = m->logical + m->length - logical;
		ret = btrfs_map_block(fs, logical, piece, &physical, 1);
		if (ret < 0)
			return ret;
		if (ret == 0)
			return tlog_error(-EUCLEAN, "logical address %llu has no copy",
					  (unsigned long long)logical);
		ret = tlog_bdev_read(fs->bdev, out, piece, physical);
		if (ret)
			return ret;
		out += piece;
		logical += piece;
		len -= piece;
	}
	return 0;
}

/* ---- decompression: each fills @out (@out_len bytes) and says how much it made ---- */

/*
 * btrfs writes a zlib stream; the kernel skips a plain two-byte header and
 * inflates raw deflate data, never looking at the Adler-32 trailer.  Do
 * the same so that what the kernel reads, we read.
 */
static bool zlib_plain_header(const u8 *in, size_t len)
{
	return len >= 2 && (in[0] & 0x0f) == Z_DEFLATED && (in[0] >> 4) + 8 <= MAX_WBITS &&
	       ((in[0] << 8) | in[1]) % 31 == 0 && !(in[1] & 0x20);
}

static int decompress_zlib(const u8 *in, size_t in_len, u8 *out, size_t out_len,
			   size_t *produced)
{
	z_stream zs = { 0 };
	int wbits = MAX_WBITS, ret, err = 0;

	if (zlib_plain_header(in, in_len)) {
		in += 2;
		in_len -= 2;
		wbits = -MAX_WBITS;
	}
	if (inflateInit2(&zs, wbits) != Z_OK)
		return tlog_error(-ENOMEM, "cannot set up zlib");
	zs.next_in = (Bytef *)in;
	zs.avail_in = in_len;
	zs.next_out = out;
	zs.avail_out = out_len;
	for (;;) {
		ret = inflate(&zs, Z_NO_FLUSH);
		/* a full buffer holds everything the item can refer to */
		if (ret == Z_STREAM_END || zs.avail_out == 0)
			break;
		if (ret == Z_OK && zs.avail_in > 0)
			continue;
		if (ret == Z_OK || ret == Z_BUF_ERROR)
			err = tlog_error(-EUCLEAN, "zlib stream is truncated");
		else
			err = tlog_error(-EUCLEAN, "zlib data is corrupt (%s)",
					 zs.msg ? zs.msg : "unknown error");
		break;
	}
	*produced = out_len - zs.avail_out;
	inflateEnd(&zs);
	return err;
}

static int decompress_zstd(struct read_cache *c, const u8 *in, size_t in_len,
			   u8 *out, size_t out_len, size_t *produced)
{
	ZSTD_inBuffer ib = { in, in_len, 0 };
	ZSTD_outBuffer ob = { out, out_len, 0 };

	if (!c->zstd) {
		c->zstd = ZSTD_createDCtx();
		if (!c->zstd)
			return tlog_error(-ENOMEM, "cannot set up zstd");
		/* frames that need a larger window are refused, as by the kernel */
		ZSTD_DCtx_setParameter(c->zstd, ZSTD_d_windowLogMax, ZSTD_BTRFS_WINDOWLOG);
	}
	ZSTD_DCtx_reset(c->zstd, ZSTD_reset_session_only);
	for (;;) {
		size_t before_in = ib.pos, before_out = ob.pos;
		size_t ret = ZSTD_decompressStream(c->zstd, &ob, &ib);

		if (ZSTD_isError(ret))
			return tlog_error(-EUCLEAN, "zstd data is corrupt (%s)",
					  ZSTD_getErrorName(ret));
		/* end of the frame; zero padding follows it */
		if (ret == 0 || ob.pos == ob.size)
			break;
		if (ib.pos == ib.size || (ib.pos == before_in && ob.pos == before_out))
			return tlog_error(-EUCLEAN, "zstd frame is truncated");
	}
	*produced = ob.pos;
	return 0;
}

/* One lzo segment into at most @cap bytes at @out. */
static int lzo_segment(const u8 *in, size_t len, u8 *out, size_t cap, size_t *produced)
{
	lzo_uint out_len = cap;
	int ret = lzo1x_decompress_safe(in, len, out, &out_len, NULL);

	if (ret != LZO_E_OK)
		return tlog_error(-EUCLEAN, "lzo segment is corrupt (lzo error %d)", ret);
	*produced = out_len;
	return 0;
}

/*
 * btrfs's lzo framing (the kernel's lzo_decompress_bio): a u32 total
 * length, then per sector of input a u32 segment length and the segment;
 * a segment header never straddles a sector boundary.  Inline extents hold exactly one segment.
 */
static int decompress_lzo(const u8 *in, size_t in_len, u8 *out, size_t out_len,
			  u32 sectorsize, bool is_inline, size_t *produced)
{
	size_t pos = LZO_LEN, done = 0, n = 0;
	u32 total, seg;
	int ret;

	if (in_len < 2 * LZO_LEN)
		return tlog_error(-EUCLEAN, "lzo payload of %zu bytes is too short", in_len);
	total = get_le32(in);
	if (is_inline) {
		if (total != in_len || get_le32(in + LZO_LEN) != in_len - 2 * LZO_LEN)
			return tlog_error(-EUCLEAN, "inline lzo lengths do not match its %zu bytes",
					  in_len);
	} else if (total < 2 * LZO_LEN || total > MAX_COMPRESSED || total > in_len ||
		   round_up(total, sectorsize) != in_len) {
		return tlog_error(-EUCLEAN, "lzo total length %u does not fit a %zu-byte extent",
				  total, in_len);
	}
	while (pos < total && done < out_len) {
		size_t left = sectorsize - pos % sectorsize;

		if (left < LZO_LEN) {
			pos += left;
			continue;
		}
		if (total - pos < LZO_LEN)
			return tlog_error(-EUCLEAN, "lzo segment header at %zu is truncated", pos);
		seg = get_le32(in + pos);
		pos += LZO_LEN;
		if (seg == 0 || seg > total - pos)
			return tlog_error(-EUCLEAN, "lzo segment of %u bytes at %zu overruns %u",
					  seg, pos, total);
		ret = lzo_segment(in + pos, seg, out + done,
				  out_len - done < sectorsize ? out_len - done : sectorsize, &n);
		if (ret)
			return ret;
		done += n;
		pos += seg;
	}
	*produced = done;
	return 0;
}

/*
 * Decode @in into exactly @out_len bytes at @out: a stream that ends early
 * leaves zeros (the tail of a file), a longer one is cut.
 */
static int decompress(struct read_cache *c, u8 type, const u8 *in, size_t in_len,
		      u8 *out, size_t out_len, u32 sectorsize, bool is_inline)
{
	size_t produced = 0;
	int ret;

	switch (type) {
	case BTRFS_COMPRESS_ZLIB:
		ret = decompress_zlib(in, in_len, out, out_len, &produced);
		break;
	case BTRFS_COMPRESS_LZO:
		ret = decompress_lzo(in, in_len, out, out_len, sectorsize, is_inline, &produced);
		break;
	case BTRFS_COMPRESS_ZSTD:
		ret = decompress_zstd(c, in, in_len, out, out_len, &produced);
		break;
	default:
		ret = tlog_error(-EUCLEAN, "unknown compression type %u", type);
		break;
	}
	if (ret)
		return ret;
	memset(out + produced, 0, out_len - produced);
	return 0;
}

/* ---- reading one extent ---- */

/* The decoded data of the compressed REG extent @ext, from the cache or the disk. */
static int load_compressed(struct tlog_file *file, struct read_cache *c,
			   const struct tlog_file_extent *ext, u64 pos)
{
	int ret;

	if (c->valid && c->disk_bytenr == ext->disk_bytenr &&
	    c->disk_num_bytes == ext->disk_num_bytes && c->ram_bytes == ext->ram_bytes &&
	    c->compression == ext->compression)
		return 0;
	c->valid = false;
	ret = read_logical(file->fs, ext->disk_bytenr, c->disk, ext->disk_num_bytes);
	if (ret)
		return wrap_error(file, pos, ret);
	ret = decompress(c, ext->compression, c->disk, ext->disk_num_bytes, c->ram,
			 ext->ram_bytes, file->fs->sectorsize, false);
	if (ret) {
		char prefix[128];

		snprintf(prefix, sizeof(prefix), "inode %llu offset %llu: compressed extent at %llu",
			 (unsigned long long)file->ino, (unsigned long long)pos,
			 (unsigned long long)ext->disk_bytenr);
		return tlog_error_wrap(ret, prefix);
	}
	c->disk_bytenr = ext->disk_bytenr;
	c->disk_num_bytes = ext->disk_num_bytes;
	c->ram_bytes = ext->ram_bytes;
	c->compression = ext->compression;
	c->valid = true;
	return 0;
}

/* The sizes a REG extent must keep before any of its bytes are read. */
static int check_reg_extent(const struct tlog_file *file, const struct tlog_file_extent *ext)
{
	u64 limit = compressed_limit(file->fs);
	u64 room = ext->compression ? ext->ram_bytes : ext->disk_num_bytes;

	if (ext->disk_num_bytes % file->fs->sectorsize)
		return extent_error(file, ext->start, "disk size %llu is not sector aligned",
				    (unsigned long long)ext->disk_num_bytes);
	if (ext->compression &&
	    (ext->ram_bytes == 0 || ext->ram_bytes > limit || ext->disk_num_bytes > limit))
		return extent_error(file, ext->start,
				    "compressed extent of impossible size (ram %llu, disk %llu)",
				    (unsigned long long)ext->ram_bytes,
				    (unsigned long long)ext->disk_num_bytes);
	if (ext->offset > room || ext->num_bytes > room - ext->offset)
		return extent_error(file, ext->start,
				    "range %llu+%llu lies outside the %llu-byte extent",
				    (unsigned long long)ext->offset,
				    (unsigned long long)ext->num_bytes, (unsigned long long)room);
	return 0;
}

static int read_inline(struct tlog_file *file, const struct tlog_file_extent *ext,
		       u8 *buf, u64 pos, size_t n)
{
	struct read_cache *c;
	u64 skip = pos - ext->start;
	int ret;

	if (ext->compression == BTRFS_COMPRESS_NONE) {
		memcpy(buf, ext->inline_data + skip, n);
		return 0;
	}
	c = get_cache(file);
	if (!c)
		return -ENOMEM;
	/* file.c bounds an inline ram_bytes by the sector size: it fits */
	c->valid = false;
	ret = decompress(c, ext->compression, ext->inline_data, ext->inline_len, c->ram,
			 ext->ram_bytes, file->fs->sectorsize, true);
	if (ret)
		return wrap_error(file, pos, ret);
	memcpy(buf, c->ram + skip, n);
	return 0;
}

/* Copy file bytes [pos, pos + n) of @ext, which holds them all, to @buf. */
static int read_extent(struct tlog_file *file, const struct tlog_file_extent *ext,
		       u8 *buf, u64 pos, size_t n)
{
	struct read_cache *c;
	u64 skip = pos - ext->start;
	int ret;

	if (ext->type == BTRFS_FILE_EXTENT_INLINE)
		return read_inline(file, ext, buf, pos, n);
	if (ext->type == BTRFS_FILE_EXTENT_PREALLOC || ext->disk_bytenr == 0) {
		memset(buf, 0, n);
		return 0;
	}
	ret = check_reg_extent(file, ext);
	if (ret)
		return ret;
	if (ext->compression == BTRFS_COMPRESS_NONE) {
		ret = read_logical(file->fs, ext->disk_bytenr + ext->offset + skip, buf, n);
		return ret ? wrap_error(file, pos, ret) : 0;
	}
	c = get_cache(file);
	if (!c)
		return -ENOMEM;
	ret = load_compressed(file, c, ext, pos);
	if (ret)
		return ret;
	memcpy(buf, c->ram + ext->offset + skip, n);
	return 0;
}

ssize_t tlog_file_pread(struct tlog_file *file, void *buf, size_t len, u64 offset)
{
	u8 *out = buf;
	u64 pos = offset, end;
	int ret;

	tlog_error_clear();
	if (offset >= file->size || len == 0)
		return 0;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	end = file->size - offset < len ? file->size : offset + len;

	ret = tlog_file_cursor_seek(file, pos);
	while (pos < end) {
		const struct tlog_file_extent *ext = &file->cur.ext;
		u64 stop;

		if (ret < 0)
			return ret;
		if (ret == 1 || ext->start >= end) {
			/* implicit hole up to the end of the request */
			memset(out + (pos - offset), 0, end - pos);
			break;
		}
		if (ext->start > pos) {
			memset(out + (pos - offset), 0, ext->start - pos);
			pos = ext->start;
		}
		if (ext->end > pos) {
			stop = ext->end < end ? ext->end : end;
			ret = read_extent(file, ext, out + (pos - offset), pos, stop - pos);
			if (ret)
				return ret;
			pos = stop;
		}
		if (pos < end)
			ret = tlog_file_cursor_next(file);
	}
	return (ssize_t)(end - offset);
}

/* ---- checksum verification ---- */

/* A forward cursor over the csum tree and the item it stands on. */
struct csum_cursor {
	struct btrfs_root *root;
	struct btrfs_path path;
	bool have;		/* [start, end) and csums describe an item */
	u64 start, end;
	const u8 *csums;
};

/*
 * Find the checksum of the sector at @logical: 0 with *@ret pointing at
 * it, 1 when no item covers it, or -errno.
 */
static int csum_lookup(struct tlog_fs *fs, struct csum_cursor *cc, u64 logical,
		       const u8 **ret)
{
	struct btrfs_key key = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, logical };
	struct tlog_csum_item item;
	struct extent_buffer *leaf;
	int err;

	if (cc->have && logical >= cc->start && logical < cc->end)
		goto found;
	cc->have = false;
	err = btrfs_search_slot_near(cc->root, &key, &cc->path);
	if (err < 0)
		return err;
	if (err > 0) {
		/* the item before the insertion point may cover @logical */
		err = btrfs_prev_item(cc->root, &cc->path);
		if (err)
			return err < 0 ? err : 1;
	}
	leaf = cc->path.nodes[0];
	btrfs_item_key_to_cpu(leaf, &key, cc->path.slots[0]);
	if (key.objectid != BTRFS_EXTENT_CSUM_OBJECTID || key.type != BTRFS_EXTENT_CSUM_KEY)
		return 1;
	err = btrfs_decode_csum_item(fs, leaf, cc->path.slots[0], &key, &item);
	if (err)
		return err;
	cc->start = item.start;
	cc->end = item.end;
	cc->csums = item.csums;
	cc->have = true;
	if (logical < cc->start || logical >= cc->end)
		return 1;
found:
	*ret = cc->csums + (logical - cc->start) / fs->sectorsize * fs->csum_size;
	return 0;
}

static void csum_to_hex(const u8 *csum, int size, char *out)
{
	for (int i = 0; i < size; i++)
		sprintf(out + 2 * i, "%02x", csum[i]);
}

/*
 * Check the sectors in @data, read from @logical on, against the csum tree.
 * On a mismatch or a missing checksum, *@bad is the sector's logical address.
 */
static int check_sectors(struct tlog_fs *fs, struct csum_cursor *cc, u64 logical,
			 const u8 *data, size_t len, u64 *bad)
{
	char want_hex[2 * BTRFS_CSUM_SIZE + 1], got_hex[2 * BTRFS_CSUM_SIZE + 1];
	u8 got[BTRFS_CSUM_SIZE];
	const u8 *want = NULL;
	int ret;

	for (size_t done = 0; done < len; done += fs->sectorsize) {
		u64 at = logical + done;

		ret = csum_lookup(fs, cc, at, &want);
		if (ret < 0)
			return ret;
		if (ret > 0) {
			*bad = at;
			return tlog_error(-ENODATA, "no data checksum for logical %llu",
					  (unsigned long long)at);
		}
		ret = btrfs_csum_data(fs->csum_type, data + done, fs->sectorsize, got);
		if (ret)
			return ret;
		if (memcmp(got, want, fs->csum_size)) {
			*bad = at;
			csum_to_hex(want, fs->csum_size, want_hex);
			csum_to_hex(got, fs->csum_size, got_hex);
			return tlog_error(-EBADMSG, "data at logical %llu has csum %s, expected %s",
					  (unsigned long long)at, got_hex, want_hex);
		}
	}
	return 0;
}

/* The sectors of an uncompressed extent that the file refers to, below i_size. */
static int verify_plain(struct tlog_file *file, const struct tlog_file_extent *ext,
			struct csum_cursor *cc, u8 *buf, u64 *bad_offset)
{
	struct tlog_fs *fs = file->fs;
	u64 base = ext->disk_bytenr + ext->offset;
	u64 end = ext->end, size_end, bad;
	int ret;

	size_end = round_up(file->size, fs->sectorsize);
	if (end > size_end)
		end = size_end;
	if (!IS_ALIGNED(base, fs->sectorsize))
		return extent_error(file, ext->start, "extent offset %llu is not sector aligned",
				    (unsigned long long)ext->offset);
	for (u64 pos = ext->start; pos < end; pos += VERIFY_CHUNK) {
		size_t n = end - pos < VERIFY_CHUNK ? end - pos : VERIFY_CHUNK;
		u64 logical = base + (pos - ext->start);

		ret = read_logical(fs, logical, buf, n);
		if (ret)
			return wrap_error(file, pos, ret);
		ret = check_sectors(fs, cc, logical, buf, n, &bad);
		if (ret == -EBADMSG || ret == -ENODATA) {
			*bad_offset = pos + (bad - logical);
			return wrap_error(file, *bad_offset, ret);
		}
		if (ret)
			return wrap_error(file, pos, ret);
	}
	return 0;
}

/* The whole on-disk extent: the data of every sector feeds the decoder. */
static int verify_compressed(struct tlog_file *file, const struct tlog_file_extent *ext,
			     struct csum_cursor *cc, u8 *buf, u64 *bad_offset)
{
	u64 bad;
	int ret;

	ret = read_logical(file->fs, ext->disk_bytenr, buf, ext->disk_num_bytes);
	if (ret)
		return wrap_error(file, ext->start, ret);
	ret = check_sectors(file->fs, cc, ext->disk_bytenr, buf, ext->disk_num_bytes, &bad);
	if (ret == -EBADMSG || ret == -ENODATA)
		*bad_offset = ext->start;
	return ret ? wrap_error(file, ext->start, ret) : 0;
}

int tlog_file_verify(struct tlog_file *file, u64 *bad_offset)
{
	struct csum_cursor cc = { 0 };
	u64 last_compressed = 0;
	u8 *buf;
	int ret;

	tlog_error_clear();
	if (btrfs_inode_item_flags(&file->inode) & BTRFS_INODE_NODATASUM)
		return 0;
	ret = btrfs_read_root(file->fs, BTRFS_CSUM_TREE_OBJECTID, &cc.root);
	if (ret)
		return tlog_error_wrap(ret, "cannot read the csum tree");
	buf = malloc(VERIFY_CHUNK);
	if (!buf)
		return -ENOMEM;
	btrfs_init_path(&cc.path);
	btrfs_path_set_reada(&cc.path, NULL);

	ret = tlog_file_cursor_seek(file, 0);
	while (ret == 0) {
		const struct tlog_file_extent *ext = &file->cur.ext;

		if (ext->start >= file->size)
			break;
		if (ext->type == BTRFS_FILE_EXTENT_REG && ext->disk_bytenr) {
			ret = check_reg_extent(file, ext);
			if (ret)
				break;
			if (ext->compression == BTRFS_COMPRESS_NONE) {
				ret = verify_plain(file, ext, &cc, buf, bad_offset);
			} else if (ext->disk_bytenr != last_compressed) {
				/* items split from one extent share its data: check it once */
				ret = verify_compressed(file, ext, &cc, buf, bad_offset);
				last_compressed = ext->disk_bytenr;
			}
			if (ret)
				break;
		}
		ret = tlog_file_cursor_next(file);
	}
	btrfs_release_path(&cc.path);
	free(buf);
	return ret < 0 ? ret : 0;
}
