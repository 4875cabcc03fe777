// SPDX-License-Identifier: GPL-2.0-only
/*
 * Subvolumes and snapshots, as the kernel's ioctls make them
 * (create_subvol, create_snapshot and create_pending_snapshot).
 *
 * A subvolume is a tree of its own: a ROOT_ITEM in the root tree (key
 * offset 0; a snapshot's carries its creation transid), a root directory
 * inode 256 whose INODE_REF is ".." to itself, ROOT_REF/ROOT_BACKREF
 * naming where it is linked, a directory entry in the parent pointing at
 * the ROOT_ITEM, and its uuid in the uuid tree.  Creating one does not
 * commit; a snapshot does, because the kernel takes it while committing,
 * of the source as that commit writes it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uuid/uuid.h>

#include "backref.h"
#include "csum.h"
#include "dir-item.h"
#include "errctx.h"
#include "inode-ops.h"
#include "inode.h"
#include "root-tree.h"

/* The uuid tree item of @uuid: @id appended (btrfs_uuid_tree_add). */
static int add_uuid_item(struct tlog_trans *trans, const u8 uuid[BTRFS_UUID_SIZE], u64 id)
{
	struct btrfs_root *uroot;
	struct btrfs_key key;
	__le64 le = htole64(id);
	u64 a, b;
	int err;

	err = btrfs_find_root(trans->fs, BTRFS_UUID_TREE_OBJECTID, &uroot);
	if (err == -ENOENT)
		return 0;	/* no uuid tree: the kernel makes it at the next mount */
	if (err)
		return err;
	memcpy(&a, uuid, 8);
	memcpy(&b, uuid + 8, 8);
	key = (struct btrfs_key){ le64toh(a), BTRFS_UUID_KEY_SUBVOL, le64toh(b) };
	return btrfs_append_to_item(trans, uroot, &key, &le, sizeof(le));
}

/* ROOT_REF (@parent -> @id) and ROOT_BACKREF (@id -> @parent) for the name in @dir. */
static int add_root_refs(struct tlog_trans *trans, u64 parent, u64 id, u64 dir, u64 index,
			 const char *name, u16 len)
{
	u8 buf[sizeof(struct btrfs_root_ref) + BTRFS_NAME_LEN];
	struct btrfs_root_ref *ref = (void *)buf;
	struct btrfs_key key = { parent, BTRFS_ROOT_REF_KEY, id };
	int err;

	btrfs_set_root_ref_dirid(ref, dir);
	btrfs_set_root_ref_sequence(ref, index);
	btrfs_set_root_ref_name_len(ref, len);
	memcpy(ref + 1, name, len);
	err = btrfs_insert_item(trans, trans->fs->tree_root, &key, buf, sizeof(*ref) + len);
	if (err)
		return err;
	key = (struct btrfs_key){ id, BTRFS_ROOT_BACKREF_KEY, parent };
	return btrfs_insert_item(trans, trans->fs->tree_root, &key, buf, sizeof(*ref) + len);
}

/* The root item of a new, empty subvolume whose root block is @root's. */
static void init_root_item(struct tlog_mount *mnt, struct btrfs_root *root)
{
	struct btrfs_root_item *ri = &root->root_item;
	struct btrfs_inode_item *ii = &ri->inode;
	u64 transid = mnt->trans->transid;

	memset(ri, 0, sizeof(*ri));
	btrfs_set_inode_item_generation(ii, 1);
	btrfs_set_inode_item_size(ii, 3);
	btrfs_set_inode_item_nlink(ii, 1);
	btrfs_set_inode_item_nbytes(ii, mnt->fs->nodesize);
	btrfs_set_inode_item_mode(ii, S_IFDIR | 0755);
	btrfs_set_inode_item_flags(ii, BTRFS_INODE_ROOT_ITEM_INIT);
	btrfs_set_root_item_bytenr(ri, root->bytenr);
	btrfs_set_root_item_generation(ri, transid);
	btrfs_set_root_item_generation_v2(ri, transid);
	btrfs_set_root_item_level(ri, 0);
	btrfs_set_root_item_refs(ri, 1);
	btrfs_set_root_item_bytes_used(ri, mnt->fs->nodesize);
	btrfs_set_root_item_root_dirid(ri, BTRFS_FIRST_FREE_OBJECTID);
	btrfs_set_root_item_ctransid(ri, transid);
	btrfs_set_root_item_otransid(ri, transid);
	tlog_fs_new_uuid(mnt->fs, "subvol", root->root_key.objectid, ri->uuid);
	ri->otime = ri->ctime = mnt->now;
}

