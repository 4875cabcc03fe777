// SPDX-License-Identifier: GPL-2.0-only
/*
 * Log replay: bring the fsyncs a log tree holds into the subvolumes, with
 * the result the kernel's mount-time replay gives (btrfs_recover_log_trees;
 * Documentation/design/log-replay.md).
 *
 * The kernel's result depends on the order of its steps, so this follows
 * it: every log tree (highest subvolume first) is walked in key order
 * three times - inode items, then directory index entries, then the rest
 * (xattrs, back references, file extents) - and after the last walk of a
 * subvolume its inodes' link counts are recounted.  Every inode the replay
 * touched in a way that can change its link count is remembered, so that
 * the recount visits exactly the kernel's inodes in the kernel's order.
 * The kernel keeps that list as (TREE_LOG_FIXUP, ORPHAN_ITEM, ino) items
 * in the subvolume and deletes them all before it commits; the list here
 * is a sorted array instead (struct fixup_list), with the same members and
 * order, which spares a tree insert and delete per inode.
 *
 * Inode changes go through the inode operations (inode-ops.h) on a mount
 * attached to the replay's transaction, in the kernel's log-recovery mode.
 * The replay also copies logged inode items into the tree directly, and
 * the result must be what it would be if every change wrote its inode's
 * item at once and the next one read it back; so an inode stays cached
 * between changes (a directory gains every name of the log one at a time)
 * but is written back and dropped before its item is copied over
 * (tlog_iflush), and whenever the cache holds more than REPLAY_CACHED
 * inodes.  Only whether an inode exists is asked of the cache as well.
 *
 * The log's blocks, and the data extents only the log refers to, lie in
 * space the extent tree calls free: they are kept out of the transaction's
 * allocations until the commit, after which the log is gone.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "backref.h"
#include "csum.h"
#include "dir-item.h"
#include "errctx.h"
#include "extent-tree.h"
#include "file-extent.h"
#include "file-item.h"
#include "inode-ops.h"
#include "misc.h"
#include "root-tree.h"
#include "tree-checker.h"
#include "tree-log.h"

enum replay_stage {
	REPLAY_INODES,
	REPLAY_DIR_INDEX,
	REPLAY_ALL,
};

/*
 * The inodes whose link counts are recounted after a subvolume's last
 * walk: (subvolume, inode) pairs, sorted and unique.  Subvolumes are
 * replayed highest first and an inode is mostly added after those below
 * it, so adding appends and taking the highest of a subvolume takes the
 * last entry.
 */
struct fixup_entry {
	u64 subvol;
	u64 ino;
};

struct fixup_list {
	struct fixup_entry *v;
	size_t nr;
	size_t alloc;
};

struct replay {
	struct tlog_trans *trans;
	/*
	 * The inode operations, on a mount attached to the transaction: the
	 * replay changes inodes as the kernel's does, through btrfs_add_link,
	 * btrfs_unlink_inode and friends, one policy shared with `run`.
	 */
	struct tlog_mount *mnt;
	struct tlog_fs *fs;
	struct btrfs_root *root;	/* the subvolume replayed into */
	struct btrfs_root *log;		/* its log tree */
	enum replay_stage stage;
	/* an nlink-0 inode item was met: skip items up to the next inode item */
	bool ignore_cur_inode;
	struct tlog_replay_stats *stats;
	u64 leaves_done;		/* for progress reports */
	struct fixup_list fixups;
};

/* ---- statistics (dry run, -v) ---- */

/* Where (@ino, @subvol) starts looking in a table of @size (a power of two) slots. */
static size_t stat_slot(u64 ino, u64 subvol, size_t size)
{
	return (size_t)(ino * 0x9e3779b97f4a7c15ULL + subvol) & (size - 1);
}

static struct tlog_replay_inode *stat_of(struct replay *rp, u64 ino)
{
	struct tlog_replay_stats *s = rp->stats;
	u64 subvol = rp->root->root_key.objectid;
	size_t h;

	if (!s)
		return NULL;
	if (s->nr * 2 >= s->hash_size) {
		size_t size = s->hash_size ? s->hash_size * 2 : 256;
		size_t *hash = calloc(size, sizeof(*hash));

		if (!hash)
			return NULL;
		for (size_t i = 0; i < s->nr; i++) {
			h = stat_slot(s->inodes[i].ino, s->inodes[i].subvol, size);
			while (hash[h])
				h = (h + 1) & (size - 1);
			hash[h] = i + 1;
		}
		free(s->hash);
		s->hash = hash;
		s->hash_size = size;
	}
	h = stat_slot(ino, subvol, s->hash_size);
	while (s->hash[h]) {
		struct tlog_replay_inode *e = &s->inodes[s->hash[h] - 1];

		if (e->ino == ino && e->subvol == subvol)
			return e;
		h = (h + 1) & (s->hash_size - 1);
	}
	if (array_reserve(s->inodes, s->cap, s->nr + 1))
		return NULL;
	s->inodes[s->nr] = (struct tlog_replay_inode){ .subvol = subvol, .ino = ino };
	s->hash[h] = ++s->nr;
	return &s->inodes[s->nr - 1];
}

static void count_names(struct replay *rp, u64 ino, bool added)
{
	struct tlog_replay_inode *e = stat_of(rp, ino);

	if (!e)
		return;
	if (added) {
		e->names_added++;
		rp->stats->names_added++;
	} else {
		e->names_removed++;
		rp->stats->names_removed++;
	}
}

#define STAT(rp, ino, field, op)					\
	do {								\
		struct tlog_replay_inode *__e = stat_of(rp, ino);	\
		if (__e)						\
			__e->field op;					\
	} while (0)

void tlog_replay_stats_free(struct tlog_replay_stats *stats)
{
	free(stats->inodes);
	free(stats->hash);
	memset(stats, 0, sizeof(*stats));
}

/*
 * Inodes kept cached between changes, at most: 16 MiB of them (some
 * 40,000), so that a log of that many inodes reads and writes each once;
 * the kernel keeps all it replays in memory.
 */
#define REPLAY_CACHED	((16u << 20) / sizeof(struct tlog_inode))

/* ---- small lookups ---- */

static int item_exists(struct btrfs_root *root, const struct btrfs_key *key)
{
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(root, key, &path);
	btrfs_release_path(&path);
	return ret < 0 ? ret : ret == 0;
}

/* Whether inode @ino of the subvolume exists: cached (and so in the tree), or its item. */
static int inode_exists(struct replay *rp, u64 ino)
{
	struct btrfs_key key = { ino, BTRFS_INODE_ITEM_KEY, 0 };

	if (tlog_icached(rp->mnt, rp->root, ino))
		return 1;
	return item_exists(rp->root, &key);
}

