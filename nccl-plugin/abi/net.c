/*
 * net: the entry points below the ABI adapters (plugin.c): init and fini
 * of the plugin context (ctx.h: settings, NICs, lane driver, clock page,
 * telemetry, rejoin listeners), device properties, listen and connect.
 * The context of the current init lives here alone; everything else gets
 * it handed down (a listener, a comm keeps the one it was made under).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock_page.h"
#include "common/path_page.h"
#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/net.h"
#include "nccl-plugin/core/progress.h"
#include "nccl-plugin/core/rejoin.h"
#include "nccl-plugin/core/setup.h"
#include "nccl-plugin/lanes/lane_drv.h"
#include "nccl-plugin/plog.h"
#include "nccl-plugin/telemetry/telemetry.h"

static struct fqn_ctx *fqn_g; /* valid between the first fqn_init and the last fqn_fini */
static struct fqn_ctx fqn_global_storage;
static pthread_mutex_t fqn_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int fqn_refs;

static const char *fqn_env_lookup(const char *name)
{
	return getenv(name);
}

static void init_log_nics(const struct fqn_ctx *g)
{
	for (int i = 0; i < g->nnics; i++) {
		const struct fqn_nic *n = &g->nics[i];
		char abuf[64];

		FQN_INFO("device %d: %s %s%s, %d Mbps%s, pci %s", i, n->name,
			 fqn_sockaddr_str((const struct sockaddr *)&n->addr, abuf, sizeof(abuf)),
			 n->rdma ? " (RDMA)" : "", n->speed_mbps,
			 n->speed_from_sysfs ? "" : " (speed unknown in sysfs: assumed)",
			 n->pci_path ? n->pci_path : "none (virtual)");
	}
}

/* FABRICIQ_TRANSPORT=auto: g->drv is the first of fqn_lane_drivers whose
 * devices open, else the last (TCP), said at INFO with the reason once
 * its NICs are open. 0, or a negative errno (WARN). */
static int init_transport_auto(struct fqn_ctx *g)
{
	const struct fqn_lane_driver *const *d;
	const char *why = "";
	char err[256], reason[256];
	int rc;

	for (d = fqn_lane_drivers; d[1]; d++) {
		if ((*d)->devices(&why) == 0)
			continue;
		if ((*d)->open(&g->cfg, g->nics, &g->nnics, err, sizeof(err)) == 0) {
			g->drv = *d;
			return 0;
		}
		snprintf(reason, sizeof(reason), "%s", err);
		why = reason;
	}
	g->drv = *d;
	rc = g->drv->open(&g->cfg, g->nics, &g->nnics, err, sizeof(err));
	if (rc < 0)
		FQN_WARN("%s", err);
	else
		FQN_INFO("FABRICIQ_TRANSPORT=auto: %s lanes (%s)", g->drv->label, why);
	return rc;
}

/* FABRICIQ_TRANSPORT: the lane driver into g->drv (auto resolved; then
 * cfg.transport is its name) with its devices open on the NICs (WARN if
 * not). A transport with devices of its own and none usable fails init
 * (NCCL then falls back to its own transports, visibly). 0 or a negative
 * errno, nothing left open. */
static int init_transport(struct fqn_ctx *g)
{
	const struct fqn_lane_driver *d;
	const char *why = "";
	char err[256];
	int rc;

	if (strcmp(g->cfg.transport, "auto") == 0) {
		rc = init_transport_auto(g);
		snprintf(g->cfg.transport, sizeof(g->cfg.transport), "%s", g->drv->name);
		return rc;
	}
	d = fqn_lane_driver_named(g->cfg.transport);
	if (!d)
		return -EINVAL; /* env.c accepts none other */
	g->drv = d;
	if (d->devices && d->devices(&why) == 0) {
		FQN_WARN("FABRICIQ_TRANSPORT=%s but no usable RDMA device: %s; the plugin does not load (set "
			 "FABRICIQ_TRANSPORT=tcp or auto)",
			 d->name, why);
		return -ENODEV;
	}
	rc = d->open(&g->cfg, g->nics, &g->nnics, err, sizeof(err));
	if (rc < 0)
		FQN_WARN("%s", err);
	else if (d->gdr_loaded && d->gdr_loaded())
		FQN_INFO("GPUDirect RDMA is loaded, but %s lanes copy through host memory: "
			 "reporting NCCL_PTR_HOST only",
			 d->label);
	return rc;
}