/* The new subvolume's root directory: inode 256, its INODE_REF ".." to itself. */
static int insert_root_dir(struct tlog_mount *mnt, struct btrfs_root *root,
			   struct btrfs_inode_item *ii)
{
	u64 ino = BTRFS_FIRST_FREE_OBJECTID;

	/* the ioctl's mode: 0777 less the umask, which is 0 here */
	tlog_init_inode_item(mnt, ii, S_IFDIR | 0777);
	return tlog_insert_inode(mnt, root, ino, ino, "..", 2, 0, ii);
}

/*
 * The name of subvolume @id in @dir at @index: ROOT_REF/BACKREF, DIR_ITEM
 * and DIR_INDEX pointing at its ROOT_ITEM (@location), the directory's
 * size and times.
 */
static int link_subvol(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		       u64 id, const struct btrfs_key *location, u64 index)
{
	int err = add_root_refs(mnt->trans, dir->root->root_key.objectid, id, dir->ino, index,
				name, len);

	if (!err)
		err = btrfs_add_dir_entries(mnt->trans, dir->root, dir->ino, name, len, location,
					    BTRFS_FT_DIR, index);
	if (!err)
		tlog_dir_changed(mnt, dir, 2 * (s64)len);
	return err;
}

/* A new subvolume's or snapshot's name: the next index of @dir. */
static int link_new_subvol(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name,
			   u16 len, u64 id, const struct btrfs_key *location)
{
	u64 index;
	int err = tlog_dir_next_index(dir, &index);

	return err ? err : link_subvol(mnt, dir, name, len, id, location, index);
}

int tlog_create_subvol(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len)
{
	struct btrfs_inode_item ii;
	struct btrfs_root *root;
	struct btrfs_key key;
	u64 id;
	int err;

	err = tlog_may_create(mnt, dir, name, len);
	if (err)
		return err;
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err)
		err = tlog_next_objectid(mnt, mnt->fs->tree_root, &id);
	if (err)
		return err;
	key = (struct btrfs_key){ id, BTRFS_ROOT_ITEM_KEY, 0 };
	err = btrfs_new_root(mnt->fs, &key, &root);
	if (!err)
		err = btrfs_create_tree(mnt->trans, root);
	if (err)
		return err;
	init_root_item(mnt, root);
	err = btrfs_insert_item(mnt->trans, mnt->fs->tree_root, &key, &root->root_item,
				sizeof(root->root_item));
	if (!err)
		err = insert_root_dir(mnt, root, &ii);
	if (!err)
		err = add_uuid_item(mnt->trans, root->root_item.uuid, id);
	if (!err)
		err = link_new_subvol(mnt, dir, name, len, id, &key);
	return err;
}

/* ---- snapshots ---- */

/*
 * The snapshot's root block: a copy of @src's, owned by @snap, and one
 * more reference from @snap to everything it points to (btrfs_copy_root).
 */
static int copy_root_block(struct tlog_trans *trans, struct btrfs_root *src,
			   struct btrfs_root *snap)
{
	struct tlog_fs *fs = trans->fs;
	struct extent_buffer *old, *eb;
	u64 bytenr;
	int err;

	err = read_tree_block(fs, src->bytenr, src->level, src->generation, &old);
	if (err)
		return err;
	err = trans->ops->alloc_tree_block(trans, snap, src->level, &bytenr);
	eb = err ? NULL : btrfs_new_tree_block(fs, bytenr, old);
	if (!err && !eb)
		err = -ENOMEM;
	if (!err) {
		btrfs_set_header_bytenr(eb_header(eb), bytenr);
		btrfs_set_header_owner(eb_header(eb), snap->root_key.objectid);
		btrfs_set_header_generation(eb_header(eb), trans->transid);
		btrfs_mark_buffer_dirty(fs, eb);
		err = btrfs_inc_tree_refs(trans, snap, eb);
		snap->bytenr = bytenr;
		snap->level = src->level;
		snap->generation = trans->transid;
	}
	free_extent_buffer(eb);
	free_extent_buffer(old);
	return err;
}

