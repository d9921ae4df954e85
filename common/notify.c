/* notify: READY/STOPPING/WATCHDOG to systemd (see notify.h). */
#include "common/notify.h"

#include <errno.h>
#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "common/log.h"

static struct event *watchdog_ev;

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	sd_notify(0, "WATCHDOG=1");
}

/* Pet at half the unit's WatchdogSec, as sd_watchdog_enabled(3) advises. */
static int start_watchdog(struct event_base *base)
{
	uint64_t usec = 0;
	struct timeval tv;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	usec /= 2;
	tv.tv_sec = (time_t)(usec / 1000000);
	tv.tv_usec = (suseconds_t)(usec % 1000000);
	watchdog_ev = event_new(base, -1, EV_PERSIST, on_watchdog, NULL);
	if (watchdog_ev && event_add(watchdog_ev, &tv) == 0)
		return 0;
	if (watchdog_ev)
		event_free(watchdog_ev);
	watchdog_ev = NULL;
	return -ENOMEM;
}

int fq_notify_ready(struct event_base *base, const char *status)
{
	char msg[512];
	int rc = start_watchdog(base);

	if (rc < 0) {
		fq_error("systemd watchdog: cannot set up its timer");
		return rc;
	}
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
	rc = sd_notify(0, msg);
	if (rc < 0)
		fq_warn("sd_notify READY: %s", strerror(-rc));
	return 0;
}

void fq_notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
	if (watchdog_ev) {
		event_free(watchdog_ev);
		watchdog_ev = NULL;
	}
}
