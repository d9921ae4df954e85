/*
 * The node agent's local sockets (contract between the agent, the SPANK
 * plugin and the NCCL plugin). Both carry common/frame.h frames.
 *
 * Step socket (agent.step_socket, default FQ_STEP_SOCKET_DEFAULT), mode
 * 0600, owned by root; the agent also checks SO_PEERCRED uid == 0. A
 * client (slurmstepd's SPANK plugin) sends one request per frame and reads
 * one answer per request, in order:
 *   Envelope{seq = N, step_start = StepStart}  -> Envelope{result = Result{seq = N, code, message}}
 *   Envelope{seq = N, step_end = StepEnd}      -> Envelope{result = ...}
 * StepStart registers (job, step) on this node with its task pids and
 * global ranks; registering the same (job, step) again merges the ranks
 * (idempotent: the SPANK callback may run more than once). StepEnd
 * unregisters, after the agent has taken in every telemetry frame the
 * kernel already holds (a task's reports are written before it exits, so
 * a step's last reports stay its own whichever socket is read first); an
 * unknown step is code ENOENT. code 0: done; else a
 * positive errno with a message. The agent forwards both to the controller.
 * Every answer to StepStart, refused or not, also carries Result.paths:
 * the telemetry socket, clock page and path page this agent opened (its
 * run_dir and overrides applied), so the plugin hands the tasks exactly
 * the agent's paths. An answer without paths comes from an agent older
 * than the field; the plugin then falls back to the defaults below.
 *
 * Telemetry socket (agent.telemetry_socket, default
 * FQ_TELEMETRY_SOCKET_DEFAULT), mode 0666: any job process may send
 * Envelope{lane = LaneReport} / Envelope{failover = FailoverEvent} frames;
 * nothing is answered. The agent takes the sender's identity only from
 * SO_PEERCRED: the pid (or its nearest registered ancestor) must be a task
 * of a registered step, whose job, step and rank then replace what the
 * frame claims; frames from anyone else are dropped and counted.
 *
 * Frame limits (payload bytes; a frame announcing more closes the
 * connection): FQ_STEP_FRAME_MAX on the step socket (a StepStart of
 * FQ_STEPS_MAX_RANKS ranks fits), FQ_TELEMETRY_FRAME_MAX on the telemetry
 * socket (the NCCL plugin's frames are at most 4 KiB). Connection limits
 * and timeouts: slurmd-agent/local.h, fabriciq-agent(8).
 */
#ifndef FQ_COMMON_STEP_SOCKET_H
#define FQ_COMMON_STEP_SOCKET_H

#define FQ_STEP_SOCKET_DEFAULT      "/run/fabriciq/agent-step.sock"
#define FQ_TELEMETRY_SOCKET_DEFAULT "/run/fabriciq/agent-telemetry.sock"
#define FQ_CLOCK_PAGE_DEFAULT       "/run/fabriciq/clock"
#define FQ_PATH_PAGE_DEFAULT        "/run/fabriciq/paths"

#define FQ_STEP_FRAME_MAX      (256u << 10)
#define FQ_TELEMETRY_FRAME_MAX (64u << 10)

#endif /* FQ_COMMON_STEP_SOCKET_H */
