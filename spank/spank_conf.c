/* spank_conf: see spank_conf.h. */
#include "spank/spank_conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "common/step_socket.h"

/* The modes as the user writes them, in enum fq_spank_mode's order from OFF. */
static const char *const mode_names[] = {"off", "monitor", "control", NULL};

void fq_spank_conf_defaults(struct fq_spank_conf *conf, const char *libdir)
{
	memset(conf, 0, sizeof(*conf));
	snprintf(conf->libdir, sizeof(conf->libdir), "%s", libdir);
	snprintf(conf->step_socket, sizeof(conf->step_socket), "%s", FQ_STEP_SOCKET_DEFAULT);
	conf->bare_mode = FQ_MODE_MONITOR;
	conf->site_default = FQ_MODE_OFF;
	conf->required = false;
	conf->timeout_ms = 2000;
	conf->end_wait_ms = 5000;
}

enum fq_spank_mode fq_spank_mode_parse(const char *word, enum fq_spank_mode bare)
{
	int k;

	if (!word || !*word)
		return bare;
	return fq_parse_enum(word, mode_names, &k) == 0 ? (enum fq_spank_mode)(FQ_MODE_OFF + k)
							: FQ_MODE_UNSET;
}

enum fq_spank_mode fq_spank_step_mode(enum fq_spank_mode opt, const char *propagated,
				      enum fq_spank_mode site_default)
{
	enum fq_spank_mode m = opt;

	if (m == FQ_MODE_UNSET && propagated)
		m = fq_spank_mode_parse(propagated, FQ_MODE_UNSET);
	return m != FQ_MODE_UNSET ? m : site_default;
}

const char *fq_spank_mode_name(enum fq_spank_mode mode)
{
	return mode >= FQ_MODE_OFF && mode <= FQ_MODE_CONTROL ? mode_names[mode - FQ_MODE_OFF] : "";
}

int fq_spank_path_expand(const char *path, const char *node, char *out, size_t outlen)
{
	size_t n = 0, add;
	const char *piece;

	for (const char *p = path; *p; p++) {
		char one[2] = {*p, 0};

		piece = one;
		if (*p == '%') {
			p++;
			if (*p == 'n')
				piece = node;
			else if (*p == '%')
				piece = "%";
			else
				return -EINVAL;
		}
		add = strlen(piece);
		if (n + add >= outlen)
			return -ENAMETOOLONG;
		memcpy(out + n, piece, add);
		n += add;
	}
	if (n >= outlen)
		return -ENAMETOOLONG;
	out[n] = 0;
	return 0;
}

int fq_spank_agent_path(const char *override, const char *node, const char *told, const char *dflt, char *out,
			size_t outlen)
{
	const char *path = *told ? told : dflt;

	if (*override)
		return fq_spank_path_expand(override, node, out, outlen);
	if (strlen(path) >= outlen)
		return -ENAMETOOLONG;
	strcpy(out, path);
	return 0;
}

static int set_path(char *dst, const char *key, const char *val, char *err, size_t errlen)
{
	char probe[FQ_SPANK_PATH_MAX];
	int rc;

	if (val[0] != '/') {
		snprintf(err, errlen, "%s=%s: not an absolute path", key, val);
		return -EINVAL;
	}
	/* Check the %-sequences now, with a long node name, so a bad path is
	 * refused when slurmd starts rather than in the first job. */
	rc = fq_spank_path_expand(val, "nodename-of-reasonable-length", probe, sizeof(probe));
	if (rc == -EINVAL) {
		snprintf(err, errlen, "%s=%s: only %%n (node name) and %%%% may follow %%", key, val);
		return rc;
	}
	if (rc < 0 || strlen(val) >= FQ_SPANK_PATH_MAX) {
		snprintf(err, errlen, "%s=%s: path too long (limit %d bytes)", key, val,
			 FQ_SPANK_PATH_MAX - 64);
		return -EINVAL;
	}
	snprintf(dst, FQ_SPANK_PATH_MAX, "%s", val);
	return 0;
}

