// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tree block decoding: text laid out like `btrfs inspect-internal dump-tree`
 * (so that the two can be compared with diff) and json-c objects carrying
 * the same fields.
 *
 * Item contents are untrusted.  The block checker only promises that every
 * item's byte range lies inside the leaf, so each decoder checks the item
 * size before it looks at a structure, and walks variable-length records
 * against what is left of the item.  Where the data stops making sense a
 * short note is shown in place of the rest and the dump goes on.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uuid/uuid.h>

#include "print-tree.h"
#include "errctx.h"
#include "inode.h"
#include "tree-checker.h"
#include "volumes.h"

/* Key types that only old filesystems have; format.h does not need them. */
#define BTRFS_LEGACY_CSUM_ITEM_KEY	120

/* Header of a v1 free space cache, keyed (FREE_SPACE, 0, block group). */
struct btrfs_free_space_header {
	struct btrfs_disk_key location;
	__le64 generation;
	__le64 num_entries;
	__le64 num_bitmaps;
} __packed;

/* Key ids of qgroups pack a 16-bit level above a 48-bit subvolume id. */
#define QGROUP_LEVEL_SHIFT	48
#define QGROUP_STATUS_FLAG_ON		(1ULL << 0)
#define QGROUP_STATUS_FLAG_RESCAN	(1ULL << 1)
#define QGROUP_STATUS_FLAG_INCONSISTENT	(1ULL << 2)
#define QGROUP_STATUS_FLAG_SIMPLE_MODE	(1ULL << 3)

#define UUID_STR_LEN	37
#define KEY_STR_LEN	128
#define FLAGS_STR_LEN	256

/* Everything a decoder needs to know about the item it is showing. */
struct item_ctx {
	struct tlog_fs *fs;
	const struct extent_buffer *leaf;
	int slot;
	struct btrfs_key key;
	const u8 *ptr;
	u32 size;
	FILE *out;		/* text mode when set */
	json_object *data;	/* JSON mode: the item's "data" object */
};

struct flag_name {
	u64 bit;
	const char *name;
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- small formatting helpers ---- */

static void flags_to_str(u64 flags, const struct flag_name *names, size_t nr,
			 char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nr; i++) {
		if (!(flags & names[i].bit))
			continue;
		len += snprintf(buf + len, len < size ? size - len : 0, "%s%s",
				len ? "|" : "", names[i].name);
	}
	if (!len)
		snprintf(buf, size, "none");
}

static void inode_flags_to_str(u64 flags, char *buf, size_t size)
{
	static const struct flag_name names[] = {
		{ BTRFS_INODE_NODATASUM, "NODATASUM" },
		{ BTRFS_INODE_NODATACOW, "NODATACOW" },
		{ BTRFS_INODE_READONLY, "READONLY" },
		{ BTRFS_INODE_NOCOMPRESS, "NOCOMPRESS" },
		{ BTRFS_INODE_PREALLOC, "PREALLOC" },
		{ BTRFS_INODE_SYNC, "SYNC" },
		{ BTRFS_INODE_IMMUTABLE, "IMMUTABLE" },
		{ BTRFS_INODE_APPEND, "APPEND" },
		{ BTRFS_INODE_NODUMP, "NODUMP" },
		{ BTRFS_INODE_NOATIME, "NOATIME" },
		{ BTRFS_INODE_DIRSYNC, "DIRSYNC" },
		{ BTRFS_INODE_COMPRESS, "COMPRESS" },
	};

	flags_to_str(flags, names, ARRAY_SIZE(names), buf, size);
}

static void root_flags_to_str(u64 flags, char *buf, size_t size)
{
	static const struct flag_name names[] = {
		{ BTRFS_ROOT_SUBVOL_RDONLY, "RDONLY" },
	};

	flags_to_str(flags, names, ARRAY_SIZE(names), buf, size);
}

static void extent_flags_to_str(u64 flags, char *buf, size_t size)
{
	static const struct flag_name names[] = {
		{ BTRFS_EXTENT_FLAG_DATA, "DATA" },
		{ BTRFS_EXTENT_FLAG_TREE_BLOCK, "TREE_BLOCK" },
		{ BTRFS_BLOCK_FLAG_FULL_BACKREF, "FULL_BACKREF" },
	};

	flags_to_str(flags, names, ARRAY_SIZE(names), buf, size);
}

static void header_flags_to_str(u64 flags, char *buf, size_t size)
{
	static const struct flag_name names[] = {
		{ BTRFS_HEADER_FLAG_WRITTEN, "WRITTEN" },
		{ BTRFS_HEADER_FLAG_RELOC, "RELOC" },
	};

	flags_to_str(flags, names, ARRAY_SIZE(names), buf, size);
}

/* dump-tree spells the qgroup state as ON/OFF plus the transient bits. */
static void qgroup_status_flags_to_str(u64 flags, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s%s%s",
		 flags & QGROUP_STATUS_FLAG_ON ? "ON" : "OFF",
		 flags & QGROUP_STATUS_FLAG_RESCAN ? "|SCANNING" : "",
		 flags & QGROUP_STATUS_FLAG_INCONSISTENT ? "|INCONSISTENT" : "",
		 flags & QGROUP_STATUS_FLAG_SIMPLE_MODE ? "|SIMPLE_MODE" : "");
}

static const char *compression_name(u8 type)
{
	switch (type) {
	case BTRFS_COMPRESS_NONE: return "none";
	case BTRFS_COMPRESS_ZLIB: return "zlib";
	case BTRFS_COMPRESS_LZO: return "lzo";
	case BTRFS_COMPRESS_ZSTD: return "zstd";
	}
	return "unknown";
}

static const char *file_extent_type_name(u8 type)
{
	switch (type) {
	case BTRFS_FILE_EXTENT_INLINE: return "inline";
	case BTRFS_FILE_EXTENT_REG: return "regular";
	case BTRFS_FILE_EXTENT_PREALLOC: return "prealloc";
	}
	return "unknown";
}

static void dir_type_to_str(u8 type, char *buf, size_t size)
{
	if (type < BTRFS_FT_MAX)
		snprintf(buf, size, "%s", btrfs_ftype_name(type));
	else
		snprintf(buf, size, "DIR_ITEM.%u", type);
}

/*
 * dump-tree shows at most BTRFS_NAME_LEN bytes of a name or xattr value;
 * the text output does the same so that the two stay comparable (the JSON
 * output carries the whole value).
 */
static int text_len(size_t len)
{
	return len < BTRFS_NAME_LEN ? (int)len : BTRFS_NAME_LEN;
}

static void uuid_to_str(const u8 *uuid, char *buf)
{
	uuid_unparse(uuid, buf);
}

/* "sec.nsec (YYYY-MM-DD HH:MM:SS)" in local time, as dump-tree shows times. */
static void timespec_to_str(const struct btrfs_timespec *ts, char *buf, size_t size)
{
	u64 sec = btrfs_timespec_sec(ts);
	time_t t = (time_t)sec;
	char date[64];
	struct tm tm;

	if ((u64)t != sec || !localtime_r(&t, &tm) ||
	    !strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(date, sizeof(date), "invalid");
	snprintf(buf, size, "%llu.%u (%s)", (unsigned long long)sec,
		 btrfs_timespec_nsec(ts), date);
}

/* ---- JSON helpers ---- */

static void jadd(json_object *obj, const char *name, json_object *val)
{
	json_object_object_add(obj, name, val);
}

static void jadd_u64(json_object *obj, const char *name, u64 val)
{
	jadd(obj, name, json_object_new_uint64(val));
}

static void jadd_s64(json_object *obj, const char *name, s64 val)
{
	jadd(obj, name, json_object_new_int64(val));
}

static void jadd_str(json_object *obj, const char *name, const char *val)
{
	jadd(obj, name, json_object_new_string(val));
}

/* Length of the valid UTF-8 sequence at @p (at most @len bytes), or 0. */
static size_t utf8_seq_len(const u8 *p, size_t len)
{
	u32 cp;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates and values past Unicode are not text */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * A json-c string for arbitrary bytes: names on disk need not be UTF-8 and
 * json-c would emit invalid JSON for them.  Control bytes and bytes that are
 * not part of valid UTF-8 become "\xNN", and a backslash is doubled so that
 * the escaping cannot be confused with a name that contains "\x".
 */
json_object *btrfs_json_bytes(const void *data, size_t len)
{
	const u8 *p = data;
	json_object *ret;
	char *buf;
	size_t o = 0;

	buf = malloc(len * 4 + 1);
	if (!buf)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq_len(p + i, len - i);

		if (n == 1 && p[i] == '\\') {
			buf[o++] = '\\';
			buf[o++] = '\\';
		} else if (n == 0 || (n == 1 && (p[i] < 0x20 || p[i] == 0x7f))) {
			o += sprintf(buf + o, "\\x%02x", p[i]);
			n = 1;
		} else {
			memcpy(buf + o, p + i, n);
			o += n;
		}
		i += n;
	}
	ret = json_object_new_string_len(buf, (int)o);
	free(buf);
	return ret;
}

static void jadd_bytes(json_object *obj, const char *name, const void *data, size_t len)
{
	jadd(obj, name, btrfs_json_bytes(data, len));
}

static void jadd_uuid(json_object *obj, const char *name, const u8 *uuid)
{
	char str[UUID_STR_LEN];

	uuid_to_str(uuid, str);
	jadd_str(obj, name, str);
}

static json_object *key_to_json(const struct btrfs_key *key)
{
	json_object *obj = json_object_new_object();
	char type[32];

	btrfs_key_type_to_str(key->type, type, sizeof(type));
	jadd_u64(obj, "objectid", key->objectid);
	jadd_u64(obj, "type", key->type);
	jadd_str(obj, "type_name", type);
	jadd_u64(obj, "offset", key->offset);
	return obj;
}

static void jadd_disk_key(json_object *obj, const char *name,
			  const struct btrfs_disk_key *disk)
{
	struct btrfs_key key;

	btrfs_disk_key_to_cpu(&key, disk);
	jadd(obj, name, key_to_json(&key));
}

static void jadd_time(json_object *obj, const char *name, const struct btrfs_timespec *ts)
{
	json_object *t = json_object_new_object();

	/* seconds are signed on disk: a time before 1970 is negative */
	jadd_s64(t, "sec", (s64)btrfs_timespec_sec(ts));
	jadd_u64(t, "nsec", btrfs_timespec_nsec(ts));
	jadd(obj, name, t);
}

/* ---- notes about malformed data ---- */

__attribute__((format(printf, 2, 3)))
static void item_note(struct item_ctx *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->out)
		fprintf(c->out, "\t\t<%s>\n", msg);
	else
		jadd_str(c->data, "error", msg);
}

