/*
 * env: the plugin's settings, read once from the environment.
 *
 * One table (name, kind, default, bounds, help) drives parsing, validation
 * and the man page's list (doc/libnccl-net-fabriciq.7). A value that does
 * not parse or is out of bounds is an error: init fails with a message
 * naming the variable, the value and what is allowed. Numbers, sizes and
 * choices are read by common/parse.h's parsers (sizes: K/M/G, KiB/MiB/GiB,
 * in either case of the letter; integers: decimal digits). Pure: the
 * lookup function is a parameter, so tests feed it tables.
 */
#ifndef FQN_ENV_H
#define FQN_ENV_H

#include <stddef.h>

#define FQN_MAX_LANES  16
#define FQN_PATH_MAX   108 /* sun_path */
#define FQN_IFACES_MAX 256

struct fqn_config {
	int lanes;                       /* FABRICIQ_LANES, 1..16, default 2 */
	size_t chunk_size;               /* FABRICIQ_CHUNK_SIZE, 4 KiB..64 MiB, default 512 KiB */
	char ifaces[FQN_IFACES_MAX];     /* FABRICIQ_IFACES, comma list, "" = autodetect */
	char agent_socket[FQN_PATH_MAX]; /* FABRICIQ_AGENT_SOCKET */
	char clock_page[FQN_PATH_MAX];   /* FABRICIQ_CLOCK_PAGE */
	int telemetry;                   /* FABRICIQ_TELEMETRY, 0 or 1, default 1 */
	int telemetry_interval_ms;       /* FABRICIQ_TELEMETRY_INTERVAL_MS, 10..60000, default 100 */
	int sock_buf_bytes;              /* FABRICIQ_SOCKET_BUFFER, 0 (kernel) .. 256 MiB, default 4 MiB */
	char mode[16];                   /* FABRICIQ_MODE, "monitor" (default) or "control" */
	char rank[16];                   /* FABRICIQ_RANK: this process's global rank ("" unknown) */
	int control;                     /* mode is "control": acks, failover, failback */
	int lane_timeout_ms;             /* FABRICIQ_LANE_TIMEOUT_MS, 50..600000, default 1000 */
	int failover_grace_ms;           /* FABRICIQ_FAILOVER_GRACE_MS, 100..3600000, default 30000 */
	int hello_timeout_ms;            /* FABRICIQ_HELLO_TIMEOUT_MS, 100..600000, default 5000 */
	char path_page[FQN_PATH_MAX];    /* FABRICIQ_PATH_PAGE */
	/* IB verbs lanes (ib_lane.h) */
	char transport[8];              /* FABRICIQ_TRANSPORT: "tcp" (default), "ib" or "auto" */
	char gid_index_s[8];            /* FABRICIQ_IB_GID_INDEX: "" (choose: RoCE v2) or 0..255 */
	int ib_gid_index;               /* parsed; -1: choose */
	int ib_tc;                      /* FABRICIQ_IB_TC, 0..255, default 0 */
	int ib_sl;                      /* FABRICIQ_IB_SL, 0..15, default 0 */
	int ib_timeout;                 /* FABRICIQ_IB_TIMEOUT, 1..31, default 20 (4.096 us x 2^20 per try) */
	int ib_retry_cnt;               /* FABRICIQ_IB_RETRY_CNT, 0..7, default 7 */
	char steer_str[8];              /* FABRICIQ_STEER: "on", "off", "" (= on in control mode) */
	int steer;                      /* weights lanes by their delay (control mode only) */
	char steer_trace[FQN_PATH_MAX]; /* FABRICIQ_STEER_TRACE: append weight changes here ("" none) */
	char advice_str[8];             /* FABRICIQ_ADVICE: "on" (default) or "off" */
	int advice;                     /* steering takes the controller's move advice (path page) */
	char pace_str[8];               /* FABRICIQ_PACE: "off" (default) or "delay" */
	int pace;                       /* paces lanes by their queueing delay (control mode only) */
	int pace_target_us;             /* FABRICIQ_PACE_TARGET_US, 100..1000000, default 2000 */
	char job_id[24];                /* FABRICIQ_JOB_ID (else SLURM_JOB_ID): path page advice key */
	/* The job's network class (spank_fabriciq(8), "QoS between jobs"):
	 * its name, and the DSCP every lane's packets carry. */
	char net_class[32]; /* FABRICIQ_CLASS: "" none */
	char dscp_s[4];     /* FABRICIQ_DSCP: "" (none: NCCL's trafficClass, else the kernel's) or 0..63 */
	int tclass;         /* parsed: the traffic class byte (DSCP << 2), -1 none */
	int path_page_max_age_ms; /* FABRICIQ_PATH_PAGE_MAX_AGE_MS, 100..3600000, default 5000 */
};

typedef const char *(*fqn_getenv_fn)(const char *name);

/* Fill *cfg from the defaults and the variables lookup() returns. Returns 0,
 * or -EINVAL with a one-line reason in err. */
int fqn_config_load(struct fqn_config *cfg, fqn_getenv_fn lookup, char *err, size_t errlen);

#endif /* FQN_ENV_H */
