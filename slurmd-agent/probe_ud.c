/* probe_ud: probes in InfiniBand UD messages (see probe_ud.h). */
#include "slurmd-agent/probe_ud.h"

#include <errno.h>
#include <string.h>

#include "common/clock.h"

int fq_ud_rx_payload(const uint8_t *buf, uint32_t byte_len, bool grh, const uint8_t **payload, size_t *len,
		     bool *has_gid, uint8_t gid[16])
{
	static const uint8_t zero[20];

	if (byte_len < FQ_UD_GRH_BYTES)
		return -EBADMSG;
	*payload = buf + FQ_UD_GRH_BYTES;
	*len = byte_len - FQ_UD_GRH_BYTES;
	*has_gid = false;
	if (!grh)
		return 0;
	if (memcmp(buf, zero, sizeof(zero)) == 0 && (buf[20] >> 4) == 4) {
		/* RoCEv2 over IPv4: the IPv4 header sits in the last 20 bytes,
		 * its source address at 12; the GID is the IPv4-mapped one */
		memset(gid, 0, 16);
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, buf + 20 + 12, 4);
	} else
		memcpy(gid, buf + 8, 16); /* GRH: SGID at byte 8, DGID at 24 */
	*has_gid = true;
	return 0;
}

int fq_ud_ah_for(const struct fq_peer_addr *to, uint8_t port, bool roce, uint8_t sgid_index,
		 struct fq_ud_ah *out)
{
	memset(out, 0, sizeof(*out));
	if (to->kind != FQ_PEER_UD || port == 0)
		return -EINVAL;
	/* RoCE frames are routed by GID (no LIDs on Ethernet); IB ones are
	 * switched by DLID even when a GRH rides along */
	if (roce ? !to->has_gid : to->lid == 0)
		return -EINVAL;
	out->port_num = port;
	out->dlid = roce ? 0 : to->lid;
	if (to->has_gid) {
		out->is_global = true;
		memcpy(out->dgid, to->gid, 16);
		out->sgid_index = sgid_index;
		out->hop_limit = 64; /* RoCEv2 is IP-routed; IB routers decrement it too */
	}
	return 0;
}

int fq_ud_cross_pick(const int64_t *before, const uint64_t *hca, const int64_t *after, unsigned n,
		     uint64_t *hca_out, int64_t *raw_out)
{
	int best = -1;

	for (unsigned i = 0; i < n; i++) {
		if (after[i] < before[i])
			return -EINVAL;
		if (best < 0 || after[i] - before[i] < after[best] - before[best])
			best = (int)i;
	}
	if (best < 0)
		return -EINVAL;
	*hca_out = hca[best];
	*raw_out = before[best] + (after[best] - before[best]) / 2;
	return 0;
}

void fq_ud_clock_add(struct fq_ud_clock *c, uint64_t hca, int64_t raw)
{
	if (c->n == 0) {
		c->hca[0] = c->hca[1] = hca;
		c->raw[0] = c->raw[1] = raw;
		c->n = 1;
		return;
	}
	/* keep the baseline between the latest point and one >= 1 s (and,
	 * once it slides, <= ~10 s) older: long enough for a precise rate,
	 * short enough to follow the crystal's temperature drift */
	if (raw - c->raw[0] > 10 * FQ_NSEC_PER_SEC) {
		/* the new baseline starts short: until it is 1 s long, the
		 * rate of the one that ends here stands in for it */
		c->rate_raw = c->raw[1] - c->raw[0];
		c->rate_hca = (int64_t)(c->hca[1] - c->hca[0]);
		c->hca[0] = c->hca[1];
		c->raw[0] = c->raw[1];
	}
	c->hca[1] = hca;
	c->raw[1] = raw;
	c->n = 2;
}

