// SPDX-License-Identifier: GPL-2.0-only
/*
 * Inode operations: the mount, the inode cache, names, attributes and
 * xattrs, with the semantics of fs/btrfs/inode.c and the VFS checks in
 * front of it (see inode-ops.h for the model).
 *
 * Every operation checks everything the system call would refuse before
 * it changes anything, so a refused operation leaves the trees as they
 * were and can be reported and skipped, as a program's failed system call
 * would be.  The order of the checks is the VFS's, because when several
 * apply the errno the caller sees is the first.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "array.h"
#include "csum.h"
#include "dir-item.h"
#include "errctx.h"
#include "file-extent.h"
#include "inode-ops.h"
#include "inode.h"
#include "root-tree.h"
#include "tree-log-write.h"

/* A directory holding no names has i_size 0 (each name counts twice its length). */
#define BTRFS_EMPTY_DIR_SIZE	0

/* ---- the mount ---- */

static int init_root_objectid(struct tlog_mount *mnt, struct btrfs_root *root);
static int write_dirty_inode_items(struct tlog_mount *mnt);

/* A mount of @fs with an empty inode cache of @hash_size buckets (a power of two). */
static struct tlog_mount *mount_alloc(struct tlog_fs *fs, size_t hash_size)
{
	struct tlog_mount *mnt = calloc(1, sizeof(*mnt));

	if (!mnt)
		return NULL;
	mnt->hash = calloc(hash_size, sizeof(*mnt->hash));
	if (!mnt->hash) {
		free(mnt);
		return NULL;
	}
	mnt->fs = fs;
	mnt->hash_size = hash_size;
	INIT_LIST_HEAD(&mnt->dirty_inodes);
	mnt->max_inline = 2048;
	mnt->clone_fd = -1;
	return mnt;
}

int tlog_mount_open(struct tlog_fs *fs, struct tlog_mount **ret)
{
	struct tlog_mount *mnt = mount_alloc(fs, 1024);
	struct btrfs_root *top;
	int err;

	if (!mnt)
		return -ENOMEM;
	tlog_mount_tick(mnt);
	/* as the kernel's mount reads them: the counters start from what is there now */
	err = btrfs_read_root(fs, BTRFS_FS_TREE_OBJECTID, &top);
	if (!err)
		err = init_root_objectid(mnt, top);
	if (!err)
		err = init_root_objectid(mnt, fs->tree_root);
	if (err) {
		tlog_mount_close(mnt);
		return err;
	}
	*ret = mnt;
	return 0;
}

static void free_inode(struct tlog_inode *inode)
{
	tlog_dirty_release(inode);
	free(inode->dirty);
	free(inode->modified);
	free(inode);
}

int tlog_mount_attach(struct tlog_trans *trans, struct tlog_mount **ret)
{
	/* replay keeps the inodes it changes cached for a while (tree-log-replay.c) */
	struct tlog_mount *mnt = mount_alloc(trans->fs, 64);

	if (!mnt)
		return -ENOMEM;
	mnt->trans = trans;
	mnt->now = trans->now;
	mnt->fixed_clock = true;
	mnt->log_recovering = true;
	*ret = mnt;
	return 0;
}

int tlog_mount_detach(struct tlog_mount *mnt)
{
	int err;

	if (!mnt)
		return 0;
	err = write_dirty_inode_items(mnt);
	mnt->trans = NULL;	/* the caller's: neither committed nor aborted here */
	tlog_mount_close(mnt);
	return err;
}

void tlog_mount_close(struct tlog_mount *mnt)
{
	if (!mnt)
		return;
	if (mnt->trans && !mnt->log_recovering)
		tlog_trans_abort(mnt->trans);
	for (size_t i = 0; i < mnt->hash_size; i++) {
		while (mnt->hash[i]) {
			struct tlog_inode *inode = mnt->hash[i];

			mnt->hash[i] = inode->hash_next;
			free_inode(inode);
		}
	}
	free(mnt->objectids);
	free(mnt->hash);
	btrfs_item_batch_release(&mnt->log_batch);
	for (u64 i = 0; i < mnt->stats.full_commits; i++)
		free(mnt->stats.full_commit_reasons[i]);
	free(mnt->stats.full_commit_reasons);
	free(mnt);
}

static int parse_compress(struct tlog_mount *mnt, const char *v, bool force)
{
	static const char *const names[] = { "zlib", "lzo", "zstd" };
	const char *colon = strchr(v, ':');
	size_t n = colon ? (size_t)(colon - v) : strlen(v);
	int max_level[] = { 9, 0, 15 };

	for (int i = 0; i < 3; i++) {
		if (strlen(names[i]) != n || strncmp(v, names[i], n))
			continue;
		mnt->compress_type = BTRFS_COMPRESS_ZLIB + i;
		mnt->compress_force = force;
		mnt->compress_level = 0;
		if (colon) {
			char *end;
			long level = strtol(colon + 1, &end, 10);

			if (*end || level < 1 || level > max_level[i])
				return tlog_error(-EINVAL, "bad compression level '%s'", colon + 1);
			mnt->compress_level = (int)level;
		}
		/* the kernel marks the filesystem at mount, before anything is compressed */
		if (mnt->compress_type == BTRFS_COMPRESS_LZO)
			mnt->fs->incompat |= BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO;
		if (mnt->compress_type == BTRFS_COMPRESS_ZSTD)
			mnt->fs->incompat |= BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD;
		btrfs_set_super_block_incompat_flags(&mnt->fs->super, mnt->fs->incompat);
		return 0;
	}
	if (n == 2 && strncmp(v, "no", 2) == 0 && !colon) {
		mnt->compress_type = 0;
		return 0;
	}
	return tlog_error(-EINVAL, "unknown compression '%s' (zlib, lzo, zstd or no)", v);
}

int tlog_mount_set_options(struct tlog_mount *mnt, const char *options)
{
	char *copy = strdup(options), *save = NULL, *opt;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (opt = strtok_r(copy, ",", &save); !err && opt; opt = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(opt, '=');

		if (eq)
			*eq++ = '\0';
		if (strcmp(opt, "compress") == 0 || strcmp(opt, "compress-force") == 0) {
			err = parse_compress(mnt, eq ? eq : "zlib", opt[8] == '-');
		} else if (strcmp(opt, "max_inline") == 0 && eq) {
			char *end;
			unsigned long long v = strtoull(eq, &end, 10);

			if (*end || !*eq)
				err = tlog_error(-EINVAL, "bad max_inline '%s'", eq);
			/* the kernel caps it at a sector */
			mnt->max_inline = v > mnt->fs->sectorsize ? mnt->fs->sectorsize : v;
		} else {
			err = tlog_error(-EINVAL, "unknown mount option '%s'", opt);
		}
	}
	free(copy);
	return err;
}

void tlog_mount_tick(struct tlog_mount *mnt)
{
	struct timespec ts;

	if (mnt->fixed_clock)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	btrfs_set_timespec_sec(&mnt->now, ts.tv_sec);
	btrfs_set_timespec_nsec(&mnt->now, ts.tv_nsec);
	if (mnt->trans)
		mnt->trans->now = mnt->now;
}

void tlog_mount_set_fixed_time(struct tlog_mount *mnt, u64 sec)
{
	btrfs_set_timespec_sec(&mnt->now, sec);
	btrfs_set_timespec_nsec(&mnt->now, 0);
	mnt->fixed_clock = true;
	if (mnt->trans)
		mnt->trans->now = mnt->now;
}

int tlog_mount_trans(struct tlog_mount *mnt, struct tlog_trans **ret)
{
	int err;

	if (!mnt->trans) {
		err = tlog_trans_start(mnt->fs, &mnt->trans);
		if (err)
			return err;
		mnt->trans->now = mnt->now;
	}
	*ret = mnt->trans;
	return 0;
}

/* ---- the inode cache ---- */

static size_t inode_hash(const struct tlog_mount *mnt, u64 root, u64 ino)
{
	return (size_t)((ino * 0x9E3779B97F4A7C15ULL) ^ root) & (mnt->hash_size - 1);
}

static int grow_hash(struct tlog_mount *mnt)
{
	size_t size = mnt->hash_size * 2;
	struct tlog_inode **hash = calloc(size, sizeof(*hash));

	if (!hash)
		return -ENOMEM;
	for (size_t i = 0; i < mnt->hash_size; i++) {
		while (mnt->hash[i]) {
			struct tlog_inode *inode = mnt->hash[i];
			size_t h = (size_t)((inode->ino * 0x9E3779B97F4A7C15ULL) ^
					    inode->root->root_key.objectid) & (size - 1);

			mnt->hash[i] = inode->hash_next;
			inode->hash_next = hash[h];
			hash[h] = inode;
		}
	}
	free(mnt->hash);
	mnt->hash = hash;
	mnt->hash_size = size;
	return 0;
}

static struct tlog_inode *find_cached(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino)
{
	struct tlog_inode *inode = mnt->hash[inode_hash(mnt, root->root_key.objectid, ino)];

	while (inode && (inode->ino != ino || inode->root != root))
		inode = inode->hash_next;
	return inode;
}

