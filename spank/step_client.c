/* step_client: see step_client.h. */
#include "spank/step_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"

/* Answers are a few bytes; a step request carries one Rank per task. */
#define STEP_FRAME_MAX (1u << 20)

struct fq_step_client {
	int fd;
	int timeout_ms;
	uint64_t seq;
	struct fq_frame_decoder *dec;
};

/* Wait for events on fd until deadline (ms, CLOCK_MONOTONIC). */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	int64_t left;
	int n;

	for (;;) {
		left = deadline - fq_clock_ns(CLOCK_MONOTONIC) / 1000000;
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)left);
		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

int fq_step_client_connect(const char *path, int timeout_ms, struct fq_step_client **out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fq_step_client *c;
	int64_t deadline = fq_clock_ns(CLOCK_MONOTONIC) / 1000000 + timeout_ms;
	socklen_t len = sizeof(int);
	int fd, rc, soerr = 0;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		/* A unix socket with a full backlog answers EAGAIN; wait for
		 * the agent to accept within the timeout. */
		if (errno != EAGAIN && errno != EINPROGRESS) {
			rc = -errno;
			goto fail_fd;
		}
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc < 0)
			goto fail_fd;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr) {
			rc = soerr ? -soerr : -errno;
			goto fail_fd;
		}
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = -ENOMEM;
		goto fail_fd;
	}
	c->dec = fq_frame_decoder_create(STEP_FRAME_MAX);
	if (!c->dec) {
		rc = -ENOMEM;
		goto fail_client;
	}
	c->fd = fd;
	c->timeout_ms = timeout_ms;
	*out = c;
	return 0;

fail_client:
	free(c);
fail_fd:
	close(fd);
	return rc;
}

static int send_all(struct fq_step_client *c, const uint8_t *buf, size_t len, int64_t deadline)
{
	ssize_t n;
	int rc;

	while (len > 0) {
		n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		rc = wait_fd(c->fd, POLLOUT, deadline);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Read until one Envelope is decoded or the deadline passes. */
static int recv_one(struct fq_step_client *c, Fabriciq__Envelope **env, int64_t deadline)
{
	uint8_t buf[4096];
	ssize_t n;
	int rc;

	for (;;) {
		rc = fq_frame_decoder_next(c->dec, env);
		if (rc == 1)
			return 0;
		if (rc < 0)
			return rc == -EMSGSIZE ? -EPROTO : rc;
		rc = wait_fd(c->fd, POLLIN, deadline);
		if (rc < 0)
			return rc;
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		rc = fq_frame_decoder_feed(c->dec, buf, (size_t)n);
		if (rc < 0)
			return rc;
	}
}

/* One told path into dst: "" when absent or too long for dst. */
static void copy_path(char *dst, const char *told)
{
	if (!told || strlen(told) >= FQ_STEP_PATH_MAX)
		told = "";
	strcpy(dst, told);
}

int fq_step_client_call(struct fq_step_client *c, Fabriciq__Envelope *req, char *msg, size_t msglen,
			struct fq_step_paths *paths)
{
	int64_t deadline = fq_clock_ns(CLOCK_MONOTONIC) / 1000000 + c->timeout_ms;
	Fabriciq__Envelope *ans = NULL;
	uint8_t *frame = NULL;
	size_t len;
	int rc;

	if (msg && msglen)
		msg[0] = 0;
	req->version = FQ_PROTOCOL_VERSION;
	req->seq = ++c->seq;
	rc = fq_frame_encode(req, STEP_FRAME_MAX, &frame, &len);
	if (rc < 0)
		return rc;
	rc = send_all(c, frame, len, deadline);
	free(frame);
	if (rc < 0)
		return rc;
	for (;;) {
		rc = recv_one(c, &ans, deadline);
		if (rc < 0)
			return rc;
		if (ans->payload_case != FABRICIQ__ENVELOPE__PAYLOAD_RESULT) {
			fq_frame_free(ans);
			return -EPROTO;
		}
		/* An answer to an earlier request that timed out: skip it. */
		if (ans->result->seq < req->seq) {
			fq_frame_free(ans);
			continue;
		}
		break;
	}
	if (ans->result->seq != req->seq) {
		fq_frame_free(ans);
		return -EPROTO;
	}
	if (paths) {
		Fabriciq__AgentPaths *told = ans->result->paths;

		copy_path(paths->telemetry_socket, told ? told->telemetry_socket : NULL);
		copy_path(paths->clock_page, told ? told->clock_page : NULL);
		copy_path(paths->path_page, told ? told->path_page : NULL);
	}
	if (ans->result->code != 0) {
		rc = ans->result->code > 0 ? -ans->result->code : ans->result->code;
		if (msg && msglen)
			snprintf(msg, msglen, "%s", ans->result->message ? ans->result->message : "");
	}
	fq_frame_free(ans);
	return rc;
}

void fq_step_client_close(struct fq_step_client *c)
{
	if (!c)
		return;
	close(c->fd);
	fq_frame_decoder_destroy(c->dec);
	free(c);
}
