/*
 * ctx: the plugin context, one object made by fqn_init (net.c) and handed
 * down: every comm, listener and rejoin listener keeps a pointer to the
 * context it was made under, and nothing below net.c reaches for a global.
 */
#ifndef FQN_CTX_H
#define FQN_CTX_H

#include <stdint.h>

#include "nccl-plugin/env.h"
#include "nccl-plugin/idle.h"
#include "nccl-plugin/nic.h"

struct fq_clock_page_reader;
struct fq_path_page_reader;
struct fqn_telemetry;
struct fqn_rejoin;
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

/* CLOCK_MONOTONIC in ns: control mode's timers (never the global timeline). */
int64_t fqn_mono_ns(void);

/* The name of NIC nic of ctx, "?" if none (nic -1, out of range, no ctx). */
const char *fqn_ctx_nic_name(const struct fqn_ctx *ctx, int nic);

#endif /* FQN_CTX_H */
