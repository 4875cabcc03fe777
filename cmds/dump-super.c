// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl dump-super: show superblock copies with the field names and
 * values of `btrfs inspect-internal dump-super`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev.h"
#include "commands.h"
#include "csum.h"
#include "super.h"
#include "errctx.h"
#include "messages.h"
#include "open.h"
#include "print-tree.h"
#include "output.h"
#include "strutil.h"

static const char * const dump_super_usage[] = {
	"tlogctl dump-super [-f] [-a | -s N] [--format json] IMAGE",
	"Show the superblock of a btrfs image",
	"",
	"Prints the primary superblock, or the copy chosen with -s, field by",
	"field as btrfs inspect-internal dump-super does.  Copies past the end of",
	"the image are skipped.  The exit status is 1 when a copy that exists is",
	"not a valid superblock.",
	"",
	"-f|--full           also print the system chunk array and backup roots",
	"-a|--all            print every copy (64KiB, 64MiB, 256GiB)",
	"-s N                print copy N (0, 1 or 2), same as --super N",
	NULL
};

struct flag_name {
	u64 bit;
	const char *name;
};

static const struct flag_name super_flags[] = {
	{ BTRFS_SUPER_FLAG_WRITTEN, "WRITTEN" },
	{ BTRFS_SUPER_FLAG_RELOC, "RELOC" },
	{ BTRFS_SUPER_FLAG_ERROR, "ERROR" },
	{ BTRFS_SUPER_FLAG_SEEDING, "SEEDING" },
	{ BTRFS_SUPER_FLAG_METADUMP, "METADUMP" },
	{ BTRFS_SUPER_FLAG_METADUMP_V2, "METADUMP_V2" },
	{ BTRFS_SUPER_FLAG_CHANGING_FSID, "CHANGING_FSID" },
	{ BTRFS_SUPER_FLAG_CHANGING_FSID_V2, "CHANGING_FSID_V2" },
	{ 0, NULL }
};

static const struct flag_name compat_ro_flags[] = {
	{ BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE, "FREE_SPACE_TREE" },
	{ BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID, "FREE_SPACE_TREE_VALID" },
	{ BTRFS_FEATURE_COMPAT_RO_VERITY, "VERITY" },
	{ BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE, "BLOCK_GROUP_TREE" },
	{ 0, NULL }
};

static const struct flag_name incompat_flags[] = {
	{ BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF, "MIXED_BACKREF" },
	{ BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL, "DEFAULT_SUBVOL" },
	{ BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS, "MIXED_GROUPS" },
	{ BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO, "COMPRESS_LZO" },
	{ BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD, "COMPRESS_ZSTD" },
	{ BTRFS_FEATURE_INCOMPAT_BIG_METADATA, "BIG_METADATA" },
	{ BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF, "EXTENDED_IREF" },
	{ BTRFS_FEATURE_INCOMPAT_RAID56, "RAID56" },
	{ BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA, "SKINNY_METADATA" },
	{ BTRFS_FEATURE_INCOMPAT_NO_HOLES, "NO_HOLES" },
	{ BTRFS_FEATURE_INCOMPAT_METADATA_UUID, "METADATA_UUID" },
	{ BTRFS_FEATURE_INCOMPAT_RAID1C34, "RAID1C34" },
	{ BTRFS_FEATURE_INCOMPAT_ZONED, "ZONED" },
	{ BTRFS_FEATURE_INCOMPAT_EXTENT_TREE_V2, "EXTENT_TREE_V2" },
	{ BTRFS_FEATURE_INCOMPAT_RAID_STRIPE_TREE, "RAID_STRIPE_TREE" },
	{ BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA, "SIMPLE_QUOTA" },
	{ BTRFS_FEATURE_INCOMPAT_REMAP_TREE, "REMAP_TREE" },
	{ 0, NULL }
};

