/*
 * hint: the one place where a drain/resume hint becomes a Slurm command.
 *
 * A hint is three fields (action, node, Slurm reason); the command is built
 * from them here and nowhere else: the API shows it (display only, never
 * executed), and `fabriciq hints --apply` builds it again from the fields
 * of the answer, so what root runs is always `scontrol update
 * NodeName=NODE State=DRAIN|RESUME [Reason=REASON]`, whatever the answer
 * holds. A fabric hint (action "check": a switch or cable to check, no
 * node) has no command: it is for people. Pure functions, no I/O.
 */
#ifndef FQ_CONTROLLER_HINT_H
#define FQ_CONTROLLER_HINT_H

#include <stdbool.h>
#include <stddef.h>

#define FQ_HINT_NODE_MAX   64  /* bytes of a node name */
#define FQ_HINT_REASON_MAX 256 /* bytes of a Slurm reason */

/* A node name as Slurm forms them: 1..FQ_HINT_NODE_MAX letters, digits,
 * '-', '_' or '.', not starting with '-' (no hostlist brackets or commas,
 * no option-like names). */
bool fq_hint_node_ok(const char *node);

/* A fabric hint's action: a component to check, nothing to run. */
#define FQ_HINT_CHECK "check"

/* Is action a fabric hint's (FQ_HINT_CHECK; NULL: false)? */
bool fq_hint_is_check(const char *action);

/* A Slurm reason of fabriciq's own: it starts with FQ_RULE_REASON_PREFIX
 * (NULL: false). Only such drains are ever resumed. */
bool fq_hint_own_reason(const char *reason);

/* The Slurm reason of a stored hint reason: FQ_RULE_REASON_PREFIX
 * ("fabriciq:", controller/rules.h) and a
 * space put in front unless it starts with the prefix, control characters
 * turned into spaces. NULL on out of memory; free() it. */
char *fq_hint_slurm_reason(const char *reason);

/* The command of one hint: argv for execvp (no shell) and its text. */
struct fq_hint_cmd {
	char *argv[6]; /* points into the buffers below and at literals */
	char node_arg[sizeof("NodeName=") + FQ_HINT_NODE_MAX];
	char reason_arg[sizeof("Reason=") + FQ_HINT_REASON_MAX];
	/* for people and shells: the reason in double quotes, " \ $ ` escaped */
	char text[128 + 2 * FQ_HINT_REASON_MAX];
};

/*
 * Builds the command of the hint (action "drain" or "resume"). The reason
 * must start with FQ_RULE_REASON_PREFIX, be at most FQ_HINT_REASON_MAX
 * bytes and hold no control characters; a resume carries it nowhere but it
 * is checked the same (the controller gives one with every hint). NULL
 * fields are refused. Returns 0 and *cmd, or -EINVAL with err saying which
 * field is wrong ("unknown action 'x'", "bad node name '...'", ...), or
 * -ENOEXEC for a fabric hint (FQ_HINT_CHECK): there is nothing to run.
 */
int fq_hint_command(const char *action, const char *node, const char *reason, struct fq_hint_cmd *cmd,
		    char *err, size_t errlen);

#endif /* FQ_CONTROLLER_HINT_H */
