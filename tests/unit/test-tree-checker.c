// SPDX-License-Identifier: GPL-2.0-only
/*
 * Item checks with the kernel's tree-checker rules: each rule accepts the
 * item the kernel writes and refuses the one broken in a single field,
 * with a finding that names the place.
 */
#include <errno.h>
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
#define SUPER_GEN	10ULL

static struct tlog_fs *fs;
static struct extent_buffer *leaf;
static struct tlog_leaf_builder lb;

static void setup(void)
{
	cr_assert_eq(tlog_fs_create_memory(NODESIZE, 4096, BTRFS_CSUM_TYPE_CRC32, &fs), 0);
	btrfs_set_super_block_generation(&fs->super, SUPER_GEN);
	leaf = calloc(1, sizeof(*leaf) + NODESIZE);
	cr_assert_not_null(leaf);
	leaf->start = 30408704;
	leaf->data = leaf->block;
	leaf->len = NODESIZE;
	tlog_leaf_init(&lb, leaf->data, NODESIZE, 0);
	btrfs_set_header_owner(eb_header(leaf), BTRFS_TREE_LOG_OBJECTID);
}

static void teardown(void)
{
	free(leaf);
	tlog_close(fs);
}

TestSuite(tree_checker, .init = setup, .fini = teardown);

/* Append an item; the leaf's header counts it. */
static void *add(u64 objectid, u8 type, u64 offset, u32 size)
{
	struct btrfs_key key = { objectid, type, offset };
	void *p = tlog_leaf_append(&lb, &key, NULL, size);

	cr_assert_not_null(p);
	btrfs_set_header_nritems(eb_header(leaf), lb.nritems);
	return p;
}

/* Check @slot; the key comes from the leaf, the previous one too. */
static int check(int slot)
{
	struct btrfs_key key, prev;

	btrfs_item_key_to_cpu(leaf, &key, slot);
	if (slot)
		btrfs_item_key_to_cpu(leaf, &prev, slot - 1);
	tlog_error_clear();
	return btrfs_check_item(fs, leaf, slot, &key, slot ? &prev : NULL);
}

static void assert_refused(int slot, const char *what)
{
	cr_assert_eq(check(slot), -EUCLEAN, "%s was accepted", what);
	cr_assert_not_null(tlog_error_get());
	cr_assert(strstr(tlog_error_get(), "log tree block 30408704 slot") != NULL,
		  "the finding does not name its place: %s", tlog_error_get());
}

/* ---- inode items ---- */

static struct btrfs_inode_item *add_inode(u64 ino, u32 mode)
{
	struct btrfs_inode_item *ii = add(ino, BTRFS_INODE_ITEM_KEY, 0, sizeof(*ii));

	btrfs_set_inode_item_mode(ii, mode);
	btrfs_set_inode_item_nlink(ii, 1);
	btrfs_set_inode_item_generation(ii, SUPER_GEN + 1);
	btrfs_set_inode_item_transid(ii, SUPER_GEN + 1);
	return ii;
}

Test(tree_checker, inode_of_the_logging_transaction_accepted)
{
	add_inode(257, S_IFREG | 0644);
	cr_assert_eq(check(0), 0, "%s", tlog_error_get());
}

Test(tree_checker, inode_without_file_type_refused)
{
	add_inode(257, 0);
	assert_refused(0, "mode 0");
}

Test(tree_checker, inode_with_invalid_file_type_refused)
{
	/* S_IFMT values that are no type (REG|DIR would be SOCK: valid) */
	static const u32 bad[] = { 0030000, 0050000, 0070000, 0110000, 0130000,
				   0150000, 0160000, 0170000 };
	struct btrfs_inode_item *ii = add_inode(257, 0);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		btrfs_set_inode_item_mode(ii, bad[i] | 0644);
		assert_refused(0, "a mode without a valid type");
	}
}

Test(tree_checker, inode_with_unknown_mode_bits_refused)
{
	/* 013: permission bits alone, as one fuzzed log had it */
	add_inode(257, 013);
	assert_refused(0, "mode 013");
}

Test(tree_checker, inode_from_the_future_refused)
{
	struct btrfs_inode_item *ii = add_inode(257, S_IFREG | 0644);

	btrfs_set_inode_item_generation(ii, SUPER_GEN + 2);
	assert_refused(0, "generation past the next transaction");
	btrfs_set_inode_item_generation(ii, SUPER_GEN + 1);
	btrfs_set_inode_item_transid(ii, SUPER_GEN + 2);
	assert_refused(0, "transid past the next transaction");
}

Test(tree_checker, directory_with_two_links_refused)
{
	struct btrfs_inode_item *ii = add_inode(257, S_IFDIR | 0755);

	cr_assert_eq(check(0), 0);
	btrfs_set_inode_item_nlink(ii, 2);
	assert_refused(0, "directory nlink 2");
}

