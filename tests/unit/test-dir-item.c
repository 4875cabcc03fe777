// SPDX-License-Identifier: GPL-2.0-only
// Tests the name items of subvolume trees (dir-item.c) on an in-memory tree:
// directory entries (DIR_ITEM by name hash, DIR_INDEX by index) with names
// whose hashes collide, inode refs and extrefs, names removed, xattrs, and
// btrfs_overwrite_item.  Items only: what links and unlinks do to inodes
// is the inode operations' policy (test-inode-ops.c).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "csum.h"
#include "ctree.h"
#include "dir-item.h"
#include "errctx.h"
#include "inode.h"
#include "transaction.h"
#include "mem-tree.h"

/* ---- an in-memory tree to change (mem-tree.c) ---- */

#define DIR	256ULL		/* the directory of the tests */
#define FILE1	257ULL
#define FILE2	258ULL
#define TRANSID	7ULL

static struct mem_tree F;

static void setup_nodesize(u32 nodesize)
{
	mem_tree_setup(&F, nodesize, TRANSID);
}

static void setup(void)
{
	setup_nodesize(16384);
}

static void setup_small(void)
{
	setup_nodesize(4096);
}

static void teardown(void)
{
	mem_tree_teardown(&F);
}

TestSuite(dir_item, .init = setup, .fini = teardown);

/* ---- helpers ---- */

/* Names whose btrfs_name_hash() collide (found by brute force over random names). */
static const char COLL_A[] = "xtkurjmj", COLL_B[] = "jofcfaph";
static const char XCOLL_A[] = "user.iwsfjfrq", XCOLL_B[] = "user.xlzvsbfy";

static void make_inode(u64 ino, u32 mode, u32 nlink)
{
	struct btrfs_key key = { ino, BTRFS_INODE_ITEM_KEY, 0 };
	struct btrfs_inode_item ii;

	memset(&ii, 0, sizeof(ii));
	btrfs_set_inode_item_generation(&ii, 1);
	btrfs_set_inode_item_transid(&ii, 1);
	btrfs_set_inode_item_mode(&ii, mode);
	btrfs_set_inode_item_nlink(&ii, nlink);
	cr_assert_eq(btrfs_insert_item(&F.trans, &F.root, &key, &ii, sizeof(ii)), 0, "%s",
		     tlog_error_get());
}

static struct btrfs_inode_item get_inode(u64 ino)
{
	struct btrfs_inode_item ii;

	cr_assert_eq(btrfs_read_inode(&F.root, ino, &ii), 0, "%s", tlog_error_get());
	return ii;
}

static u64 inode_size(u64 ino)
{
	struct btrfs_inode_item ii = get_inode(ino);

	return btrfs_inode_item_size(&ii);
}

static u32 inode_nlink(u64 ino)
{
	struct btrfs_inode_item ii = get_inode(ino);

	return btrfs_inode_item_nlink(&ii);
}

/* Size of the item @key, or -1 when there is none. */
static int item_size(u64 objectid, u8 type, u64 offset)
{
	struct btrfs_key key = { objectid, type, offset };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(&F.root, &key, &path);
	cr_assert_geq(ret, 0);
	ret = ret == 0 ? (int)btrfs_item_size(path.nodes[0], path.slots[0]) : -1;
	btrfs_release_path(&path);
	return ret;
}

/* Copy of the item @key's data (NULL when absent); *@size gets its size. */
static u8 *item_data(u64 objectid, u8 type, u64 offset, u32 *size)
{
	struct btrfs_key key = { objectid, type, offset };
	struct btrfs_path path;
	u8 *data = NULL;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(&F.root, &key, &path);
	cr_assert_geq(ret, 0);
	if (ret == 0) {
		*size = btrfs_item_size(path.nodes[0], path.slots[0]);
		data = malloc(*size + 1);
		memcpy(data, btrfs_item_ptr(path.nodes[0], path.slots[0]), *size);
	}
	btrfs_release_path(&path);
	return data;
}

static int count_items(u64 objectid, u8 type)
{
	struct btrfs_key min = { objectid, type, 0 }, max = { objectid, type, (u64)-1 };
	struct btrfs_tree_iter iter;
	int n = 0;

	btrfs_for_each_item(&F.root, &iter, &min, &max)
		n++;
	cr_assert_geq(iter.ret, 0);
	btrfs_tree_iter_end(&iter);
	return n;
}

static void check_tree(void)
{
	u64 items, blocks;

	cr_assert_eq(btrfs_check_tree_structure(&F.root, &items, &blocks), 0, "tree check: %s",
		     tlog_error_get());
	cr_assert_eq(blocks, F.alloc.allocated, "%llu blocks reachable, %llu allocated",
		     (unsigned long long)blocks, (unsigned long long)F.alloc.allocated);
}

static struct btrfs_key file_loc(u64 ino)
{
	return (struct btrfs_key){ ino, BTRFS_INODE_ITEM_KEY, 0 };
}

static int insert_entry(const char *name, u64 ino, u64 index)
{
	struct btrfs_key loc = file_loc(ino);

	return btrfs_add_dir_entries(&F.trans, &F.root, DIR, name, (u16)strlen(name), &loc,
				     BTRFS_FT_REG_FILE, index);
}

static void must_insert_entry(const char *name, u64 ino, u64 index)
{
	int ret = insert_entry(name, ino, index);

	cr_assert_eq(ret, 0, "insert \"%s\" at %llu: %d %s", name, (unsigned long long)index,
		     ret, tlog_error_get());
}

