/*
 * window: the profiler's fixed-memory aggregates, written lock-free from
 * NCCL's threads and read by a drainer off NCCL's paths.
 *
 * A window table holds one slot per key (what, device, peer or QP or
 * socket): count, bytes, summed and largest duration and a log2 histogram
 * of durations, each an atomic counter. A key takes a free slot by one
 * compare-and-swap (open addressing, FQP_WINDOWS slots, at most
 * FQP_WINDOW_PROBES probes); a full table drops the update and counts it.
 * The drainer takes each counter with an atomic exchange, so no update is
 * lost; an update racing a drain may land its count in one sample and its
 * bytes in the next (one event, never more).
 *
 * An op ring holds finished collectives and p2ps (struct fqp_op_record)
 * until drained: a bounded multi-producer ring (Vyukov's sequence
 * numbers), push never waits; a full ring drops the record and counts it.
 *
 * Samples and records are plain data shaped for fabriciq's telemetry
 * frames (a window is a LaneReport's cousin: a key, an interval, counts
 * and a delay histogram), for the agent's socket in a later change.
 */
#ifndef FQP_WINDOW_H
#define FQP_WINDOW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define FQP_WINDOWS       512
#define FQP_WINDOW_PROBES 16
#define FQP_HIST_BUCKETS  40 /* bucket b: durations in [2^(b-1), 2^b) ns; 0: 0 ns */

/* What a window counts. */
enum fqp_win_kind {
	FQP_W_COLL = 1,   /* id: FQP_FUNC_*; bytes: count x type size */
	FQP_W_P2P_SEND,   /* id: peer rank */
	FQP_W_P2P_RECV,   /* id: peer rank */
	FQP_W_PROXY_SEND, /* id: peer rank; a proxyOp, its steps' bytes */
	FQP_W_PROXY_RECV,
	FQP_W_STEP_SEND, /* id: peer rank; one network transfer */
	FQP_W_STEP_RECV,
	FQP_W_NET_IB,    /* dev: IB device, id: QP number; post to completion */
	FQP_W_NET_SOCK,  /* id: fd; sub: op (0 send, 1 recv) */
	FQP_W_NET_OTHER, /* an unknown netPlugin event */
	FQP_W_OTHER      /* id: FQP_EV_* (groups, API, kernel, CE events) */
};

struct fqp_window_key {
	int kind; /* enum fqp_win_kind */
	int dev;  /* IB device, or -1 */
	int sub;  /* IB opcode, socket op, or 0 */
	int64_t id;
};

struct fqp_window_sample {
	struct fqp_window_key key;
	uint64_t count, bytes;
	uint64_t dur_sum_ns, dur_max_ns;
	uint64_t hist[FQP_HIST_BUCKETS];
};

/* A finished collective or p2p. */
struct fqp_op_record {
	uint64_t comm_hash;
	uint64_t seq;
	int is_p2p, func, algo, proto; /* names.h ids */
	int peer, root, nchannels;
	int is_send; /* p2p */
	uint64_t bytes;
	int64_t start_ns, end_ns; /* global (synchronised) or raw monotonic */
	int synchronised;
	int proxy_ops; /* children that ended */
	double gbps;   /* bytes / (end - start), 10^9 bytes per second */
};

struct fqp_win_slot;
struct fqp_wintab;
struct fqp_opring;

/* Pure: the histogram bucket of a duration. */
unsigned fqp_hist_bucket(uint64_t ns);

/* Tables and rings live in memory the caller gives (sizes below), so a
 * context allocates everything once. */
size_t fqp_wintab_size(void);
void fqp_wintab_init(struct fqp_wintab *t);
/* Add one event: 0, or -ENOSPC (no slot: the caller counts the drop). */
int fqp_wintab_add(struct fqp_wintab *t, const struct fqp_window_key *k, uint64_t bytes, uint64_t dur_ns);
int fqp_wintab_read(struct fqp_wintab *t, int reset, void (*cb)(const struct fqp_window_sample *, void *),
		    void *arg);

/* n: a power of two. */
size_t fqp_opring_size(unsigned n);
void fqp_opring_init(struct fqp_opring *r, unsigned n);
/* 0, or -ENOBUFS (full: dropped). */
int fqp_opring_push(struct fqp_opring *r, const struct fqp_op_record *rec);
/* 1 and *out, or 0 when empty. Single consumer. */
int fqp_opring_pop(struct fqp_opring *r, struct fqp_op_record *out);

#endif /* FQP_WINDOW_H */
