/* prof: contexts, events and their aggregation (see prof.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/clock_page.h"
#include "nccl-profiler/names.h"
#include "nccl-profiler/pool.h"
#include "nccl-profiler/prof.h"
#include "nccl-profiler/report.h"
#include "nccl-profiler/ticks.h"

#define MAX_CTX         256
#define DEFAULT_POOL    16384
#define MAX_POOL        (1u << 22)
#define DEFAULT_RING    4096
#define MAX_RING        (1u << 20)
#define CTX_TOKEN_MAGIC 0xfa00000000000000ull
/* A stopped op no proxyOp joined, none later either: launch-only after this. */
#define PENDING_SWEEP_NS (10 * FQ_NSEC_PER_SEC)
#define NCCL_INIT_FLAG   0x1

_Static_assert(sizeof(void *) == 8, "handles encode 64 bits");

enum {
	EV_FREE = 0,
	EV_LIVE,
	EV_STOPPED
};

static inline uint32_t gs_gen(uint32_t v)
{
	return v >> 8;
}

static inline uint32_t gs_state(uint32_t v)
{
	return v & 0xff;
}

/* One event slot. The starter fills the plain fields before NCCL sees the
 * handle; other threads reach them through the handle (NCCL's ordering)
 * or through refs (a child's seq_cst increment). */
struct ev {
	/* generation (24 bits, never 0) << 8 | EV_*: one word, so a stop's
	 * compare-and-swap checks the handle's generation and the state at
	 * once (a stale handle cannot stop the slot's next event). */
	_Atomic uint32_t gs;
	_Atomic int32_t refs;         /* coll/p2p: self (until released) + children */
	_Atomic int32_t self_held;    /* coll/p2p: the self reference not yet released */
	_Atomic int32_t children;     /* proxyOps that joined */
	_Atomic int64_t child_end;    /* latest child end (ticks.h) */
	_Atomic uint64_t child_bytes; /* proxyOp: its steps' bytes */
	_Atomic uint64_t trans;       /* proxyStep / v1..v3 proxyOp: bytes so far */
	/* coll/p2p: its stop time while no proxyOp has joined. The sweep reads
	 * only atomics: a slot's plain fields may be a new event's. */
	_Atomic int64_t pending;
	_Atomic int64_t start_at; /* t_start, for the sweep */
	/* a send step: when it was posted to the network (SendWait), 0 not
	 * yet. NCCL starts a step when its buffer is posted, before the GPU
	 * filled it (SendGPUWait) and the receiver gave credit
	 * (SendPeerWait): its send window times the wire from here. */
	_Atomic int64_t t_wire;
	int64_t t_start; /* ticks, as every time here (ticks.h) */
	uint64_t parent; /* encoded handle of the parent we counted on, or 0 */
	struct fqp_event d;
	uint64_t bytes; /* coll/p2p: count x type size */
};

struct ctxi {
	_Atomic uint32_t gen8; /* low 8 bits in tokens and handles */
	_Atomic int alive;     /* 1 live, 0 dead (reusable), 2 being set up */
	unsigned idx, npool, nring;
	struct fqp_comm_info ci;
	char name[64];
	char clock_path[256];
	ncclDebugLogger_t logfn;
	struct fq_clock_page_reader *clock;
	struct fqp_pool pool;
	_Atomic uint32_t *next;
	struct ev *ev;
	struct fqp_wintab *win;
	struct fqp_opring *ring;
	_Atomic int64_t joined_start; /* the latest start of an op a proxyOp joined */
	struct {
		_Atomic uint64_t started[FQP_EV_NTYPES], stopped[FQP_EV_NTYPES];
		_Atomic uint64_t states, dropped_pool, dropped_windows, dropped_ops, unknown_type,
		    net_unknown, ops_done;
	} n;
};

static _Atomic(struct ctxi *) ctx_tab[MAX_CTX];
static struct {
	_Atomic uint64_t bad_handle, bad_context, init_failures;
} gn;

