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
#include <grp.h>
#include <pwd.h>
#include <blkid/blkid.h>
#include <uuid/uuid.h>

#include "blockdev.h"
#include "commands.h"
#include "csum.h"
#include "errctx.h"
#include "messages.h"
#include "open.h"
#include "misc.h"
#include "mkfs.h"
#include "inode-ops.h"
#include "progress.h"
#include "rootdir.h"
#include "transaction.h"
#include "block-group.h"
#include "strutil.h"
#include "volumes.h"

#define DEFAULT_FILE_SIZE (1024ULL * 1024 * 1024)

static const char * const mkfs_usage[] = {
	"tlogctl mkfs [options] [-r SOURCE [populating options]] TARGET",
	"Create a btrfs filesystem",
	"",
	"Makes a new filesystem on TARGET, a block device or a file.  A file that",
	"does not exist is created, sparse, with the size given by -b (default",
	"1GiB, or what SOURCE needs).  Defaults are those of mkfs.btrfs 6.19 for",
	"one device.  A target holding a filesystem or partition table is only",
	"overwritten with -f; a mounted target never.",
	"",
	"With -r the filesystem is populated from SOURCE, a directory or an",
	"archive (any format libarchive reads; - for standard input), exactly:",
	"holes, hard links, devices, xattrs and ACLs, times with nanoseconds.",
	"With SOURCE_DATE_EPOCH set and -U, two runs give identical images.",
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
	"",
	"Populating:",
	"-r|--rootdir SOURCE     copy the directory or archive SOURCE into the filesystem",
	"-u|--subvol TYPE:SUBDIR make SUBDIR a subvolume; TYPE rw (default), ro, default",
	"                        or default-ro (the default subvolume; once at most)",
	"--compress ALGO[:LEVEL] compress data as the kernel would: no, zlib[:1-9], lzo,",
	"                        zstd[:1-15]",
	"--inode-flags FLAGS:PATH  nodatacow and/or nodatasum (comma-separated) for",
	"                        PATH and what a directory there holds",
	"--reflink               clone file data from SOURCE where it shares a",
	"                        filesystem with TARGET, instead of copying it",
	"--shrink                make the filesystem just big enough (and a file TARGET)",
	"--owner UID:GID         give every file this owner",
	NULL
};

enum {
	GETOPT_VAL_CSUM = GETOPT_VAL_FIRST_CMD,
	GETOPT_VAL_COMPRESS,
	GETOPT_VAL_INODE_FLAGS,
	GETOPT_VAL_REFLINK,
	GETOPT_VAL_SHRINK,
	GETOPT_VAL_OWNER,
};

