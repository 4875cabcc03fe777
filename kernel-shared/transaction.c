// SPDX-License-Identifier: GPL-2.0-only
/*
 * Transactions on an image: allocation of tree blocks, the bookkeeping of
 * commit (extent items, free space tree, block group used, root items) and
 * the write order that keeps the committed state intact until the new
 * superblock is on disk.
 *
 * Tree block references are recorded at commit rather than as blocks are
 * allocated, because recording them changes the extent and free space
 * trees, which allocates and frees more blocks: commit runs the pending
 * records until a pass leaves nothing new, as the kernel runs its delayed
 * references.
 *
 * The log (tlog_trans_log_tree, tlog_trans_sync_log) lives beside the
 * transaction, as the kernel's log trees live beside its running one:
 *
 *  - Its blocks come from metadata space free both in the committed state
 *    and in this transaction, and never from a chunk made in it.  They get
 *    no extent item, no free space tree change, no back reference, and are
 *    never counted in a block group's used bytes.
 *  - They are taken out of the transaction's free space for good: the
 *    transaction's own trees never get one, and one COWed away after a
 *    sync stays unusable until the commit (the synced log points at it).
 *    Only a block that never reached the disk goes back at once.
 *  - Log blocks are dirty on fs->log_dirty_blocks, written by the log sync
 *    alone; the commit writes none of them and ends the log (log_root 0).
 *  - A sync writes the superblock of the last commit with log_root set,
 *    primary copy only: the committed state is never touched.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "array.h"
#include "backref.h"
#include "blockdev.h"
#include "block-group.h"
#include "csum.h"
#include "super.h"
#include "errctx.h"
#include "extent-tree.h"
#include "free-space-tree.h"
#include "root-tree.h"
#include "transaction.h"
#include "tree-checker.h"
#include "tree-log.h"
#include "volumes.h"

struct block_rec {
	u64 bytenr;
	u64 owner;
	int level;
};

struct rec_list {
	struct block_rec *v;
	size_t nr, cap;
};

struct trans_state {
	struct tlog_trans trans;
	struct tlog_block_groups bgs;
	struct rec_list pending_new;	/* allocated, extent item not yet inserted */
	struct rec_list recorded_new;	/* allocated and recorded in this transaction */
	struct rec_list pending_free;	/* extent item to delete */
	struct rec_list pinned;		/* free only after the superblock is written */
	struct btrfs_root *dirty_roots[64];
	int nr_dirty_roots;
	unsigned int flags;		/* TLOG_TRANS_* */
	struct free_range *deferred;	/* data extents whose last reference went */
	size_t nr_deferred, cap_deferred;
	bool allocating_chunk;		/* no new chunk while making one */
	u64 system_reserve;		/* grow SYSTEM space below this */
	/* ---- the log of this transaction ---- */
	struct btrfs_root **logs;	/* log trees, in creation order */
	size_t nr_logs, cap_logs;
	bool own_log;			/* fs->log_root_tree is this transaction's */
	bool log_synced;		/* the primary superblock points at our log */
	struct rec_list log_unsynced;	/* log blocks allocated since the last sync */
	struct btrfs_super_block committed_super;	/* as the last commit wrote it */
	char full_commit[128];		/* why the log cannot be used ("": it can) */
};

/*
 * The image allocator's state around @trans.  Only for transactions
 * started by tlog_trans_start_flags() (ops == &image_trans_ops): other
 * allocators keep their own state in trans->priv.
 */
static struct trans_state *state_of(struct tlog_trans *trans)
{
	return container_of(trans, struct trans_state, trans);
}

static int rec_push(struct rec_list *l, const struct block_rec *r)
{
	if (array_reserve(l->v, l->cap, l->nr + 1))
		return -ENOMEM;
	l->v[l->nr++] = *r;
	return 0;
}

/* Remove the record of @bytenr from @l; true if it was there. */
static bool rec_take(struct rec_list *l, u64 bytenr)
{
	for (size_t i = l->nr; i-- > 0;) {
		if (l->v[i].bytenr != bytenr)
			continue;
		l->v[i] = l->v[--l->nr];
		return true;
	}
	return false;
}

static int mark_root_dirty(struct trans_state *st, struct btrfs_root *root)
{
	for (int i = 0; i < st->nr_dirty_roots; i++)
		if (st->dirty_roots[i] == root)
			return 0;
	if (st->nr_dirty_roots == (int)(sizeof(st->dirty_roots) / sizeof(st->dirty_roots[0])))
		return tlog_error(-E2BIG, "too many trees changed in one transaction");
	st->dirty_roots[st->nr_dirty_roots++] = root;
	return 0;
}

/* ---- allocator ops ---- */

/* Metadata kept free so that making a new chunk never runs out itself. */
#define METADATA_RESERVE(fs) (64ULL * (fs)->nodesize)

/* A new chunk of @type, once at a time. */
static int grow_space(struct trans_state *st, u64 type)
{
	int err;

	if (st->allocating_chunk)
		return -ENOSPC;
	st->allocating_chunk = true;
	/*
	 * A chunk item goes into the chunk tree, in SYSTEM space: make sure
	 * that has room first, as the kernel checks before each new chunk.
	 */
	/*
	 * A log block in a chunk the committed chunk tree does not know would
	 * be unreadable at mount: the kernel's btrfs_make_block_group forces a
	 * full commit of the transaction that makes one.  Set before trying:
	 * a failed attempt may have changed trees already.
	 */
	tlog_trans_set_needs_full_commit(&st->trans, "a chunk was allocated");
	err = 0;
	if (type != BTRFS_BLOCK_GROUP_SYSTEM &&
	    btrfs_free_bytes(&st->bgs, BTRFS_BLOCK_GROUP_SYSTEM) < st->system_reserve)
		err = btrfs_alloc_chunk(&st->trans, &st->bgs, BTRFS_BLOCK_GROUP_SYSTEM);
	if (!err)
		err = btrfs_alloc_chunk(&st->trans, &st->bgs, type);
	st->allocating_chunk = false;
	return err;
}

/* With mixed block groups, data and metadata share DATA|METADATA groups. */
static u64 space_type(const struct tlog_fs *fs, u64 type)
{
	if ((fs->incompat & BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS) &&
	    (type == BTRFS_BLOCK_GROUP_DATA || type == BTRFS_BLOCK_GROUP_METADATA))
		return BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA;
	return type;
}

