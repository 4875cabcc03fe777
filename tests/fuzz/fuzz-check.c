// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness for the checker: tlog_check_image() on images that
 * libFuzzer's input changes.  Built by tests/fuzz/build.sh, run by
 * tests/cli/340-check-libfuzzer.sh.
 *
 * Why the input is a list of patches and not an image: the smallest image
 * tlogctl mkfs makes is 89 MiB, almost all zeros, and the few hundred KiB
 * of metadata are scattered through it.  A raw image as input would make
 * libFuzzer spend its mutations on zeros (and copy 89 MiB per run); the
 * first N KiB of an image hold no tree block at all.  So the image is a
 * fixed base, loaded once, and the input says what to change in it:
 * bytes of a superblock copy or of a tree block, each in every copy of
 * the block (DUP) and, unless asked otherwise, with the checksum
 * re-sealed so that the change reaches the checks past the checksum.
 * Every mutation libFuzzer makes then lands on metadata.
 *
 * The base is the image named by TLOG_FUZZ_IMAGE (340 makes one with
 * tlogctl mkfs and run: files, xattrs, links, a snapshot, an fsync log)
 * or, without it, a fresh filesystem made in memory.  Its targets are
 * found once: the superblock copies inside it, then every block that
 * carries the filesystem's fsid and a valid checksum (scanned at every
 * sector), a block's copies grouped by address and generation.
 *
 * Input:
 *	byte 0		options: bit 0 --log-only, bit 1 --check-data-csum
 *	then records, each
 *	  byte 0	bit 0: XOR the bytes in (else overwrite);
 *			bit 1: leave the checksum stale (else re-seal it)
 *	  bytes 1-2	target, little endian, modulo the number of targets
 *	  bytes 3-4	offset in the target, modulo its size
 *	  byte 5	length - 1 in bits 0-2 (1 to 8 bytes)
 *	  then the bytes (a record cut short by the end of the input uses
 *	  what there is)
 *	at most MAX_RECORDS records; the rest of the input is ignored.
 *
 * Every run starts from the base: the patched targets are put back after
 * the check.  The check runs in one thread (reproducible), reports to a
 * function that only reads what it is given, and must not write to the
 * device: a write aborts the run.  Reproduce a finding with
 * "TLOG_FUZZ_IMAGE=BASE ./fuzz-check CRASH-FILE"; with TLOG_FUZZ_WRITE=OUT
 * the patched image is also written to OUT (sparse), for tlogctl check.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockdev.h"
#include "check.h"
#include "csum.h"
#include "errctx.h"
#include "format.h"
#include "mkfs.h"

#define MAX_RECORDS	64
#define RECORD_HEAD	6

/* A place to patch: a superblock copy or a tree block in all its copies. */
struct target {
	u64 phys[2];		/* the copies' offsets in the device */
	int nr_copies;
	u32 size;
	u64 bytenr;		/* the header's bytenr (0 for a superblock) */
	u64 generation;
};

static struct tlog_bdev *dev;	/* the base, patched in place and put back */
static u8 *img;
static u64 img_size;
static u16 csum_type;
static u32 nodesize, sectorsize;
static struct target *targets;
static size_t nr_targets;
static u8 *saved;		/* the bytes of each target patched in this run */
static size_t saved_of[MAX_RECORDS];
static size_t nr_saved;

static void die(const char *what)
{
	const char *why = tlog_error_get();

	fprintf(stderr, "fuzz-check: %s%s%s\n", what, why ? ": " : "", why ? why : "");
	exit(1);
}

