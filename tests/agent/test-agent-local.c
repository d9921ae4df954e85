/* The agent's local sockets (slurmd-agent/local.c) with real unix sockets
 * and a real event loop: step requests answered in order, telemetry handed
 * over with the kernel's credentials, garbage and oversized frames counted
 * and their connections closed, the sockets still serving afterwards; each
 * socket's connection limit, the per-uid limit, the idle and partial-frame
 * timeouts. */
#include <errno.h>
#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/step_socket.h"
#include "slurmd-agent/local.h"
#include "tests/unit/tap.h"

static int starts, ends, lanes;
static char step_path[128], tele_path[128];
static pid_t lane_pid;
static int lanes_at_end = -1; /* lane reports taken in when the last StepEnd was handled */
static enum fq_local_verdict verdict = FQ_LOCAL_UNREGISTERED; /* what on_telemetry answers */

static uint64_t deferred; /* the ticket of the last StepStart of job 77 */

static int on_start(void *arg, const Fabriciq__StepStart *m, uint64_t ticket, char *msg, size_t len)
{
	(void)arg;
	starts++;
	if (m->job_id == 77) { /* answered when the test says so */
		deferred = ticket;
		return FQ_LOCAL_LATER;
	}
	if (m->job_id == 13) {
		snprintf(msg, len, "job 13 is unlucky");
		return -EINVAL;
	}
	snprintf(msg, len, "registered");
	return 0;
}

static int on_end(void *arg, const Fabriciq__StepEnd *m, uint64_t ticket, char *msg, size_t len)
{
	(void)arg;
	(void)m;
	(void)ticket;
	ends++;
	lanes_at_end = lanes;
	snprintf(msg, len, "unregistered");
	return 0;
}

static enum fq_local_verdict on_telemetry(void *arg, const struct ucred *cred, Fabriciq__Envelope *env)
{
	(void)arg;
	(void)env;
	lanes++;
	lane_pid = cred->pid;
	return verdict;
}

static const struct fq_local_ops ops = {on_start, on_end, on_telemetry, NULL}; /* every process may connect */

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

/* Run the loop for ms milliseconds. */
static void spin_ms(struct event_base *base, int ms)
{
	int64_t end = fq_now_ns() + (int64_t)ms * 1000000;

	while (fq_now_ns() < end) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(2000);
	}
}

/* Run the loop until it has nothing to do for a moment. */
static void spin(struct event_base *base)
{
	spin_ms(base, 40);
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

/* Of n connections, how many the peer closed. */
static int count_closed(struct event_base *base, const int *fd, int n)
{
	int k = 0;
	char c;

	spin(base);
	for (int i = 0; i < n; i++)
		k += recv(fd[i], &c, 1, MSG_DONTWAIT) == 0;
	return k;
}

static void send_lane(int fd)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__LaneReport r = FABRICIQ__LANE_REPORT__INIT;

	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
	env.lane = &r;
	fq_frame_write_fd(fd, &env, 1 << 20);
}

static long counter(struct fq_local *l, const char *name)
{
	struct json_object *o = fq_local_counters(l);
	long v = json_object_get_int64(json_object_object_get(o, name));

	json_object_put(o);
	return v;
}

/* Limits (step_max 2, telemetry_max 8, max_per_uid 5; all from one uid). */
static void limits(struct event_base *base, struct fq_local *l)
{
	int t[7], st[3], fd;
	uint64_t seq = 0;

	spin(base);
	for (int i = 0; i < 7; i++)
		t[i] = dial(tele_path);
	is_int(count_closed(base, t, 7), 2,
	       "7 telemetry connections of one uid: the 2 over its limit of 5 closed");
	is_int(counter(l, "refused_per_uid"), 2, "... counted as refused per uid");
	is_int(counter(l, "telemetry_connections"), 5, "... 5 stay open");
	send_lane(t[0]);
	spin(base);
	is_int(lanes, 3, "an admitted connection is served");
	if (getuid() != 0) {
		skip(5, "the step socket is root only; not root here");
	} else {
		for (int i = 0; i < 3; i++)
			st[i] = dial(step_path);
		is_int(count_closed(base, st, 3), 1,
		       "3 step connections: the one over the step socket's limit of 2 closed");
		is_int(counter(l, "refused_connections"), 1, "... counted as refused (the socket's limit)");
		send_step(st[0], 21, 42, 0);
		is_int(read_result(base, st[0], &seq, NULL, 0), 0,
		       "the step socket answers while the telemetry socket is at its uid limit");
		is_int(counter(l, "step_connections"), 2, "... 2 step connections open");
		for (int i = 0; i < 3; i++)
			close(st[i]);
		spin(base);
		is_int(counter(l, "step_connections"), 0, "closed step connections are forgotten");
	}
	for (int i = 0; i < 7; i++)
		close(t[i]);
	spin(base);
	is_int(counter(l, "telemetry_connections"), 0, "closed telemetry connections are forgotten");
	fd = dial(tele_path);
	ok(!closed(base, fd), "after closing, the uid may connect again");
	close(fd);
	spin(base);
}

