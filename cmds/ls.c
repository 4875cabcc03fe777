// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlogctl ls: list a directory of an unmounted image, as ls(1) would list
 * it on the mounted filesystem (top-level subvolume mounted).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "array.h"
#include "commands.h"
#include "errctx.h"
#include "inode-print.h"
#include "json-writer.h"
#include "messages.h"
#include "open.h"
#include "print-tree.h"
#include "strutil.h"
#include "path.h"

static const char * const ls_usage[] = {
	"tlogctl ls [-l] [-i] [-d] [--format json] IMAGE [PATH]",
	"List a directory of a btrfs image",
	"",
	"Entries are sorted by name.  PATH is absolute from the top-level",
	"subvolume (default /); subvolumes appear as directories and are",
	"entered like them.  A PATH that is not a directory lists itself.",
	"",
	"-l|--long           mode, links, owner, group, size, mtime (and symlink targets)",
	"-i|--inode          show inode numbers",
	"-d|--directory      list the directory itself, not its entries",
	NULL
};

struct ls_entry {
	char *name;
	size_t name_len;
	struct tlog_ino target;
	u8 type;
};

struct ls_list {
	struct tlog_fs *fs;
	struct btrfs_root *root;
	struct ls_entry *v;
	size_t nr, alloc;
	int err;
};

static int collect_entry(const struct tlog_dir_entry *de, void *arg)
{
	struct ls_list *list = arg;
	struct ls_entry *e;

	if (array_reserve(list->v, list->alloc, list->nr + 1))
		return -ENOMEM;
	e = &list->v[list->nr];
	e->name = malloc(de->name_len + 1);
	if (!e->name)
		return -ENOMEM;
	memcpy(e->name, de->name, de->name_len);
	e->name[de->name_len] = '\0';
	e->name_len = de->name_len;
	e->type = de->type;
	list->err = btrfs_entry_target(list->fs, list->root, de, &e->target);
	if (list->err) {
		free(e->name);
		return list->err;
	}
	list->nr++;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct ls_entry *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);

	if (c)
		return c;
	return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

struct ls_opts {
	bool longfmt;
	bool inode;
	bool json;
	struct json_writer jw;	/* entries are written one by one */
};

static void print_long(const struct ls_opts *o, const struct ls_entry *e,
		       const struct btrfs_inode_item *inode)
{
	u32 mode = btrfs_inode_item_mode(inode);
	time_t t = (time_t)btrfs_timespec_sec(&inode->mtime);
	char mstr[11], date[32];
	struct tm tm;

	mode_to_str(mode, mstr);
	if (localtime_r(&t, &tm))
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M", &tm);
	else
		snprintf(date, sizeof(date), "%lld", (long long)t);
	if (o->inode)
		printf("%llu ", (unsigned long long)e->target.ino);
	printf("%s %u %u %u ", mstr, btrfs_inode_item_nlink(inode),
	       btrfs_inode_item_uid(inode), btrfs_inode_item_gid(inode));
	if (S_ISCHR(mode) || S_ISBLK(mode))
		printf("%llu, %llu ", (unsigned long long)(btrfs_inode_item_rdev(inode) >> 20),
		       (unsigned long long)(btrfs_inode_item_rdev(inode) & 0xfffff));
	else
		printf("%llu ", (unsigned long long)btrfs_inode_item_size(inode));
	printf("%s %s", date, e->name);
	if (S_ISLNK(mode)) {
		char target[4096];

		if (btrfs_read_symlink(e->target.root, e->target.ino, target, sizeof(target)) >= 0)
			printf(" -> %s", target);
	}
	printf("\n");
}