/*
 * Inode @ino's item read only to learn that the inode exists: 0, -ENOENT
 * (recorded as an error when @must), or the error reading it.
 */
static int lookup_inode_exists(struct replay *rp, u64 ino, bool must)
{
	struct btrfs_inode_item ii;

	if (tlog_icached(rp->mnt, rp->root, ino))
		return 0;
	return must ? btrfs_read_inode(rp->root, ino, &ii) : btrfs_lookup_inode(rp->root, ino, &ii);
}

/*
 * Take inode @ino of the subvolume for one change (read_one_inode): it
 * must exist, -ENOENT naming what looked for it otherwise.
 */
static int get_inode(struct replay *rp, u64 ino, struct tlog_inode **ret)
{
	int err = tlog_iget(rp->mnt, rp->root, ino, ret);

	if (err == -ENOENT)
		tlog_error(-ENOENT, "inode %llu is in neither the log nor subvolume %llu",
			   (unsigned long long)ino,
			   (unsigned long long)rp->root->root_key.objectid);
	return err;
}

/*
 * The change is done (btrfs_update_inode): the item is the cached one's
 * until tlog_iflush writes it; @err passes through.
 */
static int put_inode(struct replay *rp, struct tlog_inode *inode, int err)
{
	int ret = 0;

	tlog_iput(rp->mnt, inode);
	if (rp->mnt->nr_inodes > REPLAY_CACHED)
		ret = tlog_iflush_unused(rp->mnt);
	return err ? err : ret;
}

/* Whether the log's ref item @key holds the name (@parent, @name). */
static int backref_in_log(struct replay *rp, const struct btrfs_key *key, u64 parent,
			  const char *name, u16 len)
{
	return tlog_log_has_ref_name(rp->log, key, parent, name, len);
}

/* ---- link count bookkeeping (the kernel's link count fixup list) ---- */

/* inc_nlink: a link the recount will settle (no ctime, no i_version, as the kernel's). */
static void inc_nlink(struct replay *rp, struct tlog_inode *inode)
{
	btrfs_set_inode_item_nlink(&inode->item, btrfs_inode_item_nlink(&inode->item) + 1);
	tlog_inode_mark_dirty(rp->mnt, inode);
}

static int fixup_cmp(const struct fixup_entry *a, const struct fixup_entry *b)
{
	if (a->subvol != b->subvol)
		return a->subvol < b->subvol ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return 0;
}

/* The index of the first entry of @list not below @e. */
static size_t fixup_lower_bound(const struct fixup_list *list, const struct fixup_entry *e)
{
	size_t lo = 0, hi = list->nr;

	if (hi && fixup_cmp(&list->v[hi - 1], e) < 0)
		return hi;	/* the common case: @e goes last */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fixup_cmp(&list->v[mid], e) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Put @ino of the current subvolume on the fixup list: -EEXIST if it is on it. */
static int fixup_list_add(struct replay *rp, u64 ino)
{
	struct fixup_list *list = &rp->fixups;
	struct fixup_entry e = { rp->root->root_key.objectid, ino };
	size_t pos = fixup_lower_bound(list, &e);

	if (pos < list->nr && fixup_cmp(&list->v[pos], &e) == 0)
		return -EEXIST;
	if (array_reserve(list->v, list->alloc, list->nr + 1))
		return -ENOMEM;
	memmove(&list->v[pos + 1], &list->v[pos], (list->nr - pos) * sizeof(e));
	list->v[pos] = e;
	list->nr++;
	return 0;
}

/* Take the highest inode of the current subvolume off the list: false when it has none. */
static bool fixup_list_pop(struct replay *rp, u64 *ino)
{
	struct fixup_list *list = &rp->fixups;
	struct fixup_entry e = { rp->root->root_key.objectid, (u64)-1 };
	size_t pos = fixup_lower_bound(list, &e);

	if (pos < list->nr && fixup_cmp(&list->v[pos], &e) == 0)
		pos++;
	if (pos == 0 || list->v[pos - 1].subvol != e.subvol)
		return false;
	*ino = list->v[pos - 1].ino;
	memmove(&list->v[pos - 1], &list->v[pos], (list->nr - pos) * sizeof(e));
	list->nr--;
	return true;
}

/*
 * Remember @inode for the link count recount (the kernel's
 * link_to_fixup_dir).  The first time, the inode gains a link so that it
 * is not taken for deleted before the recount.
 */
static int link_to_fixup_dir(struct replay *rp, struct tlog_inode *inode)
{
	int ret = fixup_list_add(rp, inode->ino);

	if (ret == -EEXIST)
		return 0;
	if (!ret)
		inc_nlink(rp, inode);
	return ret;
}

/* The same for inode @ino, taken for it. */
static int link_ino_to_fixup_dir(struct replay *rp, u64 ino)
{
	struct tlog_inode *inode;
	int ret = get_inode(rp, ino, &inode);

	if (ret)
		return ret;
	return put_inode(rp, inode, link_to_fixup_dir(rp, inode));
}

/*
 * Unlink @name of @inode from directory @dir (btrfs_unlink_inode); the
 * inode may be on the fixup list already, and is not evicted.
 */
static int unlink_name(struct replay *rp, u64 dir, struct tlog_inode *inode, const char *name,
		       u16 len)
{
	struct tlog_inode *parent;
	int ret = get_inode(rp, dir, &parent);

	if (ret)
		return ret;
	ret = tlog_unlink_inode(rp->mnt, parent, inode, name, len);
	ret = put_inode(rp, parent, ret);
	if (!ret)
		count_names(rp, inode->ino, false);
	return ret;
}

/*
 * A name to go whose link the recount will judge: on the fixup list, one
 * link more first when @keep_link (the name goes, the link it held is not
 * lost yet), then unlinked.
 */
static int unlink_for_fixup(struct replay *rp, u64 dir, u64 ino, const char *name, u16 len,
			    bool keep_link)
{
	struct tlog_inode *inode;
	int ret = get_inode(rp, ino, &inode);

	if (ret)
		return ret;
	ret = link_to_fixup_dir(rp, inode);
	if (!ret && keep_link)
		inc_nlink(rp, inode);
	if (!ret)
		ret = unlink_name(rp, dir, inode, name, len);
	return put_inode(rp, inode, ret);
}

/* Drop a directory entry found in the way of a logged one (its inode is recounted). */
static int drop_one_dir_item(struct replay *rp, const struct tlog_dir_entry *de)
{
	if (de->location.type != BTRFS_INODE_ITEM_KEY)
		return 0;	/* a subvolume's entry is never in the way of a file's */
	return unlink_for_fixup(rp, de->dir, de->location.objectid, de->name, de->name_len,
				false);
}

/* ---- directory deletes (as the kernel's replay_dir_deletes) ---- */

/* Whether the log has the entry (@dir, @index) named @name. */
static int dir_index_in_log(struct replay *rp, u64 dir, u64 index, const char *name, u16 len)
{
	struct tlog_dir_entry de;
	char buf[256];
	int ret = btrfs_lookup_dir_index(rp->log, dir, index, &de, buf);

	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	return de.name_len == len && memcmp(de.name, name, len) == 0;
}

/* The subvolume's first DIR_INDEX of @dir at or after *@index (1: none up to @end). */
static int next_dir_index(struct btrfs_root *root, u64 dir, u64 index, u64 end,
			  struct tlog_dir_entry *de, char name[256])
{
	struct btrfs_key key = { dir, BTRFS_DIR_INDEX_KEY, index };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_forward(root, &key, &path);
	if (ret == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.objectid != dir || key.type != BTRFS_DIR_INDEX_KEY || key.offset > end)
			ret = 1;
	}
	btrfs_release_path(&path);
	if (ret == 0)
		ret = btrfs_lookup_dir_index(root, dir, key.offset, de, name);
	return ret;
}

