/*
 * doctor: the node self-check behind `fabriciq doctor` (controller/
 * cli_doctor.c), which an operator or NHC (contrib/nhc/fabriciq.nhc) runs
 * on a compute node. Each check says pass, fail or skip (nothing to check:
 * no controller configured) with one line of why; the CLI prints them and
 * exits 1 when one failed.
 *
 * The checks read what the agent publishes (its status file, clock page
 * and path page, at the paths the agent's own settings give: the same
 * table, slurmd-agent/agent_config.h), talk to munged, read Slurm's
 * plugstack.conf and dlopen the SPANK and NCCL plugins. None changes
 * anything; each needs what the agent's status file needs to be read
 * (root or the agent's group).
 */
#ifndef FQ_CONTROLLER_DOCTOR_H
#define FQ_CONTROLLER_DOCTOR_H

#include <stddef.h>
#include <stdint.h>

#include "slurmd-agent/agent_config.h"

enum doctor_result {
	DOCTOR_PASS,
	DOCTOR_FAIL,
	DOCTOR_SKIP
};

struct doctor_check {
	const char *name; /* "agent", "clock", "munge", "controller", "nics", "spank", "nccl" */
	enum doctor_result result;
	char msg[768];
};

#define DOCTOR_CHECKS 7

/* What the checks look at. */
struct doctor_env {
	struct agent_config agent; /* the agent's settings (fabriciq.conf, agent.*) */
	char clock_page[4096];     /* derived from agent.run_dir / agent.clock_page */
	char path_page[4096];      /* likewise */
	const char *munge_socket;  /* NULL: agent.munge_socket, or munge's default */
	int64_t clock_budget_ns;   /* largest acceptable clock error bound */
	const char *plugstack;     /* Slurm's plugstack.conf */
	const char *plugin_dir;    /* where a relative plugstack path is looked up */
	const char *nccl_plugin;   /* libnccl-net-fabriciq.so */
};

/* Runs every check in order into out[DOCTOR_CHECKS]. Returns how many failed. */
int doctor_run(const struct doctor_env *e, struct doctor_check out[DOCTOR_CHECKS]);

/* The path of the plugstack line (required/optional) whose plugin file is
 * named `base` ("spank_fabriciq.so"), following `include` lines (globs,
 * relative to the including file's directory, at most 8 deep); a relative
 * plugin path is made absolute under plugin_dir. Returns 1 and out filled,
 * 0 when no line names it, or a negative errno with err saying which file
 * could not be read. */
int doctor_plugstack_find(const char *conf, const char *base, const char *plugin_dir, char *out, size_t len,
			  char *err, size_t errlen);

/* dlopen(so) (lazy binding, local) and look up each of the NULL-terminated
 * symbols. Returns 0, or -ENOENT with msg saying what dlopen said or which
 * symbols are missing. The library stays loaded (a plugin may forbid
 * unloading). */
int doctor_symbols(const char *so, const char *const *symbols, char *msg, size_t len);

#endif /* FQ_CONTROLLER_DOCTOR_H */
