// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "messages.h"
#include "options.h"
#include "strutil.h"

void print_usage(const struct cmd_struct *cmd, bool full)
{
	const char * const *u = cmd->usage;
	FILE *out = full ? stdout : stderr;

	fprintf(out, "usage: %s\n\n", u[0]);
	fprintf(out, "    %s\n", u[1]);
	if (!full) {
		fprintf(out, "\nRun '%s %s --help' for more.\n", tlog_progname, cmd->name);
		return;
	}
	for (u += 2; *u; u++)
		fprintf(out, "%s%s\n", **u ? "    " : "", *u);
	fprintf(out, "\n    --help                show this help\n");
	if (cmd->flags & CMD_JSON)
		fprintf(out, "    --format text|json    output format (default: text)\n");
	if (cmd->flags & CMD_PATH)
		fprintf(out, "    --subvol ID           resolve PATH from subvolume ID instead of the top level\n"
			     "    --no-log              the committed state: do not apply the log tree\n"
			     "                          (by default an image with a log is seen replayed,\n"
			     "                          as the kernel mounts it; the image is not changed)\n");
	fprintf(out, "    --super N             use superblock copy N (0, 1, 2) instead of the primary\n");
}

void usage(const struct cmd_struct *cmd, int exit_code)
{
	print_usage(cmd, exit_code == 0);
	exit(output_finish(exit_code));
}

void usage_unknown_option(const struct cmd_struct *cmd, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";

	if (optopt && optopt < 0x100 && arg[0] == '-' && arg[1] != '-')
		error("%s: invalid option -%c or missing argument", cmd->name, optopt);
	else
		error("%s: unrecognized option or missing argument '%s'", cmd->name, arg);
	print_usage(cmd, false);
	exit(usage_status(cmd));
}

bool handle_common_option(const struct cmd_struct *cmd, int c, struct cmd_common *common)
{
	uint64_t subvol;

	switch (c) {
	case GETOPT_VAL_HELP:
		usage(cmd, 0);
	case GETOPT_VAL_FORMAT:
		if (!(cmd->flags & CMD_JSON)) {
			error("%s does not support --format", cmd->name);
			exit(usage_status(cmd));
		}
		if (output_format_parse(optarg, &common->format) < 0) {
			error("invalid output format '%s' (use text or json)", optarg);
			exit(usage_status(cmd));
		}
		return true;
	case GETOPT_VAL_SUBVOL:
		if (!(cmd->flags & CMD_PATH)) {
			error("%s does not take --subvol", cmd->name);
			exit(usage_status(cmd));
		}
		if (parse_u64(optarg, false, &subvol)) {
			error("invalid subvolume id '%s'", optarg);
			exit(usage_status(cmd));
		}
		common->subvol = subvol;
		return true;
	case GETOPT_VAL_NO_LOG:
		if (!(cmd->flags & CMD_PATH)) {
			error("%s does not take --no-log", cmd->name);
			exit(usage_status(cmd));
		}
		common->no_log = true;
		return true;
	case GETOPT_VAL_SUPER: {
		char *end;
		long n = strtol(optarg, &end, 10);

		if (*optarg == '\0' || *end || n < 0 || n > 2) {
			error("invalid superblock copy '%s' (use 0, 1 or 2)", optarg);
			exit(usage_status(cmd));
		}
		common->super_mirror = (int)n;
		return true;
	}
	}
	return false;
}

int cmd_next_option(const struct cmd_struct *cmd, int argc, char **argv,
		    const char *shortopts, const struct option *longopts,
		    struct cmd_common *common)
{
	int c;

	do {
		c = getopt_long(argc, argv, shortopts, longopts, NULL);
		/* opterr is off: getopt reports both as '?' (or ':') silently */
		if (c == '?' || c == ':')
			usage_unknown_option(cmd, argv);
	} while (c != -1 && handle_common_option(cmd, c, common));
	return c;
}

void cmd_parse_common_options(const struct cmd_struct *cmd, int argc, char **argv,
			      const struct option *longopts, struct cmd_common *common)
{
	while (cmd_next_option(cmd, argc, argv, "", longopts, common) != -1)
		usage_unknown_option(cmd, argv);
}

void check_argc(const struct cmd_struct *cmd, int argc, int min, int max)
{
	int n = argc - optind;

	if (n < min) {
		error("%s: not enough arguments", cmd->name);
		print_usage(cmd, false);
		exit(usage_status(cmd));
	}
	if (max >= 0 && n > max) {
		error("%s: too many arguments", cmd->name);
		print_usage(cmd, false);
		exit(usage_status(cmd));
	}
}