/* "name\t\t0xN" then the set flags one per line in "( A |\n  B )" form. */
static void print_flags(const char *label, u64 value, const struct flag_name *names)
{
	bool first = true;

	printf("%s0x%llx\n", label, (unsigned long long)value);
	for (const struct flag_name *f = names; f->name; f++) {
		if (!(value & f->bit))
			continue;
		printf("%s%s", first ? "\t\t\t( " : " |\n\t\t\t  ", f->name);
		first = false;
		value &= ~f->bit;
	}
	if (value) {
		printf("%sunknown flag: 0x%llx", first ? "\t\t\t( " : " |\n\t\t\t  ",
		       (unsigned long long)value);
		first = false;
	}
	if (!first)
		printf(" )\n");
}

static json_object *flags_to_json(u64 value, const struct flag_name *names)
{
	json_object *arr = json_object_new_array();

	for (const struct flag_name *f = names; f->name; f++)
		if (value & f->bit)
			json_object_array_add(arr, json_object_new_string(f->name));
	return arr;
}

static void csum_to_hex(const u8 *csum, int size, char *buf)
{
	buf += sprintf(buf, "0x");
	for (int i = 0; i < size; i++)
		buf += sprintf(buf, "%02x", csum[i]);
}

/* The fields of one superblock copy, decoded once for both outputs. */
struct super_view {
	const struct btrfs_super_block *sb;
	const char *csum_name;
	int csum_size;
	bool csum_ok;
	bool magic_ok;
	bool dev_fsid_ok;
	char fsid[UUID_STR_LEN];
	char metadata_uuid[UUID_STR_LEN];
	char dev_uuid[UUID_STR_LEN];
	char dev_fsid[UUID_STR_LEN];
	char label[BTRFS_LABEL_SIZE + 1];
	char csum_hex[2 + 2 * BTRFS_CSUM_SIZE + 1];
};

static void view_super(const struct btrfs_super_block *sb, struct super_view *v)
{
	u16 type = btrfs_super_block_csum_type(sb);
	bool muuid = btrfs_super_block_incompat_flags(sb) & BTRFS_FEATURE_INCOMPAT_METADATA_UUID;
	const u8 *header_fsid = muuid ? sb->metadata_uuid : sb->fsid;

	memset(v, 0, sizeof(*v));
	v->sb = sb;
	v->csum_name = btrfs_csum_type_name(type);
	v->csum_size = btrfs_csum_type_size(type);
	v->csum_ok = btrfs_super_csum_ok(sb);
	v->magic_ok = btrfs_super_block_magic(sb) == BTRFS_MAGIC;
	v->dev_fsid_ok = memcmp(sb->dev_item.fsid, header_fsid, BTRFS_FSID_SIZE) == 0;
	uuid_to_str(sb->fsid, v->fsid);
	uuid_to_str(header_fsid, v->metadata_uuid);
	uuid_to_str(sb->dev_item.uuid, v->dev_uuid);
	uuid_to_str(sb->dev_item.fsid, v->dev_fsid);
	memcpy(v->label, sb->label, BTRFS_LABEL_SIZE);
	v->label[BTRFS_LABEL_SIZE] = '\0';
	csum_to_hex(sb->csum, v->csum_size ? v->csum_size : BTRFS_CSUM_SIZE, v->csum_hex);
}

/*
 * Walk the sys_chunk_array, calling @fn for each well-formed entry; stops
 * quietly at the first malformed one (validation reports those elsewhere).
 */
static void for_each_sys_chunk(const struct btrfs_super_block *sb,
			       void (*fn)(int nr, const struct btrfs_key *key,
					  const struct btrfs_chunk *chunk, void *arg),
			       void *arg)
{
	u32 size = btrfs_super_block_sys_chunk_array_size(sb);
	u32 cur = 0;
	int nr = 0;

	if (size > BTRFS_SYSTEM_CHUNK_ARRAY_SIZE)
		size = BTRFS_SYSTEM_CHUNK_ARRAY_SIZE;
	while (size - cur >= sizeof(struct btrfs_disk_key) + sizeof(struct btrfs_chunk)) {
		const struct btrfs_chunk *chunk;
		struct btrfs_key key;
		u16 n;

		btrfs_disk_key_to_cpu(&key, (const struct btrfs_disk_key *)(sb->sys_chunk_array + cur));
		cur += sizeof(struct btrfs_disk_key);
		chunk = (const struct btrfs_chunk *)(sb->sys_chunk_array + cur);
		n = btrfs_chunk_num_stripes(chunk);
		if (n == 0 || btrfs_chunk_item_size(n) > size - cur)
			return;
		fn(nr++, &key, chunk, arg);
		cur += btrfs_chunk_item_size(n);
	}
}

