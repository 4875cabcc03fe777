/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * On-disk format of btrfs: constants, packed structures and little-endian
 * accessors.  Every structure here mirrors the layout documented in the
 * kernel's UAPI btrfs_tree.h; all integers are little-endian and nothing is
 * padded.  Code never touches a field directly: it goes through the
 * btrfs_<struct>_<field>() getters so that endianness is handled in one place.
 */
#ifndef TLOG_FORMAT_H
#define TLOG_FORMAT_H

#include <endian.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

#define __packed __attribute__((packed))

#define BTRFS_MAGIC			0x4D5F53665248425FULL
#define BTRFS_SUPER_INFO_OFFSET		65536ULL
#define BTRFS_SUPER_INFO_SIZE		4096
#define BTRFS_SUPER_MIRROR_MAX		3
#define BTRFS_SUPER_MIRROR_SHIFT	12
#define BTRFS_CSUM_SIZE			32
#define BTRFS_FSID_SIZE			16
#define BTRFS_UUID_SIZE			16
#define BTRFS_LABEL_SIZE		256
#define BTRFS_SYSTEM_CHUNK_ARRAY_SIZE	2048
#define BTRFS_NUM_BACKUP_ROOTS		4
#define BTRFS_MAX_LEVEL			8
#define BTRFS_NAME_LEN			255
#define BTRFS_LINK_MAX			65535U
#define BTRFS_STRIPE_LEN		65536ULL
#define BTRFS_DEVICE_RANGE_RESERVED	(1024ULL * 1024)
#define BTRFS_MIN_NODESIZE		4096
#define BTRFS_MAX_NODESIZE		65536
#define BTRFS_MIXED_BACKREF_REV		1
#define BTRFS_BACKREF_REV_SHIFT		56
#define BTRFS_HEADER_FLAG_WRITTEN	(1ULL << 0)
#define BTRFS_HEADER_FLAG_RELOC		(1ULL << 1)

/* Tree and special object ids */
#define BTRFS_ROOT_TREE_OBJECTID	1ULL
#define BTRFS_EXTENT_TREE_OBJECTID	2ULL
#define BTRFS_CHUNK_TREE_OBJECTID	3ULL
#define BTRFS_DEV_TREE_OBJECTID		4ULL
#define BTRFS_FS_TREE_OBJECTID		5ULL
#define BTRFS_ROOT_TREE_DIR_OBJECTID	6ULL
#define BTRFS_CSUM_TREE_OBJECTID	7ULL
#define BTRFS_QUOTA_TREE_OBJECTID	8ULL
#define BTRFS_UUID_TREE_OBJECTID	9ULL
#define BTRFS_FREE_SPACE_TREE_OBJECTID	10ULL
#define BTRFS_BLOCK_GROUP_TREE_OBJECTID	11ULL
#define BTRFS_RAID_STRIPE_TREE_OBJECTID	12ULL
#define BTRFS_REMAP_TREE_OBJECTID	13ULL
#define BTRFS_DEV_STATS_OBJECTID	0ULL
#define BTRFS_BALANCE_OBJECTID		((u64)-4)
#define BTRFS_ORPHAN_OBJECTID		((u64)-5)
#define BTRFS_TREE_LOG_OBJECTID		((u64)-6)
#define BTRFS_TREE_LOG_FIXUP_OBJECTID	((u64)-7)
#define BTRFS_TREE_RELOC_OBJECTID	((u64)-8)
#define BTRFS_DATA_RELOC_TREE_OBJECTID	((u64)-9)
#define BTRFS_EXTENT_CSUM_OBJECTID	((u64)-10)
#define BTRFS_FREE_SPACE_OBJECTID	((u64)-11)
#define BTRFS_FREE_INO_OBJECTID		((u64)-12)
#define BTRFS_CSUM_CHANGE_OBJECTID	((u64)-13)
#define BTRFS_MULTIPLE_OBJECTIDS	((u64)-255)
#define BTRFS_FIRST_FREE_OBJECTID	256ULL
#define BTRFS_LAST_FREE_OBJECTID	((u64)-256)
#define BTRFS_FIRST_CHUNK_TREE_OBJECTID	256ULL
#define BTRFS_DEV_ITEMS_OBJECTID	1ULL

/* Item key types */
#define BTRFS_INODE_ITEM_KEY		1
#define BTRFS_INODE_REF_KEY		12
#define BTRFS_INODE_EXTREF_KEY		13
#define BTRFS_XATTR_ITEM_KEY		24
#define BTRFS_VERITY_DESC_ITEM_KEY	36
#define BTRFS_VERITY_MERKLE_ITEM_KEY	37
#define BTRFS_ORPHAN_ITEM_KEY		48
/* The first index number of a directory's entries (0 and 1 are . and ..). */
#define BTRFS_DIR_START_INDEX		2ULL