static int lookup(const char *name, struct tlog_dir_entry *de)
{
	return btrfs_lookup_dir_entry(&F.root, DIR, name, strlen(name), de);
}

/* @name is in the directory, at @index, for inode @ino: both entries agree. */
static void check_entry(const char *name, u64 ino, u64 index)
{
	struct tlog_dir_entry de;
	char buf[256];
	int ret;

	ret = lookup(name, &de);
	cr_assert_eq(ret, 0, "lookup \"%s\": %d", name, ret);
	cr_assert_eq(de.dir, DIR);
	cr_assert_eq(de.location.objectid, ino);
	cr_assert_eq(de.location.type, BTRFS_INODE_ITEM_KEY);
	cr_assert_eq(de.location.offset, 0);
	cr_assert_eq(de.type, BTRFS_FT_REG_FILE);
	cr_assert_eq(de.transid, TRANSID);
	cr_assert_eq(de.index, 0, "a DIR_ITEM entry has no index");

	memset(&de, 0, sizeof(de));
	ret = btrfs_lookup_dir_index(&F.root, DIR, index, &de, buf);
	cr_assert_eq(ret, 0, "index %llu: %d", (unsigned long long)index, ret);
	cr_assert_str_eq(buf, name);
	cr_assert_eq(de.name, buf, "the name is the copy");
	cr_assert_eq(de.name_len, strlen(name));
	cr_assert_eq(de.index, index);
	cr_assert_eq(de.location.objectid, ino);
	cr_assert_eq(de.type, BTRFS_FT_REG_FILE);
	cr_assert_eq(de.transid, TRANSID);
}

static void check_no_entry(const char *name, u64 index)
{
	struct tlog_dir_entry de;
	char buf[256];

	cr_assert_eq(lookup(name, &de), -ENOENT, "\"%s\" still there", name);
	cr_assert_eq(btrfs_lookup_dir_index(&F.root, DIR, index, &de, buf), -ENOENT,
		     "index %llu still there", (unsigned long long)index);
}

static u64 hash(const char *name)
{
	return btrfs_name_hash(name, strlen(name));
}

#define DI_SIZE(len)	((int)sizeof(struct btrfs_dir_item) + (len))

/* ---- directory entries ---- */

Test(dir_item, colliding_names_really_collide)
{
	cr_assert_str_neq(COLL_A, COLL_B);
	cr_assert_eq(strlen(COLL_A), strlen(COLL_B));
	cr_assert_eq(hash(COLL_A), hash(COLL_B), "%llx %llx",
		     (unsigned long long)hash(COLL_A), (unsigned long long)hash(COLL_B));
	cr_assert_eq(hash(XCOLL_A), hash(XCOLL_B));
	cr_assert_neq(hash("a"), hash("b"));
}

Test(dir_item, insert_and_lookup)
{
	make_inode(DIR, S_IFDIR | 0755, 1);
	make_inode(FILE1, S_IFREG | 0644, 1);
	must_insert_entry("foo", FILE1, 2);
	check_entry("foo", FILE1, 2);
	cr_assert_eq(item_size(DIR, BTRFS_DIR_ITEM_KEY, hash("foo")), DI_SIZE(3));
	cr_assert_eq(item_size(DIR, BTRFS_DIR_INDEX_KEY, 2), DI_SIZE(3));
	cr_assert_eq(inode_size(DIR), 0, "the directory's size is the caller's");

	check_no_entry("bar", 3);
	cr_assert_eq(lookup("fo", &(struct tlog_dir_entry){ 0 }), -ENOENT);
	cr_assert_eq(lookup("fooo", &(struct tlog_dir_entry){ 0 }), -ENOENT);

	/* a name of the maximum length */
	char long_name[256];

	memset(long_name, 'L', 255);
	long_name[255] = '\0';
	must_insert_entry(long_name, FILE1, 3);
	check_entry(long_name, FILE1, 3);
	check_tree();
}

Test(dir_item, entries_follow_inserts_and_removals)
{
	const char *names[] = { "a", "bc", "def", "ghij", "klmnopqrstuvwxyz" };

	make_inode(DIR, S_IFDIR | 0755, 1);
	for (int i = 0; i < 5; i++)
		must_insert_entry(names[i], FILE1, 10 + i);
	cr_assert_eq(count_items(DIR, BTRFS_DIR_ITEM_KEY), 5);
	cr_assert_eq(count_items(DIR, BTRFS_DIR_INDEX_KEY), 5);
	cr_assert_eq(btrfs_remove_dir_entries(&F.trans, &F.root, DIR, "def", 3, 12), 0);
	check_no_entry("def", 12);
	check_entry("bc", FILE1, 11);
	cr_assert_eq(count_items(DIR, BTRFS_DIR_ITEM_KEY), 4);
	cr_assert_eq(count_items(DIR, BTRFS_DIR_INDEX_KEY), 4);
	cr_assert_eq(inode_size(DIR), 0, "items only: the inode is the caller's");
	check_tree();
}

Test(dir_item, entries_need_no_directory_inode)
{
	/* the directory's inode item is the inode operations' business */
	must_insert_entry("foo", FILE1, 2);
	check_entry("foo", FILE1, 2);
}

