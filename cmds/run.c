// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl run: apply a workload script to an unmounted image, as the
 * kernel would apply the same system calls to the mounted filesystem.
 *
 * Each line of the script is one operation of the language
 * (common/workload.h); this file turns it into the inode operations of
 * the core library (inode-ops.h), the way the system call would reach
 * btrfs through the VFS: path lookup, open with its flags, then the
 * operation.  An errno the system call would return is the operation's
 * answer and is reported like a failed call in a shell script; any other
 * failure (a damaged image, an I/O error) stops the run, and the image
 * keeps its last committed state.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "blockdev.h"
#include "commands.h"
#include "errctx.h"
#include "inode-ops.h"
#include "inode.h"
#include "messages.h"
#include "open.h"
#include "contract.h"
#include "filecopy.h"
#include "output.h"
#include "progress.h"
#include "transaction.h"
#include "tree-log.h"
#include "workload.h"

static const char * const run_usage[] = {
	"tlogctl run [--commit] [--strict] [-o OPTIONS] [--crash-points DIR] [--check-contract] "
	"[--no-log-optimizations] [--stats] [--format json] IMAGE SCRIPT|-",
	"Apply file operations to a btrfs image offline",
	"",
	"Runs the operations of SCRIPT (see tlogctl-run(8) for the language) on",
	"the image as the kernel would run the same system calls on it mounted:",
	"the same inode numbers, directory order, extents and errors.  The whole",
	"script is parsed first; a syntax error changes nothing (exit 2).  An",
	"operation the system call would refuse is reported as",
	"SCRIPT:LINE: OP: REASON and the script goes on.  sync commits; fsync",
	"and fdatasync log the file or directory in the fsync log as the kernel",
	"does, or commit where the kernel would.",
	"Without --commit the image is left as a power cut after the last",
	"operation would leave it: its last commit and its synced log, which",
	"the kernel's mount replays.",
	"",
	"--commit            end as a clean unmount would: write back and commit",
	"--strict            stop at the first refused operation (exit 1)",
	"--crash-points DIR  after each sync, fsync and fdatasync, a copy of the",
	"                    image as a power cut right then would leave it:",
	"                    DIR/NNNN-LINE.img (a reflink where the host allows;",
	"                    IMAGE must be a regular file)",
	"-o OPTIONS          mount options that change what is written:",
	"                    compress[=ALGO[:LEVEL]], compress-force=ALGO[:LEVEL],",
	"                    max_inline=BYTES (ALGO zlib, lzo or zstd)",
	"--stats             report what was done, fsync logging included: inodes",
	"                    logged, items copied, log and deletion searches, item",
	"                    lists allocated, inode items written for the log, log",
	"                    syncs and blocks written and checked, full commits and",
	"                    their reasons (with --format json, as JSON)",
	"--check-contract    after each sync and fsync, replay the log in memory and",
	"                    check that every file and directory fsynced and not",
	"                    changed since has what it had at its fsync (size, data,",
	"                    mode, names, xattrs, entries); violations are reported",
	"                    as SCRIPT:LINE: contract broken: ... and exit 1",
	"--no-log-optimizations",
	"                    write the same log without the kernel's logging",
	"                    optimisations: more searches, an item list allocated",
	"                    per copy, inode items written to the subvolume before",
	"                    a full sync (bench/fsync measures them)",
	"--format json       report as JSON (with --stats)",
	NULL
};

enum {
	GETOPT_VAL_COMMIT = GETOPT_VAL_FIRST_CMD,
	GETOPT_VAL_STRICT,
	GETOPT_VAL_STATS,
	GETOPT_VAL_CRASH_POINTS,
	GETOPT_VAL_NO_LOG_OPT,
	GETOPT_VAL_CHECK_CONTRACT,
};

