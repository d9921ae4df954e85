/* topology's insides, shared by topology.c (inference) and topology_out.c
 * (declared names, the check, accessors, JSON). */
#ifndef FQ_CONTROLLER_TOPOLOGY_INT_H
#define FQ_CONTROLLER_TOPOLOGY_INT_H

#include <stdint.h>

#include "controller/strmap.h"
#include "controller/topology.h"

#define NONE ((size_t)-1)

struct taddr {
	char *s;
	size_t parent;         /* union-find */
	size_t pred;           /* the first hop seen before it (rule b), or NONE */
	size_t sw;             /* its switch, once resolved */
	unsigned char key[17]; /* family rank, then the address: numeric order */
};

struct tnic {
	char *node, *nic, *name; /* name: "NODE/NIC" */
	size_t anchor;           /* an address of its switch, or NONE */
	size_t first_hop;        /* lowest first hop from it, or NONE */
	size_t sw, hl;           /* its switch and host link, or NONE */
};

struct ttrace {
	size_t src, dst; /* nics */
	size_t *hops;    /* addrs, NONE where no answer */
	size_t n_hops;
	bool reached;
	unsigned flow;
};

struct tswitch {
	struct fq_topo_switch pub;
	size_t *addrs, n_addrs, cap_addrs;
	size_t decl; /* the declared switch naming it, or NONE */
	size_t old;  /* its index before sorting by name */
	bool leaf;
};

struct tlink {
	struct fq_topo_link pub;
	size_t *side[2], n_side[2], cap_side[2]; /* addrs on a's side, b's side */
};

struct thl {
	struct fq_topo_host_link pub;
	size_t nic;
};

struct fq_topo {
	void **blocks; /* every string and fixed array, freed at the end */
	size_t n_blocks, cap_blocks;
	struct fq_strmap addr_map, nic_map, path_map, link_map; /* -> index + 1 */
	struct taddr *addrs;
	size_t n_addrs, cap_addrs;
	struct tnic *nics;
	size_t n_nics, cap_nics;
	struct ttrace *traces;
	size_t n_traces, rejected, unresolved;
	struct tswitch *sw;
	size_t n_sw;
	struct tlink *links;
	size_t n_links, cap_links;
	struct thl *hls;
	size_t n_hls;
	struct fq_topo_path *paths;
	size_t n_paths;
	struct fq_topo_diff *diffs;
	size_t n_diffs, cap_diffs;
	struct fq_topo_delay_group *groups; /* the cross-check by delay's */
	size_t n_groups, delay_unresolved;
	const struct fq_topo_decl *decl; /* during the build only */
	int p2p;
};

void *topo_alloc(struct fq_topo *t, size_t size);
char *topo_strdup(struct fq_topo *t, const char *s);
char *topo_printf(struct fq_topo *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int topo_grow(void **arr, size_t *cap, size_t n, size_t size);
void topo_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *arg);
int topo_map_put(struct fq_strmap *m, const char *key, size_t i);
size_t topo_map_get(const struct fq_strmap *m, const char *key);
size_t topo_find(struct fq_topo *t, size_t a);

/* The link between switches a and b, or NONE. */
size_t topo_link_of(struct fq_topo *t, size_t a, size_t b);
/* topology_path.c: the routes (after name_and_sort). */
int topo_make_paths(struct fq_topo *t);

/* topology_out.c: names from the declared topology, then the check. */
int topo_declared_names(struct fq_topo *t);
int topo_check(struct fq_topo *t);
/* A difference (text: the topology's, or NULL: -ENOMEM); the differences
 * sorted once all are in. */
int topo_diff(struct fq_topo *t, enum fq_topo_diff_kind kind, char *text);
void topo_sort_diffs(struct fq_topo *t);

/* topology_delay.c: the cross-check by delay (after the paths). */
int topo_delay_check(struct fq_topo *t, const struct fq_topo_floor *f, size_t n);

#endif /* FQ_CONTROLLER_TOPOLOGY_INT_H */
