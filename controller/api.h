/*
 * api: the controller's read-only JSON API (GET only), computed from the
 * database's views and tables. The daemon's HTTP server hands every
 * /api/v1/... request here; the `fabriciq` CLI is its client.
 *
 * Endpoints (all JSON objects, times as RFC 3339 strings and *_ns integers):
 *   /api/v1/status              controller, database, agents, open anomalies, pending hints
 *   /api/v1/nodes               nodes with their NICs and last report
 *   /api/v1/links               link_health rows (per NIC / path)
 *   /api/v1/jobs?limit=N        recent job steps with job_efficiency figures
 *   /api/v1/jobs/JOB[.STEP]     the job report: steps, ranks (node, NIC, pid),
 *                               lanes, throughput over time, slowest lanes,
 *                               anomalies with the ranks they hit, failovers
 *   /api/v1/jobs/JOB.STEP/summary   the step's owner, how many of its nodes
 *                               have ended it (complete: all of them), its
 *                               incidents, anomalies and lane failovers:
 *                               what the job-end line prints
 *   /api/v1/events?since=RFC3339&limit=N   link events
 *   /api/v1/anomalies?open=1&limit=N
 *   /api/v1/incidents?open=1&limit=N   incidents (anomalies part of no
 *                               other): what is blamed, when, members,
 *                               the steps and ranks hit
 *   /api/v1/incidents/ID        one incident: its evidence, its members
 *                               and a timeline of them
 *   /api/v1/hints               pending drain/resume hints: action, node,
 *                               slurm_reason, and the scontrol command for
 *                               people (controller/hint.h; never executed:
 *                               `hints --apply` builds its own from the fields)
 *   /api/v1/clock               clock_status rows
 *   /api/v1/topology            the fabric inferred from the paths' routes
 *                               (controller/topology.h): switches, links,
 *                               host attachments, each path's route, and
 *                               the differences from the site's expected
 *                               topology (controller.topology_file)
 *
 * Request parsing (the query's parameters, the values in them) is
 * controller/api_param.h's; the endpoints are here (api.c).
 *
 * Access: the fabric's state (status, nodes, links, events, clock) is open
 * to anyone who reaches the port; job steps (jobs, jobs/...: uids, ranks,
 * pids), anomalies and incidents (the jobs and ranks they hit) and hints (running jobs;
 * what `hints --apply` acts on) are FQ_API_ADMIN: the HTTP server
 * (controller/http.h) serves them only to a request authenticated as root
 * or one of controller.api_admin_uids. A step's summary is FQ_API_OWNER:
 * served to an administrator, or to the uid that owns the step (the server
 * sets the request's owner_only and owner_uid; another user's step is a
 * 404), so that srun, running as the job's user, can print the job-end line.
 */
#ifndef FQ_CONTROLLER_API_H
#define FQ_CONTROLLER_API_H

#include <stddef.h>

#include "common/munge_cred.h"

struct fq_db;
struct fq_api_params;

enum fq_api_access {
	FQ_API_OPEN,  /* anyone */
	FQ_API_ADMIN, /* an authenticated administrator */
	FQ_API_OWNER, /* an administrator, or the authenticated owner of what it names */
};

/* Who may GET path (unknown paths: FQ_API_OPEN, they only get a 404). */
enum fq_api_access fq_api_access(const char *path);

/*
 * An authenticated request carries "Authorization: MUNGE CRED", CRED a
 * munge credential whose payload is the request's path exactly as
 * fq_api_get gets it (percent-decoded, no query: "/api/v1/hints"), valid
 * FQ_API_AUTH_TTL_S: one captured for a path is no use for another, and
 * munged decodes each once.
 */
#define FQ_API_AUTH_SCHEME FQ_MUNGE_AUTH_SCHEME
#define FQ_API_AUTH_TTL_S  60

/* Answer one GET. path is the URL path (e.g. "/api/v1/jobs/42.0"), query
 * the raw query string without '?' (NULL or ""). Returns the HTTP status
 * (200, 400 bad parameter, 404 unknown path or job, 503 database
 * unavailable) and *body, a NUL-terminated JSON document (free() it;
 * errors are {"error": "..."}). Never executes anything from the request
 * as SQL: parameters are validated and bound. */
int fq_api_get(struct fq_db *db, const char *path, const char *query, char **body);
/* The same with the parameters already parsed (controller/api_param.h: the
 * HTTP server adds libmicrohttpd's decoded arguments one by one); params
 * whose parsing failed (params->err set) are answered 400 with that error.
 * The endpoints' checks may overwrite params->err. */
int fq_api_get_params(struct fq_db *db, const char *path, struct fq_api_params *params, char **body);

#endif /* FQ_CONTROLLER_API_H */
