/*
 * fq-agentsim: N simulated fabriciq agents in one process (one libevent
 * loop), speaking the real protocol to a controller: Challenge -> Auth (a
 * real munge credential carrying the nonce) -> AgentHello -> report frames
 * with consecutive seqs, counting the controller's Acks, ClockCorrections
 * and PeerAssignments.
 *
 * A frame's content is a pure function of (agent, seq), so a replay
 * (--replay) resends exactly the frames already sent. Simulated agent i has
 * the true clock offset i * 1000 ns; its ClockReports carry estimates to
 * its ring neighbours, so the controller's corrections can be checked.
 *
 * Prints one summary line: agents=... sent=... acked=... and exits 0 when
 * every agent's frames were all acknowledged (or, with --auth other than
 * good, when the controller refused as expected). --auth nohello
 * authenticates, then sends nothing: the controller must time it out.
 *
 * --collision MODE (4 agents A B C D = prefix00000..3): two jobs whose
 * lanes all end on D's rail0. Job base+1 has one lane A->D, job base+2
 * two lanes B->D and C->D ("outlier"; "tie": job base+2 only B->D). Each
 * tick the source nodes report probe windows of their path to D/rail0
 * and D reports the receiving side of every lane over the last 100 ms:
 * probe p50 10 us and lane p99 2 ms ("outlier", "tie": far above it), or
 * probe p50 100 us and lane p99 250 us ("control": above the detector's
 * delay floor, within collision_factor 3 of the probe delay). --both-ends: the senders also report
 * their side of each lane (no delay, as the plugin's sending side does),
 * its interval ending 50 ms after D's. --lanes-for S: D stops reporting
 * lanes after S seconds (the jobs are over). --phases: D's lanes end 40
 * (A->D), 80 (B->D) and 0 ms (C->D) before the tick (each receiving rank's
 * timer has its phase; job base+2's two lanes 80 ms apart). Every Advice frame received
 * is printed as a JSON line {"advice":{"node":...,"job":...,"t_ms":...}}
 * (t_ms: since the simulator started).
 *
 * --collision rates: the same lanes, of two network classes (the
 * controller's rates, controller/rates.h): job base+1 "latency" (prio 0),
 * job base+2 "bulk" (weight 4), in their StepStarts; only the senders
 * report their lanes (no probes, no receiving side): A->D 5 MB/s with no
 * queue, B->D and C->D 10 MB/s each with a 10 ms queue (srtt 10.2 ms over
 * a 200 us min_rtt). --lanes-for S: the latency job's lane stops after S
 * seconds, the bulk job's go on.
 *
 * --jobs N: each agent runs N one-node job steps, one after another, as
 * fast as the acks come back (the burst machinery): per job StepStart, 4
 * sender-side lane reports (lanes 0..3) and StepEnd, 6 frames; job ids
 * job-base + j * agents + agent. --jobs-open: the jobs never end (a fifth
 * lane report instead of the StepEnd).
 */
#include "tests/controller/agentsim.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/munge_cred.h"

static bool all_acked(const struct sim *s);

const char *const sim_evil_str = "o'q\"b\\s;--%_\t\n$1{,}é";

void sim_name_of(const struct sim *s, int idx, char *out, size_t len)
{
	snprintf(out, len, "%s%s%05d", s->prefix, s->evil ? sim_evil_str : "", idx);
}

void sim_send_env(struct agent *a, Fabriciq__Envelope *env)
{
	uint8_t *buf;
	size_t len;

	env->version = FQ_PROTOCOL_VERSION;
	if (fq_frame_encode(env, FQ_FRAME_MAX_DEFAULT, &buf, &len) == 0) {
		if (a->pre)
			evbuffer_add(a->pre, buf, len);
		else
			bufferevent_write(a->bev, buf, len);
		free(buf);
	}
}

