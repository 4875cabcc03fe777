// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl seek: SEEK_DATA / SEEK_HOLE answers for a file of the image, as
 * the kernel gives them once mounted, shown like `xfs_io -c "seek ..."`.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "commands.h"
#include "errctx.h"
#include "json-writer.h"
#include "messages.h"
#include "open.h"
#include "outbuf.h"
#include "path.h"
#include "strutil.h"

static const char * const seek_usage[] = {
	"tlogctl seek [-s] [--format json] IMAGE PATH (-d|-h|-a) [-r] OFFSET",
	"Find data and holes in a file as SEEK_DATA and SEEK_HOLE report them",
	"",
	"Text output follows xfs_io's seek command.  With -a -r the JSON output",
	"is the file's data map: {\"size\":N,\"map\":[{\"data\":D,\"hole\":H},...]},",
	"each data segment as SEEK_DATA then SEEK_HOLE report it, from OFFSET to",
	"the end of the file.  Otherwise it lists the results in order:",
	"{\"size\":N,\"results\":[{\"whence\":\"DATA\",\"offset\":N|null},...]}",
	"where null stands for ENXIO (EOF).",
	"",
	"-d|--data           the next data at or after OFFSET",
	"-h|--hole           the next hole at or after OFFSET",
	"-a|--all            both the next data and the next hole",
	"-r|--recursive      all remaining data and/or holes after OFFSET",
	"-s|--start          also print the offset each search started from",
	NULL
};

#define WANT_DATA	(1U << 0)
#define WANT_HOLE	(1U << 1)
#define WANT_ALL	(1U << 2)

struct seek_out {
	bool json;
	bool startflag;
	u64 size;		/* of the file, the JSON document's first member */
	/*
	 * -r lists every extent: the JSON results are streamed, the document
	 * begun with the first of them so that an early error prints nothing.
	 */
	struct json_writer jw;
	bool jstarted;
};

static void begin_json_results(struct seek_out *o)
{
	if (o->jstarted)
		return;
	jsonw_init(&o->jw, stdout);
	jsonw_start_object(&o->jw);
	jsonw_u64_field(&o->jw, "size", o->size);
	jsonw_name(&o->jw, "results");
	jsonw_start_array(&o->jw);
	o->jstarted = true;
}

/* After a successful walk; a failed one leaves the document unfinished. */
static void end_json_results(struct seek_out *o)
{
	begin_json_results(o);
	jsonw_end_array(&o->jw);
	jsonw_end_object(&o->jw);
	jsonw_end(&o->jw);
}

/* One result line; @err is 0 or -ENXIO. */
static void emit(struct seek_out *o, const char *type, u64 start, u64 result, int err)
{
	if (o->json) {
		json_object *r = json_object_new_object();

		json_add_str(r, "whence", type);
		if (o->startflag)
			json_add_u64(r, "start", start);
		json_object_object_add(r, "offset", err ? NULL : json_object_new_uint64(result));
		begin_json_results(o);
		jsonw_json(&o->jw, r);
		return;
	}
	if (o->startflag && err)
		printf("%s\t%llu\tEOF\n", type, (unsigned long long)start);
	else if (err)
		printf("%s\tEOF\n", type);
	else if (o->startflag)
		printf("%s\t%llu\t%llu\n", type, (unsigned long long)start,
		       (unsigned long long)result);
	else
		printf("%s\t%llu\n", type, (unsigned long long)result);
}

static int do_seek(struct tlog_file *file, u64 start, int whence, u64 *ret)
{
	int err = tlog_file_seek(file, (s64)start, whence, ret);

	if (err && err != -ENXIO)
		error_errno(err, "seek in the file failed");
	return err;
}

/*
 * xfs_io's walk: start with the hole at OFFSET if there is one (or if only
 * holes are wanted), else with data; then alternate, printing the kinds
 * asked for, until EOF or, without -r, until each kind was printed once.
 */
static int seek_walk(struct tlog_file *file, u64 offset, unsigned int want,
		     struct seek_out *o)
{
	static const char *const names[] = { "DATA", "HOLE" };
	static const int whence[] = { TLOG_SEEK_DATA, TLOG_SEEK_HOLE };
	u64 start = offset, result = 0;
	int cur, err = 0;

	cur = 0;
	if (want & WANT_HOLE) {
		err = do_seek(file, start, TLOG_SEEK_HOLE, &result);
		if (err && err != -ENXIO)
			return err;
		if ((!err && result == start) || !(want & WANT_DATA))
			cur = 1;
	}
	if (cur == 0) {
		err = do_seek(file, start, TLOG_SEEK_DATA, &result);
		if (err && err != -ENXIO)
			return err;
	}
	if (!o->json)
		printf(o->startflag ? "Whence\tStart\tResult\n" : "Whence\tResult\n");

