/*
 * net: the plugin's global context (settings, NICs, clock page), device
 * properties, and what every comm shares: failure reporting and release.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock_page.h"
#include "common/path_page.h"
#include "nccl-plugin/conn.h"
#include "nccl-plugin/ib_dev.h"
#include "nccl-plugin/plog.h"
#include "nccl-plugin/rejoin.h"
#include "nccl-plugin/telemetry.h"

struct fqn_global *fqn_g;
static struct fqn_global fqn_global_storage;
static pthread_mutex_t fqn_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int fqn_refs;

static const char *fqn_env_lookup(const char *name)
{
	return getenv(name);
}

static int64_t ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t fqn_clock_at(int64_t raw, int *sync)
{
	struct fq_clock_model m;
	int64_t now = ns_of(CLOCK_MONOTONIC_RAW);

	if (raw == 0)
		raw = now;
	if (fqn_g && fqn_g->clock && fq_clock_page_read(fqn_g->clock, raw, &m) == 0) {
		*sync = 1;
		return fq_clock_model_global(&m, raw);
	}
	/* No valid page (not yet published, or stale): the local real time,
	 * so that a report's times stay times even when its delays cannot
	 * be measured. */
	*sync = 0;
	return raw + (ns_of(CLOCK_REALTIME) - now);
}

int64_t fqn_clock_now(int *sync)
{
	return fqn_clock_at(0, sync);
}

static void init_log_nics(const struct fqn_global *g)
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

/* FABRICIQ_TRANSPORT: resolve auto, open the verbs devices for ib. After
 * this, cfg.transport is "tcp" or "ib". ib without a usable device fails
 * init (NCCL then falls back to its own transports, visibly). */
static int init_transport(struct fqn_global *g)
{
	const char *why = "";
	char err[256];
	int rc;

	if (strcmp(g->cfg.transport, "auto") == 0) {
		if (fqib_devs_count(&why) == 0) {
			FQN_INFO("FABRICIQ_TRANSPORT=auto: TCP lanes (%s)", why);
			strcpy(g->cfg.transport, "tcp");
			return 0;
		}
		rc = fqib_devs_open(&g->cfg, g->nics, &g->nnics, err, sizeof(err));
		if (rc == 0) {
			strcpy(g->cfg.transport, "ib");
			return 0;
		}
		FQN_INFO("FABRICIQ_TRANSPORT=auto: TCP lanes (%s)", err);
		strcpy(g->cfg.transport, "tcp");
		fqn_nics_release(g->nics, g->nnics);
		return fqn_nics_discover(g->cfg.ifaces, g->nics, &g->nnics, err, sizeof(err));
	}
	if (strcmp(g->cfg.transport, "ib") != 0)
		return 0;
	if (fqib_devs_count(&why) == 0) {
		FQN_WARN("FABRICIQ_TRANSPORT=ib but no usable RDMA device: %s; the plugin does not load (set "
			 "FABRICIQ_TRANSPORT=tcp or auto)",
			 why);
		return -ENODEV;
	}
	rc = fqib_devs_open(&g->cfg, g->nics, &g->nnics, err, sizeof(err));
	if (rc < 0)
		FQN_WARN("%s", err);
	else if (fqib_gdr_available())
		FQN_INFO("GPUDirect RDMA is loaded, but IB lanes copy through host memory: "
			 "reporting NCCL_PTR_HOST only");
	return rc;
}

int fqn_transport_is_ib(void)
{
	return fqn_g && strcmp(fqn_g->cfg.transport, "ib") == 0;
}

int fqn_comm_device(const void *comm)
{
	return ((const struct fqn_comm *)comm)->dev; /* fqn_send and fqn_recv start with it */
}

static int init_once(struct fqn_global *g)
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
	rc = fqn_nics_discover(g->cfg.ifaces, g->nics, &g->nnics, err, sizeof(err));
	if (rc < 0) {
		FQN_WARN("%s", err);
		return rc;
	}
	rc = init_transport(g);
	if (rc < 0) {
		fqn_nics_release(g->nics, g->nnics);
		return rc;
	}
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
		rc = fqn_rejoin_create(&g->rejoin);
		if (rc < 0) {
			FQN_WARN("control mode: %s", strerror(-rc));
			fqn_telemetry_stop(g->telemetry);
			fq_clock_page_reader_close(g->clock);
			if (strcmp(g->cfg.transport, "ib") == 0)
				fqib_devs_close();
			fqn_nics_release(g->nics, g->nnics);
			return rc;
		}
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
		struct fqn_global *g = fqn_g;

		__atomic_store_n(&fqn_g, NULL, __ATOMIC_RELEASE);
		fqn_telemetry_stop(g->telemetry);
		fq_clock_page_reader_close(g->clock);
		if (g->paths)
			fq_path_page_reader_close(g->paths);
		fqn_rejoin_destroy(g->rejoin);
		if (strcmp(g->cfg.transport, "ib") == 0)
			fqib_devs_close();
		fqn_nics_release(g->nics, g->nnics);
	}
	pthread_mutex_unlock(&fqn_init_lock);
}

