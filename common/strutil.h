/* SPDX-License-Identifier: GPL-2.0-only */
/* String helpers for output and option parsing. */
#ifndef TLOG_STRUTIL_H
#define TLOG_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UUID_STR_LEN 37

void uuid_to_str(const unsigned char *uuid, char *buf);
/* "-rw-r--r--" for a mode; @buf holds at least 11 bytes. */
void mode_to_str(uint32_t mode, char *buf);
/* "2026-12-01 02:05:11.123456789 +0000" (local time, like stat(1)). */
void timespec_to_str(uint64_t sec, uint32_t nsec, char *buf, size_t size);

/*
 * Parse an unsigned number: decimal, 0x hex, with an optional K/M/G/T/P/E
 * suffix (powers of 1024) when @suffix is true.  Rejects signs, garbage and
 * overflow.  0 or -EINVAL / -ERANGE.
 */
int parse_u64(const char *s, bool suffix, uint64_t *ret);

#endif
