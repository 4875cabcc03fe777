// SPDX-License-Identifier: GPL-2.0-only
/*
 * The log of the running transaction on a memory device.  A new file is
 * made through the inode operations, its items copied into the log with
 * btrfs_copy_items, the log synced, and the device "loses power" (closed
 * without a commit).  The committed state must be byte for byte what it
 * was, bar the primary superblock's log_root, and the log must hold what
 * was synced and replay.  Then: two syncs, a commit after a sync, and
 * every write of a sync failed or dropped in turn.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "errctx.h"
#include "file.h"
#include "inode.h"
#include "inode-ops.h"
#include "mem-fs.h"
#include "root-tree.h"
#include "super.h"
#include "transaction.h"
#include "tree-log.h"
#include "../tools/log-inode.h"

#define COMMITTED	"committed"
#define COMMITTED_SIZE	20000
#define LOGGED		"logged"
#define CHUNK		4096

/* A filesystem with one committed file, and a copy of all its bytes. */
struct base {
	struct tlog_bdev *bdev;
	u8 *before;
	u64 gen;
};

static void make_base(struct base *b)
{
	struct tlog_fs *fs;
	struct tlog_mount *mnt;
	struct tlog_inode *dir, *f;

	b->bdev = memfs_make();
	fs = memfs_open(b->bdev, 0, 0);
	cr_assert_eq(tlog_mount_open(fs, &mnt), 0);
	cr_assert_eq(tlog_lookup_path(mnt, "/", &dir), 0);
	cr_assert_eq(tlog_create(mnt, dir, COMMITTED, strlen(COMMITTED), S_IFREG | 0644, 0, NULL,
				 &f), 0, "%s", tlog_error_get());
	cr_assert_eq(tlog_write(mnt, f, 0, COMMITTED_SIZE, 'c'), 0);
	tlog_iput(mnt, f);
	tlog_iput(mnt, dir);
	cr_assert_eq(tlog_sync(mnt), 0, "%s", tlog_error_get());
	tlog_mount_close(mnt);
	b->gen = fs->generation;
	tlog_close(fs);
	b->before = malloc(MEMFS_SIZE);
	cr_assert_not_null(b->before);
	memcpy(b->before, tlog_bdev_memory_data(b->bdev), MEMFS_SIZE);
}

/* The base again on a fresh device (fault runs each need one). */
static struct tlog_bdev *copy_base(const struct base *b)
{
	struct tlog_bdev *bdev;

	cr_assert_eq(tlog_bdev_create_memory("memfs", MEMFS_SIZE, &bdev), 0);
	memcpy(tlog_bdev_memory_data(bdev), b->before, MEMFS_SIZE);
	return bdev;
}

/* When set, log_new_file() stores the device's write count before its last sync. */
static u64 *last_sync_writes;

/*
 * In a new transaction: the file LOGGED, @syncs chunks of data, each
 * written back, logged and synced in turn (chunk i of byte 'a' + i).  The
 * mount stays open for the caller to lose power or commit.  Returns the
 * first error.
 */
