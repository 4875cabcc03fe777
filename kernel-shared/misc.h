/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Alignment arithmetic shared by the readers, the writers and mkfs.
 *
 * The alignments used are sector and node sizes (powers of two) but also
 * the odd chunk or stripe length, so rounding divides rather than masks.
 */
#ifndef TLOG_MISC_H
#define TLOG_MISC_H

#include <stdbool.h>
#include <stdint.h>

static inline bool is_power_of_2(uint64_t n)
{
	return n && !(n & (n - 1));
}

static inline uint64_t round_down(uint64_t v, uint64_t align)
{
	return v / align * align;
}

/* Caller makes sure v + align - 1 does not wrap. */
static inline uint64_t round_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) / align * align;
}

static inline uint64_t div_round_up(uint64_t v, uint64_t div)
{
	return (v + div - 1) / div;
}

#define IS_ALIGNED(v, align)	((v) % (align) == 0)

/* The number of elements of array @a (an array, not a pointer). */
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

#endif
