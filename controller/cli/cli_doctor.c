/*
 * `fabriciq doctor`: the node self-check (controller/cli/doctor.h) as a
 * command: options with the installed defaults, a PASS/FAIL/SKIP line per
 * check or one JSON document, and the exit code NHC reads (0 all passed,
 * 1 a check failed, 2 usage).
 */
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "controller/cli/cli.h"
#include "controller/cli/doctor.h"

#define DEFAULT_PLUGSTACK    "/etc/slurm/plugstack.conf"
#define DEFAULT_CLOCK_BUDGET "1ms"

static const char *const result_names[] = {"pass", "fail", "skip"};

static void print_text(const struct doctor_check *ck, int failed)
{
	static const char *const tags[] = {"PASS", "FAIL", "SKIP"};

	for (int i = 0; i < DOCTOR_CHECKS; i++)
		printf("%-4s  %-10s  %s\n", tags[ck[i].result], ck[i].name, ck[i].msg);
	if (failed)
		printf("fabriciq doctor: %d of %d checks failed\n", failed, DOCTOR_CHECKS);
}

static void print_json(const char *node, const struct doctor_check *ck, int failed)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();

	json_object_object_add(o, "node", json_object_new_string(node));
	json_object_object_add(o, "ok", json_object_new_boolean(!failed));
	json_object_object_add(o, "failed", json_object_new_int(failed));
	for (int i = 0; i < DOCTOR_CHECKS; i++) {
		struct json_object *c = json_object_new_object();

		json_object_object_add(c, "check", json_object_new_string(ck[i].name));
		json_object_object_add(c, "result", json_object_new_string(result_names[ck[i].result]));
		json_object_object_add(c, "message", json_object_new_string(ck[i].msg));
		json_object_array_add(a, c);
	}
	json_object_object_add(o, "checks", a);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

/* The agent's settings and the paths derived from them. */
static int load_agent(struct doctor_env *e, const char *config, char **sets, int nsets)
{
	char err[512];

	if (fq_cfg_load_all(&agent_config_schema, &e->agent, config, sets, nsets, err, sizeof(err)) < 0) {
		fprintf(stderr, "fabriciq: doctor: %s\n", err);
		return -1;
	}
	if (agent_config_path(e->clock_page, sizeof(e->clock_page), e->agent.clock_page, e->agent.run_dir,
			      "clock") < 0 ||
	    agent_config_path(e->path_page, sizeof(e->path_page), e->agent.path_page, e->agent.run_dir,
			      "paths") < 0)
		return -1;
	return 0;
}

/* Parses the options into e; -1 after --help, EXIT_USAGE on error, 0 otherwise. */
static int doctor_options(int argc, char **argv, struct doctor_env *e)
{
	static const struct option lo[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"set", required_argument, NULL, 's'},
	    {"clock-budget", required_argument, NULL, 'b'},
	    {"plugstack", required_argument, NULL, 'p'},
	    {"plugin-dir", required_argument, NULL, 'P'},
	    {"nccl-plugin", required_argument, NULL, 'n'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *config = FQ_CONFIG_PATH, *budget = DEFAULT_CLOCK_BUDGET;
	char *sets[64];
	int o, nsets = 0;
	uint64_t ns;

	while ((o = next_opt(argc, argv, "c:s:b:p:P:n:h", lo)) != -1) {
		switch (o) {
		case 'c':
			config = optarg;
			break;
		case 's':
			if (nsets == 64)
				return usage_error("too many --set");
			sets[nsets++] = optarg;
			break;
		case 'b':
			budget = optarg;
			break;
		case 'p':
			e->plugstack = optarg;
			break;
		case 'P':
			e->plugin_dir = optarg;
			break;
		case 'n':
			e->nccl_plugin = optarg;
			break;
		case 'h':
			command_usage(stdout, current);
			return -1;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (fq_parse_duration(budget, &ns) < 0 || ns == 0)
		return usage_error("--clock-budget wants a duration (500us, 1ms), not '%s'", budget);
	e->clock_budget_ns = (int64_t)ns;
	return load_agent(e, config, sets, nsets) < 0 ? EXIT_USAGE : 0;
}

int cmd_doctor(struct cli *c, int argc, char **argv)
{
	struct doctor_env e = {.munge_socket = c->munge_socket,
			       .plugstack = DEFAULT_PLUGSTACK,
			       .plugin_dir = FQ_PKGLIBDIR,
			       .nccl_plugin = FQ_PKGLIBDIR "/libnccl-net-fabriciq.so"};
	struct doctor_check ck[DOCTOR_CHECKS];
	char host[256] = "";
	int rc = doctor_options(argc, argv, &e), failed;

	if (rc) {
		fq_cfg_free(&agent_config_schema, &e.agent);
		return rc < 0 ? EXIT_OK : rc;
	}
	failed = doctor_run(&e, ck);
	gethostname(host, sizeof(host) - 1);
	if (c->json)
		print_json(e.agent.node ? e.agent.node : host, ck, failed);
	else
		print_text(ck, failed);
	fq_cfg_free(&agent_config_schema, &e.agent);
	return failed ? EXIT_FAIL : EXIT_OK;
}
