/*
 * det-fixture: the detector tests' shared recording and feeding
 * (det-fixture.h).
 */
#include "tests/controller/det-fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- recorded actions ----------------------------------------------------- */

struct rec recs[4096];
size_t nrecs;

static void cp(char *dst, size_t len, const char *s)
{
	snprintf(dst, len, "%s", s ? s : "");
}

void collect(struct fq_detector *d)
{
	struct fq_det_action a;

	while (fq_detector_next(d, &a)) {
		struct rec *r = &recs[nrecs < 4095 ? nrecs++ : nrecs];

		memset(r, 0, sizeof(*r));
		r->kind = a.kind, r->handle = a.handle, r->job = a.job_id, r->step = a.step_id;
		r->incident = a.incident, r->events = a.events, r->port = a.port;
		r->severity = a.severity, r->start = a.start_ns, r->end = a.end_ns, r->resume = a.resume;
		for (size_t i = 0; i < a.nranks && i < 8; i++)
			r->ranks[r->nranks++] = a.ranks[i];
		cp(r->akind, sizeof(r->akind), a.anomaly_kind);
		cp(r->node, sizeof(r->node), a.node);
		cp(r->nic, sizeof(r->nic), a.nic);
		cp(r->rnode, sizeof(r->rnode), a.remote_node);
		cp(r->rnic, sizeof(r->rnic), a.remote_nic);
		cp(r->summary, sizeof(r->summary), a.summary);
		cp(r->evidence, sizeof(r->evidence), a.evidence_json);
		cp(r->reason, sizeof(r->reason), a.reason);
		cp(r->component, sizeof(r->component), a.component);
	}
}

size_t count(enum fq_det_action_kind kind, const char *akind)
{
	size_t n = 0;

	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].kind == kind && (!akind || strcmp(recs[i].akind, akind) == 0);
	return n;
}

const struct rec *find_open(const char *akind, const char *node, const char *nic)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_OPEN && strcmp(recs[i].akind, akind) == 0 &&
		    (!node || strcmp(recs[i].node, node) == 0) && (!nic || strcmp(recs[i].nic, nic) == 0))
			return &recs[i];
	return NULL;
}

const struct rec *find_kind(enum fq_det_action_kind kind, uint64_t handle)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == kind && (!handle || recs[i].handle == handle))
			return &recs[i];
	return NULL;
}

/* The ranks of (job, step) attached to handle, as a bit set; -1: not attached. */
long long attached(uint64_t handle, uint64_t job, uint32_t step)
{
	long long bits = -1;

	for (size_t i = 0; i < nrecs; i++) {
		if (recs[i].kind != FQ_DET_ATTACH || recs[i].handle != handle || recs[i].job != job ||
		    recs[i].step != step)
			continue;
		if (bits < 0)
			bits = 0;
		for (size_t k = 0; k < recs[i].nranks; k++)
			bits |= 1LL << (recs[i].ranks[k] & 63);
	}
	return bits;
}

bool attached_job(uint64_t job)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_ATTACH && recs[i].job == job)
			return true;
	return false;
}

void reset(void)
{
	nrecs = 0;
}

/* ---- fixture replay ------------------------------------------------------- */

/* The defaults, but a path's delay counts from its first elevated window
 * (test_persistence checks the default of 3 in a row). */
struct fq_detector *make(void)
{
	return make_share(0);
}

struct fq_detector *make_share(double slow_nic_share)
{
	struct fq_detector_config c;

	fq_detector_config_defaults(&c);
	c.delay_persist_windows = 1;
	c.lane_outlier_persist = 1;
	if (slow_nic_share > 0)
		c.slow_nic_share = slow_nic_share;
	return fq_detector_create(&c);
}

