/* ib_dev: verbs devices and the verbs io of IB lanes (see ib_dev.h, ib_lane.h). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/lanes/ib/ib_dev.h"
#include "nccl-plugin/lanes/ib/ib_lane.h"
#include "nccl-plugin/lanes/lane_drv.h"
#include "nccl-plugin/plog.h"

#ifdef HAVE_VERBS
#include <endian.h>
#include <infiniband/verbs.h>

#include "nccl-plugin/ib_sysfs.h"
#include "nccl-plugin/lanes/ib/ib_mr.h"
#include "nccl-plugin/lanes/ib/ib_qp.h"
#include "nccl-plugin/lanes/ib/ib_verbs.h"

_Static_assert(FQIB_WC_WR_FLUSH_ERR == IBV_WC_WR_FLUSH_ERR, "wc status numbers");
_Static_assert(FQIB_WC_RETRY_EXC_ERR == IBV_WC_RETRY_EXC_ERR, "wc status numbers");
_Static_assert(FQIB_WC_RNR_RETRY_EXC_ERR == IBV_WC_RNR_RETRY_EXC_ERR, "wc status numbers");

/* One plugin NIC's verbs port. */
struct fqib_vdev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct fqib_mr_cache *mrs;
	char name[64];
	int port, link, gid_index, gid_type, lid;
	enum ibv_mtu mtu;
	uint8_t gid[16];
	uint64_t hca_khz; /* completion timestamps: device clock; 0 = none */
	struct fqib_qp_cfg qcfg;
};

static struct fqib_vdev fqib_vdevs[FQN_MAX_NICS];
static int fqib_nvdevs;

/* ibv_query_device_ex() without its fallback to the linked symbol. */
static int query_device_ex(struct ibv_context *ctx, struct ibv_device_attr_ex *dx)
{
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_device_ex);

	return vctx ? vctx->query_device_ex(ctx, NULL, dx, sizeof(*dx)) : -EOPNOTSUPP;
}

static int devs_count(const char **why)
{
	struct ibv_device **list;
	int n = 0, ndev = 0;

	if (fqib_verbs_load(why) < 0)
		return 0;
	list = fqib_v.get_device_list(&ndev);
	if (!list) {
		*why = "ibv_get_device_list returned none (no RDMA support in the kernel)";
		return 0;
	}
	for (int i = 0; i < ndev; i++) {
		struct ibv_context *ctx = fqib_v.open_device(list[i]);
		struct ibv_device_attr da;
		int active = 0;

		if (!ctx)
			continue;
		if (fqib_v.query_device(ctx, &da) == 0)
			for (int p = 1; p <= da.phys_port_cnt; p++) {
				struct ibv_port_attr pa;
				if (fqib_v.query_port(ctx, (uint8_t)p, &pa) == 0 &&
				    pa.state == IBV_PORT_ACTIVE)
					active = 1;
			}
		fqib_v.close_device(ctx);
		n += active;
	}
	fqib_v.free_device_list(list);
	*why = ndev == 0 ? "ibv_get_device_list returned none" : n == 0 ? "no RDMA port is ACTIVE" : "";
	return n;
}

static int mr_reg_cb(void *ctx, void *addr, size_t len, void **mr, uint32_t *lkey, uint32_t *rkey)
{
	struct ibv_mr *m = fqib_v.reg_mr(
	    ctx, addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);

	if (!m)
		return errno ? -errno : -EIO;
	*mr = m;
	*lkey = m->lkey;
	*rkey = m->rkey;
	return 0;
}

static void mr_dereg_cb(void *ctx, void *mr)
{
	(void)ctx;
	fqib_v.dereg_mr(mr);
}

/* Does the plugin NIC `nic` sit on port p of device d? */
static int nic_on_port(const struct fqn_nic *nic, const struct fqib_dev *d, const struct fqib_port *p)
{
	char path[192];

	if (p->link == FQIB_LINK_ETH) {
		for (int g = 0; g < p->ngids; g++)
			if (strcmp(p->gids[g].ndev, nic->name) == 0)
				return 1;
		return 0;
	}
	if ((size_t)snprintf(path, sizeof(path), "/sys/class/net/%s/device/infiniband/%s", nic->name,
			     d->name) >= sizeof(path))
		return 0;
	return access(path, F_OK) == 0;
}

