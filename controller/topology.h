/*
 * topology: the fabric's switches and links, inferred from path traces,
 * checked against the site's declared topology. Pure: no I/O, no clock.
 *
 * A trace is one directed NIC pair's route, probed as traceroute does with
 * the pair's probe 5-tuple (so ECMP sends it where the probes go): hops[k]
 * is the address of the router interface the packet came IN on at TTL k+1
 * (switches answer from the inbound interface), "" where none answered;
 * reached: the far agent echoed at TTL n_hops+1, so hops[n_hops-1] is the
 * switch the far NIC plugs into. The fabric is point-to-point routed links
 * (leaf-spine, or more tiers) with hosts' NICs on leaves.
 *
 * Alias resolution (which addresses are one switch) is a union-find:
 *  (a) the first hop of every trace from NIC X and the last hop of every
 *      reached trace to X are interfaces of X's switch (one cable, one
 *      switch at its other end);
 *  (b) for an address Z at hop k >= 1 (0-based) whose hop k-1 is P, P's
 *      switch is at the other end of Z's link: all such P of one Z are one
 *      switch;
 *  (c) the same link's near side: with point-to-point subnets (opts
 *      p2p_prefix 31, the default, or 30), Z's subnet mate is P's switch's
 *      end of that cable, so when the mate was seen as a hop it joins P's
 *      switch. Without (c) a spine crossed between two leaves only is seen
 *      as two switches, one per direction: no trace enters it by one link
 *      and leaves by the other that (b) could pair. p2p_prefix -1 turns it
 *      off (for fabrics numbered otherwise: /31 numbering read as /30 would
 *      join two cables' ends);
 *  (d) the addresses of one declared switch are one switch.
 * A switch's tier: 1 when a NIC plugs into it ("leaf"), else 1 + the lowest
 * tier among its neighbours (2 "spine", 3 and above "core"), 0 when no
 * link leads to a leaf (role "switch").
 *
 * Names: a switch takes the name of the declared switch owning one of its
 * addresses (the first such in the file), else "ROLE@ADDRESS" with its
 * numerically lowest address ("leaf@198.19.1.2"). Components: a NIC
 * "NODE/NIC", a host link "NODE/NIC~SWITCH", a switch "SWITCH", a switch
 * link "A~B" (A < B by strcmp). Parallel cables between two switches are
 * one link (their addresses together).
 *
 * Routes: each trace gives its path's components in order: source NIC, its
 * host link, then each switch and the switch link into the next, then, if
 * reached, the far host link and NIC. The route stops before the first hop
 * that did not answer (""): what follows is not listed even where later
 * routers answered, and complete is false; so every listed component is
 * one the path certainly crosses, in order. Also incomplete: a trace not
 * reached, or with no hop at all. A later trace of the same directed pair
 * replaces an earlier one's route; all of them feed alias resolution.
 *
 * Limits: FQ_TOPO_MAX_TRACES traces, FQ_TOPO_MAX_HOPS hops each, names up
 * to FQ_TOPO_MAX_NAME bytes and addresses up to FQ_TOPO_MAX_ADDR; a trace
 * beyond them (or with a NULL or empty name) is left out and counted
 * (fq_topo_rejected). Memory and time are linear in the input: about
 * 0.6 KiB and 8 us a 3-hop trace (1024 NICs' full mesh, 1M traces: 8.4 s
 * and 580 MiB on a 2-core test machine), so a caller building often from a
 * large mesh keeps one trace per pair and builds off the event loop.
 *
 * Not thread-safe; a built topology is immutable, so readers may share it.
 */
#ifndef FQ_CONTROLLER_TOPOLOGY_H
#define FQ_CONTROLLER_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FQ_TOPO_MAX_TRACES (1u << 20)
#define FQ_TOPO_MAX_HOPS   64
#define FQ_TOPO_MAX_NAME   255
#define FQ_TOPO_MAX_ADDR   63

/* A NIC is known by node and nic; the addresses are the caller's record
 * (the inference does not use them). */
struct fq_topo_trace {
	const char *node, *nic, *address;                      /* the source NIC */
	const char *remote_node, *remote_nic, *remote_address; /* the destination */
	const char *const *hops;                               /* TTL 1..n_hops; "" or NULL: no answer */
	size_t n_hops;
	bool reached;
	/* the probe flow traced (proto PathTrace.flow): each flow of a NIC
	 * pair has its own 5-tuple, so its own ECMP route and path here */
	unsigned flow;
};

