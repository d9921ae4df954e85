/*
 * Every ncclProfiler_vN table decodes its version's descriptors: each
 * version gets one collective (group -> coll -> proxyOp -> proxyStep ->
 * IB QP and socket events) and one p2p in that version's own layout, built
 * here field by field, and the op records and windows the plugin keeps
 * must carry what was given (operation, algorithm, protocol, bytes, peer,
 * QP, device, opcode, length).
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl-profiler/abi/profiler_v1.h"
#include "nccl-profiler/abi/profiler_v2.h"
#include "nccl-profiler/abi/profiler_v3.h"
#include "nccl-profiler/abi/profiler_v4.h"
#include "nccl-profiler/abi/profiler_v5.h"
#include "nccl-profiler/abi/profiler_v6.h"
#include "nccl-profiler/names.h"
#include "nccl-profiler/prof.h"
#include "tests/unit/tap.h"

extern ncclProfiler_v1_t ncclProfiler_v1;
extern ncclProfiler_v2_t ncclProfiler_v2;
extern ncclProfiler_v3_t ncclProfiler_v3;
extern ncclProfiler_v4_t ncclProfiler_v4;
extern ncclProfiler_v5_t ncclProfiler_v5;
extern ncclProfiler_v6_t ncclProfiler_v6;

static ncclProfilerNetIbDescr_v1_t ib = {
    .type = ncclProfileQp, .qp = {.device = 2, .wr_id = 99, .opcode = 1, .qpNum = 4711, .length = 8192}};
static ncclProfilerNetSockDescr_v1_t sock = {.type = ncclProfileSocket,
					     .sock = {.fd = 33, .op = 1, .length = 300}};

/* What the windows hold, found by kind and id. */
struct found {
	int kind;
	int64_t id;
	struct fqp_window_sample w;
	int n;
};

static void find_cb(const struct fqp_window_sample *w, void *arg)
{
	struct found *f = arg;

	if (w->key.kind == f->kind && w->key.id == f->id) {
		f->w = *w;
		f->n++;
	}
}

static struct fqp_window_sample win(void *ctx, int kind, int64_t id, int *n)
{
	struct found f = {.kind = kind, .id = id};

	fqp_windows(ctx, 0, find_cb, &f);
	*n = f.n;
	return f.w;
}

