// SPDX-License-Identifier: GPL-2.0-only
/*
 * kwalk: time the kernel's answers on a mounted file, for the benchmarks.
 *
 *   kwalk seek FILE     walk every data segment with SEEK_DATA/SEEK_HOLE
 *   kwalk fiemap FILE   one FS_IOC_FIEMAP call with room for every extent
 *
 * Prints "<ms> ms <what>" where ms is the time of the system calls alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int walk_seek(int fd)
{
	off_t pos = 0, data, hole;
	long segments = 0, calls = 0;
	double t0 = now_ms(), t1;

	for (;;) {
		data = lseek(fd, pos, SEEK_DATA);
		calls++;
		if (data < 0)
			break;
		hole = lseek(fd, data, SEEK_HOLE);
		calls++;
		if (hole < 0)
			return perror("SEEK_HOLE"), 1;
		segments++;
		pos = hole;
	}
	t1 = now_ms();
	if (errno != ENXIO)
		return perror("SEEK_DATA"), 1;
	printf("%.1f ms seek walk: %ld segments, %ld lseek calls\n", t1 - t0, segments, calls);
	return 0;
}

static int one_fiemap(int fd)
{
	unsigned int count = 1U << 20;
	struct fiemap *fm = calloc(1, sizeof(*fm) + (size_t)count * sizeof(struct fiemap_extent));
	double t0, t1;

	if (!fm)
		return perror("calloc"), 1;
	fm->fm_start = 0;
	fm->fm_length = ~0ULL;
	fm->fm_extent_count = count;
	t0 = now_ms();
	if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
		return perror("FS_IOC_FIEMAP"), 1;
	t1 = now_ms();
	printf("%.1f ms fiemap: %u extents\n", t1 - t0, fm->fm_mapped_extents);
	free(fm);
	return 0;
}

int main(int argc, char **argv)
{
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: kwalk seek|fiemap FILE\n");
		return 2;
	}
	fd = open(argv[2], O_RDONLY);
	if (fd < 0)
		return perror(argv[2]), 1;
	if (strcmp(argv[1], "seek") == 0)
		return walk_seek(fd);
	if (strcmp(argv[1], "fiemap") == 0)
		return one_fiemap(fd);
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}
