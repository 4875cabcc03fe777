/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Growable arrays: a pointer, a count kept by the caller and an allocated
 * size.  array_reserve() is the one place that grows them.
 */
#ifndef TLOG_ARRAY_H
#define TLOG_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Make room for @need elements of @size bytes in the array whose pointer
 * is at @pv and which has room for *@alloc.  The allocation at least
 * doubles, so appending one element at a time stays linear.  On failure
 * the array is left as it was and -ENOMEM returned.
 *
 * The pointer is passed by address as void * and copied with memcpy so
 * that any element type can be grown without type punning through void **.
 */
static inline int array_reserve_size(void *pv, size_t *alloc, size_t need, size_t size)
{
	size_t n = *alloc ? *alloc : 16;
	void *v, *nv;

	if (need <= *alloc)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (n > SIZE_MAX / size)
		return -ENOMEM;
	memcpy(&v, pv, sizeof(v));
	nv = realloc(v, n * size);
	if (!nv)
		return -ENOMEM;
	memcpy(pv, &nv, sizeof(nv));
	*alloc = n;
	return 0;
}

/* Room for @need elements in the array @v of *@v-sized elements. */
#define array_reserve(v, alloc, need) \
	array_reserve_size(&(v), &(alloc), (need), sizeof(*(v)))

#endif
