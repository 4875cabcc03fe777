// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl mkfs: create a btrfs filesystem on a file or block device, with
 * the options and defaults of mkfs.btrfs for one device.  The image is
 * built by kernel-shared/mkfs.c; this file checks the target (signatures,
 * mounts), parses the options and prints the summary.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include <blkid/blkid.h>
#include <uuid/uuid.h>

#include "blockdev.h"
#include "commands.h"
#include "csum.h"
#include "errctx.h"
#include "messages.h"
#include "open.h"
#include "mkfs.h"
#include "strutil.h"
#include "volumes.h"

#define DEFAULT_FILE_SIZE (1024ULL * 1024 * 1024)

static const char * const mkfs_usage[] = {
	"tlogctl mkfs [options] TARGET",
	"Create a btrfs filesystem",
	"",
	"Makes a new filesystem on TARGET, a block device or a file.  A file that",
	"does not exist is created, sparse, with the size given by -b (default",
	"1GiB).  Defaults are those of mkfs.btrfs 6.19 for one device.  A target",
	"holding a filesystem or partition table is only overwritten with -f; a",
	"mounted target never.",
	"",
	"-f|--force              overwrite an existing filesystem or partition table",
	"-q|--quiet              print nothing on success",
	"-v|--verbose            also print the chunk layout and the write count",
	"-L|--label LABEL        filesystem label (at most 255 bytes)",
	"-U|--uuid UUID          filesystem UUID instead of a random one",
	"-b|--byte-count SIZE    filesystem size (default: the whole target)",
	"-n|--nodesize SIZE      tree block size, 4096..65536 (default 16384)",
	"-s|--sectorsize SIZE    data block size (default 4096)",
	"--csum|--checksum TYPE  crc32c, xxhash, sha256 or blake2 (default crc32c)",
	"-m|--metadata PROFILE   single or dup (default dup)",
	"-d|--data PROFILE       single (the default and only choice)",
	"-O|--features LIST      comma-separated features, ^ to disable; list-all lists them",
	"-R|--runtime-features LIST  older spelling of -O",
	"-K|--nodiscard          accepted for compatibility: tlogctl never discards",
	NULL
};

enum {
	GETOPT_VAL_CSUM = GETOPT_VAL_FIRST_CMD,
};

struct mkfs_opts {
	struct tlog_mkfs_cfg cfg;
	bool force;
	bool quiet;
	bool verbose;
	bool size_set;
	u64 size;
};

static void print_features(void)
{
	printf("Filesystem features available:\n");
	for (const struct tlog_mkfs_feature *f = tlog_mkfs_features; f->name; f++)
		printf("%-20s- %s%s%s\n", f->name, f->desc,
		       f->is_default ? " (default)" : "",
		       f->supported ? "" : " [not supported by tlogctl mkfs]");
}

/* Set or clear (with a leading ^) each feature of a comma-separated @list. */
static int parse_features(const char *list, struct tlog_mkfs_cfg *cfg)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		bool off = tok[0] == '^';
		const char *name = off ? tok + 1 : tok;
		const struct tlog_mkfs_feature *f;
		u64 *flags;

		if (!strcmp(name, "list-all")) {
			print_features();
			free(copy);
			exit(output_finish(0));
		}
		f = tlog_mkfs_find_feature(name);
		if (!f) {
			error("unrecognized filesystem feature '%s' (see -O list-all)", name);
			ret = -EINVAL;
			break;
		}
		if (!f->supported && !off) {
			error("feature '%s' is not supported by tlogctl mkfs", f->name);
			ret = -EOPNOTSUPP;
			break;
		}
		flags = f->compat_ro ? &cfg->compat_ro_flags : &cfg->incompat_flags;
		if (off)
			*flags &= ~f->flags;
		else
			*flags |= f->flags;
	}
	free(copy);
	return ret;
}

static int parse_profile(const char *arg, bool data, u64 *profile)
{
	if (!strcasecmp(arg, "single")) {
		*profile = 0;
		return 0;
	}
	if (!data && !strcasecmp(arg, "dup")) {
		*profile = BTRFS_BLOCK_GROUP_DUP;
		return 0;
	}
	error("unsupported %s profile '%s' (use %s)", data ? "data" : "metadata", arg,
	      data ? "single" : "single or dup");
	return -EINVAL;
}

static int parse_size_opt(const char *arg, const char *what, u64 *ret)
{
	if (parse_u64(arg, true, ret) == 0)
		return 0;
	error("invalid %s '%s'", what, arg);
	return -EINVAL;
}

