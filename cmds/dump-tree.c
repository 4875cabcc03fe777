// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl dump-tree: print tree blocks, every item decoded, in the layout
 * of `btrfs inspect-internal dump-tree`.
 *
 * A damaged block is reported and skipped; the walk goes on with the rest
 * of the tree and the exit status says that something was wrong.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "array.h"
#include "commands.h"
#include "super.h"
#include "errctx.h"
#include "json-writer.h"
#include "messages.h"
#include "open.h"
#include "print-tree.h"
#include "root-tree.h"
#include "strutil.h"

static const char * const dump_tree_usage[] = {
	"tlogctl dump-tree [-t TREE | -b BYTENR [--follow] | -r | -e | -d | -u] [--format json] IMAGE",
	"Print the trees of a btrfs image",
	"",
	"Without options every tree is printed: the root and chunk trees, each",
	"tree named by a ROOT_ITEM, then the log trees if a log is present.",
	"",
	"-t|--tree TREE      only this tree: a number or root, extent, chunk, dev,",
	"                    fs, csum, quota, uuid, free-space, block-group,",
	"                    data-reloc, log (the log root tree and its log trees)",
	"-b|--block BYTENR   only the block at this logical address (repeatable)",
	"--follow            with -b, also print the blocks below it",
	"-r|--roots          only the root block of each tree",
	"-e|--extents        only the extent, block group and device trees",
	"-d|--device         only the root, chunk and device trees",
	"-u|--uuid           only the uuid tree",
	NULL
};

enum {
	OPT_FOLLOW = GETOPT_VAL_FIRST_CMD,
};

struct dump_ctx {
	struct tlog_fs *fs;
	bool json;
	bool follow;
	bool roots_only;
	/*
	 * JSON goes out block by block: {"trees":[{..., "blocks":[...]}, ...]}
	 * with the tree being dumped left open until the next one begins.
	 */
	struct json_writer jw;
	bool jtree_open;
	int errors;
	/* blocks already printed in this tree, to refuse cycles and sharing */
	u64 *seen;
	size_t nr_seen, alloc_seen;
};

static bool block_seen(struct dump_ctx *ctx, u64 bytenr)
{
	size_t lo = 0, hi = ctx->nr_seen;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ctx->seen[mid] == bytenr)
			return true;
		if (ctx->seen[mid] < bytenr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (array_reserve(ctx->seen, ctx->alloc_seen, ctx->nr_seen + 1))
		return true;	/* out of memory: stop descending */
	memmove(ctx->seen + lo + 1, ctx->seen + lo, (ctx->nr_seen - lo) * sizeof(u64));
	ctx->seen[lo] = bytenr;
	ctx->nr_seen++;
	return false;
}

static void emit_block(struct dump_ctx *ctx, const struct extent_buffer *eb)
{
	if (ctx->json)
		jsonw_json(&ctx->jw, btrfs_tree_block_to_json(ctx->fs, eb));
	else
		btrfs_print_tree_block(stdout, ctx->fs, eb);
}

static void report_block_error(struct dump_ctx *ctx, u64 bytenr, int err)
{
	fflush(stdout);
	error_errno(err, "cannot read tree block %llu", (unsigned long long)bytenr);
	ctx->errors++;
}

/* Print @bytenr and, unless limited, everything below it (depth first). */
static void dump_block(struct dump_ctx *ctx, u64 bytenr, int level, u64 gen,
		       bool descend)
{
	struct extent_buffer *eb;
	int err;

	/* the rest would be lost too: the dispatcher reports the write error */
	if (output_failed())
		return;
	if (block_seen(ctx, bytenr)) {
		fflush(stdout);
		error("tree block %llu is referenced more than once in this tree",
		      (unsigned long long)bytenr);
		ctx->errors++;
		return;
	}
	tlog_error_clear();
	err = read_tree_block(ctx->fs, bytenr, level, gen, &eb);
	if (err) {
		report_block_error(ctx, bytenr, err);
		return;
	}
	emit_block(ctx, eb);
	if (descend && btrfs_header_level_eb(eb) > 0) {
		int child_level = btrfs_header_level_eb(eb) - 1;

		/* every child is printed: read them together, not one by one */
		btrfs_prefetch_children(ctx->fs, eb, 0, BTRFS_PREFETCH_ALL, NULL, true);
		for (u32 i = 0; i < btrfs_header_nritems_eb(eb); i++)
			dump_block(ctx, btrfs_node_blockptr(eb, i), child_level,
				   btrfs_node_ptr_generation(eb, i), true);
	}
	free_extent_buffer(eb);
}

