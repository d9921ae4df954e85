/*
 * metrics: see metrics.h.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/metrics.h"
#include "controller/strmap.h"

struct path_m {
	int up;
	double owd_fwd_p99_s, owd_rev_p99_s, rtt_p50_s;
	uint64_t lost, sent;
};

struct nic_m {
	uint64_t downs, ups;
};

struct lane_m {
	uint64_t bytes;
};

/* A job step's series: its lanes, keyed job, step, lane. */
struct step_m {
	struct fq_strmap lanes;
};

struct clock_m {
	double offset_s, error_s;
};

struct fq_metrics {
	struct fq_strmap paths, nics, steps, clocks;
	uint64_t steps_ended, steps_idle;
	uint32_t solved;
	double rms_s, max_s;
};

/* Keys join label values with \x1f, split again when rendering. */
static void *slot(struct fq_strmap *m, const char *key, size_t size)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(m, key);

	if (!e)
		return NULL;
	if (!e->value)
		e->value = calloc(1, size);
	return e->value;
}

static void step_free(void *v)
{
	struct step_m *st = v;

	if (!st)
		return;
	fq_strmap_clear(&st->lanes, free);
	free(st);
}

static void step_key(char *key, size_t len, uint64_t job, uint32_t step)
{
	snprintf(key, len, "%llu\x1f%u", (unsigned long long)job, step);
}

static void lane_bytes(struct fq_metrics *m, const Fabriciq__LaneReport *l)
{
	char key[64];
	struct step_m *st;
	struct lane_m *x;

	step_key(key, sizeof(key), l->job_id, l->step_id);
	if (!(st = slot(&m->steps, key, sizeof(*st))))
		return;
	snprintf(key, sizeof(key), "%llu\x1f%u\x1f%u", (unsigned long long)l->job_id, l->step_id, l->lane);
	if ((x = slot(&st->lanes, key, sizeof(*x))))
		x->bytes += l->bytes;
}

void fq_metrics_drop_step(struct fq_metrics *m, uint64_t job, uint32_t step, bool idle)
{
	char key[64];

	step_key(key, sizeof(key), job, step);
	step_free(fq_strmap_remove(&m->steps, key));
	if (idle)
		m->steps_idle++;
	else
		m->steps_ended++;
}

struct fq_metrics *fq_metrics_create(void)
{
	return calloc(1, sizeof(struct fq_metrics));
}

void fq_metrics_destroy(struct fq_metrics *m)
{
	if (!m)
		return;
	fq_strmap_clear(&m->paths, free);
	fq_strmap_clear(&m->nics, free);
	fq_strmap_clear(&m->steps, step_free);
	fq_strmap_clear(&m->clocks, free);
	free(m);
}

void fq_metrics_frame(struct fq_metrics *m, const char *node, const Fabriciq__Envelope *env)
{
	char key[1024];

	if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROBE) {
		const Fabriciq__ProbeReport *p = env->probe;
		struct path_m *x;
		snprintf(key, sizeof(key), "%s\x1f%s\x1f%s\x1f%s", node, p->local_nic, p->remote_node,
			 p->remote_nic);
		if (!(x = slot(&m->paths, key, sizeof(*x))))
			return;
		x->up = p->path_up;
		x->owd_fwd_p99_s = (double)p->owd_fwd_p99_ns / 1e9;
		x->owd_rev_p99_s = (double)p->owd_rev_p99_ns / 1e9;
		x->rtt_p50_s = (double)p->rtt_p50_ns / 1e9;
		x->lost += p->lost;
		x->sent += p->sent;
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LINK) {
		const Fabriciq__LinkEvent *l = env->link;
		struct nic_m *x;
		snprintf(key, sizeof(key), "%s\x1f%s", node, l->local_nic);
		if (!(x = slot(&m->nics, key, sizeof(*x))))
			return;
		if (l->state == FABRICIQ__LINK_EVENT__STATE__DOWN)
			x->downs++;
		else if (l->state == FABRICIQ__LINK_EVENT__STATE__UP)
			x->ups++;
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE && env->lane->is_send) {
		/* Sender-side reports only, so bytes are not counted twice. */
		lane_bytes(m, env->lane);
	}
}

void fq_metrics_clock(struct fq_metrics *m, const char *node, double offset_ns, double error_ns)
{
	struct clock_m *x = slot(&m->clocks, node, sizeof(*x));

	if (x) {
		x->offset_s = offset_ns / 1e9;
		x->error_s = error_ns / 1e9;
	}
}

void fq_metrics_clock_solve(struct fq_metrics *m, uint32_t solved, double rms_ns, double max_ns)
{
	m->solved = solved;
	m->rms_s = rms_ns / 1e9;
	m->max_s = max_ns / 1e9;
}

void fq_metrics_escape(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
}