int64_t fq_ud_clock_to_raw(const struct fq_ud_clock *c, uint64_t hca)
{
	/* signed: a completion may be stamped before the latest cross point */
	__int128 d = (__int128)(int64_t)(hca - c->hca[1]);
	int64_t span_raw = c->raw[1] - c->raw[0];
	int64_t span_hca = (int64_t)(c->hca[1] - c->hca[0]);

	if (c->n == 0 || c->khz == 0)
		return 0;
	if (c->n == 2 && span_raw >= FQ_NSEC_PER_SEC && span_hca > 0)
		return c->raw[1] + (int64_t)(d * span_raw / span_hca);
	if (c->rate_hca > 0 && c->rate_raw > 0)
		return c->raw[1] + (int64_t)(d * c->rate_raw / c->rate_hca);
	return c->raw[1] + (int64_t)(d * 1000000 / (__int128)c->khz);
}

#ifndef HAVE_VERBS

int fq_probe_ud_open(const char *nic, const struct fq_ib_port *ib, struct fq_probe_transport **out)
{
	(void)nic;
	(void)ib;
	(void)out;
	return -EPROTONOSUPPORT;
}

#else /* HAVE_VERBS */

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"

#define RECV_SLOTS   256
#define SEND_SLOTS   256
#define SLOT_BYTES   512 /* GRH room + the largest probe we accept */
#define MAX_AH       512
#define XSTAMP_EVERY (100 * 1000000LL)

struct ah_entry {
	struct fq_peer_addr to; /* kind, lid, gid: qpn is not part of an AH */
	struct ibv_ah *ah;
};

struct ud {
	struct fq_probe_transport base;
	struct fq_ib_port ib;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq_ex *scq_x, *rcq_x; /* with completion timestamps; else NULL */
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *mem; /* RECV_SLOTS then SEND_SLOTS slots */
	bool roce;
	uint8_t sgid_index;
	uint16_t lid;
	union ibv_gid gid;
	struct fq_ud_clock clk;
	int64_t clk_at;
	uint32_t next_key;
	unsigned outstanding;
	int64_t sw_tx[SEND_SLOTS];
	struct ah_entry ah[MAX_AH];
	unsigned n_ah;
};

/* One completion, from either kind of CQ. */
struct done {
	uint64_t wr_id;
	enum ibv_wc_status status;
	uint32_t byte_len, src_qp;
	uint16_t slid;
	bool grh;
	uint64_t ts; /* NIC clock; 0 without completion timestamps */
};

static int poll_one(struct ibv_cq_ex *x, struct ibv_cq *cq, struct done *d)
{
	struct ibv_poll_cq_attr attr = {0};
	struct ibv_wc wc;
	int rc;

	if (!x) {
		rc = ibv_poll_cq(cq, 1, &wc);
		if (rc <= 0)
			return rc < 0 ? -EIO : 0;
		*d = (struct done){
		    wc.wr_id, wc.status, wc.byte_len, wc.src_qp, wc.slid, (wc.wc_flags & IBV_WC_GRH) != 0, 0};
		return 1;
	}
	rc = ibv_start_poll(x, &attr);
	if (rc == ENOENT)
		return 0;
	if (rc)
		return -EIO;
	d->wr_id = x->wr_id;
	d->status = x->status;
	d->byte_len = ibv_wc_read_byte_len(x);
	d->src_qp = ibv_wc_read_src_qp(x);
	d->slid = (uint16_t)ibv_wc_read_slid(x);
	d->grh = (ibv_wc_read_wc_flags(x) & IBV_WC_GRH) != 0;
	d->ts = ibv_wc_read_completion_ts(x);
	ibv_end_poll(x);
	return 1;
}

/* A new NIC clock cross point (best of 5 brackets). */
static int refresh_clock(struct ud *u)
{
	int64_t before[5], after[5], raw;
	uint64_t hca[5], h;

	for (unsigned i = 0; i < 5; i++) {
		struct ibv_values_ex v = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
		before[i] = fq_now_ns();
		if (ibv_query_rt_values_ex(u->ctx, &v))
			return -EOPNOTSUPP;
		after[i] = fq_now_ns();
		/* providers put the free-running counter in the timespec
		 * (mlx5: all of it in tv_nsec) */
		hca[i] = (uint64_t)v.raw_clock.tv_sec * 1000000000u + (uint64_t)v.raw_clock.tv_nsec;
	}
	if (fq_ud_cross_pick(before, hca, after, 5, &h, &raw) < 0)
		return -EINVAL;
	fq_ud_clock_add(&u->clk, h, raw);
	u->clk_at = raw;
	return 0;
}

