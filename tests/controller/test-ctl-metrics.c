/*
 * test-ctl-metrics: job steps' live state (controller/steplive.c) and their
 * /metrics series (controller/metrics.c), wired as the controller wires
 * them. A step's lane series stay while any node that started it has not
 * ended it, leave at the last node's StepEnd; a step whose StepEnd never
 * comes leaves after the idle time; 10,000 steps run one after another
 * leave an exposition the size of one with none.
 */
#include <stdlib.h>
#include <string.h>

#include "controller/metrics.h"
#include "controller/steplive.h"
#include "tests/unit/tap.h"

static const int64_t S = 1000000000;
static struct fq_metrics *m;
static struct fq_steplive *live;

/* An accepted frame, as controller.c's on_frame hands it over. */
static void frame(const char *node, const Fabriciq__Envelope *env, int64_t now)
{
	struct fq_step_id gone;

	fq_metrics_frame(m, node, env);
	if (fq_steplive_frame(live, node, env, now, &gone))
		fq_metrics_drop_step(m, gone.job, gone.step, false);
}

static void expire(int64_t now, int64_t idle)
{
	struct fq_step_id gone[4];
	size_t n = fq_steplive_expire(live, now, idle, gone, 4);

	for (size_t i = 0; i < n; i++)
		fq_metrics_drop_step(m, gone[i].job, gone[i].step, true);
}

static void start(const char *node, uint64_t job, int64_t now)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__StepStart ss = FABRICIQ__STEP_START__INIT;

	ss.job_id = job;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_START;
	env.step_start = &ss;
	frame(node, &env, now);
}

static void end(const char *node, uint64_t job, int64_t now)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__StepEnd se = FABRICIQ__STEP_END__INIT;

	se.job_id = job;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_END;
	env.step_end = &se;
	frame(node, &env, now);
}

static void lane(const char *node, uint64_t job, uint32_t n, int64_t now)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__LaneReport l = FABRICIQ__LANE_REPORT__INIT;

	l.job_id = job;
	l.lane = n;
	l.bytes = 1000;
	l.is_send = true;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
	env.lane = &l;
	frame(node, &env, now);
}

/* The exposition: its length, and how many lines start with prefix. */
static size_t render(const char *prefix, int *lines)
{
	struct fq_ingest_stats st = {0};
	struct fq_session_stats ss = {0};
	char *text = NULL, *p;
	size_t len = 0;

	*lines = 0;
	if (fq_metrics_render(m, &st, &ss, 0, 0, &text, &len) < 0)
		return 0;
	for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		*lines += !strncmp(p, prefix, strlen(prefix));
	free(text);
	return len;
}

int main(void)
{
	const char *series = "fabriciq_job_lane_bytes_total{";
	size_t empty, after;
	int n;

	plan(10);
	m = fq_metrics_create();
	live = fq_steplive_create();
	empty = render(series, &n);
	start("n1", 7, 1 * S);
	start("n2", 7, 1 * S);
	for (uint32_t i = 0; i < 4; i++) {
		lane("n1", 7, i, 2 * S);
		lane("n2", 7, i, 2 * S);
	}
	render(series, &n);
	is_int(n, 4, "a two-node step's 4 lanes: 4 series");
	end("n1", 7, 3 * S);
	render(series, &n);
	is_int(n, 4, "one node ended it: its series stay (n2 still runs it)");
	lane("n2", 7, 0, 3 * S);
	end("n2", 7, 4 * S);
	render(series, &n);
	is_int(n, 0, "the last node ended it: its series are gone");
	render("fabriciq_metrics_steps_expired_total{reason=\"ended\"} 1", &n);
	is_int(n, 1, "... counted as ended");

	/* a StepEnd that never comes: gone after the idle time, not before */
	start("n1", 8, 10 * S);
	lane("n1", 8, 0, 10 * S);
	expire(20 * S, 11 * S);
	render(series, &n);
	is_int(n, 1, "a step heard of 10 s ago, idle time 11 s: kept");
	expire(22 * S, 11 * S);
	render(series, &n);
	is_int(n, 0, "12 s later: expired");
	render("fabriciq_metrics_steps_expired_total{reason=\"idle\"} 1", &n);
	is_int(n, 1, "... counted as idle");

	/* 10,000 steps: what stays is what runs */
	for (uint64_t j = 100; j < 10100; j++) {
		start("n1", j, 30 * S);
		for (uint32_t i = 0; i < 4; i++)
			lane("n1", j, i, 30 * S);
		end("n1", j, 30 * S);
	}
	after = render(series, &n);
	is_int(n, 0, "10,000 steps ended: no lane series left");
	ok(after <= empty + 16, "the exposition: %zu bytes with none run, %zu after 10,002 steps", empty,
	   after);
	is_int((int)fq_steplive_count(live), 0, "no step held live");
	fq_metrics_destroy(m);
	fq_steplive_destroy(live);
	return done_testing();
}