struct fqn_ctx *fqn_context(void)
{
	return __atomic_load_n(&fqn_g, __ATOMIC_ACQUIRE);
}

int fqn_reg_mr(void *data, size_t size, int dev, void **mh)
{
	const struct fqn_lane_driver *d = fqn_g ? fqn_g->drv : NULL;
	int rc;

	if (!d || !d->mr_reg)
		return 0;
	rc = d->mr_reg(dev, data, size, mh);
	return rc < 0 ? rc : 1;
}

int fqn_dereg_mr(void *mh)
{
	const struct fqn_lane_driver *d = fqn_g ? fqn_g->drv : NULL;

	return d && d->mr_dereg ? d->mr_dereg(mh) : -EINVAL;
}

int fqn_comm_device(const void *comm)
{
	return ((const struct fqn_comm *)comm)->dev; /* fqn_send and fqn_recv start with it */
}

int fqn_listen(int dev, void *handle, struct fqn_listen **out)
{
	*out = NULL;
	return fqn_g ? fqn_setup_listen(fqn_g, dev, handle, out) : -EINVAL;
}

int fqn_connect(int dev, void *handle, struct fqn_send **out)
{
	*out = NULL;
	return fqn_g ? fqn_setup_connect(fqn_g, dev, handle, out) : -EINVAL;
}

static int init_once(struct fqn_ctx *g)
{
	char err[256];
	int rc;

	rc = fqn_config_load(&g->cfg, fqn_env_lookup, err, sizeof(err));
	if (rc < 0) {
		FQN_WARN("bad environment: %s; see libnccl-net-fabriciq(7)", err);
		return rc;
	}
	/* our rank, for telemetry that names both ends of a lane: the SPANK
	 * plugin's FABRICIQ_RANK, else Slurm's (a launcher without either
	 * leaves it unknown) */
	{
		const char *r = *g->cfg.rank ? g->cfg.rank : getenv("SLURM_PROCID");
		char *end;
		unsigned long v = r && *r ? strtoul(r, &end, 10) : 0;

		g->rank1 = r && *r && !*end && v < 1000000000 ? (uint32_t)v + 1 : 0;
	}
	rc = init_transport(g);
	if (rc < 0)
		return rc;
	fqn_idle_init(&g->idle);
	rc = fq_clock_page_reader_open(g->cfg.clock_page, &g->clock);
	if (rc < 0) {
		g->clock = NULL;
		FQN_INFO("no clock page at %s (%s): chunk stamps are local, delays unsynchronised",
			 g->cfg.clock_page, strerror(-rc));
	}
	if (g->cfg.telemetry) {
		rc = fqn_telemetry_start(g->cfg.agent_socket, g->cfg.telemetry_interval_ms, &g->telemetry);
		if (rc < 0) {
			FQN_WARN("cannot start the telemetry thread: %s; running without telemetry",
				 strerror(-rc));
			g->telemetry = NULL;
		}
	}
	if (g->cfg.control) {
		rc = fqn_rejoin_create(g, &g->rejoin);
		if (rc < 0) {
			FQN_WARN("control mode: %s", strerror(-rc));
			fqn_telemetry_stop(g->telemetry);
			fq_clock_page_reader_close(g->clock);
			g->drv->close(g->nics, g->nnics);
			return rc;
		}
		/* a peer's send waits for our acks even while NCCL calls nothing here */
		rc = fqn_progress_start(g);
		if (rc < 0)
			FQN_WARN("control mode: cannot start the progress thread (%s): an idle "
				 "receiver acks only when NCCL calls the plugin",
				 strerror(-rc));
		rc = fq_path_page_reader_open(g->cfg.path_page, &g->paths);
		if (rc < 0) {
			g->paths = NULL;
			FQN_INFO("control mode: no path page at %s (%s): failover on socket errors and "
				 "timeouts only, until it appears",
				 g->cfg.path_page, strerror(-rc));
		}
	}
	init_log_nics(g);
	FQN_INFO("%d device(s), %d %s lane(s) per connection, %zu-byte chunks, %s mode%s", g->nnics,
		 g->cfg.lanes, g->cfg.transport, g->cfg.chunk_size, g->cfg.mode,
		 g->cfg.control ? " (acked chunks, failover, failback)" : "");
	return 0;
}

