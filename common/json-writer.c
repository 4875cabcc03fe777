// SPDX-License-Identifier: GPL-2.0-only
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json-writer.h"

#define JSONW_FLAGS (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE)

void jsonw_init(struct json_writer *w, FILE *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
}

static void indent(struct json_writer *w, int level)
{
	for (int i = 0; i < level; i++)
		fputs("  ", w->out);
}

/*
 * Where a value or a member name goes: after the comma that separates it
 * from the one before, on its own line.  A value after its member name
 * follows the name directly.
 */
static void begin_value(struct json_writer *w)
{
	if (w->after_name) {
		w->after_name = false;
		return;
	}
	if (w->depth == 0)
		return;
	if (w->has_members[w->depth - 1])
		fputs(",\n", w->out);
	w->has_members[w->depth - 1] = true;
	indent(w, w->depth);
}

static void start_container(struct json_writer *w, const char *open)
{
	begin_value(w);
	fputs(open, w->out);
	fputc('\n', w->out);
	/* a deeper document is a bug of the caller: refuse it loudly */
	if (w->depth == JSONW_MAX_DEPTH)
		abort();
	w->has_members[w->depth++] = false;
}

static void end_container(struct json_writer *w, const char *close)
{
	w->depth--;
	if (w->has_members[w->depth])
		fputc('\n', w->out);
	indent(w, w->depth);
	fputs(close, w->out);
}

void jsonw_start_object(struct json_writer *w)
{
	start_container(w, "{");
}

void jsonw_end_object(struct json_writer *w)
{
	end_container(w, "}");
}

void jsonw_start_array(struct json_writer *w)
{
	start_container(w, "[");
}

void jsonw_end_array(struct json_writer *w)
{
	end_container(w, "]");
}

/*
 * json-c prints a nested value at its level by indenting every line after
 * the first; its strings hold no raw newline, so each one starts a line.
 */
static void write_indented(struct json_writer *w, const char *s)
{
	const char *nl;

	while ((nl = strchr(s, '\n'))) {
		fwrite(s, 1, (size_t)(nl - s) + 1, w->out);
		indent(w, w->depth);
		s = nl + 1;
	}
	fputs(s, w->out);
}

void jsonw_json(struct json_writer *w, json_object *v)
{
	begin_value(w);
	write_indented(w, json_object_to_json_string_ext(v, JSONW_FLAGS));
	json_object_put(v);
}

/* Strings go through json-c, whose escaping the rest of the document has. */
void jsonw_string(struct json_writer *w, const char *s)
{
	jsonw_json(w, json_object_new_string(s));
}

void jsonw_name(struct json_writer *w, const char *name)
{
	json_object *s = json_object_new_string(name);

	begin_value(w);
	fputs(json_object_to_json_string_ext(s, JSONW_FLAGS), w->out);
	fputc(':', w->out);
	json_object_put(s);
	w->after_name = true;
}

void jsonw_u64(struct json_writer *w, uint64_t v)
{
	begin_value(w);
	fprintf(w->out, "%" PRIu64, v);
}

void jsonw_end(struct json_writer *w)
{
	fputc('\n', w->out);
}