static void colliding_pair(const char *first, const char *second)
{
	u64 h = hash(COLL_A);
	u32 size;
	u8 *data;

	make_inode(DIR, S_IFDIR | 0755, 1);
	must_insert_entry(COLL_A, FILE1, 2);
	must_insert_entry(COLL_B, FILE2, 3);
	cr_assert_eq(count_items(DIR, BTRFS_DIR_ITEM_KEY), 1, "one item for one hash");
	cr_assert_eq(item_size(DIR, BTRFS_DIR_ITEM_KEY, h), 2 * DI_SIZE(8));
	cr_assert_eq(count_items(DIR, BTRFS_DIR_INDEX_KEY), 2);
	check_entry(COLL_A, FILE1, 2);
	check_entry(COLL_B, FILE2, 3);

	/* the entries are packed in insertion order */
	data = item_data(DIR, BTRFS_DIR_ITEM_KEY, h, &size);
	cr_assert_not_null(data);
	cr_assert_eq(memcmp(data + sizeof(struct btrfs_dir_item), COLL_A, 8), 0);
	cr_assert_eq(memcmp(data + DI_SIZE(8) + sizeof(struct btrfs_dir_item), COLL_B, 8), 0);
	free(data);

	/* a third name of that hash is a duplicate of neither */
	cr_assert_eq(insert_entry(COLL_A, FILE2, 4), -EEXIST);
	cr_assert_eq(insert_entry(COLL_B, FILE1, 4), -EEXIST);
	cr_assert_eq(item_size(DIR, BTRFS_DIR_ITEM_KEY, h), 2 * DI_SIZE(8));

	/* deleting one keeps the other, in an item of one entry */
	u64 first_idx = strcmp(first, COLL_A) == 0 ? 2 : 3;
	u64 second_idx = 5 - first_idx;
	u64 second_ino = second_idx == 2 ? FILE1 : FILE2;

	cr_assert_eq(btrfs_remove_dir_entries(&F.trans, &F.root, DIR, first, 8, first_idx), 0,
		     "%s", tlog_error_get());
	check_no_entry(first, first_idx);
	check_entry(second, second_ino, second_idx);
	cr_assert_eq(item_size(DIR, BTRFS_DIR_ITEM_KEY, h), DI_SIZE(8));
	data = item_data(DIR, BTRFS_DIR_ITEM_KEY, h, &size);
	cr_assert_eq(memcmp(data + sizeof(struct btrfs_dir_item), second, 8), 0);
	free(data);
	/* deleting it again: the name is gone */
	cr_assert_eq(btrfs_remove_dir_entries(&F.trans, &F.root, DIR, first, 8, first_idx),
		     -EUCLEAN);
	check_entry(second, second_ino, second_idx);

	/* the last one takes the item with it */
	cr_assert_eq(btrfs_remove_dir_entries(&F.trans, &F.root, DIR, second, 8, second_idx), 0);
	check_no_entry(second, second_idx);
	cr_assert_eq(count_items(DIR, BTRFS_DIR_ITEM_KEY), 0);
	cr_assert_eq(count_items(DIR, BTRFS_DIR_INDEX_KEY), 0);
	check_tree();
}

Test(dir_item, colliding_names_delete_first)
{
	colliding_pair(COLL_A, COLL_B);
}

Test(dir_item, colliding_names_delete_second)
{
	colliding_pair(COLL_B, COLL_A);
}

Test(dir_item, duplicate_name_is_eexist)
{
	make_inode(DIR, S_IFDIR | 0755, 1);
	must_insert_entry("foo", FILE1, 2);
	cr_assert_eq(insert_entry("foo", FILE2, 3), -EEXIST);
	/* nothing of the failed insert is left */
	check_entry("foo", FILE1, 2);
	cr_assert_eq(btrfs_lookup_dir_index(&F.root, DIR, 3, &(struct tlog_dir_entry){ 0 },
					    (char[256]){ 0 }), -ENOENT);
	cr_assert_eq(item_size(DIR, BTRFS_DIR_ITEM_KEY, hash("foo")), DI_SIZE(3));
	check_tree();
}

Test(dir_item, used_index_is_eexist)
{
	make_inode(DIR, S_IFDIR | 0755, 1);
	must_insert_entry("foo", FILE1, 2);
	cr_assert_eq(insert_entry("bar", FILE2, 2), -EEXIST);
	/*
	 * The entry at the index is still the old one.
	 * (The DIR_ITEM entry of "bar" is appended before the index is found
	 * taken and stays: callers abort the transaction on any error.)
	 */
	check_entry("foo", FILE1, 2);
	cr_assert_eq(item_size(DIR, BTRFS_DIR_INDEX_KEY, 2), DI_SIZE(3));
	check_tree();
}

Test(dir_item, delete_missing_name)
{
	struct tlog_dir_entry de;

	make_inode(DIR, S_IFDIR | 0755, 1);
	must_insert_entry("foo", FILE1, 2);
	cr_assert_eq(btrfs_remove_dir_entries(&F.trans, &F.root, DIR, "bar", 3, 2), -EUCLEAN);
	/* same hash item absent vs. present with another name */
	cr_assert_eq(btrfs_remove_dir_entries(&F.trans, &F.root, DIR, "fo", 2, 2), -EUCLEAN);
	check_entry("foo", FILE1, 2);
	/* an index that is already gone is not an error */
	must_insert_entry("baz", FILE2, 3);
	cr_assert_eq(btrfs_delete_item(&F.trans, &F.root,
				       &(struct btrfs_key){ DIR, BTRFS_DIR_INDEX_KEY, 3 }), 0);
	cr_assert_eq(btrfs_remove_dir_entries(&F.trans, &F.root, DIR, "baz", 3, 3), 0);
	cr_assert_eq(lookup("baz", &de), -ENOENT);
	check_tree();
}

/* ---- inode refs ---- */