/* Close the "blocks" array and the object of the tree dumped last. */
static void end_json_tree(struct dump_ctx *ctx)
{
	if (!ctx->jtree_open)
		return;
	jsonw_end_array(&ctx->jw);
	jsonw_end_object(&ctx->jw);
	ctx->jtree_open = false;
}

static void begin_json_tree(struct dump_ctx *ctx, const char *heading,
			    const struct btrfs_key *key, u64 objectid)
{
	struct json_writer *jw = &ctx->jw;

	end_json_tree(ctx);
	jsonw_start_object(jw);
	jsonw_string_field(jw, "name", heading);
	jsonw_u64_field(jw, "objectid", objectid);
	if (key) {
		jsonw_name(jw, "key");
		jsonw_start_object(jw);
		jsonw_u64_field(jw, "objectid", key->objectid);
		jsonw_u64_field(jw, "type", key->type);
		jsonw_u64_field(jw, "offset", key->offset);
		jsonw_end_object(jw);
	}
	jsonw_name(jw, "blocks");
	jsonw_start_array(jw);
	ctx->jtree_open = true;
}

/* {"trees":[ ... */
static void begin_json(struct dump_ctx *ctx)
{
	jsonw_init(&ctx->jw, stdout);
	jsonw_start_object(&ctx->jw);
	jsonw_name(&ctx->jw, "trees");
	jsonw_start_array(&ctx->jw);
}

/* ... ]: the footer, if any, follows as members of the top-level object */
static void end_json_trees(struct dump_ctx *ctx)
{
	end_json_tree(ctx);
	jsonw_end_array(&ctx->jw);
}

static void end_json(struct dump_ctx *ctx)
{
	jsonw_end_object(&ctx->jw);
	jsonw_end(&ctx->jw);
}

static void begin_tree(struct dump_ctx *ctx, const char *heading, const struct btrfs_key *key,
		       u64 objectid)
{
	char kbuf[128];

	ctx->nr_seen = 0;
	if (key)
		btrfs_key_to_str(key, kbuf, sizeof(kbuf));
	if (ctx->json) {
		begin_json_tree(ctx, heading, key, objectid);
	} else if (key) {
		printf("%s key %s \n", heading, kbuf);
	} else {
		printf("%s\n", heading);
	}
}

static void dump_root(struct dump_ctx *ctx, struct btrfs_root *root, const char *heading,
		      bool with_key)
{
	begin_tree(ctx, heading, with_key ? &root->root_key : NULL, root->root_key.objectid);
	dump_block(ctx, root->bytenr, root->level, root->generation, !ctx->roots_only);
}

static void dump_tree_by_id(struct dump_ctx *ctx, u64 objectid)
{
	struct btrfs_root *root;
	char name[64];
	int err;

	tlog_error_clear();
	err = btrfs_read_root(ctx->fs, objectid, &root);
	if (err) {
		fflush(stdout);
		error_errno(err, "cannot read tree %llu", (unsigned long long)objectid);
		ctx->errors++;
		return;
	}
	btrfs_tree_name(objectid, name, sizeof(name));
	dump_root(ctx, root, name, objectid != BTRFS_ROOT_TREE_OBJECTID &&
		  objectid != BTRFS_CHUNK_TREE_OBJECTID);
}

/* Every ROOT_ITEM of @tree (the root tree or the log root tree), in key order. */
static void dump_trees_listed_in(struct dump_ctx *ctx, struct btrfs_root *tree,
				 bool (*want)(u64 objectid))
{
	struct btrfs_key min = { 0, 0, 0 };
	struct btrfs_key max = { (u64)-1, (u8)-1, (u64)-1 };
	struct btrfs_tree_iter iter;

	btrfs_for_each_item(tree, &iter, &min, &max) {
		struct btrfs_root root = { .fs = ctx->fs };
		char name[64];

		if (iter.key.type != BTRFS_ROOT_ITEM_KEY)
			continue;
		if (want && !want(iter.key.objectid))
			continue;
		if (btrfs_item_size(iter.leaf, iter.slot) < BTRFS_ROOT_ITEM_LEGACY_SIZE) {
			error("root item %llu has a bad size", (unsigned long long)iter.key.objectid);
			ctx->errors++;
			continue;
		}
		memcpy(&root.root_item, btrfs_item_ptr(iter.leaf, iter.slot),
		       BTRFS_ROOT_ITEM_LEGACY_SIZE);
		root.root_key = iter.key;
		root.bytenr = btrfs_root_item_bytenr(&root.root_item);
		root.level = btrfs_root_item_level(&root.root_item);
		root.generation = btrfs_root_item_generation(&root.root_item);
		btrfs_tree_name(tree == ctx->fs->log_root_tree ? BTRFS_TREE_LOG_OBJECTID :
				iter.key.objectid, name, sizeof(name));
		if (root.level >= BTRFS_MAX_LEVEL) {
			error("tree %llu has invalid level %u",
			      (unsigned long long)iter.key.objectid, root.level);
			ctx->errors++;
			continue;
		}
		/* The walk below uses the cache, not this leaf: keep the path. */
		dump_root(ctx, &root, name, true);
	}
	if (iter.ret < 0) {
		fflush(stdout);
		error_errno(iter.ret, "cannot walk the root tree");
		ctx->errors++;
	}
	btrfs_tree_iter_end(&iter);
}

