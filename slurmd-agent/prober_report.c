/* prober_report: the prober's report windows and counters (prober.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "slurmd-agent/prober_int.h"

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* {min,p50,p90,p99,max} of the n values v, each shifted by `shift`; n = 0
 * without samples. */
static struct fq_owd_stats stats_of(int64_t *v, unsigned n, int64_t shift)
{
	struct fq_owd_stats o = {0};

	if (!n)
		return o;
	qsort(v, n, sizeof(v[0]), cmp64);
	o.n = n;
	o.min = v[0] + shift;
	o.p50 = v[n / 2] + shift;
	o.p90 = v[(n * 9) / 10] + shift;
	o.p99 = v[(n * 99) / 100] + shift;
	o.max = v[n - 1] + shift;
	return o;
}

static struct fq_owd_stats percentiles(struct samples *s, int64_t shift)
{
	return stats_of(s->v, s->n, shift);
}

/* A path's flows' names into r (fq_prober_states). */
static void flow_names(const struct path *t, struct fq_path_report *r)
{
	r->n_flows = t->nic->n_flows;
	for (unsigned k = 0; k < r->n_flows; k++) {
		r->flows[k].established = t->flows[k].established;
		r->flows[k].port = t->addr.kind == FQ_PEER_IPV4 ? (uint16_t)(t->addr.port + k) : 0;
	}
}

/*
 * The estimate to publish: a fresh fit, unless its hard bound is worse than
 * the held estimate's bound aged to now. A standing queue in one direction
 * (a saturated link for longer than the window) inflates that direction's
 * lower envelope and so the fresh bound; the held estimate, extrapolated
 * with its drift, is then the better one.
 */
static int choose_estimate(const struct fq_prober *p, struct path *t, int64_t now,
			   struct fq_clock_estimate *out, int *held)
{
	struct fq_clock_estimate fresh;
	int have = fq_clock_fit_estimate(t->fit, now, &fresh) == 0;
	int64_t age = now - t->held.at_ns, aged = 0;
	double drift, drift_unc_ppb;

	/* The drift used to extrapolate is itself uncertain: about two bounds
	 * over its baseline (the long one once there is one, else the fit's
	 * window). A held estimate's bound grows at that rate (plus the
	 * oscillator's wander), so a fresh estimate soon wins again unless
	 * a standing queue keeps its bound large. */
	/* The fit's own drift: it comes from up to 2048 clean buckets (a
	 * baseline of minutes), better than two points of our own. */
	drift = t->held.drift_ppb;
	drift_unc_ppb = 2e9 * (double)t->held.bound_ns /
			(double)(t->long_baseline_ns ? t->long_baseline_ns : p->cfg.window_ns);
	if (t->held.at_ns)
		aged = t->held.bound_ns + (int64_t)((HOLD_AGING_PPB + drift_unc_ppb) * (double)age / 1e9);
	*held = 0;
	if (have && (!t->held.at_ns || fresh.bound_ns <= aged)) {
		t->held = fresh;
		if (!t->anchor.at_ns)
			t->anchor = fresh;
		if (fresh.at_ns - t->anchor.at_ns >= ANCHOR_NS) {
			t->long_baseline_ns = fresh.at_ns - t->anchor.at_ns;
			/* slide the baseline: keep it between 1x and 2x ANCHOR_NS */
			if (t->long_baseline_ns >= 2 * ANCHOR_NS)
				t->anchor = fresh;
		}
		*out = fresh;
		return 1;
	}
	if (!t->held.at_ns)
		return 0;
	*out = t->held;
	out->offset_ns = t->held.offset_ns + (int64_t)(drift * (double)age / 1e9);
	out->drift_ppb = drift;
	out->bound_ns = aged;
	out->at_ns = now;
	*held = 1;
	return 1;
}

size_t fq_prober_states(const struct fq_prober *p, struct fq_path_report *out, size_t cap)
{
	size_t n = 0;

	for (unsigned i = 0; i < p->n_paths && n < cap; i++) {
		const struct fq_path *live = &p->paths[i].live;
		struct fq_path_report *r;

		if (!p->paths[i].nic)
			continue;
		r = &out[n++];
		memset(r, 0, sizeof(*r));
		snprintf(r->local_nic, sizeof(r->local_nic), "%s", p->paths[i].nic->name);
		snprintf(r->peer_node, sizeof(r->peer_node), "%s", p->paths[i].peer_node);
		snprintf(r->peer_nic, sizeof(r->peer_nic), "%s", p->paths[i].peer_nic);
		fq_peer_addr_format(&p->paths[i].addr, r->peer_addr, sizeof(r->peer_addr));
		r->peer_ipv4 = p->paths[i].addr.kind == FQ_PEER_IPV4 ? p->paths[i].addr.ipv4 : 0;
		r->up = live->up;
		r->changed_ns = live->changed_ns;
		flow_names(&p->paths[i], r);
	}
	return n;
}

