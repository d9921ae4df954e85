/* Unit tests of the agent's write-ahead spool (slurmd-agent/spool.h): order,
 * acks and bounds, durability (flushes, waiters, the lease), and bulk
 * telemetry dropped before events. */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/frame.h"
#include "slurmd-agent/advice.h"
#include "slurmd-agent/nics.h"
#include "slurmd-agent/spool.h"
#include "slurmd-agent/steps.h"
#include "slurmd-agent/timeline.h"
#include "tests/unit/tap.h"

/* ---- spool -------------------------------------------------------------- */

enum {
	LINK,
	PROBE,
	LANE
};

/* A frame of about 600 bytes: a link event, a probe report or a lane report. */
static int append_kind(struct fq_spool *s, int kind)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__ProbeReport p = FABRICIQ__PROBE_REPORT__INIT;
	Fabriciq__LaneReport r = FABRICIQ__LANE_REPORT__INIT;
	Fabriciq__LinkEvent l = FABRICIQ__LINK_EVENT__INIT;
	char pad[600];

	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	env.version = FQ_PROTOCOL_VERSION;
	if (kind == PROBE) {
		p.local_nic = pad;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PROBE;
		env.probe = &p;
	} else if (kind == LANE) {
		r.local_nic = pad;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
		env.lane = &r;
	} else {
		l.local_nic = pad;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LINK;
		env.link = &l;
	}
	return fq_spool_append(s, &env);
}

/* Read every waiting frame; check each decodes with the expected seq. */
static int drain(struct fq_spool *s, uint64_t *first, uint64_t *last, int *links)
{
	uint8_t buf[8192];
	uint64_t seq;
	int64_t n;
	int count = 0;

	*first = *last = 0;
	*links = 0;
	fq_spool_flush(s); /* events go out once durable (the agent flushes each at once) */
	while ((n = fq_spool_next(s, buf, sizeof(buf), &seq)) > 0) {
		Fabriciq__Envelope *env;
		if (fq_frame_unpack(buf + 4, (size_t)n - 4, &env) < 0 || env->seq != seq)
			return -1;
		*links += env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LINK;
		fq_frame_free(env);
		if (!*first)
			*first = seq;
		*last = seq;
		count++;
	}
	return count;
}

static void test_spool(void)
{
	char dir[] = "/tmp/fq-spool-test.XXXXXX";
	struct fq_spool *s;
	uint64_t first, last;
	int links, n;

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	is_int(fq_spool_open(dir, 1 << 20, &s), 0, "open an empty spool");
	is_int((int)fq_spool_next_seq(s), 1, "the first seq is 1");
	for (int i = 0; i < 100; i++)
		append_kind(s, i % 2 ? PROBE : LINK);
	n = drain(s, &first, &last, &links);
	ok(n == 100 && first == 1 && last == 100, "100 frames read back in order (%d, %llu..%llu)", n,
	   (unsigned long long)first, (unsigned long long)last);
	is_int(drain(s, &first, &last, &links), 0, "nothing more until new frames come");
	fq_spool_ack(s, 60);
	fq_spool_rewind(s);
	n = drain(s, &first, &last, &links);
	ok(n == 40 && first == 61 && last == 100, "after ack 60 and a reconnect: 61..100 are resent (%d)", n);
	fq_spool_close(s);

	/* a restart keeps unacknowledged frames and never reuses a seq */
	is_int(fq_spool_open(dir, 1 << 20, &s), 0, "reopen");
	ok(fq_spool_next_seq(s) > 100, "a restarted spool continues beyond every seq it gave (%llu)",
	   (unsigned long long)fq_spool_next_seq(s));
	n = drain(s, &first, &last, &links);
	ok(n >= 40 && last == 100, "the frames not known to be acknowledged are sent again (%d)", n);
	fq_spool_close(s);

	/* the bound: probe reports of old segments go first */
	{
		char dir2[] = "/tmp/fq-spool-test2.XXXXXX";
		struct json_object *c;
		uint64_t dropped, dropped_bulk, bytes;

		if (!mkdtemp(dir2))
			return;
		is_int(fq_spool_open(dir2, 1 << 20, &s), 0, "open a 1 MiB spool");
		for (int i = 0; i < 4000; i++)
			append_kind(s, i % 4 ? PROBE : LINK); /* 3 probe reports to 1 link event */
		c = fq_spool_counters(s);
		dropped = json_object_get_uint64(json_object_object_get(c, "dropped_frames"));
		dropped_bulk = json_object_get_uint64(json_object_object_get(c, "dropped_bulk_frames"));
		bytes = json_object_get_uint64(json_object_object_get(c, "bytes"));
		json_object_put(c);
		ok(bytes <= (1 << 20), "the spool stays within its bound (%llu bytes)",
		   (unsigned long long)bytes);
		n = drain(s, &first, &last, &links);
		ok(dropped == dropped_bulk && dropped == 3000 - (uint64_t)(n - links),
		   "over the bound only probe reports are dropped, each counted (%llu)",
		   (unsigned long long)dropped);
		ok(last == 4000 && links == 1000, "newest kept; all 1000 link events kept (%d of %d)", links,
		   n);
		fq_spool_close(s);
		if (system("rm -rf /tmp/fq-spool-test2.*") != 0)
			diag("cleanup failed");
	}
	if (system("rm -rf /tmp/fq-spool-test.*") != 0)
		diag("cleanup failed");
}