/* The log root tree block(s), then (with @trees) the log trees it lists. */
static void dump_log(struct dump_ctx *ctx, bool root, bool trees)
{
	if (!ctx->fs->log_root_tree)
		return;
	if (root)
		dump_root(ctx, ctx->fs->log_root_tree, "log root tree", false);
	if (trees)
		dump_trees_listed_in(ctx, ctx->fs->log_root_tree, NULL);
}

static bool want_extent_trees(u64 objectid)
{
	return objectid == BTRFS_EXTENT_TREE_OBJECTID ||
	       objectid == BTRFS_DEV_TREE_OBJECTID ||
	       objectid == BTRFS_BLOCK_GROUP_TREE_OBJECTID;
}

static bool want_device_tree(u64 objectid)
{
	return objectid == BTRFS_DEV_TREE_OBJECTID;
}

static bool want_uuid_tree(u64 objectid)
{
	return objectid == BTRFS_UUID_TREE_OBJECTID;
}

static int parse_tree_name(const char *s, u64 *ret)
{
	static const struct { const char *name; u64 id; } names[] = {
		{ "root", BTRFS_ROOT_TREE_OBJECTID },
		{ "extent", BTRFS_EXTENT_TREE_OBJECTID },
		{ "chunk", BTRFS_CHUNK_TREE_OBJECTID },
		{ "dev", BTRFS_DEV_TREE_OBJECTID },
		{ "device", BTRFS_DEV_TREE_OBJECTID },
		{ "fs", BTRFS_FS_TREE_OBJECTID },
		{ "csum", BTRFS_CSUM_TREE_OBJECTID },
		{ "checksum", BTRFS_CSUM_TREE_OBJECTID },
		{ "quota", BTRFS_QUOTA_TREE_OBJECTID },
		{ "uuid", BTRFS_UUID_TREE_OBJECTID },
		{ "free-space", BTRFS_FREE_SPACE_TREE_OBJECTID },
		{ "free_space", BTRFS_FREE_SPACE_TREE_OBJECTID },
		{ "block-group", BTRFS_BLOCK_GROUP_TREE_OBJECTID },
		{ "block_group", BTRFS_BLOCK_GROUP_TREE_OBJECTID },
		{ "data-reloc", BTRFS_DATA_RELOC_TREE_OBJECTID },
		{ "data_reloc", BTRFS_DATA_RELOC_TREE_OBJECTID },
		{ "log", BTRFS_TREE_LOG_OBJECTID },
		{ "tree-log", BTRFS_TREE_LOG_OBJECTID },
	};
	char buf[32];
	size_t len = strlen(s);

	if (parse_u64(s, false, ret) == 0)
		return 0;
	/* accept "EXTENT_TREE" / "extent_tree" / "extent-tree" too */
	if (len < sizeof(buf)) {
		strcpy(buf, s);
		if (len > 5 && strcasecmp(buf + len - 5, "_tree") == 0)
			buf[len - 5] = '\0';
		else if (len > 5 && strcasecmp(buf + len - 5, "-tree") == 0)
			buf[len - 5] = '\0';
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			if (strcasecmp(buf, names[i].name) == 0) {
				*ret = names[i].id;
				return 0;
			}
		}
	}
	return -EINVAL;
}

static void print_footer(struct dump_ctx *ctx)
{
	const struct btrfs_super_block *sb = &ctx->fs->super;
	char uuid[UUID_STR_LEN];

	uuid_to_str(sb->fsid, uuid);
	if (ctx->json) {
		jsonw_u64_field(&ctx->jw, "total_bytes", btrfs_super_block_total_bytes(sb));
		jsonw_u64_field(&ctx->jw, "bytes_used", btrfs_super_block_bytes_used(sb));
		jsonw_string_field(&ctx->jw, "uuid", uuid);
		return;
	}
	printf("total bytes %llu\n", (unsigned long long)btrfs_super_block_total_bytes(sb));
	printf("bytes used %llu\n", (unsigned long long)btrfs_super_block_bytes_used(sb));
	printf("uuid %s\n", uuid);
}