static int64_t nic_to_raw(struct ud *u, uint64_t ts)
{
	return fq_ud_clock_to_raw(&u->clk, ts);
}

static int post_recv(struct ud *u, unsigned slot)
{
	struct ibv_sge sge = {(uintptr_t)(u->mem + (size_t)slot * SLOT_BYTES), SLOT_BYTES, u->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;

	return -ibv_post_recv(u->qp, &wr, &bad);
}

static int ud_fd(struct fq_probe_transport *t)
{
	return ((struct ud *)t)->ch->fd;
}

static void ud_ready(struct fq_probe_transport *t)
{
	struct ud *u = (struct ud *)t;
	struct ibv_cq *cq;
	void *cq_ctx;

	/* acknowledge every event, then re-arm both CQs before the prober
	 * polls them: a completion after this raises a new event */
	while (ibv_get_cq_event(u->ch, &cq, &cq_ctx) == 0)
		ibv_ack_cq_events(cq, 1);
	ibv_req_notify_cq(u->scq, 0);
	ibv_req_notify_cq(u->rcq, 0);
	if (u->scq_x && fq_now_ns() - u->clk_at > XSTAMP_EVERY)
		refresh_clock(u);
}

static struct ibv_ah *ah_of(struct ud *u, const struct fq_peer_addr *to)
{
	struct fq_peer_addr key = {.kind = FQ_PEER_UD, .lid = to->lid, .has_gid = to->has_gid};
	struct fq_ud_ah a;
	struct ibv_ah_attr attr = {0};
	struct ah_entry *e;

	memcpy(key.gid, to->gid, 16);
	for (unsigned i = 0; i < u->n_ah; i++)
		if (fq_peer_addr_equal(&u->ah[i].to, &key))
			return u->ah[i].ah;
	if (u->n_ah == MAX_AH || fq_ud_ah_for(to, (uint8_t)u->ib.port, u->roce, u->sgid_index, &a) < 0)
		return NULL;
	attr.dlid = a.dlid;
	attr.port_num = a.port_num;
	attr.is_global = a.is_global;
	memcpy(attr.grh.dgid.raw, a.dgid, 16);
	attr.grh.sgid_index = a.sgid_index;
	attr.grh.hop_limit = a.hop_limit;
	e = &u->ah[u->n_ah];
	e->ah = ibv_create_ah(u->pd, &attr);
	if (!e->ah) {
		char s[FQ_PEER_ADDR_STRLEN];
		fq_log_rl(FQ_LOG_WARN, "NIC %s: address handle for %s: %s", u->base.nic,
			  fq_peer_addr_format(to, s, sizeof(s)), strerror(errno));
		return NULL;
	}
	e->to = key;
	u->n_ah++;
	return e->ah;
}

static int ud_send(struct fq_probe_transport *t, const struct fq_peer_addr *to, const uint8_t *buf,
		   size_t len, uint32_t *key)
{
	struct ud *u = (struct ud *)t;
	unsigned slot = u->next_key % SEND_SLOTS;
	uint8_t *p = u->mem + (size_t)(RECV_SLOTS + slot) * SLOT_BYTES;
	struct ibv_sge sge = {(uintptr_t)p, (uint32_t)len, u->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = u->next_key,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	int rc;

	if (to->kind != FQ_PEER_UD)
		return -EAFNOSUPPORT;
	if (len > SLOT_BYTES)
		return -EMSGSIZE;
	if (u->outstanding >= SEND_SLOTS)
		return -ENOBUFS; /* the slot may still be on the wire */
	wr.wr.ud.ah = ah_of(u, to);
	if (!wr.wr.ud.ah)
		return -EHOSTUNREACH;
	wr.wr.ud.remote_qpn = to->qpn;
	wr.wr.ud.remote_qkey = FQ_PROBE_UD_QKEY;
	memcpy(p, buf, len);
	u->sw_tx[slot] = fq_now_ns();
	rc = ibv_post_send(u->qp, &wr, &bad);
	if (rc)
		return -rc;
	u->outstanding++;
	*key = u->next_key++;
	return 0;
}

static int ud_tx_stamp(struct fq_probe_transport *t, uint32_t *key, int64_t *tx_ns)
{
	struct ud *u = (struct ud *)t;
	struct done d;
	int rc = poll_one(u->scq_x, u->scq, &d);

	if (rc <= 0)
		return 0; /* empty, or a CQ error: nothing more to read now */
	if (u->outstanding)
		u->outstanding--;
	if (d.status != IBV_WC_SUCCESS) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_SQE};

		fq_log_rl(FQ_LOG_WARN, "NIC %s: probe send failed: %s", u->base.nic,
			  ibv_wc_status_str(d.status));
		/* a failed UD send leaves the send queue in SQE: resume it (a
		 * QP in another state refuses, and the silence is the signal) */
		ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE);
		return -ENODATA;
	}
	*key = (uint32_t)d.wr_id;
	*tx_ns = u->scq_x ? nic_to_raw(u, d.ts) : u->sw_tx[d.wr_id % SEND_SLOTS];
	return 1;
}

