/*
 * fuzz-spool: the agent's spool reading back a segment file it finds on
 * disk (slurmd-agent/spool.c: a torn or hostile file after a crash, a disk
 * error). Input: the bytes of segment 1. The spool must open it, cut what
 * is not whole records, hand back records in rising seq order within the
 * frame limit, account every frame it holds, drops included, by class,
 * while a flood of new frames pushes it over its bound (compaction and
 * whole-segment drops of the read-back records), and hand back each new
 * frame as it was appended.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/frame.h"
#include "slurmd-agent/spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BYTES (64u << 10) /* small: the flood below crosses it */

static char dir[64];

static uint64_t counter(const struct fq_spool *s, const char *name)
{
	struct json_object *c = fq_spool_counters(s);
	uint64_t v = json_object_get_uint64(json_object_object_get(c, name));

	json_object_put(c);
	return v;
}

static void remove_dir(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz-spool: cannot remove %s\n", dir);
}

static void write_seg(const uint8_t *data, size_t size)
{
	char path[128];
	int fd;

	if (!dir[0]) {
		/* tmpfs where there is one: the spool syncs its segments */
		snprintf(dir, sizeof(dir), "/dev/shm/fq-fuzz-spool.XXXXXX");
		if (!mkdtemp(dir)) {
			snprintf(dir, sizeof(dir), "/tmp/fq-fuzz-spool.XXXXXX");
			if (!mkdtemp(dir))
				abort();
		}
		atexit(remove_dir);
	}
	snprintf(path, sizeof(path), "%s/next_seq", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%020d.seg", dir, 1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
}

/* Every waiting frame: in rising seq order, within the limit; how many. */
static uint64_t drain(struct fq_spool *s, uint8_t *buf, size_t cap, uint64_t *last)
{
	uint64_t seq, n = 0;
	int64_t len;

	*last = 0;
	while ((len = fq_spool_next(s, buf, cap, &seq)) > 0) {
		if (seq <= *last && n)
			abort();
		*last = seq;
		n++;
	}
	if (len < 0)
		abort();
	return n;
}

/* A frame of about 300 bytes: a lane report (bulk) or a link event. */
static void append(struct fq_spool *s, int bulk)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__LaneReport r = FABRICIQ__LANE_REPORT__INIT;
	Fabriciq__LinkEvent l = FABRICIQ__LINK_EVENT__INIT;
	char pad[300];

	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	env.version = FQ_PROTOCOL_VERSION;
	if (bulk) {
		r.local_nic = pad;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
		env.lane = &r;
	} else {
		l.local_nic = pad;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LINK;
		env.link = &l;
	}
	if (fq_spool_append(s, &env) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[FQ_FRAME_MAX_DEFAULT + FQ_FRAME_HEADER_SIZE];
	struct fq_spool *s;
	uint64_t found, last, held, n, after;
	char cmd[96];

	write_seg(data, size);
	if (fq_spool_open(dir, MAX_BYTES, &s) < 0)
		abort();
	found = counter(s, "frames");
	if (drain(s, buf, sizeof(buf), &last) > found)
		abort();
	if (last && fq_spool_next_seq(s) <= last)
		abort();              /* a new frame never reuses a seq read back */
	for (int i = 0; i < 400; i++) /* 120 KB: over the bound */
		append(s, i % 3 != 0);
	held = counter(s, "frames");
	if (held != found + 400 - counter(s, "dropped_bulk_frames") - counter(s, "dropped_event_frames"))
		abort(); /* every frame held or counted as dropped */
	if (counter(s, "bytes") > MAX_BYTES + 1024)
		abort();
	fq_spool_rewind(s);
	fq_spool_flush(s); /* events go out once durable (spool.h) */
	n = drain(s, buf, sizeof(buf), &after);
	if (n > held || after != fq_spool_next_seq(s) - 1)
		abort(); /* the newest frame is always there */
	fq_spool_close(s);
	snprintf(cmd, sizeof(cmd), "rm -f %s/*", dir);
	if (system(cmd) != 0)
		abort();
	return 0;
}
