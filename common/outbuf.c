// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "outbuf.h"

void outbuf_init(struct outbuf *ob, int fd)
{
	ob->fd = fd;
	ob->err = 0;
	ob->len = 0;
}

int outbuf_flush(struct outbuf *ob)
{
	size_t done = 0;

	while (!ob->err && done < ob->len) {
		ssize_t n = write(ob->fd, ob->buf + done, ob->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ob->err = n < 0 ? -errno : -EIO;
		else
			done += n;
	}
	ob->len = 0;
	return ob->err;
}

/* Make room for @n more bytes (n <= OUTBUF_SIZE). */
static void reserve(struct outbuf *ob, size_t n)
{
	if (ob->len + n > OUTBUF_SIZE)
		outbuf_flush(ob);
}

void outbuf_mem_slow(struct outbuf *ob, const char *s, size_t n)
{
	while (n > 0) {
		size_t chunk = n < OUTBUF_SIZE ? n : OUTBUF_SIZE;

		reserve(ob, chunk);
		memcpy(ob->buf + ob->len, s, chunk);
		ob->len += chunk;
		s += chunk;
		n -= chunk;
	}
}

void outbuf_str(struct outbuf *ob, const char *s)
{
	outbuf_mem(ob, s, strlen(s));
}

/* "00".."99": two digits per division halve the work of printing numbers */
static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Digits of @v, written backwards ending at @end; returns the first. */
static char *format_u32(char *end, uint32_t v)
{
	while (v >= 100) {
		uint32_t pair = (v % 100) * 2;

		v /= 100;
		*--end = digit_pairs[pair + 1];
		*--end = digit_pairs[pair];
	}
	if (v >= 10) {
		*--end = digit_pairs[v * 2 + 1];
		*--end = digit_pairs[v * 2];
	} else {
		*--end = (char)('0' + v);
	}
	return end;
}

void outbuf_u64(struct outbuf *ob, uint64_t v)
{
	char tmp[20], *end = tmp + sizeof(tmp), *p, *dst;

	/* most offsets fit 32 bits, whose arithmetic is cheaper */
	if (v > UINT32_MAX) {
		uint64_t high = v / 1000000000;
		uint32_t low = (uint32_t)(v % 1000000000);

		p = format_u32(end, low);
		while (p > end - 9)
			*--p = '0';
		end = p;
		v = high;
		if (v > UINT32_MAX) {
			p = format_u32(end, (uint32_t)(v % 1000000000));
			while (p > end - 9)
				*--p = '0';
			end = p;
			v /= 1000000000;
		}
	}
	p = format_u32(end, (uint32_t)v);
	/* a byte loop: memcpy of a few bytes of unknown length is a call */
	reserve(ob, sizeof(tmp));
	dst = ob->buf + ob->len;
	ob->len += (size_t)(tmp + sizeof(tmp) - p);
	while (p < tmp + sizeof(tmp))
		*dst++ = *p++;
}