/* The telemetry socket's limit for all uids together: a second instance
 * whose per-uid limit is above it. */
static void total_limit(struct event_base *base)
{
	const struct fq_local_limits lim = {.step_max = 1,
					    .telemetry_max = 3,
					    .max_per_uid = 100,
					    .idle_timeout_ns = 10000000000,
					    .frame_timeout_ns = 10000000000};
	char s2[160], t2[160];
	struct fq_local *l;
	int t[5];

	snprintf(s2, sizeof(s2), "%s2", step_path);
	snprintf(t2, sizeof(t2), "%s2", tele_path);
	l = fq_local_create(base, s2, t2, "/elsewhere/clock", "/elsewhere/paths", &lim, &ops, NULL);
	for (int i = 0; i < 5; i++)
		t[i] = dial(t2);
	is_int(count_closed(base, t, 5), 2, "telemetry_max 3: of 5 connections the last 2 closed");
	is_int(counter(l, "refused_connections"), 2, "... counted as refused (the socket's limit)");
	is_int(counter(l, "refused_per_uid"), 0, "... not as refused per uid");
	for (int i = 0; i < 5; i++)
		close(t[i]);
	fq_local_destroy(l);
}

/* idle_timeout and frame_timeout: 1 s each. */
static void timeouts(struct event_base *base, struct fq_local *l)
{
	uint8_t partial[8] = {0, 0, 0x10, 0}; /* announces 4096 bytes, sends 4 of them */
	int idle = dial(tele_path), busy = dial(tele_path), slow = dial(tele_path), st = -1, big;
	uint64_t seq = 0;
	int64_t t0 = fq_now_ns();

	if (getuid() == 0)
		st = dial(step_path);
	if (write(slow, partial, sizeof(partial)) != (ssize_t)sizeof(partial))
		diag("write failed");
	/* 500 ms: nothing may be closed yet; a lane report every 50 ms keeps
	 * `busy` alive; `slow` trickles a byte every 50 ms */
	for (int i = 0; i < 10; i++) {
		send_lane(busy);
		send(slow, "x", 1, MSG_NOSIGNAL); /* fails once the agent has closed it */
		spin_ms(base, 50);
	}
	ok(!closed(base, idle) && !closed(base, slow),
	   "after %lld ms (< 1 s) idle and partial connections open",
	   (long long)((fq_now_ns() - t0) / 1000000));
	for (int i = 0; i < 16; i++) {
		send_lane(busy);
		send(slow, "x", 1, MSG_NOSIGNAL); /* fails once the agent has closed it */
		spin_ms(base, 50);
	}
	/* 1.3 s and more */
	ok(closed(base, idle), "a telemetry connection idle for 1 s is closed");
	ok(closed(base, slow),
	   "a frame still unfinished 1 s after its first byte is closed, however it trickles");
	ok(!closed(base, busy), "a connection sending a frame every 50 ms stays open");
	is_int(counter(l, "closed_idle"), 1, "one connection closed idle");
	is_int(counter(l, "closed_partial"), 1, "one connection closed with a partial frame");
	if (st < 0) {
		skip(1, "the step socket is root only; not root here");
	} else {
		send_step(st, 31, 42, 0);
		is_int(read_result(base, st, &seq, NULL, 0), 0,
		       "a step connection idle for 1.3 s is still open and answers");
		close(st);
	}
	close(idle);
	close(busy);
	close(slow);
	big = dial(tele_path);
	{
		uint32_t n = FQ_TELEMETRY_FRAME_MAX + 1;
		uint8_t h[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
		if (write(big, h, 4) != 4)
			diag("write failed");
	}
	ok(closed(base, big),
	   "a telemetry frame announcing FQ_TELEMETRY_FRAME_MAX + 1 bytes: connection closed");
	close(big);
	spin(base);
}

int main(void)
{
	char dir[] = "/tmp/fq-local-test.XXXXXX", *step = step_path, *tele = tele_path, want[512], paths[512];
	struct event_base *base = event_base_new();
	struct fq_local *l;
	uint64_t seq = 0;
	int fd, fd2;
	/* timeouts far above the loop's 2 ms turns, and far below a test's patience */
	const struct fq_local_limits lim = {.step_max = 2,
					    .telemetry_max = 8,
					    .max_per_uid = 5,
					    .idle_timeout_ns = 1000000000,
					    .frame_timeout_ns = 1000000000};

	if (!mkdtemp(dir))
		skip_all("cannot make a temporary directory");
	snprintf(step_path, sizeof(step_path), "%s/step.sock", dir);
	snprintf(tele_path, sizeof(tele_path), "%s/tele.sock", dir);
	snprintf(want, sizeof(want), "%s /elsewhere/clock /elsewhere/paths", tele);
	plan(47);
	l = fq_local_create(base, step, tele, "/elsewhere/clock", "/elsewhere/paths", &lim, &ops, NULL);
	ok(l != NULL, "both sockets listen");

	if (getuid() != 0) {
		skip(12, "the step socket is root only; not root here");
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
		/* a deferred answer: none until the agent gives it */
		send_step(fd, 10, 77, 0);
		spin(base);
		ok(recv(fd, paths, 1, MSG_DONTWAIT | MSG_PEEK) < 0 && errno == EAGAIN,
		   "a deferred StepStart is not answered before the agent answers it");
		fq_local_answer(l, deferred, 0, "registered");
		is_int(read_result(base, fd, &seq, paths, sizeof(paths)), 0, "... then answered with code 0");
		ok(seq == 10 && strcmp(paths, want) == 0, "... for its seq (%d), with the paths", (int)seq);
		if (write(fd, "garbage!garbage!", 16) != 16)
			diag("write failed");
		ok(closed(base, fd), "garbage on the step socket: connection closed");
		close(fd);
		/* owed to a connection that closed: dropped */
		fd = dial(step);
		send_step(fd, 11, 77, 0);
		spin(base);
		close(fd);
		spin(base);
		fq_local_answer(l, deferred, 0, "registered");
		is_int(counter(l, "step_connections"), 0, "an answer owed to a closed connection is dropped");
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
		verdict = FQ_LOCAL_RATE_LIMITED;
		for (int i = 0; i < 3; i++)
			fq_frame_write_fd(fd, &env, 1 << 20);
		spin(base);
		verdict = FQ_LOCAL_UNREGISTERED;
		ok(lanes == 4 && counter(l, "telemetry_rate_limited") == 3 &&
		       counter(l, "telemetry_unregistered") == 1,
		   "3 frames over their step's rate: handed over, counted as rate-limited");
		{ /* a profiler report (NCCL profiler plugin) is taken like a lane report */
			Fabriciq__Envelope pe = FABRICIQ__ENVELOPE__INIT;
			Fabriciq__ProfilerReport pr = FABRICIQ__PROFILER_REPORT__INIT;
			long bad = counter(l, "bad_frames");

			pe.version = FQ_PROTOCOL_VERSION;
			pe.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PROFILER;
			pe.profiler = &pr;
			fq_frame_write_fd(fd, &pe, 1 << 20);
			spin(base);
			ok(lanes == 5 && counter(l, "bad_frames") == bad,
			   "a profiler report on the telemetry socket: handed over, not a bad frame");
		}
		lanes = 1; /* the checks below count from the first report */
		/* a StepStart on the telemetry socket is not allowed */
		send_step(fd, 1, 42, 0);
		ok(closed(base, fd), "a step request on the telemetry socket: connection closed");
		is_int(starts, getuid() == 0 ? 4 : 0, "... and not executed");
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
	is_int(counter(l, "bad_frames"), getuid() == 0 ? 3 : 2, "bad frames counted");
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
	limits(base, l);
	timeouts(base, l);
	if (getuid() != 0) {
		skip(1, "the step socket is root only; not root here");
	} else { /* the loop sees the step socket ready first, the report came in too */
		int tfd = dial(tele), sfd = dial(step), before = lanes;

		spin(base); /* both accepted */
		send_step(sfd, 10, 42, 1);
		send_lane(tfd);
		spin(base);
		ok(lanes_at_end == lanes && lanes == before + 1,
		   "a lane report already in when StepEnd is handled is taken in first (%d of %d)",
		   lanes_at_end, lanes);
		close(tfd);
		close(sfd);
	}
	fq_local_destroy(l);
	total_limit(base);
	ok(access(step, F_OK) != 0 && access(tele, F_OK) != 0, "both socket files removed at exit");
	rmdir(dir);
	event_base_free(base);
	return done_testing();
}
