/*
 * agent_jobs: the agent's side of the step socket (SPANK plugin) and the
 * telemetry socket (NCCL plugin). A lane report is stored only under the
 * step the kernel says its sender belongs to.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "slurmd-agent/agent.h"
#include "slurmd-agent/proftag.h"

/* A step request's answer, owed until its frame is on disk. */
struct owed {
	struct agent *a;
	uint64_t ticket;
	const char *msg;
};

static void answer_durable(void *arg, int rc)
{
	struct owed *o = arg;

	fq_local_answer(o->a->local, o->ticket, rc,
			rc < 0 ? "the agent could not write the step to disk" : o->msg);
	free(o);
}

/* The answer to a step request whose frame got seq: now (0: no controller,
 * or the frame could not be spooled, counted; or on disk already), else
 * FQ_LOCAL_LATER, once the frame is durable (a node crash after the
 * answer must not lose the step: doc/design.md). */
static int answer_when_durable(struct agent *a, uint64_t seq, uint64_t ticket, const char *msg, char *out,
			       size_t outlen)
{
	struct owed *o = seq ? malloc(sizeof(*o)) : NULL;
	int rc = -ENOMEM;

	snprintf(out, outlen, "%s", msg);
	if (!seq)
		return 0;
	if (o) {
		*o = (struct owed){.a = a, .ticket = ticket, .msg = msg};
		rc = fq_spool_when_durable(a->spool, seq, answer_durable, o);
	}
	if (rc == 0)
		return FQ_LOCAL_LATER;
	free(o);
	if (rc < 0)
		snprintf(out, outlen, "the agent is out of memory");
	return rc < 0 ? rc : 0;
}

static int step_start(void *arg, const Fabriciq__StepStart *m, uint64_t ticket, char *msg, size_t msglen)
{
	struct agent *a = arg;
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__StepStart fwd;
	int rc = fq_steps_register(a->steps, m, fq_now_ns(), msg, msglen);

	if (rc < 0)
		return rc;
	agent_save_steps(a);
	fq_info("step %llu.%u registered: %zu rank(s) on this node, uid %u, mode %s",
		(unsigned long long)m->job_id, m->step_id, m->n_ranks, m->uid,
		m->mode && *m->mode ? m->mode : "monitor");
	fwd = *m;
	fwd.node = a->cfg.node; /* this node's name, whatever the client said */
	if (!fwd.time_ns)
		fwd.time_ns = agent_global(a, fq_now_ns());
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_START;
	env.step_start = &fwd;
	return answer_when_durable(a, agent_send(a, &env), ticket, "registered", msg, msglen);
}

static int step_end(void *arg, const Fabriciq__StepEnd *m, uint64_t ticket, char *msg, size_t msglen)
{
	struct agent *a = arg;
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__StepEnd fwd;

	if (fq_steps_unregister(a->steps, m->job_id, m->step_id) < 0) {
		snprintf(msg, msglen, "step %llu.%u is not registered", (unsigned long long)m->job_id,
			 m->step_id);
		return -ENOENT;
	}
	agent_save_steps(a);
	fq_info("step %llu.%u unregistered (exit status %d)", (unsigned long long)m->job_id, m->step_id,
		m->exit_status);
	fwd = *m;
	fwd.node = a->cfg.node;
	if (!fwd.time_ns)
		fwd.time_ns = agent_global(a, fq_now_ns());
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_END;
	env.step_end = &fwd;
	return answer_when_durable(a, agent_send(a, &env), ticket, "unregistered", msg, msglen);
}

/* "198.19.0.3:40000" -> "198.19.0.3" */
static void ip_of(const char *addr, char *out, size_t len)
{
	const char *colon = addr ? strrchr(addr, ':') : NULL;
	size_t n = colon ? (size_t)(colon - addr) : (addr ? strlen(addr) : 0);

	if (n >= len)
		n = len - 1;
	memcpy(out, addr ? addr : "", n);
	out[n] = '\0';
}

/* Replace a string field of an unpacked message (protobuf-c frees every
 * string but its shared empty default). */
static void replace_string(char **field, char *value)
{
	if (*field && *field != protobuf_c_empty_string)
		free(*field);
	*field = value;
}