static int vdev_open(const struct fqn_config *cfg, struct fqn_nic *nic, struct ibv_device **list, int ndev,
		     const struct fqib_dev *sd, int nsd, struct fqib_vdev *v)
{
	for (int i = 0; i < nsd; i++)
		for (int k = 0; k < sd[i].nports; k++) {
			const struct fqib_port *p = &sd[i].ports[k];
			struct ibv_device_attr_ex dx;
			struct ibv_port_attr pa;
			const char *why;
			int gi, speed;

			if (p->state != 4 || !nic_on_port(nic, &sd[i], p))
				continue;
			gi = fqib_gid_select(p, (const struct sockaddr *)&nic->addr, nic->name,
					     cfg->ib_gid_index, &why);
			if (gi < 0) {
				FQN_WARN("%s: %s port %d: %s", nic->name, sd[i].name, p->num, why);
				continue;
			}
			memset(v, 0, sizeof(*v));
			for (int j = 0; j < ndev && !v->ctx; j++)
				if (strcmp(fqib_v.get_device_name(list[j]), sd[i].name) == 0)
					v->ctx = fqib_v.open_device(list[j]);
			if (!v->ctx || fqib_v.query_port(v->ctx, (uint8_t)p->num, &pa) != 0) {
				if (v->ctx)
					fqib_v.close_device(v->ctx);
				continue;
			}
			v->pd = fqib_v.alloc_pd(v->ctx);
			if (!v->pd ||
			    fqib_mr_cache_create(mr_reg_cb, mr_dereg_cb, v->pd, 1024, 0, &v->mrs) < 0) {
				if (v->pd)
					fqib_v.dealloc_pd(v->pd);
				fqib_v.close_device(v->ctx);
				continue;
			}
			snprintf(v->name, sizeof(v->name), "%s", sd[i].name);
			v->port = p->num;
			v->link = p->link;
			v->gid_index = p->gids[gi].index;
			v->gid_type = p->gids[gi].type;
			memcpy(v->gid, p->gids[gi].raw, 16);
			v->lid = pa.lid;
			v->mtu = pa.active_mtu;
			memset(&dx, 0, sizeof(dx));
			if (query_device_ex(v->ctx, &dx) == 0 && dx.completion_timestamp_mask)
				v->hca_khz = dx.hca_core_clock;
			v->qcfg = (struct fqib_qp_cfg){.port = p->num,
						       .gid_index = v->gid_index,
						       .timeout = cfg->ib_timeout,
						       .retry_cnt = cfg->ib_retry_cnt,
						       .rnr_retry = 7,
						       .sl = cfg->ib_sl,
						       .tc = cfg->tclass >= 0 ? cfg->tclass : cfg->ib_tc};
			if (fqib_speed_mbps(pa.active_width, pa.active_speed, &speed) == 0) {
				nic->speed_mbps = speed;
				nic->speed_from_sysfs = 1;
			}
			nic->guid = sd[i].node_guid;
			if (sd[i].pci_path) {
				free(nic->pci_path);
				nic->pci_path = strdup(sd[i].pci_path);
			}
			nic->rdma = 1;
			FQN_INFO("%s: verbs device %s port %d (%s), GID index %d (%s, %s), %d Mbps%s",
				 nic->name, v->name, v->port, fqib_link_name(p->link), v->gid_index,
				 fqib_gid_type_name(p->gids[gi].type), why, nic->speed_mbps,
				 v->hca_khz ? ", completion timestamps" : "");
			return 0;
		}
	return -ENODEV;
}

