/*
 * end_report: the job-end line. When a step that ran with fabriciq ends,
 * srun (the SPANK plugin's local context) asks the controller for the
 * step's summary and prints one line into the job's stderr if fabriciq saw
 * incidents or lane failovers for it, as seff does:
 *
 *   fabriciq: step 42.0: 2 incidents, 4 lane failovers — fabriciq job 42
 *
 * and nothing otherwise (a clean step, no controller configured, the
 * controller unreachable: the last is logged at debug level, srun -v).
 *
 * The summary is /api/v1/jobs/JOB.STEP/summary (controller/api.h), served
 * to the step's owner: srun runs as the job's user and authenticates with
 * a munge credential minted for that path. A node's end of the step
 * reaches the controller through its agent after everything that node's
 * ranks reported, so srun asks again (every END_POLL_MS) until every node
 * has ended the step ("complete") or the wait runs out; then the line
 * says how many nodes had not yet reported.
 */
#ifndef FQ_SPANK_END_REPORT_H
#define FQ_SPANK_END_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fq_end_summary {
	bool complete; /* every node of the step has ended it */
	int node_count, nodes_ended;
	int incidents, anomalies, failovers;
};

/* The API's JSON answer into *s: 0, or -EPROTO if it is not a summary. */
int fq_end_summary_parse(const char *json, struct fq_end_summary *s);

/* The line for step job.step (step as Slurm writes it: "0", "interactive"),
 * no newline, or "" when there is nothing to say (no incident and no
 * failover). */
void fq_end_line(const struct fq_end_summary *s, uint32_t job, const char *step, char *buf, size_t len);

/*
 * Asks controller (http://HOST[:PORT]) for step job.step's summary, again
 * every END_POLL_MS until it is complete or wait_ms has passed since the
 * call (each request bounded by what is left, at least 200 ms). munge_socket
 * NULL or "": munge's default. Returns 0 with *s (complete or not), or a
 * negative errno with err: the controller unreachable or refusing (-EACCES
 * for 401/403, -ENOENT for 404: the step never reached it), munged
 * unreachable, or an answer that is no summary (-EPROTO).
 */
int fq_end_summary_fetch(const char *controller, const char *munge_socket, uint32_t job, const char *step,
			 int wait_ms, struct fq_end_summary *s, char *err, size_t errlen);

#endif /* FQ_SPANK_END_REPORT_H */