/* Whether the item holds at least @need bytes; says so when it does not. */
static bool item_fits(struct item_ctx *c, size_t need)
{
	if (c->size >= need)
		return true;
	item_note(c, "item too small: %u bytes, need %zu", c->size, need);
	return false;
}

/*
 * The item, when its type is one struct of a fixed size and it can be
 * read; a note says what is wrong with it.
 */
static const void *fixed_item(struct item_ctx *c)
{
	char note[256];
	const void *p = btrfs_fixed_item_at(c->leaf, c->slot, &c->key, note, sizeof(note));

	if (note[0])
		item_note(c, "%s", note);
	return p;
}

/* ---- names of keys and trees ---- */

static const char *objectid_name(u64 objectid, u8 key_type)
{
	switch (objectid) {
	case BTRFS_DEV_STATS_OBJECTID:
		return key_type == BTRFS_PERSISTENT_ITEM_KEY ? "DEV_STATS" : NULL;
	case BTRFS_ROOT_TREE_OBJECTID:
		/* the device items share objectid 1 with the root tree */
		return key_type == BTRFS_DEV_ITEM_KEY ? "DEV_ITEMS" : "ROOT_TREE";
	case BTRFS_EXTENT_TREE_OBJECTID: return "EXTENT_TREE";
	case BTRFS_CHUNK_TREE_OBJECTID: return "CHUNK_TREE";
	case BTRFS_DEV_TREE_OBJECTID: return "DEV_TREE";
	case BTRFS_FS_TREE_OBJECTID: return "FS_TREE";
	case BTRFS_ROOT_TREE_DIR_OBJECTID: return "ROOT_TREE_DIR";
	case BTRFS_CSUM_TREE_OBJECTID: return "CSUM_TREE";
	case BTRFS_QUOTA_TREE_OBJECTID: return "QUOTA_TREE";
	case BTRFS_UUID_TREE_OBJECTID: return "UUID_TREE";
	case BTRFS_FREE_SPACE_TREE_OBJECTID: return "FREE_SPACE_TREE";
	case BTRFS_BLOCK_GROUP_TREE_OBJECTID: return "BLOCK_GROUP_TREE";
	case BTRFS_RAID_STRIPE_TREE_OBJECTID: return "RAID_STRIPE_TREE";
	case BTRFS_BALANCE_OBJECTID: return "BALANCE";
	case BTRFS_ORPHAN_OBJECTID: return "ORPHAN";
	case BTRFS_TREE_LOG_OBJECTID: return "TREE_LOG";
	case BTRFS_TREE_LOG_FIXUP_OBJECTID: return "LOG_FIXUP";
	case BTRFS_TREE_RELOC_OBJECTID: return "TREE_RELOC";
	case BTRFS_DATA_RELOC_TREE_OBJECTID: return "DATA_RELOC_TREE";
	case BTRFS_EXTENT_CSUM_OBJECTID: return "EXTENT_CSUM";
	case BTRFS_FREE_SPACE_OBJECTID: return "FREE_SPACE";
	case BTRFS_FREE_INO_OBJECTID: return "FREE_INO";
	case BTRFS_MULTIPLE_OBJECTIDS: return "MULTIPLE";
	case (u64)-1: return "-1";
	case BTRFS_FIRST_CHUNK_TREE_OBJECTID:
		/* 256 is an ordinary inode number everywhere but in chunk keys */
		return key_type == BTRFS_CHUNK_ITEM_KEY ? "FIRST_CHUNK_TREE" : NULL;
	}
	return NULL;
}

void btrfs_objectid_to_str(u64 objectid, u8 key_type, char *buf, size_t size)
{
	const char *name;

	switch (key_type) {
	case BTRFS_DEV_EXTENT_KEY:
		/* the objectid is a device id, not a tree */
		snprintf(buf, size, "%llu", (unsigned long long)objectid);
		return;
	case BTRFS_QGROUP_RELATION_KEY:
		snprintf(buf, size, "%llu/%llu",
			 (unsigned long long)(objectid >> QGROUP_LEVEL_SHIFT),
			 (unsigned long long)(objectid & ((1ULL << QGROUP_LEVEL_SHIFT) - 1)));
		return;
	case BTRFS_UUID_KEY_SUBVOL:
	case BTRFS_UUID_KEY_RECEIVED_SUBVOL:
		/* half of a UUID, meaningless in decimal */
		snprintf(buf, size, "0x%016llx", (unsigned long long)objectid);
		return;
	}
	name = objectid_name(objectid, key_type);
	if (name)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "%llu", (unsigned long long)objectid);
}

static const char *key_type_name(u8 type)
{
	switch (type) {
	case BTRFS_INODE_ITEM_KEY: return "INODE_ITEM";
	case BTRFS_INODE_REF_KEY: return "INODE_REF";
	case BTRFS_INODE_EXTREF_KEY: return "INODE_EXTREF";
	case BTRFS_XATTR_ITEM_KEY: return "XATTR_ITEM";
	case BTRFS_VERITY_DESC_ITEM_KEY: return "VERITY_DESC_ITEM";
	case BTRFS_VERITY_MERKLE_ITEM_KEY: return "VERITY_MERKLE_ITEM";
	case BTRFS_ORPHAN_ITEM_KEY: return "ORPHAN_ITEM";
	case BTRFS_DIR_LOG_ITEM_KEY: return "DIR_LOG_ITEM";
	case BTRFS_DIR_LOG_INDEX_KEY: return "DIR_LOG_INDEX";
	case BTRFS_DIR_ITEM_KEY: return "DIR_ITEM";
	case BTRFS_DIR_INDEX_KEY: return "DIR_INDEX";
	case BTRFS_EXTENT_DATA_KEY: return "EXTENT_DATA";
	case BTRFS_LEGACY_CSUM_ITEM_KEY: return "CSUM_ITEM";
	case BTRFS_EXTENT_CSUM_KEY: return "EXTENT_CSUM";
	case BTRFS_ROOT_ITEM_KEY: return "ROOT_ITEM";
	case BTRFS_ROOT_BACKREF_KEY: return "ROOT_BACKREF";
	case BTRFS_ROOT_REF_KEY: return "ROOT_REF";
	case BTRFS_EXTENT_ITEM_KEY: return "EXTENT_ITEM";
	case BTRFS_METADATA_ITEM_KEY: return "METADATA_ITEM";
	case BTRFS_EXTENT_OWNER_REF_KEY: return "EXTENT_OWNER_REF";
	case BTRFS_TREE_BLOCK_REF_KEY: return "TREE_BLOCK_REF";
	case BTRFS_EXTENT_DATA_REF_KEY: return "EXTENT_DATA_REF";
	case BTRFS_EXTENT_REF_V0_KEY: return "EXTENT_REF_V0";
	case BTRFS_SHARED_BLOCK_REF_KEY: return "SHARED_BLOCK_REF";
	case BTRFS_SHARED_DATA_REF_KEY: return "SHARED_DATA_REF";
	case BTRFS_BLOCK_GROUP_ITEM_KEY: return "BLOCK_GROUP_ITEM";
	case BTRFS_FREE_SPACE_INFO_KEY: return "FREE_SPACE_INFO";
	case BTRFS_FREE_SPACE_EXTENT_KEY: return "FREE_SPACE_EXTENT";
	case BTRFS_FREE_SPACE_BITMAP_KEY: return "FREE_SPACE_BITMAP";
	case BTRFS_DEV_EXTENT_KEY: return "DEV_EXTENT";
	case BTRFS_DEV_ITEM_KEY: return "DEV_ITEM";
	case BTRFS_CHUNK_ITEM_KEY: return "CHUNK_ITEM";
	case BTRFS_RAID_STRIPE_KEY: return "RAID_STRIPE";
	case BTRFS_QGROUP_STATUS_KEY: return "QGROUP_STATUS";
	case BTRFS_QGROUP_INFO_KEY: return "QGROUP_INFO";
	case BTRFS_QGROUP_LIMIT_KEY: return "QGROUP_LIMIT";
	case BTRFS_QGROUP_RELATION_KEY: return "QGROUP_RELATION";
	case BTRFS_TEMPORARY_ITEM_KEY: return "TEMPORARY_ITEM";
	case BTRFS_PERSISTENT_ITEM_KEY: return "PERSISTENT_ITEM";
	case BTRFS_DEV_REPLACE_KEY: return "DEV_REPLACE";
	case BTRFS_UUID_KEY_SUBVOL: return "UUID_KEY_SUBVOL";
	case BTRFS_UUID_KEY_RECEIVED_SUBVOL: return "UUID_KEY_RECEIVED_SUBVOL";
	case BTRFS_STRING_ITEM_KEY: return "STRING_ITEM";
	}
	return NULL;
}

void btrfs_key_type_to_str(u8 type, char *buf, size_t size)
{
	const char *name = key_type_name(type);

	if (name)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "UNKNOWN.%u", type);
}

static void key_offset_to_str(const struct btrfs_key *key, char *buf, size_t size)
{
	switch (key->type) {
	case BTRFS_QGROUP_INFO_KEY:
	case BTRFS_QGROUP_LIMIT_KEY:
	case BTRFS_QGROUP_RELATION_KEY:
		snprintf(buf, size, "%llu/%llu",
			 (unsigned long long)(key->offset >> QGROUP_LEVEL_SHIFT),
			 (unsigned long long)(key->offset & ((1ULL << QGROUP_LEVEL_SHIFT) - 1)));
		return;
	case BTRFS_UUID_KEY_SUBVOL:
	case BTRFS_UUID_KEY_RECEIVED_SUBVOL:
		snprintf(buf, size, "0x%016llx", (unsigned long long)key->offset);
		return;
	case BTRFS_ROOT_ITEM_KEY:
		/* a snapshot's location key carries (u64)-1 and shows it in full */
		break;
	default:
		if (key->offset == (u64)-1) {
			snprintf(buf, size, "-1");
			return;
		}
		break;
	}
	snprintf(buf, size, "%llu", (unsigned long long)key->offset);
}

void btrfs_key_to_str(const struct btrfs_key *key, char *buf, size_t size)
{
	char objectid[64], type[32], offset[64];

	btrfs_objectid_to_str(key->objectid, key->type, objectid, sizeof(objectid));
	/* the v1 space cache header uses type 0 on purpose */
	if (key->type == 0 && key->objectid == BTRFS_FREE_SPACE_OBJECTID)
		snprintf(type, sizeof(type), "UNTYPED");
	else
		btrfs_key_type_to_str(key->type, type, sizeof(type));
	key_offset_to_str(key, offset, sizeof(offset));
	snprintf(buf, size, "(%s %s %s)", objectid, type, offset);
}