static void insert_extref(u64 ino, u64 parent, const char *name, u64 index)
{
	u16 len = (u16)strlen(name);
	u8 buf[sizeof(struct btrfs_inode_extref) + 256];
	struct btrfs_inode_extref *ref = (void *)buf;
	struct btrfs_key key = { ino, BTRFS_INODE_EXTREF_KEY,
				 btrfs_extref_hash(parent, name, len) };

	btrfs_set_inode_extref_parent_objectid(ref, parent);
	btrfs_set_inode_extref_index(ref, index);
	btrfs_set_inode_extref_name_len(ref, len);
	memcpy(ref + 1, name, len);
	cr_assert_eq(btrfs_insert_item(&F.trans, &F.root, &key, buf, sizeof(*ref) + len), 0);
}

static int add_ref(u64 ino, u64 parent, const char *name, u64 index)
{
	return btrfs_insert_inode_ref(&F.trans, &F.root, ino, parent, name, (u16)strlen(name),
				      index);
}

static int find_ref(u64 ino, u64 parent, const char *name, u64 *index)
{
	return btrfs_find_inode_ref(&F.root, ino, parent, name, (u16)strlen(name), index);
}

static int del_ref(u64 ino, u64 parent, const char *name, u64 *index)
{
	return btrfs_delete_inode_ref(&F.trans, &F.root, ino, parent, name, (u16)strlen(name),
				      index);
}

static u32 count_names(u64 ino)
{
	u32 n = 12345;

	cr_assert_eq(btrfs_count_inode_names(&F.root, ino, &n), 0, "%s", tlog_error_get());
	return n;
}

/* Decode the ref item @key; returns what btrfs_decode_ref_item() does. */
static int decode(u64 ino, u8 type, u64 offset, struct tlog_ref_name **names, int *nr)
{
	struct btrfs_key key = { ino, type, offset };
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot(&F.root, &key, &path);
	cr_assert_eq(ret, 0, "no item (%llu %u %llu)", (unsigned long long)ino, type,
		     (unsigned long long)offset);
	*names = NULL;
	*nr = -1;
	ret = btrfs_decode_ref_item(path.nodes[0], path.slots[0], names, nr);
	btrfs_release_path(&path);
	return ret;
}

static void check_name(const struct tlog_ref_name *r, u64 parent, const char *name, u64 index)
{
	cr_assert_eq(r->parent, parent);
	cr_assert_eq(r->index, index);
	cr_assert_eq(r->len, strlen(name));
	cr_assert_str_eq(r->name, name);
}

#define REF_SIZE(len)		((int)sizeof(struct btrfs_inode_ref) + (len))
#define EXTREF_SIZE(len)	((int)sizeof(struct btrfs_inode_extref) + (len))

Test(dir_item, inode_refs)
{
	struct tlog_ref_name *names;
	u64 index;
	int nr;

	make_inode(FILE1, S_IFREG | 0644, 6);
	cr_assert_eq(count_names(FILE1), 0);
	cr_assert_eq(add_ref(FILE1, DIR, "a", 2), 0);
	cr_assert_eq(add_ref(FILE1, DIR, "bb", 3), 0);
	cr_assert_eq(add_ref(FILE1, DIR, "ccc", 4), 0);
	cr_assert_eq(count_items(FILE1, BTRFS_INODE_REF_KEY), 1, "one item per parent");
	cr_assert_eq(item_size(FILE1, BTRFS_INODE_REF_KEY, DIR), REF_SIZE(1) + REF_SIZE(2) +
		     REF_SIZE(3));
	cr_assert_eq(count_names(FILE1), 3);

	cr_assert_eq(find_ref(FILE1, DIR, "a", &index), 0);
	cr_assert_eq(index, 2);
	cr_assert_eq(find_ref(FILE1, DIR, "bb", &index), 0);
	cr_assert_eq(index, 3);
	cr_assert_eq(find_ref(FILE1, DIR, "ccc", &index), 0);
	cr_assert_eq(index, 4);
	cr_assert_eq(find_ref(FILE1, DIR, "b", &index), -ENOENT);
	cr_assert_eq(find_ref(FILE1, DIR, "bbb", &index), -ENOENT);
	cr_assert_eq(find_ref(FILE1, 300, "a", &index), -ENOENT, "another parent");
	cr_assert_eq(find_ref(FILE2, DIR, "a", &index), -ENOENT, "another inode");

	/* a name the inode has in that directory already */
	cr_assert_eq(add_ref(FILE1, DIR, "bb", 9), -EEXIST);
	cr_assert_eq(item_size(FILE1, BTRFS_INODE_REF_KEY, DIR), 36);

	cr_assert_eq(decode(FILE1, BTRFS_INODE_REF_KEY, DIR, &names, &nr), 0);
	cr_assert_eq(nr, 3);
	check_name(&names[0], DIR, "a", 2);
	check_name(&names[1], DIR, "bb", 3);
	check_name(&names[2], DIR, "ccc", 4);
	free(names);

	/* the same name in another directory: another item */
	cr_assert_eq(add_ref(FILE1, 300, "a", 5), 0);
	cr_assert_eq(count_items(FILE1, BTRFS_INODE_REF_KEY), 2);
	cr_assert_eq(find_ref(FILE1, 300, "a", &index), 0);
	cr_assert_eq(index, 5);

	/* extended refs, keyed by the hash of parent and name */
	insert_extref(FILE1, 400, "ext", 9);
	insert_extref(FILE1, 401, "ext", 10);
	cr_assert_eq(count_names(FILE1), 6);
	cr_assert_eq(find_ref(FILE1, 400, "ext", &index), 0);
	cr_assert_eq(index, 9);
	cr_assert_eq(find_ref(FILE1, 401, "ext", &index), 0);
	cr_assert_eq(index, 10);
	cr_assert_eq(find_ref(FILE1, 402, "ext", &index), -ENOENT);
	cr_assert_eq(add_ref(FILE1, 400, "ext", 11), -EEXIST, "the name is in an extref");
	cr_assert_eq(count_items(FILE1, BTRFS_INODE_REF_KEY), 2);
	cr_assert_eq(decode(FILE1, BTRFS_INODE_EXTREF_KEY, btrfs_extref_hash(400, "ext", 3),
			    &names, &nr), 0);
	cr_assert_eq(nr, 1);
	check_name(&names[0], 400, "ext", 9);
	free(names);

	/* deleting cuts the entry out of its item */
	index = 0;
	cr_assert_eq(del_ref(FILE1, DIR, "bb", &index), 0);
	cr_assert_eq(index, 3);
	cr_assert_eq(item_size(FILE1, BTRFS_INODE_REF_KEY, DIR), REF_SIZE(1) + REF_SIZE(3));
	cr_assert_eq(find_ref(FILE1, DIR, "bb", &index), -ENOENT);
	cr_assert_eq(decode(FILE1, BTRFS_INODE_REF_KEY, DIR, &names, &nr), 0);
	cr_assert_eq(nr, 2);
	check_name(&names[0], DIR, "a", 2);
	check_name(&names[1], DIR, "ccc", 4);
	free(names);
	cr_assert_eq(count_names(FILE1), 5);
	cr_assert_eq(del_ref(FILE1, DIR, "bb", &index), -ENOENT);

	cr_assert_eq(del_ref(FILE1, DIR, "ccc", &index), 0);
	cr_assert_eq(index, 4);
	cr_assert_eq(item_size(FILE1, BTRFS_INODE_REF_KEY, DIR), REF_SIZE(1));
	cr_assert_eq(del_ref(FILE1, DIR, "a", NULL), 0, "the index is optional");
	cr_assert_eq(item_size(FILE1, BTRFS_INODE_REF_KEY, DIR), -1, "the last name takes the item");
	cr_assert_eq(count_items(FILE1, BTRFS_INODE_REF_KEY), 1);

	cr_assert_eq(del_ref(FILE1, 400, "ext", &index), 0);
	cr_assert_eq(index, 9);
	cr_assert_eq(count_items(FILE1, BTRFS_INODE_EXTREF_KEY), 1);
	cr_assert_eq(find_ref(FILE1, 401, "ext", &index), 0);
	cr_assert_eq(count_names(FILE1), 2);
	cr_assert_eq(del_ref(FILE1, 400, "ext", &index), -ENOENT);
	check_tree();
}