/* Take space, adding a chunk when the groups of @type are full. */
static int alloc_space(struct trans_state *st, u64 type, u64 len, u64 align, u64 *ret)
{
	int err;

	type = space_type(st->trans.fs, type);
	err = btrfs_alloc_range(&st->bgs, type, len, align, 0, ret);
	if (err == -ENOSPC) {
		struct tlog_errsave saved;

		/*
		 * find_free_extent's LOOP_ALLOC_CHUNK: a new chunk, then the
		 * groups without a class and, past them, of any class.
		 */
		tlog_error_save(&saved);
		err = grow_space(st, type);
		if (!err || err == -ENOSPC) {
			tlog_error_restore(&saved);
			err = btrfs_alloc_range(&st->bgs, type, len, align,
						BTRFS_ALLOC_ANY_SIZE_CLASS, ret);
		}
	}
	if (!err)
		st->trans.fs->data_cursor = st->bgs.data_cursor;
	return err;
}

/* Log trees and the log root tree all carry the log's objectid. */
static bool is_log_root(const struct btrfs_root *root)
{
	return root->root_key.objectid == BTRFS_TREE_LOG_OBJECTID;
}

/*
 * A block for the log: free space of the metadata groups as they stand in
 * this transaction (which is also free in the committed state: what the
 * transaction freed stays pinned), never a new chunk, and never the
 * reserve the commit itself needs.  The kernel falls back to a full
 * commit when the log finds no space.
 */
static int log_alloc_block(struct trans_state *st, u64 *bytenr)
{
	struct tlog_fs *fs = st->trans.fs;
	u64 type = space_type(fs, BTRFS_BLOCK_GROUP_METADATA);
	struct block_rec rec = { 0, BTRFS_TREE_LOG_OBJECTID, 0 };
	int err;

	if (btrfs_free_bytes(&st->bgs, type) < METADATA_RESERVE(fs) + fs->nodesize) {
		tlog_trans_set_needs_full_commit(&st->trans, "no metadata space for the log");
		return tlog_error(-ENOSPC, "no metadata space left for the log");
	}
	err = btrfs_alloc_range(&st->bgs, type, fs->nodesize, fs->nodesize, 0, bytenr);
	if (err)
		return err;
	rec.bytenr = *bytenr;
	return rec_push(&st->log_unsynced, &rec);
}

/*
 * A log block left its tree: one that never reached the disk is free at
 * once; one a sync wrote stays out of use until the commit, since the
 * synced log (what a power cut leaves) may still point at it.
 */
static int log_free_block(struct trans_state *st, u64 bytenr)
{
	if (rec_take(&st->log_unsynced, bytenr))
		return btrfs_free_range(&st->bgs, bytenr, st->trans.fs->nodesize);
	return 0;
}

static int trans_alloc_block(struct tlog_trans *trans, struct btrfs_root *root, int level,
			     u64 *bytenr)
{
	struct trans_state *st = state_of(trans);
	struct tlog_fs *fs = trans->fs;
	u64 type = space_type(fs, root->root_key.objectid == BTRFS_CHUNK_TREE_OBJECTID ?
				  BTRFS_BLOCK_GROUP_SYSTEM : BTRFS_BLOCK_GROUP_METADATA);
	struct block_rec rec;
	int err;

	if (is_log_root(root))
		return log_alloc_block(st, bytenr);
	/*
	 * Add space before it is short, not when nothing is left: making a
	 * chunk changes trees itself (for a SYSTEM chunk, the chunk tree, which
	 * lives in SYSTEM space).
	 */
	if (!st->allocating_chunk &&
	    btrfs_free_bytes(&st->bgs, type) < (type == BTRFS_BLOCK_GROUP_SYSTEM ?
						st->system_reserve : METADATA_RESERVE(fs))) {
		err = grow_space(st, type);
		if (err && err != -ENOSPC)
			return err;
	}
	err = alloc_space(st, type, fs->nodesize, fs->nodesize, bytenr);
	if (err)
		return err;
	rec = (struct block_rec){ *bytenr, root->root_key.objectid, level };
	err = rec_push(&st->pending_new, &rec);
	return err ? err : mark_root_dirty(st, root);
}

static int trans_free_block(struct tlog_trans *trans, struct btrfs_root *root, u64 bytenr,
			    int level)
{
	struct trans_state *st = state_of(trans);
	struct block_rec rec = { bytenr, root->root_key.objectid, level };
	int err;

	if (is_log_root(root))
		return log_free_block(st, bytenr);
	err = mark_root_dirty(st, root);
	if (err)
		return err;
	/* never recorded anywhere: its space is simply free again */
	if (rec_take(&st->pending_new, bytenr))
		return btrfs_free_range(&st->bgs, bytenr, trans->fs->nodesize);
	return rec_push(&st->pending_free, &rec);
}

/* Log blocks have no references to sort out: they are in no extent item. */
static int trans_cow_block(struct tlog_trans *trans, struct btrfs_root *root,
			   const struct extent_buffer *buf, const struct extent_buffer *cow,
			   bool *last_ref)
{
	if (is_log_root(root)) {
		*last_ref = true;
		return 0;
	}
	return btrfs_update_ref_for_cow(trans, root, buf, cow, last_ref);
}

static const struct tlog_trans_ops image_trans_ops = {
	.alloc_tree_block = trans_alloc_block,
	.free_tree_block = trans_free_block,
	.cow_tree_block = trans_cow_block,
};

static struct btrfs_timespec clock_now(void)
{
	struct btrfs_timespec now;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	btrfs_set_timespec_sec(&now, (u64)ts.tv_sec);
	btrfs_set_timespec_nsec(&now, (u32)ts.tv_nsec);
	return now;
}

int tlog_trans_start_flags(struct tlog_fs *fs, unsigned int flags, struct tlog_trans **ret)
{
	struct trans_state *st;
	int err;

	if (!(flags & TLOG_TRANS_IN_MEMORY) && (!fs->bdev || !fs->bdev->writable))
		return tlog_error(-EROFS, "the image is open read-only");
	if (fs->log_root_tree && !(flags & TLOG_TRANS_LOG_REPLAY))
		return tlog_error(-EBUSY, "the image has a log tree: replay or discard it first");
	if (fs->incompat & BTRFS_FEATURE_INCOMPAT_METADATA_UUID)
		return tlog_error(-EOPNOTSUPP, "writing to this feature set is not supported yet");
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	err = btrfs_load_block_groups(fs, &st->bgs);
	if (err) {
		free(st);
		return err;
	}
	st->bgs.data_cursor = fs->data_cursor;
	st->trans = (struct tlog_trans){ .fs = fs, .transid = fs->generation + 1,
					 .now = clock_now(), .ops = &image_trans_ops };
	st->system_reserve = 16ULL * fs->nodesize;
	st->flags = flags;
	st->committed_super = fs->super;
	*ret = &st->trans;
	return 0;
}