/* Feeds the lines of a fixture with a time <= until_s into d (ticks too). */
void replay(struct fq_detector *d, const char *name, double until_s)
{
	const char *top = getenv("top_srcdir");
	char path[512], line[512], a[64], b[64], c[64], e[64], st[16];
	double t0, t1, x1, x2, x3, x4;
	unsigned long job, step, sr, dr, lane;
	int up;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/controller/data/%s", top ? top : "..", name);
	f = fopen(path, "r");
	if (!f) {
		printf("Bail out! cannot open %s\n", path);
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "tick %lf", &t0) == 1) {
			if (t0 > until_s)
				break;
			fq_detector_tick(d, S(t0));
			collect(d);
		} else if (sscanf(line, "link %63s %63s %63s %63s %15s %lf", a, b, c, e, st, &t0) == 6) {
			bool nic = strcmp(c, "-") == 0;

			if (t0 > until_s)
				break;
			fq_detector_link(d, &(struct fq_det_link){.node = a,
								  .nic = b,
								  .remote_node = nic ? "" : c,
								  .remote_nic = nic ? "" : e,
								  .nic_level = nic,
								  .up = strcmp(st, "up") == 0,
								  .time_ns = S(t0)});
		} else if (sscanf(line, "probe %63s %63s %63s %63s %lf %lf %lf %lf %lf %lf %d", a, b, c, e,
				  &t0, &t1, &x1, &x2, &x3, &x4, &up) == 11) {
			if (t1 > until_s)
				break;
			fq_detector_probe(d, &(struct fq_det_probe){.node = a,
								    .nic = b,
								    .remote_node = c,
								    .remote_nic = e,
								    .start_ns = S(t0),
								    .end_ns = S(t1),
								    .sent = 100,
								    .answered = 100,
								    .owd_fwd_p50_ns = US(x1),
								    .owd_fwd_p99_ns = US(x2),
								    .owd_rev_p50_ns = US(x3),
								    .owd_rev_p99_ns = US(x4),
								    .up = up != 0});
		} else if (sscanf(line, "lane %lu %lu %lu %lu %lu %63s %63s %63s %63s %lf %lf %lf %lf", &job,
				  &step, &sr, &dr, &lane, a, b, c, e, &t0, &t1, &x1, &x2) == 13) {
			if (t1 > until_s)
				break;
			fq_detector_lane(d, &(struct fq_det_lane){.job_id = job,
								  .step_id = (uint32_t)step,
								  .src_rank = (uint32_t)sr,
								  .dst_rank = (uint32_t)dr,
								  .lane = (uint32_t)lane,
								  .src_node = a,
								  .src_nic = b,
								  .dst_node = c,
								  .dst_nic = e,
								  .start_ns = S(t0),
								  .end_ns = S(t1),
								  .bytes = 1 << 20,
								  .owd_p50_ns = US(x1),
								  .owd_p99_ns = US(x2),
								  .synchronised = true});
		}
	}
	fclose(f);
	collect(d);
}

void probe(struct fq_detector *d, const char *n, const char *nic, const char *rn, const char *rnic, double t,
	   double p50_us, double p99_us)
{
	fq_detector_probe(d, &(struct fq_det_probe){.node = n,
						    .nic = nic,
						    .remote_node = rn,
						    .remote_nic = rnic,
						    .start_ns = S(t - 1),
						    .end_ns = S(t),
						    .sent = 100,
						    .answered = 100,
						    .owd_fwd_p50_ns = US(p50_us),
						    .owd_fwd_p99_ns = US(p99_us),
						    .up = true});
}

void lane(struct fq_detector *d, uint64_t job, uint32_t sr, uint32_t dr, uint32_t ln, const char *sn,
	  const char *snic, const char *dn, const char *dnic, double t, double p50_us, double p99_us)
{
	fq_detector_lane(d, &(struct fq_det_lane){.job_id = job,
						  .src_rank = sr,
						  .dst_rank = dr,
						  .lane = ln,
						  .src_node = sn,
						  .src_nic = snic,
						  .dst_node = dn,
						  .dst_nic = dnic,
						  .start_ns = S(t - 1),
						  .end_ns = S(t),
						  .owd_p50_ns = US(p50_us),
						  .owd_p99_ns = US(p99_us),
						  .owd_min_ns = US(p50_us)});
}

void link_event(struct fq_detector *d, const char *n, const char *nic, const char *rn, const char *rnic,
		bool up, double t)
{
	fq_detector_link(d, &(struct fq_det_link){.node = n,
						  .nic = nic,
						  .remote_node = rn ? rn : "",
						  .remote_nic = rn ? rnic : "",
						  .nic_level = rn == NULL,
						  .up = up,
						  .time_ns = S(t)});
}

/* The newest UPDATE of handle (NULL: none). */
const struct rec *last_update(uint64_t handle)
{
	for (size_t i = nrecs; i-- > 0;)
		if (recs[i].kind == FQ_DET_UPDATE && recs[i].handle == handle)
			return &recs[i];
	return NULL;
}

size_t count_place(enum fq_det_action_kind kind, bool path)
{
	size_t n = 0;

	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].kind == kind && !strcmp(recs[i].akind, "link_down") &&
		     (recs[i].rnode[0] != 0) == path;
	return n;
}