static int parse_one(struct fq_spank_conf *conf, const char *key, const char *val, char *err, size_t errlen)
{
	static const char *const yes_no[] = {"yes", "no", NULL};
	enum fq_spank_mode m;
	uint64_t ms;
	int k;

	if (!strcmp(key, "libdir"))
		return set_path(conf->libdir, key, val, err, errlen);
	if (!strcmp(key, "step_socket"))
		return set_path(conf->step_socket, key, val, err, errlen);
	if (!strcmp(key, "telemetry_socket"))
		return set_path(conf->telemetry_socket, key, val, err, errlen);
	if (!strcmp(key, "clock_page"))
		return set_path(conf->clock_page, key, val, err, errlen);
	if (!strcmp(key, "path_page"))
		return set_path(conf->path_page, key, val, err, errlen);
	if (!strcmp(key, "ifaces")) {
		if (strlen(val) >= sizeof(conf->ifaces) ||
		    strspn(val, "abcdefghijklmnopqrstuvwxyz"
				"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-,") != strlen(val)) {
			snprintf(err, errlen, "ifaces=%s: expected NIC names separated by commas", val);
			return -EINVAL;
		}
		snprintf(conf->ifaces, sizeof(conf->ifaces), "%s", val);
		return 0;
	}
	if (!strcmp(key, "mode")) {
		m = fq_spank_mode_parse(val, FQ_MODE_UNSET);
		if (m != FQ_MODE_MONITOR && m != FQ_MODE_CONTROL) {
			snprintf(err, errlen, "mode=%s: must be monitor or control", val);
			return -EINVAL;
		}
		conf->bare_mode = m;
		return 0;
	}
	if (!strcmp(key, "default")) {
		m = fq_spank_mode_parse(val, FQ_MODE_UNSET);
		if (m == FQ_MODE_UNSET) {
			snprintf(err, errlen, "default=%s: must be off, monitor or control", val);
			return -EINVAL;
		}
		conf->site_default = m;
		return 0;
	}
	if (!strcmp(key, "required")) {
		if (fq_parse_enum(val, yes_no, &k) < 0) {
			snprintf(err, errlen, "required=%s: must be yes or no", val);
			return -EINVAL;
		}
		conf->required = k == 0;
		return 0;
	}
	if (!strcmp(key, "timeout_ms")) {
		if (fq_parse_decimal(val, &ms) < 0 || ms < 1 || ms > 60000) {
			snprintf(err, errlen, "timeout_ms=%s: must be 1-60000", val);
			return -EINVAL;
		}
		conf->timeout_ms = (int)ms;
		return 0;
	}
	if (!strcmp(key, "controller")) {
		/* The form only; the HTTP client checks the rest when it connects. */
		if (strncmp(val, "http://", 7) || !val[7] || strlen(val) >= sizeof(conf->controller) ||
		    strpbrk(val, " \t\r\n")) {
			snprintf(err, errlen, "controller=%s: expected the API's URL, http://HOST[:PORT]",
				 val);
			return -EINVAL;
		}
		snprintf(conf->controller, sizeof(conf->controller), "%s", val);
		return 0;
	}
	if (!strcmp(key, "munge_socket"))
		return set_path(conf->munge_socket, key, val, err, errlen);
	if (!strcmp(key, "end_wait_ms")) {
		if (fq_parse_decimal(val, &ms) < 0 || ms > 60000) {
			snprintf(err, errlen, "end_wait_ms=%s: must be 0-60000", val);
			return -EINVAL;
		}
		conf->end_wait_ms = (int)ms;
		return 0;
	}
	if (!strcmp(key, "profiler_libdir"))
		return set_path(conf->profiler_libdir, key, val, err, errlen);
	if (!strcmp(key, "monitor_via")) {
		static const char *const via[] = {"profiler", "net", NULL};

		if (fq_parse_enum(val, via, &k) < 0) {
			snprintf(err, errlen, "monitor_via=%s: must be profiler or net", val);
			return -EINVAL;
		}
		conf->monitor_net = k == 1;
		return 0;
	}
	if (!strcmp(key, "control_profiler")) {
		if (fq_parse_enum(val, yes_no, &k) < 0) {
			snprintf(err, errlen, "control_profiler=%s: must be yes or no", val);
			return -EINVAL;
		}
		conf->control_profiler = k == 0;
		return 0;
	}
	snprintf(err, errlen,
		 "unknown key '%s' (known: ifaces, libdir, step_socket, telemetry_socket, clock_page, "
		 "path_page, mode, default, required, timeout_ms, controller, munge_socket, end_wait_ms, "
		 "monitor_via, control_profiler, profiler_libdir)",
		 key);
	return -EINVAL;
}

void fq_spank_nccl_plugins(const struct fq_spank_conf *conf, enum fq_spank_mode mode, bool *net,
			   bool *profiler)
{
	*net = mode == FQ_MODE_CONTROL || (mode == FQ_MODE_MONITOR && conf->monitor_net);
	*profiler = (mode == FQ_MODE_MONITOR && !conf->monitor_net) ||
		    (mode == FQ_MODE_CONTROL && conf->control_profiler);
}

int fq_spank_conf_parse(struct fq_spank_conf *conf, int ac, char **argv, char *err, size_t errlen)
{
	char key[64];
	const char *eq;
	int rc;

	for (int i = 0; i < ac; i++) {
		eq = strchr(argv[i], '=');
		if (!eq || eq == argv[i]) {
			snprintf(err, errlen, "argument '%s' is not key=value", argv[i]);
			return -EINVAL;
		}
		if ((size_t)(eq - argv[i]) >= sizeof(key)) {
			snprintf(err, errlen, "unknown key in '%s'", argv[i]);
			return -EINVAL;
		}
		memcpy(key, argv[i], (size_t)(eq - argv[i]));
		key[eq - argv[i]] = 0;
		rc = parse_one(conf, key, eq + 1, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}
