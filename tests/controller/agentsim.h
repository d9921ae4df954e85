/*
 * agentsim.h: what fq-agentsim's files share (tests/controller/fq-agentsim.c:
 * the simulator, its options and the protocol; agentsim_frames.c: the
 * frames the simulated agents send). See fq-agentsim.c for what it does.
 */
#ifndef FQ_TESTS_CONTROLLER_AGENTSIM_H
#define FQ_TESTS_CONTROLLER_AGENTSIM_H

#include <event2/event.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/frame.h"

struct sim;

struct agent {
	struct sim *sim;
	int idx;
	char node[256];
	struct bufferevent *bev;
	struct fq_frame_decoder *dec;
	int state;            /* 0 challenge, 1 ready, 2 closed */
	struct evbuffer *pre; /* burst: frames encoded before the clock starts */
	uint64_t next_seq, first_seq, acked, replay_from;
	uint64_t sent;
	uint64_t corrections, peers;
	int64_t last_offset;
	bool got_result, replaying;
};

struct sim {
	struct event_base *base;
	struct sockaddr_in addr;
	const char *munge_socket, *auth, *prefix;
	int nagents, probes, lanes, ticks_done, duration, all_kinds, evil, ttl, auth_delay_ms;
	uint64_t start_seq, total_lanes;
	double tick_s;
	bool replay;
	bool burst_wait; /* stop the loop at the last ack (burst timing) */
	int64_t last_ack_ns;
	const char *collision; /* NULL, "outlier", "tie", "control" or "rates" */
	uint64_t job_base;
	uint64_t advice;
	bool both_ends, phases, jobs_open;
	uint64_t jobs;
	double lanes_for; /* seconds; 0: all along */
	struct agent *agents;
	struct event *tick_ev, *end_ev;
	char *saved_cred;
	int64_t t0;
};

/* --evil: this string in every name and free-text field. */
extern const char *const sim_evil_str;

/* fq-agentsim.c */
/* Agent idx's node name. */
void sim_name_of(const struct sim *s, int idx, char *out, size_t len);
/* Frames and sends env (to a->pre while a burst is being prepared). */
void sim_send_env(struct agent *a, Fabriciq__Envelope *env);

/* agentsim_frames.c */
/* --jobs: frame k (from 0) of agent a's job steps. */
void sim_send_job_frame(struct agent *a, uint64_t k);
/* Report frame seq of agent a: a pure function of (agent, seq). */
void sim_send_seq(struct agent *a, uint64_t seq);
/* --collision: one tick's probe windows and lane reports of agent a. */
void sim_coll_tick(struct agent *a);

#endif /* FQ_TESTS_CONTROLLER_AGENTSIM_H */