/* Write @root's in-memory root item into the root tree. */
static int write_root_item(struct tlog_trans *trans, struct btrfs_root *root)
{
	struct btrfs_path path;
	int err;

	btrfs_init_path(&path);
	err = btrfs_search_slot_for_write(trans, trans->fs->tree_root, &root->root_key, &path, 0);
	if (err > 0)
		err = tlog_error(-EUCLEAN, "root item of tree %llu not found",
				 (unsigned long long)root->root_key.objectid);
	if (!err) {
		u32 size = btrfs_item_size(path.nodes[0], path.slots[0]);

		memcpy(btrfs_item_ptr(path.nodes[0], path.slots[0]), &root->root_item,
		       size < sizeof(root->root_item) ? size : sizeof(root->root_item));
	}
	btrfs_release_path(&path);
	return err;
}

/* The snapshot's root item: the source's, with its own identity (create_pending_snapshot). */
static void init_snapshot_item(struct tlog_mount *mnt, const struct btrfs_root *src,
			       struct btrfs_root *snap)
{
	struct btrfs_root_item *ri = &snap->root_item;
	u64 transid = mnt->trans->transid;

	*ri = src->root_item;
	btrfs_set_root_item_bytenr(ri, snap->bytenr);
	btrfs_set_root_item_level(ri, snap->level);
	btrfs_set_root_item_generation(ri, transid);
	btrfs_set_root_item_generation_v2(ri, transid);
	btrfs_set_root_item_refs(ri, 1);
	btrfs_set_root_item_flags(ri, 0);
	memcpy(ri->parent_uuid, src->root_item.uuid, BTRFS_UUID_SIZE);
	tlog_fs_new_uuid(mnt->fs, "snapshot", snap->root_key.objectid, ri->uuid);
	memset(ri->received_uuid, 0, sizeof(ri->received_uuid));
	memset(&ri->stime, 0, sizeof(ri->stime));
	memset(&ri->rtime, 0, sizeof(ri->rtime));
	btrfs_set_root_item_stransid(ri, 0);
	btrfs_set_root_item_rtransid(ri, 0);
	btrfs_set_root_item_otransid(ri, transid);
	ri->otime = mnt->now;
	memset(&ri->drop_progress, 0, sizeof(ri->drop_progress));
	btrfs_set_root_item_drop_level(ri, 0);
}

int tlog_create_snapshot(struct tlog_mount *mnt, struct tlog_inode *src, struct tlog_inode *dir,
			 const char *name, u16 len)
{
	struct btrfs_root *sroot = src->root, *snap;
	struct btrfs_key key, location;
	u64 id;
	int err;

	if (!S_ISDIR(tlog_inode_mode(src)))
		return -ENOTDIR;
	if (src->ino != btrfs_root_item_root_dirid(&sroot->root_item))
		return -EINVAL;		/* only a subvolume's root can be snapshotted */
	err = tlog_may_create(mnt, dir, name, len);
	if (err)
		return err;
	/*
	 * The kernel writes the source's data back and takes the snapshot
	 * while committing, of the tree that commit writes: commit first,
	 * then copy the committed root in a transaction of its own.
	 */
	err = tlog_sync_root(mnt, sroot);
	if (!err)
		err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err)
		err = tlog_next_objectid(mnt, mnt->fs->tree_root, &id);
	if (err)
		return err;
	key = (struct btrfs_key){ id, BTRFS_ROOT_ITEM_KEY, mnt->trans->transid };
	btrfs_set_root_item_last_snapshot(&sroot->root_item, mnt->trans->transid);
	err = write_root_item(mnt->trans, sroot);
	if (!err)
		err = btrfs_new_root(mnt->fs, &key, &snap);
	if (!err)
		err = copy_root_block(mnt->trans, sroot, snap);
	if (err)
		return err;
	init_snapshot_item(mnt, sroot, snap);
	err = btrfs_insert_item(mnt->trans, mnt->fs->tree_root, &key, &snap->root_item,
				sizeof(snap->root_item));
	if (!err)
		err = add_uuid_item(mnt->trans, snap->root_item.uuid, id);
	/* the name goes in after the copy: a snapshot never holds its own entry */
	location = (struct btrfs_key){ id, BTRFS_ROOT_ITEM_KEY, (u64)-1 };
	if (!err)
		err = link_new_subvol(mnt, dir, name, len, id, &location);
	return err ? err : tlog_commit(mnt);
}

/* ---- deleting an empty subvolume (rmdir, btrfs_delete_subvolume) ---- */

