/* Unit tests of slurmd-agent/sockcheck.h: the kernel's socket table asked
 * by exact 4-tuple over real loopback connections (IPv4 and IPv6), hostile
 * address strings, and the remembered answers. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "slurmd-agent/sockcheck.h"
#include "tests/unit/tap.h"

struct conn {
	int lfd, cfd, afd;
	char client[80], server[80];
};

static void text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(s->sin_port));
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(s->sin6_port));
	}
}

/* A loopback connection of family fam: 0, or -1 if the family is not here. */
static int connect_loopback(int fam, struct conn *c)
{
	struct sockaddr_storage ss = {0}, cs;
	socklen_t sl = fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6), l;

	ss.ss_family = (sa_family_t)fam;
	if (fam == AF_INET)
		((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
	c->lfd = socket(fam, SOCK_STREAM, 0);
	c->cfd = socket(fam, SOCK_STREAM, 0);
	if (c->lfd < 0 || c->cfd < 0 || bind(c->lfd, (struct sockaddr *)&ss, sl) || listen(c->lfd, 1))
		return -1;
	l = sizeof(ss);
	getsockname(c->lfd, (struct sockaddr *)&ss, &l);
	if (connect(c->cfd, (struct sockaddr *)&ss, l) || (c->afd = accept(c->lfd, NULL, NULL)) < 0)
		return -1;
	l = sizeof(cs);
	getsockname(c->cfd, (struct sockaddr *)&cs, &l);
	text(&cs, c->client, sizeof(c->client));
	text(&ss, c->server, sizeof(c->server));
	return 0;
}

static void conn_close(struct conn *c)
{
	close(c->afd);
	close(c->cfd);
	close(c->lfd);
}

static void test_kernel(int fam, const char *name)
{
	struct conn c;
	uid_t uid = 4242;
	int rc;

	if (connect_loopback(fam, &c)) {
		skip(3, "no loopback connection of this family here");
		return;
	}
	rc = fq_tcp_socket_uid(c.client, c.server, &uid);
	ok(rc == 0 && uid == getuid(), "%s: the connecting end %s -> %s is found, its uid ours (%d, uid %u)",
	   name, c.client, c.server, rc, (unsigned)uid);
	uid = 4242;
	rc = fq_tcp_socket_uid(c.server, c.client, &uid);
	ok(rc == 0 && uid == getuid(), "%s: ... and the accepted end, the other way round (%d)", name, rc);
	conn_close(&c);
	rc = fq_tcp_socket_uid(c.client, c.server, &uid);
	ok(rc == -ENOENT, "%s: closed (the closing end in TIME_WAIT): held by no one, -ENOENT (%d)", name,
	   rc);
}

static void test_hostile(void)
{
	static const char *const bad[] = {
	    "",
	    "1.2.3.4",
	    "1.2.3.4:",
	    ":80",
	    "1.2.3.4:0",
	    "1.2.3.4:65536",
	    "1.2.3.4:8x",
	    "1.2.3.4: 8",
	    "[::1:80",
	    "::1]:80",
	    "[]:80",
	    "host:80",
	    "1.2.3.4.5:80",
	    "[1.2.3.4]:80x",
	    "999.1.1.1:80",
	    "[aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]:1"};
	uid_t uid;
	int refused = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused += fq_tcp_socket_uid(bad[i], "127.0.0.1:80", &uid) == -EINVAL &&
			   fq_tcp_socket_uid("127.0.0.1:80", bad[i], &uid) == -EINVAL;
	is_int(refused, (int)(sizeof(bad) / sizeof(bad[0])), "hostile addresses refused at either end");
	is_int(fq_tcp_socket_uid("127.0.0.1:80", "[::1]:80", &uid), -EINVAL, "two families: refused");
}

static void test_remembered(void)
{
	static struct fq_sockcheck c; /* large: not on the stack */
	struct conn k;
	int64_t t = 1000000000;

	if (connect_loopback(AF_INET, &k)) {
		skip(7, "no IPv4 loopback connection here");
		return;
	}
	is_int(fq_sockcheck_lane(&c, k.client, k.server, getuid(), t), FQ_LANE_HELD,
	       "a held connection: held");
	ok(c.asked == 1, "... the kernel asked");
	ok(fq_sockcheck_lane(&c, k.client, k.server, getuid(), t + 1) == FQ_LANE_HELD && c.asked == 1 &&
	       c.remembered == 1,
	   "... again: remembered");
	is_int(fq_sockcheck_lane(&c, k.client, k.server, getuid() + 1, t + 2), FQ_LANE_OTHERS,
	       "... another uid's claim of it: another uid's");
	conn_close(&k);
	ok(fq_sockcheck_lane(&c, k.client, k.server, getuid(), t + FQ_SOCKCHECK_YES_NS) == FQ_LANE_HELD &&
	       c.asked == 1,
	   "closed, a report within a minute of the last: still held (remembered while it reports)");
	is_int(fq_sockcheck_lane(&c, k.client, k.server, getuid(), t + 1 + 2 * FQ_SOCKCHECK_YES_NS),
	       FQ_LANE_CLOSED, "... a minute after that: asked again, closed");
	ok(fq_sockcheck_lane(&c, "127.0.0.1:1", "127.0.0.1:2", getuid(), t) == FQ_LANE_CLOSED &&
	       fq_sockcheck_lane(&c, "127.0.0.1:1", "127.0.0.1:2", getuid(), t + FQ_SOCKCHECK_NO_NS - 1) ==
		   FQ_LANE_CLOSED &&
	       c.asked == 3,
	   "a claim nobody holds: closed, remembered for a second");
	ok(fq_sockcheck_lane(&c, "127.0.0.1:1", "127.0.0.1:2", getuid(), t + FQ_SOCKCHECK_NO_NS) ==
		   FQ_LANE_CLOSED &&
	       c.asked == 4,
	   "... then asked again");
}

/* Many lanes at once, all closed before their last report (a job's end):
 * every one still held. The first table (256 places, one per pair) lost a
 * lane of some node in a few runs out of ten this way. */
#define MANY 400
static void test_many(void)
{
	static struct fq_sockcheck c;
	static struct conn k[MANY];
	int held = 0, after = 0, n;
	int64_t t = 5000000000;

	for (n = 0; n < MANY; n++)
		if (connect_loopback(AF_INET, &k[n]))
			break;
	if (n < MANY) {
		diag("only %d loopback connections here", n);
		skip(2, "too few loopback connections here");
		while (n--)
			conn_close(&k[n]);
		return;
	}
	for (int i = 0; i < MANY; i++)
		held += fq_sockcheck_lane(&c, k[i].client, k[i].server, getuid(), t + i) == FQ_LANE_HELD;
	for (int i = 0; i < MANY; i++)
		conn_close(&k[i]);
	for (int i = 0; i < MANY; i++)
		after +=
		    fq_sockcheck_lane(&c, k[i].client, k[i].server, getuid(), t + MANY + i) == FQ_LANE_HELD;
	is_int(held, MANY, "%d connections: each held", MANY);
	ok(after == MANY && c.asked == MANY && c.evicted == 0,
	   "... closed, their last reports: all held, none asked again or given way");
	diag("%d held after the close, asked %llu, evicted %llu", after, (unsigned long long)c.asked,
	     (unsigned long long)c.evicted);
}

/* False claims, twice the table's size, in a second: a held lane keeps
 * its place (the least recently used give way, and a no lives a second). */
static void test_flood(void)
{
	static struct fq_sockcheck c;
	struct conn k;
	char local[32];
	int64_t t = 9000000000;
	int closed = 0;

	if (connect_loopback(AF_INET, &k)) {
		skip(2, "no IPv4 loopback connection here");
		return;
	}
	fq_sockcheck_lane(&c, k.client, k.server, getuid(), t);
	for (int i = 0; i < 2 * FQ_SOCKCHECK_SLOTS; i++) {
		snprintf(local, sizeof(local), "127.0.%d.%d:9", i / 250, 1 + i % 250);
		closed += fq_sockcheck_lane(&c, local, "127.0.0.1:1", getuid(), t + 1 + i) == FQ_LANE_CLOSED;
	}
	is_int(closed, 2 * FQ_SOCKCHECK_SLOTS, "%d false claims: each closed", 2 * FQ_SOCKCHECK_SLOTS);
	conn_close(&k);
	ok(fq_sockcheck_lane(&c, k.client, k.server, getuid(), t + 3 * FQ_SOCKCHECK_SLOTS) == FQ_LANE_HELD &&
	       c.asked == 1 + 2 * FQ_SOCKCHECK_SLOTS && c.evicted > 0,
	   "... the held lane kept its place (closed now, still held) while false claims gave way");
	diag("%llu false claims gave way", (unsigned long long)c.evicted);
}

static void test_unchecked(void)
{
	static struct fq_sockcheck c;
	char longer[80];

	memset(longer, '1', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = 0;
	ok(fq_sockcheck_lane(&c, "1.2.3.4", "127.0.0.1:80", 0, 1) == FQ_LANE_UNCHECKED &&
	       fq_sockcheck_lane(&c, longer, "127.0.0.1:80", 0, 1) == FQ_LANE_UNCHECKED &&
	       fq_sockcheck_lane(&c, "1.2.3.4", "127.0.0.1:80", 0, 2) == FQ_LANE_UNCHECKED && c.asked == 2,
	   "a claim that does not parse, or too long: unchecked, nothing remembered");
	ok(!strcmp(fq_lane_hold_name(FQ_LANE_HELD), "held") &&
	       !strcmp(fq_lane_hold_name(FQ_LANE_CLOSED), "closed") &&
	       !strcmp(fq_lane_hold_name(FQ_LANE_OTHERS), "another uid's") &&
	       !strcmp(fq_lane_hold_name(FQ_LANE_UNCHECKED), "unchecked"),
	   "the answers' names");
}

int main(void)
{
	plan(22);
	test_kernel(AF_INET, "IPv4");
	test_kernel(AF_INET6, "IPv6");
	test_hostile();
	test_remembered();
	test_many();
	test_flood();
	test_unchecked();
	return done_testing();
}
