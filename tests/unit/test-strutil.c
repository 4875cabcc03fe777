// SPDX-License-Identifier: GPL-2.0-only
// Tests the string helpers: parse_u64, mode_to_str (strutil.c) and btrfs_json_bytes (print-tree.c).
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "format-pipe.h"
#include "outbuf.h"
#include "output.h"
#include "print-tree.h"
#include "strutil.h"

/* ---- parse_u64 ---- */

static void assert_parses(const char *s, bool suffix, uint64_t expect)
{
	uint64_t v = 0xDEADBEEF;
	int ret = parse_u64(s, suffix, &v);

	cr_assert_eq(ret, 0, "parse_u64(\"%s\") failed with %d", s, ret);
	cr_assert_eq(v, expect, "parse_u64(\"%s\") = %llu, expected %llu", s,
		     (unsigned long long)v, (unsigned long long)expect);
}

static void assert_parse_fails(const char *s, bool suffix, int err)
{
	uint64_t v = 0;
	int ret = parse_u64(s, suffix, &v);

	cr_assert_eq(ret, err, "parse_u64(\"%s\", %s) returned %d (value %llu), expected %d",
		     s, suffix ? "suffix" : "no suffix", ret, (unsigned long long)v, err);
}

Test(strutil, parse_decimal)
{
	assert_parses("0", false, 0);
	assert_parses("123", false, 123);
	assert_parses("007", false, 7);		/* leading zeros are decimal, not octal */
	assert_parses("18446744073709551615", false, UINT64_MAX);
}

Test(strutil, parse_hex)
{
	assert_parses("0x1f", false, 31);
	assert_parses("0X1F", false, 31);
	assert_parses("0xffffffffffffffff", false, UINT64_MAX);
	assert_parses("0x0", false, 0);
}

Test(strutil, parse_suffixes)
{
	/* powers of 1024 */
	assert_parses("4K", true, 4096);
	assert_parses("4k", true, 4096);
	assert_parses("1M", true, 1048576ULL);
	assert_parses("1G", true, 1073741824ULL);
	assert_parses("1T", true, 1099511627776ULL);
	assert_parses("1P", true, 1125899906842624ULL);
	assert_parses("1E", true, 1152921504606846976ULL);
	assert_parses("15E", true, 17293822569102704640ULL);
	assert_parses("16KiB", true, 16384);
	assert_parses("16KB", true, 16384);
	assert_parses("0x10K", true, 16384);
	/* a plain number is fine with suffixes allowed */
	assert_parses("4096", true, 4096);
}

Test(strutil, parse_overflow)
{
	assert_parse_fails("18446744073709551616", false, -ERANGE);	/* 2^64 */
	assert_parse_fails("99999999999999999999", false, -ERANGE);
	assert_parse_fails("0x10000000000000000", false, -ERANGE);
	assert_parse_fails("16E", true, -ERANGE);			/* 2^64 */
	assert_parse_fails("16777216T", true, -ERANGE);			/* 2^24 * 2^40 */
}

Test(strutil, parse_invalid)
{
	assert_parse_fails("", true, -EINVAL);
	assert_parse_fails("-1", true, -EINVAL);
	assert_parse_fails("+1", true, -EINVAL);
	assert_parse_fails("12abc", true, -EINVAL);
	assert_parse_fails("12abc", false, -EINVAL);
	assert_parse_fails("0x", true, -EINVAL);
	assert_parse_fails(" 1", true, -EINVAL);
	assert_parse_fails("1 ", true, -EINVAL);
	assert_parse_fails("K", true, -EINVAL);
	assert_parse_fails("4X", true, -EINVAL);
	assert_parse_fails("4KX", true, -EINVAL);
	assert_parse_fails("4KiBB", true, -EINVAL);
	assert_parse_fails("0xg", false, -EINVAL);
}

Test(strutil, parse_suffix_not_allowed)
{
	assert_parse_fails("4K", false, -EINVAL);
	assert_parse_fails("1E", false, -EINVAL);
	assert_parse_fails("16KiB", false, -EINVAL);
}

