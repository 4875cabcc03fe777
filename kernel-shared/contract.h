/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The fsync contract, checked without a kernel: after an fsync, a power
 * cut and the log's replay, the file or directory has what it had at the
 * fsync - size, content, mode, names (each name leading to it) and
 * xattrs; a directory, its entries.  The model is the mount itself: the
 * state of the inode right after its fsync, kept until the inode changes
 * again.  A check replays the log of the image as it is on disk, in
 * memory (the log view of tlog_apply_log_overlay: the image is not
 * written), and compares every inode still unchanged since its fsync.
 */
#ifndef TLOG_CONTRACT_H
#define TLOG_CONTRACT_H

#include "inode-ops.h"

struct tlog_contract;

int tlog_contract_new(struct tlog_contract **ret);
void tlog_contract_free(struct tlog_contract *c);

/* @inode was fsynced by the operation at script line @line: its state now. */
int tlog_contract_record(struct tlog_contract *c, struct tlog_mount *mnt,
			 struct tlog_inode *inode, unsigned int line);

/*
 * Replay the on-disk image's log in memory and compare each recorded
 * inode not changed since its fsync.  @report (may be NULL) gets each
 * violation: the line of the fsync it breaks and what differs.  Returns
 * the number of violations, or -errno when the check itself failed (the
 * replay refused, say: also a finding, with the reason in the error
 * context).
 */
int tlog_contract_check(struct tlog_contract *c, struct tlog_mount *mnt,
			void (*report)(void *arg, unsigned int line, const char *what),
			void *arg);

/* Inodes checked so far, over all checks (to prove a run checked something). */
unsigned long long tlog_contract_checked(const struct tlog_contract *c);

#endif
