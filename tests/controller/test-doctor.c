/*
 * test-doctor: the parts of `fabriciq doctor` (controller/cli/doctor.h) that
 * need no agent: finding the SPANK plugin in plugstack.conf (comments,
 * other plugins, includes by glob relative to the including file, a
 * relative plugin path under the plugin directory, an include loop, an
 * unreadable file) and the symbol check on the plugins this build made.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/cli/doctor.h"
#include "tests/unit/tap.h"

static char dir[] = "/tmp/fq-doctor.XXXXXX";

static void write_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

/* doctor_plugstack_find on DIR/conf: its return, the path in out. */
static int find(const char *conf, char *out, size_t len, char *err, size_t errlen)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, conf);
	*out = *err = '\0';
	return doctor_plugstack_find(path, "spank_fabriciq.so", "/usr/lib/slurm", out, len, err, errlen);
}

static void test_plugstack(void)
{
	char out[512], err[512], sub[600];

	write_file("direct.conf", "# optional /x/spank_fabriciq.so\n"
				  "required /usr/lib/slurm/spank_pyxis.so\n"
				  "\n"
				  "optional /opt/fq/spank_fabriciq.so libdir=/opt/fq ifaces=rail0\n");
	is_int(find("direct.conf", out, sizeof(out), err, sizeof(err)), 1, "found on its own line");
	is_str(out, "/opt/fq/spank_fabriciq.so", "... its path, not a commented one");

	write_file("none.conf", "required /usr/lib/slurm/spank_pyxis.so\n");
	is_int(find("none.conf", out, sizeof(out), err, sizeof(err)), 0, "absent: 0");

	snprintf(sub, sizeof(sub), "%s/plugstack.conf.d", dir);
	mkdir(sub, 0755);
	write_file("plugstack.conf.d/10-pyxis.conf", "required spank_pyxis.so\n");
	write_file("plugstack.conf.d/50-fabriciq.conf", "optional spank_fabriciq.so\n");
	write_file("top.conf", "required spank_other.so\ninclude plugstack.conf.d/*.conf\n");
	is_int(find("top.conf", out, sizeof(out), err, sizeof(err)), 1,
	       "found through a relative include glob");
	is_str(out, "/usr/lib/slurm/spank_fabriciq.so",
	       "... a relative plugin path under the plugin directory");

	write_file("nomatch.conf", "include nowhere/*.conf\n");
	is_int(find("nomatch.conf", out, sizeof(out), err, sizeof(err)), 0, "an include matching nothing: 0");

	snprintf(sub, sizeof(sub), "include %s/loop.conf\n", dir);
	write_file("loop.conf", sub);
	is_int(find("loop.conf", out, sizeof(out), err, sizeof(err)), -ELOOP, "an include loop: -ELOOP");
	like(err, "nested deeper than 8", "... saying so");

	is_int(find("missing.conf", out, sizeof(out), err, sizeof(err)), -ENOENT, "no file: -ENOENT");
	like(err, "missing.conf: No such file", "... naming it");
}

static void test_symbols(void)
{
	const char *b = getenv("top_builddir");
	static const char *const net[] = {"ncclNetPlugin_v8", "ncclNetPlugin_v12", NULL};
	static const char *const extra[] = {"ncclNetPlugin_v8", "ncclNetPlugin_v99", "ncclNetPlugin_v98",
					    NULL};
	char so[512], msg[512];

	if (!b) {
		skip(4, "top_builddir not set (run under make check)");
		return;
	}
	snprintf(so, sizeof(so), "%s/nccl-plugin/.libs/libnccl-net-fabriciq.so", b);
	is_int(doctor_symbols(so, net, msg, sizeof(msg)), 0, "the built NCCL plugin exports its ABIs");
	is_int(doctor_symbols(so, extra, msg, sizeof(msg)), -ENOENT, "a symbol it lacks: -ENOENT");
	is_str(msg, "missing: ncclNetPlugin_v99, ncclNetPlugin_v98", "... naming every missing one");
	is_int(doctor_symbols("/nonexistent/lib.so", net, msg, sizeof(msg)), -ENOENT, "no library: -ENOENT");
}

int main(void)
{
	char cmd[600];

	if (!mkdtemp(dir))
		return 1;
	test_plugstack();
	test_symbols();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
