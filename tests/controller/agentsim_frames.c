/*
 * agentsim_frames: the frames fq-agentsim's agents send (agentsim.h): the
 * report frames, each a pure function of (agent, seq) so a replay resends
 * the same; --jobs' job steps; --collision's probe windows and lanes.
 */
#include "tests/controller/agentsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

void sim_send_job_frame(struct agent *a, uint64_t k)
{
	struct sim *s = a->sim;
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__StepStart ss = FABRICIQ__STEP_START__INIT;
	Fabriciq__StepEnd se = FABRICIQ__STEP_END__INIT;
	Fabriciq__LaneReport l = FABRICIQ__LANE_REPORT__INIT;
	Fabriciq__Rank r0 = FABRICIQ__RANK__INIT, *ranks[1] = {&r0};
	uint64_t job = s->job_base + (k / 6) * (uint64_t)s->nagents + (uint64_t)a->idx;
	int64_t t = s->t0 + (int64_t)k * 1000000;
	int pos = (int)(k % 6);

	env.seq = k + 1;
	env.sent_ns = fq_realtime_ns();
	if (pos == 0) {
		ss.job_id = job;
		ss.uid = 1000;
		ss.node = a->node;
		r0.pid = 100;
		ss.ranks = ranks;
		ss.n_ranks = 1;
		ss.time_ns = t;
		ss.mode = "monitor";
		ss.node_count = 1;
		ss.task_count = 1;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_START;
		env.step_start = &ss;
	} else if (pos < 5 || s->jobs_open) {
		l.job_id = job;
		l.lane = (uint32_t)(pos - 1) % 4;
		l.local_nic = "rail0";
		l.interval_start_ns = t - 100000000;
		l.interval_end_ns = t;
		l.bytes = 1000000;
		l.chunks = 100;
		l.messages = 10;
		l.lane_kind = "tcp";
		l.is_send = true;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
		env.lane = &l;
	} else {
		se.job_id = job;
		se.node = a->node;
		se.time_ns = t + 1000000;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_END;
		env.step_end = &se;
	}
	sim_send_env(a, &env);
}

