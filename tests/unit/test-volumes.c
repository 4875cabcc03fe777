// SPDX-License-Identifier: GPL-2.0-only
// Tests the chunk map (volumes.c): chunk validation, logical-to-physical mapping, sys_chunk_array.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "ctree.h"
#include "volumes.h"

/*
 * The chunk layout is the default mkfs.btrfs 1 GiB layout
 * (logical -> physical):
 *   DATA single      13631488 (8 MiB)     -> 13631488
 *   SYSTEM DUP       22020096 (8 MiB)     -> 22020096 and 30408704
 *   METADATA DUP     30408704 (53673984)  -> 38797312 and 92471296
 * Chunk validity rules are those of the kernel's btrfs_check_chunk_valid().
 */
#define MiB (1024ULL * 1024)

#define DATA_LOGICAL	13631488ULL
#define DATA_LEN	(8 * MiB)
#define SYS_LOGICAL	22020096ULL
#define SYS_LEN		(8 * MiB)
#define SYS_PHYS0	22020096ULL
#define SYS_PHYS1	30408704ULL
#define META_LOGICAL	30408704ULL
#define META_LEN	53673984ULL
#define META_PHYS0	38797312ULL
#define DEV_SIZE	(4096 * MiB)
#define META_PHYS1	92471296ULL

static struct tlog_fs *fs;

static void fs_setup(void)
{
	fs = calloc(1, sizeof(*fs));
	cr_assert_not_null(fs);
	fs->sectorsize = 4096;
	fs->nodesize = 16384;
	btrfs_set_dev_item_devid(&fs->super.dev_item, 1);
	btrfs_set_dev_item_total_bytes(&fs->super.dev_item, DEV_SIZE);
	chunk_map_init(&fs->chunks);
}

static void fs_teardown(void)
{
	chunk_map_release(&fs->chunks);
	free(fs);
	fs = NULL;
}

TestSuite(volumes, .init = fs_setup, .fini = fs_teardown);

/*
 * Fill @buf with a chunk item as mkfs writes it (owner 2, stripe_len and
 * io_align/io_width 65536, sector_size 4096, sub_stripes 1) with one stripe
 * on device 1 per entry of @phys.  Returns the item size.
 */
static u32 make_chunk(u8 *buf, u64 length, u64 type, int num_stripes, const u64 *phys)
{
	struct btrfs_chunk *c = (struct btrfs_chunk *)buf;
	u32 size = btrfs_chunk_item_size(num_stripes);

	memset(buf, 0, size);
	btrfs_set_chunk_length(c, length);
	btrfs_set_chunk_owner(c, BTRFS_EXTENT_TREE_OBJECTID);
	btrfs_set_chunk_stripe_len(c, BTRFS_STRIPE_LEN);
	btrfs_set_chunk_type(c, type);
	btrfs_set_chunk_io_align(c, 65536);
	btrfs_set_chunk_io_width(c, 65536);
	btrfs_set_chunk_sector_size(c, 4096);
	btrfs_set_chunk_num_stripes(c, (u16)num_stripes);
	btrfs_set_chunk_sub_stripes(c, 1);
	for (int i = 0; i < num_stripes; i++) {
		struct btrfs_stripe *s = btrfs_chunk_stripe(c, i);

		btrfs_set_stripe_devid(s, 1);
		btrfs_set_stripe_offset(s, phys[i]);
		memset(s->dev_uuid, 0xD0 + i, BTRFS_UUID_SIZE);
	}
	return size;
}

static int add_chunk(u64 logical, const u8 *buf, u32 size)
{
	return chunk_map_add(fs, &fs->chunks, logical, (const struct btrfs_chunk *)buf, size);
}

static void add_data_single(void)
{
	u8 buf[256];
	u64 phys[] = { DATA_LOGICAL };
	u32 size = make_chunk(buf, DATA_LEN, BTRFS_BLOCK_GROUP_DATA, 1, phys);

	cr_assert_eq(add_chunk(DATA_LOGICAL, buf, size), 0);
}