Test(dir_item, extref_item_with_two_names)
{
	/* two names of one parent hash-colliding into one extref item, by hand */
	u8 buf[2 * (sizeof(struct btrfs_inode_extref) + 8)];
	struct btrfs_inode_extref *ref = (void *)buf;
	struct btrfs_key key = { FILE1, BTRFS_INODE_EXTREF_KEY, 12345 };
	struct tlog_ref_name *names;
	int nr;

	btrfs_set_inode_extref_parent_objectid(ref, 500);
	btrfs_set_inode_extref_index(ref, 20);
	btrfs_set_inode_extref_name_len(ref, 8);
	memcpy(ref + 1, COLL_A, 8);
	ref = (void *)(buf + sizeof(*ref) + 8);
	btrfs_set_inode_extref_parent_objectid(ref, 501);
	btrfs_set_inode_extref_index(ref, 21);
	btrfs_set_inode_extref_name_len(ref, 8);
	memcpy(ref + 1, COLL_B, 8);
	cr_assert_eq(btrfs_insert_item(&F.trans, &F.root, &key, buf, sizeof(buf)), 0);

	cr_assert_eq(decode(FILE1, BTRFS_INODE_EXTREF_KEY, 12345, &names, &nr), 0);
	cr_assert_eq(nr, 2);
	check_name(&names[0], 500, COLL_A, 20);
	check_name(&names[1], 501, COLL_B, 21);
	free(names);
	cr_assert_eq(count_names(FILE1), 2);
}

static void insert_raw_ref(u64 ino, u64 parent, u16 name_len, const char *bytes, u32 nbytes)
{
	u8 buf[sizeof(struct btrfs_inode_ref) + 64];
	struct btrfs_inode_ref *ref = (void *)buf;
	struct btrfs_key key = { ino, BTRFS_INODE_REF_KEY, parent };

	btrfs_set_inode_ref_index(ref, 2);
	btrfs_set_inode_ref_name_len(ref, name_len);
	memcpy(ref + 1, bytes, nbytes);
	cr_assert_eq(btrfs_insert_item(&F.trans, &F.root, &key, buf, sizeof(*ref) + nbytes), 0);
}

Test(dir_item, malformed_ref_items)
{
	struct tlog_ref_name *names;
	u64 index;
	u32 count;
	int nr;

	/* a name longer than the item */
	insert_raw_ref(FILE1, DIR, 10, "abc", 3);
	cr_assert_eq(decode(FILE1, BTRFS_INODE_REF_KEY, DIR, &names, &nr), -EUCLEAN);
	cr_assert_eq(btrfs_count_inode_names(&F.root, FILE1, &count), -EUCLEAN);
	cr_assert_eq(find_ref(FILE1, DIR, "abc", &index), -ENOENT);
	/* an empty name */
	insert_raw_ref(FILE1, DIR + 1, 0, "", 0);
	cr_assert_eq(decode(FILE1, BTRFS_INODE_REF_KEY, DIR + 1, &names, &nr), -EUCLEAN);
	/* a good entry followed by a cut header */
	insert_raw_ref(FILE1, DIR + 2, 3, "abc\1\2\3", 6);
	cr_assert_eq(decode(FILE1, BTRFS_INODE_REF_KEY, DIR + 2, &names, &nr), -EUCLEAN);
	cr_assert_eq(find_ref(FILE1, DIR + 2, "abc", &index), 0, "the good entry is found");
	cr_assert_eq(index, 2);
	/* a good item decodes */
	insert_raw_ref(FILE2, DIR, 3, "abc", 3);
	cr_assert_eq(decode(FILE2, BTRFS_INODE_REF_KEY, DIR, &names, &nr), 0);
	cr_assert_eq(nr, 1);
	check_name(&names[0], DIR, "abc", 2);
	free(names);
}