#define INC(x) atomic_fetch_add_explicit(&(x), 1, memory_order_relaxed)

int fqp_default_mask(void)
{
	return ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |
	       ncclProfileProxyStep | ncclProfileNetPlugin;
}

/* ---- tokens and handles ---------------------------------------------- */

static struct fqp_ctx *ctx_token(const struct ctxi *c)
{
	uint64_t gen8 = atomic_load_explicit(&c->gen8, memory_order_relaxed) & 0xff;

	return (struct fqp_ctx *)(uintptr_t)(CTX_TOKEN_MAGIC | (uint64_t)c->idx << 8 | gen8);
}

static struct ctxi *ctx_of(const struct fqp_ctx *tok)
{
	uint64_t v = (uint64_t)(uintptr_t)tok;
	struct ctxi *c;

	if ((v & 0xffffffffffff0000ull) != CTX_TOKEN_MAGIC)
		return NULL;
	c = atomic_load_explicit(&ctx_tab[(v >> 8) & 0xff], memory_order_acquire);
	if (!c || (atomic_load_explicit(&c->gen8, memory_order_acquire) & 0xff) != (v & 0xff) ||
	    atomic_load_explicit(&c->alive, memory_order_acquire) != 1)
		return NULL;
	return c;
}

static uint64_t ev_handle(const struct ctxi *c, uint32_t slot, uint32_t gen)
{
	uint64_t gen8 = atomic_load_explicit(&c->gen8, memory_order_relaxed) & 0xff;

	return (uint64_t)c->idx << 56 | gen8 << 48 | (uint64_t)slot << 24 | gen;
}

/* The live (or stopped) event a handle names, or NULL. */
static struct ev *ev_of(uint64_t h, struct ctxi **cp)
{
	struct ctxi *c;
	uint32_t slot = (uint32_t)(h >> 24) & 0xffffff, gen = (uint32_t)h & 0xffffff, v;
	struct ev *e;

	if (!h || !gen)
		return NULL;
	c = atomic_load_explicit(&ctx_tab[h >> 56], memory_order_acquire);
	if (!c || atomic_load_explicit(&c->alive, memory_order_acquire) != 1 ||
	    (atomic_load_explicit(&c->gen8, memory_order_acquire) & 0xff) != ((h >> 48) & 0xff) ||
	    slot >= c->npool)
		return NULL;
	e = &c->ev[slot];
	v = atomic_load_explicit(&e->gs, memory_order_acquire);
	if (gs_gen(v) != gen || gs_state(v) == EV_FREE)
		return NULL;
	*cp = c;
	return e;
}

/* ---- clock --------------------------------------------------------------- */

static int64_t to_global(struct ctxi *c, int64_t raw, int *sync)
{
	struct fq_clock_model m;

	if (c->clock && fq_clock_page_read(c->clock, raw, &m) == 0) {
		*sync = 1;
		return fq_clock_model_global(&m, raw);
	}
	*sync = 0;
	return raw;
}

/* ---- aggregation ------------------------------------------------------- */

/* dur: in ticks */
static void win_add(struct ctxi *c, int kind, int dev, int sub, int64_t id, uint64_t bytes, int64_t dur)
{
	struct fqp_window_key k = {.kind = kind, .dev = dev, .sub = sub, .id = id};

	dur = fqp_ticks_dur(dur);
	if (fqp_wintab_add(c->win, &k, bytes, dur > 0 ? (uint64_t)dur : 0) < 0)
		INC(c->n.dropped_windows);
}

static void ev_free(struct ctxi *c, struct ev *e)
{
	uint32_t g = (gs_gen(atomic_load_explicit(&e->gs, memory_order_relaxed)) + 1) & 0xffffff;

	atomic_store_explicit(&e->gs, (g ? g : 1) << 8 | EV_FREE, memory_order_release);
	fqp_pool_push(&c->pool, (uint32_t)(e - c->ev));
}