Test(tree_checker, inode_with_unknown_flags_refused)
{
	struct btrfs_inode_item *ii = add_inode(257, S_IFREG | 0644);

	btrfs_set_inode_item_flags(ii, BTRFS_INODE_NODATACOW | BTRFS_INODE_RO_VERITY);
	cr_assert_eq(check(0), 0, "%s", tlog_error_get());
	btrfs_set_inode_item_flags(ii, 1ULL << 20);
	assert_refused(0, "unknown flag");
	btrfs_set_inode_item_flags(ii, 1ULL << 40);
	assert_refused(0, "unknown read-only flag");
}

Test(tree_checker, inode_item_of_wrong_size_refused)
{
	add(257, BTRFS_INODE_ITEM_KEY, 0, 100);
	assert_refused(0, "short inode item");
}

/* ---- file extents ---- */

static struct btrfs_file_extent_item *add_regular(u64 ino, u64 offset, u64 num_bytes)
{
	struct btrfs_file_extent_item *fi = add(ino, BTRFS_EXTENT_DATA_KEY, offset, sizeof(*fi));

	btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_REG);
	btrfs_set_file_extent_item_disk_bytenr(fi, 13631488);
	btrfs_set_file_extent_item_disk_num_bytes(fi, num_bytes);
	btrfs_set_file_extent_item_num_bytes(fi, num_bytes);
	btrfs_set_file_extent_item_ram_bytes(fi, num_bytes);
	return fi;
}

static struct btrfs_file_extent_item *add_inline(u64 ino, u32 len, u64 ram_bytes)
{
	struct btrfs_file_extent_item *fi =
		add(ino, BTRFS_EXTENT_DATA_KEY, 0, BTRFS_FILE_EXTENT_INLINE_DATA_START + len);

	btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_INLINE);
	btrfs_set_file_extent_item_ram_bytes(fi, ram_bytes);
	return fi;
}

Test(tree_checker, regular_extents_back_to_back_accepted)
{
	add_regular(257, 0, 8192);
	add_regular(257, 8192, 4096);
	cr_assert_eq(check(0), 0, "%s", tlog_error_get());
	cr_assert_eq(check(1), 0, "%s", tlog_error_get());
}

Test(tree_checker, overlapping_extents_refused)
{
	add_regular(257, 0, 8192);
	add_regular(257, 4096, 4096);
	assert_refused(1, "an extent starting inside the one before");
}

Test(tree_checker, extents_of_two_inodes_may_overlap_in_offset)
{
	add_regular(257, 0, 8192);
	add_regular(258, 0, 4096);
	cr_assert_eq(check(1), 0, "%s", tlog_error_get());
}

Test(tree_checker, unaligned_extent_fields_refused)
{
	struct btrfs_file_extent_item *fi = add_regular(257, 0, 8192);

	btrfs_set_file_extent_item_num_bytes(fi, 8000);
	assert_refused(0, "unaligned num_bytes");
	btrfs_set_file_extent_item_num_bytes(fi, 8192);
	btrfs_set_file_extent_item_disk_bytenr(fi, 13631489);
	assert_refused(0, "unaligned disk_bytenr");
}

Test(tree_checker, unaligned_file_offset_refused)
{
	add_regular(257, 100, 4096);
	assert_refused(0, "unaligned file offset");
}

Test(tree_checker, unknown_type_and_compression_refused)
{
	struct btrfs_file_extent_item *fi = add_regular(257, 0, 4096);

	btrfs_set_file_extent_item_type(fi, 3);
	assert_refused(0, "type 3");
	btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_PREALLOC);
	cr_assert_eq(check(0), 0, "%s", tlog_error_get());
	btrfs_set_file_extent_item_compression(fi, 4);
	assert_refused(0, "compression 4");
	btrfs_set_file_extent_item_compression(fi, 0);
	btrfs_set_file_extent_item_encryption(fi, 1);
	assert_refused(0, "encryption");
}

Test(tree_checker, inline_extent_holds_its_ram_bytes)
{
	add_inline(257, 5, 5);
	cr_assert_eq(check(0), 0, "%s", tlog_error_get());
}

Test(tree_checker, inline_extent_of_wrong_length_refused)
{
	struct btrfs_file_extent_item *fi = add_inline(257, 5, 4096);

	assert_refused(0, "ram_bytes 4096 for 5 bytes");
	btrfs_set_file_extent_item_ram_bytes(fi, 0);
	assert_refused(0, "ram_bytes 0 for 5 bytes");
	/* compressed, the item holds less than ram_bytes */
	btrfs_set_file_extent_item_compression(fi, BTRFS_COMPRESS_ZLIB);
	btrfs_set_file_extent_item_ram_bytes(fi, 4096);
	cr_assert_eq(check(0), 0, "%s", tlog_error_get());
}

