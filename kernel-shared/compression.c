// SPDX-License-Identifier: GPL-2.0-only
/*
 * Compression of file data for writeback.  What matters to the kernel is
 * that the result decodes to the data and how big it is (whether it saves
 * a sector decides if the extent is stored compressed); the bytes need
 * not be the kernel's own, so the libraries' compressors are used at the
 * kernel's levels and limits.
 */
#include <errno.h>
#include <string.h>
#include <lzo1x.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "compression.h"
#include "errctx.h"

/* The kernel's zstd window: frames it can decode in its workspace. */
#define ZSTD_BTRFS_WINDOWLOG	17
#define LZO_LEN			4

static int compress_zlib(int level, const u8 *in, size_t len, u8 *out, size_t cap,
			 size_t *out_len)
{
	uLongf n = cap;
	int ret = compress2(out, &n, in, len, level ? level : BTRFS_ZLIB_DEFAULT_LEVEL);

	if (ret == Z_BUF_ERROR)
		return -E2BIG;
	if (ret != Z_OK)
		return tlog_error(-ENOMEM, "zlib compression failed (%d)", ret);
	*out_len = n;
	return 0;
}

static int compress_zstd(int level, const u8 *in, size_t len, u8 *out, size_t cap,
			 size_t *out_len)
{
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	size_t n;

	if (!cctx)
		return tlog_error(-ENOMEM, "cannot set up zstd");
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel,
			       level ? level : BTRFS_ZSTD_DEFAULT_LEVEL);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, ZSTD_BTRFS_WINDOWLOG);
	n = ZSTD_compress2(cctx, out, cap, in, len);
	ZSTD_freeCCtx(cctx);
	if (ZSTD_isError(n))
		return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? -E2BIG :
		       tlog_error(-ENOMEM, "zstd compression failed (%s)", ZSTD_getErrorName(n));
	*out_len = n;
	return 0;
}

static void put_le32(u8 *p, u32 v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

/* lzo_compress_folios' framing: a segment per sector of input. */
static int compress_lzo(const u8 *in, size_t len, u32 sectorsize, u8 *out, size_t cap,
			size_t *out_len)
{
	static __thread lzo_align_t wrk[(LZO1X_1_MEM_COMPRESS + sizeof(lzo_align_t) - 1) /
					sizeof(lzo_align_t)];
	u8 seg[8192 + 8192 / 16 + 64 + 3];
	size_t pos = LZO_LEN;

	if (lzo_init() != LZO_E_OK || sectorsize > 8192)
		return tlog_error(-EINVAL, "cannot set up lzo");
	for (size_t off = 0; off < len; off += sectorsize) {
		size_t n = len - off < sectorsize ? len - off : sectorsize;
		lzo_uint slen = sizeof(seg);
		size_t left = sectorsize - pos % sectorsize;

		if (lzo1x_1_compress(in + off, n, seg, &slen, wrk) != LZO_E_OK)
			return tlog_error(-ENOMEM, "lzo compression failed");
		/* a segment header never straddles a sector: pad to the next one */
		if (left < LZO_LEN) {
			if (pos + left > cap)
				return -E2BIG;
			memset(out + pos, 0, left);
			pos += left;
		}
		if (pos + LZO_LEN + slen > cap)
			return -E2BIG;
		put_le32(out + pos, (u32)slen);
		memcpy(out + pos + LZO_LEN, seg, slen);
		pos += LZO_LEN + slen;
	}
	put_le32(out, (u32)pos);
	*out_len = pos;
	return 0;
}

int btrfs_compress(u8 type, int level, const u8 *in, size_t len, u32 sectorsize, u8 *out,
		   size_t cap, size_t *out_len)
{
	if (len > BTRFS_MAX_UNCOMPRESSED)
		return tlog_error(-EINVAL, "%zu bytes is more than one compressed extent holds",
				  len);
	switch (type) {
	case BTRFS_COMPRESS_ZLIB:
		return compress_zlib(level, in, len, out, cap, out_len);
	case BTRFS_COMPRESS_LZO:
		return compress_lzo(in, len, sectorsize, out, cap, out_len);
	case BTRFS_COMPRESS_ZSTD:
		return compress_zstd(level, in, len, out, cap, out_len);
	}
	return tlog_error(-EINVAL, "unknown compression type %u", type);
}