/*
 * Remove the names of @dir that the log's index ranges cover but do not
 * list; with @del_all every name goes (a directory left without links).
 */
static int replay_dir_deletes(struct replay *rp, u64 dir, bool del_all)
{
	u64 range_start = 0, range_end = 0;
	int ret;

	ret = inode_exists(rp, dir);
	if (ret <= 0)
		return ret;	/* not there (yet): nothing to delete */
	for (;;) {
		u64 index;

		if (del_all) {
			range_end = (u64)-1;
		} else {
			u64 cursor = range_start;

			ret = tlog_log_find_dir_range(rp->log, dir, &range_start, &range_end);
			if (ret < 0)
				return ret;
			if (ret > 0)
				break;
			/* a range ending before it starts would never let the cursor move on */
			if (range_end < range_start || range_end < cursor)
				return tlog_error(-EUCLEAN,
						  "log: index range [%llu, %llu] of directory %llu is reversed",
						  (unsigned long long)range_start,
						  (unsigned long long)range_end,
						  (unsigned long long)dir);
		}
		index = range_start;
		for (;;) {
			struct tlog_dir_entry de;
			char name[256];

			ret = next_dir_index(rp->root, dir, index, range_end, &de, name);
			if (ret == 1 || ret == -ENOENT)
				break;
			if (ret < 0)
				return ret;
			if (!del_all) {
				ret = dir_index_in_log(rp, dir, de.index, de.name, de.name_len);
				if (ret < 0)
					return ret;
			} else {
				ret = 0;
			}
			if (!ret && de.location.type == BTRFS_INODE_ITEM_KEY) {
				ret = unlink_for_fixup(rp, dir, de.location.objectid, de.name,
						       de.name_len, true);
				if (ret)
					return ret;
			}
			if (de.index == (u64)-1)
				break;
			index = de.index + 1;
		}
		if (range_end == (u64)-1)
			break;
		range_start = range_end + 1;
	}
	return 0;
}

/* ---- stage 1: inode items (LOG_WALK_REPLAY_INODES) ---- */

struct xattr_scan {
	struct replay *rp;
	u16 len;		/* the first xattr the log lacks */
	char name[256];
	bool found;
};

static int check_xattr_in_log(const struct tlog_dir_entry *de, void *arg)
{
	struct xattr_scan *xs = arg;
	struct btrfs_key key = { de->dir, BTRFS_XATTR_ITEM_KEY,
				 btrfs_name_hash(de->name, de->name_len) };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(xs->rp->log, &key, &path);
	if (ret == 0) {
		struct tlog_dir_entry found;

		ret = btrfs_find_name_in_dir_item(path.nodes[0], path.slots[0], de->name,
						  de->name_len, &found, NULL);
		ret = ret == -ENOENT ? 0 : ret ? ret : 1;
	} else if (ret > 0) {
		ret = 0;
	}
	btrfs_release_path(&path);
	if (ret)
		return ret < 0 ? ret : 0;
	xs->len = de->name_len;
	memcpy(xs->name, de->name, de->name_len);
	xs->found = true;
	return 1;
}

/* Delete the inode's xattrs that the log does not have. */
static int replay_xattr_deletes(struct replay *rp, u64 ino)
{
	for (;;) {
		struct btrfs_key min = { ino, BTRFS_XATTR_ITEM_KEY, 0 };
		struct btrfs_key max = { ino, BTRFS_XATTR_ITEM_KEY, (u64)-1 };
		struct xattr_scan xs = { .rp = rp };
		struct btrfs_tree_iter iter;
		int ret = 0;

		btrfs_for_each_item(rp->root, &iter, &min, &max) {
			ret = btrfs_for_each_dir_entry(iter.leaf, iter.slot, check_xattr_in_log, &xs);
			if (ret)
				break;
		}
		if (!ret && iter.ret < 0)
			ret = iter.ret;
		btrfs_tree_iter_end(&iter);
		if (ret < 0)
			return ret;
		if (!xs.found)
			return 0;
		ret = btrfs_delete_xattr(rp->trans, rp->root, ino, xs.name, xs.len);
		if (ret)
			return ret;
	}
}

/* Copy the logged inode item into the subvolume, the kernel's way. */
static int overwrite_inode_item(struct replay *rp, const struct btrfs_key *key,
				const struct btrfs_inode_item *logged)
{
	struct btrfs_inode_item src = *logged, cur;
	bool changed;
	int ret;

	/* the item is read and written here: the cached inode's first */
	ret = tlog_iflush(rp->mnt, rp->root, key->objectid);
	if (!ret)
		ret = btrfs_lookup_inode(rp->root, key->objectid, &cur);
	if (ret && ret != -ENOENT)
		return ret;
	if (ret == 0) {
		if (memcmp(&cur, logged, sizeof(cur)) == 0)
			return 0;
		if (btrfs_inode_item_generation(logged) == 0) {
			/*
			 * Logged only to say the inode exists (a directory fsync):
			 * keep the subvolume's item, but a regular file's logged
			 * non-zero size is its size.
			 */
			if (S_ISREG(btrfs_inode_item_mode(logged)) &&
			    S_ISREG(btrfs_inode_item_mode(&cur)) && btrfs_inode_item_size(logged)) {
				u64 size = btrfs_inode_item_size(logged);

				btrfs_set_inode_item_size(&cur, size);
				ret = btrfs_overwrite_item(rp->trans, rp->root, key, &cur,
							   sizeof(cur), &changed);
			}
			STAT(rp, key->objectid, updated, = true);
			return ret;
		}
		/* nbytes follows the extents replayed; a directory's size its names */
		btrfs_set_inode_item_nbytes(&src, btrfs_inode_item_nbytes(&cur));
		if (S_ISDIR(btrfs_inode_item_mode(logged)) && S_ISDIR(btrfs_inode_item_mode(&cur)))
			btrfs_set_inode_item_size(&src, btrfs_inode_item_size(&cur));
		else if (S_ISDIR(btrfs_inode_item_mode(logged)))
			btrfs_set_inode_item_size(&src, 0);
		STAT(rp, key->objectid, updated, = true);
	} else {
		btrfs_set_inode_item_nbytes(&src, 0);
		if (S_ISDIR(btrfs_inode_item_mode(logged)))
			btrfs_set_inode_item_size(&src, 0);
		STAT(rp, key->objectid, created, = true);
	}
	if (btrfs_inode_item_generation(&src) == 0)
		btrfs_set_inode_item_generation(&src, rp->trans->transid);
	if (ret == -ENOENT)	/* known not to be there: no second look */
		return btrfs_insert_item(rp->trans, rp->root, key, &src, sizeof(src));
	return btrfs_overwrite_item(rp->trans, rp->root, key, &src, sizeof(src), &changed);
}

