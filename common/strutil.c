// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <uuid/uuid.h>

#include "strutil.h"

void uuid_to_str(const unsigned char *uuid, char *buf)
{
	uuid_unparse(uuid, buf);
}

void mode_to_str(uint32_t mode, char *buf)
{
	static const char rwx[] = "rwxrwxrwx";
	char t;

	switch (mode & S_IFMT) {
	case S_IFDIR: t = 'd'; break;
	case S_IFLNK: t = 'l'; break;
	case S_IFCHR: t = 'c'; break;
	case S_IFBLK: t = 'b'; break;
	case S_IFIFO: t = 'p'; break;
	case S_IFSOCK: t = 's'; break;
	case S_IFREG: t = '-'; break;
	default: t = '?'; break;
	}
	buf[0] = t;
	for (int i = 0; i < 9; i++)
		buf[1 + i] = (mode & (0400 >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		buf[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		buf[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		buf[9] = (mode & S_IXOTH) ? 't' : 'T';
	buf[10] = '\0';
}

void timespec_to_str(uint64_t sec, uint32_t nsec, char *buf, size_t size)
{
	time_t t = (time_t)sec;
	struct tm tm;
	char date[64], zone[16];

	if (!localtime_r(&t, &tm)) {
		snprintf(buf, size, "%llu.%09u", (unsigned long long)sec, nsec);
		return;
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	snprintf(buf, size, "%s.%09u %s", date, nsec, zone);
}

int parse_u64(const char *s, bool suffix, uint64_t *ret)
{
	static const char units[] = "KMGTPE";
	unsigned long long v = 0;
	int base = 10;
	const char *p = s, *digits;

	if (!s || !*s)
		return -EINVAL;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	digits = p;
	for (; *p; p++) {
		int d;

		if (isdigit((unsigned char)*p))
			d = *p - '0';
		else if (base == 16 && isxdigit((unsigned char)*p))
			d = tolower((unsigned char)*p) - 'a' + 10;
		else
			break;
		if (v > (UINT64_MAX - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	if (p == digits)
		return -EINVAL;
	if (*p && suffix) {
		const char *u = strchr(units, toupper((unsigned char)*p));
		int shift;

		if (!u || !*u)
			return -EINVAL;
		shift = 10 * (int)(u - units + 1);
		if (v > (UINT64_MAX >> shift))
			return -ERANGE;
		v <<= shift;
		p++;
		/* allow "KiB" / "KB" spellings */
		if (*p == 'i' || *p == 'I')
			p++;
		if (*p == 'b' || *p == 'B')
			p++;
	}
	if (*p)
		return -EINVAL;
	*ret = v;
	return 0;
}
