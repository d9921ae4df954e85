/* Unit tests of the SPANK plugin's pure parts and its agent client:
 * plugstack.conf arguments, MODE words, %n paths, and the step socket
 * protocol against an in-process fake agent (answers, refusals, silence). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/frame.h"
#include "spank/spank_conf.h"
#include "spank/spank_env.h"
#include "spank/step_client.h"
#include "tests/unit/tap.h"

static int parse(struct fq_spank_conf *c, char *err, const char *a, const char *b)
{
	char *argv[2] = {(char *)a, (char *)b};

	fq_spank_conf_defaults(c, "/usr/lib/fabriciq");
	return fq_spank_conf_parse(c, b ? 2 : (a ? 1 : 0), argv, err, 256);
}

static void test_conf(void)
{
	struct fq_spank_conf c;
	char err[256], out[64];

	ok(parse(&c, err, NULL, NULL) == 0, "no arguments: defaults");
	ok(c.site_default == FQ_MODE_OFF && c.bare_mode == FQ_MODE_MONITOR && !c.required &&
	       c.timeout_ms == 2000 && !strcmp(c.libdir, "/usr/lib/fabriciq"),
	   "defaults: off, monitor, not required, 2000 ms, libdir as built");
	ok(parse(&c, err, "step_socket=/run/fq-%n/step.sock", "default=control") == 0 &&
	       !strcmp(c.step_socket, "/run/fq-%n/step.sock") && c.site_default == FQ_MODE_CONTROL,
	   "step_socket with %%n and default=control accepted");
	ok(parse(&c, err, "required=yes", "mode=control") == 0 && c.required &&
	       c.bare_mode == FQ_MODE_CONTROL,
	   "required=yes mode=control");
	ok(parse(&c, err, "libdir=/opt/fq/lib", "timeout_ms=150") == 0 && c.timeout_ms == 150 &&
	       !strcmp(c.libdir, "/opt/fq/lib"),
	   "libdir and timeout_ms");
	ok(parse(&c, err, "bogus=1", NULL) == -EINVAL && strstr(err, "unknown key 'bogus'"),
	   "unknown key refused, named: %s", err);
	ok(parse(&c, err, "required=maybe", NULL) == -EINVAL && strstr(err, "required=maybe"),
	   "bad required= refused: %s", err);
	ok(parse(&c, err, "mode=off", NULL) == -EINVAL, "mode=off refused (a bare --fabriciq must enable)");
	ok(parse(&c, err, "default=on", NULL) == -EINVAL && strstr(err, "default=on"),
	   "default=on refused: %s", err);
	ok(parse(&c, err, "step_socket=relative.sock", NULL) == -EINVAL && strstr(err, "absolute"),
	   "relative path refused: %s", err);
	ok(parse(&c, err, NULL, NULL) == 0 && !*c.path_page && !*c.clock_page && !*c.telemetry_socket &&
	       parse(&c, err, "path_page=/run/fq-%n/paths", NULL) == 0 &&
	       !strcmp(c.path_page, "/run/fq-%n/paths"),
	   "path_page, clock_page, telemetry_socket: no override by default; %%n accepted");
	ok(parse(&c, err, "clock_page=/run/%x", NULL) == -EINVAL && strstr(err, "%n"),
	   "bad %%-sequence refused: %s", err);
	ok(parse(&c, err, "timeout_ms=0", NULL) == -EINVAL &&
	       parse(&c, err, "timeout_ms=5s", NULL) == -EINVAL,
	   "timeout_ms out of range or not a number refused");
	ok(parse(&c, err, "required", NULL) == -EINVAL && strstr(err, "not key=value"),
	   "word without = refused: %s", err);

	ok(fq_spank_mode_parse(NULL, FQ_MODE_MONITOR) == FQ_MODE_MONITOR &&
	       fq_spank_mode_parse("", FQ_MODE_CONTROL) == FQ_MODE_CONTROL,
	   "a bare option gives the configured mode");
	ok(fq_spank_mode_parse("off", FQ_MODE_MONITOR) == FQ_MODE_OFF &&
	       fq_spank_mode_parse("control", FQ_MODE_MONITOR) == FQ_MODE_CONTROL &&
	       fq_spank_mode_parse("monitor", FQ_MODE_CONTROL) == FQ_MODE_MONITOR,
	   "off, control, monitor");
	ok(fq_spank_mode_parse("Monitor", FQ_MODE_MONITOR) == FQ_MODE_UNSET &&
	       fq_spank_mode_parse("steer", FQ_MODE_MONITOR) == FQ_MODE_UNSET,
	   "unknown words are not modes");

	ok(fq_spank_path_expand("/run/fq-%n/a%%b", "n3", out, sizeof(out)) == 0 &&
	       !strcmp(out, "/run/fq-n3/a%b"),
	   "%%n and %%%% expand: %s", out);
	ok(fq_spank_path_expand("/run/%n/x", "a-very-long-node-name-indeed", out, 16) == -ENAMETOOLONG,
	   "too long an expansion is refused");

	ok(fq_spank_agent_path("", "n3", "/var/fq/clock", "/run/fabriciq/clock", out, sizeof(out)) == 0 &&
	       !strcmp(out, "/var/fq/clock"),
	   "agent path: no override, the agent's (%s)", out);
	ok(fq_spank_agent_path("/o/%n/clock", "n3", "/var/fq/clock", "/run/fabriciq/clock", out,
			       sizeof(out)) == 0 &&
	       !strcmp(out, "/o/n3/clock"),
	   "agent path: plugstack's override wins, %%n expanded (%s)", out);
	ok(fq_spank_agent_path("", "n3", "", "/run/fabriciq/clock", out, sizeof(out)) == 0 &&
	       !strcmp(out, "/run/fabriciq/clock"),
	   "agent path: an agent that told nothing, the default (%s)", out);
	ok(fq_spank_agent_path("", "n3", "/a/told/path/longer/than/the/buffer", "/d", out, 16) ==
	       -ENAMETOOLONG,
	   "agent path: a told path longer than the buffer is refused");
}

/* A stand-in for spank_getenv over one value: -ENOSPC unless it fits. */
struct env_fake {
	const char *name, *value;
	int calls;
};