static void add_meta_dup(void)
{
	u8 buf[256];
	u64 phys[] = { META_PHYS0, META_PHYS1 };
	u32 size = make_chunk(buf, META_LEN,
			      BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP, 2, phys);

	cr_assert_eq(add_chunk(META_LOGICAL, buf, size), 0);
}

/* ---- adding and finding chunks ---- */

Test(volumes, find_single_chunk)
{
	const struct map_lookup *m;

	add_data_single();
	cr_assert_eq(fs->chunks.nr, 1);

	m = chunk_map_find(&fs->chunks, DATA_LOGICAL + 12345);
	cr_assert_not_null(m);
	cr_assert_eq(m->logical, DATA_LOGICAL);
	cr_assert_eq(m->length, DATA_LEN);
	cr_assert_eq(m->type, BTRFS_BLOCK_GROUP_DATA);
	cr_assert_eq(m->stripe_len, 65536);
	cr_assert_eq(m->num_stripes, 1);
	cr_assert_eq(m->stripes[0].devid, 1);
	cr_assert_eq(m->stripes[0].physical, DATA_LOGICAL);
	cr_assert_eq(m->stripes[0].dev_uuid[0], 0xD0);

	/* first and last byte are inside, the bytes around are not */
	cr_assert_eq(chunk_map_find(&fs->chunks, DATA_LOGICAL), m);
	cr_assert_eq(chunk_map_find(&fs->chunks, DATA_LOGICAL + DATA_LEN - 1), m);
	cr_assert_null(chunk_map_find(&fs->chunks, DATA_LOGICAL - 1));
	cr_assert_null(chunk_map_find(&fs->chunks, DATA_LOGICAL + DATA_LEN));
	cr_assert_null(chunk_map_find(&fs->chunks, 0));
}

Test(volumes, chunks_are_kept_sorted)
{
	/* added out of order; lookups must still find each one */
	add_meta_dup();
	add_data_single();
	cr_assert_eq(fs->chunks.nr, 2);
	cr_assert_eq(fs->chunks.maps[0].logical, DATA_LOGICAL);
	cr_assert_eq(fs->chunks.maps[1].logical, META_LOGICAL);
	cr_assert_eq(chunk_map_find(&fs->chunks, META_LOGICAL + META_LEN - 1)->logical,
		     META_LOGICAL);
	/* the gap between DATA's end (21 MiB) and META's start (29 MiB) maps nowhere */
	cr_assert_null(chunk_map_find(&fs->chunks, DATA_LOGICAL + DATA_LEN));
}

/* ---- mapping ---- */

Test(volumes, map_single)
{
	u64 phys[4] = { 0 };

	add_data_single();
	/* SINGLE: L -> stripe0.offset + (L - C); one copy */
	cr_assert_eq(btrfs_map_block(fs, DATA_LOGICAL + 4096 * 3, 4096, phys, 4), 1);
	cr_assert_eq(phys[0], DATA_LOGICAL + 4096 * 3);
}

Test(volumes, map_single_non_identity)
{
	u8 buf[256];
	u64 stripe[] = { 73 * MiB };	/* mkfs layout: DATA at 100 MiB -> 73 MiB */
	u64 phys[4] = { 0 };
	u32 size = make_chunk(buf, 64 * MiB, BTRFS_BLOCK_GROUP_DATA, 1, stripe);

	cr_assert_eq(add_chunk(100 * MiB, buf, size), 0);
	cr_assert_eq(btrfs_map_block(fs, 100 * MiB + 65536, 4096, phys, 4), 1);
	cr_assert_eq(phys[0], 73 * MiB + 65536);
}

Test(volumes, map_dup)
{
	u64 phys[4] = { 0 };

	add_meta_dup();
	/* DUP: two full copies, 38797312 + 16384 and 92471296 + 16384 */
	cr_assert_eq(btrfs_map_block(fs, META_LOGICAL + 16384, 16384, phys, 4), 2);
	cr_assert_eq(phys[0], 38813696ULL);
	cr_assert_eq(phys[1], 92487680ULL);
}

