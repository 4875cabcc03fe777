// SPDX-License-Identifier: GPL-2.0-only
/*
 * Alignment arithmetic (misc.h): powers of two take a mask, anything else
 * a division, and both must give the same answers as the division did.
 */
#include <stdint.h>
#include <criterion/criterion.h>

#include "misc.h"

/* The division the helpers replaced, for reference. */
static uint64_t ref_round_down(uint64_t v, uint64_t a)
{
	return v / a * a;
}

static const uint64_t aligns[] = {
	1, 2, 4096, 16384, 65536, 1ULL << 40,
	3, 12288, 3 * 65536, 1000000, 0x8000000000000001ULL,
};

static const uint64_t values[] = {
	0, 1, 4095, 4096, 4097, 12288, 65535, 196608, 1ULL << 40, (1ULL << 40) + 1,
	UINT64_MAX / 2, UINT64_MAX - (1ULL << 20),
};

Test(misc, alignment_helpers_agree_with_division)
{
	for (size_t i = 0; i < ARRAY_SIZE(aligns); i++) {
		uint64_t a = aligns[i];

		for (size_t j = 0; j < ARRAY_SIZE(values); j++) {
			uint64_t v = values[j];

			cr_assert_eq(IS_ALIGNED(v, a), v % a == 0, "%llu %% %llu",
				     (unsigned long long)v, (unsigned long long)a);
			cr_assert_eq(round_down(v, a), ref_round_down(v, a), "%llu down to %llu",
				     (unsigned long long)v, (unsigned long long)a);
			if (v <= UINT64_MAX - a)
				cr_assert_eq(round_up(v, a), ref_round_down(v + a - 1, a),
					     "%llu up to %llu", (unsigned long long)v,
					     (unsigned long long)a);
		}
	}
}

Test(misc, powers_of_two_are_told_apart)
{
	cr_assert_not(is_power_of_2(0));
	cr_assert(is_power_of_2(1));
	cr_assert(is_power_of_2(1ULL << 63));
	cr_assert_not(is_power_of_2(3 * 65536));
	cr_assert_not(is_power_of_2(UINT64_MAX));
}
