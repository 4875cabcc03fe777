// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "format-pipe.h"

/*
 * Batches go round a ring: the walk fills batch (submitted %
 * PIPE_BATCHES) while the printer works through the ones before it, and
 * waits only when it has filled them all.  A batch is large enough that the
 * handing over (a lock, a signal) is rare, and small enough that the
 * printer starts soon and that the ring stays in the caches the two
 * threads share: 4 x 2048 FIEMAP records are 256 KiB, faulted in once
 * (at 16384 records the ring was 2 MiB of fresh pages, half the page
 * faults of a warm 1 GiB FIEMAP, taken by the walk).
 */
#define PIPE_BATCHES	4
#define BATCH_RECORDS	2048

struct format_pipe {
	struct outbuf *ob;
	size_t rec_size;
	format_fn fn;
	void *arg;
	bool threaded;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t filled;		/* a batch was handed over, or the end */
	pthread_cond_t emptied;		/* a batch was printed */
	/* under lock: batches handed over and printed so far, and the end */
	unsigned long submitted, printed;
	bool ending;
	int err;			/* ob->err as the printer last saw it */
	/* the walk's side: the batch it fills, and how full it is */
	size_t fill;
	size_t counts[PIPE_BATCHES];
	unsigned char *batches[PIPE_BATCHES];
};

static void print_batch(struct format_pipe *fp, const unsigned char *batch, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fp->fn(fp->ob, batch + i * fp->rec_size, fp->arg);
}

static void *printer_run(void *arg)
{
	struct format_pipe *fp = arg;

	pthread_mutex_lock(&fp->lock);
	for (;;) {
		unsigned int b;

		while (fp->printed == fp->submitted && !fp->ending)
			pthread_cond_wait(&fp->filled, &fp->lock);
		if (fp->printed == fp->submitted)
			break;
		b = fp->printed % PIPE_BATCHES;
		pthread_mutex_unlock(&fp->lock);
		print_batch(fp, fp->batches[b], fp->counts[b]);
		pthread_mutex_lock(&fp->lock);
		fp->err = fp->ob->err;
		fp->printed++;
		pthread_cond_signal(&fp->emptied);
	}
	pthread_mutex_unlock(&fp->lock);
	return NULL;
}

static void free_pipe(struct format_pipe *fp)
{
	for (int i = 0; i < PIPE_BATCHES; i++)
		free(fp->batches[i]);
	free(fp);
}

int format_pipe_start(struct outbuf *ob, size_t rec_size, format_fn fn, void *arg,
		      struct format_pipe **ret)
{
	struct format_pipe *fp = calloc(1, sizeof(*fp));

	if (!fp)
		return -ENOMEM;
	fp->ob = ob;
	fp->rec_size = rec_size;
	fp->fn = fn;
	fp->arg = arg;
	for (int i = 0; i < PIPE_BATCHES; i++) {
		fp->batches[i] = malloc(rec_size * BATCH_RECORDS);
		if (!fp->batches[i]) {
			free_pipe(fp);
			return -ENOMEM;
		}
	}
	pthread_mutex_init(&fp->lock, NULL);
	pthread_cond_init(&fp->filled, NULL);
	pthread_cond_init(&fp->emptied, NULL);
	fp->threaded = pthread_create(&fp->thread, NULL, printer_run, fp) == 0;
	*ret = fp;
	return 0;
}

/* Hand the batch being filled to the printer; the outbuf's error so far. */
static int submit_batch(struct format_pipe *fp)
{
	int err;

	pthread_mutex_lock(&fp->lock);
	fp->counts[fp->submitted % PIPE_BATCHES] = fp->fill;
	fp->submitted++;
	fp->fill = 0;
	pthread_cond_signal(&fp->filled);
	/* the next batch to fill must have been printed */
	while (fp->submitted - fp->printed == PIPE_BATCHES)
		pthread_cond_wait(&fp->emptied, &fp->lock);
	err = fp->err;
	pthread_mutex_unlock(&fp->lock);
	return err;
}

int format_pipe_put(struct format_pipe *fp, const void *rec)
{
	if (!fp->threaded) {
		fp->fn(fp->ob, rec, fp->arg);
		return fp->ob->err;
	}
	memcpy(fp->batches[fp->submitted % PIPE_BATCHES] + fp->fill * fp->rec_size, rec,
	       fp->rec_size);
	if (++fp->fill < BATCH_RECORDS)
		return 0;
	return submit_batch(fp);
}

int format_pipe_end(struct format_pipe *fp)
{
	int err;

	if (fp->threaded) {
		if (fp->fill)
			submit_batch(fp);
		pthread_mutex_lock(&fp->lock);
		fp->ending = true;
		pthread_cond_signal(&fp->filled);
		pthread_mutex_unlock(&fp->lock);
		pthread_join(fp->thread, NULL);
	}
	err = fp->ob->err;
	pthread_cond_destroy(&fp->emptied);
	pthread_cond_destroy(&fp->filled);
	pthread_mutex_destroy(&fp->lock);
	free_pipe(fp);
	return err;
}
