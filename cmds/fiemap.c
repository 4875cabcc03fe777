// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl fiemap: the FIEMAP answers the kernel gives for a file of the
 * image once mounted, shown like `xfs_io -c "fiemap -v"` or as JSON.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "commands.h"
#include "errctx.h"
#include "messages.h"
#include "open.h"
#include "format-pipe.h"
#include "outbuf.h"
#include "path.h"
#include "strutil.h"

static const char * const fiemap_usage[] = {
	"tlogctl fiemap [-v] [--format json] IMAGE PATH [OFFSET [LENGTH]]",
	"Show the extent map of a file as FIEMAP reports it",
	"",
	"Text output follows xfs_io's fiemap command (512-byte units, holes",
	"shown between extents); -v gives the tabular layout of fiemap -v.",
	"The JSON output holds the FIEMAP ioctl's own numbers in bytes, from one",
	"request over the range with room for every extent:",
	"{\"extents\":[{\"logical\":N,\"physical\":N,\"length\":N,\"flags\":N},...]}.",
	"OFFSET and LENGTH take K/M/G/T suffixes; LENGTH defaults to the end.",
	"",
	"-v|--verbose        tabular output with block ranges, totals and flags",
	NULL
};

/* xfs_io asks the kernel for this many extents per call. */
#define XFS_IO_BATCH 32
#define BB(bytes) ((bytes) >> 9)

static int fiemap_error(int err, const char *path, const struct tlog_fiemap_request *req)
{
	if (err == -EBADR)
		error("FIEMAP of %s failed (unsupported flags 0x%x)", path, req->flags);
	else
		error_errno(err, "FIEMAP of %s failed", path);
	return 1;
}

/*
 * JSON is streamed as the walk finds the extents (a map can have
 * millions), printed on a second thread (format-pipe.h); an error before
 * the first 256 KiB of output prints nothing of the document, a later one
 * leaves it unfinished.
 */
static void format_json_extent(struct outbuf *ob, const void *rec, void *arg)
{
	const struct tlog_fiemap_extent *ext = rec;
	bool *first = arg;

	if (!*first)
		outbuf_lit(ob, ",");
	*first = false;
	outbuf_lit(ob, "{\"logical\":");
	outbuf_u64(ob, ext->logical);
	outbuf_lit(ob, ",\"physical\":");
	outbuf_u64(ob, ext->physical);
	outbuf_lit(ob, ",\"length\":");
	outbuf_u64(ob, ext->length);
	outbuf_lit(ob, ",\"flags\":");
	outbuf_u64(ob, ext->flags);
	outbuf_lit(ob, "}");
}

/* a failed write ends the walk: what follows would be lost too */
static int put_extent(const struct tlog_fiemap_extent *ext, void *arg)
{
	return format_pipe_put(arg, ext);
}

static int print_json(struct tlog_file *file, const char *path, u64 start, u64 length)
{
	static struct outbuf ob;	/* large: not on the stack */
	struct format_pipe *fp;
	bool first = true;
	int err, out_err;

	fflush(stdout);
	outbuf_init(&ob, STDOUT_FILENO);
	outbuf_lit(&ob, "{\"extents\":[");
	err = format_pipe_start(&ob, sizeof(struct tlog_fiemap_extent), format_json_extent,
				&first, &fp);
	if (err) {
		error_errno(err, "FIEMAP of %s failed", path);
		return 1;
	}
	err = tlog_file_fiemap_each(file, start, length, put_extent, fp);
	out_err = format_pipe_end(fp);
	if (err && !out_err) {
		struct tlog_fiemap_request req = { .flags = 0 };

		return fiemap_error(err, path, &req);
	}
	outbuf_lit(&ob, "]}\n");
	err = outbuf_flush(&ob);
	if (err) {
		output_error(err);
		return 1;
	}
	return 0;
}

static int numlen(u64 v, int base)
{
	int n = 1;

	while (v >= (u64)base) {
		v /= base;
		n++;
	}
	return n;
}

struct fiemap_text {
	bool verbose;
	int foff_w, boff_w, tot_w, flg_w;
	int cur;		/* lines printed (extent numbering) */
	u64 last_logical;	/* end of the last extent shown, bytes */
};

/* Column widths from the first batch, as xfs_io sizes its table. */
static void size_columns(struct fiemap_text *t, const struct tlog_fiemap_extent *ext, u32 nr)
{
	char buf[64];

	for (u32 i = 0; i < nr; i++) {
		u64 l = BB(ext[i].logical), p = BB(ext[i].physical), n = BB(ext[i].length);
		int w;

		w = snprintf(buf, sizeof(buf), "[%llu..%llu]", (unsigned long long)l,
			     (unsigned long long)(l + n - 1));
		if (w > t->foff_w)
			t->foff_w = w;
		w = snprintf(buf, sizeof(buf), "%llu..%llu", (unsigned long long)p,
			     (unsigned long long)(p + n - 1));
		if (w > t->boff_w)
			t->boff_w = w;
		if (numlen(n, 10) > t->tot_w)
			t->tot_w = numlen(n, 10);
		if (numlen(ext[i].flags, 16) > t->flg_w)
			t->flg_w = numlen(ext[i].flags, 16);
		if (ext[i].flags & TLOG_FIEMAP_EXTENT_LAST)
			break;
	}
}