/* --jobs: frame k (from 0) of agent a's job steps (see the header). */
static void print_advice(struct agent *a, const Fabriciq__Advice *v)
{
	a->sim->advice++;
	printf("{\"advice\":{\"t_ms\":%lld,\"node\":\"%s\",\"job\":%llu,\"kind\":\"%s\",\"local_nic\":\"%s\","
	       "\"remote_node\":\"%s\",\"remote_nic\":\"%s\",\"lifetime_ns\":%lld,"
	       "\"collides_with_job\":%llu,\"shared_nic\":\"%s\",\"rate\":%llu,\"shared_link\":\"%s\","
	       "\"link_capacity\":%llu}}\n",
	       (long long)((fq_realtime_ns() - a->sim->t0) / 1000000), a->node, (unsigned long long)v->job_id,
	       v->kind ? v->kind : "", v->local_nic ? v->local_nic : "", v->remote_node ? v->remote_node : "",
	       v->remote_nic ? v->remote_nic : "", (long long)v->lifetime_ns,
	       (unsigned long long)v->collides_with_job, v->shared_nic ? v->shared_nic : "",
	       (unsigned long long)v->rate_bytes_per_s, v->shared_link ? v->shared_link : "",
	       (unsigned long long)v->link_capacity);
	fflush(stdout);
}

static void send_auth(struct agent *a, const Fabriciq__Challenge *ch)
{
	struct sim *s = a->sim;
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Auth au = FABRICIQ__AUTH__INIT;
	char *cred = NULL, err[256];

	if (!strcmp(s->auth, "none")) {
		Fabriciq__AgentHello h = FABRICIQ__AGENT_HELLO__INIT;
		h.node = a->node;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_HELLO;
		env.hello = &h;
		sim_send_env(a, &env);
		return;
	}
	if (!strcmp(s->auth, "forged")) {
		cred = strdup("MUNGE:AwQFAACtWbMCs8Q8b3h8f3W9XUSKxwT1Vx1ZgYqUUx+vOk1yHqvLZ5Y9bFUq1qf0YcQ=:");
	} else if (!strcmp(s->auth, "replay") && s->saved_cred) {
		cred = strdup(s->saved_cred);
	} else if (fq_munge_encode(s->munge_socket, ch->nonce.data, ch->nonce.len, s->ttl, &cred, err,
				   sizeof(err)) < 0) {
		fprintf(stderr, "fq-agentsim: munge: %s\n", err);
		exit(1);
	}
	if (!strcmp(s->auth, "replay") && !s->saved_cred)
		s->saved_cred = strdup(cred);
	if (s->auth_delay_ms)
		usleep((useconds_t)s->auth_delay_ms * 1000);
	au.credential = cred;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_AUTH;
	env.auth = &au;
	sim_send_env(a, &env);
	free(cred);
}

static void send_hello(struct agent *a)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__AgentHello h = FABRICIQ__AGENT_HELLO__INIT;
	Fabriciq__Nic n[3] = {FABRICIQ__NIC__INIT, FABRICIQ__NIC__INIT, FABRICIQ__NIC__INIT};
	Fabriciq__Nic *np[3] = {&n[0], &n[1], &n[2]};
	char names[3][64], addrs[3][32];

	for (int i = 0; i < 3; i++) {
		snprintf(names[i], sizeof(names[i]), "%s%s", a->sim->evil ? sim_evil_str : "",
			 i < 2 ? (i ? "rail1" : "rail0") : "eth0");
		snprintf(addrs[i], sizeof(addrs[i]), "198.%d.%d.%d", 18 + (i == 2), (a->idx >> 8) + i * 40,
			 a->idx & 255);
		n[i].name = names[i];
		n[i].address = addrs[i];
		n[i].rail = (uint32_t)(i < 2 ? i : 0);
		n[i].speed_mbps = 100000;
		n[i].kind = FABRICIQ__NIC_KIND__NIC_ETHERNET;
		n[i].front_end = i == 2;
		n[i].guid = a->sim->evil ? (char *)sim_evil_str : "";
	}
	h.node = a->node;
	h.agent_version = a->sim->evil ? (char *)sim_evil_str : "agentsim";
	h.boot_id = a->sim->evil ? (char *)sim_evil_str : "00000000-0000-0000-0000-000000000000";
	h.nics = np;
	h.n_nics = 3;
	h.next_seq = a->replaying ? a->replay_from : a->next_seq;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_HELLO;
	env.hello = &h;
	sim_send_env(a, &env);
}

