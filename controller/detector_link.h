/*
 * detector_link: the detector's link inputs (detector.h): probe windows
 * and link events, which feed the NICs' and paths' rules (flapping,
 * NIC-level down, link state, delay). Strings are copied by the detector
 * when it keeps them.
 */
#ifndef FQ_CONTROLLER_DETECTOR_LINK_H
#define FQ_CONTROLLER_DETECTOR_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fq_detector;

#define FQ_DET_MAX_FLOWS 8 /* probe flows of a path the detector keeps apart */

/* One probe flow of a path's window (proto ProbeFlow): its own 5-tuple,
 * so its own route (fq_detector_flow_route). 0: none. */
struct fq_det_flow {
	unsigned flow;
	uint32_t sent, answered, lost;
	int64_t owd_fwd_p50_ns, owd_fwd_p90_ns, owd_rev_p50_ns, owd_rev_p90_ns;
};

struct fq_det_probe {
	const char *node, *nic, *remote_node, *remote_nic;
	int64_t start_ns, end_ns;
	uint32_t sent, answered, lost;
	/* 0: none. The delay rule judges p90; p99 where p90 is 0 (an agent
	 * that does not send it): a window's p99 is its slowest probe or two. */
	int64_t owd_fwd_p50_ns, owd_fwd_p90_ns, owd_fwd_p99_ns;
	int64_t owd_rev_p50_ns, owd_rev_p90_ns, owd_rev_p99_ns;
	int64_t rtt_p50_ns;
	bool up;
	/* The path's flows (flow < FQ_DET_MAX_FLOWS; the others are ignored).
	 * With none (an agent with one flow) the path is one flow, these
	 * figures; with flows, the localisation judges each flow on its own
	 * (its loss, its delay against the path's baseline, its route) and
	 * the path's rules the figures above, all flows together. */
	const struct fq_det_flow *flows;
	size_t n_flows;
};

struct fq_det_link {
	const char *node, *nic, *remote_node, *remote_nic; /* remote_*: "" for a NIC-level event */
	bool up, nic_level;
	int64_t time_ns;
	/* A NIC-level DOWN: what the NIC said of its own link ("admin-down",
	 * "no-carrier", "carrier", "absent"; NULL or "": not known). The NIC is
	 * blamed when it was disabled or is gone, else its host link. */
	const char *nic_state;
};

void fq_detector_probe(struct fq_detector *d, const struct fq_det_probe *p);

/* The route of the directed NIC pair node/nic -> remote_node/remote_nic
 * (the controller's topology, controller/topology.h): the components its
 * probes cross, in order ("n1/rail0", "n1/rail0~leaf1", "leaf1",
 * "leaf1~spine3", ...; at most 32 kept). Replaces its earlier route; n 0
 * forgets it. */
void fq_detector_route(struct fq_detector *d, const char *node, const char *nic, const char *remote_node,
		       const char *remote_nic, const char *const *comps, size_t n, int64_t now_ns);
/* The same for one probe flow of the path (fq_det_flow; flow 0: as
 * fq_detector_route; flow >= FQ_DET_MAX_FLOWS: ignored). */
void fq_detector_flow_route(struct fq_detector *d, const char *node, const char *nic, const char *remote_node,
			    const char *remote_nic, unsigned flow, const char *const *comps, size_t n,
			    int64_t now_ns);
void fq_detector_link(struct fq_detector *d, const struct fq_det_link *e);

/*
 * A node's agent stood still (its host gave it no CPU) from start_ns to
 * end_ns (AgentStall; told once it runs again). Its peers saw every path
 * to it silent meanwhile: a held path DOWN toward the node whose silence
 * the stall covers (within stall_margin_ns), the path UP again by the
 * stall's end + stall_margin_ns, is the agent, not the link: no anomaly
 * (logged). A path still DOWN past that is a link_down as before. As the
 * report comes only after the stall, a held DOWN waits for it past
 * incident_settle_ns, up to stall_wait_ns, while the agent has been heard
 * (fq_detector_agent_heard) from before the silence and not since.
 */
void fq_detector_agent_stall(struct fq_detector *d, const char *node, int64_t start_ns, int64_t end_ns);
/* A frame of node's agent came in at now_ns (the detector's clock, as
 * fq_detector_tick's): every frame, whatever it carries. */
void fq_detector_agent_heard(struct fq_detector *d, const char *node, int64_t now_ns);
/* The routes were just fed again under new names (the site's expected
 * topology changed): the routes before are forgotten, so no loss is judged
 * on names that are gone. */
void fq_detector_routes_renamed(struct fq_detector *d);

/* The differences between the fabric the routes show and the site's
 * expected topology, each a kind ("host_moved", ...) and one line of text
 * (controller/topology.h), all of them as of now (after each rebuild): one
 * that has lasted 10 s opens a topology_mismatch anomaly (warning; checked
 * again each tick: while routes arrive one by one, a switch known by some
 * of its addresses only looks undeclared for a moment), one still there
 * extends it, one gone closes it. "link_not_seen" is left out: ECMP may
 * hash no probe over a declared link. */
void fq_detector_topology(struct fq_detector *d, const char *const *kinds, const char *const *texts, size_t n,
			  int64_t now_ns);

#endif /* FQ_CONTROLLER_DETECTOR_LINK_H */
