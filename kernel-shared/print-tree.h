/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Decoding tree blocks for people (text close to `btrfs inspect-internal
 * dump-tree`) and for machines (json-c objects with the same data).
 * These are formatters: they write where they are told and never decide
 * what is an error; a malformed item is shown as such and the walk goes on.
 */
#ifndef TLOG_PRINT_TREE_H
#define TLOG_PRINT_TREE_H

#include <stdio.h>
#include <json-c/json.h>
#include "ctree.h"

/* "ROOT_TREE", "EXTENT_TREE", ..., or the number, for a tree/objectid. */
void btrfs_objectid_to_str(u64 objectid, u8 key_type, char *buf, size_t size);
/* "INODE_ITEM", "DIR_ITEM", ..., or "UNKNOWN.<n>". */
void btrfs_key_type_to_str(u8 type, char *buf, size_t size);
/* "(FS_TREE ROOT_ITEM 0)" as dump-tree prints keys. */
void btrfs_key_to_str(const struct btrfs_key *key, char *buf, size_t size);
/* Name of a tree for headings ("root tree", "extent tree", "fs tree 256"...). */
void btrfs_tree_name(u64 objectid, char *buf, size_t size);

/* One block: header lines, then every item (leaf) or key pointer (node). */
void btrfs_print_tree_block(FILE *out, struct tlog_fs *fs, const struct extent_buffer *eb);
json_object *btrfs_tree_block_to_json(struct tlog_fs *fs, const struct extent_buffer *eb);

/* One leaf item, decoded by its key type (the lines after "item N key ..."). */
void btrfs_print_item(FILE *out, struct tlog_fs *fs, const struct extent_buffer *leaf, int slot);
json_object *btrfs_item_to_json(struct tlog_fs *fs, const struct extent_buffer *leaf, int slot);

/*
 * A JSON string for arbitrary bytes (names on disk need not be UTF-8):
 * control bytes and bytes that are not valid UTF-8 become "\xNN", and a
 * backslash is doubled so that the escaping is unambiguous.
 */
json_object *btrfs_json_bytes(const void *data, size_t len);

#endif