static void on_env(struct agent *a, Fabriciq__Envelope *env)
{
	switch (env->payload_case) {
	case FABRICIQ__ENVELOPE__PAYLOAD_CHALLENGE:
		send_auth(a, env->challenge);
		if (!strcmp(a->sim->auth, "good") || !strcmp(a->sim->auth, "garbage") ||
		    !strcmp(a->sim->auth, "oversized")) {
			send_hello(a);
			a->state = 1;
			if (a->replaying) {
				/* resend everything already sent, then go on */
				for (uint64_t q = a->replay_from; q < a->next_seq; q++)
					sim_send_seq(a, q);
				a->replaying = false;
			}
			if (!strcmp(a->sim->auth, "garbage")) {
				static const uint8_t junk[] = {0,    0,    0,    8,    0xff, 0xfe,
							       0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8};
				bufferevent_write(a->bev, junk, sizeof(junk));
			} else if (!strcmp(a->sim->auth, "oversized")) {
				static const uint8_t big[] = {0x7f, 0xff, 0xff, 0xff, 1, 2, 3};
				bufferevent_write(a->bev, big, sizeof(big));
			}
		}
		break;
	case FABRICIQ__ENVELOPE__PAYLOAD_ACK:
		if (env->ack->seq > a->acked)
			a->acked = env->ack->seq;
		if (a->sim->burst_wait && all_acked(a->sim)) {
			a->sim->last_ack_ns = fq_realtime_ns();
			event_base_loopbreak(a->sim->base);
		}
		break;
	case FABRICIQ__ENVELOPE__PAYLOAD_CORRECTION:
		a->corrections++;
		a->last_offset = env->correction->offset_ns;
		break;
	case FABRICIQ__ENVELOPE__PAYLOAD_PEERS:
		a->peers++;
		break;
	case FABRICIQ__ENVELOPE__PAYLOAD_ADVICE:
		print_advice(a, env->advice);
		break;
	case FABRICIQ__ENVELOPE__PAYLOAD_RESULT:
		a->got_result = true;
		printf("result: code=%d message=%s\n", env->result->code, env->result->message);
		break;
	default:
		break;
	}
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct agent *a = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	uint8_t chunk[65536];
	Fabriciq__Envelope *env;
	int n, rc;

	while ((n = evbuffer_remove(in, chunk, sizeof(chunk))) > 0) {
		fq_frame_decoder_feed(a->dec, chunk, (size_t)n);
		while ((rc = fq_frame_decoder_next(a->dec, &env)) == 1) {
			on_env(a, env);
			fq_frame_free(env);
		}
	}
}

static void agent_connect(struct agent *a);

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct agent *a = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (a->state != 2 && strcmp(a->sim->auth, "good"))
			printf("closed: agent %d\n", a->idx);
		bufferevent_free(a->bev);
		a->bev = NULL;
		a->state = 2;
	}
}

static void agent_connect(struct agent *a)
{
	a->bev = bufferevent_socket_new(a->sim->base, -1, BEV_OPT_CLOSE_ON_FREE);
	fq_frame_decoder_destroy(a->dec);
	a->dec = fq_frame_decoder_create(0);
	a->state = 0;
	bufferevent_setcb(a->bev, on_read, NULL, on_event, a);
	bufferevent_enable(a->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(a->bev, (struct sockaddr *)&a->sim->addr, sizeof(a->sim->addr)) < 0) {
		bufferevent_free(a->bev);
		a->bev = NULL;
		a->state = 2;
	}
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct sim *s = arg;
	int per_tick = s->probes + s->lanes + 1;

	(void)fd;
	(void)what;
	for (int i = 0; i < s->nagents; i++) {
		struct agent *a = &s->agents[i];
		if (a->state != 1)
			continue;
		if (s->collision) {
			sim_coll_tick(a);
			continue;
		}
		if (s->all_kinds && a->next_seq < 7) {
			while (a->next_seq < 7)
				sim_send_seq(a, a->next_seq++);
		}
		for (int k = 0; k < per_tick; k++)
			sim_send_seq(a, a->next_seq++);
	}
	s->ticks_done++;
}

