/*
 * test-dbconnect: controller/dbconnect.h. Opening a connection never waits
 * on the caller's thread: against a server that accepts and never answers,
 * start and poll return at once and the open ends with the connect timeout;
 * a refused one ends with its reason; an open given up ends on its own
 * thread and frees everything (the sanitizer build's leak check sees it).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "controller/dbconnect.h"
#include "db/db.h"
#include "tests/unit/tap.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A TCP socket on loopback, listening (the kernel completes handshakes) or
 * not; its port in *port. */
static int server(int listening, int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0 || (listening && listen(fd, 8) < 0))
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

/* Polls until the open ends (at most limit_s); the poll's result. */
static int wait_open(struct fq_dbconnect *c, double limit_s, struct fq_db **db, char *err, size_t errlen)
{
	double t0 = now_s();
	int rc;

	while ((rc = fq_dbconnect_poll(c, db, err, errlen)) == 0 && now_s() - t0 < limit_s)
		usleep(10000);
	return rc;
}

int main(void)
{
	struct fq_db_options o = {.connect_timeout_s = 2};
	struct fq_dbconnect *c = NULL;
	struct fq_db *db = NULL;
	char conninfo[128], err[512] = "";
	double t0, took;
	int port, fd, rc;

	plan(8);

	/* a server that takes the connection and never answers */
	fd = server(1, &port);
	if (fd < 0) {
		skip_all("no loopback TCP socket here");
		return 0;
	}
	snprintf(conninfo, sizeof(conninfo), "host=127.0.0.1 port=%d user=fq dbname=fq sslmode=disable",
		 port);
	o.conninfo = conninfo;
	t0 = now_s();
	ok(fq_dbconnect_start(&c, &o, NULL) == 0 && c, "an open starts");
	ok(fq_dbconnect_poll(c, &db, err, sizeof(err)) == 0, "and is still opening");
	took = now_s() - t0;
	ok(took < 0.2, "start and poll returned at once (%.1f ms), the server silent", took * 1e3);
	rc = wait_open(c, 10, &db, err, sizeof(err));
	took = now_s() - t0;
	/* libpq 15 sets its deadline in whole seconds (time(2)): "2" ends
	 * after 1 to 2 s, 1.0 s when the clock's second turned between its
	 * deadline and its wait (seen on a loaded machine) */
	ok(rc == 1 && !db && took > 0.9, "the open ends with no connection at its timeout, %.1f s: %s", took,
	   err);

	/* given up while it waits: it ends on its thread, and frees itself */
	ok(fq_dbconnect_start(&c, &o, NULL) == 0, "a second open starts");
	fq_dbconnect_abandon(c);
	ok(1, "and is given up at once");
	sleep(3); /* past its connect timeout: its thread has ended and freed it */
	close(fd);

	/* nothing listening: refused, with the reason */
	fd = server(0, &port);
	snprintf(conninfo, sizeof(conninfo), "host=127.0.0.1 port=%d user=fq dbname=fq sslmode=disable",
		 port);
	ok(fq_dbconnect_start(&c, &o, NULL) == 0, "an open of a port nobody listens on starts");
	err[0] = '\0';
	ok(wait_open(c, 10, &db, err, sizeof(err)) == 1 && !db && strstr(err, "cannot connect to PostgreSQL"),
	   "it ends refused, with the reason: %s", err);
	close(fd);
	return done_testing();
}
