// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "messages.h"
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

/* Set once the output error is on stderr: a second one would say nothing new. */
static bool output_error_reported;

int output_json(json_object *obj)
{
	const char *s = json_object_to_json_string_ext(obj,
			JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	int ret = 0;

	/*
	 * A document longer than the stdio buffer is written straight away
	 * and, failing, leaves nothing for the final flush to retry: only
	 * here is the reason known.
	 */
	errno = 0;
	if (fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF) {
		ret = errno ? -errno : -EIO;
		output_error(ret);
	}
	json_object_put(obj);
	return ret;
}

void output_error(int err)
{
	if (output_error_reported)
		return;
	output_error_reported = true;
	error("cannot write output (%s)", strerror(err < 0 ? -err : err));
}

/*
 * stdio does not keep the errno of a failed write, only the error flag,
 * and drops the bytes it could not write.  A final flush usually has bytes
 * left to try again and so gives the reason; when it has none, EIO says
 * what is known.
 */
static int flush_stdout(void)
{
	errno = 0;
	if (fflush(stdout) == EOF)
		return errno ? -errno : -EIO;
	if (ferror(stdout))
		return -EIO;
	return 0;
}

int output_finish(int ret)
{
	int err = flush_stdout();

	if (!err)
		return ret;
	output_error(err);
	return 1;
}
