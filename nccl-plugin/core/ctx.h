/*
 * ctx: the plugin context, one object made by fqn_init (abi/net.c) and handed
 * down: every comm, listener and rejoin listener keeps a pointer to the
 * context it was made under, and nothing below abi/net.c reaches for a global.
 */
#ifndef FQN_CTX_H
#define FQN_CTX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nccl-plugin/env.h"
#include "nccl-plugin/idle.h"
#include "nccl-plugin/nic.h"

struct fq_clock_page_reader;
struct fq_path_page_reader;
struct fqn_telemetry;
struct fqn_rejoin;
struct fqn_event;
struct fqn_lane;
struct fqn_lane_driver;

struct fqn_ctx {
	struct fqn_config cfg;
	struct fqn_nic nics[FQN_MAX_NICS];
	int nnics;
	const struct fqn_lane_driver *drv;  /* the lanes' transport (lane_drv.h) */
	struct fq_clock_page_reader *clock; /* NULL: no agent, local stamps */
	struct fqn_telemetry *telemetry;    /* NULL: telemetry off */
	/* control mode only */
	struct fq_path_page_reader *paths; /* NULL: no agent page (yet) */
	int64_t paths_retry_ns;            /* next attempt to open it */
	struct fqn_rejoin *rejoin;         /* listeners for re-dialed lanes */
	struct fqn_idle idle;              /* receive comms served while idle (progress.c) */
	uint32_t rank1; /* this process's global rank + 1 (FABRICIQ_RANK, else SLURM_PROCID; 0: unknown) */
};

/* Now on the global timeline if ctx's clock page is valid (*sync = 1),
 * else the local CLOCK_REALTIME (*sync = 0): a time either way, but a
 * difference of two stamps is a delay only when both were synchronised.
 * ctx may be NULL (local time). */
int64_t fqn_clock_now(const struct fqn_ctx *ctx, int *sync);
/* The same for a CLOCK_MONOTONIC_RAW time raw (a NIC's completion stamp);
 * raw 0: now. */
int64_t fqn_clock_at(const struct fqn_ctx *ctx, int64_t raw, int *sync);

/* The name of NIC nic of ctx, "?" if none (nic -1, out of range, no ctx). */
const char *fqn_ctx_nic_name(const struct fqn_ctx *ctx, int nic);

/* ctx's lane driver (lane_drv.h) on ctx's settings and NICs: the bytes
 * that open a lane (the hello and the driver's extras), dial, accept. */
size_t fqn_lane_hello_size(const struct fqn_ctx *ctx);
int fqn_lane_dial(const struct fqn_ctx *ctx, int nic, const struct sockaddr *local,
		  const struct sockaddr *remote, int keepalive_ms, struct fqn_lane **out);
int fqn_lane_accepted(const struct fqn_ctx *ctx, int nic, int fd, size_t chunk_size, int keepalive_ms,
		      const uint8_t *after_hello, struct fqn_lane **out);

/* Telemetry: event e (event.h) of this process, stamped on ctx's global
 * clock at e->at_ns; a no-op without telemetry. */
void fqn_ctx_event(const struct fqn_ctx *ctx, const struct fqn_event *e);

#endif /* FQN_CTX_H */