#define BTRFS_DIR_LOG_ITEM_KEY		60
#define BTRFS_DIR_LOG_INDEX_KEY		72
#define BTRFS_DIR_ITEM_KEY		84
#define BTRFS_DIR_INDEX_KEY		96
#define BTRFS_EXTENT_DATA_KEY		108
#define BTRFS_EXTENT_CSUM_KEY		128
#define BTRFS_ROOT_ITEM_KEY		132
#define BTRFS_ROOT_BACKREF_KEY		144
#define BTRFS_ROOT_REF_KEY		156
#define BTRFS_EXTENT_ITEM_KEY		168
#define BTRFS_METADATA_ITEM_KEY		169
#define BTRFS_EXTENT_OWNER_REF_KEY	172
#define BTRFS_TREE_BLOCK_REF_KEY	176
#define BTRFS_EXTENT_DATA_REF_KEY	178
#define BTRFS_EXTENT_REF_V0_KEY		180
#define BTRFS_SHARED_BLOCK_REF_KEY	182
#define BTRFS_SHARED_DATA_REF_KEY	184
#define BTRFS_BLOCK_GROUP_ITEM_KEY	192
#define BTRFS_FREE_SPACE_INFO_KEY	198
#define BTRFS_FREE_SPACE_EXTENT_KEY	199
#define BTRFS_FREE_SPACE_BITMAP_KEY	200
#define BTRFS_DEV_EXTENT_KEY		204
#define BTRFS_DEV_ITEM_KEY		216
#define BTRFS_CHUNK_ITEM_KEY		228
#define BTRFS_RAID_STRIPE_KEY		230
#define BTRFS_QGROUP_STATUS_KEY		240
#define BTRFS_QGROUP_INFO_KEY		242
#define BTRFS_QGROUP_LIMIT_KEY		244
#define BTRFS_QGROUP_RELATION_KEY	246
#define BTRFS_TEMPORARY_ITEM_KEY	248
#define BTRFS_PERSISTENT_ITEM_KEY	249
#define BTRFS_DEV_REPLACE_KEY		250
#define BTRFS_UUID_KEY_SUBVOL		251
#define BTRFS_UUID_KEY_RECEIVED_SUBVOL	252
#define BTRFS_STRING_ITEM_KEY		253

/* Checksum types */
#define BTRFS_CSUM_TYPE_CRC32		0
#define BTRFS_CSUM_TYPE_XXHASH		1
#define BTRFS_CSUM_TYPE_SHA256		2
#define BTRFS_CSUM_TYPE_BLAKE2		3

/* Superblock flags */
#define BTRFS_SUPER_FLAG_WRITTEN	(1ULL << 0)
#define BTRFS_SUPER_FLAG_RELOC		(1ULL << 1)
#define BTRFS_SUPER_FLAG_ERROR		(1ULL << 2)
#define BTRFS_SUPER_FLAG_SEEDING	(1ULL << 32)
#define BTRFS_SUPER_FLAG_METADUMP	(1ULL << 33)
#define BTRFS_SUPER_FLAG_METADUMP_V2	(1ULL << 34)
#define BTRFS_SUPER_FLAG_CHANGING_FSID	(1ULL << 35)
#define BTRFS_SUPER_FLAG_CHANGING_FSID_V2 (1ULL << 36)

/* compat_ro */
#define BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE		(1ULL << 0)
#define BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID	(1ULL << 1)
#define BTRFS_FEATURE_COMPAT_RO_VERITY			(1ULL << 2)
#define BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE	(1ULL << 3)

/* incompat */
#define BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF	(1ULL << 0)
#define BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL	(1ULL << 1)
#define BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS	(1ULL << 2)
#define BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO	(1ULL << 3)
#define BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD	(1ULL << 4)
#define BTRFS_FEATURE_INCOMPAT_BIG_METADATA	(1ULL << 5)
#define BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF	(1ULL << 6)
#define BTRFS_FEATURE_INCOMPAT_RAID56		(1ULL << 7)
#define BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA	(1ULL << 8)
#define BTRFS_FEATURE_INCOMPAT_NO_HOLES		(1ULL << 9)
#define BTRFS_FEATURE_INCOMPAT_METADATA_UUID	(1ULL << 10)
#define BTRFS_FEATURE_INCOMPAT_RAID1C34		(1ULL << 11)
#define BTRFS_FEATURE_INCOMPAT_ZONED		(1ULL << 12)
#define BTRFS_FEATURE_INCOMPAT_EXTENT_TREE_V2	(1ULL << 13)
#define BTRFS_FEATURE_INCOMPAT_RAID_STRIPE_TREE	(1ULL << 14)
#define BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA	(1ULL << 16)
#define BTRFS_FEATURE_INCOMPAT_REMAP_TREE	(1ULL << 17)

/*
 * What the read path understands.  Images with other incompat bits are
 * refused, as the kernel refuses to mount them.
 */
#define TLOG_SUPPORTED_INCOMPAT (BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF |	\
	BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL |				\
	BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS |				\
	BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO |				\
	BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD |				\
	BTRFS_FEATURE_INCOMPAT_BIG_METADATA |				\
	BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF |				\
	BTRFS_FEATURE_INCOMPAT_RAID56 |					\
	BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA |			\
	BTRFS_FEATURE_INCOMPAT_NO_HOLES |				\
	BTRFS_FEATURE_INCOMPAT_METADATA_UUID |				\
	BTRFS_FEATURE_INCOMPAT_RAID1C34 |				\
	BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA)