/* The checks every version shares, after its sequence ran. */
static void check_common(int v, void *ctx, int has_net, uint64_t step_bytes, int has_algo, uint64_t hash)
{
	struct fqp_op_record r[4];
	struct fqp_window_sample w;
	struct fqp_counts c;
	size_t n;
	int k;

	n = fqp_drain_ops(ctx, r, 4);
	is_int(n, 2, "v%d: two operations completed (coll and p2p, each by its proxyOp)", v);
	if (n == 2) {
		ok(!r[0].is_p2p && r[0].func == FQP_FUNC_ALLREDUCE && r[0].bytes == 4000 &&
		       r[0].proxy_ops == 1,
		   "v%d: coll: AllReduce, 1000 x float32 = 4000 bytes, 1 proxyOp (func %d bytes %llu)", v,
		   r[0].func, (unsigned long long)r[0].bytes);
		if (has_algo)
			ok(r[0].algo == FQP_ALGO_RING && r[0].proto == FQP_PROTO_LL128 && r[0].seq == 42,
			   "v%d: coll: RING, LL128, seq 42 (%d %d %llu)", v, r[0].algo, r[0].proto,
			   (unsigned long long)r[0].seq);
		else
			ok(1, "v%d: (no algorithm in this version)", v);
		ok(r[0].end_ns >= r[0].start_ns && !r[0].synchronised,
		   "v%d: coll: end after start, raw clock (no agent page here)", v);
		ok(r[0].comm_hash == hash && r[1].comm_hash == hash,
		   "v%d: communicator %llx (v1..v3: the descriptor's, later: init's) (%llx)", v,
		   (unsigned long long)hash, (unsigned long long)r[0].comm_hash);
		ok(r[1].is_p2p && r[1].func == FQP_FUNC_SEND && r[1].peer == 5 && r[1].bytes == 24,
		   "v%d: p2p: Send to 5, 3 x int64 = 24 bytes (func %d peer %d bytes %llu)", v, r[1].func,
		   r[1].peer, (unsigned long long)r[1].bytes);
	} else {
		skip(5, "records missing");
	}
	w = win(ctx, FQP_W_PROXY_SEND, 3, &k);
	ok(k == 1 && w.count == 1 && w.bytes == 4000,
	   "v%d: proxyOp window: send to peer 3, 4000 bytes (%llu)", v, (unsigned long long)w.bytes);
	w = win(ctx, FQP_W_STEP_SEND, 3, &k);
	ok(k == 1 && w.count == 1 && w.bytes == step_bytes,
	   "v%d: step window: peer 3 inherited, %llu bytes (%llu)", v, (unsigned long long)step_bytes,
	   (unsigned long long)w.bytes);
	w = win(ctx, FQP_W_NET_IB, 4711, &k);
	if (has_net)
		ok(k == 1 && w.count == 1 && w.key.dev == 2 && w.key.sub == 1 && w.bytes == 8192,
		   "v%d: IB QP window: dev 2, QP 4711, opcode 1, 8192 bytes", v);
	else
		ok(k == 0, "v%d: no netPlugin events in this version", v);
	w = win(ctx, FQP_W_NET_SOCK, 33, &k);
	if (has_net)
		ok(k == 1 && w.count == 1 && w.key.sub == 1 && w.bytes == 300,
		   "v%d: socket window: fd 33, recv, 300 bytes", v);
	else
		ok(k == 0, "v%d: no socket events", v);
	fqp_counts(ctx, &c);
	ok(c.live == 0 && c.dropped_pool == 0 && c.unknown_type == 0,
	   "v%d: nothing live, dropped or unknown (live %llu)", v, (unsigned long long)c.live);
}

/* The proxy side, the same fields in every version: a proxyOp under the
 * task, a step under it, then (v3+) an IB and a socket event. */
#define PROXY_SEQ(T, D, A, task, has_net, v13, SETNET)                                                       \
	do {                                                                                                 \
		D d_ = {.type = ncclProfileProxyOp, .parentObj = (task)};                                    \
		A a_;                                                                                        \
		void *op_ = NULL, *st_ = NULL, *n1_ = NULL, *n2_ = NULL;                                     \
		d_.proxyOp.pid = getpid();                                                                   \
		d_.proxyOp.peer = 3;                                                                         \
		d_.proxyOp.nSteps = 1;                                                                       \
		d_.proxyOp.chunkSize = 4000;                                                                 \
		d_.proxyOp.isSend = 1;                                                                       \
		(T).startEvent(ctx, &op_, &d_);                                                              \
		d_ = (D){.type = ncclProfileProxyStep, .parentObj = op_};                                    \
		d_.proxyStep.step = 0;                                                                       \
		(T).startEvent(ctx, &st_, &d_);                                                              \
		memset(&a_, 0, sizeof(a_));                                                                  \
		if (v13) { /* 2.23..2.26: the op's states carry the bytes */                                 \
			memcpy(&a_, &(size_t){4000}, sizeof(size_t));                                        \
			(T).recordEventState(op_, ncclProfilerProxyOpSendPosted, &a_);                       \
			(T).recordEventState(st_, ncclProfilerProxyStepSendWait, &a_);                       \
		} else {                                                                                     \
			memcpy(&a_, &(size_t){4000}, sizeof(size_t));                                        \
			(T).recordEventState(st_, ncclProfilerProxyStepSendWait, &a_);                       \
		}                                                                                            \
		if (has_net) {                                                                               \
			d_ = (D){.type = ncclProfileNetPlugin, .parentObj = st_};                            \
			SETNET(d_, NCCL_PROFILER_NET_TYPE_IB | 1, &ib);                                      \
			(T).startEvent(ctx, &n1_, &d_);                                                      \
			SETNET(d_, NCCL_PROFILER_NET_TYPE_SOCK | 1, &sock);                                  \
			(T).startEvent(ctx, &n2_, &d_);                                                      \
			(T).stopEvent(n1_);                                                                  \
			(T).stopEvent(n2_);                                                                  \
		}                                                                                            \
		(T).stopEvent(st_);                                                                          \
		(T).stopEvent(op_);                                                                          \
	} while (0)
