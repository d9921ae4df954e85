/*
 * local: the agent's two unix sockets (the contract: common/step_socket.h).
 *
 * The step socket (root only: mode 0600 and SO_PEERCRED uid 0) takes
 * StepStart/StepEnd requests and answers each with a Result; an answer to
 * StepStart also carries the agent's paths (the telemetry socket, the
 * clock and path pages given at create). The agent may defer an answer
 * (until the request is on disk: FQ_LOCAL_LATER); each Result carries its
 * request's seq. The telemetry
 * socket (mode 0666) takes LaneReport/ProfilerReport/FailoverEvent frames from job
 * processes, each handed over with the sender's kernel-proven credentials.
 * Garbage, oversized frames and frames of the wrong kind are counted and
 * the connection closed; the agent keeps running.
 *
 * Each socket has its own connection limit, so a local user who fills the
 * world-writable telemetry socket never takes the step socket's room (a
 * refused step registration fails a job with required=yes). On the
 * telemetry socket each uid may hold at most max_per_uid connections, and
 * a connection that completes no frame for idle_timeout is closed (a
 * client that reconnects loses nothing but its slot). On both, a frame
 * whose first byte has arrived must be complete within frame_timeout,
 * however slowly its bytes trickle in; with the frame limits of
 * common/step_socket.h this bounds what one connection holds in memory and
 * for how long. The caller makes sure the process may open
 * step_max + telemetry_max descriptors besides its own (RLIMIT_NOFILE).
 */
#ifndef FQ_AGENT_LOCAL_H
#define FQ_AGENT_LOCAL_H

#include <event2/event.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto/fabriciq.pb-c.h"

enum fq_local_verdict {
	FQ_LOCAL_ACCEPTED = 0,
	FQ_LOCAL_UNREGISTERED = 1, /* sender is not a task of a registered step */
	FQ_LOCAL_WRONG_JOB = 2,    /* sender claims a job other than its own */
	FQ_LOCAL_DROPPED = 3,      /* accepted but could not be forwarded */
	FQ_LOCAL_RATE_LIMITED = 4, /* over its step's rate (agent.telemetry_*_rate) */
};

/* A step op's return: its answer comes later, through fq_local_answer. */
#define FQ_LOCAL_LATER 1

struct fq_local_ops {
	/* A step request: return 0 or a negative errno, with msg filled (the
	 * answer, now), or FQ_LOCAL_LATER to answer ticket later. */
	int (*step_start)(void *arg, const Fabriciq__StepStart *m, uint64_t ticket, char *msg, size_t msglen);
	int (*step_end)(void *arg, const Fabriciq__StepEnd *m, uint64_t ticket, char *msg, size_t msglen);
	/* A telemetry frame (lane or failover) from cred's process. */
	enum fq_local_verdict (*telemetry)(void *arg, const struct ucred *cred, Fabriciq__Envelope *env);
	/* May cred's process hold a telemetry connection at all (a task of a
	 * registered step, or one of its descendants, of the step's uid)?
	 * Asked once, when it connects: a process of no step is refused
	 * there, so strangers cannot fill the socket's slots that jobs need.
	 * NULL: every process may. */
	bool (*telemetry_sender)(void *arg, const struct ucred *cred);
};

struct fq_local_limits {
	unsigned step_max;        /* connections on the step socket (root's) */
	unsigned telemetry_max;   /* connections on the telemetry socket, all uids */
	unsigned max_per_uid;     /* telemetry connections of one uid */
	int64_t idle_timeout_ns;  /* telemetry: closed after this long without a frame */
	int64_t frame_timeout_ns; /* both: a begun frame must be complete this soon */
};

struct fq_local;

/* Listen on both socket paths (an existing socket file is replaced);
 * clock_page and path_page are only told to StepStart's callers (copied).
 * Connections over a limit are accepted and closed at once, counted.
 * NULL on failure, logged with the path and errno. */
struct fq_local *fq_local_create(struct event_base *base, const char *step_path, const char *telemetry_path,
				 const char *clock_page, const char *path_page,
				 const struct fq_local_limits *limits, const struct fq_local_ops *ops,
				 void *arg);
/* Answer the request an op deferred with ticket: rc and msg as an op's.
 * Dropped (not an error) when its connection closed meanwhile. */
void fq_local_answer(struct fq_local *l, uint64_t ticket, int rc, const char *msg);

/* At a stop, after the event loop: take every telemetry frame already in
 * the connections' sockets (the processes count them as sent: the socket
 * has no acknowledgement), as if read by the loop. */
void fq_local_drain(struct fq_local *l);

/* Close every connection and remove both socket files. */
void fq_local_destroy(struct fq_local *l);

/* {step_requests, step_refused, step_not_root, telemetry_frames,
 *  telemetry_unregistered, telemetry_wrong_job, telemetry_dropped,
 *  telemetry_rate_limited,
 *  bad_frames, refused_connections (a socket's limit), refused_per_uid,
 *  closed_idle, closed_partial (frame_timeout), step_connections,
 *  telemetry_connections} */
struct json_object *fq_local_counters(const struct fq_local *l);

#endif /* FQ_AGENT_LOCAL_H */
