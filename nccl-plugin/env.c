/* env: table-driven settings from the environment (see env.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/env.h"

enum fqn_env_kind {
	FQN_ENV_INT,
	FQN_ENV_SIZE,
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
    {"FABRICIQ_PATH_PAGE", FQN_ENV_STR, "/run/fabriciq/paths", 1, FQN_PATH_MAX, OFF(path_page)},
    {"FABRICIQ_PATH_PAGE_MAX_AGE_MS", FQN_ENV_INT, "5000", 100, 3600000, OFF(path_page_max_age_ms)},
    {"FABRICIQ_RANK", FQN_ENV_STR, "", 0, 16, OFF(rank)},
};

int fqn_parse_size(const char *s, unsigned long long *out)
{
	unsigned long long v, mult = 1;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mult = 1ULL << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1ULL << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1ULL << 30;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end == 'i' && end[1] == 'B' && mult > 1)
		end += 2;
	if (*end != '\0' || v > ULLONG_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

static int fqn_env_set(struct fqn_config *cfg, const struct fqn_env_var *v, const char *val, char *err,
		       size_t errlen)
{
	char *field = (char *)cfg + v->offset;
	unsigned long long n;

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
	if (fqn_parse_size(val, &n) < 0 || (v->kind == FQN_ENV_INT && strpbrk(val, "kKmMgG"))) {
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

int fqn_config_load(struct fqn_config *cfg, fqn_getenv_fn lookup, char *err, size_t errlen)
{
	size_t i;
	int rc;

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
	if (strcmp(cfg->mode, "monitor") != 0 && strcmp(cfg->mode, "control") != 0) {
		snprintf(err, errlen, "FABRICIQ_MODE='%s': must be monitor or control", cfg->mode);
		return -EINVAL;
	}
	cfg->control = strcmp(cfg->mode, "control") == 0;
	if (*cfg->rank && (strspn(cfg->rank, "0123456789") != strlen(cfg->rank) || strlen(cfg->rank) > 9)) {
		snprintf(err, errlen, "FABRICIQ_RANK='%s': must be a rank (0 to 999999999)", cfg->rank);
		return -EINVAL;
	}
	return 0;
}
