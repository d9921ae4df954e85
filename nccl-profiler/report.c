/* report: a context's figures as text (see report.h). */
#include <errno.h>
#include <inttypes.h>

#include "nccl-profiler/names.h"
#include "nccl-profiler/report.h"

const char *fqp_win_kind_name(int kind)
{
	static const char *const n[] = {"?",          "coll",       "p2p_send",  "p2p_recv",
					"proxy_send", "proxy_recv", "step_send", "step_recv",
					"net_ib",     "net_sock",   "net_other", "other"};

	return kind >= 0 && kind < (int)(sizeof(n) / sizeof(n[0])) ? n[kind] : "?";
}

struct win_acc {
	FILE *f;
	uint64_t ib, sock;
};

static void put_window(const struct fqp_window_sample *w, void *arg)
{
	struct win_acc *a = arg;

	if (w->key.kind == FQP_W_NET_IB)
		a->ib += w->count;
	else if (w->key.kind == FQP_W_NET_SOCK)
		a->sock += w->count;
	if (!a->f)
		return;
	fprintf(a->f,
		"window kind=%s dev=%d sub=%d id=%" PRId64 " count=%" PRIu64 " bytes=%" PRIu64
		" mean_ns=%" PRIu64 " max_ns=%" PRIu64 "\n",
		fqp_win_kind_name(w->key.kind), w->key.dev, w->key.sub, w->key.id, w->count, w->bytes,
		w->count ? w->dur_sum_ns / w->count : 0, w->dur_max_ns);
}

int fqp_report_write(struct fqp_ctx *ctx, FILE *f)
{
	struct fqp_counts c;
	struct fqp_global_counts g;
	struct fqp_comm_info ci;
	struct win_acc a = {0};
	struct fqp_op_record r[64];
	int synced;
	size_t n;

	if (fqp_counts(ctx, &c) < 0 || fqp_ctx_info(ctx, &ci, &synced) < 0)
		return -EINVAL;
	fqp_global_counts(&g);
	fqp_windows(ctx, 0, put_window, &a); /* the net totals first */
	fprintf(f,
		"profiler comm=%016" PRIx64 " rank=%d nranks=%d clock=%s ops=%" PRIu64 " colls=%" PRIu64
		" p2ps=%" PRIu64 " proxy_ops=%" PRIu64 " steps=%" PRIu64 " net=%" PRIu64 " net_ib=%" PRIu64
		" net_sock=%" PRIu64 " states=%" PRIu64 " live=%" PRIu64 " dropped_pool=%" PRIu64
		" dropped_windows=%" PRIu64 " dropped_ops=%" PRIu64 " unknown_type=%" PRIu64
		" net_unknown=%" PRIu64 " bad_handle=%" PRIu64 "\n",
		ci.comm_hash, ci.rank, ci.nranks, synced ? "global" : "raw", c.ops_done,
		c.stopped[FQP_EV_COLL], c.stopped[FQP_EV_P2P], c.stopped[FQP_EV_PROXY_OP],
		c.stopped[FQP_EV_PROXY_STEP], c.stopped[FQP_EV_NET], a.ib, a.sock, c.states, c.live,
		c.dropped_pool, c.dropped_windows, c.dropped_ops, c.unknown_type, c.net_unknown,
		g.bad_handle);
	a.f = f;
	fqp_windows(ctx, 0, put_window, &a);
	while ((n = fqp_drain_ops(ctx, r, sizeof(r) / sizeof(r[0]))) > 0)
		for (size_t i = 0; i < n; i++)
			fprintf(f,
				"op func=%s algo=%s proto=%s bytes=%" PRIu64 " start_ns=%" PRId64
				" end_ns=%" PRId64 " gbps=%.3f sync=%d proxy_ops=%d\n",
				fqp_func_name(r[i].func), fqp_algo_name(r[i].algo),
				fqp_proto_name(r[i].proto), r[i].bytes, r[i].start_ns, r[i].end_ns, r[i].gbps,
				r[i].synchronised, r[i].proxy_ops);
	fprintf(f, "end\n");
	return 0;
}