/* A coll or p2p whose last reference went: its record and window. */
static void op_complete(struct ctxi *c, struct ev *e)
{
	struct fqp_ticks_anchor now = fqp_ticks_anchor();
	struct fqp_op_record r = {0};
	int64_t end = atomic_load(&e->pending),
		ce = atomic_load_explicit(&e->child_end, memory_order_acquire);
	int s1, s2;

	if (atomic_load_explicit(&e->children, memory_order_acquire) > 0 && ce > 0)
		end = ce; /* the network's last proxyOp, not the enqueue */
	r.comm_hash = e->d.comm_hash ? e->d.comm_hash : c->ci.comm_hash;
	r.seq = e->d.seq;
	r.is_p2p = e->d.type == FQP_EV_P2P;
	r.func = e->d.func;
	r.algo = e->d.algo;
	r.proto = e->d.proto;
	r.peer = e->d.peer;
	r.root = e->d.root;
	r.nchannels = e->d.nchannels;
	r.is_send = e->d.func == FQP_FUNC_SEND;
	r.bytes = e->bytes;
	r.proxy_ops = atomic_load_explicit(&e->children, memory_order_relaxed);
	r.start_ns = to_global(c, fqp_ticks_raw(&now, e->t_start), &s1);
	r.end_ns = to_global(c, fqp_ticks_raw(&now, end), &s2);
	r.synchronised = s1 && s2;
	r.gbps = end > e->t_start ? (double)r.bytes / (double)fqp_ticks_dur(end - e->t_start) : 0;
	if (r.is_p2p)
		win_add(c, r.is_send ? FQP_W_P2P_SEND : FQP_W_P2P_RECV, -1, 0, r.peer, r.bytes,
			end - e->t_start);
	else
		win_add(c, FQP_W_COLL, -1, r.algo, r.func, r.bytes, end - e->t_start);
	if (fqp_opring_push(c->ring, &r) < 0)
		INC(c->n.dropped_ops);
	INC(c->n.ops_done);
	INC(c->n.stopped[e->d.type]);
	ev_free(c, e);
}

static void op_put(struct ctxi *c, struct ev *e)
{
	if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
		op_complete(c, e);
}

/* The self reference goes once the op is stopped and a child joined: from
 * then on the last child's end completes it. Whichever of stop and
 * child-join comes second releases it (both sequentially consistent). */
static void op_try_release_self(struct ctxi *c, struct ev *e)
{
	int32_t one = 1;

	if (gs_state(atomic_load(&e->gs)) == EV_STOPPED && atomic_load(&e->children) > 0 &&
	    atomic_compare_exchange_strong(&e->self_held, &one, 0))
		op_put(c, e);
}

/* A proxyOp joins its coll/p2p: a reference, unless that op is gone. */
static uint64_t op_join(struct ctxi *c, void *parent)
{
	struct ctxi *pc;
	struct ev *p = ev_of((uint64_t)(uintptr_t)parent, &pc);
	int32_t r;

	if (!p || pc != c || (p->d.type != FQP_EV_COLL && p->d.type != FQP_EV_P2P))
		return 0;
	r = atomic_load(&p->refs);
	do {
		if (r <= 0)
			return 0;
	} while (!atomic_compare_exchange_weak(&p->refs, &r, r + 1));
	/* Freed and reused between the look-up and the increment: undo. */
	if (gs_gen(atomic_load(&p->gs)) != ((uint64_t)(uintptr_t)parent & 0xffffff)) {
		op_put(c, p);
		return 0;
	}
	atomic_fetch_add(&p->children, 1);
	/* The proxy takes a communicator's ops in order: ops started before
	 * this one that no proxyOp joined never will (see sweep_pending). */
	int64_t js = atomic_load_explicit(&c->joined_start, memory_order_relaxed);
	while (p->t_start > js && !atomic_compare_exchange_weak(&c->joined_start, &js, p->t_start))
		;
	op_try_release_self(c, p);
	return (uint64_t)(uintptr_t)parent;
}

