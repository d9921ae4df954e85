/*
 * peers: probe-peer assignment (see peers.h for the contract).
 *
 * Per rail:
 *  - order: NICs sorted by (node, nic); each NIC gets its slot, its rank
 *    among its node's NICs on the rail. The ring is ordered by (slot, node):
 *    first every node's first NIC, then every node's second NIC... so that
 *    ring neighbours are on different nodes (a node's NICs are spread out,
 *    not in one block that the ring walk would have to skip).
 *  - ring picks: the next ceil(k/2) NICs of other nodes, walking forward.
 *    With one NIC per node and rail (rail-optimised layout) each NIC is the
 *    first ring pick of its predecessor, so every NIC is probed and the ring
 *    alone connects the rail.
 *  - hashed picks: the other k - ceil(k/2) come from a seeded hash circle
 *    (consistent hashing, the O(log n) form of rendezvous hashing): every
 *    NIC has PEER_VPOINTS points on it, hashed from (seed, node, nic, v);
 *    NIC a's j-th pick is the owner of the first point at or after
 *    hash(seed, a, j), walking on past its own node and what it already has.
 * Every hash is of names, never of input positions, so the plan depends
 * only on the set. A NIC that leaves changes only the picks that landed on
 * it (its in-neighbours: k of them on average) and nothing else.
 */
#include "controller/peers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Points per NIC on the hash circle: the in-degree from hashed picks is
 * spread like a Gamma(PEER_VPOINTS) share of the circle, not an exponential
 * one (at 100k NICs: max about 3x the mean instead of about 12x). */
#define PEER_VPOINTS 8

struct peer_ent {
	const struct fq_peer_nic *nic;
	uint32_t index; /* into the input array */
	uint32_t node;  /* node number within its rail */
	uint32_t slot;  /* rank among its node's NICs on this rail */
	uint64_t id;    /* hash of (node, nic) */
};

struct peer_point {
	uint64_t h;
	uint32_t ring; /* position of the owner in the rail's ring */
};

static uint64_t mix64(uint64_t z)
{
	/* splitmix64's finaliser */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	/* FNV-1a over the bytes and the terminating NUL (so "ab","c" != "a","bc") */
	do {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	} while (*s++);
	return h;
}

static int cmp_name(const void *pa, const void *pb)
{
	const struct peer_ent *a = pa, *b = pb;
	int c;

	if (a->nic->rail != b->nic->rail)
		return a->nic->rail < b->nic->rail ? -1 : 1;
	c = strcmp(a->nic->node, b->nic->node);
	if (c == 0)
		c = strcmp(a->nic->nic, b->nic->nic);
	return c;
}

static int cmp_ring(const void *pa, const void *pb)
{
	const struct peer_ent *a = pa, *b = pb;

	if (a->slot != b->slot)
		return a->slot < b->slot ? -1 : 1;
	return a->node < b->node ? -1 : a->node > b->node;
}

static int cmp_point(const void *pa, const void *pb)
{
	const struct peer_point *a = pa, *b = pb;

	if (a->h != b->h)
		return a->h < b->h ? -1 : 1;
	return a->ring < b->ring ? -1 : a->ring > b->ring;
}

void fq_peer_plan_free(struct fq_peer_plan *plan)
{
	if (!plan)
		return;
	free(plan->first);
	free(plan->peers);
	memset(plan, 0, sizeof(*plan));
}

static int picked(const uint32_t *list, unsigned len, uint32_t v)
{
	for (unsigned i = 0; i < len; i++)
		if (list[i] == v)
			return 1;
	return 0;
}

/* Peers of one rail: ring[0..m) in ring order; writes ring positions into
 * pick[i * k ...] and counts into cnt[i] (indexed by ring position). */
