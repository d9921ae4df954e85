/*
 * conn: what setup.c, send.c, recv.c and net.c share inside the plugin:
 * the global context, the handle wire format (the hello's: hello.h), the comm base
 * (lanes, per-lane statistics, sticky error) and the request object.
 */
#ifndef FQN_CONN_H
#define FQN_CONN_H

#include <stdint.h>
#include <sys/socket.h>

#include "nccl-plugin/chunk.h"
#include "nccl-plugin/env.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/hist.h"
#include "nccl-plugin/lane.h"
#include "nccl-plugin/net.h"
#include "nccl-plugin/nic.h"

struct fq_clock_page_reader;
struct fq_path_page_reader;
struct fqn_telemetry;
struct fqn_rejoin;

struct fqn_global {
	struct fqn_config cfg;
	struct fqn_nic nics[FQN_MAX_NICS];
	int nnics;
	struct fq_clock_page_reader *clock; /* NULL: no agent, local stamps */
	struct fqn_telemetry *telemetry;    /* NULL: telemetry off */
	/* control mode only */
	struct fq_path_page_reader *paths; /* NULL: no agent page (yet) */
	int64_t paths_retry_ns;            /* next attempt to open it */
	struct fqn_rejoin *rejoin;         /* listeners for re-dialed lanes */
	uint32_t rank1; /* this process's global rank + 1 (FABRICIQ_RANK, else SLURM_PROCID; 0: unknown) */
};

/* Valid between the first fqn_init and the last fqn_fini. */
extern struct fqn_global *fqn_g;

/* Now on the global timeline if the clock page is valid (*sync = 1), else
 * the local CLOCK_REALTIME (*sync = 0): a time either way, but a difference
 * of two stamps is a delay only when both were synchronised. */
int64_t fqn_clock_now(int *sync);
/* The same for a CLOCK_MONOTONIC_RAW time raw (a NIC's completion stamp);
 * raw 0: now. */
int64_t fqn_clock_at(int64_t raw, int *sync);

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

#define FQN_HANDLE_F_CONTROL 0x01u /* the listener runs in control mode */

struct fqn_handle {
	uint32_t magic;
	uint8_t naddr;
	uint8_t flags;
	uint8_t pad[2];
	uint64_t token;
	struct fqn_handle_addr addr[FQN_HANDLE_ADDRS];
	struct fqn_connecting *stage; /* connector side only; NULL on the wire */
	/* control mode: where a failed lane to addr[k] re-dials (network
	 * order, same address; 0: none); after stage, which stays at byte 96 */
	uint16_t rejoin_port[FQN_HANDLE_ADDRS];
	uint32_t rank1; /* the listener's global rank + 1 (0: unknown), so lanes name both ranks */
};

