// SPDX-License-Identifier: GPL-2.0-only
/*
 * The archive source of mkfs --rootdir (rootdir.h): any format and
 * compression libarchive reads, from a file or standard input.  Owners,
 * modes, device numbers, times, xattrs, ACLs and sparse maps are the
 * archive's, so an image of a system tree needs no root privileges.
 *
 * Paths are brought to the one spelling of struct tlog_src_entry
 * (tlog_rootdir_path_normalize); one with a ".." component is refused,
 * since an archive must not reach out of the tree.  Names are taken as
 * the archive's bytes: a name libarchive cannot convert to the locale
 * (the process's is "C") comes with a warning but unchanged, and is used.
 *
 * POSIX.1e ACLs (tar --acls, SCHILY.acl.*) arrive parsed, in
 * libarchive's entries; the filesystem keeps them as the xattrs
 * system.posix_acl_access and system.posix_acl_default in the kernel's
 * format, so they are converted to that.  An archive that already holds
 * those xattrs (tar --xattrs with system.* included) is taken as it is.
 * NFSv4 ACLs have no place on btrfs and are not copied.
 *
 * A damaged or truncated archive is an error naming the entry, never a
 * short tree presented as whole.
 */
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* for the types and constants only: the functions come from la below */
#include <archive.h>
#include <archive_entry.h>

#include "array.h"
#include "errctx.h"
#include "rootdir.h"

/*
 * libarchive is loaded the first time an archive is opened, not linked:
 * linked, it and what it pulls in (libxml2, ICU, libstdc++, nettle...: 14
 * of 25 shared objects) made every command start in 4.5 ms, not 2.2 ms.
 */
#ifndef TLOG_ARCHIVE_SONAME
#define TLOG_ARCHIVE_SONAME	"libarchive.so.13"
#endif

/* Every libarchive function this file calls, each named once. */
#define ARCHIVE_FUNCS(X)									\
	X(archive_read_new) X(archive_read_support_filter_all)					\
	X(archive_read_support_format_all) X(archive_read_open_fd)				\
	X(archive_read_open_filename) X(archive_read_next_header)				\
	X(archive_read_data_block) X(archive_read_free)						\
	X(archive_errno) X(archive_error_string)						\
	X(archive_format) X(archive_filter_count) X(archive_filter_code)			\
	X(archive_entry_pathname) X(archive_entry_pathname_utf8)				\
	X(archive_entry_hardlink) X(archive_entry_hardlink_utf8)				\
	X(archive_entry_symlink) X(archive_entry_symlink_utf8)					\
	X(archive_entry_mode) X(archive_entry_uid) X(archive_entry_gid)				\
	X(archive_entry_rdev) X(archive_entry_nlink)						\
	X(archive_entry_size) X(archive_entry_size_is_set)					\
	X(archive_entry_atime) X(archive_entry_atime_nsec) X(archive_entry_atime_is_set)	\
	X(archive_entry_ctime) X(archive_entry_ctime_nsec) X(archive_entry_ctime_is_set)	\
	X(archive_entry_mtime) X(archive_entry_mtime_nsec) X(archive_entry_mtime_is_set)	\
	X(archive_entry_birthtime) X(archive_entry_birthtime_nsec)				\
	X(archive_entry_birthtime_is_set)							\
	X(archive_entry_acl_reset) X(archive_entry_acl_next)					\
	X(archive_entry_xattr_reset) X(archive_entry_xattr_next)

/* Each function as a pointer of its own type, filled by archive_lib_resolve(). */
static struct {
#define X(f)	__typeof__(f) *f;
	ARCHIVE_FUNCS(X)
#undef X
} la;

static pthread_once_t la_once = PTHREAD_ONCE_INIT;
static bool la_loaded;
static char la_failure[256];	/* why not, from dlerror() */