/* ---- unlink ---- */

static void link_name(const char *name, u64 ino, u64 index)
{
	cr_assert_eq(add_ref(ino, DIR, name, index), 0, "%s", tlog_error_get());
	must_insert_entry(name, ino, index);
}

/* A name's items out: its back reference (giving its index), then both entries. */
static int unlink_name(u64 ino, const char *name)
{
	u16 len = (u16)strlen(name);
	u64 index;
	int ret;

	ret = btrfs_delete_inode_ref(&F.trans, &F.root, ino, DIR, name, len, &index);
	if (ret == -ENOENT)
		return -EUCLEAN;
	return ret ? ret : btrfs_remove_dir_entries(&F.trans, &F.root, DIR, name, len, index);
}

Test(dir_item, unlink)
{
	u64 index;

	make_inode(DIR, S_IFDIR | 0755, 1);
	make_inode(FILE1, S_IFREG | 0644, 2);
	make_inode(FILE2, S_IFREG | 0644, 1);
	link_name("a", FILE1, 2);
	link_name("bb", FILE1, 3);
	link_name("c", FILE2, 4);

	cr_assert_eq(unlink_name(FILE1, "a"), 0, "%s", tlog_error_get());
	cr_assert_eq(find_ref(FILE1, DIR, "a", &index), -ENOENT);
	check_no_entry("a", 2);
	cr_assert_eq(find_ref(FILE1, DIR, "bb", &index), 0);
	cr_assert_eq(index, 3);
	check_entry("bb", FILE1, 3);
	check_entry("c", FILE2, 4);
	cr_assert_eq(item_size(FILE1, BTRFS_INODE_REF_KEY, DIR), REF_SIZE(2));
	/* link counts are the inode operations' business */
	cr_assert_eq(inode_nlink(FILE1), 2);

	/* no such name, or not this inode's: nothing changes */
	cr_assert_eq(unlink_name(FILE1, "a"), -EUCLEAN);
	cr_assert_eq(unlink_name(FILE2, "bb"), -EUCLEAN);
	check_entry("bb", FILE1, 3);
	check_entry("c", FILE2, 4);

	cr_assert_eq(unlink_name(FILE1, "bb"), 0);
	check_no_entry("bb", 3);
	cr_assert_eq(count_items(FILE1, BTRFS_INODE_REF_KEY), 0);
	cr_assert_eq(count_items(DIR, BTRFS_DIR_INDEX_KEY), 1);
	check_tree();
}

Test(dir_item, unlink_colliding_names)
{
	make_inode(DIR, S_IFDIR | 0755, 1);
	make_inode(FILE1, S_IFREG | 0644, 1);
	make_inode(FILE2, S_IFREG | 0644, 1);
	link_name(COLL_A, FILE1, 5);
	link_name(COLL_B, FILE2, 6);
	cr_assert_eq(unlink_name(FILE2, COLL_B), 0, "%s", tlog_error_get());
	check_no_entry(COLL_B, 6);
	check_entry(COLL_A, FILE1, 5);
	cr_assert_eq(item_size(DIR, BTRFS_DIR_ITEM_KEY, hash(COLL_A)), DI_SIZE(8));
	cr_assert_eq(unlink_name(FILE1, COLL_A), 0);
	cr_assert_eq(count_items(DIR, BTRFS_DIR_ITEM_KEY), 0);
	check_tree();
}

Test(dir_item, unlink_through_extref)
{
	u64 index;

	make_inode(DIR, S_IFDIR | 0755, 1);
	make_inode(FILE1, S_IFREG | 0644, 2);
	insert_extref(FILE1, DIR, "ext", 7);
	must_insert_entry("ext", FILE1, 7);
	link_name("ref", FILE1, 8);
	cr_assert_eq(unlink_name(FILE1, "ext"), 0, "%s", tlog_error_get());
	check_no_entry("ext", 7);
	check_entry("ref", FILE1, 8);
	cr_assert_eq(count_items(FILE1, BTRFS_INODE_EXTREF_KEY), 0);
	cr_assert_eq(find_ref(FILE1, DIR, "ref", &index), 0);
}

/* ---- btrfs_overwrite_item ---- */

static void overwrite(const struct btrfs_key *key, const char *data, bool want_changed)
{
	u32 len = (u32)strlen(data), size = 0;
	bool changed = !want_changed;
	u8 *got;
	int ret;

	ret = btrfs_overwrite_item(&F.trans, &F.root, key, data, len, &changed);
	cr_assert_eq(ret, 0, "overwrite with %u bytes \"%.8s\": %d %s", len, data, ret,
		     tlog_error_get());
	cr_assert_eq(changed, want_changed, "overwrite with %u bytes \"%.8s\": changed %d", len,
		     data, changed);
	got = item_data(key->objectid, key->type, key->offset, &size);
	cr_assert_not_null(got);
	cr_assert_eq(size, len);
	cr_assert_eq(memcmp(got, data, len), 0);
	free(got);
}