static int devs_open(const struct fqn_config *cfg, struct fqn_nic *nics, int *n, char *err, size_t errlen)
{
	static struct fqib_dev sd[FQIB_MAX_DEVS];
	struct ibv_device **list;
	int ndev = 0, nsd, kept = 0;
	const char *why;

	if (fqib_verbs_load(&why) < 0) {
		snprintf(err, errlen, "FABRICIQ_TRANSPORT=ib: %s", why);
		return -ENODEV;
	}
	list = fqib_v.get_device_list(&ndev);
	if (!list || ndev == 0) {
		snprintf(err, errlen,
			 "FABRICIQ_TRANSPORT=ib: no RDMA device (ibv_get_device_list returned none)");
		if (list)
			fqib_v.free_device_list(list);
		return -ENODEV;
	}
	nsd = fqib_sysfs_scan(FQIB_SYSFS_ROOT, sd, FQIB_MAX_DEVS);
	for (int i = 0; i < *n; i++) {
		if (vdev_open(cfg, &nics[i], list, ndev, sd, nsd > 0 ? nsd : 0, &fqib_vdevs[kept]) < 0) {
			FQN_INFO("%s: no ACTIVE RDMA port carries it; not an IB device", nics[i].name);
			fqn_nics_release(&nics[i], 1);
			continue;
		}
		if (kept != i)
			nics[kept] = nics[i];
		kept++;
	}
	fqib_sysfs_release(sd, nsd > 0 ? nsd : 0);
	fqib_v.free_device_list(list);
	*n = kept;
	fqib_nvdevs = kept;
	if (!kept) {
		snprintf(err, errlen,
			 "FABRICIQ_TRANSPORT=ib: no network interface sits on an ACTIVE RDMA port with a "
			 "usable GID "
			 "(set FABRICIQ_IFACES to the RDMA netdevs, or FABRICIQ_TRANSPORT=tcp)");
		return -ENODEV;
	}
	return 0;
}

static void devs_close(void)
{
	for (int i = 0; i < fqib_nvdevs; i++) {
		fqib_mr_cache_destroy(fqib_vdevs[i].mrs);
		fqib_v.dealloc_pd(fqib_vdevs[i].pd);
		fqib_v.close_device(fqib_vdevs[i].ctx);
	}
	memset(fqib_vdevs, 0, sizeof(fqib_vdevs));
	fqib_nvdevs = 0;
}

int fqib_mr_reg(int dev, void *data, size_t size, void **mh)
{
	struct fqib_mr *m;
	int rc;

	if (dev < 0 || dev >= fqib_nvdevs)
		return -EINVAL;
	rc = fqib_mr_get(fqib_vdevs[dev].mrs, data, size ? size : 1, &m);
	if (rc == 0)
		*mh = m;
	return rc;
}

int fqib_mr_dereg(void *mh)
{
	for (int i = 0; i < fqib_nvdevs; i++)
		if (fqib_mr_put(fqib_vdevs[i].mrs, mh) == 0)
			return 0;
	return -EINVAL;
}

int fqib_gdr_available(void)
{
	/* nvidia-peermem (or the older nv_peer_mem) lets the HCA reach GPU memory */
	return access("/sys/module/nvidia_peermem", F_OK) == 0 ||
	       access("/sys/module/nv_peer_mem", F_OK) == 0;
}

/* ---- the verbs io of one lane ---- */

struct fqib_vio {
	struct fqib_vdev *dev;
	struct ibv_cq *cq;
	struct ibv_cq_ex *cqx; /* with completion timestamps; NULL: plain cq */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint32_t psn;
	struct fqib_clock_ref clk;
};

/* Pair the device clock with CLOCK_MONOTONIC_RAW (re-done every second:
 * the two oscillators drift apart by ppm). */
static void clock_sample(struct fqib_vio *v)
{
	struct ibv_values_ex vals = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
	int64_t a = fq_now_ns(), b;

	if (ibv_query_rt_values_ex(v->dev->ctx, &vals) != 0)
		return;
	b = fq_now_ns();
	v->clk.cycles = (uint64_t)vals.raw_clock.tv_sec * 1000000000ULL + (uint64_t)vals.raw_clock.tv_nsec;
	v->clk.raw_ns = a + (b - a) / 2;
	v->clk.khz = v->dev->hca_khz;
}

static int vio_reg(void *io, void *buf, size_t len, uint32_t *rkey)
{
	struct fqib_vio *v = io;

	v->mr = fqib_v.reg_mr(v->dev->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!v->mr)
		return errno ? -errno : -EIO;
	*rkey = v->mr->rkey;
	return 0;
}

static void vio_local(void *io, struct fqib_handle *h)
{
	struct fqib_vio *v = io;

	memset(h, 0, sizeof(*h));
	h->link = (uint8_t)v->dev->link;
	h->gid_type = (uint8_t)v->dev->gid_type;
	h->mtu = (uint8_t)v->dev->mtu;
	h->port = (uint8_t)v->dev->port;
	h->lid = (uint16_t)v->dev->lid;
	h->qpn = v->qp->qp_num;
	h->psn = v->psn;
	memcpy(h->gid, v->dev->gid, 16);
}