/* A lane's one-way delays as a process reports them: kept when each is
 * within a minute either way (a clock error makes a small one negative),
 * else dropped, all of them: a delay across two unrelated clocks is no
 * delay. Returns whether they were dropped. */
#define LANE_DELAY_LIMIT_NS (60 * INT64_C(1000000000))
static bool drop_implausible_delays(Fabriciq__LaneReport *r)
{
	int64_t v[] = {r->owd_min_ns, r->owd_p50_ns, r->owd_p99_ns, r->owd_max_ns};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] > LANE_DELAY_LIMIT_NS || v[i] < -LANE_DELAY_LIMIT_NS) {
			r->owd_min_ns = r->owd_p50_ns = r->owd_p99_ns = r->owd_max_ns = 0;
			r->synchronised = false;
			return true;
		}
	return false;
}

/* This node's NIC named name, or NULL. */
static const struct agent_nic *nic_named(const struct agent *a, const char *name)
{
	for (unsigned i = 0; name && i < a->n_nics; i++)
		if (strcmp(a->nics[i].name, name) == 0)
			return &a->nics[i];
	return NULL;
}

/* Set a string field to a copy of value (left as it was on -ENOMEM). */
static void set_string(char **field, const char *value)
{
	char *v = strdup(value);

	if (v)
		replace_string(field, v);
}

/* Whether the kernel says the sender holds the lane of r (placed on its
 * local NIC): its TCP connection (sockcheck.h: a TCP lane's, an IB lane's
 * side channel) and, on an IB lane, its RC queue pair on that NIC's RDMA
 * port (qpcheck.h). *what: what was found wanting, for the log. */
static enum fq_lane_hold lane_hold(struct agent *a, const Fabriciq__LaneReport *r, uid_t uid,
				   const char **what)
{
	int64_t now = fq_clock_ns(CLOCK_MONOTONIC);
	struct fq_qp_lane qp = {"/sys", r->local_nic, r->local_qpn, r->remote_qpn};
	enum fq_lane_hold hold =
	    fq_sockcheck_lane(&a->sockcheck, r->local_address, r->remote_address, uid, now);

	*what = "connection";
	if (hold != FQ_LANE_HELD || strcmp(r->lane_kind, "ib"))
		return hold;
	*what = "queue pair";
	return fq_qpcheck_lane(&a->sockcheck, &qp, uid, now, &a->qpcheck);
}

/* A lane report's places, as the agent knows them: the local NIC by the
 * lane's local address (an accepted lane may not know which NIC it came in
 * on), else the NIC the process named if this node has it, else none; the
 * far node and NIC by the remote address among the paths the agent probes,
 * else none. Nothing else the process says about where its lane runs is
 * kept: these places steer the controller's collision advice, which moves
 * other jobs. A lane the kernel does not show its sender holding
 * (lane_hold: a TCP lane's connection; an IB lane's side channel and its
 * queue pair on the local NIC's RDMA port), or the kernel cannot be asked
 * of, is marked unverified: the job's own report keeps it, the
 * controller's rules take none of it. A lane whose only report came after
 * its socket closed (one that died young) is unverified too: nothing can
 * tell it from a claim of a connection that never was. */
static void place_lane(struct agent *a, Fabriciq__LaneReport *r, uid_t uid)
{
	const char *node, *nic, *what;
	enum fq_lane_hold hold;
	char ip[64];

	ip_of(r->local_address, ip, sizeof(ip));
	for (unsigned i = 0; *ip && i < a->n_nics; i++)
		if (strcmp(a->nics[i].address, ip) == 0)
			set_string(&r->local_nic, a->nics[i].name);
	if (!nic_named(a, r->local_nic))
		set_string(&r->local_nic, "");
	ip_of(r->remote_address, ip, sizeof(ip));
	agent_lookup_remote(a, ip, &node, &nic);
	if (!*node)
		a->lanes_remote_unknown++;
	set_string(&r->remote_node, node);
	set_string(&r->remote_nic, nic);

	hold = lane_hold(a, r, uid, &what);
	r->unverified = hold != FQ_LANE_HELD;
	if (r->unverified) {
		a->lanes_unverified_as[hold]++;
		fq_log_rl(FQ_LOG_INFO, "job %llu.%u rank %u: %s lane %s -> %s unverified (%s %s): not placed",
			  (unsigned long long)r->job_id, r->step_id, r->is_send ? r->src_rank : r->dst_rank,
			  *r->lane_kind ? r->lane_kind : "tcp", r->local_address, r->remote_address,
			  fq_lane_hold_name(hold), what);
	}
}