Test(dir_item, overwrite_item)
{
	struct btrfs_key key = { FILE1, BTRFS_XATTR_ITEM_KEY, 77 };

	overwrite(&key, "abc", true);
	overwrite(&key, "abc", false);
	overwrite(&key, "abcdefgh", true);
	overwrite(&key, "abcdefgh", false);
	overwrite(&key, "xy", true);
	overwrite(&key, "xz", true);
	overwrite(&key, "xz", false);
	overwrite(&key, "", true);
	overwrite(&key, "", false);
	overwrite(&key, "again", true);
	cr_assert_eq(count_items(FILE1, BTRFS_XATTR_ITEM_KEY), 1);
	check_tree();
}

/* ---- xattrs ---- */

static u32 put_xattr_entry(u8 *buf, const char *name, const char *value)
{
	struct btrfs_dir_item *di = (void *)buf;
	u16 nl = (u16)strlen(name), dl = (u16)strlen(value);

	memset(di, 0, sizeof(*di));
	btrfs_set_dir_item_transid(di, 3);
	btrfs_set_dir_item_name_len(di, nl);
	btrfs_set_dir_item_data_len(di, dl);
	btrfs_set_dir_item_type(di, BTRFS_FT_XATTR);
	memcpy(di + 1, name, nl);
	memcpy((u8 *)(di + 1) + nl, value, dl);
	return sizeof(*di) + nl + dl;
}

struct xattr_seen {
	int nr;
	char name[4][64];
	char value[4][64];
};

static int collect_xattr(const struct tlog_dir_entry *de, void *arg)
{
	struct xattr_seen *s = arg;
	const struct btrfs_dir_item *di = (const struct btrfs_dir_item *)de->name - 1;

	cr_assert_lt(s->nr, 4);
	memcpy(s->name[s->nr], de->name, de->name_len);
	s->name[s->nr][de->name_len] = '\0';
	memcpy(s->value[s->nr], de->name + de->name_len, btrfs_dir_item_data_len(di));
	s->value[s->nr][btrfs_dir_item_data_len(di)] = '\0';
	s->nr++;
	return 0;
}

static struct xattr_seen xattrs_of(u64 ino, u64 h)
{
	struct btrfs_key key = { ino, BTRFS_XATTR_ITEM_KEY, h };
	struct xattr_seen s = { 0 };
	struct btrfs_path path;

	btrfs_init_path(&path);
	if (btrfs_search_slot(&F.root, &key, &path) == 0)
		cr_assert_eq(btrfs_for_each_dir_entry(path.nodes[0], path.slots[0], collect_xattr,
						      &s), 0);
	btrfs_release_path(&path);
	return s;
}

static void colliding_xattrs(bool first_goes)
{
	u64 h = hash(XCOLL_A);
	struct btrfs_key key = { FILE1, BTRFS_XATTR_ITEM_KEY, h };
	const char *gone = first_goes ? XCOLL_A : XCOLL_B;
	const char *kept = first_goes ? XCOLL_B : XCOLL_A;
	const char *kept_value = first_goes ? "2" : "value-one";
	struct xattr_seen s;
	u8 buf[256];
	u32 len = 0;

	len += put_xattr_entry(buf, XCOLL_A, "value-one");
	len += put_xattr_entry(buf + len, XCOLL_B, "2");
	cr_assert_eq(btrfs_insert_item(&F.trans, &F.root, &key, buf, len), 0);
	/* another xattr of the inode, and one of another inode, stay */
	key.offset = hash("user.other");
	cr_assert_eq(btrfs_insert_item(&F.trans, &F.root, &key, buf,
				       put_xattr_entry(buf, "user.other", "o")), 0);
	key = (struct btrfs_key){ FILE2, BTRFS_XATTR_ITEM_KEY, h };
	cr_assert_eq(btrfs_insert_item(&F.trans, &F.root, &key, buf,
				       put_xattr_entry(buf, XCOLL_A, "f2")), 0);

	s = xattrs_of(FILE1, h);
	cr_assert_eq(s.nr, 2);

	cr_assert_eq(btrfs_delete_xattr(&F.trans, &F.root, FILE1, "user.none", 9), -ENOENT);
	cr_assert_eq(btrfs_delete_xattr(&F.trans, &F.root, FILE1, gone, 13), 0);
	s = xattrs_of(FILE1, h);
	cr_assert_eq(s.nr, 1);
	cr_assert_str_eq(s.name[0], kept);
	cr_assert_str_eq(s.value[0], kept_value, "the value moves with its entry");
	cr_assert_eq(item_size(FILE1, BTRFS_XATTR_ITEM_KEY, h),
		     DI_SIZE(13) + (int)strlen(kept_value));
	cr_assert_eq(btrfs_delete_xattr(&F.trans, &F.root, FILE1, gone, 13), -ENOENT);

	cr_assert_eq(btrfs_delete_xattr(&F.trans, &F.root, FILE1, kept, 13), 0);
	cr_assert_eq(item_size(FILE1, BTRFS_XATTR_ITEM_KEY, h), -1);
	cr_assert_eq(count_items(FILE1, BTRFS_XATTR_ITEM_KEY), 1);
	s = xattrs_of(FILE1, hash("user.other"));
	cr_assert_eq(s.nr, 1);
	cr_assert_str_eq(s.value[0], "o");
	s = xattrs_of(FILE2, h);
	cr_assert_eq(s.nr, 1);
	cr_assert_str_eq(s.value[0], "f2");
	check_tree();
}

