// SPDX-License-Identifier: GPL-2.0-only
/*
 * The file backend of the block-device layer: pread/pwrite on a regular
 * file or a block device.  Opened for writing, the target is claimed
 * (claim.h): not mounted, exclusive, locked until it is closed.
 *
 * Gather writes (a commit's tree blocks, sorted and coalesced) go through
 * an aligned buffer and, where the target takes it, a second descriptor
 * opened with O_DIRECT: hundreds of MiB of fresh metadata gain nothing
 * from the page cache, and copying them into it costs more than the
 * device does.  Reads stay buffered on the first descriptor; the kernel
 * writes back and drops cached pages of a range written directly, so a
 * later read sees the new bytes, and fsync() of either descriptor flushes
 * the whole file, so flushes are unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/fs.h>
#include <linux/magic.h>

#include "blockdev.h"
#include "claim.h"
#include "errctx.h"
#include "hugemem.h"

struct hint_worker;

struct file_bdev {
	int fd;
	struct hint_worker *hints;	/* read-ahead hints, started on the first one */
	int disk_fd;		/* a partition's whole disk, held for its lock; or -1 */
	struct stat st;		/* what was opened, for the check before writing */
	bool write_checked;	/* the first write looked for a mount again */
	bool direct_tried;	/* direct_fd has been opened, or refused */
	int direct_fd;		/* the target again with O_DIRECT; or -1 */
	u8 *bounce;		/* FILE_BOUNCE_SIZE bytes (hugemem.h: aligned for O_DIRECT) */
	/* reading in place (blockdev.h): the mapping and its lease */
	u8 *map;		/* the whole file, read-only; unmapped at close */
	bool leased;		/* the read lease is held */
	atomic_bool revoked;	/* the kernel asked for the lease back */
	atomic_uint breaks_seen; /* lease_breaks when last looked at */
	struct file_bdev *leased_next; /* on leased_files */
};

/* What O_DIRECT asks of offset, length and buffer (any logical block size up to a page). */
#define FILE_DIRECT_ALIGN	4096
/* The largest single write of a gather write. */
#define FILE_BOUNCE_SIZE	(4U << 20)
_Static_assert(FILE_BOUNCE_SIZE % HUGEMEM_ALIGN == 0, "the bounce buffer is whole huge pages");

static int file_fd(struct tlog_bdev *bdev)
{
	return ((struct file_bdev *)bdev->priv)->fd;
}

static int file_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset)
{
	size_t done = 0;

	while (done < len) {
		ssize_t ret = pread(file_fd(bdev), (char *)buf + done, len - done,
				    (off_t)(offset + done));

		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return tlog_error(-errno, "read of %zu bytes at %llu failed: %s",
					  len, (unsigned long long)offset, strerror(errno));
		}
		if (ret == 0)
			return tlog_error(-EIO, "image ends before byte %llu (size %llu)",
					  (unsigned long long)(offset + len),
					  (unsigned long long)bdev->size);
		done += ret;
	}
	return 0;
}

static int file_readv(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset)
{
	size_t total = 0;
	ssize_t ret;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	do {
		ret = preadv(file_fd(bdev), iov, iovcnt, (off_t)offset);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return tlog_error(-errno, "read of %zu bytes at %llu failed: %s",
				  total, (unsigned long long)offset, strerror(errno));
	if ((size_t)ret != total)
		return tlog_error(-EIO, "short read of %zu bytes at %llu", total,
				  (unsigned long long)offset);
	return 0;
}

/*
 * The lock keeps other writers out but not the kernel: a loop mount of an
 * image file ignores it.  A command may sit at a question for minutes
 * after it opened the image, so the mount check runs again before the
 * first byte is written.
 */
static int file_check_before_write(struct tlog_bdev *bdev)
{
	struct file_bdev *fb = bdev->priv;
	char where[PATH_MAX];

	if (fb->write_checked)
		return 0;
	fb->write_checked = true;
	if (tlog_target_mounted(&fb->st, where, sizeof(where)))
		return tlog_error(-EBUSY, "mounted on %s", where);
	return 0;
}

/* Write all of @buf at @offset on @fd; *@done says how much went, also on failure. */
static int pwrite_all(int fd, const u8 *buf, size_t len, u64 offset, size_t *done)
{
	*done = 0;
	while (*done < len) {
		ssize_t ret = pwrite(fd, buf + *done, len - *done, (off_t)(offset + *done));

		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -errno;
		if (ret == 0)
			return -EIO;
		*done += ret;
	}
	return 0;
}

static int write_failed(int err, size_t len, u64 offset)
{
	return tlog_error(err, "write of %zu bytes at %llu failed: %s", len,
			  (unsigned long long)offset, strerror(-err));
}

static int file_write(struct tlog_bdev *bdev, const void *buf, size_t len, u64 offset)
{
	size_t done;
	int err = file_check_before_write(bdev);

	if (err)
		return err;
	err = pwrite_all(file_fd(bdev), buf, len, offset, &done);
	return err ? write_failed(err, len, offset) : 0;
}

/*
 * The direct descriptor, opened on first use through /proc/self/fd: that
 * is the very file already opened and claimed (the name may have been
 * swapped since), and a block device held with O_EXCL takes a second open
 * without it.  -1 where O_DIRECT is refused (tmpfs before Linux 6.6, some
 * FUSE filesystems) or /proc is missing: gather writes are then buffered.
 */
static int file_direct_fd(struct file_bdev *fb)
{
	char path[64];

	if (fb->direct_tried)
		return fb->direct_fd;
	fb->direct_tried = true;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fb->fd);
	fb->direct_fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	return fb->direct_fd;
}

static void file_drop_direct(struct file_bdev *fb)
{
	if (fb->direct_fd >= 0)
		close(fb->direct_fd);
	fb->direct_fd = -1;
}

/*
 * Write @len bytes of the bounce buffer at @offset: directly when both are
 * aligned, buffered otherwise.  A direct write refused with EINVAL before
 * any byte went (a filesystem that takes the open but not the write)
 * turns direct writes off for good; whatever a short direct write left
 * is written buffered.
 */
static int file_write_bounce(struct tlog_bdev *bdev, size_t len, u64 offset)
{
	struct file_bdev *fb = bdev->priv;
	size_t done = 0;
	int err;

	if (!((len | offset) & (FILE_DIRECT_ALIGN - 1)) && file_direct_fd(fb) >= 0) {
		err = pwrite_all(fb->direct_fd, fb->bounce, len, offset, &done);
		if (err == -EINVAL && done == 0)
			file_drop_direct(fb);
		else if (err)
			return write_failed(err, len, offset);
	}
	return file_write(bdev, fb->bounce + done, len - done, offset + done);
}

/*
 * The pieces are copied into the bounce buffer and written a buffer at a
 * time, so that the pieces need no alignment and a commit's thousands of
 * blocks take a few hundred writes.  Without memory for the buffer, each
 * piece is written on its own.
 */
