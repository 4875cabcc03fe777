/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The command table and option handling shared by every command.
 *
 * Usage arrays have a fixed layout:
 *	[0] synopsis ("tlogctl ls [-l] IMAGE PATH")
 *	[1] one line saying what the command does
 *	[2] "" then lines of longer text
 *	then "" and option lines ("-l|--long    show details"), NULL-terminated.
 */
#ifndef TLOG_OPTIONS_H
#define TLOG_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include "output.h"

/* Command flags: preconditions the dispatcher and helpers know about. */
#define CMD_JSON	(1U << 0)	/* takes --format json */
#define CMD_WRITES	(1U << 1)	/* modifies the image: cmd_open_opts() opens it writable */
#define CMD_HIDDEN	(1U << 2)	/* not listed in "help" */
#define CMD_PATH	(1U << 3)	/* resolves paths inside the image: --subvol */
/*
 * Exits 2 on a usage error, keeping 1 for what it found: a checker's
 * callers (CI scripts) must tell "problems found" from "not run", as with
 * fsck's and btrfs check's exit codes.
 */
#define CMD_USAGE_EXIT2	(1U << 4)

struct cmd_struct {
	const char *name;
	int (*fn)(const struct cmd_struct *cmd, int argc, char **argv);
	const char * const *usage;
	unsigned int flags;
};

/* The exit status of a usage error of @cmd. */
static inline int usage_status(const struct cmd_struct *cmd)
{
	return (cmd->flags & CMD_USAGE_EXIT2) ? 2 : 1;
}

/* Options every command accepts, to append to its struct option array. */
enum {
	GETOPT_VAL_HELP = 0x1000,
	GETOPT_VAL_FORMAT,
	GETOPT_VAL_SUPER,
	GETOPT_VAL_SUBVOL,
	GETOPT_VAL_NO_LOG,
	GETOPT_VAL_FIRST_CMD,	/* commands number their long-only options from here */
};

#define COMMON_LONG_OPTIONS				\
	{ "help", no_argument, NULL, GETOPT_VAL_HELP },	\
	{ "format", required_argument, NULL, GETOPT_VAL_FORMAT },	\
	{ "super", required_argument, NULL, GETOPT_VAL_SUPER },	\
	{ "subvol", required_argument, NULL, GETOPT_VAL_SUBVOL },	\
	{ "no-log", no_argument, NULL, GETOPT_VAL_NO_LOG }

/* Settings from the common options. */
struct cmd_common {
	enum output_format format;
	int super_mirror;	/* --super N, -1 when not given */
	unsigned long long subvol;	/* --subvol ID, 0 for the top level */
	bool no_log;		/* --no-log: the committed state, log not applied */
};

#define CMD_COMMON_INIT { .format = OUTPUT_TEXT, .super_mirror = -1, .subvol = 0, .no_log = false }

/*
 * Handle a common option returned by getopt_long.  Returns true if @c was
 * one (after --help it exits), false for anything the command must handle.
 */
bool handle_common_option(const struct cmd_struct *cmd, int c, struct cmd_common *common);

/*
 * The option loop of every command: the next option @cmd handles itself,
 * or -1 once the options are done.  Common options are handled here and an
 * unknown option or a missing argument ends in usage_unknown_option(), so
 * the caller's switch needs only its own cases.  The dispatcher resets the
 * getopt state before running a command.
 */
int cmd_next_option(const struct cmd_struct *cmd, int argc, char **argv,
		    const char *shortopts, const struct option *longopts,
		    struct cmd_common *common);
/* The whole loop, for commands with no options of their own. */
void cmd_parse_common_options(const struct cmd_struct *cmd, int argc, char **argv,
			      const struct option *longopts, struct cmd_common *common);

/* Print the usage of @cmd to stdout (full) or stderr (short) and exit. */
__attribute__((noreturn))
void usage(const struct cmd_struct *cmd, int exit_code);
/* Print the full help of @cmd to stdout. */
void print_usage(const struct cmd_struct *cmd, bool full);

/* "bad option" error + short usage + exit 1, for the default: case. */
__attribute__((noreturn))
void usage_unknown_option(const struct cmd_struct *cmd, char **argv);

/* Exit with an error unless argc - optind is between @min and @max. */
void check_argc(const struct cmd_struct *cmd, int argc, int min, int max);

#endif
