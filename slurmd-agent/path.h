/*
 * path: liveness of one probed path (local NIC -> remote NIC) and its flap
 * history (pure: the caller passes the time).
 *
 * A path is DOWN when no answer came for down_after_ns while probes were
 * outstanding, and UP again at the first answer. Each DOWN transition is a
 * flap; flaps are kept with their times so "N flaps in the last hour" is
 * exact, not a decayed rate.
 */
#ifndef FQ_AGENT_PATH_H
#define FQ_AGENT_PATH_H

#include <stdbool.h>
#include <stdint.h>

#define FQ_PATH_FLAP_HISTORY 256
/* A path that has never answered goes DOWN only after this long (peers
 * start at different times), and that first DOWN is not a flap. */
#define FQ_PATH_STARTUP_GRACE_NS (5 * 1000000000LL)

enum fq_path_event {
	FQ_PATH_NONE = 0,
	FQ_PATH_WENT_DOWN = 1,
	FQ_PATH_WENT_UP = 2,
};

struct fq_path {
	bool up; /* starts UP: a path is innocent until it stops answering */
	bool ever_answered;
	int64_t last_answer_ns;                   /* when the last answer arrived */
	int64_t first_unanswered_ns;              /* first probe sent after the last answer; 0: none */
	int64_t changed_ns;                       /* last transition */
	uint64_t flaps;                           /* DOWN transitions, ever */
	int64_t flap_times[FQ_PATH_FLAP_HISTORY]; /* ring of DOWN times */
	unsigned flap_head, flap_count;
};

void fq_path_init(struct fq_path *p, int64_t now_ns);

/* A probe went out at now_ns. */
void fq_path_on_probe(struct fq_path *p, int64_t now_ns);

/* An answer arrived: returns FQ_PATH_WENT_UP if the path was down. */
enum fq_path_event fq_path_on_answer(struct fq_path *p, int64_t now_ns);

/* Periodic check: FQ_PATH_WENT_DOWN when a probe has been unanswered for
 * down_after_ns. *since_ns gets the time the silence began (the last
 * answer, or the first unanswered probe if there never was one). */
enum fq_path_event fq_path_check(struct fq_path *p, int64_t now_ns, int64_t down_after_ns, int64_t *since_ns);

/* DOWN transitions within the last window_ns (e.g. an hour). */
unsigned fq_path_flaps_since(const struct fq_path *p, int64_t now_ns, int64_t window_ns);

#endif /* FQ_AGENT_PATH_H */