#define SET_NET(d, id_, data_)                                                                               \
	do {                                                                                                 \
		(d).netPlugin.id = (id_);                                                                    \
		(d).netPlugin.data = (data_);                                                                \
	} while (0)
#define NO_NET(d, id_, data_) ((void)(d), (void)(data_))

/* A p2p with one proxyOp (to complete it). */
#define P2P_PROXY(T, D, task)                                                                                \
	do {                                                                                                 \
		D d_ = {.type = ncclProfileProxyOp, .parentObj = (task)};                                    \
		void *op_ = NULL;                                                                            \
		d_.proxyOp.pid = getpid();                                                                   \
		d_.proxyOp.peer = 5;                                                                         \
		d_.proxyOp.isSend = 1;                                                                       \
		(T).startEvent(ctx, &op_, &d_);                                                              \
		(T).stopEvent(op_);                                                                          \
	} while (0)

static void test_v1(void)
{
	ncclProfilerEventDescr_v1_t d;
	void *ctx = NULL, *g = NULL, *c = NULL, *p = NULL;
	int mask = 0;

	ncclProfiler_v1.init(&ctx, &mask);
	ok(ctx && mask == fqp_default_mask(), "v1: init gives a context and the mask 0x%x", mask);
	is_str(ncclProfiler_v1.name, "fabriciq", "v1: name");
	d = (ncclProfilerEventDescr_v1_t){.type = ncclProfileGroup};
	ncclProfiler_v1.startEvent(ctx, &g, &d);
	d = (ncclProfilerEventDescr_v1_t){.type = ncclProfileColl, .parentObj = g};
	d.coll.seqNumber = 42;
	d.coll.commHash = 0x5eed;
	d.coll.func = 4; /* ncclFuncAllReduce in 2.23 */
	d.coll.count = 1000;
	d.coll.datatype = 7; /* ncclFloat32 */
	d.coll.algo = 1;     /* RING */
	d.coll.proto = 1;    /* LL128 */
	ncclProfiler_v1.startEvent(ctx, &c, &d);
	ncclProfiler_v1.stopEvent(c);
	ncclProfiler_v1.stopEvent(g);
	d = (ncclProfilerEventDescr_v1_t){.type = ncclProfileP2p};
	d.p2p.func = 6; /* Send */
	d.p2p.commHash = 0x5eed;
	d.p2p.count = 3;
	d.p2p.datatype = 4; /* ncclInt64 */
	d.p2p.peer = 5;
	ncclProfiler_v1.startEvent(ctx, &p, &d);
	ncclProfiler_v1.stopEvent(p);
	PROXY_SEQ(ncclProfiler_v1, ncclProfilerEventDescr_v1_t, ncclProfilerEventStateArgs_v1_t, c, 0, 1,
		  NO_NET);
	P2P_PROXY(ncclProfiler_v1, ncclProfilerEventDescr_v1_t, p);
	check_common(1, ctx, 0, 0, 1, 0x5eed);
	ncclProfiler_v1.finalize(ctx);
}