Test(volumes, map_whole_chunk)
{
	u64 phys[4] = { 0 };

	add_data_single();
	cr_assert_eq(btrfs_map_block(fs, DATA_LOGICAL, DATA_LEN, phys, 4), 1);
	cr_assert_eq(btrfs_map_block(fs, DATA_LOGICAL + DATA_LEN - 4096, 4096, phys, 4), 1);
	cr_assert_eq(phys[0], DATA_LOGICAL + DATA_LEN - 4096);
}

Test(volumes, map_range_crossing_chunk_end)
{
	u64 phys[4] = { 0 };

	add_data_single();
	cr_assert_eq(btrfs_map_block(fs, DATA_LOGICAL + DATA_LEN - 4096, 16384, phys, 4),
		     -EUCLEAN);
	cr_assert_eq(btrfs_map_block(fs, DATA_LOGICAL, DATA_LEN + 1, phys, 4), -EUCLEAN);
	/* a huge length must not wrap around */
	cr_assert_eq(btrfs_map_block(fs, DATA_LOGICAL + 4096, (u64)-1, phys, 4), -EUCLEAN);
}

Test(volumes, map_unmapped_address)
{
	u64 phys[4] = { 0 };

	add_data_single();
	cr_assert_eq(btrfs_map_block(fs, DATA_LOGICAL - 4096, 4096, phys, 4), -EUCLEAN);
	cr_assert_eq(btrfs_map_block(fs, DATA_LOGICAL + DATA_LEN, 4096, phys, 4), -EUCLEAN);
}

Test(volumes, map_raid0_not_supported)
{
	u8 buf[256];
	u64 stripes[] = { 1 * MiB, 200 * MiB };
	u64 phys[4] = { 0 };
	u32 size = make_chunk(buf, 128 * MiB,
			      BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID0, 2, stripes);

	/* a valid RAID0 chunk is accepted into the map ... */
	cr_assert_eq(add_chunk(1024 * MiB, buf, size), 0);
	cr_assert_not_null(chunk_map_find(&fs->chunks, 1024 * MiB));
	/* ... but mapping through it is refused */
	cr_assert_eq(btrfs_map_block(fs, 1024 * MiB, 4096, phys, 4), -EOPNOTSUPP);
}

Test(volumes, map_other_device_not_supported)
{
	u8 buf[256];
	u64 stripe[] = { DATA_LOGICAL };
	u64 phys[4] = { 0 };
	u32 size = make_chunk(buf, DATA_LEN, BTRFS_BLOCK_GROUP_DATA, 1, stripe);

	/* the only stripe lives on devid 2, the image is devid 1 */
	btrfs_set_stripe_devid(btrfs_chunk_stripe((struct btrfs_chunk *)buf, 0), 2);
	cr_assert_eq(add_chunk(DATA_LOGICAL, buf, size), 0);
	cr_assert_eq(btrfs_map_block(fs, DATA_LOGICAL, 4096, phys, 4), -EOPNOTSUPP);
}

/* ---- overlaps and duplicates ---- */

Test(volumes, overlap_rejected)
{
	u8 buf[256];
	u64 stripe[] = { 200 * MiB };
	u32 size = make_chunk(buf, DATA_LEN, BTRFS_BLOCK_GROUP_DATA, 1, stripe);

	add_data_single();
	/* starts inside the existing chunk */
	cr_assert_eq(add_chunk(DATA_LOGICAL + 4 * MiB, buf, size), -EUCLEAN);
	/* starts before it and runs into it */
	cr_assert_eq(add_chunk(DATA_LOGICAL - 4 * MiB, buf, size), -EUCLEAN);
	/* same start, other length */
	size = make_chunk(buf, 4 * MiB, BTRFS_BLOCK_GROUP_DATA, 1, stripe);
	cr_assert_eq(add_chunk(DATA_LOGICAL, buf, size), -EUCLEAN);
	cr_assert_eq(fs->chunks.nr, 1);
}