static int file_writev(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset)
{
	struct file_bdev *fb = bdev->priv;
	size_t in_piece = 0;
	int i = 0, err = file_check_before_write(bdev);

	if (err)
		return err;
	if (!fb->bounce)
		fb->bounce = hugemem_alloc(FILE_BOUNCE_SIZE);
	if (!fb->bounce) {
		for (; i < iovcnt; offset += iov[i].iov_len, i++) {
			err = file_write(bdev, iov[i].iov_base, iov[i].iov_len, offset);
			if (err)
				return err;
		}
		return 0;
	}
	while (i < iovcnt) {
		size_t fill = 0;

		while (i < iovcnt && fill < FILE_BOUNCE_SIZE) {
			size_t n = iov[i].iov_len - in_piece;

			if (n > FILE_BOUNCE_SIZE - fill)
				n = FILE_BOUNCE_SIZE - fill;
			memcpy(fb->bounce + fill, (const u8 *)iov[i].iov_base + in_piece, n);
			fill += n;
			in_piece += n;
			if (in_piece == iov[i].iov_len) {
				i++;
				in_piece = 0;
			}
		}
		err = file_write_bounce(bdev, fill, offset);
		if (err)
			return err;
		offset += fill;
	}
	return 0;
}

static int file_flush(struct tlog_bdev *bdev)
{
	if (fsync(file_fd(bdev)) < 0)
		return tlog_error(-errno, "flush failed: %s", strerror(errno));
	return 0;
}

/*
 * Read-ahead hints go to a thread of their own.  posix_fadvise(WILLNEED)
 * is not free: it allocates the page cache pages and queues their reads
 * before it returns, 1 to 5 ms for 4 MiB on a cold cache here, which is
 * as long as a walk takes to use what it already has.  Handed over, the
 * hints are set up while the walk goes on, and its reads find the pages
 * in flight.  The worker starts with the first hint and stops at close,
 * dropping what it has not got to (hints only: nothing depends on them);
 * a full queue or a thread that cannot start gives the hint inline.
 */
#define HINT_QUEUE	64

struct hint_worker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int fd;
	bool stop;
	unsigned int head, tail;	/* queued: [tail, head) modulo HINT_QUEUE */
	struct { u64 offset, len; } queue[HINT_QUEUE];
};

static void *hint_worker_run(void *arg)
{
	struct hint_worker *hw = arg;

	pthread_mutex_lock(&hw->lock);
	for (;;) {
		u64 offset, len;

		while (hw->head == hw->tail && !hw->stop)
			pthread_cond_wait(&hw->wake, &hw->lock);
		if (hw->stop)
			break;
		offset = hw->queue[hw->tail % HINT_QUEUE].offset;
		len = hw->queue[hw->tail % HINT_QUEUE].len;
		hw->tail++;
		pthread_mutex_unlock(&hw->lock);
		posix_fadvise(hw->fd, (off_t)offset, (off_t)len, POSIX_FADV_WILLNEED);
		pthread_mutex_lock(&hw->lock);
	}
	pthread_mutex_unlock(&hw->lock);
	return NULL;
}

static struct hint_worker *hint_worker_start(int fd)
{
	struct hint_worker *hw = calloc(1, sizeof(*hw));

	if (!hw)
		return NULL;
	hw->fd = fd;
	pthread_mutex_init(&hw->lock, NULL);
	pthread_cond_init(&hw->wake, NULL);
	if (pthread_create(&hw->thread, NULL, hint_worker_run, hw)) {
		pthread_cond_destroy(&hw->wake);
		pthread_mutex_destroy(&hw->lock);
		free(hw);
		return NULL;
	}
	return hw;
}

static void hint_worker_stop(struct hint_worker *hw)
{
	if (!hw)
		return;
	pthread_mutex_lock(&hw->lock);
	hw->stop = true;
	pthread_cond_signal(&hw->wake);
	pthread_mutex_unlock(&hw->lock);
	pthread_join(hw->thread, NULL);
	pthread_cond_destroy(&hw->wake);
	pthread_mutex_destroy(&hw->lock);
	free(hw);
}

/* Queue a hint; false when the queue is full. */
static bool hint_worker_queue(struct hint_worker *hw, u64 offset, u64 len)
{
	bool queued = false;

	pthread_mutex_lock(&hw->lock);
	if (hw->head - hw->tail < HINT_QUEUE) {
		hw->queue[hw->head % HINT_QUEUE].offset = offset;
		hw->queue[hw->head % HINT_QUEUE].len = len;
		hw->head++;
		queued = true;
		pthread_cond_signal(&hw->wake);
	}
	pthread_mutex_unlock(&hw->lock);
	return queued;
}

static void file_readahead(struct tlog_bdev *bdev, u64 offset, u64 len)
{
	struct file_bdev *fb = bdev->priv;

	if (!fb->hints)
		fb->hints = hint_worker_start(fb->fd);
	if (fb->hints && hint_worker_queue(fb->hints, offset, len))
		return;
	posix_fadvise(fb->fd, (off_t)offset, (off_t)len, POSIX_FADV_WILLNEED);
}

/*
 * A clone the target's filesystem refuses is not an error: the caller
 * writes the bytes instead.  EINVAL covers offsets it will not clone at
 * (its block size above 4 KiB) as well as a source that is no regular
 * file; both mean "write it".
 */
static int file_clone_from(struct tlog_bdev *bdev, int src_fd, u64 src_off, u64 len,
			   u64 offset)
{
	struct file_clone_range range = {
		.src_fd = src_fd, .src_offset = src_off, .src_length = len,
		.dest_offset = offset,
	};
	int err;

	if (bdev->is_blockdev)
		return -EOPNOTSUPP;
	err = file_check_before_write(bdev);
	if (err)
		return err;
	if (ioctl(file_fd(bdev), FICLONERANGE, &range) == 0)
		return 0;
	err = -errno;
	if (err == -EOPNOTSUPP || err == -EXDEV || err == -EINVAL || err == -ENOTTY)
		return -EOPNOTSUPP;
	return tlog_error(err, "clone of %llu bytes at %llu from offset %llu failed: %s",
			  (unsigned long long)len, (unsigned long long)offset,
			  (unsigned long long)src_off, strerror(-err));
}

/* ---- reading in place: a read lease and a mapping ---- */

/*
 * Lease breaks come as SIGIO, whose default is to end the program; the
 * handler only counts them, and each device asks the kernel whether the
 * break was its own.  A program with a SIGIO handler of its own keeps it,
 * and its files are read, not mapped.
 */
static atomic_uint lease_breaks;
static pthread_mutex_t lease_lock = PTHREAD_MUTEX_INITIALIZER;
static struct file_bdev *leased_files;	/* this process's leases, under lease_lock */

static void lease_break_handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&lease_breaks, 1);
}