int tlog_trans_start(struct tlog_fs *fs, struct tlog_trans **ret)
{
	return tlog_trans_start_flags(fs, 0, ret);
}

struct tlog_block_groups *tlog_trans_block_groups(struct tlog_trans *trans)
{
	return trans->ops == &image_trans_ops ? &state_of(trans)->bgs : NULL;
}

int tlog_trans_pin(struct tlog_trans *trans, u64 bytenr, u64 len)
{
	return btrfs_exclude_range(&state_of(trans)->bgs, bytenr, len);
}

bool tlog_trans_defers_frees(struct tlog_trans *trans)
{
	return trans->ops == &image_trans_ops &&
	       (state_of(trans)->flags & TLOG_TRANS_LOG_REPLAY);
}

int tlog_trans_defer_data_free(struct tlog_trans *trans, u64 bytenr, u64 len)
{
	struct trans_state *st = state_of(trans);

	if (array_reserve(st->deferred, st->cap_deferred, st->nr_deferred + 1))
		return -ENOMEM;
	st->deferred[st->nr_deferred++] = (struct free_range){ bytenr, len };
	return 0;
}

int tlog_trans_run_deferred_frees(struct tlog_trans *trans)
{
	struct trans_state *st;
	int err = 0;

	if (trans->ops != &image_trans_ops)
		return 0;
	st = state_of(trans);
	while (!err && st->nr_deferred) {
		struct free_range r = st->deferred[--st->nr_deferred];

		err = btrfs_finish_data_free(trans, r.start, r.len);
	}
	return err;
}

static void free_state(struct trans_state *st)
{
	free(st->logs);
	free(st->log_unsynced.v);
	free(st->deferred);
	btrfs_free_block_groups(&st->bgs);
	free(st->pending_new.v);
	free(st->recorded_new.v);
	free(st->pending_free.v);
	free(st->pinned.v);
	free(st);
}

/* Forget every block on @list: never written, their contents are lost. */
static void forget_dirty(struct tlog_fs *fs, struct list_head *list)
{
	while (!list_empty(list)) {
		struct extent_buffer *eb = list_first_entry(list, struct extent_buffer, dirty_list);

		btrfs_forget_tree_block(fs, eb->start);
	}
}

/*
 * The transaction ends: its log goes too.  Unsynced log blocks are
 * forgotten; the cached synced ones stay right.  When a sync wrote the
 * log, the image now has it, exactly as after a power cut: @fs shows it
 * as an open would (replay or discard it before the next transaction).
 */
static int end_own_log(struct trans_state *st, bool committed)
{
	struct tlog_fs *fs = st->trans.fs;
	struct btrfs_root *lrt;

	forget_dirty(fs, &fs->log_dirty_blocks);
	if (!st->own_log)
		return 0;
	btrfs_drop_log_roots(fs);
	st->own_log = false;
	st->nr_logs = 0;
	if (committed || !st->log_synced || !btrfs_super_block_log_root(&fs->super))
		return 0;
	lrt = calloc(1, sizeof(*lrt));
	if (!lrt)
		return -ENOMEM;
	lrt->fs = fs;
	lrt->root_key = (struct btrfs_key){ BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0 };
	tlog_log_open(fs, lrt);
	fs->log_root_tree = lrt;
	return 0;
}

void tlog_trans_abort(struct tlog_trans *trans)
{
	struct tlog_fs *fs = trans->fs;

	/* new blocks are forgotten; the cached copies of the old ones are still right */
	forget_dirty(fs, &fs->dirty_blocks);
	if (trans->ops == &image_trans_ops)
		end_own_log(state_of(trans), false);
	free_state(state_of(trans));
}

/* ---- recording references ---- */

/* The extent item of a new tree block: refs 1, one inline TREE_BLOCK_REF. */
static int insert_tree_block_ref(struct tlog_trans *trans, const struct block_rec *r)
{
	struct tlog_fs *fs = trans->fs;
	u8 buf[sizeof(struct btrfs_extent_item) + sizeof(struct btrfs_tree_block_info) +
	       sizeof(struct btrfs_extent_inline_ref)] = { 0 };
	struct btrfs_extent_item *ei = (struct btrfs_extent_item *)buf;
	struct btrfs_extent_inline_ref *iref;
	struct btrfs_key key = btrfs_tree_block_extent_key(fs, r->bytenr, r->level);
	struct btrfs_root *root;
	u32 size = sizeof(*ei);
	int err;

	err = btrfs_read_root(trans->fs, BTRFS_EXTENT_TREE_OBJECTID, &root);
	if (err)
		return err;
	btrfs_set_extent_item_refs(ei, 1);
	btrfs_set_extent_item_generation(ei, trans->transid);
	btrfs_set_extent_item_flags(ei, BTRFS_EXTENT_FLAG_TREE_BLOCK);
	if (!btrfs_fs_skinny(fs)) {
		struct btrfs_tree_block_info *info = (void *)(buf + size);
		const struct extent_buffer *eb = btrfs_find_cached_block(fs, r->bytenr);

		if (eb && btrfs_header_nritems_eb(eb))
			info->key = r->level ? btrfs_key_ptr_nr(eb, 0)->key : btrfs_item_nr(eb, 0)->key;
		btrfs_set_tree_block_info_level(info, r->level);
		size += sizeof(*info);
	}
	iref = (void *)(buf + size);
	btrfs_set_extent_inline_ref_type(iref, BTRFS_TREE_BLOCK_REF_KEY);
	btrfs_set_extent_inline_ref_offset(iref, r->owner);
	size += sizeof(*iref);
	return btrfs_insert_item(trans, root, &key, buf, size);
}

/*
 * The last reference of a tree block may be a keyed item of its own (a
 * snapshot's reference, added after the extent item was written): it goes
 * with the extent item.
 */