static int add_cached(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino,
		      const struct btrfs_inode_item *item, struct tlog_inode **ret)
{
	struct tlog_inode *inode;
	size_t h;
	int err;

	if (mnt->nr_inodes >= mnt->hash_size && grow_hash(mnt))
		return -ENOMEM;
	/*
	 * The kernel counts a subvolume's inode numbers from when it reads
	 * the root; log replay makes no inodes and needs no counter.
	 */
	err = mnt->log_recovering ? 0 : init_root_objectid(mnt, root);
	if (err)
		return err;
	inode = calloc(1, sizeof(*inode));
	if (!inode)
		return -ENOMEM;
	inode->root = root;
	inode->ino = ino;
	inode->item = *item;
	inode->disk_i_size = btrfs_inode_item_size(item);
	inode->generation = btrfs_inode_item_generation(item);
	inode->refs = 1;
	INIT_LIST_HEAD(&inode->dirty_list);
	h = inode_hash(mnt, root->root_key.objectid, ino);
	inode->hash_next = mnt->hash[h];
	mnt->hash[h] = inode;
	mnt->nr_inodes++;
	*ret = inode;
	return 0;
}

int tlog_iget(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino, struct tlog_inode **ret)
{
	struct tlog_inode *inode = find_cached(mnt, root, ino);
	struct btrfs_inode_item item;
	int err;

	if (inode) {
		if (inode->evicted)
			return -ENOENT;
		inode->refs++;
		*ret = inode;
		return 0;
	}
	err = btrfs_lookup_inode(root, ino, &item);
	if (err)
		return err;
	return add_cached(mnt, root, ino, &item, ret);
}

void tlog_iput(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	(void)mnt;
	/*
	 * Inodes stay cached for the whole mount: their runtime state
	 * (index_cnt, the logging fields) is what the kernel keeps while an
	 * inode is in memory, and a script's inodes are few next to its data.
	 */
	if (inode && inode->refs > 0)
		inode->refs--;
}

/* Write back the item of unreferenced @inode, and drop it from the cache. */
static int drop_cached(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	struct tlog_inode **pp;
	int err = 0;

	if (inode->item_dirty && !inode->evicted)
		err = tlog_write_inode_item(mnt, inode);
	pp = &mnt->hash[inode_hash(mnt, inode->root->root_key.objectid, inode->ino)];
	while (*pp != inode)
		pp = &(*pp)->hash_next;
	*pp = inode->hash_next;
	mnt->nr_inodes--;
	list_del_init(&inode->dirty_list);
	free_inode(inode);
	return err;
}

int tlog_iforget(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	if (!inode)
		return 0;
	if (--inode->refs > 0)
		return 0;
	return drop_cached(mnt, inode);
}

bool tlog_icached(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino)
{
	struct tlog_inode *inode = find_cached(mnt, root, ino);

	return inode && !inode->evicted;
}

int tlog_iflush(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino)
{
	struct tlog_inode *inode = find_cached(mnt, root, ino);

	if (!inode || inode->refs > 0)
		return 0;
	return drop_cached(mnt, inode);
}

int tlog_iflush_unused(struct tlog_mount *mnt)
{
	int err = 0;

	for (size_t i = 0; i < mnt->hash_size; i++) {
		struct tlog_inode *inode = mnt->hash[i];

		while (inode) {
			struct tlog_inode *next = inode->hash_next;

			if (inode->refs == 0) {
				int ret = drop_cached(mnt, inode);

				if (!err)
					err = ret;
			}
			inode = next;
		}
	}
	return err;
}

/* btrfs_set_inode_last_trans: changed now, so no longer all in the log. */
static void set_inode_last_trans(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	if (mnt->trans)
		inode->last_trans = mnt->trans->transid;
	inode->last_sub_trans = (s64)inode->root->log_transid;
	inode->last_log_commit = inode->last_sub_trans - 1;
}

void tlog_inode_mark_dirty(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	inode->item_dirty = true;
	inode->changes++;
	set_inode_last_trans(mnt, inode);
	if (list_empty(&inode->dirty_list))
		list_add_tail(&inode->dirty_list, &mnt->dirty_inodes);
}

int tlog_write_inode_item(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	struct btrfs_key key = { inode->ino, BTRFS_INODE_ITEM_KEY, 0 };
	struct tlog_trans *trans;
	struct btrfs_inode_item item = inode->item;
	struct btrfs_path path;
	int err;

	err = tlog_mount_trans(mnt, &trans);
	if (err)
		return err;
	btrfs_set_inode_item_size(&item, inode->disk_i_size);
	btrfs_set_inode_item_transid(&item, trans->transid);
	btrfs_init_path(&path);
	err = btrfs_search_slot_for_write(trans, inode->root, &key, &path, 0);
	if (err > 0)
		err = tlog_error(-EUCLEAN, "inode %llu of tree %llu has no inode item",
				 (unsigned long long)inode->ino,
				 (unsigned long long)inode->root->root_key.objectid);
	if (!err && btrfs_item_size(path.nodes[0], path.slots[0]) < sizeof(item))
		err = tlog_error(-EUCLEAN, "inode %llu: inode item too small",
				 (unsigned long long)inode->ino);
	if (!err) {
		memcpy(btrfs_item_ptr(path.nodes[0], path.slots[0]), &item, sizeof(item));
		inode->item_dirty = false;
		mnt->stats.inodes_written++;
	}
	btrfs_release_path(&path);
	return err;
}

/* Write back every dirty inode item (before a commit). */
static int write_dirty_inode_items(struct tlog_mount *mnt)
{
	struct list_head *pos = mnt->dirty_inodes.next;

	while (pos != &mnt->dirty_inodes) {
		struct tlog_inode *inode = list_entry(pos, struct tlog_inode, dirty_list);
		int err = 0;

		pos = pos->next;
		if (inode->item_dirty && !inode->evicted)
			err = tlog_write_inode_item(mnt, inode);
		if (err)
			return err;
		/*
		 * What was modified before this commit is no log's business
		 * any more, and an inode without dirty data keeps no arrays:
		 * the memory of a long run is the inodes it touched, not their
		 * history.
		 */
		inode->nr_modified = 0;
		if (!inode->nr_dirty) {
			free(inode->dirty);
			inode->dirty = NULL;
			inode->alloc_dirty = 0;
			free(inode->modified);
			inode->modified = NULL;
			inode->alloc_modified = 0;
			list_del_init(&inode->dirty_list);
		}
	}
	return 0;
}

int tlog_commit(struct tlog_mount *mnt)
{
	int err;

	if (!mnt->trans)
		return 0;
	err = write_dirty_inode_items(mnt);
	if (!err)
		err = tlog_trans_commit(mnt->trans);
	else
		tlog_trans_abort(mnt->trans);
	mnt->trans = NULL;
	if (!err)
		mnt->stats.transactions++;
	return err;
}

int tlog_sync(struct tlog_mount *mnt)
{
	return tlog_sync_root(mnt, NULL);
}

int tlog_sync_root(struct tlog_mount *mnt, struct btrfs_root *root)
{
	struct list_head *pos = mnt->dirty_inodes.next;

	while (pos != &mnt->dirty_inodes) {
		struct tlog_inode *inode = list_entry(pos, struct tlog_inode, dirty_list);
		int err;

		pos = pos->next;
		if (inode->nr_dirty && !inode->evicted && (!root || inode->root == root)) {
			err = tlog_writeback_inode(mnt, inode);
			if (err)
				return err;
		}
	}
	return tlog_commit(mnt);
}

int tlog_fsync(struct tlog_mount *mnt, struct tlog_inode *inode, bool datasync)
{
	return btrfs_sync_file(mnt, inode, datasync);
}

/* ---- small policies shared by the operations ---- */

static void inc_iversion(struct tlog_inode *inode)
{
	btrfs_set_inode_item_sequence(&inode->item, btrfs_inode_item_sequence(&inode->item) + 1);
}

/* A change of the inode's metadata: ctime, i_version (inode_inc_iversion). */
static void touch_ctime(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	inode->item.ctime = mnt->now;
	inc_iversion(inode);
	tlog_inode_mark_dirty(mnt, inode);
}

/*
 * A name came or went in @dir: @delta of i_size, i_version, and mtime and
 * ctime - except in log replay, where the kernel (6.18) keeps the times
 * the log or the last commit gave the directory.
 */
void tlog_dir_changed(struct tlog_mount *mnt, struct tlog_inode *dir, s64 delta)
{
	u64 size = btrfs_inode_item_size(&dir->item);

	btrfs_set_inode_item_size(&dir->item, delta < 0 && (u64)-delta > size ? 0 : size + delta);
	dir->disk_i_size = btrfs_inode_item_size(&dir->item);
	if (mnt->log_recovering) {
		inc_iversion(dir);
		tlog_inode_mark_dirty(mnt, dir);
		return;
	}
	dir->item.mtime = mnt->now;
	touch_ctime(mnt, dir);
}

static bool is_dir(const struct tlog_inode *inode)
{
	return S_ISDIR(tlog_inode_mode(inode));
}

/*
 * The root directory of a subvolume: its name in the parent is a ROOT_REF
 * and an entry pointing at the ROOT_ITEM, not an INODE_REF (the kernel
 * tells it by inode number 256, BTRFS_FIRST_FREE_OBJECTID).
 */
static bool is_subvol_root(const struct tlog_inode *inode)
{
	return inode->ino == btrfs_root_item_root_dirid(&inode->root->root_item);
}

static bool fs_has_incompat(const struct tlog_mount *mnt, u64 bit)
{
	return (mnt->fs->incompat & bit) != 0;
}

/*
 * The inode number counter of @root: one more than the highest in use
 * when the mount first reads the root (btrfs_init_root_free_objectid, at
 * mount for the top level and the root tree, at first lookup for other
 * subvolumes), counting up from there.
 */
static int init_root_objectid(struct tlog_mount *mnt, struct btrfs_root *root)
{
	u64 next;

	return tlog_next_objectid_peek(mnt, root, &next);
}