static void disk_key_to_str(const struct btrfs_disk_key *disk, char *buf, size_t size)
{
	struct btrfs_key key;

	btrfs_disk_key_to_cpu(&key, disk);
	btrfs_key_to_str(&key, buf, size);
}

void btrfs_tree_name(u64 objectid, char *buf, size_t size)
{
	const char *name = NULL;

	switch (objectid) {
	case BTRFS_ROOT_TREE_OBJECTID: name = "root"; break;
	case BTRFS_EXTENT_TREE_OBJECTID: name = "extent"; break;
	case BTRFS_CHUNK_TREE_OBJECTID: name = "chunk"; break;
	case BTRFS_DEV_TREE_OBJECTID: name = "device"; break;
	case BTRFS_FS_TREE_OBJECTID: name = "fs"; break;
	case BTRFS_ROOT_TREE_DIR_OBJECTID: name = "directory"; break;
	case BTRFS_CSUM_TREE_OBJECTID: name = "checksum"; break;
	case BTRFS_QUOTA_TREE_OBJECTID: name = "quota"; break;
	case BTRFS_UUID_TREE_OBJECTID: name = "uuid"; break;
	case BTRFS_FREE_SPACE_TREE_OBJECTID: name = "free space"; break;
	case BTRFS_BLOCK_GROUP_TREE_OBJECTID: name = "block group"; break;
	case BTRFS_RAID_STRIPE_TREE_OBJECTID: name = "raid stripe"; break;
	case BTRFS_ORPHAN_OBJECTID: name = "orphan"; break;
	case BTRFS_TREE_LOG_OBJECTID: name = "log"; break;
	case BTRFS_TREE_LOG_FIXUP_OBJECTID: name = "log fixup"; break;
	case BTRFS_TREE_RELOC_OBJECTID: name = "reloc"; break;
	case BTRFS_DATA_RELOC_TREE_OBJECTID: name = "data reloc"; break;
	case BTRFS_EXTENT_CSUM_OBJECTID: name = "extent checksum"; break;
	case BTRFS_MULTIPLE_OBJECTIDS: name = "multiple"; break;
	default:
		if (objectid >= BTRFS_FIRST_FREE_OBJECTID &&
		    objectid <= BTRFS_LAST_FREE_OBJECTID)
			name = "file";
		break;
	}
	if (name)
		snprintf(buf, size, "%s tree", name);
	else
		snprintf(buf, size, "tree %llu", (unsigned long long)objectid);
}

/* ---- inodes, names and directories ---- */

static void print_inode_item(struct item_ctx *c)
{
	const struct btrfs_inode_item *ii;
	char flags[FLAGS_STR_LEN], note[256];
	int ret = btrfs_decode_inode_item(c->fs, c->leaf, c->slot, &c->key, &ii, note,
					  sizeof(note));

	if (note[0])
		item_note(c, "%s", note);
	if (ret)
		return;
	inode_flags_to_str(btrfs_inode_item_flags(ii), flags, sizeof(flags));
	if (c->out) {
		static const char *const names[] = { "atime", "ctime", "mtime", "otime" };
		const struct btrfs_timespec *times[] = {
			&ii->atime, &ii->ctime, &ii->mtime, &ii->otime
		};

		fprintf(c->out,
			"\t\tgeneration %llu transid %llu size %llu nbytes %llu\n"
			"\t\tblock group %llu mode %o links %u uid %u gid %u rdev %llu\n"
			"\t\tsequence %llu flags 0x%llx(%s)\n",
			(unsigned long long)btrfs_inode_item_generation(ii),
			(unsigned long long)btrfs_inode_item_transid(ii),
			(unsigned long long)btrfs_inode_item_size(ii),
			(unsigned long long)btrfs_inode_item_nbytes(ii),
			(unsigned long long)btrfs_inode_item_block_group(ii),
			btrfs_inode_item_mode(ii), btrfs_inode_item_nlink(ii),
			btrfs_inode_item_uid(ii), btrfs_inode_item_gid(ii),
			(unsigned long long)btrfs_inode_item_rdev(ii),
			(unsigned long long)btrfs_inode_item_sequence(ii),
			(unsigned long long)btrfs_inode_item_flags(ii), flags);
		for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
			char ts[128];

			timespec_to_str(times[i], ts, sizeof(ts));
			fprintf(c->out, "\t\t%s %s\n", names[i], ts);
		}
		return;
	}
	jadd_u64(c->data, "generation", btrfs_inode_item_generation(ii));
	jadd_u64(c->data, "transid", btrfs_inode_item_transid(ii));
	jadd_u64(c->data, "size", btrfs_inode_item_size(ii));
	jadd_u64(c->data, "nbytes", btrfs_inode_item_nbytes(ii));
	jadd_u64(c->data, "block_group", btrfs_inode_item_block_group(ii));
	jadd_u64(c->data, "mode", btrfs_inode_item_mode(ii));
	jadd_u64(c->data, "links", btrfs_inode_item_nlink(ii));
	jadd_u64(c->data, "uid", btrfs_inode_item_uid(ii));
	jadd_u64(c->data, "gid", btrfs_inode_item_gid(ii));
	jadd_u64(c->data, "rdev", btrfs_inode_item_rdev(ii));
	jadd_u64(c->data, "sequence", btrfs_inode_item_sequence(ii));
	jadd_u64(c->data, "flags", btrfs_inode_item_flags(ii));
	jadd_str(c->data, "flags_names", flags);
	jadd_time(c->data, "atime", &ii->atime);
	jadd_time(c->data, "ctime", &ii->ctime);
	jadd_time(c->data, "mtime", &ii->mtime);
	jadd_time(c->data, "otime", &ii->otime);
}

/*
 * An INODE_REF item packs one (index, name) record per hard link in a dir,
 * an INODE_EXTREF one (index, parent, name) per name hash.
 */
static void print_one_ref(struct item_ctx *c, const struct tlog_ref_entry *ref,
			  json_object *refs)
{
	bool ext = c->key.type == BTRFS_INODE_EXTREF_KEY;
	json_object *r;

	if (c->out) {
		fprintf(c->out, "\t\tindex %llu", (unsigned long long)ref->index);
		if (ext)
			fprintf(c->out, " parent %llu", (unsigned long long)ref->parent);
		fprintf(c->out, " namelen %u name: %.*s\n", ref->name_len,
			text_len(ref->name_len), ref->name);
		return;
	}
	r = json_object_new_object();
	jadd_u64(r, "index", ref->index);
	if (ext)
		jadd_u64(r, "parent", ref->parent);
	jadd_u64(r, "namelen", ref->name_len);
	jadd_bytes(r, "name", ref->name, ref->name_len);
	json_object_array_add(refs, r);
}

static void print_one_dir_entry(struct item_ctx *c, const struct tlog_dir_entry *de,
				json_object *entries)
{
	char type[32];

	dir_type_to_str(de->type, type, sizeof(type));
	if (c->out) {
		char key[KEY_STR_LEN];

		btrfs_key_to_str(&de->location, key, sizeof(key));
		fprintf(c->out, "\t\tlocation key %s type %s\n", key, type);
		fprintf(c->out, "\t\ttransid %llu data_len %u name_len %u\n",
			(unsigned long long)de->transid, de->data_len, de->name_len);
		fprintf(c->out, "\t\tname: %.*s\n", text_len(de->name_len), de->name);
		if (de->data_len)
			fprintf(c->out, "\t\tdata %.*s\n", text_len(de->data_len),
				(const char *)de->data);
	} else {
		json_object *e = json_object_new_object();

		jadd(e, "location", key_to_json(&de->location));
		jadd_u64(e, "type", de->type);
		jadd_str(e, "type_name", type);
		jadd_u64(e, "transid", de->transid);
		jadd_u64(e, "data_len", de->data_len);
		jadd_u64(e, "name_len", de->name_len);
		jadd_bytes(e, "name", de->name, de->name_len);
		if (de->data_len)
			jadd_bytes(e, "data", de->data, de->data_len);
		json_object_array_add(entries, e);
	}
}

/*
 * Decode and print the entry at @cur of a packed item (the names of an
 * inode ref, the entries of a dir item); its length, or -EUCLEAN when
 * nothing more can be read.  @note says what is wrong.
 */
static int print_packed_entry(struct item_ctx *c, u32 cur, json_object *array,
			      char *note, size_t note_size)
{
	int len;

	if (c->key.type == BTRFS_INODE_REF_KEY || c->key.type == BTRFS_INODE_EXTREF_KEY) {
		struct tlog_ref_entry ref;

		len = btrfs_ref_entry_at(c->leaf, c->slot, &c->key, cur, &ref, note, note_size);
		if (len >= 0)
			print_one_ref(c, &ref, array);
	} else {
		struct tlog_dir_entry de;

		len = btrfs_dir_entry_at(c->leaf, c->slot, &c->key, cur, &de, note, note_size);
		if (len >= 0)
			print_one_dir_entry(c, &de, array);
	}
	return len;
}

/* Every entry that can be read is shown, with a note for each rule it breaks. */
static void print_packed_item(struct item_ctx *c, const char *array_name)
{
	json_object *array = c->out ? NULL : json_object_new_array();
	u32 cur = 0;

	while (cur < c->size) {
		char note[256];
		int len = print_packed_entry(c, cur, array, note, sizeof(note));

		if (note[0])
			item_note(c, "%s", note);
		if (len < 0)
			break;
		cur += len;
	}
	if (array)
		jadd(c->data, array_name, array);
}

static void print_dir_log_item(struct item_ctx *c)
{
	const struct btrfs_dir_log_item *dl = (const void *)c->ptr;

	if (!item_fits(c, sizeof(*dl)))
		return;
	if (c->out)
		fprintf(c->out, "\t\tdir log end %llu\n",
			(unsigned long long)btrfs_dir_log_item_end(dl));
	else
		jadd_u64(c->data, "end", btrfs_dir_log_item_end(dl));
}

static void print_orphan_item(struct item_ctx *c)
{
	if (c->out)
		fprintf(c->out, "\t\torphan item\n");
}

/* ---- file data ---- */