static int delete_keyed_block_refs(struct tlog_trans *trans, struct btrfs_root *eroot, u64 bytenr)
{
	for (;;) {
		struct btrfs_key key = { bytenr, BTRFS_TREE_BLOCK_REF_KEY, 0 };
		struct btrfs_path path;
		int ret;

		btrfs_init_path(&path);
		ret = btrfs_search_forward(eroot, &key, &path);
		if (ret == 0) {
			btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
			if (key.objectid != bytenr || (key.type != BTRFS_TREE_BLOCK_REF_KEY &&
						       key.type != BTRFS_SHARED_BLOCK_REF_KEY))
				ret = 1;
		}
		btrfs_release_path(&path);
		if (ret)
			return ret > 0 ? 0 : ret;
		ret = btrfs_delete_item(trans, eroot, &key);
		if (ret)
			return ret;
	}
}

/* Delete the extent item of a tree block that left its tree. */
static int delete_tree_block_ref(struct tlog_trans *trans, const struct block_rec *r)
{
	struct tlog_fs *fs = trans->fs;
	struct btrfs_key key = btrfs_tree_block_extent_key(fs, r->bytenr, r->level);
	struct btrfs_root *root;
	struct btrfs_path path;
	int ret;

	ret = btrfs_search_extent_tree(trans, &key, -1, &root, &path);
	if (ret < 0)
		return ret;
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "tree block %llu has no extent item",
				 (unsigned long long)r->bytenr);
	if (ret == 0) {
		struct tlog_extent_item ei;

		if (btrfs_parse_extent_item(btrfs_item_ptr(path.nodes[0], path.slots[0]),
					    btrfs_item_size(path.nodes[0], path.slots[0]), &key, &ei) ||
		    ei.refs != 1)
			ret = tlog_error(-EOPNOTSUPP,
					 "tree block %llu is shared (snapshots); the write path does not handle that yet",
					 (unsigned long long)r->bytenr);
		else
			ret = btrfs_del_items(trans, root, &path, path.slots[0], 1);
	}
	btrfs_release_path(&path);
	return ret ? ret : delete_keyed_block_refs(trans, root, r->bytenr);
}

/*
 * Count @delta bytes in the group of @bytenr; *@bg gets a copy of the group,
 * since the array may move when changing the free space tree adds a chunk.
 */
static int account(struct trans_state *st, u64 bytenr, s64 delta, struct tlog_block_group *bg)
{
	struct tlog_block_group *g = btrfs_lookup_block_group(&st->bgs, bytenr);

	if (!g)
		return tlog_error(-EUCLEAN, "block %llu is in no block group",
				  (unsigned long long)bytenr);
	g->used += delta;
	g->used_changed = true;
	*bg = *g;
	return 0;
}

static bool fst_enabled(const struct tlog_fs *fs)
{
	return fs->compat_ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE;
}

void tlog_trans_set_system_reserve(struct tlog_trans *trans, u64 bytes)
{
	state_of(trans)->system_reserve = bytes;
}

int tlog_trans_alloc_extent(struct tlog_trans *trans, u64 type, u64 len, u64 min, u64 *ret,
			    u64 *got)
{
	struct trans_state *st = container_of(trans, struct trans_state, trans);
	u64 align = trans->fs->sectorsize;
	int err;

	for (;;) {
		struct tlog_errsave saved;
		u64 largest;

		tlog_error_save(&saved);
		err = alloc_space(st, type, len, align, ret);
		if (err != -ENOSPC || len <= min) {
			if (!err)
				*got = len;
			return err;
		}
		tlog_error_restore(&saved);
		/*
		 * btrfs_reserve_extent tries again with less: the longest free
		 * range there is (seen on 6.18: a 54 MiB fallocate with 32 MiB
		 * chunks takes 32 MiB), half as much if even that fails.
		 */
		largest = btrfs_largest_free(&st->bgs, space_type(trans->fs, type)) / align * align;
		len = largest && largest < len ? largest : len / 2 / align * align;
		if (len < min)
			len = min;
	}
}

int tlog_trans_alloc_space(struct tlog_trans *trans, u64 type, u64 len, u64 align, u64 *ret)
{
	return alloc_space(state_of(trans), type, len, align, ret);
}

int tlog_trans_claim_space(struct tlog_trans *trans, u64 bytenr, u64 len)
{
	int err = btrfs_exclude_range(&state_of(trans)->bgs, bytenr, len);

	return err ? err : tlog_trans_account_space(trans, bytenr, len, true);
}

u64 tlog_trans_group_space(struct tlog_trans *trans, u64 type)
{
	return btrfs_free_bytes(&state_of(trans)->bgs, space_type(trans->fs, type));
}

int tlog_trans_force_chunk(struct tlog_trans *trans, u64 type)
{
	return grow_space(state_of(trans), space_type(trans->fs, type));
}

u64 tlog_trans_space_left(struct tlog_trans *trans, u64 type)
{
	struct trans_state *st = container_of(trans, struct trans_state, trans);
	const struct btrfs_dev_item *di = &trans->fs->super.dev_item;
	u64 total = btrfs_dev_item_total_bytes(di), used = btrfs_dev_item_bytes_used(di);

	return btrfs_free_bytes(&st->bgs, space_type(trans->fs, type)) +
	       (total > used ? total - used : 0);
}

int tlog_trans_account_space(struct tlog_trans *trans, u64 bytenr, u64 len, bool allocated)
{
	struct trans_state *st = state_of(trans);
	struct tlog_block_group bg;
	int err = account(st, bytenr, allocated ? (s64)len : -(s64)len, &bg);

	if (err || !fst_enabled(trans->fs))
		return err;
	if (allocated)
		return fst_remove_range(trans, &bg, bytenr, len);
	return fst_add_range(trans, &bg, bytenr, len);
}

static int run_one_new(struct trans_state *st, const struct block_rec *r)
{
	struct tlog_trans *trans = &st->trans;
	struct tlog_block_group bg;
	int err;

	err = insert_tree_block_ref(trans, r);
	if (!err)
		err = account(st, r->bytenr, trans->fs->nodesize, &bg);
	if (!err && fst_enabled(trans->fs))
		err = fst_remove_range(trans, &bg, r->bytenr, trans->fs->nodesize);
	return err ? err : rec_push(&st->recorded_new, r);
}

