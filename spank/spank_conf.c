/* spank_conf: see spank_conf.h. */
#include "spank/spank_conf.h"

#include <errno.h>
#include <stddef.h>
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

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

/* A class's name: the first len bytes of s, letters, digits, _ and -. */
static bool name_ok(const char *s, size_t len)
{
	return len > 0 && strspn(s, NAME_CHARS) >= len;
}

const struct fq_spank_class *fq_spank_class_find(const struct fq_spank_conf *conf, const char *name)
{
	for (int i = 0; name && i < conf->nclasses; i++)
		if (!strcmp(conf->classes[i].name, name))
			return &conf->classes[i];
	return NULL;
}

/* A '+'-list's item at p: its length in *n, and where the next begins. */
static const char *plus_item(const char *p, size_t *n)
{
	*n = strcspn(p, "+");
	return p + *n + (p[*n] == '+');
}

/* Whether the '+'-list qos holds name. */
static bool qos_has(const char *qos, const char *name, size_t len)
{
	size_t n;

	for (const char *p = qos, *next; *p; p = next) {
		next = plus_item(p, &n);
		if (n == len && !strncmp(p, name, len))
			return true;
	}
	return false;
}

/* One attribute of a class=NAME,KEY=VALUE,... word into c. */
static int class_attr(struct fq_spank_class *c, const char *attr, size_t len, char *err, size_t errlen)
{
	static const struct {
		const char *key;
		unsigned long long max;
		size_t off;
	} nums[] = {{"dscp", 63, offsetof(struct fq_spank_class, dscp)},
		    {"sl", 15, offsetof(struct fq_spank_class, sl)},
		    {"prio", 6, offsetof(struct fq_spank_class, prio)},
		    {"weight", 100, offsetof(struct fq_spank_class, weight)}};
	const char *eq = memchr(attr, '=', len);
	char val[128];
	uint64_t v;

	if (!eq || (size_t)(attr + len - eq - 1) >= sizeof(val))
		goto bad;
	memcpy(val, eq + 1, (size_t)(attr + len - eq - 1));
	val[attr + len - eq - 1] = 0;
	if ((size_t)(eq - attr) == 3 && !strncmp(attr, "qos", 3)) {
		if (!*val)
			goto bad;
		for (const char *p = val, *next; *p; p = next) {
			size_t n;

			next = plus_item(p, &n);
			if (!n || strspn(p, NAME_CHARS ".") < n) /* Slurm's QOS names */
				goto bad;
		}
		snprintf(c->qos, sizeof(c->qos), "%s", val);
		return 0;
	}
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		if (strlen(nums[i].key) != (size_t)(eq - attr) ||
		    strncmp(attr, nums[i].key, (size_t)(eq - attr)))
			continue;
		int min = !strcmp(nums[i].key, "weight"); /* a weight of 0 would be no share at all */

		if (fq_parse_decimal(val, &v) < 0 || v < (uint64_t)min || v > nums[i].max) {
			snprintf(err, errlen, "%.*s: must be %d-%llu", (int)len, attr, min, nums[i].max);
			return -EINVAL;
		}
		*(int *)((char *)c + nums[i].off) = (int)v;
		return 0;
	}
bad:
	snprintf(err, errlen,
		 "'%.*s': expected dscp=0-63, sl=0-15, prio=0-6, weight=1-100 or qos=NAME[+NAME...]",
		 (int)len, attr);
	return -EINVAL;
}

/* class=NAME,dscp=D[,sl=S],prio=P|weight=W[,qos=A+B]: one more class. */
static int parse_class(struct fq_spank_conf *conf, const char *val, char *err, size_t errlen)
{
	struct fq_spank_class c = {.dscp = -1, .sl = -1, .prio = -1};
	size_t n = strcspn(val, ",");
	int rc;

	if (!name_ok(val, n) || n >= sizeof(c.name)) {
		snprintf(err, errlen, "class=%s: expected NAME (letters, digits, _ or -, at most %d) first",
			 val, FQ_SPANK_NAME_MAX - 1);
		return -EINVAL;
	}
	memcpy(c.name, val, n);
	for (const char *p = val + n; *p == ',';) {
		size_t len = strcspn(p + 1, ",");

		if ((rc = class_attr(&c, p + 1, len, err, errlen)) < 0) {
			char why[200];

			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "class=%s: %s", val, why);
			return rc;
		}
		p += len + 1;
	}
	if (c.dscp < 0 || (c.prio >= 0) == (c.weight > 0)) {
		snprintf(err, errlen,
			 "class=%s: needs dscp= and one of prio= (strict priority) or weight=", val);
		return -EINVAL;
	}
	if (fq_spank_class_find(conf, c.name) || conf->nclasses == FQ_SPANK_CLASSES) {
		snprintf(err, errlen, "class=%s: %s", val,
			 conf->nclasses == FQ_SPANK_CLASSES ? "too many classes (at most 8)"
							    : "defined twice");
		return -EINVAL;
	}
	conf->classes[conf->nclasses++] = c;
	return 0;
}

