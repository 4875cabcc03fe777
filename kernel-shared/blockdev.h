/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Block-device layer.  Everything the library reads or writes goes through
 * a struct tlog_bdev, so a regular file, a block device and a test backend
 * (fault injection, tracing) look the same to the rest of the code.
 */
#ifndef TLOG_BLOCKDEV_H
#define TLOG_BLOCKDEV_H

#include <stdbool.h>
#include <sys/uio.h>
#include "format.h"

struct tlog_bdev;

struct tlog_bdev_ops {
	/* Read exactly @len bytes at @offset; -EIO (with context) when short. */
	int (*read)(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset);
	/* Scatter read; optional (the layer falls back to one read per piece). */
	int (*readv)(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset);
	int (*write)(struct tlog_bdev *bdev, const void *buf, size_t len, u64 offset);
	/*
	 * Gather write: one write of consecutive bytes from several buffers;
	 * optional (the layer falls back to one write per piece).
	 */
	int (*writev)(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset);
	int (*flush)(struct tlog_bdev *bdev);
	/* Hint that [offset, offset + len) will be read soon; may do nothing. */
	void (*readahead)(struct tlog_bdev *bdev, u64 offset, u64 len);
	/*
	 * Reading in place (below); optional, but a backend with map_begin
	 * has all but map_willneed.  map_begin: 0 when the bytes are mapped
	 * read-only and held still from now on, or -errno with the reason
	 * in the error context; map_read: where the bytes at @offset are
	 * (in range); map_willneed: they are needed now; map_revoked:
	 * whether someone needs the bytes to change; map_end lets them.
	 */
	int (*map_begin)(struct tlog_bdev *bdev);
	const u8 *(*map_read)(struct tlog_bdev *bdev, u64 offset, size_t len);
	void (*map_willneed)(struct tlog_bdev *bdev, u64 offset, u64 len);
	bool (*map_revoked)(struct tlog_bdev *bdev);
	void (*map_end)(struct tlog_bdev *bdev);
	/* tlog_bdev_clone_from(); optional (NULL: -EOPNOTSUPP). */
	int (*clone_from)(struct tlog_bdev *bdev, int src_fd, u64 src_off, u64 len, u64 offset);
	void (*close)(struct tlog_bdev *bdev);
};

struct tlog_bdev {
	const struct tlog_bdev_ops *ops;
	int refs;		/* tlog_bdev_get() and tlog_bdev_close() */
	char *name;		/* for messages */
	u64 size;		/* bytes addressable */
	bool writable;
	bool is_blockdev;
	void *priv;		/* backend state */
	int map_users;		/* tlog_bdev_map_begin() not ended yet */
	/* statistics, for benchmarks and tests */
	u64 nr_reads;
	u64 nr_writes;
	u64 bytes_read;
	u64 bytes_written;
};

#define TLOG_BDEV_RDONLY	0
#define TLOG_BDEV_RDWR		1

/*
 * Open a regular file or block device; anything else (a FIFO, a directory)
 * is refused without blocking.  RDWR claims the target (claim.h): -EBUSY
 * when it is mounted or held exclusively, -TLOG_ELOCKED when another
 * process holds its lock.  Writes past the end of the target are refused
 * with -EIO.  Returns 0 or -errno, with the reason in the error context.
 */
int tlog_bdev_open_file(const char *path, int mode, struct tlog_bdev **ret);
/* Take a reference: the device is closed by the last tlog_bdev_close(). */
struct tlog_bdev *tlog_bdev_get(struct tlog_bdev *bdev);
void tlog_bdev_close(struct tlog_bdev *bdev);

/*
 * Reading in place.  Tree blocks are checked once and then trusted, so a
 * copy of them that nobody else can change is what the block cache
 * normally holds; copying a block out of the page cache is a fifth of a
 * warm walk, though.  A device that can promise its bytes stay put reads
 * in place instead: the file backend maps a regular file opened read-only
 * under a read lease (fcntl(F_SETLEASE)), which the kernel grants only
 * while nobody has the file open for writing (a read-write loop device
 * included) and which makes anyone who then opens it for writing or
 * truncates it wait until the lease is given back.  The kernel asks for it
 * back with SIGIO: the layer notes that (installing a handler when SIGIO
 * has none, and not mapping when the program has its own), and
 * tlog_bdev_map_revoked() turns true.  Users then copy what they still use
 * and end their use; the last tlog_bdev_map_end() gives the lease back.
 * The mapping itself stays until the device is closed, so a pointer into
 * it never faults.  A writer the lease holds back longer than the
 * kernel's lease-break-time (45 s) proceeds anyway; users check what they
 * copy then.
 *
 * tlog_bdev_map_begin() is true when the device's bytes can be read in
 * place from now on (counting one more user), false when not: another
 * backend, a block device, a writable open, a file someone writes, a
 * filesystem without leases, tmpfs (whose holes a mapping fills).
 * tlog_bdev_map_read() is where @len bytes at @offset are then (NULL, the
 * reason recorded, when past the end), counted in the statistics as a
 * read; tlog_bdev_map_willneed() asks for bytes needed now at once, in
 * one request, rather than as a hint (tlog_bdev_readahead(), which may
 * queue), so the first touch waits only for them.
 */
bool tlog_bdev_map_begin(struct tlog_bdev *bdev);
const u8 *tlog_bdev_map_read(struct tlog_bdev *bdev, size_t len, u64 offset);
void tlog_bdev_map_willneed(struct tlog_bdev *bdev, u64 offset, u64 len);
bool tlog_bdev_map_revoked(struct tlog_bdev *bdev);
void tlog_bdev_map_end(struct tlog_bdev *bdev);

