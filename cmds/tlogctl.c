// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl: the dispatcher.  Finds the command, handles the global options
 * (--version, --help, help COMMAND) and runs it.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "commands.h"
#include "messages.h"
#include "output.h"

static const struct cmd_struct *const commands[] = {
	&cmd_struct_dump_super,
	&cmd_struct_dump_tree,
	&cmd_struct_dump_log,
	&cmd_struct_ls,
	&cmd_struct_stat,
	&cmd_struct_fiemap,
	&cmd_struct_seek,
	&cmd_struct_zero_log,
	&cmd_struct_replay_log,
	&cmd_struct_cat,
	&cmd_struct_export,
	&cmd_struct_mkfs,
	&cmd_struct_run,
	&cmd_struct_check,
	NULL,
};

static const struct cmd_struct *find_command(const char *name)
{
	for (int i = 0; commands[i]; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

static void print_main_help(FILE *out)
{
	fprintf(out, "usage: tlogctl [--version] [--help] COMMAND [ARGS]\n\n");
	fprintf(out, "Inspect, create and repair btrfs images offline.\n\n");
	fprintf(out, "Commands:\n");
	for (int i = 0; commands[i]; i++) {
		if (commands[i]->flags & CMD_HIDDEN)
			continue;
		fprintf(out, "  %-14s %s\n", commands[i]->name, commands[i]->usage[1]);
	}
	fprintf(out, "\nRun 'tlogctl help COMMAND' or 'tlogctl COMMAND --help' for details.\n");
}

static int cmd_help(int argc, char **argv)
{
	const struct cmd_struct *cmd;

	if (argc < 2) {
		print_main_help(stdout);
		return 0;
	}
	cmd = find_command(argv[1]);
	if (!cmd) {
		error("unknown command '%s'", argv[1]);
		return 1;
	}
	print_usage(cmd, true);
	return 0;
}

int main(int argc, char **argv)
{
	const struct cmd_struct *cmd;

	if (argc < 2) {
		print_main_help(stderr);
		return 1;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("tlogctl %s\n", PACKAGE_VERSION);
		return output_finish(0);
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return output_finish(cmd_help(1, argv));
	if (strcmp(argv[1], "help") == 0)
		return output_finish(cmd_help(argc - 1, argv + 1));

	cmd = find_command(argv[1]);
	if (!cmd) {
		error("unknown command '%s' (see 'tlogctl --help')", argv[1]);
		return 1;
	}
	/*
	 * Commands report bad options themselves, in the one-line error
	 * format, and parse from a fresh getopt state.
	 */
	opterr = 0;
	optind = 1;
	/*
	 * The command parses from its own name, as if it were argv[0].  What
	 * it printed is only known to be written once stdout is flushed.
	 */
	return output_finish(cmd->fn(cmd, argc - 1, argv + 1));
}
