/*
 * agent_status: the agent's status file, its state as JSON (paths, NICs,
 * clock, steps, lanes, uplink, spool), written atomically each report
 * window (mode 0640: pids and uids of steps are in it) and printed by
 * `fabriciq-agent --status`.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "slurmd-agent/agent.h"

static struct json_object *owd_json(const struct fq_owd_stats *o)
{
	struct json_object *j;

	if (!o->n)
		return NULL;
	j = json_object_new_object();
	json_object_object_add(j, "min", json_object_new_int64(o->min));
	json_object_object_add(j, "p50", json_object_new_int64(o->p50));
	json_object_object_add(j, "p90", json_object_new_int64(o->p90));
	json_object_object_add(j, "p99", json_object_new_int64(o->p99));
	json_object_object_add(j, "max", json_object_new_int64(o->max));
	return j;
}

static struct json_object *path_json(const struct fq_path_report *r)
{
	struct json_object *o = json_object_new_object(), *c;

	json_object_object_add(o, "local_nic", json_object_new_string(r->local_nic));
	json_object_object_add(o, "peer_node", json_object_new_string(r->peer_node));
	json_object_object_add(o, "peer_nic", json_object_new_string(r->peer_nic));
	json_object_object_add(o, "peer_addr", json_object_new_string(r->peer_addr));
	json_object_object_add(o, "state", json_object_new_string(r->up ? "up" : "down"));
	json_object_object_add(o, "flaps_last_hour", json_object_new_int((int)r->flaps_last_hour));
	json_object_object_add(o, "flaps_total", json_object_new_uint64(r->flaps_total));
	json_object_object_add(o, "sent", json_object_new_uint64(r->sent));
	json_object_object_add(o, "answered", json_object_new_uint64(r->answered));
	json_object_object_add(o, "lost", json_object_new_uint64(r->lost));
	json_object_object_add(o, "pure_fwd", json_object_new_uint64(r->pure_fwd));
	json_object_object_add(o, "pure_rev", json_object_new_uint64(r->pure_rev));
	json_object_object_add(o, "owd_fwd_ns", owd_json(&r->fwd));
	json_object_object_add(o, "owd_rev_ns", owd_json(&r->rev));
	json_object_object_add(o, "rtt_ns", owd_json(&r->rtt));
	if (r->n_flows > 1) {
		struct json_object *fl = json_object_new_array();

		for (unsigned k = 0; k < r->n_flows; k++) {
			const struct fq_flow_report *f = &r->flows[k];
			struct json_object *j = json_object_new_object();

			json_object_object_add(j, "flow", json_object_new_uint64(k));
			json_object_object_add(j, "port", json_object_new_uint64(f->port));
			json_object_object_add(j, "established", json_object_new_boolean(f->established));
			json_object_object_add(j, "sent", json_object_new_uint64(f->sent));
			json_object_object_add(j, "answered", json_object_new_uint64(f->answered));
			json_object_object_add(j, "lost", json_object_new_uint64(f->lost));
			json_object_object_add(j, "owd_fwd_p50_ns",
					       json_object_new_int64(r->synchronised ? f->fwd.p50 : 0));
			json_object_object_add(j, "owd_rev_p50_ns",
					       json_object_new_int64(r->synchronised ? f->rev.p50 : 0));
			json_object_array_add(fl, j);
		}
		json_object_object_add(o, "flows", fl);
	}
	json_object_object_add(o, "synchronised", json_object_new_boolean(r->synchronised));
	if (r->synchronised) {
		c = json_object_new_object();
		json_object_object_add(c, "offset_ns", json_object_new_int64(r->est.offset_ns));
		json_object_object_add(c, "drift_ppb", json_object_new_double(r->est.drift_ppb));
		json_object_object_add(c, "bound_ns", json_object_new_int64(r->est.bound_ns));
		json_object_object_add(c, "residual_ns", json_object_new_int64(r->est.residual_ns));
		json_object_object_add(c, "buckets", json_object_new_int((int)r->est.buckets));
		json_object_object_add(c, "held", json_object_new_boolean(r->held));
		json_object_object_add(o, "clock", c);
	}
	return o;
}

/*
 * Probe overhead of one NIC, on the wire: per path and probe interval a
 * pair costs 2 requests + 2 responses + 1 follow-up, each a 64-byte UDP
 * payload in 126 bytes of Ethernet (IP, UDP, Ethernet header, FCS,
 * preamble and inter-frame gap), counted in both directions.
 */