/* NCCL before 2.27 (net API v8-v10) never finalizes a net plugin: the
 * process exits with the last telemetry interval, failovers among it,
 * still in the ring. At exit, have the thread send it (bounded: an exit
 * is never held up for long). */
__attribute__((destructor)) static void fqn_exit_flush(void)
{
	struct fqn_global *g = __atomic_load_n(&fqn_g, __ATOMIC_ACQUIRE);

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

int fqn_comm_fail(struct fqn_comm *c, int lane, int err, const char *what)
{
	struct fqn_lane *l = lane >= 0 ? c->lanes[lane] : NULL;
	/* a control-mode lane may be gone (down): its names stay in lc */
	const char *peer = l ? l->peer : lane >= 0 && c->control ? c->lc[lane].peer : "?";
	const char *local = l ? l->local : lane >= 0 && c->control ? c->lc[lane].local : "?";

	if (c->err)
		return c->err;
	c->err = err;
	c->err_lane = lane;
	FQN_WARN("connection %llx lane %d/%d (%s %s %s, %s): %s: %s (%s, errno %d)",
		 (unsigned long long)c->conn_id, lane, c->nlanes, local, c->is_send ? "->" : "<-", peer,
		 l ? l->ops->kind : "?", what,
		 err == -ECONNRESET ? "peer closed or reset the connection" : "failed", strerror(-err), -err);
	return err;
}

void fqn_comm_stats_init(struct fqn_comm *c)
{
	int sync;
	int64_t now = fqn_clock_now(&sync);

	c->interval_ns = fqn_g && fqn_g->telemetry ? (int64_t)fqn_g->cfg.telemetry_interval_ms * 1000000 : 0;
	for (int i = 0; i < c->nlanes; i++) {
		memset(&c->stats[i], 0, sizeof(c->stats[i]));
		c->stats[i].interval_start = now;
	}
}

void fqn_comm_tick(struct fqn_comm *c, int i, int64_t now, int force)
{
	struct fqn_lane_stats *st = &c->stats[i];
	struct fqn_lane *l = c->lanes[i];
	struct fqn_lane_sample s;

	if (!c->interval_ns || !fqn_g || !fqn_g->telemetry || !l)
		return;
	if (now < st->interval_start) { /* the clock page came or went: restart */
		st->interval_start = now;
		return;
	}
	if (force ? st->chunks == 0 : now - st->interval_start < c->interval_ns)
		return;
	memset(&s, 0, offsetof(struct fqn_lane_sample, owd));
	s.conn_id = c->conn_id;
	s.lane = i;
	s.is_send = c->is_send;
	s.rank1 = fqn_g->rank1;
	s.peer_rank1 = c->peer_rank1;
	s.synchronised = !st->unsync;
	snprintf(s.kind, sizeof(s.kind), "%s", l->ops->kind);
	snprintf(s.nic, sizeof(s.nic), "%s",
		 l->nic >= 0 && l->nic < fqn_g->nnics ? fqn_g->nics[l->nic].name : "?");
	memcpy(s.local, l->local, sizeof(s.local));
	memcpy(s.peer, l->peer, sizeof(s.peer));
	s.start_ns = st->interval_start;
	s.end_ns = now;
	s.bytes = st->bytes;
	s.chunks = st->chunks;
	s.msgs = st->msgs;
	l->ops->info(l, &s.info); /* one getsockopt per lane per interval */
	s.owd = st->owd;
	fqn_telemetry_push(fqn_g->telemetry, &s);
	st->bytes = st->chunks = st->msgs = 0;
	st->unsync = 0;
	st->interval_start = now;
	fqn_hist_reset(&st->owd);
}

void fqn_comm_release(struct fqn_comm *c)
{
	int sync;
	int64_t now = fqn_clock_now(&sync);

	for (int i = 0; i < c->nlanes; i++)
		fqn_comm_tick(c, i, now, 1);
	for (int i = 0; i < c->nlanes; i++) {
		if (c->lanes[i])
			c->lanes[i]->ops->destroy(c->lanes[i]);
		c->lanes[i] = NULL;
	}
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

void fqn_comm_apply_tclass(struct fqn_comm *c, int i)
{
	struct fqn_lane *l = c->lanes[i];
	int err;

	if (c->tclass < 0 || !l)
		return;
	err = l->ops->set_tclass ? l->ops->set_tclass(l, c->tclass) : -ENOTSUP;
	if (err < 0)
		FQN_WARN("connection %llx lane %d (%s -> %s): traffic class %d not set: %s",
			 (unsigned long long)c->conn_id, i, l->local, l->peer, c->tclass, strerror(-err));
}