struct run_ctx {
	struct tlog_mount *mnt;
	const struct wl_script *script;
	u64 ops_done, ops_refused, syncs;
	/* --crash-points: where, of which image, how many so far (and reflinked) */
	const char *crash_dir, *image;
	u64 crash_points, crash_clones;
	/* --check-contract: the fsynced inodes' states, checks made, violations */
	struct tlog_contract *contract;
	u64 contract_checks, contract_violations;
	unsigned int line;		/* of the operation running */
};

/* "PATH/": the path walk then wants a directory at the end. */
static bool trailing_slash(const char *path)
{
	size_t n = strlen(path);

	return n > 1 && path[n - 1] == '/';
}

/* Opened for writing: a directory refuses (EISDIR), as open(O_WRONLY) does. */
static int open_for_write(struct tlog_mount *mnt, const char *path, bool create,
			  struct tlog_inode **ret)
{
	int err = tlog_open_path(mnt, path, create ? TLOG_OPEN_CREATE : 0, ret);

	if (!err && S_ISDIR(tlog_inode_mode(*ret))) {
		tlog_iput(mnt, *ret);
		return -EISDIR;
	}
	return err;
}

static int do_create(struct tlog_mount *mnt, const char *path, u32 mode, u64 rdev,
		     const char *target)
{
	struct tlog_inode *dir;
	const char *name;
	u16 len;
	int err = tlog_lookup_parent(mnt, path, &dir, &name, &len);

	if (err)
		return err;
	if (trailing_slash(path) && !S_ISDIR(mode)) {
		/* open(O_CREAT) says EISDIR; mknod and symlink find no directory */
		struct tlog_inode *old;

		err = tlog_lookup(mnt, dir, name, len, &old);
		if (!err)
			tlog_iput(mnt, old);
		err = !err ? -EEXIST : S_ISREG(mode) ? -EISDIR : err;
	} else {
		err = tlog_create(mnt, dir, name, len, mode, rdev, target, NULL);
	}
	tlog_iput(mnt, dir);
	return err;
}

static int do_unlink(struct tlog_mount *mnt, const char *path, bool rmdir)
{
	struct tlog_inode *dir;
	const char *name;
	u16 len;
	int err = tlog_lookup_parent(mnt, path, &dir, &name, &len);

	if (err)
		return err;
	if (!rmdir && trailing_slash(path)) {
		/* unlink("f/"): a file there is not a directory, a directory is one */
		struct tlog_inode *inode;

		err = tlog_lookup(mnt, dir, name, len, &inode);
		if (!err) {
			err = S_ISDIR(tlog_inode_mode(inode)) ? -EISDIR : -ENOTDIR;
			tlog_iput(mnt, inode);
		}
	} else {
		err = tlog_unlink(mnt, dir, name, len, rmdir);
	}
	tlog_iput(mnt, dir);
	return err;
}

static int do_link(struct tlog_mount *mnt, const char *old, const char *new)
{
	struct tlog_inode *inode, *dir;
	const char *name;
	u16 len;
	int err = tlog_open_path(mnt, old, TLOG_OPEN_NOFOLLOW, &inode);

	if (err)
		return err;
	err = tlog_lookup_parent(mnt, new, &dir, &name, &len);
	if (!err) {
		err = tlog_link(mnt, inode, dir, name, len);
		tlog_iput(mnt, dir);
	}
	tlog_iput(mnt, inode);
	return err;
}

static int do_rename(struct tlog_mount *mnt, const char *old, const char *new,
		     unsigned int wl_flags)
{
	unsigned int flags = (wl_flags & WL_RENAME_NOREPLACE ? TLOG_RENAME_NOREPLACE : 0) |
			     (wl_flags & WL_RENAME_EXCHANGE ? TLOG_RENAME_EXCHANGE : 0);
	struct tlog_inode *odir, *ndir;
	const char *oname, *nname;
	u16 olen, nlen;
	int err = tlog_lookup_parent(mnt, old, &odir, &oname, &olen);

	if (err)
		return err;
	err = tlog_lookup_parent(mnt, new, &ndir, &nname, &nlen);
	if (!err && (trailing_slash(old) || trailing_slash(new))) {
		/* a trailing slash on either name wants the source to be a directory */
		struct tlog_inode *src;

		err = tlog_lookup(mnt, odir, oname, olen, &src);
		if (!err) {
			if (!S_ISDIR(tlog_inode_mode(src)))
				err = -ENOTDIR;
			tlog_iput(mnt, src);
		}
		if (err)
			tlog_iput(mnt, ndir);
	}
	if (!err) {
		err = tlog_rename(mnt, odir, oname, olen, ndir, nname, nlen, flags);
		tlog_iput(mnt, ndir);
	}
	tlog_iput(mnt, odir);
	return err;
}

