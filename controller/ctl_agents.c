/*
 * ctl_agents: the controller's agents. Accepts their connections (a
 * bounded number, a few unauthenticated per source address), runs their
 * sessions' callbacks (AgentHello, frames into ingest and the detector,
 * close) and acknowledges what ingest made durable. What the controller
 * keeps of an agent (its hello, its clock estimates) outlives the session.
 */
#include "controller/ctl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/log.h"

/* ---- agents ---------------------------------------------------------- */

static struct agent *agent_get(struct ctl *c, const char *node)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(&c->agents, node);
	struct agent *a;

	if (!e)
		return NULL;
	if (e->value)
		return e->value;
	if (!(a = calloc(1, sizeof(*a))) || !(a->node = strdup(node))) {
		free(a);
		fq_strmap_remove(&c->agents, node);
		return NULL;
	}
	e->value = a;
	return a;
}

void ctl_agent_free(void *v)
{
	struct agent *a = v;

	if (!a)
		return;
	if (a->hello)
		fq_frame_free(a->hello);
	for (size_t i = 0; i < a->nest; i++)
		free(a->est[i].peer_node);
	free(a->est);
	free(a->node);
	free(a);
}

/* The NIC sets differ (order included: agents list them stably). */
static bool nics_changed(const Fabriciq__Envelope *old, const Fabriciq__Envelope *new)
{
	if (!old || old->hello->n_nics != new->hello->n_nics)
		return true;
	for (size_t i = 0; i < new->hello->n_nics; i++) {
		const Fabriciq__Nic *a = old->hello->nics[i], *b = new->hello->nics[i];
		if (strcmp(a->name, b->name) || strcmp(a->address, b->address) || a->rail != b->rail ||
		    a->front_end != b->front_end)
			return true;
	}
	return false;
}

static void keep_clock(struct agent *a, const Fabriciq__ClockReport *r, int64_t now)
{
	Fabriciq__ClockEstimate *est = calloc(r->n_estimates ? r->n_estimates : 1, sizeof(*est));
	size_t n = 0;

	if (!est)
		return;
	for (size_t i = 0; i < r->n_estimates; i++) {
		fabriciq__clock_estimate__init(&est[n]);
		est[n] = *r->estimates[i];
		est[n].base.unknown_fields = NULL;
		est[n].base.n_unknown_fields = 0;
		if (!(est[n].peer_node = strdup(r->estimates[i]->peer_node)))
			continue;
		n++;
	}
	for (size_t i = 0; i < a->nest; i++)
		free(a->est[i].peer_node);
	free(a->est);
	a->est = est;
	a->nest = n;
	a->clock_ns = now;
	a->applied_offset_ns = r->applied_offset_ns;
}

/* ---- ingest callbacks ------------------------------------------------ */

void ctl_on_durable(void *arg, const char *node, uint64_t seq)
{
	struct ctl *c = arg;
	struct agent *a = fq_strmap_get(&c->agents, node);

	if (a && a->sess)
		fq_session_ack(a->sess, seq);
}

void ctl_on_dropped(void *arg, const char *node)
{
	struct ctl *c = arg;
	struct agent *a = fq_strmap_get(&c->agents, node);

	if (a && a->sess)
		fq_session_close(a->sess, "its frames could not be stored or spooled; it will resend them");
}

/* ---- session callbacks ----------------------------------------------- */

static void unauth_release(struct ctl *c, const struct fq_session *s);
static void source_of(const char *peer, char *out, size_t len);

static bool refuse_claim(struct ctl *c, struct fq_session *s, const char *node, char *why, size_t whylen)
{
	c->sstats.node_refused++;
	fq_log_rl(FQ_LOG_WARN, "agent %s: AgentHello for %s refused: %s", fq_session_peer(s), node, why);
	return true;
}

/* true (why set) if the hello may not speak for its node: the node is bound
 * to a key that did not sign it, or to no key where keys are required, or
 * to another address than the session's (nodebind.h). A key binding
 * outranks the address: a node that signs may move. */
