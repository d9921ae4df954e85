/*
 * detector_int.h: the detector's state (detector.h), shared by its
 * files and by no one else; each calls only the files listed below it:
 *   detector.c          configuration, the tick (window-level rules,
 *                       resume, sweep), create/destroy
 *   detector_link.c     NICs (flapping, NIC-level down) and paths (link
 *                       state, delay): probe windows and link events
 *   detector_lane.c     job steps' lanes (inband mismatch, lane outliers,
 *                       rdma_config, collisions)
 *   detector_prof.c     job steps' profiler transfers (peer_slow)
 *   detector_episode.c  anomalies (open, extend, attach, close) and link
 *                       episodes (incidents)
 *   detector_act.c      the action queue, nodes and their drain hints
 *   detector_topodiff.c differences from the expected topology
 *                       (topology_mismatch)
 *   detector_qlink.c    the switch links queueing by the probes, judged
 *                       once a tick (slow NICs and collisions ask)
 *   detector_locate.c   paths' routes and their units (probe flows);
 *                       delayed or lossy paths blamed on the component
 *                       they share (fabric_delay, fabric_loss)
 *
 * State, each in a hash table with a size cap (config max_*) and expiry:
 *   paths     directed NIC pair -> delay baseline, last window, link state
 *   nics      (node, nic) -> DOWN times (flapping), NIC-level state, the
 *             counts of its own paths known/down (NIC-level inference)
 *   nodes     drained state and hint bookkeeping (drain/resume dedup)
 *   steps     (job, step) -> its lanes: ranks, NIC pair, latest interval
 *   psteps    (job, step) -> its profiler channels (rank -> peer transfers),
 *             IB QPs and ranks' nodes, latest interval
 *   anomalies (kind, place) -> the open anomaly and the steps attached;
 *             a link_down is an episode (its DOWNs counted), and a NIC's
 *             open episode is the incident of the anomalies on that NIC
 * Entries not seen for state_expire_ns (steps: step_expire_ns) are dropped
 * by a sweep once a minute; when a table is full, the least recently seen
 * eighth of it is dropped first. Anomalies are never evicted: past
 * max_open new ones are counted and not opened. Places are kept by value
 * (names copied), so dropping an entry never leaves a dangling pointer.
 *
 * Names are copied truncated (node 63, NIC 31 bytes) with every byte that
 * is not printable ASCII, a space, '"' or '\\' replaced by '?': summaries
 * and evidence are then valid UTF-8 and JSON without escaping.
 */
#ifndef FQ_CONTROLLER_DETECTOR_INT_H
#define FQ_CONTROLLER_DETECTOR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/log.h"
#include "controller/captab.h"
#include "controller/detector.h"
#include "controller/rules.h"
#include "controller/strmap.h"

#define NODE_LEN      64
#define NIC_LEN       32
#define MAX_DOWNS     256 /* DOWN times kept per NIC (flap_threshold is clamped below) */
#define NODE_STALLS   4   /* stalls kept per agent: a held DOWN is a few seconds old at most */
#define LOCATE_STREAK 2   /* windows a path is delayed in a row before localisation counts it */
#define LOSS_CLEAN                                                                                           \
	2 /* windows without loss a path has had before its losses count: a path
			   * coming up (its far agent starting, its neighbours resolving) loses some */

enum kind {
	K_LINK_DOWN,
	K_FLAPPING,
	K_PATH_DELAY,
	K_LANE_OUTLIER,
	K_INBAND,
	K_SLOW_SENDER,
	K_SLOW_RECEIVER,
	K_COLLISION,
	K_RDMA_CONFIG,
	K_FABRIC_DELAY, /* place: the component's name in a.node (a.nic, b empty) */
	K_FABRIC_LOSS,  /* the same: probes lost (or paths DOWN) through one component */
	K_TOPOLOGY,     /* a difference from the expected topology: a.node its kind, a.nic its text's hash */
	K_PEER_SLOW,    /* a rank's transfers to a peer (profiler): a.node the rank's, b.node the peer's;
			 * no NIC (NCCL names none) */
};