static struct json_object *nic_json(const struct agent *a, const struct agent_nic *n)
{
	struct json_object *o = json_object_new_object();
	unsigned paths = 0;
	double bps;

	for (size_t i = 0; i < a->n_paths; i++)
		paths += strcmp(a->paths[i].local_nic, n->name) == 0;
	bps = (double)paths * 5 * 126 * 8 * 1e9 / (double)a->cfg.probe_interval;
	json_object_object_add(o, "name", json_object_new_string(n->name));
	json_object_object_add(o, "address", json_object_new_string(n->address));
	json_object_object_add(o, "rail", json_object_new_int((int)n->rail));
	json_object_object_add(o, "speed_mbps", json_object_new_uint64(n->speed_mbps));
	json_object_object_add(o, "paths", json_object_new_int((int)paths));
	json_object_object_add(o, "state", json_object_new_string(n->all_down ? "down" : "up"));
	json_object_object_add(o, "probe_bits_per_s", json_object_new_double(bps));
	if (n->speed_mbps)
		json_object_object_add(o, "probe_overhead_pct",
				       json_object_new_double(100.0 * bps / ((double)n->speed_mbps * 1e6)));
	return o;
}

/* root and the agent's group; not others (fabriciq-agent(8)) */
#define STATUS_MODE 0640

/* Write the status file atomically: readers never see half a file. */
void agent_write_status(struct agent *a)
{
	struct json_object *st = json_object_new_object(), *paths = json_object_new_array(), *clk, *nics;
	char tmp[4096];
	const char *text;
	FILE *f;
	int fd;

	json_object_object_add(st, "node", json_object_new_string(a->cfg.node));
	json_object_object_add(st, "agent_version", json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(st, "pid", json_object_new_int(getpid()));
	json_object_object_add(st, "scheduling", json_object_new_string(a->sched));
	json_object_object_add(st, "realtime_ns", json_object_new_int64(fq_realtime_ns()));
	json_object_object_add(st, "uptime_s",
			       json_object_new_double((double)(fq_now_ns() - a->started_raw) / 1e9));
	json_object_object_add(st, "probe_interval_ns",
			       json_object_new_int64((int64_t)a->cfg.probe_interval));
	for (size_t i = 0; i < a->n_paths; i++)
		json_object_array_add(paths, path_json(&a->paths[i]));
	json_object_object_add(st, "paths", paths);
	nics = json_object_new_array();
	for (unsigned i = 0; i < a->n_nics; i++)
		json_object_array_add(nics, nic_json(a, &a->nics[i]));
	json_object_object_add(st, "nics", nics);
	clk = json_object_new_object();
	json_object_object_add(clk, "source", json_object_new_string(a->time_source));
	json_object_object_add(clk, "reference", json_object_new_string(a->reference));
	json_object_object_add(clk, "published", json_object_new_boolean(a->timeline.published));
	if (a->timeline.published) {
		int64_t now = fq_now_ns();
		json_object_object_add(clk, "global_minus_local_ns",
				       json_object_new_int64(agent_global(a, now) - now));
		json_object_object_add(clk, "error_ns",
				       json_object_new_int64(a->timeline.pub.error_bound_ns));
		json_object_object_add(clk, "rate_ppb", json_object_new_int64(a->timeline.pub.drift_ppb));
		json_object_object_add(clk, "forward_steps", json_object_new_uint64(a->timeline.steps));
	}
	json_object_object_add(clk, "correction_epoch",
			       json_object_new_uint64(a->have_correction ? a->corr.epoch : 0));
	json_object_object_add(st, "global_time", clk);
	json_object_object_add(st, "counters", fq_prober_counters(a->prober));
	if (a->tracer)
		json_object_object_add(st, "traces", fq_tracer_status(a->tracer));
	if (a->lanetrace)
		json_object_object_add(st, "lane_traces", fq_lanetrace_status(a->lanetrace));
	json_object_object_add(st, "local_sockets", fq_local_counters(a->local));
	if (a->uplink) {
		json_object_object_add(st, "uplink", fq_uplink_counters(a->uplink));
		json_object_object_add(st, "spool", fq_spool_counters(a->spool));
	}
	agent_jobs_status(a, st);
	json_object_object_add(st, "events", json_object_get(a->events));
	text = json_object_to_json_string_ext(st, JSON_C_TO_STRING_PRETTY);
	snprintf(tmp, sizeof(tmp), "%s.tmp", a->cfg.status_file);
	/* a fresh file, never one planted at tmp; not world-readable: it names
	 * other users' jobs, pids and uids */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, STATUS_MODE);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f && fd >= 0)
		close(fd);
	if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, a->cfg.status_file) < 0)
		fq_log_rl(FQ_LOG_ERROR, "cannot write status file %s: %s", a->cfg.status_file,
			  strerror(errno));
	json_object_put(st);
}

