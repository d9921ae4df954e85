/*
 * conn: what setup.c, send.c, recv.c and net.c share inside the plugin:
 * the global context, the handle and hello wire formats, the comm base
 * (lanes, per-lane statistics, sticky error) and the request object.
 */
#ifndef FQN_CONN_H
#define FQN_CONN_H

#include <stdint.h>

#include "nccl-plugin/chunk.h"
#include "nccl-plugin/env.h"
#include "nccl-plugin/hist.h"
#include "nccl-plugin/lane.h"
#include "nccl-plugin/net.h"
#include "nccl-plugin/nic.h"

struct fq_clock_page_reader;
struct fqn_telemetry;

struct fqn_global {
	struct fqn_config cfg;
	struct fqn_nic nics[FQN_MAX_NICS];
	int nnics;
	struct fq_clock_page_reader *clock; /* NULL: no agent, local stamps */
	struct fqn_telemetry *telemetry;    /* NULL: telemetry off */
};

/* Valid between the first fqn_init and the last fqn_fini. */
extern struct fqn_global *fqn_g;

/* Now on the global timeline if the clock page is valid (*sync = 1), else
 * the local CLOCK_MONOTONIC_RAW (*sync = 0). */
int64_t fqn_clock_now(int *sync);

/* The listen handle: the listener's addresses, one per local NIC (its
 * rail), the listener's token, and room for the connector's state. */
#define FQN_HANDLE_MAGIC 0x31485146u /* "FQH1" */
#define FQN_HANDLE_ADDRS 4

struct fqn_handle_addr {
	uint8_t family; /* AF_INET or AF_INET6 */
	uint8_t pad;
	uint16_t port; /* network order */
	uint8_t addr[16];
};

struct fqn_connecting;

struct fqn_handle {
	uint32_t magic;
	uint8_t naddr;
	uint8_t pad[3];
	uint64_t token;
	struct fqn_handle_addr addr[FQN_HANDLE_ADDRS];
	struct fqn_connecting *stage; /* connector side only; NULL on the wire */
};

_Static_assert(sizeof(struct fqn_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle must fit NCCL's");

/* First bytes on every lane, connector to listener (little-endian). */
#define FQN_HELLO_MAGIC   0x4c485146u /* "FQHL" */
#define FQN_HELLO_VERSION 1
#define FQN_HELLO_SIZE    32

struct fqn_hello {
	uint16_t lane, nlanes;
	uint32_t chunk_size;
	uint64_t token;
	uint64_t conn_id;
};

void fqn_hello_encode(const struct fqn_hello *h, uint8_t out[FQN_HELLO_SIZE]);
int fqn_hello_decode(const uint8_t in[FQN_HELLO_SIZE], struct fqn_hello *h);

/* Per-lane statistics of the current telemetry interval. */
struct fqn_lane_stats {
	uint64_t bytes, chunks, msgs;
	int unsync;             /* some stamp of the interval was local */
	int64_t interval_start; /* fqn_clock_now() */
	struct fqn_hist owd;    /* receiver only */
};

enum fqn_req_kind {
	FQN_REQ_SEND = 1,
	FQN_REQ_RECV,
	FQN_REQ_FLUSH
};
enum fqn_req_state {
	FQN_REQ_FREE = 0,
	FQN_REQ_ACTIVE,
	FQN_REQ_DONE
};

struct fqn_comm {
	int is_send;
	int dev;
	int nlanes;
	size_t chunk_size;
	struct fqn_lane *lanes[FQN_MAX_LANES];
	struct fqn_lane_stats stats[FQN_MAX_LANES];
	int64_t interval_ns; /* telemetry interval, 0: off */
	int err;             /* sticky negative errno */
	int err_lane;        /* lane that failed */
	uint64_t conn_id;
};

struct fqn_req {
	enum fqn_req_kind kind;
	enum fqn_req_state state;
	struct fqn_comm *comm;
	uint64_t seq; /* send: the message; recv: the first of n */
	int n;
	int matched; /* recv: bitmask of buffers taken by a message */
	int msgs_left;
	void *data[FQN_MAX_RECVS];
	size_t cap[FQN_MAX_RECVS];  /* send: the size */
	size_t size[FQN_MAX_RECVS]; /* received sizes */
	int tags[FQN_MAX_RECVS];
	uint64_t chunks_left; /* send */
};

/* Record the comm's first error and log it once: what failed, the peer,
 * the lane, the errno text. Returns err. */
int fqn_comm_fail(struct fqn_comm *c, int lane, int err, const char *what);

/* Telemetry: close lane i's interval if `now` (a chunk's stamp) is past
 * its end, or if force and it carried anything; hands the sample to the
 * telemetry thread without blocking. A no-op when telemetry is off. */
void fqn_comm_tick(struct fqn_comm *c, int i, int64_t now, int force);

/* Set up the per-lane statistics of a new comm. */
void fqn_comm_stats_init(struct fqn_comm *c);

/* Report the last intervals and close the lanes; the caller frees the comm. */
void fqn_comm_release(struct fqn_comm *c);

int fqn_send_progress(struct fqn_send *s);
/* Progress every lane; with until set, stop as soon as that request completes. */
int fqn_recv_progress(struct fqn_recv *r, const struct fqn_req *until);
int fqn_send_from_lanes(int dev, struct fqn_lane **lanes, int nlanes, size_t chunk_size, uint64_t conn_id,
			struct fqn_send **out);
int fqn_recv_from_lanes(int dev, struct fqn_lane **lanes, int nlanes, size_t chunk_size, uint64_t conn_id,
			struct fqn_recv **out);

#endif /* FQN_CONN_H */