static bool refuse_unbound(struct ctl *c, struct fq_session *s, const Fabriciq__AgentHello *h, char *why,
			   size_t whylen)
{
	char addr[96];
	const char *peer = fq_session_peer(s), *node = h->node, *bound = fq_nodebind_get(c->bindings, node);
	uint8_t key[FQ_SIGN_PUBLIC_SIZE];
	int rc;

	if (bound && fq_signkey_is_public_text(bound)) {
		if (fq_signkey_public_parse(bound, key) == 0 && fq_session_node_signed(s, key, h))
			return false;
		snprintf(why, whylen,
			 "node %s is bound to a key and this hello is %s (controller.node_bindings)", node,
			 h->node_signature.len ? "not signed by it" : "not signed");
		return refuse_claim(c, s, node, why, whylen);
	}
	if (c->cfg.node_keys_required) {
		snprintf(
		    why, whylen,
		    "node %s is bound to no key (controller.node_keys_required; fabriciq-agent --new-key)",
		    node);
		return refuse_claim(c, s, node, why, whylen);
	}
	source_of(peer, addr, sizeof(addr));
	rc = fq_nodebind_check(c->bindings, node, addr, &bound);
	if (rc == 1)
		fq_info("node %s is bound to %s (controller.node_bindings)", node, addr);
	if (rc != -EPERM && rc != -ENOMEM)
		return false;
	snprintf(why, whylen, "node %s belongs to %s, not %s (controller.node_bindings)", node,
		 rc == -EPERM ? bound : "?", addr);
	return refuse_claim(c, s, node, why, whylen);
}

static int on_hello(void *arg, struct fq_session *s, Fabriciq__Envelope *env, char *why, size_t whylen)
{
	struct ctl *c = arg;
	const char *node = env->hello->node;
	struct agent *a = agent_get(c, node);
	Fabriciq__Envelope *copy;
	int rc;

	unauth_release(c, s);
	if (!a) {
		fq_frame_free(env);
		return -ENOMEM;
	}
	/* One live session per node: a second claim of a connected node is
	 * refused, not a replacement (any root credential may name any
	 * node). A dead session goes away by itself (EOF, or TCP keepalive
	 * on a vanished host), after which the agent's retry gets in. */
	if (a->sess && a->sess != s) {
		snprintf(why, whylen, "node %s is already connected from %s", node, fq_session_peer(a->sess));
		fq_warn("agent %s: AgentHello for %s refused: already connected from %s", fq_session_peer(s),
			node, fq_session_peer(a->sess));
		fq_frame_free(env);
		return -EBUSY;
	}
	if (c->bindings && refuse_unbound(c, s, env->hello, why, whylen)) {
		fq_frame_free(env);
		return -EPERM;
	}
	a->sess = s;
	if (a->away_ns)
		a->back_ns = fq_realtime_ns();
	fq_session_set_user(s, a);
	fq_info("agent %s: node %s (%s, %zu NICs, next seq %llu) connected", fq_session_peer(s), node,
		env->hello->agent_version, env->hello->n_nics, (unsigned long long)env->hello->next_seq);
	/* Keep our own copy of the hello (ingest owns env from here). */
	{
		size_t len = fabriciq__envelope__get_packed_size(env);
		uint8_t *buf = malloc(len ? len : 1);
		copy = NULL;
		if (buf) {
			fabriciq__envelope__pack(env, buf);
			fq_frame_unpack(buf, len, &copy);
			free(buf);
		}
	}
	if (copy) {
		if (nics_changed(a->hello, copy))
			c->peers_dirty = true;
		if (a->hello)
			fq_frame_free(a->hello);
		a->hello = copy;
	}
	if ((rc = fq_ingest_hello(c->ingest, env, fq_realtime_ns())) < 0)
		return rc;
	if (!c->peers_dirty && c->peers_epoch)
		c->peers_dirty = true; /* a reconnecting agent gets its peers again */
	return 0;
}

