// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl stat: show one inode of an unmounted image as stat(1) shows it
 * on the mounted filesystem, plus the btrfs fields stat cannot see.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "errctx.h"
#include "inode-print.h"
#include "messages.h"
#include "open.h"
#include "print-tree.h"
#include "strutil.h"
#include "path.h"

static const char * const stat_usage[] = {
	"tlogctl stat [--format json] IMAGE PATH",
	"Show the inode at PATH in a btrfs image",
	"",
	"Size, blocks, links, mode, owner and times are those stat(2) reports on",
	"the mounted filesystem; the subvolume, inode generation, transid and",
	"btrfs inode flags are shown too.",
	"",
	NULL
};

static void print_time(const char *label, const struct btrfs_timespec *ts)
{
	char buf[80];

	timespec_to_str(btrfs_timespec_sec(ts), btrfs_timespec_nsec(ts), buf, sizeof(buf));
	printf("%s: %s\n", label, buf);
}

static void print_stat_text(const char *path, const struct tlog_ino *ino,
			    const struct btrfs_inode_item *inode, u32 sectorsize,
			    const char *target)
{
	u32 mode = btrfs_inode_item_mode(inode);
	char mstr[11];

	mode_to_str(mode, mstr);
	if (target)
		printf("  File: %s -> %s\n", path, target);
	else
		printf("  File: %s\n", path);
	printf("  Size: %-15llu Blocks: %-10llu IO Block: %-6u %s\n",
	       (unsigned long long)btrfs_inode_item_size(inode),
	       (unsigned long long)inode_st_blocks(inode, sectorsize), sectorsize,
	       inode_type_name(mode));
	printf("Subvol: %-15llu Inode: %-11llu Links: %u",
	       (unsigned long long)ino->root->root_key.objectid,
	       (unsigned long long)ino->ino, btrfs_inode_item_nlink(inode));
	if (S_ISCHR(mode) || S_ISBLK(mode))
		printf("     Device type: %llu,%llu",
		       (unsigned long long)(btrfs_inode_item_rdev(inode) >> 20),
		       (unsigned long long)(btrfs_inode_item_rdev(inode) & 0xfffff));
	printf("\n");
	printf("Access: (%04o/%s)  Uid: (%5u)   Gid: (%5u)\n", mode & 07777, mstr,
	       btrfs_inode_item_uid(inode), btrfs_inode_item_gid(inode));
	print_time("Access", &inode->atime);
	print_time("Modify", &inode->mtime);
	print_time("Change", &inode->ctime);
	print_time(" Birth", &inode->otime);
	printf("Generation: %llu  Transid: %llu  Sequence: %llu  Flags: 0x%llx\n",
	       (unsigned long long)btrfs_inode_item_generation(inode),
	       (unsigned long long)btrfs_inode_item_transid(inode),
	       (unsigned long long)btrfs_inode_item_sequence(inode),
	       (unsigned long long)btrfs_inode_item_flags(inode));
}

static int cmd_stat(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	struct btrfs_inode_item inode;
	struct tlog_fs *fs;
	struct tlog_ino ino;
	char target[4096];
	int ret = 0, err, tlen = -1;
	const char *path;

	cmd_parse_common_options(cmd, argc, argv, long_options, &common);
	check_argc(cmd, argc, 2, 2);
	path = argv[optind + 1];

	if (cmd_open_path(&common, argv[optind], path, &fs, &ino))
		return 1;
	err = btrfs_read_inode(ino.root, ino.ino, &inode);
	if (err) {
		error_errno(err, "cannot read %s", path);
		tlog_close(fs);
		return 1;
	}
	if (S_ISLNK(btrfs_inode_item_mode(&inode)))
		tlen = btrfs_read_symlink(ino.root, ino.ino, target, sizeof(target));

	if (common.format == OUTPUT_JSON) {
		json_object *j = inode_to_json(ino.root->root_key.objectid, ino.ino, &inode,
					       fs->sectorsize);

		json_object_object_add(j, "path", btrfs_json_bytes(path, strlen(path)));
		if (tlen >= 0)
			json_object_object_add(j, "target", btrfs_json_bytes(target, tlen));
		if (output_json(j))
			ret = 1;
	} else {
		print_stat_text(path, &ino, &inode, fs->sectorsize, tlen >= 0 ? target : NULL);
	}
	tlog_close(fs);
	return ret;
}

const struct cmd_struct cmd_struct_stat = {
	.name = "stat",
	.fn = cmd_stat,
	.usage = stat_usage,
	.flags = CMD_JSON | CMD_PATH,
};
