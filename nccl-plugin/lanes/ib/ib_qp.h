/*
 * ib_qp: the attributes that walk an RC QP through INIT, RTR and RTS,
 * computed from the two ends' handles and the settings; pure functions
 * filling struct ibv_qp_attr and its mask (no device needed to test them).
 *
 * Settings (FABRICIQ_IB_*): timeout (4.096 us x 2^timeout per try), retry_cnt
 * (tries before IBV_WC_RETRY_EXC_ERR), sl (IB service level), tc (traffic
 * class: the GRH's, i.e. DSCP << 2 on RoCE v2). rnr_retry is 7 ("retry
 * forever"): a receiver not ready is a slow peer, not a dead path, and the
 * data direction is credit-controlled so RNR only happens on the small
 * reverse-direction control buffers.
 */
#ifndef FQIB_QP_H
#define FQIB_QP_H

#include <infiniband/verbs.h>

#include "nccl-plugin/lanes/ib/ib_handle.h"

struct fqib_qp_cfg {
	int port;      /* 1-based */
	int gid_index; /* the local GID's table index (RoCE; IB uses it only if global) */
	int timeout;   /* 1..31 */
	int retry_cnt; /* 0..7 */
	int rnr_retry; /* 0..7, 7 = infinite */
	int sl;        /* 0..15 */
	int tc;        /* 0..255 */
};

/* RESET -> INIT: port, pkey index 0, access for local write and remote write. */
void fqib_qp_init_attr(const struct fqib_qp_cfg *cfg, struct ibv_qp_attr *a, int *mask);

/* INIT -> RTR toward remote: path MTU (the smaller of both), remote QPN and
 * PSN, address vector (IB: the LID, no GRH; Ethernet: the GRH with the
 * remote GID, our GID index, hop limit 255 and the traffic class).
 * 0, or -EPROTO with why when the ends cannot connect (fqib_handle_check). */
int fqib_qp_rtr_attr(const struct fqib_qp_cfg *cfg, const struct fqib_handle *local,
		     const struct fqib_handle *remote, struct ibv_qp_attr *a, int *mask, char *why,
		     size_t whylen);

/* RTR -> RTS: our PSN, timeout, retry_cnt, rnr_retry, one outstanding read. */
void fqib_qp_rts_attr(const struct fqib_qp_cfg *cfg, const struct fqib_handle *local, struct ibv_qp_attr *a,
		      int *mask);

/* Microseconds an RC QP waits before IBV_WC_RETRY_EXC_ERR on a dead path:
 * (retry_cnt + 1) x 4.096 us x 2^timeout. */
double fqib_qp_dead_after_us(const struct fqib_qp_cfg *cfg);

#endif /* FQIB_QP_H */
