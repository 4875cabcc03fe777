/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Error context.  Library functions return 0 or a negative errno; when they
 * know more than the errno can say ("bad checksum on tree block 30588928"),
 * they record it here, and the command prints it as the "why" of its error
 * line.  One context per thread; the newest message wins.
 *
 * So that the why printed is always the error's own:
 *  - every entry point a command calls starts with tlog_error_clear();
 *  - a lookup whose "not found" is an answer (btrfs_lookup_inode,
 *    btrfs_find_root) records nothing for it; the caller for whom absence
 *    is an error says so;
 *  - best-effort work (prefetch) saves and restores the context around
 *    itself, so its failures neither show nor wipe an earlier reason.
 */
#ifndef TLOG_ERRCTX_H
#define TLOG_ERRCTX_H

#include <stdbool.h>

__attribute__((format(printf, 1, 2)))
void tlog_error_set(const char *fmt, ...);
/* Returns the recorded message, or NULL when none was set since the last clear. */
const char *tlog_error_get(void);
void tlog_error_clear(void);

/* A saved context, for work whose failures are not the caller's. */
struct tlog_errsave {
	bool set;
	char msg[512];
};

void tlog_error_save(struct tlog_errsave *save);
void tlog_error_restore(const struct tlog_errsave *save);

/* Record a message and return @err, for "return tlog_error(-EIO, ...)". */
__attribute__((format(printf, 2, 3)))
int tlog_error(int err, const char *fmt, ...);

/*
 * Put "@prefix: " in front of the recorded message (or set @prefix alone
 * when none is recorded) and return @err.
 */
int tlog_error_wrap(int err, const char *prefix);

#endif