/* Drop a regular file's extents past its (replayed) size. */
static int truncate_to_size(struct replay *rp, u64 ino)
{
	struct tlog_inode *inode;
	u64 from;
	int ret;

	ret = get_inode(rp, ino, &inode);
	if (ret)
		return ret;
	from = round_up(btrfs_inode_item_size(&inode->item), rp->fs->sectorsize);
	ret = tlog_drop_extents(rp->mnt, inode, from, (u64)-1);
	tlog_inode_mark_dirty(rp->mnt, inode);
	return put_inode(rp, inode, ret);
}

static int replay_inode_item(struct replay *rp, const struct btrfs_key *key,
			     const struct btrfs_inode_item *logged)
{
	u32 mode = btrfs_inode_item_mode(logged);
	int ret;

	ret = replay_xattr_deletes(rp, key->objectid);
	if (!ret && S_ISDIR(mode))
		ret = replay_dir_deletes(rp, key->objectid, false);
	if (!ret)
		ret = overwrite_inode_item(rp, key, logged);
	if (!ret && S_ISREG(mode))
		ret = truncate_to_size(rp, key->objectid);
	if (!ret)
		ret = link_ino_to_fixup_dir(rp, key->objectid);
	return ret;
}

/* ---- stage 2: directory index entries (LOG_WALK_REPLAY_DIR_INDEX) ---- */

/*
 * A subvolume entry @found where the logged one wants to be: 1 if it is
 * the same (target and type), else dropped when the logged target exists.
 */
static int resolve_dir_conflict(struct replay *rp, const struct tlog_dir_entry *found,
				const struct tlog_dir_entry *logged, bool exists)
{
	if (btrfs_comp_cpu_keys(&found->location, &logged->location) == 0 &&
	    found->type == logged->type)
		return 1;
	if (!exists)
		return 0;
	return drop_one_dir_item(rp, found);
}

/* The name (@ino, @parent, @name) as a logged INODE_REF or INODE_EXTREF. */
static int name_in_log_refs(struct replay *rp, u64 ino, u64 parent, const char *name, u16 len)
{
	struct btrfs_key key = { ino, BTRFS_INODE_REF_KEY, parent };
	int ret = backref_in_log(rp, &key, parent, name, len);

	if (ret)
		return ret;
	key = (struct btrfs_key){ ino, BTRFS_INODE_EXTREF_KEY, btrfs_extref_hash(parent, name, len) };
	return backref_in_log(rp, &key, parent, name, len);
}

/* Add the logged name like a link, back reference included (insert_one_name). */
static int insert_one_name(struct replay *rp, u64 dir, const struct tlog_dir_entry *logged)
{
	struct tlog_inode *parent, *inode;
	u64 ino = logged->location.objectid;
	u64 index;
	int ret;

	/* a name the inode has already (under another index) stays as it is */
	ret = btrfs_find_inode_ref(rp->root, ino, dir, logged->name, logged->name_len, &index);
	if (ret != -ENOENT)
		return ret < 0 ? ret : 0;
	ret = get_inode(rp, dir, &parent);
	if (ret)
		return ret;
	ret = get_inode(rp, ino, &inode);
	if (ret)
		return put_inode(rp, parent, ret);
	ret = tlog_add_link(rp->mnt, parent, inode, logged->name, logged->name_len,
			    logged->index, true);
	if (!ret)
		count_names(rp, ino, true);
	/* by the entry's type, as the kernel decides: directories have one link */
	if (!ret && logged->type != BTRFS_FT_DIR)
		ret = link_to_fixup_dir(rp, inode);
	ret = put_inode(rp, inode, ret);
	return put_inode(rp, parent, ret);
}

static int replay_one_dir_index(struct replay *rp, const struct tlog_dir_entry *logged)
{
	struct tlog_dir_entry found;
	char name[256];
	bool dir_match = false, index_match = false;
	int exists, ret;
	u64 dir = logged->dir;

	ret = lookup_inode_exists(rp, dir, true);
	if (ret == -ENOENT)
		return tlog_error(-ENOENT, "directory %llu of logged entry \"%.*s\" does not exist",
				  (unsigned long long)dir, logged->name_len, logged->name);
	if (ret)
		return ret;
	if (logged->location.type == BTRFS_INODE_ITEM_KEY)
		exists = inode_exists(rp, logged->location.objectid);
	else
		exists = item_exists(rp->root, &logged->location);
	if (exists < 0)
		return exists;

	ret = btrfs_lookup_dir_entry(rp->root, dir, logged->name, logged->name_len, &found);
	if (ret == 0) {
		found.dir = dir;
		ret = resolve_dir_conflict(rp, &found, logged, exists);
		if (ret < 0)
			return ret;
		dir_match = ret == 1;
	} else if (ret != -ENOENT) {
		return ret;
	}
	ret = btrfs_lookup_dir_index(rp->root, dir, logged->index, &found, name);
	if (ret == 0 && found.name_len == logged->name_len &&
	    memcmp(found.name, logged->name, found.name_len) == 0) {
		ret = resolve_dir_conflict(rp, &found, logged, exists);
		if (ret < 0)
			return ret;
		index_match = ret == 1;
	} else if (ret != 0 && ret != -ENOENT) {
		return ret;
	}
	if (dir_match && index_match)
		return 0;
	/* a logged back reference with this name adds it in the last stage */
	ret = name_in_log_refs(rp, logged->location.objectid, dir, logged->name,
			       logged->name_len);
	if (ret)
		return ret < 0 ? ret : 0;

	/* insert the name like a link, back reference included */
	if (logged->location.type != BTRFS_INODE_ITEM_KEY || !exists)
		return 0;
	ret = btrfs_lookup_dir_entry(rp->root, dir, logged->name, logged->name_len, &found);
	if (ret == 0)
		return 0;	/* the name is still there (under another index) */
	if (ret != -ENOENT)
		return ret;
	return insert_one_name(rp, dir, logged);
}