static int env_get(void *arg, const char *name, char *buf, int len)
{
	struct env_fake *f = arg;

	f->calls++;
	if (strcmp(name, f->name))
		return -ENOENT;
	if (strlen(f->value) >= (size_t)len)
		return -ENOSPC;
	strcpy(buf, f->value);
	return 0;
}

/* Which NCCL plugins each mode gets: monitor the profiler only (NCCL's
 * transports kept), unless monitor_via=net; control the net plugin, and
 * the profiler with control_profiler=yes. */
static void test_plugins(void)
{
	struct fq_spank_conf c;
	char err[256], got[64] = "";
	bool net, prof;
	const enum fq_spank_mode modes[] = {FQ_MODE_UNSET, FQ_MODE_OFF, FQ_MODE_MONITOR, FQ_MODE_CONTROL};

	parse(&c, err, NULL, NULL);
	for (int i = 0; i < 4; i++) {
		fq_spank_nccl_plugins(&c, modes[i], &net, &prof);
		strcat(got, net ? "N" : "-");
		strcat(got, prof ? "P " : "- ");
	}
	is_str(got, "-- -- -P N- ",
	       "defaults: monitor names the profiler alone, control the net plugin alone");
	ok(!c.monitor_net && !c.control_profiler && !*c.profiler_libdir,
	   "defaults: monitor_via=profiler, control_profiler=no, profiler_libdir = libdir");
	ok(parse(&c, err, "monitor_via=net", "control_profiler=yes") == 0,
	   "monitor_via=net control_profiler=yes");
	got[0] = 0;
	for (int i = 0; i < 4; i++) {
		fq_spank_nccl_plugins(&c, modes[i], &net, &prof);
		strcat(got, net ? "N" : "-");
		strcat(got, prof ? "P " : "- ");
	}
	is_str(got, "-- -- N- NP ", "... monitor through the net plugin (the old way), control with both");
	ok(parse(&c, err, "monitor_via=nccl", NULL) == -EINVAL && strstr(err, "monitor_via=nccl"),
	   "monitor_via=nccl refused: %s", err);
	ok(parse(&c, err, "profiler_libdir=/b/nccl-profiler/.libs", NULL) == 0 &&
	       !strcmp(c.profiler_libdir, "/b/nccl-profiler/.libs") &&
	       parse(&c, err, "profiler_libdir=rel", NULL) == -EINVAL,
	   "profiler_libdir: an absolute path, a relative one refused");
}