/* Block group / chunk type flags */
#define BTRFS_BLOCK_GROUP_DATA		(1ULL << 0)
#define BTRFS_BLOCK_GROUP_SYSTEM	(1ULL << 1)
#define BTRFS_BLOCK_GROUP_METADATA	(1ULL << 2)
#define BTRFS_BLOCK_GROUP_RAID0		(1ULL << 3)
#define BTRFS_BLOCK_GROUP_RAID1		(1ULL << 4)
#define BTRFS_BLOCK_GROUP_DUP		(1ULL << 5)
#define BTRFS_BLOCK_GROUP_RAID10	(1ULL << 6)
#define BTRFS_BLOCK_GROUP_RAID5		(1ULL << 7)
#define BTRFS_BLOCK_GROUP_RAID6		(1ULL << 8)
#define BTRFS_BLOCK_GROUP_RAID1C3	(1ULL << 9)
#define BTRFS_BLOCK_GROUP_RAID1C4	(1ULL << 10)
#define BTRFS_BLOCK_GROUP_TYPE_MASK	(BTRFS_BLOCK_GROUP_DATA |	\
					 BTRFS_BLOCK_GROUP_SYSTEM |	\
					 BTRFS_BLOCK_GROUP_METADATA)
#define BTRFS_BLOCK_GROUP_PROFILE_MASK	(BTRFS_BLOCK_GROUP_RAID0 |	\
					 BTRFS_BLOCK_GROUP_RAID1 |	\
					 BTRFS_BLOCK_GROUP_DUP |	\
					 BTRFS_BLOCK_GROUP_RAID10 |	\
					 BTRFS_BLOCK_GROUP_RAID5 |	\
					 BTRFS_BLOCK_GROUP_RAID6 |	\
					 BTRFS_BLOCK_GROUP_RAID1C3 |	\
					 BTRFS_BLOCK_GROUP_RAID1C4)

/* Extent item flags */
#define BTRFS_EXTENT_FLAG_DATA		(1ULL << 0)
#define BTRFS_EXTENT_FLAG_TREE_BLOCK	(1ULL << 1)
#define BTRFS_BLOCK_FLAG_FULL_BACKREF	(1ULL << 8)

/* File extent types and compression */
#define BTRFS_FILE_EXTENT_INLINE	0
#define BTRFS_FILE_EXTENT_REG		1
#define BTRFS_FILE_EXTENT_PREALLOC	2
#define BTRFS_COMPRESS_NONE		0
#define BTRFS_COMPRESS_ZLIB		1
#define BTRFS_COMPRESS_LZO		2
#define BTRFS_COMPRESS_ZSTD		3

/* Directory entry types */
#define BTRFS_FT_UNKNOWN	0
#define BTRFS_FT_REG_FILE	1
#define BTRFS_FT_DIR		2
#define BTRFS_FT_CHRDEV		3
#define BTRFS_FT_BLKDEV		4
#define BTRFS_FT_FIFO		5
#define BTRFS_FT_SOCK		6
#define BTRFS_FT_SYMLINK	7
#define BTRFS_FT_XATTR		8
#define BTRFS_FT_MAX		9
#define BTRFS_FT_ENCRYPTED	0x80

/* Inode flags */
#define BTRFS_INODE_NODATASUM		(1ULL << 0)
#define BTRFS_INODE_NODATACOW		(1ULL << 1)
#define BTRFS_INODE_READONLY		(1ULL << 2)
#define BTRFS_INODE_NOCOMPRESS		(1ULL << 3)
#define BTRFS_INODE_PREALLOC		(1ULL << 4)
#define BTRFS_INODE_SYNC		(1ULL << 5)
#define BTRFS_INODE_IMMUTABLE		(1ULL << 6)
#define BTRFS_INODE_APPEND		(1ULL << 7)
#define BTRFS_INODE_NODUMP		(1ULL << 8)
#define BTRFS_INODE_NOATIME		(1ULL << 9)
#define BTRFS_INODE_DIRSYNC		(1ULL << 10)
#define BTRFS_INODE_COMPRESS		(1ULL << 11)
#define BTRFS_INODE_ROOT_ITEM_INIT	(1ULL << 31)
#define BTRFS_INODE_RO_VERITY		(1ULL << 32)

#define BTRFS_ROOT_SUBVOL_RDONLY	(1ULL << 0)
#define BTRFS_FREE_SPACE_USING_BITMAPS	(1U << 0)

/* ---- structures ---- */

struct btrfs_disk_key {
	__le64 objectid;
	u8 type;
	__le64 offset;
} __packed;

/* CPU-order key used everywhere in memory */
struct btrfs_key {
	u64 objectid;
	u8 type;
	u64 offset;
};

struct btrfs_header {
	u8 csum[BTRFS_CSUM_SIZE];
	u8 fsid[BTRFS_FSID_SIZE];
	__le64 bytenr;
	__le64 flags;
	u8 chunk_tree_uuid[BTRFS_UUID_SIZE];
	__le64 generation;
	__le64 owner;
	__le32 nritems;
	u8 level;
} __packed;

