/*
 * test-hint: controller/hint.h, the only place a hint becomes a Slurm
 * command: the commands of the hints the controller writes, every field
 * that is not one it writes refused with its name, and no command for a
 * fabric hint.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/hint.h"
#include "tests/unit/tap.h"

static void argv_is(const struct fq_hint_cmd *c, const char *const *want, const char *what)
{
	size_t i = 0;

	for (; want[i] && c->argv[i] && !strcmp(want[i], c->argv[i]); i++)
		;
	ok(!want[i] && !c->argv[i], "%s: argv", what);
}

static void refused(const char *action, const char *node, const char *reason, const char *words)
{
	struct fq_hint_cmd c;
	char err[400] = "";

	is_int(fq_hint_command(action, node, reason, &c, err, sizeof(err)), -EINVAL, "refused: %s", words);
	like(err, words, "... saying so");
}

int main(void)
{
	static const char *const drain[] = {
	    "scontrol", "update", "NodeName=gpu03", "State=DRAIN", "Reason=fabriciq: rail1 flapped 9 in 1h",
	    NULL};
	static const char *const resume[] = {"scontrol", "update", "NodeName=n-3_a.b", "State=RESUME", NULL};
	struct fq_hint_cmd c;
	char err[400], *r, long_reason[300];

	is_int(fq_hint_command("drain", "gpu03", "fabriciq: rail1 flapped 9 in 1h", &c, err, sizeof(err)), 0,
	       "a drain");
	argv_is(&c, drain, "drain");
	is_str(c.text,
	       "scontrol update NodeName=gpu03 State=DRAIN Reason=\"fabriciq: rail1 flapped 9 in 1h\"",
	       "... its text");
	is_int(fq_hint_command("resume", "n-3_a.b", "fabriciq: no anomaly for 10m", &c, err, sizeof(err)), 0,
	       "a resume");
	argv_is(&c, resume, "resume");
	is_str(c.text, "scontrol update NodeName=n-3_a.b State=RESUME", "... its text");
	is_int(fq_hint_command("drain", "gpu01", "fabriciq: \"a\" $(b) `c` \\d", &c, err, sizeof(err)), 0,
	       "shell characters in a reason");
	is_str(c.argv[4], "Reason=fabriciq: \"a\" $(b) `c` \\d", "... verbatim in argv (no shell)");
	is_str(
	    c.text,
	    "scontrol update NodeName=gpu01 State=DRAIN Reason=\"fabriciq: \\\"a\\\" \\$(b) \\`c\\` \\\\d\"",
	    "... escaped in the text");

	is_int(fq_hint_command("check", NULL, "check spine3: its buffer and queue occupancy", &c, err,
			       sizeof(err)),
	       -ENOEXEC, "a fabric hint: no command (-ENOEXEC)");
	like(err, "a fabric hint: nothing to run", "... saying so");
	is_int(fq_hint_command("check", "gpu01", "fabriciq: x", &c, err, sizeof(err)), -ENOEXEC,
	       "... not even with a node and a reason of fabriciq's");
	ok(fq_hint_is_check("check") && !fq_hint_is_check("drain") && !fq_hint_is_check(NULL),
	   "fabric hints told from nodes' hints");
	refused("exec", "gpu01", "fabriciq: x", "unknown action 'exec'");
	refused(NULL, "gpu01", "fabriciq: x", "unknown action '(none)'");
	refused("drain", "gpu[01-04]", "fabriciq: x", "bad node name 'gpu[01-04]'");
	refused("drain", "-gpu01", "fabriciq: x", "bad node name '-gpu01'");
	refused("drain", "gpu01 State=RESUME", "fabriciq: x", "bad node name");
	refused("drain", "", "fabriciq: x", "bad node name ''");
	refused("drain", NULL, "fabriciq: x", "bad node name '(none)'");
	refused("drain", "gpu01", "maintenance", "reason 'maintenance' is not fabriciq's");
	refused("resume", "gpu01", "root said so", "is not fabriciq's");
	refused("drain", "gpu01", "fabriciq: x\nState=RESUME", "is not fabriciq's");
	refused("drain", "gpu01", NULL, "reason '(none)'");
	memset(long_reason, 'x', sizeof(long_reason) - 1);
	long_reason[sizeof(long_reason) - 1] = '\0';
	memcpy(long_reason, "fabriciq:", 9);
	refused("drain", "gpu01", long_reason, "at most 256 bytes");
	long_reason[FQ_HINT_REASON_MAX] = '\0';
	is_int(fq_hint_command("drain", "gpu01", long_reason, &c, err, sizeof(err)), 0,
	       "a reason of 256 bytes");
	{
		char node[FQ_HINT_NODE_MAX + 2];

		memset(node, 'n', sizeof(node) - 1);
		node[sizeof(node) - 1] = '\0';
		ok(!fq_hint_node_ok(node), "a node name of 65 bytes: refused");
		node[FQ_HINT_NODE_MAX] = '\0';
		ok(fq_hint_node_ok(node), "... of 64: fine");
	}

	r = fq_hint_slurm_reason("link_down on mlx5_1");
	is_str(r, "fabriciq: link_down on mlx5_1", "a stored reason gets the prefix");
	free(r);
	r = fq_hint_slurm_reason("fabriciq: rail1 flapped 9 in 1h");
	is_str(r, "fabriciq: rail1 flapped 9 in 1h", "... once");
	free(r);
	r = fq_hint_slurm_reason("a\nb\033[31m");
	is_str(r, "fabriciq: a b [31m", "... control characters become spaces");
	free(r);
	ok(fq_hint_own_reason("fabriciq: x") && !fq_hint_own_reason("Fabriciq: x") &&
	       !fq_hint_own_reason(NULL),
	   "fabriciq's own reasons");
	return done_testing();
}
