/*
 * tele: the profiler's figures to the node agent, off NCCL's paths.
 *
 * One thread per process (started at the first communicator's init when
 * $FABRICIQ_AGENT_SOCKET names the agent's telemetry socket, which SPANK
 * sets for a step run with --fabriciq; FABRICIQ_PROFILER_TELEMETRY=0 turns
 * it off, whatever the net plugin's FABRICIQ_TELEMETRY says). Every interval
 * ($FABRICIQ_TELEMETRY_INTERVAL_MS, default 1000) it takes each registered
 * communicator's windows (reset: each event counted in one report) and its
 * finished op records, and writes them as framed
 * Envelope{ProfilerReport}s (common/frame.h) to the agent's socket, one
 * non-blocking write per interval, as the net plugin's telemetry thread
 * does (nccl-plugin/telemetry/telemetry.h): no agent, or an agent that
 * has not read the previous batch, and the frames are dropped and counted;
 * the connection is retried every 5 s. NCCL's threads never take its lock
 * nor wait for it: they write only the context's lock-free tables.
 *
 * Finalize (NCCL's finalize call, not an event path) takes the
 * communicator's last figures under the thread's lock, finalizes the
 * context there (so the op ring keeps a single consumer), and waits up to
 * 2 s for the thread to write them.
 */
#ifndef FQP_TELE_H
#define FQP_TELE_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-profiler/prof.h"
#include "nccl-profiler/window.h"
#include "proto/fabriciq.pb-c.h"

#define FQP_TELE_PER_FRAME 32 /* windows or ops per ProfilerReport: a frame stays under 8 KiB */

/* Pure: one communicator's interval as frames. The windows and ops go out
 * FQP_TELE_PER_FRAME of each per frame (at least one frame, even empty:
 * the interval and the cumulative counts); out(frame, len, arg) takes each
 * frame (encoded by fq_frame_encode, freed after the call). Returns the
 * number of frames, or -ENOMEM. */
struct fqp_tele_interval {
	const struct fqp_comm_info *ci;
	int64_t start_ns, end_ns;
	int synchronised;
	uint64_t dropped, ops_done;
	const struct fqp_window_sample *win;
	size_t nwin;
	const struct fqp_op_record *ops;
	size_t nops;
};
int fqp_tele_frames(const struct fqp_tele_interval *iv, void (*out)(const uint8_t *, size_t, void *),
		    void *arg);

/* Pure: a window's and an op record's message (strings are static). */
void fqp_tele_window_fill(Fabriciq__ProfilerWindow *m, const struct fqp_window_sample *w);
void fqp_tele_op_fill(Fabriciq__ProfilerOp *m, const struct fqp_op_record *r);

/* Start the process's thread if $FABRICIQ_AGENT_SOCKET is set and it is
 * not running; register ctx with it. 0, -ENOENT (no socket named: no
 * telemetry), -ENOSPC (every slot taken), or another negative errno. */
int fqp_tele_register(struct fqp_ctx *ctx);
/* Finalize ctx (fqp_finalize) after taking its last figures; waits up to
 * 2 s for them to be written. Returns fqp_finalize's result. A context
 * never registered is only finalized. */
int fqp_tele_finalize(struct fqp_ctx *ctx);

/* frames = sent + dropped_no_agent + queued; reports: intervals taken. */
struct fqp_tele_counts {
	uint64_t reports, frames, sent, dropped_no_agent, encode_failures;
	int connected, running;
};
void fqp_tele_counts(struct fqp_tele_counts *out);

#endif /* FQP_TELE_H */