/* Print one entry.  Returns 0 or -errno (after printing an error). */
static int show_entry(struct tlog_fs *fs, struct ls_opts *o, const struct ls_entry *e)
{
	struct btrfs_inode_item inode;
	int err;

	if (!o->longfmt && !o->json) {
		if (o->inode)
			printf("%llu ", (unsigned long long)e->target.ino);
		printf("%s\n", e->name);
		return 0;
	}
	tlog_error_clear();
	err = btrfs_read_inode(e->target.root, e->target.ino, &inode);
	if (err) {
		fflush(stdout);
		error_errno(err, "cannot read inode of '%s'", e->name);
		return err;
	}
	if (o->json) {
		json_object *j = inode_to_json(e->target.root->root_key.objectid, e->target.ino,
					       &inode, fs->sectorsize);

		json_object_object_add(j, "name", btrfs_json_bytes(e->name, e->name_len));
		if (S_ISLNK(btrfs_inode_item_mode(&inode))) {
			char target[4096];
			int len = btrfs_read_symlink(e->target.root, e->target.ino,
						     target, sizeof(target));

			if (len >= 0)
				json_object_object_add(j, "target", btrfs_json_bytes(target, len));
		}
		jsonw_json(&o->jw, j);
		return 0;
	}
	print_long(o, e, &inode);
	return 0;
}

static void free_list(struct ls_list *list)
{
	for (size_t i = 0; i < list->nr; i++)
		free(list->v[i].name);
	free(list->v);
}

static int cmd_ls(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "long", no_argument, NULL, 'l' },
		{ "inode", no_argument, NULL, 'i' },
		{ "directory", no_argument, NULL, 'd' },
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct cmd_common common = CMD_COMMON_INIT;
	struct ls_opts o = { 0 };
	struct ls_list list = { 0 };
	struct btrfs_inode_item inode;
	struct tlog_fs *fs;
	struct tlog_ino dir;
	const char *path = "/";
	bool self = false;
	int c, ret = 0, err;

	while ((c = cmd_next_option(cmd, argc, argv, "lid", long_options, &common)) != -1) {
		switch (c) {
		case 'l':
			o.longfmt = true;
			break;
		case 'i':
			o.inode = true;
			break;
		case 'd':
			self = true;
			break;
		}
	}
	check_argc(cmd, argc, 1, 2);
	if (argc - optind == 2)
		path = argv[optind + 1];
	o.json = common.format == OUTPUT_JSON;

	if (cmd_open_path(&common, argv[optind], path, &fs, &dir))
		return 1;
	err = btrfs_read_inode(dir.root, dir.ino, &inode);
	if (err) {
		error_errno(err, "cannot read %s", path);
		tlog_close(fs);
		return 1;
	}
	list.fs = fs;
	list.root = dir.root;
	if (self || !S_ISDIR(btrfs_inode_item_mode(&inode))) {
		/* list the path itself under its own name */
		const char *base = strrchr(path, '/');
		struct tlog_dir_entry de = {
			.location = { dir.ino, BTRFS_INODE_ITEM_KEY, 0 },
			.type = btrfs_mode_to_ftype(btrfs_inode_item_mode(&inode)),
		};

		base = base && base[1] ? base + 1 : path;
		de.name = base;
		de.name_len = strlen(base);
		err = collect_entry(&de, &list);
	} else {
		err = btrfs_iterate_dir(dir.root, dir.ino, collect_entry, &list);
	}
	if (err < 0) {
		error_errno(err, "cannot list %s", path);
		ret = 1;
		goto out;
	}
	if (list.nr)
		qsort(list.v, list.nr, sizeof(*list.v), cmp_entry);
	if (o.json) {
		jsonw_init(&o.jw, stdout);
		jsonw_start_object(&o.jw);
		jsonw_json_field(&o.jw, "path", btrfs_json_bytes(path, strlen(path)));
		jsonw_name(&o.jw, "entries");
		jsonw_start_array(&o.jw);
	}
	/* on a write error the rest would be lost too: the dispatcher reports it */
	for (size_t i = 0; i < list.nr && !output_failed(); i++)
		if (show_entry(fs, &o, &list.v[i]))
			ret = 1;
	if (o.json) {
		jsonw_end_array(&o.jw);
		jsonw_end_object(&o.jw);
		jsonw_end(&o.jw);
	}
out:
	free_list(&list);
	tlog_close(fs);
	return ret;
}

const struct cmd_struct cmd_struct_ls = {
	.name = "ls",
	.fn = cmd_ls,
	.usage = ls_usage,
	.flags = CMD_JSON | CMD_PATH,
};
