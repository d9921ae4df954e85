/*
 * failover: what the sending and receiving sides of a control-mode
 * connection share, its I/O half: lane names and path keys, the path page
 * check, the grace limit, failover/failback events (see failover.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/path_page.h"
#include "nccl-plugin/control/failover.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/failover.h"
#include "nccl-plugin/plog.h"
#include "nccl-plugin/telemetry/event.h"

#define PATH_CHECK_NS  (5LL * 1000000)    /* path page reads: every 5 ms per comm at most */
#define PATH_REOPEN_NS (2000LL * 1000000) /* no page yet: look again every 2 s */

/* "a.b.c.d:port" -> a.b.c.d in network order; 0 if not IPv4. */
static uint32_t ipv4_of(const char *addr)
{
	char buf[64];
	char *colon;
	struct in_addr a;

	snprintf(buf, sizeof(buf), "%s", addr);
	colon = strrchr(buf, ':');
	if (colon)
		*colon = '\0';
	return inet_pton(AF_INET, buf, &a) == 1 ? a.s_addr : 0;
}

struct fqn_failover_cfg fqn_ctl_failover_cfg(const struct fqn_config *cfg)
{
	return (struct fqn_failover_cfg){.lane_timeout_ms = cfg->lane_timeout_ms,
					 .grace_ms = cfg->failover_grace_ms,
					 .path_page_max_age_ms = cfg->path_page_max_age_ms};
}

void fqn_ctl_lane_name(struct fqn_comm *c, int i, int nic, const char *local, const char *peer)
{
	struct fqn_lane_ctl *lc = &c->lc[i];

	snprintf(lc->nic, sizeof(lc->nic), "%s", fqn_ctx_nic_name(c->ctx, nic));
	snprintf(lc->local, sizeof(lc->local), "%s", local);
	snprintf(lc->peer, sizeof(lc->peer), "%s", peer);
	lc->remote_ipv4 = ipv4_of(peer);
}

void fqn_ctl_lane_init(struct fqn_comm *c, int i)
{
	const struct fqn_ctx *ctx = c->ctx;
	struct fqn_lane *l = c->lanes[i];
	uint32_t mine;

	if (!l)
		return;
	/* the NIC that holds the lane's local address (an accepted lane's
	 * device is the listener's, whatever rail it came in on) */
	mine = ipv4_of(l->local);
	for (int k = 0; ctx && mine && k < ctx->nnics; k++) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ctx->nics[k].addr;

		if (a->sin_family == AF_INET && a->sin_addr.s_addr == mine)
			l->nic = k;
	}
	fqn_ctl_lane_name(c, i, l->nic, l->local, l->peer);
}

int fqn_ctl_path_due(struct fqn_comm *c, int64_t now)
{
	struct fqn_ctx *g = c->ctx;

	if (now < c->next_path_ns)
		return 0;
	c->next_path_ns = now + PATH_CHECK_NS;
	if (!g->paths && now >= __atomic_load_n(&g->paths_retry_ns, __ATOMIC_RELAXED)) {
		struct fq_path_page_reader *r;

		/* The agent may start after the job: open the page once it exists. */
		__atomic_store_n(&g->paths_retry_ns, now + PATH_REOPEN_NS, __ATOMIC_RELAXED);
		if (fq_path_page_reader_open(g->cfg.path_page, &r) == 0) {
			struct fq_path_page_reader *none = NULL;

			if (!__atomic_compare_exchange_n(&g->paths, &none, r, 0, __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE))
				fq_path_page_reader_close(r);
			else
				FQN_INFO("path page %s: lanes follow the agent's path health",
					 g->cfg.path_page);
		}
	}
	return __atomic_load_n(&g->paths, __ATOMIC_ACQUIRE) != NULL;
}

/* The page is fresh enough to act on; says so at WARN when it goes stale
 * (the agent died or hangs) and at INFO when it is fresh again. */
static int page_usable(const struct fqn_comm *c, struct fq_path_page_reader *r)
{
	static int stale; /* process-wide: one page */
	const struct fqn_config *cfg = &c->ctx->cfg;
	int64_t updated = fq_path_page_updated_ns(r), now = fq_now_ns();
	int fresh = fqn_path_page_fresh(updated, now, &c->fo);

	if (!fresh && !__atomic_exchange_n(&stale, 1, __ATOMIC_RELAXED))
		FQN_WARN("path page %s is stale (last update %lld ms ago, FABRICIQ_PATH_PAGE_MAX_AGE_MS=%d): "
			 "is the node agent running? lanes follow their own timeouts until it updates again",
			 cfg->path_page, updated > 0 ? (long long)((now - updated) / 1000000) : -1LL,
			 c->fo.path_page_max_age_ms);
	else if (fresh && __atomic_exchange_n(&stale, 0, __ATOMIC_RELAXED))
		FQN_INFO("path page %s is fresh again: lanes follow the agent's path health", cfg->path_page);
	return fresh;
}

