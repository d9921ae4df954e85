/*
 * detector_lroute: lanes' own routes (detector_lane.h,
 * fq_detector_lane_route). ECMP hashes each TCP lane by its own 5-tuple,
 * so a job's lanes may cross a spine its NIC pairs' probes do not: a
 * fabric incident is attached to the steps whose lanes cross its
 * component by the lanes' own routes where the agents traced them, by
 * their NIC pairs' probe routes where not (an IB lane, or one not traced
 * yet).
 */
#include <stdio.h>
#include <string.h>

#include "controller/detector_int.h"
#include "controller/detector_lane.h"

void det_lroute_drop(void *ctx, struct fq_captab_ent *e)
{
	struct lroute_ent *r = (struct lroute_ent *)e;

	(void)ctx;
	det_routes_free(r->route, r->nroute);
}

static struct lroute_key lroute_key(const struct step_key *sk, const struct lane_rec *l)
{
	return (struct lroute_key){.job = sk->job,
				   .step = sk->step,
				   .src_rank = l->src_rank,
				   .dst_rank = l->dst_rank,
				   .lane = l->lane};
}

const struct lroute_ent *det_lane_route(struct fq_detector *d, const struct step_key *sk,
					const struct lane_rec *l)
{
	struct lroute_key k = lroute_key(sk, l);
	const struct lroute_ent *r = (const struct lroute_ent *)fq_captab_find(&d->lroutes, &k);
	char src[2 * NODE_LEN + 2];

	if (!r || !r->nroute)
		return NULL;
	snprintf(src, sizeof(src), "%s/%s", l->p.src.node, l->p.src.nic);
	return strcmp(r->route[0], src) == 0 ? r : NULL; /* else the lane moved to another NIC since */
}

bool det_lane_crosses(struct fq_detector *d, const struct step_key *sk, const struct lane_rec *l,
		      const char *comp, bool loss)
{
	const struct lroute_ent *r = det_lane_route(d, sk, l);
	const struct path_ent *p = (const struct path_ent *)fq_captab_find(&d->paths, &l->p);
	const struct path_ent *back;

	if (r) {
		if (det_in_route(r->route, r->nroute, comp))
			return true;
		/* lost data, or lost acks: those come back the NIC pair's way */
		return loss && p && (back = det_reverse_of(d, p)) && det_route_crosses(back, comp);
	}
	if (!p)
		return false;
	return loss ? det_loss_crosses(d, p, comp) : det_route_crosses(p, comp);
}

void fq_detector_lane_route(struct fq_detector *d, const struct fq_det_lane_route *lr)
{
	struct step_key sk;
	struct step_ent *s;
	struct lroute_ent *r;
	struct lroute_key k;
	char **route;
	size_t m;

	if (!d || !lr || (lr->n && !lr->comps)) {
		if (d)
			d->rejected_inputs++;
		return;
	}
	k = (struct lroute_key){.job = lr->job_id,
				.step = lr->step_id,
				.src_rank = lr->src_rank,
				.dst_rank = lr->dst_rank,
				.lane = lr->lane};
	if (!(r = (struct lroute_ent *)fq_captab_get(&d->lroutes, &k, lr->now_ns, true, NULL)) ||
	    det_route_names(lr->comps, lr->n, &route, &m) < 0)
		return;
	det_routes_free(r->route, r->nroute);
	r->route = route;
	r->nroute = m;
	r->local_port = lr->local_port;
	/* the open fabric incidents this lane crosses now get its step, and
	 * its held inband judgement is made */
	sk = (struct step_key){.job = lr->job_id, .step = lr->step_id};
	if (!(s = (struct step_ent *)fq_captab_find(&d->steps, &sk)))
		return;
	for (size_t i = 0; i < s->n; i++) {
		struct lane_rec *l = &s->lanes[i];

		if (l->src_rank != lr->src_rank || l->dst_rank != lr->dst_rank || l->lane != lr->lane)
			continue;
		if (l->inband_held)
			det_lane_judge_inband(d, s, l, false);
		FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
		{
			if (det_is_fabric(a->k.kind))
				det_attach_lane(d, a, &s->k, l);
		}
	}
}
