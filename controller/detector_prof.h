/*
 * detector_prof: the detector's input from the NCCL profiler plugin
 * (detector.h): one ProfilerReport of one rank, tagged by its agent, with
 * the windows the rule reads. Strings are copied by the detector when it
 * keeps them.
 *
 * The rule, peer_slow: for each rank and peer, the step_send windows
 * (NCCL's network transfers to that peer, timed from their post to the
 * network to their completion: the plugin's step_send windows)
 * give the channel's rate over its busy time, bytes / (transfers x mean
 * duration). A channel whose rate is below its reference (the median
 * rate of the channels of other ranks to other peers that carried
 * comparable bytes, at least peer_slow_min_ref of them) / peer_slow_factor
 * in peer_slow_persist of its judged intervals, with no clearly normal
 * one between (fq_rule_peer_slow), is a peer_slow anomaly: place the rank's node ->
 * the peer's node (learnt from the peer's own reports; unknown: the
 * rank's node alone), attached to the step and the two ranks. The rank's
 * IB queue pairs in that interval (net_ib windows that carried bytes) go
 * into the evidence, slowest first: NCCL's QP events name no peer, but a
 * ring's rank sends to one. Only the sending side is judged: a receive is
 * timed from when it was posted, which is waiting, not the network. But
 * a slow interval whose peer received the same transfers (its step_recv
 * windows from the rank, the interval nearest) at more than twice their
 * rate is no slowness of the network: the transfers waited for the peer
 * to post its receives (a rank behind, as after a slow phase, when the
 * ranks' loops fall out of step), and came quickly once it did. It
 * counts as a normal interval. A
 * step's channels are judged once per interval at the tick, like its lanes
 * (intervals of the ranks' own phases within one of the newest), at the
 * first tick that has enough of the other ranks' intervals to judge by. Reports
 * not on the global clock (no clock page) are not judged.
 */
#ifndef FQ_CONTROLLER_DETECTOR_PROF_H
#define FQ_CONTROLLER_DETECTOR_PROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fq_detector;

/* One window of the report (proto ProfilerWindow). */
struct fq_det_prof_window {
	const char *kind; /* "step_send", "net_ib", ...; others are ignored */
	int32_t device, sub;
	int64_t id; /* step_send: the peer rank; net_ib: the QP number */
	uint64_t count, bytes;
	int64_t mean_ns;
};

struct fq_det_prof {
	const char *node; /* the agent that sent it: the rank's node */
	uint64_t job_id;
	uint32_t step_id, rank;
	uint64_t comm_hash;
	int64_t start_ns, end_ns; /* the report's interval, global */
	bool synchronised;
	const struct fq_det_prof_window *windows;
	size_t nwindows;
};

/* One report (or a part of one: a report's windows may come in several
 * frames of the same interval, which add up). */
void fq_detector_profiler(struct fq_detector *d, const struct fq_det_prof *r);

#endif /* FQ_CONTROLLER_DETECTOR_PROF_H */