static long ud_recv(struct fq_probe_transport *t, uint8_t *buf, size_t cap, struct fq_probe_rx *rx)
{
	struct ud *u = (struct ud *)t;
	struct done d;

	for (int i = 0; i < RECV_SLOTS; i++) {
		int rc = poll_one(u->rcq_x, u->rcq, &d);
		const uint8_t *payload;
		size_t len;
		unsigned slot;

		if (rc <= 0)
			return rc < 0 ? rc : -EAGAIN;
		rx->rx_ns = u->rcq_x ? nic_to_raw(u, d.ts) : fq_now_ns();
		rx->stamp = u->rcq_x ? FQ_STAMP_NIC : FQ_STAMP_USER;
		slot = (unsigned)d.wr_id % RECV_SLOTS;
		memset(&rx->from, 0, sizeof(rx->from));
		if (d.status != IBV_WC_SUCCESS || d.byte_len > SLOT_BYTES ||
		    fq_ud_rx_payload(u->mem + (size_t)slot * SLOT_BYTES, d.byte_len, d.grh, &payload, &len,
				     &rx->from.has_gid, rx->from.gid) < 0) {
			if (d.status != IBV_WC_WR_FLUSH_ERR)
				post_recv(u, slot);
			continue;
		}
		if (len > cap)
			len = cap;
		memcpy(buf, payload, len);
		rx->from.kind = FQ_PEER_UD;
		rx->from.qpn = d.src_qp;
		rx->from.lid = d.slid;
		if (post_recv(u, slot) < 0)
			fq_log_rl(FQ_LOG_WARN, "NIC %s: receive slot %u not reposted", u->base.nic, slot);
		return (long)len;
	}
	return -EAGAIN;
}

static int ud_local_addr(struct fq_probe_transport *t, struct fq_peer_addr *out)
{
	struct ud *u = (struct ud *)t;

	memset(out, 0, sizeof(*out));
	out->kind = FQ_PEER_UD;
	out->qpn = u->qp->qp_num;
	out->lid = u->lid;
	if (u->roce) {
		out->has_gid = true;
		memcpy(out->gid, u->gid.raw, 16);
	}
	return 0;
}