enum {
	SEV_INFO = 0,
	SEV_WARNING = 1,
	SEV_CRITICAL = 2
}; /* enum fq_db_severity */
enum {
	ST_UNKNOWN = 0,
	ST_UP = 1,
	ST_DOWN = 2
};

struct nic_key {
	char node[NODE_LEN];
	char nic[NIC_LEN];
};

struct path_key {
	struct nic_key src, dst;
};

struct step_key {
	uint64_t job;
	uint64_t step;
};

struct anom_key {
	uint64_t kind;
	struct nic_key a, b; /* b empty: a NIC place */
};

/* One probe flow of a path (fq_det_flow): the localisation's unit where
 * its agent probes over flows. Flow 0's route is the path's own. */
struct path_flow {
	char **route; /* flows above 0: as path_ent.route; owned */
	size_t nroute;
	char **old_route;
	size_t old_nroute;
	int64_t route_since_ns;
	int64_t seen_ns, loss_first_ns, loss_last_ns; /* as path_ent's, this flow's */
	uint32_t loss_lost, loss_sent;
	unsigned clean;
	int64_t tail_ns, last_end_ns; /* its last window's delay (p50: its probes share one route) */
	unsigned streak;
	int64_t streak_start, streak_end;
	bool slow; /* over the path's threshold LOCATE_STREAK windows in a row */
};

struct path_ent {
	struct fq_captab_ent h;
	struct path_key k;
	int64_t baseline_ns, p50_ns, tail_ns, last_end_ns, state_ns; /* tail: p90, the rule's */
	unsigned quiet, streak;           /* quiet windows; elevated periods in a row */
	int64_t streak_start, streak_end; /* start of the first of them, end of the last */
	int64_t pend_ns, pend_last_ns;    /* DOWNs held for a NIC cause: first, last (0: none) */
	unsigned pend_downs;
	/* held past incident_settle_ns for the far agent's stall report: the
	 * tick that found it heard again (its report may follow); 0: none,
	 * -1: not heard since the silence began */
	int64_t pend_back_ns;
	int state;
	bool elevated; /* delayed for delay_persist_windows in a row: path_delay's */
	bool slow;     /* delayed for LOCATE_STREAK windows in a row: localisation's (many paths at once
			* are the evidence there, so it need not wait as long as one path's rule) */
	char **route;  /* the components its probes cross, in order (detector_locate.c); owned */
	size_t nroute;
	char **old_route; /* the route before (a loss that began on it is judged on it); owned */
	size_t old_nroute;
	int64_t route_since_ns;              /* when route replaced old_route */
	int64_t first_ns;                    /* when the detector first heard of it */
	int64_t seen_ns;                     /* the end of its last probe window, UP or DOWN */
	int64_t loss_first_ns, loss_last_ns; /* probes lost (DOWN: all), first and last window of */
	uint32_t loss_lost, loss_sent;       /* ... a loss streak (windows no further apart than 5 s) */
	unsigned clean;          /* windows without loss (a loss counts after LOSS_CLEAN of them) */
	struct path_flow *flows; /* FQ_DET_MAX_FLOWS of them once a flow was seen; owned */
	unsigned nflows;         /* flows its last probe window had (0: none, the path is one) */
};

struct nic_ent {
	struct fq_captab_ent h;
	struct nic_key k;
	int64_t *downs;
	size_t ndowns, cap;
	unsigned paths_known, paths_down;
	bool down, dead_hinted;
	int64_t down_since;
	char said[12]; /* what the NIC said of its link at its last NIC-level DOWN (fq_det_link) */
	unsigned tx_paths, tx_elev, rx_paths, rx_elev; /* tick scratch */
	bool slow[2];                                  /* ... fq_rule_slow_nic, sending and receiving */
};

struct node_ent {
	struct fq_captab_ent h;
	char name[NODE_LEN];
	bool drained, own_reason, drain_hinted, resume_hinted;
	int64_t drained_ns, unhealthy_ns;
	int64_t heard_ns; /* its agent's last frame (fq_detector_agent_heard; 0: none yet) */
	int64_t stall_start[NODE_STALLS], stall_end[NODE_STALLS]; /* its agent's last stalls */
	unsigned stall_next;                                      /* the slot the next one takes */
};