/* The frame of (agent, seq): see the header. */
void sim_send_seq(struct agent *a, uint64_t seq)
{
	struct sim *s = a->sim;
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	char peer[256], nic[64], rnic[64];
	int cycle = s->probes + s->lanes + 1;
	int64_t t = s->t0 + (int64_t)seq * 1000000;
	int pos;

	env.seq = seq;
	env.sent_ns = fq_realtime_ns();
	sim_name_of(s, (a->idx + 1) % s->nagents, peer, sizeof(peer));
	snprintf(nic, sizeof(nic), "%srail%d", s->evil ? sim_evil_str : "", (int)(seq % 2));
	snprintf(rnic, sizeof(rnic), "%srail%d", s->evil ? sim_evil_str : "", (int)(seq % 2));
	if (s->all_kinds && seq < 7) {
		Fabriciq__StepStart ss = FABRICIQ__STEP_START__INIT;
		Fabriciq__StepEnd se = FABRICIQ__STEP_END__INIT;
		Fabriciq__LinkEvent le = FABRICIQ__LINK_EVENT__INIT;
		Fabriciq__FailoverEvent fe = FABRICIQ__FAILOVER_EVENT__INIT;
		Fabriciq__Rank r0 = FABRICIQ__RANK__INIT, r1 = FABRICIQ__RANK__INIT, *ranks[2] = {&r0, &r1};
		Fabriciq__ProfilerReport pr = FABRICIQ__PROFILER_REPORT__INIT;
		Fabriciq__ProfilerWindow pw[3] = {FABRICIQ__PROFILER_WINDOW__INIT,
						  FABRICIQ__PROFILER_WINDOW__INIT,
						  FABRICIQ__PROFILER_WINDOW__INIT},
					 *pwp[3] = {&pw[0], &pw[1], &pw[2]};
		Fabriciq__ProfilerOp po[2] = {FABRICIQ__PROFILER_OP__INIT, FABRICIQ__PROFILER_OP__INIT},
				     *pop[2] = {&po[0], &po[1]};
		switch (seq) {
		case 1:
			ss.job_id = 1000 + (uint64_t)a->idx;
			ss.step_id = 0;
			ss.uid = 1000;
			ss.node = a->node;
			r0.global_rank = 0;
			r1.global_rank = 1;
			r1.local_rank = 1;
			r0.pid = 100;
			r1.pid = 101;
			ss.ranks = ranks;
			ss.n_ranks = 2;
			ss.time_ns = t;
			ss.mode = "control";
			ss.net_class = s->evil ? (char *)sim_evil_str : "latency";
			ss.node_count = 1;
			ss.task_count = 2;
			env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_START;
			env.step_start = &ss;
			break;
		case 2:
		case 3:
			le.local_nic = nic;
			le.remote_node = peer;
			le.remote_nic = rnic;
			le.state =
			    seq == 2 ? FABRICIQ__LINK_EVENT__STATE__DOWN : FABRICIQ__LINK_EVENT__STATE__UP;
			le.time_ns = t;
			le.detected_ns = t + 1000;
			le.detector = s->evil ? (char *)sim_evil_str : "probe";
			env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LINK;
			env.link = &le;
			break;
		case 4:
			fe.job_id = 1000 + (uint64_t)a->idx;
			fe.from_lane = 0;
			fe.to_lane = 1;
			fe.local_nic = nic;
			fe.remote_nic = rnic;
			fe.cause = s->evil ? (char *)sim_evil_str : "path-down";
			fe.time_ns = t;
			fe.detect_ns = 5000;
			fe.bytes_resent = 4096;
			env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER;
			env.failover = &fe;
			break;
		case 5: /* rank 1's profiler: 3 windows (two QPs, a peer), 2 AllReduces of 4 ranks */
			pr.job_id = 1000 + (uint64_t)a->idx;
			pr.rank = 1;
			pr.comm_hash = 0xfeedfacecafe;
			pr.nranks = 4;
			pr.interval_start_ns = t - 1000000000;
			pr.interval_end_ns = t;
			pr.synchronised = true;
			for (int k = 0; k < 3; k++) {
				pw[k].kind = k < 2 ? "net_ib" : "step_send";
				pw[k].device = k < 2 ? 0 : -1;
				pw[k].id = k < 2 ? 0x100 + k : 2;
				pw[k].count = 10;
				pw[k].bytes = 10 << 20;
				pw[k].mean_ns = 1000 * (k + 1); /* QP 0x101 the slower */
				pw[k].max_ns = 5000 * (k + 1);
			}
			for (int k = 0; k < 2; k++) {
				po[k].func = s->evil && k == 0 ? (char *)sim_evil_str : "AllReduce";
				po[k].algo = "RING";
				po[k].proto = "SIMPLE";
				po[k].bytes = 1 << 20;
				po[k].start_ns = t - 500000000 + k * 1000000;
				po[k].end_ns = po[k].start_ns + 1000000; /* 1 MiB in 1 ms: 1.048576 GB/s */
				po[k].gbps = 1.048576;
				po[k].synchronised = true;
				po[k].seq = (uint64_t)k;
				po[k].peer = -1;
			}
			pr.windows = pwp;
			pr.n_windows = 3;
			pr.ops = pop;
			pr.n_ops = 2;
			env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PROFILER;
			env.profiler = &pr;
			break;
		default:
			se.job_id = 1000 + (uint64_t)a->idx;
			se.node = a->node;
			se.time_ns = t + 1000000000;
			env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_END;
			env.step_end = &se;
			break;
		}
		sim_send_env(a, &env);
		a->sent++;
		return;
	}
	pos = (int)(seq % (uint64_t)cycle);
	if (pos < s->probes) {
		Fabriciq__ProbeReport p = FABRICIQ__PROBE_REPORT__INIT;
		p.local_nic = nic;
		p.remote_node = peer;
		p.remote_nic = rnic;
		p.window_start_ns = t - 1000000000;
		p.window_end_ns = t;
		p.sent = 50;
		p.answered = 50;
		p.owd_fwd_min_ns = 9000;
		p.owd_fwd_p50_ns = 10000;
		p.owd_fwd_p99_ns = 12000;
		p.owd_fwd_max_ns = 15000;
		p.owd_rev_min_ns = 9000;
		p.owd_rev_p50_ns = 10000;
		p.owd_rev_p99_ns = 12000;
		p.owd_rev_max_ns = 15000;
		p.rtt_p50_ns = 20000;
		p.timestamp_kind = FABRICIQ__TIMESTAMP_KIND__TIMESTAMP_SOFTWARE;
		p.path_up = true;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PROBE;
		env.probe = &p;
		sim_send_env(a, &env);
	} else if (pos < s->probes + s->lanes) {
		Fabriciq__LaneReport l = FABRICIQ__LANE_REPORT__INIT;
		l.job_id = 1000 + (uint64_t)a->idx;
		l.src_rank = 0;
		l.dst_rank = 1;
		l.lane = (uint32_t)(seq % 4);
		l.local_nic = nic;
		l.remote_node = peer;
		l.remote_nic = rnic;
		l.interval_start_ns = t - 100000000;
		l.interval_end_ns = t;
		l.bytes = 1000000 + seq;
		l.chunks = 100;
		l.messages = 10;
		l.owd_min_ns = 8000;
		l.owd_p50_ns = 11000;
		l.owd_p99_ns = 14000;
		l.owd_max_ns = 20000;
		l.tcp_rtt_us = 30;
		l.synchronised = true;
		l.lane_kind = s->evil ? (char *)sim_evil_str : "tcp";
		l.is_send = seq % 2;
		if (l.is_send) { /* a paced sender: 10 Mbit/s, capped 40 ms of the 100, the controller's */
			l.pacing_rate = 1250000;
			l.throttled_ns = 40000000;
			l.assigned_rate = 1250000;
			l.assigned_ns = 40000000;
		}
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
		env.lane = &l;
		sim_send_env(a, &env);
	} else {
		Fabriciq__ClockReport c = FABRICIQ__CLOCK_REPORT__INIT;
		Fabriciq__ClockEstimate e[2] = {FABRICIQ__CLOCK_ESTIMATE__INIT,
						FABRICIQ__CLOCK_ESTIMATE__INIT};
		Fabriciq__ClockEstimate *ep[2] = {&e[0], &e[1]};
		char prev[256];
		int nb[2] = {(a->idx + 1) % s->nagents, (a->idx + s->nagents - 1) % s->nagents};
		sim_name_of(s, nb[1], prev, sizeof(prev));
		for (int k = 0; k < 2; k++) {
			e[k].peer_node = k ? prev : peer;
			/* peer's clock minus ours */
			e[k].offset_ns = (int64_t)(nb[k] - a->idx) * 1000;
			e[k].error_bound_ns = 200;
			e[k].samples = 40;
			e[k].window_start_ns = t - 4000000000;
			e[k].window_end_ns = t;
		}
		c.estimates = ep;
		c.n_estimates = s->nagents > 1 ? 2 : 0;
		c.applied_offset_ns = a->last_offset;
		c.applied_error_ns = 300;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_CLOCK;
		env.clock = &c;
		sim_send_env(a, &env);
	}
	a->sent++;
}