static void print_file_extent(struct item_ctx *c)
{
	struct tlog_file_extent fe;
	bool whole;

	/* shown as far as the item goes: a short one says so, and no more */
	if (!item_fits(c, BTRFS_FILE_EXTENT_INLINE_DATA_START))
		return;
	whole = btrfs_parse_file_extent(c->ptr, c->size, c->key.offset, &fe) == 0;
	if (c->out) {
		fprintf(c->out, "\t\tgeneration %llu type %u (%s)\n",
			(unsigned long long)fe.generation, fe.type, file_extent_type_name(fe.type));
	} else {
		jadd_u64(c->data, "generation", fe.generation);
		jadd_u64(c->data, "type", fe.type);
		jadd_str(c->data, "type_name", file_extent_type_name(fe.type));
		jadd_u64(c->data, "ram_bytes", fe.ram_bytes);
		jadd_u64(c->data, "compression", fe.compression);
		jadd_str(c->data, "compression_name", compression_name(fe.compression));
		jadd_u64(c->data, "encryption", fe.encryption);
		jadd_u64(c->data, "other_encoding", fe.other_encoding);
	}

	if (fe.type == BTRFS_FILE_EXTENT_INLINE) {
		if (c->out)
			fprintf(c->out,
				"\t\tinline extent data size %u ram_bytes %llu compression %u (%s)\n",
				fe.inline_len, (unsigned long long)fe.ram_bytes,
				fe.compression, compression_name(fe.compression));
		else
			jadd_u64(c->data, "inline_size", fe.inline_len);
		return;
	}
	if (fe.type != BTRFS_FILE_EXTENT_REG && fe.type != BTRFS_FILE_EXTENT_PREALLOC)
		return;
	if (!whole && !item_fits(c, sizeof(struct btrfs_file_extent_item)))
		return;
	if (!c->out) {
		jadd_u64(c->data, "disk_bytenr", fe.disk_bytenr);
		jadd_u64(c->data, "disk_num_bytes", fe.disk_num_bytes);
		jadd_u64(c->data, "offset", fe.offset);
		jadd_u64(c->data, "num_bytes", fe.num_bytes);
		return;
	}
	if (fe.type == BTRFS_FILE_EXTENT_PREALLOC) {
		fprintf(c->out, "\t\tprealloc data disk byte %llu nr %llu\n"
			"\t\tprealloc data offset %llu nr %llu\n",
			(unsigned long long)fe.disk_bytenr, (unsigned long long)fe.disk_num_bytes,
			(unsigned long long)fe.offset, (unsigned long long)fe.num_bytes);
		return;
	}
	fprintf(c->out, "\t\textent data disk byte %llu nr %llu\n"
		"\t\textent data offset %llu nr %llu ram %llu\n"
		"\t\textent compression %u (%s)\n",
		(unsigned long long)fe.disk_bytenr, (unsigned long long)fe.disk_num_bytes,
		(unsigned long long)fe.offset, (unsigned long long)fe.num_bytes,
		(unsigned long long)fe.ram_bytes, fe.compression, compression_name(fe.compression));
}

/* One checksum per data sector, starting at the key offset. */
static void print_extent_csum(struct item_ctx *c)
{
	u32 csum_size = c->fs ? (u32)c->fs->csum_size : 0;
	u32 sectorsize = c->fs ? c->fs->sectorsize : 0;
	struct tlog_csum_item item;
	u32 nr, len;
	json_object *csums;

	if (!csum_size || !sectorsize) {
		/* without the superblock the range cannot be worked out */
		if (c->out)
			fprintf(c->out, "\t\trange start %llu\n",
				(unsigned long long)c->key.offset);
		else
			jadd_u64(c->data, "start", c->key.offset);
		return;
	}
	btrfs_parse_csum_item(c->ptr, c->size, c->key.offset, csum_size, sectorsize, &item);
	nr = item.size / csum_size;
	len = (u32)(item.end - item.start);
	if (c->out) {
		fprintf(c->out, "\t\trange start %llu end %llu length %u\n",
			(unsigned long long)c->key.offset,
			(unsigned long long)(c->key.offset + len), len);
		return;
	}
	jadd_u64(c->data, "start", c->key.offset);
	jadd_u64(c->data, "end", c->key.offset + len);
	jadd_u64(c->data, "length", len);
	csums = json_object_new_array();
	for (u32 i = 0; i < nr; i++) {
		const u8 *p = item.csums + (size_t)i * csum_size;
		char hex[2 * BTRFS_CSUM_SIZE + 1];

		for (u32 j = 0; j < csum_size && j < BTRFS_CSUM_SIZE; j++)
			sprintf(hex + 2 * j, "%02x", p[j]);
		json_object_array_add(csums, json_object_new_string(hex));
	}
	jadd(c->data, "csums", csums);
}

/* ---- roots ---- */

static void print_root_item(struct item_ctx *c)
{
	struct btrfs_root_item ri;
	char flags[FLAGS_STR_LEN], key[KEY_STR_LEN];
	bool full;

	char note[256];
	int ret = btrfs_decode_root_item(c->fs, c->leaf, c->slot, &c->key, &ri, note,
					 sizeof(note));

	if (note[0])
		item_note(c, "%s", note);
	if (ret)
		return;
	/*
	 * The kernel keeps generation_v2 equal to generation whenever it
	 * writes the newer fields, so a mismatch means they are stale.
	 */
	full = btrfs_root_item_generation(&ri) == btrfs_root_item_generation_v2(&ri);
	root_flags_to_str(btrfs_root_item_flags(&ri), flags, sizeof(flags));

	if (!c->out) {
		jadd_u64(c->data, "generation", btrfs_root_item_generation(&ri));
		jadd_u64(c->data, "root_dirid", btrfs_root_item_root_dirid(&ri));
		jadd_u64(c->data, "bytenr", btrfs_root_item_bytenr(&ri));
		jadd_u64(c->data, "byte_limit", btrfs_root_item_byte_limit(&ri));
		jadd_u64(c->data, "bytes_used", btrfs_root_item_bytes_used(&ri));
		jadd_u64(c->data, "last_snapshot", btrfs_root_item_last_snapshot(&ri));
		jadd_u64(c->data, "flags", btrfs_root_item_flags(&ri));
		jadd_str(c->data, "flags_names", flags);
		jadd_u64(c->data, "refs", btrfs_root_item_refs(&ri));
		jadd_disk_key(c->data, "drop_progress", &ri.drop_progress);
		jadd_u64(c->data, "drop_level", btrfs_root_item_drop_level(&ri));
		jadd_u64(c->data, "level", btrfs_root_item_level(&ri));
		if (c->size < sizeof(ri))
			return;
		jadd_u64(c->data, "generation_v2", btrfs_root_item_generation_v2(&ri));
		jadd_uuid(c->data, "uuid", ri.uuid);
		jadd_uuid(c->data, "parent_uuid", ri.parent_uuid);
		jadd_uuid(c->data, "received_uuid", ri.received_uuid);
		jadd_u64(c->data, "ctransid", btrfs_root_item_ctransid(&ri));
		jadd_u64(c->data, "otransid", btrfs_root_item_otransid(&ri));
		jadd_u64(c->data, "stransid", btrfs_root_item_stransid(&ri));
		jadd_u64(c->data, "rtransid", btrfs_root_item_rtransid(&ri));
		jadd_time(c->data, "ctime", &ri.ctime);
		jadd_time(c->data, "otime", &ri.otime);
		jadd_time(c->data, "stime", &ri.stime);
		jadd_time(c->data, "rtime", &ri.rtime);
		return;
	}

	disk_key_to_str(&ri.drop_progress, key, sizeof(key));
	fprintf(c->out,
		"\t\tgeneration %llu root_dirid %llu bytenr %llu byte_limit %llu bytes_used %llu\n"
		"\t\tlast_snapshot %llu flags 0x%llx(%s) refs %u\n"
		"\t\tdrop_progress key %s drop_level %u\n"
		"\t\tlevel %u generation_v2 %llu\n",
		(unsigned long long)btrfs_root_item_generation(&ri),
		(unsigned long long)btrfs_root_item_root_dirid(&ri),
		(unsigned long long)btrfs_root_item_bytenr(&ri),
		(unsigned long long)btrfs_root_item_byte_limit(&ri),
		(unsigned long long)btrfs_root_item_bytes_used(&ri),
		(unsigned long long)btrfs_root_item_last_snapshot(&ri),
		(unsigned long long)btrfs_root_item_flags(&ri), flags,
		btrfs_root_item_refs(&ri), key, btrfs_root_item_drop_level(&ri),
		btrfs_root_item_level(&ri),
		(unsigned long long)btrfs_root_item_generation_v2(&ri));
	if (full) {
		static const char *const names[] = { "ctime", "otime", "stime", "rtime" };
		const struct btrfs_timespec *times[] = {
			&ri.ctime, &ri.otime, &ri.stime, &ri.rtime
		};
		char uuid[UUID_STR_LEN];

		uuid_to_str(ri.uuid, uuid);
		fprintf(c->out, "\t\tuuid %s\n", uuid);
		uuid_to_str(ri.parent_uuid, uuid);
		fprintf(c->out, "\t\tparent_uuid %s\n", uuid);
		uuid_to_str(ri.received_uuid, uuid);
		fprintf(c->out, "\t\treceived_uuid %s\n", uuid);
		fprintf(c->out, "\t\tctransid %llu otransid %llu stransid %llu rtransid %llu\n",
			(unsigned long long)btrfs_root_item_ctransid(&ri),
			(unsigned long long)btrfs_root_item_otransid(&ri),
			(unsigned long long)btrfs_root_item_stransid(&ri),
			(unsigned long long)btrfs_root_item_rtransid(&ri));
		for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
			char ts[128];

			timespec_to_str(times[i], ts, sizeof(ts));
			fprintf(c->out, "\t\t%s %s\n", names[i], ts);
		}
	}
}

static void print_root_ref(struct item_ctx *c)
{
	struct tlog_root_ref ref;
	char note[256];

	if (btrfs_decode_root_ref(c->leaf, c->slot, &c->key, &ref, note, sizeof(note))) {
		item_note(c, "%s", note);
		return;
	}
	if (c->out) {
		fprintf(c->out, "\t\troot %s key dirid %llu sequence %llu name %.*s\n",
			c->key.type == BTRFS_ROOT_REF_KEY ? "ref" : "backref",
			(unsigned long long)ref.dirid, (unsigned long long)ref.sequence,
			text_len(ref.name_len), ref.name);
		return;
	}
	jadd_u64(c->data, "dirid", ref.dirid);
	jadd_u64(c->data, "sequence", ref.sequence);
	jadd_u64(c->data, "name_len", ref.name_len);
	jadd_bytes(c->data, "name", ref.name, ref.name_len);
}

/* ---- extent back references ---- */