Test(volumes, adjacent_chunks_accepted)
{
	u8 buf[256];
	u64 stripe[] = { 200 * MiB };
	u32 size = make_chunk(buf, 4 * MiB, BTRFS_BLOCK_GROUP_DATA, 1, stripe);

	add_data_single();
	/* [C - 4 MiB, C) and [C + len, +4 MiB) touch but do not overlap */
	cr_assert_eq(add_chunk(DATA_LOGICAL - 4 * MiB, buf, size), 0);
	stripe[0] = 300 * MiB;
	size = make_chunk(buf, 4 * MiB, BTRFS_BLOCK_GROUP_DATA, 1, stripe);
	cr_assert_eq(add_chunk(DATA_LOGICAL + DATA_LEN, buf, size), 0);
	cr_assert_eq(fs->chunks.nr, 3);
}

Test(volumes, identical_duplicate_accepted)
{
	/* the sys array and the chunk tree both list SYSTEM chunks */
	u8 buf[256];
	u64 phys[] = { SYS_PHYS0, SYS_PHYS1 };
	u32 size = make_chunk(buf, SYS_LEN, BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_DUP,
			      2, phys);

	cr_assert_eq(add_chunk(SYS_LOGICAL, buf, size), 0);
	cr_assert_eq(add_chunk(SYS_LOGICAL, buf, size), 0);
	cr_assert_eq(fs->chunks.nr, 1);
}

Test(volumes, different_duplicate_rejected)
{
	u8 buf[256];
	u64 phys[] = { SYS_PHYS0, SYS_PHYS1 };
	u32 size = make_chunk(buf, SYS_LEN, BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_DUP,
			      2, phys);

	cr_assert_eq(add_chunk(SYS_LOGICAL, buf, size), 0);
	/* same start and length, second copy elsewhere */
	phys[1] = 100 * MiB;
	size = make_chunk(buf, SYS_LEN, BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_DUP,
			  2, phys);
	cr_assert_eq(add_chunk(SYS_LOGICAL, buf, size), -EUCLEAN);
	cr_assert_eq(fs->chunks.nr, 1);
}

/* ---- invalid chunks ---- */

/* A valid SINGLE DATA chunk in @buf, ready to be broken by the caller. */
static u32 valid_single(u8 *buf)
{
	u64 phys[] = { DATA_LOGICAL };

	return make_chunk(buf, DATA_LEN, BTRFS_BLOCK_GROUP_DATA, 1, phys);
}

static void assert_rejected(const u8 *buf, u32 size, const char *what)
{
	cr_assert_eq(add_chunk(DATA_LOGICAL, buf, size), -EUCLEAN, "%s was accepted", what);
	cr_assert_eq(fs->chunks.nr, 0, "%s was added", what);
}

Test(volumes, valid_single_accepted)
{
	u8 buf[256];
	u32 size = valid_single(buf);

	cr_assert_eq(add_chunk(DATA_LOGICAL, buf, size), 0);
}

/* A damaged chunk must never send a writer past the end of the image. */
Test(volumes, reject_stripe_past_device_end)
{
	u8 buf[256];
	u32 size = valid_single(buf);
	struct btrfs_stripe *s = btrfs_chunk_stripe((struct btrfs_chunk *)buf, 0);

	btrfs_set_stripe_offset(s, DEV_SIZE - DATA_LEN + 4096);
	assert_rejected(buf, size, "a stripe ending past the device");
	btrfs_set_stripe_offset(s, UINT64_MAX - 4095);
	assert_rejected(buf, size, "a stripe whose end overflows");
	btrfs_set_stripe_offset(s, DEV_SIZE - DATA_LEN);
	cr_assert_eq(add_chunk(DATA_LOGICAL, buf, size), 0, "a stripe ending at the device end");
}

