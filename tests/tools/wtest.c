// SPDX-License-Identifier: GPL-2.0-only
/*
 * wtest: drive the write path from test scripts.
 *
 *   wtest mkdir IMAGE COUNT PER_TRANS PREFIX
 *   wtest write IMAGE NAME SRCFILE    a regular file in / with SRCFILE's bytes
 *   wtest rm IMAGE NAME               unlink a regular file from /
 *
 * Creates COUNT directories PREFIX-NNNNN in the top-level directory,
 * committing a transaction every PER_TRANS of them.  TLOG_FAULT_INJECT=
 * fail:N or drop:N makes the Nth write and all after it fail or vanish;
 * the number of writes issued is printed on stderr.  The items are those
 * the kernel writes for mkdir, so btrfs check and a mount can judge the
 * result.  Not a user command: `tlogctl run` will do this properly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "csum.h"
#include "ctree.h"
#include "errctx.h"
#include "blockdev.h"
#include "extent-tree.h"
#include "file-item.h"
#include "inode.h"
#include "root-tree.h"
#include "transaction.h"

static u64 next_objectid(struct btrfs_root *root)
{
	struct btrfs_key key = { BTRFS_LAST_FREE_OBJECTID, (u8)-1, (u64)-1 };
	struct btrfs_path path;
	u64 ret = BTRFS_FIRST_FREE_OBJECTID;

	btrfs_init_path(&path);
	if (btrfs_search_slot(root, &key, &path) > 0 && btrfs_prev_item(root, &path) == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		if (key.objectid >= BTRFS_FIRST_FREE_OBJECTID)
			ret = key.objectid + 1;
	}
	btrfs_release_path(&path);
	return ret;
}

static u64 next_dir_index(struct btrfs_root *root, u64 dir)
{
	struct btrfs_key key = { dir, BTRFS_DIR_INDEX_KEY, (u64)-1 };
	struct btrfs_path path;
	u64 ret = 2;

	btrfs_init_path(&path);
	if (btrfs_search_backwards(root, &key, &path) == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], &key, path.slots[0]);
		ret = key.offset + 1;
	}
	btrfs_release_path(&path);
	return ret;
}

static void set_now(struct btrfs_timespec *ts)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	btrfs_set_timespec_sec(ts, now.tv_sec);
	btrfs_set_timespec_nsec(ts, now.tv_nsec);
}

static int insert_dir_entry(struct tlog_trans *trans, struct btrfs_root *root,
			    const struct btrfs_key *key, u64 child, const char *name, u16 len,
			    u8 type)
{
	u8 buf[sizeof(struct btrfs_dir_item) + BTRFS_NAME_LEN];
	struct btrfs_dir_item *di = (struct btrfs_dir_item *)buf;
	struct btrfs_key loc = { child, BTRFS_INODE_ITEM_KEY, 0 };

	memset(buf, 0, sizeof(buf));
	btrfs_cpu_key_to_disk(&di->location, &loc);
	btrfs_set_dir_item_transid(di, trans->transid);
	btrfs_set_dir_item_name_len(di, len);
	btrfs_set_dir_item_type(di, type);
	memcpy(di + 1, name, len);
	return btrfs_insert_item(trans, root, key, buf, sizeof(*di) + len);
}

/* The parent directory gains (@sign 1) or loses (-1) a name of @len bytes. */
static int update_parent(struct tlog_trans *trans, struct btrfs_root *root, u64 parent,
			 int sign, u16 len)
{
	struct btrfs_key key = { parent, BTRFS_INODE_ITEM_KEY, 0 };
	struct btrfs_inode_item *ii;
	struct btrfs_path path;
	int ret;

	btrfs_init_path(&path);
	ret = btrfs_search_slot_for_write(trans, root, &key, &path, 0);
	if (ret == 0) {
		ii = btrfs_item_ptr(path.nodes[0], path.slots[0]);
		/* each name is counted twice: DIR_ITEM and DIR_INDEX */
		btrfs_set_inode_item_size(ii, btrfs_inode_item_size(ii) + sign * 2 * (s64)len);
		btrfs_set_inode_item_transid(ii, trans->transid);
		btrfs_set_inode_item_sequence(ii, btrfs_inode_item_sequence(ii) + 1);
		set_now(&ii->mtime);
		ii->ctime = ii->mtime;
	} else if (ret > 0) {
		ret = -ENOENT;
	}
	btrfs_release_path(&path);
	return ret;
}

