// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl dump-log: a readable account of the fsync log of an image.
 *
 * For every log tree (one per subvolume that logged something) the items
 * are grouped by inode: what the inode item says, its names, xattrs, file
 * extents, the directory entries and the directory index ranges logged for
 * it, then the checksum ranges and orphan items of the tree.
 *
 * The account is built as JSON first and the text is rendered from it, so
 * both formats carry the same facts.  Nothing is printed before the whole
 * log has been read: a damaged log block gives one error line and exit 1.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "root-tree.h"
#include "super.h"
#include "errctx.h"
#include "inode.h"
#include "inode-print.h"
#include "messages.h"
#include "open.h"
#include "print-tree.h"
#include "tree-checker.h"
#include "tree-log.h"

static const char * const dump_log_usage[] = {
	"tlogctl dump-log [--format json] IMAGE",
	"Show what the fsync log of a btrfs image holds",
	"",
	"For each subvolume with a log tree, per logged inode: the inode item,",
	"names, xattrs, file extents, directory entries and the directory index",
	"ranges whose missing entries replay deletes; then the logged checksum",
	"ranges.  An image without a log prints \"no log tree\".",
	NULL
};

struct log_ctx {
	struct tlog_fs *fs;
	json_object *jinodes;	/* inodes of the log tree being read */
	json_object *jinode;	/* the inode whose items are being read */
	json_object *jcsums;
	json_object *jorphans;
	json_object *jother;	/* special-objectid items we do not decode */
	json_object *jtrees;	/* the log trees described so far */
	u8 cur_key_type;	/* of the item being decoded */
};

/* ---- small helpers ---- */

