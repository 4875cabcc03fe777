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
