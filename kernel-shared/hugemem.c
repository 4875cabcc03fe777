// SPDX-License-Identifier: GPL-2.0-only
/*
 * Huge-page-friendly anonymous memory: see hugemem.h.
 */
#include <stdint.h>
#include <sys/mman.h>

#include "hugemem.h"
#include "misc.h"

void *hugemem_alloc(size_t len)
{
	/* one alignment more than asked, both ends then trimmed to it */
	size_t over = len + HUGEMEM_ALIGN;
	char *p, *aligned;

	if (len == 0 || len % HUGEMEM_ALIGN || over < len)
		return NULL;
	p = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	aligned = (char *)round_up((uintptr_t)p, HUGEMEM_ALIGN);
	if (aligned > p)
		munmap(p, aligned - p);
	if (p + over > aligned + len)
		munmap(aligned + len, p + over - (aligned + len));
	madvise(aligned, len, MADV_HUGEPAGE);	/* a hint: THP may be off */
	return aligned;
}

void hugemem_free(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}
