/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A streaming JSON writer: a document goes out while it is being made, so
 * that the memory a listing needs does not grow with its length.  Large
 * arrays are written element by element; an element may be built with
 * json-c and handed over whole (jsonw_json), its size being bounded.
 *
 * The layout is json-c's JSON_C_TO_STRING_PRETTY (two spaces per level,
 * "name":value), so that a streamed document reads exactly as output_json()
 * would have printed it whole.
 *
 * Write errors are left in the stream's error flag, where output_finish()
 * finds them; the writer itself never fails.
 */
#ifndef TLOG_JSON_WRITER_H
#define TLOG_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

/* Deeper than any document the commands print. */
#define JSONW_MAX_DEPTH 32

struct json_writer {
	FILE *out;
	int depth;				/* objects and arrays open */
	bool has_members[JSONW_MAX_DEPTH];	/* per open level: a comma before the next */
	bool after_name;			/* a member name is out, its value is next */
};

void jsonw_init(struct json_writer *w, FILE *out);

void jsonw_start_object(struct json_writer *w);
void jsonw_end_object(struct json_writer *w);
void jsonw_start_array(struct json_writer *w);
void jsonw_end_array(struct json_writer *w);

/* The name of the next member of the current object. */
void jsonw_name(struct json_writer *w, const char *name);

void jsonw_string(struct json_writer *w, const char *s);
void jsonw_u64(struct json_writer *w, uint64_t v);
/* A value built with json-c; @v is released. */
void jsonw_json(struct json_writer *w, json_object *v);

/* The newline after the outermost value, as output_json() ends. */
void jsonw_end(struct json_writer *w);

static inline void jsonw_string_field(struct json_writer *w, const char *name, const char *s)
{
	jsonw_name(w, name);
	jsonw_string(w, s);
}

static inline void jsonw_u64_field(struct json_writer *w, const char *name, uint64_t v)
{
	jsonw_name(w, name);
	jsonw_u64(w, v);
}

static inline void jsonw_json_field(struct json_writer *w, const char *name, json_object *v)
{
	jsonw_name(w, name);
	jsonw_json(w, v);
}

#endif