/* Writes {name1="v1",...} from a \x1f-joined key. */
static void labels(FILE *out, const char *const *names, const char *key)
{
	char buf[1024], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", key);
	fputc('{', out);
	tok = strtok_r(buf, "\x1f", &save);
	for (int i = 0; names[i]; i++) {
		fprintf(out, "%s%s=\"", i ? "," : "", names[i]);
		fq_metrics_escape(out, tok ? tok : "");
		fputc('"', out);
		tok = tok ? strtok_r(NULL, "\x1f", &save) : NULL;
	}
	fputc('}', out);
}

struct render {
	FILE *out;
	const char *metric;
	const char *const *names;
	int field;
};

static void emit(struct fq_strmap_entry *e, void *arg)
{
	struct render *r = arg;
	double v = 0;

	switch (r->field) {
	case 0:
		v = ((struct path_m *)e->value)->up;
		break;
	case 1:
		v = ((struct path_m *)e->value)->owd_fwd_p99_s;
		break;
	case 2:
		v = ((struct path_m *)e->value)->owd_rev_p99_s;
		break;
	case 3:
		v = ((struct path_m *)e->value)->rtt_p50_s;
		break;
	case 4:
		v = (double)((struct path_m *)e->value)->lost;
		break;
	case 5:
		v = (double)((struct nic_m *)e->value)->downs;
		break;
	case 6:
		v = (double)((struct lane_m *)e->value)->bytes;
		break;
	case 7:
		v = ((struct clock_m *)e->value)->offset_s;
		break;
	case 8:
		v = ((struct clock_m *)e->value)->error_s;
		break;
	}
	fputs(r->metric, r->out);
	labels(r->out, r->names, e->key);
	fprintf(r->out, " %.9g\n", isfinite(v) ? v : 0.0);
}

static void family(FILE *out, const struct fq_strmap *m, const char *name, const char *type, const char *help,
		   const char *const *names, int field)
{
	struct render r = {out, name, names, field};

	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	fq_strmap_each(m, emit, &r);
}

static void emit_step(struct fq_strmap_entry *e, void *arg)
{
	fq_strmap_each(&((struct step_m *)e->value)->lanes, emit, arg);
}

static void lane_family(FILE *out, const struct fq_metrics *m, const char *const *names)
{
	struct render r = {out, "fabriciq_job_lane_bytes_total", names, 6};

	fprintf(out, "# HELP %s bytes sent on a job step's lane\n# TYPE %s counter\n", r.metric, r.metric);
	fq_strmap_each(&m->steps, emit_step, &r);
}

static void scalar(FILE *out, const char *name, const char *type, const char *help, double v)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

