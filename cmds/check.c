// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl check: is this image consistent, and will its log replay?
 *
 * Problems are printed as they are found, one line each (or one JSON
 * object each, streamed), so a badly damaged image shows its first
 * problems at once and memory does not grow with their number.  The exit
 * status is what scripts branch on: 0 clean, 1 problems found, 2 the check
 * could not run (usage, I/O, not btrfs) - as fsck and btrfs check do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "blockdev.h"
#include "check.h"
#include "errctx.h"
#include "json-writer.h"
#include "messages.h"
#include "open.h"
#include "print-tree.h"
#include "progress.h"
#include "strutil.h"

static const char * const check_usage[] = {
	"tlogctl check [--log-only] [--check-data-csum] [--format json] [-q] IMAGE",
	"Check a btrfs image for consistency, and that its log tree will replay",
	"",
	"Reads every tree block and item of the image: superblock copies, chunks",
	"and device extents, every tree's blocks, keys and items, the extent tree",
	"against every reference to a tree block or data extent, block group and",
	"free space accounting, and in each subvolume inodes, names, link counts,",
	"file extents and checksums.  A log tree is checked block by block and",
	"inode by inode, then replayed in memory (the image is never written) and",
	"the result checked again: a clean verdict means a mount will replay it.",
	"",
	"Every problem is printed with its place (tree, block, slot, key).  Exit",
	"status: 0 clean, 1 problems found, 2 could not check.",
	"",
	"--log-only           only the log trees and their replay",
	"--check-data-csum    also read all data and verify its checksums",
	"-q|--quiet           print problems only: no warnings, no summary",
	"--threads N          1 to check everything in one thread (default 2)",
	NULL
};

enum {
	GETOPT_VAL_LOG_ONLY = GETOPT_VAL_FIRST_CMD,
	GETOPT_VAL_DATA_CSUM,
	GETOPT_VAL_THREADS,
};

struct check_output {
	enum output_format format;
	struct json_writer jw;
	struct progress progress;
	const char *phase;
	bool progress_on;
	bool quiet;		/* problems only: no warnings, summary or progress */
};

static const char *grade_name(enum tlog_check_grade grade)
{
	switch (grade) {
	case TLOG_CHECK_WARNING:
		return "warning";
	case TLOG_CHECK_ITEM:
		return "item";
	case TLOG_CHECK_TREE:
		return "tree";
	case TLOG_CHECK_IMAGE:
		return "image";
	}
	return "?";
}

/*
 * The tree a problem is in.  The log pass names a log tree by the
 * subvolume it belongs to: "log tree of fs tree".
 */
static void tree_label(const struct tlog_problem *p, char *buf, size_t size)
{
	char name[64];

	btrfs_tree_name(p->tree, name, sizeof(name));
	if (strcmp(p->area, "log") == 0 && p->tree != BTRFS_TREE_LOG_OBJECTID)
		snprintf(buf, size, "log tree of %s", name);
	else
		snprintf(buf, size, "%s", name);
}

/* "tree 5 block 30539776 slot 3 key (257 INODE_ITEM 0)": as much as is known. */
static void format_place(const struct tlog_problem *p, char *buf, size_t size)
{
	char tree[96], key[160];
	size_t len = 0;

	buf[0] = '\0';
	if (p->tree) {
		tree_label(p, tree, sizeof(tree));
		len += snprintf(buf + len, size - len, "%s", tree);
	}
	if (p->block && len < size)
		len += snprintf(buf + len, size - len, "%sblock %llu", len ? " " : "",
				(unsigned long long)p->block);
	if (p->slot >= 0 && len < size)
		len += snprintf(buf + len, size - len, "%sslot %d", len ? " " : "", p->slot);
	if (p->has_key && len < size) {
		btrfs_key_to_str(&p->key, key, sizeof(key));
		snprintf(buf + len, size - len, "%skey %s", len ? " " : "", key);
	}
}