static void ud_destroy(struct fq_probe_transport *t)
{
	struct ud *u = (struct ud *)t;

	if (!u)
		return;
	for (unsigned i = 0; i < u->n_ah; i++)
		ibv_destroy_ah(u->ah[i].ah);
	if (u->qp)
		ibv_destroy_qp(u->qp);
	if (u->mr)
		ibv_dereg_mr(u->mr);
	if (u->scq)
		ibv_destroy_cq(u->scq);
	if (u->rcq)
		ibv_destroy_cq(u->rcq);
	if (u->ch)
		ibv_destroy_comp_channel(u->ch);
	if (u->pd)
		ibv_dealloc_pd(u->pd);
	if (u->ctx)
		ibv_close_device(u->ctx);
	free(u->mem);
	free(u);
}

static const struct fq_probe_transport_ops ud_ops = {
    .fd = ud_fd,
    .ready = ud_ready,
    .send = ud_send,
    .recv = ud_recv,
    .tx_stamp = ud_tx_stamp,
    .local_addr = ud_local_addr,
    .destroy = ud_destroy,
};

static struct ibv_context *open_named(const char *nic, const char *dev)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;
	bool found = false;

	if (!list) {
		fq_error(
		    "NIC %s: RDMA device %s is in sysfs, but ibv_get_device_list found no verbs device: %s%s",
		    nic, dev, strerror(errno), errno == ENOSYS ? " (no RDMA support in this kernel)" : "");
		return NULL;
	}
	for (int i = 0; i < n && !found; i++)
		if (strcmp(ibv_get_device_name(list[i]), dev) == 0) {
			found = true;
			ctx = ibv_open_device(list[i]);
			if (!ctx)
				fq_error("NIC %s: ibv_open_device(%s): %s", nic, dev, strerror(errno));
		}
	if (!found)
		fq_error("NIC %s: RDMA device %s is not among the %d verbs device(s) of "
			 "ibv_get_device_list%s",
			 nic, dev, n, n == 0 ? " (no RDMA driver or provider library on this host)" : "");
	ibv_free_device_list(list);
	return ctx;
}

/* Both CQs, with completion timestamps when the device has them. */
static int make_cqs(struct ud *u, const struct ibv_device_attr_ex *dx)
{
	struct ibv_cq_init_attr_ex ca = {.cqe = SEND_SLOTS + RECV_SLOTS,
					 .channel = u->ch,
					 .wc_flags =
					     IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP};

	if (dx->completion_timestamp_mask && dx->hca_core_clock) {
		u->clk.khz = dx->hca_core_clock;
		u->scq_x = ibv_create_cq_ex(u->ctx, &ca);
		u->rcq_x = u->scq_x ? ibv_create_cq_ex(u->ctx, &ca) : NULL;
		if (u->scq_x && u->rcq_x && refresh_clock(u) == 0) {
			u->scq = ibv_cq_ex_to_cq(u->scq_x);
			u->rcq = ibv_cq_ex_to_cq(u->rcq_x);
			return 0;
		}
		fq_warn("NIC %s: %s has completion timestamps but they cannot be used (%s): stamps taken in "
			"the agent instead",
			u->base.nic, u->ib.dev, strerror(errno));
		if (u->scq_x)
			ibv_destroy_cq(ibv_cq_ex_to_cq(u->scq_x));
		if (u->rcq_x)
			ibv_destroy_cq(ibv_cq_ex_to_cq(u->rcq_x));
		u->scq_x = u->rcq_x = NULL;
	}
	u->scq = ibv_create_cq(u->ctx, SEND_SLOTS, NULL, u->ch, 0);
	u->rcq = u->scq ? ibv_create_cq(u->ctx, RECV_SLOTS, NULL, u->ch, 0) : NULL;
	return u->scq && u->rcq ? 0 : -errno;
}

/* RESET -> INIT -> RTR -> RTS: a UD QP needs only its port, pkey and qkey. */
static int qp_ready(struct ud *u)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
				.pkey_index = 0,
				.port_num = (uint8_t)u->ib.port,
				.qkey = FQ_PROBE_UD_QKEY};
	int rc = ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);

	if (rc)
		return -rc;
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR};
	rc = ibv_modify_qp(u->qp, &a, IBV_QP_STATE);
	if (rc)
		return -rc;
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .sq_psn = 0};
	rc = ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return -rc;
}

