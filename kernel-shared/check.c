// SPDX-License-Identifier: GPL-2.0-only
/*
 * The checker's order of passes, its threads and its reporting.
 *
 * Passes run in the order their findings depend on: the superblock and the
 * chunk tree first (nothing else can be read without them), then one walk
 * of every tree that checks every block and item and records the tree
 * block and data references, then the extent tree against that record.
 * The subvolume trees need nothing from the walk, so with two threads they
 * are checked beside the walk and the extent tree, through a second open
 * of the image: the block cache is per open, so the two never share a
 * buffer.  The log comes last, because its blocks must not collide with
 * any committed one, and its dry replay is then checked by the same
 * passes again.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "check-priv.h"
#include "array.h"
#include "blockdev.h"
#include "errctx.h"
#include "super.h"
#include "tree-checker.h"

/*
 * What a problem says, without the block and slot (copy-on-write by the
 * replay moves an unchanged item to a new block): FNV-1a.
 */
static u64 problem_fingerprint(const struct tlog_problem *p)
{
	u64 h = 0xcbf29ce484222325ULL;
	u64 words[4] = { p->tree, p->key.objectid, p->key.type, p->key.offset };

	for (size_t i = 0; i < sizeof(words); i++) {
		h ^= ((const u8 *)words)[i];
		h *= 0x100000001b3ULL;
	}
	for (const char *s = p->area; *s; s++)
		h = (h ^ (u8)*s) * 0x100000001b3ULL;
	for (const char *s = p->what; *s; s++)
		h = (h ^ (u8)*s) * 0x100000001b3ULL;
	return h;
}