static int run_one_free(struct trans_state *st, const struct block_rec *r)
{
	struct tlog_trans *trans = &st->trans;
	struct tlog_block_group bg;
	bool new_here = rec_take(&st->recorded_new, r->bytenr);
	int err;

	err = delete_tree_block_ref(trans, r);
	if (!err)
		err = account(st, r->bytenr, -(s64)trans->fs->nodesize, &bg);
	if (!err && fst_enabled(trans->fs))
		err = fst_add_range(trans, &bg, r->bytenr, trans->fs->nodesize);
	if (err)
		return err;
	/* a block of this transaction never reached the disk: reuse it now */
	if (new_here)
		return btrfs_free_range(&st->bgs, r->bytenr, trans->fs->nodesize);
	return rec_push(&st->pinned, r);
}

static int update_block_group_item(struct trans_state *st, size_t index)
{
	struct tlog_trans *trans = &st->trans;
	struct tlog_fs *fs = trans->fs;
	/* by value: the search may add a chunk, and the group array move */
	struct tlog_block_group bg = st->bgs.v[index];
	struct btrfs_key key = { bg.start, BTRFS_BLOCK_GROUP_ITEM_KEY, bg.length };
	struct btrfs_root *root;
	struct btrfs_path path;
	int ret;

	ret = btrfs_read_root(fs, btrfs_block_group_root_id(fs), &root);
	if (ret)
		return ret;
	st->bgs.v[index].used_changed = false;
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, root, &key, &path, 0);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "block group item %llu not found",
				 (unsigned long long)bg.start);
	/* the used count as it stands now, after whatever the search allocated */
	if (ret == 0) {
		struct tlog_block_group *now = btrfs_lookup_block_group(&st->bgs, bg.start);

		btrfs_set_block_group_item_used(btrfs_item_ptr(path.nodes[0], path.slots[0]),
						now->used);
	}
	btrfs_release_path(&path);
	return ret;
}

/* Bring a changed tree's ROOT_ITEM up to date; *@changed when it was not. */
static int update_root_item(struct trans_state *st, struct btrfs_root *root, bool *changed)
{
	struct tlog_trans *trans = &st->trans;
	struct btrfs_root_item *ri = &root->root_item;
	struct btrfs_path path;
	int ret;

	*changed = false;
	if (root == trans->fs->tree_root || root == trans->fs->chunk_root)
		return 0;		/* reached through the superblock */
	if (btrfs_root_item_bytenr(ri) == root->bytenr &&
	    btrfs_root_item_level(ri) == root->level &&
	    btrfs_root_item_generation(ri) == root->generation)
		return 0;
	btrfs_set_root_item_bytenr(ri, root->bytenr);
	btrfs_set_root_item_level(ri, root->level);
	btrfs_set_root_item_generation(ri, root->generation);
	btrfs_set_root_item_generation_v2(ri, root->generation);
	if (btrfs_is_subvolume_id(root->root_key.objectid))
		btrfs_set_root_item_ctransid(ri, trans->transid);
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, trans->fs->tree_root, &root->root_key, &path, 0);
	if (ret > 0)
		ret = tlog_error(-EUCLEAN, "root item of tree %llu not found",
				 (unsigned long long)root->root_key.objectid);
	if (ret == 0) {
		u32 size = btrfs_item_size(path.nodes[0], path.slots[0]);

		memcpy(btrfs_item_ptr(path.nodes[0], path.slots[0]), ri,
		       size < sizeof(*ri) ? size : sizeof(*ri));
		*changed = true;
	}
	btrfs_release_path(&path);
	return ret;
}

/* Run the bookkeeping until a pass changes nothing more. */
static int run_bookkeeping(struct trans_state *st)
{
	bool progress;
	int err;

	do {
		progress = false;
		while (st->pending_new.nr || st->pending_free.nr) {
			struct block_rec r;

			progress = true;
			if (st->pending_new.nr) {
				r = st->pending_new.v[0];
				rec_take(&st->pending_new, r.bytenr);
				err = run_one_new(st, &r);
			} else {
				r = st->pending_free.v[--st->pending_free.nr];
				err = run_one_free(st, &r);
			}
			if (err)
				return err;
		}
		for (size_t i = 0; i < st->bgs.nr; i++) {
			if (!st->bgs.v[i].used_changed)
				continue;
			err = update_block_group_item(st, i);
			if (err)
				return err;
			progress = true;
		}
		for (int i = 0; i < st->nr_dirty_roots; i++) {
			bool changed;

			err = update_root_item(st, st->dirty_roots[i], &changed);
			if (err)
				return err;
			progress |= changed;
		}
	} while (progress);
	return 0;
}

/*
 * ---- writing ----
 *
 * A commit writes thousands of tree blocks, each copy of a DUP block on
 * its own.  They are written in the order of their physical addresses,
 * and copies that lie back to back go out as one gather write of up to
 * WRITE_RUN_MAX bytes: a few hundred writes instead of one per copy,
 * which the device layer sends large and, on a file, past the page
 * cache.  The bytes and where they land are those of writing block by
 * block; only the order among the blocks changes, and nothing depends on
 * it: the superblock that makes them reachable follows the flush after
 * the last of them.
 */

#define WRITE_RUN_MAX	(4U << 20)

/* One physical copy of a tree block to write; @seq keeps list order among equals. */
struct block_copy {
	u64 physical;
	size_t seq;
	const struct extent_buffer *eb;
};

struct copy_list {
	struct block_copy *v;
	size_t nr, cap;
};

/* Checksum @eb and add each of its physical copies to @list. */
static int add_tree_block(struct tlog_fs *fs, struct extent_buffer *eb, struct copy_list *list)
{
	u64 physical[TLOG_MAX_STRIPES];
	int copies;

	btrfs_csum_data(fs->csum_type, eb->data + BTRFS_CSUM_SIZE,
			fs->nodesize - BTRFS_CSUM_SIZE, eb_header(eb)->csum);
	copies = btrfs_map_block(fs, eb->start, fs->nodesize, physical, TLOG_MAX_STRIPES);
	if (copies < 0)
		return copies;
	if (array_reserve(list->v, list->cap, list->nr + copies))
		return tlog_error(-ENOMEM, "no memory for the list of %zu blocks to write",
				  list->nr + copies);
	for (int i = 0; i < copies; i++, list->nr++)
		list->v[list->nr] = (struct block_copy){ physical[i], list->nr, eb };
	return 0;
}