static void print_data_ref(struct item_ctx *c, json_object *obj, const struct tlog_extent_ref *ref)
{
	if (c->out) {
		char root[64];

		btrfs_objectid_to_str(ref->root, 0, root, sizeof(root));
		fprintf(c->out,
			"\t\textent data backref root %s objectid %llu offset %llu count %u\n",
			root, (unsigned long long)ref->objectid,
			(unsigned long long)ref->file_offset, ref->count);
		return;
	}
	jadd_u64(obj, "root", ref->root);
	jadd_u64(obj, "objectid", ref->objectid);
	jadd_u64(obj, "offset", ref->file_offset);
	jadd_u64(obj, "count", ref->count);
}

static void print_inline_ref(struct item_ctx *c, json_object *refs, const struct tlog_extent_ref *ref)
{
	json_object *r = NULL;
	char root[64];

	if (!c->out) {
		r = json_object_new_object();
		jadd_u64(r, "type", ref->type);
		jadd_str(r, "type_name", key_type_name(ref->type));
		json_object_array_add(refs, r);
	}
	switch (ref->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
		if (r) {
			jadd_u64(r, "root", ref->offset);
			break;
		}
		btrfs_objectid_to_str(ref->offset, 0, root, sizeof(root));
		fprintf(c->out, "\t\ttree block backref root %s\n", root);
		break;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		if (r)
			jadd_u64(r, "parent", ref->offset);
		else
			fprintf(c->out, "\t\tshared block backref parent %llu\n",
				(unsigned long long)ref->offset);
		break;
	case BTRFS_EXTENT_DATA_REF_KEY:
		print_data_ref(c, r, ref);
		break;
	case BTRFS_SHARED_DATA_REF_KEY:
		if (r) {
			jadd_u64(r, "parent", ref->offset);
			jadd_u64(r, "count", ref->count);
		} else {
			fprintf(c->out, "\t\tshared data backref parent %llu count %u\n",
				(unsigned long long)ref->offset, ref->count);
		}
		break;
	case BTRFS_EXTENT_OWNER_REF_KEY:
		if (r)
			jadd_u64(r, "root", ref->offset);
		else
			fprintf(c->out, "\t\textent owner root %llu\n",
				(unsigned long long)ref->offset);
		break;
	}
}

static void print_tree_block_info(struct item_ctx *c, const struct btrfs_tree_block_info *info)
{
	if (c->out) {
		char key[KEY_STR_LEN];

		disk_key_to_str(&info->key, key, sizeof(key));
		fprintf(c->out, "\t\ttree block key %s level %u\n", key,
			btrfs_tree_block_info_level(info));
	} else {
		json_object *tb = json_object_new_object();

		jadd_disk_key(tb, "key", &info->key);
		jadd_u64(tb, "level", btrfs_tree_block_info_level(info));
		jadd(c->data, "tree_block", tb);
	}
}

/* The inline references as far as they can be read, and why they stop. */
static void print_inline_refs(struct item_ctx *c, const struct tlog_extent_item *ei)
{
	json_object *refs = NULL;
	struct tlog_extent_ref ref;
	u32 cur;
	int ret;

	if (!c->out) {
		refs = json_object_new_array();
		jadd(c->data, "inline_refs", refs);
	}
	btrfs_for_each_inline_ref(ei, &cur, &ref, ret)
		print_inline_ref(c, refs, &ref);
	if (ret < 0 && !ref.len && c->size - ref.at >= sizeof(struct btrfs_extent_inline_ref))
		item_note(c, "unknown inline ref type %u at byte %u", ref.type, ref.at);
	else if (ret < 0)
		item_note(c, "truncated inline ref at byte %u", ref.at);
}

static void print_extent_item(struct item_ctx *c)
{
	struct tlog_extent_item ei;
	char flags[FLAGS_STR_LEN];
	bool whole;

	if (!item_fits(c, sizeof(struct btrfs_extent_item)))
		return;
	whole = btrfs_parse_extent_item(c->ptr, c->size, &c->key, &ei) == 0;
	extent_flags_to_str(ei.flags, flags, sizeof(flags));
	if (c->out) {
		fprintf(c->out, "\t\trefs %llu gen %llu flags %s\n",
			(unsigned long long)ei.refs, (unsigned long long)ei.generation, flags);
	} else {
		jadd_u64(c->data, "refs", ei.refs);
		jadd_u64(c->data, "generation", ei.generation);
		jadd_u64(c->data, "flags", ei.flags);
		jadd_str(c->data, "flags_names", flags);
	}

	if (c->key.type == BTRFS_METADATA_ITEM_KEY) {
		/* skinny: the level is in the key and there is no block info */
		if (c->out)
			fprintf(c->out, "\t\ttree block skinny level %llu\n",
				(unsigned long long)c->key.offset);
		else
			jadd_u64(c->data, "level", c->key.offset);
	} else if (!whole) {
		item_note(c, "truncated tree block info");
		return;
	} else if (ei.info) {
		print_tree_block_info(c, ei.info);
	}
	print_inline_refs(c, &ei);
}

static void print_keyed_ref(struct item_ctx *c)
{
	struct tlog_extent_ref ref;

	switch (c->key.type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
		if (c->out)
			fprintf(c->out, "\t\ttree block backref\n");
		break;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		if (c->out)
			fprintf(c->out, "\t\tshared block backref\n");
		break;
	case BTRFS_EXTENT_DATA_REF_KEY:
		if (item_fits(c, sizeof(struct btrfs_extent_data_ref)) &&
		    btrfs_parse_keyed_ref(c->ptr, c->size, &c->key, &ref) == 0)
			print_data_ref(c, c->data, &ref);
		break;
	case BTRFS_SHARED_DATA_REF_KEY:
		if (!item_fits(c, sizeof(struct btrfs_shared_data_ref)) ||
		    btrfs_parse_keyed_ref(c->ptr, c->size, &c->key, &ref))
			break;
		if (c->out)
			fprintf(c->out, "\t\tshared data backref count %u\n", ref.count);
		else
			jadd_u64(c->data, "count", ref.count);
		break;
	case BTRFS_EXTENT_REF_V0_KEY:
		if (c->out)
			fprintf(c->out, "\t\textent ref v0 (deprecated)\n");
		break;
	}
}

/* ---- block groups, free space, devices, chunks ---- */

static void print_block_group_item(struct item_ctx *c)
{
	const struct btrfs_block_group_item *bg = fixed_item(c);
	char flags[FLAGS_STR_LEN];

	if (!bg)
		return;
	btrfs_bg_flags_to_str(btrfs_block_group_item_flags(bg), flags, sizeof(flags));
	if (c->out) {
		fprintf(c->out, "\t\tblock group used %llu chunk_objectid %llu flags %s\n",
			(unsigned long long)btrfs_block_group_item_used(bg),
			(unsigned long long)btrfs_block_group_item_chunk_objectid(bg), flags);
		return;
	}
	jadd_u64(c->data, "used", btrfs_block_group_item_used(bg));
	jadd_u64(c->data, "chunk_objectid", btrfs_block_group_item_chunk_objectid(bg));
	jadd_u64(c->data, "flags", btrfs_block_group_item_flags(bg));
	jadd_str(c->data, "flags_names", flags);
}

static void print_free_space_info(struct item_ctx *c)
{
	const struct btrfs_free_space_info *fsi = fixed_item(c);

	if (!fsi)
		return;
	if (c->out) {
		fprintf(c->out, "\t\tfree space info extent count %u flags %u\n",
			btrfs_free_space_info_extent_count(fsi),
			btrfs_free_space_info_flags(fsi));
		return;
	}
	jadd_u64(c->data, "extent_count", btrfs_free_space_info_extent_count(fsi));
	jadd_u64(c->data, "flags", btrfs_free_space_info_flags(fsi));
}

/* v1 space cache: a header in the root tree points at the cache inode. */
static void print_free_space_header(struct item_ctx *c)
{
	const struct btrfs_free_space_header *h = (const void *)c->ptr;

	if (!item_fits(c, sizeof(*h)))
		return;
	if (c->out) {
		char key[KEY_STR_LEN];

		disk_key_to_str(&h->location, key, sizeof(key));
		fprintf(c->out, "\t\tlocation key %s\n", key);
		fprintf(c->out, "\t\tcache generation %llu entries %llu bitmaps %llu\n",
			(unsigned long long)le64toh(h->generation),
			(unsigned long long)le64toh(h->num_entries),
			(unsigned long long)le64toh(h->num_bitmaps));
		return;
	}
	jadd_disk_key(c->data, "location", &h->location);
	jadd_u64(c->data, "generation", le64toh(h->generation));
	jadd_u64(c->data, "entries", le64toh(h->num_entries));
	jadd_u64(c->data, "bitmaps", le64toh(h->num_bitmaps));
}

static void print_dev_extent(struct item_ctx *c)
{
	const struct btrfs_dev_extent *de = fixed_item(c);

	if (!de)
		return;
	if (c->out) {
		char uuid[UUID_STR_LEN];

		uuid_to_str(de->chunk_tree_uuid, uuid);
		fprintf(c->out, "\t\tdev extent chunk_tree %llu\n"
			"\t\tchunk_objectid %llu chunk_offset %llu length %llu\n"
			"\t\tchunk_tree_uuid %s\n",
			(unsigned long long)btrfs_dev_extent_chunk_tree(de),
			(unsigned long long)btrfs_dev_extent_chunk_objectid(de),
			(unsigned long long)btrfs_dev_extent_chunk_offset(de),
			(unsigned long long)btrfs_dev_extent_length(de), uuid);
		return;
	}
	jadd_u64(c->data, "chunk_tree", btrfs_dev_extent_chunk_tree(de));
	jadd_u64(c->data, "chunk_objectid", btrfs_dev_extent_chunk_objectid(de));
	jadd_u64(c->data, "chunk_offset", btrfs_dev_extent_chunk_offset(de));
	jadd_u64(c->data, "length", btrfs_dev_extent_length(de));
	jadd_uuid(c->data, "chunk_tree_uuid", de->chunk_tree_uuid);
}

