/* test-ib-qp: INIT/RTR/RTS attributes for IB and RoCE ends, no device. */
#include <errno.h>
#include <string.h>

#include "tests/unit/tap.h"

#ifdef HAVE_VERBS
#include "nccl-plugin/ib_sysfs.h"
#include "nccl-plugin/lanes/ib/ib_qp.h"

static struct fqib_handle end(int link, int qpn, int psn, int mtu)
{
	struct fqib_handle h = {.link = (uint8_t)link,
				.gid_type = link == FQIB_LINK_IB ? FQIB_GID_IB_ROCE_V1 : FQIB_GID_ROCE_V2,
				.mtu = (uint8_t)mtu,
				.port = 1,
				.lid = (uint16_t)(qpn & 0xff),
				.qpn = (uint32_t)qpn,
				.psn = (uint32_t)psn,
				.slots = 8,
				.slot_size = 4096,
				.size = 8 * 4096};

	memset(h.gid, qpn & 0xff, 16);
	return h;
}

int main(void)
{
	struct fqib_qp_cfg cfg = {
	    .port = 2, .gid_index = 3, .timeout = 14, .retry_cnt = 5, .rnr_retry = 7, .sl = 4, .tc = 104};
	struct fqib_handle l = end(FQIB_LINK_ETH, 0x11, 0x1234, 5), r = end(FQIB_LINK_ETH, 0x22, 0x5678, 3);
	struct ibv_qp_attr a;
	char why[256];
	int mask;

	fqib_qp_init_attr(&cfg, &a, &mask);
	ok(a.qp_state == IBV_QPS_INIT && a.port_num == 2 && a.pkey_index == 0, "INIT: state, port, pkey");
	ok(a.qp_access_flags == (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), "INIT: access flags");
	ok(mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), "INIT mask");

	ok(fqib_qp_rtr_attr(&cfg, &l, &r, &a, &mask, why, sizeof(why)) == 0, "RoCE RTR computed");
	ok(a.qp_state == IBV_QPS_RTR && a.dest_qp_num == 0x22 && a.rq_psn == 0x5678,
	   "RTR: remote QPN and PSN");
	is_int(a.path_mtu, IBV_MTU_1024, "RTR: path MTU is the smaller end's (1024)");
	ok(a.ah_attr.is_global == 1 && a.ah_attr.grh.sgid_index == 3 && a.ah_attr.grh.hop_limit == 255,
	   "RoCE: GRH with our GID index, hop limit 255");
	ok(a.ah_attr.grh.dgid.raw[0] == 0x22 && a.ah_attr.grh.dgid.raw[15] == 0x22, "RoCE: remote GID");
	ok(a.ah_attr.grh.traffic_class == 104 && a.ah_attr.sl == 4 && a.ah_attr.port_num == 2,
	   "traffic class (FABRICIQ_IB_TC), SL, port");
	ok(mask & IBV_QP_AV && mask & IBV_QP_PATH_MTU && mask & IBV_QP_DEST_QPN && mask & IBV_QP_RQ_PSN &&
	       mask & IBV_QP_MAX_DEST_RD_ATOMIC && mask & IBV_QP_MIN_RNR_TIMER && !(mask & IBV_QP_SQ_PSN),
	   "RTR mask: exactly the RC RTR attributes");

	l = end(FQIB_LINK_IB, 0x33, 1, 4);
	r = end(FQIB_LINK_IB, 0x44, 2, 5);
	ok(fqib_qp_rtr_attr(&cfg, &l, &r, &a, &mask, why, sizeof(why)) == 0, "IB RTR computed");
	ok(a.ah_attr.is_global == 0 && a.ah_attr.dlid == 0x44, "IB: no GRH, remote LID");
	is_int(a.path_mtu, IBV_MTU_2048, "IB: path MTU 2048");

	r = end(FQIB_LINK_ETH, 0x44, 2, 5);
	ok(fqib_qp_rtr_attr(&cfg, &l, &r, &a, &mask, why, sizeof(why)) == -EPROTO &&
	       strstr(why, "link layer"),
	   "IB to RoCE refused: %s", why);
	l = end(FQIB_LINK_ETH, 0x33, 1, 5);
	r.gid_type = FQIB_GID_IB_ROCE_V1;
	ok(fqib_qp_rtr_attr(&cfg, &l, &r, &a, &mask, why, sizeof(why)) == -EPROTO &&
	       strstr(why, "RoCE version"),
	   "RoCE v2 to v1 refused: %s", why);

	fqib_qp_rts_attr(&cfg, &l, &a, &mask);
	ok(a.qp_state == IBV_QPS_RTS && a.sq_psn == 1 && a.timeout == 14 && a.retry_cnt == 5 &&
	       a.rnr_retry == 7,
	   "RTS: our PSN, timeout, retry count, rnr retry");
	ok(mask == (IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		    IBV_QP_MAX_QP_RD_ATOMIC),
	   "RTS mask");
	cfg.timeout = 20;
	cfg.retry_cnt = 7;
	{
		double us = fqib_qp_dead_after_us(&cfg);
		ok(us > 34e6 && us < 35e6, "NCCL's defaults (20, 7): a dead path shows after %.1f s",
		   us / 1e6);
	}
	return done_testing();
}
#else
int main(void)
{
	printf("1..0 # SKIP built --without-verbs (no QP attributes to compute)\n");
	return 0;
}
#endif