Test(tree_checker, inline_extent_past_offset_0_refused)
{
	struct btrfs_key key = { 257, BTRFS_EXTENT_DATA_KEY, 4096 };
	struct btrfs_file_extent_item *fi =
		tlog_leaf_append(&lb, &key, NULL, BTRFS_FILE_EXTENT_INLINE_DATA_START + 3);

	btrfs_set_header_nritems(eb_header(leaf), lb.nritems);
	btrfs_set_file_extent_item_type(fi, BTRFS_FILE_EXTENT_INLINE);
	btrfs_set_file_extent_item_ram_bytes(fi, 3);
	assert_refused(0, "inline extent at 4096");
}

/* ---- directory entries and xattrs ---- */

static struct btrfs_dir_item *add_dir_entry(u8 key_type, const char *name, u8 type, u64 offset)
{
	u16 len = (u16)strlen(name);
	struct btrfs_dir_item *di = add(256, key_type, offset, sizeof(*di) + len);

	btrfs_set_dir_item_name_len(di, len);
	btrfs_set_dir_item_type(di, type);
	memcpy(di + 1, name, len);
	return di;
}

Test(tree_checker, dir_entries_accepted)
{
	add_dir_entry(BTRFS_DIR_ITEM_KEY, "file", BTRFS_FT_REG_FILE, btrfs_name_hash("file", 4));
	add_dir_entry(BTRFS_DIR_INDEX_KEY, "file", BTRFS_FT_REG_FILE, 2);
	cr_assert_eq(check(0), 0, "%s", tlog_error_get());
	cr_assert_eq(check(1), 0, "%s", tlog_error_get());
}

Test(tree_checker, dir_item_under_another_hash_refused)
{
	add_dir_entry(BTRFS_DIR_ITEM_KEY, "file", BTRFS_FT_REG_FILE, btrfs_name_hash("fild", 4));
	assert_refused(0, "hash of another name");
}

Test(tree_checker, dir_entry_types_refused)
{
	struct btrfs_dir_item *di = add_dir_entry(BTRFS_DIR_INDEX_KEY, "f", BTRFS_FT_UNKNOWN, 2);

	assert_refused(0, "type unknown");
	btrfs_set_dir_item_type(di, BTRFS_FT_MAX);
	assert_refused(0, "type past the last");
	btrfs_set_dir_item_type(di, BTRFS_FT_XATTR);
	assert_refused(0, "an xattr in a directory index");
}

Test(tree_checker, dir_entry_overrunning_its_item_refused)
{
	struct btrfs_dir_item *di = add_dir_entry(BTRFS_DIR_INDEX_KEY, "name", BTRFS_FT_REG_FILE, 2);

	btrfs_set_dir_item_name_len(di, 5);
	assert_refused(0, "a name longer than the item");
	btrfs_set_dir_item_name_len(di, 4);
	btrfs_set_dir_item_data_len(di, 1);
	assert_refused(0, "data in a directory entry");
}

Test(tree_checker, xattr_with_data_accepted)
{
	struct btrfs_key key = { 257, BTRFS_XATTR_ITEM_KEY, btrfs_name_hash("user.a", 6) };
	struct btrfs_dir_item *di = tlog_leaf_append(&lb, &key, NULL, sizeof(*di) + 6 + 3);

	btrfs_set_header_nritems(eb_header(leaf), lb.nritems);
	btrfs_set_dir_item_name_len(di, 6);
	btrfs_set_dir_item_data_len(di, 3);
	btrfs_set_dir_item_type(di, BTRFS_FT_XATTR);
	memcpy(di + 1, "user.abcd", 9);
	cr_assert_eq(check(0), 0, "%s", tlog_error_get());
	btrfs_set_dir_item_type(di, BTRFS_FT_REG_FILE);
	assert_refused(0, "a file type in an xattr item");
}

/* ---- inode refs ---- */

Test(tree_checker, inode_refs_fit_their_item)
{
	struct btrfs_inode_ref *ref = add(257, BTRFS_INODE_REF_KEY, 256, sizeof(*ref) + 3);

	btrfs_set_inode_ref_name_len(ref, 3);
	cr_assert_eq(check(0), 0, "%s", tlog_error_get());
	btrfs_set_inode_ref_name_len(ref, 4);
	assert_refused(0, "a ref name past the item");
}

Test(tree_checker, extref_header_cut_off_refused)
{
	add(257, BTRFS_INODE_EXTREF_KEY, 12345, sizeof(struct btrfs_inode_extref) - 1);
	assert_refused(0, "a cut-off extref");
}