/* One more than the highest inode number @root holds now (256 when it holds none). */
static int first_free_objectid(struct btrfs_root *root, u64 *ret)
{
	struct btrfs_key key = { BTRFS_LAST_FREE_OBJECTID, (u8)-1, (u64)-1 };
	struct btrfs_path path;
	int err;

	*ret = BTRFS_FIRST_FREE_OBJECTID;
	btrfs_init_path(&path);
	err = btrfs_search_slot(root, &key, &path);
	if (err > 0)
		err = btrfs_prev_item(root, &path);
	if (err == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.objectid >= BTRFS_FIRST_FREE_OBJECTID &&
		    key.objectid < BTRFS_LAST_FREE_OBJECTID)
			*ret = key.objectid + 1;
	}
	btrfs_release_path(&path);
	return err < 0 ? err : 0;
}

/* The counter of @root, made on first use; any number of subvolumes may have one. */
static int objectid_counter(struct tlog_mount *mnt, struct btrfs_root *root,
			    struct tlog_objectid_counter **ret)
{
	u64 id = root->root_key.objectid, next;
	size_t i;
	int err;

	for (i = 0; i < mnt->nr_objectids; i++) {
		if (mnt->objectids[i].root == id) {
			*ret = &mnt->objectids[i];
			return 0;
		}
	}
	err = first_free_objectid(root, &next);
	if (err)
		return err;
	if (array_reserve(mnt->objectids, mnt->objectids_alloc, mnt->nr_objectids + 1))
		return -ENOMEM;
	*ret = &mnt->objectids[mnt->nr_objectids++];
	**ret = (struct tlog_objectid_counter){ id, next };
	return 0;
}

int tlog_next_objectid(struct tlog_mount *mnt, struct btrfs_root *root, u64 *ret)
{
	struct tlog_objectid_counter *c;
	int err = objectid_counter(mnt, root, &c);

	if (err)
		return err;
	if (c->next >= BTRFS_LAST_FREE_OBJECTID)
		return -ENOSPC;
	*ret = c->next++;
	return 0;
}

int tlog_next_objectid_peek(struct tlog_mount *mnt, struct btrfs_root *root, u64 *ret)
{
	struct tlog_objectid_counter *c;
	int err = objectid_counter(mnt, root, &c);

	if (err)
		return err;
	*ret = c->next;
	return 0;
}

/*
 * The index the next name of @dir gets: the directory's counter, set on
 * first use to one past its highest DIR_INDEX (2 when it has none: 0 and
 * 1 stand for "." and ".."), as btrfs_set_inode_index_count() does.
 */
int tlog_dir_next_index(struct tlog_inode *dir, u64 *ret)
{
	if (!dir->index_cnt) {
		struct btrfs_key key = { dir->ino, BTRFS_DIR_INDEX_KEY, (u64)-1 };
		struct btrfs_path path;
		int err;

		btrfs_init_path(&path);
		err = btrfs_search_backwards(dir->root, &key, &path);
		if (err == 0) {
			btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
			dir->index_cnt = key.offset + 1;
		}
		btrfs_release_path(&path);
		if (err < 0)
			return err;
		if (err > 0)
			dir->index_cnt = 2;
	}
	*ret = dir->index_cnt++;
	return 0;
}

/* ---- lookup ---- */

static int check_name(const char *name, u16 len)
{
	if (len == 0)
		return -ENOENT;
	if (len > BTRFS_NAME_LEN)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len))
		return -EINVAL;
	return 0;
}

/* The entry @name of @dir: 0 and *@de, or -ENOENT (recording nothing). */
static int find_entry(struct tlog_inode *dir, const char *name, u16 len, struct tlog_dir_entry *de)
{
	struct tlog_errsave saved;
	int err;

	tlog_error_save(&saved);
	err = btrfs_lookup_dir_entry(dir->root, dir->ino, name, len, de);
	if (err == -ENOENT)
		tlog_error_restore(&saved);
	return err;
}

int tlog_lookup(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		struct tlog_inode **ret)
{
	struct tlog_dir_entry de;
	struct tlog_ino target;
	int err;

	if (!is_dir(dir))
		return -ENOTDIR;
	if (len == 1 && name[0] == '.') {
		dir->refs++;
		*ret = dir;
		return 0;
	}
	err = check_name(name, len);
	if (err)
		return err;
	err = find_entry(dir, name, len, &de);
	if (err)
		return err;
	err = btrfs_entry_target(mnt->fs, dir->root, &de, &target);
	if (err)
		return err;
	return tlog_iget(mnt, target.root, target.ino, ret);
}

/* Symlinks one path walk follows, middle and final ones together (MAXSYMLINKS). */
#define MAX_SYMLINKS 40

/* The top-level subvolume's root directory. */
static int top_dir(struct tlog_mount *mnt, struct tlog_inode **ret)
{
	struct btrfs_root *top;
	int err = btrfs_read_root(mnt->fs, BTRFS_FS_TREE_OBJECTID, &top);

	return err ? err : tlog_iget(mnt, top, btrfs_root_item_root_dirid(&top->root_item), ret);
}

/*
 * "..": a directory's parent is its INODE_REF's (one, as directories have
 * one name); a subvolume's root directory goes up to the directory that
 * holds the subvolume (its ROOT_BACKREF); the top stays where it is.
 */
static int parent_dir(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode **ret)
{
	struct btrfs_root *root = dir->root;
	u64 id = root->root_key.objectid;
	bool subvol_root = dir->ino == btrfs_root_item_root_dirid(&root->root_item);
	struct btrfs_key key = subvol_root ?
		(struct btrfs_key){ id, BTRFS_ROOT_BACKREF_KEY, 0 } :
		(struct btrfs_key){ dir->ino, BTRFS_INODE_REF_KEY, 0 };
	struct btrfs_root *search = subvol_root ? mnt->fs->tree_root : root;
	struct btrfs_path path;
	u64 parent = 0, parent_root = 0;
	int err;

	if (subvol_root && id == BTRFS_FS_TREE_OBJECTID) {
		dir->refs++;
		*ret = dir;
		return 0;
	}
	btrfs_init_path(&path);
	err = btrfs_search_forward(search, &key, &path);
	if (err == 0) {
		struct btrfs_key found;

		btrfs_item_key_to_cpu(path.nodes[0], &found, path.slots[0]);
		if (found.objectid != key.objectid || found.type != key.type)
			err = -ENOENT;
		else if (subvol_root && btrfs_item_size(path.nodes[0], path.slots[0]) >=
			 sizeof(struct btrfs_root_ref)) {
			parent_root = found.offset;
			parent = btrfs_root_ref_dirid(btrfs_item_ptr(path.nodes[0], path.slots[0]));
		} else if (!subvol_root) {
			parent = found.offset;
		} else {
			err = -EUCLEAN;
		}
	} else if (err > 0) {
		err = -ENOENT;
	}
	btrfs_release_path(&path);
	if (err)
		return err;
	if (subvol_root) {
		err = btrfs_read_root(mnt->fs, parent_root, &root);
		if (err)
			return err;
	}
	return tlog_iget(mnt, root, parent, ret);
}

/*
 * A path walk, as the kernel's nameidata: the directory it stands in,
 * what is left of the path, and how many symlinks it has followed.
 * Following a link puts its target in front of what was left after the
 * link, so what is left is always one string: @path at first, the walk's
 * own copy (@buf) once a link has been followed.
 */
struct walk {
	struct tlog_mount *mnt;
	struct tlog_inode *dir;		/* a reference; NULL once handed out */
	const char *rest;
	char *buf;
	int links;
};

/* open_last() followed a final link: the walk goes on from its target. */
#define WALK_ON 1

static int walk_start(struct walk *w, struct tlog_mount *mnt, const char *path)
{
	*w = (struct walk){ .mnt = mnt, .rest = path };
	/* only absolute paths: nothing else is a "current directory" here */
	if (path[0] != '/')
		return -EINVAL;
	return top_dir(mnt, &w->dir);
}

static void walk_end(struct walk *w)
{
	if (w->dir)
		tlog_iput(w->mnt, w->dir);
	free(w->buf);
}

/* The next component of what is left: its length, *@name, w->rest moved past it. */
static size_t next_component(struct walk *w, const char **name)
{
	const char *p = w->rest;

	while (*p == '/')
		p++;
	*name = p;
	while (*p && *p != '/')
		p++;
	w->rest = p;
	return (size_t)(p - *name);
}

static bool only_slashes(const char *p)
{
	while (*p == '/')
		p++;
	return !*p;
}

/* @name in w->dir, ".." (parent_dir) included. */
static int walk_step(struct walk *w, const char *name, size_t len, struct tlog_inode **ret)
{
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return parent_dir(w->mnt, w->dir, ret);
	return tlog_lookup(w->mnt, w->dir, name, (u16)len, ret);
}

/*
 * Follow @link, which the walk met with @after left behind it: its target
 * takes its place, walked from the top for an absolute target, from the
 * link's directory (where the walk stands) for a relative one.  The count
 * is the whole walk's, middle and final links alike, so a chain cannot
 * escape the limit by being split between the two.
 */
static int follow_link(struct walk *w, struct tlog_inode *link, const char *after)
{
	char target[PATH_MAX], *buf;
	int len;

	if (++w->links > MAX_SYMLINKS) {
		tlog_iput(w->mnt, link);
		return -ELOOP;
	}
	len = btrfs_read_symlink(link->root, link->ino, target, sizeof(target));
	tlog_iput(w->mnt, link);
	if (len < 0)
		return len;
	if (len == 0)
		return -ENOENT;	/* an empty target (only a damaged image has one) names nothing */
	/* @after may be in w->buf: copy it before letting the old one go */
	buf = malloc((size_t)len + strlen(after) + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, target, (size_t)len);
	strcpy(buf + len, after);
	free(w->buf);
	w->buf = buf;
	w->rest = buf;
	if (target[0] != '/')
		return 0;
	tlog_iput(w->mnt, w->dir);
	w->dir = NULL;
	return top_dir(w->mnt, &w->dir);
}