static int parse_block_size(const char *arg, const char *what, u32 *ret)
{
	u64 v;

	if (parse_size_opt(arg, what, &v))
		return -EINVAL;
	if (v > UINT32_MAX) {
		error("invalid %s %s", what, arg);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/*
 * The kernel mounts only sector sizes of 4096 and the page size (format
 * reference 1); mkfs.btrfs merely warns about others, we refuse them.
 */
static int check_sectorsize(u32 sectorsize)
{
	long page = sysconf(_SC_PAGESIZE);

	if (sectorsize == 4096 || (page > 0 && sectorsize == (u32)page))
		return 0;
	error("sector size %u cannot be mounted here (use 4096%s)", sectorsize,
	      page > 0 && page != 4096 ? " or the page size" : "");
	return -EINVAL;
}

static int parse_uuid_opt(const char *arg, struct tlog_mkfs_cfg *cfg)
{
	if (uuid_parse(arg, cfg->fsid) || uuid_is_null(cfg->fsid)) {
		error("invalid UUID '%s'", arg);
		return -EINVAL;
	}
	cfg->fsid_set = true;
	return 0;
}

static int parse_label(const char *arg, struct tlog_mkfs_cfg *cfg)
{
	size_t len = strlen(arg);

	if (len >= BTRFS_LABEL_SIZE) {
		error("label is %zu bytes long, at most %d are allowed", len, BTRFS_LABEL_SIZE - 1);
		return -EINVAL;
	}
	memcpy(cfg->label, arg, len + 1);
	return 0;
}

static void parse_options(const struct cmd_struct *cmd, int argc, char **argv,
			  struct mkfs_opts *o)
{
	static const struct option long_options[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "label", required_argument, NULL, 'L' },
		{ "uuid", required_argument, NULL, 'U' },
		{ "byte-count", required_argument, NULL, 'b' },
		{ "nodesize", required_argument, NULL, 'n' },
		{ "sectorsize", required_argument, NULL, 's' },
		{ "csum", required_argument, NULL, GETOPT_VAL_CSUM },
		{ "checksum", required_argument, NULL, GETOPT_VAL_CSUM },
		{ "metadata", required_argument, NULL, 'm' },
		{ "data", required_argument, NULL, 'd' },
		{ "features", required_argument, NULL, 'O' },
		{ "runtime-features", required_argument, NULL, 'R' },
		{ "nodiscard", no_argument, NULL, 'K' },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	int c, ret = 0, type;

	tlog_mkfs_default_cfg(&o->cfg);
	while (!ret && (c = cmd_next_option(cmd, argc, argv, "fqvL:U:b:n:s:m:d:O:R:K",
					    long_options, &common)) != -1) {
		switch (c) {
		case 'f':
			o->force = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'L':
			ret = parse_label(optarg, &o->cfg);
			break;
		case 'U':
			ret = parse_uuid_opt(optarg, &o->cfg);
			break;
		case 'b':
			ret = parse_size_opt(optarg, "size", &o->size);
			o->size_set = true;
			break;
		case 'n':
			ret = parse_block_size(optarg, "node size", &o->cfg.nodesize);
			break;
		case 's':
			ret = parse_block_size(optarg, "sector size", &o->cfg.sectorsize);
			break;
		case GETOPT_VAL_CSUM:
			type = btrfs_csum_type_from_name(optarg);
			if (type < 0) {
				error("unknown checksum type '%s' (use crc32c, xxhash, sha256 or blake2)",
				      optarg);
				ret = -EINVAL;
			}
			o->cfg.csum_type = type;
			break;
		case 'm':
			ret = parse_profile(optarg, false, &o->cfg.metadata_profile);
			break;
		case 'd':
			ret = parse_profile(optarg, true, &o->cfg.data_profile);
			break;
		case 'O':
		case 'R':
			ret = parse_features(optarg, &o->cfg);
			break;
		case 'K':
			break;
		}
	}
	if (ret)
		exit(1);
	/* a new filesystem has one superblock to write, not a copy to pick */
	if (common.super_mirror >= 0) {
		error("mkfs does not take --super");
		exit(1);
	}
	check_argc(cmd, argc, 1, 1);
}

/* ---- the target ---- */

/*
 * Name what libblkid finds on @path.  Unlike a plain probe, two
 * signatures at once count as something found, not as nothing.
 * Returns 1 when something was found, 0 when not, -errno on error.
 */
static int probe_existing(const char *path, char *buf, size_t size)
{
	blkid_probe pr = blkid_new_probe_from_filename(path);
	const char *val = NULL;
	int ret;

	if (!pr)
		return -errno ? -errno : -EIO;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	ret = blkid_do_safeprobe(pr);
	if (ret == 0 && blkid_probe_lookup_value(pr, "TYPE", &val, NULL) == 0) {
		snprintf(buf, size, "%s", val);
		ret = 1;
	} else if (ret == 0 && blkid_probe_lookup_value(pr, "PTTYPE", &val, NULL) == 0) {
		snprintf(buf, size, "a %s partition table", val);
		ret = 1;
	} else if (ret == -2) {
		snprintf(buf, size, "more than one filesystem signature");
		ret = 1;
	} else {
		ret = ret < 0 ? -EIO : 0;
	}
	blkid_free_probe(pr);
	return ret;
}

/*
 * Refuse to overwrite what libblkid recognises, unless forced.  Runs on
 * the claimed target: nobody can start writing a filesystem there between
 * this look and ours.
 */
static int check_existing_signature(const char *target, bool force)
{
	char found[128];
	int ret;

	ret = probe_existing(target, found, sizeof(found));
	if (ret < 0) {
		error("cannot probe %s for existing signatures", target);
		return ret;
	}
	if (ret > 0 && !force) {
		error("%s appears to contain %s%s (use -f to overwrite)", target,
		      strchr(found, ' ') ? "" : "an existing filesystem: ", found);
		return -EEXIST;
	}
	return 0;
}

/* Create a missing file target, sparse, of @size bytes. */
static int create_target(const char *target, u64 size)
{
	int fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0) {
		error("cannot create %s: %s", target, strerror(errno));
		return -errno;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		int err = -errno;

		error("cannot set the size of %s: %s", target, strerror(errno));
		close(fd);
		unlink(target);
		return err;
	}
	close(fd);
	return 0;
}

/* TLOG_FAULT_INJECT=fail:N or drop:N wraps the device (testing aid). */
static int wrap_fault_from_env(struct tlog_bdev **bdev)
{
	unsigned long long nth;
	int mode, ret;

	ret = fault_from_env(&mode, &nth);
	if (ret || !mode)
		return ret;
	ret = tlog_bdev_wrap_fault(*bdev, mode, nth, bdev);
	if (ret)
		error_errno(ret, "cannot set up fault injection");
	return ret;
}

/* ---- the summary ---- */

static void pretty_size(u64 v, char *buf, size_t size)
{
	static const char * const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double d = v;
	int u = 0;

	while (d >= 1024 && u < 6) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%lluB", (unsigned long long)v);
	else
		snprintf(buf, size, "%.2f%s", d, units[u]);
}

static void print_feature_line(const char *label, bool compat_ro, u64 flags)
{
	bool first = true;

	printf("%-20s", label);
	for (const struct tlog_mkfs_feature *f = tlog_mkfs_features; f->name; f++) {
		if (f->compat_ro != compat_ro || !f->flags || (flags & f->flags) != f->flags)
			continue;
		printf("%s%s", first ? "" : ", ", f->name);
		first = false;
	}
	printf("%s\n", first ? "none" : "");
}

static void print_summary(const char *target, const struct mkfs_opts *o,
			  const struct tlog_mkfs_result *res)
{
	static const char * const names[] = { "System", "Metadata", "Data" };
	static const int order[] = { 2, 1, 0 };
	char uuid[UUID_STR_LEN], size[32];

	uuid_to_str(res->fsid, uuid);
	printf("Label:              %s\n", o->cfg.label[0] ? o->cfg.label : "(null)");
	printf("UUID:               %s\n", uuid);
	printf("Node size:          %u\n", o->cfg.nodesize);
	printf("Sector size:        %u\n", o->cfg.sectorsize);
	pretty_size(res->total_bytes, size, sizeof(size));
	printf("Filesystem size:    %s\n", size);
	printf("Block group profiles:\n");
	for (int i = 0; i < 3; i++) {
		const struct tlog_mkfs_chunk *ch = &res->chunks[order[i]];
		char len[32], name[16];

		pretty_size(ch->length, len, sizeof(len));
		snprintf(name, sizeof(name), "%s:", names[order[i]]);
		printf("  %-18s%-10s%12s\n", name,
		       ch->type & BTRFS_BLOCK_GROUP_DUP ? "DUP" : "single", len);
	}
	print_feature_line("Incompat features:", false, o->cfg.incompat_flags);
	print_feature_line("Compat RO features:", true, o->cfg.compat_ro_flags);
	printf("Checksum:           %s\n", btrfs_csum_type_name(o->cfg.csum_type));
	printf("Number of devices:  1\n");
	printf("Devices:\n");
	printf("   ID        SIZE  PATH\n");
	printf("    1  %10s  %s\n", size, target);
	if (!o->verbose)
		return;
	uuid_to_str(res->dev_uuid, uuid);
	printf("Device UUID:        %s\n", uuid);
	uuid_to_str(res->chunk_tree_uuid, uuid);
	printf("Chunk tree UUID:    %s\n", uuid);
	uuid_to_str(res->fs_tree_uuid, uuid);
	printf("FS tree UUID:       %s\n", uuid);
	printf("Chunks:\n");
	for (int i = 0; i < 3; i++) {
		const struct tlog_mkfs_chunk *ch = &res->chunks[i];
		char type[64];

		btrfs_bg_flags_to_str(ch->type, type, sizeof(type));
		printf("  %-16s logical %llu length %llu physical %llu", type,
		       (unsigned long long)ch->logical, (unsigned long long)ch->length,
		       (unsigned long long)ch->physical[0]);
		if (ch->num_stripes > 1)
			printf(" and %llu", (unsigned long long)ch->physical[1]);
		printf("\n");
	}
	printf("Tree blocks:        %u\n", res->nr_tree_blocks);
	printf("Writes:             %llu\n", (unsigned long long)res->nr_writes);
}

/* ---- the command ---- */

/* Check everything that needs no device, so that a bad option changes nothing. */
static int check_options(struct mkfs_opts *o, u64 size)
{
	int ret;

	ret = tlog_mkfs_check_cfg(&o->cfg);
	if (ret) {
		error_errno(ret, "invalid options");
		return ret;
	}
	if (check_sectorsize(o->cfg.sectorsize))
		return -EINVAL;
	if (size < tlog_mkfs_min_size(&o->cfg)) {
		error("size %llu is too small, the minimum is %llu bytes",
		      (unsigned long long)size, (unsigned long long)tlog_mkfs_min_size(&o->cfg));
		return -ENOSPC;
	}
	return 0;
}

static int open_target(const char *target, struct mkfs_opts *o, bool *created,
		       struct tlog_bdev **bdev)
{
	struct stat st;
	int ret;

	*created = false;
	if (stat(target, &st) == 0) {
		/* options first: their errors say more than "occupied" */
		if (check_options(o, o->size_set ? o->size : UINT64_MAX))
			return -EINVAL;
	} else if (errno == ENOENT) {
		u64 size = o->size_set ? o->size : DEFAULT_FILE_SIZE;

		if (check_options(o, size))
			return -EINVAL;
		ret = create_target(target, size);
		if (ret)
			return ret;
		*created = true;
	} else {
		error("cannot access %s: %s", target, strerror(errno));
		return -errno;
	}
	ret = open_target_for_writing(target, bdev);
	if (ret)
		goto fail;
	if (!*created) {
		ret = check_existing_signature(target, o->force);
		if (ret)
			goto fail_close;
	}
	if (!o->size_set && (*bdev)->size < tlog_mkfs_min_size(&o->cfg)) {
		error("%s is too small (%llu bytes), the minimum is %llu bytes", target,
		      (unsigned long long)(*bdev)->size,
		      (unsigned long long)tlog_mkfs_min_size(&o->cfg));
		ret = -ENOSPC;
		goto fail_close;
	}
	return 0;
fail_close:
	tlog_bdev_close(*bdev);
fail:
	if (*created)
		unlink(target);
	return ret;
}

static int cmd_mkfs(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct mkfs_opts o = { 0 };
	struct tlog_mkfs_result res = { 0 };
	struct tlog_bdev *bdev;
	const char *target;
	bool created;
	int ret;

	parse_options(cmd, argc, argv, &o);
	target = argv[optind];
	if (open_target(target, &o, &created, &bdev))
		return 1;
	if (o.size_set)
		o.cfg.total_bytes = o.size;
	ret = wrap_fault_from_env(&bdev);
	if (!ret) {
		tlog_error_clear();
		ret = tlog_mkfs(bdev, &o.cfg, &res);
		if (getenv(TLOG_FAULT_ENV))
			fprintf(stderr, "%s: fault injection %s: %llu writes issued\n",
				tlog_progname, getenv(TLOG_FAULT_ENV), (unsigned long long)res.nr_writes);
		if (ret)
			error_errno(ret, "cannot make a filesystem on %s", target);
	}
	tlog_bdev_close(bdev);
	if (ret) {
		/* a file we made ourselves holds nothing worth keeping */
		if (created && res.nr_writes == 0)
			unlink(target);
		return 1;
	}
	if (!o.quiet)
		print_summary(target, &o, &res);
	return 0;
}

const struct cmd_struct cmd_struct_mkfs = {
	.name = "mkfs",
	.fn = cmd_mkfs,
	.usage = mkfs_usage,
	.flags = CMD_WRITES,
};