/* The declared topology (topology_file.c): plain data, owned by the parse. */
struct fq_topo_decl_switch {
	char *name;
	char **addresses; /* canonical dotted quads */
	size_t n_addresses;
	int line;
};
struct fq_topo_decl_host {
	char *node, *nic;
	size_t sw; /* index in switches */
	int line;
};
struct fq_topo_decl_link {
	size_t a, b;
	int line;
};
struct fq_topo_decl {
	struct fq_topo_decl_switch *switches;
	struct fq_topo_decl_host *hosts;
	struct fq_topo_decl_link *links;
	size_t n_switches, n_hosts, n_links;
};

/* Limits of the declared file. */
#define FQ_TOPO_DECL_MAX_BYTES    (8u << 20)
#define FQ_TOPO_DECL_MAX_LINE     4096
#define FQ_TOPO_DECL_MAX_SWITCHES 16384
#define FQ_TOPO_DECL_MAX_ADDRS    256 /* per switch */
#define FQ_TOPO_DECL_MAX_HOSTS    (1u << 18)
#define FQ_TOPO_DECL_MAX_LINKS    (1u << 18)

/* Parse the expected-topology text (len bytes, need not be NUL-terminated;
 * the format is in doc/fabriciq-topology.5). A switch is declared before a
 * line names it. 0 and *out, or -EINVAL (err: "line N: what is wrong"),
 * -E2BIG (over a limit, also with its line), -ENOMEM. */
int fq_topo_decl_parse(const char *text, size_t len, struct fq_topo_decl **out, char *err, size_t errlen);
void fq_topo_decl_free(struct fq_topo_decl *d);
/* Read and parse the file at path (at most FQ_TOPO_DECL_MAX_BYTES). 0 and
 * *out, or a negative errno with err "PATH: what is wrong" (-ENOENT...
 * from opening it, -E2BIG, the parse's). */
int fq_topo_decl_load(const char *path, struct fq_topo_decl **out, char *err, size_t errlen);

/* A directed NIC pair's delay floor: the least round trip its probes
 * take when nothing queues (ns; the caller's low percentile of each probe
 * window's forward + reverse minimum, so no clock offset is in it). */
struct fq_topo_floor {
	const char *node, *nic, *remote_node, *remote_nic;
	int64_t ns;
};

/* The cross-check by delay (topology_delay.c). A hop through a switch
 * costs time even when nothing queues, so each NIC's nearest peers by
 * delay floor are the peers behind the fewest switches: on its own leaf.
 * For each NIC with floors to FQ_TOPO_DELAY_MIN_PEERS peers or more, its
 * peers sorted by floor are split at the first gap that is at least
 * FQ_TOPO_DELAY_GAP_PCT % of the floor below it, FQ_TOPO_DELAY_GAP_MIN_NS,
 * and twice the spread below it; the peers under the gap are its nearest
 * by delay (none where no gap stands out: "unresolved", no claim). Two
 * NICs nearest each other both ways are one delay group's. The check then
 * holds each NIC's nearest by delay against its nearest by route (the
 * peers whose complete routes cross the fewest switches, unless all do):
 * a peer nearest both ways by delay but not by route is a difference
 * (FQ_TOPO_DELAY_DISAGREES), one per
 * NIC: "n3/rail0: nearest by delay n1/rail0, n2/rail0; by route n5/rail0"
 * (at most 4 names each, then "and N more"). Without floors nothing is
 * checked. Not the other way (nearest by route, beyond the gap by delay):
 * a queue into a NIC that lasts makes its floors rise, so that would be
 * a load, not the wiring. */
#define FQ_TOPO_DELAY_MIN_PEERS  3
#define FQ_TOPO_DELAY_GAP_PCT    30
#define FQ_TOPO_DELAY_GAP_MIN_NS 300
#define FQ_TOPO_DELAY_MAX_NS     10000000000LL /* a floor above 10 s (or not above 0) is left out */

struct fq_topo_opts {
	int p2p_prefix;                     /* rule (c): 31 (the default, also for 0), 30, or -1 off */
	const struct fq_topo_floor *floors; /* NULL: no cross-check by delay */
	size_t n_floors;
};

struct fq_topo;

/* Infer the topology from n traces, check it against decl (may be NULL:
 * no check, no declared names). The traces and decl may be freed after.
 * opts may be NULL. 0 and *out, -EINVAL (n over the limit), -ENOMEM. */
int fq_topo_build(const struct fq_topo_trace *traces, size_t n, const struct fq_topo_decl *decl,
		  const struct fq_topo_opts *opts, struct fq_topo **out);
void fq_topo_destroy(struct fq_topo *t);