#define MAX_BLOCKS 64

static int cmd_dump_tree(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "tree", required_argument, NULL, 't' },
		{ "block", required_argument, NULL, 'b' },
		{ "follow", no_argument, NULL, OPT_FOLLOW },
		{ "roots", no_argument, NULL, 'r' },
		{ "extents", no_argument, NULL, 'e' },
		{ "device", no_argument, NULL, 'd' },
		{ "uuid", no_argument, NULL, 'u' },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct tlog_open_opts opts;
	struct cmd_common common = CMD_COMMON_INIT;
	struct dump_ctx ctx = { 0 };
	u64 blocks[MAX_BLOCKS], tree = 0;
	int nr_blocks = 0, c;
	bool have_tree = false, extents = false, device = false, uuid = false;
	bool footer = false;

	while ((c = cmd_next_option(cmd, argc, argv, "t:b:redu", long_options, &common)) != -1) {
		switch (c) {
		case 't':
			if (parse_tree_name(optarg, &tree)) {
				error("unknown tree '%s'", optarg);
				return 1;
			}
			have_tree = true;
			break;
		case 'b':
			if (nr_blocks == MAX_BLOCKS) {
				error("at most %d -b options", MAX_BLOCKS);
				return 1;
			}
			if (parse_u64(optarg, false, &blocks[nr_blocks])) {
				error("invalid block address '%s'", optarg);
				return 1;
			}
			nr_blocks++;
			break;
		case OPT_FOLLOW:
			ctx.follow = true;
			break;
		case 'r':
			ctx.roots_only = true;
			break;
		case 'e':
			extents = true;
			break;
		case 'd':
			device = true;
			break;
		case 'u':
			uuid = true;
			break;
		}
	}
	check_argc(cmd, argc, 1, 1);
	if ((have_tree + (nr_blocks > 0) + extents + device + uuid) > 1) {
		error("-t, -b, -e, -d and -u cannot be combined");
		return 1;
	}

	cmd_open_opts(cmd, &common, &opts);
	if (open_image(argv[optind], &opts, &ctx.fs))
		return 1;
	ctx.json = common.format == OUTPUT_JSON;
	if (ctx.json)
		begin_json(&ctx);

	if (nr_blocks) {
		for (int i = 0; i < nr_blocks; i++) {
			char heading[64];

			snprintf(heading, sizeof(heading), "block %llu",
				 (unsigned long long)blocks[i]);
			if (ctx.json)
				begin_tree(&ctx, heading, NULL, 0);
			ctx.nr_seen = 0;
			dump_block(&ctx, blocks[i], -1, 0, ctx.follow);
		}
	} else if (have_tree && tree == BTRFS_TREE_LOG_OBJECTID) {
		if (!ctx.fs->log_root_tree && !ctx.json && ctx.fs->super_mirror != 0)
			report_no_log(ctx.fs, argv[optind], false);
		else if (!ctx.fs->log_root_tree && !ctx.json)
			printf("no log tree\n");
		dump_log(&ctx, true, true);
	} else if (have_tree) {
		dump_tree_by_id(&ctx, tree);
	} else if (uuid) {
		dump_trees_listed_in(&ctx, ctx.fs->tree_root, want_uuid_tree);
	} else {
		/* btrfs-progs' order: the log root right after the chunk tree... */
		dump_tree_by_id(&ctx, BTRFS_ROOT_TREE_OBJECTID);
		dump_tree_by_id(&ctx, BTRFS_CHUNK_TREE_OBJECTID);
		if (!extents && !device)
			dump_log(&ctx, true, false);
		if (extents)
			dump_trees_listed_in(&ctx, ctx.fs->tree_root, want_extent_trees);
		else if (device)
			dump_trees_listed_in(&ctx, ctx.fs->tree_root, want_device_tree);
		else
			dump_trees_listed_in(&ctx, ctx.fs->tree_root, NULL);
		/* ...and the log trees after every other tree */
		if (!extents && !device)
			dump_log(&ctx, false, true);
		footer = true;
	}

	if (ctx.json)
		end_json_trees(&ctx);
	if (footer)
		print_footer(&ctx);
	if (ctx.json)
		end_json(&ctx);
	free(ctx.seen);
	tlog_close(ctx.fs);
	return ctx.errors ? 1 : 0;
}

const struct cmd_struct cmd_struct_dump_tree = {
	.name = "dump-tree",
	.fn = cmd_dump_tree,
	.usage = dump_tree_usage,
	.flags = CMD_JSON,
};
