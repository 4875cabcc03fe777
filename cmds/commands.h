/* SPDX-License-Identifier: GPL-2.0-only */
/* The command table: one entry per cmds/ file. */
#ifndef TLOG_COMMANDS_H
#define TLOG_COMMANDS_H

#include "options.h"

extern const struct cmd_struct cmd_struct_dump_super;
extern const struct cmd_struct cmd_struct_dump_tree;
extern const struct cmd_struct cmd_struct_dump_log;
extern const struct cmd_struct cmd_struct_ls;
extern const struct cmd_struct cmd_struct_stat;
extern const struct cmd_struct cmd_struct_fiemap;
extern const struct cmd_struct cmd_struct_seek;
extern const struct cmd_struct cmd_struct_zero_log;
extern const struct cmd_struct cmd_struct_replay_log;
extern const struct cmd_struct cmd_struct_cat;
extern const struct cmd_struct cmd_struct_export;
extern const struct cmd_struct cmd_struct_mkfs;
extern const struct cmd_struct cmd_struct_run;
extern const struct cmd_struct cmd_struct_check;

#endif