struct lane_rec {
	uint32_t src_rank, dst_rank, lane;
	struct path_key p;
	int64_t first_ns, start_ns, end_ns, p50_ns, p99_ns, min_ns;
	int64_t rtt_floor_ns;   /* the smallest TCP RTT floor either end reported; 0: none */
	int64_t outlier_end_ns; /* the last interval judged for lane_outlier, */
	unsigned outlier_runs;  /* and how many in a row were outliers */
	int64_t inband_end_ns;  /* the last interval judged for inband_mismatch, */
	unsigned inband_runs;   /* and how many in a row were over the probes */
	bool inband_held;       /* inband_mismatch waits (det_lane_judge_inband) */
};

/* A lane's own route (fq_detector_lane_route): its TCP 5-tuple's, which
 * ECMP may send elsewhere than its NIC pair's probes. */
struct lroute_key {
	uint64_t job, step;
	uint32_t src_rank, dst_rank, lane, pad;
};
struct lroute_ent {
	struct fq_captab_ent h;
	struct lroute_key k;
	char **route; /* as a path's (path_ent.route); owned */
	size_t nroute;
	uint16_t local_port; /* the lane's source port as traced (0: unknown) */
};

struct step_ent {
	struct fq_captab_ent h;
	struct step_key k;
	struct lane_rec *lanes;
	size_t n, cap;
	int64_t newest_end_ns, newest_len_ns, evaluated_ns;
};

/* The NCCL profiler's view of a job step (detector_prof.c): each rank's
 * transfers to each peer and its IB queue pairs, over their newest
 * interval, and the node each rank reported from. */
struct pchan {
	uint64_t comm;
	uint32_t rank, peer;
	bool recv;           /* the rank's receives from peer (step_recv), not its sends */
	char node[NODE_LEN]; /* the rank's */
	int64_t start_ns, end_ns;
	struct fq_rule_xfer x;
	int64_t prev_end_ns;        /* the interval before (a receiver's, matched to a */
	struct fq_rule_xfer prev_x; /* sender's that ends near it) */
	int64_t judged_end_ns;      /* the last interval judged for peer_slow, */
	unsigned runs;              /* and how many in a row were slow */
};
struct pqp {
	uint64_t comm;
	uint32_t rank;
	int32_t dev;
	int64_t qpn, end_ns;
	struct fq_rule_xfer x;
};
struct prank {
	uint32_t rank;
	char node[NODE_LEN];
};
struct pstep_ent {
	struct fq_captab_ent h;
	struct step_key k;
	struct pchan *ch;
	size_t n, cap;
	struct pqp *qp;
	size_t nqp, qcap;
	struct prank *ranks;
	size_t nranks, rcap;
	int64_t newest_end_ns, newest_len_ns, evaluated_ns;
};

struct att {
	uint64_t job;
	uint32_t step;
	uint32_t *ranks;
	size_t nranks, cap;
};

/* A difference from the expected topology, as the last rebuild shows it:
 * an anomaly once it has lasted TOPO_SETTLE_NS (routes arrive one by one
 * at first, and a switch known only by some of its addresses looks like
 * another one for a moment). */
struct topo_diff {
	struct nic_key place;
	char text[256];
	int64_t first_ns;
	bool opened;
};
#define TOPO_SETTLE_NS (10 * 1000000000LL)

struct anom_ent {
	struct fq_captab_ent h;
	struct anom_key k;
	uint64_t handle;
	int64_t start_ns, last_ns;
	unsigned events;   /* a link episode's DOWNs (others: 1) */
	int64_t up_ns;     /* a link episode: its place back UP at (0: down) */
	uint64_t incident; /* the incident it is a member of (0: none) */
	uint64_t jobs[2];  /* a collision's two jobs, the lower first (others: 0) */
	struct att *atts;
	size_t natts, cap;
};

struct qact {
	struct qact *next;
	struct fq_det_action a;
	char *str[9];
	uint32_t *ranks;
};