/* A placed lane report to lanetrace: the sending end's, TCP, verified,
 * with its NIC pair known (lanetrace.h). */
static void trace_lane(struct agent *a, const Fabriciq__LaneReport *r)
{
	struct fq_lane_id id = {
	    .job_id = r->job_id,
	    .step_id = r->step_id,
	    .src_rank = r->src_rank,
	    .dst_rank = r->dst_rank,
	    .lane = r->lane,
	};

	if (!a->lanetrace || !r->is_send || r->unverified || (*r->lane_kind && strcmp(r->lane_kind, "tcp")) ||
	    !*r->local_nic || !*r->remote_node)
		return;
	snprintf(id.local_nic, sizeof(id.local_nic), "%s", r->local_nic);
	snprintf(id.remote_node, sizeof(id.remote_node), "%s", r->remote_node);
	snprintf(id.remote_nic, sizeof(id.remote_nic), "%s", r->remote_nic);
	snprintf(id.local_address, sizeof(id.local_address), "%s", r->local_address);
	snprintf(id.remote_address, sizeof(id.remote_address), "%s", r->remote_address);
	fq_lanetrace_lane(a->lanetrace, &id, fq_now_ns());
}

/* Whether st's processes may send one more frame of env's kind now (one
 * bucket for the bulk, lane and profiler reports, one for failover
 * events); counted if not. */
static bool within_rate(struct agent *a, struct fq_step *st, const Fabriciq__Envelope *env)
{
	bool lane = env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE ||
		    env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROFILER;

	if (fq_rate_take(lane ? &st->lane_rate : &st->event_rate, lane ? &a->lane_limit : &a->event_limit,
			 fq_now_ns()))
		return true;
	if (lane)
		st->limited_lanes++;
	else
		st->limited_events++;
	return false;
}

static enum fq_local_verdict telemetry(void *arg, const struct ucred *cred, Fabriciq__Envelope *env)
{
	struct agent *a = arg;
	const struct fq_step_rank *rank = NULL;
	struct fq_step *st = fq_steps_find_sender(a->steps, cred->pid, cred->uid, fq_now_ns(), &rank);

	if (!st || cred->uid != st->uid)
		return FQ_LOCAL_UNREGISTERED;
	if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE) {
		Fabriciq__LaneReport *r = env->lane;

		if (r->job_id && (r->job_id != st->job_id || r->step_id != st->step_id))
			return FQ_LOCAL_WRONG_JOB;
		if (!within_rate(a, st, env))
			return FQ_LOCAL_RATE_LIMITED;
		r->job_id = st->job_id;
		r->step_id = st->step_id;
		a->lane_delays_dropped += drop_implausible_delays(r);
		if (r->is_send)
			r->src_rank = rank->global_rank;
		else
			r->dst_rank = rank->global_rank;
		place_lane(a, r, cred->uid);
		trace_lane(a, r);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROFILER) {
		unsigned removed = 0;

		if (env->profiler->job_id &&
		    (env->profiler->job_id != st->job_id || env->profiler->step_id != st->step_id))
			return FQ_LOCAL_WRONG_JOB;
		if (!within_rate(a, st, env))
			return FQ_LOCAL_RATE_LIMITED;
		fq_proftag(env->profiler, st->job_id, st->step_id, rank->global_rank, &removed);
		a->profiler_removed += removed;
		a->profiler_forwarded++;
	} else {
		Fabriciq__FailoverEvent *f = env->failover;

		if (f->job_id && (f->job_id != st->job_id || f->step_id != st->step_id))
			return FQ_LOCAL_WRONG_JOB;
		if (!within_rate(a, st, env))
			return FQ_LOCAL_RATE_LIMITED;
		f->job_id = st->job_id;
		f->step_id = st->step_id;
		if (f->from_receiver)
			f->dst_rank = rank->global_rank;
		else
			f->src_rank = rank->global_rank;
	}
	st->lane_reports++;
	a->lanes_forwarded++;
	env->seq = 0;
	agent_send(a, env);
	return FQ_LOCAL_ACCEPTED;
}

