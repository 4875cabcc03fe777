// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl replay-log: replay the log trees offline, with the result the
 * kernel's mount-time replay gives, in one copy-on-write transaction.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev.h"
#include "commands.h"
#include "errctx.h"
#include "messages.h"
#include "open.h"
#include "output.h"
#include "progress.h"
#include "transaction.h"
#include "tree-log.h"

static const char * const replay_log_usage[] = {
	"tlogctl replay-log [-v] [--dry-run] [--format json] IMAGE",
	"Replay the log trees of a btrfs image offline",
	"",
	"Brings every fsync the log trees hold into the subvolumes, exactly as",
	"the kernel does when it mounts the image: inodes, names, xattrs, file",
	"extents with their references and checksums, deleted names, link",
	"counts (inodes left without links get an orphan item, deleted at the",
	"next read-write mount).  Then the log is freed and the superblock's",
	"log root cleared, in one transaction written copy-on-write with the",
	"superblock last: an interrupted replay leaves the image as it was.",
	"An image without a log is left alone.",
	"",
	"-v|--verbose        list what happened to each inode",
	"-n|--dry-run        change nothing; list what the replay would do to each inode",
	"--format json       report as JSON",
	NULL
};

enum { GETOPT_VAL_DRY_RUN = GETOPT_VAL_FIRST_CMD };

