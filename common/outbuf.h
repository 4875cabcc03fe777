/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A buffered writer for large listings (maps of millions of extents),
 * where stdio's formatting would cost more than the queries themselves.
 *
 * Invariant: buf[0..len) holds bytes not yet written to the fd; len never
 * exceeds OUTBUF_SIZE; a failed write is remembered in err and later
 * appends do nothing.
 */
#ifndef TLOG_OUTBUF_H
#define TLOG_OUTBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define OUTBUF_SIZE (256 * 1024)

struct outbuf {
	int fd;
	int err;	/* 0 or the -errno of the first failed write */
	size_t len;
	char buf[OUTBUF_SIZE];
};

void outbuf_init(struct outbuf *ob, int fd);
/* outbuf_mem() when the bytes do not fit the buffer's free space */
void outbuf_mem_slow(struct outbuf *ob, const char *s, size_t n);

/* Inline, so that short literals become a few stores. */
static inline void outbuf_mem(struct outbuf *ob, const char *s, size_t n)
{
	if (ob->len + n <= OUTBUF_SIZE) {
		memcpy(ob->buf + ob->len, s, n);
		ob->len += n;
		return;
	}
	outbuf_mem_slow(ob, s, n);
}

void outbuf_str(struct outbuf *ob, const char *s);
void outbuf_u64(struct outbuf *ob, uint64_t v);

/* A string literal, its length known at compile time. */
#define outbuf_lit(ob, lit) outbuf_mem(ob, lit, sizeof(lit) - 1)
/* Write out what is buffered; returns ob->err. */
int outbuf_flush(struct outbuf *ob);

#endif