/*
 * A new inode named @name in @parent, in one batch with its INODE_REF;
 * its number in *@ino, the index its name takes in *@index.
 */
static int create_inode(struct tlog_trans *trans, struct btrfs_root *root, u64 parent,
			const char *name, u32 mode, u64 size, u64 nbytes, u64 *ino, u64 *index)
{
	u16 len = strlen(name);
	struct btrfs_key keys[2];
	u32 sizes[2] = { sizeof(struct btrfs_inode_item), sizeof(struct btrfs_inode_ref) + len };
	struct btrfs_inode_item *ii;
	struct btrfs_inode_ref *ref;
	struct btrfs_path path;
	int ret;

	*ino = next_objectid(root);
	*index = next_dir_index(root, parent);
	keys[0] = (struct btrfs_key){ *ino, BTRFS_INODE_ITEM_KEY, 0 };
	keys[1] = (struct btrfs_key){ *ino, BTRFS_INODE_REF_KEY, parent };
	btrfs_init_path(&path);
	ret = btrfs_insert_empty_items(trans, root, &path, keys, sizes, 2);
	if (ret)
		return ret;
	ii = btrfs_item_ptr(path.nodes[0], path.slots[0]);
	btrfs_set_inode_item_generation(ii, trans->transid);
	btrfs_set_inode_item_transid(ii, trans->transid);
	btrfs_set_inode_item_size(ii, size);
	btrfs_set_inode_item_nbytes(ii, nbytes);
	btrfs_set_inode_item_nlink(ii, 1);
	btrfs_set_inode_item_mode(ii, mode);
	set_now(&ii->atime);
	ii->ctime = ii->mtime = ii->otime = ii->atime;
	ref = btrfs_item_ptr(path.nodes[0], path.slots[0] + 1);
	btrfs_set_inode_ref_index(ref, *index);
	btrfs_set_inode_ref_name_len(ref, len);
	memcpy(ref + 1, name, len);
	btrfs_release_path(&path);
	return 0;
}

/* The name's DIR_ITEM and DIR_INDEX in @parent, and the parent's new size. */
static int link_name(struct tlog_trans *trans, struct btrfs_root *root, u64 parent,
		     const char *name, u64 ino, u64 index, u8 type)
{
	u16 len = strlen(name);
	struct btrfs_key key = { parent, BTRFS_DIR_ITEM_KEY, btrfs_name_hash(name, len) };
	int ret = insert_dir_entry(trans, root, &key, ino, name, len, type);

	if (!ret) {
		key.type = BTRFS_DIR_INDEX_KEY;
		key.offset = index;
		ret = insert_dir_entry(trans, root, &key, ino, name, len, type);
	}
	return ret ? ret : update_parent(trans, root, parent, 1, len);
}

static int do_mkdir(struct tlog_trans *trans, struct btrfs_root *root, u64 parent,
		    const char *name)
{
	u64 ino, index;
	int ret = create_inode(trans, root, parent, name, S_IFDIR | 0755, 0, 0, &ino, &index);

	return ret ? ret : link_name(trans, root, parent, name, ino, index, BTRFS_FT_DIR);
}

#define WRITE_EXTENT_MAX (1024 * 1024)

static int insert_file_extent(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			      u64 file_off, u64 bytenr, u64 len)
{
	struct btrfs_file_extent_item fi;
	struct btrfs_key key = { ino, BTRFS_EXTENT_DATA_KEY, file_off };

	memset(&fi, 0, sizeof(fi));
	btrfs_set_file_extent_item_generation(&fi, trans->transid);
	btrfs_set_file_extent_item_ram_bytes(&fi, len);
	btrfs_set_file_extent_item_type(&fi, BTRFS_FILE_EXTENT_REG);
	btrfs_set_file_extent_item_disk_bytenr(&fi, bytenr);
	btrfs_set_file_extent_item_disk_num_bytes(&fi, len);
	btrfs_set_file_extent_item_num_bytes(&fi, len);
	return btrfs_insert_item(trans, root, &key, &fi, sizeof(fi));
}