static bool lease_signal_ready(void)
{
	static bool installed;
	struct sigaction old, sa = { .sa_handler = lease_break_handler, .sa_flags = SA_RESTART };

	if (installed)
		return true;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGIO, NULL, &old) < 0 || old.sa_handler != SIG_DFL ||
	    (old.sa_flags & SA_SIGINFO))
		return false;
	installed = sigaction(SIGIO, &sa, NULL) == 0;
	return installed;
}

/* Whether this process holds a read lease on the file @st names. */
static bool file_leased_here(const struct stat *st)
{
	bool found = false;

	pthread_mutex_lock(&lease_lock);
	for (struct file_bdev *fb = leased_files; fb && !found; fb = fb->leased_next)
		found = fb->st.st_dev == st->st_dev && fb->st.st_ino == st->st_ino;
	pthread_mutex_unlock(&lease_lock);
	return found;
}

static void lease_forget(struct file_bdev *fb)
{
	struct file_bdev **pp = &leased_files;

	while (*pp && *pp != fb)
		pp = &(*pp)->leased_next;
	if (*pp)
		*pp = fb->leased_next;
}

/*
 * On tmpfs (and ramfs) the page cache is the file: a fault on a hole of a
 * mapping allocates a page in the file, shared or private, where read()
 * would only see zeros.  A tree block of an image copied with
 * cp --sparse=always has holes wherever a page of it was zero (a leaf's
 * free middle), so reading it in place would fill them: the image's
 * data map would change and memory be spent by a reader.  Read those.
 */
static bool file_on_memory_fs(int fd)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) == 0 &&
	       (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC);
}

static int file_map_begin(struct tlog_bdev *bdev)
{
	struct file_bdev *fb = bdev->priv;
	int err = 0;

	pthread_mutex_lock(&lease_lock);
	if (bdev->writable || !S_ISREG(fb->st.st_mode) || bdev->size == 0 ||
	    bdev->size > SIZE_MAX || fb->map) {
		err = tlog_error(-EOPNOTSUPP, "not a regular file open read-only");
		goto out;
	}
	if (!lease_signal_ready()) {
		err = tlog_error(-EOPNOTSUPP, "SIGIO has a handler of the program's");
		goto out;
	}
	if (file_on_memory_fs(fb->fd)) {
		err = tlog_error(-EOPNOTSUPP, "a memory filesystem would fill the holes it reads");
		goto out;
	}
	atomic_store(&fb->breaks_seen, atomic_load(&lease_breaks));
	if (fcntl(fb->fd, F_SETLEASE, F_RDLCK) < 0) {
		err = tlog_error(-errno, "no read lease: %s", strerror(errno));
		goto out;
	}
	fb->map = mmap(NULL, bdev->size, PROT_READ, MAP_SHARED, fb->fd, 0);
	if (fb->map == MAP_FAILED) {
		err = tlog_error(-errno, "cannot map: %s", strerror(errno));
		fb->map = NULL;
		fcntl(fb->fd, F_SETLEASE, F_UNLCK);
		goto out;
	}
	/*
	 * No read-around on a fault: it reads the device's read_ahead_kb
	 * (8 MiB on CI's disks) around the first touch and waits for all
	 * of it; the tree code hints what it will read, block by block.
	 */
	madvise(fb->map, bdev->size, MADV_RANDOM);
	fb->leased = true;
	fb->leased_next = leased_files;
	leased_files = fb;
out:
	pthread_mutex_unlock(&lease_lock);
	return err;
}

static const u8 *file_map_read(struct tlog_bdev *bdev, u64 offset, size_t len)
{
	(void)len;
	return ((struct file_bdev *)bdev->priv)->map + offset;
}

static void file_map_willneed(struct tlog_bdev *bdev, u64 offset, u64 len)
{
	u8 *map = ((struct file_bdev *)bdev->priv)->map;
	uintptr_t start = (uintptr_t)(map + offset) & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);

	madvise((void *)start, (uintptr_t)(map + offset + len) - start, MADV_WILLNEED);
}

static bool file_map_revoked(struct tlog_bdev *bdev)
{
	struct file_bdev *fb = bdev->priv;
	unsigned int breaks = atomic_load_explicit(&lease_breaks, memory_order_relaxed);

	if (breaks == atomic_load_explicit(&fb->breaks_seen, memory_order_relaxed))
		return atomic_load(&fb->revoked);
	pthread_mutex_lock(&lease_lock);
	atomic_store(&fb->breaks_seen, breaks);
	/* a lease being broken reads as what it is being broken to */
	if (fb->leased && fcntl(fb->fd, F_GETLEASE) != F_RDLCK)
		atomic_store(&fb->revoked, true);
	pthread_mutex_unlock(&lease_lock);
	return atomic_load(&fb->revoked);
}

static void file_map_end(struct tlog_bdev *bdev)
{
	struct file_bdev *fb = bdev->priv;

	pthread_mutex_lock(&lease_lock);
	if (fb->leased) {
		fcntl(fb->fd, F_SETLEASE, F_UNLCK);
		fb->leased = false;
		lease_forget(fb);
	}
	pthread_mutex_unlock(&lease_lock);
}

static void file_close(struct tlog_bdev *bdev)
{
	struct file_bdev *fb = bdev->priv;

	file_map_end(bdev);
	if (fb->map)
		munmap(fb->map, bdev->size);
	hint_worker_stop(fb->hints);
	file_drop_direct(fb);
	hugemem_free(fb->bounce, FILE_BOUNCE_SIZE);
	close(fb->fd);
	if (fb->disk_fd >= 0)
		close(fb->disk_fd);
	free(fb);
}

static const struct tlog_bdev_ops file_bdev_ops = {
	.read = file_read,
	.readv = file_readv,
	.write = file_write,
	.writev = file_writev,
	.flush = file_flush,
	.readahead = file_readahead,
	.map_begin = file_map_begin,
	.map_read = file_map_read,
	.map_willneed = file_map_willneed,
	.map_revoked = file_map_revoked,
	.map_end = file_map_end,
	.clone_from = file_clone_from,
	.close = file_close,
};

/* What a target that is neither a regular file nor a block device is. */
static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode))
		return "a character device";
	return "not a regular file";
}

static int refuse_kind(const struct stat *st)
{
	return tlog_error(S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL,
			  "%s, not a regular file or block device", file_kind(st->st_mode));
}

/*
 * A regular file that someone reads in place (a read lease, blockdev.h)
 * cannot be opened for writing without blocking: the open fails with
 * EWOULDBLOCK and the reader is asked to give the file up, which it does
 * at its next block read, or the kernel takes the lease away after its
 * lease-break-time (45 s by default).  So the open is tried again until
 * then; a lease of this very process would not be given up while it
 * waits, so that is refused at once.
 */
#define LEASE_WAIT_MS		60000
#define LEASE_RETRY_MS		5