static void print_dev_item(struct item_ctx *c)
{
	const struct btrfs_dev_item *di = (const void *)c->ptr;

	if (!item_fits(c, sizeof(*di)))
		return;
	if (c->out) {
		char uuid[UUID_STR_LEN], fsid[UUID_STR_LEN];

		uuid_to_str(di->uuid, uuid);
		uuid_to_str(di->fsid, fsid);
		fprintf(c->out, "\t\tdevid %llu total_bytes %llu bytes_used %llu\n"
			"\t\tio_align %u io_width %u sector_size %u type %llu\n"
			"\t\tgeneration %llu start_offset %llu dev_group %u\n"
			"\t\tseek_speed %u bandwidth %u\n"
			"\t\tuuid %s\n"
			"\t\tfsid %s\n",
			(unsigned long long)btrfs_dev_item_devid(di),
			(unsigned long long)btrfs_dev_item_total_bytes(di),
			(unsigned long long)btrfs_dev_item_bytes_used(di),
			btrfs_dev_item_io_align(di), btrfs_dev_item_io_width(di),
			btrfs_dev_item_sector_size(di),
			(unsigned long long)btrfs_dev_item_type(di),
			(unsigned long long)btrfs_dev_item_generation(di),
			(unsigned long long)btrfs_dev_item_start_offset(di),
			btrfs_dev_item_dev_group(di), btrfs_dev_item_seek_speed(di),
			btrfs_dev_item_bandwidth(di), uuid, fsid);
		return;
	}
	jadd_u64(c->data, "devid", btrfs_dev_item_devid(di));
	jadd_u64(c->data, "total_bytes", btrfs_dev_item_total_bytes(di));
	jadd_u64(c->data, "bytes_used", btrfs_dev_item_bytes_used(di));
	jadd_u64(c->data, "io_align", btrfs_dev_item_io_align(di));
	jadd_u64(c->data, "io_width", btrfs_dev_item_io_width(di));
	jadd_u64(c->data, "sector_size", btrfs_dev_item_sector_size(di));
	jadd_u64(c->data, "type", btrfs_dev_item_type(di));
	jadd_u64(c->data, "generation", btrfs_dev_item_generation(di));
	jadd_u64(c->data, "start_offset", btrfs_dev_item_start_offset(di));
	jadd_u64(c->data, "dev_group", btrfs_dev_item_dev_group(di));
	jadd_u64(c->data, "seek_speed", btrfs_dev_item_seek_speed(di));
	jadd_u64(c->data, "bandwidth", btrfs_dev_item_bandwidth(di));
	jadd_uuid(c->data, "uuid", di->uuid);
	jadd_uuid(c->data, "fsid", di->fsid);
}

static void print_chunk_item(struct item_ctx *c)
{
	const struct btrfs_chunk *chunk = (const void *)c->ptr;
	size_t head = offsetof(struct btrfs_chunk, stripe);
	char type[FLAGS_STR_LEN];
	json_object *stripes = NULL;
	u16 num_stripes;

	if (!item_fits(c, head))
		return;
	num_stripes = btrfs_chunk_num_stripes(chunk);
	btrfs_bg_flags_to_str(btrfs_chunk_type(chunk), type, sizeof(type));
	if (c->out) {
		fprintf(c->out, "\t\tlength %llu owner %llu stripe_len %llu type %s\n"
			"\t\tio_align %u io_width %u sector_size %u\n"
			"\t\tnum_stripes %u sub_stripes %u\n",
			(unsigned long long)btrfs_chunk_length(chunk),
			(unsigned long long)btrfs_chunk_owner(chunk),
			(unsigned long long)btrfs_chunk_stripe_len(chunk), type,
			btrfs_chunk_io_align(chunk), btrfs_chunk_io_width(chunk),
			btrfs_chunk_sector_size(chunk), num_stripes,
			btrfs_chunk_sub_stripes(chunk));
	} else {
		jadd_u64(c->data, "length", btrfs_chunk_length(chunk));
		jadd_u64(c->data, "owner", btrfs_chunk_owner(chunk));
		jadd_u64(c->data, "stripe_len", btrfs_chunk_stripe_len(chunk));
		jadd_u64(c->data, "type", btrfs_chunk_type(chunk));
		jadd_str(c->data, "type_names", type);
		jadd_u64(c->data, "io_align", btrfs_chunk_io_align(chunk));
		jadd_u64(c->data, "io_width", btrfs_chunk_io_width(chunk));
		jadd_u64(c->data, "sector_size", btrfs_chunk_sector_size(chunk));
		jadd_u64(c->data, "num_stripes", num_stripes);
		jadd_u64(c->data, "sub_stripes", btrfs_chunk_sub_stripes(chunk));
		stripes = json_object_new_array();
		jadd(c->data, "stripes", stripes);
	}
	if (head + (size_t)num_stripes * sizeof(struct btrfs_stripe) > c->size) {
		item_note(c, "num_stripes %u does not fit in %u bytes", num_stripes, c->size);
		return;
	}
	for (int i = 0; i < num_stripes; i++) {
		const struct btrfs_stripe *s = btrfs_chunk_stripe(chunk, i);

		if (c->out) {
			char uuid[UUID_STR_LEN];

			uuid_to_str(s->dev_uuid, uuid);
			fprintf(c->out, "\t\t\tstripe %d devid %llu offset %llu\n"
				"\t\t\tdev_uuid %s\n", i,
				(unsigned long long)btrfs_stripe_devid(s),
				(unsigned long long)btrfs_stripe_offset(s), uuid);
		} else {
			json_object *o = json_object_new_object();

			jadd_u64(o, "devid", btrfs_stripe_devid(s));
			jadd_u64(o, "offset", btrfs_stripe_offset(s));
			jadd_uuid(o, "dev_uuid", s->dev_uuid);
			json_object_array_add(stripes, o);
		}
	}
}

/*
 * RAID stripe tree entries: (devid, physical) pairs, one per copy.  The
 * format changed while the feature was experimental, so anything that is
 * not a whole number of pairs is only sized.
 */
static void print_raid_stripe(struct item_ctx *c)
{
	const size_t stride = 2 * sizeof(__le64);
	json_object *arr = NULL;

	if (c->size % stride) {
		item_note(c, "raid stripe item of %u bytes", c->size);
		return;
	}
	if (!c->out) {
		arr = json_object_new_array();
		jadd(c->data, "strides", arr);
	}
	for (u32 i = 0; i < c->size / stride; i++) {
		__le64 v[2];

		memcpy(v, c->ptr + i * stride, sizeof(v));
		if (c->out) {
			fprintf(c->out, "\t\t\tstride %u devid %llu physical %llu\n", i,
				(unsigned long long)le64toh(v[0]),
				(unsigned long long)le64toh(v[1]));
		} else {
			json_object *o = json_object_new_object();

			jadd_u64(o, "devid", le64toh(v[0]));
			jadd_u64(o, "physical", le64toh(v[1]));
			json_object_array_add(arr, o);
		}
	}
}

/* ---- quotas ---- */

static void print_qgroup_status(struct item_ctx *c)
{
	const struct btrfs_qgroup_status_item *qs = (const void *)c->ptr;
	size_t legacy = offsetof(struct btrfs_qgroup_status_item, enable_gen);
	char flags[FLAGS_STR_LEN];
	u64 qflags;
	bool simple;

	if (!item_fits(c, legacy))
		return;
	qflags = btrfs_qgroup_status_item_flags(qs);
	qgroup_status_flags_to_str(qflags, flags, sizeof(flags));
	/* only simple quotas give meaning to enable_gen */
	simple = (qflags & QGROUP_STATUS_FLAG_SIMPLE_MODE) && c->size >= sizeof(*qs);
	if (c->out) {
		fprintf(c->out, "\t\tversion %llu generation %llu flags %s scan %llu",
			(unsigned long long)btrfs_qgroup_status_item_version(qs),
			(unsigned long long)btrfs_qgroup_status_item_generation(qs),
			flags, (unsigned long long)btrfs_qgroup_status_item_rescan(qs));
		if (simple)
			fprintf(c->out, " enable_gen %llu",
				(unsigned long long)btrfs_qgroup_status_item_enable_gen(qs));
		fputc('\n', c->out);
		return;
	}
	jadd_u64(c->data, "version", btrfs_qgroup_status_item_version(qs));
	jadd_u64(c->data, "generation", btrfs_qgroup_status_item_generation(qs));
	jadd_u64(c->data, "flags", qflags);
	jadd_str(c->data, "flags_names", flags);
	jadd_u64(c->data, "scan", btrfs_qgroup_status_item_rescan(qs));
	if (simple)
		jadd_u64(c->data, "enable_gen", btrfs_qgroup_status_item_enable_gen(qs));
}

static void print_qgroup_info(struct item_ctx *c)
{
	const struct btrfs_qgroup_info_item *qi = fixed_item(c);

	if (!qi)
		return;
	if (c->out) {
		fprintf(c->out, "\t\tgeneration %llu\n"
			"\t\treferenced %llu referenced_compressed %llu\n"
			"\t\texclusive %llu exclusive_compressed %llu\n",
			(unsigned long long)btrfs_qgroup_info_item_generation(qi),
			(unsigned long long)btrfs_qgroup_info_item_rfer(qi),
			(unsigned long long)btrfs_qgroup_info_item_rfer_cmpr(qi),
			(unsigned long long)btrfs_qgroup_info_item_excl(qi),
			(unsigned long long)btrfs_qgroup_info_item_excl_cmpr(qi));
		return;
	}
	jadd_u64(c->data, "generation", btrfs_qgroup_info_item_generation(qi));
	jadd_u64(c->data, "referenced", btrfs_qgroup_info_item_rfer(qi));
	jadd_u64(c->data, "referenced_compressed", btrfs_qgroup_info_item_rfer_cmpr(qi));
	jadd_u64(c->data, "exclusive", btrfs_qgroup_info_item_excl(qi));
	jadd_u64(c->data, "exclusive_compressed", btrfs_qgroup_info_item_excl_cmpr(qi));
}

static void print_qgroup_limit(struct item_ctx *c)
{
	const struct btrfs_qgroup_limit_item *ql = fixed_item(c);

	if (!ql)
		return;
	/* limits are shown signed: an unset limit reads as -1 */
	if (c->out) {
		fprintf(c->out, "\t\tflags %llx\n"
			"\t\tmax_referenced %lld max_exclusive %lld\n"
			"\t\trsv_referenced %lld rsv_exclusive %lld\n",
			(unsigned long long)btrfs_qgroup_limit_item_flags(ql),
			(long long)btrfs_qgroup_limit_item_max_rfer(ql),
			(long long)btrfs_qgroup_limit_item_max_excl(ql),
			(long long)btrfs_qgroup_limit_item_rsv_rfer(ql),
			(long long)btrfs_qgroup_limit_item_rsv_excl(ql));
		return;
	}
	jadd_u64(c->data, "flags", btrfs_qgroup_limit_item_flags(ql));
	jadd_s64(c->data, "max_referenced", (s64)btrfs_qgroup_limit_item_max_rfer(ql));
	jadd_s64(c->data, "max_exclusive", (s64)btrfs_qgroup_limit_item_max_excl(ql));
	jadd_s64(c->data, "rsv_referenced", (s64)btrfs_qgroup_limit_item_rsv_rfer(ql));
	jadd_s64(c->data, "rsv_exclusive", (s64)btrfs_qgroup_limit_item_rsv_excl(ql));
}