/* What only the whole line can tell: default_class names a class, and no
 * QOS is given two classes. */
static int check_classes(const struct fq_spank_conf *conf, char *err, size_t errlen)
{
	if (*conf->default_class && !fq_spank_class_find(conf, conf->default_class)) {
		snprintf(err, errlen, "default_class=%s: no class=%s, ... on the line", conf->default_class,
			 conf->default_class);
		return -EINVAL;
	}
	for (int i = 0; i < conf->nclasses; i++)
		for (const char *p = conf->classes[i].qos, *next; *p; p = next) {
			size_t n;

			next = plus_item(p, &n);
			for (int j = i + 1; j < conf->nclasses; j++)
				if (qos_has(conf->classes[j].qos, p, n)) {
					snprintf(err, errlen, "QOS %.*s is given two classes, %s and %s",
						 (int)n, p, conf->classes[i].name, conf->classes[j].name);
					return -EINVAL;
				}
		}
	return 0;
}

const struct fq_spank_class *fq_spank_step_class(const struct fq_spank_conf *conf, const char *named,
						 const char *qos, bool *bad)
{
	const struct fq_spank_class *c = NULL;

	*bad = false;
	if (named && *named && !(c = fq_spank_class_find(conf, named)))
		*bad = true;
	for (int i = 0; !c && qos && *qos && i < conf->nclasses; i++)
		if (qos_has(conf->classes[i].qos, qos, strlen(qos)))
			c = &conf->classes[i];
	return c ? c : fq_spank_class_find(conf, conf->default_class);
}

int fq_spank_option_parse(const char *arg, enum fq_spank_mode bare, enum fq_spank_mode *mode, char *cls,
			  size_t clslen, char *err, size_t errlen)
{
	char word[64];
	bool have_mode = false;

	*mode = bare;
	*cls = 0;
	for (const char *p = arg ? arg : ""; *p;) {
		size_t n = strcspn(p, ",");

		if (n >= sizeof(word)) {
			snprintf(err, errlen, "'%.*s...': too long", 16, p);
			return -EINVAL;
		}
		memcpy(word, p, n);
		word[n] = 0;
		p += n + (p[n] == ',');
		if (!strncmp(word, "class=", 6)) {
			if (*cls || !name_ok(word + 6, strlen(word + 6)) || strlen(word + 6) >= clslen) {
				snprintf(err, errlen, "'%s': %s", word,
					 *cls ? "one class only" : "expected class=NAME");
				return -EINVAL;
			}
			snprintf(cls, clslen, "%s", word + 6);
			continue;
		}
		*mode = fq_spank_mode_parse(word, FQ_MODE_UNSET);
		if (*mode == FQ_MODE_UNSET || !*word || have_mode) {
			/* a lone word reads as before classes: "--fabriciq=steer: unknown mode" */
			if (!strchr(arg, ','))
				snprintf(err, errlen, "unknown mode (use monitor, control or off)");
			else
				snprintf(err, errlen, "'%s': %s", word,
					 have_mode
					     ? "one mode only"
					     : "unknown mode (use monitor, control or off) or class=NAME");
			return -EINVAL;
		}
		have_mode = true;
	}
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
	if (!strcmp(key, "class"))
		return parse_class(conf, val, err, errlen);
	if (!strcmp(key, "default_class")) {
		if (*val && (!name_ok(val, strlen(val)) || strlen(val) >= sizeof(conf->default_class))) {
			snprintf(err, errlen, "default_class=%s: expected a class's NAME", val);
			return -EINVAL;
		}
		snprintf(conf->default_class, sizeof(conf->default_class), "%s", val);
		return 0;
	}
	snprintf(err, errlen,
		 "unknown key '%s' (known: ifaces, libdir, step_socket, telemetry_socket, clock_page, "
		 "path_page, mode, default, required, timeout_ms, controller, munge_socket, end_wait_ms, "
		 "monitor_via, control_profiler, profiler_libdir, class, default_class)",
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
	return check_classes(conf, err, errlen);
}
