/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Printing on a thread of its own.  A streamed answer (FIEMAP's extents)
 * is a walk that finds records and a loop that prints them; at
 * millions of records the printing - decimal digits, JSON punctuation,
 * the writes - is a quarter of the work, and it needs nothing the walk
 * holds.  A format pipe takes the records as the walk finds them, in
 * batches, and prints them in order on a second thread into an outbuf,
 * so that the walk goes on meanwhile (on a machine with a core to spare).
 * Worth it only where printing a record costs more than handing it over:
 * a SEEK map (two numbers a segment) was measured no faster with it.
 *
 * The outbuf belongs to the pipe between format_pipe_start() and
 * format_pipe_end(): the caller writes what comes before and after the
 * records, not between.  @fn runs on the pipe's thread, one record at a
 * time, in the order they were put.  When the thread cannot start, @fn
 * runs inline in format_pipe_put() instead: the same output, unthreaded.
 */
#ifndef TLOG_FORMAT_PIPE_H
#define TLOG_FORMAT_PIPE_H

#include <stddef.h>

#include "outbuf.h"

struct format_pipe;
typedef void (*format_fn)(struct outbuf *ob, const void *rec, void *arg);

/* A pipe for records of @rec_size bytes; -ENOMEM without memory. */
int format_pipe_start(struct outbuf *ob, size_t rec_size, format_fn fn, void *arg,
		      struct format_pipe **ret);
/*
 * Hand one record over (copied).  Returns 0, or the outbuf's error once a
 * write failed: the walk should stop, as what follows would be lost too.
 */
int format_pipe_put(struct format_pipe *fp, const void *rec);
/* Print what is left, wait for it, free the pipe; returns the outbuf's error. */
int format_pipe_end(struct format_pipe *fp);

#endif