/* ---- spool durability ---------------------------------------------------- */

static uint64_t woken[8];
static int n_woken, woken_rc = 1;

static void on_durable(void *arg, int rc)
{
	woken[n_woken++] = (uint64_t)(uintptr_t)arg;
	woken_rc = rc;
}

/* A link event of a few bytes. */
static void append_small(struct fq_spool *s)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__LinkEvent l = FABRICIQ__LINK_EVENT__INIT;

	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LINK;
	env.link = &l;
	fq_spool_append(s, &env);
}

static uint64_t lease_on_disk(const char *dir)
{
	char path[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/next_seq", dir);
	f = fopen(path, "re");
	if (f && fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

/* A frame is durable only after a flush; a waiter hears of it then, in seq
 * order; on a worker the flush leaves the loop free; the seq lease is
 * renewed by a flush half a lease ahead. */
static void test_spool_durable(void)
{
	char dir[] = "/tmp/fq-spool-dur.XXXXXX";
	struct event_base *base = event_base_new();
	struct fq_spool *s;
	uint64_t lease0;

	if (!mkdtemp(dir) || fq_spool_open(dir, 1 << 22, &s) < 0) {
		ok(0, "open a spool");
		return;
	}
	append_kind(s, 0);
	append_kind(s, 1);
	is_int((int)fq_spool_durable_seq(s), 0, "appended frames are not durable before a flush");
	is_int(fq_spool_when_durable(s, 2, on_durable, (void *)2), 0, "a waiter for seq 2 is taken");
	ok(n_woken == 1 && woken[0] == 2 && woken_rc == 0 && fq_spool_durable_seq(s) == 2,
	   "without a worker the flush runs inline and wakes it (durable %llu)",
	   (unsigned long long)fq_spool_durable_seq(s));
	is_int(fq_spool_when_durable(s, 1, on_durable, (void *)1), 1, "seq 1 is durable already");

	is_int(fq_spool_attach(s, base), 0, "a worker for the flushes");
	n_woken = 0;
	append_kind(s, 0);
	append_kind(s, 0);
	fq_spool_when_durable(s, 3, on_durable, (void *)3);
	fq_spool_when_durable(s, 4, on_durable, (void *)4);
	is_int(n_woken, 0, "on a worker no waiter is woken before the loop runs");
	for (int i = 0; i < 500 && n_woken < 2; i++)
		event_base_loop(base, EVLOOP_ONCE);
	ok(n_woken == 2 && woken[0] == 3 && woken[1] == 4 && fq_spool_durable_seq(s) == 4,
	   "then both, in seq order (%d woken, durable %llu)", n_woken,
	   (unsigned long long)fq_spool_durable_seq(s));

	lease0 = lease_on_disk(dir);
	while (fq_spool_next_seq(s) + 100000 / 2 < lease0)
		append_small(s);
	append_small(s);
	for (int i = 0; i < 500 && fq_spool_durable_seq(s) + 1 < fq_spool_next_seq(s); i++) {
		fq_spool_flush(s);
		event_base_loop(base, EVLOOP_ONCE);
	}
	ok(lease_on_disk(dir) >= fq_spool_next_seq(s) + 100000 - 1,
	   "half a lease before it runs out a flush renews it (%llu -> %llu at seq %llu)",
	   (unsigned long long)lease0, (unsigned long long)lease_on_disk(dir),
	   (unsigned long long)fq_spool_next_seq(s));
	fq_spool_close(s);

	/* the acknowledged seq outlives a restart */
	{
		char dir3[] = "/tmp/fq-spool-dur3.XXXXXX";
		uint64_t first = 0, last = 0;
		int links, n = -1;

		if (mkdtemp(dir3) && fq_spool_open(dir3, 1 << 20, &s) == 0) {
			for (int i = 0; i < 5; i++)
				append_small(s);
			fq_spool_ack(s, 3);
			is_int((int)fq_spool_first_unconfirmed(s), 1,
			       "an ack is not told before it is on disk");
			fq_spool_flush(s);
			is_int((int)fq_spool_first_unconfirmed(s), 4, "... after a flush it is (4)");
			fq_spool_close(s);
			fq_spool_open(dir3, 1 << 20, &s);
			n = drain(s, &first, &last, &links);
			ok(fq_spool_first_unconfirmed(s) == 4 && n == 2 && first == 4 && last == 5,
			   "restarted: the hello tells seq %llu, frames 4..5 are sent again (%d)",
			   (unsigned long long)fq_spool_first_unconfirmed(s), n);
			fq_spool_close(s);
		} else {
			ok(0, "a spool");
		}
	}

	/* a segment created, never written (a crash in between): dropped at open */
	{
		char dir2[] = "/tmp/fq-spool-dur2.XXXXXX", path[128];
		uint64_t first = 0, last = 0;
		int links, n, fd = -1;

		if (mkdtemp(dir2)) {
			snprintf(path, sizeof(path), "%s/%020d.seg", dir2, 1);
			fd = open(path, O_WRONLY | O_CREAT, 0600);
		}
		if (fd < 0 || fq_spool_open(dir2, 1 << 20, &s) < 0) {
			ok(0, "an empty segment");
		} else {
			close(fd);
			append_small(s);
			append_small(s);
			fq_spool_ack(s, 1);
			fq_spool_close(s);
			fq_spool_open(dir2, 1 << 20, &s);
			n = drain(s, &first, &last, &links);
			ok(n >= 1 && last == 2,
			   "an empty segment left by a crash: the frame after an ack survives a restart (%d)",
			   n);
			fq_spool_close(s);
		}
	}
	event_base_free(base);
	if (system("rm -rf /tmp/fq-spool-dur*") != 0)
		diag("cleanup failed");
}

static uint64_t counter(const struct fq_spool *s, const char *name)
{
	struct json_object *c = fq_spool_counters(s);
	uint64_t v = json_object_get_uint64(json_object_object_get(c, name));

	json_object_put(c);
	return v;
}

/* A job process flooding lane reports: every event survives while events
 * alone fit; the bulk dropped is counted exactly; after a restart the
 * segments' classes are known again; events alone over the bound lose
 * their oldest, counted. */
static void test_spool_priority(void)
{
	char dir[] = "/tmp/fq-spool-prio.XXXXXX";
	struct fq_spool *s;
	uint64_t first, last;
	int links, n, events = 0, bulk = 0;

	if (!mkdtemp(dir) || fq_spool_open(dir, 1 << 20, &s) < 0) {
		ok(0, "open a 1 MiB spool in %s", dir);
		return;
	}
	for (int i = 0; i < 20000; i++) { /* 12 MB: 1 event to 99 lane reports */
		bool ev = i % 100 == 0;
		append_kind(s, ev ? LINK : LANE);
		events += ev;
		bulk += !ev;
	}
	ok(counter(s, "bytes") <= 1 << 20,
	   "a flood of 12 MB of lane reports: the spool stays within 1 MiB (%llu)",
	   (unsigned long long)counter(s, "bytes"));
	n = drain(s, &first, &last, &links);
	is_int(links, events, "all %d events are kept", events);
	is_int((int)counter(s, "dropped_event_frames"), 0, "no event dropped");
	is_int((int)counter(s, "dropped_bulk_frames"), bulk - (n - links),
	       "every lane report not kept is counted as dropped bulk (%d kept)", n - links);
	ok(last == 20000, "the newest frame is kept");
	fq_spool_close(s);

	/* restarted: segments scanned again know their bulk */
	is_int(fq_spool_open(dir, 1 << 20, &s), 0, "reopen");
	for (int i = 0; i < 4000; i++)
		append_kind(s, PROBE);
	fq_spool_rewind(s);
	n = drain(s, &first, &last, &links);
	is_int(links, events, "after a restart and 2.4 MB of probe reports the %d events are still there",
	       events);
	is_int((int)counter(s, "dropped_event_frames"), 0, "still no event dropped");

	/* events alone over the bound: the oldest go, counted */
	for (int i = 0; i < 3000; i++)
		append_kind(s, LINK);
	fq_spool_rewind(s);
	n = drain(s, &first, &last, &links);
	ok(counter(s, "bytes") <= 1 << 20, "3000 more events (1.8 MB): within the bound (%llu)",
	   (unsigned long long)counter(s, "bytes"));
	is_int((int)counter(s, "dropped_event_frames"), events + 3000 - links,
	       "every event not kept is counted (%d kept of %d)", links, events + 3000);
	ok(last == fq_spool_next_seq(s) - 1 && n == links, "the newest kept, and no bulk before them");
	fq_spool_close(s);
	if (system("rm -rf /tmp/fq-spool-prio.*") != 0)
		diag("cleanup failed");
}

/* An event is sent only once durable, and what follows it waits with it;
 * bulk before it goes at once. */
static void test_spool_event_durable(void)
{
	char dir[] = "/tmp/fq-spool-ev.XXXXXX";
	struct fq_spool *s;
	uint8_t buf[8192];
	uint64_t seq = 0;
	int64_t n;

	if (!mkdtemp(dir) || fq_spool_open(dir, 1 << 20, &s) < 0) {
		ok(0, "open a spool");
		return;
	}
	append_kind(s, PROBE);
	append_kind(s, LINK);
	append_kind(s, PROBE);
	n = fq_spool_next(s, buf, sizeof(buf), &seq);
	ok(n > 0 && seq == 1, "a probe report before any flush: sent (seq %llu)", (unsigned long long)seq);
	is_int((int)fq_spool_next(s, buf, sizeof(buf), &seq), 0,
	       "the link event after it is not durable yet: nothing to send, the probe after it waits too");
	fq_spool_flush(s);
	n = fq_spool_next(s, buf, sizeof(buf), &seq);
	ok(n > 0 && seq == 2, "flushed: the link event goes (seq %llu)", (unsigned long long)seq);
	n = fq_spool_next(s, buf, sizeof(buf), &seq);
	ok(n > 0 && seq == 3, "... then the probe report (seq %llu)", (unsigned long long)seq);
	fq_spool_close(s);
	snprintf((char *)buf, sizeof(buf), "rm -rf '%s'", dir);
	if (system((char *)buf) != 0)
		diag("cleanup failed");
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static unsigned long long acked_on_disk(const char *dir)
{
	char path[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/acked", dir);
	if ((f = fopen(path, "re")) && fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

/* While a flush syncs the segment being written (or DIR/acked), the loop
 * writes neither: a write can wait for a pending fsync of its file (FUSE,
 * btrfs), and a disk that does not answer must not stop the loop. What it
 * appends meanwhile is held, not sent, and written once the flush is done. */
static void test_spool_held(void)
{
	char dir[] = "/tmp/fq-spool-held.XXXXXX", seg[256];
	struct event_base *base = event_base_new();
	struct fq_spool *s;
	uint8_t buf[8192];
	uint64_t seq = 0;
	off_t size0;
	int64_t n;

	if (!mkdtemp(dir) || fq_spool_open(dir, 1 << 22, &s) < 0 || fq_spool_attach(s, base) < 0) {
		ok(0, "open a spool with a worker");
		return;
	}
	snprintf(seg, sizeof(seg), "%s/%020d.seg", dir, 1);
	append_kind(s, PROBE);
	append_kind(s, PROBE);
	fq_spool_ack(s, 1);
	fq_spool_flush(s); /* in flight until the loop runs its end */
	size0 = file_size(seg);
	append_kind(s, PROBE);
	append_kind(s, LINK);
	fq_spool_ack(s, 2);
	ok(size0 > 0 && file_size(seg) == size0 && acked_on_disk(dir) == 1,
	   "a flush syncing the segment and the ack: two frames appended and an ack meanwhile are not "
	   "written (%lld bytes, acked %llu)",
	   (long long)file_size(seg), acked_on_disk(dir));
	is_int((int)fq_spool_next(s, buf, sizeof(buf), &seq), 0,
	       "the acknowledged frames are not sent, nor the held ones");
	for (int i = 0; i < 500 && fq_spool_durable_seq(s) < 2; i++)
		event_base_loop(base, EVLOOP_ONCE);
	ok(file_size(seg) > size0 && acked_on_disk(dir) == 2,
	   "the flush done: both written (%lld bytes, acked %llu)", (long long)file_size(seg),
	   acked_on_disk(dir));
	n = fq_spool_next(s, buf, sizeof(buf), &seq);
	ok(n > 0 && seq == 3 && fq_spool_next(s, buf, sizeof(buf), &seq) == 0,
	   "... the held probe report is sent (seq %llu), the event waits for its flush",
	   (unsigned long long)seq);
	fq_spool_flush(s);
	for (int i = 0; i < 500 && fq_spool_durable_seq(s) < 4; i++)
		event_base_loop(base, EVLOOP_ONCE);
	n = fq_spool_next(s, buf, sizeof(buf), &seq);
	ok(n > 0 && seq == 4, "... and goes once a flush made it durable (seq %llu)",
	   (unsigned long long)seq);
	fq_spool_close(s);
	event_base_free(base);
	snprintf((char *)buf, sizeof(buf), "rm -rf '%s'", dir);
	if (system((char *)buf) != 0)
		diag("cleanup failed");
}

int main(void)
{
	test_spool();
	test_spool_event_durable();
	test_spool_durable();
	test_spool_priority();
	test_spool_held();
	return done_testing();
}