static int do_write(struct tlog_trans *trans, struct btrfs_root *root, u64 parent,
		    const char *name, const u8 *data, u64 size)
{
	u32 ss = trans->fs->sectorsize;
	u64 aligned = (size + ss - 1) / ss * ss, ino, index;
	u8 *buf;
	int ret;

	ret = create_inode(trans, root, parent, name, S_IFREG | 0644, size, aligned, &ino, &index);
	if (ret)
		return ret;
	buf = calloc(1, WRITE_EXTENT_MAX);
	if (!buf)
		return -ENOMEM;
	for (u64 off = 0; !ret && off < aligned; off += WRITE_EXTENT_MAX) {
		u64 n = aligned - off < WRITE_EXTENT_MAX ? aligned - off : WRITE_EXTENT_MAX;
		u64 have = size - off < n ? size - off : n, bytenr;

		memset(buf, 0, n);
		memcpy(buf, data + off, have);
		ret = btrfs_alloc_data_extent(trans, root, ino, off, n, &bytenr);
		if (!ret)
			ret = btrfs_write_data(trans, bytenr, buf, n);
		if (!ret)
			ret = btrfs_insert_data_csums(trans, bytenr, buf, n);
		if (!ret)
			ret = insert_file_extent(trans, root, ino, off, bytenr, n);
	}
	free(buf);
	return ret ? ret : link_name(trans, root, parent, name, ino, index, BTRFS_FT_REG_FILE);
}

/* Delete the first item of @ino with key type @type, into @key; 1 if none. */
static int delete_first_item(struct tlog_trans *trans, struct btrfs_root *root, u64 ino,
			     u8 type, struct btrfs_key *key, void *copy, size_t copy_size)
{
	struct btrfs_key search = { ino, type, 0 };
	struct btrfs_path path;
	int ret;

	/* find it read-only (it may start the next leaf), then delete by exact key */
	btrfs_init_path(&path);
	ret = btrfs_search_forward(root, &search, &path);
	if (ret == 0) {
		btrfs_item_key_to_cpu(path.nodes[0], key, path.slots[0]);
		if (key->objectid != ino || key->type != type)
			ret = 1;
	}
	btrfs_release_path(&path);
	if (ret)
		return ret;
	ret = btrfs_search_slot_for_write(trans, root, key, &path, -1);
	if (ret == 0) {
		u32 size = btrfs_item_size(path.nodes[0], path.slots[0]);

		if (copy)
			memcpy(copy, btrfs_item_ptr(path.nodes[0], path.slots[0]),
			       size < copy_size ? size : copy_size);
		ret = btrfs_del_items(trans, root, &path, path.slots[0], 1);
	} else if (ret > 0) {
		ret = -EUCLEAN;
	}
	btrfs_release_path(&path);
	return ret;
}

static int do_rm(struct tlog_fs *fs, struct tlog_trans *trans, struct btrfs_root *root,
		 u64 parent, const char *name)
{
	u16 len = strlen(name);
	struct tlog_dir_entry de;
	struct btrfs_inode_ref ref;
	struct btrfs_key key;
	u64 ino;
	int ret;

	(void)fs;
	ret = btrfs_lookup_dir_entry(root, parent, name, len, &de);
	if (ret)
		return ret;
	ino = de.location.objectid;
	/* the name: DIR_ITEM, its INODE_REF (for the index), DIR_INDEX */
	key = (struct btrfs_key){ parent, BTRFS_DIR_ITEM_KEY, btrfs_name_hash(name, len) };
	ret = btrfs_delete_item(trans, root, &key);
	if (!ret)
		ret = delete_first_item(trans, root, ino, BTRFS_INODE_REF_KEY, &key, &ref,
					sizeof(ref));
	if (ret > 0)
		ret = -ENOENT;
	if (!ret) {
		key = (struct btrfs_key){ parent, BTRFS_DIR_INDEX_KEY,
					  btrfs_inode_ref_index(&ref) };
		ret = btrfs_delete_item(trans, root, &key);
	}
	/* the data, item by item */
	while (!ret) {
		struct btrfs_file_extent_item fi;

		memset(&fi, 0, sizeof(fi));
		ret = delete_first_item(trans, root, ino, BTRFS_EXTENT_DATA_KEY, &key, &fi,
					sizeof(fi));
		if (ret)
			break;
		if (btrfs_file_extent_item_type(&fi) != BTRFS_FILE_EXTENT_INLINE &&
		    btrfs_file_extent_item_disk_bytenr(&fi))
			ret = btrfs_free_data_extent(trans, btrfs_file_extent_item_disk_bytenr(&fi),
						     btrfs_file_extent_item_disk_num_bytes(&fi),
						     root->root_key.objectid, ino,
						     key.offset - btrfs_file_extent_item_offset(&fi));
	}
	if (ret > 0)
		ret = 0;
	if (!ret) {
		key = (struct btrfs_key){ ino, BTRFS_INODE_ITEM_KEY, 0 };
		ret = btrfs_delete_item(trans, root, &key);
	}
	return ret ? ret : update_parent(trans, root, parent, -1, len);
}