static int do_mksubvol(struct tlog_mount *mnt, const char *path)
{
	struct tlog_inode *dir;
	const char *name;
	u16 len;
	int err = tlog_lookup_parent(mnt, path, &dir, &name, &len);

	if (err)
		return err;
	err = len ? tlog_create_subvol(mnt, dir, name, len) : -EEXIST;
	tlog_iput(mnt, dir);
	return err;
}

static int do_mksnap(struct tlog_mount *mnt, const char *src_path, const char *path)
{
	struct tlog_inode *src, *dir;
	const char *name;
	u16 len;
	int err = tlog_open_path(mnt, src_path, 0, &src);

	if (err)
		return err;
	err = tlog_lookup_parent(mnt, path, &dir, &name, &len);
	if (!err) {
		err = len ? tlog_create_snapshot(mnt, src, dir, name, len) : -EEXIST;
		tlog_iput(mnt, dir);
	}
	tlog_iput(mnt, src);
	return err;
}

/* FICLONE (clone: the destination opened O_CREAT) and FICLONERANGE. */
static int do_clone(struct tlog_mount *mnt, const struct wl_cmd *c)
{
	bool whole = c->op == WL_CLONE;
	struct tlog_inode *src, *dst;
	int err = tlog_open_path(mnt, c->path, 0, &src);

	if (err)
		return err;
	err = whole ? open_for_write(mnt, c->path2, true, &dst) :
		      open_for_write(mnt, c->path2, false, &dst);
	if (!err) {
		err = whole ? tlog_clone_range(mnt, src, 0, 0, dst, 0) :
			      tlog_clone_range(mnt, src, c->off, c->len, dst, c->off2);
		if (!err)
			err = tlog_release_file(mnt, dst);
		tlog_iput(mnt, dst);
	}
	if (!err)
		err = tlog_release_file(mnt, src);
	tlog_iput(mnt, src);
	return err;
}

static u64 chattr_bits(u32 wl)
{
	return (wl & WL_ATTR_NOCOW ? BTRFS_INODE_NODATACOW : 0) |
	       (wl & WL_ATTR_COMPRESS ? BTRFS_INODE_COMPRESS : 0) |
	       (wl & WL_ATTR_NOCOMPRESS ? BTRFS_INODE_NOCOMPRESS : 0);
}

static struct btrfs_timespec to_timespec(const struct wl_time *t)
{
	struct btrfs_timespec ts;

	btrfs_set_timespec_sec(&ts, (u64)t->sec);
	btrfs_set_timespec_nsec(&ts, t->nsec);
	return ts;
}