static void print_problem_text(const struct tlog_problem *p)
{
	char place[320];

	format_place(p, place, sizeof(place));
	printf("%s%s%s: %s%s%s%s\n", p->grade == TLOG_CHECK_WARNING ? "warning: " : "",
	       p->after_replay ? "after replay: " : "", p->area, place,
	       place[0] ? ": " : "", p->what,
	       p->grade <= TLOG_CHECK_ITEM ? "" :
	       p->grade == TLOG_CHECK_TREE ? " [not checked below]" : " [image unusable]");
}

static void print_problem_json(struct json_writer *w, const struct tlog_problem *p)
{
	json_object *o = json_object_new_object();
	char tree[96];

	json_add_str(o, "area", p->area);
	json_add_str(o, "grade", grade_name(p->grade));
	if (p->tree) {
		tree_label(p, tree, sizeof(tree));
		json_add_u64(o, "tree", p->tree);
		json_add_str(o, "tree_name", tree);
	}
	if (p->block)
		json_add_u64(o, "block", p->block);
	if (p->slot >= 0)
		json_add_u64(o, "slot", (u64)p->slot);
	if (p->has_key) {
		json_object *k = json_object_new_object();
		char type[48];

		btrfs_key_type_to_str(p->key.type, type, sizeof(type));
		json_add_u64(k, "objectid", p->key.objectid);
		json_add_str(k, "type", type);
		json_add_u64(k, "offset", p->key.offset);
		json_object_object_add(o, "key", k);
	}
	json_object_object_add(o, "after_replay", json_object_new_boolean(p->after_replay));
	json_add_str(o, "what", p->what);
	jsonw_json(w, o);
}

static void report(const struct tlog_problem *p, void *arg)
{
	struct check_output *out = arg;

	if (out->quiet && p->grade == TLOG_CHECK_WARNING)
		return;
	if (out->progress.shown)
		progress_end(&out->progress);
	if (out->format == OUTPUT_JSON)
		print_problem_json(&out->jw, p);
	else
		print_problem_text(p);
}

static void show_progress(const char *phase, u64 done, u64 total, void *arg)
{
	struct check_output *out = arg;

	if (!out->progress_on)
		return;
	if (phase != out->phase || !out->progress.on) {
		progress_end(&out->progress);
		progress_init(&out->progress, phase, total ? total : 1, true);
		out->phase = phase;
	}
	out->progress.total = total && total > done ? total : done + 1;
	progress_update(&out->progress, done);
}

static void print_summary_text(const char *image, const struct tlog_check_stats *st,
			       bool log_only)
{
	printf("%s: %s%s\n", image, st->problems ? "problems found" : "clean",
	       log_only ? " (the log only)" : "");
	printf("  %llu problem%s", (unsigned long long)st->problems, st->problems == 1 ? "" : "s");
	if (!log_only)
		printf(", %llu trees, %llu tree blocks, %llu items, %llu inodes, %llu names, %llu data references",
		       (unsigned long long)st->trees, (unsigned long long)st->tree_blocks,
		       (unsigned long long)st->items, (unsigned long long)st->inodes,
		       (unsigned long long)st->names, (unsigned long long)st->data_refs);
	printf("\n");
	if (st->warnings)
		printf("  %llu warning%s (harmless to the kernel)\n", (unsigned long long)st->warnings,
		       st->warnings == 1 ? "" : "s");
	if (st->data_bytes_verified)
		printf("  %llu data bytes read and verified against their checksums\n",
		       (unsigned long long)st->data_bytes_verified);
	if (!st->has_log)
		printf("  no log tree\n");
	else if (!st->log_replayed)
		printf("  log: %llu log tree%s, not replayed\n", (unsigned long long)st->log_trees,
		       st->log_trees == 1 ? "" : "s");
	else
		printf("  log: %llu log tree%s, replayed in memory%s\n",
		       (unsigned long long)st->log_trees, st->log_trees == 1 ? "" : "s",
		       log_only ? "" : " and the result checked");
}