static void print_sys_chunk(int nr, const struct btrfs_key *key,
			    const struct btrfs_chunk *chunk, void *arg)
{
	char type[128], uuid[UUID_STR_LEN];

	(void)arg;
	btrfs_bg_flags_to_str(btrfs_chunk_type(chunk), type, sizeof(type));
	printf("\titem %d key (FIRST_CHUNK_TREE CHUNK_ITEM %llu)\n", nr,
	       (unsigned long long)key->offset);
	printf("\t\tlength %llu owner %llu stripe_len %llu type %s\n",
	       (unsigned long long)btrfs_chunk_length(chunk),
	       (unsigned long long)btrfs_chunk_owner(chunk),
	       (unsigned long long)btrfs_chunk_stripe_len(chunk), type);
	printf("\t\tio_align %u io_width %u sector_size %u\n",
	       btrfs_chunk_io_align(chunk), btrfs_chunk_io_width(chunk),
	       btrfs_chunk_sector_size(chunk));
	printf("\t\tnum_stripes %u sub_stripes %u\n", btrfs_chunk_num_stripes(chunk),
	       btrfs_chunk_sub_stripes(chunk));
	for (int i = 0; i < btrfs_chunk_num_stripes(chunk); i++) {
		const struct btrfs_stripe *s = btrfs_chunk_stripe(chunk, i);

		uuid_to_str(s->dev_uuid, uuid);
		printf("\t\t\tstripe %d devid %llu offset %llu\n", i,
		       (unsigned long long)btrfs_stripe_devid(s),
		       (unsigned long long)btrfs_stripe_offset(s));
		printf("\t\t\tdev_uuid %s\n", uuid);
	}
}

static void sys_chunk_to_json(int nr, const struct btrfs_key *key,
			      const struct btrfs_chunk *chunk, void *arg)
{
	json_object *arr = arg, *o = json_object_new_object(), *stripes;
	char type[128], uuid[UUID_STR_LEN];

	(void)nr;
	btrfs_bg_flags_to_str(btrfs_chunk_type(chunk), type, sizeof(type));
	json_add_u64(o, "logical", key->offset);
	json_add_u64(o, "length", btrfs_chunk_length(chunk));
	json_add_u64(o, "owner", btrfs_chunk_owner(chunk));
	json_add_u64(o, "stripe_len", btrfs_chunk_stripe_len(chunk));
	json_add_u64(o, "type", btrfs_chunk_type(chunk));
	json_add_str(o, "type_name", type);
	json_add_u64(o, "io_align", btrfs_chunk_io_align(chunk));
	json_add_u64(o, "io_width", btrfs_chunk_io_width(chunk));
	json_add_u64(o, "sector_size", btrfs_chunk_sector_size(chunk));
	json_add_u64(o, "num_stripes", btrfs_chunk_num_stripes(chunk));
	json_add_u64(o, "sub_stripes", btrfs_chunk_sub_stripes(chunk));
	stripes = json_object_new_array();
	for (int i = 0; i < btrfs_chunk_num_stripes(chunk); i++) {
		const struct btrfs_stripe *s = btrfs_chunk_stripe(chunk, i);
		json_object *so = json_object_new_object();

		uuid_to_str(s->dev_uuid, uuid);
		json_add_u64(so, "devid", btrfs_stripe_devid(s));
		json_add_u64(so, "offset", btrfs_stripe_offset(s));
		json_add_str(so, "dev_uuid", uuid);
		json_object_array_add(stripes, so);
	}
	json_object_object_add(o, "stripes", stripes);
	json_object_array_add(arr, o);
}