/* v2 and v3: the same string-named layout (v3 adds the net events). */
#define V23(T, D, A, v, has_net, SETNET)                                                                     \
	do {                                                                                                 \
		D d;                                                                                         \
		void *ctx = NULL, *g = NULL, *c = NULL, *p = NULL;                                           \
		int mask = 0;                                                                                \
		(T).init(&ctx, &mask);                                                                       \
		ok(ctx &&mask == fqp_default_mask(), "v%d: init", v);                                        \
		d = (D){.type = ncclProfileGroup};                                                           \
		(T).startEvent(ctx, &g, &d);                                                                 \
		d = (D){.type = ncclProfileColl, .parentObj = g};                                            \
		d.coll.seqNumber = 42;                                                                       \
		d.coll.commHash = 0x5eed;                                                                    \
		d.coll.func = "AllReduce";                                                                   \
		d.coll.count = 1000;                                                                         \
		d.coll.datatype = "ncclFloat32";                                                             \
		d.coll.algo = "RING";                                                                        \
		d.coll.proto = "LL128";                                                                      \
		(T).startEvent(ctx, &c, &d);                                                                 \
		(T).stopEvent(c);                                                                            \
		(T).stopEvent(g);                                                                            \
		d = (D){.type = ncclProfileP2p};                                                             \
		d.p2p.commHash = 0x5eed;                                                                     \
		d.p2p.func = "Send";                                                                         \
		d.p2p.count = 3;                                                                             \
		d.p2p.datatype = "ncclInt64";                                                                \
		d.p2p.peer = 5;                                                                              \
		(T).startEvent(ctx, &p, &d);                                                                 \
		(T).stopEvent(p);                                                                            \
		PROXY_SEQ(T, D, A, c, has_net, 1, SETNET);                                                   \
		P2P_PROXY(T, D, p);                                                                          \
		check_common(v, ctx, has_net, 0, 1, 0x5eed);                                                 \
		(T).finalize(ctx);                                                                           \
	} while (0)

static void test_v2(void)
{
	V23(ncclProfiler_v2, ncclProfilerEventDescr_v2_t, ncclProfilerEventStateArgs_v2_t, 2, 0, NO_NET);
}

static void test_v3(void)
{
	V23(ncclProfiler_v3, ncclProfilerEventDescr_v3_t, ncclProfilerEventStateArgs_v3_t, 3, 1, SET_NET);
}

static void test_v4(void)
{
	ncclProfilerEventDescr_v4_t d;
	void *ctx = NULL, *g = NULL, *c = NULL, *p = NULL;
	struct fqp_comm_info ci;
	int mask = 0, synced;

	ncclProfiler_v4.init(&ctx, &mask, "comm-a", 0xabcdef, 2, 16, 7, NULL);
	ok(ctx && mask == fqp_default_mask(), "v4: init");
	ok(fqp_ctx_info(ctx, &ci, &synced) == 0 && ci.comm_hash == 0xabcdef && ci.rank == 7 &&
	       ci.nranks == 16 && ci.nnodes == 2 && strcmp(ci.comm_name, "comm-a") == 0,
	   "v4: init's communicator: hash, name, nodes, ranks, rank");
	d = (ncclProfilerEventDescr_v4_t){.type = ncclProfileGroup};
	ncclProfiler_v4.startEvent(ctx, &g, &d);
	d = (ncclProfilerEventDescr_v4_t){.type = ncclProfileColl, .parentObj = g};
	d.coll.seqNumber = 42;
	d.coll.func = "AllReduce";
	d.coll.count = 1000;
	d.coll.datatype = "ncclFloat32";
	d.coll.algo = "RING";
	d.coll.proto = "LL128";
	d.coll.nChannels = 4;
	ncclProfiler_v4.startEvent(ctx, &c, &d);
	ncclProfiler_v4.stopEvent(c);
	ncclProfiler_v4.stopEvent(g);
	d = (ncclProfilerEventDescr_v4_t){.type = ncclProfileP2p};
	d.p2p.func = "Send";
	d.p2p.count = 3;
	d.p2p.datatype = "ncclInt64";
	d.p2p.peer = 5;
	ncclProfiler_v4.startEvent(ctx, &p, &d);
	ncclProfiler_v4.stopEvent(p);
	PROXY_SEQ(ncclProfiler_v4, ncclProfilerEventDescr_v4_t, ncclProfilerEventStateArgs_v4_t, c, 1, 0,
		  SET_NET);
	P2P_PROXY(ncclProfiler_v4, ncclProfilerEventDescr_v4_t, p);
	check_common(4, ctx, 1, 4000, 1, 0xabcdef);
	ncclProfiler_v4.finalize(ctx);
}

