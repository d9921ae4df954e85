/* The agent's settings table (agent_config.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "slurmd-agent/agent_config.h"

static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};

#define OPT(name, type, field, def, lo, hi, choices, help)                                                   \
	{                                                                                                    \
		name, type, offsetof(struct agent_config, field), def, lo, hi, choices, help                 \
	}

static const struct fq_cfg_option agent_options[] = {
    OPT("node", FQ_CFG_STRING, node, NULL, 0, 0, NULL, "this node's name (default: the host name)"),
    OPT("nics", FQ_CFG_STRING, nics, NULL, 0, 0, NULL,
	"back-end NICs to probe from, comma-separated, rail order (e.g. rail0,rail1); default: discovered "
	"(RDMA netdevs, else every IPv4 interface but the loopback and the front-end one)"),
    OPT("peers", FQ_CFG_STRING, peers, "", 0, 0, NULL,
	"static peers, comma-separated NODE:NIC@ADDRESS, ADDRESS an IPv4 address or a UD address "
	"(ud:lid=0x12/qpn=0x48, ud:gid=fe80::2/qpn=0x48; probed from the local NIC of the same name), "
	"in addition to those the controller assigns"),
    OPT("port", FQ_CFG_UINT, port, "7101", 1, 65535, NULL, "UDP probe port"),
    OPT("probe_flows", FQ_CFG_UINT, probe_flows, "4", 1, 8, NULL,
	"probe flows per path: UDP ports port .. port+N-1 at both ends, each its own ECMP route (probed "
	"round-robin, traced apart), so every fabric link is crossed by more probe paths; a peer with "
	"fewer is probed over those it answers"),
    OPT("probe_interval", FQ_CFG_DURATION, probe_interval, "20ms", 1e6, 10e9, NULL,
	"mean time between probe pairs on one path (each tick drawn from half to 1.5x its mean)"),
    OPT("guard", FQ_CFG_DURATION, guard, "4us", 0, 1e9, NULL,
	"a probe pair counts for clock estimation only if its receive gap is within this of its send gap"),
    OPT("window", FQ_CFG_DURATION, window, "4s", 0.5e9, 600e9, NULL, "sliding window of the clock fit"),
    OPT("bucket", FQ_CFG_DURATION, bucket, "250ms", 10e6, 60e9, NULL,
	"lower-envelope resolution of the clock fit (window/bucket <= 256)"),
    OPT("down_after", FQ_CFG_DURATION, down_after, "250ms", 10e6, 60e9, NULL,
	"a path with no answer for this long is DOWN"),
    OPT("report_interval", FQ_CFG_DURATION, report_interval, "1s", 100e6, 3600e9, NULL,
	"report window (status file, controller reports)"),
    OPT("trace_interval", FQ_CFG_DURATION, trace_interval, "60s", 0, 86400e9, NULL,
	"each probed path's route is traced hop by hop this often (and when it comes back UP), for the "
	"controller's topology; 0: never"),
    OPT("trace_max_ttl", FQ_CFG_UINT, trace_max_ttl, "8", 1, 16, NULL,
	"the most router hops a path trace looks for"),
    OPT("status_file", FQ_CFG_STRING, status_file, "/run/fabriciq/agent-status.json", 0, 0, NULL,
	"where the agent writes its state each report window"),
    OPT("log_level", FQ_CFG_ENUM, log_level, "info", 0, 0, log_levels, "error, warn, info or debug"),
    OPT("rt_priority", FQ_CFG_UINT, rt_priority, "1", 0, 99, NULL,
	"the agent's loop (probes, answers, liveness) runs SCHED_FIFO at this priority, so a job that "
	"fills the cores cannot hold its answers back (its peers would see its paths silent, DOWN); its "
	"worker threads keep the scheduling it was started with; 0: the loop keeps it too"),
    OPT("controller", FQ_CFG_STRING, controller, "", 0, 0, NULL,
	"the controller, HOST[:PORT] (port 7100); empty: run without one"),
    OPT("munge_socket", FQ_CFG_STRING, munge_socket, "", 0, 0, NULL,
	"munged's socket for the controller credential (empty: munge's default)"),
    OPT("controller_uid", FQ_CFG_UINT, controller_uid, "0", 0, 4294967294.0, NULL,
	"uid the controller's munge credential must carry (the controller authenticates to the agent)"),
    OPT("node_key", FQ_CFG_STRING, node_key, "", 0, 0, NULL,
	"this node's secret key file (fabriciq-agent --new-key FILE makes one and prints the line for the "
	"controller's node bindings): every hello is signed with it, so no other host can speak as this "
	"node; empty: none (the controller binds the name to an address)"),
    OPT("controller_key", FQ_CFG_STRING, controller_key, "", 0, 0, NULL,
	"the controller's public key, \"ed25519:...\" (fabriciq-controller --new-key prints it): its answer "
	"must be signed with it, so root on another host cannot pose as the controller; empty: munge's uid "
	"only"),
    OPT("reference", FQ_CFG_STRING, reference, "", 0, 0, NULL,
	"the reference host of the global timeline without a controller (default: the first node name, "
	"in byte order, among this node and its peers)"),
    OPT("run_dir", FQ_CFG_STRING, run_dir, "/run/fabriciq", 0, 0, NULL,
	"directory of the sockets and pages below, when they are not set"),
    OPT("step_socket", FQ_CFG_STRING, step_socket, "", 0, 0, NULL,
	"root-only socket of the SPANK plugin (default RUN_DIR/agent-step.sock)"),
    OPT("telemetry_socket", FQ_CFG_STRING, telemetry_socket, "", 0, 0, NULL,
	"socket of the NCCL plugin's telemetry (default RUN_DIR/agent-telemetry.sock)"),
    OPT("step_max_connections", FQ_CFG_UINT, step_max_connections, "1024", 1, 65536, NULL,
	"connections the step socket takes (root's: one per running step), apart from the telemetry "
	"socket's"),
    OPT("telemetry_max_connections", FQ_CFG_UINT, telemetry_max_connections, "1024", 1, 65536, NULL,
	"connections the telemetry socket takes, all users together"),
    OPT("telemetry_max_per_uid", FQ_CFG_UINT, telemetry_max_per_uid, "256", 1, 65536, NULL,
	"telemetry connections one uid may hold (one per job process)"),
    OPT("telemetry_idle_timeout", FQ_CFG_DURATION, telemetry_idle_timeout, "10m", 1e9, 86400e9, NULL,
	"a telemetry connection that sends no frame for this long is closed"),
    OPT("telemetry_lane_rate", FQ_CFG_UINT, telemetry_lane_rate, "5000", 1, 1e7, NULL,
	"lane reports a second one step's processes may send on this node (beyond: dropped, counted)"),
    OPT("telemetry_lane_burst", FQ_CFG_UINT, telemetry_lane_burst, "20000", 1, 1e8, NULL,
	"lane reports one step may send at once above telemetry_lane_rate"),
    OPT("telemetry_event_rate", FQ_CFG_UINT, telemetry_event_rate, "100", 1, 1e6, NULL,
	"failover events a second one step's processes may send on this node (beyond: dropped, counted)"),
    OPT("telemetry_event_burst", FQ_CFG_UINT, telemetry_event_burst, "4096", 1, 1e7, NULL,
	"failover events one step may send at once above telemetry_event_rate"),
    OPT("frame_timeout", FQ_CFG_DURATION, frame_timeout, "5s", 10e6, 600e9, NULL,
	"a frame begun on either local socket must be complete within this, else the connection is closed"),
    OPT("clock_page", FQ_CFG_STRING, clock_page, "", 0, 0, NULL, "clock page (default RUN_DIR/clock)"),
    OPT("path_page", FQ_CFG_STRING, path_page, "", 0, 0, NULL, "path-health page (default RUN_DIR/paths)"),
    OPT("spool_dir", FQ_CFG_STRING, spool_dir, "/var/spool/fabriciq/agent", 0, 0, NULL,
	"frames wait here until the controller acknowledges them"),
    OPT("spool_max", FQ_CFG_SIZE, spool_max, "256MiB", 1 << 20, 1e12, NULL,
	"spool bound; beyond it bulk telemetry (probe, clock, lane reports) is dropped before events "
	"(counted)"),
    OPT("publish_interval", FQ_CFG_DURATION, publish_interval, "100ms", 10e6, 1e9, NULL,
	"clock page publication period (the path page: every report window, and 100 ms after a path's "
	"transition)"),
    OPT("max_slew", FQ_CFG_UINT, max_slew, "500000", 1000, 100000000, NULL,
	"largest rate change of the published global time, in ppb (never stepped back)"),
    {NULL, 0, 0, NULL, 0, 0, NULL, NULL},
};

const struct fq_cfg_schema agent_config_schema = {"agent", agent_options};

int agent_config_path(char *out, size_t len, const char *set, const char *run_dir, const char *name)
{
	int n = *set ? snprintf(out, len, "%s", set) : snprintf(out, len, "%s/%s", run_dir, name);

	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr, "fabriciq-agent: path for %s is too long\n", name);
		return -ENAMETOOLONG;
	}
	return 0;
}