/* One operation on an inode found by path: the shapes most operations share. */
static int with_inode(struct run_ctx *rc, const struct wl_cmd *c)
{
	struct tlog_mount *mnt = rc->mnt;
	struct tlog_inode *inode;
	/* the l-calls and utimensat(AT_SYMLINK_NOFOLLOW) act on a final link itself */
	bool nofollow = c->op == WL_CHOWN || c->op == WL_UTIMES || c->op == WL_SETXATTR ||
			c->op == WL_REMOVEXATTR;
	bool writes = c->op == WL_WRITE || c->op == WL_FALLOC || c->op == WL_PUNCH;
	int err;

	if (writes)
		err = open_for_write(mnt, c->path, c->op == WL_WRITE, &inode);
	else
		err = tlog_open_path(mnt, c->path, nofollow ? TLOG_OPEN_NOFOLLOW : 0, &inode);
	if (err)
		return err;
	switch (c->op) {
	case WL_WRITE:
		err = tlog_write(mnt, inode, c->off, c->len, c->byte);
		break;
	case WL_TRUNCATE:
		err = S_ISDIR(tlog_inode_mode(inode)) ? -EISDIR :
		      tlog_truncate(mnt, inode, c->len);
		break;
	case WL_FALLOC:
		err = tlog_fallocate(mnt, inode, c->flags & WL_FALLOC_KEEP_SIZE ?
				     TLOG_FALLOC_KEEP_SIZE : 0, c->off, c->len);
		break;
	case WL_PUNCH:
		err = tlog_fallocate(mnt, inode, TLOG_FALLOC_PUNCH_HOLE | TLOG_FALLOC_KEEP_SIZE,
				     c->off, c->len);
		break;
	case WL_SETXATTR:
		err = tlog_setxattr(mnt, inode, c->name, c->value, c->value_len,
				    (c->flags & WL_XATTR_CREATE ? TLOG_XATTR_CREATE : 0) |
				    (c->flags & WL_XATTR_REPLACE ? TLOG_XATTR_REPLACE : 0));
		break;
	case WL_REMOVEXATTR:
		err = tlog_removexattr(mnt, inode, c->name);
		break;
	case WL_CHMOD:
		err = tlog_chmod(mnt, inode, c->mode);
		break;
	case WL_CHOWN:
		err = tlog_chown(mnt, inode, c->uid, c->gid);
		break;
	case WL_UTIMES: {
		struct btrfs_timespec at = to_timespec(&c->atime), mt = to_timespec(&c->mtime);

		err = tlog_utimes(mnt, inode, &at, &mt);
		break;
	}
	case WL_CHATTR:
		if (!S_ISREG(tlog_inode_mode(inode)) && !S_ISDIR(tlog_inode_mode(inode)))
			err = -ENOTTY;
		else
			err = tlog_set_inode_flags(mnt, inode, chattr_bits(c->set),
						   chattr_bits(c->clear));
		break;
	case WL_FSYNC:
	case WL_FDATASYNC:
		err = tlog_fsync(mnt, inode, c->op == WL_FDATASYNC);
		rc->syncs++;
		if (!err && rc->contract)
			err = tlog_contract_record(rc->contract, mnt, inode, c->line);
		break;
	default:
		err = -EINVAL;
	}
	/* the operations that open the file close it again */
	if (c->op != WL_TRUNCATE && c->op != WL_CHMOD && c->op != WL_CHOWN && c->op != WL_UTIMES &&
	    c->op != WL_SETXATTR && c->op != WL_REMOVEXATTR) {
		int ret = tlog_release_file(mnt, inode);

		if (!err)
			err = ret;
	}
	tlog_iput(mnt, inode);
	return err;
}

static int run_one(struct run_ctx *rc, const struct wl_cmd *c)
{
	struct tlog_mount *mnt = rc->mnt;

	switch (c->op) {
	case WL_MKDIR:
		return do_create(mnt, c->path, S_IFDIR | 0755, 0, NULL);
	case WL_CREATE:
		return do_create(mnt, c->path, S_IFREG | 0644, 0, NULL);
	case WL_SYMLINK:
		return do_create(mnt, c->path, S_IFLNK | 0777, 0, c->name);
	case WL_MKNOD: {
		/* btrfs stores the kernel's own dev_t: MKDEV(major, minor) */
		u64 rdev = ((u64)c->major << 20) | c->minor;

		return do_create(mnt, c->path, c->mode, rdev, NULL);
	}
	case WL_LINK:
		return do_link(mnt, c->path, c->path2);
	case WL_RENAME:
		return do_rename(mnt, c->path, c->path2, c->flags);
	case WL_UNLINK:
		return do_unlink(mnt, c->path, false);
	case WL_RMDIR:
		return do_unlink(mnt, c->path, true);
	case WL_SYNC:
		rc->syncs++;
		return tlog_sync(mnt);
	case WL_MKSUBVOL:
		return do_mksubvol(mnt, c->path);
	case WL_MKSNAP:
		return do_mksnap(mnt, c->path, c->path2);
	case WL_CLONE:
	case WL_CLONERANGE:
		return do_clone(mnt, c);
	default:
		return with_inode(rc, c);
	}
}


