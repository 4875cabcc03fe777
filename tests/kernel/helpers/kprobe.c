// SPDX-License-Identifier: GPL-2.0-only
/*
 * kprobe: ask the running kernel what tlogctl fiemap/seek must answer, on a
 * file of a MOUNTED filesystem, and print it as one line of compact JSON.
 *
 *   kprobe fiemap FILE [START [LEN]]
 *       One FS_IOC_FIEMAP request: fm_start=START (default 0),
 *       fm_length=LEN (default ~0ULL), fm_flags=0, fm_extent_count large
 *       enough for every extent.  Prints
 *       {"extents":[{"logical":N,"physical":N,"length":N,"flags":N},...]}
 *       or, when the ioctl fails, {"error":"EINVAL"} and exits 2.
 *
 *   kprobe seekmap FILE
 *       Walks the file with lseek: data=SEEK_DATA(pos), hole=SEEK_HOLE(data),
 *       pos=hole, until SEEK_DATA gives ENXIO.  Prints
 *       {"size":N,"map":[{"data":D,"hole":H},...]} (size from fstat).
 *
 *   kprobe seek FILE data|hole OFFSET
 *       One lseek; prints the result or ENXIO.
 *
 * START, LEN and OFFSET are decimal or 0x hex; LEN may be "~" for ~0ULL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "kprobe: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: kprobe fiemap FILE [START [LEN]]\n"
			"       kprobe seekmap FILE\n"
			"       kprobe seek FILE data|hole OFFSET\n");
	exit(1);
}

static uint64_t parse_u64(const char *s)
{
	char *end;
	unsigned long long v;

	if (strcmp(s, "~") == 0)
		return ~0ULL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || *s == '-' || !*s) {
		fprintf(stderr, "kprobe: bad number '%s'\n", s);
		exit(1);
	}
	return v;
}

static int open_file(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		die(path);
	return fd;
}

/* One request with room for @cap extents; returns the fiemap (caller frees). */
static struct fiemap *fiemap_call(int fd, uint64_t start, uint64_t len,
				  uint32_t cap, int *err)
{
	struct fiemap *fm;

	fm = calloc(1, sizeof(*fm) + (size_t)cap * sizeof(struct fiemap_extent));
	if (!fm)
		die("calloc");
	fm->fm_start = start;
	fm->fm_length = len;
	fm->fm_flags = 0;
	fm->fm_extent_count = cap;
	*err = 0;
	if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
		*err = errno;
	return fm;
}

static int do_fiemap(const char *path, uint64_t start, uint64_t len)
{
	int fd = open_file(path);
	struct fiemap *fm;
	uint32_t cap, i;
	int err;

	/* Count mode sizes the array (it may undercount: SHARED is not
	 * computed there, so more extents merge).  Grow until the answer
	 * fits with room to spare: then it was not cut by the capacity. */
	fm = fiemap_call(fd, start, len, 0, &err);
	if (err)
		goto error;
	cap = fm->fm_mapped_extents + 16;
	for (;;) {
		free(fm);
		fm = fiemap_call(fd, start, len, cap, &err);
		if (err)
			goto error;
		if (fm->fm_mapped_extents < cap)
			break;
		if (cap > 76695844 / 2) {
			fprintf(stderr, "kprobe: %s: too many extents\n", path);
			exit(1);
		}
		cap *= 2;
	}

	printf("{\"extents\":[");
	for (i = 0; i < fm->fm_mapped_extents; i++) {
		struct fiemap_extent *e = &fm->fm_extents[i];

		printf("%s{\"logical\":%llu,\"physical\":%llu,\"length\":%llu,\"flags\":%u}",
		       i ? "," : "",
		       (unsigned long long)e->fe_logical,
		       (unsigned long long)e->fe_physical,
		       (unsigned long long)e->fe_length, e->fe_flags);
	}
	printf("]}\n");
	free(fm);
	close(fd);
	return 0;

error:
	printf("{\"error\":\"%s\"}\n", strerrorname_np(err) ? strerrorname_np(err) : "?");
	free(fm);
	close(fd);
	return 2;
}

static int do_seekmap(const char *path)
{
	int fd = open_file(path);
	struct stat st;
	off_t pos = 0, data, hole;
	int first = 1;

	if (fstat(fd, &st) < 0)
		die("fstat");
	printf("{\"size\":%lld,\"map\":[", (long long)st.st_size);
	for (;;) {
		data = lseek(fd, pos, SEEK_DATA);
		if (data < 0) {
			if (errno == ENXIO)
				break;
			die("lseek SEEK_DATA");
		}
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			die("lseek SEEK_HOLE");
		printf("%s{\"data\":%lld,\"hole\":%lld}", first ? "" : ",",
		       (long long)data, (long long)hole);
		first = 0;
		if (hole <= data) {
			fprintf(stderr, "kprobe: SEEK_HOLE(%lld) = %lld does not advance\n",
				(long long)data, (long long)hole);
			exit(1);
		}
		pos = hole;
	}
	printf("]}\n");
	close(fd);
	return 0;
}

static int do_seek(const char *path, const char *whence, const char *off)
{
	int fd = open_file(path);
	int w;
	off_t r;

	if (strcmp(whence, "data") == 0)
		w = SEEK_DATA;
	else if (strcmp(whence, "hole") == 0)
		w = SEEK_HOLE;
	else
		usage();
	r = lseek(fd, (off_t)parse_u64(off), w);
	if (r < 0) {
		if (errno != ENXIO)
			die("lseek");
		printf("ENXIO\n");
	} else {
		printf("%lld\n", (long long)r);
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && argc <= 5 && strcmp(argv[1], "fiemap") == 0)
		return do_fiemap(argv[2], argc > 3 ? parse_u64(argv[3]) : 0,
				 argc > 4 ? parse_u64(argv[4]) : ~0ULL);
	if (argc == 3 && strcmp(argv[1], "seekmap") == 0)
		return do_seekmap(argv[2]);
	if (argc == 5 && strcmp(argv[1], "seek") == 0)
		return do_seek(argv[2], argv[3], argv[4]);
	usage();
	return 1;
}
