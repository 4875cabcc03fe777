/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Anonymous memory filled by the megabyte at once - the block cache's
 * buffer chunks, the bounce buffer of gather writes - mapped 2 MiB-aligned
 * and marked for transparent huge pages.
 *
 * Memory touched for the first time costs a page fault and a clear per
 * 4 KiB page: on the virtual machines CI runs on, 17 us each, a third of
 * a 10,000-file replay when its buffers came from malloc.  Where THP is
 * on (for madvise, as by default) each 2 MiB is one fault instead of 512.
 * The alignment also meets O_DIRECT's.
 */
#ifndef TLOG_HUGEMEM_H
#define TLOG_HUGEMEM_H

#include <stddef.h>

#define HUGEMEM_ALIGN	(2UL << 20)

/* @len bytes (a multiple of HUGEMEM_ALIGN), zeroed, aligned to it; NULL if none. */
void *hugemem_alloc(size_t len);
/* Give back what hugemem_alloc(@len) returned (NULL is ignored). */
void hugemem_free(void *p, size_t len);

#endif