int fq_metrics_render(struct fq_metrics *m, const struct fq_ingest_stats *st,
		      const struct fq_session_stats *ss, uint64_t anomalies, uint64_t hints, char **text,
		      size_t *len)
{
	static const char *const path_l[] = {"node", "nic", "remote_node", "remote_nic", NULL};
	static const char *const nic_l[] = {"node", "nic", NULL};
	static const char *const lane_l[] = {"job_id", "step_id", "lane", NULL};
	static const char *const node_l[] = {"node", NULL};
	static const char *const kinds[] = {"probe",    "clock", "lane",  "step_start", "step_end", "link",
					    "failover", "hello", "trace", "lane_route", "profiler", "stall"};
	FILE *out = open_memstream(text, len);

	if (!out)
		return -ENOMEM;
	scalar(out, "fabriciq_agents_connected", "gauge", "agents authenticated and connected",
	       (double)ss->connected);
	scalar(out, "fabriciq_connections_total", "counter", "agent connections accepted",
	       (double)ss->connections);
	scalar(out, "fabriciq_auth_failures_total", "counter", "agent authentications refused",
	       (double)ss->auth_failed);
	scalar(out, "fabriciq_auth_timeouts_total", "counter", "agents that did not authenticate in time",
	       (double)ss->auth_timeout);
	scalar(out, "fabriciq_hello_timeouts_total", "counter",
	       "authenticated agents that sent no AgentHello in time", (double)ss->hello_timeout);
	scalar(out, "fabriciq_auth_busy_total", "counter",
	       "Auth frames refused: the credential queue was full", (double)ss->auth_busy);
	scalar(out, "fabriciq_connections_open", "gauge", "agent connections open, in any state",
	       (double)ss->open);
	scalar(out, "fabriciq_connections_refused_total", "counter",
	       "connections closed on accept (controller.max_connections, max_unauthenticated_per_source)",
	       (double)ss->refused);
	scalar(
	    out, "fabriciq_node_claims_refused_total", "counter",
	    "AgentHellos refused for their node name: not signed by the node's key, or from another address "
	    "than its own (controller.node_bindings)",
	    (double)ss->node_refused);
	scalar(out, "fabriciq_frames_oversized_total", "counter",
	       "frames over controller.max_frame (over the Auth limit before authentication)",
	       (double)ss->frames_oversized);
	scalar(out, "fabriciq_frames_garbage_total", "counter", "undecodable frames",
	       (double)ss->frames_garbage);
	scalar(out, "fabriciq_frames_unexpected_total", "counter", "frames out of protocol order or unusable",
	       (double)ss->frames_unexpected);
	fputs("# HELP fabriciq_ingest_frames_total report frames accepted, by kind\n"
	      "# TYPE fabriciq_ingest_frames_total counter\n",
	      out);
	for (int i = 0; i < FQ_INGEST_KINDS; i++)
		fprintf(out, "fabriciq_ingest_frames_total{kind=\"%s\"} %llu\n", kinds[i],
			(unsigned long long)st->frames_by_kind[i]);
	scalar(out, "fabriciq_ingest_duplicates_total", "counter", "replayed frames dropped by dedupe",
	       (double)st->duplicates);
	scalar(out, "fabriciq_ingest_rows_total", "counter", "rows written with COPY",
	       (double)st->rows_written);
	scalar(out, "fabriciq_ingest_rows_rejected_total", "counter",
	       "rows or statements the database refused", (double)st->rows_rejected);
	scalar(out, "fabriciq_ingest_flushes_total", "counter", "batches made durable", (double)st->flushes);
	scalar(out, "fabriciq_ingest_flush_failures_total", "counter", "batches the database did not take",
	       (double)st->flush_failures);
	scalar(out, "fabriciq_ingest_pending_frames", "gauge", "frames accepted, not yet durable",
	       (double)st->pending_frames);
	scalar(out, "fabriciq_ingest_cached_steps", "gauge",
	       "job steps whose start ingest keeps until every node has ended them",
	       (double)st->cached_steps);
	scalar(out, "fabriciq_ingest_cached_rank_nics", "gauge", "ranks' NICs ingest keeps for running steps",
	       (double)st->cached_rank_nics);
	scalar(out, "fabriciq_spool_frames_total", "counter", "frames written to the spool",
	       (double)st->spooled_frames);
	scalar(out, "fabriciq_spool_replayed_frames_total", "counter",
	       "spooled frames written to the database", (double)st->replayed_frames);
	scalar(out, "fabriciq_spool_dropped_frames_total", "counter", "frames not acknowledged: spool full",
	       (double)st->spool_full_drops);
	scalar(out, "fabriciq_spool_bytes", "gauge", "spooled bytes not yet in the database",
	       (double)st->spool_bytes);
	scalar(out, "fabriciq_database_up", "gauge", "1 while PostgreSQL takes writes", st->db_up ? 1 : 0);
	scalar(out, "fabriciq_anomalies_total", "counter", "anomalies opened by the detector",
	       (double)anomalies);
	scalar(out, "fabriciq_hints_total", "counter", "drain/resume hints emitted", (double)hints);
	scalar(out, "fabriciq_clock_solved_nodes", "gauge", "nodes connected to the clock reference",
	       m->solved);
	scalar(out, "fabriciq_clock_rms_residual_seconds", "gauge", "loop closure error of the last solve",
	       m->rms_s);
	scalar(out, "fabriciq_clock_max_residual_seconds", "gauge", "largest edge residual of the last solve",
	       m->max_s);
	family(out, &m->paths, "fabriciq_path_up", "gauge", "1: the path answered in its last window", path_l,
	       0);
	family(out, &m->paths, "fabriciq_path_owd_fwd_p99_seconds", "gauge",
	       "one-way delay p99, local -> remote", path_l, 1);
	family(out, &m->paths, "fabriciq_path_owd_rev_p99_seconds", "gauge",
	       "one-way delay p99, remote -> local", path_l, 2);
	family(out, &m->paths, "fabriciq_path_rtt_p50_seconds", "gauge", "probe round trip p50", path_l, 3);
	family(out, &m->paths, "fabriciq_path_probes_lost_total", "counter", "probes lost", path_l, 4);
	family(out, &m->nics, "fabriciq_nic_flaps_total", "counter", "DOWN transitions reported for the NIC",
	       nic_l, 5);
	lane_family(out, m, lane_l);
	scalar(out, "fabriciq_metrics_steps", "gauge", "job steps with series in this exposition",
	       (double)m->steps.count);
	fprintf(out,
		"# HELP fabriciq_metrics_steps_expired_total job steps whose series left, by why\n"
		"# TYPE fabriciq_metrics_steps_expired_total counter\n"
		"fabriciq_metrics_steps_expired_total{reason=\"ended\"} %llu\n"
		"fabriciq_metrics_steps_expired_total{reason=\"idle\"} %llu\n",
		(unsigned long long)m->steps_ended, (unsigned long long)m->steps_idle);
	family(out, &m->clocks, "fabriciq_clock_offset_seconds", "gauge", "node clock minus the reference's",
	       node_l, 7);
	family(out, &m->clocks, "fabriciq_clock_error_bound_seconds", "gauge", "error bound of the offset",
	       node_l, 8);
	if (fclose(out) != 0) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}