int fqn_ctl_path_down(struct fqn_comm *c, int i)
{
	struct fq_path_page_reader *r = __atomic_load_n(&c->ctx->paths, __ATOMIC_ACQUIRE);
	struct fq_path_entry e;

	if (!r || !c->lc[i].remote_ipv4 || !page_usable(c, r))
		return 0;
	if (fq_path_page_lookup(r, c->lc[i].nic, c->lc[i].remote_ipv4, &e) < 0 ||
	    e.state != FQ_PATH_STATE_DOWN)
		return 0;
	/* one end keeping a lane the other dropped splits the connection:
	 * the margin (fqn_failover_page_lags) keeps the two ends agreeing */
	if (fqn_failover_page_lags(c->lc[i].fsm.state, c->lc[i].fsm.since_ns, fq_clock_ns(CLOCK_MONOTONIC),
				   e.changed_ns, fq_now_ns()))
		return 0;
	/* Every path to the peer node DOWN at once is what its agent stopping
	 * looks like (its probes stop), as much as a dead host: the page
	 * cannot tell them apart, so the lanes go by their transport then
	 * (socket errors, no progress). A DOWN is believed while another path
	 * to the node is UP. */
	return !e.remote_node[0] || fq_path_page_node_up(r, e.remote_node) != 0;
}

/* The name of lane i's remote NIC from the path page (a name does not go
 * stale with the page: any publication will do): 1 and name, or 0. */
static int peer_nic_name(struct fqn_comm *c, int i, char *name, size_t len)
{
	struct fq_path_page_reader *r = __atomic_load_n(&c->ctx->paths, __ATOMIC_ACQUIRE);
	struct fq_path_entry e;

	if (!r || !c->lc[i].remote_ipv4 ||
	    fq_path_page_lookup(r, c->lc[i].nic, c->lc[i].remote_ipv4, &e) < 0 || !e.remote_nic[0])
		return 0;
	snprintf(name, len, "%s", e.remote_nic);
	return 1;
}

void fqn_ctl_event(struct fqn_comm *c, int from_lane, int to_lane, const char *cause, int64_t at_ns,
		   int64_t detect_ns, uint64_t bytes_resent, int64_t duration_ns)
{
	const struct fqn_lane_ctl *lc = &c->lc[from_lane];
	char peer[sizeof(lc->peer)];

	if (!c->ctx || !c->ctx->telemetry)
		return; /* no path page lookup either */
	/* the event's remote NIC (telemetry.c sends s->peer as remote_nic): the
	 * peer NIC's name where the agent's page knows the path, else its address */
	if (!peer_nic_name(c, from_lane, peer, sizeof(peer)))
		snprintf(peer, sizeof(peer), "%s", lc->peer);
	fqn_ctx_event(c->ctx, &(struct fqn_event){.cause = cause,
						  .conn_id = c->conn_id,
						  .lane = from_lane,
						  .to_lane = to_lane,
						  .is_send = c->is_send,
						  .peer_rank1 = c->peer_rank1,
						  .kind = "",
						  .nic = lc->nic,
						  .local = lc->local,
						  .peer = peer,
						  .at_ns = at_ns,
						  .detect_ns = detect_ns,
						  .duration_ns = duration_ns,
						  .bytes_resent = bytes_resent});
}

int fqn_ctl_check_grace(struct fqn_comm *c, int64_t now)
{
	struct fqn_grace_lane lanes[FQN_MAX_LANES];
	char what[512];

	for (int i = 0; i < c->nlanes; i++)
		lanes[i] = (struct fqn_grace_lane){c->lc[i].fsm.state, c->lc[i].last_err};
	switch (fqn_failover_grace(lanes, c->nlanes, c->is_send, &c->all_down_ns, now, &c->fo)) {
	case FQN_GRACE_PEER_GONE:
		snprintf(what, sizeof(what),
			 "the peer closed or refused all %d lanes (%s %s %s): its process is gone", c->nlanes,
			 c->lc[0].local, c->is_send ? "->" : "<-", c->lc[0].peer);
		return fqn_comm_fail(c, 0, -ECONNRESET, what);
	case FQN_GRACE_EXPIRED:
		snprintf(
		    what, sizeof(what),
		    "all %d lanes %s %s %s down for %lld ms (FABRICIQ_FAILOVER_GRACE_MS=%d; last cause: %s)",
		    c->nlanes, c->lc[0].local, c->is_send ? "->" : "<-", c->lc[0].peer,
		    (long long)((now - c->all_down_ns) / 1000000), c->fo.grace_ms,
		    c->lc[0].cause ? c->lc[0].cause : "?");
		return fqn_comm_fail(c, 0, -ENETUNREACH, what);
	case FQN_GRACE_OK:
		break;
	}
	return 0;
}
