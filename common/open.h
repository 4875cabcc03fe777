/* SPDX-License-Identifier: GPL-2.0-only */
/* Opening targets for commands: clear errors, libblkid probing. */
#ifndef TLOG_OPEN_H
#define TLOG_OPEN_H

#include <stddef.h>
#include "ctree.h"
#include "options.h"

/*
 * Fill @opts for @cmd: the superblock copy --super picked and, for a
 * command that writes (CMD_WRITES), a writable open, which claims the
 * image (claim.h).  Writers get their access here, from the flag the
 * command table declares, rather than each asking for it.
 */
void cmd_open_opts(const struct cmd_struct *cmd, const struct cmd_common *common,
		   struct tlog_open_opts *opts);

/*
 * Open @path with @opts.  On failure prints one error line (naming the
 * filesystem libblkid finds when it is not btrfs) and returns -errno.
 */
int open_image(const char *path, const struct tlog_open_opts *opts, struct tlog_fs **ret);

/*
 * Open @path for writing with no filesystem behind it yet (mkfs): claimed,
 * see claim.h.  On failure prints one error line and returns -errno.
 */
struct tlog_bdev;
int open_target_for_writing(const char *path, struct tlog_bdev **ret);

/*
 * Name what libblkid finds on @path ("ext4", "xfs", "dos partition table"),
 * into @buf.  Returns 0 if something was found, -ENOENT otherwise.
 */
int probe_signature(const char *path, char *buf, size_t size);

/*
 * Say that @fs has no log tree.  Only the primary superblock records a
 * log, so on another copy that is unknown, not "no log": readers say so,
 * writers (@writer) refuse with an error line and -ENOENT.  0 otherwise.
 */
int report_no_log(const struct tlog_fs *fs, const char *path, bool writer);

/*
 * The testing aid TLOG_FAULT_INJECT=fail:N or drop:N: 0 and *@mode 0 when
 * unset, the mode (TLOG_FAULT_*) and @nth when set, -EINVAL (reported)
 * when malformed.
 */
#define TLOG_FAULT_ENV "TLOG_FAULT_INJECT"
int fault_from_env(int *mode, unsigned long long *nth);

#endif