/* ---- mode_to_str ---- */

/*
 * Expected strings are what coreutils `stat -c %A` and Python's
 * stat.filemode() print for the same modes (checked on this machine).
 */
static void assert_mode(uint32_t mode, const char *expect)
{
	char buf[11];

	memset(buf, 'X', sizeof(buf));
	mode_to_str(mode, buf);
	cr_assert_str_eq(buf, expect, "mode 0%o", mode);
}

Test(strutil, mode_types)
{
	assert_mode(S_IFREG | 0644, "-rw-r--r--");
	assert_mode(S_IFDIR | 0755, "drwxr-xr-x");
	assert_mode(S_IFLNK | 0777, "lrwxrwxrwx");
	assert_mode(S_IFCHR | 0620, "crw--w----");
	assert_mode(S_IFBLK | 0660, "brw-rw----");
	assert_mode(S_IFIFO | 0644, "prw-r--r--");
	assert_mode(S_IFSOCK | 0755, "srwxr-xr-x");
	assert_mode(S_IFREG | 0000, "----------");
}

Test(strutil, mode_special_bits)
{
	assert_mode(S_IFREG | 04755, "-rwsr-xr-x");	/* setuid with u+x */
	assert_mode(S_IFREG | 04644, "-rwSr--r--");	/* setuid without u+x */
	assert_mode(S_IFREG | 02755, "-rwxr-sr-x");	/* setgid with g+x */
	assert_mode(S_IFREG | 02644, "-rw-r-Sr--");	/* setgid without g+x */
	assert_mode(S_IFDIR | 01777, "drwxrwxrwt");	/* sticky with o+x */
	assert_mode(S_IFDIR | 01770, "drwxrwx--T");	/* sticky without o+x */
	assert_mode(S_IFREG | 07000, "---S--S--T");
	assert_mode(S_IFREG | 07777, "-rwsrwsrwt");
}

/* ---- btrfs_json_bytes ---- */

/* The string btrfs_json_bytes makes of @len bytes at @in equals @expect. */
static void assert_json_bytes(const char *in, size_t len, const char *expect)
{
	json_object *o = btrfs_json_bytes(in, len);

	cr_assert_not_null(o);
	cr_assert(json_object_is_type(o, json_type_string));
	cr_assert_eq((size_t)json_object_get_string_len(o), strlen(expect));
	cr_assert_str_eq(json_object_get_string(o), expect);
	json_object_put(o);
}

#define ASSERT_JSON_BYTES(lit, expect) assert_json_bytes(lit, sizeof(lit) - 1, expect)

Test(strutil, json_bytes_ascii)
{
	ASSERT_JSON_BYTES("small.txt", "small.txt");
	ASSERT_JSON_BYTES("", "");
	/* printable ASCII and quotes are kept as is */
	ASSERT_JSON_BYTES("a \"b\" ~", "a \"b\" ~");
	/* a backslash is doubled so that a literal "\x41" is not an escape */
	ASSERT_JSON_BYTES("a\\b", "a\\\\b");
	ASSERT_JSON_BYTES("\\x41", "\\\\x41");
}

Test(strutil, json_bytes_valid_utf8_kept)
{
	ASSERT_JSON_BYTES("h\xC3\xA9llo", "h\xC3\xA9llo");		/* U+00E9 */
	ASSERT_JSON_BYTES("\xE2\x82\xAC", "\xE2\x82\xAC");		/* U+20AC euro */
	ASSERT_JSON_BYTES("\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80");	/* U+1F600 */
	ASSERT_JSON_BYTES("\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF");	/* U+10FFFF */
}

Test(strutil, json_bytes_control_escaped)
{
	ASSERT_JSON_BYTES("a\nb", "a\\x0ab");
	ASSERT_JSON_BYTES("\t", "\\x09");
	ASSERT_JSON_BYTES("\x01\x1F", "\\x01\\x1f");
	/* an embedded NUL does not end the string */
	ASSERT_JSON_BYTES("a\0b", "a\\x00b");
}