static void test_env(void)
{
	struct env_fake f = {.name = "LD_LIBRARY_PATH"};
	char *big = malloc(100001), *val = NULL;

	memset(big, 'x', 100000);
	for (int i = 0; i < 100000; i += 50)
		big[i] = ':';
	big[100000] = 0;
	int rc;

	f.value = "/short";
	rc = fq_spank_getenv(env_get, &f, "LD_LIBRARY_PATH", &val);
	ok(rc == 0 && !strcmp(val, "/short") && f.calls == 1, "a short value: read at once (%d call)",
	   f.calls);
	free(val);
	val = NULL;
	f.calls = 0;
	f.value = big;
	rc = fq_spank_getenv(env_get, &f, "LD_LIBRARY_PATH", &val);
	ok(rc == 0 && val && !strcmp(val, big), "a 100000-byte value: read whole (%zu bytes)",
	   val ? strlen(val) : 0);
	is_int(f.calls, 6, "... growing 4096 -> 131072 bytes, one call per doubling");
	free(val);
	val = NULL;
	f.value = "";
	ok(fq_spank_getenv(env_get, &f, "LD_LIBRARY_PATH", &val) == 0 && val && !*val,
	   "an empty value is set");
	free(val);
	is_int(fq_spank_getenv(env_get, &f, "NCCL_NET_PLUGIN", &val), -ENOENT, "an unset variable: -ENOENT");
	free(big);
}

/* A fake agent: answers each request with code `code` (or nothing when
 * silent), and records the last StepStart it saw. */
struct fake {
	int lfd;
	int code;
	int silent;
	int tell; /* answer with paths */
	int requests;
	unsigned nranks;
	unsigned long long job;
	int32_t exit_status;
};

static void *fake_run(void *arg)
{
	struct fake *f = arg;
	struct fq_frame_decoder *d = fq_frame_decoder_create(0);
	Fabriciq__Envelope *env;
	uint8_t buf[4096];
	ssize_t n;
	int fd = accept(f->lfd, NULL, NULL);

	while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0) {
		fq_frame_decoder_feed(d, buf, (size_t)n);
		while (fq_frame_decoder_next(d, &env) == 1) {
			Fabriciq__Envelope ans = FABRICIQ__ENVELOPE__INIT;
			Fabriciq__Result res = FABRICIQ__RESULT__INIT;
			Fabriciq__AgentPaths paths = FABRICIQ__AGENT_PATHS__INIT;

			f->requests++;
			if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_STEP_START) {
				f->nranks = (unsigned)env->step_start->n_ranks;
				f->job = env->step_start->job_id;
			} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_STEP_END) {
				f->exit_status = env->step_end->exit_status;
			}
			res.seq = env->seq;
			res.code = f->code;
			res.message = f->code ? "no such step" : "";
			ans.version = FQ_PROTOCOL_VERSION;
			ans.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_RESULT;
			ans.result = &res;
			paths.telemetry_socket = "/r/tele.sock";
			paths.clock_page = "/r/clock";
			paths.path_page = "/r/paths";
			if (f->tell)
				res.paths = &paths;
			if (!f->silent)
				fq_frame_write_fd(fd, &ans, 0);
			fq_frame_free(env);
		}
	}
	if (fd >= 0)
		close(fd);
	fq_frame_decoder_destroy(d);
	return NULL;
}

static int fake_listen(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0)
		return -1;
	return fd;
}

static double since_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

static int one_call(const char *path, struct fake *f, int timeout_ms, char *msg, double *ms,
		    struct fq_step_paths *paths)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__StepStart ss = FABRICIQ__STEP_START__INIT;
	Fabriciq__Rank r0 = FABRICIQ__RANK__INIT, r1 = FABRICIQ__RANK__INIT, *rp[2] = {&r0, &r1};
	struct fq_step_client *c;
	struct timespec t0;
	pthread_t th;
	int rc;

	f->lfd = fake_listen(path);
	pthread_create(&th, NULL, fake_run, f);
	rc = fq_step_client_connect(path, timeout_ms, &c);
	if (rc == 0) {
		ss.job_id = 4242;
		ss.n_ranks = 2;
		ss.ranks = rp;
		ss.node = "n1";
		ss.mode = "monitor";
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_START;
		env.step_start = &ss;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = fq_step_client_call(c, &env, msg, 256, paths);
		*ms = since_ms(&t0);
		fq_step_client_close(c);
	}
	pthread_join(th, NULL);
	close(f->lfd);
	unlink(path);
	return rc;
}