/* Read the whole base image into the memory device (its holes stay zero pages). */
static void load_image(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	u64 pos = 0;

	if (fd < 0 || fstat(fd, &st) || st.st_size < (off_t)(BTRFS_SUPER_INFO_OFFSET +
							    BTRFS_SUPER_INFO_SIZE))
		die("cannot open TLOG_FUZZ_IMAGE or it is too small");
	if (tlog_bdev_create_memory("fuzz", st.st_size, &dev))
		die("no memory for the image");
	img = tlog_bdev_memory_data(dev);
	img_size = st.st_size;
	while (pos < img_size) {
		off_t data = lseek(fd, pos, SEEK_DATA), hole;

		if (data < 0)
			break;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			hole = img_size;
		for (pos = data; pos < (u64)hole;) {
			ssize_t n = pread(fd, img + pos, hole - pos, pos);

			if (n <= 0)
				die("cannot read TLOG_FUZZ_IMAGE");
			pos += n;
		}
	}
	close(fd);
}

/* No base image given: a fresh filesystem, made in memory. */
static void make_image(void)
{
	struct tlog_mkfs_cfg cfg;
	struct tlog_mkfs_result res;

	tlog_mkfs_default_cfg(&cfg);
	img_size = tlog_mkfs_min_size(&cfg);
	if (tlog_bdev_create_memory("fuzz", img_size, &dev) || tlog_mkfs(dev, &cfg, &res))
		die("cannot make a filesystem in memory");
	img = tlog_bdev_memory_data(dev);
}

static void add_target(u64 phys, u32 size, u64 bytenr, u64 generation)
{
	struct target *t;

	for (size_t i = 0; bytenr && i < nr_targets; i++) {
		t = &targets[i];
		if (t->bytenr == bytenr && t->generation == generation && t->nr_copies < 2 &&
		    !memcmp(img + t->phys[0], img + phys, size)) {
			t->phys[t->nr_copies++] = phys;
			return;
		}
	}
	t = realloc(targets, (nr_targets + 1) * sizeof(*t));
	if (!t)
		die("no memory");
	targets = t;
	t = &targets[nr_targets++];
	*t = (struct target){ .phys = { phys }, .nr_copies = 1, .size = size, .bytenr = bytenr,
			      .generation = generation };
}

static bool csum_ok(const u8 *buf, u32 size)
{
	u8 c[BTRFS_CSUM_SIZE];

	return !btrfs_csum_data(csum_type, buf + BTRFS_CSUM_SIZE, size - BTRFS_CSUM_SIZE, c) &&
	       !memcmp(c, buf, btrfs_csum_type_size(csum_type));
}

/* The superblock copies, then every tree block of the base (see the top). */
static void find_targets(void)
{
	const struct btrfs_super_block *sb = (void *)(img + BTRFS_SUPER_INFO_OFFSET);

	csum_type = le16toh(sb->csum_type);
	nodesize = le32toh(sb->nodesize);
	sectorsize = le32toh(sb->sectorsize);
	if (!btrfs_csum_type_supported(csum_type) || nodesize < 4096 || nodesize > 65536 ||
	    sectorsize < 4096 || sectorsize > nodesize)
		die("the base image's superblock is not usable");
	for (int m = 0; m < BTRFS_SUPER_MIRROR_MAX; m++)
		if (btrfs_sb_offset(m) + BTRFS_SUPER_INFO_SIZE <= img_size)
			add_target(btrfs_sb_offset(m), BTRFS_SUPER_INFO_SIZE, 0, 0);
	for (u64 p = 0; p + nodesize <= img_size; p += sectorsize) {
		const struct btrfs_header *h = (void *)(img + p);

		if (memcmp(h->fsid, sb->fsid, BTRFS_FSID_SIZE) || !h->bytenr ||
		    !csum_ok(img + p, nodesize))
			continue;
		add_target(p, nodesize, le64toh(h->bytenr), le64toh(h->generation));
	}
	saved = malloc((size_t)MAX_RECORDS * 65536);
	if (!saved)
		die("no memory");
	fprintf(stderr, "fuzz-check: %llu-byte image, %zu targets (nodesize %u)\n",
		(unsigned long long)img_size, nr_targets, nodesize);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("TLOG_FUZZ_IMAGE");

	(void)argc;
	(void)argv;
	if (path && *path)
		load_image(path);
	else
		make_image();
	find_targets();
	return 0;
}