static int open_waiting_for_readers(const char *path, int flags, const struct stat *st)
{
	const struct timespec pause = { .tv_nsec = LEASE_RETRY_MS * 1000000L };
	int fd;

	for (int waited = 0;; waited += LEASE_RETRY_MS) {
		fd = open(path, flags);
		if (fd >= 0 || errno != EWOULDBLOCK || !S_ISREG(st->st_mode) ||
		    (flags & O_ACCMODE) == O_RDONLY || waited >= LEASE_WAIT_MS)
			return fd;
		if (file_leased_here(st)) {
			errno = EBUSY;
			return -1;
		}
		nanosleep(&pause, NULL);
	}
}

/*
 * Open @path without blocking: a FIFO would wait for a writer forever.
 * The type is checked on the name first (for the error) and on the fd
 * again (the name may have been swapped in between).
 */
static int open_target(const char *path, int mode, struct stat *st)
{
	int flags = O_CLOEXEC | O_NONBLOCK;
	char where[PATH_MAX];
	int fd, err;

	if (stat(path, st) < 0)
		return tlog_error(-errno, "%s", strerror(errno));
	if (!S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode))
		return refuse_kind(st);
	if (mode & TLOG_BDEV_RDWR) {
		/* named before O_EXCL, whose EBUSY cannot say where */
		if (tlog_target_mounted(st, where, sizeof(where)))
			return tlog_error(-EBUSY, "mounted on %s", where);
		flags |= O_RDWR | (S_ISBLK(st->st_mode) ? O_EXCL : 0);
	} else {
		flags |= O_RDONLY;
	}
	fd = open_waiting_for_readers(path, flags, st);
	if (fd < 0) {
		err = -errno;
		if (err == -EBUSY && S_ISREG(st->st_mode))
			return tlog_error(err, "open for reading in this program");
		if (err == -EBUSY)
			return tlog_error(err, "in use (held exclusively by the kernel or another program)");
		if (err == -EWOULDBLOCK)
			return tlog_error(err, "another program keeps reading it");
		return tlog_error(err, "%s", strerror(-err));
	}
	if (fstat(fd, st) < 0 || (!S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode)) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		err = S_ISREG(st->st_mode) || S_ISBLK(st->st_mode) ?
			tlog_error(-errno, "%s", strerror(errno)) : refuse_kind(st);
		close(fd);
		return err;
	}
	return fd;
}

static int target_size(int fd, const struct stat *st, u64 *size)
{
	if (!S_ISBLK(st->st_mode)) {
		*size = st->st_size;
		return 0;
	}
	if (ioctl(fd, BLKGETSIZE64, size) < 0)
		return tlog_error(-errno, "cannot get device size: %s", strerror(errno));
	return 0;
}

int tlog_bdev_open_file(const char *path, int mode, struct tlog_bdev **ret)
{
	struct tlog_bdev *bdev = NULL;
	struct file_bdev *fb;
	struct stat st;
	int fd, err;

	fd = open_target(path, mode, &st);
	if (fd < 0)
		return fd;
	fb = calloc(1, sizeof(*fb));
	if (!fb) {
		close(fd);
		return -ENOMEM;
	}
	fb->fd = fd;
	fb->disk_fd = -1;
	fb->direct_fd = -1;
	fb->st = st;
	if (mode & TLOG_BDEV_RDWR) {
		err = tlog_claim_fd(fd, path, &st, &fb->disk_fd);
		if (err)
			goto fail;
	}
	err = -ENOMEM;
	bdev = calloc(1, sizeof(*bdev));
	if (!bdev || !(bdev->name = strdup(path)))
		goto fail;
	bdev->refs = 1;
	bdev->priv = fb;
	bdev->ops = &file_bdev_ops;
	bdev->writable = mode & TLOG_BDEV_RDWR;
	bdev->is_blockdev = S_ISBLK(st.st_mode);
	err = target_size(fd, &st, &bdev->size);
	if (err) {
		tlog_bdev_close(bdev);
		return err;
	}
	*ret = bdev;
	return 0;
fail:
	free(bdev);
	close(fb->fd);
	if (fb->disk_fd >= 0)
		close(fb->disk_fd);
	free(fb);
	return err;
}

struct tlog_bdev *tlog_bdev_get(struct tlog_bdev *bdev)
{
	bdev->refs++;
	return bdev;
}

void tlog_bdev_close(struct tlog_bdev *bdev)
{
	if (!bdev || --bdev->refs > 0)
		return;
	bdev->ops->close(bdev);
	free(bdev->name);
	free(bdev);
}

/*
 * Every I/O lies inside the device.  For writes this is the one guard
 * between a damaged chunk map and bytes far past the end of an image.
 */
static int check_range(const struct tlog_bdev *bdev, const char *what, size_t len, u64 offset)
{
	if (offset > bdev->size || len > bdev->size - offset)
		return tlog_error(-EIO, "%s of %zu bytes at %llu is past the end of %s (%llu bytes)",
				  what, len, (unsigned long long)offset, bdev->name,
				  (unsigned long long)bdev->size);
	return 0;
}

int tlog_bdev_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset)
{
	int ret = check_range(bdev, "read", len, offset);

	if (ret)
		return ret;
	bdev->nr_reads++;
	bdev->bytes_read += len;
	return bdev->ops->read(bdev, buf, len, offset);
}

int tlog_bdev_readv(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset)
{
	size_t total = 0;
	int ret;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	ret = check_range(bdev, "read", total, offset);
	if (ret)
		return ret;
	if (!bdev->ops->readv) {
		for (int i = 0; i < iovcnt; offset += iov[i].iov_len, i++) {
			ret = tlog_bdev_read(bdev, iov[i].iov_base, iov[i].iov_len, offset);
			if (ret)
				return ret;
		}
		return 0;
	}
	bdev->nr_reads++;
	bdev->bytes_read += total;
	return bdev->ops->readv(bdev, iov, iovcnt, offset);
}

int tlog_bdev_write(struct tlog_bdev *bdev, const void *buf, size_t len, u64 offset)
{
	int ret;

	if (!bdev->writable)
		return tlog_error(-EROFS, "%s is open read-only", bdev->name);
	ret = check_range(bdev, "write", len, offset);
	if (ret)
		return ret;
	bdev->nr_writes++;
	bdev->bytes_written += len;
	return bdev->ops->write(bdev, buf, len, offset);
}

int tlog_bdev_writev(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset)
{
	size_t total = 0;
	int ret;

	if (!bdev->writable)
		return tlog_error(-EROFS, "%s is open read-only", bdev->name);
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - total)
			return tlog_error(-EINVAL, "gather write of %d pieces is too long", iovcnt);
		total += iov[i].iov_len;
	}
	ret = check_range(bdev, "write", total, offset);
	if (ret)
		return ret;
	if (!bdev->ops->writev) {
		for (int i = 0; i < iovcnt; offset += iov[i].iov_len, i++) {
			ret = tlog_bdev_write(bdev, iov[i].iov_base, iov[i].iov_len, offset);
			if (ret)
				return ret;
		}
		return 0;
	}
	bdev->nr_writes += iovcnt;
	bdev->bytes_written += total;
	return bdev->ops->writev(bdev, iov, iovcnt, offset);
}