struct btrfs_item {
	struct btrfs_disk_key key;
	__le32 offset;
	__le32 size;
} __packed;

struct btrfs_key_ptr {
	struct btrfs_disk_key key;
	__le64 blockptr;
	__le64 generation;
} __packed;

struct btrfs_dev_item {
	__le64 devid;
	__le64 total_bytes;
	__le64 bytes_used;
	__le32 io_align;
	__le32 io_width;
	__le32 sector_size;
	__le64 type;
	__le64 generation;
	__le64 start_offset;
	__le32 dev_group;
	u8 seek_speed;
	u8 bandwidth;
	u8 uuid[BTRFS_UUID_SIZE];
	u8 fsid[BTRFS_UUID_SIZE];
} __packed;

struct btrfs_stripe {
	__le64 devid;
	__le64 offset;
	u8 dev_uuid[BTRFS_UUID_SIZE];
} __packed;

struct btrfs_chunk {
	__le64 length;
	__le64 owner;
	__le64 stripe_len;
	__le64 type;
	__le32 io_align;
	__le32 io_width;
	__le32 sector_size;
	__le16 num_stripes;
	__le16 sub_stripes;
	struct btrfs_stripe stripe;	/* first of num_stripes */
} __packed;

struct btrfs_root_backup {
	__le64 tree_root;
	__le64 tree_root_gen;
	__le64 chunk_root;
	__le64 chunk_root_gen;
	__le64 extent_root;
	__le64 extent_root_gen;
	__le64 fs_root;
	__le64 fs_root_gen;
	__le64 dev_root;
	__le64 dev_root_gen;
	__le64 csum_root;
	__le64 csum_root_gen;
	__le64 total_bytes;
	__le64 bytes_used;
	__le64 num_devices;
	__le64 unused_64[4];
	u8 tree_root_level;
	u8 chunk_root_level;
	u8 extent_root_level;
	u8 fs_root_level;
	u8 dev_root_level;
	u8 csum_root_level;
	u8 unused_8[10];
} __packed;

struct btrfs_super_block {
	u8 csum[BTRFS_CSUM_SIZE];
	u8 fsid[BTRFS_FSID_SIZE];
	__le64 bytenr;
	__le64 flags;
	__le64 magic;
	__le64 generation;
	__le64 root;
	__le64 chunk_root;
	__le64 log_root;
	__le64 log_root_transid;
	__le64 total_bytes;
	__le64 bytes_used;
	__le64 root_dir_objectid;
	__le64 num_devices;
	__le32 sectorsize;
	__le32 nodesize;
	__le32 leafsize;
	__le32 stripesize;
	__le32 sys_chunk_array_size;
	__le64 chunk_root_generation;
	__le64 compat_flags;
	__le64 compat_ro_flags;
	__le64 incompat_flags;
	__le16 csum_type;
	u8 root_level;
	u8 chunk_root_level;
	u8 log_root_level;
	struct btrfs_dev_item dev_item;
	char label[BTRFS_LABEL_SIZE];
	__le64 cache_generation;
	__le64 uuid_tree_generation;
	u8 metadata_uuid[BTRFS_FSID_SIZE];
	__le64 nr_global_roots;
	__le64 remap_root;
	__le64 remap_root_generation;
	u8 remap_root_level;
	u8 reserved8[199];
	u8 sys_chunk_array[BTRFS_SYSTEM_CHUNK_ARRAY_SIZE];
	struct btrfs_root_backup super_roots[BTRFS_NUM_BACKUP_ROOTS];
	u8 padding[565];
} __packed;

struct btrfs_timespec {
	__le64 sec;
	__le32 nsec;
} __packed;

struct btrfs_inode_item {
	__le64 generation;
	__le64 transid;
	__le64 size;
	__le64 nbytes;
	__le64 block_group;
	__le32 nlink;
	__le32 uid;
	__le32 gid;
	__le32 mode;
	__le64 rdev;
	__le64 flags;
	__le64 sequence;
	__le64 reserved[4];
	struct btrfs_timespec atime;
	struct btrfs_timespec ctime;
	struct btrfs_timespec mtime;
	struct btrfs_timespec otime;
} __packed;

struct btrfs_inode_ref {
	__le64 index;
	__le16 name_len;
	/* name follows */
} __packed;

struct btrfs_inode_extref {
	__le64 parent_objectid;
	__le64 index;
	__le16 name_len;
	/* name follows */
} __packed;

struct btrfs_dir_item {
	struct btrfs_disk_key location;
	__le64 transid;
	__le16 data_len;
	__le16 name_len;
	u8 type;
	/* name, then data */
} __packed;

struct btrfs_dir_log_item {
	__le64 end;
} __packed;