static int dir_index_cb(const struct tlog_dir_entry *de, void *arg)
{
	int ret = replay_one_dir_index(arg, de);

	/* only one entry per DIR_INDEX item */
	return ret ? ret : 1;
}

/* ---- stage 3: back references (as the kernel's add_inode_ref) ---- */

/*
 * Before adding logged name @nm of @ino: unlink the names of @ino in the
 * same parent the log does not have, then entries in the way of the name
 * or its index.  1: stop with this item (the root directory's own ref).
 */
static int resolve_ref_conflicts(struct replay *rp, u64 ino, const struct tlog_ref_name *nm,
				 bool index_free)
{
again:
	for (int ext = 0; ext < 2; ext++) {
		struct btrfs_key key = ext ?
			(struct btrfs_key){ ino, BTRFS_INODE_EXTREF_KEY,
					    btrfs_extref_hash(nm->parent, nm->name, nm->len) } :
			(struct btrfs_key){ ino, BTRFS_INODE_REF_KEY, nm->parent };
		struct tlog_ref_name *names;
		struct btrfs_path path;
		int nr, ret;

		btrfs_init_path(&path);
		ret = btrfs_search_slot(rp->root, &key, &path);
		if (ret == 0 && !ext && ino == nm->parent) {
			btrfs_release_path(&path);
			return 1;
		}
		if (ret == 0)
			ret = btrfs_decode_ref_item(path.nodes[0], path.slots[0], &names, &nr);
		btrfs_release_path(&path);
		if (ret > 0)
			continue;
		if (ret < 0)
			return ret;
		for (int i = 0; i < nr; i++) {
			struct btrfs_key lkey;
			struct tlog_inode *inode;

			if (names[i].parent != nm->parent)
				continue;
			lkey = ext ? (struct btrfs_key){ ino, BTRFS_INODE_EXTREF_KEY,
							 btrfs_extref_hash(names[i].parent,
									   names[i].name,
									   names[i].len) } : key;
			ret = backref_in_log(rp, &lkey, names[i].parent, names[i].name,
					     names[i].len);
			if (ret == 0 && ext)
				ret = lookup_inode_exists(rp, names[i].parent, true);
			if (ret == 0) {
				/* the name goes; the link it held is not lost yet */
				ret = get_inode(rp, ino, &inode);
				if (!ret) {
					inc_nlink(rp, inode);
					ret = unlink_name(rp, names[i].parent, inode, names[i].name,
							  names[i].len);
					ret = put_inode(rp, inode, ret);
				}
				free(names);
				if (ret)
					return ret;
				goto again;
			}
			if (ret < 0) {
				free(names);
				return ret;
			}
		}
		free(names);
	}
	{
		struct tlog_dir_entry de;
		char name[256];
		int ret;

		/*
		 * An entry at the logged index, whatever its name (none when
		 * the caller found none: unlinking adds none).
		 */
		ret = index_free ? -ENOENT :
		      btrfs_lookup_dir_index(rp->root, nm->parent, nm->index, &de, name);
		if (ret == 0 && de.name_len == nm->len && memcmp(de.name, nm->name, nm->len) == 0)
			ret = drop_one_dir_item(rp, &de);
		else if (ret == 0 || ret == -ENOENT)
			ret = 0;
		if (ret)
			return ret;
		/* an entry with the logged name, whatever its inode */
		ret = btrfs_lookup_dir_entry(rp->root, nm->parent, nm->name, nm->len, &de);
		if (ret == 0) {
			de.dir = nm->parent;
			ret = drop_one_dir_item(rp, &de);
		} else if (ret == -ENOENT) {
			ret = 0;
		}
		return ret;
	}
}

/*
 * Whether the name is in place: both entries of @parent name @ino at
 * @index; *@index_free tells that @parent has no entry at @index at all.
 */
static int inode_in_dir(struct replay *rp, u64 ino, const struct tlog_ref_name *nm,
			bool *index_free)
{
	struct tlog_dir_entry de;
	char name[256];
	int ret;

	ret = btrfs_lookup_dir_index(rp->root, nm->parent, nm->index, &de, name);
	*index_free = ret == -ENOENT;
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	if (de.name_len != nm->len || memcmp(de.name, nm->name, nm->len) ||
	    de.location.objectid != ino)
		return 0;
	ret = btrfs_lookup_dir_entry(rp->root, nm->parent, nm->name, nm->len, &de);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	return de.location.objectid == ino;
}

/* Unlink the names under the ref key @key that the logged item @logged lacks. */
static int unlink_old_inode_refs(struct replay *rp, const struct btrfs_key *key,
				 const struct tlog_ref_name *logged, int nr_logged)
{
	for (;;) {
		struct tlog_ref_name *names, victim;
		struct tlog_inode *inode;
		struct btrfs_path path;
		bool found = false;
		int nr, ret;

		btrfs_init_path(&path);
		ret = btrfs_search_slot(rp->root, key, &path);
		if (ret == 0)
			ret = btrfs_decode_ref_item(path.nodes[0], path.slots[0], &names, &nr);
		btrfs_release_path(&path);
		if (ret)
			return ret > 0 ? 0 : ret;
		for (int i = 0; i < nr && !found; i++) {
			bool in_log = false;

			for (int j = 0; j < nr_logged && !in_log; j++)
				in_log = logged[j].parent == names[i].parent &&
					 logged[j].len == names[i].len &&
					 memcmp(logged[j].name, names[i].name, names[i].len) == 0;
			if (!in_log) {
				victim = names[i];
				found = true;
			}
		}
		free(names);
		if (!found)
			return 0;
		ret = get_inode(rp, key->objectid, &inode);
		if (!ret)
			ret = put_inode(rp, inode, unlink_name(rp, victim.parent, inode,
							       victim.name, victim.len));
		if (ret)
			return ret;
	}
}

/* The name's directory entries, as a link whose back reference the logged item brings. */
static int add_one_ref_name(struct replay *rp, u64 ino, const struct tlog_ref_name *nm)
{
	struct tlog_inode *parent, *inode;
	bool index_free;
	int ret;

	ret = inode_in_dir(rp, ino, nm, &index_free);
	if (ret)
		return ret < 0 ? ret : 0;
	ret = resolve_ref_conflicts(rp, ino, nm, index_free);
	if (ret)
		return ret;
	ret = get_inode(rp, nm->parent, &parent);
	if (ret)
		return ret;
	ret = get_inode(rp, ino, &inode);
	if (!ret) {
		ret = tlog_add_link(rp->mnt, parent, inode, nm->name, nm->len, nm->index, false);
		ret = put_inode(rp, inode, ret);
	}
	if (!ret)
		count_names(rp, ino, true);
	return put_inode(rp, parent, ret);
}