/* The switch links queueing by the probes (detector_qlink.c), judged once
 * a tick: the slow recent units (probed paths or their flows: `slow`,
 * localisation's, over the threshold LOCATE_STREAK windows in a row) of
 * every route counted per link in one pass at the first question after
 * the tick began; lane reports between ticks ask the same table. */
struct det_qlinks {
	struct fq_strmap links; /* link name -> struct link_stat (its slow units; owned) */
	bool built, failed;     /* failed: out of memory, no link said to queue */
};

struct fq_detector {
	struct fq_detector_config c;
	struct det_qlinks qlinks;
	struct fq_captab paths, nics, nodes, steps, anoms;
	struct fq_captab lroutes; /* lanes' own routes (detector_lroute.c) */
	struct fq_captab psteps;  /* job steps' profiler channels (detector_prof.c) */
	size_t nlanes;
	size_t nprof; /* channel and QP records over all psteps (bounded by max_lanes) */
	uint64_t next_handle;
	struct qact *head, *tail, *cur;
	size_t pending;
	int64_t last_sweep_ns;
	int64_t *scratch_p99;
	size_t *scratch_idx;
	bool *scratch_out;
	struct cand *locate_scratch; /* detector_locate.c's candidates */
	struct topo_diff *tdiffs;    /* the topology's differences now (fq_detector_topology) */
	size_t ntdiffs;
	size_t scratch_cap;
	/* the job advised per place (a NIC or a switch link) while its advice
	 * holds: in any collision it is part of, it stays the one to move
	 * (fq_rule_collision_keep) */
	struct {
		char place[NODE_LEN + NIC_LEN + 1];
		uint64_t job;
		int64_t until_ns;
	} advised[16];
	/* dropped for a bound: shown in a rate-limited warning */
	uint64_t dropped_actions, dropped_anomalies, rejected_inputs;
	struct fq_ratelimit rl;
};

/* ---- helpers ------------------------------------------------------------ */

static inline bool has(const char *s)
{
	return s && *s;
}

static inline void copy_name(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < len; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[i] = (ch > 0x20 && ch < 0x7f && ch != '"' && ch != '\\') ? (char)ch : '?';
	}
	memset(dst + i, 0, len - i);
}

static inline void nic_key_set(struct nic_key *k, const char *node, const char *nic)
{
	copy_name(k->node, sizeof(k->node), node);
	copy_name(k->nic, sizeof(k->nic), nic);
}

