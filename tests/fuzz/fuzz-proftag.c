/*
 * libFuzzer target: a profiler report from a job's process (the telemetry
 * socket takes it from anyone of a registered step) as the agent tags and
 * checks it (slurmd-agent/proftag.h), on hostile bytes. A report either
 * claims another job and is refused, or comes out as the agent's: its job,
 * step and rank, only known window kinds with events, only ops that end
 * after they start with a finite bandwidth; and it encodes again for the
 * spool (or is refused cleanly: fields protobuf-c kept as unknown) to the
 * same windows and ops.
 */
#include "common/frame.h"
#include "slurmd-agent/proftag.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Fabriciq__ProfilerReport *r = fabriciq__profiler_report__unpack(NULL, size, data);
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT, *again = NULL;
	unsigned removed = 0;
	uint8_t *buf;
	size_t len, nw, no;
	int rc;

	if (!r)
		return 0;
	nw = r->n_windows;
	no = r->n_ops;
	rc = fq_proftag(r, 42, 3, 7, &removed);
	if (rc == -EPERM) {
		if (r->job_id == 42 && r->step_id == 3)
			abort(); /* its own step refused */
		goto out;
	}
	if (rc != 0 || r->job_id != 42 || r->step_id != 3 || r->rank != 7 ||
	    r->n_windows + r->n_ops + removed != nw + no || r->interval_end_ns < r->interval_start_ns)
		abort();
	for (size_t i = 0; i < r->n_windows; i++)
		if (!fq_proftag_kind_known(r->windows[i]->kind) || !r->windows[i]->count)
			abort();
	for (size_t i = 0; i < r->n_ops; i++)
		if (r->ops[i]->end_ns < r->ops[i]->start_ns || !isfinite(r->ops[i]->gbps) ||
		    r->ops[i]->gbps < 0 || !r->ops[i]->func || !*r->ops[i]->func)
			abort();
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PROFILER;
	env.profiler = r;
	if (fq_frame_encode(&env, 0, &buf, &len) == 0) {
		rc = fq_frame_unpack(buf + 4, len - 4, &again);
		if (rc == 0 && (again->payload_case != FABRICIQ__ENVELOPE__PAYLOAD_PROFILER ||
				again->profiler->n_windows != r->n_windows ||
				again->profiler->n_ops != r->n_ops || again->profiler->job_id != 42))
			abort();
		if (rc == 0)
			fq_frame_free(again);
		free(buf);
	}
out:
	fabriciq__profiler_report__free_unpacked(r, NULL);
	return 0;
}