static int vio_connect(void *io, const struct fqib_handle *remote, char *why, size_t whylen)
{
	struct fqib_vio *v = io;
	struct fqib_handle local;
	struct ibv_qp_attr a;
	int mask, rc;

	vio_local(v, &local);
	rc = fqib_qp_rtr_attr(&v->dev->qcfg, &local, remote, &a, &mask, why, whylen);
	if (rc < 0)
		return rc;
	rc = fqib_v.modify_qp(v->qp, &a, mask);
	if (rc) {
		snprintf(why, whylen, "ibv_modify_qp to RTR: %s", strerror(rc));
		return -rc;
	}
	fqib_qp_rts_attr(&v->dev->qcfg, &local, &a, &mask);
	rc = fqib_v.modify_qp(v->qp, &a, mask);
	if (rc) {
		snprintf(why, whylen, "ibv_modify_qp to RTS: %s", strerror(rc));
		return -rc;
	}
	return 0;
}

static int vio_post_recv(void *io, uint64_t wr_id, void *buf, uint32_t len)
{
	struct fqib_vio *v = io;
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = v->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	return -ibv_post_recv(v->qp, &wr, &bad);
}

static int vio_post_send(void *io, uint64_t wr_id, const void *buf, uint32_t len, uint32_t imm)
{
	struct fqib_vio *v = io;
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = v->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = htobe32(imm)},
			   *bad;

	return -ibv_post_send(v->qp, &wr, &bad);
}

static void wc_from_ex(struct fqib_vio *v, struct fqib_wc *w)
{
	struct ibv_cq_ex *c = v->cqx;

	w->wr_id = c->wr_id;
	w->status = c->status;
	w->op = ibv_wc_read_opcode(c) & IBV_WC_RECV ? FQIB_OP_RECV : FQIB_OP_SEND;
	w->byte_len = w->status == IBV_WC_SUCCESS && w->op == FQIB_OP_RECV ? ibv_wc_read_byte_len(c) : 0;
	w->imm = w->status == IBV_WC_SUCCESS && w->op == FQIB_OP_RECV ? be32toh(ibv_wc_read_imm_data(c)) : 0;
	w->ts_ns = fqib_cycles_to_ns(&v->clk, ibv_wc_read_completion_ts(c));
}

static int vio_poll(void *io, struct fqib_wc *wc, int max)
{
	struct fqib_vio *v = io;
	struct ibv_poll_cq_attr pa = {0};
	int n = 0, rc;

	if (!v->cqx) {
		struct ibv_wc w[16];

		rc = ibv_poll_cq(v->cq, max < 16 ? max : 16, w);
		if (rc < 0)
			return -EIO;
		for (int i = 0; i < rc; i++)
			wc[i] =
			    (struct fqib_wc){.wr_id = w[i].wr_id,
					     .status = w[i].status,
					     .op = w[i].opcode & IBV_WC_RECV ? FQIB_OP_RECV : FQIB_OP_SEND,
					     .byte_len = w[i].byte_len,
					     .imm = be32toh(w[i].imm_data)};
		return rc;
	}
	if (fq_now_ns() - v->clk.raw_ns > 1000000000)
		clock_sample(v);
	rc = ibv_start_poll(v->cqx, &pa);
	if (rc == ENOENT)
		return 0;
	if (rc)
		return -rc;
	do {
		wc_from_ex(v, &wc[n++]);
	} while (n < max && ibv_next_poll(v->cqx) == 0);
	ibv_end_poll(v->cqx);
	return n;
}

static void vio_destroy(void *io)
{
	struct fqib_vio *v = io;

	if (v->qp)
		fqib_v.destroy_qp(v->qp);
	if (v->mr)
		fqib_v.dereg_mr(v->mr);
	if (v->cq)
		fqib_v.destroy_cq(v->cq);
	free(v);
}

/* IBV_QP_RATE_LIMIT on the RTS QP: RTS -> RTS with the new limit. */
static int vio_rate(void *io, uint32_t kbps)
{
	struct fqib_vio *v = io;
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.rate_limit = kbps;
	return -fqib_v.modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT);
}