static void op_leave(struct ctxi *c, uint64_t parent, int64_t end)
{
	struct ev *p = &c->ev[(parent >> 24) & 0xffffff];
	int64_t cur = atomic_load_explicit(&p->child_end, memory_order_relaxed);

	while (end > cur && !atomic_compare_exchange_weak(&p->child_end, &cur, end))
		;
	op_put(c, p); /* we hold a reference: the slot is still this op */
}

/* ---- events -------------------------------------------------------------- */

static uint64_t op_bytes(const struct fqp_event *d)
{
	uint64_t b;

	if (__builtin_mul_overflow((uint64_t)d->count, (uint64_t)d->type_size, &b))
		return UINT64_MAX; /* a huge count saturates, never wraps */
	return b;
}

int fqp_start(struct fqp_ctx *tok, void **handle, const struct fqp_event *d)
{
	struct ctxi *c;
	struct ev *e;
	uint32_t slot, gen;

	if (handle)
		*handle = NULL;
	c = ctx_of(tok);
	if (!c || !handle || !d) {
		INC(gn.bad_context);
		return -EINVAL;
	}
	if ((unsigned)d->type >= FQP_EV_NTYPES) {
		INC(c->n.unknown_type);
		return -EINVAL;
	}
	slot = fqp_pool_pop(&c->pool);
	if (slot == FQP_POOL_NIL) {
		INC(c->n.dropped_pool);
		return -ENOBUFS;
	}
	e = &c->ev[slot];
	e->d = *d;
	e->t_start = fqp_ticks();
	atomic_store_explicit(&e->start_at, e->t_start, memory_order_relaxed);
	e->parent = 0;
	e->bytes = 0;
	atomic_store_explicit(&e->refs, 1, memory_order_relaxed);
	atomic_store_explicit(&e->self_held, 1, memory_order_relaxed);
	atomic_store_explicit(&e->children, 0, memory_order_relaxed);
	atomic_store_explicit(&e->child_end, 0, memory_order_relaxed);
	atomic_store_explicit(&e->child_bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&e->trans, 0, memory_order_relaxed);
	atomic_store_explicit(&e->pending, 0, memory_order_relaxed);
	atomic_store_explicit(&e->t_wire, 0, memory_order_relaxed);
	switch (d->type) {
	case FQP_EV_COLL:
	case FQP_EV_P2P:
		e->bytes = op_bytes(d);
		break;
	case FQP_EV_PROXY_OP:
		if (!d->other_process)
			e->parent = op_join(c, d->parent);
		break;
	case FQP_EV_PROXY_STEP: {
		/* A step inherits its op's peer and direction. */
		struct ctxi *pc;
		struct ev *p = ev_of((uint64_t)(uintptr_t)d->parent, &pc);

		if (p && pc == c && p->d.type == FQP_EV_PROXY_OP) {
			e->d.peer = p->d.peer;
			e->d.is_send = p->d.is_send;
			e->parent = (uint64_t)(uintptr_t)d->parent;
		} else {
			e->d.peer = -1;
		}
		break;
	}
	case FQP_EV_NET:
		if (d->net == FQP_NET_UNKNOWN)
			INC(c->n.net_unknown);
		break;
	default:
		break;
	}
	gen = gs_gen(atomic_load_explicit(&e->gs, memory_order_relaxed));
	atomic_store_explicit(&e->gs, gen << 8 | EV_LIVE, memory_order_seq_cst);
	INC(c->n.started[d->type]);
	*handle = (void *)(uintptr_t)ev_handle(c, slot, gen);
	return 0;
}

static void stop_proxy_op(struct ctxi *c, struct ev *e, int64_t now)
{
	uint64_t bytes = atomic_load(&e->child_bytes), t = atomic_load(&e->trans);

	if (t > bytes) /* v1..v3 report the op's bytes on the op itself */
		bytes = t;
	win_add(c, e->d.is_send ? FQP_W_PROXY_SEND : FQP_W_PROXY_RECV, -1, 0, e->d.peer, bytes,
		now - e->t_start);
	if (e->parent)
		op_leave(c, e->parent, now);
}