#define BACKUP_FIELDS(X)			\
	X(tree_root, "backup_tree_root:\t")	\
	X(chunk_root, "backup_chunk_root:\t")	\
	X(extent_root, "backup_extent_root:\t")	\
	X(fs_root, "backup_fs_root:\t\t")	\
	X(dev_root, "backup_dev_root:\t")	\
	X(csum_root, "csum_root:\t")

static void print_backup_roots(const struct btrfs_super_block *sb)
{
	printf("backup_roots[%d]:\n", BTRFS_NUM_BACKUP_ROOTS);
	for (int i = 0; i < BTRFS_NUM_BACKUP_ROOTS; i++) {
		const struct btrfs_root_backup *b = &sb->super_roots[i];

		/* btrfs-progs stops at the first slot never filled */
		if (!btrfs_root_backup_tree_root(b) && !btrfs_root_backup_tree_root_gen(b))
			break;
		printf("\tbackup %d:\n", i);
#define X(f, label)							\
		printf("\t\t" label "%llu\tgen: %llu\tlevel: %u\n",	\
		       (unsigned long long)btrfs_root_backup_##f(b),	\
		       (unsigned long long)btrfs_root_backup_##f##_gen(b), \
		       btrfs_root_backup_##f##_level(b));
		BACKUP_FIELDS(X)
#undef X
		printf("\t\tbackup_total_bytes:\t%llu\n",
		       (unsigned long long)btrfs_root_backup_total_bytes(b));
		printf("\t\tbackup_bytes_used:\t%llu\n",
		       (unsigned long long)btrfs_root_backup_bytes_used(b));
		printf("\t\tbackup_num_devices:\t%llu\n\n",
		       (unsigned long long)btrfs_root_backup_num_devices(b));
	}
}

static json_object *backup_roots_to_json(const struct btrfs_super_block *sb)
{
	json_object *arr = json_object_new_array();

	for (int i = 0; i < BTRFS_NUM_BACKUP_ROOTS; i++) {
		const struct btrfs_root_backup *b = &sb->super_roots[i];
		json_object *o = json_object_new_object();

#define X(f, label)							\
		json_add_u64(o, #f, btrfs_root_backup_##f(b));		\
		json_add_u64(o, #f "_gen", btrfs_root_backup_##f##_gen(b)); \
		json_add_u64(o, #f "_level", btrfs_root_backup_##f##_level(b));
		BACKUP_FIELDS(X)
#undef X
		json_add_u64(o, "total_bytes", btrfs_root_backup_total_bytes(b));
		json_add_u64(o, "bytes_used", btrfs_root_backup_bytes_used(b));
		json_add_u64(o, "num_devices", btrfs_root_backup_num_devices(b));
		json_object_array_add(arr, o);
	}
	return arr;
}

/* Numeric fields printed after "label", in dump-super's order. */
#define SB_GETTER(f)							\
static u64 sb_get_##f(const struct btrfs_super_block *sb)		\
{ return btrfs_super_block_##f(sb); }
SB_GETTER(bytenr)
SB_GETTER(generation)
SB_GETTER(root)
SB_GETTER(sys_chunk_array_size)
SB_GETTER(chunk_root_generation)
SB_GETTER(root_level)
SB_GETTER(chunk_root)
SB_GETTER(chunk_root_level)
SB_GETTER(log_root)
SB_GETTER(log_root_transid)
SB_GETTER(log_root_level)
SB_GETTER(total_bytes)
SB_GETTER(bytes_used)
SB_GETTER(sectorsize)
SB_GETTER(nodesize)
SB_GETTER(leafsize)
SB_GETTER(stripesize)
SB_GETTER(root_dir_objectid)
SB_GETTER(num_devices)

struct sb_field {
	const char *label;	/* text label, tabs included */
	const char *key;	/* JSON key */
	u64 (*get)(const struct btrfs_super_block *sb);
};

static const struct sb_field sb_fields[] = {
	{ "generation\t\t", "generation", sb_get_generation },
	{ "root\t\t\t", "root", sb_get_root },
	{ "sys_array_size\t\t", "sys_array_size", sb_get_sys_chunk_array_size },
	{ "chunk_root_generation\t", "chunk_root_generation", sb_get_chunk_root_generation },
	{ "root_level\t\t", "root_level", sb_get_root_level },
	{ "chunk_root\t\t", "chunk_root", sb_get_chunk_root },
	{ "chunk_root_level\t", "chunk_root_level", sb_get_chunk_root_level },
	{ "log_root\t\t", "log_root", sb_get_log_root },
	{ "log_root_transid (deprecated)\t", "log_root_transid", sb_get_log_root_transid },
	{ "log_root_level\t\t", "log_root_level", sb_get_log_root_level },
	{ "total_bytes\t\t", "total_bytes", sb_get_total_bytes },
	{ "bytes_used\t\t", "bytes_used", sb_get_bytes_used },
	{ "sectorsize\t\t", "sectorsize", sb_get_sectorsize },
	{ "nodesize\t\t", "nodesize", sb_get_nodesize },
	{ "leafsize (deprecated)\t", "leafsize", sb_get_leafsize },
	{ "stripesize\t\t", "stripesize", sb_get_stripesize },
	{ "root_dir\t\t", "root_dir", sb_get_root_dir_objectid },
	{ "num_devices\t\t", "num_devices", sb_get_num_devices },
	{ NULL, NULL, NULL }
};

static void print_super_text(const struct super_view *v, const char *device, bool full)
{
	const struct btrfs_super_block *sb = v->sb;
	const struct btrfs_dev_item *di = &sb->dev_item;

	printf("superblock: bytenr=%llu, device=%s\n",
	       (unsigned long long)btrfs_super_block_bytenr(sb), device);
	printf("---------------------------------------------------------\n");
	printf("csum_type\t\t%u (%s)\n", btrfs_super_block_csum_type(sb),
	       v->csum_name ? v->csum_name : "INVALID");
	printf("csum_size\t\t%d\n", v->csum_size);
	printf("csum\t\t\t%s [%s]\n", v->csum_hex, v->csum_ok ? "match" : "DON'T MATCH");
	printf("bytenr\t\t\t%llu\n", (unsigned long long)sb_get_bytenr(sb));
	print_flags("flags\t\t\t", btrfs_super_block_flags(sb), super_flags);
	printf("magic\t\t\t%.8s [%s]\n", (const char *)&sb->magic,
	       v->magic_ok ? "match" : "DON'T MATCH");
	printf("fsid\t\t\t%s\n", v->fsid);
	printf("metadata_uuid\t\t%s\n", v->metadata_uuid);
	printf("label\t\t\t%s\n", v->label);
	for (const struct sb_field *f = sb_fields; f->label; f++)
		printf("%s%llu\n", f->label, (unsigned long long)f->get(sb));
	printf("compat_flags\t\t0x%llx\n",
	       (unsigned long long)btrfs_super_block_compat_flags(sb));
	print_flags("compat_ro_flags\t\t", btrfs_super_block_compat_ro_flags(sb),
		    compat_ro_flags);
	print_flags("incompat_flags\t\t", btrfs_super_block_incompat_flags(sb),
		    incompat_flags);
	printf("cache_generation\t%llu\n",
	       (unsigned long long)btrfs_super_block_cache_generation(sb));
	printf("uuid_tree_generation\t%llu\n",
	       (unsigned long long)btrfs_super_block_uuid_tree_generation(sb));
	printf("dev_item.uuid\t\t%s\n", v->dev_uuid);
	printf("dev_item.fsid\t\t%s [%s]\n", v->dev_fsid,
	       v->dev_fsid_ok ? "match" : "DON'T MATCH");
	printf("dev_item.type\t\t%llu\n", (unsigned long long)btrfs_dev_item_type(di));
	printf("dev_item.total_bytes\t%llu\n", (unsigned long long)btrfs_dev_item_total_bytes(di));
	printf("dev_item.bytes_used\t%llu\n", (unsigned long long)btrfs_dev_item_bytes_used(di));
	printf("dev_item.io_align\t%u\n", btrfs_dev_item_io_align(di));
	printf("dev_item.io_width\t%u\n", btrfs_dev_item_io_width(di));
	printf("dev_item.sector_size\t%u\n", btrfs_dev_item_sector_size(di));
	printf("dev_item.devid\t\t%llu\n", (unsigned long long)btrfs_dev_item_devid(di));
	printf("dev_item.dev_group\t%u\n", btrfs_dev_item_dev_group(di));
	printf("dev_item.seek_speed\t%u\n", btrfs_dev_item_seek_speed(di));
	printf("dev_item.bandwidth\t%u\n", btrfs_dev_item_bandwidth(di));
	printf("dev_item.generation\t%llu\n", (unsigned long long)btrfs_dev_item_generation(di));
	if (full) {
		printf("sys_chunk_array[%d]:\n", BTRFS_SYSTEM_CHUNK_ARRAY_SIZE);
		for_each_sys_chunk(sb, print_sys_chunk, NULL);
		print_backup_roots(sb);
	}
	printf("\n");
}

static json_object *super_to_json(const struct super_view *v, bool full)
{
	const struct btrfs_super_block *sb = v->sb;
	const struct btrfs_dev_item *di = &sb->dev_item;
	json_object *o = json_object_new_object(), *d = json_object_new_object();

	json_add_u64(o, "csum_type", btrfs_super_block_csum_type(sb));
	json_add_str(o, "csum_type_name", v->csum_name ? v->csum_name : "INVALID");
	json_add_u64(o, "csum_size", v->csum_size);
	json_add_str(o, "csum", v->csum_hex);
	json_object_object_add(o, "csum_match", json_object_new_boolean(v->csum_ok));
	json_object_object_add(o, "magic_match", json_object_new_boolean(v->magic_ok));
	json_add_u64(o, "bytenr", sb_get_bytenr(sb));
	json_add_u64(o, "flags", btrfs_super_block_flags(sb));
	json_add_str(o, "fsid", v->fsid);
	json_add_str(o, "metadata_uuid", v->metadata_uuid);
	json_object_object_add(o, "label", btrfs_json_bytes(v->label, strlen(v->label)));
	for (const struct sb_field *f = sb_fields; f->label; f++)
		json_add_u64(o, f->key, f->get(sb));
	json_object_object_add(o, "flags_names", flags_to_json(btrfs_super_block_flags(sb),
								super_flags));
	json_add_u64(o, "compat_flags", btrfs_super_block_compat_flags(sb));
	json_add_u64(o, "compat_ro_flags", btrfs_super_block_compat_ro_flags(sb));
	json_object_object_add(o, "compat_ro_flags_names",
			       flags_to_json(btrfs_super_block_compat_ro_flags(sb), compat_ro_flags));
	json_add_u64(o, "incompat_flags", btrfs_super_block_incompat_flags(sb));
	json_object_object_add(o, "incompat_flags_names",
			       flags_to_json(btrfs_super_block_incompat_flags(sb), incompat_flags));
	json_add_u64(o, "cache_generation", btrfs_super_block_cache_generation(sb));
	json_add_u64(o, "uuid_tree_generation", btrfs_super_block_uuid_tree_generation(sb));
	json_add_str(d, "uuid", v->dev_uuid);
	json_add_str(d, "fsid", v->dev_fsid);
	json_object_object_add(d, "fsid_match", json_object_new_boolean(v->dev_fsid_ok));
	json_add_u64(d, "type", btrfs_dev_item_type(di));
	json_add_u64(d, "total_bytes", btrfs_dev_item_total_bytes(di));
	json_add_u64(d, "bytes_used", btrfs_dev_item_bytes_used(di));
	json_add_u64(d, "io_align", btrfs_dev_item_io_align(di));
	json_add_u64(d, "io_width", btrfs_dev_item_io_width(di));
	json_add_u64(d, "sector_size", btrfs_dev_item_sector_size(di));
	json_add_u64(d, "devid", btrfs_dev_item_devid(di));
	json_add_u64(d, "dev_group", btrfs_dev_item_dev_group(di));
	json_add_u64(d, "seek_speed", btrfs_dev_item_seek_speed(di));
	json_add_u64(d, "bandwidth", btrfs_dev_item_bandwidth(di));
	json_add_u64(d, "generation", btrfs_dev_item_generation(di));
	json_object_object_add(o, "dev_item", d);
	if (full) {
		json_object *arr = json_object_new_array();

		for_each_sys_chunk(sb, sys_chunk_to_json, arr);
		json_object_object_add(o, "sys_chunk_array", arr);
		json_object_object_add(o, "backup_roots", backup_roots_to_json(sb));
	}
	return o;
}

static int cmd_dump_super(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "full", no_argument, NULL, 'f' },
		{ "all", no_argument, NULL, 'a' },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	struct btrfs_super_block sb;
	struct tlog_bdev *bdev;
	json_object *jarr = NULL;
	bool full = false, all = false;
	int mirror = 0, ret = 0, printed = 0, c;
	const char *image;

	while ((c = cmd_next_option(cmd, argc, argv, "fas:F", long_options, &common)) != -1) {
		switch (c) {
		case 'f':
			full = true;
			break;
		case 'a':
			all = true;
			break;
		case 's':
			/* -s N is the short form of --super N */
			handle_common_option(cmd, GETOPT_VAL_SUPER, &common);
			break;
		case 'F':
			/* btrfs-progs' "force": we always show what is there */
			break;
		}
	}
	check_argc(cmd, argc, 1, 1);
	image = argv[optind];
	if (common.super_mirror >= 0)
		mirror = common.super_mirror;

	ret = tlog_bdev_open_file(image, TLOG_BDEV_RDONLY, &bdev);
	if (ret) {
		error_errno(ret, "cannot open %s", image);
		return 1;
	}
	if (common.format == OUTPUT_JSON)
		jarr = json_object_new_array();

	for (int i = all ? 0 : mirror; i < (all ? BTRFS_SUPER_MIRROR_MAX : mirror + 1); i++) {
		struct super_view view;
		char found[64];
		int err;

		tlog_error_clear();
		err = btrfs_read_super_raw(bdev, i, &sb);
		if (err == -ENOENT) {
			if (i == 0) {
				error("%s is not a btrfs image (too small to hold a superblock: %llu bytes)",
				      image, (unsigned long long)bdev->size);
				ret = 1;
			} else if (!all) {
				error("superblock copy %d at %llu is past the end of %s",
				      i, (unsigned long long)btrfs_sb_offset(i), image);
				ret = 1;
			} else if (!jarr) {
				/* btrfs-progs marks the end of the copies with a blank line */
				printf("\n");
			}
			break;
		}
		if (err == -TLOG_ENOTBTRFS) {
			/* A missing mirror is legal; a missing primary means "not btrfs". */
			if (i == 0 && probe_signature(image, found, sizeof(found)) == 0 &&
			    strcmp(found, "btrfs") != 0)
				error("%s holds %s, not btrfs", image, found);
			else if (i == 0 || !all)
				error("%s: no btrfs superblock at %llu", image,
				      (unsigned long long)btrfs_sb_offset(i));
			if (i == 0 || !all)
				ret = 1;
			continue;
		}
		if (err) {
			error_errno(err, "cannot read superblock copy %d of %s", i, image);
			ret = 1;
			continue;
		}
		view_super(&sb, &view);
		if (jarr) {
			json_object *o = super_to_json(&view, full);

			json_add_u64(o, "copy", i);
			json_object_array_add(jarr, o);
		} else {
			printed++;
			print_super_text(&view, image, full);
		}
		err = btrfs_validate_super(&sb, i);
		if (err == -EOPNOTSUPP) {
			/* valid, just beyond what the other commands handle */
			fflush(stdout);
			warning("%s", tlog_error_get());
		} else if (err) {
			fflush(stdout);
			error_errno(err, "superblock copy %d of %s is invalid", i, image);
			ret = 1;
		}
	}
	if (jarr) {
		json_object *top = json_object_new_object();

		json_object_object_add(top, "superblocks", jarr);
		if (output_json(top))
			ret = 1;
	}
	tlog_bdev_close(bdev);
	return ret;
}

const struct cmd_struct cmd_struct_dump_super = {
	.name = "dump-super",
	.fn = cmd_dump_super,
	.usage = dump_super_usage,
	.flags = CMD_JSON,
};
