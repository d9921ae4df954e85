/*
 * det-fixture.h: what the detector's tests (test-detector-*.c) share: the
 * actions a detector gave, recorded (recs), queries over them, and feeding
 * a detector, from the recorded telemetry of tests/controller/data/ or
 * one input at a time. Times are seconds on the fixtures' timeline (S).
 */
#ifndef FQ_TESTS_CONTROLLER_DET_FIXTURE_H
#define FQ_TESTS_CONTROLLER_DET_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/detector.h"

#define BASE  1700000000000000000LL /* the fixtures' t = 0 on the global timeline */
#define S(x)  (BASE + (int64_t)((x)*1e9 + 0.5))
#define US(x) ((int64_t)((x)*1000.0 + 0.5))

/* One action, copied. */
struct rec {
	enum fq_det_action_kind kind;
	uint64_t handle, job, incident;
	unsigned events;
	uint32_t step, ranks[8];
	size_t nranks;
	int severity;
	int64_t start, end;
	bool resume;
	char akind[32], node[80], nic[48], rnode[80], rnic[48], summary[512], evidence[1024], reason[512];
	char component[80];
	uint16_t port; /* ADVICE: the lane's source port */
};

/* The actions collected since the last reset (at most 4096). */
extern struct rec recs[4096];
extern size_t nrecs;

/* Takes every action d has into recs. */
void collect(struct fq_detector *d);
/* Forgets the recorded actions. */
void reset(void);
/* How many actions of kind (and anomaly kind akind unless NULL). */
size_t count(enum fq_det_action_kind kind, const char *akind);
/* The first OPEN of akind (on node and nic unless NULL). */
const struct rec *find_open(const char *akind, const char *node, const char *nic);
/* The first action of kind (of handle unless 0). */
const struct rec *find_kind(enum fq_det_action_kind kind, uint64_t handle);
/* The ranks of (job, step) attached to handle, as a bit set; -1: not attached. */
long long attached(uint64_t handle, uint64_t job, uint32_t step);
/* Was anything attached to job? */
bool attached_job(uint64_t job);
/* The newest UPDATE of handle (NULL: none). */
const struct rec *last_update(uint64_t handle);
/* How many link_down actions of kind on paths (path) or NICs. */
size_t count_place(enum fq_det_action_kind kind, bool path);

/* The defaults, but a path's delay and a lane's outlier count from their
 * first elevated window (test_persistence checks the default of 3 in a row). */
struct fq_detector *make(void);
/* ... with that share of a NIC's paths enough to name it slow (0: the default) */
struct fq_detector *make_share(double slow_nic_share);
/* Feeds the lines of a fixture with a time <= until_s into d (ticks too). */
void replay(struct fq_detector *d, const char *name, double until_s);
/* One probe window of NIC pair (n, nic) -> (rn, rnic) ending at t. */
void probe(struct fq_detector *d, const char *n, const char *nic, const char *rn, const char *rnic, double t,
	   double p50_us, double p99_us);
/* One lane interval of job (step 0) ending at t. */
void lane(struct fq_detector *d, uint64_t job, uint32_t sr, uint32_t dr, uint32_t ln, const char *sn,
	  const char *snic, const char *dn, const char *dnic, double t, double p50_us, double p99_us);
/* A link event at t: of NIC (n, nic) if rn is NULL, else of the path to (rn, rnic). */
void link_event(struct fq_detector *d, const char *n, const char *nic, const char *rn, const char *rnic,
		bool up, double t);

#endif /* FQ_TESTS_CONTROLLER_DET_FIXTURE_H */
