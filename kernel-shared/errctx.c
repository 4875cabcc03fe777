// SPDX-License-Identifier: GPL-2.0-only
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errctx.h"

static _Thread_local char errmsg[sizeof(((struct tlog_errsave *)0)->msg)];
static _Thread_local bool errset;

void tlog_error_set(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	errset = true;
}

int tlog_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	errset = true;
	return err;
}

const char *tlog_error_get(void)
{
	return errset ? errmsg : NULL;
}

void tlog_error_clear(void)
{
	errset = false;
	errmsg[0] = '\0';
}

int tlog_error_wrap(int err, const char *prefix)
{
	char old[sizeof(errmsg)];

	if (!errset)
		return tlog_error(err, "%s", prefix);
	snprintf(old, sizeof(old), "%s", errmsg);
	return tlog_error(err, "%s: %s", prefix, old);
}

/*
 * Searches save and restore around every answer that is not an error,
 * almost always with nothing recorded: only a recorded message is copied.
 */
void tlog_error_save(struct tlog_errsave *save)
{
	save->set = errset;
	if (errset)
		snprintf(save->msg, sizeof(save->msg), "%s", errmsg);
}

void tlog_error_restore(const struct tlog_errsave *save)
{
	errset = save->set;
	if (save->set)
		snprintf(errmsg, sizeof(errmsg), "%s", save->msg);
	else
		errmsg[0] = '\0';
}