_Static_assert(sizeof(struct fqn_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle must fit NCCL's");

/* A non-blocking listening socket on nic's address, ephemeral port: the fd
 * (and *bound) or a negative errno. */
int fqn_listen_on(const struct fqn_nic *nic, struct sockaddr_storage *bound);

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

/* Control mode: a lane's life. The sender declares a lane failed, resends
 * its unacked chunks on the others, re-dials it with backoff (DIALING),
 * waits for the receiver's first ack on the new socket (VERIFY: a round
 * trip on the new path) and gives it traffic again (UP). The receiver only
 * knows UP and DOWN. */
enum fqn_lane_state {
	FQN_LANE_UP = 0,
	FQN_LANE_DOWN,
	FQN_LANE_DIALING,
	FQN_LANE_VERIFY
};

struct fqn_lane_ctl {
	enum fqn_lane_state state;
	int64_t since_ns;    /* state entered (fqn_mono_ns) */
	int64_t down_ns;     /* failed at; 0 while up */
	int64_t progress_ns; /* sender: last ack that advanced, or when data became outstanding */
	int64_t next_try_ns; /* sender: next re-dial */
	int backoff_ms;
	const char *cause;    /* why it last failed */
	int last_err;         /* and the errno, 0 if none (path down, no progress) */
	char nic[16];         /* local NIC name: the path page's key, events */
	uint32_t remote_ipv4; /* network order, 0: not IPv4 (no path lookups) */
	char local[64], peer[64];
	struct sockaddr_storage bind_addr, rejoin_addr; /* sender: where it re-dials from and to */
	int can_rejoin;
	uint64_t rx_count, ack_sent; /* receiver: chunks taken off this socket, last count acked */
	int ack_owed;                /* receiver: a fresh socket's first ack is due */
	int reported;                /* receiver: this end reported the lane's failure; its failback is due */
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
	/* control mode (FABRICIQ_MODE=control on both ends) */
	int control;
	uint64_t token; /* the listener's: proves a re-dialed lane belongs here */
	struct fqn_lane_ctl lc[FQN_MAX_LANES];
	int64_t all_down_ns;  /* when the last lane went down; 0: some lane is up */
	int64_t next_path_ns; /* next path page check */
	uint64_t failovers, failbacks;
	uint32_t peer_rank1; /* the other end's global rank + 1 (0: unknown) */
	int tclass;          /* NCCL's trafficClass for the lanes (send comm), -1: the default */
};

/* Lane i's traffic class from c->tclass (nothing when -1); a lane that
 * refuses is a WARN (a QoS hint, not an error). */
void fqn_comm_apply_tclass(struct fqn_comm *c, int i);

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

/* CLOCK_MONOTONIC in ns: control mode's timers (never the global timeline). */
int64_t fqn_mono_ns(void);

/* Control mode helpers (failover.c). Fill lane i's names and path key from
 * its lane object (NIC index, addresses). */
void fqn_ctl_lane_init(struct fqn_comm *c, int i);
/* The same from a NIC index (-1: unknown) and "addr[:port]" strings, for a
 * lane without a lane object (absent since setup). */
void fqn_ctl_lane_name(struct fqn_comm *c, int i, int nic, const char *local, const char *peer);
/* 1 if the path page has lane i's path DOWN while another path to the
 * same peer node is UP; 0 if up or unknown (no page, no entry, a stale
 * page: see fqn_path_page_fresh), or when every path to the node is DOWN:
 * its agent stopping looks just like that, so the lanes then go by their
 * transport's own signals; and 0 for an UP lane that came up after the
 * DOWN was seen (it crossed the path since: the page lags). */
int fqn_ctl_path_down(struct fqn_comm *c, int i);
/* 1 if a page published at updated_ns (CLOCK_MONOTONIC_RAW) may be
 * trusted at now_ns: published, and no more than max_age_ms
 * (FABRICIQ_PATH_PAGE_MAX_AGE_MS) old. An agent that died leaves its last
 * page behind, DOWN entries included. Pure. */
int fqn_path_page_fresh(int64_t updated_ns, int64_t now_ns, int max_age_ms);
/* 1 when the comm's next path page check is due (every few ms, never per chunk). */
int fqn_ctl_path_due(struct fqn_comm *c, int64_t now);
/* Telemetry: one FailoverEvent of this end of the connection (cause
 * "socket-error", "no-progress", "no-data", "path-down", "failback" or
 * "steer"), stamped with at_ns (fqn_mono_ns: when the lane failed or came
 * back) on the global clock, and the connection's id, so that the
 * controller merges what the two ends report of one outage. Each end
 * reports each outage of a lane it noticed once: the failure when it
 * notices, the failback (duration_ns: how long the lane was out) when the
 * lane is back. Its remote NIC is the peer NIC's name from the agent's
 * path page, the peer's address where the page has no entry. A no-op
 * without telemetry. */
void fqn_ctl_event(struct fqn_comm *c, int from_lane, int to_lane, const char *cause, int64_t at_ns,
		   int64_t detect_ns, uint64_t bytes_resent, int64_t duration_ns);
/* All lanes down for longer than FABRICIQ_FAILOVER_GRACE_MS: fail the comm
 * with -ENETUNREACH and a message naming both ends. All lanes down because
 * the peer closed or refused every one (its process is gone, which a
 * failed link never looks like): fail at once with -ECONNRESET. 0 otherwise. */
int fqn_ctl_check_grace(struct fqn_comm *c, int64_t now);

/* Sender: switch a new comm to control mode; lane i re-dials rejoin[i]
 * from bind[i] (can_rejoin[i] = 0: it cannot come back) with the
 * listener's token. */
int fqn_send_enable_control(struct fqn_send *s, uint64_t token, const struct sockaddr_storage *bind,
			    const struct sockaddr_storage *rejoin, const int *can_rejoin);
/* Sender, either mode: lane i did not connect at setup (its slot NULL):
 * nic (-1: routed), local and peer name it; it failed with err, the
 * setup began at since_ns (fqn_mono_ns) and detect_ns later it was given
 * up. A WARN and a FailoverEvent (cause "connect-failed"). Control mode
 * (after fqn_send_enable_control): the lane is DOWN and re-dialed like
 * any failed lane, and its failback is reported when it is verified.
 * Monitor mode (no failover, so no re-dial either): the connection runs
 * without it. */
void fqn_send_lane_absent(struct fqn_send *s, int i, int nic, const char *local, const char *peer, int err,
			  int64_t since_ns, int64_t detect_ns);
/* Receiver: switch a new comm to control mode; re-dialed lanes carrying
 * token come back through the rejoin listeners, lanes absent at setup
 * (NULL) among them. */
int fqn_recv_enable_control(struct fqn_recv *r, uint64_t token);

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
/* (recv.c) Serve this process's control-mode receive comms that
 * have no receive posted: take re-dialed lanes and ack them (failback),
 * drain and ack resent copies of chunks already held. A sender waits for
 * those acks, and NCCL (like collbench) calls nothing on a receive comm
 * until it posts the next receive, which a ring step posts only once its
 * own sends have completed: with both ends of a pair in that state, each
 * waits for the other's acks for ever. Every control-mode progress call
 * (send or receive) ends with this; at most once per ms per process, and
 * a comm whose owner is in it (another thread) is skipped. */
void fqn_recv_serve_idle(void);
/* Comms over lanes[0..nlanes-1]; a NULL lane did not connect at setup. */
int fqn_send_from_lanes(int dev, struct fqn_lane **lanes, int nlanes, size_t chunk_size, uint64_t conn_id,
			struct fqn_send **out);
int fqn_recv_from_lanes(int dev, struct fqn_lane **lanes, int nlanes, size_t chunk_size, uint64_t conn_id,
			struct fqn_recv **out);
/* The other end's global rank (+1; 0: unknown), for telemetry. */
void fqn_send_set_peer_rank(struct fqn_send *s, uint32_t rank1);
void fqn_recv_set_peer_rank(struct fqn_recv *r, uint32_t rank1);

#endif /* FQN_CONN_H */
