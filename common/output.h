/* SPDX-License-Identifier: GPL-2.0-only */
/* Text for people, JSON for machines: the same data in both. */
#ifndef TLOG_OUTPUT_H
#define TLOG_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

enum output_format {
	OUTPUT_TEXT,
	OUTPUT_JSON,
};

int output_format_parse(const char *s, enum output_format *ret);

/*
 * Print @obj on stdout followed by a newline and release it.  Returns 0 or
 * the -errno of a failed write, which is reported (output_error).
 */
int output_json(json_object *obj);

/*
 * Standard output is the product of most commands: a write that fails
 * there (full disk, a reader gone with SIGPIPE ignored) is an error of the
 * command, reported once as "cannot write output (<why>)".
 */

/* Report the write error @err (-errno) on standard output, unless done already. */
void output_error(int err);

/*
 * Flush stdout and report a write error seen on it since the start.
 * Returns @ret, or 1 if the output failed: the exit status to use.
 */
int output_finish(int ret);

/* A write to stdout failed: long listings stop early, the error comes at the end. */
static inline bool output_failed(void)
{
	return ferror(stdout);
}

/* Small constructors that keep call sites short. */
static inline void json_add_u64(json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static inline void json_add_s64(json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

static inline void json_add_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

#endif