static void test_client(void)
{
	char path[108], msg[256];
	struct fq_step_paths told;
	struct fake f;
	struct fq_step_client *c;
	double ms;

	snprintf(path, sizeof(path), "/tmp/fq-spank-unit-%d.sock", (int)getpid());
	unlink(path);
	ok(fq_step_client_connect(path, 200, &c) == -ENOENT, "no socket: -ENOENT at once");

	memset(&f, 0, sizeof(f));
	f.tell = 1;
	memset(&told, 'x', sizeof(told));
	ok(one_call(path, &f, 2000, msg, &ms, &told) == 0 && f.requests == 1 && f.nranks == 2 &&
	       f.job == 4242,
	   "StepStart answered code 0; the agent saw job 4242 with 2 ranks");
	ok(!strcmp(told.telemetry_socket, "/r/tele.sock") && !strcmp(told.clock_page, "/r/clock") &&
	       !strcmp(told.path_page, "/r/paths"),
	   "the answer's paths come back: %s %s %s", told.telemetry_socket, told.clock_page, told.path_page);

	memset(&f, 0, sizeof(f));
	f.code = ENOENT;
	memset(&told, 'x', sizeof(told));
	ok(one_call(path, &f, 2000, msg, &ms, &told) == -ENOENT && !strcmp(msg, "no such step"),
	   "a refusal comes back as -code with the agent's message (%s)", msg);
	ok(!*told.telemetry_socket && !*told.clock_page && !*told.path_page,
	   "an answer without paths (an older agent): all three empty");

	memset(&f, 0, sizeof(f));
	f.silent = 1;
	int rc = one_call(path, &f, 300, msg, &ms, NULL);
	ok(rc == -ETIMEDOUT && ms >= 290 && ms < 1000,
	   "a silent agent: -ETIMEDOUT after the timeout (%.0f ms for 300)", ms);

	/* A listening socket nobody accepts: connect succeeds into the
	 * backlog, the call times out. */
	int lfd = fake_listen(path);
	ok(fq_step_client_connect(path, 300, &c) == 0,
	   "connect into the backlog of an agent that never accepts");
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__StepEnd se = FABRICIQ__STEP_END__INIT;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_END;
	env.step_end = &se;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = fq_step_client_call(c, &env, NULL, 0, NULL);
	ms = since_ms(&t0);
	ok(rc == -ETIMEDOUT && ms >= 290 && ms < 1000,
	   "a stuck agent costs one timeout, not a hang (%.0f ms)", ms);
	fq_step_client_close(c);
	close(lfd);
	unlink(path);
}

/* The network class table (plugstack class=, default_class=), a step's
 * class (named, by QOS, by default) and the --fabriciq=MODE,class=NAME
 * argument. */
