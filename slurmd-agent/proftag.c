/* proftag: a profiler report tagged and checked (see proftag.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "slurmd-agent/proftag.h"

#define OP_MAX_NS  (3600 * INT64_C(1000000000))
#define NAME_MAX_B 32

int fq_proftag_kind_known(const char *s)
{
	static const char *const kinds[] = {"coll",       "p2p_send",  "p2p_recv",  "proxy_send",
					    "proxy_recv", "step_send", "step_recv", "net_ib",
					    "net_sock",   "net_other", "other"};

	for (size_t i = 0; s && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(s, kinds[i]))
			return 1;
	return 0;
}

/* A short word: letters, digits, '_' (empty allowed). */
static int name_ok(const char *s)
{
	size_t n = 0;

	for (; s && *s; s++, n++)
		if (n >= NAME_MAX_B || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
					 (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

static int window_ok(const Fabriciq__ProfilerWindow *w)
{
	return fq_proftag_kind_known(w->kind) && w->count > 0 && w->mean_ns >= 0 && w->max_ns >= 0 &&
	       w->count <= INT64_MAX && w->bytes <= INT64_MAX;
}

static int op_ok(const Fabriciq__ProfilerOp *o)
{
	return o->end_ns >= o->start_ns && o->end_ns - o->start_ns <= OP_MAX_NS && isfinite(o->gbps) &&
	       o->gbps >= 0 && o->bytes <= INT64_MAX && name_ok(o->func) && name_ok(o->algo) &&
	       name_ok(o->proto) && o->func && *o->func;
}

int fq_proftag(Fabriciq__ProfilerReport *r, uint64_t job_id, uint32_t step_id, uint32_t rank,
	       unsigned *removed)
{
	size_t k = 0;
	unsigned gone = 0;

	if (r->job_id && (r->job_id != job_id || r->step_id != step_id))
		return -EPERM;
	r->job_id = job_id;
	r->step_id = step_id;
	r->rank = rank;
	if (r->interval_end_ns < r->interval_start_ns)
		r->interval_start_ns = r->interval_end_ns;
	for (size_t i = 0; i < r->n_windows; i++) {
		if (window_ok(r->windows[i])) {
			r->windows[k++] = r->windows[i];
			continue;
		}
		fabriciq__profiler_window__free_unpacked(r->windows[i], NULL);
		gone++;
	}
	r->n_windows = k;
	k = 0;
	for (size_t i = 0; i < r->n_ops; i++) {
		if (op_ok(r->ops[i])) {
			r->ops[k++] = r->ops[i];
			continue;
		}
		fabriciq__profiler_op__free_unpacked(r->ops[i], NULL);
		gone++;
	}
	r->n_ops = k;
	if (removed)
		*removed = gone;
	return 0;
}