static json_object *jget(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

static u64 jget_u64(json_object *o, const char *key)
{
	return json_object_get_uint64(jget(o, key));
}

static const char *jget_str(json_object *o, const char *key)
{
	json_object *v = jget(o, key);

	return v ? json_object_get_string(v) : "";
}

static bool jget_bool(json_object *o, const char *key)
{
	return json_object_get_boolean(jget(o, key));
}

static void json_add_bool(json_object *o, const char *k, bool v)
{
	json_object_object_add(o, k, json_object_new_boolean(v));
}

static const char *key_type_name(u8 type)
{
	static char buf[32];

	btrfs_key_type_to_str(type, buf, sizeof(buf));
	return buf;
}

static const char *compression_name(u8 compression)
{
	switch (compression) {
	case BTRFS_COMPRESS_NONE: return "none";
	case BTRFS_COMPRESS_ZLIB: return "zlib";
	case BTRFS_COMPRESS_LZO: return "lzo";
	case BTRFS_COMPRESS_ZSTD: return "zstd";
	}
	return "unknown";
}

/* ---- decoding one item into the current inode ---- */

static void start_inode(struct log_ctx *ctx, u64 ino)
{
	json_object *o = json_object_new_object();
	static const char * const arrays[] = {
		"names", "xattrs", "extents", "dir_entries", "dir_ranges",
	};

	json_add_u64(o, "ino", ino);
	json_object_object_add(o, "inode", NULL);
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
		json_object_object_add(o, arrays[i], json_object_new_array());
	json_object_array_add(ctx->jinodes, o);
	ctx->jinode = o;
}

static void add_fact(struct log_ctx *ctx, const char *array, json_object *fact)
{
	json_object *a = jget(ctx->jinode, array);

	if (!a) {
		/* only "other" is created on demand: it is rare */
		a = json_object_new_array();
		json_object_object_add(ctx->jinode, array, a);
	}
	json_object_array_add(a, fact);
}

static int decode_inode_item(struct log_ctx *ctx, const struct extent_buffer *leaf, int slot,
			     const struct btrfs_key *key)
{
	const struct btrfs_inode_item *ii;
	char note[256];
	json_object *o;
	u32 mode;
	int ret;

	/* shown as logged, rules broken or not: replay is what judges them */
	ret = btrfs_decode_inode_item(ctx->fs, leaf, slot, key, &ii, note, sizeof(note));
	if (ret)
		return tlog_error(ret, "%s", note);
	mode = btrfs_inode_item_mode(ii);
	o = json_object_new_object();
	json_add_str(o, "type", inode_type_name(mode));
	json_add_u64(o, "mode", mode);
	json_add_u64(o, "size", btrfs_inode_item_size(ii));
	json_add_u64(o, "nlink", btrfs_inode_item_nlink(ii));
	/* the logger does not write nbytes: shown as found, never trusted */
	json_add_u64(o, "nbytes", btrfs_inode_item_nbytes(ii));
	json_add_u64(o, "generation", btrfs_inode_item_generation(ii));
	json_add_u64(o, "transid", btrfs_inode_item_transid(ii));
	json_add_u64(o, "uid", btrfs_inode_item_uid(ii));
	json_add_u64(o, "gid", btrfs_inode_item_gid(ii));
	json_add_u64(o, "flags", btrfs_inode_item_flags(ii));
	json_object_object_add(ctx->jinode, "inode", o);
	return 0;
}

static void add_name(struct log_ctx *ctx, u8 key_type, u64 parent, u64 index,
		     const void *name, u16 len)
{
	json_object *o = json_object_new_object();

	json_add_str(o, "key", key_type_name(key_type));
	json_add_u64(o, "parent", parent);
	json_add_u64(o, "index", index);
	json_object_object_add(o, "name", btrfs_json_bytes(name, len));
	add_fact(ctx, "names", o);
}

/*
 * An INODE_REF item packs every name the inode has in directory key.offset,
 * an INODE_EXTREF (keyed by a name hash) names each entry's parent.
 */
static int decode_inode_refs(struct log_ctx *ctx, const struct extent_buffer *leaf, int slot,
			     const struct btrfs_key *key)
{
	u32 size = btrfs_item_size(leaf, slot), pos = 0;

	while (pos < size) {
		struct tlog_ref_entry ref;
		int len = btrfs_ref_entry_at(leaf, slot, key, pos, &ref, NULL, 0);

		if (len < 0)
			return len;
		add_name(ctx, key->type, ref.parent, ref.index, ref.name, ref.name_len);
		pos += len;
	}
	return 0;
}

static int add_xattr(const struct tlog_dir_entry *de, void *arg)
{
	struct log_ctx *ctx = arg;

	add_fact(ctx, "xattrs", btrfs_json_bytes(de->name, de->name_len));
	return 0;
}

static int add_dir_entry(const struct tlog_dir_entry *de, void *arg)
{
	struct log_ctx *ctx = arg;
	json_object *o = json_object_new_object();
	bool is_index = ctx->cur_key_type == BTRFS_DIR_INDEX_KEY;

	json_add_str(o, "key", key_type_name(ctx->cur_key_type));
	if (is_index)
		json_add_u64(o, "index", de->index);
	json_object_object_add(o, "name", btrfs_json_bytes(de->name, de->name_len));
	json_add_u64(o, "target", de->location.objectid);
	json_add_bool(o, "target_is_subvolume", de->location.type == BTRFS_ROOT_ITEM_KEY);
	json_add_str(o, "type", btrfs_ftype_name(de->type));
	json_add_u64(o, "transid", de->transid);
	add_fact(ctx, "dir_entries", o);
	return 0;
}

static int decode_dir_entries(struct log_ctx *ctx, const struct extent_buffer *leaf, int slot,
			      const struct btrfs_key *key)
{
	if (key->type == BTRFS_XATTR_ITEM_KEY)
		return btrfs_for_each_dir_entry(leaf, slot, add_xattr, ctx);
	return btrfs_for_each_dir_entry(leaf, slot, add_dir_entry, ctx);
}

static int decode_file_extent(struct log_ctx *ctx, const struct extent_buffer *leaf, int slot,
			      const struct btrfs_key *key)
{
	struct tlog_file_extent fe;
	json_object *o;

	/* shown as it is: replay is where a bad item is judged */
	if (btrfs_parse_file_extent(btrfs_item_ptr(leaf, slot), btrfs_item_size(leaf, slot),
				    key->offset, &fe))
		return -EUCLEAN;
	o = json_object_new_object();
	json_add_u64(o, "file_offset", key->offset);
	if (fe.type == BTRFS_FILE_EXTENT_INLINE) {
		json_add_u64(o, "length", fe.ram_bytes);
		json_add_str(o, "type", "inline");
		json_add_u64(o, "inline_size", fe.inline_len);
	} else if (fe.type == BTRFS_FILE_EXTENT_REG || fe.type == BTRFS_FILE_EXTENT_PREALLOC) {
		json_add_u64(o, "length", fe.num_bytes);
		json_add_str(o, "type", fe.disk_bytenr == 0 ? "hole" :
			     fe.type == BTRFS_FILE_EXTENT_REG ? "regular" : "prealloc");
		json_add_u64(o, "disk_bytenr", fe.disk_bytenr);
		json_add_u64(o, "disk_num_bytes", fe.disk_num_bytes);
		json_add_u64(o, "extent_offset", fe.offset);
	} else {
		/* replay aborts on such an item; show it rather than fail here */
		json_add_u64(o, "length", 0);
		json_add_str(o, "type", "unknown");
		json_add_u64(o, "type_value", fe.type);
	}
	json_add_u64(o, "ram_bytes", fe.ram_bytes);
	json_add_str(o, "compression", compression_name(fe.compression));
	json_add_u64(o, "generation", fe.generation);
	add_fact(ctx, "extents", o);
	return 0;
}

/*
 * A DIR_LOG_INDEX item (dir, 72, first) with value last says the log is
 * authoritative for indexes first..last of the directory: replay deletes
 * every committed entry in that range that the log does not have.  It does
 * so only while replaying the directory's inode item, so ranges of a
 * directory whose item is absent (or has nlink 0, which replay skips) do
 * nothing.  DIR_LOG_ITEM is the old hash-range form; replay ignores it.
 */
static int decode_dir_log(struct log_ctx *ctx, const struct extent_buffer *leaf, int slot,
			  const struct btrfs_key *key, const struct tlog_logged_inode *li)
{
	const struct btrfs_dir_log_item *dl = btrfs_item_ptr(leaf, slot);
	json_object *o;

	if (btrfs_item_size(leaf, slot) < sizeof(*dl))
		return -EUCLEAN;
	o = json_object_new_object();
	json_add_str(o, "key", key_type_name(key->type));
	json_add_u64(o, "start", key->offset);
	json_add_u64(o, "end", btrfs_dir_log_item_end(dl));
	json_add_bool(o, "applied", key->type == BTRFS_DIR_LOG_INDEX_KEY &&
		      li->has_inode_item && !li->ignored);
	add_fact(ctx, "dir_ranges", o);
	return 0;
}

static void decode_other(struct log_ctx *ctx, const struct btrfs_key *key)
{
	json_object *o = json_object_new_object();

	json_add_str(o, "key", key_type_name(key->type));
	json_add_u64(o, "offset", key->offset);
	add_fact(ctx, "other", o);
}

/* An item of the inode the cursor follows, by what the log model calls it. */
static int decode_inode_key(struct log_ctx *ctx, const struct tlog_log_cursor *cur)
{
	const struct extent_buffer *leaf = cur->iter.leaf;
	const struct btrfs_key *key = &cur->iter.key;
	int slot = cur->iter.slot;

	if (cur->first_of_inode)
		start_inode(ctx, cur->inode.ino);
	ctx->cur_key_type = key->type;

	switch (cur->kind) {
	case TLOG_LOG_INODE_ITEM:
		return decode_inode_item(ctx, leaf, slot, key);
	case TLOG_LOG_NAME:
		return decode_inode_refs(ctx, leaf, slot, key);
	case TLOG_LOG_XATTR:
	case TLOG_LOG_DIR_ENTRY:
		return decode_dir_entries(ctx, leaf, slot, key);
	case TLOG_LOG_EXTENT:
		return decode_file_extent(ctx, leaf, slot, key);
	case TLOG_LOG_DIR_RANGE:
		return decode_dir_log(ctx, leaf, slot, key, &cur->inode);
	default:
		break;
	}
	decode_other(ctx, key);
	return 0;
}

/* A csum item holds one checksum per sector from key.offset on. */
static int decode_csum(struct log_ctx *ctx, const struct extent_buffer *leaf, int slot,
		       const struct btrfs_key *key)
{
	struct tlog_csum_item item;
	json_object *o;

	if (btrfs_decode_csum_item(ctx->fs, leaf, slot, key, &item))
		return -EUCLEAN;
	o = json_object_new_object();
	json_add_u64(o, "start", item.start);
	json_add_u64(o, "length", item.end - item.start);
	json_object_array_add(ctx->jcsums, o);
	return 0;
}

static int decode_item(struct log_ctx *ctx, const struct tlog_log_cursor *cur)
{
	const struct btrfs_key *key = &cur->iter.key;
	json_object *o;

	switch (cur->kind) {
	case TLOG_LOG_CSUM:
		return decode_csum(ctx, cur->iter.leaf, cur->iter.slot, key);
	case TLOG_LOG_ORPHAN:
		json_object_array_add(ctx->jorphans, json_object_new_uint64(key->offset));
		return 0;
	case TLOG_LOG_SPECIAL:
		o = json_object_new_object();
		json_add_u64(o, "objectid", key->objectid);
		json_add_str(o, "key", key_type_name(key->type));
		json_add_u64(o, "offset", key->offset);
		json_object_array_add(ctx->jother, o);
		return 0;
	default:
		return decode_inode_key(ctx, cur);
	}
}

/* ---- walking the log ---- */

static int read_log_tree(struct log_ctx *ctx, u64 subvol, json_object *jtree)
{
	struct tlog_log_cursor cur;
	struct btrfs_root *root;
	int err;

	err = btrfs_read_log_root(ctx->fs, subvol, &root);
	if (err) {
		error_errno(err, "cannot read the log tree of subvolume %llu",
			    (unsigned long long)subvol);
		return err;
	}
	json_add_u64(jtree, "root", root->bytenr);
	json_add_u64(jtree, "level", root->level);
	json_add_u64(jtree, "generation", root->generation);
	ctx->jinodes = json_object_new_array();
	ctx->jcsums = json_object_new_array();
	ctx->jorphans = json_object_new_array();
	ctx->jother = json_object_new_array();
	json_object_object_add(jtree, "inodes", ctx->jinodes);
	json_object_object_add(jtree, "csums", ctx->jcsums);
	json_object_object_add(jtree, "orphans", ctx->jorphans);
	json_object_object_add(jtree, "other", ctx->jother);
	ctx->jinode = NULL;

	tlog_log_for_each_item(root, &cur) {
		char kbuf[128];

		err = decode_item(ctx, &cur);
		if (err) {
			btrfs_key_to_str(&cur.iter.key, kbuf, sizeof(kbuf));
			error("malformed item %s in log tree block %llu slot %d",
			      kbuf, (unsigned long long)cur.iter.leaf->start, cur.iter.slot);
			break;
		}
	}
	if (!err && cur.iter.ret < 0) {
		err = cur.iter.ret;
		error_errno(err, "cannot read the log tree of subvolume %llu",
			    (unsigned long long)subvol);
	}
	tlog_log_cursor_end(&cur);
	return err;
}

/*
 * The kernel reads the log root block expecting the transaction after the
 * committed one; a block of any other generation is not this image's log.
 */
static int check_log_root_block(struct tlog_fs *fs)
{
	struct btrfs_root *lrt = fs->log_root_tree;
	struct extent_buffer *eb;
	int err;

	err = read_tree_block(fs, lrt->bytenr, lrt->level, lrt->generation, &eb);
	if (err) {
		error_errno(err, "cannot read the log root tree");
		return err;
	}
	free_extent_buffer(eb);
	return 0;
}

static int describe_log_tree(struct tlog_fs *fs, u64 subvol, void *arg)
{
	struct log_ctx *ctx = arg;
	json_object *jtree = json_object_new_object();

	(void)fs;
	json_add_u64(jtree, "subvol", subvol);
	json_object_array_add(ctx->jtrees, jtree);
	/*
	 * read_log_tree() has reported its failure: stop with 1, so that
	 * only a failure to read the log root tree itself is negative.
	 */
	return read_log_tree(ctx, subvol, jtree) ? 1 : 0;
}

/* Every subvolume with a log has its log tree described in @ctx->jtrees. */
static int read_log(struct log_ctx *ctx)
{
	int err;

	err = check_log_root_block(ctx->fs);
	if (err)
		return err;
	err = tlog_log_for_each_subvol(ctx->fs, describe_log_tree, ctx);
	if (err < 0)
		error_errno(err, "cannot read the log root tree");
	return err;
}

/* ---- text ---- */

static void print_u64_or_max(u64 v)
{
	if (v == (u64)-1)
		printf("max");
	else
		printf("%llu", (unsigned long long)v);
}

static void print_inode_item(json_object *ii)
{
	u64 nlink = jget_u64(ii, "nlink");

	/* nbytes is not written by the logger: say so next to the value */
	printf("    %s, mode %04llo, size %llu, nlink %llu, nbytes %llu (not used by replay), generation %llu, transid %llu, uid %llu, gid %llu\n",
	       jget_str(ii, "type"), (unsigned long long)(jget_u64(ii, "mode") & 07777),
	       (unsigned long long)jget_u64(ii, "size"), (unsigned long long)nlink,
	       (unsigned long long)jget_u64(ii, "nbytes"),
	       (unsigned long long)jget_u64(ii, "generation"),
	       (unsigned long long)jget_u64(ii, "transid"),
	       (unsigned long long)jget_u64(ii, "uid"), (unsigned long long)jget_u64(ii, "gid"));
	if (nlink == 0)
		printf("    nlink 0: replay skips this inode and all its items\n");
	else if (jget_u64(ii, "generation") == 0)
		printf("    generation 0: logged as existing only, replay keeps the committed attributes\n");
}

static void print_names(json_object *names)
{
	for (size_t i = 0; i < json_object_array_length(names); i++) {
		json_object *n = json_object_array_get_idx(names, i);

		printf("    name \"%s\" in directory %llu, index %llu%s\n", jget_str(n, "name"),
		       (unsigned long long)jget_u64(n, "parent"),
		       (unsigned long long)jget_u64(n, "index"),
		       strcmp(jget_str(n, "key"), "INODE_EXTREF") ? "" : " (extref)");
	}
}

static void print_xattrs(json_object *xattrs)
{
	for (size_t i = 0; i < json_object_array_length(xattrs); i++)
		printf("    xattr \"%s\"\n",
		       json_object_get_string(json_object_array_get_idx(xattrs, i)));
}

static void print_extent(json_object *e)
{
	const char *type = jget_str(e, "type");
	u64 off = jget_u64(e, "file_offset"), len = jget_u64(e, "length");

	printf("    extent [%llu, %llu) %s", (unsigned long long)off,
	       (unsigned long long)(off + len), type);
	if (!strcmp(type, "inline"))
		printf(", %llu bytes in the item", (unsigned long long)jget_u64(e, "inline_size"));
	else if (!strcmp(type, "regular") || !strcmp(type, "prealloc"))
		printf(", disk %llu+%llu, extent offset %llu, ram %llu",
		       (unsigned long long)jget_u64(e, "disk_bytenr"),
		       (unsigned long long)jget_u64(e, "disk_num_bytes"),
		       (unsigned long long)jget_u64(e, "extent_offset"),
		       (unsigned long long)jget_u64(e, "ram_bytes"));
	else if (!strcmp(type, "unknown"))
		printf(" type %llu", (unsigned long long)jget_u64(e, "type_value"));
	if (strcmp(jget_str(e, "compression"), "none"))
		printf(", %s compressed", jget_str(e, "compression"));
	printf(", generation %llu\n", (unsigned long long)jget_u64(e, "generation"));
}

static void print_dir_entry(json_object *d)
{
	if (jget(d, "index"))
		printf("    entry index %llu", (unsigned long long)jget_u64(d, "index"));
	else
		printf("    entry (DIR_ITEM)");
	printf(" \"%s\" -> %s %llu (%s), transid %llu\n", jget_str(d, "name"),
	       jget_bool(d, "target_is_subvolume") ? "subvolume" : "inode",
	       (unsigned long long)jget_u64(d, "target"), jget_str(d, "type"),
	       (unsigned long long)jget_u64(d, "transid"));
}

static void print_dir_range(json_object *r, bool have_item)
{
	bool legacy = strcmp(jget_str(r, "key"), "DIR_LOG_INDEX") != 0;

	printf("    %s [", legacy ? "name hash range" : "index range");
	print_u64_or_max(jget_u64(r, "start"));
	printf(", ");
	print_u64_or_max(jget_u64(r, "end"));
	if (legacy)
		printf("] (DIR_LOG_ITEM): ignored by replay\n");
	else if (jget_bool(r, "applied"))
		printf("] logged: entries in it not in the log are deleted at replay\n");
	else if (have_item)
		printf("] logged, but unused: replay skips this directory (nlink 0)\n");
	else
		printf("] logged, but unused: the directory's inode item is not in the log\n");
}

static void print_array(json_object *o, const char *key, void (*fn)(json_object *))
{
	json_object *a = jget(o, key);

	for (size_t i = 0; a && i < json_object_array_length(a); i++)
		fn(json_object_array_get_idx(a, i));
}

static void print_other(json_object *x)
{
	printf("    item %s %llu (not decoded)\n", jget_str(x, "key"),
	       (unsigned long long)jget_u64(x, "offset"));
}

static void print_inode(json_object *ino)
{
	json_object *ii = jget(ino, "inode");
	json_object *ranges = jget(ino, "dir_ranges");

	printf("  inode %llu\n", (unsigned long long)jget_u64(ino, "ino"));
	if (ii)
		print_inode_item(ii);
	else
		printf("    no inode item in the log\n");
	print_names(jget(ino, "names"));
	print_xattrs(jget(ino, "xattrs"));
	print_array(ino, "extents", print_extent);
	print_array(ino, "dir_entries", print_dir_entry);
	for (size_t i = 0; i < json_object_array_length(ranges); i++)
		print_dir_range(json_object_array_get_idx(ranges, i), ii != NULL);
	print_array(ino, "other", print_other);
}

static void print_tree(json_object *t)
{
	json_object *csums = jget(t, "csums"), *orphans = jget(t, "orphans");
	json_object *other = jget(t, "other");

	printf("log tree of subvolume %llu: root %llu level %llu generation %llu\n",
	       (unsigned long long)jget_u64(t, "subvol"), (unsigned long long)jget_u64(t, "root"),
	       (unsigned long long)jget_u64(t, "level"),
	       (unsigned long long)jget_u64(t, "generation"));
	print_array(t, "inodes", print_inode);
	for (size_t i = 0; i < json_object_array_length(csums); i++) {
		json_object *c = json_object_array_get_idx(csums, i);
		u64 start = jget_u64(c, "start"), len = jget_u64(c, "length");

		printf("  csums for [%llu, %llu), %llu bytes\n", (unsigned long long)start,
		       (unsigned long long)(start + len), (unsigned long long)len);
	}
	for (size_t i = 0; i < json_object_array_length(orphans); i++)
		printf("  orphan item for inode %llu\n", (unsigned long long)
		       json_object_get_uint64(json_object_array_get_idx(orphans, i)));
	for (size_t i = 0; i < json_object_array_length(other); i++) {
		json_object *x = json_object_array_get_idx(other, i);

		printf("  item (%llu %s %llu) (not decoded)\n",
		       (unsigned long long)jget_u64(x, "objectid"), jget_str(x, "key"),
		       (unsigned long long)jget_u64(x, "offset"));
	}
}

static void print_text(json_object *top)
{
	json_object *trees = jget(top, "trees");

	if (!jget_u64(top, "log_root")) {
		printf("no log tree\n");
		return;
	}
	printf("log root tree %llu level %llu, committed generation %llu, log of transaction %llu\n",
	       (unsigned long long)jget_u64(top, "log_root"),
	       (unsigned long long)jget_u64(top, "log_root_level"),
	       (unsigned long long)jget_u64(top, "generation"),
	       (unsigned long long)jget_u64(top, "generation") + 1);
	for (size_t i = 0; i < json_object_array_length(trees); i++)
		print_tree(json_object_array_get_idx(trees, i));
}

/* ---- the command ---- */

static json_object *describe_log(struct tlog_fs *fs)
{
	struct log_ctx ctx = { .fs = fs };
	json_object *top = json_object_new_object();
	json_object *trees = json_object_new_array();

	if (!fs->log_root_tree) {
		json_add_u64(top, "log_root", 0);
		json_object_object_add(top, "trees", trees);
		return top;
	}
	json_add_u64(top, "log_root", fs->log_root_tree->bytenr);
	json_add_u64(top, "log_root_level", fs->log_root_tree->level);
	json_add_u64(top, "generation", fs->generation);
	json_object_object_add(top, "trees", trees);
	ctx.jtrees = trees;
	if (read_log(&ctx)) {
		json_object_put(top);
		return NULL;
	}
	return top;
}

static int cmd_dump_log(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	struct tlog_open_opts opts;
	struct tlog_fs *fs;
	json_object *top;
	int ret = 0;

	cmd_parse_common_options(cmd, argc, argv, long_options, &common);
	check_argc(cmd, argc, 1, 1);
	cmd_open_opts(cmd, &common, &opts);
	if (open_image(argv[optind], &opts, &fs))
		return 1;
	if (!fs->log_root_tree && fs->super_mirror != 0 && common.format != OUTPUT_JSON) {
		report_no_log(fs, argv[optind], false);
		tlog_close(fs);
		return 0;
	}
	tlog_error_clear();
	top = describe_log(fs);
	if (!top) {
		ret = 1;
	} else if (common.format == OUTPUT_JSON) {
		if (output_json(top))
			ret = 1;
	} else {
		print_text(top);
		json_object_put(top);
	}
	tlog_close(fs);
	return ret;
}

const struct cmd_struct cmd_struct_dump_log = {
	.name = "dump-log",
	.fn = cmd_dump_log,
	.usage = dump_log_usage,
	.flags = CMD_JSON,
};
