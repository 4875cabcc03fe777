/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Claiming a target for writing.
 *
 * An offline writer must be the only writer: a mounted filesystem keeps
 * its own idea of the superblock and would overwrite ours (or we its),
 * and two offline writers interleave transactions so that the second
 * commit silently undoes the first.  A claim is the three checks that
 * btrfs-progs, e2fsprogs and udev agree on:
 *
 *  - not mounted: neither the block device itself nor, for an image file,
 *    a loop device backed by it is the source of a mount
 *    (/proc/self/mountinfo, /sys/block/loop* /loop/backing_file);
 *  - exclusive: a block device is opened O_EXCL, which the kernel refuses
 *    while the device is mounted or held by device-mapper, md, ...;
 *  - locked: a BSD lock (flock LOCK_EX|LOCK_NB) on the file or device (and
 *    on the whole disk of a partition, as udev and systemd document for
 *    programs that write block devices) held for as long as the fd is
 *    open, so a second writer is refused at once.
 *
 * Readers claim nothing: looking at a mounted image is harmless and
 * often what a user wants.
 */
#ifndef TLOG_CLAIM_H
#define TLOG_CLAIM_H

#include <stddef.h>
#include <sys/stat.h>

/* Returned when the target is locked by another process (flock). */
#define TLOG_ELOCKED	EWOULDBLOCK

/*
 * Whether the file or block device described by @st is mounted: directly,
 * or (a regular file) through a loop device backed by it.  Returns 1 and
 * the mount point in @where, or 0.
 */
int tlog_target_mounted(const struct stat *st, char *where, size_t size);

/*
 * Claim the open @fd (of @path, described by @st) for writing: refuse a
 * mounted target (-EBUSY, "mounted on DIR" recorded), take the BSD lock
 * (-TLOG_ELOCKED, "locked by another process" recorded).  The lock is
 * released when @fd is closed; a partition's whole-disk lock lives in
 * *@disk_fd (-1 when none), which the caller closes with @fd.
 */
int tlog_claim_fd(int fd, const char *path, const struct stat *st, int *disk_fd);

#endif
