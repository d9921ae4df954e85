/*
 * metrics: the controller's Prometheus exposition (text format 0.0.4).
 * Fed from the event loop; rendered once per report window and published
 * to the HTTP thread as one string. Names carry the fabriciq_ prefix and
 * their unit (_seconds, _bytes); counters end in _total.
 */
#ifndef FQ_CONTROLLER_METRICS_H
#define FQ_CONTROLLER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/ingest.h"
#include "controller/session.h"
#include "proto/fabriciq.pb-c.h"

struct fq_metrics;

struct fq_metrics *fq_metrics_create(void);
void fq_metrics_destroy(struct fq_metrics *m);

/* An accepted report frame of node: paths (up, owd), NIC flaps, job lane bytes. */
void fq_metrics_frame(struct fq_metrics *m, const char *node, const Fabriciq__Envelope *env);
/* A job step is gone (controller/steplive.h): its series leave the
 * exposition, counted as ended or idle. */
void fq_metrics_drop_step(struct fq_metrics *m, uint64_t job, uint32_t step, bool idle);
void fq_metrics_clock(struct fq_metrics *m, const char *node, double offset_ns, double error_ns);
void fq_metrics_clock_solve(struct fq_metrics *m, uint32_t solved, double rms_ns, double max_ns);

/* The whole exposition into *text (free() it). 0 or -ENOMEM. */
int fq_metrics_render(struct fq_metrics *m, const struct fq_ingest_stats *ing,
		      const struct fq_session_stats *ss, uint64_t anomalies, uint64_t hints, char **text,
		      size_t *len);

/* Appends s to out as a Prometheus label value (escapes \ " and newline). */
void fq_metrics_escape(FILE *out, const char *s);

#endif /* FQ_CONTROLLER_METRICS_H */
