/*
 * peers: probe-peer assignment (pure computation, no I/O).
 *
 * Each back-end NIC probes K peers on its own rail (rails are separate
 * planes: a NIC reaches the NICs of its rail): ceil(K/2) are its
 * successors in a stable ring order of the rail (so every NIC is probed
 * and the mesh is connected), the rest are chosen on a seeded hash circle
 * (consistent hashing, the O(log n) form of rendezvous hashing: the plan
 * is reproducible, and a node joining or leaving changes only the
 * assignments that involved it). Probing is symmetric in effect (every
 * probe is answered), so an assignment a -> b also gives b the b -> a
 * direction; cost per NIC stays O(K) as the cluster grows.
 *
 * Ring order: the rail's NICs by (rank among its node's NICs on the rail,
 * node name), ranks by NIC name: every node's first NIC, then every
 * node's second... so neighbours are on different nodes. With one NIC per
 * node and rail, every NIC is the first ring pick of its predecessor:
 * in-degree >= 1 and each rail connected (also when every node has the
 * same number of NICs on it). Where one node holds most of a rail, no plan
 * can give all its NICs a prober; the rules below still hold.
 *
 * Churn: removing a NIC changes only the peer lists that contained it (the
 * ring walk and the hash circle step over the gap), i.e. its in-neighbours,
 * K on average (sum of in-degrees = sum of out-degrees): removing a node
 * with one NIC per rail changes about K of the N NICs of each rail.
 * Hashed in-degree is spread over 8 points per NIC on the circle: at 100k
 * NICs on 8 rails and K = 10, the largest in-degree is about 3K.
 */
#ifndef FQ_CONTROLLER_PEERS_H
#define FQ_CONTROLLER_PEERS_H

#include <stddef.h>
#include <stdint.h>

struct fq_peer_nic {
	const char *node;    /* Slurm node name */
	const char *nic;     /* NIC name on that node */
	const char *address; /* IPv4 address the NIC's probes use */
	uint32_t rail;
};

/* For NIC i: peers[first[i] .. first[i+1]) are indices into the NIC array. */
struct fq_peer_plan {
	size_t n_nics;
	size_t *first; /* [n_nics + 1] */
	uint32_t *peers;
	size_t n_peers;
};

/* Assign min(k, NICs of other nodes on its rail) peers per NIC, no peer
 * twice. NICs of the same node are never peers of each other. Input order
 * does not matter: the result (as names, and the order of each NIC's
 * peers) depends only on the set of NICs and the seed; address plays no
 * part. The strings must outlive the call only. Returns 0, -EINVAL (k == 0,
 * out NULL, a NULL node or nic name, the same node/nic twice on a rail),
 * -ENOMEM; on error *out is left empty. Free with fq_peer_plan_free. */
int fq_peers_assign(const struct fq_peer_nic *nics, size_t n_nics, unsigned k, uint64_t seed,
		    struct fq_peer_plan *out);

void fq_peer_plan_free(struct fq_peer_plan *plan);

#endif /* FQ_CONTROLLER_PEERS_H */
