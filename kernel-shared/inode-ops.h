/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inode operations with the kernel's semantics, on an unmounted image.
 *
 * A struct tlog_mount is what a mount of the image is to the kernel: the
 * running transaction, the inodes in use (struct tlog_inode, the VFS
 * inode and btrfs_inode in one), the next inode number of each subvolume
 * and the clock.  Operations take inodes and names, as the VFS hands
 * them to btrfs, and change the trees as fs/btrfs/inode.c would:
 *
 *  - Names (DIR_ITEM, DIR_INDEX, INODE_REF/EXTREF) and new inode items go
 *    into the trees at once; later changes of an inode item are made to
 *    the in-memory copy and written once, before the transaction commits
 *    (the kernel's delayed inode: many updates, one item write).
 *  - Data is written as the page cache holds it: a write only records the
 *    bytes as dirty; writeback (tlog_writeback_inode, run by sync, fsync
 *    and the operations that flush a range, as the kernel's do) turns dirty
 *    ranges into extents the way the kernel's delalloc does, and moves the
 *    on-disk i_size (disk_i_size) forward.  The dirty bytes are kept as
 *    runs of one byte value, so memory grows with the number of writes,
 *    not with their size.
 *  - Inode numbers come from a per-subvolume counter started at the
 *    highest number in use + 1 and never handed out twice in a mount;
 *    directory index numbers likewise per directory (index_cnt).
 *
 * The runtime fields the logging code needs (logged_trans and friends)
 * live here too, so that the fsync of a later change can decide, as the
 * kernel's tree-log.c does, what has to be logged.
 *
 * Functions return 0 or -errno; an errno a system call would return
 * (ENOENT, EEXIST, ENOTEMPTY...) is returned without recording an error
 * context (it is an answer, not a failure), anything else records one.
 */
#ifndef TLOG_INODE_OPS_H
#define TLOG_INODE_OPS_H

#include <stdbool.h>
#include "ctree.h"
#include "list.h"
#include "transaction.h"

/*
 * A run of dirty bytes: [start, end) of the file, all of value @byte, or
 * the bytes of @data (owned by the run) when it is set.
 */
struct tlog_dirty_run {
	u64 start, end;
	u8 byte;
	u8 *data;
};

struct tlog_inode {
	struct btrfs_root *root;
	u64 ino;
	struct btrfs_inode_item item;	/* the inode as the kernel holds it (size = i_size) */
	u64 disk_i_size;		/* the size the inode item has on disk */
	int refs;
	bool item_dirty;		/* the in-memory item must be written */
	bool evicted;			/* its last name went: items deleted */
	bool flush_on_close;		/* truncated to 0: the next close writes back */
	/* the btrfs.compression property, read on first need */
	bool props_loaded, has_prop;
	u8 prop_compress;		/* BTRFS_COMPRESS_* it names, 0 for none */
	char prop_value[16];
	size_t prop_len;
	/* directories: the next DIR_INDEX number, 0 until first needed */
	u64 index_cnt;

	/* page cache: dirty runs, sorted, not overlapping */
	struct tlog_dirty_run *dirty;
	size_t nr_dirty, alloc_dirty;

	/* ---- state of the inode for the logging code (tree-log.c) ---- */
	u64 generation;			/* transid of its creation */
	u64 last_trans;			/* transaction of its last change */
	u64 changes;			/* counts its changes, for observers (contract.c) */
	u64 logged_trans;		/* transaction in which it was last logged */
	/*
	 * btrfs_record_unlink_dir's mark: on an inode, the last transaction
	 * it lost or gained a name (its next fsync logs its old parents);
	 * on a directory, the last one an entry left it for another
	 * directory unseen by the log, or a subvolume in it went (its next
	 * full logging commits instead).
	 */
	u64 last_unlink_trans;
	u64 last_reflink_trans;
	u64 last_dir_index_offset;	/* highest DIR_INDEX copied into the log */
	/*
	 * The lowest DIR_INDEX whose inode the next log_new_dir_dentries
	 * may have to log: entries below it had theirs looked at by an
	 * earlier one (first_dir_index_to_log; 0: from the first entry the
	 * log copied).  Kept across transactions, as index numbers only grow.
	 */
	u64 first_dir_index_to_log;
	/*
	 * The log transaction (root->log_transid) of its last change, and the
	 * one its last full logging covered: last_sub_trans <= last_log_commit
	 * means the log has it all (btrfs_inode_in_log).  Every update of the
	 * inode sets last_log_commit one below last_sub_trans, as
	 * btrfs_set_inode_last_trans does: signed, so that this holds in the
	 * first log transaction too.
	 */
	s64 last_sub_trans;
	s64 last_log_commit;
	bool full_sync;			/* the next fsync must log every extent */
	bool needs_full_log;		/* the inode changed in ways the fast path misses */
	/*
	 * Ranges written back (or, byte 1, made holes by a growing write)
	 * since the last log or commit: the modified extent maps the fast
	 * fsync logs.  Data bytes unused.
	 */
	struct tlog_dirty_run *modified;
	size_t nr_modified, alloc_modified;

	struct tlog_inode *hash_next;
	struct list_head dirty_list;	/* on mnt->dirty_inodes while item_dirty or dirty */
};

struct tlog_mount_stats {
	u64 transactions;		/* committed */
	u64 inodes_written;		/* inode items written back */
	u64 extents_written;		/* data extents made by writeback */
	u64 data_bytes_written;
	/* fsync (tree-log-write.c) */
	u64 inodes_logged;		/* btrfs_log_inode calls that logged */
	u64 items_copied;		/* inode items put in a log tree (checksums aside) */
	u64 deletion_searches;		/* searches deleting an inode's old log items */
	u64 deletion_searches_first_logging;	/* of those, for inodes not logged before */
	u64 log_searches;		/* searches of a log tree by the logger */
	u64 log_syncs;
	u64 log_blocks_written;
	u64 log_blocks_verified;	/* checked by the write-time tree-checker */
	u64 copy_buffer_allocations;	/* item lists (re)allocated for copies into the log */
	u64 inode_items_flushed_for_log;	/* in-memory inode items written to the subvolume first */
	u64 full_commits;		/* fsyncs that committed, a reason each: */
	char **full_commit_reasons;
};

struct tlog_mount {
	struct tlog_fs *fs;
	struct tlog_trans *trans;	/* running transaction, NULL until the first change */
	struct btrfs_timespec now;	/* current_time() of the operation running */
	bool fixed_clock;		/* SOURCE_DATE_EPOCH: times do not advance */
	struct tlog_inode **hash;
	size_t hash_size, nr_inodes;
	struct list_head dirty_inodes;
	/* the next inode number of each subvolume used so far, grown as needed */
	struct tlog_objectid_counter {
		u64 root;
		u64 next;
	} *objectids;
	size_t nr_objectids, objectids_alloc;
	u64 max_inline;			/* bytes; the kernel's default, 2048 */
	u8 compress_type;		/* -o compress=: BTRFS_COMPRESS_*, 0 for none */
	int compress_level;		/* 0: the algorithm's default */
	bool compress_force;		/* -o compress-force= */
	/*
	 * Log replay (BTRFS_FS_LOG_RECOVERING): link and unlink leave a
	 * directory's times alone, and the transaction is the replay's,
	 * borrowed by tlog_mount_attach() and never committed here.
	 */
	bool log_recovering;
	/*
	 * Data space the dirty data will need at writeback, at most (the
	 * kernel's data reservation, bytes_may_use): recomputed exactly only
	 * when space runs short.
	 */
	u64 reserved_bound;
	/*
	 * The logger without the kernel's optimisations (old log items
	 * dropped even for an inode not logged before in the transaction,
	 * items copied one at a time with an item list allocated for each,
	 * the in-memory inode item written to the subvolume before a full
	 * sync copies its items): the same log, for bench/fsync to measure
	 * what they save.
	 */
	bool log_unoptimized;
	/* the item list reused by every copy into the log (log_unoptimized: one per copy) */
	struct btrfs_item_batch log_batch;
	/*
	 * Tests only (TLOG_LOG_BREAK in tlogctl run): a logging rule left
	 * out on purpose, to show that the fsync contract check and the
	 * kernel comparisons catch it.  TLOG_BREAK_* bits; 0 in real use.
	 */
	unsigned int log_broken;
	struct tlog_mount_stats stats;
	/*
	 * mkfs --reflink: while @clone_inode is written back, its data is
	 * also the bytes of @clone_fd at the same file offsets, and
	 * uncompressed extents are cloned from there (btrfs_clone_data)
	 * rather than written; @cloned_bytes counts what was.  -1/NULL
	 * otherwise.
	 */
	int clone_fd;
	struct tlog_inode *clone_inode;
	u64 cloned_bytes;
};

#define TLOG_BREAK_PARENTS	(1U << 0)	/* no btrfs_log_all_parents */
#define TLOG_BREAK_NEW_DENTRIES	(1U << 1)	/* no log_new_dir_dentries */
#define TLOG_BREAK_BAD_ITEM	(1U << 2)	/* log inode items without a file type */

/* ---- the mount ---- */

/* Open @fs (writable) for inode operations.  *@ret is freed by tlog_mount_close(). */
int tlog_mount_open(struct tlog_fs *fs, struct tlog_mount **ret);
/*
 * Write the in-memory item of @inode into its tree now (the delayed inode
 * update, otherwise done before the commit).
 */
int tlog_write_inode_item(struct tlog_mount *mnt, struct tlog_inode *inode);
/* Forget everything not committed (a power cut) and free the mount. */
void tlog_mount_close(struct tlog_mount *mnt);
/*
 * Mount options that change what is written: compress=ALGO[:LEVEL],
 * compress-force=ALGO[:LEVEL], max_inline=BYTES, comma-separated.
 * -EINVAL with a reason for anything else.
 */
int tlog_mount_set_options(struct tlog_mount *mnt, const char *options);
/*
 * A mount over @trans, a transaction its caller runs (log replay): the
 * same operations with the kernel's log-recovery policy.  The times of
 * operations are the transaction's (trans->now).
 */
int tlog_mount_attach(struct tlog_trans *trans, struct tlog_mount **ret);
/* Write back the inode items still dirty and free the mount; @trans stays. */
int tlog_mount_detach(struct tlog_mount *mnt);
/* Use the clock for the next operation's times (a no-op with a fixed clock). */
void tlog_mount_tick(struct tlog_mount *mnt);
/* Times never advance from @sec (SOURCE_DATE_EPOCH). */
void tlog_mount_set_fixed_time(struct tlog_mount *mnt, u64 sec);
/*
 * sync(2): write back every inode's dirty data, write back inode items,
 * commit the transaction.  Nothing to commit is not an error.
 */
int tlog_sync(struct tlog_mount *mnt);
/* Write back the dirty data of @root's inodes, then commit (a snapshot's flush). */
int tlog_sync_root(struct tlog_mount *mnt, struct btrfs_root *root);
/*
 * Commit the running transaction without writing back dirty data (the
 * commit an fsync falls back to, after flushing its own inode).
 */
int tlog_commit(struct tlog_mount *mnt);
/* The running transaction, started if needed. */
int tlog_mount_trans(struct tlog_mount *mnt, struct tlog_trans **ret);

/* ---- inodes ---- */

/* Take a reference to inode @ino of @root (read from the tree on first use). */
int tlog_iget(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino, struct tlog_inode **ret);
void tlog_iput(struct tlog_mount *mnt, struct tlog_inode *inode);
/*
 * Put a reference, and with the last one write the item back at once and
 * drop the inode from the cache: for callers that also read and write the
 * tree's inode items directly (log replay copies logged items in), so
 * that no cached copy outlives one change.
 */
int tlog_iforget(struct tlog_mount *mnt, struct tlog_inode *inode);
/*
 * For callers that keep inodes cached past their last reference instead
 * (log replay, which changes the same directory for every name it adds):
 * whether the cache holds inode @ino of @root, not evicted - its item is
 * in the tree, the cached copy newer; tlog_iflush() writes the item of
 * the inode, unreferenced, and drops it before the caller reads or
 * writes the item directly; tlog_iflush_unused() does so for every
 * unreferenced inode, to bound the cache.
 */
bool tlog_icached(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino);
int tlog_iflush(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino);
int tlog_iflush_unused(struct tlog_mount *mnt);
/* The inode item changed in memory: to be written back, times as the caller set them. */
void tlog_inode_mark_dirty(struct tlog_mount *mnt, struct tlog_inode *inode);

static inline u32 tlog_inode_mode(const struct tlog_inode *inode)
{
	return btrfs_inode_item_mode(&inode->item);
}

/*
 * Look @name up in directory @dir: 0 with a reference to the inode in
 * *@ret (crossing into a subvolume's root directory), -ENOENT, -ENOTDIR.
 */
int tlog_lookup(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		struct tlog_inode **ret);
/*
 * Path walks, one policy for all of them.  Paths are absolute, from the
 * top-level subvolume's root directory: the mount is chrooted there, so
 * ".." at the top stays at the top and an absolute symlink target starts
 * again from it; a relative target starts from the link's directory.  A
 * symlink in the middle of a path is always followed.  One walk follows
 * at most 40 links, those in the middle and at the end together, as the
 * kernel counts them: the 41st is -ELOOP.  A trailing slash wants a
 * directory (-ENOTDIR).
 *
 * tlog_open_path gives the inode open(2) of @path reaches: a final symlink
 * is followed, unless TLOG_OPEN_NOFOLLOW (lstat, lchown...: the link
 * itself), which a trailing slash overrides as it does in the kernel.
 * TLOG_OPEN_CREATE is O_CREAT: a missing final name (through a dangling
 * link, its target's) becomes a regular file of mode 0644, and a trailing
 * slash is -EISDIR, whether the name exists or not.  "/" is the top-level
 * directory.  tlog_lookup_path is the TLOG_OPEN_NOFOLLOW case.
 *
 * tlog_lookup_parent stops before the last component and follows nothing
 * of it: *@dir is the directory holding it, *@name and *@len the component
 * (pointing into @path, without its trailing slashes; length 0 for "/").
 */
#define TLOG_OPEN_CREATE	(1U << 0)
#define TLOG_OPEN_NOFOLLOW	(1U << 1)
int tlog_open_path(struct tlog_mount *mnt, const char *path, unsigned int flags,
		   struct tlog_inode **ret);
static inline int tlog_lookup_path(struct tlog_mount *mnt, const char *path,
				   struct tlog_inode **ret)
{
	return tlog_open_path(mnt, path, TLOG_OPEN_NOFOLLOW, ret);
}
int tlog_lookup_parent(struct tlog_mount *mnt, const char *path, struct tlog_inode **dir,
		       const char **name, u16 *len);

/* ---- building blocks for the other operations (inode-ops.c) ---- */

/* The next inode (or, in the root tree, subvolume) number of @root, taken. */
int tlog_next_objectid(struct tlog_mount *mnt, struct btrfs_root *root, u64 *ret);
/* The same, not taken (the counter is set up on first use). */
int tlog_next_objectid_peek(struct tlog_mount *mnt, struct btrfs_root *root, u64 *ret);
/* The index the next name of directory @dir gets. */
int tlog_dir_next_index(struct tlog_inode *dir, u64 *ret);
/* A name came or went in @dir: @delta of i_size, mtime, ctime, i_version. */
void tlog_dir_changed(struct tlog_mount *mnt, struct tlog_inode *dir, s64 delta);
/* A new inode's item: this transaction's, one link, @mode, the mount's time. */
void tlog_init_inode_item(struct tlog_mount *mnt, struct btrfs_inode_item *ii, u32 mode);
/* Insert inode @ino's item @ii and its INODE_REF (@parent, @name, @index) in one batch. */
int tlog_insert_inode(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino, u64 parent,
		      const char *name, u16 len, u64 index, const struct btrfs_inode_item *ii);
/*
 * btrfs_add_link: @name -> @inode in @dir at @index: the back reference
 * (with @backref: INODE_REF, or INODE_EXTREF once that item is full),
 * DIR_ITEM and DIR_INDEX, the directory's size, i_version and (unless
 * replaying a log) times.  @inode's link count is the caller's.  A
 * subvolume's root directory gets ROOT_REF/ROOT_BACKREF and an entry
 * pointing at its ROOT_ITEM instead (tlog_link_subvol), whatever @backref.
 */
int tlog_add_link(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *inode,
		  const char *name, u16 len, u64 index, bool backref);
/*
 * btrfs_unlink_inode: the name's items go, as tlog_add_link's policy in
 * reverse, and @inode loses one link (ctime, i_version).  An inode left
 * without links is not evicted: that is the caller's decision (unlink(2)
 * evicts, log replay leaves it to its link count fixup).
 */
int tlog_unlink_inode(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *inode,
		      const char *name, u16 len);
/* What adding @name to @dir meets first: ENOTDIR, EEXIST, ENAMETOOLONG, ENOENT... */
int tlog_may_create(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len);

/* ---- namespace operations (inode-ops.c) ---- */

/*
 * Create @name in @dir: a regular file, directory, symlink (@target),
 * FIFO, socket or device (@rdev: the kernel's own dev_t, major << 20 | minor, as btrfs
 * stores it; not the user-space makedev() value) by the
 * S_IF* type of @mode.  *@ret (may be NULL) gets a reference.
 */
int tlog_create(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		u32 mode, u64 rdev, const char *target, struct tlog_inode **ret);
int tlog_link(struct tlog_mount *mnt, struct tlog_inode *inode, struct tlog_inode *dir,
	      const char *name, u16 len);
/* unlink(2) (@rmdir false) or rmdir(2) of @name in @dir. */
int tlog_unlink(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		bool rmdir);

#define TLOG_RENAME_NOREPLACE	(1U << 0)
#define TLOG_RENAME_EXCHANGE	(1U << 1)
int tlog_rename(struct tlog_mount *mnt, struct tlog_inode *odir, const char *oname, u16 olen,
		struct tlog_inode *ndir, const char *nname, u16 nlen, unsigned int flags);

/* ---- subvolumes (subvolume.c) ---- */

/* BTRFS_IOC_SUBVOL_CREATE: an empty subvolume called @name in @dir. */
int tlog_create_subvol(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len);
/*
 * rmdir of @subvol, the root directory of an empty subvolume named @name
 * in @dir (btrfs_delete_subvolume): its name and root refs go, its root
 * item gets no references and an orphan item, for the cleaner.
 */
int tlog_delete_subvol(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		       struct tlog_inode *subvol);
/*
 * A subvolume's name, as a rename moves it (btrfs_unlink_subvol and
 * btrfs_add_link of a subvolume's root directory @subvol): the entry in
 * @dir and the ROOT_REF/ROOT_BACKREF pair go, or come at @index; the
 * directory's size and times follow.  *@index (may be NULL) gets the
 * index of the name removed.
 */
int tlog_unlink_subvol(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		       struct tlog_inode *subvol, u64 *index);
int tlog_link_subvol(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *subvol,
		     const char *name, u16 len, u64 index);
/*
 * BTRFS_IOC_SNAP_CREATE: a writable snapshot of the subvolume whose root
 * directory is @src, called @name in @dir.  Commits, as the kernel does.
 */
int tlog_create_snapshot(struct tlog_mount *mnt, struct tlog_inode *src, struct tlog_inode *dir,
			 const char *name, u16 len);
/* `btrfs property set ro true`: BTRFS_ROOT_SUBVOL_RDONLY in @root's root item. */
int tlog_subvol_set_readonly(struct tlog_mount *mnt, struct btrfs_root *root);
/*
 * BTRFS_IOC_DEFAULT_SUBVOL: the root tree's "default" entry names subvolume
 * @subvol_id, and INCOMPAT_DEFAULT_SUBVOL is set.
 */
int tlog_set_default_subvol(struct tlog_mount *mnt, u64 subvol_id);

/* ---- attributes and xattrs (inode-ops.c) ---- */

int tlog_chmod(struct tlog_mount *mnt, struct tlog_inode *inode, u32 mode);
int tlog_chown(struct tlog_mount *mnt, struct tlog_inode *inode, u32 uid, u32 gid);
int tlog_utimes(struct tlog_mount *mnt, struct tlog_inode *inode,
		const struct btrfs_timespec *atime, const struct btrfs_timespec *mtime);
/* FS_IOC_SETFLAGS for the flags btrfs keeps: BTRFS_INODE_NODATACOW... */
int tlog_set_inode_flags(struct tlog_mount *mnt, struct tlog_inode *inode, u64 set, u64 clear);

#define TLOG_XATTR_CREATE	(1U << 0)
#define TLOG_XATTR_REPLACE	(1U << 1)
int tlog_setxattr(struct tlog_mount *mnt, struct tlog_inode *inode, const char *name,
		  const void *value, size_t size, unsigned int flags);
int tlog_removexattr(struct tlog_mount *mnt, struct tlog_inode *inode, const char *name);

/* ---- data (file-write.c) ---- */

/* pwrite(2) of @len bytes of value @byte at @off. */
int tlog_write(struct tlog_mount *mnt, struct tlog_inode *inode, u64 off, u64 len, u8 byte);
/* pwrite(2) of the @len bytes at @buf (copied until written back). */
int tlog_write_data(struct tlog_mount *mnt, struct tlog_inode *inode, u64 off, const void *buf,
		    u64 len);
/* inode_add_bytes / inode_sub_bytes: @delta of the bytes the inode's extents take (nbytes). */
void tlog_inode_add_bytes(struct tlog_inode *inode, s64 delta);
/*
 * btrfs_drop_extents over [@start, @end) of @inode (split at the edges,
 * references given back), nbytes lowered by what was dropped.  The item
 * is not marked dirty: callers change more and mark it once.
 */
int tlog_drop_extents(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end);
/* [@start, @end) of @inode has new extent maps for the next fast fsync (@hole: a hole's). */
void tlog_inode_record_modified(struct tlog_inode *inode, u64 start, u64 end, bool hole);
/* Forget @inode's dirty data (its runs' memory freed). */
void tlog_dirty_release(struct tlog_inode *inode);
int tlog_truncate(struct tlog_mount *mnt, struct tlog_inode *inode, u64 size);
#define TLOG_FALLOC_KEEP_SIZE	(1U << 0)
#define TLOG_FALLOC_PUNCH_HOLE	(1U << 1)
int tlog_fallocate(struct tlog_mount *mnt, struct tlog_inode *inode, unsigned int mode,
		   u64 off, u64 len);
/*
 * FICLONERANGE: [@off, @off + @len) of @src (@len 0: to its end) shared
 * into @dst at @dst_off, as btrfs_clone_files does.  As in the kernel,
 * the files are written back before the ranges are checked: a clone
 * refused for its ranges has flushed already.
 */
int tlog_clone_range(struct tlog_mount *mnt, struct tlog_inode *src, u64 off, u64 len,
		     struct tlog_inode *dst, u64 dst_off);
/* Write back the dirty data of @inode in [start, end) (end (u64)-1: all). */
int tlog_writeback_range(struct tlog_mount *mnt, struct tlog_inode *inode, u64 start, u64 end);
static inline int tlog_writeback_inode(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	return tlog_writeback_range(mnt, inode, 0, (u64)-1);
}
/*
 * fsync(2) and fdatasync(2) of @inode: its data written back, then
 * logged and the log synced, or the full commit the kernel falls back to
 * (btrfs_sync_file, tree-log-write.c).
 */
int tlog_fsync(struct tlog_mount *mnt, struct tlog_inode *inode, bool datasync);

/* The algorithm @inode's btrfs.compression property names (0: none, use the mount's). */
u8 tlog_inode_compress_type(struct tlog_inode *inode);
/* Remove security.capability, as a write or chown by anyone does (file_remove_privs). */
int tlog_inode_kill_privs(struct tlog_mount *mnt, struct tlog_inode *inode);
/* The largest inline extent a leaf of @fs can hold (BTRFS_MAX_INLINE_DATA_SIZE). */
u32 tlog_max_inline_data_size(const struct tlog_fs *fs);

/* A file description of @inode is closed: the writeback a truncate to 0 asked for. */
int tlog_release_file(struct tlog_mount *mnt, struct tlog_inode *inode);

/* Delete every item of @inode (its last name went and nothing holds it open). */
int tlog_evict_inode(struct tlog_mount *mnt, struct tlog_inode *inode);

#endif
