/* env: table-driven settings from the environment (see env.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "nccl-plugin/env.h"

enum fqn_env_kind {
	FQN_ENV_INT,  /* decimal digits (fq_parse_decimal) */
	FQN_ENV_SIZE, /* a size (fq_parse_size) */
	FQN_ENV_STR
};

struct fqn_env_var {
	const char *name;
	enum fqn_env_kind kind;
	const char *dflt;
	unsigned long long min, max; /* numbers; for strings, max is the buffer size */
	size_t offset;               /* into struct fqn_config */
};

#define OFF(f) offsetof(struct fqn_config, f)

static const struct fqn_env_var fqn_env_vars[] = {
    {"FABRICIQ_LANES", FQN_ENV_INT, "2", 1, FQN_MAX_LANES, OFF(lanes)},
    {"FABRICIQ_CHUNK_SIZE", FQN_ENV_SIZE, "512K", 4096, 64ULL << 20, OFF(chunk_size)},
    {"FABRICIQ_IFACES", FQN_ENV_STR, "", 0, FQN_IFACES_MAX, OFF(ifaces)},
    {"FABRICIQ_AGENT_SOCKET", FQN_ENV_STR, "/run/fabriciq/agent-telemetry.sock", 1, FQN_PATH_MAX,
     OFF(agent_socket)},
    {"FABRICIQ_CLOCK_PAGE", FQN_ENV_STR, "/run/fabriciq/clock", 1, FQN_PATH_MAX, OFF(clock_page)},
    {"FABRICIQ_TELEMETRY", FQN_ENV_INT, "1", 0, 1, OFF(telemetry)},
    {"FABRICIQ_TELEMETRY_INTERVAL_MS", FQN_ENV_INT, "100", 10, 60000, OFF(telemetry_interval_ms)},
    {"FABRICIQ_SOCKET_BUFFER", FQN_ENV_SIZE, "4M", 0, 256ULL << 20, OFF(sock_buf_bytes)},
    {"FABRICIQ_MODE", FQN_ENV_STR, "monitor", 1, 16, OFF(mode)},
    {"FABRICIQ_LANE_TIMEOUT_MS", FQN_ENV_INT, "1000", 50, 600000, OFF(lane_timeout_ms)},
    {"FABRICIQ_FAILOVER_GRACE_MS", FQN_ENV_INT, "30000", 100, 3600000, OFF(failover_grace_ms)},
    {"FABRICIQ_HELLO_TIMEOUT_MS", FQN_ENV_INT, "5000", 100, 600000, OFF(hello_timeout_ms)},
    {"FABRICIQ_PATH_PAGE", FQN_ENV_STR, "/run/fabriciq/paths", 1, FQN_PATH_MAX, OFF(path_page)},
    {"FABRICIQ_PATH_PAGE_MAX_AGE_MS", FQN_ENV_INT, "5000", 100, 3600000, OFF(path_page_max_age_ms)},
    {"FABRICIQ_RANK", FQN_ENV_STR, "", 0, 16, OFF(rank)},
    {"FABRICIQ_TRANSPORT", FQN_ENV_STR, "tcp", 1, 8, OFF(transport)},
    {"FABRICIQ_IB_GID_INDEX", FQN_ENV_STR, "", 0, 8, OFF(gid_index_s)},
    {"FABRICIQ_IB_TC", FQN_ENV_INT, "0", 0, 255, OFF(ib_tc)},
    {"FABRICIQ_IB_SL", FQN_ENV_INT, "0", 0, 15, OFF(ib_sl)},
    {"FABRICIQ_IB_TIMEOUT", FQN_ENV_INT, "20", 1, 31, OFF(ib_timeout)},
    {"FABRICIQ_IB_RETRY_CNT", FQN_ENV_INT, "7", 0, 7, OFF(ib_retry_cnt)},
    {"FABRICIQ_STEER", FQN_ENV_STR, "", 0, 8, OFF(steer_str)},
    {"FABRICIQ_STEER_TRACE", FQN_ENV_STR, "", 0, FQN_PATH_MAX, OFF(steer_trace)},
    {"FABRICIQ_ADVICE", FQN_ENV_STR, "on", 1, 8, OFF(advice_str)},
    {"FABRICIQ_PACE", FQN_ENV_STR, "off", 1, 8, OFF(pace_str)},
    {"FABRICIQ_PACE_TARGET_US", FQN_ENV_INT, "2000", 100, 1000000, OFF(pace_target_us)},
    {"FABRICIQ_JOB_ID", FQN_ENV_STR, "", 0, 24, OFF(job_id)},
    {"FABRICIQ_CLASS", FQN_ENV_STR, "", 0, 32, OFF(net_class)},
    {"FABRICIQ_DSCP", FQN_ENV_STR, "", 0, 4, OFF(dscp_s)},
};

static int fqn_env_set(struct fqn_config *cfg, const struct fqn_env_var *v, const char *val, char *err,
		       size_t errlen)
{
	char *field = (char *)cfg + v->offset;
	uint64_t n;

	if (v->kind == FQN_ENV_STR) {
		size_t len = strlen(val);

		if (len >= v->max || len < v->min) {
			snprintf(err, errlen, "%s='%s': length must be %llu..%llu", v->name, val, v->min,
				 v->max - 1);
			return -EINVAL;
		}
		memcpy(field, val, len + 1);
		return 0;
	}
	if ((v->kind == FQN_ENV_INT ? fq_parse_decimal(val, &n) : fq_parse_size(val, &n)) < 0) {
		snprintf(err, errlen, "%s='%s': not a %s", v->name, val,
			 v->kind == FQN_ENV_INT ? "decimal integer" : "size (bytes, or with K/M/G suffix)");
		return -EINVAL;
	}
	if (n < v->min || n > v->max) {
		snprintf(err, errlen, "%s='%s': must be between %llu and %llu", v->name, val, v->min, v->max);
		return -EINVAL;
	}
	if (v->offset == OFF(chunk_size))
		*(size_t *)field = (size_t)n;
	else
		*(int *)field = (int)n;
	return 0;
}