static int cmp_block_copy(const void *a, const void *b)
{
	const struct block_copy *x = a, *y = b;

	if (x->physical != y->physical)
		return x->physical < y->physical ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Write the sorted copies @c[0..@nr), each run of back-to-back copies as
 * one write.  Two copies at the same place (a bug elsewhere) stay apart,
 * the later in list order written last, as block by block.
 */
static int write_copy_runs(struct tlog_fs *fs, const struct block_copy *c, size_t nr)
{
	struct iovec iov[WRITE_RUN_MAX / 4096];
	u32 max_pieces = WRITE_RUN_MAX / fs->nodesize;
	size_t i = 0;

	/* nodesize is 4 KiB to 64 KiB: a run holds at least one block, iov all */
	if (max_pieces > sizeof(iov) / sizeof(iov[0]))
		max_pieces = sizeof(iov) / sizeof(iov[0]);
	if (max_pieces == 0)
		max_pieces = 1;

	while (i < nr) {
		u64 start = c[i].physical;
		u32 n = 0;
		int err;

		do {
			iov[n].iov_base = (void *)c[i].eb->data;
			iov[n].iov_len = fs->nodesize;
			n++;
			i++;
		} while (i < nr && n < max_pieces &&
			 c[i].physical == start + (u64)n * fs->nodesize);
		err = tlog_bdev_writev(fs->bdev, iov, (int)n, start);
		if (err)
			return err;
	}
	return 0;
}

/* Checksum and write every block on @blocks (dirty buffers); *@nr_blocks counts them. */
static int write_block_list(struct tlog_fs *fs, struct list_head *blocks, u64 *nr_blocks)
{
	struct copy_list list = { 0 };
	struct extent_buffer *eb;
	int err = 0;

	*nr_blocks = 0;
	list_for_each_eb(eb, blocks) {
		err = add_tree_block(fs, eb, &list);
		if (err)
			goto out;
		(*nr_blocks)++;
	}
	qsort(list.v, list.nr, sizeof(*list.v), cmp_block_copy);
	err = write_copy_runs(fs, list.v, list.nr);
out:
	free(list.v);
	return err;
}

/* Whether @eb is the root block of one of the trees changed in @st. */
static bool is_dirty_root_block(const struct trans_state *st, const struct extent_buffer *eb)
{
	u64 owner = btrfs_header_owner(eb_header(eb));

	for (int i = 0; i < st->nr_dirty_roots; i++) {
		const struct btrfs_root *root = st->dirty_roots[i];

		if (root->bytenr == eb->start && root->root_key.objectid == owner)
			return true;
	}
	return false;
}

/*
 * Only a tree's root may be an empty leaf; the kernel refuses any other.
 * One is left behind when a search made room for items (ins_len > 0) and
 * its caller then inserted none: a bug of that caller, caught here, before
 * anything is written, so that no tree the kernel would refuse reaches the
 * disk.  Every block written in a transaction was allocated for a tree
 * that is then in dirty_roots, so those are the roots to compare with.
 */
static int check_no_empty_leaves(struct trans_state *st)
{
	struct extent_buffer *eb;

	list_for_each_eb(eb, &st->trans.fs->dirty_blocks) {
		if (btrfs_header_level_eb(eb) != 0 || btrfs_header_nritems_eb(eb) != 0)
			continue;
		if (!is_dirty_root_block(st, eb))
			return tlog_error(-EUCLEAN,
					  "tree %llu: leaf %llu is empty and not the tree's root; "
					  "not committing a tree the kernel would refuse",
					  (unsigned long long)btrfs_header_owner(eb_header(eb)),
					  (unsigned long long)eb->start);
	}
	return 0;
}

static int write_dirty_blocks(struct tlog_fs *fs)
{
	u64 nr_blocks;

	return write_block_list(fs, &fs->dirty_blocks, &nr_blocks);
}

/* Where @root is, for a backup root slot; all zero for a missing tree. */
static struct tlog_backup_tree backup_tree(const struct btrfs_root *root)
{
	if (!root)
		return (struct tlog_backup_tree){ 0 };
	return (struct tlog_backup_tree){ root->bytenr, root->generation, root->level };
}

static const struct btrfs_root *find_root_or_null(struct tlog_fs *fs, u64 objectid)
{
	struct btrfs_root *root;

	return btrfs_find_root(fs, objectid, &root) ? NULL : root;
}

/* Fill the next backup root slot, round robin after the newest. */
static void fill_backup_root(struct tlog_fs *fs)
{
	struct btrfs_super_block *sb = &fs->super;
	struct tlog_backup_tree trees[TLOG_BACKUP_NR] = {
		[TLOG_BACKUP_TREE_ROOT] = backup_tree(fs->tree_root),
		[TLOG_BACKUP_CHUNK_ROOT] = backup_tree(fs->chunk_root),
		[TLOG_BACKUP_EXTENT_ROOT] = backup_tree(find_root_or_null(fs, BTRFS_EXTENT_TREE_OBJECTID)),
		[TLOG_BACKUP_FS_ROOT] = backup_tree(find_root_or_null(fs, BTRFS_FS_TREE_OBJECTID)),
		[TLOG_BACKUP_DEV_ROOT] = backup_tree(find_root_or_null(fs, BTRFS_DEV_TREE_OBJECTID)),
		[TLOG_BACKUP_CSUM_ROOT] = backup_tree(find_root_or_null(fs, BTRFS_CSUM_TREE_OBJECTID)),
	};
	u64 newest = 0;
	int slot = 0;

	for (int i = 0; i < BTRFS_NUM_BACKUP_ROOTS; i++) {
		if (btrfs_root_backup_tree_root_gen(&sb->super_roots[i]) > newest) {
			newest = btrfs_root_backup_tree_root_gen(&sb->super_roots[i]);
			slot = (i + 1) % BTRFS_NUM_BACKUP_ROOTS;
		}
	}
	btrfs_set_backup_root(&sb->super_roots[slot], sb, trees);
}

static int write_supers(struct tlog_trans *trans)
{
	struct trans_state *st = state_of(trans);
	struct tlog_fs *fs = trans->fs;
	struct btrfs_super_block *sb = &fs->super;
	u64 used = 0;

	for (size_t i = 0; i < st->bgs.nr; i++)
		used += st->bgs.v[i].used;
	if (btrfs_super_block_uuid_tree_generation(sb) == fs->generation)
		btrfs_set_super_block_uuid_tree_generation(sb, trans->transid);
	btrfs_set_super_block_generation(sb, trans->transid);
	btrfs_set_super_block_root(sb, fs->tree_root->bytenr);
	btrfs_set_super_block_root_level(sb, fs->tree_root->level);
	btrfs_set_super_block_chunk_root(sb, fs->chunk_root->bytenr);
	btrfs_set_super_block_chunk_root_level(sb, fs->chunk_root->level);
	btrfs_set_super_block_chunk_root_generation(sb, fs->chunk_root->generation);
	btrfs_set_super_block_bytes_used(sb, used);
	/* every commit ends the log of the transaction it closes */
	btrfs_set_super_block_log_root(sb, 0);
	btrfs_set_super_block_log_root_level(sb, 0);
	fill_backup_root(fs);
	return btrfs_write_all_supers(fs);
}

int tlog_trans_commit(struct tlog_trans *trans)
{
	struct trans_state *st = state_of(trans);
	struct tlog_fs *fs = trans->fs;
	int err;

	if (st->flags & TLOG_TRANS_IN_MEMORY) {
		tlog_trans_abort(trans);
		return tlog_error(-EROFS, "an in-memory transaction cannot be committed");
	}
	err = tlog_trans_run_deferred_frees(trans);
	if (!err)
		err = run_bookkeeping(st);
	/* the root tree block must carry the new generation even if untouched */
	if (!err && fs->tree_root->generation != trans->transid) {
		struct btrfs_path path;
		struct btrfs_key key = { 0, 0, 0 };

		btrfs_init_path(&path);
		err = btrfs_search_slot_for_write(trans, fs->tree_root, &key, &path, 0);
		btrfs_release_path(&path);
		err = err < 0 ? err : run_bookkeeping(st);
	}
	if (!err)
		err = check_no_empty_leaves(st);
	if (!err)
		err = write_dirty_blocks(fs);
	if (!err)
		err = tlog_bdev_flush(fs->bdev);
	if (!err)
		err = write_supers(trans);
	if (!err)
		err = tlog_bdev_flush(fs->bdev);
	if (err) {
		tlog_trans_abort(trans);
		return err;
	}
	/* committed: the blocks are on disk and freed space is free again */
	while (!list_empty(&fs->dirty_blocks))
		btrfs_clear_buffer_dirty(fs, list_first_entry(&fs->dirty_blocks,
							      struct extent_buffer, dirty_list));
	fs->generation = trans->transid;
	/*
	 * The log ends with the transaction it belonged to (ours, or the one
	 * a replay read): its blocks were kept only from this transaction's
	 * allocations, and no root of it may stay cached.
	 */
	end_own_log(st, true);
	btrfs_drop_log_roots(fs);
	free_state(st);
	return 0;
}

/* ---- the log ---- */

void tlog_trans_set_needs_full_commit(struct tlog_trans *trans, const char *reason)
{
	struct trans_state *st;

	if (trans->ops != &image_trans_ops)
		return;
	st = state_of(trans);
	/* the first reason is the one that matters */
	if (!st->full_commit[0])
		snprintf(st->full_commit, sizeof(st->full_commit), "%s",
			 reason && reason[0] ? reason : "full commit needed");
}

bool tlog_trans_needs_full_commit(struct tlog_trans *trans)
{
	return tlog_trans_full_commit_reason(trans) != NULL;
}

const char *tlog_trans_full_commit_reason(struct tlog_trans *trans)
{
	if (trans->ops != &image_trans_ops || !state_of(trans)->full_commit[0])
		return NULL;
	return state_of(trans)->full_commit;
}

struct btrfs_root *tlog_trans_find_log(struct tlog_trans *trans, u64 root_objectid)
{
	struct trans_state *st;

	if (trans->ops != &image_trans_ops)
		return NULL;
	st = state_of(trans);
	for (size_t i = 0; i < st->nr_logs; i++)
		if (st->logs[i]->root_key.offset == root_objectid)
			return st->logs[i];
	return NULL;
}

size_t tlog_trans_nr_logs(struct tlog_trans *trans)
{
	return trans->ops == &image_trans_ops ? state_of(trans)->nr_logs : 0;
}

/* Why this transaction cannot have a log; NULL when it can. */
static const char *no_log_reason(struct tlog_trans *trans)
{
	struct trans_state *st = state_of(trans);

	if (trans->ops != &image_trans_ops)
		return "the transaction is not on an image";
	if (st->flags & (TLOG_TRANS_LOG_REPLAY | TLOG_TRANS_IN_MEMORY))
		return "a replay or in-memory transaction has no log of its own";
	if (trans->fs->log_root_tree && !st->own_log)
		return "the image has a log from before";
	return NULL;
}

/* The log root tree: no ROOT_ITEM describes it, the superblock points at it. */
static int make_log_root_tree(struct trans_state *st)
{
	struct tlog_fs *fs = st->trans.fs;
	struct btrfs_root *lrt = calloc(1, sizeof(*lrt));
	int err;

	if (!lrt)
		return -ENOMEM;
	lrt->fs = fs;
	lrt->root_key = (struct btrfs_key){ BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY,
					    BTRFS_TREE_LOG_OBJECTID };
	err = btrfs_create_tree(&st->trans, lrt);
	if (err) {
		free(lrt);
		return err;
	}
	fs->log_root_tree = lrt;
	st->own_log = true;
	return 0;
}

/*
 * The root item a log tree gets in the log root tree, as the kernel fills
 * it (btrfs_add_log_tree): all zero but a dummy directory inode and where
 * the tree is; refs and bytes_used 0.
 */
static void init_log_root_item(struct tlog_fs *fs, struct btrfs_root_item *ri)
{
	struct btrfs_inode_item *ii = &ri->inode;

	memset(ri, 0, sizeof(*ri));
	btrfs_set_inode_item_generation(ii, 1);
	btrfs_set_inode_item_size(ii, 3);
	btrfs_set_inode_item_nlink(ii, 1);
	btrfs_set_inode_item_nbytes(ii, fs->nodesize);
	btrfs_set_inode_item_mode(ii, S_IFDIR | 0755);
}

int tlog_trans_log_tree(struct tlog_trans *trans, struct btrfs_root *root, struct btrfs_root **log)
{
	const char *why = no_log_reason(trans);
	struct btrfs_key key = { BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY,
				 root->root_key.objectid };
	struct trans_state *st;
	struct btrfs_root *lt;
	int err;

	if (why)
		return tlog_error(-EINVAL, "no log tree: %s", why);
	if (!btrfs_is_subvolume_id(root->root_key.objectid))
		return tlog_error(-EINVAL, "tree %llu is not a subvolume: it has no log",
				  (unsigned long long)root->root_key.objectid);
	st = state_of(trans);
	*log = tlog_trans_find_log(trans, root->root_key.objectid);
	if (*log)
		return 0;
	if (st->full_commit[0])
		return tlog_error(-EAGAIN, "no log tree: the transaction needs a full commit (%s)",
				  st->full_commit);
	if (array_reserve(st->logs, st->cap_logs, st->nr_logs + 1))
		return -ENOMEM;
	if (!trans->fs->log_root_tree) {
		err = make_log_root_tree(st);
		if (err)
			return err;
	}
	err = btrfs_new_root(trans->fs, &key, &lt);
	if (err)
		return err;
	/* btrfs_add_log_tree: the subvolume's log transactions count from 0 again */
	root->log_transid = 0;
	root->last_log_commit = 0;
	init_log_root_item(trans->fs, &lt->root_item);
	err = btrfs_create_tree(trans, lt);
	if (err) {
		/* an empty root in the cache would be found by btrfs_read_log_root */
		struct btrfs_root **pp = &trans->fs->roots;

		while (*pp != lt)
			pp = &(*pp)->next;
		*pp = lt->next;
		free(lt);
		return err;
	}
	st->logs[st->nr_logs++] = lt;
	*log = lt;
	return 0;
}

/* Insert or update @log's ROOT_ITEM in the log root tree (the kernel's update_log_root). */
static int update_log_root_item(struct tlog_trans *trans, struct btrfs_root *log)
{
	struct btrfs_root *lrt = trans->fs->log_root_tree;
	struct btrfs_root_item *ri = &log->root_item;
	struct btrfs_path path;
	int ret;

	btrfs_set_root_item_bytenr(ri, log->bytenr);
	btrfs_set_root_item_level(ri, log->level);
	btrfs_set_root_item_generation(ri, log->generation);
	btrfs_set_root_item_generation_v2(ri, log->generation);
	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, lrt, &log->root_key, &path, 0);
	if (ret == 0) {
		if (btrfs_item_size(path.nodes[0], path.slots[0]) != sizeof(*ri))
			ret = tlog_error(-EUCLEAN, "log root item of subvolume %llu has the wrong size",
					 (unsigned long long)log->root_key.offset);
		else
			memcpy(btrfs_item_ptr(path.nodes[0], path.slots[0]), ri, sizeof(*ri));
	}
	btrfs_release_path(&path);
	if (ret > 0)
		ret = btrfs_insert_item(trans, lrt, &log->root_key, ri, sizeof(*ri));
	return ret;
}

