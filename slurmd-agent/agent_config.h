/*
 * agent_config: the fabriciq-agent's settings (the agent.* keys of
 * fabriciq.conf), declared once as a table (common/config.h). The agent
 * runs on them; `fabriciq doctor` reads the same file through the same
 * table, so the two never disagree on a default or a path.
 */
#ifndef FQ_AGENT_AGENT_CONFIG_H
#define FQ_AGENT_AGENT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

struct agent_config {
	char *node;
	char *nics;
	char *peers;
	uint64_t port, probe_flows;
	uint64_t probe_interval, guard, window, bucket, down_after, report_interval;
	uint64_t trace_interval, trace_max_ttl;
	char *status_file;
	int log_level;
	char *controller, *munge_socket, *reference;
	char *run_dir, *step_socket, *telemetry_socket, *clock_page, *path_page;
	char *spool_dir;
	uint64_t spool_max, publish_interval, max_slew;
	uint64_t controller_uid;
	uint64_t rt_priority;
	char *node_key, *controller_key;
	uint64_t step_max_connections, telemetry_max_connections, telemetry_max_per_uid;
	uint64_t telemetry_idle_timeout, frame_timeout;
	uint64_t telemetry_lane_rate, telemetry_lane_burst, telemetry_event_rate, telemetry_event_burst;
};

/* The table behind struct agent_config (namespace "agent"). */
extern const struct fq_cfg_schema agent_config_schema;

/* The path of one socket or page: `set` when not empty, else
 * RUN_DIR/name. 0, or -ENAMETOOLONG (said on stderr) when it does not fit
 * in len bytes. */
int agent_config_path(char *out, size_t len, const char *set, const char *run_dir, const char *name);

#endif /* FQ_AGENT_AGENT_CONFIG_H */
