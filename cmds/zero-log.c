// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl zero-log: discard the log tree, as `btrfs rescue zero-log` does,
 * after saying what would be lost.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "errctx.h"
#include "messages.h"
#include "open.h"
#include "tree-log.h"

static const char * const zero_log_usage[] = {
	"tlogctl zero-log [-f] IMAGE",
	"Discard the log tree of a btrfs image",
	"",
	"Clears the superblock's log root, like btrfs rescue zero-log: every",
	"fsync since the last transaction commit is lost, and the image shows",
	"its committed state.  Says first how many logged inodes would be lost",
	"and, on a terminal, asks; elsewhere -f is needed.  An image without a",
	"log is left alone.",
	"",
	"-f|--force          do not ask",
	NULL
};

/* Ask on the terminal; true for yes. */
static bool confirm(void)
{
	char answer[16];

	fprintf(stderr, "Discard the log? [y/N] ");
	fflush(stderr);
	if (!fgets(answer, sizeof(answer), stdin))
		return false;
	return answer[0] == 'y' || answer[0] == 'Y';
}

static int cmd_zero_log(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "force", no_argument, NULL, 'f' },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct tlog_open_opts opts;
	struct cmd_common common = CMD_COMMON_INIT;
	struct tlog_fs *fs;
	u64 inodes, subvols;
	bool force = false;
	int c, err;

	while ((c = cmd_next_option(cmd, argc, argv, "f", long_options, &common)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		}
	}
	check_argc(cmd, argc, 1, 1);
	cmd_open_opts(cmd, &common, &opts);
	if (open_image(argv[optind], &opts, &fs))
		return 1;
	if (!fs->log_root_tree) {
		err = report_no_log(fs, argv[optind], true);
		tlog_close(fs);
		return err ? 1 : 0;
	}
	tlog_error_clear();
	err = btrfs_count_logged_inodes(fs, &inodes, &subvols);
	if (err) {
		/* a damaged log is a reason to discard it, not to stop */
		warning("cannot read all of the log (%s)",
			tlog_error_get() ? tlog_error_get() : strerror(-err));
		printf("The log of %s cannot be read in full; it will be discarded.\n",
		       argv[optind]);
	} else {
		printf("The log of %s holds %llu inode%s in %llu subvolume%s; their changes since the last commit will be lost.\n",
		       argv[optind], (unsigned long long)inodes, inodes == 1 ? "" : "s",
		       (unsigned long long)subvols, subvols == 1 ? "" : "s");
	}
	fflush(stdout);
	if (!force) {
		if (!isatty(STDIN_FILENO)) {
			error("not discarding the log of %s (not on a terminal: use -f)", argv[optind]);
			tlog_close(fs);
			return 1;
		}
		if (!confirm()) {
			printf("Nothing changed.\n");
			tlog_close(fs);
			return 0;
		}
	}
	tlog_error_clear();
	err = btrfs_discard_log(fs);
	if (err)
		error_errno(err, "cannot discard the log of %s", argv[optind]);
	else
		printf("Log discarded.\n");
	tlog_close(fs);
	return err ? 1 : 0;
}

const struct cmd_struct cmd_struct_zero_log = {
	.name = "zero-log",
	.fn = cmd_zero_log,
	.usage = zero_log_usage,
	.flags = CMD_WRITES,
};
