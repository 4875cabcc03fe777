// SPDX-License-Identifier: GPL-2.0-only
/*
 * floor: the time a walk cannot beat - reading the metadata it must read,
 * in disk order, as few large reads as the layout allows.
 *
 *   floor IMAGE LIST [GAP [direct]]
 *
 * LIST has one "PHYSICAL LENGTH" pair per line (the tree blocks, in any
 * order, duplicates allowed).  They are sorted and merged into runs where
 * they are less than GAP bytes apart (default 0: where they touch; reading
 * across a small gap can cost less than another request), and each run is
 * read with pread() into one reused buffer, one run after the other.
 * Prints "<ms> ms <bytes> bytes <runs> runs"; the caller drops the page
 * cache first for a cold figure.
 *
 * "direct" reads with O_DIRECT, past the page cache, into a buffer of
 * huge pages touched beforehand: the device's own speed for these bytes,
 * which no reader through the page cache reaches (it allocates a page per
 * 4 KiB, and on a virtio disk without indirect descriptors a request of
 * such pages fills the queue alone).  Exit status 3 when the file takes
 * no O_DIRECT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_READ (4U << 20)

struct range {
	uint64_t start, len;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* MAX_READ bytes aligned to MAX_READ, huge pages where the kernel has them, touched. */
static char *read_buffer(void)
{
	char *p = mmap(NULL, 2 * MAX_READ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)p + MAX_READ - 1) & ~(uintptr_t)(MAX_READ - 1));
	madvise(p, MAX_READ, MADV_HUGEPAGE);
	memset(p, 0, MAX_READ);
	return p;
}

int main(int argc, char **argv)
{
	unsigned long long s, l;
	struct range *r = NULL;
	size_t nr = 0, cap = 0, runs = 0;
	uint64_t bytes = 0, gap = 0;
	bool direct = argc == 5 && strcmp(argv[4], "direct") == 0;
	FILE *list;
	char *buf;
	double t0;
	int fd;

	if (argc < 3 || argc > 5 || (argc == 5 && !direct)) {
		fprintf(stderr, "usage: floor IMAGE LIST [GAP [direct]]\n");
		return 2;
	}
	if (argc >= 4)
		gap = strtoull(argv[3], NULL, 0);
	list = fopen(argv[2], "r");
	fd = open(argv[1], O_RDONLY | (direct ? O_DIRECT : 0));
	if (fd < 0 && direct && errno == EINVAL)
		return 3;
	buf = read_buffer();
	if (!list || fd < 0 || !buf) {
		perror("floor");
		return 1;
	}
	while (fscanf(list, "%llu %llu", &s, &l) == 2) {
		if (nr == cap) {
			cap = cap ? 2 * cap : 4096;
			r = realloc(r, cap * sizeof(*r));
			if (!r) {
				perror("floor");
				return 1;
			}
		}
		r[nr++] = (struct range){ s, l };
	}
	qsort(r, nr, sizeof(*r), cmp_range);

	t0 = now_ms();
	for (size_t i = 0; i < nr;) {
		uint64_t start = r[i].start, end = start + r[i].len;

		/* a run: blocks that touch, repeat or lie less than @gap apart */
		for (i++; i < nr && r[i].start <= end + gap; i++)
			if (r[i].start + r[i].len > end)
				end = r[i].start + r[i].len;
		runs++;
		bytes += end - start;
		for (uint64_t pos = start; pos < end;) {
			size_t n = end - pos > MAX_READ ? MAX_READ : end - pos;
			ssize_t got = pread(fd, buf, n, pos);

			if (got <= 0) {
				perror("floor: pread");
				return 1;
			}
			pos += got;
		}
	}
	printf("%.1f ms %llu bytes %zu runs\n", now_ms() - t0, (unsigned long long)bytes, runs);
	return 0;
}