Test(volumes, reject_dup_copy_past_device_end)
{
	u8 buf[256];
	u64 phys[] = { META_PHYS0, DEV_SIZE - META_LEN / 2 };
	u32 size = make_chunk(buf, META_LEN,
			      BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP, 2, phys);

	cr_assert_eq(add_chunk(META_LOGICAL, buf, size), -EUCLEAN);
	cr_assert_eq(fs->chunks.nr, 0);
}

Test(volumes, reject_no_stripes)
{
	u8 buf[256];
	u32 size = valid_single(buf);

	btrfs_set_chunk_num_stripes((struct btrfs_chunk *)buf, 0);
	assert_rejected(buf, size, "num_stripes 0");
}

Test(volumes, reject_item_size_mismatch)
{
	u8 buf[256];

	valid_single(buf);
	/* one stripe needs exactly 80 bytes */
	assert_rejected(buf, 112, "1 stripe in 112 bytes");
	assert_rejected(buf, 81, "1 stripe in 81 bytes");
	assert_rejected(buf, 79, "79-byte item");
}

Test(volumes, reject_stripe_len)
{
	u8 buf[256];
	u32 size = valid_single(buf);

	btrfs_set_chunk_stripe_len((struct btrfs_chunk *)buf, 32768);
	assert_rejected(buf, size, "stripe_len 32768");
	btrfs_set_chunk_stripe_len((struct btrfs_chunk *)buf, 131072);
	assert_rejected(buf, size, "stripe_len 131072");
}

Test(volumes, reject_sector_size)
{
	u8 buf[256];
	u32 size = valid_single(buf);

	btrfs_set_chunk_sector_size((struct btrfs_chunk *)buf, 8192);
	assert_rejected(buf, size, "sector_size 8192");
}

Test(volumes, reject_unaligned)
{
	u8 buf[256];
	u32 size = valid_single(buf);

	cr_assert_eq(add_chunk(DATA_LOGICAL + 512, buf, size), -EUCLEAN);
	btrfs_set_chunk_length((struct btrfs_chunk *)buf, DATA_LEN - 512);
	assert_rejected(buf, size, "unaligned length");
	btrfs_set_chunk_length((struct btrfs_chunk *)buf, 0);
	assert_rejected(buf, size, "length 0");
}

Test(volumes, reject_no_type_bit)
{
	u8 buf[256];
	u32 size = valid_single(buf);

	btrfs_set_chunk_type((struct btrfs_chunk *)buf, 0);
	assert_rejected(buf, size, "type 0");
}

Test(volumes, reject_two_profile_bits)
{
	u8 buf[256];
	u64 phys[] = { 100 * MiB, 200 * MiB };
	u32 size = make_chunk(buf, DATA_LEN, BTRFS_BLOCK_GROUP_DATA |
			      BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1, 2, phys);

	assert_rejected(buf, size, "DUP|RAID1");
}

Test(volumes, reject_system_with_data)
{
	u8 buf[256];
	u32 size = valid_single(buf);

	btrfs_set_chunk_type((struct btrfs_chunk *)buf,
			     BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_DATA);
	assert_rejected(buf, size, "SYSTEM|DATA");
	btrfs_set_chunk_type((struct btrfs_chunk *)buf,
			     BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_METADATA);
	assert_rejected(buf, size, "SYSTEM|METADATA");
}

Test(volumes, reject_unknown_type_bit)
{
	u8 buf[256];
	u32 size = valid_single(buf);

	/* bit 48 (AVAIL_ALLOC_BIT_SINGLE) is in-memory only */
	btrfs_set_chunk_type((struct btrfs_chunk *)buf, BTRFS_BLOCK_GROUP_DATA | (1ULL << 48));
	assert_rejected(buf, size, "bit 48");
}