/*
 * Walk what is left up to its last component, following every symlink on
 * the way (in the middle of a path a link is always followed): *@name and
 * *@len are the last component (length 0 for "/"), w->dir the directory
 * holding it, w->rest what follows it (slashes or nothing).
 */
static int walk_to_last(struct walk *w, const char **name, size_t *len)
{
	for (;;) {
		struct tlog_inode *next;
		int err;

		*len = next_component(w, name);
		if (*len > BTRFS_NAME_LEN)
			return -ENAMETOOLONG;
		if (only_slashes(w->rest))
			return 0;
		err = walk_step(w, *name, *len, &next);
		if (err)
			return err;
		if (S_ISLNK(tlog_inode_mode(next))) {
			err = follow_link(w, next, w->rest);
			if (err)
				return err;
			continue;
		}
		if (!is_dir(next)) {
			tlog_iput(w->mnt, next);
			return -ENOTDIR;
		}
		tlog_iput(w->mnt, w->dir);
		w->dir = next;
	}
}

/*
 * The last component of an open, @name in w->dir: made if missing with
 * TLOG_OPEN_CREATE; a symlink followed (WALK_ON) unless
 * TLOG_OPEN_NOFOLLOW.  A trailing slash wants a directory, so it follows a
 * final link whatever the flags say; with TLOG_OPEN_CREATE it is EISDIR
 * before anything is looked up, as open(O_CREAT) answers "f/" even when f
 * exists.
 */
static int open_last(struct walk *w, const char *name, size_t len, unsigned int flags,
		     struct tlog_inode **ret)
{
	bool want_dir = *w->rest == '/';
	struct tlog_inode *inode;
	int err;

	if (len == 0) {
		/* "/", or a link to it: the directory the walk stands in */
		*ret = w->dir;
		w->dir = NULL;
		return 0;
	}
	if (want_dir && (flags & TLOG_OPEN_CREATE))
		return -EISDIR;
	err = walk_step(w, name, len, &inode);
	if (err == -ENOENT && (flags & TLOG_OPEN_CREATE))
		return tlog_create(w->mnt, w->dir, name, (u16)len, S_IFREG | 0644, 0, NULL, ret);
	if (err)
		return err;
	if (S_ISLNK(tlog_inode_mode(inode)) && (want_dir || !(flags & TLOG_OPEN_NOFOLLOW))) {
		err = follow_link(w, inode, w->rest);
		return err ? err : WALK_ON;
	}
	if (want_dir && !is_dir(inode)) {
		tlog_iput(w->mnt, inode);
		return -ENOTDIR;
	}
	*ret = inode;
	return 0;
}

int tlog_open_path(struct tlog_mount *mnt, const char *path, unsigned int flags,
		   struct tlog_inode **ret)
{
	struct walk w;
	int err = walk_start(&w, mnt, path);

	while (!err) {
		const char *name;
		size_t len;

		err = walk_to_last(&w, &name, &len);
		if (!err)
			err = open_last(&w, name, len, flags, ret);
		if (err != WALK_ON)
			break;
		err = 0;
	}
	walk_end(&w);
	return err;
}

int tlog_lookup_parent(struct tlog_mount *mnt, const char *path, struct tlog_inode **dir,
		       const char **name, u16 *len)
{
	struct walk w;
	const char *last;
	size_t n;
	int err = walk_start(&w, mnt, path);

	if (!err)
		err = walk_to_last(&w, &last, &n);
	if (!err) {
		/*
		 * The links on the way replaced what came before the last
		 * component, never it or what follows: it is as far from the
		 * end of @path as from the end of what was walked.
		 */
		*name = path + strlen(path) - strlen(last);
		*len = (u16)n;
		*dir = w.dir;
		w.dir = NULL;
	}
	walk_end(&w);
	return err;
}

/* ---- names: the items of a link ---- */

/*
 * Room for one more name in an INODE_REF item: the item must still fit an
 * empty leaf with its header (the kernel's -EOVERFLOW when it would not).
 */
static bool ref_item_full(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino, u64 parent,
			  u16 len)
{
	struct btrfs_key key = { ino, BTRFS_INODE_REF_KEY, parent };
	struct btrfs_path path;
	u32 size = 0;
	bool full;

	btrfs_init_path(&path);
	if (btrfs_search_slot(root, &key, &path) == 0)
		size = btrfs_item_size(path.nodes[0], path.slots[0]);
	btrfs_release_path(&path);
	full = size && size + sizeof(struct btrfs_inode_ref) + len + sizeof(struct btrfs_item) >
			       mnt->fs->nodesize - sizeof(struct btrfs_header);
	return full;
}

static int insert_extref(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			 u64 parent, const char *name, u16 len, u64 index)
{
	struct btrfs_key key = { ino, BTRFS_INODE_EXTREF_KEY, btrfs_extref_hash(parent, name, len) };
	u8 buf[sizeof(struct btrfs_inode_extref) + BTRFS_NAME_LEN];
	struct btrfs_inode_extref *ref = (void *)buf;
	u32 size = sizeof(*ref) + len;

	btrfs_set_inode_extref_parent_objectid(ref, parent);
	btrfs_set_inode_extref_index(ref, index);
	btrfs_set_inode_extref_name_len(ref, len);
	memcpy(ref + 1, name, len);
	/* another name with the same hash shares the item */
	return btrfs_append_to_item(trans, root, &key, buf, size);
}

/*
 * The back reference of a new name: INODE_REF, or, when that item is
 * full, INODE_EXTREF if the filesystem has extended refs (else -EMLINK,
 * as btrfs_insert_inode_ref returns).
 */
static int add_backref(struct tlog_mount *mnt, struct tlog_inode *inode, struct tlog_inode *dir,
		       const char *name, u16 len, u64 index)
{
	if (ref_item_full(mnt, inode->root, inode->ino, dir->ino, len)) {
		if (!fs_has_incompat(mnt, BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF))
			return -EMLINK;
		return insert_extref(mnt->trans, inode->root, inode->ino, dir->ino, name, len,
				     index);
	}
	return btrfs_insert_inode_ref(mnt->trans, inode->root, inode->ino, dir->ino, name, len,
				      index);
}

int tlog_add_link(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *inode,
		  const char *name, u16 len, u64 index, bool backref)
{
	struct btrfs_key loc = { inode->ino, BTRFS_INODE_ITEM_KEY, 0 };
	int err = 0;

	if (is_subvol_root(inode))
		return tlog_link_subvol(mnt, dir, inode, name, len, index);
	if (backref) {
		/* btrfs_log_new_name: a file's next fsync looks at its parents */
		if (!is_dir(inode))
			inode->last_unlink_trans = mnt->trans->transid;
		err = add_backref(mnt, inode, dir, name, len, index);
	}
	if (!err)
		err = btrfs_add_dir_entries(mnt->trans, dir->root, dir->ino, name, len, &loc,
					    btrfs_mode_to_ftype(tlog_inode_mode(inode)), index);
	if (!err)
		tlog_dir_changed(mnt, dir, 2 * (s64)len);
	return err;
}

/*
 * __btrfs_unlink_inode: the name's items and the directory's size and
 * times; the link count is the caller's.  *@index (may be NULL) gets the
 * name's index.  Outside a rename (@for_rename) the log loses the name
 * too; a rename's btrfs_log_new_name sees to the log.  A subvolume's root
 * directory loses its name as btrfs_unlink_subvol takes it (only a rename
 * moves one; rmdir deletes the subvolume).
 */
static int remove_link(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *inode,
		       const char *name, u16 len, u64 *index, bool for_rename)
{
	u64 idx;
	int err;

	if (is_subvol_root(inode))
		return tlog_unlink_subvol(mnt, dir, name, len, inode, index);
	err = btrfs_delete_inode_ref(mnt->trans, inode->root, inode->ino, dir->ino, name, len,
				     &idx);
	if (err == -ENOENT)
		err = tlog_error(-EUCLEAN, "inode %llu has no back reference \"%.*s\" in %llu",
				 (unsigned long long)inode->ino, len, name,
				 (unsigned long long)dir->ino);
	if (!err)
		err = btrfs_remove_dir_entries(mnt->trans, dir->root, dir->ino, name, len, idx);
	if (err)
		return err;
	tlog_dir_changed(mnt, dir, -2 * (s64)len);
	if (!for_rename)
		btrfs_log_unlink(mnt, dir, inode, name, len, idx);
	if (index)
		*index = idx;
	return 0;
}

/* drop_nlink and the ctime of a name gone: one link less, never below none. */
static void drop_nlink(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	u32 nlink = btrfs_inode_item_nlink(&inode->item);

	btrfs_set_inode_item_nlink(&inode->item, nlink ? nlink - 1 : 0);
	touch_ctime(mnt, inode);
}

/*
 * btrfs_record_unlink_dir, before @inode loses its name in @dir: its
 * next fsync logs the directories it had names in; and when the name
 * moves to another directory that neither of the two logs will tell
 * (@for_rename, neither logged in this transaction), a full logging of
 * @dir must commit instead, as it could not say where the entry went.
 */
static void record_unlink_dir(struct tlog_mount *mnt, struct tlog_inode *dir,
			      struct tlog_inode *inode, bool for_rename)
{
	u64 transid = mnt->trans->transid;

	inode->last_unlink_trans = transid;
	if (for_rename && dir->logged_trans != transid && inode->logged_trans != transid)
		dir->last_unlink_trans = transid;
}