/* A step ended this long ago gets its StepEnd within it (slurmstepd sends
 * it as its tasks exit); after it, a step with no live task is reclaimed. */
#define STEP_REAP_GRACE_NS (10 * INT64_C(1000000000))

void agent_reap_steps(struct agent *a)
{
	struct fq_step_key gone[16];
	size_t n =
	    fq_steps_reap(a->steps, fq_now_ns(), STEP_REAP_GRACE_NS, fq_alive_from_proc, NULL, gone, 16);

	for (size_t i = 0; i < n; i++)
		fq_warn("step %llu.%u reclaimed: none of its tasks alive for %lld s, and no StepEnd came",
			(unsigned long long)gone[i].job_id, gone[i].step_id,
			(long long)(STEP_REAP_GRACE_NS / 1000000000));
	a->steps_reclaimed += n;
	if (n)
		agent_save_steps(a);
}

void agent_save_steps(struct agent *a)
{
	int rc = fq_steps_save(a->steps, a->steps_path);

	if (rc < 0)
		fq_log_rl(FQ_LOG_ERROR, "cannot save the step registry to %s: %s", a->steps_path,
			  strerror(-rc));
}

void agent_jobs_status(const struct agent *a, json_object *st)
{
	json_object_object_add(st, "steps", fq_steps_json(a->steps));
	json_object_object_add(st, "senders", fq_steps_counters(a->steps));
	json_object_object_add(st, "lanes_forwarded", json_object_new_uint64(a->lanes_forwarded));
	json_object_object_add(st, "lane_delays_dropped", json_object_new_uint64(a->lane_delays_dropped));
	json_object_object_add(st, "profiler_forwarded", json_object_new_uint64(a->profiler_forwarded));
	json_object_object_add(st, "profiler_removed", json_object_new_uint64(a->profiler_removed));
	json_object_object_add(st, "lanes_remote_unknown", json_object_new_uint64(a->lanes_remote_unknown));
	json_object_object_add(st, "lanes_unverified",
			       json_object_new_uint64(a->lanes_unverified_as[FQ_LANE_CLOSED] +
						      a->lanes_unverified_as[FQ_LANE_OTHERS] +
						      a->lanes_unverified_as[FQ_LANE_UNCHECKED]));
	json_object_object_add(st, "lanes_unverified_closed",
			       json_object_new_uint64(a->lanes_unverified_as[FQ_LANE_CLOSED]));
	json_object_object_add(st, "lanes_unverified_others",
			       json_object_new_uint64(a->lanes_unverified_as[FQ_LANE_OTHERS]));
	json_object_object_add(st, "lanes_unverified_unchecked",
			       json_object_new_uint64(a->lanes_unverified_as[FQ_LANE_UNCHECKED]));
	json_object_object_add(st, "lane_checks_asked", json_object_new_uint64(a->sockcheck.asked));
	json_object_object_add(st, "lane_checks_evicted", json_object_new_uint64(a->sockcheck.evicted));
	json_object_object_add(st, "lane_qp_checks_asked", json_object_new_uint64(a->qpcheck.asked));
	json_object_object_add(st, "lane_qp_dumps_cut", json_object_new_uint64(a->qpcheck.cut));
	json_object_object_add(st, "steps_reclaimed", json_object_new_uint64(a->steps_reclaimed));
}

/* A telemetry connection is for a task of a registered step (or its
 * descendant) of the step's uid: found once at connect (the read budget of
 * fq_steps_find_sender applies), remembered for its frames. */
static bool telemetry_sender(void *arg, const struct ucred *cred)
{
	struct agent *a = arg;
	const struct fq_step_rank *rank = NULL;
	struct fq_step *st = fq_steps_find_sender(a->steps, cred->pid, cred->uid, fq_now_ns(), &rank);

	return st && cred->uid == st->uid;
}

const struct fq_local_ops agent_local_ops = {
    .step_start = step_start,
    .step_end = step_end,
    .telemetry = telemetry,
    .telemetry_sender = telemetry_sender,
};