	/* after a write error the rest would be lost: the dispatcher reports it */
	for (int n = 0; (want & (WANT_DATA | WANT_HOLE)) && !output_failed(); n++) {
		unsigned int mask = cur ? WANT_HOLE : WANT_DATA;

		if (err) {
			/* EOF is shown only when it is the only answer */
			if (n == 0)
				emit(o, names[cur], start, 0, err);
			return 0;
		}
		if (want & mask)
			emit(o, names[cur], start, result, 0);
		if (!(want & WANT_ALL))
			want &= ~mask;
		cur ^= 1;
		start = result;
		err = do_seek(file, start, whence[cur], &result);
		if (err && err != -ENXIO)
			return err;
		if (!err && result <= start) {
			error("seek went backwards: SEEK_%s at %llu gave %llu", names[cur],
			      (unsigned long long)start, (unsigned long long)result);
			return -EUCLEAN;
		}
	}
	return 0;
}

/* The data map from @offset: every data segment, SEEK_DATA then SEEK_HOLE. */
static int seek_map_json(struct tlog_file *file, u64 offset)
{
	static struct outbuf ob;	/* large: not on the stack */
	u64 pos = offset, data, hole;
	bool first = true;
	int err;

	/* streamed: a map can have millions of segments */
	fflush(stdout);
	outbuf_init(&ob, STDOUT_FILENO);
	outbuf_lit(&ob, "{\"size\":");
	outbuf_u64(&ob, file->size);
	outbuf_lit(&ob, ",\"map\":[");
	/* a failed write ends the walk: what follows would be lost too */
	while (!ob.err) {
		err = do_seek(file, pos, TLOG_SEEK_DATA, &data);
		if (err == -ENXIO)
			break;
		if (err)
			return err;
		err = do_seek(file, data, TLOG_SEEK_HOLE, &hole);
		if (err)
			return err == -ENXIO ? -EUCLEAN : err;
		if (!first)
			outbuf_lit(&ob, ",");
		outbuf_lit(&ob, "{\"data\":");
		outbuf_u64(&ob, data);
		outbuf_lit(&ob, ",\"hole\":");
		outbuf_u64(&ob, hole);
		outbuf_lit(&ob, "}");
		first = false;
		pos = hole;
	}
	outbuf_lit(&ob, "]}\n");
	err = outbuf_flush(&ob);
	if (err)
		output_error(err);
	return err;
}

static int cmd_seek(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "data", no_argument, NULL, 'd' },
		{ "hole", no_argument, NULL, 'h' },
		{ "all", no_argument, NULL, 'a' },
		{ "recursive", no_argument, NULL, 'r' },
		{ "start", no_argument, NULL, 's' },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	struct seek_out o = { 0 };
	struct tlog_file *file = NULL;
	struct tlog_fs *fs;
	unsigned int want = 0;
	u64 offset;
	const char *image, *path;
	int c, ret = 0, err;

	while ((c = cmd_next_option(cmd, argc, argv, "dhars", long_options, &common)) != -1) {
		switch (c) {
		case 'd':
			want |= WANT_DATA;
			break;
		case 'h':
			want |= WANT_HOLE;
			break;
		case 'a':
			want |= WANT_DATA | WANT_HOLE;
			break;
		case 'r':
			want |= WANT_ALL;
			break;
		case 's':
			o.startflag = true;
			break;
		}
	}
	check_argc(cmd, argc, 3, 3);
	if (!(want & (WANT_DATA | WANT_HOLE))) {
		error("seek: one of -d, -h or -a is needed");
		return 1;
	}
	image = argv[optind];
	path = argv[optind + 1];
	if (parse_u64(argv[optind + 2], true, &offset) || offset > (u64)INT64_MAX) {
		error("invalid offset '%s'", argv[optind + 2]);
		return 1;
	}

	if (cmd_open_file(&common, image, path, &fs, &file))
		return 1;
	tlog_error_clear();
	o.json = common.format == OUTPUT_JSON;
	if (o.json && (want & WANT_ALL) && (want & WANT_DATA) && (want & WANT_HOLE)) {
		err = seek_map_json(file, offset);
	} else {
		o.size = file->size;
		err = seek_walk(file, offset, want, &o);
		if (o.json && !err)
			end_json_results(&o);
	}
	if (err)
		ret = 1;
	tlog_file_close(file);
	tlog_close(fs);
	return ret;
}

const struct cmd_struct cmd_struct_seek = {
	.name = "seek",
	.fn = cmd_seek,
	.usage = seek_usage,
	.flags = CMD_JSON | CMD_PATH,
};