size_t fq_prober_report(struct fq_prober *p, struct fq_path_report *out, size_t cap)
{
	int64_t now = fq_now_ns();
	size_t n = 0;

	for (unsigned i = 0; i < p->n_paths && n < cap; i++) {
		struct path *t = &p->paths[i];
		struct fq_path_report *r = &out[n++];
		int held, have;

		if (!t->nic) {
			n--;
			continue;
		}
		memset(r, 0, sizeof(*r));
		have = choose_estimate(p, t, now, &r->est, &held);
		snprintf(r->local_nic, sizeof(r->local_nic), "%s", t->nic->name);
		snprintf(r->peer_node, sizeof(r->peer_node), "%s", t->peer_node);
		snprintf(r->peer_nic, sizeof(r->peer_nic), "%s", t->peer_nic);
		fq_peer_addr_format(&t->addr, r->peer_addr, sizeof(r->peer_addr));
		r->peer_ipv4 = t->addr.kind == FQ_PEER_IPV4 ? t->addr.ipv4 : 0;
		r->up = t->live.up;
		r->changed_ns = t->live.changed_ns;
		r->flaps_last_hour = fq_path_flaps_since(&t->live, now, 3600 * FQ_NSEC_PER_SEC);
		r->flaps_total = t->live.flaps;
		r->sent = t->sent;
		r->answered = t->answered;
		r->lost = t->lost;
		r->pure_fwd = t->pure_fwd;
		r->pure_rev = t->pure_rev;
		/* one-way delays: the raw differences corrected by the offset
		 * estimate (fwd = owd + theta, rev = owd - theta) */
		r->fwd = percentiles(&t->fwd, have ? -r->est.offset_ns : 0);
		r->rev = percentiles(&t->rev, have ? r->est.offset_ns : 0);
		r->rtt = percentiles(&t->rtt, 0);
		r->synchronised = have;
		r->held = have && held;
		r->peer_epoch_valid = t->peer_epoch_valid;
		r->peer_epoch_ns = t->peer_epoch_ns;
		r->window_start_ns = t->window_start_ns;
		r->window_end_ns = now;
		flow_names(t, r);
		for (unsigned k = 0; k < r->n_flows; k++) {
			struct flow *f = &t->flows[k];
			struct fq_flow_report *fr = &r->flows[k];

			fr->sent = f->sent;
			fr->answered = f->answered;
			fr->lost = f->lost;
			fr->fwd = stats_of(f->fwd.v, f->fwd.n, have ? -r->est.offset_ns : 0);
			fr->rev = stats_of(f->rev.v, f->rev.n, have ? r->est.offset_ns : 0);
			f->sent = f->answered = f->lost = 0;
			f->fwd.n = f->rev.n = 0;
		}
		t->window_start_ns = now;
		t->sent = t->answered = t->lost = t->pure_fwd = t->pure_rev = 0;
		t->fwd.n = t->rev.n = t->rtt.n = 0;
	}
	return n;
}

struct json_object *fq_prober_counters(const struct fq_prober *p)
{
	struct json_object *o = json_object_new_object(), *nics = NULL;

	json_object_object_add(o, "malformed_packets", json_object_new_uint64(p->bad_packets));
	json_object_object_add(o, "unknown_senders", json_object_new_uint64(p->unknown_sender));
	json_object_object_add(o, "stale_sessions", json_object_new_uint64(p->stale_session));
	json_object_object_add(o, "loop_stalls", json_object_new_uint64(p->loop_stalls));
	json_object_object_add(o, "tx_without_stamp", json_object_new_uint64(p->no_tx_stamp));
	json_object_object_add(o, "tx_key_mismatch", json_object_new_uint64(p->tx_key_mismatch));
	for (unsigned i = 0; i < p->n_nics; i++) {
		const struct fq_probe_transport *tp = p->nics[i].tp;
		struct json_object *t = json_object_new_object();
		char addr[FQ_PEER_ADDR_STRLEN];

		if (!nics) {
			nics = json_object_new_object();
			json_object_object_add(o, "transports", nics);
		}
		json_object_object_add(t, "kind", json_object_new_string(tp->kind));
		json_object_object_add(t, "rx_stamps",
				       json_object_new_string(fq_stamp_kind_name(tp->rx_stamps)));
		json_object_object_add(t, "tx_stamps",
				       json_object_new_string(fq_stamp_kind_name(tp->tx_stamps)));
		json_object_object_add(t, "flows", json_object_new_uint64(p->nics[i].n_flows));
		if (fq_prober_nic_address(p, p->nics[i].name, addr, sizeof(addr)) == 0)
			json_object_object_add(t, "address", json_object_new_string(addr));
		json_object_object_add(nics, p->nics[i].name, t);
	}
	return o;
}