/*
 * Every log block is checked before it is written, as the kernel's
 * write-time tree-checker does: a log the kernel would refuse to replay
 * never reaches the disk (the sync fails, and the fsync commits instead).
 */
static int write_log_blocks(struct tlog_fs *fs)
{
	struct extent_buffer *eb;
	u64 nr_blocks;
	int err;

	list_for_each_eb(eb, &fs->log_dirty_blocks) {
		err = btrfs_check_block_for_write(fs, eb);
		if (err) {
			char why[256];

			snprintf(why, sizeof(why), "%s", tlog_error_get());
			return tlog_error(err, "log block %llu fails the write-time check (%s)",
					  (unsigned long long)eb->start, why);
		}
		fs->log_blocks_verified++;
	}
	err = write_block_list(fs, &fs->log_dirty_blocks, &nr_blocks);
	if (!err)
		fs->log_blocks_written += nr_blocks;
	return err;
}

/* Write the last commit's superblock, pointing at @lrt, to the primary copy. */
static int write_log_super(struct trans_state *st, const struct btrfs_root *lrt)
{
	struct btrfs_super_block sb = st->committed_super;

	btrfs_set_super_block_log_root(&sb, lrt->bytenr);
	btrfs_set_super_block_log_root_level(&sb, lrt->level);
	return btrfs_write_super_copies(st->trans.fs->bdev, &sb, 1);
}