static const struct fqib_io_ops fqib_vio_ops = {vio_reg,       vio_local, vio_connect, vio_post_recv,
						vio_post_send, vio_poll,  vio_destroy, vio_rate};

static int vio_create(int nic, struct fqib_vio **out)
{
	struct fqib_vio *v;
	struct ibv_qp_init_attr qa = {0};
	struct ibv_qp_attr a;
	int depth = FQIB_DATA_SLOTS + FQIB_SMALL_SLOTS + 8, mask, rc;

	if (nic < 0 || nic >= fqib_nvdevs)
		return -ENODEV;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->dev = &fqib_vdevs[nic];
	if (v->dev->hca_khz) {
		struct ibv_cq_init_attr_ex cx = {.cqe = (uint32_t)(2 * depth),
						 .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
							     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP};
		v->cqx = ibv_create_cq_ex(v->dev->ctx, &cx);
		if (v->cqx) {
			v->cq = ibv_cq_ex_to_cq(v->cqx);
			clock_sample(v);
		}
	}
	if (!v->cq)
		v->cq = fqib_v.create_cq(v->dev->ctx, 2 * depth, NULL, NULL, 0);
	if (!v->cq) {
		rc = errno ? -errno : -ENOMEM;
		goto err;
	}
	qa.send_cq = qa.recv_cq = v->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = (uint32_t)depth;
	qa.cap.max_recv_wr = (uint32_t)depth;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	v->qp = fqib_v.create_qp(v->dev->pd, &qa);
	if (!v->qp) {
		rc = errno ? -errno : -ENOMEM;
		goto err;
	}
	fqib_qp_init_attr(&v->dev->qcfg, &a, &mask);
	rc = -fqib_v.modify_qp(v->qp, &a, mask);
	if (rc < 0)
		goto err;
	if (getrandom(&v->psn, sizeof(v->psn), GRND_NONBLOCK) != sizeof(v->psn))
		v->psn = (uint32_t)fq_now_ns();
	v->psn &= 0xffffff;
	*out = v;
	return 0;
err:
	vio_destroy(v);
	return rc;
}

/* The verbs io of a new lane on plugin NIC nic. */
static int io_new(int nic, const struct fqib_io_ops **ops, void **io)
{
	struct fqib_vio *v;
	int rc = vio_create(nic, &v);

	if (rc == 0) {
		*ops = &fqib_vio_ops;
		*io = v;
	}
	return rc;
}

#else /* !HAVE_VERBS */

static int devs_count(const char **why)
{
	*why = "built without verbs (--without-verbs)";
	return 0;
}

static int devs_open(const struct fqn_config *cfg, struct fqn_nic *nics, int *n, char *err, size_t errlen)
{
	(void)cfg;
	(void)nics;
	(void)n;
	snprintf(err, errlen, "FABRICIQ_TRANSPORT=ib: this plugin was built without verbs (--without-verbs)");
	return -ENOTSUP;
}

static void devs_close(void)
{
}

int fqib_mr_reg(int dev, void *data, size_t size, void **mh)
{
	(void)dev;
	(void)data;
	(void)size;
	(void)mh;
	return -ENOTSUP;
}

int fqib_mr_dereg(void *mh)
{
	(void)mh;
	return -ENOTSUP;
}

int fqib_gdr_available(void)
{
	return 0;
}

static int io_new(int nic, const struct fqib_io_ops **ops, void **io)
{
	(void)nic;
	(void)ops;
	(void)io;
	return -ENOTSUP;
}

#endif /* HAVE_VERBS */

static fqib_io_factory io_factory; /* tests: a fake device */

void fqib_set_io_factory(fqib_io_factory f)
{
	io_factory = f;
}

int fqib_devs_count(const char **why)
{
	*why = "";
	return io_factory ? 1 : devs_count(why);
}

int fqib_devs_open(const struct fqn_config *cfg, struct fqn_nic *nics, int *n, char *err, size_t errlen)
{
	return io_factory ? 0 : devs_open(cfg, nics, n, err, errlen);
}

void fqib_devs_close(void)
{
	if (!io_factory)
		devs_close();
}

