/* test-env: every FABRICIQ_* variable, good and bad values. */
#include <errno.h>
#include <string.h>

#include "common/parse.h"
#include "nccl-plugin/env.h"
#include "tests/unit/tap.h"

static const char *const *vars;

static const char *lookup(const char *name)
{
	for (int i = 0; vars && vars[i]; i += 2)
		if (strcmp(vars[i], name) == 0)
			return vars[i + 1];
	return NULL;
}

static int load(struct fqn_config *c, char *err, const char *const *v)
{
	vars = v;
	return fqn_config_load(c, lookup, err, 256);
}

int main(void)
{
	struct fqn_config c;
	char err[256];
	uint64_t n;

	ok(load(&c, err, NULL) == 0, "defaults load");
	is_int(c.lanes, 2, "default lanes");
	is_int(c.chunk_size, 512 * 1024, "default chunk size 512 KiB");
	is_str(c.agent_socket, "/run/fabriciq/agent-telemetry.sock", "default agent socket");
	is_int(c.telemetry_interval_ms, 100, "default interval 100 ms");
	is_str(c.ifaces, "", "autodetect by default");
	ok(c.control == 0 && strcmp(c.mode, "monitor") == 0, "monitor mode by default");
	is_int(c.lane_timeout_ms, 1000, "default lane timeout 1 s");
	is_int(c.failover_grace_ms, 30000, "default failover grace 30 s");
	is_int(c.hello_timeout_ms, 5000, "default hello timeout 5 s");
	is_str(c.path_page, "/run/fabriciq/paths", "default path page");
	ok(load(&c, err,
		(const char *const[]){"FABRICIQ_MODE", "control", "FABRICIQ_LANE_TIMEOUT_MS", "200",
				      "FABRICIQ_FAILOVER_GRACE_MS", "5000", "FABRICIQ_PATH_PAGE", "/tmp/p",
				      NULL}) == 0 &&
	       c.control == 1 && c.lane_timeout_ms == 200 && c.failover_grace_ms == 5000 &&
	       strcmp(c.path_page, "/tmp/p") == 0,
	   "control mode, lane timeout, grace and path page are taken");

	ok(load(&c, err,
		(const char *const[]){"FABRICIQ_LANES", "4", "FABRICIQ_CHUNK_SIZE", "1M", "FABRICIQ_IFACES",
				      "rail0,rail1", NULL}) == 0 &&
	       c.lanes == 4 && c.chunk_size == (1u << 20) && strcmp(c.ifaces, "rail0,rail1") == 0,
	   "lanes, chunk size with suffix and iface list are taken");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_CHUNK_SIZE", "256KiB", NULL}) == 0 &&
	       c.chunk_size == 256 * 1024,
	   "KiB suffix");

	const char *bad[][2] = {
	    {"FABRICIQ_LANES", "0"},
	    {"FABRICIQ_LANES", "17"},
	    {"FABRICIQ_LANES", "two"},
	    {"FABRICIQ_LANES", "2k"},
	    {"FABRICIQ_LANES", ""},
	    {"FABRICIQ_LANES", "-1"},
	    {"FABRICIQ_CHUNK_SIZE", "100"},
	    {"FABRICIQ_CHUNK_SIZE", "1T"},
	    {"FABRICIQ_CHUNK_SIZE", "99999999999999999999"},
	    {"FABRICIQ_CHUNK_SIZE", "16777216k"},
	    {"FABRICIQ_TELEMETRY", "2"},
	    {"FABRICIQ_TELEMETRY_INTERVAL_MS", "5"},
	    {"FABRICIQ_AGENT_SOCKET", ""},
	    {"FABRICIQ_MODE", "off"},
	    {"FABRICIQ_MODE", "Control"},
	    {"FABRICIQ_MODE", ""},
	    {"FABRICIQ_LANE_TIMEOUT_MS", "10"},
	    {"FABRICIQ_LANE_TIMEOUT_MS", "1s"},
	    {"FABRICIQ_FAILOVER_GRACE_MS", "99"},
	    {"FABRICIQ_FAILOVER_GRACE_MS", "3600001"},
	    {"FABRICIQ_HELLO_TIMEOUT_MS", "99"},
	    {"FABRICIQ_PATH_PAGE", ""},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *v[] = {bad[i][0], bad[i][1], NULL};
		int rc = load(&c, err, v);

		ok(rc == -EINVAL && strstr(err, bad[i][0]), "%s='%s' refused: %s", bad[i][0], bad[i][1], err);
	}
	char longpath[200];
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	ok(load(&c, err, (const char *const[]){"FABRICIQ_AGENT_SOCKET", longpath, NULL}) == -EINVAL,
	   "a socket path longer than sun_path is refused: %s", err);

	ok(fq_parse_size("4096", &n) == 0 && n == 4096, "plain bytes");
	ok(fq_parse_size("2G", &n) == 0 && n == 2ull << 30, "G suffix");
	ok(fq_parse_size("512k", &n) == 0 && n == 512 << 10, "k suffix, lower case");
	ok(fq_parse_size("1MB", &n) < 0, "MB is not a suffix we take");
	ok(fq_parse_size(" 1", &n) < 0, "leading space refused");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_STEER", "maybe", NULL}) == -EINVAL &&
	       strcmp(err, "FABRICIQ_STEER='maybe': must be on or off") == 0,
	   "a bad choice names the choices: %s", err);
	ok(load(&c, err, (const char *const[]){"FABRICIQ_TRANSPORT", "udp", NULL}) == -EINVAL &&
	       strcmp(err, "FABRICIQ_TRANSPORT='udp': must be tcp, ib or auto") == 0,
	   "%s", err);
	ok(load(&c, err, (const char *const[]){NULL}) == 0 && c.advice,
	   "the controller's advice taken by default");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_ADVICE", "off", NULL}) == 0 && !c.advice,
	   "FABRICIQ_ADVICE=off: not taken");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_ADVICE", "no", NULL}) == -EINVAL &&
	       strcmp(err, "FABRICIQ_ADVICE='no': must be on or off") == 0,
	   "%s", err);
	ok(load(&c, err, (const char *const[]){NULL}) == 0 && !c.pace && c.pace_target_us == 2000,
	   "pacing off by default, target 2000 us");
	ok(load(&c, err,
		(const char *const[]){"FABRICIQ_PACE", "delay", "FABRICIQ_MODE", "control",
				      "FABRICIQ_PACE_TARGET_US", "500", NULL}) == 0 &&
	       c.pace && c.pace_target_us == 500,
	   "FABRICIQ_PACE=delay in control mode, target 500 us");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_PACE", "delay", NULL}) == -EINVAL &&
	       strstr(err, "needs FABRICIQ_MODE=control"),
	   "FABRICIQ_PACE=delay in monitor mode refused: %s", err);
	ok(load(&c, err, (const char *const[]){"FABRICIQ_PACE", "swift", "FABRICIQ_MODE", "control", NULL}) ==
		   -EINVAL &&
	       strcmp(err, "FABRICIQ_PACE='swift': must be off or delay") == 0,
	   "%s", err);
	ok(load(&c, err, (const char *const[]){"FABRICIQ_PACE_TARGET_US", "50", NULL}) == -EINVAL,
	   "a target under 100 us refused: %s", err);
	ok(load(&c, err, (const char *const[]){"FABRICIQ_LANES", "010", NULL}) == 0 && c.lanes == 10,
	   "integers are decimal (010 is 10)");
	ok(load(&c, err, (const char *const[]){NULL}) == 0 && c.tclass == -1 && !*c.net_class,
	   "no network class by default: lanes unmarked");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_CLASS", "latency", "FABRICIQ_DSCP", "46", NULL}) ==
		   0 &&
	       c.tclass == 184 && !strcmp(c.net_class, "latency"),
	   "FABRICIQ_DSCP=46: traffic class byte 184 (0xb8), class named");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_DSCP", "64", NULL}) == -EINVAL &&
	       strcmp(err, "FABRICIQ_DSCP='64': must be a DSCP (0 to 63)") == 0,
	   "%s", err);
	return done_testing();
}
