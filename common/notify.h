/*
 * notify: the daemons' notices to systemd (Type=notify units).
 *
 * fq_notify_ready() says READY=1 once a daemon serves (its sockets are
 * bound, its modules started) and, when the unit sets WatchdogSec=, pets
 * the watchdog from the daemon's own event loop: a loop that stops turning
 * stops the pets and systemd restarts the daemon. fq_notify_stopping() says
 * STOPPING=1 when it begins to exit. Outside systemd (no NOTIFY_SOCKET:
 * a shell, the testbed) both do nothing and succeed.
 */
#ifndef FQ_COMMON_NOTIFY_H
#define FQ_COMMON_NOTIFY_H

struct event_base;

/* READY=1 with a STATUS= line, and the watchdog timer on base if the unit
 * asked for one. Returns 0, or -errno when the timer cannot be set up. */
int fq_notify_ready(struct event_base *base, const char *status);

/* STOPPING=1, and the watchdog timer freed (call before freeing base). */
void fq_notify_stopping(void);

#endif
