/* The agent's local sockets (slurmd-agent/local.c) with real unix sockets
 * and a real event loop: step requests answered in order, telemetry handed
 * over with the kernel's credentials, garbage and oversized frames counted
 * and their connections closed, the sockets still serving afterwards. */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/frame.h"
#include "slurmd-agent/local.h"
#include "tests/unit/tap.h"

static int starts, ends, lanes;
static pid_t lane_pid;

static int on_start(void *arg, const Fabriciq__StepStart *m, char *msg, size_t len)
{
	(void)arg;
	starts++;
	if (m->job_id == 13) {
		snprintf(msg, len, "job 13 is unlucky");
		return -EINVAL;
	}
	snprintf(msg, len, "registered");
	return 0;
}

static int on_end(void *arg, const Fabriciq__StepEnd *m, char *msg, size_t len)
{
	(void)arg;
	(void)m;
	ends++;
	snprintf(msg, len, "unregistered");
	return 0;
}

static enum fq_local_verdict on_telemetry(void *arg, const struct ucred *cred, Fabriciq__Envelope *env)
{
	(void)arg;
	(void)env;
	lanes++;
	lane_pid = cred->pid;
	return FQ_LOCAL_UNREGISTERED;
}

static const struct fq_local_ops ops = {on_start, on_end, on_telemetry};

static int dial(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Run the loop until it has nothing to do for a moment. */
static void spin(struct event_base *base)
{
	for (int i = 0; i < 20; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(2000);
	}
}

static void send_step(int fd, uint64_t seq, uint64_t job, int end)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__StepStart st = FABRICIQ__STEP_START__INIT;
	Fabriciq__StepEnd se = FABRICIQ__STEP_END__INIT;

	env.version = FQ_PROTOCOL_VERSION;
	env.seq = seq;
	if (end) {
		se.job_id = job;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_END;
		env.step_end = &se;
	} else {
		st.job_id = job;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_START;
		env.step_start = &st;
	}
	fq_frame_write_fd(fd, &env, 1 << 20);
}

/* Read one answer: its code, or -1 (closed / not a Result); its paths as
 * "TELEMETRY CLOCK PATH" in paths, "-" when it has none. */
static int read_result(struct event_base *base, int fd, uint64_t *seq, char *paths, size_t len)
{
	struct fq_frame_decoder *d = fq_frame_decoder_create(0);
	Fabriciq__Envelope *env = NULL;
	uint8_t buf[4096];
	int code = -1;

	for (int i = 0; i < 100 && !env; i++) {
		ssize_t n;
		spin(base);
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n > 0)
			fq_frame_decoder_feed(d, buf, (size_t)n);
		if (fq_frame_decoder_next(d, &env) < 0)
			break;
	}
	if (env && env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_RESULT) {
		code = env->result->code;
		*seq = env->result->seq;
		if (env->result->paths)
			snprintf(paths, len, "%s %s %s", env->result->paths->telemetry_socket,
				 env->result->paths->clock_page, env->result->paths->path_page);
		else
			snprintf(paths, len, "-");
	}
	if (env)
		fq_frame_free(env);
	fq_frame_decoder_destroy(d);
	return code;
}

/* Is fd closed by the peer (after the loop ran)? */
static int closed(struct event_base *base, int fd)
{
	char c;

	spin(base);
	return recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

static long counter(struct fq_local *l, const char *name)
{
	struct json_object *o = fq_local_counters(l);
	long v = json_object_get_int64(json_object_object_get(o, name));

	json_object_put(o);
	return v;
}

int main(void)
{
	char dir[] = "/tmp/fq-local-test.XXXXXX", step[128], tele[128], want[512], paths[512];
	struct event_base *base = event_base_new();
	struct fq_local *l;
	uint64_t seq = 0;
	int fd, fd2;

	if (!mkdtemp(dir))
		skip_all("cannot make a temporary directory");
	snprintf(step, sizeof(step), "%s/step.sock", dir);
	snprintf(tele, sizeof(tele), "%s/tele.sock", dir);
	snprintf(want, sizeof(want), "%s /elsewhere/clock /elsewhere/paths", tele);
	plan(18);
	l = fq_local_create(base, step, tele, "/elsewhere/clock", "/elsewhere/paths", &ops, NULL);
	ok(l != NULL, "both sockets listen");

	if (getuid() != 0) {
		skip(8, "the step socket is root only; not root here");
	} else {
		fd = dial(step);
		send_step(fd, 7, 42, 0);
		is_int(read_result(base, fd, &seq, paths, sizeof(paths)), 0,
		       "StepStart answered with code 0");
		is_int((int)seq, 7, "... for the request's seq");
		is_str(paths, want, "... telling the agent's telemetry socket, clock page and path page");
		send_step(fd, 8, 13, 0);
		is_int(read_result(base, fd, &seq, paths, sizeof(paths)), EINVAL,
		       "a refused StepStart is answered with its errno");
		is_str(paths, want, "... and the agent's paths too");
		send_step(fd, 9, 42, 1);
		is_int(read_result(base, fd, &seq, paths, sizeof(paths)), 0,
		       "StepEnd answered on the same connection");
		is_str(paths, "-", "... without paths");
		if (write(fd, "garbage!garbage!", 16) != 16)
			diag("write failed");
		ok(closed(base, fd), "garbage on the step socket: connection closed");
		close(fd);
	}

	fd = dial(tele);
	{
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		Fabriciq__LaneReport r = FABRICIQ__LANE_REPORT__INIT;
		env.version = FQ_PROTOCOL_VERSION;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
		env.lane = &r;
		fq_frame_write_fd(fd, &env, 1 << 20);
		spin(base);
		ok(lanes == 1 && lane_pid == getpid(),
		   "a lane report is handed over with the sender's pid (%d)", (int)lane_pid);
		is_int((int)counter(l, "telemetry_unregistered"), 1, "... and its verdict counted");
		/* a StepStart on the telemetry socket is not allowed */
		send_step(fd, 1, 42, 0);
		ok(closed(base, fd), "a step request on the telemetry socket: connection closed");
		is_int(starts, getuid() == 0 ? 2 : 0, "... and not executed");
	}
	close(fd);
	fd = dial(tele);
	{
		uint8_t huge[4] = {0x7f, 0xff, 0xff, 0xff}; /* announces 2 GiB */
		if (write(fd, huge, 4) != 4)
			diag("write failed");
		ok(closed(base, fd), "an oversized frame: connection closed before any allocation");
	}
	close(fd);
	ok(counter(l, "bad_frames") >= 2, "bad frames counted (%ld)", counter(l, "bad_frames"));
	fd2 = dial(tele);
	ok(fd2 >= 0, "the telemetry socket still accepts connections");
	{
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		Fabriciq__LaneReport r = FABRICIQ__LANE_REPORT__INIT;
		env.version = FQ_PROTOCOL_VERSION;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
		env.lane = &r;
		fq_frame_write_fd(fd2, &env, 1 << 20);
		spin(base);
		is_int(lanes, 2, "and serves the next sender");
	}
	close(fd2);
	fq_local_destroy(l);
	ok(access(step, F_OK) != 0 && access(tele, F_OK) != 0, "both socket files removed at exit");
	rmdir(dir);
	event_base_free(base);
	return done_testing();
}