static inline bool nic_eq(const struct nic_key *a, const struct nic_key *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static inline bool nic_empty(const struct nic_key *k)
{
	return k->node[0] == 0;
}

static inline int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* now - then > span, safe for any values. */
static inline bool older_than(int64_t now, int64_t then, int64_t span)
{
	return fq_rule_sat_sub(now, then) > span;
}

static inline double us(int64_t ns)
{
	return (double)ns / 1000.0;
}

/* ---- detector_act.c: the action queue, nodes and hints ------------------ */

/* Queues a copy of a (its strings and ranks are copied). */
void det_push(struct fq_detector *d, const struct fq_det_action *a);
/* Frees the queued actions and the last one taken (destroy). */
void det_actions_free(struct fq_detector *d);
/* The node's entry (created; NULL: out of memory); found only (NULL: none;
 * name: a NODE_LEN key). */
struct node_ent *det_node_get(struct fq_detector *d, const char *name, int64_t now);
struct node_ent *det_node_find(struct fq_detector *d, const char *name);
/* A drain hint for the NIC k's node, unless it is drained or hinted already. */
void det_hint_drain(struct fq_detector *d, const struct nic_key *k, const char *reason, uint64_t handle,
		    int64_t now);
/* The fabric hint of an incident just opened (handle) on a switch or a
 * switch-to-switch link: what to check there for a loss (else a delay);
 * leaf: hosts hang off the switch. Never a drain: no node is at fault. */
void det_hint_fabric(struct fq_detector *d, uint64_t handle, const char *component, bool loss, bool leaf,
		     int64_t now);

/* ---- detector_episode.c: anomalies and link episodes --------------------- */

/* The table's drop callbacks (fq_captab_init), one per table. */
void det_anom_drop(void *ctx, struct fq_captab_ent *e);
void det_nic_drop(void *ctx, struct fq_captab_ent *e);
void det_path_drop(void *ctx, struct fq_captab_ent *e);
void det_step_drop(void *ctx, struct fq_captab_ent *e);

/* The open anomaly of kind on NIC a (b NULL) or path a -> b; NULL: none. */
struct anom_ent *det_anom_find(struct fq_detector *d, enum kind kind, const struct nic_key *a,
			       const struct nic_key *b);
/* The open link episode of NIC a or path a -> b at t (NULL: none, or over). */
struct anom_ent *det_episode_at(struct fq_detector *d, const struct nic_key *a, const struct nic_key *b,
				int64_t t);
/* The incident a new anomaly of kind on (a, b) at t is a member of (NULL: none). */
struct anom_ent *det_nic_incident(struct fq_detector *d, enum kind kind, const struct nic_key *a,
				  const struct nic_key *b, int64_t t);
/* Attaches (job, step, ranks) to the anomaly; queues an ATTACH with the ranks new to it. */
void det_anom_attach(struct fq_detector *d, struct anom_ent *a, uint64_t job, uint32_t step,
		     const uint32_t *ranks, size_t nranks);
/* Attaches step sk by its lane l if the lane crossed the anomaly's place while it lasted. */
void det_attach_lane(struct fq_detector *d, struct anom_ent *a, const struct step_key *sk,
		     const struct lane_rec *l);
/* Evidence for (kind, place): extends the open anomaly or opens one; *opened
 * (may be NULL) says which. NULL: none could be opened (max_open). */
struct anom_ent *det_anom_evidence(struct fq_detector *d, enum kind kind, int severity,
				   const struct nic_key *a, const struct nic_key *b, int64_t start_ns,
				   int64_t ev_ns, const char *summary, const char *evidence, bool *opened);
/* The same, a new anomaly a member of incident `of` (when not NULL) rather
 * than of its NICs' open episodes. */
struct anom_ent *det_anom_member(struct fq_detector *d, enum kind kind, int severity, const struct nic_key *a,
				 const struct nic_key *b, int64_t start_ns, int64_t ev_ns,
				 const char *summary, const char *evidence, bool *opened,
				 const struct anom_ent *of);
/* Queues its CLOSE at end_ns and forgets it. */
void det_anom_close(struct fq_detector *d, struct anom_ent *a, int64_t end_ns);
/* The episode's DOWNs so far (a->events), the last at t: an UPDATE. */
void det_episode_update(struct fq_detector *d, struct anom_ent *a, int64_t t);
/* A DOWN at t of NIC x (y NULL) or path x -> y: into its open episode or a new one. */
void det_episode_down(struct fq_detector *d, int severity, const struct nic_key *x, const struct nic_key *y,
		      int64_t t, const char *summary, const char *evidence);
/* Is the episode over (UP for incident_gap_ns, or its state dropped)? *end: since when. */
bool det_episode_over(struct fq_detector *d, const struct anom_ent *a, int64_t now, int64_t *end);

/* ---- detector_link.c: NICs and paths ---------------------------------------- */

/* Path src -> dst, created (first_ns = now) if new; NULL: no room. */
struct path_ent *det_path_get(struct fq_detector *d, const struct nic_key *src, const struct nic_key *dst,
			      int64_t now);
/* Paths whose held DOWNs no NIC explained after incident_settle_ns, nor a
 * stall of the far agent (or stall_wait_ns for its report): their own episodes. */
void det_promote_paths(struct fq_detector *d, int64_t now);

/* ---- detector_lane.c: job steps' lanes ---------------------------------------- */

/* inband_mismatch on lane l of step s: its base delay far above its NIC
 * pair's probes in delay_persist_windows intervals in a row (the probes'
 * verdict on the pair takes as many windows), unless the probes find the
 * pair delayed either way (an open path_delay) or its own route crosses
 * a switch link that queues. A TCP lane whose NIC pair's route is known
 * but its own not yet (its agent traces it within seconds) waits for
 * ROUTE_WAIT_NS from its first interval. A waiting lane is held,
 * l->inband_held: judged again when its route comes
 * (fq_detector_lane_route), at its next interval, or when its step ends
 * (final: judged on what is known, one interval over the probes
 * enough). */
void det_lane_judge_inband(struct fq_detector *d, const struct step_ent *s, struct lane_rec *l, bool final);
/* lane_outlier over the step's newest intervals. */
void det_check_step_outliers(struct fq_detector *d, struct step_ent *s);
/* collision (and its advice) over the steps' fresh lanes (collision_advice). */
void det_check_collisions(struct fq_detector *d, int64_t now);

/* ---- detector_prof.c: job steps' profiler channels --------------------------- */

void det_pstep_drop(void *ctx, struct fq_captab_ent *e);
/* peer_slow over the step's channels' newest intervals. */
void det_check_prof_step(struct fq_detector *d, struct pstep_ent *s);

/* detector_locate.c */
/* Does path p's route cross component comp? */
bool det_route_crosses(const struct path_ent *p, const char *comp);
/* Does a route (path_ent.route's form) cross comp ("spine3", a cable
 * "leaf1~spine3" either way, a link as crossed "leaf1>spine3")? */
bool det_in_route(char *const *route, size_t n, const char *comp);
/* A route in path_ent.route's form from the topology's components
 * (switch links "A~B" as crossed: "A>B"; at most MAX_ROUTE kept): owned
 * names in *out (NULL when n is 0), how many in *m. -ENOMEM. */
int det_route_names(const char *const *comps, size_t n, char ***out, size_t *m);
void det_routes_free(char **r, size_t n);
/* The path the other way (its acks' and echoes'), or NULL. */
const struct path_ent *det_reverse_of(struct fq_detector *d, const struct path_ent *p);

/* detector_lroute.c */
/* The lane's own route, if it has one that starts at its sending NIC. */
const struct lroute_ent *det_lane_route(struct fq_detector *d, const struct step_key *sk,
					const struct lane_rec *l);
void det_lroute_drop(void *ctx, struct fq_captab_ent *e);
/* Did lane l of step sk cross comp: by its own route where it has one
 * (loss: or its acks' way back, the NIC pair's reverse route), else by its
 * NIC pair's probe route (delay) or round trip (loss)? */
bool det_lane_crosses(struct fq_detector *d, const struct step_key *sk, const struct lane_rec *l,
		      const char *comp, bool loss);
/* Is a loss of p's probes (the round trip: p's route or its reverse's, as
 * they were when the loss began) through comp? */
bool det_loss_crosses(struct fq_detector *d, const struct path_ent *p, const char *comp);
/* A fabric incident's kind (K_FABRIC_*). */
static inline bool det_is_fabric(uint64_t kind)
{
	return kind == K_FABRIC_DELAY || kind == K_FABRIC_LOSS;
}

/* Is the anomaly's place not a node's (a component, a topology difference)? */
static inline bool det_no_node(uint64_t kind)
{
	return det_is_fabric(kind) || kind == K_TOPOLOGY;
}
/* Notes a probe window's losses on p (DOWN: lost = sent, at least 1); they
 * count once p has had LOSS_CLEAN windows without loss. */
void det_path_loss(struct path_ent *p, uint32_t sent, uint32_t lost, int64_t start_ns, int64_t end_ns);
/* The same for one of its flows. */
void det_flow_loss(struct path_flow *f, uint32_t sent, uint32_t lost, int64_t start_ns, int64_t end_ns);
/* Is every flow of p with a recent window delayed (true for a path
 * without flows)? A slow NIC delays all the flows of its paths; a queue in
 * the fabric those routed through it, so the NIC rules count a path
 * elevated only when it is delayed on every flow. */
bool det_path_delayed_everywhere(const struct path_ent *p, int64_t now);
/* p's flows (allocated on first use; NULL: out of memory). */
struct path_flow *det_path_flows(struct path_ent *p);
/* Frees p's routes and flows. */
void det_path_routes_free(struct path_ent *p);
/* The open fabric incident (K_FABRIC_DELAY) a delay of path p belongs to:
 * p is delayed and routed through its component; NULL: none. */
struct anom_ent *det_fabric_incident(struct fq_detector *d, const struct path_ent *p);
/* The host link ("n3/rail1~leaf2") of a NIC as the routes show it; NULL:
 * no route from or to it. Valid until the path is dropped. */
const char *det_host_link(struct fq_detector *d, const struct nic_key *nic);
/* The component a NIC's episode blames: the NIC itself ("n3/rail1") when it
 * said it is disabled or gone, else its host link (det_host_link); buf
 * holds a NIC's name. NULL: not known. And a clause for its summary ("" or
 * "; the NIC ..."). */
const char *det_nic_component(struct fq_detector *d, const struct nic_key *nic, char *buf, size_t len);
const char *det_nic_said(struct fq_detector *d, const struct nic_key *nic);
/* Blame delayed paths, and lossy ones, on the one component they share (each tick). */
void det_locate(struct fq_detector *d, int64_t now);

/* detector_locate.c: the tomography's units */
/*
 * One probe flow of a path, the tomography's unit: its own 5-tuple, so its
 * own route, and its own loss and delay. A path whose agent probes over
 * one flow (or one before flows) is one unit with the path's figures.
 */
struct det_unit {
	const struct path_ent *p;
	unsigned flow;
	char *const *route, *const *old_route;
	size_t nroute, old_nroute;
	int64_t route_since_ns;
	int64_t seen_ns, loss_first_ns, loss_last_ns;
	uint32_t loss_lost, loss_sent;
	int64_t tail_ns, last_end_ns, streak_start;
	bool slow;
};
static inline unsigned det_n_units(const struct path_ent *p)
{
	return p->flows && p->nflows ? p->nflows : 1;
}
/* Unit k (< det_n_units(p)) of p into u. */
void det_unit_of(const struct path_ent *p, unsigned k, struct det_unit *u);
/* For every unit u of every path of d: the body (u a const struct det_unit *). */
#define DET_FOR_UNITS(d, u)                                                                                  \
	FQ_CAPTAB_FOREACH(&(d)->paths, struct path_ent, p_##u, nx_##u)                                       \
	for (unsigned k_##u = 0, n_##u = det_n_units(p_##u); k_##u < n_##u; k_##u++)                         \
		for (struct det_unit s_##u, *u = (det_unit_of(p_##u, k_##u, &s_##u), &s_##u); u; u = NULL)
#define LOCATE_RECENT_NS (5 * 1000000000LL) /* a unit's recent window (slow, lossy) */
/* A route is awaited this long after its path or lane is first heard of
 * before a rule that needs it judges without: agents trace a path when
 * first probed and a TCP lane when first reported, and a trace with hops
 * missing (answers lost on a congested link) is tried again after 10 s. */
#define ROUTE_WAIT_NS (12 * 1000000000LL)

/* detector_qlink.c (the table: struct det_qlinks) */
/* A switch-to-switch link as routes name it ("A>B" as crossed, "A~B" the
 * cable), not a host's ("n3/rail1~leaf2") nor a switch. */
static inline bool det_is_switch_link(const char *c)
{
	return !strchr(c, '/') && (strchr(c, '>') || strchr(c, '~'));
}
/* Is the switch link ("A>B" that way, "A~B" either way, as routes name
 * them) queueing: units that cross it delayed now, and no node common to
 * them all (a flapping NIC delays every path of its own, whatever links
 * they cross; a host that cannot keep up, every path into any of its
 * NICs, and where the spines carry every rail those meet on the spines'
 * links)? A leaf with one host cannot show it. Judged from the table of
 * the current tick, built at the first question (now: its time). */
bool det_link_congested(struct fq_detector *d, const char *link, int64_t now);
/* Does a route (path_ent.route's form) cross a switch link that queues? */
bool det_route_queueing(struct fq_detector *d, char *const *route, size_t n, int64_t now);
/* A new tick: the table is judged anew at its first question. */
void det_qlinks_reset(struct fq_detector *d);

/* detector_topodiff.c */
/* Opens the topology's differences that have lasted TOPO_SETTLE_NS (each tick). */
void det_topo_settle(struct fq_detector *d, int64_t now);

#endif /* FQ_CONTROLLER_DETECTOR_INT_H */