/* ---- persistent and temporary items ---- */

static void print_dev_stats(struct item_ctx *c)
{
	static const char *const names[] = {
		"write_errs", "read_errs", "flush_errs", "corruption_errs", "generation"
	};
	const struct btrfs_dev_stats_item *ds = (const void *)c->ptr;

	if (!item_fits(c, sizeof(*ds)))
		return;
	if (c->out) {
		fprintf(c->out, "\t\tdevice stats\n\t\t");
		for (size_t i = 0; i < ARRAY_SIZE(names); i++)
			fprintf(c->out, "%s%s %llu", i ? " " : "", names[i],
				(unsigned long long)le64toh(ds->values[i]));
		fputc('\n', c->out);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		jadd_u64(c->data, names[i], le64toh(ds->values[i]));
}

static void print_persistent_item(struct item_ctx *c)
{
	if (c->key.objectid != BTRFS_DEV_STATS_OBJECTID) {
		if (c->out)
			fprintf(c->out, "\t\tunknown persistent item objectid %llu\n",
				(unsigned long long)c->key.objectid);
		return;
	}
	if (c->out) {
		char objectid[64];

		btrfs_objectid_to_str(c->key.objectid, c->key.type, objectid, sizeof(objectid));
		fprintf(c->out, "\t\tpersistent item objectid %s offset %llu\n",
			objectid, (unsigned long long)c->key.offset);
	}
	print_dev_stats(c);
}

static void print_balance_args(struct item_ctx *c, const char *name,
			       const struct btrfs_balance_args *ba)
{
	/* usage and limit are either one u64 or a (min, max) pair of u32s */
	u64 usage = le64toh(ba->usage), limit = le64toh(ba->limit);

	if (c->out) {
		fprintf(c->out, "\t\t%s\n"
			"\t\tprofiles %llu devid %llu target %llu flags %llu\n"
			"\t\tusage_min %u usage_max %u pstart %llu pend %llu\n"
			"\t\tvstart %llu vend %llu limit_min %u limit_max %u\n"
			"\t\tstripes_min %u stripes_max %u\n", name,
			(unsigned long long)le64toh(ba->profiles),
			(unsigned long long)le64toh(ba->devid),
			(unsigned long long)le64toh(ba->target),
			(unsigned long long)le64toh(ba->flags),
			(u32)usage, (u32)(usage >> 32),
			(unsigned long long)le64toh(ba->pstart),
			(unsigned long long)le64toh(ba->pend),
			(unsigned long long)le64toh(ba->vstart),
			(unsigned long long)le64toh(ba->vend),
			(u32)limit, (u32)(limit >> 32),
			le32toh(ba->stripes_min), le32toh(ba->stripes_max));
	} else {
		json_object *o = json_object_new_object();

		jadd_u64(o, "profiles", le64toh(ba->profiles));
		jadd_u64(o, "devid", le64toh(ba->devid));
		jadd_u64(o, "target", le64toh(ba->target));
		jadd_u64(o, "flags", le64toh(ba->flags));
		jadd_u64(o, "usage", usage);
		jadd_u64(o, "pstart", le64toh(ba->pstart));
		jadd_u64(o, "pend", le64toh(ba->pend));
		jadd_u64(o, "vstart", le64toh(ba->vstart));
		jadd_u64(o, "vend", le64toh(ba->vend));
		jadd_u64(o, "limit", limit);
		jadd_u64(o, "stripes_min", le32toh(ba->stripes_min));
		jadd_u64(o, "stripes_max", le32toh(ba->stripes_max));
		jadd(c->data, name, o);
	}
}

static void print_temporary_item(struct item_ctx *c)
{
	const struct btrfs_balance_item *bi = (const void *)c->ptr;

	if (c->key.objectid != BTRFS_BALANCE_OBJECTID) {
		if (c->out)
			fprintf(c->out, "\t\tunknown temporary item objectid %llu\n",
				(unsigned long long)c->key.objectid);
		return;
	}
	if (c->out) {
		char objectid[64];

		btrfs_objectid_to_str(c->key.objectid, c->key.type, objectid, sizeof(objectid));
		fprintf(c->out, "\t\ttemporary item objectid %s offset %llu\n",
			objectid, (unsigned long long)c->key.offset);
	}
	if (!item_fits(c, sizeof(*bi)))
		return;
	if (c->out)
		fprintf(c->out, "\t\tbalance status flags %llu\n",
			(unsigned long long)le64toh(bi->flags));
	else
		jadd_u64(c->data, "flags", le64toh(bi->flags));
	print_balance_args(c, c->out ? "DATA" : "data", &bi->data);
	print_balance_args(c, c->out ? "METADATA" : "metadata", &bi->meta);
	print_balance_args(c, c->out ? "SYSTEM" : "system", &bi->sys);
}

static void print_dev_replace(struct item_ctx *c)
{
	const struct btrfs_dev_replace_item *dr = (const void *)c->ptr;

	if (!item_fits(c, sizeof(*dr)))
		return;
	if (c->out) {
		fprintf(c->out, "\t\tsrc_devid %llu cursor_left %llu cursor_right %llu"
			" replace_mode %llu\n"
			"\t\treplace_state %llu time_started %llu time_stopped %llu\n"
			"\t\tnum_write_errors %llu num_uncorrectable_read_errors %llu\n",
			(unsigned long long)le64toh(dr->src_devid),
			(unsigned long long)le64toh(dr->cursor_left),
			(unsigned long long)le64toh(dr->cursor_right),
			(unsigned long long)le64toh(dr->cont_reading_from_srcdev_mode),
			(unsigned long long)le64toh(dr->replace_state),
			(unsigned long long)le64toh(dr->time_started),
			(unsigned long long)le64toh(dr->time_stopped),
			(unsigned long long)le64toh(dr->num_write_errors),
			(unsigned long long)le64toh(dr->num_uncorrectable_read_errors));
		return;
	}
	jadd_u64(c->data, "src_devid", le64toh(dr->src_devid));
	jadd_u64(c->data, "cursor_left", le64toh(dr->cursor_left));
	jadd_u64(c->data, "cursor_right", le64toh(dr->cursor_right));
	jadd_u64(c->data, "replace_mode", le64toh(dr->cont_reading_from_srcdev_mode));
	jadd_u64(c->data, "replace_state", le64toh(dr->replace_state));
	jadd_u64(c->data, "time_started", le64toh(dr->time_started));
	jadd_u64(c->data, "time_stopped", le64toh(dr->time_stopped));
	jadd_u64(c->data, "num_write_errors", le64toh(dr->num_write_errors));
	jadd_u64(c->data, "num_uncorrectable_read_errors",
		 le64toh(dr->num_uncorrectable_read_errors));
}

/* ---- uuid tree, strings, verity ---- */

/* A UUID tree item lists the subvolumes that carry one UUID. */
static void print_uuid_item(struct item_ctx *c)
{
	json_object *ids = NULL;

	if (c->size % sizeof(__le64)) {
		item_note(c, "uuid item with illegal size %u", c->size);
		return;
	}
	if (!c->out) {
		ids = json_object_new_array();
		jadd(c->data, "subvol_ids", ids);
	}
	for (u32 cur = 0; cur < c->size; cur += sizeof(__le64)) {
		__le64 v;

		memcpy(&v, c->ptr + cur, sizeof(v));
		if (c->out)
			fprintf(c->out, "\t\tsubvol_id %llu\n", (unsigned long long)le64toh(v));
		else
			json_object_array_add(ids, json_object_new_uint64(le64toh(v)));
	}
}

static void print_string_item(struct item_ctx *c)
{
	if (c->out)
		fprintf(c->out, "\t\titem data %.*s\n", (int)c->size, (const char *)c->ptr);
	else
		jadd_bytes(c->data, "data", c->ptr, c->size);
}

/*
 * fs-verity metadata: the descriptor header sits at offset 0 of the
 * descriptor items, followed by the raw descriptor; Merkle items are raw
 * tree bytes.  Only the header means anything by itself.
 */
static void print_verity_item(struct item_ctx *c)
{
	const struct btrfs_verity_descriptor_item *vd = (const void *)c->ptr;

	if (c->key.type == BTRFS_VERITY_DESC_ITEM_KEY && c->key.offset == 0) {
		if (!item_fits(c, sizeof(*vd)))
			return;
		if (c->out) {
			fprintf(c->out, "\t\tverity descriptor size %llu encryption %u\n",
				(unsigned long long)btrfs_verity_descriptor_item_size(vd),
				btrfs_verity_descriptor_item_encryption(vd));
		} else {
			jadd_u64(c->data, "size", btrfs_verity_descriptor_item_size(vd));
			jadd_u64(c->data, "encryption",
				 btrfs_verity_descriptor_item_encryption(vd));
		}
		return;
	}
	if (c->out)
		fprintf(c->out, "\t\tverity %s data %u bytes\n",
			c->key.type == BTRFS_VERITY_DESC_ITEM_KEY ? "descriptor" : "merkle",
			c->size);
	else
		jadd_u64(c->data, "data_size", c->size);
}

/* ---- dispatch ---- */

static void decode_item(struct item_ctx *c)
{
	switch (c->key.type) {
	case BTRFS_INODE_ITEM_KEY:
		print_inode_item(c);
		break;
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		print_packed_item(c, "refs");
		break;
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
	case BTRFS_XATTR_ITEM_KEY:
		print_packed_item(c, "entries");
		break;
	case BTRFS_DIR_LOG_ITEM_KEY:
	case BTRFS_DIR_LOG_INDEX_KEY:
		print_dir_log_item(c);
		break;
	case BTRFS_ORPHAN_ITEM_KEY:
		print_orphan_item(c);
		break;
	case BTRFS_VERITY_DESC_ITEM_KEY:
	case BTRFS_VERITY_MERKLE_ITEM_KEY:
		print_verity_item(c);
		break;
	case BTRFS_EXTENT_DATA_KEY:
		print_file_extent(c);
		break;
	case BTRFS_LEGACY_CSUM_ITEM_KEY:
		if (c->out)
			fprintf(c->out, "\t\tcsum item\n");
		break;
	case BTRFS_EXTENT_CSUM_KEY:
		print_extent_csum(c);
		break;
	case BTRFS_ROOT_ITEM_KEY:
		print_root_item(c);
		break;
	case BTRFS_ROOT_REF_KEY:
	case BTRFS_ROOT_BACKREF_KEY:
		print_root_ref(c);
		break;
	case BTRFS_EXTENT_ITEM_KEY:
	case BTRFS_METADATA_ITEM_KEY:
		print_extent_item(c);
		break;
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_SHARED_BLOCK_REF_KEY:
	case BTRFS_EXTENT_DATA_REF_KEY:
	case BTRFS_SHARED_DATA_REF_KEY:
	case BTRFS_EXTENT_REF_V0_KEY:
		print_keyed_ref(c);
		break;
	case BTRFS_BLOCK_GROUP_ITEM_KEY:
		print_block_group_item(c);
		break;
	case BTRFS_FREE_SPACE_INFO_KEY:
		print_free_space_info(c);
		break;
	case BTRFS_FREE_SPACE_EXTENT_KEY:
		if (c->out)
			fprintf(c->out, "\t\tfree space extent\n");
		break;
	case BTRFS_FREE_SPACE_BITMAP_KEY:
		if (c->out)
			fprintf(c->out, "\t\tfree space bitmap\n");
		break;
	case BTRFS_DEV_EXTENT_KEY:
		print_dev_extent(c);
		break;
	case BTRFS_DEV_ITEM_KEY:
		print_dev_item(c);
		break;
	case BTRFS_CHUNK_ITEM_KEY:
		print_chunk_item(c);
		break;
	case BTRFS_RAID_STRIPE_KEY:
		print_raid_stripe(c);
		break;
	case BTRFS_QGROUP_STATUS_KEY:
		print_qgroup_status(c);
		break;
	case BTRFS_QGROUP_INFO_KEY:
		print_qgroup_info(c);
		break;
	case BTRFS_QGROUP_LIMIT_KEY:
		print_qgroup_limit(c);
		break;
	case BTRFS_QGROUP_RELATION_KEY:
		/* everything is in the key */
		break;
	case BTRFS_PERSISTENT_ITEM_KEY:
		print_persistent_item(c);
		break;
	case BTRFS_TEMPORARY_ITEM_KEY:
		print_temporary_item(c);
		break;
	case BTRFS_DEV_REPLACE_KEY:
		print_dev_replace(c);
		break;
	case BTRFS_UUID_KEY_SUBVOL:
	case BTRFS_UUID_KEY_RECEIVED_SUBVOL:
		print_uuid_item(c);
		break;
	case BTRFS_STRING_ITEM_KEY:
		print_string_item(c);
		break;
	case 0:
		if (c->key.objectid == BTRFS_FREE_SPACE_OBJECTID)
			print_free_space_header(c);
		break;
	default:
		/* unknown types are shown by their key alone */
		break;
	}
}

static void init_item_ctx(struct item_ctx *c, struct tlog_fs *fs,
			  const struct extent_buffer *leaf, int slot)
{
	memset(c, 0, sizeof(*c));
	c->fs = fs;
	c->leaf = leaf;
	c->slot = slot;
	btrfs_item_key_to_cpu(leaf, &c->key, slot);
	c->ptr = btrfs_item_ptr(leaf, slot);
	c->size = btrfs_item_size(leaf, slot);
}

void btrfs_print_item(FILE *out, struct tlog_fs *fs, const struct extent_buffer *leaf, int slot)
{
	struct item_ctx c;

	init_item_ctx(&c, fs, leaf, slot);
	c.out = out;
	decode_item(&c);
}

json_object *btrfs_item_to_json(struct tlog_fs *fs, const struct extent_buffer *leaf, int slot)
{
	json_object *item = json_object_new_object();
	struct item_ctx c;

	init_item_ctx(&c, fs, leaf, slot);
	c.data = json_object_new_object();
	decode_item(&c);
	jadd(item, "slot", json_object_new_int(slot));
	jadd(item, "key", key_to_json(&c.key));
	jadd_u64(item, "offset", btrfs_item_offset(leaf, slot));
	jadd_u64(item, "size", c.size);
	jadd(item, "data", c.data);
	return item;
}

/* ---- whole blocks ---- */

/*
 * How many items or pointers can be shown without reading past the block.
 * The block checker should have refused anything larger; this only keeps a
 * bad header from turning into an out-of-bounds read.
 */
static u32 block_nritems(const struct extent_buffer *eb)
{
	u32 nritems = btrfs_header_nritems_eb(eb);
	u32 room = eb->len > sizeof(struct btrfs_header) ?
		   eb->len - (u32)sizeof(struct btrfs_header) : 0;
	u32 max = btrfs_header_level_eb(eb) ? room / sizeof(struct btrfs_key_ptr) :
					      room / sizeof(struct btrfs_item);

	return nritems < max ? nritems : max;
}

static u32 node_free_ptrs(const struct extent_buffer *eb)
{
	u32 max = btrfs_nodeptrs_per_block(eb->len);
	u32 nritems = btrfs_header_nritems_eb(eb);

	return nritems < max ? max - nritems : 0;
}

static u32 leaf_free_space(struct tlog_fs *fs, const struct extent_buffer *eb)
{
	u32 nritems = btrfs_header_nritems_eb(eb);

	/* the last item header is read below: it must be inside the block */
	if (nritems > block_nritems(eb))
		return 0;
	if (fs && fs->nodesize == eb->len)
		return btrfs_leaf_free_space(fs, eb);
	if (nritems == 0)
		return btrfs_leaf_data_size(eb->len);
	return btrfs_item_offset(eb, nritems - 1) - nritems * (u32)sizeof(struct btrfs_item);
}

/* Flags without the backref revision that shares their top byte. */
static u64 header_plain_flags(const struct btrfs_header *h)
{
	return btrfs_header_flags(h) & ~(0xffULL << BTRFS_BACKREF_REV_SHIFT);
}

static void print_block_header(FILE *out, struct tlog_fs *fs, const struct extent_buffer *eb)
{
	const struct btrfs_header *h = eb_header(eb);
	u8 level = btrfs_header_level(h);
	const char *what = level ? "node" : "leaf";
	char owner[64], flags[FLAGS_STR_LEN], uuid[UUID_STR_LEN];

	btrfs_objectid_to_str(btrfs_header_owner(h), 0, owner, sizeof(owner));
	if (level)
		fprintf(out, "node %llu level %u items %u free space %u generation %llu owner %s\n",
			(unsigned long long)btrfs_header_bytenr(h), level,
			btrfs_header_nritems(h), node_free_ptrs(eb),
			(unsigned long long)btrfs_header_generation(h), owner);
	else
		fprintf(out, "leaf %llu items %u free space %d generation %llu owner %s\n",
			(unsigned long long)btrfs_header_bytenr(h),
			btrfs_header_nritems(h), (int)leaf_free_space(fs, eb),
			(unsigned long long)btrfs_header_generation(h), owner);
	header_flags_to_str(header_plain_flags(h), flags, sizeof(flags));
	fprintf(out, "%s %llu flags 0x%llx(%s) backref revision %llu\n", what,
		(unsigned long long)btrfs_header_bytenr(h),
		(unsigned long long)header_plain_flags(h), flags,
		(unsigned long long)btrfs_header_backref_rev(h));
	uuid_to_str(h->fsid, uuid);
	fprintf(out, "fs uuid %s\n", uuid);
	uuid_to_str(h->chunk_tree_uuid, uuid);
	fprintf(out, "chunk uuid %s\n", uuid);
}

void btrfs_print_tree_block(FILE *out, struct tlog_fs *fs, const struct extent_buffer *eb)
{
	u32 nritems = block_nritems(eb);
	char key_str[KEY_STR_LEN];
	struct btrfs_key key;

	print_block_header(out, fs, eb);
	if (btrfs_header_level_eb(eb)) {
		for (u32 i = 0; i < nritems; i++) {
			btrfs_node_key_to_cpu(eb, &key, i);
			btrfs_key_to_str(&key, key_str, sizeof(key_str));
			fprintf(out, "\tkey %s block %llu gen %llu\n", key_str,
				(unsigned long long)btrfs_node_blockptr(eb, i),
				(unsigned long long)btrfs_node_ptr_generation(eb, i));
		}
		return;
	}
	for (u32 i = 0; i < nritems; i++) {
		btrfs_item_key_to_cpu(eb, &key, i);
		btrfs_key_to_str(&key, key_str, sizeof(key_str));
		fprintf(out, "\titem %u key %s itemoff %u itemsize %u\n", i, key_str,
			btrfs_item_offset(eb, i), btrfs_item_size(eb, i));
		btrfs_print_item(out, fs, eb, i);
	}
}

json_object *btrfs_tree_block_to_json(struct tlog_fs *fs, const struct extent_buffer *eb)
{
	const struct btrfs_header *h = eb_header(eb);
	json_object *obj = json_object_new_object();
	json_object *arr = json_object_new_array();
	u32 nritems = block_nritems(eb);
	u8 level = btrfs_header_level(h);
	char owner[64], flags[FLAGS_STR_LEN];

	btrfs_objectid_to_str(btrfs_header_owner(h), 0, owner, sizeof(owner));
	header_flags_to_str(header_plain_flags(h), flags, sizeof(flags));
	jadd_u64(obj, "bytenr", btrfs_header_bytenr(h));
	jadd_u64(obj, "level", level);
	jadd_u64(obj, "nritems", btrfs_header_nritems(h));
	jadd_u64(obj, "generation", btrfs_header_generation(h));
	jadd_u64(obj, "owner", btrfs_header_owner(h));
	jadd_str(obj, "owner_name", owner);
	jadd_uuid(obj, "fsid", h->fsid);
	jadd_uuid(obj, "chunk_tree_uuid", h->chunk_tree_uuid);
	jadd_u64(obj, "flags", header_plain_flags(h));
	jadd_str(obj, "flags_names", flags);
	jadd_u64(obj, "backref_rev", btrfs_header_backref_rev(h));
	if (level) {
		jadd_u64(obj, "free_space", node_free_ptrs(eb));
		for (u32 i = 0; i < nritems; i++) {
			json_object *p = json_object_new_object();
			struct btrfs_key key;

			btrfs_node_key_to_cpu(eb, &key, i);
			jadd(p, "key", key_to_json(&key));
			jadd_u64(p, "blockptr", btrfs_node_blockptr(eb, i));
			jadd_u64(p, "generation", btrfs_node_ptr_generation(eb, i));
			json_object_array_add(arr, p);
		}
		jadd(obj, "ptrs", arr);
		return obj;
	}
	jadd_s64(obj, "free_space", (s64)(int)leaf_free_space(fs, eb));
	for (u32 i = 0; i < nritems; i++)
		json_object_array_add(arr, btrfs_item_to_json(fs, eb, i));
	jadd(obj, "items", arr);
	return obj;
}