static int replay_inode_ref(struct replay *rp, const struct extent_buffer *leaf, int slot,
			    const struct btrfs_key *key)
{
	struct tlog_inode *inode;
	struct tlog_ref_name *names;
	bool changed;
	int nr, ret;

	ret = btrfs_decode_ref_item(leaf, slot, &names, &nr);
	if (ret)
		return ret;
	/* a parent that was not logged and is gone: the fixup sorts it out */
	if (nr == 0 || lookup_inode_exists(rp, names[0].parent, false) == -ENOENT) {
		free(names);
		return 0;
	}
	/* the inode must exist */
	ret = get_inode(rp, key->objectid, &inode);
	if (!ret)
		ret = put_inode(rp, inode, 0);
	if (ret)
		goto out;
	for (int i = 0; i < nr; i++) {
		if (i && key->type == BTRFS_INODE_EXTREF_KEY &&
		    lookup_inode_exists(rp, names[i].parent, false) == -ENOENT)
			continue;
		ret = add_one_ref_name(rp, key->objectid, &names[i]);
		if (ret == 1) {
			ret = 0;	/* the root directory's own reference */
			goto out;
		}
		if (ret)
			goto out;
	}
	ret = unlink_old_inode_refs(rp, key, names, nr);
	if (!ret)
		ret = btrfs_overwrite_item(rp->trans, rp->root, key, btrfs_item_ptr(leaf, slot),
					   btrfs_item_size(leaf, slot), &changed);
out:
	free(names);
	return ret;
}

/* ---- stage 3: file extents (as the kernel's replay_one_extent) ---- */

/* Whether the subvolume has exactly this (regular or prealloc) extent item. */
static int same_extent_present(struct replay *rp, const struct btrfs_key *key,
			       const struct btrfs_file_extent_item *fi)
{
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(rp->root, key, &path);
	if (ret == 0)
		ret = btrfs_item_size(path.nodes[0], path.slots[0]) == sizeof(*fi) &&
		      memcmp(btrfs_item_ptr(path.nodes[0], path.slots[0]), fi, sizeof(*fi)) == 0;
	else if (ret > 0)
		ret = 0;
	btrfs_release_path(&path);
	return ret;
}

/* A reference for the logged extent: one more, or its extent item if it has none. */
static int reference_logged_extent(struct replay *rp, const struct btrfs_key *key,
				   const struct tlog_file_extent *fe)
{
	u64 bytenr = fe->disk_bytenr;
	u64 len = fe->disk_num_bytes;
	u64 offset = key->offset - fe->offset;
	u64 root = rp->root->root_key.objectid;
	struct btrfs_key ekey = { bytenr, BTRFS_EXTENT_ITEM_KEY, len };
	struct btrfs_root *eroot;
	int ret;

	ret = btrfs_read_root(rp->fs, BTRFS_EXTENT_TREE_OBJECTID, &eroot);
	if (!ret)
		ret = item_exists(eroot, &ekey);
	if (ret < 0)
		return ret;
	if (ret)
		return btrfs_add_data_ref(rp->trans, bytenr, len, root, key->objectid, offset);
	return btrfs_claim_logged_data_extent(rp->trans, bytenr, len, root, key->objectid, offset);
}

/* Logged checksums of the extent replace the csum tree's. */
static int copy_logged_csums(struct replay *rp, const struct tlog_file_extent *fe)
{
	u64 start, end, copied;

	if (fe->compression) {
		start = fe->disk_bytenr;
		end = start + fe->disk_num_bytes;
	} else {
		start = fe->disk_bytenr + fe->offset;
		end = start + fe->num_bytes;
	}
	return btrfs_copy_csums(rp->trans, rp->log, start, end, &copied);
}

static int replay_one_extent(struct replay *rp, const struct extent_buffer *leaf, int slot,
			     const struct btrfs_key *key)
{
	u32 size = btrfs_item_size(leaf, slot), ss = rp->fs->sectorsize;
	const struct btrfs_file_extent_item *fi = btrfs_item_ptr(leaf, slot);
	struct tlog_file_extent fe;
	struct tlog_inode *inode;
	u64 start = key->offset, end, nbytes = 0;
	bool inl, changed;
	int ret;

	ret = btrfs_decode_file_extent(rp->fs, leaf, slot, key, &fe);
	if (ret)
		return ret;
	inl = fe.type == BTRFS_FILE_EXTENT_INLINE;
	if (inl) {
		nbytes = fe.ram_bytes;
		end = round_up(start + nbytes, ss);
	} else {
		end = fe.end;
		if (fe.disk_bytenr)
			nbytes = fe.num_bytes;
	}
	ret = get_inode(rp, key->objectid, &inode);
	if (ret)
		return ret;
	if (!inl) {
		ret = same_extent_present(rp, key, fi);
		if (ret)
			return put_inode(rp, inode, ret < 0 ? ret : 0);
	}
	ret = tlog_drop_extents(rp->mnt, inode, start, end);
	if (ret)
		return put_inode(rp, inode, ret);
	if (inl) {
		ret = btrfs_overwrite_item(rp->trans, rp->root, key, fi, size, &changed);
	} else if (fe.disk_bytenr == 0) {
		/* a hole: an item only without NO_HOLES */
		if (!(rp->fs->incompat & BTRFS_FEATURE_INCOMPAT_NO_HOLES))
			ret = btrfs_insert_item(rp->trans, rp->root, key, fi, sizeof(*fi));
	} else {
		ret = btrfs_insert_item(rp->trans, rp->root, key, fi, sizeof(*fi));
		if (!ret)
			ret = reference_logged_extent(rp, key, &fe);
		if (!ret)
			ret = copy_logged_csums(rp, &fe);
	}
	if (ret)
		return put_inode(rp, inode, ret);
	STAT(rp, key->objectid, data_bytes, += nbytes);
	if (rp->stats)
		rp->stats->data_bytes += nbytes;
	tlog_inode_add_bytes(inode, (s64)nbytes);
	tlog_inode_mark_dirty(rp->mnt, inode);
	return put_inode(rp, inode, 0);
}

/* ---- link count fixup (as the kernel's fixup_inode_link_counts) ---- */