struct btrfs_root_item {
	struct btrfs_inode_item inode;
	__le64 generation;
	__le64 root_dirid;
	__le64 bytenr;
	__le64 byte_limit;
	__le64 bytes_used;
	__le64 last_snapshot;
	__le64 flags;
	__le32 refs;
	struct btrfs_disk_key drop_progress;
	u8 drop_level;
	u8 level;
	/* the fields below exist only in items of the full size */
	__le64 generation_v2;
	u8 uuid[BTRFS_UUID_SIZE];
	u8 parent_uuid[BTRFS_UUID_SIZE];
	u8 received_uuid[BTRFS_UUID_SIZE];
	__le64 ctransid;
	__le64 otransid;
	__le64 stransid;
	__le64 rtransid;
	struct btrfs_timespec ctime;
	struct btrfs_timespec otime;
	struct btrfs_timespec stime;
	struct btrfs_timespec rtime;
	__le64 reserved[8];
} __packed;

/* Size of a root item written before generation_v2 existed */
#define BTRFS_ROOT_ITEM_LEGACY_SIZE	offsetof(struct btrfs_root_item, generation_v2)

struct btrfs_root_ref {
	__le64 dirid;
	__le64 sequence;
	__le16 name_len;
	/* name follows */
} __packed;

struct btrfs_file_extent_item {
	__le64 generation;
	__le64 ram_bytes;
	u8 compression;
	u8 encryption;
	__le16 other_encoding;
	u8 type;
	/* the fields below do not exist for inline extents */
	__le64 disk_bytenr;
	__le64 disk_num_bytes;
	__le64 offset;
	__le64 num_bytes;
} __packed;

#define BTRFS_FILE_EXTENT_INLINE_DATA_START \
	offsetof(struct btrfs_file_extent_item, disk_bytenr)

struct btrfs_extent_item {
	__le64 refs;
	__le64 generation;
	__le64 flags;
} __packed;

struct btrfs_tree_block_info {
	struct btrfs_disk_key key;
	u8 level;
} __packed;

struct btrfs_extent_inline_ref {
	u8 type;
	__le64 offset;
} __packed;

struct btrfs_extent_data_ref {
	__le64 root;
	__le64 objectid;
	__le64 offset;
	__le32 count;
} __packed;

struct btrfs_shared_data_ref {
	__le32 count;
} __packed;

struct btrfs_block_group_item {
	__le64 used;
	__le64 chunk_objectid;
	__le64 flags;
} __packed;

struct btrfs_dev_extent {
	__le64 chunk_tree;
	__le64 chunk_objectid;
	__le64 chunk_offset;
	__le64 length;
	u8 chunk_tree_uuid[BTRFS_UUID_SIZE];
} __packed;

struct btrfs_free_space_info {
	__le32 extent_count;
	__le32 flags;
} __packed;

struct btrfs_qgroup_status_item {
	__le64 version;
	__le64 generation;
	__le64 flags;
	__le64 rescan;
	__le64 enable_gen;	/* only with simple quotas */
} __packed;

struct btrfs_qgroup_info_item {
	__le64 generation;
	__le64 rfer;
	__le64 rfer_cmpr;
	__le64 excl;
	__le64 excl_cmpr;
} __packed;

struct btrfs_qgroup_limit_item {
	__le64 flags;
	__le64 max_rfer;
	__le64 max_excl;
	__le64 rsv_rfer;
	__le64 rsv_excl;
} __packed;

struct btrfs_dev_stats_item {
	__le64 values[5];
} __packed;

struct btrfs_balance_args {
	__le64 profiles;
	__le64 usage;
	__le64 devid;
	__le64 pstart;
	__le64 pend;
	__le64 vstart;
	__le64 vend;
	__le64 target;
	__le64 flags;
	__le64 limit;
	__le32 stripes_min;
	__le32 stripes_max;
	__le64 unused[6];
} __packed;

struct btrfs_balance_item {
	__le64 flags;
	struct btrfs_balance_args data;
	struct btrfs_balance_args meta;
	struct btrfs_balance_args sys;
	__le64 unused[4];
} __packed;

struct btrfs_dev_replace_item {
	__le64 src_devid;
	__le64 cursor_left;
	__le64 cursor_right;
	__le64 cont_reading_from_srcdev_mode;
	__le64 replace_state;
	__le64 time_started;
	__le64 time_stopped;
	__le64 num_write_errors;
	__le64 num_uncorrectable_read_errors;
} __packed;

struct btrfs_verity_descriptor_item {
	__le64 size;
	__le64 reserved[2];
	u8 encryption;
} __packed;

_Static_assert(sizeof(struct btrfs_disk_key) == 17, "disk_key");
_Static_assert(sizeof(struct btrfs_header) == 101, "header");
_Static_assert(sizeof(struct btrfs_item) == 25, "item");
_Static_assert(sizeof(struct btrfs_key_ptr) == 33, "key_ptr");
_Static_assert(sizeof(struct btrfs_super_block) == 4096, "super");
_Static_assert(sizeof(struct btrfs_dev_item) == 98, "dev_item");
_Static_assert(sizeof(struct btrfs_chunk) == 80, "chunk");
_Static_assert(sizeof(struct btrfs_root_backup) == 168, "backup");
_Static_assert(sizeof(struct btrfs_inode_item) == 160, "inode");
_Static_assert(sizeof(struct btrfs_root_item) == 439, "root_item");
_Static_assert(BTRFS_ROOT_ITEM_LEGACY_SIZE == 239, "legacy root item");
_Static_assert(sizeof(struct btrfs_file_extent_item) == 53, "file extent");
_Static_assert(BTRFS_FILE_EXTENT_INLINE_DATA_START == 21, "inline start");
_Static_assert(sizeof(struct btrfs_dir_item) == 30, "dir_item");
_Static_assert(sizeof(struct btrfs_dev_extent) == 48, "dev_extent");
_Static_assert(sizeof(struct btrfs_extent_data_ref) == 28, "data ref");
_Static_assert(sizeof(struct btrfs_block_group_item) == 24, "bg");
_Static_assert(offsetof(struct btrfs_super_block, sys_chunk_array) == 811, "sys array");
_Static_assert(offsetof(struct btrfs_super_block, label) == 299, "label");