static void on_frame(void *arg, struct fq_session *s, Fabriciq__Envelope *env)
{
	struct ctl *c = arg;
	struct agent *a = fq_session_user(s);
	struct fq_step_id gone;
	uint64_t ack = 0;
	int64_t now = fq_realtime_ns();
	int rc;

	if (!a) {
		fq_frame_free(env);
		return;
	}
	rc = fq_ingest_frame(c->ingest, a->node, env, now, &ack);
	if (rc == 1) {
		/* Accepted (not a replay): env stays valid until the next flush. */
		ctl_feed_detector(c, a->node, env, now);
		ctl_feed_rates(c, a->node, env);
		fq_metrics_frame(c->metrics, a->node, env);
		if (fq_steplive_frame(c->live, a->node, env, now, &gone))
			ctl_drop_step(c, &gone, false);
		if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_CLOCK)
			keep_clock(a, env->clock, now);
		/* Not the periodic flush_ev itself: libevent re-arms an
		 * activated EV_PERSIST timer one interval after its pending
		 * deadline, so each activation pushed the next timed flush
		 * (the batch's tail) another flush_interval away. */
		if (fq_ingest_should_flush(c->ingest))
			event_active(c->flush_now_ev, EV_TIMEOUT, 0);
	} else if (rc == 0 && ack) {
		fq_session_ack(s, ack);
	} else if (rc < 0) {
		c->sstats.frames_unexpected++;
		fq_log_rl(FQ_LOG_WARN, "agent %s: frame refused: %s", a->node,
			  rc == -EINVAL ? "no payload the controller stores, or seq 0" : strerror(-rc));
	}
}

static void on_closed(void *arg, struct fq_session *s)
{
	struct ctl *c = arg;
	struct agent *a = fq_session_user(s);

	if (!fq_session_node(s))
		unauth_release(c, s);
	if (a && a->sess == s) {
		a->sess = NULL;
		a->away_ns = fq_realtime_ns();
		a->back_ns = 0;
	}
}

/* The source address of a session's peer ("IP:PORT"). */
static void source_of(const char *peer, char *out, size_t len)
{
	const char *colon = strrchr(peer, ':');
	size_t n = colon ? (size_t)(colon - peer) : strlen(peer);

	snprintf(out, len, "%.*s", (int)n, peer);
}

static void unauth_release_addr(struct ctl *c, const char *src)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(&c->unauth, src);

	if (!e)
		return;
	if ((uintptr_t)e->value <= 1)
		fq_strmap_remove(&c->unauth, src);
	else
		e->value = (void *)((uintptr_t)e->value - 1);
}

/* One session of this source got past AgentHello, or closed before. */
static void unauth_release(struct ctl *c, const struct fq_session *s)
{
	char src[96];

	source_of(fq_session_peer(s), src, sizeof(src));
	unauth_release_addr(c, src);
}

/* Keepalive on agent connections: a session whose host vanished (no FIN)
 * closes within about 10 + 3 * 5 s, so its node can connect again. */
static void set_keepalive(int fd)
{
	int one = 1, idle = 10, intvl = 5, cnt = 3;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void ctl_on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
	struct ctl *c = arg;
	static const struct fq_session_ops ops = {on_hello, on_frame, on_closed};
	char addr[64] = "?", peer[96];
	struct fq_strmap_entry *e;

	(void)l;
	(void)salen;
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
		snprintf(peer, sizeof(peer), "%s:%u", addr, ntohs(in->sin_port));
	} else {
		snprintf(peer, sizeof(peer), "family-%d", sa->sa_family);
	}
	/* The caps, before anything is allocated or sent for the connection. */
	e = fq_strmap_upsert(&c->unauth, addr);
	if (c->sstats.open >= c->cfg.max_connections || !e ||
	    (uintptr_t)e->value >= c->cfg.max_unauthenticated_per_source) {
		c->sstats.refused++;
		fq_log_rl(FQ_LOG_WARN, "agent %s: connection refused: %s", peer,
			  c->sstats.open >= c->cfg.max_connections ? "controller.max_connections reached"
			  : e ? "controller.max_unauthenticated_per_source reached from this address"
			      : "out of memory");
		if (e && !e->value)
			fq_strmap_remove(&c->unauth, addr);
		evutil_closesocket(fd);
		return;
	}
	set_keepalive(fd);
	e->value = (void *)((uintptr_t)e->value + 1);
	if (!fq_session_create(c->base, fd, peer, &c->scfg, &ops, c, &c->sstats))
		unauth_release_addr(c, addr);
}