/* The inode's link count becomes the number of its names; the count is left in *@nlink. */
static int recount_links(struct replay *rp, u64 ino, u32 *nlink, u32 *mode)
{
	struct tlog_inode *inode;
	int ret;

	ret = get_inode(rp, ino, &inode);
	if (ret)
		return ret;
	*mode = tlog_inode_mode(inode);
	ret = btrfs_count_inode_names(rp->root, ino, nlink);
	if (!ret && *nlink != btrfs_inode_item_nlink(&inode->item)) {
		btrfs_set_inode_item_nlink(&inode->item, *nlink);
		tlog_inode_mark_dirty(rp->mnt, inode);
	}
	return put_inode(rp, inode, ret);
}

static int fixup_inode_link_count(struct replay *rp, u64 ino)
{
	struct btrfs_key orphan = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, ino };
	u32 nlink, mode;
	int ret;

	ret = recount_links(rp, ino, &nlink, &mode);
	if (ret)
		return ret;
	if (nlink)
		return 0;
	if (S_ISDIR(mode)) {
		ret = replay_dir_deletes(rp, ino, true);
		if (ret)
			return ret;
	}
	/* left for orphan cleanup, as the kernel leaves it until the next mount */
	ret = btrfs_insert_item(rp->trans, rp->root, &orphan, NULL, 0);
	if (ret == -EEXIST)
		ret = 0;
	if (!ret)
		STAT(rp, ino, orphaned, = true);
	return ret;
}

/* Recount every inode on the fixup list, highest first; the list may grow. */
static int fixup_inode_link_counts(struct replay *rp)
{
	u64 ino;

	while (fixup_list_pop(rp, &ino)) {
		int ret = fixup_inode_link_count(rp, ino);

		if (ret)
			return ret;
	}
	return 0;
}

/* ---- walking the log ---- */

static int replay_item(struct replay *rp, const struct extent_buffer *leaf, int slot,
		       const struct btrfs_key *key)
{
	if (key->type == BTRFS_INODE_ITEM_KEY) {
		const struct btrfs_inode_item *ii;
		int ret = btrfs_decode_inode_item(rp->fs, leaf, slot, key, &ii, NULL, 0);

		if (ret)
			return ret;
		/* an inode without links (tmpfile, unlinked, replaced): skip it all */
		rp->ignore_cur_inode = btrfs_inode_item_nlink(ii) == 0;
		if (rp->ignore_cur_inode) {
			if (rp->stage == REPLAY_INODES)
				STAT(rp, key->objectid, ignored, = true);
			return 0;
		}
		if (rp->stage == REPLAY_INODES)
			return replay_inode_item(rp, key, ii);
	}
	if (rp->ignore_cur_inode)
		return 0;
	if (rp->stage == REPLAY_DIR_INDEX && key->type == BTRFS_DIR_INDEX_KEY) {
		int ret = btrfs_for_each_dir_entry(leaf, slot, dir_index_cb, rp);

		return ret == 1 ? 0 : ret;
	}
	if (rp->stage != REPLAY_ALL)
		return 0;
	switch (key->type) {
	case BTRFS_XATTR_ITEM_KEY: {
		bool changed;

		return btrfs_overwrite_item(rp->trans, rp->root, key, btrfs_item_ptr(leaf, slot),
					    btrfs_item_size(leaf, slot), &changed);
	}
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		return replay_inode_ref(rp, leaf, slot, key);
	case BTRFS_EXTENT_DATA_KEY:
		return replay_one_extent(rp, leaf, slot, key);
	}
	return 0;
}

static int walk_log(struct replay *rp)
{
	struct btrfs_key min = { 0, 0, 0 };
	struct btrfs_key max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_key prev = { 0 };
	struct btrfs_tree_iter iter;
	int ret = 0;

	btrfs_for_each_item(rp->log, &iter, &min, &max) {
		struct tlog_replay_stats *st = rp->stats;

		if (st && st->progress && iter.slot == 0)
			st->progress(st->progress_arg, ++rp->leaves_done, 3 * st->log_leaves);
		/*
		 * The kernel checks each log leaf's items as it reads them and
		 * refuses the mount over one it would not accept; so do we,
		 * on the first walk, before anything is changed.
		 */
		if (rp->stage == REPLAY_INODES) {
			ret = btrfs_check_item(rp->fs, iter.leaf, iter.slot, &iter.key,
					       iter.slot ? &prev : NULL);
			if (ret)
				break;	/* the finding names its place */
		}
		prev = iter.key;
		ret = replay_item(rp, iter.leaf, iter.slot, &iter.key);
		if (ret) {
			char where[160];

			snprintf(where, sizeof(where),
				 "log of subvolume %llu, block %llu, item (%llu %u %llu)",
				 (unsigned long long)rp->root->root_key.objectid,
				 (unsigned long long)iter.leaf->start,
				 (unsigned long long)iter.key.objectid, iter.key.type,
				 (unsigned long long)iter.key.offset);
			ret = tlog_error_wrap(ret, where);
			break;
		}
	}
	if (!ret && iter.ret < 0) {
		char where[80];

		snprintf(where, sizeof(where), "reading the log of subvolume %llu",
			 (unsigned long long)rp->root->root_key.objectid);
		ret = tlog_error_wrap(iter.ret, where);
	}
	btrfs_tree_iter_end(&iter);
	return ret;
}

/*
 * With mixed block groups, data extents only a log knows of lie in the
 * space tree blocks are allocated from: keep them out too (the log root
 * tree's items are no file extents, and are skipped by their key type).
 */
static int pin_logged_data(struct replay *rp, const struct extent_buffer *leaf)
{
	for (u32 i = 0; i < btrfs_header_nritems_eb(leaf); i++) {
		struct tlog_file_extent fe;
		struct btrfs_key key;
		int ret;

		/* not judged yet: the replay's first walk checks the items */
		btrfs_item_key_to_cpu(leaf, &key, i);
		if (key.type != BTRFS_EXTENT_DATA_KEY ||
		    btrfs_parse_file_extent(btrfs_item_ptr(leaf, i), btrfs_item_size(leaf, i),
					    key.offset, &fe) ||
		    fe.type == BTRFS_FILE_EXTENT_INLINE || !fe.disk_bytenr)
			continue;
		ret = tlog_trans_pin(rp->trans, fe.disk_bytenr, fe.disk_num_bytes);
		if (ret)
			return ret;
	}
	return 0;
}

/* Keep a log block out of the transaction's allocations, and count it. */
static int pin_log_block(struct tlog_fs *fs, const struct extent_buffer *eb, bool in_root_tree,
			 void *arg)
{
	struct replay *rp = arg;
	int ret;

	ret = tlog_trans_pin(rp->trans, eb->start, fs->nodesize);
	if (rp->stats) {
		rp->stats->log_blocks++;
		if (btrfs_header_level_eb(eb) == 0 && !in_root_tree)
			rp->stats->log_leaves++;
	}
	if (!ret && btrfs_header_level_eb(eb) == 0 &&
	    (fs->incompat & BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS))
		ret = pin_logged_data(rp, eb);
	return ret;
}

