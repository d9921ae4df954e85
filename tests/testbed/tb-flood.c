/*
 * tb-flood: a job process flooding its node agent's telemetry socket:
 * for SECONDS, RATE lane reports a second (each about 3 KB, claiming a far
 * end the agent does not know: node "victim", NIC "rail9", address
 * 203.0.113.9), and EVENTS failover events spread evenly over the time.
 * Prints "lanes=N events=M" (frames written) and exits 0, or 1 when the
 * agent closed the connection. With LOCAL and REMOTE (IP:port each), the
 * lanes claim to run between those addresses instead (a connection the
 * process does not hold).
 *
 *   tb-flood SOCKET SECONDS RATE EVENTS [LOCAL REMOTE]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"

static char pad[3000];
static const char *claim_local = "", *claim_remote = "203.0.113.9:1";

static int lane(int fd)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__LaneReport r = FABRICIQ__LANE_REPORT__INIT;

	r.is_send = 1;
	r.bytes = 1000;
	r.local_nic = "rail0";
	r.remote_node = "victim";
	r.remote_nic = "rail9";
	r.local_address = (char *)claim_local;
	r.remote_address = (char *)claim_remote;
	r.lane_kind = pad;
	r.interval_end_ns = fq_realtime_ns();
	r.interval_start_ns = r.interval_end_ns - 100000000;
	r.owd_p99_ns = 50000000; /* a 50 ms lane: what a collision is made of */
	r.synchronised = 1;
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
	env.lane = &r;
	return fq_frame_write_fd(fd, &env, 1 << 20);
}

static int event(int fd, unsigned n)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__FailoverEvent f = FABRICIQ__FAILOVER_EVENT__INIT;

	f.from_lane = 0;
	f.to_lane = 1;
	f.local_nic = "rail0";
	f.remote_nic = "rail0";
	f.cause = "socket-error";
	f.time_ns = fq_realtime_ns();
	f.detect_ns = 1000000;
	f.conn_id = 4200 + n;
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER;
	env.failover = &f;
	return fq_frame_write_fd(fd, &env, 1 << 20);
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	unsigned long lanes = 0, events = 0, rate, nevents;
	int64_t t0, end, wait, step = 10000000; /* 10 ms batches */
	int fd;

	if (argc == 7) {
		claim_local = argv[5];
		claim_remote = argv[6];
	}
	if ((argc != 5 && argc != 7) || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: tb-flood SOCKET SECONDS RATE EVENTS [LOCAL REMOTE]\n");
		return 2;
	}
	memset(pad, 'x', sizeof(pad) - 1);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	rate = strtoul(argv[3], NULL, 10);
	nevents = strtoul(argv[4], NULL, 10);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "tb-flood: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	t0 = fq_now_ns();
	end = t0 + (int64_t)(atof(argv[2]) * 1e9);
	for (int64_t t = t0; t < end; t += step) {
		unsigned long due_lanes = (unsigned long)((double)(t - t0 + step) / 1e9 * (double)rate);
		unsigned long due_events =
		    (unsigned long)((double)(t - t0 + step) / (double)(end - t0) * (double)nevents);

		for (; lanes < due_lanes; lanes++)
			if (lane(fd) < 0)
				goto closed;
		for (; events < due_events; events++)
			if (event(fd, (unsigned)events) < 0)
				goto closed;
		wait = t + step - fq_now_ns();
		if (wait > 0)
			nanosleep(&(struct timespec){0, (long)wait}, NULL);
	}
	usleep(200000); /* let the agent read the last before the connection closes */
	close(fd);
	printf("lanes=%lu events=%lu\n", lanes, events);
	return 0;
closed:
	printf("lanes=%lu events=%lu closed\n", lanes, events);
	return 1;
}