/*
 * An errno the system call would return, as opposed to a failure of the
 * tool: the library records a reason for the latter only.
 */
static bool is_refusal(void)
{
	return !tlog_error_get();
}

static void show_progress(struct progress *p, const struct wl_script *s, size_t i)
{
	if (!p->total && !p->on)
		progress_init(p, "running the script", s->nr, s->nr >= 2000);
	progress_update(p, i);
}

/*
 * A crash point: the image as it is on disk right after a sync or fsync
 * (every write of the library goes straight to the file), copied to
 * DIR/NNNN-LINE.img.  NNNN counts the crash points from 1.
 */
static int save_crash_point(struct run_ctx *rc, unsigned int line)
{
	char path[4096];
	bool cloned;
	int ret;

	ret = tlog_bdev_flush(rc->mnt->fs->bdev);
	if (ret) {
		error_errno(ret, "cannot flush %s for a crash point", rc->image);
		return ret;
	}
	if (snprintf(path, sizeof(path), "%s/%04llu-%u.img", rc->crash_dir,
		     (unsigned long long)rc->crash_points + 1, line) >= (int)sizeof(path)) {
		error("crash point path too long (%s)", rc->crash_dir);
		return -ENAMETOOLONG;
	}
	ret = copy_file_sparse(rc->image, path, &cloned);
	if (ret) {
		error_errno(ret, "cannot write the crash point %s", path);
		return ret;
	}
	rc->crash_points++;
	rc->crash_clones += cloned;
	return 0;
}

static bool is_sync_op(const struct wl_cmd *c)
{
	return c->op == WL_SYNC || c->op == WL_FSYNC || c->op == WL_FDATASYNC;
}

static void report_violation(void *arg, unsigned int fsync_line, const char *what)
{
	struct run_ctx *rc = arg;

	fprintf(stderr, "%s:%u: contract broken: %s (fsync at line %u)\n", rc->script->name,
		rc->line, what, fsync_line);
}

/*
 * --check-contract after a sync or fsync: the image's log replayed in
 * memory must give every inode fsynced and unchanged since what it had
 * at its fsync.
 */
static int check_contract(struct run_ctx *rc, unsigned int line)
{
	int ret;

	rc->line = line;
	ret = tlog_contract_check(rc->contract, rc->mnt, report_violation, rc);
	if (ret < 0) {
		fprintf(stderr, "%s:%u: contract broken: the log does not replay (%s)\n",
			rc->script->name, line, tlog_error_get() ? tlog_error_get() : strerror(-ret));
		tlog_error_clear();
		ret = 1;
	}
	rc->contract_checks++;
	rc->contract_violations += (u64)ret;
	return 0;
}

static int run_script(struct run_ctx *rc, bool strict, bool commit)
{
	const struct wl_script *s = rc->script;
	struct progress progress = { 0 };
	int err = 0;

	for (size_t i = 0; i < s->nr; i++) {
		const struct wl_cmd *c = &s->cmds[i];

		if ((i & 63) == 0)
			show_progress(&progress, s, i);
		tlog_error_clear();
		tlog_mount_tick(rc->mnt);
		err = run_one(rc, c);
		if (!err) {
			rc->ops_done++;
			if (rc->crash_dir && is_sync_op(c))
				err = save_crash_point(rc, c->line);
			if (!err && rc->contract && is_sync_op(c))
				err = check_contract(rc, c->line);
			if (err) {
				progress_end(&progress);
				return err;
			}
			continue;
		}
		if (!is_refusal()) {
			progress_end(&progress);
			error_errno(err, "%s:%u: %s failed", s->name, c->line, wl_op_name(c->op));
			return err;
		}
		rc->ops_refused++;
		progress_end(&progress);
		fprintf(stderr, "%s:%u: %s: %s\n", s->name, c->line, wl_op_name(c->op),
			strerror(-err));
		if (strict)
			break;
		err = 0;
	}
	progress_end(&progress);
	if (commit) {
		int ret;

		tlog_error_clear();
		ret = tlog_sync(rc->mnt);
		if (ret) {
			error_errno(ret, "cannot commit the last transaction");
			return ret;
		}
	}
	return err ? 1 : 0;
}