/* ---- --collision ---------------------------------------------------------- */

/* The lanes of the scenario: job (base + job), sender agent, ranks, lane. */
struct coll_lane {
	int job, src_agent;
	uint32_t src_rank, dst_rank, lane;
};

static const struct coll_lane coll_lanes[] = {{1, 0, 0, 1, 0}, {2, 1, 0, 2, 0}, {2, 2, 1, 2, 0}};

static size_t coll_nlanes(const struct sim *s)
{
	return strcmp(s->collision, "tie") ? 3 : 2;
}

/* --collision rates: the sending side of agent a's lanes (see
 * fq-agentsim.c's header): throughput and the socket's RTTs. */
static void sim_rates_lanes(struct agent *a, const char *dnode, int64_t t)
{
	struct sim *s = a->sim;

	for (size_t i = 0; i < coll_nlanes(s); i++) {
		const struct coll_lane *cl = &coll_lanes[i];
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		Fabriciq__LaneReport l = FABRICIQ__LANE_REPORT__INIT;
		bool latency = cl->job == 1;

		if (cl->src_agent != a->idx ||
		    (latency && s->lanes_for > 0 && t - s->t0 > (int64_t)(s->lanes_for * 1e9)))
			continue;
		l.job_id = s->job_base + (uint64_t)cl->job;
		l.src_rank = cl->src_rank;
		l.dst_rank = cl->dst_rank;
		l.lane = cl->lane;
		l.local_nic = "rail0";
		l.remote_node = (char *)dnode;
		l.remote_nic = "rail0";
		l.interval_end_ns = t;
		l.interval_start_ns = t - 100000000;
		l.bytes = latency ? 500000 : 1000000; /* 5 and 10 MB/s */
		l.chunks = 10;
		l.messages = 10;
		l.tcp_min_rtt_us = 200;
		l.tcp_rtt_us = latency ? 300 : 10200;
		l.synchronised = true;
		l.lane_kind = "tcp";
		l.is_send = true;
		env.seq = a->next_seq++;
		env.sent_ns = t;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
		env.lane = &l;
		sim_send_env(a, &env);
		a->sent++;
	}
}

