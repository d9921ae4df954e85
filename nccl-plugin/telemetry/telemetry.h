/*
 * telemetry: per-lane interval reports to the node agent, off the data path.
 *
 * The data path closes a lane's interval (FABRICIQ_TELEMETRY_INTERVAL_MS)
 * when a chunk completes after the interval's end, copies the interval's
 * counters and delay histogram into a sample and pushes it into a bounded
 * lock-free ring: a push never blocks and never takes a lock; when the ring
 * is full the sample is dropped and counted. One telemetry thread drains
 * the ring once per interval, computes the delay quantiles, and writes the
 * samples as framed fabriciq.Envelope{LaneReport}s (common/frame.h) to the
 * agent's unix socket, one non-blocking write per interval. Control mode's
 * failover and failback events take the same ring as Envelope{failover}. Without an agent it says so once
 * at WARN, drops samples, and retries the connection every few seconds.
 */
#ifndef FQN_TELEMETRY_H
#define FQN_TELEMETRY_H

#include <stdint.h>

#include "nccl-plugin/hist.h"
#include "nccl-plugin/lanes/lane.h"
#include "proto/fabriciq.pb-c.h"

/* One lane's interval, as the data path hands it over (plain data); or,
 * with event set, one failover or failback (control mode). */
struct fqn_lane_sample {
	int event;           /* 1: a FailoverEvent: lane, nic, peer, start_ns and the fields below */
	char cause[16];      /* "socket-error", "no-progress", "path-down", "failback" */
	int to_lane;         /* the lane that took the traffic (failback: the lane itself) */
	int64_t detect_ns;   /* failure: how long it took to notice */
	int64_t duration_ns; /* failover: until its chunks were resent; failback: time down */
	uint64_t bytes_resent;
	uint64_t conn_id;
	int lane;
	int is_send;
	uint32_t rank1, peer_rank1; /* this end's and the other end's rank + 1 (0: unknown) */
	int synchronised;           /* every stamp of the interval was global */
	char kind[8];
	char nic[16];
	char local[64], peer[64];
	int64_t start_ns, end_ns;
	uint64_t bytes, chunks, msgs;
	int64_t throttled_ns;   /* sender: time in the interval its rate was capped */
	uint64_t assigned_rate; /* sender: the controller's rate at the interval's end (0: none) */
	int64_t assigned_ns;    /* sender: time in the interval it had one */
	uint64_t acked;         /* sender on TCP: the bytes the peer acknowledged in it (0: unknown) */
	struct fqn_lane_info info;
	struct fqn_hist owd; /* receiver side; empty on a sender */
};

struct fqn_telemetry;

/* Start the thread. Returns 0 or a negative errno (nothing started). */
int fqn_telemetry_start(const char *socket_path, int interval_ms, struct fqn_telemetry **out);
/* Stop the thread, sending what the ring holds if an agent is connected. */
void fqn_telemetry_stop(struct fqn_telemetry *t);
/* Have the thread send what the ring holds now, waiting up to timeout_ms
 * for it (the process is about to exit; the thread keeps running). */
void fqn_telemetry_flush(struct fqn_telemetry *t, int timeout_ms);

/* Data path: hand over a sample. 0, or -ENOBUFS (ring full: dropped, counted). */
int fqn_telemetry_push(struct fqn_telemetry *t, const struct fqn_lane_sample *s);

/* pushed = sent + dropped_no_agent + dropped_full + those still queued;
 * sent: frames the agent's socket took whole (of a batch cut short by a
 * lost agent, its whole frames are sent, the rest dropped_no_agent). An
 * agent that stops reads what its socket holds and refuses the rest
 * (fq_local_drain), so every frame counted sent reaches it. */
struct fqn_telemetry_counts {
	uint64_t pushed, dropped_full, sent, dropped_no_agent;
	int connected;
};
void fqn_telemetry_counts(struct fqn_telemetry *t, struct fqn_telemetry_counts *out);

/* Pure: the FailoverEvent for an event sample (job, step and ranks are
 * the agent's to fill). Strings point into s. */
void fqn_failover_fill(Fabriciq__FailoverEvent *f, const struct fqn_lane_sample *s);

/* Pure: the LaneReport for a sample. Strings point into s. */
void fqn_lane_report_fill(Fabriciq__LaneReport *r, const struct fqn_lane_sample *s);

#endif /* FQN_TELEMETRY_H */
