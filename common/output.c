// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

int output_format_parse(const char *s, enum output_format *ret)
{
	if (strcmp(s, "text") == 0)
		*ret = OUTPUT_TEXT;
	else if (strcmp(s, "json") == 0)
		*ret = OUTPUT_JSON;
	else
		return -EINVAL;
	return 0;
}

int output_json(json_object *obj)
{
	const char *s = json_object_to_json_string_ext(obj,
			JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	int ret = 0;

	if (fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF)
		ret = -EIO;
	json_object_put(obj);
	return ret;
}

/* Length of the valid UTF-8 sequence at @p (0 if invalid). */
static size_t utf8_seq_len(const unsigned char *p, size_t left)
{
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xE0) == 0xC0 && p[0] >= 0xC2)
		n = 2;
	else if ((p[0] & 0xF0) == 0xE0)
		n = 3;
	else if ((p[0] & 0xF8) == 0xF0 && p[0] <= 0xF4)
		n = 4;
	else
		return 0;
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	/* overlong forms, UTF-16 surrogates and code points past U+10FFFF */
	if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F) ||
	    (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] > 0x8F))
		return 0;
	return n;
}

json_object *json_new_bytes(const char *p, size_t len)
{
	const unsigned char *s = (const unsigned char *)p;
	char *buf = malloc(len * 4 + 1);
	size_t o = 0;
	json_object *obj;

	if (!buf)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq_len(s + i, len - i);

		if (n == 0 || (n == 1 && (s[i] < 0x20 || s[i] == 0x7f))) {
			o += sprintf(buf + o, "\\x%02x", s[i]);
			i++;
			continue;
		}
		memcpy(buf + o, s + i, n);
		o += n;
		i += n;
	}
	obj = json_object_new_string_len(buf, (int)o);
	free(buf);
	return obj;
}