/* Once per process: the library and every function of ARCHIVE_FUNCS, or la_failure. */
static void archive_lib_resolve(void)
{
	void *h = dlopen(TLOG_ARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *msg;

	if (!h)
		goto fail;
#define X(f)	if (!(la.f = (__typeof__(la.f))dlsym(h, #f))) goto fail;
	ARCHIVE_FUNCS(X)
#undef X
	la_loaded = true;
	return;
fail:
	msg = dlerror();	/* before dlclose, which may reset it */
	snprintf(la_failure, sizeof(la_failure), "%s", msg ? msg : "unknown error");
	if (h)
		dlclose(h);
}

/* la filled on the first call: 0, or -ENOENT with the reason in the error context. */
static int archive_lib_load(void)
{
	pthread_once(&la_once, archive_lib_resolve);
	if (la_loaded)
		return 0;
	return tlog_error(-ENOENT, TLOG_ARCHIVE_SONAME " could not be loaded (%s): "
			  "install the Debian package libarchive13", la_failure);
}

#define ARCHIVE_BLOCK	65536

/* The kernel's ACL xattr format (include/uapi/linux/posix_acl_xattr.h). */
#define ACL_XATTR_VERSION	2
#define ACL_TAG_USER_OBJ	0x01
#define ACL_TAG_USER		0x02
#define ACL_TAG_GROUP_OBJ	0x04
#define ACL_TAG_GROUP		0x08
#define ACL_TAG_MASK		0x10
#define ACL_TAG_OTHER		0x20
#define ACL_UNDEFINED_ID	0xffffffffU
#define ACL_ENTRY_SIZE		8
#define ACL_HEADER_SIZE		4

#define XATTR_ACL_ACCESS	"system.posix_acl_access"
#define XATTR_ACL_DEFAULT	"system.posix_acl_default"

struct acl_ent {
	u16 tag, perm;
	u32 id;
};

/* One ACL being converted, and its value in the kernel's format. */
struct acl_buf {
	struct acl_ent *ents;
	size_t nr, alloc;
	u8 *value;
	size_t value_alloc;
};

/* An xattr and where it came in the archive: the first of one name wins. */
struct src_xattr_ord {
	struct tlog_src_xattr x;
	size_t order;
};

struct archive_source {
	struct tlog_source src;
	struct archive *a;
	struct archive_entry *primed;	/* the first header, read by open */
	int primed_ret;
	bool has_primed;
	char *path, *hardlink;		/* normalised, of the current entry */
	struct src_xattr_ord *xo;
	size_t xo_alloc;
	struct tlog_src_xattr *xattrs;
	size_t xattrs_alloc;
	struct acl_buf acl_access, acl_default;
	/* the data of the current entry */
	bool has_data;
	u64 size, data_end;
};

static struct archive_source *arc_of(struct tlog_source *src)
{
	return (struct archive_source *)src;
}

static const char *arc_msg(struct archive_source *as)
{
	const char *msg = la.archive_error_string(as->a);

	return msg ? msg : "unknown error";
}

/* Record "ARCHIVE: PATH: MESSAGE" and return @err. */
static int entry_error(struct archive_source *as, int err, const char *msg)
{
	return tlog_error(err, "%s: %s: %s", as->src.name,
			  as->path ? (as->path[0] ? as->path : ".") : "(first entry)", msg);
}

/* ---- paths ---- */

/* @raw of the entry at @what as the contract spells paths, into *@out. */
static int normalize(struct archive_source *as, const char *raw, char **out)
{
	int err = tlog_rootdir_path_normalize(raw, out);

	if (err == -EINVAL)
		return tlog_error(err, "%s: %s: a \"..\" component reaches out of the tree",
				  as->src.name, raw);
	if (err)
		return tlog_error(err, "%s: out of memory", as->src.name);
	return 0;
}

/* The entry's pathname (or hardlink target, @link) as the archive's bytes. */
static const char *raw_name(struct archive_entry *ae, bool link)
{
	const char *p = link ? la.archive_entry_hardlink(ae) : la.archive_entry_pathname(ae);

	if (!p)
		p = link ? la.archive_entry_hardlink_utf8(ae) : la.archive_entry_pathname_utf8(ae);
	return p;
}

/* ---- ACLs ---- */

static int cmp_acl_ent(const void *a, const void *b)
{
	const struct acl_ent *x = a, *y = b;

	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static u16 acl_tag_of(int tag)
{
	switch (tag) {
	case ARCHIVE_ENTRY_ACL_USER_OBJ:	return ACL_TAG_USER_OBJ;
	case ARCHIVE_ENTRY_ACL_USER:		return ACL_TAG_USER;
	case ARCHIVE_ENTRY_ACL_GROUP_OBJ:	return ACL_TAG_GROUP_OBJ;
	case ARCHIVE_ENTRY_ACL_GROUP:		return ACL_TAG_GROUP;
	case ARCHIVE_ENTRY_ACL_MASK:		return ACL_TAG_MASK;
	case ARCHIVE_ENTRY_ACL_OTHER:		return ACL_TAG_OTHER;
	default:				return 0;
	}
}

static int acl_add(struct acl_buf *acl, u16 tag, u16 perm, u32 id)
{
	int err = array_reserve(acl->ents, acl->alloc, acl->nr + 1);

	if (!err)
		acl->ents[acl->nr++] = (struct acl_ent){ tag, perm, id };
	return err;
}

static bool acl_has(const struct acl_buf *acl, u16 tag)
{
	for (size_t i = 0; i < acl->nr; i++)
		if (acl->ents[i].tag == tag)
			return true;
	return false;
}

/*
 * The number of user (@user) or group @name on this system.  GNU tar
 * writes an ACL's names, not its numbers, where the names are known
 * (tar --acls without --xattrs); extracting, tar looks them up, and so
 * does this.
 */
static bool id_of_name(bool user, const char *name, int *id)
{
	size_t size = 4096;
	bool found = false;
	char *buf = NULL;
	int err;

	if (!name || !name[0])
		return false;
	do {
		struct passwd pw, *pwr = NULL;
		struct group gr, *grr = NULL;
		char *nbuf = realloc(buf, size *= 2);

		if (!nbuf)
			break;
		buf = nbuf;
		if (user) {
			err = getpwnam_r(name, &pw, buf, size, &pwr);
			if (!err && pwr && pwr->pw_uid <= INT_MAX) {
				*id = (int)pwr->pw_uid;
				found = true;
			}
		} else {
			/* a group's member list can be long: ERANGE asks for more room */
			err = getgrnam_r(name, &gr, buf, size, &grr);
			if (!err && grr && grr->gr_gid <= INT_MAX) {
				*id = (int)grr->gr_gid;
				found = true;
			}
		}
	} while (err == ERANGE && size < (1U << 24));
	free(buf);
	return found;
}

/* The entries of @type libarchive holds, into @acl. */
static int acl_collect(struct archive_source *as, struct archive_entry *ae, int type,
		       struct acl_buf *acl)
{
	int etype, perm, tag, id;
	const char *name;

	acl->nr = 0;
	while (la.archive_entry_acl_next(ae, type, &etype, &perm, &tag, &id, &name) ==
	       ARCHIVE_OK) {
		u16 t = acl_tag_of(tag);
		int err;

		if (!t)
			continue;
		if ((t == ACL_TAG_USER || t == ACL_TAG_GROUP) && id < 0 &&
		    !id_of_name(t == ACL_TAG_USER, name, &id))
			return tlog_error(-EINVAL, "%s: %s: ACL entry for %s \"%s\", unknown here",
					  as->src.name, as->path,
					  t == ACL_TAG_USER ? "user" : "group", name ? name : "");
		err = acl_add(acl, t, (u16)(perm & 7),
			      t == ACL_TAG_USER || t == ACL_TAG_GROUP ? (u32)id : ACL_UNDEFINED_ID);
		if (err)
			return entry_error(as, err, "out of memory");
	}
	return 0;
}

/*
 * Make @acl one the kernel accepts (posix_acl_valid): the three base
 * entries (from @mode where missing, as setfacl does), a mask where named
 * entries need one (the union of the group class), each tag and id once,
 * in tag then id order.
 */
static int acl_complete(struct acl_buf *acl, u32 mode)
{
	u16 group_class = 0;
	bool named = false;
	size_t n = 0;
	int err = 0;

	if (!acl_has(acl, ACL_TAG_USER_OBJ))
		err = acl_add(acl, ACL_TAG_USER_OBJ, (mode >> 6) & 7, ACL_UNDEFINED_ID);
	if (!err && !acl_has(acl, ACL_TAG_GROUP_OBJ))
		err = acl_add(acl, ACL_TAG_GROUP_OBJ, (mode >> 3) & 7, ACL_UNDEFINED_ID);
	if (!err && !acl_has(acl, ACL_TAG_OTHER))
		err = acl_add(acl, ACL_TAG_OTHER, mode & 7, ACL_UNDEFINED_ID);
	if (err)
		return err;
	for (size_t i = 0; i < acl->nr; i++) {
		u16 t = acl->ents[i].tag;

		if (t == ACL_TAG_USER || t == ACL_TAG_GROUP)
			named = true;
		if (t == ACL_TAG_USER || t == ACL_TAG_GROUP || t == ACL_TAG_GROUP_OBJ)
			group_class |= acl->ents[i].perm;
	}
	if (named && !acl_has(acl, ACL_TAG_MASK)) {
		err = acl_add(acl, ACL_TAG_MASK, group_class, ACL_UNDEFINED_ID);
		if (err)
			return err;
	}
	/* stable, so that of a duplicate the archive's first stays */
	for (size_t i = 1; i < acl->nr; i++) {
		struct acl_ent e = acl->ents[i];
		size_t j = i;

		for (; j > 0 && cmp_acl_ent(&acl->ents[j - 1], &e) > 0; j--)
			acl->ents[j] = acl->ents[j - 1];
		acl->ents[j] = e;
	}
	for (size_t i = 0; i < acl->nr; i++) {
		if (n && !cmp_acl_ent(&acl->ents[n - 1], &acl->ents[i]))
			continue;
		acl->ents[n++] = acl->ents[i];
	}
	acl->nr = n;
	return 0;
}

static void put_le16(u8 *p, u16 v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8;
}

static void put_le32(u8 *p, u32 v)
{
	put_le16(p, v & 0xffff);
	put_le16(p + 2, v >> 16);
}

/* @acl as the value of its xattr: version 2 header, {tag, perm, id} little-endian. */
static int acl_encode(struct acl_buf *acl, size_t *size)
{
	size_t len = ACL_HEADER_SIZE + acl->nr * ACL_ENTRY_SIZE;
	int err = array_reserve(acl->value, acl->value_alloc, len);

	if (err)
		return err;
	put_le32(acl->value, ACL_XATTR_VERSION);
	for (size_t i = 0; i < acl->nr; i++) {
		u8 *p = acl->value + ACL_HEADER_SIZE + i * ACL_ENTRY_SIZE;

		put_le16(p, acl->ents[i].tag);
		put_le16(p + 2, acl->ents[i].perm);
		put_le32(p + 4, acl->ents[i].id);
	}
	*size = len;
	return 0;
}

/* The ACL of @type as an xattr at as->xo[*@nr], when the entry has one beyond its mode. */
static int acl_to_xattr(struct archive_source *as, struct archive_entry *ae, int type,
			struct tlog_src_entry *e, size_t *nr)
{
	bool access = type == ARCHIVE_ENTRY_ACL_TYPE_ACCESS;
	struct acl_buf *acl = access ? &as->acl_access : &as->acl_default;
	int count = la.archive_entry_acl_reset(ae, type), err;
	size_t size;

	if (count <= (access ? 3 : 0))
		return 0;
	if (!access && !S_ISDIR(e->mode))
		return 0;	/* only a directory has a default ACL */
	err = acl_collect(as, ae, type, acl);
	if (err)
		return err;
	err = acl_complete(acl, e->mode);
	if (!err)
		err = acl_encode(acl, &size);
	if (!err)
		err = array_reserve(as->xo, as->xo_alloc, *nr + 1);
	if (err)
		return entry_error(as, err, "out of memory");
	as->xo[*nr] = (struct src_xattr_ord){
		.x = { access ? XATTR_ACL_ACCESS : XATTR_ACL_DEFAULT, acl->value, size },
		.order = *nr,
	};
	(*nr)++;
	return 0;
}

static u16 get_le16(const u8 *p)
{
	return (u16)(p[0] | p[1] << 8);
}

/*
 * The permission bits of @mode as the access ACL @value makes them:
 * owner from USER_OBJ, group from MASK (GROUP_OBJ without one), others
 * from OTHER, as the kernel sets them with the ACL.  libarchive put the
 * group entry's permissions in the mode, where the file had the mask; and
 * an ACL taken as the archive's xattr is what extraction would have set.
 * A value that is not an ACL leaves @mode alone.
 */
static u32 mode_from_acl(u32 mode, const u8 *value, size_t size)
{
	int user = -1, group = -1, mask = -1, other = -1;

	if (size < ACL_HEADER_SIZE || (size - ACL_HEADER_SIZE) % ACL_ENTRY_SIZE ||
	    get_le16(value) != ACL_XATTR_VERSION || get_le16(value + 2) != 0)
		return mode;
	for (size_t off = ACL_HEADER_SIZE; off < size; off += ACL_ENTRY_SIZE) {
		int perm = get_le16(value + off + 2) & 7;

		switch (get_le16(value + off)) {
		case ACL_TAG_USER_OBJ:	user = perm; break;
		case ACL_TAG_GROUP_OBJ:	group = perm; break;
		case ACL_TAG_MASK:	mask = perm; break;
		case ACL_TAG_OTHER:	other = perm; break;
		}
	}
	if (mask >= 0)
		group = mask;
	if (user < 0 || group < 0 || other < 0)
		return mode;
	return (mode & ~(u32)0777) | (u32)user << 6 | (u32)group << 3 | (u32)other;
}

/* ---- xattrs ---- */

static int cmp_xattr_ord(const void *a, const void *b)
{
	const struct src_xattr_ord *x = a, *y = b;
	int c = strcmp(x->x.name, y->x.name);

	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

static bool have_xattr(const struct src_xattr_ord *xo, size_t nr, const char *name)
{
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(xo[i].x.name, name))
			return true;
	return false;
}

/*
 * The entry's xattrs, its ACLs among them, sorted by name, one of each
 * (libarchive's own pax writer stores every xattr twice, as
 * LIBARCHIVE.xattr and SCHILY.xattr).
 */
static int read_xattrs(struct archive_source *as, struct archive_entry *ae,
		       struct tlog_src_entry *e)
{
	size_t nr = 0, n = 0;
	const char *name;
	const void *value;
	size_t size;
	int err;

	la.archive_entry_xattr_reset(ae);
	while (la.archive_entry_xattr_next(ae, &name, &value, &size) == ARCHIVE_OK) {
		if (!name || !name[0])
			continue;
		err = array_reserve(as->xo, as->xo_alloc, nr + 1);
		if (err)
			return entry_error(as, err, "out of memory");
		as->xo[nr] = (struct src_xattr_ord){ { name, value ? value : "", size }, nr };
		nr++;
	}
	if (!have_xattr(as->xo, nr, XATTR_ACL_ACCESS)) {
		err = acl_to_xattr(as, ae, ARCHIVE_ENTRY_ACL_TYPE_ACCESS, e, &nr);
		if (err)
			return err;
	}
	if (!have_xattr(as->xo, nr, XATTR_ACL_DEFAULT)) {
		err = acl_to_xattr(as, ae, ARCHIVE_ENTRY_ACL_TYPE_DEFAULT, e, &nr);
		if (err)
			return err;
	}
	if (!nr)
		return 0;
	qsort(as->xo, nr, sizeof(*as->xo), cmp_xattr_ord);
	err = array_reserve(as->xattrs, as->xattrs_alloc, nr);
	if (err)
		return entry_error(as, err, "out of memory");
	for (size_t i = 0; i < nr; i++) {
		if (n && !strcmp(as->xattrs[n - 1].name, as->xo[i].x.name))
			continue;
		as->xattrs[n++] = as->xo[i].x;
		if (!strcmp(as->xo[i].x.name, XATTR_ACL_ACCESS))
			e->mode = mode_from_acl(e->mode, as->xo[i].x.value, as->xo[i].x.size);
	}
	e->xattrs = as->xattrs;
	e->nr_xattrs = n;
	return 0;
}

/* ---- entries ---- */

static struct timespec ts(time_t sec, long nsec)
{
	return (struct timespec){ .tv_sec = sec, .tv_nsec = nsec };
}

/* Owners, times, size and device number of @ae into @e. */
static int fill_entry(struct archive_source *as, struct archive_entry *ae,
		      struct tlog_src_entry *e)
{
	la_int64_t uid = la.archive_entry_uid(ae), gid = la.archive_entry_gid(ae);
	la_int64_t size = la.archive_entry_size_is_set(ae) ? la.archive_entry_size(ae) : 0;

	if (uid < 0 || uid > UINT32_MAX || gid < 0 || gid > UINT32_MAX)
		return entry_error(as, -EINVAL, "owner out of range");
	if (size < 0)
		return entry_error(as, -EINVAL, "negative size");
	e->mode = la.archive_entry_mode(ae);
	e->uid = (u32)uid;
	e->gid = (u32)gid;
	if (S_ISCHR(e->mode) || S_ISBLK(e->mode))
		e->rdev = la.archive_entry_rdev(ae);
	if (S_ISREG(e->mode) || e->hardlink)
		e->size = (u64)size;
	if (la.archive_entry_mtime_is_set(ae))
		e->mtime = ts(la.archive_entry_mtime(ae), la.archive_entry_mtime_nsec(ae));
	e->atime = la.archive_entry_atime_is_set(ae) ?
		   ts(la.archive_entry_atime(ae), la.archive_entry_atime_nsec(ae)) : e->mtime;
	e->ctime = la.archive_entry_ctime_is_set(ae) ?
		   ts(la.archive_entry_ctime(ae), la.archive_entry_ctime_nsec(ae)) : e->mtime;
	if (la.archive_entry_birthtime_is_set(ae)) {
		e->btime = ts(la.archive_entry_birthtime(ae), la.archive_entry_birthtime_nsec(ae));
		e->has_btime = true;
	}
	e->nlink = la.archive_entry_nlink(ae);
	e->symlink = S_ISLNK(e->mode) ? la.archive_entry_symlink(ae) : NULL;
	if (S_ISLNK(e->mode) && !e->symlink)
		e->symlink = la.archive_entry_symlink_utf8(ae);
	if (S_ISLNK(e->mode) && !e->symlink)
		return entry_error(as, -EINVAL, "symlink without a target");
	return 0;
}

/* The next header: the one open() read first, then the archive's. */
static int next_header(struct archive_source *as, struct archive_entry **ae)
{
	if (as->has_primed) {
		as->has_primed = false;
		*ae = as->primed;
		return as->primed_ret;
	}
	return la.archive_read_next_header(as->a, ae);
}

static int arc_next(struct tlog_source *src, struct tlog_src_entry *e)
{
	struct archive_source *as = arc_of(src);
	struct archive_entry *ae;
	const char *raw;
	int ret, err;

	as->has_data = false;
	ret = next_header(as, &ae);
	if (ret == ARCHIVE_EOF)
		return 1;
	if (ret < ARCHIVE_WARN) {
		/* what failed is the entry after the last one returned */
		tlog_error(-EIO, "%s: damaged archive after %s: %s", src->name,
			   as->path ? (as->path[0] ? as->path : ".") : "its start", arc_msg(as));
		return -EIO;
	}
	free(as->path);
	free(as->hardlink);
	as->path = as->hardlink = NULL;
	memset(e, 0, sizeof(*e));
	raw = raw_name(ae, false);
	if (!raw)
		return entry_error(as, -EINVAL, "an entry without a name");
	err = normalize(as, raw, &as->path);
	if (err)
		return err;
	e->path = as->path;
	raw = raw_name(ae, true);
	if (raw) {
		err = normalize(as, raw, &as->hardlink);
		if (err)
			return err;
		e->hardlink = as->hardlink;
	}
	err = fill_entry(as, ae, e);
	if (!err)
		err = read_xattrs(as, ae, e);
	if (err)
		return err;
	as->has_data = S_ISREG(e->mode) || (e->hardlink && e->size);
	as->size = e->size;
	as->data_end = 0;
	return 0;
}

/*
 * libarchive gives the blocks of a sparse entry at their offsets, the
 * gaps being its holes; one of length 0 may mark the end.  Blocks are
 * clipped to the entry's size and must move forward.
 */
static int arc_read_data(struct tlog_source *src, const void **buf, size_t *len, u64 *off)
{
	struct archive_source *as = arc_of(src);

	while (as->has_data) {
		const void *b;
		size_t n;
		la_int64_t o;
		int ret = la.archive_read_data_block(as->a, &b, &n, &o);

		if (ret == ARCHIVE_EOF)
			break;
		if (ret < ARCHIVE_WARN) {
			as->has_data = false;
			return entry_error(as, -EIO, arc_msg(as));
		}
		if (o < 0 || (u64)o < as->data_end) {
			as->has_data = false;
			return entry_error(as, -EIO, "data blocks out of order");
		}
		if (!n || (u64)o >= as->size)
			continue;
		if (n > as->size - (u64)o)
			n = (size_t)(as->size - (u64)o);
		as->data_end = (u64)o + n;
		*buf = b;
		*len = n;
		*off = (u64)o;
		return 0;
	}
	as->has_data = false;
	return 1;
}

static void arc_close(struct tlog_source *src)
{
	struct archive_source *as = arc_of(src);

	if (as->a)
		la.archive_read_free(as->a);
	free(as->path);
	free(as->hardlink);
	free(as->xo);
	free(as->xattrs);
	free(as->acl_access.ents);
	free(as->acl_access.value);
	free(as->acl_default.ents);
	free(as->acl_default.value);
	free((char *)as->src.name);
	free(as);
}

static const struct tlog_source_ops archive_ops = {
	.next = arc_next,
	.read_data = arc_read_data,
	.close = arc_close,
};

/*
 * What the tree will take, when the archive says it cheaply: an
 * uncompressed tar or cpio file holds about what its files do (headers
 * in place of metadata); anything compressed, or a pipe, is unknown.
 */
static u64 estimate(struct archive_source *as, const char *path)
{
	int base = la.archive_format(as->a) & ARCHIVE_FORMAT_BASE_MASK;
	struct stat st;

	if (strcmp(path, "-") == 0 || stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	if (la.archive_filter_count(as->a) != 1 ||
	    la.archive_filter_code(as->a, 0) != ARCHIVE_FILTER_NONE)
		return 0;
	if (base != ARCHIVE_FORMAT_TAR && base != ARCHIVE_FORMAT_CPIO)
		return 0;
	return (u64)st.st_size;
}

int tlog_source_open_archive(const char *path, struct tlog_source **ret)
{
	bool in = strcmp(path, "-") == 0;
	struct archive_source *as;
	int r = archive_lib_load();

	if (r)
		return r;
	as = calloc(1, sizeof(*as));
	if (!as || !(as->src.name = strdup(in ? "standard input" : path)) ||
	    !(as->a = la.archive_read_new())) {
		if (as)
			arc_close(&as->src);
		return tlog_error(-ENOMEM, "out of memory");
	}
	as->src.ops = &archive_ops;
	la.archive_read_support_filter_all(as->a);
	la.archive_read_support_format_all(as->a);
	r = in ? la.archive_read_open_fd(as->a, 0, ARCHIVE_BLOCK) :
		 la.archive_read_open_filename(as->a, path, ARCHIVE_BLOCK);
	if (r != ARCHIVE_OK) {
		int aerr = la.archive_errno(as->a);
		/* a system call's errno stays; libarchive says "not this format" with EILSEQ */
		int err = aerr > 0 && aerr != EILSEQ ? -aerr : -EINVAL;

		tlog_error(err, "%s: %s", as->src.name, arc_msg(as));
		arc_close(&as->src);
		return err;
	}
	/* the first header tells the format, and whether this is an archive at all */
	as->primed_ret = la.archive_read_next_header(as->a, &as->primed);
	as->has_primed = true;
	if (as->primed_ret < ARCHIVE_WARN) {
		tlog_error(-EINVAL, "%s: not an archive libarchive reads: %s", as->src.name,
			   arc_msg(as));
		arc_close(&as->src);
		return -EINVAL;
	}
	as->src.estimated_bytes = estimate(as, path);
	*ret = &as->src;
	return 0;
}