/*
 * A device in memory of @size bytes, zeroed, for tests that need no file
 * and no root: mkfs, transactions and replay run on it as on an image.
 * Pages are only backed once written (calloc of a large size maps zero
 * pages), so a 1 GiB device costs what is written to it.
 */
int tlog_bdev_create_memory(const char *name, u64 size, struct tlog_bdev **ret);
/* The bytes of a memory device, to inspect or damage them; NULL for others. */
u8 *tlog_bdev_memory_data(struct tlog_bdev *bdev);

/*
 * Fault injection, for testing crash safety: a backend that passes
 * everything to @inner (which it then owns and closes) except writes from
 * the @nth on (counting from 1):
 *	TLOG_FAULT_FAIL	they and all later writes and flushes fail with EIO;
 *	TLOG_FAULT_DROP	they and all later writes and flushes are silently
 *			discarded and report success, as on a power cut.
 */
#define TLOG_FAULT_FAIL		1
#define TLOG_FAULT_DROP		2
int tlog_bdev_wrap_fault(struct tlog_bdev *inner, int mode, u64 nth, struct tlog_bdev **ret);

/*
 * Copy-on-write, for trying out changes to an image without touching it
 * (check's dry replay of a log): a writable device of @inner's size that
 * reads from @inner except the bytes written to it, which it keeps in
 * memory (4 KiB pages, filled from @inner on the first write to them, so
 * writes of any size and alignment work).  @inner is never written and
 * may be read-only; the wrapper takes a reference of its own on it, so
 * the caller closes both.  Flushes do nothing.  Memory grows with what
 * is written: tlog_bdev_cow_pages() says how many pages are held (0 for
 * other devices).
 */
int tlog_bdev_wrap_cow(struct tlog_bdev *inner, struct tlog_bdev **ret);
size_t tlog_bdev_cow_pages(struct tlog_bdev *bdev);


/*
 * Superblocks held back, so that a filesystem being built is never seen
 * half made (mkfs --rootdir): the bytes of a write that fall in the
 * BTRFS_SUPER_INFO_SIZE bytes of a superblock copy (btrfs_sb_offset(),
 * the copies that start inside the device) are kept in memory, and reads
 * there see them; everything else passes to @inner (which the wrapper
 * then owns and closes).  tlog_bdev_release_super() flushes @inner,
 * writes the held mirrors, flushes, writes the primary copy last and
 * flushes again, so that no superblock reaches the device before the
 * blocks it points to, and a failure before the last write leaves no
 * primary superblock; from
 * then on the wrapper holds nothing back.  A mirror that the held
 * primary puts past the end of its device (dev_item total_bytes: the
 * filesystem was shrunk after the mirror was written) is not written:
 * it is stale, and a file target may already be cut shorter.  Closing the wrapper before
 * that writes no superblock.  Releasing a device that is not such a
 * wrapper is -EINVAL.
 */
int tlog_bdev_wrap_hold_super(struct tlog_bdev *inner, struct tlog_bdev **ret);
int tlog_bdev_release_super(struct tlog_bdev *bdev);
/*
 * Zero every superblock copy that starts inside @bdev (a copy cut by the
 * end of the device: what of it is inside) and flush: what was on the
 * target no longer looks like a btrfs while the new one is made.  On the
 * hold wrapper the device below is wiped (zeros held back would wipe
 * nothing) and reads through the wrapper see zeros where no superblock
 * is held yet.
 */
int tlog_bdev_wipe_super(struct tlog_bdev *bdev);
/*
 * Make [@offset, @offset + @len) of @bdev share the bytes of @src_fd at
 * @src_off (FICLONERANGE); @len, @offset and @src_off are multiples of
 * 4096.  Counts as one write (statistics; fault injection fails or drops
 * it as a write).  -EOPNOTSUPP, with nothing done and no error context,
 * where the device cannot: a memory or copy-on-write device, a block
 * device, another filesystem than @src_fd's, one without reflink, or
 * offsets it will not clone at (the ioctl's EOPNOTSUPP, EXDEV, EINVAL);
 * the caller then writes the bytes.  The hold wrapper passes clones
 * through, except one that touches a held superblock copy (-EOPNOTSUPP:
 * written, it is held).
 */
int tlog_bdev_clone_from(struct tlog_bdev *bdev, int src_fd, u64 src_off, u64 len, u64 offset);

int tlog_bdev_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset);
/* Read consecutive bytes at @offset into the pieces of @iov, in order. */
int tlog_bdev_readv(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset);
int tlog_bdev_write(struct tlog_bdev *bdev, const void *buf, size_t len, u64 offset);
/*
 * Write consecutive bytes at @offset from the pieces of @iov, in order, in
 * as few writes as the device can.  Each piece counts as a write, as if
 * written by tlog_bdev_write() (statistics; fault injection fails or drops
 * from its N-th piece on, the pieces before it written: a torn large
 * write).  The file backend sends it in large writes, with O_DIRECT
 * where the target takes it and @offset and the total are multiples of
 * 4096 (the bytes go through an aligned buffer of its own, so the pieces
 * may lie anywhere).  A flush is still what makes it durable.  The hold
 * wrapper keeps what falls in a held superblock copy, as for a write.  A
 * device without the operation gets one tlog_bdev_write() per piece.
 */
int tlog_bdev_writev(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset);
int tlog_bdev_flush(struct tlog_bdev *bdev);
void tlog_bdev_readahead(struct tlog_bdev *bdev, u64 offset, u64 len);

#endif
