/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A progress line on a terminal for long operations: "WHAT:  42%" on
 * stderr, redrawn at most ten times a second, wiped at the end.  Off when
 * stderr is not a terminal or the caller says the work is small.
 */
#ifndef TLOG_PROGRESS_H
#define TLOG_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct progress {
	bool on;
	bool shown;
	const char *what;
	uint64_t total;
	struct timespec last;
};

/* @worth_it: the work is large enough for a progress line to help. */
void progress_init(struct progress *p, const char *what, uint64_t total, bool worth_it);
void progress_update(struct progress *p, uint64_t done);
void progress_end(struct progress *p);
/*
 * Work whose total is not known in advance (a tree read from an
 * archive): progress_text() shows "WHAT: TEXT", rate-limited like the
 * percentage.  @text is only formatted by callers when progress_due().
 */
void progress_init_count(struct progress *p, const char *what, bool worth_it);
bool progress_due(struct progress *p);
void progress_text(struct progress *p, const char *text);

#endif