static int assign_rail(const struct peer_ent *ring, uint32_t m, uint32_t n_nodes, unsigned k, uint64_t seed,
		       uint32_t *pick, unsigned *cnt)
{
	struct peer_point *pt = NULL;
	size_t n_pt = (size_t)m * PEER_VPOINTS;
	uint32_t *per_node = calloc(n_nodes, sizeof(*per_node));

	if (!per_node)
		return -ENOMEM;
	for (uint32_t i = 0; i < m; i++)
		per_node[ring[i].node]++;
	for (uint32_t i = 0; i < m; i++) {
		uint32_t others = m - per_node[ring[i].node], *mine = pick + (size_t)i * k;
		unsigned want = others < k ? others : k, n_ring = (want + 1) / 2, c = 0;

		/* Ring picks first; when the rail is too small for choice, the
		 * walk simply takes every other node's NIC. */
		if (want == others)
			n_ring = want;
		for (uint32_t s = 1; c < n_ring && s < m; s++) {
			uint32_t j = (i + s) % m;

			if (ring[j].node != ring[i].node)
				mine[c++] = j;
		}
		cnt[i] = c;
	}

	pt = malloc(n_pt * sizeof(*pt) + 1);
	if (!pt) {
		free(per_node);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m; i++)
		for (unsigned v = 0; v < PEER_VPOINTS; v++)
			pt[(size_t)i * PEER_VPOINTS + v] =
			    (struct peer_point){mix64(ring[i].id ^ mix64(seed + 2 * v + 1)), i};
	qsort(pt, n_pt, sizeof(*pt), cmp_point);

	for (uint32_t i = 0; i < m; i++) {
		uint32_t *mine = pick + (size_t)i * k;

		/* With k or fewer others, the ring walk already took them all. */
		if (m - per_node[ring[i].node] <= k)
			continue;
		for (unsigned j = 0; cnt[i] < k; j++) {
			uint64_t q = mix64(ring[i].id ^ mix64(seed ^ (0x9e3779b97f4a7c15ULL * (j + 1))));
			size_t lo = 0, hi = n_pt;

			while (lo < hi) { /* first point >= q */
				size_t mid = lo + (hi - lo) / 2;

				if (pt[mid].h < q)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (size_t s = 0; s < n_pt; s++) {
				uint32_t o = pt[(lo + s) % n_pt].ring;

				if (ring[o].node != ring[i].node && !picked(mine, cnt[i], o)) {
					mine[cnt[i]++] = o;
					break;
				}
			}
		}
	}
	free(pt);
	free(per_node);
	return 0;
}

/* Sort by name, check names, number nodes and slots per rail. */
static int order_nics(const struct fq_peer_nic *nics, size_t n, uint64_t seed, struct peer_ent *e)
{
	for (size_t i = 0; i < n; i++) {
		if (!nics[i].node || !nics[i].nic)
			return -EINVAL;
		e[i] = (struct peer_ent){.nic = &nics[i], .index = (uint32_t)i};
		e[i].id = mix64(hash_str(hash_str(0xcbf29ce484222325ULL ^ seed, nics[i].node), nics[i].nic));
	}
	qsort(e, n, sizeof(*e), cmp_name);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || e[i].nic->rail != e[i - 1].nic->rail) {
			e[i].node = 0;
			e[i].slot = 0;
		} else if (strcmp(e[i].nic->node, e[i - 1].nic->node) != 0) {
			e[i].node = e[i - 1].node + 1;
			e[i].slot = 0;
		} else {
			if (strcmp(e[i].nic->nic, e[i - 1].nic->nic) == 0)
				return -EINVAL; /* the same NIC twice on a rail */
			e[i].node = e[i - 1].node;
			e[i].slot = e[i - 1].slot + 1;
		}
	}
	return 0;
}

int fq_peers_assign(const struct fq_peer_nic *nics, size_t n_nics, unsigned k, uint64_t seed,
		    struct fq_peer_plan *out)
{
	struct peer_ent *e = NULL;
	uint32_t *pick = NULL;
	unsigned *cnt = NULL;
	int rc = -EINVAL;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (k == 0 || (!nics && n_nics > 0) || n_nics >= UINT32_MAX)
		return -EINVAL;
	if (n_nics > 0 && (size_t)k > SIZE_MAX / sizeof(*pick) / n_nics)
		return -ENOMEM;
	/* No NIC can have more peers than there are NICs. */
	if (k > n_nics)
		k = n_nics > 0 ? (unsigned)n_nics : 1;
	rc = -ENOMEM;
	e = malloc(n_nics * sizeof(*e) + 1);
	pick = malloc(n_nics * k * sizeof(*pick) + 1);
	cnt = malloc(n_nics * sizeof(*cnt) + 1);
	out->first = calloc(n_nics + 1, sizeof(*out->first));
	if (!e || !pick || !cnt || !out->first)
		goto fail;
	rc = order_nics(nics, n_nics, seed, e);
	if (rc < 0)
		goto fail;
	for (size_t lo = 0, hi; lo < n_nics; lo = hi) {
		uint32_t n_nodes;

		for (hi = lo; hi < n_nics && e[hi].nic->rail == e[lo].nic->rail;)
			hi++;
		n_nodes = e[hi - 1].node + 1; /* still in name order: the last node is the highest */
		qsort(e + lo, hi - lo, sizeof(*e), cmp_ring);
		rc = assign_rail(e + lo, (uint32_t)(hi - lo), n_nodes, k, seed, pick + lo * k, cnt + lo);
		if (rc < 0)
			goto fail;
		/* ring positions -> input indices */
		for (size_t i = lo; i < hi; i++)
			for (unsigned c = 0; c < cnt[i]; c++)
				pick[i * k + c] = e[lo + pick[i * k + c]].index;
	}
	for (size_t i = 0; i < n_nics; i++)
		out->first[e[i].index + 1] = cnt[i];
	for (size_t i = 0; i < n_nics; i++)
		out->first[i + 1] += out->first[i];
	out->n_nics = n_nics;
	out->n_peers = out->first[n_nics];
	out->peers = malloc(out->n_peers * sizeof(*out->peers) + 1);
	if (!out->peers)
		goto fail;
	for (size_t i = 0; i < n_nics; i++)
		memcpy(out->peers + out->first[e[i].index], pick + i * k, cnt[i] * sizeof(*pick));
	rc = 0;
	goto done;
fail:
	fq_peer_plan_free(out);
done:
	free(cnt);
	free(pick);
	free(e);
	return rc;
}