struct fq_topo_switch {
	const char *name, *role;      /* role: "leaf", "spine", "core", "switch" */
	int tier;                     /* 0: unknown */
	const char *const *addresses; /* numerically sorted */
	size_t n_addresses;
};
struct fq_topo_link {
	const char *name;
	size_t a, b;                                         /* switch indexes; a's name < b's */
	const char *const *a_addresses, *const *b_addresses; /* seen on each side, sorted */
	size_t n_a, n_b;
	size_t probe_paths; /* paths (each flow of a directed NIC pair) whose route crosses it */
};
struct fq_topo_host_link {
	const char *name, *node, *nic; /* name: "NODE/NIC~SWITCH" */
	size_t sw;
	const char *switch_address; /* NULL when no trace left the NIC */
};
enum fq_topo_comp_kind {
	FQ_TOPO_NIC,
	FQ_TOPO_HOST_LINK,
	FQ_TOPO_SWITCH,
	FQ_TOPO_LINK,
};
struct fq_topo_comp {
	enum fq_topo_comp_kind kind;
	size_t index; /* NIC: none (0); the others: into their accessor */
	const char *name;
};
struct fq_topo_path {
	const char *node, *nic, *remote_node, *remote_nic;
	unsigned flow;
	const struct fq_topo_comp *route;
	size_t n_route;
	bool complete;
};
enum fq_topo_diff_kind {
	FQ_TOPO_HOST_MOVED,
	FQ_TOPO_LINK_UNEXPECTED,
	FQ_TOPO_LINK_NOT_SEEN, /* lower severity: ECMP may have sent no probe there */
	FQ_TOPO_SWITCH_UNDECLARED,
	FQ_TOPO_HOST_NOT_SEEN,
	FQ_TOPO_ADDRESS_CONFLICT,
	FQ_TOPO_DELAY_DISAGREES, /* the delays group a NIC's peers otherwise than its routes */
};
/* NICs nearest each other by delay, both ways (one leaf's, where the
 * routes agree): their host links' switches (distinct, sorted; more than
 * one where the routes disagree) and the largest floor between two of
 * them. */
struct fq_topo_delay_group {
	const char *const *nics; /* "NODE/NIC", sorted */
	size_t n_nics;
	const char *const *switches;
	size_t n_switches;
	int64_t floor_ns;
};
struct fq_topo_diff {
	enum fq_topo_diff_kind kind;
	const char *text; /* one line an operator can act on */
};

/* The parts, each sorted by name (paths by node, nic, remote node, remote
 * nic; differences by kind, then text). Pointers live as long as t. */
size_t fq_topo_switch_count(const struct fq_topo *t);
const struct fq_topo_switch *fq_topo_switch_at(const struct fq_topo *t, size_t i);
size_t fq_topo_link_count(const struct fq_topo *t);
const struct fq_topo_link *fq_topo_link_at(const struct fq_topo *t, size_t i);
size_t fq_topo_host_link_count(const struct fq_topo *t);
const struct fq_topo_host_link *fq_topo_host_link_at(const struct fq_topo *t, size_t i);
size_t fq_topo_path_count(const struct fq_topo *t);
const struct fq_topo_path *fq_topo_path_at(const struct fq_topo *t, size_t i);
size_t fq_topo_diff_count(const struct fq_topo *t);
const struct fq_topo_diff *fq_topo_diff_at(const struct fq_topo *t, size_t i);
size_t fq_topo_delay_group_count(const struct fq_topo *t);
const struct fq_topo_delay_group *fq_topo_delay_group_at(const struct fq_topo *t, size_t i);
/* NICs with floors enough but no gap standing out among them. */
size_t fq_topo_delay_unresolved(const struct fq_topo *t);
/* "host_moved", ... */
const char *fq_topo_diff_kind_name(enum fq_topo_diff_kind k);

/* The switch with this name, or the one owning this address; NULL if none. */
const struct fq_topo_switch *fq_topo_switch_find(const struct fq_topo *t, const char *name_or_address);
/* The route of one directed NIC pair (its flow 0); NULL if no trace of
 * it. The paths (fq_topo_path_at) are each flow of each pair, sorted by
 * pair, then flow. */
const struct fq_topo_path *fq_topo_path_find(const struct fq_topo *t, const char *node, const char *nic,
					     const char *remote_node, const char *remote_nic);
/* The route of one flow of a directed NIC pair; NULL if no trace of it. */
const struct fq_topo_path *fq_topo_flow_path_find(const struct fq_topo *t, const char *node, const char *nic,
						  const char *remote_node, const char *remote_nic,
						  unsigned flow);
/* Traces taken, traces left out (limits), hops that did not answer. */
size_t fq_topo_traces(const struct fq_topo *t);
size_t fq_topo_rejected(const struct fq_topo *t);
size_t fq_topo_unresolved_hops(const struct fq_topo *t);

/* The whole topology as JSON (doc/design.md, "Topology"): a new object the
 * caller puts, or NULL on -ENOMEM. */
struct json_object *fq_topo_json(const struct fq_topo *t);

#endif /* FQ_CONTROLLER_TOPOLOGY_H */