int tlog_unlink_inode(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *inode,
		      const char *name, u16 len)
{
	int err = remove_link(mnt, dir, inode, name, len, NULL, false);

	if (!err)
		drop_nlink(mnt, inode);
	return err;
}

/* The name and one link; a directory has one (btrfs counts no subdirectories). */
static int unlink_one(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *inode,
		      const char *name, u16 len)
{
	if (is_dir(inode))
		btrfs_set_inode_item_nlink(&inode->item, 1);
	return tlog_unlink_inode(mnt, dir, inode, name, len);
}

/* An inode whose last link went is evicted with the system call's last reference. */
static int evict_if_unlinked(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	if (btrfs_inode_item_nlink(&inode->item))
		return 0;
	return tlog_evict_inode(mnt, inode);
}

/* unlink(2) and rmdir(2) past their checks: the name, one link, and the inode with the last. */
static int unlink_and_evict(struct tlog_mount *mnt, struct tlog_inode *dir,
			    struct tlog_inode *inode, const char *name, u16 len)
{
	int err = unlink_one(mnt, dir, inode, name, len);

	return err ? err : evict_if_unlinked(mnt, inode);
}

/* ---- create ---- */

/* btrfs_inherit_iflags: what a new inode takes from its directory's flags. */
static u64 inherited_flags(const struct tlog_inode *dir, u32 mode)
{
	u64 dflags = btrfs_inode_item_flags(&dir->item), flags = 0;

	if (dflags & BTRFS_INODE_NOCOMPRESS)
		flags |= BTRFS_INODE_NOCOMPRESS;
	else if (dflags & BTRFS_INODE_COMPRESS)
		flags |= BTRFS_INODE_COMPRESS;
	if (dflags & BTRFS_INODE_NODATACOW) {
		flags |= BTRFS_INODE_NODATACOW;
		if (S_ISREG(mode))
			flags |= BTRFS_INODE_NODATASUM;
	}
	return flags;
}

static int inherit_props(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *inode);

/* The symlink's target: an inline extent of its bytes, uncompressed. */
static int insert_symlink_target(struct tlog_mount *mnt, struct tlog_inode *inode,
				 const char *target, u32 len)
{
	struct btrfs_key key = { inode->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	u32 size = BTRFS_FILE_EXTENT_INLINE_DATA_START + len;
	struct btrfs_file_extent_item *fi;
	u8 *buf = calloc(1, size);
	int err;

	if (!buf)
		return -ENOMEM;
	fi = (void *)buf;
	btrfs_set_file_extent_item_generation(fi, mnt->trans->transid);
	btrfs_set_file_extent_item_ram_bytes(fi, len);
	btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_INLINE);
	memcpy(buf + BTRFS_FILE_EXTENT_INLINE_DATA_START, target, len);
	err = btrfs_insert_item(mnt->trans, inode->root, &key, buf, size);
	free(buf);
	return err;
}

/* The largest inline extent a leaf can hold (BTRFS_MAX_INLINE_DATA_SIZE). */
u32 tlog_max_inline_data_size(const struct tlog_fs *fs)
{
	return fs->nodesize - sizeof(struct btrfs_header) - sizeof(struct btrfs_item) -
	       BTRFS_FILE_EXTENT_INLINE_DATA_START;
}

int tlog_insert_inode(struct tlog_mount *mnt, struct btrfs_root *root, u64 ino, u64 parent,
		      const char *name, u16 len, u64 index, const struct btrfs_inode_item *ii)
{
	struct btrfs_key keys[2] = {
		{ ino, BTRFS_INODE_ITEM_KEY, 0 },
		{ ino, BTRFS_INODE_REF_KEY, parent },
	};
	u32 sizes[2] = { sizeof(*ii), sizeof(struct btrfs_inode_ref) + len };
	struct btrfs_inode_ref *ref;
	struct btrfs_path path;
	int err;

	btrfs_init_path(&path);
	err = btrfs_insert_empty_items(mnt->trans, root, &path, keys, sizes, 2);
	if (err)
		return err;
	memcpy(btrfs_item_ptr(path.nodes[0], path.slots[0]), ii, sizeof(*ii));
	ref = btrfs_item_ptr(path.nodes[0], path.slots[0] + 1);
	btrfs_set_inode_ref_index(ref, index);
	btrfs_set_inode_ref_name_len(ref, len);
	memcpy(ref + 1, name, len);
	btrfs_release_path(&path);
	return 0;
}

void tlog_init_inode_item(struct tlog_mount *mnt, struct btrfs_inode_item *ii, u32 mode)
{
	memset(ii, 0, sizeof(*ii));
	btrfs_set_inode_item_generation(ii, mnt->trans->transid);
	btrfs_set_inode_item_transid(ii, mnt->trans->transid);
	btrfs_set_inode_item_nlink(ii, 1);
	btrfs_set_inode_item_mode(ii, mode);
	ii->atime = ii->ctime = ii->mtime = ii->otime = mnt->now;
}

/* The new inode's item and INODE_REF (btrfs_create_new_inode). */
static int insert_new_inode(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name,
			    u16 len, u32 mode, u64 rdev, u64 size, u64 ino, u64 index,
			    struct btrfs_inode_item *ii)
{
	tlog_init_inode_item(mnt, ii, mode);
	btrfs_set_inode_item_rdev(ii, rdev);
	/* a symlink's size is its target's: readers of the tree see it at once */
	btrfs_set_inode_item_size(ii, size);
	btrfs_set_inode_item_nbytes(ii, size);
	btrfs_set_inode_item_flags(ii, inherited_flags(dir, mode));
	return tlog_insert_inode(mnt, dir->root, ino, dir->ino, name, len, index, ii);
}

/* What every operation that adds a name to @dir checks first (may_create). */
int tlog_may_create(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len)
{
	struct tlog_dir_entry de;
	int err;

	(void)mnt;
	if (!is_dir(dir))
		return -ENOTDIR;
	if (len == 0)
		return -EEXIST;		/* the path names an existing directory */
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return -EEXIST;
	err = check_name(name, len);
	if (err)
		return err;
	if (btrfs_inode_item_nlink(&dir->item) == 0 || dir->evicted)
		return -ENOENT;
	err = find_entry(dir, name, len, &de);
	if (err == 0)
		return -EEXIST;
	return err == -ENOENT ? 0 : err;
}

int tlog_create(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		u32 mode, u64 rdev, const char *target, struct tlog_inode **ret)
{
	struct btrfs_inode_item ii;
	struct tlog_inode *inode;
	size_t target_len = target ? strlen(target) : 0;
	u64 ino = 0, index = 0;
	int err;

	err = tlog_may_create(mnt, dir, name, len);
	if (err)
		return err;
	if (S_ISLNK(mode)) {
		if (target_len == 0)
			return -ENOENT;
		if (target_len >= 4096 || target_len > tlog_max_inline_data_size(mnt->fs))
			return -ENAMETOOLONG;
	}
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err)
		err = tlog_next_objectid(mnt, dir->root, &ino);
	if (!err)
		err = tlog_dir_next_index(dir, &index);
	if (!err)
		err = insert_new_inode(mnt, dir, name, len, mode, rdev, S_ISLNK(mode) ? target_len : 0,
				       ino, index, &ii);
	if (err)
		return err;
	err = add_cached(mnt, dir->root, ino, &ii, &inode);
	if (err)
		return err;
	/* a new inode is not in the log either */
	set_inode_last_trans(mnt, inode);
	/*
	 * Its number may be one an inode logged and removed in this
	 * transaction had: the first fsync logs it in full, replacing all.
	 */
	inode->full_sync = true;
	if (S_ISLNK(mode))
		err = insert_symlink_target(mnt, inode, target, (u32)target_len);
	if (!err)
		err = inherit_props(mnt, dir, inode);
	if (!err)
		err = tlog_add_link(mnt, dir, inode, name, len, index, false);
	if (err || !ret)
		tlog_iput(mnt, inode);
	else
		*ret = inode;
	return err;
}

/* ---- link, unlink, rmdir ---- */

int tlog_link(struct tlog_mount *mnt, struct tlog_inode *inode, struct tlog_inode *dir,
	      const char *name, u16 len)
{
	u64 index;
	int err;

	err = tlog_may_create(mnt, dir, name, len);
	if (err)
		return err;
	if (is_dir(inode))
		return -EPERM;
	if (inode->root != dir->root)
		return -EXDEV;
	if (btrfs_inode_item_nlink(&inode->item) == 0)
		return -ENOENT;
	if (btrfs_inode_item_nlink(&inode->item) >= BTRFS_LINK_MAX)
		return -EMLINK;
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err)
		err = tlog_dir_next_index(dir, &index);
	if (err)
		return err;
	/* the refusal of a full ref item comes before anything changed */
	if (!fs_has_incompat(mnt, BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF) &&
	    ref_item_full(mnt, inode->root, inode->ino, dir->ino, len))
		return -EMLINK;
	btrfs_set_inode_item_nlink(&inode->item, btrfs_inode_item_nlink(&inode->item) + 1);
	touch_ctime(mnt, inode);
	err = tlog_add_link(mnt, dir, inode, name, len, index, true);
	if (!err)
		btrfs_log_new_name(mnt, inode, NULL, NULL, 0, 0);
	return err;
}

/* Whether directory @inode has no names (btrfs_rmdir's i_size test). */
static bool dir_is_empty(const struct tlog_inode *inode)
{
	return btrfs_inode_item_size(&inode->item) == BTRFS_EMPTY_DIR_SIZE;
}