/* Keep the bytes of target @t before its first patch of this run. */
static void save_target(size_t t)
{
	for (size_t i = 0; i < nr_saved; i++)
		if (saved_of[i] == t)
			return;
	memcpy(saved + nr_saved * 65536, img + targets[t].phys[0], targets[t].size);
	saved_of[nr_saved++] = t;
}

static void restore_targets(void)
{
	for (size_t i = 0; i < nr_saved; i++) {
		const struct target *t = &targets[saved_of[i]];

		for (int c = 0; c < t->nr_copies; c++)
			memcpy(img + t->phys[c], saved + i * 65536, t->size);
	}
	nr_saved = 0;
}

/* Apply one record to every copy of its target. */
static void apply(const u8 *rec, size_t len, size_t avail)
{
	size_t t = (rec[1] | rec[2] << 8) % nr_targets;
	const struct target *tg = &targets[t];
	u32 off = (rec[3] | rec[4] << 8) % tg->size;
	u8 *buf = img + tg->phys[0];

	save_target(t);
	if (len > avail)
		len = avail;
	if (len > tg->size - off)
		len = tg->size - off;
	for (size_t i = 0; i < len; i++) {
		u8 b = rec[RECORD_HEAD + i];

		buf[off + i] = (rec[0] & 1) ? buf[off + i] ^ b : b;
	}
	if (!(rec[0] & 2)) {
		u8 c[BTRFS_CSUM_SIZE];

		if (!btrfs_csum_data(csum_type, buf + BTRFS_CSUM_SIZE, tg->size - BTRFS_CSUM_SIZE,
				     c))
			memcpy(buf, c, BTRFS_CSUM_SIZE);
	}
	for (int c = 1; c < tg->nr_copies; c++)
		memcpy(img + tg->phys[c], buf, tg->size);
}

/* TLOG_FUZZ_WRITE: the patched image, its zero pages left as holes. */
static void write_image(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	static const u8 zero[4096];

	if (fd < 0 || ftruncate(fd, img_size))
		die("cannot write TLOG_FUZZ_WRITE");
	for (u64 p = 0; p < img_size; p += 4096) {
		size_t n = img_size - p < 4096 ? img_size - p : 4096;

		if (memcmp(img + p, zero, n) && pwrite(fd, img + p, n, p) != (ssize_t)n)
			die("cannot write TLOG_FUZZ_WRITE");
	}
	close(fd);
}

/* Reports are only read: a string not terminated, a bad pointer, shows under ASan. */
static void report(const struct tlog_problem *p, void *arg)
{
	size_t *n = arg;

	*n += strlen(p->area) + strnlen(p->what, sizeof(p->what)) + (p->grade == TLOG_CHECK_IMAGE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t reported = 0, pos = 1, records = 0;
	struct tlog_check_opts opts = {
		.threads = 1, .super_mirror = -1, .report = report, .report_arg = &reported,
	};
	struct tlog_check_stats st;
	u64 writes = dev->nr_writes;

	if (!size)
		return 0;
	opts.log_only = data[0] & 1;
	opts.check_data_csum = data[0] & 2;
	while (pos + RECORD_HEAD <= size && records++ < MAX_RECORDS) {
		size_t len = (data[pos + 5] & 7) + 1;

		apply(data + pos, len, size - pos - RECORD_HEAD);
		pos += RECORD_HEAD + len;
	}
	if (getenv("TLOG_FUZZ_WRITE"))
		write_image(getenv("TLOG_FUZZ_WRITE"));
	memset(&st, 0, sizeof(st));
	tlog_error_clear();
	tlog_check_image(dev, &opts, &st);
	if (dev->nr_writes != writes) {
		fprintf(stderr, "fuzz-check: the check wrote to the image it checks\n");
		abort();
	}
	restore_targets();
	return 0;
}
