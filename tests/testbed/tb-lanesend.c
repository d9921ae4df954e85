/*
 * tb-lanesend: send one LaneReport to a node agent's telemetry socket, as
 * a job process would, claiming whatever job the test says (the agent must
 * store it only under the sender's own job, or refuse it).
 *
 *   tb-lanesend SOCKET JOB_ID STEP_ID [BYTES]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__LaneReport r = FABRICIQ__LANE_REPORT__INIT;
	int fd, rc;

	if (argc < 4 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: tb-lanesend SOCKET JOB_ID STEP_ID [BYTES]\n");
		return 2;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	r.job_id = strtoull(argv[2], NULL, 10);
	r.step_id = (uint32_t)strtoul(argv[3], NULL, 10);
	r.bytes = argc > 4 ? strtoull(argv[4], NULL, 10) : 4242;
	r.is_send = 1;
	r.local_nic = "rail0";
	r.lane_kind = "tcp";
	r.interval_end_ns = fq_realtime_ns();
	r.interval_start_ns = r.interval_end_ns - 100000000;
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
	env.lane = &r;
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "tb-lanesend: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	rc = fq_frame_write_fd(fd, &env, 1 << 20);
	usleep(100000); /* let the agent read it before the connection closes */
	close(fd);
	if (rc < 0) {
		fprintf(stderr, "tb-lanesend: write: %s\n", strerror(-rc));
		return 1;
	}
	return 0;
}