Test(volumes, reject_stripe_count_for_profile)
{
	u8 buf[256];
	u64 phys[] = { 100 * MiB, 200 * MiB };
	u32 size;

	/* SINGLE needs 1 stripe, DUP needs 2 */
	size = make_chunk(buf, DATA_LEN, BTRFS_BLOCK_GROUP_DATA, 2, phys);
	assert_rejected(buf, size, "SINGLE with 2 stripes");
	size = make_chunk(buf, DATA_LEN, BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP,
			  1, phys);
	assert_rejected(buf, size, "DUP with 1 stripe");
}

Test(volumes, mixed_data_metadata_accepted)
{
	/* DATA|METADATA is a valid (mixed block group) type */
	u8 buf[256];
	u32 size = valid_single(buf);

	btrfs_set_chunk_type((struct btrfs_chunk *)buf,
			     BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA);
	cr_assert_eq(add_chunk(DATA_LOGICAL, buf, size), 0);
}

/* ---- sys_chunk_array ---- */

/* Append key (256, CHUNK_ITEM, @logical) + chunk to the super's array. */
static void sys_array_append(u64 logical, u64 length, u64 type, int num_stripes,
			     const u64 *phys)
{
	struct btrfs_super_block *sb = &fs->super;
	u32 cur = btrfs_super_block_sys_chunk_array_size(sb);
	struct btrfs_key k = {
		.objectid = BTRFS_FIRST_CHUNK_TREE_OBJECTID,
		.type = BTRFS_CHUNK_ITEM_KEY,
		.offset = logical,
	};
	struct btrfs_disk_key dk;
	u32 size;

	btrfs_cpu_key_to_disk(&dk, &k);
	memcpy(sb->sys_chunk_array + cur, &dk, sizeof(dk));
	cur += sizeof(dk);
	size = make_chunk(sb->sys_chunk_array + cur, length, type, num_stripes, phys);
	btrfs_set_super_block_sys_chunk_array_size(sb, cur + size);
}

static void sys_array_mkfs_default(void)
{
	u64 phys[] = { SYS_PHYS0, SYS_PHYS1 };

	sys_array_append(SYS_LOGICAL, SYS_LEN,
			 BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_DUP, 2, phys);
}

Test(volumes, sys_array_one_dup_chunk)
{
	const struct map_lookup *m;
	u64 phys[4] = { 0 };

	sys_array_mkfs_default();
	/* mkfs default: 17 + 112 = 129 bytes */
	cr_assert_eq(btrfs_super_block_sys_chunk_array_size(&fs->super), 129);
	cr_assert_eq(btrfs_read_sys_array(fs, &fs->chunks), 0);
	cr_assert_eq(fs->chunks.nr, 1);

	m = chunk_map_find(&fs->chunks, SYS_LOGICAL);
	cr_assert_not_null(m);
	cr_assert_eq(m->length, SYS_LEN);
	cr_assert_eq(m->type, BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_DUP);
	cr_assert_eq(m->num_stripes, 2);
	cr_assert_eq(m->stripes[0].physical, SYS_PHYS0);
	cr_assert_eq(m->stripes[1].physical, SYS_PHYS1);

	cr_assert_eq(btrfs_map_block(fs, SYS_LOGICAL + 65536, 16384, phys, 4), 2);
	cr_assert_eq(phys[0], SYS_PHYS0 + 65536);
	cr_assert_eq(phys[1], SYS_PHYS1 + 65536);
}

Test(volumes, sys_array_two_chunks)
{
	u64 phys[] = { 400 * MiB };

	sys_array_mkfs_default();
	sys_array_append(300 * MiB, 4 * MiB, BTRFS_BLOCK_GROUP_SYSTEM, 1, phys);
	cr_assert_eq(btrfs_super_block_sys_chunk_array_size(&fs->super), 129 + 97);
	cr_assert_eq(btrfs_read_sys_array(fs, &fs->chunks), 0);
	cr_assert_eq(fs->chunks.nr, 2);
	cr_assert_not_null(chunk_map_find(&fs->chunks, 300 * MiB));
}