int tlog_trans_sync_log(struct tlog_trans *trans, struct btrfs_root *log)
{
	const char *why = no_log_reason(trans);
	struct tlog_fs *fs = trans->fs;
	struct trans_state *st;
	int err = 0;

	if (why)
		return tlog_error(-EINVAL, "cannot sync the log: %s", why);
	st = state_of(trans);
	if (!st->nr_logs)
		return 0;
	if (st->full_commit[0])
		return tlog_error(-EAGAIN, "cannot sync the log: the transaction needs a full commit (%s)",
				  st->full_commit);
	for (size_t i = 0; !err && i < st->nr_logs; i++)
		if (!log || st->logs[i] == log)
			err = update_log_root_item(trans, st->logs[i]);
	/* the blocks first, then the superblock that makes them the log */
	if (!err)
		err = write_log_blocks(fs);
	if (!err)
		err = tlog_bdev_flush(fs->bdev);
	if (!err)
		err = write_log_super(st, fs->log_root_tree);
	if (!err)
		err = tlog_bdev_flush(fs->bdev);
	if (err) {
		/*
		 * What is on disk is the last synced log, none, or (a flush
		 * failed after the superblock went out) this one: commit
		 * instead, and keep every block of it until then.
		 */
		tlog_trans_set_needs_full_commit(trans, "writing the log failed");
		st->log_unsynced.nr = 0;
		return err;
	}
	/* on disk now: later changes copy these blocks, which stay until the commit */
	while (!list_empty(&fs->log_dirty_blocks))
		btrfs_clear_buffer_dirty(fs, list_first_entry(&fs->log_dirty_blocks,
							      struct extent_buffer, dirty_list));
	st->log_unsynced.nr = 0;
	st->log_synced = true;
	btrfs_set_super_block_log_root(&fs->super, fs->log_root_tree->bytenr);
	btrfs_set_super_block_log_root_level(&fs->super, fs->log_root_tree->level);
	return 0;
}