static int print_stats(const struct run_ctx *rc, const char *image, enum output_format format,
		       u64 writes)
{
	const struct tlog_mount_stats *st = &rc->mnt->stats;

	if (format == OUTPUT_JSON) {
		json_object *o = json_object_new_object(), *reasons;

		json_add_str(o, "image", image);
		json_add_u64(o, "operations", rc->script->nr);
		json_add_u64(o, "operations_done", rc->ops_done);
		json_add_u64(o, "operations_refused", rc->ops_refused);
		json_add_u64(o, "syncs", rc->syncs);
		json_add_u64(o, "transactions", st->transactions);
		json_add_u64(o, "inodes_written", st->inodes_written);
		json_add_u64(o, "data_extents", st->extents_written);
		json_add_u64(o, "data_bytes", st->data_bytes_written);
		json_add_u64(o, "blocks_written", writes);
		json_add_u64(o, "inodes_logged", st->inodes_logged);
		json_add_u64(o, "items_copied", st->items_copied);
		json_add_u64(o, "deletion_searches", st->deletion_searches);
		json_add_u64(o, "deletion_searches_first_logging", st->deletion_searches_first_logging);
		json_add_u64(o, "log_searches", st->log_searches);
		json_add_u64(o, "log_syncs", st->log_syncs);
		if (rc->contract) {
			json_add_u64(o, "contract_checks", rc->contract_checks);
			json_add_u64(o, "contract_inodes_checked", tlog_contract_checked(rc->contract));
			json_add_u64(o, "contract_violations", rc->contract_violations);
		}
		if (rc->crash_dir) {
			json_add_u64(o, "crash_points", rc->crash_points);
			json_add_u64(o, "crash_points_reflinked", rc->crash_clones);
		}
		json_add_u64(o, "log_blocks_written", st->log_blocks_written);
		json_add_u64(o, "log_blocks_verified", st->log_blocks_verified);
		json_add_u64(o, "copy_buffer_allocations", st->copy_buffer_allocations);
		json_add_u64(o, "inode_items_flushed_for_log", st->inode_items_flushed_for_log);
		json_add_u64(o, "full_commits", st->full_commits);
		reasons = json_object_new_array();
		for (u64 i = 0; i < st->full_commits; i++)
			json_object_array_add(reasons,
					      json_object_new_string(st->full_commit_reasons[i]));
		json_object_object_add(o, "full_commit_reasons", reasons);
		return output_json(o);
	}
	printf("operations: %zu (%" PRIu64 " done, %" PRIu64 " refused)\n", rc->script->nr,
	       rc->ops_done, rc->ops_refused);
	printf("transactions committed: %" PRIu64 "\n", st->transactions);
	printf("inode items written: %" PRIu64 "\n", st->inodes_written);
	printf("data extents: %" PRIu64 " (%" PRIu64 " bytes)\n", st->extents_written,
	       st->data_bytes_written);
	printf("device writes: %" PRIu64 "\n", writes);
	printf("inodes logged: %" PRIu64 "\n", st->inodes_logged);
	printf("items copied into the log: %" PRIu64 "\n", st->items_copied);
	printf("deletion searches in the log: %" PRIu64 " (%" PRIu64 " for inodes logged the first time)\n",
	       st->deletion_searches, st->deletion_searches_first_logging);
	printf("log searches: %" PRIu64 "\n", st->log_searches);
	printf("log syncs: %" PRIu64 " (%" PRIu64 " log blocks written, %" PRIu64 " checked first)\n",
	       st->log_syncs, st->log_blocks_written, st->log_blocks_verified);
	printf("item lists allocated for copies into the log: %" PRIu64 "\n",
	       st->copy_buffer_allocations);
	printf("inode items written to the subvolume for the log: %" PRIu64 "\n",
	       st->inode_items_flushed_for_log);
	printf("fsync full commits: %" PRIu64 "\n", st->full_commits);
	for (u64 i = 0; i < st->full_commits; i++)
		printf("  full commit: %s\n", st->full_commit_reasons[i]);
	if (rc->crash_dir)
		printf("crash points: %" PRIu64 " in %s (%" PRIu64 " reflinked)\n", rc->crash_points,
		       rc->crash_dir, rc->crash_clones);
	if (rc->contract)
		printf("contract checks: %" PRIu64 " (%llu inodes checked), violations: %" PRIu64 "\n",
		       rc->contract_checks, tlog_contract_checked(rc->contract),
		       rc->contract_violations);
	return 0;
}