int tlog_bdev_clone_from(struct tlog_bdev *bdev, int src_fd, u64 src_off, u64 len, u64 offset)
{
	const u64 align = 4096;
	int ret;

	if (!bdev->writable)
		return tlog_error(-EROFS, "%s is open read-only", bdev->name);
	if ((src_off | len | offset) & (align - 1))
		return tlog_error(-EINVAL,
				  "clone of %llu bytes at %llu from %llu is not 4 KiB aligned",
				  (unsigned long long)len, (unsigned long long)offset,
				  (unsigned long long)src_off);
	/* a length of 0 would clone to the end of the source */
	if (!len)
		return 0;
	if (len > SIZE_MAX)
		return tlog_error(-EINVAL, "clone of %llu bytes is too long",
				  (unsigned long long)len);
	ret = check_range(bdev, "clone", (size_t)len, offset);
	if (ret)
		return ret;
	if (!bdev->ops->clone_from)
		return -EOPNOTSUPP;
	bdev->nr_writes++;
	bdev->bytes_written += len;
	return bdev->ops->clone_from(bdev, src_fd, src_off, len, offset);
}

int tlog_bdev_flush(struct tlog_bdev *bdev)
{
	return bdev->ops->flush ? bdev->ops->flush(bdev) : 0;
}

/* Users of a device's mapping may open filesystems on it from two threads (check). */
static pthread_mutex_t map_users_lock = PTHREAD_MUTEX_INITIALIZER;

bool tlog_bdev_map_begin(struct tlog_bdev *bdev)
{
	struct tlog_errsave saved;
	bool mapped = false;

	pthread_mutex_lock(&map_users_lock);
	if (bdev->map_users > 0) {
		bdev->map_users++;
		mapped = true;
	} else if (bdev->ops->map_begin) {
		/* not reading in place is no error: the caller reads instead */
		tlog_error_save(&saved);
		mapped = bdev->ops->map_begin(bdev) == 0;
		tlog_error_restore(&saved);
		bdev->map_users = mapped;
	}
	pthread_mutex_unlock(&map_users_lock);
	return mapped;
}

const u8 *tlog_bdev_map_read(struct tlog_bdev *bdev, size_t len, u64 offset)
{
	if (bdev->map_users == 0 || check_range(bdev, "read", len, offset))
		return NULL;
	bdev->nr_reads++;
	bdev->bytes_read += len;
	return bdev->ops->map_read(bdev, offset, len);
}

void tlog_bdev_map_willneed(struct tlog_bdev *bdev, u64 offset, u64 len)
{
	if (bdev->map_users == 0 || offset >= bdev->size || !bdev->ops->map_willneed)
		return;
	bdev->ops->map_willneed(bdev, offset, len < bdev->size - offset ? len : bdev->size - offset);
}

bool tlog_bdev_map_revoked(struct tlog_bdev *bdev)
{
	return bdev->map_users > 0 && bdev->ops->map_revoked(bdev);
}

void tlog_bdev_map_end(struct tlog_bdev *bdev)
{
	pthread_mutex_lock(&map_users_lock);
	/* the bytes stay mapped until close: pointers into them stay good */
	if (bdev->map_users > 0 && --bdev->map_users == 0)
		bdev->ops->map_end(bdev);
	pthread_mutex_unlock(&map_users_lock);
}

void tlog_bdev_readahead(struct tlog_bdev *bdev, u64 offset, u64 len)
{
	if (bdev->ops->readahead && offset < bdev->size)
		bdev->ops->readahead(bdev, offset, len);
}

/* ---- fault injection ---- */

struct fault_bdev {
	struct tlog_bdev *inner;
	int mode;
	u64 nth;
	u64 seen;	/* writes issued so far */
};

static struct fault_bdev *fault_of(struct tlog_bdev *bdev)
{
	return bdev->priv;
}

static bool fault_tripped(struct tlog_bdev *bdev)
{
	struct fault_bdev *fb = fault_of(bdev);

	return fb->seen >= fb->nth;
}

static int fault_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset)
{
	return tlog_bdev_read(fault_of(bdev)->inner, buf, len, offset);
}

static int fault_write(struct tlog_bdev *bdev, const void *buf, size_t len, u64 offset)
{
	struct fault_bdev *fb = fault_of(bdev);

	fb->seen++;
	if (!fault_tripped(bdev))
		return tlog_bdev_write(fb->inner, buf, len, offset);
	if (fb->mode == TLOG_FAULT_DROP)
		return 0;
	return tlog_error(-EIO, "injected failure of write %llu (%zu bytes at %llu)",
			  (unsigned long long)fb->seen, len, (unsigned long long)offset);
}

/*
 * Each piece of a gather write counts as a write, as in the statistics:
 * a sweep over the writes a clean run counted stops at every block, and
 * a gather write the fault falls inside reaches the device up to that
 * piece, as a large write torn by a power cut would.
 */
static int fault_writev(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset)
{
	struct fault_bdev *fb = fault_of(bdev);
	u64 first = fb->seen + 1;
	int pass = 0;

	if (iovcnt <= 0)
		return 0;
	fb->seen += iovcnt;
	if (!fault_tripped(bdev))
		return tlog_bdev_writev(fb->inner, iov, iovcnt, offset);
	if (fb->nth > first) {
		int err;

		pass = (int)(fb->nth - first);
		err = tlog_bdev_writev(fb->inner, iov, pass, offset);
		if (err)
			return err;
	}
	if (fb->mode == TLOG_FAULT_DROP)
		return 0;
	return tlog_error(-EIO, "injected failure of write %llu (piece %d of a write at %llu)",
			  (unsigned long long)(first + pass), pass + 1, (unsigned long long)offset);
}

/* A clone is a write: it counts, and fails or vanishes like one. */
static int fault_clone_from(struct tlog_bdev *bdev, int src_fd, u64 src_off, u64 len,
			    u64 offset)
{
	struct fault_bdev *fb = fault_of(bdev);

	fb->seen++;
	if (!fault_tripped(bdev))
		return tlog_bdev_clone_from(fb->inner, src_fd, src_off, len, offset);
	if (fb->mode == TLOG_FAULT_DROP)
		return 0;
	return tlog_error(-EIO, "injected failure of write %llu (a clone of %llu bytes at %llu)",
			  (unsigned long long)fb->seen, (unsigned long long)len,
			  (unsigned long long)offset);
}