int fqn_init(ncclDebugLogger_t logger)
{
	int rc = 0;

	if (logger)
		fqn_log_set_logger(logger);
	pthread_mutex_lock(&fqn_init_lock);
	if (fqn_refs == 0) {
		memset(&fqn_global_storage, 0, sizeof(fqn_global_storage));
		rc = init_once(&fqn_global_storage);
		if (rc == 0)
			__atomic_store_n(&fqn_g, &fqn_global_storage, __ATOMIC_RELEASE);
	}
	if (rc == 0)
		fqn_refs++;
	pthread_mutex_unlock(&fqn_init_lock);
	return rc;
}

void fqn_fini(void)
{
	pthread_mutex_lock(&fqn_init_lock);
	if (fqn_refs > 0 && --fqn_refs == 0) {
		struct fqn_ctx *g = fqn_g;

		__atomic_store_n(&fqn_g, NULL, __ATOMIC_RELEASE);
		fqn_progress_stop(g);
		fqn_telemetry_stop(g->telemetry);
		fq_clock_page_reader_close(g->clock);
		if (g->paths)
			fq_path_page_reader_close(g->paths);
		fqn_rejoin_destroy(g->rejoin);
		g->drv->close(g->nics, g->nnics);
	}
	pthread_mutex_unlock(&fqn_init_lock);
}

/* NCCL before 2.27 (net API v8-v10) never finalizes a net plugin: the
 * process exits with the last telemetry interval, failovers among it,
 * still in the ring. At exit, have the thread send it (bounded: an exit
 * is never held up for long). */
__attribute__((destructor)) static void fqn_exit_flush(void)
{
	struct fqn_ctx *g = __atomic_load_n(&fqn_g, __ATOMIC_ACQUIRE);

	if (g)
		fqn_telemetry_flush(g->telemetry, 200);
}

int fqn_devices(int *ndev)
{
	if (!fqn_g)
		return -EINVAL;
	*ndev = fqn_g->nnics;
	return 0;
}

int fqn_get_properties(int dev, struct fqn_props *p)
{
	const struct fqn_nic *n;

	if (!fqn_g || dev < 0 || dev >= fqn_g->nnics)
		return -EINVAL;
	n = &fqn_g->nics[dev];
	p->name = n->name;
	p->pci_path = n->pci_path;
	p->guid = n->guid;
	p->speed_mbps = n->speed_mbps;
	p->port = 1;
	p->max_comms = 65536;
	p->max_recvs = FQN_MAX_RECVS;
	p->rail = dev;
	return 0;
}

enum fqn_err_class fqn_errno_to_class(int negerr)
{
	switch (-negerr) {
	case ECONNRESET:
	case EBADMSG:
	case EPROTO:
		return FQN_ERR_REMOTE;
	case EINVAL:
	case EMSGSIZE:
	case ENOTSUP:
		return FQN_ERR_USAGE;
	default:
		return FQN_ERR_SYSTEM;
	}
}
