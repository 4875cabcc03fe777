// SPDX-License-Identifier: GPL-2.0-only
/*
 * floor: the time a walk cannot beat - reading the metadata it must read,
 * in disk order, as few large reads as the layout allows.
 *
 *   floor IMAGE LIST [GAP]
 *
 * LIST has one "PHYSICAL LENGTH" pair per line (the tree blocks, in any
 * order, duplicates allowed).  They are sorted and merged into runs where
 * they are less than GAP bytes apart (default 0: where they touch; reading
 * across a small gap can cost less than another request), and each run is
 * read with pread() into one reused buffer, one run after the other.
 * Prints "<ms> ms <bytes> bytes <runs> runs"; the caller drops the page
 * cache first for a cold figure.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv)
{
	unsigned long long s, l;
	struct range *r = NULL;
	size_t nr = 0, cap = 0, runs = 0;
	uint64_t bytes = 0, gap = 0;
	FILE *list;
	char *buf;
	double t0;
	int fd;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: floor IMAGE LIST [GAP]\n");
		return 2;
	}
	if (argc == 4)
		gap = strtoull(argv[3], NULL, 0);
	list = fopen(argv[2], "r");
	fd = open(argv[1], O_RDONLY);
	buf = malloc(MAX_READ);
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
