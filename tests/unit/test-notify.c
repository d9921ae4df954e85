/* test-notify: what the daemons tell systemd, read from a NOTIFY_SOCKET of
 * our own: READY=1 with the status, WATCHDOG=1 pets at half of
 * WATCHDOG_USEC from the event loop, STOPPING=1 and no pet after it; and
 * nothing at all (and no failure) outside systemd. */
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/notify.h"
#include "tests/unit/tap.h"

/* Every datagram waiting on fd, joined by '|'. */
static void drain(int fd, char *out, size_t len)
{
	char buf[512];
	ssize_t n;

	out[0] = '\0';
	while ((n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT)) > 0) {
		buf[n] = '\0';
		snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? "|" : "", buf);
	}
}

static int count(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

/* Run base's loop for ms milliseconds. */
static void run_for(struct event_base *base, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

int main(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct event_base *base = event_base_new();
	char got[4096], pid[32];
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	plan(7);
	unsetenv("NOTIFY_SOCKET");
	is_int(fq_notify_ready(base, "outside"), 0, "no NOTIFY_SOCKET: ready succeeds, says nothing");
	fq_notify_stopping();

	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/fq-notify-%d.sock", (int)getpid());
	unlink(sa.sun_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return 1;
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	setenv("WATCHDOG_USEC", "200000", 1); /* a pet every 100 ms */
	is_int(fq_notify_ready(base, "probing"), 0, "ready under systemd");
	drain(fd, got, sizeof(got));
	is_str(got, "READY=1\nSTATUS=probing", "READY=1 with the status line");
	run_for(base, 450);
	drain(fd, got, sizeof(got));
	ok(count(got, "WATCHDOG=1") >= 3 && count(got, "WATCHDOG=1") <= 5,
	   "the loop pets the watchdog every 100 ms (%d in 450 ms)", count(got, "WATCHDOG=1"));
	fq_notify_stopping();
	drain(fd, got, sizeof(got));
	is_str(got, "STOPPING=1", "STOPPING=1 on the way out");
	run_for(base, 250);
	drain(fd, got, sizeof(got));
	is_str(got, "", "no pet after stopping (the timer is gone)");

	unsetenv("WATCHDOG_USEC");
	fq_notify_ready(base, "no watchdog");
	run_for(base, 150);
	drain(fd, got, sizeof(got));
	is_str(got, "READY=1\nSTATUS=no watchdog", "without WatchdogSec: ready, and no pets");
	fq_notify_stopping();
	unlink(sa.sun_path);
	event_base_free(base);
	return done_testing();
}
