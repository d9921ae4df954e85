/*
 * peers: probe-peer assignment (pure computation, no I/O).
 *
 * Each back-end NIC probes K peers on its own rail (rails are separate
 * planes: a NIC reaches the NICs of its rail): about half are its
 * neighbours in a stable ring order of the rail (so every NIC is probed
 * and the mesh is connected), the rest are chosen by rendezvous hashing
 * (seeded, so the plan is reproducible, and a node joining or leaving
 * changes only the assignments that involved it). Probing is symmetric in
 * effect (every probe is answered), so an assignment a -> b also gives b
 * the b -> a direction; cost per NIC stays O(K) as the cluster grows.
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

/* Assign up to k peers per NIC (fewer only when its rail has fewer other
 * nodes). NICs of the same node are never peers of each other. Input order
 * does not matter: the result depends only on the set of NICs and the
 * seed. Returns 0, -EINVAL (k == 0), -ENOMEM. Free with fq_peer_plan_free. */
int fq_peers_assign(const struct fq_peer_nic *nics, size_t n_nics, unsigned k, uint64_t seed,
		    struct fq_peer_plan *out);

void fq_peer_plan_free(struct fq_peer_plan *plan);

#endif /* FQ_CONTROLLER_PEERS_H */
