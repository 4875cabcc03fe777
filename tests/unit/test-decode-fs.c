// SPDX-License-Identifier: GPL-2.0-only
/*
 * The decoders of filesystem-tree and metadata items: an item laid out as
 * the kernel writes it decodes to its fields; one broken field gets it
 * refused, with a finding that names the block, slot and key; a tolerant
 * reader gets the entry and a note instead, and no error recorded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "csum.h"
#include "ctree.h"
#include "errctx.h"
#include "leaf-builder.h"
#include "tree-checker.h"

#define NODESIZE	4096
#define BLOCK		30441472ULL
#define SUPER_GEN	20ULL

static struct tlog_fs *fs;
static struct extent_buffer *leaf;
static struct tlog_leaf_builder lb;

static void setup(void)
{
	cr_assert_eq(tlog_fs_create_memory(NODESIZE, 4096, BTRFS_CSUM_TYPE_CRC32, &fs), 0);
	btrfs_set_super_block_generation(&fs->super, SUPER_GEN);
	leaf = calloc(1, sizeof(*leaf) + NODESIZE);
	cr_assert_not_null(leaf);
	leaf->start = BLOCK;
	leaf->data = leaf->block;
	leaf->len = NODESIZE;
	tlog_leaf_init(&lb, leaf->data, NODESIZE, 0);
	btrfs_set_header_owner(eb_header(leaf), BTRFS_FS_TREE_OBJECTID);
}

static void teardown(void)
{
	free(leaf);
	tlog_close(fs);
}

TestSuite(decode_fs, .init = setup, .fini = teardown);

static void *add(u64 objectid, u8 type, u64 offset, u32 size)
{
	struct btrfs_key key = { objectid, type, offset };
	void *p = tlog_leaf_append(&lb, &key, NULL, size);

	cr_assert_not_null(p);
	memset(p, 0, size);
	btrfs_set_header_nritems(eb_header(leaf), lb.nritems);
	return p;
}

static struct btrfs_key key_at(int slot)
{
	struct btrfs_key key;

	btrfs_item_key_to_cpu(leaf, &key, slot);
	return key;
}

/* The refusal names the place, in the finding and in the error context. */
static void assert_finding(int ret, int slot, const char *kind, const char *what)
{
	const struct tlog_finding *f = tlog_last_finding();
	struct btrfs_key key = key_at(slot);
	char place[128];

	cr_assert_eq(ret, -EUCLEAN, "%s was accepted", what);
	cr_assert_eq(f->tree, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(f->block, BLOCK);
	cr_assert_eq(f->slot, slot);
	cr_assert_eq(f->key.objectid, key.objectid);
	cr_assert_eq(f->key.type, key.type);
	cr_assert_eq(f->key.offset, key.offset);
	cr_assert_str_eq(f->kind, kind);
	cr_assert(strstr(f->what, what), "finding \"%s\", expected \"%s\"", f->what, what);
	snprintf(place, sizeof(place), "fs tree block %llu slot %d key (%llu %u %llu): %s: ",
		 BLOCK, slot, (unsigned long long)key.objectid, key.type,
		 (unsigned long long)key.offset, kind);
	cr_assert_not_null(tlog_error_get());
	cr_assert(strstr(tlog_error_get(), place) == tlog_error_get(), "error \"%s\"",
		  tlog_error_get());
}

/* ---- directory entries ---- */

/* One entry at @p, laid out as the kernel writes it. */
static u32 put_dir_entry(u8 *p, const char *name, u64 target, u8 type, const char *data)
{
	struct btrfs_dir_item *di = (void *)p;
	struct btrfs_disk_key loc;
	u16 nl = strlen(name), dl = data ? strlen(data) : 0;

	btrfs_cpu_key_to_disk(&loc, &(struct btrfs_key){ target, BTRFS_INODE_ITEM_KEY, 0 });
	di->location = loc;
	btrfs_set_dir_item_transid(di, SUPER_GEN);
	btrfs_set_dir_item_name_len(di, nl);
	btrfs_set_dir_item_data_len(di, dl);
	btrfs_set_dir_item_type(di, type);
	memcpy(di + 1, name, nl);
	if (dl)
		memcpy((u8 *)(di + 1) + nl, data, dl);
	return sizeof(*di) + nl + dl;
}

static struct btrfs_dir_item *add_dir_item(u8 key_type, u64 offset, const char *name,
					   u8 type, const char *data)
{
	u32 size = sizeof(struct btrfs_dir_item) + strlen(name) + (data ? strlen(data) : 0);
	u8 *p = add(256, key_type, offset, size);

	put_dir_entry(p, name, 257, type, data);
	return (void *)p;
}

static int decode_dir(int slot, struct tlog_dir_entry *de, char *note, size_t n)
{
	struct btrfs_key key = key_at(slot);

	tlog_error_clear();
	return btrfs_dir_entry_at(leaf, slot, &key, 0, de, note, n);
}

Test(decode_fs, dir_entries_decode)
{
	struct tlog_dir_entry de;

	add_dir_item(BTRFS_DIR_ITEM_KEY, btrfs_name_hash("foo", 3), "foo", BTRFS_FT_REG_FILE, NULL);
	add_dir_item(BTRFS_DIR_INDEX_KEY, 2, "foo", BTRFS_FT_REG_FILE, NULL);
	add(257, BTRFS_INODE_ITEM_KEY, 0, sizeof(struct btrfs_inode_item));
	cr_assert_eq(decode_dir(0, &de, NULL, 0), (int)sizeof(struct btrfs_dir_item) + 3,
		     "%s", tlog_error_get());
	cr_assert_eq(de.dir, 256);
	cr_assert_eq(de.location.objectid, 257);
	cr_assert_eq(de.location.type, BTRFS_INODE_ITEM_KEY);
	cr_assert_eq(de.index, 0);
	cr_assert_eq(de.transid, SUPER_GEN);
	cr_assert_eq(de.type, BTRFS_FT_REG_FILE);
	cr_assert_eq(de.name_len, 3);
	cr_assert(memcmp(de.name, "foo", 3) == 0);
	cr_assert_eq(de.data_len, 0);
	cr_assert_eq(decode_dir(1, &de, NULL, 0), (int)sizeof(struct btrfs_dir_item) + 3);
	cr_assert_eq(de.index, 2);
}

Test(decode_fs, xattr_decodes_with_value)
{
	struct tlog_dir_entry de;

	add_dir_item(BTRFS_XATTR_ITEM_KEY, btrfs_name_hash("user.a", 6), "user.a",
		     BTRFS_FT_XATTR, "value");
	cr_assert_eq(decode_dir(0, &de, NULL, 0), (int)sizeof(struct btrfs_dir_item) + 11,
		     "%s", tlog_error_get());
	cr_assert_eq(de.data_len, 5);
	cr_assert(memcmp(de.data, "value", 5) == 0);
}

Test(decode_fs, broken_dir_entries_refused)
{
	u64 hash = btrfs_name_hash("foo", 3);
	struct btrfs_dir_item *di[6];
	struct tlog_dir_entry de;

	di[0] = add_dir_item(BTRFS_DIR_ITEM_KEY, hash, "foo", BTRFS_FT_UNKNOWN, NULL);
	di[1] = add_dir_item(BTRFS_DIR_ITEM_KEY, hash + 1, "foo", BTRFS_FT_XATTR, NULL);
	di[2] = add_dir_item(BTRFS_DIR_ITEM_KEY, hash + 2, "foo", BTRFS_FT_REG_FILE, NULL);
	di[3] = add_dir_item(BTRFS_DIR_INDEX_KEY, 2, "foo", BTRFS_FT_REG_FILE, NULL);
	di[4] = add_dir_item(BTRFS_DIR_INDEX_KEY, 3, "foo", BTRFS_FT_REG_FILE, NULL);
	di[5] = add_dir_item(BTRFS_DIR_INDEX_KEY, 4, "foo", BTRFS_FT_REG_FILE, NULL);
	btrfs_set_dir_item_name_len(di[3], 0);
	btrfs_set_dir_item_data_len(di[4], 1);
	btrfs_set_dir_item_name_len(di[5], 4);
	assert_finding(decode_dir(0, &de, NULL, 0), 0, "dir item", "invalid type 0");
	assert_finding(decode_dir(1, &de, NULL, 0), 1, "dir item", "type 8 in a directory item");
	assert_finding(decode_dir(2, &de, NULL, 0), 2, "dir item", "name hash mismatch");
	assert_finding(decode_dir(3, &de, NULL, 0), 3, "dir item", "name of 0 bytes");
	assert_finding(decode_dir(4, &de, NULL, 0), 4, "dir item", "bytes of data");
	assert_finding(decode_dir(5, &de, NULL, 0), 5, "dir item", "does not fit");
}

Test(decode_fs, cut_dir_entry_header_refused)
{
	struct tlog_dir_entry de;

	add(256, BTRFS_DIR_INDEX_KEY, 2, sizeof(struct btrfs_dir_item) - 1);
	assert_finding(decode_dir(0, &de, NULL, 0), 0, "dir item", "cut off");
}

Test(decode_fs, tolerant_reader_gets_entry_and_note)
{
	struct tlog_dir_entry de;
	char note[256];

	add_dir_item(BTRFS_DIR_ITEM_KEY, 12345, "foo", BTRFS_FT_REG_FILE, NULL);
	add(256, BTRFS_DIR_INDEX_KEY, 2, 4);
	cr_assert_eq(decode_dir(0, &de, note, sizeof(note)), (int)sizeof(struct btrfs_dir_item) + 3);
	cr_assert_str_eq(note, "dir item: name hash mismatch");
	cr_assert_eq(de.name_len, 3);
	cr_assert_null(tlog_error_get(), "a tolerant read recorded an error");
	cr_assert_eq(decode_dir(1, &de, note, sizeof(note)), -EUCLEAN);
	cr_assert(strstr(note, "cut off"), "note \"%s\"", note);
	cr_assert_null(tlog_error_get());
}

Test(decode_fs, every_entry_of_an_item_is_walked)
{
	u8 *p = add(256, BTRFS_XATTR_ITEM_KEY, btrfs_name_hash("user.a", 6),
		    2 * sizeof(struct btrfs_dir_item) + 12 + 2);
	struct btrfs_key key = key_at(0);
	struct tlog_dir_entry de;
	u32 off;

	off = put_dir_entry(p, "user.a", 257, BTRFS_FT_XATTR, "1");
	/* a second entry of the same hash: the walk goes on past the first */
	put_dir_entry(p + off, "user.a", 257, BTRFS_FT_XATTR, "2");
	cr_assert_eq(btrfs_find_name_in_dir_item(leaf, 0, "user.a", 6, &de, &off), 0);
	cr_assert_eq(off, 0);
	cr_assert_eq(btrfs_dir_entry_at(leaf, 0, &key, sizeof(struct btrfs_dir_item) + 7, &de,
					NULL, 0), (int)sizeof(struct btrfs_dir_item) + 7);
	cr_assert_eq(de.data[0], '2');
	cr_assert_eq(btrfs_find_name_in_dir_item(leaf, 0, "user.b", 6, &de, NULL), -ENOENT);
}

/* ---- inode refs ---- */

Test(decode_fs, inode_refs_decode)
{
	struct btrfs_inode_ref *ref = add(257, BTRFS_INODE_REF_KEY, 256, sizeof(*ref) + 3);
	struct btrfs_inode_extref *ext;
	struct tlog_ref_entry r;
	struct btrfs_key key;

	btrfs_set_inode_ref_index(ref, 5);
	btrfs_set_inode_ref_name_len(ref, 3);
	memcpy(ref + 1, "abc", 3);
	ext = add(257, BTRFS_INODE_EXTREF_KEY, btrfs_extref_hash(300, "de", 2), sizeof(*ext) + 2);
	btrfs_set_inode_extref_parent_objectid(ext, 300);
	btrfs_set_inode_extref_index(ext, 7);
	btrfs_set_inode_extref_name_len(ext, 2);
	memcpy(ext + 1, "de", 2);

	key = key_at(0);
	cr_assert_eq(btrfs_ref_entry_at(leaf, 0, &key, 0, &r, NULL, 0), (int)sizeof(*ref) + 3);
	cr_assert_eq(r.parent, 256);
	cr_assert_eq(r.index, 5);
	cr_assert_eq(r.name_len, 3);
	cr_assert(memcmp(r.name, "abc", 3) == 0);
	key = key_at(1);
	cr_assert_eq(btrfs_ref_entry_at(leaf, 1, &key, 0, &r, NULL, 0), (int)sizeof(*ext) + 2);
	cr_assert_eq(r.parent, 300);
	cr_assert_eq(r.index, 7);
	cr_assert(memcmp(r.name, "de", 2) == 0);
}

Test(decode_fs, broken_inode_refs_refused)
{
	struct btrfs_inode_ref *ref = add(257, BTRFS_INODE_REF_KEY, 256, sizeof(*ref) + 3);
	struct tlog_ref_entry r;
	struct btrfs_key key;

	btrfs_set_inode_ref_name_len(ref, 4);
	add(258, BTRFS_INODE_EXTREF_KEY, 1, sizeof(struct btrfs_inode_extref) - 1);
	key = key_at(0);
	assert_finding(btrfs_ref_entry_at(leaf, 0, &key, 0, &r, NULL, 0), 0, "inode ref",
		       "name at 0 does not fit");
	key = key_at(1);
	assert_finding(btrfs_ref_entry_at(leaf, 1, &key, 0, &r, NULL, 0), 1, "inode ref",
		       "header at 0 is cut off");
}

/* ---- root refs ---- */

Test(decode_fs, root_refs_decode_and_broken_refused)
{
	struct btrfs_root_ref *rr = add(BTRFS_FS_TREE_OBJECTID, BTRFS_ROOT_REF_KEY, 256,
					sizeof(*rr) + 3);
	struct tlog_root_ref ref;
	struct btrfs_key key;

	btrfs_set_root_ref_dirid(rr, 256);
	btrfs_set_root_ref_sequence(rr, 4);
	btrfs_set_root_ref_name_len(rr, 3);
	memcpy(rr + 1, "sub", 3);
	add(256, BTRFS_ROOT_BACKREF_KEY, BTRFS_FS_TREE_OBJECTID, sizeof(*rr) - 1);
	key = key_at(0);
	cr_assert_eq(btrfs_decode_root_ref(leaf, 0, &key, &ref, NULL, 0), 0);
	cr_assert_eq(ref.dirid, 256);
	cr_assert_eq(ref.sequence, 4);
	cr_assert_eq(ref.name_len, 3);
	cr_assert(memcmp(ref.name, "sub", 3) == 0);
	btrfs_set_root_ref_name_len(rr, 4);
	assert_finding(btrfs_decode_root_ref(leaf, 0, &key, &ref, NULL, 0), 0, "root ref",
		       "past item end");
	key = key_at(1);
	assert_finding(btrfs_decode_root_ref(leaf, 1, &key, &ref, NULL, 0), 1, "root ref",
		       "too small");
}

/* ---- inode items ---- */

Test(decode_fs, inode_item_decodes_and_broken_refused)
{
	struct btrfs_inode_item *ii = add(257, BTRFS_INODE_ITEM_KEY, 0, sizeof(*ii));
	const struct btrfs_inode_item *got;
	struct btrfs_key key = key_at(0);
	char note[256];

	btrfs_set_inode_item_mode(ii, S_IFREG | 0644);
	btrfs_set_inode_item_nlink(ii, 1);
	btrfs_set_inode_item_size(ii, 4096);
	btrfs_set_inode_item_generation(ii, SUPER_GEN);
	btrfs_set_inode_item_transid(ii, SUPER_GEN);
	cr_assert_eq(btrfs_decode_inode_item(fs, leaf, 0, &key, &got, NULL, 0), 0);
	cr_assert_eq(btrfs_inode_item_size(got), 4096);
	cr_assert_eq(btrfs_inode_item_mode(got), S_IFREG | 0644);

	btrfs_set_inode_item_mode(ii, 013);
	assert_finding(btrfs_decode_inode_item(fs, leaf, 0, &key, &got, NULL, 0), 0, "inode",
		       "invalid mode 013");
	/* a tolerant reader still gets it, with the rule it breaks */
	tlog_error_clear();
	cr_assert_eq(btrfs_decode_inode_item(fs, leaf, 0, &key, &got, note, sizeof(note)), 0);
	cr_assert_str_eq(note, "inode: invalid mode 013");
	cr_assert_null(tlog_error_get());
	btrfs_set_inode_item_mode(ii, S_IFREG | 0644);
	btrfs_set_inode_item_transid(ii, SUPER_GEN + 2);
	assert_finding(btrfs_decode_inode_item(fs, leaf, 0, &key, &got, NULL, 0), 0, "inode",
		       "transid 22 is newer than 21");
}

Test(decode_fs, short_inode_item_unreadable)
{
	const struct btrfs_inode_item *got;
	struct btrfs_key key;
	char note[256];

	add(257, BTRFS_INODE_ITEM_KEY, 0, sizeof(struct btrfs_inode_item) - 8);
	key = key_at(0);
	cr_assert_eq(btrfs_decode_inode_item(fs, leaf, 0, &key, &got, note, sizeof(note)),
		     -EUCLEAN);
	cr_assert(strstr(note, "item size 152, expected 160"), "note \"%s\"", note);
	assert_finding(btrfs_decode_inode_item(fs, leaf, 0, &key, &got, NULL, 0), 0, "inode",
		       "item size 152");
}

/* ---- chunks and devices ---- */

static struct btrfs_chunk *single_chunk(u8 *buf)
{
	struct btrfs_chunk *c = (void *)buf;
	struct btrfs_stripe *s = btrfs_chunk_stripe(c, 0);

	memset(buf, 0, btrfs_chunk_item_size(1));
	btrfs_set_chunk_length(c, 8 << 20);
	btrfs_set_chunk_owner(c, BTRFS_EXTENT_TREE_OBJECTID);
	btrfs_set_chunk_stripe_len(c, BTRFS_STRIPE_LEN);
	btrfs_set_chunk_type(c, BTRFS_BLOCK_GROUP_DATA);
	btrfs_set_chunk_sector_size(c, 4096);
	btrfs_set_chunk_num_stripes(c, 1);
	btrfs_set_stripe_devid(s, btrfs_dev_item_devid(&fs->super.dev_item));
	btrfs_set_stripe_offset(s, 1 << 20);
	return c;
}

Test(decode_fs, chunk_checked_by_its_fields)
{
	u8 buf[128];
	struct btrfs_chunk *c = single_chunk(buf);

	btrfs_set_dev_item_total_bytes(&fs->super.dev_item, 64 << 20);
	cr_assert_eq(btrfs_check_chunk(fs, 16 << 20, c, btrfs_chunk_item_size(1)), 0, "%s",
		     tlog_error_get());
	cr_assert_eq(btrfs_check_chunk(fs, 16 << 20, c, btrfs_chunk_item_size(1) - 1), -EUCLEAN);
	btrfs_set_chunk_stripe_len(c, 4096);
	cr_assert_eq(btrfs_check_chunk(fs, 16 << 20, c, btrfs_chunk_item_size(1)), -EUCLEAN);
	cr_assert(strstr(tlog_error_get(), "chunk at 16777216: invalid stripe_len 4096"));
	btrfs_set_chunk_stripe_len(c, BTRFS_STRIPE_LEN);
	btrfs_set_stripe_offset(btrfs_chunk_stripe(c, 0), 60 << 20);
	cr_assert_eq(btrfs_check_chunk(fs, 16 << 20, c, btrfs_chunk_item_size(1)), -EUCLEAN);
	cr_assert(strstr(tlog_error_get(), "beyond the device end"));
}

Test(decode_fs, device_item_agrees_with_the_superblock)
{
	u64 devid = btrfs_dev_item_devid(&fs->super.dev_item);
	struct btrfs_dev_item *dev;
	struct btrfs_key key;

	btrfs_set_dev_item_total_bytes(&fs->super.dev_item, 64 << 20);
	dev = add(BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, devid, sizeof(*dev));
	btrfs_set_dev_item_devid(dev, devid);
	btrfs_set_dev_item_total_bytes(dev, 64 << 20);
	btrfs_set_dev_item_bytes_used(dev, 8 << 20);
	key = key_at(0);
	cr_assert_eq(btrfs_check_dev_item(fs, leaf, 0, &key), 0, "%s", tlog_error_get());
	btrfs_set_dev_item_total_bytes(dev, 32 << 20);
	assert_finding(btrfs_check_dev_item(fs, leaf, 0, &key), 0, "device item",
		       "size 33554432, the superblock says 67108864");
}

/* ---- root items and block groups ---- */

Test(decode_fs, root_items_decode_and_broken_refused)
{
	struct btrfs_root_item *full = add(BTRFS_FS_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0,
					   sizeof(*full));
	struct btrfs_root_item ri;
	struct btrfs_key key;
	char note[256];
	u8 *legacy;

	btrfs_set_root_item_bytenr(full, 30408704);
	btrfs_set_root_item_level(full, 1);
	btrfs_set_root_item_root_dirid(full, 256);
	legacy = add(257, BTRFS_ROOT_ITEM_KEY, 0, BTRFS_ROOT_ITEM_LEGACY_SIZE);
	memcpy(legacy, full, BTRFS_ROOT_ITEM_LEGACY_SIZE);
	key = key_at(0);
	cr_assert_eq(btrfs_decode_root_item(fs, leaf, 0, &key, &ri, NULL, 0), 0);
	cr_assert_eq(btrfs_root_item_bytenr(&ri), 30408704);
	cr_assert_eq(btrfs_root_item_root_dirid(&ri), 256);
	key = key_at(1);
	btrfs_set_root_item_generation_v2(full, 99);
	cr_assert_eq(btrfs_decode_root_item(fs, leaf, 1, &key, &ri, NULL, 0), 0);
	cr_assert_eq(btrfs_root_item_level(&ri), 1);
	cr_assert_eq(btrfs_root_item_generation_v2(&ri), 0, "the legacy item is zero-filled");

	key = key_at(0);
	btrfs_set_root_item_level(full, BTRFS_MAX_LEVEL);
	assert_finding(btrfs_decode_root_item(fs, leaf, 0, &key, &ri, NULL, 0), 0, "root item",
		       "invalid root level 8");
	btrfs_set_root_item_level(full, 0);
	btrfs_set_root_item_bytenr(full, 30408704 + 512);
	assert_finding(btrfs_decode_root_item(fs, leaf, 0, &key, &ri, NULL, 0), 0, "root item",
		       "invalid root address");
	tlog_error_clear();
	cr_assert_eq(btrfs_decode_root_item(fs, leaf, 0, &key, &ri, note, sizeof(note)), 0);
	cr_assert(strstr(note, "invalid root address"), "note \"%s\"", note);
	cr_assert_null(tlog_error_get());
}

Test(decode_fs, block_group_items_decode_and_short_refused)
{
	struct btrfs_block_group_item *bg = add(1 << 20, BTRFS_BLOCK_GROUP_ITEM_KEY, 8 << 20,
						sizeof(*bg));
	const struct btrfs_block_group_item *got;
	struct btrfs_key key;

	btrfs_set_block_group_item_used(bg, 4096);
	btrfs_set_block_group_item_flags(bg, BTRFS_BLOCK_GROUP_DATA);
	add(9 << 20, BTRFS_BLOCK_GROUP_ITEM_KEY, 8 << 20, sizeof(*bg) - 1);
	key = key_at(0);
	got = btrfs_fixed_item_at(leaf, 0, &key, NULL, 0);
	cr_assert_not_null(got);
	cr_assert_eq(btrfs_block_group_item_used(got), 4096);
	cr_assert_eq(btrfs_block_group_item_flags(got), BTRFS_BLOCK_GROUP_DATA);
	key = key_at(1);
	cr_assert_null(btrfs_fixed_item_at(leaf, 1, &key, NULL, 0));
	assert_finding(-EUCLEAN, 1, "block group", "item size 23, expected 24");
}

Test(decode_fs, fixed_size_items_by_the_size_table)
{
	struct btrfs_key key;
	char note[256];

	add(0, BTRFS_QGROUP_INFO_KEY, 5, sizeof(struct btrfs_qgroup_info_item) + 8);
	add(1, BTRFS_DEV_EXTENT_KEY, 1 << 20, sizeof(struct btrfs_dev_extent) - 8);
	add(1 << 20, BTRFS_FREE_SPACE_INFO_KEY, 8 << 20, sizeof(struct btrfs_free_space_info));
	key = key_at(2);
	cr_assert_not_null(btrfs_fixed_item_at(leaf, 2, &key, NULL, 0));
	key = key_at(1);
	cr_assert_null(btrfs_fixed_item_at(leaf, 1, &key, NULL, 0));
	assert_finding(-EUCLEAN, 1, "dev extent", "item size 40, expected 48");
	key = key_at(0);
	cr_assert_null(btrfs_fixed_item_at(leaf, 0, &key, NULL, 0));
	assert_finding(-EUCLEAN, 0, "qgroup info", "expected 40");
	/* a longer item can still be read by a tolerant reader */
	tlog_error_clear();
	cr_assert_not_null(btrfs_fixed_item_at(leaf, 0, &key, note, sizeof(note)));
	cr_assert_str_eq(note, "qgroup info: item size 48, expected 40");
	cr_assert_null(tlog_error_get());
}