static int log_new_file(struct tlog_fs *fs, struct tlog_mount **pmnt, int syncs)
{
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_inode *dir, *f;
	struct tlog_mount *mnt;
	u64 ino;
	int err;

	cr_assert_eq(tlog_mount_open(fs, &mnt), 0);
	*pmnt = mnt;
	cr_assert_eq(tlog_lookup_path(mnt, "/", &dir), 0);
	err = tlog_create(mnt, dir, LOGGED, strlen(LOGGED), S_IFREG | 0600, 0, NULL, &f);
	tlog_iput(mnt, dir);
	cr_assert_eq(err, 0, "%s", tlog_error_get());
	ino = f->ino;
	for (int i = 0; i < syncs; i++) {
		if (i)
			cr_assert_eq(tlog_iget(mnt, root, ino, &f), 0);
		cr_assert_eq(tlog_write(mnt, f, (u64)i * CHUNK, CHUNK, (u8)('a' + i)), 0);
		cr_assert_eq(tlog_writeback_inode(mnt, f), 0, "%s", tlog_error_get());
		/* the inode item written back: the tree holds the inode as it is */
		cr_assert_eq(tlog_iforget(mnt, f), 0);
		cr_assert_eq(test_log_inode(mnt->trans, root, ino), 0, "%s", tlog_error_get());
		if (last_sync_writes && i + 1 == syncs)
			*last_sync_writes = fs->bdev->nr_writes;
		err = tlog_trans_sync_log(mnt->trans, NULL);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Is physical byte @phys in a chunk, at a logical address the committed
 * state has free (log blocks, data written for the log)?
 */
static bool in_free_space(struct tlog_fs *fs, u64 phys, u64 len)
{
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct map_lookup *m = &fs->chunks.maps[i];

		for (int s = 0; s < m->num_stripes; s++) {
			u64 p = m->stripes[s].physical;

			if (phys >= p && phys + len <= p + m->length)
				return memfs_fst_range_free(fs, m->logical + (phys - p), len);
		}
	}
	return false;
}

/*
 * The committed state is as it was: every byte outside free space is the
 * base's, the primary superblock bar its log fields and
 * checksum too, and the other copies untouched.  @fs is open on the device.
 */
static void assert_committed_intact(const struct base *b, struct tlog_fs *fs, const char *where)
{
	const u8 *now = tlog_bdev_memory_data(fs->bdev);
	u64 sb_off = BTRFS_SUPER_INFO_OFFSET;

	for (u64 off = 0; off < MEMFS_SIZE; off += 4096) {
		if (!memcmp(now + off, b->before + off, 4096))
			continue;
		if (off == sb_off) {
			struct btrfs_super_block x, y;

			memcpy(&x, now + off, sizeof(x));
			memcpy(&y, b->before + off, sizeof(y));
			memset(x.csum, 0, sizeof(x.csum));
			memset(y.csum, 0, sizeof(y.csum));
			btrfs_set_super_block_log_root(&x, 0);
			btrfs_set_super_block_log_root_level(&x, 0);
			cr_assert_eq(btrfs_super_block_log_root(&y), 0);
			cr_assert(!memcmp(&x, &y, sizeof(x)),
				  "%s: the superblock changed beyond its log root", where);
			continue;
		}
		cr_assert(in_free_space(fs, off, 4096),
			  "%s: byte %llu changed outside free space", where,
			  (unsigned long long)off);
	}
	cr_assert_eq(fs->generation, b->gen, "%s", where);
	cr_assert_eq(memfs_super_generation(fs->bdev, 1), b->gen, "%s", where);
}

/* The file @name: its size, each chunk's bytes, data checksums (-ENOENT if absent). */
static int file_chunks(struct tlog_fs *fs, const char *name, u64 *size)
{
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_dir_entry de;
	struct btrfs_inode_item ii;
	struct tlog_file *file;
	u64 bad = 0;
	u8 *buf;
	int err;

	err = btrfs_lookup_dir_entry(root, BTRFS_FIRST_FREE_OBJECTID, name, strlen(name), &de);
	if (err)
		return err;
	cr_assert_eq(btrfs_read_inode(root, de.location.objectid, &ii), 0);
	*size = btrfs_inode_item_size(&ii);
	cr_assert_eq(tlog_file_open(fs, root, de.location.objectid, &file), 0);
	buf = malloc(*size + 1);
	cr_assert_eq(tlog_file_pread(file, buf, *size, 0), (ssize_t)*size);
	for (u64 i = 0; i < *size; i++) {
		u8 want = !strcmp(name, COMMITTED) ? 'c' : (u8)('a' + i / CHUNK);

		cr_assert_eq(buf[i], want, "%s: byte %llu", name, (unsigned long long)i);
	}
	cr_assert_eq(tlog_file_verify(file, &bad), 0, "%s: csums, offset %llu", name,
		     (unsigned long long)bad);
	free(buf);
	tlog_file_close(file);
	return 0;
}

static int replay(struct tlog_fs *fs)
{
	struct tlog_trans *trans;
	int err = tlog_trans_start_flags(fs, TLOG_TRANS_LOG_REPLAY, &trans);

	if (err)
		return err;
	err = btrfs_replay_log(trans, NULL);
	if (err) {
		tlog_trans_abort(trans);
		return err;
	}
	return tlog_trans_commit(trans);
}

/*
 * After the power cut: the log as synced @chunks times (0: no log), it
 * replays to a file of that many chunks, the committed file untouched.
 */
static void check_after_cut(const struct base *b, struct tlog_bdev *bdev, int chunks,
			    const char *where)
{
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	u64 size;

	assert_committed_intact(b, fs, where);
	cr_assert_eq(file_chunks(fs, COMMITTED, &size), 0, "%s", where);
	cr_assert_eq(size, COMMITTED_SIZE);
	cr_assert_eq(file_chunks(fs, LOGGED, &size), -ENOENT, "%s: logged file committed", where);
	if (chunks == 0) {
		cr_assert_null(fs->log_root_tree, "%s: a log", where);
		tlog_close(fs);
		return;
	}
	cr_assert_not_null(fs->log_root_tree, "%s: no log", where);
	memfs_check_free_space_tree(fs);
	cr_assert_eq(replay(fs), 0, "%s: replay: %s", where, tlog_error_get());
	cr_assert_eq(file_chunks(fs, LOGGED, &size), 0, "%s", where);
	cr_assert_eq(size, (u64)chunks * CHUNK, "%s: the log of the wrong sync", where);
	cr_assert_eq(file_chunks(fs, COMMITTED, &size), 0, "%s", where);
	memfs_check_free_space_tree(fs);
	tlog_close(fs);
}

Test(memfs_log, log_tree_made_once_and_found)
{
	struct base b;
	struct tlog_fs *fs;
	struct tlog_trans *trans;
	struct btrfs_root *fsr, *log, *again, *extent;

	make_base(&b);
	fs = memfs_open(b.bdev, 0, 0);
	fsr = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	extent = memfs_root(fs, BTRFS_EXTENT_TREE_OBJECTID);
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_null(tlog_trans_find_log(trans, BTRFS_FS_TREE_OBJECTID));
	cr_assert_null(fs->log_root_tree);
	cr_assert_eq(tlog_trans_log_tree(trans, fsr, &log), 0, "%s", tlog_error_get());
	cr_assert_not_null(fs->log_root_tree);
	cr_assert_eq(log->root_key.objectid, BTRFS_TREE_LOG_OBJECTID);
	cr_assert_eq(log->root_key.offset, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(log->generation, trans->transid);
	cr_assert_eq(tlog_trans_log_tree(trans, fsr, &again), 0);
	cr_assert_eq(again, log);
	cr_assert_eq(tlog_trans_find_log(trans, BTRFS_FS_TREE_OBJECTID), log);
	cr_assert_eq(btrfs_read_log_root(fs, BTRFS_FS_TREE_OBJECTID, &again), 0);
	cr_assert_eq(again, log);
	cr_assert_eq(tlog_trans_nr_logs(trans), 1);
	cr_assert_eq(tlog_trans_log_tree(trans, extent, &again), -EINVAL);
	/* log blocks are no business of the commit's dirty set */
	cr_assert(list_empty(&fs->dirty_blocks));
	cr_assert(!list_empty(&fs->log_dirty_blocks));
	cr_assert(!tlog_trans_needs_full_commit(trans));
	tlog_trans_abort(trans);
	cr_assert_null(fs->log_root_tree);
	cr_assert(list_empty(&fs->log_dirty_blocks));
	cr_assert_eq(btrfs_read_log_root(fs, BTRFS_FS_TREE_OBJECTID, &again), -ENOENT);
	/* nothing was written: the next transaction starts */
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	tlog_trans_abort(trans);
	tlog_close(fs);
	free(b.before);
	tlog_bdev_close(b.bdev);
}

Test(memfs_log, full_commit_after_a_chunk)
{
	struct base b;
	struct tlog_fs *fs;
	struct tlog_trans *trans;
	struct btrfs_root *log;
	u64 at;

	make_base(&b);
	fs = memfs_open(b.bdev, 0, 0);
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	cr_assert_null(tlog_trans_full_commit_reason(trans));
	/* data until the data groups are full: a chunk is made */
	for (int i = 0; i < 1024 && !tlog_trans_needs_full_commit(trans); i++)
		cr_assert_eq(tlog_trans_alloc_space(trans, BTRFS_BLOCK_GROUP_DATA, 1 << 20, 4096,
						    &at), 0, "%s", tlog_error_get());
	cr_assert(tlog_trans_needs_full_commit(trans));
	cr_assert_str_eq(tlog_trans_full_commit_reason(trans), "a chunk was allocated");
	cr_assert_eq(tlog_trans_log_tree(trans, memfs_root(fs, BTRFS_FS_TREE_OBJECTID), &log),
		     -EAGAIN);
	tlog_trans_abort(trans);
	tlog_close(fs);
	fs = memfs_open(b.bdev, 0, 0);
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	tlog_trans_set_needs_full_commit(trans, "test");
	cr_assert_str_eq(tlog_trans_full_commit_reason(trans), "test");
	tlog_trans_abort(trans);
	tlog_close(fs);
	free(b.before);
	tlog_bdev_close(b.bdev);
}

Test(memfs_log, sync_then_power_cut)
{
	struct base b;
	struct tlog_mount *mnt;
	struct tlog_fs *fs;
	struct btrfs_root *log;
	struct btrfs_super_block sb;
	u64 nr = 0;

	make_base(&b);
	fs = memfs_open(b.bdev, 0, 0);
	cr_assert_eq(log_new_file(fs, &mnt, 1), 0, "%s", tlog_error_get());
	/* a commit would write the transaction's blocks: the sync wrote none */
	cr_assert(!list_empty(&fs->dirty_blocks));
	cr_assert(list_empty(&fs->log_dirty_blocks));
	tlog_mount_close(mnt);		/* the power cut */
	cr_assert_not_null(fs->log_root_tree, "the synced log is on the image");
	tlog_close(fs);

	cr_assert_eq(tlog_bdev_read(b.bdev, &sb, sizeof(sb), btrfs_sb_offset(1)), 0);
	cr_assert_eq(btrfs_super_block_log_root(&sb), 0, "the log root is in the primary only");
	fs = memfs_open(b.bdev, 0, 0);
	cr_assert_neq(btrfs_super_block_log_root(&fs->super), 0);
	cr_assert_eq(btrfs_read_log_root(fs, BTRFS_FS_TREE_OBJECTID, &log), 0);
	cr_assert_eq(log->generation, b.gen + 1);
	cr_assert_eq(btrfs_root_item_generation_v2(&log->root_item), b.gen + 1);
	cr_assert_eq(btrfs_root_item_refs(&log->root_item), 0);
	cr_assert_eq(btrfs_inode_item_mode(&log->root_item.inode), S_IFDIR | 0755);
	cr_assert_eq(btrfs_check_tree_structure(log, &nr, NULL), 0, "%s", tlog_error_get());
	/* inode item, INODE_REF, one extent, its csums */
	cr_assert_eq(nr, 4);
	tlog_close(fs);
	check_after_cut(&b, b.bdev, 1, "one sync");
	free(b.before);
	tlog_bdev_close(b.bdev);
}

Test(memfs_log, second_sync_copies_the_first)
{
	struct base b;
	struct tlog_mount *mnt;
	struct tlog_fs *fs;
	u64 first_root, first_log;
	struct btrfs_root *log;

	make_base(&b);
	fs = memfs_open(b.bdev, 0, 0);
	cr_assert_eq(log_new_file(fs, &mnt, 1), 0, "%s", tlog_error_get());
	first_root = fs->log_root_tree->bytenr;
	log = tlog_trans_find_log(mnt->trans, BTRFS_FS_TREE_OBJECTID);
	first_log = log->bytenr;
	tlog_mount_close(mnt);
	tlog_close(fs);

	/* again, two syncs: the second's blocks are copies, the first's kept */
	tlog_bdev_close(b.bdev);
	b.bdev = copy_base(&b);
	fs = memfs_open(b.bdev, 0, 0);
	cr_assert_eq(log_new_file(fs, &mnt, 2), 0, "%s", tlog_error_get());
	log = tlog_trans_find_log(mnt->trans, BTRFS_FS_TREE_OBJECTID);
	cr_assert_neq(fs->log_root_tree->bytenr, first_root);
	cr_assert_neq(log->bytenr, first_log);
	tlog_mount_close(mnt);
	tlog_close(fs);
	check_after_cut(&b, b.bdev, 2, "two syncs");
	free(b.before);
	tlog_bdev_close(b.bdev);
}

/* Every log block's address, to see them free after the commit. */
struct blocks {
	u64 v[256];
	int nr;
};

static int note_block(struct tlog_fs *fs, const struct extent_buffer *eb, bool in_root_tree,
		      void *arg)
{
	struct blocks *bl = arg;

	(void)fs;
	(void)in_root_tree;
	cr_assert_lt(bl->nr, 256);
	bl->v[bl->nr++] = eb->start;
	return 0;
}

Test(memfs_log, commit_after_sync_ends_the_log)
{
	struct base b;
	struct tlog_mount *mnt;
	struct tlog_fs *fs;
	struct blocks bl = { .nr = 0 };
	u64 size;

	make_base(&b);
	fs = memfs_open(b.bdev, 0, 0);
	cr_assert_eq(log_new_file(fs, &mnt, 2), 0, "%s", tlog_error_get());
	cr_assert_eq(tlog_log_for_each_block(fs, note_block, &bl), 0);
	cr_assert_geq(bl.nr, 2);
	cr_assert_eq(tlog_commit(mnt), 0, "%s", tlog_error_get());
	cr_assert_null(fs->log_root_tree);
	cr_assert_eq(btrfs_super_block_log_root(&fs->super), 0);
	tlog_mount_close(mnt);
	tlog_close(fs);

	fs = memfs_open(b.bdev, 0, 0);
	cr_assert_eq(fs->generation, b.gen + 1);
	cr_assert_null(fs->log_root_tree);
	cr_assert_eq(btrfs_super_block_log_root(&fs->super), 0);
	/* the log's blocks never had extent items: free space again */
	memfs_check_free_space_tree(fs);
	for (int i = 0; i < bl.nr; i++)
		cr_assert(memfs_fst_range_free(fs, bl.v[i], fs->nodesize),
			  "log block %llu is not free after the commit",
			  (unsigned long long)bl.v[i]);
	cr_assert_eq(file_chunks(fs, LOGGED, &size), 0);
	cr_assert_eq(size, 2 * CHUNK);
	cr_assert_eq(file_chunks(fs, COMMITTED, &size), 0);
	/* and allocatable: a transaction hands them out */
	{
		struct tlog_trans *trans;
		int found = 0;

		cr_assert_eq(tlog_trans_start(fs, &trans), 0);
		for (int n = 0; n < 4096 && found < bl.nr; n++) {
			u64 at;

			cr_assert_eq(tlog_trans_alloc_space(trans, BTRFS_BLOCK_GROUP_METADATA,
							    fs->nodesize, fs->nodesize, &at), 0);
			for (int i = 0; i < bl.nr; i++)
				found += at == bl.v[i];
		}
		cr_assert_eq(found, bl.nr, "only %d of %d log blocks allocatable", found, bl.nr);
		tlog_trans_abort(trans);
	}
	tlog_close(fs);
	free(b.before);
	tlog_bdev_close(b.bdev);
}

/*
 * Every write of the last of @syncs syncs failed, and dropped, in turn,
 * then the power cut: the log of the sync before (or none) or the new
 * one, never a superblock pointing at missing blocks, the committed state
 * intact in every case.
 */
static void sweep_sync(int syncs)
{
	struct base b;
	struct tlog_mount *mnt;
	struct tlog_fs *fs;
	u64 w_open, w0, w1, prev_root = 0, old = 0, new = 0;
	char where[96];

	make_base(&b);
	/* the clean run: which writes are the last sync's */
	fs = memfs_open(b.bdev, 0, 0);
	w_open = fs->bdev->nr_writes;
	if (syncs > 1) {
		cr_assert_eq(log_new_file(fs, &mnt, syncs - 1), 0);
		prev_root = fs->log_root_tree->bytenr;
		tlog_mount_close(mnt);
		tlog_close(fs);
		tlog_bdev_close(b.bdev);
		b.bdev = copy_base(&b);
		fs = memfs_open(b.bdev, 0, 0);
		w_open = fs->bdev->nr_writes;
	}
	last_sync_writes = &w0;
	cr_assert_eq(log_new_file(fs, &mnt, syncs), 0);
	last_sync_writes = NULL;
	w1 = fs->bdev->nr_writes;
	tlog_mount_close(mnt);
	tlog_close(fs);
	cr_assert_geq(w1 - w0, 4, "a sync of %llu writes", (unsigned long long)(w1 - w0));

	for (int mode = TLOG_FAULT_FAIL; mode <= TLOG_FAULT_DROP; mode++) {
		for (u64 n = w0 - w_open + 1; n <= w1 - w_open; n++) {
			struct tlog_bdev *bdev = copy_base(&b);
			struct btrfs_super_block sb;
			int err, chunks;

			snprintf(where, sizeof(where), "sync %d: %s at write %llu of %llu", syncs,
				 mode == TLOG_FAULT_FAIL ? "fail" : "drop",
				 (unsigned long long)(n - (w0 - w_open)),
				 (unsigned long long)(w1 - w0));
			fs = memfs_open(bdev, mode, n);
			err = log_new_file(fs, &mnt, syncs);
			if (mode == TLOG_FAULT_FAIL) {
				cr_assert_neq(err, 0, "%s: the error went unnoticed", where);
				cr_assert(tlog_trans_needs_full_commit(mnt->trans), "%s", where);
				cr_assert_eq(tlog_trans_sync_log(mnt->trans, NULL), -EAGAIN, "%s", where);
			} else {
				cr_assert_eq(err, 0, "%s: %s", where, tlog_error_get());
			}
			tlog_mount_close(mnt);
			tlog_close(fs);
			cr_assert_eq(tlog_bdev_read(bdev, &sb, sizeof(sb), BTRFS_SUPER_INFO_OFFSET), 0);
			if (btrfs_super_block_log_root(&sb) == prev_root)
				chunks = syncs - 1;
			else
				chunks = syncs;
			*(chunks < syncs ? &old : &new) += 1;
			check_after_cut(&b, bdev, chunks, where);
			tlog_bdev_close(bdev);
		}
	}
	cr_log_info("sync %d: %llu writes, %llu fault points kept the log before, %llu the new one",
		    syncs, (unsigned long long)(w1 - w0), (unsigned long long)old,
		    (unsigned long long)new);
	/*
	 * The superblock is the last write: failed or dropped, it leaves the
	 * log before; any fault before it leaves the superblock unwritten.
	 */
	cr_assert_gt(old, 0);
	cr_assert_eq(new, 0, "a fault point left the new log: a write after the superblock?");
	free(b.before);
	tlog_bdev_close(b.bdev);
}

Test(memfs_log, fault_at_every_write_of_a_sync, .timeout = 300)
{
	sweep_sync(1);
}

Test(memfs_log, fault_at_every_write_of_a_second_sync, .timeout = 300)
{
	sweep_sync(2);
}

/* ---- the B-tree helpers the logger uses ---- */

#define T_TYPE	BTRFS_TEMPORARY_ITEM_KEY

static void fill_tree(struct tlog_fs *fs, u64 from, u64 to, u64 step)
{
	struct tlog_trans *trans;
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);

	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	for (u64 i = from; i < to; i += step) {
		struct btrfs_key k = { 100000 + i, T_TYPE, i };
		u64 v = i;

		cr_assert_eq(btrfs_insert_item(trans, root, &k, &v, sizeof(v)), 0);
	}
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
}

Test(memfs_log, btree_helpers)
{
	struct tlog_bdev *bdev = memfs_make();
	struct tlog_fs *fs = memfs_open(bdev, 0, 0);
	struct btrfs_root *root = memfs_root(fs, BTRFS_FS_TREE_OBJECTID);
	struct tlog_trans *trans;
	struct btrfs_key keys[600], k;
	const void *data[600];
	u32 sizes[600];
	u64 vals[600], n = 0, deleted = 0, seen;
	struct btrfs_path path;
	int ret;

	/* even keys committed; odd ones go in as one sorted batch between them */
	fill_tree(fs, 0, 1200, 2);
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	for (int i = 0; i < 600; i++) {
		vals[i] = 2 * i + 1;
		keys[i] = (struct btrfs_key){ 100000 + vals[i], T_TYPE, vals[i] };
		data[i] = &vals[i];
		sizes[i] = sizeof(u64);
	}
	cr_assert_eq(btrfs_insert_items(trans, root, keys, data, sizes, 600), 0, "%s",
		     tlog_error_get());
	cr_assert_eq(btrfs_insert_items(trans, root, keys + 5, data + 5, sizes + 5, 1), -EEXIST);
	cr_assert_eq(btrfs_check_tree_structure(root, &n, NULL), 0, "%s", tlog_error_get());
	/* only the changed leaves are seen since this transaction: here, all of them */
	k = (struct btrfs_key){ 100000, T_TYPE, 0 };
	seen = 0;
	btrfs_init_path(&path);
	while ((ret = btrfs_search_forward_since(root, &k, &path, trans->transid)) == 0) {
		cr_assert_eq(k.offset, seen, "item %llu", (unsigned long long)seen);
		seen++;
		if (++k.offset == 0)
			break;
		k.objectid = 100000 + k.offset;
	}
	btrfs_release_path(&path);
	cr_assert_eq(ret, 1);
	cr_assert_eq(seen, 1200);
	/* copy a leaf's run into another tree: the log */
	{
		struct btrfs_root *log;
		u64 logged = 0;

		cr_assert_eq(tlog_trans_log_tree(trans, root, &log), 0);
		btrfs_init_path(&path);
		k = (struct btrfs_key){ 100000 + 10, T_TYPE, 10 };
		cr_assert_eq(btrfs_search_slot(root, &k, &path), 0);
		ret = btrfs_header_nritems_eb(path.nodes[0]) - path.slots[0];
		cr_assert_eq(btrfs_copy_items(trans, log, path.nodes[0], path.slots[0], ret), 0);
		cr_assert_eq(btrfs_copy_items(trans, log, path.nodes[0], path.slots[0], 1), -EEXIST);
		btrfs_release_path(&path);
		cr_assert_eq(btrfs_check_tree_structure(log, &logged, NULL), 0);
		cr_assert_eq(logged, (u64)ret);
		cr_assert_eq(btrfs_delete_objectid_items(trans, log, 100000 + 10), 0);
		cr_assert_eq(btrfs_check_tree_structure(log, &logged, NULL), 0);
		cr_assert_eq(logged, (u64)ret - 1);
	}
	/* a range across many leaves goes */
	{
		struct btrfs_key min = { 100000 + 100, 0, 0 }, max = { 100000 + 899, (u8)-1, (u64)-1 };

		cr_assert_eq(btrfs_delete_items_range(trans, root, &min, &max, &deleted), 0);
		cr_assert_eq(deleted, 800);
	}
	cr_assert_eq(tlog_trans_commit(trans), 0, "%s", tlog_error_get());
	cr_assert_eq(btrfs_check_tree_structure(root, &n, NULL), 0);
	memfs_check_free_space_tree(fs);

	/* one item changed in a new transaction: the old leaves are skipped */
	cr_assert_eq(tlog_trans_start(fs, &trans), 0);
	k = (struct btrfs_key){ 100000 + 1000, T_TYPE, 1000 };
	btrfs_init_path(&path);
	cr_assert_eq(btrfs_search_slot_for_write(trans, root, &k, &path, 0), 0);
	btrfs_release_path(&path);
	k = (struct btrfs_key){ 0, 0, 0 };
	cr_assert_eq(btrfs_search_forward_since(root, &k, &path, trans->transid), 0);
	cr_assert_gt(k.objectid, 100000 + 899, "an unchanged leaf was visited: %llu",
		     (unsigned long long)k.objectid);
	cr_assert_leq(k.objectid, 100000 + 1000);
	btrfs_release_path(&path);
	tlog_trans_abort(trans);
	tlog_close(fs);
	tlog_bdev_close(bdev);
}
