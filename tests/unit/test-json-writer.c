// SPDX-License-Identifier: GPL-2.0-only
// Tests the streaming JSON writer (json-writer.c): a streamed document is
// byte for byte what json-c prints for the same document built whole.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "json-writer.h"
#include "output.h"

struct capture {
	char *buf;
	size_t len;
	FILE *f;
};

static struct json_writer *capture_start(struct capture *c, struct json_writer *w)
{
	c->f = open_memstream(&c->buf, &c->len);
	cr_assert_not_null(c->f);
	jsonw_init(w, c->f);
	return w;
}

/* The streamed text against json-c's print of @whole (released). */
static void assert_same(struct capture *c, json_object *whole)
{
	const char *want = json_object_to_json_string_ext(whole,
			JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);

	fclose(c->f);
	cr_assert_eq(strncmp(c->buf, want, strlen(want)), 0,
		     "streamed:\n%s\njson-c:\n%s", c->buf, want);
	cr_assert_str_eq(c->buf + strlen(want), "\n", "no single newline at the end");
	json_object_put(whole);
	free(c->buf);
}

/* {"a":1, "s":"x\"y/z\n\x01", "o":{}, "e":[], "n":null} */
static json_object *item(int i)
{
	json_object *o = json_object_new_object();

	json_add_u64(o, "a", (uint64_t)i);
	json_add_str(o, "s", "x\"y/z\n\x01");
	json_object_object_add(o, "o", json_object_new_object());
	json_object_object_add(o, "e", json_object_new_array());
	json_object_object_add(o, "n", NULL);
	return o;
}

Test(json_writer, empty_containers)
{
	struct capture c;
	struct json_writer w, *jw = capture_start(&c, &w);
	json_object *whole = json_object_new_object();

	jsonw_start_object(jw);
	jsonw_name(jw, "list");
	jsonw_start_array(jw);
	jsonw_end_array(jw);
	jsonw_name(jw, "obj");
	jsonw_start_object(jw);
	jsonw_end_object(jw);
	jsonw_end_object(jw);
	jsonw_end(jw);
	json_object_object_add(whole, "list", json_object_new_array());
	json_object_object_add(whole, "obj", json_object_new_object());
	assert_same(&c, whole);
}

Test(json_writer, nested_streamed_and_built)
{
	struct capture c;
	struct json_writer w, *jw = capture_start(&c, &w);
	json_object *whole = json_object_new_object(), *trees = json_object_new_array();

	jsonw_start_object(jw);
	jsonw_name(jw, "trees");
	jsonw_start_array(jw);
	for (int t = 0; t < 3; t++) {
		json_object *tree = json_object_new_object(), *blocks = json_object_new_array();

		jsonw_start_object(jw);
		jsonw_string_field(jw, "name", "tree \"quoted\"");
		jsonw_u64_field(jw, "objectid", UINT64_MAX - (uint64_t)t);
		jsonw_name(jw, "blocks");
		jsonw_start_array(jw);
		for (int i = 0; i < t; i++) {
			jsonw_json(jw, item(i));
			json_object_array_add(blocks, item(i));
		}
		jsonw_end_array(jw);
		jsonw_end_object(jw);
		json_add_str(tree, "name", "tree \"quoted\"");
		json_add_u64(tree, "objectid", UINT64_MAX - (uint64_t)t);
		json_object_object_add(tree, "blocks", blocks);
		json_object_array_add(trees, tree);
	}
	jsonw_end_array(jw);
	jsonw_u64_field(jw, "total", 0);
	jsonw_json_field(jw, "built", item(7));
	jsonw_end_object(jw);
	jsonw_end(jw);
	json_object_object_add(whole, "trees", trees);
	json_add_u64(whole, "total", 0);
	json_object_object_add(whole, "built", item(7));
	assert_same(&c, whole);
}

Test(json_writer, top_level_array)
{
	struct capture c;
	struct json_writer w, *jw = capture_start(&c, &w);
	json_object *whole = json_object_new_array();

	jsonw_start_array(jw);
	for (int i = 0; i < 4; i++) {
		jsonw_u64(jw, (uint64_t)i);
		json_object_array_add(whole, json_object_new_uint64((uint64_t)i));
	}
	jsonw_string(jw, "");
	json_object_array_add(whole, json_object_new_string(""));
	jsonw_end_array(jw);
	jsonw_end(jw);
	assert_same(&c, whole);
}
