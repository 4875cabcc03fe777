/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Messages for the user.  An error is one line on stderr:
 *	tlogctl: ERROR: <what> (<why>)
 */
#ifndef TLOG_MESSAGES_H
#define TLOG_MESSAGES_H

extern const char *tlog_progname;

__attribute__((format(printf, 1, 2)))
void error(const char *fmt, ...);
__attribute__((format(printf, 1, 2)))
void warning(const char *fmt, ...);

/*
 * Report a failed library call: @what is printed as given, the why is the
 * library's error context when it has one, else strerror(-err).
 */
__attribute__((format(printf, 2, 3)))
void error_errno(int err, const char *what, ...);

#endif
