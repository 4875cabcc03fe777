// SPDX-License-Identifier: GPL-2.0-only
/*
 * hugemem: whole huge pages only, aligned to them (which O_DIRECT's
 * alignment needs too), zeroed, writable to the last byte.
 */
#include <stdint.h>
#include <string.h>
#include <criterion/criterion.h>

#include "hugemem.h"

Test(hugemem, gives_aligned_zeroed_memory)
{
	for (size_t pages = 1; pages <= 3; pages++) {
		size_t len = pages * HUGEMEM_ALIGN;
		unsigned char *p = hugemem_alloc(len);
		size_t nonzero = 0;

		cr_assert_not_null(p, "%zu huge pages", pages);
		cr_assert_eq((uintptr_t)p % HUGEMEM_ALIGN, 0, "%p is not aligned", (void *)p);
		for (size_t i = 0; i < len; i += 4096)
			nonzero += p[i] != 0;
		nonzero += p[len - 1] != 0;
		cr_assert_eq(nonzero, 0);
		memset(p, 0xa5, len);
		cr_assert_eq(p[len - 1], 0xa5);
		hugemem_free(p, len);
	}
	hugemem_free(NULL, HUGEMEM_ALIGN);
}

Test(hugemem, refuses_part_pages)
{
	cr_assert_null(hugemem_alloc(0));
	cr_assert_null(hugemem_alloc(4096));
	cr_assert_null(hugemem_alloc(HUGEMEM_ALIGN + 4096));
	cr_assert_null(hugemem_alloc(SIZE_MAX - HUGEMEM_ALIGN + 1));
}