static void stop_step(struct ctxi *c, struct ev *e, int64_t now)
{
	uint64_t t = atomic_load(&e->trans);
	int64_t wire = atomic_load_explicit(&e->t_wire, memory_order_relaxed);
	struct ctxi *pc;
	struct ev *p;

	win_add(c, e->d.is_send ? FQP_W_STEP_SEND : FQP_W_STEP_RECV, -1, 0, e->d.peer, t,
		now - (wire ? wire : e->t_start));
	p = e->parent ? ev_of(e->parent, &pc) : NULL;
	if (p && pc == c)
		atomic_fetch_add(&p->child_bytes, t);
}

static void stop_net(struct ctxi *c, struct ev *e, int64_t now)
{
	const struct fqp_event *d = &e->d;

	switch (d->net) {
	case FQP_NET_IB_QP:
		win_add(c, FQP_W_NET_IB, d->dev, d->opcode, d->qpn, d->length, now - e->t_start);
		break;
	case FQP_NET_SOCKET:
		win_add(c, FQP_W_NET_SOCK, -1, d->opcode, d->fd, d->length, now - e->t_start);
		break;
	default:
		win_add(c, FQP_W_NET_OTHER, -1, 0, 0, d->length, now - e->t_start);
		break;
	}
}

int fqp_stop(void *handle)
{
	uint32_t gen = (uint32_t)(uintptr_t)handle & 0xffffff, live = gen << 8 | EV_LIVE;
	struct ctxi *c;
	struct ev *e = ev_of((uint64_t)(uintptr_t)handle, &c);
	int64_t now;

	if (!e || !atomic_compare_exchange_strong(&e->gs, &live, gen << 8 | EV_STOPPED)) {
		INC(gn.bad_handle); /* NULL, garbage, stopped twice, or after finalize */
		return -EINVAL;
	}
	now = fqp_ticks();
	switch (e->d.type) {
	case FQP_EV_COLL:
	case FQP_EV_P2P:
		/* Enqueued, not done: the op ends with its last proxyOp, or
		 * (none joined) at the sweep. */
		atomic_store(&e->pending, now);
		op_try_release_self(c, e);
		return 0;
	case FQP_EV_PROXY_OP:
		stop_proxy_op(c, e, now);
		break;
	case FQP_EV_PROXY_STEP:
		stop_step(c, e, now);
		break;
	case FQP_EV_NET:
		stop_net(c, e, now);
		break;
	case FQP_EV_CE_BATCH:
		win_add(c, FQP_W_OTHER, -1, 0, e->d.type, e->d.total_bytes, now - e->t_start);
		break;
	default:
		win_add(c, FQP_W_OTHER, -1, 0, e->d.type, 0, now - e->t_start);
		break;
	}
	INC(c->n.stopped[e->d.type]);
	ev_free(c, e);
	return 0;
}

int fqp_record(void *handle, int state, const struct fqp_state_args *a)
{
	struct ctxi *c;
	struct ev *e = ev_of((uint64_t)(uintptr_t)handle, &c);

	if (!e) {
		INC(gn.bad_handle);
		return -EINVAL;
	}
	INC(c->n.states);
	if (e->d.type == FQP_EV_PROXY_STEP && state == ncclProfilerProxyStepSendWait) {
		int64_t zero = 0; /* the first post: a step is posted once */

		atomic_compare_exchange_strong_explicit(&e->t_wire, &zero, fqp_ticks(), memory_order_relaxed,
							memory_order_relaxed);
	}
	if (!a)
		return 0;
	if ((e->d.type == FQP_EV_PROXY_STEP &&
	     (state == ncclProfilerProxyStepSendGPUWait || state == ncclProfilerProxyStepSendPeerWait_v4 ||
	      state == ncclProfilerProxyStepSendWait || state == ncclProfilerProxyStepRecvWait ||
	      state == ncclProfilerProxyStepRecvFlushWait || state == ncclProfilerProxyStepRecvGPUWait)) ||
	    (e->d.type == FQP_EV_PROXY_OP && state >= ncclProfilerProxyOpSendPosted &&
	     state <= ncclProfilerProxyOpRecvDone)) {
		/* transSize only grows; keep the largest seen. */
		uint64_t cur = atomic_load_explicit(&e->trans, memory_order_relaxed);

		while (a->trans_size > cur && !atomic_compare_exchange_weak(&e->trans, &cur, a->trans_size))
			;
	}
	return 0;
}