struct mkfs_opts {
	struct tlog_mkfs_cfg cfg;
	bool force;
	bool quiet;
	bool verbose;
	bool size_set;
	u64 size;
	/* populating (-r) */
	const char *rootdir;
	struct tlog_rootdir_opts pop;
	struct tlog_rootdir_subvol *subvols;
	struct tlog_rootdir_iflags *iflags;
	char compress[32];		/* the mount option, "" for none */
	bool shrink;
	bool epoch_set;
	u64 epoch;
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

/* ---- populating options ---- */

/*
 * A path inside SOURCE as the populator names entries: relative, no
 * leading "./" or "/", no trailing or doubled slash.  The source root
 * itself ("") and ".." are refused: neither can be a subvolume or carry
 * flags of its own.
 */
static int parse_source_path(const char *opt, const char *arg, const char **ret)
{
	int err = tlog_rootdir_path_normalize(arg, (char **)ret);

	if (err == -ENOMEM) {
		error("out of memory");
		return err;
	}
	if (!err && !**ret) {
		free((char *)*ret);
		err = -EINVAL;
	}
	if (err) {
		error("invalid %s path '%s' (a path inside the source directory expected)", opt, arg);
		return -EINVAL;
	}
	return 0;
}

static const struct {
	const char *name;
	enum tlog_subvol_type type;
} subvol_types[] = {
	{ "rw", TLOG_SUBVOL_RW },
	{ "ro", TLOG_SUBVOL_RO },
	{ "default", TLOG_SUBVOL_DEFAULT },
	{ "default-ro", TLOG_SUBVOL_DEFAULT_RO },
};

/* -u [TYPE:]SUBDIR, TYPE rw when left out, as mkfs.btrfs takes it. */
static int parse_subvol(const char *arg, struct mkfs_opts *o)
{
	struct tlog_rootdir_subvol sv = { .type = TLOG_SUBVOL_RW };
	const char *colon = strchr(arg, ':'), *path = arg;
	void *grown;

	for (size_t i = 0; colon && i < ARRAY_SIZE(subvol_types); i++) {
		if (strlen(subvol_types[i].name) == (size_t)(colon - arg) &&
		    !strncmp(arg, subvol_types[i].name, colon - arg)) {
			sv.type = subvol_types[i].type;
			path = colon + 1;
		}
	}
	if (path == arg && colon) {
		error("unknown subvolume type in '%s' (use rw, ro, default or default-ro)", arg);
		return -EINVAL;
	}
	if (parse_source_path("--subvol", path, &sv.path))
		return -EINVAL;
	for (size_t i = 0; i < o->pop.nr_subvols; i++) {
		bool dflt = sv.type == TLOG_SUBVOL_DEFAULT || sv.type == TLOG_SUBVOL_DEFAULT_RO;
		enum tlog_subvol_type t = o->subvols[i].type;

		if (!strcmp(o->subvols[i].path, sv.path)) {
			error("subvolume '%s' given twice", sv.path);
			free((char *)sv.path);
			return -EINVAL;
		}
		if (dflt && (t == TLOG_SUBVOL_DEFAULT || t == TLOG_SUBVOL_DEFAULT_RO)) {
			error("only one default subvolume can be given ('%s' and '%s')",
			      o->subvols[i].path, sv.path);
			free((char *)sv.path);
			return -EINVAL;
		}
	}
	grown = realloc(o->subvols, (o->pop.nr_subvols + 1) * sizeof(*o->subvols));
	if (!grown) {
		error("out of memory");
		free((char *)sv.path);
		return -ENOMEM;
	}
	o->subvols = grown;
	o->subvols[o->pop.nr_subvols++] = sv;
	o->pop.subvols = o->subvols;
	return 0;
}

/* --inode-flags nodatacow,nodatasum:PATH */
static int parse_inode_flags(const char *arg, struct mkfs_opts *o)
{
	const char *colon = strchr(arg, ':');
	struct tlog_rootdir_iflags f = { 0 };
	char names[64];
	char *save = NULL, *tok;
	void *grown;

	if (!colon || (size_t)(colon - arg) >= sizeof(names)) {
		error("invalid --inode-flags '%s' (FLAGS:PATH expected)", arg);
		return -EINVAL;
	}
	memcpy(names, arg, colon - arg);
	names[colon - arg] = 0;
	for (tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "nodatacow")) {
			f.flags |= BTRFS_INODE_NODATACOW;
		} else if (!strcmp(tok, "nodatasum")) {
			f.flags |= BTRFS_INODE_NODATASUM;
		} else {
			error("unknown inode flag '%s' (use nodatacow or nodatasum)", tok);
			return -EINVAL;
		}
	}
	if (!f.flags) {
		error("invalid --inode-flags '%s' (no flag given)", arg);
		return -EINVAL;
	}
	if (parse_source_path("--inode-flags", colon + 1, &f.path))
		return -EINVAL;
	grown = realloc(o->iflags, (o->pop.nr_iflags + 1) * sizeof(*o->iflags));
	if (!grown) {
		error("out of memory");
		free((char *)f.path);
		return -ENOMEM;
	}
	o->iflags = grown;
	o->iflags[o->pop.nr_iflags++] = f;
	o->pop.iflags = o->iflags;
	return 0;
}

/*
 * --compress ALGO[:LEVEL] with mkfs.btrfs 6.19's names and level ranges,
 * kept as the mount option the inode operations take: the image gets
 * what a mount with compress=ALGO:LEVEL writes (incompressible data
 * stays plain, as the kernel decides).
 */
