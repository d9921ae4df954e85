/* test-ib-init: FABRICIQ_TRANSPORT at plugin init, through NCCL's logger:
 * auto picks TCP lanes without a device and says why; ib without a device
 * fails init with a WARN naming the variable (NCCL then falls back). With a
 * device present, ib must come up with IB lanes instead. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/net.h"
#include "nccl-plugin/lanes/ib/ib_dev.h"
#include "nccl-plugin/lanes/lane_drv.h"
#include "tests/unit/tap.h"

static char logbuf[8192];

/* 1 if the current init's lanes are IB (the driver fqn_init picked). */
static int transport_is_ib(void)
{
	const struct fqn_ctx *g = fqn_context();

	return g && strcmp(g->drv->name, "ib") == 0;
}

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	size_t n = strlen(logbuf);
	va_list ap;

	(void)flags;
	(void)file;
	(void)line;
	if (n + 300 > sizeof(logbuf))
		return;
	n += (size_t)snprintf(logbuf + n, sizeof(logbuf) - n,
			      "%s: ", level == NCCL_LOG_WARN ? "WARN" : "INFO");
	va_start(ap, fmt);
	vsnprintf(logbuf + n, sizeof(logbuf) - n, fmt, ap);
	va_end(ap);
	strncat(logbuf, "\n", sizeof(logbuf) - strlen(logbuf) - 1);
}

int main(void)
{
	const char *why = "";
	int ndev = fqib_devs_count(&why), rc, nd = -1;

	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_CLOCK_PAGE", "/nonexistent/fabriciq-clock", 1);
	setenv("FABRICIQ_TELEMETRY", "0", 1);
	diag("verbs devices with an ACTIVE port: %d %s", ndev, why);

	setenv("FABRICIQ_TRANSPORT", "tcp", 1);
	ok(fqn_init(logger) == 0 && !transport_is_ib(), "tcp: TCP lanes");
	fqn_fini();

	logbuf[0] = '\0';
	setenv("FABRICIQ_TRANSPORT", "auto", 1);
	rc = fqn_init(logger);
	ok(rc == 0, "auto: init succeeds (%d)", rc);
	if (rc == 0)
		fqn_devices(&nd);
	if (ndev == 0) {
		ok(!transport_is_ib() && strstr(logbuf, "FABRICIQ_TRANSPORT=auto: TCP lanes (") &&
		       strstr(logbuf, "tcp lane(s) per connection"),
		   "auto without a device: TCP lanes, with the reason at INFO");
		ok(nd == 1, "the lo device is still there (%d)", nd);
	} else {
		ok(1, "# SKIP auto with a device: the lo NIC has no RDMA port, so TCP either way");
		ok(nd >= 1, "devices: %d", nd);
	}
	if (rc == 0)
		fqn_fini();

	logbuf[0] = '\0';
	setenv("FABRICIQ_TRANSPORT", "ib", 1);
	rc = fqn_init(logger);
	if (ndev == 0) {
		is_int(rc, -ENODEV, "ib without a device: init fails with -ENODEV");
		ok(strstr(logbuf, "WARN: fabriciq: FABRICIQ_TRANSPORT=ib but no usable RDMA device: ") &&
		       strstr(logbuf, "set FABRICIQ_TRANSPORT=tcp or auto"),
		   "the WARN names the variable and what to do");
	} else {
		/* lo has no RDMA port: ib refuses it, naming the fix */
		ok(rc == -ENODEV && strstr(logbuf, "no network interface sits on an ACTIVE RDMA port"),
		   "ib on lo with a device present: refused, says why");
		ok(1, "# SKIP no second check with a device");
	}
	if (rc == 0)
		fqn_fini();
	return done_testing();
}