/* ---- little-endian accessors ---- */

#define le8toh(x) (x)
#define htole8(x) (x)

/* getter/setter pair for a field of a packed structure */
#define BTRFS_SETGET(sname, member, bits)					\
static inline u##bits btrfs_##sname##_##member(const struct btrfs_##sname *s)	\
{ return le##bits##toh(s->member); }						\
static inline void btrfs_set_##sname##_##member(struct btrfs_##sname *s,	\
						u##bits v)			\
{ s->member = htole##bits(v); }

BTRFS_SETGET(header, bytenr, 64)
BTRFS_SETGET(header, flags, 64)
BTRFS_SETGET(header, generation, 64)
BTRFS_SETGET(header, owner, 64)
BTRFS_SETGET(header, nritems, 32)
BTRFS_SETGET(header, level, 8)

/* "raw": these take the item header; ctree.h has (leaf, slot) versions */
static inline u32 btrfs_raw_item_offset(const struct btrfs_item *item)
{ return le32toh(item->offset); }
static inline u32 btrfs_raw_item_size(const struct btrfs_item *item)
{ return le32toh(item->size); }
static inline void btrfs_set_raw_item_offset(struct btrfs_item *item, u32 v)
{ item->offset = htole32(v); }
static inline void btrfs_set_raw_item_size(struct btrfs_item *item, u32 v)
{ item->size = htole32(v); }

BTRFS_SETGET(key_ptr, blockptr, 64)
BTRFS_SETGET(key_ptr, generation, 64)

BTRFS_SETGET(super_block, bytenr, 64)
BTRFS_SETGET(super_block, flags, 64)
BTRFS_SETGET(super_block, magic, 64)
BTRFS_SETGET(super_block, generation, 64)
BTRFS_SETGET(super_block, root, 64)
BTRFS_SETGET(super_block, chunk_root, 64)
BTRFS_SETGET(super_block, log_root, 64)
BTRFS_SETGET(super_block, log_root_transid, 64)
BTRFS_SETGET(super_block, total_bytes, 64)
BTRFS_SETGET(super_block, bytes_used, 64)
BTRFS_SETGET(super_block, root_dir_objectid, 64)
BTRFS_SETGET(super_block, num_devices, 64)
BTRFS_SETGET(super_block, sectorsize, 32)
BTRFS_SETGET(super_block, nodesize, 32)
BTRFS_SETGET(super_block, leafsize, 32)
BTRFS_SETGET(super_block, stripesize, 32)
BTRFS_SETGET(super_block, sys_chunk_array_size, 32)
BTRFS_SETGET(super_block, chunk_root_generation, 64)
BTRFS_SETGET(super_block, compat_flags, 64)
BTRFS_SETGET(super_block, compat_ro_flags, 64)
BTRFS_SETGET(super_block, incompat_flags, 64)
BTRFS_SETGET(super_block, csum_type, 16)
BTRFS_SETGET(super_block, root_level, 8)
BTRFS_SETGET(super_block, chunk_root_level, 8)
BTRFS_SETGET(super_block, log_root_level, 8)
BTRFS_SETGET(super_block, cache_generation, 64)
BTRFS_SETGET(super_block, uuid_tree_generation, 64)
BTRFS_SETGET(super_block, nr_global_roots, 64)
BTRFS_SETGET(super_block, remap_root, 64)
BTRFS_SETGET(super_block, remap_root_generation, 64)
BTRFS_SETGET(super_block, remap_root_level, 8)

BTRFS_SETGET(root_backup, tree_root, 64)
BTRFS_SETGET(root_backup, tree_root_gen, 64)
BTRFS_SETGET(root_backup, chunk_root, 64)
BTRFS_SETGET(root_backup, chunk_root_gen, 64)
BTRFS_SETGET(root_backup, extent_root, 64)
BTRFS_SETGET(root_backup, extent_root_gen, 64)
BTRFS_SETGET(root_backup, fs_root, 64)
BTRFS_SETGET(root_backup, fs_root_gen, 64)
BTRFS_SETGET(root_backup, dev_root, 64)
BTRFS_SETGET(root_backup, dev_root_gen, 64)
BTRFS_SETGET(root_backup, csum_root, 64)
BTRFS_SETGET(root_backup, csum_root_gen, 64)
BTRFS_SETGET(root_backup, total_bytes, 64)
BTRFS_SETGET(root_backup, bytes_used, 64)
BTRFS_SETGET(root_backup, num_devices, 64)
BTRFS_SETGET(root_backup, tree_root_level, 8)
BTRFS_SETGET(root_backup, chunk_root_level, 8)
BTRFS_SETGET(root_backup, extent_root_level, 8)
BTRFS_SETGET(root_backup, fs_root_level, 8)
BTRFS_SETGET(root_backup, dev_root_level, 8)
BTRFS_SETGET(root_backup, csum_root_level, 8)

BTRFS_SETGET(dev_item, devid, 64)
BTRFS_SETGET(dev_item, total_bytes, 64)
BTRFS_SETGET(dev_item, bytes_used, 64)
BTRFS_SETGET(dev_item, io_align, 32)
BTRFS_SETGET(dev_item, io_width, 32)
BTRFS_SETGET(dev_item, sector_size, 32)
BTRFS_SETGET(dev_item, type, 64)
BTRFS_SETGET(dev_item, generation, 64)
BTRFS_SETGET(dev_item, start_offset, 64)
BTRFS_SETGET(dev_item, dev_group, 32)
BTRFS_SETGET(dev_item, seek_speed, 8)
BTRFS_SETGET(dev_item, bandwidth, 8)

BTRFS_SETGET(chunk, length, 64)
BTRFS_SETGET(chunk, owner, 64)
BTRFS_SETGET(chunk, stripe_len, 64)
BTRFS_SETGET(chunk, type, 64)
BTRFS_SETGET(chunk, io_align, 32)
BTRFS_SETGET(chunk, io_width, 32)
BTRFS_SETGET(chunk, sector_size, 32)
BTRFS_SETGET(chunk, num_stripes, 16)
BTRFS_SETGET(chunk, sub_stripes, 16)
BTRFS_SETGET(stripe, devid, 64)
BTRFS_SETGET(stripe, offset, 64)

static inline struct btrfs_stripe *btrfs_chunk_stripe(const struct btrfs_chunk *c, int nr)
{
	return (struct btrfs_stripe *)((u8 *)&((struct btrfs_chunk *)c)->stripe +
				       nr * sizeof(struct btrfs_stripe));
}

static inline size_t btrfs_chunk_item_size(int num_stripes)
{
	return sizeof(struct btrfs_chunk) +
	       (size_t)(num_stripes - 1) * sizeof(struct btrfs_stripe);
}

BTRFS_SETGET(timespec, sec, 64)
BTRFS_SETGET(timespec, nsec, 32)

BTRFS_SETGET(inode_item, generation, 64)
BTRFS_SETGET(inode_item, transid, 64)
BTRFS_SETGET(inode_item, size, 64)
BTRFS_SETGET(inode_item, nbytes, 64)
BTRFS_SETGET(inode_item, block_group, 64)
BTRFS_SETGET(inode_item, nlink, 32)
BTRFS_SETGET(inode_item, uid, 32)
BTRFS_SETGET(inode_item, gid, 32)
BTRFS_SETGET(inode_item, mode, 32)
BTRFS_SETGET(inode_item, rdev, 64)
BTRFS_SETGET(inode_item, flags, 64)
BTRFS_SETGET(inode_item, sequence, 64)

BTRFS_SETGET(inode_ref, index, 64)
BTRFS_SETGET(inode_ref, name_len, 16)
BTRFS_SETGET(inode_extref, parent_objectid, 64)
BTRFS_SETGET(inode_extref, index, 64)
BTRFS_SETGET(inode_extref, name_len, 16)

BTRFS_SETGET(dir_item, transid, 64)
BTRFS_SETGET(dir_item, data_len, 16)
BTRFS_SETGET(dir_item, name_len, 16)
BTRFS_SETGET(dir_item, type, 8)
BTRFS_SETGET(dir_log_item, end, 64)

BTRFS_SETGET(root_item, generation, 64)
BTRFS_SETGET(root_item, root_dirid, 64)
BTRFS_SETGET(root_item, bytenr, 64)
BTRFS_SETGET(root_item, byte_limit, 64)
BTRFS_SETGET(root_item, bytes_used, 64)
BTRFS_SETGET(root_item, last_snapshot, 64)
BTRFS_SETGET(root_item, flags, 64)
BTRFS_SETGET(root_item, refs, 32)
BTRFS_SETGET(root_item, drop_level, 8)
BTRFS_SETGET(root_item, level, 8)
BTRFS_SETGET(root_item, generation_v2, 64)
BTRFS_SETGET(root_item, ctransid, 64)
BTRFS_SETGET(root_item, otransid, 64)
BTRFS_SETGET(root_item, stransid, 64)
BTRFS_SETGET(root_item, rtransid, 64)

BTRFS_SETGET(root_ref, dirid, 64)
BTRFS_SETGET(root_ref, sequence, 64)
BTRFS_SETGET(root_ref, name_len, 16)

BTRFS_SETGET(file_extent_item, generation, 64)
BTRFS_SETGET(file_extent_item, ram_bytes, 64)
BTRFS_SETGET(file_extent_item, compression, 8)
BTRFS_SETGET(file_extent_item, encryption, 8)
BTRFS_SETGET(file_extent_item, other_encoding, 16)
BTRFS_SETGET(file_extent_item, type, 8)
BTRFS_SETGET(file_extent_item, disk_bytenr, 64)
BTRFS_SETGET(file_extent_item, disk_num_bytes, 64)
BTRFS_SETGET(file_extent_item, offset, 64)
BTRFS_SETGET(file_extent_item, num_bytes, 64)

BTRFS_SETGET(extent_item, refs, 64)
BTRFS_SETGET(extent_item, generation, 64)
BTRFS_SETGET(extent_item, flags, 64)
BTRFS_SETGET(tree_block_info, level, 8)
BTRFS_SETGET(extent_inline_ref, type, 8)
BTRFS_SETGET(extent_inline_ref, offset, 64)
BTRFS_SETGET(extent_data_ref, root, 64)
BTRFS_SETGET(extent_data_ref, objectid, 64)
BTRFS_SETGET(extent_data_ref, offset, 64)
BTRFS_SETGET(extent_data_ref, count, 32)
BTRFS_SETGET(shared_data_ref, count, 32)

BTRFS_SETGET(block_group_item, used, 64)
BTRFS_SETGET(block_group_item, chunk_objectid, 64)
BTRFS_SETGET(block_group_item, flags, 64)

BTRFS_SETGET(dev_extent, chunk_tree, 64)
BTRFS_SETGET(dev_extent, chunk_objectid, 64)
BTRFS_SETGET(dev_extent, chunk_offset, 64)
BTRFS_SETGET(dev_extent, length, 64)

BTRFS_SETGET(free_space_info, extent_count, 32)
BTRFS_SETGET(free_space_info, flags, 32)

BTRFS_SETGET(qgroup_status_item, version, 64)
BTRFS_SETGET(qgroup_status_item, generation, 64)
BTRFS_SETGET(qgroup_status_item, flags, 64)
BTRFS_SETGET(qgroup_status_item, rescan, 64)
BTRFS_SETGET(qgroup_status_item, enable_gen, 64)
BTRFS_SETGET(qgroup_info_item, generation, 64)
BTRFS_SETGET(qgroup_info_item, rfer, 64)
BTRFS_SETGET(qgroup_info_item, rfer_cmpr, 64)
BTRFS_SETGET(qgroup_info_item, excl, 64)
BTRFS_SETGET(qgroup_info_item, excl_cmpr, 64)
BTRFS_SETGET(qgroup_limit_item, flags, 64)
BTRFS_SETGET(qgroup_limit_item, max_rfer, 64)
BTRFS_SETGET(qgroup_limit_item, max_excl, 64)
BTRFS_SETGET(qgroup_limit_item, rsv_rfer, 64)
BTRFS_SETGET(qgroup_limit_item, rsv_excl, 64)

BTRFS_SETGET(verity_descriptor_item, size, 64)
BTRFS_SETGET(verity_descriptor_item, encryption, 8)

static inline void btrfs_disk_key_to_cpu(struct btrfs_key *cpu,
					 const struct btrfs_disk_key *disk)
{
	cpu->objectid = le64toh(disk->objectid);
	cpu->type = disk->type;
	cpu->offset = le64toh(disk->offset);
}

static inline void btrfs_cpu_key_to_disk(struct btrfs_disk_key *disk,
					 const struct btrfs_key *cpu)
{
	disk->objectid = htole64(cpu->objectid);
	disk->type = cpu->type;
	disk->offset = htole64(cpu->offset);
}

/* Keys order as an unsigned (objectid, type, offset) tuple. */
static inline int btrfs_comp_cpu_keys(const struct btrfs_key *a,
				      const struct btrfs_key *b)
{
	if (a->objectid != b->objectid)
		return a->objectid < b->objectid ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return 0;
}

/* Subvolume trees: the top level (5) and ids 256 and up. */
static inline bool btrfs_is_subvolume_id(u64 id)
{
	return id == BTRFS_FS_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

static inline u64 btrfs_sb_offset(int mirror)
{
	if (mirror == 0)
		return BTRFS_SUPER_INFO_OFFSET;
	return (16ULL * 1024) << (BTRFS_SUPER_MIRROR_SHIFT * mirror);
}

static inline u64 btrfs_header_backref_rev(const struct btrfs_header *h)
{
	return btrfs_header_flags(h) >> BTRFS_BACKREF_REV_SHIFT;
}

static inline u32 btrfs_leaf_data_size(u32 nodesize)
{
	return nodesize - sizeof(struct btrfs_header);
}

static inline u32 btrfs_max_item_size(u32 nodesize)
{
	return btrfs_leaf_data_size(nodesize) - sizeof(struct btrfs_item);
}

static inline u32 btrfs_nodeptrs_per_block(u32 nodesize)
{
	return btrfs_leaf_data_size(nodesize) / sizeof(struct btrfs_key_ptr);
}

static inline int btrfs_file_extent_inline_len(u32 item_size)
{
	return (int)item_size - (int)BTRFS_FILE_EXTENT_INLINE_DATA_START;
}

#endif /* TLOG_FORMAT_H */