static int fault_flush(struct tlog_bdev *bdev)
{
	struct fault_bdev *fb = fault_of(bdev);

	if (!fault_tripped(bdev))
		return tlog_bdev_flush(fb->inner);
	if (fb->mode == TLOG_FAULT_DROP)
		return 0;
	return tlog_error(-EIO, "injected failure of a flush after write %llu",
			  (unsigned long long)fb->seen);
}

static void fault_readahead(struct tlog_bdev *bdev, u64 offset, u64 len)
{
	tlog_bdev_readahead(fault_of(bdev)->inner, offset, len);
}

static void fault_close(struct tlog_bdev *bdev)
{
	tlog_bdev_close(fault_of(bdev)->inner);
	free(bdev->priv);
}

static const struct tlog_bdev_ops fault_bdev_ops = {
	.read = fault_read,
	.write = fault_write,
	.writev = fault_writev,
	.flush = fault_flush,
	.readahead = fault_readahead,
	.clone_from = fault_clone_from,
	.close = fault_close,
};

int tlog_bdev_wrap_fault(struct tlog_bdev *inner, int mode, u64 nth, struct tlog_bdev **ret)
{
	struct tlog_bdev *bdev;
	struct fault_bdev *fb;

	if ((mode != TLOG_FAULT_FAIL && mode != TLOG_FAULT_DROP) || nth == 0)
		return tlog_error(-EINVAL, "bad fault injection mode %d or write number %llu",
				  mode, (unsigned long long)nth);
	bdev = calloc(1, sizeof(*bdev));
	fb = calloc(1, sizeof(*fb));
	if (!bdev || !fb || !(bdev->name = strdup(inner->name))) {
		free(fb);
		free(bdev);
		return -ENOMEM;
	}
	fb->inner = inner;
	fb->mode = mode;
	fb->nth = nth;
	bdev->refs = 1;
	bdev->priv = fb;
	bdev->ops = &fault_bdev_ops;
	bdev->size = inner->size;
	bdev->writable = inner->writable;
	bdev->is_blockdev = inner->is_blockdev;
	*ret = bdev;
	return 0;
}

/* ---- memory devices ---- */

static u8 *mem_data(struct tlog_bdev *bdev)
{
	return bdev->priv;
}

static int mem_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset)
{
	memcpy(buf, mem_data(bdev) + offset, len);
	return 0;
}

static int mem_write(struct tlog_bdev *bdev, const void *buf, size_t len, u64 offset)
{
	memcpy(mem_data(bdev) + offset, buf, len);
	return 0;
}

static int mem_writev(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset)
{
	for (int i = 0; i < iovcnt; offset += iov[i].iov_len, i++)
		memcpy(mem_data(bdev) + offset, iov[i].iov_base, iov[i].iov_len);
	return 0;
}

static void mem_close(struct tlog_bdev *bdev)
{
	free(bdev->priv);
}

static const struct tlog_bdev_ops mem_bdev_ops = {
	.read = mem_read,
	.write = mem_write,
	.writev = mem_writev,
	.close = mem_close,
};

int tlog_bdev_create_memory(const char *name, u64 size, struct tlog_bdev **ret)
{
	struct tlog_bdev *bdev = calloc(1, sizeof(*bdev));

	if (!bdev || size > SIZE_MAX || !(bdev->name = strdup(name)) ||
	    !(bdev->priv = calloc(1, size ? size : 1))) {
		if (bdev)
			free(bdev->name);
		free(bdev);
		return -ENOMEM;
	}
	bdev->refs = 1;
	bdev->ops = &mem_bdev_ops;
	bdev->size = size;
	bdev->writable = true;
	*ret = bdev;
	return 0;
}

u8 *tlog_bdev_memory_data(struct tlog_bdev *bdev)
{
	return bdev->ops == &mem_bdev_ops ? mem_data(bdev) : NULL;
}

/*
 * ---- copy-on-write devices ----
 *
 * Pages written are kept in memory, in an open-addressing hash keyed by
 * page number; everything else is read from the inner device, which is
 * never written.  A page is filled from the inner device before a write
 * that covers only part of it, so every page held is whole and a read
 * never has to merge two sources within a page.
 */

#define COW_PAGE_SHIFT	12
#define COW_PAGE_SIZE	(1U << COW_PAGE_SHIFT)

struct cow_page {
	u64 index;		/* page number: byte offset >> COW_PAGE_SHIFT */
	u8 *data;		/* COW_PAGE_SIZE bytes; NULL for an empty slot */
};

struct cow_bdev {
	struct tlog_bdev *inner;
	struct cow_page *slots;
	size_t nr_slots;	/* a power of two, or 0 before the first write */
	size_t nr_pages;
};

static u64 cow_min(u64 a, u64 b)
{
	return a < b ? a : b;
}

static struct cow_bdev *cow_of(struct tlog_bdev *bdev)
{
	return bdev->priv;
}

static size_t cow_hash(u64 index, size_t nr_slots)
{
	return (size_t)((index * 0x9e3779b97f4a7c15ULL) >> 17) & (nr_slots - 1);
}

/* The slot holding page @index, or the empty slot where it would go. */
static struct cow_page *cow_slot(const struct cow_bdev *cb, u64 index)
{
	size_t i = cow_hash(index, cb->nr_slots);

	while (cb->slots[i].data && cb->slots[i].index != index)
		i = (i + 1) & (cb->nr_slots - 1);
	return &cb->slots[i];
}

static u8 *cow_find(const struct cow_bdev *cb, u64 index)
{
	return cb->nr_slots ? cow_slot(cb, index)->data : NULL;
}

/* Keep the table at most half full, so that probes stay short. */
static int cow_grow(struct cow_bdev *cb)
{
	size_t nr = cb->nr_slots ? 2 * cb->nr_slots : 1024;
	struct cow_bdev bigger = { .nr_slots = nr };

	if ((cb->nr_pages + 1) * 2 <= cb->nr_slots)
		return 0;
	bigger.slots = calloc(nr, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < cb->nr_slots; i++)
		if (cb->slots[i].data)
			*cow_slot(&bigger, cb->slots[i].index) = cb->slots[i];
	free(cb->slots);
	cb->slots = bigger.slots;
	cb->nr_slots = nr;
	return 0;
}

/* The page @index, copied from the inner device the first time it is written. */
static int cow_page_for_write(struct tlog_bdev *bdev, u64 index, u8 **ret)
{
	struct cow_bdev *cb = cow_of(bdev);
	u64 start = index << COW_PAGE_SHIFT;
	u64 len = cow_min(COW_PAGE_SIZE, bdev->size - start);
	struct cow_page *slot;
	u8 *data;
	int err;

	data = cow_find(cb, index);
	if (data) {
		*ret = data;
		return 0;
	}
	err = cow_grow(cb);
	if (err)
		return err;
	data = calloc(1, COW_PAGE_SIZE);
	if (!data)
		return -ENOMEM;
	err = tlog_bdev_read(cb->inner, data, len, start);
	if (err) {
		free(data);
		return err;
	}
	slot = cow_slot(cb, index);
	slot->index = index;
	slot->data = data;
	cb->nr_pages++;
	*ret = data;
	return 0;
}