Test(strutil, json_bytes_invalid_utf8_escaped)
{
	ASSERT_JSON_BYTES("\xFF", "\\xff");
	ASSERT_JSON_BYTES("a\x80z", "a\\x80z");			/* lone continuation byte */
	ASSERT_JSON_BYTES("\xC0\xAF", "\\xc0\\xaf");		/* overlong 2-byte form */
	ASSERT_JSON_BYTES("\xC3", "\\xc3");			/* truncated at the end */
	ASSERT_JSON_BYTES("\xC3(", "\\xc3(");			/* bad continuation */
	ASSERT_JSON_BYTES("\xE2\x82", "\\xe2\\x82");		/* truncated 3-byte form */
	ASSERT_JSON_BYTES("\xF5\x80\x80\x80", "\\xf5\\x80\\x80\\x80");	/* lead byte > F4 */
	/* Latin-1 "é" next to valid UTF-8 "é" */
	ASSERT_JSON_BYTES("\xE9\xC3\xA9", "\\xe9\xC3\xA9");
}

Test(strutil, json_bytes_serialised)
{
	/* the escapes are literal text: JSON shows the backslash escaped */
	json_object *o = btrfs_json_bytes("x\xFFy", 3);

	cr_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			 "\"x\\\\xffy\"");
	json_object_put(o);
}

/* ---- output format names ---- */

Test(strutil, output_format_parse)
{
	enum output_format f = OUTPUT_JSON;

	cr_assert_eq(output_format_parse("text", &f), 0);
	cr_assert_eq(f, OUTPUT_TEXT);
	cr_assert_eq(output_format_parse("json", &f), 0);
	cr_assert_eq(f, OUTPUT_JSON);
	cr_assert_eq(output_format_parse("JSON", &f), -EINVAL);
	cr_assert_eq(output_format_parse("", &f), -EINVAL);
}

/* ---- outbuf_u64: every digit count, the 32-bit edge, and random values, against printf ---- */

static void assert_formats(struct outbuf *ob, uint64_t v)
{
	char want[32];
	int n = snprintf(want, sizeof(want), "%" PRIu64, v);

	ob->len = 0;
	outbuf_u64(ob, v);
	cr_assert(ob->len == (size_t)n && memcmp(ob->buf, want, n) == 0,
		  "outbuf_u64(%s) wrote \"%.*s\"", want, (int)ob->len, ob->buf);
}

Test(strutil, outbuf_u64_matches_printf)
{
	static struct outbuf ob;	/* large: not on the stack */
	uint64_t x = 0x9E3779B97F4A7C15ULL;

	outbuf_init(&ob, -1);
	for (uint64_t p = 1, i = 0; i < 20; i++, p *= 10) {
		assert_formats(&ob, p - 1);
		assert_formats(&ob, p);
		assert_formats(&ob, p + 1);
	}
	assert_formats(&ob, UINT32_MAX);
	assert_formats(&ob, (uint64_t)UINT32_MAX + 1);
	assert_formats(&ob, UINT64_MAX);
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		assert_formats(&ob, x >> (i % 64));
	}
	cr_assert_eq(ob.err, 0);
}

Test(strutil, outbuf_u64_flushes_when_full)
{
	static struct outbuf ob;
	FILE *out = tmpfile();	/* a file: a pipe would block on 256 KiB */
	char got[8];

	cr_assert_not_null(out);
	outbuf_init(&ob, fileno(out));
	memset(ob.buf, 'x', OUTBUF_SIZE);
	ob.len = OUTBUF_SIZE - 3;	/* a 20-digit number does not fit */
	outbuf_u64(&ob, UINT64_MAX);
	cr_assert_eq(ob.len, 20);
	cr_assert_eq(memcmp(ob.buf, "18446744073709551615", 20), 0);
	/* what was buffered before went out first, all of it */
	cr_assert_eq(lseek(fileno(out), 0, SEEK_END), (off_t)(OUTBUF_SIZE - 3));
	cr_assert_eq(pread(fileno(out), got, sizeof(got), 0), (ssize_t)sizeof(got));
	cr_assert_eq(memcmp(got, "xxxxxxxx", sizeof(got)), 0);
	fclose(out);
}