Test(volumes, sys_array_truncated)
{
	sys_array_mkfs_default();
	/* the DUP chunk needs 112 bytes after its key; give it one less */
	btrfs_set_super_block_sys_chunk_array_size(&fs->super, 128);
	cr_assert_eq(btrfs_read_sys_array(fs, &fs->chunks), -EUCLEAN);
}

Test(volumes, sys_array_trailing_garbage)
{
	sys_array_mkfs_default();
	/* 20 bytes after the chunk: too short for another key + chunk */
	btrfs_set_super_block_sys_chunk_array_size(&fs->super, 129 + 20);
	cr_assert_eq(btrfs_read_sys_array(fs, &fs->chunks), -EUCLEAN);
}

Test(volumes, sys_array_too_small_or_large)
{
	sys_array_mkfs_default();
	btrfs_set_super_block_sys_chunk_array_size(&fs->super, 0);
	cr_assert_eq(btrfs_read_sys_array(fs, &fs->chunks), -EUCLEAN);
	btrfs_set_super_block_sys_chunk_array_size(&fs->super, 17 + 80 - 1);
	cr_assert_eq(btrfs_read_sys_array(fs, &fs->chunks), -EUCLEAN);
	btrfs_set_super_block_sys_chunk_array_size(&fs->super, BTRFS_SYSTEM_CHUNK_ARRAY_SIZE + 1);
	cr_assert_eq(btrfs_read_sys_array(fs, &fs->chunks), -EUCLEAN);
}

Test(volumes, sys_array_non_system_chunk)
{
	u64 phys[] = { META_PHYS0, META_PHYS1 };

	sys_array_append(META_LOGICAL, META_LEN,
			 BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP, 2, phys);
	cr_assert_eq(btrfs_read_sys_array(fs, &fs->chunks), -EUCLEAN);
	cr_assert_eq(fs->chunks.nr, 0);
}

Test(volumes, sys_array_wrong_key_type)
{
	sys_array_mkfs_default();
	/* the key type byte sits at offset 8 of the 17-byte key */
	fs->super.sys_chunk_array[8] = BTRFS_DEV_ITEM_KEY;
	cr_assert_eq(btrfs_read_sys_array(fs, &fs->chunks), -EUCLEAN);
}

/* ---- flag names ---- */

static void assert_flags_str(u64 flags, const char *expect)
{
	char buf[128];

	memset(buf, 'X', sizeof(buf));
	btrfs_bg_flags_to_str(flags, buf, sizeof(buf));
	cr_assert_str_eq(buf, expect);
}

Test(volumes, bg_flags_to_str)
{
	assert_flags_str(BTRFS_BLOCK_GROUP_DATA, "DATA|single");
	assert_flags_str(BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_DUP, "SYSTEM|DUP");
	assert_flags_str(BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP, "METADATA|DUP");
	assert_flags_str(BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA,
			 "DATA|METADATA|single");
	assert_flags_str(BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID1C3, "DATA|RAID1C3");
}

Test(volumes, bg_flags_to_str_truncates)
{
	char buf[8];

	memset(buf, 'X', sizeof(buf));
	btrfs_bg_flags_to_str(BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP,
			      buf, sizeof(buf));
	cr_assert_str_eq(buf, "METADAT");
}

Test(volumes, bg_profile_name)
{
	cr_assert_str_eq(btrfs_bg_profile_name(BTRFS_BLOCK_GROUP_DATA), "single");
	cr_assert_str_eq(btrfs_bg_profile_name(BTRFS_BLOCK_GROUP_METADATA |
					       BTRFS_BLOCK_GROUP_DUP), "dup");
	cr_assert_str_eq(btrfs_bg_profile_name(BTRFS_BLOCK_GROUP_RAID10), "raid10");
	cr_assert_str_eq(btrfs_bg_profile_name(BTRFS_BLOCK_GROUP_DUP |
					       BTRFS_BLOCK_GROUP_RAID1), "unknown");
}