static void print_hole(struct fiemap_text *t, u64 from_bb, u64 to_bb)
{
	char lbuf[64];

	snprintf(lbuf, sizeof(lbuf), "[%llu..%llu]:", (unsigned long long)from_bb,
		 (unsigned long long)(to_bb - 1));
	if (t->verbose)
		printf("%4d: %-*s %-*s %*llu\n", t->cur, t->foff_w, lbuf, t->boff_w, "hole",
		       t->tot_w, (unsigned long long)(to_bb - from_bb));
	else
		printf("\t%d: %s hole\n", t->cur, lbuf);
	t->cur++;
}

static void print_extent(struct fiemap_text *t, const struct tlog_fiemap_extent *e)
{
	u64 l = BB(e->logical), p = BB(e->physical), n = BB(e->length);
	char lbuf[64], bbuf[64], fbuf[16];

	if (t->verbose && t->cur == 0)
		printf("%4s: %-*s %-*s %*s %*s\n", "EXT", t->foff_w, "FILE-OFFSET",
		       t->boff_w, "BLOCK-RANGE", t->tot_w, "TOTAL", t->flg_w, "FLAGS");
	if (l > BB(t->last_logical))
		print_hole(t, BB(t->last_logical), l);
	snprintf(lbuf, sizeof(lbuf), "[%llu..%llu]:", (unsigned long long)l,
		 (unsigned long long)(l + n - 1));
	snprintf(bbuf, sizeof(bbuf), "%llu..%llu", (unsigned long long)p,
		 (unsigned long long)(p + n - 1));
	if (t->verbose) {
		snprintf(fbuf, sizeof(fbuf), "0x%x", e->flags);
		printf("%4d: %-*s %-*s %*llu %*s\n", t->cur, t->foff_w, lbuf, t->boff_w, bbuf,
		       t->tot_w, (unsigned long long)n, t->flg_w, fbuf);
	} else {
		printf("\t%d: %s %s\n", t->cur, lbuf, bbuf);
	}
	t->cur++;
	t->last_logical = e->logical + e->length;
}

/*
 * The xfs_io walk: batches of 32 from the end of the last extent shown,
 * until LAST or the end of the range, then the hole up to EOF.
 */
static int print_text(struct tlog_file *file, const char *path, u64 start, u64 length,
		      bool verbose)
{
	struct fiemap_text t = { .verbose = verbose, .foff_w = 16, .boff_w = 16,
				 .tot_w = 5, .flg_w = 5, .last_logical = start };
	struct tlog_fiemap_extent ext[XFS_IO_BATCH];
	u64 range_end = length > (u64)-1 - start ? (u64)-1 : start + length;
	bool done = false, named = false;
	int err;

	/* after a write error the rest would be lost: the dispatcher reports it */
	while (!done && !output_failed()) {
		struct tlog_fiemap_request req = {
			.start = t.last_logical, .length = range_end - t.last_logical,
			.extent_count = XFS_IO_BATCH,
		};

		err = tlog_file_fiemap(file, &req, ext);
		if (err)
			return fiemap_error(err, path, &req);
		/* the name goes out once the request is known to be valid */
		if (!named) {
			printf("%s:\n", path);
			named = true;
		}
		if (!req.mapped_extents)
			break;
		if (t.cur == 0 && verbose)
			size_columns(&t, ext, req.mapped_extents);
		for (u32 i = 0; i < req.mapped_extents; i++) {
			print_extent(&t, &ext[i]);
			if ((ext[i].flags & TLOG_FIEMAP_EXTENT_LAST) || t.last_logical >= range_end) {
				done = true;
				break;
			}
		}
	}
	if (range_end > file->size)
		range_end = file->size;
	if (t.cur && t.last_logical < range_end)
		print_hole(&t, BB(t.last_logical), BB(range_end));
	return 0;
}

static int cmd_fiemap(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "verbose", no_argument, NULL, 'v' },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	struct tlog_file *file = NULL;
	struct tlog_fs *fs;
	u64 start = 0, length = (u64)-1;
	bool verbose = false;
	const char *image, *path;
	int c, ret = 0;

	while ((c = cmd_next_option(cmd, argc, argv, "v", long_options, &common)) != -1) {
		switch (c) {
		case 'v':
			verbose = true;
			break;
		}
	}
	check_argc(cmd, argc, 2, 4);
	image = argv[optind];
	path = argv[optind + 1];
	if (argc - optind >= 3 && parse_u64(argv[optind + 2], true, &start)) {
		error("invalid offset '%s'", argv[optind + 2]);
		return 1;
	}
	if (argc - optind == 4 && parse_u64(argv[optind + 3], true, &length)) {
		error("invalid length '%s'", argv[optind + 3]);
		return 1;
	}

	if (cmd_open_file(&common, image, path, &fs, &file))
		return 1;
	tlog_error_clear();
	if (common.format == OUTPUT_JSON) {
		ret = print_json(file, path, start, length);
	} else {
		ret = print_text(file, path, start, length, verbose);
	}
	tlog_file_close(file);
	tlog_close(fs);
	return ret;
}

const struct cmd_struct cmd_struct_fiemap = {
	.name = "fiemap",
	.fn = cmd_fiemap,
	.usage = fiemap_usage,
	.flags = CMD_JSON | CMD_PATH,
};