static int parse_compress_opt(const char *arg, struct mkfs_opts *o)
{
	static const struct {
		const char *name;
		int max_level;
	} algos[] = { { "zlib", 9 }, { "lzo", 0 }, { "zstd", 15 } };
	const char *colon = strchr(arg, ':');
	size_t len = colon ? (size_t)(colon - arg) : strlen(arg);

	if (!strcmp(arg, "no") || !strcmp(arg, "none")) {
		o->compress[0] = 0;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(algos); i++) {
		char *end;
		long level = 0;

		if (strlen(algos[i].name) != len || strncmp(arg, algos[i].name, len))
			continue;
		if (colon) {
			errno = 0;
			level = strtol(colon + 1, &end, 10);
			if (!colon[1] || *end || errno || level < 1 || level > algos[i].max_level) {
				if (algos[i].max_level)
					error("invalid %s level '%s' (1 to %d)", algos[i].name,
					      colon + 1, algos[i].max_level);
				else
					error("%s takes no level", algos[i].name);
				return -EINVAL;
			}
		}
		snprintf(o->compress, sizeof(o->compress), "compress=%.*s", (int)len, arg);
		if (colon)
			snprintf(o->compress + strlen(o->compress),
				 sizeof(o->compress) - strlen(o->compress), ":%ld", level);
		return 0;
	}
	error("unknown compression '%s' (use no, zlib, lzo or zstd)", arg);
	return -EINVAL;
}

static int parse_id(const char *s, size_t len, bool group, u32 *ret)
{
	char buf[256], *end;
	unsigned long v;

	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (!*end && !errno && v <= UINT32_MAX - 1 && buf[0] != '-') {
		*ret = v;
		return 0;
	}
	if (group) {
		struct group *gr = getgrnam(buf);

		if (gr) {
			*ret = gr->gr_gid;
			return 0;
		}
	} else {
		struct passwd *pw = getpwnam(buf);

		if (pw) {
			*ret = pw->pw_uid;
			return 0;
		}
	}
	return -EINVAL;
}

/* --owner UID:GID, numbers or names */
static int parse_owner(const char *arg, struct mkfs_opts *o)
{
	const char *colon = strchr(arg, ':');

	if (!colon || parse_id(arg, colon - arg, false, &o->pop.uid) ||
	    parse_id(colon + 1, strlen(colon + 1), true, &o->pop.gid)) {
		error("invalid --owner '%s' (UID:GID expected, numbers or names)", arg);
		return -EINVAL;
	}
	o->pop.set_owner = true;
	return 0;
}

/*
 * SOURCE_DATE_EPOCH (reproducible-builds.org): no time in the image later
 * than it, and the filesystem's own times are it.
 */
static int parse_epoch(struct mkfs_opts *o)
{
	const char *env = getenv("SOURCE_DATE_EPOCH");
	unsigned long long v;
	char *end;

	if (!env || !*env)
		return 0;
	errno = 0;
	v = strtoull(env, &end, 10);
	if (*end || errno || env[0] == '-') {
		error("invalid SOURCE_DATE_EPOCH '%s' (seconds since 1970 expected)", env);
		return -EINVAL;
	}
	o->epoch_set = true;
	o->epoch = v;
	return 0;
}

/* The paths --subvol and --inode-flags gave, normalised into allocated strings. */
static void free_rootdir_options(struct mkfs_opts *o)
{
	for (size_t i = 0; i < o->pop.nr_subvols; i++)
		free((char *)o->subvols[i].path);
	for (size_t i = 0; i < o->pop.nr_iflags; i++)
		free((char *)o->iflags[i].path);
	free(o->subvols);
	free(o->iflags);
}