/* v5 and v6: API events parent the tasks, the group is parentGroup. */
#define V56(T, D, A, v)                                                                                      \
	do {                                                                                                 \
		D d;                                                                                         \
		void *ctx = NULL, *ga = NULL, *ca = NULL, *pa = NULL, *g = NULL, *c = NULL, *p = NULL;       \
		struct fqp_counts n;                                                                         \
		int mask = 0;                                                                                \
		(T).init(&ctx, 0x1234, &mask, "comm-b", 1, 2, 0, NULL);                                      \
		ok(ctx &&mask == fqp_default_mask(), "v%d: init", v);                                        \
		d = (D){.type = ncclProfileGroupApi};                                                        \
		d.groupApi.groupDepth = 1;                                                                   \
		(T).startEvent(ctx, &ga, &d);                                                                \
		d = (D){.type = ncclProfileCollApi, .parentObj = ga};                                        \
		d.collApi.func = "AllReduce";                                                                \
		d.collApi.count = 1000;                                                                      \
		d.collApi.datatype = "ncclFloat32";                                                          \
		(T).startEvent(ctx, &ca, &d);                                                                \
		d = (D){.type = ncclProfileP2pApi, .parentObj = ga};                                         \
		d.p2pApi.func = "Send";                                                                      \
		(T).startEvent(ctx, &pa, &d);                                                                \
		d = (D){.type = ncclProfileGroup};                                                           \
		(T).startEvent(ctx, &g, &d);                                                                 \
		d = (D){.type = ncclProfileColl, .parentObj = ca};                                           \
		d.coll.seqNumber = 42;                                                                       \
		d.coll.func = "AllReduce";                                                                   \
		d.coll.count = 1000;                                                                         \
		d.coll.datatype = "ncclFloat32";                                                             \
		d.coll.algo = "RING";                                                                        \
		d.coll.proto = "LL128";                                                                      \
		d.coll.parentGroup = g;                                                                      \
		(T).startEvent(ctx, &c, &d);                                                                 \
		d = (D){.type = ncclProfileP2p, .parentObj = pa};                                            \
		d.p2p.func = "Send";                                                                         \
		d.p2p.count = 3;                                                                             \
		d.p2p.datatype = "ncclInt64";                                                                \
		d.p2p.peer = 5;                                                                              \
		d.p2p.parentGroup = g;                                                                       \
		(T).startEvent(ctx, &p, &d);                                                                 \
		(T).stopEvent(c);                                                                            \
		(T).stopEvent(p);                                                                            \
		(T).stopEvent(g);                                                                            \
		(T).recordEventState(ga, ncclProfilerGroupEndApiStart, NULL);                                \
		(T).stopEvent(ca);                                                                           \
		(T).stopEvent(pa);                                                                           \
		(T).stopEvent(ga);                                                                           \
		PROXY_SEQ(T, D, A, c, 1, 0, SET_NET);                                                        \
		P2P_PROXY(T, D, p);                                                                          \
		check_common(v, ctx, 1, 4000, 1, 0x1234);                                                    \
		fqp_counts(ctx, &n);                                                                         \
		ok(n.stopped[FQP_EV_GROUP_API] == 1 && n.stopped[FQP_EV_COLL_API] == 1 &&                    \
		       n.stopped[FQP_EV_P2P_API] == 1 && n.stopped[FQP_EV_GROUP] == 1,                       \
		   "v%d: the API events and the group counted", v);                                          \
		EXTRA_##v(T, D);                                                                             \
		(T).finalize(ctx);                                                                           \
	} while (0)