static int read_file(const char *path, u8 **data, u64 *size)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -errno;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	*data = malloc(n ? n : 1);
	if (!*data || fread(*data, 1, n, f) != (size_t)n) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*size = n;
	return 0;
}

int main(int argc, char **argv)
{
	struct tlog_open_opts opts = { .super_mirror = -1, .writable = true };
	struct tlog_trans *trans = NULL;
	struct btrfs_root *root;
	struct tlog_fs *fs;
	long count, per;
	int err;

	if (argc == 5 && strcmp(argv[1], "write") == 0) {
		count = 1;
		per = 1;
	} else if (argc == 4 && strcmp(argv[1], "rm") == 0) {
		count = 1;
		per = 1;
	} else if (argc == 6 && strcmp(argv[1], "mkdir") == 0) {
		count = atol(argv[3]);
		per = atol(argv[4]);
	} else {
		fprintf(stderr, "usage: wtest mkdir IMAGE COUNT PER_TRANS PREFIX | write IMAGE NAME SRC | rm IMAGE NAME\n");
		return 2;
	}
	if (getenv("TLOG_FAULT_INJECT")) {
		char mode[8];
		unsigned long long nth;

		if (sscanf(getenv("TLOG_FAULT_INJECT"), "%7[a-z]:%llu", mode, &nth) != 2) {
			fprintf(stderr, "wtest: bad TLOG_FAULT_INJECT\n");
			return 2;
		}
		opts.fault_mode = strcmp(mode, "drop") ? TLOG_FAULT_FAIL : TLOG_FAULT_DROP;
		opts.fault_nth = nth;
	}
	err = tlog_open(argv[2], &opts, &fs);
	if (err) {
		fprintf(stderr, "open: %s\n", tlog_error_get());
		return 1;
	}
	/* WTEST_SUBVOL=ID works in another subvolume (a snapshot, say) */
	err = btrfs_read_root(fs, getenv("WTEST_SUBVOL") ? strtoull(getenv("WTEST_SUBVOL"), NULL, 0) :
			      BTRFS_FS_TREE_OBJECTID, &root);
	for (long i = 0; !err && i < count; i++) {
		char name[256];

		if (!trans) {
			err = tlog_trans_start(fs, &trans);
			/* WTEST_SYSTEM_RESERVE=BYTES makes SYSTEM space grow early */
			if (!err && getenv("WTEST_SYSTEM_RESERVE"))
				tlog_trans_set_system_reserve(trans,
					strtoull(getenv("WTEST_SYSTEM_RESERVE"), NULL, 0));
		}
		if (err)
			break;
		u64 dir = btrfs_root_item_root_dirid(&root->root_item);

		if (strcmp(argv[1], "write") == 0) {
			u8 *data = NULL;
			u64 size = 0;

			err = read_file(argv[4], &data, &size);
			if (!err)
				err = do_write(trans, root, dir, argv[3], data, size);
			free(data);
		} else if (strcmp(argv[1], "rm") == 0) {
			err = do_rm(fs, trans, root, dir, argv[3]);
		} else {
			snprintf(name, sizeof(name), "%s-%05ld", argv[5], i);
			err = do_mkdir(trans, root, dir, name);
		}
		if (!err && ((i + 1) % per == 0 || i + 1 == count)) {
			err = tlog_trans_commit(trans);
			trans = NULL;
		}
	}
	if (err) {
		if (trans)
			tlog_trans_abort(trans);
		fprintf(stderr, "wtest: %d %s\n", err, tlog_error_get() ? tlog_error_get() : "");
	}
	fprintf(stderr, "writes: %llu\n", (unsigned long long)fs->bdev->nr_writes);
	tlog_close(fs);
	return err ? 1 : 0;
}