static int cow_write(struct tlog_bdev *bdev, const void *buf, size_t len, u64 offset)
{
	const u8 *src = buf;

	while (len) {
		u32 in_page = offset & (COW_PAGE_SIZE - 1);
		size_t n = cow_min(len, COW_PAGE_SIZE - in_page);
		u8 *page;
		int err = cow_page_for_write(bdev, offset >> COW_PAGE_SHIFT, &page);

		if (err)
			return err;
		memcpy(page + in_page, src, n);
		src += n;
		offset += n;
		len -= n;
	}
	return 0;
}

static int cow_writev(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset)
{
	for (int i = 0; i < iovcnt; offset += iov[i].iov_len, i++) {
		int err = cow_write(bdev, iov[i].iov_base, iov[i].iov_len, offset);

		if (err)
			return err;
	}
	return 0;
}

/*
 * Pages not written come from the inner device, in one read for each run
 * of them, so that a read of a tree block nobody wrote stays one read.
 */
static int cow_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset)
{
	struct cow_bdev *cb = cow_of(bdev);
	u8 *dst = buf;
	size_t run = 0;		/* bytes of inner pages before @offset not yet read */

	while (len) {
		u32 in_page = offset & (COW_PAGE_SIZE - 1);
		size_t n = cow_min(len, COW_PAGE_SIZE - in_page);
		const u8 *page = cow_find(cb, offset >> COW_PAGE_SHIFT);

		if (page) {
			if (run) {
				int err = tlog_bdev_read(cb->inner, dst - run, run, offset - run);

				if (err)
					return err;
				run = 0;
			}
			memcpy(dst, page + in_page, n);
		} else {
			run += n;
		}
		dst += n;
		offset += n;
		len -= n;
	}
	return run ? tlog_bdev_read(cb->inner, dst - run, run, offset - run) : 0;
}

static int cow_flush(struct tlog_bdev *bdev)
{
	(void)bdev;
	return 0;
}

static void cow_readahead(struct tlog_bdev *bdev, u64 offset, u64 len)
{
	tlog_bdev_readahead(cow_of(bdev)->inner, offset, len);
}

static void cow_close(struct tlog_bdev *bdev)
{
	struct cow_bdev *cb = cow_of(bdev);

	for (size_t i = 0; i < cb->nr_slots; i++)
		free(cb->slots[i].data);
	free(cb->slots);
	tlog_bdev_close(cb->inner);
	free(cb);
}

static const struct tlog_bdev_ops cow_bdev_ops = {
	.read = cow_read,
	.write = cow_write,
	.writev = cow_writev,
	.flush = cow_flush,
	.readahead = cow_readahead,
	.close = cow_close,
};

int tlog_bdev_wrap_cow(struct tlog_bdev *inner, struct tlog_bdev **ret)
{
	struct tlog_bdev *bdev = calloc(1, sizeof(*bdev));
	struct cow_bdev *cb = calloc(1, sizeof(*cb));

	if (!bdev || !cb || !(bdev->name = strdup(inner->name))) {
		free(cb);
		free(bdev);
		return -ENOMEM;
	}
	cb->inner = tlog_bdev_get(inner);
	bdev->refs = 1;
	bdev->priv = cb;
	bdev->ops = &cow_bdev_ops;
	bdev->size = inner->size;
	bdev->writable = true;
	bdev->is_blockdev = inner->is_blockdev;
	*ret = bdev;
	return 0;
}

size_t tlog_bdev_cow_pages(struct tlog_bdev *bdev)
{
	return bdev->ops == &cow_bdev_ops ? cow_of(bdev)->nr_pages : 0;
}

/*
 * ---- superblocks held back ----
 *
 * One page per superblock copy that starts inside the device, filled
 * from the inner device on the first write that touches it (so a partial
 * write merges with what is there, as on a device) and written back whole
 * at release.  Nothing else written to these places can reach the inner
 * device while the hold lasts, so the page stays a true picture of what
 * the copy will be.
 */

struct hold_copy {
	u64 offset;		/* btrfs_sb_offset() of the copy */
	u32 len;		/* BTRFS_SUPER_INFO_SIZE, less past the end of the device */
	bool held;		/* @data has been written to */
	u8 data[BTRFS_SUPER_INFO_SIZE];
};

struct hold_bdev {
	struct tlog_bdev *inner;
	bool released;		/* everything passes through */
	int nr_copies;
	struct hold_copy copies[BTRFS_SUPER_MIRROR_MAX];
};

static struct hold_bdev *hold_of(struct tlog_bdev *bdev)
{
	return bdev->priv;
}

/* The bytes [*lo, *hi) of [offset, offset + len) that fall in @copy; false if none. */
static bool hold_overlap(const struct hold_copy *copy, u64 offset, u64 len, u64 *lo, u64 *hi)
{
	u64 end = offset + len;

	*lo = offset > copy->offset ? offset : copy->offset;
	*hi = end < copy->offset + copy->len ? end : copy->offset + copy->len;
	return *lo < *hi;
}

static bool hold_touches(const struct hold_bdev *hb, u64 offset, u64 len)
{
	u64 lo, hi;

	for (int i = 0; i < hb->nr_copies; i++)
		if (hold_overlap(&hb->copies[i], offset, len, &lo, &hi))
			return true;
	return false;
}

/* Reads see the held bytes over what the inner device has. */
static int hold_read(struct tlog_bdev *bdev, void *buf, size_t len, u64 offset)
{
	struct hold_bdev *hb = hold_of(bdev);
	int err = tlog_bdev_read(hb->inner, buf, len, offset);
	u64 lo, hi;

	if (err || hb->released)
		return err;
	for (int i = 0; i < hb->nr_copies; i++) {
		const struct hold_copy *copy = &hb->copies[i];

		if (copy->held && hold_overlap(copy, offset, len, &lo, &hi))
			memcpy((u8 *)buf + (lo - offset), copy->data + (lo - copy->offset),
			       hi - lo);
	}
	return 0;
}

static int hold_copy_start(struct hold_bdev *hb, struct hold_copy *copy)
{
	int err;

	if (copy->held)
		return 0;
	err = tlog_bdev_read(hb->inner, copy->data, copy->len, copy->offset);
	if (err)
		return err;
	copy->held = true;
	return 0;
}

/*
 * The write is cut at the copies: the pieces between them go to the inner
 * device, in order, the pieces inside them into the held pages.
 */
