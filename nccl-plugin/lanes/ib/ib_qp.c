/* ib_qp: RC QP state transition attributes (see ib_qp.h). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "nccl-plugin/ib_sysfs.h"
#include "nccl-plugin/lanes/ib/ib_qp.h"

void fqib_qp_init_attr(const struct fqib_qp_cfg *cfg, struct ibv_qp_attr *a, int *mask)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->pkey_index = 0;
	a->port_num = (uint8_t)cfg->port;
	a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

int fqib_qp_rtr_attr(const struct fqib_qp_cfg *cfg, const struct fqib_handle *local,
		     const struct fqib_handle *remote, struct ibv_qp_attr *a, int *mask, char *why,
		     size_t whylen)
{
	int mtu, rc;

	rc = fqib_handle_check(local, remote, 0, &mtu, why, whylen);
	if (rc < 0)
		return rc;
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = (enum ibv_mtu)mtu;
	a->dest_qp_num = remote->qpn;
	a->rq_psn = remote->psn;
	a->max_dest_rd_atomic = 1;
	a->min_rnr_timer = 12; /* 0.64 ms */
	a->ah_attr.sl = (uint8_t)cfg->sl;
	a->ah_attr.port_num = (uint8_t)cfg->port;
	a->ah_attr.src_path_bits = 0;
	if (local->link == FQIB_LINK_ETH) {
		a->ah_attr.is_global = 1;
		a->ah_attr.dlid = 0;
		memcpy(a->ah_attr.grh.dgid.raw, remote->gid, 16);
		a->ah_attr.grh.sgid_index = (uint8_t)cfg->gid_index;
		a->ah_attr.grh.hop_limit = 255;
		a->ah_attr.grh.traffic_class = (uint8_t)cfg->tc;
		a->ah_attr.grh.flow_label = 0;
	} else {
		a->ah_attr.is_global = 0;
		a->ah_attr.dlid = remote->lid;
	}
	*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return 0;
}

void fqib_qp_rts_attr(const struct fqib_qp_cfg *cfg, const struct fqib_handle *local, struct ibv_qp_attr *a,
		      int *mask)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = local->psn;
	a->timeout = (uint8_t)cfg->timeout;
	a->retry_cnt = (uint8_t)cfg->retry_cnt;
	a->rnr_retry = (uint8_t)cfg->rnr_retry;
	a->max_rd_atomic = 1;
	*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC;
}

double fqib_qp_dead_after_us(const struct fqib_qp_cfg *cfg)
{
	return (cfg->retry_cnt + 1) * 4.096 * ldexp(1.0, cfg->timeout);
}