#define EXTRA_5(T, D)
#define EXTRA_6(T, D)                                                                                        \
	do {                                                                                                 \
		void *ce = NULL, *cb = NULL;                                                                 \
		d = (D){.type = ncclProfileCeColl};                                                          \
		d.ceColl.func = "AllGather";                                                                 \
		d.ceColl.count = 8;                                                                          \
		(T).startEvent(ctx, &ce, &d);                                                                \
		d = (D){.type = ncclProfileCeBatch, .parentObj = ce};                                        \
		d.ceCollBatch.numOps = 2;                                                                    \
		d.ceCollBatch.totalBytes = 777;                                                              \
		(T).startEvent(ctx, &cb, &d);                                                                \
		(T).stopEvent(cb);                                                                           \
		(T).stopEvent(ce);                                                                           \
		int k_;                                                                                      \
		struct fqp_window_sample w_ = win(ctx, FQP_W_OTHER, FQP_EV_CE_BATCH, &k_);                   \
		fqp_counts(ctx, &n);                                                                         \
		ok(ce &&cb &&n.stopped[FQP_EV_CE_COLL] == 1 && k_ == 1 && w_.bytes == 777,                   \
		   "v6: copy-engine collective and batch (777 bytes) taken");                                \
	} while (0)

static void test_v5(void)
{
	V56(ncclProfiler_v5, ncclProfilerEventDescr_v5_t, ncclProfilerEventStateArgs_v5_t, 5);
}

static void test_v6(void)
{
	V56(ncclProfiler_v6, ncclProfilerEventDescr_v6_t, ncclProfilerEventStateArgs_v6_t, 6);
}

/* Layout: sizes and offsets measured by compiling NCCL 2.30's own headers
 * (src/include/plugin/profiler/profiler_v1.h .. v6.h, net_ib_v1.h,
 * net_socket_v1.h) on x86_64; ours must match them exactly. */
static void test_layout(void)
{
	ok(sizeof(ncclProfilerEventDescr_v1_t) == 120 && sizeof(ncclProfilerEventDescr_v2_t) == 128 &&
	       sizeof(ncclProfilerEventDescr_v3_t) == 120 && sizeof(ncclProfilerEventDescr_v4_t) == 104 &&
	       sizeof(ncclProfilerEventDescr_v5_t) == 112 && sizeof(ncclProfilerEventDescr_v6_t) == 112,
	   "descriptor sizes v1..v6: %zu %zu %zu %zu %zu %zu (NCCL: 120 128 120 104 112 112)",
	   sizeof(ncclProfilerEventDescr_v1_t), sizeof(ncclProfilerEventDescr_v2_t),
	   sizeof(ncclProfilerEventDescr_v3_t), sizeof(ncclProfilerEventDescr_v4_t),
	   sizeof(ncclProfilerEventDescr_v5_t), sizeof(ncclProfilerEventDescr_v6_t));
	ok(offsetof(ncclProfilerEventDescr_v1_t, coll.isNvls) == 112 &&
	       offsetof(ncclProfilerEventDescr_v1_t, p2p.peer) == 72 &&
	       offsetof(ncclProfilerEventDescr_v2_t, coll.proto) == 120 &&
	       offsetof(ncclProfilerEventDescr_v3_t, coll.proto) == 112 &&
	       offsetof(ncclProfilerEventDescr_v3_t, netPlugin.data) == 32,
	   "v1..v3 offsets: v1 coll.isNvls 112, p2p.peer 72; v2 coll.proto 120; v3 coll.proto 112, "
	   "netPlugin.data 32");
	ok(offsetof(ncclProfilerEventDescr_v4_t, coll.proto) == 96 &&
	       offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104 &&
	       offsetof(ncclProfilerEventDescr_v5_t, p2p.parentGroup) == 64 &&
	       offsetof(ncclProfilerEventDescr_v6_t, coll.parentGroup) == 104 &&
	       offsetof(ncclProfilerEventDescr_v6_t, ceColl.stream) == 104 &&
	       offsetof(ncclProfilerEventDescr_v6_t, ceCollBatch.useIntraSync) == 40,
	   "v4..v6 offsets: coll.proto 96; parentGroup 104 / p2p 64; ceColl.stream 104; "
	   "ceCollBatch.useIntraSync 40");
	ok(offsetof(ncclProfilerEventDescr_v4_t, proxyOp.isSend) == 44 &&
	       offsetof(ncclProfilerEventDescr_v1_t, proxyOp.isSend) == 44 &&
	       offsetof(ncclProfilerNetIbDescr_v1_t, qp.length) == 32 &&
	       offsetof(ncclProfilerNetSockDescr_v1_t, sock.length) == 16,
	   "proxyOp.isSend 44 in v1 and v4; IB qp.length 32; socket length 16");
}