int tlog_unlink(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		bool rmdir)
{
	struct tlog_inode *inode;
	int err;

	if (len == 0)
		return rmdir ? -EBUSY : -EISDIR;
	if (len == 1 && name[0] == '.')
		return rmdir ? -EINVAL : -EISDIR;
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return rmdir ? -ENOTEMPTY : -EISDIR;
	err = tlog_lookup(mnt, dir, name, len, &inode);
	if (err)
		return err;
	if (rmdir && !is_dir(inode))
		err = -ENOTDIR;
	else if (!rmdir && is_dir(inode))
		err = -EISDIR;
	else if (rmdir && !dir_is_empty(inode))
		err = -ENOTEMPTY;
	else if (inode->root != dir->root && is_subvol_root(inode)) {
		/* rmdir of an empty subvolume deletes it */
		err = tlog_delete_subvol(mnt, dir, name, len, inode);
		tlog_iput(mnt, inode);
		return err;
	} else if (inode->root != dir->root || is_subvol_root(inode))
		err = -EPERM;
	if (!err)
		err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err && !rmdir)
		record_unlink_dir(mnt, dir, inode, false);
	/* btrfs_rmdir: a directory that lost a subvolume passes the mark up */
	if (!err && rmdir && inode->last_unlink_trans >= mnt->trans->transid)
		dir->last_unlink_trans = inode->last_unlink_trans;
	if (!err)
		err = unlink_and_evict(mnt, dir, inode, name, len);
	tlog_iput(mnt, inode);
	return err;
}

int tlog_evict_inode(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	u64 freed = 0;
	int err;

	/* the data first: extents give their references back */
	err = btrfs_drop_file_extents(mnt->trans, inode->root, inode->ino, 0, (u64)-1, &freed);
	if (!err)
		err = btrfs_delete_objectid_items(mnt->trans, inode->root, inode->ino);
	if (err)
		return err;
	inode->evicted = true;
	inode->item_dirty = false;
	tlog_dirty_release(inode);
	list_del_init(&inode->dirty_list);
	return 0;
}

/* ---- rename ---- */

/*
 * Whether @anc is @inode or one of its ancestors: lock_rename's trap,
 * which walks dentries, so up through subvolume boundaries too.
 */
static int is_ancestor(struct tlog_mount *mnt, struct tlog_inode *anc, struct tlog_inode *inode,
		       bool *ret)
{
	struct tlog_inode *cur = inode, *up;
	int guard, err = 0;

	*ret = false;
	cur->refs++;
	for (guard = 0; !*ret; guard++) {
		if (cur == anc) {
			*ret = true;
			break;
		}
		if (guard == 4096) {
			err = tlog_error(-ELOOP, "directory %llu: parents loop",
					 (unsigned long long)inode->ino);
			break;
		}
		err = parent_dir(mnt, cur, &up);
		if (err)
			break;
		tlog_iput(mnt, cur);
		if (up == cur)
			break;		/* the top: its own parent */
		cur = up;
	}
	tlog_iput(mnt, cur);
	return err == -ENOENT ? 0 : err;	/* -ENOENT: a detached subvolume */
}

/*
 * simple_rename_timestamp() on a renamed inode: ctime and i_version.
 * btrfs_rename writes the item of an inode, but not of a subvolume's
 * root directory, whose change stays in memory until something else
 * writes the item (a remount shows the old ctime): what this transaction
 * changed of it before goes to its tree now, as the kernel's delayed
 * inode holds it, and the rename's change is left undirtied.
 */
static int touch_renamed(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	int err = 0;

	if (!is_subvol_root(inode)) {
		touch_ctime(mnt, inode);
		return 0;
	}
	if (inode->item_dirty)
		err = tlog_write_inode_item(mnt, inode);
	inode->item.ctime = mnt->now;
	inc_iversion(inode);
	return err;
}

/* btrfs_log_new_name of a renamed inode; a subvolume's move commits instead. */
static void log_new_name(struct tlog_mount *mnt, struct tlog_inode *inode,
			 struct tlog_inode *old_dir, const char *name, u16 len, u64 index)
{
	if (!is_subvol_root(inode))
		btrfs_log_new_name(mnt, inode, old_dir, name, len, index);
}

static int rename_exchange(struct tlog_mount *mnt, struct tlog_inode *odir, struct tlog_inode *old,
			   const char *oname, u16 olen, struct tlog_inode *ndir,
			   struct tlog_inode *new, const char *nname, u16 nlen)
{
	u64 old_idx, new_idx, oidx = 0, nidx = 0;
	int err;

	if (is_subvol_root(old) || is_subvol_root(new))
		tlog_trans_set_needs_full_commit(mnt->trans, "a subvolume was renamed");
	err = tlog_dir_next_index(ndir, &old_idx);
	if (!err)
		err = tlog_dir_next_index(odir, &new_idx);
	if (!err && odir != ndir) {
		record_unlink_dir(mnt, odir, old, true);
		record_unlink_dir(mnt, ndir, new, true);
	}
	if (!err)
		err = remove_link(mnt, odir, old, oname, olen, &oidx, true);
	if (!err)
		err = remove_link(mnt, ndir, new, nname, nlen, &nidx, true);
	if (!err)
		err = tlog_add_link(mnt, ndir, old, nname, nlen, old_idx, true);
	if (!err)
		err = tlog_add_link(mnt, odir, new, oname, olen, new_idx, true);
	if (!err)
		err = touch_renamed(mnt, old);
	if (!err)
		err = touch_renamed(mnt, new);
	if (!err) {
		log_new_name(mnt, old, odir, oname, olen, oidx);
		log_new_name(mnt, new, ndir, nname, nlen, nidx);
	}
	return err;
}

/* The VFS's and btrfs_rename's refusals, in their order. */
static int may_rename(struct tlog_mount *mnt, struct tlog_inode *odir, struct tlog_inode *old,
		      struct tlog_inode *ndir, struct tlog_inode *new, unsigned int flags)
{
	bool anc;
	int err;

	if ((flags & TLOG_RENAME_EXCHANGE) && !new)
		return -ENOENT;
	if ((flags & TLOG_RENAME_NOREPLACE) && new)
		return -EEXIST;
	/* lock_rename's trap: the source may not be an ancestor of the target */
	if (is_dir(old)) {
		err = is_ancestor(mnt, old, ndir, &anc);
		if (err)
			return err;
		if (anc)
			return -EINVAL;
	}
	/* nor the target an ancestor of the source (an exchange gets lock_rename's EINVAL) */
	if (new && is_dir(new)) {
		err = is_ancestor(mnt, new, odir, &anc);
		if (err)
			return err;
		if (anc)
			return flags & TLOG_RENAME_EXCHANGE ? -EINVAL : -ENOTEMPTY;
	}
	if (new == old)
		return 1;		/* the same inode: rename does nothing, successfully */
	if (new && !(flags & TLOG_RENAME_EXCHANGE)) {
		if (is_dir(old) && !is_dir(new))
			return -ENOTDIR;
		if (!is_dir(old) && is_dir(new))
			return -EISDIR;
	}
	/*
	 * A subvolume's root moves anywhere in the filesystem, other inodes
	 * stay in their subvolume; two subvolumes trade places anywhere, an
	 * inode trades with a subvolume in the inode's own.
	 */
	if (odir->root != ndir->root &&
	    !(is_subvol_root(old) && (!(flags & TLOG_RENAME_EXCHANGE) || is_subvol_root(new))))
		return -EXDEV;
	/* a subvolume is never replaced, and a snapshot's stand-in for one never moves */
	if (!(flags & TLOG_RENAME_EXCHANGE) &&
	    (old->ino == BTRFS_EMPTY_SUBVOL_DIR_OBJECTID || (new && is_subvol_root(new))))
		return -ENOTEMPTY;
	if (new && is_dir(new) && !(flags & TLOG_RENAME_EXCHANGE) && !dir_is_empty(new))
		return -ENOTEMPTY;
	if (!new && !is_dir(ndir))
		return -ENOTDIR;
	if (btrfs_inode_item_nlink(&ndir->item) == 0)
		return -ENOENT;
	return 0;
}

int tlog_rename(struct tlog_mount *mnt, struct tlog_inode *odir, const char *oname, u16 olen,
		struct tlog_inode *ndir, const char *nname, u16 nlen, unsigned int flags)
{
	struct tlog_inode *old = NULL, *new = NULL;
	u64 index, oidx = 0;
	int err;

	if (olen == 0 || nlen == 0)
		return -EBUSY;
	if ((olen == 1 && oname[0] == '.') || (olen == 2 && !memcmp(oname, "..", 2)) ||
	    (nlen == 1 && nname[0] == '.') || (nlen == 2 && !memcmp(nname, "..", 2)))
		return -EBUSY;
	err = check_name(nname, nlen);
	if (err)
		return err;
	err = tlog_lookup(mnt, odir, oname, olen, &old);
	if (err)
		return err;
	err = tlog_lookup(mnt, ndir, nname, nlen, &new);
	if (err == -ENOENT)
		new = NULL;
	else if (err)
		goto out;
	err = may_rename(mnt, odir, old, ndir, new, flags);
	if (err) {
		err = err > 0 ? 0 : err;
		goto out;
	}
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (err)
		goto out;
	if (flags & TLOG_RENAME_EXCHANGE) {
		err = rename_exchange(mnt, odir, old, oname, olen, ndir, new, nname, nlen);
		goto out;
	}
	if (is_subvol_root(old))
		tlog_trans_set_needs_full_commit(mnt->trans, "a subvolume was renamed");
	/* replacing a file with data: the new one's data goes to disk first (auto_da_alloc) */
	if (new && S_ISREG(tlog_inode_mode(old)) && btrfs_inode_item_size(&new->item)) {
		err = tlog_writeback_inode(mnt, old);
		if (err)
			goto out;
	}
	/* btrfs_rename: the index first, then the old name out, the target out, the new name in */
	err = tlog_dir_next_index(ndir, &index);
	if (!err && odir != ndir)
		record_unlink_dir(mnt, odir, old, true);
	if (!err)
		err = remove_link(mnt, odir, old, oname, olen, &oidx, true);
	if (!err)
		err = touch_renamed(mnt, old);
	if (!err && new)
		err = unlink_one(mnt, ndir, new, nname, nlen);
	if (!err)
		err = tlog_add_link(mnt, ndir, old, nname, nlen, index, true);
	if (!err)
		log_new_name(mnt, old, odir, oname, olen, oidx);
	/*
	 * The replaced inode lives on, unlinked, until rename(2) drops its
	 * dentry: the new name's logging above still finds it (the name it
	 * lost is the renamed inode's now, a conflict) and logs it as
	 * existing; its eviction comes after.
	 */
	if (!err && new)
		err = evict_if_unlinked(mnt, new);
out:
	tlog_iput(mnt, old);
	tlog_iput(mnt, new);
	return err;
}