/* ---- contexts ------------------------------------------------------------ */

/* Stopped colls and p2ps no proxyOp joined: intra-node only, or their
 * proxyOps were dropped. NCCL's proxy takes a communicator's operations
 * in order, so once a proxyOp joined an op started later, these never get
 * one: they complete at their stop (launch-only). Otherwise they wait
 * older_than (drain: PENDING_SWEEP_NS; finalize: 0), as a proxy may lag
 * far behind the enqueue. Reads only atomics (the plain fields may be a
 * new event's) and re-checks the slot's word. Off NCCL's paths. */
static void sweep_pending(struct ctxi *c, int64_t older_than)
{
	int64_t now = fqp_ticks(), joined = atomic_load(&c->joined_start);

	for (unsigned i = 0; i < c->npool; i++) {
		struct ev *e = &c->ev[i];
		uint32_t v = atomic_load(&e->gs);
		int32_t one = 1;
		int64_t since, start;

		if (gs_state(v) != EV_STOPPED)
			continue;
		since = atomic_load(&e->pending);
		start = atomic_load(&e->start_at);
		if (since == 0 || atomic_load(&e->children) > 0 ||
		    (fqp_ticks_dur(now - since) < older_than && start >= joined) || atomic_load(&e->gs) != v)
			continue;
		if (atomic_compare_exchange_strong(&e->self_held, &one, 0))
			op_put(c, e);
	}
}

static unsigned pow2_at_least(unsigned n)
{
	unsigned p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static unsigned env_uint(const char *name, unsigned dflt, unsigned lo, unsigned hi)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	v = strtoul(s, &end, 10);
	return *end || v < lo || v > hi ? dflt : (unsigned)v;
}

static void ctx_free_mem(struct ctxi *c)
{
	free(c->ev);
	free((void *)c->next);
	free(c->win);
	free(c->ring);
	c->ev = NULL;
	c->next = NULL;
	c->win = NULL;
	c->ring = NULL;
}

static int ctx_alloc_mem(struct ctxi *c, unsigned npool, unsigned nring)
{
	if (c->ev && c->npool == npool && c->nring == nring)
		return 0;
	ctx_free_mem(c);
	c->ev = calloc(npool, sizeof(*c->ev));
	c->next = calloc(npool, sizeof(*c->next));
	c->win = malloc(fqp_wintab_size());
	c->ring = malloc(fqp_opring_size(nring));
	if (!c->ev || !c->next || !c->win || !c->ring) {
		ctx_free_mem(c);
		return -ENOMEM;
	}
	c->npool = npool;
	c->nring = nring;
	return 0;
}

/* A dead context to reuse, or a fresh one in an empty table slot. */
static struct ctxi *ctx_claim(void)
{
	for (unsigned i = 0; i < MAX_CTX; i++) {
		struct ctxi *c = atomic_load(&ctx_tab[i]);
		int dead = 0;

		if (c && atomic_compare_exchange_strong(&c->alive, &dead, 2))
			return c;
	}
	for (unsigned i = 0; i < MAX_CTX; i++) {
		struct ctxi *c = calloc(1, sizeof(*c)), *none = NULL;

		if (!c)
			return NULL;
		c->idx = i;
		atomic_store(&c->alive, 2);
		if (atomic_compare_exchange_strong(&ctx_tab[i], &none, c))
			return c;
		free(c);
	}
	return NULL;
}