int agent_print_status(const char *path, int json)
{
	struct json_object *st = json_object_from_file(path), *paths, *node;

	if (!st) {
		fprintf(stderr, "fabriciq-agent: cannot read status file %s: %s (is the agent running?)\n",
			path, json_util_get_last_err());
		return 1;
	}
	if (json) {
		puts(json_object_to_json_string_ext(st, JSON_C_TO_STRING_PRETTY));
		json_object_put(st);
		return 0;
	}
	json_object_object_get_ex(st, "node", &node);
	json_object_object_get_ex(st, "paths", &paths);
	printf("node %s\n", json_object_get_string(node));
	printf("%-8s %-14s %-5s %6s %5s %5s %12s %10s %10s %10s\n", "NIC", "PEER", "STATE", "FLAPS", "SENT",
	       "LOST", "OFFSET_NS", "BOUND_NS", "OWD_P50", "OWD_P99");
	for (size_t i = 0; paths && i < json_object_array_length(paths); i++) {
		struct json_object *p = json_object_array_get_idx(paths, i), *v, *c, *owd;
		char peer[128];
		long long off = 0, bound = 0, p50 = -1, p99 = -1;

		snprintf(peer, sizeof(peer), "%s:%s",
			 json_object_get_string(json_object_object_get(p, "peer_node")),
			 json_object_get_string(json_object_object_get(p, "peer_nic")));
		if (json_object_object_get_ex(p, "clock", &c)) {
			off = json_object_get_int64(json_object_object_get(c, "offset_ns"));
			bound = json_object_get_int64(json_object_object_get(c, "bound_ns"));
		}
		if (json_object_object_get_ex(p, "owd_fwd_ns", &owd) && owd) {
			p50 = json_object_get_int64(json_object_object_get(owd, "p50"));
			p99 = json_object_get_int64(json_object_object_get(owd, "p99"));
		}
		json_object_object_get_ex(p, "state", &v);
		printf("%-8s %-14s %-5s %6d %5d %5d %12lld %10lld %10lld %10lld\n",
		       json_object_get_string(json_object_object_get(p, "local_nic")), peer,
		       json_object_get_string(v),
		       json_object_get_int(json_object_object_get(p, "flaps_last_hour")),
		       json_object_get_int(json_object_object_get(p, "sent")),
		       json_object_get_int(json_object_object_get(p, "lost")), off, bound, p50, p99);
	}
	json_object_put(st);
	return 0;
}
