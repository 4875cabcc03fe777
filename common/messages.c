// SPDX-License-Identifier: GPL-2.0-only
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errctx.h"
#include "messages.h"

const char *tlog_progname = "tlogctl";

static void vmessage(const char *level, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s: ", tlog_progname, level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("ERROR", fmt, ap);
	va_end(ap);
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("WARNING", fmt, ap);
	va_end(ap);
}

void error_errno(int err, const char *what, ...)
{
	const char *why = tlog_error_get();
	va_list ap;

	fprintf(stderr, "%s: ERROR: ", tlog_progname);
	va_start(ap, what);
	vfprintf(stderr, what, ap);
	va_end(ap);
	fprintf(stderr, " (%s)\n", why ? why : strerror(err < 0 ? -err : err));
}