/* Options that only mean something with -r, and combinations that cannot work. */
static int check_rootdir_options(const struct mkfs_opts *o)
{
	const char *only = o->pop.nr_subvols ? "--subvol" : o->pop.nr_iflags ? "--inode-flags" :
			   o->compress[0] ? "--compress" : o->pop.reflink ? "--reflink" :
			   o->shrink ? "--shrink" : o->pop.set_owner ? "--owner" : NULL;

	if (!o->rootdir && only) {
		error("%s needs --rootdir", only);
		return -EINVAL;
	}
	if (o->pop.reflink && o->compress[0]) {
		error("--reflink and --compress exclude each other (cloned data stays as it is)");
		return -EINVAL;
	}
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
		{ "rootdir", required_argument, NULL, 'r' },
		{ "subvol", required_argument, NULL, 'u' },
		{ "compress", required_argument, NULL, GETOPT_VAL_COMPRESS },
		{ "inode-flags", required_argument, NULL, GETOPT_VAL_INODE_FLAGS },
		{ "reflink", no_argument, NULL, GETOPT_VAL_REFLINK },
		{ "shrink", no_argument, NULL, GETOPT_VAL_SHRINK },
		{ "owner", required_argument, NULL, GETOPT_VAL_OWNER },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	int c, ret = 0, type;

	tlog_mkfs_default_cfg(&o->cfg);
	while (!ret && (c = cmd_next_option(cmd, argc, argv, "fqvL:U:b:n:s:m:d:O:R:Kr:u:",
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
		case 'r':
			o->rootdir = optarg;
			break;
		case 'u':
			ret = parse_subvol(optarg, o);
			break;
		case GETOPT_VAL_COMPRESS:
			ret = parse_compress_opt(optarg, o);
			break;
		case GETOPT_VAL_INODE_FLAGS:
			ret = parse_inode_flags(optarg, o);
			break;
		case GETOPT_VAL_REFLINK:
			o->pop.reflink = true;
			break;
		case GETOPT_VAL_SHRINK:
			o->shrink = true;
			break;
		case GETOPT_VAL_OWNER:
			ret = parse_owner(optarg, o);
			break;
		}
	}
	if (!ret)
		ret = check_rootdir_options(o);
	if (!ret)
		ret = parse_epoch(o);
	if (ret) {
		free_rootdir_options(o);
		exit(1);
	}
	/* -U makes the other UUIDs too: the same -U, the same image */
	o->cfg.derive_uuids = o->cfg.fsid_set;
	if (o->epoch_set) {
		o->cfg.time_set = true;
		o->cfg.time_sec = o->epoch;
		o->pop.clamp_times = true;
		o->pop.clamp_sec = o->epoch;
	}
	/* a new filesystem has one superblock to write, not a copy to pick */
	if (common.super_mirror >= 0) {
		error("mkfs does not take --super");
		free_rootdir_options(o);
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

/* ---- populating from a source ---- */

struct rootdir_run {
	struct tlog_rootdir_stats stats;
	struct progress progress;
	u64 new_size;			/* --shrink: the size the filesystem got */
};

static void rootdir_progress(void *ctx, const struct tlog_rootdir_stats *st, bool done)
{
	struct rootdir_run *run = ctx;
	char text[96], size[32];

	if (done || !progress_due(&run->progress))
		return;
	pretty_size(st->data_bytes, size, sizeof(size));
	snprintf(text, sizeof(text), "%llu entries, %s of data",
		 (unsigned long long)st->entries, size);
	progress_text(&run->progress, text);
}

/*
 * The source's size estimate, for sizing a new or small file target: its
 * data and metadata, the metadata twice (DUP), and room for the chunks'
 * rounding.  An archive is guessed from its file size (a pipe: nothing).
 */
static u64 estimate_source(const char *path)
{
	struct stat st;
	u64 bytes = 0;

	if (!strcmp(path, "-") || stat(path, &st))
		return 0;
	if (S_ISDIR(st.st_mode)) {
		if (tlog_source_estimate_dir(path, &bytes))
			return 0;
	} else if (S_ISREG(st.st_mode)) {
		bytes = (u64)st.st_size * 4;
	}
	return bytes ? bytes + bytes / 4 + 256ULL * 1024 * 1024 : 0;
}

/*
 * The summary shows the filesystem as made: after populating, the chunks
 * of each type added up (the data chunk grew from mkfs's 8 MiB) and the
 * size and use at the last commit.
 */
static void record_layout(const struct tlog_fs *fs, struct tlog_mkfs_result *res)
{
	static const u64 types[3] = {
		BTRFS_BLOCK_GROUP_SYSTEM, BTRFS_BLOCK_GROUP_METADATA, BTRFS_BLOCK_GROUP_DATA
	};

	for (int i = 0; i < 3; i++)
		res->chunks[i].length = 0;
	for (size_t c = 0; c < fs->chunks.nr; c++) {
		const struct map_lookup *m = &fs->chunks.maps[c];

		for (int i = 0; i < 3; i++)
			if ((m->type & BTRFS_BLOCK_GROUP_TYPE_MASK) == types[i])
				res->chunks[i].length += m->length;
	}
	res->total_bytes = btrfs_super_block_total_bytes(&fs->super);
	res->bytes_used = btrfs_super_block_bytes_used(&fs->super);
	res->generation = fs->generation;
}

/* Mount the new filesystem, copy the source in, commit; --shrink last. */
static int populate(struct tlog_bdev *bdev, struct mkfs_opts *o, struct tlog_source *src,
		    struct tlog_mkfs_result *res, struct rootdir_run *run)
{
	struct tlog_open_opts oo = { .super_mirror = -1, .writable = true };
	struct tlog_mount *mnt = NULL;
	struct tlog_trans *trans;
	struct tlog_fs *fs;
	int ret;

	ret = tlog_open_bdev(bdev, &oo, &fs);
	if (ret)
		return ret;
	if (o->cfg.derive_uuids)
		tlog_fs_set_uuid_seed(fs, o->cfg.fsid);
	ret = tlog_mount_open(fs, &mnt);
	if (!ret && o->epoch_set)
		tlog_mount_set_fixed_time(mnt, o->epoch);
	if (!ret && o->compress[0])
		ret = tlog_mount_set_options(mnt, o->compress);
	if (!ret) {
		o->pop.progress = rootdir_progress;
		o->pop.progress_ctx = run;
		ret = tlog_rootdir_populate(mnt, src, &o->pop, &run->stats);
	}
	if (!ret)
		ret = tlog_sync(mnt);
	if (!ret && o->shrink) {
		ret = tlog_mount_trans(mnt, &trans);
		if (!ret)
			ret = btrfs_shrink_to_fit(trans, &run->new_size);
		if (!ret)
			ret = tlog_commit(mnt);
	}
	if (!ret)
		record_layout(fs, res);
	if (mnt)
		tlog_mount_close(mnt);
	tlog_close(fs);
	return ret;
}

/*
 * mkfs -r: the empty filesystem is made and populated with its
 * superblocks held back (tlog_bdev_wrap_hold_super), over a target whose
 * old superblocks were wiped first.  Until the last step no superblock
 * is on the target: a failed or cut run leaves no filesystem, never a
 * half-populated one that mounts.
 */
static int mkfs_rootdir(const char *target, struct mkfs_opts *o, struct tlog_source *src,
			struct tlog_bdev *bdev, struct tlog_mkfs_result *res, struct rootdir_run *run)
{
	struct tlog_bdev *hold;
	int ret;

	ret = tlog_bdev_wipe_super(bdev);
	if (ret)
		return ret;
	ret = tlog_bdev_wrap_hold_super(tlog_bdev_get(bdev), &hold);
	if (ret)
		return ret;
	progress_init_count(&run->progress, "copying", !o->quiet);
	ret = tlog_mkfs(hold, &o->cfg, res);
	if (!ret)
		ret = populate(hold, o, src, res, run);
	progress_end(&run->progress);
	if (!ret)
		ret = tlog_bdev_release_super(hold);
	tlog_bdev_close(hold);
	if (!ret && o->shrink && run->new_size) {
		struct stat st;

		res->total_bytes = run->new_size;
		if (stat(target, &st) == 0 && S_ISREG(st.st_mode) &&
		    truncate(target, (off_t)run->new_size) < 0)
			ret = tlog_error(-errno, "cannot truncate %s to %llu bytes: %s", target,
					 (unsigned long long)run->new_size, strerror(errno));
	}
	return ret;
}

static void print_rootdir_summary(const struct mkfs_opts *o, const struct rootdir_run *run)
{
	const struct tlog_rootdir_stats *st = &run->stats;
	char data[32], holes[32], cloned[32];

	pretty_size(st->data_bytes, data, sizeof(data));
	pretty_size(st->hole_bytes, holes, sizeof(holes));
	printf("Rootdir from:       %s\n", o->rootdir);
	printf("  Entries:          %llu (%llu files, %llu directories, %llu symlinks, %llu other; %llu hard links)\n",
	       (unsigned long long)st->entries, (unsigned long long)st->files,
	       (unsigned long long)st->dirs, (unsigned long long)st->symlinks,
	       (unsigned long long)st->specials, (unsigned long long)st->hardlinks);
	printf("  Data:             %s (holes %s)\n", data, holes);
	if (o->pop.reflink) {
		pretty_size(st->cloned_bytes, cloned, sizeof(cloned));
		printf("  Cloned:           %s\n", cloned);
	}
	printf("  Xattrs:           %llu\n", (unsigned long long)st->xattrs);
	if (o->pop.nr_subvols)
		printf("  Subvolumes:       %llu\n", (unsigned long long)st->subvols);
	if (o->compress[0])
		printf("  Compression:      %s\n", o->compress + strlen("compress="));
	if (o->shrink)
		printf("  Shrunk:           yes\n");
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

/*
 * The size a file target gets when -b does not say: 1 GiB, or what the
 * source needs when that is more (mkfs.btrfs grows a file target to its
 * estimate of the source in the same way).
 */
static u64 wanted_file_size(const struct mkfs_opts *o, u64 source_bytes)
{
	u64 size = DEFAULT_FILE_SIZE;

	if (o->size_set)
		return o->size;
	if (source_bytes > size)
		size = round_up(source_bytes, 1024 * 1024);
	return size;
}

/*
 * An existing file target smaller than the source needs is grown (as
 * mkfs.btrfs does), unless -b fixed the size.  Done on the claimed,
 * checked target; the device is reopened to see the new size.
 */
static int grow_file_target(const char *target, const struct mkfs_opts *o, u64 source_bytes,
			    struct tlog_bdev **bdev)
{
	u64 want = wanted_file_size(o, source_bytes);
	struct stat st;

	if (!o->rootdir || o->size_set || stat(target, &st) || !S_ISREG(st.st_mode) ||
	    (u64)st.st_size >= want)
		return 0;
	if (truncate(target, (off_t)want) < 0) {
		error("cannot grow %s to %llu bytes: %s", target, (unsigned long long)want,
		      strerror(errno));
		return -errno;
	}
	tlog_bdev_close(*bdev);
	*bdev = NULL;
	return open_target_for_writing(target, bdev);
}

static int open_target(const char *target, struct mkfs_opts *o, u64 source_bytes,
		       bool *created, struct tlog_bdev **bdev)
{
	struct stat st;
	int ret;

	*created = false;
	if (stat(target, &st) == 0) {
		/* options first: their errors say more than "occupied" */
		if (check_options(o, o->size_set ? o->size : UINT64_MAX))
			return -EINVAL;
	} else if (errno == ENOENT) {
		u64 size = wanted_file_size(o, source_bytes);

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
		ret = grow_file_target(target, o, source_bytes, bdev);
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
	if (*bdev)
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
	struct rootdir_run run = { 0 };
	struct tlog_source *src = NULL;
	struct tlog_bdev *bdev;
	const char *target;
	bool created;
	int ret;

	parse_options(cmd, argc, argv, &o);
	target = argv[optind];
	/* the source first: a missing or unreadable one changes nothing */
	if (o.rootdir) {
		tlog_error_clear();
		ret = tlog_source_open(o.rootdir, &src);
		if (ret) {
			error_errno(ret, "cannot read %s", o.rootdir);
			return 1;
		}
	}
	if (open_target(target, &o, src && !o.size_set ? estimate_source(o.rootdir) : 0, &created, &bdev)) {
		tlog_source_close(src);
		return 1;
	}
	if (o.size_set)
		o.cfg.total_bytes = o.size;
	ret = wrap_fault_from_env(&bdev);
	if (!ret && src) {
		tlog_error_clear();
		ret = mkfs_rootdir(target, &o, src, bdev, &res, &run);
		res.nr_writes = bdev->nr_writes;
		if (getenv(TLOG_FAULT_ENV))
			fprintf(stderr, "%s: fault injection %s: %llu writes issued\n",
				tlog_progname, getenv(TLOG_FAULT_ENV), (unsigned long long)res.nr_writes);
		if (ret == -ENOSPC)
			error_errno(ret, "%s does not fit on %s (make it bigger with -b)", o.rootdir,
				    target);
		else if (ret)
			error_errno(ret, "cannot make a filesystem from %s on %s", o.rootdir, target);
	} else if (!ret) {
		tlog_error_clear();
		ret = tlog_mkfs(bdev, &o.cfg, &res);
		if (getenv(TLOG_FAULT_ENV))
			fprintf(stderr, "%s: fault injection %s: %llu writes issued\n",
				tlog_progname, getenv(TLOG_FAULT_ENV), (unsigned long long)res.nr_writes);
		if (ret)
			error_errno(ret, "cannot make a filesystem on %s", target);
	}
	tlog_bdev_close(bdev);
	tlog_source_close(src);
	free_rootdir_options(&o);
	if (ret) {
		/* a file we made ourselves holds nothing worth keeping */
		if (created && res.nr_writes == 0)
			unlink(target);
		return 1;
	}
	if (!o.quiet) {
		print_summary(target, &o, &res);
		if (o.rootdir)
			print_rootdir_summary(&o, &run);
	}
	return 0;
}

const struct cmd_struct cmd_struct_mkfs = {
	.name = "mkfs",
	.fn = cmd_mkfs,
	.usage = mkfs_usage,
	.flags = CMD_WRITES,
};