/* A send step as NCCL's proxy runs it (src/transport/net.cc): started
 * when its buffer is posted, SendGPUWait until the kernel filled it,
 * SendPeerWait until the receiver gave credit, SendWait once isend took
 * it, stopped when the network completed it. Its send window times the
 * wire, from SendWait; a receive step, from its start. */
static void test_wire_time(void)
{
	ncclProfilerEventDescr_v6_t d = {.type = ncclProfileProxyOp};
	ncclProfilerEventStateArgs_v6_t a = {.proxyStep = {.transSize = 65536}};
	struct timespec ms20 = {0, 20000000}, ms2 = {0, 2000000};
	struct fqp_window_sample w;
	void *ctx = NULL, *op = NULL, *st = NULL, *rop = NULL, *rst = NULL;
	int mask = 0, k;

	ncclProfiler_v6.init(&ctx, 0x77, &mask, "wire", 1, 2, 0, NULL);
	d.proxyOp.pid = getpid();
	d.proxyOp.peer = 6;
	d.proxyOp.isSend = 1;
	ncclProfiler_v6.startEvent(ctx, &op, &d);
	d.proxyOp.isSend = 0;
	ncclProfiler_v6.startEvent(ctx, &rop, &d);
	d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileProxyStep, .parentObj = op};
	ncclProfiler_v6.startEvent(ctx, &st, &d);
	d.parentObj = rop;
	ncclProfiler_v6.startEvent(ctx, &rst, &d);
	ncclProfiler_v6.recordEventState(st, ncclProfilerProxyStepSendGPUWait, &a);
	ncclProfiler_v6.recordEventState(rst, ncclProfilerProxyStepRecvWait, &a);
	nanosleep(&ms20, NULL);
	ncclProfiler_v6.recordEventState(st, ncclProfilerProxyStepSendPeerWait_v4, &a);
	nanosleep(&ms20, NULL);
	ncclProfiler_v6.recordEventState(st, ncclProfilerProxyStepSendWait, &a);
	nanosleep(&ms2, NULL);
	ncclProfiler_v6.recordEventState(st, ncclProfilerProxyStepSendWait, &a); /* again: the first counts */
	ncclProfiler_v6.stopEvent(st);
	ncclProfiler_v6.stopEvent(rst);
	ncclProfiler_v6.stopEvent(op);
	ncclProfiler_v6.stopEvent(rop);
	w = win(ctx, FQP_W_STEP_SEND, 6, &k);
	ok(k == 1 && w.count == 1 && w.bytes == 65536 && w.dur_sum_ns >= 2000000 && w.dur_sum_ns < 20000000,
	   "send step: 40 ms waiting for the GPU and the peer, 2 ms on the wire: timed 2-20 ms (%.1f ms)",
	   w.dur_sum_ns / 1e6);
	w = win(ctx, FQP_W_STEP_RECV, 6, &k);
	ok(k == 1 && w.count == 1 && w.dur_sum_ns >= 42000000,
	   "receive step: from its start, 42 ms or more (%.1f ms)", w.dur_sum_ns / 1e6);
	ncclProfiler_v6.finalize(ctx);
}

int main(void)
{
	setenv("FABRICIQ_CLOCK_PAGE", "/nonexistent", 1);
	unsetenv("FABRICIQ_PROFILER_DUMP");
	test_layout();
	test_v1();
	test_v2();
	test_v3();
	test_v4();
	test_v5();
	test_v6();
	test_wire_time();
	return done_testing();
}