/* Drop @id from the uuid tree item of @uuid (btrfs_uuid_tree_remove). */
static int remove_uuid_item(struct tlog_trans *trans, const u8 uuid[BTRFS_UUID_SIZE], u64 id)
{
	struct btrfs_root *uroot;
	struct btrfs_key key;
	struct btrfs_path path;
	u64 a, b;
	int err;

	err = btrfs_find_root(trans->fs, BTRFS_UUID_TREE_OBJECTID, &uroot);
	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	memcpy(&a, uuid, 8);
	memcpy(&b, uuid + 8, 8);
	key = (struct btrfs_key){ le64toh(a), BTRFS_UUID_KEY_SUBVOL, le64toh(b) };
	btrfs_init_path(&path);
	err = btrfs_search_slot_for_write(trans, uroot, &key, &path, -1);
	if (err > 0)
		err = 0;	/* nothing recorded: nothing to remove */
	else if (err == 0) {
		u32 size = btrfs_item_size(path.nodes[0], path.slots[0]);
		const u8 *p = btrfs_item_ptr(path.nodes[0], path.slots[0]);
		u32 at = size;

		for (u32 off = 0; off + 8 <= size; off += 8) {
			__le64 v;

			memcpy(&v, p + off, 8);
			if (le64toh(v) == id)
				at = off;
		}
		if (at < size)
			err = btrfs_del_item_part(trans, uroot, &path, at, 8);
	}
	btrfs_release_path(&path);
	return err;
}

/* The name's ROOT_REF and ROOT_BACKREF; *@index gets the name's index. */
static int remove_root_refs(struct tlog_trans *trans, u64 parent, u64 id, u64 *index)
{
	struct btrfs_key key = { parent, BTRFS_ROOT_REF_KEY, id };
	struct btrfs_path path;
	int err;

	btrfs_init_path(&path);
	err = btrfs_search_slot(trans->fs->tree_root, &key, &path);
	if (err == 0 && btrfs_item_size(path.nodes[0], path.slots[0]) >= sizeof(struct btrfs_root_ref))
		*index = btrfs_root_ref_sequence(btrfs_item_ptr(path.nodes[0], path.slots[0]));
	else if (err >= 0)
		err = tlog_error(-EUCLEAN, "subvolume %llu has no ROOT_REF in %llu",
				 (unsigned long long)id, (unsigned long long)parent);
	btrfs_release_path(&path);
	if (!err)
		err = btrfs_delete_item(trans, trans->fs->tree_root, &key);
	key = (struct btrfs_key){ id, BTRFS_ROOT_BACKREF_KEY, parent };
	if (!err)
		err = btrfs_delete_item(trans, trans->fs->tree_root, &key);
	return err;
}

/* The subvolume a mount without subvol= shows: the root tree's "default" entry. */
static u64 default_subvol(struct tlog_fs *fs)
{
	struct tlog_dir_entry de;
	struct tlog_errsave saved;
	u64 id = BTRFS_FS_TREE_OBJECTID;

	tlog_error_save(&saved);
	if (btrfs_lookup_dir_entry(fs->tree_root, btrfs_super_block_root_dir_objectid(&fs->super),
				   "default", 7, &de) == 0)
		id = de.location.objectid;
	tlog_error_restore(&saved);
	return id;
}

int tlog_delete_subvol(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		       struct tlog_inode *subvol)
{
	struct btrfs_root *root = subvol->root;
	u64 id = root->root_key.objectid;
	struct btrfs_key orphan = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, id };
	int err;

	if (id == default_subvol(mnt->fs))
		return -EPERM;	/* the default subvolume stays */
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (!err)
		err = tlog_unlink_subvol(mnt, dir, name, len, subvol, NULL);
	if (err)
		return err;
	/* btrfs_record_snapshot_destroy: fsync of @dir commits */
	dir->last_unlink_trans = mnt->trans->transid;
	/*
	 * The tree itself is the cleaner's to drop, after the commit: it
	 * stays with no references and an orphan item that says so, and the
	 * kernel finishes the job at a later mount.
	 */
	btrfs_set_root_item_refs(&root->root_item, 0);
	err = write_root_item(mnt->trans, root);
	if (!err)
		err = btrfs_insert_item(mnt->trans, mnt->fs->tree_root, &orphan, NULL, 0);
	if (!err)
		err = remove_uuid_item(mnt->trans, root->root_item.uuid, id);
	if (!err) {
		btrfs_set_inode_item_nlink(&subvol->item, 0);
		subvol->evicted = true;
		subvol->item_dirty = false;
		list_del_init(&subvol->dirty_list);
	}
	return err;
}