/* A string setting that must be one of choices: 0 and *idx, or -EINVAL
 * with "NAME='value': must be a, b or c" in err. */
static int env_choice(const char *name, const char *val, const char *const *choices, int *idx, char *err,
		      size_t errlen)
{
	char list[64];

	if (fq_parse_enum(val, choices, idx) == 0)
		return 0;
	fq_enum_list(choices, " or ", list, sizeof(list));
	snprintf(err, errlen, "%s='%s': must be %s", name, val, list);
	return -EINVAL;
}

int fqn_config_load(struct fqn_config *cfg, fqn_getenv_fn lookup, char *err, size_t errlen)
{
	static const char *const modes[] = {"monitor", "control", NULL};
	static const char *const transports[] = {"tcp", "ib", "auto", NULL};
	static const char *const on_off[] = {"on", "off", NULL};
	static const char *const paces[] = {"off", "delay", NULL};
	size_t i;
	int rc, k;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < sizeof(fqn_env_vars) / sizeof(fqn_env_vars[0]); i++) {
		const struct fqn_env_var *v = &fqn_env_vars[i];
		const char *val = lookup ? lookup(v->name) : NULL;

		rc = fqn_env_set(cfg, v, v->dflt, err, errlen);
		if (rc < 0)
			return rc;
		if (val) {
			rc = fqn_env_set(cfg, v, val, err, errlen);
			if (rc < 0)
				return rc;
		}
	}
	/* The SPANK plugin exports monitor or control; "off" never loads us. */
	if ((rc = env_choice("FABRICIQ_MODE", cfg->mode, modes, &k, err, errlen)) < 0)
		return rc;
	cfg->control = k == 1;
	if ((rc = env_choice("FABRICIQ_TRANSPORT", cfg->transport, transports, &k, err, errlen)) < 0)
		return rc;
	cfg->ib_gid_index = -1;
	if (*cfg->gid_index_s) {
		uint64_t gid;

		if (fq_parse_decimal(cfg->gid_index_s, &gid) < 0 || gid > 255) {
			snprintf(err, errlen,
				 "FABRICIQ_IB_GID_INDEX='%s': must be a GID table index (0 to 255)",
				 cfg->gid_index_s);
			return -EINVAL;
		}
		cfg->ib_gid_index = (int)gid;
	}
	if (*cfg->rank && (strspn(cfg->rank, "0123456789") != strlen(cfg->rank) || strlen(cfg->rank) > 9)) {
		snprintf(err, errlen, "FABRICIQ_RANK='%s': must be a rank (0 to 999999999)", cfg->rank);
		return -EINVAL;
	}
	/* Steering moves chunks by their ack latency: without acks (monitor
	 * mode) there is nothing to steer by, so "on" there is an error. */
	if (!*cfg->steer_str) {
		cfg->steer = cfg->control;
	} else {
		if ((rc = env_choice("FABRICIQ_STEER", cfg->steer_str, on_off, &k, err, errlen)) < 0)
			return rc;
		cfg->steer = k == 0;
		if (cfg->steer && !cfg->control) {
			snprintf(err, errlen,
				 "FABRICIQ_STEER=on needs FABRICIQ_MODE=control (steering uses acks)");
			return -EINVAL;
		}
	}
	/* "off": steering leaves the controller's move advice alone (its own
	 * moves and the path page's failovers and rates stay). */
	if ((rc = env_choice("FABRICIQ_ADVICE", cfg->advice_str, on_off, &k, err, errlen)) < 0)
		return rc;
	cfg->advice = k == 0;
	/* Pacing runs on the control mode's periodic update (the steering
	 * tick), which monitor mode has not. */
	if ((rc = env_choice("FABRICIQ_PACE", cfg->pace_str, paces, &k, err, errlen)) < 0)
		return rc;
	cfg->pace = k == 1;
	if (cfg->pace && !cfg->control) {
		snprintf(err, errlen,
			 "FABRICIQ_PACE=delay needs FABRICIQ_MODE=control (it runs on its update)");
		return -EINVAL;
	}
	cfg->tclass = -1;
	if (*cfg->dscp_s) {
		uint64_t dscp;

		if (fq_parse_decimal(cfg->dscp_s, &dscp) < 0 || dscp > 63) {
			snprintf(err, errlen, "FABRICIQ_DSCP='%s': must be a DSCP (0 to 63)", cfg->dscp_s);
			return -EINVAL;
		}
		cfg->tclass = (int)dscp << 2; /* the DS field's top six bits; ECN keeps the low two */
	}
	if (*cfg->job_id && strspn(cfg->job_id, "0123456789") != strlen(cfg->job_id)) {
		snprintf(err, errlen, "FABRICIQ_JOB_ID='%s': must be a Slurm job id (digits)", cfg->job_id);
		return -EINVAL;
	}
	return 0;
}