int fqp_init(struct fqp_ctx **out, const struct fqp_comm_info *ci, const struct fqp_config *cfg)
{
	struct fqp_config dflt = {0};
	const char *page;
	struct ctxi *c;
	unsigned npool, nring;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	fqp_ticks_init();
	if (!cfg)
		cfg = &dflt;
	npool = cfg->pool_events ? cfg->pool_events
				 : env_uint("FABRICIQ_PROFILER_EVENTS", DEFAULT_POOL, 64, MAX_POOL);
	npool = npool > MAX_POOL ? MAX_POOL : npool;
	nring = pow2_at_least(cfg->ring_ops ? (cfg->ring_ops > MAX_RING ? MAX_RING : cfg->ring_ops)
					    : DEFAULT_RING);
	c = ctx_claim();
	if (!c) {
		INC(gn.init_failures);
		return -ENOSPC;
	}
	rc = ctx_alloc_mem(c, npool, nring);
	if (rc < 0) {
		atomic_store(&c->alive, 0);
		INC(gn.init_failures);
		return rc;
	}
	atomic_fetch_add(&c->gen8, 1);
	memset(c->ev, 0, (size_t)npool * sizeof(*c->ev));
	for (unsigned i = 0; i < npool; i++)
		atomic_store_explicit(&c->ev[i].gs, 1u << 8 | EV_FREE, memory_order_relaxed);
	fqp_pool_init(&c->pool, c->next, npool);
	fqp_wintab_init(c->win);
	fqp_opring_init(c->ring, nring);
	memset(&c->n, 0, sizeof(c->n));
	atomic_store(&c->joined_start, 0);
	c->ci = ci ? *ci : (struct fqp_comm_info){0};
	c->name[0] = 0;
	if (ci && ci->comm_name)
		strncat(c->name, ci->comm_name, sizeof(c->name) - 1);
	c->ci.comm_name = c->name;
	c->logfn = cfg->logfn;
	/* A reused context keeps its page mapped if it is the same file. */
	page = cfg->clock_page ? cfg->clock_page : getenv("FABRICIQ_CLOCK_PAGE");
	page = page && *page ? page : "/run/fabriciq/clock";
	if (c->clock && strcmp(c->clock_path, page) != 0) {
		fq_clock_page_reader_close(c->clock);
		c->clock = NULL;
	}
	if (!c->clock) {
		if (fq_clock_page_reader_open(page, &c->clock) < 0)
			c->clock = NULL;
		snprintf(c->clock_path, sizeof(c->clock_path), "%s", page);
	}
	if (c->logfn)
		c->logfn(NCCL_LOG_INFO, NCCL_INIT_FLAG, __FILE__, __LINE__,
			 "fabriciq: profiler: comm %016llx rank %d/%d, %u events, clock %s",
			 (unsigned long long)c->ci.comm_hash, c->ci.rank, c->ci.nranks, npool,
			 c->clock ? "the agent's global page" : "raw monotonic (no agent clock page)");
	atomic_store_explicit(&c->alive, 1, memory_order_release);
	*out = ctx_token(c);
	return 0;
}

/* At finalize, off NCCL's paths: the block for $FABRICIQ_PROFILER_DUMP
 * and one line for NCCL's log. */