static int cmp_fingerprint(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Called locked.  True when the problem was said before the replay.  The
 * fingerprints are appended until the replay's check begins, then sorted
 * once and searched: a badly damaged image may say the same thousands of
 * problems twice.
 */
static bool seen_before_replay(struct tlog_check *c, const struct tlog_problem *p)
{
	u64 fp = problem_fingerprint(p);

	if (c->after_replay) {
		if (!c->nr_seen_problems)
			return false;
		if (!c->seen_problems_sorted) {
			qsort(c->seen_problems, c->nr_seen_problems, sizeof(fp), cmp_fingerprint);
			c->seen_problems_sorted = true;
		}
		return bsearch(&fp, c->seen_problems, c->nr_seen_problems, sizeof(fp),
			       cmp_fingerprint) != NULL;
	}
	if (!array_reserve(c->seen_problems, c->alloc_seen_problems, c->nr_seen_problems + 1))
		c->seen_problems[c->nr_seen_problems++] = fp;
	return false;
}

void check_problem(struct tlog_check *c, const char *area, enum tlog_check_grade grade,
		   u64 tree, u64 block, int slot, const struct btrfs_key *key,
		   const char *fmt, ...)
{
	struct tlog_problem p = {
		.area = area, .grade = grade, .tree = tree, .block = block, .slot = slot,
		.has_key = key != NULL, .after_replay = c->after_replay,
	};
	va_list ap;

	if (key)
		p.key = *key;
	va_start(ap, fmt);
	vsnprintf(p.what, sizeof(p.what), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&c->lock);
	if (seen_before_replay(c, &p)) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (grade == TLOG_CHECK_WARNING)
		c->stats->warnings++;
	else
		c->stats->problems++;
	if (c->opts.report)
		c->opts.report(&p, c->opts.report_arg);
	pthread_mutex_unlock(&c->lock);
}

void check_problem_finding(struct tlog_check *c, const char *area, u64 tree)
{
	const struct tlog_finding *f = tlog_last_finding();

	check_problem(c, area, TLOG_CHECK_ITEM, tree ? tree : f->tree, f->block, f->slot, &f->key,
		      "%s: %s", f->kind, f->what);
}

void check_problem_errctx(struct tlog_check *c, const char *area, enum tlog_check_grade grade,
			  u64 tree, u64 block, const char *what)
{
	const char *why = tlog_error_get();

	if (why && *why)
		check_problem(c, area, grade, tree, block, -1, NULL, "%s (%s)", what, why);
	else
		check_problem(c, area, grade, tree, block, -1, NULL, "%s", what);
}

void check_progress(struct tlog_check *c, const char *phase, u64 done, u64 total)
{
	if (!c->opts.progress)
		return;
	pthread_mutex_lock(&c->lock);
	c->opts.progress(phase, done, total, c->opts.progress_arg);
	pthread_mutex_unlock(&c->lock);
}

void check_count(struct tlog_check *c, u64 *counter, u64 n)
{
	/* the counts describe the image; the replayed trees are mostly the same ones */
	if (c->after_replay)
		return;
	pthread_mutex_lock(&c->lock);
	*counter += n;
	pthread_mutex_unlock(&c->lock);
}

static void free_walk_record(struct tlog_check *c)
{
	free(c->blocks);
	free(c->tree_refs);
	free(c->data_refs);
	c->blocks = NULL;
	c->tree_refs = NULL;
	c->data_refs = NULL;
	c->nr_blocks = c->alloc_blocks = 0;
	c->nr_tree_refs = c->alloc_tree_refs = 0;
	c->nr_data_refs = c->alloc_data_refs = 0;
	c->refs_incomplete = false;
}

/*
 * Each open's block cache: every pass reads its trees once, in order, so
 * the cache only has to hold a read-ahead window and what a pass keeps
 * using (the root tree, upper nodes).  TLOG_CHECK_CACHE_MB overrides, for
 * benchmarks.
 */
static u64 check_cache_bytes(void)
{
	const char *env = getenv("TLOG_CHECK_CACHE_MB");
	unsigned long mb = env ? strtoul(env, NULL, 10) : 0;

	return (mb ? mb : 16) << 20;
}

/*
 * An open that fails is the image's fault unless the failure says the
 * image is not btrfs at all, could not be read, or memory ran out: those
 * are "could not check".  A superblock, chunk tree or root tree too
 * damaged to open is the first and last problem of the image.
 */
static bool open_error_is_damage(int err)
{
	return err == -EUCLEAN || err == -EOVERFLOW || err == -ERANGE || err == -ENOENT;
}

/*
 * When the trees cannot be reached, the superblock copies still can: what
 * they say (a damaged primary, copies that disagree, a truncated image)
 * is often the reason, and the way to a rescue (--super N).
 */
static void check_super_alone(struct tlog_check *c, struct tlog_bdev *bdev)
{
	struct tlog_open_opts opts = { .super_mirror = c->opts.super_mirror,
				       .skip_chunk_tree = true };
	struct tlog_fs *fs;

	if (tlog_open_bdev(bdev, &opts, &fs))
		return;
	check_super(c, fs);
	tlog_close(fs);
}

static int open_for_check(struct tlog_check *c, struct tlog_bdev *bdev, struct tlog_fs **ret)
{
	struct tlog_open_opts opts = { .super_mirror = c->opts.super_mirror };
	int err = tlog_open_bdev(bdev, &opts, ret);

	if (!err) {
		btrfs_set_cache_limit(*ret, check_cache_bytes());
		return 0;
	}
	if (!open_error_is_damage(err))
		return err;
	check_problem_errctx(c, "super", TLOG_CHECK_IMAGE, 0, 0, "the image cannot be opened");
	check_super_alone(c, bdev);
	return 1;
}

/*
 * TLOG_CHECK_TIMES=1 prints how long each pass took, on stderr: where
 * the time of a check goes, for benchmarks.
 */
static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef int (*check_pass_fn)(struct tlog_check *c, struct tlog_fs *fs);

static int timed_pass(struct tlog_check *c, struct tlog_fs *fs, check_pass_fn pass,
		      const char *name)
{
	static int show = -1;
	double start = now_seconds();
	int err = pass(c, fs);

	if (show < 0)
		show = getenv("TLOG_CHECK_TIMES") != NULL;
	if (show)
		fprintf(stderr, "check: %s%s: %.3f s\n", c->after_replay ? "after replay: " : "",
			name, now_seconds() - start);
	return err;
}

struct fs_thread {
	struct tlog_check *c;
	struct tlog_fs *fs;
	int ret;
};

static void *fs_thread_main(void *arg)
{
	struct fs_thread *t = arg;

	t->ret = timed_pass(t->c, t->fs, check_fs_trees, "subvolumes");
	return NULL;
}

/* The walk of every tree, then the extent tree against what it recorded. */
static int check_walk_and_extents(struct tlog_check *c, struct tlog_fs *fs)
{
	int err = timed_pass(c, fs, check_trees, "tree walk");

	if (!err)
		err = timed_pass(c, fs, check_extents, "extent tree");
	return err;
}

/*
 * The subvolume pass needs nothing from the walk, and the two read about
 * the same amount: with a second open of the image (its own block cache)
 * it runs in a thread beside the walk and the extent pass.  One after the
 * other when threads == 1 or no second open or thread can be had.
 */
static int check_trees_and_subvols(struct tlog_check *c, struct tlog_fs *fs,
				   struct tlog_bdev *bdev)
{
	struct fs_thread t = { .c = c };
	struct tlog_open_opts opts = { .super_mirror = fs->super_mirror };
	pthread_t tid;
	int err, err2;

	if (c->opts.threads < 2 || tlog_open_bdev(bdev, &opts, &t.fs))
		t.fs = NULL;
	else
		btrfs_set_cache_limit(t.fs, check_cache_bytes());
	if (!t.fs || pthread_create(&tid, NULL, fs_thread_main, &t)) {
		if (t.fs)
			tlog_close(t.fs);
		err = check_walk_and_extents(c, fs);
		err2 = err ? 0 : timed_pass(c, fs, check_fs_trees, "subvolumes");
		return err ? err : err2;
	}
	err = check_walk_and_extents(c, fs);
	pthread_join(tid, NULL);
	tlog_close(t.fs);
	return err ? err : t.ret;
}

/* Every pass but the log's, on @fs (opened from @bdev). */
static int check_committed(struct tlog_check *c, struct tlog_fs *fs, struct tlog_bdev *bdev)
{
	int err;

	free_walk_record(c);
	c->fs = fs;
	err = timed_pass(c, fs, check_super, "superblocks");
	if (!err)
		err = timed_pass(c, fs, check_chunks, "chunks");
	if (!err)
		err = check_trees_and_subvols(c, fs, bdev);
	return err;
}

int check_run_passes(struct tlog_check *c, struct tlog_bdev *bdev)
{
	struct tlog_fs *fs, *saved = c->fs;
	int err = open_for_check(c, bdev, &fs);

	if (err)
		return err < 0 ? err : 0;
	err = check_committed(c, fs, bdev);
	tlog_close(fs);
	c->fs = saved;
	return err;
}

int tlog_check_image(struct tlog_bdev *bdev, const struct tlog_check_opts *opts,
		     struct tlog_check_stats *stats)
{
	struct tlog_check c = { .bdev = bdev, .opts = *opts, .stats = stats };
	struct tlog_fs *fs;
	int err;

	memset(stats, 0, sizeof(*stats));
	if (c.opts.threads <= 0)
		c.opts.threads = 2;
	pthread_mutex_init(&c.lock, NULL);
	err = open_for_check(&c, bdev, &fs);
	if (err) {
		err = err < 0 ? err : 0;
		goto out;
	}
	stats->has_log = fs->log_root_tree != NULL;
	if (!c.opts.log_only)
		err = check_committed(&c, fs, bdev);
	c.fs = fs;
	if (!err)
		err = timed_pass(&c, fs, check_log, "log");
	tlog_close(fs);
out:
	free_walk_record(&c);
	free(c.seen_problems);
	pthread_mutex_destroy(&c.lock);
	return err;
}