/* One collision tick of agent a: its StepStarts (first tick), probe
 * windows of its path to D/rail0 (senders), the receiving side of every
 * lane (D). */
void sim_coll_tick(struct agent *a)
{
	struct sim *s = a->sim;
	int64_t t = fq_realtime_ns();
	char dnode[256], snode[256];
	const int d = 3;
	const bool cold = !strcmp(s->collision, "control"), rates = !strcmp(s->collision, "rates");

	sim_name_of(s, d, dnode, sizeof(dnode));
	if (a->next_seq == a->first_seq) {
		for (int job = 1; job <= 2; job++) {
			Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
			Fabriciq__StepStart ss = FABRICIQ__STEP_START__INIT;
			Fabriciq__Rank r[3] = {FABRICIQ__RANK__INIT, FABRICIQ__RANK__INIT,
					       FABRICIQ__RANK__INIT};
			Fabriciq__Rank *rp[3] = {&r[0], &r[1], &r[2]};
			uint32_t nranks = 0, tasks = 1;

			for (size_t i = 0; i < coll_nlanes(s); i++) {
				const struct coll_lane *l = &coll_lanes[i];
				if (l->job != job)
					continue;
				tasks = l->dst_rank + 1;
				if (a->idx == d) { /* one receiving rank per job */
					r[0].global_rank = l->dst_rank;
					r[0].pid = (uint32_t)(1000 * job + a->idx);
					nranks = 1;
				} else if (l->src_agent == a->idx) {
					r[nranks].global_rank = l->src_rank;
					r[nranks].pid = (uint32_t)(1000 * job + a->idx);
					nranks++;
				}
			}
			if (!nranks)
				continue;
			ss.job_id = s->job_base + (uint64_t)job;
			ss.uid = 1000;
			ss.node = a->node;
			ss.ranks = rp;
			ss.n_ranks = nranks;
			ss.time_ns = t - 1000000000;
			ss.mode = "control";
			ss.node_count = tasks;
			ss.task_count = tasks;
			if (rates) { /* class=latency,prio=0 and class=bulk,weight=4 */
				ss.net_class = job == 1 ? "latency" : "bulk";
				ss.net_class_weight = job == 1 ? 0 : 4;
			}
			env.seq = a->next_seq++;
			env.sent_ns = t;
			env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_START;
			env.step_start = &ss;
			sim_send_env(a, &env);
			a->sent++;
		}
	}
	if (rates) {
		sim_rates_lanes(a, dnode, t);
		return;
	}
	if (a->idx != d) {
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		Fabriciq__ProbeReport p = FABRICIQ__PROBE_REPORT__INIT;

		p.local_nic = "rail0";
		p.remote_node = dnode;
		p.remote_nic = "rail0";
		p.window_start_ns = t - 1000000000;
		p.window_end_ns = t;
		p.sent = p.answered = 50;
		/* control: a slower path (100 us), so that its lanes' p99 is above
		 * the delay floor yet within collision_factor of the probe delay */
		p.owd_fwd_min_ns = p.owd_rev_min_ns = cold ? 90000 : 9000;
		p.owd_fwd_p50_ns = p.owd_rev_p50_ns = cold ? 100000 : 10000;
		p.owd_fwd_p99_ns = p.owd_rev_p99_ns = cold ? 120000 : 12000;
		p.owd_fwd_max_ns = p.owd_rev_max_ns = cold ? 150000 : 15000;
		p.rtt_p50_ns = 20000;
		p.timestamp_kind = FABRICIQ__TIMESTAMP_KIND__TIMESTAMP_SOFTWARE;
		p.path_up = true;
		env.seq = a->next_seq++;
		env.sent_ns = t;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PROBE;
		env.probe = &p;
		sim_send_env(a, &env);
		a->sent++;
	}
	if (s->lanes_for > 0 && t - s->t0 > (int64_t)(s->lanes_for * 1e9))
		return;
	for (size_t i = 0; i < coll_nlanes(s); i++) {
		const struct coll_lane *cl = &coll_lanes[i];
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		Fabriciq__LaneReport l = FABRICIQ__LANE_REPORT__INIT;
		bool hot = strcmp(s->collision, "control") != 0, send = a->idx != d;

		if (send && (!s->both_ends || cl->src_agent != a->idx))
			continue;
		sim_name_of(s, cl->src_agent, snode, sizeof(snode));
		l.job_id = s->job_base + (uint64_t)cl->job;
		l.src_rank = cl->src_rank;
		l.dst_rank = cl->dst_rank;
		l.lane = cl->lane;
		l.local_nic = "rail0";
		l.remote_node = send ? dnode : snode;
		l.remote_nic = "rail0";
		/* --both-ends: the sender's timer fires 50 ms after the receiver's */
		l.interval_end_ns = s->both_ends && !send ? t - 50000000 : t;
		if (s->phases && !send) /* --phases: each receiving rank's timer its own phase */
			l.interval_end_ns -= (int64_t)(i == 0 ? 40 : i == 1 ? 80 : 0) * 1000000;
		l.interval_start_ns = l.interval_end_ns - 100000000;
		l.bytes = 50000000;
		l.chunks = 100;
		l.messages = 10;
		if (!send) { /* only the receiving side measures the one-way delay */
			l.owd_min_ns = hot ? 9000 : 95000;
			l.owd_p50_ns = hot ? 500000 : 150000;
			l.owd_p99_ns = hot ? 2000000 : 250000;
			l.owd_max_ns = hot ? 3000000 : 280000;
		}
		l.tcp_rtt_us = 30;
		l.synchronised = true;
		l.lane_kind = "tcp";
		l.is_send = send;
		env.seq = a->next_seq++;
		env.sent_ns = t;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
		env.lane = &l;
		sim_send_env(a, &env);
		a->sent++;
	}
}