static void finalize_report(struct fqp_ctx *tok, struct ctxi *c)
{
	const char *dump = getenv("FABRICIQ_PROFILER_DUMP");
	struct fqp_counts n;

	if (dump && *dump) {
		FILE *f = fopen(dump, "a");

		if (f) {
			fqp_report_write(tok, f);
			fclose(f);
		}
	}
	if (c->logfn && fqp_counts(tok, &n) == 0)
		c->logfn(NCCL_LOG_INFO, NCCL_INIT_FLAG, __FILE__, __LINE__,
			 "fabriciq: profiler: comm %016llx rank %d: %llu ops, %llu proxy ops, %llu steps, "
			 "%llu net "
			 "events; dropped %llu (pool) %llu (windows) %llu (op records)",
			 (unsigned long long)c->ci.comm_hash, c->ci.rank, (unsigned long long)n.ops_done,
			 (unsigned long long)n.stopped[FQP_EV_PROXY_OP],
			 (unsigned long long)n.stopped[FQP_EV_PROXY_STEP],
			 (unsigned long long)n.stopped[FQP_EV_NET], (unsigned long long)n.dropped_pool,
			 (unsigned long long)n.dropped_windows, (unsigned long long)n.dropped_ops);
}

int fqp_finalize(struct fqp_ctx *tok)
{
	struct ctxi *c = ctx_of(tok);

	if (!c) {
		INC(gn.bad_context);
		return -EINVAL;
	}
	sweep_pending(c, 0);
	finalize_report(tok, c);
	/* Dead from here: handles fail their check, memory stays for reuse. */
	atomic_store_explicit(&c->alive, 0, memory_order_release);
	return 0;
}

int fqp_counts(struct fqp_ctx *tok, struct fqp_counts *o)
{
	struct ctxi *c = ctx_of(tok);
	uint64_t st = 0, sp = 0;

	if (!c || !o)
		return -EINVAL;
	memset(o, 0, sizeof(*o));
	for (int t = 0; t < FQP_EV_NTYPES; t++) {
		o->started[t] = atomic_load(&c->n.started[t]);
		o->stopped[t] = atomic_load(&c->n.stopped[t]);
		st += o->started[t];
		sp += o->stopped[t];
	}
	o->states = atomic_load(&c->n.states);
	o->dropped_pool = atomic_load(&c->n.dropped_pool);
	o->dropped_windows = atomic_load(&c->n.dropped_windows);
	o->dropped_ops = atomic_load(&c->n.dropped_ops);
	o->unknown_type = atomic_load(&c->n.unknown_type);
	o->net_unknown = atomic_load(&c->n.net_unknown);
	o->ops_done = atomic_load(&c->n.ops_done);
	o->live = st - sp;
	return 0;
}

void fqp_global_counts(struct fqp_global_counts *o)
{
	o->bad_handle = atomic_load(&gn.bad_handle);
	o->bad_context = atomic_load(&gn.bad_context);
	o->init_failures = atomic_load(&gn.init_failures);
}

size_t fqp_drain_ops(struct fqp_ctx *tok, struct fqp_op_record *out, size_t n)
{
	struct ctxi *c = ctx_of(tok);
	size_t k = 0;

	if (!c || !out)
		return 0;
	sweep_pending(c, PENDING_SWEEP_NS);
	while (k < n && fqp_opring_pop(c->ring, &out[k]))
		k++;
	return k;
}

void fqp_sweep(struct fqp_ctx *tok, int64_t older_than_ns)
{
	struct ctxi *c = ctx_of(tok);

	if (c)
		sweep_pending(c, older_than_ns);
}

int fqp_windows(struct fqp_ctx *tok, int reset, void (*cb)(const struct fqp_window_sample *, void *),
		void *arg)
{
	struct ctxi *c = ctx_of(tok);

	return c ? fqp_wintab_read(c->win, reset, cb, arg) : -EINVAL;
}

int fqp_ctx_info(struct fqp_ctx *tok, struct fqp_comm_info *out, int *clock_synced)
{
	struct ctxi *c = ctx_of(tok);

	if (!c)
		return -EINVAL;
	if (out)
		*out = c->ci;
	if (clock_synced)
		*clock_synced = c->clock != NULL;
	return 0;
}

int fqp_ctx_now(struct fqp_ctx *tok, int64_t *out, int *sync)
{
	struct ctxi *c = ctx_of(tok);

	if (!c || !out || !sync)
		return -EINVAL;
	*out = to_global(c, fq_now_ns(), sync);
	return 0;
}