/* What a failed step says, then the unwinding. */
#define FAIL(what)                                                                                           \
	do {                                                                                                 \
		rc = errno ? -errno : -EIO;                                                                  \
		fq_error("NIC %s: %s on %s port %u: %s", nic, what, ib->dev, ib->port, strerror(-rc));       \
		goto destroy;                                                                                \
	} while (0)

int fq_probe_ud_open(const char *nic, const struct fq_ib_port *ib, struct fq_probe_transport **out)
{
	struct ud *u = calloc(1, sizeof(*u));
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr qa = {
	    .qp_type = IBV_QPT_UD,
	    .sq_sig_all = 1,
	    .cap = {
		.max_send_wr = SEND_SLOTS, .max_recv_wr = RECV_SLOTS, .max_send_sge = 1, .max_recv_sge = 1}};
	size_t bytes = (size_t)(RECV_SLOTS + SEND_SLOTS) * SLOT_BYTES;
	int rc;

	if (!u)
		return -ENOMEM;
	u->ib = *ib;
	snprintf(u->base.nic, sizeof(u->base.nic), "%s", nic);
	errno = 0;
	u->ctx = open_named(nic, ib->dev);
	if (!u->ctx) {
		free(u);
		return -ENODEV;
	}
	errno = 0;
	if (ibv_query_device_ex(u->ctx, NULL, &dx))
		FAIL("ibv_query_device_ex");
	if (ibv_query_port(u->ctx, (uint8_t)ib->port, &pa))
		FAIL("ibv_query_port");
	u->roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	u->lid = pa.lid;
	/* GID 0: the port's link-local GID, the one every port has */
	if (ibv_query_gid(u->ctx, (uint8_t)ib->port, u->sgid_index, &u->gid))
		FAIL("ibv_query_gid");
	u->pd = ibv_alloc_pd(u->ctx);
	if (!u->pd)
		FAIL("ibv_alloc_pd");
	u->ch = ibv_create_comp_channel(u->ctx);
	if (!u->ch || fcntl(u->ch->fd, F_SETFL, fcntl(u->ch->fd, F_GETFL) | O_NONBLOCK) < 0)
		FAIL("completion channel");
	if (make_cqs(u, &dx) < 0)
		FAIL("ibv_create_cq");
	u->mem = aligned_alloc(4096, bytes);
	if (!u->mem)
		FAIL("buffer ring");
	memset(u->mem, 0, bytes);
	u->mr = ibv_reg_mr(u->pd, u->mem, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!u->mr)
		FAIL("ibv_reg_mr");
	qa.send_cq = u->scq;
	qa.recv_cq = u->rcq;
	u->qp = ibv_create_qp(u->pd, &qa);
	if (!u->qp)
		FAIL("ibv_create_qp(UD)");
	rc = qp_ready(u);
	if (rc < 0) {
		errno = -rc;
		FAIL("UD QP to RTS");
	}
	for (unsigned i = 0; i < RECV_SLOTS; i++)
		if ((rc = post_recv(u, i)) < 0) {
			errno = -rc;
			FAIL("ibv_post_recv");
		}
	if (ibv_req_notify_cq(u->scq, 0) || ibv_req_notify_cq(u->rcq, 0))
		FAIL("ibv_req_notify_cq");
	u->base.ops = &ud_ops;
	u->base.kind = "ud";
	u->base.peer_kind = FQ_PEER_UD;
	u->base.rx_stamps = u->base.tx_stamps = u->scq_x ? FQ_STAMP_NIC : FQ_STAMP_USER;
	fq_info("NIC %s: probing over UD on %s port %u (%s, lid %#x, qpn %#x), %s stamps", nic, ib->dev,
		ib->port, u->roce ? "RoCE" : "InfiniBand", u->lid, u->qp->qp_num,
		fq_stamp_kind_name(u->base.rx_stamps));
	*out = &u->base;
	return 0;

destroy:
	ud_destroy(&u->base);
	return rc;
}

#endif /* HAVE_VERBS */