static int hold_write(struct tlog_bdev *bdev, const void *buf, size_t len, u64 offset)
{
	struct hold_bdev *hb = hold_of(bdev);
	const u8 *src = buf;
	u64 pos = offset, end = offset + len;
	int err;

	if (hb->released)
		return tlog_bdev_write(hb->inner, buf, len, offset);
	/* the copies are in increasing order of offset */
	for (int i = 0; i < hb->nr_copies && pos < end; i++) {
		struct hold_copy *copy = &hb->copies[i];
		u64 lo, hi;

		if (!hold_overlap(copy, pos, end - pos, &lo, &hi))
			continue;
		if (lo > pos) {
			err = tlog_bdev_write(hb->inner, src + (pos - offset), lo - pos, pos);
			if (err)
				return err;
		}
		err = hold_copy_start(hb, copy);
		if (err)
			return err;
		memcpy(copy->data + (lo - copy->offset), src + (lo - offset), hi - lo);
		pos = hi;
	}
	if (pos < end)
		return tlog_bdev_write(hb->inner, src + (pos - offset), end - pos, pos);
	return 0;
}

/*
 * A gather write that touches no held copy passes through whole; one that
 * does (tree blocks never lie there, but a caller may write anything) is
 * cut piece by piece as writes are.
 */
static int hold_writev(struct tlog_bdev *bdev, const struct iovec *iov, int iovcnt, u64 offset)
{
	struct hold_bdev *hb = hold_of(bdev);
	size_t total = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (hb->released || !hold_touches(hb, offset, total))
		return tlog_bdev_writev(hb->inner, iov, iovcnt, offset);
	for (int i = 0; i < iovcnt; offset += iov[i].iov_len, i++) {
		int err = hold_write(bdev, iov[i].iov_base, iov[i].iov_len, offset);

		if (err)
			return err;
	}
	return 0;
}

static int hold_flush(struct tlog_bdev *bdev)
{
	return tlog_bdev_flush(hold_of(bdev)->inner);
}

static void hold_readahead(struct tlog_bdev *bdev, u64 offset, u64 len)
{
	tlog_bdev_readahead(hold_of(bdev)->inner, offset, len);
}

/* Cloned bytes would bypass the hold: a clone into a copy is written instead. */
static int hold_clone_from(struct tlog_bdev *bdev, int src_fd, u64 src_off, u64 len,
			   u64 offset)
{
	struct hold_bdev *hb = hold_of(bdev);

	if (!hb->released && hold_touches(hb, offset, len))
		return -EOPNOTSUPP;
	return tlog_bdev_clone_from(hb->inner, src_fd, src_off, len, offset);
}

static void hold_close(struct tlog_bdev *bdev)
{
	tlog_bdev_close(hold_of(bdev)->inner);
	free(bdev->priv);
}

static const struct tlog_bdev_ops hold_bdev_ops = {
	.read = hold_read,
	.write = hold_write,
	.writev = hold_writev,
	.flush = hold_flush,
	.readahead = hold_readahead,
	.clone_from = hold_clone_from,
	.close = hold_close,
};

int tlog_bdev_wrap_hold_super(struct tlog_bdev *inner, struct tlog_bdev **ret)
{
	struct tlog_bdev *bdev = calloc(1, sizeof(*bdev));
	struct hold_bdev *hb = calloc(1, sizeof(*hb));

	if (!bdev || !hb || !(bdev->name = strdup(inner->name))) {
		free(hb);
		free(bdev);
		return -ENOMEM;
	}
	hb->inner = inner;
	for (int i = 0; i < BTRFS_SUPER_MIRROR_MAX; i++) {
		u64 off = btrfs_sb_offset(i);
		struct hold_copy *copy = &hb->copies[hb->nr_copies];

		if (off >= inner->size)
			break;
		copy->offset = off;
		copy->len = inner->size - off < BTRFS_SUPER_INFO_SIZE ?
			    (u32)(inner->size - off) : BTRFS_SUPER_INFO_SIZE;
		hb->nr_copies++;
	}
	bdev->refs = 1;
	bdev->priv = hb;
	bdev->ops = &hold_bdev_ops;
	bdev->size = inner->size;
	bdev->writable = inner->writable;
	bdev->is_blockdev = inner->is_blockdev;
	*ret = bdev;
	return 0;
}

/*
 * A mirror the held primary superblock puts past the end of its device
 * (a filesystem shrunk after the mirror was written: commits write no
 * mirror there) is stale; written, it would also grow a file target cut
 * to the filesystem's size back to the old one.
 */
static bool hold_copy_stale(const struct hold_bdev *hb, const struct hold_copy *copy)
{
	const struct hold_copy *primary = &hb->copies[0];
	const struct btrfs_super_block *sb = (const void *)primary->data;

	if (copy == primary || !primary->held || primary->len < sizeof(*sb) ||
	    btrfs_super_block_magic(sb) != BTRFS_MAGIC)
		return false;
	return copy->offset + BTRFS_SUPER_INFO_SIZE >= btrfs_dev_item_total_bytes(&sb->dev_item);
}

/*
 * The order is the one a commit keeps: every block the superblocks point
 * to is on stable storage before the first of them is written.
 */
int tlog_bdev_release_super(struct tlog_bdev *bdev)
{
	struct hold_bdev *hb;
	int err;

	if (bdev->ops != &hold_bdev_ops)
		return tlog_error(-EINVAL, "%s does not hold superblocks back", bdev->name);
	hb = hold_of(bdev);
	if (hb->released)
		return 0;
	err = tlog_bdev_flush(hb->inner);
	if (err)
		return err;
	/*
	 * The mirrors first and the primary alone last, after a flush: a
	 * run that fails at any write before the primary's leaves no primary
	 * superblock, the one the kernel mounts and blkid probes.  (A mirror
	 * written by then describes the complete, flushed filesystem.)
	 */
	for (int i = hb->nr_copies - 1; i >= 0; i--) {
		const struct hold_copy *copy = &hb->copies[i];

		if (!copy->held || hold_copy_stale(hb, copy))
			continue;
		if (i == 0 && hb->nr_copies > 1) {
			err = tlog_bdev_flush(hb->inner);
			if (err)
				return err;
		}
		err = tlog_bdev_write(hb->inner, copy->data, copy->len, copy->offset);
		if (err)
			return err;
	}
	err = tlog_bdev_flush(hb->inner);
	if (err)
		return err;
	hb->released = true;
	return 0;
}

int tlog_bdev_wipe_super(struct tlog_bdev *bdev)
{
	static const u8 zeros[BTRFS_SUPER_INFO_SIZE];
	int err;

	if (bdev->ops == &hold_bdev_ops && !hold_of(bdev)->released)
		bdev = hold_of(bdev)->inner;
	for (int i = 0; i < BTRFS_SUPER_MIRROR_MAX; i++) {
		u64 off = btrfs_sb_offset(i);
		size_t len = BTRFS_SUPER_INFO_SIZE;

		if (off >= bdev->size)
			break;
		if (bdev->size - off < len)
			len = bdev->size - off;
		err = tlog_bdev_write(bdev, zeros, len, off);
		if (err)
			return err;
	}
	return tlog_bdev_flush(bdev);
}