static int ib_lane_new(int nic, int sender, int fd, size_t chunk_size, struct fqn_lane **out)
{
	const struct fqib_io_ops *ops;
	void *io;
	int rc = io_factory ? io_factory(nic, &ops, &io) : io_new(nic, &ops, &io);

	if (rc < 0) {
		close(fd);
		return rc;
	}
	rc = fqn_lane_ib_create(ops, io, sender, chunk_size, fd, out);
	if (rc == 0)
		(*out)->nic = nic;
	return rc;
}

int fqn_lane_ib_connect(int nic, const struct sockaddr *local, const struct sockaddr *remote,
			size_t chunk_size, struct fqn_lane **out)
{
	socklen_t len =
	    remote->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd, one = 1, rc;
	char peer[64];

	fd = socket(remote->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((local && bind(fd, local, len) < 0) || (connect(fd, remote, len) < 0 && errno != EINPROGRESS)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	fqn_sockaddr_str(remote, peer, sizeof(peer));
	rc = ib_lane_new(nic, 1, fd, chunk_size, out);
	if (rc == 0)
		snprintf((*out)->peer, sizeof((*out)->peer), "%s", peer);
	return rc;
}

int fqn_lane_ib_adopt(int nic, int fd, size_t chunk_size, const uint8_t peer_handle[FQIB_HANDLE_SIZE],
		      struct fqn_lane **out)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char peer[64] = "?", local[64] = "?";
	int rc;

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		fqn_sockaddr_str((struct sockaddr *)&ss, peer, sizeof(peer));
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		fqn_sockaddr_str((struct sockaddr *)&ss, local, sizeof(local));
	rc = ib_lane_new(nic, 0, fd, chunk_size, out);
	if (rc < 0)
		return rc;
	snprintf((*out)->peer, sizeof((*out)->peer), "%s", peer);
	snprintf((*out)->local, sizeof((*out)->local), "%s", local);
	rc = fqn_lane_ib_accept(*out, peer_handle);
	if (rc < 0) {
		(*out)->ops->destroy(*out);
		*out = NULL;
	}
	return rc;
}

static int ib_dial(const struct fqn_config *cfg, const struct fqn_nic *nics, int nnics, int nic,
		   const struct sockaddr *local, const struct sockaddr *remote, int keepalive_ms,
		   struct fqn_lane **out)
{
	(void)keepalive_ms;
	if (local)
		nic = fqn_nic_of_addr(nics, nnics, (const struct sockaddr_storage *)local, nic);
	/* the TCP connection becomes the QP's side channel */
	return fqn_lane_ib_connect(nic, local, remote, cfg->chunk_size, out);
}

static int ib_accept(const struct fqn_config *cfg, const struct fqn_nic *nics, int nnics, int nic, int fd,
		     size_t chunk_size, int keepalive_ms, const uint8_t *after_hello, struct fqn_lane **out)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	(void)cfg, (void)keepalive_ms;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		nic = fqn_nic_of_addr(nics, nnics, &ss, nic);
	return fqn_lane_ib_adopt(nic, fd, chunk_size, after_hello, out);
}

_Static_assert(FQIB_HANDLE_SIZE <= FQN_HELLO_EXTRA_MAX, "the QP handle must fit behind a hello");

/* The NICs, then their verbs ports (fqib_devs_open). */
static int ib_open(const struct fqn_config *cfg, struct fqn_nic *nics, int *n, char *err, size_t errlen)
{
	int rc = fqn_nics_discover(cfg->ifaces, nics, n, err, errlen);

	if (rc < 0)
		return rc;
	rc = fqib_devs_open(cfg, nics, n, err, errlen);
	if (rc < 0)
		fqn_nics_release(nics, *n);
	return rc;
}

static void ib_close(struct fqn_nic *nics, int n)
{
	fqib_devs_close();
	fqn_nics_release(nics, n);
}

const struct fqn_lane_driver fqn_lane_driver_ib = {
    .name = "ib",
    .label = "IB",
    .handle_flags = FQN_LANE_DRV_F_IB,
    .hello_extra = FQIB_HANDLE_SIZE,
    .nic_from_address = 1,
    .dial = ib_dial,
    .accept = ib_accept,
    .devices = fqib_devs_count,
    .open = ib_open,
    .close = ib_close,
    .gdr_loaded = fqib_gdr_available,
    .mr_reg = fqib_mr_reg,
    .mr_dereg = fqib_mr_dereg,
};