static int cmp_inode(const void *a, const void *b)
{
	const struct tlog_replay_inode *x = a, *y = b;

	if (x->subvol != y->subvol)
		return x->subvol < y->subvol ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static const char *inode_action(const struct tlog_replay_inode *e)
{
	if (e->ignored)
		return "ignored (no links)";
	if (e->orphaned)
		return "orphaned";
	if (e->created)
		return "created";
	if (e->updated)
		return "updated";
	return "names";
}

static void print_text(const char *image, const struct tlog_replay_stats *st, bool dry_run,
		       bool verbose)
{
	if (verbose) {
		for (size_t i = 0; i < st->nr; i++) {
			const struct tlog_replay_inode *e = &st->inodes[i];

			printf("subvolume %" PRIu64 " inode %" PRIu64 ": %s", e->subvol, e->ino,
			       inode_action(e));
			if (e->names_added || e->names_removed)
				printf(", names +%u -%u", e->names_added, e->names_removed);
			if (e->data_bytes)
				printf(", %" PRIu64 " bytes of data", e->data_bytes);
			printf("\n");
		}
	}
	printf("%s %s: %" PRIu64 " subvolume%s, %zu inode%s, names +%" PRIu64 " -%" PRIu64
	       ", %" PRIu64 " bytes of data\n",
	       dry_run ? "Would replay the log of" : "Replayed the log of", image,
	       st->subvols, st->subvols == 1 ? "" : "s", st->nr, st->nr == 1 ? "" : "s",
	       st->names_added, st->names_removed, st->data_bytes);
	if (st->qgroup_rescan && !dry_run)
		printf("Quota groups marked for a rescan, which the kernel runs at the next mount\n");
	if (st->subvols_skipped)
		printf("%" PRIu64 " log%s of deleted subvolumes dropped\n", st->subvols_skipped,
		       st->subvols_skipped == 1 ? "" : "s");
}

static int print_json(const char *image, const struct tlog_replay_stats *st, bool dry_run,
		      bool had_log)
{
	json_object *top = json_object_new_object(), *arr = json_object_new_array();

	json_add_str(top, "image", image);
	json_object_object_add(top, "log", json_object_new_boolean(had_log));
	json_object_object_add(top, "dry_run", json_object_new_boolean(dry_run));
	json_add_u64(top, "subvolumes", st->subvols);
	json_add_u64(top, "subvolumes_skipped", st->subvols_skipped);
	json_add_u64(top, "log_blocks", st->log_blocks);
	json_add_u64(top, "names_added", st->names_added);
	json_add_u64(top, "names_removed", st->names_removed);
	json_add_u64(top, "data_bytes", st->data_bytes);
	json_object_object_add(top, "qgroup_rescan", json_object_new_boolean(st->qgroup_rescan));
	for (size_t i = 0; i < st->nr; i++) {
		const struct tlog_replay_inode *e = &st->inodes[i];
		json_object *o = json_object_new_object();

		json_add_u64(o, "subvol", e->subvol);
		json_add_u64(o, "ino", e->ino);
		json_object_object_add(o, "created", json_object_new_boolean(e->created));
		json_object_object_add(o, "updated", json_object_new_boolean(e->updated));
		json_object_object_add(o, "ignored", json_object_new_boolean(e->ignored));
		json_object_object_add(o, "orphaned", json_object_new_boolean(e->orphaned));
		json_add_u64(o, "names_added", e->names_added);
		json_add_u64(o, "names_removed", e->names_removed);
		json_add_u64(o, "data_bytes", e->data_bytes);
		json_object_array_add(arr, o);
	}
	json_object_object_add(top, "inodes", arr);
	return output_json(top);
}

static void show_progress(void *arg, u64 done, u64 total)
{
	struct progress *p = arg;

	if (!p->total)
		progress_init(p, "replaying the log", total, total >= 256);
	progress_update(p, done);
}

/* Replay in a transaction; commit it unless this is a dry run. */
static int replay(struct tlog_fs *fs, bool dry_run, struct tlog_replay_stats *st)
{
	struct tlog_trans *trans;
	struct progress progress = { 0 };
	int err;

	st->progress = show_progress;
	st->progress_arg = &progress;
	err = tlog_trans_start_flags(fs, TLOG_TRANS_LOG_REPLAY |
				     (dry_run ? TLOG_TRANS_IN_MEMORY : 0), &trans);
	if (err)
		return err;
	err = btrfs_replay_log(trans, st);
	progress_end(&progress);
	if (err || dry_run) {
		tlog_trans_abort(trans);
		return err;
	}
	return tlog_trans_commit(trans);
}

static int cmd_replay_log(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "dry-run", no_argument, NULL, 'n' },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct tlog_open_opts opts;
	struct cmd_common common = CMD_COMMON_INIT;
	struct tlog_replay_stats st = { 0 };
	bool verbose = false, dry_run = false, had_log;
	struct tlog_fs *fs;
	unsigned long long nth;
	const char *image;
	int c, err;

	while ((c = cmd_next_option(cmd, argc, argv, "vn", long_options, &common)) != -1) {
		switch (c) {
		case 'v':
			verbose = true;
			break;
		case 'n':
			dry_run = true;
			verbose = true;	/* a dry run is for seeing what would happen */
			break;
		}
	}
	check_argc(cmd, argc, 1, 1);
	image = argv[optind];
	cmd_open_opts(cmd, &common, &opts);
	if (dry_run)
		opts.writable = false;	/* it only reads */
	if (fault_from_env(&opts.fault_mode, &nth))
		return 1;
	opts.fault_nth = nth;
	if (open_image(image, &opts, &fs))
		return 1;
	had_log = fs->log_root_tree != NULL;
	if (!had_log && fs->super_mirror != 0) {
		report_no_log(fs, image, true);
		tlog_close(fs);
		return 1;
	}
	if (!had_log) {
		if (common.format == OUTPUT_JSON)
			err = print_json(image, &st, dry_run, false);
		else
			printf("%s has no log tree\n", image);
		tlog_close(fs);
		return 0;
	}
	tlog_error_clear();
	err = replay(fs, dry_run, &st);
	if (opts.fault_mode)
		fprintf(stderr, "%s: fault injection %s: %llu writes issued\n", tlog_progname,
			getenv(TLOG_FAULT_ENV), (unsigned long long)fs->bdev->nr_writes);
	tlog_close(fs);
	if (err) {
		error_errno(err, "cannot replay the log of %s", image);
		tlog_replay_stats_free(&st);
		return 1;
	}
	if (st.nr)
		qsort(st.inodes, st.nr, sizeof(*st.inodes), cmp_inode);
	if (common.format == OUTPUT_JSON)
		err = print_json(image, &st, dry_run, true);
	else
		print_text(image, &st, dry_run, verbose);
	tlog_replay_stats_free(&st);
	return err ? 1 : 0;
}

const struct cmd_struct cmd_struct_replay_log = {
	.name = "replay-log",
	.fn = cmd_replay_log,
	.usage = replay_log_usage,
	.flags = CMD_WRITES | CMD_JSON,
};