static void print_summary_json(struct json_writer *w, const struct tlog_check_stats *st)
{
	json_object *o = json_object_new_object();

	json_add_u64(o, "problems", st->problems);
	json_add_u64(o, "warnings", st->warnings);
	json_add_u64(o, "trees", st->trees);
	json_add_u64(o, "tree_blocks", st->tree_blocks);
	json_add_u64(o, "items", st->items);
	json_add_u64(o, "extent_items", st->extent_items);
	json_add_u64(o, "data_refs", st->data_refs);
	json_add_u64(o, "inodes", st->inodes);
	json_add_u64(o, "names", st->names);
	json_add_u64(o, "csum_bytes", st->csum_bytes);
	json_add_u64(o, "data_bytes_verified", st->data_bytes_verified);
	json_object_object_add(o, "has_log", json_object_new_boolean(st->has_log));
	json_add_u64(o, "log_trees", st->log_trees);
	json_object_object_add(o, "log_replayed", json_object_new_boolean(st->log_replayed));
	jsonw_json_field(w, "stats", o);
	jsonw_name(w, "clean");
	jsonw_json(w, json_object_new_boolean(st->problems == 0));
}

static int parse_threads(const char *arg, int *ret)
{
	u64 n;

	if (parse_u64(arg, false, &n) || n < 1 || n > 2)
		return -EINVAL;
	*ret = (int)n;
	return 0;
}

static int cmd_check(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "log-only", no_argument, NULL, GETOPT_VAL_LOG_ONLY },
		{ "check-data-csum", no_argument, NULL, GETOPT_VAL_DATA_CSUM },
		{ "threads", required_argument, NULL, GETOPT_VAL_THREADS },
		{ "quiet", no_argument, NULL, 'q' },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	struct check_output out = { 0 };
	struct tlog_check_opts opts = { .threads = 2, .report = report, .report_arg = &out,
					.progress = show_progress, .progress_arg = &out };
	struct tlog_check_stats st;
	struct tlog_bdev *bdev;
	bool quiet = false;
	const char *image;
	int c, err;

	while ((c = cmd_next_option(cmd, argc, argv, "q", long_options, &common)) != -1) {
		switch (c) {
		case GETOPT_VAL_LOG_ONLY:
			opts.log_only = true;
			break;
		case GETOPT_VAL_DATA_CSUM:
			opts.check_data_csum = true;
			break;
		case GETOPT_VAL_THREADS:
			if (parse_threads(optarg, &opts.threads)) {
				error("invalid thread count '%s' (use 1 or 2)", optarg);
				return 2;
			}
			break;
		case 'q':
			quiet = true;
			break;
		}
	}
	check_argc(cmd, argc, 1, 1);
	opts.super_mirror = common.super_mirror;
	image = argv[optind];
	err = tlog_bdev_open_file(image, TLOG_BDEV_RDONLY, &bdev);
	if (err) {
		error_errno(err, "cannot open %s", image);
		return 2;
	}
	out.format = common.format;
	out.quiet = quiet;
	out.progress_on = !quiet && isatty(STDERR_FILENO);
	if (out.format == OUTPUT_JSON) {
		jsonw_init(&out.jw, stdout);
		jsonw_start_object(&out.jw);
		jsonw_string_field(&out.jw, "image", image);
		jsonw_name(&out.jw, "problems");
		jsonw_start_array(&out.jw);
	}
	tlog_error_clear();
	err = tlog_check_image(bdev, &opts, &st);
	progress_end(&out.progress);
	tlog_bdev_close(bdev);
	if (err) {
		if (out.format == OUTPUT_JSON) {
			jsonw_end_array(&out.jw);
			jsonw_end_object(&out.jw);
			jsonw_end(&out.jw);
		}
		error_errno(err, "cannot check %s", image);
		output_finish(2);
		return 2;
	}
	if (out.format == OUTPUT_JSON) {
		jsonw_end_array(&out.jw);
		print_summary_json(&out.jw, &st);
		jsonw_end_object(&out.jw);
		jsonw_end(&out.jw);
	} else if (!quiet) {
		print_summary_text(image, &st, opts.log_only);
	}
	if (output_finish(0))
		return 2;
	return st.problems ? 1 : 0;
}

const struct cmd_struct cmd_struct_check = {
	.name = "check",
	.fn = cmd_check,
	.usage = check_usage,
	.flags = CMD_JSON | CMD_USAGE_EXIT2,
};
