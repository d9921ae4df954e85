/*
 * advice: the controller's collision advice as the agent keeps it, and how
 * it lands on the path page (common/path_page.h: advice, advice_job,
 * advice_until_ns, advice_gen). Pure: no I/O, the clock is a parameter,
 * so tests feed it frames and times.
 *
 * An advice names a local NIC, a remote node and NIC ("" = any), a job
 * and the lane to move by its source port (0: any lane of the path); it
 * holds for its lifetime from receipt. The same (job, local NIC, remote
 * node, remote NIC, port) again renews it in place (its generation stays:
 * the job has acted on it already); a new one takes a new generation, so
 * a reader acts once per generation. The table is bounded: when full, the
 * entry that expires first is replaced.
 *
 * A rate (kind "rate", issue 20: the job's lanes share a congested link
 * with a higher network class's) names the same places and carries a
 * sending rate per lane; it lands in the page's rates (struct
 * fq_path_rate), one per path entry it matches. The same rate again
 * renews it; another rate replaces it with a new generation; rate 0
 * lifts it at once.
 */
#ifndef FQ_AGENT_ADVICE_H
#define FQ_AGENT_ADVICE_H

#include <stddef.h>
#include <stdint.h>

#include "common/path_page.h"
#include "proto/fabriciq.pb-c.h"

#define FQ_ADVICE_MAX 256

struct fq_advice {
	char local_nic[16], remote_node[40], remote_nic[16];
	uint32_t job;
	int64_t until_ns; /* local CLOCK_MONOTONIC_RAW */
	uint32_t gen;
	uint64_t rate; /* bytes/s a lane: a rate; 0: a move */
	uint16_t port; /* a move: the lane's source port (0: any lane of the path) */
};

struct fq_advice_table {
	struct fq_advice e[FQ_ADVICE_MAX];
	size_t n;
	uint32_t next_gen; /* last generation given */
};

/* Take an Advice frame received at now_ns: 1 new (a rate: or changed), 0
 * renewed, FQ_ADVICE_LIFTED (a rate 0 that lifted one), -ENOENT (a rate 0
 * for none held), -EINVAL (not "move" or "rate", no job, no local NIC,
 * lifetime <= 0, a name too long). */
#define FQ_ADVICE_LIFTED 2
int fq_advice_take(struct fq_advice_table *t, const Fabriciq__Advice *a, int64_t now_ns);

/* Drop expired advice; then set the advice fields of every path entry a
 * move advice matches (local NIC equal; remote node and NIC equal or the
 * advice's ""), clear the others. Where several match, the one that lasts
 * longest (the controller renews the lanes it still sees colliding, so a
 * lane that moved away gives way to them). Returns the number of entries
 * with advice. */
size_t fq_advice_fill(struct fq_advice_table *t, struct fq_path_entry *e, size_t n, int64_t now_ns);

/* The rates in force at now_ns onto the page's rates: one per (rate,
 * path entry it matches, as fq_advice_fill's), each with the entry's
 * remote address; at most max. Returns how many. */
size_t fq_advice_rates(const struct fq_advice_table *t, const struct fq_path_entry *e, size_t n,
		       struct fq_path_rate *out, size_t max, int64_t now_ns);

#endif /* FQ_AGENT_ADVICE_H */