static bool all_acked(const struct sim *s)
{
	for (int i = 0; i < s->nagents; i++)
		if (s->agents[i].acked + 1 < s->agents[i].next_seq)
			return false;
	return true;
}

static void on_end(evutil_socket_t fd, short what, void *arg)
{
	struct sim *s = arg;

	(void)fd;
	(void)what;
	event_base_loopbreak(s->base);
}

static int run_phase(struct sim *s, double seconds, bool ticking, double drain_s)
{
	struct timeval tick = {(time_t)s->tick_s, (suseconds_t)((s->tick_s - (int)s->tick_s) * 1e6)};
	struct timeval end = {(time_t)seconds, (suseconds_t)((seconds - (int)seconds) * 1e6)};
	struct timeval poll = {0, 50000};
	double waited = 0;

	if (ticking) {
		s->tick_ev = event_new(s->base, -1, EV_PERSIST, on_tick, s);
		event_add(s->tick_ev, &tick);
	}
	s->end_ev = evtimer_new(s->base, on_end, s);
	evtimer_add(s->end_ev, &end);
	event_base_dispatch(s->base);
	if (s->tick_ev) {
		event_free(s->tick_ev);
		s->tick_ev = NULL;
	}
	event_free(s->end_ev);
	/* wait for the last acks */
	while (waited < drain_s && !all_acked(s)) {
		s->end_ev = evtimer_new(s->base, on_end, s);
		evtimer_add(s->end_ev, &poll);
		event_base_dispatch(s->base);
		event_free(s->end_ev);
		waited += 0.05;
	}
	return 0;
}

/* Burst mode: total_lanes lane frames per agent, as fast as the acks come
 * back. The frames are encoded before the clock starts (the simulator's
 * protobuf encoding shares the machine's cores with the controller and
 * is no part of what is measured); the clock runs from handing the first
 * byte to the sockets to the ack that completes the last agent. Returns
 * the seconds, or -1 if not every frame was acknowledged within drain_s. */