/* ---- attributes ---- */

int tlog_chmod(struct tlog_mount *mnt, struct tlog_inode *inode, u32 mode)
{
	u32 old = tlog_inode_mode(inode);
	int err = tlog_mount_trans(mnt, &mnt->trans);

	if (err)
		return err;
	btrfs_set_inode_item_mode(&inode->item, (old & S_IFMT) | (mode & 07777));
	touch_ctime(mnt, inode);
	return 0;
}

static int kill_capability(struct tlog_mount *mnt, struct tlog_inode *inode);

int tlog_chown(struct tlog_mount *mnt, struct tlog_inode *inode, u32 uid, u32 gid)
{
	u32 mode = tlog_inode_mode(inode);
	int err = tlog_mount_trans(mnt, &mnt->trans);

	if (err)
		return err;
	/* chown_common: a non-directory loses setuid, setgid if group-executable, and caps */
	if (!S_ISDIR(mode)) {
		mode &= ~S_ISUID;
		if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
			mode &= ~S_ISGID;
		err = kill_capability(mnt, inode);
		if (err)
			return err;
	}
	btrfs_set_inode_item_mode(&inode->item, mode);
	btrfs_set_inode_item_uid(&inode->item, uid);
	btrfs_set_inode_item_gid(&inode->item, gid);
	touch_ctime(mnt, inode);
	return 0;
}

int tlog_utimes(struct tlog_mount *mnt, struct tlog_inode *inode,
		const struct btrfs_timespec *atime, const struct btrfs_timespec *mtime)
{
	int err = tlog_mount_trans(mnt, &mnt->trans);

	if (err)
		return err;
	inode->item.atime = *atime;
	inode->item.mtime = *mtime;
	touch_ctime(mnt, inode);
	return 0;
}

/* ---- the btrfs.compression property ---- */

#define COMPRESSION_PROP "btrfs.compression"

static int find_xattr(struct tlog_inode *inode, const char *name, bool *found);
static int get_xattr(struct tlog_inode *inode, const char *name, char *buf, size_t cap,
		     size_t *len, bool *found);
static int insert_xattr(struct tlog_mount *mnt, struct tlog_inode *inode, const char *name,
			const void *value, size_t size);

static const char *compress_name(u8 type)
{
	return type == BTRFS_COMPRESS_LZO ? "lzo" : type == BTRFS_COMPRESS_ZSTD ? "zstd" : "zlib";
}

/* btrfs_compress_str2type: a value names an algorithm by its prefix ("zstd:3"). */
static u8 compress_type_of(const char *v, size_t len)
{
	static const char *const names[] = { "zlib", "lzo", "zstd" };

	for (int i = 0; i < 3; i++)
		if (len >= strlen(names[i]) && strncmp(v, names[i], strlen(names[i])) == 0)
			return BTRFS_COMPRESS_ZLIB + i;
	return 0;
}

static bool is_no_compress(const char *v, size_t len)
{
	return (len == 2 && strncmp(v, "no", 2) == 0) || (len == 4 && strncmp(v, "none", 4) == 0);
}

/* The property as the inode's flags and compression type (prop_compression_apply). */
static void apply_compression_prop(struct tlog_inode *inode, const char *v, size_t len)
{
	u64 flags = btrfs_inode_item_flags(&inode->item);

	if (len == 0) {
		flags &= ~(BTRFS_INODE_COMPRESS | BTRFS_INODE_NOCOMPRESS);
		inode->prop_compress = 0;
	} else if (is_no_compress(v, len)) {
		flags = (flags | BTRFS_INODE_NOCOMPRESS) & ~BTRFS_INODE_COMPRESS;
		inode->prop_compress = 0;
	} else {
		flags = (flags | BTRFS_INODE_COMPRESS) & ~BTRFS_INODE_NOCOMPRESS;
		inode->prop_compress = compress_type_of(v, len);
	}
	btrfs_set_inode_item_flags(&inode->item, flags);
}

/* The property's value, read once per inode (btrfs_load_inode_props). */
static int load_props(struct tlog_inode *inode)
{
	bool found;
	int err;

	if (inode->props_loaded)
		return 0;
	err = get_xattr(inode, COMPRESSION_PROP, inode->prop_value, sizeof(inode->prop_value) - 1,
			&inode->prop_len, &found);
	if (err)
		return err;
	inode->has_prop = found;
	if (found)
		inode->prop_compress = compress_type_of(inode->prop_value, inode->prop_len);
	inode->props_loaded = true;
	return 0;
}

static int set_compression_prop(struct tlog_mount *mnt, struct tlog_inode *inode, const char *v)
{
	size_t len = strlen(v);
	int err = load_props(inode);

	if (!err && inode->has_prop)
		err = btrfs_delete_xattr(mnt->trans, inode->root, inode->ino, COMPRESSION_PROP,
					 sizeof(COMPRESSION_PROP) - 1);
	if (!err)
		err = insert_xattr(mnt, inode, COMPRESSION_PROP, v, len);
	if (err)
		return err;
	inode->has_prop = true;
	inode->prop_len = len < sizeof(inode->prop_value) ? len : sizeof(inode->prop_value) - 1;
	memcpy(inode->prop_value, v, inode->prop_len);
	apply_compression_prop(inode, v, len);
	return 0;
}

static int remove_compression_prop(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	int err = load_props(inode);

	if (err || !inode->has_prop)
		return err;
	err = btrfs_delete_xattr(mnt->trans, inode->root, inode->ino, COMPRESSION_PROP,
				 sizeof(COMPRESSION_PROP) - 1);
	if (!err) {
		inode->has_prop = false;
		inode->prop_compress = 0;
	}
	return err;
}

/* A new inode takes its directory's property (btrfs_inode_inherit_props). */
static int inherit_props(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *inode)
{
	u32 mode = tlog_inode_mode(inode);
	int err;

	if (!S_ISREG(mode) && !S_ISDIR(mode))
		return 0;
	err = load_props(dir);
	/* only an algorithm is handed down ("none" is not), by its name */
	if (err || !dir->has_prop || !dir->prop_compress)
		return err;
	inode->props_loaded = true;
	return set_compression_prop(mnt, inode, compress_name(dir->prop_compress));
}

u8 tlog_inode_compress_type(struct tlog_inode *inode)
{
	return load_props(inode) ? 0 : inode->prop_compress;
}

int tlog_set_inode_flags(struct tlog_mount *mnt, struct tlog_inode *inode, u64 set, u64 clear)
{
	u64 flags = btrfs_inode_item_flags(&inode->item), nflags;
	u32 mode = tlog_inode_mode(inode);
	int err;

	nflags = (flags | set) & ~clear;
	if ((nflags & BTRFS_INODE_COMPRESS) && (nflags & BTRFS_INODE_NOCOMPRESS))
		return -EINVAL;
	/* check_fsflags: nocow and either compression flag exclude each other, old or new */
	if ((nflags & BTRFS_INODE_COMPRESS) && (nflags & BTRFS_INODE_NODATACOW) &&
	    (set & (BTRFS_INODE_COMPRESS | BTRFS_INODE_NODATACOW)))
		return -EINVAL;
	if ((flags & BTRFS_INODE_NODATACOW) &&
	    (nflags & (BTRFS_INODE_COMPRESS | BTRFS_INODE_NOCOMPRESS)))
		return -EINVAL;
	if ((nflags & BTRFS_INODE_NODATACOW) && (set & BTRFS_INODE_NODATACOW) &&
	    (flags & (BTRFS_INODE_COMPRESS | BTRFS_INODE_NOCOMPRESS)))
		return -EINVAL;
	/* btrfs_fileattr_set: NOCOW may change only on empty files (silently kept otherwise) */
	if ((set ^ clear) & BTRFS_INODE_NODATACOW) {
		if (S_ISREG(mode) && btrfs_inode_item_size(&inode->item)) {
			nflags = (nflags & ~BTRFS_INODE_NODATACOW) |
				 (flags & BTRFS_INODE_NODATACOW);
		} else if (nflags & BTRFS_INODE_NODATACOW) {
			if (S_ISREG(mode))
				nflags |= BTRFS_INODE_NODATASUM;
		} else if (S_ISREG(mode)) {
			nflags &= ~BTRFS_INODE_NODATASUM;
		}
	}
	/*
	 * The compression flag goes with the btrfs.compression property: set
	 * to the mount's algorithm (zlib without one), or removed when the
	 * flags no longer ask for compression.  A file without checksums
	 * cannot be compressed (the property refuses: EINVAL).
	 */
	if ((nflags & BTRFS_INODE_COMPRESS) &&
	    (nflags & (BTRFS_INODE_NODATACOW | BTRFS_INODE_NODATASUM)))
		return -EINVAL;
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err && (nflags & BTRFS_INODE_COMPRESS))
		err = set_compression_prop(mnt, inode, compress_name(mnt->compress_type));
	else if (!err)
		err = remove_compression_prop(mnt, inode);
	if (err)
		return err;
	btrfs_set_inode_item_flags(&inode->item, nflags);
	touch_ctime(mnt, inode);
	return 0;
}

