/*
 * detector_link: the detector's link inputs (detector.h): probe windows
 * and link events, which feed the NICs' and paths' rules (flapping,
 * NIC-level down, link state, delay). Strings are copied by the detector
 * when it keeps them.
 */
#ifndef FQ_CONTROLLER_DETECTOR_LINK_H
#define FQ_CONTROLLER_DETECTOR_LINK_H

#include <stdbool.h>
#include <stdint.h>

struct fq_detector;

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
};

struct fq_det_link {
	const char *node, *nic, *remote_node, *remote_nic; /* remote_*: "" for a NIC-level event */
	bool up, nic_level;
	int64_t time_ns;
};

void fq_detector_probe(struct fq_detector *d, const struct fq_det_probe *p);
void fq_detector_link(struct fq_detector *d, const struct fq_det_link *e);

#endif /* FQ_CONTROLLER_DETECTOR_LINK_H */
