/*
 * ctl_peers: the probe peer plan. Assigns each back-end NIC its probe
 * peers (controller/peers.h) over the NICs the agents announced and sends
 * every connected agent its assignment.
 */
#include "controller/ctl.h"

#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "common/log.h"
#include "controller/peers.h"

static bool is_out_peer(const struct fq_peer_plan *plan, size_t i, uint32_t j)
{
	for (size_t k = plan->first[i]; k < plan->first[i + 1]; k++)
		if (plan->peers[k] == j)
			return true;
	return false;
}

/* ---- probe peers ------------------------------------------------------- */

struct nic_ref {
	struct agent *agent;
	const Fabriciq__Nic *nic;
};

void ctl_send_peers(struct ctl *c)
{
	struct fq_peer_nic *nics = NULL;
	struct nic_ref *refs = NULL;
	struct fq_peer_plan plan = {0};
	size_t n = 0, cap = 0, *in_first = NULL;
	uint32_t *in_peers = NULL;

	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			if (a->hello)
				cap += a->hello->hello->n_nics;
		}
	if (!cap || !(nics = calloc(cap, sizeof(*nics))) || !(refs = calloc(cap, sizeof(*refs))))
		goto out;
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			for (size_t i = 0; a->hello && i < a->hello->hello->n_nics; i++) {
				const Fabriciq__Nic *x = a->hello->hello->nics[i];
				if (x->front_end || !*x->address)
					continue;
				nics[n] = (struct fq_peer_nic){a->node, x->name, x->address, x->rail};
				refs[n++] = (struct nic_ref){a, x};
			}
		}
	if (!n || fq_peers_assign(nics, n, (unsigned)c->cfg.peers_per_nic, c->cfg.peer_seed, &plan) < 0)
		goto out;
	/* the reverse lists: who probes NIC i */
	in_first = calloc(n + 1, sizeof(*in_first));
	in_peers = calloc(plan.n_peers ? plan.n_peers : 1, sizeof(*in_peers));
	if (!in_first || !in_peers)
		goto out_plan;
	for (size_t j = 0; j < plan.n_peers; j++)
		in_first[plan.peers[j] + 1]++;
	for (size_t i = 0; i < n; i++)
		in_first[i + 1] += in_first[i];
	{
		size_t *fill = calloc(n ? n : 1, sizeof(*fill));
		if (!fill)
			goto out_plan;
		for (size_t i = 0; i < n; i++)
			for (size_t j = plan.first[i]; j < plan.first[i + 1]; j++) {
				uint32_t t = plan.peers[j];
				in_peers[in_first[t] + fill[t]++] = (uint32_t)i;
			}
		free(fill);
	}
	c->peers_epoch++;
	/* One PeerAssignment per agent, with the peers of each of its NICs. */
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
			Fabriciq__PeerAssignment pa = FABRICIQ__PEER_ASSIGNMENT__INIT;
			Fabriciq__PeerAssignment__NicPeers *np = NULL, **npp = NULL;
			Fabriciq__Peer *peers = NULL, **pp = NULL;
			size_t nn = 0, total = 0, k = 0;

			if (!a->sess)
				continue;
			for (size_t i = 0; i < n; i++)
				if (refs[i].agent == a) {
					nn++;
					total +=
					    plan.first[i + 1] - plan.first[i] + in_first[i + 1] - in_first[i];
				}
			np = calloc(nn ? nn : 1, sizeof(*np));
			npp = calloc(nn ? nn : 1, sizeof(*npp));
			peers = calloc(total ? total : 1, sizeof(*peers));
			pp = calloc(total ? total : 1, sizeof(*pp));
			if (!np || !npp || !peers || !pp)
				goto next;
			nn = 0;
			for (size_t i = 0; i < n; i++) {
				if (refs[i].agent != a)
					continue;
				fabriciq__peer_assignment__nic_peers__init(&np[nn]);
				np[nn].local_nic = (char *)refs[i].nic->name;
				np[nn].peers = &pp[k];
				for (size_t j = plan.first[i];
				     j < plan.first[i + 1] + in_first[i + 1] - in_first[i]; j++) {
					/* out-peers, then the NICs that probe this one (not
					 * already out-peers): probing both ways lets each
					 * side know the other as a peer and answer it */
					size_t out = plan.first[i + 1] - plan.first[i];
					uint32_t pj = j < plan.first[i + 1]
							  ? plan.peers[j]
							  : in_peers[in_first[i] + (j - plan.first[i]) - out];
					const struct fq_peer_nic *t = &nics[pj];

					if (j >= plan.first[i + 1] && is_out_peer(&plan, i, pj))
						continue;
					fabriciq__peer__init(&peers[k]);
					peers[k].node = (char *)t->node;
					peers[k].nic = (char *)t->nic;
					peers[k].address = (char *)t->address;
					peers[k].rail = t->rail;
					peers[k].port = (uint32_t)c->cfg.probe_port;
					pp[k] = &peers[k];
					k++;
					np[nn].n_peers++;
				}
				npp[nn] = &np[nn];
				nn++;
			}
			pa.epoch = c->peers_epoch;
			pa.nics = npp;
			pa.n_nics = nn;
			env.version = FQ_PROTOCOL_VERSION;
			env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PEERS;
			env.peers = &pa;
			fq_session_send(a->sess, &env);
		next:
			free(np);
			free(npp);
			free(peers);
			free(pp);
		}
out_plan:
	free(in_first);
	free(in_peers);
	fq_peer_plan_free(&plan);
out:
	free(nics);
	free(refs);
}