/* The kernel replays a log at mount before anything else happens: so do we. */
static int replay_existing_log(struct tlog_fs *fs)
{
	struct tlog_replay_stats st = { 0 };
	struct tlog_trans *trans;
	int err;

	if (!fs->log_root_tree)
		return 0;
	err = tlog_trans_start_flags(fs, TLOG_TRANS_LOG_REPLAY, &trans);
	if (err)
		return err;
	err = btrfs_replay_log(trans, &st);
	tlog_replay_stats_free(&st);
	if (err) {
		tlog_trans_abort(trans);
		return err;
	}
	return tlog_trans_commit(trans);
}

static int parse_script(const char *path, struct wl_script *script)
{
	char err[512];
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	int ret;

	if (!f) {
		error("cannot open %s (%s)", path, strerror(errno));
		return -errno;
	}
	ret = wl_parse(f, path, script, err, sizeof(err));
	if (f != stdin)
		fclose(f);
	if (ret == -EINVAL) {
		fprintf(stderr, "%s\n", err);
		return ret;
	}
	if (ret) {
		error("cannot read %s (%s)", path, strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * TLOG_LOG_BREAK=parents,new-dentries: logging rules left out on purpose,
 * for the tests that show the contract check catching them; bad-item: log
 * inode items without a file type, for the test that shows the write-time
 * check refusing them.
 */
static unsigned int broken_rules_from_env(void)
{
	const char *v = getenv("TLOG_LOG_BREAK");
	unsigned int rules = 0;

	if (!v)
		return 0;
	if (strstr(v, "parents"))
		rules |= TLOG_BREAK_PARENTS;
	if (strstr(v, "new-dentries"))
		rules |= TLOG_BREAK_NEW_DENTRIES;
	if (strstr(v, "bad-item"))
		rules |= TLOG_BREAK_BAD_ITEM;
	if (rules)
		fprintf(stderr, "%s: warning: TLOG_LOG_BREAK=%s: logging rules left out on purpose\n",
			tlog_progname, v);
	return rules;
}

/* --crash-points DIR: a directory (made if missing) and an image that is a regular file. */
static int check_crash_dir(const char *dir, const char *image)
{
	struct stat st;

	if (stat(image, &st) == 0 && !S_ISREG(st.st_mode)) {
		error("--crash-points needs an image file (%s is not a regular file)", image);
		return -EINVAL;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		error("cannot make %s (%s)", dir, strerror(errno));
		return -errno;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		error("--crash-points %s: not a directory", dir);
		return -ENOTDIR;
	}
	return 0;
}

static int cmd_run(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "commit", no_argument, NULL, GETOPT_VAL_COMMIT },
		{ "strict", no_argument, NULL, GETOPT_VAL_STRICT },
		{ "stats", no_argument, NULL, GETOPT_VAL_STATS },
		{ "crash-points", required_argument, NULL, GETOPT_VAL_CRASH_POINTS },
		{ "no-log-optimizations", no_argument, NULL, GETOPT_VAL_NO_LOG_OPT },
		{ "check-contract", no_argument, NULL, GETOPT_VAL_CHECK_CONTRACT },
		{ "mount-options", required_argument, NULL, 'o' },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	bool commit = false, strict = false, stats = false, no_log_opt = false;
	struct tlog_open_opts opts;
	struct wl_script script;
	struct run_ctx rc = { 0 };
	unsigned long long nth;
	struct tlog_fs *fs;
	const char *image, *epoch, *options = NULL;
	int c, err;

	while ((c = cmd_next_option(cmd, argc, argv, "o:", long_options, &common)) != -1) {
		switch (c) {
		case 'o':
			options = optarg;
			break;
		case GETOPT_VAL_COMMIT:
			commit = true;
			break;
		case GETOPT_VAL_STRICT:
			strict = true;
			break;
		case GETOPT_VAL_STATS:
			stats = true;
			break;
		case GETOPT_VAL_CRASH_POINTS:
			rc.crash_dir = optarg;
			break;
		case GETOPT_VAL_NO_LOG_OPT:
			no_log_opt = true;
			break;
		case GETOPT_VAL_CHECK_CONTRACT:
			if (!rc.contract && tlog_contract_new(&rc.contract)) {
				error("out of memory");
				return 1;
			}
			break;
		}
	}
	check_argc(cmd, argc, 2, 2);
	image = argv[optind];
	rc.image = image;
	if (rc.crash_dir && check_crash_dir(rc.crash_dir, image))
		return 1;
	if (parse_script(argv[optind + 1], &script))
		return 2;
	cmd_open_opts(cmd, &common, &opts);
	if (fault_from_env(&opts.fault_mode, &nth)) {
		wl_script_free(&script);
		return 1;
	}
	opts.fault_nth = nth;
	if (open_image(image, &opts, &fs)) {
		wl_script_free(&script);
		return 1;
	}
	tlog_error_clear();
	err = replay_existing_log(fs);
	if (err) {
		error_errno(err, "cannot replay the log of %s", image);
		goto out;
	}
	err = tlog_mount_open(fs, &rc.mnt);
	if (err) {
		error_errno(err, "cannot open %s", image);
		goto out;
	}
	rc.mnt->log_unoptimized = no_log_opt;
	rc.mnt->log_broken = broken_rules_from_env();
	if (options) {
		err = tlog_mount_set_options(rc.mnt, options);
		if (err) {
			error_errno(err, "bad mount options '%s'", options);
			goto out;
		}
	}
	epoch = getenv("SOURCE_DATE_EPOCH");
	if (epoch && *epoch) {
		char *end;
		unsigned long long sec = strtoull(epoch, &end, 10);

		if (*end) {
			error("bad SOURCE_DATE_EPOCH '%s' (seconds since 1970 expected)", epoch);
			err = -EINVAL;
			goto out;
		}
		tlog_mount_set_fixed_time(rc.mnt, sec);
	}
	rc.script = &script;
	err = run_script(&rc, strict, commit);
	if (!err && rc.contract_violations) {
		error("the fsync contract was broken %llu time(s) (see above)",
		      (unsigned long long)rc.contract_violations);
		err = 1;
	}
	if (opts.fault_mode)
		fprintf(stderr, "%s: fault injection %s: %llu writes issued\n", tlog_progname,
			getenv(TLOG_FAULT_ENV), (unsigned long long)fs->bdev->nr_writes);
	if (err >= 0 && stats && print_stats(&rc, image, common.format, fs->bdev->nr_writes))
		err = -EIO;
out:
	tlog_mount_close(rc.mnt);
	tlog_close(fs);
	tlog_contract_free(rc.contract);
	wl_script_free(&script);
	return err ? 1 : 0;
}

const struct cmd_struct cmd_struct_run = {
	.name = "run",
	.fn = cmd_run,
	.usage = run_usage,
	.flags = CMD_WRITES | CMD_JSON,
};