static void test_classes(void)
{
	const char *lat = "class=latency,dscp=46,prio=0,sl=1,qos=inference+realtime";
	const char *bulk = "class=bulk,dscp=10,weight=4,qos=normal";
	const struct fq_spank_class *k;
	struct fq_spank_conf c;
	char err[256], cls[32];
	enum fq_spank_mode m;
	bool bad;

	ok(parse(&c, err, lat, bulk) == 0 && c.nclasses == 2 && c.classes[0].dscp == 46 &&
	       c.classes[0].prio == 0 && c.classes[0].sl == 1 && c.classes[0].weight == 0 &&
	       c.classes[1].weight == 4 && c.classes[1].prio == -1 && c.classes[1].sl == -1 &&
	       !strcmp(c.classes[0].qos, "inference+realtime"),
	   "two classes: dscp, prio or weight, sl, QOS names (%s)", err);
	k = fq_spank_step_class(&c, "bulk", "inference", &bad);
	ok(k && !strcmp(k->name, "bulk") && !bad, "the class the job names wins over its QOS's");
	k = fq_spank_step_class(&c, NULL, "realtime", &bad);
	ok(k && !strcmp(k->name, "latency") && !fq_spank_step_class(&c, "", "other", &bad) && !bad,
	   "a QOS gives its class; another QOS, no default: none");
	k = fq_spank_step_class(&c, "gold", "normal", &bad);
	ok(k && !strcmp(k->name, "bulk") && bad, "an unknown class named is flagged, the QOS's used");
	ok(parse(&c, err, bulk, "default_class=bulk") == 0 &&
	       (k = fq_spank_step_class(&c, NULL, NULL, &bad)) && !strcmp(k->name, "bulk"),
	   "default_class for a job with neither");
	ok(parse(&c, err, "default_class=gold", bulk) == -EINVAL && strstr(err, "default_class=gold"),
	   "default_class naming no class refused: %s", err);
	ok(parse(&c, err, "class=a,dscp=64,prio=0", NULL) == -EINVAL && strstr(err, "dscp=64"),
	   "dscp out of range refused: %s", err);
	ok(parse(&c, err, "class=a,dscp=8", NULL) == -EINVAL && strstr(err, "prio="),
	   "neither prio nor weight refused: %s", err);
	ok(parse(&c, err, "class=a,dscp=8,prio=1,weight=2", NULL) == -EINVAL, "both prio and weight refused");
	ok(parse(&c, err, "class=a,dscp=8,weight=0", NULL) == -EINVAL && strstr(err, "1-100"),
	   "weight 0 refused: %s", err);
	ok(parse(&c, err, "class=a,dscp=8,prio=0", "class=a,dscp=9,prio=1") == -EINVAL &&
	       strstr(err, "twice"),
	   "a class defined twice refused: %s", err);
	ok(parse(&c, err, "class=a,dscp=8,prio=0,qos=x", "class=b,dscp=9,weight=1,qos=y+x") == -EINVAL &&
	       strstr(err, "QOS x"),
	   "a QOS given two classes refused: %s", err);
	ok(parse(&c, err, "class=a b,dscp=8,prio=0", NULL) == -EINVAL &&
	       parse(&c, err, "class=a,dscp=8,prio=0,color=red", NULL) == -EINVAL && strstr(err, "color"),
	   "bad name and unknown attribute refused: %s", err);

	ok(fq_spank_option_parse("control,class=latency", FQ_MODE_MONITOR, &m, cls, sizeof(cls), err,
				 sizeof(err)) == 0 &&
	       m == FQ_MODE_CONTROL && !strcmp(cls, "latency"),
	   "--fabriciq=control,class=latency");
	ok(fq_spank_option_parse("class=bulk", FQ_MODE_MONITOR, &m, cls, sizeof(cls), err, sizeof(err)) ==
		   0 &&
	       m == FQ_MODE_MONITOR && !strcmp(cls, "bulk") &&
	       fq_spank_option_parse(NULL, FQ_MODE_CONTROL, &m, cls, sizeof(cls), err, sizeof(err)) == 0 &&
	       m == FQ_MODE_CONTROL && !*cls,
	   "class alone takes the bare mode; no argument: the bare mode, no class");
	ok(fq_spank_option_parse("control,monitor", FQ_MODE_MONITOR, &m, cls, sizeof(cls), err,
				 sizeof(err)) == -EINVAL &&
	       fq_spank_option_parse("control,class=", FQ_MODE_MONITOR, &m, cls, sizeof(cls), err,
				     sizeof(err)) == -EINVAL &&
	       fq_spank_option_parse("control,steer", FQ_MODE_MONITOR, &m, cls, sizeof(cls), err,
				     sizeof(err)) == -EINVAL &&
	       strstr(err, "'steer'") &&
	       fq_spank_option_parse("steer", FQ_MODE_MONITOR, &m, cls, sizeof(cls), err, sizeof(err)) ==
		   -EINVAL &&
	       !strncmp(err, "unknown mode", 12),
	   "two modes, an empty class, an unknown word refused: %s", err);
}

int main(void)
{
	plan(58);
	test_conf();
	test_classes();
	test_plugins();
	test_env();
	test_client();
	return done_testing();
}
