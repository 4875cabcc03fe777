// SPDX-License-Identifier: GPL-2.0-only
/* Progress lines on a terminal (progress.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"

#define PROGRESS_INTERVAL_NS	100000000LL

void progress_init(struct progress *p, const char *what, uint64_t total, bool worth_it)
{
	memset(p, 0, sizeof(*p));
	p->on = worth_it && total && isatty(STDERR_FILENO);
	p->what = what;
	p->total = total;
}

void progress_init_count(struct progress *p, const char *what, bool worth_it)
{
	memset(p, 0, sizeof(*p));
	p->on = worth_it && isatty(STDERR_FILENO);
	p->what = what;
}

/* Whether a line is due now (the first, or the interval has passed); marks it shown. */
bool progress_due(struct progress *p)
{
	struct timespec now;
	long long elapsed;

	if (!p->on)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	elapsed = (long long)(now.tv_sec - p->last.tv_sec) * 1000000000LL +
		  (now.tv_nsec - p->last.tv_nsec);
	if (p->shown && elapsed < PROGRESS_INTERVAL_NS)
		return false;
	p->last = now;
	p->shown = true;
	return true;
}

void progress_text(struct progress *p, const char *text)
{
	fprintf(stderr, "\r%s: %s\033[K", p->what, text);
	fflush(stderr);
}

void progress_update(struct progress *p, uint64_t done)
{
	if (!p->total || !progress_due(p))
		return;
	if (done > p->total)
		done = p->total;
	fprintf(stderr, "\r%s: %3u%%", p->what, (unsigned int)(done * 100 / p->total));
	fflush(stderr);
}

/* Wipe the line so that what follows starts clean. */
void progress_end(struct progress *p)
{
	if (p->shown) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	p->shown = false;
}