/* ---- xattrs ---- */

#define XATTR_SIZE_MAX		65536
#define XATTR_NAME_MAX		255

/* The largest name + value an XATTR_ITEM can hold (BTRFS_MAX_XATTR_SIZE). */
static u32 max_xattr_size(const struct tlog_fs *fs)
{
	return fs->nodesize - sizeof(struct btrfs_header) - sizeof(struct btrfs_item) -
	       sizeof(struct btrfs_dir_item);
}

/* The namespaces btrfs has handlers for; anything else is EOPNOTSUPP. */
static int check_xattr_name(const struct tlog_inode *inode, const char *name, bool write)
{
	static const char *const prefixes[] = { "user.", "security.", "trusted.", "btrfs.", NULL };
	size_t len = strlen(name);
	u32 mode = tlog_inode_mode(inode);
	bool known = strcmp(name, "system.posix_acl_access") == 0 ||
		     strcmp(name, "system.posix_acl_default") == 0;

	if (len == 0 || len > XATTR_NAME_MAX)
		return -ERANGE;
	for (int i = 0; !known && prefixes[i]; i++) {
		size_t pl = strlen(prefixes[i]);

		if (strncmp(name, prefixes[i], pl) == 0) {
			if (len == pl)
				return -EINVAL;	/* a bare prefix names nothing */
			known = true;
		}
	}
	if (!known)
		return -EOPNOTSUPP;
	/* xattr_permission: user.* only on regular files and directories */
	if (strncmp(name, "user.", 5) == 0 && !S_ISREG(mode) && !S_ISDIR(mode))
		return write ? -EPERM : -ENODATA;
	if (strcmp(name, "system.posix_acl_default") == 0 && !S_ISDIR(mode))
		return write ? -EACCES : -ENODATA;
	return 0;
}

/* The value of xattr @name of @inode (at most @cap bytes copied). */
static int get_xattr(struct tlog_inode *inode, const char *name, char *buf, size_t cap,
		     size_t *len, bool *found)
{
	u16 nlen = (u16)strlen(name);
	struct btrfs_key key = { inode->ino, BTRFS_XATTR_ITEM_KEY, btrfs_name_hash(name, nlen) };
	struct tlog_dir_entry de;
	struct btrfs_path path;
	int err;

	*found = false;
	*len = 0;
	btrfs_init_path(&path);
	err = btrfs_search_slot(inode->root, &key, &path);
	if (err == 0) {
		err = btrfs_find_name_in_dir_item(path.nodes[0], path.slots[0], name, nlen, &de, NULL);
		if (err == 0) {
			*found = true;
			*len = de.data_len < cap ? de.data_len : cap;
			if (*len)
				memcpy(buf, de.data, *len);
		} else if (err == -ENOENT) {
			err = 0;
		}
	} else if (err > 0) {
		err = 0;
	}
	btrfs_release_path(&path);
	return err;
}

/* Whether @inode has xattr @name. */
static int find_xattr(struct tlog_inode *inode, const char *name, bool *found)
{
	size_t len;

	return get_xattr(inode, name, NULL, 0, &len, found);
}

/* A POSIX ACL value: a version 2 header and whole entries (posix_acl_from_xattr). */
static int check_acl_value(const void *value, size_t size)
{
	const u8 *v = value;

	if (size < 4)
		return -EINVAL;
	if ((v[0] | v[1] << 8 | v[2] << 16 | (u32)v[3] << 24) != 2)
		return -EOPNOTSUPP;
	if ((size - 4) % 8)
		return -EINVAL;
	return 0;
}

static int insert_xattr(struct tlog_mount *mnt, struct tlog_inode *inode, const char *name,
			const void *value, size_t size)
{
	u16 len = (u16)strlen(name);
	struct btrfs_key key = { inode->ino, BTRFS_XATTR_ITEM_KEY, btrfs_name_hash(name, len) };
	struct btrfs_key loc = { 0, 0, 0 };
	u32 esize = sizeof(struct btrfs_dir_item) + len + size;
	u8 *buf = malloc(esize);
	struct btrfs_dir_item *di = (void *)buf;
	struct btrfs_path path;
	int err;

	if (!buf)
		return -ENOMEM;
	memset(di, 0, sizeof(*di));
	btrfs_cpu_key_to_disk(&di->location, &loc);
	btrfs_set_dir_item_transid(di, mnt->trans->transid);
	btrfs_set_dir_item_name_len(di, len);
	btrfs_set_dir_item_data_len(di, (u16)size);
	btrfs_set_dir_item_type(di, BTRFS_FT_XATTR);
	memcpy(di + 1, name, len);
	memcpy((u8 *)(di + 1) + len, value, size);
	/* names with the same hash share the item, as long as it fits a leaf */
	btrfs_init_path(&path);
	err = btrfs_search_slot(inode->root, &key, &path);
	if (err == 0 && btrfs_item_size(path.nodes[0], path.slots[0]) + esize +
			sizeof(struct btrfs_item) > mnt->fs->nodesize - sizeof(struct btrfs_header))
		err = -ENOSPC;
	btrfs_release_path(&path);
	if (err >= 0)
		err = btrfs_append_to_item(mnt->trans, inode->root, &key, buf, esize);
	free(buf);
	return err;
}

/*
 * An xattr came, changed or went: ctime, and the next fsync copies all of
 * the inode's items up to its xattrs (BTRFS_INODE_COPY_EVERYTHING).
 */
static void xattr_changed(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	inode->needs_full_log = true;
	touch_ctime(mnt, inode);
}

int tlog_setxattr(struct tlog_mount *mnt, struct tlog_inode *inode, const char *name,
		  const void *value, size_t size, unsigned int flags)
{
	bool found;
	int err;

	if (size > XATTR_SIZE_MAX)
		return -E2BIG;
	err = check_xattr_name(inode, name, true);
	if (err)
		return err;
	if (strncmp(name, "system.posix_acl_", 17) == 0) {
		err = check_acl_value(value, size);
		if (err)
			return err;
	}
	if (strncmp(name, "btrfs.", 6) == 0) {
		u32 mode = tlog_inode_mode(inode);

		/* the one property there is, on the files it applies to, with a valid value */
		if (strcmp(name, COMPRESSION_PROP) || (!S_ISREG(mode) && !S_ISDIR(mode)))
			return -EINVAL;
		if (size && !compress_type_of(value, size) && !is_no_compress(value, size))
			return -EINVAL;
		if (size && !is_no_compress(value, size) &&
		    (btrfs_inode_item_flags(&inode->item) &
		     (BTRFS_INODE_NODATACOW | BTRFS_INODE_NODATASUM)))
			return -EINVAL;
	}
	if (strlen(name) + size > max_xattr_size(mnt->fs))
		return -ENOSPC;
	err = find_xattr(inode, name, &found);
	if (err)
		return err;
	if (found && (flags & TLOG_XATTR_CREATE))
		return -EEXIST;
	if (!found && (flags & TLOG_XATTR_REPLACE))
		return -ENODATA;
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err && found)
		err = btrfs_delete_xattr(mnt->trans, inode->root, inode->ino, name,
					 (u16)strlen(name));
	if (!err)
		err = insert_xattr(mnt, inode, name, value, size);
	if (!err && strcmp(name, COMPRESSION_PROP) == 0) {
		inode->props_loaded = true;
		inode->has_prop = true;
		inode->prop_len = size < sizeof(inode->prop_value) ? size : sizeof(inode->prop_value) - 1;
		memcpy(inode->prop_value, value, inode->prop_len);
		apply_compression_prop(inode, value, size);
	}
	if (!err)
		xattr_changed(mnt, inode);
	return err;
}

int tlog_removexattr(struct tlog_mount *mnt, struct tlog_inode *inode, const char *name)
{
	bool found;
	int err;

	err = check_xattr_name(inode, name, true);
	if (err)
		return err;
	err = find_xattr(inode, name, &found);
	if (err)
		return err;
	if (!found)
		return -ENODATA;
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err)
		err = btrfs_delete_xattr(mnt->trans, inode->root, inode->ino, name,
					 (u16)strlen(name));
	if (!err && strcmp(name, COMPRESSION_PROP) == 0) {
		inode->has_prop = false;
		apply_compression_prop(inode, "", 0);
	}
	if (!err)
		xattr_changed(mnt, inode);
	return err;
}

/* security.capability goes when the file's owner changes (ATTR_KILL_PRIV). */
static int kill_capability(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	static const char cap[] = "security.capability";
	bool found;
	int err = find_xattr(inode, cap, &found);

	if (!err && found)
		err = btrfs_delete_xattr(mnt->trans, inode->root, inode->ino, cap, sizeof(cap) - 1);
	return err;
}

int tlog_inode_kill_privs(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	return kill_capability(mnt, inode);
}

int tlog_release_file(struct tlog_mount *mnt, struct tlog_inode *inode)
{
	if (!inode->flush_on_close)
		return 0;
	inode->flush_on_close = false;
	return tlog_writeback_inode(mnt, inode);
}
