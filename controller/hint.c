/*
 * hint: drain/resume hints as Slurm commands (see hint.h).
 */
#include "controller/hint.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/rules.h" /* FQ_RULE_REASON_PREFIX only: the API and the CLI link no rules */

bool fq_hint_own_reason(const char *reason)
{
	return reason && !strncmp(reason, FQ_RULE_REASON_PREFIX, strlen(FQ_RULE_REASON_PREFIX));
}

bool fq_hint_is_check(const char *action)
{
	return action && !strcmp(action, FQ_HINT_CHECK);
}

bool fq_hint_node_ok(const char *node)
{
	if (!node || !*node || strlen(node) > FQ_HINT_NODE_MAX || *node == '-')
		return false;
	for (; *node; node++)
		if (!isalnum((unsigned char)*node) && !strchr("-_.", *node))
			return false;
	return true;
}

char *fq_hint_slurm_reason(const char *reason)
{
	const char *prefix = fq_hint_own_reason(reason) ? "" : FQ_RULE_REASON_PREFIX " ";
	size_t n = strlen(prefix) + strlen(reason) + 1;
	char *out = malloc(n);

	if (!out)
		return NULL;
	snprintf(out, n, "%s%s", prefix, reason);
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	return out;
}

static bool reason_ok(const char *reason)
{
	if (!fq_hint_own_reason(reason) || strlen(reason) > FQ_HINT_REASON_MAX)
		return false;
	for (; *reason; reason++)
		if ((unsigned char)*reason < 0x20 || *reason == 0x7f)
			return false;
	return true;
}

int fq_hint_command(const char *action, const char *node, const char *reason, struct fq_hint_cmd *cmd,
		    char *err, size_t errlen)
{
	bool drain = action && !strcmp(action, "drain");
	char *t;

	if (fq_hint_is_check(action)) { /* a switch or cable to check: no node, no command */
		snprintf(err, errlen, "a fabric hint: nothing to run (check the component it names)");
		return -ENOEXEC;
	}
	if (!drain && !(action && !strcmp(action, "resume"))) {
		snprintf(err, errlen, "unknown action '%.32s' (drain or resume)", action ? action : "(none)");
		return -EINVAL;
	}
	if (!fq_hint_node_ok(node)) {
		snprintf(err, errlen, "bad node name '%.80s' (Slurm node names: letters, digits, - _ .)",
			 node ? node : "(none)");
		return -EINVAL;
	}
	if (!reason || !reason_ok(reason)) {
		snprintf(err, errlen,
			 "reason '%.80s' is not fabriciq's (\"" FQ_RULE_REASON_PREFIX
			 " ...\", printable, at most %d bytes)",
			 reason ? reason : "(none)", FQ_HINT_REASON_MAX);
		return -EINVAL;
	}
	snprintf(cmd->node_arg, sizeof(cmd->node_arg), "NodeName=%s", node);
	snprintf(cmd->reason_arg, sizeof(cmd->reason_arg), "Reason=%s", reason);
	cmd->argv[0] = "scontrol";
	cmd->argv[1] = "update";
	cmd->argv[2] = cmd->node_arg;
	cmd->argv[3] = drain ? "State=DRAIN" : "State=RESUME";
	cmd->argv[4] = drain ? cmd->reason_arg : NULL;
	cmd->argv[5] = NULL;
	t = cmd->text +
	    snprintf(cmd->text, sizeof(cmd->text), "scontrol update %s %s", cmd->node_arg, cmd->argv[3]);
	if (drain) {
		t += sprintf(t, " Reason=\"");
		for (const char *c = reason; *c; c++) {
			if (strchr("\"\\$`", *c))
				*t++ = '\\';
			*t++ = *c;
		}
		*t++ = '"';
		*t = '\0';
	}
	return 0;
}