static double burst(struct sim *s, double drain_s)
{
	struct timeval limit = {(time_t)drain_s, (suseconds_t)((drain_s - (int)drain_s) * 1e6)};
	int64_t t0;

	for (int i = 0; i < s->nagents; i++) {
		struct agent *a = &s->agents[i];
		if (a->state != 1 || !(a->pre = evbuffer_new()))
			continue;
		for (uint64_t k = 0; k < s->total_lanes; k++) {
			if (s->jobs)
				sim_send_job_frame(a, a->next_seq++ - 1);
			else
				sim_send_seq(a, a->next_seq++);
		}
	}
	t0 = fq_realtime_ns();
	for (int i = 0; i < s->nagents; i++) {
		struct agent *a = &s->agents[i];
		if (!a->pre)
			continue;
		bufferevent_write_buffer(a->bev, a->pre);
		evbuffer_free(a->pre);
		a->pre = NULL;
	}
	s->burst_wait = true;
	s->end_ev = evtimer_new(s->base, on_end, s);
	evtimer_add(s->end_ev, &limit);
	if (!all_acked(s))
		event_base_dispatch(s->base);
	event_free(s->end_ev);
	s->end_ev = NULL;
	s->burst_wait = false;
	if (!all_acked(s))
		return -1;
	return (double)((s->last_ack_ns ? s->last_ack_ns : fq_realtime_ns()) - t0) / 1e9;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"connect", required_argument, NULL, 'c'},
	    {"agents", required_argument, NULL, 'n'},
	    {"duration", required_argument, NULL, 'd'},
	    {"probes", required_argument, NULL, 'p'},
	    {"lanes", required_argument, NULL, 'l'},
	    {"munge-socket", required_argument, NULL, 'm'},
	    {"prefix", required_argument, NULL, 'P'},
	    {"start-seq", required_argument, NULL, 's'},
	    {"auth", required_argument, NULL, 'a'},
	    {"all-kinds", no_argument, NULL, 'k'},
	    {"evil", no_argument, NULL, 'e'},
	    {"replay", no_argument, NULL, 'r'},
	    {"ttl", required_argument, NULL, 't'},
	    {"auth-delay-ms", required_argument, NULL, 'D'},
	    {"burst", required_argument, NULL, 'b'},
	    {"tick", required_argument, NULL, 'T'},
	    {"drain", required_argument, NULL, 'w'},
	    {"collision", required_argument, NULL, 'C'},
	    {"job-base", required_argument, NULL, 'J'},
	    {"both-ends", no_argument, NULL, 'B'},
	    {"lanes-for", required_argument, NULL, 'L'},
	    {"phases", no_argument, NULL, 'H'},
	    {"jobs", required_argument, NULL, 'j'},
	    {"jobs-open", no_argument, NULL, 'o'},
	    {NULL, 0, NULL, 0},
	};
	struct sim s = {.nagents = 1,
			.probes = 4,
			.lanes = 4,
			.duration = 3,
			.auth = "good",
			.prefix = "sim",
			.start_seq = 1,
			.job_base = 7000,
			.tick_s = 1.0};
	const char *connect_to = "127.0.0.1:7100";
	double drain = 10;
	uint64_t sent = 0, acked = 0, corrections = 0, peers = 0, complete = 0, connected = 0, results = 0;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			connect_to = optarg;
			break;
		case 'n':
			s.nagents = atoi(optarg);
			break;
		case 'd':
			s.duration = atoi(optarg);
			break;
		case 'p':
			s.probes = atoi(optarg);
			break;
		case 'l':
			s.lanes = atoi(optarg);
			break;
		case 'm':
			s.munge_socket = optarg;
			break;
		case 'P':
			s.prefix = optarg;
			break;
		case 's':
			s.start_seq = strtoull(optarg, NULL, 10);
			break;
		case 'a':
			s.auth = optarg;
			break;
		case 'k':
			s.all_kinds = 1;
			break;
		case 'e':
			s.evil = 1;
			break;
		case 'r':
			s.replay = true;
			break;
		case 't':
			s.ttl = atoi(optarg);
			break;
		case 'D':
			s.auth_delay_ms = atoi(optarg);
			break;
		case 'b':
			s.total_lanes = strtoull(optarg, NULL, 10);
			break;
		case 'T':
			s.tick_s = atof(optarg);
			break;
		case 'w':
			drain = atof(optarg);
			break;
		case 'C':
			s.collision = optarg;
			break;
		case 'J':
			s.job_base = strtoull(optarg, NULL, 10);
			break;
		case 'B':
			s.both_ends = true;
			break;
		case 'H':
			s.phases = true;
			break;
		case 'L':
			s.lanes_for = atof(optarg);
			break;
		case 'j':
			s.jobs = strtoull(optarg, NULL, 10);
			s.total_lanes = 6 * s.jobs; /* the burst machinery sends them */
			break;
		case 'o':
			s.jobs_open = true;
			break;
		default:
			fprintf(stderr,
				"usage: fq-agentsim [--connect IP:PORT] [--agents N] [--duration S] "
				"[--probes P]\n"
				"  [--lanes L] [--munge-socket PATH] [--prefix NAME] [--start-seq S] "
				"[--all-kinds]\n"
				"  [--evil] [--replay] [--auth "
				"good|forged|replay|none|garbage|oversized|nohello]\n"
				"  [--ttl S] [--auth-delay-ms MS] [--burst N] [--tick S] [--drain S]\n"
				"  [--collision outlier|tie|control|rates] [--job-base N] [--both-ends] "
				"[--lanes-for S] [--phases]\n"
				"  [--jobs N [--jobs-open]]\n");
			return 2;
		}
	}
	{
		char host[64];
		const char *colon = strrchr(connect_to, ':');
		if (!colon || (size_t)(colon - connect_to) >= sizeof(host) || s.nagents < 1)
			return 2;
		memcpy(host, connect_to, (size_t)(colon - connect_to));
		host[colon - connect_to] = '\0';
		s.addr.sin_family = AF_INET;
		s.addr.sin_port = htons((uint16_t)atoi(colon + 1));
		if (inet_pton(AF_INET, host, &s.addr.sin_addr) != 1)
			return 2;
	}
	if (s.probes + s.lanes < 0)
		return 2;
	if (s.collision) {
		if (strcmp(s.collision, "outlier") && strcmp(s.collision, "tie") &&
		    strcmp(s.collision, "control") && strcmp(s.collision, "rates")) {
			fprintf(stderr, "fq-agentsim: --collision: outlier, tie, control or rates, not %s\n",
				s.collision);
			return 2;
		}
		if (s.nagents != 4 || s.evil || s.replay || s.all_kinds || s.total_lanes) {
			fprintf(stderr,
				"fq-agentsim: --collision needs --agents 4 and none of --evil, --replay, "
				"--all-kinds, --burst\n");
			return 2;
		}
	}
	if (s.lanes == 0 && s.probes == 0 && s.total_lanes)
		s.lanes = 1;
	if (s.total_lanes) {
		s.probes = 0;
		if (!s.lanes)
			s.lanes = 1;
		s.lanes = 1000000; /* burst: every frame a lane (cycle position < lanes) */
	}
	s.t0 = fq_realtime_ns();
	s.base = event_base_new();
	s.agents = calloc((size_t)s.nagents, sizeof(*s.agents));
	for (int i = 0; i < s.nagents; i++) {
		struct agent *a = &s.agents[i];
		a->sim = &s;
		a->idx = i;
		sim_name_of(&s, i, a->node, sizeof(a->node));
		a->next_seq = a->first_seq = s.start_seq;
		a->acked = s.start_seq - 1;
		agent_connect(a);
	}
	if (strcmp(s.auth, "good")) {
		/* refusal modes: one exchange, then report what happened */
		run_phase(&s, 3, false, 0);
		if (!strcmp(s.auth, "replay")) {
			for (int i = 0; i < s.nagents; i++)
				if (s.agents[i].bev) {
					bufferevent_free(s.agents[i].bev);
					s.agents[i].bev = NULL;
				}
			agent_connect(&s.agents[0]);
			run_phase(&s, 3, false, 0);
		}
	} else if (s.total_lanes) {
		run_phase(&s, 1, false, 0); /* connect and authenticate */
		double secs = burst(&s, drain);
		if (secs >= 0)
			printf("burst: %.3f s\n", secs);
	} else {
		run_phase(&s, s.duration, true, drain);
		if (s.collision)
			run_phase(&s, 1.5, false, 0); /* advice sent after the last tick */
		if (s.replay) {
			/* break every connection and replay everything from the start */
			for (int i = 0; i < s.nagents; i++) {
				struct agent *a = &s.agents[i];
				if (a->bev)
					bufferevent_free(a->bev);
				a->bev = NULL;
				a->replaying = true;
				/* From the second frame: a hello with next_seq 1 says
				 * "lost my spool, count afresh" (proto AgentHello). */
				a->replay_from = a->first_seq > 1 ? a->first_seq : 2;
				a->acked = a->replay_from - 1;
				agent_connect(a);
			}
			run_phase(&s, 1, false, drain);
		}
	}
	for (int i = 0; i < s.nagents; i++) {
		struct agent *a = &s.agents[i];
		sent += a->next_seq - a->first_seq;
		acked += a->acked + 1 - a->first_seq;
		corrections += a->corrections;
		peers += a->peers;
		complete += a->acked + 1 >= a->next_seq;
		connected += a->state == 1;
		results += a->got_result;
		if (a->bev)
			bufferevent_free(a->bev);
		fq_frame_decoder_destroy(a->dec);
	}
	printf("agents=%d connected=%llu sent=%llu acked=%llu complete=%llu corrections=%llu peers=%llu "
	       "last_offset_ns[1]=%lld results=%llu advice=%llu\n",
	       s.nagents, (unsigned long long)connected, (unsigned long long)sent, (unsigned long long)acked,
	       (unsigned long long)complete, (unsigned long long)corrections, (unsigned long long)peers,
	       (long long)(s.nagents > 1 ? s.agents[1].last_offset : 0), (unsigned long long)results,
	       (unsigned long long)s.advice);
	free(s.agents);
	free(s.saved_cred);
	event_base_free(s.base);
	if (strcmp(s.auth, "good"))
		return results ? 0 : 1;
	return complete == (uint64_t)s.nagents && sent > 0 ? 0 : 1;
}