Test(dir_item, delete_xattr_first_of_two)
{
	colliding_xattrs(true);
}

Test(dir_item, delete_xattr_second_of_two)
{
	colliding_xattrs(false);
}

/* ---- on 4K nodes, where items move between leaves ---- */

TestSuite(dir_item_small, .init = setup_small, .fini = teardown);

#define NEIGHBOURS	150
#define VAL_SIZE	80

/* Leaves full of 80-byte items 1000... around the item to overwrite. */
static void fill_neighbours(void)
{
	char val[VAL_SIZE];

	for (u64 i = 0; i < NEIGHBOURS; i++) {
		struct btrfs_key key = { 1000 + i, BTRFS_XATTR_ITEM_KEY, 0 };

		memset(val, (int)('A' + i % 26), sizeof(val));
		cr_assert_eq(btrfs_insert_item(&F.trans, &F.root, &key, val, sizeof(val)), 0);
	}
	cr_assert_geq(F.root.level, 1);
}

static void check_neighbours(u64 except)
{
	for (u64 i = 0; i < NEIGHBOURS; i++) {
		u32 size;
		u8 *p;

		if (1000 + i == except)
			continue;
		p = item_data(1000 + i, BTRFS_XATTR_ITEM_KEY, 0, &size);
		cr_assert_not_null(p);
		cr_assert_eq(size, VAL_SIZE);
		for (u32 b = 0; b < size; b++)
			cr_assert_eq(p[b], 'A' + i % 26, "item %llu byte %u",
				     (unsigned long long)(1000 + i), b);
		free(p);
	}
}

/* A string of @len copies of @c (static: one at a time). */
static const char *filled(char c, size_t len)
{
	static char buf[4096];

	cr_assert_lt(len, sizeof(buf));
	memset(buf, c, len);
	buf[len] = '\0';
	return buf;
}

Test(dir_item_small, overwrite_item_grows_across_leaves)
{
	struct btrfs_key key = { 1075, BTRFS_XATTR_ITEM_KEY, 0 };

	fill_neighbours();
	overwrite(&key, filled('x', 1500), true);
	check_tree();
	overwrite(&key, filled('y', 2400), true);
	check_tree();
	overwrite(&key, filled('y', 2400), false);
	overwrite(&key, "tiny", true);
	check_tree();
	/* a new item of a size that needs a leaf of its own */
	key.offset = 1;
	overwrite(&key, filled('z', 3900), true);
	check_tree();
	check_neighbours(1075);
}

/*
 * An item can grow to anything that fits in a leaf alone (3970 bytes on
 * 4K nodes): 1500 -> 3800 needs 2300 more bytes, and a leaf holding just
 * the item has 2470 free.  btrfs_overwrite_item() asks the search for room
 * for the whole new size (3800) instead of the growth, more than any leaf
 * holding the 1500-byte item can give: -EOVERFLOW.  The same on any
 * nodesize when an item grows past about half a leaf.
 */
Test(dir_item_small, overwrite_item_grows_to_a_leaf_of_its_own)
{
	struct btrfs_key key = { 1075, BTRFS_XATTR_ITEM_KEY, 0 };

	fill_neighbours();
	overwrite(&key, filled('x', 1500), true);
	overwrite(&key, filled('y', 3800), true);
	check_tree();
	overwrite(&key, filled('w', 3970), true);
	check_tree();
	check_neighbours(1075);
}

/*
 * Random links and unlinks against a model, on 4K leaves so the items of
 * the directory spread over many leaves; some names share a hash.
 */
struct name_model {
	char name[16];
	u64 ino;
	u64 index;	/* 0: not linked */
};

Test(dir_item_small, random_links_and_unlinks, .timeout = 120)
{
	enum { NR = 300 };
	struct name_model *m = calloc(NR, sizeof(*m));
	u64 next_index = 2;

	srand(11);
	make_inode(DIR, S_IFDIR | 0755, 1);
	for (int i = 0; i < NR; i++) {
		if (i == 0)
			strcpy(m[i].name, COLL_A);
		else if (i == 1)
			strcpy(m[i].name, COLL_B);
		else
			snprintf(m[i].name, sizeof(m[i].name), "n%d%.*s", i, i % 7, "zzzzzzz");
		m[i].ino = 1000 + i;
		make_inode(m[i].ino, S_IFREG | 0644, 0);
	}
	for (int step = 0; step < 3000; step++) {
		struct name_model *n = &m[rand() % NR];

		if (!n->index) {
			cr_assert_eq(add_ref(n->ino, DIR, n->name, next_index), 0);
			must_insert_entry(n->name, n->ino, next_index);
			n->index = next_index++;
		} else {
			cr_assert_eq(unlink_name(n->ino, n->name), 0, "unlink %s: %s", n->name,
				     tlog_error_get());
			n->index = 0;
		}
		if (step % 250 == 0 || step == 2999) {
			check_tree();
			for (int i = 0; i < NR; i++) {
				u64 index;

				if (m[i].index) {
					check_entry(m[i].name, m[i].ino, m[i].index);
					cr_assert_eq(find_ref(m[i].ino, DIR, m[i].name, &index), 0);
					cr_assert_eq(index, m[i].index);
				} else {
					cr_assert_eq(lookup(m[i].name, &(struct tlog_dir_entry){ 0 }),
						     -ENOENT);
					cr_assert_eq(count_names(m[i].ino), 0);
				}
			}
		}
	}
	cr_assert_geq(F.root.level, 1, "the directory spans several leaves");
	free(m);
}