/* ---- a subvolume's name moving (btrfs_rename of a subvolume's root) ---- */

int tlog_unlink_subvol(struct tlog_mount *mnt, struct tlog_inode *dir, const char *name, u16 len,
		       struct tlog_inode *subvol, u64 *index)
{
	u64 id = subvol->root->root_key.objectid, idx = 0;
	int err;

	err = remove_root_refs(mnt->trans, dir->root->root_key.objectid, id, &idx);
	if (!err)
		err = btrfs_remove_dir_entries(mnt->trans, dir->root, dir->ino, name, len, idx);
	if (err)
		return err;
	tlog_dir_changed(mnt, dir, -2 * (s64)len);
	if (index)
		*index = idx;
	return 0;
}

/*
 * The entry points at the subvolume's ROOT_ITEM by the key its root was
 * read with, not the one the old entry had: a renamed snapshot's entry
 * says (id ROOT_ITEM transid) where its first one said (id ROOT_ITEM -1),
 * as the kernel's btrfs_add_link writes it.
 */
int tlog_link_subvol(struct tlog_mount *mnt, struct tlog_inode *dir, struct tlog_inode *subvol,
		     const char *name, u16 len, u64 index)
{
	const struct btrfs_key *location = &subvol->root->root_key;

	return link_subvol(mnt, dir, name, len, location->objectid, location, index);
}

/* ---- read-only and default subvolumes (mkfs --subvol ro:, default:) ---- */

/*
 * `btrfs property set ro true` (BTRFS_IOC_SUBVOL_SETFLAGS): the flag in
 * the root item, nothing else; the kernel commits, our caller does when
 * it is done.
 */
int tlog_subvol_set_readonly(struct tlog_mount *mnt, struct btrfs_root *root)
{
	u64 flags = btrfs_root_item_flags(&root->root_item);
	int err;

	if (flags & BTRFS_ROOT_SUBVOL_RDONLY)
		return 0;
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (err)
		return err;
	btrfs_set_root_item_flags(&root->root_item, flags | BTRFS_ROOT_SUBVOL_RDONLY);
	return write_root_item(mnt->trans, root);
}

/*
 * BTRFS_IOC_DEFAULT_SUBVOL: the "default" entry of the root tree
 * directory points at the subvolume's ROOT_ITEM (offset 0, as the root
 * key the kernel holds for a subvolume), and the filesystem says it has
 * a default other than the top level (INCOMPAT_DEFAULT_SUBVOL).
 */
int tlog_set_default_subvol(struct tlog_mount *mnt, u64 subvol_id)
{
	static const char name[] = "default";
	struct tlog_fs *fs = mnt->fs;
	u64 dirid = btrfs_super_block_root_dir_objectid(&fs->super);
	struct btrfs_key key = { dirid, BTRFS_DIR_ITEM_KEY, btrfs_name_hash(name, 7) };
	struct btrfs_key loc = { subvol_id, BTRFS_ROOT_ITEM_KEY, 0 };
	struct tlog_dir_entry de;
	struct btrfs_path path;
	u32 off;
	int err;

	if (subvol_id != BTRFS_FS_TREE_OBJECTID &&
	    (subvol_id < BTRFS_FIRST_FREE_OBJECTID || subvol_id > BTRFS_LAST_FREE_OBJECTID))
		return tlog_error(-EINVAL, "%llu is not a subvolume id",
				  (unsigned long long)subvol_id);
	err = tlog_mount_trans(mnt, &mnt->trans);
	if (err)
		return err;
	btrfs_init_path(&path);
	err = btrfs_search_slot_for_write(mnt->trans, fs->tree_root, &key, &path, 0);
	if (err > 0)
		err = -ENOENT;
	if (!err)
		err = btrfs_find_name_in_dir_item(path.nodes[0], path.slots[0], name, 7, &de, &off);
	if (!err) {
		u8 *item = btrfs_item_ptr(path.nodes[0], path.slots[0]);
		struct btrfs_dir_item *di = (struct btrfs_dir_item *)(item + off);

		btrfs_cpu_key_to_disk(&di->location, &loc);
	}
	btrfs_release_path(&path);
	if (err == -ENOENT)
		return tlog_error(-EUCLEAN, "the root tree has no \"default\" entry");
	if (err)
		return err;
	fs->incompat |= BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL;
	btrfs_set_super_block_incompat_flags(&fs->super, fs->incompat);
	return 0;
}
