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

static inline void put_pair(char *p, uint32_t v)
{
	p[0] = digit_pairs[v * 2];
	p[1] = digit_pairs[v * 2 + 1];
}

/* The number of decimal digits of @v: from its bit length, one compare. */
static unsigned int decimal_digits(uint64_t v)
{
	static const uint64_t pow10[20] = {
		1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
		100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
		1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
		1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
		1000000000000000000ULL, 10000000000000000000ULL,
	};
	/*
	 * 1233 / 4096 is just above log10(2): bits * that is the digit count
	 * or one less, and at most 19 for 64 bits, inside pow10.  v | 1 has
	 * the digits of v (powers of ten are even) and 0 gets its one digit.
	 */
	uint64_t x = v | 1;
	unsigned int bits = 64 - (unsigned int)__builtin_clzll(x);
	unsigned int d = (bits * 1233) >> 12;

	return d + (x >= pow10[d]);
}

/*
 * Digits of @v written backwards, ending at @end.  Two digits per
 * division; 32-bit arithmetic once the value fits, as most offsets do.
 */
static void format_backwards(char *end, uint64_t v)
{
	uint32_t v32;

	while (v > UINT32_MAX) {
		end -= 2;
		put_pair(end, (uint32_t)(v % 100));
		v /= 100;
	}
	v32 = (uint32_t)v;
	while (v32 >= 100) {
		end -= 2;
		put_pair(end, v32 % 100);
		v32 /= 100;
	}
	if (v32 >= 10)
		put_pair(end - 2, v32);
	else
		end[-1] = (char)('0' + v32);
}

void outbuf_u64(struct outbuf *ob, uint64_t v)
{
	unsigned int n = decimal_digits(v);

	/* straight into the buffer: no copy, no call */
	reserve(ob, n);
	format_backwards(ob->buf + ob->len + n, v);
	ob->len += n;
}