/* ---- format_pipe: records printed on the pipe's thread, in order ---- */

struct pipe_rec {
	uint64_t a, b;
};

static void format_rec(struct outbuf *ob, const void *rec, void *arg)
{
	const struct pipe_rec *r = rec;
	unsigned long *calls = arg;

	outbuf_u64(ob, r->a);
	outbuf_lit(ob, ":");
	outbuf_u64(ob, r->b);
	outbuf_lit(ob, "\n");
	(*calls)++;
}

/* Print @nr records through a pipe into a file; its contents, malloc()ed. */
static char *pipe_output(unsigned long nr, size_t *len)
{
	static struct outbuf ob;
	FILE *out = tmpfile();
	struct format_pipe *fp;
	unsigned long calls = 0;
	char *got;

	cr_assert_not_null(out);
	outbuf_init(&ob, fileno(out));
	outbuf_lit(&ob, "[");
	cr_assert_eq(format_pipe_start(&ob, sizeof(struct pipe_rec), format_rec, &calls, &fp), 0);
	for (unsigned long i = 0; i < nr; i++) {
		struct pipe_rec r = { i, i * 2654435761ULL };

		cr_assert_eq(format_pipe_put(fp, &r), 0);
	}
	cr_assert_eq(format_pipe_end(fp), 0);
	cr_assert_eq(calls, nr, "%lu records printed of %lu", calls, nr);
	outbuf_lit(&ob, "]");
	cr_assert_eq(outbuf_flush(&ob), 0);
	*len = (size_t)lseek(fileno(out), 0, SEEK_END);
	got = malloc(*len + 1);
	cr_assert_eq(pread(fileno(out), got, *len, 0), (ssize_t)*len);
	got[*len] = '\0';
	fclose(out);
	return got;
}

Test(strutil, format_pipe_prints_every_record_in_order)
{
	/* none, part of a batch, batches exactly, and many rounds of the ring */
	static const unsigned long counts[] = { 0, 1, 2047, 16384, 65536, 300001 };

	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t len, off = 1;
		char *got = pipe_output(counts[c], &len);

		cr_assert_eq(got[0], '[');
		for (unsigned long i = 0; i < counts[c]; i++) {
			char want[64];
			int n = snprintf(want, sizeof(want), "%lu:%llu\n", i,
					 (unsigned long long)(i * 2654435761ULL));

			cr_assert(off + n < len && memcmp(got + off, want, n) == 0,
				  "record %lu of %lu misprinted or out of order", i, counts[c]);
			off += n;
		}
		cr_assert_eq(off + 1, len, "%zu bytes after the records", len - off);
		cr_assert_eq(got[off], ']');
		free(got);
	}
}

Test(strutil, format_pipe_reports_a_failed_write)
{
	static struct outbuf ob;
	int fd = open("/dev/full", O_WRONLY);
	struct format_pipe *fp;
	unsigned long calls = 0, i;
	int err = 0;

	cr_assert_geq(fd, 0);
	outbuf_init(&ob, fd);
	cr_assert_eq(format_pipe_start(&ob, sizeof(struct pipe_rec), format_rec, &calls, &fp), 0);
	/* the walk hears of the error within a few batches, and stops */
	for (i = 0; i < 10000000 && !err; i++) {
		struct pipe_rec r = { i, i };

		err = format_pipe_put(fp, &r);
	}
	cr_assert_eq(err, -ENOSPC, "put returned %d after %lu records", err, i);
	cr_assert_lt(i, 1000000, "the walk went on for %lu records", i);
	cr_assert_eq(format_pipe_end(fp), -ENOSPC);
	close(fd);
}