#define QGROUP_STATUS_FLAG_RESCAN		(1ULL << 1)
#define QGROUP_STATUS_FLAG_INCONSISTENT		(1ULL << 2)

/* Zero every qgroup's counters, as starting a rescan does. */
static int zero_qgroup_counters(struct replay *rp, struct btrfs_root *quota)
{
	struct btrfs_key key = { 0, BTRFS_QGROUP_INFO_KEY, 0 };

	for (;;) {
		struct btrfs_path path;
		char note[256];
		int ret;

		btrfs_init_path(&path);
		ret = btrfs_search_forward(quota, &key, &path);
		while (ret == 0) {
			btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
			if (key.type == BTRFS_QGROUP_INFO_KEY)
				break;
			ret = btrfs_next_item(quota, &path);
		}
		btrfs_release_path(&path);
		if (ret)
			return ret > 0 ? 0 : ret;
		ret = btrfs_search_slot_for_write(rp->trans, quota, &key, &path, 0);
		/* a counter that cannot be read is left for the rescan to redo */
		if (ret == 0 && btrfs_fixed_item_at(path.nodes[0], path.slots[0], &key, note,
						    sizeof(note))) {
			struct btrfs_qgroup_info_item *qi = btrfs_item_ptr(path.nodes[0],
									   path.slots[0]);

			btrfs_set_qgroup_info_item_rfer(qi, 0);
			btrfs_set_qgroup_info_item_rfer_cmpr(qi, 0);
			btrfs_set_qgroup_info_item_excl(qi, 0);
			btrfs_set_qgroup_info_item_excl_cmpr(qi, 0);
		}
		btrfs_release_path(&path);
		if (ret < 0)
			return ret;
		if (key.offset == (u64)-1)
			return 0;
		key.offset++;
	}
}

/*
 * Quota groups count the bytes each subvolume references; replay changes
 * them and does not account them one by one.  Start a rescan instead, as
 * `btrfs quota rescan` does (counters zeroed, inconsistent, rescan from
 * the start pending): the kernel runs it at the next mount, and btrfs
 * check expects differences meanwhile.
 */
static int request_qgroup_rescan(struct replay *rp)
{
	struct btrfs_key key = { 0, BTRFS_QGROUP_STATUS_KEY, 0 };
	struct btrfs_root *quota;
	struct btrfs_path path;
	int ret;

	ret = btrfs_find_root(rp->fs, BTRFS_QUOTA_TREE_OBJECTID, &quota);
	if (ret == -ENOENT)
		return 0;	/* quotas are off */
	if (ret)
		return ret;
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(rp->trans, quota, &key, &path, 0);
	if (ret == 0 && btrfs_item_size(path.nodes[0], path.slots[0]) >=
	    offsetof(struct btrfs_qgroup_status_item, enable_gen)) {
		struct btrfs_qgroup_status_item *st = btrfs_item_ptr(path.nodes[0], path.slots[0]);

		btrfs_set_qgroup_status_item_flags(st, btrfs_qgroup_status_item_flags(st) |
						   QGROUP_STATUS_FLAG_RESCAN |
						   QGROUP_STATUS_FLAG_INCONSISTENT);
		btrfs_set_qgroup_status_item_rescan(st, 0);
		btrfs_set_qgroup_status_item_generation(st, rp->trans->transid);
		if (rp->stats)
			rp->stats->qgroup_rescan = true;
	}
	btrfs_release_path(&path);
	if (ret < 0)
		return ret;
	return ret ? 0 : zero_qgroup_counters(rp, quota);
}

/* Replay the log of subvolume @subvol for the current stage. */
static int replay_subvol_stage(struct replay *rp, u64 subvol)
{
	struct tlog_replay_stats *stats = rp->stats;
	int ret;

	ret = btrfs_find_root(rp->fs, subvol, &rp->root);
	if (ret == -ENOENT) {
		/* a deleted subvolume: its log is dropped, as the kernel does */
		if (stats && rp->stage == REPLAY_INODES)
			stats->subvols_skipped++;
		return 0;
	}
	/* replay looks up a file's items one after the other: mostly one leaf */
	if (!ret)
		ret = btrfs_root_hint_start(rp->root);
	if (!ret)
		ret = btrfs_read_log_root(rp->fs, subvol, &rp->log);
	if (!ret)
		ret = walk_log(rp);
	if (!ret && rp->stage == REPLAY_ALL)
		ret = fixup_inode_link_counts(rp);
	if (rp->root)
		btrfs_root_hint_end(rp->root);
	if (!ret && stats && rp->stage == REPLAY_INODES)
		stats->subvols++;
	return ret;
}

int btrfs_replay_log(struct tlog_trans *trans, struct tlog_replay_stats *stats)
{
	struct tlog_fs *fs = trans->fs;
	struct replay rp = { .trans = trans, .fs = fs, .stats = stats };
	struct tlog_log_subvols subvols;
	int ret;

	tlog_error_clear();
	if (!fs->log_root_tree)
		return 0;
	ret = tlog_log_list_subvols(fs, TLOG_LOG_HIGHEST_FIRST, &subvols);
	if (ret)
		return tlog_error_wrap(ret, "reading the log root tree");
	if (stats)
		stats->log_blocks = 0;
	ret = tlog_mount_attach(trans, &rp.mnt);
	if (!ret)
		ret = tlog_log_for_each_block(fs, pin_log_block, &rp);
	for (rp.stage = REPLAY_INODES; !ret && rp.stage <= REPLAY_ALL; rp.stage++)
		for (size_t i = 0; !ret && i < subvols.nr; i++)
			ret = replay_subvol_stage(&rp, subvols.ids[i]);
	{
		int err = tlog_mount_detach(rp.mnt);

		if (!ret)
			ret = err;
	}
	tlog_log_subvols_free(&subvols);
	free(rp.fixups.v);
	if (!ret)
		ret = tlog_trans_run_deferred_frees(trans);
	if (!ret)
		ret = request_qgroup_rescan(&rp);
	return ret;
}

int tlog_apply_log_overlay(struct tlog_fs *fs)
{
	struct tlog_trans *trans;
	int ret;

	tlog_error_clear();
	if (!fs->log_root_tree || fs->overlay)
		return 0;
	ret = tlog_trans_start_flags(fs, TLOG_TRANS_LOG_REPLAY | TLOG_TRANS_IN_MEMORY, &trans);
	if (ret)
		return ret;
	ret = btrfs_replay_log(trans, NULL);
	if (ret) {
		tlog_trans_abort(trans);
		return ret;
	}
	fs->overlay = trans;
	return 0;
}
