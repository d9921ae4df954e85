/*
 * ingest_writer: the writer thread, which runs each flush off the event
 * loop and wakes it through an eventfd when done, and the completion of
 * its flushes on the loop (acknowledged, spooled or dropped).
 */
#include "controller/ingest_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "db/db.h"

/* ---- the writer thread ------------------------------------------------ */

/*
 * One flush at a time runs on the writer thread: ing_apply_items (frames to
 * COPY rows, upserts) and fq_db_flush (COPY, agent seqs, commit), while
 * the event loop goes on reading and decoding the next batch. That is
 * where the time went: with the flush on the loop thread, PostgreSQL sat
 * idle while the controller decoded and encoded, and the controller sat
 * idle while PostgreSQL parsed the COPY. Everything else (replaying the
 * spool, spooling, the acks) stays on the loop thread, which completes a
 * flush when the writer signals efd (fq_ingest_poll).
 */

static void *writer_main(void *arg)
{
	struct fq_ingest *ing = arg;
	uint64_t one = 1;
	int rc;

	pthread_mutex_lock(&ing->lock);
	for (;;) {
		while (!ing->job_ready && !ing->stop)
			pthread_cond_wait(&ing->cond, &ing->lock);
		if (!ing->job_ready)
			break;
		ing->job_ready = false;
		pthread_mutex_unlock(&ing->lock);
		rc = ing_apply_items(ing, ing->inflight, ing->ninflight, false);
		pthread_mutex_lock(&ing->lock);
		ing->job_rc = rc;
		ing->job_done = true;
		ing->done_ns = fq_clock_ns(CLOCK_MONOTONIC);
		pthread_cond_broadcast(&ing->cond);
		if (write(ing->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			fq_log_rl(FQ_LOG_ERROR, "ingest: signalling a finished flush: %s", strerror(errno));
	}
	pthread_mutex_unlock(&ing->lock);
	return NULL;
}

int ing_writer_start(struct fq_ingest *ing)
{
	int rc;

	if ((ing->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return -errno;
	if ((rc = pthread_mutex_init(&ing->lock, NULL)))
		return -rc;
	if ((rc = pthread_cond_init(&ing->cond, NULL))) {
		pthread_mutex_destroy(&ing->lock);
		return -rc;
	}
	if ((rc = pthread_create(&ing->writer, NULL, writer_main, ing))) {
		pthread_cond_destroy(&ing->cond);
		pthread_mutex_destroy(&ing->lock);
		return -rc;
	}
	ing->writer_up = true;
	ing->job_start_ns = fq_clock_ns(CLOCK_MONOTONIC);
	return 0;
}

void ing_writer_stop(struct fq_ingest *ing)
{
	if (ing->writer_up) {
		ing_complete(ing, true);
		pthread_mutex_lock(&ing->lock);
		ing->stop = true;
		pthread_cond_broadcast(&ing->cond);
		pthread_mutex_unlock(&ing->lock);
		pthread_join(ing->writer, NULL);
		pthread_cond_destroy(&ing->cond);
		pthread_mutex_destroy(&ing->lock);
		ing->writer_up = false;
	}
	if (ing->efd >= 0)
		close(ing->efd);
	ing->efd = -1;
}

/* Folds what ing_apply_items counted into the stats (loop thread, writer idle). */
void ing_fold_counts(struct fq_ingest *ing)
{
	ing->st.duplicates += ing->ac.duplicates;
	ing->st.rows_rejected += ing->ac.rejected;
	ing->st.rows_written += ing->ac.rows;
	ing->job_rows += ing->ac.rows;
	ing->ac.duplicates = ing->ac.rejected = ing->ac.rows = 0;
}

/* Hands the first max_batch_frames frames of the batch to the writer (a
 * flush never grows past what one statement timeout allows). Each node's
 * acknowledgement moves with its frames (inflight_max): the highest seq
 * among them, unless its count restarted since (never acknowledge the old
 * count's seqs to the new one); the rest of the batch keeps batch_max. */
int ing_submit(struct fq_ingest *ing)
{
	size_t k = ing->nbatch < ing->cfg.max_batch_frames ? ing->nbatch : ing->cfg.max_batch_frames;

	if (ing->capinflight < k) {
		struct item *b = realloc(ing->inflight, k * sizeof(*b));
		if (!b)
			return -ENOMEM;
		ing->inflight = b;
		ing->capinflight = k;
	}
	memcpy(ing->inflight, ing->batch, k * sizeof(*ing->batch));
	memmove(ing->batch, ing->batch + k, (ing->nbatch - k) * sizeof(*ing->batch));
	ing->ninflight = k;
	ing->nbatch -= k;
	for (size_t i = 0; i < k; i++) {
		const struct item *it = &ing->inflight[i];
		struct node_state *n = it->node;
		if (it->seq != SEQ_HELLO && it->seq != SEQ_RESTART && it->restarts == n->restarts &&
		    it->seq > n->inflight_max)
			n->inflight_max = it->seq;
	}
	for (size_t i = 0; i < k; i++) {
		struct node_state *n = ing->inflight[i].node;
		if (n->batch_max && n->batch_max == n->inflight_max)
			n->batch_max = 0; /* its last frame is in flight */
	}
	ing->busy = true;
	ing->jobs++;
	ing->submit_ns = fq_clock_ns(CLOCK_MONOTONIC);
	ing->job_enc0 = ing->ac.encode_ns;
	ing->job_wr0 = ing->ac.write_ns;
	pthread_mutex_lock(&ing->lock);
	ing->job_done = false;
	ing->job_ready = true;
	pthread_cond_signal(&ing->cond);
	pthread_mutex_unlock(&ing->lock);
	return 0;
}

/* Completes the flush in flight, if any and if finished (or waiting for it
 * with wait): committed, its frames are acknowledged; failed, they go to
 * the spool with the frames accepted since behind them (order), as a
 * failed flush on the loop thread would. 1 completed, 0 nothing to do or
 * still running; a negative errno if frames had to be dropped. */
int ing_complete(struct fq_ingest *ing, bool wait)
{
	int64_t t0 = fq_clock_ns(CLOCK_MONOTONIC);
	uint64_t v;
	int rc;

	if (!ing->busy)
		return 0;
	pthread_mutex_lock(&ing->lock);
	if (!ing->job_done && !wait) {
		pthread_mutex_unlock(&ing->lock);
		return 0;
	}
	while (!ing->job_done)
		pthread_cond_wait(&ing->cond, &ing->lock);
	rc = ing->job_rc;
	pthread_mutex_unlock(&ing->lock);
	if (read(ing->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		fq_log_rl(FQ_LOG_ERROR, "ingest: reading the writer's eventfd: %s", strerror(errno));
	ing->job_wait_ns += (uint64_t)(fq_clock_ns(CLOCK_MONOTONIC) - t0);
	ing->busy = false;
	fq_debug("ingest: [%.3f..%.3f] flush of %zu frames: encoding %.1f ms, COPY + commit %.1f ms, "
		 "completed %.1f ms after "
		 "it finished (%zu frames queued since)",
		 (double)(ing->submit_ns % 100000000000ll) / 1e9,
		 (double)(ing->done_ns % 100000000000ll) / 1e9, ing->ninflight,
		 (double)(ing->ac.encode_ns - ing->job_enc0) / 1e6,
		 (double)(ing->ac.write_ns - ing->job_wr0) / 1e6,
		 (double)(fq_clock_ns(CLOCK_MONOTONIC) - ing->done_ns) / 1e6, ing->nbatch);
	ing_fold_counts(ing);
	ing->job_busy_ns = ing->ac.encode_ns + ing->ac.write_ns;
	if (rc == 0) {
		ing_db_ok(ing);
		for (size_t i = 0; i < ing->ninflight; i++) {
			struct node_state *n = ing->inflight[i].node;
			if (!n->inflight_max)
				continue;
			n->durable = n->inflight_max;
			n->inflight_max = 0;
			ing->ops.durable(ing->arg, n->name, n->durable);
		}
		ing_free_items(ing->inflight, ing->ninflight);
		ing->ninflight = 0;
		return 1;
	}
	ing->st.flush_failures++;
	ing_db_down(ing, fq_db_error(ing->db));
	/* inflight, then the batch accepted since: one batch, to the spool. */
	if (ing->capinflight < ing->ninflight + ing->nbatch) {
		struct item *b = realloc(ing->inflight, (ing->ninflight + ing->nbatch) * sizeof(*b));
		if (!b) {
			/* Not even that: drop both, their agents resend them. */
			ing_items_drop(ing, ing->inflight, ing->ninflight);
			ing_batch_drop(ing);
			ing_free_items(ing->inflight, ing->ninflight);
			ing->ninflight = 0;
			ing_free_items(ing->batch, ing->nbatch);
			ing->nbatch = 0;
			return -ENOMEM;
		}
		ing->inflight = b;
		ing->capinflight = ing->ninflight + ing->nbatch;
	}
	memcpy(ing->inflight + ing->ninflight, ing->batch, ing->nbatch * sizeof(*ing->batch));
	{
		struct item *t = ing->batch;
		size_t cap = ing->capbatch;
		ing->batch = ing->inflight;
		ing->nbatch = ing->ninflight + ing->nbatch;
		ing->capbatch = ing->capinflight;
		ing->inflight = t;
		ing->capinflight = cap;
		ing->ninflight = 0;
	}
	for (size_t i = 0; i < ing->nbatch; i++) {
		struct node_state *n = ing->batch[i].node;
		if (!n->batch_max)
			n->batch_max = n->inflight_max;
		n->inflight_max = 0;
	}
	if ((rc = ing_batch_to_spool(ing)) == 0)
		ing_batch_durable(ing);
	else
		ing_batch_drop(ing);
	ing_free_items(ing->batch, ing->nbatch);
	ing->nbatch = 0;
	return rc < 0 ? rc : 1;
}
