/*
 * step_client: the SPANK plugin's side of the agent's step socket
 * (common/step_socket.h). One connection, requests answered in order;
 * every operation is bounded by the timeout given at connect, so a stuck
 * or absent agent can delay a step by at most that much per call.
 */
#ifndef FQ_SPANK_STEP_CLIENT_H
#define FQ_SPANK_STEP_CLIENT_H

#include <stddef.h>

#include "proto/fabriciq.pb-c.h"

struct fq_step_client;

/* The agent's paths as its answer to StepStart tells them (Result.paths);
 * "" for one it did not tell (an older agent) or that does not fit. */
#define FQ_STEP_PATH_MAX 4096
struct fq_step_paths {
	char telemetry_socket[FQ_STEP_PATH_MAX];
	char clock_page[FQ_STEP_PATH_MAX];
	char path_page[FQ_STEP_PATH_MAX];
};

/* Connect to the unix socket at path (close-on-exec, so tasks never
 * inherit it). Returns 0 and *out, or a negative errno (-ENOENT,
 * -ECONNREFUSED: no agent; -EACCES: not root; -ETIMEDOUT). */
int fq_step_client_connect(const char *path, int timeout_ms, struct fq_step_client **out);

/* Send req (its seq and version are set here) and wait for the Result
 * with the same seq. Returns 0 if the agent answered code 0; -code (a
 * negative errno) if it refused, with its message copied to msg; or a
 * negative errno for the transport (-ETIMEDOUT, -EPIPE, -ECONNRESET,
 * -EPROTO for an answer that is not a Result), after which the client
 * must be closed. msg may be NULL. paths may be NULL; else, whenever an
 * answer came (whatever its code), it is overwritten with the paths the
 * answer told. */
int fq_step_client_call(struct fq_step_client *c, Fabriciq__Envelope *req, char *msg, size_t msglen,
			struct fq_step_paths *paths);

void fq_step_client_close(struct fq_step_client *c);

#endif /* FQ_SPANK_STEP_CLIENT_H */
